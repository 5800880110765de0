/**
 * One part's rows checked (check-tables.ts reads every table part through here, on the calling thread or
 * on a worker thread, check-pool.ts): every row validated with its part's partition, the part's order by
 * its table's sort columns, the index's rows, first and last, and a record table's own rules: ids and
 * identity lines (identity-check.ts), each record's tiling and tiling group, and a pattern's class group.
 *
 * A part is read a row group at a time as vectors (parquet-read.ts), and a row is built as an object only
 * where a rule needs one: an ant or Quick Start row, the sort columns of a row, a row of a row group whose
 * validity the vectors do not settle (mayBeInvalid), and every row for a caller that asks for rows (tilings,
 * media, reference patches, level 3). A pattern's id, identity lines and typed phases are checked on its
 * cells as they lie.
 */
import { IDENTITY_CODES } from '../records/identity.js'
import { gunFindings, JSON_CELL_COLUMNS, jsonCellChecker, patternCellsFinding, patternClassColumnFinding, patternSiteFinding, verificationMainFinding, verificationMoverClassFinding, verificationMoverFinding, verificationRangeFamilyFinding, verificationSitesFinding, type PhaseCounts, ROW_RULE_CODES, ROW_RULES, type RowRule } from '../records/row-rules.js'
import { checkAntRow, checkPatternIdentity, checkQuickstartRow, type IdentityFinding, type PatternCells, type TextCell } from '../records/identity-check.js'
import { isPackTime } from '../keys/key-statements.js'
import { openPart, PartReadError, READ_LIMITS, rowTooLargeDetail, type RowBatch, type StringVector, type Vector } from '../tables/parquet-read.js'
import { isContentId, quote } from '../documents/documents.js'
import { MOVER_PATTERNS_CAP, type MoverPatterns } from '../records/mover-patterns.js'
import { isPartitionValue, ROW_CODES, rowValidator, sortColumnsComparator, sortKeyText, WRITE_CODES, type PackType, type RowFinding, type TableSchema } from '../tables/table-schemas.js'
import { CHECK_CODES, failure, note, type CheckIssue, type CheckLevel } from './check-run.js'
import { localPathCells, partRuleBreaks, WRITER_CODES, type LocalPathCells } from './writer-rules.js'

/** A part to check, as its index names it. */
export interface PartSpec {
  /** Its path relative to the pack, which findings name. */
  rel: string
  file: string
  schema: TableSchema
  /** The partition its rows must be in; absent when the index's partition is itself wrong (reported once, there). */
  partition?: Readonly<Record<string, string>>
  /** What the index states of it. */
  listing?: { rows: number; first: string; last: string }
}

/** A record's tiling, as its tilings row states it. */
export interface RecordTiling {
  pin: string
  tilingGroup: string
  /** lattice or aperiodic. */
  kind: string
}

export interface PartContext {
  level: CheckLevel
  /** The tilings rows read before, by pin_key: what a record's pin_key must name. */
  tilings: ReadonlyMap<string, RecordTiling>
  /** Some tilings rows were not kept (kept-facts.ts): a pin_key that names none kept may name one of them. */
  tilingsPartial?: boolean
  /** The rules rows read before: each notation's family, as a verification's rule sees it (keepRuleFamily). */
  ruleFamilies: ReadonlyMap<string, string>
  /** The patterns whose main verifications, read before, carry a mover cell: a pattern row among them is a mover. */
  moverPatterns?: MoverPatterns
  signal?: AbortSignal
}

/** A caller's own check of each valid row; `at` names the row (`<part> row <n>`). */
export type RowHook = (row: Record<string, unknown>, at: string) => Iterable<CheckIssue> | AsyncIterable<CheckIssue> | undefined

export interface PartOutcome {
  /** Whether the part opened: its limits, page headers and schema are right, and it counts as a part read. */
  opened: boolean
  /** Its rows, when every row group was read (else 0). */
  rows: number
  /** Whether every row was read and valid. */
  complete: boolean
  /**
   * A verifications part's: the patterns whose main rows carry a mover cell (and a pin not a lattice
   * tiling's, which is refused there), each once, at most MOVER_PATTERNS_CAP and one (more would not be kept).
   */
  moverPatterns?: string[]
}

/**
 * Checks the rows of a part whose object has been checked: yields every issue in row order, then the
 * index's rows, first and last. A part that does not open or stops reading is its reader's finding.
 */
export async function* checkPart(spec: PartSpec, ctx: PartContext, hook?: RowHook): AsyncGenerator<CheckIssue, PartOutcome> {
  const opened = await openPart(spec.file, spec.schema)
  if (!opened.ok) {
    for (const f of opened.findings) yield failure(f.code, spec.rel, f.detail)
    return { opened: false, rows: 0, complete: false }
  }
  const rows = new PartRows(spec, ctx)
  const writerRules = ctx.level >= 1
  let localPaths: LocalPathCells | null = null
  try {
    if (writerRules) for (const broken of partRuleBreaks(await opened.part.chunkFacts())) yield failure(broken.code, spec.rel, broken.detail)
    for await (const batch of opened.part.batches()) {
      ctx.signal?.throwIfAborted()
      if (writerRules) {
        const found = localPathCells(batch)
        if (found && localPaths) localPaths.count += found.count
        else localPaths ??= found
      }
      yield* rows.batch(batch, hook)
    }
  } catch (err) {
    if (!(err instanceof PartReadError)) throw err
    yield failure(err.finding.code, spec.rel, err.finding.detail)
    return { opened: true, rows: 0, complete: false }
  } finally {
    await opened.part.close()
  }
  if (localPaths) {
    const more = localPaths.count > 1 ? ` (and ${localPaths.count - 1} more cells)` : ''
    yield failure(WRITER_CODES.localPath, spec.rel, `row ${localPaths.row}, column ${localPaths.column}: a local path ${quote(localPaths.path)}${more}; a pack holds file names, never local paths`)
  }
  yield* rows.finish()
  return { opened: true, rows: rows.rows, complete: rows.valid === rows.rows, ...(rows.moverPatterns.length > 0 ? { moverPatterns: rows.moverPatterns } : {}) }
}

/**
 * Whether a row group may hold a row rowValidator refuses. The reader refuses everything else it checks (a
 * value of another type, a null where the table has none, an integer out of its range, a string cell above
 * 1 MiB or not UTF-8, which is also what a lone surrogate would need), so only a time, a float64 and a
 * partition value are left: a row group whose values of those are all good holds only valid rows.
 */
function mayBeInvalid(batch: RowBatch, schema: TableSchema, partition: Readonly<Record<string, string>> | undefined): boolean {
  const bad = (type: PackType, v: Vector | null): boolean => {
    if (v === null) return false
    switch (type.kind) {
      case 'time': {
        const s = v as StringVector
        for (let i = 0; i < s.length; i++) if ((!s.valid || s.valid[i]) && !isPackTime(s.text(i))) return true
        return false
      }
      case 'float64':
        return (v as Extract<Vector, { kind: 'float64' }>).values.some((x) => !Number.isFinite(x))
      case 'list':
        return bad(type.element, (v as Extract<Vector, { kind: 'list' }>).element)
      case 'struct':
        return type.fields.some((f) => bad(f.type, (v as Extract<Vector, { kind: 'struct' }>).fields.get(f.name) ?? null))
      default:
        return false
    }
  }
  if (schema.columns.some((c) => bad(c.type, batch.column(c.name)))) return true
  for (const col of schema.partitionColumns) {
    const s = batch.column(col) as StringVector
    // A dictionary entry is checked once, however many rows hold it; a row of the last row's entry, as most
    // rows of a partition column are, without a look-up.
    const checked = new Set<number>()
    let last = -1
    for (let i = 0; i < s.length; i++) {
      const e = s.entry ? s.entry[i]! : -1
      if (e >= 0 && e === last) continue
      if (e < 0 || !checked.has(e)) {
        const v = s.text(i)
        if (!isPartitionValue(v) || (partition && partition[col] !== v)) return true
        if (e >= 0) checked.add(e)
      }
      last = e
    }
  }
  return false
}

/**
 * Rows checked in one stretch before the thread's other tasks get a turn. On the calling thread those are
 * the check pool's messages: a worker that finished its parts waits for the next until they are taken, and
 * a row group of patterns is some 50 ms of work.
 */
const STRETCH_ROWS = 2048

/** A row group being checked (PartRows): what its rows are read with, and where the check has got to. */
interface RowGroupCheck {
  batch: RowBatch
  /** Whether its values settle that every row is valid (mayBeInvalid). */
  screened: boolean
  rowAt: (index: number) => string
  /** Issues of rows, in row order, until they go out (with the next hook's or at the end). */
  out: CheckIssue[]
  cells: ((i: number, out: CheckIssue[]) => void) | undefined
  order: ((p: number, i: number) => number) | undefined
  /** The last valid row of the row group (-1: none yet). */
  lastValid: number
  mayHoldLarge: boolean
  /** The row built for the hook, if one was. */
  row: Record<string, unknown> | undefined
}

/** The rows of one part, a row group at a time: what every part's rows are held to, and its table's own checks. */
class PartRows {
  rows = 0
  valid = 0
  private readonly at1: boolean
  private readonly validate
  private readonly compare
  private readonly sortColumns: readonly { name: string }[]
  private readonly records: RecordCheck | undefined
  readonly moverPatterns: string[] = []
  private readonly problems: RowFinding[] = []
  /** The sort columns of the last valid row of the row groups before this one, and the last valid row's index (-1: none yet). */
  private previous: Record<string, unknown> = {}
  private readonly key: Record<string, unknown> = {}
  private previousIndex = -1
  private firstKey: string | undefined
  private lastKey: string | undefined

  constructor(
    private readonly spec: PartSpec,
    ctx: PartContext,
  ) {
    this.at1 = ctx.level >= 1
    this.validate = rowValidator(spec.schema, spec.partition)
    this.compare = sortColumnsComparator(spec.schema)
    this.sortColumns = spec.schema.sortColumns.map((name) => ({ name }))
    this.records = this.at1 ? recordCheck(spec.schema.name, ctx, spec.rel, this.moverPatterns) : undefined
  }

  /**
   * A row group's rows: every issue in row order, and a row hook's on each valid row after the row's own.
   * The rows are checked by rowsFrom, a plain method: as this generator's own loop, V8 threw its optimised
   * code away some thirty times a check of a million patterns (each time recompiling it, and running the
   * rest of the row group unoptimised).
   */
  async *batch(batch: RowBatch, hook: RowHook | undefined): AsyncGenerator<CheckIssue> {
    const group = this.open(batch)
    for (let from = 0; from < batch.rows; ) {
      const to = Math.min(batch.rows, from + STRETCH_ROWS)
      const hooked = this.rowsFrom(group, from, to, hook !== undefined)
      yield* group.out
      group.out.length = 0
      if (hooked < 0) {
        from = to
        if (from < batch.rows) await new Promise(setImmediate)
        continue
      }
      const more = hook!(group.row ?? batch.row(hooked), group.rowAt(batch.rowStart + hooked))
      if (more) yield* more
      from = hooked + 1
    }
    // Taken before the next row group is decoded over this one's vectors.
    if (group.lastValid >= 0) this.previous = batch.pick(group.lastValid, this.sortColumns, {})
    if (batch.rows > 0) this.lastKey = group.lastValid === batch.rows - 1 ? sortKeyText(this.spec.schema, this.previous) : undefined
  }

  private open(batch: RowBatch): RowGroupCheck {
    const spec = this.spec
    return {
      batch,
      screened: !mayBeInvalid(batch, spec.schema, spec.partition),
      rowAt: (index) => `${spec.rel} row ${index}`,
      out: [],
      cells: this.records?.open(batch),
      order: this.at1 ? rowGroupOrder(batch, spec.schema, this.compare) : undefined,
      lastValid: -1,
      // Rows are counted one by one only in a row group that may hold one too large to build.
      mayHoldLarge: batch.listItems(0, batch.rows) > READ_LIMITS.rowListItems,
      row: undefined,
    }
  }

  /**
   * Checks the row group's rows from `from` to `to`, their issues into `group.out`; with `toHook`, stops
   * after the next valid row (its index returned, the row built for it in `group.row`) for the hook to see.
   * -1 at `to`.
   */
  private rowsFrom(group: RowGroupCheck, from: number, to: number, toHook: boolean): number {
    const { spec, problems } = this
    const { batch, screened, rowAt, out, cells, order, mayHoldLarge } = group
    for (let i = from; i < to; i++) {
      const index = batch.rowStart + i
      this.rows++
      const items = mayHoldLarge ? batch.listItems(i) : 0
      // A row too large to build is left unchecked, as the spec allows a record too large for its budget
      // (and not counted valid); its place in the order is still checked, for sort columns are scalars.
      const built = items <= READ_LIMITS.rowListItems
      if (!built && this.at1) out.push(note(CHECK_CODES.rowUnchecked, rowAt(index), `${rowTooLargeDetail(index, items)}: its rules, ids and identity are not checked`))
      let row: Record<string, unknown> | undefined
      if (!screened && built) {
        row = batch.row(i)
        problems.length = 0
        this.validate(row, index, problems)
        if (problems.length > 0) {
          if (this.at1) for (const f of problems) out.push(failure(f.code, rowAt(index), `${f.column || 'row'}: ${f.detail}`))
          continue
        }
      }
      if (built) this.valid++
      if (index === 0) this.firstKey = sortKeyText(spec.schema, batch.pick(i, this.sortColumns, this.key))
      if (order && this.previousIndex >= 0 && (group.lastValid >= 0 ? order(group.lastValid, i) : this.compare(this.previous, batch.pick(i, this.sortColumns, this.key))) > 0) {
        out.push(failure(WRITE_CODES.unsorted, rowAt(index), `sorts before row ${this.previousIndex} (by ${spec.schema.sortColumns.join(', ')})`))
      }
      this.previousIndex = index
      group.lastValid = i
      if (!built) continue
      cells?.(i, out)
      if (toHook) {
        group.row = row
        return i
      }
    }
    return -1
  }

  *finish(): Generator<CheckIssue> {
    const listing = this.spec.listing
    if (!this.at1 || !listing) return
    const rel = this.spec.rel
    if (this.rows !== listing.rows) yield failure(CHECK_CODES.partRows, rel, `its index states ${listing.rows} rows, the part has ${this.rows}`)
    if (this.firstKey !== undefined && this.lastKey !== undefined && (this.firstKey !== listing.first || this.lastKey !== listing.last)) {
      yield failure(CHECK_CODES.partBounds, rel, `its index states first ${quote(listing.first)} and last ${quote(listing.last)}, its rows give ${quote(this.firstKey)} and ${quote(this.lastKey)}`)
    }
  }
}

/**
 * How row p of a row group sorts against its row i, as sortColumnsComparator orders rows: on the vectors
 * where every sort column is text (by its UTF-8 bytes) or an integer or boolean with no null, which builds no
 * string a row; else on the rows' values.
 */
function rowGroupOrder(batch: RowBatch, schema: TableSchema, compare: (a: object, b: object) => number): (p: number, i: number) => number {
  const columns = schema.sortColumns.map((name) => ({ name }))
  const orders = columns.map(({ name }) => vectorOrder(batch.column(name)))
  if (orders.some((o) => o === undefined)) {
    const [a, b] = [{}, {}]
    return (p, i) => compare(batch.pick(p, columns, a), batch.pick(i, columns, b))
  }
  return (p, i) => {
    for (const o of orders) {
      const c = o!(p, i)
      if (c !== 0) return c
    }
    return 0
  }
}

function vectorOrder(v: Vector | null): ((p: number, i: number) => number) | undefined {
  if (v === null || (v.valid !== null && v.valid.includes(0))) return undefined
  switch (v.kind) {
    case 'string': {
      const { bytes, start, end } = v
      return (p, i) => {
        const pEnd = end[p]!
        const iEnd = end[i]!
        let x = start[p]!
        let y = start[i]!
        for (; x < pEnd && y < iEnd; x++, y++) if (bytes[x] !== bytes[y]) return bytes[x]! - bytes[y]!
        return pEnd - x - (iEnd - y)
      }
    }
    case 'int32':
    case 'int64':
    case 'bool': {
      const values = v.values
      return (p, i) => (values[p]! < values[i]! ? -1 : values[p]! > values[i]! ? 1 : 0)
    }
    default:
      return undefined
  }
}

// ---------------------------------------------------------------------------------------------------
// Records

/** A table's own checks: opened on a row group, then run on each valid row, issues appended to `out`. */
interface RecordCheck {
  open(batch: RowBatch): (i: number, out: CheckIssue[]) => void
}

/** A table's own checks (row-rules.ts, and a record table's ids and tilings), and its JSON cells'. */
function recordCheck(table: string, ctx: PartContext, rel: string, moverPatterns: string[]): RecordCheck | undefined {
  return inTurn(tableCheck(table, ctx, rel, moverPatterns), jsonCells(table, rel))
}

/** Checks of a row group's rows, one after the other. */
function inTurn(...checks: (RecordCheck | undefined)[]): RecordCheck | undefined {
  const present = checks.filter((c): c is RecordCheck => c !== undefined)
  if (present.length <= 1) return present[0]
  return {
    open: (batch) => {
      const opened = present.map((c) => c.open(batch))
      return (i, out) => {
        for (const check of opened) check(i, out)
      }
    },
  }
}

function tableCheck(table: string, ctx: PartContext, rel: string, moverPatterns: string[]): RecordCheck | undefined {
  const rowIds = (prefix: string, ids: (row: Record<string, unknown>) => IdentityFinding[]): RecordCheck => ({
    open: (batch) => (i, out) => {
      const row = batch.row(i)
      const found = ids(row)
      tilingFindings(row.pin_key, row.pin, row.tiling_group, ctx, found)
      for (const f of found) out.push(failure(f.code, `${prefix}:${String(row.id)}`, f.detail))
    },
  })
  // Only the columns a table's rules read are built.
  const picked = (rule: RowRule): RecordCheck => {
    const row: Record<string, unknown> = {}
    return {
      open: (batch) => (i, out) => {
        for (const f of rule.check(batch.pick(i, rule.columns, row))) out.push(failure(f.code, `${rel} row ${batch.rowStart + i}`, f.detail))
      },
    }
  }
  switch (table) {
    case 'patterns':
      return { open: (batch) => patternRows(batch, ctx) }
    case 'ants':
      return rowIds('ant', (row) => [...checkAntRow({ id: row.id, identity: row.identity, pin: row.pin }), ...ROW_RULES.ants!.check(row)])
    case 'quickstart':
      return rowIds('quickstart', (row) => [...checkQuickstartRow({ id: row.id, scene: row.scene, pin: row.pin }), ...ROW_RULES.quickstart!.check(row)])
    case 'verifications':
      return inTurn(mainVerifications(rel), picked(ROW_RULES.verifications!), verificationFacts(ctx, rel, moverPatterns))
    case 'annotations':
      return inTurn({
        open: (batch) => {
          const rev = (batch.column('rev') as Extract<Vector, { kind: 'int64' }>).values
          return (i, out) => {
            if (rev[i]! < 1n) out.push(failure(ROW_RULE_CODES.annotationRev, `${rel} row ${batch.rowStart + i}`, `rev ${rev[i]}: the ref seq of the version that added it, which is 1 or more`))
          }
        },
      }, picked(ROW_RULES.annotations!))
    default:
      return ROW_RULES[table] && picked(ROW_RULES[table])
  }
}

/** The JSON cells of a table's rows, checked where their bytes lie. */
function jsonCells(table: string, rel: string): RecordCheck | undefined {
  const columns = JSON_CELL_COLUMNS[table]
  if (!columns) return undefined
  const canonical = jsonCellChecker()
  return {
    open: (batch) => {
      const vectors = columns.map((name) => ({ name, v: batch.column(name) as StringVector | null }))
      return (i, out) => {
        for (const { name, v } of vectors) {
          if (v === null || (v.valid && !v.valid[i])) continue
          const problem = canonical(v.bytes, v.start[i]!, v.end[i]!)
          if (problem) out.push(failure(ROW_RULE_CODES.jsonCell, `${rel} row ${batch.rowStart + i}`, `${name}: ${problem}`))
        }
      }
    },
  }
}

/**
 * One main rule per pattern and publisher, among a part's rows. Rows are sorted by pattern_id, so only the
 * current pattern's main rules are held.
 */
function mainVerifications(rel: string): RecordCheck {
  let pattern: string | undefined
  const mainRule = new Map<string, string>()
  return {
    open: (batch) => {
      const main = batch.column('main') as Extract<Vector, { kind: 'bool' }>
      const [patternIds, rules, publishers] = ['pattern_id', 'rule', 'publisher'].map((name) => batch.column(name) as StringVector) as [StringVector, StringVector, StringVector]
      return (i, out) => {
        if (main.values[i] !== 1) return
        const id = patternIds.text(i)
        if (id !== pattern) {
          pattern = id
          mainRule.clear()
        }
        const [publisher, rule] = [publishers.text(i), rules.text(i)]
        const before = mainRule.get(publisher)
        if (before === undefined) mainRule.set(publisher, rule)
        else if (before !== rule) {
          const f = verificationMainFinding(id, publisher, rule, `(${quote(before)}) in an earlier row`)
          out.push(failure(f.code, `${rel} row ${batch.rowStart + i}`, f.detail))
        }
      }
    },
  }
}

/**
 * A verification's sites and mover against the kind of the tiling its pin names, and its range against its
 * rule's family; the patterns of the other main rows with a mover cell are gathered in `moverPatterns`.
 */
function verificationFacts(ctx: PartContext, rel: string, moverPatterns: string[]): RecordCheck {
  const kindOfPin = new Map([...ctx.tilings.values()].map((t) => [t.pin, t.kind]))
  const isSet = (v: Vector | null, i: number): boolean => v !== null && (v.valid === null || v.valid[i] === 1)
  return {
    open: (batch) => {
      const [sites, mover, range] = [batch.column('sites'), batch.column('mover'), batch.column('range')]
      const [pins, rules, patternIds] = [batch.column('pin') as StringVector, batch.column('rule') as StringVector, batch.column('pattern_id') as StringVector]
      const main = batch.column('main') as Extract<Vector, { kind: 'bool' }>
      return (i, out) => {
        // A range or mover off the main row is the row rule's finding, once: here only a main row's are judged.
        const onMain = main.values[i] === 1
        const [hasSites, hasMover, hasRange] = [isSet(sites, i), onMain && isSet(mover, i), onMain && isSet(range, i)]
        if (!hasSites && !hasMover && !hasRange) return
        const kind = kindOfPin.get(pins.text(i))
        const rule = hasRange ? rules.text(i) : undefined
        const moverFinding = verificationMoverFinding(kind, hasMover)
        const found = [verificationSitesFinding(kind, hasSites), moverFinding, verificationRangeFamilyFinding(rule, rule === undefined ? undefined : ctx.ruleFamilies.get(rule), hasRange)]
        for (const f of found) if (f) out.push(failure(f.code, `${rel} row ${batch.rowStart + i}`, f.detail))
        if (!hasMover || moverFinding || moverPatterns.length > MOVER_PATTERNS_CAP) return
        // Rows are sorted by pattern_id: a pattern's rows are together, so it is kept once.
        const id = patternIds.text(i)
        if (isContentId(id) && id !== moverPatterns.at(-1)) moverPatterns.push(id)
      }
    },
  }
}

/**
 * A record's tiling: its pin_key names a row of tilings (one of those kept, when not all were), with its
 * pin and tiling group. Findings are appended to `out`.
 */
function tilingFindings(pinKey: unknown, pin: unknown, tilingGroup: unknown, ctx: Pick<PartContext, 'tilings' | 'tilingsPartial'>, out: IdentityFinding[]): void {
  const tiling = ctx.tilings.get(pinKey as string)
  if (!tiling) {
    if (!ctx.tilingsPartial) out.push({ code: CHECK_CODES.tilingMissing, detail: `pin_key ${quote(pinKey)} names no row of tilings` })
    return
  }
  if (tiling.pin !== pin) out.push({ code: CHECK_CODES.recordPin, detail: `pin ${quote(pin)}, but tiling ${quote(pinKey)} has pin ${tiling.pin}` })
  if (tiling.tilingGroup !== tilingGroup) out.push({ code: ROW_CODES.partitionMismatch, detail: `tiling_group ${quote(tilingGroup)}, but tiling ${quote(pinKey)} is in ${quote(tiling.tilingGroup)}` })
}

/** A pattern row group's checks, on its cells as PatternCells (one object, refilled for each row). */
function patternRows(batch: RowBatch, ctx: PartContext): (i: number, out: CheckIssue[]) => void {
  const { tilings, moverPatterns } = ctx
  const text = (name: string): StringVector => batch.column(name) as StringVector
  const ints = (name: string): Int32Array => (batch.column(name) as Extract<Vector, { kind: 'int32' }>).values
  const columns = { id: text('id'), identity: text('identity'), pin: text('pin'), pinKey: text('pin_key'), model: text('model'), neighbourhood: text('neighbourhood'), class: text('class'), canonical: text('canonical') }
  const phases = batch.column('phases') as Extract<Vector, { kind: 'list' }>
  const inner = phases.element as Extract<Vector, { kind: 'list' }>
  const struct = inner.element as Extract<Vector, { kind: 'struct' }>
  const field = (name: string): Int32Array => (struct.fields.get(name) as Extract<Vector, { kind: 'int32' }>).values
  const period = (batch.column('period') as Extract<Vector, { kind: 'int64' }>).values
  // The periods' 32-bit halves (little-endian), read as a number where they make a safe integer.
  const halves = new Int32Array(period.buffer, period.byteOffset, 2 * period.length)
  const periodAt = (i: number): number | bigint => {
    const high = halves[2 * i + 1]!
    return high >= -(2 ** 20) && high < 2 ** 20 ? high * 2 ** 32 + (halves[2 * i]! >>> 0) : period[i]!
  }
  const [stepsPerGen, dx, dy] = [ints('steps_per_gen'), ints('dx'), ints('dy')]
  const cell = (v: StringVector): TextCell => ({ bytes: v.bytes, start: 0, end: 0 })
  const c: PatternCells = {
    id: cell(columns.id), identity: cell(columns.identity), pin: cell(columns.pin), pinKey: cell(columns.pinKey), model: cell(columns.model),
    neighbourhood: cell(columns.neighbourhood), class: cell(columns.class), canonical: cell(columns.canonical),
    stepsPerGen: 0, period: 0n, dx: 0, dy: 0,
    phases: { first: 0, last: 0, cellOffsets: inner.offsets, i: field('i'), j: field('j'), k: field('k'), s: field('s') },
  }
  const cells = (Object.keys(columns) as (keyof typeof columns)[]).map((name) => ({ to: c[name], from: columns[name] }))
  const [tilingGroup, classGroup] = [text('tiling_group'), text('class_group')]
  // A nullable column a part lacks reads as null.
  const rule = batch.column('rule') as StringVector | null
  const gun = batch.column('gun') as StringVector | null
  const site = batch.column('site')
  const [cellCount, minCells, maxCells] = [ints('cells'), ints('min_cells'), ints('max_cells')]
  const counts: PhaseCounts = { cells: 0, minCells: 0, maxCells: 0, phase0: 0, fewest: 0, most: 0 }
  const found: IdentityFinding[] = []
  // The dictionary entries of pin_key, pin and tiling_group (-1: a value stored plainly), and the last row's whose tiling was right.
  const [pinKeyEntry, pinEntry, groupEntry] = [columns.pinKey.entry, columns.pin.entry, tilingGroup.entry]
  const good = [-1, -1, -1]
  const phaseCounts = (i: number): PhaseCounts => {
    const [first, last] = [phases.offsets[i]!, phases.offsets[i + 1]!]
    counts.cells = cellCount[i]!
    counts.minCells = minCells[i]!
    counts.maxCells = maxCells[i]!
    counts.phase0 = first < last ? inner.offsets[first + 1]! - inner.offsets[first]! : 0
    counts.fewest = counts.most = counts.phase0
    for (let q = first + 1; q < last; q++) {
      const n = inner.offsets[q + 1]! - inner.offsets[q]!
      if (n < counts.fewest) counts.fewest = n
      if (n > counts.most) counts.most = n
    }
    return counts
  }
  return (i, out) => {
    for (let n = 0; n < cells.length; n++) {
      const pair = cells[n]!
      pair.to.start = pair.from.start[i]!
      pair.to.end = pair.from.end[i]!
    }
    c.stepsPerGen = stepsPerGen[i]!
    c.period = periodAt(i)
    c.dx = dx[i]!
    c.dy = dy[i]!
    c.phases.first = phases.offsets[i]!
    c.phases.last = phases.offsets[i + 1]!
    // Setting the length is a call into the runtime; most rows find nothing.
    if (found.length > 0) found.length = 0
    const spelling = checkPatternIdentity(c, found)
    // A row of the same dictionary entries as the last row whose tiling was right is right too.
    const pk = pinKeyEntry ? pinKeyEntry[i]! : -1
    const pn = pinEntry ? pinEntry[i]! : -1
    const tg = groupEntry ? groupEntry[i]! : -1
    if (pk < 0 || pn < 0 || tg < 0 || pk !== good[0] || pn !== good[1] || tg !== good[2]) {
      const before = found.length
      tilingFindings(columns.pinKey.text(i), columns.pin.text(i), tilingGroup.text(i), ctx, found)
      const right = found.length === before
      good[0] = right ? pk : -1
      good[1] = right ? pn : -1
      good[2] = right ? tg : -1
    }
    const cls = columns.class.text(i)
    if (moverPatterns && cls !== 'mover') {
      const id = columns.id.text(i)
      if (isContentId(id) && moverPatterns.has(id)) found.push(verificationMoverClassFinding(cls))
    }
    const ruleFinding = patternClassColumnFinding('rule', cls, rule !== null && (rule.valid === null || rule.valid[i] === 1))
    if (ruleFinding) found.push(ruleFinding)
    const hasGun = gun !== null && (gun.valid === null || gun.valid[i] === 1)
    const gunFinding = patternClassColumnFinding('gun', cls, hasGun)
    if (gunFinding) found.push(gunFinding)
    if (hasGun) found.push(...gunFindings(gun.text(i)))
    if (site !== null && (site.valid === null || site.valid[i] === 1)) {
      const siteFinding = patternSiteFinding(tilings.get(columns.pinKey.text(i))?.kind, true)
      if (siteFinding) found.push(siteFinding)
    }
    // The counts are held to the typed phases only once those are the identity's.
    const cellsFinding = found.some((f) => f.code === IDENTITY_CODES.phasesMismatch) ? undefined : patternCellsFinding(cls, phaseCounts(i))
    if (cellsFinding) found.push(cellsFinding)
    const classGood = classGroup.equals(i, columns.class, i)
    if (found.length === 0 && spelling === 'ours' && classGood) return
    const target = `pattern:${columns.id.text(i)}`
    for (const f of found) out.push(failure(f.code, target, f.detail))
    if (spelling === 'unknown') out.push(note(IDENTITY_CODES.identityUnknown, target, 'its identity is not in our spelling of jetcarp-pattern-v3: only its id is checked against it'))
    if (!classGood) out.push(failure(ROW_CODES.partitionMismatch, target, `class_group ${quote(classGroup.text(i))} is not its class ${quote(columns.class.text(i))}`))
  }
}

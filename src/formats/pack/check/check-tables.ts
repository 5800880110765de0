/**
 * The tables and searches of a manifest (check.ts): every index tree walked (index-walk.ts), every part's
 * rows checked (check-part.ts: the rules all parts share, and records' ids, identity lines and tilings),
 * on worker threads where nothing here is needed (check-pool.ts), and the checks that keep state here:
 * tilings' pins from their geometry or reference patch (tilings.ts), media objects, the raters rows that
 * ratings and groups need (row-rules.ts), and at level 3 the replay of periodic patterns (replay.ts).
 *
 * Order: tilings, rules and verifications come before the other tables of a manifest, so that a record's
 * tiling, a verification's rule, and a pattern's rule and main verification, are known when its row is
 * read. What later rows need is kept for the whole check (fact rows are the same wherever they appear): each
 * tiling's pin, group and (level 3) a lattice's neighbour lists, each rule notation's family (capped,
 * kept-facts.ts), the patterns whose main verifications carry a mover cell (capped, mover-patterns.ts), and
 * at level 3 the rules' masks and each pattern's main rules. Nothing else is held: rows stream a row group
 * at a time, and only the rows of a reference patch are kept while its pin is checked (at most its tilings
 * row's reference_tiles, itself within the geometry limits).
 */
import { createHash } from 'node:crypto'
import { hashRefusal, quote } from '../documents/documents.js'
import { SEARCH_SCHEMA, type TablePart } from '../documents/doc-index.js'
import type { Manifest } from '../documents/doc-manifest.js'
import { checkPatchTileCount, GEOMETRY_CODES } from '../geometry/geometry.js'
import { walkSearchIndex, walkTableIndex } from '../documents/index-walk.js'
import { partFacts } from '../tables/parquet-read.js'
import type { AutomatonTiling, Neighbourhood, PatternCell } from './replay-automaton.js'
import { REPLAY_CODES, replayPeriodic, type ReplayStatus } from './replay.js'
import { mediaExtension, type MediaFile } from '../documents/store.js'
import { mediaKindOf, partRuleBreaks, readHead, WRITER_CODES } from './writer-rules.js'
import { PACK_TABLES, REFERENCE_PATCH_SCHEMA, ROW_CODES, SCHEMAS_BY_ID, partitionFindings, type PackTableName, type TableSchema } from '../tables/table-schemas.js'
import { checkAperiodicTilingRow, checkLatticeTilingRow } from '../geometry/tilings.js'
import { checkPart, type RecordTiling, type RowHook } from './check-part.js'
import { CheckPool, type PartJob, type PendingPart } from './check-pool.js'
import { keepRuleFamily, RaterBook, ruleRowKey, ruleRowMissing } from '../records/row-rules.js'
import { MoverPatterns } from '../records/mover-patterns.js'
import { PatternMainRules } from '../records/main-rules.js'
import { CHECK_CODES, type CheckIssue, type CheckRun } from './check-run.js'
import { RowHashBytes } from '../tables/row-bytes.js'
import { FACT_KEYS_CAP, GEOMETRY_BYTES_CAP, KEPT_TEXT_CAP, KeptFacts, KeptText } from '../records/kept-facts.js'

type Row = Record<string, unknown>

interface TilingFacts extends RecordTiling {
  /** A lattice's tile types and neighbour lists, once its geometry has been read (level 3, within GEOMETRY_BYTES_CAP). */
  geometry?: AutomatonTiling
  /** A lattice whose geometry read, but was beyond the bytes of geometry a check keeps. */
  geometryUnkept?: true
}

interface RuleFacts {
  family: string
  states: number
  birth: bigint | null
  survive: bigint | null
}

/** A part as an index (or a tilings row) names it. */
interface PartToRead {
  rel: string
  hash: string
  bytes?: number
  schema: TableSchema
  partition?: Readonly<Record<string, string>>
  /** What the index states of it. */
  listing?: { rows: number; first: string; last: string }
}

const FIRST_TABLES: readonly string[] = ['tilings', 'rules', 'verifications']
const rank = (table: string): number => (FIRST_TABLES.includes(table) ? FIRST_TABLES.indexOf(table) : FIRST_TABLES.length)

/** Replay findings that leave a record unchecked or not replayed: notes, not failures. */
const REPLAY_NOTES: ReadonlySet<string> = new Set([REPLAY_CODES.overBudget, REPLAY_CODES.cellCap, REPLAY_CODES.outOfRange, REPLAY_CODES.notReplayable, REPLAY_CODES.unsupportedRule])
const STATUS_COUNT: Record<ReplayStatus, keyof CheckRun['stats']['replay']> = { confirmed: 'confirmed', failed: 'failed', refused: 'failed', unchecked: 'unchecked', 'not-replayed': 'notReplayed' }

/** What each map of facts keeps, and leaves unchecked beyond its cap, for the note that says so. */
const UNKEPT = {
  tilings: { keeps: 'tilings', unchecked: 'the records on the others are not checked against their tiling, nor replayed' },
  ruleFamilies: { keeps: 'rule notations', unchecked: 'the ranges of verifications in the other notations are not checked against their family' },
  factRows: { keeps: 'tilings and rules keys', unchecked: 'the rows of the other keys are not held to being the same wherever they appear' },
} as const

export class TableChecker {
  private readonly tilings: KeptFacts<TilingFacts>
  /** The rules rows' masks, for replay (level 3). */
  private readonly rules: KeptFacts<RuleFacts>
  /** Each rule notation's family, as a verification's rule sees it (keepRuleFamily). */
  private readonly ruleFamilies: KeptFacts<string>
  private readonly unkeptNoted = new Set<keyof typeof UNKEPT>()
  /** Bytes of lattice geometry level 3 may still keep. */
  private geometryLeft: number
  /** The tilings as a part job gives them to a thread, made again only when more were kept. */
  private sharedTilings: { size: number; tilings: [string, RecordTiling][] } | undefined
  private readonly mainRules: PatternMainRules
  private readonly raterBook: RaterBook
  private ratersNoted = false
  private readonly moverPatterns: MoverPatterns
  /** The mover patterns' words as the threads share them, made again only when more were kept. */
  private sharedMovers: { size: number; slots: Uint32Array } | undefined
  private moversNoted = false
  /**
   * The tilings and rules rows read, by table and key, as the SHA-256 of their row bytes (row-bytes.ts,
   * zeros +0), which are the same exactly when their RFC 8785 texts are: a tilings row holds its whole
   * edges and params, and a digest of 32 bytes tells two rows apart as well. The bytes, not the text: a
   * row's text is built from a string for each value, some 500 bytes an element while it is made (measured).
   */
  private readonly factRows: KeptFacts<string>
  private readonly factBytes = { tilings: new RowHashBytes(PACK_TABLES.tilings), rules: new RowHashBytes(PACK_TABLES.rules) }

  private pool: CheckPool | undefined

  constructor(private readonly run: CheckRun) {
    const keys = run.caps.factKeys ?? FACT_KEYS_CAP
    // The characters the facts maps and the main rules' notations keep, in all.
    const text = new KeptText(run.caps.keptText ?? KEPT_TEXT_CAP)
    this.tilings = new KeptFacts(keys, text)
    this.rules = new KeptFacts(keys, text)
    this.ruleFamilies = new KeptFacts(keys, text)
    this.factRows = new KeptFacts(keys, text)
    this.geometryLeft = run.caps.geometryBytes ?? GEOMETRY_BYTES_CAP
    this.moverPatterns = new MoverPatterns(run.caps.moverPatterns)
    this.mainRules = new PatternMainRules(run.caps.mainRules, undefined, text)
    this.raterBook = new RaterBook(run.caps.raters)
  }

  /** Stops or keeps (for the next check) the threads this check started. */
  async close(): Promise<void> {
    await this.pool?.close()
    this.pool = undefined
  }

  /**
   * The threads a part of `bytes` is checked on, or undefined to check it here: a small part, or one whose
   * object failed its check before (it is neither checked again nor reported twice).
   */
  private poolFor(bytes: number, objectKnown: boolean | undefined): CheckPool | undefined {
    const run = this.run
    if (run.threads <= 1 || bytes < run.threadPartBytes || objectKnown === false) return undefined
    return (this.pool ??= new CheckPool(run.threads))
  }

  /**
   * Every table (tilings, rules and verifications first) and every search of a manifest. A tree another
   * manifest of the check names too (an unchanged table keeps its index) was walked then: it is the same
   * bytes, so it is not walked again.
   */
  async *manifest(m: Pick<Manifest, 'tables' | 'searches'>): AsyncGenerator<CheckIssue> {
    const run = this.run
    const tables = Object.entries(m.tables).sort(([a], [b]) => rank(a) - rank(b))
    for (const [table, root] of tables) {
      const rootPath = run.layout.indexPath(root)
      if (!Object.hasOwn(PACK_TABLES, table)) {
        yield run.note(CHECK_CODES.tableUnknown, rootPath, `table ${table} is not one of format 1.0's: ignored`)
      } else if (run.firstVisit(`${table} ${rootPath}`)) {
        yield* this.table(table, PACK_TABLES[table as PackTableName], root)
      }
    }
    for (const [search, root] of Object.entries(m.searches)) {
      if (run.firstVisit(`search ${search} ${run.layout.indexPath(root)}`)) yield* this.search(search, root)
    }
    if (run.at(1)) for (const f of this.raterBook.findings()) yield run.issue(f.code, f.at, f.detail)
    if (this.raterBook.unheld > 0 && !this.ratersNoted) {
      this.ratersNoted = true
      yield run.note(CHECK_CODES.ratersUnchecked, 'ratings', `more distinct raters than a check keeps (memory stays bounded): the ratings and raters rows of those beyond are not judged`)
    }
  }

  /**
   * The walk's next event, or undefined at its end; an error that stops the walk becomes an issue on the
   * index last loaded (the one that failed to load or parse, or that lists a child the tree's rules refuse).
   */
  private async step<E>(walk: AsyncGenerator<E>, loader: { last(): string | undefined }, rootPath: string): Promise<{ event: E } | { issue: CheckIssue } | undefined> {
    try {
      const next = await walk.next()
      return next.done ? undefined : { event: next.value }
    } catch (err) {
      return { issue: this.run.thrown(err, loader.last() ?? rootPath) }
    }
  }

  /**
   * A table's index tree and parts. Parts whose checks need no state of this thread's go to the run's
   * threads while the walk goes on (check-pool.ts); every issue still goes out in walk order: those of the
   * parts given out before anything found after them.
   */
  private async *table(table: string, schema: TableSchema, root: string): AsyncGenerator<CheckIssue> {
    const run = this.run
    const rootPath = run.layout.indexPath(root)
    const loader = run.indexLoader()
    const walk = walkTableIndex(root, loader.load, { table })
    const hook = this.rowHook(table)
    const given: PendingPart[] = []
    const drain = async function* (this: TableChecker): AsyncGenerator<CheckIssue> {
      for (let p = given.shift(); p; p = given.shift()) yield* this.taken(p)
    }.bind(this)
    for (;;) {
      const next = await this.step(walk, loader, rootPath)
      if (next === undefined) break
      if ('issue' in next) {
        yield* drain()
        yield next.issue
        return
      }
      const e = next.event
      if (e.kind === 'index') {
        run.stats.indexes++
        if (e.level === 1 && SCHEMAS_BY_ID.get(e.index.schema) !== schema) {
          yield* drain()
          yield run.issue(CHECK_CODES.schemaUnknown, rootPath, `schema ${quote(e.index.schema)}: this reader knows ${schema.schemaId} for table ${table}, so it cannot read the table`)
          return
        }
        continue
      }
      let rel: string
      try {
        rel = run.layout.partPath(table, e.part)
      } catch (err) {
        yield* drain()
        yield run.thrown(err, loader.last() ?? rootPath)
        continue
      }
      if (!run.firstVisit(rel)) continue
      const pool = hook === undefined ? this.poolFor(e.part.bytes, run.objectKnown(rel)) : undefined
      if (pool) {
        const { issues, partition } = this.partitionIssues(schema, rel, e.part)
        given.push(pool.submit(this.partJob(table, schema, rel, e.part, partition), issues))
        // Enough given out to keep every thread busy while the first comes back.
        if (given.length > 2 * run.threads) yield* this.taken(given.shift()!)
      } else {
        yield* drain()
        yield* this.tablePart(schema, rel, e.part, hook)
      }
    }
    yield* drain()
  }

  /** A part's partition as its index lists it: issues (from level 1), and the partition its rows must be in if it is right. */
  private partitionIssues(schema: TableSchema, rel: string, part: TablePart): { issues: CheckIssue[]; partition?: Readonly<Record<string, string>> } {
    const bad = partitionFindings(schema, part.partition)
    const issues = this.run.at(1) ? bad.map((f) => this.run.issue(f.code, rel, `its index lists it in partition ${JSON.stringify(part.partition)}: ${f.column}: ${f.detail}`)) : []
    // A partition that is wrong itself is reported once, not again by every row.
    return bad.length === 0 ? { issues, partition: part.partition } : { issues }
  }

  private async *tablePart(schema: TableSchema, rel: string, part: TablePart, hook: RowHook | undefined): AsyncGenerator<CheckIssue> {
    const { issues, partition } = this.partitionIssues(schema, rel, part)
    yield* issues
    yield* this.readPart({ rel, hash: part.object, bytes: part.bytes, schema, ...(partition ? { partition } : {}), listing: part }, hook)
  }

  /** A part as a thread checks it: what readPart would give checkPart, and the tilings its rows need. */
  private partJob(table: string, schema: TableSchema, rel: string, part: TablePart, partition: Readonly<Record<string, string>> | undefined): PartJob {
    const run = this.run
    const withTilings = table === 'patterns' || table === 'ants' || table === 'quickstart' || table === 'verifications'
    return {
      rel, file: run.file(rel), hash: part.object, bytes: part.bytes, schemaId: schema.schemaId, level: run.level,
      ...(partition ? { partition: { ...partition } } : {}),
      listing: { rows: part.rows, first: part.first, last: part.last },
      verify: run.objectKnown(rel) === undefined,
      tilings: withTilings ? this.tilingsForThreads() : [],
      ...(withTilings && this.tilings.dropped > 0 ? { tilingsPartial: true } : {}),
      ruleFamilies: table === 'verifications' ? [...this.ruleFamilies.entries] : [],
      ...(table === 'patterns' && this.moverPatterns.size > 0 ? { moverPatterns: this.movers() } : {}),
    }
  }

  /** The tilings kept, as a part job gives them (the tilings are read first, so this is made once a check). */
  private tilingsForThreads(): [string, RecordTiling][] {
    const kept = this.tilings.entries
    if (this.sharedTilings?.size !== kept.size) {
      this.sharedTilings = { size: kept.size, tilings: [...kept].map(([key, t]) => [key, { pin: t.pin, tilingGroup: t.tilingGroup, kind: t.kind }]) }
    }
    return this.sharedTilings.tilings
  }

  /** A part given to a thread: its issues, then its counts and its object's check, as readPart keeps them. */
  private async *taken(part: PendingPart): AsyncGenerator<CheckIssue> {
    const run = this.run
    const result = yield* part.issues()
    run.signal?.throwIfAborted()
    if (result.objectChecked) run.objectChecked(part.job.rel, result.objectOk)
    if (result.outcome.opened) run.stats.parts++
    run.stats.rows += result.outcome.rows
    yield* this.keepMovers(result.outcome.moverPatterns, part.job.rel)
  }

  /** A verifications part's patterns with a mover cell, kept for the pattern rows read later; a note once, when more are given than are kept. */
  private *keepMovers(ids: readonly string[] | undefined, rel: string): Generator<CheckIssue> {
    if (!ids) return
    let kept = true
    for (const id of ids) kept = this.moverPatterns.add(id) && kept
    if (kept || this.moversNoted) return
    this.moversNoted = true
    yield this.run.note(CHECK_CODES.moverClassUnchecked, rel, `more patterns have a mover cell on a main verification than a check keeps (${this.moverPatterns.size}): the classes of the others are not checked`)
  }

  /** The mover patterns' words in shared memory, for the threads. */
  private movers(): Uint32Array {
    const words = this.moverPatterns.slots
    if (this.sharedMovers?.size !== this.moverPatterns.size) {
      const slots = new Uint32Array(new SharedArrayBuffer(words.byteLength))
      slots.set(words)
      this.sharedMovers = { size: this.moverPatterns.size, slots }
    }
    return this.sharedMovers.slots
  }

  /**
   * Reads a part (check-part.ts) once its object is checked, giving each valid row to `hook`. Returns
   * whether every row was read and valid.
   */
  private async *readPart(p: PartToRead, hook?: RowHook): AsyncGenerator<CheckIssue, boolean> {
    const run = this.run
    if (!(yield* run.dataObject(p.rel, p.hash, p.bytes))) return false
    const spec = { rel: p.rel, file: run.file(p.rel), schema: p.schema, ...(p.partition ? { partition: p.partition } : {}), ...(p.listing ? { listing: p.listing } : {}) }
    const ctx = { level: run.level, tilings: this.tilings.entries, ...(this.tilings.dropped > 0 ? { tilingsPartial: true } : {}), ruleFamilies: this.ruleFamilies.entries, ...(this.moverPatterns.size > 0 ? { moverPatterns: this.moverPatterns } : {}), ...(run.signal ? { signal: run.signal } : {}) }
    const outcome = yield* checkPart(spec, ctx, hook)
    if (outcome.opened) run.stats.parts++
    run.stats.rows += outcome.rows
    yield* this.keepMovers(outcome.moverPatterns, p.rel)
    return outcome.complete
  }

  /** A table's checks that need its rows (its records' own are check-part.ts's). */
  private rowHook(table: string): RowHook | undefined {
    const at3 = this.run.at(3)
    switch (table) {
      case 'tilings':
        return (row) => this.tilingsRow(row)
      case 'rules':
        return this.run.at(1) ? (row, at) => this.rulesRow(row, at) : undefined
      case 'verifications':
        return at3 ? (row) => this.keepMainRule(row) : undefined
      case 'patterns':
        return at3 ? (row) => this.replayPattern(row) : undefined
      case 'media':
        return (row) => this.mediaRow(row)
      case 'ratings':
        return this.run.at(1) ? (row, at) => this.raterBook.rating(row, at) : undefined
      case 'raters':
        return this.run.at(1) ? (row, at) => this.raterBook.rater(row, at) : undefined
      default:
        return undefined
    }
  }

  // -------------------------------------------------------------------------------------------------
  // tilings

  private async *tilingsRow(row: Row): AsyncGenerator<CheckIssue> {
    const run = this.run
    const pinKey = row.pin_key as string
    const target = `tiling:${pinKey}`
    const facts: TilingFacts = { pin: row.pin as string, tilingGroup: row.tiling_group as string, kind: row.kind as string }
    let geometryRead = false
    if (facts.kind === 'lattice') {
      if (run.at(1)) {
        try {
          yield* this.pinResult(target, checkLatticeTilingRow(row))
          geometryRead = true
        } catch (err) {
          yield run.thrown(err, target)
        }
      }
    } else if (facts.kind === 'aperiodic') {
      yield* this.referencePatch(row, target)
    } else if (run.at(1)) {
      yield run.issue(ROW_CODES.invalid, target, `kind ${quote(facts.kind)} is neither lattice nor aperiodic`)
    }
    const bytes = run.at(1) ? this.factBytes.tilings.of(row) : undefined
    if (bytes) yield* this.sameFact('tilings', row, bytes, target)
    if (this.tilings.get(pinKey) !== undefined) return
    if (!this.tilings.keep(pinKey, facts, pinKey.length + facts.pin.length + facts.tilingGroup.length + facts.kind.length)) {
      yield* this.unkept('tilings', target)
      return
    }
    if (!geometryRead || !run.at(3)) return
    // The row's own columns, as checked: tile types and neighbour lists are what replay needs.
    if (bytes!.length > this.geometryLeft) facts.geometryUnkept = true
    else {
      this.geometryLeft -= bytes!.length
      facts.geometry = row as unknown as AutomatonTiling
    }
  }

  /** A note, once for each map of facts, that it keeps no more keys and what goes unchecked for it. */
  private *unkept(map: keyof typeof UNKEPT, target: string): Generator<CheckIssue> {
    if (this.unkeptNoted.has(map)) return
    this.unkeptNoted.add(map)
    yield this.run.note(CHECK_CODES.factsUnkept, target, `more ${UNKEPT[map].keeps} than a check keeps (memory stays bounded): ${UNKEPT[map].unchecked}`)
  }

  /**
   * "In a fact table a key's rows are the same wherever they appear" (a reader MAY check it): the small
   * fact tables, tilings and rules, whose rows a check reads on this thread, are held to it across the
   * whole pack. The record tables are not: it would cost memory per record (the publisher refuses it).
   */
  private *sameFact(table: 'tilings' | 'rules', row: Row, bytes: Uint8Array, target: string): Generator<CheckIssue> {
    const schema = PACK_TABLES[table]
    const key = `${table}\n${schema.sortColumns.map((c) => String(row[c])).join('\n')}`
    const digest = createHash('sha256').update(bytes).digest('base64')
    const before = this.factRows.get(key)
    if (before === undefined) {
      if (!this.factRows.keep(key, digest, key.length + digest.length)) yield* this.unkept('factRows', target)
    } else if (before !== digest) yield this.run.issue(CHECK_CODES.factConflict, target, `another ${table} row with the same ${schema.sortColumns.join(', ')} differs from it: a fact row is the same wherever it appears`)
  }

  /** A rules row: the same wherever it appears, its family kept for the verifications' ranges, and (level 3) its masks kept for replay. */
  private *rulesRow(row: Row, at: string): Generator<CheckIssue> {
    yield* this.sameFact('rules', row, this.factBytes.rules.of(row), at)
    const [notation, family] = [row.notation as string, row.family as string]
    if (this.ruleFamilies.admit(notation, notation.length + family.length)) keepRuleFamily(this.ruleFamilies.entries, notation, family)
    else yield* this.unkept('ruleFamilies', at)
    if (this.run.at(3)) this.keepRule(row)
  }

  private *pinResult(target: string, c: { mismatches: string[]; lint: string[] }): Generator<CheckIssue> {
    if (c.mismatches.length > 0) yield this.run.issue(GEOMETRY_CODES.pinMismatch, target, c.mismatches.join('; '))
    if (c.lint.length > 0) yield this.run.note(CHECK_CODES.geometryLint, target, c.lint.join('; '))
  }

  /** An aperiodic tiling's reference patch: read (level 0), its object checked and the pin it gives compared (level 1). */
  private async *referencePatch(row: Row, target: string): AsyncGenerator<CheckIssue> {
    const run = this.run
    const bad = hashRefusal(row.reference, 'reference', true)
    if (bad) {
      yield run.issue(bad.code, target, bad.detail)
      return
    }
    const reference = row.reference as string
    let tiles: number
    let rel: string
    try {
      tiles = checkPatchTileCount(row.reference_tiles)
      rel = run.layout.referencePatchPath(row.family as string, reference)
    } catch (err) {
      yield run.thrown(err, target)
      return
    }
    const patch: Row[] = []
    // One row beyond reference_tiles is enough for the count to be refused; no more is kept.
    const complete = yield* this.readPart({ rel, hash: reference, schema: REFERENCE_PATCH_SCHEMA }, (r) => {
      if (patch.length <= tiles) patch.push(r)
      return undefined
    })
    if (!complete || !run.at(1)) return
    try {
      yield* this.pinResult(target, checkAperiodicTilingRow(row, patch))
    } catch (err) {
      yield run.thrown(err, target)
    }
  }

  // -------------------------------------------------------------------------------------------------
  // media

  private async *mediaRow(row: Row): AsyncGenerator<CheckIssue> {
    const run = this.run
    const target = `${String(row.target)} ${String(row.kind)}${row.from_seed === true ? ' from seed' : ''}`
    const bad = hashRefusal(row.object, 'object', true)
    if (bad) {
      yield run.issue(bad.code, target, bad.detail)
      return
    }
    const ext = mediaExtension(row.media_type)
    if (!ext.ok) {
      yield run.issue(ext.code, target, ext.detail)
      return
    }
    let rel: string
    try {
      rel = run.layout.mediaPath(row as unknown as MediaFile & { object: string }, ext.value)
    } catch (err) {
      yield run.thrown(err, target)
      return
    }
    if (!(yield* run.dataObject(rel, row.object as string, Number(row.bytes))) || !run.at(1)) return
    const kind = mediaKindOf(await readHead(run.file(rel), 12))
    if (kind !== ext.value) {
      yield run.issue(WRITER_CODES.mediaKind, rel, `its row states ${quote(row.media_type)}, its bytes are ${kind === null ? 'no PNG, GIF or WebP' : `a ${kind.toUpperCase()} image`}`)
    }
  }

  // -------------------------------------------------------------------------------------------------
  // level 3

  /** A rule's masks for replay; one beyond those kept is found missing by replay, which then says so. */
  private keepRule(row: Row): void {
    const key = ruleRowKey(row.notation, row.neighbourhood, row.steps_per_gen)
    const family = row.family as string
    this.rules.keep(key, { family, states: row.states as number, birth: row.birth as bigint | null, survive: row.survive as bigint | null }, key.length + family.length)
  }

  private keepMainRule(row: Row): undefined {
    if (row.main !== true) return undefined
    this.mainRules.add(row.pattern_id as string, row.rule as string)
    return undefined
  }

  /** A pattern replayed, or with a sample, replayed when the sample takes it, and its outcome told. */
  private *replayPattern(row: Row): Generator<CheckIssue> {
    const target = `pattern:${String(row.id)}`
    const sample = this.run.replaySample
    if (sample === undefined) return yield* this.replay(row, target)
    const id = String(row.id)
    if (!sample.takes(id)) return
    const issues = [...this.replay(row, target)]
    const failed = issues.some((i) => !i.note)
    const outcome = failed ? 'failed' : issues.length > 0 ? 'unchecked' : 'confirmed'
    sample.outcome(id, outcome, issues.length > 0 ? issues.map((i) => `${i.code}: ${i.detail}`).join('; ') : 'replayed: every phase and its move as stated')
    yield* issues
  }

  /** Replays a pattern in its rule (its rule column, else each distinct rule of its main verifications). */
  private *replay(row: Row, target: string): Generator<CheckIssue> {
    const run = this.run
    const tiling = this.tilings.get(row.pin_key as string)
    if (!tiling && this.tilings.dropped > 0) {
      run.stats.replay.notReplayed++
      yield run.note(REPLAY_CODES.notReplayable, target, `tiling ${quote(row.pin_key)} is not among the ${this.tilings.entries.size} tilings this check keeps (memory stays bounded): not replayed`)
      return
    }
    if (tiling?.geometryUnkept) {
      run.stats.replay.notReplayed++
      yield run.note(REPLAY_CODES.notReplayable, target, `tiling ${quote(row.pin_key)}'s neighbour lists are beyond the ${this.run.caps.geometryBytes ?? GEOMETRY_BYTES_CAP} bytes of geometry this check keeps (memory stays bounded): not replayed`)
      return
    }
    // A missing tiling or one whose geometry does not read is level 1's finding.
    if (!tiling || (tiling.kind === 'lattice' && !tiling.geometry)) return
    if (!tiling.geometry) {
      run.stats.replay.notReplayed++
      yield run.note(REPLAY_CODES.notReplayable, target, `tiling ${quote(row.pin_key)} is ${tiling.kind}: level 3 replays patterns on lattice tilings only`)
      return
    }
    const main = typeof row.rule === 'string' ? { rules: [row.rule], unsure: false } : this.mainRules.rulesOf(row.id as string)
    const notations = main.rules
    if (main.unsure) {
      run.stats.replay.unchecked++
      yield run.note(CHECK_CODES.replayRuleUnkept, target, `its rule column is null, and its main verifications may be among the ${this.mainRules.dropped} main rules beyond those this check keeps (memory stays bounded): not replayed`)
      return
    }
    if (notations.length === 0) {
      yield run.issue(CHECK_CODES.replayRuleMissing, target, 'its rule column is null and no verification of it is marked main, so it has no rule to run in')
      return
    }
    for (const notation of notations) {
      const rule = this.rules.get(ruleRowKey(notation, row.neighbourhood, row.steps_per_gen))
      if (!rule && this.rules.dropped > 0) {
        run.stats.replay.unchecked++
        yield run.note(CHECK_CODES.replayRuleUnkept, target, `rule ${quote(notation)} with neighbourhood ${String(row.neighbourhood)} and steps_per_gen ${String(row.steps_per_gen)} is not among the ${this.rules.entries.size} rules this check keeps (memory stays bounded): not replayed in it`)
        continue
      }
      if (!rule) {
        yield run.issue(CHECK_CODES.replayRuleUnknown, target, ruleRowMissing(notation, row.neighbourhood, row.steps_per_gen))
        continue
      }
      if (rule.birth === null || rule.survive === null) {
        run.stats.replay.notReplayed++
        yield run.note(REPLAY_CODES.notReplayable, target, `rule ${quote(notation)} (family ${rule.family}) has no birth and survive masks: level 3 replays B/S and Generations rules`)
        continue
      }
      const result = replayPeriodic(
        {
          geometry: tiling.geometry,
          rule: { neighbourhood: row.neighbourhood as Neighbourhood, birth: rule.birth, survive: rule.survive, states: rule.states, steps_per_gen: row.steps_per_gen as number },
          phases: row.phases as PatternCell[][],
          period: row.period as bigint,
          dx: row.dx as number,
          dy: row.dy as number,
          class: row.class as string,
        },
        { budget: run.replayBudget },
      )
      run.stats.replay[STATUS_COUNT[result.status]]++
      for (const f of result.findings) {
        const detail = `in ${notation}: ${f.detail}`
        yield REPLAY_NOTES.has(f.code) ? run.note(f.code, target, detail) : run.issue(f.code, target, detail)
      }
    }
  }

  // -------------------------------------------------------------------------------------------------
  // searches

  private async *search(search: string, root: string): AsyncGenerator<CheckIssue> {
    const run = this.run
    const rootPath = run.layout.indexPath(root)
    const loader = run.indexLoader()
    const walk = walkSearchIndex(root, loader.load, { search })
    for (;;) {
      const step = await this.step(walk, loader, rootPath)
      if (step === undefined) return
      if ('issue' in step) {
        yield step.issue
        return
      }
      const next = step.event
      if (next.kind === 'index') {
        run.stats.indexes++
        if (next.level === 1 && next.index.schema !== SEARCH_SCHEMA) {
          yield run.issue(CHECK_CODES.schemaUnknown, rootPath, `schema ${quote(next.index.schema)}: this reader knows ${SEARCH_SCHEMA} for a search index, so it cannot read the search`)
          return
        }
        continue
      }
      const listed = next.kind === 'segment' ? next.segment : next.part
      let rel: string
      try {
        rel = next.kind === 'segment' ? run.layout.segmentPath(search, next.segment) : run.layout.scorePath(search, next.score.version, next.part)
      } catch (err) {
        yield run.thrown(err, loader.last() ?? rootPath)
        continue
      }
      if (run.firstVisit(rel)) yield* this.opaquePart(rel, listed)
    }
  }

  /**
   * A search segment or score sidecar. Their columns are not the spec's (docs/pack-format-notes.md), so a
   * checker reads neither rows nor schema: its object, that it is Parquet within the limits, and its rows.
   */
  private async *opaquePart(rel: string, listed: { object: string; bytes: number; rows: number }): AsyncGenerator<CheckIssue> {
    const run = this.run
    if (!(yield* run.dataObject(rel, listed.object, listed.bytes))) return
    const facts = await partFacts(run.file(rel))
    if (!facts.ok) {
      for (const f of facts.findings) yield run.issue(f.code, rel, f.detail)
      return
    }
    run.stats.parts++
    if (!run.at(1)) return
    if (facts.facts.rows !== listed.rows) yield run.issue(CHECK_CODES.partRows, rel, `its index states ${listed.rows} rows, the part has ${facts.facts.rows}`)
    for (const broken of partRuleBreaks(facts.facts.chunks)) yield run.issue(broken.code, rel, broken.detail)
  }
}

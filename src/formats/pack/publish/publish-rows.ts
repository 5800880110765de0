/**
 * What pack-publish makes of the records a user gives (docs/pack-records.md): the rows of each table
 * completed from the facts they state — ids and identity texts, pins, partition columns, the publisher —
 * and references to records of the same publish (`@patterns:3`) replaced by their ids. Every rule of a
 * table's columns stays in table-schemas.ts and identity.ts; this module only fills in what follows from
 * other columns, and refuses a stated value that disagrees with what follows.
 */
import { PipeError } from '../../../core/errors.js'
import { quote } from '../documents/documents.js'
import { antId, antIdentity, identifiedPattern, PictureTooLong, quickstartId, PATTERN_CLASSES, type Cell, type PatternClass } from '../records/identity.js'
import { PENROSE_KD_FAMILY, penroseReference, penroseTilingsRow } from '../geometry/penrose.js'
import { FACT_KEYS_CAP, KEPT_TEXT_CAP, KeptFacts, KeptText } from '../records/kept-facts.js'
import { keepRuleFamily, patternSiteFinding, ruleRowKey } from '../records/row-rules.js'
import { findLatticeTiling, latticeTilingRow, type TilingsRow } from '../geometry/tilings.js'
import { ROW_CODES } from '../tables/table-schemas.js'

export const PUBLISH_CODES = {
  record: 'pack.record-invalid',
  disagrees: 'pack.record-disagrees',
  reference: 'pack.record-reference',
  tiling: 'pack.record-unknown-tiling',
  factsCap: 'pack.facts-too-many',
} as const

export type Row = Record<string, unknown>

/** Where a record came from, for errors: `patterns.jsonl, line 12`. */
export interface RecordPlace { file: string; line: number }

export function recordError(code: string, at: RecordPlace, message: string, field?: string): PipeError {
  return new PipeError(code, message, { exitCode: 2, location: { file: at.file, line: at.line, ...(field ? { field } : {}) } })
}

/** Sets a computed column; a value the record states must be the same. */
function fill(row: Row, column: string, value: unknown, at: RecordPlace): void {
  agree(row[column], column, value, at)
  row[column] = value
}

function agree(stated: unknown, column: string, value: unknown, at: RecordPlace): void {
  if (stated !== undefined && stated !== null && JSON.stringify(stated) !== JSON.stringify(value)) {
    throw recordError(PUBLISH_CODES.disagrees, at, `${column} ${quote(stated)} is not what the record's facts give (${quote(value)})`, column)
  }
}

/**
 * The most rules keys a publish keeps in each of its two maps (notations, rows): 2^18, as many as there are
 * outer-totalistic two-state rules on one neighbourhood (B and S each a subset of 0-8), which an atlas of
 * Life-like rules may well list (an atlas of them all publishes at the same peak RSS as without the caps,
 * 285 MB, measured). A check keeps fewer (FACT_KEYS_CAP) and notes the rest; a publish holds every record to
 * them, so it keeps these.
 */
export const RULE_KEYS_CAP = 1 << 18

/**
 * What a publish keeps of the tilings and rules rows (its records' and its parents'), which later records
 * are held to: at most `tilingKeys` and `ruleKeys` keys in each map, and `chars` characters of all their
 * keys, the budget a check keeps its own under (kept-facts.ts). Its memory stays bounded whatever the
 * records hold (a key may be a 1 MiB string); a real pack has a few dozen tilings and a handful of rules.
 */
export interface FactCaps { tilingKeys: number; ruleKeys: number; chars: number; text: KeptText }

export function factCaps(keys?: number, chars = KEPT_TEXT_CAP): FactCaps {
  return { tilingKeys: keys ?? FACT_KEYS_CAP, ruleKeys: keys ?? RULE_KEYS_CAP, chars, text: new KeptText(chars) }
}

/** A tilings or rules row beyond the caps: its record's refusal, or, for a parent version's row, the publish's. */
function factsCapError(table: 'tilings' | 'rules', caps: FactCaps, at: RecordPlace | undefined): PipeError {
  const message = `${at ? 'this record makes' : 'the parent versions hold'} more ${table} rows than a publish keeps (${table === 'tilings' ? caps.tilingKeys : caps.ruleKeys} keys, ${caps.chars} characters of the tilings' and rules' keys in all) (docs/pack-records.md)`
  return at ? recordError(PUBLISH_CODES.factsCap, at, message) : new PipeError(PUBLISH_CODES.factsCap, message, { exitCode: 2 })
}

/** What a pattern, ant or Quick Start record takes from its tilings row. */
export interface BookTiling {
  pin_key: string
  pin: string
  kind: string
  tiling_group: string
  /** A lattice tiling's tile types, or null. */
  tileTypes: number | null
}

/**
 * The tilings and rules rows the records are held to: of a tiling what records take from it (not its
 * geometry), by pin key and by pin; each rule notation's family, as a verification's rule sees it, and
 * each rules row's key.
 */
export class FactBook {
  private readonly tilings: KeptFacts<BookTiling>
  private readonly kinds: KeptFacts<string>
  private readonly families: KeptFacts<string>
  private readonly rules: KeptFacts<true>

  constructor(private readonly caps: FactCaps) {
    this.tilings = new KeptFacts(caps.tilingKeys, caps.text)
    this.kinds = new KeptFacts(caps.tilingKeys, caps.text)
    this.families = new KeptFacts(caps.ruleKeys, caps.text)
    this.rules = new KeptFacts(caps.ruleKeys, caps.text)
  }

  /** A tilings row, a record's at `at` or a parent's; refused beyond the caps. */
  addTiling(row: TilingsRow, at: RecordPlace | undefined): void {
    const { pin_key: pinKey, pin, kind, tiling_group: group } = row
    const tiling = { pin_key: pinKey, pin, kind, tiling_group: group, tileTypes: row.tile_types ? row.tile_types.length : null }
    if (!this.tilings.keep(pinKey, tiling, pinKey.length + pin.length + kind.length + group.length) || !this.kinds.keep(pin, kind, pin.length + kind.length)) {
      throw factsCapError('tilings', this.caps, at)
    }
  }

  /** A rules row, a record's at `at` or a parent's; refused beyond the caps. */
  addRule(row: Row, at: RecordPlace | undefined): void {
    const [notation, family] = [row['notation'] as string, row['family'] as string]
    const key = ruleRowKey(notation, row['neighbourhood'], row['steps_per_gen'])
    if (!this.families.admit(notation, notation.length + family.length) || !this.rules.keep(key, true, key.length)) throw factsCapError('rules', this.caps, at)
    keepRuleFamily(this.families.entries, notation, family)
  }

  /** The kind of the tiling whose pin this is, if the publish has it. */
  kindOfPin(pin: unknown): string | undefined {
    return typeof pin === 'string' ? this.kinds.get(pin) : undefined
  }

  tiling(pinKey: unknown, at: RecordPlace): BookTiling {
    const tiling = typeof pinKey === 'string' ? this.tilings.get(pinKey) : undefined
    if (!tiling) throw recordError(PUBLISH_CODES.tiling, at, `pin_key ${JSON.stringify(pinKey)} names no row of tilings.jsonl (or of the catalogue it names)`, 'pin_key')
    return tiling
  }

  /**
   * The tile types a cell's k counts: a lattice tiling's; on an aperiodic tiling a cell is (0, 0, k) with k
   * the index of its tile in the pattern's site, so the picture is one row of the site's tiles.
   */
  tileTypes(tiling: BookTiling, phases: readonly (readonly Cell[])[]): number {
    if (tiling.tileTypes !== null) return tiling.tileTypes
    // A loop, not a spread: a phase may hold more cells than a call takes arguments.
    let most = 0
    for (const p of phases) for (const c of p) if (c.k > most) most = c.k
    return 1 + most
  }

  familyOf(notation: unknown): string | undefined {
    return typeof notation === 'string' ? this.families.get(notation) : undefined
  }

  /** Whether a rules row has this notation, neighbourhood and steps per generation (ruleRowKey). */
  hasRule(notation: unknown, neighbourhood: unknown, stepsPerGen: unknown): boolean {
    return this.rules.get(ruleRowKey(notation, neighbourhood, stepsPerGen)) !== undefined
  }
}

/**
 * A tilings record: a catalogue tiling may be named by its `family` alone (square, hex, tri, trihex, oct,
 * penrose-kd) and is filled from the catalogue; any column it states must agree. Returns the row and, for
 * an aperiodic family, the reference patch rows to write as an object (whose hash the caller sets).
 */
export function completeTiling(input: Row, at: RecordPlace): { row: Row; patch?: readonly object[] } {
  const family = input['family']
  if (family === PENROSE_KD_FAMILY) {
    const row = { ...penroseTilingsRow(null) } as Row
    for (const [k, v] of Object.entries(input)) if (k !== 'reference') fill(row, k, v, at)
    return { row, patch: penroseReference().patch.rows }
  }
  const def = typeof family === 'string' ? findLatticeTiling(family) : undefined
  if (!def) {
    if (input['pin'] === undefined) throw recordError(PUBLISH_CODES.tiling, at, `family ${JSON.stringify(family)} is not in the catalogue; state every column of the tilings row`, 'family')
    return { row: { ...input } }
  }
  const row = { ...latticeTilingRow(def) } as Row
  for (const [k, v] of Object.entries(input)) fill(row, k, v, at)
  return { row }
}

const isCell = (c: unknown): c is Cell => {
  if (typeof c !== 'object' || c === null) return false
  const { i, j, k, s } = c as Row
  return Number.isInteger(i) && Number.isInteger(j) && Number.isInteger(k) && Number.isInteger(s)
}

/** Whether `phases` is a non-empty list of lists of cells (loops: a closure a phase showed in profiles). */
function isPhaseList(phases: unknown): phases is Cell[][] {
  if (!Array.isArray(phases) || phases.length === 0) return false
  for (const p of phases) {
    if (!Array.isArray(p)) return false
    for (const c of p) if (!isCell(c)) return false
  }
  return true
}

/**
 * A patterns record states its facts: pin_key, model, neighbourhood, steps_per_gen, class, period, dx, dy,
 * phases (in one frame), family, semantics, and rule / speed / site / gun where they apply. The identity,
 * id, pin, normalised phases, canonical picture, cell counts and partition columns follow. The record is a
 * parsed one that nothing else holds: its phases are normalised in place and become the row's.
 */
export function completePattern(input: Row, book: FactBook, at: RecordPlace): Row {
  const row = input
  const tiling = book.tiling(row['pin_key'], at)
  const phases = row['phases']
  if (!isPhaseList(phases)) {
    throw recordError(PUBLISH_CODES.record, at, 'phases must be a non-empty list of phases, each a list of cells {i, j, k, s}', 'phases')
  }
  const cls = row['class']
  if (!PATTERN_CLASSES.includes(cls as PatternClass)) throw recordError(PUBLISH_CODES.record, at, `class must be one of ${PATTERN_CLASSES.join(', ')}`, 'class')
  for (const c of ['model', 'neighbourhood'] as const) if (typeof row[c] !== 'string') throw recordError(PUBLISH_CODES.record, at, `${c} must be a string`, c)
  for (const c of ['steps_per_gen', 'period', 'dx', 'dy'] as const) if (!Number.isSafeInteger(row[c])) throw recordError(PUBLISH_CODES.record, at, `${c} must be an integer`, c)
  let made
  try {
    made = identifiedPattern({
      pinKey: tiling.pin_key, model: row['model'] as string, neighbourhood: row['neighbourhood'] as 'touch' | 'edge', stepsPerGen: row['steps_per_gen'] as number,
      class: cls as PatternClass, period: row['period'] as number, dx: row['dx'] as number, dy: row['dy'] as number, rule: (row['rule'] as string | null | undefined) ?? null,
      phases, phasesOwned: true, tileTypes: book.tileTypes(tiling, phases),
    }, tiling.pin)
  } catch (err) {
    if (err instanceof PictureTooLong) throw recordError(ROW_CODES.stringTooLarge, at, err.message, 'canonical')
    throw recordError(PUBLISH_CODES.record, at, (err as Error).message)
  }
  let minCells = Infinity
  let maxCells = -Infinity
  for (const p of made.phases) {
    if (p.length < minCells) minCells = p.length
    if (p.length > maxCells) maxCells = p.length
  }
  // One object literal in the columns' order: building rows by adding members one by one was most of
  // this function's time at a million patterns (and a spread in the literal makes V8 do just that).
  const out: Row = {
    id: made.id, identity: made.identity, pin_key: row['pin_key'], pin: tiling.pin, model: row['model'], neighbourhood: row['neighbourhood'],
    steps_per_gen: row['steps_per_gen'], class: cls, period: row['period'], dx: row['dx'], dy: row['dy'], speed: row['speed'] ?? null, cells: made.phases[0]!.length,
    min_cells: minCells, max_cells: maxCells, phases: made.phases, canonical: made.canonical, rule: row['rule'] ?? null, site: row['site'] ?? null, gun: row['gun'] ?? null,
    family: row['family'], semantics: row['semantics'], class_group: cls, tiling_group: tiling.tiling_group,
  }
  const site = patternSiteFinding(tiling.kind, out['site'] !== null)
  if (site) throw recordError(site.code, at, site.detail, 'site')
  // One pass over the record's members: members no column names are kept so that the row check refuses
  // them by name, and the computed columns are read by name only from a record that states one (reading
  // nine absent members cost more than the pass).
  let unknown: Row | undefined
  let statesComputed = false
  for (const k in input) {
    const column = PATTERN_COLUMNS.get(k)
    if (column === undefined) (unknown ??= {})[k] = input[k]
    else if (column === 'computed') statesComputed = true
  }
  if (statesComputed) for (const c of PATTERN_COMPUTED) agree(input[c], c, out[c], at)
  return unknown ? Object.assign(out, unknown) : out
}

/** The columns a pattern's facts give, in the order a record that states them is checked. */
const PATTERN_COMPUTED = ['id', 'identity', 'pin', 'canonical', 'cells', 'min_cells', 'max_cells', 'class_group', 'tiling_group'] as const

/** The columns a patterns record states (the facts above). */
export const PATTERN_STATED = ['pin_key', 'model', 'neighbourhood', 'steps_per_gen', 'class', 'period', 'dx', 'dy', 'speed', 'phases', 'rule', 'site', 'gun', 'family', 'semantics'] as const

/** Each column of a patterns row: stated by the record, or computed from its facts (one lookup a member). */
const PATTERN_COLUMNS: ReadonlyMap<string, 'stated' | 'computed'> = new Map([
  ...PATTERN_STATED.map((c) => [c, 'stated'] as const),
  ...PATTERN_COMPUTED.map((c) => [c, 'computed'] as const),
])

/** An ants record: its id, identity, pin and partition column follow from its rule, kind, states, colors, start and tiling. */
export function completeAnt(input: Row, book: FactBook, at: RecordPlace): Row {
  const row: Row = { ...input }
  const tiling = book.tiling(row['pin_key'], at)
  for (const c of ['rule', 'kind', 'start'] as const) if (typeof row[c] !== 'string') throw recordError(PUBLISH_CODES.record, at, `${c} must be a string`, c)
  for (const c of ['states', 'colors'] as const) if (!Number.isSafeInteger(row[c])) throw recordError(PUBLISH_CODES.record, at, `${c} must be an integer`, c)
  const identity = antIdentity({ pinKey: tiling.pin_key, rule: row['rule'] as string, kind: row['kind'] as string, states: row['states'] as number, colors: row['colors'] as number, start: row['start'] as string })
  fill(row, 'pin', tiling.pin, at)
  fill(row, 'identity', identity, at)
  fill(row, 'id', antId(identity, tiling.pin), at)
  fill(row, 'tiling_group', tiling.tiling_group, at)
  return row
}

/** A quickstart record: its id (the hash of its scene and pin), pin and partition column follow. */
export function completeQuickstart(input: Row, book: FactBook, at: RecordPlace): Row {
  const row: Row = { ...input }
  const tiling = book.tiling(row['pin_key'], at)
  if (typeof row['scene'] !== 'string') throw recordError(PUBLISH_CODES.record, at, 'scene must be a string (the scene as JSON)', 'scene')
  fill(row, 'pin', tiling.pin, at)
  fill(row, 'id', quickstartId(row['scene'] as string, tiling.pin), at)
  fill(row, 'tiling_group', tiling.tiling_group, at)
  return row
}

/** The columns that name a record (as a bare id) and those that name a target (`pattern:<id>`). */
const ID_COLUMNS: Readonly<Record<string, readonly string[]>> = { verifications: ['pattern_id'], sightings: ['pattern_id'] }
const TARGET_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  provenance: ['target'], annotations: ['target'], media: ['target'], ratings: ['target'], aliases: ['target'], quickstart: ['source'],
}
const TARGET_KIND: Readonly<Record<string, string>> = { patterns: 'pattern', ants: 'ant', quickstart: 'quickstart' }
const REFERENCE = /^@(patterns|ants|quickstart):(0|[1-9][0-9]{0,9})$/

/** A record's place in its table's file, and what it became: what `@patterns:3` resolves. */
export type IdLookup = (table: string, line: number) => { id: string; pin: string } | undefined

/**
 * Replaces references to records of the same publish: a column that names a pattern by id may say
 * `@patterns:N` (the record on line N of patterns.jsonl, counted from 1), and a target column
 * `@patterns:N`, `@ants:N` or `@quickstart:N`. Returns the pin of the record a row names, if any, so that
 * rows that carry a pin can default to it.
 */
export function resolveReferences(table: string, row: Row, lookup: IdLookup, at: RecordPlace): string | undefined {
  let pin: string | undefined
  const resolve = (column: string, asTarget: boolean) => {
    const v = row[column]
    if (typeof v !== 'string') return
    const m = REFERENCE.exec(v)
    if (!m) return
    const found = lookup(m[1]!, Number(m[2]))
    if (!found) throw recordError(PUBLISH_CODES.reference, at, `${v}: ${m[1]}.jsonl has no record on line ${m[2]}`, column)
    if (!asTarget && m[1] !== 'patterns') throw recordError(PUBLISH_CODES.reference, at, `${column} names a pattern, not ${v}`, column)
    row[column] = asTarget ? `${TARGET_KIND[m[1]!]}:${found.id}` : found.id
    pin ??= found.pin
  }
  for (const c of ID_COLUMNS[table] ?? []) resolve(c, false)
  for (const c of TARGET_COLUMNS[table] ?? []) resolve(c, true)
  return pin
}

/** Event columns a publish fills when the record leaves them out. */
export interface Defaults {
  /** The publisher's id (the fingerprint of the first key of its chain). */
  publisher: string
  engineVersion: string
  /** This version's ref seq: an annotation's `rev`. */
  seq: number
}

const DEFAULTED: Readonly<Record<string, readonly ('publisher' | 'engine_version' | 'pin' | 'rev')[]>> = {
  verifications: ['publisher', 'engine_version', 'pin'],
  sightings: ['publisher'],
  provenance: ['publisher', 'engine_version', 'pin'],
  annotations: ['publisher', 'rev'],
}

export function applyDefaults(table: string, row: Row, d: Defaults, pin: string | undefined): void {
  for (const c of DEFAULTED[table] ?? []) {
    if (row[c] !== undefined && row[c] !== null) continue
    if (c === 'publisher') row[c] = d.publisher
    else if (c === 'engine_version') row[c] = d.engineVersion
    else if (c === 'rev') row[c] = d.seq
    else if (pin !== undefined) row[c] = pin
  }
}

/**
 * Local paths never reach a pack ("Personal data"): an absolute path in any text a publish writes
 * (`/x/y`, `~/`, `C:\`, `\\server\`, `file://`) is replaced by its file name. A path starts a string or
 * follows a space, quote, `=`, `(`, `[` or `,` (so the `/` of `B3/S23` or `c/4` is no path). A JSON cell is
 * scrubbed as its text, where a UNC path's backslashes are doubled (`\\\\server\\share`), so those are
 * matched too (a canonical JSON cell spells `/` and `~` only as themselves).
 */
/** A character a path may follow. */
const PATH_BEFORE = /[\s"'=([,]/
const LOCAL_PATH = new RegExp(String.raw`(^|${PATH_BEFORE.source})(?:file:\/\/[^\s"']*|~\/[^\s"']*|[A-Za-z]:\\[^\s"']*|(?:\\\\){1,2}[^\s"'\\]+\\[^\s"']*|\/[^\s"'/]+\/[^\s"']*)`, 'g')

export function withoutLocalPaths(text: string): string {
  return text.replace(LOCAL_PATH, (whole, before: string) => {
    const path = whole.slice(before.length).replace(/^file:\/\//, '').replace(/[\\/]+$/, '')
    const name = path.split(/[\\/]/).pop() ?? ''
    return before + name
  })
}

/**
 * Whether a text may hold a local path: it holds a `\\` (a drive or UNC path, or in JSON text an escape
 * that could spell anything), a `~`, `file:`, or a `/` that starts it or follows a character a path
 * follows. Text without one is left alone without a search: nearly every record holds a rule (B3/S23) or a
 * speed (c/4), whose `/` is no path, and walking every member of every record was a tenth of the main
 * thread's time at a million patterns.
 */
export function mayHoldLocalPath(text: string): boolean {
  if (text.includes('\\') || text.includes('~') || text.includes('file:')) return true
  for (let i = text.indexOf('/'); i >= 0; i = text.indexOf('/', i + 1)) if (i === 0 || PATH_BEFORE.test(text[i - 1]!)) return true
  return false
}

/** A record with local paths replaced, given the JSON text it was parsed from: a text that may hold none is not walked. */
export function scrubRecordPaths(record: Row, text: string): Row {
  return mayHoldLocalPath(text) ? scrubLocalPaths(record) : record
}

/** Every string in a value with local paths replaced, in place (structs and lists walked); returns the value. */
export function scrubLocalPaths<T>(v: T): T {
  if (typeof v === 'string') return (mayHoldLocalPath(v) ? withoutLocalPaths(v) : v) as T
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i]
      if (typeof x === 'string' || (x !== null && typeof x === 'object')) v[i] = scrubLocalPaths(x)
    }
  } else if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>
    for (const k in o) {
      const x = o[k]
      if (typeof x === 'string' || (x !== null && typeof x === 'object')) o[k] = scrubLocalPaths(x)
    }
  }
  return v
}

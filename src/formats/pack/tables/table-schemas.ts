/**
 * The column layouts of pack format 1.0's Parquet tables ("Tables", "Reference patches", "Search runs"),
 * written in the spec's own notation (`name: type`, `?` for nullable) and parsed once at load, plus the
 * row rules every writer and reader shares: validation, the sort order and the text a row sorts by.
 *
 * Row model (one JS object per row, one member per column):
 * - string: a well-formed JS string (no lone surrogates), at most 1 MiB as UTF-8. A time column is a
 *   string holding a pack time (RFC 3339, UTC, Z, whole seconds).
 * - int32: a number, an integer in int32's range.
 * - int64: written as a bigint or a safe-integer number; read back always as a bigint.
 * - bool: a boolean. float64: a finite number (-0 is kept; NaN and ±Infinity have no RFC 8785 text).
 * - list<T>: an array (empty allowed) of T; its elements are never null.
 * - struct<...>: a plain object with one member per field.
 * - a nullable column or field is null when absent; writing, a missing member or undefined counts as null.
 *   Readers return every column, null included. A row member no column of the schema names is refused;
 *   extra members of nested structs are ignored.
 *
 * A row's text (its RFC 8785 rendering, which breaks sort ties and measures row groups) is the JSON object of
 * every column of its schema, null ones included, with members sorted by name as RFC 8785 sorts them,
 * int32 and int64 as JSON integers, float64 as ECMAScript writes numbers, lists as arrays and structs as
 * objects rendered the same way.
 */
import { isPackTime } from '../keys/key-statements.js'

/** "A partition value is 1 to 64 lower-case letters, digits, - and _, starting with a letter or digit". */
export function isPartitionValue(s: string): boolean {
  return PARTITION_VALUE.test(s)
}
const PARTITION_VALUE = /^[a-z0-9][a-z0-9_-]{0,63}$/

// ---------------------------------------------------------------------------------------------------
// Types and schemas
// ---------------------------------------------------------------------------------------------------

/** `time` is a string column that holds pack times: a string in Parquet, checked as a time. */
export type ScalarKind = 'string' | 'time' | 'int32' | 'int64' | 'bool' | 'float64'

export type PackType =
  | { readonly kind: ScalarKind }
  | { readonly kind: 'list'; readonly element: PackType }
  | { readonly kind: 'struct'; readonly fields: readonly PackField[] }

export interface PackField {
  readonly name: string
  readonly type: PackType
  readonly nullable: boolean
}

/**
 * fact and event tables as "Fact and event tables" defines them; object: a Parquet object outside the table
 * indexes (a reference patch, a search's run segment or score sidecar), checked by its hash and read whole.
 */
export type TableKind = 'fact' | 'event' | 'object'

export interface TableSchema {
  /** The table name as the spec writes it (`reference-patch`, `explore-runs`, `explore-scores` for objects). */
  readonly name: string
  /** `jetcarp-<name> 1`. */
  readonly schemaId: string
  readonly kind: TableKind
  /** Top-level required scalar columns, most significant first. */
  readonly sortColumns: readonly string[]
  /** Top-level required string columns a part holds one value of; empty for an unpartitioned table. */
  readonly partitionColumns: readonly string[]
  readonly columns: readonly PackField[]
  /** True when the spec gives no columns and these are pipe's (a checker treats foreign ones as opaque). */
  readonly ourChoice: boolean
  /**
   * True for a fact table keyed by one id column of content ids (identity.ts: 32 hex digits of a SHA-256),
   * whose own 128 bits can stand for the key where a hash of it would (new-rows.ts).
   */
  readonly contentIdKey?: boolean
}

const SCALARS: readonly string[] = ['string', 'time', 'int32', 'int64', 'bool', 'float64']

/**
 * Parses the spec's column notation: `a: string, b: list<struct<x: int32, y: float64?>>?`. Trusted text
 * (this module's own), so it is a plain recursive descent that throws on a mistake at load time.
 */
function parseFields(text: string): PackField[] {
  const tokens = text.match(/[a-z_][a-z0-9_]*|[<>:,?]|\S/g) ?? []
  let at = 0
  const peek = (): string | undefined => tokens[at]
  const take = (want?: string): string => {
    const t = tokens[at++]
    if (t === undefined || (want !== undefined && t !== want)) throw new Error(`schema notation: expected ${want ?? 'a token'} at token ${at} of ${JSON.stringify(text)}`)
    return t
  }
  const type = (): PackType => {
    const name = take()
    if (name === 'list') {
      take('<')
      const element = type()
      take('>')
      return { kind: 'list', element }
    }
    if (name === 'struct') {
      take('<')
      const fields = fieldList()
      take('>')
      return { kind: 'struct', fields }
    }
    if (!SCALARS.includes(name)) throw new Error(`schema notation: unknown type ${name}`)
    return { kind: name as ScalarKind }
  }
  const fieldList = (): PackField[] => {
    const fields: PackField[] = []
    for (;;) {
      const name = take()
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`schema notation: bad field name ${name}`)
      take(':')
      const t = type()
      const nullable = peek() === '?'
      if (nullable) take('?')
      if (fields.some((f) => f.name === name)) throw new Error(`schema notation: ${name} twice`)
      fields.push({ name, type: t, nullable })
      if (peek() !== ',') return fields
      take(',')
    }
  }
  const fields = fieldList()
  if (at !== tokens.length) throw new Error(`schema notation: trailing ${tokens[at]} in ${JSON.stringify(text)}`)
  return fields
}

interface TableDefinition {
  kind: TableKind
  sort: string[]
  partition?: string[]
  columns: string
  ourChoice?: boolean
  contentIdKey?: boolean
}

function defineTable(name: string, def: TableDefinition): TableSchema {
  const columns = parseFields(def.columns)
  const scalarColumn = (col: string, what: string): PackField => {
    const f = columns.find((c) => c.name === col)
    if (!f || f.nullable || !SCALARS.includes(f.type.kind)) throw new Error(`${name}: ${what} column ${col} must be a required scalar column`)
    return f
  }
  for (const col of def.sort) scalarColumn(col, 'sort')
  for (const col of def.partition ?? []) if (scalarColumn(col, 'partition').type.kind !== 'string') throw new Error(`${name}: partition column ${col} must be a string`)
  if (def.contentIdKey && (def.kind !== 'fact' || def.sort.join() !== 'id')) throw new Error(`${name}: a content-id key is a fact table's one sort column, id`)
  return Object.freeze({
    name,
    schemaId: `jetcarp-${name} 1`,
    kind: def.kind,
    sortColumns: Object.freeze(def.sort),
    partitionColumns: Object.freeze(def.partition ?? []),
    columns: Object.freeze(columns),
    ourChoice: def.ourChoice ?? false,
    ...(def.contentIdKey ? { contentIdKey: true } : {}),
  })
}

const NEIGHBOUR_OFFSETS = 'list<list<struct<di: int32, dj: int32, k: int32>>>?'

/** The typed site, exactly as the spec's block gives it (its comments dropped). */
const SITE = `struct<
  patch: struct<family: string, params: string?, level: int32>,
  anchor: int32, anchor_shape: int32, anchor_point: list<float64>,
  radius: int32,
  nb: string?,
  tiles: list<struct<shape: int32, dist: int32,
                     point: list<float64>, corners: list<list<float64>>>>,
  graph: struct<
    rule: string, degrees: bool, chirality: bool,
    cells: list<struct<shape: int32, flip: bool, degree: int32,
                       states: list<int32>,
                       neighbours: list<int32>>>,
    around: list<struct<tiles: list<int32>, count: int32>>>?>`

/** The fourteen tables of "Tables", by name. */
export const PACK_TABLES = Object.freeze({
  tilings: defineTable('tilings', {
    kind: 'fact',
    sort: ['pin_key'],
    columns: `pin_key: string, pin: string, polygon_hash: string, neighbour_hash: string, name: string, kind: string,
      family: string, params: string?, edges: string?, tiling_group: string, a1: list<float64>?, a2: list<float64>?,
      tile_types: list<struct<shape: int32, corners: list<list<float64>>>>?, edge: ${NEIGHBOUR_OFFSETS}, touch: ${NEIGHBOUR_OFFSETS},
      reference_level: int32?, reference: string?, reference_tiles: int32?`,
  }),
  rules: defineTable('rules', {
    kind: 'fact',
    sort: ['notation', 'neighbourhood', 'steps_per_gen'],
    columns: `notation: string, neighbourhood: string, steps_per_gen: int32, family: string, semantics: string, states: int32,
      birth: int64?, survive: int64?`,
  }),
  patterns: defineTable('patterns', {
    kind: 'fact',
    sort: ['id'],
    contentIdKey: true,
    partition: ['class_group', 'tiling_group'],
    columns: `id: string, identity: string, pin_key: string, pin: string, model: string, neighbourhood: string, steps_per_gen: int32,
      class: string, period: int64, dx: int32, dy: int32, speed: string?, cells: int32, min_cells: int32, max_cells: int32,
      phases: list<list<struct<i: int32, j: int32, k: int32, s: int32>>>, canonical: string, rule: string?, site: ${SITE}?,
      gun: string?, family: string, semantics: string, class_group: string, tiling_group: string`,
  }),
  verifications: defineTable('verifications', {
    kind: 'event',
    sort: ['pattern_id', 'rule', 'publisher', 'date'],
    columns: `pattern_id: string, rule: string, publisher: string, main: bool, periods: int64, generations: int64, field: string,
      sites: int32?, engine_version: string, pin: string, semantics: string, date: time, range: string?, mover: string?`,
  }),
  sightings: defineTable('sightings', {
    kind: 'event',
    sort: ['pattern_id', 'rule', 'publisher', 'source'],
    columns: `pattern_id: string, rule: string, publisher: string, source: string, source_kind: string?, count: int64, soups: int64,
      first_seen: time, last_seen: time`,
  }),
  provenance: defineTable('provenance', {
    kind: 'event',
    sort: ['target', 'publisher', 'seq'],
    columns: `target: string, publisher: string, seq: int32, kind: string, finder: string?, orcid: string?, search_kind: string?,
      search: string?, machine: string?, engine_version: string, pin: string, date: time, source: string?, pack: string?, run: string?`,
  }),
  annotations: defineTable('annotations', {
    kind: 'event',
    sort: ['target', 'publisher', 'field', 'date'],
    columns: 'target: string, publisher: string, field: string, value: string, score_model: string?, date: time, rev: int64',
  }),
  ants: defineTable('ants', {
    kind: 'fact',
    sort: ['id'],
    partition: ['tiling_group'],
    columns: `id: string, identity: string, pin_key: string, pin: string, rule: string, kind: string, family: string, semantics: string,
      states: int32, colors: int32, start: string, outcome: string, period: int64?, dx: int32?, dy: int32?, onset: int64?,
      speed: float64?, steps: int64, cells: int64, run: string, tiling_group: string`,
  }),
  quickstart: defineTable('quickstart', {
    kind: 'fact',
    sort: ['id'],
    partition: ['tiling_group'],
    columns: `id: string, title: string, description: string, source: string?, scene: string, scene_format: string, rule: string,
      rule_family: string, semantics: string, behaviour: string?, pin_key: string, pin: string, tiling_group: string`,
  }),
  media: defineTable('media', {
    kind: 'event',
    sort: ['target', 'kind', 'from_seed'],
    columns: `target: string, kind: string, from_seed: bool, object: string, media_type: string, width: int32, height: int32,
      frames: int32, bytes: int64, render_key: string, render: string`,
  }),
  aliases: defineTable('aliases', {
    kind: 'fact',
    sort: ['old_id'],
    columns: 'old_id: string, target: string, reason: string, date: time',
  }),
  ratings: defineTable('ratings', {
    kind: 'event',
    sort: ['rater', 'target', 'date'],
    columns: 'rater: string, target: string, scale: string, verdict: string, note: string?, round: string?, date: time',
  }),
  raters: defineTable('raters', {
    kind: 'event',
    sort: ['rater'],
    columns: `rater: string, consent_date: time, consent_scope: string, display_name: string?, orcid: string?,
      members: list<string>?, notes: bool`,
  }),
  score_models: defineTable('score_models', {
    kind: 'event',
    sort: ['model', 'version'],
    columns: `model: string, version: string, kind: string, features: list<string>, weights: list<float64>, intercept: float64,
      fitted_on: string, rater: string?, metrics: string`,
  }),
})

export type PackTableName = keyof typeof PACK_TABLES

/** An aperiodic family's reference patch (jetcarp-reference-patch 1), sorted by tile. */
export const REFERENCE_PATCH_SCHEMA = defineTable('reference-patch', {
  kind: 'object',
  sort: ['tile'],
  columns: 'tile: int32, shape: int32, corners: list<list<float64>>, edge: list<int32>, touch: list<int32>, open: bool',
})

/**
 * An explore search's run segment (jetcarp-explore-runs 1). The spec gives no columns: these are pipe's,
 * one row per run in run id order, the run's settings and result as RFC 8785 JSON in `run`.
 */
export const EXPLORE_RUNS_SCHEMA = defineTable('explore-runs', {
  kind: 'object',
  sort: ['run_id'],
  ourChoice: true,
  columns: `run_id: int64, parent: int64?, identity: string?, pattern_id: string?, outcome: string, generations: int64,
    population: int64, score: float64?, run: string`,
})

/** An explore search's score sidecar (jetcarp-explore-scores 1): pipe's columns, as for the run segments. */
export const EXPLORE_SCORES_SCHEMA = defineTable('explore-scores', {
  kind: 'object',
  sort: ['run_id'],
  ourChoice: true,
  columns: 'run_id: int64, score: float64, model: string',
})

/** Every schema this module defines, by schema id. */
export const SCHEMAS_BY_ID: ReadonlyMap<string, TableSchema> = new Map(
  [...Object.values(PACK_TABLES), REFERENCE_PATCH_SCHEMA, EXPLORE_RUNS_SCHEMA, EXPLORE_SCORES_SCHEMA].map((s) => [s.schemaId, s]),
)

// ---------------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------------

/**
 * Stable codes of the writer's errors (row findings keep their own `pack.table-*` codes); a checker reports
 * `unsorted` too. Here rather than in parquet-write.ts, so that checking does not load the writer.
 */
/** Two different rows of a fact table with one key ("a key's rows are the same wherever they appear"): the publisher's refusal and the checker's finding. */
export const FACT_CONFLICT = 'pack.fact-conflict'

export const WRITE_CODES = {
  /** A row that sorts before the row written before it. */
  unsorted: 'pack.parquet-rows-unsorted',
  /** write() or finish() after finish(), abort() or a failed write. */
  state: 'pack.parquet-writer-state',
  /** The encoding thread could not write a part (its directory, the disk). */
  io: 'pack.parquet-write-failed',
} as const

/** Stable codes of row findings. */
export const ROW_CODES = {
  /** A value of the wrong type, out of its integer range, not finite, null where required, or unknown. */
  invalid: 'pack.table-row-invalid',
  /** A string cell above 1 MiB of UTF-8 ("Limits": string cell). */
  stringTooLarge: 'pack.table-string-too-large',
  /** A string with a lone surrogate: it has no UTF-8 form. */
  notUtf8: 'pack.table-string-not-utf8',
  /** A time column whose value is not a pack time. */
  time: 'pack.table-time-invalid',
  /** A partition value outside "1 to 64 lower-case letters, digits, - and _". */
  partitionValue: 'pack.partition-value-invalid',
  /** A row whose partition column differs from its part's partition, or a partition with other keys. */
  partitionMismatch: 'pack.partition-mismatch',
} as const

export interface RowFinding {
  code: (typeof ROW_CODES)[keyof typeof ROW_CODES]
  table: string
  /** The row's index in its batch or part; null for a finding about the partition itself. */
  row: number | null
  /** The column, with a path into nested values (`site.tiles[3].corners[0][1]`); '' for the whole row. */
  column: string
  detail: string
}

export const MAX_STRING_CELL_BYTES = 1024 * 1024
const INT32_MIN = -(2 ** 31)
const INT32_MAX = 2 ** 31 - 1
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

interface Problem {
  code: RowFinding['code']
  column: string
  detail: string
}

const show = (v: unknown): string => {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)
  if (typeof v === 'bigint') return `${v}n`
  if (Array.isArray(v)) return 'an array'
  if (v === null) return 'null'
  return typeof v === 'object' ? 'an object' : String(v)
}

/**
 * A well-formed string's RFC 8785 text length in UTF-8: its quotes, its UTF-8 bytes, and one more byte for
 * each character RFC 8785 (as JSON.stringify) writes as a short escape (`\"`, `\\`, `\b` `\t` `\n` `\f` `\r`),
 * five more for another control character (`\u00XX`). One pass by hand: an identity's line breaks made the
 * byte count, an escape scan and JSON.stringify three passes and a copy, a twentieth of the main thread.
 */
export function jsonStringLength(s: string): number {
  const units = s.length
  let n = units + 2
  for (let i = 0; i < units; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) {
      if (c < 0x20) n += c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 1 : 5
      else if (c === 0x22 || c === 0x5c) n += 1
    } else if (c < 0x800) n += 1
    else if (c >= 0xd800 && c <= 0xdbff) {
      // A surrogate pair: two units, four bytes.
      i++
      n += 2
    } else n += 2
  }
  return n
}

function integerTextLength(v: number): number {
  if (v === 0) return 1
  let n = v < 0 ? 2 : 1
  for (let a = Math.abs(v); a >= 10; a = Math.floor(a / 10)) n++
  return n
}

/**
 * A string cell whose maker knows its UTF-8 bytes and RFC 8785 text length (an identity it has just built,
 * identity.ts), so that the row check need not scan it again: a third of the check's time at a million
 * patterns was that scan. One entry, for the row made next; the text must be well-formed (it is when
 * decoded from UTF-8).
 */
const toldCell = { text: '', utf8Bytes: 0, jsonLength: 2 }

export function tellStringCell(text: string, utf8Bytes: number, jsonLength: number): void {
  toldCell.text = text
  toldCell.utf8Bytes = utf8Bytes
  toldCell.jsonLength = jsonLength
}

/** What the generated checks call: kept out of the generated text so it stays short. */
const CHECK_HELPERS = {
  fail(problems: Problem[], code: RowFinding['code'], column: string, detail: string): void {
    problems.push({ code, column, detail })
  },
  /** A string's check; a problem is recorded without its column, which the caller adds (see `named`). */
  string(v: unknown, problems: Problem[], time: boolean): number {
    if (typeof v !== 'string') return this.expected(problems, '', 'a string', v)
    if (v === toldCell.text && !time && toldCell.utf8Bytes <= MAX_STRING_CELL_BYTES) return toldCell.jsonLength
    if (v.length * 3 > MAX_STRING_CELL_BYTES && Buffer.byteLength(v, 'utf8') > MAX_STRING_CELL_BYTES) {
      this.fail(problems, ROW_CODES.stringTooLarge, '', `${Buffer.byteLength(v, 'utf8')} bytes of UTF-8, above 1 MiB`)
      return 0
    }
    if (!v.isWellFormed()) {
      this.fail(problems, ROW_CODES.notUtf8, '', 'holds a lone surrogate, which has no UTF-8 form')
      return 0
    }
    if (time && !isPackTime(v)) this.fail(problems, ROW_CODES.time, '', `${show(v)} is not a pack time (RFC 3339, UTC, Z, whole seconds)`)
    return jsonStringLength(v)
  },
  /** As `string`, for an int64. */
  int64(v: unknown, problems: Problem[]): number {
    if (typeof v === 'number' && Number.isSafeInteger(v)) return integerTextLength(v)
    if (typeof v === 'bigint' && v >= INT64_MIN && v <= INT64_MAX) return String(v).length
    return this.expected(problems, '', 'an int64 (bigint, or a safe-integer number)', v)
  },
  /** Keeps a valid string's text length for its column's next rows, while that pays (see StringMemo). */
  remember(m: StringMemo, v: string, length: number): void {
    if (!m.on) return
    m.misses++
    if (v.length <= MEMO_STRING_UNITS && m.seen.size < MEMO_STRINGS) m.seen.set(v, length)
    else if (m.misses >= MEMO_STRINGS && m.hits < m.misses) {
      m.on = false
      m.seen.clear()
    }
  },
  /** Gives the problems recorded since `from` their column. */
  named(problems: Problem[], from: number, column: string): void {
    for (let i = from; i < problems.length; i++) problems[i]!.column = column
  },
  float64(v: number): number {
    return Number.isSafeInteger(v) ? integerTextLength(v) : JSON.stringify(v).length
  },
  expected(problems: Problem[], column: string, what: string, v: unknown): number {
    this.fail(problems, ROW_CODES.invalid, column, `expected ${what}, got ${show(v)}`)
    return 0
  },
  integerTextLength,
}
type CheckHelpers = typeof CHECK_HELPERS

/**
 * A string column's valid values and their text lengths. Most string columns repeat a few values (a pin, a
 * family, a partition value), and checking a string (its UTF-8 length, surrogates, escapes) was the largest
 * cost of validating rows; a column whose values do not repeat (ids, identities) turns its memo off, and
 * lets go of what it held, once it has missed MEMO_STRINGS times and had fewer hits than misses. Only
 * strings of at most MEMO_STRING_UNITS are kept: a memo held the first 4,096 identities and pictures of a
 * publish for good, and a picture, a slice of its identity, held the identity (some 110 MB of a publish of
 * patterns of 5,000 cells; a string cell may be 1 MiB).
 */
interface StringMemo {
  on: boolean
  hits: number
  misses: number
  seen: Map<string, number>
}
const MEMO_STRINGS = 4096
const MEMO_STRING_UNITS = 256

/**
 * Generates the check of one value held in variable `v`, adding the length of its RFC 8785 text to `n`;
 * `column` is a JS expression giving its column path, evaluated only when there is a problem. Generated
 * code (one function per schema, with plain property reads and no calls per value for numbers) validates
 * rows several times faster than a tree of closures, whose keyed reads and calls dominated publishing.
 */
/** Names for generated variables, and numbers for string columns' memos. */
interface Generator {
  fresh(): string
  memos: number
}

function checkSource(type: PackType, v: string, column: string, gen: Generator): string {
  const fresh = (): string => gen.fresh()
  const expected = (what: string): string => `H.expected(P, ${column}, ${JSON.stringify(what)}, ${v})`
  switch (type.kind) {
    case 'string':
    case 'time':
      // The column's name is made only for a problem: in a list it is a new string per element.
      return (
        `{ const m = M[${gen.memos++}]; let k = m.on ? m.seen.get(${v}) : undefined;\n` +
        `  if (k !== undefined) m.hits++;\n` +
        `  else { const at = P.length; k = H.string(${v}, P, ${type.kind === 'time'}); if (P.length !== at) H.named(P, at, ${column}); else H.remember(m, ${v}, k); }\n` +
        `  n += k; }\n`
      )
    case 'int32':
      return `if (typeof ${v} === 'number' && Number.isInteger(${v}) && ${v} >= ${INT32_MIN} && ${v} <= ${INT32_MAX}) n += H.integerTextLength(${v}); else ${expected('an int32')};\n`
    case 'int64':
      return `{ const at = P.length; n += H.int64(${v}, P); if (P.length !== at) H.named(P, at, ${column}); }\n`
    case 'bool':
      return `if (${v} === true) n += 4; else if (${v} === false) n += 5; else ${expected('a boolean')};\n`
    case 'float64':
      return `if (typeof ${v} === 'number' && Number.isFinite(${v})) n += H.float64(${v}); else ${expected('a finite float64')};\n`
    case 'list': {
      const i = fresh()
      const e = fresh()
      const at = `${column} + '[' + ${i} + ']'`
      // '[' ']' and a ',' between elements.
      return (
        `if (Array.isArray(${v})) {\n  n += ${v}.length > 0 ? 1 + ${v}.length : 2;\n` +
        `  for (let ${i} = 0; ${i} < ${v}.length; ${i}++) {\n    const ${e} = ${v}[${i}];\n` +
        `    if (${e} === null || ${e} === undefined) H.fail(P, ${JSON.stringify(ROW_CODES.invalid)}, ${at}, 'list elements are never null');\n` +
        `    else {\n${checkSource(type.element, e, at, gen)}}\n  }\n} else ${expected('a list')};\n`
      )
    }
    case 'struct':
      return `if (typeof ${v} === 'object' && ${v} !== null && !Array.isArray(${v})) {\n${membersSource(type.fields, v, column, gen)}} else ${expected('a struct')};\n`
  }
}

/** The members of a struct (or a row) in variable `v`: each checked, null where nullable. */
function membersSource(fields: readonly PackField[], v: string, column: string | null, gen: Generator): string {
  // '{' '}' and, per member, '"name":' and a ',' between members.
  let src = `n += ${2 + Math.max(0, fields.length - 1) + fields.reduce((n, f) => n + f.name.length + 3, 0)};\n`
  for (const f of fields) {
    const x = gen.fresh()
    const at = column === null ? JSON.stringify(f.name) : `${column} + ${JSON.stringify(`.${f.name}`)}`
    src += `const ${x} = ${v}.${f.name};\nif (${x} === null || ${x} === undefined) `
    src += f.nullable ? 'n += 4;\n' : `H.fail(P, ${JSON.stringify(ROW_CODES.invalid)}, ${at}, 'required, got null');\n`
    src += `else {\n${checkSource(f.type, x, at, gen)}}\n`
  }
  return src
}

/** The schema's columns: in order (`names`), and as a set. */
interface KnownColumns {
  names: readonly string[]
  set: ReadonlySet<string>
}

type RowCheck = (row: unknown, problems: Problem[], helpers: CheckHelpers, known: KnownColumns, memos: StringMemo[]) => number

/**
 * The row's check, and how many string memos it uses. Members a schema does not define are refused on rows
 * only: a misspelt nullable column would otherwise vanish silently, while a nested struct's extra members are
 * ignored, as readers ignore them. Column names come from this module's notation, which admits identifiers
 * only, so they are safe in code.
 */
function compileRowCheck(schema: TableSchema): { check: RowCheck; memos: number } {
  let k = 0
  const gen: Generator = { fresh: () => `v${k++}`, memos: 0 }
  const body =
    `let n = 0;\nif (typeof row !== 'object' || row === null || Array.isArray(row)) { H.expected(P, '', 'a row object', row); return 0 }\n` +
    membersSource(schema.columns, 'row', null, gen) +
    // A row made in the columns' order (a completed pattern's) has each key where the schema has it: that
    // comparison is cheaper than the set's look-up, which was a twentieth of the main thread's time.
    `let c = 0;\nfor (const key in row) { if (key !== known.names[c] && !known.set.has(key)) H.fail(P, ${JSON.stringify(ROW_CODES.invalid)}, key, 'not a column of this schema'); c++ }\nreturn n;\n`
  return { check: new Function('row', 'P', 'H', 'known', 'M', body) as RowCheck, memos: gen.memos }
}

/**
 * Checks one row and returns the byte length of its RFC 8785 text; findings are appended to `out`. With
 * `partition`, the row's partition columns must equal it (check the partition itself with `partitionFindings`).
 */
export type RowValidator = (row: unknown, index: number, out: RowFinding[]) => number

export function rowValidator(schema: TableSchema, partition?: Readonly<Record<string, string>>): RowValidator {
  const { check, memos: count } = compileRowCheck(schema)
  const memos: StringMemo[] = Array.from({ length: count }, () => ({ on: true, hits: 0, misses: 0, seen: new Map() }))
  const names = schema.columns.map((c) => c.name)
  const known: KnownColumns = { names, set: new Set(names) }
  const problems: Problem[] = []
  return (row, index, out) => {
    problems.length = 0
    const bytes = check(row, problems, CHECK_HELPERS, known, memos)
    if (problems.length === 0 && schema.partitionColumns.length > 0) {
      const r = row as Record<string, string>
      for (const col of schema.partitionColumns) {
        const v = r[col]!
        if (!isPartitionValue(v)) CHECK_HELPERS.fail(problems, ROW_CODES.partitionValue, col, `${show(v)} is not a partition value`)
        else if (partition && partition[col] !== v) CHECK_HELPERS.fail(problems, ROW_CODES.partitionMismatch, col, `${show(v)} in a part of partition ${col}=${show(partition[col])}`)
      }
    }
    for (const p of problems) out.push({ ...p, table: schema.name, row: index })
    return bytes
  }
}

/** The findings of one row (see `rowValidator`, which is cheaper for many rows). */
export function validateRow(schema: TableSchema, row: unknown, index: number, partition?: Readonly<Record<string, string>>): RowFinding[] {
  const out: RowFinding[] = []
  rowValidator(schema, partition)(row, index, out)
  return out
}

/** What is wrong with a part's partition object: its keys must be the table's partition columns, its values valid. */
export function partitionFindings(schema: TableSchema, partition: Readonly<Record<string, unknown>>): RowFinding[] {
  const out: RowFinding[] = []
  const add = (code: RowFinding['code'], column: string, detail: string): void => {
    out.push({ code, table: schema.name, row: null, column, detail })
  }
  for (const key of Object.keys(partition)) {
    if (!schema.partitionColumns.includes(key)) add(ROW_CODES.partitionMismatch, key, `${schema.name} is not partitioned by ${key}`)
  }
  for (const col of schema.partitionColumns) {
    const v = partition[col]
    if (v === undefined) add(ROW_CODES.partitionMismatch, col, 'missing from the partition')
    else if (typeof v !== 'string' || !isPartitionValue(v)) add(ROW_CODES.partitionValue, col, `${show(v)} is not a partition value`)
  }
  return out
}

// ---------------------------------------------------------------------------------------------------
// Row text and sort order
// ---------------------------------------------------------------------------------------------------

type Render = (v: unknown) => string

function compileRender(type: PackType): Render {
  switch (type.kind) {
    case 'string':
    case 'time':
    case 'bool':
    case 'float64':
      // JSON.stringify writes RFC 8785's strings (for well-formed ones) and numbers (-0 as 0).
      return (v) => JSON.stringify(v)
    case 'int32':
    case 'int64':
      return (v) => String(v)
    case 'list': {
      const element = compileRender(type.element)
      return (v) => `[${(v as unknown[]).map(element).join(',')}]`
    }
    case 'struct':
      return compileRenderStruct(type.fields)
  }
}

/** Members in RFC 8785 order (by UTF-16 code units, which is how JS sorts strings). */
function canonicalOrder(fields: readonly PackField[]): PackField[] {
  return [...fields].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

function compileRenderStruct(fields: readonly PackField[]): Render {
  const members = canonicalOrder(fields).map((f) => ({ key: `${JSON.stringify(f.name)}:`, name: f.name, render: compileRender(f.type) }))
  return (v) => {
    const o = v as Record<string, unknown>
    let s = '{'
    for (let i = 0; i < members.length; i++) {
      const m = members[i]!
      const x = o[m.name]
      s += (i > 0 ? ',' : '') + m.key + (x === null || x === undefined ? 'null' : m.render(x))
    }
    return s + '}'
  }
}

const renderers = new WeakMap<TableSchema, Render>()

/** A valid row's RFC 8785 text, as the module header describes it. */
export function canonicalRowText(schema: TableSchema, row: object): string {
  let render = renderers.get(schema)
  if (!render) renderers.set(schema, (render = compileRenderStruct(schema.columns)))
  return render(row)
}

/** Compares strings by their UTF-8 bytes (code point order), which JS's own `<` (UTF-16 units) is not. */
export function compareUtf8(a: string, b: string): number {
  if (a === b) return 0
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) return utf8OrderOfUnit(x) - utf8OrderOfUnit(y)
  }
  return a.length - b.length
}

/** A UTF-16 unit's place in code point order: surrogates (code points above U+FFFF) after U+E000..U+FFFF. */
const utf8OrderOfUnit = (x: number): number => (x < 0xd800 ? x : x >= 0xe000 ? x - 0x800 : x + 0x2000)

/**
 * A number that orders strings as compareUtf8 does by their three UTF-16 units from `from` (a missing unit
 * first): where two strings' numbers differ and their earlier units are the same, compareUtf8 agrees; where
 * they are equal, it decides. Sorting by it first makes most comparisons of unlike keys (ids) one
 * subtraction. Below 2^49: exact.
 */
export function utf8OrderPrefix(s: string, from = 0): number {
  let p = 0
  for (let i = from; i < from + 3; i++) p = p * 0x10001 + (i < s.length ? utf8OrderOfUnit(s.charCodeAt(i)) + 1 : 0)
  return p
}

type Compare = (a: unknown, b: unknown) => number

function scalarCompare(kind: ScalarKind): Compare {
  if (kind === 'string' || kind === 'time') return (a, b) => compareUtf8(a as string, b as string)
  // Integers by value (a number and a bigint compare exactly in JS); booleans false before true.
  return (a, b) => {
    const x = a as number | bigint | boolean
    const y = b as number | bigint | boolean
    return x < y ? -1 : x > y ? 1 : 0
  }
}

/**
 * The order "Indexes" requires of a part's valid rows: by the table's sort columns alone (text by UTF-8
 * bytes, integers by value, false before true). Rows equal on them may come in any order.
 */
export function sortColumnsComparator(schema: TableSchema): (a: object, b: object) => number {
  const keys = schema.sortColumns.map((name) => ({ name, compare: scalarCompare(schema.columns.find((c) => c.name === name)!.type.kind as ScalarKind) }))
  return (a, b) => {
    const x = a as Record<string, unknown>
    const y = b as Record<string, unknown>
    for (const k of keys) {
      const c = k.compare(x[k.name], y[k.name])
      if (c !== 0) return c
    }
    return 0
  }
}

/** The order of one sort column's values, as `sortColumnsComparator` compares them. */
export function sortColumnComparator(schema: TableSchema, column: string): (a: unknown, b: unknown) => number {
  return scalarCompare(schema.columns.find((c) => c.name === column)!.type.kind as ScalarKind)
}

/**
 * The table's order of valid rows as JETCARP writes them: its sort columns, then, breaking ties, the rows'
 * RFC 8785 text by its UTF-8 bytes.
 */
export function rowComparator(schema: TableSchema): (a: object, b: object) => number {
  const bySortColumns = sortColumnsComparator(schema)
  return (a, b) => bySortColumns(a, b) || compareUtf8(canonicalRowText(schema, a), canonicalRowText(schema, b))
}

/** An index's first or last for a row: its first sort column's value as text (an integer in decimal). */
export function sortKeyText(schema: TableSchema, row: object): string {
  return String((row as Record<string, unknown>)[schema.sortColumns[0]!])
}

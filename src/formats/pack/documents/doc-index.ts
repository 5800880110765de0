/**
 * Index documents (pack format 1.0, "Indexes", "Search runs"): a table index lists a table's Parquet
 * parts and further indexes of the same table; a search index (table search) lists a search's sealed
 * segments, its score sidecars and further indexes of the same search. Both are format jetcarp-index.
 *
 * These functions check one index alone. How indexes chain (levels, cycles, repeats, the same table and
 * schema throughout) is index-walk.ts's.
 */
import {
  DOCUMENT_VERSION,
  MAX_OBJECT_BYTES,
  checkFormatAndVersion,
  expectArray,
  expectHash,
  expectInteger,
  expectObject,
  expectRecord,
  expectString,
  expectTime,
  isRunId,
  isTableName,
  isUuid,
  member,
  objectHash,
  parseSchemaId,
  parseWith,
  quote,
  refuse,
  writeChecked,
  type BuiltDocument,
  type JsonObject,
  type PackResult,
} from './documents.js'
import { isPartitionValue } from '../tables/table-schemas.js'

export const INDEX_FORMAT = 'jetcarp-index'
/** The table a search index names. */
export const SEARCH_TABLE = 'search'
export const SEARCH_SCHEMA = 'jetcarp-search 1'
/** "parts or children per index: 10,000" (Limits). */
export const MAX_INDEX_PARTS = 10_000
export const MAX_INDEX_CHILDREN = 10_000

/** Stable codes of index findings (besides the shared pack.json-*, pack.hash-*, pack.version-* ones). */
export const INDEX_CODES = {
  /** A member is missing, or of the wrong type or form. */
  invalid: 'pack.index-invalid',
  /** More than 10,000 parts (a search index: segments, or score sidecars over all its scores). */
  tooManyParts: 'pack.index-too-many-parts',
  /** More than 10,000 children. */
  tooManyChildren: 'pack.index-too-many-children',
  /** schema is not `jetcarp-<table> <n>` for the index's own table. */
  schemaMalformed: 'pack.schema-malformed',
  /** A partition key that is not a column name, or a value that is not a partition value. */
  partitionMalformed: 'pack.partition-malformed',
  /** A search index whose search is not the uuid the manifest maps to it. */
  searchMismatch: 'pack.search-mismatch',
} as const

const INVALID = INDEX_CODES.invalid

export interface TablePart {
  bytes: number
  /** The first sort column's value in the part's first row, as text. */
  first: string
  last: string
  object: string
  /** {partition key: value}, in the order of the index's bytes (sorted, as RFC 8785 writes them); {} when unpartitioned. */
  partition: Record<string, string>
  rows: number
}

export interface TableIndex {
  children: string[]
  format: typeof INDEX_FORMAT
  parts: TablePart[]
  schema: string
  table: string
  version: string
}

export interface SearchSegment {
  bytes: number
  engine_version: string
  /** The first and last run ids, in decimal. */
  first: string
  last: string
  object: string
  rows: number
  sealed: string
  /** part- and digits. */
  segment: string
}

export interface ScorePart {
  bytes: number
  object: string
  rows: number
  segment: string
}

export interface ScoreSet {
  created: string
  engine_version: string
  parts: ScorePart[]
  /** The rescore's number: its sidecars go to scores-<version>/ in an export. */
  version: number
}

export interface SearchIndex {
  children: string[]
  created: string
  engine_version: string
  format: typeof INDEX_FORMAT
  kind: string
  parts: SearchSegment[]
  remeasure?: JsonObject
  run_schema: string
  schema: string
  score_schema: string
  scores: ScoreSet[]
  search: string
  spec: JsonObject
  table: typeof SEARCH_TABLE
  updated: string
  version: string
}

export interface ParsedIndex<T> {
  index: T
  minor: number
  /** The schema id's number (the name is the index's table). */
  schemaNumber: number
}

export interface TableIndexInput {
  table: string
  schema: string
  parts: TablePart[]
  children?: string[]
}

export type SearchIndexInput = Omit<SearchIndex, 'format' | 'version' | 'table' | 'schema' | 'children' | 'scores'> & {
  children?: string[]
  scores?: ScoreSet[]
}

// ---------------------------------------------------------------------------------------------------
// Building.

/** Builds a table index (format jetcarp-index, version 1.0). Throws a PipeError when parseTableIndex would refuse it. */
export function buildTableIndex(input: TableIndexInput): BuiltDocument<TableIndex> {
  const doc: TableIndex = {
    children: input.children ?? [],
    format: INDEX_FORMAT,
    parts: input.parts,
    schema: input.schema,
    table: input.table,
    version: DOCUMENT_VERSION,
  }
  return built(doc, parseTableIndex)
}

/** Builds a search index (table search, schema jetcarp-search 1). Throws a PipeError when parseSearchIndex would refuse it. */
export function buildSearchIndex(input: SearchIndexInput): BuiltDocument<SearchIndex> {
  const doc: SearchIndex = {
    ...input,
    children: input.children ?? [],
    format: INDEX_FORMAT,
    schema: SEARCH_SCHEMA,
    scores: input.scores ?? [],
    table: SEARCH_TABLE,
    version: DOCUMENT_VERSION,
  }
  return built(doc, (bytes) => parseSearchIndex(bytes, { search: input.search }))
}

function built<T>(doc: T, parse: (bytes: Uint8Array) => PackResult<ParsedIndex<T>>): BuiltDocument<T> {
  const { bytes, parsed } = writeChecked(doc, parse, 'index')
  return { document: parsed.index, bytes, hash: objectHash(bytes) }
}

// ---------------------------------------------------------------------------------------------------
// Parsing.

/** Reads a table index from its bytes. Never throws. */
export function parseTableIndex(bytes: Uint8Array): PackResult<ParsedIndex<TableIndex>> {
  return parseWith(bytes, (value) => {
    const { doc, minor } = checkFormatAndVersion(value, INDEX_FORMAT)
    const { table, schema, schemaNumber, children } = readCommon(doc)
    const parts = expectArray(member(doc, 'parts'), INVALID, 'parts', MAX_INDEX_PARTS, INDEX_CODES.tooManyParts).map((p, i) => readTablePart(p, `parts[${i}]`))
    const index: TableIndex = { children, format: INDEX_FORMAT, parts, schema, table, version: member(doc, 'version') as string }
    return { index, minor, schemaNumber }
  })
}

/** Reads a search index from its bytes; `search`, when given, is the uuid the manifest maps to it. Never throws. */
export function parseSearchIndex(bytes: Uint8Array, opts: { search?: string } = {}): PackResult<ParsedIndex<SearchIndex>> {
  return parseWith(bytes, (value) => {
    const { doc, minor } = checkFormatAndVersion(value, INDEX_FORMAT)
    const { table, schema, schemaNumber, children } = readCommon(doc)
    if (table !== SEARCH_TABLE) refuse(INVALID, `table is ${quote(table)}: a search index's table is ${SEARCH_TABLE}`)
    const search = member(doc, 'search')
    if (!isUuid(search)) refuse(INVALID, `search ${quote(search)} is not a lower-case uuid`)
    if (opts.search !== undefined && search !== opts.search) refuse(INDEX_CODES.searchMismatch, `search index is of search ${search}, but the manifest maps it to ${opts.search}`)
    const parts = expectArray(member(doc, 'parts'), INVALID, 'parts', MAX_INDEX_PARTS, INDEX_CODES.tooManyParts).map((p, i) => readSegment(p, `parts[${i}]`))
    const scores = expectArray(member(doc, 'scores', []), INVALID, 'scores', MAX_INDEX_PARTS, INDEX_CODES.tooManyParts).map((s, i) => readScoreSet(s, `scores[${i}]`))
    const sidecars = scores.reduce((n, s) => n + s.parts.length, 0)
    if (sidecars > MAX_INDEX_PARTS) refuse(INDEX_CODES.tooManyParts, `scores list ${sidecars} sidecars, more than ${MAX_INDEX_PARTS}`)
    const index: SearchIndex = {
      children,
      created: expectTime(member(doc, 'created'), INVALID, 'created'),
      engine_version: expectString(member(doc, 'engine_version'), INVALID, 'engine_version', { nonEmpty: true }),
      format: INDEX_FORMAT,
      kind: expectString(member(doc, 'kind'), INVALID, 'kind', { nonEmpty: true }),
      parts,
      run_schema: expectSchemaId(member(doc, 'run_schema'), 'run_schema'),
      schema,
      score_schema: expectSchemaId(member(doc, 'score_schema'), 'score_schema'),
      scores,
      search,
      spec: expectObject(member(doc, 'spec'), INVALID, 'spec'),
      table: SEARCH_TABLE,
      updated: expectTime(member(doc, 'updated'), INVALID, 'updated'),
      version: member(doc, 'version') as string,
    }
    const remeasure = member(doc, 'remeasure')
    if (remeasure !== undefined) index.remeasure = expectObject(remeasure, INVALID, 'remeasure')
    return { index, minor, schemaNumber }
  })
}

function expectSchemaId(v: unknown, where: string): string {
  if (parseSchemaId(v) === undefined) refuse(INDEX_CODES.schemaMalformed, `${where} ${quote(v)} is not jetcarp-<name> <n>`)
  return v as string
}

function readCommon(doc: JsonObject): { table: string; schema: string; schemaNumber: number; children: string[] } {
  const table = member(doc, 'table')
  if (!isTableName(table)) refuse(INVALID, `table ${quote(table)} is not a table name`)
  const schema = member(doc, 'schema')
  const id = parseSchemaId(schema)
  if (!id || id.name !== table) refuse(INDEX_CODES.schemaMalformed, `schema ${quote(schema)} is not jetcarp-${table} <n>`)
  const children = expectArray(member(doc, 'children', []), INVALID, 'children', MAX_INDEX_CHILDREN, INDEX_CODES.tooManyChildren).map((h, i) => expectHash(h, `children[${i}]`, true))
  return { table, schema: schema as string, schemaNumber: id.number, children }
}

/** bytes, object and rows, which every part of every index has. */
function readObjectMembers(o: JsonObject, where: string): { bytes: number; object: string; rows: number } {
  return {
    bytes: expectInteger(member(o, 'bytes'), INVALID, `${where}.bytes`, 1, MAX_OBJECT_BYTES),
    object: expectHash(member(o, 'object'), `${where}.object`, true),
    rows: expectInteger(member(o, 'rows'), INVALID, `${where}.rows`, 0),
  }
}

function readTablePart(v: unknown, where: string): TablePart {
  const o = expectObject(v, INVALID, where)
  return {
    ...readObjectMembers(o, where),
    first: expectString(member(o, 'first'), INVALID, `${where}.first`),
    last: expectString(member(o, 'last'), INVALID, `${where}.last`),
    partition: expectRecord(member(o, 'partition'), INVALID, `${where}.partition`, (key, value) => {
      if (!isTableName(key)) refuse(INDEX_CODES.partitionMalformed, `${where}.partition key ${quote(key)} is not a column name`)
      if (typeof value !== 'string' || !isPartitionValue(value)) refuse(INDEX_CODES.partitionMalformed, `${where}.partition.${key} ${quote(value)} is not a partition value`)
      return value
    }),
  }
}

const SEGMENT_RE = /^part-[0-9]{1,20}$/

/** A search segment's name: part- and digits. */
export function isSegmentName(s: unknown): s is string {
  return typeof s === 'string' && SEGMENT_RE.test(s)
}

function expectSegmentName(v: unknown, where: string): string {
  if (!isSegmentName(v)) refuse(INVALID, `${where} ${quote(v)} is not part- and digits`)
  return v
}

function expectRunId(v: unknown, where: string): string {
  if (!isRunId(v)) refuse(INVALID, `${where} ${quote(v)} is not a run id in decimal`)
  return v
}

function readSegment(v: unknown, where: string): SearchSegment {
  const o = expectObject(v, INVALID, where)
  return {
    ...readObjectMembers(o, where),
    engine_version: expectString(member(o, 'engine_version'), INVALID, `${where}.engine_version`, { nonEmpty: true }),
    first: expectRunId(member(o, 'first'), `${where}.first`),
    last: expectRunId(member(o, 'last'), `${where}.last`),
    sealed: expectTime(member(o, 'sealed'), INVALID, `${where}.sealed`),
    segment: expectSegmentName(member(o, 'segment'), `${where}.segment`),
  }
}

function readScoreSet(v: unknown, where: string): ScoreSet {
  const o = expectObject(v, INVALID, where)
  return {
    created: expectTime(member(o, 'created'), INVALID, `${where}.created`),
    engine_version: expectString(member(o, 'engine_version'), INVALID, `${where}.engine_version`, { nonEmpty: true }),
    parts: expectArray(member(o, 'parts'), INVALID, `${where}.parts`, MAX_INDEX_PARTS, INDEX_CODES.tooManyParts).map((p, i) => {
      const part = expectObject(p, INVALID, `${where}.parts[${i}]`)
      return { ...readObjectMembers(part, `${where}.parts[${i}]`), segment: expectSegmentName(member(part, 'segment'), `${where}.parts[${i}].segment`) }
    }),
    version: expectInteger(member(o, 'version'), INVALID, `${where}.version`, 1),
  }
}

/**
 * The normalized tables of record format v1 ("Normalized tables"): their Parquet schemas, a streaming
 * writer that cuts row groups as they fill and lands the file atomically, and the readers check 4 of the
 * verifier uses ("has the v1 schema and the listed row count, and each row's `raw_index` ... and its
 * `receive_time` ...").
 *
 * Writing goes through hyparquet-writer's incremental `ParquetWriter` (one `write()` per row group, one
 * `finish()` for the footer) into a file sink of our own that flushes each row group to disk, so an hour
 * never sits in memory whole. Decimals and `trade_id` reach it already encoded (see `encodingSchema`);
 * the bytes are those of hyparquet-writer's own path, which a test checks. Reading goes through hyparquet, one row group at a time; DECIMAL columns
 * are read as their FIXED_LEN_BYTE_ARRAY bytes and decoded here, because hyparquet turns decimals into
 * floating-point numbers, and timestamps are kept as bigint nanoseconds.
 */
import { randomBytes } from 'node:crypto'
import { open, rename, unlink, type FileHandle } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { parquetMetadataAsync, parquetScan, type AsyncBuffer, type DecodedArray, type FileMetaData, type SchemaElement } from 'hyparquet'
import { ParquetWriter, type ColumnSource } from 'hyparquet-writer'
import { Compressor } from 'zstd-napi'
import { fsyncDir } from '../../core/atomic-write.js'
import { ParquetFileSink, RAW_TIMESTAMPS, ZSTD_DECOMPRESSORS, openParquetFile, topLevelElements, type OpenParquetFile } from '../../codec/parquet-io.js'
import { PipeError } from '../../core/errors.js'
import { DECIMAL_BYTES, DECIMAL_PRECISION, DECIMAL_SCALE, compareDecimal16, decodeDecimal16, encodeDecimalTextInto, isDecimal38Text } from './decimal.js'
import { TABLE_NAMES, type TableName, type TableRow } from './types.js'


// ---------------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------------

export { TABLE_NAMES } from './types.js'

/** The file name of a table inside an hour directory ("Layout"). */
export function tableFileName(table: TableName): string {
  return `${table}.parquet`
}

function int64(name: string): SchemaElement {
  return { name, type: 'INT64', repetition_type: 'REQUIRED' }
}

function string(name: string, required: boolean): SchemaElement {
  return { name, type: 'BYTE_ARRAY', repetition_type: required ? 'REQUIRED' : 'OPTIONAL', converted_type: 'UTF8', logical_type: { type: 'STRING' } }
}

function decimal(name: string): SchemaElement {
  return {
    name,
    type: 'FIXED_LEN_BYTE_ARRAY',
    type_length: DECIMAL_BYTES,
    repetition_type: 'REQUIRED',
    converted_type: 'DECIMAL',
    precision: DECIMAL_PRECISION,
    scale: DECIMAL_SCALE,
    logical_type: { type: 'DECIMAL', precision: DECIMAL_PRECISION, scale: DECIMAL_SCALE },
  }
}

function timestampNs(name: string, required: boolean): SchemaElement {
  // TIMESTAMP(NANOS) has no converted (legacy) type, so only the logical type is written.
  return { name, type: 'INT64', repetition_type: required ? 'REQUIRED' : 'OPTIONAL', logical_type: { type: 'TIMESTAMP', unit: 'NANOS', isAdjustedToUTC: true } }
}

function columnsOf(table: TableName): SchemaElement[] {
  const trades = table === 'trades'
  return [
    int64('raw_index'),
    string('instrument', true),
    ...(trades ? [string('trade_id', false)] : []),
    string('side', !trades),
    decimal('price'),
    decimal('size'),
    timestampNs('exchange_time', false),
    timestampNs('receive_time', true),
  ]
}

/**
 * The leaf columns of each table in the spec's order. These elements are what the writer writes and what
 * `checkSchema` compares against, so the two cannot drift apart.
 */
export const TABLE_COLUMNS: Readonly<Record<TableName, readonly Readonly<SchemaElement>[]>> = {
  trades: columnsOf('trades'),
  book_snapshots: columnsOf('book_snapshots'),
  book_deltas: columnsOf('book_deltas'),
}

/** The complete Parquet schema (root first) of a table, as written. */
export function tableSchema(table: TableName): SchemaElement[] {
  const cols = TABLE_COLUMNS[table].map((e) => ({ ...e, ...(e.logical_type ? { logical_type: { ...e.logical_type } } : {}) }))
  return [{ name: 'schema', num_children: cols.length }, ...cols]
}

// ---------------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------------

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

/** Error codes of this module; published codes never change meaning. */
export const TableErrorCode = {
  /** A price or size DECIMAL(38, 18) cannot hold exactly, or a string that is not well-formed Unicode. */
  unrepresentable: 'record.table-value-unrepresentable',
  /** A row that breaks the table's schema: wrong type, missing required value, `side` not bid/ask. */
  rowInvalid: 'record.table-row-invalid',
  /** write() or finish() after finish(), abort() or a failed write. */
  state: 'record.table-writer-state',
  /** A table file hyparquet cannot read. */
  unreadable: 'record.table-unreadable',
} as const

export interface TableRowProblem {
  code: (typeof TableErrorCode)['unrepresentable' | 'rowInvalid']
  field: keyof TableRow
  message: string
}

function problem(code: TableRowProblem['code'], field: keyof TableRow, message: string): TableRowProblem {
  return { code, field, message }
}

function checkString(row: TableRow, field: 'instrument' | 'trade_id' | 'side', required: boolean): TableRowProblem | null {
  const v: unknown = row[field]
  if (v === null || v === undefined) return required ? problem(TableErrorCode.rowInvalid, field, `${field} is required`) : null
  if (typeof v !== 'string') return problem(TableErrorCode.rowInvalid, field, `${field} must be a string`)
  if (!v.isWellFormed()) return problem(TableErrorCode.unrepresentable, field, `${field} is not well-formed Unicode (lone surrogate)`)
  return null
}

function checkTime(row: TableRow, field: 'exchange_time' | 'receive_time', required: boolean): TableRowProblem | null {
  const v: unknown = row[field]
  if (v === null || v === undefined) return required ? problem(TableErrorCode.rowInvalid, field, `${field} is required`) : null
  if (typeof v !== 'bigint') return problem(TableErrorCode.rowInvalid, field, `${field} must be a bigint of nanoseconds`)
  if (v < INT64_MIN || v > INT64_MAX) return problem(TableErrorCode.rowInvalid, field, `${field} ${v} is outside int64`)
  return null
}

function checkRow(table: TableName, row: TableRow): TableRowProblem | null {
  if (typeof row !== 'object' || row === null) return problem(TableErrorCode.rowInvalid, 'raw_index', 'row must be an object')
  const ri: unknown = row.raw_index
  if (typeof ri !== 'number' || !Number.isSafeInteger(ri) || ri < 0) return problem(TableErrorCode.rowInvalid, 'raw_index', 'raw_index must be a non-negative safe integer')
  const trades = table === 'trades'
  const p = checkString(row, 'instrument', true) ?? (trades ? checkString(row, 'trade_id', false) : null) ?? checkString(row, 'side', !trades)
  if (p) return p
  if (!trades && row.side !== 'bid' && row.side !== 'ask') return problem(TableErrorCode.rowInvalid, 'side', `side must be "bid" or "ask" in ${table}, got ${JSON.stringify(row.side)}`)
  for (const field of ['price', 'size'] as const) {
    const v: unknown = row[field]
    if (typeof v !== 'string') return problem(TableErrorCode.rowInvalid, field, `${field} must be the venue's decimal text`)
    if (!isDecimal38Text(v)) return problem(TableErrorCode.unrepresentable, field, `${field} ${JSON.stringify(v)} is not a value DECIMAL(38, 18) holds exactly`)
  }
  return checkTime(row, 'exchange_time', false) ?? checkTime(row, 'receive_time', true)
}

/**
 * Why `row` cannot be a row of `table`, or null when it can. The writer makes the same check; a
 * normalizer can call this first to keep a frame's rows all-or-nothing ("Normalized tables": a frame
 * with an unrepresentable value yields no rows).
 */
export function tableRowProblem(table: TableName, row: TableRow): TableRowProblem | null {
  return checkRow(table, row)
}

// ---------------------------------------------------------------------------------------------------
// Streaming writer
// ---------------------------------------------------------------------------------------------------

export interface TableWriterOptions {
  /** FileMetaData `created_by`, e.g. "pipe 0.1.0". */
  createdBy: string
  /**
   * Rows per row group (the last one may be shorter). Default 32,768: hyparquet-writer's transient
   * garbage grows with the row group, and 2M trade rows peaked at 280-340 MB RSS with 65,536-row groups
   * against 210-250 MB with 32,768 (files about 3% larger). The verifier reads one row group at a time.
   */
  rowGroupRows?: number
  /** Cut a row group early once its estimated uncompressed size reaches this. Default 32 MiB. */
  rowGroupBytes?: number
  /** zstd level for every page. Default 3. The bytes are deterministic for a given level and zstd build. */
  zstdLevel?: number
  /** Permission bits of the final file, as in writeFileAtomic. */
  mode?: number
}

export interface TableWriteResult {
  rows: number
  /** Bytes of the final file. */
  size: number
}

const utf8 = new TextEncoder()

/**
 * One row group's rows, column by column, in flat buffers: what the thread that validates rows hands the
 * thread that encodes pages (`rowGroupTransferList` names the buffers to move rather than copy). Strings
 * that repeat (instrument, side) are codes into a small list; `trade_id` is one UTF-8 buffer with end
 * offsets (-1 for null), because hyparquet-writer would otherwise encode each unique string into its own
 * ArrayBuffer, garbage that dominated the writer's memory.
 */
export interface RowGroupColumns {
  table: TableName
  rows: number
  /** Estimated uncompressed bytes, for cutting row groups by size. */
  bytes: number
  rawIndex: Float64Array
  instruments: string[]
  instrumentCodes: Uint32Array
  tradeIdBytes: Uint8Array
  tradeIdEnds: Int32Array
  sides: string[]
  /** -1 for null. */
  sideCodes: Int32Array
  price: DecimalColumn
  size: DecimalColumn
  exchangeTime: BigInt64Array
  /** 1 where exchange_time is null. */
  exchangeTimeNull: Uint8Array
  receiveTime: BigInt64Array
}

/**
 * A decimal column of a row group: its values as DECIMAL(38, 18) FIXED_LEN_BYTE_ARRAY(16), each row as the
 * code of its value. Prices repeat (hundreds of distinct ones in 32,768 trades): each distinct text is
 * encoded once, and hyparquet-writer's dictionary finds repeats by object rather than by hashing every
 * row's bytes. A column whose values rarely repeat gives every row a value of its own.
 */
export interface DecimalColumn {
  values: Uint8Array
  codes: Uint32Array
  /** min and max of the unscaled decimals, as hyparquet-writer computes a DECIMAL column's statistics. */
  range: [bigint, bigint]
}

/**
 * Rows after which a decimal column whose texts are mostly distinct (more than half) stops looking them
 * up: sizes of trades rarely repeat, and looking up each text cost more than encoding it again.
 */
const DEDUPE_PROBE_ROWS = 1024

/** Builds a {@link DecimalColumn} row by row from the venue's decimal texts. */
class DecimalColumnBuilder {
  private codeOf: Map<string, number> | null = new Map()
  private distinct = 0
  private readonly values: Uint8Array
  private readonly codes: Uint32Array
  /** Codes of the smallest and largest value so far. */
  private min = 0
  private max = 0

  constructor(capacity: number) {
    this.values = new Uint8Array(capacity * DECIMAL_BYTES)
    this.codes = new Uint32Array(capacity)
  }

  /** Row `i` holds `text`, a decimal {@link checkRow} accepted. */
  push(i: number, text: string): void {
    const codeOf = this.codeOf
    let code = codeOf?.get(text)
    if (code === undefined) {
      code = this.distinct++
      codeOf?.set(text, code)
      const values = this.values
      encodeDecimalTextInto(text, values, code * DECIMAL_BYTES)
      if (code === 0 || compareDecimal16(values, code * DECIMAL_BYTES, values, this.min * DECIMAL_BYTES) < 0) this.min = code
      if (code === 0 || compareDecimal16(values, code * DECIMAL_BYTES, values, this.max * DECIMAL_BYTES) > 0) this.max = code
    }
    this.codes[i] = code
    // A value seen again then gets a code of its own: the bytes are the same either way.
    if (i === DEDUPE_PROBE_ROWS && this.distinct * 2 > i) this.codeOf = null
  }

  take(rows: number): DecimalColumn {
    const values = this.values
    return {
      values: values.subarray(0, this.distinct * DECIMAL_BYTES), codes: this.codes.subarray(0, rows),
      range: [decodeDecimal16(values, this.min * DECIMAL_BYTES), decodeDecimal16(values, this.max * DECIMAL_BYTES)],
    }
  }
}

/** The buffers of a row group, to pass as postMessage's transfer list. */
export function rowGroupTransferList(g: RowGroupColumns): ArrayBuffer[] {
  const views = [g.rawIndex, g.instrumentCodes, g.tradeIdBytes, g.tradeIdEnds, g.sideCodes, g.price.values, g.price.codes, g.size.values, g.size.codes, g.exchangeTime, g.exchangeTimeNull, g.receiveTime]
  return [...new Set(views.map((v) => v.buffer as ArrayBuffer))]
}

/** Accumulates validated rows into a {@link RowGroupColumns} of a fixed capacity. */
export class RowGroupBuilder {
  n = 0
  bytes = 0
  private readonly rawIndex: Float64Array
  private readonly instruments: string[] = []
  private readonly instrumentIndex = new Map<string, number>()
  private readonly instrumentCodes: Uint32Array
  private tradeIdBytes = new Uint8Array(0)
  private tradeIdUsed = 0
  private readonly tradeIdEnds: Int32Array
  private readonly sides: string[] = []
  private readonly sideCodes: Int32Array
  private readonly price: DecimalColumnBuilder
  private readonly size: DecimalColumnBuilder
  private readonly exchangeTime: BigInt64Array
  private readonly exchangeTimeNull: Uint8Array
  private readonly receiveTime: BigInt64Array

  constructor(readonly table: TableName, readonly capacity: number) {
    this.rawIndex = new Float64Array(capacity)
    this.instrumentCodes = new Uint32Array(capacity)
    if (table === 'trades') this.tradeIdBytes = new Uint8Array(capacity * 12)
    this.tradeIdEnds = new Int32Array(table === 'trades' ? capacity : 0)
    this.sideCodes = new Int32Array(capacity)
    this.price = new DecimalColumnBuilder(capacity)
    this.size = new DecimalColumnBuilder(capacity)
    this.exchangeTime = new BigInt64Array(capacity)
    this.exchangeTimeNull = new Uint8Array(capacity)
    this.receiveTime = new BigInt64Array(capacity)
  }

  get full(): boolean {
    return this.n >= this.capacity
  }

  /** Adds a row that {@link checkRow} accepted. */
  push(row: TableRow): void {
    const i = this.n++
    this.rawIndex[i] = row.raw_index
    let code = this.instrumentIndex.get(row.instrument)
    if (code === undefined) {
      code = this.instruments.length
      this.instruments.push(row.instrument)
      this.instrumentIndex.set(row.instrument, code)
    }
    this.instrumentCodes[i] = code
    if (this.table === 'trades') this.pushTradeId(i, row.trade_id)
    this.sideCodes[i] = row.side === null ? -1 : this.sideCode(row.side)
    this.price.push(i, row.price)
    this.size.push(i, row.size)
    if (row.exchange_time === null) this.exchangeTimeNull[i] = 1
    else this.exchangeTime[i] = row.exchange_time
    this.receiveTime[i] = row.receive_time
    // Estimated uncompressed bytes: strings as UTF-16 length (close enough), fixed-width columns exactly.
    this.bytes += 64 + row.instrument.length + (row.trade_id?.length ?? 0) + (row.side?.length ?? 0)
  }

  private sideCode(side: string): number {
    const at = this.sides.indexOf(side)
    if (at >= 0) return at
    this.sides.push(side)
    return this.sides.length - 1
  }

  private pushTradeId(i: number, id: string | null): void {
    if (id === null) {
      this.tradeIdEnds[i] = -1
      return
    }
    const need = this.tradeIdUsed + id.length * 3
    if (need > this.tradeIdBytes.length) {
      const next = new Uint8Array(Math.max(need, this.tradeIdBytes.length * 2))
      next.set(this.tradeIdBytes.subarray(0, this.tradeIdUsed))
      this.tradeIdBytes = next
    }
    // Venues' trade ids are ASCII (digits, mostly): written here, without a native call and a view each.
    const bytes = this.tradeIdBytes
    let at = this.tradeIdUsed
    for (let c = 0; c < id.length; c++) {
      const code = id.charCodeAt(c)
      if (code >= 0x80) {
        at = this.tradeIdUsed + utf8.encodeInto(id, bytes.subarray(this.tradeIdUsed)).written
        break
      }
      bytes[at++] = code
    }
    this.tradeIdUsed = at
    this.tradeIdEnds[i] = at
  }

  /** The rows so far; the builder is not used after this. */
  take(): RowGroupColumns {
    const n = this.n
    return {
      table: this.table, rows: n, bytes: this.bytes,
      rawIndex: this.rawIndex.subarray(0, n), instruments: this.instruments, instrumentCodes: this.instrumentCodes.subarray(0, n),
      tradeIdBytes: this.tradeIdBytes.subarray(0, this.tradeIdUsed), tradeIdEnds: this.tradeIdEnds.subarray(0, this.table === 'trades' ? n : 0),
      sides: this.sides, sideCodes: this.sideCodes.subarray(0, n),
      price: this.price.take(n), size: this.size.take(n),
      exchangeTime: this.exchangeTime.subarray(0, n), exchangeTimeNull: this.exchangeTimeNull.subarray(0, n), receiveTime: this.receiveTime.subarray(0, n),
    }
  }
}

/**
 * A view of each 16-byte value of `values`, one view shared by equal values: hyparquet-writer's dictionary
 * finds repeats by object, and hashes the bytes of every other one. A column whose codes stopped being
 * looked up (DecimalColumnBuilder) holds a value per row; hashing them here, four bytes at a time into a
 * table of codes, costs a tenth of that.
 */
function distinctDecimalViews(values: Uint8Array): Uint8Array[] {
  const count = values.length / DECIMAL_BYTES
  const views = new Array<Uint8Array>(count)
  const words = new DataView(values.buffer, values.byteOffset, values.byteLength)
  let size = 16
  while (size < count * 2) size *= 2
  const mask = size - 1
  const slots = new Int32Array(size).fill(-1)
  for (let v = 0; v < count; v++) {
    const at = v * DECIMAL_BYTES
    const a = words.getInt32(at, true)
    const b = words.getInt32(at + 4, true)
    const c = words.getInt32(at + 8, true)
    const d = words.getInt32(at + 12, true)
    let h = Math.imul(Math.imul(Math.imul(Math.imul(0x811c9dc5 ^ a, 0x01000193) ^ b, 0x01000193) ^ c, 0x01000193) ^ d, 0x01000193)
    h ^= h >>> 15
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const w = slots[slot]!
      if (w < 0) {
        slots[slot] = v
        views[v] = values.subarray(at, at + DECIMAL_BYTES)
        break
      }
      const other = w * DECIMAL_BYTES
      if (words.getInt32(other, true) === a && words.getInt32(other + 4, true) === b && words.getInt32(other + 8, true) === c && words.getInt32(other + 12, true) === d) {
        views[v] = views[w]!
        break
      }
    }
  }
  return views
}

/** The column values hyparquet-writer takes, from a row group's flat buffers. */
function columnData(g: RowGroupColumns): ColumnSource[] {
  const n = g.rows
  const decimals = (column: DecimalColumn): Uint8Array[] => {
    const views = distinctDecimalViews(column.values)
    const out = new Array<Uint8Array>(n)
    for (let i = 0; i < n; i++) out[i] = views[column.codes[i]!]!
    return out
  }
  const rawIndex = new Array<bigint>(n)
  const instrument = new Array<string>(n)
  const side = new Array<string | null>(n)
  const exchangeTime = new Array<bigint | null>(n)
  const receiveTime = new Array<bigint>(n)
  for (let i = 0; i < n; i++) {
    rawIndex[i] = BigInt(g.rawIndex[i]!)
    instrument[i] = g.instruments[g.instrumentCodes[i]!]!
    const s = g.sideCodes[i]!
    side[i] = s < 0 ? null : g.sides[s]!
    exchangeTime[i] = g.exchangeTimeNull[i] ? null : g.exchangeTime[i]!
    receiveTime[i] = g.receiveTime[i]!
  }
  const cols: ColumnSource[] = [
    { name: 'raw_index', data: rawIndex },
    { name: 'instrument', data: instrument },
  ]
  if (g.table === 'trades') {
    const ids = new Array<Uint8Array | null>(n)
    let start = 0
    for (let i = 0; i < n; i++) {
      const end = g.tradeIdEnds[i]!
      if (end < 0) ids[i] = null
      else {
        ids[i] = g.tradeIdBytes.subarray(start, end)
        start = end
      }
    }
    cols.push({ name: 'trade_id', data: ids })
  }
  cols.push(
    { name: 'side', data: side },
    // Their statistics are the decimals' range, stated in encode(): hyparquet-writer's would be thrown away.
    { name: 'price', data: decimals(g.price), statistics: false },
    { name: 'size', data: decimals(g.size), statistics: false },
    { name: 'exchange_time', data: exchangeTime },
    { name: 'receive_time', data: receiveTime },
  )
  return cols
}

/**
 * The schema the pages are encoded with: the v1 schema with the DECIMAL annotation taken off `price` and
 * `size`, so that hyparquet-writer takes our 16-byte values as they are instead of converting each
 * bigint itself (its conversion costs about four times ours in CPU and garbage). The footer is written
 * with the full v1 schema (`finish()` swaps it in), and the decimal columns' statistics are stated by us:
 * the signed min/max that hyparquet-writer computes for a DECIMAL column, and its encoding stats, so the
 * file's bytes are exactly those of its own DECIMAL path (a test compares them). This leans on three
 * public fields of ParquetWriter 0.17, `schema` (read again by `finish()`), `row_groups` and
 * `pendingIndexes`; the byte-equality test catches a version that changes any.
 */
function encodingSchema(table: TableName): SchemaElement[] {
  return tableSchema(table).map((e) =>
    e.converted_type === 'DECIMAL' ? { name: e.name, type: e.type, type_length: e.type_length, repetition_type: e.repetition_type } : e,
  )
}

type WriterSchema = ConstructorParameters<typeof ParquetWriter>[0]['schema']

/**
 * Encodes row groups (zstd pages) into one table file, written under a temporary name in the file's
 * directory as they come; `finish()` writes the footer, fsyncs, renames to the final name and fsyncs the
 * directory; `abort()` removes the temporary file. It runs wherever the pages are encoded: inside a
 * {@link TableWriter}, or on the sealer's writer thread. Call `encode` again only once the previous call's
 * promise (if any) has settled.
 */
export class RowGroupEncoder {
  private readonly sink: ParquetFileSink
  private readonly pq: ParquetWriter

  private constructor(readonly table: TableName, readonly path: string, readonly tempPath: string, private readonly fh: FileHandle, opts: TableWriterOptions) {
    const zstd = new Compressor()
    zstd.setParameters({ compressionLevel: opts.zstdLevel ?? 3 })
    this.sink = new ParquetFileSink(fh)
    this.pq = new ParquetWriter({
      writer: this.sink,
      // hyparquet-writer carries its own hyparquet (1.31) whose SchemaElement type differs in details.
      schema: encodingSchema(table) as WriterSchema,
      codec: 'ZSTD',
      compressors: { ZSTD: (input: Uint8Array) => zstd.compress(input) },
      createdBy: opts.createdBy,
      // kvMetadata left undefined: the footer carries no key-value metadata.
    })
  }

  /** Creates the temporary file next to `path`. */
  static async open(path: string, table: TableName, opts: TableWriterOptions): Promise<RowGroupEncoder> {
    if (!TABLE_NAMES.includes(table)) throw new RangeError(`unknown table ${String(table)}`)
    if (typeof opts.createdBy !== 'string') throw new TypeError('createdBy is required')
    const tempPath = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`)
    const fh = await open(tempPath, 'wx', opts.mode ?? 0o666)
    try {
      if (opts.mode !== undefined) await fh.chmod(opts.mode)
      return new RowGroupEncoder(table, path, tempPath, fh, opts)
    } catch (err) {
      await fh.close().catch(() => undefined)
      await unlink(tempPath).catch(() => undefined)
      throw err
    }
  }

  encode(g: RowGroupColumns): void | Promise<void> {
    const groups = this.pq.row_groups.length
    const flushed = this.pq.write({ columnData: columnData(g), rowGroupSize: g.rows })
    // write() has appended the row group's metadata synchronously; it is still ours to amend.
    const rg = this.pq.row_groups[groups]
    if (!rg || this.pq.row_groups.length !== groups + 1) throw new Error('table writer: expected exactly one new row group')
    for (const chunk of rg.columns) {
      const md = chunk.meta_data
      const name = md?.path_in_schema[0]
      const range = name === 'price' ? g.price.range : name === 'size' ? g.size.range : undefined
      if (!md || !range) continue
      md.statistics = { min_value: range[0], max_value: range[1], null_count: 0n }
      // What hyparquet-writer states with statistics on: a dictionary page, then the data pages (each of the
      // chunk's pages has an offset-index entry when there are several).
      const pages = this.pq.pendingIndexes.find((p) => p.chunk === chunk)?.offsetIndex?.page_locations.length ?? 1
      md.encoding_stats = [
        ...(md.dictionary_page_offset !== undefined ? [{ page_type: 'DICTIONARY_PAGE' as const, encoding: 'PLAIN' as const, count: 1 }] : []),
        { page_type: 'DATA_PAGE_V2', encoding: md.encodings[md.encodings.length - 1]!, count: pages },
      ]
    }
    return flushed
  }

  /** Writes the footer and lands the file under its final name; on failure the temporary file is gone. */
  async finish(): Promise<{ size: number }> {
    try {
      this.pq.schema = tableSchema(this.table) as WriterSchema
      await this.pq.finish()
      await this.fh.sync()
      await this.fh.close()
      await rename(this.tempPath, this.path)
    } catch (err) {
      await this.abort()
      throw err
    }
    await fsyncDir(dirname(this.path))
    return { size: this.sink.offset }
  }

  async abort(): Promise<void> {
    await this.fh.close().catch(() => undefined)
    await unlink(this.tempPath).catch(() => undefined)
  }
}

type WriterState = 'open' | 'finishing' | 'finished' | 'failed' | 'aborted'

/**
 * Streams the rows of one table into `<path>` (e.g. `hour=14/trades.parquet`): rows accumulate column by
 * column and each full row group is encoded (zstd) and written out, under a temporary name in the same
 * directory. `finish()` writes the footer, fsyncs, renames to the final name and fsyncs the directory;
 * `abort()` removes the temporary file. A table with no rows still makes a valid file (zero row groups).
 *
 * The bytes depend only on the rows and the options, not on how the rows were batched.
 * Await each `write()` to keep memory bounded: it resolves once the row groups it completed are on disk.
 */
export class TableWriter {
  readonly table: TableName
  readonly path: string
  private readonly cut: RowGroupCutter
  private readonly encoder: RowGroupEncoder
  private pending: Promise<void> = Promise.resolve()
  private failure: unknown
  private state: WriterState = 'open'
  private count = 0

  private constructor(encoder: RowGroupEncoder, opts: TableWriterOptions) {
    this.table = encoder.table
    this.path = encoder.path
    this.encoder = encoder
    this.cut = new RowGroupCutter(encoder.table, opts)
  }

  /** The temporary file the rows go to until `finish()`. */
  get tempPath(): string {
    return this.encoder.tempPath
  }

  /** Creates the temporary file next to `path` and returns a writer for `table`. */
  static async open(path: string, table: TableName, opts: TableWriterOptions): Promise<TableWriter> {
    rowGroupLimits(opts)
    return new TableWriter(await RowGroupEncoder.open(path, table, opts), opts)
  }

  /** Rows accepted so far. */
  get rows(): number {
    return this.count
  }

  /**
   * Adds one row or a batch. A batch is all or nothing: when a row is invalid the promise rejects with a
   * PipeError (code `record.table-value-unrepresentable` or `record.table-row-invalid`, location.row the
   * index in the batch), none of the batch is added, and the writer stays usable.
   */
  write(rows: TableRow | readonly TableRow[]): Promise<void> {
    if (this.state !== 'open') return Promise.reject(this.stateError('write'))
    const batch: readonly TableRow[] = Array.isArray(rows) ? rows : [rows as TableRow]
    let cut: Promise<void> | undefined
    try {
      this.cut.add(batch, this.path, (g) => { cut = this.encodeLater(g) })
    } catch (err) {
      return Promise.reject(err)
    }
    this.count += batch.length
    return cut ?? this.pending
  }

  private encodeLater(g: RowGroupColumns): Promise<void> {
    const next = this.pending.then(() => this.encoder.encode(g))
    next.catch((err: unknown) => {
      if (this.state === 'open' || this.state === 'finishing') this.state = 'failed'
      this.failure ??= err
    })
    this.pending = next
    return next
  }

  /** Writes the last row group and the footer, then lands the file under its final name. */
  async finish(): Promise<TableWriteResult> {
    if (this.state !== 'open') throw this.stateError('finish')
    this.state = 'finishing'
    let size: number
    try {
      const last = this.cut.rest()
      if (last) this.encodeLater(last)
      await this.pending
      ;({ size } = await this.encoder.finish())
    } catch (err) {
      this.state = 'failed'
      this.failure ??= err
      await this.encoder.abort()
      throw err
    }
    this.state = 'finished'
    return { rows: this.count, size }
  }

  /** Stops and removes the temporary file. Does nothing after a successful finish(). */
  async abort(): Promise<void> {
    if (this.state === 'finished' || this.state === 'aborted') return
    this.state = 'aborted'
    await this.pending.catch(() => undefined)
    await this.encoder.abort()
  }

  private stateError(op: string): unknown {
    if (this.state === 'failed' && this.failure !== undefined) return this.failure
    return new PipeError(TableErrorCode.state, `${op}() on a table writer that is ${this.state}`, { location: { file: this.path } })
  }
}

function rowGroupLimits(opts: TableWriterOptions): { rows: number; bytes: number } {
  const rows = opts.rowGroupRows ?? 32_768
  const bytes = opts.rowGroupBytes ?? 32 * 1024 * 1024
  if (!Number.isSafeInteger(rows) || rows < 1) throw new RangeError('rowGroupRows must be a positive integer')
  if (!(bytes > 0)) throw new RangeError('rowGroupBytes must be positive')
  return { rows, bytes }
}

/**
 * Validates rows and cuts them into row groups by the writer's limits: the half of table writing that
 * stays with the caller when the pages are encoded elsewhere (the sealer's writer thread).
 */
export class RowGroupCutter {
  private readonly rows: number
  private readonly bytes: number
  private group: RowGroupBuilder

  constructor(readonly table: TableName, opts: Pick<TableWriterOptions, 'rowGroupRows' | 'rowGroupBytes'>) {
    ;({ rows: this.rows, bytes: this.bytes } = rowGroupLimits({ createdBy: '', ...opts }))
    this.group = new RowGroupBuilder(table, this.rows)
  }

  /**
   * Adds a batch, all or nothing: an invalid row throws a PipeError naming `file`, the row's index in the
   * batch and the field, and nothing of the batch is added. `onGroup` receives each row group that fills.
   */
  add(batch: readonly TableRow[], file: string, onGroup: (g: RowGroupColumns) => void): void {
    for (let i = 0; i < batch.length; i++) {
      const p = checkRow(this.table, batch[i]!)
      if (p) throw new PipeError(p.code, `${this.table} row: ${p.message}`, { location: { file, row: i, field: p.field } })
    }
    for (let i = 0; i < batch.length; i++) {
      this.group.push(batch[i]!)
      if (this.group.full || this.group.bytes >= this.bytes) {
        onGroup(this.group.take())
        this.group = new RowGroupBuilder(this.table, this.rows)
      }
    }
  }

  /** The last, partly filled row group, or null when there is none. */
  rest(): RowGroupColumns | null {
    if (this.group.n === 0) return null
    const g = this.group.take()
    this.group = new RowGroupBuilder(this.table, this.rows)
    return g
  }
}

// ---------------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------------

function unreadable(path: string, err: unknown): PipeError {
  if (err instanceof PipeError) return err
  const msg = err instanceof Error ? err.message : String(err)
  return new PipeError(TableErrorCode.unreadable, `not a readable Parquet file: ${msg}`, { location: { file: path }, cause: err })
}

/** One top-level field of a file's schema, as check 4 compares it. Absent attributes are null. */
export interface ColumnDescription {
  name: string
  /** Physical type, or 'group' for a nested field. */
  physicalType: string
  typeLength: number | null
  repetition: string | null
  convertedType: string | null
  logicalType: string | null
  /** DECIMAL precision and scale: the logical type's, else the schema element's. */
  precision: number | null
  scale: number | null
  /** TIMESTAMP unit and isAdjustedToUTC from the logical type. */
  timestampUnit: string | null
  isAdjustedToUTC: boolean | null
}

function describeElement(e: Readonly<SchemaElement>): ColumnDescription {
  const lt = e.logical_type
  const isGroup = (e.num_children ?? 0) > 0 || e.type === undefined
  return {
    name: e.name,
    physicalType: isGroup ? 'group' : e.type!,
    typeLength: e.type_length ?? null,
    repetition: e.repetition_type ?? null,
    convertedType: e.converted_type ?? null,
    logicalType: lt?.type ?? null,
    precision: lt?.type === 'DECIMAL' ? lt.precision : e.precision ?? null,
    scale: lt?.type === 'DECIMAL' ? lt.scale : e.scale ?? null,
    timestampUnit: lt?.type === 'TIMESTAMP' ? lt.unit : null,
    isAdjustedToUTC: lt?.type === 'TIMESTAMP' ? lt.isAdjustedToUTC : null,
  }
}

/** The file's top-level columns in file order. */
export function describeColumns(metadata: Pick<FileMetaData, 'schema'>): ColumnDescription[] {
  return topLevelElements(metadata.schema).map(describeElement)
}

/** What v1 requires of each column of `table`, in the spec's order. */
export function expectedColumns(table: TableName): ColumnDescription[] {
  return TABLE_COLUMNS[table].map(describeElement)
}

export type SchemaAttribute =
  | 'column'
  | 'physical_type'
  | 'type_length'
  | 'repetition'
  | 'logical_type'
  | 'converted_type'
  | 'precision'
  | 'scale'
  | 'timestamp_unit'
  | 'is_adjusted_to_utc'

/** One way a file's schema differs from v1: `column` is the column's name. */
export interface SchemaProblem {
  column: string
  attribute: SchemaAttribute
  expected: string
  found: string
}

/** The logical type a legacy converted type stands for (Parquet LogicalTypes.md, backward compatibility). */
const CONVERTED_TO_LOGICAL: Readonly<Record<string, string>> = {
  UTF8: 'STRING',
  DECIMAL: 'DECIMAL',
  TIMESTAMP_MILLIS: 'TIMESTAMP',
  TIMESTAMP_MICROS: 'TIMESTAMP',
  INT_64: 'INTEGER',
  ENUM: 'ENUM',
  JSON: 'JSON',
  BSON: 'BSON',
  DATE: 'DATE',
}

const show = (v: string | number | boolean | null): string => (v === null ? 'absent' : String(v))

/**
 * Compares a file's schema with the v1 schema of `table` ("What a verifier checks", 4). Every v1 column
 * must be present once, as a primitive column with the physical type, type length, repetition, logical
 * type and its parameters that v1 states. Equivalent annotations are accepted: a legacy converted type
 * without a logical type (UTF8 for STRING, DECIMAL with the element's precision and scale), and
 * INTEGER(64, signed) on `raw_index`; a converted type that contradicts the logical type is a problem.
 * Columns v1 does not define are ignored (later versions may add columns), and so is their order.
 */
export function checkSchema(table: TableName, metadata: Pick<FileMetaData, 'schema'>): SchemaProblem[] {
  const problems: SchemaProblem[] = []
  const found = topLevelElements(metadata.schema)
  for (const exp of TABLE_COLUMNS[table]) {
    const column = exp.name
    const add = (attribute: SchemaAttribute, expected: string, got: string): void => {
      problems.push({ column, attribute, expected, found: got })
    }
    const matches = found.filter((e) => e.name === column)
    if (matches.length === 0) {
      add('column', 'present', 'absent')
      continue
    }
    if (matches.length > 1) add('column', 'one column', `${matches.length} columns`)
    const f = describeElement(matches[0]!)
    const e = describeElement(exp)

    if (f.physicalType !== e.physicalType) add('physical_type', e.physicalType, f.physicalType)
    if (f.physicalType === 'group') continue
    if (e.physicalType === 'FIXED_LEN_BYTE_ARRAY' && f.typeLength !== e.typeLength) add('type_length', show(e.typeLength), show(f.typeLength))
    if (f.repetition !== e.repetition) add('repetition', show(e.repetition), show(f.repetition))

    // The annotation: the logical type, or what a lone converted type stands for.
    const foundLogical = f.logicalType ?? (f.convertedType ? CONVERTED_TO_LOGICAL[f.convertedType] ?? f.convertedType : null)
    if (e.logicalType === null) {
      // raw_index: a plain int64; INTEGER(64, signed) and INT_64 say the same.
      const lt = matches[0]!.logical_type
      const sameInt = lt?.type === 'INTEGER' ? lt.bitWidth === 64 && lt.isSigned : foundLogical === null || f.convertedType === 'INT_64'
      if (!sameInt) add('logical_type', 'absent', describeLogical(matches[0]!))
      continue
    }
    if (foundLogical !== e.logicalType) {
      add('logical_type', e.logicalType, f.logicalType ?? (f.convertedType ? `absent (converted type ${f.convertedType})` : 'absent'))
      continue
    }
    // The converted type, when present, must agree with the logical type.
    if (f.convertedType !== null && f.convertedType !== e.convertedType) add('converted_type', show(e.convertedType), f.convertedType)

    if (e.logicalType === 'DECIMAL') {
      const el = matches[0]!
      if (f.precision !== e.precision) add('precision', show(e.precision), show(f.precision))
      if (f.scale !== e.scale) add('scale', show(e.scale), show(f.scale))
      // With both annotations, the element's own precision and scale must agree too.
      if (f.logicalType === 'DECIMAL' && f.convertedType === 'DECIMAL') {
        if ((el.precision ?? null) !== e.precision && f.precision === e.precision) add('precision', `${show(e.precision)} (schema element)`, show(el.precision ?? null))
        if ((el.scale ?? null) !== e.scale && f.scale === e.scale) add('scale', `${show(e.scale)} (schema element)`, show(el.scale ?? null))
      }
    } else if (e.logicalType === 'TIMESTAMP') {
      const unit = f.timestampUnit ?? (f.convertedType === 'TIMESTAMP_MILLIS' ? 'MILLIS' : f.convertedType === 'TIMESTAMP_MICROS' ? 'MICROS' : null)
      const utc = f.isAdjustedToUTC ?? (f.convertedType !== null ? true : null)
      if (unit !== e.timestampUnit) add('timestamp_unit', show(e.timestampUnit), show(unit))
      if (utc !== e.isAdjustedToUTC) add('is_adjusted_to_utc', show(e.isAdjustedToUTC), show(utc))
    }
  }
  return problems
}

function describeLogical(e: SchemaElement): string {
  const lt = e.logical_type
  if (lt?.type === 'INTEGER') return `INTEGER(${lt.bitWidth}, ${lt.isSigned ? 'signed' : 'unsigned'})`
  if (lt) return lt.type
  return e.converted_type ? `converted type ${e.converted_type}` : 'absent'
}

/** First item of `readTableForCheck`: the footer. */
export interface TableCheckHeader {
  kind: 'schema'
  metadata: FileMetaData
  /** Top-level columns in file order; give `metadata` to `checkSchema` for the comparison with v1. */
  columns: ColumnDescription[]
  /** num_rows of the footer. The row groups that follow may add up to another count. */
  rows: number
  rowGroups: number
  /** False when `raw_index` or `receive_time` is missing or not a flat integer column: no row items follow. */
  rowsReadable: boolean
}

/** One row group's keys, in file order. A null is a missing value (possible only in a non-v1 file). */
export interface TableCheckRows {
  kind: 'rows'
  rowGroup: number
  /** Index of the group's first row in the file. */
  rowStart: number
  rawIndex: (bigint | null)[]
  /** Exact int64 as stored (nanoseconds in a v1 file). */
  receiveTime: (bigint | null)[]
}

export type TableCheckItem = TableCheckHeader | TableCheckRows

function flatIntColumn(metadata: FileMetaData, name: string): boolean {
  const e = topLevelElements(metadata.schema).find((c) => c.name === name)
  return e !== undefined && (e.num_children ?? 0) === 0 && (e.type === 'INT64' || e.type === 'INT32') && e.repetition_type !== 'REPEATED'
}

function toBigints(data: DecodedArray): (bigint | null)[] {
  const out: (bigint | null)[] = new Array(data.length)
  for (let i = 0; i < data.length; i++) {
    const v: unknown = data[i]
    out[i] = typeof v === 'bigint' ? v : typeof v === 'number' ? BigInt(v) : null
  }
  return out
}

/** Opens a table file and reads its footer; either failing is `record.table-unreadable`. */
async function openTable(path: string): Promise<{ f: OpenParquetFile; metadata: FileMetaData }> {
  const f = await openParquetFile(path).catch((err: unknown) => {
    throw unreadable(path, err)
  })
  try {
    return { f, metadata: await parquetMetadataAsync(f.file, { parsers: RAW_TIMESTAMPS, geoparquet: false }) }
  } catch (err) {
    await f.close()
    throw unreadable(path, err)
  }
}

/**
 * Reads what check 4 needs from a table file: first the footer (`kind: 'schema'`), then one item per
 * row group with each row's `raw_index` and `receive_time` (`kind: 'rows'`). Only those two column
 * chunks of one row group are held at a time. Throws a PipeError `record.table-unreadable` when the file
 * is not Parquet hyparquet can read.
 */
export async function* readTableForCheck(path: string): AsyncGenerator<TableCheckItem, void, undefined> {
  const { f, metadata } = await openTable(path)
  try {
    const rowsReadable = flatIntColumn(metadata, 'raw_index') && flatIntColumn(metadata, 'receive_time')
    yield { kind: 'schema', metadata, columns: describeColumns(metadata), rows: Number(metadata.num_rows), rowGroups: metadata.row_groups.length, rowsReadable }
    if (!rowsReadable) return
    for await (const g of scanGroups(path, f.file, metadata, ['raw_index', 'receive_time'])) {
      yield { kind: 'rows', rowGroup: g.rowGroup, rowStart: g.rowStart, rawIndex: toBigints(g.data.raw_index!), receiveTime: toBigints(g.data.receive_time!) }
    }
  } finally {
    await f.close()
  }
}

interface GroupData {
  rowGroup: number
  rowStart: number
  data: Record<string, DecodedArray>
}

async function* scanGroups(path: string, file: AsyncBuffer, metadata: FileMetaData, columns: string[]): AsyncGenerator<GroupData> {
  let scan
  try {
    scan = await parquetScan({ file, metadata, columns, compressors: ZSTD_DECOMPRESSORS, parsers: RAW_TIMESTAMPS, geoparquet: false })
  } catch (err) {
    throw unreadable(path, err)
  }
  let rowStart = 0
  for (let g = 0; g < metadata.row_groups.length; g++) {
    const n = Number(metadata.row_groups[g]!.num_rows)
    const rowEnd = rowStart + n
    const data: Record<string, DecodedArray> = {}
    try {
      for (const column of columns) {
        const d = await scan.readColumn({ column, rowStart, rowEnd })
        if (d.length !== n) throw new Error(`row group ${g}: column ${column} has ${d.length} values, the footer says ${n} rows`)
        data[column] = d
      }
    } catch (err) {
      throw unreadable(path, err)
    }
    yield { rowGroup: g, rowStart, data }
    rowStart = rowEnd
  }
}

/** A row as read back: decimals as their unscaled DECIMAL(38, 18) integer (value × 10^18). */
export interface ReadTableRow {
  raw_index: number
  instrument: string
  trade_id: string | null
  side: string | null
  price: bigint
  size: bigint
  exchange_time: bigint | null
  receive_time: bigint
}

/**
 * Reads every row of a v1 table file back exactly, one row group per yielded batch (for tests, tools
 * and interoperability checks; the verifier uses `readTableForCheck`). The file must have the v1
 * schema of its table; `trade_id` is null for the book tables.
 */
export async function* readTableRows(path: string): AsyncGenerator<ReadTableRow[], void, undefined> {
  const { f, metadata } = await openTable(path)
  try {
    const names = new Set(topLevelElements(metadata.schema).map((e) => e.name))
    const hasTradeId = names.has('trade_id')
    // hyparquet converts DECIMAL to float64; without the annotation it hands over the 16 stored bytes.
    const rawDecimals: FileMetaData = {
      ...metadata,
      schema: metadata.schema.map((e) => (e.converted_type === 'DECIMAL' || e.logical_type?.type === 'DECIMAL' ? { ...e, converted_type: undefined, logical_type: undefined } : e)),
    }
    const columns = ['raw_index', 'instrument', ...(hasTradeId ? ['trade_id'] : []), 'side', 'price', 'size', 'exchange_time', 'receive_time']
    for await (const g of scanGroups(path, f.file, rawDecimals, columns)) {
      const d = g.data
      const n = d.raw_index!.length
      const out: ReadTableRow[] = new Array(n)
      for (let i = 0; i < n; i++) {
        out[i] = {
          raw_index: Number(d.raw_index![i]),
          instrument: d.instrument![i] as string,
          trade_id: hasTradeId ? ((d.trade_id![i] as string | undefined) ?? null) : null,
          side: (d.side![i] as string | undefined) ?? null,
          price: decodeDecimal16(d.price![i] as Uint8Array),
          size: decodeDecimal16(d.size![i] as Uint8Array),
          exchange_time: (d.exchange_time![i] as bigint | undefined) ?? null,
          receive_time: d.receive_time![i] as bigint,
        }
      }
      yield out
    }
  } finally {
    await f.close()
  }
}

/** The rows of a Parquet file, exactly (parquet-read's work; loaded only when a pipeline reads Parquet). */
import { parquetMetadataAsync, parquetScan, type FileMetaData, type SchemaElement } from 'hyparquet'
import { bigEndianSigned, decimalText } from '../codec/decimal-text.js'
import { RAW_TIMESTAMPS, ZSTD_DECOMPRESSORS, openParquetFile, topLevelElements } from '../codec/parquet-io.js'
import { PipeError, UsageError } from '../core/errors.js'
import { RowBatch, type Row, type RowValue } from '../core/items.js'
import { partFacts, READ_LIMITS } from '../formats/pack/tables/parquet-read.js'
import { formatTime } from '../formats/record/time.js'
import { DEFAULT_ROW_GROUP_BYTES } from './parquet-read.js'


/** Rows per batch given on: a row group is decoded whole, and handed on in slices of this many rows. */
const BATCH_ROWS = 8192

const NS_PER_UNIT = { MILLIS: 1_000_000n, MICROS: 1_000n, NANOS: 1n } as const

function isDecimal(e: SchemaElement): boolean {
  return e.converted_type === 'DECIMAL' || e.logical_type?.type === 'DECIMAL'
}

/** The unit of a timestamp column, or null when the column is no timestamp. */
function timestampUnit(e: SchemaElement): keyof typeof NS_PER_UNIT | null {
  if (e.logical_type?.type === 'TIMESTAMP') return e.logical_type.unit
  if (e.converted_type === 'TIMESTAMP_MILLIS') return 'MILLIS'
  if (e.converted_type === 'TIMESTAMP_MICROS') return 'MICROS'
  return null
}

/** Plain JSON from what a Parquet reader decoded (a JSON or nested value, a pack row): integers beyond 2^53 as text. */
export function plain(v: unknown): RowValue {
  if (v === null || v === undefined) return null
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) && BigInt(Number(v)) === v ? Number(v) : v.toString()
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v)
  if (typeof v === 'string' || typeof v === 'boolean') return v
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')
  if (v instanceof Date) return v.toISOString()
  if (Array.isArray(v)) return v.map(plain)
  return Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, plain(x)]))
}

/**
 * How one column's stored values become row values, exactly: a DECIMAL as its decimal text, a timestamp
 * (any unit) as record format v1's nanosecond text, an int64 beyond 2^53 as its decimal text, a non-finite
 * float as `NaN`/`Infinity` text (JSON has none), a DATE as `YYYY-MM-DD`, bytes as base64.
 */
function converterOf(e: SchemaElement): (v: unknown) => RowValue {
  if (isDecimal(e)) {
    const scale = e.scale ?? (e.logical_type?.type === 'DECIMAL' ? e.logical_type.scale : 0) ?? 0
    return (v) => {
      if (v === null || v === undefined) return null
      const unscaled = v instanceof Uint8Array ? bigEndianSigned(v) : BigInt(v as number | bigint)
      return decimalText(unscaled, scale)
    }
  }
  const unit = timestampUnit(e)
  if (unit) {
    return (v) => (v === null || v === undefined ? null : formatTime(BigInt(v as bigint | number) * NS_PER_UNIT[unit]))
  }
  if (e.converted_type === 'DATE' || e.logical_type?.type === 'DATE') {
    return (v) => (v === null || v === undefined ? null : v instanceof Date ? v.toISOString().slice(0, 10) : plain(v))
  }
  return plain
}


/**
 * The rows of the Parquet file at `path` (its `columns`, or all), a row group at a time in batches of at most
 * 8,192 rows; the file is opened and its schema checked before this returns, so a bad name fails at once.
 */
export async function openParquetRows(path: string, columns?: readonly string[], maxRowGroupBytes = DEFAULT_ROW_GROUP_BYTES): Promise<AsyncGenerator<RowBatch>> {
  const where = { location: { file: path } }
  // The pack reader's guards first (footer and page headers pre-scanned, sizes bounded before anything is
  // decoded), so that a hostile file is a one-line refusal, never a crash or a huge allocation.
  const guarded = await partFacts(path, { ...READ_LIMITS, partBytes: Number.MAX_SAFE_INTEGER, rowGroupBytes: maxRowGroupBytes }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') throw new UsageError('env.enoent', 'cannot read: no such file', where)
    throw err
  })
  if (!guarded.ok) {
    const f = guarded.findings[0]!
    if (/ENOENT|no such file/.test(f.detail)) throw new UsageError('env.enoent', 'cannot read: no such file', where)
    throw new PipeError(f.code, `not read: ${f.detail}`, where)
  }
  const unreadable = (err: unknown) => (err instanceof PipeError ? err : new PipeError('parquet.unreadable', `not a readable Parquet file: ${(err as Error).message}`, { ...where, cause: err }))
  const f = await openParquetFile(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') throw new UsageError('env.enoent', 'cannot read: no such file', where)
    throw unreadable(err)
  })
  try {
    const metadata = await parquetMetadataAsync(f.file, { parsers: RAW_TIMESTAMPS, geoparquet: false }).catch((err: unknown) => { throw unreadable(err) })
    const all = topLevelElements(metadata.schema)
    const nested = all.find((e) => (e.num_children ?? 0) > 0)
    const chosen = (columns ?? all.map((e) => e.name)).map((name) => {
      const e = all.find((c) => c.name === name)
      if (!e) throw new UsageError('usage.unknown-column', `no column "${name}" (it has ${all.map((c) => c.name).join(', ')})`, { location: { file: path, field: 'columns' } })
      if ((e.num_children ?? 0) > 0) throw new UsageError('usage.nested-column', `column "${name}" is a list or a group; parquet-read reads flat columns (name the others with "columns")`, { location: { file: path, field: 'columns' } })
      return e
    })
    if (!columns && nested) throw new UsageError('usage.nested-column', `column "${nested.name}" is a list or a group; parquet-read reads flat columns (name the others with "columns")`, { location: { file: path, field: 'columns' } })
    const convert = chosen.map(converterOf)
    // hyparquet turns DECIMAL into float64: without the annotation it hands over the stored value.
    const rawDecimals: FileMetaData = { ...metadata, schema: metadata.schema.map((e) => (isDecimal(e) ? { ...e, converted_type: undefined, logical_type: undefined } : e)) }
    return (async function* () {
      try {
        const scan = await parquetScan({ file: f.file, metadata: rawDecimals, columns: chosen.map((e) => e.name), compressors: ZSTD_DECOMPRESSORS, parsers: RAW_TIMESTAMPS, geoparquet: false }).catch((err: unknown) => { throw unreadable(err) })
        let rowStart = 0
        for (const group of metadata.row_groups) {
          const n = Number(group.num_rows)
          const data = []
          for (const e of chosen) {
            const values = await scan.readColumn({ column: e.name, rowStart, rowEnd: rowStart + n }).catch((err: unknown) => { throw unreadable(err) })
            if (values.length !== n) throw unreadable(new Error(`column ${e.name} has ${values.length} values in a row group of ${n} rows`))
            data.push(values)
          }
          const bytes = Number(group.total_byte_size)
          for (let from = 0; from < n; from += BATCH_ROWS) {
            const to = Math.min(n, from + BATCH_ROWS)
            const rows: Row[] = new Array(to - from)
            for (let r = from; r < to; r++) {
              const row: Record<string, RowValue> = {}
              for (let c = 0; c < chosen.length; c++) row[chosen[c]!.name] = convert[c]!(data[c]![r])
              rows[r - from] = row
            }
            yield new RowBatch(rows, Math.round((bytes * (to - from)) / n))
          }
          rowStart += n
        }
      } finally {
        await f.close()
      }
    })()
  } catch (err) {
    await f.close()
    throw err
  }
}

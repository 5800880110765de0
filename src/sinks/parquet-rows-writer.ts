/** The rows of parquet-write, encoded exactly (loaded only when a pipeline writes Parquet). */
import { randomBytes } from 'node:crypto'
import { open, rename, unlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { SchemaElement } from 'hyparquet'
import { ParquetWriter } from 'hyparquet-writer'
import { Compressor } from 'zstd-napi'
import { unscaledAt } from '../codec/decimal-text.js'
import { ParquetFileSink } from '../codec/parquet-io.js'
import { fsyncDir } from '../core/atomic-write.js'
import { PipeError, UsageError } from '../core/errors.js'
import type { RowBatch, RowValue } from '../core/items.js'
import { VERSION } from '../core/version.js'
import { decimalOf } from '../transforms/rows/row-values.js'
import { TABLE_COLUMNS } from '../formats/record/tables.js'
import { tryParseTime } from '../formats/record/time.js'
import type { TableName } from '../formats/record/types.js'
import { DECIMAL_TYPE, SCALAR_TYPES, type ColumnSpec } from './parquet-write.js'

/** Bytes of a FIXED_LEN_BYTE_ARRAY that hold every DECIMAL of `precision` digits, as Parquet's spec reckons them. */
const decimalBytes = (precision: number): number => {
  let n = 1
  while (2n ** BigInt(8 * n - 1) <= 10n ** BigInt(precision) - 1n) n++
  return n
}

function elementOf(c: ColumnSpec, where: string): SchemaElement {
  const repetition_type = c.optional ? 'OPTIONAL' : 'REQUIRED'
  const d = DECIMAL_TYPE.exec(c.type)
  if (d) {
    const precision = Number(d[1])
    const scale = Number(d[2])
    if (precision < 1 || precision > 38 || scale > precision) throw new UsageError('usage.bad-option', `${c.type}: a decimal needs 1 ≤ P ≤ 38 and S ≤ P`, { location: { field: where } })
    return { name: c.name, type: 'FIXED_LEN_BYTE_ARRAY', type_length: decimalBytes(precision), repetition_type, converted_type: 'DECIMAL', precision, scale, logical_type: { type: 'DECIMAL', precision, scale } }
  }
  switch (c.type as (typeof SCALAR_TYPES)[number]) {
    case 'string': return { name: c.name, type: 'BYTE_ARRAY', repetition_type, converted_type: 'UTF8', logical_type: { type: 'STRING' } }
    case 'int32': return { name: c.name, type: 'INT32', repetition_type }
    case 'int64': return { name: c.name, type: 'INT64', repetition_type }
    case 'double': return { name: c.name, type: 'DOUBLE', repetition_type }
    case 'boolean': return { name: c.name, type: 'BOOLEAN', repetition_type }
    case 'timestamp-ns': return { name: c.name, type: 'INT64', repetition_type, logical_type: { type: 'TIMESTAMP', unit: 'NANOS', isAdjustedToUTC: true } }
    case 'timestamp-us': return { name: c.name, type: 'INT64', repetition_type, logical_type: { type: 'TIMESTAMP', unit: 'MICROS', isAdjustedToUTC: true } }
    case 'timestamp-ms': return { name: c.name, type: 'INT64', repetition_type, logical_type: { type: 'TIMESTAMP', unit: 'MILLIS', isAdjustedToUTC: true } }
  }
}

const NS_PER_UNIT = { MILLIS: 1_000_000n, MICROS: 1_000n, NANOS: 1n } as const
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

/** An integer from a number or decimal text, exactly, or null. */
function integerOf(v: RowValue): bigint | null {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? BigInt(v) : null
  if (typeof v === 'string' && /^-?\d{1,20}$/.test(v)) return BigInt(v)
  return null
}

/**
 * How a row value becomes the column's stored value, or a reason it cannot, never rounded: a decimal from
 * its text or a number (exactly, within P digits and S places), a timestamp from record format v1's time
 * text (a finer time than the column's unit is refused, not truncated), an int64 from a safe integer or
 * integer text.
 */
function encoderOf(e: SchemaElement): (v: RowValue) => unknown {
  if (e.converted_type === 'DECIMAL') {
    const limit = 10n ** BigInt(e.precision!)
    return (v) => {
      const d = typeof v === 'string' || typeof v === 'number' ? decimalOf(v) : null
      if (!d) throw new Error('is not a decimal')
      const unscaled = unscaledAt(d, e.scale!)
      if (unscaled === null) throw new Error(`has more than ${e.scale} decimal places`)
      if (unscaled >= limit || unscaled <= -limit) throw new Error(`has more than ${e.precision} digits`)
      return unscaled
    }
  }
  if (e.logical_type?.type === 'TIMESTAMP') {
    const per = NS_PER_UNIT[e.logical_type.unit]
    return (v) => {
      const ns = typeof v === 'string' ? tryParseTime(v) : null
      if (ns === null) throw new Error('is not a time (2026-10-03T14:00:00.000000000Z)')
      if (ns % per !== 0n) throw new Error(`is finer than the column's ${e.logical_type!.type === 'TIMESTAMP' ? e.logical_type!.unit.toLowerCase() : ''}`)
      return ns / per
    }
  }
  switch (e.type) {
    case 'BYTE_ARRAY': return (v) => { if (typeof v !== 'string') throw new Error('is not a string'); return v }
    case 'INT32': return (v) => { if (typeof v !== 'number' || !Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) throw new Error('is not a 32-bit integer'); return v }
    case 'INT64': return (v) => {
      const n = integerOf(v)
      if (n === null || n < INT64_MIN || n > INT64_MAX) throw new Error('is not a 64-bit integer')
      return n
    }
    case 'DOUBLE': return (v) => { if (typeof v !== 'number') throw new Error('is not a number'); return v }
    case 'BOOLEAN': return (v) => { if (typeof v !== 'boolean') throw new Error('is not true or false'); return v }
    default: throw new Error(`unsupported column type ${e.type}`)
  }
}

export interface ParquetWriteOptions {
  path: string
  columns?: ColumnSpec[] | undefined
  table?: TableName | undefined
  rowGroupRows: number
  zstdLevel: number
}

/** parquet-write's sink: the schema checked, then rows written a row group at a time, the file landed atomically. */
export function writeParquetRows(o: ParquetWriteOptions): (source: AsyncIterable<unknown>) => Promise<void> {
  if ((o.columns === undefined) === (o.table === undefined)) throw new UsageError('usage.bad-option', 'give the schema as "columns" or as a record "table", one of the two', { location: { field: 'columns' } })
  const elements = o.table ? TABLE_COLUMNS[o.table].map((e) => ({ ...e })) : o.columns!.map((c, i) => elementOf(c, `columns[${i}].type`))
  const names = elements.map((e) => e.name)
  const twice = names.find((n, i) => names.indexOf(n) !== i)
  if (twice !== undefined) throw new UsageError('usage.bad-option', `column "${twice}" is named twice`, { location: { field: 'columns' } })
  const encoders = elements.map(encoderOf)
  const known = new Set(names)
  return async (source: AsyncIterable<unknown>) => {
    const temp = join(dirname(o.path), `.${basename(o.path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`)
    const fh = await open(temp, 'wx', 0o644)
    let landed = false
    try {
      const zstd = new Compressor()
      zstd.setParameters({ compressionLevel: o.zstdLevel })
      const sink = new ParquetFileSink(fh)
      const writer = new ParquetWriter({
        writer: sink,
        schema: [{ name: 'schema', num_children: elements.length }, ...elements] as never,
        codec: 'ZSTD',
        compressors: { ZSTD: (input: Uint8Array) => zstd.compress(input) },
        createdBy: `pipe ${VERSION}`,
      })
      let columns: unknown[][] = elements.map(() => [])
      let filled = 0
      let row = 0
      const flush = async () => {
        if (filled === 0) return
        await writer.write({ columnData: elements.map((e, c) => ({ name: e.name, data: columns[c]! })), rowGroupSize: filled })
        columns = elements.map(() => [])
        filled = 0
      }
      for await (const item of source) {
        for (const r of (item as RowBatch).rows) {
          row++
          for (const field in r) {
            if (!known.has(field)) throw new PipeError('rows.parquet-unknown-field', `field "${field}" is not a column (${names.join(', ')}): add it to the schema, or drop it with select`, { location: { row } })
          }
          for (let c = 0; c < elements.length; c++) {
            const e = elements[c]!
            const v = Object.hasOwn(r, e.name) ? r[e.name]! : null
            if (v === null) {
              if (e.repetition_type === 'REQUIRED') throw new PipeError('rows.parquet-value', `column "${e.name}" is required, and the row has no value for it`, { location: { row } })
              columns[c]!.push(null)
              continue
            }
            try {
              columns[c]!.push(encoders[c]!(v))
            } catch (err) {
              throw new PipeError('rows.parquet-value', `column "${e.name}": ${JSON.stringify(v).slice(0, 80)} ${(err as Error).message}`, { location: { row } })
            }
          }
          if (++filled === o.rowGroupRows) await flush()
        }
      }
      await flush()
      await writer.finish()
      await fh.sync()
      await fh.close()
      await rename(temp, o.path)
      landed = true
      await fsyncDir(dirname(o.path))
    } finally {
      if (!landed) {
        await fh.close().catch(() => undefined)
        await unlink(temp).catch(() => undefined)
      }
    }
  }
}

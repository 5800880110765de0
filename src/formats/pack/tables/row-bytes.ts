/**
 * Rows as bytes: the form a table's checked rows take between the thread that makes them and the part
 * writer's encoding thread (parquet-write.ts), and what NewRows keeps of a chunk and hashes. A batch is one
 * flat buffer: a fraction of its rows' objects, nothing for the garbage collector to trace, moved to the
 * encoding thread without a copy and read there straight into column chunks.
 *
 * A row is its schema's columns in order, each value as its type gives, depth first, little-endian:
 *
 *   nullable column or field   a byte: 0 for null (nothing follows), 1 before the value
 *   string, time               u32 byte length, then the UTF-8
 *   int32 / int64 / float64    i32 / i64 / f64 (a float64 -0 stays -0)
 *   bool                       a byte, 0 or 1
 *   list                       u32 element count, then the elements
 *   struct                     its fields in order
 *
 * Two rows have the same bytes exactly when they have the same RFC 8785 text, but for the sign of a zero
 * float64, which the text drops and the bytes keep (hashing, the writer may ask for zeros written +0). An
 * int64 is the same bytes as a number or a bigint. Rows are encoded after they are checked
 * (table-schemas.ts rowValidator): the encoder trusts their types.
 */
import type { PackType, TableSchema } from './table-schemas.js'

/** A batch of encoded rows of one table, as it moves to the encoding thread. */
export interface RowBatch {
  /** Row r at [r === 0 ? 0 : ends[r - 1], ends[r]). */
  bytes: Uint8Array
  ends: Int32Array
  /** Each row's RFC 8785 text length in UTF-8, which a row group's text limit counts. */
  textBytes: Float64Array
  /** Each row's first sort column as text (a part's first and last), when the batch was made with them. */
  keys: string[]
  rows: number
}

/** Where the generated encoder writes: a buffer that grows, and what the rows since reset held. */
class RowWriter {
  b: Buffer
  dv: DataView
  at = 0
  /** UTF-8 bytes beyond one per UTF-16 unit in the strings written since reset. */
  extra = 0
  /** Whether a float64 -0 was written since reset. */
  negativeZero = false

  constructor(bytes: number) {
    this.b = Buffer.allocUnsafeSlow(bytes)
    this.dv = new DataView(this.b.buffer)
  }

  /** Starts over in a buffer of its own, of the same size (the old one has been handed over). */
  renew(): void {
    this.b = Buffer.allocUnsafeSlow(this.b.length)
    this.dv = new DataView(this.b.buffer)
    this.at = 0
  }

  /** Room for `n` more bytes. */
  room(n: number): void {
    if (this.at + n <= this.b.length) return
    // Never from Node's shared pool: a batch's buffer moves to the encoding thread.
    const next = Buffer.allocUnsafeSlow(Math.max(this.at + n, this.b.length * 2))
    this.b.copy(next, 0, 0, this.at)
    this.b = next
    this.dv = new DataView(next.buffer)
  }

  str(s: string): void {
    const units = s.length
    this.room(4 + 3 * units)
    const b = this.b
    const start = this.at + 4
    let n = 0
    // A short string is copied by hand while it is ASCII: cheaper than a call into Buffer#write.
    if (units <= 64) while (n < units && s.charCodeAt(n) < 0x80) b[start + n] = s.charCodeAt(n++)
    if (n < units) n = b.write(s, start, 'utf8')
    this.dv.setUint32(this.at, n, true)
    this.at = start + n
    this.extra += n - units
  }

  u32(x: number): void {
    this.room(4)
    this.dv.setUint32(this.at, x, true)
    this.at += 4
  }

  i32(x: number): void {
    this.room(4)
    this.dv.setInt32(this.at, x, true)
    this.at += 4
  }

  /** An int64 as a number or a bigint: the same bytes (a number's two's complement from its high and low words). */
  i64(x: number | bigint): void {
    this.room(8)
    if (typeof x === 'bigint') this.dv.setBigInt64(this.at, x, true)
    else {
      const hi = Math.floor(x / 4294967296)
      this.dv.setUint32(this.at, x - hi * 4294967296, true)
      this.dv.setInt32(this.at + 4, hi, true)
    }
    this.at += 8
  }

  /** A float64; -0 as +0 when `zerosPositive`. */
  f64(x: number, zerosPositive: boolean): void {
    this.room(8)
    if (x === 0 && 1 / x < 0) {
      if (zerosPositive) x = 0
      else this.negativeZero = true
    }
    this.dv.setFloat64(this.at, x, true)
    this.at += 8
  }

  byte(x: number): void {
    this.room(1)
    this.b[this.at++] = x
  }
}

type Encode = (row: object, w: RowWriter, zerosPositive: boolean) => void

/** The encoder's source for the value in variable `v` of type `t`. */
function encodeSource(t: PackType, v: string, fresh: () => string): string {
  switch (t.kind) {
    case 'string':
    case 'time':
      return `W.str(${v});\n`
    case 'int32':
      return `W.i32(${v});\n`
    case 'int64':
      return `W.i64(${v});\n`
    case 'float64':
      return `W.f64(${v}, Z);\n`
    case 'bool':
      return `W.byte(${v} ? 1 : 0);\n`
    case 'list': {
      const i = fresh()
      const e = fresh()
      return `W.u32(${v}.length);\nfor (let ${i} = 0; ${i} < ${v}.length; ${i}++) {\nconst ${e} = ${v}[${i}];\n${encodeSource(t.element, e, fresh)}}\n`
    }
    case 'struct':
      return t.fields.map((f) => fieldSource(f.name, f.type, f.nullable, v, fresh)).join('')
  }
}

function fieldSource(name: string, type: PackType, nullable: boolean, parent: string, fresh: () => string): string {
  const x = fresh()
  const value = encodeSource(type, x, fresh)
  if (!nullable) return `{ const ${x} = ${parent}.${name};\n${value}}\n`
  return `{ const ${x} = ${parent}.${name};\nif (${x} === null || ${x} === undefined) W.byte(0);\nelse { W.byte(1);\n${value}} }\n`
}

const encoders = new WeakMap<TableSchema, Encode>()

/**
 * The schema's encoder: generated code with plain property reads, as the row check is (names are the
 * schema notation's identifiers, safe in code).
 */
function encoderOf(schema: TableSchema): Encode {
  let encode = encoders.get(schema)
  if (!encode) {
    let k = 0
    const fresh = () => `v${k++}`
    const body = schema.columns.map((c) => fieldSource(c.name, c.type, c.nullable, 'row', fresh)).join('')
    encode = new Function('row', 'W', 'Z', body) as Encode
    encoders.set(schema, encode)
  }
  return encode
}

/** Encoded rows gathered into a batch. */
export class RowBatchBuilder {
  private readonly encode: Encode
  private readonly firstSortColumn: string
  private readonly w: RowWriter
  private ends = new Int32Array(1024)
  private textBytes = new Float64Array(1024)
  private keys: string[] = []
  private readonly withKeys: boolean
  rows = 0

  /** `keys`: whether the batch gives each row's first sort column as text (else its `keys` are empty). */
  constructor(readonly schema: TableSchema, opts: { keys: boolean; initialBytes?: number }) {
    this.encode = encoderOf(schema)
    this.firstSortColumn = schema.sortColumns[0]!
    this.withKeys = opts.keys
    this.w = new RowWriter(opts.initialBytes ?? 1 << 20)
  }

  /** Bytes of the rows so far. */
  get byteLength(): number {
    return this.w.at
  }

  /**
   * Adds a checked row whose RFC 8785 text is `textBytes` of UTF-8. Returns what the last row's text is in
   * UTF-16 units (what JS's string length counts) and whether it holds a float64 -0.
   */
  add(row: object, textBytes: number): { textUnits: number; negativeZero: boolean } {
    const w = this.w
    w.extra = 0
    w.negativeZero = false
    this.encode(row, w, false)
    const r = this.rows++
    if (r >= this.ends.length) {
      this.ends = growTyped(this.ends, r + 1)
      this.textBytes = growTyped(this.textBytes, r + 1)
    }
    this.ends[r] = w.at
    this.textBytes[r] = textBytes
    if (this.withKeys) this.keys.push(String((row as Record<string, unknown>)[this.firstSortColumn]))
    return { textUnits: textBytes - w.extra, negativeZero: w.negativeZero }
  }

  /** Hands the batch over (its buffers to move) and starts an empty one with buffers of the same size. */
  take(): { batch: RowBatch; transfer: ArrayBuffer[] } {
    const w = this.w
    const batch: RowBatch = { bytes: w.b.subarray(0, w.at), ends: this.ends, textBytes: this.textBytes, keys: this.keys, rows: this.rows }
    const transfer = [w.b.buffer as ArrayBuffer, this.ends.buffer as ArrayBuffer, this.textBytes.buffer as ArrayBuffer]
    w.renew()
    this.ends = new Int32Array(this.ends.length)
    this.textBytes = new Float64Array(this.textBytes.length)
    this.keys = []
    this.rows = 0
    return { batch, transfer }
  }
}

/**
 * The bytes a row is hashed by (NewRows): as a batch encodes it, with zeros written +0, so that two rows
 * hash alike exactly when their RFC 8785 texts are the same. A scratch buffer, reused; the view it returns
 * is valid until the next call.
 */
export class RowHashBytes {
  private readonly encode: Encode
  private readonly w = new RowWriter(64 * 1024)

  constructor(schema: TableSchema) {
    this.encode = encoderOf(schema)
  }

  of(row: object): Uint8Array {
    const w = this.w
    w.at = 0
    this.encode(row, w, true)
    return w.b.subarray(0, w.at)
  }
}

function growTyped<T extends Int32Array | Float64Array>(a: T, need: number): T {
  const next = new (a.constructor as new (n: number) => T)(Math.max(need, a.length * 2))
  next.set(a as never)
  return next
}

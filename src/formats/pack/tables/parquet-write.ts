/**
 * The pack part writer ("Encodings" > Parquet tables; "Tables, indexes and parts"): rows of one table, in
 * runs of one partition each already in the table's order, become Parquet parts, the same rows always the
 * same bytes.
 *
 * What a part is: zstd level 9; Parquet 1.0 (v1) data pages; dictionary encoding where it helps (below);
 * statistics (min, max, null_count) on every column chunk, and a column index and an offset index on every
 * column chunk, one page or many; row groups of at most 16,384 rows and at most 32 MiB of row text (the rows'
 * RFC 8785 text, measured as rows are validated); parts closed before a row group would take them past 224
 * MiB; no key-value metadata; created_by `pipe-pack 1`; file version 1; sorting_columns naming the sort
 * columns.
 *
 * Why not hyparquet-writer's ParquetWriter: its column writer hard-wires v2 data pages, writes page indexes
 * only for chunks of two or more pages, and its generic Dremel walk and statistics took 44 s per million
 * pattern rows against DuckDB's 9.6 s. So the column chunks are assembled here, from a shredder generated
 * from the table's schema, and hyparquet-writer still does the encodings it is good at: the RLE/bit-packed
 * hybrid (levels, dictionary indexes), Thrift compact serialisation (page headers, page indexes), statistics
 * bytes with truncation, and the footer (`writeMetadata`). Rows are checked and encoded as bytes
 * (row-bytes.ts) on the caller's thread; batches of them move (their buffers transferred, not copied) to a
 * worker thread that shreds them into row groups, encodes, compresses and appends them to part files
 * (parquet-write-worker.ts).
 *
 * Dictionary rule (deterministic, per column chunk, not for booleans): going through a chunk's values in
 * order (strings while the chunk fills, numbers when it is encoded), its distinct values are kept until it
 * has more than 1,024 distinct values and they are more than half its values so far; then it is written
 * PLAIN. Otherwise it is dictionary-encoded (a PLAIN dictionary page in first-seen order, then
 * RLE_DICTIONARY pages) when the dictionary and its bit-packed indexes take at most half the bytes of its
 * PLAIN values, which is hyparquet-writer's own test.
 *
 * Pages end at a row boundary once they hold 1 MiB of PLAIN value bytes. Byte-array min/max in statistics
 * and column indexes are truncated to 64 bytes (a truncated max rounded up, and marked inexact in the
 * statistics). Memory stays at a few batches and one row group: at most two batches wait for the encoding
 * thread, which shreds rows into per-column buffers as it reads them.
 */
import { createHash, randomBytes, type Hash } from 'node:crypto'
import { open, readdir, unlink, type FileHandle } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { endianness } from 'node:os'
import { join } from 'node:path'
import type { ColumnChunk, ColumnIndex, Encoding, FileMetaData, OffsetIndex, RowGroup, SchemaElement, Statistics } from 'hyparquet'
import { ByteWriter } from 'hyparquet-writer'
import { serializeTCompactProtocol } from 'hyparquet-writer/src/thrift.js'
import { writeMetadata } from 'hyparquet-writer/src/metadata.js'
import { unconvertMinMax } from 'hyparquet-writer/src/unconvert.js'
import { PipeError } from '../../../core/errors.js'
import { OrderedJob, siblingWorkerUrl } from '../../../core/ordered-worker.js'
import { partitionFindings, rowComparator, rowValidator, WRITE_CODES, type PackField, type PackType, type RowFinding, type TableSchema } from './table-schemas.js'
import { RowBatchBuilder, type RowBatch } from './row-bytes.js'
import { writeRleHybrid } from './rle-hybrid.js'
import { decodedLeafBytes } from './parquet-limits.js'

export { WRITE_CODES }

// zstd-napi's binding is CommonJS, so require() loads it.
const zstdBinding = createRequire(import.meta.url)('zstd-napi/binding.js') as typeof import('zstd-napi/binding.js')
// hyparquet-writer carries its own hyparquet (1.31) whose metadata types differ from ours in details.
type WriterMetadata = Parameters<typeof writeMetadata>[1]
type WriterElement = Parameters<typeof unconvertMinMax>[1]

// PLAIN values are copied from typed arrays byte for byte, which is little-endian only on little-endian hosts.
if (endianness() !== 'LE') throw new Error('parquet-write: PLAIN encoding here assumes a little-endian host')

export const PACK_CREATED_BY = 'pipe-pack 1'
export const ZSTD_LEVEL = 9
export const MAX_ROW_GROUP_ROWS = 16_384
export const MAX_ROW_GROUP_TEXT_BYTES = 32 * 1024 * 1024
export const MAX_PART_BYTES = 224 * 1024 * 1024
const PAGE_VALUE_BYTES = 1024 * 1024
const STATISTICS_TRUNCATE_BYTES = 64
const DICTIONARY_GIVE_UP_DISTINCT = 1024

// ---------------------------------------------------------------------------------------------------
// Parquet schema
// ---------------------------------------------------------------------------------------------------

/** Plain physical types, no annotation: int32 and int64 are INT32 and INT64 as they are. */
const PHYSICAL = { int32: 'INT32', int64: 'INT64', bool: 'BOOLEAN', float64: 'DOUBLE' } as const

function elementsOf(field: { name: string; type: PackType; nullable: boolean }, out: SchemaElement[]): void {
  const repetition_type = field.nullable ? 'OPTIONAL' : 'REQUIRED'
  const t = field.type
  switch (t.kind) {
    case 'string':
    case 'time':
      out.push({ name: field.name, repetition_type, type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } })
      return
    case 'int32':
    case 'int64':
    case 'bool':
    case 'float64':
      out.push({ name: field.name, repetition_type, type: PHYSICAL[t.kind] })
      return
    case 'list':
      // The three-level list: <name> (LIST) > repeated group list > required element.
      out.push({ name: field.name, repetition_type, converted_type: 'LIST', logical_type: { type: 'LIST' }, num_children: 1 })
      out.push({ name: 'list', repetition_type: 'REPEATED', num_children: 1 })
      elementsOf({ name: 'element', type: t.element, nullable: false }, out)
      return
    case 'struct':
      out.push({ name: field.name, repetition_type, num_children: t.fields.length })
      for (const f of t.fields) elementsOf(f, out)
  }
}

/** The Parquet schema (root first) a part of `schema` is written with. */
export function parquetSchemaOf(schema: TableSchema): SchemaElement[] {
  const out: SchemaElement[] = [{ name: 'schema', num_children: schema.columns.length }]
  for (const f of schema.columns) elementsOf(f, out)
  return out
}

// ---------------------------------------------------------------------------------------------------
// Column buffers: one per leaf column, filled by the shredder, reused across row groups
// ---------------------------------------------------------------------------------------------------

type Physical = 'BYTE_ARRAY' | 'INT32' | 'INT64' | 'DOUBLE' | 'BOOLEAN'

function grow<T extends Uint8Array | Int32Array | Float64Array | BigInt64Array>(a: T, need: number): T {
  if (need <= a.length) return a
  const next = new (a.constructor as new (n: number) => T)(Math.max(need, a.length * 2))
  next.set(a as never)
  return next
}

/** A page's slots [s0, s1) and non-null values [v0, v1), and the rows that start in it. */
interface PageRange {
  s0: number
  s1: number
  v0: number
  v1: number
  rows: number
}

type LeafKind = PackType['kind']

/**
 * A leaf's repetition and definition levels, one slot per value or null. One class for every leaf, so that
 * the shredder's calls on it stay monomorphic (a method shared by the five leaf classes would not be).
 * Required scalar fields of one struct have the same levels and share one Levels (a pattern's cell i, j, k
 * and s): filled once, and encoded once a page (ChunkEncoder's levels cache).
 */
class Levels {
  slots = 0
  defs = new Uint8Array(1024)
  reps = new Uint8Array(1024)
  /** Counts the clears: encoded levels kept for one fill are not taken for the next. */
  fill = 0

  /** False for a required top-level column: it has no levels, its slots are its values. */
  constructor(readonly kept: boolean) {}

  clear(): void {
    this.slots = 0
    this.fill++
  }

  push(d: number, r: number): void {
    const s = this.slots++
    if (!this.kept) return
    if (s >= this.defs.length) {
      this.defs = grow(this.defs, s + 1)
      this.reps = grow(this.reps, s + 1)
    }
    this.defs[s] = d
    this.reps[s] = r
  }
}

abstract class Leaf {
  readonly kind: LeafKind
  readonly path: string[]
  readonly element: SchemaElement
  readonly maxDef: number
  readonly maxRep: number
  abstract readonly physical: Physical
  levels: Levels
  /** Non-null values in this row group. */
  values = 0

  constructor(kind: LeafKind, path: string[], element: SchemaElement, maxDef: number, maxRep: number) {
    this.kind = kind
    this.path = path
    this.element = element
    this.maxDef = maxDef
    this.maxRep = maxRep
    this.levels = new Levels(maxDef > 0 || maxRep > 0)
  }

  reset(): void {
    this.levels.clear()
    this.values = 0
  }

  /** Bytes of the non-null values [v0, v1) in PLAIN encoding. */
  abstract plainBytes(v0: number, v1: number): number
}

/** Leaves that may keep a dictionary while they fill. */
abstract class DictionaryLeaf extends Leaf {
  /** Dictionary index of each non-null value while `dictionary` is on. */
  indexes = new Int32Array(1024)
  dictionary = true
  distinct = 0

  protected noteIndex(i: number, index: number, isNew: boolean): void {
    if (i >= this.indexes.length) this.indexes = grow(this.indexes, i + 1)
    this.indexes[i] = index
    if (isNew && ++this.distinct > DICTIONARY_GIVE_UP_DISTINCT && this.distinct * 2 > i + 1) this.dropDictionary()
  }

  protected dropDictionary(): void {
    this.dictionary = false
  }

  override reset(): void {
    super.reset()
    this.dictionary = true
    this.distinct = 0
  }

  /** Makes the dictionary, for leaves that make it when the row group is encoded rather than while it fills. */
  prepare(): void {}

  /** PLAIN bytes of the dictionary's entries. */
  abstract dictionaryBytes(): number
  /** Writes the dictionary's entries PLAIN. */
  abstract writeDictionary(w: ByteWriter): void
}

type NumberArray = Int32Array | BigInt64Array | Float64Array

/** Fixed-width numbers: every value in `data`, and while the dictionary is on, its distinct values in `entries`. */
abstract class NumberLeaf<A extends NumberArray> extends DictionaryLeaf {
  abstract data: A
  protected abstract entries: A
  protected abstract readonly width: 4 | 8
  protected readonly lookup = new Map<unknown, number>()

  /** The value as `data` stores it. */
  protected abstract convert(v: unknown): A[number]

  /** The value's key in `lookup`: itself, unless two values would be one Map key. */
  protected key(x: A[number]): unknown {
    return x
  }

  /** The value's dictionary index, or -1. */
  protected find(x: A[number]): number {
    return this.lookup.get(this.key(x)) ?? -1
  }

  protected remember(x: A[number], index: number): void {
    this.lookup.set(this.key(x), index)
  }

  add(v: unknown): void {
    const i = this.values++
    if (i >= this.data.length) this.data = grow(this.data, i + 1)
    this.data[i] = this.convert(v)
  }

  /**
   * Numbers get their dictionary on the encoding thread, from the values in order, by the same rule as
   * strings while they fill: shredding, on the caller's thread, only stores them.
   */
  override prepare(): void {
    this.forget()
    for (let i = 0; i < this.values && this.dictionary; i++) {
      const x = this.data[i]!
      const index = this.find(x)
      this.noteIndex(i, index < 0 ? this.newEntry(x) : index, index < 0)
    }
  }

  /** Makes `x` the dictionary's next entry; returns its index. */
  protected newEntry(x: A[number]): number {
    const index = this.distinct
    this.remember(x, index)
    this.entries = grow(this.entries, index + 1)
    this.entries[index] = x
    return index
  }

  override reset(): void {
    super.reset()
    this.forget()
  }

  protected override dropDictionary(): void {
    super.dropDictionary()
    this.forget()
  }

  protected forget(): void {
    this.lookup.clear()
  }

  plainBytes(v0: number, v1: number): number {
    return (v1 - v0) * this.width
  }

  dictionaryBytes(): number {
    return this.distinct * this.width
  }

  writeDictionary(w: ByteWriter): void {
    appendTyped(w, this.entries, 0, this.distinct, this.width)
  }
}

/** Small integers (cell coordinates, states, counts) find their dictionary entry in a table, not a Map. */
const SMALL_INT = 1024

class Int32Leaf extends NumberLeaf<Int32Array> {
  readonly physical = 'INT32'
  protected readonly width = 4
  data = new Int32Array(1024)
  protected entries = new Int32Array(256)
  /** Dictionary index + 1 of each value in [-SMALL_INT, SMALL_INT), 0 when not yet seen. */
  private readonly small = new Int32Array(2 * SMALL_INT)

  protected convert(v: unknown): number {
    return v as number
  }

  // NumberLeaf's loop with the small-integer table read in place: there, shared by three classes, the field
  // reads and the find call are polymorphic, and int32 values (a pattern's cells) are most of the values.
  override prepare(): void {
    this.forget()
    const { data, small } = this
    for (let i = 0; i < this.values && this.dictionary; i++) {
      const x = data[i]!
      const index = x >= -SMALL_INT && x < SMALL_INT ? small[x + SMALL_INT]! - 1 : super.find(x)
      this.noteIndex(i, index < 0 ? this.newEntry(x) : index, index < 0)
    }
  }

  protected override find(x: number): number {
    return x >= -SMALL_INT && x < SMALL_INT ? this.small[x + SMALL_INT]! - 1 : super.find(x)
  }

  protected override remember(x: number, index: number): void {
    if (x >= -SMALL_INT && x < SMALL_INT) this.small[x + SMALL_INT] = index + 1
    else super.remember(x, index)
  }

  protected override forget(): void {
    super.forget()
    this.small.fill(0)
  }
}

class Int64Leaf extends NumberLeaf<BigInt64Array> {
  readonly physical = 'INT64'
  protected readonly width = 8
  data = new BigInt64Array(1024)
  protected entries = new BigInt64Array(256)

  protected convert(v: unknown): bigint {
    return typeof v === 'bigint' ? v : BigInt(v as number)
  }
}

class DoubleLeaf extends NumberLeaf<Float64Array> {
  readonly physical = 'DOUBLE'
  protected readonly width = 8
  data = new Float64Array(1024)
  protected entries = new Float64Array(256)

  protected convert(v: unknown): number {
    return v as number
  }

  // -0 and 0 are two entries, which a Map takes for one key.
  protected override key(x: number): unknown {
    return Object.is(x, -0) ? '-0' : x
  }
}

class BooleanLeaf extends Leaf {
  readonly physical = 'BOOLEAN'
  data = new Uint8Array(1024)

  add(v: unknown): void {
    const i = this.values++
    if (i >= this.data.length) this.data = grow(this.data, i + 1)
    this.data[i] = v ? 1 : 0
  }

  plainBytes(v0: number, v1: number): number {
    return Math.ceil((v1 - v0) / 8)
  }
}

/**
 * Strings as UTF-8. With the dictionary on, only distinct strings are stored (in `dictBytes`) and each value
 * is an index; when the dictionary is dropped, the values so far are written out into `bytes`, as PLAIN
 * pages hold them, so that a page's values are one copy (a copy a value was most of writing a page of ids
 * or identities).
 */
class StringLeaf extends DictionaryLeaf {
  readonly physical = 'BYTE_ARRAY'
  /**
   * PLAIN mode: every value as PLAIN encodes it, its length (u32, little-endian) then its UTF-8; value i at
   * [plainStart(i), ends[i]), its UTF-8 from valueStart(i).
   */
  bytes: Buffer = Buffer.allocUnsafeSlow(64 * 1024)
  ends = new Int32Array(1024)
  /** Dictionary mode: the distinct strings' UTF-8, entry e at [dictEnds[e-1], dictEnds[e]). */
  dictBytes: Buffer = Buffer.allocUnsafeSlow(16 * 1024)
  dictEnds = new Int32Array(256)
  private readonly lookup = new Map<string, number>()
  /** PLAIN bytes of all values so far (4-byte lengths included), for the dictionary test and page cuts. */
  totalPlain = 0

  /** The entry of the value added last, which most values of a column that repeats equal. */
  private last = -1

  /** Adds the UTF-8 string src[start, end). */
  add(src: Buffer, start: number, end: number): void {
    const i = this.values++
    if (!this.dictionary) {
      this.append(src, start, end, i)
      return
    }
    let index = this.last
    let isNew = false
    if (index < 0 || !this.isEntry(index, src, start, end)) {
      // An entry's key is its bytes as Latin-1: one character a byte, so equal keys are equal bytes.
      const key = src.toString('latin1', start, end)
      const found = this.lookup.get(key)
      if (found === undefined) {
        isNew = true
        index = this.distinct
        this.lookup.set(key, index)
        const at = this.entryStart(index)
        if (at + end - start > this.dictBytes.length) this.dictBytes = growBuffer(this.dictBytes, at + end - start)
        this.dictEnds = grow(this.dictEnds, index + 1)
        this.dictEnds[index] = at + src.copy(this.dictBytes, at, start, end)
      } else index = found
    }
    this.last = index
    this.totalPlain += 4 + end - start
    this.noteIndex(i, index, isNew)
  }

  private isEntry(e: number, src: Buffer, start: number, end: number): boolean {
    const at = this.entryStart(e)
    if (this.dictEnds[e]! - at !== end - start) return false
    const d = this.dictBytes
    for (let k = 0; k < end - start; k++) if (d[at + k] !== src[start + k]) return false
    return true
  }

  private append(src: Buffer, start: number, end: number, i: number): void {
    const n = end - start
    const at = this.plainStart(i)
    if (at + 4 + n > this.bytes.length) this.bytes = growBuffer(this.bytes, at + 4 + n)
    if (i >= this.ends.length) this.ends = grow(this.ends, i + 1)
    const b = this.bytes
    putPlainLength(b, at, n)
    // A short value byte by byte: Buffer#copy checks its arguments in JS, which cost more than copying an
    // id or a picture.
    if (n <= 64) for (let k = 0; k < n; k++) b[at + 4 + k] = src[start + k]!
    else src.copy(b, at + 4, start, end)
    this.ends[i] = at + 4 + n
    this.totalPlain += 4 + n
  }

  entryStart(e: number): number {
    return e === 0 ? 0 : this.dictEnds[e - 1]!
  }

  entryLength(e: number): number {
    return this.dictEnds[e]! - this.entryStart(e)
  }

  /** Where PLAIN value i's length is. */
  plainStart(i: number): number {
    return i === 0 ? 0 : this.ends[i - 1]!
  }

  /** Where PLAIN value i's UTF-8 is. */
  valueStart(i: number): number {
    return this.plainStart(i) + 4
  }

  protected override dropDictionary(): void {
    // The value just added is already counted in `values` and has its index; copy every value out.
    const n = this.values
    let used = 0
    for (let i = 0; i < n; i++) used += 4 + this.entryLength(this.indexes[i]!)
    if (used > this.bytes.length) this.bytes = growBuffer(this.bytes, used)
    this.ends = grow(this.ends, n)
    let at = 0
    for (let i = 0; i < n; i++) {
      const e = this.indexes[i]!
      putPlainLength(this.bytes, at, this.entryLength(e))
      at += 4 + this.dictBytes.copy(this.bytes, at + 4, this.entryStart(e), this.dictEnds[e]!)
      this.ends[i] = at
    }
    super.dropDictionary()
    this.lookup.clear()
    this.last = -1
  }

  override reset(): void {
    super.reset()
    this.lookup.clear()
    this.last = -1
    this.totalPlain = 0
  }

  plainBytes(v0: number, v1: number): number {
    if (!this.dictionary) return this.plainStart(v1) - this.plainStart(v0)
    let n = 0
    for (let i = v0; i < v1; i++) n += 4 + this.entryLength(this.indexes[i]!)
    return n
  }

  dictionaryBytes(): number {
    return this.distinct * 4 + this.entryStart(this.distinct)
  }

  writeDictionary(w: ByteWriter): void {
    for (let e = 0; e < this.distinct; e++) appendByteArray(w, this.dictBytes, this.entryStart(e), this.dictEnds[e]!)
  }
}

/** A PLAIN byte array's length (u32, little-endian) at `b[at]`; by hand, where Buffer#writeUInt32LE checks its arguments a value. */
function putPlainLength(b: Uint8Array, at: number, n: number): void {
  b[at] = n & 0xff
  b[at + 1] = (n >>> 8) & 0xff
  b[at + 2] = (n >>> 16) & 0xff
  b[at + 3] = n >>> 24
}

function growBuffer(b: Buffer, need: number): Buffer {
  const next = Buffer.allocUnsafeSlow(Math.max(need, b.length * 2))
  b.copy(next)
  return next
}

function appendTyped(w: ByteWriter, a: Int32Array | Float64Array | BigInt64Array, start: number, end: number, width: number): void {
  const n = (end - start) * width
  w.ensure(n)
  new Uint8Array(w.buffer, w.index, n).set(new Uint8Array(a.buffer, a.byteOffset + start * width, n))
  w.index += n
  w.offset += n
}

function appendByteArray(w: ByteWriter, src: Buffer, start: number, end: number): void {
  const n = end - start
  w.ensure(4 + n)
  w.view.setUint32(w.index, n, true)
  new Uint8Array(w.buffer, w.index + 4, n).set(src.subarray(start, end))
  w.index += 4 + n
  w.offset += 4 + n
}

/** Writes src[start, end) as a PLAIN byte array at `out[at]` (room made); gives the end. */
function putByteArray(out: Uint8Array, view: DataView, at: number, src: Buffer, start: number, end: number): number {
  const n = end - start
  view.setUint32(at, n, true)
  at += 4
  // Short values byte by byte, as StringLeaf copies them; longer ones natively, without a view.
  if (n <= 64) for (let k = 0; k < n; k++) out[at + k] = src[start + k]!
  else src.copy(out, at, start, end)
  return at + n
}

// ---------------------------------------------------------------------------------------------------
// Shredder: a row's bytes (row-bytes.ts) to the leaves' levels and values (Dremel), compiled from the schema
// ---------------------------------------------------------------------------------------------------

function makeLeaf(kind: LeafKind, path: string[], element: SchemaElement, maxDef: number, maxRep: number): Leaf {
  switch (kind) {
    case 'string':
    case 'time':
      return new StringLeaf(kind, path, element, maxDef, maxRep)
    case 'int32':
      return new Int32Leaf(kind, path, element, maxDef, maxRep)
    case 'int64':
      return new Int64Leaf(kind, path, element, maxDef, maxRep)
    case 'float64':
      return new DoubleLeaf(kind, path, element, maxDef, maxRep)
    default:
      return new BooleanLeaf(kind, path, element, maxDef, maxRep)
  }
}

interface ShredBuild {
  leaves: Leaf[]
  elements: SchemaElement[]
  /** Position in `elements` (preorder, root at 0) of the next field's element. */
  at: number
  vars: number
  /** Leaves whose levels are an earlier sibling's (Levels). */
  borrowsLevels: Set<number>
}

/** Reads a scalar of row-bytes.ts at `p` (in `b`, a Buffer, and `dv`, its DataView) into leaf n, and moves `p` past it. */
function readScalar(kind: LeafKind, n: number): string {
  switch (kind) {
    case 'string':
    case 'time':
      return `{ const len = dv.getUint32(p, true); L${n}.add(b, p + 4, p + 4 + len); p += 4 + len; }`
    case 'int32':
      return `L${n}.add(dv.getInt32(p, true)); p += 4;`
    case 'int64':
      return `L${n}.add(dv.getBigInt64(p, true)); p += 8;`
    case 'float64':
      return `L${n}.add(dv.getFloat64(p, true)); p += 8;`
    default:
      return `L${n}.add(b[p++] === 1);`
  }
}

/**
 * Generates the code that shreds one field's value, read from the row's bytes at `p`. Whether each
 * ancestor is present is known where the code runs, so definition levels are constants: `def` is the
 * parent's (a nullable field adds one, a list's repeated group one more); `repExpr` is a JS expression for
 * the repetition level of the value's first leaf slot. Returns the code and the field's leaves' numbers
 * (for null subtrees).
 */
function shredSource(field: PackField, parentPath: string[], def: number, rep: number, repExpr: string, b: ShredBuild): { code: string; leaves: number[] } {
  const element = b.elements[b.at++]!
  const path = [...parentPath, field.name]
  const own = def + (field.nullable ? 1 : 0)
  const t = field.type
  let present: string
  let leaves: number[]
  if (t.kind === 'list') {
    b.at++ // the repeated group `list`
    const i = `i${b.vars++}`
    const count = `n${b.vars++}`
    const r = `r${b.vars++}`
    const inner = shredSource({ name: 'element', type: t.element, nullable: false }, [...path, 'list'], own + 1, rep + 1, r, b)
    leaves = inner.leaves
    present =
      `const ${count} = dv.getUint32(p, true); p += 4;\n` +
      `if (${count} === 0) { ${nulls(leaves, own, repExpr, b)} }\n` +
      `else for (let ${i} = 0; ${i} < ${count}; ${i}++) {\n  const ${r} = ${i} === 0 ? ${repExpr} : ${rep + 1};\n${inner.code}}\n`
  } else if (t.kind === 'struct') {
    present = ''
    leaves = []
    let levelsOwner: number | undefined
    for (const f of t.fields) {
      const sharesLevels = !f.nullable && f.type.kind !== 'list' && f.type.kind !== 'struct'
      // Marked before its code is made: its own leaf is the next one.
      if (sharesLevels && levelsOwner !== undefined) b.borrowsLevels.add(b.leaves.length)
      const child = shredSource(f, path, own, rep, repExpr, b)
      present += child.code
      leaves.push(...child.leaves)
      if (!sharesLevels) continue
      if (levelsOwner === undefined) levelsOwner = child.leaves[0]!
      else b.leaves[child.leaves[0]!]!.levels = b.leaves[levelsOwner]!.levels
    }
  } else {
    const n = b.leaves.length
    b.leaves.push(makeLeaf(t.kind, path, element, own, rep))
    leaves = [n]
    present = `${pushLevels(n, own, repExpr, b)} ${readScalar(t.kind, n)}\n`
  }
  const code = field.nullable ? `if (b[p++] === 0) { ${nulls(leaves, def, repExpr, b)} }\nelse {\n${present}}\n` : present
  return { code, leaves }
}

/** Leaf n's levels push, none for a leaf whose levels are a sibling's (pushed by the sibling). */
function pushLevels(n: number, def: number, repExpr: string, b: ShredBuild): string {
  return b.borrowsLevels.has(n) ? '' : `LV${n}.push(${def}, ${repExpr});`
}

function nulls(leaves: readonly number[], def: number, repExpr: string, b: ShredBuild): string {
  return leaves.map((n) => pushLevels(n, def, repExpr, b)).join(' ')
}

interface Shredder {
  leaves: Leaf[]
  /** Shreds the row whose bytes start at `at` in `bytes` (`view` over the same bytes). */
  shredRow(bytes: Buffer, view: DataView, at: number): void
}

/**
 * The shredder of a schema: one generated function writing each leaf's levels and values (Dremel). As with
 * the row check in table-schemas.ts, generated code with a constant leaf per call site is several times
 * faster than closures; the names in it are L<n> and LV<n> for the leaves and their levels.
 */
function compileShredder(schema: TableSchema, elements: SchemaElement[]): Shredder {
  const b: ShredBuild = { leaves: [], elements, at: 1, vars: 0, borrowsLevels: new Set() }
  let body = ''
  for (const f of schema.columns) body += shredSource(f, [], 0, 0, '0', b).code
  const leafNames = b.leaves.map((_, n) => `L${n} = leaves[${n}], LV${n} = leaves[${n}].levels`).join(', ')
  const make = new Function('leaves', `const ${leafNames};\nreturn function shredRow(b, dv, p) {\n${body}}`) as (leaves: Leaf[]) => Shredder['shredRow']
  return { leaves: b.leaves, shredRow: make(b.leaves) }
}

// ---------------------------------------------------------------------------------------------------
// Column chunk encoding
// ---------------------------------------------------------------------------------------------------

const PAGE_TYPE = { DATA_PAGE: 0, DICTIONARY_PAGE: 2 } as const
const ENCODING = { PLAIN: 0, RLE: 3, RLE_DICTIONARY: 8 } as const

/** A chunk as encoded into a row group buffer; offsets relative to the buffer's start until placed. */
interface EncodedChunk {
  chunk: ColumnChunk
  columnIndex: ColumnIndex
  offsetIndex: OffsetIndex
}

type MinMax = number | bigint | boolean | Uint8Array

interface PageStats {
  min: MinMax | undefined
  max: MinMax | undefined
  nulls: number
}

function bitWidth(max: number): number {
  return max === 0 ? 0 : 32 - Math.clz32(max)
}

/** Encodes one row group's column chunks; reuses its scratch buffers across chunks. */
class ChunkEncoder {
  private readonly zstd = new zstdBinding.CCtx()
  /**
   * Where pages are compressed, kept as large as the largest page's bound: Compressor#compress made a
   * buffer of that bound for each page larger than 96 KiB, and a trimmed copy of its output. Megabytes of
   * fresh buffers a row group kept the thread's collector marking (74 full collections a publish of a
   * million patterns, 65 without them).
   */
  private compressed: Uint8Array = new Uint8Array(1 << 20)
  private readonly body = new ByteWriter(1 << 20)
  /** The encoded levels of the last Levels encoded, by page start, for its fill (writePageLevels). */
  private readonly levelsCache: { levels: Levels | undefined; fill: number; pages: Map<number, { s1: number; bytes: Uint8Array }> } = { levels: undefined, fill: -1, pages: new Map() }
  /**
   * The pages of the last leaf of numbers or booleans cut (pages), for its Levels' fill, width and maximum
   * definition level: the fields of a struct that share their levels (a cell's i, j, k and s) and their
   * width have the same pages, and cutting them was a pass over every slot (11 million for a million
   * patterns' cells) for each.
   */
  private readonly pagesCache: { levels: Levels | undefined; fill: number; width: number; maxDef: number; pages: PageRange[] } = { levels: undefined, fill: -1, width: 0, maxDef: 0, pages: [] }

  constructor() {
    this.zstd.setParameter(zstdBinding.CParameter.compressionLevel, ZSTD_LEVEL)
  }

  encode(leaf: Leaf, out: ByteWriter): EncodedChunk {
    const chunkStart = out.offset
    let uncompressed = 0
    if (leaf instanceof DictionaryLeaf) leaf.prepare()
    const useDictionary = leaf instanceof DictionaryLeaf && this.dictionaryHelps(leaf)
    let dictionaryOffset: bigint | undefined
    if (useDictionary) {
      dictionaryOffset = BigInt(out.offset)
      this.reset(this.body)
      leaf.writeDictionary(this.body)
      uncompressed += this.writePage(out, PAGE_TYPE.DICTIONARY_PAGE, { field_1: leaf.distinct, field_2: ENCODING.PLAIN })
    }
    const dataOffset = BigInt(out.offset)
    const pages = this.pages(leaf, useDictionary)
    const columnIndex: ColumnIndex = { null_pages: [], min_values: [], max_values: [], boundary_order: 'UNORDERED', null_counts: [] }
    const offsetIndex: OffsetIndex = { page_locations: [] }
    const element = leaf.element as WriterElement
    let firstRow = 0
    const pageMins: MinMax[] = []
    const pageMaxs: MinMax[] = []
    let chunkMin: MinMax | undefined
    let chunkMax: MinMax | undefined
    let nulls = 0
    for (const p of pages) {
      const pageOffset = out.offset
      this.reset(this.body)
      this.writeLevelsAndValues(leaf, p, useDictionary)
      uncompressed += this.writePage(out, PAGE_TYPE.DATA_PAGE, {
        field_1: p.s1 - p.s0,
        field_2: useDictionary ? ENCODING.RLE_DICTIONARY : ENCODING.PLAIN,
        field_3: ENCODING.RLE,
        field_4: ENCODING.RLE,
      })
      const stats = this.pageStats(leaf, p, useDictionary)
      nulls += stats.nulls
      if (stats.min !== undefined && (chunkMin === undefined || compareMinMax(stats.min, chunkMin) < 0)) chunkMin = stats.min
      if (stats.max !== undefined && (chunkMax === undefined || compareMinMax(stats.max, chunkMax) > 0)) chunkMax = stats.max
      const minBytes = unconvertMinMax(stats.min, element, false, STATISTICS_TRUNCATE_BYTES)
      const maxBytes = unconvertMinMax(stats.max, element, true, STATISTICS_TRUNCATE_BYTES)
      columnIndex.null_pages.push(stats.min === undefined)
      columnIndex.min_values.push(minBytes ?? new Uint8Array(0))
      columnIndex.max_values.push(maxBytes ?? new Uint8Array(0))
      if (stats.min !== undefined && stats.max !== undefined) {
        // Byte arrays are ordered as stored (truncated), other types by value.
        pageMins.push(stats.min instanceof Uint8Array ? minBytes! : stats.min)
        pageMaxs.push(stats.max instanceof Uint8Array ? maxBytes! : stats.max)
      }
      columnIndex.null_counts!.push(BigInt(stats.nulls))
      offsetIndex.page_locations.push({ offset: BigInt(pageOffset), compressed_page_size: out.offset - pageOffset, first_row_index: BigInt(firstRow) })
      firstRow += p.rows
    }
    columnIndex.boundary_order = boundaryOrder(pageMins, pageMaxs)
    const statistics: Statistics = { null_count: BigInt(nulls) }
    if (chunkMin !== undefined) statistics.min_value = normaliseZero(chunkMin, false)
    if (chunkMax !== undefined) statistics.max_value = normaliseZero(chunkMax, true)
    const hasLevels = leaf.maxDef > 0 || leaf.maxRep > 0
    const encodings: Encoding[] = ['PLAIN', ...(hasLevels ? (['RLE'] as const) : []), ...(useDictionary ? (['RLE_DICTIONARY'] as const) : [])]
    const chunk: ColumnChunk = {
      file_offset: BigInt(chunkStart),
      meta_data: {
        type: leaf.physical,
        encodings,
        path_in_schema: leaf.path,
        codec: 'ZSTD',
        num_values: BigInt(leaf.levels.slots),
        total_uncompressed_size: BigInt(uncompressed),
        total_compressed_size: BigInt(out.offset - chunkStart),
        data_page_offset: dataOffset,
        ...(dictionaryOffset !== undefined ? { dictionary_page_offset: dictionaryOffset } : {}),
        statistics,
        encoding_stats: [
          ...(useDictionary ? [{ page_type: 'DICTIONARY_PAGE' as const, encoding: 'PLAIN' as const, count: 1 }] : []),
          { page_type: 'DATA_PAGE' as const, encoding: useDictionary ? ('RLE_DICTIONARY' as const) : ('PLAIN' as const), count: pages.length },
        ],
      },
    }
    return { chunk, columnIndex, offsetIndex }
  }

  private dictionaryHelps(leaf: DictionaryLeaf): boolean {
    if (!leaf.dictionary || leaf.values === 0) return false
    const plain = leaf instanceof StringLeaf ? leaf.totalPlain : leaf.plainBytes(0, leaf.values)
    const indexes = Math.ceil((leaf.values * bitWidth(leaf.distinct - 1)) / 8)
    return 2 * (leaf.dictionaryBytes() + indexes) <= plain
  }

  /** Cuts the chunk into pages at row starts once a page holds PAGE_VALUE_BYTES of PLAIN values. */
  private pages(leaf: Leaf, dictionary: boolean): PageRange[] {
    const width = leaf.physical === 'BOOLEAN' ? 0.125 : leaf.physical === 'INT32' ? 4 : 8
    const strings = leaf instanceof StringLeaf ? leaf : undefined
    const cache = this.pagesCache
    const { levels, maxDef } = leaf
    if (!strings && cache.levels === levels && cache.fill === levels.fill && cache.width === width && cache.maxDef === maxDef) return cache.pages
    const pages: PageRange[] = []
    const flat = leaf.maxRep === 0
    let s0 = 0
    let v0 = 0
    let v = 0
    let rows = 0
    let bytes = 0
    // A value's PLAIN bytes: a string's length (its dictionary entry's or its own, from a list of ends),
    // else the type's width. What the loop reads is taken out of the leaf first: reading it from the leaf
    // each slot made this loop most of encode's own time.
    const fromEntries = strings !== undefined && (dictionary || strings.dictionary)
    const ends = strings === undefined ? undefined : fromEntries ? strings.dictEnds : strings.ends
    const indexes = fromEntries ? strings!.indexes : undefined
    // A dictionary entry is its UTF-8 alone; a PLAIN value holds its length too.
    const lengthBytes = fromEntries ? 4 : 0
    const { slots, defs, reps } = levels
    for (let s = 0; s < slots; s++) {
      const rowStart = flat || reps[s] === 0
      if (rowStart && bytes >= PAGE_VALUE_BYTES && s > s0) {
        pages.push({ s0, s1: s, v0, v1: v, rows })
        s0 = s
        v0 = v
        rows = 0
        bytes = 0
      }
      if (rowStart) rows++
      if (maxDef === 0 || defs[s] === maxDef) {
        if (ends) {
          const e = indexes ? indexes[v]! : v
          bytes += lengthBytes + ends[e]! - (e === 0 ? 0 : ends[e - 1]!)
        } else bytes += width
        v++
      }
    }
    if (slots > s0 || pages.length === 0) pages.push({ s0, s1: slots, v0, v1: v, rows })
    if (!strings) Object.assign(cache, { levels, fill: levels.fill, width, maxDef, pages })
    return pages
  }

  private writeLevelsAndValues(leaf: Leaf, p: PageRange, dictionary: boolean): void {
    const w = this.body
    this.writePageLevels(leaf, p)
    if (dictionary) {
      const d = leaf as DictionaryLeaf
      const width = bitWidth(d.distinct - 1)
      w.appendUint8(width)
      writeRleHybrid(w, d.indexes.subarray(p.v0, p.v1), width)
      return
    }
    if (leaf instanceof StringLeaf) {
      // The page's room at once and one view of it: two views a value (appendByteArray's) were half of the
      // part writer's garbage.
      w.ensure(leaf.plainBytes(p.v0, p.v1))
      const out = new Uint8Array(w.buffer)
      let at = w.index
      // A chunk that kept its dictionary while filling but is written PLAIN has its strings there.
      if (leaf.dictionary) {
        for (let i = p.v0; i < p.v1; i++) {
          const e = leaf.indexes[i]!
          at = putByteArray(out, w.view, at, leaf.dictBytes, leaf.entryStart(e), leaf.dictEnds[e]!)
        }
      } else {
        // Held as PLAIN writes them: one copy.
        const from = leaf.plainStart(p.v0)
        const to = leaf.plainStart(p.v1)
        out.set(leaf.bytes.subarray(from, to), at)
        at += to - from
      }
      w.offset += at - w.index
      w.index = at
    } else if (leaf instanceof BooleanLeaf) {
      const n = p.v1 - p.v0
      const packed = new Uint8Array(Math.ceil(n / 8))
      for (let i = 0; i < n; i++) if (leaf.data[p.v0 + i]) packed[i >> 3]! |= 1 << (i & 7)
      w.appendBytes(packed)
    } else {
      const typed = leaf as Int32Leaf | Int64Leaf | DoubleLeaf
      appendTyped(w, typed.data, p.v0, p.v1, typed.physical === 'INT32' ? 4 : 8)
    }
  }

  /**
   * A page's levels, repetition then definition, at the start of the body; a leaf that shares its levels
   * with the sibling encoded before it (Levels) copies the sibling's bytes for the same slots.
   */
  private writePageLevels(leaf: Leaf, p: PageRange): void {
    if (leaf.maxRep === 0 && leaf.maxDef === 0) return
    const levels = leaf.levels
    const cache = this.levelsCache
    if (cache.levels !== levels || cache.fill !== levels.fill) {
      cache.levels = levels
      cache.fill = levels.fill
      cache.pages.clear()
    }
    const known = cache.pages.get(p.s0)
    if (known && known.s1 === p.s1) {
      this.body.appendBytes(known.bytes)
      return
    }
    if (leaf.maxRep > 0) this.writeLevels(levels.reps.subarray(p.s0, p.s1), leaf.maxRep)
    if (leaf.maxDef > 0) this.writeLevels(levels.defs.subarray(p.s0, p.s1), leaf.maxDef)
    cache.pages.set(p.s0, { s1: p.s1, bytes: this.body.getBytes().slice() })
  }

  /** v1 levels: a 4-byte length, then the RLE/bit-packed hybrid. */
  private writeLevels(levels: Uint8Array, max: number): void {
    const w = this.body
    const lengthAt = w.index
    w.appendUint32(0)
    // Measured before the view is taken: writing the levels may grow the buffer and replace its view.
    const length = writeRleHybrid(w, levels, bitWidth(max))
    w.view.setUint32(lengthAt, length, true)
  }

  private pageStats(leaf: Leaf, p: PageRange, dictionary: boolean): PageStats {
    const nulls = p.s1 - p.s0 - (p.v1 - p.v0)
    if (p.v1 === p.v0) return { min: undefined, max: undefined, nulls }
    if (leaf instanceof StringLeaf) {
      // By UTF-8 bytes; the statistics are copies, for they outlive the buffers the next row group reuses.
      const fromDictionary = dictionary || leaf.dictionary
      const src = fromDictionary ? leaf.dictBytes : leaf.bytes
      const view = new DataView(src.buffer, src.byteOffset, src.byteLength)
      let lo = p.v0
      let hi = p.v0
      for (let i = p.v0 + 1; i < p.v1; i++) {
        if (compareStrings(leaf, fromDictionary, view, i, lo) < 0) lo = i
        else if (compareStrings(leaf, fromDictionary, view, i, hi) > 0) hi = i
      }
      // new Uint8Array(view) copies (Buffer's slice would not).
      const copy = (i: number): Uint8Array => new Uint8Array(src.subarray(stringStart(leaf, fromDictionary, i), stringEnd(leaf, fromDictionary, i)))
      return { min: copy(lo), max: copy(hi), nulls }
    }
    if (leaf instanceof BooleanLeaf) {
      let any0 = false
      let any1 = false
      for (let i = p.v0; i < p.v1; i++) if (leaf.data[i]) any1 = true
      else any0 = true
      return { min: !any0, max: any1, nulls }
    }
    const data = (leaf as Int32Leaf | Int64Leaf | DoubleLeaf).data
    let lo = data[p.v0]!
    let hi = lo
    for (let i = p.v0 + 1; i < p.v1; i++) {
      const x = data[i]!
      if (x < lo) lo = x
      else if (x > hi) hi = x
    }
    if (leaf.physical === 'DOUBLE') return { min: normaliseZero(lo as number, false), max: normaliseZero(hi as number, true), nulls }
    return { min: lo, max: hi, nulls }
  }

  /** Compresses `body` and writes its page header and bytes to `out`; returns the uncompressed size with header. */
  private writePage(out: ByteWriter, type: number, pageHeader: Record<string, number>): number {
    const raw = this.body.getBytes()
    const bound = zstdBinding.compressBound(raw.length)
    if (this.compressed.length < bound) this.compressed = new Uint8Array(Math.max(bound, this.compressed.length * 2))
    const compressed = this.compressed.subarray(0, this.zstd.compress2(this.compressed, raw))
    const headerStart = out.offset
    serializeTCompactProtocol(out, {
      field_1: type,
      field_2: raw.length,
      field_3: compressed.length,
      ...(type === PAGE_TYPE.DATA_PAGE ? { field_5: pageHeader } : { field_7: pageHeader }),
    })
    const headerBytes = out.offset - headerStart
    out.appendBytes(compressed)
    return headerBytes + raw.length
  }

  private reset(w: ByteWriter): void {
    w.index = 0
    w.offset = 0
  }
}

/**
 * A string leaf's value i: where its UTF-8 starts and ends, in the dictionary's bytes or the PLAIN ones.
 * Functions of the module, not closures made for each page: a closure a page was compiled anew each time
 * it grew hot (80 compilations a publish of a million patterns).
 */
const stringStart = (leaf: StringLeaf, fromDictionary: boolean, i: number): number => (fromDictionary ? leaf.entryStart(leaf.indexes[i]!) : leaf.valueStart(i))
const stringEnd = (leaf: StringLeaf, fromDictionary: boolean, i: number): number => (fromDictionary ? leaf.dictEnds[leaf.indexes[i]!]! : leaf.ends[i]!)

/** Value i against value j of a string leaf: below 0 when i sorts first (0 at once for one dictionary entry). */
function compareStrings(leaf: StringLeaf, fromDictionary: boolean, view: DataView, i: number, j: number): number {
  if (fromDictionary && leaf.indexes[i] === leaf.indexes[j]) return 0
  return compareRanges(view, stringStart(leaf, fromDictionary, i), stringEnd(leaf, fromDictionary, i), stringStart(leaf, fromDictionary, j), stringEnd(leaf, fromDictionary, j))
}

/**
 * Compares two byte ranges of one buffer, unsigned, four bytes at a time (big-endian words order as their
 * bytes do). Buffer#compare does the same natively but checks its five arguments in JS on every call, which
 * made it the writer's largest single cost on unique strings; values that share long prefixes (identities)
 * made a byte at a time the next.
 */
function compareRanges(v: DataView, a0: number, a1: number, b0: number, b1: number): number {
  const n = Math.min(a1 - a0, b1 - b0)
  let k = 0
  for (; k + 4 <= n; k += 4) {
    const x = v.getUint32(a0 + k)
    const y = v.getUint32(b0 + k)
    if (x !== y) return x < y ? -1 : 1
  }
  for (; k < n; k++) {
    const d = v.getUint8(a0 + k) - v.getUint8(b0 + k)
    if (d !== 0) return d
  }
  return a1 - a0 - (b1 - b0)
}

/** Parquet's float statistics: a zero minimum is written -0 and a zero maximum +0. */
function normaliseZero<T extends MinMax>(v: T, isMax: boolean): T {
  if (v === 0) return (isMax ? 0 : -0) as T
  return v
}

function compareMinMax(a: MinMax, b: MinMax): number {
  if (a instanceof Uint8Array) return Buffer.compare(a, b as Uint8Array)
  return a < b ? -1 : a > b ? 1 : 0
}

/** The column index's boundary order over its non-null pages' bounds. */
function boundaryOrder(mins: readonly MinMax[], maxs: readonly MinMax[]): ColumnIndex['boundary_order'] {
  let ascending = true
  let descending = true
  for (let i = 1; i < mins.length; i++) {
    const min = compareMinMax(mins[i - 1]!, mins[i]!)
    const max = compareMinMax(maxs[i - 1]!, maxs[i]!)
    if (min > 0 || max > 0) ascending = false
    if (min < 0 || max < 0) descending = false
  }
  return ascending ? 'ASCENDING' : descending ? 'DESCENDING' : 'UNORDERED'
}

// ---------------------------------------------------------------------------------------------------
// Parts: on the encoding thread (parquet-write-worker.ts), row groups become part files
// ---------------------------------------------------------------------------------------------------

const MAGIC = 0x31524150 // "PAR1"
const BOUNDARY_ORDERS = ['UNORDERED', 'ASCENDING', 'DESCENDING'] as const

export interface WrittenPart {
  /** The part's temporary file, for the caller to rename into the content-addressed store. */
  path: string
  bytes: number
  /** 64 lower-case hex digits of SHA-256 over the part's bytes. */
  sha256: string
  rows: number
  /** The first sort column's value in the part's first and last row, as text (an index's first and last). */
  first: string
  last: string
  partition: Readonly<Record<string, string>>
  /**
   * What a reader counts as decoded reading the part, in all and in its largest row group (parquet-limits.ts
   * decodedLeafBytes): the "Limits" on decoded size that no page header states.
   */
  decodedBytes: number
  largestRowGroupDecodedBytes: number
}

/** What the encoding thread needs to make a table's parts. */
export interface PartFilesOptions {
  dir: string
  /** Start of the parts' temporary file names (the writer removes files by it when aborted). */
  prefix: string
  schema: TableSchema
  maxRowGroupRows: number
  maxRowGroupTextBytes: number
  maxPartBytes: number
}

/**
 * Rows of one partition, the next `end - (previous run's end)` of an item's order; `close` ends their
 * parts after them (the next rows start a part of their own).
 */
export interface PartitionRun {
  partition: Readonly<Record<string, string>>
  end: number
  close: boolean
}

/** Encoded rows to write: the batch's rows in `order` (null: as they are), run by run. */
export interface PartRowsItem {
  batch: RowBatch
  order: Int32Array | null
  runs: PartitionRun[]
}

/** A part being written: its file, its running hash and the footer's pieces so far. */
class OpenPart {
  offset = 0
  rows = 0
  first = ''
  last = ''
  readonly rowGroups: RowGroup[] = []
  readonly chunks: EncodedChunk[] = []
  /** What a reader counts as decoded: in all, and in the largest row group. */
  decoded = 0
  largestGroupDecoded = 0
  private readonly hash: Hash = createHash('sha256')

  constructor(
    readonly fh: FileHandle,
    readonly path: string,
  ) {}

  async append(bytes: Uint8Array): Promise<void> {
    let done = 0
    while (done < bytes.length) {
      const { bytesWritten } = await this.fh.write(bytes, done, bytes.length - done, this.offset + done)
      done += bytesWritten
    }
    this.hash.update(bytes)
    this.offset += bytes.length
  }

  digest(): string {
    return this.hash.digest('hex')
  }
}

/**
 * The text of a row's first sort column (a part's first and last), asked only for the rows that begin and
 * end a row group: a writer whose rows carry no such text (NewRows' id-keyed chunks) makes two a group.
 */
export interface RowKeys {
  text(row: number): string
}

/**
 * Shreds rows into row groups of at most `maxRowGroupRows` rows and `maxRowGroupTextBytes` of row text,
 * encodes them and appends them to parts, starting a new part before a row group would take the current
 * one past `maxPartBytes`, and at the end of a run that closes; then each part's page indexes and footer.
 */
export class PartFiles {
  /** Where the parts' temporary files are, and the start of their names (PartFilesOptions). */
  readonly dir: string
  readonly prefix: string
  private readonly encoder = new ChunkEncoder()
  private readonly groupBuffer = new ByteWriter(1 << 20)
  private readonly shredder: Shredder
  private readonly parquetSchema: SchemaElement[]
  private readonly sortingColumns: { column_idx: number; descending: boolean; nulls_first: boolean }[]
  private part: OpenPart | undefined
  private runPartition: Readonly<Record<string, string>> = {}
  private count = 0
  private readonly parts: WrittenPart[] = []
  private groupRows = 0
  private groupTextBytes = 0
  private groupFirst = ''
  /** The group's last row, as its key's text is found once the group is written (RowKeys). */
  private groupLastKeys: RowKeys | undefined
  private groupLastRow = 0

  constructor(private readonly opts: PartFilesOptions) {
    this.dir = opts.dir
    this.prefix = opts.prefix
    this.parquetSchema = parquetSchemaOf(opts.schema)
    this.shredder = compileShredder(opts.schema, this.parquetSchema)
    this.sortingColumns = opts.schema.sortColumns.map((name) => ({
      column_idx: this.shredder.leaves.findIndex((l) => l.path.length === 1 && l.path[0] === name),
      descending: false,
      nulls_first: false,
    }))
  }

  /** Writes an item's rows in its order, run by run. */
  async addRuns(item: PartRowsItem): Promise<void> {
    const { batch, order } = item
    const bytes = Buffer.from(batch.bytes.buffer, batch.bytes.byteOffset, batch.bytes.byteLength)
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    const keys: RowKeys = { text: (r) => batch.keys[r]! }
    let k = 0
    for (const run of item.runs) {
      this.startRun(run.partition)
      for (; k < run.end; k++) {
        const r = order ? order[k]! : k
        const wrote = this.row(bytes, view, r === 0 ? 0 : batch.ends[r - 1]!, batch.textBytes[r]!, keys, r)
        if (wrote) await wrote
      }
      if (run.close) await this.endRun()
    }
  }

  /**
   * Adds the row whose bytes start at `at` (its RFC 8785 text `textBytes` of UTF-8; its first sort column as
   * text `keys.text(row)`) to the run. A promise only when a row group is written.
   */
  row(bytes: Buffer, view: DataView, at: number, textBytes: number, keys: RowKeys, row: number): Promise<void> | undefined {
    if (this.groupRows > 0 && this.groupTextBytes + textBytes > this.opts.maxRowGroupTextBytes) return this.flushRowGroup().then(() => this.row(bytes, view, at, textBytes, keys, row))
    this.shredder.shredRow(bytes, view, at)
    if (this.groupRows === 0) this.groupFirst = keys.text(row)
    this.groupLastKeys = keys
    this.groupLastRow = row
    this.groupRows++
    this.groupTextBytes += textBytes
    return this.groupRows >= this.opts.maxRowGroupRows ? this.flushRowGroup() : undefined
  }

  /** Rows of `partition` follow: a partition other than the run's only after endRun(). */
  startRun(partition: Readonly<Record<string, string>>): void {
    this.runPartition = partition
  }

  /** Writes the buffered rows as one row group. */
  private async flushRowGroup(): Promise<void> {
    if (this.groupRows === 0) return
    const first = this.groupFirst
    const last = this.groupLastKeys!.text(this.groupLastRow)
    this.groupLastKeys = undefined
    const out = this.groupBuffer
    out.index = 0
    out.offset = 0
    const encoded = this.shredder.leaves.map((leaf) => this.encoder.encode(leaf, out))
    let decoded = 0
    for (const leaf of this.shredder.leaves) {
      decoded += leaf instanceof StringLeaf ? decodedLeafBytes(true, leaf.values, leaf.totalPlain - 4 * leaf.values) : decodedLeafBytes(false, leaf.values, 0)
      leaf.reset()
    }
    const rows = this.groupRows
    this.groupRows = 0
    this.groupTextBytes = 0
    const groupBytes = out.offset
    if (this.part && this.part.rowGroups.length > 0 && this.part.offset + groupBytes > this.opts.maxPartBytes) await this.closePart()
    const part = this.part ?? (await this.openPart())
    const base = part.offset
    let uncompressed = 0n
    for (const e of encoded) {
      placeAt(e, base)
      uncompressed += e.chunk.meta_data!.total_uncompressed_size
    }
    await part.append(out.getBytes())
    part.rowGroups.push({
      columns: encoded.map((e) => e.chunk),
      total_byte_size: uncompressed,
      num_rows: BigInt(rows),
      file_offset: BigInt(base),
      total_compressed_size: BigInt(groupBytes),
      sorting_columns: this.sortingColumns,
    })
    part.chunks.push(...encoded)
    part.decoded += decoded
    part.largestGroupDecoded = Math.max(part.largestGroupDecoded, decoded)
    if (part.rows === 0) part.first = first
    part.last = last
    part.rows += rows
  }

  /** Ends the current run's parts: its last row group, and its last part closed. */
  async endRun(): Promise<void> {
    await this.flushRowGroup()
    if (this.part) await this.closePart()
  }

  /** Closes the last part and gives every part written. */
  async finish(): Promise<WrittenPart[]> {
    await this.endRun()
    return this.parts
  }

  private async openPart(): Promise<OpenPart> {
    const path = join(this.opts.dir, `${this.opts.prefix}${this.count++}.parquet.tmp`)
    const part = new OpenPart(await open(path, 'wx'), path)
    this.part = part
    const magic = new Uint8Array(4)
    new DataView(magic.buffer).setUint32(0, MAGIC, true)
    await part.append(magic)
    return part
  }

  /** Writes the page indexes and the footer, then syncs and closes the part's file. */
  private async closePart(): Promise<void> {
    const part = this.part!
    this.part = undefined
    const w = new ByteWriter(1 << 16)
    w.offset = part.offset // offsets written below are the file's
    for (const { chunk, columnIndex: ci } of part.chunks) {
      const at = w.offset
      serializeTCompactProtocol(w, {
        field_1: ci.null_pages,
        field_2: ci.min_values,
        field_3: ci.max_values,
        field_4: BOUNDARY_ORDERS.indexOf(ci.boundary_order),
        field_5: ci.null_counts,
      })
      chunk.column_index_offset = BigInt(at)
      chunk.column_index_length = w.offset - at
    }
    for (const { chunk, offsetIndex } of part.chunks) {
      const at = w.offset
      serializeTCompactProtocol(w, {
        field_1: offsetIndex.page_locations.map((p) => ({ field_1: p.offset, field_2: p.compressed_page_size, field_3: p.first_row_index })),
      })
      chunk.offset_index_offset = BigInt(at)
      chunk.offset_index_length = w.offset - at
    }
    // metadata_length is what a reader fills in; it is not a field of the footer.
    const footer: Omit<FileMetaData, 'metadata_length'> = {
      version: 1,
      schema: this.parquetSchema,
      num_rows: BigInt(part.rows),
      row_groups: part.rowGroups,
      created_by: PACK_CREATED_BY,
    }
    writeMetadata(w, footer as unknown as WriterMetadata, STATISTICS_TRUNCATE_BYTES)
    w.appendUint32(MAGIC)
    await part.append(w.getBytes())
    await part.fh.sync()
    await part.fh.close()
    this.parts.push({
      path: part.path, bytes: part.offset, sha256: part.digest(), rows: part.rows, first: part.first, last: part.last, partition: this.runPartition,
      decodedBytes: part.decoded, largestRowGroupDecodedBytes: part.largestGroupDecoded,
    })
  }
}

/** Moves a chunk encoded at offset 0 of a row group buffer to `base` in its part. */
function placeAt(e: EncodedChunk, base: number): void {
  const b = BigInt(base)
  const md = e.chunk.meta_data!
  e.chunk.file_offset += b
  md.data_page_offset += b
  if (md.dictionary_page_offset !== undefined) md.dictionary_page_offset += b
  for (const p of e.offsetIndex.page_locations) p.offset += b
}

// ---------------------------------------------------------------------------------------------------
// The writer: rows checked and encoded here, shredded, encoded and written on a thread of their own
// ---------------------------------------------------------------------------------------------------

/** Lower limits than the format's, for tests. */
export interface PartLimits {
  maxRowGroupRows?: number
  maxRowGroupTextBytes?: number
  maxPartBytes?: number
}

export interface PartsJobOptions extends PartLimits {
  /** Directory of the parts' temporary files: in the store, so the caller can rename them into place. */
  dir: string
  /**
   * Encode on a worker thread (the default), or on the caller's (false): for a process whose TypeScript
   * loader a worker does not get (`node --import tsx`). The bytes are the same either way.
   */
  encodeOnThread?: boolean
  /** Items that may wait for the thread before post() makes the caller wait (default 2), which bounds memory. */
  maxInFlight?: number
}

/** Runs part-file work, giving its failures (the file system's: rows were checked before) our code. */
export async function partFileWork<T>(what: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f()
  } catch (err) {
    if (err instanceof PipeError) throw err
    throw new PipeError(WRITE_CODES.io, `${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
  }
}

/** What a job does with its items, on the encoding thread or, without one, on the caller's. */
export interface PartsWork<Item> {
  add(item: Item): Promise<void>
  finish(): Promise<WrittenPart[]>
}

/**
 * Where a job's work is made: a module (its import.meta.url) and the name of its export that makes the work
 * from the job's open message. The encoding thread loads it by name, so that it imports none of the modules
 * that give it jobs (the publish's new rows among them) and this room stays below them.
 */
export interface PartsWorkMaker { module: string; name: string }

export interface PartsJobOpen<Settings = unknown> {
  files: PartFilesOptions
  maker: PartsWorkMaker
  /** What the maker needs beyond the files, as the module that gives the job defines it. */
  settings: Settings
}

/** The work a job's open message names, on the encoding thread or, without one, on the caller's. */
export async function makePartsWork(open: PartsJobOpen): Promise<PartsWork<unknown>> {
  const module = (await import(open.maker.module)) as Record<string, unknown>
  const make = module[open.maker.name]
  if (typeof make !== 'function') throw new Error(`pack part files: ${open.maker.module} has no work maker ${open.maker.name}`)
  return (await (make as (open: PartsJobOpen) => PartsWork<unknown> | Promise<PartsWork<unknown>>)(open))
}

/** A job of rows in their order, in runs of one partition (PackPartWriter). */
export function partRuns(open: PartsJobOpen): PartsWork<PartRowsItem> {
  const files = new PartFiles(open.files)
  return { add: (item) => files.addRuns(item), finish: () => files.finish() }
}

const PART_RUNS: PartsWorkMaker = { module: import.meta.url, name: partRuns.name }

const PARTS_THREAD = siblingWorkerUrl(import.meta.url, 'parquet-write-worker')

/** Starts the encoding thread of the jobs to come while the caller does other work (OrderedJob.prewarm). */
export function prewarmPartsThread(): void {
  OrderedJob.prewarm(PARTS_THREAD)
}

/**
 * The parts of one table being made on the encoding thread (parquet-write-worker.ts), beside the caller
 * making the next item, as DuckDB's writer uses both cores. At most `maxInFlight` items wait for the
 * thread, which bounds memory: await each `post()`. `finish()` gives the parts in the order their rows were written; their
 * files are the caller's to rename. End every job that was given items with finish() or abort(): its thread
 * keeps the process alive until then. After a failure the job's files are removed, and the failure (a
 * PipeError with its code) rejects this and every later call.
 */
export class PartsJob<Item> {
  readonly prefix = `.part-${process.pid}-${randomBytes(6).toString('hex')}-`
  private readonly open: PartsJobOpen
  private readonly encodeOnThread: boolean
  private readonly maxInFlight: number
  /** Opened with the first item, so that a job given none never starts a thread. */
  private job: OrderedJob<PartsJobOpen, Item, WrittenPart[]> | undefined
  /** The work when encoding on the caller's thread. */
  private inline: Promise<PartsWork<Item>> | undefined

  /** `maker` makes the job's work from `settings`, on the thread that encodes. */
  constructor(readonly schema: TableSchema, opts: PartsJobOptions, maker: PartsWorkMaker, settings: unknown) {
    this.encodeOnThread = opts.encodeOnThread ?? true
    this.maxInFlight = opts.maxInFlight ?? 2
    this.open = {
      files: {
        dir: opts.dir,
        prefix: this.prefix,
        schema,
        maxRowGroupRows: Math.min(opts.maxRowGroupRows ?? MAX_ROW_GROUP_ROWS, MAX_ROW_GROUP_ROWS),
        maxRowGroupTextBytes: Math.min(opts.maxRowGroupTextBytes ?? MAX_ROW_GROUP_TEXT_BYTES, MAX_ROW_GROUP_TEXT_BYTES),
        maxPartBytes: Math.min(opts.maxPartBytes ?? MAX_PART_BYTES, MAX_PART_BYTES),
      },
      maker,
      settings,
    }
  }

  /** Sends an item (the buffers in `transfer` move to the thread); resolves when the thread has room. */
  async post(item: Item, transfer: ArrayBuffer[]): Promise<void> {
    if (!this.encodeOnThread) {
      const work = (this.inline ??= makePartsWork(this.open) as Promise<PartsWork<Item>>)
      return this.failing(async () => partFileWork('writing a row group', async () => (await work).add(item)))
    }
    this.job ??= OrderedJob.open(PARTS_THREAD, this.open, { maxInFlight: this.maxInFlight })
    const job = this.job
    return this.failing(async () => job.post(item, transfer))
  }

  /** Items the thread has not finished; undefined when the caller's thread encodes. */
  backlog(): number | undefined {
    return this.encodeOnThread ? (this.job?.pending ?? 0) : undefined
  }

  /** Gives every part written, the last closed. */
  async finish(): Promise<WrittenPart[]> {
    const inline = this.inline
    return this.failing(async () => (this.job ? await this.job.finish(null) : inline ? await partFileWork('closing a part', async () => (await inline).finish()) : []))
  }

  /** Stops the thread and removes every temporary file of the job. */
  async abort(): Promise<void> {
    await this.job?.abort()
    const names = await readdir(this.open.files.dir).catch(() => [] as string[])
    for (const name of names) if (name.startsWith(this.prefix)) await unlink(join(this.open.files.dir, name)).catch(() => undefined)
  }

  private async failing<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f()
    } catch (err) {
      await this.abort()
      throw err
    }
  }
}

export interface PartWriterOptions extends PartsJobOptions {
  /** The parts' partition, one value per partition column of the table; {} (the default) when unpartitioned. */
  partition?: Readonly<Record<string, string>>
}

type WriterState = 'open' | 'finished' | 'failed' | 'aborted'

/** Encoded rows a batch gathers before it goes to the encoding thread: a row group's worth, or 8 MiB. */
const BATCH_BYTES = 8 * 1024 * 1024

/**
 * Writes the rows of one table and one partition as parts. Rows must come in the table's order
 * (`rowComparator`); each `write()` batch is checked whole first (rows and order) and refused whole with a
 * PipeError (a row finding's code, or `pack.parquet-rows-unsorted`; location.row counts from the writer's
 * first row), leaving the writer usable. Checked rows are encoded (row-bytes.ts) and go to a PartsJob.
 * Await each `write()`: it resolves once the thread has room. `finish()` returns the parts, none for no
 * rows; their files are the caller's to rename. End every writer that was given rows with finish() or
 * abort().
 */
export class PackPartWriter {
  readonly schema: TableSchema
  private readonly partition: Readonly<Record<string, string>>
  private readonly validate
  private readonly compare
  private readonly job: PartsJob<PartRowsItem>
  private readonly batch: RowBatchBuilder
  private readonly maxBatchRows: number
  private pending: Promise<void> = Promise.resolve()
  private state: WriterState = 'open'
  private failure: unknown
  private previous: object | undefined
  private accepted = 0

  constructor(schema: TableSchema, opts: PartWriterOptions) {
    this.schema = schema
    this.partition = Object.freeze({ ...(opts.partition ?? {}) })
    const bad = partitionFindings(schema, this.partition)
    if (bad.length > 0) throw new PipeError(bad[0]!.code, `${schema.name} partition: ${bad[0]!.column}: ${bad[0]!.detail}`)
    this.validate = rowValidator(schema, this.partition)
    this.compare = rowComparator(schema)
    this.job = new PartsJob(schema, opts, PART_RUNS, null)
    this.batch = new RowBatchBuilder(schema, { keys: true })
    this.maxBatchRows = Math.min(opts.maxRowGroupRows ?? MAX_ROW_GROUP_ROWS, MAX_ROW_GROUP_ROWS)
  }

  /** Rows accepted so far. */
  get rows(): number {
    return this.accepted
  }

  write(rows: readonly object[]): Promise<void> {
    if (this.state !== 'open') return Promise.reject(this.stateError('write'))
    const next = this.pending.then(() => this.writeBatch(rows))
    // A refused batch leaves the writer as it was; only a failure after encoding began is fatal.
    this.pending = next.catch(() => undefined)
    return next
  }

  private async writeBatch(rows: readonly object[]): Promise<void> {
    if (this.state !== 'open') throw this.stateError('write')
    const findings: RowFinding[] = []
    const sizes = new Array<number>(rows.length)
    for (let i = 0; i < rows.length; i++) sizes[i] = this.validate(rows[i], this.accepted + i, findings)
    if (findings.length > 0) {
      const f = findings[0]!
      const more = findings.length > 1 ? ` (and ${findings.length - 1} more findings)` : ''
      throw new PipeError(f.code, `${f.table} row ${f.row}: ${f.column || 'row'}: ${f.detail}${more}`, { location: { row: f.row ?? undefined, field: f.column } })
    }
    let prev = this.previous
    for (let i = 0; i < rows.length; i++) {
      if (prev && this.compare(prev, rows[i]!) > 0) {
        throw new PipeError(WRITE_CODES.unsorted, `${this.schema.name} row ${this.accepted + i} sorts before the row written before it (by ${this.schema.sortColumns.join(', ')})`, { location: { row: this.accepted + i } })
      }
      prev = rows[i]!
    }
    try {
      for (let i = 0; i < rows.length; i++) {
        this.batch.add(rows[i]!, sizes[i]!)
        this.accepted++
        this.previous = rows[i]!
        if (this.batch.rows >= this.maxBatchRows || this.batch.byteLength >= BATCH_BYTES) await this.post(false)
      }
    } catch (err) {
      this.state = 'failed'
      this.failure ??= err
      throw err
    }
  }

  private post(close: boolean): Promise<void> {
    const rows = this.batch.rows
    const { batch, transfer } = this.batch.take()
    return this.job.post({ batch, order: null, runs: [{ partition: this.partition, end: rows, close }] }, transfer)
  }

  /** Writes the last rows and closes the last part. */
  async finish(): Promise<WrittenPart[]> {
    if (this.state !== 'open') throw this.stateError('finish')
    await this.pending
    if (this.state !== 'open') throw this.stateError('finish')
    try {
      if (this.batch.rows > 0) await this.post(true)
      const parts = await this.job.finish()
      this.state = 'finished'
      return parts
    } catch (err) {
      this.state = 'failed'
      this.failure ??= err
      throw err
    }
  }

  /** Stops the thread and removes every temporary file. Does nothing after a successful finish(). */
  async abort(): Promise<void> {
    if (this.state === 'finished' || this.state === 'aborted') return
    this.state = 'aborted'
    await this.pending
    await this.job.abort()
  }

  private stateError(op: string): unknown {
    if (this.state === 'failed' && this.failure !== undefined) return this.failure
    return new PipeError(WRITE_CODES.state, `${op}() on a part writer that is ${this.state}`)
  }
}

/**
 * A row group of a part, decoded into flat vectors (for parquet-read.ts, which checks the part's limits,
 * page headers and schema first). Each leaf column chunk's pages are decompressed into one buffer and
 * decoded into typed arrays, strings as byte ranges of that buffer; definition and repetition levels become
 * validity and list offsets, as Arrow lays columns out. A check compares, hashes and orders cells where they
 * lie, and builds a row object only where it needs one: building every row of a pattern table, its phases
 * a list of lists of cell objects, cost more than everything else a check does.
 *
 * Bounds, checked as the bytes are decoded: a page decompresses into exactly the size its header states;
 * levels and values never run past their page, and a run never past the values its page holds; a
 * dictionary index names an entry; a string cell is at most 1 MiB and UTF-8; a DELTA_BINARY_PACKED header is
 * checked before hyparquet's unpacker runs, so its loops end with the page's bytes; DELTA_BYTE_ARRAY values
 * are measured before they are built; and every value is counted against the part's decoded-size limit (a
 * string by its bytes, any other value as 8 bytes). The reader's rules on values (no null in a required
 * column or field, nor in a list; integers that fit their column) are checked on the vectors, and a breach
 * is named by a row-major walk, as rows would meet it.
 */
import { isUtf8 } from 'node:buffer'
import { createRequire } from 'node:module'
import type { ColumnMetaData, PageHeader, SchemaElement, SchemaTree } from 'hyparquet'
import { deltaBinaryUnpack } from 'hyparquet/src/delta.js'
import { snappyUncompress } from 'hyparquet/src/snappy.js'
import { decodedLeafBytes, READ_CODES, refuse, toFinding, type ReadLimits } from './parquet-limits.js'
import type { PackField, PackType, ScalarKind, TableSchema } from './table-schemas.js'

// zstd-napi's binding is CommonJS, so require() loads it.
const zstdBinding = createRequire(import.meta.url)('zstd-napi/binding.js') as typeof import('zstd-napi/binding.js')

// ---------------------------------------------------------------------------------------------------
// Pages, as the reader's scan of their headers found them
// ---------------------------------------------------------------------------------------------------

/** One page as its header describes it. */
export interface PageInfo {
  offset: number
  headerBytes: number
  type: PageHeader['type']
  /** 1 or 2 for data pages, 0 for a dictionary or index page. */
  version: 0 | 1 | 2
  encoding: string | undefined
  compressedBytes: number
  uncompressedBytes: number
  values: number
  /** A v2 data page's level bytes, stored uncompressed before its values, and whether its values are compressed. */
  v2?: { repetitionBytes: number; definitionBytes: number; compressed: boolean }
}

/** A column chunk's pages, read from their headers. */
export interface ChunkScan {
  rowGroup: number
  column: string
  meta: ColumnMetaData
  pages: PageInfo[]
}

/** Counts decoded values against the part's decoded-size limit, across its row groups, and a row group's. */
export interface DecodedMeter {
  bytes: number
  limit: number
  /** This row group's, reset as each is decoded. */
  groupBytes: number
  groupLimit: number
}

/**
 * Arrays a part's decoding reuses from one row group, and one part, to the next: a pattern part's row group
 * takes megabytes of them (pages' bytes, levels, indexes, offsets), and allocating them afresh every time
 * was work for the allocator and the collector's threads both. An arena serves one open part (PackPart takes
 * one when opened and gives it back when closed), and the vectors of the part's row group are views of it,
 * good until it decodes the next. A view's contents are what the arena last held: callers write every
 * element they read, or fill it.
 */
export class Arena {
  private readonly kept = new Map<string, Uint8Array | Int32Array | BigInt64Array | Float64Array>()
  private size = 0

  bytes(key: string, n: number): Buffer {
    return this.take(`${key} bytes`, n, (m) => Buffer.allocUnsafe(m)) as Buffer
  }

  u8(key: string, n: number): Uint8Array {
    return this.take(`${key} u8`, n, (m) => new Uint8Array(m))
  }

  i32(key: string, n: number): Int32Array {
    return this.take(`${key} i32`, n, (m) => new Int32Array(m))
  }

  /** The array a fixed-width leaf's values are kept in: FLOAT widened to float64, BOOLEAN as 0 and 1. */
  fixed(key: string, physical: string, n: number): Fixed {
    if (physical === 'INT32') return this.i32(key, n)
    if (physical === 'INT64') return this.take(`${key} i64`, n, (m) => new BigInt64Array(m))
    if (physical === 'BOOLEAN') return this.u8(key, n)
    return this.take(`${key} f64`, n, (m) => new Float64Array(m))
  }

  /** Bytes it holds. */
  get held(): number {
    return this.size
  }

  /** `key` names the array's type too: one leaf path is an int32 column in one table and an int64 in another. */
  private take<T extends Uint8Array | Int32Array | BigInt64Array | Float64Array>(key: string, n: number, make: (n: number) => T): T {
    const kept = this.kept.get(key) as T | undefined
    if (kept && kept.length >= n) return kept.subarray(0, n) as T
    // Grown by half again at least, so that a part a little larger than the last does not allocate again.
    const made = make(Math.max(n, Math.ceil(1.5 * (kept?.length ?? 0))))
    this.size += made.byteLength - (kept?.byteLength ?? 0)
    this.kept.set(key, made)
    return made.subarray(0, n) as T
  }
}

/** Arenas given back, for the next part opened on this thread; one of more than 256 MB is let go. */
const arenas: Arena[] = []

export function takeArena(): Arena {
  return arenas.pop() ?? new Arena()
}

export function giveArena(arena: Arena): void {
  if (arena.held <= 256 * 1024 * 1024 && arenas.length < 4) arenas.push(arena)
}

/** Refuses when `n` more decoded bytes would pass the part's or the row group's limit; `what` names the place. */
function meterCheck(meter: DecodedMeter, n: number, what: string): void {
  if (meter.bytes + n > meter.limit) refuse(READ_CODES.decodedTooLarge, `${what}the decoded values would pass ${meter.limit} bytes (64x the part's size plus 64 MiB)`)
  if (meter.groupBytes + n > meter.groupLimit) refuse(READ_CODES.rowGroupTooLarge, `${what}the row group's decoded values would pass ${meter.groupLimit} bytes (a row group is decoded whole)`)
}

function meterAdd(meter: DecodedMeter, n: number): void {
  meterCheck(meter, n, '')
  meter.bytes += n
  meter.groupBytes += n
}

// ---------------------------------------------------------------------------------------------------
// Vectors
// ---------------------------------------------------------------------------------------------------

interface VectorBase {
  /** Slots: a row each at the top; a list's elements, all rows' together, below one. */
  readonly length: number
  /** valid[i] is 0 where slot i is null; null when no slot is. */
  readonly valid: Uint8Array | null
}

export interface Int32Vector extends VectorBase { readonly kind: 'int32'; readonly values: Int32Array }
export interface Int64Vector extends VectorBase { readonly kind: 'int64'; readonly values: BigInt64Array }
export interface Float64Vector extends VectorBase { readonly kind: 'float64'; readonly values: Float64Array }
/** Booleans as 1 and 0. */
export interface BoolVector extends VectorBase { readonly kind: 'bool'; readonly values: Uint8Array }
/** Slot i's elements are slots offsets[i] to offsets[i + 1] of `element`. */
export interface ListVector extends VectorBase { readonly kind: 'list'; readonly offsets: Int32Array; readonly element: Vector }
/** A field the file lacks is null (a nullable one: the schema compiled only so). */
export interface StructVector extends VectorBase { readonly kind: 'struct'; readonly fields: ReadonlyMap<string, Vector | null> }

/** Strings (and times): slot i's UTF-8 bytes are bytes[start[i], end[i]). */
export class StringVector implements VectorBase {
  readonly kind = 'string'
  private readonly texts: (string | undefined)[]

  constructor(
    readonly length: number,
    readonly valid: Uint8Array | null,
    readonly bytes: Buffer,
    readonly start: Int32Array,
    readonly end: Int32Array,
    /** The dictionary entry each slot holds (-1: a value stored plainly); null when the chunk has no dictionary. */
    readonly entry: Int32Array | null,
    entries: number,
  ) {
    this.texts = new Array<string | undefined>(entries)
  }

  /** Slot i as a string: a dictionary entry is decoded once. */
  text(i: number): string {
    const e = this.entry === null ? -1 : this.entry[i]!
    if (e < 0) return this.bytes.toString('utf8', this.start[i], this.end[i])
    return (this.texts[e] ??= this.bytes.toString('utf8', this.start[i], this.end[i]))
  }

  /** Whether slot i's bytes are `other`'s slot j's. */
  equals(i: number, other: StringVector, j: number): boolean {
    if (other === this && this.entry !== null && this.entry[i]! >= 0 && this.entry[i] === this.entry[j]) return true
    return sameBytesAt(this.bytes, this.start[i]!, this.end[i]!, other.bytes, other.start[j]!, other.end[j]!)
  }
}

export type Vector = Int32Vector | Int64Vector | Float64Vector | BoolVector | StringVector | ListVector | StructVector

function sameBytesAt(a: Uint8Array, as: number, ae: number, b: Uint8Array, bs: number, be: number): boolean {
  if (ae - as !== be - bs) return false
  for (let k = 0; k < ae - as; k++) if (a[as + k] !== b[bs + k]) return false
  return true
}

// ---------------------------------------------------------------------------------------------------
// Plans: the table's columns mapped onto the file's schema (step 5 of parquet-read.ts)
// ---------------------------------------------------------------------------------------------------

/** A leaf column the table reads. */
export interface LeafSpec {
  /** Its dotted path, as column chunks name it. */
  path: string
  physical: string
  maxDef: number
  maxRep: number
}

/** A schema node between a top-level column and a leaf: its levels and repetition. */
interface ChainNode {
  def: number
  rep: number
  optional: boolean
  repeated: boolean
  /** The plan whose slots this node's are (a list's repeated node has none: its slots are the element's). */
  plan: Plan | null
}

interface PlanBase {
  /** The column's path in findings: `phases[]`, `site.tiles[].corners`. */
  readonly column: string
  /** Whether the table allows null here (list elements never). */
  readonly nullable: boolean
}
interface ScalarPlan extends PlanBase {
  readonly kind: 'scalar'
  readonly scalar: ScalarKind
  readonly leaf: LeafSpec
  /** Its nodes from the top-level column down to the leaf. */
  readonly chain: readonly ChainNode[]
  /** An integer stored unsigned (UINT_32, UINT_64, or INTEGER unsigned of that width). */
  readonly unsigned: boolean
}
interface ListPlan extends PlanBase { readonly kind: 'list'; readonly element: Plan }
interface StructPlan extends PlanBase { readonly kind: 'struct'; readonly fields: readonly { name: string; plan: Plan | null }[] }
export type Plan = ScalarPlan | ListPlan | StructPlan

/** A top-level column of the table: its plan, or null when the file lacks it (a nullable column, read as null). */
export interface ColumnPlan {
  readonly name: string
  readonly nullable: boolean
  readonly plan: Plan | null
  /** Its leaves in schema order. */
  readonly leaves: readonly ScalarPlan[]
}

const STRING_ANNOTATIONS: readonly string[] = ['STRING', 'UTF8', 'JSON', 'ENUM']

function annotation(e: SchemaElement): string | undefined {
  return e.logical_type?.type ?? e.converted_type
}

/** An integer leaf with no annotation, or only an integer one (INT_8 ... UINT_64, INTEGER). */
function plainInteger(e: SchemaElement): boolean {
  const a = annotation(e)
  return a === undefined || a === 'INTEGER' || /^U?INT_(8|16|32|64)$/.test(a)
}

/** Read unsigned as hyparquet reads it: UINT_32 and UINT_64, and unsigned INTEGER of 32 and 64 bits. */
function unsignedInteger(e: SchemaElement): boolean {
  const lt = e.logical_type
  if (e.converted_type === 'UINT_32' || e.converted_type === 'UINT_64') return true
  return lt?.type === 'INTEGER' && !lt.isSigned && (lt.bitWidth === 32 || lt.bitWidth === 64)
}

function describe(node: SchemaTree): string {
  const e = node.element
  if (node.children.length > 0) return `a group${e.converted_type ? ` (${e.converted_type})` : ''}`
  const a = annotation(e)
  return `${e.type}${a ? ` (${a})` : ''}`
}

/**
 * The chain's node for `node`, below `chain`, its plan still to be set. Every node is made here, so that all
 * have one shape: the shape loops take chains through (shapeChain) then stay optimised for every column.
 */
function step(chain: readonly ChainNode[], node: SchemaTree): ChainNode {
  const last = chain[chain.length - 1]
  const r = node.element.repetition_type
  const optional = r === 'OPTIONAL'
  const repeated = r === 'REPEATED'
  return { def: (last?.def ?? 0) + (optional || repeated ? 1 : 0), rep: (last?.rep ?? 0) + (repeated ? 1 : 0), optional, repeated, plan: null }
}

/**
 * The plan of one expected type from one file node, or why they do not match. `above` holds the nodes from
 * the top-level column to the node's parent; `leaves` collects the plan's leaves.
 */
function compilePlan(expected: PackType, node: SchemaTree, column: string, nullable: boolean, above: ChainNode[], leaves: ScalarPlan[]): Plan | string {
  const e = node.element
  const leaf = node.children.length === 0
  const mismatch = `${column}: expected ${expected.kind}, the file has ${describe(node)}`
  const own = step(above, node)
  const chain = [...above, own]
  switch (expected.kind) {
    case 'string':
    case 'time':
    case 'bool':
    case 'float64':
    case 'int32':
    case 'int64': {
      if (!leaf) return mismatch
      const k = expected.kind
      const ok =
        k === 'string' || k === 'time' ? e.type === 'BYTE_ARRAY' && STRING_ANNOTATIONS.includes(annotation(e) ?? '')
        : k === 'bool' ? e.type === 'BOOLEAN'
        : k === 'float64' ? (e.type === 'DOUBLE' || e.type === 'FLOAT') && annotation(e) === undefined
        : (e.type === 'INT32' || e.type === 'INT64') && plainInteger(e)
      if (!ok) return mismatch
      const plan: ScalarPlan = {
        kind: 'scalar', column, nullable, scalar: k, chain,
        leaf: { path: node.path.join('.'), physical: e.type!, maxDef: own.def, maxRep: own.rep },
        unsigned: (k === 'int32' || k === 'int64') && unsignedInteger(e),
      }
      own.plan = plan
      leaves.push(plan)
      return plan
    }
    case 'list': {
      const repeated = node.children[0]
      if (leaf || e.converted_type !== 'LIST' || node.children.length !== 1 || repeated?.element.repetition_type !== 'REPEATED' || repeated.children.length !== 1) {
        return `${column}: expected a three-level LIST, the file has ${describe(node)}`
      }
      const repeatedNode = step(chain, repeated)
      const element = compilePlan(expected.element, repeated.children[0]!, `${column}[]`, false, [...chain, repeatedNode], leaves)
      if (typeof element === 'string') return element
      const plan: ListPlan = { kind: 'list', column, nullable, element }
      own.plan = plan
      return plan
    }
    case 'struct': {
      if (leaf || e.converted_type === 'LIST' || e.converted_type === 'MAP' || e.logical_type !== undefined) return mismatch
      const fields = compileFields(expected.fields, node, column, chain, leaves)
      if (typeof fields === 'string') return fields
      const plan: StructPlan = { kind: 'struct', column, nullable, fields }
      own.plan = plan
      return plan
    }
  }
}

/** A struct's fields, each from the file's child of that name, or null when absent and nullable. */
function compileFields(fields: readonly PackField[], node: SchemaTree, prefix: string, chain: ChainNode[], leaves: ScalarPlan[]): { name: string; plan: Plan | null }[] | string {
  const out: { name: string; plan: Plan | null }[] = []
  for (const f of fields) {
    const column = prefix === '' ? f.name : `${prefix}.${f.name}`
    const child = node.children.find((c) => c.element.name === f.name)
    if (!child) {
      if (!f.nullable) return `${column}: a required column the file does not have`
      out.push({ name: f.name, plan: null })
      continue
    }
    if (child.element.repetition_type === 'REPEATED') return `${column}: a repeated field, not a ${f.type.kind}`
    const plan = compilePlan(f.type, child, column, f.nullable, chain, leaves)
    if (typeof plan === 'string') return plan
    out.push({ name: f.name, plan })
  }
  return out
}

/** The table's columns mapped onto the file's schema tree, or why the file cannot hold the table. */
export function compileColumns(schema: TableSchema, root: SchemaTree): ColumnPlan[] | string {
  const out: ColumnPlan[] = []
  for (const f of schema.columns) {
    const child = root.children.find((c) => c.element.name === f.name)
    if (!child) {
      if (!f.nullable) return `${f.name}: a required column the file does not have`
      out.push({ name: f.name, nullable: true, plan: null, leaves: [] })
      continue
    }
    if (child.element.repetition_type === 'REPEATED') return `${f.name}: a repeated column, not a ${f.type.kind}`
    const leaves: ScalarPlan[] = []
    const plan = compilePlan(f.type, child, f.name, f.nullable, [], leaves)
    if (typeof plan === 'string') return plan
    out.push({ name: f.name, nullable: f.nullable, plan, leaves })
  }
  return out
}

// ---------------------------------------------------------------------------------------------------
// Decoding a leaf column chunk
// ---------------------------------------------------------------------------------------------------

/** A leaf column chunk, decoded: a level entry per slot (nulls and empty lists included), and its non-null values in order. */
interface LeafChunk {
  entries: number
  def: Uint8Array | null
  rep: Uint8Array | null
  count: number
  /** Fixed-width values (booleans as 0 and 1), or null for byte arrays. */
  values: Int32Array | BigInt64Array | Float64Array | Uint8Array | null
  text: { bytes: Buffer; start: Int32Array; end: Int32Array; entry: Int32Array | null; entries: number } | null
  /** Each data page's stored levels, its entries and its non-null values: what a sibling with the same levels takes instead of decoding its own. */
  pages: { levels: Uint8Array; entries: number; count: number }[]
}

let zstd: InstanceType<typeof zstdBinding.DCtx> | undefined

/** A page's stored bytes into `out`, which is exactly the size its header states. */
function inflate(codec: string, input: Uint8Array, out: Uint8Array, what: string): void {
  if (codec === 'UNCOMPRESSED') {
    if (input.length !== out.length) refuse(READ_CODES.malformed, `${what}: ${input.length} bytes stored uncompressed, its header says ${out.length}`)
    out.set(input)
    return
  }
  let n: number
  try {
    if (codec === 'ZSTD') n = (zstd ??= new zstdBinding.DCtx()).decompress(out, input)
    else {
      snappyUncompress(input, out)
      n = out.length
    }
  } catch (err) {
    return refuse(READ_CODES.unreadable, `${what}: ${codec}: ${toFinding(err).detail}`)
  }
  if (n !== out.length) refuse(READ_CODES.unreadable, `${what}: a ${codec} page decompressed to ${n} bytes, its header says ${out.length}`)
}

const bitWidth = (max: number): number => 32 - Math.clz32(max)

/** An int32 column chunk's dictionary: its entries, and how many. */
interface Int32Dictionary { values: Int32Array; size: number }

/**
 * Decodes `n` values of the RLE/bit-packed hybrid with `width` bits each from buf[p, end) into out[at...];
 * returns where the runs end. A run never writes past the n values; bytes running out first are refused.
 * With `dictionary`, the values are indexes into it and its entries are written: an RLE run (a column of one
 * value is one) is a fill, a bit-packed run is resolved where it was unpacked, with no array of indexes.
 */
function readHybrid(buf: Uint8Array, p: number, end: number, width: number, out: Uint8Array | Int32Array, at: number, n: number, what: string, dictionary?: Int32Dictionary): number {
  const bytesPerRle = (width + 7) >> 3
  let i = 0
  while (i < n) {
    // The run's header, a ULEB128 varint of at most 5 bytes.
    let header = 0
    let shift = 1
    for (let b = 0; ; b++) {
      if (p >= end || b === 5) refuse(READ_CODES.malformed, `${what}: the RLE/bit-packed runs end after ${i} of ${n} values`)
      const byte = buf[p++]!
      header += (byte & 0x7f) * shift
      shift *= 128
      if ((byte & 0x80) === 0) break
    }
    if (header % 2 === 0) {
      const run = Math.min(header / 2, n - i)
      if (p + bytesPerRle > end) refuse(READ_CODES.malformed, `${what}: an RLE run past the page`)
      let value = 0
      for (let b = 0; b < bytesPerRle; b++) value += buf[p + b]! * 2 ** (8 * b)
      // Its bytes may hold more bits than the width, which a value must fit in (readLevels counts on it).
      if (value >= 2 ** width) refuse(READ_CODES.malformed, `${what}: an RLE run of ${value}, wider than ${width} bits`)
      p += bytesPerRle
      if (dictionary) {
        if (value >= dictionary.size) outsideDictionary(value, dictionary.size, what)
        value = dictionary.values[value]!
      }
      out.fill(value, at + i, at + i + run)
      i += run
      continue
    }
    const groups = (header - 1) / 2
    const take = Math.min(groups * 8, n - i)
    // Multiplied by an eighth, not divided by 8: V8 took the first quotients, whole, for integer division,
    // and threw the function's optimised code away at the first that was not.
    const needed = Math.ceil(take * width * 0.125)
    if (p + needed > end) refuse(READ_CODES.malformed, `${what}: a bit-packed run past the page`)
    if (width === 0) out.fill(0, at + i, at + i + take)
    else if (width <= 24) {
      const mask = (1 << width) - 1
      let k = 0
      let q = p
      if (width <= 8) {
        // A group of 8 values as two 32-bit words, values 0-3 and 4-7 (the second from the byte where value 4
        // starts, shifted past half a byte for an odd width): no branch a value, where the loop below has one.
        // A word may run past the group, never past the page.
        const half = width >> 1
        const nibble = (width & 1) << 2
        for (; k + 8 <= take && q + half + 4 <= end; k += 8, q += width) {
          const lo = buf[q]! | (buf[q + 1]! << 8) | (buf[q + 2]! << 16) | (buf[q + 3]! << 24)
          const hi = (buf[q + half]! | (buf[q + half + 1]! << 8) | (buf[q + half + 2]! << 16) | (buf[q + half + 3]! << 24)) >>> nibble
          const o = at + i + k
          out[o] = lo & mask
          out[o + 1] = (lo >>> width) & mask
          out[o + 2] = (lo >>> (2 * width)) & mask
          out[o + 3] = (lo >>> (3 * width)) & mask
          out[o + 4] = hi & mask
          out[o + 5] = (hi >>> width) & mask
          out[o + 6] = (hi >>> (2 * width)) & mask
          out[o + 7] = (hi >>> (3 * width)) & mask
        }
      }
      let acc = 0
      let bits = 0
      for (; k < take; k++) {
        while (bits < width) {
          acc |= buf[q++]! << bits
          bits += 8
        }
        out[at + i + k] = acc & mask
        acc >>>= width
        bits -= width
      }
    } else {
      for (let k = 0; k < take; k++) {
        let v = 0
        for (let b = 0; b < width; b++) {
          const bit = k * width + b
          if (buf[p + (bit >> 3)]! & (1 << (bit & 7))) v += 2 ** b
        }
        out[at + i + k] = v
      }
    }
    if (dictionary) resolveRun(out as Int32Array, at + i, take, dictionary, what)
    // A group is 8 values whatever the page needs; a writer may leave the last group's padding off.
    p = Math.min(p + groups * width, end)
    i += take
  }
  return p
}

/** The levels of a page, checked to be at most `max`; `v1Prefixed`: preceded by their 4-byte length (v1 pages). */
function readLevels(region: Uint8Array, p: number, end: number, max: number, out: Uint8Array, at: number, n: number, what: string): void {
  const width = bitWidth(max)
  readHybrid(region, p, end, width, out, at, n, what)
  // Levels of `width` bits (readHybrid refuses a wider run) can pass the maximum only where it is not all
  // ones (2 in 2 bits, say).
  if (max < 2 ** width - 1) for (let k = at; k < at + n; k++) if (out[k]! > max) refuse(READ_CODES.malformed, `${what}: a level of ${out[k]}, above the column's ${max}`)
}

/** Where a v1 page's levels that start at p (their 4-byte length, then the runs) end. */
function v1LevelsEnd(region: Uint8Array, p: number, what: string): number {
  if (p + 4 > region.length) refuse(READ_CODES.malformed, `${what}: the levels' length is past the page`)
  const length = region[p]! + region[p + 1]! * 2 ** 8 + region[p + 2]! * 2 ** 16 + region[p + 3]! * 2 ** 24
  const end = p + 4 + length
  if (end > region.length) refuse(READ_CODES.malformed, `${what}: levels of ${length} bytes past the page`)
  return end
}

function v1Levels(region: Uint8Array, p: number, max: number, out: Uint8Array, at: number, n: number, what: string): number {
  const end = v1LevelsEnd(region, p, what)
  readLevels(region, p + 4, end, max, out, at, n, what)
  return end
}

/** A DELTA_BINARY_PACKED header's block layout, checked so that hyparquet's unpacker loops only as far as the bytes go. */
function checkDeltaHeader(buf: Uint8Array, p: number, end: number, what: string): void {
  const varint = (): number => {
    let v = 0
    let shift = 1
    for (let b = 0; b < 10; b++) {
      if (p >= end) refuse(READ_CODES.malformed, `${what}: a DELTA_BINARY_PACKED header past the page`)
      const byte = buf[p++]!
      v += (byte & 0x7f) * shift
      shift *= 128
      if ((byte & 0x80) === 0) return v
    }
    return refuse(READ_CODES.malformed, `${what}: a varint longer than 10 bytes`)
  }
  const blockSize = varint()
  const miniblocks = varint()
  if (!(blockSize > 0 && blockSize % 128 === 0 && blockSize <= 2 ** 20 && miniblocks > 0 && blockSize % miniblocks === 0 && (blockSize / miniblocks) % 32 === 0)) {
    refuse(READ_CODES.malformed, `${what}: DELTA_BINARY_PACKED blocks of ${blockSize} values in ${miniblocks} miniblocks`)
  }
}

function deltaUnpack(buf: Uint8Array, p: number, end: number, out: Int32Array | BigInt64Array, what: string): number {
  checkDeltaHeader(buf, p, end, what)
  const reader = { view: new DataView(buf.buffer, buf.byteOffset + p, end - p), offset: 0 }
  try {
    if (out.length > 0) deltaBinaryUnpack(reader, out.length, out)
  } catch (err) {
    return refuse(READ_CODES.malformed, `${what}: ${toFinding(err).detail}`)
  }
  return p + reader.offset
}

/** The widths PLAIN and BYTE_STREAM_SPLIT store fixed-width values at. */
const WIDTH: Readonly<Record<string, number>> = { INT32: 4, INT64: 8, FLOAT: 4, DOUBLE: 8 }

/** Fixed-width little-endian values (as typed arrays read them: the platform is little-endian, as hyparquet assumes). */
function fixedValues(physical: string, bytes: Uint8Array, n: number): Int32Array | BigInt64Array | Float32Array | Float64Array {
  const w = WIDTH[physical]!
  // A view where the bytes are aligned for it, else a copy that is.
  let at = bytes
  if (bytes.byteOffset % w !== 0) {
    at = new Uint8Array(n * w)
    at.set(bytes.subarray(0, n * w))
  }
  switch (physical) {
    case 'INT32':
      return new Int32Array(at.buffer, at.byteOffset, n)
    case 'INT64':
      return new BigInt64Array(at.buffer, at.byteOffset, n)
    case 'FLOAT':
      return new Float32Array(at.buffer, at.byteOffset, n)
    default:
      return new Float64Array(at.buffer, at.byteOffset, n)
  }
}

type Fixed = Int32Array | BigInt64Array | Float64Array | Uint8Array

/** The array a fixed-width leaf's values are kept in: FLOAT is widened to float64, BOOLEAN kept as 0 and 1. */
function fixedArray(physical: string, n: number): Fixed {
  if (physical === 'INT32') return new Int32Array(n)
  if (physical === 'INT64') return new BigInt64Array(n)
  if (physical === 'BOOLEAN') return new Uint8Array(n)
  return new Float64Array(n)
}

function isText(s: Uint8Array, start: number, end: number): boolean {
  // A long cell natively; a short one byte by byte, which costs less than the call.
  if (end - start > 64) return isUtf8(s.subarray(start, end))
  for (let k = start; k < end; k++) if (s[k]! >= 0x80) return isUtf8(s.subarray(k, end))
  return true
}

/**
 * Decodes a leaf's column chunk: `raw` is the chunk's stored bytes, starting at byte `rawStart` of the part.
 * Where a page stores the same level bytes as the same page of `like` (a struct's fields most often do),
 * its levels are `like`'s, not decoded again.
 */
function decodeLeafChunk(raw: Uint8Array, rawStart: number, scan: ChunkScan, leaf: LeafSpec, limits: ReadLimits, meter: DecodedMeter, arena: Arena, like?: LeafChunk): LeafChunk {
  const codec = scan.meta.codec
  const physical = leaf.physical
  const isBytes = physical === 'BYTE_ARRAY'
  let entries = 0
  let poolBytes = 0
  for (const p of scan.pages) {
    if (p.version > 0) entries += p.values
    if (p.type !== 'INDEX_PAGE') poolBytes += p.uncompressedBytes
  }
  const key = leaf.path
  const pool = arena.bytes(`${key} pages`, poolBytes)
  const def = leaf.maxDef > 0 ? arena.u8(`${key} def`, entries) : null
  const rep = leaf.maxRep > 0 ? arena.u8(`${key} rep`, entries) : null
  const values = isBytes ? null : arena.fixed(`${key} values`, physical, entries)
  const start = isBytes ? arena.i32(`${key} start`, entries) : null
  const end = isBytes ? arena.i32(`${key} end`, entries) : null
  let entry: Int32Array | null = null
  let dictionary: { values: Fixed | null; start: Int32Array | null; end: Int32Array | null; size: number } | undefined
  // DELTA_BYTE_ARRAY values are built, not found in a page: they go after the pages, in `built`.
  const built: Buffer[] = []
  let builtBytes = 0
  let at = 0
  let slot = 0
  let nv = 0
  const pages: LeafChunk['pages'] = []
  const sameLevels = like !== undefined && (like.def !== null) === (def !== null) && (like.rep !== null) === (rep !== null)
  for (const page of scan.pages) {
    if (page.type === 'INDEX_PAGE') continue
    const what = `page at byte ${page.offset}`
    const bodyAt = page.offset + page.headerBytes - rawStart
    const body = raw.subarray(bodyAt, bodyAt + page.compressedBytes)
    const regionAt = at
    const region = pool.subarray(at, at + page.uncompressedBytes)
    at += page.uncompressedBytes
    let p = 0
    let levelsEnd = 0
    if (page.v2) {
      levelsEnd = page.v2.repetitionBytes + page.v2.definitionBytes
      region.set(body.subarray(0, levelsEnd))
      // A page without values may store nothing for them, which is no valid stream.
      if (region.length > levelsEnd) inflate(page.v2.compressed ? codec : 'UNCOMPRESSED', body.subarray(levelsEnd), region.subarray(levelsEnd), what)
    } else {
      inflate(codec, body, region, what)
    }
    if (page.type === 'DICTIONARY_PAGE') {
      if (page.encoding !== 'PLAIN' && page.encoding !== 'PLAIN_DICTIONARY') refuse(READ_CODES.unsupported, `${what}: a dictionary page encoded ${String(page.encoding)}`)
      const n = page.values
      if (isBytes) {
        const ds = new Int32Array(n)
        const de = new Int32Array(n)
        plainBytes(region, 0, regionAt, n, ds, de, 0, limits, what)
        dictionary = { values: null, start: ds, end: de, size: n }
        entry = arena.i32(`${key} entry`, entries).fill(-1)
      } else {
        const dv = fixedArray(physical, n)
        plainFixed(region, 0, physical, dv, 0, n, what)
        dictionary = { values: dv, start: null, end: null, size: n }
      }
      continue
    }
    const n = page.values
    if (!page.v2) {
      levelsEnd = rep ? v1LevelsEnd(region, 0, what) : 0
      if (def) levelsEnd = v1LevelsEnd(region, levelsEnd, what)
    }
    const levels = region.subarray(0, levelsEnd)
    const twin = sameLevels ? like.pages[pages.length] : undefined
    let k = n
    if (twin && twin.entries === n && (levels === twin.levels || Buffer.compare(levels, twin.levels) === 0)) {
      if (def) def.set(like!.def!.subarray(slot, slot + n), slot)
      if (rep) rep.set(like!.rep!.subarray(slot, slot + n), slot)
      k = twin.count
    } else {
      if (page.v2) {
        if (rep) readLevels(region, 0, page.v2.repetitionBytes, leaf.maxRep, rep, slot, n, what)
        if (def) readLevels(region, page.v2.repetitionBytes, levelsEnd, leaf.maxDef, def, slot, n, what)
      } else {
        let q = 0
        if (rep) q = v1Levels(region, q, leaf.maxRep, rep, slot, n, what)
        if (def) v1Levels(region, q, leaf.maxDef, def, slot, n, what)
      }
      if (def) k = countOf(def, slot, slot + n, leaf.maxDef)
    }
    p = levelsEnd
    pages.push({ levels, entries: n, count: k })
    slot += n
    const encoding = page.encoding
    if (encoding === 'PLAIN') {
      if (isBytes) plainBytes(region, p, regionAt, k, start!, end!, nv, limits, what)
      else plainFixed(region, p, physical, values!, nv, k, what)
    } else if (encoding === 'PLAIN_DICTIONARY' || encoding === 'RLE_DICTIONARY') {
      if (!dictionary) refuse(READ_CODES.malformed, `${what}: dictionary-encoded without a dictionary page`)
      if (p >= region.length && k > 0) refuse(READ_CODES.malformed, `${what}: dictionary indexes past the page`)
      const width = k > 0 ? region[p]! : 0
      if (width > 32) refuse(READ_CODES.malformed, `${what}: dictionary indexes of ${width} bits`)
      if (values instanceof Int32Array) {
        if (k > 0) readHybrid(region, p + 1, region.length, width, values, nv, k, what, { values: dictionary.values as Int32Array, size: dictionary.size })
      } else {
        const indexes = arena.i32(`${key} indexes`, k)
        if (k > 0) readHybrid(region, p + 1, region.length, width, indexes, 0, k, what)
        if (isBytes) resolveTexts(indexes, k, dictionary.start!, dictionary.end!, dictionary.size, start!, end!, entry!, nv, what)
        else resolveValues(indexes, k, dictionary.values!, dictionary.size, values!, nv, what)
      }
    } else if (encoding === 'RLE' && physical === 'BOOLEAN') {
      v1HybridBooleans(region, p, values as Uint8Array, nv, k, what)
    } else if (encoding === 'DELTA_BINARY_PACKED' && (physical === 'INT32' || physical === 'INT64')) {
      const out = physical === 'INT32' ? new Int32Array(k) : new BigInt64Array(k)
      deltaUnpack(region, p, region.length, out, what)
      ;(values as Int32Array).set(out as Int32Array, nv)
    } else if (encoding === 'DELTA_LENGTH_BYTE_ARRAY' && isBytes) {
      const lengths = new Int32Array(k)
      let q = deltaUnpack(region, p, region.length, lengths, what)
      for (let j = 0; j < k; j++) {
        const len = lengths[j]!
        checkCell(len, limits, what)
        if (q + len > region.length) refuse(READ_CODES.malformed, `${what}: a value past the page`)
        if (!isText(region, q, q + len)) refuse(READ_CODES.stringNotUtf8, 'a string cell that is not UTF-8')
        start![nv + j] = regionAt + q
        end![nv + j] = regionAt + q + len
        q += len
      }
    } else if (encoding === 'DELTA_BYTE_ARRAY' && isBytes) {
      const prefixes = new Int32Array(k)
      const suffixes = new Int32Array(k)
      let q = deltaUnpack(region, p, region.length, prefixes, what)
      q = deltaUnpack(region, q, region.length, suffixes, what)
      // Every value's length first, so that no value is built beyond the limits.
      let total = 0
      let stored = 0
      for (let j = 0; j < k; j++) {
        const prefix = prefixes[j]!
        const suffix = suffixes[j]!
        const previous = j === 0 ? 0 : prefixes[j - 1]! + suffixes[j - 1]!
        if (prefix < 0 || suffix < 0 || prefix > previous) refuse(READ_CODES.malformed, `${what}: a value of prefix ${prefix} and suffix ${suffix} after one of ${previous} bytes`)
        checkCell(prefix + suffix, limits, what)
        total += prefix + suffix
        stored += suffix
      }
      if (q + stored > region.length) refuse(READ_CODES.malformed, `${what}: values past the page`)
      meterCheck(meter, total, `${what}: `)
      const out = Buffer.allocUnsafe(total)
      const base = poolBytes + builtBytes
      let o = 0
      for (let j = 0; j < k; j++) {
        const prefix = prefixes[j]!
        const suffix = suffixes[j]!
        if (prefix > 0) out.copy(out, o, o - prefixes[j - 1]! - suffixes[j - 1]!, o - prefixes[j - 1]! - suffixes[j - 1]! + prefix)
        region.copy(out, o + prefix, q, q + suffix)
        q += suffix
        if (!isText(out, o, o + prefix + suffix)) refuse(READ_CODES.stringNotUtf8, 'a string cell that is not UTF-8')
        start![nv + j] = base + o
        end![nv + j] = base + o + prefix + suffix
        o += prefix + suffix
      }
      built.push(out)
      builtBytes += total
    } else if (encoding === 'BYTE_STREAM_SPLIT' && WIDTH[physical] !== undefined) {
      const w = WIDTH[physical]!
      if (p + k * w > region.length) refuse(READ_CODES.malformed, `${what}: values past the page`)
      const joined = new Uint8Array(k * w)
      for (let b = 0; b < w; b++) for (let j = 0; j < k; j++) joined[j * w + b] = region[p + b * k + j]!
      ;(values as Float64Array).set(fixedValues(physical, joined, k) as Float64Array, nv)
    } else {
      refuse(READ_CODES.unsupported, `${what}: encoding ${String(encoding)} for ${physical}`)
    }
    nv += k
  }
  meterAdd(meter, decodedLeafBytes(isBytes, nv, isBytes ? spanned(start!, end!, nv) : 0))
  const bytes = built.length === 0 ? pool : Buffer.concat([pool, ...built])
  return {
    entries, def, rep, count: nv,
    values,
    text: isBytes ? { bytes, start: start!, end: end!, entry, entries: dictionary?.size ?? 0 } : null,
    pages,
  }
}

// Small loops of one array type each, out of decodeLeafChunk: there, sharing the function with every
// other type and encoding, the dictionary loop took several times longer per value.

/** How many of levels[from, to) are `level`. */
function countOf(levels: Uint8Array, from: number, to: number, level: number): number {
  let n = 0
  for (let e = from; e < to; e++) if (levels[e] === level) n++
  return n
}

/** The bytes of n byte ranges. */
function spanned(start: Int32Array, end: Int32Array, n: number): number {
  let bytes = 0
  for (let j = 0; j < n; j++) bytes += end[j]! - start[j]!
  return bytes
}

function outsideDictionary(index: number, size: number, what: string): never {
  return refuse(READ_CODES.malformed, `${what}: dictionary index ${index >>> 0} of a dictionary of ${size}`)
}

/** Dictionary-encoded byte arrays: each index's entry, its bytes' place, into slots at..at + k. */
function resolveTexts(indexes: Int32Array, k: number, ds: Int32Array, de: Int32Array, size: number, start: Int32Array, end: Int32Array, entry: Int32Array, at: number, what: string): void {
  for (let j = 0; j < k; j++) {
    const x = indexes[j]!
    if (x >>> 0 >= size) outsideDictionary(x, size, what)
    start[at + j] = ds[x]!
    end[at + j] = de[x]!
    entry[at + j] = x
  }
}

/**
 * A bit-packed run of indexes, out[from, from + n), replaced by their entries. int32 has this loop of its own
 * (a pattern's cells are four int32 columns): one loop for every array type ran the phases' decoding a third
 * slower.
 */
function resolveRun(out: Int32Array, from: number, n: number, dictionary: Int32Dictionary, what: string): void {
  const { values, size } = dictionary
  for (let j = from; j < from + n; j++) {
    const x = out[j]!
    if (x >>> 0 >= size) outsideDictionary(x, size, what)
    out[j] = values[x]!
  }
}

/** Dictionary-encoded fixed-width values other than int32 (readHybrid resolves those) into out[at...]. */
function resolveValues(indexes: Int32Array, k: number, dictionary: Fixed, size: number, out: Fixed, at: number, what: string): void {
  const o = out as Float64Array
  const d = dictionary as Float64Array
  for (let j = 0; j < k; j++) {
    const x = indexes[j]!
    if (x >>> 0 >= size) outsideDictionary(x, size, what)
    o[at + j] = d[x]!
  }
}

function checkCell(length: number, limits: ReadLimits, what: string): void {
  if (length > limits.stringBytes) refuse(READ_CODES.stringTooLarge, `a string cell of ${length} bytes, above ${limits.stringBytes}`)
  if (length < 0) refuse(READ_CODES.malformed, `${what}: a value of negative length`)
}

/**
 * `n` PLAIN byte arrays from region[p...]: their places (as offsets of the pool, region starting at
 * `regionAt`). Their UTF-8 is checked in one call for them all: each length, once read, is overwritten with
 * spaces (the region is this decoder's copy), so the values joined by ASCII are valid UTF-8 exactly when
 * every value is (a character cannot run across a space, nor a value start inside one).
 */
function plainBytes(region: Uint8Array, p: number, regionAt: number, n: number, start: Int32Array, end: Int32Array, at: number, limits: ReadLimits, what: string): void {
  const after = plainByteRanges(region, p, regionAt, n, start, end, at, limits, what)
  if (after > p && !isUtf8(region.subarray(p, after))) refuse(READ_CODES.stringNotUtf8, 'a string cell that is not UTF-8')
}

/**
 * plainBytes' loop, where the values' ranges are read: a function that ends with its loop, for V8 compiles a
 * long loop while it first runs (on-stack replacement), and code after it, not yet run, deoptimised that
 * code at each call's end.
 */
function plainByteRanges(region: Uint8Array, p: number, regionAt: number, n: number, start: Int32Array, end: Int32Array, at: number, limits: ReadLimits, what: string): number {
  for (let j = 0; j < n; j++) {
    if (p + 4 > region.length) refuse(READ_CODES.malformed, `${what}: value ${j} of ${n} past the page`)
    const len = region[p]! + region[p + 1]! * 2 ** 8 + region[p + 2]! * 2 ** 16 + region[p + 3]! * 2 ** 24
    region[p] = region[p + 1] = region[p + 2] = region[p + 3] = 0x20
    p += 4
    checkCell(len, limits, what)
    if (p + len > region.length) refuse(READ_CODES.malformed, `${what}: value ${j} of ${n} past the page`)
    start[at + j] = regionAt + p
    end[at + j] = regionAt + p + len
    p += len
  }
  return p
}

/** `n` PLAIN fixed-width values from region[p...] into out[at...]. */
function plainFixed(region: Uint8Array, p: number, physical: string, out: Fixed, at: number, n: number, what: string): void {
  if (physical === 'BOOLEAN') {
    if (p + Math.ceil(n / 8) > region.length) refuse(READ_CODES.malformed, `${what}: values past the page`)
    for (let j = 0; j < n; j++) out[at + j] = (region[p + (j >> 3)]! >> (j & 7)) & 1
    return
  }
  const w = WIDTH[physical]
  if (w === undefined) return refuse(READ_CODES.unsupported, `${what}: physical type ${physical}`)
  if (p + n * w > region.length) refuse(READ_CODES.malformed, `${what}: values past the page`)
  const read = fixedValues(physical, region.subarray(p, p + n * w), n)
  if (out instanceof BigInt64Array) out.set(read as BigInt64Array, at)
  else (out as Float64Array).set(read as Float64Array, at)
}

/** RLE-encoded booleans: their 4-byte length, then the hybrid at one bit. */
function v1HybridBooleans(region: Uint8Array, p: number, out: Uint8Array, at: number, n: number, what: string): void {
  if (p + 4 > region.length) refuse(READ_CODES.malformed, `${what}: the values' length is past the page`)
  const length = region[p]! + region[p + 1]! * 2 ** 8 + region[p + 2]! * 2 ** 16 + region[p + 3]! * 2 ** 24
  if (p + 4 + length > region.length) refuse(READ_CODES.malformed, `${what}: values of ${length} bytes past the page`)
  readHybrid(region, p + 4, p + 4 + length, 1, out, at, n, what)
  for (let k = at; k < at + n; k++) if (out[k]! > 1) refuse(READ_CODES.malformed, `${what}: a boolean of ${out[k]}`)
}

// ---------------------------------------------------------------------------------------------------
// Levels into slots
// ---------------------------------------------------------------------------------------------------

/** What a leaf's levels say of one node on its chain: its slots, which are null, and (above a repeated node) where each slot's list starts. */
interface NodeShape {
  slots: number
  /** An OPTIONAL node's: 0 where it, or a node above it, is null. */
  valid: Uint8Array | null
  offsets: Int32Array | null
  /** The leaf's: 1 where its slot holds a value (its values are those slots', in order); null when every slot does. */
  present: Uint8Array | null
  /** The leaf's: how many of its slots hold a value. */
  holding: number
}

/**
 * The shapes of a leaf's chain from its levels (Dremel's record assembly, flattened). An entry opens a slot
 * at every node whose repetition level is at least the entry's: a repeated node only where its definition
 * level reaches it (an empty list has no element), any other node as its parent does, so that a struct's
 * fields line up with it (null below a null node). A list's offsets are taken as its slots open.
 */
function shapeChain(chain: readonly ChainNode[], leaf: LeafChunk, what: string, arena: Arena, key: string): NodeShape[] {
  const k = chain.length
  const n = leaf.entries
  const { def, rep } = leaf
  if (!def && !rep) return chain.map(() => ({ slots: n, valid: null, offsets: null, present: null, holding: n }))
  const uniform = sameEntries(leaf)
  if (uniform >= 0) return uniformShapes(chain, n, uniform, arena, key)
  if (!chain.some((c) => c.optional)) return requiredShapes(chain, leaf, what, arena, key)
  const slots = new Int32Array(k)
  const valid = chain.map((c, i) => (c.optional ? arena.u8(`${key} valid ${i}`, n) : null))
  const offsets = chain.map((_c, i) => (i + 1 < k && chain[i + 1]!.repeated ? arena.i32(`${key} offsets ${i}`, n + 1) : null))
  const present = arena.u8(`${key} present`, n).fill(0)
  const maxDef = chain[k - 1]!.def
  const maxRep = chain[k - 1]!.rep
  // The chain as flat arrays, for the loop below (a phases column's millions of entries go through it).
  const D = Int32Array.from(chain, (c) => c.def)
  const REPEATED = 1
  const OPTIONAL = 2
  const LISTS = 4
  const flags = Uint8Array.from(chain, (c, i) => (c.repeated ? REPEATED : 0) | (c.optional ? OPTIONAL : 0) | (offsets[i] ? LISTS : 0))
  // An entry of repetition level r opens slots from the first node whose repetition level is at least r:
  // the nodes above it continue their slots.
  const from = new Int32Array(maxRep + 2).fill(k)
  for (let i = k - 1; i >= 0; i--) for (let r = 0; r <= chain[i]!.rep; r++) from[r] = i
  let absent = 0
  for (let e = 0; e < n; e++) {
    const d = def ? def[e]! : maxDef
    const r = rep ? rep[e]! : 0
    if (e === 0 && r !== 0) refuse(READ_CODES.malformed, `${what}: the first value continues a row`)
    let i = from[r]!
    for (; i < k; i++) {
      const f = flags[i]!
      if ((f & REPEATED) !== 0 && d < D[i]!) break
      const s = slots[i]!
      if ((f & LISTS) !== 0) offsets[i]![s] = slots[i + 1]!
      if ((f & OPTIONAL) !== 0) valid[i]![s] = d >= D[i]! ? 1 : 0
      slots[i] = s + 1
    }
    if (i === k) {
      const s = slots[k - 1]! - 1
      if (d >= maxDef) present[s] = 1
      else absent++
    }
  }
  return chain.map((_c, i) => {
    const o = offsets[i]
    if (o) o[slots[i]!] = slots[i + 1]!
    return {
      slots: slots[i]!,
      valid: valid[i]?.subarray(0, slots[i]) ?? null,
      offsets: o?.subarray(0, slots[i]! + 1) ?? null,
      present: i === k - 1 && absent > 0 ? present.subarray(0, slots[i]) : null,
      holding: i === k - 1 ? slots[i]! - absent : 0,
    }
  })
}

/**
 * shapeChain's shapes when no node is OPTIONAL (as our writer writes lists): then the definition level at
 * the repeated node of repetition level l is l, a null is impossible, and the walk is by repetition level:
 * an entry of levels (r, d) opens an element at each level from r (a row at 0) down to d, and each element
 * opens the list below it. A node's slots are its level's count; a list's offsets those of the level below.
 */
function requiredShapes(chain: readonly ChainNode[], leaf: LeafChunk, what: string, arena: Arena, key: string): NodeShape[] {
  const n = leaf.entries
  const { def, rep } = leaf
  const levels = chain[chain.length - 1]!.rep
  const counts = new Int32Array(levels + 1)
  // offsets[l]: where each slot of level l - 1 starts its list of level l elements.
  const offsets = Array.from({ length: levels + 1 }, (_x, l) => (l === 0 ? new Int32Array(0) : arena.i32(`${key} offsets ${l}`, n + 1)))
  countLevels(def, rep, n, levels, counts, offsets, what)
  for (let l = 1; l <= levels; l++) offsets[l]![counts[l - 1]!] = counts[l]!
  return chain.map((c, i) => {
    const slots = counts[c.rep]!
    const lists = i + 1 < chain.length && chain[i + 1]!.repeated
    return { slots, valid: null, offsets: lists ? offsets[c.rep + 1]!.subarray(0, slots + 1) : null, present: null, holding: i === chain.length - 1 ? slots : 0 }
  })
}

/**
 * requiredShapes' walk of the entries: each level's slots counted, and where each list starts. A function
 * that ends with its loop (as plainByteRanges, for on-stack replacement).
 */
function countLevels(def: Uint8Array | null, rep: Uint8Array | null, n: number, levels: number, counts: Int32Array, offsets: Int32Array[], what: string): void {
  for (let e = 0; e < n; e++) {
    const d = def ? def[e]! : levels
    const r = rep ? rep[e]! : 0
    if (r === 0) {
      if (levels > 0) offsets[1]![counts[0]!] = counts[1]!
      counts[0]!++
    } else if (e === 0) {
      refuse(READ_CODES.malformed, `${what}: the first value continues a row`)
    }
    for (let l = r > 0 ? r : 1; l <= levels && d >= l; l++) {
      if (l < levels) offsets[l + 1]![counts[l]!] = counts[l + 1]!
      counts[l]!++
    }
  }
}

/** The definition level every entry has when all have the same and none repeats (a column null throughout, say), or -1. */
function sameEntries(leaf: LeafChunk): number {
  const { def, rep } = leaf
  if (!def || (rep && !allAre(rep, leaf.entries, 0))) return -1
  const d = def[0] ?? 0
  return allAre(def, leaf.entries, d) ? d : -1
}

/** Whether levels[0, n) are all `level` (a loop alone in its function, as plainByteRanges). */
function allAre(levels: Uint8Array, n: number, level: number): boolean {
  for (let e = 0; e < n; e++) if (levels[e] !== level) return false
  return true
}

/** shapeChain's shapes when all n entries are rows with definition level d: one entry's walk, n times over. */
function uniformShapes(chain: readonly ChainNode[], n: number, d: number, arena: Arena, key: string): NodeShape[] {
  const k = chain.length
  let reached = 0
  while (reached < k && !(chain[reached]!.repeated && d < chain[reached]!.def)) reached++
  return chain.map((c, i) => {
    const slots = i < reached ? n : 0
    const leaf = i === k - 1
    let offsets: Int32Array | null = null
    if (i + 1 < k && chain[i + 1]!.repeated) {
      // Each slot's list holds the one element its entry opens, or none.
      offsets = arena.i32(`${key} offsets ${i}`, slots + 1)
      if (i + 1 < reached) for (let j = 0; j <= slots; j++) offsets[j] = j
      else offsets.fill(0)
    }
    return {
      slots,
      valid: c.optional ? arena.u8(`${key} valid ${i}`, slots).fill(d >= c.def ? 1 : 0) : null,
      offsets,
      present: leaf && slots > 0 && d < c.def ? arena.u8(`${key} present`, slots).fill(0) : null,
      holding: leaf && d >= c.def ? slots : 0,
    }
  })
}

const sameBytes = (a: Uint8Array | null, b: Uint8Array | null): boolean =>
  a === b || (a !== null && b !== null && Buffer.compare(a, b) === 0)

const sameShape = (a: NodeShape, b: NodeShape): boolean =>
  a.slots === b.slots && sameBytes(a.valid, b.valid) && sameBytes(a.offsets && new Uint8Array(a.offsets.buffer, a.offsets.byteOffset, a.offsets.byteLength), b.offsets && new Uint8Array(b.offsets.buffer, b.offsets.byteOffset, b.offsets.byteLength))

// ---------------------------------------------------------------------------------------------------
// A row group
// ---------------------------------------------------------------------------------------------------

export interface ChunkSource {
  /** The stored bytes of the row group's chunk of leaf `path`, and where in the part they start. */
  chunk(path: string): { scan: ChunkScan; raw: Uint8Array; rawStart: number }
}

/** A row group decoded: a vector per top-level column (null: the file lacks that nullable column). */
export class RowBatch {
  private readonly plansByName: ReadonlyMap<string, ColumnPlan>

  constructor(
    readonly rowGroup: number,
    /** Index in the part of the group's first row. */
    readonly rowStart: number,
    readonly rows: number,
    readonly columns: ReadonlyMap<string, Vector | null>,
    private readonly plans: readonly ColumnPlan[],
  ) {
    this.plansByName = new Map(plans.map((p) => [p.name, p]))
  }

  column(name: string): Vector | null {
    return this.columns.get(name) ?? null
  }

  /** How many list elements rows [from, to) hold, at every depth: what building them as objects costs, counted on the vectors. */
  listItems(from: number, to = from + 1): number {
    let n = 0
    for (const v of this.columns.values()) if (v) n += listItemsIn(v, from, to)
    return n
  }

  /** Row i (of the batch) in the table's row model: one member per column, in the table's order. */
  row(i: number): Record<string, unknown> {
    return this.pick(i, this.plans)
  }

  /** Row i's values of some columns only (as `row` gives them), into `out`. */
  pick(i: number, columns: readonly { name: string }[], out: Record<string, unknown> = {}): Record<string, unknown> {
    for (const { name } of columns) {
      const c = this.plansByName.get(name)!
      const v = this.columns.get(name)
      out[name] = c.plan && v ? valueAt(c.plan, v, i) : null
    }
    return out
  }
}

/** The list elements below slots [from, to) of a vector, at every depth (a null list's offsets hold none). */
function listItemsIn(v: Vector, from: number, to: number): number {
  if (v.kind === 'list') {
    const start = v.offsets[from]!
    const end = v.offsets[to]!
    return end - start + listItemsIn(v.element, start, end)
  }
  if (v.kind !== 'struct') return 0
  let n = 0
  for (const f of v.fields.values()) if (f) n += listItemsIn(f, from, to)
  return n
}

/** Decodes one row group's columns, each checked by the reader's rules on values before the next is decoded. */
export function decodeRowGroup(source: ChunkSource, plans: readonly ColumnPlan[], rowGroup: number, rowStart: number, rows: number, limits: ReadLimits, meter: DecodedMeter, arena: Arena): RowBatch {
  const columns = new Map<string, Vector | null>()
  meter.groupBytes = 0
  for (const c of plans) {
    if (!c.plan) {
      columns.set(c.name, null)
      continue
    }
    let vector: Vector
    try {
      vector = decodeColumn(c, source, rows, limits, meter, arena)
    } catch (err) {
      const f = toFinding(err)
      return refuse(f.code, `column ${c.name}: ${f.detail}`)
    }
    const breach = firstBreach(c.plan, vector, rows, rowStart)
    if (breach) refuse(breach.code, breach.detail)
    columns.set(c.name, vector)
  }
  return new RowBatch(rowGroup, rowStart, rows, columns, plans)
}

function decodeColumn(c: ColumnPlan, source: ChunkSource, rows: number, limits: ReadLimits, meter: DecodedMeter, arena: Arena): Vector {
  const shapes = new Map<Plan, NodeShape>()
  const leaves = new Map<ScalarPlan, LeafChunk>()
  let last: { leaf: LeafChunk; chain: readonly ChainNode[]; shapes: NodeShape[]; maxDef: number; maxRep: number } | undefined
  for (const plan of c.leaves) {
    const { scan, raw, rawStart } = source.chunk(plan.leaf.path)
    const what = `leaf ${plan.leaf.path}`
    const like = last && last.maxDef === plan.leaf.maxDef && last.maxRep === plan.leaf.maxRep ? last.leaf : undefined
    const leaf = decodeLeafChunk(raw, rawStart, scan, plan.leaf, limits, meter, arena, like)
    leaves.set(plan, leaf)
    // A struct's fields share its nodes and, most often, their levels: a sibling's shapes serve again.
    const sibling = last && last.chain.length === plan.chain.length && last.chain.every((n, i) => i === plan.chain.length - 1 || n === plan.chain[i]) &&
      last.chain[last.chain.length - 1]!.optional === plan.chain[plan.chain.length - 1]!.optional &&
      last.leaf.entries === leaf.entries && sameBytes(last.leaf.def, leaf.def) && sameBytes(last.leaf.rep, leaf.rep)
    const chainShapes = sibling ? last!.shapes : shapeChain(plan.chain, leaf, what, arena, plan.leaf.path)
    last = { leaf, chain: plan.chain, shapes: chainShapes, maxDef: plan.leaf.maxDef, maxRep: plan.leaf.maxRep }
    plan.chain.forEach((node, i) => {
      if (!node.plan) return
      const s = chainShapes[i]!
      const seen = shapes.get(node.plan)
      if (!seen) shapes.set(node.plan, s)
      else if (!sameShape(seen, s)) refuse(READ_CODES.malformed, `the leaves of ${node.plan.column} disagree on its rows and nulls`)
    })
    const leafShape = chainShapes[chainShapes.length - 1]!
    if (leafShape.holding !== leaf.count) refuse(READ_CODES.malformed, `${what}: ${leaf.count} values for ${leafShape.holding} slots that hold one`)
  }
  const top = shapes.get(c.plan!)!
  if (top.slots !== rows) refuse(READ_CODES.malformed, `${top.slots} values in a row group of ${rows} rows`)
  return buildVector(c.plan!, shapes, leaves, arena)
}

/** A leaf's values spread over its slots: `present` says which slots hold one (null: all do). */
function spread<T extends Int32Array | BigInt64Array | Float64Array | Uint8Array>(values: T, present: Uint8Array | null, slots: number, arena: Arena, key: string): T {
  if (!present) return values.length === slots ? values : (values.subarray(0, slots) as T)
  const out = (values instanceof Int32Array ? arena.i32(key, slots) : values instanceof Uint8Array ? arena.u8(key, slots) : new (values.constructor as new (n: number) => T)(slots)) as T
  for (let s = 0, v = 0; s < slots; s++) if (present[s]) out[s] = values[v++]!
  return out
}

function buildVector(plan: Plan, shapes: ReadonlyMap<Plan, NodeShape>, leaves: ReadonlyMap<ScalarPlan, LeafChunk>, arena: Arena): Vector {
  const shape = shapes.get(plan)!
  const { slots: length, valid } = shape
  switch (plan.kind) {
    case 'list': {
      // The list's offsets were taken at its own node, above its repeated node.
      return { kind: 'list', length, valid, offsets: shape.offsets!, element: buildVector(plan.element, shapes, leaves, arena) }
    }
    case 'struct': {
      const fields = new Map<string, Vector | null>()
      for (const f of plan.fields) fields.set(f.name, f.plan ? buildVector(f.plan, shapes, leaves, arena) : null)
      return { kind: 'struct', length, valid, fields }
    }
    case 'scalar': {
      const leaf = leaves.get(plan)!
      const present = shape.present
      if (leaf.text) {
        const t = leaf.text
        const key = plan.leaf.path
        const start = spread(t.start, present, length, arena, `${key} start spread`)
        const end = spread(t.end, present, length, arena, `${key} end spread`)
        const entry = t.entry ? spread(t.entry, present, length, arena, `${key} entry spread`) : null
        if (entry && present) for (let s = 0; s < length; s++) if (!present[s]) entry[s] = -1
        return new StringVector(length, valid, t.bytes, start, end, entry, t.entries)
      }
      const raw = spread(leaf.values!, present, length, arena, `${plan.leaf.path} values spread`)
      switch (plan.scalar) {
        case 'bool':
          return { kind: 'bool', length, valid, values: raw as Uint8Array }
        case 'float64':
          return { kind: 'float64', length, valid, values: raw as Float64Array }
        case 'int32':
          return { kind: 'int32', length, valid, values: raw instanceof Int32Array && !plan.unsigned ? raw : int32From(raw as Int32Array | BigInt64Array, plan.unsigned) }
        default:
          return { kind: 'int64', length, valid, values: raw instanceof BigInt64Array ? raw : BigInt64Array.from(raw as Int32Array, (x) => BigInt(plan.unsigned ? x >>> 0 : x)) }
      }
    }
  }
}

/** An int32 column stored wider or unsigned; a value that does not fit is found by firstBreach, from its source. */
const sources = new WeakMap<Int32Array, { raw: Int32Array | BigInt64Array; unsigned: boolean }>()

function int32From(raw: Int32Array | BigInt64Array, unsigned: boolean): Int32Array {
  const out = new Int32Array(raw.length)
  for (let i = 0; i < raw.length; i++) out[i] = Number(BigInt.asIntN(32, BigInt(raw[i]!)))
  sources.set(out, { raw, unsigned })
  return out
}

/** A stored integer as hyparquet gives it: unsigned ones reinterpreted. */
function storedInteger(raw: Int32Array | BigInt64Array, unsigned: boolean, i: number): bigint {
  const x = raw[i]!
  if (typeof x === 'bigint') return unsigned ? BigInt.asUintN(64, x) : x
  return BigInt(unsigned ? x >>> 0 : x)
}

const INT32_MIN = -(2n ** 31n)
const INT32_MAX = 2n ** 31n - 1n

/** Whether a vector holds anything the reader refuses: a null the table does not allow, an integer that does not fit. */
function mayBreach(plan: Plan, v: Vector): boolean {
  if (!plan.nullable && v.valid && v.valid.includes(0)) return true
  switch (plan.kind) {
    case 'list':
      return mayBreach(plan.element, (v as ListVector).element)
    case 'struct':
      return plan.fields.some((f) => f.plan !== null && mayBreach(f.plan, (v as StructVector).fields.get(f.name)!))
    case 'scalar': {
      if (v.kind === 'int32') {
        const src = sources.get(v.values)
        if (!src) return false
        for (let i = 0; i < src.raw.length; i++) {
          if (v.valid && !v.valid[i]) continue
          const n = storedInteger(src.raw, src.unsigned, i)
          if (n < INT32_MIN || n > INT32_MAX) return true
        }
      }
      if (v.kind === 'int64' && plan.unsigned) for (let i = 0; i < v.length; i++) if ((!v.valid || v.valid[i]) && v.values[i]! < 0n) return true
      return false
    }
  }
}

/**
 * The reader's first refusal of a column, rows in order and each row's values depth first, named as rows
 * would meet it (`row 3, column phases[0][2].i: null in a required column`); undefined when there is none.
 */
function firstBreach(plan: Plan, v: Vector, rows: number, rowStart: number): { code: typeof READ_CODES.valueInvalid; detail: string } | undefined {
  if (!mayBreach(plan, v)) return undefined
  const breach = (p: Plan, vec: Vector, s: number, at: string): string | undefined => {
    if (vec.valid && !vec.valid[s]) {
      if (p.nullable) return undefined
      return p.column.endsWith('[]') ? `${at}: a null list element` : `${at}: null in a required column`
    }
    switch (p.kind) {
      case 'list': {
        const l = vec as ListVector
        for (let e = l.offsets[s]!; e < l.offsets[s + 1]!; e++) {
          const b = breach(p.element, l.element, e, `${at}[${e - l.offsets[s]!}]`)
          if (b) return b
        }
        return undefined
      }
      case 'struct': {
        for (const f of p.fields) {
          const b = f.plan && breach(f.plan, (vec as StructVector).fields.get(f.name)!, s, `${at}.${f.name}`)
          if (b) return b
        }
        return undefined
      }
      case 'scalar': {
        const src = vec.kind === 'int32' ? sources.get(vec.values) : undefined
        if (src) {
          const n = storedInteger(src.raw, src.unsigned, s)
          if (n < INT32_MIN || n > INT32_MAX) return `${at}: ${n} does not fit int32`
        }
        if (vec.kind === 'int64' && p.unsigned && vec.values[s]! < 0n) return `${at}: ${BigInt.asUintN(64, vec.values[s]!)} does not fit int64`
        return undefined
      }
    }
  }
  for (let r = 0; r < rows; r++) {
    const detail = breach(plan, v, r, `row ${rowStart + r}, column ${plan.column}`)
    if (detail) return { code: READ_CODES.valueInvalid, detail }
  }
  return undefined
}

/** Slot s of a vector in the table's row model (int64 as bigint, float64 and int32 as numbers, null where null). */
function valueAt(plan: Plan, v: Vector, s: number): unknown {
  if (v.valid && !v.valid[s]) return null
  switch (v.kind) {
    case 'string':
      return v.text(s)
    case 'int32':
    case 'int64':
    case 'float64':
      return v.values[s]
    case 'bool':
      return v.values[s] === 1
    case 'list': {
      const element = (plan as ListPlan).element
      const out = new Array<unknown>(v.offsets[s + 1]! - v.offsets[s]!)
      for (let e = v.offsets[s]!, k = 0; e < v.offsets[s + 1]!; e++, k++) out[k] = valueAt(element, v.element, e)
      return out
    }
    case 'struct': {
      const out: Record<string, unknown> = {}
      for (const f of (plan as StructPlan).fields) {
        const fv = v.fields.get(f.name)
        out[f.name] = f.plan && fv ? valueAt(f.plan, fv, s) : null
      }
      return out
    }
  }
}

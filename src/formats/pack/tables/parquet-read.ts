/**
 * The guarded pack part reader ("Limits"; "Encodings" > Parquet tables). Everything the spec caps is
 * checked before hyparquet parses or decodes anything it governs, so a hostile part is a finding, never a
 * crash, a hang or a huge allocation:
 *
 * 1. the part is at most 4 GiB, starts and ends with PAR1, and its footer is at most 16 MiB;
 * 2. the footer's Thrift compact bytes are pre-scanned (iteratively, every length checked against the bytes
 *    left): nesting at most 32, at most 1,024 leaf columns, a schema tree at most 32 deep;
 * 3. hyparquet parses the footer; every column chunk must lie inside the file;
 * 4. every page header of every column chunk is read (each at most 4 MiB, pre-scanned the same way) before
 *    any page is decoded: the pages' uncompressed sizes add up to at most 64× the part's size, no page
 *    above 256 MiB (ours: one page's buffer), the data pages' values to at most 64 per byte of the part plus
 *    2^20, and the columns' decoded size estimated from the headers (fixed-width values at their width,
 *    byte arrays at their page bytes, dictionary-encoded ones at the dictionary's mean entry) to at most 64×
 *    the part's size plus 64 MiB; and, since a row group is read and decoded whole, each row group's stored
 *    chunks and decoded estimate at most 128 MiB each (a bound of ours: the spec's let a 4 GiB part of one
 *    row group decode to 256 GiB; our writer's row groups hold at most 32 MiB of row text);
 * 5. the file's schema is compared with the table's (below).
 * Then a part is decoded a row group at a time into flat vectors (parquet-vectors.ts, which says what it
 * bounds as it decodes), from which rows are built on demand; a part of at most 32 MiB is read whole, a
 * larger one a column chunk at a time. Any exception from hyparquet or zstd becomes a
 * `pack.parquet-unreadable` finding.
 *
 * Schema reading ("Readers SHOULD accept another integer width whose values fit, float for float64"): an
 * int32 column may be stored as INT32 (plain or a signed or unsigned INTEGER annotation) or INT64, an int64
 * one as INT64 or INT32, each value checked to fit; a float64 column as DOUBLE or FLOAT; a string as
 * BYTE_ARRAY annotated STRING/UTF8, JSON or ENUM; a list as the three-level LIST (any element name); a struct
 * as a plain group, its unknown fields ignored. Large string and list types are the same in Parquet. A
 * column the table does not know is ignored (not even decoded), a missing nullable column or struct field
 * reads as null, and a missing required one, or another type, is `pack.parquet-schema-mismatch`. A file
 * may mark a required column OPTIONAL; a null in it is `pack.parquet-value-invalid`.
 */
import type { FileHandle } from 'node:fs/promises'
import { PipeError } from '../../../core/errors.js'
import { openRegularFile } from '../../../core/input-file.js'
import type { ColumnMetaData, FileMetaData, PageHeader, SchemaElement, SchemaTree } from 'hyparquet'
// Deep modules, not the package's index: it loads all of hyparquet (its readers, query, geometry), ~8 ms
// more of start-up on each check thread.
import { parquetHeader } from 'hyparquet/src/column.js'
import { readColumnIndex, readOffsetIndex } from 'hyparquet/src/indexes.js'
import { parquetMetadata, parquetSchema } from 'hyparquet/src/metadata.js'
import { maxDecodedBytes, READ_CODES, READ_LIMITS, refuse, toFinding, type ParquetFinding, type ReadLimits } from './parquet-limits.js'
import { compileColumns, decodeRowGroup, giveArena, takeArena, type Arena, type ChunkScan, type ChunkSource, type ColumnPlan, type DecodedMeter, type PageInfo, type RowBatch } from './parquet-vectors.js'
import type { TableSchema } from './table-schemas.js'

export { READ_CODES, READ_LIMITS, type ParquetFinding, type ReadCode, type ReadLimits } from './parquet-limits.js'
export { RowBatch, StringVector, type ChunkScan, type PageInfo, type Vector } from './parquet-vectors.js'

// ---------------------------------------------------------------------------------------------------
// Thrift compact pre-scan
// ---------------------------------------------------------------------------------------------------

const T_STOP = 0
const T_TRUE = 1
const T_FALSE = 2
const T_BYTE = 3
const T_I16 = 4
const T_I32 = 5
const T_I64 = 6
const T_DOUBLE = 7
const T_BINARY = 8
const T_LIST = 9
const T_SET = 10
const T_STRUCT = 12

interface ScanHooks {
  /** A list opened by field `fid` of the struct at stack depth `depth` (the outermost struct is 1). */
  onList?(depth: number, fid: number, size: number): void
  /** A struct opened as an element of a list (at stack depth `depth`) that field `listFid` opened. */
  onListStruct?(depth: number, listFid: number): void
  /** An i32 field `fid` of the struct at depth `depth`, itself an element of a list opened by field `listFid` (-1 if none). */
  onI32?(depth: number, fid: number, listFid: number, value: number): void
}

type Frame = { struct: true; lastFid: number; listFid: number } | { struct: false; left: number; elemType: number; fid: number }

const OUT_OF_BYTES = Symbol('out of bytes')

/**
 * Walks one Thrift compact struct in `bytes[start, end)` without recursion and returns where it ends, or
 * 'truncated' when the bytes run out first (a caller reading a window may read more and try again).
 * Refuses nesting beyond `maxDepth` (thriftTooDeep), and as malformed a list claiming more elements than
 * bytes remain, an over-long varint, or a type Parquet does not use.
 */
function scanCompact(bytes: Uint8Array, start: number, end: number, maxDepth: number, what: string, hooks: ScanHooks = {}): number | 'truncated' {
  let pos = start
  const stack: Frame[] = [{ struct: true, lastFid: 0, listFid: -1 }]
  const varint = (): number => {
    let v = 0
    let mul = 1
    for (let i = 0; i < 10; i++) {
      if (pos >= end) throw OUT_OF_BYTES
      const b = bytes[pos++]!
      v += (b & 0x7f) * mul
      if ((b & 0x80) === 0) return v
      mul *= 128
    }
    return refuse(READ_CODES.malformed, `${what}: a varint longer than 10 bytes at byte ${pos}`)
  }
  const skip = (n: number): void => {
    if (pos + n > end) throw OUT_OF_BYTES
    pos += n
  }
  const zigzag = (u: number): number => (u % 2 === 0 ? u / 2 : -(u + 1) / 2)
  const deeper = (): void => {
    if (stack.length + 1 > maxDepth) refuse(READ_CODES.thriftTooDeep, `${what}: Thrift nests deeper than ${maxDepth}`)
  }
  /** Reads one value; pushes a frame for a container. `fid` is the field's id, or -1 for a list element. */
  const value = (type: number, fid: number, listFid: number): void => {
    const depth = stack.length
    switch (type) {
      case T_TRUE:
      case T_FALSE:
        // A boolean field is its type; a boolean list element is a byte.
        if (fid < 0) skip(1)
        return
      case T_BYTE:
        return skip(1)
      case T_I16:
      case T_I32: {
        const u = varint()
        if (type === T_I32 && fid >= 0) hooks.onI32?.(depth, fid, listFid, zigzag(u))
        return
      }
      case T_I64:
        varint()
        return
      case T_DOUBLE:
        return skip(8)
      case T_BINARY:
        return skip(varint())
      case T_LIST:
      case T_SET: {
        skip(1)
        const b = bytes[pos - 1]!
        const size = b >> 4 === 15 ? varint() : b >> 4
        // Every element takes at least one byte (an empty struct is its STOP byte).
        if (size > end - pos) throw OUT_OF_BYTES
        deeper()
        if (fid >= 0) hooks.onList?.(depth, fid, size)
        stack.push({ struct: false, left: size, elemType: b & 0x0f, fid })
        return
      }
      case T_STRUCT:
        deeper()
        if (fid < 0) hooks.onListStruct?.(depth, listFid)
        stack.push({ struct: true, lastFid: 0, listFid: fid < 0 ? listFid : -1 })
        return
      default:
        refuse(READ_CODES.malformed, `${what}: Thrift type ${type} at byte ${pos - 1}, which Parquet does not use`)
    }
  }
  try {
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!
      if (top.struct) {
        skip(1)
        const b = bytes[pos - 1]!
        const type = b & 0x0f
        if (type === T_STOP) {
          stack.pop()
          continue
        }
        top.lastFid = b >> 4 !== 0 ? top.lastFid + (b >> 4) : zigzag(varint())
        value(type, top.lastFid, top.listFid)
      } else if (top.left === 0) {
        stack.pop()
      } else {
        top.left--
        value(top.elemType, -1, top.fid)
      }
    }
  } catch (err) {
    if (err === OUT_OF_BYTES) return 'truncated'
    throw err
  }
  return pos
}

// ---------------------------------------------------------------------------------------------------
// The file
// ---------------------------------------------------------------------------------------------------

const MAGIC = 0x31524150 // "PAR1"

/** Parts up to this size are read whole when opened; larger ones a range at a time. */
const WHOLE_PART_BYTES = 32 * 1024 * 1024

/**
 * An open part: bounded reads by position. A small part is read whole at once (one read, where a part's
 * page headers and column chunks would take hundreds), and its reads are views of those bytes.
 */
class PartFile {
  private constructor(
    private readonly fh: FileHandle | null,
    private readonly whole: Uint8Array | null,
    readonly size: number,
  ) {}

  static async open(path: string): Promise<PartFile> {
    const { fh, size } = await openRegularFile(path)
    try {
      if (size > WHOLE_PART_BYTES) return new PartFile(fh, null, size)
      const part = new PartFile(fh, null, size)
      const whole = await part.read(0, size)
      await fh.close()
      return new PartFile(null, whole, size)
    } catch (err) {
      await fh.close().catch(() => undefined)
      throw err
    }
  }

  /** Bytes [start, end) of the part, refused outside it. A view that must not be written to. */
  async read(start: number, end: number): Promise<Uint8Array> {
    if (start < 0 || end > this.size || end < start) refuse(READ_CODES.malformed, `a read of bytes ${start} to ${end} outside the part's ${this.size}`)
    if (this.whole) return this.whole.subarray(start, end)
    const buf = new Uint8Array(end - start)
    let off = 0
    while (off < buf.length) {
      const { bytesRead } = await this.fh!.read(buf, off, buf.length - off, start + off)
      if (bytesRead === 0) refuse(READ_CODES.malformed, `the part ended at byte ${start + off} while reading to ${end}`)
      off += bytesRead
    }
    return buf
  }

  async close(): Promise<void> {
    await this.fh?.close()
  }
}

/** Steps 1 to 3: size, magic, footer length, the pre-scan, hyparquet's parse. */
async function readFooter(file: PartFile, limits: ReadLimits): Promise<{ metadata: FileMetaData; footerStart: number }> {
  if (file.size > limits.partBytes) refuse(READ_CODES.partTooLarge, `the part is ${file.size} bytes, above ${limits.partBytes}`)
  if (file.size < 12) refuse(READ_CODES.notParquet, `${file.size} bytes is too short for Parquet`)
  const head = await file.read(0, 4)
  const tail = await file.read(file.size - 8, file.size)
  const tailView = new DataView(tail.buffer, tail.byteOffset, tail.byteLength)
  if (new DataView(head.buffer, head.byteOffset, head.byteLength).getUint32(0, true) !== MAGIC || tailView.getUint32(4, true) !== MAGIC) {
    refuse(READ_CODES.notParquet, 'no PAR1 magic at the start or the end (not Parquet, or truncated)')
  }
  const footerLength = tailView.getUint32(0, true)
  if (footerLength > limits.footerBytes) refuse(READ_CODES.footerTooLarge, `the footer claims ${footerLength} bytes, above ${limits.footerBytes}`)
  const footerStart = file.size - 8 - footerLength
  if (footerStart < 4) refuse(READ_CODES.malformed, `the footer claims ${footerLength} bytes, more than the part holds`)
  const footer = await file.read(footerStart, file.size)
  prescanFooter(footer, footerLength, limits)
  let metadata: FileMetaData
  try {
    metadata = parquetMetadata(footer, { geoparquet: false })
  } catch (err) {
    return refuse(READ_CODES.unreadable, `footer: ${toFinding(err).detail}`)
  }
  checkLayout(metadata, footerStart)
  return { metadata, footerStart }
}

/** Step 2: the footer's Thrift, and the shape of its schema from each element's num_children. */
function prescanFooter(footer: Uint8Array, footerLength: number, limits: ReadLimits): void {
  // FileMetaData.schema is field 2, a list of SchemaElement (stack depth 3 inside it); num_children is field 5.
  let declared = -1
  const numChildren: number[] = []
  const scanned = scanCompact(footer, 0, footerLength, limits.thriftDepth, 'footer', {
    onList: (depth, fid, size) => {
      if (depth === 1 && fid === 2) declared = size
    },
    onListStruct: (depth, listFid) => {
      if (depth === 2 && listFid === 2) numChildren.push(0)
    },
    onI32: (depth, fid, listFid, value) => {
      if (depth === 3 && listFid === 2 && fid === 5) numChildren[numChildren.length - 1] = value
    },
  })
  if (scanned !== footerLength) refuse(READ_CODES.malformed, scanned === 'truncated' ? "the footer's Thrift ends early" : 'the footer has bytes after its Thrift')
  if (declared < 1 || numChildren.length !== declared) refuse(READ_CODES.malformed, 'the footer has no schema')
  let leaves = 0
  const open: number[] = numChildren[0]! > 0 ? [numChildren[0]!] : []
  for (let i = 1; i < numChildren.length; i++) {
    if (open.length === 0) refuse(READ_CODES.malformed, `schema element ${i} is outside the root's tree`)
    open[open.length - 1]!--
    const n = numChildren[i]!
    if (n > 0) {
      open.push(n)
      if (open.length > limits.schemaDepth) refuse(READ_CODES.schemaTooDeep, `the schema nests deeper than ${limits.schemaDepth}`)
    } else if (++leaves > limits.columns) {
      refuse(READ_CODES.tooManyColumns, `more than ${limits.columns} leaf columns`)
    }
    while (open.length > 0 && open[open.length - 1] === 0) open.pop()
  }
  if (open.length > 0) refuse(READ_CODES.malformed, 'the schema declares more children than it has elements')
}

/** Every row group has one chunk per leaf column, inside the data; the row groups' rows add up to num_rows. */
function checkLayout(metadata: FileMetaData, footerStart: number): void {
  const leaves = metadata.schema.filter((e) => !e.num_children).length - (metadata.schema[0]?.num_children ? 0 : 1)
  let rows = 0n
  metadata.row_groups.forEach((rg, g) => {
    if (rg.columns.length !== leaves) refuse(READ_CODES.malformed, `row group ${g} has ${rg.columns.length} column chunks for ${leaves} leaf columns`)
    rows += rg.num_rows
    for (const c of rg.columns) {
      const md = c.meta_data
      const name = md?.path_in_schema.join('.') ?? '?'
      if (!md) return refuse(READ_CODES.unsupported, `row group ${g}: column ${name} has no metadata in the footer (encrypted or external)`)
      const { start, end } = chunkRange(md)
      if (!(start >= 4 && end <= footerStart && end >= start)) refuse(READ_CODES.malformed, `row group ${g}: column ${name} spans bytes ${start} to ${end}, outside the part's data`)
    }
  })
  if (rows !== metadata.num_rows) refuse(READ_CODES.malformed, `the row groups hold ${rows} rows, the footer says ${metadata.num_rows}`)
}

function chunkRange(md: ColumnMetaData): { start: number; end: number } {
  const data = Number(md.data_page_offset)
  const dict = md.dictionary_page_offset === undefined ? undefined : Number(md.dictionary_page_offset)
  const start = dict !== undefined && dict > 0 && dict < data ? dict : data
  return { start, end: start + Number(md.total_compressed_size) }
}

// ---------------------------------------------------------------------------------------------------
// Page headers (step 4)
// ---------------------------------------------------------------------------------------------------

const CODECS_READ: readonly string[] = ['UNCOMPRESSED', 'SNAPPY', 'ZSTD']
const FIXED_WIDTH: Readonly<Record<string, number>> = { BOOLEAN: 1, INT32: 4, FLOAT: 4, INT64: 8, DOUBLE: 8, INT96: 12 }

/** Reads page headers through a small window that grows only for a large header. */
class HeaderReader {
  private buf: Uint8Array = new Uint8Array(0)
  private bufStart = 0

  constructor(
    private readonly file: PartFile,
    private readonly limits: ReadLimits,
  ) {}

  async at(pos: number, chunkEnd: number, what: string): Promise<{ header: PageHeader; end: number }> {
    let want = 4096
    for (;;) {
      const avail = Math.min(chunkEnd, pos + want)
      if (!(pos >= this.bufStart && avail <= this.bufStart + this.buf.length)) {
        this.buf = await this.file.read(pos, avail)
        this.bufStart = pos
      }
      const scanned = scanCompact(this.buf, pos - this.bufStart, avail - this.bufStart, this.limits.thriftDepth, what)
      if (scanned !== 'truncated') {
        const reader = { view: new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength), offset: pos - this.bufStart }
        let header: PageHeader
        try {
          header = parquetHeader(reader)
        } catch (err) {
          return refuse(READ_CODES.malformed, `${what}: ${toFinding(err).detail}`)
        }
        return { header, end: this.bufStart + scanned }
      }
      if (avail >= chunkEnd) refuse(READ_CODES.malformed, `${what}: the page header runs past its column chunk`)
      if (want >= this.limits.pageHeaderBytes) refuse(READ_CODES.pageHeaderTooLarge, `${what}: a page header above ${this.limits.pageHeaderBytes} bytes`)
      want = Math.min(want * 16, this.limits.pageHeaderBytes)
    }
  }
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0

/** Running totals of step 4, the part's and its current row group's, refused as soon as one passes its limit. */
class PartBudget {
  uncompressed = 0
  values = 0
  decoded = 0
  private readonly maxUncompressed: number
  private readonly maxValues: number
  readonly maxDecoded: number
  private group = 0
  private groupStored = 0
  private groupDecoded = 0

  constructor(size: number, private readonly limits: ReadLimits) {
    this.maxUncompressed = limits.decompressedPerByte * size
    this.maxValues = limits.valuesPerByte * size + limits.valuesExtra
    this.maxDecoded = maxDecodedBytes(size, limits)
  }

  addPage(bytes: number, what: string): void {
    this.uncompressed += bytes
    if (this.uncompressed > this.maxUncompressed) refuse(READ_CODES.decompressedTooLarge, `${what}: the pages' uncompressed sizes pass ${this.maxUncompressed} bytes, 64x the part's size`)
  }

  addValues(n: number, what: string): void {
    this.values += n
    if (this.values > this.maxValues) refuse(READ_CODES.decodedTooLarge, `${what}: the data pages hold more than ${this.maxValues} values (64 per byte of the part plus 2^20)`)
  }

  addDecoded(bytes: number, what: string): void {
    this.decoded += bytes
    if (this.decoded > this.maxDecoded) refuse(READ_CODES.decodedTooLarge, `${what}: the decoded columns pass ${this.maxDecoded} bytes (64x the part's size plus 64 MiB)`)
    this.groupDecoded += bytes
    if (this.groupDecoded > this.limits.rowGroupBytes) refuse(READ_CODES.rowGroupTooLarge, `${what}: the row group's decoded columns pass ${this.limits.rowGroupBytes} bytes (a row group is decoded whole)`)
  }

  /** A row group's totals start; it is read and decoded whole, so its own are bounded too. */
  startRowGroup(g: number): void {
    this.group = g
    this.groupStored = 0
    this.groupDecoded = 0
  }

  addStored(bytes: number): void {
    this.groupStored += bytes
    if (this.groupStored > this.limits.rowGroupBytes) refuse(READ_CODES.rowGroupTooLarge, `row group ${this.group}: its column chunks pass ${this.limits.rowGroupBytes} bytes (a row group is read whole)`)
  }
}

/** The leaf columns' schema elements by dotted path. */
function leafElements(metadata: FileMetaData): Map<string, SchemaElement> {
  const out = new Map<string, SchemaElement>()
  const walk = (node: SchemaTree): void => {
    if (node.children.length === 0) out.set(node.path.join('.'), node.element)
    for (const c of node.children) walk(c)
  }
  walk(parquetSchema(metadata))
  return out
}

/** Step 4 for every column chunk of the part. */
async function scanPages(file: PartFile, metadata: FileMetaData, limits: ReadLimits, budget: PartBudget): Promise<ChunkScan[]> {
  const headers = new HeaderReader(file, limits)
  const elements = leafElements(metadata)
  const scans: ChunkScan[] = []
  for (let g = 0; g < metadata.row_groups.length; g++) {
    budget.startRowGroup(g)
    for (const c of metadata.row_groups[g]!.columns) {
      const md = c.meta_data!
      const column = md.path_in_schema.join('.')
      const where = `row group ${g}, column ${column}`
      if (!CODECS_READ.includes(md.codec)) refuse(READ_CODES.unsupported, `${where}: codec ${md.codec}`)
      const element = elements.get(column) ?? refuse(READ_CODES.malformed, `${where}: no such leaf column in the schema`)
      const width = md.type === 'FIXED_LEN_BYTE_ARRAY' ? (element.type_length ?? 0) : (FIXED_WIDTH[md.type] ?? 8)
      const { start, end } = chunkRange(md)
      budget.addStored(end - start)
      const pages: PageInfo[] = []
      let dictionaryMean = 0
      let chunkValues = 0
      for (let pos = start; pos < end; ) {
        const what = `${where}, page at byte ${pos}`
        const { header: h, end: headerEnd } = await headers.at(pos, end, what)
        if (!isCount(h.compressed_page_size) || !isCount(h.uncompressed_page_size)) refuse(READ_CODES.malformed, `${what}: page sizes missing or negative`)
        const next = headerEnd + h.compressed_page_size
        if (next > end) refuse(READ_CODES.malformed, `${what}: the page runs past its column chunk`)
        if (h.uncompressed_page_size > limits.pageBytes) refuse(READ_CODES.pageTooLarge, `${what}: ${h.uncompressed_page_size} bytes uncompressed, above ${limits.pageBytes}`)
        budget.addPage(h.uncompressed_page_size, what)
        const info: PageInfo = { offset: pos, headerBytes: headerEnd - pos, type: h.type, version: 0, encoding: undefined, compressedBytes: h.compressed_page_size, uncompressedBytes: h.uncompressed_page_size, values: 0 }
        if (h.type === 'DICTIONARY_PAGE') {
          const n = h.dictionary_page_header?.num_values
          if (!isCount(n)) refuse(READ_CODES.malformed, `${what}: a dictionary page without its value count`)
          if (pages.length > 0) refuse(READ_CODES.malformed, `${what}: a dictionary page after the chunk's first page`)
          info.values = n
          info.encoding = h.dictionary_page_header!.encoding
          dictionaryMean = n > 0 ? h.uncompressed_page_size / n : 0
          budget.addDecoded(h.uncompressed_page_size, what)
        } else if (h.type === 'DATA_PAGE' || h.type === 'DATA_PAGE_V2') {
          const v1 = h.data_page_header
          const v2 = h.data_page_header_v2
          const n = h.type === 'DATA_PAGE' ? v1?.num_values : v2?.num_values
          if (!isCount(n)) refuse(READ_CODES.malformed, `${what}: a data page without its value count`)
          if (v2 && !(isCount(v2.definition_levels_byte_length) && isCount(v2.repetition_levels_byte_length) && v2.definition_levels_byte_length + v2.repetition_levels_byte_length <= Math.min(h.compressed_page_size, h.uncompressed_page_size))) {
            refuse(READ_CODES.malformed, `${what}: level lengths outside the page`)
          }
          info.version = h.type === 'DATA_PAGE' ? 1 : 2
          info.encoding = (h.type === 'DATA_PAGE' ? v1 : v2)!.encoding
          if (h.type === 'DATA_PAGE_V2') info.v2 = { repetitionBytes: v2!.repetition_levels_byte_length, definitionBytes: v2!.definition_levels_byte_length, compressed: v2!.is_compressed !== false }
          info.values = n
          chunkValues += n
          budget.addValues(n, what)
          const dictionaryEncoded = info.encoding === 'PLAIN_DICTIONARY' || info.encoding === 'RLE_DICTIONARY'
          const bytes = md.type !== 'BYTE_ARRAY' ? n * width : dictionaryEncoded ? n * (8 + dictionaryMean) : n * 8 + h.uncompressed_page_size
          budget.addDecoded(bytes, what)
        } else if (h.type !== 'INDEX_PAGE') {
          refuse(READ_CODES.unsupported, `${what}: page type ${String(h.type)}`)
        }
        pages.push(info)
        pos = next
      }
      if (chunkValues !== Number(md.num_values)) refuse(READ_CODES.malformed, `${where}: its data pages hold ${chunkValues} values, its metadata says ${md.num_values}`)
      scans.push({ rowGroup: g, column, meta: md, pages })
    }
  }
  return scans
}

// ---------------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------------

/** A part whose limits, page headers and schema have been checked: read it a row group at a time. */
export class PackPart {
  /** Each row group's column chunks, by leaf path. */
  private readonly chunksOf: Map<string, ChunkScan>[]
  /** Each row group's first row in the part, then the rows of all its groups. */
  private readonly groupStarts: number[]
  /** What its row groups decode into: a batch is good until the next is decoded, or the part closed. */
  private readonly arena: Arena = takeArena()
  private closed = false

  constructor(
    private readonly file: PartFile,
    readonly metadata: FileMetaData,
    readonly pages: readonly ChunkScan[],
    readonly schema: TableSchema,
    private readonly limits: ReadLimits,
    /** Each column's plan (null: absent, read as null). */
    private readonly columns: readonly ColumnPlan[],
    /** Decoded values, counted against the part's limit across its row groups. */
    private readonly meter: DecodedMeter,
  ) {
    this.chunksOf = metadata.row_groups.map(() => new Map())
    for (const scan of pages) this.chunksOf[scan.rowGroup]!.set(scan.column, scan)
    this.groupStarts = [0]
    for (const g of metadata.row_groups) this.groupStarts.push(this.groupStarts.at(-1)! + Number(g.num_rows))
  }

  get rowCount(): number {
    return Number(this.metadata.num_rows)
  }

  /** Its column chunks' facts (codec, statistics, page indexes): what a conformance check holds a writer to. */
  chunkFacts(): Promise<ChunkFacts[]> {
    return chunkFacts(this.file, this.metadata, this.pages, this.limits)
  }

  /** The decoded bytes the row groups read so far counted against the part's limit. */
  get decodedBytes(): number {
    return this.meter.bytes
  }

  /**
   * The row groups, decoded into vectors; a batch's vectors are good until the next batch is asked for
   * (they share the part's arena). Throws a PartReadError (its `finding` with a `pack.parquet-*`
   * code) for anything that fails while decoding; nothing else escapes.
   */
  async *batches(): AsyncGenerator<RowBatch, void, undefined> {
    for (let g = 0; g < this.metadata.row_groups.length; g++) yield await this.batch(g)
  }

  /**
   * Row group `g` alone, decoded as `batches` gives it (good until the next batch is decoded): what a reader
   * of a few rows by their index decodes, rather than the groups before it. rowGroupOf finds the group of a row.
   */
  async batch(g: number): Promise<RowBatch> {
    const rowStart = this.groupStarts[g]!
    // The batch decoded before shares the arena: it is no longer to be read.
    this.current = undefined
    try {
      return decodeRowGroup(await this.chunks(g), this.columns, g, rowStart, this.groupStarts[g + 1]! - rowStart, this.limits, this.meter, this.arena)
    } catch (err) {
      const f = toFinding(err)
      throw new PartReadError({ code: f.code, detail: `row group ${g}: ${f.detail}` })
    }
  }

  /** The row group holding row `row` of the part, or undefined past its last row. */
  rowGroupOf(row: number): number | undefined {
    if (!Number.isInteger(row) || row < 0 || row >= this.groupStarts.at(-1)!) return undefined
    let lo = 0
    let hi = this.groupStarts.length - 2
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (this.groupStarts[mid]! <= row) lo = mid
      else hi = mid - 1
    }
    return lo
  }

  /**
   * The rows in the table's row model, each built when it is asked for (from `batches`), so that only one
   * is held here. A row of more list elements than `rowListItems` is a PartReadError, before it is built.
   */
  async *rows(): AsyncGenerator<Record<string, unknown>, void, undefined> {
    for await (const batch of this.batches()) {
      const mayHoldLarge = batch.listItems(0, batch.rows) > this.limits.rowListItems
      for (let i = 0; i < batch.rows; i++) yield mayHoldLarge ? this.builtRow(batch, i) : batch.row(i)
    }
  }

  /**
   * Row `row` of the part (counted from 0), as `rows` builds it. Its row group is decoded unless it holds
   * the row asked for before, so rows asked for in ascending order decode each group once.
   */
  async rowAt(row: number): Promise<Record<string, unknown>> {
    const g = this.rowGroupOf(row)
    if (g === undefined) throw new PartReadError({ code: READ_CODES.malformed, detail: `the part has no row ${row}` })
    if (this.current?.rowGroup !== g) this.current = await this.batch(g)
    return this.builtRow(this.current, row - this.current.rowStart)
  }

  /** The row group rowAt decoded last. */
  private current: RowBatch | undefined

  /** Row i of a batch, unless it holds more list elements than `rowListItems` (a PartReadError, before it is built). */
  private builtRow(batch: RowBatch, i: number): Record<string, unknown> {
    const items = batch.listItems(i)
    if (items > this.limits.rowListItems) throw new PartReadError({ code: READ_CODES.rowTooLarge, detail: rowTooLargeDetail(batch.rowStart + i, items, this.limits) })
    return batch.row(i)
  }

  /** The stored bytes of row group g's chunks of the leaves the table reads. */
  private async chunks(g: number): Promise<ChunkSource> {
    const read = new Map<string, { scan: ChunkScan; raw: Uint8Array; rawStart: number }>()
    for (const c of this.columns) {
      for (const { leaf } of c.leaves) {
        const scan = this.chunksOf[g]!.get(leaf.path) ?? refuse(READ_CODES.malformed, `no column chunk of ${leaf.path}`)
        if (scan.meta.type !== leaf.physical) refuse(READ_CODES.malformed, `the chunk of ${leaf.path} is ${scan.meta.type}, its schema says ${leaf.physical}`)
        const { start, end } = chunkRange(scan.meta)
        read.set(leaf.path, { scan, raw: await this.file.read(start, end), rawStart: start })
      }
    }
    return { chunk: (path) => read.get(path)! }
  }

  /** Closes the file; the last batch's vectors are not to be read after. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    giveArena(this.arena)
    await this.file.close()
  }
}

/** A finding raised while a PackPart's rows are read. */
/** Why row `row` of a part is not built: one line, shared by the reader and pack-check's note. */
export function rowTooLargeDetail(row: number, items: number, limits: ReadLimits = READ_LIMITS): string {
  return `row ${row} holds ${items} list elements, more than the ${limits.rowListItems} a row is built from`
}

export class PartReadError extends Error {
  readonly finding: ParquetFinding

  constructor(finding: ParquetFinding) {
    super(`${finding.detail} (${finding.code})`)
    this.name = 'PartReadError'
    this.finding = finding
  }
}

export type OpenPartResult = { ok: true; part: PackPart } | { ok: false; findings: ParquetFinding[] }

/** Steps 1 to 4, shared by openPart and partFacts. */
async function checkedFile(path: string, limits: ReadLimits): Promise<{ file: PartFile; metadata: FileMetaData; pages: ChunkScan[]; budget: PartBudget } | { findings: ParquetFinding[] }> {
  let file: PartFile
  try {
    file = await PartFile.open(path)
  } catch (err) {
    return { findings: [{ code: READ_CODES.unreadable, detail: toFinding(err).detail }] }
  }
  try {
    const { metadata } = await readFooter(file, limits)
    const budget = new PartBudget(file.size, limits)
    const pages = await scanPages(file, metadata, limits, budget)
    return { file, metadata, pages, budget }
  } catch (err) {
    await file.close().catch(() => undefined)
    return { findings: [toFinding(err)] }
  }
}

/**
 * Opens a part of `schema`'s table and checks it before anything is decoded: "Limits", every page header,
 * and the file's schema against the table's. Never throws for what the bytes hold. Close the part after use.
 */
export async function openPart(path: string, schema: TableSchema, limits: ReadLimits = READ_LIMITS): Promise<OpenPartResult> {
  const checked = await checkedFile(path, limits)
  if ('findings' in checked) return { ok: false, findings: checked.findings }
  const { file, metadata, pages, budget } = checked
  let columns: ReturnType<typeof compileColumns>
  try {
    columns = compileColumns(schema, parquetSchema(metadata))
  } catch (err) {
    await file.close()
    return { ok: false, findings: [toFinding(err)] }
  }
  if (typeof columns === 'string') {
    await file.close()
    return { ok: false, findings: [{ code: READ_CODES.schemaMismatch, detail: columns }] }
  }
  return { ok: true, part: new PackPart(file, metadata, pages, schema, limits, columns, { bytes: 0, limit: budget.maxDecoded, groupBytes: 0, groupLimit: limits.rowGroupBytes }) }
}

/** Reads a whole part into memory (small parts, tests and tools); the findings when it is refused. */
export async function readPartRows(path: string, schema: TableSchema, limits: ReadLimits = READ_LIMITS): Promise<{ ok: true; rows: Record<string, unknown>[] } | { ok: false; findings: ParquetFinding[] }> {
  const opened = await openPart(path, schema, limits)
  if (!opened.ok) return opened
  const rows: Record<string, unknown>[] = []
  try {
    for await (const r of opened.part.rows()) rows.push(r)
    return { ok: true, rows }
  } catch (err) {
    return { ok: false, findings: [err instanceof PartReadError ? err.finding : toFinding(err)] }
  } finally {
    await opened.part.close()
  }
}

/**
 * A part's rows one by one, for a reader that stops at the first problem (an export, an import): a part
 * that does not open, or a row group that does not read, is a PipeError naming `what` and the finding.
 */
export function partRowsOrRefuse(path: string, schema: TableSchema, what: string, limits: ReadLimits = READ_LIMITS): AsyncGenerator<Record<string, unknown>> {
  return readOrRefuse(path, schema, what, limits, (part) => part.rows())
}

/** A part's row groups one by one (as `PackPart.batches` gives them), refused as partRowsOrRefuse refuses. */
export function partBatchesOrRefuse(path: string, schema: TableSchema, what: string, limits: ReadLimits = READ_LIMITS): AsyncGenerator<RowBatch> {
  return readOrRefuse(path, schema, what, limits, (part) => part.batches())
}

async function* readOrRefuse<T>(path: string, schema: TableSchema, what: string, limits: ReadLimits, read: (part: PackPart) => AsyncIterable<T>): AsyncGenerator<T> {
  const opened = await openPart(path, schema, limits)
  if (!opened.ok) throw new PipeError(opened.findings[0]!.code, `${what}: ${opened.findings[0]!.detail}`)
  try {
    yield* read(opened.part)
  } catch (err) {
    if (err instanceof PartReadError) throw new PipeError(err.finding.code, `${what}: ${err.finding.detail}`)
    throw err
  } finally {
    await opened.part.close()
  }
}

// ---------------------------------------------------------------------------------------------------
// Metadata facts: for checking our own output and linting others'
// ---------------------------------------------------------------------------------------------------

export interface ChunkFacts {
  rowGroup: number
  column: string
  codec: string
  encodings: string[]
  dictionaryPage: boolean
  dataPages: number
  /** The data pages' versions (1, 2), each once, ascending. */
  pageVersions: number[]
  /** min_value, max_value and null_count present (an all-null chunk needs no min and max). */
  statistics: boolean
  /** A column index that parses and has one entry per data page. */
  columnIndex: boolean
  /** An offset index that parses and locates exactly the chunk's data pages, the first at row 0. */
  offsetIndex: boolean
}

export interface PartFacts {
  bytes: number
  version: number
  createdBy: string | null
  /** Whether the footer has a key_value_metadata field at all (pack writers SHOULD write none). */
  keyValueMetadata: boolean
  rows: number
  rowGroups: { rows: number; bytes: number; compressedBytes: number }[]
  chunks: ChunkFacts[]
}

/** The facts of a part's metadata and pages, after the same checks as openPart (its schema aside). */
export async function partFacts(path: string, limits: ReadLimits = READ_LIMITS): Promise<{ ok: true; facts: PartFacts } | { ok: false; findings: ParquetFinding[] }> {
  const checked = await checkedFile(path, limits)
  if ('findings' in checked) return { ok: false, findings: checked.findings }
  const { file, metadata, pages } = checked
  try {
    const chunks = await chunkFacts(file, metadata, pages, limits)
    return {
      ok: true,
      facts: {
        bytes: file.size,
        version: metadata.version,
        createdBy: metadata.created_by ?? null,
        keyValueMetadata: metadata.key_value_metadata !== undefined,
        rows: Number(metadata.num_rows),
        rowGroups: metadata.row_groups.map((rg) => ({ rows: Number(rg.num_rows), bytes: Number(rg.total_byte_size), compressedBytes: Number(rg.total_compressed_size ?? 0n) })),
        chunks,
      },
    }
  } catch (err) {
    return { ok: false, findings: [toFinding(err)] }
  } finally {
    await file.close()
  }
}

/** Each column chunk's codec, encodings, pages, statistics and page indexes, as the footer and page headers state them. */
async function chunkFacts(file: PartFile, metadata: FileMetaData, pages: readonly ChunkScan[], limits: ReadLimits): Promise<ChunkFacts[]> {
  const elements = leafElements(metadata)
  const chunks: ChunkFacts[] = []
  for (const scan of pages) {
    const chunk = metadata.row_groups[scan.rowGroup]!.columns.find((c) => c.meta_data === scan.meta)!
    const md = scan.meta
    const data = scan.pages.filter((p) => p.version > 0)
    const stats = md.statistics
    const allNull = stats?.null_count !== undefined && stats.null_count === md.num_values
    chunks.push({
      rowGroup: scan.rowGroup,
      column: scan.column,
      codec: md.codec,
      encodings: [...md.encodings],
      dictionaryPage: scan.pages.some((p) => p.type === 'DICTIONARY_PAGE'),
      dataPages: data.length,
      pageVersions: [...new Set(data.map((p) => p.version))].sort(),
      statistics: stats?.null_count !== undefined && (allNull || (stats.min_value !== undefined && stats.max_value !== undefined)),
      columnIndex: await readIndex(file, chunk.column_index_offset, chunk.column_index_length, limits, (reader) => readColumnIndex(reader, elements.get(scan.column)!).null_pages.length === data.length),
      offsetIndex: await readIndex(file, chunk.offset_index_offset, chunk.offset_index_length, limits, (reader) => {
        const locations = readOffsetIndex(reader).page_locations
        return locations.length === data.length && locations.every((l, i) => Number(l.offset) === data[i]!.offset && l.compressed_page_size === data[i]!.headerBytes + data[i]!.compressedBytes) && locations[0]?.first_row_index === 0n
      }),
    })
  }
  return chunks
}

/** Reads a page index's bytes within the file and the footer limit, pre-scans them, then parses them with `parse`. */
async function readIndex(file: PartFile, offset: bigint | undefined, length: number | undefined, limits: ReadLimits, parse: (reader: { view: DataView; offset: number }) => boolean): Promise<boolean> {
  if (offset === undefined || length === undefined) return false
  const start = Number(offset)
  if (!(start >= 4 && length > 0 && length <= limits.footerBytes && start + length <= file.size - 8)) return false
  const bytes = await file.read(start, start + length)
  if (scanCompact(bytes, 0, length, limits.thriftDepth, 'page index') === 'truncated') return false
  try {
    return parse({ view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset: 0 })
  } catch {
    return false
  }
}

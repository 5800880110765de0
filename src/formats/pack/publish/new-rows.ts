/**
 * The new rows of one table, sorted as parts must hold them, in bounded memory. "Each part's rows are
 * sorted ...; parts are not sorted across each other": so rows gather in a chunk of about `chunkBytes` of
 * text, and each full chunk is sorted (by partition, the table's sort columns — text by UTF-8 bytes,
 * integers by value, false before true — then the rows' RFC 8785 text) and written as parts of its own.
 * No row is held beyond its chunk.
 *
 * Rows the parents already have are left out (a fact row by its key, an event row by its text), and a fact
 * key given twice is kept once; a fact key given two different rows is refused. What is remembered for
 * this are 128-bit hashes of keys and rows, 32 bytes a row of the feed, in a table of at most SEEN_CAP
 * keys (64 MB). A feed with more keys spills the rest to disk (KeySpill): a row no spilled key can equal
 * (a Bloom filter says so) is kept at once, and the others wait for an external sort of the keys once every
 * row has come. Memory stays bounded whatever the feed's size; the rows are those a table with room for
 * every key would keep, the rows that waited placed after the others (so the parts may split them
 * otherwise), and the same rows give the same bytes.
 *
 * Two threads share the work. The caller's (`NewRowsJob`) encodes each checked row (row-bytes.ts) into a
 * batch with its sort values and partition, and hashes a fact row's key, as it does the parents' rows; the
 * part writer's encoding thread (`newRowsWork`, run by parquet-write-worker.ts) leaves out what is known,
 * keeps a chunk's batches, sorts the chunk and writes it. Each row is hashed by its bytes (the same exactly
 * when its RFC 8785 texts are) on whichever thread is behind less: the caller hashes a batch's rows when
 * the thread has a backlog, and leaves them to the thread when it has none. Which thread is the busier
 * depends on the rows and the machine (compressing is the thread's, completing records the caller's), and
 * the hashes are the same either way. Only event rows carry their text, which breaks ties between rows
 * equal on the sort columns (a fact table has none: its sort columns are its key).
 */
import { hash } from 'node:crypto'
import { PipeError } from '../../../core/errors.js'
import { contentIdText, contentIdWords } from '../records/id-table.js'
import { MAX_ROW_GROUP_ROWS, PartFiles, PartsJob, type PartsJobOpen, type PartsJobOptions, type PartsWork, type PartsWorkMaker, type RowKeys, type WrittenPart } from '../tables/parquet-write.js'
import { RowBatchBuilder, RowHashBytes, type RowBatch } from '../tables/row-bytes.js'
import { RecordSpill, SpillSort } from './spill-sort.js'
import { FACT_CONFLICT, canonicalRowText, compareUtf8, sortColumnComparator, utf8OrderPrefix, type TableSchema } from '../tables/table-schemas.js'

/**
 * About 16 MiB of row text a chunk, and at most a row group's 16,384 rows (CHUNK_ROWS): some sixteen
 * thousand pattern rows, about 10 MB encoded, one row group of one part where a chunk is of one partition.
 * Chunks of half that made twice the parts, each a footer, page indexes, a row group's dictionaries tried
 * and an fsync: the publish of a million patterns took 8% more CPU and wall time (alternating runs).
 */
export const CHUNK_TEXT_BYTES = 16 * 1024 * 1024
export const CHUNK_ROWS = MAX_ROW_GROUP_ROWS

export const ROWS_CODES = { factConflict: FACT_CONFLICT } as const

/** How a table's new rows are gathered; tests give less than the defaults. */
export interface NewRowsLimits {
  /** A chunk's text (CHUNK_TEXT_BYTES) and rows (CHUNK_ROWS). */
  maxChunkBytes?: number
  maxChunkRows?: number
  /** Keys held in memory before the rest spill to disk (SEEN_CAP). */
  seenCap?: number
  /** Spilled keys sorted in memory a run (SPILL_RECORDS). */
  spillRecords?: number
  /** Row text the caller gathers before it goes to the thread (STAGE_TEXT_UNITS). */
  stageTextUnits?: number
  /**
   * Keys the table is expected to hold (its parents' rows, and a fact table's new rows): its in-memory table
   * is made that large at once, up to `seenCap`, and grows past it as it must. Doubling from empty rehashed
   * every key about once more and touched twice the memory: at a million patterns, 0.25-0.4 s of the
   * encoding thread.
   */
  expectedKeys?: number
}

/** Rows the caller gathers before they go to the thread. */
const STAGE_ROWS = 4096

/**
 * Row text (UTF-16 units, as a chunk measures it) the caller gathers before it goes to the thread, whatever
 * the rows. By rows alone, a publish of patterns of 2,000 cells peaked at 895 MB: 4,096 such rows are some
 * 280 MB encoded, several stagings wait for the thread, and the builder renews its buffers at the largest
 * size they grew to. A million small patterns come to about 4 MB a staging, so the rows decide for them.
 */
const STAGE_TEXT_UNITS = 8 * 1024 * 1024

/** Stagings waiting for the thread from which the caller hashes a batch's rows itself: the thread is behind. */
const CALLER_HASHES_FROM_BACKLOG = 2

/**
 * Stagings that may wait for the thread: more than a chunk's, so that the caller goes on while the thread
 * sorts, encodes and compresses a chunk (with two, the caller sat idle for a fifth of a publish).
 */
const STAGED_IN_FLIGHT = 6

/** What goes to the thread: the parents' hashes (a key and a row hash, eight words a row), or new rows. */
export type NewRowsItem = { kind: 'parents'; hashes: Uint32Array; count: number } | { kind: 'rows'; rows: StagedRows }

/** Checked rows in the order they came, encoded, with what it takes to place them. */
export interface StagedRows {
  batch: RowBatch
  /** Each row's RFC 8785 text in UTF-16 units, which a chunk's measure counts. */
  textUnits: Float64Array
  /** The rows' sort column values, the schema's sort columns a row; none for an id-keyed table, whose ids are in `hashes`. */
  sortValues: unknown[]
  /** Each row's partition, an index into `partitions` (`{}` when the table has none). */
  partitionOf: Int32Array
  partitions: Readonly<Record<string, string>>[]
  /** Each row's RFC 8785 text, for an event table (ties); none for a fact table. */
  texts: string[]
  /** Each row's entry (HashTable128), eight words: its key's hash (a fact's; an event's is unused), then its own. */
  hashes: Uint32Array
  /**
   * Whether every row's own hash is in `hashes`; when not, the thread hashes each row by its bytes but those
   * in `hashedRows` (rows holding a float64 -0, hashed by the caller with zeros +0 as their text has them).
   */
  rowsHashed: boolean
  hashedRows: number[]
  /** Each row's line in its records file (from 1; 0 for none), for a refusal to name. */
  lines: Int32Array
}

/** Words in a 4 KiB page. */
const PAGE_WORDS = 1024

/**
 * A set of 128-bit hashes (four words), each with a 128-bit value, in open addressing over flat words. An
 * entry is eight words, its key then its value, read where the caller keeps it (`e` from `at`): a view
 * an entry cost more than the table's own work.
 */
export class HashTable128 {
  private words: Uint32Array
  private used = 0

  /**
   * A table with room for `keys` keys before it grows. Its pages are written once at once: the kernel's
   * fault on a page's first write, 16,384 of them in a table for a million keys, was a fifth of the
   * look-ups' time (in-process, a million keys: 240 ms, against 27 ms for the pages and 186 ms after), and
   * a table is made when a job opens, while its thread waits for the first chunk of rows.
   */
  constructor(keys = 0) {
    let slots = 1024
    // add() grows the table when a key would fill more than half its slots.
    while (keys * 2 > slots) slots *= 2
    this.words = new Uint32Array(8 * slots)
    for (let w = 0; w < this.words.length; w += PAGE_WORDS) this.words[w] = 0
  }

  /** Keys stored. */
  get size(): number {
    return this.used
  }

  private get slots(): number {
    return this.words.length / 8
  }

  /** Whether the key at `k[at]` is stored. */
  has(k: Uint32Array, at: number): boolean {
    return !this.isEmpty(this.find(k, at))
  }

  /** Whether the entry at `e[at]` (key, value) is stored with its value, or undefined when its key is not stored. */
  holds(e: Uint32Array, at: number): boolean | undefined {
    const slot = this.find(e, at)
    if (this.isEmpty(slot)) return undefined
    const w = this.words
    const s = slot * 8
    return w[s + 4] === e[at + 4] && w[s + 5] === e[at + 5] && w[s + 6] === e[at + 6] && w[s + 7] === e[at + 7]
  }

  /** Stores the entry at `e[at]` (key, value) unless its key has a value. */
  add(e: Uint32Array, at: number): void {
    if ((this.used + 1) * 2 > this.slots) this.grow()
    this.put(e, at)
  }

  private put(e: Uint32Array, at: number): void {
    const slot = this.find(e, at)
    if (!this.isEmpty(slot)) return
    const w = this.words
    const s = slot * 8
    for (let i = 0; i < 8; i++) w[s + i] = e[at + i]!
    // An all-zero key marks an empty slot; the one key that is all zero (a 2^-128 chance) is moved by one bit.
    if (e[at] === 0 && e[at + 1] === 0 && e[at + 2] === 0 && e[at + 3] === 0) w[s] = 1
    this.used++
  }

  private isEmpty(slot: number): boolean {
    const w = this.words
    const s = slot * 8
    return w[s] === 0 && w[s + 1] === 0 && w[s + 2] === 0 && w[s + 3] === 0
  }

  private find(k: Uint32Array, at: number): number {
    const k1 = k[at + 1]!
    const k2 = k[at + 2]!
    const k3 = k[at + 3]!
    const k0 = k[at] === 0 && k1 === 0 && k2 === 0 && k3 === 0 ? 1 : k[at]!
    const mask = this.slots - 1
    const w = this.words
    for (let slot = k0 & mask; ; slot = (slot + 1) & mask) {
      const s = slot * 8
      if ((w[s] === 0 && w[s + 1] === 0 && w[s + 2] === 0 && w[s + 3] === 0) || (w[s] === k0 && w[s + 1] === k1 && w[s + 2] === k2 && w[s + 3] === k3)) return slot
    }
  }

  private grow(): void {
    const old = this.words
    this.words = new Uint32Array(old.length * 2)
    this.used = 0
    // A stored key is never all zero (put moves the one that is), so it is stored again as it is.
    for (let s = 0; s < old.length; s += 8) if (old[s] !== 0 || old[s + 1] !== 0 || old[s + 2] !== 0 || old[s + 3] !== 0) this.put(old, s)
  }
}

/**
 * Puts the first 16 bytes of SHA-256 of a text or bytes (a row's or a fact key's identity here) in
 * `into[at, at + 4)`, as four words. Hashing to a Latin-1 ('binary') string is cheaper than to a new
 * Buffer, which costs more than the hash of a short key.
 */
function hash16(data: string | Uint8Array, into: Uint32Array, at: number): void {
  const h = hash('sha256', data, 'binary')
  for (let i = 0; i < 4; i++) into[at + i] = (h.charCodeAt(4 * i) | (h.charCodeAt(4 * i + 1) << 8) | (h.charCodeAt(4 * i + 2) << 16) | (h.charCodeAt(4 * i + 3) << 24)) >>> 0
}

const partitionFolder = (schema: TableSchema, partition: Readonly<Record<string, string>>) => schema.partitionColumns.map((c) => `${c}=${partition[c]}`).join('/')

/** The text a fact key is hashed by: its sort columns' values. */
const keyText = (values: readonly unknown[]) => values.map(String).join('\u0000')

/**
 * The caller's side: checked rows in, encoded and staged in batches, to the thread; the parts written out.
 * After a failure (its own or the thread's), finish() gives the thread's failure first, as it is about an
 * earlier row.
 */
export class NewRowsJob {
  private readonly job: PartsJob<NewRowsItem>
  private readonly fact: boolean
  /**
   * Whether the table's key is a content id (TableSchema.contentIdKey), its own 128 bits its key's hash,
   * with no hash a row. Every key the table's `seen` holds is then such an id (this publish's ids are made
   * so; a parent's id that is not one is left out, as no new row can have it), so a key is never compared
   * with the SHA-256 of another kind of key.
   */
  private readonly idKeyed: boolean
  private readonly hashBytes: RowHashBytes
  private readonly callerHashesFromBacklog: number
  private readonly stageTextUnits: number
  private staged: Staging

  /** `callerHashesFromBacklog`: the thread's backlog from which the caller hashes rows (tests set 0, or Infinity for never). */
  constructor(readonly schema: TableSchema, opts: PartsJobOptions & NewRowsLimits & { callerHashesFromBacklog?: number }) {
    const seenCap = opts.seenCap ?? SEEN_CAP
    const settings: NewRowsSettings = {
      maxChunkBytes: opts.maxChunkBytes ?? CHUNK_TEXT_BYTES, maxChunkRows: opts.maxChunkRows ?? CHUNK_ROWS, seenCap, spillRecords: opts.spillRecords ?? SPILL_RECORDS,
      seenKeys: Math.min(opts.expectedKeys ?? 0, seenCap),
    }
    this.job = new PartsJob(schema, { maxInFlight: STAGED_IN_FLIGHT, ...opts }, NEW_ROWS_WORK, settings)
    this.fact = schema.kind === 'fact'
    this.idKeyed = schema.contentIdKey === true
    this.hashBytes = new RowHashBytes(schema)
    this.callerHashesFromBacklog = opts.callerHashesFromBacklog ?? CALLER_HASHES_FROM_BACKLOG
    this.stageTextUnits = opts.stageTextUnits ?? STAGE_TEXT_UNITS
    this.staged = new Staging(schema, new RowBatchBuilder(schema, { keys: false }))
  }

  /** A row of a parent's part: the same row (by key for a fact, by text for an event) is not written again. */
  parent(row: Record<string, unknown>): Promise<void> | undefined {
    const s = this.staged
    const at = s.parentCount * 8
    if (at === s.parentHashes.length) s.parentHashes = grown(s.parentHashes)
    const h = s.parentHashes
    // A parent's id that is not a content id is left out: no row of this publish has it.
    if (this.idKeyed && !contentIdWords(row[this.schema.sortColumns[0]!], h, at)) return undefined
    s.parentCount++
    hash16(this.hashBytes.of(row), h, at + 4)
    if (!this.fact) h.copyWithin(at, at + 4, at + 8)
    else if (!this.idKeyed) hash16(keyText(this.schema.sortColumns.map((c) => row[c])), h, at)
    return s.parentCount >= STAGE_ROWS ? this.post() : undefined
  }

  /**
   * A checked row (table-schemas.ts rowValidator) whose RFC 8785 text is `textBytes` of UTF-8, from `line`
   * of its records file (named by a fact conflict); a promise when rows go to the thread.
   */
  add(row: Record<string, unknown>, textBytes: number, line = 0): Promise<void> | undefined {
    const s = this.staged
    const { textUnits, negativeZero } = s.batch.add(row, textBytes)
    const r = s.batch.rows - 1
    if (r === s.textUnits.length) {
      s.textUnits = grown(s.textUnits)
      s.partitionOf = grown(s.partitionOf)
      s.hashes = grown(s.hashes)
      s.lines = grown(s.lines)
    }
    s.textUnits[r] = textUnits
    s.units += textUnits
    s.lines[r] = line
    const columns = this.schema.sortColumns
    // Indexed loops here: an iterator a row showed as a twentieth of the main thread's garbage. An id-keyed
    // table's rows are sorted by their ids' words (in `hashes`), not by a string a row.
    if (!this.idKeyed) for (let c = 0; c < columns.length; c++) s.sortValues.push(row[columns[c]!])
    s.partitionOf[r] = s.partitionIndex(row)
    // A row holding a float64 -0 is hashed here, by its bytes with zeros +0 as its text has them.
    if (negativeZero) {
      hash16(this.hashBytes.of(row), s.hashes, r * 8 + 4)
      s.hashedRows.push(r)
    }
    if (this.idKeyed) {
      if (!contentIdWords(row[columns[0]!], s.hashes, r * 8)) throw new Error(`${this.schema.name}: id ${JSON.stringify(row[columns[0]!])} is not a content id`)
    } else if (this.fact) hash16(columns.length === 1 ? String(row[columns[0]!]) : keyText(columns.map((c) => row[c])), s.hashes, r * 8)
    else s.texts.push(canonicalRowText(this.schema, row))
    return s.batch.rows >= STAGE_ROWS || s.units >= this.stageTextUnits ? this.post() : undefined
  }

  /** Sends what is staged: the parents' hashes, then rows (the parents come first, all of them). */
  private post(): Promise<void> {
    return this.send().catch(recordsFault)
  }

  private async send(): Promise<void> {
    const s = this.staged
    // Taken before any await: the next staging fills the same builder.
    const taken = s.batch.rows > 0 ? s.batch.take() : undefined
    this.staged = new Staging(this.schema, s.batch)
    if (s.parentCount > 0) await this.job.post({ kind: 'parents', hashes: s.parentHashes, count: s.parentCount }, [s.parentHashes.buffer as ArrayBuffer])
    if (!taken) return
    const { batch, transfer } = taken
    const backlog = this.job.backlog()
    const rowsHashed = backlog === undefined || backlog >= this.callerHashesFromBacklog
    if (rowsHashed) hashRows(batch, s.hashes, s.hashedRows)
    const rows: StagedRows = { batch, textUnits: s.textUnits, sortValues: s.sortValues, partitionOf: s.partitionOf, partitions: s.partitions, texts: s.texts, hashes: s.hashes, rowsHashed, hashedRows: s.hashedRows, lines: s.lines }
    await this.job.post({ kind: 'rows', rows }, [...transfer, s.textUnits.buffer as ArrayBuffer, s.partitionOf.buffer as ArrayBuffer, s.hashes.buffer as ArrayBuffer, s.lines.buffer as ArrayBuffer])
  }

  /** Writes what is staged and gives the parts written, in order. */
  async finish(): Promise<WrittenPart[]> {
    await this.post()
    return this.job.finish().catch(recordsFault)
  }

  /** Stops the thread and removes every temporary file. */
  abort(): Promise<void> {
    return this.job.abort()
  }
}

/** A fact conflict found on the thread is the records' fault (exit 2), as it is when found on the caller's. */
function recordsFault(err: unknown): never {
  if (err instanceof PipeError && err.code === ROWS_CODES.factConflict && err.exitCode !== 2) throw new PipeError(err.code, err.message, { exitCode: 2, ...(err.location ? { location: err.location } : {}) })
  throw err
}

/** What the caller gathers for the thread. */
class Staging {
  parentHashes = new Uint32Array(8 * 1024)
  parentCount = 0
  textUnits = new Float64Array(1024)
  /** The sum of textUnits. */
  units = 0
  partitionOf = new Int32Array(1024)
  hashes = new Uint32Array(8 * 1024)
  lines = new Int32Array(1024)
  /** Rows whose own hash is in `hashes` already (StagedRows.hashedRows). */
  readonly hashedRows: number[] = []
  readonly sortValues: unknown[] = []
  readonly partitions: Readonly<Record<string, string>>[] = []
  private readonly folders = new Map<string, number>()
  private lastPartition = 0
  readonly texts: string[] = []

  /** `batch`: the job's builder, which take() leaves empty, its buffers as large as they grew. */
  constructor(private readonly schema: TableSchema, readonly batch: RowBatchBuilder) {
  }

  private isLastPartition(row: Record<string, unknown>): boolean {
    const last = this.partitions[this.lastPartition]
    if (!last) return false
    // A loop: a closure a row (columns.every) cost as much as the lookup.
    const columns = this.schema.partitionColumns
    for (let c = 0; c < columns.length; c++) if (last[columns[c]!] !== row[columns[c]!]) return false
    return true
  }

  partitionIndex(row: Record<string, unknown>): number {
    const columns = this.schema.partitionColumns
    if (columns.length === 0) {
      if (this.partitions.length === 0) this.partitions.push({})
      return 0
    }
    // Rows mostly come in runs of one partition: the last one is tried first.
    if (this.isLastPartition(row)) return this.lastPartition
    const values = columns.map((c) => String(row[c]))
    const folder = values.join('/')
    let at = this.folders.get(folder)
    if (at === undefined) {
      at = this.partitions.push(Object.fromEntries(columns.map((c, i) => [c, values[i]!]))) - 1
      this.folders.set(folder, at)
    }
    this.lastPartition = at
    return at
  }
}

/** Puts each row's own hash (its bytes') in its entry, but those of `done`. */
function hashRows(batch: RowBatch, hashes: Uint32Array, done: readonly number[]): void {
  const { bytes, ends } = batch
  let skip = 0
  for (let r = 0; r < batch.rows; r++) {
    if (skip < done.length && done[skip] === r) {
      skip++
      continue
    }
    const start = r === 0 ? 0 : ends[r - 1]!
    hash16(new Uint8Array(bytes.buffer, bytes.byteOffset + start, ends[r]! - start), hashes, r * 8 + 4)
  }
}

function grown<T extends Float64Array | Int32Array | Uint32Array>(a: T): T {
  const next = new (a.constructor as new (n: number) => T)(a.length * 2)
  next.set(a as never)
  return next
}

/** Staged rows as the thread holds them until their chunk is written. */
interface Received {
  staged: Omit<StagedRows, 'hashedRows'>
  bytes: Buffer
  view: DataView
}

/** The thread's side of a `new-rows` job (parquet-write-worker.ts, or the caller's thread without one). */
export function newRowsWork(open: PartsJobOpen<NewRowsSettings>): PartsWork<NewRowsItem> {
  return new NewRows(open.files.schema, new PartFiles(open.files), open.settings)
}

/** What the thread's side of a job needs to start: its chunks' sizes and what it may keep of keys seen. */
interface NewRowsSettings { maxChunkBytes: number; maxChunkRows: number; seenCap: number; spillRecords: number; seenKeys: number }

const NEW_ROWS_WORK: PartsWorkMaker = { module: import.meta.url, name: newRowsWork.name }

/** A chunk's rows in the order they came, in parallel arrays (no object a row): where each is, and what sorts it. */
class Chunk {
  readonly sources: Received[] = []
  source = new Int32Array(1024)
  row = new Int32Array(1024)
  folder = new Int32Array(1024)
  /** The sort values, the schema's sort columns a row; none for an id-keyed table. */
  readonly keys: unknown[] = []
  /** An id-keyed table's ids, four words a row (contentIdWords). */
  ids = new Uint32Array(4 * 1024)
  /** Event rows' RFC 8785 texts. */
  readonly texts: string[] = []
  count = 0
  /** The chunk's measure: its rows' texts in UTF-16 units and 64 a row, whatever form they are kept in. */
  measure = 0

  push(source: number, row: number, folder: number): void {
    const e = this.count++
    if (e === this.row.length) {
      this.source = grown(this.source)
      this.row = grown(this.row)
      this.folder = grown(this.folder)
      this.ids = grown(this.ids)
    }
    this.source[e] = source
    this.row[e] = row
    this.folder[e] = folder
  }
}

/**
 * What a row's look-up decided: kept, left out (its table has the row), refused (its key has another row),
 * known only once the spilled keys are merged, or (spilling) kept and placed at once, its key spilled for
 * the rows after it.
 */
const KEEP = 0
const DROP = 1
const CONFLICT = 2
const PENDING = 3
const PLACED = 4

/**
 * A spilled key: its four words, its order (two words, high then low: parents' keys first, then the rows'
 * in the order they came), its row's hash (four words), and 1 for a new row's key or 0 for a parent's.
 * Sorted by key, then order: the first of a key is the one the table would have kept.
 */
const SPILL_KEY_WORDS = 11
const SPILL_KEY_SORT_WORDS = 6
const [ORDER_HIGH, ORDER_LOW, ROW_HASH, IS_NEW] = [4, 5, 6, 10]
/** A spilled row's decision: its order (two words) and what was decided (DROP or CONFLICT; a row without one is kept). */
const DECISION_WORDS = 3

/** Keys the in-memory table holds before the rest spill: 2^21 slots, 64 MB (HashTable128 doubles at half full). */
export const SEEN_CAP = 2 ** 20
/** Spilled keys sorted in memory before a run is written (44 bytes each: 23 MB). */
export const SPILL_RECORDS = 2 ** 19

/** Staged rows as spilled: what placing them needs, with each row's decision so far (a row placed already is DROP or PLACED). */
interface SpilledRows {
  staged: Omit<StagedRows, 'hashedRows'>
  status: Uint8Array
  /** The order of the first of its PENDING and PLACED rows, whose keys were spilled (the rest follow in row order). */
  firstOrder: number
}

/** 2^27 bits (16 MB): at ten million spilled keys, one row in about 230 that no spilled key equals still waits for the merge. */
const BLOOM_WORDS = 2 ** 22

/** The spilled keys, as a Bloom filter over their four words (each a uniform hash): "no" is sure, "perhaps" is not. */
class KeyBloom {
  private readonly bits = new Uint32Array(BLOOM_WORDS)

  add(e: Uint32Array, at: number): void {
    for (let w = 0; w < 4; w++) {
      const bit = e[at + w]! & (BLOOM_WORDS * 32 - 1)
      this.bits[bit >>> 5]! |= 1 << (bit & 31)
    }
  }

  mayHave(e: Uint32Array, at: number): boolean {
    for (let w = 0; w < 4; w++) {
      const bit = e[at + w]! & (BLOOM_WORDS * 32 - 1)
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false
    }
    return true
  }
}

/**
 * The keys a table's in-memory `seen` has no room for, on disk (spill-sort.ts), and the rows that came
 * after it filled which cannot be decided at once. A row whose key the full table holds is decided at once,
 * and so is one whose key no spilled key can equal (the Bloom filter says so): it is the first of its key,
 * kept and placed at once, its key spilled for the rows after it (a fact row's; an event row's matters only
 * against the parents'). The others' keys are spilled with their order, and once every row has come the
 * keys are merged: of the rows with one key, the first decides the others as the table would have (a fact
 * row is left out when it is the first's row, refused when it differs; an event row is left out when a
 * parent has it). The rows that waited are then placed from the spill in the order they came. A refusal
 * waits too, so the one named is the first in the order rows came.
 */
class KeySpill {
  private readonly keys: SpillSort
  private readonly rowSpill: RecordSpill<SpilledRows>
  private readonly entry = new Uint32Array(SPILL_KEY_WORDS)
  private readonly bloom = new KeyBloom()
  private order = 0
  /** Parents' keys spilled: an event row is pending only when there are some. */
  parentKeys = 0

  constructor(private readonly dir: string, private readonly prefix: string, private readonly fact: boolean, private readonly records: number) {
    this.keys = new SpillSort(dir, prefix, SPILL_KEY_WORDS, SPILL_KEY_SORT_WORDS, records)
    this.rowSpill = new RecordSpill(dir, prefix)
  }

  /** Spills the entry (key, then row hash) at `e[at]`; a parent's or a new row's. */
  key(e: Uint32Array, at: number, isNew: boolean): Promise<void> | undefined {
    this.bloom.add(e, at)
    const k = this.entry
    for (let w = 0; w < 4; w++) k[w] = e[at + w]!
    k[ORDER_HIGH] = Math.floor(this.order / 2 ** 32)
    k[ORDER_LOW] = this.order >>> 0
    for (let w = 0; w < 4; w++) k[ROW_HASH + w] = e[at + 4 + w]!
    k[IS_NEW] = isNew ? 1 : 0
    this.order++
    if (!isNew) this.parentKeys++
    return this.keys.push(k, 0)
  }

  /**
   * Decides the PENDING rows no spilled key can equal (KEEP, or PLACED when their key is spilled), spills
   * the keys the merge needs, and spills the rows when some must wait (PENDING, or a refusal). The caller
   * places the KEEP and PLACED rows now.
   */
  async rows(s: StagedRows, status: Uint8Array): Promise<void> {
    const firstOrder = this.order
    let waiting = false
    for (let r = 0; r < status.length; r++) {
      if (status[r] === CONFLICT) waiting = true
      if (status[r] !== PENDING) continue
      // An event row's key is its own hash.
      const at = this.fact ? r * 8 : r * 8 + 4
      if (!this.bloom.mayHave(s.hashes, at)) {
        if (!this.fact) {
          status[r] = KEEP
          continue
        }
        status[r] = PLACED
      } else waiting = true
      const wait = this.key(s.hashes, at, true)
      if (wait) await wait
    }
    if (!waiting) return
    // The hashes go too: an id-keyed table's rows are sorted by the ids in them.
    const { hashedRows: _hashedRows, ...staged } = s
    // Rows placed now are left out when the rest are placed.
    await this.rowSpill.write({ staged, status: status.map((x) => (x === KEEP ? DROP : x)), firstOrder })
  }

  /** The spilled rows in the order they came, every decision made. */
  async *placed(): AsyncGenerator<SpilledRows> {
    const decisions = await this.decide()
    const next = decisions.sorted()[Symbol.asyncIterator]()
    let block: { words: Uint32Array; count: number } | undefined
    let at = 0
    const advance = async (): Promise<void> => {
      at += DECISION_WORDS
      if (block && at < block.count * DECISION_WORDS) return
      const n = await next.next()
      block = n.done ? undefined : n.value
      at = 0
    }
    at = -DECISION_WORDS
    await advance()
    for await (const spilled of this.rowSpill.read()) {
      let order = spilled.firstOrder
      const { status } = spilled
      for (let r = 0; r < status.length; r++) {
        if (status[r] === PLACED) order++
        if (status[r] !== PENDING) continue
        if (block && block.words[at]! * 2 ** 32 + block.words[at + 1]! === order) {
          status[r] = block.words[at + 2]!
          await advance()
        } else status[r] = KEEP
        order++
      }
      yield spilled
    }
  }

  /** Merges the spilled keys into the decisions on rows that are not kept, sorted by the rows' order. */
  private async decide(): Promise<SpillSort> {
    const decisions = new SpillSort(this.dir, this.prefix, DECISION_WORDS, 2, this.records)
    const decision = new Uint32Array(DECISION_WORDS)
    const first = new Uint32Array(SPILL_KEY_WORDS)
    let any = false
    for await (const { words, count } of this.keys.sorted()) {
      for (let e = 0; e < count * SPILL_KEY_WORDS; e += SPILL_KEY_WORDS) {
        if (!any || words[e] !== first[0] || words[e + 1] !== first[1] || words[e + 2] !== first[2] || words[e + 3] !== first[3]) {
          first.set(words.subarray(e, e + SPILL_KEY_WORDS))
          any = true
          continue
        }
        if (words[e + IS_NEW] === 0) continue
        let status = KEEP
        if (!this.fact) status = first[IS_NEW] === 0 ? DROP : KEEP
        else {
          let same = true
          for (let w = ROW_HASH; w < ROW_HASH + 4; w++) same &&= words[e + w] === first[w]
          status = same ? DROP : CONFLICT
        }
        if (status === KEEP) continue
        decision[0] = words[e + ORDER_HIGH]!
        decision[1] = words[e + ORDER_LOW]!
        decision[2] = status
        const wait = decisions.push(decision, 0)
        if (wait) await wait
      }
    }
    return decisions
  }
}

class NewRows implements PartsWork<NewRowsItem> {
  private chunk = new Chunk()
  /** Partition folders (`class_group=x/tiling_group=y`) by number, and their partitions. */
  private readonly folderNames: string[] = []
  private readonly folderPartitions: Readonly<Record<string, string>>[] = []
  private readonly folderNumbers = new Map<string, number>()
  /** Fact key hash → row hash (the parents' and this publish's); event row hashes of the parents; at most `seenCap` keys. */
  private readonly seen: HashTable128
  /** What `seen` has no room for, once it is full. */
  private spill: KeySpill | undefined
  private readonly fact: boolean
  private readonly columns: ((a: unknown, b: unknown) => number)[]
  /** Whether the first sort column is text, whose chunk is sorted by utf8OrderPrefix first. */
  private readonly textFirst: boolean
  /** Whether the table's key is a content id (NewRowsJob.idKeyed), by whose words its chunks are sorted. */
  private readonly idKeyed: boolean
  /** The chunk writeChunk sorts, which compareRows reads. */
  private sorting: { folder: Int32Array; keys: unknown[]; texts: string[]; prefix: Float64Array | undefined; prefix2: Float64Array | undefined; ids: Uint32Array | undefined } | undefined

  /**
   * How two rows of the chunk being sorted compare. One comparator for the table's chunks, reading the
   * chunk from `sorting`: one made for each chunk was compiled anew for each (43 times a publish).
   */
  private readonly compareRows = (i: number, j: number): number => {
    const { folder, keys, texts, prefix, prefix2, ids } = this.sorting!
    if (folder[i] !== folder[j]) return compareUtf8(this.folderNames[folder[i]!]!, this.folderNames[folder[j]!]!)
    // Content ids: their words in order are their hex digits' (id-table.ts), all 128 bits of them.
    if (ids) {
      for (let w = 0; w < 4; w++) {
        const a = ids[4 * i + w]!
        const b = ids[4 * j + w]!
        if (a !== b) return a < b ? -1 : 1
      }
      return 0
    }
    // -1 or 1, not the difference: a double returned to the sort is a heap number a comparison.
    if (prefix && prefix[i] !== prefix[j]) return prefix[i]! < prefix[j]! ? -1 : 1
    if (prefix2 && prefix2[i] !== prefix2[j]) return prefix2[i]! < prefix2[j]! ? -1 : 1
    const columns = this.columns
    const n = columns.length
    for (let c = 0; c < n; c++) {
      const d = columns[c]!(keys[i * n + c], keys[j * n + c])
      if (d !== 0) return d
    }
    return compareUtf8(texts[i]!, texts[j]!)
  }

  constructor(readonly schema: TableSchema, private readonly files: PartFiles, private readonly limits: NewRowsSettings) {
    this.seen = new HashTable128(limits.seenKeys)
    this.fact = schema.kind === 'fact'
    this.idKeyed = schema.contentIdKey === true
    this.columns = schema.sortColumns.map((c) => sortColumnComparator(schema, c))
    const first = schema.columns.find((c) => c.name === schema.sortColumns[0])!.type.kind
    this.textFirst = first === 'string' || first === 'time'
  }

  private startSpill(): KeySpill {
    return (this.spill ??= new KeySpill(this.files.dir, this.files.prefix, this.fact, this.limits.spillRecords))
  }

  async add(item: NewRowsItem): Promise<void> {
    if (item.kind === 'parents') {
      const h = item.hashes
      for (let r = 0; r < item.count; r++) {
        if (!this.spill && this.seen.size < this.limits.seenCap) this.seen.add(h, r * 8)
        else if (!this.seen.has(h, r * 8)) {
          const wait = this.startSpill().key(h, r * 8, false)
          if (wait) await wait
        }
      }
      return
    }
    const s = item.rows
    if (!s.rowsHashed) hashRows(s.batch, s.hashes, s.hashedRows)
    // Only a fact table's rows add keys.
    if (this.fact && !this.spill && this.seen.size + s.batch.rows > this.limits.seenCap) this.startSpill()
    const status = new Uint8Array(s.batch.rows)
    if (this.spill) {
      this.lookUp(s, status, this.fact || this.spill.parentKeys > 0 ? PENDING : KEEP)
      await this.spill.rows(s, status)
      return this.place(s, status, true)
    }
    this.lookUp(s, status, KEEP)
    return this.place(s, status, false)
  }

  /**
   * Decides each row by `seen`: a fact row whose key it has is left out or refused; one it lacks is
   * `unknown`'s, and its key is added while the table has room (no spill). An event row is left out when
   * a parent has it.
   */
  private lookUp(s: StagedRows, status: Uint8Array, unknown: number): void {
    const entries = s.hashes
    const adding = !this.spill
    for (let r = 0; r < status.length; r++) {
      const entry = r * 8
      if (this.fact) {
        const same = this.seen.holds(entries, entry)
        status[r] = same === undefined ? unknown : same ? DROP : CONFLICT
        if (same === undefined && adding) this.seen.add(entries, entry)
      } else status[r] = this.seen.has(entries, entry + 4) ? DROP : unknown
    }
  }

  /**
   * Puts the rows kept in the chunk, in order, writing it when full; refuses at the first row refused.
   * `now`: a spilling table's rows decided at once (KEEP and PLACED), the rest left to the spill.
   */
  private async place(s: Omit<StagedRows, 'hashedRows'>, status: Uint8Array, now: boolean): Promise<void> {
    const { batch } = s
    const bytes = Buffer.from(batch.bytes.buffer, batch.bytes.byteOffset, batch.bytes.byteLength)
    const staged: Received = { staged: s, bytes, view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength) }
    const folders = s.partitions.map((p) => this.folderNumber(p))
    for (let r = 0; r < batch.rows; ) {
      r = this.placeRows(staged, status, now, folders, r)
      if (this.full()) await this.writeChunk()
    }
  }

  /** Whether the chunk holds its text or its rows. */
  private full(): boolean {
    return this.chunk.measure >= this.limits.maxChunkBytes || this.chunk.count >= this.limits.maxChunkRows
  }

  /**
   * Puts rows from `from` in the chunk until it is full; returns the row after the last it took (the row
   * count at the end). A plain method, apart from the awaits of place: as one async loop it was compiled a
   * dozen times a publish, its optimised code thrown away at each new kind of batch.
   */
  private placeRows(received: Received, status: Uint8Array, now: boolean, folders: readonly number[], from: number): number {
    const s = received.staged
    const rows = s.batch.rows
    const n = this.schema.sortColumns.length
    const chunk = this.chunk
    let source = -1
    for (let r = from; r < rows; r++) {
      if (now ? status[r] !== KEEP && status[r] !== PLACED : status[r] !== KEEP && status[r] !== CONFLICT) continue // DROP: the table has it already, from a parent or earlier in this publish
      if (status[r] === CONFLICT) {
        const key = this.idKeyed ? [contentIdText(s.hashes, r * 8)] : s.sortValues.slice(r * n, r * n + n)
        const line = s.lines[r]!
        throw new PipeError(ROWS_CODES.factConflict, `${this.schema.name}: two different rows for ${this.schema.sortColumns.map((c, i) => `${c} ${JSON.stringify(String(key[i]))}`).join(', ')} (a fact row is the same wherever it appears)`, { exitCode: 2, ...(line > 0 ? { location: { line } } : {}) })
      }
      if (source < 0) source = chunk.sources.push(received) - 1
      chunk.push(source, r, folders[s.partitionOf[r]!]!)
      if (this.idKeyed) {
        const at = 4 * (chunk.count - 1)
        for (let w = 0; w < 4; w++) chunk.ids[at + w] = s.hashes[r * 8 + w]!
      } else for (let c = 0; c < n; c++) chunk.keys.push(s.sortValues[r * n + c])
      if (!this.fact) chunk.texts.push(s.texts[r]!)
      chunk.measure += s.textUnits[r]! + 64
      if (this.full()) return r + 1
    }
    return rows
  }

  private folderNumber(partition: Readonly<Record<string, string>>): number {
    const text = partitionFolder(this.schema, partition)
    let at = this.folderNumbers.get(text)
    if (at === undefined) {
      at = this.folderNames.push(text) - 1
      this.folderPartitions.push(partition)
      this.folderNumbers.set(text, at)
    }
    return at
  }

  /** Writes the chunk: sorted, a run of parts for each partition. */
  private async writeChunk(): Promise<void> {
    const { sources, source, row, folder, keys, texts, ids, count } = this.chunk
    this.chunk = new Chunk()
    const n = this.columns.length
    const order = new Int32Array(count)
    for (let e = 0; e < count; e++) order[e] = e
    // Two prefixes, units 0-2 and 3-5: a chunk holds more ids than one prefix of hex digits has values, and
    // the ties it left, each a full compareUtf8, were most of the sort's time.
    const prefix = this.textFirst && !this.idKeyed ? new Float64Array(count) : undefined
    const prefix2 = this.textFirst && !this.idKeyed ? new Float64Array(count) : undefined
    if (prefix && prefix2) {
      for (let e = 0; e < count; e++) {
        prefix[e] = utf8OrderPrefix(keys[e * n] as string)
        prefix2[e] = utf8OrderPrefix(keys[e * n] as string, 3)
      }
    }
    this.sorting = { folder, keys, texts, prefix, prefix2, ids: this.idKeyed ? ids : undefined }
    order.sort(this.compareRows)
    this.sorting = undefined
    const rowKeys: RowKeys = this.idKeyed ? { text: (e) => contentIdText(ids, 4 * e) } : { text: (e) => String(keys[e * n]) }
    for (let k = 0; k < count; k++) {
      const e = order[k]!
      if (k === 0 || folder[e] !== folder[order[k - 1]!]) this.files.startRun(this.folderPartitions[folder[e]!]!)
      const { staged, bytes, view } = sources[source[e]!]!
      const r = row[e]!
      const wrote = this.files.row(bytes, view, r === 0 ? 0 : staged.batch.ends[r - 1]!, staged.batch.textBytes[r]!, rowKeys, e)
      if (wrote) await wrote
      if (k + 1 === count || folder[order[k + 1]!] !== folder[e]) await this.files.endRun()
    }
  }

  async finish(): Promise<WrittenPart[]> {
    if (this.spill) for await (const { staged, status } of this.spill.placed()) await this.place(staged, status, false)
    if (this.chunk.count > 0) await this.writeChunk()
    return this.files.finish()
  }
}

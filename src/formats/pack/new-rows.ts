/**
 * The new rows of one table, sorted as parts must hold them, in bounded memory. "Each part's rows are
 * sorted ...; parts are not sorted across each other": so rows gather in a chunk of about `chunkBytes` of
 * text, and each full chunk is sorted (by partition, the table's sort columns — text by UTF-8 bytes,
 * integers by value, false before true — then the rows' RFC 8785 text) and written as parts of its own.
 * No row is held beyond its chunk, and nothing is spilled and merged.
 *
 * Rows the parents already have are left out (a fact row by its key, an event row by its text), and a fact
 * key given twice is kept once; a fact key given two different rows is refused. What is remembered for
 * this are 128-bit hashes of keys and rows: 32 bytes a row of the feed.
 *
 * A chunk holds its rows encoded (row-bytes.ts), a fraction of their objects and nothing the garbage
 * collector traces; a row is hashed by those bytes, which are the same exactly when its RFC 8785 texts are.
 * A full chunk goes to the part writer's thread as it is, with the order to write it in, while the next
 * chunk fills. Only event rows keep their text, which breaks ties between rows equal on the sort columns (a
 * fact table has none: its sort columns are its key).
 */
import { hash } from 'node:crypto'
import { PipeError } from '../../core/errors.js'
import type { PartitionRun } from './parquet-write.js'
import { RowBatchBuilder, RowHashBytes, type RowBatch } from './row-bytes.js'
import { canonicalRowText, compareUtf8, sortColumnsComparator, type TableSchema } from './table-schemas.js'

/** About 8 MiB of row text a chunk: some eight thousand pattern rows, about 5 MB encoded. */
export const CHUNK_TEXT_BYTES = 8 * 1024 * 1024

export const ROWS_CODES = { factConflict: 'pack.fact-conflict' } as const

interface Entry {
  part: string
  key: unknown[]
  /** The row's RFC 8785 text, for an event row. */
  text: string | undefined
  /** The row's number in the chunk's batch. */
  row: number
}

/** Where a full chunk goes: its batch, the order to write its rows in, and its partitions' runs. */
export type ChunkSink = (taken: { batch: RowBatch; transfer: ArrayBuffer[] }, order: Int32Array, runs: PartitionRun[]) => Promise<void>

/** A set of 128-bit hashes (four words), each with a 128-bit value, in open addressing over flat words. */
export class HashTable128 {
  private words = new Uint32Array(8 * 1024)
  private used = 0

  private get slots(): number {
    return this.words.length / 8
  }

  /** Whether `key` is stored. */
  has(key: Uint32Array): boolean {
    return !this.isEmpty(this.find(key))
  }

  /** Whether `key` is stored with `value`, or undefined when it is not stored. */
  holds(key: Uint32Array, value: Uint32Array): boolean | undefined {
    const s = this.find(key) * 8
    if (this.isEmpty(s / 8)) return undefined
    const w = this.words
    return w[s + 4] === value[0] && w[s + 5] === value[1] && w[s + 6] === value[2] && w[s + 7] === value[3]
  }

  /** Stores `value` for `key` unless it has one. */
  add(key: Uint32Array, value: Uint32Array): void {
    if ((this.used + 1) * 2 > this.slots) this.grow()
    const at = this.find(key)
    if (!this.isEmpty(at)) return
    const w = this.words
    w.set(key, at * 8)
    // An all-zero key marks an empty slot; the one key that is all zero (a 2^-128 chance) is moved by one bit.
    if (key[0] === 0 && key[1] === 0 && key[2] === 0 && key[3] === 0) w[at * 8] = 1
    w.set(value, at * 8 + 4)
    this.used++
  }

  private isEmpty(at: number): boolean {
    const w = this.words
    return w[at * 8] === 0 && w[at * 8 + 1] === 0 && w[at * 8 + 2] === 0 && w[at * 8 + 3] === 0
  }

  private find(k: Uint32Array): number {
    const k0 = k[0] === 0 && k[1] === 0 && k[2] === 0 && k[3] === 0 ? 1 : k[0]!
    const mask = this.slots - 1
    const w = this.words
    for (let at = k0 & mask; ; at = (at + 1) & mask) {
      const s = at * 8
      if ((w[s] === 0 && w[s + 1] === 0 && w[s + 2] === 0 && w[s + 3] === 0) || (w[s] === k0 && w[s + 1] === k[1] && w[s + 2] === k[2] && w[s + 3] === k[3])) return at
    }
  }

  private grow(): void {
    const old = this.words
    this.words = new Uint32Array(old.length * 2)
    this.used = 0
    for (let s = 0; s < old.length; s += 8) {
      if (old[s] === 0 && old[s + 1] === 0 && old[s + 2] === 0 && old[s + 3] === 0) continue
      const at = this.find(old.subarray(s, s + 4))
      this.words.set(old.subarray(s, s + 8), at * 8)
      this.used++
    }
  }
}

/**
 * Puts the first 16 bytes of SHA-256 of a text or bytes (a row's or a fact key's identity here) in `into`,
 * as four words. Hashing to a Latin-1 ('binary') string is cheaper than to a new Buffer, which costs more than the hash
 * of a short key.
 */
function hash16(data: string | Uint8Array, into: Uint32Array): Uint32Array {
  const h = hash('sha256', data, 'binary')
  for (let i = 0; i < 4; i++) into[i] = (h.charCodeAt(4 * i) | (h.charCodeAt(4 * i + 1) << 8) | (h.charCodeAt(4 * i + 2) << 16) | (h.charCodeAt(4 * i + 3) << 24)) >>> 0
  return into
}

export class NewRows {
  private entries: Entry[] = []
  private chunkBytes = 0
  private batch: RowBatchBuilder
  private readonly hashBytes: RowHashBytes
  /** The partitions of the chunk's rows, by their folder text. */
  private partitions = new Map<string, Readonly<Record<string, string>>>()
  /** Fact key hash → row hash (the parents' and this publish's); event row hashes of the parents. */
  private readonly seen = new HashTable128()
  private readonly fact: boolean
  private readonly compare: (a: Entry, b: Entry) => number

  constructor(readonly schema: TableSchema, private readonly sink: ChunkSink, private readonly maxChunkBytes = CHUNK_TEXT_BYTES) {
    this.fact = schema.kind === 'fact'
    this.batch = new RowBatchBuilder(schema)
    this.hashBytes = new RowHashBytes(schema)
    const byKey = sortColumnsComparator({ ...schema, sortColumns: schema.sortColumns.map((_, i) => String(i)), columns: schema.sortColumns.map((c, i) => ({ ...schema.columns.find((x) => x.name === c)!, name: String(i) })) })
    this.compare = (a, b) => (a.part === b.part ? 0 : compareUtf8(a.part, b.part)) || byKey(a.key, b.key) || compareUtf8(a.text!, b.text!)
  }

  // Scratch for the two hashes of a row: HashTable128 keeps copies.
  private readonly keyScratch = new Uint32Array(4)
  private readonly rowScratch = new Uint32Array(4)

  private keyHash(row: Record<string, unknown>): Uint32Array {
    return hash16(this.schema.sortColumns.map((c) => String(row[c])).join('\u0000'), this.keyScratch)
  }

  /** A row of a parent: the same row (by key for a fact, by text for an event) is not written again. */
  parent(row: Record<string, unknown>): void {
    const rowHash = hash16(this.hashBytes.of(row), this.rowScratch)
    this.seen.add(this.fact ? this.keyHash(row) : rowHash, rowHash)
  }

  /** A checked row (table-schemas.ts rowValidator) whose RFC 8785 text is `textBytes` of UTF-8. */
  async add(row: Record<string, unknown>, textBytes: number): Promise<void> {
    const { textUnits, negativeZero } = this.batch.add(row, textBytes)
    const r = this.batch.rows - 1
    const rowHash = hash16(negativeZero ? this.hashBytes.of(row) : this.batch.rowBytes(r), this.rowScratch)
    if (this.fact) {
      const key = this.keyHash(row)
      const same = this.seen.holds(key, rowHash)
      if (same === false) {
        throw new PipeError(ROWS_CODES.factConflict, `${this.schema.name}: two different rows for ${this.schema.sortColumns.map((c) => `${c} ${JSON.stringify(String(row[c]))}`).join(', ')} (a fact row is the same wherever it appears)`, { exitCode: 2 })
      }
      if (same) {
        this.batch.dropLast() // the table has it already: from a parent, or earlier in this publish
        return
      }
      this.seen.add(key, rowHash)
    } else if (this.seen.has(rowHash)) {
      this.batch.dropLast()
      return
    }
    const part = this.schema.partitionColumns.map((c) => `${c}=${String(row[c])}`).join('/')
    if (!this.partitions.has(part)) this.partitions.set(part, Object.fromEntries(this.schema.partitionColumns.map((c) => [c, String(row[c])])))
    this.entries.push({ part, key: this.schema.sortColumns.map((c) => row[c]), text: this.fact ? undefined : canonicalRowText(this.schema, row), row: r })
    // The chunk's measure is its rows' texts in UTF-16 units and 64 a row, whatever form they are kept in.
    this.chunkBytes += textUnits + 64
    if (this.chunkBytes >= this.maxChunkBytes) await this.end()
  }

  /** Writes what is gathered. */
  async end(): Promise<void> {
    if (this.entries.length === 0) return
    const entries = this.entries.sort(this.compare)
    const order = new Int32Array(entries.length)
    const runs: PartitionRun[] = []
    for (let i = 0; i < entries.length; i++) {
      order[i] = entries[i]!.row
      if (i + 1 === entries.length || entries[i + 1]!.part !== entries[i]!.part) runs.push({ partition: this.partitions.get(entries[i]!.part)!, end: i + 1, close: true })
    }
    this.entries = []
    this.chunkBytes = 0
    this.partitions = new Map()
    await this.sink(this.batch.take(), order, runs)
  }
}

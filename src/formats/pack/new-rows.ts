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

/** A set of 128-bit hashes, each with a 128-bit value, in open addressing over flat words. */
export class HashTable128 {
  private words = new Uint32Array(8 * 1024)
  private used = 0

  private get slots(): number {
    return this.words.length / 8
  }

  /** The value stored for `key` (16 bytes), or undefined. */
  get(key: Uint8Array): Uint32Array | undefined {
    const at = this.find(key)
    return this.words[at * 8]! === 0 && this.words[at * 8 + 1]! === 0 && this.words[at * 8 + 2]! === 0 && this.words[at * 8 + 3]! === 0 ? undefined : this.words.subarray(at * 8 + 4, at * 8 + 8)
  }

  /** Stores `value` (16 bytes) for `key` unless it has one. */
  add(key: Uint8Array, value: Uint8Array): void {
    if ((this.used + 1) * 2 > this.slots) this.grow()
    const at = this.find(key)
    const w = this.words
    if (w[at * 8]! === 0 && w[at * 8 + 1]! === 0 && w[at * 8 + 2]! === 0 && w[at * 8 + 3]! === 0) {
      const k = new Uint32Array(key.buffer, key.byteOffset, 4)
      const v = new Uint32Array(value.buffer, value.byteOffset, 4)
      // An all-zero key marks an empty slot; the one key that is all zero (a 2^-128 chance) is moved by one bit.
      w.set(k, at * 8)
      if (k[0] === 0 && k[1] === 0 && k[2] === 0 && k[3] === 0) w[at * 8] = 1
      w.set(v, at * 8 + 4)
      this.used++
    }
  }

  private find(key: Uint8Array): number {
    const k = new Uint32Array(key.buffer, key.byteOffset, 4)
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
      const at = this.find(new Uint8Array(old.buffer, s * 4, 16))
      this.words.set(old.subarray(s, s + 8), at * 8)
      this.used++
    }
  }
}

/** The first 16 bytes of SHA-256 of a text or bytes: a row's or a fact key's identity here. */
function hash16(data: string | Uint8Array): Uint8Array {
  // Its own buffer, 4-aligned for HashTable128's word views.
  const out = new Uint8Array(16)
  out.set(hash('sha256', data, 'buffer').subarray(0, 16))
  return out
}

const sameHash = (stored: Uint32Array, h: Uint8Array) => {
  const w = new Uint32Array(h.buffer, h.byteOffset, 4)
  return stored[0] === w[0] && stored[1] === w[1] && stored[2] === w[2] && stored[3] === w[3]
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

  private keyHash(row: Record<string, unknown>): Uint8Array {
    return hash16(this.schema.sortColumns.map((c) => String(row[c])).join('\u0000'))
  }

  /** A row of a parent: the same row (by key for a fact, by text for an event) is not written again. */
  parent(row: Record<string, unknown>): void {
    const rowHash = hash16(this.hashBytes.of(row))
    this.seen.add(this.fact ? this.keyHash(row) : rowHash, rowHash)
  }

  /** A checked row (table-schemas.ts rowValidator) whose RFC 8785 text is `textBytes` of UTF-8. */
  async add(row: Record<string, unknown>, textBytes: number): Promise<void> {
    const { textUnits, negativeZero } = this.batch.add(row, textBytes)
    const r = this.batch.rows - 1
    const rowHash = hash16(negativeZero ? this.hashBytes.of(row) : this.batch.rowBytes(r))
    if (this.fact) {
      const key = this.keyHash(row)
      const stored = this.seen.get(key)
      if (stored) {
        if (!sameHash(stored, rowHash)) {
          throw new PipeError(ROWS_CODES.factConflict, `${this.schema.name}: two different rows for ${this.schema.sortColumns.map((c) => `${c} ${JSON.stringify(String(row[c]))}`).join(', ')} (a fact row is the same wherever it appears)`, { exitCode: 2 })
        }
        this.batch.dropLast() // the table has it already: from a parent, or earlier in this publish
        return
      }
      this.seen.add(key, rowHash)
    } else if (this.seen.get(rowHash)) {
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

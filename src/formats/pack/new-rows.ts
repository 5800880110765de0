/**
 * The new rows of one table, sorted as parts must hold them, in bounded memory. "Each part's rows are
 * sorted ...; parts are not sorted across each other": so rows gather in a chunk of about `chunkBytes` of
 * text, and each full chunk is sorted (by partition, the table's sort columns — text by UTF-8 bytes,
 * integers by value, false before true — then the rows' RFC 8785 text) and written as parts of its own.
 * No row is held beyond its chunk, and nothing is spilled and merged.
 *
 * Rows the parents already have are left out (a fact row by its key, an event row by its text), and a fact
 * key given twice is kept once; a fact key given two different rows is refused. What is remembered for
 * this are 128-bit hashes of keys and texts: 32 bytes a row of the feed.
 *
 * A chunk entry is the row's sort values and text, read back with JSON.parse when written: one flat
 * string a row costs a fraction of its objects. The text loses only the sign of a float64 -0 (JSON writes
 * it 0), so a row holding one (a lattice vector, a corner) is kept whole.
 */
import { createHash } from 'node:crypto'
import { PipeError } from '../../core/errors.js'
import { canonicalRowText, compareUtf8, sortColumnsComparator, type TableSchema } from './table-schemas.js'

/** About 8 MiB of row text a chunk: some thirty thousand pattern rows, a few tens of MB of heap. */
export const CHUNK_TEXT_BYTES = 8 * 1024 * 1024

export const ROWS_CODES = { factConflict: 'pack.fact-conflict' } as const

interface Entry {
  part: string
  key: unknown[]
  text: string
  whole?: Record<string, unknown>
}

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

/** The first 16 bytes of SHA-256 of a text: a row's or a fact key's identity here. */
function hash16(text: string): Buffer {
  const out = Buffer.from(new ArrayBuffer(16)) // its own buffer, 4-aligned for HashTable128's word views
  createHash('sha256').update(text).digest().copy(out, 0, 0, 16)
  return out
}

function holdsNegativeZero(v: unknown): boolean {
  if (typeof v === 'number') return Object.is(v, -0)
  if (Array.isArray(v)) return v.some(holdsNegativeZero)
  if (v !== null && typeof v === 'object') {
    for (const k in v) if (holdsNegativeZero((v as Record<string, unknown>)[k])) return true
  }
  return false
}

const partOf = (schema: TableSchema, row: Record<string, unknown>) => schema.partitionColumns.map((c) => `${c}=${String(row[c])}`).join('/')

export class NewRows {
  private chunk: Entry[] = []
  private chunkBytes = 0
  /** Fact key hash → text hash (the parents' and this publish's); event text hashes of the parents. */
  private readonly seen = new HashTable128()
  private readonly fact: boolean
  private readonly floats: boolean
  private readonly compare: (a: Entry, b: Entry) => number

  /** `flush` writes one sorted chunk's rows (each with its partition folder text). */
  constructor(readonly schema: TableSchema, private readonly flush: (rows: { part: string; row: Record<string, unknown> }[]) => Promise<void>, private readonly maxChunkBytes = CHUNK_TEXT_BYTES) {
    this.fact = schema.kind === 'fact'
    this.floats = JSON.stringify(schema.columns).includes('"float64"')
    const byKey = sortColumnsComparator({ ...schema, sortColumns: schema.sortColumns.map((_, i) => String(i)), columns: schema.sortColumns.map((c, i) => ({ ...schema.columns.find((x) => x.name === c)!, name: String(i) })) })
    this.compare = (a, b) => (a.part === b.part ? 0 : compareUtf8(a.part, b.part)) || byKey(a.key, b.key) || compareUtf8(a.text, b.text)
  }

  private keyHash(row: Record<string, unknown>): Buffer {
    return hash16(this.schema.sortColumns.map((c) => String(row[c])).join('\u0000'))
  }

  /** A row of a parent: the same row (by key for a fact, by text for an event) is not written again. */
  parent(row: Record<string, unknown>): void {
    const text = hash16(canonicalRowText(this.schema, row))
    this.seen.add(this.fact ? this.keyHash(row) : text, text)
  }

  async add(row: Record<string, unknown>): Promise<void> {
    const text = canonicalRowText(this.schema, row)
    if (this.fact) {
      const textHash = hash16(text)
      const key = this.keyHash(row)
      const stored = this.seen.get(key)
      if (stored) {
        if (!Buffer.from(stored.buffer, stored.byteOffset, 16).equals(textHash)) {
          throw new PipeError(ROWS_CODES.factConflict, `${this.schema.name}: two different rows for ${this.schema.sortColumns.map((c) => `${c} ${JSON.stringify(String(row[c]))}`).join(', ')} (a fact row is the same wherever it appears)`, { exitCode: 2 })
        }
        return // the table has it already: from a parent, or earlier in this publish
      }
      this.seen.add(key, textHash)
    } else if (this.seen.get(hash16(text))) return
    const entry: Entry = { part: partOf(this.schema, row), key: this.schema.sortColumns.map((c) => row[c]), text }
    if (this.floats && holdsNegativeZero(row)) entry.whole = row
    this.chunk.push(entry)
    this.chunkBytes += text.length + 64
    if (this.chunkBytes >= this.maxChunkBytes) await this.end()
  }

  /** Writes what is gathered. */
  async end(): Promise<void> {
    if (this.chunk.length === 0) return
    const chunk = this.chunk.sort(this.compare)
    this.chunk = []
    this.chunkBytes = 0
    await this.flush(chunk.map((e) => ({ part: e.part, row: e.whole ?? (JSON.parse(e.text) as Record<string, unknown>) })))
  }
}

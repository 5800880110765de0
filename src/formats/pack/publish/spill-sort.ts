/**
 * What a publish must remember of every row but cannot keep in memory, on disk (new-rows.ts): an external
 * sort of fixed-size records of 32-bit words, and a file of staged rows read back in the order written.
 * Memory is bounded whatever the number of records: a sort holds one buffer of records and, while merging,
 * one read buffer a run.
 */
import { open, unlink, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { deserialize, serialize } from 'node:v8'

/** Runs merged at once; more are merged in passes, each into one longer run. */
export const MERGE_FAN_IN = 64
/** A run's records are first put in buckets by their first word's high 16 bits (sortBuffer). */
const BUCKET_SHIFT = 16
const BUCKETS = 2 ** (32 - BUCKET_SHIFT)
/** A bucket of at most this many records is sorted by insertion. */
const INSERTION_SORT_UP_TO = 32
/** Bytes a run's reader holds while merging. */
const RUN_READ_BYTES = 256 * 1024

async function writeAll(fh: FileHandle, bytes: Uint8Array, position: number): Promise<number> {
  let done = 0
  while (done < bytes.length) done += (await fh.write(bytes, done, bytes.length - done, position + done)).bytesWritten
  return position + done
}

/** Fills `into` from `position` on, short only at the end of the file; the bytes read. */
async function readFull(fh: FileHandle, into: Uint8Array, position: number): Promise<number> {
  let done = 0
  while (done < into.length) {
    const { bytesRead } = await fh.read(into, done, into.length - done, position + done)
    if (bytesRead === 0) break
    done += bytesRead
  }
  return done
}

/** Files under one folder and name prefix, named in turn, each removed once read (the caller removes the rest by prefix). */
class SpillFiles {
  private next = 0
  constructor(private readonly dir: string, private readonly prefix: string) {}
  name(): string {
    return join(this.dir, `${this.prefix}spill-${this.next++}`)
  }
}

/** A sorted run's records, read a buffer at a time. */
class RunReader {
  readonly buffer: Uint32Array
  /** The current record's first word in `buffer`, and the records it holds. */
  at = 0
  private held = 0
  private position = 0

  private constructor(private readonly fh: FileHandle, readonly path: string, private readonly words: number) {
    this.buffer = new Uint32Array(Math.max(1, Math.floor(RUN_READ_BYTES / (4 * words))) * words)
  }

  static async open(path: string, words: number): Promise<RunReader | undefined> {
    const r = new RunReader(await open(path, 'r'), path, words)
    if (await r.fill()) return r
    await r.close()
    return undefined
  }

  /** Moves to the next record; false at the run's end. */
  async advance(): Promise<boolean> {
    this.at += this.words
    return this.at < this.held * this.words || this.fill()
  }

  private async fill(): Promise<boolean> {
    const bytes = await readFull(this.fh, new Uint8Array(this.buffer.buffer), this.position)
    this.position += bytes
    this.held = Math.floor(bytes / (4 * this.words))
    this.at = 0
    return this.held > 0
  }

  async close(): Promise<void> {
    await this.fh.close()
    await unlink(this.path)
  }
}

/**
 * Records of `words` words, ordered by their first `sortWords` words as unsigned integers, first word
 * first. push() gathers them in a buffer of `bufferRecords`; a full buffer is sorted and written as a run.
 * sorted() then gives every record in order, in blocks, and removes the runs.
 */
export class SpillSort {
  private readonly buffer: Uint32Array
  /** A record held aside while insertionSort moves the others. */
  private readonly held: Uint32Array
  private count = 0
  private readonly runs: string[] = []
  private readonly files: SpillFiles

  constructor(dir: string, prefix: string, readonly words: number, private readonly sortWords: number, private readonly bufferRecords: number) {
    this.buffer = new Uint32Array(bufferRecords * words)
    this.held = new Uint32Array(words)
    this.files = new SpillFiles(dir, `${prefix}${words}w-`)
  }

  /** Adds the record at `from[at, at + words)`; a promise when the buffer was full and is being written. */
  push(from: Uint32Array, at: number): Promise<void> | undefined {
    const w = this.words
    // Word by word: a subarray a record, for set(), cost more than copying its few words.
    for (let k = 0, to = this.count * w; k < w; k++) this.buffer[to + k] = from[at + k]!
    this.count++
    return this.count === this.bufferRecords ? this.writeRun() : undefined
  }

  /**
   * The buffer's records in order, as a new array. The records are copied to their buckets, by their first
   * word's high 16 bits, in one pass over the buffer; then each bucket is sorted where it lies. Spilled keys
   * are hashes, so a bucket holds a few records, sorted by insertion; a larger one (records that share a
   * first word, or records whose first words do not spread, as the decisions' orders) is sorted by
   * comparison. Sorting the whole buffer by comparison took about 0.3 s a run of
   * 2^19 spilled keys, most of it in reading records in their sorted order, scattered over 23 MB; this takes
   * about 0.1 s, on the thread that writes the parts, the busier one in a publish large enough to spill.
   * Records that tie keep the order they came in.
   */
  private sortBuffer(): Uint32Array {
    const { buffer, words, count } = this
    const out = new Uint32Array(count * words)
    const ends = new Int32Array(BUCKETS)
    for (let i = 0; i < count; i++) ends[buffer[i * words]! >>> BUCKET_SHIFT]!++
    for (let d = 1; d < BUCKETS; d++) ends[d]! += ends[d - 1]!
    const next = new Int32Array(BUCKETS)
    next.set(ends.subarray(0, BUCKETS - 1), 1)
    for (let i = 0, from = 0; i < count; i++) {
      let to = next[buffer[from]! >>> BUCKET_SHIFT]!++ * words
      for (let w = 0; w < words; w++) out[to++] = buffer[from++]!
    }
    for (let d = 0, start = 0; d < BUCKETS; start = ends[d++]!) {
      const end = ends[d]!
      if (end - start <= INSERTION_SORT_UP_TO) this.insertionSort(out, start, end)
      else this.comparisonSort(out, start, end)
    }
    return out
  }

  /** The order of the record at `a[x]` against the one at `b[y]` (x and y: first words): -1, 0 or 1. */
  private compare(a: Uint32Array, x: number, b: Uint32Array, y: number): number {
    for (let k = 0; k < this.sortWords; k++) {
      const u = a[x + k]!
      const v = b[y + k]!
      if (u !== v) return u < v ? -1 : 1
    }
    return 0
  }

  /** Sorts records [start, end) of `out` in place. */
  private insertionSort(out: Uint32Array, start: number, end: number): void {
    const { words, held } = this
    for (let i = start + 1; i < end; i++) {
      const at = i * words
      if (this.compare(out, at - words, out, at) <= 0) continue
      for (let w = 0; w < words; w++) held[w] = out[at + w]!
      let j = at - words
      do {
        for (let w = 0; w < words; w++) out[j + words + w] = out[j + w]!
        j -= words
      } while (j >= start * words && this.compare(out, j, held, 0) > 0)
      for (let w = 0; w < words; w++) out[j + words + w] = held[w]!
    }
  }

  /** Sorts records [start, end) of `out` in place, by comparison (ties in the order they were). */
  private comparisonSort(out: Uint32Array, start: number, end: number): void {
    const { words } = this
    const order = new Int32Array(end - start)
    for (let i = 0; i < order.length; i++) order[i] = i
    const base = start * words
    order.sort((i, j) => this.compare(out, base + i * words, out, base + j * words) || i - j)
    const bucket = out.slice(base, end * words)
    for (let i = 0, to = base; i < order.length; i++) {
      const from = order[i]! * words
      for (let w = 0; w < words; w++) out[to++] = bucket[from + w]!
    }
  }

  private async writeRun(): Promise<void> {
    const sorted = this.sortBuffer()
    this.count = 0
    const path = this.files.name()
    const fh = await open(path, 'wx')
    try {
      await writeAll(fh, new Uint8Array(sorted.buffer), 0)
    } finally {
      await fh.close()
    }
    this.runs.push(path)
  }

  /** Every record pushed, in order, in blocks of whole records (`count` of them from word 0); call once. */
  async *sorted(blockRecords = 8192): AsyncGenerator<{ words: Uint32Array; count: number }> {
    if (this.runs.length === 0) {
      const sorted = this.sortBuffer()
      yield { words: sorted, count: sorted.length / this.words }
      return
    }
    if (this.count > 0) await this.writeRun()
    while (this.runs.length > MERGE_FAN_IN) {
      const batch = this.runs.splice(0, MERGE_FAN_IN)
      const path = this.files.name()
      const fh = await open(path, 'wx')
      let position = 0
      try {
        for await (const block of this.merge(batch, blockRecords)) position = await writeAll(fh, new Uint8Array(block.words.buffer, 0, block.count * this.words * 4), position)
      } finally {
        await fh.close()
      }
      this.runs.push(path)
    }
    yield* this.merge(this.runs.splice(0), blockRecords)
  }

  /** Merges sorted runs (a binary heap of their readers), giving blocks of the output. */
  private async *merge(paths: string[], blockRecords: number): AsyncGenerator<{ words: Uint32Array; count: number }> {
    const { words } = this
    const heap: RunReader[] = []
    try {
      for (const p of paths) {
        // An empty run is removed as it is opened.
        const r = await RunReader.open(p, words)
        if (r) heap.push(r)
      }
      const less = (a: RunReader, b: RunReader): boolean => this.compare(a.buffer, a.at, b.buffer, b.at) < 0
      const down = (i: number): void => {
        for (;;) {
          const l = 2 * i + 1
          if (l >= heap.length) return
          const c = l + 1 < heap.length && less(heap[l + 1]!, heap[l]!) ? l + 1 : l
          if (!less(heap[c]!, heap[i]!)) return
          ;[heap[c], heap[i]] = [heap[i]!, heap[c]!]
          i = c
        }
      }
      for (let i = (heap.length >> 1) - 1; i >= 0; i--) down(i)
      let block = new Uint32Array(blockRecords * words)
      let count = 0
      while (heap.length > 0) {
        const top = heap[0]!
        block.set(top.buffer.subarray(top.at, top.at + words), count * words)
        if (++count === blockRecords) {
          yield { words: block, count }
          block = new Uint32Array(blockRecords * words)
          count = 0
        }
        if (!(await top.advance())) {
          await top.close()
          heap[0] = heap[heap.length - 1]!
          heap.pop()
        }
        if (heap.length > 0) down(0)
      }
      if (count > 0) yield { words: block, count }
    } finally {
      for (const r of heap) await r.close().catch(() => undefined)
    }
  }
}

/** Values written by `RecordSpill` and read back in order: v8's serialization, each after its length. */
export class RecordSpill<T> {
  private readonly path: string
  private fh: FileHandle | undefined
  private position = 0

  constructor(dir: string, prefix: string) {
    this.path = join(dir, `${prefix}spill-records`)
  }

  async write(value: T): Promise<void> {
    this.fh ??= await open(this.path, 'wx+')
    const payload = serialize(value)
    const head = Buffer.alloc(4)
    head.writeUInt32LE(payload.length)
    this.position = await writeAll(this.fh, head, this.position)
    this.position = await writeAll(this.fh, payload, this.position)
  }

  /** Every value written, in order; then the file is removed. Call once, after the last write. */
  async *read(): AsyncGenerator<T> {
    const fh = this.fh
    if (!fh) return
    this.fh = undefined
    try {
      const head = Buffer.alloc(4)
      for (let position = 0; position < this.position; ) {
        if ((await readFull(fh, head, position)) !== 4) throw new Error(`${this.path}: ends inside a length`)
        const payload = Buffer.allocUnsafe(head.readUInt32LE(0))
        if ((await readFull(fh, payload, position + 4)) !== payload.length) throw new Error(`${this.path}: ends inside a value`)
        position += 4 + payload.length
        yield deserialize(payload) as T
      }
    } finally {
      await fh.close()
      await unlink(this.path).catch(() => undefined)
    }
  }
}

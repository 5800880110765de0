/**
 * The id and pin of each record of a table of this publish by its line, for the references of later tables
 * (`@patterns:N`, publish-rows.ts resolveReferences). A record is 20 bytes: its id's 128 bits and its pin's
 * number. The first ID_BOOK_LINES records are kept in memory; the rest go to a file of the same records,
 * read back a block at a time, so memory stays bounded whatever the number of records. The file is
 * unlinked as soon as it is open: it is gone when the book is closed or the process ends, whatever ends it.
 */
import { closeSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'

const RECORD_BYTES = 20
/** Records kept in memory (20 MB). */
export const ID_BOOK_LINES = 2 ** 20
/** Records written to the file, and read from it, at a time. */
const BLOCK_RECORDS = 4096

export class IdBook {
  private memory = Buffer.alloc(0)
  private readonly pins: string[] = []
  private readonly pinNumbers = new Map<string, number>()
  private count = 0
  private fd: number | undefined
  /** Records beyond those in memory gather here before they are written. */
  private readonly pending = Buffer.alloc(BLOCK_RECORDS * RECORD_BYTES)
  private pendingCount = 0
  /** The block last read from the file, and the line of its first record. */
  private readonly block = Buffer.alloc(BLOCK_RECORDS * RECORD_BYTES)
  private blockFirst = -1
  private blockCount = 0

  /** `prefix`: what the table's ids start with before their 32 hex digits; `dir`: where the file goes. */
  constructor(private readonly prefix: string, private readonly dir: string, private readonly memoryLines = ID_BOOK_LINES) {}

  add(line: number, id: string, pin: string): void {
    if (line !== this.count + 1) throw new Error(`ids must come in line order (${line} after ${this.count})`)
    let p = this.pinNumbers.get(pin)
    if (p === undefined) {
      p = this.pins.push(pin) - 1
      this.pinNumbers.set(pin, p)
    }
    const index = this.count++
    if (index < this.memoryLines) {
      if ((index + 1) * RECORD_BYTES > this.memory.length) {
        const grown = Buffer.alloc(Math.min(this.memoryLines, Math.max(1024, 2 * (this.memory.length / RECORD_BYTES))) * RECORD_BYTES)
        this.memory.copy(grown)
        this.memory = grown
      }
      this.put(this.memory, index * RECORD_BYTES, id, p)
      return
    }
    this.put(this.pending, this.pendingCount++ * RECORD_BYTES, id, p)
    if (this.pendingCount === BLOCK_RECORDS) this.flush()
  }

  get(line: number): { id: string; pin: string } | undefined {
    if (!(Number.isInteger(line) && line >= 1 && line <= this.count)) return undefined
    const index = line - 1
    if (index < this.memoryLines) return this.record(this.memory, index * RECORD_BYTES)
    const spilled = index - this.memoryLines
    const written = this.count - this.memoryLines - this.pendingCount
    if (spilled >= written) return this.record(this.pending, (spilled - written) * RECORD_BYTES)
    if (!(spilled >= this.blockFirst && spilled < this.blockFirst + this.blockCount)) {
      const first = spilled - (spilled % BLOCK_RECORDS)
      const bytes = readSync(this.fd!, this.block, 0, this.block.length, first * RECORD_BYTES)
      this.blockFirst = first
      this.blockCount = Math.floor(bytes / RECORD_BYTES)
    }
    return this.record(this.block, (spilled - this.blockFirst) * RECORD_BYTES)
  }

  /** Closes the file, if there is one (it was unlinked when opened). */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }

  private put(into: Buffer, at: number, id: string, pin: number): void {
    into.write(id.slice(this.prefix.length), at, 16, 'hex')
    into.writeUInt32LE(pin, at + 16)
  }

  private record(from: Buffer, at: number): { id: string; pin: string } {
    return { id: this.prefix + from.toString('hex', at, at + 16), pin: this.pins[from.readUInt32LE(at + 16)]! }
  }

  private flush(): void {
    if (this.fd === undefined) {
      const path = join(this.dir, `.ids-${process.pid}-${randomBytes(6).toString('hex')}`)
      this.fd = openSync(path, 'wx+')
      unlinkSync(path)
    }
    const bytes = this.pendingCount * RECORD_BYTES
    const position = (this.count - this.memoryLines - this.pendingCount) * RECORD_BYTES
    for (let done = 0; done < bytes; ) done += writeSync(this.fd, this.pending, done, bytes - done, position + done)
    this.pendingCount = 0
  }
}

/** Splitting a byte stream into batches of lines without copying them, with a cap on a line's length. */
import { z } from 'zod'
import type { Measured } from '../core/items.js'
import type { FindingSink } from '../core/findings.js'

/**
 * A run of complete lines sharing one buffer. Lines are byte ranges [starts[i], ends[i]) without their
 * newline; nothing is copied or decoded per line, which is what lets checks keep up with decompression.
 */
export class LineBatch implements Measured {
  constructor(
    readonly data: Buffer,
    readonly starts: Uint32Array,
    readonly ends: Uint32Array,
    readonly count: number,
    /** 1-based number of the first line. */
    readonly firstLine: number,
    /** Byte offset of data[0] in the whole (decompressed) stream. */
    readonly baseOffset: number,
    /** Lines over the cap dropped just before this batch: still lines of the input, so they count. */
    readonly skipped = 0,
  ) {}

  get itemCount(): number { return this.count + this.skipped }
  get byteCount(): number { return this.count === 0 ? 0 : this.ends[this.count - 1]! - this.starts[0]! + 1 }

  line(i: number): Buffer { return this.data.subarray(this.starts[i], this.ends[i]) }
}

const EMPTY = Buffer.alloc(0)
const NO_LINES = new Uint32Array(0)

export const splitOptions = z.object({
  maxLineBytes: z.number().int().positive().default(8 * 2 ** 20).describe('longest line accepted; a longer one is a finding and is skipped without being held in memory'),
  requireFinalNewline: z.boolean().default(true).describe('report a last line that lacks its terminating newline'),
})
export type SplitOptions = z.infer<typeof splitOptions>

/**
 * Splits a byte stream into LineBatches, one per input chunk. A partial line is carried to the next chunk;
 * a line over the cap is reported (`raw.line-too-long`) and its bytes are dropped as they arrive. A line
 * found too long before its end is told at once, by an empty batch that counts it as skipped: a consumer
 * that must stop there (an import, all or nothing) does so without reading the rest of an endless line.
 */
export function splitLines(opts: SplitOptions, findings: FindingSink) {
  return async function* (source: AsyncIterable<Uint8Array>): AsyncGenerator<LineBatch> {
    let carry: Buffer | null = null
    let skipping = false
    let lineNo = 1
    let offset = 0 // stream offset of the first byte of the next chunk (or of carry)
    let starts = new Uint32Array(4096)
    let ends = new Uint32Array(4096)

    let skipped = 0
    const tooLong = () => {
      skipped++
      findings.add({ line: lineNo, code: 'raw.line-too-long', detail: `line is longer than the cap of ${opts.maxLineBytes} bytes` })
    }
    const batch = (data: Buffer, s: Uint32Array, e: Uint32Array, count: number, first: number, base: number) => {
      const b = new LineBatch(data, s, e, count, first, base, skipped)
      skipped = 0
      return b
    }

    for await (const chunk of source) {
      const data: Buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
      const base = offset
      offset += chunk.byteLength
      let pos = 0
      if (skipping) {
        const nl = data.indexOf(10)
        if (nl < 0) continue
        skipping = false
        lineNo++
        pos = nl + 1
      } else if (carry) {
        // Join only the carried line with its rest, not the whole chunk: copying every chunk cost ~12%.
        const nl = data.indexOf(10)
        if (nl < 0 || carry.byteLength + nl > opts.maxLineBytes) {
          if (carry.byteLength + data.byteLength > opts.maxLineBytes) {
            tooLong()
            carry = null
            if (nl < 0) {
              skipping = true
              yield batch(EMPTY, NO_LINES, NO_LINES, 0, lineNo + 1, offset)
              continue
            }
            lineNo++
            pos = nl + 1
          } else {
            carry = Buffer.concat([carry, data])
            continue
          }
        } else {
          const joined = Buffer.concat([carry, data.subarray(0, nl)])
          yield batch(joined, Uint32Array.of(0), Uint32Array.of(joined.byteLength), 1, lineNo, base - carry.byteLength)
          carry = null
          lineNo++
          pos = nl + 1
        }
      }
      // Line numbers inside a batch are firstLine + i, so a skipped line closes the batch before it.
      let count = 0
      let batchFirst = lineNo
      for (;;) {
        const nl = data.indexOf(10, pos)
        if (nl < 0) break
        if (nl - pos > opts.maxLineBytes) {
          if (count > 0) yield batch(data, starts.slice(0, count), ends.slice(0, count), count, batchFirst, base)
          count = 0
          tooLong()
          lineNo++
          batchFirst = lineNo
          pos = nl + 1
          continue
        }
        if (count === starts.length) {
          const s = new Uint32Array(count * 2); s.set(starts); starts = s
          const e = new Uint32Array(count * 2); e.set(ends); ends = e
        }
        starts[count] = pos
        ends[count] = nl
        count++
        lineNo++
        pos = nl + 1
      }
      if (count > 0) yield batch(data, starts.slice(0, count), ends.slice(0, count), count, batchFirst, base)
      if (pos < data.byteLength) {
        if (data.byteLength - pos > opts.maxLineBytes) {
          tooLong()
          skipping = true
          yield batch(EMPTY, NO_LINES, NO_LINES, 0, lineNo + 1, offset)
        } else {
          carry = Buffer.from(data.subarray(pos))
        }
      }
    }
    if (carry && carry.byteLength > 0) {
      if (opts.requireFinalNewline) findings.add({ line: lineNo, code: 'raw.line-unterminated', detail: 'the last line has no terminating newline' })
      yield batch(carry, Uint32Array.of(0), Uint32Array.of(carry.byteLength), 1, lineNo, offset - carry.byteLength)
    }
    if (skipped > 0) yield batch(EMPTY, NO_LINES, NO_LINES, 0, lineNo, offset)
  }
}

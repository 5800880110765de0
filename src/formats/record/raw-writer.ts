import { isUtf8 } from 'node:buffer'
import type { MergedFrame } from './merge.js'
import { formatTime } from './time.js'

const NS_PER_SEC = 1_000_000_000n
const INT64_MAX = (1n << 63n) - 1n
/** A raw-file chunk as the sealer hands it to zstd: large enough that per-chunk costs vanish. */
export const RAW_CHUNK_BYTES = 1 << 20

const BACKSLASH = 0x5c
/**
 * How JSON.stringify (and so RFC 8785) writes each byte of valid UTF-8 inside a string: 0 as it is; for
 * `"` and `\`, a backslash before it (1); for the control characters with a short escape (`\b` `\t` `\n`
 * `\f` `\r`), a backslash and that letter (the letter's code); for the other control characters, `\u00XX` (2).
 */
const ESCAPE = new Uint8Array(256)
for (let b = 0; b < 0x20; b++) ESCAPE[b] = 2
ESCAPE[0x08] = 0x62
ESCAPE[0x09] = 0x74
ESCAPE[0x0a] = 0x6e
ESCAPE[0x0c] = 0x66
ESCAPE[0x0d] = 0x72
ESCAPE[0x22] = 1
ESCAPE[BACKSLASH] = 1
const HEX = Buffer.from('0123456789abcdef')
const EXCHANGE_TIME = Buffer.from('{"exchange_time":"')
const PAYLOAD_AFTER_TIME = Buffer.from('","payload":"')
const PAYLOAD = Buffer.from('{"payload":"')
const ENCODING_TEXT = Buffer.from('","payload_encoding":"text","receipts":[')
const ENCODING_BASE64 = Buffer.from('","payload_encoding":"base64","receipts":[')
const FIRST_RECEIPT = Buffer.from('{')
const NEXT_RECEIPT = Buffer.from(',{')
const CLOCK_ERROR_BOUND = Buffer.from('"clock_error_bound":')
const CLOCK_OFFSET = Buffer.from(',"clock_offset":')
const REPLICA_A = Buffer.from('","replica":"a"}')
const REPLICA_B = Buffer.from('","replica":"b"}')
const END = Buffer.from(']}\n')

/**
 * Writes raw-file lines (RFC 8785 canonical envelopes, each with its newline) straight into byte chunks,
 * without building a string per line: at a million frames an hour, the strings and their UTF-8 conversion
 * were a fifth of the sealer's time. The key order is written by hand in RFC 8785 order; the bytes are
 * exactly what canonicalize() gives for the envelope (tested, with the byte-level checker).
 *
 * Full chunks go to `onChunk`, which owns them; `end()` hands over the last one.
 */
export class RawLineWriter {
  private buf: Buffer
  private pos = 0
  /** `"connection":<JSON string>,"receive_time":"` by connection id: a handful per hour. */
  private readonly connectionPrefix = new Map<string, Buffer>()
  private secondStart = -1n
  private readonly secondPrefix = Buffer.alloc(20) // YYYY-MM-DDTHH:MM:SS.
  lines = 0

  constructor(private readonly onChunk: (chunk: Buffer) => void, private readonly chunkBytes = RAW_CHUNK_BYTES) {
    this.buf = Buffer.allocUnsafe(chunkBytes)
  }

  /** Appends the envelope of `frame`; `exchangeTime` is the venue's stated time, null when it states none. */
  write(frame: MergedFrame, exchangeTime: bigint | null): void {
    const p = frame.payload
    const text = !frame.binary && isUtf8(p)
    let most = 160 + (text ? p.length * 6 : Math.ceil(p.length / 3) * 4)
    for (const r of frame.receipts) most += 160 + r.connection.length * 6 * 3
    this.reserve(most)
    if (exchangeTime !== null) {
      this.put(EXCHANGE_TIME)
      this.time(exchangeTime)
      this.put(PAYLOAD_AFTER_TIME)
    } else this.put(PAYLOAD)
    if (text) this.escaped(p)
    else this.pos += this.buf.write(Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString('base64'), this.pos, 'latin1')
    // A text frame whose bytes are not UTF-8 cannot come from a conforming WebSocket peer; should a
    // journal hold one, it is kept as base64 so that no byte is lost.
    this.put(text ? ENCODING_TEXT : ENCODING_BASE64)
    const receipts = frame.receipts
    for (let i = 0; i < receipts.length; i++) {
      const r = receipts[i]!
      this.put(i > 0 ? NEXT_RECEIPT : FIRST_RECEIPT)
      if (r.clockErrorBound !== undefined) {
        this.put(CLOCK_ERROR_BOUND)
        this.integer(Number(r.clockErrorBound))
        this.put(CLOCK_OFFSET)
        this.integer(Number(r.clockOffset))
        this.buf[this.pos++] = 0x2c // ,
      }
      let prefix = this.connectionPrefix.get(r.connection)
      if (!prefix) {
        prefix = Buffer.from(`"connection":${JSON.stringify(r.connection)},"receive_time":"`)
        if (this.connectionPrefix.size > 4096) this.connectionPrefix.clear()
        this.connectionPrefix.set(r.connection, prefix)
      }
      this.put(prefix)
      this.time(r.receiveTime)
      this.put(r.replica === 'a' ? REPLICA_A : REPLICA_B)
    }
    this.put(END)
    this.lines++
  }

  /** Hands over what is buffered (possibly nothing). */
  end(): void {
    if (this.pos > 0) this.onChunk(this.buf.subarray(0, this.pos))
    // The chunk may move to another thread with its buffer: never write into that buffer again.
    this.buf = Buffer.alloc(0)
    this.pos = 0
  }

  private reserve(n: number): void {
    if (this.pos + n <= this.buf.length) return
    this.end()
    this.buf = Buffer.allocUnsafe(Math.max(this.chunkBytes, n))
  }

  /** A short run of bytes: a loop beats a native copy's call cost at these sizes. */
  private put(bytes: Uint8Array): void {
    const out = this.buf
    let pos = this.pos
    for (let i = 0; i < bytes.length; i++) out[pos++] = bytes[i]!
    this.pos = pos
  }

  /** A safe integer in decimal (receipts' clock values are within ±(2^53 − 1) by construction). */
  private integer(n: number): void {
    const out = this.buf
    if (n < 0) {
      out[this.pos++] = 0x2d // -
      n = -n
    }
    let digits = 1
    for (let x = n; x >= 10; x = Math.floor(x / 10)) digits++
    for (let d = this.pos + digits - 1; d >= this.pos; d--) {
      out[d] = 0x30 + (n % 10)
      n = Math.floor(n / 10)
    }
    this.pos += digits
  }

  /** The bytes of a JSON string's content, as JSON.stringify escapes it (the payload is valid UTF-8). */
  private escaped(p: Uint8Array): void {
    const out = this.buf
    let pos = this.pos
    for (let i = 0; i < p.length; i++) {
      const b = p[i]!
      const e = ESCAPE[b]!
      if (e === 0) {
        out[pos++] = b
      } else if (e === 1) {
        out[pos++] = BACKSLASH
        out[pos++] = b
      } else if (e === 2) {
        out[pos++] = BACKSLASH
        out[pos++] = 0x75 // u
        out[pos++] = 0x30
        out[pos++] = 0x30
        out[pos++] = HEX[b >> 4]!
        out[pos++] = HEX[b & 15]!
      } else {
        out[pos++] = BACKSLASH
        out[pos++] = e
      }
    }
    this.pos = pos
  }

  /**
   * A time in the format's encoding. An hour's lines state times a few milliseconds apart, so the text up
   * to the second is kept from the previous call and nearly every call writes only the nine digits.
   */
  private time(ns: bigint): void {
    if (ns < 0n || ns > INT64_MAX) {
      this.pos += this.buf.write(formatTime(ns), this.pos, 'latin1')
      return
    }
    if (ns < this.secondStart || ns >= this.secondStart + NS_PER_SEC || this.secondStart < 0n) {
      this.secondStart = ns - (ns % NS_PER_SEC)
      this.secondPrefix.write(formatTime(this.secondStart).slice(0, 20), 0, 'latin1')
    }
    const out = this.buf
    this.put(this.secondPrefix)
    let fraction = Number(ns - this.secondStart)
    for (let d = this.pos + 8; d >= this.pos; d--) {
      out[d] = 0x30 + (fraction % 10)
      fraction = Math.floor(fraction / 10)
    }
    out[this.pos + 9] = 0x5a // Z
    this.pos += 10
  }
}

/** One raw-file line of `frame`, without its newline (for tests and tools; the sealer streams). */
export function envelopeLine(frame: MergedFrame, exchangeTime: bigint | null): string {
  let line = ''
  const writer = new RawLineWriter((chunk) => { line += chunk.toString('utf8') })
  writer.write(frame, exchangeTime)
  writer.end()
  return line.slice(0, -1)
}

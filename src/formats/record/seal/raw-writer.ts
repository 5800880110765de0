import { isUtf8 } from 'node:buffer'
import { BufferPool } from '../../../core/buffer-pool.js'
import { int64Of, type MergedFrame, type Receipt } from '../merge.js'
import { formatTime } from '../time.js'
import type { Replica } from '../types.js'

const NS_PER_SEC = 1_000_000_000n
const INT64_MAX = (1n << 63n) - 1n
const TWO_32 = 4294967296
/** A raw-file chunk as the sealer hands it to zstd: large enough that per-chunk costs vanish. */
export const RAW_CHUNK_BYTES = 1 << 20
/** Chunk buffers kept for reuse: as many as can be in flight to the files' thread, and a few. */
const SPARE_CHUNKS = 12

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
const AFTER_TIME = Buffer.from('",')
const PAYLOAD_KEY = Buffer.from('"payload":"')
const CLOCK_ERROR_BOUND = '"clock_error_bound":'
/**
 * The constant text between a line's payload and its first receipt's first value, and between a receipt's
 * receive_time and the next receipt's first value (or the line's end), each written as one run of bytes.
 * A receipt with a clock estimate begins with its clock_error_bound; one without, with its connection.
 */
const RECEIPTS_START = {
  text: { clock: Buffer.from(`","payload_encoding":"text","receipts":[{${CLOCK_ERROR_BOUND}`), none: Buffer.from('","payload_encoding":"text","receipts":[{') },
  base64: { clock: Buffer.from(`","payload_encoding":"base64","receipts":[{${CLOCK_ERROR_BOUND}`), none: Buffer.from('","payload_encoding":"base64","receipts":[{') },
}
const receiptEnd = (replica: Replica) => ({
  clock: Buffer.from(`","replica":"${replica}"},{${CLOCK_ERROR_BOUND}`),
  none: Buffer.from(`","replica":"${replica}"},{`),
  last: Buffer.from(`","replica":"${replica}"}]}\n`),
})
const RECEIPT_END = { a: receiptEnd('a'), b: receiptEnd('b') }

/**
 * A frame's receipts as a raw-file line states them, receipt `r` at a time (in replica order): receive
 * times as int64 halves (high signed, low unsigned), clock values as safe integers. FramePairing's slots
 * are one; {@link receiptsOf} makes one of a MergedFrame's receipts.
 */
export interface ReceiptSource {
  replica(r: number): Replica
  connection(r: number): string
  timeHi(r: number): number
  timeLo(r: number): number
  hasClock(r: number): boolean
  clockOffset(r: number): number
  clockErrorBound(r: number): number
}

/** A MergedFrame's receipts (receipt `r` is `receipts[r]`; times within int64, as the journal's are). */
export function receiptsOf(receipts: readonly Receipt[]): ReceiptSource {
  return {
    replica: (r) => receipts[r]!.replica,
    connection: (r) => receipts[r]!.connection,
    timeHi: (r) => Number(receipts[r]!.receiveTime >> 32n),
    timeLo: (r) => Number(BigInt.asUintN(32, receipts[r]!.receiveTime)),
    hasClock: (r) => receipts[r]!.clockErrorBound !== undefined,
    clockOffset: (r) => Number(receipts[r]!.clockOffset),
    clockErrorBound: (r) => Number(receipts[r]!.clockErrorBound),
  }
}

/**
 * Writes times in the format's encoding into byte buffers. An hour's lines state times a few milliseconds
 * apart, so the text up to the second is kept from the previous call (and its second as int64 halves, to
 * tell without a bigint whether the next time falls in it): nearly every call writes only nine digits.
 */
class TimeWriter {
  private readonly secondPrefix = Buffer.alloc(20) // YYYY-MM-DDTHH:MM:SS.
  private startHi = 0
  private startLo = 0
  private endHi = 0
  private endLo = 0
  private cached = false

  /** Writes the time at `pos` of `out`; returns the position after it. */
  write(out: Uint8Array, pos: number, hi: number, lo: number): number {
    if (hi < 0) return pos + Buffer.from(out.buffer, out.byteOffset, out.byteLength).write(formatTime(int64Of(hi, lo)), pos, 'latin1')
    if (!this.cached || before(hi, lo, this.startHi, this.startLo) || !before(hi, lo, this.endHi, this.endLo)) {
      const ns = int64Of(hi, lo)
      const start = ns - (ns % NS_PER_SEC)
      const end = start + NS_PER_SEC
      this.startHi = Number(start >> 32n)
      this.startLo = Number(BigInt.asUintN(32, start))
      this.endHi = Number(end >> 32n)
      this.endLo = Number(BigInt.asUintN(32, end))
      this.cached = true
      this.secondPrefix.write(formatTime(start).slice(0, 20), 0, 'latin1')
    }
    pos = put(out, pos, this.secondPrefix)
    pos = belowBillion(out, pos, ((hi - this.startHi) * TWO_32 + (lo - this.startLo)) | 0, 9)
    out[pos] = 0x5a // Z
    return pos + 1
  }

  /** A bigint time (anything beyond int64 as formatTime writes it). */
  writeBig(out: Uint8Array, pos: number, ns: bigint): number {
    if (ns < 0n || ns > INT64_MAX) return pos + Buffer.from(out.buffer, out.byteOffset, out.byteLength).write(formatTime(ns), pos, 'latin1')
    return this.write(out, pos, Number(ns >> 32n), Number(BigInt.asUintN(32, ns)))
  }
}

/** Whether the int64 (aHi, aLo) is before (bHi, bLo). */
function before(aHi: number, aLo: number, bHi: number, bLo: number): boolean {
  return aHi < bHi || (aHi === bHi && aLo < bLo)
}

/** A run of bytes. TypedArray set copies even a dozen bytes in a third of a loop's time. */
function put(out: Uint8Array, pos: number, bytes: Uint8Array): number {
  out.set(bytes, pos)
  return pos + bytes.length
}

/**
 * Writes the tail of raw-file lines: everything after the line's optional `exchange_time`, from
 * `"payload":"` to the newline, which is all that does not depend on what the venue adapter makes of the
 * frame. The sealer writes tails where frames are paired and the rest of each line where they are
 * classified, so that the two threads share the work ({@link RawLineWriter.write} joins them).
 */
export class LineTailWriter {
  /**
   * By connection id (a handful per hour): the text from a receipt's first value after clock_error_bound
   * to its receive_time's opening quote, with and without the clock_offset before the connection. A
   * replica's offset changes seldom, so the text with the latest one is kept.
   */
  private readonly prefixes = new Map<string, { plain: Buffer; clockOffset: number; withClock: Buffer }>()
  private readonly times = new TimeWriter()

  /** Bytes a tail may take at most: reserve them before {@link write}. */
  static maxBytes(payloadBytes: number, receipts: ReceiptSource, first: number, count: number): number {
    let most = 160 + Math.max(payloadBytes * 6, Math.ceil(payloadBytes / 3) * 4)
    for (let r = first; r < first + count; r++) most += 160 + receipts.connection(r).length * 6 * 3
    return most
  }

  /**
   * Writes the tail of the line of a frame (`payloadBytes` bytes of `payload` from `payloadStart`, and
   * receipts `first` to `first + count - 1` of `receipts`) into `out` at `pos`; returns the position after it.
   */
  write(out: Uint8Array, pos: number, payload: Uint8Array, payloadStart: number, payloadBytes: number, binary: boolean, receipts: ReceiptSource, first: number, count: number): number {
    const payloadEnd = payloadStart + payloadBytes
    pos = put(out, pos, PAYLOAD_KEY)
    let text = false
    if (!binary) {
      // Escaping notes whether every byte was ASCII, and so UTF-8: only other payloads need the full check.
      const after = escapedAscii(out, pos, payload, payloadStart, payloadEnd)
      text = after >= 0 || isUtf8(payload.subarray(payloadStart, payloadEnd))
      if (text) pos = after >= 0 ? after : ~after
    }
    if (!text) {
      const p = payload.subarray(payloadStart, payloadEnd)
      pos += Buffer.from(out.buffer, out.byteOffset, out.byteLength).write(Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString('base64'), pos, 'latin1')
    }
    // A text frame whose bytes are not UTF-8 cannot come from a conforming WebSocket peer; should a
    // journal hold one, it is kept as base64 so that no byte is lost.
    const start = text ? RECEIPTS_START.text : RECEIPTS_START.base64
    // Each receipt's clock decides how the one before it ends, so it is read once, a receipt ahead.
    let hasClock = receipts.hasClock(first)
    pos = put(out, pos, hasClock ? start.clock : start.none)
    const last = first + count - 1
    for (let r = first; r <= last; r++) {
      if (hasClock) pos = integer(out, pos, receipts.clockErrorBound(r))
      pos = put(out, pos, this.prefix(receipts.connection(r), hasClock, hasClock ? receipts.clockOffset(r) : 0))
      pos = this.times.write(out, pos, receipts.timeHi(r), receipts.timeLo(r))
      const end = RECEIPT_END[receipts.replica(r)]
      if (r === last) pos = put(out, pos, end.last)
      else {
        hasClock = receipts.hasClock(r + 1)
        pos = put(out, pos, hasClock ? end.clock : end.none)
      }
    }
    return pos
  }

  /** `"connection":<JSON string>,"receive_time":"`, after `,"clock_offset":<offset>` when `hasClock`. */
  private prefix(connection: string, hasClock: boolean, clockOffset: number): Buffer {
    let known = this.prefixes.get(connection)
    if (!known) {
      if (this.prefixes.size > 4096) this.prefixes.clear()
      const plain = Buffer.from(`"connection":${JSON.stringify(connection)},"receive_time":"`)
      known = { plain, clockOffset: NaN, withClock: plain }
      this.prefixes.set(connection, known)
    }
    if (!hasClock) return known.plain
    if (known.clockOffset !== clockOffset) {
      known.clockOffset = clockOffset
      known.withClock = Buffer.concat([Buffer.from(`,"clock_offset":${clockOffset},`), known.plain])
    }
    return known.withClock
  }
}

/**
 * Writes raw-file lines (RFC 8785 canonical envelopes, each with its newline) straight into byte chunks,
 * without building a string per line: at a million frames an hour, the strings and their UTF-8 conversion
 * were a fifth of the sealer's time. The key order is written by hand in RFC 8785 order; the bytes are
 * exactly what canonicalize() gives for the envelope (tested, with the byte-level checker). A line is its
 * start (`{` and the exchange_time, if any) followed by its tail from {@link LineTailWriter}.
 *
 * Full chunks go to `onChunk`, which owns them; `end()` hands over the last one.
 */
export class RawLineWriter {
  private buf: Buffer
  private pos = 0
  private readonly times = new TimeWriter()
  private readonly pool: BufferPool
  lines = 0

  constructor(private readonly onChunk: (chunk: Buffer) => void, chunkBytes = RAW_CHUNK_BYTES) {
    this.pool = new BufferPool(chunkBytes, SPARE_CHUNKS)
    this.buf = Buffer.from(this.pool.take())
  }

  /** Appends a line: `exchangeTime` is the venue's stated time, null when it states none; `tail` its tail. */
  write(exchangeTime: bigint | null, tail: Uint8Array): void {
    this.reserve(64 + tail.length)
    const out = this.buf
    if (exchangeTime !== null) {
      let pos = put(out, this.pos, EXCHANGE_TIME)
      pos = this.times.writeBig(out, pos, exchangeTime)
      this.pos = put(out, pos, AFTER_TIME)
    } else out[this.pos++] = 0x7b // {
    out.set(tail, this.pos)
    this.pos += tail.length
    this.lines++
  }

  /** Takes back a chunk's buffer that its receiver is done with, to fill again. */
  reuse(buffer: ArrayBuffer): void {
    this.pool.give(buffer)
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
    // A line longer than a chunk gets a buffer of its own; the pool keeps only chunk-sized ones.
    this.buf = Buffer.from(n > this.pool.bytes ? new ArrayBuffer(n) : this.pool.take())
  }
}

/** A safe integer in decimal (receipts' clock values are within ±(2^53 − 1) by construction). */
function integer(out: Uint8Array, pos: number, n: number): number {
  if (n < 0) {
    out[pos++] = 0x2d // -
    n = -n
  }
  if (n < 1e9) {
    let digits = 1
    for (let x = n; x >= 10; x = (x / 10) | 0) digits++
    return belowBillion(out, pos, n, digits)
  }
  // Below 2^53 the part above the last nine digits is itself below 10^9.
  const high = Math.floor(n / 1e9)
  return belowBillion(out, integer(out, pos, high), n - high * 1e9, 9)
}

/**
 * `n` (below 10^9) in `digits` decimal digits, zero-padded: small-integer division, several times
 * cheaper than a double's, and clock values are nearly always this small.
 */
function belowBillion(out: Uint8Array, pos: number, n: number, digits: number): number {
  for (let d = pos + digits - 1; d >= pos; d--) {
    const q = (n / 10) | 0
    out[d] = 0x30 + n - q * 10
    n = q
  }
  return pos + digits
}

/**
 * Writes `p[start, end)` as a JSON string's content, as JSON.stringify escapes valid UTF-8 (bytes from 0x80
 * are written as they are). Returns the position after it, or its bitwise complement when some byte was
 * not ASCII: the caller must then check that the bytes are UTF-8 before it keeps what was written.
 */
function escapedAscii(out: Uint8Array, pos: number, p: Uint8Array, start: number, end: number): number {
  let bits = 0
  for (let i = start; i < end; i++) {
    const b = p[i]!
    bits |= b
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
  return bits < 0x80 ? pos : ~pos
}

/** One raw-file line of `frame`, without its newline (for tests and tools; the sealer streams). */
export function envelopeLine(frame: MergedFrame, exchangeTime: bigint | null): string {
  const receipts = receiptsOf(frame.receipts)
  const count = frame.receipts.length
  const tail = new Uint8Array(LineTailWriter.maxBytes(frame.payload.length, receipts, 0, count))
  const end = new LineTailWriter().write(tail, 0, frame.payload, 0, frame.payload.length, frame.binary, receipts, 0, count)
  let line = ''
  const writer = new RawLineWriter((chunk) => { line += chunk.toString('utf8') })
  writer.write(exchangeTime, tail.subarray(0, end))
  writer.end()
  return line.slice(0, -1)
}

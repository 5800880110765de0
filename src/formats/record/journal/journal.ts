/**
 * The replica journal, format version 2 (docs/journal.md): the crash-safe, append-only log of what one
 * replica received and saw, between the recorder and the sealer.
 *
 * A journal file is a 16-byte file header followed by records. Each record is a 16-byte record header
 * (sync marker, body length, CRC-32C of the body, CRC-32C of the header's first 12 bytes) and a binary
 * body holding one {@link JournalEvent}. The two checksums let a reader tell apart
 *
 * - a torn tail: the file ends inside a record (a crash during an append), and
 * - a corrupt record: complete, but a checksum fails or its body does not decode,
 *
 * and resynchronise on the sync marker after a corrupt record header. Frame payloads are decoded as
 * views into the read buffers (never copied), and the only per-record strings are cached connection ids.
 *
 * A journal directory holds one file per replica per UTC hour of event time:
 * `DIR/replica=a/2026-10-03T14.journal` ({@link journalFilePath}).
 */

import { randomBytes } from 'node:crypto'
import { writevSync } from 'node:fs'
import { link, mkdir, open, readdir, rename, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { PipeError, UsageError } from '../../../core/errors.js'
import { openRegularFile } from '../../../core/input-file.js'
import { fsyncDir } from '../../../core/atomic-write.js'
import { checkBase64 } from '../envelope.js'
import { grown } from '../grow.js'
import { formatTime, parseTime } from '../time.js'
import type { ReceiptInput } from '../merge.js'
import { REPLICAS, eventTime, type FrameEvent, type JournalEvent, type Replica } from '../types.js'

// ---------------------------------------------------------------------------------------------------------
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), slicing-by-16 (then by 4) over 32-bit little-endian reads.
// zlib.crc32 is CRC-32 (not C) and arrives only in Node 22, so the journal carries its own.
// Check value: crc32c("123456789") = 0xe3069283. About 1.8 GB/s on one core (byte-at-a-time: ~0.3 GB/s).

/** 16 tables of 256 entries, one flat array: table k at k * 256. Table 0 is the byte-at-a-time table. */
const CRC_TABLE: Int32Array = (() => {
  const t = new Int32Array(256 * 16)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1
    t[n] = c
  }
  for (let k = 1; k < 16; k++) {
    for (let n = 0; n < 256; n++) {
      const prev = t[(k - 1) * 256 + n]!
      t[k * 256 + n] = (prev >>> 8) ^ t[prev & 0xff]!
    }
  }
  return t
})()

/** CRC-32C of `buf[start, end)` where `dv` views the same bytes as `buf` (same offset and length). */
export function crc32cView(buf: Uint8Array, dv: DataView, start: number, end: number, crc = 0): number {
  const f = CRC_TABLE
  let c = ~crc
  let p = start
  const end16 = end - 16
  while (p <= end16) {
    const a = c ^ dv.getInt32(p, true)
    const b = dv.getInt32(p + 4, true)
    const d = dv.getInt32(p + 8, true)
    const g = dv.getInt32(p + 12, true)
    c = f[3840 + (a & 0xff)]! ^ f[3584 + ((a >>> 8) & 0xff)]! ^ f[3328 + ((a >>> 16) & 0xff)]! ^ f[3072 + (a >>> 24)]! ^
      f[2816 + (b & 0xff)]! ^ f[2560 + ((b >>> 8) & 0xff)]! ^ f[2304 + ((b >>> 16) & 0xff)]! ^ f[2048 + (b >>> 24)]! ^
      f[1792 + (d & 0xff)]! ^ f[1536 + ((d >>> 8) & 0xff)]! ^ f[1280 + ((d >>> 16) & 0xff)]! ^ f[1024 + (d >>> 24)]! ^
      f[768 + (g & 0xff)]! ^ f[512 + ((g >>> 8) & 0xff)]! ^ f[256 + ((g >>> 16) & 0xff)]! ^ f[g >>> 24]!
    p += 16
  }
  // Four bytes at a time for the rest: a record header's 12 bytes, and most of a body's tail.
  while (p <= end - 4) {
    const a = c ^ dv.getInt32(p, true)
    c = f[768 + (a & 0xff)]! ^ f[512 + ((a >>> 8) & 0xff)]! ^ f[256 + ((a >>> 16) & 0xff)]! ^ f[a >>> 24]!
    p += 4
  }
  while (p < end) c = f[(c ^ buf[p++]!) & 0xff]! ^ (c >>> 8)
  return ~c >>> 0
}

/** CRC-32C of `buf[start, end)`, as an unsigned 32-bit number. `crc` continues an earlier call's result. */
export function crc32c(buf: Uint8Array, start = 0, end = buf.length, crc = 0): number {
  return crc32cView(buf, new DataView(buf.buffer, buf.byteOffset, buf.byteLength), start, end, crc)
}

// ---------------------------------------------------------------------------------------------------------
// Layout constants (docs/journal.md, "File" and "Record").

/** Version 2 added the replica's own records (recorder-start, heartbeat, destination-unavailable). */
export const JOURNAL_VERSION = 2
/** Versions this reader reads: version-1 files hold a subset of version 2's records. */
const READABLE_VERSIONS = [1, 2]
/** "\x89PJRNL\r\n": a high byte first (not text), CR LF to catch text-mode mangling. */
export const FILE_MAGIC = Buffer.from([0x89, 0x50, 0x4a, 0x52, 0x4e, 0x4c, 0x0d, 0x0a])
export const FILE_HEADER_SIZE = 16
/** F7 is never a byte of UTF-8, so the marker cannot occur inside a text payload or a string field. */
export const SYNC_MARKER = Buffer.from([0xf7, 0x4a, 0x52, 0x4e])
export const RECORD_HEADER_SIZE = 16
/** The common body prefix: kind, replica, flags, reserved, int64 time. */
export const MIN_BODY_SIZE = 12
/** The largest body accepted (16 MiB); a longer length field is corruption and is never allocated. */
export const MAX_BODY_SIZE = 16 * 1024 * 1024
/** The largest frame payload a writer accepts, leaving room for the body's other fields. */
export const MAX_PAYLOAD_SIZE = MAX_BODY_SIZE - 64 * 1024

const SYNC_WORD = SYNC_MARKER.readUInt32LE(0)

/** Record kinds: the body's first byte. 0 is the writer's own torn-tail marker, not an event. */
export const RecordKind = {
  TRUNCATION: 0,
  FRAME: 1,
  CONNECTING: 2,
  OPEN: 3,
  SUBSCRIBED: 4,
  CLOSED: 5,
  ERROR: 6,
  SEQUENCE_BREAK: 7,
  CHECKSUM_MISMATCH: 8,
  HEARTBEAT: 9,
  RECORDER_START: 10,
  DESTINATION_UNAVAILABLE: 11,
} as const

const KIND_CODE: Record<JournalEvent['kind'], number> = {
  'frame': RecordKind.FRAME,
  'connecting': RecordKind.CONNECTING,
  'open': RecordKind.OPEN,
  'subscribed': RecordKind.SUBSCRIBED,
  'closed': RecordKind.CLOSED,
  'error': RecordKind.ERROR,
  'sequence-break': RecordKind.SEQUENCE_BREAK,
  'checksum-mismatch': RecordKind.CHECKSUM_MISMATCH,
  'heartbeat': RecordKind.HEARTBEAT,
  'recorder-start': RecordKind.RECORDER_START,
  'destination-unavailable': RecordKind.DESTINATION_UNAVAILABLE,
}

const FRAME_BINARY = 1
const FRAME_CLOCK = 2
const CLOSED_CODE = 1
const CLOSED_REASON = 2

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

/** The file header of a new journal file. */
export function fileHeader(): Buffer {
  const h = Buffer.alloc(FILE_HEADER_SIZE)
  FILE_MAGIC.copy(h, 0)
  h.writeUInt16LE(JOURNAL_VERSION, 8)
  h.writeUInt16LE(0, 10)
  h.writeUInt32LE(crc32c(h, 0, 12), 12)
  return h
}

// ---------------------------------------------------------------------------------------------------------
// Encoding

/** A value the journal cannot hold (bad replica, time outside int64, one clock field without the other, ...). */
export class JournalEncodeError extends PipeError {
  constructor(readonly field: string, message: string) {
    super('journal.bad-event', `${field}: ${message}`)
    this.name = 'JournalEncodeError'
  }
}

function checkString(s: unknown, field: string): string {
  if (typeof s !== 'string') throw new JournalEncodeError(field, 'expected a string')
  if (!s.isWellFormed()) throw new JournalEncodeError(field, 'has a lone surrogate (not encodable as UTF-8)')
  return s
}

function checkInt64(v: unknown, field: string): bigint {
  if (typeof v !== 'bigint') throw new JournalEncodeError(field, 'expected a bigint')
  if (v < INT64_MIN || v > INT64_MAX) throw new JournalEncodeError(field, 'is outside the int64 range')
  return v
}

class BodyWriter {
  private readonly buf: Buffer
  pos = 0
  constructor(size: number) { this.buf = Buffer.allocUnsafe(RECORD_HEADER_SIZE + size); this.pos = RECORD_HEADER_SIZE }
  u8(v: number) { this.buf[this.pos++] = v }
  u16(v: number) { this.buf.writeUInt16LE(v, this.pos); this.pos += 2 }
  u32(v: number) { this.buf.writeUInt32LE(v, this.pos); this.pos += 4 }
  i64(v: bigint) { this.buf.writeBigInt64LE(v, this.pos); this.pos += 8 }
  str(s: string) {
    const n = this.buf.write(s, this.pos + 4, 'utf8')
    this.buf.writeUInt32LE(n, this.pos)
    this.pos += 4 + n
  }
  bytes(b: Uint8Array) { this.buf.set(b, this.pos); this.pos += b.byteLength }
  /** Fills the record header and returns the whole record. */
  finish(): Buffer {
    const body = this.pos - RECORD_HEADER_SIZE
    const b = this.buf
    if (this.pos !== b.length) throw new Error(`journal: body size ${body} differs from its computed size ${b.length - RECORD_HEADER_SIZE}`)
    b.writeUInt32LE(SYNC_WORD, 0)
    b.writeUInt32LE(body, 4)
    b.writeUInt32LE(crc32c(b, RECORD_HEADER_SIZE, b.length), 8)
    b.writeUInt32LE(crc32c(b, 0, 12), 12)
    return b
  }
}

const strSize = (s: string) => 4 + Buffer.byteLength(s, 'utf8')

/**
 * Encodes one event as a complete record (header and body). Throws {@link JournalEncodeError} naming the
 * field for a value the format cannot hold; nothing is written then.
 */
export function encodeJournalRecord(e: JournalEvent): Buffer {
  const code = KIND_CODE[e.kind]
  if (code === undefined) throw new JournalEncodeError('kind', `unknown event kind ${JSON.stringify((e as { kind: unknown }).kind)}`)
  if (e.replica !== 'a' && e.replica !== 'b') throw new JournalEncodeError('replica', `must be "a" or "b", not ${JSON.stringify(e.replica)}`)
  const connection = 'connection' in e ? checkString(e.connection, 'connection') : ''
  let size = MIN_BODY_SIZE + ('connection' in e ? strSize(connection) : 0)
  let flags = 0
  switch (e.kind) {
    case 'frame': {
      checkInt64(e.receiveTime, 'receiveTime')
      if (!(e.payload instanceof Uint8Array)) throw new JournalEncodeError('payload', 'expected a Uint8Array')
      if (e.payload.byteLength > MAX_PAYLOAD_SIZE) throw new JournalEncodeError('payload', `is ${e.payload.byteLength} bytes, over the cap of ${MAX_PAYLOAD_SIZE}`)
      if (typeof e.binary !== 'boolean') throw new JournalEncodeError('binary', 'expected a boolean')
      const hasOffset = e.clockOffset !== undefined, hasBound = e.clockErrorBound !== undefined
      if (hasOffset !== hasBound) throw new JournalEncodeError(hasOffset ? 'clockErrorBound' : 'clockOffset', 'clockOffset and clockErrorBound are both present or both absent')
      if (hasOffset) {
        checkInt64(e.clockOffset, 'clockOffset')
        if (checkInt64(e.clockErrorBound, 'clockErrorBound') < 0n) throw new JournalEncodeError('clockErrorBound', 'must not be negative')
        flags |= FRAME_CLOCK
        size += 16
      }
      if (e.binary) flags |= FRAME_BINARY
      size += e.payload.byteLength
      break
    }
    case 'connecting': case 'open':
      checkInt64(e.time, 'time')
      break
    case 'subscribed':
      checkInt64(e.time, 'time')
      if (!Array.isArray(e.instruments)) throw new JournalEncodeError('instruments', 'expected an array of strings')
      size += 4
      e.instruments.forEach((s, i) => { size += strSize(checkString(s, `instruments[${i}]`)) })
      break
    case 'closed':
      checkInt64(e.time, 'time')
      if (e.closeCode !== undefined) {
        if (!Number.isInteger(e.closeCode) || e.closeCode < 0 || e.closeCode > 65535) throw new JournalEncodeError('closeCode', 'must be an integer 0..65535')
        flags |= CLOSED_CODE
        size += 2
      }
      if (e.reason !== undefined) { flags |= CLOSED_REASON; size += strSize(checkString(e.reason, 'reason')) }
      break
    case 'error':
      checkInt64(e.time, 'time')
      size += strSize(checkString(e.message, 'message'))
      break
    case 'sequence-break':
      checkInt64(e.time, 'time')
      size += strSize(checkString(e.instrument, 'instrument')) + strSize(checkString(e.afterId, 'afterId')) + strSize(checkString(e.beforeId, 'beforeId'))
      break
    case 'checksum-mismatch':
      checkInt64(e.time, 'time')
      size += strSize(checkString(e.instrument, 'instrument')) + strSize(checkString(e.expected, 'expected')) + strSize(checkString(e.computed, 'computed'))
      break
    case 'heartbeat':
      checkInt64(e.time, 'time')
      break
    case 'recorder-start':
      checkInt64(e.time, 'time')
      if (checkInt64(e.heartbeatIntervalNs, 'heartbeatIntervalNs') <= 0n) throw new JournalEncodeError('heartbeatIntervalNs', 'must be positive')
      size += 8
      break
    case 'destination-unavailable':
      checkInt64(e.time, 'time')
      if (checkInt64(e.to, 'to') <= checkInt64(e.from, 'from')) throw new JournalEncodeError('to', 'must be after from')
      size += 8
      if (!Number.isSafeInteger(e.lostEvents) || e.lostEvents < 0) throw new JournalEncodeError('lostEvents', 'must be a non-negative safe integer')
      size += 16 + strSize(checkString(e.message, 'message'))
      break
  }
  if (size > MAX_BODY_SIZE) throw new JournalEncodeError('kind', `the record body would be ${size} bytes, over the cap of ${MAX_BODY_SIZE}`)
  const w = new BodyWriter(size)
  w.u8(code)
  w.u8(e.replica.charCodeAt(0))
  w.u8(flags)
  // The reserved byte marks a restated event (docs/journal.md, "State at the top of each file").
  w.u8(isRestated(e) ? 1 : 0)
  w.i64(eventTime(e))
  switch (e.kind) {
    case 'frame':
      if (flags & FRAME_CLOCK) { w.i64(e.clockOffset!); w.i64(e.clockErrorBound!) }
      w.str(connection)
      w.bytes(e.payload)
      break
    case 'connecting': case 'open':
      w.str(connection)
      break
    case 'subscribed':
      w.str(connection)
      w.u32(e.instruments.length)
      for (const s of e.instruments) w.str(s)
      break
    case 'closed':
      w.str(connection)
      if (flags & CLOSED_CODE) w.u16(e.closeCode!)
      if (flags & CLOSED_REASON) w.str(e.reason!)
      break
    case 'error':
      w.str(connection); w.str(e.message)
      break
    case 'sequence-break':
      w.str(connection); w.str(e.instrument); w.str(e.afterId); w.str(e.beforeId)
      break
    case 'checksum-mismatch':
      w.str(connection); w.str(e.instrument); w.str(e.expected); w.str(e.computed)
      break
    case 'heartbeat':
      break
    case 'recorder-start':
      w.i64(e.heartbeatIntervalNs)
      break
    case 'destination-unavailable':
      w.i64(e.from); w.i64(e.to); w.i64(BigInt(e.lostEvents)); w.str(e.message)
      break
  }
  return w.finish()
}

/** The writer's marker for a torn tail it truncated when reopening a file (docs/journal.md, kind 0). */
export function encodeTruncationRecord(time: bigint, offset: number, bytes: number): Buffer {
  const w = new BodyWriter(MIN_BODY_SIZE + 16)
  w.u8(RecordKind.TRUNCATION); w.u8(0); w.u8(0); w.u8(0)
  w.i64(time)
  w.i64(BigInt(offset))
  w.i64(BigInt(bytes))
  return w.finish()
}

// ---------------------------------------------------------------------------------------------------------
// Decoding

/** Why bytes of a journal were not read as events. `torn` and `corrupt` map to `journal_torn` and `journal_corrupt`. */
export type JournalProblemReason =
  /** torn: the file ends inside its 16-byte file header. */
  | 'partial-file-header'
  /** torn: the file ends inside a record (header or body). */
  | 'partial-record'
  /** torn: the file ends in a run of zero bytes where a record should start (a crash after the size grew). */
  | 'zero-fill'
  /** torn: a writer found a torn tail when it reopened the file, truncated it, and left a marker record. */
  | 'truncated-on-reopen'
  /** corrupt: the file header's checksum fails; records are read as the current version. */
  | 'file-header'
  /** corrupt: no valid record header where one should start (sync marker or header checksum); resynchronised. */
  | 'record-header'
  /** corrupt: a record header whose length is outside 12 .. 16 MiB; resynchronised. */
  | 'length'
  /** corrupt: a complete record whose body checksum fails; skipped by its (checksummed) length. */
  | 'body-checksum'
  /** corrupt: a complete record with a good checksum whose body does not decode. */
  | 'body-decode'

export interface JournalProblem {
  kind: 'torn' | 'corrupt'
  reason: JournalProblemReason
  /** The journal file, when known. */
  file?: string
  /** Byte offset in the file where the unread bytes begin. */
  offset: number
  /** How many bytes were skipped (corrupt), lost (torn), or truncated (truncated-on-reopen). */
  bytes: number
  /** How many records the bytes held, when the reader can know it (1 for a record with a good header). */
  records?: number
  detail: string
}

/** The events and problems of one buffer's worth of a journal file. */
export interface ScanOutput {
  /** Empty when the events are on `tape`. */
  events: JournalEvent[]
  /** Byte offset in the file of each event's record (not kept for a tape). */
  offsets: number[]
  problems: JournalProblem[]
  /** The events, when the scanner keeps them as an {@link EventTape}. */
  tape?: EventTape
}

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** Thrown inside body decoding; caught by the scanner and turned into a `body-decode` problem. */
class DecodeError extends Error {}

/**
 * The incremental journal reader: feed it consecutive buffers of one file (with the file offset of each)
 * and it appends events and problems to its output. It holds no bytes itself: `feed` returns how far it
 * consumed, and the caller passes the unconsumed rest again, followed by more, in the next call
 * (`needed` says how many bytes from there it must see to make progress).
 *
 * Events refer to the buffers they came from (payloads are subarrays), so callers must not reuse a buffer
 * they fed while its events are alive.
 */
export class JournalScanner {
  /** Bytes needed from the returned position before the next `feed` can make progress. */
  needed = FILE_HEADER_SIZE
  out: ScanOutput
  /** Count of records read (events and markers), problems and bytes consumed, over the whole file. */
  records = 0
  private headerDone = false
  private skipFrom = -1
  private skipReason: JournalProblemReason = 'record-header'
  private skipAllZero = true
  private view: DataView | null = null
  private viewBuf: Uint8Array | null = null
  // A few recently seen connection ids: each distinct id becomes one string, not one per record.
  private readonly connBytes: Uint8Array[] = []
  private readonly connStrings: string[] = []

  /** Set by {@link startMidFile}: bytes before the first valid record are skipped without a problem. */
  private quiet = false
  /** The version the file header states, once read (a damaged header reads as the current version). */
  version = JOURNAL_VERSION

  /** `tape`: keep the events as an {@link EventTape} (frames undecoded) instead of as objects. */
  constructor(readonly file: string | undefined = undefined, readonly decode = true, private readonly tape = false) {
    this.out = this.newOutput()
  }

  private newOutput(): ScanOutput {
    return this.tape ? { events: [], offsets: [], problems: [], tape: new EventTape() } : { events: [], offsets: [], problems: [] }
  }

  /**
   * After the file header was fed: the next `feed` starts at an arbitrary offset (a seek), so bytes before
   * the first valid record there are the tail of a record the caller chose not to read, not corruption.
   */
  startMidFile(): void {
    if (!this.headerDone) throw new Error('startMidFile: the file header has not been read')
    this.quiet = true
    this.skipFrom = -1
    this.needed = RECORD_HEADER_SIZE
  }

  /** Takes the output gathered so far and starts a new one. */
  take(): ScanOutput {
    const o = this.out
    this.out = this.newOutput()
    return o
  }

  private problem(kind: 'torn' | 'corrupt', reason: JournalProblemReason, offset: number, bytes: number, detail: string, records?: number): void {
    const p: JournalProblem = { kind, reason, offset, bytes, detail }
    if (this.file !== undefined) p.file = this.file
    if (records !== undefined) p.records = records
    this.out.problems.push(p)
  }

  private closeSkip(at: number, atEnd = false): void {
    if (this.skipFrom < 0) return
    if (this.quiet) { this.skipFrom = -1; return }
    const bytes = at - this.skipFrom
    const to = atEnd ? 'the end of the file' : 'the next valid record'
    this.problem('corrupt', this.skipReason, this.skipFrom, bytes,
      this.skipReason === 'length'
        ? `the record header at byte ${this.skipFrom} states a body length outside ${MIN_BODY_SIZE}..${MAX_BODY_SIZE} bytes; skipped ${bytes} bytes to ${to}`
        : `no valid record header at byte ${this.skipFrom}; skipped ${bytes} bytes to ${to}`)
    this.skipFrom = -1
  }

  /** Enters (or continues) skipping at `pos` and moves `pos` to the next candidate sync marker. */
  private skip(buf: Uint8Array, pos: number, end: number, base: number, reason: JournalProblemReason): number {
    if (this.skipFrom < 0) {
      this.skipFrom = base + pos
      this.skipReason = reason
      this.skipAllZero = true
    }
    // indexOf searches the whole buffer, past `end` too (where there may be stale bytes): bound it.
    const found = (buf as Buffer).indexOf(SYNC_MARKER, pos + 1)
    // Not found: keep the last 3 bytes, which may begin a marker that the next buffer completes.
    const next = found >= 0 && found <= end - SYNC_MARKER.length ? found : Math.max(pos + 1, end - 3)
    if (this.skipAllZero) {
      for (let p = pos; p < next; p++) if (buf[p] !== 0) { this.skipAllZero = false; break }
    }
    return next
  }

  /**
   * Reads records from `buf[pos, end)`, whose first byte is at file offset `base + pos`. `eof` says the
   * file ends at `end`. Returns the position up to which the bytes were consumed; at `eof`, always `end`.
   */
  feed(buf: Uint8Array, pos: number, end: number, base: number, eof: boolean): number {
    if (!Buffer.isBuffer(buf)) buf = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength)
    if (!this.headerDone) {
      pos = this.fileHeader(buf, pos, end, base, eof)
      if (!this.headerDone) return pos
    }
    if (this.viewBuf !== buf) { this.viewBuf = buf; this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength) }
    const dv = this.view!
    for (;;) {
      const avail = end - pos
      if (avail < RECORD_HEADER_SIZE) {
        if (!eof) { this.needed = RECORD_HEADER_SIZE; return pos }
        if (avail === 0) { this.endSkip(base + end); return end }
        if (this.quiet) return end
        if (this.skipFrom < 0) {
          this.skipFrom = base + pos
          this.skipReason = 'record-header'
          this.skipAllZero = true
          if (isPrefix(buf, pos, end, SYNC_MARKER)) {
            this.skipFrom = -1
            this.problem('torn', 'partial-record', base + pos, avail, `the file ends ${avail} bytes into a record header`)
            return end
          }
        }
        for (let p = pos; p < end && this.skipAllZero; p++) if (buf[p] !== 0) this.skipAllZero = false
        this.endSkip(base + end)
        return end
      }
      if (dv.getUint32(pos, true) !== SYNC_WORD || crc32cView(buf, dv, pos, pos + 12) !== dv.getUint32(pos + 12, true)) {
        pos = this.skip(buf, pos, end, base, 'record-header')
        continue
      }
      const len = dv.getUint32(pos + 4, true)
      if (len < MIN_BODY_SIZE || len > MAX_BODY_SIZE) {
        // The header's checksum holds, but the length is impossible: trust nothing it says (and never
        // allocate it); resynchronise on the next marker.
        pos = this.skip(buf, pos, end, base, 'length')
        continue
      }
      if (this.skipFrom >= 0) this.closeSkip(base + pos)
      this.quiet = false
      const total = RECORD_HEADER_SIZE + len
      if (avail < total) {
        if (!eof) { this.needed = total; return pos }
        this.problem('torn', 'partial-record', base + pos, avail, `the file ends ${avail} bytes into a record of ${total} bytes`, 1)
        return end
      }
      const bodyStart = pos + RECORD_HEADER_SIZE
      const bodyEnd = bodyStart + len
      if (crc32cView(buf, dv, bodyStart, bodyEnd) !== dv.getUint32(pos + 8, true)) {
        this.problem('corrupt', 'body-checksum', base + pos, total, `the body checksum of the record at byte ${base + pos} fails; skipped its ${total} bytes`, 1)
      } else if (this.decode || buf[bodyStart] === RecordKind.TRUNCATION) {
        this.record(buf, dv, bodyStart, bodyEnd, base + pos, total)
      } else {
        this.records++
      }
      pos = bodyEnd
    }
  }

  /** At the end of the file while skipping: a run of zeros to the end is a torn tail, anything else corrupt. */
  private endSkip(fileEnd: number): void {
    if (this.skipFrom < 0) return
    if (this.quiet) { this.skipFrom = -1; return }
    if (this.skipAllZero) {
      const bytes = fileEnd - this.skipFrom
      this.problem('torn', 'zero-fill', this.skipFrom, bytes, `the file ends in ${bytes} zero bytes where a record should start`)
      this.skipFrom = -1
    } else {
      this.closeSkip(fileEnd, true)
    }
  }

  private fileHeader(buf: Uint8Array, pos: number, end: number, base: number, eof: boolean): number {
    const avail = end - pos
    if (avail < FILE_HEADER_SIZE) {
      if (!eof) { this.needed = FILE_HEADER_SIZE; return pos }
      this.headerDone = true
      if (avail === 0) return end
      if (!isPrefix(buf, pos, end, FILE_MAGIC) && !allZero(buf, pos, end)) throw notAJournal(this.file)
      this.problem('torn', 'partial-file-header', base + pos, avail, `the file ends ${avail} bytes into its file header`)
      return end
    }
    const h = Buffer.from(buf.buffer, buf.byteOffset + pos, FILE_HEADER_SIZE)
    const magicOk = h.compare(FILE_MAGIC, 0, 8, 0, 8) === 0
    const crcOk = crc32c(h, 0, 12) === h.readUInt32LE(12)
    if (crcOk && magicOk) {
      const version = h.readUInt16LE(8)
      if (!READABLE_VERSIONS.includes(version)) {
        throw new PipeError('journal.unsupported-version', `journal format version ${version} is not supported (this reader reads versions ${READABLE_VERSIONS.join(' and ')})`, { location: this.file ? { file: this.file } : {} })
      }
      this.version = version
      this.headerDone = true
      return pos + FILE_HEADER_SIZE
    }
    // A damaged header is corruption when records follow it; without them it is not a journal at all.
    if (!magicOk) {
      if (avail < FILE_HEADER_SIZE + RECORD_HEADER_SIZE && !eof) { this.needed = FILE_HEADER_SIZE + RECORD_HEADER_SIZE; return pos }
      const r = pos + FILE_HEADER_SIZE
      const recordFollows = avail >= FILE_HEADER_SIZE + RECORD_HEADER_SIZE &&
        Buffer.from(buf.buffer, buf.byteOffset + r, 4).equals(SYNC_MARKER) &&
        crc32c(buf, r, r + 12) === Buffer.from(buf.buffer, buf.byteOffset + r + 12, 4).readUInt32LE(0)
      if (!recordFollows) throw notAJournal(this.file)
    }
    this.headerDone = true
    this.problem('corrupt', 'file-header', base + pos, FILE_HEADER_SIZE, `the file header checksum fails; records read as version ${JOURNAL_VERSION}`)
    return pos + FILE_HEADER_SIZE
  }

  private record(buf: Uint8Array, dv: DataView, s: number, e: number, offset: number, total: number): void {
    try {
      const kind = buf[s]!
      if (kind === RecordKind.TRUNCATION) {
        if (e - s !== MIN_BODY_SIZE + 16 || buf[s + 1] !== 0 || buf[s + 2] !== 0 || buf[s + 3] !== 0) throw new DecodeError('a truncation marker of the wrong size or with nonzero flags')
        const at = Number(dv.getBigInt64(s + 12, true))
        const bytes = Number(dv.getBigInt64(s + 20, true))
        this.records++
        this.problem('torn', 'truncated-on-reopen', at, bytes, `a writer reopening the file at ${formatTimeSafe(dv.getBigInt64(s + 4, true))} found a torn tail of ${bytes} bytes at byte ${at} and truncated it`)
        return
      }
      const tape = this.out.tape
      if (tape === undefined) {
        const event = this.decodeEvent(buf, dv, s, e)
        this.out.events.push(event)
        this.out.offsets.push(offset)
      } else if (kind === RecordKind.FRAME) {
        this.checkPrefix(buf, s)
        const payloadStart = this.frameFields(buf, dv, s, e)
        tape.addFrame(buf as Buffer, dv, s, payloadStart, e, this.frameConnection)
      } else {
        tape.addEvent(this.decodeEvent(buf, dv, s, e), dv, s)
      }
      this.records++
    } catch (err) {
      if (!(err instanceof DecodeError)) throw err
      this.problem('corrupt', 'body-decode', offset, total, `the record at byte ${offset} has a good checksum but does not decode: ${err.message}`, 1)
    }
  }

  private str(buf: Uint8Array, dv: DataView, p: number, e: number, what: string): string {
    if (p + 4 > e) throw new DecodeError(`${what}: length past the end of the body`)
    const n = dv.getUint32(p, true)
    if (n > e - p - 4) throw new DecodeError(`${what}: ${n} bytes past the end of the body`)
    try {
      return fatalUtf8.decode(buf.subarray(p + 4, p + 4 + n))
    } catch {
      throw new DecodeError(`${what}: not UTF-8`)
    }
  }

  /** The connection id at p, from the cache when its bytes were seen recently. Returns the string; sets strEnd. */
  private strEnd = 0
  private connection(buf: Uint8Array, dv: DataView, p: number, e: number): string {
    if (p + 4 > e) throw new DecodeError('connection: length past the end of the body')
    const n = dv.getUint32(p, true)
    if (n > e - p - 4) throw new DecodeError(`connection: ${n} bytes past the end of the body`)
    const s = p + 4
    this.strEnd = s + n
    const cache = this.connBytes
    outer: for (let i = 0; i < cache.length; i++) {
      const c = cache[i]!
      if (c.length !== n) continue
      for (let k = 0; k < n; k++) if (c[k] !== buf[s + k]) continue outer
      return this.connStrings[i]!
    }
    const str = this.str(buf, dv, p, e, 'connection')
    if (cache.length >= 8) { cache.pop(); this.connStrings.pop() }
    cache.unshift(new Uint8Array(buf.subarray(s, s + n)))
    this.connStrings.unshift(str)
    return str
  }

  /** Checks the body prefix common to every event (replica and restated bytes). */
  private checkPrefix(buf: Uint8Array, s: number): void {
    const kind = buf[s]!
    const r = buf[s + 1]
    if (r !== 0x61 && r !== 0x62) throw new DecodeError(`replica byte 0x${(r ?? 0).toString(16)} is neither "a" nor "b"`)
    const restated = buf[s + 3]!
    if (restated > 1 || (restated === 1 && kind !== RecordKind.OPEN && kind !== RecordKind.SUBSCRIBED && kind !== RecordKind.CLOSED && kind !== RecordKind.RECORDER_START)) {
      throw new DecodeError(`the restated byte is ${restated} on a record of kind ${kind}`)
    }
  }

  /** Checks a frame body (prefix checked); returns where its payload starts, with its connection in `frameConnection`. */
  private frameFields(buf: Uint8Array, dv: DataView, s: number, e: number): number {
    const flags = buf[s + 2]!
    if (flags & ~(FRAME_BINARY | FRAME_CLOCK)) throw new DecodeError(`unknown frame flags 0x${flags.toString(16)}`)
    let p = s + MIN_BODY_SIZE
    if (flags & FRAME_CLOCK) {
      if (p + 16 > e) throw new DecodeError('clock fields past the end of the body')
      p += 16
    }
    this.frameConnection = this.connection(buf, dv, p, e)
    return this.strEnd
  }

  private frameConnection = ''

  private decodeEvent(buf: Uint8Array, dv: DataView, s: number, e: number): JournalEvent {
    this.checkPrefix(buf, s)
    const kind = buf[s]!
    const replica: Replica = buf[s + 1] === 0x61 ? 'a' : 'b'
    const flags = buf[s + 2]!
    const restated = buf[s + 3]!
    const time = dv.getBigInt64(s + 4, true)
    let p = s + MIN_BODY_SIZE
    if (kind === RecordKind.FRAME) {
      const payloadStart = this.frameFields(buf, dv, s, e)
      return frameEventAt(buf as Buffer, dv, s, payloadStart, e, this.frameConnection)
    }
    const str = (what: string) => { const v = this.str(buf, dv, p, e, what); p += 4 + dv.getUint32(p, true); return v }
    const i64 = (what: string) => { if (p + 8 > e) throw new DecodeError(`${what} past the end of the body`); const v = dv.getBigInt64(p, true); p += 8; return v }
    if (kind >= RecordKind.HEARTBEAT && kind <= RecordKind.DESTINATION_UNAVAILABLE) {
      if (flags) throw new DecodeError(`unknown flags 0x${flags.toString(16)}`)
      let event: JournalEvent
      if (kind === RecordKind.HEARTBEAT) event = { kind: 'heartbeat', replica, time }
      else if (kind === RecordKind.RECORDER_START) {
        const heartbeatIntervalNs = i64('heartbeat interval')
        if (heartbeatIntervalNs <= 0n) throw new DecodeError(`heartbeat interval ${heartbeatIntervalNs} is not positive`)
        event = { kind: 'recorder-start', replica, time, heartbeatIntervalNs, ...(restated ? { restated: true } : {}) }
      } else {
        const from = i64('from')
        const to = i64('to')
        const lost = i64('lost events')
        if (to <= from || lost < 0n || lost > BigInt(Number.MAX_SAFE_INTEGER)) throw new DecodeError('destination-unavailable: to not after from, or a lost-event count out of range')
        event = { kind: 'destination-unavailable', replica, time, from, to, lostEvents: Number(lost), message: str('message') }
      }
      if (p !== e) throw new DecodeError(`${e - p} bytes after the last field`)
      return event
    }
    const connection = this.connection(buf, dv, p, e)
    p = this.strEnd
    let event: JournalEvent
    switch (kind) {
      case RecordKind.CONNECTING:
      case RecordKind.OPEN:
        if (flags) throw new DecodeError(`unknown flags 0x${flags.toString(16)}`)
        event = kind === RecordKind.OPEN ? { kind: 'open', replica, connection, time, ...(restated ? { restated: true } : {}) } : { kind: 'connecting', replica, connection, time }
        break
      case RecordKind.SUBSCRIBED: {
        if (flags) throw new DecodeError(`unknown flags 0x${flags.toString(16)}`)
        if (p + 4 > e) throw new DecodeError('instrument count past the end of the body')
        const count = dv.getUint32(p, true)
        p += 4
        if (count > (e - p) / 4) throw new DecodeError(`${count} instruments cannot fit in the body`)
        const instruments: string[] = []
        for (let i = 0; i < count; i++) instruments.push(str(`instruments[${i}]`))
        event = { kind: 'subscribed', replica, connection, time, instruments, ...(restated ? { restated: true } : {}) }
        break
      }
      case RecordKind.CLOSED: {
        if (flags & ~(CLOSED_CODE | CLOSED_REASON)) throw new DecodeError(`unknown closed flags 0x${flags.toString(16)}`)
        const closed: JournalEvent = { kind: 'closed', replica, connection, time }
        if (flags & CLOSED_CODE) {
          if (p + 2 > e) throw new DecodeError('close code past the end of the body')
          closed.closeCode = dv.getUint16(p, true)
          p += 2
        }
        if (flags & CLOSED_REASON) closed.reason = str('reason')
        if (restated) closed.restated = true
        event = closed
        break
      }
      case RecordKind.ERROR:
        if (flags) throw new DecodeError(`unknown flags 0x${flags.toString(16)}`)
        event = { kind: 'error', replica, connection, time, message: str('message') }
        break
      case RecordKind.SEQUENCE_BREAK: {
        if (flags) throw new DecodeError(`unknown flags 0x${flags.toString(16)}`)
        const instrument = str('instrument'), afterId = str('afterId'), beforeId = str('beforeId')
        event = { kind: 'sequence-break', replica, connection, time, instrument, afterId, beforeId }
        break
      }
      case RecordKind.CHECKSUM_MISMATCH: {
        if (flags) throw new DecodeError(`unknown flags 0x${flags.toString(16)}`)
        const instrument = str('instrument'), expected = str('expected'), computed = str('computed')
        event = { kind: 'checksum-mismatch', replica, connection, time, instrument, expected, computed }
        break
      }
      default:
        throw new DecodeError(`unknown record kind ${kind}`)
    }
    if (p !== e) throw new DecodeError(`${e - p} bytes after the last field`)
    return event
  }
}

/** The frame event of a checked frame body at `s` in `buf` (its payload a view into `buf`). */
function frameEventAt(buf: Buffer, dv: DataView, s: number, payloadStart: number, e: number, connection: string): FrameEvent {
  const replica: Replica = buf[s + 1] === 0x61 ? 'a' : 'b'
  const flags = buf[s + 2]!
  const receiveTime = dv.getBigInt64(s + 4, true)
  const payload = buf.subarray(payloadStart, e)
  const binary = (flags & FRAME_BINARY) !== 0
  return flags & FRAME_CLOCK
    ? { kind: 'frame', replica, connection, receiveTime, payload, binary, clockOffset: dv.getBigInt64(s + MIN_BODY_SIZE, true), clockErrorBound: dv.getBigInt64(s + MIN_BODY_SIZE + 8, true) }
    : { kind: 'frame', replica, connection, receiveTime, payload, binary }
}

/** [start, end) of event time as int64 halves [high, low]; a bound absent is unbounded. */
interface TimeRange { start: [number, number] | undefined; end: [number, number] | undefined }

function timeRange(start: bigint | undefined, end: bigint | undefined): TimeRange {
  const halves = (t: bigint): [number, number] => [Number(t >> 32n), Number(BigInt.asUintN(32, t))]
  return { start: start === undefined ? undefined : halves(start), end: end === undefined ? undefined : halves(end) }
}

/** Whether the int64 (aHi, aLo) is before (bHi, bLo); high words signed, low words unsigned. */
function timeBefore(aHi: number, aLo: number, bHi: number, bLo: number): boolean {
  return aHi < bHi || (aHi === bHi && aLo < bLo)
}

/**
 * Journal events kept as the places of their records in the buffers they were read into, in order: a
 * frame is checked when read but becomes an object only when asked for ({@link event}); other events are
 * decoded when read and kept as they are. At millions of frames an hour, the objects of frames waiting to
 * be read and paired were most of the sealer's garbage-collection work; a reader of the tape
 * ({@link frameInto}) makes none.
 */
export class EventTape {
  length = 0
  private buffers: Buffer[] = []
  private views: DataView[] = []
  /** Where each frame's body and payload start and its body ends; unused for decoded events. */
  private bodyStarts: Int32Array
  private payloadStarts: Int32Array
  private bodyEnds: Int32Array
  /** Event time as int64 halves. */
  private timeHis: Int32Array
  private timeLos: Uint32Array
  private connections: string[] = []
  /** The event, for every entry that is not a frame. */
  private decoded: (JournalEvent | undefined)[] = []

  /** `capacity`: the entries expected, when known (a merged batch's size), so that the tape need not grow. */
  constructor(private capacity = 0) {
    this.bodyStarts = new Int32Array(capacity)
    this.payloadStarts = new Int32Array(capacity)
    this.bodyEnds = new Int32Array(capacity)
    this.timeHis = new Int32Array(capacity)
    this.timeLos = new Uint32Array(capacity)
  }

  /** A checked frame body. */
  addFrame(buf: Buffer, dv: DataView, s: number, payloadStart: number, e: number, connection: string): void {
    const i = this.next()
    this.buffers[i] = buf
    this.views[i] = dv
    this.bodyStarts[i] = s
    this.payloadStarts[i] = payloadStart
    this.bodyEnds[i] = e
    this.timeLos[i] = dv.getUint32(s + 4, true)
    this.timeHis[i] = dv.getInt32(s + 8, true)
    this.connections[i] = connection
    this.decoded[i] = undefined
  }

  /** A decoded event whose record body starts at `s` of the buffer `dv` views. */
  addEvent(event: JournalEvent, dv: DataView, s: number): void {
    const i = this.next()
    this.timeLos[i] = dv.getUint32(s + 4, true)
    this.timeHis[i] = dv.getInt32(s + 8, true)
    this.decoded[i] = event
  }

  /** Appends entry `i` of `from`. */
  copy(from: EventTape, i: number): void {
    const j = this.next()
    this.timeLos[j] = from.timeLos[i]!
    this.timeHis[j] = from.timeHis[i]!
    const event = from.decoded[i]
    this.decoded[j] = event
    if (event !== undefined) return
    this.buffers[j] = from.buffers[i]!
    this.views[j] = from.views[i]!
    this.bodyStarts[j] = from.bodyStarts[i]!
    this.payloadStarts[j] = from.payloadStarts[i]!
    this.bodyEnds[j] = from.bodyEnds[i]!
    this.connections[j] = from.connections[i]!
  }

  /** Whether entry `i`'s event time is before entry `j`'s of `other`. */
  before(i: number, other: EventTape, j: number): boolean {
    return timeBefore(this.timeHis[i]!, this.timeLos[i]!, other.timeHis[j]!, other.timeLos[j]!)
  }

  /** Whether entry `i`'s event time is in the range. */
  within(i: number, range: TimeRange): boolean {
    const hi = this.timeHis[i]!
    const lo = this.timeLos[i]!
    return !(range.start && timeBefore(hi, lo, range.start[0], range.start[1])) && !(range.end && !timeBefore(hi, lo, range.end[0], range.end[1]))
  }

  /** The first entry whose event time is outside the range, else the length (as for all but the batches at a range's edges). */
  firstOutside(range: TimeRange): number {
    let i = 0
    while (i < this.length && this.within(i, range)) i++
    return i
  }

  /** The event time of entry `i`. */
  time(i: number): bigint {
    // A frame's time is read whole from its record body: one bigint rather than four.
    if (this.decoded[i] === undefined) return this.views[i]!.getBigInt64(this.bodyStarts[i]! + 4, true)
    return (BigInt(this.timeHis[i]!) << 32n) + BigInt(this.timeLos[i]!)
  }

  /** The event of entry `i` when it is not a frame (a frame: undefined). */
  decodedEvent(i: number): JournalEvent | undefined {
    return this.decoded[i]
  }

  /** The event of entry `i`, a frame decoded now. */
  event(i: number): JournalEvent {
    return this.decoded[i] ?? frameEventAt(this.buffers[i]!, this.views[i]!, this.bodyStarts[i]!, this.payloadStarts[i]!, this.bodyEnds[i]!, this.connections[i]!)
  }

  /** Every event, in order. */
  events(): JournalEvent[] {
    const out: JournalEvent[] = new Array(this.length)
    for (let i = 0; i < this.length; i++) out[i] = this.event(i)
    return out
  }

  /** The replica of frame `i`. */
  frameReplica(i: number): Replica {
    return this.buffers[i]![this.bodyStarts[i]! + 1] === 0x61 ? 'a' : 'b'
  }

  /** The connection of frame `i`. */
  frameConnection(i: number): string {
    return this.connections[i]!
  }

  /** Fills `input` with frame `i` (its payload a view into the read buffer). */
  frameInto(i: number, input: ReceiptInput): void {
    const buf = this.buffers[i]!
    const dv = this.views[i]!
    const s = this.bodyStarts[i]!
    const flags = buf[s + 2]!
    input.replica = buf[s + 1] === 0x61 ? 'a' : 'b'
    input.connection = this.connections[i]!
    input.timeHi = this.timeHis[i]!
    input.timeLo = this.timeLos[i]!
    input.payloadBuffer = buf
    input.payloadStart = this.payloadStarts[i]!
    input.payloadBytes = this.bodyEnds[i]! - input.payloadStart
    input.binary = (flags & FRAME_BINARY) !== 0
    input.hasClock = (flags & FRAME_CLOCK) !== 0
    if (input.hasClock) {
      input.offsetLo = dv.getUint32(s + MIN_BODY_SIZE, true)
      input.offsetHi = dv.getInt32(s + MIN_BODY_SIZE + 4, true)
      input.boundLo = dv.getUint32(s + MIN_BODY_SIZE + 8, true)
      input.boundHi = dv.getInt32(s + MIN_BODY_SIZE + 12, true)
    }
  }

  private next(): number {
    if (this.length === this.capacity) {
      const n = Math.max(256, this.capacity * 2)
      this.bodyStarts = grown(this.bodyStarts, n)
      this.payloadStarts = grown(this.payloadStarts, n)
      this.bodyEnds = grown(this.bodyEnds, n)
      this.timeHis = grown(this.timeHis, n)
      this.timeLos = grown(this.timeLos, n)
      this.capacity = n
    }
    return this.length++
  }
}

function formatTimeSafe(ns: bigint): string {
  try { return formatTime(ns) } catch { return `${ns} ns` }
}

function isPrefix(buf: Uint8Array, s: number, e: number, of: Uint8Array): boolean {
  for (let i = 0; i < e - s && i < of.length; i++) if (buf[s + i] !== of[i]) return false
  return true
}

function allZero(buf: Uint8Array, s: number, e: number): boolean {
  for (let i = s; i < e; i++) if (buf[i] !== 0) return false
  return true
}

function notAJournal(file: string | undefined): PipeError {
  return new PipeError('journal.not-a-journal', 'not a journal file (no journal file header)', { location: file ? { file } : {} })
}

/** Decodes a whole journal file held in memory. Payloads are views into `bytes`. */
export function decodeJournal(bytes: Uint8Array, file?: string): ScanOutput {
  const scanner = new JournalScanner(file)
  scanner.feed(bytes, 0, bytes.length, 0, true)
  return scanner.out
}

// ---------------------------------------------------------------------------------------------------------
// Reading files

/** Read size: 1 MiB, as the file source uses. */
export const JOURNAL_READ_CHUNK = 1 << 20

/** One buffer's worth of a journal file: events with their record offsets, and problems. */
export interface JournalFileBatch extends ScanOutput {
  file: string
  /** Bytes of the file this batch covers. */
  bytes: number
}

export interface ReadJournalFileOptions {
  chunkSize?: number
  decode?: boolean
  /**
   * Start reading at this byte offset instead of after the file header (e.g. from {@link seekJournalTime}).
   * The file header is still checked; the bytes before the first valid record at the offset are skipped
   * without a problem.
   */
  startOffset?: number
  /** Stop after the batch in which an event time at or after this instant appears (the rest is not read). */
  stopAt?: bigint
  /** Give the events as an {@link EventTape} (`tape`, with `events` and `offsets` empty). */
  tape?: boolean
}

/**
 * Reads one journal file as batches (about one per 1 MiB read), in file order. Every read goes into a fresh
 * buffer, and only a record straddling two reads is copied, so frame payloads are subarrays of the read
 * buffers and stay valid for as long as they are held. Problems carry their byte offsets; a torn tail is
 * the last problem. Throws `journal.not-a-journal` or `journal.unsupported-version` for a file that is no
 * journal of a version this reader reads (1 or 2).
 */
export async function* readJournalFile(path: string, opts: ReadJournalFileOptions = {}): AsyncGenerator<JournalFileBatch> {
  yield* readWith(new JournalScanner(path, opts.decode ?? true, opts.tape ?? false), path, opts, { size: 0 })
}

async function* readWith(scanner: JournalScanner, path: string, opts: ReadJournalFileOptions, state: { size: number }): AsyncGenerator<JournalFileBatch> {
  const { fh } = await openRegularFile(path)
  try {
    let filePos = 0
    if (opts.startOffset !== undefined && opts.startOffset > FILE_HEADER_SIZE) {
      const header = Buffer.alloc(FILE_HEADER_SIZE)
      const { bytesRead } = await fh.read(header, 0, FILE_HEADER_SIZE, 0)
      scanner.feed(header, 0, bytesRead, 0, bytesRead < FILE_HEADER_SIZE)
      const early = scanner.take()
      if (early.problems.length) yield { ...early, file: path, bytes: bytesRead }
      if (bytesRead < FILE_HEADER_SIZE) { state.size = bytesRead; return }
      scanner.startMidFile()
      filePos = opts.startOffset
    }
    const reader = new ReadAhead(fh, filePos, opts.chunkSize ?? JOURNAL_READ_CHUNK)
    try {
      for (;;) {
        const c = await reader.next(scanner.needed)
        const pos = scanner.feed(c.buf, c.start, c.end, c.base, c.eof)
        reader.consumed(pos)
        state.size = c.base + c.end
        const out = scanner.take()
        const count = out.tape ? out.tape.length : out.events.length
        if (count > 0 || out.problems.length > 0) yield { ...out, file: path, bytes: pos - c.start }
        if (c.eof) return
        if (opts.stopAt !== undefined && count > 0 && (out.tape ? out.tape.time(count - 1) : eventTime(out.events[count - 1]!)) >= opts.stopAt) return
      }
    } finally {
      await reader.close()
    }
  } finally {
    await fh.close()
  }
}

/** Bytes kept free in front of each read buffer for the unconsumed tail of the previous one. */
const READ_HEADROOM = 64 * 1024

/**
 * Reads a file in chunks, one read ahead of the consumer so that reading overlaps decoding. Each chunk is
 * a fresh buffer with headroom in front, into which the previous chunk's unconsumed tail (a record that
 * straddles the two) is copied: bulk bytes are never copied, and buffers are never reused, so views into
 * them stay valid.
 */
class ReadAhead {
  private pending: Promise<{ buf: Buffer; n: number; at: number }> | null
  private tail: Buffer = Buffer.alloc(0)
  private tailStart = 0
  private tailEnd = 0
  private tailBase = 0

  constructor(private readonly fh: FileHandle, private pos: number, private readonly chunk: number) {
    this.pending = this.read()
  }

  private read(): Promise<{ buf: Buffer; n: number; at: number }> {
    const buf = Buffer.allocUnsafe(READ_HEADROOM + this.chunk)
    const at = this.pos
    this.pos += this.chunk
    return (async () => {
      let n = 0
      while (n < this.chunk) {
        const { bytesRead } = await this.fh.read(buf, READ_HEADROOM + n, this.chunk - n, at + n)
        if (bytesRead === 0) break
        n += bytesRead
      }
      return { buf, n, at }
    })()
  }

  /**
   * The next stretch to scan: the unconsumed tail of the last one followed by newly read bytes. `needed`
   * is how many bytes the scanner needs from the tail's start; reads continue until they are there or the
   * file ends.
   */
  async next(needed: number): Promise<{ buf: Buffer; start: number; end: number; base: number; eof: boolean }> {
    let buf = this.tail
    let start = this.tailStart
    let end = this.tailEnd
    let base = this.tailBase
    for (;;) {
      const r = await this.pending!
      const eof = r.n < this.chunk
      this.pending = eof ? null : this.read()
      const left = end - start
      if (left <= READ_HEADROOM) {
        buf.copy(r.buf, READ_HEADROOM - left, start, end)
        buf = r.buf
        start = READ_HEADROOM - left
        end = READ_HEADROOM + r.n
      } else {
        // A record bigger than the headroom (rare): join the tail and the new bytes.
        const joined = Buffer.allocUnsafe(left + r.n)
        buf.copy(joined, 0, start, end)
        r.buf.copy(joined, left, READ_HEADROOM, READ_HEADROOM + r.n)
        buf = joined
        start = 0
        end = left + r.n
      }
      base = r.at - left
      if (eof || end - start >= needed) {
        this.tail = buf
        this.tailStart = start
        this.tailEnd = end
        this.tailBase = base
        return { buf, start, end, base: base - start, eof }
      }
    }
  }

  /** The scanner consumed the last stretch up to `pos` (an index into its buffer). */
  consumed(pos: number): void {
    this.tailBase += pos - this.tailStart
    this.tailStart = pos
  }

  async close(): Promise<void> {
    await this.pending?.catch(() => {})
    this.pending = null
  }
}

/**
 * The first complete, checksummed event record at or after `offset`: its offset and event time, or null
 * when none follows. Reads only around the probe (64 KiB windows, and the record itself).
 */
async function eventRecordAt(fh: FileHandle, offset: number, size: number): Promise<{ offset: number; time: bigint } | null> {
  const WINDOW = 64 * 1024
  const win = Buffer.allocUnsafe(WINDOW)
  let at = Math.max(offset, FILE_HEADER_SIZE)
  // In an intact stretch a record starts within one record's length of any point: a probe that finds none
  // that far is in damage (or zeros), and says so rather than scan the rest of a file of any size.
  const stop = Math.min(size, at + RECORD_HEADER_SIZE + MAX_BODY_SIZE + WINDOW)
  while (at + RECORD_HEADER_SIZE <= stop) {
    const { bytesRead } = await fh.read(win, 0, WINDOW, at)
    if (bytesRead < RECORD_HEADER_SIZE) return null
    let i = win.indexOf(SYNC_MARKER)
    while (i >= 0 && i + RECORD_HEADER_SIZE <= bytesRead) {
      const len = win.readUInt32LE(i + 4)
      if (crc32c(win, i, i + 12) === win.readUInt32LE(i + 12) && len >= MIN_BODY_SIZE && len <= MAX_BODY_SIZE && at + i + RECORD_HEADER_SIZE + len <= size) {
        let body: Buffer
        if (i + RECORD_HEADER_SIZE + len <= bytesRead) {
          body = win.subarray(i + RECORD_HEADER_SIZE, i + RECORD_HEADER_SIZE + len)
        } else {
          body = Buffer.allocUnsafe(len)
          await fh.read(body, 0, len, at + i + RECORD_HEADER_SIZE)
        }
        if (crc32c(body) === win.readUInt32LE(i + 8) && body[0] !== RecordKind.TRUNCATION) {
          return { offset: at + i, time: body.readBigInt64LE(4) }
        }
      }
      i = win.indexOf(SYNC_MARKER, i + 1)
    }
    if (bytesRead < WINDOW) return null
    at += WINDOW - (RECORD_HEADER_SIZE - 1)
  }
  return null
}

/**
 * A byte offset in a journal file from which reading yields every record with event time at or after
 * `time`: a binary search over the file's byte range, probing the first valid record after each point.
 * Records are in append order, which is event-time order unless the replica's clock stepped back; a step
 * back of more than the time between `time` and the target the caller really needs can hide records, so
 * callers pass `time` with a margin (readJournalRange uses 60 s). Returns the file header's end when
 * nothing earlier can be skipped.
 */
export async function seekJournalTime(path: string, time: bigint): Promise<number> {
  const { fh, size } = await openRegularFile(path)
  try {
    // Not a journal file: nothing to seek in; the reader refuses it on its header.
    const header = Buffer.alloc(FILE_MAGIC.length)
    if ((await fh.read(header, 0, header.length, 0)).bytesRead < header.length || !header.equals(FILE_MAGIC)) return FILE_HEADER_SIZE
    let lo = FILE_HEADER_SIZE
    let hi = size
    while (hi - lo > 64 * 1024) {
      const mid = lo + Math.floor((hi - lo) / 2)
      const r = await eventRecordAt(fh, mid, size)
      if (r === null || r.time >= time) hi = mid
      else lo = mid
    }
    return lo
  } finally {
    await fh.close()
  }
}

/** Scans a file's checksums without decoding events: the problems, the count of records, and the file size. */
export async function scanJournalFile(path: string): Promise<{ problems: JournalProblem[]; records: number; size: number; version: number }> {
  const problems: JournalProblem[] = []
  const scanner = new JournalScanner(path, false)
  const state = { size: 0 }
  for await (const b of readWith(scanner, path, {}, state)) problems.push(...b.problems)
  return { problems, records: scanner.records, size: state.size, version: scanner.version }
}

// ---------------------------------------------------------------------------------------------------------
// The journal directory: DIR/replica=<r>/<YYYY-MM-DDTHH>.journal, one file per replica per UTC hour of event time.

export const HOUR_NS = 3_600_000_000_000n

/** The journal events sealing an hour reads: the hour, widened by the pairing window on both sides. */
export function journalRangeFor(hourStart: bigint, windowNs: bigint): { start: bigint; end: bigint } {
  return { start: hourStart - windowNs, end: hourStart + HOUR_NS + windowNs }
}

/** The start of the UTC hour holding `ns`. */
export function hourStart(ns: bigint): bigint {
  const r = ns % HOUR_NS
  return r < 0n ? ns - r - HOUR_NS : ns - r
}

/** `2026-10-03T14` for an instant in that hour. */
export function hourName(ns: bigint): string {
  return formatTime(hourStart(ns)).slice(0, 13)
}

const HOUR_FILE = /^(\d{4}-\d{2}-\d{2}T\d{2})\.journal$/

/** `2026-10-03T14` -> its start in ns, or null when not an hour name. */
export function parseHourName(name: string): bigint | null {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}$/.test(name)) return null
  try { return parseTime(`${name}:00:00.000000000Z`) } catch { return null }
}

/** The file that holds the events of `replica` in the hour holding `ns`. */
export function journalFilePath(dir: string, replica: Replica, ns: bigint): string {
  return join(dir, `replica=${replica}`, `${hourName(ns)}.journal`)
}

/** The hour files of one replica in a journal directory, in hour order. Missing directories give none. */
export async function listJournalFiles(dir: string, replica: Replica): Promise<{ hour: bigint; path: string }[]> {
  const rdir = join(dir, `replica=${replica}`)
  let names: string[]
  try {
    names = await readdir(rdir)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  const files: { hour: bigint; path: string }[] = []
  for (const name of names) {
    const m = HOUR_FILE.exec(name)
    if (!m) continue
    const hour = parseHourName(m[1]!)
    if (hour !== null) files.push({ hour, path: join(rdir, name) })
  }
  return files.sort((x, y) => (x.hour < y.hour ? -1 : x.hour > y.hour ? 1 : 0))
}

/** The replicas that have a directory in a journal directory. */
export async function listJournalReplicas(dir: string): Promise<Replica[]> {
  let names: string[]
  try {
    names = await readdir(dir)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  return REPLICAS.filter((r) => names.includes(`replica=${r}`))
}

/**
 * The journal a seal reads: one directory holding both replicas' folders, or several, one per replica host
 * (each holding its replica's folder; docs/recorder.md says how they reach the sealing host).
 */
export type JournalDirs = string | readonly string[]

/** Which directory of `dirs` holds each replica's folder; replicas with none are absent. */
export async function locateJournalReplicas(dirs: JournalDirs): Promise<Map<Replica, string>> {
  const located = new Map<Replica, string>()
  for (const dir of typeof dirs === 'string' ? [dirs] : dirs) {
    for (const replica of await listJournalReplicas(dir)) {
      const first = located.get(replica)
      // Sealing from either would sign half the truth for good.
      if (first !== undefined && first !== dir) throw new UsageError('usage.journal-replica-twice', `--journal: replica ${replica} has a folder here and in ${first}; which holds its events is unknowable: name each replica's journal once`, { location: { file: dir } })
      located.set(replica, dir)
    }
  }
  return located
}

/** A batch of events, with the problems found while reading them; what `journal-read` gives. */
export class JournalBatch {
  /** The events as read, when the batch was made from a tape: frames become objects only if `events` is read. */
  readonly tape: EventTape | undefined
  private list: JournalEvent[] | undefined

  constructor(
    events: JournalEvent[] | EventTape,
    readonly problems: JournalProblem[] = [],
    readonly bytes = 0,
  ) {
    if (events instanceof EventTape) this.tape = events
    else this.list = events
  }

  get events(): JournalEvent[] { return (this.list ??= this.tape!.events()) }
  get itemCount(): number { return this.tape ? this.tape.length : this.list!.length }
  get byteCount(): number { return this.bytes }
}

export interface JournalRangeOptions {
  /** First instant (inclusive) of event time to read; unbounded when absent. */
  start?: bigint
  /** End (exclusive) of event time to read; unbounded when absent. */
  end?: bigint
  /** Replicas to read; default every replica with a directory. */
  replicas?: readonly Replica[]
  /** Merge the replicas into one stream in event-time order (default), or give each replica's events in turn. */
  merge?: boolean
  /** Events per batch when merging (default 4096). */
  batchSize?: number
  chunkSize?: number
  /**
   * How far a replica's event times may run backwards within a file (a clock step) and still be found
   * (default 60 s). Hour files wholly inside the range are read whole; in a file that begins before
   * `start`, reading starts at a seek to `start - slack`; in a file that ends after `end`, reading stops
   * after an event at or after `end + slack`.
   */
  slackNs?: bigint
}

/** One replica's events in [start, end), file by file, as batches; problems of every file read. */
async function* replicaBatches(dir: string, replica: Replica, o: JournalRangeOptions): AsyncGenerator<JournalBatch> {
  const files = await listJournalFiles(dir, replica)
  const slack = o.slackNs ?? 60_000_000_000n
  const range = timeRange(o.start, o.end)
  for (const f of files) {
    if (o.end !== undefined && f.hour >= o.end) continue
    if (o.start !== undefined && f.hour + HOUR_NS <= o.start) continue
    const read: ReadJournalFileOptions = { tape: true, ...(o.chunkSize ? { chunkSize: o.chunkSize } : {}) }
    if (o.start !== undefined && f.hour < o.start - slack) read.startOffset = await seekJournalTime(f.path, o.start - slack)
    if (o.end !== undefined && f.hour + HOUR_NS > o.end + slack) read.stopAt = o.end + slack
    for await (const b of readJournalFile(f.path, read)) {
      let tape = b.tape!
      const outside = o.start !== undefined || o.end !== undefined ? tape.firstOutside(range) : tape.length
      if (outside < tape.length) {
        const inRange = new EventTape()
        for (let i = 0; i < outside; i++) inRange.copy(tape, i)
        for (let i = outside + 1; i < tape.length; i++) if (tape.within(i, range)) inRange.copy(tape, i)
        tape = inRange
      }
      yield new JournalBatch(tape, b.problems, b.bytes)
    }
  }
}

/**
 * Reads a journal (a directory, or one per replica) over a range of event time, as batches of events and problems.
 *
 * Merged (the default): the replicas' streams are merged by event time (ties: replica a first); within a
 * replica the file order is kept, which is event-time order unless that replica's clock stepped back.
 * Unmerged: replica a's events, then b's. Problems come with the batch being built when their file was
 * read; every problem of every file read is given, whatever the time of the records it lost.
 */
export async function* readJournalRange(dirs: JournalDirs, opts: JournalRangeOptions = {}): AsyncGenerator<JournalBatch> {
  const located = await locateJournalReplicas(dirs)
  const replicas = (opts.replicas ?? REPLICAS).filter((r) => located.has(r))
  if (opts.merge === false || replicas.length <= 1) {
    for (const r of replicas) yield* replicaBatches(located.get(r)!, r, opts)
    return
  }
  const size = opts.batchSize ?? 4096
  interface Head { it: AsyncGenerator<JournalBatch>; tape: EventTape; i: number; done: boolean }
  const heads: Head[] = replicas.map((r) => ({ it: replicaBatches(located.get(r)!, r, opts), tape: new EventTape(), i: 0, done: false }))
  let tape = new EventTape(size)
  let problems: JournalProblem[] = []
  let bytes = 0
  const refill = async (h: Head) => {
    while (!h.done && h.i >= h.tape.length) {
      const n = await h.it.next()
      if (n.done) { h.done = true; return }
      h.tape = n.value.tape!
      h.i = 0
      if (n.value.problems.length) problems.push(...n.value.problems)
      bytes += n.value.bytes
    }
  }
  try {
    for (const h of heads) await refill(h)
    for (;;) {
      let best: Head | undefined
      for (const h of heads) {
        if (h.i >= h.tape.length) continue
        if (best === undefined || h.tape.before(h.i, best.tape, best.i)) best = h
      }
      if (!best) break
      tape.copy(best.tape, best.i++)
      if (best.i >= best.tape.length) await refill(best)
      if (tape.length >= size) {
        yield new JournalBatch(tape, problems, bytes)
        tape = new EventTape(size); problems = []; bytes = 0
      }
    }
    if (tape.length || problems.length) yield new JournalBatch(tape, problems, bytes)
  } finally {
    for (const h of heads) await h.it.return(undefined)
  }
}

// ---------------------------------------------------------------------------------------------------------
// Writing

/** When appended records reach the disk: after every record (group-committed), every N ms, or when the OS decides. */
export type FsyncPolicy = 'record' | 'interval' | 'none'

export interface JournalWriterOptions {
  /** Default `interval`. */
  fsync?: FsyncPolicy
  /** For `interval`: fsync at most this long after a write (default 1000 ms). */
  fsyncIntervalMs?: number
  /** The clock for truncation markers (default the system clock). */
  now?: () => bigint
}

/** What opening a file found: a new file, or an existing one and the torn tail it truncated. */
export interface JournalOpenReport {
  path: string
  created: boolean
  /** The size of the file before any truncation. */
  sizeBefore: number
  /** Bytes of a torn tail cut off (0 when none). */
  truncatedBytes: number
  /** Problems found in the existing file (corrupt records are left in place, for the sealer to report). */
  problems: JournalProblem[]
}

const systemNow = (): bigint => BigInt(Date.now()) * 1_000_000n

interface Waiter { resolve: () => void; reject: (err: unknown) => void }

/**
 * Appends records to one journal file. Appends are queued in order; each call's promise settles when its
 * record is written (and, with fsync `record`, on disk). Records queued in one turn of the event loop go out
 * in one write, and with fsync `record` those queued while an fsync is in flight go out together after it
 * (group commit). A failed write fails the writer: later appends reject.
 * One writer per file: nothing stops two processes appending to the same file, which would interleave.
 */
export class JournalFileWriter {
  private pending: Buffer[] = []
  private waiters: Waiter[] = []
  /** The promise of the records queued since the last write began. */
  private batch: Promise<void> | null = null
  private draining: Promise<void> | null = null
  private dirty = false
  private failed: unknown = null
  private closed = false
  private timer: NodeJS.Timeout | null = null
  private syncing: Promise<void> | null = null

  private constructor(
    private readonly fh: FileHandle,
    readonly path: string,
    private size: number,
    readonly report: JournalOpenReport,
    private readonly policy: FsyncPolicy,
    intervalMs: number,
  ) {
    if (policy === 'interval') {
      this.timer = setInterval(() => { if (this.dirty && !this.syncing) void this.syncNow().catch(() => {}) }, intervalMs)
      this.timer.unref()
    }
  }

  /**
   * Opens `path` for appending, creating it (and its directory) when missing. An existing file is checked:
   * a torn tail is truncated (and fsynced) and a truncation marker appended in its place, so readers still
   * report the lost bytes; corrupt records are left where they are. A version-1 file gets a version-2
   * header. A file that is no journal, or of a later version, is refused.
   */
  static async open(path: string, opts: JournalWriterOptions = {}): Promise<JournalFileWriter> {
    const policy = opts.fsync ?? 'interval'
    const interval = opts.fsyncIntervalMs ?? 1000
    const now = opts.now ?? systemNow
    await mkdirDurable(dirname(path))
    let fh: FileHandle
    try {
      fh = await open(path, 'wx')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      return JournalFileWriter.reopen(path, policy, interval, now)
    }
    try {
      await writeAll(fh, fileHeader(), 0)
      await fh.datasync()
      await fsyncDir(dirname(path))
    } catch (err) {
      await fh.close().catch(() => {})
      throw err
    }
    const report: JournalOpenReport = { path, created: true, sizeBefore: 0, truncatedBytes: 0, problems: [] }
    return new JournalFileWriter(fh, path, FILE_HEADER_SIZE, report, policy, interval)
  }

  private static async reopen(path: string, policy: FsyncPolicy, interval: number, now: () => bigint): Promise<JournalFileWriter> {
    const scan = await scanJournalFile(path)
    const fh = await open(path, 'r+')
    try {
      let size = scan.size
      let truncated = 0
      const last = scan.problems[scan.problems.length - 1]
      const tornTail = last && last.kind === 'torn' && last.reason !== 'truncated-on-reopen' && last.offset + last.bytes === scan.size ? last : undefined
      if (tornTail) {
        // The marker is written over the torn bytes before the file is cut after it: whatever reaches the
        // disk before a crash here, a reader still finds the loss (the old tail, the marker followed by
        // the rest of it, or the marker alone).
        truncated = tornTail.bytes
        const marker = encodeTruncationRecord(now(), tornTail.offset, tornTail.bytes)
        const at = tornTail.reason === 'partial-file-header' ? 0 : tornTail.offset
        const bytes = at === 0 ? Buffer.concat([fileHeader(), marker]) : marker
        await writeAll(fh, bytes, at)
        size = at + bytes.length
        await fh.truncate(size)
        await fh.datasync()
      } else if (scan.size === 0) {
        await writeAll(fh, fileHeader(), 0)
        size = FILE_HEADER_SIZE
        await fh.datasync()
      } else if (scan.version < JOURNAL_VERSION) {
        // Every record of an older version is a record of this one: the header is upgraded before the
        // first record only this version has is appended.
        await writeAll(fh, fileHeader(), 0)
        await fh.datasync()
      }
      const report: JournalOpenReport = { path, created: false, sizeBefore: scan.size, truncatedBytes: truncated, problems: scan.problems }
      return new JournalFileWriter(fh, path, size, report, policy, interval)
    } catch (err) {
      await fh.close().catch(() => {})
      throw err
    }
  }

  /** Bytes in the file, counting what is queued. */
  get bytesWritten(): number { return this.size }

  /** Encodes and queues one event. Encoding errors throw at once; nothing is queued then. */
  append(event: JournalEvent): Promise<void> {
    return this.appendRecord(encodeJournalRecord(event))
  }

  /** Queues an encoded record (from {@link encodeJournalRecord}). */
  appendRecord(record: Buffer): Promise<void> {
    if (this.closed) return Promise.reject(new PipeError('journal.closed', 'the journal writer is closed', { location: { file: this.path } }))
    if (this.failed) return Promise.reject(this.failed)
    this.pending.push(record)
    // The records of a batch settle together: one promise for the batch, not one per record.
    if (this.batch === null) {
      let w!: Waiter
      const p = new Promise<void>((resolve, reject) => { w = { resolve, reject } })
      this.batch = p
      this.waiters.push(w)
    }
    const batch = this.batch
    // Started once the appends made in this turn are queued: they go out in the first write, not after it.
    if (!this.draining) this.draining = Promise.resolve().then(() => this.drain())
    return batch
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const records = this.pending
        const waiters = this.waiters
        this.pending = []
        this.waiters = []
        this.batch = null
        try {
          if (this.failed) throw this.failed
          let total = 0
          for (const r of records) total += r.length
          // Written from this thread, in the turn the records were queued: a write into the page cache takes
          // microseconds, where a round trip through the threadpool waits twice for a core. On a loaded host
          // that wait was most of a frame's receive-to-write time (bench:record: p99 1.6-4 ms, now 0.4-0.5 ms).
          // The cost: a disk that stalls a write now stalls the event loop too, where the queue would have grown
          // to the recorder's backlog limit first; in both, frames then wait in the sockets.
          const bytesWritten = writevSync(this.fh.fd, records, this.size)
          if (bytesWritten < total) await writeAll(this.fh, Buffer.concat(records).subarray(bytesWritten), this.size + bytesWritten)
          this.size += total
          if (this.policy === 'record') await this.fh.datasync()
          else this.dirty = true
          for (const w of waiters) w.resolve()
        } catch (err) {
          // A batch is all or nothing: complete records of a failed write are cut off again, so that every
          // rejected append is absent from the file (what a recorder counts as lost is exactly what is).
          await this.fh.truncate(this.size).catch(() => {})
          this.failed ??= err
          for (const w of waiters) w.reject(err)
        }
      }
    } finally {
      this.draining = null
    }
  }

  private async syncNow(): Promise<void> {
    while (this.syncing) await this.syncing
    this.dirty = false
    this.syncing = this.fh.datasync().finally(() => { this.syncing = null })
    await this.syncing
  }

  /** Waits for every queued record to be written, then fsyncs. */
  async flush(): Promise<void> {
    while (this.draining) await this.draining
    if (this.failed) throw this.failed
    await this.syncNow()
  }

  /** Flushes (unless the writer failed) and closes the file. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    if (this.timer) clearInterval(this.timer)
    try {
      while (this.draining) await this.draining
      if (!this.failed) await this.syncNow()
    } finally {
      await this.fh.close()
    }
  }
}

async function writeAll(fh: FileHandle, data: Uint8Array, position: number): Promise<void> {
  let off = 0
  while (off < data.length) {
    const { bytesWritten } = await fh.write(data, off, data.length - off, position + off)
    off += bytesWritten
  }
}

/** mkdir -p, then fsync each directory that gained an entry, so new directories survive a crash. */
async function mkdirDurable(dir: string): Promise<void> {
  const first = await mkdir(dir, { recursive: true })
  if (first === undefined) return
  let d = dir
  const chain: string[] = []
  while (d.length >= first.length) { chain.push(dirname(d)); if (d === first) break; d = dirname(d) }
  for (const p of chain) await fsyncDir(p)
}

/**
 * Each replica's state as of its latest event, so that every hour file can begin by restating it: the
 * recorder's latest `recorder-start` (its heartbeat promise), then the `open` and `subscribed` events of
 * each open connection, or, when none is subscribed, the last `closed` event, each copied with the hour's
 * start as its time. A sealer then learns the state an hour starts in from that hour's file alone
 * (docs/journal.md, "State at the top of each file"). A `recorder-start` that is not a restatement begins
 * a new process: the connections of the one before are gone and are not restated again.
 */
export function isRestated(e: JournalEvent): boolean {
  return (e.kind === 'open' || e.kind === 'subscribed' || e.kind === 'closed' || e.kind === 'recorder-start') && e.restated === true
}

interface ReplicaState {
  hour: bigint | null
  start?: JournalEvent
  open: Map<string, { open?: JournalEvent; subscribed?: JournalEvent }>
  lastClosed?: JournalEvent
}

export class ConnectionStates {
  private readonly replicas = new Map<Replica, ReplicaState>()

  /** The events to write, before `e`, at the top of a new hour file of its replica (none within an hour). */
  restate(e: JournalEvent): JournalEvent[] {
    const hour = hourStart(eventTime(e))
    let state = this.replicas.get(e.replica)
    if (!state) {
      state = { hour, open: new Map() }
      this.replicas.set(e.replica, state)
    }
    if (state.hour === null || hour <= state.hour) {
      state.hour ??= hour
      return []
    }
    state.hour = hour
    // A new process's first event needs no state from the process before it.
    if (e.kind === 'recorder-start') return []
    const out: JournalEvent[] = []
    if (state.start) out.push({ ...state.start, time: hour, restated: true } as JournalEvent)
    let subscribed = false
    for (const c of state.open.values()) {
      if (c.open) out.push({ ...c.open, time: hour, restated: true } as JournalEvent)
      if (c.subscribed) { out.push({ ...c.subscribed, time: hour, restated: true } as JournalEvent); subscribed = true }
    }
    if (!subscribed && state.lastClosed) out.push({ ...state.lastClosed, time: hour, restated: true } as JournalEvent)
    return out
  }

  /** Takes in an event after it was written. */
  note(e: JournalEvent): void {
    const state = this.replicas.get(e.replica)
    if (!state) return
    if (e.kind === 'recorder-start') {
      state.start = e
      state.open.clear()
      delete state.lastClosed
    } else if (e.kind === 'open') state.open.set(e.connection, { open: e })
    else if (e.kind === 'subscribed') state.open.set(e.connection, { ...state.open.get(e.connection), subscribed: e })
    else if (e.kind === 'closed') { state.open.delete(e.connection); state.lastClosed = e }
  }
}

export interface JournalDirectoryOptions extends JournalWriterOptions {
  maxOpenFiles?: number
  /**
   * What a failed write does. `fail` (the default): the writer fails and later appends reject. `record-loss`
   * (a recorder that must keep running): appends keep resolving, the events that could not be written are
   * counted, writing is tried again at most every `retryMs` (default 1000), and once a write succeeds a
   * `destination-unavailable` record states the lost stretch and count before the next event.
   */
  onWriteError?: 'fail' | 'record-loss'
  retryMs?: number
  /**
   * Event time per real time of `now` (default 1): a simulated clock running faster than real time (tests,
   * the demo) keeps its heartbeats at the interval they promise in event time.
   */
  timeScale?: number
}

/** A stretch of events not written: from, to (event times) and how many. */
interface Loss { from: bigint; to: bigint; events: number }

/** One replica's liveness: it journals at least one record every interval while it runs. */
interface Liveness {
  intervalNs: bigint
  timer: NodeJS.Timeout
  lastAppend: bigint
}

/**
 * Appends events to a journal directory, each to the file of its replica and the UTC hour of its event time
 * (`receiveTime` for frames, `time` otherwise). Keeps up to `maxOpenFiles` files open (least recently used
 * closed first); reopening a file recovers a torn tail (see {@link JournalFileWriter.open}). A recorder calls
 * {@link startReplica} first: it journals the `recorder-start` and then a heartbeat whenever the replica has
 * journaled nothing for half an interval, and at each hour's start, so that every hour has its file with the
 * state restated at its top even when the venue is silent.
 */
export class JournalWriter {
  private readonly files = new Map<string, Promise<JournalFileWriter>>()
  /** Files being closed after eviction: a reopen of the same file waits for its close. */
  private readonly closing = new Map<string, Promise<void>>()
  /** What opening each file found, in the order they were opened. */
  readonly reports: JournalOpenReport[] = []
  private readonly maxOpen: number
  private readonly now: () => bigint
  private readonly liveness = new Map<Replica, Liveness>()
  /** record-loss: what could not be written, by replica, and when writing may be tried again. */
  private readonly losses = new Map<Replica, Loss & { message: string; retryAt: number }>()
  /** Open files, by path: an append goes straight to its writer. */
  private readonly ready = new Map<string, JournalFileWriter>()
  private lastPath = ''
  /** record-loss: the events of each write under way with the loss each states, to count if the write fails. */
  private readonly writes = new Map<Promise<void>, { events: [JournalEvent, Loss | undefined][]; settled: Promise<void> }>()

  constructor(readonly dir: string, private readonly opts: JournalDirectoryOptions = {}) {
    this.maxOpen = Math.max(1, opts.maxOpenFiles ?? 4)
    this.now = opts.now ?? systemNow
  }

  private readonly states = new ConnectionStates()
  /** Each replica's latest hour and its file's path: most events go to the file of the one before them. */
  private readonly paths = new Map<Replica, { hour: bigint; path: string }>()

  /**
   * Journals the start of a recorder process for `replica` and keeps its heartbeat going until
   * {@link close}. Every connection the replica had before (in an earlier process) counts as gone.
   */
  startReplica(replica: Replica, heartbeatIntervalMs = 1000): Promise<void> {
    if (!(heartbeatIntervalMs >= 2)) throw new RangeError('heartbeatIntervalMs must be at least 2')
    const intervalNs = BigInt(Math.round(heartbeatIntervalMs * 1e6))
    const previous = this.liveness.get(replica)
    if (previous) clearInterval(previous.timer)
    const started = this.append({ kind: 'recorder-start', replica, time: this.now(), heartbeatIntervalNs: intervalNs })
    const timer = setInterval(() => this.beat(replica), Math.max(1, Math.floor(heartbeatIntervalMs / 4 / (this.opts.timeScale ?? 1))))
    timer.unref()
    this.liveness.set(replica, { intervalNs, timer, lastAppend: this.now() })
    return started
  }

  private beat(replica: Replica): void {
    const l = this.liveness.get(replica)
    if (!l) return
    const now = this.now()
    if (now - l.lastAppend >= l.intervalNs / 2n || hourStart(now) > hourStart(l.lastAppend)) {
      void this.append({ kind: 'heartbeat', replica, time: now }).catch(() => {})
    }
  }

  /** Encodes (throwing on a bad event) and appends one event; settles like {@link JournalFileWriter.append}. */
  append(event: JournalEvent): Promise<void> {
    // A restated event read from another journal is state this writer restates itself.
    if (isRestated(event)) return Promise.resolve()
    const record = encodeJournalRecord(event)
    const l = this.liveness.get(event.replica)
    if (l) l.lastAppend = this.now()
    const loss = this.losses.get(event.replica)
    if (loss && Date.now() < loss.retryAt) {
      this.lose(event, null)
      return Promise.resolve()
    }
    const restated = this.states.restate(event)
    const records = [...restated.map(encodeJournalRecord), record]
    if (loss) {
      // Said before the event that shows writing works again, at that event's time.
      records.unshift(encodeJournalRecord({ kind: 'destination-unavailable', replica: event.replica, time: eventTime(event), from: loss.from, to: loss.to + 1n, lostEvents: loss.events, message: loss.message }))
      this.losses.delete(event.replica)
    }
    this.states.note(event)
    const time = eventTime(event)
    const hour = hourStart(time)
    let latest = this.paths.get(event.replica)
    if (latest === undefined || latest.hour !== hour) this.paths.set(event.replica, (latest = { hour, path: journalFilePath(this.dir, event.replica, time) }))
    const path = latest.path
    const bytes = records.length === 1 ? record : Buffer.concat(records)
    // An open file takes the record now; the write it joins is shared by the records of its turn, and so
    // is the promise returned, so that a frame costs no promise of its own.
    const open = this.ready.get(path)
    let written: Promise<void>
    if (open !== undefined) {
      if (path !== this.lastPath) this.touch(path)
      written = open.appendRecord(bytes)
    } else {
      written = this.file(path).then((w) => w.appendRecord(bytes))
    }
    this.lastPath = path
    if (this.opts.onWriteError !== 'record-loss') return written
    let write = this.writes.get(written)
    if (write === undefined) {
      const events: [JournalEvent, Loss | undefined][] = []
      const settled = written.then(() => { this.writes.delete(written) }, (err: unknown) => {
        this.writes.delete(written)
        // The file writer is failed for good: the next attempt reopens the file (and recovers a torn tail).
        const failed = this.files.get(path)
        this.files.delete(path)
        this.ready.delete(path)
        void failed?.then((w) => w.close()).catch(() => {})
        for (const [e, unwritten] of events) this.lose(e, (err as Error).message, unwritten)
      })
      this.writes.set(written, (write = { events, settled }))
    }
    write.events.push([event, loss])
    return write.settled
  }

  /** Marks `path` the most recently used file. */
  private touch(path: string): void {
    const file = this.files.get(path)
    if (file === undefined) return
    this.files.delete(path)
    this.files.set(path, file)
  }

  /**
   * Counts an event that was not written: `message` is the error of a write that was tried (then writing
   * waits `retryMs` before it is tried again), null when it was not tried; `unwritten` a loss whose record
   * went down with this write.
   */
  private lose(event: JournalEvent, message: string | null, unwritten?: Loss): void {
    const t = eventTime(event)
    let loss = this.losses.get(event.replica)
    if (!loss) this.losses.set(event.replica, (loss = { from: t, to: t, events: 0, message: message ?? '', retryAt: 0 }))
    for (const [from, to, events] of [[t, t, 1] as const, ...(unwritten ? [[unwritten.from, unwritten.to, unwritten.events] as const] : [])]) {
      if (from < loss.from) loss.from = from
      if (to > loss.to) loss.to = to
      loss.events += events
    }
    if (message !== null) {
      loss.message = message
      loss.retryAt = Date.now() + (this.opts.retryMs ?? 1000)
    }
  }

  /** Whether writes are failing now (record-loss): events are being counted as lost until writing works again. */
  get losing(): boolean {
    return this.losses.size > 0
  }

  private file(path: string): Promise<JournalFileWriter> {
    let file = this.files.get(path)
    if (file) {
      this.files.delete(path) // re-inserted below: most recently used last
    } else {
      this.evict()
      const prior = this.closing.get(path) ?? Promise.resolve()
      const opened: Promise<JournalFileWriter> = prior.then(() => JournalFileWriter.open(path, this.opts)).then((w) => { this.reports.push(w.report); return w })
      // Ready before the appends waiting on `opened` run (reactions run in order): no later append overtakes them.
      opened.then((w) => { if (this.files.get(path) === opened) this.ready.set(path, w) }, () => { if (this.files.get(path) === opened) this.files.delete(path) })
      file = opened
    }
    this.files.set(path, file)
    return file
  }

  private evict(): void {
    while (this.files.size >= this.maxOpen) {
      const [oldest, w] = this.files.entries().next().value as [string, Promise<JournalFileWriter>]
      this.files.delete(oldest)
      this.ready.delete(oldest)
      // Appends already chained on `w` run before this close (promise reactions run in order).
      const closed: Promise<void> = w.then((f) => f.close()).catch(() => {}).then(() => {
        if (this.closing.get(oldest) === closed) this.closing.delete(oldest)
      })
      this.closing.set(oldest, closed)
    }
  }

  /** Waits for every queued record of the open files to be written and fsynced. */
  async flush(): Promise<void> {
    for (const f of [...this.files.values()]) await (await f).flush()
  }

  /** Stops the heartbeats and closes every file. */
  async close(): Promise<void> {
    for (const l of this.liveness.values()) clearInterval(l.timer)
    this.liveness.clear()
    const errors: unknown[] = []
    for (const f of [...this.files.values()]) {
      try { await (await f).close() } catch (err) { errors.push(err) }
    }
    this.files.clear()
    this.ready.clear()
    await Promise.all([...this.closing.values()])
    if (errors.length) throw errors[0]
  }
}

/**
 * Builds new journal files all or nothing: events go to temporary files beside their final names
 * (`.<hour>.journal.<random>.tmp`), and `commit` fsyncs them and links each to its final name, refusing to
 * replace an existing file (`journal.exists`). `abort`, or a failed commit, removes every temporary file,
 * every final name it made, and the directories it created.
 */
export class JournalBuilder {
  private readonly files = new Map<string, { temp: string; writer: Promise<JournalFileWriter> }>()
  private readonly createdDirs: string[] = []
  events = 0

  constructor(readonly dir: string) {}

  private readonly states = new ConnectionStates()

  async append(event: JournalEvent): Promise<void> {
    if (isRestated(event)) return
    const restated = this.states.restate(event)
    const record = restated.length === 0 ? encodeJournalRecord(event) : Buffer.concat([...restated, event].map(encodeJournalRecord))
    this.states.note(event)
    const final = journalFilePath(this.dir, event.replica, eventTime(event))
    let f = this.files.get(final)
    if (!f) {
      const temp = join(dirname(final), `.${final.slice(dirname(final).length + 1)}.${randomBytes(6).toString('hex')}.tmp`)
      f = { temp, writer: this.openTemp(final, temp) }
      this.files.set(final, f)
    }
    await (await f.writer).appendRecord(record)
    this.events++
  }

  private async openTemp(final: string, temp: string): Promise<JournalFileWriter> {
    const first = await mkdir(dirname(final), { recursive: true })
    if (first !== undefined) {
      for (let d = dirname(final); ; d = dirname(d)) { this.createdDirs.push(d); if (d === first || d === dirname(d)) break }
    }
    if (await exists(final)) throw new PipeError('journal.exists', 'a journal file for this replica and hour already exists; import does not replace or extend it', { exitCode: 2, location: { file: final } })
    return JournalFileWriter.open(temp, { fsync: 'none' })
  }

  /** The final paths of the files being built. */
  get paths(): string[] { return [...this.files.keys()] }

  async commit(): Promise<string[]> {
    const linked: string[] = []
    try {
      for (const f of this.files.values()) await (await f.writer).close()
      for (const [final, f] of this.files) {
        try {
          await link(f.temp, final)
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code
          if (code === 'EEXIST') throw new PipeError('journal.exists', 'a journal file for this replica and hour already exists; import does not replace or extend it', { exitCode: 2, location: { file: final } })
          if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EXDEV') throw err
          if (await exists(final)) throw new PipeError('journal.exists', 'a journal file for this replica and hour already exists', { exitCode: 2, location: { file: final } })
          await rename(f.temp, final)
        }
        linked.push(final)
      }
      for (const f of this.files.values()) await unlink(f.temp).catch(() => {})
      const dirs = new Set([...this.files.keys()].map((p) => dirname(p)))
      for (const d of dirs) await fsyncDir(d)
      for (const d of new Set(this.createdDirs.map((d) => dirname(d)))) await fsyncDir(d).catch(() => {})
      return linked
    } catch (err) {
      for (const p of linked) await unlink(p).catch(() => {})
      await this.abort()
      throw err
    }
  }

  async abort(): Promise<void> {
    for (const f of this.files.values()) {
      await f.writer.then((w) => w.close(), () => {}).catch(() => {})
      await unlink(f.temp).catch(() => {})
    }
    this.files.clear()
    // Deepest first, so that a parent is empty when its turn comes.
    for (const d of [...new Set(this.createdDirs)].sort((x, y) => y.length - x.length)) await rmdir(d).catch(() => {})
  }
}

async function exists(path: string): Promise<boolean> {
  try { await stat(path); return true } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw err
  }
}

// ---------------------------------------------------------------------------------------------------------
// The JSONL form (docs/journal.md, "JSONL form"): one JSON object per line, snake_case fields, times in the
// record format's nine-digit RFC 3339 form, payload as text or base64.

/** A JSONL event that does not fit the form; `field` is the JSON path of the bad member. */
export class JournalJsonError extends Error {
  constructor(readonly field: string, message: string) {
    super(message)
    this.name = 'JournalJsonError'
  }
}

const FIELDS: Record<JournalEvent['kind'], { required: readonly string[]; optional: readonly string[] }> = {
  'frame': { required: ['kind', 'replica', 'connection', 'receive_time', 'payload', 'payload_encoding'], optional: ['clock_offset', 'clock_error_bound'] },
  'connecting': { required: ['kind', 'replica', 'connection', 'time'], optional: [] },
  'open': { required: ['kind', 'replica', 'connection', 'time'], optional: ['restated'] },
  'subscribed': { required: ['kind', 'replica', 'connection', 'time', 'instruments'], optional: ['restated'] },
  'closed': { required: ['kind', 'replica', 'connection', 'time'], optional: ['close_code', 'reason', 'restated'] },
  'error': { required: ['kind', 'replica', 'connection', 'time', 'message'], optional: [] },
  'sequence-break': { required: ['kind', 'replica', 'connection', 'time', 'instrument', 'after_id', 'before_id'], optional: [] },
  'checksum-mismatch': { required: ['kind', 'replica', 'connection', 'time', 'instrument', 'expected', 'computed'], optional: [] },
  'heartbeat': { required: ['kind', 'replica', 'time'], optional: [] },
  'recorder-start': { required: ['kind', 'replica', 'time', 'heartbeat_interval_ns'], optional: ['restated'] },
  'destination-unavailable': { required: ['kind', 'replica', 'time', 'from', 'to', 'lost_events', 'message'], optional: [] },
}

const utf8Strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * Converts one parsed JSONL object to an event. Throws {@link JournalJsonError} naming the first bad field:
 * unknown or missing members, wrong types, times not in the nine-digit UTC form, integers that are not safe
 * integers, strict base64, and the rules of the binary form (clock fields together, bound not negative).
 */
export function eventFromJson(obj: unknown): JournalEvent {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw new JournalJsonError('(line)', 'expected a JSON object')
  const o = obj as Record<string, unknown>
  const kind = o.kind
  if (kind === undefined) throw new JournalJsonError('kind', 'is missing')
  if (typeof kind !== 'string' || !Object.hasOwn(FIELDS, kind)) throw new JournalJsonError('kind', `must be one of ${Object.keys(FIELDS).join(', ')}`)
  const spec = FIELDS[kind as JournalEvent['kind']]
  for (const k of Object.keys(o)) if (!spec.required.includes(k) && !spec.optional.includes(k)) throw new JournalJsonError(k, `is not a field of "${kind}" events`)
  for (const k of spec.required) if (o[k] === undefined) throw new JournalJsonError(k, 'is missing')
  const str = (k: string): string => {
    const v = o[k]
    if (typeof v !== 'string') throw new JournalJsonError(k, 'must be a string')
    if (!v.isWellFormed()) throw new JournalJsonError(k, 'has a lone surrogate')
    return v
  }
  const time = (k: string): bigint => {
    const v = str(k)
    try { return parseTime(v) } catch (err) { throw new JournalJsonError(k, (err as Error).message) }
  }
  const int = (k: string): bigint => {
    const v = o[k]
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new JournalJsonError(k, 'must be an integer within ±(2^53 − 1)')
    return BigInt(v)
  }
  const replica = str('replica')
  if (replica !== 'a' && replica !== 'b') throw new JournalJsonError('replica', 'must be "a" or "b"')
  switch (kind) {
    case 'heartbeat': return { kind: 'heartbeat', replica, time: time('time') }
    case 'recorder-start': {
      const heartbeatIntervalNs = int('heartbeat_interval_ns')
      if (heartbeatIntervalNs <= 0n) throw new JournalJsonError('heartbeat_interval_ns', 'must be positive')
      return { kind: 'recorder-start', replica, time: time('time'), heartbeatIntervalNs, ...restatedFromJson(o) }
    }
    case 'destination-unavailable': {
      const from = time('from')
      const to = time('to')
      if (to <= from) throw new JournalJsonError('to', 'must be after from')
      const lost = int('lost_events')
      if (lost < 0n) throw new JournalJsonError('lost_events', 'must not be negative')
      return { kind: 'destination-unavailable', replica, time: time('time'), from, to, lostEvents: Number(lost), message: str('message') }
    }
  }
  const connection = str('connection')
  switch (kind as Exclude<JournalEvent['kind'], 'heartbeat' | 'recorder-start' | 'destination-unavailable'>) {
    case 'frame': {
      const receiveTime = time('receive_time')
      const enc = str('payload_encoding')
      if (enc !== 'text' && enc !== 'base64') throw new JournalJsonError('payload_encoding', 'must be "text" or "base64"')
      const text = str('payload')
      let payload: Buffer
      if (enc === 'text') {
        payload = Buffer.from(text, 'utf8')
      } else {
        const nonAscii = text.search(/[^\x00-\x7f]/)
        const ascii = Buffer.from(text, 'latin1')
        const bad = nonAscii >= 0 ? nonAscii : checkBase64(ascii, 0, ascii.length)
        if (bad !== -1) throw new JournalJsonError('payload', `is not strict base64 (RFC 4648, padded): bad at character ${bad}`)
        payload = Buffer.from(text, 'base64')
      }
      if (payload.length > MAX_PAYLOAD_SIZE) throw new JournalJsonError('payload', `is ${payload.length} bytes, over the cap of ${MAX_PAYLOAD_SIZE}`)
      const hasOffset = o.clock_offset !== undefined, hasBound = o.clock_error_bound !== undefined
      if (hasOffset !== hasBound) throw new JournalJsonError(hasOffset ? 'clock_error_bound' : 'clock_offset', 'is missing: clock_offset and clock_error_bound are both present or both absent')
      const e: JournalEvent = { kind: 'frame', replica, connection, receiveTime, payload, binary: enc === 'base64' }
      if (hasOffset) {
        e.clockOffset = int('clock_offset')
        e.clockErrorBound = int('clock_error_bound')
        if (e.clockErrorBound < 0n) throw new JournalJsonError('clock_error_bound', 'must not be negative')
      }
      return e
    }
    case 'connecting': return { kind: 'connecting', replica, connection, time: time('time') }
    case 'open': return { kind: 'open', replica, connection, time: time('time'), ...restatedFromJson(o) }
    case 'subscribed': {
      const t = time('time')
      const list = o.instruments
      if (!Array.isArray(list)) throw new JournalJsonError('instruments', 'must be an array of strings')
      const instruments = list.map((v, i) => {
        if (typeof v !== 'string') throw new JournalJsonError(`instruments[${i}]`, 'must be a string')
        if (!v.isWellFormed()) throw new JournalJsonError(`instruments[${i}]`, 'has a lone surrogate')
        return v
      })
      return { kind: 'subscribed', replica, connection, time: t, instruments, ...restatedFromJson(o) }
    }
    case 'closed': {
      const e: JournalEvent = { kind: 'closed', replica, connection, time: time('time') }
      if (o.close_code !== undefined) {
        const c = o.close_code
        if (typeof c !== 'number' || !Number.isInteger(c) || c < 0 || c > 65535) throw new JournalJsonError('close_code', 'must be an integer 0..65535')
        e.closeCode = c
      }
      if (o.reason !== undefined) e.reason = str('reason')
      return { ...e, ...restatedFromJson(o) }
    }
    case 'error': return { kind: 'error', replica, connection, time: time('time'), message: str('message') }
    case 'sequence-break':
      return { kind: 'sequence-break', replica, connection, time: time('time'), instrument: str('instrument'), afterId: str('after_id'), beforeId: str('before_id') }
    case 'checksum-mismatch':
      return { kind: 'checksum-mismatch', replica, connection, time: time('time'), instrument: str('instrument'), expected: str('expected'), computed: str('computed') }
  }
}

function restatedFromJson(o: Record<string, unknown>): { restated?: true } {
  if (o.restated === undefined) return {}
  if (o.restated !== true) throw new JournalJsonError('restated', 'must be true when present')
  return { restated: true }
}

function safeInt(v: bigint, field: string): number {
  if (v < -(2n ** 53n - 1n) || v > 2n ** 53n - 1n) throw new JournalJsonError(field, 'is outside ±(2^53 − 1) and has no JSONL form')
  return Number(v)
}

/** The JSONL object of an event, members in sorted order (so `JSON.stringify` of it is RFC 8785 canonical). */
export function eventToJson(e: JournalEvent): Record<string, unknown> {
  const o: Record<string, unknown> = { kind: e.kind, replica: e.replica, ...('connection' in e ? { connection: e.connection } : {}) }
  if (isRestated(e)) o.restated = true
  switch (e.kind) {
    case 'heartbeat':
      o.time = formatTime(e.time)
      break
    case 'recorder-start':
      o.time = formatTime(e.time); o.heartbeat_interval_ns = safeInt(e.heartbeatIntervalNs, 'heartbeat_interval_ns')
      break
    case 'destination-unavailable':
      o.time = formatTime(e.time); o.from = formatTime(e.from); o.to = formatTime(e.to); o.lost_events = e.lostEvents; o.message = e.message
      break
    case 'frame': {
      o.receive_time = formatTime(e.receiveTime)
      if (e.clockOffset !== undefined) {
        o.clock_offset = safeInt(e.clockOffset, 'clock_offset')
        o.clock_error_bound = safeInt(e.clockErrorBound!, 'clock_error_bound')
      }
      if (e.binary) {
        o.payload = Buffer.from(e.payload.buffer, e.payload.byteOffset, e.payload.byteLength).toString('base64')
        o.payload_encoding = 'base64'
      } else {
        try {
          o.payload = utf8Strict.decode(e.payload)
        } catch {
          throw new JournalJsonError('payload', 'a text frame whose bytes are not UTF-8 has no JSONL form')
        }
        o.payload_encoding = 'text'
      }
      break
    }
    case 'connecting': case 'open':
      o.time = formatTime(e.time)
      break
    case 'subscribed':
      o.time = formatTime(e.time)
      o.instruments = [...e.instruments]
      break
    case 'closed':
      o.time = formatTime(e.time)
      if (e.closeCode !== undefined) o.close_code = e.closeCode
      if (e.reason !== undefined) o.reason = e.reason
      break
    case 'error':
      o.time = formatTime(e.time); o.message = e.message
      break
    case 'sequence-break':
      o.time = formatTime(e.time); o.instrument = e.instrument; o.after_id = e.afterId; o.before_id = e.beforeId
      break
    case 'checksum-mismatch':
      o.time = formatTime(e.time); o.instrument = e.instrument; o.expected = e.expected; o.computed = e.computed
      break
  }
  return Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]))
}

/** One JSONL line (with its newline) for an event. */
export function eventToJsonLine(e: JournalEvent): string {
  return JSON.stringify(eventToJson(e)) + '\n'
}

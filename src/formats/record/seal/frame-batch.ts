/**
 * Final frames packed into one buffer, to move from the thread that pairs them to the thread that
 * classifies them: one buffer a batch instead of a structured clone of a million small objects. A frame
 * of the hour comes with the tail of its raw-file line (raw-writer.ts LineTailWriter), written here where
 * its receipts are at hand, so the classifying thread writes only the line's start.
 *
 * A frame: u32 payload length, u32 tail length, u8 flags (1 binary, 2 in the hour), i64 frame time, then
 * the payload bytes and the tail's (none for a frame outside the hour).
 */
import { BufferPool } from '../../../core/buffer-pool.js'
import type { FramePairing } from '../merge.js'
import { LineTailWriter } from './raw-writer.js'

export interface FrameBatch {
  bytes: Uint8Array
  frames: number
}

/** One frame of a batch as the reader hands it out; views into the batch, valid during the call. */
export interface PackedFrame {
  payload: Uint8Array
  binary: boolean
  frameTime: bigint
  /** The raw-file line's tail (empty outside the hour). */
  tail: Uint8Array
}

const BINARY = 1
const IN_HOUR = 2
const HEADER_BYTES = 17
const BATCH_BYTES = 1 << 20
/** Batch buffers kept for reuse: as many as can be in flight, and a few. */
const SPARE_BATCHES = 8
/** What the writer holds between a batch handed over and the next frame: any frame outgrows it. */
const EMPTY = new Uint8Array(0)

export class FrameBatchWriter {
  private buf: Uint8Array = EMPTY
  private view: DataView = new DataView(EMPTY.buffer)
  private pos = 0
  private frames = 0
  private readonly tails = new LineTailWriter()
  private readonly pool = new BufferPool(BATCH_BYTES, SPARE_BATCHES)

  constructor(private readonly onBatch: (batch: FrameBatch) => void) {}

  /** Packs the final frame in `slot` of `pairing` (see FramePairing). */
  add(pairing: FramePairing, slot: number, inHour: boolean): void {
    const count = pairing.receiptCount(slot)
    const length = pairing.payloadLength(slot)
    const need = HEADER_BYTES + length + (inHour ? LineTailWriter.maxBytes(length, pairing, 2 * slot, count) : 0)
    if (this.pos + need > this.buf.length) {
      this.end()
      // A frame larger than a batch gets a buffer of its own; the pool keeps only batch-sized ones.
      this.use(new Uint8Array(need > BATCH_BYTES ? new ArrayBuffer(need) : this.pool.take()))
    }
    const v = this.view
    const p = this.pos
    const binary = pairing.binary(slot)
    v.setUint32(p, length, true)
    v.setUint8(p + 8, (binary ? BINARY : 0) | (inHour ? IN_HOUR : 0))
    const timed = pairing.frameTimeReceipt(slot)
    v.setUint32(p + 9, pairing.timeLo(timed), true)
    v.setInt32(p + 13, pairing.timeHi(timed), true)
    const payload = pairing.payloadBuffer(slot)
    const start = pairing.payloadStart(slot)
    const tailAt = p + HEADER_BYTES + length
    payload.copy(this.buf, p + HEADER_BYTES, start, start + length)
    const end = inHour ? this.tails.write(this.buf, tailAt, payload, start, length, binary, pairing, 2 * slot, count) : tailAt
    v.setUint32(p + 4, end - tailAt, true)
    this.pos = end
    this.frames++
  }

  /** Hands over what is buffered, if anything; the buffer then belongs to the receiver. */
  end(): void {
    if (this.frames === 0) return
    this.onBatch({ bytes: this.buf.subarray(0, this.pos), frames: this.frames })
    // The buffer is the receiver's now: never write into it again (an empty one until the next frame).
    this.use(EMPTY)
    this.frames = 0
  }

  /** Takes back a batch's buffer that the receiver is done with, to fill again. */
  reuse(buffer: ArrayBuffer): void {
    this.pool.give(buffer)
  }

  private use(buf: Uint8Array): void {
    this.buf = buf
    this.view = new DataView(buf.buffer)
    this.pos = 0
  }
}

/** Calls `each` with every frame of the batch in order (one PackedFrame, refilled for each). */
export function readFrameBatch(batch: FrameBatch, each: (frame: PackedFrame, inHour: boolean) => void): void {
  const b = batch.bytes
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength)
  const frame: PackedFrame = { payload: b, binary: false, frameTime: 0n, tail: b }
  let p = 0
  for (let n = 0; n < batch.frames; n++) {
    const length = v.getUint32(p, true)
    const tail = v.getUint32(p + 4, true)
    const flags = v.getUint8(p + 8)
    frame.frameTime = v.getBigInt64(p + 9, true)
    frame.binary = (flags & BINARY) !== 0
    p += HEADER_BYTES
    frame.payload = b.subarray(p, p + length)
    p += length
    frame.tail = b.subarray(p, p + tail)
    p += tail
    each(frame, (flags & IN_HOUR) !== 0)
  }
}

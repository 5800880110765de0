/**
 * Merged frames packed into one buffer, to move from the thread that pairs them to the thread that writes
 * them: one buffer a batch instead of a structured clone of a million small objects. Connection ids are
 * sent once, as an index into a table both sides grow in the same order.
 *
 * A frame: u32 payload length, u8 flags (1 binary, 2 in the hour), u8 receipt count, i64 frame time, then
 * per receipt u8 replica (0 a, 1 b), u8 1 when it has a clock, u32 connection index, i64 receive time and,
 * with a clock, i64 offset and i64 bound; then the payload bytes.
 */
import type { MergedFrame, Receipt } from './merge.js'

export interface FrameBatch {
  bytes: Uint8Array
  frames: number
  /** Connection ids first used in this batch, in index order. */
  newConnections: string[]
}

const BINARY = 1
const IN_HOUR = 2
const BATCH_BYTES = 1 << 20

export class FrameBatchWriter {
  private buf = new Uint8Array(BATCH_BYTES)
  private view = new DataView(this.buf.buffer)
  private pos = 0
  private frames = 0
  private readonly connections = new Map<string, number>()
  private newConnections: string[] = []

  constructor(private readonly onBatch: (batch: FrameBatch) => void) {}

  add(frame: MergedFrame, inHour: boolean): void {
    const receipts = frame.receipts
    const need = 14 + receipts.length * 30 + frame.payload.length
    if (this.pos + need > this.buf.length) {
      this.end()
      this.buf = new Uint8Array(Math.max(BATCH_BYTES, need))
      this.view = new DataView(this.buf.buffer)
    }
    const v = this.view
    let p = this.pos
    v.setUint32(p, frame.payload.length, true)
    v.setUint8(p + 4, (frame.binary ? BINARY : 0) | (inHour ? IN_HOUR : 0))
    v.setUint8(p + 5, receipts.length)
    v.setBigInt64(p + 6, frame.frameTime, true)
    p += 14
    for (const r of receipts) {
      let index = this.connections.get(r.connection)
      if (index === undefined) {
        index = this.connections.size
        this.connections.set(r.connection, index)
        this.newConnections.push(r.connection)
      }
      const clock = r.clockErrorBound !== undefined
      v.setUint8(p, r.replica === 'a' ? 0 : 1)
      v.setUint8(p + 1, clock ? 1 : 0)
      v.setUint32(p + 2, index, true)
      v.setBigInt64(p + 6, r.receiveTime, true)
      p += 14
      if (clock) {
        v.setBigInt64(p, r.clockOffset!, true)
        v.setBigInt64(p + 8, r.clockErrorBound!, true)
        p += 16
      }
    }
    this.buf.set(frame.payload, p)
    this.pos = p + frame.payload.length
    this.frames++
  }

  /** Hands over what is buffered, if anything; the buffer then belongs to the receiver. */
  end(): void {
    if (this.frames === 0) return
    this.onBatch({ bytes: this.buf.subarray(0, this.pos), frames: this.frames, newConnections: this.newConnections })
    this.buf = new Uint8Array(BATCH_BYTES)
    this.view = new DataView(this.buf.buffer)
    this.pos = 0
    this.frames = 0
    this.newConnections = []
  }
}

/** The reading side: keeps the connection table across batches. */
export class FrameBatchReader {
  private readonly connections: string[] = []

  /** Calls `each` with every frame of the batch in order; payloads are views into the batch's buffer. */
  read(batch: FrameBatch, each: (frame: MergedFrame, inHour: boolean) => void): void {
    this.connections.push(...batch.newConnections)
    const b = batch.bytes
    const v = new DataView(b.buffer, b.byteOffset, b.byteLength)
    let p = 0
    for (let n = 0; n < batch.frames; n++) {
      const length = v.getUint32(p, true)
      const flags = v.getUint8(p + 4)
      const count = v.getUint8(p + 5)
      const frameTime = v.getBigInt64(p + 6, true)
      p += 14
      const receipts: Receipt[] = []
      for (let i = 0; i < count; i++) {
        const clock = v.getUint8(p + 1) === 1
        const r: Receipt = { replica: v.getUint8(p) === 0 ? 'a' : 'b', connection: this.connections[v.getUint32(p + 2, true)]!, receiveTime: v.getBigInt64(p + 6, true) }
        p += 14
        if (clock) {
          r.clockOffset = v.getBigInt64(p, true)
          r.clockErrorBound = v.getBigInt64(p + 8, true)
          p += 16
        }
        receipts.push(r)
      }
      each({ payload: b.subarray(p, p + length), binary: (flags & BINARY) !== 0, receipts, frameTime }, (flags & IN_HOUR) !== 0)
      p += length
    }
  }
}

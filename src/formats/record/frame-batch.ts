/**
 * Merged frames packed into one buffer, to move from the thread that pairs them to the thread that writes
 * them: one buffer a batch instead of a structured clone of a million small objects. Connection ids are
 * sent once, as an index into a table both sides grow in the same order.
 *
 * A frame: u32 payload length, u8 flags (1 binary, 2 in the hour), u8 receipt count, i64 frame time, then
 * per receipt u8 replica (0 a, 1 b), u8 1 when it has a clock, u32 connection index, i64 receive time and,
 * with a clock, i64 offset and i64 bound; then the payload bytes.
 */
import type { FramePairing, MergedFrame, Receipt } from './merge.js'

export interface FrameBatch {
  bytes: Uint8Array
  frames: number
  /** Connection ids first used in this batch, in index order. */
  newConnections: string[]
}

const BINARY = 1
const IN_HOUR = 2
const BATCH_BYTES = 1 << 20

/** A safe integer as int64, little-endian, without a bigint. */
function setSafeInt64(v: DataView, at: number, n: number): void {
  const hi = Math.floor(n / 4294967296)
  v.setUint32(at, n - hi * 4294967296, true)
  v.setInt32(at + 4, hi, true)
}

export class FrameBatchWriter {
  private buf = new Uint8Array(BATCH_BYTES)
  private view = new DataView(this.buf.buffer)
  private pos = 0
  private frames = 0
  private readonly connections = new Map<string, number>()
  private newConnections: string[] = []

  constructor(private readonly onBatch: (batch: FrameBatch) => void) {}

  /** Packs the final frame in `slot` of `pairing` (see FramePairing). */
  add(pairing: FramePairing, slot: number, inHour: boolean): void {
    const count = pairing.receiptCount(slot)
    const length = pairing.payloadLength(slot)
    const need = 14 + count * 30 + length
    if (this.pos + need > this.buf.length) {
      this.end()
      this.buf = new Uint8Array(Math.max(BATCH_BYTES, need))
      this.view = new DataView(this.buf.buffer)
    }
    const v = this.view
    let p = this.pos
    v.setUint32(p, length, true)
    v.setUint8(p + 4, (pairing.binary(slot) ? BINARY : 0) | (inHour ? IN_HOUR : 0))
    v.setUint8(p + 5, count)
    const timed = pairing.frameTimeReceipt(slot)
    v.setUint32(p + 6, pairing.timeLo(timed), true)
    v.setInt32(p + 10, pairing.timeHi(timed), true)
    p += 14
    for (let r = 2 * slot; r < 2 * slot + count; r++) {
      const connection = pairing.connection(r)
      let index = this.connections.get(connection)
      if (index === undefined) {
        index = this.connections.size
        this.connections.set(connection, index)
        this.newConnections.push(connection)
      }
      const clock = pairing.hasClock(r)
      v.setUint8(p, pairing.replica(r) === 'a' ? 0 : 1)
      v.setUint8(p + 1, clock ? 1 : 0)
      v.setUint32(p + 2, index, true)
      v.setUint32(p + 6, pairing.timeLo(r), true)
      v.setInt32(p + 10, pairing.timeHi(r), true)
      p += 14
      if (clock) {
        setSafeInt64(v, p, pairing.clockOffset(r))
        setSafeInt64(v, p + 8, pairing.clockErrorBound(r))
        p += 16
      }
    }
    const start = pairing.payloadStart(slot)
    pairing.payloadBuffer(slot).copy(this.buf, p, start, start + length)
    this.pos = p + length
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

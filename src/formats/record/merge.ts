import type { FrameEvent, Replica } from './types.js'

/** One replica's receipt of a frame, as the raw file's `receipts` entries carry it. */
export interface Receipt {
  replica: Replica
  connection: string
  receiveTime: bigint
  clockOffset?: bigint
  clockErrorBound?: bigint
}

/** A frame with the receipts of every replica that received it, and its frame time. */
export interface MergedFrame {
  payload: Uint8Array
  binary: boolean
  /** Sorted by replica (a before b). */
  receipts: Receipt[]
  frameTime: bigint
}

/**
 * How far apart two replicas' receipts of one frame may be and still be paired: 5 s. Replicas on healthy
 * connections receive a frame within milliseconds of each other; a few seconds covers a replica catching
 * up after a stall, while staying far below the spacing at which a venue repeats byte-identical frames
 * (control replies such as `{"result":null,"id":1}`), which must stay separate frames.
 */
export const PAIRING_WINDOW_NS = 5_000_000_000n

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)
/** What a push that makes no frame final returns (most pushes): shared, so frozen. */
const NONE: MergedFrame[] = Object.freeze([]) as unknown as MergedFrame[]

/**
 * Whether a replica's clock estimate can stand in a receipt: the format's numbers are integers within
 * ±(2^53 − 1), and a bound below |offset| bounds nothing. An estimate that cannot is withheld, offset and
 * bound together, exactly as when the replica had none (check 7 then holds by construction).
 */
export function clockFits(offset: bigint | undefined, bound: bigint | undefined): boolean {
  // Within ±(2^53 − 1) both convert to numbers exactly; comparing numbers allocates no bigint.
  return offset !== undefined && bound !== undefined && bound >= 0n && bound <= MAX_SAFE &&
    offset >= -MAX_SAFE && offset <= MAX_SAFE && Number(bound) >= Math.abs(Number(offset))
}

/** The "Raw file" rule: earliest receive_time among receipts with clock_error_bound, or among all. */
export function frameTimeOf(receipts: readonly Receipt[]): bigint {
  let bounded: bigint | null = null
  let any: bigint | null = null
  for (const r of receipts) {
    if (any === null || r.receiveTime < any) any = r.receiveTime
    if (r.clockErrorBound !== undefined && (bounded === null || r.receiveTime < bounded)) bounded = r.receiveTime
  }
  if (any === null) throw new Error('a frame has at least one receipt')
  return bounded ?? any
}

interface Pending {
  frame: MergedFrame
  /** Receive time of its first receipt, as an order (below): the pairing window runs from here. */
  first: number
  replica: Replica
  /** Hash of the payload bytes and kind: the bucket of byKey it waits in. */
  key: number
  done: boolean
  seq: number
  /**
   * Frame time as nanoseconds after the pairer's first input: comparing numbers is several times cheaper
   * than comparing bigints, and exact within 2^53 ns (104 days) of the first input, far beyond the hour
   * and window a seal reads.
   */
  order: number
}

/**
 * Pairs the two replicas' receipts of the same frame and hands frames out in frame-time order.
 *
 * Frames are the same frame when their bytes (and text/binary kind) are equal; the oldest unpaired receipt
 * of the other replica within the window is taken, so repeated identical frames pair in receipt order.
 * Input must come in receive-time order across both replicas. A frame is released once no later input can
 * precede it: every pending frame's first receipt is within the window of the newest input, so a finished
 * frame whose frame time is older than that is final. Memory holds one window of frames.
 */
export class FramePairer {
  private readonly window: number
  /** Unpaired frames by {@link payloadHash}; frames in one bucket are told apart by their bytes. */
  private readonly byKey = new Map<number, Pending[]>()
  private readonly fifo: Pending[] = []
  private fifoHead = 0
  private readonly ready: Pending[] = []
  private seq = 0
  private lastTime: bigint | null = null
  /** The first input's receive time, which {@link Pending.order} counts from. */
  private base = 0n

  constructor(windowNs: bigint = PAIRING_WINDOW_NS) {
    this.window = Number(windowNs)
  }

  /** Adds one receipt; returns the frames that became final, in frame-time order. */
  push(event: FrameEvent): MergedFrame[] {
    const t = event.receiveTime
    if (this.lastTime !== null && t < this.lastTime) {
      throw new Error(`frames must come in receive-time order: ${t} after ${this.lastTime}`)
    }
    if (this.lastTime === null) this.base = t
    this.lastTime = t
    const now = this.orderOf(t)
    this.expire(now - this.window)
    const receipt: Receipt = { replica: event.replica, connection: event.connection, receiveTime: t }
    if (clockFits(event.clockOffset, event.clockErrorBound)) {
      receipt.clockOffset = event.clockOffset!
      receipt.clockErrorBound = event.clockErrorBound!
    }
    const key = payloadHash(event.payload, event.binary)
    const list = this.byKey.get(key)
    let partner: Pending | undefined
    if (list) {
      for (let i = 0; i < list.length; i++) {
        const p = list[i]!
        if (p.replica !== event.replica && p.frame.binary === event.binary && sameBytes(p.frame.payload, event.payload)) { partner = p; break }
      }
    }
    if (partner) {
      // Receipts are kept in replica order (a before b).
      if (receipt.replica < partner.frame.receipts[0]!.replica) partner.frame.receipts.unshift(receipt)
      else partner.frame.receipts.push(receipt)
      this.finish(partner)
    } else {
      const pending: Pending = { frame: { payload: event.payload, binary: event.binary, receipts: [receipt], frameTime: t }, first: now, replica: event.replica, key, done: false, seq: this.seq++, order: now }
      if (list) list.push(pending)
      else this.byKey.set(key, [pending])
      this.fifo.push(pending)
    }
    return this.release(now - this.window)
  }

  /** Ends the input: every frame still held is final. */
  flush(): MergedFrame[] {
    this.expire(Infinity)
    return this.release(Infinity)
  }

  private finish(p: Pending): void {
    p.done = true
    const receipts = p.frame.receipts
    if (receipts.length > 1) {
      p.frame.frameTime = frameTimeOf(receipts)
      p.order = this.orderOf(p.frame.frameTime)
    }
    const list = this.byKey.get(p.key)!
    list.splice(list.indexOf(p), 1)
    if (list.length === 0) this.byKey.delete(p.key)
    heapPush(this.ready, p)
  }

  /** Frames whose window has passed unpaired are final with the receipts they have. */
  /** `before`: an order; frames whose first receipt is older are final. */
  private expire(before: number): void {
    while (this.fifoHead < this.fifo.length) {
      const p = this.fifo[this.fifoHead]!
      if (!p.done && p.first >= before) break
      this.fifoHead++
      if (!p.done) this.finish(p)
    }
    if (this.fifoHead > 4096 && this.fifoHead * 2 > this.fifo.length) {
      this.fifo.splice(0, this.fifoHead)
      this.fifoHead = 0
    }
  }

  /** Hands out the finished frames whose frame time (an order) is before `before`. */
  private release(before: number): MergedFrame[] {
    if (this.ready.length === 0 || this.ready[0]!.order >= before) return NONE
    const out: MergedFrame[] = []
    while (this.ready.length > 0 && this.ready[0]!.order < before) out.push(heapPop(this.ready).frame)
    return out
  }

  private orderOf(t: bigint): number {
    const order = Number(t - this.base)
    if (!Number.isSafeInteger(order)) throw new Error(`frame times more than 2^53 ns apart: ${this.base} and ${t}`)
    return order
  }
}

/**
 * FNV-1a over the frame kind, the length and the first and last 48 payload bytes (all of a shorter one):
 * equal frames hash equal; frames that differ only in the middle share a bucket and are told apart there.
 */
function payloadHash(bytes: Uint8Array, binary: boolean): number {
  let h = binary ? 0x050c5d1f : 0x811c9dc5
  const n = bytes.length
  if (n <= 96) {
    for (let i = 0; i < n; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193)
  } else {
    for (let i = 0; i < 48; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193)
    for (let i = n - 48; i < n; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193)
  }
  return (h ^ n) >>> 0
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true
  if (a.length !== b.length) return false
  return (a instanceof Buffer ? a : Buffer.from(a.buffer, a.byteOffset, a.byteLength)).equals(b)
}

const before = (a: Pending, b: Pending) => a.order < b.order || (a.order === b.order && a.seq < b.seq)

function heapPush(h: Pending[], p: Pending): void {
  h.push(p)
  for (let i = h.length - 1; i > 0;) {
    const parent = (i - 1) >> 1
    if (!before(h[i]!, h[parent]!)) break
    ;[h[i], h[parent]] = [h[parent]!, h[i]!]
    i = parent
  }
}

function heapPop(h: Pending[]): Pending {
  const top = h[0]!
  const last = h.pop()!
  if (h.length > 0) {
    h[0] = last
    for (let i = 0; ;) {
      const l = 2 * i + 1
      const r = l + 1
      let m = i
      if (l < h.length && before(h[l]!, h[m]!)) m = l
      if (r < h.length && before(h[r]!, h[m]!)) m = r
      if (m === i) break
      ;[h[i], h[m]] = [h[m]!, h[i]!]
      i = m
    }
  }
  return top
}

import { grown } from './grow.js'
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

const MAX_SAFE = Number.MAX_SAFE_INTEGER
const TWO_32 = 4294967296

/** An int64 given as its high (signed) and low (unsigned) 32 bits, as a number when within ±(2^53 − 1), else NaN. */
function safeNumber(hi: number, lo: number): number {
  const n = hi * TWO_32 + lo
  return n >= -MAX_SAFE && n <= MAX_SAFE ? n : NaN
}

/**
 * Whether a replica's clock estimate can stand in a receipt: the format's numbers are integers within
 * ±(2^53 − 1), and a bound below |offset| bounds nothing. An estimate that cannot is withheld, offset and
 * bound together, exactly as when the replica had none (check 7 then holds by construction). Takes the
 * values as numbers from {@link safeNumber} (NaN when out of range).
 */
function clockFitsNumbers(offset: number, bound: number): boolean {
  return bound >= 0 && bound >= Math.abs(offset)
}

/** {@link clockFitsNumbers} for bigint values. */
export function clockFits(offset: bigint | undefined, bound: bigint | undefined): boolean {
  if (offset === undefined || bound === undefined) return false
  const big = BigInt(MAX_SAFE)
  const inRange = (v: bigint) => v >= -big && v <= big
  return inRange(offset) && inRange(bound) && clockFitsNumbers(Number(offset), Number(bound))
}

/**
 * The "Raw file" rule for two receipts: whether receipt x gives the frame time rather than y, which follows
 * it in the receipts. The earliest receive_time among receipts with clock_error_bound wins, or among all.
 */
function givesFrameTime(xBounded: boolean, yBounded: boolean, xNotLater: boolean): boolean {
  return xBounded === yBounded ? xNotLater : xBounded
}

/** The "Raw file" rule: earliest receive_time among receipts with clock_error_bound, or among all. */
export function frameTimeOf(receipts: readonly Receipt[]): bigint {
  let best: Receipt | undefined
  for (const r of receipts) {
    if (best === undefined || !givesFrameTime(best.clockErrorBound !== undefined, r.clockErrorBound !== undefined, best.receiveTime <= r.receiveTime)) best = r
  }
  if (best === undefined) throw new Error('a frame has at least one receipt')
  return best.receiveTime
}

/**
 * One receipt handed to {@link FramePairing}: a plain, reused record, so that pairing a million frames an
 * hour allocates nothing per frame. Times and clock values are int64 as high (signed) and low (unsigned)
 * 32 bits; the payload is `payloadBytes` bytes of `payloadBuffer` from `payloadStart`.
 */
export class ReceiptInput {
  replica: Replica = 'a'
  connection = ''
  timeHi = 0
  timeLo = 0
  payloadBuffer: Buffer = Buffer.alloc(0)
  payloadStart = 0
  payloadBytes = 0
  binary = false
  hasClock = false
  offsetHi = 0
  offsetLo = 0
  boundHi = 0
  boundLo = 0

  /** Fills the record from a decoded frame event. */
  setEvent(e: FrameEvent): this {
    this.replica = e.replica
    this.connection = e.connection
    this.timeHi = Number(e.receiveTime >> 32n)
    this.timeLo = Number(BigInt.asUintN(32, e.receiveTime))
    const p = e.payload
    this.payloadBuffer = Buffer.isBuffer(p) ? p : Buffer.from(p.buffer, p.byteOffset, p.byteLength)
    this.payloadStart = 0
    this.payloadBytes = p.byteLength
    this.binary = e.binary
    this.hasClock = e.clockOffset !== undefined && e.clockErrorBound !== undefined
    if (this.hasClock) {
      this.offsetHi = Number(e.clockOffset! >> 32n)
      this.offsetLo = Number(BigInt.asUintN(32, e.clockOffset!))
      this.boundHi = Number(e.clockErrorBound! >> 32n)
      this.boundLo = Number(BigInt.asUintN(32, e.clockErrorBound!))
    }
    return this
  }
}

/** The bigint of an int64 given as high and low 32 bits. */
export function int64Of(hi: number, lo: number): bigint {
  return (BigInt(hi) << 32n) + BigInt(lo)
}

const NO_SLOT = -1

/**
 * Pairs the two replicas' receipts of the same frame and hands frames out in frame-time order.
 *
 * Frames are the same frame when their bytes (and text/binary kind) are equal; the oldest unpaired receipt
 * of the other replica within the window is taken, so repeated identical frames pair in receipt order.
 * Input must come in receive-time order across both replicas. A frame is released once no later input can
 * precede it: every pending frame's first receipt is within the window of the newest input, so a finished
 * frame whose frame time is older than that is final. Memory holds one window of frames.
 *
 * Frames wait in slots of flat arrays rather than as objects: at a million frames an hour, objects that
 * live for a pairing window were most of the sealer's garbage-collection work. A final frame is handed to
 * `onFinal` by its slot, which is read through the accessors below and reused once `onFinal` returns.
 * Times inside are "orders": nanoseconds after the first input, as numbers (exact within 2^53 ns, 104
 * days, of the first input, far beyond the hour and window a seal reads).
 */
export class FramePairing {
  private readonly window: number
  private capacity = 0
  // By slot.
  private payloadBuffers: (Buffer | undefined)[] = []
  private payloadStarts = new Int32Array(0)
  private payloadLengths = new Int32Array(0)
  private binaries = new Uint8Array(0)
  private keys = new Int32Array(0)
  /** The next unpaired slot with the same key, in arrival order. */
  private nextWithKey = new Int32Array(0)
  /** Order of the first receipt: the pairing window runs from here. */
  private firsts = new Float64Array(0)
  /** Order of the frame time. */
  private orders = new Float64Array(0)
  private seqs = new Float64Array(0)
  private dones = new Uint8Array(0)
  private counts = new Uint8Array(0)
  /** Which receipt (0 or 1) gives the frame time. */
  private timeReceipts = new Uint8Array(0)
  // By receipt: slot * 2 + 0 or 1, in replica order.
  private replicas = new Uint8Array(0)
  private connections: string[] = []
  private timeHis = new Int32Array(0)
  private timeLos = new Uint32Array(0)
  private clocks = new Uint8Array(0)
  private offsets = new Float64Array(0)
  private bounds = new Float64Array(0)
  /** The receive time as an order, for the frame-time rule. */
  private receiptOrders = new Float64Array(0)

  private free: number[] = []
  /** Unpaired slots by key: the first of each chain of {@link nextWithKey}. */
  private readonly byKey = new Map<number, number>()
  private fifoSlots: number[] = []
  private fifoSeqs: number[] = []
  private fifoHead = 0
  /** Finished slots, a heap by frame-time order then arrival. */
  private readonly ready: number[] = []
  private seq = 0
  private last = -Infinity
  private started = false
  private baseHi = 0
  private baseLo = 0

  constructor(private readonly onFinal: (slot: number) => void, windowNs: bigint = PAIRING_WINDOW_NS) {
    this.window = Number(windowNs)
  }

  /** Adds one receipt. Returns its slot, as a negative number (−slot − 1) when it completed a pair. */
  push(input: ReceiptInput): number {
    if (!this.started) {
      this.started = true
      this.baseHi = input.timeHi
      this.baseLo = input.timeLo
    }
    const now = this.orderOf(input.timeHi, input.timeLo)
    if (now < this.last) throw new Error(`frames must come in receive-time order: ${int64Of(input.timeHi, input.timeLo)} after ${this.timeOf(this.last)}`)
    this.last = now
    this.expire(now - this.window)
    const replica = input.replica === 'a' ? 0 : 1
    const binary = input.binary ? 1 : 0
    const key = payloadKey(input.payloadBuffer, input.payloadStart, input.payloadBytes, input.binary)
    let partner = NO_SLOT
    for (let s = this.byKey.get(key) ?? NO_SLOT; s !== NO_SLOT; s = this.nextWithKey[s]!) {
      if (this.replicas[2 * s] !== replica && this.binaries[s] === binary && this.payloadLengths[s] === input.payloadBytes &&
        input.payloadBuffer.compare(this.payloadBuffers[s]!, this.payloadStarts[s]!, this.payloadStarts[s]! + input.payloadBytes, input.payloadStart, input.payloadStart + input.payloadBytes) === 0) {
        partner = s
        break
      }
    }
    let result: number
    if (partner !== NO_SLOT) {
      // Receipts are kept in replica order (a before b).
      if (replica < this.replicas[2 * partner]!) {
        this.moveReceipt(2 * partner, 2 * partner + 1)
        this.setReceipt(2 * partner, input, replica, now)
      } else this.setReceipt(2 * partner + 1, input, replica, now)
      this.counts[partner] = 2
      this.finish(partner)
      result = -partner - 1
    } else {
      const s = this.take()
      this.payloadBuffers[s] = input.payloadBuffer
      this.payloadStarts[s] = input.payloadStart
      this.payloadLengths[s] = input.payloadBytes
      this.binaries[s] = binary
      this.keys[s] = key
      this.nextWithKey[s] = NO_SLOT
      this.firsts[s] = now
      this.orders[s] = now
      this.seqs[s] = this.seq++
      this.dones[s] = 0
      this.counts[s] = 1
      this.timeReceipts[s] = 0
      this.setReceipt(2 * s, input, replica, now)
      const head = this.byKey.get(key)
      if (head === undefined) this.byKey.set(key, s)
      else {
        let tail = head
        while (this.nextWithKey[tail] !== NO_SLOT) tail = this.nextWithKey[tail]!
        this.nextWithKey[tail] = s
      }
      this.fifoSlots.push(s)
      this.fifoSeqs.push(this.seqs[s]!)
      result = s
    }
    this.release(now - this.window)
    return result
  }

  /** Ends the input: every frame still held is final. */
  flush(): void {
    this.expire(Infinity)
    this.release(Infinity)
  }

  // Reading a slot handed to onFinal.
  payloadBuffer(slot: number): Buffer { return this.payloadBuffers[slot]! }
  payloadStart(slot: number): number { return this.payloadStarts[slot]! }
  payloadLength(slot: number): number { return this.payloadLengths[slot]! }
  binary(slot: number): boolean { return this.binaries[slot] === 1 }
  receiptCount(slot: number): number { return this.counts[slot]! }
  /** The frame time as an order. */
  frameOrder(slot: number): number { return this.orders[slot]! }
  /** The receipt (slot * 2 + 0 or 1) whose receive time is the frame time. */
  frameTimeReceipt(slot: number): number { return 2 * slot + this.timeReceipts[slot]! }
  // Reading receipt r of a slot (slot * 2 + i).
  replica(r: number): Replica { return this.replicas[r] === 0 ? 'a' : 'b' }
  connection(r: number): string { return this.connections[r]! }
  timeHi(r: number): number { return this.timeHis[r]! }
  timeLo(r: number): number { return this.timeLos[r]! }
  /** Whether the receipt states a clock estimate (one the format can hold). */
  hasClock(r: number): boolean { return this.clocks[r] === 1 }
  clockOffset(r: number): number { return this.offsets[r]! }
  clockErrorBound(r: number): number { return this.bounds[r]! }

  /** An instant as an order (after at least one push). */
  orderOfTime(t: bigint): number {
    return this.orderOf(Number(t >> 32n), Number(BigInt.asUintN(32, t)))
  }

  /** The instant of an order. */
  timeOf(order: number): bigint {
    return int64Of(this.baseHi, this.baseLo) + BigInt(order)
  }

  private orderOf(hi: number, lo: number): number {
    const order = (hi - this.baseHi) * TWO_32 + (lo - this.baseLo)
    if (!Number.isSafeInteger(order)) throw new Error(`frame times more than 2^53 ns apart: ${int64Of(this.baseHi, this.baseLo)} and ${int64Of(hi, lo)}`)
    return order
  }

  private setReceipt(r: number, input: ReceiptInput, replica: number, order: number): void {
    this.replicas[r] = replica
    this.connections[r] = input.connection
    this.timeHis[r] = input.timeHi
    this.timeLos[r] = input.timeLo
    const offset = input.hasClock ? safeNumber(input.offsetHi, input.offsetLo) : NaN
    const bound = input.hasClock ? safeNumber(input.boundHi, input.boundLo) : NaN
    const fits = clockFitsNumbers(offset, bound)
    this.clocks[r] = fits ? 1 : 0
    this.offsets[r] = fits ? offset : 0
    this.bounds[r] = fits ? bound : 0
    this.receiptOrders[r] = order
  }

  private moveReceipt(from: number, to: number): void {
    this.replicas[to] = this.replicas[from]!
    this.connections[to] = this.connections[from]!
    this.timeHis[to] = this.timeHis[from]!
    this.timeLos[to] = this.timeLos[from]!
    this.clocks[to] = this.clocks[from]!
    this.offsets[to] = this.offsets[from]!
    this.bounds[to] = this.bounds[from]!
    this.receiptOrders[to] = this.receiptOrders[from]!
  }

  private take(): number {
    if (this.free.length === 0) this.grow()
    return this.free.pop()!
  }

  private grow(): void {
    const old = this.capacity
    const n = Math.max(1024, old * 2)
    this.payloadStarts = grown(this.payloadStarts, n)
    this.payloadLengths = grown(this.payloadLengths, n)
    this.binaries = grown(this.binaries, n)
    this.keys = grown(this.keys, n)
    this.nextWithKey = grown(this.nextWithKey, n)
    this.firsts = grown(this.firsts, n)
    this.orders = grown(this.orders, n)
    this.seqs = grown(this.seqs, n)
    this.dones = grown(this.dones, n)
    this.counts = grown(this.counts, n)
    this.timeReceipts = grown(this.timeReceipts, n)
    this.replicas = grown(this.replicas, 2 * n)
    this.timeHis = grown(this.timeHis, 2 * n)
    this.timeLos = grown(this.timeLos, 2 * n)
    this.clocks = grown(this.clocks, 2 * n)
    this.offsets = grown(this.offsets, 2 * n)
    this.bounds = grown(this.bounds, 2 * n)
    this.receiptOrders = grown(this.receiptOrders, 2 * n)
    for (let s = n - 1; s >= old; s--) this.free.push(s)
    this.capacity = n
  }

  private finish(s: number): void {
    this.dones[s] = 1
    if (this.counts[s] === 2) {
      const x = 2 * s
      const first = givesFrameTime(this.clocks[x] === 1, this.clocks[x + 1] === 1, this.receiptOrders[x]! <= this.receiptOrders[x + 1]!) ? 0 : 1
      this.timeReceipts[s] = first
      this.orders[s] = this.receiptOrders[x + first]!
    }
    // Out of its key's chain.
    const key = this.keys[s]!
    const head = this.byKey.get(key)!
    if (head === s) {
      const next = this.nextWithKey[s]!
      if (next === NO_SLOT) this.byKey.delete(key)
      else this.byKey.set(key, next)
    } else {
      let p = head
      while (this.nextWithKey[p] !== s) p = this.nextWithKey[p]!
      this.nextWithKey[p] = this.nextWithKey[s]!
    }
    this.heapPush(s)
  }

  /** `before`: an order; frames whose first receipt is older, and still unpaired, are final. */
  private expire(before: number): void {
    const slots = this.fifoSlots
    const seqs = this.fifoSeqs
    while (this.fifoHead < slots.length) {
      const s = slots[this.fifoHead]!
      // A slot that moved on (released and reused) was finished before.
      const waiting = this.seqs[s] === seqs[this.fifoHead] && this.dones[s] === 0
      if (waiting && this.firsts[s]! >= before) break
      this.fifoHead++
      if (waiting) this.finish(s)
    }
    if (this.fifoHead > 4096 && this.fifoHead * 2 > slots.length) {
      slots.splice(0, this.fifoHead)
      seqs.splice(0, this.fifoHead)
      this.fifoHead = 0
    }
  }

  /** Hands out the finished frames whose frame time (an order) is before `before`. */
  private release(before: number): void {
    const ready = this.ready
    while (ready.length > 0 && this.orders[ready[0]!]! < before) {
      const s = this.heapPop()
      this.onFinal(s)
      this.payloadBuffers[s] = undefined
      this.free.push(s)
    }
  }

  private before(a: number, b: number): boolean {
    const oa = this.orders[a]!
    const ob = this.orders[b]!
    return oa < ob || (oa === ob && this.seqs[a]! < this.seqs[b]!)
  }

  private heapPush(s: number): void {
    const h = this.ready
    h.push(s)
    for (let i = h.length - 1; i > 0;) {
      const parent = (i - 1) >> 1
      if (!this.before(h[i]!, h[parent]!)) break
      const t = h[i]!
      h[i] = h[parent]!
      h[parent] = t
      i = parent
    }
  }

  private heapPop(): number {
    const h = this.ready
    const top = h[0]!
    const last = h.pop()!
    if (h.length > 0) {
      h[0] = last
      for (let i = 0; ;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < h.length && this.before(h[l]!, h[m]!)) m = l
        if (r < h.length && this.before(h[r]!, h[m]!)) m = r
        if (m === i) break
        const t = h[i]!
        h[i] = h[m]!
        h[m] = t
        i = m
      }
    }
    return top
  }
}

/**
 * Pairs decoded frame events (see {@link FramePairing}) and gives each final frame as a {@link MergedFrame}:
 * for tools, tests and data preparation; the sealer reads final frames from the slots.
 */
export class FramePairer {
  private readonly pairing: FramePairing
  private readonly input = new ReceiptInput()
  /** The payload of each slot's first receipt, as given. */
  private readonly payloads: (Uint8Array | undefined)[] = []
  private out: MergedFrame[] = []

  constructor(windowNs: bigint = PAIRING_WINDOW_NS) {
    this.pairing = new FramePairing((slot) => this.out.push(this.merged(slot)), windowNs)
  }

  /** Adds one receipt; returns the frames that became final, in frame-time order. */
  push(event: FrameEvent): MergedFrame[] {
    // A new slot cannot be final within the push that made it: its payload is noted after.
    const slot = this.pairing.push(this.input.setEvent(event))
    if (slot >= 0) this.payloads[slot] = event.payload
    return this.take()
  }

  /** Ends the input: every frame still held is final. */
  flush(): MergedFrame[] {
    this.pairing.flush()
    return this.take()
  }

  private take(): MergedFrame[] {
    const out = this.out
    if (out.length > 0) this.out = []
    return out
  }

  private merged(slot: number): MergedFrame {
    const p = this.pairing
    const receipts: Receipt[] = []
    for (let i = 0; i < p.receiptCount(slot); i++) {
      const r = 2 * slot + i
      const receipt: Receipt = { replica: p.replica(r), connection: p.connection(r), receiveTime: int64Of(p.timeHi(r), p.timeLo(r)) }
      if (p.hasClock(r)) {
        receipt.clockOffset = BigInt(p.clockOffset(r))
        receipt.clockErrorBound = BigInt(p.clockErrorBound(r))
      }
      receipts.push(receipt)
    }
    const t = p.frameTimeReceipt(slot)
    const frame = { payload: this.payloads[slot]!, binary: p.binary(slot), receipts, frameTime: int64Of(p.timeHi(t), p.timeLo(t)) }
    this.payloads[slot] = undefined
    return frame
  }
}

/**
 * A map key for a payload: FNV-1a over the frame kind, the length and the last 48 payload bytes (all of a
 * shorter one) taken four at a time, kept within small-integer range. Equal frames have equal keys; frames
 * that differ only before their last 48 bytes share a key and are told apart by their bytes. Venues end a
 * message with its times and ids and often begin it with the same event name (Binance: 16 constant
 * bytes), so the last bytes tell frames apart best; hashing more of each cost more than the rare shared key.
 */
function payloadKey(bytes: Uint8Array, start: number, n: number, binary: boolean): number {
  let h = binary ? 0x050c5d1f : 0x811c9dc5
  const end = start + n
  let i = n > 48 ? end - 48 : start
  for (; i + 4 <= end; i += 4) h = Math.imul(h ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24)), 0x01000193)
  for (; i < end; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193)
  return (h ^ n) & 0x3fffffff
}

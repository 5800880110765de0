/**
 * A deterministic simulator of what the two replicas of a Binance spot recorder journal: for a time range
 * and one channel (`trades` or `book`), the JournalEvent stream of replicas `a` and `b`, merged in
 * order of event time (receive_time for frames), ties in the order the events were made.
 *
 * The venue side: trade frames (Poisson arrivals at `framesPerSecond` over all instruments, trade ids +1
 * per trade of an instrument) or, for the book, a `depthUpdate` per instrument every `depthIntervalMs`
 * (update ids chained `U == prev_u + 1`) over a small book that never crosses. Payloads are built as
 * Binance documents them (`{"e":"trade","E":..,"s":..,"t":..,"p":"..","q":"..","T":..,"m":..,"M":true}`),
 * optionally wrapped as a combined stream.
 *
 * The replica side: each replica opens a connection at the start (connecting, open, the SUBSCRIBE
 * acknowledgement `{"result":null,"id":1}` as a frame, subscribed with the instruments) and receives
 * every venue frame after its subscription: `a` 1.5 to 2.5 ms after the venue sent it, `b` 0.1 to 2 ms
 * after `a`, or in 15% of frames 0.1 to 1 ms before it. Both get the same bytes (the two events share
 * one payload array; treat it as read-only). A share of frames reaches one replica only. Each replica's
 * host clock is off UTC by a constant few tens of microseconds (receive times are host-clock readings);
 * receipts carry `clockOffset` and `clockErrorBound` from an NTS time-daemon sample taken every 8 s,
 * with the bound and the withholding rules of src/formats/record/clock.ts (the daemon reports itself
 * unsynchronised in scripted stretches).
 * On the book channel each connection fetches a REST depth snapshot per instrument after its first
 * update, and again after any gap, checksum mismatch or snapshot behind the stream; the snapshot is a
 * frame of its own ({@link wrapBinanceDepthSnapshot}) received 3 to 15 ms after the venue served it.
 *
 * The recorder side: each replica runs Binance's sequence rules ({@link binanceSequence}) per connection
 * and instrument on what it received and journals a `sequence-break` after the frame that revealed a
 * gap (a scripted venue gap, or a frame that reached the other replica only).
 *
 * Incidents (times are the replica's host-clock nanoseconds, like the events'):
 * - `reconnect`: the replica's connection ends at `at` (close code 1006: an `error` then `closed` without
 *   `closeCode`, since 1006 means no close frame arrived; any other code: `closed` with that code as
 *   sent in the venue's close frame), then after `pauseNs` (default 1 s) connecting / open / ack /
 *   subscribed on a new connection id. A reconnect during a connection's handshake or an outage is ignored.
 * - `sequence-gap`: from `at` on, the venue skips `skip` (default 5) ids of the instrument's sequence
 *   (trade ids, or book update ids), seen by both replicas.
 * - `checksum-mismatch`: the replica journals a checksum mismatch for the instrument after the first
 *   frame of that instrument it receives at or after `at` (Binance has no checksum: a synthetic incident
 *   for the sealer's sake). On the book channel the replica then refetches the snapshot.
 * - `outage`: the recorder is down from `start` to `end`: no events at all (a crash journals no close);
 *   at `end` both replicas connect anew (with `heartbeatIntervalMs`, after a `recorder-start` each).
 *
 * With `heartbeatIntervalMs` the replicas journal as a recorder process does (journal format 2): a
 * `recorder-start` at the start and after each outage, and a `heartbeat` whenever a replica has journaled
 * nothing for half the interval and at the start of each hour.
 * - `unsynchronised`: the replica withholds clock fields on receipts in [`start`, `end`).
 *
 * Event ids: connections are `a-1`, `a-2`, ... and `b-1`, ... in the order a replica opens them.
 */
import { receiptClock, type TimeDaemonSample } from '../formats/record/clock.js'
import type { ChecksumMismatchEvent, FrameEvent, JournalEvent, Replica, SequenceBreakEvent } from '../formats/record/types.js'
import type { SequenceState, SequenceVerdict } from '../venues/adapter.js'
import { binanceSequence, wrapBinanceDepthSnapshot } from '../venues/binance.js'
import { BINANCE_INSTRUMENTS, fmt8, moveBookSide, type InstrumentSpec } from './binance-instruments.js'
import { hash32, seededRandom } from './random.js'

export interface SimReconnect { kind: 'reconnect'; replica: Replica; at: bigint; closeCode?: number; pauseNs?: bigint }
export interface SimSequenceGap { kind: 'sequence-gap'; instrument: string; at: bigint; skip?: number }
export interface SimChecksumMismatch { kind: 'checksum-mismatch'; replica: Replica; instrument: string; at: bigint; expected?: string; computed?: string }
export interface SimOutage { kind: 'outage'; start: bigint; end: bigint }
export interface SimUnsynchronised { kind: 'unsynchronised'; replica: Replica; start: bigint; end: bigint }
export type SimIncident = SimReconnect | SimSequenceGap | SimChecksumMismatch | SimOutage | SimUnsynchronised

export interface ReplicaSimOptions {
  channel: 'trades' | 'book'
  /** Start of the range, ns since the epoch (inclusive). */
  start: bigint
  /** End of the range, ns since the epoch (exclusive): no event at or after it. */
  end: bigint
  /** Default ['BTCUSDT', 'ETHUSDT']. */
  instruments?: string[]
  /** Trades: venue trade frames per second over all instruments (default 50). */
  framesPerSecond?: number
  /** Book: update interval per instrument (default 100). */
  depthIntervalMs?: number
  /** Book: levels per side in a REST snapshot (default 20). */
  snapshotDepth?: number
  /** Default 1. */
  seed?: number
  /** Share of venue frames received by one replica only (default 0.001). */
  oneReplicaShare?: number
  /** Wrap payloads as a combined stream `{"stream":..,"data":..}` (default false). */
  combined?: boolean
  incidents?: SimIncident[]
  /** Journal `sequence-break` events as the recorder would (default true). */
  sequenceBreaks?: boolean
  /** Journal recorder starts and heartbeats with this interval (default: none, as a version-1 journal). */
  heartbeatIntervalMs?: number
}

export const SIM_DEFAULT_INSTRUMENTS: readonly string[] = ['BTCUSDT', 'ETHUSDT']

const MS = 1_000_000
const NTP_PERIOD = 8_000 * MS
/** No frame reaches a replica sooner than this after the venue sent it (b: a's 1.5 ms minus 1 ms). */
const MIN_DELAY = 0.5 * MS
/** No snapshot body is received sooner than this after the venue served it. */
const MIN_SNAPSHOT_DELAY = 3 * MS
const ACK = '{"result":null,"id":1}'

interface Segment { conn: string; connectingAt: number; openAt: number; ackAt: number; subscribedAt: number; endAt: number }

interface Entry {
  t: number
  s: number
  ev: JournalEvent
  /** Instrument index of a row-carrying frame, -1 otherwise. */
  ins: number
  /** 0 trade, 1 depth update, 2 snapshot. */
  seqKind: number
  first: number
  last: number
}

class Heap {
  a: Entry[] = []
  get size(): number { return this.a.length }
  peek(): Entry | undefined { return this.a[0] }
  push(e: Entry): void {
    const a = this.a
    let i = a.length
    a.push(e)
    while (i > 0) {
      const p = (i - 1) >> 1
      const q = a[p]!
      if (q.t < e.t || (q.t === e.t && q.s < e.s)) break
      a[i] = q
      i = p
    }
    a[i] = e
  }
  pop(): Entry | undefined {
    const a = this.a
    const top = a[0]
    const last = a.pop()
    if (top === undefined || last === undefined || a.length === 0) return top
    let i = 0
    const n = a.length
    for (;;) {
      let c = 2 * i + 1
      if (c >= n) break
      const r = c + 1
      if (r < n && (a[r]!.t < a[c]!.t || (a[r]!.t === a[c]!.t && a[r]!.s < a[c]!.s))) c = r
      const x = a[c]!
      if (last.t < x.t || (last.t === x.t && last.s < x.s)) break
      a[i] = x
      i = c
    }
    a[i] = last
    return top
  }
}

interface SnapshotJob { ts: number; r: number; ins: number; seg: Segment }

interface Book { bids: Map<number, number>; asks: Map<number, number>; mid: number }

/** The merged JournalEvent stream of replicas a and b (module comment). */
export function* simulateReplicas(opts: ReplicaSimOptions): Generator<JournalEvent, void, undefined> {
  const events = new Sim(opts).run()
  yield* opts.heartbeatIntervalMs === undefined ? events : withLiveness(events, opts, BigInt(Math.round(opts.heartbeatIntervalMs * 1e6)))
}

const HOUR = 3_600_000_000_000n

/** The events with each replica's recorder starts and heartbeats put in, in time order. */
function* withLiveness(events: Iterable<JournalEvent>, opts: ReplicaSimOptions, intervalNs: bigint): Generator<JournalEvent> {
  const outages = (opts.incidents ?? []).filter((i): i is SimOutage => i.kind === 'outage').sort((x, y) => (x.start < y.start ? -1 : 1))
  const down = (t: bigint) => outages.some((o) => t >= o.start && t < o.end)
  const half = intervalNs / 2n
  const next = (t: bigint) => { const beat = t + half; const hour = t - (t % HOUR) + HOUR; return beat < hour ? beat : hour }
  const replicas: Replica[] = ['a', 'b']
  const due = new Map<Replica, bigint>()
  const starts: bigint[] = [opts.start, ...outages.map((o) => o.end).filter((t) => t < opts.end)]
  function* until(t: bigint): Generator<JournalEvent> {
    for (;;) {
      const start = starts[0]
      const [r, d] = [...due].reduce((m, x) => (x[1] < m[1] ? x : m), ['a', opts.end] as [Replica, bigint])
      if (start !== undefined && start <= t && start <= d) {
        starts.shift()
        for (const replica of replicas) {
          yield { kind: 'recorder-start', replica, time: start, heartbeatIntervalNs: intervalNs }
          due.set(replica, next(start))
        }
        continue
      }
      if (d > t || d >= opts.end) return
      if (down(d)) { due.delete(r); continue }
      yield { kind: 'heartbeat', replica: r, time: d }
      due.set(r, next(d))
    }
  }
  for (const e of events) {
    const t = e.kind === 'frame' ? e.receiveTime : e.time
    yield* until(t)
    yield e
    if (due.has(e.replica)) due.set(e.replica, next(t))
  }
  yield* until(opts.end - 1n)
}

class Sim {
  readonly S: bigint
  readonly endRel: number
  readonly instruments: string[]
  readonly lower: string[]
  readonly specs: InstrumentSpec[]
  readonly channel: 'trades' | 'book'
  readonly seed: number
  readonly venueRand: () => number
  readonly netRand: () => number
  readonly recRand: () => number
  readonly heap = new Heap()
  seq = 0
  readonly hostOff: number[]
  readonly ntpPhase: number[]
  readonly segs: Segment[][]
  readonly segIdx = [0, 0]
  readonly lastHost = [-Infinity, -Infinity]
  readonly unsynced: [number, number][][] = [[], []]
  readonly gaps: { ins: number; at: number; skip: number; done: boolean }[] = []
  readonly checksums: { r: number; ins: number; at: number; expected: string; computed: string; done: boolean }[] = []
  readonly sMs: number
  readonly sSub: number
  // ntp sample cache per replica
  readonly ntpK = [NaN, NaN]
  readonly ntpSample: (TimeDaemonSample | undefined)[] = [undefined, undefined]
  // venue state
  readonly ids: number[]
  readonly prices: number[]
  readonly books: Book[] = []
  readonly jobs: SnapshotJob[] = []
  vnext = 0
  readonly oneShare: number
  readonly combined: boolean
  readonly depthInterval: number
  readonly snapshotDepth: number
  readonly fps: number
  readonly breaks: boolean

  constructor(o: ReplicaSimOptions) {
    if (o.end <= o.start) throw new RangeError('end must be after start')
    if (o.end - o.start > 100n * 86_400n * 1_000_000_000n) throw new RangeError('the simulated range is limited to 100 days')
    this.S = o.start
    this.endRel = Number(o.end - o.start)
    this.channel = o.channel
    this.instruments = [...(o.instruments ?? SIM_DEFAULT_INSTRUMENTS)]
    if (this.instruments.length === 0) throw new RangeError('no instruments')
    for (const s of this.instruments) if (!/^[A-Z0-9]+$/.test(s)) throw new RangeError(`instrument ${JSON.stringify(s)} is not a Binance spot symbol (A-Z, 0-9)`)
    if (new Set(this.instruments).size !== this.instruments.length) throw new RangeError('duplicate instruments')
    this.lower = this.instruments.map((s) => s.toLowerCase())
    this.seed = o.seed ?? 1
    this.venueRand = seededRandom(hash32(this.seed, 1))
    this.netRand = seededRandom(hash32(this.seed, 2))
    this.recRand = seededRandom(hash32(this.seed, 3))
    const setup = seededRandom(hash32(this.seed, 4))
    this.oneShare = o.oneReplicaShare ?? 0.001
    this.combined = o.combined ?? false
    this.depthInterval = (o.depthIntervalMs ?? 100) * MS
    this.snapshotDepth = o.snapshotDepth ?? 20
    this.fps = o.framesPerSecond ?? 50
    if (!(this.fps > 0)) throw new RangeError('framesPerSecond must be positive')
    if (!(this.depthInterval >= MS)) throw new RangeError('depthIntervalMs must be at least 1')
    if (!(Number.isInteger(this.snapshotDepth) && this.snapshotDepth >= 1)) throw new RangeError('snapshotDepth must be a positive integer')
    if (!(this.oneShare >= 0 && this.oneShare <= 1)) throw new RangeError('oneReplicaShare must lie in [0, 1]')
    this.breaks = o.sequenceBreaks ?? true
    this.sMs = Number(o.start / 1_000_000n)
    this.sSub = Number(o.start % 1_000_000n)
    this.hostOff = [Math.round(10_000 + setup() * 40_000), -Math.round(10_000 + setup() * 40_000)]
    this.ntpPhase = [Math.floor(setup() * NTP_PERIOD) - NTP_PERIOD, Math.floor(setup() * NTP_PERIOD) - NTP_PERIOD]
    this.specs = this.instruments.map((s, i) => {
      const k = BINANCE_INSTRUMENTS[s]
      if (k) return { ...k, price: k.price + Math.round((setup() - 0.5) * 200) * k.tick }
      return { price: (10_000 + (hash32(i, s.length, s.charCodeAt(0)) % 90_000)) * 1_000_000, tick: 1_000_000, lot: 1_000_000 }
    })
    this.ids = this.instruments.map((_, i) => this.channel === 'trades'
      ? 1_000_000_000 * (i + 1) + Math.floor(setup() * 1_000_000)
      : 40_000_000_000 + 5_000_000_000 * i + Math.floor(setup() * 1_000_000))
    this.prices = this.specs.map((s) => s.price)
    const rel = (x: bigint): number => Number(x - o.start)
    const insIndex = (name: string): number => {
      const k = this.instruments.indexOf(name)
      if (k < 0) throw new RangeError(`incident names instrument ${name}, which is not simulated`)
      return k
    }
    const reconnects: SimReconnect[][] = [[], []]
    const outages: [number, number][] = []
    for (const inc of o.incidents ?? []) {
      switch (inc.kind) {
        case 'reconnect': reconnects[inc.replica === 'a' ? 0 : 1]!.push(inc); break
        case 'outage':
          if (inc.end <= inc.start) throw new RangeError('an outage must end after it starts')
          outages.push([rel(inc.start), rel(inc.end)])
          break
        case 'unsynchronised': this.unsynced[inc.replica === 'a' ? 0 : 1]!.push([rel(inc.start), rel(inc.end)]); break
        case 'sequence-gap': this.gaps.push({ ins: insIndex(inc.instrument), at: rel(inc.at), skip: inc.skip ?? 5, done: false }); break
        case 'checksum-mismatch': this.checksums.push({
          r: inc.replica === 'a' ? 0 : 1, ins: insIndex(inc.instrument), at: rel(inc.at),
          expected: inc.expected ?? String(hash32(this.seed, 7, rel(inc.at) % 1e9)),
          computed: inc.computed ?? String(hash32(this.seed, 8, rel(inc.at) % 1e9)), done: false,
        }); break
      }
    }
    outages.sort((x, y) => x[0] - y[0])
    this.segs = [0, 1].map((r) => this.buildSegments(r, reconnects[r]!, outages, setup))
    if (this.channel === 'book') this.initBooks()
  }

  private replicaName(r: number): Replica { return r === 0 ? 'a' : 'b' }

  private push(t: number, ev: JournalEvent, ins = -1, seqKind = 0, first = 0, last = 0): void {
    this.heap.push({ t, s: this.seq++, ev, ins, seqKind, first, last })
  }

  private time(t: number): bigint { return this.S + BigInt(t) }

  private buildSegments(r: number, reconnects: SimReconnect[], outages: [number, number][], rand: () => number): Segment[] {
    const name = this.replicaName(r)
    type Brk = { t: number; kind: 'reconnect'; inc: SimReconnect } | { t: number; kind: 'outage'; end: number }
    const brks: Brk[] = [
      ...reconnects.map((inc): Brk => ({ t: Number(inc.at - this.S), kind: 'reconnect', inc })),
      ...outages.map(([s, e]): Brk => ({ t: s, kind: 'outage', end: e })),
    ].sort((x, y) => x.t - y.t)
    const segs: Segment[] = []
    let t = r === 0 ? 0 : Math.round(rand() * 2 * MS)
    let n = 0
    let bi = 0
    // An outage covering the start: connect at its end.
    while (t < this.endRel) {
      const out = brks.slice(bi).find((b) => b.kind === 'outage' && b.t <= t && (b as { end: number }).end > t)
      if (out && out.kind === 'outage') { t = out.end + (r === 0 ? 0 : Math.round(rand() * 2 * MS)); continue }
      const openAt = t + Math.round(30 * MS + rand() * 50 * MS)
      const ackAt = openAt + Math.round(2 * MS + rand() * 4 * MS)
      const seg: Segment = { conn: `${name}-${++n}`, connectingAt: t, openAt, ackAt, subscribedAt: ackAt + 20_000, endAt: Infinity }
      segs.push(seg)
      let next: Brk | undefined
      while (bi < brks.length) {
        const b = brks[bi]!
        if (b.kind === 'reconnect' && b.t <= seg.subscribedAt) { bi++; continue }
        if (b.kind === 'outage' && b.end <= t) { bi++; continue }
        next = b
        break
      }
      this.pushConnectEvents(r, seg, next ? next.t : Infinity)
      if (!next) break
      bi++
      seg.endAt = next.t
      if (next.kind === 'reconnect') {
        const code = next.inc.closeCode ?? 1006
        if (next.t < this.endRel) {
          if (code === 1006) {
            this.push(next.t, { kind: 'error', replica: name, connection: seg.conn, time: this.time(next.t), message: 'read ECONNRESET' })
            this.push(next.t + 1_000, { kind: 'closed', replica: name, connection: seg.conn, time: this.time(next.t + 1_000), reason: 'abnormal closure (1006): no close frame' })
          } else {
            this.push(next.t, { kind: 'closed', replica: name, connection: seg.conn, time: this.time(next.t), closeCode: code, reason: code === 1001 ? 'going away' : '' })
          }
        }
        t = next.t + Number(next.inc.pauseNs ?? 1_000_000_000n)
      } else {
        t = next.end + (r === 0 ? 0 : Math.round(rand() * 2 * MS))
      }
    }
    return segs
  }

  private pushConnectEvents(r: number, seg: Segment, cut: number): void {
    const name = this.replicaName(r)
    const lim = Math.min(cut, this.endRel)
    const c = seg.conn
    if (seg.connectingAt < lim) this.push(seg.connectingAt, { kind: 'connecting', replica: name, connection: c, time: this.time(seg.connectingAt) })
    if (seg.openAt < lim) this.push(seg.openAt, { kind: 'open', replica: name, connection: c, time: this.time(seg.openAt) })
    if (seg.ackAt < lim) this.push(seg.ackAt, this.frame(r, c, seg.ackAt, Buffer.from(ACK, 'latin1')))
    if (seg.subscribedAt < lim) this.push(seg.subscribedAt, { kind: 'subscribed', replica: name, connection: c, time: this.time(seg.subscribedAt), instruments: [...this.instruments] })
    if (this.channel === 'book') {
      // Binance's procedure: note the first update, then fetch the snapshot.
      for (let i = 0; i < this.instruments.length; i++) {
        const req = seg.subscribedAt + this.depthInterval + Math.round(20 * MS + this.recRandSetup() * 60 * MS)
        if (req < lim) this.addJob({ ts: req - this.hostOff[r]! + 2 * MS, r, ins: i, seg })
      }
    }
  }

  // Setup-time jobs draw from a stream of their own so that setup does not shift the recorder's stream.
  private setupJobRand: (() => number) | undefined
  private recRandSetup(): number {
    this.setupJobRand ??= seededRandom(hash32(this.seed, 5))
    return this.setupJobRand()
  }

  private addJob(j: SnapshotJob): void {
    const a = this.jobs
    let i = a.length
    while (i > 0 && a[i - 1]!.ts > j.ts) i--
    a.splice(i, 0, j)
  }

  private frame(r: number, connection: string, host: number, payload: Uint8Array): FrameEvent {
    const replica = this.replicaName(r)
    const receiveTime = this.time(host)
    // The daemon reports itself unsynchronised here: the receipt's clock is withheld (clock.ts).
    const u = this.unsynced[r]!
    for (let n = 0; n < u.length; n++) {
      if (host >= u[n]![0] && host < u[n]![1]) return { kind: 'frame', replica, connection, receiveTime, payload, binary: false }
    }
    const k = Math.floor((host - this.ntpPhase[r]!) / NTP_PERIOD)
    let sample = this.ntpSample[r]
    if (sample === undefined || k !== this.ntpK[r]) {
      const rnd = seededRandom(hash32(this.seed, 6, r, k))
      this.ntpK[r] = k
      const offset = BigInt(this.hostOff[r]! + Math.round((rnd() - 0.5) * 10_000))
      const rootDispersion = BigInt(20_000 + Math.round(rnd() * 80_000))
      const rootDelay = BigInt(500_000 + Math.round(rnd() * 1_500_000))
      const at = BigInt(this.ntpPhase[r]! + k * NTP_PERIOD)
      sample = { offset, rootDelay, rootDispersion, synchronized: true, nts: true, measuredAt: at, readAt: at }
      this.ntpSample[r] = sample
    }
    const clock = receiptClock(sample, BigInt(host))
    if ('withheld' in clock) return { kind: 'frame', replica, connection, receiveTime, payload, binary: false }
    return { kind: 'frame', replica, connection, receiveTime, payload, binary: false, clockOffset: clock.clockOffset, clockErrorBound: clock.clockErrorBound }
  }

  /** The segment of replica r subscribed at host time `host`, or null. */
  private live(r: number, host: number): Segment | null {
    const segs = this.segs[r]!
    let i = this.segIdx[r]!
    while (i < segs.length && segs[i]!.endAt <= host) i++
    this.segIdx[r] = i
    const s = segs[i]
    if (s === undefined || host <= s.subscribedAt || host >= s.endAt) return null
    return s
  }

  private epochMs(v: number): number {
    return this.sMs + Math.floor((this.sSub + v) / MS)
  }

  /** Deliver one venue frame sent at true time v to both replicas (or one). */
  private deliver(v: number, build: () => string, ins: number, seqKind: number, first: number, last: number): void {
    const nr = this.netRand
    const trueA = v + 1.5 * MS + nr() * MS
    const d = nr() < 0.85 ? 0.1 * MS + nr() * 1.9 * MS : -(0.1 * MS + nr() * 0.9 * MS)
    const trueB = trueA + d
    let miss = -1
    if (nr() < this.oneShare) miss = nr() < 0.5 ? 0 : 1
    let payload: Uint8Array | undefined
    for (let r = 0; r < 2; r++) {
      if (r === miss) continue
      let host = Math.round((r === 0 ? trueA : trueB) + this.hostOff[r]!)
      if (host <= this.lastHost[r]!) host = this.lastHost[r]! + 1
      if (host >= this.endRel) continue
      const seg = this.live(r, host)
      if (seg === null) continue
      this.lastHost[r] = host
      payload ??= Buffer.from(build(), 'latin1')
      this.push(host, this.frame(r, seg.conn, host, payload), ins, seqKind, first, last)
    }
  }

  private wrap(ins: number, suffix: string, data: string): string {
    return this.combined ? '{"stream":"' + this.lower[ins] + suffix + '","data":' + data + '}' : data
  }

  private gapSkip(ins: number, v: number): number {
    let skip = 0
    for (const g of this.gaps) {
      if (!g.done && g.ins === ins && v >= g.at) { g.done = true; skip += g.skip }
    }
    return skip
  }

  private tradeEvent(v: number): void {
    const vr = this.venueRand
    const ins = Math.floor(vr() * this.instruments.length)
    const spec = this.specs[ins]!
    const id = this.ids[ins]! + 1 + (this.gaps.length ? this.gapSkip(ins, v) : 0)
    this.ids[ins] = id
    const mv = vr()
    if (mv < 0.15) this.prices[ins]! -= spec.tick
    else if (mv > 0.85) this.prices[ins]! += spec.tick
    if (this.prices[ins]! < spec.tick) this.prices[ins] = spec.tick
    const price = this.prices[ins]!
    const u = vr()
    const qty = spec.lot * (1 + Math.floor(u * u * u * 5000))
    const m = vr() < 0.5
    const E = this.epochMs(v)
    const T = this.epochMs(v - Math.floor(vr() * 0.8 * MS))
    const s = this.instruments[ins]!
    this.deliver(v, () => this.wrap(ins, '@trade',
      '{"e":"trade","E":' + E + ',"s":"' + s + '","t":' + id + ',"p":"' + fmt8(price) + '","q":"' + fmt8(qty) +
      '","T":' + T + ',"m":' + m + ',"M":true}'), ins, 0, id, id)
  }

  private initBooks(): void {
    const vr = this.venueRand
    for (let i = 0; i < this.instruments.length; i++) {
      const spec = this.specs[i]!
      const mid = Math.round(spec.price / spec.tick)
      const bids = new Map<number, number>()
      const asks = new Map<number, number>()
      for (let k = 1; k <= this.snapshotDepth * 2; k++) {
        bids.set(mid - k, spec.lot * (1 + Math.floor(vr() * 3000)))
        asks.set(mid + k, spec.lot * (1 + Math.floor(vr() * 3000)))
      }
      this.books.push({ bids, asks, mid })
    }
  }

  private depthEvent(v: number, ins: number): void {
    const vr = this.venueRand
    const spec = this.specs[ins]!
    const book = this.books[ins]!
    const changes = [new Map<number, number>(), new Map<number, number>()]
    const mv = vr()
    if (mv < 0.05) {
      book.mid -= 1
      for (const p of book.bids.keys()) if (p >= book.mid) { book.bids.delete(p); changes[0]!.set(p, 0) }
    } else if (mv > 0.95) {
      book.mid += 1
      for (const p of book.asks.keys()) if (p <= book.mid) { book.asks.delete(p); changes[1]!.set(p, 0) }
    }
    const span = this.snapshotDepth * 2
    for (const side of [0, 1] as const) moveBookSide(side === 0 ? book.bids : book.asks, changes[side]!, side, book.mid, span, spec.lot, vr)
    const U = this.ids[ins]! + 1 + (this.gaps.length ? this.gapSkip(ins, v) : 0)
    const u = U + changes[0]!.size + changes[1]!.size + Math.floor(vr() * 20) - 1
    this.ids[ins] = u
    const E = this.epochMs(v)
    const s = this.instruments[ins]!
    const lv = (m: Map<number, number>): string => {
      let out = ''
      for (const [p, q] of m) out += (out ? ',' : '') + '["' + fmt8(p * spec.tick) + '","' + fmt8(q) + '"]'
      return '[' + out + ']'
    }
    const b = lv(changes[0]!)
    const a = lv(changes[1]!)
    this.deliver(v, () => this.wrap(ins, '@depth@100ms',
      '{"e":"depthUpdate","E":' + E + ',"s":"' + s + '","U":' + U + ',"u":' + u + ',"b":' + b + ',"a":' + a + '}'), ins, 1, U, u)
  }

  private snapshotJob(j: SnapshotJob): void {
    const host = Math.round(j.ts + MIN_SNAPSHOT_DELAY + this.netRand() * 12 * MS + this.hostOff[j.r]!)
    if (host >= j.seg.endAt || host >= this.endRel) return
    const ins = j.ins
    const book = this.books[ins]!
    const spec = this.specs[ins]!
    const L = this.ids[ins]!
    const side = (m: Map<number, number>, desc: boolean): string => {
      const keys = [...m.keys()].sort((x, y) => desc ? y - x : x - y).slice(0, this.snapshotDepth)
      return '[' + keys.map((p) => '["' + fmt8(p * spec.tick) + '","' + fmt8(m.get(p)!) + '"]').join(',') + ']'
    }
    const body = '{"lastUpdateId":' + L + ',"bids":' + side(book.bids, true) + ',"asks":' + side(book.asks, false) + '}'
    const payload = Buffer.from(wrapBinanceDepthSnapshot(this.instruments[ins]!, body), 'latin1')
    this.push(host, this.frame(j.r, j.seg.conn, host, payload), ins, 2, L, L)
  }

  /** The next venue event time (true time), with the trade/tick timers. */
  private nextTrade = 0
  private nextTick: number[] = []

  private computeNext(): number {
    let v = Infinity
    if (this.channel === 'trades') v = this.nextTrade
    else for (const t of this.nextTick) if (t < v) v = t
    const j = this.jobs[0]
    if (j && j.ts < v) v = j.ts
    return v
  }

  *run(): Generator<JournalEvent, void, undefined> {
    const meanGap = 1e9 / this.fps
    const vr = this.venueRand
    if (this.channel === 'trades') this.nextTrade = Math.round(-Math.log(1 - vr()) * meanGap)
    else this.nextTick = this.instruments.map((_, i) => Math.round(((i * 13 + 7) * MS + vr() * 5 * MS) % this.depthInterval))
    const minOff = Math.min(this.hostOff[0]!, this.hostOff[1]!)
    // Recorder-side state, per replica: current connection and sequence states per instrument.
    // Sequence states as numbers (ids stay far below 2^53 here): `last` NaN before the first frame, `first`
    // (the connection's first update id) NaN before the first update. The common case, an id that
    // continues the sequence, is decided here; every other case goes through binanceSequence, the rule
    // the adapter exports, so the simulator cannot drift from it.
    const lastId: Float64Array[] = [new Float64Array(0), new Float64Array(0)]
    const firstId: Float64Array[] = [new Float64Array(0), new Float64Array(0)]
    const pendingRefetch: Set<number>[] = [new Set(), new Set()]
    const curSeg: (Segment | undefined)[] = [undefined, undefined]
    const nIns = this.instruments.length
    let v = this.computeNext()
    for (;;) {
      const watermark = v + MIN_DELAY + minOff
      this.vnext = v
      // Pop everything that no future venue event can precede.
      for (;;) {
        const top = this.heap.peek()
        if (top === undefined || top.t >= watermark || top.t >= this.endRel) break
        this.heap.pop()
        const ev = top.ev
        const r = ev.replica === 'a' ? 0 : 1
        if (ev.kind === 'connecting') {
          lastId[r] = new Float64Array(nIns).fill(NaN)
          firstId[r] = new Float64Array(nIns).fill(NaN)
          pendingRefetch[r]!.clear()
          curSeg[r] = this.segs[r]!.find((s) => s.conn === ev.connection)
        }
        yield ev
        if (ev.kind !== 'frame' || top.ins < 0) continue
        const ins = top.ins
        if (top.seqKind === 2) pendingRefetch[r]!.delete(ins)
        if (this.breaks) {
          const verdict = this.sequenceStep(lastId[r]!, firstId[r]!, top)
          if (verdict !== null) {
            if (verdict.verdict === 'gap') {
              const br: SequenceBreakEvent = { kind: 'sequence-break', replica: ev.replica, connection: ev.connection, time: ev.receiveTime, instrument: this.instruments[ins]!, afterId: verdict.afterId, beforeId: verdict.beforeId }
              yield br
            }
            if (this.channel === 'book' && (verdict.verdict === 'gap' || verdict.verdict === 'snapshot-behind')) this.refetch(r, ins, top.t, curSeg[r], pendingRefetch[r]!)
          }
        }
        if (this.checksums.length === 0) continue
        for (const c of this.checksums) {
          if (c.done || c.r !== r || c.ins !== ins || top.t < c.at) continue
          c.done = true
          const cm: ChecksumMismatchEvent = { kind: 'checksum-mismatch', replica: ev.replica, connection: ev.connection, time: ev.receiveTime, instrument: this.instruments[ins]!, expected: c.expected, computed: c.computed }
          yield cm
          if (this.channel === 'book') this.refetch(r, ins, top.t, curSeg[r], pendingRefetch[r]!)
        }
      }
      if (watermark >= this.endRel || v === Infinity) break
      // Advance the venue by one event.
      const j = this.jobs[0]
      if (j && j.ts <= v) {
        this.jobs.shift()
        this.snapshotJob(j)
      } else if (this.channel === 'trades') {
        this.tradeEvent(v)
        this.nextTrade = v + Math.max(1, Math.round(-Math.log(1 - vr()) * meanGap))
      } else {
        let ins = 0
        for (let i = 1; i < nIns; i++) if (this.nextTick[i]! < this.nextTick[ins]!) ins = i
        this.depthEvent(v, ins)
        this.nextTick[ins] = v + this.depthInterval
      }
      v = this.computeNext()
    }
  }

  /**
   * Apply one frame's span to a replica's numeric sequence state; null in the common case (the id
   * continues the sequence, decided here), otherwise the verdict of binanceSequence.
   */
  private sequenceStep(lasts: Float64Array, firsts: Float64Array, e: Entry): SequenceVerdict | null {
    const ins = e.ins
    const prevLast = lasts[ins]!
    if (e.seqKind !== 2 && e.first === prevLast + 1) {
      lasts[ins] = e.last
      if (e.seqKind === 1 && Number.isNaN(firsts[ins]!)) firsts[ins] = e.first
      return null
    }
    const prev: SequenceState | undefined = Number.isNaN(prevLast) ? undefined
      : { last: BigInt(prevLast), streamFirst: Number.isNaN(firsts[ins]!) ? null : BigInt(firsts[ins]!) }
    const verdict = binanceSequence(prev, {
      sequence: e.seqKind === 0 ? 'trades' : 'book', instrument: this.instruments[ins]!,
      first: BigInt(e.first), last: BigInt(e.last), snapshot: e.seqKind === 2,
    })
    lasts[ins] = Number(verdict.state.last)
    firsts[ins] = verdict.state.streamFirst === null ? NaN : Number(verdict.state.streamFirst)
    return verdict
  }

  /** The recorder of replica r refetches the depth snapshot of `ins` after a gap (one request at a time). */
  private refetch(r: number, ins: number, host: number, seg: Segment | undefined, pending: Set<number>): void {
    if (seg === undefined || pending.has(ins)) return
    pending.add(ins)
    const ts = Math.max(Math.round(host - this.hostOff[r]! + 2 * MS + this.recRand() * 5 * MS), this.vnext)
    this.addJob({ ts, r, ins, seg })
  }
}

/**
 * A Binance venue over real sockets, for proving a recorder (docs/simulator.md): spot, or USD-M futures
 * (`venue: 'binance-usdm'`). An HTTP server on 127.0.0.1 serving websocket streams on `/ws` (raw) and
 * `/stream` (combined) (futures: under `/public` and `/market`), SUBSCRIBE and its friends, Binance's
 * keep-alive, and the REST depth snapshot on `/api/v3/depth` (futures: `/fapi/v1/depth`); deterministic
 * seeded data (binance-market.ts, binance-usdm-market.ts) on a clock the caller may inject or speed up; a
 * fault plan (faults.ts); and the truth of what it sent (truth.ts). What differs between the venues is in
 * dialects.ts; the rest is one implementation.
 *
 * Lean, because it shares two cores with a recorder at 25,000+ frames/s per replica: a step per timer tick
 * makes every frame due by the clock, builds each frame's text once per variant that has a subscriber,
 * frames it once as a websocket message and writes the same bytes to every subscribed socket, corked for
 * the step so that each connection gets one write per tick. A flood (`flood()`, for bench:record) goes
 * further: trades made in batches, each connection's batch one buffer and one write, paced by the sockets.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { WebSocket, WebSocketServer, type RawData } from 'ws'
import { Instrument, idsOf, type MarketEvent, type Mutation } from './binance-market.js'
import { DIALECTS, type Dialect } from './dialects.js'
import { SIMULATED_VENUES, parseFaultPlan, type Fault, type FaultPlanInput, type SimulatedVenue } from './faults.js'
import type { Market, Protocol, Session } from './protocol.js'
import { openTruth, type Truth, type TruthRecord } from './truth.js'

export interface VenueSimulatorOptions {
  /** The venue spoken: `binance` (spot, the default), `binance-usdm` (USD-M futures) or `kraken` (spot, WebSocket v2). */
  venue?: SimulatedVenue
  /** Default 0: any free port. The server listens on 127.0.0.1 only. */
  port?: number
  /** Default 1. The same seed and options make the same frames. */
  seed?: number
  /** The venue's symbols, default BTCUSDT and ETHUSDT (Kraken: BTC/USD and ETH/USD). */
  instruments?: string[]
  /** Trades per second on each `<symbol>@trade` stream (futures: aggregates on `<symbol>@aggTrade`), in simulated time (default 10). */
  rate?: number
  /** Simulated milliseconds between depth updates on `<symbol>@depth@100ms` (default 100). */
  depthIntervalMs?: number
  /** The simulated time, epoch milliseconds (fractions allowed). Default: real time, from `startTime`, `timeScale` times as fast. */
  clock?: () => number
  /** Where the default clock starts, epoch milliseconds (default now). */
  startTime?: number
  /** Simulated seconds per real second of the default clock (default 1). */
  timeScale?: number
  /** Real milliseconds between steps (default 5). */
  tickMs?: number
  /** Real milliseconds between the server's pings (default Binance's: spot 20,000, futures 180,000). */
  pingIntervalMs?: number
  /** Real milliseconds a ping may go unanswered before the connection is dropped (default Binance's: spot 60,000, futures 600,000). */
  pongTimeoutMs?: number
  /** Real milliseconds without a request after which a venue that wants them (Kraken) drops a connection (default the venue's: Kraken 60,000). */
  idleCloseMs?: number
  /**
   * Whether the venue keeps its connections alive in real time (default true): pings, idle closes, Deribit's
   * test requests, Coinbase's subscribe deadline. Off for a run on a manual clock that must make the same
   * frames every time (scripts/make-golden-venues.ts), since real time then decides nothing.
   */
  realTimeKeepAlive?: boolean
  /** Simulated milliseconds a connection may live before the venue closes it with 1001 (default 24 hours, Binance's). */
  maxConnectionMs?: number
  /** A connection whose unsent bytes pass this is dropped as a slow reader (default 64 MiB). */
  maxBufferedBytes?: number
  faults?: FaultPlanInput
  /** Write the truth to this file (JSON lines; it must not exist yet). */
  truthFile?: string
  /** Keep the truth in memory, as `truth` (default: when there is no `truthFile`). */
  keepTruth?: boolean
}

export interface ConnectionInfo { id: string; replica: string | null; path: string; streams: string[] }

export interface VenueSimulator {
  readonly venue: SimulatedVenue
  /** The websocket base, as an adapter's `wsBase` takes it: `ws://127.0.0.1:PORT` (streams on `/ws`, `/stream`; futures: `/public/…`, `/market/…`), Kraken's `ws://127.0.0.1:PORT/v2`. */
  readonly wsUrl: string
  /** The REST base, as an adapter's `restBase` takes it: `http://127.0.0.1:PORT`. */
  readonly restUrl: string
  readonly port: number
  /** When the simulation started, simulated epoch microseconds; fault times count from here. */
  readonly startUs: number
  /** The truth so far, when kept in memory. */
  readonly truth: readonly TruthRecord[]
  readonly stats: { readonly framesMade: number; readonly framesSent: number; readonly connectionsAccepted: number }
  /** The simulated time now, epoch microseconds. */
  nowUs(): number
  /** Makes and sends every frame due by the clock now (the timer does it every `tickMs`; a test moving a fake clock calls it). */
  tick(): void
  /** The open connections, in the order they were accepted. */
  connections(): ConnectionInfo[]
  /**
   * Sends `frames` trades (futures: aggregates), round robin over the instruments, as fast as the
   * subscribers of their trade streams take them, and resolves once all are written (docs/simulator.md,
   * "Flood"). Refused while faults of the plan are pending or a connection is stalled.
   */
  flood(frames: number, options?: FloodOptions): Promise<FloodResult>
  /** Closes every connection (1001) and the server, and finishes the truth file. */
  close(): Promise<void>
}

export interface FloodOptions {
  /**
   * Each frame sent by itself (`ws.send`: its own frame header and socket write), as a plain ws server
   * sends, rather than a batch's frames in one write. Slower: the sender's pace, not the receiver's, is
   * then the limit.
   */
  sendEach?: boolean
}

export interface FloodResult {
  frames: number
  /** Real seconds from the first batch to the last byte handed to the sockets. */
  seconds: number
  /** Process CPU seconds (user + system) the flood took. */
  cpuSeconds: number
}

/** A clock for tests: simulated epoch milliseconds that move only when told. */
export function manualClock(startMs: number): { now: () => number; advance: (ms: number) => void } {
  let ms = startMs
  return { now: () => ms, advance: (by) => { ms += by } }
}

/** Starts a simulator; resolves once it listens. */
export async function startVenueSimulator(options: VenueSimulatorOptions = {}): Promise<VenueSimulator> {
  const plan = parseFaultPlan(options.faults ?? { faults: [] })
  const truth = await openTruth(options.truthFile, options.keepTruth ?? options.truthFile === undefined)
  const sim = new Simulator(options, plan.faults, truth)
  await sim.listen(options.port ?? 0)
  return sim
}

const HOUR_MS = 3_600_000
const MAX_STEP_FRAMES = 20_000
/** A flood's batch: frames made and written together (one buffer a connection). */
const FLOOD_BATCH = 512
/** A flood waits for a socket holding more unsent bytes than this to drain. */
const FLOOD_HIGH_WATER = 1 << 20
const REST_JSON = { 'content-type': 'application/json;charset=UTF-8' }

/** One stream: its subscribers by variant, and the faults waiting for its next frame; `route` is the endpoint serving it. */
class Stream {
  readonly subs: Connection[][] = [[], [], [], []]
  armed: Armed[] = []
  /** The last frames sent, when the venue's snapshots repeat them (protocol.ts `recentTrades`). */
  readonly recent: MarketEvent[] = []
  constructor(readonly name: string, readonly route: string, readonly keepRecent: number) {}
  remember(ev: MarketEvent): void {
    if (this.keepRecent === 0) return
    this.recent.push(ev)
    if (this.recent.length > this.keepRecent) this.recent.shift()
  }
}

interface Armed { index: number; fault: Fault; firedUs: number; remaining: number; dropped: { first: number; last: number }[] }

/** What a stall holds back: a market frame (or a reply), and its truth record when the truth is kept. */
interface Held { frame: Buffer; reply: boolean; record: TruthRecord | null }
interface Stall { untilUs: number; then: 'resume' | 'drop' | 'close'; code: number; reason: string; held: Held[] }

class Connection {
  /** Every name subscribed, served or not (LIST_SUBSCRIPTIONS). */
  readonly names = new Set<string>()
  readonly streams = new Set<Stream>()
  stall: Stall | null = null
  /** Real time (performance.now) of the oldest unanswered ping, null when answered. */
  pingSentAt: number | null = null
  lastPingAt: number
  /** Real time (performance.now) of the client's last message. */
  lastRequestAt: number
  /** Simulated time of the last message the venue sent it (for heartbeats). */
  lastSentUs = 0
  /** Set once the venue closes it: it gets nothing more. */
  closing = false
  session!: Session
  constructor(
    readonly id: string, readonly number: number, readonly replica: string | null, readonly path: string,
    readonly ws: WebSocket, readonly socket: Duplex, public variant: number, readonly route: string,
  ) {
    this.lastPingAt = performance.now()
    this.lastRequestAt = this.lastPingAt
  }
  get open(): boolean { return !this.closing && this.ws.readyState === WebSocket.OPEN }
}

/** A scheduled source of frames: its next time, and what it makes then. */
class Schedule {
  nextUs: number
  private k = 0
  constructor(readonly order: number, private readonly firstUs: number, private readonly intervalUs: number, readonly make: (us: number, k: number) => void) {
    this.nextUs = firstUs
  }
  fire(): void {
    this.make(this.nextUs, this.k)
    this.k++
    // From the first time, not the previous one: no drift however long the run.
    this.nextUs = this.firstUs + Math.floor(this.k * this.intervalUs)
  }
}

/**
 * The header of an unmasked final text frame of `n` bytes, as Latin-1 characters (one per byte), for a
 * flood's batch strings: ASCII frame texts follow it unchanged.
 */
function frameHead(n: number): string {
  if (n < 126) return '\x81' + String.fromCharCode(n)
  if (n < 65536) return '\x81\x7e' + String.fromCharCode(n >> 8, n & 255)
  return '\x81\x7f\0\0\0\0' + String.fromCharCode(n >>> 24, (n >> 16) & 255, (n >> 8) & 255, n & 255)
}

/** Resolves when `socket` has written what it holds, or has closed. */
function drained(socket: Duplex): Promise<void> {
  if (socket.destroyed || socket.writableLength === 0) return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done)
      socket.off('close', done)
      resolve()
    }
    socket.on('drain', done)
    socket.on('close', done)
  })
}

/** A websocket text frame (FIN, unmasked, as a server sends) holding `text`: the same bytes for every connection. */
function textFrame(text: string): Buffer {
  const n = Buffer.byteLength(text)
  const head = n < 126 ? 2 : n < 65536 ? 4 : 10
  const frame = Buffer.allocUnsafe(head + n)
  frame[0] = 0x81
  if (n < 126) frame[1] = n
  else if (n < 65536) { frame[1] = 126; frame.writeUInt16BE(n, 2) }
  else { frame[1] = 127; frame.writeUInt32BE(0, 2); frame.writeUInt32BE(n, 6) }
  frame.write(text, head)
  return frame
}

class Simulator implements VenueSimulator {
  wsUrl = ''
  restUrl = ''
  port = 0
  readonly startUs: number
  readonly stats = { framesMade: 0, framesSent: 0, connectionsAccepted: 0 }
  readonly nowUs: () => number
  readonly venue: SimulatedVenue
  private readonly dialect: Dialect
  private readonly protocol: Protocol
  /** The dialect's text of a frame (dialects.ts). */
  private readonly text: Dialect['text']
  private readonly server: Server
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, autoPong: false, clientTracking: false, maxPayload: 64 * 1024 })
  private readonly instruments = new Map<string, Instrument>()
  private readonly streams = new Map<string, Stream>()
  /** Open connections, in the order accepted. */
  private readonly conns = new Set<Connection>()
  /** Frame sources, a binary heap on (nextUs, order). */
  private readonly schedules: Schedule[] = []
  /** Timed actions (faults by time, stall ends, 24-hour closes), sorted by (us, seq). */
  private readonly actions: { us: number; seq: number; run: () => void }[] = []
  private actionSeq = 0
  /** Faults by frame count, sorted by count. */
  private readonly frameFaults: { n: number; index: number; fault: Fault }[] = []
  private readonly pendingFaults = new Set<number>()
  /** The simulated time of what is happening now: the frame or action being made, or the clock between steps. */
  private clockUs: number
  private readonly recording: boolean
  private readonly timers: NodeJS.Timeout[] = []
  private pumping = false
  private closed: Promise<void> | undefined
  private readonly pingIntervalMs: number
  private readonly pongTimeoutMs: number
  private readonly idleCloseMs: number | undefined
  private readonly realTimeKeepAlive: boolean
  private readonly maxConnectionUs: number
  private readonly maxBufferedBytes: number
  private readonly tickMs: number

  constructor(o: VenueSimulatorOptions, private readonly faults: Fault[], private readonly truthSink: Truth) {
    if (o.clock && (o.timeScale !== undefined || o.startTime !== undefined)) throw new RangeError('give a clock, or startTime and timeScale for the default one, not both')
    this.venue = o.venue ?? 'binance'
    if (!SIMULATED_VENUES.includes(this.venue)) throw new RangeError(`no simulator for venue ${JSON.stringify(this.venue)}; the venues known: ${SIMULATED_VENUES.join(', ')}`)
    this.dialect = DIALECTS[this.venue]
    this.text = this.dialect.text
    const scale = o.timeScale ?? 1
    if (!(scale > 0)) throw new RangeError('timeScale must be positive')
    const clock = o.clock ?? realClock(o.startTime ?? Date.now(), scale)
    this.nowUs = () => Math.floor(clock() * 1000)
    this.startUs = this.nowUs()
    this.clockUs = this.startUs
    const seed = o.seed ?? 1
    const rate = o.rate ?? 10
    const depthIntervalMs = o.depthIntervalMs ?? 100
    if (!(rate > 0 && rate <= 1e6)) throw new RangeError('rate must be a number of frames per second in (0, 1,000,000]')
    if (!(depthIntervalMs >= 1)) throw new RangeError('depthIntervalMs must be at least 1')
    this.tickMs = o.tickMs ?? 5
    this.pingIntervalMs = o.pingIntervalMs ?? this.dialect.pingIntervalMs
    this.pongTimeoutMs = o.pongTimeoutMs ?? this.dialect.pongTimeoutMs
    this.maxConnectionUs = (o.maxConnectionMs ?? 24 * HOUR_MS) * 1000
    this.maxBufferedBytes = o.maxBufferedBytes ?? 64 * 2 ** 20
    for (const [name, v] of Object.entries({ tickMs: this.tickMs, pingIntervalMs: this.pingIntervalMs, pongTimeoutMs: this.pongTimeoutMs, maxConnectionMs: this.maxConnectionUs, maxBufferedBytes: this.maxBufferedBytes })) {
      if (!(v > 0)) throw new RangeError(`${name} must be positive`)
    }
    this.recording = o.truthFile !== undefined || (o.keepTruth ?? true)
    this.realTimeKeepAlive = o.realTimeKeepAlive ?? true

    const market: Market = {
      instruments: this.instruments,
      recent: (name) => this.streams.get(name)?.recent ?? [],
      nowUs: () => this.clockUs,
    }
    this.protocol = this.dialect.protocol(market)
    this.idleCloseMs = this.protocol.idleCloseMs === undefined ? undefined : o.idleCloseMs ?? this.protocol.idleCloseMs
    if (this.idleCloseMs !== undefined && !(this.idleCloseMs > 0)) throw new RangeError('idleCloseMs must be positive')
    const symbols = o.instruments ?? [...this.dialect.defaultInstruments]
    if (symbols.length === 0) throw new RangeError('no instruments')
    if (new Set(symbols).size !== symbols.length) throw new RangeError('duplicate instruments')
    const tradeUs = 1e6 / rate
    const depthUs = depthIntervalMs * 1000
    // Depth updates in each frame of <symbol>@depth: a second's on spot, 250 ms's on futures.
    const perAggregate = Math.max(1, Math.round(this.dialect.depthAggregateMs / depthIntervalMs))
    this.dialect.instruments(symbols, seed).forEach((ins, i) => {
      this.instruments.set(ins.symbol, ins)
      const trades = this.addStream(ins.tradeStream, this.protocol.recentTrades)
      const depth = this.addStream(ins.depthStream)
      const second = ins.depthSecondStream === null ? null : this.addStream(ins.depthSecondStream)
      // Instruments start apart within their first interval, so streams interleave rather than tick together.
      const phase = ((i + 1) * 0.618034) % 1
      const every = (intervalUs: number, make: (us: number, k: number) => void) => {
        this.schedules.push(new Schedule(this.schedules.length, this.startUs + 1 + Math.floor(phase * intervalUs), intervalUs, make))
      }
      every(tradeUs, (us) => this.emit(trades, ins.tradeEvent(us, tradeUs)))
      every(depthUs, (us, k) => {
        this.emit(depth, ins.nextDepth(us))
        if (second !== null && (k + 1) % perAggregate === 0) this.emit(second, ins.takeSecond(us))
      })
      for (const source of this.dialect.sources(ins)) {
        const stream = this.addStream(source.stream)
        every(source.intervalMs * 1000, (us) => {
          const ev = source.make(us)
          if (ev !== null) this.emit(stream, ev)
        })
      }
    })
    const heartbeat = this.protocol.heartbeat
    if (heartbeat) {
      this.schedules.push(new Schedule(this.schedules.length, this.startUs + heartbeat.everyUs, heartbeat.everyUs, (us) => this.heartbeats(us, heartbeat)))
    }
    this.schedules.sort(earlier)
    faults.forEach((fault, index) => {
      const refused = this.refusal(fault)
      if (refused !== null) throw new RangeError(`faults[${index}]: ${refused}`)
      this.pendingFaults.add(index)
      if (fault.afterFrames !== undefined) this.frameFaults.push({ n: fault.afterFrames, index, fault })
      else this.at(this.startUs + Math.round(fault.at! * 1000), () => this.fire(index, fault))
    })
    this.frameFaults.sort((x, y) => x.n - y.n || x.index - y.index)
    this.record({ kind: 'start', simTimeUs: this.startUs, venue: this.venue, seed, instruments: [...symbols], rate, depthIntervalMs })

    this.server = createServer((req, res) => this.onRequest(req, res))
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.onUpgrade(req, socket, head))
  }

  get truth(): readonly TruthRecord[] { return this.truthSink.records }

  async listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject)
      this.server.listen(port, '127.0.0.1', () => { this.server.off('error', reject); resolve() })
    })
    this.port = (this.server.address() as AddressInfo).port
    this.wsUrl = `ws://127.0.0.1:${this.port}${this.protocol.basePath}`
    this.restUrl = `http://127.0.0.1:${this.port}`
    this.timers.push(setInterval(() => this.pump(), this.tickMs))
    if (this.realTimeKeepAlive) this.timers.push(setInterval(() => this.keepAlive(), Math.max(5, Math.min(this.pingIntervalMs, this.pongTimeoutMs, this.idleCloseMs ?? Infinity, this.protocol.keepAlive ? 400 : Infinity) / 4)))
    this.truthSink.flush()
  }

  tick(): void {
    if (this.closed === undefined) this.step(Infinity)
  }

  connections(): ConnectionInfo[] {
    return [...this.conns].filter((c) => !c.closing).map((c) => ({ id: c.id, replica: c.replica, path: c.path, streams: [...c.names] }))
  }

  // ---------------------------------------------------------------------------------------------
  // Making frames

  /** The timer's step, in bounded batches: a simulator behind its clock lets sockets drain between them. */
  private pump(): void {
    if (this.pumping || this.closed !== undefined) return
    if (this.step(MAX_STEP_FRAMES)) return
    this.pumping = true
    setImmediate(() => { this.pumping = false; this.pump() })
  }

  /** Makes what is due by the clock, at most `budget` frames; true when caught up. */
  private step(budget: number): boolean {
    const now = this.nowUs()
    for (const c of this.conns) c.socket.cork()
    try {
      for (;;) {
        const next = this.schedules[0]!
        const action = this.actions[0]
        if (action !== undefined && action.us <= now && action.us <= next.nextUs) {
          this.actions.shift()
          this.clockUs = action.us
          action.run()
          continue
        }
        if (next.nextUs > now) {
          this.clockUs = now
          return true
        }
        if (budget-- <= 0) return false
        this.clockUs = next.nextUs
        next.fire()
        siftDown(this.schedules)
      }
    } finally {
      for (const c of this.conns) c.socket.uncork()
      this.dropSlowReaders()
      this.truthSink.flush()
    }
  }

  private emit(stream: Stream, ev: MarketEvent): void {
    this.stats.framesMade++
    if (stream.armed.length !== 0) this.emitWithFault(stream, ev)
    else {
      stream.remember(ev)
      const subs = stream.subs
      for (let v = 0; v < 4; v++) if (subs[v]!.length !== 0) this.broadcast(stream, ev, v, this.text(ev, stream.name, v))
    }
    while (this.frameFaults.length !== 0 && this.frameFaults[0]!.n <= this.stats.framesMade) {
      const due = this.frameFaults.shift()!
      this.fire(due.index, due.fault)
    }
  }

  /** Sends `text` to the subscribers of `variant` but `skip`: the hot path. */
  private broadcast(stream: Stream, ev: MarketEvent, variant: number, text: string, skip?: Connection): void {
    if (this.protocol.stamp !== undefined) {
      for (const conn of stream.subs[variant]!) if (conn !== skip && conn.ws.readyState === WebSocket.OPEN) this.sendOne(conn, stream.name, ev.us, text)
      return
    }
    const frame = textFrame(text)
    const to: string[] | null = this.recording ? [] : null
    for (const conn of stream.subs[variant]!) {
      if (conn === skip || conn.ws.readyState !== WebSocket.OPEN) continue
      if (conn.stall !== null) {
        this.hold(conn, frame, false, to && { kind: 'frame', simTimeUs: ev.us, stream: stream.name, to: [conn.id], text })
        continue
      }
      conn.socket.write(frame)
      conn.lastSentUs = ev.us
      this.stats.framesSent++
      to?.push(conn.id)
    }
    if (to !== null && to.length !== 0) this.record({ kind: 'frame', simTimeUs: ev.us, stream: stream.name, to, text })
  }

  /** Sends one frame of `stream` made at `us` to one connection (a fault's, or a snapshot on subscription), and records it. */
  private sendOne(conn: Connection, stream: string, us: number, made: string): void {
    const text = this.protocol.stamp?.(conn.session, made) ?? made
    const frame = textFrame(text)
    const record: TruthRecord | null = this.recording ? { kind: 'frame', simTimeUs: us, stream, to: [conn.id], text } : null
    if (conn.stall !== null) return this.hold(conn, frame, false, record)
    conn.socket.write(frame)
    conn.lastSentUs = us
    this.stats.framesSent++
    if (record) this.record(record)
  }

  /** The venue's heartbeat to each subscribed connection (protocol.ts: to those sent nothing for its interval, or to all). */
  private heartbeats(us: number, heartbeat: NonNullable<Protocol['heartbeat']>): void {
    for (const c of this.conns) {
      if (!c.open || c.names.size === 0 || (heartbeat.idleOnly && us - c.lastSentUs < heartbeat.everyUs)) continue
      const text = heartbeat.text(c.session, us)
      if (text !== null) this.reply(c, text)
    }
  }

  private hold(conn: Connection, frame: Buffer, reply: boolean, record: TruthRecord | null): void {
    if (conn.stall!.then === 'resume') conn.stall!.held.push({ frame, reply, record })
  }

  /**
   * The next frame of a stream with faults armed: a gap drops it (and stays armed for its count); otherwise the
   * first fault armed applies to it, and the others wait for the frames after.
   */
  private emitWithFault(stream: Stream, ev: MarketEvent): void {
    const gap = stream.armed.find((a) => a.fault.kind === 'gap')
    // Mark prices and liquidations carry no ids (and take no gap: faults.ts).
    const ids = idsOf(ev)
    if (gap !== undefined) {
      gap.dropped.push(ids!)
      if (--gap.remaining === 0) {
        stream.armed.splice(stream.armed.indexOf(gap), 1)
        this.faultDone(gap, true, { stream: stream.name, dropped: gap.dropped, armedUs: gap.firedUs })
      }
      return
    }
    stream.remember(ev)
    const armed = stream.armed.shift()!
    const f = armed.fault
    const subs = stream.subs
    const all = (mutation?: Mutation, skip?: Connection) => {
      for (let v = 0; v < 4; v++) if (subs[v]!.length !== 0) this.broadcast(stream, ev, v, this.text(ev, stream.name, v, mutation), skip)
    }
    const named = f.kind === 'gap' || f.kind === 'restart' ? undefined : f
    const targeted = named !== undefined && (named.replica !== undefined || named.connection !== undefined)
    const target = targeted ? this.target(named!) : undefined
    if (targeted && (target === undefined || !target.streams.has(stream))) {
      all()
      return this.faultDone(armed, false, { stream: stream.name, why: target === undefined ? 'no open connection is its target' : `${target.id} is not subscribed to ${stream.name}` })
    }
    const detail: Record<string, unknown> = { stream: stream.name, armedUs: armed.firedUs, ...ids }
    if (target) detail.conn = target.id
    switch (f.kind) {
      case 'only-one': {
        const text = this.text(ev, stream.name, target!.variant)
        this.sendOne(target!, stream.name, ev.us, text)
        detail.text = text
        detail.withheldFrom = [...this.conns].filter((c) => c !== target && c.streams.has(stream) && c.open).map((c) => c.id)
        break
      }
      case 'conflict': {
        all(undefined, f.replace ? target : undefined)
        detail.original = this.text(ev, stream.name, target!.variant)
        detail.text = this.text(ev, stream.name, target!.variant, 'conflict')
        detail.replace = f.replace
        this.sendOne(target!, stream.name, ev.us, detail.text as string)
        break
      }
      case 'unrepresentable': case 'checksum': {
        const mutation = f.kind === 'checksum' ? 'checksum' : f.variant
        if (target === undefined) all(mutation)
        else {
          all(undefined, target)
          this.sendOne(target, stream.name, ev.us, this.text(ev, stream.name, target.variant, mutation))
        }
        if (f.kind === 'unrepresentable') detail.variant = f.variant
        else detail.original = this.text(ev, stream.name, target?.variant ?? 0)
        detail.text = this.text(ev, stream.name, target?.variant ?? 0, mutation)
        break
      }
      default:
        all()
    }
    this.faultDone(armed, true, detail)
  }

  async flood(frames: number, options: FloodOptions = {}): Promise<FloodResult> {
    if (!(Number.isSafeInteger(frames) && frames > 0)) throw new RangeError('a flood is a positive whole number of frames')
    const stalled = [...this.conns].filter((c) => c.stall !== null).length
    if (this.pendingFaults.size !== 0 || stalled !== 0) throw new RangeError(`a flood does not mix with faults: ${this.pendingFaults.size} pending, ${stalled} connections stalled`)
    if (this.protocol.stamp !== undefined) throw new RangeError(`a flood writes each frame's bytes to every connection, and ${this.venue} numbers each connection's messages`)
    const trades = [...this.instruments.values()].map((ins) => ({ ins, stream: this.streams.get(ins.tradeStream)! }))
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    const out = new Map<Connection, string>()
    let made = 0
    while (made < frames && this.closed === undefined) {
      // What the clock has made due goes first, and the batch is made at the clock's time after it: ids
      // and times stay in order on every stream.
      this.step(Infinity)
      const us = this.clockUs
      for (const end = Math.min(frames, made + FLOOD_BATCH); made < end; made++) {
        const { ins, stream } = trades[made % trades.length]!
        const ev = ins.tradeEvent(us, 1)
        this.stats.framesMade++
        for (let v = 0; v < 4; v++) {
          const subs = stream.subs[v]!
          if (subs.length === 0) continue
          const text = this.text(ev, stream.name, v)
          const frame = options.sendEach ? '' : frameHead(text.length) + text
          const to: string[] | null = this.recording ? [] : null
          for (const conn of subs) {
            if (conn.ws.readyState !== WebSocket.OPEN) continue
            if (options.sendEach) conn.ws.send(text)
            else out.set(conn, (out.get(conn) ?? '') + frame)
            this.stats.framesSent++
            to?.push(conn.id)
          }
          if (to !== null && to.length !== 0) this.record({ kind: 'frame', simTimeUs: us, stream: stream.name, to, text })
        }
      }
      const full: Promise<void>[] = []
      // Frame texts are ASCII: Latin-1 writes the headers' bytes and the texts as they are.
      for (const [conn, batch] of out) conn.socket.write(Buffer.from(batch, 'latin1'))
      for (const conn of this.conns) if (conn.socket.writableLength > FLOOD_HIGH_WATER) full.push(drained(conn.socket))
      out.clear()
      this.truthSink.flush()
      // Without a full socket the loop still yields, so that pings, requests and closes are served.
      await (full.length !== 0 ? Promise.all(full) : new Promise((resolve) => setImmediate(resolve)))
    }
    for (const c of this.conns) await drained(c.socket)
    const cpu = process.cpuUsage(cpu0)
    return { frames: made, seconds: (performance.now() - t0) / 1000, cpuSeconds: (cpu.user + cpu.system) / 1e6 }
  }

  // ---------------------------------------------------------------------------------------------
  // Faults

  private at(us: number, run: () => void): void {
    const a = this.actions
    const entry = { us, seq: this.actionSeq++, run }
    let i = a.length
    while (i > 0 && a[i - 1]!.us > us) i--
    a.splice(i, 0, entry)
  }

  private fire(index: number, fault: Fault): void {
    const armed: Armed = { index, fault, firedUs: this.clockUs, remaining: fault.kind === 'gap' ? fault.count : 1, dropped: [] }
    switch (fault.kind) {
      case 'gap': case 'only-one': case 'conflict': case 'unrepresentable': case 'checksum': {
        const stream = this.streams.get(fault.stream)
        if (stream === undefined) return this.faultDone(armed, false, { why: `the simulator serves no stream ${fault.stream}` })
        stream.armed.push(armed)
        return
      }
      case 'restart': {
        const stream = this.streams.get(fault.stream)
        const ins = [...this.instruments.values()].find((i) => i.depthStream === fault.stream)
        if (stream === undefined || ins === undefined) return this.faultDone(armed, false, { why: `the simulator serves no stream ${fault.stream}` })
        const ev = this.dialect.restart!(ins, this.clockUs)
        this.faultDone(armed, true, { stream: fault.stream })
        if (ev !== null) this.emit(stream, ev)
        return
      }
      case 'disconnect': case 'stall': {
        const conn = this.target(fault)
        if (conn === undefined) return this.faultDone(armed, false, { why: 'no open connection is its target' })
        if (fault.kind === 'disconnect') {
          this.closeConnection(conn, fault.code, fault.reason, 'fault')
          return this.faultDone(armed, true, { conn: conn.id, code: fault.code, reason: fault.reason })
        }
        const untilUs = this.clockUs + Math.round(fault.durationMs * 1000)
        conn.stall = { untilUs, then: fault.then, code: fault.code, reason: fault.reason, held: [] }
        this.at(untilUs, () => this.endStall(conn))
        return this.faultDone(armed, true, { conn: conn.id, untilUs, then: fault.then })
      }
      case 'scheduled-disconnect': case 'server-shutdown': {
        const targets = fault.replica === undefined && fault.connection === undefined ? [...this.conns].filter((c) => c.open) : [this.target(fault)].filter((c) => c !== undefined)
        if (targets.length === 0) return this.faultDone(armed, false, { why: 'no open connection is its target' })
        if (fault.kind === 'scheduled-disconnect') {
          for (const c of targets) this.closeConnection(c, 1001, '', 'scheduled')
          return this.faultDone(armed, true, { conns: targets.map((c) => c.id), code: 1001, reason: '' })
        }
        const notice = this.protocol.shutdownNotice!(Math.floor(this.clockUs / 1000))
        for (const c of targets) this.reply(c, notice)
        const closeAtUs = this.clockUs + Math.round(fault.closeAfterMs * 1000)
        this.at(closeAtUs, () => { for (const c of targets) if (c.open) this.closeConnection(c, 1001, '', 'server shutdown') })
        return this.faultDone(armed, true, { conns: targets.map((c) => c.id), closeAtUs })
      }
    }
  }

  private faultDone(armed: Armed, applied: boolean, detail: Record<string, unknown>): void {
    this.pendingFaults.delete(armed.index)
    this.record({ kind: 'fault', simTimeUs: this.clockUs, index: armed.index, fault: armed.fault, applied, detail })
  }

  /** The connection a fault names: the N-th accepted, or the last opened with the label; open, or none. */
  private target(f: { replica?: string | undefined; connection?: number | undefined }): Connection | undefined {
    let found: Connection | undefined
    for (const c of this.conns) {
      if (!c.open) continue
      if (f.connection !== undefined ? c.number === f.connection : c.replica === f.replica) found = c
    }
    return found
  }

  private endStall(conn: Connection): void {
    const stall = conn.stall
    if (stall === null || conn.closing) return
    conn.stall = null
    // The keep-alive starts over: the stall sent no pings, and pongs to earlier ones do not count against it.
    conn.pingSentAt = null
    conn.lastPingAt = performance.now()
    if (stall.then === 'close') return this.closeConnection(conn, stall.code, stall.reason, 'stall')
    for (const h of stall.held) {
      conn.socket.write(h.frame)
      if (!h.reply) this.stats.framesSent++
      if (h.record) this.record({ ...h.record, sentUs: this.clockUs } as TruthRecord)
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Connections

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://localhost')
    const refuse = (status: string) => socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`)
    if (this.closed !== undefined) return void refuse('503 Service Unavailable')
    const opening = this.protocol.open(url)
    if (typeof opening === 'string') return void refuse(opening)
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const number = ++this.stats.connectionsAccepted
      const replica = url.searchParams.get('replica') ?? headerValue(req.headers['x-pipe-replica'])
      const conn = new Connection(`c${number}`, number, replica, url.pathname + url.search, ws, socket, opening.variant, opening.route)
      conn.session = {
        id: conn.id,
        get variant() { return conn.variant },
        names: conn.names,
        reply: (text) => this.reply(conn, text),
        send: (stream, text) => this.sendOne(conn, stream, this.clockUs, text),
        subscribe: (names) => this.subscribe(conn, names),
        unsubscribe: (names) => this.unsubscribe(conn, names),
        setVariant: (variant) => this.setVariant(conn, variant),
      }
      this.tick()
      this.conns.add(conn)
      this.record({ kind: 'open', simTimeUs: this.clockUs, conn: conn.id, replica: conn.replica, path: conn.path })
      ws.on('message', (data, isBinary) => this.onMessage(conn, data, isBinary))
      ws.on('pong', () => { conn.pingSentAt = null })
      ws.on('ping', (data) => { if (conn.stall === null && conn.open) ws.pong(data) })
      ws.on('error', () => {})
      ws.on('close', (code, reason) => this.onClose(conn, code, reason.toString()))
      this.protocol.opened?.(conn.session)
      if (opening.streams.length) this.subscribe(conn, opening.streams)
      this.at(this.clockUs + this.maxConnectionUs, () => { if (conn.open) this.closeConnection(conn, 1001, '', '24-hour limit') })
      this.truthSink.flush()
    })
  }

  private onClose(conn: Connection, code: number, reason: string): void {
    if (!this.conns.delete(conn)) return
    this.unsubscribeAll(conn)
    // The venue's own closes were recorded when made; this is the client's (or the network's).
    if (!conn.closing) {
      conn.closing = true
      this.tick()
      this.record({ kind: 'close', simTimeUs: this.clockUs, conn: conn.id, by: 'client', code, reason })
      this.truthSink.flush()
    }
  }

  /** The venue closes `conn`: 1006 ends the TCP connection without a close frame, any other code sends one. */
  private closeConnection(conn: Connection, code: number, reason: string, why: string): void {
    if (conn.closing) return
    conn.closing = true
    conn.stall = null
    this.unsubscribeAll(conn)
    this.record({ kind: 'close', simTimeUs: this.clockUs, conn: conn.id, by: 'venue', code, reason, why })
    if (code === 1006) {
      // end() sends what is written first, so that every frame the truth lists as sent arrives.
      conn.socket.end()
      setTimeout(() => conn.socket.destroy(), 2000).unref()
    } else {
      conn.ws.close(code, reason)
    }
  }

  private dropSlowReaders(): void {
    for (const c of this.conns) {
      if (c.closing || c.socket.writableLength <= this.maxBufferedBytes) continue
      c.closing = true
      this.unsubscribeAll(c)
      this.record({ kind: 'close', simTimeUs: this.clockUs, conn: c.id, by: 'venue', code: 1006, reason: '', why: `slow reader: over ${this.maxBufferedBytes} bytes unsent` })
      c.socket.destroy()
    }
  }

  private keepAlive(): void {
    const now = performance.now()
    const idleCloseMs = this.idleCloseMs
    for (const c of this.conns) {
      if (!c.open || c.stall !== null) continue
      if (idleCloseMs !== undefined && now - c.lastRequestAt >= idleCloseMs) {
        this.tick()
        this.closeConnection(c, 1006, '', `no request for ${idleCloseMs} ms`)
        this.truthSink.flush()
        continue
      }
      if (this.protocol.keepAlive?.(c.session, now) === 'close') {
        this.tick()
        this.closeConnection(c, 1006, '', 'the venue\'s keep-alive')
        this.truthSink.flush()
        continue
      }
      if (!this.protocol.serverPings) continue
      if (c.pingSentAt !== null && now - c.pingSentAt >= this.pongTimeoutMs) {
        this.tick()
        this.closeConnection(c, 1006, '', 'no pong')
        this.truthSink.flush()
        continue
      }
      if (now - c.lastPingAt >= this.pingIntervalMs) {
        c.ws.ping()
        c.lastPingAt = now
        c.pingSentAt ??= now
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Requests

  private onMessage(conn: Connection, data: RawData, isBinary: boolean): void {
    if (!conn.open) return
    conn.lastRequestAt = performance.now()
    // A request takes effect now: a subscription gets the frames made after it, not those due before.
    this.tick()
    this.protocol.message(conn.session, isBinary ? null : data.toString())
  }

  /** Sends a message of `conn` alone (a reply to a request, a notice, a heartbeat), and records it. */
  private reply(conn: Connection, made: string): void {
    const text = this.protocol.stamp?.(conn.session, made) ?? made
    const frame = textFrame(text)
    const record: TruthRecord | null = this.recording ? { kind: 'reply', simTimeUs: this.clockUs, to: conn.id, text } : null
    conn.lastSentUs = this.clockUs
    if (conn.stall !== null) this.hold(conn, frame, true, record)
    else {
      conn.socket.write(frame)
      if (record) this.record(record)
    }
    this.truthSink.flush()
  }

  private subscribe(conn: Connection, names: string[]): void {
    const added: string[] = []
    for (const name of names) {
      if (conn.names.has(name)) continue
      conn.names.add(name)
      added.push(name)
      // A stream another endpoint serves carries nothing here, as on Binance's futures (dialects.ts).
      const stream = this.streams.get(name)
      if (stream === undefined || stream.route !== conn.route) continue
      conn.streams.add(stream)
      stream.subs[conn.variant]!.push(conn)
    }
    if (added.length) this.record({ kind: 'subscribe', simTimeUs: this.clockUs, conn: conn.id, streams: added })
  }

  private unsubscribe(conn: Connection, names: string[]): void {
    const removed = names.filter((n) => conn.names.delete(n))
    for (const name of removed) {
      const stream = this.streams.get(name)
      if (stream === undefined || !conn.streams.delete(stream)) continue
      remove(stream.subs[conn.variant]!, conn)
    }
    if (removed.length) this.record({ kind: 'unsubscribe', simTimeUs: this.clockUs, conn: conn.id, streams: removed })
  }

  private unsubscribeAll(conn: Connection): void {
    for (const s of conn.streams) remove(s.subs[conn.variant]!, conn)
    conn.streams.clear()
  }

  private setVariant(conn: Connection, variant: number): void {
    for (const s of conn.streams) remove(s.subs[conn.variant]!, conn)
    conn.variant = variant
    for (const s of conn.streams) s.subs[variant]!.push(conn)
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://localhost')
    // An answer is of the market as the clock stands now: every frame due is made (and sent) first.
    this.tick()
    const { status, text } = this.protocol.rest(req.method ?? 'GET', url)
    this.record({ kind: 'rest', simTimeUs: this.clockUs, path: url.pathname + url.search, status, text })
    this.truthSink.flush()
    res.writeHead(status, REST_JSON).end(text)
  }

  private addStream(name: string, keepRecent = 0): Stream {
    const s = new Stream(name, this.dialect.routeOf(name), keepRecent)
    this.streams.set(name, s)
    return s
  }

  /** Why the venue cannot show `fault`, or null when it can. */
  private refusal(fault: Fault): string | null {
    const d = this.dialect
    if (fault.kind === 'checksum' && !d.checksums) return `${d.venue}'s books carry no checksum`
    if (fault.kind === 'restart' && d.restart === undefined) return `${d.venue} shows no restart of its book numbering`
    if (fault.kind === 'server-shutdown' && this.protocol.shutdownNotice === null) return `${d.venue} announces no server shutdown`
    if (fault.kind === 'unrepresentable') {
      if (fault.variant === 'price-number' && d.prices === 'number') return `${d.venue} writes prices as numbers: break one with price-string`
      if (fault.variant === 'price-string' && d.prices === 'string') return `${d.venue} writes prices as strings: break one with price-number`
    }
    return null
  }

  private record(r: TruthRecord): void {
    if (this.recording) this.truthSink.add(r)
  }

  close(): Promise<void> {
    this.closed ??= this.shutdown()
    return this.closed
  }

  private async shutdown(): Promise<void> {
    for (const t of this.timers) clearInterval(t)
    this.clockUs = this.nowUs()
    const open = [...this.conns]
    for (const c of open) this.closeConnection(c, 1001, 'simulator stopped', 'shutdown')
    for (const index of this.pendingFaults) {
      this.record({ kind: 'fault', simTimeUs: this.clockUs, index, fault: this.faults[index]!, applied: false, detail: { why: 'not due, or not met, before the simulator stopped' } })
    }
    // A client that does not answer the close frame within half a second is cut off.
    await Promise.all(open.map((c) => new Promise<void>((resolve) => {
      if (c.ws.readyState === WebSocket.CLOSED) return resolve()
      const timer = setTimeout(() => { c.socket.destroy(); resolve() }, 500)
      c.ws.once('close', () => { clearTimeout(timer); resolve() })
    })))
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
    await this.truthSink.close()
  }
}

function realClock(startMs: number, scale: number): () => number {
  const t0 = performance.now()
  return () => startMs + (performance.now() - t0) * scale
}

function earlier(a: Schedule, b: Schedule): number {
  return a.nextUs - b.nextUs || a.order - b.order
}

/** Restores the heap after its top's time moved later. */
function siftDown(h: Schedule[]): void {
  const n = h.length
  const top = h[0]!
  let i = 0
  for (;;) {
    let c = 2 * i + 1
    if (c >= n) break
    if (c + 1 < n && earlier(h[c + 1]!, h[c]!) < 0) c++
    if (earlier(top, h[c]!) <= 0) break
    h[i] = h[c]!
    i = c
  }
  h[i] = top
}

function remove<T>(list: T[], item: T): void {
  const i = list.indexOf(item)
  if (i >= 0) list.splice(i, 1)
}

/** A request header's one value (the recorder names its replica in X-Pipe-Replica), or null. */
function headerValue(v: string | string[] | undefined): string | null {
  return typeof v === 'string' && v !== '' ? v : null
}

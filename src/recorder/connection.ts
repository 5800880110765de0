/**
 * One replica's connection to a venue for one channel, and its successors: it connects, subscribes as the
 * venue adapter says, journals every frame with its receive time and clock fields, watches the venue's
 * sequences (a break is journaled as `sequence-break` after the frame that shows it), fetches the REST
 * snapshot a book needs after the first update of each instrument and after every break, and replaces
 * itself when the venue closes it, when it stalls, and before the venue's scheduled disconnect.
 *
 * What is journaled follows docs/journal.md: `connecting`, `open`, `subscribed` when the venue
 * acknowledges the subscription, every frame, `closed` (with the close code only when the venue closed the
 * connection with a close frame) and `error`. Frames are journaled in the order they arrive, and the journal
 * writes them in that order; nothing received is dropped, whatever it holds: a frame the adapter cannot read
 * is journaled like any other, and the sealer lists it as unrepresentable.
 */
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import WebSocket from 'ws'
import { VERSION } from '../core/version.js'
import type { Channel, JournalEvent, Replica } from '../formats/record/types.js'
import type { FrameClass, SequenceState, VenueAdapter } from '../venues/adapter.js'
import type { RecorderClock } from './clock/index.js'

/** The clock a connection stamps frames with (./clock): now, and the fields of a receipt read then. */
export type FrameClock = Pick<RecorderClock, 'now' | 'receiptClock'>

/** Where a connection's events go: the journal, and what the daemon counts and logs. */
export interface ConnectionSink {
  journal(event: JournalEvent): void
  log(level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>): void
  /** A frame journaled: its bytes, and whether clock fields were withheld. */
  frame?(replica: Replica, channel: Channel, bytes: number, withheld: boolean): void
  reconnect?(replica: Replica, channel: Channel): void
  gap?(replica: Replica, channel: Channel, instrument: string): void
  checksumFailure?(replica: Replica, channel: Channel, instrument: string): void
  state?(replica: Replica, channel: Channel, subscribed: boolean): void
}

export interface ConnectionOptions {
  replica: Replica
  channel: Channel
  venue: VenueAdapter
  instruments: readonly string[]
  clock: FrameClock
  sink: ConnectionSink
  /** Names this process's connections apart from an earlier process's (journal connection ids). */
  processTag: string
  /** No frame and no ping for this long: the connection has stalled and is replaced (default 60 s). */
  stallMs?: number
  /** Open the successor this long before the venue's scheduled disconnect (Binance: 24 h) (default 23 h 50 min). */
  rotateAfterMs?: number
  /** Reconnect backoff: first wait and cap (defaults 250 ms, 30 s), doubled per failure, with ±50% jitter. */
  backoffMs?: { first: number; max: number }
  /** The largest frame accepted (default 16 MiB, the journal's payload limit). */
  maxPayload?: number
}

const DEFAULTS = { stallMs: 60_000, rotateAfterMs: (24 * 60 - 10) * 60_000, backoffFirstMs: 250, backoffMaxMs: 30_000, maxPayload: 16 * 2 ** 20 - 64 * 1024 }

/** A connection that ran this long without trouble resets the backoff. */
const HEALTHY_MS = 60_000

/**
 * The connections of one replica and channel. At most two are open at once: the current one, and its
 * successor while it subscribes before the venue's scheduled disconnect.
 */
export class ReplicaChannel {
  private seq = 0
  private current: VenueConnection | null = null
  private successor: VenueConnection | null = null
  private failures = 0
  private retry: NodeJS.Timeout | null = null
  private stopped = false
  private paused = false
  /** Why the successor under way was opened: the close reason of the connection it replaces. */
  private rotation = ''

  constructor(private readonly o: ConnectionOptions) {}

  /**
   * Stops reading from the venue (the journal is behind): frames wait in the sockets' buffers and the TCP
   * window, so the venue slows down or drops the connection, rather than this process growing without bound.
   */
  pause(): void {
    this.paused = true
    this.current?.pause()
    this.successor?.pause()
  }

  resume(): void {
    this.paused = false
    this.current?.resume()
    this.successor?.resume()
  }

  start(): void {
    this.current = this.open()
  }

  /** Whether a connection is subscribed now. */
  get subscribed(): boolean {
    return (this.current?.subscribed ?? false) || (this.successor?.subscribed ?? false)
  }

  /** Closes every connection (code 1000) and journals their close; resolves when they are closed. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.retry) clearTimeout(this.retry)
    await Promise.all([this.current?.close(1000, 'recorder stopping'), this.successor?.close(1000, 'recorder stopping')])
  }

  private open(): VenueConnection {
    const id = `${this.o.replica}-${this.o.channel}-${this.o.processTag}-${++this.seq}`
    const c = new VenueConnection(id, this.o, {
      subscribed: () => this.onSubscribed(c),
      ended: (healthy) => this.onEnded(c, healthy),
      rotate: (why) => this.onRotate(c, why),
    })
    if (this.paused) c.pause()
    return c
  }

  private onSubscribed(c: VenueConnection): void {
    this.failures = 0
    this.o.sink.state?.(this.o.replica, this.o.channel, true)
    // The successor is up: the connection it replaces closes now, so that the replica was covered throughout.
    if (c === this.successor) {
      const old = this.current
      this.current = c
      this.successor = null
      void old?.close(1000, `replaced before ${this.rotation}`)
    }
  }

  private onRotate(c: VenueConnection, why: string): void {
    if (this.stopped || c !== this.current || this.successor) return
    this.o.sink.log('info', `opening the successor before ${why}`, { replica: this.o.replica, channel: this.o.channel, connection: c.id })
    this.rotation = why
    this.successor = this.open()
  }

  private onEnded(c: VenueConnection, healthy: boolean): void {
    if (c === this.successor) this.successor = null
    if (c !== this.current) return
    this.current = this.successor
    this.successor = null
    if (this.current) return
    this.o.sink.state?.(this.o.replica, this.o.channel, false)
    if (this.stopped) return
    this.failures = healthy ? 0 : this.failures + 1
    const first = this.o.backoffMs?.first ?? DEFAULTS.backoffFirstMs
    const max = this.o.backoffMs?.max ?? DEFAULTS.backoffMaxMs
    const wait = Math.min(max, first * 2 ** Math.min(this.failures, 20)) * (0.5 + Math.random())
    this.o.sink.reconnect?.(this.o.replica, this.o.channel)
    this.o.sink.log('warn', 'connection ended; reconnecting', { replica: this.o.replica, channel: this.o.channel, connection: c.id, wait_ms: Math.round(wait) })
    this.retry = setTimeout(() => {
      this.retry = null
      if (!this.stopped && !this.current) this.current = this.open()
    }, wait)
  }
}

interface Owner {
  subscribed(): void
  ended(healthy: boolean): void
  /** Open this connection's successor and close it once the successor is subscribed; `why` goes in the close frame. */
  rotate(why: string): void
}

/** One websocket connection, from `connecting` to `closed`. */
class VenueConnection {
  subscribed = false
  private readonly ws: WebSocket
  private readonly plan
  private readonly sequences = new Map<string, SequenceState>()
  /** The venue's book checksums are recomputed on this connection's own books (venues that send them). */
  private readonly books: unknown
  /** Instruments whose book waits for a snapshot: it is fetched once per wait. */
  private readonly snapshotWanted = new Set<string>()
  /** Instruments whose book the venue was asked to resend on this connection, until its snapshot comes. */
  private readonly resyncing = new Set<string>()
  private readonly snapshotsInFlight = new Set<string>()
  private lastActivity = performance.now()
  private readonly openedAt = performance.now()
  private readonly timers: NodeJS.Timeout[] = []
  private ended = false
  private paused = false
  /** The recorder sent the first close frame: the venue's close frame then only echoes the recorder's code. */
  private closedByRecorder = false
  private readonly closed: Promise<void>
  private resolveClosed!: () => void

  constructor(readonly id: string, private readonly o: ConnectionOptions, private readonly owner: Owner) {
    this.closed = new Promise((r) => (this.resolveClosed = r))
    this.plan = o.venue.connect(o.channel, o.instruments)
    this.books = o.venue.books?.create()
    this.event({ kind: 'connecting', replica: o.replica, connection: id, time: o.clock.now().receiveTime })
    // X-Pipe-Replica names the replica to a venue simulator (docs/simulator.md); a venue ignores it.
    this.ws = new WebSocket(this.plan.url, { perMessageDeflate: false, maxPayload: o.maxPayload ?? DEFAULTS.maxPayload, handshakeTimeout: 10_000, headers: { 'User-Agent': `pipe/${VERSION}`, 'X-Pipe-Replica': o.replica } })
    this.ws.on('open', () => this.onOpen())
    this.ws.on('message', (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary))
    this.ws.on('ping', () => { this.lastActivity = performance.now() })
    this.ws.on('error', (err) => this.onError(err))
    this.ws.on('close', (code: number, reason: Buffer) => this.onClose(code, reason))
    // A venue that may be silent longer (a quiet stream between its pings) gets that, and a fifth more.
    const stallMs = Math.max(o.stallMs ?? DEFAULTS.stallMs, (this.plan.silenceMs ?? 0) * 1.2)
    this.timers.push(setInterval(() => this.checkStall(stallMs), Math.min(1000, stallMs / 4)))
    this.timers.push(setTimeout(() => this.owner.rotate('the venue\'s scheduled disconnect'), o.rotateAfterMs ?? DEFAULTS.rotateAfterMs))
    for (const t of this.timers) t.unref()
  }

  pause(): void {
    this.paused = true
    this.ws.pause()
  }

  resume(): void {
    this.paused = false
    // A paused connection reads nothing, pings included: its silence is not a stall.
    this.lastActivity = performance.now()
    this.ws.resume()
  }

  /** Closes the connection (a client close frame with `code`); resolves once it is closed and journaled. */
  close(code: number, reason: string): Promise<void> {
    if (!this.ended) {
      if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) {
        this.closedByRecorder = true
        this.ws.close(code, reason)
      }
      // A peer that does not answer the close handshake is cut off.
      const cut = setTimeout(() => this.ws.terminate(), 2000)
      cut.unref()
      void this.closed.then(() => clearTimeout(cut))
    }
    return this.closed
  }

  private event(e: JournalEvent): void {
    this.o.sink.journal(e)
  }

  private time(): bigint {
    return this.o.clock.now().receiveTime
  }

  private onOpen(): void {
    this.lastActivity = performance.now()
    // Paused before it opened, when pausing the socket is not yet possible.
    if (this.paused) this.ws.pause()
    this.event({ kind: 'open', replica: this.o.replica, connection: this.id, time: this.time() })
    const keepAlive = this.plan.keepAlive
    if (keepAlive) {
      const ping = setInterval(() => { if (this.ws.readyState === WebSocket.OPEN && !this.paused) this.ws.send(keepAlive.text) }, keepAlive.everyMs)
      ping.unref()
      this.timers.push(ping)
    }
    for (const text of this.plan.send) this.ws.send(text)
    if (this.plan.send.length === 0) this.onSubscribed(this.time())
  }

  private onSubscribed(time: bigint): void {
    this.subscribed = true
    this.event({ kind: 'subscribed', replica: this.o.replica, connection: this.id, time, instruments: [...this.o.instruments] })
    // Every (re)subscription starts the book anew: each instrument needs a snapshot joining its updates.
    if (this.o.venue.snapshotRequest(this.o.channel, this.o.instruments[0]!) !== null) for (const i of this.o.instruments) this.snapshotWanted.add(i)
    this.owner.subscribed()
  }

  private onMessage(data: Buffer, binary: boolean): void {
    // The frame is whole here (ws has reassembled it): its receive time is read first, before anything else.
    const reading = this.o.clock.now()
    const receiveTime = reading.receiveTime
    const clock = this.o.clock.receiptClock(reading)
    this.lastActivity = performance.now()
    const withheld = 'withheld' in clock
    this.event({ kind: 'frame', replica: this.o.replica, connection: this.id, receiveTime, payload: data, binary, ...(withheld ? {} : { clockOffset: clock.clockOffset, clockErrorBound: clock.clockErrorBound }) })
    this.o.sink.frame?.(this.o.replica, this.o.channel, data.byteLength, withheld)
    const answer = this.plan.respond?.(data)
    if (answer != null && this.ws.readyState === WebSocket.OPEN) this.ws.send(answer)
    if (!this.subscribed) {
      const answer = this.plan.answers(data)
      if (answer === 'subscribed') this.onSubscribed(receiveTime)
      else if (answer === 'refused') {
        this.o.sink.log('error', 'the venue refused the subscription', { replica: this.o.replica, channel: this.o.channel, connection: this.id, reply: data.subarray(0, 300).toString('utf8') })
        void this.close(1000, 'subscription refused')
      }
      return
    }
    this.track(data, binary, receiveTime)
  }

  /** The venue's sequences on this connection: a break is journaled after the frame that shows it. */
  private track(data: Buffer, binary: boolean, receiveTime: bigint): void {
    const c = this.o.venue.classify(this.o.channel, data, binary)
    if (c.kind === 'control' && c.closing) {
      this.o.sink.log('info', 'the venue announced it will close the connection', { replica: this.o.replica, channel: this.o.channel, connection: this.id, note: c.note })
      this.owner.rotate('the venue announced a server shutdown')
      return
    }
    // A book resent: it may be asked for again. (Not every venue numbers its books: the rows name them.)
    if (c.kind === 'rows' && c.table === 'book_snapshots' && this.resyncing.size > 0) for (const row of c.rows) this.resyncing.delete(row.instrument)
    if (c.kind === 'rows' && this.o.venue.books && (c.table === 'book_snapshots' || c.table === 'book_deltas')) this.checkBooks(c, data, receiveTime)
    const spans = c.kind === 'rows' || c.kind === 'data' ? c.sequences : c.kind === 'unrepresentable' ? (c.sequences ?? []) : []
    for (const span of spans) {
      const key = `${span.sequence}:${span.instrument}`
      const v = this.o.venue.sequence(this.sequences.get(key), span)
      this.sequences.set(key, v.state)
      if (v.verdict === 'gap') {
        this.event({ kind: 'sequence-break', replica: this.o.replica, connection: this.id, time: receiveTime, instrument: span.instrument, afterId: v.afterId, beforeId: v.beforeId })
        this.o.sink.gap?.(this.o.replica, this.o.channel, span.instrument)
        if (span.sequence === 'book') this.renewBook(span.instrument, 'a gap in the book\'s sequence')
      } else if (v.verdict === 'snapshot-behind') {
        this.snapshotWanted.add(span.instrument)
      }
      // The snapshot is fetched once an update has come, so that it can join the update stream.
      if (span.sequence === 'book' && !span.snapshot && this.snapshotWanted.has(span.instrument)) this.fetchSnapshot(span.instrument)
    }
  }

  /**
   * Recomputes the venue's checksums on this connection's books. A mismatch is journaled after the frame
   * that shows it, the instrument's book is forgotten, and the venue is asked to send it anew (or, when it
   * cannot be, the connection is replaced): what follows is checked against a book built again.
   */
  private checkBooks(c: Extract<FrameClass, { kind: 'rows' }>, data: Buffer, receiveTime: bigint): void {
    const books = this.o.venue.books!
    for (const check of books.apply(this.books, c, data)) {
      if (check.expected === check.computed) continue
      this.event({ kind: 'checksum-mismatch', replica: this.o.replica, connection: this.id, time: receiveTime, instrument: check.instrument, expected: check.expected, computed: check.computed })
      this.o.sink.checksumFailure?.(this.o.replica, this.o.channel, check.instrument)
      books.reset(this.books, check.instrument)
      this.o.sink.log('warn', 'book checksum mismatch', { replica: this.o.replica, channel: this.o.channel, connection: this.id, instrument: check.instrument, expected: check.expected, computed: check.computed })
      this.renewBook(check.instrument, 'a checksum mismatch')
    }
  }

  /**
   * Gets a book that can no longer be trusted sent anew: by the venue's REST snapshot (fetched with the next
   * update), else by the frames that make the venue resend it on this connection (once until its snapshot
   * comes), else, and for a sequence that spans the whole connection (no one instrument's), by replacing the
   * connection, whose subscription brings every book anew.
   */
  private renewBook(instrument: string, why: string): void {
    const fields = { replica: this.o.replica, channel: this.o.channel, connection: this.id, instrument, why }
    if (this.o.venue.snapshotRequest(this.o.channel, instrument) !== null) {
      this.snapshotWanted.add(instrument)
      return
    }
    const resync = this.o.instruments.includes(instrument) ? this.plan.resync?.(instrument) : undefined
    if (resync === undefined) {
      this.o.sink.log('warn', 'the book cannot be asked for again on this connection; replacing it', fields)
      this.ws.terminate()
      return
    }
    if (this.resyncing.has(instrument)) return
    this.resyncing.add(instrument)
    this.o.sink.log('warn', 'asking the venue for the book again', fields)
    for (const text of resync) this.ws.send(text)
  }

  private fetchSnapshot(instrument: string): void {
    if (this.snapshotsInFlight.has(instrument)) return
    const req = this.o.venue.snapshotRequest(this.o.channel, instrument)
    if (!req) return
    this.snapshotWanted.delete(instrument)
    this.snapshotsInFlight.add(instrument)
    fetchText(req.url).then(
      (body) => {
        this.snapshotsInFlight.delete(instrument)
        if (this.ended) return
        // Journaled as a frame of this connection, received when the whole body is held (onMessage reads the time).
        this.onMessage(Buffer.from(this.o.venue.wrapSnapshot(this.o.channel, instrument, body), 'utf8'), false)
      },
      (err: Error) => {
        this.snapshotsInFlight.delete(instrument)
        if (this.ended) return
        this.event({ kind: 'error', replica: this.o.replica, connection: this.id, time: this.time(), message: `depth snapshot of ${instrument}: ${err.message}` })
        this.o.sink.log('warn', 'snapshot request failed; asking again with the next update', { replica: this.o.replica, instrument, error: err.message })
        this.snapshotWanted.add(instrument)
      },
    )
  }

  private checkStall(stallMs: number): void {
    if (this.ended || this.paused || performance.now() - this.lastActivity <= stallMs) return
    this.event({ kind: 'error', replica: this.o.replica, connection: this.id, time: this.time(), message: `stalled: no frame and no ping for ${stallMs} ms` })
    this.o.sink.log('warn', 'connection stalled; replacing it', { replica: this.o.replica, channel: this.o.channel, connection: this.id })
    this.ws.terminate()
  }

  private onError(err: Error): void {
    this.event({ kind: 'error', replica: this.o.replica, connection: this.id, time: this.time(), message: err.message })
    // ws closes the connection after an error (a frame over maxPayload: 1009): the close is journaled and logged next.
    this.o.sink.log('warn', 'connection error', { replica: this.o.replica, channel: this.o.channel, connection: this.id, error: err.message })
  }

  private onClose(code: number, reason: Buffer): void {
    if (this.ended) return
    this.ended = true
    for (const t of this.timers) clearTimeout(t)
    // 1005 (no status) and 1006 (no close frame) are never sent in a close frame: the journal gets no code.
    // Nor does a close the recorder began: a reconnect window's close_code states a close the venue made.
    const sent = !this.closedByRecorder && code !== 1005 && code !== 1006
    this.event({ kind: 'closed', replica: this.o.replica, connection: this.id, time: this.time(), ...(sent ? { closeCode: code } : {}), ...(sent && reason.length > 0 ? { reason: reason.toString('utf8') } : {}) })
    this.subscribed = false
    this.resolveClosed()
    this.owner.ended(performance.now() - this.openedAt >= HEALTHY_MS)
  }
}

/** GET `url` and its whole body as text; refuses a status other than 200 and a body over 64 MiB. */
function fetchText(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const get = url.startsWith('https:') ? httpsRequest : httpRequest
    const req = get(url, { method: 'GET', timeout: 10_000 }, (res) => {
      if (res.statusCode !== 200) {
        res.resume()
        reject(new Error(`HTTP ${res.statusCode} from ${url}`))
        return
      }
      const chunks: Buffer[] = []
      let bytes = 0
      res.on('data', (c: Buffer) => {
        bytes += c.length
        if (bytes > 64 * 2 ** 20) req.destroy(new Error(`the response from ${url} is larger than 64 MiB`))
        else chunks.push(c)
      })
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(new Error(`no response from ${url} in 10 s`)))
    req.on('error', reject)
    req.end()
  })
}

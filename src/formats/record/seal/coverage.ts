import type { GapFreeRun, ReconnectWindow } from '../manifest.js'
import { formatTime } from '../time.js'
import { eventTime, type JournalEvent, type Replica } from '../types.js'

interface Run { start: bigint }
interface Connection {
  subscribed: boolean
  instruments: string[]
  /** Receive time of the connection's latest frame. */
  lastFrame: bigint | null
  runs: Map<string, Run>
}

/** Why a replica recorded nothing over a stretch of the hour. */
export type UncoveredReason =
  /** Its connections were closed and it was connecting again (a reconnect window). */
  | 'reconnect'
  /** Its journal could not be written (a destination-unavailable record says so). */
  | 'destination'
  /** It was not running: no connection, a silence longer than its liveness allows, or a restart. */
  | 'down'

export interface UncoveredStretch { start: bigint; end: bigint; reason: UncoveredReason }

/** What one replica's events say about its hour: coverage, reconnect windows and gap-free runs. */
export interface ReplicaCoverage {
  replica: Replica
  coveredNs: bigint
  reconnectWindows: ReconnectWindow[]
  gapFreeRuns: GapFreeRun[]
  /** The stretches of the hour the replica did not cover, in order, each with why. */
  uncovered: UncoveredStretch[]
}

type Span = [bigint, bigint]

/**
 * A replica counts as running while the gap between two of its records is at most this many heartbeat
 * intervals (a recorder writes a heartbeat once it has journaled nothing for one interval).
 */
export const LIVENESS_INTERVALS = 2n

/**
 * Follows one replica's events through an hour, in receive-time order, and derives what the hourly
 * manifest states about it. Events before the hour (the journal restates the state at the start of each
 * hour file, and the sealer reads the previous hour's last pairing window) set the state the hour starts
 * in. The rules, as docs/record-format-notes.md reads the spec ("Hourly manifest"):
 * - covered: at least one connection of the replica is subscribed, and the replica is running;
 * - running: once a `recorder-start` states a heartbeat interval (the journal restates it at the top of
 *   each hour file), every gap of more than {@link LIVENESS_INTERVALS} intervals between two records (or
 *   before the hour's end) is a stretch in which the replica was down, from 1 ns after its last record; a
 *   journal without `recorder-start` (format version 1) is trusted as it stands;
 * - a `recorder-start` that is not restated ends every connection from before it (the previous process
 *   is gone), 1 ns after the replica's last record: the stretch until a new subscription is down, not a
 *   reconnect window;
 * - a `destination-unavailable` record marks its stretch uncovered, for that reason;
 * - a reconnect window runs from the close of the replica's last subscribed connection until a connection
 *   is subscribed again (or the hour ends, or the process is restarted), with the close frame's status
 *   code when the venue sent one; a window open at the hour's start keeps its code;
 * - a gap-free run (trades) covers one instrument on one connection from its subscription (or from where
 *   the previous run's break was detected) to 1 ns after the connection's last frame before the breaking
 *   event (disconnection, restart, sequence break, checksum failure, resubscription, or the replica falling
 *   silent until the hour's end), or to the hour's end; a run with no frame of the connection in it states
 *   nothing and is left out.
 */
export class CoverageTracker {
  private readonly connections = new Map<string, Connection>()
  private readonly windows: ReconnectWindow[] = []
  private readonly runs: GapFreeRun[] = []
  /** Stretches in which a connection was subscribed, before silences and lost writes are taken out. */
  private readonly subscribedSpans: Span[] = []
  private readonly reconnecting: Span[] = []
  private readonly silent: Span[] = []
  private readonly lost: Span[] = []
  /** When the replica last became covered (a connection subscribed), or null while uncovered. */
  private coveredSince: bigint | null = null
  /** The reconnect window in progress: its start and the close code it follows. */
  private window: { start: bigint; closeCode?: number } | null = null
  /** The time of the replica's latest record that was not a restatement. */
  private lastSeen: bigint | null = null
  /**
   * The longest gap between two records of a running replica ({@link LIVENESS_INTERVALS} heartbeat
   * intervals), once a recorder-start states the interval; kept as a product, not made again per frame.
   */
  private longestRunningSilenceNs: bigint | null = null
  /**
   * The replica's first record after the hour (not a restatement), and whether it starts a new process;
   * time null when the journal holds none.
   */
  private next: { time: bigint | null; restart: boolean } | null = null

  constructor(
    readonly replica: Replica,
    private readonly hourStart: bigint,
    private readonly hourEnd: bigint,
    private readonly tracksRuns: boolean,
  ) {}

  private clip(t: bigint): bigint {
    return t < this.hourStart ? this.hourStart : t > this.hourEnd ? this.hourEnd : t
  }

  private get anySubscribed(): boolean {
    for (const c of this.connections.values()) if (c.subscribed) return true
    return false
  }

  private endRun(connection: string, conn: Connection, instrument: string): void {
    const run = conn.runs.get(instrument)
    if (!run) return
    conn.runs.delete(instrument)
    if (conn.lastFrame === null || conn.lastFrame < run.start) return
    const end = this.clip(conn.lastFrame + 1n)
    const start = this.clip(run.start)
    if (end <= start) return
    this.runs.push({ instrument, connection, start_time: formatTime(start), end_time: formatTime(end) })
  }

  private endWindow(at: bigint): void {
    if (!this.window) return
    const start = this.clip(this.window.start)
    if (at > start) {
      this.windows.push({ start_time: formatTime(start), end_time: formatTime(at), ...(this.window.closeCode !== undefined ? { close_code: this.window.closeCode } : {}) })
      this.reconnecting.push([start, at])
    }
    this.window = null
  }

  private becomeCovered(t: bigint): void {
    if (this.coveredSince !== null) return
    const at = this.clip(t)
    this.endWindow(at)
    this.coveredSince = at
  }

  private becomeUncovered(t: bigint): void {
    if (this.coveredSince === null) return
    const at = this.clip(t)
    if (at > this.coveredSince) this.subscribedSpans.push([this.coveredSince, at])
    this.coveredSince = null
  }

  /**
   * The process the replica's earlier records came from ended after its last record, seen at `lastSeen`. A
   * window its last record opened is that process closing its own connections as it stopped, not the venue
   * closing them: the stretch after it is the recorder down, not a reconnect.
   */
  private ended(lastSeen: bigint): void {
    if (this.window !== null && this.window.start >= lastSeen) this.window = null
    this.restart(lastSeen + 1n)
  }

  /** The process the replica's earlier records came from is gone: its connections end at `at`. */
  private restart(at: bigint): void {
    for (const [id, conn] of this.connections) for (const instrument of [...conn.runs.keys()]) this.endRun(id, conn, instrument)
    this.connections.clear()
    this.becomeUncovered(at)
    this.endWindow(this.clip(at))
  }

  /** Feeds one event of this replica; events must come in receive-time order. */
  add(e: JournalEvent): void {
    if (e.kind === 'frame') {
      this.frame(e.connection, e.receiveTime)
      return
    }
    const t = eventTime(e)
    const restated = 'restated' in e && e.restated === true
    if (!restated) this.seen(t)
    this.handle(e, restated)
    if (!restated) this.lastSeen = t
  }

  /** Feeds one frame of this replica, received at `t` on `connection` (as `add` does its event). */
  frame(connection: string, t: bigint): void {
    this.seen(t)
    this.connectionOf(connection).lastFrame = t
    this.lastSeen = t
  }

  /**
   * A record of this replica at or after the hour's end, not a restatement (`restart`: a `recorder-start`):
   * the first one ends the silence the hour ends in, so that the silence is judged whole, not cut at the end.
   */
  after(t: bigint, restart: boolean): void {
    if (t >= this.hourEnd && (this.next === null || this.next.time === null || t < this.next.time)) this.next = { time: t, restart }
  }

  /**
   * The journal holds no record of this replica after the hour: a silence the hour ends in lasts for good.
   * The replica stopped, or its journal has not reached the sealer yet; either way nothing shows it was
   * running, and liveness is what a record shows (docs/journal.md).
   */
  noRecordAfter(): void {
    this.next ??= { time: null, restart: false }
  }

  /** Whether the hour ends in a silence that is down or not depending on the replica's next record, not yet given. */
  get awaitsNextRecord(): boolean {
    return this.next === null && this.longestRunningSilenceNs !== null && this.lastSeen !== null && this.hourEnd - this.lastSeen <= this.longestRunningSilenceNs
  }

  /** A record at `t` that is not a restatement: a silence before it longer than the liveness allows was a stretch down. */
  private seen(t: bigint): void {
    if (this.longestRunningSilenceNs !== null && this.lastSeen !== null && t - this.lastSeen > this.longestRunningSilenceNs) {
      this.silent.push([this.lastSeen + 1n, t])
    }
  }

  private connectionOf(id: string): Connection {
    let conn = this.connections.get(id)
    if (!conn) this.connections.set(id, (conn = { subscribed: false, instruments: [], lastFrame: null, runs: new Map<string, Run>() }))
    return conn
  }

  private handle(e: JournalEvent, restated: boolean): void {
    switch (e.kind) {
      case 'recorder-start':
        this.longestRunningSilenceNs = LIVENESS_INTERVALS * e.heartbeatIntervalNs
        // A restatement carries the promise into the hour; with nothing seen before it, the hour's file
        // beginning is the first sign of life.
        if (restated) this.lastSeen ??= this.hourStart
        else if (this.lastSeen === null) this.restart(this.hourStart)
        else this.ended(this.lastSeen)
        return
      case 'heartbeat':
        return
      case 'destination-unavailable':
        this.lost.push([e.from, e.to])
        return
      default:
    }
    const conn = this.connectionOf(e.connection)
    switch (e.kind) {
      case 'subscribed':
        for (const instrument of conn.runs.keys()) this.endRun(e.connection, conn, instrument)
        conn.subscribed = true
        conn.instruments = [...e.instruments]
        if (this.tracksRuns) for (const instrument of conn.instruments) conn.runs.set(instrument, { start: e.time })
        this.becomeCovered(e.time)
        return
      case 'closed': {
        for (const instrument of [...conn.runs.keys()]) this.endRun(e.connection, conn, instrument)
        conn.subscribed = false
        this.connections.delete(e.connection)
        if (this.anySubscribed) return
        if (this.coveredSince !== null) {
          this.becomeUncovered(e.time)
          this.window = { start: e.time, ...(e.closeCode !== undefined ? { closeCode: e.closeCode } : {}) }
        } else if (e.time <= this.hourStart && this.window === null) {
          // A close restated from before the hour: the window it opened goes on, with its code.
          this.window = { start: e.time, ...(e.closeCode !== undefined ? { closeCode: e.closeCode } : {}) }
        }
        return
      }
      case 'sequence-break':
      case 'checksum-mismatch':
        if (conn.runs.has(e.instrument)) {
          this.endRun(e.connection, conn, e.instrument)
          if (conn.subscribed) conn.runs.set(e.instrument, { start: e.time })
        }
        return
      default:
    }
  }

  /** Closes the hour: open runs and windows end at the hour's end, or where the replica fell silent. */
  finish(): ReplicaCoverage {
    const end = this.hourEnd
    const lastSeen = this.lastSeen
    // Judged whole, not cut at the hour's end: up to the replica's next record, or for good when it has none.
    const silentForGood = this.next !== null && this.next.time === null
    const silenceEnd = this.next?.time ?? end
    if (this.longestRunningSilenceNs !== null && lastSeen !== null && (silentForGood || silenceEnd - lastSeen > this.longestRunningSilenceNs)) {
      // The process stopped at its last record, which ends its connections.
      this.silent.push([lastSeen + 1n, end])
      this.ended(lastSeen)
    } else if (lastSeen !== null && this.next?.restart) {
      // The next record is a new process's start: the one before ended after its last record.
      this.ended(lastSeen)
    }
    for (const [id, conn] of this.connections) {
      for (const [instrument, run] of conn.runs) {
        conn.runs.delete(instrument)
        if (conn.lastFrame === null || conn.lastFrame < run.start) continue
        const start = this.clip(run.start)
        if (end > start) this.runs.push({ instrument, connection: id, start_time: formatTime(start), end_time: formatTime(end) })
      }
    }
    this.becomeUncovered(end)
    this.endWindow(end)
    this.runs.sort((x, y) => (x.start_time < y.start_time ? -1 : x.start_time > y.start_time ? 1 : x.instrument < y.instrument ? -1 : x.instrument > y.instrument ? 1 : 0))

    const hour: Span[] = [[this.hourStart, end]]
    const lost = clipAll(union(this.lost), this.hourStart, end)
    const down = subtract(clipAll(union(this.silent), this.hourStart, end), lost)
    const covered = subtract(subtract(union(this.subscribedSpans), down), lost)
    const gaps = subtract(hour, covered)
    const reconnecting = subtract(subtract(intersect(gaps, union(this.reconnecting)), down), lost)
    const uncovered: UncoveredStretch[] = [
      ...intersect(gaps, lost).map(([s, e]) => ({ start: s, end: e, reason: 'destination' as const })),
      ...reconnecting.map(([s, e]) => ({ start: s, end: e, reason: 'reconnect' as const })),
      ...subtract(subtract(gaps, lost), reconnecting).map(([s, e]) => ({ start: s, end: e, reason: 'down' as const })),
    ].sort((x, y) => (x.start < y.start ? -1 : x.start > y.start ? 1 : 0))
    return { replica: this.replica, coveredNs: total(covered), reconnectWindows: this.windows, gapFreeRuns: this.runs, uncovered }
  }
}

/**
 * The completeness reasons of the instants of the hour no replica covered: `reconnect` where a replica
 * was in a reconnect window, `destination_unavailable` where a replica's journal could not be written,
 * `recorder_down` where neither holds.
 */
export function uncoveredByBoth(a: ReplicaCoverage, b: ReplicaCoverage): { reconnect: boolean; destination: boolean; down: boolean } {
  const spans = (c: ReplicaCoverage, reason?: UncoveredReason): Span[] => c.uncovered.filter((u) => reason === undefined || u.reason === reason).map((u) => [u.start, u.end])
  const both = intersect(spans(a), spans(b))
  const inWindow = intersect(both, union([...spans(a, 'reconnect'), ...spans(b, 'reconnect')]))
  const unwritten = intersect(both, union([...spans(a, 'destination'), ...spans(b, 'destination')]))
  return { reconnect: inWindow.length > 0, destination: unwritten.length > 0, down: subtract(subtract(both, inWindow), unwritten).length > 0 }
}

/** The length of spans that do not overlap. */
export function total(xs: Span[]): bigint {
  return xs.reduce((s, [x, y]) => s + (y - x), 0n)
}

function clipAll(xs: Span[], from: bigint, to: bigint): Span[] {
  return xs.map(([s, e]): Span => [s < from ? from : s, e > to ? to : e]).filter(([s, e]) => e > s)
}

/** Sorted, disjoint, merged. */
export function union(xs: Span[]): Span[] {
  const all = [...xs].sort((p, q) => (p[0] < q[0] ? -1 : p[0] > q[0] ? 1 : 0))
  const out: Span[] = []
  for (const [s, e] of all) {
    if (e <= s) continue
    const last = out[out.length - 1]
    if (last && s <= last[1]) { if (e > last[1]) last[1] = e } else out.push([s, e])
  }
  return out
}

export function intersect(xs: Span[], ys: Span[]): Span[] {
  const out: Span[] = []
  for (const [a, b] of xs) for (const [c, d] of ys) {
    const s = a > c ? a : c
    const e = b < d ? b : d
    if (e > s) out.push([s, e])
  }
  return union(out)
}

/** xs without ys (both sorted and disjoint). */
function subtract(xs: Span[], ys: Span[]): Span[] {
  let out = union(xs)
  for (const [c, d] of ys) {
    const next: Span[] = []
    for (const [a, b] of out) {
      if (d <= a || c >= b) { next.push([a, b]); continue }
      if (c > a) next.push([a, c])
      if (d < b) next.push([d, b])
    }
    out = next
  }
  return out
}

import type { GapFreeRun, ReconnectWindow } from './manifest.js'
import { formatTime } from './time.js'
import type { JournalEvent, Replica } from './types.js'

interface Run { start: bigint }
interface Connection {
  subscribed: boolean
  instruments: string[]
  /** Receive time of the connection's latest frame. */
  lastFrame: bigint | null
  runs: Map<string, Run>
}

/** What one replica's events say about its hour: coverage, reconnect windows and gap-free runs. */
export interface ReplicaCoverage {
  replica: Replica
  coveredNs: bigint
  reconnectWindows: ReconnectWindow[]
  gapFreeRuns: GapFreeRun[]
  /** Stretches of the hour in which the replica had no subscribed connection, as [start, end) ns. */
  uncovered: [bigint, bigint][]
  /** The subset of `uncovered` that lies in a reconnect window (the replica was running, disconnected). */
  reconnecting: [bigint, bigint][]
}

/**
 * Follows one replica's connection events through an hour, in receive-time order, and derives what the
 * hourly manifest states about it. Events before the hour (the journal restates each open connection at
 * the start of an hour file) set the state the hour starts in. The rules, as docs/record-format-notes.md
 * reads the spec ("Hourly manifest"):
 * - covered: at least one connection of the replica is subscribed;
 * - a reconnect window runs from the close of the replica's last subscribed connection until a connection
 *   is subscribed again (or the hour ends), with the close frame's status code when the venue sent one;
 *   a window open at the hour's start keeps its code;
 * - a gap-free run (trades) covers one instrument on one connection from its subscription (or from where
 *   the previous run's break was detected) to 1 ns after the connection's last frame before the breaking
 *   event (disconnection, sequence break, checksum failure, resubscription), or to the hour's end; a run
 *   with no frame of the connection in it states nothing and is left out.
 */
export class CoverageTracker {
  private readonly connections = new Map<string, Connection>()
  private readonly windows: ReconnectWindow[] = []
  private readonly runs: GapFreeRun[] = []
  private readonly uncovered: [bigint, bigint][] = []
  private readonly reconnecting: [bigint, bigint][] = []
  private coveredNs = 0n
  /** When the replica last became covered (a connection subscribed), or null while uncovered. */
  private coveredSince: bigint | null
  /** The reconnect window in progress: its start and the close code it follows. */
  private window: { start: bigint; closeCode?: number } | null = null
  private uncoveredSince: bigint | null

  constructor(
    readonly replica: Replica,
    private readonly hourStart: bigint,
    private readonly hourEnd: bigint,
    private readonly tracksRuns: boolean,
  ) {
    this.coveredSince = null
    this.uncoveredSince = hourStart
  }

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

  private becomeCovered(t: bigint): void {
    if (this.coveredSince !== null) return
    const at = this.clip(t)
    if (this.uncoveredSince !== null && at > this.uncoveredSince) this.uncovered.push([this.uncoveredSince, at])
    if (this.window) {
      const start = this.clip(this.window.start)
      if (at > start) {
        this.windows.push({ start_time: formatTime(start), end_time: formatTime(at), ...(this.window.closeCode !== undefined ? { close_code: this.window.closeCode } : {}) })
        this.reconnecting.push([start, at])
      }
      this.window = null
    }
    this.uncoveredSince = null
    this.coveredSince = at
  }

  private becomeUncovered(t: bigint, closeCode: number | undefined): void {
    if (this.coveredSince === null) return
    const at = this.clip(t)
    this.coveredNs += at - this.coveredSince
    this.coveredSince = null
    this.uncoveredSince = at
    this.window = { start: t, ...(closeCode !== undefined ? { closeCode } : {}) }
  }

  /** Feeds one event of this replica; events must come in receive-time order. */
  add(e: JournalEvent): void {
    const conn = this.connections.get(e.connection) ?? { subscribed: false, instruments: [], lastFrame: null, runs: new Map<string, Run>() }
    this.connections.set(e.connection, conn)
    switch (e.kind) {
      case 'frame':
        conn.lastFrame = e.receiveTime
        return
      case 'subscribed':
        for (const instrument of conn.runs.keys()) this.endRun(e.connection, conn, instrument)
        conn.subscribed = true
        conn.instruments = [...e.instruments]
        if (this.tracksRuns) for (const instrument of conn.instruments) conn.runs.set(instrument, { start: e.time })
        this.becomeCovered(e.time)
        return
      case 'closed':
      case 'error': {
        if (e.kind === 'error') return
        for (const instrument of [...conn.runs.keys()]) this.endRun(e.connection, conn, instrument)
        conn.subscribed = false
        this.connections.delete(e.connection)
        if (this.anySubscribed) return
        if (this.coveredSince !== null) this.becomeUncovered(e.time, e.closeCode)
        // A close restated from before the hour: the window it opened goes on, with its code.
        else if (e.time <= this.hourStart && this.window === null) this.window = { start: e.time, ...(e.closeCode !== undefined ? { closeCode: e.closeCode } : {}) }
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
        return
    }
  }

  /** Closes the hour: open runs and windows end at the hour's end. */
  finish(): ReplicaCoverage {
    for (const [id, conn] of this.connections) {
      for (const [instrument, run] of conn.runs) {
        conn.runs.delete(instrument)
        if (conn.lastFrame === null || conn.lastFrame < run.start) continue
        const start = this.clip(run.start)
        if (this.hourEnd > start) this.runs.push({ instrument, connection: id, start_time: formatTime(start), end_time: formatTime(this.hourEnd) })
      }
    }
    if (this.coveredSince !== null) this.coveredNs += this.hourEnd - this.coveredSince
    if (this.uncoveredSince !== null && this.hourEnd > this.uncoveredSince) this.uncovered.push([this.uncoveredSince, this.hourEnd])
    if (this.window) {
      const start = this.clip(this.window.start)
      if (this.hourEnd > start) {
        this.windows.push({ start_time: formatTime(start), end_time: formatTime(this.hourEnd), ...(this.window.closeCode !== undefined ? { close_code: this.window.closeCode } : {}) })
        this.reconnecting.push([start, this.hourEnd])
      }
    }
    this.runs.sort((x, y) => (x.start_time < y.start_time ? -1 : x.start_time > y.start_time ? 1 : x.instrument < y.instrument ? -1 : x.instrument > y.instrument ? 1 : 0))
    return { replica: this.replica, coveredNs: this.coveredNs, reconnectWindows: this.windows, gapFreeRuns: this.runs, uncovered: this.uncovered, reconnecting: this.reconnecting }
  }
}

/** Instants of the hour covered by no replica, split into reconnecting (a replica was in a window) and down. */
export function uncoveredByBoth(a: ReplicaCoverage, b: ReplicaCoverage): { reconnect: boolean; down: boolean } {
  const both = intersect(a.uncovered, b.uncovered)
  if (both.length === 0) return { reconnect: false, down: false }
  const inWindow = intersect(both, union(a.reconnecting, b.reconnecting))
  const windowNs = inWindow.reduce((s, [x, y]) => s + (y - x), 0n)
  const bothNs = both.reduce((s, [x, y]) => s + (y - x), 0n)
  return { reconnect: windowNs > 0n, down: bothNs > windowNs }
}

function intersect(xs: [bigint, bigint][], ys: [bigint, bigint][]): [bigint, bigint][] {
  const out: [bigint, bigint][] = []
  for (const [a, b] of xs) for (const [c, d] of ys) {
    const s = a > c ? a : c
    const e = b < d ? b : d
    if (e > s) out.push([s, e])
  }
  return out
}

function union(xs: [bigint, bigint][], ys: [bigint, bigint][]): [bigint, bigint][] {
  const all = [...xs, ...ys].sort((p, q) => (p[0] < q[0] ? -1 : p[0] > q[0] ? 1 : 0))
  const out: [bigint, bigint][] = []
  for (const [s, e] of all) {
    const last = out[out.length - 1]
    if (last && s <= last[1]) { if (e > last[1]) last[1] = e } else out.push([s, e])
  }
  return out
}

/**
 * The recorder daemon: its replicas' connections to a venue, one journal per channel, the hourly sealer,
 * and what it reports. Two replicas run in one process by default, each with its own connections (and its
 * own files in each channel's journal); one replica alone runs on a host of its own.
 *
 * Durability (docs/recorder.md): a frame is queued for its journal file the moment it is received, written
 * with the records received in the same turn of the event loop, and fsynced within `fsyncIntervalMs`
 * (default 200 ms) of the write. A crash of the process loses nothing written; a power loss loses at most the last interval,
 * and the journal reader reports the torn tail the loss leaves. A disk that refuses writes is journaled as
 * `destination-unavailable` once writing works again, with how many events were lost.
 */
import { join } from 'node:path'
import { JournalWriter } from '../formats/record/journal/journal.js'
import type { Channel, JournalEvent, Replica } from '../formats/record/types.js'
import type { VenueAdapter } from '../venues/adapter.js'
import { ReplicaChannel, type ConnectionSink, type FrameClock } from './connection.js'
import type { Logger } from './log.js'
import { RecorderMetrics, labels, serveMetrics, type FrameTally, type Health } from './metrics.js'
import { HourlySealer } from './sealer.js'

export interface RecorderOptions {
  venue: VenueAdapter
  instruments: readonly string[]
  channels: readonly Channel[]
  replicas: readonly Replica[]
  /** Each channel's journal is `journal/<channel>/` (replica=a/, replica=b/ under it). */
  journal: string
  clock: FrameClock
  log: Logger
  /**
   * Sealing: where the hours go, the key, the CLI that seals them, and the journals of replicas recording on
   * other hosts, copied here (each laid out as `journal` is). Without it the daemon only records.
   */
  seal?: { root: string; key: string; keys?: string; recorder: string; cli: string; peerJournals?: readonly string[]; graceMs?: number; everyMs?: number; starvedWindowMs?: number }
  metricsPort?: number
  heartbeatMs?: number
  fsyncIntervalMs?: number
  /** Simulated time per real time of `clock` (tests and the demo; default 1): heartbeats keep their event-time interval. */
  timeScale?: number
  /**
   * Bytes received but not yet written to a channel's journal past which reading from the venue pauses, until
   * the backlog halves (default 1 MiB): memory stays bounded when the disk is slower than the venue. The
   * heap holds several times the bytes counted (events, promises, garbage not yet collected): at 64 MiB a
   * flood took the process past 400 MB, at 1 MiB under 190 MB, as fast (bench:record, docs/performance.md).
   */
  journalBacklogBytes?: number
  /** Connection timings (tests shorten them). */
  stallMs?: number
  rotateAfterMs?: number
  backoffMs?: { first: number; max: number }
}

export class Recorder {
  readonly metrics = new RecorderMetrics()
  private readonly journals = new Map<Channel, JournalWriter>()
  private readonly connections: { replica: Replica; channel: Channel; c: ReplicaChannel }[] = []
  private sealer: HourlySealer | null = null
  private server: { close(): void } | null = null
  /** Where /metrics and /healthz are served, once started with a metrics port. */
  metricsUrl: string | null = null

  constructor(private readonly o: RecorderOptions) {}

  static journalOf(journal: string, channel: Channel): string {
    return join(journal, channel)
  }

  async start(): Promise<void> {
    const o = this.o
    const processTag = o.clock.now().receiveTime.toString(36)
    for (const channel of o.channels) {
      const journal = new JournalWriter(Recorder.journalOf(o.journal, channel), {
        fsync: 'interval', fsyncIntervalMs: o.fsyncIntervalMs ?? 200, onWriteError: 'record-loss', now: () => o.clock.now().receiveTime,
        ...(o.timeScale !== undefined ? { timeScale: o.timeScale } : {}),
      })
      this.journals.set(channel, journal)
      for (const replica of o.replicas) await journal.startReplica(replica, o.heartbeatMs ?? 1000)
    }
    for (const channel of o.channels) {
      for (const replica of o.replicas) {
        const c = new ReplicaChannel({
          replica, channel, venue: o.venue, instruments: o.instruments, clock: o.clock, sink: this.sinkFor(channel), processTag,
          ...(o.stallMs !== undefined ? { stallMs: o.stallMs } : {}),
          ...(o.rotateAfterMs !== undefined ? { rotateAfterMs: o.rotateAfterMs } : {}),
          ...(o.backoffMs !== undefined ? { backoffMs: o.backoffMs } : {}),
        })
        this.connections.push({ replica, channel, c })
        c.start()
      }
    }
    if (o.seal) {
      const seal = o.seal
      this.sealer = new HourlySealer({
        cli: seal.cli, venue: o.venue.name, channels: o.channels, journalsOf: (ch) => [o.journal, ...(seal.peerJournals ?? [])].map((dir) => Recorder.journalOf(dir, ch)),
        root: seal.root, key: seal.key, ...(seal.keys ? { keys: seal.keys } : {}), recorder: seal.recorder,
        ...(seal.graceMs !== undefined ? { graceMs: seal.graceMs } : {}), ...(seal.everyMs !== undefined ? { everyMs: seal.everyMs } : {}),
        ...(seal.starvedWindowMs !== undefined ? { starvedWindowMs: seal.starvedWindowMs } : {}),
        now: () => o.clock.now().receiveTime, log: o.log,
        sealed: (channel, hour, seconds, ok) => {
          this.metrics.sealSeconds.observe({ channel, ok: String(ok) }, seconds)
          if (ok) this.metrics.lastSealed.set({ channel }, Number(hour / 1_000_000_000n))
        },
      })
      this.sealer.start()
    }
    if (o.metricsPort !== undefined) {
      const served = await serveMetrics(this.metrics, () => this.health(), o.metricsPort)
      this.server = served.server
      this.metricsUrl = served.url
    }
    o.log('info', 'recording', { venue: o.venue.name, channels: o.channels, replicas: o.replicas, instruments: o.instruments, journal: o.journal, metrics: this.metricsUrl })
  }

  /** Closes the connections, flushes and fsyncs the journals, and lets a seal under way finish. */
  async stop(): Promise<void> {
    await Promise.all(this.connections.map((x) => x.c.stop()))
    for (const j of this.journals.values()) {
      await j.flush()
      await j.close()
    }
    await this.sealer?.stop()
    this.server?.close()
    this.o.log('info', 'stopped; journals flushed and fsynced')
  }

  health(): Health {
    const subscribed: Record<string, boolean> = {}
    const reasons: string[] = []
    for (const { replica, channel, c } of this.connections) {
      subscribed[`${replica}/${channel}`] = c.subscribed
      if (!c.subscribed) reasons.push(`replica ${replica} has no subscribed connection for ${channel}`)
    }
    for (const [channel, j] of this.journals) if (j.losing) reasons.push(`the ${channel} journal cannot be written`)
    return { ok: reasons.length === 0, reasons, subscribed }
  }

  private sinkFor(channel: Channel): ConnectionSink {
    const journal = this.journals.get(channel)!
    const m = this.metrics
    const log = this.o.log
    const tallies = new Map<Replica, FrameTally>()
    const limit = this.o.journalBacklogBytes ?? 2 ** 20
    const connections = () => this.connections.filter((x) => x.channel === channel).map((x) => x.c)
    const journalWrite = m.journalWrite.labels({ channel })
    // The events of one write settle together: one callback a write rather than one a frame.
    const writes = new Map<Promise<void>, { received: number[]; bytes: number }>()
    let backlog = 0
    let paused = false
    // A slow disk may pause reading many times a second: the log says so at most once a minute, the metric every time.
    let pausesUnlogged = 0
    let pauseLoggedAt = -Infinity
    let pauseLogged = false
    const settled = (bytes: number) => {
      backlog -= bytes
      m.backlogBytes.set(channel, backlog)
      if (paused && backlog <= limit / 2) {
        paused = false
        for (const c of connections()) c.resume()
        if (pauseLogged) log('info', 'the journal caught up: reading from the venue again', { channel, backlog_bytes: backlog })
        pauseLogged = false
      }
    }
    return {
      journal(event: JournalEvent) {
        const received = performance.now()
        const bytes = event.kind === 'frame' ? event.payload.byteLength + 64 : 64
        backlog += bytes
        m.backlogBytes.set(channel, backlog)
        if (!paused && backlog > limit) {
          paused = true
          for (const c of connections()) c.pause()
          m.backlogPauses.inc({ channel })
          pausesUnlogged++
          if (received - pauseLoggedAt >= 60_000) {
            log('warn', 'the journal is behind the venue: reading paused until it catches up (the venue may drop the connection)', { channel, backlog_bytes: backlog, pauses: pausesUnlogged })
            pauseLoggedAt = received
            pausesUnlogged = 0
            pauseLogged = true
          }
        }
        const written = journal.append(event)
        let write = writes.get(written)
        if (write === undefined) {
          const w = { received: [] as number[], bytes: 0 }
          writes.set(written, (write = w))
          written.then(
            () => {
              writes.delete(written)
              const now = performance.now()
              for (const r of w.received) journalWrite.observe((now - r) / 1000)
              settled(w.bytes)
            },
            // record-loss: appends resolve even when the disk refuses them; anything else is a bug to report.
            (err: Error) => {
              writes.delete(written)
              settled(w.bytes)
              log('error', 'journal append failed', { channel, error: err.message })
            },
          )
        }
        if (event.kind === 'frame') write.received.push(received)
        write.bytes += bytes
        if (event.kind === 'frame' && event.clockErrorBound !== undefined) m.latestBoundNs.set(event.replica, event.clockErrorBound)
      },
      log: (level, msg, fields) => log(level, msg, fields),
      frame: (replica, ch, bytes, withheld) => {
        let t = tallies.get(replica)
        if (t === undefined) tallies.set(replica, (t = m.tally(replica, ch)))
        t.frames++
        t.bytes += bytes
        if (withheld) t.withheld++
      },
      reconnect: (replica, ch) => m.reconnects.inc(labels(replica, ch)),
      gap: (replica, ch, instrument) => m.gaps.inc({ replica, channel: ch, instrument }),
      checksumFailure: (replica, ch, instrument) => m.checksumFailures.inc({ replica, channel: ch, instrument }),
      state: (replica, ch, up) => m.subscribed.set(labels(replica, ch), up ? 1 : 0),
    }
  }
}

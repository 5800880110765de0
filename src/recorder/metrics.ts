/**
 * What the daemon tells its operator: Prometheus metrics at `/metrics` (prom-client, the text exposition
 * format) and `/healthz`, 200 with a JSON body while every replica's every channel is subscribed and the
 * journals are writable, 503 with the reasons otherwise. Served on 127.0.0.1 unless told otherwise.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { Channel, Replica } from '../formats/record/types.js'

export class RecorderMetrics {
  readonly registry = new Registry()
  /**
   * Frames, bytes and withheld receipts per replica and channel, counted in plain numbers per frame and
   * added to their counters when scraped: prom-client hashes the labels of every call, bound or not.
   */
  private readonly tallies = new Map<string, FrameTally>()
  readonly frames = new Counter({ name: 'pipe_recorder_frames_total', help: 'Frames journaled', labelNames: ['replica', 'channel'] as const, registers: [this.registry], collect: () => this.publish('frames') })
  readonly bytes = new Counter({ name: 'pipe_recorder_frame_bytes_total', help: 'Bytes of the frames journaled', labelNames: ['replica', 'channel'] as const, registers: [this.registry], collect: () => this.publish('bytes') })
  readonly withheld = new Counter({ name: 'pipe_recorder_clock_withheld_total', help: 'Receipts journaled without clock_offset and clock_error_bound', labelNames: ['replica', 'channel'] as const, registers: [this.registry], collect: () => this.publish('withheld') })
  readonly reconnects = new Counter({ name: 'pipe_recorder_reconnects_total', help: 'Connections ended and replaced', labelNames: ['replica', 'channel'] as const, registers: [this.registry] })
  readonly gaps = new Counter({ name: 'pipe_recorder_sequence_gaps_total', help: 'Breaks in a venue sequence seen on a connection', labelNames: ['replica', 'channel', 'instrument'] as const, registers: [this.registry] })
  readonly checksumFailures = new Counter({ name: 'pipe_recorder_checksum_failures_total', help: 'Venue book checksums that differed from the one recomputed on the connection\'s book', labelNames: ['replica', 'channel', 'instrument'] as const, registers: [this.registry] })
  readonly subscribed = new Gauge({ name: 'pipe_recorder_subscribed', help: '1 while the replica has a subscribed connection for the channel', labelNames: ['replica', 'channel'] as const, registers: [this.registry] })
  readonly journalWrite = new Histogram({ name: 'pipe_recorder_journal_write_seconds', help: 'From a frame\'s receipt to its journal record written', labelNames: ['channel'] as const, buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1], registers: [this.registry] })
  /** Each channel's journal backlog in bytes, read when scraped rather than set per frame. */
  readonly backlogBytes = new Map<Channel, number>()
  readonly backlog = new Gauge({
    name: 'pipe_recorder_journal_backlog_bytes', help: 'Bytes received and not yet written to the channel\'s journal', labelNames: ['channel'] as const, registers: [this.registry],
    collect: () => { for (const [channel, bytes] of this.backlogBytes) this.backlog.set({ channel }, bytes) },
  })
  readonly backlogPauses = new Counter({ name: 'pipe_recorder_journal_backlog_pauses_total', help: 'Times reading from the venue paused because the journal was behind', labelNames: ['channel'] as const, registers: [this.registry] })
  readonly sealSeconds = new Histogram({ name: 'pipe_recorder_seal_seconds', help: 'Time to seal an hour', labelNames: ['channel', 'ok'] as const, buckets: [1, 5, 15, 30, 60, 120, 300, 600], registers: [this.registry] })
  readonly lastSealed = new Gauge({ name: 'pipe_recorder_last_sealed_hour_seconds', help: 'Start of the last hour sealed, Unix seconds', labelNames: ['channel'] as const, registers: [this.registry] })
  /** Each replica's latest receipt bound in ns, read when scraped rather than set per frame. */
  readonly latestBoundNs = new Map<Replica, bigint>()
  readonly clockBound = new Gauge({
    name: 'pipe_recorder_clock_error_bound_seconds', help: 'The clock error bound of the latest receipt that had one', labelNames: ['replica'] as const, registers: [this.registry],
    collect: () => { for (const [replica, ns] of this.latestBoundNs) this.clockBound.set({ replica }, Number(ns) / 1e9) },
  })

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'pipe_recorder_' })
  }

  /** The tally a replica's channel counts its frames in. */
  tally(replica: Replica, channel: Channel): FrameTally {
    const key = `${replica}/${channel}`
    let t = this.tallies.get(key)
    if (t === undefined) this.tallies.set(key, (t = { labels: labels(replica, channel), frames: 0, bytes: 0, withheld: 0 }))
    return t
  }

  private publish(field: 'frames' | 'bytes' | 'withheld'): void {
    for (const t of this.tallies.values()) {
      if (t[field] === 0) continue
      this[field].inc(t.labels, t[field])
      t[field] = 0
    }
  }
}

/** What a replica's channel journaled since the last scrape. */
export interface FrameTally {
  readonly labels: { replica: Replica; channel: Channel }
  frames: number
  bytes: number
  withheld: number
}

export interface Health {
  ok: boolean
  reasons: string[]
  subscribed: Record<string, boolean>
}

/** Serves `/metrics` and `/healthz` on `port` (0: any free port); resolves with the server and its address. */
export async function serveMetrics(metrics: RecorderMetrics, health: () => Health, port: number, host = '127.0.0.1'): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET') {
      res.writeHead(405).end()
      return
    }
    if (req.url === '/metrics') {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (err: Error) => res.writeHead(500).end(err.message),
      )
      return
    }
    if (req.url === '/healthz') {
      const h = health()
      res.writeHead(h.ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(h) + '\n')
      return
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  const a = server.address() as AddressInfo
  return { server, url: `http://${host}:${a.port}` }
}

/** The label set of a replica's channel. */
export function labels(replica: Replica, channel: Channel): { replica: Replica; channel: Channel } {
  return { replica, channel }
}

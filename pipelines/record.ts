import { z } from 'zod'
import { UsageError } from '../src/core/errors.js'
import { definePipeline, type PipelineDef } from '../src/core/pipeline.js'
import type { Registry } from '../src/core/registry.js'
import { defineStage, type StageDef } from '../src/core/stage.js'
import { CHANNELS, type Channel, type Replica } from '../src/formats/record/types.js'
import { venueAt, venueNames } from '../src/venues/index.js'

const list = (what: string) => z.string().min(1).transform((s, ctx) => {
  const items = s.split(',').map((x) => x.trim()).filter((x) => x !== '')
  if (items.length === 0) ctx.addIssue({ code: 'custom', message: `name at least one ${what}` })
  return items
})

const options = z.object({
  venue: z.string().min(1).describe('the venue to record, e.g. binance'),
  instruments: list('instrument').describe('the instruments, comma-separated, as the venue names them: BTCUSDT,ETHUSDT'),
  channels: list('channel').describe('the channels, comma-separated: trades,book'),
  journal: z.string().min(1).describe('the journal directory this daemon writes: one folder per channel, replica=a/ and replica=b/ in each'),
  peerJournal: z.array(z.string().min(1)).optional().describe('with --replica and --out: the journal of another replica\'s host, copied here, sealed with this one (docs/recorder.md)'),
  sealGrace: z.number().positive().default(60).describe('seconds after an hour\'s end before it is sealed: the pairing window and late receipts, and with --peer-journal the copy\'s lag'),
  out: z.string().min(1).optional().describe('the root sealed hours go under: a folder, or s3://BUCKET/PREFIX (the journal stays on local disk); without it the daemon only records'),
  key: z.string().min(1).optional().describe('the private signing key the hours are sealed with (with --out)'),
  keys: z.string().min(1).optional().describe('the key set that publishes the key (default: jwks.json beside it)'),
  recorder: z.string().regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, dot, dash, underscore').default('recorder').describe('the recorder id in the sealed layout'),
  endpoint: z.string().url().optional().describe("the venue's websocket base URL (default: its public one)"),
  restEndpoint: z.string().url().optional().describe("the venue's REST base URL (default: its public one)"),
  replica: z.enum(['a', 'b']).optional().describe('run this replica alone (one host per replica); default both'),
  metricsPort: z.number().int().min(0).max(65535).optional().describe('serve /metrics and /healthz on 127.0.0.1 at this port (0: any free port)'),
  clock: z.enum(['chrony', 'none', 'simulated']).default('chrony').describe('where receipts\' clock bounds come from: chrony (none when chronyc does not answer), none, or simulated (tests and the demo only, with --time-scale)'),
  timeScale: z.number().positive().optional().describe('with --clock simulated: simulated seconds per real second (never for real data)'),
  timeStart: z.string().datetime().optional().describe('with --clock simulated: the simulated time at start, e.g. 2026-10-03T13:59:00Z (default now)'),
})

/** The CLI that seals an hour in a child process: the one running this daemon. */
function sealingCli(): string {
  const cli = process.argv[1]
  if (!cli) throw new UsageError('usage.no-cli', 'the daemon seals hours with the pipe CLI it runs as, and cannot find it')
  return cli
}

/** The stage takes the lists as the pipeline parsed them. */
const stageOptions = options.extend({
  instruments: z.array(z.string().min(1)).min(1).describe('the instruments, as the venue names them'),
  channels: z.array(z.string().min(1)).min(1).describe('the channels: trades, book, funding, liquidations'),
})

/**
 * The source of `pipe run record`: the recorder daemon, running until SIGINT or SIGTERM, when it closes its
 * connections, flushes and fsyncs its journals, lets a seal under way finish, and ends (exit 0).
 */
export const recordStage = defineStage({
  name: 'record',
  kind: 'source',
  summary: 'Records a venue\'s channels on two replicas into journals, sealing each hour as it ends, until stopped',
  takes: 'none',
  gives: 'any',
  stopsOnRequest: true,
  options: stageOptions,
  async create(o, ctx) {
    const channels = o.channels as Channel[]
    for (const c of channels) if (!CHANNELS.includes(c)) throw new UsageError('usage.unknown-channel', `--channels: no channel ${c} (channels: ${CHANNELS.join(', ')})`)
    if ((o.clock === 'simulated') !== (o.timeScale !== undefined) || (o.timeStart !== undefined && o.clock !== 'simulated')) {
      throw new UsageError('usage.simulated-clock', '--clock simulated and --time-scale go together (a testing affordance: the real clock records real data), and --time-start with them')
    }
    if ((o.out === undefined) !== (o.key === undefined)) throw new UsageError('usage.missing-option', '--out and --key go together: the hours are sealed under --out with --key')
    if (o.peerJournal && (!o.replica || !o.out)) throw new UsageError('usage.peer-journal', '--peer-journal goes with --replica and --out: a daemon recording one replica seals it with the other replica\'s copied journal')
    let venue
    try {
      venue = venueAt(o.venue, { ...(o.endpoint ? { ws: o.endpoint } : {}), ...(o.restEndpoint ? { rest: o.restEndpoint } : {}) })
    } catch (err) {
      throw new UsageError('usage.unknown-venue', `--venue: ${(err as Error).message} (known venues: ${venueNames().join(', ')})`)
    }
    for (const c of channels) if (!venue.channels.includes(c)) throw new UsageError('usage.unknown-channel', `--channels: venue ${o.venue} has no channel ${c} (it has ${venue.channels.join(', ')})`)
    // Loaded here: the daemon's modules (ws, prom-client) are for this command only.
    const [{ Recorder }, { jsonLogger }, clocks] = await Promise.all([import('../src/recorder/recorder.js'), import('../src/recorder/log.js'), import('../src/recorder/clock/index.js')])
    const log = jsonLogger(ctx.stderr)
    let clock
    if (o.clock === 'chrony') {
      const probe = await clocks.probeChronyc()
      if (probe.answered) clock = new clocks.ChronyClock()
      else log('warn', 'chrony does not answer: recording without clock bounds (the hours will say clock_offset_unknown)', { reason: probe.reason })
    }
    if (o.clock === 'simulated') {
      const start = o.timeStart ? BigInt(Date.parse(o.timeStart)) * 1_000_000n : BigInt(Date.now()) * 1_000_000n
      clock = new clocks.SimulatedClock(start, o.timeScale!)
      log('warn', 'simulated clock: receive times are not real time; never record real data this way', { time_scale: o.timeScale, start: o.timeStart ?? 'now' })
    }
    clock ??= new clocks.NoneClock()
    await clock.start()
    // On a simulated clock the daemon's own rhythm keeps pace: heartbeats, and the sealer's look and grace.
    const scale = o.timeScale ?? 1
    const replicas: Replica[] = o.replica ? [o.replica] : ['a', 'b']
    const recorder = new Recorder({
      venue, instruments: o.instruments, channels, replicas, journal: o.journal, clock, log,
      ...(o.out && o.key ? { seal: { root: o.out, key: o.key, ...(o.keys ? { keys: o.keys } : {}), recorder: o.recorder, cli: sealingCli(), ...(o.peerJournal ? { peerJournals: o.peerJournal } : {}), graceMs: o.sealGrace * 1000, ...(scale !== 1 ? { everyMs: Math.max(100, 10_000 / scale) } : {}) } } : {}),
      // A real second between heartbeats, as on the real clock: a pause of the process is not magnified into downtime.
      ...(scale !== 1 ? { timeScale: scale, heartbeatMs: 1000 * scale } : {}),
      ...(o.metricsPort !== undefined ? { metricsPort: o.metricsPort } : {}),
    })
    await recorder.start()
    return (async function* () {
      await new Promise<void>((resolve) => {
        if (ctx.stopRequested.aborted || ctx.signal.aborted) resolve()
        ctx.stopRequested.addEventListener('abort', () => resolve(), { once: true })
        ctx.signal.addEventListener('abort', () => resolve(), { once: true })
      })
      log('info', 'stopping', { reason: String(ctx.stopRequested.reason ?? ctx.signal.reason ?? '') })
      await recorder.stop()
      await clock.stop()
      Object.assign(ctx.summary, { stopped: true })
    })()
  },
})

/** `pipe run record --venue binance --instruments BTCUSDT,ETHUSDT --channels trades,book --journal DIR [--out ROOT --key KEY.jwk] ...`. */
export const recordPipeline = definePipeline({
  name: 'record',
  summary: 'Record a venue\'s channels on two replicas (journals, clock bounds from chrony) and seal each hour as it ends, until stopped',
  options,
  example: { venue: 'binance', instruments: 'BTCUSDT,ETHUSDT', channels: 'trades,book', journal: 'journal/', out: 'root/', key: 'keys/signing-key.jwk' },
  stages(o) {
    return [{ stage: 'record', options: o }, { stage: 'report', options: { field: 'events' } }]
  },
})

export function registerRecord(registry: Registry): void {
  registry.addStage(recordStage as unknown as StageDef)
  registry.addPipeline(recordPipeline as unknown as PipelineDef)
}

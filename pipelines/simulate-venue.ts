import { Readable } from 'node:stream'
import { z } from 'zod'
import { UsageError } from '../src/core/errors.js'
import { readInputFile } from '../src/core/input-file.js'
import { definePipeline, type PipelineDef } from '../src/core/pipeline.js'
import type { Registry } from '../src/core/registry.js'
import { defineStage, type StageDef } from '../src/core/stage.js'
import { SIMULATED_VENUES, parseFaultPlan } from '../src/sim/venue/faults.js'

/** A fault plan is a few faults: docs/simulator.md. */
const FAULT_PLAN_LIMIT = { maxBytes: 2 ** 20, what: 'a fault plan' }

const options = z.object({
  venue: z.string().default('binance').describe(`the venue to simulate: ${SIMULATED_VENUES.join(', ')}`),
  port: z.number().int().min(0).max(65535).default(0).describe('the port on 127.0.0.1; 0 takes any free one'),
  seed: z.number().int().default(1).describe('the same seed and options make the same frames'),
  rate: z.number().positive().max(1_000_000).default(10).describe('trades per simulated second on each <symbol>@trade stream (binance-usdm: aggregates on <symbol>@aggTrade)'),
  instruments: z.string().regex(/^[^,]+(,[^,]+)*$/, 'must be symbols separated by commas: BTCUSDT,ETHUSDT (Kraken: BTC/USD,ETH/USD)').optional()
    .describe('the symbols, separated by commas (default BTCUSDT,ETHUSDT; Kraken: BTC/USD,ETH/USD)'),
  timeScale: z.number().positive().default(1).describe('simulated seconds per real second'),
  start: z.string().optional().describe('the simulated time at start, RFC 3339 (default now)'),
  faults: z.string().min(1).optional().describe('a fault plan, JSON (docs/simulator.md)'),
  truth: z.string().min(1).optional().describe('write what was sent to which connection, and every fault, to this new file (JSON lines)'),
  pingIntervalMs: z.number().positive().optional().describe('real milliseconds between the server\'s pings (default Binance\'s: 20,000 on spot, 180,000 on binance-usdm)'),
  pongTimeoutMs: z.number().positive().optional().describe('real milliseconds a ping may go unanswered before the connection is dropped (default Binance\'s: 60,000 on spot, 600,000 on binance-usdm)'),
})

/**
 * The source of `pipe run simulate-venue`: starts the simulator, prints `ws <url>` and `rest <url>` (the bases an
 * adapter's wsBase and restBase take), serves until asked to stop, then closes every connection (1001) and the
 * truth file. It gives no items.
 */
export const venueSimulatorStage = defineStage({
  name: 'venue-simulator',
  kind: 'source',
  summary: 'Serves a simulated venue (websocket streams and REST snapshots) on 127.0.0.1 until stopped; gives no items',
  takes: 'none',
  gives: 'any',
  usesStdout: true,
  stopsOnRequest: true,
  options,
  async create(o, ctx) {
    const venue = SIMULATED_VENUES.find((v) => v === o.venue)
    if (venue === undefined) {
      throw new UsageError('usage.unknown-venue', `--venue: no simulator for "${o.venue}"; the venues known: ${SIMULATED_VENUES.join(', ')}`)
    }
    let startTime: number | undefined
    if (o.start !== undefined) {
      startTime = Date.parse(o.start)
      if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(o.start) || Number.isNaN(startTime)) {
        throw new UsageError('usage.bad-option', `--start: ${JSON.stringify(o.start)} is not an RFC 3339 time (2026-10-03T14:00:00Z)`)
      }
    }
    let faults
    if (o.faults !== undefined) {
      const text = (await readInputFile(o.faults, FAULT_PLAN_LIMIT)).toString('utf8')
      try {
        faults = parseFaultPlan(JSON.parse(text))
      } catch (err) {
        throw new UsageError('usage.bad-fault-plan', `--faults: ${err instanceof SyntaxError ? 'not JSON: ' : ''}${(err as Error).message}`, { location: { file: o.faults } })
      }
    }
    // Loaded here: the simulator's modules (ws) are for this command only, not every command's start-up.
    const { startVenueSimulator } = await import('../src/sim/venue/simulator.js')
    const sim = await startVenueSimulator({
      venue, port: o.port, seed: o.seed, rate: o.rate, timeScale: o.timeScale, keepTruth: false,
      ...(o.instruments !== undefined ? { instruments: o.instruments.split(',') } : {}),
      ...(o.pingIntervalMs !== undefined ? { pingIntervalMs: o.pingIntervalMs } : {}),
      ...(o.pongTimeoutMs !== undefined ? { pongTimeoutMs: o.pongTimeoutMs } : {}),
      ...(startTime !== undefined ? { startTime } : {}),
      ...(faults !== undefined ? { faults } : {}),
      ...(o.truth !== undefined ? { truthFile: o.truth } : {}),
    }).catch((err: Error) => {
      if (!(err instanceof RangeError)) throw err
      // What the venue cannot do: a fault it cannot show names the plan, a symbol it does not take the option.
      if (err.message.startsWith('faults[')) throw new UsageError('usage.bad-fault-plan', `--faults: ${err.message}`, { location: { file: o.faults! } })
      throw new UsageError('usage.bad-option', `--venue ${venue}: ${err.message}`)
    })
    ctx.stdout.write(`ws ${sim.wsUrl}\nrest ${sim.restUrl}\n`)
    // A stream that never gives an item. Asked to stop (SIGINT, SIGTERM), it closes the simulator and ends, and
    // the run ends cleanly (exit 0); torn down (a second signal, another stage failing), it closes it too.
    const stream = new Readable({
      objectMode: true,
      read() {},
      destroy(_err, done) {
        // The run already knows why it stopped; only a failure to close is news.
        sim.close().then(() => done(null), done)
      },
    })
    const stop = () => sim.close().then(() => {
      Object.assign(ctx.summary, { frames_sent: sim.stats.framesSent, connections: sim.stats.connectionsAccepted })
      stream.push(null)
    }, (err: Error) => stream.destroy(err))
    if (ctx.stopRequested.aborted) void stop()
    else ctx.stopRequested.addEventListener('abort', () => void stop(), { once: true })
    return stream
  },
})

/** `pipe run simulate-venue --venue binance|binance-usdm|kraken --port 0 [--seed N] [--rate N] [--faults PLAN.json] [--truth FILE] ...`. */
export const simulateVenuePipeline = definePipeline({
  name: 'simulate-venue',
  summary: 'Serve a simulated venue (Binance spot, Binance USD-M futures, Kraken spot) on 127.0.0.1 (websocket streams, snapshots, keep-alive, a fault plan, the truth of what was sent) until stopped',
  options,
  stages(o) {
    return [
      { stage: 'venue-simulator', options: o },
      { stage: 'report', options: { field: 'items' } },
    ]
  },
})

/** Registers the venue simulator's stage and pipeline. */
export function registerSimulateVenue(registry: Registry): void {
  registry.addStage(venueSimulatorStage as unknown as StageDef)
  registry.addPipeline(simulateVenuePipeline as unknown as PipelineDef)
}

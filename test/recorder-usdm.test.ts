/**
 * The recorder daemon recording Binance USD-M futures from the venue simulator (`venue: 'binance-usdm'`),
 * on all four channels (trades from `@aggTrade`, book from `@depth@100ms` and `/fapi/v1/depth`, funding from
 * `@markPrice`, liquidations from `@forceOrder`), two replicas, through a plan holding every fault kind that
 * applies to each stream; the sealed hours state exactly what the simulator's truth says it did:
 * sequence_gaps only where the venue dropped aggregates or depth updates (never for the holes Binance
 * leaves in an aggregate's f..l), reconnect windows and their close codes, conflicts, replica_agreement,
 * unrepresentable frames and completeness. `pipe run verify` passes, every frame the simulator wrote to a
 * connection is in a raw file with that replica's receipt (for funding and liquidations, which have no
 * tables, the raw file is all there is), and the book channel journals a REST snapshot after every
 * (re)subscription and every break it saw.
 *
 * The bench (a simulator a channel, the recorder on their clock) and what the truth says the hours must
 * state are test/helpers/recorder-truth.ts, shared with test/recorder-faults.test.ts (spot). The adapter of
 * each channel is `venueAt('binance-usdm', …)` at its simulator.
 *
 * The adapter states 3 minutes of silence as healthy (the server's ping interval), and the recorder's stall
 * detector then waits 3.6 minutes of real time, whatever the time scale: no stall here is long enough for it,
 * so every stall is one the recorder must ride out (or that ends in the venue's close). A stall that
 * resumes sends its frames late: those held longer than the sealer's pairing window (5 s) after the other
 * replica received them are two lines, one a replica, as the journal's receive times say.
 *
 * On a loaded machine: the clock reads once per event-loop turn (the bench's), runs at real time once hour 14
 * and its grace have passed (SlowingClock), and every hour the journal reached is sealed after stopping.
 */
import { readdir } from 'node:fs/promises'
import t from 'tap'
import {
  HOUR_14, HOUR_MS, MIN, checkFaultHour, checkSealedAndVerified, gapAround, hourDir, inHour, loggedErrors, msToNs, openBench, recordAndSeal,
} from './helpers/recorder-truth.js'
import type { Channel } from '../src/formats/record/types.js'
import { SimulatedClock } from '../src/recorder/clock/simulated-clock.js'
import type { FaultPlanInput } from '../src/sim/venue/faults.js'
import { venueAt } from '../src/venues/index.js'

const VENUE = 'binance-usdm'
/** The channels Binance USD-M serves. */
type UsdmChannel = Extract<Channel, 'trades' | 'book' | 'funding' | 'liquidations'>
const CHANNELS: readonly UsdmChannel[] = ['trades', 'book', 'funding', 'liquidations']

/**
 * The simulated clock at `scale` times real time until `slowAfterMs`, then at real time: once the hour
 * under test and its grace have passed, a loaded machine's slow seals (the daemon's run at nice 19, and one
 * starved for 30 s is run again) add no more simulated hours to record and seal.
 */
class SlowingClock extends SimulatedClock {
  private readonly slowAfterNs: bigint
  constructor(startMs: number, private readonly scale: number, slowAfterMs: number) {
    super(msToNs(startMs), scale)
    this.slowAfterNs = msToNs(slowAfterMs)
  }

  override nowNs(): bigint {
    const t = super.nowNs()
    return t <= this.slowAfterNs ? t : this.slowAfterNs + (t - this.slowAfterNs) / BigInt(this.scale)
  }
}

const bench = await openBench(t, {
  venue: VENUE, channels: CHANNELS, adapterAt: (sim) => venueAt(VENUE, { ws: sim?.wsUrl, rest: sim?.restUrl }),
  // An aggregate and a depth update every 2 s a symbol, a mark price every 3 s: some 1,000 frames a real
  // second a replica at 240 times real time, over four channels.
  rate: 0.5, depthIntervalMs: 2000,
  clock: (startMs, scale) => new SlowingClock(startMs, scale, HOUR_14 + HOUR_MS + 3 * MIN),
  sealedWithinMs: 600_000,
})

/**
 * 240 times real time: hour 14 takes 15 s. The pairing window (5 s) is 21 ms of real time, and five
 * simulated minutes 1.25 s: margins a loaded machine needs (at 360, with four channels, a replica was once
 * not yet resubscribed 1.7 s after a disconnect).
 */
const SCALE = 240
/** A stall the recorder rides out: 20 s simulated is 83 ms of real time. */
const SHORT_STALL_MS = 20_000
/**
 * The start of hour 14: the daemon seals hour 14 alone (four seals, not eight with an hour 13 before it),
 * and the hour is covered from each replica's first subscription, a few simulated seconds in.
 */
const START = HOUR_14
/** Simulated ms after the simulators start of a minute of hour 14. */
const at = (minute: number) => HOUR_14 - START + minute * MIN

/**
 * Every fault kind that applies to each futures stream (docs/simulator.md, "USD-M futures"): gaps and
 * conflicts only where there are ids (aggregates; depth updates); the rest on all four. A fault that names a
 * replica comes at least seven simulated minutes (1.75 s real) after the one that closed its connection, so
 * that the replica has resubscribed even on a loaded machine; while one replica of a channel misses frames,
 * no fault makes the other miss any, and the two never reconnect together. A server shutdown gives the
 * recorder its default ten simulated minutes (2.5 s real) to replace the connection. Faults on the
 * liquidation streams wait for the next liquidation, some 20 simulated seconds away.
 */
const PLANS: Record<UsdmChannel, FaultPlanInput['faults']> = {
  trades: [
    { kind: 'gap', at: at(3), stream: 'btcusdt@aggTrade', count: 3 },
    { kind: 'disconnect', at: at(5), replica: 'a', code: 4001, reason: 'fault' },
    { kind: 'conflict', at: at(8), replica: 'b', stream: 'btcusdt@aggTrade' },
    { kind: 'unrepresentable', at: at(12), replica: 'a', stream: 'ethusdt@aggTrade', variant: 'price-number' },
    { kind: 'only-one', at: at(14), replica: 'b', stream: 'ethusdt@aggTrade' },
    { kind: 'stall', at: at(18), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'scheduled-disconnect', at: at(20), replica: 'b' },
    { kind: 'disconnect', at: at(26), replica: 'a' },
    { kind: 'stall', at: at(32), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'server-shutdown', at: at(36), replica: 'a' },
    { kind: 'only-one', at: at(42), replica: 'a', stream: 'btcusdt@aggTrade' },
    { kind: 'stall', at: at(44), replica: 'b', durationMs: 1.5 * SHORT_STALL_MS, then: 'close', code: 1013, reason: 'try again later' },
    { kind: 'conflict', at: at(50), replica: 'a', stream: 'ethusdt@aggTrade', replace: true },
    { kind: 'unrepresentable', at: at(53), stream: 'btcusdt@aggTrade', variant: 'missing-field' },
    { kind: 'gap', at: at(56), stream: 'ethusdt@aggTrade', count: 2 },
  ],
  book: [
    { kind: 'gap', at: at(3), stream: 'ethusdt@depth@100ms', count: 2 },
    { kind: 'disconnect', at: at(5), replica: 'b', code: 4002, reason: 'fault' },
    { kind: 'only-one', at: at(10), replica: 'a', stream: 'btcusdt@depth@100ms' },
    { kind: 'unrepresentable', at: at(12), stream: 'btcusdt@depth@100ms', variant: 'missing-field' },
    { kind: 'stall', at: at(14), replica: 'a', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'server-shutdown', at: at(18), replica: 'b' },
    { kind: 'only-one', at: at(24), replica: 'b', stream: 'ethusdt@depth@100ms' },
    { kind: 'stall', at: at(27), replica: 'b', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'unrepresentable', at: at(31), replica: 'a', stream: 'ethusdt@depth@100ms', variant: 'truncated' },
    { kind: 'scheduled-disconnect', at: at(34), replica: 'a' },
    { kind: 'gap', at: at(38), stream: 'btcusdt@depth@100ms', count: 1 },
    { kind: 'disconnect', at: at(42), replica: 'b' },
    { kind: 'unrepresentable', at: at(50), replica: 'b', stream: 'ethusdt@depth@100ms', variant: 'price-number' },
  ],
  funding: [
    { kind: 'only-one', at: at(4), replica: 'a', stream: 'btcusdt@markPrice' },
    { kind: 'unrepresentable', at: at(7), stream: 'ethusdt@markPrice', variant: 'price-number' },
    { kind: 'disconnect', at: at(10), replica: 'b', code: 4003, reason: 'fault' },
    { kind: 'stall', at: at(16), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'unrepresentable', at: at(20), replica: 'b', stream: 'btcusdt@markPrice', variant: 'missing-field' },
    { kind: 'scheduled-disconnect', at: at(24), replica: 'a' },
    { kind: 'stall', at: at(30), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'server-shutdown', at: at(34), replica: 'a' },
    { kind: 'unrepresentable', at: at(40), replica: 'b', stream: 'btcusdt@markPrice', variant: 'truncated' },
    { kind: 'only-one', at: at(44), replica: 'b', stream: 'ethusdt@markPrice' },
    { kind: 'stall', at: at(48), replica: 'a', durationMs: SHORT_STALL_MS, then: 'close', code: 1013, reason: 'try again later' },
  ],
  liquidations: [
    { kind: 'only-one', at: at(4), replica: 'b', stream: 'btcusdt@forceOrder' },
    { kind: 'unrepresentable', at: at(8), stream: 'ethusdt@forceOrder', variant: 'missing-field' },
    { kind: 'disconnect', at: at(14), replica: 'a' },
    { kind: 'unrepresentable', at: at(20), replica: 'b', stream: 'btcusdt@forceOrder', variant: 'price-number' },
    { kind: 'stall', at: at(26), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'scheduled-disconnect', at: at(30), replica: 'b' },
    { kind: 'server-shutdown', at: at(36), replica: 'a' },
    { kind: 'unrepresentable', at: at(42), replica: 'a', stream: 'ethusdt@forceOrder', variant: 'truncated' },
    { kind: 'disconnect', at: at(48), replica: 'b', code: 4004, reason: 'fault' },
  ],
}

t.test('USD-M futures, every fault kind on all four channels: the sealed hours state exactly what the simulator did', async (t) => {
  const run = await recordAndSeal(t, bench, 'usdm', { startMs: START, scale: SCALE, plans: PLANS })
  checkSealedAndVerified(t, run)
  for (const channel of CHANNELS) {
    t.test(channel, async (t) => {
      const { truth, m, lines, gaps } = await checkFaultHour(t, run, channel)
      const drops = truth.venueDrops(HOUR_14)
      t.equal(gaps.length, drops.length, `one gap for each the venue made (${drops.length}), and no other`)
      const covers = (d: (typeof drops)[number]) => m.sequence_gaps.some((g) => g.instrument === d.instrument && BigInt(g.after_id) < d.first && BigInt(g.before_id) > d.last)
      t.same(drops.filter((d) => !covers(d)), [], 'each around the ids the venue dropped')
      if (channel === 'trades') {
        t.same(drops.map(gapAround).sort(), gaps, 'trades: exactly the aggregate ids either side of those dropped')
        // Aggregates by symbol and id (each once, whatever connections and variants it went to).
        const aggs = new Map<string, { f: number; l: number }>()
        for (const r of truth.records) {
          if (r.kind !== 'frame' || !inHour(r.simTimeUs, HOUR_14)) continue
          let d: { s: string; a: number; f: number; l: number } | undefined
          try {
            d = (JSON.parse(r.text) as { data?: typeof d }).data
          } catch {
            continue
          }
          if (d) aggs.set(`${d.s} ${d.a}`, { f: d.f, l: d.l })
        }
        const holes = [...aggs].filter(([key, x]) => {
          const [s, a] = key.split(' ')
          const prev = aggs.get(`${s} ${Number(a) - 1}`)
          return prev !== undefined && x.f > prev.l + 1
        }).length
        t.ok(holes > 10, `the aggregates leave trade ids out now and then (${holes} holes between one's l and the next's f), and none is a gap`)
      }
      if (channel === 'funding' || channel === 'liquidations') {
        t.same((await readdir(hourDir(run, channel, '14'))).filter((f) => f.endsWith('.parquet')), [], 'no tables: the raw file is the record')
        t.ok(lines.length > (channel === 'funding' ? 2000 : 100), `the hour's ${channel} frames are in it (${lines.length} lines)`)
      }
    })
  }
  t.equal(run.logLines.filter((l) => l.includes('opening the successor before the venue announced a server shutdown')).length, 4, 'each server shutdown announced was met with a successor')
  t.same(loggedErrors(run), [], 'no error logged')
})

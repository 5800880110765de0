/**
 * The recorder daemon recording Bybit v5, linear category, from the venue simulator (`venue: 'bybit'`) on all
 * four channels, two replicas, through a plan holding every fault kind Bybit can show (it announces no
 * shutdown, and its books carry no checksum): trades (no trade sequence: ids are UUIDs, so a venue gap is no
 * sequence gap, and none is invented), the book (a snapshot on subscribing, deltas whose `u` is the previous
 * + 1; a break is followed by a resync), tickers and allLiquidation. The sealed hours state exactly what the
 * simulator's truth says: sequence_gaps, reconnect windows, conflicts, unrepresentable frames,
 * replica_agreement, completeness; `pipe run verify` passes.
 *
 * The bench and what the truth says are test/helpers/recorder-truth.ts, shared with the other venues' proofs.
 */
import t from 'tap'
import { HOUR_14, MIN, checkFaultHour, checkSealedAndVerified, loggedErrors, openBench, recordAndSeal } from './helpers/recorder-truth.js'
import type { Channel } from '../src/formats/record/types.js'
import type { FaultPlanInput } from '../src/sim/venue/faults.js'
import { venueAt } from '../src/venues/index.js'

const VENUE = 'bybit'
const SYMBOLS = ['BTCUSDT', 'ETHUSDT']
type BybitChannel = Extract<Channel, 'trades' | 'book' | 'funding' | 'liquidations'>
/** 240 times real time: hour 14 takes 15 s; the pairing window (5 s) is 21 ms of real time. */
const SCALE = 240
const SHORT_STALL_MS = 20_000
const at = (minute: number) => minute * MIN

const common = {
  venue: VENUE, instruments: SYMBOLS, adapterAt: (sim?: { wsUrl: string }) => venueAt(VENUE, { ws: sim?.wsUrl }),
  // A trade and a book delta every 2 s a symbol; a tickers delta every 3 s; a liquidation a few a minute.
  rate: 0.5, depthIntervalMs: 2000, sealedWithinMs: 600_000,
} as const
const bench = await openBench(t, { ...common, channels: ['trades', 'book', 'funding', 'liquidations'] as const })

/**
 * Faults naming a replica come at least five simulated minutes after the one that closed its connection;
 * faults on liquidations wait for the next liquidation. A tickers delta without its markPrice is no break
 * ("a param not found has not changed"): missing-field drops its symbol.
 */
const PLANS: Record<BybitChannel, FaultPlanInput['faults']> = {
  trades: [
    { kind: 'gap', at: at(3), stream: 'btcusdt@trade', count: 3 },
    { kind: 'disconnect', at: at(5), replica: 'a', code: 4001, reason: 'fault' },
    { kind: 'conflict', at: at(10), replica: 'b', stream: 'btcusdt@trade' },
    { kind: 'unrepresentable', at: at(13), replica: 'a', stream: 'ethusdt@trade', variant: 'price-number' },
    { kind: 'only-one', at: at(15), replica: 'b', stream: 'ethusdt@trade' },
    { kind: 'stall', at: at(18), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'scheduled-disconnect', at: at(20), replica: 'b' },
    { kind: 'stall', at: at(26), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'stall', at: at(40), replica: 'b', durationMs: 1.5 * SHORT_STALL_MS, then: 'close', code: 1013, reason: 'try again later' },
    { kind: 'conflict', at: at(46), replica: 'a', stream: 'ethusdt@trade', replace: true },
    { kind: 'unrepresentable', at: at(50), stream: 'btcusdt@trade', variant: 'missing-field' },
    { kind: 'unrepresentable', at: at(54), replica: 'b', stream: 'ethusdt@trade', variant: 'truncated' },
  ],
  book: [
    { kind: 'gap', at: at(6), stream: 'ethusdt@book', count: 2 },
    { kind: 'disconnect', at: at(9), replica: 'b', code: 4002, reason: 'fault' },
    { kind: 'only-one', at: at(14), replica: 'a', stream: 'btcusdt@book' },
    // A service restart: a snapshot with u = 1 to both replicas, and deltas from 2: no gap.
    { kind: 'restart', at: at(20), stream: 'btcusdt@book' },
    { kind: 'stall', at: at(26), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'unrepresentable', at: at(29), stream: 'btcusdt@book', variant: 'missing-field' },
    { kind: 'stall', at: at(32), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'unrepresentable', at: at(36), replica: 'b', stream: 'ethusdt@book', variant: 'truncated' },
    { kind: 'scheduled-disconnect', at: at(40), replica: 'a' },
    { kind: 'unrepresentable', at: at(46), replica: 'b', stream: 'btcusdt@book', variant: 'price-number' },
  ],
  funding: [
    { kind: 'only-one', at: at(4), replica: 'a', stream: 'btcusdt@funding' },
    { kind: 'unrepresentable', at: at(8), stream: 'ethusdt@funding', variant: 'price-number' },
    { kind: 'disconnect', at: at(12), replica: 'b', code: 4003, reason: 'fault' },
    { kind: 'stall', at: at(18), replica: 'a', durationMs: 90_000, then: 'drop' },
    { kind: 'unrepresentable', at: at(24), replica: 'b', stream: 'btcusdt@funding', variant: 'missing-field' },
    { kind: 'scheduled-disconnect', at: at(28), replica: 'a' },
    { kind: 'stall', at: at(34), replica: 'b', durationMs: 90_000, then: 'resume' },
    { kind: 'unrepresentable', at: at(50), replica: 'b', stream: 'ethusdt@funding', variant: 'truncated' },
  ],
  liquidations: [
    { kind: 'only-one', at: at(4), replica: 'b', stream: 'btcusdt@liquidation' },
    { kind: 'unrepresentable', at: at(8), stream: 'ethusdt@liquidation', variant: 'missing-field' },
    { kind: 'disconnect', at: at(14), replica: 'a' },
    { kind: 'unrepresentable', at: at(20), replica: 'b', stream: 'btcusdt@liquidation', variant: 'truncated' },
    { kind: 'stall', at: at(26), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'scheduled-disconnect', at: at(30), replica: 'b' },
    { kind: 'unrepresentable', at: at(42), replica: 'a', stream: 'ethusdt@liquidation', variant: 'truncated' },
    { kind: 'disconnect', at: at(48), replica: 'b', code: 4004, reason: 'fault' },
  ],
}

t.test('Bybit, every fault kind on all four channels: the sealed hours state exactly what the simulator did', async (t) => {
  const run = await recordAndSeal(t, bench, 'bybit', { startMs: HOUR_14, scale: SCALE, plans: PLANS })
  checkSealedAndVerified(t, run)
  for (const channel of bench.channels) {
    t.test(channel, async (t) => {
      const { m, gaps, lines } = await checkFaultHour(t, run, channel)
      if (channel === 'trades') t.same(gaps, [], 'trades: no sequence gap, though the venue dropped trades (Bybit states no trade sequence)')
      if (channel === 'book') t.equal(gaps.length, 1, 'book: the deltas the venue dropped, and no gap at the service restart (u = 1)')
      t.same(m.checksum_failures ?? [], [], 'no checksum: Bybit\'s books carry none')
      if (channel === 'funding' || channel === 'liquidations') t.ok(lines.length > 100, `${channel}: ${lines.length} lines, raw only`)
    })
  }
  t.same(loggedErrors(run), [], 'no error logged')
})

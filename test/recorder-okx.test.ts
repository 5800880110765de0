/**
 * The recorder daemon recording OKX v5 (perpetual swaps) from the venue simulator (`venue: 'okx'`) on all four
 * channels, two replicas, through a plan holding every fault kind OKX can show: trades (no trade sequence:
 * the venue states none, so a venue gap is no sequence gap, and none is invented), books (snapshot on
 * subscribing, updates chained by prevSeqId, each with the book's checksum, recomputed on each replica's
 * books; a break or a mismatch is followed by a resync), funding-rate and liquidation-orders (subscribed by
 * instrument type, SWAP: a recorder of its own). The sealed hours state exactly what the simulator's truth
 * says: sequence_gaps, checksum_failures, reconnect windows, conflicts, unrepresentable frames,
 * replica_agreement, completeness; the 64008 notice is met with a successor; `pipe run verify` passes.
 *
 * The bench and what the truth says are test/helpers/recorder-truth.ts, shared with the other venues' proofs.
 */
import t from 'tap'
import { HOUR_14, MIN, checkFaultHour, checkSealedAndVerified, loggedErrors, openBench, recordAndSeal } from './helpers/recorder-truth.js'
import type { Channel } from '../src/formats/record/types.js'
import type { FaultPlanInput } from '../src/sim/venue/faults.js'
import { venueAt } from '../src/venues/index.js'

const VENUE = 'okx'
const SWAPS = ['BTC-USDT-SWAP', 'ETH-USDT-SWAP']
type OkxChannel = Extract<Channel, 'trades' | 'book' | 'funding' | 'liquidations'>
/** 240 times real time: hour 14 takes 15 s; the pairing window (5 s) is 21 ms of real time. */
const SCALE = 240
const SHORT_STALL_MS = 20_000
/** A notice 5 simulated minutes (1.25 s of real time) before the upgrade closes the connection. */
const NOTICE_MS = 300_000
const at = (minute: number) => minute * MIN

const common = {
  venue: VENUE, instruments: SWAPS, adapterAt: (sim?: { wsUrl: string }) => venueAt(VENUE, { ws: sim?.wsUrl }),
  // A taker order and a book update every 2 s a swap; funding once a minute; a liquidation a few a minute.
  rate: 0.5, depthIntervalMs: 2000, sealedWithinMs: 600_000,
} as const
const bench = await openBench(t, { ...common, channels: ['trades', 'book', 'funding'] as const })
const liquidationBench = await openBench(t, { ...common, channels: ['liquidations'] as const, subscribe: ['SWAP'] })

/**
 * Faults naming a replica come at least five simulated minutes after the one that closed its connection;
 * faults on funding wait for its next push (once a minute), on liquidations for the next liquidation. A
 * liquidation with its price as a number is no break: the adapter keeps liquidations raw and reads only
 * what it states of them (instrument, type, each detail's time), so they are broken by cutting or dropping.
 */
const PLANS: Record<OkxChannel, FaultPlanInput['faults']> = {
  trades: [
    { kind: 'gap', at: at(3), stream: 'btc-usdt-swap@trade', count: 3 },
    { kind: 'disconnect', at: at(5), replica: 'a', code: 4001, reason: 'fault' },
    { kind: 'conflict', at: at(10), replica: 'b', stream: 'btc-usdt-swap@trade' },
    { kind: 'unrepresentable', at: at(13), replica: 'a', stream: 'eth-usdt-swap@trade', variant: 'price-number' },
    { kind: 'only-one', at: at(15), replica: 'b', stream: 'eth-usdt-swap@trade' },
    { kind: 'stall', at: at(18), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'scheduled-disconnect', at: at(20), replica: 'b' },
    { kind: 'stall', at: at(26), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'server-shutdown', at: at(30), replica: 'a', closeAfterMs: NOTICE_MS },
    { kind: 'stall', at: at(40), replica: 'b', durationMs: 1.5 * SHORT_STALL_MS, then: 'close', code: 1013, reason: 'try again later' },
    { kind: 'conflict', at: at(46), replica: 'a', stream: 'eth-usdt-swap@trade', replace: true },
    { kind: 'unrepresentable', at: at(50), stream: 'btc-usdt-swap@trade', variant: 'missing-field' },
    { kind: 'unrepresentable', at: at(54), replica: 'b', stream: 'eth-usdt-swap@trade', variant: 'truncated' },
  ],
  book: [
    { kind: 'checksum', at: at(3), replica: 'a', stream: 'btc-usdt-swap@book' },
    { kind: 'gap', at: at(6), stream: 'eth-usdt-swap@book', count: 2 },
    { kind: 'disconnect', at: at(9), replica: 'b', code: 4002, reason: 'fault' },
    { kind: 'only-one', at: at(14), replica: 'a', stream: 'btc-usdt-swap@book' },
    { kind: 'server-shutdown', at: at(18), replica: 'a', closeAfterMs: NOTICE_MS },
    // A maintenance reset: the next update's seqId below its prevSeqId, the chain going on from it: no gap.
    { kind: 'restart', at: at(24), stream: 'eth-usdt-swap@book' },
    { kind: 'stall', at: at(26), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'unrepresentable', at: at(29), stream: 'btc-usdt-swap@book', variant: 'missing-field' },
    { kind: 'stall', at: at(32), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'unrepresentable', at: at(36), replica: 'b', stream: 'eth-usdt-swap@book', variant: 'truncated' },
    { kind: 'scheduled-disconnect', at: at(40), replica: 'a' },
    { kind: 'unrepresentable', at: at(46), replica: 'b', stream: 'btc-usdt-swap@book', variant: 'price-number' },
    { kind: 'checksum', at: at(50), stream: 'eth-usdt-swap@book' },
  ],
  funding: [
    { kind: 'only-one', at: at(4), replica: 'a', stream: 'btc-usdt-swap@funding' },
    { kind: 'unrepresentable', at: at(8), stream: 'eth-usdt-swap@funding', variant: 'price-number' },
    { kind: 'disconnect', at: at(12), replica: 'b', code: 4003, reason: 'fault' },
    { kind: 'stall', at: at(18), replica: 'a', durationMs: 90_000, then: 'drop' },
    { kind: 'unrepresentable', at: at(24), replica: 'b', stream: 'btc-usdt-swap@funding', variant: 'missing-field' },
    { kind: 'scheduled-disconnect', at: at(28), replica: 'a' },
    { kind: 'stall', at: at(34), replica: 'b', durationMs: 90_000, then: 'resume' },
    { kind: 'server-shutdown', at: at(40), replica: 'a', closeAfterMs: NOTICE_MS },
    { kind: 'unrepresentable', at: at(50), replica: 'b', stream: 'eth-usdt-swap@funding', variant: 'truncated' },
  ],
  liquidations: [
    { kind: 'only-one', at: at(4), replica: 'b', stream: 'btc-usdt-swap@liquidation' },
    { kind: 'unrepresentable', at: at(8), stream: 'eth-usdt-swap@liquidation', variant: 'missing-field' },
    { kind: 'disconnect', at: at(14), replica: 'a' },
    { kind: 'unrepresentable', at: at(20), replica: 'b', stream: 'btc-usdt-swap@liquidation', variant: 'truncated' },
    { kind: 'stall', at: at(26), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'scheduled-disconnect', at: at(30), replica: 'b' },
    { kind: 'server-shutdown', at: at(36), replica: 'a', closeAfterMs: NOTICE_MS },
    { kind: 'unrepresentable', at: at(42), replica: 'a', stream: 'eth-usdt-swap@liquidation', variant: 'truncated' },
    { kind: 'disconnect', at: at(48), replica: 'b', code: 4004, reason: 'fault' },
  ],
}

t.test('OKX, every fault kind on trades, books and funding: the sealed hours state exactly what the simulator did', async (t) => {
  const { trades, book, funding } = PLANS
  const run = await recordAndSeal(t, bench, 'okx', { startMs: HOUR_14, scale: SCALE, plans: { trades, book, funding } })
  checkSealedAndVerified(t, run)
  for (const channel of bench.channels) {
    t.test(channel, async (t) => {
      const { truth, m, gaps } = await checkFaultHour(t, run, channel)
      if (channel === 'trades') t.same(gaps, [], 'trades: no sequence gap, though the venue dropped trades (OKX states no trade sequence)')
      if (channel === 'book') {
        t.equal(gaps.length, 1, 'book: the seqIds the venue dropped, and no gap at the maintenance reset')
        t.ok((m.checksum_failures ?? []).length >= truth.appliedIn(HOUR_14, 'checksum').length + 1, `book: ${(m.checksum_failures ?? []).length} checksum failures`)
      }
    })
  }
  t.equal(run.logLines.filter((l) => l.includes('opening the successor before the venue announced a server shutdown')).length, 3, 'each notice was met with a successor')
  t.same(loggedErrors(run), [], 'no error logged')
})

t.test('OKX liquidation-orders, subscribed by instrument type: the sealed hour states exactly what the simulator did', async (t) => {
  const run = await recordAndSeal(t, liquidationBench, 'okx-liquidations', { startMs: HOUR_14, scale: SCALE, plans: { liquidations: PLANS.liquidations } })
  checkSealedAndVerified(t, run)
  const { lines } = await checkFaultHour(t, run, 'liquidations')
  t.ok(lines.length > 100, `the hour's liquidations are in its raw file (${lines.length} lines)`)
  t.same(loggedErrors(run), [], 'no error logged')
})

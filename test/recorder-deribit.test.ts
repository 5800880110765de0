/**
 * The recorder daemon recording Deribit (API v2, perpetuals) from the venue simulator (`venue: 'deribit'`) on
 * its three channels: trades (trade_seq +1 an instrument), the book (the whole book first, then changes chained
 * by prev_change_id; a break is followed by a resync) and funding (ticker and perpetual notifications, kept
 * raw), two replicas, through a plan holding every fault kind Deribit can show (it announces no shutdown and
 * its books carry no checksum), while the venue's heartbeat sends test requests the recorder must answer.
 * The sealed hours state exactly what the simulator's truth says; `pipe run verify` passes.
 *
 * The bench and what the truth says are test/helpers/recorder-truth.ts, shared with the other venues' proofs.
 */
import t from 'tap'
import {
  HOUR_14, MIN, checkFaultHour, checkSealedAndVerified, gapAround, loggedErrors, openBench, recordAndSeal,
} from './helpers/recorder-truth.js'
import type { Channel } from '../src/formats/record/types.js'
import type { FaultPlanInput } from '../src/sim/venue/faults.js'
import { venueAt } from '../src/venues/index.js'

const VENUE = 'deribit'
type DeribitChannel = Extract<Channel, 'trades' | 'book' | 'funding'>
const CHANNELS: readonly DeribitChannel[] = ['trades', 'book', 'funding']

const bench = await openBench(t, {
  venue: VENUE, channels: CHANNELS, instruments: ['BTC-PERPETUAL', 'ETH-PERPETUAL'], adapterAt: (sim) => venueAt(VENUE, { ws: sim?.wsUrl }),
  // A trade and a book change every 2 s an instrument; a ticker and a perpetual notification every second.
  rate: 0.5, depthIntervalMs: 2000,
  sealedWithinMs: 600_000,
})

/** 240 times real time: hour 14 takes 15 s; the pairing window (5 s) is 21 ms of real time. */
const SCALE = 240
/** A stall the recorder rides out: 20 s simulated is 83 ms of real time. */
const SHORT_STALL_MS = 20_000
const at = (minute: number) => minute * MIN

/**
 * Every fault kind Deribit can show. Faults naming a replica come at least five simulated minutes after the
 * one that closed its connection.
 */
const PLANS: Record<DeribitChannel, FaultPlanInput['faults']> = {
  trades: [
    { kind: 'gap', at: at(3), stream: 'btc-perpetual@trade', count: 3 },
    { kind: 'disconnect', at: at(5), replica: 'a', code: 4001, reason: 'fault' },
    { kind: 'conflict', at: at(10), replica: 'b', stream: 'btc-perpetual@trade' },
    { kind: 'unrepresentable', at: at(14), replica: 'a', stream: 'eth-perpetual@trade', variant: 'price-string' },
    { kind: 'only-one', at: at(16), replica: 'b', stream: 'eth-perpetual@trade' },
    { kind: 'stall', at: at(18), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'scheduled-disconnect', at: at(20), replica: 'b' },
    { kind: 'stall', at: at(26), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'stall', at: at(30), replica: 'a', durationMs: 1.5 * SHORT_STALL_MS, then: 'close', code: 1013, reason: 'try again later' },
    { kind: 'conflict', at: at(40), replica: 'a', stream: 'eth-perpetual@trade', replace: true },
    { kind: 'unrepresentable', at: at(46), stream: 'btc-perpetual@trade', variant: 'missing-field' },
    { kind: 'gap', at: at(50), stream: 'eth-perpetual@trade', count: 2 },
    { kind: 'unrepresentable', at: at(53), replica: 'b', stream: 'btc-perpetual@trade', variant: 'truncated' },
  ],
  book: [
    { kind: 'gap', at: at(6), stream: 'eth-perpetual@book', count: 2 },
    { kind: 'disconnect', at: at(9), replica: 'b', code: 4002, reason: 'fault' },
    { kind: 'only-one', at: at(14), replica: 'a', stream: 'btc-perpetual@book' },
    { kind: 'stall', at: at(20), replica: 'a', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'unrepresentable', at: at(24), stream: 'btc-perpetual@book', variant: 'missing-field' },
    { kind: 'stall', at: at(28), replica: 'b', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'unrepresentable', at: at(32), replica: 'a', stream: 'eth-perpetual@book', variant: 'truncated' },
    { kind: 'scheduled-disconnect', at: at(36), replica: 'a' },
    { kind: 'unrepresentable', at: at(42), replica: 'b', stream: 'btc-perpetual@book', variant: 'price-string' },
    { kind: 'disconnect', at: at(52), replica: 'a' },
  ],
  funding: [
    { kind: 'only-one', at: at(4), replica: 'a', stream: 'btc-perpetual@ticker' },
    { kind: 'unrepresentable', at: at(8), stream: 'eth-perpetual@perpetual', variant: 'price-string' },
    { kind: 'disconnect', at: at(12), replica: 'b', code: 4003, reason: 'fault' },
    { kind: 'stall', at: at(18), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'unrepresentable', at: at(24), replica: 'b', stream: 'btc-perpetual@ticker', variant: 'missing-field' },
    { kind: 'scheduled-disconnect', at: at(28), replica: 'a' },
    { kind: 'stall', at: at(34), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'unrepresentable', at: at(50), replica: 'b', stream: 'eth-perpetual@ticker', variant: 'truncated' },
  ],
}

t.test('Deribit, every fault kind on its three channels: the sealed hours state exactly what the simulator did', async (t) => {
  const run = await recordAndSeal(t, bench, 'deribit', { startMs: HOUR_14, scale: SCALE, plans: PLANS })
  checkSealedAndVerified(t, run)
  for (const channel of CHANNELS) {
    t.test(channel, async (t) => {
      const { truth, m, gaps, lines } = await checkFaultHour(t, run, channel)
      if (channel === 'trades') t.same(truth.venueDrops(HOUR_14).map(gapAround).sort(), gaps, 'trades: exactly the trade_seqs either side of those the venue dropped')
      if (channel === 'book') t.equal(gaps.length, 1, 'book: the change ids the venue dropped')
      if (channel === 'funding') t.ok(lines.length > 10_000, `funding: ${lines.length} lines, raw only`)
      t.same(m.checksum_failures ?? [], [], 'no checksum: Deribit\'s books carry none')
    })
  }
  t.same(loggedErrors(run), [], 'no error logged')
})

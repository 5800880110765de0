/**
 * The recorder daemon recording Kraken spot (WebSocket v2) from the venue simulator (`venue: 'kraken'`): trades
 * (with the 50-trade snapshot after each subscription) and the book (snapshots over the websocket, every
 * message's CRC32 checksum recomputed on each replica's own books), two replicas, through a plan holding
 * every fault kind Kraken can show. The sealed hours state exactly what the simulator's truth says:
 * sequence_gaps where the venue dropped trades (the book has no sequence numbers: a dropped book update
 * shows as a checksum failure instead), checksum_failures with the venue's and the computed checksum for
 * each mismatch a replica's books found (a corrupted checksum, a dropped update, a frame one replica missed
 * or could not read), each followed by the resync the adapter asks for, reconnect windows with their close
 * codes, conflicts, unrepresentable frames, replica_agreement and completeness. `pipe run verify` passes.
 *
 * The bench and what the truth says are test/helpers/recorder-truth.ts, shared with the Binance proofs.
 */
import t from 'tap'
import {
  HOUR_14, MIN, checkFaultHour, checkSealedAndVerified, gapAround, loggedErrors, openBench, recordAndSeal,
} from './helpers/recorder-truth.js'
import type { Channel } from '../src/formats/record/types.js'
import type { FaultPlanInput } from '../src/sim/venue/faults.js'
import { venueAt } from '../src/venues/index.js'

const VENUE = 'kraken'
type KrakenChannel = Extract<Channel, 'trades' | 'book'>
const CHANNELS: readonly KrakenChannel[] = ['trades', 'book']

const bench = await openBench(t, {
  venue: VENUE, channels: CHANNELS, instruments: ['BTC/USD', 'ETH/USD'], adapterAt: (sim) => venueAt(VENUE, { ws: sim?.wsUrl }),
  // A trade and a book update every 2 s a symbol: heartbeats fill the seconds with nothing else.
  rate: 0.5, depthIntervalMs: 2000,
  sealedWithinMs: 600_000,
})

/** 240 times real time: hour 14 takes 15 s; the pairing window (5 s) is 21 ms of real time. */
const SCALE = 240
/** A stall the recorder rides out: 20 s simulated is 83 ms of real time. */
const SHORT_STALL_MS = 20_000
const at = (minute: number) => minute * MIN

/**
 * Every fault kind Kraken can show (server-shutdown it cannot). Faults naming a replica come at least five
 * simulated minutes after the one that closed its connection; no trade connection is (re)subscribed within
 * three minutes after a conflict, so that no trade snapshot (the last 50 trades, 100 s of them) carries the
 * conflicting id a third time. On the book, every fault that makes a replica miss or misread an update is
 * caught by its next checksum.
 */
const PLANS: Record<KrakenChannel, FaultPlanInput['faults']> = {
  trades: [
    { kind: 'gap', at: at(3), stream: 'btc/usd@trade', count: 3 },
    { kind: 'disconnect', at: at(5), replica: 'a', code: 4001, reason: 'fault' },
    { kind: 'conflict', at: at(10), replica: 'b', stream: 'btc/usd@trade' },
    { kind: 'unrepresentable', at: at(14), replica: 'a', stream: 'eth/usd@trade', variant: 'price-string' },
    { kind: 'only-one', at: at(16), replica: 'b', stream: 'eth/usd@trade' },
    { kind: 'stall', at: at(18), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'scheduled-disconnect', at: at(20), replica: 'b' },
    { kind: 'stall', at: at(26), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'stall', at: at(30), replica: 'a', durationMs: 1.5 * SHORT_STALL_MS, then: 'close', code: 1013, reason: 'try again later' },
    { kind: 'conflict', at: at(40), replica: 'a', stream: 'eth/usd@trade', replace: true },
    { kind: 'unrepresentable', at: at(46), stream: 'btc/usd@trade', variant: 'missing-field' },
    { kind: 'gap', at: at(50), stream: 'eth/usd@trade', count: 2 },
    { kind: 'unrepresentable', at: at(53), replica: 'b', stream: 'btc/usd@trade', variant: 'truncated' },
  ],
  book: [
    { kind: 'checksum', at: at(3), replica: 'a', stream: 'btc/usd@book' },
    { kind: 'gap', at: at(6), stream: 'eth/usd@book', count: 2 },
    { kind: 'disconnect', at: at(9), replica: 'b', code: 4002, reason: 'fault' },
    { kind: 'only-one', at: at(14), replica: 'a', stream: 'btc/usd@book' },
    { kind: 'checksum', at: at(17), stream: 'eth/usd@book' },
    { kind: 'stall', at: at(20), replica: 'a', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'unrepresentable', at: at(24), stream: 'btc/usd@book', variant: 'missing-field' },
    { kind: 'stall', at: at(28), replica: 'b', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'unrepresentable', at: at(32), replica: 'a', stream: 'eth/usd@book', variant: 'truncated' },
    { kind: 'scheduled-disconnect', at: at(36), replica: 'a' },
    { kind: 'unrepresentable', at: at(42), replica: 'b', stream: 'btc/usd@book', variant: 'price-string' },
    { kind: 'checksum', at: at(48), replica: 'b', stream: 'btc/usd@book' },
    { kind: 'disconnect', at: at(52), replica: 'a' },
  ],
}

t.test('Kraken, every fault kind on trades and book: the sealed hours state exactly what the simulator did, checksum failures included', async (t) => {
  const run = await recordAndSeal(t, bench, 'kraken', { startMs: HOUR_14, scale: SCALE, plans: PLANS })
  checkSealedAndVerified(t, run)
  for (const channel of CHANNELS) {
    t.test(channel, async (t) => {
      const { truth, m, gaps } = await checkFaultHour(t, run, channel)
      if (channel === 'trades') {
        t.same(truth.venueDrops(HOUR_14).map(gapAround).sort(), gaps, 'trades: exactly the trade ids either side of those the venue dropped')
        t.equal(gaps.length, 2)
      } else {
        t.same(gaps, [], 'book: no sequence gap (Kraken\'s v2 book has no sequence numbers)')
        const corrupted = truth.appliedIn(HOUR_14, 'checksum').length
        t.ok((m.checksum_failures ?? []).length >= corrupted + 2, `book: the corrupted checksums (${corrupted}) and the updates missed or misread among the ${(m.checksum_failures ?? []).length} checksum failures`)
        t.ok(m.completeness.reasons.includes('checksum_failure'), 'completeness names them')
      }
    })
  }
  const resyncs = run.logLines.filter((l) => l.includes('asking the venue for the book again')).length
  t.ok(resyncs >= 5, `each mismatch was followed by a resync of that book (${resyncs} logged)`)
  t.same(loggedErrors(run), [], 'no error logged')
})

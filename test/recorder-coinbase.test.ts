/**
 * The recorder daemon recording Coinbase Advanced Trade from the venue simulator (`venue: 'coinbase'`): trades
 * (market_trades, with the snapshot of recent trades after each subscription) and the book (level2: a snapshot,
 * then each level's new quantity), each connection also subscribed to heartbeats, two replicas, through a plan
 * holding every fault kind Coinbase can show (it announces no shutdown and its books carry no checksum).
 * Coinbase numbers each connection's messages (`sequence_num`) and nothing else: its only gap detector, so
 * the sealed hours state each replica's own breaks in that count (a stall that dropped messages), never the
 * trades the venue itself dropped (nothing can see those); and a message both replicas received is one line
 * only while their two connections' counts coincide (opened and subscribed in one turn of a loaded machine,
 * nothing yet sent to one alone): after a reconnect the same trade or update reaches them under different
 * numbers, so two lines. The sealed hours state exactly what the simulator's truth says; `pipe run verify` passes.
 *
 * The bench and what the truth says are test/helpers/recorder-truth.ts, shared with the other venues' proofs.
 */
import t from 'tap'
import { HOUR_14, MIN, checkFaultHour, checkSealedAndVerified, loggedErrors, openBench, rawLines, recordAndSeal } from './helpers/recorder-truth.js'
import type { Channel } from '../src/formats/record/types.js'
import type { FaultPlanInput } from '../src/sim/venue/faults.js'
import { venueAt } from '../src/venues/index.js'

const VENUE = 'coinbase'
type CoinbaseChannel = Extract<Channel, 'trades' | 'book'>
const CHANNELS: readonly CoinbaseChannel[] = ['trades', 'book']

const bench = await openBench(t, {
  venue: VENUE, channels: CHANNELS, instruments: ['BTC-USD', 'ETH-USD'], adapterAt: (sim) => venueAt(VENUE, { ws: sim?.wsUrl }),
  // A trade and a book update every 2 s a product, and a heartbeat every second a connection.
  rate: 0.5, depthIntervalMs: 2000,
  sealedWithinMs: 600_000,
})

/** 240 times real time: hour 14 takes 15 s; the pairing window (5 s) is 21 ms of real time. */
const SCALE = 240
/** A stall the recorder rides out: 20 s simulated is 83 ms of real time. */
const SHORT_STALL_MS = 20_000
const at = (minute: number) => minute * MIN

/**
 * Every fault kind Coinbase can show (server-shutdown and checksum it cannot). Faults naming a replica come at least five
 * simulated minutes after the one that closed its connection; no trade connection is (re)subscribed within
 * three minutes after a conflict, so that no trade snapshot (the last 50 trades, 100 s of them) carries the
 * conflicting id a third time.
 */
const PLANS: Record<CoinbaseChannel, FaultPlanInput['faults']> = {
  trades: [
    { kind: 'gap', at: at(3), stream: 'btc-usd@trade', count: 3 },
    { kind: 'disconnect', at: at(5), replica: 'a', code: 4001, reason: 'fault' },
    { kind: 'conflict', at: at(10), replica: 'b', stream: 'btc-usd@trade' },
    { kind: 'unrepresentable', at: at(14), replica: 'a', stream: 'eth-usd@trade', variant: 'price-number' },
    { kind: 'only-one', at: at(16), replica: 'b', stream: 'eth-usd@trade' },
    { kind: 'stall', at: at(18), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'scheduled-disconnect', at: at(20), replica: 'b' },
    { kind: 'stall', at: at(26), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'stall', at: at(30), replica: 'a', durationMs: 1.5 * SHORT_STALL_MS, then: 'close', code: 1013, reason: 'try again later' },
    { kind: 'conflict', at: at(40), replica: 'a', stream: 'eth-usd@trade', replace: true },
    { kind: 'unrepresentable', at: at(46), stream: 'btc-usd@trade', variant: 'missing-field' },
    { kind: 'gap', at: at(50), stream: 'eth-usd@trade', count: 2 },
    { kind: 'unrepresentable', at: at(53), replica: 'b', stream: 'btc-usd@trade', variant: 'truncated' },
  ],
  book: [
    { kind: 'gap', at: at(6), stream: 'eth-usd@book', count: 2 },
    { kind: 'disconnect', at: at(9), replica: 'b', code: 4002, reason: 'fault' },
    { kind: 'only-one', at: at(14), replica: 'a', stream: 'btc-usd@book' },
    { kind: 'stall', at: at(20), replica: 'a', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'unrepresentable', at: at(24), stream: 'btc-usd@book', variant: 'missing-field' },
    { kind: 'stall', at: at(28), replica: 'b', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'unrepresentable', at: at(32), replica: 'a', stream: 'eth-usd@book', variant: 'truncated' },
    { kind: 'scheduled-disconnect', at: at(36), replica: 'a' },
    { kind: 'unrepresentable', at: at(42), replica: 'b', stream: 'btc-usd@book', variant: 'price-number' },
    { kind: 'disconnect', at: at(52), replica: 'a' },
  ],
}

t.test('Coinbase, every fault kind on trades and book: the sealed hours state exactly what the simulator did', async (t) => {
  const run = await recordAndSeal(t, bench, 'coinbase', { startMs: HOUR_14, scale: SCALE, plans: PLANS })
  checkSealedAndVerified(t, run)
  for (const channel of CHANNELS) {
    t.test(channel, async (t) => {
      const { m, gaps } = await checkFaultHour(t, run, channel)
      t.ok(gaps.length > 0 && gaps.every((g) => g.startsWith('* ')), `${channel}: the replicas' own breaks in sequence_num (${gaps.length}), stated connection-wide`)
      // The truth (checkFaultHour) already counts each pair; what is Coinbase's own is the message both replicas
      // received numbered apart, which no pairing by bytes may join.
      const market = (await rawLines(run, channel, '14')).filter((l) => !l.payload.includes('"channel":"heartbeats"') && !l.payload.includes('"channel":"subscriptions"'))
      const copiesOf = new Map<string, { a: Set<string>; b: Set<string> }>()
      for (const l of market) {
        if (l.replicas.length !== 1) continue
        const unnumbered = l.payload.replace(/"sequence_num":\d+,/, '')
        const copies = copiesOf.get(unnumbered) ?? { a: new Set<string>(), b: new Set<string>() }
        copies[l.replicas[0]!].add(l.payload)
        copiesOf.set(unnumbered, copies)
      }
      const numberedApart = [...copiesOf.values()].filter(({ a, b }) => [...a].some((text) => b.size > (b.has(text) ? 1 : 0))).length
      t.ok(numberedApart > 0, `${channel}: ${numberedApart} messages both replicas received under different sequence_num, each a line of its replica (${m.replica_agreement.both} lines paired where the counts coincided)`)
      t.same(m.checksum_failures ?? [], [], 'no checksum: Coinbase\'s books carry none')
    })
  }
  t.same(loggedErrors(run), [], 'no error logged')
})

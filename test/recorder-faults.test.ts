/**
 * Issue 25, item 4: the recorder daemon against the venue simulator through a plan holding every fault
 * kind, on both channels, and the sealed hours state exactly what the simulator's truth says it did —
 * sequence_gaps, reconnect_windows and their close codes, conflicts, replica_agreement, unrepresentable
 * frames and completeness reasons — nothing missed and nothing invented. `pipe run verify` passes, every
 * frame the simulator wrote to a connection is in a raw file, and the book channel journals a REST
 * snapshot after every (re)subscription and every break it saw. A second run shows the recorder's own
 * rotation before the venue's scheduled disconnect: the successor is up before the old connection closes,
 * so no reconnect window is stated for it.
 *
 * The bench (a simulator a channel, the recorder on their clock) and what the truth says the hours must
 * state are test/helpers/recorder-truth.ts, shared with the USD-M futures test.
 */
import t from 'tap'
import {
  HOUR_14, HOUR_MS, MIN, checkFaultHour, checkNoneStated, checkRawAgainstTruth, checkSealedAndVerified, gapAround, journalEvents,
  laterRawLines, loggedErrors, manifestOf, msToNs, openBench, rawLines, recordAndSeal, snapshotProblems, statedCloseCodes, truthOf,
} from './helpers/recorder-truth.js'
import type { Channel } from '../src/formats/record/types.js'
import type { FaultPlanInput } from '../src/sim/venue/faults.js'
import { createBinanceSpotAdapter } from '../src/venues/binance.js'

/** The channels Binance spot serves. */
type SpotChannel = Extract<Channel, 'trades' | 'book'>
const CHANNELS: readonly SpotChannel[] = ['trades', 'book']

const bench = await openBench(t, {
  venue: 'binance', channels: CHANNELS, rate: 1, depthIntervalMs: 1000, sealedWithinMs: 120_000, starvedWindowMs: 5_000,
  adapterAt: (sim) => createBinanceSpotAdapter(sim && { wsBase: sim.wsUrl, restBase: sim.restUrl }),
})

const SCALE = 360
/** The recorder's stall detector, in real milliseconds: far above the 1.4 ms between a connection's frames at this scale. */
const STALL_MS = 1000
/** A stall the detector must end: three times its wait, in simulated time. */
const LONG_STALL_MS = 3 * STALL_MS * SCALE
/** A stall it must not notice: 20 s simulated is 56 ms of real time. */
const SHORT_STALL_MS = 20_000
/** Two simulated minutes before hour 14: the replicas subscribe in hour 13 even on a loaded machine. */
const START = HOUR_14 - 2 * MIN
/** Simulated ms after the simulators start of a minute of hour 14. */
const at = (minute: number) => HOUR_14 - START + minute * MIN

/**
 * A fault that names a replica comes at least five simulated minutes (0.8 s real) after the one that
 * closed its connection, and over ten after a long stall (which the detector ends after six), so that the
 * replica has resubscribed even on a loaded machine; while one replica of a channel misses frames, no
 * fault makes the other miss any, and the two never reconnect together.
 */
const PLANS: Record<SpotChannel, FaultPlanInput['faults']> = {
  trades: [
    { kind: 'gap', at: at(3), stream: 'btcusdt@trade', count: 3 },
    { kind: 'disconnect', at: at(5), replica: 'a', code: 4001, reason: 'fault' },
    { kind: 'conflict', at: at(8), replica: 'b', stream: 'btcusdt@trade' },
    { kind: 'unrepresentable', at: at(12), replica: 'a', stream: 'ethusdt@trade', variant: 'price-number' },
    { kind: 'only-one', at: at(14), replica: 'b', stream: 'ethusdt@trade' },
    { kind: 'stall', at: at(18), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'scheduled-disconnect', at: at(20), replica: 'b' },
    { kind: 'disconnect', at: at(24), replica: 'a' },
    { kind: 'stall', at: at(28), replica: 'b', durationMs: LONG_STALL_MS, then: 'resume' },
    { kind: 'only-one', at: at(40), replica: 'a', stream: 'btcusdt@trade' },
    { kind: 'stall', at: at(44), replica: 'a', durationMs: 1.5 * SHORT_STALL_MS, then: 'close', code: 1013, reason: 'try again later' },
    { kind: 'conflict', at: at(50), replica: 'a', stream: 'ethusdt@trade', replace: true },
    { kind: 'unrepresentable', at: at(53), stream: 'btcusdt@trade', variant: 'missing-field' },
    { kind: 'gap', at: at(56), stream: 'ethusdt@trade', count: 2 },
  ],
  book: [
    { kind: 'gap', at: at(3), stream: 'ethusdt@depth@100ms', count: 2 },
    { kind: 'disconnect', at: at(5), replica: 'b', code: 4002, reason: 'fault' },
    { kind: 'only-one', at: at(8), replica: 'a', stream: 'btcusdt@depth@100ms' },
    { kind: 'unrepresentable', at: at(10), stream: 'btcusdt@depth@100ms', variant: 'missing-field' },
    { kind: 'stall', at: at(12), replica: 'a', durationMs: LONG_STALL_MS, then: 'resume' },
    { kind: 'only-one', at: at(24), replica: 'b', stream: 'ethusdt@depth@100ms' },
    { kind: 'stall', at: at(27), replica: 'b', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'unrepresentable', at: at(31), replica: 'a', stream: 'ethusdt@depth@100ms', variant: 'truncated' },
    { kind: 'scheduled-disconnect', at: at(34), replica: 'a' },
    { kind: 'gap', at: at(38), stream: 'btcusdt@depth@100ms', count: 1 },
    { kind: 'disconnect', at: at(42), replica: 'b' },
    { kind: 'unrepresentable', at: at(48), replica: 'b', stream: 'ethusdt@depth@100ms', variant: 'price-number' },
  ],
}

t.test('every fault kind on both channels: the sealed hours state exactly what the simulator did', async (t) => {
  const run = await recordAndSeal(t, bench, 'faults', { startMs: START, scale: SCALE, plans: PLANS, stallMs: STALL_MS })
  checkSealedAndVerified(t, run)
  for (const channel of CHANNELS) {
    t.test(channel, async (t) => {
      const { truth, gaps } = await checkFaultHour(t, run, channel, { longStallMs: LONG_STALL_MS })
      const venueGaps = truth.venueDrops(HOUR_14).map(gapAround).sort()
      t.same(venueGaps.filter((g) => !gaps.includes(g)), [], `among them every gap the venue made (${venueGaps.join(', ')})`)
    })
  }
  t.same(loggedErrors(run), [], 'no error logged')
})

t.test('serverShutdown: the recorder opens the successor when the venue announces it, and closes the old connection before the venue does', async (t) => {
  const scale = 60
  const start = HOUR_14 + 56 * MIN
  /** Simulated ms after the start: each replica of each channel is told once, a second apart (1 s real) from the start and each other. */
  const notices = { a: 60_000, b: 120_000 }
  const closeAfterMs = 40_000
  const plan: FaultPlanInput['faults'] = (['a', 'b'] as const).map((replica) => ({ kind: 'server-shutdown', at: notices[replica], replica, closeAfterMs }))
  const run = await recordAndSeal(t, bench, 'server-shutdown', { startMs: start, scale, plans: { trades: plan, book: plan } })
  checkSealedAndVerified(t, run)
  for (const channel of CHANNELS) {
    const truth = truthOf(run, channel)
    t.same(truth.faults.map((f) => f.applied), [true, true], `${channel}: the venue told both replicas`)
    const m = await manifestOf(run, channel, '14')
    for (const replica of ['a', 'b'] as const) {
      const told = truth.faults.find((f) => 'replica' in f.fault && f.fault.replica === replica)!
      const { conns, old, successor, closeAtUs } = truth.shutdownNotice(told)
      t.match(old.close, { by: 'client', code: 1000, reason: 'replaced before the venue announced a server shutdown' }, `${channel} ${replica}: the recorder closed the old connection`)
      t.ok(old.close!.simTimeUs < closeAtUs, `${channel} ${replica}: before the venue would have`)
      t.ok(successor?.subscribedUs !== undefined && successor.subscribedUs <= old.close!.simTimeUs, `${channel} ${replica}: once its successor had subscribed`)
      t.equal(conns.length, 2, `${channel} ${replica}: one successor, no reconnect`)
      t.same(m.replicas.find((r) => r.replica === replica)!.reconnect_windows, [], `${channel} ${replica}: no reconnect window`)
    }
    checkNoneStated(t, m, `${channel}: the notice is no unrepresentable frame, and the overlap makes no gap or conflict`)
    t.same(m.completeness, { status: 'partial', reasons: ['recorder_down'] }, `${channel}: partial only for the time before the recorder started`)
    const all = [...await rawLines(run, channel, '14'), ...await laterRawLines(run, channel)]
    t.equal(all.filter((l) => l.payload.includes('"serverShutdown"')).length, 2, `${channel}: both notices are in the raw file`)
    checkRawAgainstTruth(t, truth, all, `${channel}: `)
  }
  t.equal(run.logLines.filter((l) => l.includes('opening the successor before the venue announced a server shutdown')).length, 4, 'each replica of each channel logged it once')
  t.same(loggedErrors(run), [], 'no error logged')
})

t.test('the recorder opens the successor before the old connection closes: no reconnect window for its rotation', async (t) => {
  const scale = 120
  const start = HOUR_14 + 58.5 * MIN
  /** 24 simulated seconds: each connection is replaced several times before hour 14 is sealed. */
  const rotateAfterMs = 200
  const run = await recordAndSeal(t, bench, 'rotation', { startMs: start, scale, plans: { trades: [], book: [] }, rotateAfterMs })
  checkSealedAndVerified(t, run)
  for (const channel of CHANNELS) {
    const truth = truthOf(run, channel)
    const m = await manifestOf(run, channel, '14')
    const events = await journalEvents(run, channel)
    for (const replica of ['a', 'b'] as const) {
      const conns = truth.connections(replica)
      const replaced = conns.filter((c) => c.close !== undefined && BigInt(c.close.simTimeUs) * 1000n < run.stoppedAt)
      t.ok(replaced.length >= 3, `${channel} ${replica}: replaced ${replaced.length} times`)
      const successorFirst = (c: (typeof conns)[number]) => {
        const successor = conns[conns.indexOf(c) + 1]
        return c.close!.by === 'client' && c.close!.code === 1000 && /scheduled disconnect/.test(c.close!.reason) && successor?.subscribedUs !== undefined && successor.subscribedUs <= c.close!.simTimeUs
      }
      t.same(replaced.filter((c) => !successorFirst(c)), [], `${channel} ${replica}: each connection closed by the recorder after its successor subscribed`)
      const summary = m.replicas.find((r) => r.replica === replica)!
      t.same(summary.reconnect_windows, [], `${channel} ${replica}: no reconnect window`)
      const firstSubscribed = events.find((e) => e.kind === 'subscribed' && e.replica === replica)!
      t.equal(BigInt(summary.covered_ns), msToNs(HOUR_14 + HOUR_MS) - (firstSubscribed as { time: bigint }).time, `${channel} ${replica}: covered from its first subscription to the hour's end, without a hole`)
    }
    t.same(m.completeness, { status: 'partial', reasons: ['recorder_down'] }, `${channel}: partial only for the time before the recorder started`)
    checkNoneStated(t, m, `${channel}: the overlapping connections make no gap, conflict or unrepresentable frame`)
    if (channel === 'book') t.same(snapshotProblems(events, run.stoppedAt), [], 'book: a snapshot after every subscription of a successor')
    t.same(statedCloseCodes(await manifestOf(run, channel, '15')), { a: [], b: [] }, `${channel}: hour 15 states no close code, as the venue closed nothing`)
    checkRawAgainstTruth(t, truth, [...await rawLines(run, channel, '14'), ...await laterRawLines(run, channel)], `${channel}: `)
  }
  t.same(loggedErrors(run), [], 'no error logged')
})

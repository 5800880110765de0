import t from 'tap'
import { CoverageTracker, uncoveredByBoth } from '../src/formats/record/seal/coverage.js'
import { formatTime } from '../src/formats/record/time.js'
import { eventTime, type JournalEvent, type Replica } from '../src/formats/record/types.js'

const H = 1_759_500_000_000_000_000n - (1_759_500_000_000_000_000n % 3_600_000_000_000n)
const S = 1_000_000_000n
const END = H + 3600n * S
const ts = (n: bigint) => formatTime(n)

function track(replica: Replica, events: JournalEvent[], runs = true) {
  const tracker = new CoverageTracker(replica, H, END, runs)
  for (const e of events) tracker.add(e)
  return tracker.finish()
}
const sub = (c: string, at: bigint, instruments = ['BTCUSDT']): JournalEvent => ({ kind: 'subscribed', replica: 'a', connection: c, time: at, instruments })
const frame = (c: string, at: bigint): JournalEvent => ({ kind: 'frame', replica: 'a', connection: c, receiveTime: at, payload: new Uint8Array(0), binary: false })
const closed = (c: string, at: bigint, closeCode?: number): JournalEvent => ({ kind: 'closed', replica: 'a', connection: c, time: at, ...(closeCode !== undefined ? { closeCode } : {}) })

t.test('a connection subscribed throughout covers the hour with one run per instrument', async (t) => {
  const cov = track('a', [sub('a-1', H - 60n * S, ['BTCUSDT', 'ETHUSDT']), frame('a-1', H + 5n * S)])
  t.equal(cov.coveredNs, 3600n * S)
  t.same(cov.reconnectWindows, [])
  t.same(cov.gapFreeRuns, [
    { instrument: 'BTCUSDT', connection: 'a-1', start_time: ts(H), end_time: ts(END) },
    { instrument: 'ETHUSDT', connection: 'a-1', start_time: ts(H), end_time: ts(END) },
  ])
})

t.test('a reconnect: window with close code, runs end 1 ns after the last frame, coverage excludes the window', async (t) => {
  const cov = track('a', [sub('a-1', H - S), frame('a-1', H + 10n * S), closed('a-1', H + 20n * S, 1006), sub('a-2', H + 25n * S), frame('a-2', H + 30n * S)])
  t.equal(cov.coveredNs, 3600n * S - 5n * S)
  t.same(cov.reconnectWindows, [{ start_time: ts(H + 20n * S), end_time: ts(H + 25n * S), close_code: 1006 }])
  t.same(cov.gapFreeRuns, [
    { instrument: 'BTCUSDT', connection: 'a-1', start_time: ts(H), end_time: ts(H + 10n * S + 1n) },
    { instrument: 'BTCUSDT', connection: 'a-2', start_time: ts(H + 25n * S), end_time: ts(END) },
  ])
})

t.test('a window open at the hour start keeps its close code', async (t) => {
  const cov = track('a', [closed('a-1', H - 3n * S, 1001), sub('a-2', H + 4n * S), frame('a-2', H + 5n * S)])
  t.same(cov.reconnectWindows, [{ start_time: ts(H), end_time: ts(H + 4n * S), close_code: 1001 }])
  t.equal(cov.coveredNs, 3596n * S)
})

t.test('a sequence break ends a run where the last frame was and starts the next where it was detected', async (t) => {
  const cov = track('a', [sub('a-1', H), frame('a-1', H + 7n * S), { kind: 'sequence-break', replica: 'a', connection: 'a-1', time: H + 8n * S, instrument: 'BTCUSDT', afterId: '5', beforeId: '9' }, frame('a-1', H + 9n * S)])
  t.same(cov.gapFreeRuns.map((r) => [r.start_time, r.end_time]), [[ts(H), ts(H + 7n * S + 1n)], [ts(H + 8n * S), ts(END)]])
})

t.test('a checksum failure and a resubscription break the run too, each for its own instruments', async (t) => {
  const mismatch: JournalEvent = { kind: 'checksum-mismatch', replica: 'a', connection: 'a-1', time: H + 8n * S, instrument: 'ETHUSDT', expected: '1', computed: '2' }
  const checksum = track('a', [sub('a-1', H, ['BTCUSDT', 'ETHUSDT']), frame('a-1', H + 7n * S), mismatch, frame('a-1', H + 9n * S)])
  t.same(checksum.gapFreeRuns.map((r) => [r.instrument, r.start_time, r.end_time]).sort(), [
    ['BTCUSDT', ts(H), ts(END)],
    ['ETHUSDT', ts(H), ts(H + 7n * S + 1n)],
    ['ETHUSDT', ts(H + 8n * S), ts(END)],
  ])
  const resubscribed = track('a', [sub('a-1', H), frame('a-1', H + 7n * S), sub('a-1', H + 8n * S), frame('a-1', H + 9n * S)])
  t.same(resubscribed.gapFreeRuns.map((r) => [r.start_time, r.end_time]), [[ts(H), ts(H + 7n * S + 1n)], [ts(H + 8n * S), ts(END)]])
})

t.test('no replica running is recorder_down; both in reconnect windows is reconnect; one holding is neither', async (t) => {
  const down = track('a', [])
  t.same(uncoveredByBoth(down, { ...down, replica: 'b' }), { reconnect: false, destination: false, down: true })
  const a = track('a', [sub('a-1', H - S), closed('a-1', H + 10n * S, 1006), sub('a-2', H + 20n * S)])
  const b = track('b', [sub('b-1', H - S), closed('b-1', H + 15n * S), sub('b-2', H + 30n * S)])
  t.same(uncoveredByBoth(a, b), { reconnect: true, destination: false, down: false })
  const holds = track('b', [sub('b-1', H - S)])
  t.same(uncoveredByBoth(a, holds), { reconnect: false, destination: false, down: false })
})

const HB = S // a heartbeat interval of 1 s: silence longer than 2 s is the replica down
const start = (at: bigint, restated = false): JournalEvent => ({ kind: 'recorder-start', replica: 'a', time: at, heartbeatIntervalNs: HB, ...(restated ? { restated: true as const } : {}) })
const beat = (at: bigint): JournalEvent => ({ kind: 'heartbeat', replica: 'a', time: at })
const beats = (from: bigint, to: bigint): JournalEvent[] => { const out: JournalEvent[] = []; for (let x = from; x < to; x += S / 2n) out.push(beat(x)); return out }
/** In time order (stable, so a restatement stays before what follows at the same instant). */
const ordered = (...xs: JournalEvent[]): JournalEvent[] => xs.sort((x, y) => { const d = eventTime(x) - eventTime(y); return d < 0n ? -1 : d > 0n ? 1 : 0 })
const restatedSub = (c: string): JournalEvent => ({ kind: 'subscribed', replica: 'a', connection: c, time: H, instruments: ['BTCUSDT'], restated: true })

t.test('liveness: a quiet hour with heartbeats is covered; silence is down and ends nothing', async (t) => {
  const quiet = track('a', [start(H, true), restatedSub('a-1'), ...beats(H, END)])
  t.equal(quiet.coveredNs, 3600n * S, 'subscribed and heartbeating all hour: covered, no frame needed')
  t.same(quiet.uncovered, [])
  const stalled = track('a', ordered(start(H, true), restatedSub('a-1'), frame('a-1', H + 10n * S), ...beats(H, H + 20n * S), frame('a-1', H + 30n * S), ...beats(H + 30n * S, END)))
  t.same(stalled.uncovered, [{ start: H + 20n * S - S / 2n + 1n, end: H + 30n * S, reason: 'down' }], 'a silence over 2 intervals is down, from 1 ns after the last record')
  t.equal(stalled.coveredNs, 3600n * S - (10n * S + S / 2n - 1n))
  t.equal(stalled.gapFreeRuns.length, 1, 'a stall without a restart ends no run')
  const small = track('a', [start(H, true), restatedSub('a-1'), ...beats(H, H + 10n * S), ...beats(H + 10n * S - S / 2n + 2n * S, END)])
  t.same(small.uncovered, [], 'a silence of exactly 2 intervals is still running')
  t.same(uncoveredByBoth(stalled, { ...stalled, replica: 'b' }), { reconnect: false, destination: false, down: true })
})

t.test('liveness: a restart ends every connection at the last record; the stretch to the next subscription is down', async (t) => {
  const cov = track('a', ordered(
    start(H, true), restatedSub('a-1'), frame('a-1', H + 5n * S), ...beats(H, H + 100n * S),
    start(H + 130n * S), { kind: 'connecting', replica: 'a', connection: 'a-7', time: H + 130n * S }, sub('a-7', H + 131n * S), frame('a-7', H + 132n * S), ...beats(H + 132n * S, END),
  ))
  const last = H + 100n * S - S / 2n
  t.same(cov.uncovered, [{ start: last + 1n, end: H + 131n * S, reason: 'down' }])
  t.same(cov.reconnectWindows, [], 'a restart is no reconnect window')
  t.same(cov.gapFreeRuns.map((r) => [r.connection, r.start_time, r.end_time]), [['a-1', ts(H), ts(H + 5n * S + 1n)], ['a-7', ts(H + 131n * S), ts(END)]])
  const quick = track('a', ordered(start(H, true), restatedSub('a-1'), ...beats(H, H + 5n * S), frame('a-1', H + 5n * S), start(H + 6n * S), sub('a-2', H + 7n * S), ...beats(H + 7n * S, END)))
  t.same(quick.uncovered.map((u) => [u.start, u.end, u.reason]), [[H + 5n * S + 1n, H + 7n * S, 'down']], 'a restart within the liveness interval still ends the old connections')
})

t.test('liveness: silent until the hour ends is down, and runs end at the last frame', async (t) => {
  const cov = track('a', ordered(start(H, true), restatedSub('a-1'), frame('a-1', H + 60n * S), ...beats(H, H + 600n * S)))
  t.same(cov.uncovered, [{ start: H + 600n * S - S / 2n + 1n, end: END, reason: 'down' }])
  t.same(cov.gapFreeRuns.map((r) => r.end_time), [ts(H + 60n * S + 1n)])
  const v1 = track('a', [restatedSub('a-1'), frame('a-1', H + 60n * S)])
  t.equal(v1.coveredNs, 3600n * S, 'a journal without recorder-start (format 1) is trusted as it stands')
})

t.test('liveness: a silence the hour ends in is judged whole, up to the replica\'s next record after the hour', async (t) => {
  const lastBeat = END - S / 2n
  const hour = () => ordered(start(H, true), restatedSub('a-1'), frame('a-1', H + 5n * S), ...beats(H, END))
  const trackWith = (events: JournalEvent[], next: (c: CoverageTracker) => void) => {
    const c = new CoverageTracker('a', H, END, true)
    for (const e of events) c.add(e)
    next(c)
    return c.finish()
  }
  // A crash half a second before the end, the next start 30 s after it: down from the last record, although cut at the end the silence is short.
  const crashed = trackWith(hour(), (c) => c.after(END + 30n * S, true))
  t.same(crashed.uncovered, [{ start: lastBeat + 1n, end: END, reason: 'down' }], 'a crash just before the end is down to the end')
  t.same(crashed.gapFreeRuns.map((r) => r.end_time), [ts(H + 5n * S + 1n)], 'its run ends at its last frame')
  // A restart within the liveness interval, just after the end: the old process's connections still end at its last record.
  const quick = trackWith(hour(), (c) => c.after(END + S, true))
  t.same(quick.uncovered, [{ start: lastBeat + 1n, end: END, reason: 'down' }], 'a restart just after the end ends the old connections')
  t.same(quick.reconnectWindows, [], 'a restart is no reconnect window')
  // The same process's heartbeat just after the end: covered to the end.
  const alive = trackWith(hour(), (c) => c.after(END + S / 4n, false))
  t.equal(alive.coveredNs, 3600n * S, 'a record of the running process after the end: covered to the end')
  t.same(alive.uncovered, [])
  // No record after the hour at all: nothing shows the replica ran to the end.
  const none = trackWith(hour(), (c) => c.noRecordAfter())
  t.same(none.uncovered.at(-1), { start: lastBeat + 1n, end: END, reason: 'down' }, 'no later record: down from the last one')
  t.ok(new CoverageTracker('a', H, END, true).awaitsNextRecord === false, 'a replica with no record in the hour needs no later one')
})

t.test('destination unavailable: the stretch its record states is uncovered for that reason', async (t) => {
  const lostFrom = H + 100n * S
  const lostTo = H + 160n * S
  const a = track('a', [start(H, true), restatedSub('a-1'), ...beats(H, lostFrom), { kind: 'destination-unavailable', replica: 'a', time: lostTo, from: lostFrom, to: lostTo, lostEvents: 120, message: 'ENOSPC' }, ...beats(lostTo, END)])
  t.same(a.uncovered.map((u) => [u.start, u.end, u.reason]), [[lostFrom - S / 2n + 1n, lostFrom, 'down'], [lostFrom, lostTo, 'destination']])
  const b = track('b', [sub('b-1', H - S)])
  t.same(uncoveredByBoth(a, b), { reconnect: false, destination: false, down: false }, 'the other replica covered it: nothing is missing')
  t.same(uncoveredByBoth(a, { ...a, replica: 'b' }), { reconnect: false, destination: true, down: true })
})

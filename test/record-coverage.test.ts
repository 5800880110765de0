import t from 'tap'
import { CoverageTracker, uncoveredByBoth } from '../src/formats/record/coverage.js'
import { formatTime } from '../src/formats/record/time.js'
import type { JournalEvent, Replica } from '../src/formats/record/types.js'

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

t.test('no replica running is recorder_down; both in reconnect windows is reconnect; one holding is neither', async (t) => {
  const down = track('a', [])
  t.same(uncoveredByBoth(down, { ...down, replica: 'b' }), { reconnect: false, down: true })
  const a = track('a', [sub('a-1', H - S), closed('a-1', H + 10n * S, 1006), sub('a-2', H + 20n * S)])
  const b = track('b', [sub('b-1', H - S), closed('b-1', H + 15n * S), sub('b-2', H + 30n * S)])
  t.same(uncoveredByBoth(a, b), { reconnect: true, down: false })
  const holds = track('b', [sub('b-1', H - S)])
  t.same(uncoveredByBoth(a, holds), { reconnect: false, down: false })
})

/**
 * The sealer's sequence check (src/formats/record/seal/hour-frames.ts, SequenceChecker): spans wait in a
 * reorder window sorted by their first id, so that replicas' latencies do not make gaps; but nothing moves
 * across a span that starts the numbering afresh — a snapshot (Bybit's `u` = 1 after a service restart) or an
 * update numbered below the one it follows (OKX's seqId after a maintenance reset) — so a restart is no gap,
 * and a gap after it is still found.
 */
import t from 'tap'
import { SequenceChecker } from '../src/formats/record/seal/hour-frames.js'
import type { SequenceSpan } from '../src/venues/adapter.js'
import { bybit } from '../src/venues/bybit.js'
import { okx } from '../src/venues/okx.js'
import { binanceSpot } from '../src/venues/binance.js'
import type { VenueAdapter } from '../src/venues/adapter.js'

function gapsOf(venue: VenueAdapter, spans: SequenceSpan[]): string[] {
  const gaps: string[] = []
  const checker = new SequenceChecker(venue, (g) => gaps.push(`${g.instrument} ${g.after_id}..${g.before_id}`))
  for (const span of spans) checker.add(span, true)
  checker.flush()
  return gaps
}

const trade = (id: number): SequenceSpan => ({ sequence: 'trades', instrument: 'BTCUSDT', first: BigInt(id), last: BigInt(id), snapshot: false })
const delta = (u: number): SequenceSpan => ({ sequence: 'book', instrument: 'BTCUSDT', first: BigInt(u), last: BigInt(u), snapshot: false })
const snapshot = (u: number): SequenceSpan => ({ sequence: 'book', instrument: 'BTCUSDT', first: BigInt(u), last: BigInt(u), snapshot: true })
/** An OKX update: prevSeqId `prev`, seqId `seq`. */
const okxUpdate = (prev: number, seq: number): SequenceSpan => ({ sequence: 'book', instrument: 'BTC-USDT-SWAP', first: BigInt(prev) + 1n, last: BigInt(seq), snapshot: false, previous: BigInt(prev) })
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

t.test('spans swapped within the window make no gap; a true gap is found whatever the order', async (t) => {
  t.same(gapsOf(binanceSpot, [1, 2, 4, 3, 5, 7, 6, 8].map(trade)), [], 'swapped neighbours')
  t.same(gapsOf(binanceSpot, [1, 2, 5, 3, 6, 7].map(trade)), ['BTCUSDT 3..5'], 'id 4 missing')
})

t.test('Bybit: a snapshot with u = 1 after a service restart is no gap, and the numbering after it is checked', async (t) => {
  const before = range(500_000, 500_300).map(delta)
  t.same(gapsOf(bybit, [snapshot(499_999), ...before, snapshot(1), ...range(2, 400).map(delta)]), [], 'old updates, the restart, new updates from 2')
  t.same(gapsOf(bybit, [snapshot(499_999), ...before, snapshot(1), ...range(2, 100).map(delta), ...range(104, 400).map(delta)]), ['BTCUSDT 100..104'], 'a gap after the restart is found')
  // The new updates arriving a little out of order among themselves still make no gap.
  const swapped = range(2, 300).map(delta)
  ;[swapped[10], swapped[11]] = [swapped[11]!, swapped[10]!]
  t.same(gapsOf(bybit, [snapshot(499_999), ...before, snapshot(1), ...swapped]), [], 'reordered after the restart')
})

t.test('OKX: an update whose seqId restarts below its prevSeqId is no gap; the chain after it is checked', async (t) => {
  const chain = (from: number, to: number) => range(from, to).map((s) => okxUpdate(s - 1, s))
  const spans = [{ ...okxUpdate(-1, 999), previous: undefined, first: 999n, snapshot: true } as SequenceSpan, ...chain(1000, 1300), okxUpdate(1300, 5), ...chain(6, 400)]
  t.same(gapsOf(okx, spans), [], 'the reset and the chain after it')
  const withGap = [...spans.slice(0, 320), ...chain(6, 50), ...chain(53, 400)]
  t.same(gapsOf(okx, withGap), ['BTC-USDT-SWAP 50..53'], 'a gap after the reset is found (seqIds 51 and 52)')
  t.same(gapsOf(okx, [...spans.slice(0, 302), okxUpdate(1300, 1300), okxUpdate(1300, 1301)]), [], 'the keep-alive (seqId = prevSeqId) is no restart and no gap')
})

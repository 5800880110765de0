/**
 * record-format-1.md, "Clock calibration": the bound's formula and the conditions under which a replica
 * withholds clock_offset and clock_error_bound (src/formats/record/clock.ts).
 */
import t from 'tap'
import { clockErrorBound, MAX_SAMPLE_AGE_NS, receiptClock, type TimeDaemonSample } from '../src/formats/record/clock.js'

const S = 1_000_000_000n

t.test('bound = |offset| + root dispersion + root delay / 2 + 15e-6 × age + 1.25 ns, rounded up', async (t) => {
  // 21,000 + 50,000 + 500,000 + 0 + 1.25 = 571,001.25
  t.equal(clockErrorBound(-21_000n, 50_000n, 1_000_000n, 0n), 571_002n)
  t.equal(clockErrorBound(21_000n, 50_000n, 1_000_000n, 0n), 571_002n, 'the offset counts by its absolute value')
  // One second later the dispersion has grown by 15 µs: 586,001.25
  t.equal(clockErrorBound(-21_000n, 50_000n, 1_000_000n, S), 586_002n)
  // 16 s: 240,000 ns of growth
  t.equal(clockErrorBound(0n, 0n, 0n, 16n * S), 240_002n)
  // An odd root delay halves to .5: 1.5 + 1.25 = 2.75
  t.equal(clockErrorBound(0n, 0n, 3n, 0n), 3n)
  // An exact integer is not rounded further: 1.25 + 0.75 (50,000 ns × 15e-6) = 2
  t.equal(clockErrorBound(0n, 0n, 0n, 50_000n), 2n)
  // Just above an integer: 1.25 + 0.5 + 0.250005 (16,667 ns × 15e-6) = 2.000005
  t.equal(clockErrorBound(0n, 0n, 1n, 16_667n), 3n)
  // A zero sample still bounds the nanosecond resolution: 1.25 → 2
  t.equal(clockErrorBound(0n, 0n, 0n, 0n), 2n)
  // Beyond float precision: 2^60 + 1.25 rounds up to 2^60 + 2
  t.equal(clockErrorBound(2n ** 60n, 0n, 0n, 0n), 2n ** 60n + 2n)
})

const sample = (o: Partial<TimeDaemonSample> = {}): TimeDaemonSample => ({
  offset: -21_000n, rootDelay: 1_000_000n, rootDispersion: 50_000n, synchronized: true, nts: true, measuredAt: 100n * S, readAt: 101n * S, ...o,
})

t.test('a synchronized NTS sample gives the offset and the bound at the receipt\'s age', async (t) => {
  t.same(receiptClock(sample(), 101n * S), { clockOffset: -21_000n, clockErrorBound: 571_002n }, 'age 0: read as the frame arrived')
  t.same(receiptClock(sample(), 102n * S), { clockOffset: -21_000n, clockErrorBound: 586_002n }, 'age 1 s, counted from the start of reading the sample')
})

t.test('withheld while the daemon reports itself unsynchronized', async (t) => {
  t.same(receiptClock(sample({ synchronized: false }), 101n * S), { withheld: 'unsynchronized' })
})

t.test('withheld when the latest sample is older than 16 s', async (t) => {
  t.equal(MAX_SAMPLE_AGE_NS, 16n * S)
  t.same(receiptClock(sample(), 101n * S + 16n * S), { clockOffset: -21_000n, clockErrorBound: 811_002n }, 'exactly 16 s old: not older')
  t.same(receiptClock(sample(), 101n * S + 16n * S + 1n), { withheld: 'sample-too-old' })
})

t.test('withheld for a sample whose source is not NTS-authenticated', async (t) => {
  t.same(receiptClock(sample({ nts: false }), 101n * S), { withheld: 'not-nts' })
})

t.test('withheld after a step until the clock is updated from a measurement taken after it', async (t) => {
  t.same(receiptClock(sample(), 101n * S, 100n * S + 1n), { withheld: 'stepped' }, 'the step came after the measurement')
  t.same(receiptClock(sample(), 101n * S, 100n * S), { withheld: 'stepped' }, 'a measurement at the step is not after it')
  t.same(receiptClock(sample({ measuredAt: 100n * S + 2n }), 101n * S, 100n * S + 1n), { clockOffset: -21_000n, clockErrorBound: 571_002n }, 'updated from a later measurement')
  t.same(receiptClock(sample(), 101n * S, 99n * S), { clockOffset: -21_000n, clockErrorBound: 571_002n }, 'a step before the measurement')
})

t.test('withheld when no sample exists; a receipt cannot precede its sample', async (t) => {
  t.same(receiptClock(undefined, 101n * S), { withheld: 'no-sample' })
  t.throws(() => receiptClock(sample(), 101n * S - 1n), RangeError)
})

t.test('when several conditions hold, the first in the spec\'s order is the reason', async (t) => {
  const everything = sample({ synchronized: false, nts: false })
  const old = 101n * S + 16n * S + 1n
  t.same(receiptClock(everything, old, 100n * S), { withheld: 'unsynchronized' })
  t.same(receiptClock({ ...everything, synchronized: true }, old, 100n * S), { withheld: 'sample-too-old' })
  t.same(receiptClock({ ...everything, synchronized: true }, 101n * S, 100n * S), { withheld: 'not-nts' })
})

/**
 * The recorder's reading of the real-time clock at nanosecond resolution (src/recorder/clock/realtime.ts,
 * docs/recorder-clock.md "Reading the real-time clock"): on fake clocks, that the truth always lies within
 * the reading's stated error, that readings never go backwards between steps, and that steps are seen; on
 * the real clocks, that readings agree with Date.now() and, where /proc/timer_list is readable, with the
 * kernel's own offset between the two clocks.
 */
import { readFileSync } from 'node:fs'
import t, { type Test } from 'tap'
import { RealtimeReader, type ClockSources } from '../src/recorder/clock/realtime.js'
import type { ClockReading } from '../src/recorder/clock/recorder-clock.js'

const MS = 1_000_000n
const S = 1_000_000_000n

/** Clocks whose truth is known: each read advances the monotonic clock by `tick` ns; real-time = monotonic + offset. */
class FakeClocks implements ClockSources {
  mono = 1000n * S
  offset = 1_796_593_600n * S + 123_456_789n
  tick = 40n
  monotonicNs(): bigint {
    this.mono += this.tick
    return this.mono
  }
  realtimeMs(): number {
    this.mono += this.tick
    return Number((this.mono + this.offset) / MS)
  }
  /** The real-time clock at monotonic time `m`, exactly. */
  truth(m: bigint): bigint {
    return m + this.offset
  }
}

function assertHonest(t: Test, clocks: FakeClocks, r: ClockReading, what: string) {
  const truth = clocks.truth(r.monotonic)
  t.ok(r.receiveTime <= truth && truth <= r.receiveTime + r.readingError, `${what}: the truth ${truth} lies in [${r.receiveTime}, +${r.readingError}]`)
}

t.test('a first read knows the real-time clock to the millisecond, and never later than it', async (t) => {
  const clocks = new FakeClocks()
  const reader = new RealtimeReader(clocks)
  const r = reader.read()
  assertHonest(t, clocks, r, 'first read')
  t.ok(r.readingError < MS + 3n * clocks.tick, `error ${r.readingError} ns: Date.now()'s millisecond and the bracket`)
})

t.test('reading across a millisecond edge pins the offset to the span of two brackets', async (t) => {
  const clocks = new FakeClocks()
  const reader = new RealtimeReader(clocks)
  const width = reader.refine()
  t.ok(width <= 6n * clocks.tick, `width ${width} ns ≤ two brackets (${6n * clocks.tick} ns)`)
  assertHonest(t, clocks, reader.read(), 'after refine')
  t.equal(reader.steps, 0)
})

t.test('refine gives up after its spin limit when no edge comes', async (t) => {
  const clocks = new FakeClocks()
  clocks.realtimeMs = () => 1_796_593_600_000 // a stuck millisecond
  const reader = new RealtimeReader(clocks)
  const before = clocks.mono
  reader.refine(100_000n)
  t.ok(clocks.mono - before < 200_000n, 'stopped after about 100 µs of spinning')
})

t.test('between steps readings never go backwards, and always hold the truth', async (t) => {
  const clocks = new FakeClocks()
  const reader = new RealtimeReader(clocks)
  let last = reader.read()
  let seed = 7
  for (let i = 0; i < 5000; i++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    clocks.mono += BigInt(seed % 700_000) // reads at every phase of the millisecond
    const r = reader.read()
    assertHonestQuiet(clocks, r)
    if (r.receiveTime < last.receiveTime) t.fail(`read ${i} went back: ${r.receiveTime} < ${last.receiveTime}`)
    last = r
  }
  t.equal(reader.steps, 0, 'no step')
  t.ok(last.readingError <= 2000n, `reads at random phases narrowed the error to ${last.readingError} ns`)
})

function assertHonestQuiet(clocks: FakeClocks, r: ClockReading) {
  const truth = clocks.truth(r.monotonic)
  if (!(r.receiveTime <= truth && truth <= r.receiveTime + r.readingError)) throw new Error(`the truth ${truth} is outside [${r.receiveTime}, +${r.readingError}]`)
}

t.test('a step forward is seen at the next read, and readings follow the clock', async (t) => {
  const clocks = new FakeClocks()
  const reader = new RealtimeReader(clocks)
  reader.refine()
  const before = reader.read()
  clocks.offset += 5n * S
  const stepped = clocks.mono
  const after = reader.read()
  t.equal(reader.steps, 1)
  const step = reader.lastStep!
  t.ok(step.at >= stepped, 'the step is dated no earlier than it happened')
  t.ok(step.change > 5n * S - 2n * MS && step.change <= 5n * S, `change ${step.change} ns: at least, and close to, 5 s`)
  t.ok(after.receiveTime - before.receiveTime > 5n * S - 2n * MS, 'the reading jumped with the clock')
  assertHonest(t, clocks, after, 'after the step')
})

t.test('a step backward: readings follow the clock back (the step is reported; receipts are withheld after it)', async (t) => {
  const clocks = new FakeClocks()
  const reader = new RealtimeReader(clocks)
  reader.refine()
  const before = reader.read()
  clocks.offset -= 2n * S
  const after = reader.read()
  t.ok(after.receiveTime < before.receiveTime, 'went back with the clock')
  t.ok(reader.lastStep!.change < -2n * S + 2n * MS, `change ${reader.lastStep!.change} ns`)
  assertHonest(t, clocks, after, 'after the step back')
  reader.refine()
  assertHonest(t, clocks, reader.read(), 'refined after the step')
  t.ok(reader.width <= 6n * clocks.tick, 'narrow again after a refine')
})

t.test('a step smaller than the millisecond is seen once a read falls outside the interval', async (t) => {
  const clocks = new FakeClocks()
  const reader = new RealtimeReader(clocks)
  reader.refine()
  clocks.offset += 400_000n
  for (let i = 0; i < 20 && reader.steps === 0; i++) {
    clocks.mono += 97_000n
    reader.read()
  }
  t.equal(reader.steps, 1, 'seen within 2 ms of reads')
  t.ok(reader.lastStep!.change > 0n && reader.lastStep!.change <= 400_000n, `change ${reader.lastStep!.change} ns, a lower bound of 400 µs`)
  assertHonest(t, clocks, reader.read(), 'after')
})

t.test('with a step threshold, a smaller change restarts the interval without a step', async (t) => {
  const clocks = new FakeClocks()
  const reader = new RealtimeReader(clocks, { stepThresholdNs: MS })
  reader.refine()
  clocks.offset += 400_000n
  // Until a read falls outside the old interval the change is unseen (and readings are off by it).
  for (let i = 0; i < 20 && reader.width < 900_000n; i++) {
    clocks.mono += 97_000n
    reader.read()
  }
  t.ok(reader.width >= 900_000n, 'the interval restarted from one bracket')
  t.equal(reader.steps, 0, 'below the threshold: no step')
  assertHonest(t, clocks, reader.read(), 'after the restart')
  clocks.offset += 3n * MS
  reader.read()
  t.equal(reader.steps, 1, 'above it: a step')
})

t.test('earliestMonotonic is never later than the truth', async (t) => {
  const clocks = new FakeClocks()
  const reader = new RealtimeReader(clocks)
  reader.read()
  const realtime = clocks.truth(clocks.mono) - 3n * S
  const trueMono = realtime - clocks.offset
  const m = reader.earliestMonotonic(realtime)
  t.ok(m <= trueMono && trueMono - m <= MS + 3n * clocks.tick, `${m} ≤ ${trueMono}, within the reading's error`)
})

t.test('the real clocks: readings agree with Date.now(), increase, and narrow to microseconds', async (t) => {
  const reader = new RealtimeReader()
  for (let i = 0; i < 10 && reader.width > 20_000n; i++) reader.refine()
  t.ok(reader.width <= 20_000n, `error after refining: ${reader.width} ns`)
  let last: ClockReading | undefined
  for (let i = 0; i < 2000; i++) {
    const before = BigInt(Date.now()) * MS
    const r = reader.read()
    const after = BigInt(Date.now()) * MS + MS
    if (r.receiveTime + r.readingError < before || r.receiveTime >= after) t.fail(`read ${i}: ${r.receiveTime} is outside Date.now()'s [${before}, ${after})`)
    if (last && (r.monotonic <= last.monotonic || r.receiveTime < last.receiveTime)) t.fail(`read ${i} did not move forward`)
    last = r
  }
  t.equal(reader.steps, 0, 'no step seen')
  t.pass('2,000 readings within Date.now()\'s millisecond, moving forward')
})

/** The kernel's CLOCK_REALTIME − CLOCK_MONOTONIC (offs_real) from /proc/timer_list, or why it cannot be read. */
function kernelOffset(): bigint | string {
  let text: string
  try {
    text = readFileSync('/proc/timer_list', 'utf8')
  } catch (e) {
    return `/proc/timer_list is not readable here (${(e as NodeJS.ErrnoException).code}; it is root-only, and masked in containers)`
  }
  // The first CPU's clock base 1 is CLOCK_REALTIME; its .offset is real-time minus monotonic.
  const m = /clock 1:\n(?:.*\n){0,4}?\s*\.offset:\s+(\d+) nsecs/.exec(text)
  return m ? BigInt(m[1]!) : '/proc/timer_list has no CLOCK_REALTIME offset (kernel without high-resolution timers?)'
}

const kernel = kernelOffset()
t.test('the real clocks: the reading holds the kernel\'s own offset between the two clocks', typeof kernel === 'string' ? { skip: kernel } : {}, async (t) => {
  const reader = new RealtimeReader()
  for (let round = 0; round < 5; round++) {
    reader.refine()
    const before = kernelOffset() as bigint
    const r = reader.read()
    const after = kernelOffset() as bigint
    t.equal(before, after, 'the kernel offset did not move')
    const lo = r.receiveTime - r.monotonic
    t.ok(lo <= before && before <= lo + r.readingError, `kernel ${before} ∈ [${lo}, +${r.readingError}]: ${before - lo} ns above the reading`)
  }
})

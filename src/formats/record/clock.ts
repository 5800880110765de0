/**
 * A receipt's clock fields from the time daemon's latest sample (record-format-1.md, "Clock calibration"):
 * the bound's formula, and when a replica withholds `clock_offset` and `clock_error_bound`.
 */

/** The time daemon's latest sample as a replica reads it, in integer nanoseconds. */
export interface TimeDaemonSample {
  /** The host clock's estimated offset from UTC, positive when the host clock is fast. */
  offset: bigint
  rootDelay: bigint
  rootDispersion: bigint
  /** The daemon reports itself synchronized. */
  synchronized: boolean
  /** The sample came from a source authenticated with Network Time Security (RFC 8915). */
  nts: boolean
  /** Monotonic time of the measurement the daemon last updated the clock from. */
  measuredAt: bigint
  /** Monotonic time at which the replica started reading the sample: the sample's age counts from here. */
  readAt: bigint
}

/** A sample older than this gives no estimate. */
export const MAX_SAMPLE_AGE_NS = 16_000_000_000n

export type ClockWithheld = 'no-sample' | 'unsynchronized' | 'sample-too-old' | 'not-nts' | 'stepped'

export type ReceiptClock = { clockOffset: bigint; clockErrorBound: bigint } | { withheld: ClockWithheld }

/*
 * The bound is abs(offset) + root dispersion + root delay / 2 + 15e-6 × age + 1.25 ns. Its fractions have
 * the common denominator 200,000 (1/2 = 100,000/200,000; 15e-6 = 3/200,000; 1.25 = 250,000/200,000), so it
 * is summed exactly in those units and rounded up once: floating point could round an exact integer up by
 * a nanosecond, or a value just above one down.
 */
const UNITS_PER_NS = 200_000n

/** `clock_error_bound` for a receipt `ageNs` after the replica started reading its sample, rounded up to the nanosecond. */
export function clockErrorBound(offset: bigint, rootDispersion: bigint, rootDelay: bigint, ageNs: bigint): bigint {
  const abs = offset < 0n ? -offset : offset
  const units = (abs + rootDispersion) * UNITS_PER_NS + rootDelay * 100_000n + ageNs * 3n + 250_000n
  return (units + UNITS_PER_NS - 1n) / UNITS_PER_NS
}

/**
 * The clock fields of a receipt read at monotonic time `receivedAt`, or why they are withheld: no sample,
 * the daemon unsynchronized, the sample older than 16 s, its source not NTS-authenticated, or the clock
 * stepped (at monotonic `lastStepAt`) after the measurement the sample rests on.
 */
export function receiptClock(sample: TimeDaemonSample | undefined, receivedAt: bigint, lastStepAt?: bigint): ReceiptClock {
  if (sample === undefined) return { withheld: 'no-sample' }
  if (!sample.synchronized) return { withheld: 'unsynchronized' }
  const age = receivedAt - sample.readAt
  // A younger sample's bound says nothing about an earlier receipt: that receipt belongs to the sample before.
  if (age < 0n) throw new RangeError(`the receipt at ${receivedAt} precedes the reading of its sample at ${sample.readAt}`)
  if (age > MAX_SAMPLE_AGE_NS) return { withheld: 'sample-too-old' }
  if (!sample.nts) return { withheld: 'not-nts' }
  if (lastStepAt !== undefined && sample.measuredAt <= lastStepAt) return { withheld: 'stepped' }
  return { clockOffset: sample.offset, clockErrorBound: clockErrorBound(sample.offset, sample.rootDispersion, sample.rootDelay, age) }
}

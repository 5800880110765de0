/**
 * The host's real-time clock read at nanosecond resolution, which Node 20 has no call for: Date.now() is
 * whole milliseconds, and process.hrtime.bigint() is the monotonic clock (CLOCK_MONOTONIC) at nanoseconds.
 * A reading is therefore the monotonic clock plus the offset between the two clocks, and that offset is
 * pinned down from reads of Date.now() bracketed by monotonic reads (docs/recorder-clock.md, "Reading the
 * real-time clock").
 *
 * A bracket h0 ≤ Date.now() = D ≤ h1 says the offset (real-time minus monotonic, in ns) lies in
 * [D ms − h1, D ms + 999,999 − h0]: Date.now() is the real-time clock floored to the millisecond. Brackets
 * are intersected, so the interval only narrows; two brackets on either side of a millisecond edge pin it to
 * their span, a few hundred nanoseconds. A reading takes the interval's low end, so between steps readings
 * never go backwards, and its error is at most the interval's width, which the bound adds.
 *
 * On Linux both clocks are slewed alike by the time daemon (clock_gettime(2): both are "affected by the
 * incremental adjustments performed by adjtime(3) and NTP"); their difference changes only when the
 * real-time clock is stepped. So a bracket outside the interval means the offset changed: a step, reported
 * with the monotonic time at which it was seen, and the interval starts over from that bracket.
 */
import type { ClockReading } from './recorder-clock.js'

/** The two clock reads a reader is built on; tests inject fakes. */
export interface ClockSources {
  /** The monotonic clock, ns (process.hrtime.bigint()). */
  monotonicNs(): bigint
  /** The real-time clock floored to the millisecond, ms since the Unix epoch (Date.now()). */
  realtimeMs(): number
}

export const SYSTEM_CLOCKS: ClockSources = { monotonicNs: () => process.hrtime.bigint(), realtimeMs: () => Date.now() }

/** A change of the real-time clock's offset from the monotonic clock. */
export interface ClockStep {
  /** Monotonic time of the read that revealed it: the step happened at or before this instant. */
  at: bigint
  /** At least this many ns, positive when the real-time clock jumped forward. */
  change: bigint
}

export interface RealtimeReaderOptions {
  /**
   * A change of the offset by more than this is reported as a step; a smaller one only restarts the
   * interval. Default 0: on Linux any change is a step, since slewing moves both clocks alike. A platform
   * whose monotonic clock is not slewed would need the largest drift between two reads here.
   */
  stepThresholdNs?: bigint
}

const MS = 1_000_000n

export class RealtimeReader {
  /** The offset real-time − monotonic lies in [lo, hi]; undefined before the first read. */
  private lo: bigint | undefined
  private hi: bigint | undefined
  /** Date.now() at the latest bracket. */
  private lastMs: number | undefined
  private step: ClockStep | undefined
  private stepCount = 0
  private readonly stepThresholdNs: bigint

  constructor(private readonly clocks: ClockSources = SYSTEM_CLOCKS, options: RealtimeReaderOptions = {}) {
    this.stepThresholdNs = options.stepThresholdNs ?? 0n
  }

  /** The real-time clock now, with the monotonic time of the reading and its error. */
  read(): ClockReading {
    const h0 = this.bracket()
    return { monotonic: h0, receiveTime: h0 + this.lo!, readingError: this.hi! - this.lo! }
  }

  /**
   * Narrows the interval by reading across a millisecond edge of the real-time clock: reads until Date.now()
   * changes, at most `maxSpinNs` (it blocks the thread that long, under 1 ms when the edge comes). Returns
   * the interval's width after. Meant for start-up and after a step; between steps the interval keeps.
   */
  refine(maxSpinNs = 2n * MS): bigint {
    const start = this.bracket()
    const first = this.lastMs
    let h0 = start
    while (this.lastMs === first && h0 - start <= maxSpinNs) h0 = this.bracket()
    return this.width
  }

  /**
   * Refines until the interval is at most `targetNs` wide, at most `attempts` times (each under a
   * millisecond): a thread preempted mid-edge leaves a wide pair, and the next edge does better.
   */
  refineTo(targetNs: bigint, attempts = 5): bigint {
    for (let i = 0; i < attempts && this.width > targetNs; i++) this.refine()
    return this.width
  }

  /** The width of the offset interval: a reading made now is at most this early. */
  get width(): bigint {
    if (this.lo === undefined) this.bracket()
    return this.hi! - this.lo!
  }

  /**
   * The earliest monotonic time at which the real-time clock can have read `realtimeNs` (the interval's
   * high end): a time derived from it is never later than the truth.
   */
  earliestMonotonic(realtimeNs: bigint): bigint {
    if (this.hi === undefined) this.bracket()
    return realtimeNs - this.hi!
  }

  /** The last step seen, if any. */
  get lastStep(): ClockStep | undefined {
    return this.step
  }

  /** Steps seen since the reader was made. */
  get steps(): number {
    return this.stepCount
  }

  /** One bracketed read of Date.now(): narrows the interval, or restarts it (a step) when it falls outside. Returns h0. */
  private bracket(): bigint {
    const h0 = this.clocks.monotonicNs()
    const ms = this.clocks.realtimeMs()
    const h1 = this.clocks.monotonicNs()
    this.lastMs = ms
    const low = BigInt(ms) * MS - h1
    const high = BigInt(ms) * MS + MS - 1n - h0
    if (this.lo === undefined || this.hi === undefined) {
      this.lo = low
      this.hi = high
    } else if (high < this.lo || low > this.hi) {
      const change = low > this.hi ? low - this.hi : high - this.lo
      if (change > this.stepThresholdNs || -change > this.stepThresholdNs) {
        this.step = { at: h1, change }
        this.stepCount++
      }
      this.lo = low
      this.hi = high
    } else {
      if (low > this.lo) this.lo = low
      if (high < this.hi) this.hi = high
    }
    return h0
  }
}

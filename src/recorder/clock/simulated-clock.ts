/**
 * `--clock simulated --time-scale N`: a testing affordance, never for real data. Simulated time starts at
 * `start` when the clock starts and runs `timeScale` times as fast as the monotonic clock, so that a test or
 * the demo records hours of a venue simulator (src/sim/venue, run on the same start and scale) in seconds.
 *
 * What it states: the simulated time is exact by construction, so each receipt carries clock_offset 0 and
 * the bound the spec's formula gives for a perfect, fresh, NTS-authenticated sample read when the clock
 * started: 1.25 ns plus 15 ppm of the sample's age, refreshed every simulated second (docs/recorder.md).
 */
import { receiptClock, type ReceiptClock, type TimeDaemonSample } from '../../formats/record/clock.js'
import type { ClockReading, ClockStatus, RecorderClock } from './recorder-clock.js'

const SAMPLE_EVERY_NS = 1_000_000_000n

export class SimulatedClock implements RecorderClock {
  private readonly startMono = process.hrtime.bigint()

  /** `startNs`: the simulated time at start, ns since the epoch; `timeScale`: simulated seconds per real second. */
  constructor(private readonly startNs: bigint, private readonly timeScale: number) {
    if (!(timeScale > 0) || !Number.isFinite(timeScale)) throw new RangeError('the time scale must be a positive number')
  }

  /** Simulated ns since the epoch, the clock the simulator must share (its `clock` option takes milliseconds). */
  nowNs(): bigint {
    return this.startNs + BigInt(Math.round(Number(process.hrtime.bigint() - this.startMono) * this.timeScale))
  }

  now(): ClockReading {
    // The monotonic time is the simulated one: sample ages then count in simulated time, as receive times do.
    const t = this.nowNs()
    return { receiveTime: t, monotonic: t, readingError: 0n }
  }

  receiptClock(reading: ClockReading): ReceiptClock {
    return receiptClock(this.sampleFor(reading.monotonic), reading.monotonic)
  }

  /** A perfect sample, taken at the last whole simulated second before `at`. */
  private sampleFor(at: bigint): TimeDaemonSample {
    const readAt = at - ((at - this.startNs) % SAMPLE_EVERY_NS)
    return { offset: 0n, rootDelay: 0n, rootDispersion: 0n, synchronized: true, nts: true, measuredAt: readAt, readAt }
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {}

  status(): ClockStatus {
    return { source: 'simulated', reads: 0, failures: 0, steps: 0, readingError: 0n }
  }
}

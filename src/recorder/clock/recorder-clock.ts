/**
 * What the recorder asks of its clock, in one small interface, so that a replica does not care whether its
 * clock fields come from chrony (chrony-clock.ts) or are never given (`--clock none`, none-clock.ts): it
 * reads the clock when it holds a complete frame (`now()`), and asks for the receipt's clock fields for that
 * reading (`receiptClock()`). docs/recorder-clock.md describes the design.
 */
import type { ClockWithheld, ReceiptClock, TimeDaemonSample } from '../../formats/record/clock.js'
import type { ClockStep } from './realtime.js'

/** One reading of the host's real-time clock. */
export interface ClockReading {
  /** The real-time clock, ns since the Unix epoch: the receipt's `receive_time`. */
  receiveTime: bigint
  /** The monotonic clock (process.hrtime.bigint()) at the same instant: sample ages count on it. */
  monotonic: bigint
  /** How much earlier than the real-time clock `receiveTime` can be, ns (never later); the bound adds it. */
  readingError: bigint
}

export interface RecorderClock {
  /** Reads the real-time clock now, at nanosecond resolution, with its monotonic time. */
  now(): ClockReading
  /**
   * The clock fields of a receipt with this reading (src/formats/record/clock.ts): `clock_offset` and
   * `clock_error_bound` from the time daemon's latest sample, the bound widened by the reading's own error,
   * or why they are withheld.
   */
  receiptClock(reading: ClockReading): ReceiptClock
  /** Anchors the reading and, for a time daemon, takes its first sample and starts polling. */
  start(): Promise<void>
  /** Stops polling; a read in flight is killed. */
  stop(): Promise<void>
  /** What it last knew, for logs and metrics. */
  status(): ClockStatus
}

export interface ClockStatus {
  /** Where clock fields come from: the chrony time daemon, nowhere (`--clock none`), or a simulated clock (tests, the demo). */
  source: 'chrony' | 'none' | 'simulated'
  /** The time daemon's latest sample, if one was read. */
  sample?: TimeDaemonSample
  /** Why a receipt read now would carry no clock fields; absent when it would carry them. */
  withheld?: ClockWithheld
  /** The last read of the time daemon that failed: its monotonic time and why. */
  lastError?: { at: bigint; message: string }
  /** Reads of the time daemon that gave a sample, and that failed, since start. */
  reads: number
  failures: number
  /** The last step of the real-time clock seen, and how many since start. */
  lastStep?: ClockStep
  steps: number
  /** The reading's own error now (ns): added to every bound. */
  readingError: bigint
}

/**
 * `--clock none`: receive times without a bound, for a host without chrony (or whose chronyd does not
 * answer, or a test). Receipts are read at nanosecond resolution as with chrony, and their clock fields are
 * always withheld; record-format's reasons have none for "no time daemon", so it is 'no-sample'.
 */
import type { ReceiptClock } from '../../formats/record/clock.js'
import { RealtimeReader } from './realtime.js'
import type { ClockReading, ClockStatus, RecorderClock } from './recorder-clock.js'

export class NoneClock implements RecorderClock {
  constructor(private readonly reader: RealtimeReader = new RealtimeReader()) {}

  now(): ClockReading {
    return this.reader.read()
  }

  receiptClock(_reading: ClockReading): ReceiptClock {
    return { withheld: 'no-sample' }
  }

  async start(): Promise<void> {
    this.reader.refineTo(1000n)
  }

  async stop(): Promise<void> {}

  status(): ClockStatus {
    return {
      source: 'none',
      withheld: 'no-sample',
      reads: 0,
      failures: 0,
      ...(this.reader.lastStep && { lastStep: this.reader.lastStep }),
      steps: this.reader.steps,
      readingError: this.reader.width,
    }
  }
}

/**
 * A frame receipt as a replica on an NTS-synchronised host makes it (src/formats/record/clock.ts): the time
 * daemon sampled every 8 s, replica a's host 20 µs fast and b's 15 µs slow. For journals built without a
 * live clock: the golden venue hours (scripts/make-golden-venues.ts) and bench:seal-hour's venues.
 */
import { receiptClock, type TimeDaemonSample } from '../formats/record/clock.js'
import type { FrameEvent, Replica } from '../formats/record/types.js'

const SAMPLE_EVERY_NS = 8_000_000_000n

export function syncedReceipt(replica: Replica, connection: string, receiveTime: bigint, payload: Uint8Array): FrameEvent {
  const readAt = receiveTime - (receiveTime % SAMPLE_EVERY_NS)
  const sample: TimeDaemonSample = { offset: replica === 'a' ? 20_000n : -15_000n, rootDelay: 900_000n, rootDispersion: 40_000n, synchronized: true, nts: true, measuredAt: readAt, readAt }
  const clock = receiptClock(sample, receiveTime)
  const frame: FrameEvent = { kind: 'frame', replica, connection, receiveTime, payload, binary: false }
  if (!('withheld' in clock)) {
    frame.clockOffset = clock.clockOffset
    frame.clockErrorBound = clock.clockErrorBound
  }
  return frame
}

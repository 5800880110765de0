/** The thread of an hour's frames (hour-frames.ts): unpacks frame batches and hands them to HourFrames. */
import { serveOrderedJobs } from '../../../core/ordered-worker.js'
import { findVenue } from '../../../venues/index.js'
import { readFrameBatch, type FrameBatch } from './frame-batch.js'
import { HourFrames, type HourFramesResult, type OpenHourFrames } from './hour-frames.js'

let hour: HourFrames | null = null

function current(): HourFrames {
  if (!hour) throw new Error('hour frames: no open hour')
  return hour
}

serveOrderedJobs<OpenHourFrames, FrameBatch, null, HourFramesResult>({
  async open(o) {
    if (!findVenue(o.venue) && o.venueModule) await import(o.venueModule)
    const venue = findVenue(o.venue)
    if (!venue) throw new Error(`hour frames: venue ${JSON.stringify(o.venue)} is not registered on the writer thread (give its module)`)
    hour = new HourFrames(o.dir, venue, o.channel, o.createdBy)
  },
  async item(batch) {
    const frames = current()
    const waits: Promise<void>[] = []
    readFrameBatch(batch, (frame, inHour) => {
      const wait = frames.frame(frame, inHour)
      if (wait) waits.push(wait)
    })
    await Promise.all(waits)
    // The frames were views valid during their calls: the batch's buffer goes back to be filled again.
    return [batch.bytes.buffer as ArrayBuffer]
  },
  async finish() {
    const result = await current().finish()
    hour = null
    return { result }
  },
})

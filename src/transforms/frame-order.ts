import { z } from 'zod'
import { UsageError } from '../core/errors.js'
import { defineStage } from '../core/stage.js'
import { formatTimeParts } from '../formats/record/time.js'
import type { EnvelopeBatch } from './envelopes.js'

const HOUR_PATTERN = /^(\d{4})-(\d{2})-(\d{2})T(\d{2})$/

/** `2026-10-03T14` -> epoch seconds of the hour's start; refuses anything that is not a real UTC hour. */
export function parseHourStart(hour: string): number {
  const m = HOUR_PATTERN.exec(hour)
  const start = m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!) / 1000 : NaN
  if (!m || Number.isNaN(start) || new Date(start * 1000).toISOString().slice(0, 13) !== hour) {
    throw new UsageError('usage.bad-hour', `--hour must be a UTC hour like 2026-10-03T14, got "${hour}"`, { location: { field: 'hour' } })
  }
  return start
}


/**
 * Checks the "Raw file" order rule over envelope batches: frame times never decrease and, given an hour,
 * lie within it. Lines whose envelope failed (no frame time) do not take part.
 */
export const frameOrderStage = defineStage({
  name: 'frame-order',
  kind: 'transform',
  summary: 'Checks that frame times never decrease and lie in the given hour',
  takes: 'envelopes',
  gives: 'envelopes',
  options: z.object({ hour: z.string().optional().describe('the UTC hour the frames belong to, e.g. 2026-10-03T14') }),
  create({ hour }, ctx) {
    const start = hour === undefined ? -Infinity : parseHourStart(hour)
    const end = hour === undefined ? Infinity : start + 3600
    return async function* (source: AsyncIterable<unknown>) {
      let lastSec = -Infinity
      let lastNano = 0
      for await (const item of source) {
        const batch = item as EnvelopeBatch
        const { frameSec, frameNano, hasFrameTime } = batch
        for (let i = 0; i < batch.count; i++) {
          if (!hasFrameTime[i]) continue
          const sec = frameSec[i]!
          const nano = frameNano[i]!
          if (sec < start || sec >= end) {
            ctx.findings.add({ line: batch.firstLine + i, code: 'raw.frame-time-outside-hour', detail: `frame time ${formatTimeParts(sec, nano)} is outside the hour ${hour}` })
          }
          if (sec < lastSec || (sec === lastSec && nano < lastNano)) {
            ctx.findings.add({ line: batch.firstLine + i, code: 'raw.frame-time-decreasing', detail: `frame time ${formatTimeParts(sec, nano)} is before the previous line's ${formatTimeParts(lastSec, lastNano)}` })
          }
          lastSec = sec
          lastNano = nano
        }
        yield batch
      }
    }
  },
})

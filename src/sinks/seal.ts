import { z } from 'zod'
import { UsageError } from '../core/errors.js'
import { defineStage } from '../core/stage.js'
import type { JournalBatch } from '../formats/record/journal/journal.js'
import { parseHourName } from '../formats/record/journal/journal.js'
import { RAW_FILE_NAME } from '../formats/record/manifest.js'
import { CHANNELS, type Channel } from '../formats/record/types.js'
import { findVenue, venueNames } from '../venues/index.js'
import { VERSION } from '../core/version.js'

/** Seals the hour from the journal batches it is given (journal-read over the hour and its window). */
export const sealSink = defineStage({
  name: 'seal',
  kind: 'sink',
  summary: 'Seals one hour of a channel from journal event batches into a root (record format v1)',
  takes: 'any',
  gives: 'none',
  options: z.object({
    venue: z.string().min(1),
    channel: z.enum(CHANNELS as [string, ...string[]]),
    hour: z.string().refine((s) => parseHourName(s) !== null, 'must be a UTC hour like 2026-10-03T14'),
    journal: z.string().min(1).describe('the journal directory (for the state restated at the hour start)'),
    out: z.string().min(1),
    key: z.string().min(1),
    recorder: z.string().default('recorder'),
  }),
  async create(o, ctx) {
    const venue = findVenue(o.venue)
    if (!venue) throw new UsageError('usage.unknown-venue', `unknown venue "${o.venue}" (known: ${venueNames().join(', ')})`, { location: { field: 'venue' } })
    if (!venue.channels.includes(o.channel as Channel)) throw new UsageError('usage.unknown-channel', `venue ${o.venue} has no channel ${o.channel} (it has ${venue.channels.join(', ')})`, { location: { field: 'channel' } })
    // Loaded here, not at the top: the sealer pulls in the Parquet and JWS libraries, which every other
    // command would otherwise pay for at start-up.
    const [{ readPrivateJwkFile }, { sealHour }] = await Promise.all([import('../formats/record/keys/keys.js'), import('../formats/record/seal/seal.js')])
    const key = await readPrivateJwkFile(o.key)
    return async (source: AsyncIterable<unknown>) => {
      const result = await sealHour({
        root: o.out, journal: o.journal, recorder: o.recorder, venue, channel: o.channel as Channel,
        hourStart: parseHourName(o.hour)!, key, createdBy: `pipe ${VERSION}`,
      }, source as AsyncIterable<JournalBatch>)
      const m = result.manifest
      ctx.summary.hour = o.hour
      ctx.summary.sealed = result.status
      ctx.summary.status = m.completeness.status
      ctx.summary.reasons = m.completeness.reasons
      ctx.summary.frames = m.files.find((f) => f.name === RAW_FILE_NAME)?.rows ?? 0
      ctx.summary.gaps = m.sequence_gaps.length
      ctx.summary.dir = result.dir
      if (result.daily) ctx.summary.daily = result.daily.date
    }
  },
})

import { z } from 'zod'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { asUsage, UsageError } from '../core/errors.js'
import { defineStage } from '../core/stage.js'
import type { JournalBatch } from '../formats/record/journal/journal.js'
import { HOUR_NS, parseHourName } from '../formats/record/journal/journal.js'
import { journalDirsOption } from '../transforms/journal.js'
import { formatTime } from '../formats/record/time.js'
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
    journal: journalDirsOption.describe('the journal directory, or one directory per replica (where the hour\'s torn or corrupt records are)'),
    out: z.string().min(1),
    key: z.string().min(1),
    keys: z.string().min(1).optional().describe('the public key set (jwks.json) that publishes the key; default: jwks.json beside the key'),
    recorder: z.string().default('recorder'),
    recorderStopped: z.boolean().default(false).describe('the recorder is gone for good: seal even though the journal holds nothing after the hour'),
  }),
  async create(o, ctx) {
    const venue = findVenue(o.venue)
    if (!venue) throw new UsageError('usage.unknown-venue', `unknown venue "${o.venue}" (known: ${venueNames().join(', ')})`, { location: { field: 'venue' } })
    if (!venue.channels.includes(o.channel as Channel)) throw new UsageError('usage.unknown-channel', `venue ${o.venue} has no channel ${o.channel} (it has ${venue.channels.join(', ')})`, { location: { field: 'channel' } })
    // Loaded here, not at the top: the sealer pulls in the Parquet and JWS libraries, which every other
    // command would otherwise pay for at start-up.
    const [{ readJwksFile, readPrivateJwkFile, signingRefusal }, { assertHourSealable, sealHour }] = await Promise.all([import('../formats/record/keys/keys.js'), import('../formats/record/seal/seal.js')])
    const hourStart = parseHourName(o.hour)!
    await assertHourSealable(o.journal, hourStart, o.recorderStopped)
    const key = await readPrivateJwkFile(o.key)
    const keysPath = o.keys ?? join(dirname(o.key), 'jwks.json')
    if (!o.keys && !existsSync(keysPath)) {
      throw new UsageError('usage.no-key-set', '--keys: no jwks.json beside the key: name the key set that publishes it, whose validity must cover the hour', { location: { file: keysPath } })
    }
    const jwks = await asUsage(() => readJwksFile(keysPath), '--keys: ', { file: keysPath })
    // Judged as check 6 judges the hour's signature, and the day's after hour 23: at the hour's end.
    const refusal = signingRefusal(jwks, key, hourStart + HOUR_NS)
    if (refusal) {
      const remedy = refusal.includes('not yet valid')
        ? `to seal hours recorded before the key existed, make a key valid from then: pipe key new --valid-from ${formatTime(hourStart)} --out DIR`
        : 'sign with the key the key set says was valid then'
      throw new UsageError('usage.key-not-valid-for-hour', `--key: ${refusal}, the instant verify judges hour ${o.hour}'s signature at (check 6); ${remedy}`, { location: { file: o.key } })
    }
    return async (source: AsyncIterable<unknown>) => {
      const result = await sealHour({
        root: o.out, journal: o.journal, recorder: o.recorder, venue, channel: o.channel as Channel,
        hourStart, key, createdBy: `pipe ${VERSION}`,
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

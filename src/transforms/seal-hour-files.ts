import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { rm } from 'node:fs/promises'
import { z } from 'zod'
import { UsageError } from '../core/errors.js'
import { defineStage } from '../core/stage.js'
import type { JournalBatch } from '../formats/record/journal/journal.js'
import { HOUR_NS, parseHourName } from '../formats/record/journal/journal.js'
import { signerOptions } from '../formats/record/keys/signer-options.js'
import { CHANNELS, type Channel } from '../formats/record/types.js'
import { findVenue, venueNames } from '../venues/index.js'
import { VERSION } from '../core/version.js'
import { journalDirsOption } from './journal.js'

/**
 * The first steps of a seal: the hour's journal batches (journal-read over the hour and its pairing window)
 * paired across replicas and written as the raw file and the tables in a temporary folder beside the hour's
 * final one, and its manifest drawn up. Gives one document, the hour's draft, for chain-link, sign and
 * seal-commit; an hour sealed before is given as it is (final), and nothing is built.
 */
export const sealHourFilesStage = defineStage({
  name: 'seal-hour-files',
  kind: 'transform',
  summary: 'Pairs an hour\'s journal events across replicas, writes its raw file and tables, and draws up its manifest (record format v1)',
  takes: 'any',
  gives: 'documents',
  options: z.object({
    venue: z.string().min(1),
    channel: z.enum(CHANNELS as [string, ...string[]]),
    hour: z.string().refine((s) => parseHourName(s) !== null, 'must be a UTC hour like 2026-10-03T14'),
    journal: journalDirsOption.describe('the journal directory, or one directory per replica (where the hour\'s torn or corrupt records are)'),
    out: z.string().min(1),
    ...signerOptions,
    recorder: z.string().default('recorder'),
    recorderStopped: z.boolean().default(false).describe('the recorder is gone for good: seal even though the journal holds nothing after the hour'),
  }),
  async create(o, ctx) {
    const venue = findVenue(o.venue)
    if (!venue) throw new UsageError('usage.unknown-venue', `unknown venue "${o.venue}" (known: ${venueNames().join(', ')})`, { location: { field: 'venue' } })
    if (!venue.channels.includes(o.channel as Channel)) throw new UsageError('usage.unknown-channel', `venue ${o.venue} has no channel ${o.channel} (it has ${venue.channels.join(', ')})`, { location: { field: 'channel' } })
    // Loaded here, not at the top: the sealer pulls in the Parquet and JWS libraries, which every other
    // command would otherwise pay for at start-up.
    const [{ recordSigner, signerRefused }, { assertHourSealable, prepareHour }] = await Promise.all([import('../formats/record/keys/signer.js'), import('../formats/record/seal/seal.js')])
    const hourStart = parseHourName(o.hour)!
    await assertHourSealable(o.journal, hourStart, o.recorderStopped)
    const beside = (key: string) => join(dirname(key), 'jwks.json')
    if (o.key && !o.keys && !existsSync(beside(o.key))) {
      throw new UsageError('usage.no-key-set', '--keys: no jwks.json beside the key: name the key set that publishes it, whose validity must cover the hour', { location: { file: beside(o.key) } })
    }
    const signer = await recordSigner(o, beside)
    // Judged as check 6 judges the hour's signature, and the day's after hour 23: at the hour's end.
    const refusal = signer.refusal(hourStart + HOUR_NS)
    if (refusal) throw signerRefused(signer, refusal, hourStart + HOUR_NS, `hour ${o.hour}`)
    return async function* (source: AsyncIterable<unknown>) {
      const draft = await prepareHour({
        root: o.out, journal: o.journal, recorder: o.recorder, venue, channel: o.channel as Channel,
        hourStart, sign: signer.sign, createdBy: `pipe ${VERSION}`,
      }, source as AsyncIterable<JournalBatch>)
      const temp = draft.temp
      if (temp) ctx.onFailure(() => rm(temp, { recursive: true, force: true }))
      yield draft
    }
  },
})

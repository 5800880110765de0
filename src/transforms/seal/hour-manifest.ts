import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { z } from 'zod'
import { PipeError, UsageError } from '../../core/errors.js'
import { defineStage } from '../../core/stage.js'
import { HOUR_NS } from '../../formats/record/journal/journal.js'
import { signerOptions } from '../../formats/record/keys/signer-options.js'
import { sealedHourOf, sealHourOptions } from './seal-options.js'

/**
 * A seal's manifest: the hour's facts and files (write-hour-files) drawn up as its hourly manifest, with
 * the conflicts read back from its raw file. Gives the hour's draft, a document for chain-link, sign and
 * seal-commit; an hour sealed before is given as it is (final). Takes the signer the day's manifest is
 * signed with after hour 23, and refuses one that check 6 would refuse, before anything is read.
 */
export const hourManifestStage = defineStage({
  name: 'hour-manifest',
  kind: 'transform',
  summary: 'Draws up an hour\'s manifest from its facts and written files: the draft to link, sign and commit (record format v1)',
  takes: 'any',
  gives: 'documents',
  options: z.object({
    ...sealHourOptions,
    out: z.string().min(1).describe('the root the sealed hours go under'),
    recorder: z.string().default('recorder'),
    ...signerOptions,
  }),
  async create(o, ctx) {
    const hour = sealedHourOf(o)
    // Loaded here, not at the top: the sealer pulls in the Parquet and JWS libraries, which every other
    // command would otherwise pay for at start-up.
    const [{ recordSigner, signerRefused }, { draftHour, SealedHourFiles }] = await Promise.all([import('../../formats/record/keys/signer.js'), import('../../formats/record/seal/seal.js')])
    const beside = (key: string) => join(dirname(key), 'jwks.json')
    if (o.key && !o.keys && !existsSync(beside(o.key))) {
      throw new UsageError('usage.no-key-set', '--keys: no jwks.json beside the key: name the key set that publishes it, whose validity must cover the hour', { location: { file: beside(o.key) } })
    }
    const signer = await recordSigner(o, beside)
    // Judged as check 6 judges the hour's signature, and the day's after hour 23: at the hour's end.
    const refusal = signer.refusal(hour.hourStart + HOUR_NS)
    if (refusal) throw signerRefused(signer, refusal, hour.hourStart + HOUR_NS, `hour ${o.hour}`)
    const seal = { root: o.out, recorder: o.recorder, venue: hour.venue, channel: hour.channel, sign: signer.sign }
    return async function* (source: AsyncIterable<unknown>) {
      for await (const item of source) {
        if (!(item instanceof SealedHourFiles)) throw new PipeError('usage.item-type', `${ctx.stage} takes the hours write-hour-files gives`)
        yield await draftHour(seal, item.place, item.hour)
      }
    }
  },
})

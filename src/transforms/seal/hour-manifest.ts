import { existsSync } from 'node:fs'
import { z } from 'zod'
import { UsageError } from '../../core/errors.js'
import { defineStage } from '../../core/stage.js'
import { HOUR_NS } from '../../formats/record/journal/journal.js'
import { jwksBeside, signerOptions } from '../../formats/record/keys/signer-options.js'
import { sealedHourOf, sealHourOptions } from './seal-options.js'

/**
 * A seal's manifest: the hour's facts and files (write-hour-files) drawn up as its hourly manifest, with
 * the conflicts read back from its raw file. Gives the hour's draft, a document for chain-link, sign and
 * seal-commit; an hour sealed before is given as it is (final). Its root and recorder are the ones
 * write-hour-files placed the hour by. Takes the signer the day's manifest is
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
    ...signerOptions,
  }),
  async create(o, ctx) {
    const hour = sealedHourOf(o)
    // Loaded here, not at the top: the sealer pulls in the Parquet and JWS libraries, which every other
    // command would otherwise pay for at start-up.
    const [{ recordSigner, signerRefused }, { draftHour, SealedHourFiles }] = await Promise.all([import('../../formats/record/keys/signer.js'), import('../../formats/record/seal/seal.js')])
    if (o.key && !o.keys && !existsSync(jwksBeside(o.key))) {
      throw new UsageError('usage.no-key-set', '--keys: no jwks.json beside the key: name the key set that publishes it, whose validity must cover the hour', { location: { file: jwksBeside(o.key) } })
    }
    const signer = await recordSigner(o, jwksBeside, ctx.signal)
    // Judged as check 6 judges the hour's signature, and the day's after hour 23: at the hour's end.
    const refusal = signer.refusal(hour.hourStart + HOUR_NS)
    if (refusal) throw signerRefused(signer, refusal, hour.hourStart + HOUR_NS, `hour ${o.hour}`)
    return async function* (source: AsyncIterable<unknown>) {
      for await (const item of source) {
        if (!(item instanceof SealedHourFiles)) throw new UsageError('usage.item-type', `${ctx.stage} takes the hours write-hour-files gives`)
        const place = item.place
        // The signer was judged for this hour, venue and channel: the files must be of the same.
        if (place.hourStart !== hour.hourStart || place.chain.venue.name !== hour.venue.name || place.chain.channel !== hour.channel) {
          throw new UsageError('seal.hour-mismatch', `${ctx.stage} was given ${o.venue} ${o.channel} ${o.hour}, and files of another hour or chain (${place.dir}): give the seal's stages the same venue, channel and hour`)
        }
        yield await draftHour(place, item.hour, signer.sign)
      }
    }
  },
})

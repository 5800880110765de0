import { rm } from 'node:fs/promises'
import { z } from 'zod'
import { defineStage } from '../../core/stage.js'
import { VERSION } from '../../core/version.js'
import { sealedHourOf, sealHourOptions } from './seal-options.js'

/**
 * A seal's files: the hour's paired frames written as its raw file and tables into a temporary folder
 * beside the hour's final one (classified on one thread, compressed and encoded on another). Gives one
 * item, the written hour, for hour-manifest. An hour sealed before is given as it is, its frames never
 * asked for; an hour out of its chain's order is refused before anything is written.
 */
export const writeHourFilesStage = defineStage({
  name: 'write-hour-files',
  kind: 'transform',
  summary: 'Writes an hour\'s paired frames as raw.jsonl.zst and its tables in a temporary folder beside the hour (record format v1)',
  takes: 'frames',
  gives: 'any',
  options: z.object({
    ...sealHourOptions,
    out: z.string().min(1).describe('the root the sealed hours go under'),
    recorder: z.string().default('recorder'),
  }),
  async create(o, ctx) {
    const hour = sealedHourOf(o)
    const { placeHour, writeHourFiles, SealedHourFiles } = await import('../../formats/record/seal/seal.js')
    return async function* (source: AsyncIterable<unknown>) {
      const place = await placeHour({ ...hour, root: o.out, recorder: o.recorder })
      const temp = place.temp
      if (temp === null) {
        yield new SealedHourFiles(place, null)
        return
      }
      ctx.onFailure(() => rm(temp, { recursive: true, force: true }))
      yield new SealedHourFiles(place, await writeHourFiles({ ...hour, dir: temp, createdBy: `pipe ${VERSION}` }, source))
    }
  },
})

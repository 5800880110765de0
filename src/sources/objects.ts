import { z } from 'zod'
import { defineStage } from '../core/stage.js'
import { SHA256_NAME } from '../codec/hash.js'

/** A URL fetch-object can fetch, refused with the option that names it rather than when its turn comes. */
export const httpUrl = z.string().refine((text) => URL.canParse(text) && ['http:', 'https:'].includes(new URL(text).protocol), 'must be an http: or https: URL')

const objectToFetch = z.strictObject({
  url: httpUrl,
  hash: z.string().regex(SHA256_NAME, 'must be sha256: and 64 lower-case hex digits'),
  bytes: z.number().int().min(0).optional(),
})

/** The objects a pipeline names, as fetch-object takes them: a fixed list, checked before the run starts. */
export const objectsSource = defineStage({
  name: 'objects',
  kind: 'source',
  summary: 'Gives the objects its options list, each {url, hash, bytes?}, for fetch-object',
  takes: 'none',
  gives: 'any',
  options: z.object({
    objects: z.array(objectToFetch).min(1, 'lists no object').describe('the objects, in order: [{"url": "https://...", "hash": "sha256:<64 hex>", "bytes"?: N}]'),
  }),
  create({ objects }) {
    return (async function* () {
      yield* objects
    })()
  },
})

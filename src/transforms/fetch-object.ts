import { join } from 'node:path'
import { z } from 'zod'
import { PipeError } from '../core/errors.js'
import { defineStage } from '../core/stage.js'
import { FetchLimiter, fetchObject } from '../net/http-object.js'
import { fetchOptions } from '../sources/http-file.js'

/** What fetch-object takes: an object to fetch, by URL and name; `bytes` when an index states its size. */
export interface ObjectToFetch {
  url: string
  hash: string
  bytes?: number
}

/** What it gives: the object's file, in `dir`, named by its hash, checked. */
export interface FetchedObjectItem extends ObjectToFetch {
  path: string
  bytes: number
}

/**
 * Objects fetched over HTTP(S) into a folder, each given on only once its size and SHA-256 are checked;
 * at most `concurrency` at once, given on in the order they came.
 */
export const fetchObjectStage = defineStage({
  name: 'fetch-object',
  kind: 'transform',
  summary: 'Fetches each {url, hash, bytes?} into a folder, checked by size and SHA-256 before it is given on (Range resume, retries, limits)',
  takes: 'any',
  gives: 'any',
  options: z.object({
    dir: z.string().min(1).describe('the folder the objects go into, each named by its hash'),
    concurrency: z.number().int().min(1).max(64).default(4).describe('fetches at once'),
    ...fetchOptions,
  }),
  create(o, ctx) {
    const limiter = new FetchLimiter(o.concurrency)
    return async function* (source: AsyncIterable<unknown>) {
      const pending: Promise<FetchedObjectItem>[] = []
      const start = (item: unknown): Promise<FetchedObjectItem> => {
        const x = item as Partial<ObjectToFetch>
        if (typeof x?.url !== 'string' || typeof x.hash !== 'string' || (x.bytes !== undefined && !Number.isSafeInteger(x.bytes))) {
          return Promise.reject(new PipeError('fetch.bad-item', `fetch-object takes {url, hash, bytes?}, got ${JSON.stringify(item)?.slice(0, 200)}`))
        }
        const name = x.hash.replace(/^sha256:/, '')
        return limiter.run(async () => {
          const got = await fetchObject({
            url: x.url!, hash: x.hash!, maxBytes: o.maxBytes, ...(x.bytes !== undefined ? { bytes: x.bytes } : {}), dest: join(o.dir, name),
            retries: o.retries, timeoutMs: o.timeoutMs, stallMs: o.stallMs, signal: ctx.signal,
          })
          return { url: x.url!, hash: x.hash!, bytes: got.bytes, path: got.path }
        })
      }
      for await (const item of source) {
        const p = start(item)
        // A failure is thrown in order, when its turn comes; until then it must not count as unhandled.
        p.catch(() => undefined)
        pending.push(p)
        while (pending.length > o.concurrency) yield await pending.shift()!
      }
      while (pending.length > 0) yield await pending.shift()!
    }
  },
})

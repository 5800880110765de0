import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { z } from 'zod'
import { PipeError } from '../core/errors.js'
import { defineStage } from '../core/stage.js'
import { FetchLimiter, fetchObject } from '../net/http-object.js'

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
 * at most `concurrency` at once, given on in the order they came. Without `dir`, the folder is the stage's
 * own and goes when the stage ends: a generator waits at each item it gives until the next is asked for,
 * so the stage after it (read-files) has read each file by then.
 */
export const fetchObjectStage = defineStage({
  name: 'fetch-object',
  kind: 'transform',
  summary: 'Fetches each {url, hash, bytes?} into a folder, checked by size and SHA-256 before it is given on (Range resume, retries, limits)',
  takes: 'any',
  gives: 'any',
  options: z.object({
    dir: z.string().min(1).optional().describe('the folder the objects go into, each named by its hash, and kept; default a temporary one, where each object is removed once the next stage asks for the next, and the folder when the stage ends'),
    concurrency: z.number().int().min(1).max(64).default(4).describe('fetches at once'),
    maxBytes: z.number().int().positive().describe('the most bytes an object may have; more is refused while streaming (fetch.too-large)'),
    retries: z.number().int().min(0).default(4).describe('attempts after the first on 5xx answers, resets and stalls'),
    timeoutMs: z.number().int().positive().default(120_000).describe('deadline of the whole fetch, retries included'),
    stallMs: z.number().int().positive().default(15_000).describe('a body silent this long is cut and resumed with Range'),
  }),
  create(o, ctx) {
    const limiter = new FetchLimiter(o.concurrency)
    return async function* (source: AsyncIterable<unknown>) {
      // Made when the pipeline first pulls, so the temporary folder lives and dies inside this generator.
      const dir = o.dir ?? await mkdtemp(join(tmpdir(), 'pipe-fetch-'))
      const pending: Promise<FetchedObjectItem>[] = []
      const stopFetches = new AbortController()
      const signal = AbortSignal.any([ctx.signal, stopFetches.signal])
      // No fetch may outlive the stage: one still running would write into a folder that is going.
      const end = async () => {
        stopFetches.abort()
        await Promise.allSettled(pending)
        if (o.dir === undefined) await rm(dir, { recursive: true, force: true })
      }
      // A later stage's failure may end the run while this generator waits on a fetch, before its finally runs.
      if (o.dir === undefined) ctx.onFailure(end)
      let fetches = 0
      const start = (item: unknown): Promise<FetchedObjectItem> => {
        const x = item as Partial<ObjectToFetch>
        if (typeof x?.url !== 'string' || typeof x.hash !== 'string' || (x.bytes !== undefined && !Number.isSafeInteger(x.bytes))) {
          return Promise.reject(new PipeError('fetch.bad-item', `fetch-object takes {url, hash, bytes?}, got ${JSON.stringify(item)?.slice(0, 200)}`))
        }
        // In a folder of its own each object gets a name of its own, so that one read can go while a
        // later object of the same hash is still to be read.
        const name = o.dir === undefined ? `${fetches++}-${x.hash.replace(/^sha256:/, '')}` : x.hash.replace(/^sha256:/, '')
        return limiter.run(async () => {
          const got = await fetchObject({
            url: x.url!, hash: x.hash!, maxBytes: o.maxBytes, ...(x.bytes !== undefined ? { bytes: x.bytes } : {}), dest: join(dir, name),
            retries: o.retries, timeoutMs: o.timeoutMs, stallMs: o.stallMs, signal,
          })
          ctx.summary.http_requests = ((ctx.summary.http_requests as number | undefined) ?? 0) + got.requests
          return { url: x.url!, hash: x.hash!, bytes: got.bytes, path: got.path }
        })
      }
      // Off the queue only once settled, so that `end` waits for the one being awaited too.
      const nextInOrder = async (): Promise<FetchedObjectItem> => {
        const fetched = await pending[0]!
        pending.shift()
        return fetched
      }
      // The next stage has read an object once it asks for the next: in a folder of its own, the object
      // goes then, so that a long list never holds more than `concurrency` objects on disk.
      async function* give(fetched: FetchedObjectItem) {
        yield fetched
        if (o.dir === undefined) await rm(fetched.path, { force: true })
      }
      try {
        for await (const item of source) {
          const p = start(item)
          // A failure is thrown in order, when its turn comes; until then it must not count as unhandled.
          p.catch(() => undefined)
          pending.push(p)
          while (pending.length > o.concurrency) yield* give(await nextInOrder())
        }
        while (pending.length > 0) yield* give(await nextInOrder())
      } finally {
        await end()
      }
    }
  },
})

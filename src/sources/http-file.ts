import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { z } from 'zod'
import { fetchObject } from '../net/http-object.js'
import { openRegularFile } from '../core/input-file.js'
import { defineStage } from '../core/stage.js'
import { READ_CHUNK } from './file.js'

export const fetchOptions = {
  maxBytes: z.number().int().positive().describe('the most bytes the object may have; more is refused while streaming (fetch.too-large)'),
  retries: z.number().int().min(0).default(4).describe('attempts after the first on 5xx answers, resets and stalls'),
  timeoutMs: z.number().int().positive().default(120_000).describe('deadline of the whole fetch, retries included'),
  stallMs: z.number().int().positive().default(15_000).describe('a body silent this long is cut and resumed with Range'),
}

/**
 * The bytes of a file on an HTTP(S) server, given only after the whole file has come and hashed to
 * `sha256`: fetched into a temporary file (resumed with Range when cut), checked, then read.
 */
export const httpFileSource = defineStage({
  name: 'http-file',
  kind: 'source',
  summary: 'Fetches a file over HTTP(S) and gives its bytes once their SHA-256 is checked (Range resume, retries, a size limit)',
  takes: 'none',
  gives: 'bytes',
  options: z.object({
    url: z.string().min(1).describe('the http: or https: URL'),
    sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits').describe('the SHA-256 the bytes must have'),
    ...fetchOptions,
  }),
  create(o, ctx) {
    // Fetched when the pipeline first pulls, so the temporary folder lives and dies inside this generator.
    return (async function* () {
      const dir = await mkdtemp(join(tmpdir(), 'pipe-http-'))
      try {
        const got = await fetchObject({
          url: o.url, hash: `sha256:${o.sha256}`, maxBytes: o.maxBytes, dest: join(dir, randomBytes(6).toString('hex')),
          retries: o.retries, timeoutMs: o.timeoutMs, stallMs: o.stallMs, signal: ctx.signal,
        })
        ctx.summary.http_requests = got.requests
        const { fh } = await openRegularFile(got.path)
        try {
          yield* fh.createReadStream({ highWaterMark: READ_CHUNK })
        } finally {
          await fh.close().catch(() => undefined)
        }
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    })()
  },
})

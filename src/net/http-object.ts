/**
 * One object fetched over HTTP(S) into a file, trusted only once its hash is checked: Node's built-in fetch,
 * the bytes written to a temporary file and hashed as they come, the file given its final name only when
 * its size and SHA-256 are the ones asked for. A transfer cut short is resumed with a Range request from
 * the bytes already held; 5xx answers, resets and stalls are retried with backoff; a size known before the
 * download is enforced while streaming; one deadline bounds the whole fetch. Nothing is read from a body
 * beyond the limit, and nothing half-written stays under the final name.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { writeFully } from '../core/atomic-write.js'
import { PipeError } from '../core/errors.js'
import { SHA256_NAME } from '../codec/hash.js'

export const FETCH_CODES = {
  /** The server answered with a status that is not success and not worth retrying (404, 403, ...). */
  status: 'fetch.http-status',
  /** 404 or 410: the server has no such file (a reader of a static host learns of absence only so). */
  notFound: 'fetch.not-found',
  /** 403: refused. An S3 bucket without list permission answers so for a file it does not have. */
  forbidden: 'fetch.forbidden',
  /** Retries ran out on 5xx answers, resets or stalls. */
  unavailable: 'fetch.unavailable',
  /** More bytes than the limit known before the download: stated by Content-Length, or sent. */
  tooLarge: 'fetch.too-large',
  /** The body ended at another size than the one asked for. */
  sizeMismatch: 'fetch.size-mismatch',
  /** The bytes do not hash to the object's name. */
  hashMismatch: 'fetch.hash-mismatch',
  /** The whole fetch took longer than its deadline. */
  timeout: 'fetch.timeout',
  /** A URL that is not http: or https:. */
  badUrl: 'fetch.bad-url',
  /** An object name that is not `sha256:` and 64 hex digits: nothing to check the bytes against. */
  badHash: 'fetch.bad-hash',
} as const

export interface FetchObjectOptions {
  url: string
  /**
   * `sha256:` and 64 hex digits: what the bytes must hash to. Absent only for a file no name can check (a
   * pack's ref, key statement or signature), whose trust comes from the signature it holds or covers.
   */
  hash?: string
  /** The most bytes the object may have, known before the download (its index's bytes, or a limit). */
  maxBytes: number
  /** Its exact size, when known (an index states it). */
  bytes?: number
  /** Where the verified object goes; its folder is made. A temporary file beside it takes the bytes. */
  dest: string
  /** Attempts after the first on 5xx, resets and stalls (default 4). */
  retries?: number
  /** The first retry's wait; each next doubles it, with jitter (default 250 ms). */
  backoffMs?: number
  /** The deadline of the whole fetch, retries included (default 120 s). */
  timeoutMs?: number
  /** A body that sends nothing for this long is a stall: the transfer is cut and resumed (default 15 s). */
  stallMs?: number
  signal?: AbortSignal
}

export interface FetchedObject {
  path: string
  bytes: number
  /** Requests made: 1 when the first did it all. */
  requests: number
  /** Bytes taken from the server more than once (a resume that the server answered from the start). */
  refetchedBytes: number
}

/** Statuses worth another try: the server or a proxy may answer next time. */
const RETRIED_STATUS = new Set([408, 425, 429, 500, 502, 503, 504])

/** A failure worth another try (reset, stall, 5xx); anything else ends the fetch. */
class Retryable extends Error {}

/** Fetches `url` into `dest`, resuming cut transfers, and gives the object only when its size and hash are right. */
export async function fetchObject(o: FetchObjectOptions): Promise<FetchedObject> {
  // A fetch that waited its turn after its caller stopped must not make `dest`'s folder again.
  o.signal?.throwIfAborted()
  const hex = o.hash === undefined ? undefined : SHA256_NAME.exec(o.hash)?.[1]
  if (o.hash !== undefined && hex === undefined) throw new PipeError(FETCH_CODES.badHash, `${o.url}: ${JSON.stringify(o.hash)} is not sha256: and 64 hex digits, so no download can be checked against it`)
  let url: URL
  try {
    url = new URL(o.url)
  } catch {
    throw new PipeError(FETCH_CODES.badUrl, `${JSON.stringify(o.url)} is not a URL`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new PipeError(FETCH_CODES.badUrl, `${o.url}: only http: and https: are fetched`)
  const limit = o.bytes ?? o.maxBytes
  if (o.bytes !== undefined && o.bytes > o.maxBytes) throw new PipeError(FETCH_CODES.tooLarge, `${o.url}: its stated ${o.bytes} bytes are more than the ${o.maxBytes} allowed`)

  const deadline = AbortSignal.timeout(o.timeoutMs ?? 120_000)
  const signal = o.signal ? AbortSignal.any([o.signal, deadline]) : deadline
  await mkdir(dirname(o.dest), { recursive: true })
  const tmp = join(dirname(o.dest), `.fetch-${randomBytes(6).toString('hex')}.tmp`)
  const fh = await open(tmp, 'w')
  let held = 0
  let sha = createHash('sha256')
  let requests = 0
  let refetchedBytes = 0
  let landed = false
  try {
    const retries = o.retries ?? 4
    for (let attempt = 0; ; attempt++) {
      requests++
      try {
        await oneRequest(url, held, limit, fh, o.stallMs ?? 15_000, signal, {
          restart: () => {
            refetchedBytes += held
            held = 0
            sha = createHash('sha256')
          },
          take: (chunk) => {
            sha.update(chunk)
            held += chunk.byteLength
          },
        })
        // A body that ended cleanly short of the stated size was cut too: the rest is asked for.
        if (o.bytes !== undefined && held < o.bytes) throw new Retryable(`the body ended at byte ${held} of ${o.bytes}`)
        break
      } catch (err) {
        if (deadline.aborted) throw new PipeError(FETCH_CODES.timeout, `${o.url}: not fetched within ${o.timeoutMs ?? 120_000} ms (${held} bytes held after ${requests} requests)`)
        if (o.signal?.aborted) throw err
        if (!(err instanceof Retryable)) throw err
        // Cut after its last byte (a body that never ended cleanly): what is held is checked, not asked for again.
        if (o.bytes !== undefined && held === o.bytes) break
        if (attempt >= retries) throw new PipeError(FETCH_CODES.unavailable, `${o.url}: ${err.message}; gave up after ${requests} requests`)
        const wait = (o.backoffMs ?? 250) * 2 ** attempt * (0.75 + Math.random() * 0.5)
        await sleep(wait, signal).catch(() => undefined)
        if (deadline.aborted) throw new PipeError(FETCH_CODES.timeout, `${o.url}: not fetched within ${o.timeoutMs ?? 120_000} ms (${held} bytes held after ${requests} requests)`)
        if (o.signal?.aborted) throw o.signal.reason
      }
    }
    if (o.bytes !== undefined && held !== o.bytes) throw new PipeError(FETCH_CODES.sizeMismatch, `${o.url}: ${held} bytes, its index states ${o.bytes}`)
    const got = sha.digest('hex')
    if (hex !== undefined && got !== hex) throw new PipeError(FETCH_CODES.hashMismatch, `${o.url}: its bytes hash to sha256:${got}, not ${o.hash}`)
    await fh.sync()
    await fh.close()
    await rename(tmp, o.dest)
    landed = true
    return { path: o.dest, bytes: held, requests, refetchedBytes }
  } finally {
    if (!landed) {
      await fh.close().catch(() => undefined)
      await rm(tmp, { force: true })
    }
  }
}

/**
 * One GET from `from` bytes on (a Range request when more than 0), each chunk written at its place in the
 * file and given to `take` in order. A server that ignores the range sends the object from byte 0: the
 * file is emptied and `restart` called first. Returns when the body ended; throws Retryable for what
 * another request may mend, a PipeError for what it will not.
 */
async function oneRequest(url: URL, from: number, limit: number, fh: FileHandle, stallMs: number, signal: AbortSignal,
  on: { restart: () => void; take: (chunk: Uint8Array) => void }): Promise<void> {
  const stall = new AbortController()
  const request = AbortSignal.any([signal, stall.signal])
  let response: Response
  // A server that sends no headers for stallMs stalls too.
  let timer = setTimeout(() => stall.abort(), stallMs)
  try {
    response = await fetch(url, { headers: from > 0 ? { range: `bytes=${from}-` } : {}, signal: request, redirect: 'follow' })
  } catch (err) {
    clearTimeout(timer)
    if (signal.aborted) throw err
    throw new Retryable(stall.signal.aborted ? `no answer for ${stallMs} ms` : `the request failed (${describe(err)})`)
  }
  clearTimeout(timer)
  let start = 0
  if (response.status === 206 && from > 0) {
    const range = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(response.headers.get('content-range') ?? '')
    if (range === null || Number(range[1]) !== from) {
      await response.body?.cancel()
      throw new PipeError(FETCH_CODES.status, `${url.href}: asked for bytes from ${from}, the server sent ${JSON.stringify(response.headers.get('content-range'))}`)
    }
    start = from
  } else if (response.status !== 200) {
    await response.body?.cancel()
    if (response.status === 416 && from > 0) throw new PipeError(FETCH_CODES.sizeMismatch, `${url.href}: the server holds no bytes past the ${from} already fetched (416), and they do not make the object`)
    if (RETRIED_STATUS.has(response.status)) throw new Retryable(`the server answered ${response.status}`)
    if (response.status === 404 || response.status === 410) throw new PipeError(FETCH_CODES.notFound, `${url.href}: the server has no such file (${response.status})`)
    if (response.status === 403) throw new PipeError(FETCH_CODES.forbidden, `${url.href}: the server refused it (403; an S3 bucket without list permission answers so for a file it does not have)`)
    throw new PipeError(FETCH_CODES.status, `${url.href}: the server answered ${response.status} ${response.statusText}`.trimEnd())
  }
  const length = response.headers.get('content-length')
  if (length !== null && /^\d+$/.test(length) && start + Number(length) > limit) {
    await response.body?.cancel()
    throw new PipeError(FETCH_CODES.tooLarge, `${url.href}: the server states ${start + Number(length)} bytes, more than the ${limit} allowed`)
  }
  if (start === 0 && from > 0) {
    await fh.truncate(0)
    on.restart()
  }
  if (response.body === null) return
  let at = start
  const reader = response.body.getReader()
  timer = setTimeout(() => stall.abort(), stallMs)
  try {
    for (;;) {
      let next: Awaited<ReturnType<typeof reader.read>>
      try {
        next = await reader.read()
      } catch (err) {
        if (signal.aborted) throw err
        throw new Retryable(stall.signal.aborted ? `the body stalled for ${stallMs} ms at byte ${at}` : `the transfer was cut at byte ${at} (${describe(err)})`)
      }
      if (next.done) return
      const chunk = next.value
      if (at + chunk.byteLength > limit) {
        await reader.cancel().catch(() => undefined)
        throw new PipeError(FETCH_CODES.tooLarge, `${url.href}: the body runs past the ${limit} bytes allowed; stopped there`)
      }
      clearTimeout(timer)
      timer = setTimeout(() => stall.abort(), stallMs)
      await writeFully(fh, chunk, at)
      on.take(chunk)
      at += chunk.byteLength
    }
  } finally {
    clearTimeout(timer)
  }
}

function describe(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err))
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => { clearTimeout(timer); reject(signal.reason) }, { once: true })
  })
}

/** At most `limit` fetches at once; the others wait their turn in the order they came. */
export class FetchLimiter {
  private running = 0
  private readonly waiting: (() => void)[] = []

  constructor(private readonly limit: number) {
    if (!(limit >= 1)) throw new Error('a fetch limiter runs at least one fetch at a time')
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    // A slot is handed from a task that ends to the first waiting one, so no newcomer takes it in between.
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve))
    else this.running++
    try {
      return await task()
    } finally {
      const next = this.waiting.shift()
      if (next) next()
      else this.running--
    }
  }
}

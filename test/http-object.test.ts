import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { runStageList } from '../src/core/runner.js'
import { FetchLimiter, fetchObject, type FetchObjectOptions } from '../src/net/http-object.js'
import { fetchObjectStage, type FetchedObjectItem } from '../src/transforms/fetch-object.js'
import { registry } from '../pipelines/registry.js'
import { captureIO, withEnv } from './helpers/io.js'
import { FaultProxy } from './helpers/fault-proxy.js'
import { startNginx, type Nginx } from './helpers/nginx.js'
import { needs } from './helpers/tools.js'

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`

t.test('a limiter hands a slot to the fetch that waited, never to one that came after', async (t) => {
  const limiter = new FetchLimiter(1)
  let active = 0
  let most = 0
  const order: string[] = []
  const task = (name: string, ms: number) => async () => {
    active++
    most = Math.max(most, active)
    order.push(name)
    await new Promise((r) => setTimeout(r, ms))
    active--
  }
  const a = limiter.run(task('a', 30))
  const b = limiter.run(task('b', 10))
  await a
  const c = limiter.run(task('c', 10))
  await Promise.all([b, c])
  t.equal(most, 1, 'one at a time')
  t.same(order, ['a', 'b', 'c'], 'in the order they came')
})

t.test('fetching objects from a real nginx through a fault-injecting proxy', needs('nginx'), async (t) => {
  const www = await mkdtemp(join(tmpdir(), 'www-'))
  const out = await mkdtemp(join(tmpdir(), 'fetched-'))
  // 3 MiB: many chunks, so a cut lands mid-object.
  const object = randomBytes(3 << 20)
  await writeFile(join(www, 'object.bin'), object)
  const small = Buffer.from('a small object\n')
  await writeFile(join(www, 'small.bin'), small)
  const nginx: Nginx = await startNginx(www)
  const proxy = await new FaultProxy(nginx.base).start()
  t.teardown(async () => { await proxy.stop(); await nginx.stop(); await rm(www, { recursive: true, force: true }); await rm(out, { recursive: true, force: true }) })
  let n = 0
  const fetchIt = (path: string, extra: Partial<FetchObjectOptions> = {}) => {
    const body = path === '/small.bin' ? small : object
    return fetchObject({ url: `${proxy.base}${path}`, hash: sha(body), maxBytes: 8 << 20, bytes: body.length, dest: join(out, `o${n++}`), backoffMs: 10, ...extra })
  }
  const requestsFor = (from: number) => proxy.requests.slice(from)
  const left = async () => (await readdir(out)).filter((f) => f.startsWith('.fetch-'))

  await t.test('a plain fetch: one request, the object under its name', async (t) => {
    const got = await fetchIt('/object.bin')
    t.same({ bytes: got.bytes, requests: got.requests, refetched: got.refetchedBytes }, { bytes: object.length, requests: 1, refetched: 0 })
    t.ok((await readFile(got.path)).equals(object))
  })

  await t.test('a transfer cut mid-object is resumed with Range from the bytes held', async (t) => {
    const from = proxy.requests.length
    proxy.fault('/object.bin', { kind: 'cut', after: 1_000_000 })
    const got = await fetchIt('/object.bin')
    t.ok((await readFile(got.path)).equals(object), 'the whole object, hash checked')
    const asked = requestsFor(from).map((r) => r.range)
    t.equal(asked[0], undefined, 'the first request asks for all of it')
    t.match(asked[1], /^bytes=(\d+)-$/, 'the second asks from where the first was cut')
    const resumedAt = Number(/^bytes=(\d+)-$/.exec(asked[1]!)![1])
    t.ok(resumedAt > 0 && resumedAt <= 1_000_000, `resumed at byte ${resumedAt}`)
    t.same({ requests: got.requests, refetched: got.refetchedBytes }, { requests: 2, refetched: 0 }, 'nothing fetched twice')
  })

  await t.test('a body cut after its last byte is checked, not asked for again', async (t) => {
    proxy.fault('/object.bin', { kind: 'no-end' })
    const got = await fetchIt('/object.bin')
    t.ok((await readFile(got.path)).equals(object))
    t.equal(got.requests, 1)
  })

  await t.test('a server that ignores the Range is read from the start again', async (t) => {
    proxy.fault('/object.bin', { kind: 'cut', after: 500_000 })
    proxy.fault('/object.bin', { kind: 'ignore-range' })
    const got = await fetchIt('/object.bin')
    t.ok((await readFile(got.path)).equals(object))
    t.equal(got.requests, 2)
    t.ok(got.refetchedBytes > 0 && got.refetchedBytes <= 500_000, `${got.refetchedBytes} bytes fetched twice`)
  })

  await t.test('wrong bytes are refused, and nothing is left under the name or beside it', async (t) => {
    proxy.fault('/object.bin', { kind: 'wrong-bytes' })
    const dest = join(out, 'wrong')
    await t.rejects(fetchIt('/object.bin', { dest }), { code: 'fetch.hash-mismatch', message: /object\.bin: its bytes hash to sha256:[0-9a-f]{64}, not sha256:/ })
    await t.rejects(readFile(dest), { code: 'ENOENT' })
    t.same(await left(), [])
  })

  await t.test('404 is final; 500 is retried with backoff, until the retries run out', async (t) => {
    let from = proxy.requests.length
    proxy.fault('/small.bin', { kind: 'status', status: 404 })
    await t.rejects(fetchIt('/small.bin'), { code: 'fetch.not-found', message: /small\.bin: the server has no such file \(404\)/ })
    t.equal(requestsFor(from).length, 1, 'no retry of a 404')
    from = proxy.requests.length
    proxy.fault('/small.bin', { kind: 'status', status: 500 }, 2)
    const got = await fetchIt('/small.bin')
    t.equal(got.requests, 3, 'two 500s, then the object')
    t.ok((await readFile(got.path)).equals(small))
    from = proxy.requests.length
    proxy.fault('/small.bin', { kind: 'status', status: 503 }, 10)
    await t.rejects(fetchIt('/small.bin', { retries: 2 }), { code: 'fetch.unavailable', message: /the server answered 503; gave up after 3 requests/ })
    t.equal(requestsFor(from).length, 3)
    proxy.clear('/small.bin')
    t.same(await left(), [])
  })

  await t.test('a stalled body is cut and resumed; a fetch past its deadline ends with a timeout', async (t) => {
    proxy.fault('/object.bin', { kind: 'stall', after: 200_000 })
    const got = await fetchIt('/object.bin', { stallMs: 300 })
    t.ok((await readFile(got.path)).equals(object))
    t.equal(got.requests, 2)
    proxy.fault('/small.bin', { kind: 'silent' })
    const unanswered = await fetchIt('/small.bin', { stallMs: 300 })
    t.equal(unanswered.requests, 2, 'a request with no answer is a stall too, and is made again')
    proxy.fault('/object.bin', { kind: 'stall', after: 100 }, 50)
    const started = Date.now()
    await t.rejects(fetchIt('/object.bin', { stallMs: 200, timeoutMs: 1000, retries: 50 }), { code: 'fetch.timeout' })
    proxy.clear('/object.bin')
    t.ok(Date.now() - started < 5000, 'the deadline bounds the whole fetch')
    t.same(await left(), [])
  })

  await t.test('a body past the size limit is stopped at the limit; a stated size past it is refused before reading', async (t) => {
    proxy.fault('/small.bin', { kind: 'oversize', extra: 50 << 20 })
    await t.rejects(fetchIt('/small.bin', { bytes: undefined, maxBytes: 1 << 20 }), { code: 'fetch.too-large', message: /runs past the 1048576 bytes allowed/ })
    await t.rejects(fetchIt('/object.bin', { bytes: undefined, maxBytes: 1 << 20 }), { code: 'fetch.too-large', message: /states 3145728 bytes, more than the 1048576 allowed/ })
    await t.rejects(fetchIt('/object.bin', { maxBytes: 1 << 20 }), { code: 'fetch.too-large', message: /stated 3145728 bytes are more than the 1048576 allowed/ }, 'the index\'s size, before any request')
    t.same(await left(), [])
  })

  await t.test('a bad name or URL is refused before any request', async (t) => {
    const from = proxy.requests.length
    await t.rejects(fetchObject({ url: `${proxy.base}/small.bin`, hash: 'md5:00', maxBytes: 100, dest: join(out, 'x') }), { code: 'fetch.bad-hash' })
    await t.rejects(fetchObject({ url: 'file:///etc/passwd', hash: sha(small), maxBytes: 100, dest: join(out, 'x') }), { code: 'fetch.bad-url' })
    t.equal(proxy.requests.length, from)
  })

  await t.test('objects -> fetch-object -> read-files gives the bytes once they are checked; wrong bytes give none', async (t) => {
    // Its own TMPDIR, so that what fetch-object leaves there is this test's to see.
    const fetchTmp = await mkdtemp(join(tmpdir(), 'fetch-tmp-'))
    t.teardown(() => rm(fetchTmp, { recursive: true, force: true }))
    const fetchTo = async (path: string) => {
      const io = captureIO()
      const result = await withEnv('TMPDIR', fetchTmp, () => runStageList(registry, 'get', [
        { stage: 'objects', options: { objects: [{ url: `${proxy.base}/object.bin`, hash: sha(object) }] } },
        { stage: 'fetch-object', options: { maxBytes: 8 << 20 } },
        { stage: 'read-files' },
        { stage: 'atomic-file', options: { path } },
      ], io.settings))
      return { result, err: io.err() }
    }
    const dest = join(out, 'via-stages')
    proxy.fault('/object.bin', { kind: 'cut', after: 700_000 })
    const ok = await fetchTo(dest)
    t.equal(ok.result.exitCode, 0, ok.err)
    t.ok((await readFile(dest)).equals(object), 'the whole object, after a resume')
    t.equal(ok.result.summary.http_requests, 2, 'the resume counted in the summary')
    t.same(await readdir(fetchTmp), [], 'the temporary folder is gone')
    proxy.fault('/object.bin', { kind: 'wrong-bytes' })
    const refused = join(out, 'via-stages-refused')
    const wrong = await fetchTo(refused)
    t.not(wrong.result.exitCode, 0)
    t.match(wrong.err, /fetch\.hash-mismatch/)
    t.equal(wrong.result.stages.find((s) => s.name === 'read-files')!.bytes_out, 0, 'not a byte given')
    await t.rejects(readFile(refused), { code: 'ENOENT' }, 'no file under the final name')
    t.same(await readdir(fetchTmp), [], 'the temporary folder is gone after the failure too')
  })

  await t.test('the fetch-object stage: each object into the folder by its hash, in order, at most N at once', async (t) => {
    const dir = join(out, 'objects')
    const stage = fetchObjectStage.create({ dir, concurrency: 2, maxBytes: 8 << 20, retries: 4, timeoutMs: 60_000, stallMs: 15_000 }, { signal: new AbortController().signal, summary: {} } as never) as (s: AsyncIterable<unknown>) => AsyncIterable<FetchedObjectItem>
    proxy.fault('/object.bin', { kind: 'cut', after: 300_000 })
    const items = [{ url: `${proxy.base}/object.bin`, hash: sha(object), bytes: object.length }, { url: `${proxy.base}/small.bin`, hash: sha(small) }]
    const got: FetchedObjectItem[] = []
    for await (const item of stage((async function* () { yield* items })())) got.push(item)
    t.same(got.map((g) => [g.hash, g.bytes, g.path]), [[sha(object), object.length, join(dir, sha(object).slice(7))], [sha(small), small.length, join(dir, sha(small).slice(7))]])
    t.ok((await readFile(got[0]!.path)).equals(object))
    proxy.fault('/small.bin', { kind: 'wrong-bytes' })
    const again = fetchObjectStage.create({ dir, concurrency: 2, maxBytes: 8 << 20, retries: 4, timeoutMs: 60_000, stallMs: 15_000 }, { signal: new AbortController().signal, summary: {} } as never) as (s: AsyncIterable<unknown>) => AsyncIterable<FetchedObjectItem>
    const bad = { url: `${proxy.base}/small.bin`, hash: sha(small).replace(/.$/, '0') }
    await t.rejects((async () => { for await (const _ of again((async function* () { yield bad })())) void _ })(), { code: /^fetch\./ })
    await t.rejects((async () => { for await (const _ of again((async function* () { yield { url: 1 } })())) void _ })(), { code: 'fetch.bad-item' })
  })

  await t.test('a limiter holds fetches to its number at once', async (t) => {
    const limiter = new FetchLimiter(2)
    proxy.fault('/small.bin', { kind: 'delay', ms: 150 }, 12)
    proxy.maxInFlight = 0
    const got = await Promise.all(Array.from({ length: 6 }, () => limiter.run(() => fetchIt('/small.bin'))))
    t.equal(got.length, 6)
    t.equal(proxy.maxInFlight, 2, 'never more than two requests open at the proxy')
    proxy.maxInFlight = 0
    await Promise.all(Array.from({ length: 6 }, () => fetchIt('/small.bin')))
    t.equal(proxy.maxInFlight, 6, 'without it, all six at once')
  })
})

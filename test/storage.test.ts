import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import t from 'tap'
import { PipeError } from '../src/core/errors.js'
import { LocalStorage } from '../src/storage/local-storage.js'
import { S3Storage } from '../src/storage/s3-storage.js'
import { openStorage, type Storage } from '../src/storage/storage.js'
import { newBucket } from './helpers/s3.js'
import { needs } from './helpers/tools.js'

async function bytesOf(stream: Readable | null): Promise<Buffer | null> {
  if (!stream) return null
  const chunks: Buffer[] = []
  for await (const c of stream) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}

async function collectKeys(s: Storage, prefix: string): Promise<string[]> {
  const keys: string[] = []
  for await (const o of s.list(prefix)) keys.push(`${o.key}:${o.size}`)
  return keys
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p
    return 'no error'
  } catch (err) {
    return err instanceof PipeError ? err.code : `not a PipeError: ${(err as Error).message}`
  }
}

/** What every storage must do, run against a folder and against the bucket. */
function contract(name: string, opts: { skip?: string }, open: () => Promise<Storage>) {
  t.test(`${name}: a create-only put is created once; the same bytes again are success; other bytes a refusal naming the object`, opts, async (t) => {
    const s = await open()
    t.equal(await s.putIfAbsent('a/b/c.txt', Buffer.from('one')), 'created')
    t.equal(await s.putIfAbsent('a/b/c.txt', Buffer.from('one')), 'same')
    const err = await s.putIfAbsent('a/b/c.txt', Buffer.from('two')).catch((e: unknown) => e)
    t.ok(err instanceof PipeError)
    t.equal((err as PipeError).code, 'storage.object-differs')
    t.equal((err as PipeError).location?.file, s.where('a/b/c.txt'))
    t.match((err as PipeError).oneLine(), /a\/b\/c\.txt: already exists with other bytes/)
    t.same(await s.get('a/b/c.txt', 100), Buffer.from('one'), 'the first bytes are kept')
  })

  t.test(`${name}: a file body is streamed; reads whole, by range, heads and misses`, opts, async (t) => {
    const s = await open()
    const dir = await mkdtemp(join(tmpdir(), 'storage-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const bytes = randomBytes(3 * 2 ** 20 + 17)
    await writeFile(join(dir, 'f'), bytes)
    t.equal(await s.putIfAbsent('big/f.bin', { file: join(dir, 'f') }), 'created')
    t.equal(await s.putIfAbsent('big/f.bin', { file: join(dir, 'f') }), 'same')
    t.equal((await s.head('big/f.bin'))?.size, bytes.length)
    t.equal(await s.head('big/none'), null)
    t.equal(await s.get('big/none', 10), null)
    t.equal(await s.read('big/none'), null)
    t.same(await bytesOf(await s.read('big/f.bin')), bytes)
    t.same(await bytesOf(await s.read('big/f.bin', { start: 1000, end: 5000 })), bytes.subarray(1000, 5000))
    t.same(await bytesOf(await s.read('big/f.bin', { start: bytes.length - 10 })), bytes.subarray(bytes.length - 10))
    t.equal(await codeOf(s.get('big/f.bin', 1000)), 'storage.too-large')
  })

  t.test(`${name}: listings by prefix, in key order; folders one level down`, opts, async (t) => {
    const s = await open()
    for (const k of ['x/date=2026-01-02/hour=01/m', 'x/date=2026-01-01/hour=23/m', 'x/date=2026-01-01/hour=00/m', 'x/date=2026-01-01/hour=00/a', 'y/z']) await s.putIfAbsent(k, Buffer.from(k))
    t.same(await collectKeys(s, 'x/'), ['x/date=2026-01-01/hour=00/a:27', 'x/date=2026-01-01/hour=00/m:27', 'x/date=2026-01-01/hour=23/m:27', 'x/date=2026-01-02/hour=01/m:27'])
    t.same(await collectKeys(s, 'x/date=2026-01-01/hour=2'), ['x/date=2026-01-01/hour=23/m:27'])
    t.same(await s.folders('x'), ['date=2026-01-01', 'date=2026-01-02'])
    t.same(await s.folders('x/date=2026-01-01/'), ['hour=00', 'hour=23'])
    t.same(await s.folders('none'), [])
    t.same(await s.folders(''), ['x', 'y'])
  })

  t.test(`${name}: replace moves an object only from the version read; of racing writers one wins`, opts, async (t) => {
    const s = await open()
    const first = await s.replace('refs/feed', Buffer.from('v1'), null)
    t.equal(await codeOf(s.replace('refs/feed', Buffer.from('v1 again'), null)), 'storage.changed', 'absent was expected, it exists')
    const second = await s.replace('refs/feed', Buffer.from('v2'), first)
    t.not(second, first)
    t.equal(await codeOf(s.replace('refs/feed', Buffer.from('v3'), first)), 'storage.changed', 'an old version is refused')
    t.same(await s.get('refs/feed', 10), Buffer.from('v2'))
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => s.replace('refs/feed', Buffer.from(`racer ${i}`), second)))
    const won = results.filter((r) => r.status === 'fulfilled')
    t.equal(won.length, 1, 'exactly one writer moves it on')
    for (const r of results) if (r.status === 'rejected') t.equal((r.reason as PipeError).code, 'storage.changed')
    const held = (await s.get('refs/feed', 100))!.toString()
    t.match(held, /^racer \d$/)
  })
}

t.test('local folders', async (t) => {
  contract('local', {}, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'storage-local-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    return new LocalStorage(dir)
  })
})

t.test('S3 on a real server (Ceph RGW on loopback)', needs('radosgw'), async (t) => {
  contract('s3', {}, async () => openStorage((await newBucket()).url))

  t.test('racing create-only puts of different bytes: exactly one lands, every other one is refused', async (t) => {
    const s = await openStorage((await newBucket()).url)
    for (let round = 0; round < 5; round++) {
      const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => s.putIfAbsent(`race/${round}`, Buffer.from(`writer ${i}`))))
      t.equal(results.filter((r) => r.status === 'fulfilled').length, 1, `round ${round}: one winner`)
      const held = (await s.get(`race/${round}`, 100))!.toString()
      for (const [i, r] of results.entries()) {
        if (r.status === 'fulfilled') t.equal(held, `writer ${i}`, 'the winner\'s bytes are what is held')
        else t.equal((r.reason as PipeError).code, 'storage.object-differs')
      }
    }
    const same = await Promise.all(Array.from({ length: 6 }, () => s.putIfAbsent('race/same', Buffer.from('identical'))))
    t.equal(same.filter((r) => r === 'created').length, 1, 'identical bytes: one creates, the rest find them there')
  })

  t.test('a prefix keeps keys under it; listing pages are followed', async (t) => {
    const { url } = await newBucket()
    const s = (await S3Storage.open(`${url}/deep/prefix/`)).withOptions({ pageSize: 2 })
    for (let i = 0; i < 5; i++) await s.putIfAbsent(`k/${i}`, Buffer.from(String(i)))
    await s.putIfAbsent('f/date=1/x', Buffer.from('x'))
    await s.putIfAbsent('f/date=2/x', Buffer.from('x'))
    await s.putIfAbsent('f/date=3/x', Buffer.from('x'))
    t.same(await collectKeys(s, 'k/'), ['k/0:1', 'k/1:1', 'k/2:1', 'k/3:1', 'k/4:1'])
    t.same(await s.folders('f'), ['date=1', 'date=2', 'date=3'])
    t.equal(s.where('k/0'), `${url}/deep/prefix/k/0`)
    const whole = await S3Storage.open(url)
    t.equal((await whole.get('deep/prefix/k/3', 10))?.toString(), '3', 'the layout below the prefix is the keys, byte for byte')
  })

  t.test('a large body goes up in parts, and is refused when the key holds other bytes', async (t) => {
    const { url } = await newBucket()
    const s = (await S3Storage.open(url)).withOptions({ multipartAbove: 2 ** 20, partSize: 5 * 2 ** 20 })
    const dir = await mkdtemp(join(tmpdir(), 'storage-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const bytes = randomBytes(11 * 2 ** 20)
    await writeFile(join(dir, 'big'), bytes)
    t.equal(await s.putIfAbsent('raw.jsonl.zst', { file: join(dir, 'big') }), 'created')
    const back = await bytesOf(await s.read('raw.jsonl.zst'))
    t.equal(createHash('sha256').update(back!).digest('hex'), createHash('sha256').update(bytes).digest('hex'))
    t.equal(await s.putIfAbsent('raw.jsonl.zst', { file: join(dir, 'big') }), 'same')
    bytes[5] = bytes[5]! ^ 1
    await writeFile(join(dir, 'big'), bytes)
    t.equal(await codeOf(s.putIfAbsent('raw.jsonl.zst', { file: join(dir, 'big') })), 'storage.object-differs')
  })

  t.test('clear errors: a bad URL, a bucket that does not exist', async (t) => {
    t.equal(await codeOf(S3Storage.open('s3://')), 'usage.bad-url')
    t.equal(await codeOf(S3Storage.open('s3://b/../x')), 'usage.bad-url')
    const s = await S3Storage.open('s3://no-such-bucket-here')
    const err = await s.putIfAbsent('x', Buffer.from('x')).catch((e: unknown) => e) as PipeError
    t.equal(err.code, 'storage.no-bucket')
    t.equal(err.exitCode, 2)
    t.match(err.oneLine(), /^s3:\/\/no-such-bucket-here\/x: put failed: NoSuchBucket \(HTTP 404\)/)
    t.equal(await codeOf(s.head('x')), 'no error', 'a head of a missing bucket reads as no object')
  })
})

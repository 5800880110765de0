/**
 * The stages a file over HTTP(S) is made of: objects (a checked list), fetch-object into a temporary folder
 * of its own (gone after the run, whatever its end), read-files (each item's file as bytes, in order).
 * verify-raw --url is their composition.
 */
import { spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { z } from 'zod'
import { registry } from '../pipelines/registry.js'
import { Registry } from '../src/core/registry.js'
import { runStageList } from '../src/core/runner.js'
import { defineStage, type StageDef, type StageUse } from '../src/core/stage.js'
import { READ_CHUNK } from '../src/sources/file.js'
import { objectsSource } from '../src/sources/objects.js'
import { atomicFileSink } from '../src/sinks/atomic-file.js'
import { readFilesStage } from '../src/transforms/read-files.js'
import { FaultProxy } from './helpers/fault-proxy.js'
import { captureIO, childEnv, withEnv } from './helpers/io.js'
import { startNginx } from './helpers/nginx.js'
import { needs } from './helpers/tools.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const cli = join(ROOT, 'dist/bin/pipe.js')
const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`
const dir = await mkdtemp(join(tmpdir(), 'pipe-object-stages-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

async function run(uses: StageUse[], on = registry) {
  const io = captureIO()
  const result = await runStageList(on, 'test', uses, io.settings)
  return { result, err: io.err() }
}

t.test('objects: each entry checked by the schema, refused naming its field before anything runs', async (t) => {
  const url = 'https://example.org/a.bin'
  const hash = sha(Buffer.from('a'))
  const refusals: [unknown, string, RegExp][] = [
    [[], 'stages[0].options.objects', /lists no object/],
    [[{ url: 'ftp://example.org/a.bin', hash }], 'stages[0].options.objects.0.url', /must be an http: or https: URL/],
    [[{ url: 'not a url', hash }], 'stages[0].options.objects.0.url', /must be an http: or https: URL/],
    [[{ url, hash: 'md5:00' }], 'stages[0].options.objects.0.hash', /must be sha256: and 64 lower-case hex digits/],
    [[{ url, hash: hash.toUpperCase() }], 'stages[0].options.objects.0.hash', /must be sha256:/],
    [[{ url }], 'stages[0].options.objects.0.hash', /expected string/],
    [[{ url, hash, bytes: -1 }], 'stages[0].options.objects.0.bytes', /./],
    [[{ url, hash, bytes: 1.5 }], 'stages[0].options.objects.0.bytes', /./],
    [[{ url, hash, size: 3 }], 'stages[0].options.objects.0.size', /unknown option/],
    [[{ url, hash }, { url, hash: 'sha256:' }], 'stages[0].options.objects.1.hash', /must be sha256:/],
  ]
  for (const [objects, field, message] of refusals) {
    const r = await run([{ stage: 'objects', options: { objects } }, { stage: 'fetch-object', options: { maxBytes: 100 } }, { stage: 'read-files' }, { stage: 'atomic-file', options: { path: join(dir, 'never') } }])
    t.equal(r.result.exitCode, 2, JSON.stringify(objects))
    t.match(r.result.error, { code: 'usage.bad-option', location: { field }, message }, field)
  }
  const one = await run([{ stage: 'objects', options: { objects: [{ url, hash: 'sha256:12' }] } }, { stage: 'fetch-object', options: { maxBytes: 100 } }, { stage: 'read-files' }, { stage: 'atomic-file', options: { path: join(dir, 'never') } }])
  t.equal(one.err, 'pipe: stages[0].options.objects.0.hash: must be sha256: and 64 lower-case hex digits (usage.bad-option)\n', 'one line')
  t.notOk(existsSync(join(dir, 'never')))

  const listed = [{ url, hash, bytes: 1 }, { url: 'http://127.0.0.1:1/b', hash: sha(Buffer.from('b')) }]
  const given: unknown[] = []
  for await (const item of objectsSource.create(objectsSource.options.parse({ objects: listed }), {} as never) as AsyncIterable<unknown>) given.push(item)
  t.same(given, listed, 'the list, in order')
})

t.test('read-files: each item\'s file as bytes, file after file', async (t) => {
  // A source of {path} items, as a user's own stage would give them to read-files.
  const pathsSource = defineStage({
    name: 'paths', kind: 'source', summary: 'the paths it is given, as {path} items', takes: 'none', gives: 'any',
    options: z.object({ paths: z.array(z.string()) }),
    create: ({ paths }) => (async function* () { for (const path of paths) yield { path } })(),
  })
  const files = new Registry()
  for (const stage of [pathsSource, readFilesStage, atomicFileSink]) files.addStage(stage as unknown as StageDef)
  // Larger than a read, so that one file's chunks come before the next file's.
  const big = randomBytes(2 * READ_CHUNK + 12_345)
  const small = Buffer.from('the second file\n')
  const bigPath = join(dir, 'big.bin')
  const smallPath = join(dir, 'small.bin')
  await writeFile(bigPath, big)
  await writeFile(smallPath, small)
  const read = (paths: string[], out: string, options: Record<string, unknown> = {}) =>
    run([{ stage: 'paths', options: { paths } }, { stage: 'read-files', options }, { stage: 'atomic-file', options: { path: out } }], files)

  let r = await read([bigPath, smallPath], join(dir, 'both'))
  t.equal(r.result.exitCode, 0, r.err)
  t.ok((await readFile(join(dir, 'both'))).equals(Buffer.concat([big, small])), 'the big file, then the small one')
  t.match(r.result.stages.find((s) => s.name === 'read-files'), { items_in: 2, items_out: 4, bytes_out: big.length + small.length }, 'in chunks of a read')
  r = await read([smallPath, bigPath], join(dir, 'reversed'))
  t.ok((await readFile(join(dir, 'reversed'))).equals(Buffer.concat([small, big])), 'in the order the items came')

  const missing = join(dir, 'missing.bin')
  r = await read([smallPath, missing], join(dir, 'with-missing'))
  t.equal(r.result.exitCode, 2)
  t.equal(r.err, `pipe: [read-files] ${missing}: cannot read: no such file (env.enoent)\n`, 'one line, naming the file')
  t.notOk(existsSync(join(dir, 'with-missing')), 'nothing lands')

  r = await read([smallPath, bigPath], join(dir, 'too-large'), { maxBytes: small.length })
  t.equal(r.result.exitCode, 1)
  t.equal(r.err, `pipe: [read-files] ${bigPath}, byte ${small.length}: the file holds more than the ${small.length} bytes --max-bytes allows (input.too-large)\n`, 'the limit is per file, and the file named')
  t.notOk(existsSync(join(dir, 'too-large')))

  const notPaths = await run([{ stage: 'objects', options: { objects: [{ url: 'https://example.org/a', hash: sha(small) }] } }, { stage: 'read-files' }, { stage: 'atomic-file', options: { path: join(dir, 'no-path') } }])
  t.match(notPaths.result.error, { code: 'read-files.bad-item', message: /read-files takes items with a path, got \{"url"/ })
})

t.test('pipe describe verify-raw shows the fetch as its stages', async (t) => {
  const r = spawnSync(process.execPath, [cli, 'describe', 'verify-raw'], { encoding: 'utf8', env: childEnv(), timeout: 60_000 })
  t.equal(r.status, 0, r.stderr)
  const stages = r.stdout.split('stages, as run by: ')[1]!.split('\n').slice(1, 4).map((l) => l.trim().split(' ')[0])
  t.same(stages, ['objects', 'fetch-object', 'read-files'])
})

t.test('fetch-object without dir: its own folder, gone after the run whatever its end', needs('nginx'), async (t) => {
  // Its own folder: nginx serves as nobody, who may not pass through a 0700 one.
  const served = await mkdtemp(join(tmpdir(), 'pipe-object-stages-www-'))
  t.teardown(() => rm(served, { recursive: true, force: true }))
  const hourDir = join(ROOT, 'test/golden/record/root/recorder=golden/venue=binance/channel=trades/date=2026-10-04/hour=14')
  await copyFile(join(hourDir, 'raw.jsonl.zst'), join(served, 'raw.jsonl.zst'))
  const raw = await readFile(join(served, 'raw.jsonl.zst'))
  const other = randomBytes(1000)
  await writeFile(join(served, 'other.bin'), other)
  const nginx = await startNginx(served)
  const proxy = await new FaultProxy(nginx.base).start()
  t.teardown(async () => { await proxy.stop(); await nginx.stop() })
  const fetchTmp = await mkdtemp(join(dir, 'tmp-'))

  await t.test('verify-raw --url, checked or refused by --sha256, leaves nothing in TMPDIR', async (t) => {
    const verify = (sha256: string) => spawnSync(process.execPath, [cli, 'run', 'verify-raw', '--url', `${nginx.base}/raw.jsonl.zst`, '--sha256', sha256, '--json'],
      { encoding: 'utf8', env: { ...childEnv(), TMPDIR: fetchTmp }, timeout: 120_000 })
    const ok = verify(sha(raw).slice('sha256:'.length))
    t.equal(ok.status, 0, ok.stderr)
    const summary = JSON.parse(ok.stdout) as { ok: boolean; http_requests: number; stages: { name: string; bytes_out: number }[] }
    t.match(summary, { ok: true, http_requests: 1 })
    t.same(summary.stages.slice(0, 3).map((s) => [s.name, s.bytes_out]), [['objects', 0], ['fetch-object', 0], ['read-files', raw.length]])
    t.same(await readdir(fetchTmp), [], 'the folder is gone after a checked run')
    const refused = verify('0'.repeat(64))
    t.equal(refused.status, 1)
    t.match(JSON.parse(refused.stdout).error, { code: 'fetch.hash-mismatch', stage: 'fetch-object' })
    t.same(await readdir(fetchTmp), [], 'and after a refused one')
  })

  await t.test('in its own folder, an object goes once the next stage asks for the next', async (t) => {
    const { fetchObjectStage } = await import('../src/transforms/fetch-object.js')
    const ctx = { stage: 'fetch-object', summary: {}, signal: new AbortController().signal, onFailure: () => undefined } as never
    const fetchIt = (await withEnv('TMPDIR', fetchTmp, async () => fetchObjectStage.create(fetchObjectStage.options.parse({ maxBytes: 1 << 20, concurrency: 1 }), ctx))) as (s: AsyncIterable<unknown>) => AsyncGenerator<{ path: string }>
    async function* list() {
      yield { url: `${nginx.base}/raw.jsonl.zst`, hash: sha(raw) }
      yield { url: `${nginx.base}/other.bin`, hash: sha(other) }
      yield { url: `${nginx.base}/raw.jsonl.zst`, hash: sha(raw) }
    }
    const fetched = await withEnv('TMPDIR', fetchTmp, async () => fetchIt(list()))
    const seen: string[] = []
    for await (const item of fetched) {
      t.ok(existsSync(item.path), `${item.path} is there while it is read`)
      for (const before of seen) t.notOk(existsSync(before), `${before} went once the next was asked for`)
      seen.push(item.path)
    }
    t.equal(new Set(seen).size, 3, 'the same object twice is two files of its own')
    t.same(await readdir(fetchTmp), [], 'the folder is gone at the end')
  })

  await t.test('a later stage that fails while a fetch is still running: the fetch is stopped, the folder removed', async (t) => {
    proxy.fault('/other.bin', { kind: 'silent' })
    const started = Date.now()
    const r = await withEnv('TMPDIR', fetchTmp, () => run([
      { stage: 'objects', options: { objects: [{ url: `${proxy.base}/raw.jsonl.zst`, hash: sha(raw) }, { url: `${proxy.base}/other.bin`, hash: sha(other) }] } },
      { stage: 'fetch-object', options: { maxBytes: 1 << 20, stallMs: 60_000 } },
      { stage: 'read-files', options: { maxBytes: 10 } },
      { stage: 'atomic-file', options: { path: join(dir, 'never-fetched') } },
    ]))
    proxy.clear('/other.bin')
    t.match(r.result.error, { code: 'input.too-large', stage: 'read-files' })
    t.ok(Date.now() - started < 30_000, 'the unanswered fetch did not hold the run until its stall')
    t.same(await readdir(fetchTmp), [], 'the folder is gone')
    t.notOk(existsSync(join(dir, 'never-fetched')))
  })
})

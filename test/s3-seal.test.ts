import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DuckDBInstance } from '@duckdb/node-api'
import t from 'tap'
import { JournalBuilder } from '../src/formats/record/journal/journal.js'
import { writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import { eventTime, type JournalEvent } from '../src/formats/record/types.js'
import { fetchFolder, folderFiles } from '../src/storage/folders.js'
import { MirroredRoot } from '../src/formats/record/verify/mirrored-root.js'
import { openStorage, type Storage } from '../src/storage/storage.js'
import { buildGolden, DAY_START, GOLDEN_DIR, goldenEvents, goldenKey, HOUR, listFiles, RECORDER } from '../scripts/make-golden-record.js'
import { runNode } from '../scripts/loopback.js'
import { childEnv } from './helpers/io.js'
import { newBucket } from './helpers/s3.js'
import { needs } from './helpers/tools.js'

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const GOLDEN_ROOT = join(GOLDEN_DIR, 'root')
const GOLDEN_KEYS = join(GOLDEN_DIR, 'jwks.json')

const pipe = (args: string[], env: NodeJS.ProcessEnv = {}, onSpawn?: (pid: number) => void) => runNode(cli, args, { ...childEnv(), ...env }, onSpawn)

/** The golden key as files a seal-hour takes: signing-key.jwk and jwks.json in `dir`. */
async function goldenKeyFiles(dir: string): Promise<{ key: string; jwks: string }> {
  await mkdir(dir)
  const { privateJwk, publicJwk } = await goldenKey()
  await writePrivateJwkFile(join(dir, 'signing-key.jwk'), privateJwk)
  await writeJwksFile(join(dir, 'jwks.json'), { keys: [publicJwk] })
  return { key: join(dir, 'signing-key.jwk'), jwks: join(dir, 'jwks.json') }
}

async function keysOf(store: Storage): Promise<string[]> {
  const keys: string[] = []
  for await (const o of store.list('')) keys.push(o.key)
  return keys
}

/** Copies the golden root into a store, object for object, with `change` applied to each object's bytes. */
async function copyGolden(store: Storage, change: (rel: string, bytes: Buffer) => Buffer = (_r, b) => b): Promise<void> {
  for (const f of await listFiles(GOLDEN_ROOT)) await store.putIfAbsent(f, change(f, await readFile(join(GOLDEN_ROOT, f))))
}

t.test('object storage on a real S3 server (Ceph RGW on loopback)', needs('radosgw'), async (t) => {
  const { url } = await newBucket()
  const work = await mkdtemp(join(tmpdir(), 'seal-s3-'))
  t.teardown(() => rm(work, { recursive: true, force: true }))
  const endpoint = process.env.AWS_ENDPOINT_URL_S3!

  t.test('the golden day sealed to a bucket is the golden tree, byte for byte', async (t) => {
    const root = `${url}/sealed/root`
    await buildGolden(join(work, 'golden'), root)
    const store = await openStorage(root)
    const files = await listFiles(GOLDEN_ROOT)
    t.same(await keysOf(store), files, 'the same objects as the golden files')
    let differ = 0
    for (const f of files) if (!(await store.get(f, 1 << 30))!.equals(await readFile(join(GOLDEN_ROOT, f)))) differ++
    t.equal(differ, 0, 'every object holds the golden file\'s bytes')

    // verify, from the bucket alone (the endpoint given as --s3-endpoint), and with the local copy beside.
    const scratch = await mkdtemp(join(work, 'tmp-'))
    const env = { AWS_ENDPOINT_URL_S3: '', TMPDIR: scratch }
    const alone = await pipe(['run', 'verify', '--root', root, '--keys', GOLDEN_KEYS, '--json', '--s3-endpoint', endpoint], env)
    t.equal(alone.code, 0, alone.err)
    const summary = JSON.parse(alone.out) as { ok: boolean; hours: number; days: number }
    t.equal(summary.ok, true)
    t.equal(summary.hours, 25)
    t.equal(summary.days, 2)
    const both = await pipe(['run', 'verify', '--root', root, '--root', GOLDEN_ROOT, '--keys', GOLDEN_KEYS, '--json', '--s3-endpoint', endpoint], env)
    t.equal(both.code, 0, `the bucket and the folder are copies of one chain: ${both.out}${both.err}`)
    for (const [range, hours] of [[['--from', '2026-10-05'], 1], [['--to', '2026-10-04'], 24]] as const) {
      const part = await pipe(['run', 'verify', '--root', root, '--keys', GOLDEN_KEYS, '--json', '--s3-endpoint', endpoint, ...range], env)
      t.equal(part.code, 0, part.out)
      t.equal((JSON.parse(part.out) as { hours: number }).hours, hours, `${range.join(' ')}: the hours of those dates, the link into them checked`)
    }
    t.same(await readdir(scratch), [], 'the local mirror is removed')

    // The mirror holds one date's manifests and one hour's files at a time.
    const mirror = await MirroredRoot.open(root)
    t.teardown(() => mirror.close())
    const day = 'recorder=golden/venue=binance/channel=trades/date=2026-10-04'
    const inMirror = async () => (await folderFiles(mirror.dir)).length
    t.equal(await inMirror(), 0, 'at first, folders only')
    const releaseDay = await mirror.fetch(day)
    t.equal(await inMirror(), 24 * 2 + 2, 'a date: its 24 hours\' and its own manifests and signatures')
    const releaseHour = await mirror.fetch(`${day}/hour=03`)
    t.equal(await inMirror(), 24 * 2 + 2 + 2, 'an hour: its raw file and table besides')
    await releaseHour()
    t.equal(await inMirror(), 24 * 2 + 2, 'let go of, the hour\'s files are removed')
    await releaseDay()
    t.equal(await inMirror(), 0, 'and the date\'s manifests')

    // Query in place: the bucket's tables, fetched through the S3 client (this DuckDB build has no httpfs
    // offline), read by DuckDB with the Hive partition columns, equal the golden folder's, decimals exact.
    const fetched = join(work, 'fetched')
    await fetchFolder(store, fetched)
    const db = await (await DuckDBInstance.create(':memory:')).connect()
    const rows = async (dir: string) => (await db.runAndReadAll(`
      SELECT recorder, venue, channel, CAST(date AS VARCHAR) AS date, hour, instrument, trade_id, CAST(price AS VARCHAR) AS price, CAST(size AS VARCHAR) AS size, raw_index
      FROM read_parquet('${dir}/**/*.parquet', hive_partitioning = true) ORDER BY date, hour, raw_index, instrument, trade_id`)).getRowObjectsJson()
    const [inBucket, inFolder] = [await rows(fetched), await rows(GOLDEN_ROOT)]
    db.closeSync()
    t.ok(inBucket.length > 1000, `${inBucket.length} trades`)
    t.same(inBucket, inFolder, 'every row, its partition columns and its decimals as the folder\'s')
    t.match(inBucket[0], { recorder: 'golden', venue: 'binance', channel: 'trades', date: '2026-10-04' })
    t.ok(inBucket.every((r) => /^\d+\.\d{18}$/.test(String(r.price))), 'prices are DECIMAL(38,18), read exactly')
  })

  t.test('verify names the object a finding is about, never the local mirror', async (t) => {
    const root = `${url}/tampered`
    const store = await openStorage(root)
    const table = (await listFiles(GOLDEN_ROOT)).find((f) => f.includes('date=2026-10-04/hour=03/') && f.endsWith('.parquet'))!
    await copyGolden(store, (rel, bytes) => {
      if (rel !== table) return bytes
      const copy = Buffer.from(bytes)
      copy[copy.length >> 1] = copy[copy.length >> 1]! ^ 0xff
      return copy
    })
    // Given with a trailing slash, as a user may: the objects are still named once.
    const run = await pipe(['run', 'verify', '--root', `${root}/`, '--keys', GOLDEN_KEYS, '--json'])
    t.equal(run.code, 1)
    const report = JSON.parse(run.out) as { findings: { check: number; code: string; path: string }[] }
    const onTable = report.findings.filter((f) => f.path === `${root}/${table}`)
    t.ok(onTable.some((f) => f.check === 2 && f.code === 'file.blake3'), `check 2 names ${root}/${table}: ${JSON.stringify(report.findings.slice(0, 3))}`)
    t.notOk(report.findings.some((f) => f.path.includes('.pipe-verify')), 'no finding names the local mirror')

    // Keys that are no plain path are never mirrored: the bucket's own copy stays verifiable, nothing lands outside.
    const hostile = await openStorage(`${url}/hostile`)
    await copyGolden(hostile)
    const scratch = await mkdtemp(join(work, 'hostile-tmp-'))
    await hostile.putIfAbsent('recorder=golden/venue=binance/channel=trades/date=2026-10-04/hour=00/../../../../../../escaped', Buffer.from('x'))
    await hostile.putIfAbsent('recorder=golden/venue=binance/channel=trades/date=2026-10-04/../../../../../../../manifest.json', Buffer.from('x'))
    const checked = await pipe(['run', 'verify', '--root', `${url}/hostile`, '--keys', GOLDEN_KEYS, '--json'], { TMPDIR: scratch })
    t.equal(checked.code, 0, checked.out)
    t.same(await readdir(scratch), [], 'nothing written beside the mirror, and the mirror removed')
  })

  t.test('two sealers racing on one hour from different frames: one wins, the other stops, and verify passes', async (t) => {
    const keys = await goldenKeyFiles(join(work, 'race-keys'))
    const until = DAY_START + HOUR + 10n * 1_000_000_000n
    const events = goldenEvents().filter((e) => eventTime(e) < until)
    const journal = async (name: string, keep: (e: JournalEvent, i: number) => boolean) => {
      const b = new JournalBuilder(join(work, name))
      for (const [i, e] of events.entries()) if (keep(e, i)) await b.append(e)
      await b.commit()
      return join(work, name)
    }
    const firstFrame = events.findIndex((e) => e.kind === 'frame' && e.receiveTime >= DAY_START + 60n * 1_000_000_000n)
    const journals = [await journal('race-a', () => true), await journal('race-b', (_e, i) => i !== firstFrame)]
    const seal = (journalDir: string, root: string) => pipe(['run', 'seal-hour', '--venue', 'binance', '--channel', 'trades', '--hour', '2026-10-04T00', '--journal', journalDir, '--out', root, '--key', keys.key, '--recorder', RECORDER, '--recorder-stopped', '--json'])
    for (let round = 0; round < 5; round++) {
      const root = `${url}/race-${round}`
      const runs = await Promise.all(journals.map((j) => seal(j, root)))
      const won = runs.filter((r) => r.code === 0)
      t.equal(won.length, 1, `round ${round}: one sealer wins (${runs.map((r) => r.code).join(', ')})`)
      const lost = runs.find((r) => r.code !== 0)!
      t.equal(lost.code, 2, lost.err)
      t.match(lost.err, /seal\.hour-differs/)
      t.match(lost.err, new RegExp(`${root}/recorder=golden/venue=binance/channel=trades/date=2026-10-04/hour=00/`))
      const verify = await pipe(['run', 'verify', '--root', root, '--keys', keys.jwks, '--json'])
      t.equal(verify.code, 0, `round ${round}: the hour verifies: ${verify.out}`)
      const again = await seal(journals[runs.indexOf(won[0]!)]!, root)
      t.equal(again.code, 0, 'the winner\'s seal again is a no-op')
      t.match(again.out, /"sealed":"already-sealed"/)
    }
  })

  t.test('a seal stopped part way is completed by sealing again; the next hour waits for it', async (t) => {
    const keys = await goldenKeyFiles(join(work, 'stop-keys'))
    const b = new JournalBuilder(join(work, 'stop-journal'))
    for (const e of goldenEvents()) if (eventTime(e) < DAY_START + 4n * HOUR + 10n * 1_000_000_000n) await b.append(e)
    await b.commit()
    const sealTo = (root: string, hour: string, onSpawn?: (pid: number) => void) => pipe(['run', 'seal-hour', '--venue', 'binance', '--channel', 'trades', '--hour', hour, '--journal', join(work, 'stop-journal'), '--out', root, '--key', keys.key, '--recorder', RECORDER, '--recorder-stopped', '--json'], {}, onSpawn)
    // The hours as a seal that is never stopped makes them.
    const whole = await openStorage(`${url}/unstopped`)
    for (const h of ['00', '01', '02']) t.equal((await sealTo(whole.location, `2026-10-04T${h}`)).code, 0)
    const root = `${url}/stopped`
    const store = await openStorage(root)
    const seal = (hour: string, onSpawn?: (pid: number) => void) => sealTo(root, hour, onSpawn)
    // What a seal killed after hour 01's files and manifest, before its signature, leaves.
    for await (const { key } of whole.list('')) {
      if (key.includes('/hour=00/') || (key.includes('/hour=01/') && !key.endsWith('.sig'))) await store.putIfAbsent(key, (await whole.get(key, 1 << 30))!)
    }
    const next = await seal('2026-10-04T02')
    t.equal(next.code, 2)
    t.match(next.err, /seal 2026-10-04T01 again first: its manifest has no signature yet .*\(seal\.previous-hour-unsigned\)/)
    const redo = await seal('2026-10-04T01')
    t.equal(redo.code, 0, redo.err)
    t.match(redo.out, /"sealed":"sealed"/)
    t.equal((await seal('2026-10-04T02')).code, 0)
    const objects = await keysOf(whole)
    t.same(await keysOf(store), objects, 'the same objects as a seal never stopped')
    for (const key of objects) t.ok((await store.get(key, 1 << 30))!.equals((await whole.get(key, 1 << 30))!), `${key}: the same bytes`)
    // A seal killed at a moment of its own: sealing again completes it, and the chain verifies.
    let pid = 0
    const killed = seal('2026-10-04T03', (p) => { pid = p })
    await new Promise((r) => setTimeout(r, 300 + Math.floor(Math.random() * 900)))
    try { process.kill(pid, 'SIGKILL') } catch { /* it had finished */ }
    t.comment(`the seal killed: exit ${(await killed).code}`)
    const completed = await seal('2026-10-04T03')
    t.equal(completed.code, 0, completed.err)
    const verify = await pipe(['run', 'verify', '--root', root, '--keys', keys.jwks, '--json'])
    t.equal(verify.code, 0, verify.out)
    t.match(verify.out, /"hours":4/)
  })
})

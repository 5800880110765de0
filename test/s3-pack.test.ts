/**
 * Pack stores in object storage, through the built CLI against a real S3 server (Ceph RGW on loopback):
 * pack-publish --to s3:// lands the same bytes as a publish to a folder, pack-check and pack-export read
 * the bucket, pack-import takes a version from it, and two publishers racing to move one feed on: one
 * wins, the other is refused, and the store still checks.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { LIFE, patternRecord, writeLifeRecords } from '../src/sim/pack-records.js'
import { folderFiles } from '../src/storage/folders.js'
import { openStorage, type Storage } from '../src/storage/storage.js'
import { runNode } from '../scripts/loopback.js'
import { childEnv } from './helpers/io.js'
import { newBucket } from './helpers/s3.js'
import { needs } from './helpers/tools.js'

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const T0 = '2026-11-11T00:00:00Z'
const T1 = '2026-11-12T00:00:00Z'
const T2 = '2026-11-13T00:00:00Z'
const BLOCK = patternRecord('square', LIFE, [[0, 0], [1, 0], [0, 1], [1, 1]])
const BLINKER = patternRecord('square', LIFE, [[0, 1], [1, 1], [2, 1]])
const GLIDER = patternRecord('square', LIFE, [[1, 0], [2, 1], [0, 2], [1, 2], [2, 2]], { speed: 'c/4 diagonal' })
const TUB = patternRecord('square', LIFE, [[1, 0], [0, 1], [2, 1], [1, 2]])
const BEEHIVE = patternRecord('square', LIFE, [[1, 0], [2, 0], [0, 1], [3, 1], [1, 2], [2, 2]])

const records = (folder: string, patterns: Record<string, unknown>[], date: string) => writeLifeRecords(folder, patterns, date, { title: 's3', description: 'published to a bucket' })

async function sameTree(t: Test, store: Storage, dir: string, what: string): Promise<void> {
  const keys: string[] = []
  for await (const o of store.list('')) keys.push(o.key)
  const files = (await folderFiles(dir)).filter((f) => !f.startsWith('.tmp/'))
  t.same(keys, files, `${what}: the same objects as the folder's files`)
  let differ = 0
  for (const f of files) if (!(await store.get(f, 1 << 30))!.equals(await readFile(join(dir, ...f.split('/'))))) differ++
  t.equal(differ, 0, `${what}: byte for byte`)
}

t.test('pack stores in a bucket', needs('radosgw'), async (t) => {
  const base = await mkdtemp(join(tmpdir(), 'pipe-pack-s3-'))
  t.teardown(() => rm(base, { recursive: true, force: true }))
  const { url } = await newBucket()
  const env = { ...childEnv(), PIPE_HOME: join(base, 'home') }
  const pipe = (args: string[]) => runNode(cli, args, env)
  t.equal((await pipe(['pack', 'key', '--name', 'S3 Publisher', '--seed', '0b'.repeat(32), '--created', T0])).code, 0)

  const local = join(base, 'store')
  const bucket = `${url}/packs/store`
  const store = await openStorage(bucket)
  const r1 = await records(join(base, 'r1'), [BLOCK, BLINKER], T0)
  const r2 = await records(join(base, 'r2'), [BLOCK, BLINKER, GLIDER], T1)
  for (const [r, at] of [[r1, T0], [r2, T1]] as const) {
    const toFolder = await pipe(['run', 'pack-publish', '--feed', 's3-feed', '--to', local, '--records', r, '--created', at, '--json'])
    t.equal(toFolder.code, 0, toFolder.err)
    const toBucket = await pipe(['run', 'pack-publish', '--feed', 's3-feed', '--to', bucket, '--records', r, '--created', at, '--json'])
    t.equal(toBucket.code, 0, toBucket.err)
    t.equal((JSON.parse(toBucket.out) as { manifest: string }).manifest, (JSON.parse(toFolder.out) as { manifest: string }).manifest, 'the same version')
    await sameTree(t, store, local, `after the version of ${at}`)
  }

  const check = await pipe(['run', 'pack-check', bucket, '--level', '3', '--json'])
  t.equal(check.code, 0, check.out + check.err)

  const exported = [join(base, 'export-local'), join(base, 'export-bucket')]
  t.equal((await pipe(['run', 'pack-export', '--from', local, '--to', exported[0]!, '--copy'])).code, 0)
  const fromBucket = await pipe(['run', 'pack-export', '--from', bucket, '--to', exported[1]!])
  t.equal(fromBucket.code, 0, fromBucket.err)
  const [a, b] = await Promise.all(exported.map((d) => folderFiles(d)))
  t.same(b, a, 'the export from the bucket has the files of the export from the folder')
  let differ = 0
  for (const f of a!) if (!(await readFile(join(exported[0]!, f))).equals(await readFile(join(exported[1]!, f)))) differ++
  t.equal(differ, 0, 'byte for byte')

  const imported = await pipe(['run', 'pack-import', bucket, '--library', join(base, 'library.db'), '--json'])
  t.equal(imported.code, 0, imported.err)
  t.match(JSON.parse(imported.out), { ok: true, feed: 's3-feed' })

  // Two publishers of the feed's next version at once: one moves the ref on, the other is refused.
  const r3 = [await records(join(base, 'r3a'), [BLOCK, BLINKER, GLIDER, TUB], T2), await records(join(base, 'r3b'), [BLOCK, BLINKER, GLIDER, BEEHIVE], T2)]
  const raced = await Promise.all(r3.map((r) => pipe(['run', 'pack-publish', '--feed', 's3-feed', '--to', bucket, '--records', r, '--created', T2, '--json'])))
  const won = raced.filter((r) => r.code === 0)
  t.equal(won.length, 1, `one publisher wins: ${raced.map((r) => r.code).join(', ')}`)
  t.equal(raced.find((r) => r.code !== 0)?.code, 2, 'the other stops with exit 2')
  const lost = raced.find((r) => r.code !== 0)!
  t.match(lost.err, /refs\/s3-feed\.json: was changed by another writer since it was read.*\(storage\.changed\)/)
  const ref = JSON.parse((await store.get('refs/s3-feed.json', 1 << 20))!.toString('utf8')) as { manifest: string; seq: number }
  t.equal(ref.manifest, (JSON.parse(won[0]!.out) as { manifest: string }).manifest, 'the ref names the winner\'s version')
  t.equal(ref.seq, 3)
  const after = await pipe(['run', 'pack-check', bucket, '--level', '2', '--json'])
  t.equal(after.code, 0, `the store checks after the race: ${after.out}`)
})

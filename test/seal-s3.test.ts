import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openStorage } from '../src/storage/storage.js'
import { buildGolden, GOLDEN_DIR, listFiles } from '../scripts/make-golden-record.js'
import { newBucket } from './helpers/s3.js'
import { needs } from './helpers/tools.js'

t.test('the golden day sealed to a bucket is the golden tree, byte for byte', needs('radosgw'), async (t) => {
  const { url } = await newBucket()
  const work = await mkdtemp(join(tmpdir(), 'seal-s3-'))
  t.teardown(() => rm(work, { recursive: true, force: true }))
  const root = `${url}/sealed/root`
  await buildGolden(join(work, 'golden'), root)
  const store = await openStorage(root)
  const keys: string[] = []
  for await (const o of store.list('')) keys.push(o.key)
  const golden = join(GOLDEN_DIR, 'root')
  const files = await listFiles(golden)
  t.same(keys, files, 'the same objects as the golden files')
  let differ = 0
  for (const f of files) if (!(await store.get(f, 1 << 30))!.equals(await readFile(join(golden, f)))) differ++
  t.equal(differ, 0, 'every object holds the golden file\'s bytes')
})

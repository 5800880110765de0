/**
 * The conditional path of a multipart upload, against a TEST DOUBLE (test/doubles/s3-conditional-double.mjs)
 * that honours `If-None-Match: *` on CompleteMultipartUpload as AWS S3 does. The real server of the tests,
 * Ceph RGW 16.2, ignores that condition (docs/object-storage.md), so what pipe does where it is honoured is
 * shown here: an upload whose key another writer creates between pipe's look and its completion is refused
 * by the server, and pipe reports the object as holding other bytes, which it never overwrote.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { PipeError } from '../src/core/errors.js'
import { S3Storage } from '../src/storage/s3-storage.js'

const DOUBLE = fileURLToPath(new URL('./doubles/s3-conditional-double.mjs', import.meta.url))

async function startDouble(env: Record<string, string>): Promise<{ endpoint: string; stop: () => void }> {
  const child = spawn(process.execPath, [DOUBLE], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()))
    child.once('exit', (code) => reject(new Error(`the double exited: ${code}`)))
  })
  return { endpoint: `http://127.0.0.1:${port}`, stop: () => child.kill() }
}

t.test('a multipart upload completed only if the key is still absent (a test double honouring If-None-Match)', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'multipart-double-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'raw.jsonl.zst')
  const bytes = randomBytes(11 * 2 ** 20)
  await writeFile(file, bytes)
  const saved = { ...process.env }
  t.teardown(() => { process.env = saved })
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'double', AWS_SECRET_ACCESS_KEY: 'double', AWS_REGION: 'us-east-1' })

  const plain = await startDouble({})
  t.teardown(plain.stop)
  process.env.AWS_ENDPOINT_URL_S3 = plain.endpoint
  const s = (await S3Storage.open('s3://double/sealed')).withOptions({ multipartAbove: 2 ** 20, partSize: 5 * 2 ** 20 })
  t.equal(await s.putIfAbsent('hour=14/raw.jsonl.zst', { file }), 'created', 'three parts, completed')
  t.same(await s.get('hour=14/raw.jsonl.zst', 1 << 30), bytes)
  t.equal(await s.putIfAbsent('hour=14/raw.jsonl.zst', { file }), 'same', 'again: the bytes are there')

  const racing = await startDouble({ RACE_KEY: 'sealed/hour=15/raw.jsonl.zst', RACE_BYTES: 'the other sealer\'s raw file' })
  t.teardown(racing.stop)
  process.env.AWS_ENDPOINT_URL_S3 = racing.endpoint
  const r = (await S3Storage.open('s3://double/sealed')).withOptions({ multipartAbove: 2 ** 20, partSize: 5 * 2 ** 20 })
  const err = await r.putIfAbsent('hour=15/raw.jsonl.zst', { file }).catch((e: unknown) => e)
  t.ok(err instanceof PipeError, 'refused')
  t.equal((err as PipeError).code, 'storage.object-differs')
  t.equal((err as PipeError).location?.file, 's3://double/sealed/hour=15/raw.jsonl.zst')
  t.equal((await r.get('hour=15/raw.jsonl.zst', 1 << 20))?.toString(), 'the other sealer\'s raw file', 'the other writer\'s object is kept')
})

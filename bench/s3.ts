/**
 * bench:s3 — `pipe run seal-hour --out s3://…` against the same seal to a local folder, side by side in one
 * run, on bench:seal-hour's Binance hour (BENCH_FRAMES venue frames, default 1,000,000, both replicas), the
 * bucket a real S3 API server on loopback (Ceph RGW with an in-memory OSD, scripts/ceph-s3.ts); then
 * `pipe run verify --root s3://…` over the sealed hour in MB/s of raw JSON (decompressed raw.jsonl.zst bytes
 * / wall seconds), beside verify of the local copy, with the requests each asked of the gateway (its own
 * counters). The seals alternate BENCH_ROUNDS times (default 3), each side's best wall time counts. Then the
 * requests a day of one chain costs: the golden day sealed into the bucket and verified from it, counted by
 * the gateway (docs/scale.md extrapolates them). The last line is machine-readable:
 *   seal-hour-s3 ratio-vs-local R verify-s3-mb-per-s V
 * R = the seal to the bucket's wall seconds / the seal to a folder's; V = verify from the bucket's MB/s.
 *
 * Environment: BENCH_FRAMES, BENCH_ROUNDS, BENCH_DIR (keep and reuse the prepared hour there).
 */
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import { Decompressor } from 'zstd-napi'
import { startCephS3 } from '../scripts/ceph-s3.js'
import { buildGolden } from '../scripts/make-golden-record.js'
import { timedCli, type Timed } from './timed-cli.js'
import { HOUR, ROUNDS, prepareHour } from './hours.js'

// The SDK is pinned (docs/object-storage.md): its notice about later releases' Node says nothing here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
const keep = process.env.BENCH_DIR
const dir = keep ?? await mkdtemp(join(tmpdir(), 'bench-s3-'))
const ceph = await startCephS3()
try {
  await mkdir(dir, { recursive: true })
  const { journal } = await prepareHour('binance', join(dir, 'binance'))
  const keys = join(dir, 'keys')
  if (!existsSync(join(keys, 'jwks.json'))) timedCli(['key', 'new', '--out', keys, '--valid-from', '2026-01-01T00:00:00.000000000Z'])
  const keyFile = join(keys, (await readdir(keys)).find((f) => f !== 'jwks.json')!)
  const jwks = join(keys, 'jwks.json')
  // The golden day below is sealed in this process.
  Object.assign(process.env, ceph.env)
  const env = { ...process.env }
  const client = new S3Client({ endpoint: ceph.endpoint, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: ceph.accessKeyId, secretAccessKey: ceph.secretAccessKey } })
  await client.send(new CreateBucketCommand({ Bucket: 'bench' }))
  client.destroy()

  const seal = (out: string) => timedCli(['run', 'seal-hour', '--venue', 'binance', '--channel', 'trades', '--hour', HOUR, '--journal', journal, '--out', out, '--key', keyFile, '--recorder-stopped', '--json'], { env })
  const localRoot = join(dir, `root-${process.pid}`)
  let local: Timed | null = null
  let bucket: Timed | null = null
  let bucketRoot = ''
  let sealRequests: Record<string, number> = {}
  try {
    for (let round = 0; round < ROUNDS; round++) {
      await rm(localRoot, { recursive: true, force: true })
      const l = seal(localRoot)
      const root = `s3://bench/round-${round}`
      const before = ceph.counters()
      const b = seal(root)
      const after = ceph.counters()
      if (!local || l.wall < local.wall) local = l
      if (!bucket || b.wall < bucket.wall) {
        bucket = b
        bucketRoot = root
        sealRequests = { req: after.req! - before.req!, put: after.put! - before.put!, get: after.get! - before.get! }
      }
      console.log(`round ${round + 1}: seal to a folder ${l.wall.toFixed(2)} s (${l.rssMb.toFixed(0)} MB), to the bucket ${b.wall.toFixed(2)} s (${b.rssMb.toFixed(0)} MB)`)
    }
    if (!local || !bucket) throw new Error('no round ran')
    const hourRel = join('recorder=recorder', 'venue=binance', 'channel=trades', 'date=2026-10-03', 'hour=14')
    const rawBytes = new Decompressor().decompress(await readFile(join(localRoot, hourRel, 'raw.jsonl.zst'))).byteLength

    const verifyLocal = timedCli(['run', 'verify', '--root', localRoot, '--keys', jwks, '--json'], { env })
    const before = ceph.counters()
    const verifyBucket = timedCli(['run', 'verify', '--root', bucketRoot, '--keys', jwks, '--json'], { env })
    const after = ceph.counters()
    for (const v of [verifyLocal, verifyBucket]) {
      const summary = JSON.parse(v.stdout) as { ok: boolean; hours: number }
      if (!summary.ok || summary.hours !== 1) throw new Error(`verify: ${v.stdout.slice(0, 400)}`)
    }
    const mbps = (t: Timed) => rawBytes / 1e6 / t.wall
    const requests = { req: after.req! - before.req!, get: after.get! - before.get!, put: after.put! - before.put! }
    console.log(`seal to a folder (best):     ${local.wall.toFixed(2)} s wall, ${local.cpu.toFixed(1)} s CPU, peak RSS ${local.rssMb.toFixed(0)} MB`)
    console.log(`seal to the bucket (best):   ${bucket.wall.toFixed(2)} s wall, ${bucket.cpu.toFixed(1)} s CPU, peak RSS ${bucket.rssMb.toFixed(0)} MB; gateway requests ${JSON.stringify(sealRequests)}`)
    console.log(`verify the folder:           ${verifyLocal.wall.toFixed(2)} s, ${mbps(verifyLocal).toFixed(0)} MB/s of ${(rawBytes / 1e6).toFixed(0)} MB raw JSON, peak RSS ${verifyLocal.rssMb.toFixed(0)} MB`)
    console.log(`verify the bucket:           ${verifyBucket.wall.toFixed(2)} s, ${mbps(verifyBucket).toFixed(0)} MB/s, peak RSS ${verifyBucket.rssMb.toFixed(0)} MB; gateway requests ${JSON.stringify(requests)}`)

    // What a day costs in requests (docs/scale.md): the golden day (25 hours of one chain, its daily
    // manifest after hour 23) sealed into the bucket, then verified from it, each counted by the gateway.
    const dayStart = ceph.counters()
    await buildGolden(join(dir, `golden-${process.pid}`), 's3://bench/golden')
    const daySealed = ceph.counters()
    const dayVerify = timedCli(['run', 'verify', '--root', 's3://bench/golden', '--keys', join(dir, `golden-${process.pid}`, 'jwks.json'), '--to', '2026-10-04', '--json'], { env })
    const dayVerified = ceph.counters()
    await rm(join(dir, `golden-${process.pid}`), { recursive: true, force: true })
    const hours = (JSON.parse(dayVerify.stdout) as { hours: number }).hours
    const delta = (a: Record<string, number>, b: Record<string, number>) => ({ req: b.req! - a.req!, get: b.get! - a.get!, put: b.put! - a.put! })
    console.log(`a day of one chain (${hours} hours and its daily manifest): sealing asked ${JSON.stringify(delta(dayStart, daySealed))}, verify asked ${JSON.stringify(delta(daySealed, dayVerified))}`)
    console.log(`seal-hour-s3 ratio-vs-local ${(bucket.wall / local.wall).toFixed(3)} verify-s3-mb-per-s ${mbps(verifyBucket).toFixed(0)}`)
  } finally {
    await rm(localRoot, { recursive: true, force: true })
  }
} finally {
  await ceph.stop()
  if (!keep) await rm(dir, { recursive: true, force: true })
}

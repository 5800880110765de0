/**
 * soak:s3 — two sealers race on every hour of one chain in a bucket, SOAK_PAIRS times (default 100), on a real
 * S3 API server on loopback (Ceph RGW, scripts/ceph-s3.ts). The two seal from journals that differ in one frame
 * an hour, so the hour each would seal differs in every file; each pair is two `pipe run seal-hour` processes
 * started together. What must hold, and is counted:
 * - one winner a pair: one seal exits 0, the other 2 with seal.hour-differs (`double-wins`, `no-wins`);
 * - no mixed hour: the hour's raw file and table are both the winner's, as each sealer makes them alone
 *   (`mixed`);
 * - no overwrite: every object keeps the bytes it had when its pair ended, to the end of the soak (`overwrites`);
 * - no fork: `pipe run verify` over the bucket passes, with no finding of check 5 (`forks`).
 * The last line: soak-s3 pairs N double-wins D no-wins W mixed M overwrites O forks F
 */
import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import { VERSION } from '../src/core/version.js'
import { JournalBuilder } from '../src/formats/record/journal/journal.js'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import { keySigner } from '../src/formats/record/keys/signer.js'
import { hourDirOf, sealHour } from '../src/formats/record/seal/seal.js'
import { eventTime, type JournalEvent } from '../src/formats/record/types.js'
import { simulateReplicas } from '../src/sim/replicas.js'
import { openStorage } from '../src/storage/storage.js'
import { binanceSpot } from '../src/venues/binance.js'
import { startCephS3 } from './ceph-s3.js'
import { runNode } from './loopback.js'

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
const PAIRS = Number(process.env.SOAK_PAIRS ?? 100)
const HOUR = 3_600_000_000_000n
const S = 1_000_000_000n
const START = BigInt(Date.UTC(2026, 2, 1)) * 1_000_000n
const CLI = fileURLToPath(new URL('../bin/pipe.js', import.meta.url))
const hourName = (k: number) => new Date(Number((START + BigInt(k) * HOUR) / 1_000_000n)).toISOString().slice(0, 13)
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')

const pipe = (args: string[], env: NodeJS.ProcessEnv) => runNode(CLI, args, env)

const work = await mkdtemp(join(tmpdir(), 'soak-s3-'))
const ceph = await startCephS3()
try {
  const env = { ...process.env, ...ceph.env }
  Object.assign(process.env, ceph.env)
  const client = new S3Client({ endpoint: ceph.endpoint, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: ceph.accessKeyId, secretAccessKey: ceph.secretAccessKey } })
  await client.send(new CreateBucketCommand({ Bucket: 'soak' }))
  client.destroy()
  const { privateJwk, publicJwk } = await newSigningKey({ validFrom: START - HOUR, seed: new Uint8Array(32).fill(4) })
  const keyFile = join(work, 'key.jwk')
  await writePrivateJwkFile(keyFile, privateJwk)
  await writeJwksFile(join(work, 'jwks.json'), { keys: [publicJwk] })

  // Journal a holds every frame; journal b lacks the first frame of each hour.
  const events = [...simulateReplicas({ channel: 'trades', start: START - 10n * S, end: START + BigInt(PAIRS) * HOUR, framesPerSecond: 0.02, seed: 29 })]
  const dropped = new Set<JournalEvent>()
  for (let k = 0; k < PAIRS; k++) {
    const first = events.find((e) => e.kind === 'frame' && eventTime(e) >= START + BigInt(k) * HOUR + 60n * S)
    if (first) dropped.add(first)
  }
  const journals = { a: join(work, 'journal-a'), b: join(work, 'journal-b') }
  for (const [side, dir] of Object.entries(journals)) {
    const builder = new JournalBuilder(dir)
    for (const e of events) if (side === 'a' || !dropped.has(e)) await builder.append(e)
    await builder.commit()
  }
  // Each side's files of each hour as it seals them alone (a raw file and table do not depend on the chain).
  const alone: Record<'a' | 'b', string> = { a: join(work, 'alone-a'), b: join(work, 'alone-b') }
  for (const side of ['a', 'b'] as const) {
    for (let k = 0; k < PAIRS; k++) {
      await sealHour({ root: alone[side], journal: journals[side], recorder: 'soak', venue: binanceSpot, channel: 'trades', hourStart: START + BigInt(k) * HOUR, sign: keySigner(privateJwk), createdBy: `pipe ${VERSION}` })
    }
  }
  console.log(`prepared ${PAIRS} hours, each sealed alone from each journal`)

  const root = 's3://soak/chain'
  const store = await openStorage(root)
  const held = new Map<string, string>()
  let doubleWins = 0
  let noWins = 0
  let mixed = 0
  const t0 = performance.now()
  for (let k = 0; k < PAIRS; k++) {
    const seal = (journal: string) => pipe(['run', 'seal-hour', '--venue', 'binance', '--channel', 'trades', '--hour', hourName(k), '--journal', journal, '--out', root, '--key', keyFile, '--recorder', 'soak', '--recorder-stopped', '--json'], env)
    const [a, b] = await Promise.all([seal(journals.a), seal(journals.b)])
    const wins = [a, b].filter((r) => r.code === 0).length
    if (wins === 2) doubleWins++
    if (wins === 0) {
      noWins++
      console.log(`pair ${k}: no winner: ${a.err.trim()} | ${b.err.trim()}`)
      break
    }
    const loser = a.code === 0 ? b : a
    if (wins === 1 && (loser.code !== 2 || !loser.err.includes('seal.hour-differs'))) console.log(`pair ${k}: the loser said: ${loser.err.trim()}`)
    const winner: 'a' | 'b' = a.code === 0 ? 'a' : 'b'
    const rel = hourDirOf('', { recorder: 'soak', venue: 'binance', channel: 'trades' }, START + BigInt(k) * HOUR).replace(/^\//, '')
    for (const name of ['raw.jsonl.zst', 'trades.parquet']) {
      const bytes = await store.get(`${rel}/${name}`, 1 << 30)
      const expected = await readFile(join(hourDirOf(alone[winner], { recorder: 'soak', venue: 'binance', channel: 'trades' }, START + BigInt(k) * HOUR), name))
      if (!bytes || !bytes.equals(expected)) mixed++
    }
    for await (const { key } of store.list(`${rel}/`)) held.set(key, sha((await store.get(key, 1 << 30))!))
    if ((k + 1) % 10 === 0) console.log(`${k + 1} pairs, ${((performance.now() - t0) / 1000).toFixed(0)} s`)
  }
  let overwrites = 0
  for await (const { key } of store.list('')) {
    const before = held.get(key)
    if (before !== undefined && before !== sha((await store.get(key, 1 << 30))!)) overwrites++
  }
  const verify = await pipe(['run', 'verify', '--root', root, '--keys', join(work, 'jwks.json'), '--json'], env)
  const report = JSON.parse(verify.out) as { ok: boolean; hours: number; findings: { check: number; code: string }[] }
  const forks = report.findings.filter((f) => f.check === 5).length
  console.log(`verify: exit ${verify.code}, ${report.hours} hours, ${report.findings.length} findings${report.findings.length > 0 ? `: ${JSON.stringify(report.findings.slice(0, 5))}` : ''}`)
  console.log(`soak-s3 pairs ${PAIRS} double-wins ${doubleWins} no-wins ${noWins} mixed ${mixed} overwrites ${overwrites} forks ${forks}`)
  if (doubleWins + noWins + mixed + overwrites + forks > 0 || verify.code !== 0 || report.hours !== PAIRS) process.exitCode = 1
} finally {
  await ceph.stop()
  await rm(work, { recursive: true, force: true })
}

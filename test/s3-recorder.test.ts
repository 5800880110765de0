/**
 * `record` with its sealed hours going to object storage: the recorder records from the venue simulator on
 * loopback into a local journal, and seals each ended hour into a bucket on a real S3 server (Ceph RGW on
 * loopback), where the hour verifies.
 */
import { spawnSync } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import type { HourlyManifest } from '../src/formats/record/manifest.js'
import { jsonLogger } from '../src/recorder/log.js'
import { SimulatedClock } from '../src/recorder/clock/simulated-clock.js'
import { Recorder } from '../src/recorder/recorder.js'
import { startVenueSimulator } from '../src/sim/venue/simulator.js'
import { openStorage } from '../src/storage/storage.js'
import { createBinanceSpotAdapter } from '../src/venues/binance.js'
import { childEnv } from './helpers/io.js'
import { newBucket } from './helpers/s3.js'
import { needs } from './helpers/tools.js'

const CLI = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const T0 = Date.UTC(2026, 9, 3, 13, 59, 30)
const SCALE = 360

t.test('the recorder seals each ended hour into a bucket, where it verifies', needs('radosgw'), async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pipe-recorder-s3-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const { url } = await newBucket()
  const root = `${url}/recorders`
  const { privateJwk, publicJwk } = await newSigningKey({ validFrom: '2026-01-01T00:00:00.000000000Z', seed: new Uint8Array(32).fill(3) })
  await writePrivateJwkFile(join(dir, 'key.jwk'), privateJwk)
  await writeJwksFile(join(dir, 'jwks.json'), { keys: [publicJwk] })
  const clock = new SimulatedClock(BigInt(T0) * 1_000_000n, SCALE)
  const sim = await startVenueSimulator({ seed: 11, instruments: ['BTCUSDT'], rate: 1, clock: () => Number(clock.nowNs() / 1000n) / 1000 })
  t.teardown(() => sim.close())
  const logLines: string[] = []
  const recorder = new Recorder({
    venue: createBinanceSpotAdapter({ wsBase: sim.wsUrl, restBase: sim.restUrl }), instruments: ['BTCUSDT'], channels: ['trades'], replicas: ['a', 'b'],
    journal: join(dir, 'journal'), clock, log: jsonLogger({ write: (l: string) => { logLines.push(l); return true } } as never), timeScale: SCALE, heartbeatMs: 1000 * SCALE,
    backoffMs: { first: 50, max: 200 },
    seal: { root, key: join(dir, 'key.jwk'), keys: join(dir, 'jwks.json'), recorder: 'rec-s3', cli: CLI, everyMs: 200, graceMs: 60_000, starvedWindowMs: 5_000 },
  })
  await recorder.start()
  t.teardown(() => recorder.stop())
  const store = await openStorage(root)
  const hour = 'recorder=rec-s3/venue=binance/channel=trades/date=2026-10-03/hour=14'
  const until = Date.now() + 90_000
  while (!(await store.head(`${hour}/manifest.json.sig`))) {
    if (Date.now() > until) throw new Error(`hour 14 was not sealed into the bucket: ${logLines.filter((l) => /"level":"(warn|error)"/.test(l)).join('')}`)
    await new Promise((r) => setTimeout(r, 200))
  }
  await recorder.stop()
  const m = JSON.parse((await store.get(`${hour}/manifest.json`, 1 << 24))!.toString('utf8')) as HourlyManifest
  t.ok(m.replicas.every((r) => r.frames > 1000), `both replicas' frames are in the hour: ${m.replicas.map((r) => r.frames).join(', ')}`)
  t.ok(await store.head(`${hour}/raw.jsonl.zst`), 'the raw file is in the bucket')
  const v = spawnSync(process.execPath, [CLI, 'run', 'verify', '--root', root, '--keys', join(dir, 'jwks.json'), '--json'], { encoding: 'utf8', env: childEnv() })
  t.equal(v.status, 0, `verify passes from the bucket: ${v.stdout.slice(0, 600)}${v.stderr}`)
  t.notOk(logLines.some((l) => /"level":"error"/.test(l)), `no error logged: ${logLines.filter((l) => /"level":"error"/.test(l)).join('')}`)
})

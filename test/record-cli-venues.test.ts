/**
 * `pipe run record --venue V` (the command a desk runs) against the venue simulator speaking each venue beyond
 * Binance spot, on real time and real sockets: every channel of the venue on both replicas subscribed (its
 * /healthz), frames counted, a clean stop on SIGTERM; then `pipe run seal-hour` seals what it journaled and
 * `pipe run verify` passes, each channel's hour holding that venue's frames. The fault plans and the
 * manifests against the truth are the recorder-<venue> tests (the same daemon, in process).
 */
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { childEnv } from './helpers/io.js'
import { sealRest } from './helpers/seal-rest.js'
import { hourName } from '../src/formats/record/journal/journal.js'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import type { HourlyManifest } from '../src/formats/record/manifest.js'
import type { SimulatedVenue } from '../src/sim/venue/faults.js'
import { startVenueSimulator } from '../src/sim/venue/simulator.js'

const CLI = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const dir = await mkdtemp(join(tmpdir(), 'pipe-record-cli-venues-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
const { privateJwk, publicJwk } = await newSigningKey({ validFrom: '2026-01-01T00:00:00.000000000Z', seed: new Uint8Array(32).fill(5) })
const key = join(dir, 'key.jwk')
const keys = join(dir, 'jwks.json')
await writePrivateJwkFile(key, privateJwk)
await writeJwksFile(keys, { keys: [publicJwk] })

/** Each venue, the instruments it is recorded with, and its channels (OKX's liquidations, by instrument type, are recorded apart). */
const VENUES: { venue: SimulatedVenue; instruments: string[]; channels: string[] }[] = [
  { venue: 'binance-usdm', instruments: ['BTCUSDT', 'ETHUSDT'], channels: ['trades', 'book', 'funding', 'liquidations'] },
  { venue: 'kraken', instruments: ['BTC/USD', 'ETH/USD'], channels: ['trades', 'book'] },
  { venue: 'okx', instruments: ['BTC-USDT-SWAP', 'ETH-USDT-SWAP'], channels: ['trades', 'book', 'funding'] },
  { venue: 'bybit', instruments: ['BTCUSDT', 'ETHUSDT'], channels: ['trades', 'book', 'funding', 'liquidations'] },
  { venue: 'deribit', instruments: ['BTC-PERPETUAL', 'ETH-PERPETUAL'], channels: ['trades', 'book', 'funding'] },
  { venue: 'coinbase', instruments: ['BTC-USD', 'ETH-USD'], channels: ['trades', 'book'] },
]

async function waitFor(what: string, ok: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const until = Date.now() + ms
  while (!(await ok())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

for (const { venue, instruments, channels } of VENUES) {
  t.test(`pipe run record --venue ${venue}: ${channels.join(', ')} on two replicas, sealed and verified`, async (t) => {
    const sim = await startVenueSimulator({ venue, seed: 9, instruments, rate: 20, depthIntervalMs: 100 })
    t.teardown(() => sim.close())
    const journal = join(dir, venue, 'journal')
    const root = join(dir, venue, 'root')
    const child = spawn(process.execPath, [CLI, 'run', 'record', '--venue', venue, '--instruments', instruments.join(','), '--channels', channels.join(','), '--journal', journal,
      '--endpoint', sim.wsUrl, '--rest-endpoint', sim.restUrl, '--clock', 'none', '--metrics-port', '0'], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
    t.teardown(() => { child.kill('SIGKILL') })
    await waitFor('the recorder to start', () => /"msg":"recording"/.test(stderr), 20_000)
    const metricsUrl = (JSON.parse(stderr.split('\n').find((l) => l.includes('"msg":"recording"'))!) as { metrics: string }).metrics
    await waitFor('every connection subscribed', async () => (await fetch(`${metricsUrl}/healthz`)).status === 200, 20_000)
    const health = await (await fetch(`${metricsUrl}/healthz`)).json() as { subscribed: Record<string, boolean> }
    t.same(Object.keys(health.subscribed).sort(), channels.flatMap((c) => [`a/${c}`, `b/${c}`]).sort(), 'every channel on both replicas')
    t.ok(Object.values(health.subscribed).every(Boolean), 'all subscribed')
    await new Promise((r) => setTimeout(r, 2500))
    const metrics = await (await fetch(`${metricsUrl}/metrics`)).text()
    for (const c of ['trades', 'book']) t.match(metrics, new RegExp(`^pipe_recorder_frames_total\\{replica="a",channel="${c}"\\} [1-9]`, 'm'), `${c}: frames counted`)
    child.kill('SIGTERM')
    t.equal(await exited, 0, 'a clean stop')
    t.notMatch(stderr, /"level":"error"/, 'no error logged')
    for (const channel of channels) {
      const rest = await sealRest(CLI, { root, journal: join(journal, channel), venue, channel, recorder: 'recorder', key })
      t.ok(rest.hours.length > 0 && rest.statuses.every((s) => s === 0), `${channel}: sealed`)
      // A run across an hour's end seals two hours: the frames are counted in all.
      let frames = 0
      for (const hour of rest.hours) {
        const name = hourName(hour)
        const m = JSON.parse(await readFile(join(root, 'recorder=recorder', `venue=${venue}`, `channel=${channel}`, `date=${name.slice(0, 10)}`, `hour=${name.slice(11, 13)}`, 'manifest.json'), 'utf8')) as HourlyManifest
        frames += m.files.find((f) => f.name === 'raw.jsonl.zst')!.rows
      }
      t.ok(frames > (channel === 'trades' || channel === 'book' ? 10 : 0), `${channel}: ${frames} frames in the raw file (funding and liquidations push every few seconds at most)`)
    }
    const verify = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const v = spawn(process.execPath, [CLI, 'run', 'verify', '--root', root, '--keys', keys, '--json'], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      v.stdout.on('data', (d: Buffer) => { out += d.toString() })
      v.on('close', (code) => resolve({ code, out }))
    })
    t.equal(verify.code, 0, `verify passes: ${verify.out.slice(0, 300)}`)
  })
}

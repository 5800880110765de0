/**
 * bench:record-soak — the daemon's memory over a day: `pipe run record` (the built CLI, in a child process)
 * records the venue simulator's trades and depth on both replicas for 24 simulated hours on a simulated
 * clock, sealing each hour as it ends, while this script samples the daemon's resident set from /proc
 * (its own, not its seal children's). It prints the peak RSS of each simulated hour and whether the peak
 * stays flat: the last six hours' peak against the peak of hours 2 to 7, once start-up is behind it.
 *
 * Last line: `record-soak hours H peak-rss-mb M late-vs-early R` (R ≤ 1.10 is flat).
 *
 * Environment: SOAK_HOURS (24), SOAK_TIME_SCALE (720: a simulated day in two real minutes), SOAK_RATE (trades
 * a simulated second on each trade stream, 1).
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import { startVenueSimulator } from '../src/sim/venue/simulator.js'

const HOURS = Number(process.env.SOAK_HOURS ?? 24)
const SCALE = Number(process.env.SOAK_TIME_SCALE ?? 720)
const RATE = Number(process.env.SOAK_RATE ?? 1)
const CLI = fileURLToPath(new URL('../bin/pipe.js', import.meta.url))
const START = Date.UTC(2026, 9, 3, 0, 0, 0) - 60_000

function rssMb(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m ? Number(m[1]) / 1024 : null
  } catch {
    return null
  }
}

const dir = await mkdtemp(join(tmpdir(), 'bench-record-soak-'))
try {
  const { privateJwk, publicJwk } = await newSigningKey({ validFrom: '2026-01-01T00:00:00.000000000Z' })
  await writePrivateJwkFile(join(dir, 'key.jwk'), privateJwk)
  await writeJwksFile(join(dir, 'jwks.json'), { keys: [publicJwk] })
  const sim = await startVenueSimulator({ seed: 24, rate: RATE, depthIntervalMs: 1000, startTime: START, timeScale: SCALE, keepTruth: false })
  const daemon = spawn(process.execPath, [CLI, 'run', 'record', '--venue', 'binance', '--instruments', 'BTCUSDT,ETHUSDT', '--channels', 'trades,book',
    '--journal', join(dir, 'journal'), '--out', join(dir, 'root'), '--key', join(dir, 'key.jwk'), '--endpoint', sim.wsUrl, '--rest-endpoint', sim.restUrl,
    '--clock', 'simulated', '--time-scale', String(SCALE), '--time-start', new Date(START).toISOString()], { stdio: ['ignore', 'ignore', 'pipe'] })
  let errors = 0
  daemon.stderr.on('data', (d: Buffer) => { errors += (d.toString().match(/"level":"error"/g) ?? []).length })
  const started = Date.now()
  const peaks: number[] = []
  const realMsPerHour = 3_600_000 / SCALE
  while (peaks.length < HOURS) {
    await new Promise((r) => setTimeout(r, 200))
    const rss = rssMb(daemon.pid!)
    if (rss === null) throw new Error('the daemon ended on its own')
    const hour = Math.floor((Date.now() - started) / realMsPerHour)
    if (hour >= HOURS) break
    peaks[hour] = Math.max(peaks[hour] ?? 0, rss)
  }
  daemon.kill('SIGTERM')
  const [code] = await new Promise<[number | null]>((r) => daemon.on('close', (c) => r([c])))
  await sim.close()
  peaks.forEach((p, h) => console.log(`simulated hour ${String(h).padStart(2)}: peak RSS ${p.toFixed(0)} MB`))
  const early = Math.max(...peaks.slice(2, 8))
  const late = Math.max(...peaks.slice(-6))
  // What the day recorded: the hours the daemon sealed while it ran, and their frames.
  const manifests = (await readdir(join(dir, 'root'), { recursive: true })).filter((p) => /hour=\d\d[/\\]manifest\.json$/.test(p))
  let frames = 0
  for (const m of manifests) frames += (JSON.parse(await readFile(join(dir, 'root', m), 'utf8')) as { files: { name: string; rows: number }[] }).files.find((f) => f.name === 'raw.jsonl.zst')!.rows
  console.log(`daemon exit ${code} after SIGTERM; ${errors} error lines in its log; ${manifests.length} hours sealed (trades and book) with ${frames} frames`)
  console.log(`record-soak hours ${peaks.length} peak-rss-mb ${Math.max(...peaks).toFixed(0)} late-vs-early ${(late / early).toFixed(2)}`)
} finally {
  await rm(dir, { recursive: true, force: true })
}

import { createWriteStream, existsSync } from 'node:fs'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { Writable } from 'node:stream'
import { UsageError } from '../src/core/errors.js'
import { runPipeline } from '../src/core/runner.js'
import { HOUR_NS, hourName } from '../src/formats/record/journal/journal.js'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import { RAW_FILE_NAME, type HourlyManifest } from '../src/formats/record/manifest.js'
import { hourDirOf, readManifest } from '../src/formats/record/seal/seal.js'
import { formatTime } from '../src/formats/record/time.js'
import type { Channel } from '../src/formats/record/types.js'
import { SimulatedClock } from '../src/recorder/clock/simulated-clock.js'
import { jsonLogger } from '../src/recorder/log.js'
import { Recorder } from '../src/recorder/recorder.js'
import { startVenueSimulator } from '../src/sim/venue/simulator.js'
import { venueAt } from '../src/venues/index.js'
import { registry } from './registry.js'

const S = 1_000_000_000n
const FIRST_HOUR = BigInt(Date.UTC(2026, 9, 3, 14)) * 1_000_000n
/** The recorder starts two simulated minutes (half a real second) before the first whole hour, to be subscribed by then: hour 13 is its first, and mostly down. */
const START = FIRST_HOUR - 120n * S
/** Simulated seconds per real second: two hours in about half a minute. */
const TIME_SCALE = 240
/**
 * The heartbeat interval in simulated time: a real second, as a recorder on the real clock promises, so that
 * a pause of the process (a collection, a seal starting) is not magnified into simulated downtime.
 */
const HEARTBEAT_MS = 1000 * TIME_SCALE
const CHANNELS: readonly Channel[] = ['trades', 'book']
/** Real milliseconds without a new hour sealed after which the demo gives up. */
const STUCK_MS = 180_000
const INSTRUMENTS = ['BTCUSDT', 'ETHUSDT']
/**
 * A fixed seed, so the demo's key is the same on every machine. It is public (it is here): the demo's key
 * must never sign real data.
 */
const DEMO_KEY_SEED = new Uint8Array(32).fill(42)

/** Simulated milliseconds after the simulator starts of `minute` past the first whole hour. */
const intoFirstHour = (minute: number) => Number((FIRST_HOUR - START) / 1_000_000n) + minute * 60_000
/** What goes wrong in the first whole hour: replica a's connection dropped by the venue, and updates it skipped. */
const FAULTS = [
  { kind: 'disconnect' as const, at: intoFirstHour(15), replica: 'a', code: 1001, reason: 'going away' },
  { kind: 'gap' as const, at: intoFirstHour(30), stream: 'btcusdt@trade', count: 4 },
  { kind: 'gap' as const, at: intoFirstHour(30), stream: 'btcusdt@depth@100ms', count: 4 },
]

/** Names a folder as the demo's output, which a later demo may replace. */
const DEMO_MARK = '.pipe-demo'
/** What the demo writes in its folder, and replaces on a later run. */
const DEMO_OUTPUT = ['journal', 'root', 'jwks.json', 'key.jwk', 'recorder.log']

/**
 * Makes `dir` the demo's, refusing (exit 2, nothing deleted) a folder whose journal/, root/ or keys a demo
 * did not write: a user's sealed data or key under --out must never be replaced by the demo's.
 */
async function claimDemoFolder(dir: string): Promise<void> {
  if (!existsSync(join(dir, DEMO_MARK))) {
    const theirs = DEMO_OUTPUT.filter((name) => existsSync(join(dir, name)))
    if (theirs.length > 0) {
      throw new UsageError('usage.not-demo-output', `--out: holds ${theirs.join(', ')}, which pipe demo did not write; it replaces only its own output: name another folder`, { location: { file: dir } })
    }
  }
  await mkdir(dir, { recursive: true })
  await writeFile(join(dir, DEMO_MARK), 'pipe demo output: a later pipe demo replaces journal/, root/, jwks.json, key.jwk and recorder.log here\n')
}

/**
 * What `npm start` runs: the recorder daemon against the venue simulator over sockets on loopback, both on a
 * simulated clock 240 times real time, recording Binance spot trades and depth (updates and REST snapshots)
 * on two replicas from two minutes before 14:00 until its sealer has sealed hour 15: hour 13 mostly down,
 * hour 14 with replica a's connection dropped by the venue and a sequence gap, hour 15 clean. Each hour is
 * sealed by the daemon as it ends, then the chains are verified. Files: DIR/journal/<channel>, DIR/root (the
 * sealed chains), DIR/jwks.json, DIR/key.jwk, DIR/recorder.log (the daemon's log).
 */
export async function runDemo(outDir: string, cli: string): Promise<number> {
  const dir = resolve(outDir)
  const journals = join(dir, 'journal')
  const root = join(dir, 'root')
  const keyFile = join(dir, 'key.jwk')
  const keysFile = join(dir, 'jwks.json')
  const logFile = join(dir, 'recorder.log')
  await claimDemoFolder(dir)
  await rm(journals, { recursive: true, force: true })
  await rm(root, { recursive: true, force: true })

  const { privateJwk, publicJwk } = await newSigningKey({ validFrom: START - HOUR_NS, seed: DEMO_KEY_SEED })
  await writeJwksFile(keysFile, { keys: [publicJwk] })
  await writePrivateJwkFile(keyFile, privateJwk)

  const clock = new SimulatedClock(START, TIME_SCALE)
  const sim = await startVenueSimulator({ seed: 2026, instruments: INSTRUMENTS, rate: 4, depthIntervalMs: 1000, clock: () => Number(clock.nowNs() / 1000n) / 1000, faults: { faults: FAULTS } })
  const log = createWriteStream(logFile)
  const recorder = new Recorder({
    venue: venueAt('binance', { ws: sim.wsUrl, rest: sim.restUrl }), instruments: INSTRUMENTS, channels: CHANNELS, replicas: ['a', 'b'],
    journal: journals, clock, log: jsonLogger(log), timeScale: TIME_SCALE, heartbeatMs: HEARTBEAT_MS,
    // The daemon's real-time rhythms, shortened to keep pace with the simulated clock.
    backoffMs: { first: 20, max: 200 }, stallMs: 2_000,
    // A seal starved of CPU at nice 19 is run again at normal priority after 5 s, not the daemon's 30: the
    // demo's hours pass in 15 s, and a machine busy with other work would otherwise leave them unsealed.
    seal: { root, key: keyFile, keys: keysFile, recorder: 'demo', cli, everyMs: 100, graceMs: 60_000, starvedWindowMs: 5_000 },
  })
  process.stdout.write(`recording Binance trades and depth from the venue simulator (${sim.wsUrl}) on two replicas, ${TIME_SCALE}x real time, ${formatTime(START)} to the end of hour 15 ...\n`)
  const lastHour = FIRST_HOUR + HOUR_NS
  const sealedManifest = (channel: Channel, hour: bigint) => join(hourDirOf(root, { recorder: 'demo', venue: 'binance', channel }, hour), 'manifest.json')
  try {
    await recorder.start()
    // Sealed by the daemon itself, a simulated minute after the hour ends. A real-time limit keeps a broken run
    // from hanging: three minutes without a new hour sealed, so that a busy machine, whose seals wait for CPU,
    // is given the time it needs while it makes progress.
    const hours: bigint[] = []
    for (let h = START - (START % HOUR_NS); h <= lastHour; h += HOUR_NS) hours.push(h)
    const sealedCount = () => CHANNELS.reduce((n, c) => n + hours.filter((h) => existsSync(sealedManifest(c, h))).length, 0)
    let sealed = 0
    let deadline = Date.now() + STUCK_MS
    while (!CHANNELS.every((c) => existsSync(sealedManifest(c, lastHour)))) {
      const now = sealedCount()
      if (now > sealed) [sealed, deadline] = [now, Date.now() + STUCK_MS]
      if (Date.now() > deadline) throw new Error(`no hour sealed for ${STUCK_MS / 60_000} minutes (${sealed} of ${hours.length * CHANNELS.length} sealed): see ${logFile}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  } finally {
    await recorder.stop()
    await sim.close()
    await new Promise((r) => log.end(r))
  }

  const rows: string[][] = [['channel', 'hour', 'status', 'frames', 'rows', 'gaps', 'reconnects', 'reasons']]
  for (const channel of CHANNELS) {
    // Every hour the daemon sealed: on a loaded machine it may have sealed one more of a channel while sealing the other's hour 15.
    for (let h = START - (START % HOUR_NS); h <= lastHour || existsSync(sealedManifest(channel, h)); h += HOUR_NS) {
      const manifest = JSON.parse((await readManifest(sealedManifest(channel, h))).toString('utf8')) as HourlyManifest
      const frames = manifest.files.find((f) => f.name === RAW_FILE_NAME)?.rows ?? 0
      const tableRows = manifest.files.filter((f) => f.name !== RAW_FILE_NAME).map((f) => `${f.name.replace('.parquet', '')} ${f.rows}`).join(', ')
      rows.push([channel, hourName(h), manifest.completeness.status, String(frames), tableRows, String(manifest.sequence_gaps.length), String(manifest.replicas.reduce((n, r) => n + r.reconnect_windows.length, 0)), manifest.completeness.reasons.join(', ') || '-'])
    }
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  for (const r of rows) process.stdout.write(r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd() + '\n')

  const verify = registry.pipeline('verify')!
  const quiet = new Writable({ write(_c, _e, cb) { cb() } })
  const result = await runPipeline(registry, verify, { root: [root], keys: keysFile }, {
    stdin: process.stdin, stdout: quiet, stderr: process.stderr, json: false, progress: false, handleSignals: true,
  })
  process.stdout.write(`\nverify (pipe run verify --root ${root} --keys ${keysFile}): ${result.ok ? 'every check passes' : `${result.findings} findings`}\n`)
  process.stdout.write(`sealed chains: ${root}\njournals:      ${journals}\nrecorder log:  ${logFile}\npublic keys:   ${keysFile}\nprivate key:   ${keyFile} (made from a public seed: never sign real data with it; pipe key new makes a key of your own)\n`)
  return result.exitCode
}

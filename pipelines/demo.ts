import { existsSync } from 'node:fs'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { Writable } from 'node:stream'
import { UsageError } from '../src/core/errors.js'
import { runPipeline } from '../src/core/runner.js'
import { VERSION } from '../src/core/version.js'
import { JournalBuilder } from '../src/formats/record/journal/journal.js'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import { RAW_FILE_NAME } from '../src/formats/record/manifest.js'
import { sealHour } from '../src/formats/record/seal/seal.js'
import { formatTime } from '../src/formats/record/time.js'
import { registry } from './registry.js'
import { simulateReplicas, type SimIncident } from '../src/sim/replicas.js'
import { binanceSpot } from '../src/venues/binance.js'

const HOUR = 3_600_000_000_000n
const S = 1_000_000_000n
const FIRST_HOUR = BigInt(Date.UTC(2026, 9, 3, 13)) * 1_000_000n
/**
 * A fixed seed, so the demo's key, journal and sealed hours are the same bytes on every machine. It is public
 * (it is here): the demo's key must never sign real data.
 */
const DEMO_KEY_SEED = new Uint8Array(32).fill(42)

/** The recorder's incidents, the same on both channels' connections: it is one process. */
const INCIDENTS: readonly SimIncident[] = [
  { kind: 'reconnect', replica: 'a', at: FIRST_HOUR + HOUR + 900n * S, closeCode: 1001, pauseNs: 3n * S },
  { kind: 'sequence-gap', instrument: 'BTCUSDT', at: FIRST_HOUR + HOUR + 1800n * S, skip: 4 },
  { kind: 'outage', start: FIRST_HOUR + 2n * HOUR, end: FIRST_HOUR + 3n * HOUR },
]

/** Names a folder as the demo's output, which a later demo may replace. */
const DEMO_MARK = '.pipe-demo'
/** What the demo writes in its folder, and replaces on a later run. */
const DEMO_OUTPUT = ['journal', 'root', 'jwks.json', 'key.jwk']

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
  await writeFile(join(dir, DEMO_MARK), 'pipe demo output: a later pipe demo replaces journal/, root/, jwks.json and key.jwk here\n')
}

/**
 * What `npm start` runs: three simulated hours (the replicas connect ten seconds before the first) of
 * Binance spot trades and depth (updates and REST snapshots) on two replicas — one clean, one with a
 * reconnect of replica a and a venue sequence gap, one in which the recorder was down — journalled,
 * sealed, signed and verified. Files: DIR/journal/<channel>, DIR/root (the sealed chains), DIR/jwks.json,
 * DIR/key.jwk.
 */
export async function runDemo(outDir: string): Promise<number> {
  const dir = resolve(outDir)
  const journals = join(dir, 'journal')
  const root = join(dir, 'root')
  await claimDemoFolder(dir)
  await rm(journals, { recursive: true, force: true })
  await rm(root, { recursive: true, force: true })

  const { privateJwk, publicJwk } = await newSigningKey({ validFrom: FIRST_HOUR - HOUR, seed: DEMO_KEY_SEED })
  await writeJwksFile(join(dir, 'jwks.json'), { keys: [publicJwk] })
  await writePrivateJwkFile(join(dir, 'key.jwk'), privateJwk)

  const rows: string[][] = [['channel', 'hour', 'status', 'frames', 'rows', 'gaps', 'reconnects', 'reasons']]
  for (const channel of ['trades', 'book'] as const) {
    const journal = join(journals, channel)
    const builder = new JournalBuilder(journal)
    for (const event of simulateReplicas({
      channel, start: FIRST_HOUR - 10n * S, end: FIRST_HOUR + 3n * HOUR, instruments: ['BTCUSDT', 'ETHUSDT'],
      framesPerSecond: 8, depthIntervalMs: 1000, snapshotDepth: 5, seed: 2026, heartbeatIntervalMs: 1000, incidents: [...INCIDENTS],
    })) await builder.append(event)
    await builder.commit()
    for (let h = FIRST_HOUR; h < FIRST_HOUR + 3n * HOUR; h += HOUR) {
      const { manifest } = await sealHour({ root, journal, recorder: 'demo', venue: binanceSpot, channel, hourStart: h, key: privateJwk, createdBy: `pipe ${VERSION}` })
      const frames = manifest.files.find((f) => f.name === RAW_FILE_NAME)?.rows ?? 0
      const tableRows = manifest.files.filter((f) => f.name !== RAW_FILE_NAME).map((f) => `${f.name.replace('.parquet', '')} ${f.rows}`).join(', ')
      rows.push([channel, formatTime(h).slice(0, 13), manifest.completeness.status, String(frames), tableRows, String(manifest.sequence_gaps.length), String(manifest.replicas.reduce((n, r) => n + r.reconnect_windows.length, 0)), manifest.completeness.reasons.join(', ') || '-'])
    }
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  for (const r of rows) process.stdout.write(r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd() + '\n')

  const verify = registry.pipeline('verify')!
  const quiet = new Writable({ write(_c, _e, cb) { cb() } })
  const result = await runPipeline(registry, verify, { root: [root], keys: join(dir, 'jwks.json') }, {
    stdin: process.stdin, stdout: quiet, stderr: process.stderr, json: false, progress: false, handleSignals: true,
  })
  process.stdout.write(`\nverify (pipe run verify --root ${root} --keys ${join(dir, 'jwks.json')}): ${result.ok ? 'every check passes' : `${result.findings} findings`}\n`)
  process.stdout.write(`sealed chains: ${root}\njournals:      ${journals}\npublic keys:   ${join(dir, 'jwks.json')}\nprivate key:   ${join(dir, 'key.jwk')} (made from a public seed: never sign real data with it; pipe key new makes a key of your own)\n`)
  return result.exitCode
}

/**
 * Builds the golden sealed day of record format v1 (test/golden/record): a fixed Ed25519 key from a fixed
 * seed, a simulated two-replica Binance spot trades journal (src/sim/replicas.ts) over the UTC day
 * 2026-10-04 and the first hour of 2026-10-05, sealed hour by hour with the project's sealer (seal.ts), so
 * the daily manifest of 2026-10-04 is written after hour 23 and 2026-10-05T00 crosses the day boundary.
 *
 * What the day holds (times UTC):
 *   hour 05       empty: both replicas subscribed, the venue sent no trade (its frames are dropped and the
 *                 later trade ids renumbered, so no sequence gap appears); one control frame (a
 *                 LIST_SUBSCRIPTIONS reply) per replica, see goldenEvents -> complete, no trade rows
 *   hour 10       both replicas reconnect, overlapping (a at 10:20:00 for 5 s, b at 10:20:02 for 5 s,
 *                 close code 1001) -> partial, reconnect
 *   hour 14       the venue skips 4 BTCUSDT trade ids at 14:30 -> partial, sequence_gap
 *   hour 18       the recorder is down the whole hour -> missing, recorder_down
 *   2026-10-05T00 both replicas unsynchronised 00:10:00-00:11:00 (no clock fields) -> partial,
 *                 clock_offset_unknown; and the venue re-sends one ETHUSDT trade id with another price
 *                 at about 00:30, which the manifest lists in `conflicts`
 *   other hours   complete
 *
 * Usage:
 *   npm run golden:record                              write test/golden/record (refuses to change existing bytes)
 *   npm run golden:record -- --check                   build into a temporary directory and compare byte for byte
 *   npm run golden:record -- --out DIR                 build into DIR (must not exist), for inspection
 * (It runs the built script, dist/scripts/: the sealer works on worker threads, which tsx cannot load.)
 *
 * Output: root/ (the sealed chain), jwks.json (the public key), hashes.txt (sha256sum format, every file).
 * Golden data is never rewritten: when test/golden/record exists, every file built must equal the stored
 * one and no file may be added or missing; otherwise the script fails and writes nothing.
 */
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { JournalBuilder } from '../src/formats/record/journal/journal.js'
import { newSigningKey, writeJwksFile, type PrivateSigningJwk, type PublicSigningJwk } from '../src/formats/record/keys/keys.js'
import { sealHour } from '../src/formats/record/seal/seal.js'
import type { FrameEvent, JournalEvent } from '../src/formats/record/types.js'
import { eventTime } from '../src/formats/record/types.js'
import { simulateReplicas } from '../src/sim/replicas.js'
import { binanceSpot } from '../src/venues/binance.js'
import { keySigner } from '../src/formats/record/keys/signer.js'

export const S = 1_000_000_000n
export const MINUTE = 60n * S
export const HOUR = 3_600_000_000_000n
/** 2026-10-04T00:00:00Z, the golden day. */
export const DAY_START = BigInt(Date.UTC(2026, 9, 4)) * 1_000_000n
export const HOURS = 25
export const RECORDER = 'golden'
export const CHANNEL = 'trades' as const
export const INSTRUMENTS = ['BTCUSDT', 'ETHUSDT', 'SOLUSDT']
/** Fixed, so the Parquet footers do not change with the package version. */
export const CREATED_BY = 'pipe golden-record 1'
/** The golden key's seed: SHA-256 of a fixed text. Public test data; never use it for anything real. */
export const GOLDEN_SEED = new Uint8Array(createHash('sha256').update('pipe record-format-1 golden key').digest())
export const KEY_VALID_FROM = DAY_START - 24n * HOUR

export const EMPTY_HOUR = 5
export const RECONNECT_HOUR = 10
export const GAP_HOUR = 14
export const DOWN_HOUR = 18
export const CONFLICT_INSTRUMENT = 'ETHUSDT'

/** The repository: the nearest directory above this script holding package.json (also when run from dist/scripts). */
function findRepo(): string {
  for (let d = dirname(fileURLToPath(import.meta.url)); ; d = dirname(d)) {
    if (existsSync(join(d, 'package.json'))) return d
    if (d === dirname(d)) throw new Error('package.json not found above the script')
  }
}
export const REPO = findRepo()
export const GOLDEN_DIR = join(REPO, 'test', 'golden', 'record')

export async function goldenKey(): Promise<{ privateJwk: PrivateSigningJwk; publicJwk: PublicSigningJwk }> {
  return newSigningKey({ seed: GOLDEN_SEED, validFrom: KEY_VALID_FROM })
}

const at = (hour: number, minute = 0, second = 0) => DAY_START + BigInt(hour) * HOUR + BigInt(minute) * MINUTE + BigInt(second) * S

/** The simulated journal events of the golden range, with the empty hour and the conflict applied. */
export function goldenEvents(): JournalEvent[] {
  const source = simulateReplicas({
    channel: CHANNEL,
    start: DAY_START - 10n * S,
    end: DAY_START + BigInt(HOURS) * HOUR,
    instruments: INSTRUMENTS,
    framesPerSecond: 0.05,
    seed: 20261004,
    incidents: [
      { kind: 'reconnect', replica: 'a', at: at(RECONNECT_HOUR, 20, 0), closeCode: 1001, pauseNs: 5n * S },
      { kind: 'reconnect', replica: 'b', at: at(RECONNECT_HOUR, 20, 2), closeCode: 1001, pauseNs: 5n * S },
      { kind: 'sequence-gap', instrument: 'BTCUSDT', at: at(GAP_HOUR, 30), skip: 4 },
      { kind: 'outage', start: at(DOWN_HOUR), end: at(DOWN_HOUR + 1) },
      { kind: 'unsynchronised', replica: 'a', start: at(24, 10), end: at(24, 11) },
      { kind: 'unsynchronised', replica: 'b', start: at(24, 10), end: at(24, 11) },
    ],
  })
  // The empty hour: every trade frame whose first receipt falls in it is dropped (for both replicas: the
  // two receipts share one payload array), and later trade ids of the instrument move down by the number
  // dropped, so the venue's sequence runs on without a gap, as if it had sent nothing that hour.
  const emptyStart = at(EMPTY_HOUR)
  const emptyEnd = at(EMPTY_HOUR + 1)
  const dropped = new Set<Uint8Array>()
  const kept = new Set<Uint8Array>()
  const renumbered = new Map<Uint8Array, Uint8Array>()
  const shift = new Map<string, number>()
  const out: JournalEvent[] = []
  for (const e of source) {
    if (e.kind === 'frame') {
      const text = Buffer.from(e.payload).toString('utf8')
      const trade = text.startsWith('{"e":"trade"') ? (JSON.parse(text) as { s: string; t: number }) : null
      if (trade && !kept.has(e.payload)) {
        if (dropped.has(e.payload)) continue
        if (e.receiveTime >= emptyStart && e.receiveTime < emptyEnd) {
          dropped.add(e.payload)
          shift.set(trade.s, (shift.get(trade.s) ?? 0) + 1)
          continue
        }
        kept.add(e.payload)
        const d = shift.get(trade.s) ?? 0
        if (d > 0) {
          const fixed = text.replace(/"t":(\d+),/, (_, t: string) => `"t":${Number(t) - d},`)
          renumbered.set(e.payload, Buffer.from(fixed, 'utf8'))
        }
      }
      const payload = renumbered.get(e.payload)
      out.push(payload ? { ...e, payload } : e)
    } else if (e.kind === 'sequence-break') {
      const d = shift.get(e.instrument) ?? 0
      out.push(d > 0 && e.time >= emptyEnd ? { ...e, afterId: String(Number(e.afterId) - d), beforeId: String(Number(e.beforeId) - d) } : e)
    } else out.push(e)
  }
  // Journal writers create a replica's hour file only when an event of that hour arrives, and the sealer
  // reads an hour's connection state from that file: an hour without a single event seals as
  // recorder_down. So in the empty hour each replica receives one control frame, the venue's reply to a
  // LIST_SUBSCRIPTIONS request (no trade rows), which also shows it was subscribed.
  const reply = Buffer.from(`{"result":[${INSTRUMENTS.map((i) => `"${i.toLowerCase()}@trade"`).join(',')}],"id":2}`, 'utf8')
  for (const [replica, delay] of [['a', 0n], ['b', 1_000_000n]] as const) {
    const last = out.filter((e): e is FrameEvent => e.kind === 'frame' && e.replica === replica && e.receiveTime < emptyStart).pop()
    if (!last) throw new Error(`no frame of replica ${replica} before the empty hour`)
    const frame: FrameEvent = { kind: 'frame', replica, connection: last.connection, receiveTime: at(EMPTY_HOUR, 30) + delay, payload: reply, binary: false }
    if (last.clockOffset !== undefined && last.clockErrorBound !== undefined) { frame.clockOffset = last.clockOffset; frame.clockErrorBound = last.clockErrorBound }
    out.push(frame)
  }
  // The conflict: the venue sends one ETHUSDT trade again 4 ms later with its price one tick higher; both
  // replicas receive the second frame.
  const target = out.findIndex((e) => e.kind === 'frame' && e.receiveTime >= at(24, 30) && Buffer.from(e.payload).toString('utf8').includes(`"s":"${CONFLICT_INSTRUMENT}"`))
  if (target < 0) throw new Error('no ETHUSDT trade after 2026-10-05T00:30 to resend')
  const original = out[target] as FrameEvent
  const text = Buffer.from(original.payload).toString('utf8')
  const resent = Buffer.from(text.replace(/"p":"(\d+)\.(\d+)"/, (_, i: string, f: string) => `"p":"${i}.${String(BigInt(f) + 1000000n).padStart(f.length, '0')}"`), 'utf8')
  if (resent.equals(Buffer.from(original.payload))) throw new Error('resent frame unchanged')
  for (const e of out.filter((x) => x.kind === 'frame' && x.payload === original.payload) as FrameEvent[]) {
    out.push({ ...e, payload: resent, receiveTime: e.receiveTime + 4_000_000n })
  }
  // Stable sort by event time (the added frames go after the events of their instant).
  return out.map((e, i) => ({ e, i })).sort((x, y) => {
    const tx = eventTime(x.e), ty = eventTime(y.e)
    return tx < ty ? -1 : tx > ty ? 1 : x.i - y.i
  }).map((x) => x.e)
}

/**
 * Builds the golden tree into `dir` (which must not exist): its key set, and the sealed root in `root`
 * (default dir/root; a bucket's s3:// URL seals the same hours into object storage).
 */
export async function buildGolden(dir: string, root = join(dir, 'root')): Promise<void> {
  await mkdir(dir, { recursive: false })
  const work = await mkdtemp(join(tmpdir(), 'pipe-golden-journal-'))
  try {
    const { privateJwk, publicJwk } = await goldenKey()
    await writeJwksFile(join(dir, 'jwks.json'), { keys: [publicJwk] })
    const journal = join(work, 'journal')
    const builder = new JournalBuilder(journal)
    for (const e of goldenEvents()) await builder.append(e)
    await builder.commit()
    for (let h = 0; h < HOURS; h++) {
      await sealHour({ root, journal, recorder: RECORDER, venue: binanceSpot, channel: CHANNEL, hourStart: DAY_START + BigInt(h) * HOUR, sign: keySigner(privateJwk), createdBy: CREATED_BY })
    }
    await writeHashes(dir)
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

/** Every regular file below `dir`, as sorted relative paths with '/' separators. */
export async function listFiles(dir: string, base = dir): Promise<string[]> {
  const out: string[] = []
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...(await listFiles(path, base)))
    else if (entry.isFile()) out.push(relative(base, path).split('\\').join('/'))
    else throw new Error(`${path}: not a regular file or directory`)
  }
  return out.sort()
}

/** Writes DIR/hashes.txt: `sha256  path` for every other file below DIR (sha256sum's format). */
export async function writeHashes(dir: string): Promise<void> {
  const lines: string[] = []
  for (const f of await listFiles(dir)) {
    if (f === 'hashes.txt') continue
    lines.push(`${createHash('sha256').update(await readFile(join(dir, f))).digest('hex')}  ${f}`)
  }
  await writeFile(join(dir, 'hashes.txt'), lines.join('\n') + '\n')
}

/** Differences between two trees: files only in one, files with different bytes. */
export async function compareTrees(a: string, b: string): Promise<string[]> {
  const fa = await listFiles(a)
  const fb = await listFiles(b)
  const sb = new Set(fb)
  const sa = new Set(fa)
  const diffs: string[] = []
  for (const f of fa) {
    if (!sb.has(f)) diffs.push(`only in ${a}: ${f}`)
    else if (!(await readFile(join(a, f))).equals(await readFile(join(b, f)))) diffs.push(`bytes differ: ${f}`)
  }
  for (const f of fb) if (!sa.has(f)) diffs.push(`only in ${b}: ${f}`)
  return diffs
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false)
}

/**
 * Builds a tree of golden data into a temporary directory, then: with `check`, compares it with `target`;
 * without, writes it to `target` if absent, or, when present, adds what the build has beyond it (new
 * cases, and their lines in hashes.txt) and refuses anything else. Golden data is never rewritten: a build
 * that changes or drops an existing file, or an existing line of hashes.txt, is an error.
 */
export async function writeOrCheckTree(target: string, build: (dir: string) => Promise<void>, check: boolean, what: string): Promise<number> {
  const temp = await mkdtemp(join(tmpdir(), 'pipe-golden-'))
  try {
    const built = join(temp, 'tree')
    await build(built)
    const present = await exists(target)
    if (check || present) {
      if (!present) {
        process.stderr.write(`--check: ${target} does not exist\n`)
        return 1
      }
      const diffs = await compareTrees(target, built)
      const added = diffs.filter((d) => d.startsWith(`only in ${built}: `)).map((d) => d.slice(`only in ${built}: `.length))
      const hashesGrow = diffs.includes('bytes differ: hashes.txt') && (await readFile(join(target, 'hashes.txt'), 'utf8')).trimEnd().split('\n').every(
        ((next: Set<string>) => (line: string) => next.has(line))(new Set((await readFile(join(built, 'hashes.txt'), 'utf8')).trimEnd().split('\n'))))
      const onlyAdds = added.length > 0 && diffs.length === added.length + 1 && hashesGrow
      if (diffs.length > 0 && (check || !onlyAdds)) {
        process.stderr.write(`${check ? `${what} differs from a fresh build` : `refusing to rewrite ${what}; a fresh build differs`}:\n${diffs.map((d) => `  ${d}\n`).join('')}`)
        return 1
      }
      if (diffs.length > 0) {
        for (const f of [...added, 'hashes.txt']) {
          await mkdir(dirname(join(target, f)), { recursive: true })
          await cp(join(built, f), join(target, f), { force: f === 'hashes.txt', errorOnExist: f !== 'hashes.txt' })
        }
        process.stdout.write(`${target}: added ${added.length} files; every existing file is unchanged\n`)
        return 0
      }
      process.stdout.write(`${target}: identical to a fresh build (${(await listFiles(built)).length} files)\n`)
      return 0
    }
    await mkdir(dirname(target), { recursive: true })
    await cp(built, target, { recursive: true, errorOnExist: true, force: false })
    process.stdout.write(`wrote ${target} (${(await listFiles(target)).length} files)\n`)
    return 0
  } finally {
    await rm(temp, { recursive: true, force: true })
  }
}

async function main(argv: string[]): Promise<number> {
  const check = argv.includes('--check')
  const outIndex = argv.indexOf('--out')
  const unknown = argv.filter((a, i) => a !== '--check' && a !== '--out' && !(outIndex >= 0 && i === outIndex + 1))
  if (unknown.length > 0) {
    process.stderr.write(`usage: make-golden-record.ts [--check | --out DIR]; unknown: ${unknown.join(' ')}\n`)
    return 2
  }
  if (outIndex >= 0) {
    const out = resolve(argv[outIndex + 1] ?? '')
    await buildGolden(out)
    process.stdout.write(`built ${out}\n`)
    return 0
  }
  return writeOrCheckTree(GOLDEN_DIR, buildGolden, check, 'golden data')
}


if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then((code) => { process.exitCode = code }, (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
    process.exitCode = 1
  })
}

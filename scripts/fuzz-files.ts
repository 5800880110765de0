/**
 * `npm run fuzz`: hostile files against every command that reads files, as an attacker who controls a
 * root, a store, a journal, a key set or a records folder would make them. Each case copies one target's
 * fixture (hard links, so a case costs no bytes), does one seeded mutation to one of its files — byte
 * flips, a cut, garbage appended, the file deleted, replaced by another of its files, by a link to
 * /dev/zero, an 8 GiB sparse file, a FIFO, a directory, an empty file, deep or huge JSON, an absurd Parquet
 * footer, a zstd header asking for a huge window and size — and runs the built CLI on it, as users run it.
 *
 * A case is an anomaly when the run ends outside exit 0, 1 or 2, by a signal, past the wall-time limit,
 * above the peak-RSS limit, with a stack trace or an `internal` code, or with `--json` output that does not
 * parse. Every anomaly is kept as a vector under test/vectors/hostile/ (its mutation, replayable from the
 * fixtures, and the mutated bytes when small), which test/fuzz-files.test.ts replays. The last line of
 * the report: `fuzz cases N anomalies A max-rss-mb M max-wall-s W`.
 *
 * Usage: node dist/scripts/fuzz-files.js [--cases 2000] [--seed 1] [--jobs 2] [--only TARGET] [--keep-vectors DIR]
 */
import { spawn } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { cp, link, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, truncate, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import { LIFE, antRecord, patternRecord, ruleRecord, writeJsonl } from '../src/sim/pack-records.js'
import { seededRandom } from '../src/sim/random.js'
import { REPO, runCli, spawnCli } from './built-cli.js'

export { REPO }

const RSS_HOOK = join(REPO, 'scripts', 'fuzz-rss.mjs')
export const VECTORS = join(REPO, 'test', 'vectors', 'hostile')

export interface Limits { rssMb: number; wallS: number }
export const LIMITS: Limits = { rssMb: 512, wallS: 30 }

// ---------------------------------------------------------------------------------------------------
// Fixtures: one folder per target, made once per run

/** A command and the files of its fixture an attacker may change. */
interface Target {
  name: string
  /** The fixture folder, relative to the fixtures root. */
  fixture: string
  /** Files of the fixture that may be mutated, relative to it. */
  files: string[]
  args(dir: string): string[]
  env?(dir: string): Record<string, string>
  /** Standard input: a file of the fixture, read through a pipe (never a file descriptor the command could seek). */
  stdin?: string
  json: boolean
}

const SEAL_HOUR = '2026-10-03T14'
const CREATED = '2026-11-11T00:00:00Z'

async function filesUnder(root: string, dir = ''): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(join(root, dir), { withFileTypes: true })) {
    const rel = join(dir, e.name)
    if (e.isDirectory()) out.push(...(await filesUnder(root, rel)))
    else out.push(rel)
  }
  return out.sort()
}

async function must(what: string, p: Promise<{ code: number | null; stdout: string; stderr: string }>): Promise<void> {
  const r = await p
  if (r.code !== 0) throw new Error(`fuzz fixtures: ${what} failed (exit ${r.code}): ${r.stderr.trim()}`)
}

/** Makes every target's fixture under `root`, from the golden data and the simulators, and names the targets. */
export async function makeFixtures(root: string): Promise<Target[]> {
  const golden = (p: string) => join(REPO, 'test', 'golden', p)
  await cp(golden('record'), join(root, 'record'), { recursive: true })
  await cp(golden('minimal/store'), join(root, 'pack', 'store'), { recursive: true })
  await cp(golden('aperiodic/store'), join(root, 'pack-aperiodic', 'store'), { recursive: true })
  await mkdir(join(root, 'raw'))
  await cp(join(REPO, 'test', 'vectors', 'raw', 'valid', 'input.jsonl.zst'), join(root, 'raw', 'raw.jsonl.zst'))
  await mkdir(join(root, 'events'))
  await cp(join(REPO, 'test', 'fixtures', 'journal-sample.jsonl'), join(root, 'events', 'events.jsonl'))

  // A journal and a key that covers its hour, for seal-hour (and key rotate).
  const seal = join(root, 'seal')
  await must('journal-import', runCli(['run', 'journal-import', '--from', join(root, 'events', 'events.jsonl'), '--journal', join(seal, 'journal')]))
  const { privateJwk, publicJwk } = await newSigningKey({ validFrom: '2026-10-01T00:00:00.000000000Z', seed: new Uint8Array(32).fill(5) })
  await mkdir(join(seal, 'keys'), { recursive: true })
  await writeJwksFile(join(seal, 'keys', 'jwks.json'), { keys: [publicJwk] })
  await writePrivateJwkFile(join(seal, 'keys', 'key.jwk'), privateJwk)

  // A records folder and the publisher's key, for pack-publish.
  const publish = join(root, 'publish')
  const glider = [[1, 0], [2, 1], [0, 2], [1, 2], [2, 2]]
  await writeJsonl(join(publish, 'records', 'rules.jsonl'), [ruleRecord(LIFE)])
  await writeJsonl(join(publish, 'records', 'patterns.jsonl'), [patternRecord('square', LIFE, glider)])
  await writeJsonl(join(publish, 'records', 'ants.jsonl'), [antRecord('RL', { steps: 2000 })])
  await must('pack key', runCli(['pack', 'key', '--name', 'Fuzz', '--seed', '07'.repeat(32), '--created', CREATED], { PIPE_HOME: join(publish, 'home') }))

  // An export as an uncompressed tar, for pack-import (the tar reader, then the importer).
  const tarFixture = join(root, 'pack-tar')
  await mkdir(tarFixture)
  await must('tar', new Promise((resolve) => {
    const child = spawn('tar', ['-cf', join(tarFixture, 'export.tar'), '-C', golden(''), 'export'], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    child.on('close', (code) => resolve({ code, stdout: '', stderr }))
  }))

  // A pipeline file, for `pipe run FILE.json`.
  const pipeline = join(root, 'pipeline')
  await mkdir(pipeline)
  await cp(join(root, 'raw', 'raw.jsonl.zst'), join(pipeline, 'raw.jsonl.zst'))
  await writeFile(join(pipeline, 'check.json'), JSON.stringify({
    name: 'check',
    stages: [
      { stage: 'file', options: { path: 'raw.jsonl.zst' } },
      // The stored raw file is zstd: a plain one is refused at once rather than streamed through.
      { stage: 'zstd-decode', options: { requireCompressed: true } },
      { stage: 'split-lines' },
      { stage: 'parse-envelopes' },
      { stage: 'frame-order' },
      { stage: 'report', options: { field: 'lines' } },
    ],
  }))

  // Rows: a sealed trades table and a JSONL file through the stages of users' own ETL.
  const rows = join(root, 'rows')
  await mkdir(rows)
  await cp(join(root, 'record', 'root', 'recorder=golden', 'venue=binance', 'channel=trades', 'date=2026-10-04', 'hour=14', 'trades.parquet'), join(rows, 'trades.parquet'))
  await cp(join(root, 'events', 'events.jsonl'), join(rows, 'rows.jsonl'))
  const out = { description: 'the output file' }
  await writeFile(join(rows, 'parquet.json'), JSON.stringify({
    params: { in: { description: 'a Parquet file' }, out },
    stages: [
      { stage: 'parquet-read', options: { path: '${in}' } },
      { stage: 'filter', options: { where: [{ field: 'price', gte: '0' }, { field: 'receive_time', gte: '2026-10-04' }] } },
      { stage: 'to-csv' },
      { stage: 'atomic-file', options: { path: '${out}' } },
    ],
  }))
  await writeFile(join(rows, 'jsonl.json'), JSON.stringify({
    params: { in: { description: 'a JSONL file' }, out },
    stages: [
      { stage: 'file', options: { path: '${in}' } },
      { stage: 'split-lines' },
      { stage: 'from-jsonl' },
      { stage: 'select', options: { fields: ['kind', 'time', 'payload'] } },
      { stage: 'parquet-write', options: { path: '${out}', columns: [{ name: 'kind', type: 'string' }, { name: 'time', type: 'timestamp-ns' }, { name: 'payload', type: 'string' }] } },
    ],
  }))

  const recordFiles = (await filesUnder(join(root, 'record'))).filter((f) => f !== 'hashes.txt')
  const storeFiles = async (dir: string) => (await filesUnder(join(root, dir))).filter((f) => f.startsWith('store/'))
  return [
    { name: 'verify', fixture: 'record', files: recordFiles, args: (d) => ['run', 'verify', '--root', join(d, 'root'), '--keys', join(d, 'jwks.json'), '--json'], json: true },
    { name: 'verify-raw', fixture: 'raw', files: ['raw.jsonl.zst'], args: (d) => ['run', 'verify-raw', '--file', join(d, 'raw.jsonl.zst'), '--hour', '2026-10-03T14', '--json'], json: true },
    { name: 'verify-raw-stdin', fixture: 'raw', files: ['raw.jsonl.zst'], stdin: 'raw.jsonl.zst', args: () => ['run', 'verify-raw', '--max-bytes', String(256 * 2 ** 20), '--json'], json: true },
    { name: 'journal-import', fixture: 'events', files: ['events.jsonl'], args: (d) => ['run', 'journal-import', '--from', join(d, 'events.jsonl'), '--journal', join(d, 'out'), '--json'], json: true },
    {
      name: 'seal-hour', fixture: 'seal', files: await filesUnder(seal), json: true,
      args: (d) => ['run', 'seal-hour', '--venue', 'binance', '--channel', 'trades', '--hour', SEAL_HOUR, '--journal', join(d, 'journal'), '--out', join(d, 'root'), '--key', join(d, 'keys', 'key.jwk'), '--recorder-stopped', '--json'],
    },
    { name: 'key-rotate', fixture: 'seal', files: ['keys/jwks.json', 'keys/key.jwk'], json: false, args: (d) => ['key', 'rotate', '--keys', join(d, 'keys', 'jwks.json'), '--key', join(d, 'keys', 'key.jwk'), '--out', join(d, 'rotated'), '--at', '2026-11-01T00:00:00.000000000Z'] },
    { name: 'pack-check', fixture: 'pack', files: await storeFiles('pack'), args: (d) => ['run', 'pack-check', join(d, 'store'), '--level', '3', '--json'], json: true },
    { name: 'pack-check-aperiodic', fixture: 'pack-aperiodic', files: await storeFiles('pack-aperiodic'), args: (d) => ['run', 'pack-check', join(d, 'store'), '--level', '3', '--json'], json: true },
    { name: 'pack-import', fixture: 'pack', files: await storeFiles('pack'), args: (d) => ['run', 'pack-import', join(d, 'store'), '--library', join(d, 'library.db'), '--json'], json: true },
    { name: 'pack-import-tar', fixture: 'pack-tar', files: ['export.tar'], args: (d) => ['run', 'pack-import', join(d, 'export.tar'), '--library', join(d, 'library.db'), '--json'], json: true },
    { name: 'pack-export', fixture: 'pack', files: await storeFiles('pack'), args: (d) => ['run', 'pack-export', '--from', join(d, 'store'), '--to', join(d, 'export'), '--json'], json: true },
    {
      name: 'pack-publish', fixture: 'publish', files: await filesUnder(publish), json: true,
      env: (d) => ({ PIPE_HOME: join(d, 'home') }),
      args: (d) => ['run', 'pack-publish', '--feed', 'fuzz', '--to', join(d, 'store'), '--records', join(d, 'records'), '--created', CREATED, '--json'],
    },
    { name: 'pack-key', fixture: 'publish', files: (await filesUnder(publish)).filter((f) => f.startsWith('home/')), json: false, env: (d) => ({ PIPE_HOME: join(d, 'home') }), args: () => ['pack', 'key'] },
    { name: 'parquet-read', fixture: 'rows', files: ['trades.parquet'], args: (d) => ['run', join(d, 'parquet.json'), '--in', join(d, 'trades.parquet'), '--out', join(d, 'out.csv'), '--json'], json: true },
    { name: 'from-jsonl', fixture: 'rows', files: ['rows.jsonl'], args: (d) => ['run', join(d, 'jsonl.json'), '--in', join(d, 'rows.jsonl'), '--out', join(d, 'out.parquet'), '--json'], json: true },
    {
      name: 'sealed-read', fixture: 'record', files: recordFiles, json: true,
      args: (d) => ['run', join(REPO, 'examples', 'trades-day-to-csv.json'), '--root', join(d, 'root'), '--keys', join(d, 'jwks.json'), '--date', '2026-10-04', '--out', join(d, 'out.csv'), '--json'],
    },
    { name: 'run-file', fixture: 'pipeline', files: ['check.json', 'raw.jsonl.zst'], args: (d) => ['run', join(d, 'check.json'), '--json'], json: true },
  ]
}

// ---------------------------------------------------------------------------------------------------
// Mutations

export type MutationKind =
  | 'flip' | 'truncate' | 'append' | 'delete' | 'duplicate' | 'dev-zero' | 'sparse-8g' | 'fifo' | 'directory' | 'empty'
  | 'deep-json' | 'huge-json' | 'parquet-footer' | 'thrift-sizes' | 'zstd-header'

/** One mutation, replayable from the fixture: what was done to which file, with every choice it made. */
export interface Mutation {
  kind: MutationKind
  file: string
  /** flip: [offset, xor] pairs; truncate: [length]; append, zstd-header, thrift-sizes: the bytes' hex in `bytes`. */
  at?: number[]
  bytes?: string
  /** duplicate: the file copied over it. */
  from?: string
}

const GENERAL: MutationKind[] = ['flip', 'flip', 'flip', 'truncate', 'truncate', 'append', 'delete', 'duplicate', 'dev-zero', 'sparse-8g', 'fifo', 'directory', 'empty']

function kindsFor(file: string): MutationKind[] {
  if (file.endsWith('.json') || file.endsWith('.jwk') || file.endsWith('.jsonl') || file.endsWith('.sig') || !file.includes('.')) return [...GENERAL, 'deep-json', 'huge-json']
  if (file.endsWith('.parquet')) return [...GENERAL, 'parquet-footer', 'thrift-sizes']
  if (file.endsWith('.zst')) return [...GENERAL, 'zstd-header']
  return GENERAL
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex')

/** Chooses a mutation of one of `target`'s files with `rand`. */
export async function chooseMutation(target: Target, fixtureDir: string, rand: () => number): Promise<Mutation> {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!
  const file = pick(target.files)
  // Standard input from a FIFO no one writes never starts: no command can tell that from a slow writer.
  const kind = pick(kindsFor(file).filter((k) => !(k === 'fifo' && target.stdin === file)))
  const size = (await lstat(join(fixtureDir, file))).size
  const randomBytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(rand() * 256))
  switch (kind) {
    case 'flip': {
      const at: number[] = []
      for (let i = 0, n = 1 + Math.floor(rand() * 8); i < n && size > 0; i++) at.push(Math.floor(rand() * size), 1 + Math.floor(rand() * 255))
      return { kind, file, at }
    }
    case 'truncate':
      return { kind, file, at: [Math.floor(rand() * size)] }
    case 'append':
      return { kind, file, bytes: hex(randomBytes(1 + Math.floor(rand() * (rand() < 0.2 ? 1 << 20 : 4096)))) }
    case 'duplicate':
      return { kind, file, from: pick(target.files.filter((f) => f !== file).concat(file)) }
    case 'thrift-sizes': {
      // A varint of 2^32 and more where the footer's lengths and counts are read.
      const at = size > 16 ? [Math.max(0, size - 8 - 1 - Math.floor(rand() * Math.min(size - 8, 512)))] : [0]
      return { kind, file, at, bytes: hex(Uint8Array.of(0x19, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x0f)) }
    }
    case 'zstd-header':
      return { kind, file, bytes: hex(zstdHugeHeader(rand)) }
    default:
      return { kind, file }
  }
}

/**
 * A zstd frame header that asks for a window of 2^31 or more and declares a content size of 2^62, then
 * a block header claiming the largest block: what a decoder must refuse before allocating.
 */
function zstdHugeHeader(rand: () => number): Uint8Array {
  const single = rand() < 0.5
  // Frame header descriptor: content size 8 bytes (11......), single segment or not, no checksum, no dict id.
  const fhd = 0b1100_0000 | (single ? 0b0010_0000 : 0)
  const window = single ? [] : [0xf8 | Math.floor(rand() * 8)] // exponent 31 (+10): 2^41 window
  const size = [0, 0, 0, 0, 0, 0, 0, 0x40] // 2^62, little-endian
  const block = [0xfc, 0xff, 0x0f] // last block? no; raw; size 2^21 - 1 (above the 128 KiB maximum)
  return Uint8Array.of(0x28, 0xb5, 0x2f, 0xfd, fhd, ...window, ...size, ...block)
}

/** Does `m` to the case's copy of the fixture in `dir` (whose files are hard links: never written in place). */
export async function applyMutation(dir: string, m: Mutation): Promise<void> {
  const path = join(dir, m.file)
  const original = (await lstat(path)).isFile() ? await readFile(path) : Buffer.alloc(0)
  const replace = async (bytes: Uint8Array) => {
    await unlink(path)
    await writeFile(path, bytes)
  }
  switch (m.kind) {
    case 'flip': {
      const b = Buffer.from(original)
      for (let i = 0; i + 1 < (m.at ?? []).length; i += 2) b[m.at![i]!]! ^= m.at![i + 1]!
      return replace(b)
    }
    case 'truncate':
      return replace(original.subarray(0, m.at![0]))
    case 'append':
      return replace(Buffer.concat([original, Buffer.from(m.bytes!, 'hex')]))
    case 'delete':
      return unlink(path)
    case 'duplicate':
      return replace(await readFile(join(dir, m.from!)))
    case 'dev-zero':
      await unlink(path)
      return symlink('/dev/zero', path)
    case 'sparse-8g':
      await replace(new Uint8Array(0))
      return truncate(path, 8 * 2 ** 30)
    case 'fifo':
      await unlink(path)
      return mkfifo(path)
    case 'directory':
      await unlink(path)
      await mkdir(path)
      return
    case 'empty':
      return replace(new Uint8Array(0))
    case 'deep-json':
      return replace(Buffer.from('['.repeat(2_000_000)))
    case 'huge-json':
      // Past every whole-file limit (16 MiB), and valid JSON: a limit, not a parse error, must stop it.
      return replace(Buffer.from(`{"a":"${'x'.repeat(20 * 2 ** 20)}"}`))
    case 'parquet-footer': {
      // The footer's length says 4 GiB - 16: far more than the file, and than any limit.
      const b = Buffer.from(original)
      if (b.length >= 8) b.writeUInt32LE(0xfffffff0, b.length - 8)
      return replace(b)
    }
    case 'thrift-sizes': {
      const b = Buffer.from(original)
      Buffer.from(m.bytes!, 'hex').copy(b, m.at![0]!)
      return replace(b)
    }
    case 'zstd-header':
      return replace(Buffer.concat([Buffer.from(m.bytes!, 'hex'), original.subarray(0, 64)]))
  }
}

function mkfifo(path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('mkfifo', [path], { stdio: 'ignore' })
    p.on('error', reject)
    p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`mkfifo ${path}: exit ${code}`))))
  })
}

/** The fixture's files as hard links in `to` (directories made): a case's copy at no cost in bytes. */
async function linkTree(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true })
  for (const e of await readdir(from, { withFileTypes: true })) {
    if (e.isDirectory()) await linkTree(join(from, e.name), join(to, e.name))
    else await link(join(from, e.name), join(to, e.name))
  }
}

// ---------------------------------------------------------------------------------------------------
// Running a case

export interface Outcome {
  target: string
  mutation: Mutation
  code: number | null
  signal: NodeJS.Signals | null
  wallS: number
  rssMb: number
  anomalies: string[]
}

let runs = 0

/** Output kept of a run; more is itself an anomaly (a report must not flood). */
const MAX_OUTPUT_BYTES = 16 * 2 ** 20

/**
 * Runs the CLI with `args` in `cwd`, its peak RSS taken by the exit hook (scripts/fuzz-rss.mjs) and, while it
 * runs, from /proc; killed past the wall-time limit or twice the RSS limit.
 */
export function runCase(args: string[], o: { cwd: string; env?: Record<string, string>; stdin?: string; limits: Limits }): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; wallS: number; rssMb: number; killed?: string }> {
  return new Promise((resolve, reject) => {
    const rssFile = join(o.cwd, `.fuzz-rss-${process.pid}-${runs++}`)
    const child = spawnCli(args, {
      cwd: o.cwd,
      env: { ...o.env, PIPE_FUZZ_RSS: rssFile },
      stdio: [o.stdin !== undefined ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    }, ['--import', pathToFileURL(RSS_HOOK).href])
    const started = performance.now()
    let peakKb = 0
    let killed: string | undefined
    const out: Buffer[] = []
    const err: Buffer[] = []
    let outBytes = 0
    const take = (into: Buffer[]) => (d: Buffer) => {
      outBytes += d.length
      if (outBytes <= MAX_OUTPUT_BYTES) into.push(d)
      else if (!killed) {
        killed = `more than ${MAX_OUTPUT_BYTES} bytes of output`
        child.kill('SIGKILL')
      }
    }
    child.stdout!.on('data', take(out))
    child.stderr!.on('data', take(err))
    if (o.stdin !== undefined) {
      child.stdin!.on('error', () => undefined) // the command may stop reading at a limit
      const feeder = spawn('cat', [o.stdin], { stdio: ['ignore', 'pipe', 'ignore'] })
      feeder.stdout.pipe(child.stdin!)
      feeder.on('error', () => undefined)
      child.on('close', () => feeder.kill('SIGKILL'))
    }
    // env(1) execs node, so the child's pid is node's: its /proc status gives the peak so far.
    const poll = setInterval(() => {
      try {
        const status = readFileSync(`/proc/${child.pid}/status`, 'utf8')
        const hwm = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0)
        if (hwm > peakKb) peakKb = hwm
        if (hwm > 2 * o.limits.rssMb * 1024 && !killed) {
          killed = `peak RSS past ${2 * o.limits.rssMb} MB`
          child.kill('SIGKILL')
        }
      } catch {
        // The process has ended.
      }
    }, 50)
    const timer = setTimeout(() => {
      killed ??= `still running after ${o.limits.wallS} s`
      child.kill('SIGKILL')
    }, o.limits.wallS * 1000 + 2000)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearInterval(poll)
      clearTimeout(timer)
      const wallS = (performance.now() - started) / 1000
      try {
        peakKb = Math.max(peakKb, Number(readFileSync(rssFile, 'utf8')))
        rmSync(rssFile)
      } catch {
        // No exit hook ran (a kill or a crash): the polled peak stands.
      }
      resolve({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), wallS, rssMb: peakKb / 1024, ...(killed ? { killed } : {}) })
    })
  })
}

/** What makes a run an anomaly. */
export function anomaliesOf(r: Awaited<ReturnType<typeof runCase>>, json: boolean, limits: Limits): string[] {
  const found: string[] = []
  if (r.killed) found.push(`killed: ${r.killed}`)
  if (r.signal) found.push(`ended by ${r.signal}`)
  else if (r.code === null || ![0, 1, 2].includes(r.code)) found.push(`exit ${r.code}`)
  if (r.wallS > limits.wallS) found.push(`wall ${r.wallS.toFixed(1)} s > ${limits.wallS} s`)
  if (r.rssMb > limits.rssMb) found.push(`peak RSS ${r.rssMb.toFixed(0)} MB > ${limits.rssMb} MB`)
  if (/^\s+at .+[:(].*\d+:\d+\)?$/m.test(r.stderr)) found.push(`stack trace: ${r.stderr.split('\n').slice(0, 3).join(' / ')}`)
  if (/FATAL ERROR|heap out of memory|Maximum call stack|\(internal\)\s*$/m.test(r.stderr) || /"code":"internal"/.test(r.stdout)) found.push(`internal error: ${r.stderr.trim().slice(0, 300)}`)
  if (json && !r.killed) {
    try {
      const doc = JSON.parse(r.stdout) as unknown
      if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) found.push('--json output is not one object')
    } catch {
      found.push(`--json output does not parse: ${r.stdout.slice(0, 200)}`)
    }
  }
  return found
}

/** Runs one case: the fixture linked into `caseDir`, the mutation done, the command run and judged. */
export async function fuzzCase(fixtures: string, target: Target, m: Mutation, caseDir: string, limits: Limits): Promise<Outcome> {
  await linkTree(join(fixtures, target.fixture), caseDir)
  await applyMutation(caseDir, m)
  const r = await runCase(target.args(caseDir), {
    cwd: caseDir, limits,
    ...(target.env ? { env: target.env(caseDir) } : {}),
    ...(target.stdin !== undefined ? { stdin: join(caseDir, target.stdin) } : {}),
  })
  return { target: target.name, mutation: m, code: r.code, signal: r.signal, wallS: r.wallS, rssMb: r.rssMb, anomalies: anomaliesOf(r, target.json, limits) }
}

/** Keeps an anomaly's case as a vector: its mutation (replayable from the fixtures) and the mutated bytes when small. */
async function keepVector(dir: string, caseDir: string, o: Outcome, name: string): Promise<void> {
  const at = join(dir, name)
  await mkdir(at, { recursive: true })
  await writeFile(join(at, 'case.json'), JSON.stringify({ target: o.target, mutation: o.mutation, anomalies: o.anomalies, code: o.code, signal: o.signal, wall_s: o.wallS, rss_mb: o.rssMb }, null, 2) + '\n')
  const mutated = join(caseDir, o.mutation.file)
  const st = await lstat(mutated).catch(() => undefined)
  if (st?.isFile() && st.size <= 2 ** 20) await cp(mutated, join(at, 'mutated.bin'))
}

// ---------------------------------------------------------------------------------------------------
// A run

export interface FuzzOptions {
  cases: number
  seed: number
  jobs: number
  only?: string
  /** Where anomalies are kept (default test/vectors/hostile); null keeps none. */
  vectors?: string | null
  limits?: Limits
  log?: (line: string) => void
}

export interface FuzzReport { cases: number; anomalies: Outcome[]; maxRssMb: number; maxWallS: number; byTarget: Record<string, number>; slowest?: Outcome; largest?: Outcome }

/** The cases of a run, the same for the same seed: case i of seed s always does the same thing. */
export async function fuzz(o: FuzzOptions): Promise<FuzzReport> {
  const limits = o.limits ?? LIMITS
  const work = await mkdtemp(join(tmpdir(), 'pipe-fuzz-'))
  try {
    const fixtures = join(work, 'fixtures')
    const targets = (await makeFixtures(fixtures)).filter((t) => !o.only || t.name === o.only)
    if (targets.length === 0) throw new Error(`fuzz: no target named ${o.only}`)
    const report: FuzzReport = { cases: 0, anomalies: [], maxRssMb: 0, maxWallS: 0, byTarget: {} }
    let next = 0
    const worker = async () => {
      for (let i = next++; i < o.cases; i = next++) {
        const rand = seededRandom(o.seed * 1_000_003 + i)
        const target = targets[i % targets.length]!
        const m = await chooseMutation(target, join(fixtures, target.fixture), rand)
        const caseDir = join(work, `case-${i}`)
        const outcome = await fuzzCase(fixtures, target, m, caseDir, limits)
        report.cases++
        report.byTarget[target.name] = (report.byTarget[target.name] ?? 0) + 1
        if (outcome.rssMb > report.maxRssMb) [report.maxRssMb, report.largest] = [outcome.rssMb, outcome]
        if (outcome.wallS > report.maxWallS) [report.maxWallS, report.slowest] = [outcome.wallS, outcome]
        if (outcome.anomalies.length > 0) {
          report.anomalies.push(outcome)
          o.log?.(`ANOMALY case ${i} (seed ${o.seed}) ${target.name} ${m.kind} ${m.file}: ${outcome.anomalies.join('; ')}`)
          if (o.vectors !== null) await keepVector(o.vectors ?? VECTORS, caseDir, outcome, `${target.name}-seed${o.seed}-case${i}`)
        }
        await rm(caseDir, { recursive: true, force: true })
        if (report.cases % 100 === 0) o.log?.(`${report.cases} cases, ${report.anomalies.length} anomalies, max RSS ${report.maxRssMb.toFixed(0)} MB, max wall ${report.maxWallS.toFixed(1)} s`)
      }
    }
    await Promise.all(Array.from({ length: Math.max(1, o.jobs) }, worker))
    return report
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

/** `fuzz cases N anomalies A max-rss-mb M max-wall-s W`: the line the issue and CI read. */
export function summaryLine(r: FuzzReport): string {
  return `fuzz cases ${r.cases} anomalies ${r.anomalies.length} max-rss-mb ${r.maxRssMb.toFixed(0)} max-wall-s ${r.maxWallS.toFixed(1)}`
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const flag = (name: string, fallback: string) => {
    const i = process.argv.indexOf(`--${name}`)
    return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback
  }
  const only = flag('only', '')
  const report = await fuzz({
    cases: Number(flag('cases', '2000')),
    seed: Number(flag('seed', '1')),
    jobs: Number(flag('jobs', '2')),
    ...(only ? { only } : {}),
    vectors: flag('keep-vectors', VECTORS),
    log: (line) => console.log(line),
  })
  console.log(`by target: ${Object.entries(report.byTarget).map(([k, v]) => `${k} ${v}`).join(', ')}`)
  const which = (o?: Outcome) => (o ? `${o.target} ${o.mutation.kind} ${o.mutation.file} (exit ${o.code})` : '-')
  console.log(`slowest: ${which(report.slowest)}, ${report.maxWallS.toFixed(1)} s; largest: ${which(report.largest)}, ${report.maxRssMb.toFixed(0)} MB`)
  console.log(summaryLine(report))
  process.exitCode = report.anomalies.length > 0 ? 1 : 0
}


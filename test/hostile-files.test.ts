/**
 * The hostile files a probe found the product weak on (issue "Hostile files"), each refused cleanly: a
 * file that is not what its name says (a link to /dev/zero, a FIFO, a directory, an 8 GiB sparse file),
 * endless input, a file that floods the report, an empty raw file, and pack-check loading its Parquet
 * modules under load. Each run is the built CLI, judged as the fuzz harness judges (scripts/fuzz-files.ts):
 * exit 0, 1 or 2, no signal, no stack trace, no `internal` code, JSON that parses, and here a peak RSS
 * under 200 MB.
 */
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { compress, decompress } from 'zstd-napi'
import { blake3 } from 'hash-wasm'
import { anomaliesOf, REPO, runCase, type Limits } from '../scripts/fuzz-files.js'
import { childEnv } from './helpers/io.js'
import { sealHour, testKey, trade, writeManifest } from './helpers/sealed-hour.js'
import { writeJwksFile } from '../src/formats/record/keys/keys.js'
import { seededRandom } from '../src/sim/random.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

/** The issue's bound for each of these cases, in memory; wall time is reported (HOSTILE_TIMES=1), and held to the harness's hang limit. */
const LIMITS: Limits = { rssMb: 200, wallS: 30 }
const CLI = join(REPO, 'dist', 'bin', 'pipe.js')
const dir = mkdtempSync(join(tmpdir(), 'pipe-hostile-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

const GOLDEN_ROOT = join(REPO, 'test', 'golden', 'record')
const HOUR_DIR = join('root', 'recorder=golden', 'venue=binance', 'channel=trades', 'date=2026-10-04', 'hour=08')
const DAY_DIR = join('root', 'recorder=golden', 'venue=binance', 'channel=trades', 'date=2026-10-04')

let copies = 0
/** A fresh copy of the golden sealed day (root/ and jwks.json). */
function goldenCopy(): string {
  const at = join(dir, `golden-${copies++}`)
  cpSync(GOLDEN_ROOT, at, { recursive: true })
  return at
}

function replaceWith(path: string, make: (path: string) => void): void {
  rmSync(path, { recursive: true, force: true })
  make(path)
}
const devZero = (path: string) => symlinkSync('/dev/zero', path)
const sparse8g = (path: string) => { writeFileSync(path, ''); truncateSync(path, 8 * 2 ** 30) }
const fifo = (path: string) => {
  if (spawnSync('mkfifo', [path]).status !== 0) throw new Error(`mkfifo ${path} failed`)
}

interface Json { ok?: boolean; findings?: { code: string; check?: number; path?: string; line?: number | null; detail?: string }[]; findings_left_out?: number; error?: { code: string } }

/** Runs `pipe ARGS`, asserts a clean end, and gives the exit code, one-line stderr and parsed --json output. */
async function hostile(t: Test, what: string, args: string[], o: { stdin?: string } = {}): Promise<{ code: number | null; stderr: string; json: Json | undefined }> {
  const r = await runCase(args, { cwd: dir, limits: LIMITS, ...(o.stdin ? { stdin: o.stdin } : {}) })
  const json = args.includes('--json')
  t.same(anomaliesOf(r, json, LIMITS), [], `${what}: ended cleanly (exit ${r.code}, ${r.wallS.toFixed(2)} s, ${r.rssMb.toFixed(0)} MB)`)
  if (process.env.HOSTILE_TIMES) t.comment(`${what}: wall ${r.wallS.toFixed(2)} s, peak RSS ${r.rssMb.toFixed(0)} MB`)
  return { code: r.code, stderr: r.stderr, json: json && r.stdout ? (JSON.parse(r.stdout) as Json) : undefined }
}

const verifyArgs = (root: string) => ['run', 'verify', '--root', join(root, 'root'), '--keys', join(root, 'jwks.json'), '--json']

t.test('verify: manifests and signatures that are links to /dev/zero, FIFOs or directories are findings, read no further', async (t) => {
  const cases: { what: string; file: string; make: (p: string) => void; check: number; code: string }[] = [
    { what: "an hour's manifest.json.sig -> /dev/zero", file: join(HOUR_DIR, 'manifest.json.sig'), make: devZero, check: 6, code: 'file.not-regular' },
    { what: "a day's manifest.json -> /dev/zero", file: join(DAY_DIR, 'manifest.json'), make: devZero, check: 1, code: 'file.not-regular' },
    { what: "an hour's manifest.json as a FIFO", file: join(HOUR_DIR, 'manifest.json'), make: fifo, check: 1, code: 'file.not-regular' },
    { what: "an hour's manifest.json.sig as a directory", file: join(HOUR_DIR, 'manifest.json.sig'), make: (p) => mkdirSync(p), check: 6, code: 'file.not-regular' },
    { what: "a day's manifest.json of 20 MiB", file: join(DAY_DIR, 'manifest.json'), make: (p) => writeFileSync(p, `{"a":"${'x'.repeat(20 * 2 ** 20)}"}`), check: 1, code: 'file.too-large' },
  ]
  for (const c of cases) {
    const root = goldenCopy()
    replaceWith(join(root, c.file), c.make)
    const r = await hostile(t, c.what, verifyArgs(root))
    t.equal(r.code, 1, `${c.what}: the data fails`)
    t.ok(r.json?.findings?.some((f) => f.check === c.check && f.code === c.code && f.path === join(root, c.file)), `${c.what}: ${c.code} under check ${c.check} on that file`)
  }
})

t.test('verify: an 8 GiB sparse file in place of a raw file or a table is read no further than its listed size', async (t) => {
  for (const name of ['raw.jsonl.zst', 'trades.parquet']) {
    const root = goldenCopy()
    replaceWith(join(root, HOUR_DIR, name), sparse8g)
    const r = await hostile(t, `${name} as 8 GiB`, verifyArgs(root))
    t.equal(r.code, 1)
    const of = (code: string) => r.json?.findings?.find((x) => x.path === join(root, HOUR_DIR, name) && x.code === code)
    t.match(of('file.size'), { check: 2, detail: /^the file has 8589934592 bytes, the manifest lists \d+: it is read no further than \d+ bytes$/ }, `${name}: file.size`)
    t.match(of('file.blake3'), { check: 2, detail: /^the blake3 of the file's first \d+ bytes is [0-9a-f]{64}, the manifest lists [0-9a-f]{64}$/ }, `${name}: its listed length hashed`)
  }
})

t.test('inputs the user names that are not regular files: exit 2 with input.not-regular, at once', async (t) => {
  const root = goldenCopy()
  replaceWith(join(root, 'jwks.json'), devZero)
  const keys = await hostile(t, 'verify --keys -> /dev/zero', verifyArgs(root))
  t.equal(keys.code, 2)
  t.equal(keys.json?.error?.code, 'input.not-regular')
  const pipeFifo = join(dir, 'a-fifo')
  fifo(pipeFifo)
  for (const [what, args] of [
    ['verify-raw --file /dev/zero', ['run', 'verify-raw', '--file', '/dev/zero', '--json']],
    ['verify-raw --file FIFO', ['run', 'verify-raw', '--file', pipeFifo, '--json']],
    ['verify-raw --file DIR', ['run', 'verify-raw', '--file', dir, '--json']],
    ['journal-import --from /dev/zero', ['run', 'journal-import', '--from', '/dev/zero', '--journal', join(dir, 'j'), '--json']],
    ['pipe run FIFO.json', ['run', `${pipeFifo}.json`]],
  ] as const) {
    if (what === 'pipe run FIFO.json') fifo(`${pipeFifo}.json`)
    const r = await hostile(t, what, [...args])
    t.equal(r.code, 2, `${what}: exit 2`)
    if (r.json) t.equal(r.json.error?.code, 'input.not-regular', `${what}: input.not-regular`)
    else t.match(r.stderr, /^pipe: .*: a FIFO, not a regular file \(input\.not-regular\)\n$/, `${what}: one line naming the file and the rule`)
  }
})

t.test('standard input is read to its end, or to --max-bytes', async (t) => {
  const big = join(dir, 'three-mib.jsonl')
  writeFileSync(big, Buffer.alloc(3 * 2 ** 20, 0x20))
  const r = await hostile(t, 'verify-raw --max-bytes 1 MiB on 3 MiB of stdin', ['run', 'verify-raw', '--max-bytes', String(2 ** 20), '--json'], { stdin: big })
  t.equal(r.code, 1, 'more input than allowed: the data fails')
  t.equal(r.json?.error?.code, 'input.too-large')
})

t.test('a small file that expands to two million empty lines reports 1,000 findings of its code and counts the rest', async (t) => {
  // 32 KiB of noise on the first line keeps the ratio (about 60:1) under the zstd bomb guard's 1,000:1.
  const rand = seededRandom(36)
  const noise = Buffer.from(Array.from({ length: 32 * 1024 }, () => 0x21 + Math.floor(rand() * 94)))
  const lines = 2 * 2 ** 20 + 1
  const raw = join(dir, 'newlines.jsonl.zst')
  writeFileSync(raw, compress(Buffer.concat([noise, Buffer.alloc(lines, 0x0a)]), { compressionLevel: 19 }))
  t.ok(readFileSync(raw).length < 64 * 1024, `under 64 KB compressed (${readFileSync(raw).length} bytes)`)
  const r = await hostile(t, '2 MiB of newlines', ['run', 'verify-raw', '--file', raw, '--json'])
  t.equal(r.code, 1)
  const notJson = r.json?.findings?.filter((f) => f.code === 'raw.not-json') ?? []
  t.equal(notJson.length, 1000, 'the first 1,000 raw.not-json')
  t.equal(r.json?.findings?.length, 1000, 'and nothing else')
  t.equal(r.json?.findings_left_out, lines - 1000, 'the rest counted')
  const few = await hostile(t, '--max-findings 3', ['run', 'verify-raw', '--file', raw, '--max-findings', '3', '--json'])
  t.equal(few.json?.findings?.length, 3)
  t.equal(few.json?.findings_left_out, lines - 3)
  const text = await runCase(['run', 'verify-raw', '--file', raw, '--max-findings', '5'], { cwd: dir, limits: LIMITS })
  t.match(text.stdout, new RegExp(`\\.\\.\\. ${lines - 5} findings left out, past 5 of their code \\(--max-findings\\)\\n`), 'the text report says how many were left out')
  t.ok(text.stdout.length < 4096, 'and stays short')
})

t.test('an empty raw file means the same to verify-raw --file and to verify: raw.not-zstd', async (t) => {
  const { key, jwks } = await testKey(3)
  const root = join(dir, 'empty-raw')
  const H = BigInt(Date.UTC(2026, 9, 3, 14)) * 1_000_000n
  const sealed = await sealHour({ root, hourStart: H, frames: [trade(H + 1_000_000_000n, 1)], previous: null, key })
  const rawPath = join(sealed.dir, 'raw.jsonl.zst')
  writeFileSync(rawPath, '')
  const m = sealed.manifest
  const entry = m.files.find((f) => f.name === 'raw.jsonl.zst')!
  entry.size = 0
  entry.blake3 = await blake3(new Uint8Array(0))
  await writeManifest(sealed.dir, m, key)
  const keysPath = join(dir, 'empty-raw-jwks.json')
  await writeJwksFile(keysPath, jwks)

  const file = await hostile(t, 'verify-raw --file of an empty raw.jsonl.zst', ['run', 'verify-raw', '--file', rawPath, '--json'])
  t.equal(file.code, 1)
  t.same(file.json?.findings, [{ line: null, code: 'raw.not-zstd', detail: 'the raw file is empty, not a zstd frame' }])
  const v = await hostile(t, 'verify of an hour whose raw file is empty', ['run', 'verify', '--root', root, '--keys', keysPath, '--json'])
  t.equal(v.code, 1)
  t.ok(v.json?.findings?.some((f) => f.check === 3 && f.code === 'raw.not-zstd' && f.path === rawPath), 'verify: raw.not-zstd on the same file')
  const stdin = await hostile(t, 'verify-raw of empty stdin', ['run', 'verify-raw', '--json'], { stdin: rawPath })
  t.equal(stdin.code, 0, 'empty stdin is zstd -dc of an hour of no frames: 0 lines')
  const plainName = join(dir, 'empty-decompressed.jsonl')
  writeFileSync(plainName, '')
  const plain = await hostile(t, 'verify-raw --file of an empty .jsonl', ['run', 'verify-raw', '--file', plainName, '--json'])
  t.equal(plain.code, 0, 'and so is an empty file not named as the stored raw file (test/vectors/raw/empty-plain)')
  const notZstd = join(dir, 'plain-named.jsonl.zst')
  cpSync(join(REPO, 'test', 'vectors', 'raw', 'valid', 'input.jsonl.zst'), notZstd)
  writeFileSync(notZstd, decompress(readFileSync(notZstd)))
  const named = await hostile(t, 'verify-raw --file of a plain file named .zst', ['run', 'verify-raw', '--file', notZstd, '--json'])
  t.equal(named.code, 1)
  t.same(named.json?.findings, [{ line: null, code: 'raw.not-zstd', detail: 'the raw file does not start with the zstd magic number' }], 'a file named as the stored raw file must be zstd, as verify says of raw.jsonl.zst')
})

t.test('pack-check loads its Parquet modules by import: 200 runs under parallel load all pass', async (t) => {
  const store = join(REPO, 'test', 'golden', 'minimal', 'store')
  const runs = 200
  const parallel = 8
  const codes = new Map<string, number>()
  let next = 0
  const worker = async () => {
    for (let i = next++; i < runs; i = next++) {
      const code = await new Promise<string>((resolve) => {
        const child = spawn('env', ['-u', 'NODE_OPTIONS', process.execPath, CLI, 'run', 'pack-check', store, '--level', '1'], { env: childEnv(), stdio: ['ignore', 'ignore', 'pipe'] })
        let stderr = ''
        child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
        child.on('close', (c, signal) => resolve(signal ? `${signal}: ${stderr.slice(0, 200)}` : c === 0 ? '0' : `exit ${c}: ${stderr.slice(0, 200)}`))
      })
      codes.set(code, (codes.get(code) ?? 0) + 1)
    }
  }
  await Promise.all(Array.from({ length: parallel }, worker))
  t.same(Object.fromEntries(codes), { 0: runs }, `every run exits 0 (${[...codes].map(([c, n]) => `${n} × ${c}`).join(', ')})`)
})

// Each finding above is the changed file's own: the golden day verifies as it is.
t.test('the golden copy verifies before any change', async (t) => {
  const r = await hostile(t, 'golden day', verifyArgs(goldenCopy()))
  t.equal(r.code, 0)
})

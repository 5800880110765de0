/**
 * Hostile input for `pipe run verify-raw`, generated at test time in a temp dir (too big to commit):
 * zstd bombs, 100 MB lines, truncated frames, and lines built to break a parser (invalid UTF-8, a BOM,
 * duplicate keys, numbers past 2^53, lone surrogates, deep nesting). Each must end in its finding or
 * error code, never in a crash (no signal, no stack trace), quickly and with bounded memory: the child's
 * peak RSS is measured with /usr/bin/time when present, else by a wrapper reading process.resourceUsage().
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, createWriteStream, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, type WriteStream } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import canonicalize from 'canonicalize'
import t from 'tap'
import { CompressStream, Compressor } from 'zstd-napi'
import { rawSampleLines } from '../src/sim/raw-sample.js'

/** Nine-digit RFC 3339 UTC (the record format's one encoding of an instant), written here so that the
 * test's input does not depend on the code under test. */
function nsToTime(ns: bigint): string {
  const sec = ns / 1_000_000_000n - (ns % 1_000_000_000n < 0n ? 1n : 0n)
  const frac = ns - sec * 1_000_000_000n
  return new Date(Number(sec) * 1000).toISOString().slice(0, 19) + '.' + frac.toString().padStart(9, '0') + 'Z'
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const CLI = join(ROOT, 'dist/bin/pipe.js')
const GNU_TIME = '/usr/bin/time'
const RSS_CAP_KB = 300 * 1024
const HOUR_START_S = Date.UTC(2026, 9, 3, 14) / 1000
const MiB = 1 << 20

/**
 * The CLI runs as users run it, without tap's process-info hook: tap puts it into NODE_OPTIONS of every
 * process the test spawns, whatever env is passed (it costs about 1 s of CPU and 40 MB a process), so
 * the children start through `env -u NODE_OPTIONS`.
 */
const LAUNCH = ['env', '-u', 'NODE_OPTIONS']

interface Run { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; maxRssKb: number; wallMs: number }

const tmp = mkdtempSync(join(tmpdir(), 'verify-raw-hostile-'))
t.teardown(() => rmSync(tmp, { recursive: true, force: true }))

/** Reports the peak RSS of the CLI where GNU time is missing. */
const WRAPPER = join(tmp, 'maxrss.mjs')
writeFileSync(WRAPPER, [
  "import { writeFileSync } from 'node:fs'",
  "import { pathToFileURL } from 'node:url'",
  'const [out, cli, ...rest] = process.argv.slice(2)',
  'process.argv = [process.argv[0], cli, ...rest]',
  "process.on('exit', () => writeFileSync(out, String(process.resourceUsage().maxRSS)))",
  'await import(pathToFileURL(cli).href)',
].join('\n'))

let runs = 0
/** Runs the CLI with its peak RSS measured; stdin is a file given as the fd, or a file piped through cat. */
function runMeasured(args: string[], stdin?: { file: string } | { cat: string }, timeoutMs = 60_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const rssFile = join(tmp, `rss-${runs++}`)
    const argv = existsSync(GNU_TIME)
      ? [GNU_TIME, '-f', '%M %U %S', '-o', rssFile, process.execPath, CLI, ...args]
      : [process.execPath, WRAPPER, rssFile, CLI, ...args]
    let fd: number | undefined
    if (stdin && 'file' in stdin) fd = openSync(stdin.file, 'r')
    const started = performance.now()
    const child = spawn(LAUNCH[0]!, [...LAUNCH.slice(1), ...argv], { stdio: [fd ?? (stdin ? 'pipe' : 'ignore'), 'pipe', 'pipe'] })
    if (fd !== undefined) closeSync(fd)
    if (stdin && 'cat' in stdin) {
      const cat = spawn('cat', [stdin.cat], { stdio: ['ignore', 'pipe', 'ignore'] })
      child.stdin!.on('error', () => {}) // the CLI stops reading at a cap: EPIPE for cat is expected
      cat.stdout.pipe(child.stdin!)
      cat.on('error', reject)
    }
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout!.on('data', (d: Buffer) => out.push(d))
    child.stderr!.on('data', (d: Buffer) => err.push(d))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const wallMs = performance.now() - started
      let maxRssKb = NaN
      let cpu = ''
      try {
        const [rss, user, sys] = readFileSync(rssFile, 'utf8').trim().split('\n').pop()!.split(' ')
        maxRssKb = Number(rss)
        if (user !== undefined) cpu = ` cpu ${(Number(user) + Number(sys)).toFixed(2)} s`
      } catch { /* reported below */ }
      if (process.env.HOSTILE_TIMES) process.stderr.write(`# ${args.join(' ').slice(0, 80)}: wall ${Math.round(wallMs)} ms${cpu} rss ${maxRssKb} KB\n`)
      resolve({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), maxRssKb, wallMs })
    })
  })
}

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0]
type Doc = { findings: { line: number | null; code: string }[]; ok: boolean; lines?: number; elapsed_ms?: number; error?: { code: string } }

/** The checks every hostile run shares: it ended on its own, without a stack trace, in bounded memory. */
function noCrash(t: TapTest, run: Run, what: string): Doc | undefined {
  t.equal(run.signal, null, `${what}: not killed by a signal`)
  t.ok(run.code === 1 || run.code === 2, `${what}: exit 1 or 2 (got ${run.code})`)
  t.notMatch(run.stderr, /^ {4}at /m, `${what}: no stack trace on stderr`)
  t.notMatch(run.stderr, /FATAL ERROR|heap out of memory|Maximum call stack/i, `${what}: no fatal V8 error`)
  t.ok(run.maxRssKb > 0, `${what}: peak RSS measured`)
  t.ok(run.maxRssKb < RSS_CAP_KB, `${what}: peak RSS ${Math.round(run.maxRssKb / 1024)} MB < ${RSS_CAP_KB / 1024} MB`)
  try {
    return JSON.parse(run.stdout) as Doc
  } catch {
    t.fail(`${what}: stdout is one JSON object: ${run.stdout.slice(0, 200)} / ${run.stderr.slice(0, 300)}`)
    return undefined
  }
}

function expectError(t: TapTest, run: Run, code: string, what: string) {
  const doc = noCrash(t, run, what)
  t.equal(doc?.error?.code, code, `${what}: error ${code}`)
  t.match(run.stderr, new RegExp(`^pipe: .*\\(${code.replace(/\./g, '\\.')}\\)\\n$`), `${what}: one stderr line naming ${code}`)
}

const keys = (doc: Doc | undefined) => [...new Set((doc?.findings ?? []).map((f) => `${f.line === null ? 'file' : f.line}:${f.code}`))].sort()

function write(path: string, data: Buffer | string) {
  writeFileSync(path, data)
  return path
}

/** Streams chunks into a file, honouring backpressure. */
async function writeChunks(path: string, chunks: Iterable<Buffer>, via?: CompressStream): Promise<string> {
  const file = createWriteStream(path)
  const sink: NodeJS.WritableStream = via ?? file
  if (via) via.pipe(file)
  const done = new Promise<void>((resolve, reject) => { file.on('finish', resolve); file.on('error', reject) })
  for (const chunk of chunks) {
    if (!sink.write(chunk)) await new Promise<void>((r) => (via ?? (file as WriteStream)).once('drain', r))
  }
  sink.end()
  await done
  return path
}

function* repeat(chunk: Buffer, times: number, prefix?: Buffer, suffix?: Buffer): Generator<Buffer> {
  if (prefix) yield prefix
  for (let i = 0; i < times; i++) yield chunk
  if (suffix) yield suffix
}

function zstd(data: Buffer, level = 3): Buffer {
  const c = new Compressor()
  c.setParameters({ compressionLevel: level })
  return c.compress(data)
}

/** A canonical envelope at a fixed frame time, with optional changes; canonical JSON text without newline. */
function envelope(extra: Record<string, unknown> = {}, payload = 'frame'): string {
  const ns = BigInt(HOUR_START_S) * 1_000_000_000n + 1_000_000_000n
  return canonicalize({ payload, payload_encoding: 'text', receipts: [{ replica: 'a', connection: 'a-1', receive_time: nsToTime(ns), clock_offset: -5, clock_error_bound: 500 }], ...extra })!
}

if (!existsSync(CLI)) {
  t.fail(`${CLI} is missing: run npm run build first`)
} else {
  t.test('zstd bomb: 4 GiB of zeros in 128 KiB of zstd stops at the ratio cap, quickly and in bounded memory', async (t) => {
    // One frame (RFC 8878) of 32768 RLE blocks, each 4 bytes that stand for 128 KiB of zeros: 4 GiB.
    const blocks = 32768
    const frame = Buffer.alloc(6 + 4 * blocks)
    frame.set([0x28, 0xb5, 0x2f, 0xfd, 0x00, (17 - 10) << 3]) // magic; no content size; window 2^17
    for (let i = 0; i < blocks; i++) {
      const header = (i === blocks - 1 ? 1 : 0) | (1 << 1) | ((1 << 17) << 3) // last?, RLE, 131072 bytes
      frame.writeUIntLE(header, 6 + 4 * i, 3)
      frame[6 + 4 * i + 3] = 0x00
    }
    const bomb = write(join(tmp, 'bomb-4g.zst'), frame)
    const run = await runMeasured(['run', 'verify-raw', '--file', bomb, '--json'])
    expectError(t, run, 'raw.zstd-ratio-cap', '--file')
    const doc = JSON.parse(run.stdout) as Doc
    t.ok((doc.elapsed_ms ?? Infinity) < 5000, `stopped after ${doc.elapsed_ms} ms of pipeline time`)
    const piped = await runMeasured(['run', 'verify-raw', '--json'], { cat: bomb })
    expectError(t, piped, 'raw.zstd-ratio-cap', 'cat bomb |')
    rmSync(bomb)
  })

  // The next two frames are made by libzstd's streaming encoder (zstd-napi), with the zstd CLI's defaults
  // when it reads a pipe: level 3, a checksum, no content size in the header.
  t.test('zstd bomb made by the streaming encoder, as `head -c 64M /dev/zero | zstd -c` (64 MiB of zeros), stops at the ratio cap', async (t) => {
    const bomb = await writeChunks(join(tmp, 'bomb-stream.zst'), repeat(Buffer.alloc(MiB), 64), new CompressStream({ compressionLevel: 3, checksumFlag: true }))
    const run = await runMeasured(['run', 'verify-raw', '--json'], { file: bomb })
    expectError(t, run, 'raw.zstd-ratio-cap', '< bomb')
  })

  t.test('a zstd frame asking for a 2 GiB window (as zstd --long=31 from a pipe makes it) hits the window cap', async (t) => {
    const big = await writeChunks(join(tmp, 'long31.zst'), [Buffer.from(envelope() + '\n')], new CompressStream({ compressionLevel: 3, windowLog: 31, checksumFlag: true }))
    t.equal(readFileSync(big)[5], (31 - 10) << 3, 'the frame header asks for a window of 2^31 bytes')
    expectError(t, await runMeasured(['run', 'verify-raw', '--file', big, '--json']), 'raw.zstd-window-cap', '--long=31')
  })

  t.test('a 100 MB line gives raw.line-too-long in bounded memory, plain and compressed', async (t) => {
    const prefix = Buffer.from('{"payload":"')
    // Line 2 is valid and line 3 fails: line numbers must stay right after the skipped line.
    const suffix = Buffer.from(`","payload_encoding":"text"}\n${envelope()}\n[]\n`)
    const plain = await writeChunks(join(tmp, 'long.jsonl'), repeat(Buffer.alloc(MiB, 0x61), 100, prefix, suffix))
    const r1 = await runMeasured(['run', 'verify-raw', '--file', plain, '--json'])
    const d1 = noCrash(t, r1, 'plain')
    t.equal(r1.code, 1, 'plain: exit 1')
    t.same(keys(d1), ['1:raw.line-too-long', '3:raw.not-object'], 'plain: line 1 is too long, line 2 is fine, line 3 is an array')
    rmSync(plain)

    // Random base64 compresses about 4:3, far under the ratio cap: the decoder must hand the line over.
    const random = Buffer.from(randomBytes(768 * 1024).toString('base64'))
    const zst = await writeChunks(join(tmp, 'long.jsonl.zst'), repeat(random, 100, prefix, suffix), new CompressStream({ compressionLevel: 1 }))
    const r3 = await runMeasured(['run', 'verify-raw', '--file', zst, '--json'])
    const d3 = noCrash(t, r3, 'compressed')
    t.equal(r3.code, 1, 'compressed: exit 1')
    t.same(keys(d3), ['1:raw.line-too-long', '3:raw.not-object'], 'compressed: line 1 is too long, line 2 is fine, line 3 is an array')
    rmSync(zst)
  })

  const sample = Buffer.from([...rawSampleLines({ hourStart: HOUR_START_S, frames: 3000, seed: 5 })].join(''))
  const sampleZst = zstd(sample)

  t.test('a truncated zstd frame gives raw.zstd-truncated', async (t) => {
    const cut = write(join(tmp, 'cut.zst'), sampleZst.subarray(0, Math.floor(sampleZst.length * 0.6)))
    expectError(t, await runMeasured(['run', 'verify-raw', '--file', cut, '--json', '--hour', '2026-10-03T14']), 'raw.zstd-truncated', '--file')
    expectError(t, await runMeasured(['run', 'verify-raw', '--json'], { cat: cut }), 'raw.zstd-truncated', 'cat |')
  })

  t.test('--max-ratio: a file within the default cap fails a lower one', async (t) => {
    t.ok(sample.length > 1.2 * MiB && sample.length / sampleZst.length > 3, `the sample is ${sample.length} bytes at ${(sample.length / sampleZst.length).toFixed(1)}:1`)
    const file = write(join(tmp, 'sample.zst'), sampleZst)
    const ok = await runMeasured(['run', 'verify-raw', '--file', file, '--json', '--hour', '2026-10-03T14', '--rows', '3000'])
    t.equal(ok.code, 0, 'passes with the default cap')
    t.same(keys(JSON.parse(ok.stdout) as Doc), [], 'no findings')
    expectError(t, await runMeasured(['run', 'verify-raw', '--file', file, '--json', '--max-ratio', '2']), 'raw.zstd-ratio-cap', '--max-ratio 2')
  })

  t.test('the size cap of zstd-decode (not a verify-raw option: through a JSON pipeline)', async (t) => {
    const file = write(join(tmp, 'sample-for-size.zst'), sampleZst)
    const pipeline = write(join(tmp, 'size-cap.json'), JSON.stringify({ name: 'size-cap', stages: [
      { stage: 'file', options: { path: file } },
      { stage: 'zstd-decode', options: { maxOutputBytes: 100_000 } },
      { stage: 'split-lines' },
      { stage: 'report' },
    ] }))
    expectError(t, await runMeasured(['run', pipeline, '--json']), 'raw.zstd-size-cap', 'maxOutputBytes 100000')
  })

  t.test('lines built to break a parser give their findings, never a crash', async (t) => {
    const bad = (s: string) => Buffer.from(s)
    const ok = envelope()
    const payloadAt = ok.indexOf('"payload":"frame"') + '"payload":"'.length
    const lines: { bytes: Buffer; expect: string | null | 'any'; what: string }[] = [
      { bytes: Buffer.concat([bad('\ufeff'), bad(envelope())]), expect: 'raw.bom', what: 'a BOM before the first line' },
      { bytes: Buffer.concat([bad(ok.slice(0, payloadAt)), Buffer.alloc(MiB, 0xff), bad(ok.slice(payloadAt + 'frame'.length))]), expect: 'raw.not-utf8', what: '1 MiB of 0xFF inside the payload' },
      { bytes: bad(envelope().replace('"payload":', `"a":{${'"k":1,'.repeat(200_000)}"k":1},"payload":`)), expect: 'raw.duplicate-key', what: 'an object with the key k 200001 times' },
      { bytes: bad(envelope({ x: Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${String(i).padStart(6, '0')}`, i])) })), expect: null, what: '100000 distinct keys in an unknown field (valid)' },
      { bytes: bad(envelope().replace('"clock_error_bound":500', '"clock_error_bound":9007199254740993')), expect: 'raw.number-out-of-range', what: '2^53 + 1 (rounds to 2^53 as a double)' },
      { bytes: bad(envelope().replace('"clock_offset":-5', `"clock_offset":-${'9'.repeat(400)}`)), expect: 'raw.number-out-of-range', what: 'a 400-digit integer' },
      { bytes: bad(envelope().replace('"payload":"frame"', `"payload":"${'\\ud800'.repeat(100_000)}"`)), expect: 'raw.lone-surrogate', what: '100000 lone surrogate escapes' },
      { bytes: bad(envelope().replace('"payload":"frame"', '"payload":"\\ud83d\\ude00"')), expect: 'raw.line-not-canonical', what: 'an escaped surrogate pair (canonical JSON writes the character itself)' },
      { bytes: bad(envelope({ x: 0 }).replace('"x":0', `"x":${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`)), expect: 'raw.too-deep', what: 'arrays nested 1000000 deep' },
      { bytes: bad('{"a":'.repeat(1_000_000)), expect: 'any', what: '1000000 unclosed objects' },
      { bytes: Buffer.from(Array.from({ length: MiB }, (_, i) => ((i * 2654435761) >>> 13) & 0xff).map((b) => (b === 10 ? 11 : b))), expect: 'any', what: '1 MiB of binary noise' },
      { bytes: bad(envelope()), expect: null, what: 'a valid line' },
    ]
    const data = Buffer.concat(lines.flatMap((l) => [l.bytes, Buffer.from('\n')]))
    const plain = write(join(tmp, 'hostile.jsonl'), data)
    // Built to break parsers, not to be realistic: it compresses far past the default 1000:1 ratio cap.
    const zst = write(join(tmp, 'hostile.jsonl.zst'), zstd(data))
    for (const [what, run] of [['plain', await runMeasured(['run', 'verify-raw', '--file', plain, '--json', '--rows', String(lines.length)])], ['compressed, piped', await runMeasured(['run', 'verify-raw', '--json', '--rows', String(lines.length), '--max-ratio', '1000000'], { cat: zst })]] as const) {
      const doc = noCrash(t, run, what)
      t.equal(run.code, 1, `${what}: exit 1`)
      t.equal(doc?.lines, lines.length, `${what}: counts ${lines.length} lines`)
      lines.forEach((l, i) => {
        const codes = (doc?.findings ?? []).filter((f) => f.line === i + 1).map((f) => f.code)
        if (l.expect === null) t.same(codes, [], `${what}: line ${i + 1}, ${l.what}: no finding`)
        else if (l.expect === 'any') t.ok(codes.length > 0, `${what}: line ${i + 1}, ${l.what}: a finding (${codes.join(', ')})`)
        else t.ok(codes.includes(l.expect), `${what}: line ${i + 1}, ${l.what}: ${l.expect} (got ${codes.join(', ') || 'none'})`)
      })
      t.same((doc?.findings ?? []).filter((f) => f.line === null || f.line > lines.length), [], `${what}: no other findings`)
    }
  })
}

/**
 * Conformance of `pipe run verify-raw` against the vectors in test/vectors/raw (made by make.ts there):
 * runs the built CLI on every vector, by --file and for some through stdin (a file, a pipe, and the
 * output of a real `zstd -dc`), and checks the exit code and the exact set of (line, code) findings.
 * Also: the vectors' hashes, the text report and its cap of 100 findings, and b3sum against --blake3.
 * The subtests that spawn zstd or b3sum are skipped without them, and fail under PIPE_REQUIRE_TOOLS=1
 * (test/helpers/tools.ts).
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { hasTool, needs } from './helpers/tools.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const CLI = join(ROOT, 'dist/bin/pipe.js')
const VECTORS = join(ROOT, 'test/vectors/raw')
const CONCURRENCY = 2

/**
 * The CLI runs as users run it, without tap's process-info hook: tap puts it into NODE_OPTIONS of every
 * process the test spawns, whatever env is passed (it costs about 1 s of CPU and 40 MB a process), so
 * the children start through `env -u NODE_OPTIONS`.
 */
const LAUNCH = ['env', '-u', 'NODE_OPTIONS']

/** The type of a tap test object, as the callbacks of t.test receive it. */
type TapTest = Parameters<Parameters<typeof t.test>[0]>[0]

interface Expected {
  exit: number
  args: string[]
  findings?: { line: number | null; code: string }[]
  lines?: number
  error?: string
}

interface Vector { name: string; dir: string; input: string; compressed: boolean; expected: Expected; readme: string }

interface Run { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }

type Stdin = { file: string } | { pipeFile: string } | { zstdDecompress: string } | { shell: string } | undefined

/** Runs `node dist/bin/pipe.js ...args`; stdin is a file (fd), a file piped in, or a real zstd -dc. */
function runCli(args: string[], stdin?: Stdin, timeoutMs = 30_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    let fd: number | undefined
    if (stdin && 'file' in stdin) fd = openSync(stdin.file, 'r')
    const child = spawn(LAUNCH[0]!, [...LAUNCH.slice(1), process.execPath, CLI, ...args], { stdio: [fd ?? (stdin ? 'pipe' : 'ignore'), 'pipe', 'pipe'] })
    if (fd !== undefined) closeSync(fd)
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout!.on('data', (d: Buffer) => out.push(d))
    child.stderr!.on('data', (d: Buffer) => err.push(d))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    if (stdin && !('file' in stdin)) {
      child.stdin!.on('error', () => {}) // the CLI may stop reading early (an error); EPIPE is expected then
      if ('pipeFile' in stdin) {
        child.stdin!.end(readFileSync(stdin.pipeFile))
      } else {
        const producer = 'zstdDecompress' in stdin
          ? spawn('zstd', ['-dc', '-q', stdin.zstdDecompress], { stdio: ['ignore', 'pipe', 'inherit'] })
          : spawn('bash', ['-c', stdin.shell], { stdio: ['ignore', 'pipe', 'inherit'] })
        producer.on('error', reject)
        producer.stdout!.pipe(child.stdin!)
      }
    }
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') })
    })
  })
}

/** Runs at most `n` of the given jobs at a time, first come first served. */
function limiter(n: number) {
  let active = 0
  const queue: (() => void)[] = []
  return async function <R>(job: () => Promise<R>): Promise<R> {
    if (active >= n) await new Promise<void>((r) => queue.push(r))
    active++
    try {
      return await job()
    } finally {
      active--
      queue.shift()?.()
    }
  }
}

function loadVectors(): Vector[] {
  return readdirSync(VECTORS, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort().map((name) => {
    const dir = join(VECTORS, name)
    const compressed = existsSync(join(dir, 'input.jsonl.zst'))
    return {
      name,
      dir,
      input: join(dir, compressed ? 'input.jsonl.zst' : 'input.jsonl'),
      compressed,
      expected: JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')) as Expected,
      readme: readFileSync(join(dir, 'README'), 'utf8'),
    }
  })
}

const key = (f: { line: number | null; code: string }) => `${f.line === null ? 'file' : f.line}:${f.code}`
const findingSet = (fs: { line: number | null; code: string }[]) => [...new Set(fs.map(key))].sort()

/** Checks one --json run against a vector's expectation. */
function checkRun(t: TapTest, run: Run, expected: Expected) {
  t.equal(run.signal, null, 'not killed by a signal')
  t.equal(run.code, expected.exit, `exit code ${expected.exit}`)
  t.notMatch(run.stderr, /^ {4}at /m, 'no stack trace on stderr')
  let doc: Record<string, unknown>
  try {
    doc = JSON.parse(run.stdout) as Record<string, unknown>
  } catch {
    t.fail(`stdout is one JSON object, got: ${run.stdout.slice(0, 300)} / stderr: ${run.stderr.slice(0, 300)}`)
    return
  }
  t.ok(Array.isArray(doc.findings), 'findings is an array')
  t.type(doc.ok, 'boolean', 'ok is a boolean')
  t.ok(Array.isArray(doc.stages), 'stages is an array')
  t.type(doc.elapsed_ms, 'number', 'elapsed_ms is a number')
  const findings = (doc.findings ?? []) as { line: unknown; code: unknown; detail: unknown }[]
  for (const f of findings) {
    if (!(f.line === null || (Number.isInteger(f.line) && (f.line as number) >= 1)) || typeof f.code !== 'string' || typeof f.detail !== 'string') {
      t.fail(`malformed finding ${JSON.stringify(f)}`)
    }
  }
  if (expected.error !== undefined) {
    const error = doc.error as { code?: unknown; message?: unknown; stage?: unknown; location?: unknown } | undefined
    t.equal(error?.code, expected.error, `error ${expected.error}`)
    t.ok(error && 'stage' in error && 'location' in error, 'error has stage and location')
    t.equal(doc.ok, false, 'ok is false')
    const lines = run.stderr.split('\n').filter((l) => l.length > 0)
    t.ok(typeof error?.message === 'string' && error.message.length > 0 && (lines[0] ?? '').includes(error.message), 'the JSON\'s message is the one stderr prints')
    t.equal(lines.length, 1, 'one line on stderr')
    t.match(lines[0] ?? '', new RegExp(`^pipe: .*\\(${expected.error.replace(/\./g, '\\.')}\\)$`), 'stderr names the code in parentheses')
    return
  }
  t.equal(doc.error, undefined, 'no error member')
  t.same(findingSet(findings as { line: number | null; code: string }[]), findingSet(expected.findings ?? []), 'the (line, code) findings are exactly the expected ones')
  t.equal(doc.ok, expected.exit === 0, `ok is ${expected.exit === 0}`)
  if (expected.lines !== undefined) t.equal(doc.lines, expected.lines, `lines is ${expected.lines}`)
  t.equal(run.stderr, '', 'nothing on stderr')
}

if (!existsSync(CLI)) {
  t.fail(`${CLI} is missing: run npm run build first`)
} else {
  const vectors = loadVectors()
  const tmp = mkdtempSync(join(tmpdir(), 'verify-raw-test-'))
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }))

  t.test('the vectors are the committed bytes (hashes.txt, sha256sum -c style)', async (t) => {
    const listed = new Map<string, string>()
    for (const l of readFileSync(join(VECTORS, 'hashes.txt'), 'utf8').split('\n')) {
      if (l === '') continue
      const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(l)
      if (!m) { t.fail(`hashes.txt: malformed line ${JSON.stringify(l)}`); continue }
      listed.set(m[2]!, m[1]!)
    }
    t.ok(listed.size > 0, 'hashes.txt lists files')
    let bad = 0
    for (const [rel, want] of listed) {
      const path = join(VECTORS, rel)
      if (!existsSync(path)) { t.fail(`${rel}: FAILED open or read`); bad++; continue }
      const got = createHash('sha256').update(readFileSync(path)).digest('hex')
      if (got !== want) { t.fail(`${rel}: FAILED (sha256 ${got}, listed ${want})`); bad++ }
    }
    t.equal(bad, 0, `all ${listed.size} listed files match`)
    const onDisk: string[] = []
    for (const v of vectors) for (const f of readdirSync(v.dir)) onDisk.push(`${v.name}/${f}`)
    t.same(onDisk.filter((p) => !listed.has(p)), [], 'every file of every case folder is listed')
  })

  t.test('every case folder is well formed', async (t) => {
    for (const v of vectors) {
      const files = readdirSync(v.dir).sort()
      t.same(files, ['README', 'expected.json', v.compressed ? 'input.jsonl.zst' : 'input.jsonl'], `${v.name}: input, expected.json, README`)
      t.match(v.readme, /^[^\n]+\n$/, `${v.name}: README is one line`)
      t.equal(v.name.endsWith('_fail'), v.expected.exit !== 0, `${v.name}: _fail exactly when the exit is not 0`)
      t.ok(Array.isArray(v.expected.args), `${v.name}: args`)
      t.ok((v.expected.error === undefined) !== (v.expected.findings === undefined), `${v.name}: either findings or error`)
      if (v.expected.exit === 1 && v.expected.findings) t.ok(v.expected.findings.length > 0, `${v.name}: a failing case names its findings`)
    }
  })

  t.test('every finding and error code has a vector (raw.zstd-size-cap needs a 64 GiB output: see the hostile test)', async (t) => {
    const codes = ['raw.not-utf8', 'raw.bom', 'raw.not-json', 'raw.line-not-canonical', 'raw.duplicate-key', 'raw.lone-surrogate', 'raw.number-not-integer', 'raw.number-out-of-range', 'raw.too-deep', 'raw.not-object', 'raw.field-missing', 'raw.field-type', 'raw.payload-encoding', 'raw.base64-invalid', 'raw.time-invalid', 'raw.receipts-empty', 'raw.receipt-replica', 'raw.receipt-duplicate-replica', 'raw.clock-pair', 'raw.clock-bound-negative', 'raw.clock-bound-below-offset', 'raw.unknown-field', 'raw.line-too-long', 'raw.line-unterminated', 'raw.frame-time-decreasing', 'raw.frame-time-outside-hour', 'raw.row-count', 'raw.blake3-mismatch', 'raw.zstd-corrupt', 'raw.zstd-truncated', 'raw.zstd-ratio-cap', 'raw.zstd-window-cap', 'usage.not-compressed']
    const covered = new Set(vectors.flatMap((v) => [...(v.expected.findings ?? []).map((f) => f.code), ...(v.expected.error ? [v.expected.error] : [])]))
    t.same(codes.filter((c) => !covered.has(c)), [], 'no code without a failing vector')
    t.ok(vectors.filter((v) => v.expected.exit === 0).length >= 10, 'passing vectors exist too')
  })

  // Every CLI run starts now, CONCURRENCY at a time; the subtests below await their results in order.
  const limit = limiter(CONCURRENCY)
  /** Started now, awaited later: a no-op catch keeps an early failure from being an unhandled rejection. */
  const early = <R>(p: Promise<R>): Promise<R> => { p.catch(() => {}); return p }
  const cli = (args: string[], stdin?: Stdin) => early(limit(() => runCli(args, stdin)))
  const vector = (name: string) => {
    const v = vectors.find((v) => v.name === name)
    if (!v) throw new Error(`no vector ${name}`)
    return v
  }

  const byFile = vectors.map((v) => cli(['run', 'verify-raw', '--file', v.input, '--json', ...v.expected.args]))

  const stdinJobs = [
    { v: vector('bom_fail'), how: 'fd' as const },
    { v: vector('zstd-truncated_fail'), how: 'fd' as const },
    { v: vector('valid-plain'), how: 'pipe' as const },
    { v: vector('blake3-plain_fail'), how: 'pipe' as const },
  ]
  const byStdin = stdinJobs.map((j) => cli(['run', 'verify-raw', '--json', ...j.v.expected.args], j.how === 'fd' ? { file: j.v.input } : { pipeFile: j.v.input }))

  // zstd -dc turns a compressed vector into its plain lines: the outcome is the same for cases that are
  // not about the compressed bytes (--blake3) or the decoder (errors).
  // The runs through the zstd and b3sum CLIs start only where those tools are installed (else their
  // subtests are skipped, and the promises are never awaited).
  const zstd = hasTool('zstd')
  const zstdVectors = [vector('valid-sample'), vector('line-unterminated_fail'), vector('frame-time-decreasing_fail')]
  const byZstd = zstd ? zstdVectors.map((v) => cli(['run', 'verify-raw', '--json', ...v.expected.args], { zstdDecompress: v.input })) : []

  const emptyZstd = zstd ? cli(['run', 'verify-raw', '--json', '--rows', '0', '--hour', '2026-10-03T14'], { shell: 'zstd -q -c < /dev/null' }) : null
  const cliCompressed = zstd ? cli(['run', 'verify-raw', '--json', '--rows', '40', '--hour', '2026-10-03T14'], { shell: `zstd -dc -q '${vector('valid-sample').input}' | zstd -q -c -19 --check` }) : null

  const b3sum = !hasTool('b3sum') ? null : early(new Promise<string>((resolve, reject) => {
    const child = spawn('b3sum', ['--no-names', vector('valid').input], { stdio: ['ignore', 'pipe', 'inherit'] })
    let s = ''
    child.stdout.on('data', (d: Buffer) => (s += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve(s.trim()) : reject(new Error(`b3sum exited ${code}`))))
  }))
  const withB3sum = b3sum && early(b3sum.then((hex) => cli(['run', 'verify-raw', '--file', vector('valid').input, '--json', '--blake3', hex])))

  // 150 lines that are canonical JSON but not objects: 150 findings, of which text mode prints 100.
  const many = join(tmp, 'many.jsonl')
  writeFileSync(many, '[]\n'.repeat(150))
  const textMany = cli(['run', 'verify-raw', '--file', many])
  const textFew = cli(['run', 'verify-raw', '--file', vector('unknown-fields_fail').input, ...vector('unknown-fields_fail').expected.args, '--rows', '4'])
  const textError = cli(['run', 'verify-raw', '--file', vector('zstd-truncated_fail').input])
  const badHour = cli(['run', 'verify-raw', '--file', vector('valid').input, '--json', '--hour', '2026-02-30T01'])
  const missing = cli(['run', 'verify-raw', '--file', join(tmp, 'no-such-file'), '--json'])

  t.test('each vector, --file', async (t) => {
    const runs = await Promise.all(byFile)
    vectors.forEach((v, i) => t.test(v.name, async (t) => checkRun(t, runs[i]!, v.expected)))
  })

  t.test('through stdin: a file as stdin, and the bytes through a pipe', async (t) => {
    const runs = await Promise.all(byStdin)
    stdinJobs.forEach((j, i) => t.test(j.how === 'fd' ? `pipe run verify-raw < ${j.v.name}` : `cat ${j.v.name} | pipe run verify-raw`, async (t) => checkRun(t, runs[i]!, j.v.expected)))
  })

  t.test('zstd -dc input.jsonl.zst | pipe run verify-raw (a real zstd process)', needs('zstd'), async (t) => {
    t.ok(zstdVectors.every((v) => v.compressed && !v.expected.error && !v.expected.args.includes('--blake3')), 'compressed vectors without --blake3 or errors')
    const runs = await Promise.all(byZstd)
    zstdVectors.forEach((v, i) => t.test(v.name, async (t) => checkRun(t, runs[i]!, v.expected)))
  })

  t.test('zstd -c < /dev/null (an hour without frames) passes with --rows 0', needs('zstd'), async (t) => {
    checkRun(t, (await emptyZstd)!, { exit: 0, args: [], findings: [], lines: 0 })
  })

  t.test('a file compressed by the zstd CLI (with its checksum) passes', needs('zstd'), async (t) => {
    checkRun(t, (await cliCompressed)!, { exit: 0, args: [], findings: [], lines: 40 })
  })

  t.test('b3sum of the compressed file is the digest --blake3 accepts', needs('b3sum'), async (t) => {
    const hex = (await b3sum)!
    t.match(hex, /^[0-9a-f]{64}$/, 'b3sum printed a digest')
    const v = vector('blake3-match')
    t.ok(readFileSync(v.input).equals(readFileSync(vector('valid').input)), 'blake3-match holds the bytes of valid')
    t.equal(v.expected.args[v.expected.args.indexOf('--blake3') + 1], hex, "the vector's --blake3 is b3sum's digest")
    checkRun(t, (await withB3sum)!, { exit: 0, args: [], findings: [], lines: 3 })
  })

  t.test('text mode', async (t) => {
    const run = await textMany
    t.equal(run.code, 1, 'many findings: exit 1')
    const lines = run.stdout.split('\n').filter((l) => l !== '')
    const findingLines = lines.filter((l) => /^line \d+: /.test(l))
    t.equal(findingLines.length, 100, 'prints 100 findings')
    findingLines.forEach((l, i) => {
      if (!l.startsWith(`line ${i + 1}: raw.not-object: `)) t.fail(`finding ${i + 1} printed as ${JSON.stringify(l)}`)
    })
    const more = lines.find((l) => /more findings/.test(l))
    t.ok(more, 'then a "more findings" line')
    t.match(more ?? '', /\b50\b/, 'which counts the 50 not printed')
    t.ok(lines.indexOf(more!) > lines.indexOf(findingLines[99]!), 'after the printed findings')
    t.match(lines[lines.length - 1] ?? '', /\b150\b/, 'the summary line counts all 150')
    t.equal(lines.length, 102, '100 findings, the more line, the summary')
    t.equal(run.stderr, '', 'nothing on stderr')

    const few = await textFew
    t.equal(few.code, 1, 'a few findings: exit 1')
    t.match(few.stdout, /^line 1: raw\.unknown-field: \S.*$/m, 'line 1: code: detail')
    t.match(few.stdout, /^line 3: raw\.unknown-field: \S.*$/m, 'line 3: code: detail')
    t.match(few.stdout, /^\S.*: raw\.row-count: \S.*$/m, 'a whole-file finding with its code and detail')
    t.notMatch(few.stdout, /more findings/, 'no more-findings line under the cap')

    const error = await textError
    t.equal(error.code, 1, 'a truncated zstd file: exit 1')
    t.match(error.stderr, /^pipe: .*\(raw\.zstd-truncated\)\n$/, 'one line on stderr naming the code')
  })

  t.test('usage errors exit 2', async (t) => {
    const hour = await badHour
    t.equal(hour.code, 2, '--hour 2026-02-30T01: exit 2')
    t.notMatch(hour.stderr, /^ {4}at /m, 'no stack trace')
    t.same((JSON.parse(hour.stdout) as { error?: unknown }).error, { code: 'usage.bad-hour', message: '--hour must be a UTC hour like 2026-10-03T14, got "2026-02-30T01"', stage: null, location: { field: 'hour' } }, 'the JSON names the error')
    const gone = await missing
    t.equal(gone.code, 2, 'a missing file: exit 2')
    t.match(gone.stderr, /^pipe: .*\(env\.enoent\)$/m, 'names env.enoent')
  })
}

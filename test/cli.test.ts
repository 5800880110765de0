import t from 'tap'
import { childEnv } from './helpers/io.js'
import { needs } from './helpers/tools.js'
import { spawn, spawnSync } from 'node:child_process'
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync, existsSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const run = (args: string[], input?: string | Buffer) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', input, timeout: 60_000, env: childEnv() })
const dir = mkdtempSync(join(tmpdir(), 'pipe-cli-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

t.test('list venues: each venue\'s channels with their tables, streams and sequence rules, its checksum and endpoints', async (t) => {
  const out = run(['list', 'venues'])
  t.equal(out.status, 0, out.stderr)
  const block = (name: string) => out.stdout.split(/^(?=\S)/m).find((b) => b.startsWith(`${name}:`)) ?? ''
  t.match(block('binance'), /^ {2}book: tables book_snapshots, book_deltas\n {4}streams: <symbol>@depth@100ms.*\n {4}sequence: U = previous u \+ 1/m)
  const usdm = block('binance-usdm')
  for (const channel of ['trades', 'book', 'funding', 'liquidations']) t.match(usdm, new RegExp(`^  ${channel}: tables `, 'm'), `binance-usdm ${channel}`)
  t.match(usdm, /^ {2}funding: tables none: kept in the raw file$/m)
  t.match(usdm, /sequence: pu = previous u/)
  t.match(usdm, /^ {2}endpoints: wss:\/\/fstream\.binance\.com\/public\/stream, wss:\/\/fstream\.binance\.com\/market\/stream, https:\/\/fapi\.binance\.com\/fapi\/v1\/depth$/m)
  t.equal(run(['list', 'nope']).status, 2, 'an unknown list is a usage error')
})

t.test('list, stages and describe read the registry and the schemas', async (t) => {
  const list = run(['list'])
  t.equal(list.status, 0)
  t.match(list.stdout, /^verify-raw\s+Check a raw\.jsonl\.zst/m)
  const stages = run(['stages'])
  t.equal(stages.status, 0)
  for (const name of ['file', 'stdin', 'zstd-decode', 'zstd-encode', 'split-lines', 'hash-tee', 'hash-check', 'canonical-check', 'parse-envelopes', 'frame-order', 'report', 'atomic-file', 'stdout']) {
    t.match(stages.stdout, new RegExp(`^${name}\\s`, 'm'), `stage ${name} listed`)
  }
  const pipeline = run(['describe', 'verify-raw'])
  t.equal(pipeline.status, 0)
  t.match(pipeline.stdout, /--max-line-bytes <number>/)
  t.match(pipeline.stdout, /--blake3 <string>/)
  const stage = run(['describe', 'zstd-decode'])
  t.match(stage.stdout, /--max-ratio <number>.*\(default 1000\)/)
  const unknown = run(['describe', 'nope'])
  t.equal(unknown.status, 2)
  t.match(unknown.stderr, /no pipeline or stage named "nope"/)
})

t.test('--version is the package\'s, whatever the working directory and its package.json say', async (t) => {
  const ours = (JSON.parse(readFileSync(fileURLToPath(new URL('../package.json', import.meta.url)), 'utf8')) as { version: string }).version
  const elsewhere = join(dir, 'another-project')
  mkdirSync(elsewhere, { recursive: true })
  writeFileSync(join(elsewhere, 'package.json'), JSON.stringify({ name: 'another-project', version: '9.9.9', yargs: { 'parse-numbers': true } }))
  const r = spawnSync(process.execPath, [cli, '--version'], { encoding: 'utf8', cwd: elsewhere, timeout: 60_000, env: childEnv() })
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout.trim(), ours)
})

t.test('--help works on every command', async (t) => {
  for (const args of [['--help'], ['list', '--help'], ['stages', '--help'], ['describe', '--help'], ['run', '--help'], ['run', 'verify-raw', '--help'], ['demo', '--help']]) {
    const r = run(args)
    t.equal(r.status, 0, args.join(' '))
    t.match(r.stdout, /Options:|Commands:/, args.join(' '))
  }
  t.match(run(['run', 'verify-raw', '--help']).stdout, /--hour/)
})

t.test('usage errors exit 2 with one line naming what is wrong', async (t) => {
  const cases: [string[], RegExp][] = [
    [['run', 'no-such-pipeline'], /no pipeline named "no-such-pipeline"/],
    [['run', 'verify-raw', '--rows', 'many'], /^pipe: --rows: .*\(usage\.bad-option\)$/],
    [['run', 'verify-raw', '--rows', '-1'], /--rows: /],
    [['run', 'verify-raw', '--bogus', '1'], /--bogus: unknown option/],
    [['run', 'verify-raw', '--hour', '2026-13-01T00', '--file', cli], /--hour must be a UTC hour/],
    [['run', 'verify-raw', '--file', join(dir, 'missing.zst')], /missing\.zst: cannot read: no such file \(env\.enoent\)/],
    [['frobnicate'], /Unknown command|frobnicate/i],
  ]
  for (const [args, message] of cases) {
    const r = run(args)
    t.equal(r.status, 2, args.join(' '))
    t.match(r.stderr.trim(), message, args.join(' '))
    t.equal(r.stderr.trim().split('\n').length, 1, 'one line')
  }
})

t.test('a user-composed JSON pipeline runs, and a bad one is refused naming the JSON path', async (t) => {
  const input = join(dir, 'in.txt')
  writeFileSync(input, 'hello pipe\n'.repeat(1000))
  const packed = join(dir, 'out.zst')
  const roundTrip = join(dir, 'round.txt')
  const compress = join(dir, 'compress.json')
  writeFileSync(compress, JSON.stringify({ name: 'compress', stages: [{ stage: 'file', options: { path: input } }, { stage: 'zstd-encode', options: { level: 19 } }, { stage: 'atomic-file', options: { path: packed } }] }))
  t.equal(run(['run', compress]).status, 0)
  const back = join(dir, 'back.json')
  writeFileSync(back, JSON.stringify({ stages: [{ stage: 'file', options: { path: packed } }, { stage: 'zstd-decode', options: { mode: 'zstd' } }, { stage: 'atomic-file', options: { path: roundTrip } }] }))
  t.equal(run(['run', back]).status, 0)
  t.equal(readFileSync(roundTrip, 'utf8'), readFileSync(input, 'utf8'), 'zstd round trip through our stages')
  await t.test('the zstd CLI reads what zstd-encode wrote', needs('zstd'), async (t) => {
    const zstdCli = spawnSync('zstd', ['-dc', packed])
    t.equal(zstdCli.stdout.toString(), readFileSync(input, 'utf8'), 'the zstd CLI reads what zstd-encode wrote')
  })

  const bad: [unknown, RegExp][] = [
    [{ stages: [{ stage: 'file', options: { path: input } }, { stage: 'zstd-encoder' }, { stage: 'report' }] }, /stages\[1\]\.stage: unknown stage "zstd-encoder"/],
    [{ stages: [{ stage: 'file', options: { path: input } }, { stage: 'zstd-encode', options: { level: 99 } }, { stage: 'report' }] }, /stages\[1\]\.options\.level: /],
    [{ stages: [{ stage: 'file', options: { path: input } }, { stage: 'frame-order' }, { stage: 'report' }] }, /stages\[1\]\.stage: "frame-order" takes envelopes but "file" gives bytes/],
    [{ stages: 'file' }, /stages: expected an array/],
  ]
  for (const [doc, message] of bad) {
    const file = join(dir, 'bad.json')
    writeFileSync(file, JSON.stringify(doc))
    const r = run(['run', file])
    t.equal(r.status, 2)
    t.match(r.stderr, message)
  }
  const notJson = join(dir, 'broken.json')
  writeFileSync(notJson, '{"stages": [')
  const r = run(['run', notJson])
  t.equal(r.status, 2)
  t.match(r.stderr, /broken\.json: not valid JSON/)
})

t.test('SIGINT during a file-writing run leaves no file under its final name', async (t) => {
  const out = join(dir, 'endless.bin')
  const endless = join(dir, 'endless.json')
  // An endless input is a stream, so it comes through stdin (`file` reads only regular files).
  writeFileSync(endless, JSON.stringify({ stages: [{ stage: 'stdin' }, { stage: 'atomic-file', options: { path: out } }] }))
  const zero = openSync('/dev/zero', 'r')
  const child = spawn(process.execPath, [cli, 'run', endless], { stdio: [zero, 'pipe', 'pipe'], env: childEnv() })
  closeSync(zero)
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => { stderr += d })
  // Wait until the temporary file exists and is growing, so the signal lands mid-write.
  for (let i = 0; i < 200 && !readdirSync(dir).some((f) => f.startsWith('.endless.bin.')); i++) await new Promise((r) => setTimeout(r, 25))
  t.ok(readdirSync(dir).some((f) => f.startsWith('.endless.bin.')), 'the run was writing a temporary file')
  child.kill('SIGINT')
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)))
  t.equal(code, 130, 'exit code 130 after Ctrl-C')
  t.match(stderr, /stopped by SIGINT \(run\.interrupted\)/)
  t.notOk(existsSync(out), 'no file under the final name')
  t.same(readdirSync(dir).filter((f) => f.includes('endless.bin')), [], 'no temporary file left either')
})

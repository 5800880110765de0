/**
 * `pipe demo` (what `npm start` runs) through the built CLI: the recorder daemon against the venue simulator
 * over loopback sockets, on a simulated clock, records Binance trades and depth from 13:58 to the end of
 * hour 15 and seals each hour itself. The table it prints states what each hour's manifest says; the book
 * hours carry REST snapshot rows and depth updates; the venue's gaps and its dropping of replica a's
 * connection reach the manifests, and nothing else does; and the sealed chains pass `pipe run verify` run
 * on their own.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { childEnv } from './helpers/io.js'
import type { HourlyManifest } from '../src/formats/record/manifest.js'

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const out = await mkdtemp(join(tmpdir(), 'pipe-demo-'))
t.teardown(() => rm(out, { recursive: true, force: true }))

const chain = (channel: string) => join(out, 'root', 'recorder=demo', 'venue=binance', `channel=${channel}`, 'date=2026-10-03')
const manifest = async (channel: string, hh: string) => JSON.parse(await readFile(join(chain(channel), `hour=${hh}`, 'manifest.json'), 'utf8')) as HourlyManifest

t.test('npm start: the demo records, seals, verifies and reports three hours of trades and depth', async (t) => {
  const r = spawnSync(process.execPath, [cli, 'demo', '--out', out], { encoding: 'utf8', timeout: 600_000, env: childEnv() })
  t.equal(r.status, 0, r.stderr)
  const printed = r.stdout.split('\n').filter((l) => /^(trades|book)\s/.test(l)).map((l) => l.split(/\s{2,}/))
  // The demo stops once both channels' hour 15 is sealed; on a loaded machine the daemon may have sealed a
  // clean hour 16 of one channel meanwhile.
  const rows = printed.filter((c) => c[1]! <= '2026-10-03T15')
  t.same(printed.filter((c) => c[1]! > '2026-10-03T15').map((c) => [c[1], c[2]]), printed.filter((c) => c[1]! > '2026-10-03T15').map((c) => [c[1], 'complete']), 'any later hour is a clean one')
  // Hour 13: the recorder started at 13:58, down before. Hour 14: the venue's gaps. Hour 15: clean.
  t.same(rows.map((c) => [c[0], c[1], c[2]]), [
    ['trades', '2026-10-03T13', 'partial'], ['trades', '2026-10-03T14', 'partial'], ['trades', '2026-10-03T15', 'complete'],
    ['book', '2026-10-03T13', 'partial'], ['book', '2026-10-03T14', 'partial'], ['book', '2026-10-03T15', 'complete'],
  ], r.stdout)
  t.match(r.stdout, /every check passes/)
  for (const [channel, hh, row] of [['trades', '13', 0], ['trades', '14', 1], ['trades', '15', 2], ['book', '13', 3], ['book', '14', 4], ['book', '15', 5]] as const) {
    const m = await manifest(channel, hh)
    const line = rows[row]!
    t.equal(line[3], String(m.files.find((f) => f.name === 'raw.jsonl.zst')!.rows), `${channel} ${hh}: frames as the manifest lists`)
    t.equal(line.at(-1), m.completeness.reasons.join(', ') || '-', `${channel} ${hh}: reasons as the manifest states`)
  }

  const book13 = await manifest('book', '13')
  const rowsOf = (m: HourlyManifest, name: string) => m.files.find((f) => f.name === name)!.rows
  t.ok(rowsOf(book13, 'book_snapshots.parquet') > 0, 'REST depth snapshots became book_snapshots rows')
  t.ok(rowsOf(book13, 'book_deltas.parquet') > 0, 'depth updates became book_deltas rows')
  t.same((await manifest('book', '13')).completeness, { status: 'partial', reasons: ['recorder_down'] }, 'down until the recorder started')
  const hour14 = [await manifest('trades', '14'), await manifest('book', '14')]
  for (const m of hour14) {
    t.same(m.sequence_gaps.map((g) => g.instrument), ['BTCUSDT'], `${m.channel} 14: the ids the venue skipped, and no other gap`)
    t.same(m.completeness, { status: 'partial', reasons: ['sequence_gap'] }, `${m.channel} 14: replica b covered a's reconnect`)
  }
  const windows = hour14.flatMap((m) => m.replicas.flatMap((x) => x.reconnect_windows.map((w) => [x.replica, w.close_code])))
  t.same(windows, [['a', 1001]], 'one reconnect window: replica a\'s connection the venue closed with 1001')
  for (const channel of ['trades', 'book']) t.same((await manifest(channel, '15')).completeness, { status: 'complete', reasons: [] }, `${channel} 15: complete`)

  t.equal((await stat(join(out, 'key.jwk'))).mode & 0o777, 0o600)
  const verify = spawnSync(process.execPath, [cli, 'run', 'verify', '--root', join(out, 'root'), '--keys', join(out, 'jwks.json'), '--json'], { encoding: 'utf8', env: childEnv() })
  t.equal(verify.status, 0, verify.stderr)
  t.same(JSON.parse(verify.stdout), { ok: true, hours: printed.length, days: 2, findings: [], findings_left_out: 0 }, 'every hour printed, and no other, verifies')
  t.match(await readFile(join(out, 'recorder.log'), 'utf8'), /"msg":"hour sealed","channel":"book","hour":"2026-10-03T15"/, 'the daemon sealed the hours, as its log says')
})

t.test('the demo replaces only its own output: a folder holding anything else under its names is refused', async (t) => {
  const again = spawnSync(process.execPath, [cli, 'demo', '--out', out], { encoding: 'utf8', timeout: 600_000, env: childEnv() })
  t.equal(again.status, 0, `a previous demo's output is replaced: ${again.stderr}`)
  t.match(again.stdout, /private key: .*key\.jwk \(made from a public seed: never sign real data with it/)
  for (const theirs of [['root', 'recorder=mine'], ['journal', 'replica=a'], ['key.jwk'], ['jwks.json'], ['recorder.log']]) {
    const dir = await mkdtemp(join(tmpdir(), 'pipe-not-demo-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const path = join(dir, ...theirs)
    if (theirs.length > 1) await mkdir(path, { recursive: true })
    else await writeFile(path, 'the user\'s own\n')
    const r = spawnSync(process.execPath, [cli, 'demo', '--out', dir], { encoding: 'utf8', timeout: 60_000, env: childEnv() })
    t.equal(r.status, 2, `${theirs[0]}: exit 2`)
    t.equal(r.stderr, `pipe: ${dir}: --out: holds ${theirs[0]}, which pipe demo did not write; it replaces only its own output: name another folder (usage.not-demo-output)\n`)
    t.ok(existsSync(path), `${theirs.join('/')}: kept`)
    t.same((await readdir(dir)).sort(), [theirs[0]], 'nothing written beside it')
  }
})

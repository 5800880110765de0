/**
 * The recorder daemon against the venue simulator over real sockets on loopback: two replicas record a
 * Binance trades channel through a plan of faults, on a simulated clock the simulator shares (360 times
 * real time), and the daemon seals each hour as it ends. The sealed hours say what the simulator's truth
 * says it did — the gap, the disconnect and its close code, the conflict, the unrepresentable frame, the
 * frame only one replica got — the chain verifies, and every frame written to a replica's connection is
 * in a raw file. Then `pipe run record` as users run it: it records, answers /healthz and /metrics, and
 * stops cleanly on SIGTERM.
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { decompress } from 'zstd-napi'
import { childEnv } from './helpers/io.js'
import { sealRest } from './helpers/seal-rest.js'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import type { HourlyManifest } from '../src/formats/record/manifest.js'
import { jsonLogger } from '../src/recorder/log.js'
import { SimulatedClock } from '../src/recorder/clock/simulated-clock.js'
import { Recorder } from '../src/recorder/recorder.js'
import { HourlySealer } from '../src/recorder/sealer.js'
import { buildJournal, byTime, connect } from './helpers/seal-fixtures.js'
import { hourName } from '../src/formats/record/journal/journal.js'
import { REPLICAS, type JournalEvent } from '../src/formats/record/types.js'
import { startVenueSimulator } from '../src/sim/venue/simulator.js'
import { createBinanceSpotAdapter } from '../src/venues/binance.js'

const CLI = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const dir = await mkdtemp(join(tmpdir(), 'pipe-recorder-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

const T0 = Date.UTC(2026, 9, 3, 13, 59, 30)
const SCALE = 360
const MIN = 60_000
/** Simulated ms after the start (13:59:30) of a time in hour 14. */
const at = (minute: number) => 30_000 + minute * MIN

const { privateJwk, publicJwk } = await newSigningKey({ validFrom: '2026-01-01T00:00:00.000000000Z', seed: new Uint8Array(32).fill(9) })
const keyFile = join(dir, 'key.jwk')
const keysFile = join(dir, 'jwks.json')
await writePrivateJwkFile(keyFile, privateJwk)
await writeJwksFile(keysFile, { keys: [publicJwk] })

async function waitFor(what: string, ok: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!(await ok())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

const hourDir = (root: string, hh: string) => join(root, 'recorder=rec-1', 'venue=binance', 'channel=trades', 'date=2026-10-03', `hour=${hh}`)

t.test('two replicas record through faults; the sealed hours state exactly what the simulator did', async (t) => {
  const clock = new SimulatedClock(BigInt(T0) * 1_000_000n, SCALE)
  const sim = await startVenueSimulator({
    seed: 7, instruments: ['BTCUSDT', 'ETHUSDT'], rate: 1, clock: () => Number(clock.nowNs() / 1000n) / 1000,
    faults: {
      faults: [
        { kind: 'gap', at: at(10), stream: 'btcusdt@trade', count: 3 },
        { kind: 'disconnect', at: at(20), replica: 'a', code: 4001, reason: 'fault' },
        { kind: 'conflict', at: at(30), replica: 'b', stream: 'btcusdt@trade' },
        { kind: 'unrepresentable', at: at(40), replica: 'a', stream: 'ethusdt@trade' },
        { kind: 'only-one', at: at(50), replica: 'b', stream: 'ethusdt@trade' },
      ],
    },
  })
  t.teardown(() => sim.close())
  const root = join(dir, 'root')
  const journal = join(dir, 'journal')
  const logLines: string[] = []
  const recorder = new Recorder({
    venue: createBinanceSpotAdapter({ wsBase: sim.wsUrl, restBase: sim.restUrl }), instruments: ['BTCUSDT', 'ETHUSDT'], channels: ['trades'], replicas: ['a', 'b'],
    journal, clock, log: jsonLogger({ write: (l: string) => { logLines.push(l); return true } } as never), timeScale: SCALE, heartbeatMs: 1000 * SCALE,
    backoffMs: { first: 50, max: 200 },
    seal: { root, key: keyFile, keys: keysFile, recorder: 'rec-1', cli: CLI, everyMs: 200, graceMs: 60_000, starvedWindowMs: 5_000 },
  })
  await recorder.start()
  t.teardown(() => recorder.stop())
  // Hour 14 is sealed once the recorder's simulated clock passes 15:01.
  await waitFor('hour 14 sealed', () => existsSync(join(hourDir(root, '14'), 'manifest.json')), 60_000)
  await recorder.stop()
  await sim.close()

  const truth = sim.truth
  const fault = (kind: string) => truth.find((r) => r.kind === 'fault' && (r as { fault: { kind: string } }).fault.kind === kind) as { applied: boolean; detail: Record<string, unknown> } | undefined
  for (const kind of ['gap', 'disconnect', 'conflict', 'unrepresentable', 'only-one']) t.equal(fault(kind)?.applied, true, `the simulator applied the ${kind}`)
  const m = JSON.parse(await readFile(join(hourDir(root, '14'), 'manifest.json'), 'utf8')) as HourlyManifest

  const dropped = (fault('gap')!.detail['dropped'] as { first: number; last: number }[])
  const gapIds = { after: String(dropped[0]!.first - 1), before: String(dropped[dropped.length - 1]!.last + 1) }
  t.same(m.sequence_gaps, [{ instrument: 'BTCUSDT', after_id: gapIds.after, before_id: gapIds.before }], 'the one gap the venue made, and no other')
  const a = m.replicas.find((r) => r.replica === 'a')!
  const b = m.replicas.find((r) => r.replica === 'b')!
  t.same(a.reconnect_windows.map((w) => w.close_code), [4001], 'replica a: one reconnect window, with the close code the venue sent')
  t.same(b.reconnect_windows, [], 'replica b: none')
  t.same(m.conflicts?.map((c) => [c.instrument, c.trade_id]), [['BTCUSDT', String(fault('conflict')!.detail['first'])]], 'the conflicting trade id')
  t.equal(m.unrepresentable_frames?.length, 1, 'one unrepresentable frame')
  t.ok(m.replica_agreement.one_only >= 3, `frames one replica only got: the only-one frame, both versions of the broken frame, and those of a's reconnect (${m.replica_agreement.one_only})`)
  t.equal(m.replica_agreement.conflict, 1)
  t.same(m.completeness, { status: 'partial', reasons: ['sequence_gap', 'unrepresentable_value'] }, 'partial, for the gap and the broken frame')

  // The rest of what was journaled (hour 15, and later ones on a loaded machine), the last sealed as a
  // stopped recorder's last hour is.
  const rest = await sealRest(CLI, { root, journal: join(journal, 'trades'), venue: 'binance', channel: 'trades', recorder: 'rec-1', key: keyFile })
  t.same(rest.statuses.filter((x) => x !== 0), [], 'the hours after 14 sealed')
  const lastHour = rest.hours[rest.hours.length - 1]!
  const lastHh = hourName(lastHour).slice(11, 13)
  t.ok(lastHh >= '15', `sealed up to hour ${lastHh}`)
  const mLast = JSON.parse(await readFile(join(hourDir(root, lastHh), 'manifest.json'), 'utf8')) as HourlyManifest
  // The daemon closed its own connections as it stopped: the rest of the hour is the recorder down, not a reconnect.
  t.same(mLast.replicas.map((x) => x.reconnect_windows), [[], []], `hour ${lastHh}: no reconnect window for the stop`)
  t.same(mLast.completeness, { status: 'partial', reasons: ['recorder_down'] })
  const v = spawnSync(process.execPath, [CLI, 'run', 'verify', '--root', root, '--keys', keysFile, '--json'], { encoding: 'utf8', env: childEnv() })
  t.equal(v.status, 0, `verify passes: ${v.stdout.slice(0, 600)}`)

  // Every frame written to a connection that stayed up (replica b's) is in a raw file.
  const rawPayloads = new Set<string>()
  for (const hh of rest.hours.map((h) => hourName(h).slice(11, 13))) {
    const path = join(hourDir(root, hh), 'raw.jsonl.zst')
    if (!existsSync(path)) continue
    for (const line of decompress(await readFile(path)).toString('utf8').split('\n')) if (line) rawPayloads.add((JSON.parse(line) as { payload: string }).payload)
  }
  const bConn = truth.find((r) => r.kind === 'open' && (r as { replica: string | null }).replica === 'b') as { conn: string }
  const toB = truth.filter((r) => r.kind === 'frame' && (r as { to: string[] }).to.includes(bConn.conn)) as { text: string }[]
  t.ok(toB.length > 1000, `${toB.length} frames written to b's connection`)
  t.same(toB.filter((f) => !rawPayloads.has(f.text)).map((f) => f.text.slice(0, 80)), [], 'every one of them is in a raw file')
  t.notOk(logLines.some((l) => /"level":"error"/.test(l)), `no error logged: ${logLines.filter((l) => /"level":"error"/.test(l)).join('')}`)
})

t.test('one replica a host: the daemon recording replica a seals each hour with replica b\'s journal from another host', async (t) => {
  const clock = new SimulatedClock(BigInt(T0) * 1_000_000n, SCALE)
  const sim = await startVenueSimulator({ seed: 5, instruments: ['BTCUSDT'], rate: 1, clock: () => Number(clock.nowNs() / 1000n) / 1000 })
  t.teardown(() => sim.close())
  const root = join(dir, 'hosts-root')
  const hostA = join(dir, 'host-a-journal')
  const hostB = join(dir, 'host-b-journal')
  const common = {
    venue: createBinanceSpotAdapter({ wsBase: sim.wsUrl, restBase: sim.restUrl }), instruments: ['BTCUSDT'], channels: ['trades'] as const,
    clock, log: jsonLogger({ write: () => true } as never), timeScale: SCALE, heartbeatMs: 1000 * SCALE,
  }
  // Host b only records; host a records and seals from its own journal and b's (here read in place, as a copy would be).
  const b = new Recorder({ ...common, replicas: ['b'], journal: hostB })
  const a = new Recorder({ ...common, replicas: ['a'], journal: hostA, seal: { root, key: keyFile, keys: keysFile, recorder: 'rec-1', cli: CLI, peerJournals: [hostB], everyMs: 200, graceMs: 60_000, starvedWindowMs: 5_000 } })
  await Promise.all([b.start(), a.start()])
  t.teardown(() => Promise.all([a.stop(), b.stop()]))
  await waitFor('hour 14 sealed', () => existsSync(join(hourDir(root, '14'), 'manifest.json')), 60_000)
  await Promise.all([a.stop(), b.stop()])
  t.same(await readdir(hostA + '/trades'), ['replica=a'], 'host a journals replica a only')
  t.same(await readdir(hostB + '/trades'), ['replica=b'], 'host b journals replica b only')
  const m = JSON.parse(await readFile(join(hourDir(root, '14'), 'manifest.json'), 'utf8')) as HourlyManifest
  t.same(m.replicas.map((r) => [r.replica, r.frames > 3000]), [['a', true], ['b', true]], 'both replicas\' frames in the hour')
  // The daemons start a few real milliseconds apart, seconds of simulated time: a handful of frames reach one replica only.
  t.ok(m.replica_agreement.both > 3000 && m.replica_agreement.one_only * 50 < m.replica_agreement.both, `paired across the two journals: ${JSON.stringify(m.replica_agreement)}`)
  t.same(m.completeness, { status: 'complete', reasons: [] })
})

t.test('after hours of downtime the daemon\'s sealer seals every hour in between: the chain never skips one', async (t) => {
  const journal = join(dir, 'downtime-journal', 'trades')
  const root = join(dir, 'downtime-root')
  const H13 = BigInt(Date.UTC(2026, 9, 3, 13)) * 1_000_000n
  const S = 1_000_000_000n
  const M = 60n * S
  // A recorder ran 13:59-14:10 and crashed; its successor started at 20:00, six hours later.
  const run = (from: bigint, to: bigint, process: number): JournalEvent[] => REPLICAS.flatMap((r) => [
    { kind: 'recorder-start', replica: r, time: from, heartbeatIntervalNs: S },
    ...connect(r, `${r}-${process}`, from + S),
    ...Array.from({ length: Number((to - from) / (S / 2n)) - 4 }, (_, i): JournalEvent => ({ kind: 'heartbeat', replica: r, time: from + 2n * S + BigInt(i) * (S / 2n) })),
  ])
  await buildJournal(journal, byTime([...run(H13 + 59n * M, H13 + 70n * M, 1), ...run(H13 + 7n * 60n * M, H13 + 7n * 60n * M + 5n * M, 2)]))
  const sealed: string[] = []
  const sealer = new HourlySealer({
    cli: CLI, venue: 'binance', channels: ['trades'], journalsOf: () => [journal], root, key: keyFile, keys: keysFile, recorder: 'rec-1',
    now: () => H13 + 7n * 60n * M + 5n * M, log: () => {}, sealed: (_c, hour, _s, ok) => { if (ok) sealed.push(hourName(hour)) },
  })
  await sealer.sealDue()
  t.same(sealed, ['13', '14', '15', '16', '17', '18', '19'].map((hh) => `2026-10-03T${hh}`), 'every hour from the journal\'s first to the last ended one, in order')
  const status = async (hh: string) => (JSON.parse(await readFile(join(hourDir(root, hh), 'manifest.json'), 'utf8')) as HourlyManifest).completeness
  t.same(await status('14'), { status: 'partial', reasons: ['recorder_down'] }, 'the crash\'s hour')
  for (const hh of ['15', '16', '17', '18', '19']) t.same(await status(hh), { status: 'missing', reasons: ['recorder_down'] }, `hour ${hh}: missing, the recorder down`)
  const v = spawnSync(process.execPath, [CLI, 'run', 'verify', '--root', root, '--keys', keysFile], { encoding: 'utf8', env: childEnv() })
  t.equal(v.status, 0, `the chain verifies: ${v.stdout}${v.stderr}`)
})

t.test('a seal that gets no CPU at nice 19 is stopped and run again at the daemon\'s priority', { skip: process.platform === 'linux' ? false : 'nice and /proc are Linux\'s' }, async (t) => {
  const journal = join(dir, 'starved-journal', 'trades')
  const root = join(dir, 'starved-root')
  const H14 = BigInt(Date.UTC(2026, 9, 3, 14)) * 1_000_000n
  const S = 1_000_000_000n
  await buildJournal(journal, byTime(REPLICAS.flatMap((r): JournalEvent[] => [
    { kind: 'recorder-start', replica: r, time: H14, heartbeatIntervalNs: S },
    ...connect(r, `${r}-1`, H14 + S),
    { kind: 'heartbeat', replica: r, time: H14 + 3_600n * S },
  ])))
  const logged: string[] = []
  const sealed: boolean[] = []
  const sealer = new HourlySealer({
    cli: CLI, venue: 'binance', channels: ['trades'], journalsOf: () => [journal], root, key: keyFile, keys: keysFile, recorder: 'rec-1',
    now: () => H14 + 3_600n * S + 60n * S, log: (_level, msg, fields) => { logged.push(msg + (fields?.['stderr'] ? ` (${String(fields['stderr'])})` : '')) }, sealed: (_c, _h, _s, ok) => { sealed.push(ok) },
    starvedWindowMs: 500,
  })
  // The seal is stopped (SIGSTOP) as soon as it starts: to the sealer it is a seal that gets no CPU at all.
  const stopped: number[] = []
  const catcher = setInterval(() => {
    const found = spawnSync('pgrep', ['-P', String(process.pid), '-f', 'seal-hour'], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean).map(Number)
    for (const pid of found) {
      if (stopped.length > 0) continue
      stopped.push(pid)
      process.kill(pid, 'SIGSTOP')
    }
  }, 5)
  t.teardown(() => clearInterval(catcher))
  await sealer.sealDue()
  clearInterval(catcher)
  t.equal(stopped.length, 1, 'the first seal was caught and stopped')
  t.ok(logged.includes('the seal got too little CPU at nice 19; sealing the hour again at the daemon\'s priority'), logged.join('; '))
  t.same(sealed, [true], 'the hour sealed once, by the second run')
  t.equal(spawnSync('ps', ['-p', String(stopped[0])]).status, 1, 'the starved seal is gone')
  const v = spawnSync(process.execPath, [CLI, 'run', 'verify', '--root', root, '--keys', keysFile], { encoding: 'utf8', env: childEnv() })
  t.equal(v.status, 0, `the chain verifies: ${v.stdout}${v.stderr}`)
})

t.test('pipe run record: records, reports its health and metrics, and stops on SIGTERM with exit 0', async (t) => {
  const sim = await startVenueSimulator({ seed: 3, instruments: ['BTCUSDT'], rate: 50 })
  t.teardown(() => sim.close())
  const journal = join(dir, 'cli-journal')
  const child = spawn(process.execPath, [CLI, 'run', 'record', '--venue', 'binance', '--instruments', 'BTCUSDT', '--channels', 'trades,book', '--journal', journal, '--endpoint', sim.wsUrl, '--rest-endpoint', sim.restUrl, '--clock', 'none', '--metrics-port', '0'], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  await waitFor('the recorder to start', () => /"msg":"recording"/.test(stderr), 20_000)
  const metricsUrl = (JSON.parse(stderr.split('\n').find((l) => l.includes('"msg":"recording"'))!) as { metrics: string }).metrics
  await waitFor('every connection subscribed', async () => (await fetch(`${metricsUrl}/healthz`)).status === 200, 20_000)
  const health = await (await fetch(`${metricsUrl}/healthz`)).json() as { ok: boolean; subscribed: Record<string, boolean> }
  t.same(health, { ok: true, reasons: [], subscribed: { 'a/trades': true, 'b/trades': true, 'a/book': true, 'b/book': true } })
  const metrics = await (await fetch(`${metricsUrl}/metrics`)).text()
  t.match(metrics, /^pipe_recorder_frames_total\{replica="a",channel="trades"\} [1-9]/m, 'frames counted per replica and channel')
  t.match(metrics, /^pipe_recorder_subscribed\{replica="b",channel="book"\} 1$/m)
  const stopAt = Date.now()
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'exit 0')
  t.ok(Date.now() - stopAt < 5000, `stopped in ${Date.now() - stopAt} ms`)
  t.match(stderr, /"msg":"stopped; journals flushed and fsynced"/)
  t.notMatch(stderr, /"level":"error"/)

  const bad = spawnSync(process.execPath, [CLI, 'run', 'record', '--venue', 'binance', '--instruments', 'BTCUSDT', '--channels', 'trades', '--journal', journal, '--clock', 'simulated'], { encoding: 'utf8', env: childEnv() })
  t.equal(bad.status, 2)
  t.match(bad.stderr, /--clock simulated and --time-scale go together .*\(usage\.simulated-clock\)/)
})

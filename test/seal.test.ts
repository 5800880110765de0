/**
 * The sealer (src/formats/record/seal/seal.ts, `pipe run seal-hour`) against record-format-1.md: journals of
 * a few frames a second built with JournalBuilder from simulateReplicas or from hand-written events,
 * sealed in-process and through the built CLI, read back, and verified with `pipe run verify` in-process.
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, mkdir, mkdtemp, open, readdir, readFile, rm, stat, truncate, unlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { childEnv } from './helpers/io.js'
import { b3, buildJournal, byTime, connect, ev, HOUR, MS, readDaily, readHour, S, snapshot, tableRows, tradePayload, treeBytes, verifyRawFile, verifyRoots } from './helpers/seal-fixtures.js'
import { VERSION } from '../src/core/version.js'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import { sealHour } from '../src/formats/record/seal/seal.js'
import { formatTime } from '../src/formats/record/time.js'
import type { FrameEvent, JournalEvent, Replica } from '../src/formats/record/types.js'
import { simulateReplicas, type ReplicaSimOptions } from '../src/sim/replicas.js'
import { binanceSpot } from '../src/venues/binance.js'
import { keySigner } from '../src/formats/record/keys/signer.js'

type Tap = Parameters<Parameters<typeof t.test>[0]>[0]

const CLI = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const H = BigInt(Date.UTC(2026, 9, 3, 14)) * 1_000_000n // 2026-10-03T14:00:00Z
const hourName = (ns: bigint) => formatTime(ns).slice(0, 13)
const CREATED_BY = `pipe ${VERSION}`

// On tmpfs when there is one: the sealer fsyncs every file and directory, which costs seconds on a busy disk
// and proves nothing here (the crash test kills the process; it does not cut the power).
const base = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'pipe-seal-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
const { privateJwk: key, publicJwk } = await newSigningKey({ validFrom: '2020-01-01T00:00:00.000000000Z', seed: new Uint8Array(32).fill(7) })
const keys = join(base, 'jwks.json')
const keyFile = join(base, 'key.jwk')
await writeJwksFile(keys, { keys: [publicJwk] })
await writePrivateJwkFile(keyFile, key)

let seq = 0
async function fresh(name: string): Promise<{ journal: string; root: string }> {
  const dir = join(base, `${name}-${seq++}`)
  await mkdir(dir)
  return { journal: join(dir, 'journal'), root: join(dir, 'root') }
}

const RECORDER = 'rec-1'
const seal = (root: string, journal: string, hourStart: bigint, channel: 'trades' | 'book' = 'trades') =>
  sealHour({ root, journal, recorder: RECORDER, venue: binanceSpot, channel, hourStart, sign: keySigner(key), createdBy: CREATED_BY })

const dayDirOf = (root: string, ns: bigint, channel = 'trades') => join(root, `recorder=${RECORDER}`, 'venue=binance', `channel=${channel}`, `date=${formatTime(ns).slice(0, 10)}`)
const hourDirOf = (root: string, ns: bigint, channel = 'trades') => join(dayDirOf(root, ns, channel), `hour=${formatTime(ns).slice(11, 13)}`)

function cli(args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000, env: childEnv() })
}
/** `stopped`: the simulated recorder's journal is all there will be (--recorder-stopped). */
const sealArgs = (root: string, journal: string, hourStart: bigint, channel = 'trades', stopped = true) =>
  ['run', 'seal-hour', '--venue', 'binance', '--channel', channel, '--hour', hourName(hourStart), '--journal', journal, '--out', root, '--key', keyFile, '--recorder', RECORDER, ...(stopped ? ['--recorder-stopped'] : [])]

async function expectVerified(t: Tap, root: string, what = 'verify passes'): Promise<void> {
  const v = await verifyRoots([root], keys)
  t.equal(v.exitCode, 0, `${what}: ${JSON.stringify(v.doc.findings.slice(0, 5))} ${v.err}`)
}

const sim = (o: Partial<ReplicaSimOptions> & Pick<ReplicaSimOptions, 'start' | 'end'>): JournalEvent[] =>
  [...simulateReplicas({ channel: 'trades', instruments: ['BTCUSDT', 'ETHUSDT'], framesPerSecond: 4, seed: 11, ...o })]

const frames = (events: JournalEvent[]) => events.filter((e): e is FrameEvent => e.kind === 'frame')
const text = (f: FrameEvent) => Buffer.from(f.payload).toString('utf8')

/** What the raw file must hold, from the journal events: frames grouped by payload (each venue frame's bytes are unique here). */
function expectedLines(events: JournalEvent[], start: bigint) {
  const groups = new Map<string, FrameEvent[]>()
  for (const f of frames(events)) {
    const k = text(f)
    groups.set(k, [...(groups.get(k) ?? []), f])
  }
  const out: { payload: string; receipts: FrameEvent[]; frameTime: bigint }[] = []
  for (const [payload, receipts] of groups) {
    const bounded = receipts.filter((r) => r.clockErrorBound !== undefined)
    const pool = bounded.length > 0 ? bounded : receipts
    const frameTime = pool.reduce((m, r) => (r.receiveTime < m ? r.receiveTime : m), pool[0]!.receiveTime)
    if (frameTime >= start && frameTime < start + HOUR) out.push({ payload, receipts: receipts.sort((x, y) => (x.replica < y.replica ? -1 : 1)), frameTime })
  }
  return out.sort((x, y) => (x.frameTime < y.frameTime ? -1 : x.frameTime > y.frameTime ? 1 : 0))
}

/** A frame's time as its line states it: the format's rule over the line's receipts. */
function lineFrameTime(e: { receipts: { receive_time: string; clock_error_bound?: number }[] }): string {
  const bounded = e.receipts.filter((r) => r.clock_error_bound !== undefined)
  const pool = bounded.length > 0 ? bounded : e.receipts
  return pool.map((r) => r.receive_time).sort()[0]!
}

/** The `clock` each replica must carry, recomputed from the raw lines. */
function clocksOf(lines: { receipts: { replica: Replica; clock_error_bound?: number }[] }[]) {
  const out: Record<string, { source?: string; error_bound_max?: number; unbounded: number }> = {}
  for (const r of ['a', 'b'] as const) {
    const rs = lines.flatMap((l) => l.receipts.filter((x) => x.replica === r))
    if (rs.length === 0) continue
    const bounds = rs.filter((x) => x.clock_error_bound !== undefined).map((x) => x.clock_error_bound!)
    out[r] = bounds.length > 0 ? { source: 'nts', error_bound_max: Math.max(...bounds), unbounded: rs.length - bounds.length } : { unbounded: rs.length }
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------

t.test('trades: layout, raw file, tables, clock, verify', async (t) => {
  const { journal, root } = await fresh('trades')
  const events = await buildJournal(journal, sim({ start: H - 10n * S, end: H + 90n * S, oneReplicaShare: 0.05 }))
  const r = await seal(root, journal, H)
  t.equal(r.status, 'sealed')
  const dir = hourDirOf(root, H)
  t.equal(r.dir, dir, 'recorder=/venue=/channel=/date=/hour=HH')
  const h = await readHour(dir)
  t.same(h.names, ['manifest.json', 'manifest.json.sig', 'raw.jsonl.zst', 'trades.parquet'])
  t.same((await readdir(dayDirOf(root, H))).sort(), ['hour=14'], 'no daily manifest before hour 23, no temp dir left')

  // The raw file: one line per frame, receipts of every replica that received it, frame-time order.
  const want = expectedLines(events, H)
  t.equal(h.lines.length, want.length, 'one line per frame of the hour')
  t.ok(h.rawText.endsWith('\n'), 'the last line is terminated')
  let paired = 0
  let single = 0
  h.envelopes.forEach((e, i) => {
    const w = want[i]!
    if (e.payload !== w.payload) { t.fail(`line ${i}: payload ${e.payload} expected ${w.payload}`); return }
    t.equal(e.payload_encoding, 'text')
    const got = e.receipts.map((x) => [x.replica, x.connection, x.receive_time, x.clock_offset, x.clock_error_bound])
    const exp = w.receipts.map((x) => [x.replica, x.connection, formatTime(x.receiveTime), x.clockOffset === undefined ? undefined : Number(x.clockOffset), x.clockErrorBound === undefined ? undefined : Number(x.clockErrorBound)])
    if (JSON.stringify(got) !== JSON.stringify(exp)) t.fail(`line ${i}: receipts ${JSON.stringify(got)} expected ${JSON.stringify(exp)}`)
    if (lineFrameTime(e) !== formatTime(w.frameTime)) t.fail(`line ${i}: frame time`)
    if (e.payload.includes('"e":"trade"')) {
      const p = JSON.parse(e.payload) as { E: number; T: number }
      if (e.exchange_time !== formatTime(BigInt(Math.min(p.E, p.T)) * MS)) t.fail(`line ${i}: exchange_time ${e.exchange_time}`)
    } else if (e.exchange_time !== undefined) t.fail(`line ${i}: a control frame has no exchange_time`)
    if (e.receipts.length === 2) { paired++; if (e.receipts[0]!.receive_time === e.receipts[1]!.receive_time) t.fail('sim receipts differ in time') } else single++
    if (i > 0 && lineFrameTime(e) < lineFrameTime(h.envelopes[i - 1]!)) t.fail(`line ${i} goes back in frame time`)
  })
  t.ok(paired > 100, `frames received by both replicas are one line with two receipts (${paired})`)
  t.ok(single > 0, `frames received by one replica only (${single})`)
  t.same(h.manifest.replica_agreement, { both: paired, one_only: single, conflict: 0 })
  t.equal(h.manifest.frame_time_bounds?.earliest, lineFrameTime(h.envelopes[0]!))
  t.equal(h.manifest.frame_time_bounds?.latest, lineFrameTime(h.envelopes[h.envelopes.length - 1]!))
  // The ack before the hour belongs to hour 13: nothing before the hour start.
  t.ok(want.every((w) => w.frameTime >= H))
  const rawEntry = h.manifest.files.find((f) => f.name === 'raw.jsonl.zst')!
  t.equal(rawEntry.rows, h.lines.length)
  t.equal(rawEntry.blake3, b3(await readFile(join(dir, 'raw.jsonl.zst'))))
  const vr = await verifyRawFile(join(dir, 'raw.jsonl.zst'), hourName(H), rawEntry.rows, rawEntry.blake3)
  t.equal(vr.exitCode, 0, `verify-raw --strict passes the raw file: ${vr.out} ${vr.err}`)

  // Clock: the replicas' `clock` recomputed from the receipts.
  const clocks = clocksOf(h.envelopes)
  for (const rep of h.manifest.replicas) {
    t.same(rep.clock, clocks[rep.replica], `replica ${rep.replica} clock`)
    t.equal(rep.frames, h.envelopes.filter((e) => e.receipts.some((x) => x.replica === rep.replica)).length, `replica ${rep.replica} frames`)
    t.same(rep.reconnect_windows, [])
    t.equal(rep.covered_ns, Number(HOUR), 'subscribed the whole hour')
    t.ok((rep.gap_free_runs ?? []).length >= 2, 'gap-free runs for both instruments')
  }
  t.same(h.manifest.completeness, { status: 'complete', reasons: [] })
  t.notOk('unrepresentable_frames' in h.manifest, 'unrepresentable_frames is absent when empty')
  t.notOk('conflicts' in h.manifest, 'conflicts is absent when there are none')
  t.equal(h.manifest.previous_manifest_blake3, null, 'the chain starts here')

  // The trades table: one row per trade frame, raw_index and receive_time of its line.
  const rows = await tableRows(join(dir, 'trades.parquet'))
  const tradeLines = h.envelopes.map((e, i) => ({ e, i })).filter(({ e }) => e.payload.includes('"e":"trade"'))
  t.equal(rows.length, tradeLines.length)
  t.equal(h.manifest.files.find((f) => f.name === 'trades.parquet')!.rows, rows.length)
  rows.forEach((row, k) => {
    const { e, i } = tradeLines[k]!
    const p = JSON.parse(e.payload) as { s: string; t: number; m: boolean }
    if (row.raw_index !== i || row.instrument !== p.s || row.trade_id !== String(p.t) || formatTime(row.receive_time) !== lineFrameTime(e) || row.side !== (p.m ? 'sell' : 'buy')) t.fail(`row ${k}: ${JSON.stringify(row, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`)
  })
  await expectVerified(t, root)
})

t.test('book: one file per table even with no rows; funding and liquidations', async (t) => {
  const { journal, root } = await fresh('book')
  await buildJournal(journal, sim({ channel: 'book', start: H - 10n * S, end: H + 20n * S, depthIntervalMs: 500 }))
  const r = await seal(root, journal, H, 'book')
  const h = await readHour(r.dir)
  t.same(h.names, ['book_deltas.parquet', 'book_snapshots.parquet', 'manifest.json', 'manifest.json.sig', 'raw.jsonl.zst'])
  const files = Object.fromEntries(h.manifest.files.map((f) => [f.name, f.rows]))
  t.ok(files['book_deltas.parquet']! > 0, 'deltas')
  t.equal(files['book_snapshots.parquet'], 0, 'the snapshots were served in hour 13: an empty snapshots table is still written')
  t.equal((await tableRows(join(r.dir, 'book_snapshots.parquet'))).length, 0)
  t.equal(h.manifest.replicas.some((x) => x.gap_free_runs !== undefined), false, 'gap-free runs are for channel trades')
  t.same(h.manifest.completeness, { status: 'complete', reasons: [] })
  await expectVerified(t, root)

  // Binance spot has no funding or liquidations channel: the sealer refuses them (no tables to make).
  t.same(binanceSpot.channels, ['trades', 'book'])
  for (const channel of ['funding', 'liquidations']) {
    const c = cli(sealArgs(root, journal, H, channel))
    t.equal(c.status, 2, `${channel}: ${c.stderr}`)
    t.match(c.stderr, /usage\.unknown-channel/)
    t.notOk(existsSync(join(root, `recorder=${RECORDER}`, 'venue=binance', `channel=${channel}`)), `nothing written for ${channel}`)
  }
})

/** A recorder process's own records for both replicas (journal format 2): a start, then heartbeats every half interval. */
function liveness(from: bigint, to: bigint, intervalNs = 10n * S): JournalEvent[] {
  const out: JournalEvent[] = []
  for (const replica of ['a', 'b'] as const) {
    out.push({ kind: 'recorder-start', replica, time: from, heartbeatIntervalNs: intervalNs })
    for (let x = from + intervalNs / 2n; x < to; x += intervalNs / 2n) out.push({ kind: 'heartbeat', replica, time: x })
  }
  return out
}

t.test('every hour gets a manifest: quiet hour complete, unrecorded hour missing', async (t) => {
  // Hour 13: both replicas subscribe and receive two trades. Hour 14: the venue sends nothing, both stay
  // subscribed. Hour 15: trades again.
  const P = H - HOUR
  const venue = [
    ...connect('a', 'a-1', P + 60n * S), ...connect('b', 'b-1', P + 60n * S + MS),
    ev.frame('a', 'a-1', P + 120n * S, tradePayload(P + 120n * S, 1)), ev.frame('b', 'b-1', P + 120n * S + MS, tradePayload(P + 120n * S, 1)),
    ev.frame('a', 'a-1', H + HOUR + 120n * S, tradePayload(H + HOUR + 120n * S, 2)), ev.frame('b', 'b-1', H + HOUR + 120n * S + MS, tradePayload(H + HOUR + 120n * S, 2)),
  ]
  // A recorder journals its start and heartbeats, so the quiet hour has its file and proof of life.
  const live = await fresh('quiet')
  // Still running after hour 15: a journal that ends shows nothing of the replicas after its last record.
  await buildJournal(live.journal, byTime([...liveness(P + 30n * S, H + 2n * HOUR + 30n * S), ...venue]))
  for (const h of [P, H, H + HOUR]) await seal(live.root, live.journal, h)
  const quiet = await readHour(hourDirOf(live.root, H))
  t.same(quiet.names, ['manifest.json', 'manifest.json.sig', 'raw.jsonl.zst', 'trades.parquet'])
  t.equal(quiet.lines.length, 0, 'no frames')
  t.same(quiet.manifest.files.map((f) => [f.name, f.rows]), [['raw.jsonl.zst', 0], ['trades.parquet', 0]])
  t.equal(quiet.manifest.frame_time_bounds, undefined)
  t.same(quiet.manifest.completeness, { status: 'complete', reasons: [] }, 'both replicas stayed subscribed and alive through the quiet hour')
  t.same(quiet.manifest.replicas.map((r) => r.covered_ns), [Number(HOUR), Number(HOUR)], 'covered')
  t.same(quiet.manifest.replicas.map((r) => r.clock), [undefined, undefined], 'no receipts, no clock')
  t.same((await readHour(hourDirOf(live.root, H + HOUR))).manifest.completeness, { status: 'complete', reasons: [] })
  await expectVerified(t, live.root)

  // A format-1 journal (no recorder-start, no heartbeats) has no file for the quiet hour: nothing there
  // shows the replicas were running, so the hour is not claimed.
  const v1 = await fresh('quiet-v1')
  await buildJournal(v1.journal, byTime(venue))
  for (const h of [P, H, H + HOUR]) await seal(v1.root, v1.journal, h)
  t.same((await readHour(hourDirOf(v1.root, H))).manifest.completeness, { status: 'missing', reasons: ['recorder_down'] })

  // An hour nobody recorded (no journal at all around it).
  const empty = await fresh('unrecorded')
  await mkdir(empty.journal, { recursive: true })
  const r = await seal(empty.root, empty.journal, H)
  const m = (await readHour(r.dir)).manifest
  t.same(m.completeness, { status: 'missing', reasons: ['recorder_down'] })
  t.same(m.replicas.map((x) => x.covered_ns), [0, 0])
  t.same(m.replicas.map((x) => 'gap_free_runs' in x), [false, false], 'gap_free_runs is absent when the replica states no run')
  await expectVerified(t, empty.root)
})

t.test('a crash: the replicas fall silent, the restart is a new process, and the hours say so', async (t) => {
  const { journal, root } = await fresh('crash')
  // The recorder dies at 14:20:00 without closing anything and restarts at 15:40.
  const events = sim({ start: H - 10n * S, end: H + 2n * HOUR, framesPerSecond: 1, heartbeatIntervalMs: 1000, incidents: [{ kind: 'outage', start: H + 1200n * S, end: H + HOUR + 2400n * S }] })
  await buildJournal(journal, events)
  for (const h of [H, H + HOUR]) await seal(root, journal, h)
  const crashed = (await readHour(hourDirOf(root, H))).manifest
  t.same(crashed.completeness, { status: 'partial', reasons: ['recorder_down'] }, 'the connections the crash left open are not taken as covering the rest of the hour')
  for (const r of crashed.replicas) t.ok(r.covered_ns < 1200e9 && r.covered_ns > 1190e9, `${r.replica} covered until its last record before 14:20 (${r.covered_ns})`)
  const restarted = (await readHour(hourDirOf(root, H + HOUR))).manifest
  t.same(restarted.completeness, { status: 'partial', reasons: ['recorder_down'] })
  t.same(restarted.replicas.map((r) => r.reconnect_windows), [[], []], 'a restart is no reconnect window')
  for (const r of restarted.replicas) t.ok(r.covered_ns > 1190e9 && r.covered_ns < 1200e9, `${r.replica} covered from the restart at 15:40 (${r.covered_ns})`)
  await expectVerified(t, root)
})

t.test('outage: the hour the recorder was down is missing, recorder_down', async (t) => {
  const { journal, root } = await fresh('outage')
  // A crash journals no close; the recorder restarts (a new process: a new JournalBuilder) at 16:00.
  const events = sim({ start: H - 10n * S, end: H + 2n * HOUR + 30n * S, framesPerSecond: 1, incidents: [{ kind: 'outage', start: H + 20n * S, end: H + 2n * HOUR }] })
  await buildJournal(journal, events.filter((e) => (e.kind === 'frame' ? e.receiveTime : e.time) < H + HOUR))
  await buildJournal(journal, events.filter((e) => (e.kind === 'frame' ? e.receiveTime : e.time) >= H + HOUR))
  for (const h of [H, H + HOUR, H + 2n * HOUR]) await seal(root, journal, h)
  const down = (await readHour(hourDirOf(root, H + HOUR))).manifest
  t.same(down.completeness, { status: 'missing', reasons: ['recorder_down'] })
  const after = (await readHour(hourDirOf(root, H + 2n * HOUR))).manifest
  t.same(after.completeness, { status: 'partial', reasons: ['recorder_down'] }, 'the restart at 16:00 connects a few ms into the hour')
  await expectVerified(t, root)
})

t.test('frame time decides the hour at the boundary', async (t) => {
  const { journal, root } = await fresh('boundary')
  const N = H + HOUR
  const X = tradePayload(H - MS, 1)
  const Y = tradePayload(H, 2)
  const Z = tradePayload(H + 3n * S, 3)
  const W = tradePayload(N - MS, 4)
  await buildJournal(journal, byTime([
    ...connect('a', 'a-1', H - 4n * S), ...connect('b', 'b-1', H - 4n * S),
    ev.frame('a', 'a-1', H - MS, X), ev.frame('b', 'b-1', H + MS, X), // frame time 13:59:59.999: hour 13
    ev.frame('a', 'a-1', H - 2n * MS, Y, null), ev.frame('b', 'b-1', H + 2n * MS, Y), // the bounded receipt decides: hour 14
    ev.frame('a', 'a-1', H + 3n * S, Z, null), ev.frame('b', 'b-1', H + 3n * S - MS, Z, null), // none bounded: the earliest
    ev.frame('a', 'a-1', N - 1n, W), ev.frame('b', 'b-1', N + MS, W), // 14:59:59.999999999: hour 14
  ]))
  await seal(root, journal, H - HOUR)
  await seal(root, journal, H)
  const h13 = await readHour(hourDirOf(root, H - HOUR))
  const h14 = await readHour(hourDirOf(root, H))
  t.same(h13.envelopes.map((e) => e.payload), [X])
  t.same(h13.envelopes[0]!.receipts.map((r) => r.receive_time), [formatTime(H - MS), formatTime(H + MS)], 'one line, both receipts, across the hour boundary')
  t.same(h14.envelopes.map((e) => e.payload), [Y, Z, W])
  t.same(h14.envelopes.map(lineFrameTime), [formatTime(H + 2n * MS), formatTime(H + 3n * S - MS), formatTime(N - 1n)])
  t.same(h14.envelopes[0]!.receipts.map((r) => [r.replica, r.receive_time, r.clock_error_bound]), [['a', formatTime(H - 2n * MS), undefined], ['b', formatTime(H + 2n * MS), 400000]])
  t.same(h14.manifest.frame_time_bounds, { earliest: formatTime(H + 2n * MS), latest: formatTime(N - 1n) })
  t.same(h14.manifest.completeness, { status: 'partial', reasons: ['clock_offset_unknown'] }, 'a line with no bounded receipt')
  t.same(h14.manifest.replicas.map((r) => r.clock), [{ source: 'nts', error_bound_max: 400000, unbounded: 2 }, { source: 'nts', error_bound_max: 400000, unbounded: 1 }])
  t.same(h14.manifest.sequence_gaps, [], 'trade 1 in hour 13 seeds the sequence')
  t.same((await tableRows(join(h14.dir, 'trades.parquet'))).map((r) => [r.raw_index, r.trade_id, formatTime(r.receive_time)]), [[0, '2', formatTime(H + 2n * MS)], [1, '3', formatTime(H + 3n * S - MS)], [2, '4', formatTime(N - 1n)]])
  await expectVerified(t, root)
})

t.test('conflicts: one trade id carried with different values', async (t) => {
  const { journal, root } = await fresh('conflict')
  const A = tradePayload(H + 2n * S, 7)
  const B = tradePayload(H + 2n * S, 7, { price: '60001.00000000' })
  await buildJournal(journal, byTime([
    ...connect('a', 'a-1', H - 3n * S), ...connect('b', 'b-1', H - 3n * S),
    ev.frame('a', 'a-1', H + 2n * S, A), ev.frame('b', 'b-1', H + 2n * S + MS, B),
  ]))
  const h = await readHour((await seal(root, journal, H)).dir)
  t.same(h.envelopes.map((e) => e.receipts.map((r) => r.replica)), [['a'], ['b']], 'different bytes: two lines')
  t.same(h.manifest.replica_agreement, { both: 0, one_only: 2, conflict: 1 })
  t.same(h.manifest.conflicts, [{ instrument: 'BTCUSDT', trade_id: '7', lines: [{ raw_index: 0, blake3: b3(h.lines[0]!) }, { raw_index: 1, blake3: b3(h.lines[1]!) }] }])
  await expectVerified(t, root)
})

t.test('conflicts: side, size or exchange_time differing is a conflict; a field the tables do not hold is not', async (t) => {
  const { journal, root } = await fresh('conflict-fields')
  const at = (i: number) => H + BigInt(2 + i) * S
  const ms = (i: number) => Number(at(i) / MS) - 2
  const variants: [string, string][] = [
    [tradePayload(at(0), 7), tradePayload(at(0), 7).replace('"m":false', '"m":true')],
    [tradePayload(at(1), 8), tradePayload(at(1), 8, { qty: '0.26000000' })],
    [tradePayload(at(2), 9), tradePayload(at(2), 9).replace(`"T":${ms(2)}`, `"T":${ms(2) - 5}`)],
    [tradePayload(at(3), 10), tradePayload(at(3), 10).replace('"M":true', '"M":false')],
  ]
  await buildJournal(journal, byTime([
    ...connect('a', 'a-1', H - 3n * S), ...connect('b', 'b-1', H - 3n * S),
    ...variants.flatMap(([a, b], i) => [ev.frame('a', 'a-1', at(i), a), ev.frame('b', 'b-1', at(i) + MS, b)]),
  ]))
  const h = await readHour((await seal(root, journal, H)).dir)
  t.equal(h.lines.length, 8, 'different bytes: a line per receipt')
  const line = (i: number) => ({ raw_index: i, blake3: b3(h.lines[i]!) })
  t.same(h.manifest.conflicts, [
    { instrument: 'BTCUSDT', trade_id: '7', lines: [line(0), line(1)] },
    { instrument: 'BTCUSDT', trade_id: '8', lines: [line(2), line(3)] },
    { instrument: 'BTCUSDT', trade_id: '9', lines: [line(4), line(5)] },
  ])
  t.equal(h.manifest.replica_agreement.conflict, 3)
  await expectVerified(t, root)
})

t.test('reconnects: both replicas vs one', async (t) => {
  const both = await fresh('reconnect-both')
  await buildJournal(both.journal, sim({
    start: H - 10n * S, end: H + 60n * S,
    incidents: [
      { kind: 'reconnect', replica: 'a', at: H + 20n * S, closeCode: 1001, pauseNs: 3n * S },
      { kind: 'reconnect', replica: 'b', at: H + 21n * S, closeCode: 1001, pauseNs: 3n * S },
    ],
  }))
  const m = (await readHour((await seal(both.root, both.journal, H)).dir)).manifest
  // Trades the venue sent while both were away reached no replica: a true break in the sequence too.
  t.same(m.completeness, { status: 'partial', reasons: ['reconnect', 'sequence_gap'] })
  t.ok(m.sequence_gaps.length > 0)
  for (const r of m.replicas) {
    t.equal(r.reconnect_windows.length, 1, `replica ${r.replica} window`)
    t.equal(r.reconnect_windows[0]?.close_code, 1001)
  }
  t.equal(m.replicas[0]!.reconnect_windows[0]!.start_time, formatTime(H + 20n * S))
  await expectVerified(t, both.root)

  const one = await fresh('reconnect-one')
  const events = await buildJournal(one.journal, sim({ start: H - 10n * S, end: H + 60n * S, incidents: [{ kind: 'reconnect', replica: 'a', at: H + 20n * S, closeCode: 1001, pauseNs: 3n * S }] }))
  const m1 = (await readHour((await seal(one.root, one.journal, H)).dir)).manifest
  t.same(m1.completeness, { status: 'complete', reasons: [] }, 'replica b covered the window: no reconnect reason')
  const resub = events.find((e) => e.kind === 'subscribed' && e.connection === 'a-2')!
  const resubAt = (resub as { time: bigint }).time
  t.same(m1.replicas[0]!.reconnect_windows, [{ start_time: formatTime(H + 20n * S), end_time: formatTime(resubAt), close_code: 1001 }])
  t.same(m1.replicas[1]!.reconnect_windows, [])
  t.equal(m1.replicas[0]!.covered_ns, Number(HOUR - (resubAt - (H + 20n * S))))
  // 1006: no close frame, so no close_code.
  const abn = await fresh('reconnect-1006')
  await buildJournal(abn.journal, sim({ start: H - 10n * S, end: H + 60n * S, incidents: [{ kind: 'reconnect', replica: 'b', at: H + 20n * S, pauseNs: 2n * S }] }))
  const m2 = (await readHour((await seal(abn.root, abn.journal, H)).dir)).manifest
  t.equal(m2.replicas[1]!.reconnect_windows.length, 1)
  t.equal(m2.replicas[1]!.reconnect_windows[0]!.close_code, undefined, 'abnormal closure: no close code')
  await expectVerified(t, one.root)
})

t.test('a reconnect window open at the hour start continues into the next hour with its close_code', async (t) => {
  const { journal, root } = await fresh('window-across')
  const N = H + HOUR
  const both = (at: bigint, id: number, only?: Replica): JournalEvent[] => {
    const p = tradePayload(at, id)
    return [...(only !== 'b' ? [ev.frame('a', only === 'a' ? 'a-2' : 'a-1', at, p)] : []), ...(only !== 'a' ? [ev.frame('b', 'b-1', at + MS, p)] : [])]
  }
  await buildJournal(journal, byTime([
    ...connect('a', 'a-1', H - 4n * S), ...connect('b', 'b-1', H - 4n * S),
    ...both(H + 10n * S, 1), ...both(N - 40n * S, 2),
    ev.closed('a', 'a-1', N - 30n * S, 4000),
    ...both(N - 20n * S, 3, 'b'), ...both(N + 2n * S, 4, 'b'),
    ...connect('a', 'a-2', N + 5n * S),
    ev.frame('a', 'a-2', N + 8n * S, tradePayload(N + 8n * S, 5)), ev.frame('b', 'b-1', N + 8n * S + MS, tradePayload(N + 8n * S, 5)),
  ]))
  await seal(root, journal, H)
  await seal(root, journal, N)
  const m0 = (await readHour(hourDirOf(root, H))).manifest
  const m1 = (await readHour(hourDirOf(root, N))).manifest
  t.same(m0.replicas[0]!.reconnect_windows, [{ start_time: formatTime(N - 30n * S), end_time: formatTime(N), close_code: 4000 }])
  t.same(m1.replicas[0]!.reconnect_windows, [{ start_time: formatTime(N), end_time: formatTime(N + 5n * S + 20n * MS), close_code: 4000 }], 'the window goes on from the hour start, keeping its code')
  t.same(m0.completeness.reasons, [])
  t.same(m1.completeness.reasons, [])
  await expectVerified(t, root)
})

t.test('sequence_gap, checksum_failure, clock_offset_unknown, unrepresentable_value', async (t) => {
  // A venue sequence gap seen by both replicas.
  const gap = await fresh('gap')
  const gapEvents = await buildJournal(gap.journal, sim({ start: H - 10n * S, end: H + 60n * S, incidents: [{ kind: 'sequence-gap', instrument: 'BTCUSDT', at: H + 20n * S, skip: 4 }] }))
  const ids = [...new Set(frames(gapEvents).map(text).filter((p) => p.includes('"s":"BTCUSDT"')).map((p) => (JSON.parse(p) as { t: number }).t))].sort((x, y) => x - y)
  const jump = ids.findIndex((id, i) => i > 0 && id !== ids[i - 1]! + 1)
  t.ok(jump > 0, 'the simulator skipped ids')
  const mg = (await readHour((await seal(gap.root, gap.journal, H)).dir)).manifest
  t.same(mg.sequence_gaps, [{ instrument: 'BTCUSDT', after_id: String(ids[jump - 1]), before_id: String(ids[jump]) }])
  t.same(mg.completeness, { status: 'partial', reasons: ['sequence_gap'] })
  await expectVerified(t, gap.root)

  // A checksum mismatch found by replica b.
  const ck = await fresh('checksum')
  const ckEvents = await buildJournal(ck.journal, sim({ start: H - 10n * S, end: H + 60n * S, incidents: [{ kind: 'checksum-mismatch', replica: 'b', instrument: 'ETHUSDT', at: H + 20n * S, expected: '123', computed: '-456' }] }))
  const mm = ckEvents.find((e) => e.kind === 'checksum-mismatch')!
  const hc = await readHour((await seal(ck.root, ck.journal, H)).dir)
  t.same(hc.manifest.checksum_failures, [{ instrument: 'ETHUSDT', receive_time: formatTime((mm as { time: bigint }).time), expected: '123', computed: '-456' }])
  t.ok(hc.envelopes.some((e) => e.receipts.some((r) => r.replica === 'b' && r.receive_time === formatTime((mm as { time: bigint }).time)) && e.payload.includes('ETHUSDT')), "the receive_time of replica b's receipt of the checked frame")
  t.same(hc.manifest.completeness, { status: 'partial', reasons: ['checksum_failure'] })
  await expectVerified(t, ck.root)

  // One replica unsynchronised: unbounded receipts, no reason; both: clock_offset_unknown.
  const un1 = await fresh('unsync-one')
  await buildJournal(un1.journal, sim({ start: H - 10n * S, end: H + 60n * S, incidents: [{ kind: 'unsynchronised', replica: 'a', start: H + 10n * S, end: H + 30n * S }] }))
  const h1 = await readHour((await seal(un1.root, un1.journal, H)).dir)
  t.same(h1.manifest.completeness, { status: 'complete', reasons: [] })
  t.ok(h1.manifest.replicas[0]!.clock!.unbounded > 0, 'a has unbounded receipts')
  t.same(h1.manifest.replicas.map((r) => r.clock), Object.values(clocksOf(h1.envelopes)))
  // Frame time rule: a's unbounded receipt is earlier than b's bounded one, and b's sets the frame time.
  const mixed = h1.envelopes.filter((e) => e.receipts.length === 2 && e.receipts[0]!.clock_error_bound === undefined && e.receipts[1]!.clock_error_bound !== undefined && e.receipts[0]!.receive_time < e.receipts[1]!.receive_time)
  t.ok(mixed.length > 0, 'frames where the unbounded receipt came first')
  const idx = h1.envelopes.indexOf(mixed[0]!)
  const row = (await tableRows(join(h1.dir, 'trades.parquet'))).find((r) => r.raw_index === idx)!
  t.equal(formatTime(row.receive_time), mixed[0]!.receipts[1]!.receive_time, 'frame time is the earliest bounded receipt')
  await expectVerified(t, un1.root)

  const un2 = await fresh('unsync-both')
  await buildJournal(un2.journal, sim({ start: H - 10n * S, end: H + 60n * S, incidents: [{ kind: 'unsynchronised', replica: 'a', start: H + 10n * S, end: H + 30n * S }, { kind: 'unsynchronised', replica: 'b', start: H + 10n * S, end: H + 30n * S }] }))
  const h2 = await readHour((await seal(un2.root, un2.journal, H)).dir)
  t.same(h2.manifest.completeness, { status: 'partial', reasons: ['clock_offset_unknown'] })
  t.same(h2.manifest.replicas.map((r) => r.clock), Object.values(clocksOf(h2.envelopes)))
  await expectVerified(t, un2.root)

  // A price of 19 fractional digits: the frame stays in the raw file, with no row.
  const ur = await fresh('unrepresentable')
  const p = (at: bigint, id: number, price?: string) => tradePayload(at, id, price ? { price } : {})
  const bad = p(H + 3n * S, 2, '60000.1234567890123456789')
  await buildJournal(ur.journal, byTime([
    ...connect('a', 'a-1', H - 3n * S), ...connect('b', 'b-1', H - 3n * S),
    ...[[H + 2n * S, p(H + 2n * S, 1)], [H + 3n * S, bad], [H + 4n * S, p(H + 4n * S, 3)]].flatMap(([at, pl]) => [ev.frame('a', 'a-1', at as bigint, pl as string), ev.frame('b', 'b-1', (at as bigint) + MS, pl as string)]),
  ]))
  const hu = await readHour((await seal(ur.root, ur.journal, H)).dir)
  t.equal(hu.lines.length, 3)
  t.equal(hu.envelopes[1]!.payload, bad)
  t.same(hu.manifest.unrepresentable_frames, [1])
  t.same((await tableRows(join(hu.dir, 'trades.parquet'))).map((r) => r.raw_index), [0, 2], 'no row for the frame')
  t.same(hu.manifest.completeness.status, 'partial')
  t.ok(hu.manifest.completeness.reasons.includes('unrepresentable_value'))
  t.same(hu.manifest.completeness, { status: 'partial', reasons: ['unrepresentable_value'] }, 'no sequence_gap')
  t.same(hu.manifest.sequence_gaps, [], 'the trade id still counts for the sequence')
  await expectVerified(t, ur.root)
})

t.test('journal_torn and journal_corrupt', async (t) => {
  const events = sim({ start: H - 10n * S, end: H + 60n * S })
  const torn = await fresh('torn')
  await buildJournal(torn.journal, events)
  const fileA = join(torn.journal, 'replica=a', '2026-10-03T14.journal')
  const size = (await stat(fileA)).size
  await truncate(fileA, size - 7)
  const mt = (await readHour((await seal(torn.root, torn.journal, H)).dir)).manifest
  t.same(mt.completeness, { status: 'partial', reasons: ['journal_torn'] })
  await expectVerified(t, torn.root)

  const corrupt = await fresh('corrupt')
  await buildJournal(corrupt.journal, events)
  const fileB = join(corrupt.journal, 'replica=b', '2026-10-03T14.journal')
  const fh = await open(fileB, 'r+')
  const at = Math.floor((await fh.stat()).size / 2)
  const byte = Buffer.alloc(1)
  await fh.read(byte, 0, 1, at)
  byte[0] = byte[0]! ^ 0x10
  await fh.write(byte, 0, 1, at)
  await fh.close()
  const hc = await readHour((await seal(corrupt.root, corrupt.journal, H)).dir)
  t.same(hc.manifest.completeness, { status: 'partial', reasons: ['journal_corrupt'] })
  await expectVerified(t, corrupt.root)

  // Damage in the previous hour's file (read for the pairing window) is not this hour's.
  const prev = await fresh('torn-prev')
  await buildJournal(prev.journal, events)
  const prevA = join(prev.journal, 'replica=a', '2026-10-03T13.journal')
  await truncate(prevA, (await stat(prevA)).size - 3)
  t.same((await readHour((await seal(prev.root, prev.journal, H)).dir)).manifest.completeness.reasons, [])
})

t.test('idempotent, deterministic, and the CLI seals the same bytes', async (t) => {
  const { journal, root } = await fresh('idem')
  await buildJournal(journal, sim({ start: H - 10n * S, end: H + HOUR + 30n * S, framesPerSecond: 0.3, oneReplicaShare: 0.05 }))
  await seal(root, journal, H)
  await seal(root, journal, H + HOUR)
  const before = await snapshot(root)
  await new Promise((r) => setTimeout(r, 20))
  const again = await seal(root, journal, H)
  t.equal(again.status, 'already-sealed')
  t.equal((await seal(root, journal, H + HOUR)).status, 'already-sealed')
  t.same(await snapshot(root), before, 'every file: bytes, size and mtime unchanged')

  // The same journal into a second root, through the CLI (created_by `pipe VERSION` in both).
  const other = join(base, `idem-cli-${seq++}`)
  for (const h of [H, H + HOUR]) {
    const r = cli(sealArgs(other, journal, h))
    t.equal(r.status, 0, r.stderr)
  }
  t.same(await treeBytes(other), await treeBytes(root), 'byte-identical trees')
  await expectVerified(t, root)
})

t.test('chain: previous hashes, order, the day', async (t) => {
  const { journal, root } = await fresh('chain')
  await buildJournal(journal, sim({ start: H - 10n * S, end: H + HOUR + 30n * S, framesPerSecond: 0.2 }))
  await seal(root, journal, H)
  await seal(root, journal, H + HOUR)
  const h0 = await readHour(hourDirOf(root, H))
  const h1 = await readHour(hourDirOf(root, H + HOUR))
  t.equal(h1.manifest.previous_manifest_blake3, b3(h0.manifestBytes))
  const skip = cli(sealArgs(root, journal, H + 3n * HOUR))
  t.equal(skip.status, 2, skip.stderr)
  t.match(skip.stderr, /seal\.previous-hour-missing/)
  t.notOk(existsSync(hourDirOf(root, H + 3n * HOUR)), 'nothing sealed')
  await t.rejects(seal(root, journal, H - HOUR), { code: 'seal.before-chain-end', exitCode: 2 })

  // The day: hour 23 of 2026-10-02 starts a chain; then every hour of 2026-10-03.
  const day = await fresh('day')
  const D = BigInt(Date.UTC(2026, 9, 3)) * 1_000_000n
  await buildJournal(day.journal, sim({ start: D - HOUR + 30n * S, end: D + 60n * S, framesPerSecond: 0.5 }))
  const first = await seal(day.root, day.journal, D - HOUR)
  t.ok(first.daily, 'hour 23 writes the daily manifest')
  const d0 = await readDaily(dayDirOf(day.root, D - HOUR))
  t.equal(d0.manifest.previous_manifest_blake3, null)
  t.same(d0.manifest.hours.map((h) => h.hour), ['23'])
  let last
  for (let h = D; h < D + 24n * HOUR; h += HOUR) last = await seal(day.root, day.journal, h)
  t.ok(last?.daily)
  const d1 = await readDaily(dayDirOf(day.root, D))
  t.same((await readdir(dayDirOf(day.root, D))).filter((n) => !n.startsWith('hour=')).sort(), ['manifest.json', 'manifest.json.sig'])
  t.equal(d1.manifest.previous_manifest_blake3, b3(d0.bytes), "chained to the previous day's daily manifest")
  t.equal(d1.manifest.date, '2026-10-03')
  const hours = []
  for (let h = 0; h < 24; h++) {
    const hh = String(h).padStart(2, '0')
    const m = await readHour(join(dayDirOf(day.root, D), `hour=${hh}`))
    hours.push({ hour: hh, blake3: b3(m.manifestBytes), status: m.manifest.completeness.status })
  }
  t.same(d1.manifest.hours, hours)
  t.equal(hours[0]!.status, 'complete')
  t.equal(hours[5]!.status, 'missing')
  await expectVerified(t, day.root)
})

t.test('daily manifest after a crash between sealing hour 23 and writing the day', async (t) => {
  const day = await fresh('day-crash')
  const D = BigInt(Date.UTC(2026, 9, 3)) * 1_000_000n
  await mkdir(day.journal, { recursive: true })
  await seal(day.root, day.journal, D - HOUR)
  // Simulate the crash: the hour is renamed into place, the daily manifest never written.
  await unlink(join(dayDirOf(day.root, D - HOUR), 'manifest.json'))
  await unlink(join(dayDirOf(day.root, D - HOUR), 'manifest.json.sig'))
  const again = await seal(day.root, day.journal, D - HOUR)
  t.equal(again.status, 'already-sealed')
  t.ok(existsSync(join(dayDirOf(day.root, D - HOUR), 'manifest.json')), 'sealing hour 23 again writes the missing daily manifest')

  // The daemon's sealer never seals hour 23 again: it goes on to 00:00, which must finish the day first.
  await unlink(join(dayDirOf(day.root, D - HOUR), 'manifest.json'))
  await unlink(join(dayDirOf(day.root, D - HOUR), 'manifest.json.sig'))
  const next = await seal(day.root, day.journal, D)
  t.equal(next.status, 'sealed')
  t.ok(existsSync(join(dayDirOf(day.root, D - HOUR), 'manifest.json.sig')), 'sealing the next day\'s first hour writes the missing daily manifest')
  await expectVerified(t, day.root, 'the chain of days skips nothing')
})

t.test('crash-safe: a seal killed halfway leaves nothing under a final name', { skip: existsSync(CLI) ? false : 'dist/bin/pipe.js is not built' }, async (t) => {
  const { journal, root } = await fresh('crash')
  await buildJournal(journal, sim({ start: H - 10n * S, end: H + 120n * S, framesPerSecond: 80 }))
  const dayPath = dayDirOf(root, H)
  const child = spawn(process.execPath, [CLI, ...sealArgs(root, journal, H)], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  let seen = ''
  const deadline = Date.now() + 20_000
  while (Date.now() < deadline && child.exitCode === null) {
    const names = await readdir(dayPath).catch(() => [] as string[])
    const tmp = names.find((n) => /^\.hour=14\..*\.tmp$/.test(n))
    if (tmp) {
      const inside = await readdir(join(dayPath, tmp)).catch(() => [] as string[])
      if (inside.includes('raw.jsonl.zst')) { seen = tmp; child.kill('SIGKILL'); break }
    }
    await new Promise((r) => setTimeout(r, 5))
  }
  const { signal } = await exited
  t.ok(seen, 'the temp dir appeared')
  t.equal(signal, 'SIGKILL', 'killed before it finished')
  const left = await readdir(dayPath)
  t.notOk(left.includes('hour=14'), 'no hour=14')
  t.ok(left.every((n) => /^\.hour=14\..*\.tmp$/.test(n)), `only a temp dir: ${left.join(', ')}`)
  t.notOk(left.includes('manifest.json'))

  // A temp folder of a seal still running is its own: only a dead process's is removed.
  const running = join(dayPath, `.hour=14.${process.pid}.0badf00d.tmp`)
  await mkdir(running)
  const r = await seal(root, journal, H)
  t.equal(r.status, 'sealed')
  const h = await readHour(hourDirOf(root, H))
  t.ok(h.lines.length > 8_000, `${h.lines.length} frames`)
  t.same((await readdir(dayPath)).sort(), ['.hour=14.' + process.pid + '.0badf00d.tmp', 'hour=14'], 'the killed seal\'s temp folder removed by the next seal of the hour')
  await expectVerified(t, root, 'verify passes')
})

t.test('seal-hour refuses a journal path that is missing, not a journal or empty, and writes nothing', async (t) => {
  const { journal, root } = await fresh('no-journal')
  await buildJournal(journal, sim({ start: H - 10n * S, end: H + HOUR + 30n * S, framesPerSecond: 0.3 }))
  const notJournal = join(base, `not-journal-${seq++}`)
  await mkdir(join(notJournal, 'hours'), { recursive: true })
  const empty = join(base, `empty-journal-${seq++}`)
  await mkdir(join(empty, 'replica=a'), { recursive: true })
  const cases = [
    { what: 'a path that does not exist (a typo)', path: `${journal}-typo`, code: 'usage.journal-missing', says: /no such directory/ },
    { what: 'a file', path: keyFile, code: 'usage.not-a-journal', says: /not a directory/ },
    { what: 'a folder with no replica=a/ or replica=b/', path: notJournal, code: 'usage.not-a-journal', says: /no replica=a\/ or replica=b\/ folder/ },
    { what: 'a journal with no records', path: empty, code: 'usage.journal-empty', says: /holds no records/ },
  ]
  for (const c of cases) {
    // Even with --recorder-stopped: nothing in such a folder can be the hour's record.
    const r = cli(sealArgs(root, c.path, H))
    t.equal(r.status, 2, `${c.what}: exit 2`)
    t.equal(r.stderr.trim().split('\n').length, 1, `${c.what}: one line`)
    t.match(r.stderr, c.says, `${c.what}: says why`)
    t.match(r.stderr, new RegExp(`\\(${c.code.replace('.', '\\.')}\\)`), `${c.what}: ${c.code}`)
    t.notOk(existsSync(root), `${c.what}: nothing written under the root`)
  }
  const right = cli(sealArgs(root, journal, H))
  t.equal(right.status, 0, right.stderr)
  t.match(right.stdout, /sealed sealed/, 'the right path then seals the hour (not already-sealed)')
  await expectVerified(t, root)
})

t.test('seal-hour takes one journal directory per replica, as two recorder hosts keep them', async (t) => {
  const { journal, root } = await fresh('per-replica')
  await buildJournal(journal, sim({ start: H - 10n * S, end: H + HOUR + 30n * S, framesPerSecond: 2 }))
  const whole = cli(sealArgs(root, journal, H))
  t.equal(whole.status, 0, whole.stderr)

  // Host a keeps replica=a/, host b's replica=b/ was copied to the sealing host beside it.
  const hostA = join(base, `host-a-${seq++}`)
  const hostB = join(base, `host-b-${seq++}`)
  await mkdir(hostA)
  await mkdir(hostB)
  await cp(join(journal, 'replica=a'), join(hostA, 'replica=a'), { recursive: true })
  await cp(join(journal, 'replica=b'), join(hostB, 'replica=b'), { recursive: true })
  const splitRoot = join(base, `split-root-${seq++}`)
  const split = cli([...sealArgs(splitRoot, hostA, H), '--journal', hostB])
  t.equal(split.status, 0, split.stderr)
  const a = await readHour(hourDirOf(root, H))
  const b = await readHour(hourDirOf(splitRoot, H))
  t.ok(a.manifest.replica_agreement.both > 1000, `${a.manifest.replica_agreement.both} frames both replicas got`)
  t.ok(b.manifestBytes.equals(a.manifestBytes), 'the same manifest, byte for byte, as from one directory holding both')
  t.equal(b.rawText, a.rawText, 'the same raw file')

  // A torn tail in host b's copy (a copy caught mid-append) is this hour's problem, whichever directory it is in.
  const tornRoot = join(base, `torn-root-${seq++}`)
  const bFile = join(hostB, 'replica=b', `${hourName(H)}.journal`)
  await truncate(bFile, (await stat(bFile)).size - 7)
  const torn = cli([...sealArgs(tornRoot, hostA, H), '--journal', hostB])
  t.equal(torn.status, 0, torn.stderr)
  t.ok((await readHour(hourDirOf(tornRoot, H))).manifest.completeness.reasons.includes('journal_torn'), 'journal_torn, from the second directory')

  // A replica in two directories: which holds its events is unknowable, so nothing is sealed.
  const twiceRoot = join(base, `twice-root-${seq++}`)
  const twice = cli([...sealArgs(twiceRoot, hostA, H), '--journal', journal])
  t.equal(twice.status, 2)
  t.equal(twice.stderr, `pipe: ${journal}: --journal: replica a has a folder here and in ${hostA}; which holds its events is unknowable: name each replica's journal once (usage.journal-replica-twice)\n`)
  t.notOk(existsSync(twiceRoot), 'nothing written')
})

t.test('seal-hour waits for the hour to be over in the journal unless the recorder is stopped for good', async (t) => {
  const { journal, root } = await fresh('not-over')
  // The recorder's last records are in hour 14: as if it were still running and writing 14.
  await buildJournal(journal, sim({ start: H - 10n * S, end: H + 1800n * S, framesPerSecond: 0.3 }))
  const early = cli(sealArgs(root, journal, H, 'trades', false))
  t.equal(early.status, 2, early.stderr)
  t.match(early.stderr, /--hour 2026-10-03T14: the journal holds nothing after hour 2026-10-03T14, .*--recorder-stopped .*\(usage\.hour-not-over\)/)
  t.notOk(existsSync(root), 'nothing written')

  // A later hour's record (the running recorder's heartbeat at 15:00) says hour 14 is over on disk.
  const later = await fresh('over')
  await buildJournal(later.journal, byTime([
    ...sim({ start: H - 10n * S, end: H + 1800n * S, framesPerSecond: 0.3 }),
    { kind: 'heartbeat', replica: 'b', time: H + HOUR },
  ]))
  const over = cli(sealArgs(later.root, later.journal, H, 'trades', false))
  t.equal(over.status, 0, over.stderr)
  t.equal(cli(sealArgs(later.root, later.journal, H + HOUR, 'trades', false)).status, 2, 'but not hour 15, which it is still in')

  const stopped = cli(sealArgs(root, journal, H, 'trades', true))
  t.equal(stopped.status, 0, `--recorder-stopped seals what there is: ${stopped.stderr}`)
  await expectVerified(t, root)
})

t.test('seal-hour refuses a key that verify would not accept for the hour, naming its validity and the remedy', async (t) => {
  const { journal, root } = await fresh('key-validity')
  await buildJournal(journal, sim({ start: H - 10n * S, end: H + HOUR + 30n * S, framesPerSecond: 0.3 }))
  const dir = join(base, `keys-${seq++}`)
  await mkdir(dir)
  const write = async (name: string, validFrom: string, validUntil?: string, seed = 9) => {
    const { privateJwk, publicJwk } = await newSigningKey({ validFrom, seed: new Uint8Array(32).fill(seed) })
    if (validUntil) publicJwk.valid_until = validUntil
    await mkdir(join(dir, name))
    await writeJwksFile(join(dir, name, 'jwks.json'), { keys: [publicJwk] })
    await writePrivateJwkFile(join(dir, name, 'key.jwk'), privateJwk)
    return join(dir, name, 'key.jwk')
  }
  const argsWith = (key: string, extra: string[] = []) => [...sealArgs(root, journal, H).map((a) => (a === keyFile ? key : a)), ...extra]
  // Made after the capture: check 6 judges hour 14's signature at 15:00, before the key's valid_from.
  const tooNew = await write('too-new', '2026-12-01T00:00:00.000000000Z')
  const r = cli(argsWith(tooNew))
  t.equal(r.status, 2)
  t.match(r.stderr, /^pipe: .*key\.jwk: --key: key \S+ is valid from 2026-12-01T00:00:00\.000000000Z, open-ended, so it is not yet valid at 2026-10-03T15:00:00\.000000000Z, the instant verify judges hour 2026-10-03T14's signature at \(check 6\); .*pipe key new --valid-from 2026-10-03T14:00:00\.000000000Z .*\(usage\.key-not-valid-for-hour\)\n$/)
  t.notOk(existsSync(root), 'nothing written')
  // Valid from the hour's start exactly: a signature judged at its end is accepted.
  const exact = await write('exact', '2026-10-03T14:00:00.000000000Z', undefined, 10)
  // Expired before the hour's end.
  const expired = await write('expired', '2020-01-01T00:00:00.000000000Z', '2026-10-03T15:00:00.000000000Z', 11)
  const e = cli(argsWith(expired))
  t.equal(e.status, 2)
  t.match(e.stderr, /valid from 2020-01-01T00:00:00\.000000000Z until 2026-10-03T15:00:00\.000000000Z, so it is no longer valid at 2026-10-03T15:00:00\.000000000Z.*sign with the key the key set says was valid then \(usage\.key-not-valid-for-hour\)/)
  // A key set that does not hold the key.
  const n = cli(argsWith(exact, ['--keys', join(dir, 'too-new', 'jwks.json')]))
  t.equal(n.status, 2)
  t.match(n.stderr, /--key: key \S+ is not in the key set.*\(usage\.key-not-valid-for-hour\)/)
  // No key set beside the key, none named.
  const alone = join(dir, 'alone.jwk')
  await writePrivateJwkFile(alone, JSON.parse(await readFile(exact, 'utf8')))
  const a = cli(argsWith(alone))
  t.equal(a.status, 2)
  t.match(a.stderr, /jwks\.json: --keys: no jwks\.json beside the key: name the key set that publishes it, whose validity must cover the hour \(usage\.no-key-set\)/)
  t.notOk(existsSync(root), 'nothing written by any refusal')

  const ok = cli(argsWith(exact))
  t.equal(ok.status, 0, ok.stderr)
  const v = await verifyRoots([root], join(dir, 'exact', 'jwks.json'))
  t.equal(v.exitCode, 0, 'verify accepts what a key valid from the hour\'s start signed')
})

t.test('a manifest larger than a verifier reads (16 MiB) is refused before anything is sealed', async (t) => {
  const { sealableManifest } = await import('../src/formats/record/seal/seal.js')
  const daily = { format_version: 1, recorder: RECORDER, venue: 'binance', channel: 'trades', date: '2026-10-03', hours: [], previous_manifest_blake3: null }
  t.ok(sealableManifest(daily as never, 'day').byteLength < 1024, 'a small manifest is its bytes')
  const huge = { ...daily, note: 'x'.repeat(16 * 2 ** 20) }
  t.throws(() => sealableManifest(huge as never, 'day'), { code: 'seal.manifest-too-large', message: /the manifest would be 16\.0 MiB, more than the 16\.0 MiB a verifier reads/ })
})

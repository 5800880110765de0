/**
 * Journal format 2's records of the replica itself (docs/journal.md): recorder-start, heartbeat and
 * destination-unavailable. What the state restated at the top of an hour file says after a restart, the
 * writer's heartbeats (an hour file exists even when the venue is silent), a version-1 file upgraded on
 * reopen, and a recorder on a disk that fills up: the events it could not write are stated, and the
 * sealer marks the hour destination_unavailable.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import {
  ConnectionStates, JournalBuilder, JournalFileWriter, JournalWriter, crc32c, encodeJournalRecord, eventFromJson, fileHeader,
  journalFilePath, readJournalFile, readJournalRange,
} from '../src/formats/record/journal/journal.js'
import { newSigningKey } from '../src/formats/record/keys/keys.js'
import { sealHour } from '../src/formats/record/seal/seal.js'
import { eventTime, type JournalEvent } from '../src/formats/record/types.js'
import { binanceSpot } from '../src/venues/binance.js'
import { keySigner } from '../src/formats/record/keys/signer.js'

const H = BigInt(Date.UTC(2026, 9, 3, 14)) * 1_000_000n
const HOUR = 3_600_000_000_000n
const S = 1_000_000_000n
const base = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'pipe-liveness-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
let n = 0
const dir = () => join(base, `d${n++}`)

async function readAll(path: string): Promise<JournalEvent[]> {
  const out: JournalEvent[] = []
  for await (const b of readJournalFile(path)) out.push(...b.events)
  return out
}

t.test('encoding and JSONL refuse what the new records cannot hold', async (t) => {
  t.throws(() => encodeJournalRecord({ kind: 'recorder-start', replica: 'a', time: H, heartbeatIntervalNs: 0n }), { code: 'journal.bad-event', message: /heartbeatIntervalNs/ })
  t.throws(() => encodeJournalRecord({ kind: 'destination-unavailable', replica: 'a', time: H, from: H, to: H, lostEvents: 1, message: '' }), { message: /to: must be after from/ })
  t.throws(() => encodeJournalRecord({ kind: 'destination-unavailable', replica: 'a', time: H, from: H, to: H + 1n, lostEvents: -1, message: '' }), { message: /lostEvents/ })
  const ok = { kind: 'recorder-start', replica: 'a', time: '2026-10-03T14:00:00.000000000Z', heartbeat_interval_ns: 1000 }
  t.same(eventFromJson(ok), { kind: 'recorder-start', replica: 'a', time: H, heartbeatIntervalNs: 1000n })
  t.throws(() => eventFromJson({ ...ok, heartbeat_interval_ns: 0 }), { name: 'JournalJsonError', field: 'heartbeat_interval_ns' })
  t.throws(() => eventFromJson({ ...ok, connection: 'a-1' }), { name: 'JournalJsonError', field: 'connection' }, 'a replica record names no connection')
  t.throws(() => eventFromJson({ kind: 'destination-unavailable', replica: 'b', time: '2026-10-03T14:00:05.000000000Z', from: '2026-10-03T14:00:04.000000000Z', to: '2026-10-03T14:00:03.000000000Z', lost_events: 3, message: 'x' }), { name: 'JournalJsonError', field: 'to' })
  t.throws(() => eventFromJson({ kind: 'heartbeat', replica: 'b' }), { name: 'JournalJsonError', field: 'time' })
})

t.test('a restart: the next hour restates the new process, not the connections of the one that died', async (t) => {
  const states = new ConnectionStates()
  const feed = (e: JournalEvent) => { const r = states.restate(e); states.note(e); return r }
  feed({ kind: 'recorder-start', replica: 'a', time: H + S, heartbeatIntervalNs: S })
  feed({ kind: 'subscribed', replica: 'a', connection: 'a-1', time: H + 2n * S, instruments: ['BTCUSDT'] })
  const carried = feed({ kind: 'heartbeat', replica: 'a', time: H + HOUR })
  t.same(carried.map((e) => [e.kind, 'connection' in e ? e.connection : null, eventTime(e) === H + HOUR, 'restated' in e]), [
    ['recorder-start', null, true, true], ['subscribed', 'a-1', true, true],
  ], 'the start (its heartbeat promise) and the live subscription')
  // The process dies silently; a new one starts two hours later.
  t.same(feed({ kind: 'recorder-start', replica: 'a', time: H + 3n * HOUR + 5n * S, heartbeatIntervalNs: S }), [], "a new process's first record needs nothing restated")
  const next = feed({ kind: 'heartbeat', replica: 'a', time: H + 4n * HOUR })
  t.same(next.map((e) => e.kind), ['recorder-start'], 'a-1 died with its process: it is never restated again')
})

t.test('the writer: a recorder-start, heartbeats while idle, and each hour file begun at the hour', async (t) => {
  const d = dir()
  let now = H + HOUR - 100_000_000n // 14:59:59.9
  const w = new JournalWriter(d, { fsync: 'none', now: () => now })
  await w.startReplica('b', 40)
  await w.append({ kind: 'subscribed', replica: 'b', connection: 'b-1', time: now, instruments: ['ETHUSDT'] })
  const waitFor = async (what: () => Promise<boolean>) => { for (let i = 0; i < 500 && !(await what()); i++) await new Promise((r) => setTimeout(r, 10)) }
  // Idle for 30 ms of the writer's clock (over half the interval): a heartbeat follows within a tick.
  now += 30_000_000n
  await waitFor(async () => { await w.flush(); return (await readAll(journalFilePath(d, 'b', H))).some((e) => e.kind === 'heartbeat') })
  const first = await readAll(journalFilePath(d, 'b', H))
  t.same(first.map((e) => e.kind), ['recorder-start', 'subscribed', 'heartbeat'])
  t.equal(eventTime(first[2]!), H + HOUR - 70_000_000n, 'the heartbeat carries the clock when it was written')
  // The hour turns: the next tick begins the new hour's file with the state restated, then a heartbeat.
  now = H + HOUR + 1_000_000n
  const nextHour = journalFilePath(d, 'b', H + HOUR)
  await waitFor(async () => { await w.flush(); return existsSync(nextHour) && (await readAll(nextHour)).length >= 3 })
  await w.close()
  const second = await readAll(nextHour)
  t.same(second.map((e) => [e.kind, 'restated' in e]), [['recorder-start', true], ['subscribed', true], ['heartbeat', false]], 'a silent hour still has its file, with the state at its top')
  t.same(second.slice(0, 2).map(eventTime), [H + HOUR, H + HOUR])
})

t.test('reopening a version-1 file upgrades its header; its records read on', async (t) => {
  const path = join(dir(), 'x.journal')
  const v1 = fileHeader()
  v1.writeUInt16LE(1, 8)
  v1.writeUInt32LE(crc32c(v1, 0, 12), 12)
  const old: JournalEvent = { kind: 'subscribed', replica: 'a', connection: 'a-1', time: H, instruments: ['BTCUSDT'] }
  await (await import('node:fs/promises')).mkdir(join(path, '..'), { recursive: true })
  await writeFile(path, Buffer.concat([v1, encodeJournalRecord(old)]))
  const w = await JournalFileWriter.open(path, { fsync: 'none' })
  await w.append({ kind: 'heartbeat', replica: 'a', time: H + S })
  await w.close()
  const bytes = await readFile(path)
  t.equal(bytes.readUInt16LE(8), 2, 'the header says version 2')
  t.same((await readAll(path)).map((e) => e.kind), ['subscribed', 'heartbeat'])
})

const unshare = spawnSync('unshare', ['-rm', 'true']).status === 0
t.test('a disk that fills up: the lost frames are stated, and the hour is destination_unavailable', { skip: unshare ? false : 'needs `unshare -rm` (user and mount namespaces) to mount a small tmpfs' }, async (t) => {
  const out = dir()
  const child = spawnSync('unshare', ['-rm', process.execPath, '--import', 'tsx', join(import.meta.dirname, 'fixtures', 'journal-disk-full.ts'), out], { encoding: 'utf8', timeout: 120_000 })
  t.equal(child.status, 0, child.stderr)
  const { times } = JSON.parse(child.stdout) as { times: string[] }
  const journal = join(out, 'journal')
  const events: JournalEvent[] = []
  const problems: string[] = []
  for await (const b of readJournalRange(journal, {})) { events.push(...b.events); problems.push(...b.problems.map((p) => p.reason)) }
  const frames = events.filter((e) => e.kind === 'frame')
  const losses = events.filter((e): e is Extract<JournalEvent, { kind: 'destination-unavailable' }> => e.kind === 'destination-unavailable')
  const written = new Set(frames.map((f) => String(f.kind === 'frame' ? f.receiveTime : 0n)))
  const missing = times.filter((x) => !written.has(x)).map(BigInt)
  t.ok(missing.length >= 1 && losses.length >= 1, `frames were lost (${missing.length}) and the loss is stated (${losses.length} records)`)
  t.equal(losses.reduce((sum, l) => sum + l.lostEvents, 0), missing.length, 'the records count every frame not written')
  t.ok(missing.every((m) => losses.some((l) => m >= l.from && m < l.to)), 'every lost frame lies in a stated stretch')
  t.ok(losses.every((l) => l.time >= l.to - 1n), 'each is written once writing worked again')
  t.ok(problems.every((p) => p === 'truncated-on-reopen'), `only a torn tail cut on reopen, if any (${problems.join(', ')})`)

  // Seal the hour: replica a lost a stretch, replica b recorded nothing at all.
  const { privateJwk } = await newSigningKey({ validFrom: '2020-01-01T00:00:00.000000000Z', seed: new Uint8Array(32).fill(9) })
  const sealed = await sealHour({ root: join(out, 'root'), journal, recorder: 'r', venue: binanceSpot, channel: 'trades', hourStart: H, sign: keySigner(privateJwk), createdBy: 'pipe test' })
  const reasons = sealed.manifest.completeness.reasons
  t.equal(sealed.manifest.completeness.status, 'partial')
  for (const r of ['destination_unavailable', 'recorder_down', 'sequence_gap'] as const) t.ok(reasons.includes(r), `${r} (${reasons.join(', ')}): the lost frames, b recording nothing, the trade ids a lacks`)
})

t.test('journal-import: a JSONL journal with a crash and a restart', async (t) => {
  const d = dir()
  const lines = [
    { kind: 'recorder-start', replica: 'a', time: '2026-10-03T13:59:00.000000000Z', heartbeat_interval_ns: 1_000_000_000 },
    { kind: 'subscribed', replica: 'a', connection: 'a-1', time: '2026-10-03T13:59:01.000000000Z', instruments: ['BTCUSDT'] },
    { kind: 'heartbeat', replica: 'a', time: '2026-10-03T14:10:00.000000000Z' },
    { kind: 'recorder-start', replica: 'a', time: '2026-10-03T15:30:00.000000000Z', heartbeat_interval_ns: 1_000_000_000 },
  ]
  const b = new JournalBuilder(join(d, 'journal'))
  for (const l of lines) await b.append(eventFromJson(l))
  await b.commit()
  const h15 = await readAll(journalFilePath(join(d, 'journal'), 'a', H + HOUR))
  t.same(h15.map((e) => [e.kind, 'restated' in e]), [['recorder-start', false]], "the restart's hour restates nothing of the dead process")
  const h14 = await readAll(journalFilePath(join(d, 'journal'), 'a', H))
  t.same(h14.map((e) => [e.kind, 'restated' in e]), [['recorder-start', true], ['subscribed', true], ['heartbeat', false]])
})

/**
 * Crash safety of `pipe run record` (issue 25, item 5), as one procedure that test/recorder-crash.test.ts
 * runs with 20-odd kills and `npm run soak:record` (scripts/soak-record.ts) with 200.
 *
 * The venue simulator streams in this process on a simulated clock; the built CLI records it in a child
 * process sharing that clock (`--clock simulated`, each start at the simulator's time then) and seals
 * each hour as it ends. The daemon is killed with SIGKILL at seeded random moments — while it starts (and
 * reopens its journal), while it records, while it seals, and in the last half heartbeat interval before
 * an hour ends (a downtime the liveness rule cannot see by the hour's end alone) — alone (its seal-hour
 * child lives on, as after an OOM kill) or with its process group (as a power cut or a cgroup kill takes
 * both), and restarted on the same journal and root. Some kills also tear the last record of a file the
 * killed process wrote, as a kill inside `writev` or a power loss leaves it. Then it is stopped with
 * SIGTERM, the rest is sealed with `pipe run seal-hour` (`--recorder-stopped` for the last hour), and the
 * checks run:
 *
 * - every frame the journal held after each kill (read then, with the project's reader) is still in the
 *   journal at the end, and every journaled frame is a receipt of a raw file — same replica, connection,
 *   receive time, clock fields and payload — and no raw receipt is absent from the journal;
 * - every torn tail is reported as docs/journal.md says: in the final read of its file at its offset
 *   (a `truncated-on-reopen` marker once a writer reopened the file), and as `journal_torn` in its hour;
 *   no hour says `journal_torn` without such a file, and nothing is corrupt;
 * - every stretch in which the recorder was down (from 1 ns after a replica's last record before a
 *   restart to its first subscription after it, on both replicas) is `recorder_down` in each hour it
 *   touches, and no replica's covered_ns counts it;
 * - no daemon ends on its own, the last stops on SIGTERM with exit 0, and `pipe run verify` passes.
 *
 * What is asserted comes from the journal and the kills, not from timing: how long a start or a seal
 * takes on a loaded machine changes where the kills fall, not what must hold.
 */
import type { ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, stat, truncate } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { decompress } from 'zstd-napi'
import { HOUR_NS, RECORD_HEADER_SIZE, decodeJournal, hourName, hourStart, listJournalFiles, readJournalFile, readJournalRange, scanJournalFile, type JournalProblem } from '../src/formats/record/journal/journal.js'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import { RAW_FILE_NAME, dayDir, type HourlyManifest } from '../src/formats/record/manifest.js'
import { intersect, total, union } from '../src/formats/record/seal/coverage.js'
import { chainHours } from '../src/formats/record/seal/seal.js'
import { formatTime, parseTime } from '../src/formats/record/time.js'
import { REPLICAS, eventTime, type JournalEvent, type Replica } from '../src/formats/record/types.js'
import { seededRandom } from '../src/sim/random.js'
import { startVenueSimulator, type VenueSimulator } from '../src/sim/venue/simulator.js'
import { runCli, spawnCli } from './built-cli.js'


const RECORDER = 'crash'
const VENUE = 'binance'
const CHANNEL = 'trades'

export interface CrashOptions {
  /** Where the journal, the root and the keys go (created; left in place). */
  dir: string
  kills: number
  seed: number
  /** Simulated seconds per real second (default 360: an hour every 10 s). */
  timeScale?: number
  /** Trades per simulated second on each instrument's stream (default 1). */
  rate?: number
  instruments?: string[]
  /** Simulated start (default 2026-10-03T22:50:00Z, so that a run of 20 kills crosses a day). */
  start?: string
  /** A kill during the start (before the daemon says it records): its odds, and the latest moment, ms after the spawn. */
  startingKills?: { odds: number; withinMs: number }
  /**
   * The share of kills (at least one) that come once the daemon's journal reaches its last heartbeat
   * interval before an hour's end, so that its downtime straddles the hour (default 0.1).
   */
  hourEndShare?: number
  /** Otherwise the kill comes this long at most after the daemon says it records (ms). */
  upMs?: number
  /** The odds that a kill also tears the last record of a file the killed process wrote. */
  tearOdds?: number
  /** How long the last daemon records before it is stopped (ms after it says it records). */
  finalRunMs?: number
  log?: (line: string) => void
}

export interface Kill {
  index: number
  /** When it was meant to come: while starting, at a random moment while recording, or just before an hour's end. */
  kind: 'starting' | 'recording' | 'hour-end'
  /** `daemon`: SIGKILL to the daemon alone; `group`: to its process group (its seal-hour child with it). */
  mode: 'daemon' | 'group'
  /** Real ms from the spawn to the daemon saying it records, null when it was killed before. */
  startMs: number | null
  /** Real ms from the spawn to the kill. */
  afterMs: number
  /** Whether a seal-hour child outlived a `daemon` kill. */
  orphan: boolean
  /** Whether the procedure then cut the last record of a file the process wrote. */
  tore: boolean
  /** For an hour-end kill: simulated ms from the daemon's last record to the end of its hour. */
  toHourEndMs?: number
}

export interface Tear {
  file: string
  /** The record's offset, and the bytes of it left in the file. */
  offset: number
  bytes: number
  /** Made by the procedure (a cut record), or found after a kill. */
  made: boolean
}

/** The checks; each lists what did not hold (at most {@link EXAMPLES} messages, with the full count). */
export const CHECKS = ['crash', 'stop', 'lost', 'unsealed', 'invented', 'torn', 'corrupt', 'silence', 'covered', 'seal', 'verify'] as const
export type Check = (typeof CHECKS)[number]
const EXAMPLES = 20

export interface CrashReport {
  seed: number
  kills: Kill[]
  spawns: number
  /** Non-restated recorder-start records, per replica, and the daemons that said they record. */
  recorderStarts: Record<Replica, number>
  recordingDaemons: number
  /** Distinct frames the journal held after the kills, frames journaled in all, receipts in raw files. */
  framesBeforeKills: number
  framesJournaled: number
  rawReceipts: number
  /** The stretches in which both replicas were down between two daemons, as RFC 3339 times. */
  downtimes: { from: string; to: string }[]
  tears: Tear[]
  hours: { hour: string; status: string; reasons: string[]; covered: Record<Replica, number> }[]
  /** Error lines the daemons logged (a seal that raced an orphaned one, for instance): worth reading, not failures. */
  errorLogs: string[]
  stopMs: number
  /** Temporary directories of seals a kill cut short, left under the root (under names no reader takes for an hour). */
  sealLeftovers: number
  failures: Record<Check, { count: number; examples: string[] }>
  wallMs: number
}

type Span = [bigint, bigint]


const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Whether any process of the group led by `pid` is still alive. */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0)
    return true
  } catch {
    return false
  }
}

/** A frame as a receipt of a raw file states it: what must match between the journal and the raw files. */
function receiptKey(replica: string, connection: string, receiveTime: bigint, clockOffset: bigint | undefined, bound: bigint | undefined, payload: string): string {
  return createHash('sha1').update(`${replica}\u0000${connection}\u0000${receiveTime}\u0000${clockOffset ?? '-'}\u0000${bound ?? '-'}\u0000`).update(payload).digest('base64')
}

function frameKey(e: Extract<JournalEvent, { kind: 'frame' }>): string {
  const payload = e.binary ? Buffer.from(e.payload).toString('base64') : Buffer.from(e.payload).toString('utf8')
  return receiptKey(e.replica, e.connection, e.receiveTime, e.clockOffset, e.clockErrorBound, payload)
}

/** One running daemon: its child process, what it logged, and how it ended. */
class Daemon {
  readonly child: ChildProcess
  readonly spawnedAt = performance.now()
  recordingAt: number | null = null
  exit: { code: number | null; signal: NodeJS.Signals | null } | null = null
  readonly exited: Promise<void>
  readonly errors: string[] = []
  private stderr = ''
  private tail = ''

  constructor(args: string[]) {
    // Its own process group, so that a kill can take its seal-hour child with it, and leftovers be found.
    this.child = spawnCli(args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true })
    this.child.stderr!.on('data', (d: Buffer) => {
      this.tail = (this.tail + d.toString()).slice(-4000)
      this.stderr += d.toString()
      let nl: number
      while ((nl = this.stderr.indexOf('\n')) >= 0) {
        const line = this.stderr.slice(0, nl)
        this.stderr = this.stderr.slice(nl + 1)
        if (this.recordingAt === null && line.includes('"msg":"recording"')) this.recordingAt = performance.now()
        if (line.includes('"level":"error"')) this.errors.push(line)
      }
    })
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => { this.exit = { code, signal }; resolve() }))
  }

  get pid(): number { return this.child.pid! }
  get stderrTail(): string { return this.tail }

  async waitRecording(timeoutMs: number): Promise<boolean> {
    const until = performance.now() + timeoutMs
    while (this.recordingAt === null && this.exit === null && performance.now() < until) await sleep(10)
    return this.recordingAt !== null
  }
}

/** Runs the procedure; never throws for a check that fails (the report lists it), only for a broken setup. */
export async function crashRecord(o: CrashOptions): Promise<CrashReport> {
  const began = performance.now()
  const rand = seededRandom(o.seed)
  const scale = o.timeScale ?? 360
  const instruments = o.instruments ?? ['BTCUSDT', 'ETHUSDT']
  const startingKills = o.startingKills ?? { odds: 0.25, withinMs: 600 }
  const upMs = o.upMs ?? 1000
  const tearOdds = o.tearOdds ?? 0.25
  const log = o.log ?? (() => {})

  const failures = Object.fromEntries(CHECKS.map((c) => [c, { count: 0, examples: [] as string[] }])) as CrashReport['failures']
  const fail = (check: Check, msg: string) => {
    const f = failures[check]
    f.count++
    if (f.examples.length < EXAMPLES) f.examples.push(msg)
    log(`FAIL ${check}: ${msg}`)
  }

  await mkdir(o.dir, { recursive: true })
  const journal = join(o.dir, 'journal')
  const channelJournal = join(journal, CHANNEL)
  const root = join(o.dir, 'root')
  const keyFile = join(o.dir, 'key.jwk')
  const keysFile = join(o.dir, 'jwks.json')
  const seedBytes = new Uint8Array(32)
  for (let i = 0; i < 32; i++) seedBytes[i] = Math.floor(rand() * 256)
  const { privateJwk, publicJwk } = await newSigningKey({ validFrom: '2026-01-01T00:00:00.000000000Z', seed: seedBytes })
  await writePrivateJwkFile(keyFile, privateJwk)
  await writeJwksFile(keysFile, { keys: [publicJwk] })

  const sim: VenueSimulator = await startVenueSimulator({
    seed: o.seed, rate: o.rate ?? 1, instruments, startTime: Date.parse(o.start ?? '2026-10-03T22:50:00Z'), timeScale: scale, keepTruth: false,
  })
  const groups = new Set<number>()
  // A run torn down before its end must not leave daemons recording (and reconnecting) for ever.
  const killAll = () => { for (const pid of groups) if (groupAlive(pid)) process.kill(-pid, 'SIGKILL') }
  process.on('exit', killAll)
  const kills: Kill[] = []
  const tears: Tear[] = []
  const errorLogs: string[] = []
  /** Every frame the journal held after a kill, with the first kill after which it was seen. */
  const beforeKills = new Map<string, number>()
  let spawns = 0
  let recordingDaemons = 0
  let stopMs = 0

  const startDaemon = () => {
    spawns++
    // The daemon's clock starts at the simulator's time now, when it starts: behind it by the start-up, so a
    // daemon's receive times always follow those of the one before it.
    const timeStart = new Date(Math.floor(sim.nowUs() / 1000)).toISOString()
    const d = new Daemon([
      'run', 'record', '--venue', VENUE, '--instruments', instruments.join(','), '--channels', CHANNEL, '--journal', journal,
      '--out', root, '--key', keyFile, '--keys', keysFile, '--recorder', RECORDER, '--endpoint', sim.wsUrl, '--rest-endpoint', sim.restUrl,
      '--clock', 'simulated', '--time-scale', String(scale), '--time-start', timeStart,
    ])
    groups.add(d.pid)
    return { d, timeStartNs: BigInt(Date.parse(timeStart)) * 1_000_000n }
  }

  const latestFiles = async () => {
    const out = new Map<Replica, string>()
    for (const r of REPLICAS) {
      const files = await listJournalFiles(channelJournal, r)
      if (files.length > 0) out.set(r, files[files.length - 1]!.path)
    }
    return out
  }
  const sizeOf = (path: string | undefined) => (path === undefined ? Promise.resolve(-1) : stat(path).then((s) => s.size, () => -1))

  try {
    const hourEnd = new Set<number>()
    const hourEndKills = Math.max(1, Math.round(o.kills * (o.hourEndShare ?? 0.1)))
    while (hourEnd.size < Math.min(hourEndKills, o.kills)) hourEnd.add(Math.floor(rand() * o.kills))
    for (let k = 0; k < o.kills; k++) {
      // Every draw is made up front, so that the kills are the seed's whatever the timing.
      const mode: Kill['mode'] = rand() < 0.5 ? 'daemon' : 'group'
      const kind: Kill['kind'] = hourEnd.has(k) ? 'hour-end' : rand() < startingKills.odds ? 'starting' : 'recording'
      const delay = rand() * (kind === 'starting' ? startingKills.withinMs : upMs)
      const tear = rand() < tearOdds
      const tearReplica: Replica = rand() < 0.5 ? 'a' : 'b'
      const tearAt = rand()

      const before = await latestFiles()
      const sizesBefore = new Map<Replica, number>()
      for (const r of REPLICAS) sizesBefore.set(r, await sizeOf(before.get(r)))
      const { d, timeStartNs } = startDaemon()
      if (kind !== 'starting' && !(await d.waitRecording(30_000)) && d.exit === null) fail('crash', `kill ${k}: the daemon did not say it records within 30 s: ${d.stderrTail.slice(-600)}`)
      let restartAfter: bigint | null = null
      if (kind === 'hour-end') restartAfter = await untilHourEnd(channelJournal, timeStartNs, d, (3_600_000 / scale) * 2)
      else {
        const wait = (kind === 'starting' ? d.spawnedAt : (d.recordingAt ?? performance.now())) + delay - performance.now()
        if (wait > 0) await Promise.race([sleep(wait), d.exited])
      }
      if (d.exit !== null) {
        fail('crash', `kill ${k}: the daemon ended on its own (exit ${d.exit.code}, signal ${d.exit.signal}): ${d.stderrTail.slice(-800)}`)
      } else {
        process.kill(mode === 'group' ? -d.pid : d.pid, 'SIGKILL')
        await d.exited
      }
      const afterMs = performance.now() - d.spawnedAt
      // A seal-hour child the daemon leaves behind; after a group kill, the group may only be waiting to be reaped.
      const orphan = mode === 'daemon' && groupAlive(d.pid)
      if (d.recordingAt !== null) recordingDaemons++
      errorLogs.push(...d.errors)

      // A torn tail the kill left, then one it could have left: the last record of a file the process wrote, cut.
      const after = await latestFiles()
      let tore = false
      for (const r of REPLICAS) {
        const path = after.get(r)
        if (path === undefined) continue
        const scan = await scanJournalFile(path)
        const last = scan.problems[scan.problems.length - 1]
        if (last && last.kind === 'torn' && last.reason !== 'truncated-on-reopen' && last.offset + last.bytes === scan.size) {
          // Left by this kill, or by an earlier one when no daemon has written the file since.
          if (!tears.some((t) => t.file === path && t.offset === last.offset)) tears.push({ file: path, offset: last.offset, bytes: last.bytes, made: false })
        } else if (tear && r === tearReplica && (path !== before.get(r) || scan.size > sizesBefore.get(r)!)) {
          const made = await tearLastRecord(path, tearAt)
          if (made) tears.push(made)
          tore = made !== null
        }
      }
      const kill: Kill = { index: k, kind, mode, startMs: d.recordingAt === null ? null : Math.round(d.recordingAt - d.spawnedAt), afterMs: Math.round(afterMs), orphan, tore }
      if (kind === 'hour-end') {
        const last = await lastRecordTime(channelJournal, 'a')
        if (last !== null) kill.toHourEndMs = Number((hourStart(last) + HOUR_NS - last) / 1_000_000n)
      }
      kills.push(kill)
      for await (const batch of readJournalRange(channelJournal, { start: hourStart(timeStartNs), merge: false })) {
        for (const e of batch.events) if (e.kind === 'frame') { const key = frameKey(e); if (!beforeKills.has(key)) beforeKills.set(key, k) }
      }
      // An hour-end kill's downtime runs past the hour: the next daemon starts after it.
      while (restartAfter !== null && BigInt(Math.floor(sim.nowUs())) * 1000n <= restartAfter) await sleep(5)
      log(`kill ${k}: ${kind}, ${mode}, ${d.recordingAt !== null ? `recording after ${Math.round(d.recordingAt - d.spawnedAt)} ms` : 'starting'}, killed ${Math.round(afterMs)} ms after the spawn${kill.toHourEndMs !== undefined ? `, ${kill.toHourEndMs} simulated ms before the hour's end` : ''}${orphan ? ', seal child orphaned' : ''}${tore ? ', last record torn' : ''}`)
    }

    // The last daemon is stopped as an operator stops it.
    const { d } = startDaemon()
    if (!(await d.waitRecording(30_000))) fail('stop', `the last daemon did not say it records within 30 s: ${d.stderrTail.slice(-600)}`)
    else recordingDaemons++
    await Promise.race([sleep(o.finalRunMs ?? 1000), d.exited])
    if (d.exit !== null) fail('crash', `the last daemon ended on its own (exit ${d.exit.code}): ${d.stderrTail.slice(-800)}`)
    else {
      const stopAt = performance.now()
      d.child.kill('SIGTERM')
      // Unreferenced: a daemon that stops in time must not leave this timer holding the process open.
      const stopped = await Promise.race([d.exited.then(() => true), delay(30_000, false, { ref: false })])
      stopMs = Math.round(performance.now() - stopAt)
      if (!stopped) {
        fail('stop', `SIGTERM: still running after 30 s: ${d.stderrTail.slice(-800)}`)
        process.kill(-d.pid, 'SIGKILL')
        await d.exited
      } else if (d.exit!.code !== 0) fail('stop', `SIGTERM: exit ${d.exit!.code} (signal ${d.exit!.signal}): ${d.stderrTail.slice(-800)}`)
    }
    errorLogs.push(...d.errors)
    await sim.close()

    // Seal children orphaned by a kill finish their hour; one still running after a minute is stuck.
    const until = performance.now() + 60_000
    while ([...groups].some(groupAlive) && performance.now() < until) await sleep(50)
    for (const pid of groups) if (groupAlive(pid)) fail('seal', `process group ${pid} still runs a minute after its daemon ended`)

    // The rest of the journal, sealed as after a recorder stopped for good.
    const sealed = await chainHours(root, { recorder: RECORDER, venue: VENUE, channel: CHANNEL })
    let lastJournaled: bigint | null = null
    let firstJournaled: bigint | null = null
    for (const r of REPLICAS) {
      for (const f of await listJournalFiles(channelJournal, r)) {
        if (lastJournaled === null || f.hour > lastJournaled) lastJournaled = f.hour
        if (firstJournaled === null || f.hour < firstJournaled) firstJournaled = f.hour
      }
    }
    if (lastJournaled === null || firstJournaled === null) throw new Error('nothing was journaled')
    for (let h = sealed.length > 0 ? sealed[sealed.length - 1]! + HOUR_NS : firstJournaled; h <= lastJournaled; h += HOUR_NS) {
      const r = await runCli([
        'run', 'seal-hour', '--venue', VENUE, '--channel', CHANNEL, '--hour', hourName(h), '--journal', channelJournal, '--out', root,
        '--key', keyFile, '--keys', keysFile, '--recorder', RECORDER, ...(h === lastJournaled ? ['--recorder-stopped'] : []),
      ])
      if (r.code !== 0) fail('seal', `seal-hour ${hourName(h)}: exit ${r.code}: ${r.stderr.trim().slice(0, 600)}`)
    }
    const v = await runCli(['run', 'verify', '--root', root, '--keys', keysFile, '--json'])
    if (v.code !== 0) fail('verify', `exit ${v.code}: ${v.stdout.slice(0, 1500)}${v.stderr.slice(0, 600)}`)

    // What the journal holds at the end: its frames, each replica's downtimes, and its damage.
    const journaled = new Map<string, number>()
    const lastRecord = new Map<Replica, bigint | null>(REPLICAS.map((r) => [r, null]))
    const pendingDown = new Map<Replica, bigint | null>(REPLICAS.map((r) => [r, null]))
    const down: Record<Replica, Span[]> = { a: [], b: [] }
    const recorderStarts: Record<Replica, number> = { a: 0, b: 0 }
    for await (const batch of readJournalRange(channelJournal, { merge: false })) {
      for (const e of batch.events) {
        if (e.kind === 'frame') {
          const key = frameKey(e)
          journaled.set(key, (journaled.get(key) ?? 0) + 1)
        }
        if ('restated' in e && e.restated === true) continue
        const t = eventTime(e)
        if (e.kind === 'recorder-start') {
          recorderStarts[e.replica]++
          const last = lastRecord.get(e.replica)!
          // Down from 1 ns after the last record of the process before, until this one subscribes.
          if (last !== null && pendingDown.get(e.replica) === null) pendingDown.set(e.replica, last + 1n)
        } else if (e.kind === 'subscribed') {
          const from = pendingDown.get(e.replica)!
          if (from !== null && t > from) down[e.replica].push([from, t])
          pendingDown.set(e.replica, null)
        }
        lastRecord.set(e.replica, t)
      }
    }
    const downtimes = intersect(union(down.a), union(down.b))

    const files = new Map<string, { hour: bigint; problems: JournalProblem[] }>()
    for (const r of REPLICAS) {
      for (const f of await listJournalFiles(channelJournal, r)) files.set(f.path, { hour: f.hour, problems: (await scanJournalFile(f.path)).problems })
    }

    // The sealed hours, and every receipt of their raw files.
    const raw = new Map<string, number>()
    const hours: CrashReport['hours'] = []
    const manifests = new Map<bigint, HourlyManifest>()
    for (const h of await chainHours(root, { recorder: RECORDER, venue: VENUE, channel: CHANNEL })) {
      const dir = join(root, dayDir(RECORDER, VENUE, CHANNEL, formatTime(h).slice(0, 10)), `hour=${formatTime(h).slice(11, 13)}`)
      const m = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as HourlyManifest
      manifests.set(h, m)
      hours.push({ hour: hourName(h), status: m.completeness.status, reasons: [...m.completeness.reasons], covered: Object.fromEntries(m.replicas.map((x) => [x.replica, x.covered_ns])) as Record<Replica, number> })
      const rawPath = join(dir, RAW_FILE_NAME)
      if (!existsSync(rawPath)) continue
      for (const line of decompress(await readFile(rawPath)).toString('utf8').split('\n')) {
        if (line === '') continue
        const env = JSON.parse(line) as { payload: string; receipts: { replica: string; connection: string; receive_time: string; clock_offset?: number; clock_error_bound?: number }[] }
        for (const rc of env.receipts) {
          const key = receiptKey(rc.replica, rc.connection, parseTime(rc.receive_time), rc.clock_offset === undefined ? undefined : BigInt(rc.clock_offset), rc.clock_error_bound === undefined ? undefined : BigInt(rc.clock_error_bound), env.payload)
          raw.set(key, (raw.get(key) ?? 0) + 1)
        }
      }
    }
    for (let h = firstJournaled; h <= lastJournaled; h += HOUR_NS) if (!manifests.has(h)) fail('seal', `hour ${hourName(h)} was journaled but is not sealed`)

    // Frames: kept across restarts, sealed, and nothing sealed that was not journaled.
    for (const [key, k] of beforeKills) {
      if (!journaled.has(key)) fail('lost', `a frame the journal held after kill ${k} is gone from it (${key})`)
      if (!raw.has(key)) fail('unsealed', `a frame the journal held after kill ${k} is in no raw file (${key})`)
    }
    for (const [key, n] of journaled) if ((raw.get(key) ?? 0) < n && !beforeKills.has(key)) fail('unsealed', `a frame of the last daemon is in no raw file (${key})`)
    for (const [key, n] of raw) if ((journaled.get(key) ?? 0) < n) fail('invented', `a raw receipt the journal does not hold (${key}), ${n} times`)

    // Torn tails, each where it was left and reported in its hour; corruption nowhere.
    for (const t of tears) {
      const f = files.get(t.file)
      const found = f?.problems.find((p) => p.kind === 'torn' && p.offset === t.offset && p.bytes === t.bytes)
      if (!found) fail('torn', `${t.file}: the torn tail at ${t.offset} (${t.bytes} bytes) is not reported: ${JSON.stringify(f?.problems ?? 'no such file')}`)
    }
    for (const [path, f] of files) {
      const torn = f.problems.some((p) => p.kind === 'torn')
      const m = manifests.get(f.hour)
      if (torn && m && !m.completeness.reasons.includes('journal_torn')) fail('torn', `${hourName(f.hour)}: ${path} has a torn tail, the hour does not say journal_torn`)
      if (torn && !tears.some((t) => t.file === path)) fail('torn', `${path}: a torn tail no kill left: ${JSON.stringify(f.problems)}`)
      for (const p of f.problems) if (p.kind === 'corrupt') fail('corrupt', `${path}: ${p.reason} at ${p.offset}: ${p.detail}`)
    }
    for (const [h, m] of manifests) {
      if (m.completeness.reasons.includes('journal_torn') && ![...files.values()].some((f) => f.hour === h && f.problems.some((p) => p.kind === 'torn'))) fail('torn', `${hourName(h)} says journal_torn, no file of it is torn`)
      if (m.completeness.reasons.includes('journal_corrupt')) fail('corrupt', `${hourName(h)} says journal_corrupt`)
    }

    // Downtimes: recorder_down in every hour they touch, and covered by no replica.
    for (const [from, to] of downtimes) {
      for (let h = hourStart(from); h < to; h += HOUR_NS) {
        const m = manifests.get(h)
        if (!m) continue
        if (!m.completeness.reasons.includes('recorder_down')) fail('silence', `${hourName(h)}: the recorder was down ${formatTime(from)} .. ${formatTime(to)}, the hour says ${m.completeness.status} ${JSON.stringify(m.completeness.reasons)}`)
      }
    }
    for (const [h, m] of manifests) {
      for (const r of REPLICAS) {
        const downNs = total(intersect(union(down[r]), [[h, h + HOUR_NS]]))
        const covered = BigInt(m.replicas.find((x) => x.replica === r)!.covered_ns)
        if (covered > HOUR_NS - downNs) fail('covered', `${hourName(h)}: replica ${r} covered ${covered} ns, but was down ${downNs} ns of the hour`)
      }
    }

    let sealLeftovers = 0
    const chainDir = join(root, `recorder=${RECORDER}`, `venue=${VENUE}`, `channel=${CHANNEL}`)
    for (const day of await readdir(chainDir)) sealLeftovers += (await readdir(join(chainDir, day))).filter((n) => n.endsWith('.tmp')).length

    return {
      seed: o.seed, sealLeftovers, kills, spawns, recorderStarts, recordingDaemons,
      framesBeforeKills: beforeKills.size, framesJournaled: [...journaled.values()].reduce((s, n) => s + n, 0), rawReceipts: [...raw.values()].reduce((s, n) => s + n, 0),
      downtimes: downtimes.map(([s, e]) => ({ from: formatTime(s), to: formatTime(e) })), tears, hours, errorLogs, stopMs, failures,
      wallMs: Math.round(performance.now() - began),
    }
  } finally {
    await sim.close()
    killAll()
    process.off('exit', killAll)
  }
}

/**
 * Waits until the daemon's journal (replica a's latest record) is within half a heartbeat interval of the end
 * of its hour — the liveness rule allows two intervals of silence, so the silence a kill now starts is not
 * yet long enough to show by the hour's end — or the daemon ends, or `withinMs` passes. An hour nearly over
 * when the daemon starts is passed over. Gives the hour's end.
 */
async function untilHourEnd(journal: string, since: bigint, d: Daemon, withinMs: number): Promise<bigint | null> {
  let interval: bigint | null = null
  for await (const batch of readJournalRange(journal, { start: since, replicas: ['a'] })) {
    for (const e of batch.events) if (e.kind === 'recorder-start' && e.restated !== true) interval = e.heartbeatIntervalNs
  }
  if (interval === null) return null
  const until = performance.now() + withinMs
  let end: bigint | null = null
  while (d.exit === null && performance.now() < until) {
    const now = await lastRecordTime(journal, 'a')
    if (now !== null) {
      end ??= hourStart(now) + HOUR_NS - now < interval ? hourStart(now) + 2n * HOUR_NS : hourStart(now) + HOUR_NS
      if (now >= end - interval / 2n) return end
    }
    await sleep(2)
  }
  return end
}

/** The event time of the last record of a replica's latest journal file, read from the file's tail. */
async function lastRecordTime(journal: string, replica: Replica): Promise<bigint | null> {
  const files = await listJournalFiles(journal, replica)
  if (files.length === 0) return null
  const path = files[files.length - 1]!.path
  const size = await stat(path).then((s) => s.size)
  let last: bigint | null = null
  for await (const b of readJournalFile(path, { startOffset: Math.max(0, size - 64 * 1024) })) {
    for (const e of b.events) if (!('restated' in e && e.restated === true)) last = eventTime(e)
  }
  return last
}

/** Cuts the last record of `path` at a point `at` (0..1) inside it; null when the file does not end on a whole record. */
async function tearLastRecord(path: string, at: number): Promise<Tear | null> {
  const bytes = await readFile(path)
  const { offsets } = decodeJournal(bytes, path)
  if (offsets.length === 0) return null
  const offset = offsets[offsets.length - 1]!
  const length = RECORD_HEADER_SIZE + bytes.readUInt32LE(offset + 4)
  if (offset + length !== bytes.length) return null
  const left = 1 + Math.floor(at * (length - 1))
  await truncate(path, offset + left)
  return { file: path, offset, bytes: left, made: true }
}

/** `soak-record kills N ...`: the line the soak prints last. */
export function summaryLine(r: CrashReport): string {
  const failed = CHECKS.filter((c) => r.failures[c].count > 0).map((c) => `${c}:${r.failures[c].count}`)
  return `soak-record kills ${r.kills.length} spawns ${r.spawns} frames-checked ${r.framesBeforeKills} frames-journaled ${r.framesJournaled} raw-receipts ${r.rawReceipts} hours ${r.hours.length} downtimes ${r.downtimes.length} tears ${r.tears.length} orphans ${r.kills.filter((k) => k.orphan).length} seal-leftovers ${r.sealLeftovers} stop-ms ${r.stopMs} failures ${failed.length === 0 ? 0 : failed.join(',')} wall-s ${(r.wallMs / 1000).toFixed(1)}`
}


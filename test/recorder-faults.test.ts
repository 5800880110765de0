/**
 * Issue 25, item 4: the recorder daemon against the venue simulator through a plan holding every fault
 * kind, on both channels, and the sealed hours state exactly what the simulator's truth says it did —
 * sequence_gaps, reconnect_windows and their close codes, conflicts, replica_agreement, unrepresentable
 * frames and completeness reasons — nothing missed and nothing invented. `pipe run verify` passes, every
 * frame the simulator wrote to a connection is in a raw file, and the book channel journals a REST
 * snapshot after every (re)subscription and every break it saw. A second run shows the recorder's own
 * rotation before the venue's scheduled disconnect: the successor is up before the old connection closes,
 * so no reconnect window is stated for it.
 *
 * Each channel is served by a simulator of its own: a fault names its target by replica label, and the
 * recorder labels all of a replica's connections alike, so one simulator could not say which channel's
 * connection a fault should hit.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { decompress } from 'zstd-napi'
import { childEnv } from './helpers/io.js'
import { sealRest } from './helpers/seal-rest.js'
import { hourName, readJournalRange } from '../src/formats/record/journal/journal.js'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import { COMPLETENESS_REASONS, type CompletenessReason, type HourlyManifest } from '../src/formats/record/manifest.js'
import { parseTime } from '../src/formats/record/time.js'
import type { Channel, JournalEvent, Replica } from '../src/formats/record/types.js'
import type { ClockReading } from '../src/recorder/clock/recorder-clock.js'
import { SimulatedClock } from '../src/recorder/clock/simulated-clock.js'
import type { FrameClock } from '../src/recorder/connection.js'
import { jsonLogger } from '../src/recorder/log.js'
import { Recorder } from '../src/recorder/recorder.js'
import type { FaultPlanInput } from '../src/sim/venue/faults.js'
import { startVenueSimulator, type VenueSimulator } from '../src/sim/venue/simulator.js'
import type { TruthRecord } from '../src/sim/venue/truth.js'
import type { SequenceState, VenueAdapter } from '../src/venues/adapter.js'
import { createBinanceSpotAdapter, wrapBinanceDepthSnapshot } from '../src/venues/binance.js'

const CLI = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const dir = await mkdtemp(join(tmpdir(), 'pipe-recorder-faults-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

const { privateJwk, publicJwk } = await newSigningKey({ validFrom: '2026-01-01T00:00:00.000000000Z', seed: new Uint8Array(32).fill(11) })
const keyFile = join(dir, 'key.jwk')
const keysFile = join(dir, 'jwks.json')
await writePrivateJwkFile(keyFile, privateJwk)
await writeJwksFile(keysFile, { keys: [publicJwk] })

/** The channels Binance spot serves. */
type SpotChannel = Extract<Channel, 'trades' | 'book'>
const CHANNELS: readonly SpotChannel[] = ['trades', 'book']
const INSTRUMENTS = ['BTCUSDT', 'ETHUSDT']
const MIN = 60_000
const HOUR_14 = Date.UTC(2026, 9, 3, 14)
const HOUR_MS = 3_600_000
const HOUR_NS = BigInt(HOUR_MS) * 1_000_000n
const msToNs = (ms: number) => BigInt(ms) * 1_000_000n
const binance = createBinanceSpotAdapter()

/**
 * The simulated clock, read once per turn of the event loop: every reading up to the turn's setImmediate
 * phase gives the turn's first. At a time scale S the sealer's 5 s pairing window is 5000/S ms of real
 * time, and a preemption on a loaded machine between reading replica a's socket and replica b's would
 * split one frame's receipts into two lines. The simulator writes a frame to both replicas in one step and
 * both sockets are read in one later turn, so both receipts carry the same time, however the scheduler
 * runs. The simulator reads the same clock, so no frame is received before it was made.
 */
function turnClock(clock: SimulatedClock): FrameClock & { nowMs(): number } {
  let held: ClockReading | null = null
  const now = (): ClockReading => {
    if (held === null) {
      held = clock.now()
      setImmediate(() => { held = null })
    }
    return held
  }
  return { now, receiptClock: (reading) => clock.receiptClock(reading), nowMs: () => Number(now().receiveTime / 1000n) / 1000 }
}

/** The Binance adapter, with each channel's connections and snapshots going to that channel's simulator. */
function venueOf(sims: Record<SpotChannel, VenueSimulator>): VenueAdapter {
  const trades = createBinanceSpotAdapter({ wsBase: sims.trades.wsUrl, restBase: sims.trades.restUrl })
  const book = createBinanceSpotAdapter({ wsBase: sims.book.wsUrl, restBase: sims.book.restUrl })
  const of = (channel: Channel) => (channel === 'book' ? book : trades)
  return { ...binance, connect: (channel, instruments) => of(channel).connect(channel, instruments), snapshotRequest: (channel, instrument) => of(channel).snapshotRequest(channel, instrument) }
}

interface Run {
  sims: Record<SpotChannel, VenueSimulator>
  root: string
  journal: string
  logLines: string[]
  /** When the test stopped the recorder, on its clock. */
  stoppedAt: bigint
  /** Exit codes of sealing hour 15 of each channel, and of `pipe run verify` on the root. */
  /** By channel: the first failed seal's exit code, 0 when hour 15 and every later hour journaled are sealed, -1 when hour 15 is not. */
  sealedHour15: (number | null)[]
  /** Hour 15 and the later hours journaled (a loaded machine's daemon may have run on past hour 15). */
  laterHours: bigint[]
  verify: { status: number | null; stdout: string }
}

/**
 * Starts both simulators and the recorder on one clock (start `startMs`, `scale` times real time), waits
 * until the daemon has sealed hour 14 of both channels, stops the recorder and the simulators, seals the
 * rest of the journal as a stopped recorder's last hour is sealed, and verifies the root.
 */
async function recordAndSeal(t: Test, name: string, o: {
  startMs: number; scale: number; plans: Record<SpotChannel, FaultPlanInput['faults']>
  stallMs?: number; rotateAfterMs?: number
}): Promise<Run> {
  const clock = turnClock(new SimulatedClock(msToNs(o.startMs), o.scale))
  const start = (faults: FaultPlanInput['faults']) => startVenueSimulator({ seed: 7, instruments: INSTRUMENTS, rate: 1, depthIntervalMs: 1000, clock: clock.nowMs, faults: { faults } })
  const sims = { trades: await start(o.plans.trades), book: await start(o.plans.book) }
  t.teardown(() => Promise.all([sims.trades.close(), sims.book.close()]))
  const root = join(dir, name, 'root')
  const journal = join(dir, name, 'journal')
  const logLines: string[] = []
  const recorder = new Recorder({
    venue: venueOf(sims), instruments: INSTRUMENTS, channels: CHANNELS, replicas: ['a', 'b'], journal, clock,
    log: jsonLogger({ write: (l: string) => { logLines.push(l); return true } } as never),
    // A heartbeat every real second: a loaded machine's pauses are not taken for the recorder being down.
    timeScale: o.scale, heartbeatMs: 1000 * o.scale, backoffMs: { first: 50, max: 200 },
    ...(o.stallMs !== undefined ? { stallMs: o.stallMs } : {}),
    ...(o.rotateAfterMs !== undefined ? { rotateAfterMs: o.rotateAfterMs } : {}),
    seal: { root, key: keyFile, keys: keysFile, recorder: 'rec-1', cli: CLI, everyMs: 200, graceMs: 2 * MIN, starvedWindowMs: 5_000 },
  })
  await recorder.start()
  t.teardown(() => recorder.stop())
  await waitFor('hour 14 sealed on both channels', () => CHANNELS.every((c) => existsSync(join(hourDir(root, c, '14'), 'manifest.json'))), 120_000)
  const stoppedAt = clock.now().receiveTime
  await recorder.stop()
  await Promise.all([sims.trades.close(), sims.book.close()])
  // The hours the daemon left, hour 15 at least (test/helpers/seal-rest.ts).
  const rest = await Promise.all(CHANNELS.map((channel) => sealRest(CLI, { root, journal: join(journal, channel), venue: 'binance', channel, recorder: 'rec-1', key: keyFile })))
  const sealed = rest.map((r) => r.statuses.find((x) => x !== 0) ?? (r.hours.includes(msToNs(HOUR_14) + HOUR_NS) ? 0 : -1))
  const laterHours = rest[0]!.hours.filter((h) => h > msToNs(HOUR_14))
  const verify = await runCli(['run', 'verify', '--root', root, '--keys', keysFile, '--json'])
  return { sims, root, journal, logLines, stoppedAt, sealedHour15: sealed, laterHours, verify }
}

async function waitFor(what: string, ok: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!ok()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

function runCli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    child.on('close', (status) => resolve({ status, stdout, stderr }))
  })
}

const hourDir = (root: string, channel: Channel, hh: string) => join(root, 'recorder=rec-1', 'venue=binance', `channel=${channel}`, 'date=2026-10-03', `hour=${hh}`)

async function manifestOf(root: string, channel: Channel, hh: string): Promise<HourlyManifest> {
  return JSON.parse(await readFile(join(hourDir(root, channel, hh), 'manifest.json'), 'utf8')) as HourlyManifest
}

interface RawLine { payload: string; replicas: Replica[] }

/** The raw lines of hour 15 and of every later hour sealed. */
async function laterRawLines(run: Run, channel: Channel): Promise<RawLine[]> {
  const out: RawLine[] = []
  for (const h of run.laterHours) out.push(...await rawLines(run.root, channel, h))
  return out
}

async function rawLines(root: string, channel: Channel, hour: string | bigint): Promise<RawLine[]> {
  const dir = typeof hour === 'string' ? hourDir(root, channel, hour) : join(root, 'recorder=rec-1', 'venue=binance', `channel=${channel}`, `date=${hourName(hour).slice(0, 10)}`, `hour=${hourName(hour).slice(11, 13)}`)
  const path = join(dir, 'raw.jsonl.zst')
  if (!existsSync(path)) return []
  return decompress(await readFile(path)).toString('utf8').split('\n').filter(Boolean).map((l) => {
    const e = JSON.parse(l) as { payload: string; receipts: { replica: Replica }[] }
    return { payload: e.payload, replicas: e.receipts.map((r) => r.replica) }
  })
}

/** A channel's journal events, replica a's then b's, each in the order written, without the state restated at the top of each hour file. */
async function journalEvents(journal: string, channel: Channel): Promise<JournalEvent[]> {
  const events: JournalEvent[] = []
  for await (const batch of readJournalRange(join(journal, channel), { merge: false })) {
    for (const e of batch.events) if (!('restated' in e && e.restated)) events.push(e)
  }
  return events
}

// ---------------------------------------------------------------------------------------------------------
// What the truth says

type Fault = Extract<TruthRecord, { kind: 'fault' }>
type Close = Extract<TruthRecord, { kind: 'close' }>

const inHour = (us: number, hourMs: number) => us >= hourMs * 1000 && us < (hourMs + HOUR_MS) * 1000
const symbolOf = (stream: string) => stream.slice(0, stream.indexOf('@')).toUpperCase()
const restText = (r: Extract<TruthRecord, { kind: 'rest' }>) => wrapBinanceDepthSnapshot(new URLSearchParams(r.path.slice(r.path.indexOf('?'))).get('symbol')!, r.text)
const isSnapshot = (payload: string) => payload.startsWith('{"rest":"depth"')

/** A simulator's truth, read for what the recorder should have made of it. */
class TruthOf {
  private readonly replicaOf = new Map<string, Replica>()
  /** Market frames by text: the replicas whose connections the venue wrote them to. */
  readonly sentTo = new Map<string, Set<Replica>>()
  readonly replies = new Set<string>()
  /** REST snapshots as the recorder journals them, and how many times each was served. */
  readonly snapshots = new Map<string, number>()

  constructor(readonly records: readonly TruthRecord[]) {
    for (const r of records) {
      if (r.kind === 'open') this.replicaOf.set(r.conn, r.replica as Replica)
      else if (r.kind === 'frame') for (const c of r.to) this.sentToOf(r.text).add(this.replicaOf.get(c)!)
      else if (r.kind === 'reply') this.replies.add(r.text)
      else if (r.kind === 'rest' && r.status === 200) this.snapshots.set(restText(r), (this.snapshots.get(restText(r)) ?? 0) + 1)
    }
  }

  private sentToOf(text: string): Set<Replica> {
    let s = this.sentTo.get(text)
    if (!s) this.sentTo.set(text, (s = new Set()))
    return s
  }

  get faults(): Fault[] {
    return this.records.filter((r): r is Fault => r.kind === 'fault')
  }

  appliedIn(hourMs: number, kind: string): Fault[] {
    return this.faults.filter((f) => f.applied && f.fault.kind === kind && inHour(f.simTimeUs, hourMs))
  }

  /** The gaps the venue made: the ids each gap fault dropped, with the ids either side. */
  venueGaps(hourMs: number): string[] {
    return this.appliedIn(hourMs, 'gap').map((f) => {
      const dropped = f.detail['dropped'] as { first: number; last: number }[]
      return `${symbolOf(f.detail['stream'] as string)} ${dropped[0]!.first - 1}..${dropped[dropped.length - 1]!.last + 1}`
    }).sort()
  }

  conflicts(hourMs: number) {
    return this.appliedIn(hourMs, 'conflict').map((f) => ({ instrument: symbolOf(f.detail['stream'] as string), trade_id: String(f.detail['first']), texts: [f.detail['original'] as string, f.detail['text'] as string].sort() }))
  }

  unrepresentable(hourMs: number): string[] {
    return this.appliedIn(hourMs, 'unrepresentable').map((f) => f.detail['text'] as string).sort()
  }

  /** The replica's connections in the order the venue accepted them, each with its subscription and close. */
  connections(replica: Replica) {
    return this.records.filter((r): r is Extract<TruthRecord, { kind: 'open' }> => r.kind === 'open' && r.replica === replica).map((open) => ({
      conn: open.conn,
      openUs: open.simTimeUs,
      subscribedUs: this.records.find((r) => r.kind === 'subscribe' && r.conn === open.conn)?.simTimeUs,
      close: this.records.find((r): r is Close => r.kind === 'close' && r.conn === open.conn),
    }))
  }

  /**
   * The reconnect windows the replica had in the hour: each close of a connection in it that left the
   * replica with no other connection, until its next connection subscribed. The close code is the venue's
   * close frame's: none when the venue dropped the TCP connection (1006) or when the recorder closed it.
   */
  reconnectWindows(replica: Replica, hourMs: number) {
    const conns = this.connections(replica)
    return conns.flatMap((c, i) => {
      const close = c.close
      if (!close || !inHour(close.simTimeUs, hourMs)) return []
      if (conns.some((o) => o !== c && o.openUs <= close.simTimeUs && (!o.close || o.close.simTimeUs > close.simTimeUs))) return []
      const next = conns[i + 1]
      const lastFrame = this.records.findLast((r) => r.kind === 'frame' && r.to.includes(c.conn))
      return [{
        close, lastFrameUs: lastFrame?.simTimeUs ?? c.openUs, code: close.by === 'venue' && close.code !== 1006 ? close.code : undefined,
        nextOpenUs: next?.openUs ?? Number.MAX_SAFE_INTEGER, nextSubscribedUs: next?.subscribedUs ?? Number.MAX_SAFE_INTEGER,
      }]
    })
  }

  /** Each connection's frames in the order written to it. */
  framesTo(conn: string): Extract<TruthRecord, { kind: 'frame' }>[] {
    return this.records.filter((r): r is Extract<TruthRecord, { kind: 'frame' }> => r.kind === 'frame' && r.to.includes(conn))
  }

  repliesTo(replica: Replica): number {
    return this.records.filter((r) => r.kind === 'reply' && this.replicaOf.get(r.to) === replica).length
  }
}

/**
 * The breaks in the venue's sequences among `frames`, in the order given, by the venue's rules (each as
 * `INSTRUMENT after..before`), with the frame that shows each.
 */
function sequenceBreaks(channel: Channel, frames: Iterable<{ text: string; simTimeUs: number }>): { gap: string; simTimeUs: number }[] {
  const states = new Map<string, SequenceState>()
  const breaks: { gap: string; simTimeUs: number }[] = []
  for (const f of frames) {
    const c = binance.classify(channel, Buffer.from(f.text), false)
    const spans = c.kind === 'rows' ? c.sequences : c.kind === 'unrepresentable' ? (c.sequences ?? []) : []
    for (const span of spans) {
      const v = binance.sequence(states.get(span.instrument), span)
      states.set(span.instrument, v.state)
      if (v.verdict === 'gap') breaks.push({ gap: `${span.instrument} ${v.afterId}..${v.beforeId}`, simTimeUs: f.simTimeUs })
    }
  }
  return breaks
}

/** The breaks each of the replica's connections saw in the frames written to it: what the recorder must journal as `sequence-break`. */
function expectedBreaks(truth: TruthOf, replica: Replica, channel: Channel): string[] {
  return truth.connections(replica).flatMap(({ conn }) => sequenceBreaks(channel, truth.framesTo(conn)).map((b) => b.gap)).sort()
}

/**
 * The breaks among every frame the venue wrote to either replica, in the order it made them: the gaps the
 * venue made, and a stretch both replicas missed should a loaded machine ever make one. A frame one
 * replica missed and the other got is no gap.
 */
function deliveredGaps(truth: TruthOf, channel: Channel, hourMs: number): string[] {
  const delivered = truth.records.filter((r): r is Extract<TruthRecord, { kind: 'frame' }> => r.kind === 'frame' && r.to.length > 0)
  return sequenceBreaks(channel, delivered).filter((b) => inHour(b.simTimeUs, hourMs)).map((b) => b.gap).sort()
}

/**
 * For each book connection in the journal: a snapshot of every instrument after its subscription, and of
 * the instrument after each break it journaled, before it closed (unless the recorder closed it on
 * stopping, perhaps before its first update); and no snapshot nobody asked for.
 */
function snapshotProblems(events: JournalEvent[], stoppedAt: bigint): string[] {
  const wanted = new Map<string, Set<string>>()
  const problems: string[] = []
  for (const e of events) {
    if (!('connection' in e)) continue
    const want = wanted.get(e.connection) ?? new Set<string>()
    wanted.set(e.connection, want)
    if (e.kind === 'subscribed') for (const i of e.instruments) want.add(i)
    else if (e.kind === 'sequence-break') want.add(e.instrument)
    else if (e.kind === 'frame') {
      const text = Buffer.from(e.payload).toString('utf8')
      if (!isSnapshot(text)) continue
      const symbol = (JSON.parse(text) as { symbol: string }).symbol
      if (!want.delete(symbol)) problems.push(`${e.connection}: a snapshot of ${symbol} nothing asked for`)
    } else if (e.kind === 'closed' && e.time < stoppedAt && want.size > 0) problems.push(`${e.connection} closed without the snapshot of ${[...want].join(', ')}`)
  }
  return problems
}

/** Frames the venue wrote to a replica that no raw line holds with that replica's receipt, and raw lines the venue never sent. */
function rawVersusTruth(truth: TruthOf, lines: RawLine[]): { missed: string[]; invented: string[] } {
  const received = new Map<string, Set<Replica>>()
  const snapshotReceipts = new Map<string, number>()
  const replyReceipts = { a: 0, b: 0 }
  const invented: string[] = []
  for (const l of lines) {
    if (truth.replies.has(l.payload)) for (const r of l.replicas) replyReceipts[r]++
    else if (truth.snapshots.has(l.payload)) snapshotReceipts.set(l.payload, (snapshotReceipts.get(l.payload) ?? 0) + l.replicas.length)
    else if (truth.sentTo.has(l.payload)) {
      const set = received.get(l.payload) ?? new Set<Replica>()
      for (const r of l.replicas) set.add(r)
      received.set(l.payload, set)
    } else invented.push(l.payload.slice(0, 100))
  }
  const missed: string[] = []
  for (const [text, replicas] of truth.sentTo) for (const r of replicas) if (!received.get(text)?.has(r)) missed.push(`${r}: ${text.slice(0, 100)}`)
  for (const [text, n] of truth.snapshots) if (snapshotReceipts.get(text) !== n) missed.push(`snapshot served ${n} times, received ${snapshotReceipts.get(text) ?? 0}: ${text.slice(0, 100)}`)
  for (const r of ['a', 'b'] as const) if (replyReceipts[r] !== truth.repliesTo(r)) missed.push(`${r}: ${truth.repliesTo(r)} replies sent, ${replyReceipts[r]} received`)
  return { missed, invented }
}

/**
 * The hour's replica agreement as the truth states it: a market frame is seen by both replicas when the
 * venue wrote it to both; a snapshot served twice (the same book at the same moment, fetched by both
 * replicas) is one frame seen by both; each reply (a resubscription's acknowledgement) by its replica
 * alone. The hour a frame falls in is where the raw file put it: frame times are receipt times. Also the
 * lines whose receipts differ from that.
 */
function expectedAgreement(truth: TruthOf, lines: RawLine[], hourMs: number) {
  const expected = { both: 0, one_only: 0 }
  const wrong: string[] = []
  const seen = new Set<string>()
  for (const l of lines) {
    if (truth.replies.has(l.payload)) continue
    if (seen.has(l.payload)) wrong.push(`a second line of ${l.payload.slice(0, 80)}`)
    seen.add(l.payload)
    const n = truth.snapshots.get(l.payload) ?? truth.sentTo.get(l.payload)?.size ?? 0
    if (n === 2) expected.both++
    else expected.one_only++
    if (l.replicas.length !== n || (!truth.snapshots.has(l.payload) && !l.replicas.every((r) => truth.sentTo.get(l.payload)!.has(r)))) wrong.push(`${l.replicas.join('+')} for ${l.payload.slice(0, 80)}`)
  }
  const replies = truth.records.filter((r) => r.kind === 'reply' && inHour(r.simTimeUs, hourMs)).length
  const replyLines = lines.filter((l) => truth.replies.has(l.payload))
  if (replyLines.length !== replies || replyLines.some((l) => l.replicas.length !== 1)) wrong.push(`${replies} replies sent, lines ${JSON.stringify(replyLines.map((l) => l.replicas))}`)
  expected.one_only += replies
  return { expected, wrong }
}

/** The close codes a manifest's reconnect windows state, by replica. */
function statedCloseCodes(m: HourlyManifest): Record<Replica, number[]> {
  const of = (replica: Replica) => m.replicas.find((r) => r.replica === replica)!.reconnect_windows.flatMap((w) => w.close_code ?? [])
  return { a: of('a'), b: of('b') }
}

// ---------------------------------------------------------------------------------------------------------

const SCALE = 360
/** The recorder's stall detector, in real milliseconds: far above the 1.4 ms between a connection's frames at this scale. */
const STALL_MS = 1000
/** A stall the detector must end: three times its wait, in simulated time. */
const LONG_STALL_MS = 3 * STALL_MS * SCALE
/** A stall it must not notice: 20 s simulated is 56 ms of real time. */
const SHORT_STALL_MS = 20_000
/** Two simulated minutes before hour 14: the replicas subscribe in hour 13 even on a loaded machine. */
const START = HOUR_14 - 2 * MIN
/** Simulated ms after the simulators start of a minute of hour 14. */
const at = (minute: number) => HOUR_14 - START + minute * MIN

/**
 * A fault that names a replica comes at least five simulated minutes (0.8 s real) after the one that
 * closed its connection, and over ten after a long stall (which the detector ends after six), so that the
 * replica has resubscribed even on a loaded machine; while one replica of a channel misses frames, no
 * fault makes the other miss any, and the two never reconnect together.
 */
const PLANS: Record<SpotChannel, FaultPlanInput['faults']> = {
  trades: [
    { kind: 'gap', at: at(3), stream: 'btcusdt@trade', count: 3 },
    { kind: 'disconnect', at: at(5), replica: 'a', code: 4001, reason: 'fault' },
    { kind: 'conflict', at: at(8), replica: 'b', stream: 'btcusdt@trade' },
    { kind: 'unrepresentable', at: at(12), replica: 'a', stream: 'ethusdt@trade', variant: 'price-number' },
    { kind: 'only-one', at: at(14), replica: 'b', stream: 'ethusdt@trade' },
    { kind: 'stall', at: at(18), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'scheduled-disconnect', at: at(20), replica: 'b' },
    { kind: 'disconnect', at: at(24), replica: 'a' },
    { kind: 'stall', at: at(28), replica: 'b', durationMs: LONG_STALL_MS, then: 'resume' },
    { kind: 'only-one', at: at(40), replica: 'a', stream: 'btcusdt@trade' },
    { kind: 'stall', at: at(44), replica: 'a', durationMs: 1.5 * SHORT_STALL_MS, then: 'close', code: 1013, reason: 'try again later' },
    { kind: 'conflict', at: at(50), replica: 'a', stream: 'ethusdt@trade', replace: true },
    { kind: 'unrepresentable', at: at(53), stream: 'btcusdt@trade', variant: 'missing-field' },
    { kind: 'gap', at: at(56), stream: 'ethusdt@trade', count: 2 },
  ],
  book: [
    { kind: 'gap', at: at(3), stream: 'ethusdt@depth@100ms', count: 2 },
    { kind: 'disconnect', at: at(5), replica: 'b', code: 4002, reason: 'fault' },
    { kind: 'only-one', at: at(8), replica: 'a', stream: 'btcusdt@depth@100ms' },
    { kind: 'unrepresentable', at: at(10), stream: 'btcusdt@depth@100ms', variant: 'missing-field' },
    { kind: 'stall', at: at(12), replica: 'a', durationMs: LONG_STALL_MS, then: 'resume' },
    { kind: 'only-one', at: at(24), replica: 'b', stream: 'ethusdt@depth@100ms' },
    { kind: 'stall', at: at(27), replica: 'b', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'unrepresentable', at: at(31), replica: 'a', stream: 'ethusdt@depth@100ms', variant: 'truncated' },
    { kind: 'scheduled-disconnect', at: at(34), replica: 'a' },
    { kind: 'gap', at: at(38), stream: 'btcusdt@depth@100ms', count: 1 },
    { kind: 'disconnect', at: at(42), replica: 'b' },
    { kind: 'unrepresentable', at: at(48), replica: 'b', stream: 'ethusdt@depth@100ms', variant: 'price-number' },
  ],
}

t.test('every fault kind on both channels: the sealed hours state exactly what the simulator did', async (t) => {
  const run = await recordAndSeal(t, 'faults', { startMs: START, scale: SCALE, plans: PLANS, stallMs: STALL_MS })
  t.same(run.sealedHour15, [0, 0], 'hour 15 sealed on both channels')
  t.equal(run.verify.status, 0, `verify passes: ${run.verify.stdout.slice(0, 600)}`)

  for (const channel of CHANNELS) {
    t.test(channel, async (t) => {
      const truth = new TruthOf(run.sims[channel].truth)
      t.same(truth.faults.filter((f) => !f.applied).map((f) => f.detail), [], 'the simulator applied every fault of the plan')
      const m = await manifestOf(run.root, channel, '14')
      const lines = await rawLines(run.root, channel, '14')
      const payloadAt = (i: number) => lines[i]!.payload

      const gaps = m.sequence_gaps.map((g) => `${g.instrument} ${g.after_id}..${g.before_id}`).sort()
      const delivered = deliveredGaps(truth, channel, HOUR_14)
      t.same(gaps, delivered, 'sequence_gaps: the breaks in what reached either replica, and none that one replica\'s copy fills')
      t.same(truth.venueGaps(HOUR_14).filter((g) => !gaps.includes(g)), [], `among them every gap the venue made (${truth.venueGaps(HOUR_14).join(', ')})`)
      const conflicts = truth.conflicts(HOUR_14)
      t.same((m.conflicts ?? []).map((c) => ({ instrument: c.instrument, trade_id: c.trade_id, texts: c.lines.map((l) => payloadAt(l.raw_index)).sort() })), conflicts, 'conflicts: each trade id the venue sent twice with different data, with both lines')
      t.same((m.unrepresentable_frames ?? []).map(payloadAt).sort(), truth.unrepresentable(HOUR_14), 'unrepresentable_frames: the frames the venue broke')

      const agreement = expectedAgreement(truth, lines, HOUR_14)
      t.same(agreement.wrong, [], 'each line carries the receipts of the replicas the venue wrote it to')
      t.same(m.replica_agreement, { ...agreement.expected, conflict: conflicts.length }, 'replica_agreement')

      let bothDown = false
      for (const replica of ['a', 'b'] as const) {
        const expected = truth.reconnectWindows(replica, HOUR_14)
        const other = truth.reconnectWindows(replica === 'a' ? 'b' : 'a', HOUR_14)
        bothDown ||= expected.some((w) => other.some((o) => o.close.simTimeUs < w.nextSubscribedUs && w.close.simTimeUs < o.nextSubscribedUs))
        const windows = m.replicas.find((r) => r.replica === replica)!
        t.same(windows.reconnect_windows.map((w) => w.close_code), expected.map((w) => w.code), `replica ${replica}: a reconnect window for each close, with the venue's close code (${expected.map((w) => w.code ?? 'none').join(', ')})`)
        const outOfPlace = windows.reconnect_windows.filter((w, i) => {
          const e = expected[i]
          if (!e) return false
          const [start, end] = [parseTime(w.start_time), parseTime(w.end_time)]
          // The recorder learns of the venue's close after it was made; a close of its own (the stall
          // detector's) comes after the last frame it received there.
          const earliest = BigInt(e.close.by === 'venue' ? e.close.simTimeUs : e.lastFrameUs) * 1000n
          return !(start >= earliest && start <= BigInt(e.nextOpenUs) * 1000n && end >= BigInt(e.nextSubscribedUs) * 1000n)
        })
        t.same(outOfPlace, [], `replica ${replica}: each window runs from the close to the next subscription`)
        const uncovered = windows.reconnect_windows.reduce((s, w) => s + (parseTime(w.end_time) - parseTime(w.start_time)), 0n)
        t.equal(BigInt(windows.covered_ns) + uncovered, HOUR_NS, `replica ${replica}: covered all the hour but its windows`)
      }
      const reasons = new Set<CompletenessReason>()
      if (bothDown) reasons.add('reconnect')
      if (delivered.length > 0) reasons.add('sequence_gap')
      if (truth.unrepresentable(HOUR_14).length > 0) reasons.add('unrepresentable_value')
      t.same(m.completeness, { status: reasons.size > 0 ? 'partial' : 'complete', reasons: COMPLETENESS_REASONS.filter((r) => reasons.has(r)) }, 'completeness')

      const stalls = truth.appliedIn(HOUR_14, 'stall')
      const isLong = (s: Fault) => (s.fault as { durationMs: number }).durationMs >= LONG_STALL_MS
      for (const s of stalls) {
        const conn = s.detail['conn'] as string
        const until = s.detail['untilUs'] as number
        const close = truth.records.find((r): r is Close => r.kind === 'close' && r.conn === conn)
        if (isLong(s)) t.ok(close?.by === 'client' && close.simTimeUs < until, `the recorder closed the stalled ${conn} before the stall ended`)
        else t.ok(close === undefined || close.simTimeUs >= until, `the recorder kept ${conn} through a stall shorter than its detector's wait`)
      }

      const events = await journalEvents(run.journal, channel)
      for (const replica of ['a', 'b'] as const) {
        const journaled = events.filter((e): e is Extract<JournalEvent, { kind: 'sequence-break' }> => e.kind === 'sequence-break' && e.replica === replica).map((e) => `${e.instrument} ${e.afterId}..${e.beforeId}`).sort()
        t.same(journaled, expectedBreaks(truth, replica, channel), `replica ${replica}: a sequence-break for each break its connections saw, and no other`)
      }
      const stalledErrors = events.filter((e) => e.kind === 'error' && e.message.startsWith('stalled')).length
      t.equal(stalledErrors, stalls.filter(isLong).length, 'the stall detector fired once for each long stall')
      if (channel === 'book') {
        t.same(snapshotProblems(events, run.stoppedAt), [], 'a snapshot after every (re)subscription and after each break')
        const journaledSnapshots = events.filter((e) => e.kind === 'frame' && isSnapshot(Buffer.from(e.payload).toString('utf8'))).length
        t.equal(journaledSnapshots, [...truth.snapshots.values()].reduce((s, n) => s + n, 0), 'every snapshot the venue served was journaled')
      }

      const all = [...await rawLines(run.root, channel, '13'), ...lines, ...await laterRawLines(run, channel)]
      const { missed, invented } = rawVersusTruth(truth, all)
      t.same(missed, [], 'every frame the venue wrote to a replica is in a raw file with that replica\'s receipt')
      t.same(invented, [], 'and nothing the venue did not send')
      for (const hh of ['13', '15']) {
        const quiet = await manifestOf(run.root, channel, hh)
        t.same([quiet.sequence_gaps, quiet.conflicts ?? [], quiet.unrepresentable_frames ?? []], [[], [], []], `hour ${hh}, without faults, states none`)
        t.same(statedCloseCodes(quiet), { a: [], b: [] }, `hour ${hh}: no close code, as the venue closed nothing (the recorder closed its connections when it stopped)`)
      }
    })
  }
  t.same(run.logLines.filter((l) => /"level":"error"/.test(l)), [], 'no error logged')
})

t.test('serverShutdown: the recorder opens the successor when the venue announces it, and closes the old connection before the venue does', async (t) => {
  const scale = 60
  const start = HOUR_14 + 56 * MIN
  /** Simulated ms after the start: each replica of each channel is told once, a second apart (1 s real) from the start and each other. */
  const notices = { a: 60_000, b: 120_000 }
  const closeAfterMs = 40_000
  const plan: FaultPlanInput['faults'] = (['a', 'b'] as const).map((replica) => ({ kind: 'server-shutdown', at: notices[replica], replica, closeAfterMs }))
  const run = await recordAndSeal(t, 'server-shutdown', { startMs: start, scale, plans: { trades: plan, book: plan } })
  t.same(run.sealedHour15, [0, 0], 'hour 15 sealed on both channels')
  t.equal(run.verify.status, 0, `verify passes: ${run.verify.stdout.slice(0, 600)}`)
  for (const channel of CHANNELS) {
    const truth = new TruthOf(run.sims[channel].truth)
    const faults = truth.records.filter((r): r is Fault => r.kind === 'fault')
    t.same(faults.map((f) => f.applied), [true, true], `${channel}: the venue told both replicas`)
    const m = await manifestOf(run.root, channel, '14')
    for (const replica of ['a', 'b'] as const) {
      const told = faults.find((f) => 'replica' in f.fault && f.fault.replica === replica)!
      const closeAtUs = told.detail['closeAtUs'] as number
      const conns = truth.connections(replica)
      const old = conns.find((c) => c.conn === (told.detail['conns'] as string[])[0])!
      const successor = conns[conns.indexOf(old) + 1]
      t.match(old.close, { by: 'client', code: 1000, reason: 'replaced before the venue announced a server shutdown' }, `${channel} ${replica}: the recorder closed the old connection`)
      t.ok(old.close!.simTimeUs < closeAtUs, `${channel} ${replica}: before the venue would have`)
      t.ok(successor?.subscribedUs !== undefined && successor.subscribedUs <= old.close!.simTimeUs, `${channel} ${replica}: once its successor had subscribed`)
      t.equal(conns.length, 2, `${channel} ${replica}: one successor, no reconnect`)
      t.same(m.replicas.find((r) => r.replica === replica)!.reconnect_windows, [], `${channel} ${replica}: no reconnect window`)
    }
    t.same([m.sequence_gaps, m.conflicts ?? [], m.unrepresentable_frames ?? []], [[], [], []], `${channel}: the notice is no unrepresentable frame, and the overlap makes no gap or conflict`)
    t.same(m.completeness, { status: 'partial', reasons: ['recorder_down'] }, `${channel}: partial only for the time before the recorder started`)
    const all = [...await rawLines(run.root, channel, '14'), ...await laterRawLines(run, channel)]
    t.equal(all.filter((l) => l.payload.includes('"serverShutdown"')).length, 2, `${channel}: both notices are in the raw file`)
    const { missed, invented } = rawVersusTruth(truth, all)
    t.same(missed, [], `${channel}: every frame the venue wrote to a replica is in a raw file with that replica's receipt`)
    t.same(invented, [], `${channel}: and nothing the venue did not send`)
  }
  t.equal(run.logLines.filter((l) => l.includes('opening the successor before the venue announced a server shutdown')).length, 4, 'each replica of each channel logged it once')
  t.same(run.logLines.filter((l) => /"level":"error"/.test(l)), [], 'no error logged')
})

t.test('the recorder opens the successor before the old connection closes: no reconnect window for its rotation', async (t) => {
  const scale = 120
  const start = HOUR_14 + 58.5 * MIN
  /** 24 simulated seconds: each connection is replaced several times before hour 14 is sealed. */
  const rotateAfterMs = 200
  const run = await recordAndSeal(t, 'rotation', { startMs: start, scale, plans: { trades: [], book: [] }, rotateAfterMs })
  t.same(run.sealedHour15, [0, 0], 'hour 15 sealed on both channels')
  t.equal(run.verify.status, 0, `verify passes: ${run.verify.stdout.slice(0, 600)}`)
  for (const channel of CHANNELS) {
    const truth = new TruthOf(run.sims[channel].truth)
    const m = await manifestOf(run.root, channel, '14')
    const events = await journalEvents(run.journal, channel)
    for (const replica of ['a', 'b'] as const) {
      const conns = truth.connections(replica)
      const replaced = conns.filter((c) => c.close !== undefined && BigInt(c.close.simTimeUs) * 1000n < run.stoppedAt)
      t.ok(replaced.length >= 3, `${channel} ${replica}: replaced ${replaced.length} times`)
      const successorFirst = (c: (typeof conns)[number]) => {
        const successor = conns[conns.indexOf(c) + 1]
        return c.close!.by === 'client' && c.close!.code === 1000 && /scheduled disconnect/.test(c.close!.reason) && successor?.subscribedUs !== undefined && successor.subscribedUs <= c.close!.simTimeUs
      }
      t.same(replaced.filter((c) => !successorFirst(c)), [], `${channel} ${replica}: each connection closed by the recorder after its successor subscribed`)
      const summary = m.replicas.find((r) => r.replica === replica)!
      t.same(summary.reconnect_windows, [], `${channel} ${replica}: no reconnect window`)
      const firstSubscribed = events.find((e) => e.kind === 'subscribed' && e.replica === replica)!
      t.equal(BigInt(summary.covered_ns), msToNs(HOUR_14 + HOUR_MS) - (firstSubscribed as { time: bigint }).time, `${channel} ${replica}: covered from its first subscription to the hour's end, without a hole`)
    }
    t.same(m.completeness, { status: 'partial', reasons: ['recorder_down'] }, `${channel}: partial only for the time before the recorder started`)
    t.same([m.sequence_gaps, m.conflicts ?? [], m.unrepresentable_frames ?? []], [[], [], []], `${channel}: the overlapping connections make no gap, conflict or unrepresentable frame`)
    if (channel === 'book') t.same(snapshotProblems(events, run.stoppedAt), [], 'book: a snapshot after every subscription of a successor')
    t.same(statedCloseCodes(await manifestOf(run.root, channel, '15')), { a: [], b: [] }, `${channel}: hour 15 states no close code, as the venue closed nothing`)
    const all = [...await rawLines(run.root, channel, '14'), ...await laterRawLines(run, channel)]
    const { missed, invented } = rawVersusTruth(truth, all)
    t.same(missed, [], `${channel}: every frame the venue wrote to a replica is in a raw file with that replica's receipt`)
    t.same(invented, [], `${channel}: and nothing the venue did not send`)
  }
  t.same(run.logLines.filter((l) => /"level":"error"/.test(l)), [], 'no error logged')
})

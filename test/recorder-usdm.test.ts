/**
 * The recorder daemon recording Binance USD-M futures from the venue simulator (`venue: 'binance-usdm'`),
 * on all four channels (trades from `@aggTrade`, book from `@depth@100ms` and `/fapi/v1/depth`, funding from
 * `@markPrice`, liquidations from `@forceOrder`), two replicas, through a plan holding every fault kind that
 * applies to each stream; the sealed hours state exactly what the simulator's truth says it did:
 * sequence_gaps only where the venue dropped aggregates or depth updates (never for the holes Binance
 * leaves in an aggregate's f..l), reconnect windows and their close codes, conflicts, replica_agreement,
 * unrepresentable frames and completeness. `pipe run verify` passes, every frame the simulator wrote to a
 * connection is in a raw file with that replica's receipt (for funding and liquidations, which have no
 * tables, the raw file is all there is), and the book channel journals a REST snapshot after every
 * (re)subscription and every break it saw.
 *
 * Modelled on test/recorder-faults.test.ts (spot), whose helpers are copied here and adjusted. Each channel
 * is served by a simulator of its own: a fault names its target by replica label, and the recorder labels
 * all of a replica's connections alike, so one simulator could not say which channel's connection a fault
 * should hit. The adapter of each is `venueAt('binance-usdm', …)` at that simulator.
 *
 * The adapter states 3 minutes of silence as healthy (the server's ping interval), and the recorder's stall
 * detector then waits 3.6 minutes of real time, whatever the time scale: no stall here is long enough for it,
 * so every stall is one the recorder must ride out (or that ends in the venue's close). A stall that
 * resumes sends its frames late: those held longer than the sealer's pairing window (5 s) after the other
 * replica received them are two lines, one a replica, as the journal's receive times say.
 *
 * On a loaded machine: the clock reads once per event-loop turn (turnClock), runs at real time once hour 14
 * and its grace have passed (SlowingClock), and every hour the journal reached is sealed after stopping.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { decompress } from 'zstd-napi'
import { childEnv } from './helpers/io.js'
import { hourName, hourStart as hourStartNs, readJournalRange } from '../src/formats/record/journal/journal.js'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import { COMPLETENESS_REASONS, type CompletenessReason, type HourlyManifest } from '../src/formats/record/manifest.js'
import { PAIRING_WINDOW_NS } from '../src/formats/record/merge.js'
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
import { venueAt } from '../src/venues/index.js'

const CLI = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const dir = await mkdtemp(join(tmpdir(), 'pipe-recorder-usdm-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

const { privateJwk, publicJwk } = await newSigningKey({ validFrom: '2026-01-01T00:00:00.000000000Z', seed: new Uint8Array(32).fill(13) })
const keyFile = join(dir, 'key.jwk')
const keysFile = join(dir, 'jwks.json')
await writePrivateJwkFile(keyFile, privateJwk)
await writeJwksFile(keysFile, { keys: [publicJwk] })

const VENUE = 'binance-usdm'
/** The channels Binance USD-M serves. */
type UsdmChannel = Extract<Channel, 'trades' | 'book' | 'funding' | 'liquidations'>
const CHANNELS: readonly UsdmChannel[] = ['trades', 'book', 'funding', 'liquidations']
const INSTRUMENTS = ['BTCUSDT', 'ETHUSDT']
const MIN = 60_000
const HOUR_14 = Date.UTC(2026, 9, 3, 14)
const HOUR_MS = 3_600_000
const HOUR_NS = BigInt(HOUR_MS) * 1_000_000n
const msToNs = (ms: number) => BigInt(ms) * 1_000_000n
const usdm = venueAt(VENUE, {})

/**
 * The simulated clock at `scale` times real time until `slowAfterMs`, then at real time: once the hour
 * under test and its grace have passed, a loaded machine's slow seals (the daemon's run at nice 19, and one
 * starved for 30 s is run again) add no more simulated hours to record and seal.
 */
class SlowingClock extends SimulatedClock {
  private readonly slowAfterNs: bigint
  constructor(startMs: number, private readonly scale: number, slowAfterMs: number) {
    super(msToNs(startMs), scale)
    this.slowAfterNs = msToNs(slowAfterMs)
  }

  override nowNs(): bigint {
    const t = super.nowNs()
    return t <= this.slowAfterNs ? t : this.slowAfterNs + (t - this.slowAfterNs) / BigInt(this.scale)
  }
}

/**
 * The simulated clock, read once per turn of the event loop (test/recorder-faults.test.ts says why): both
 * replicas' receipts of a frame the simulator wrote to both in one step carry the same time, however a
 * loaded machine schedules the reads. The simulators read the same clock.
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

/** The USD-M adapter, each channel's connections and snapshots going to that channel's simulator. */
function venueOf(sims: Record<UsdmChannel, VenueSimulator>): VenueAdapter {
  const at = Object.fromEntries(CHANNELS.map((c) => [c, venueAt(VENUE, { ws: sims[c].wsUrl, rest: sims[c].restUrl })])) as Record<UsdmChannel, VenueAdapter>
  const of = (channel: Channel) => at[channel as UsdmChannel]
  return { ...at.trades, connect: (channel, instruments) => of(channel).connect(channel, instruments), snapshotRequest: (channel, instrument) => of(channel).snapshotRequest(channel, instrument) }
}

interface Run {
  sims: Record<UsdmChannel, VenueSimulator>
  root: string
  journal: string
  logLines: string[]
  /** When the test stopped the recorder, on its clock. */
  stoppedAt: bigint
  /** Exit codes of sealing hour 15 and every later hour journaled, by channel: the first failure's, or 0. */
  sealedLater: (number | null)[]
  /** Hour 15 and the later hours journaled (a loaded machine's daemon may have run on past hour 15). */
  laterHours: bigint[]
  verify: { status: number | null; stdout: string }
}

/**
 * Starts the four simulators and the recorder on one clock (start `startMs`, `scale` times real time),
 * waits until the daemon has sealed hour 14 of every channel, stops the recorder and the simulators, seals
 * the rest of the journal as a stopped recorder's last hour is sealed, and verifies the root.
 */
async function recordAndSeal(t: Test, name: string, o: { startMs: number; scale: number; plans: Record<UsdmChannel, FaultPlanInput['faults']> }): Promise<Run> {
  const clock = turnClock(new SlowingClock(o.startMs, o.scale, HOUR_14 + HOUR_MS + 3 * MIN))
  // An aggregate and a depth update every 2 s a symbol, a mark price every 3 s: some 1,000 frames a real
  // second a replica at 240 times real time, over four channels.
  const start = (faults: FaultPlanInput['faults']) => startVenueSimulator({ venue: VENUE, seed: 7, instruments: INSTRUMENTS, rate: 0.5, depthIntervalMs: 2000, clock: clock.nowMs, faults: { faults } })
  const sims = { trades: await start(o.plans.trades), book: await start(o.plans.book), funding: await start(o.plans.funding), liquidations: await start(o.plans.liquidations) }
  const closeSims = () => Promise.all(CHANNELS.map((c) => sims[c].close()))
  t.teardown(closeSims)
  const root = join(dir, name, 'root')
  const journal = join(dir, name, 'journal')
  const logLines: string[] = []
  const recorder = new Recorder({
    venue: venueOf(sims), instruments: INSTRUMENTS, channels: CHANNELS, replicas: ['a', 'b'], journal, clock,
    log: jsonLogger({ write: (l: string) => { logLines.push(l); return true } } as never),
    // A heartbeat every real second: a loaded machine's pauses are not taken for the recorder being down.
    timeScale: o.scale, heartbeatMs: 1000 * o.scale, backoffMs: { first: 50, max: 200 },
    seal: { root, key: keyFile, keys: keysFile, recorder: 'rec-1', cli: CLI, everyMs: 200, graceMs: 2 * MIN },
  })
  await recorder.start()
  t.teardown(() => recorder.stop())
  await waitFor('hour 14 sealed on every channel', () => CHANNELS.every((c) => existsSync(join(hourDir(root, c, '14'), 'manifest.json'))), 600_000)
  const stoppedAt = clock.now().receiveTime
  await recorder.stop()
  await closeSims()
  // On a loaded machine the daemon may seal hour 14 late, when the simulated clock is hours further on:
  // every hour from 15 to the last journaled is sealed, the last as a stopped recorder's.
  const last = hourStartNs(clock.now().receiveTime)
  const laterHours: bigint[] = []
  for (let h = msToNs(HOUR_14) + HOUR_NS; h <= last; h += HOUR_NS) laterHours.push(h)
  const sealedLater = await Promise.all(CHANNELS.map(async (channel) => {
    for (const h of laterHours) {
      const r = await runCli(['run', 'seal-hour', '--venue', VENUE, '--channel', channel, '--hour', hourName(h), '--journal', join(journal, channel), '--out', root, '--key', keyFile, '--recorder', 'rec-1', ...(h === last ? ['--recorder-stopped'] : [])])
      if (r.status !== 0) return r.status
    }
    return 0
  }))
  const verify = await runCli(['run', 'verify', '--root', root, '--keys', keysFile, '--json'])
  return { sims, root, journal, logLines, stoppedAt, sealedLater, laterHours, verify }
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

const hourPath = (root: string, channel: Channel, hour: bigint) =>
  join(root, 'recorder=rec-1', `venue=${VENUE}`, `channel=${channel}`, `date=${hourName(hour).slice(0, 10)}`, `hour=${hourName(hour).slice(11, 13)}`)
const hourDir = (root: string, channel: Channel, hh: string) => join(root, 'recorder=rec-1', `venue=${VENUE}`, `channel=${channel}`, 'date=2026-10-03', `hour=${hh}`)

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
  const path = join(typeof hour === 'string' ? hourDir(root, channel, hour) : hourPath(root, channel, hour), 'raw.jsonl.zst')
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
type Frame = Extract<TruthRecord, { kind: 'frame' }>

const inHour = (us: number, hourMs: number) => us >= hourMs * 1000 && us < (hourMs + HOUR_MS) * 1000
const symbolOf = (stream: string) => stream.slice(0, stream.indexOf('@')).toUpperCase()
const restText = (r: Extract<TruthRecord, { kind: 'rest' }>) => usdm.wrapSnapshot('book', new URLSearchParams(r.path.slice(r.path.indexOf('?'))).get('symbol')!, r.text)
const isSnapshot = (payload: string) => payload.startsWith('{"rest":"depth"')

/** A simulator's truth, read for what the recorder should have made of it. */
class TruthOf {
  private readonly replicaOf = new Map<string, Replica>()
  /** Market frames by text: the replicas whose connections the venue wrote them to. */
  readonly sentTo = new Map<string, Set<Replica>>()
  readonly replies = new Set<string>()
  /** REST snapshots as the recorder journals them, and how many times each was served. */
  readonly snapshots = new Map<string, number>()
  /** Frames a stall held back and sent late (`sentUs`). */
  readonly late = new Set<string>()

  constructor(readonly records: readonly TruthRecord[]) {
    for (const r of records) {
      if (r.kind === 'open') this.replicaOf.set(r.conn, r.replica as Replica)
      else if (r.kind === 'frame') {
        for (const c of r.to) this.sentToOf(r.text).add(this.replicaOf.get(c)!)
        if (r.sentUs !== undefined) this.late.add(r.text)
      }
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

  /** The ids each gap fault dropped, by instrument. */
  venueDrops(hourMs: number): { instrument: string; first: number; last: number }[] {
    return this.appliedIn(hourMs, 'gap').map((f) => {
      const dropped = f.detail['dropped'] as { first: number; last: number }[]
      return { instrument: symbolOf(f.detail['stream'] as string), first: dropped[0]!.first, last: dropped[dropped.length - 1]!.last }
    })
  }

  conflicts(hourMs: number) {
    return this.appliedIn(hourMs, 'conflict').map((f) => ({ instrument: symbolOf(f.detail['stream'] as string), trade_id: String(f.detail['first']), texts: [f.detail['original'] as string, f.detail['text'] as string].sort() }))
  }

  /**
   * The frames the venue broke, as the replicas got them. A fault's `text` is its target's variant, or
   * without a target the raw one; the recorder's connections are combined streams, whose text of the same
   * broken frame wraps the raw one (`{"stream":..,"data":<raw>}`, cut short when truncated).
   */
  unrepresentable(hourMs: number): string[] {
    return this.appliedIn(hourMs, 'unrepresentable').flatMap((f) => {
      const text = f.detail['text'] as string
      if (f.detail['conn'] !== undefined) return [text]
      const wrapped = `{"stream":"${f.detail['stream'] as string}","data":${text}`
      return [...new Set(this.records.filter((r): r is Frame => r.kind === 'frame' && r.stream === f.detail['stream'] && (r.text === text || r.text.startsWith(wrapped))).map((r) => r.text))]
    }).sort()
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
  framesTo(conn: string): Frame[] {
    return this.records.filter((r): r is Frame => r.kind === 'frame' && r.to.includes(conn))
  }

  repliesTo(replica: Replica): number {
    return this.records.filter((r) => r.kind === 'reply' && this.replicaOf.get(r.to) === replica).length
  }
}

/**
 * The breaks in the venue's sequences among `frames`, in the order given, by the USD-M adapter's rules
 * (aggregate ids +1; depth by pu), each as `INSTRUMENT after..before`, with the frame that shows each.
 */
function sequenceBreaks(channel: Channel, frames: Iterable<{ text: string; simTimeUs: number }>): { gap: string; simTimeUs: number }[] {
  const states = new Map<string, SequenceState>()
  const breaks: { gap: string; simTimeUs: number }[] = []
  for (const f of frames) {
    const c = usdm.classify(channel, Buffer.from(f.text), false)
    const spans = c.kind === 'rows' || c.kind === 'data' ? c.sequences : c.kind === 'unrepresentable' ? (c.sequences ?? []) : []
    for (const span of spans) {
      const v = usdm.sequence(states.get(span.instrument), span)
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
  const delivered = truth.records.filter((r): r is Frame => r.kind === 'frame' && r.to.length > 0)
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
 * The receive times of the frames a stall sent late, by replica, from the journal: a copy received more
 * than the sealer's pairing window (5 s) after the other replica's is not paired with it.
 */
function lateReceipts(truth: TruthOf, events: JournalEvent[]): Map<string, Record<Replica, bigint[]>> {
  const out = new Map<string, Record<Replica, bigint[]>>()
  for (const e of events) {
    if (e.kind !== 'frame') continue
    const text = Buffer.from(e.payload).toString('utf8')
    if (!truth.late.has(text)) continue
    const r = out.get(text) ?? { a: [], b: [] }
    r[e.replica].push(e.receiveTime)
    out.set(text, r)
  }
  return out
}

/** Whether the replicas' receipts of a frame are further apart than the sealer pairs. */
function apart(r: Record<Replica, bigint[]> | undefined): boolean {
  if (r === undefined || r.a.length !== 1 || r.b.length !== 1) return false
  const d = r.a[0]! - r.b[0]!
  return (d < 0n ? -d : d) > PAIRING_WINDOW_NS
}

/**
 * The hour's replica agreement as the truth states it: a market frame is seen by both replicas when the
 * venue wrote it to both, unless a stall held one copy back beyond the pairing window (then each copy is a
 * line of its own: `late`); a snapshot served twice (the same book at the same moment, fetched by both
 * replicas) is one frame seen by both; each reply (a subscription's acknowledgement, a serverShutdown
 * notice) by its replica alone, or by both when alike and received together. The hour a frame falls in is where the raw file put it: frame times are
 * receipt times. Also the lines whose receipts differ from that.
 */
function expectedAgreement(truth: TruthOf, lines: RawLine[], hourMs: number, late: Map<string, Record<Replica, bigint[]>>) {
  const expected = { both: 0, one_only: 0 }
  const wrong: string[] = []
  const seen = new Set<string>()
  for (const l of lines) {
    if (truth.replies.has(l.payload)) continue
    const split = apart(late.get(l.payload))
    if (seen.has(l.payload) && !split) wrong.push(`a second line of ${l.payload.slice(0, 80)}`)
    seen.add(l.payload)
    const n = split ? 1 : truth.snapshots.get(l.payload) ?? truth.sentTo.get(l.payload)?.size ?? 0
    if (n === 2) expected.both++
    else expected.one_only++
    if (l.replicas.length !== n || (!truth.snapshots.has(l.payload) && !l.replicas.every((r) => truth.sentTo.get(l.payload)!.has(r)))) wrong.push(`${l.replicas.join('+')} for ${l.payload.slice(0, 80)}`)
  }
  // Replies are alike ({"result":null,"id":1}): the two replicas' are one line when received within the
  // pairing window (the first subscriptions, made together), each a line of its own otherwise.
  const replies = truth.records.filter((r) => r.kind === 'reply' && inHour(r.simTimeUs, hourMs)).length
  const replyLines = lines.filter((l) => truth.replies.has(l.payload))
  const receipts = replyLines.reduce((n, l) => n + l.replicas.length, 0)
  if (receipts !== replies || replyLines.some((l) => new Set(l.replicas).size !== l.replicas.length)) wrong.push(`${replies} replies sent, lines ${JSON.stringify(replyLines.map((l) => l.replicas))}`)
  for (const l of replyLines) expected[l.replicas.length === 2 ? 'both' : 'one_only']++
  return { expected, wrong }
}

/** The close codes a manifest's reconnect windows state, by replica. */
function statedCloseCodes(m: HourlyManifest): Record<Replica, number[]> {
  const of = (replica: Replica) => m.replicas.find((r) => r.replica === replica)!.reconnect_windows.flatMap((w) => w.close_code ?? [])
  return { a: of('a'), b: of('b') }
}

// ---------------------------------------------------------------------------------------------------------

/**
 * 240 times real time: hour 14 takes 15 s. The pairing window (5 s) is 21 ms of real time, and five
 * simulated minutes 1.25 s: margins a loaded machine needs (at 360, with four channels, a replica was once
 * not yet resubscribed 1.7 s after a disconnect).
 */
const SCALE = 240
/** A stall the recorder rides out: 20 s simulated is 83 ms of real time. */
const SHORT_STALL_MS = 20_000
/**
 * The start of hour 14: the daemon seals hour 14 alone (four seals, not eight with an hour 13 before it),
 * and the hour is covered from each replica's first subscription, a few simulated seconds in.
 */
const START = HOUR_14
/** Simulated ms after the simulators start of a minute of hour 14. */
const at = (minute: number) => HOUR_14 - START + minute * MIN

/**
 * Every fault kind that applies to each futures stream (docs/simulator.md, "USD-M futures"): gaps and
 * conflicts only where there are ids (aggregates; depth updates); the rest on all four. A fault that names a
 * replica comes at least seven simulated minutes (1.75 s real) after the one that closed its connection, so
 * that the replica has resubscribed even on a loaded machine; while one replica of a channel misses frames,
 * no fault makes the other miss any, and the two never reconnect together. A server shutdown gives the
 * recorder its default ten simulated minutes (2.5 s real) to replace the connection. Faults on the
 * liquidation streams wait for the next liquidation, some 20 simulated seconds away.
 */
const PLANS: Record<UsdmChannel, FaultPlanInput['faults']> = {
  trades: [
    { kind: 'gap', at: at(3), stream: 'btcusdt@aggTrade', count: 3 },
    { kind: 'disconnect', at: at(5), replica: 'a', code: 4001, reason: 'fault' },
    { kind: 'conflict', at: at(8), replica: 'b', stream: 'btcusdt@aggTrade' },
    { kind: 'unrepresentable', at: at(12), replica: 'a', stream: 'ethusdt@aggTrade', variant: 'price-number' },
    { kind: 'only-one', at: at(14), replica: 'b', stream: 'ethusdt@aggTrade' },
    { kind: 'stall', at: at(18), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'scheduled-disconnect', at: at(20), replica: 'b' },
    { kind: 'disconnect', at: at(26), replica: 'a' },
    { kind: 'stall', at: at(32), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'server-shutdown', at: at(36), replica: 'a' },
    { kind: 'only-one', at: at(42), replica: 'a', stream: 'btcusdt@aggTrade' },
    { kind: 'stall', at: at(44), replica: 'b', durationMs: 1.5 * SHORT_STALL_MS, then: 'close', code: 1013, reason: 'try again later' },
    { kind: 'conflict', at: at(50), replica: 'a', stream: 'ethusdt@aggTrade', replace: true },
    { kind: 'unrepresentable', at: at(53), stream: 'btcusdt@aggTrade', variant: 'missing-field' },
    { kind: 'gap', at: at(56), stream: 'ethusdt@aggTrade', count: 2 },
  ],
  book: [
    { kind: 'gap', at: at(3), stream: 'ethusdt@depth@100ms', count: 2 },
    { kind: 'disconnect', at: at(5), replica: 'b', code: 4002, reason: 'fault' },
    { kind: 'only-one', at: at(10), replica: 'a', stream: 'btcusdt@depth@100ms' },
    { kind: 'unrepresentable', at: at(12), stream: 'btcusdt@depth@100ms', variant: 'missing-field' },
    { kind: 'stall', at: at(14), replica: 'a', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'server-shutdown', at: at(18), replica: 'b' },
    { kind: 'only-one', at: at(24), replica: 'b', stream: 'ethusdt@depth@100ms' },
    { kind: 'stall', at: at(27), replica: 'b', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'unrepresentable', at: at(31), replica: 'a', stream: 'ethusdt@depth@100ms', variant: 'truncated' },
    { kind: 'scheduled-disconnect', at: at(34), replica: 'a' },
    { kind: 'gap', at: at(38), stream: 'btcusdt@depth@100ms', count: 1 },
    { kind: 'disconnect', at: at(42), replica: 'b' },
    { kind: 'unrepresentable', at: at(50), replica: 'b', stream: 'ethusdt@depth@100ms', variant: 'price-number' },
  ],
  funding: [
    { kind: 'only-one', at: at(4), replica: 'a', stream: 'btcusdt@markPrice' },
    { kind: 'unrepresentable', at: at(7), stream: 'ethusdt@markPrice', variant: 'price-number' },
    { kind: 'disconnect', at: at(10), replica: 'b', code: 4003, reason: 'fault' },
    { kind: 'stall', at: at(16), replica: 'a', durationMs: SHORT_STALL_MS, then: 'drop' },
    { kind: 'unrepresentable', at: at(20), replica: 'b', stream: 'btcusdt@markPrice', variant: 'missing-field' },
    { kind: 'scheduled-disconnect', at: at(24), replica: 'a' },
    { kind: 'stall', at: at(30), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'server-shutdown', at: at(34), replica: 'a' },
    { kind: 'unrepresentable', at: at(40), replica: 'b', stream: 'btcusdt@markPrice', variant: 'truncated' },
    { kind: 'only-one', at: at(44), replica: 'b', stream: 'ethusdt@markPrice' },
    { kind: 'stall', at: at(48), replica: 'a', durationMs: SHORT_STALL_MS, then: 'close', code: 1013, reason: 'try again later' },
  ],
  liquidations: [
    { kind: 'only-one', at: at(4), replica: 'b', stream: 'btcusdt@forceOrder' },
    { kind: 'unrepresentable', at: at(8), stream: 'ethusdt@forceOrder', variant: 'missing-field' },
    { kind: 'disconnect', at: at(14), replica: 'a' },
    { kind: 'unrepresentable', at: at(20), replica: 'b', stream: 'btcusdt@forceOrder', variant: 'price-number' },
    { kind: 'stall', at: at(26), replica: 'b', durationMs: SHORT_STALL_MS, then: 'resume' },
    { kind: 'scheduled-disconnect', at: at(30), replica: 'b' },
    { kind: 'server-shutdown', at: at(36), replica: 'a' },
    { kind: 'unrepresentable', at: at(42), replica: 'a', stream: 'ethusdt@forceOrder', variant: 'truncated' },
    { kind: 'disconnect', at: at(48), replica: 'b', code: 4004, reason: 'fault' },
  ],
}

t.test('USD-M futures, every fault kind on all four channels: the sealed hours state exactly what the simulator did', async (t) => {
  const run = await recordAndSeal(t, 'usdm', { startMs: START, scale: SCALE, plans: PLANS })
  t.same(run.sealedLater, [0, 0, 0, 0], 'hour 15 (and any later hour journaled) sealed on every channel')
  t.equal(run.verify.status, 0, `verify passes: ${run.verify.stdout.slice(0, 600)}`)

  for (const channel of CHANNELS) {
    t.test(channel, async (t) => {
      const truth = new TruthOf(run.sims[channel].truth)
      t.match(truth.records[0], { kind: 'start', venue: VENUE })
      t.same(truth.faults.filter((f) => !f.applied).map((f) => f.detail), [], 'the simulator applied every fault of the plan')
      const m = await manifestOf(run.root, channel, '14')
      const lines = await rawLines(run.root, channel, '14')
      const payloadAt = (i: number) => lines[i]!.payload

      const gaps = m.sequence_gaps.map((g) => `${g.instrument} ${g.after_id}..${g.before_id}`).sort()
      const delivered = deliveredGaps(truth, channel, HOUR_14)
      t.same(gaps, delivered, 'sequence_gaps: the breaks in what reached either replica, and none that one replica\'s copy fills')
      const drops = truth.venueDrops(HOUR_14)
      t.equal(gaps.length, drops.length, `one gap for each the venue made (${drops.length}), and no other`)
      const covers = (d: (typeof drops)[number]) => m.sequence_gaps.some((g) => g.instrument === d.instrument && BigInt(g.after_id) < d.first && BigInt(g.before_id) > d.last)
      t.same(drops.filter((d) => !covers(d)), [], 'each around the ids the venue dropped')
      if (channel === 'trades') {
        t.same(drops.map((d) => `${d.instrument} ${d.first - 1}..${d.last + 1}`).sort(), gaps, 'trades: exactly the aggregate ids either side of those dropped')
        // Aggregates by symbol and id (each once, whatever connections and variants it went to).
        const aggs = new Map<string, { f: number; l: number }>()
        for (const r of truth.records) {
          if (r.kind !== 'frame' || !inHour(r.simTimeUs, HOUR_14)) continue
          let d: { s: string; a: number; f: number; l: number } | undefined
          try {
            d = (JSON.parse(r.text) as { data?: typeof d }).data
          } catch {
            continue
          }
          if (d) aggs.set(`${d.s} ${d.a}`, { f: d.f, l: d.l })
        }
        const holes = [...aggs].filter(([key, x]) => {
          const [s, a] = key.split(' ')
          const prev = aggs.get(`${s} ${Number(a) - 1}`)
          return prev !== undefined && x.f > prev.l + 1
        }).length
        t.ok(holes > 10, `the aggregates leave trade ids out now and then (${holes} holes between one's l and the next's f), and none is a gap`)
      }
      const conflicts = truth.conflicts(HOUR_14)
      t.same((m.conflicts ?? []).map((c) => ({ instrument: c.instrument, trade_id: c.trade_id, texts: c.lines.map((l) => payloadAt(l.raw_index)).sort() })), conflicts, 'conflicts: each aggregate id the venue sent twice with different data, with both lines')
      t.same((m.unrepresentable_frames ?? []).map(payloadAt).sort(), truth.unrepresentable(HOUR_14), 'unrepresentable_frames: the frames the venue broke')

      const events = await journalEvents(run.journal, channel)
      const late = lateReceipts(truth, events)
      t.comment(`${channel}: ${late.size} frames a stall sent late, ${[...late.values()].filter(apart).length} of them received beyond the pairing window of the other replica's copy`)
      const agreement = expectedAgreement(truth, lines, HOUR_14, late)
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
          const earliest = BigInt(e.close.by === 'venue' ? e.close.simTimeUs : e.lastFrameUs) * 1000n
          return !(start >= earliest && start <= BigInt(e.nextOpenUs) * 1000n && end >= BigInt(e.nextSubscribedUs) * 1000n)
        })
        t.same(outOfPlace, [], `replica ${replica}: each window runs from the close to the next subscription`)
        const uncovered = windows.reconnect_windows.reduce((s, w) => s + (parseTime(w.end_time) - parseTime(w.start_time)), 0n)
        const first = events.find((e): e is Extract<JournalEvent, { kind: 'subscribed' }> => e.kind === 'subscribed' && e.replica === replica)!
        t.equal(BigInt(windows.covered_ns) + uncovered, msToNs(HOUR_14 + HOUR_MS) - first.time, `replica ${replica}: covered from its first subscription to the hour's end but its windows`)
      }
      // The recorder started at the hour's start and subscribed a few simulated seconds into it.
      const reasons = new Set<CompletenessReason>(['recorder_down'])
      if (bothDown) reasons.add('reconnect')
      if (delivered.length > 0) reasons.add('sequence_gap')
      if (truth.unrepresentable(HOUR_14).length > 0) reasons.add('unrepresentable_value')
      t.same(m.completeness, { status: 'partial', reasons: COMPLETENESS_REASONS.filter((r) => reasons.has(r)) }, 'completeness')

      for (const s of truth.appliedIn(HOUR_14, 'stall')) {
        const conn = s.detail['conn'] as string
        const close = truth.records.find((r): r is Close => r.kind === 'close' && r.conn === conn)
        t.ok(close === undefined || close.simTimeUs >= (s.detail['untilUs'] as number), `the recorder kept ${conn} through a stall shorter than its detector's wait`)
      }
      for (const notice of truth.appliedIn(HOUR_14, 'server-shutdown')) {
        const replica = (notice.fault as { replica: Replica }).replica
        const conns = truth.connections(replica)
        const old = conns.find((c) => c.conn === (notice.detail['conns'] as string[])[0])!
        const successor = conns[conns.indexOf(old) + 1]
        t.match(old.close, { by: 'client', code: 1000, reason: 'replaced before the venue announced a server shutdown' }, `replica ${replica}: the recorder replaced the connection the venue said it would close`)
        t.ok(old.close!.simTimeUs < (notice.detail['closeAtUs'] as number) && successor?.subscribedUs !== undefined && successor.subscribedUs <= old.close!.simTimeUs, `replica ${replica}: once its successor had subscribed, before the venue would have closed it`)
      }

      for (const replica of ['a', 'b'] as const) {
        const journaled = events.filter((e): e is Extract<JournalEvent, { kind: 'sequence-break' }> => e.kind === 'sequence-break' && e.replica === replica).map((e) => `${e.instrument} ${e.afterId}..${e.beforeId}`).sort()
        t.same(journaled, expectedBreaks(truth, replica, channel), `replica ${replica}: a sequence-break for each break its connections saw, and no other`)
      }
      t.equal(events.filter((e) => e.kind === 'error' && e.message.startsWith('stalled')).length, 0, 'the stall detector never fired')
      if (channel === 'book') {
        t.same(snapshotProblems(events, run.stoppedAt), [], 'a snapshot after every (re)subscription and after each break')
        const journaledSnapshots = events.filter((e) => e.kind === 'frame' && isSnapshot(Buffer.from(e.payload).toString('utf8'))).length
        t.equal(journaledSnapshots, [...truth.snapshots.values()].reduce((s, n) => s + n, 0), 'every snapshot the venue served was journaled')
      }
      if (channel === 'funding' || channel === 'liquidations') {
        const dir = hourDir(run.root, channel, '14')
        t.same((await readdir(dir)).filter((f) => f.endsWith('.parquet')), [], 'no tables: the raw file is the record')
        t.ok(lines.length > (channel === 'funding' ? 2000 : 100), `the hour's ${channel} frames are in it (${lines.length} lines)`)
      }

      const all = [...lines, ...await laterRawLines(run, channel)]
      const { missed, invented } = rawVersusTruth(truth, all)
      t.same(missed, [], 'every frame the venue wrote to a replica is in a raw file with that replica\'s receipt')
      t.same(invented, [], 'and nothing the venue did not send')
      t.notOk(existsSync(hourDir(run.root, channel, '13')), 'no hour 13: the recorder started at 14:00')
      const quiet = await manifestOf(run.root, channel, '15')
      t.same([quiet.sequence_gaps, quiet.conflicts ?? [], quiet.unrepresentable_frames ?? []], [[], [], []], 'hour 15, without faults, states none')
      t.same(statedCloseCodes(quiet), { a: [], b: [] }, 'hour 15: no close code, as the venue closed nothing (the recorder closed its connections when it stopped)')
    })
  }
  t.equal(run.logLines.filter((l) => l.includes('opening the successor before the venue announced a server shutdown')).length, 4, 'each server shutdown announced was met with a successor')
  t.same(run.logLines.filter((l) => /"level":"error"/.test(l)), [], 'no error logged')
})

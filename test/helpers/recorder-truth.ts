/**
 * The recorder daemon against the venue simulator, and what the simulator's truth says the sealed hours
 * must state: the bench of the tests that prove a venue's recording through a fault plan
 * (test/recorder-faults.test.ts, Binance spot; test/recorder-usdm.test.ts, Binance USD-M futures).
 *
 * Each channel is served by a simulator of its own: a fault names its target by replica label, and the
 * recorder labels all of a replica's connections alike, so one simulator could not say which channel's
 * connection a fault should hit. Every run records two replicas, a and b, of BTCUSDT and ETHUSDT, and the
 * hour under test is 14:00 on 2026-10-03.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { decompress } from 'zstd-napi'
import { childEnv } from './io.js'
import { sealRest } from './seal-rest.js'
import { hourName, readJournalRange } from '../../src/formats/record/journal/journal.js'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../../src/formats/record/keys/keys.js'
import { COMPLETENESS_REASONS, type CompletenessReason, type HourlyManifest } from '../../src/formats/record/manifest.js'
import { PAIRING_WINDOW_NS } from '../../src/formats/record/merge.js'
import { parseTime } from '../../src/formats/record/time.js'
import type { Channel, JournalEvent, Replica } from '../../src/formats/record/types.js'
import type { ClockReading } from '../../src/recorder/clock/recorder-clock.js'
import { SimulatedClock } from '../../src/recorder/clock/simulated-clock.js'
import type { FrameClock } from '../../src/recorder/connection.js'
import { jsonLogger } from '../../src/recorder/log.js'
import { Recorder } from '../../src/recorder/recorder.js'
import type { FaultPlanInput, SimulatedVenue } from '../../src/sim/venue/faults.js'
import { startVenueSimulator, type VenueSimulator } from '../../src/sim/venue/simulator.js'
import type { TruthRecord } from '../../src/sim/venue/truth.js'
import type { SequenceState, VenueAdapter } from '../../src/venues/adapter.js'

const CLI = fileURLToPath(new URL('../../dist/bin/pipe.js', import.meta.url))
const RECORDER = 'rec-1'
const INSTRUMENTS = ['BTCUSDT', 'ETHUSDT']
const DAY = Date.UTC(2026, 9, 3)
export const MIN = 60_000
export const HOUR_MS = 3_600_000
export const HOUR_NS = BigInt(HOUR_MS) * 1_000_000n
export const HOUR_14 = DAY + 14 * HOUR_MS
export const msToNs = (ms: number) => BigInt(ms) * 1_000_000n
const REPLICAS = ['a', 'b'] as const

/** What a test file records, and how: the same for each of its runs. */
export interface BenchOptions<C extends Channel> {
  /** The venue's name in storage paths, on the command line and to the simulator. */
  venue: SimulatedVenue
  channels: readonly C[]
  /** The two instruments the simulators trade (default BTCUSDT and ETHUSDT). */
  instruments?: readonly string[]
  /** What the recorder subscribes, when not the instruments (OKX's liquidations: by instrument type, SWAP). */
  subscribe?: readonly string[]
  /** The recorder's adapter, its connections and snapshots going to `sim`; without one, how it reads frames. */
  adapterAt(sim?: VenueSimulator): VenueAdapter
  /** Each simulator's trades (or aggregates) a second a symbol, and simulated ms between depth updates. */
  rate: number
  depthIntervalMs: number
  /** The clock a run's recorder and simulators share; default a SimulatedClock. */
  clock?(startMs: number, scale: number): SimulatedClock
  /** Real ms a run may take until the daemon has sealed hour 14 of every channel. */
  sealedWithinMs: number
  /** The sealer's wait before it runs a starved seal again at normal priority (default the daemon's). */
  starvedWindowMs?: number
}

export interface Bench<C extends Channel> extends BenchOptions<C> {
  /** How the recorder reads the venue's frames and wraps its snapshots, and so how the truth is read. */
  adapter: VenueAdapter
  dir: string
  key: string
  keys: string
}

/** A temporary folder and a signing key for a test file's runs, removed when `t` ends. */
export async function openBench<C extends Channel>(t: Test, o: BenchOptions<C>): Promise<Bench<C>> {
  const dir = await mkdtemp(join(tmpdir(), `pipe-recorder-${o.venue}-`))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const { privateJwk, publicJwk } = await newSigningKey({ validFrom: '2026-01-01T00:00:00.000000000Z', seed: new Uint8Array(32).fill(11) })
  const bench = { ...o, adapter: o.adapterAt(), dir, key: join(dir, 'key.jwk'), keys: join(dir, 'jwks.json') }
  await writePrivateJwkFile(bench.key, privateJwk)
  await writeJwksFile(bench.keys, { keys: [publicJwk] })
  return bench
}

/**
 * The simulated clock, read once per turn of the event loop: every reading up to the turn's setImmediate
 * phase gives the turn's first. At a time scale S the sealer's 5 s pairing window is 5000/S ms of real
 * time, and a preemption on a loaded machine between reading replica a's socket and replica b's would
 * split one frame's receipts into two lines. The simulator writes a frame to both replicas in one step and
 * both sockets are read in one later turn, so both receipts carry the same time, however the scheduler
 * runs. The simulators read the same clock, so no frame is received before it was made.
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

/** The bench's adapter, with each channel's connections and snapshots going to that channel's simulator. */
function adapterOf<C extends Channel>(bench: Bench<C>, sims: Record<C, VenueSimulator>): VenueAdapter {
  const at = new Map<Channel, VenueAdapter>(bench.channels.map((c) => [c, bench.adapterAt(sims[c])]))
  const of = (channel: Channel) => at.get(channel)!
  return { ...bench.adapter, connect: (channel, instruments) => of(channel).connect(channel, instruments), snapshotRequest: (channel, instrument) => of(channel).snapshotRequest(channel, instrument) }
}

export interface Run<C extends Channel> {
  bench: Bench<C>
  /** Where the recorder and the simulators started, on the simulated clock. */
  startMs: number
  sims: Record<C, VenueSimulator>
  root: string
  journal: string
  logLines: string[]
  /** When the test stopped the recorder, on its clock. */
  stoppedAt: bigint
  /** By channel: the first failed seal's exit code, 0 when hour 15 and every later hour journaled are sealed, -1 when hour 15 is not. */
  sealedHour15: (number | null)[]
  /** By channel: hour 15 and the later hours sealed (a loaded machine's daemon may have run on past hour 15). */
  laterHours: Record<C, bigint[]>
  verify: { status: number | null; stdout: string }
}

/**
 * Starts a simulator a channel and the recorder on one clock (start `startMs`, `scale` times real time),
 * waits until the daemon has sealed hour 14 of every channel, stops the recorder and the simulators, seals
 * the rest of the journal as a stopped recorder's last hour is sealed, and verifies the root.
 */
export async function recordAndSeal<C extends Channel>(t: Test, bench: Bench<C>, name: string, o: {
  startMs: number; scale: number; plans: Record<C, FaultPlanInput['faults']>
  stallMs?: number; rotateAfterMs?: number
}): Promise<Run<C>> {
  const clock = turnClock(bench.clock?.(o.startMs, o.scale) ?? new SimulatedClock(msToNs(o.startMs), o.scale))
  const sims = {} as Record<C, VenueSimulator>
  for (const c of bench.channels) {
    sims[c] = await startVenueSimulator({ venue: bench.venue, seed: 7, instruments: [...bench.instruments ?? INSTRUMENTS], rate: bench.rate, depthIntervalMs: bench.depthIntervalMs, clock: clock.nowMs, faults: { faults: o.plans[c] } })
  }
  const closeSims = () => Promise.all(bench.channels.map((c) => sims[c].close()))
  t.teardown(closeSims)
  const root = join(bench.dir, name, 'root')
  const journal = join(bench.dir, name, 'journal')
  const logLines: string[] = []
  const recorder = new Recorder({
    venue: adapterOf(bench, sims), instruments: [...bench.subscribe ?? bench.instruments ?? INSTRUMENTS], channels: bench.channels, replicas: ['a', 'b'], journal, clock,
    log: jsonLogger({ write: (l: string) => { logLines.push(l); return true } } as never),
    // A heartbeat every real second: a loaded machine's pauses are not taken for the recorder being down.
    timeScale: o.scale, heartbeatMs: 1000 * o.scale, backoffMs: { first: 50, max: 200 }, stallMs: o.stallMs, rotateAfterMs: o.rotateAfterMs,
    seal: { root, key: bench.key, keys: bench.keys, recorder: RECORDER, cli: CLI, everyMs: 200, graceMs: 2 * MIN, starvedWindowMs: bench.starvedWindowMs },
  })
  await recorder.start()
  t.teardown(() => recorder.stop())
  const run = { bench, startMs: o.startMs, sims, root, journal, logLines }
  await waitFor('hour 14 sealed on every channel', () => bench.channels.every((c) => existsSync(join(hourDir(run, c, '14'), 'manifest.json'))), bench.sealedWithinMs)
  const stoppedAt = clock.now().receiveTime
  await recorder.stop()
  await closeSims()
  // The hours the daemon left, hour 15 at least (test/helpers/seal-rest.ts).
  const hour15 = msToNs(HOUR_14) + HOUR_NS
  const rest = await Promise.all(bench.channels.map((channel) => sealRest(CLI, { root, journal: join(journal, channel), venue: bench.venue, channel, recorder: RECORDER, key: bench.key })))
  const sealedHour15 = rest.map((r) => r.statuses.find((x) => x !== 0) ?? (r.hours.includes(hour15) ? 0 : -1))
  const laterHours = Object.fromEntries(bench.channels.map((c, i) => [c, rest[i]!.hours.filter((h) => h >= hour15)])) as Record<C, bigint[]>
  const verify = await runCli(['run', 'verify', '--root', root, '--keys', bench.keys, '--json'])
  return { ...run, stoppedAt, sealedHour15, laterHours, verify }
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

type RunPlace<C extends Channel> = Pick<Run<C>, 'bench' | 'root'>

/** A channel's sealed hour under the run's root: the hour's start (ns), or its two digits on hour 14's day. */
export function hourDir<C extends Channel>(run: RunPlace<C>, channel: C, hour: string | bigint): string {
  const name = hourName(typeof hour === 'bigint' ? hour : msToNs(DAY + Number(hour) * HOUR_MS))
  return join(run.root, `recorder=${RECORDER}`, `venue=${run.bench.venue}`, `channel=${channel}`, `date=${name.slice(0, 10)}`, `hour=${name.slice(11, 13)}`)
}

export async function manifestOf<C extends Channel>(run: RunPlace<C>, channel: C, hh: string): Promise<HourlyManifest> {
  return JSON.parse(await readFile(join(hourDir(run, channel, hh), 'manifest.json'), 'utf8')) as HourlyManifest
}

interface RawLine { payload: string; replicas: Replica[] }

export async function rawLines<C extends Channel>(run: RunPlace<C>, channel: C, hour: string | bigint): Promise<RawLine[]> {
  const path = join(hourDir(run, channel, hour), 'raw.jsonl.zst')
  if (!existsSync(path)) return []
  return decompress(await readFile(path)).toString('utf8').split('\n').filter(Boolean).map((l) => {
    const e = JSON.parse(l) as { payload: string; receipts: { replica: Replica }[] }
    return { payload: e.payload, replicas: e.receipts.map((r) => r.replica) }
  })
}

/** The raw lines of hour 15 and of every later hour sealed. */
export async function laterRawLines<C extends Channel>(run: Run<C>, channel: C): Promise<RawLine[]> {
  const out: RawLine[] = []
  for (const h of run.laterHours[channel]) out.push(...await rawLines(run, channel, h))
  return out
}

/** A channel's journal events, replica a's then b's, each in the order written, without the state restated at the top of each hour file. */
export async function journalEvents<C extends Channel>(run: Run<C>, channel: C): Promise<JournalEvent[]> {
  const events: JournalEvent[] = []
  for await (const batch of readJournalRange(join(run.journal, channel), { merge: false })) {
    for (const e of batch.events) if (!('restated' in e && e.restated)) events.push(e)
  }
  return events
}

// ---------------------------------------------------------------------------------------------------------
// What the truth says

type Fault = Extract<TruthRecord, { kind: 'fault' }>
type Close = Extract<TruthRecord, { kind: 'close' }>
type Frame = Extract<TruthRecord, { kind: 'frame' }>
type Reply = Extract<TruthRecord, { kind: 'reply' }>

export const inHour = (us: number, hourMs: number) => us >= hourMs * 1000 && us < (hourMs + HOUR_MS) * 1000
const symbolOf = (stream: string) => stream.slice(0, stream.indexOf('@')).toUpperCase()
const isSnapshot = (payload: string) => payload.startsWith('{"rest":"depth"')

/** The ids a gap fault dropped, by instrument. */
export interface Drop { instrument: string; first: number; last: number }

/** The sequence gap a drop leaves, as a manifest states it: from the id before the first dropped to the id after the last. */
export const gapAround = (d: Drop) => `${d.instrument} ${d.first - 1}..${d.last + 1}`

/** A channel's simulator's truth, read for what the recorder should have made of it. */
export function truthOf<C extends Channel>(run: Run<C>, channel: C): TruthOf {
  return new TruthOf(run.sims[channel].truth, run.bench.adapter)
}

export class TruthOf {
  private readonly replicaOf = new Map<string, Replica>()
  /**
   * Market frames by text: how many of each replica's connections the venue wrote them to (two while a
   * successor and the connection it replaces are both subscribed).
   */
  readonly sentTo = new Map<string, Record<Replica, number>>()
  readonly replies = new Set<string>()
  /** REST snapshots as the recorder journals them, and how many times each was served. */
  readonly snapshots = new Map<string, number>()
  /** Frames a stall held back and sent late (`sentUs`). */
  readonly late = new Set<string>()

  /** `adapter`: the recorder's, whose rules say what the truth's frames and snapshots are to it. */
  constructor(readonly records: readonly TruthRecord[], readonly adapter: VenueAdapter) {
    for (const r of records) {
      if (r.kind === 'open') this.replicaOf.set(r.conn, r.replica as Replica)
      else if (r.kind === 'frame') {
        for (const c of r.to) this.sentToOf(r.text)[this.replicaOf.get(c)!]++
        if (r.sentUs !== undefined) this.late.add(r.text)
      } else if (r.kind === 'reply') this.replies.add(r.text)
      else if (r.kind === 'rest' && r.status === 200) {
        const text = adapter.wrapSnapshot('book', new URLSearchParams(r.path.slice(r.path.indexOf('?'))).get('symbol')!, r.text)
        this.snapshots.set(text, (this.snapshots.get(text) ?? 0) + 1)
      }
    }
  }

  private sentToOf(text: string): Record<Replica, number> {
    let s = this.sentTo.get(text)
    if (!s) this.sentTo.set(text, (s = { a: 0, b: 0 }))
    return s
  }

  get faults(): Fault[] {
    return this.records.filter((r): r is Fault => r.kind === 'fault')
  }

  appliedIn(hourMs: number, kind: string): Fault[] {
    return this.faults.filter((f) => f.applied && f.fault.kind === kind && inHour(f.simTimeUs, hourMs))
  }

  venueDrops(hourMs: number): Drop[] {
    return this.appliedIn(hourMs, 'gap').map((f) => {
      const dropped = f.detail['dropped'] as { first: number; last: number }[]
      return { instrument: symbolOf(f.detail['stream'] as string), first: dropped[0]!.first, last: dropped[dropped.length - 1]!.last }
    })
  }

  /** Each conflict the venue made: the instrument and trade id of its trade (as the adapter reads the text), and both texts. */
  conflicts(hourMs: number) {
    return this.appliedIn(hourMs, 'conflict').map((f) => {
      const original = f.detail['original'] as string
      const read = this.adapter.classify('trades', Buffer.from(original), false)
      const row = read.kind === 'rows' ? read.rows[0] : undefined
      return { instrument: row?.instrument ?? symbolOf(f.detail['stream'] as string), trade_id: row?.trade_id ?? String(f.detail['first']), texts: [original, f.detail['text'] as string].sort() }
    })
  }

  /**
   * The frames the venue broke, as the replicas got them. A fault's `text` is its target's variant, or
   * without a target the raw one; the recorder's connections may be combined streams, whose text of the
   * same broken frame wraps the raw one (`{"stream":..,"data":<raw>}`, cut short when truncated). One no
   * connection got is expected as the fault made it: the manifest cannot hold it, and the check fails.
   */
  unrepresentable(hourMs: number): string[] {
    return this.appliedIn(hourMs, 'unrepresentable').flatMap((f) => {
      const text = f.detail['text'] as string
      if (f.detail['conn'] !== undefined) return [text]
      const wrapped = `{"stream":"${f.detail['stream'] as string}","data":${text}`
      const got = new Set(this.records.filter((r): r is Frame => r.kind === 'frame' && r.stream === f.detail['stream'] && (r.text === text || r.text.startsWith(wrapped))).map((r) => r.text))
      return got.size > 0 ? [...got] : [text]
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

  /** The connection a server-shutdown notice was sent on, its replica's connections, the successor, and when the venue would have closed it. */
  shutdownNotice(notice: Fault) {
    const replica = (notice.fault as { replica: Replica }).replica
    const conns = this.connections(replica)
    const old = conns.find((c) => c.conn === (notice.detail['conns'] as string[])[0])!
    return { replica, conns, old, successor: conns[conns.indexOf(old) + 1], closeAtUs: notice.detail['closeAtUs'] as number }
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

  /** Each connection's frames and replies in the order written to it (a venue may number both: Coinbase). */
  messagesTo(conn: string): (Frame | Reply)[] {
    return this.records.filter((r): r is Frame | Reply => (r.kind === 'frame' && r.to.includes(conn)) || (r.kind === 'reply' && r.to === conn))
  }

  /**
   * What may be lost because the recorder terminated a connection (Coinbase: a gap in the connection's
   * count replaces it), as the venue saw it (a client close without a close frame, 1006): the frames and
   * replies written to it in the last simulated minute before the venue learnt of the close (a quarter of a
   * real second at 240 times real time) may still have been in the network when the socket was destroyed.
   */
  lostInTermination(): { frames: Set<string>; replies: Record<Replica, number> } {
    const frames = new Set<string>()
    const replies = { a: 0, b: 0 }
    const terminated = this.records.filter((r): r is Close => r.kind === 'close' && r.by === 'client' && r.code === 1006)
    for (const close of terminated) {
      const replica = this.replicaOf.get(close.conn)!
      for (const r of this.messagesTo(close.conn)) {
        if (r.simTimeUs < close.simTimeUs - 60_000_000) continue
        if (r.kind === 'frame') frames.add(r.text)
        else replies[replica]++
      }
    }
    return { frames, replies }
  }

  repliesTo(replica: Replica): number {
    return this.records.filter((r) => r.kind === 'reply' && this.replicaOf.get(r.to) === replica).length
  }
}

/**
 * The breaks in the venue's sequences among `frames`, in the order given, by the adapter's rules, each as
 * `INSTRUMENT after..before`, with the frame that shows each.
 */
function sequenceBreaks(adapter: VenueAdapter, channel: Channel, frames: Iterable<{ text: string; simTimeUs: number }>): { gap: string; simTimeUs: number }[] {
  const states = new Map<string, SequenceState>()
  const breaks: { gap: string; simTimeUs: number }[] = []
  for (const f of frames) {
    const c = adapter.classify(channel, Buffer.from(f.text), false)
    const spans = c.kind === 'rows' || c.kind === 'data' ? c.sequences : c.kind === 'unrepresentable' ? (c.sequences ?? []) : []
    for (const span of spans) {
      const v = adapter.sequence(states.get(span.instrument), span)
      states.set(span.instrument, v.state)
      if (v.verdict === 'gap') breaks.push({ gap: `${span.instrument} ${v.afterId}..${v.beforeId}`, simTimeUs: f.simTimeUs })
    }
  }
  return breaks
}

/**
 * The book checksum mismatches each of the replica's connections must have found, in the hour, as
 * `INSTRUMENT expected computed`: the adapter's books over what the venue wrote to the connection, in the
 * order sent, a mismatch forgetting the instrument's book as the recorder does (its resync brings the
 * snapshot that builds it again). None on a venue whose books carry no checksum.
 */
function expectedChecksumFailures(truth: TruthOf, replica: Replica, channel: Channel, hourMs: number): string[] {
  const books = truth.adapter.books
  if (books === undefined) return []
  const out: string[] = []
  for (const { conn } of truth.connections(replica)) {
    const state = books.create()
    for (const r of truth.records) {
      if (r.kind !== 'frame' && r.kind !== 'reply') continue
      if (r.kind === 'frame' ? !r.to.includes(conn) : r.to !== conn) continue
      const payload = Buffer.from(r.text)
      const c = truth.adapter.classify(channel, payload, false)
      if (c.kind !== 'rows') continue
      for (const check of books.apply(state, c, payload)) {
        if (check.expected === check.computed) continue
        books.reset(state, check.instrument)
        if (inHour(r.sentUs ?? r.simTimeUs, hourMs)) out.push(`${check.instrument} ${check.expected} ${check.computed}`)
      }
    }
  }
  return out.sort()
}

/**
 * The breaks each of the replica's connections saw in what was written to it: what the recorder must journal
 * as `sequence-break` (in the hour `hourMs`, or in all).
 */
function expectedBreaks(truth: TruthOf, replica: Replica, channel: Channel, hourMs?: number): string[] {
  return truth.connections(replica).flatMap(({ conn }) => sequenceBreaks(truth.adapter, channel, truth.messagesTo(conn))
    .filter((b) => hourMs === undefined || inHour(b.simTimeUs, hourMs)).map((b) => b.gap)).sort()
}

/**
 * The breaks among every frame the venue wrote to either replica, in the order it made them: the gaps the
 * venue made, and a stretch both replicas missed should a loaded machine ever make one. A frame one
 * replica missed and the other got is no gap. On a venue that counts each connection's messages
 * (`connectionWide`: Coinbase) the merged record shares no sequence: the manifest states each replica's own
 * breaks (docs/record-format-notes.md), as each connection saw them.
 */
function deliveredGaps(truth: TruthOf, channel: Channel, hourMs: number): string[] {
  if (truth.adapter.connectionWide !== undefined) return [...expectedBreaks(truth, 'a', channel, hourMs), ...expectedBreaks(truth, 'b', channel, hourMs)].sort()
  const delivered = truth.records.filter((r): r is Frame => r.kind === 'frame' && r.to.length > 0)
  return sequenceBreaks(truth.adapter, channel, delivered).filter((b) => inHour(b.simTimeUs, hourMs)).map((b) => b.gap).sort()
}

/**
 * For each book connection in the journal: a snapshot of every instrument after its subscription, and of
 * the instrument after each break it journaled, before it closed (unless the recorder closed it on
 * stopping, perhaps before its first update); and no snapshot nobody asked for.
 */
export function snapshotProblems(events: JournalEvent[], stoppedAt: bigint): string[] {
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
  const lost = truth.lostInTermination()
  for (const [text, sent] of truth.sentTo) for (const r of REPLICAS) if (sent[r] > 0 && !received.get(text)?.has(r) && !lost.frames.has(text)) missed.push(`${r}: ${text.slice(0, 100)}`)
  for (const [text, n] of truth.snapshots) if (snapshotReceipts.get(text) !== n) missed.push(`snapshot served ${n} times, received ${snapshotReceipts.get(text) ?? 0}: ${text.slice(0, 100)}`)
  for (const r of ['a', 'b'] as const) {
    const sent = truth.repliesTo(r)
    if (replyReceipts[r] > sent || replyReceipts[r] < sent - lost.replies[r]) missed.push(`${r}: ${sent} replies sent, ${replyReceipts[r]} received`)
  }
  return { missed, invented }
}

/** Checks that `lines` hold every frame the venue wrote to a replica, with that replica's receipt, and nothing else; `said` leads each message. */
export function checkRawAgainstTruth(t: Test, truth: TruthOf, lines: RawLine[], said = ''): void {
  const { missed, invented } = rawVersusTruth(truth, lines)
  t.same(missed, [], `${said}every frame the venue wrote to a replica is in a raw file with that replica's receipt`)
  t.same(invented, [], `${said}and nothing the venue did not send`)
}

type LateReceipts = Map<string, Record<Replica, bigint[]>>

/**
 * Each frame's receive times, by replica, from the journal: a copy received more than the sealer's pairing
 * window (5 s) after the other replica's is not paired with it. A stall that resumes sends its frames that
 * late; so may a loaded machine, whose milliseconds are seconds on a clock hundreds of times real time.
 */
function receiptsOf(events: JournalEvent[]): LateReceipts {
  const out: LateReceipts = new Map()
  for (const e of events) {
    if (e.kind !== 'frame') continue
    const text = Buffer.from(e.payload).toString('utf8')
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
 * venue wrote it to both, unless its copies were received further apart than the pairing window (then each
 * is a line of its own: `late`, the journal's receipts), and a copy more to one replica's second connection
 * is a line of its own; a snapshot served twice (the same book at the same moment, fetched
 * by both replicas) is one frame seen by both; each reply (a subscription's acknowledgement, a
 * serverShutdown notice) by its replica alone, or, with `repliesMayPair`, by both when alike and received
 * together. The hour a frame falls in is where the raw file put it: frame times are receipt times. Also the
 * lines whose receipts differ from that.
 */
function expectedAgreement(truth: TruthOf, lines: RawLine[], hourMs: number, o: { late?: LateReceipts; repliesMayPair: boolean }) {
  const expected = { both: 0, one_only: 0 }
  const wrong: string[] = []
  const byPayload = new Map<string, RawLine[]>()
  for (const l of lines) {
    if (truth.replies.has(l.payload)) continue
    const same = byPayload.get(l.payload)
    if (same) same.push(l)
    else byPayload.set(l.payload, [l])
  }
  for (const [payload, same] of byPayload) {
    const said = `${same.map((l) => l.replicas.join('+')).join(', ')} for ${payload.slice(0, 80)}`
    const served = truth.snapshots.get(payload)
    if (served !== undefined) {
      expected[served === 2 ? 'both' : 'one_only']++
      if (same.length !== 1 || same[0]!.replicas.length !== served) wrong.push(`snapshot served ${served} times: ${said}`)
      continue
    }
    // Each line pairs one copy a replica received with one the other received, or holds a copy alone: a
    // frame sent to both replicas once is one line, unless received too far apart; one sent to a replica's
    // two connections (a successor and the connection it replaces) is one line more.
    const sent = truth.sentTo.get(payload) ?? { a: 0, b: 0 }
    const split = apart(o.late?.get(payload))
    const pairs = split ? 0 : Math.min(sent.a, sent.b)
    const count = split ? 2 : Math.max(sent.a, sent.b)
    expected.both += pairs
    expected.one_only += count - pairs
    const paired = same.filter((l) => l.replicas.length === 2).length
    if (same.length !== count || paired !== pairs || same.some((l) => l.replicas.some((r) => sent[r] === 0))) wrong.push(`sent to a ${sent.a} times, to b ${sent.b}: ${said}`)
  }
  // Replies the replicas received in the hour, by the journal's receive times: a reply sent at the hour's
  // last moment may be received in the next (Coinbase's heartbeats, every second to every connection).
  const hourNs = [msToNs(hourMs), msToNs(hourMs) + HOUR_NS]
  const replies = o.late === undefined
    ? truth.records.filter((r) => r.kind === 'reply' && inHour(r.simTimeUs, hourMs)).length
    : [...truth.replies].reduce((n, text) => n + REPLICAS.reduce((k, r) => k + (o.late!.get(text)?.[r].filter((t) => t >= hourNs[0]! && t < hourNs[1]!).length ?? 0), 0), 0)
  const replyLines = lines.filter((l) => truth.replies.has(l.payload))
  const receipts = replyLines.reduce((n, l) => n + l.replicas.length, 0)
  const misread = (l: RawLine) => new Set(l.replicas).size !== l.replicas.length || (!o.repliesMayPair && l.replicas.length !== 1)
  const misreadLines = replyLines.filter(misread)
  if (receipts !== replies || misreadLines.length > 0) wrong.push(`${replies} replies sent, ${receipts} received; lines misread: ${JSON.stringify(misreadLines.slice(0, 5).map((l) => [l.replicas, l.payload.slice(0, 80)]))}`)
  for (const l of replyLines) expected[l.replicas.length === 2 ? 'both' : 'one_only']++
  return { expected, wrong }
}

/** The close codes a manifest's reconnect windows state, by replica. */
export function statedCloseCodes(m: HourlyManifest): Record<Replica, number[]> {
  const of = (replica: Replica) => m.replicas.find((r) => r.replica === replica)!.reconnect_windows.flatMap((w) => w.close_code ?? [])
  return { a: of('a'), b: of('b') }
}

/** Checks that a manifest states no sequence gap, conflict or unrepresentable frame; `said` is the message. */
export function checkNoneStated(t: Test, m: HourlyManifest, said: string): void {
  t.same([m.sequence_gaps, m.conflicts ?? [], m.unrepresentable_frames ?? []], [[], [], []], said)
}

// ---------------------------------------------------------------------------------------------------------
// Hour 14 of a run through a fault plan, against the truth

export interface FaultHourOptions {
  /**
   * Stalls at least this long (simulated ms) the recorder's stall detector must end by closing the
   * connection; without it no stall is, and the recorder rides out every one.
   */
  longStallMs?: number
}

/**
 * Checks that a channel's hour 14 states exactly what its simulator did through the run's fault plan:
 * sequence_gaps, conflicts, unrepresentable frames, replica_agreement, reconnect windows and their close
 * codes, completeness, the recorder's answers to stalls and server-shutdown notices, the journal's
 * sequence breaks and (for the book) snapshots, every frame in a raw file, and quiet hours around it.
 * Returns what a test checks further for its venue.
 */
export async function checkFaultHour<C extends Channel>(t: Test, run: Run<C>, channel: C, o: FaultHourOptions = {}) {
  const truth = truthOf(run, channel)
  t.match(truth.records[0], { kind: 'start', venue: run.bench.venue }, 'the simulator spoke the venue recorded')
  t.same(truth.faults.filter((f) => !f.applied).map((f) => f.detail), [], 'the simulator applied every fault of the plan')
  const m = await manifestOf(run, channel, '14')
  const lines = await rawLines(run, channel, '14')
  const events = await journalEvents(run, channel)
  // A recorder started with the hour (not before it) subscribed a few simulated seconds into it, both
  // replicas together.
  const startedInHour = run.startMs >= HOUR_14

  const gaps = m.sequence_gaps.map((g) => `${g.instrument} ${g.after_id}..${g.before_id}`).sort()
  const delivered = deliveredGaps(truth, channel, HOUR_14)
  t.same(gaps, delivered, 'sequence_gaps: the breaks in what reached either replica, and none that one replica\'s copy fills')
  // Coinbase numbers each connection's messages: a frame's copies differ in sequence_num alone, and are
  // compared as the message the venue made, once each.
  const numbered = truth.adapter.connectionWide !== undefined
  const made = (texts: string[]) => (numbered ? [...new Set(texts.map((x) => x.replace(/"sequence_num":\d+,/, '"sequence_num":0,')))] : texts).sort()
  const payloadAt = (i: number) => lines[i]!.payload
  const conflicts = truth.conflicts(HOUR_14).map((c) => ({ ...c, texts: made(c.texts) }))
  t.same((m.conflicts ?? []).map((c) => ({ instrument: c.instrument, trade_id: c.trade_id, texts: made(c.lines.map((l) => payloadAt(l.raw_index))) })), conflicts, 'conflicts: each id the venue sent twice with different data, with both lines')
  t.same(made((m.unrepresentable_frames ?? []).map(payloadAt)), made(truth.unrepresentable(HOUR_14)), 'unrepresentable_frames: the frames the venue broke')

  const late = receiptsOf(events)
  t.comment(`${channel}: ${[...truth.late].filter((text) => apart(late.get(text))).length} of ${truth.late.size} frames a stall sent late, and ${[...late.entries()].filter(([text, r]) => !truth.late.has(text) && apart(r)).length} others, received beyond the pairing window of the other replica's copy`)
  // Replies are alike ({"result":null,"id":1}): the two replicas' first, made together, are one line.
  const agreement = expectedAgreement(truth, lines, HOUR_14, { late, repliesMayPair: startedInHour })
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
    if (startedInHour) {
      const first = events.find((e): e is Extract<JournalEvent, { kind: 'subscribed' }> => e.kind === 'subscribed' && e.replica === replica)!
      t.equal(BigInt(windows.covered_ns) + uncovered, msToNs(HOUR_14 + HOUR_MS) - first.time, `replica ${replica}: covered from its first subscription to the hour's end but its windows`)
    } else t.equal(BigInt(windows.covered_ns) + uncovered, HOUR_NS, `replica ${replica}: covered all the hour but its windows`)
  }
  const reasons = new Set<CompletenessReason>(startedInHour ? ['recorder_down'] : [])
  if (bothDown) reasons.add('reconnect')
  if (delivered.length > 0) reasons.add('sequence_gap')
  if (truth.unrepresentable(HOUR_14).length > 0) reasons.add('unrepresentable_value')
  const checksums = { a: expectedChecksumFailures(truth, 'a', channel, HOUR_14), b: expectedChecksumFailures(truth, 'b', channel, HOUR_14) }
  if (checksums.a.length + checksums.b.length > 0) reasons.add('checksum_failure')
  t.same((m.checksum_failures ?? []).map((f) => `${f.instrument} ${f.expected} ${f.computed}`).sort(), [...checksums.a, ...checksums.b].sort(), `checksum_failures: each mismatch a replica's books found, with the venue's and the computed checksum (${checksums.a.length} + ${checksums.b.length})`)
  for (const replica of REPLICAS) {
    const journaled = events.filter((e): e is Extract<JournalEvent, { kind: 'checksum-mismatch' }> => e.kind === 'checksum-mismatch' && e.replica === replica && inHour(Number(e.time / 1000n), HOUR_14))
    t.same(journaled.map((e) => `${e.instrument} ${e.expected} ${e.computed}`).sort(), checksums[replica], `replica ${replica}: a checksum-mismatch journaled for each`)
  }
  t.same(m.completeness, { status: reasons.size > 0 ? 'partial' : 'complete', reasons: COMPLETENESS_REASONS.filter((r) => reasons.has(r)) }, 'completeness')

  const stalls = truth.appliedIn(HOUR_14, 'stall')
  const isLong = (s: Fault) => o.longStallMs !== undefined && (s.fault as { durationMs: number }).durationMs >= o.longStallMs
  for (const s of stalls) {
    const conn = s.detail['conn'] as string
    const until = s.detail['untilUs'] as number
    const close = truth.records.find((r): r is Close => r.kind === 'close' && r.conn === conn)
    if (isLong(s)) t.ok(close?.by === 'client' && close.simTimeUs < until, `the recorder closed the stalled ${conn} before the stall ended`)
    else t.ok(close === undefined || close.simTimeUs >= until, `the recorder kept ${conn} through a stall shorter than its detector's wait`)
  }
  const stalledErrors = events.filter((e) => e.kind === 'error' && e.message.startsWith('stalled')).length
  if (o.longStallMs === undefined) t.equal(stalledErrors, 0, 'the stall detector never fired')
  else t.equal(stalledErrors, stalls.filter(isLong).length, 'the stall detector fired once for each long stall')
  for (const notice of truth.appliedIn(HOUR_14, 'server-shutdown')) {
    const { replica, old, successor, closeAtUs } = truth.shutdownNotice(notice)
    t.match(old.close, { by: 'client', code: 1000, reason: 'replaced before the venue announced a server shutdown' }, `replica ${replica}: the recorder replaced the connection the venue said it would close`)
    t.ok(old.close!.simTimeUs < closeAtUs && successor?.subscribedUs !== undefined && successor.subscribedUs <= old.close!.simTimeUs, `replica ${replica}: once its successor had subscribed, before the venue would have closed it`)
  }

  for (const replica of ['a', 'b'] as const) {
    const journaled = events.filter((e): e is Extract<JournalEvent, { kind: 'sequence-break' }> => e.kind === 'sequence-break' && e.replica === replica).map((e) => `${e.instrument} ${e.afterId}..${e.beforeId}`).sort()
    t.same(journaled, expectedBreaks(truth, replica, channel), `replica ${replica}: a sequence-break for each break its connections saw, and no other`)
  }
  // A venue that sends its books over the websocket has no REST snapshot to fetch: its snapshots are frames.
  if (channel === 'book' && truth.adapter.snapshotRequest('book', (run.bench.instruments ?? INSTRUMENTS)[0]!) !== null) {
    t.same(snapshotProblems(events, run.stoppedAt), [], 'a snapshot after every (re)subscription and after each break')
    const journaledSnapshots = events.filter((e) => e.kind === 'frame' && isSnapshot(Buffer.from(e.payload).toString('utf8'))).length
    t.equal(journaledSnapshots, [...truth.snapshots.values()].reduce((s, n) => s + n, 0), 'every snapshot the venue served was journaled')
  }

  checkRawAgainstTruth(t, truth, [...await rawLines(run, channel, '13'), ...lines, ...await laterRawLines(run, channel)])
  if (startedInHour) t.notOk(existsSync(hourDir(run, channel, '13')), 'no hour 13: the recorder started at 14:00')
  for (const hh of startedInHour ? ['15'] : ['13', '15']) {
    const quiet = await manifestOf(run, channel, hh)
    checkNoneStated(t, quiet, `hour ${hh}, without faults, states none`)
    t.same(statedCloseCodes(quiet), { a: [], b: [] }, `hour ${hh}: no close code, as the venue closed nothing (the recorder closed its connections when it stopped)`)
  }
  return { truth, m, lines, gaps }
}

/** Checks that hour 15 (and any later hour journaled) is sealed on every channel, and that the root verifies. */
export function checkSealedAndVerified<C extends Channel>(t: Test, run: Run<C>): void {
  t.same(run.sealedHour15, run.bench.channels.map(() => 0), 'hour 15 (and any later hour journaled) sealed on every channel')
  t.equal(run.verify.status, 0, `verify passes: ${run.verify.stdout.slice(0, 600)}`)
}

export const loggedErrors = <C extends Channel>(run: Run<C>) => run.logLines.filter((l) => /"level":"error"/.test(l))

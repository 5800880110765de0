/**
 * bench:record — the recorder daemon's receiving side against the bare websocket client it is built on, on
 * loopback, in the same run. The venue simulator runs in this process; each receiver runs in a child
 * process of its own (this script again, `record.js receiver …`), so that its CPU and peak RSS are its own
 * and the two cores are shared as on a recorder host: simulator on one, receiver on the other.
 *
 * Phase 1, throughput. The simulator floods BENCH_FRAMES trades (default 300,000, BTCUSDT and ETHUSDT in
 * turn) to each of two connections as fast as the sockets take them (`flood()`, docs/simulator.md), in two
 * ways: batched (each connection's 512 frames in one write: the receiver is the limit) and each frame sent
 * by itself (`ws.send` a frame, as a plain ws server sends: the sender shares the cores and is the limit,
 * as a venue's pace is). The receivers take turns, BENCH_ROUNDS times each (default 3) for each sender:
 * - record: the daemon's `Recorder` (src/recorder/recorder.ts): replicas a and b, the trades channel, the
 *   `--clock none` clock, each channel's journal in a temporary directory with the daemon's durability
 *   (group commit, fsync every 200 ms), no sealing;
 * - bare: the same `ws` client with the options and connection plan the recorder's connection uses (URL,
 *   headers, SUBSCRIBE), counting frames and dropping them.
 * frames/s per replica = frames per replica / seconds from the first flood frame's receipt to the last
 * one's journal write (bare: its receipt); each side's best round counts, as in the other benches.
 * Receive-to-journal-write is the daemon's own measure (its journal_write histogram: from the receipt, just
 * after the clock is read, to the append's write completing; fsync follows within the interval), taken
 * exactly rather than in the histogram's buckets.
 *
 * Phase 2, latency. The simulator on its real clock at a steady BENCH_STEADY_RATE trades/s to each replica
 * (default 10,000, sent as it always sends: a step every 5 ms, here 50 frames a connection at once), the
 * Recorder receiving: BENCH_STEADY_SECONDS
 * (default 10) without sealing, then while `pipe run seal-hour` seals a prepared hour in a child process
 * started as the daemon's sealer starts it. The hour holds BENCH_SEAL_FRAMES venue frames (default
 * 1,000,000, over 10 instruments, received by both replicas), built as bench:seal-hour builds its hour.
 *
 * The last line is machine-readable:
 *   record frames-per-s F p99-us L ratio-vs-bare R peak-rss-mb M
 * F = the recorder's best round with the batched sender, frames/s per replica; L = p99 receive-to-journal-write
 * in µs at the steady rate, the worse of without and while sealing; R = the recorder's best round over the
 * bare client's with each frame sent by itself (the baseline issue 25 states: a plain ws server and two
 * discarding clients); M = the recorder's highest peak RSS over all its runs. The ratio with the batched
 * sender, and each receiver's CPU a frame, are printed above it.
 *
 * Environment: BENCH_FRAMES, BENCH_ROUNDS, BENCH_STEADY_RATE, BENCH_STEADY_SECONDS, BENCH_SEAL_FRAMES,
 * BENCH_RECEIVER_NODE_ARGS (extra node flags for the receivers, e.g. --cpu-prof).
 */
// As bin/pipe.ts does: the recorder and the simulator run under the CLI's V8 flags.
import '../src/core/tiering.js'
import { fork, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import WebSocket from 'ws'
import { VERSION } from '../src/core/version.js'
import { JournalBuilder } from '../src/formats/record/journal/journal.js'
import type { Replica } from '../src/formats/record/types.js'
import { NoneClock } from '../src/recorder/clock/index.js'
import { jsonLogger } from '../src/recorder/log.js'
import { Recorder } from '../src/recorder/recorder.js'
import { sealCommand } from '../src/recorder/sealer.js'
import { simulateReplicas } from '../src/sim/replicas.js'
import { startVenueSimulator } from '../src/sim/venue/simulator.js'
import { venueAt } from '../src/venues/index.js'
import { timedCli } from './timed-cli.js'

const INSTRUMENTS = ['BTCUSDT', 'ETHUSDT']
const REPLICAS: Replica[] = ['a', 'b']

/** What a receiver reports of one measuring window. */
interface Window {
  /** Frames journaled (bare: counted), both replicas together. */
  frames: number
  /** From the first frame's receipt to the last one's journal write (bare: receipt). */
  seconds: number
  /** Receive-to-journal-write, µs (record only). */
  p50?: number
  p99?: number
  max?: number
  /** The receiver's CPU seconds over the window. */
  cpuSeconds: number
}

interface Stopped { rssMb: number; gaps: number }

type ToReceiver = { cmd: 'measure'; frames?: number } | { cmd: 'report' } | { cmd: 'stop' }
/** One of the three at a time. */
interface FromReceiver { ready?: true; window?: Window; stopped?: Stopped }

// -----------------------------------------------------------------------------------------------------------
// The receivers (child processes)

/** Latency samples in µs, in blocks so that a long window does not copy a growing array. */
class Samples {
  private blocks: Float64Array[] = []
  private at = 0
  count = 0
  push(us: number): void {
    if (this.blocks.length === 0 || this.at === 65536) {
      this.blocks.push(new Float64Array(65536))
      this.at = 0
    }
    this.blocks[this.blocks.length - 1]![this.at++] = us
    this.count++
  }
  percentiles(): { p50: number; p99: number; max: number } {
    const all = new Float64Array(this.count)
    let o = 0
    for (const b of this.blocks) {
      const n = Math.min(b.length, this.count - o)
      all.set(b.subarray(0, n), o)
      o += n
    }
    all.sort()
    const q = (p: number) => all[Math.max(0, Math.ceil(p * all.length) - 1)] ?? NaN
    return { p50: q(0.5), p99: q(0.99), max: all[all.length - 1] ?? NaN }
  }
}

/** One measuring window: frames seen, the first receipt and the last completion, and latencies. */
class Measure {
  frames = 0
  first = Infinity
  last = 0
  readonly samples = new Samples()
  private readonly cpu0 = process.cpuUsage()
  constructor(readonly expected: number, private readonly done: (w: Window) => void) {}
  /** A frame received at `receivedMs` was done (journaled, or counted) at `doneMs`. */
  add(receivedMs: number, doneMs: number, latencyUs?: number): void {
    if (receivedMs < this.first) this.first = receivedMs
    this.last = doneMs
    if (latencyUs !== undefined) this.samples.push(latencyUs)
    if (++this.frames === this.expected) this.done(this.window())
  }
  window(): Window {
    const cpu = process.cpuUsage(this.cpu0)
    const w: Window = { frames: this.frames, seconds: (this.last - this.first) / 1000, cpuSeconds: (cpu.user + cpu.system) / 1e6 }
    return this.samples.count > 0 ? { ...w, ...this.samples.percentiles() } : w
  }
}

async function receiver(mode: 'record' | 'bare', wsUrl: string, restUrl: string, journal: string): Promise<void> {
  const send = (m: FromReceiver) => process.send!(m)
  const venue = venueAt('binance', { ws: wsUrl, rest: restUrl })
  let measure: Measure | null = null
  let stop: () => Promise<number>
  let ready: () => boolean

  if (mode === 'record') {
    const clock = new NoneClock()
    await clock.start()
    const log = jsonLogger(process.stderr)
    const recorder = new Recorder({
      venue, instruments: INSTRUMENTS, channels: ['trades'], replicas: REPLICAS, journal, clock,
      log: (level, msg, fields) => { if (level !== 'info') log(level, msg, fields) },
    })
    // The daemon's journal_write histogram, read exactly: its buckets (0.25, 0.5, 1 ms) are too coarse for a
    // p99. The histogram still observes every frame, so the daemon's per-frame cost is all there.
    const histogram = recorder.metrics.journalWrite
    let before = 0
    ;(recorder.metrics as unknown as { journalWrite: { labels(labels: { channel: string }): { observe(seconds: number): void } } }).journalWrite = {
      labels(labels: { channel: string }) {
        const child = histogram.labels(labels)
        return {
          observe(seconds: number) {
            child.observe(seconds)
            const now = performance.now()
            if (measure) measure.add(now - seconds * 1000, now, seconds * 1e6)
            else before++
          },
        }
      },
    }
    await recorder.start()
    // Subscribed, and both subscription replies journaled: in a flood, every frame measured from here is a trade.
    ready = () => recorder.health().ok && before >= REPLICAS.length
    stop = async () => {
      await recorder.stop()
      await clock.stop()
      let gaps = 0
      for (const v of (await recorder.metrics.gaps.get()).values) gaps += v.value
      return gaps
    }
  } else {
    // The recorder connection's client (src/recorder/connection.ts), its frames counted and dropped.
    const plan = venue.connect('trades', INSTRUMENTS)
    let subscribed = 0
    const sockets = REPLICAS.map((replica) => {
      const ws = new WebSocket(plan.url, { perMessageDeflate: false, maxPayload: 16 * 2 ** 20 - 64 * 1024, handshakeTimeout: 10_000, headers: { 'User-Agent': `pipe/${VERSION}`, 'X-Pipe-Replica': replica } })
      let up = false
      ws.on('open', () => { for (const text of plan.send) ws.send(text) })
      ws.on('message', (data: Buffer) => {
        if (up) {
          const now = performance.now()
          measure?.add(now, now)
        } else if (plan.answers(data) === 'subscribed') {
          up = true
          subscribed++
        }
      })
      ws.on('error', (err) => process.stderr.write(`bare client ${replica}: ${err.message}\n`))
      return ws
    })
    ready = () => subscribed === REPLICAS.length
    stop = async () => {
      await Promise.all(sockets.map((ws) => { ws.close(1000); return once(ws, 'close') }))
      return 0
    }
  }

  const deadline = performance.now() + 30_000
  while (!ready()) {
    if (performance.now() > deadline) throw new Error(`the ${mode} receiver did not subscribe within 30 s`)
    await new Promise((r) => setTimeout(r, 10))
  }
  process.on('message', (m: ToReceiver) => {
    if (m.cmd === 'measure') measure = new Measure(m.frames ?? Infinity, (w) => { measure = null; send({ window: w }) })
    else if (m.cmd === 'report') {
      send({ window: measure!.window() })
      measure = null
    } else {
      void stop().then((gaps) => {
        process.send!({ stopped: { rssMb: process.resourceUsage().maxRSS / 1024, gaps } } satisfies FromReceiver, () => process.exit(0))
      })
    }
  })
  send({ ready: true })
}

// -----------------------------------------------------------------------------------------------------------
// The bench (parent): the simulator, the rounds, the seal

const FRAMES = Number(process.env.BENCH_FRAMES ?? 300_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const STEADY_RATE = Number(process.env.BENCH_STEADY_RATE ?? 10_000)
const STEADY_SECONDS = Number(process.env.BENCH_STEADY_SECONDS ?? 10)
const SEAL_FRAMES = Number(process.env.BENCH_SEAL_FRAMES ?? 1_000_000)
const receiverNodeArgs = (process.env.BENCH_RECEIVER_NODE_ARGS ?? '').split(' ').filter((s) => s !== '')
const cli = fileURLToPath(new URL('../bin/pipe.js', import.meta.url))

/** A receiver child: its messages in order, and its exit. */
class Receiver {
  private readonly child: ChildProcess
  private readonly inbox: FromReceiver[] = []
  private wake: (() => void) | null = null
  private readonly exited: Promise<void>
  private gone = false

  constructor(mode: 'record' | 'bare', sim: { wsUrl: string; restUrl: string }, journal: string) {
    this.child = fork(fileURLToPath(import.meta.url), ['receiver', mode, sim.wsUrl, sim.restUrl, journal], { execArgv: receiverNodeArgs, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    this.child.on('message', (m: FromReceiver) => { this.inbox.push(m); this.wake?.() })
    this.exited = new Promise((resolve, reject) => this.child.on('exit', (code) => {
      this.gone = true
      if (code === 0) resolve()
      else reject(new Error(`the ${mode} receiver exited with ${code}`))
    }))
    this.exited.catch(() => {})
  }

  send(m: ToReceiver): void {
    this.child.send(m)
  }

  async next<K extends keyof FromReceiver>(key: K): Promise<NonNullable<FromReceiver[K]>> {
    for (;;) {
      const m = this.inbox.shift()
      if (m !== undefined) {
        const v = m[key]
        if (v === undefined) throw new Error(`expected ${key} from the receiver, got ${JSON.stringify(m)}`)
        return v
      }
      if (this.gone) throw new Error(`the receiver exited before it sent ${key}`)
      await Promise.race([new Promise<void>((r) => (this.wake = r)), this.exited])
    }
  }

  async stop(): Promise<Stopped> {
    this.send({ cmd: 'stop' })
    const stopped = await this.next('stopped')
    await this.exited
    if (stopped.gaps !== 0) throw new Error(`the recorder saw ${stopped.gaps} sequence gaps: the simulator's trade ids are not consecutive`)
    return stopped
  }
}

interface Round { mode: 'record' | 'bare'; sender: 'batched' | 'each'; perReplica: number; w: Window; rssMb: number }

/** The receiver's CPU a frame, µs. */
const cpuPerFrame = (w: Window) => (w.cpuSeconds * 1e6 / w.frames).toFixed(1)

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ')

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-record-'))
  try {
    const loadAtStart = load()
    const seal = await prepareSealHour(join(dir, 'seal'))

    // Phase 1: the flood. The simulator's clock stands still, so that it sends nothing but the flood.
    const start = Date.UTC(2026, 9, 3, 14)
    const sim = await startVenueSimulator({ instruments: INSTRUMENTS, clock: () => start, keepTruth: false })
    const rounds: Round[] = []
    for (let r = 0; r < ROUNDS; r++) {
      for (const sender of ['batched', 'each'] as const) {
        for (const mode of ['bare', 'record'] as const) {
          const journal = join(dir, `journal-${r}-${sender}-${mode}`)
          const rx = new Receiver(mode, sim, journal)
          await rx.next('ready')
          rx.send({ cmd: 'measure', frames: FRAMES * REPLICAS.length })
          const [w, flood] = await Promise.all([rx.next('window'), sim.flood(FRAMES, { sendEach: sender === 'each' })])
          const { rssMb } = await rx.stop()
          await rm(journal, { recursive: true, force: true })
          const round: Round = { mode, sender, perReplica: w.frames / REPLICAS.length / w.seconds, w, rssMb }
          rounds.push(round)
          const latency = w.p99 !== undefined ? `; receive-to-journal-write p50 ${fmt(w.p50!)} µs, p99 ${fmt(w.p99)} µs, max ${fmt(w.max!)} µs` : ''
          console.log(`round ${r + 1} ${sender.padEnd(7)} ${mode.padEnd(6)} ${fmt(round.perReplica)} frames/s per replica (${fmt(w.frames / REPLICAS.length)} each in ${w.seconds.toFixed(2)} s); CPU receiver ${w.cpuSeconds.toFixed(1)} s (${cpuPerFrame(w)} µs a frame), simulator ${flood.cpuSeconds.toFixed(1)} s; peak RSS ${rssMb.toFixed(0)} MB${latency}`)
        }
      }
    }
    await sim.close()

    // Phase 2: the steady rate, without sealing and then while an hour is sealed.
    const steady = await startVenueSimulator({ instruments: INSTRUMENTS, rate: STEADY_RATE / INSTRUMENTS.length, keepTruth: false })
    const rx = new Receiver('record', steady, join(dir, 'journal-steady'))
    await rx.next('ready')
    rx.send({ cmd: 'measure' })
    await new Promise((r) => setTimeout(r, STEADY_SECONDS * 1000))
    rx.send({ cmd: 'report' })
    const idle = await rx.next('window')
    rx.send({ cmd: 'measure' })
    const sealSeconds = await sealHour(seal)
    rx.send({ cmd: 'report' })
    const sealing = await rx.next('window')
    const { rssMb: steadyRss } = await rx.stop()
    await steady.close()
    const rate = (w: Window) => fmt(w.frames / REPLICAS.length / w.seconds)
    console.log(`steady, no seal:    ${rate(idle)} frames/s per replica for ${idle.seconds.toFixed(1)} s; receive-to-journal-write p50 ${fmt(idle.p50!)} µs, p99 ${fmt(idle.p99!)} µs, max ${fmt(idle.max!)} µs; CPU ${idle.cpuSeconds.toFixed(1)} s`)
    console.log(`steady, sealing:    ${rate(sealing)} frames/s per replica for ${sealing.seconds.toFixed(1)} s (seal-hour ${sealSeconds.toFixed(1)} s, ${fmt(SEAL_FRAMES)} frames × 2 replicas); p50 ${fmt(sealing.p50!)} µs, p99 ${fmt(sealing.p99!)} µs, max ${fmt(sealing.max!)} µs; CPU ${sealing.cpuSeconds.toFixed(1)} s; peak RSS ${steadyRss.toFixed(0)} MB`)

    const best = (mode: Round['mode'], sender: Round['sender']) => rounds.filter((x) => x.mode === mode && x.sender === sender).reduce((a, b) => (b.perReplica > a.perReplica ? b : a))
    const rec = best('record', 'batched')
    const bare = best('bare', 'batched')
    const recEach = best('record', 'each')
    const bareEach = best('bare', 'each')
    const peakRss = Math.max(steadyRss, ...rounds.filter((x) => x.mode === 'record').map((x) => x.rssMb))
    const p99 = Math.max(idle.p99!, sealing.p99!)
    console.log(`batched sender (best of ${ROUNDS}): record ${fmt(rec.perReplica)} frames/s per replica (p50 ${fmt(rec.w.p50!)} µs, p99 ${fmt(rec.w.p99!)} µs), bare client ${fmt(bare.perReplica)}: ratio ${(rec.perReplica / bare.perReplica).toFixed(3)}; receiver CPU ${cpuPerFrame(rec.w)} µs a frame against ${cpuPerFrame(bare.w)}`)
    console.log(`each frame sent by itself (best of ${ROUNDS}): record ${fmt(recEach.perReplica)} frames/s per replica, bare client ${fmt(bareEach.perReplica)}: ratio ${(recEach.perReplica / bareEach.perReplica).toFixed(3)}`)
    console.log(`peak RSS: record ${peakRss.toFixed(0)} MB, bare client ${Math.max(...rounds.filter((x) => x.mode === 'bare').map((x) => x.rssMb)).toFixed(0)} MB`)
    console.log(`load average (1, 5, 15 min): ${loadAtStart} at start, ${load()} at end`)
    console.log(`record frames-per-s ${Math.round(rec.perReplica)} p99-us ${Math.round(p99)} ratio-vs-bare ${(recEach.perReplica / bareEach.perReplica).toFixed(3)} peak-rss-mb ${peakRss.toFixed(0)}`)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

interface SealHour { journal: string; root: string; key: string }

const HOUR = '2026-10-03T14'
const HOUR_START = BigInt(Date.UTC(2026, 9, 3, 14)) * 1_000_000n
const HOUR_NS = 3_600_000_000_000n

/** An hour of Binance trades as two replicas journal it, and a signing key: what phase 2 seals (not timed). */
async function prepareSealHour(dir: string): Promise<SealHour> {
  const t0 = performance.now()
  const journal = join(dir, 'journal')
  const builder = new JournalBuilder(journal)
  const events = simulateReplicas({
    channel: 'trades', start: HOUR_START - 10_000_000_000n, end: HOUR_START + HOUR_NS,
    instruments: ['BTCUSDT', 'ETHUSDT', 'SOLUSDT', 'BNBUSDT', 'XRPUSDT', 'ADAUSDT', 'DOGEUSDT', 'TRXUSDT', 'LINKUSDT', 'AVAXUSDT'],
    framesPerSecond: SEAL_FRAMES / 3600, oneReplicaShare: 0.01, seed: 11,
  })
  for (const e of events) await builder.append(e)
  await builder.commit()
  const keys = join(dir, 'keys')
  timedCli(['key', 'new', '--out', keys, '--valid-from', '2026-01-01T00:00:00.000000000Z'])
  const key = join(keys, (await readdir(keys)).find((f) => f !== 'jwks.json')!)
  console.log(`prepared the hour to seal in ${((performance.now() - t0) / 1000).toFixed(1)} s (not timed): ${builder.events} journal events`)
  return { journal, root: join(dir, 'root'), key }
}

/**
 * Seals the prepared hour as the daemon's sealer does (src/recorder/sealer.ts: the same CLI, in a child
 * process at nice 19); --recorder-stopped because no later hour is journaled. Resolves with its wall seconds.
 */
async function sealHour(s: SealHour): Promise<number> {
  const t0 = performance.now()
  const [command, ...args] = sealCommand([cli, 'run', 'seal-hour', '--venue', 'binance', '--channel', 'trades', '--hour', HOUR, '--journal', s.journal, '--out', s.root, '--key', s.key, '--recorder', 'recorder', '--json', '--recorder-stopped'])
  const child = spawn(command!, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  child.stderr!.on('data', (d: Buffer) => { err += d.toString() })
  const [code] = await once(child, 'close') as [number | null]
  if (code !== 0) throw new Error(`seal-hour failed (exit ${code}): ${err.slice(-2000)}`)
  return (performance.now() - t0) / 1000
}

if (process.argv[2] === 'receiver') await receiver(process.argv[3] as 'record' | 'bare', process.argv[4]!, process.argv[5]!, process.argv[6]!)
else await main()

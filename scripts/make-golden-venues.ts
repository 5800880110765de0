/**
 * Builds the golden sealed hours of the venues the simulator speaks beyond Binance spot
 * (test/golden/record-<venue>/, each with root/, jwks.json and hashes.txt, as test/golden/record):
 *
 *   record-kraken        channel=trades  2026-10-03T14  BTC/USD and ETH/USD trades, snapshots included -> complete
 *                        channel=book    2026-10-03T14  the book with its checksums; at 14:20 replica a gets a
 *                                                       corrupted checksum, at 14:40 replica b misses an update
 *                                                       of BTC/USD: two checksum failures, each followed by a
 *                                                       resync -> partial, checksum_failure
 *   record-binance-usdm  channel=funding       2026-10-03T14  mark prices and funding rates (no tables) -> complete
 *                        channel=liquidations  2026-10-03T14  forced orders (no tables) -> complete
 *   record-okx           trades, funding, liquidations (by instrument type, SWAP) -> complete; book: at 14:20
 *                        replica b gets a corrupted checksum, at 14:40 the venue drops two BTC updates (a
 *                        seqId gap, and a checksum failure on each replica), each followed by a resync
 *                        -> partial, sequence_gap and checksum_failure
 *   record-bybit         trades, funding (tickers), liquidations -> complete; book: at 14:30 the venue drops
 *                        three ETHUSDT deltas (a gap in u), followed by a resync -> partial, sequence_gap
 *   record-deribit       book, funding (ticker and perpetual) -> complete; trades: at 14:15 the venue drops
 *                        two BTC-PERPETUAL trade_seqs -> partial, sequence_gap
 *   record-coinbase      book -> complete; trades: at 14:25 the venue sends replica b one BTC-USD trade again
 *                        with another price (a conflict); b's sequence_num then runs one ahead of a's, so no
 *                        later copy pairs
 *
 * Each hour is what the venue simulator sent over real sockets to two connections subscribed as the
 * recorder's adapter subscribes them (its plan's requests, its resync after a mismatch), on a manual clock
 * that moves a second at a time and waits while requests are answered, so the same code makes the same
 * frames. The journal is built from the simulator's truth: each frame and reply a replica's connection was
 * sent, received 1.2 ms (a) or 1.9 ms (b) after it was sent, with clock fields from a time daemon sampled
 * every 8 s, and a checksum-mismatch after each frame whose checksum the replica's books do not match. The
 * hour is sealed with the project's sealer.
 *
 * Usage:
 *   npm run golden:venues                  write test/golden/record-<venue> (refuses to change existing bytes)
 *   npm run golden:venues -- --check       build into a temporary directory and compare byte for byte
 */
import { once } from 'node:events'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { WebSocket } from 'ws'
import { syncedReceipt } from '../src/sim/synced-receipt.js'
import { JournalBuilder } from '../src/formats/record/journal/journal.js'
import { writeJwksFile } from '../src/formats/record/keys/keys.js'
import { sealHour } from '../src/formats/record/seal/seal.js'
import { eventTime, type Channel, type JournalEvent, type Replica } from '../src/formats/record/types.js'
import type { FaultPlanInput, SimulatedVenue } from '../src/sim/venue/faults.js'
import { manualClock, startVenueSimulator, type VenueSimulator } from '../src/sim/venue/simulator.js'
import type { TruthRecord } from '../src/sim/venue/truth.js'
import type { ChecksumCheck, FrameClass, SequenceSpan, SequenceState, VenueAdapter } from '../src/venues/adapter.js'
import { getVenue, venueAt } from '../src/venues/index.js'
import { CREATED_BY, goldenKey, REPO, writeHashes, writeOrCheckTree } from './make-golden-record.js'
import { keySigner } from '../src/formats/record/keys/signer.js'

const MS = 1_000_000n
/** 2026-10-03T14:00:00Z, the golden hour. */
const HOUR_MS = Date.UTC(2026, 9, 3, 14)
const HOUR_NS = BigInt(HOUR_MS) * MS
/**
 * The connections subscribe ten seconds before the hour, so that it is covered from its start, and the
 * journal runs on ten seconds after it, so that the recorder's last heartbeat in it is followed by another.
 */
const LEAD_MS = 10_000
/** Where the journal ends. */
const END_NS = HOUR_NS + (3_600_000n + BigInt(LEAD_MS)) * MS
const RECORDER = 'golden'
const HEARTBEAT_NS = 10_000n * MS
const DELAY: Record<Replica, bigint> = { a: 1_200_000n, b: 1_900_000n }
const REPLICAS = ['a', 'b'] as const
const minute = (m: number) => LEAD_MS + m * 60_000
const OKX_SWAPS = ['BTC-USDT-SWAP', 'ETH-USDT-SWAP']

interface Case {
  venue: SimulatedVenue
  channel: Channel
  instruments: string[]
  /** What the connections subscribe, when not the instruments (OKX's liquidations: by instrument type). */
  subscribe?: string[]
  rate: number
  depthIntervalMs: number
  faults: FaultPlanInput['faults']
}

const TREES: Record<string, Case[]> = {
  'record-kraken': [
    { venue: 'kraken', channel: 'trades', instruments: ['BTC/USD', 'ETH/USD'], rate: 1, depthIntervalMs: 1000, faults: [] },
    {
      venue: 'kraken', channel: 'book', instruments: ['BTC/USD', 'ETH/USD'], rate: 1, depthIntervalMs: 1000, faults: [
        { kind: 'checksum', at: minute(20), replica: 'a', stream: 'btc/usd@book' },
        { kind: 'only-one', at: minute(40), replica: 'a', stream: 'btc/usd@book' },
      ],
    },
  ],
  'record-binance-usdm': [
    { venue: 'binance-usdm', channel: 'funding', instruments: ['BTCUSDT', 'ETHUSDT'], rate: 1, depthIntervalMs: 1000, faults: [] },
    { venue: 'binance-usdm', channel: 'liquidations', instruments: ['BTCUSDT', 'ETHUSDT'], rate: 1, depthIntervalMs: 1000, faults: [] },
  ],
  'record-okx': [
    { venue: 'okx', channel: 'trades', instruments: OKX_SWAPS, rate: 1, depthIntervalMs: 1000, faults: [] },
    {
      venue: 'okx', channel: 'book', instruments: OKX_SWAPS, rate: 1, depthIntervalMs: 1000, faults: [
        { kind: 'checksum', at: minute(20), replica: 'b', stream: 'eth-usdt-swap@book' },
        { kind: 'gap', at: minute(40), stream: 'btc-usdt-swap@book', count: 2 },
      ],
    },
    { venue: 'okx', channel: 'funding', instruments: OKX_SWAPS, rate: 1, depthIntervalMs: 1000, faults: [] },
    { venue: 'okx', channel: 'liquidations', instruments: OKX_SWAPS, subscribe: ['SWAP'], rate: 1, depthIntervalMs: 1000, faults: [] },
  ],
  'record-bybit': [
    { venue: 'bybit', channel: 'trades', instruments: ['BTCUSDT', 'ETHUSDT'], rate: 1, depthIntervalMs: 1000, faults: [] },
    { venue: 'bybit', channel: 'book', instruments: ['BTCUSDT', 'ETHUSDT'], rate: 1, depthIntervalMs: 1000, faults: [{ kind: 'gap', at: minute(30), stream: 'ethusdt@book', count: 3 }] },
    { venue: 'bybit', channel: 'funding', instruments: ['BTCUSDT', 'ETHUSDT'], rate: 1, depthIntervalMs: 1000, faults: [] },
    { venue: 'bybit', channel: 'liquidations', instruments: ['BTCUSDT', 'ETHUSDT'], rate: 1, depthIntervalMs: 1000, faults: [] },
  ],
  'record-deribit': [
    { venue: 'deribit', channel: 'trades', instruments: ['BTC-PERPETUAL', 'ETH-PERPETUAL'], rate: 1, depthIntervalMs: 1000, faults: [{ kind: 'gap', at: minute(15), stream: 'btc-perpetual@trade', count: 2 }] },
    { venue: 'deribit', channel: 'book', instruments: ['BTC-PERPETUAL', 'ETH-PERPETUAL'], rate: 1, depthIntervalMs: 1000, faults: [] },
    { venue: 'deribit', channel: 'funding', instruments: ['BTC-PERPETUAL', 'ETH-PERPETUAL'], rate: 1, depthIntervalMs: 1000, faults: [] },
  ],
  'record-coinbase': [
    { venue: 'coinbase', channel: 'trades', instruments: ['BTC-USD', 'ETH-USD'], rate: 1, depthIntervalMs: 1000, faults: [{ kind: 'conflict', at: minute(25), replica: 'b', stream: 'btc-usd@trade' }] },
    { venue: 'coinbase', channel: 'book', instruments: ['BTC-USD', 'ETH-USD'], rate: 1, depthIntervalMs: 1000, faults: [] },
  ],
}

/** A replica's connection to the simulator: the texts it has received. */
interface Conn { replica: Replica; ws: WebSocket; id: string; texts: string[] }

async function until(cond: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 30_000
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 1))
  }
}

function sentCount(sim: VenueSimulator, id: string): number {
  let n = 0
  for (const r of sim.truth) if ((r.kind === 'frame' && r.to.includes(id)) || (r.kind === 'reply' && r.to === id)) n++
  return n
}

/**
 * What a recorder's connection makes of each message, as src/recorder/connection.ts does: the venue's
 * checksums recomputed on its own books (a mismatch forgets the book), and each sequence span judged.
 */
class RecorderReading {
  private readonly books: unknown
  private readonly sequences = new Map<string, SequenceState>()
  constructor(private readonly adapter: VenueAdapter, private readonly channel: Channel) {
    this.books = adapter.books?.create()
  }

  read(payload: Uint8Array): { mismatches: ChecksumCheck[]; breaks: (SequenceSpan & { afterId: string; beforeId: string })[]; frame: FrameClass } {
    const frame = this.adapter.classify(this.channel, payload, false)
    const mismatches: ChecksumCheck[] = []
    if (frame.kind === 'rows' && this.adapter.books !== undefined) {
      for (const check of this.adapter.books.apply(this.books, frame, payload)) {
        if (check.expected === check.computed) continue
        this.adapter.books.reset(this.books, check.instrument)
        mismatches.push(check)
      }
    }
    const breaks: (SequenceSpan & { afterId: string; beforeId: string })[] = []
    const spans = frame.kind === 'rows' || frame.kind === 'data' ? frame.sequences : frame.kind === 'unrepresentable' ? (frame.sequences ?? []) : []
    for (const span of spans) {
      const key = `${span.sequence}:${span.instrument}`
      const v = this.adapter.sequence(this.sequences.get(key), span)
      this.sequences.set(key, v.state)
      if (v.verdict === 'gap') breaks.push({ ...span, afterId: v.afterId, beforeId: v.beforeId })
    }
    return { mismatches, breaks, frame }
  }
}

/** What the simulator sent the case's two connections over the hour (and the lead before it), as its truth. */
async function run(c: Case): Promise<{ truth: readonly TruthRecord[]; conns: Map<string, Replica> }> {
  const clock = manualClock(HOUR_MS - LEAD_MS)
  const sim = await startVenueSimulator({
    venue: c.venue, seed: 2026, instruments: c.instruments, rate: c.rate, depthIntervalMs: c.depthIntervalMs, clock: clock.now,
    faults: { faults: c.faults }, realTimeKeepAlive: false,
  })
  const adapter = venueAt(c.venue, { ws: sim.wsUrl, rest: sim.restUrl })
  const subscribe = c.subscribe ?? c.instruments
  const conns: Conn[] = []
  try {
    for (const replica of REPLICAS) {
      const plan = adapter.connect(c.channel, subscribe)
      const ws = new WebSocket(plan.url, { headers: { 'X-Pipe-Replica': replica } })
      const conn: Conn = { replica, ws, id: '', texts: [] }
      ws.on('message', (d) => conn.texts.push(d.toString()))
      await once(ws, 'open')
      conn.id = sim.connections().at(-1)!.id
      for (const text of plan.send) ws.send(text)
      await until(() => conn.texts.some((x) => plan.answers?.(Buffer.from(x)) === 'subscribed'), `${replica} subscribed`)
      conns.push(conn)
    }
    const readings = conns.map(() => new RecorderReading(adapter, c.channel))
    const read = conns.map(() => 0)
    const settle = () => Promise.all(conns.map((k) => until(() => k.texts.length >= sentCount(sim, k.id), `${k.id} to receive what it was sent`)))
    const isSnapshotOf = (text: string, instrument: string) => {
      const f = adapter.classify(c.channel, Buffer.from(text), false)
      return f.kind === 'rows' && f.table === 'book_snapshots' && f.rows[0]?.instrument === instrument
    }
    for (let ms = 0; ms < 3_600_000 + 2 * LEAD_MS; ms += 1000) {
      clock.advance(1000)
      sim.tick()
      await settle()
      // The recorder's answer to a book it can no longer trust (a mismatch, a break): ask the venue for it again.
      for (const [i, k] of conns.entries()) {
        for (; read[i]! < k.texts.length; read[i]!++) {
          const { mismatches, breaks } = readings[i]!.read(Buffer.from(k.texts[read[i]!]!))
          const renew = new Set([...mismatches.map((m) => m.instrument), ...breaks.filter((b) => b.sequence === 'book').map((b) => b.instrument)])
          for (const instrument of renew) {
            const resync = adapter.connect(c.channel, subscribe).resync?.(instrument)
            if (resync === undefined) throw new Error(`${c.venue} ${c.channel}: the book of ${instrument} cannot be asked for again on the connection; a golden hour has no reconnects`)
            for (const text of resync) k.ws.send(text)
            const before = k.texts.length
            await until(() => k.texts.slice(before).some((x) => isSnapshotOf(x, instrument)), `${k.id}'s new snapshot of ${instrument}`)
            await settle()
          }
        }
      }
    }
    for (const k of conns) k.ws.close()
    await Promise.all(conns.map((k) => k.ws.readyState === WebSocket.CLOSED ? undefined : once(k.ws, 'close')))
  } finally {
    await sim.close()
  }
  return { truth: sim.truth, conns: new Map(conns.map((k) => [k.id, k.replica])) }
}

/** The journal a recorder would have written of what the case's connections were sent. */
async function journalOf(c: Case): Promise<JournalEvent[]> {
  const { truth, conns } = await run(c)
  const adapter = getVenue(c.venue)
  const readings = new Map([...conns.keys()].map((id) => [id, new RecorderReading(adapter, c.channel)]))
  const startNs = HOUR_NS - BigInt(LEAD_MS) * MS
  const events: JournalEvent[] = []
  for (const replica of REPLICAS) {
    events.push({ kind: 'recorder-start', replica, time: startNs, heartbeatIntervalNs: HEARTBEAT_NS })
    for (let t = startNs + HEARTBEAT_NS; t < END_NS; t += HEARTBEAT_NS) events.push({ kind: 'heartbeat', replica, time: t })
  }
  for (const [id, replica] of conns) {
    events.push({ kind: 'connecting', replica, connection: id, time: startNs + 1n })
    events.push({ kind: 'open', replica, connection: id, time: startNs + 2n })
  }
  const subscribed = new Set<string>()
  const subscribe = c.subscribe ?? c.instruments
  const plan = adapter.connect(c.channel, subscribe)
  for (const r of truth) {
    if (r.kind !== 'frame' && r.kind !== 'reply') continue
    for (const id of r.kind === 'frame' ? r.to : [r.to]) {
      const replica = conns.get(id)!
      const receiveTime = BigInt(r.sentUs ?? r.simTimeUs) * 1000n + DELAY[replica]
      const payload = Buffer.from(r.text)
      events.push(syncedReceipt(replica, id, receiveTime, payload))
      if (!subscribed.has(id) && plan.answers?.(payload) === 'subscribed') {
        subscribed.add(id)
        events.push({ kind: 'subscribed', replica, connection: id, time: receiveTime, instruments: [...subscribe] })
      }
      const { mismatches, breaks } = readings.get(id)!.read(payload)
      for (const check of mismatches) events.push({ kind: 'checksum-mismatch', replica, connection: id, time: receiveTime, instrument: check.instrument, expected: check.expected, computed: check.computed })
      for (const b of breaks) events.push({ kind: 'sequence-break', replica, connection: id, time: receiveTime, instrument: b.instrument, afterId: b.afterId, beforeId: b.beforeId })
    }
  }
  return events.map((e, i) => ({ e, i })).filter(({ e }) => eventTime(e) < END_NS).sort((x, y) => {
    const tx = eventTime(x.e), ty = eventTime(y.e)
    return tx < ty ? -1 : tx > ty ? 1 : x.i - y.i
  }).map((x) => x.e)
}

async function buildTree(cases: Case[], dir: string): Promise<void> {
  await mkdir(dir, { recursive: false })
  const work = await mkdtemp(join(tmpdir(), 'pipe-golden-venue-'))
  try {
    const { privateJwk, publicJwk } = await goldenKey()
    await writeJwksFile(join(dir, 'jwks.json'), { keys: [publicJwk] })
    for (const c of cases) {
      const journal = join(work, c.channel)
      const builder = new JournalBuilder(journal)
      for (const e of await journalOf(c)) await builder.append(e)
      await builder.commit()
      await sealHour({ root: join(dir, 'root'), journal, recorder: RECORDER, venue: getVenue(c.venue), channel: c.channel, hourStart: HOUR_NS, sign: keySigner(privateJwk), createdBy: CREATED_BY })
    }
    await writeHashes(dir)
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

async function main(argv: string[]): Promise<number> {
  const check = argv.includes('--check')
  const unknown = argv.filter((a) => a !== '--check')
  if (unknown.length > 0) {
    process.stderr.write(`usage: make-golden-venues.ts [--check]; unknown: ${unknown.join(' ')}\n`)
    return 2
  }
  let code = 0
  for (const [name, cases] of Object.entries(TREES)) {
    code ||= await writeOrCheckTree(join(REPO, 'test', 'golden', name), (dir) => buildTree(cases, dir), check, `test/golden/${name}`)
  }
  return code
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then((code) => { process.exitCode = code }, (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
    process.exitCode = 1
  })
}

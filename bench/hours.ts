/**
 * The hours bench:seal-hour and bench:s3 seal: a deterministic hour of one venue's trades (BENCH_FRAMES
 * venue frames, default 1,000,000, over 10 instruments, received by both replicas, 1% by one only)
 * journaled for the sealer and written as JSONL for DuckDB, prepared once in a folder and reused.
 */
import { createWriteStream, existsSync, type WriteStream } from 'node:fs'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { once } from 'node:events'
import { syncedReceipt } from '../src/sim/synced-receipt.js'
import { JournalBuilder } from '../src/formats/record/journal/journal.js'
import { FramePairer, frameTimeOf, type MergedFrame, type Receipt } from '../src/formats/record/merge.js'
import { REPLICAS, type Replica } from '../src/formats/record/types.js'
import { simulateReplicas } from '../src/sim/replicas.js'
import { hash32, seededRandom } from '../src/sim/random.js'
import { COMBINED } from '../src/sim/venue/binance-market.js'
import { DIALECTS } from '../src/sim/venue/dialects.js'
import type { SimulatedVenue } from '../src/sim/venue/faults.js'
import type { SequenceSpan, SequenceState } from '../src/venues/adapter.js'
import { getVenue } from '../src/venues/index.js'

export const FRAMES = Number(process.env.BENCH_FRAMES ?? 1_000_000)
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
export const HOUR = '2026-10-03T14'
export const HOUR_START = BigInt(Date.UTC(2026, 9, 3, 14)) * 1_000_000n
export const HOUR_NS = 3_600_000_000_000n
export const HOUR_END = HOUR_START + HOUR_NS
/** The replicas connect this long before the hour, so that they cover it from its start. */
const LEAD_NS = 10_000_000_000n
const SEED = 11
/** Nanoseconds in a millisecond, for the replicas' delays. */
const MS = 1_000_000
/**
 * The base currencies of each venue's ten instruments, written in the venue's form (`SOLUSDT`, `SOL/USD`,
 * `SOL-USDT-SWAP`, ...). The simulator knows the first five's price, tick and lot (src/sim/binance-instruments.ts);
 * the others get ones derived from their name.
 */
const BASES = ['BTC', 'ETH', 'SOL', 'BNB', 'XRP', 'ADA', 'DOGE', 'TRX', 'LINK', 'AVAX']
export const sealNodeArgs = (process.env.BENCH_SEAL_NODE_ARGS ?? '').split(' ').filter((s) => s !== '')

/** A venue the bench seals: its instruments, how its hour is journaled, and DuckDB's reading of its frames. */
export interface BenchVenue {
  instruments: string[]
  /** Journals the hour's frames into `builder` and hands `jsonl` every trade frame with its frame time. */
  prepare(builder: JournalBuilder, jsonl: JsonlWriter): Promise<void>
  /** DuckDB's columns instrument, trade_id, side, price, size and exchange_time from a frame's JSON (`json`). */
  columns: TradeColumns
  /** What the output says of the venue's frames, when they are not simply one per venue message. */
  note?: string
}

/** The seven columns, each an SQL expression over a frame's JSON (`json`), as DuckDB writes them for a venue. */
export type TradeColumns = Record<'instrument' | 'trade_id' | 'side' | 'price' | 'size' | 'exchange_time', string>

/** The SELECT list of `c`, in the sealed trades table's order of columns. */
export function selectList(c: TradeColumns): string {
  return Object.entries(c).map(([name, expr]) => `${expr} AS ${name}`).join(',\n           ')
}

/** The text at `path` of the frame's JSON: a string as it is, a number as DuckDB writes the double it read. */
const textAt = (path: string) => `json->>'${path}'`
/**
 * The decimal at `path`, a string or a JSON number (Kraken, Deribit). For a number DuckDB's text is that of the
 * double it read, which is exact for the simulator's values (at most 10 significant digits; a double keeps 15).
 */
const decimalAt = (path: string) => `CAST(json->>'${path}' AS DECIMAL(38,18))`
const millisAt = (path: string) => `CAST(json->>'${path}' AS BIGINT)`
/** A time of integer milliseconds since the epoch. */
const msTimeAt = (path: string) => `make_timestamp_ns(${millisAt(path)} * 1000000)`
/** An RFC 3339 time (Kraken, Coinbase). */
const rfc3339At = (path: string) => `CAST(json->>'${path}' AS TIMESTAMP_NS)`

/**
 * Binance's trade columns; `at` is where the event lies in the frame (`$`, or `$.data` in a combined stream),
 * `id` the field of its trade id (`t` on spot, the aggregate id `a` on USD-M). exchange_time is the earlier of
 * `E` and `T`, as the adapters state it.
 */
function binanceColumns(at: string, id: string): TradeColumns {
  return {
    instrument: textAt(`${at}.s`),
    trade_id: `CAST(${textAt(`${at}.${id}`)} AS BIGINT)`,
    side: `CASE WHEN CAST(json->'${at}.m' AS BOOLEAN) THEN 'sell' ELSE 'buy' END`,
    price: decimalAt(`${at}.p`),
    size: decimalAt(`${at}.q`),
    exchange_time: `make_timestamp_ns(least(${millisAt(`${at}.E`)}, ${millisAt(`${at}.T`)}) * 1000000)`,
  }
}

/** Coinbase's texts as the simulator makes them, before a connection numbers them (coinbase-market.ts, `UNNUMBERED`). */
const COINBASE_UNNUMBERED = '"sequence_num":0,'

/**
 * Coinbase numbers every connection's messages (`sequence_num`, +1 a message): each replica's copy of a frame
 * carries its own count of the frames it has received, as the venue would number them. The two counts part at
 * the first frame that reaches one replica only, and meet again only when the other replica misses one too:
 * while they differ the copies are different bytes and never pair, each a frame of its own with its own rows.
 */
function coinbaseNumbering(): Numbering {
  const received: Record<Replica, number> = { a: 0, b: 0 }
  return (replica, text) => {
    if (!text.includes(COINBASE_UNNUMBERED)) throw new Error(`a simulated Coinbase text without ${COINBASE_UNNUMBERED}: ${text}`)
    return text.replace(COINBASE_UNNUMBERED, `"sequence_num":${received[replica]++},`)
  }
}

/**
 * The venues benched; the simulator may speak more, which join here once their DuckDB reading is written.
 * The simulator sends one trade a message on every venue but Binance (whose frames are one trade), so
 * `data[0]` (or its venue's like) is the frame's only row; the row counts check it.
 */
export type VenueName = 'binance' | 'binance-usdm' | 'kraken' | 'okx' | 'bybit' | 'deribit' | 'coinbase'
export const VENUES: Record<VenueName, BenchVenue> = {
  binance: {
    instruments: BASES.map((b) => `${b}USDT`),
    async prepare(builder, jsonl) {
      const pairer = new FramePairer()
      const writeFrames = async (frames: MergedFrame[]) => {
        for (const f of frames) {
          const text = Buffer.from(f.payload).toString('utf8')
          // The subscription's acknowledgement is a frame too, but no trade.
          if (text.startsWith('{"e":"trade"')) await jsonl.add(f.frameTime, text)
        }
      }
      const events = simulateReplicas({
        channel: 'trades', start: HOUR_START - LEAD_NS, end: HOUR_END, instruments: this.instruments,
        framesPerSecond: FRAMES / 3600, oneReplicaShare: 0.01, seed: SEED,
      })
      for (const e of events) {
        await builder.append(e)
        if (e.kind === 'frame') await writeFrames(pairer.push(e))
      }
      await writeFrames(pairer.flush())
    },
    columns: binanceColumns('$', 't'),
  },
  'binance-usdm': {
    instruments: BASES.map((b) => `${b}USDT`),
    // The recorder subscribes futures through combined streams (src/venues/binance-usdm.ts).
    prepare(builder, jsonl) { return journalSimulatedHour('binance-usdm', this.instruments, COMBINED, builder, jsonl) },
    columns: binanceColumns('$.data', 'a'),
  },
  kraken: {
    instruments: BASES.map((b) => `${b}/USD`),
    prepare(builder, jsonl) { return journalSimulatedHour('kraken', this.instruments, 0, builder, jsonl) },
    columns: {
      instrument: textAt('$.data[0].symbol'),
      trade_id: `CAST(${textAt('$.data[0].trade_id')} AS BIGINT)`,
      side: textAt('$.data[0].side'),
      price: decimalAt('$.data[0].price'),
      size: decimalAt('$.data[0].qty'),
      exchange_time: rfc3339At('$.data[0].timestamp'),
    },
  },
  okx: {
    instruments: BASES.map((b) => `${b}-USDT-SWAP`),
    prepare(builder, jsonl) { return journalSimulatedHour('okx', this.instruments, 0, builder, jsonl) },
    // exchange_time is the frame's earliest `ts`: with one trade, its own.
    columns: {
      instrument: textAt('$.arg.instId'),
      trade_id: textAt('$.data[0].tradeId'),
      side: textAt('$.data[0].side'),
      price: decimalAt('$.data[0].px'),
      size: decimalAt('$.data[0].sz'),
      exchange_time: msTimeAt('$.data[0].ts'),
    },
  },
  bybit: {
    instruments: BASES.map((b) => `${b}USDT`),
    prepare(builder, jsonl) { return journalSimulatedHour('bybit', this.instruments, 0, builder, jsonl) },
    // A row's exchange_time is its trade's `T` (the message's `ts` counts only for the frame's, the earliest of
    // both); its side is the venue's word, `Buy` or `Sell`.
    columns: {
      instrument: textAt('$.data[0].s'),
      trade_id: textAt('$.data[0].i'),
      side: textAt('$.data[0].S'),
      price: decimalAt('$.data[0].p'),
      size: decimalAt('$.data[0].v'),
      exchange_time: msTimeAt('$.data[0].T'),
    },
  },
  deribit: {
    instruments: BASES.map((b) => `${b}-PERPETUAL`),
    // Variant 0: the 100ms interval the recorder subscribes unauthenticated.
    prepare(builder, jsonl) { return journalSimulatedHour('deribit', this.instruments, 0, builder, jsonl) },
    columns: {
      instrument: textAt('$.params.data[0].instrument_name'),
      trade_id: textAt('$.params.data[0].trade_id'),
      side: textAt('$.params.data[0].direction'),
      price: decimalAt('$.params.data[0].price'),
      size: decimalAt('$.params.data[0].amount'),
      exchange_time: msTimeAt('$.params.data[0].timestamp'),
    },
  },
  coinbase: {
    instruments: BASES.map((b) => `${b}-USD`),
    prepare(builder, jsonl) { return journalSimulatedHour('coinbase', this.instruments, 0, builder, jsonl, coinbaseNumbering()) },
    note: 'each replica numbers its copies (sequence_num, its own count of frames received), so copies pair only where the two counts agree; '
      + 'every other copy is a frame of its own, with its own rows, and a line of its own for DuckDB',
    // The side is the maker's, `BUY` or `SELL`, written as Coinbase sends it (src/venues/coinbase.ts).
    columns: {
      instrument: textAt('$.events[0].trades[0].product_id'),
      trade_id: textAt('$.events[0].trades[0].trade_id'),
      side: textAt('$.events[0].trades[0].side'),
      price: decimalAt('$.events[0].trades[0].price'),
      size: decimalAt('$.events[0].trades[0].size'),
      exchange_time: rfc3339At('$.events[0].trades[0].time'),
    },
  },
}
export const VENUE_NAMES = Object.keys(VENUES) as VenueName[]

/** The JSONL DuckDB reads: each of the hour's trade frames, its frame time added as `receive_time`. */
export class JsonlWriter {
  lines = 0
  private pending: string[] = []
  constructor(private readonly out: WriteStream) {}

  async add(frameTime: bigint, text: string): Promise<void> {
    if (frameTime < HOUR_START || frameTime >= HOUR_END) return
    this.pending.push(`{"receive_time":${frameTime},${text.slice(1)}`)
    this.lines++
    if (this.pending.length >= 4096) await this.write()
  }

  async close(): Promise<void> {
    await this.write()
    this.out.end()
    await once(this.out, 'finish')
  }

  private async write(): Promise<void> {
    if (this.pending.length === 0) return
    const ok = this.out.write(this.pending.join('\n') + '\n')
    this.pending = []
    if (!ok) await once(this.out, 'drain')
  }
}

/** What a replica's connection makes of the venue's text of a frame (Coinbase: numbers it); called once per copy received. */
type Numbering = (replica: Replica, text: string) => string

/**
 * Journals an hour of `venue`'s trades as src/sim/replicas.ts journals Binance spot, with the frames the venue
 * simulator's market makes (`variant`: the text's form, e.g. a combined stream). The venue sends FRAMES an
 * hour (Poisson arrivals, each for an instrument drawn at random); replica `a` receives a frame 1.5 to 2.5 ms
 * after it was sent, `b` 0.1 to 2 ms after `a` (in 15% of frames 0.1 to 1 ms before it), 1% of frames reach
 * one replica only, and nothing is received at or after the hour's end. Each replica checks its trade ids
 * with the venue adapter's rule and journals a `sequence-break` after a frame that skips, as the recorder does.
 * `numbering`, when given, makes each replica's copy of a frame (see {@link Numbering}). DuckDB gets a line
 * per frame the sealer sees: the copies with the same bytes pair into one frame, at their frame time.
 */
async function journalSimulatedHour(venue: SimulatedVenue, symbols: string[], variant: number, builder: JournalBuilder, jsonl: JsonlWriter, numbering?: Numbering): Promise<void> {
  const dialect = DIALECTS[venue]
  const adapter = getVenue(venue)
  const instruments = dialect.instruments(symbols, SEED)
  const venueRand = seededRandom(hash32(SEED, 1))
  const netRand = seededRandom(hash32(SEED, 2))
  const start = HOUR_START - LEAD_NS
  // Open 50 ms after connecting, subscribed 50 ms later: the handshake's time matters to nothing here.
  const subscribedAt = start + 100_000_000n
  const connection: Record<Replica, string> = { a: 'a-1', b: 'b-1' }
  for (const replica of REPLICAS) {
    const c = connection[replica]
    await builder.append({ kind: 'connecting', replica, connection: c, time: start })
    await builder.append({ kind: 'open', replica, connection: c, time: start + 50_000_000n })
    await builder.append({ kind: 'subscribed', replica, connection: c, time: subscribedAt, instruments: [...symbols] })
  }
  const lastReceive: Record<Replica, bigint> = { a: subscribedAt, b: subscribedAt }
  const sequences: Record<Replica, Map<string, SequenceState>> = { a: new Map(), b: new Map() }
  const meanSpacingUs = 3600e6 / FRAMES
  let us = Number(subscribedAt / 1000n)
  for (;;) {
    const spacingUs = Math.max(1, Math.round(-Math.log(1 - venueRand()) * meanSpacingUs))
    us += spacingUs
    const sent = BigInt(us) * 1000n
    if (sent >= HOUR_END) break
    const ins = instruments[Math.floor(venueRand() * instruments.length)]!
    const text = dialect.text(ins.tradeEvent(us, spacingUs), ins.tradeStream, variant)
    const delayA = 1.5 * MS + netRand() * MS
    const delayB = delayA + (netRand() < 0.85 ? 0.1 * MS + netRand() * 1.9 * MS : -(0.1 * MS + netRand() * 0.9 * MS))
    const missedBy: Replica | null = netRand() < 0.01 ? (netRand() < 0.5 ? 'a' : 'b') : null
    // The frame's copies by their text: one entry unless the replicas' copies differ.
    const copies = new Map<string, { payload: Buffer; sequences: SequenceSpan[]; receipts: Receipt[] }>()
    for (const replica of REPLICAS) {
      if (replica === missedBy) continue
      // A replica's receive times never go back (replicas.ts: one receipt a nanosecond at most).
      let receiveTime = sent + BigInt(Math.round(replica === 'a' ? delayA : delayB))
      if (receiveTime <= lastReceive[replica]) receiveTime = lastReceive[replica] + 1n
      if (receiveTime >= HOUR_END) continue
      lastReceive[replica] = receiveTime
      const copyText = numbering ? numbering(replica, text) : text
      let copy = copies.get(copyText)
      if (copy === undefined) {
        const payload = Buffer.from(copyText, 'utf8')
        const frame = adapter.classify('trades', payload, false)
        if (frame.kind !== 'rows') throw new Error(`${venue}'s adapter reads a simulated trade as ${frame.kind}: ${copyText}`)
        copies.set(copyText, (copy = { payload, sequences: frame.sequences, receipts: [] }))
      }
      const receipt = syncedReceipt(replica, connection[replica], receiveTime, copy.payload)
      await builder.append(receipt)
      copy.receipts.push(receipt)
      for (const span of copy.sequences) {
        const key = `${span.sequence}:${span.instrument}`
        const v = adapter.sequence(sequences[replica].get(key), span)
        sequences[replica].set(key, v.state)
        if (v.verdict === 'gap') await builder.append({ kind: 'sequence-break', replica, connection: connection[replica], time: receiveTime, instrument: span.instrument, afterId: v.afterId, beforeId: v.beforeId })
      }
    }
    for (const [copyText, copy] of copies) await jsonl.add(frameTimeOf(copy.receipts), copyText)
  }
}



/** Prepares venue `name`'s hour in `dir` once (journal/ and trades.jsonl; `ready` holds the JSONL's lines): later runs reuse it. */
export async function prepareHour(name: VenueName, dir: string): Promise<{ journal: string; jsonl: string; jsonlLines: number }> {
  const venue = VENUES[name]
  await mkdir(dir, { recursive: true })
  const journal = join(dir, 'journal')
  const jsonl = join(dir, 'trades.jsonl')
  const ready = join(dir, 'ready')
  if (!existsSync(ready)) {
    await rm(journal, { recursive: true, force: true })
    const t0 = performance.now()
    const builder = new JournalBuilder(journal)
    const writer = new JsonlWriter(createWriteStream(jsonl))
    await venue.prepare(builder, writer)
    await writer.close()
    await builder.commit()
    await writeFile(ready, `${writer.lines}\n`)
    console.log(`prepared in ${((performance.now() - t0) / 1000).toFixed(1)} s (not timed): ${builder.events} journal events, ${writer.lines} trade frames as JSONL`)
  }
  return { journal, jsonl, jsonlLines: Number((await readFile(ready, 'utf8')).trim()) }
}

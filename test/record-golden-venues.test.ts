/**
 * The golden sealed hours of the venues beyond Binance spot (test/golden/record-<venue>: kraken,
 * binance-usdm, okx, bybit, deribit, coinbase; built by scripts/make-golden-venues.ts from what the venue
 * simulator sent): their hashes, `pipe run
 * verify` over them, what each manifest states (Kraken's book hour two checksum failures, each the venue's
 * checksum against the one the replica's books computed; USD-M's funding and liquidations chains raw files
 * only), the Kraken tables read back with DuckDB against the raw payloads, and the script making every byte
 * again.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import * as zlib from 'node:zlib'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import t from 'tap'
import { decompress } from 'zstd-napi'
import { childEnv } from './helpers/io.js'
import type { HourlyManifest } from '../src/formats/record/manifest.js'

const GOLDEN = join(import.meta.dirname, 'golden')
/** Each golden tree and its hours (channels). */
const TREES: Record<string, number> = { 'record-kraken': 2, 'record-binance-usdm': 2, 'record-okx': 4, 'record-bybit': 4, 'record-deribit': 3, 'record-coinbase': 2 }
const hourDir = (tree: string, venue: string, channel: string) => join(GOLDEN, tree, 'root', 'recorder=golden', `venue=${venue}`, `channel=${channel}`, 'date=2026-10-03', 'hour=14')
const manifestOf = async (dir: string) => JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as HourlyManifest
interface Envelope { payload: string; receipts: { replica: string; receive_time: string }[] }
const envelopes = async (dir: string) => decompress(await readFile(join(dir, 'raw.jsonl.zst'))).toString('utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as Envelope)
const rowsOf = (m: HourlyManifest, file: string) => m.files.find((f) => f.name === file)?.rows
/** Microseconds since the epoch of Kraken's `2026-10-03T14:00:00.123456Z`, read with Date for its milliseconds. */
const microseconds = (ts: string) => BigInt(Date.parse(ts.slice(0, 23) + 'Z')) * 1000n + BigInt(ts.slice(23, 26))

t.test('each golden tree is what its hashes.txt lists', async (t) => {
  for (const tree of Object.keys(TREES)) {
    const dir = join(GOLDEN, tree)
    const listed = (await readFile(join(dir, 'hashes.txt'), 'utf8')).trimEnd().split('\n').map((l) => /^([0-9a-f]{64}) {2}(.+)$/.exec(l)!)
    t.ok(listed.every(Boolean), `${tree}: sha256sum format`)
    const files = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1)).filter((f) => f !== 'hashes.txt')
    t.same(files.sort(), listed.map((m) => m[2]).sort(), `${tree}: every file listed, nothing else`)
    for (const [, sha, file] of listed) t.equal(createHash('sha256').update(await readFile(join(dir, file!))).digest('hex'), sha, `${tree}: ${file}`)
  }
})

t.test('pipe run verify passes every golden venue hour', async (t) => {
  for (const [tree, hours] of Object.entries(TREES)) {
    const r = spawnSync(process.execPath, ['dist/bin/pipe.js', 'run', 'verify', '--root', join(GOLDEN, tree, 'root'), '--keys', join(GOLDEN, tree, 'jwks.json'), '--json'], { env: childEnv(), encoding: 'utf8' })
    t.equal(r.status, 0, `${tree}: ${r.stdout}${r.stderr}`)
    t.match(JSON.parse(r.stdout), { ok: true, hours, findings: [] }, `${tree}: its ${hours} hours`)
  }
})

t.test('Kraken book: two checksum failures, each the venue\'s checksum of a line against the book the replica built', async (t) => {
  const dir = hourDir('record-kraken', 'kraken', 'book')
  const m = await manifestOf(dir)
  t.same(m.completeness, { status: 'partial', reasons: ['checksum_failure'] })
  const failures = m.checksum_failures ?? []
  t.same(failures.map((f) => [f.instrument, f.receive_time.slice(11, 16)]), [['BTC/USD', '14:20'], ['BTC/USD', '14:40']], 'at 14:20 (a corrupted checksum) and 14:40 (an update replica b missed)')
  const envs = await envelopes(dir)
  const checksumOf = (e: Envelope) => (JSON.parse(e.payload) as { data?: [{ checksum?: number }] }).data?.[0]?.checksum
  for (const f of failures) {
    t.not(f.expected, f.computed, 'the venue\'s checksum is not the computed one')
    const line = envs.find((e) => e.receipts.some((r) => r.receive_time === f.receive_time))!
    t.equal(String(checksumOf(line)), f.expected, `${f.receive_time}: expected is the checksum the line carries`)
  }
  const corrupted = envs.find((e) => e.receipts.some((r) => r.receive_time === failures[0]!.receive_time))!
  t.same(corrupted.receipts.map((r) => r.replica), ['a'], 'the corrupted checksum went to replica a alone')
  t.same(m.replica_agreement, { both: rowsOf(m, 'raw.jsonl.zst')! - m.replica_agreement.one_only, one_only: m.replica_agreement.one_only, conflict: 0 })
  t.ok(m.replica_agreement.one_only >= 4, 'the lines one replica alone received: the corrupted message, the update b missed, and each resync\'s acknowledgements and snapshot')
  t.equal(rowsOf(m, 'book_snapshots.parquet')! > 0, true, 'the resyncs\' snapshots are book_snapshots rows')
  // What each replica's book was, rebuilt here from the raw lines it received (Kraken's rule, docs/venues/kraken.md:
  // CRC32 of the top ten asks, then the top ten bids, at the pair's precisions): the computed checksum.
  for (const [f, replica] of [[failures[0]!, 'a'], [failures[1]!, 'b']] as const) {
    t.equal(String(replayedChecksum(envs, replica, f.instrument, f.receive_time)), f.computed, `${f.receive_time}: computed is replica ${replica}'s book as its lines build it`)
  }
})

/** CRC32 of the book of `instrument` that `replica`'s lines build, up to and including the line received at `at`. */
function replayedChecksum(envs: Envelope[], replica: string, instrument: string, at: string): number {
  let bids = new Map<number, number>()
  let asks = new Map<number, number>()
  for (const e of envs) {
    if (!e.receipts.some((r) => r.replica === replica)) continue
    const p = JSON.parse(e.payload) as { channel?: string; type?: string; data?: [{ symbol: string; bids: { price: number; qty: number }[]; asks: { price: number; qty: number }[] }] }
    const d = p.data?.[0]
    if (p.channel !== 'book' || d?.symbol !== instrument) continue
    if (p.type === 'snapshot') [bids, asks] = [new Map(), new Map()]
    for (const [side, levels] of [[bids, d.bids], [asks, d.asks]] as const) {
      for (const l of levels) if (l.qty === 0) side.delete(l.price); else side.set(l.price, l.qty)
    }
    if (e.receipts.some((r) => r.replica === replica && r.receive_time === at)) {
      // BTC/USD's precisions (the instrument channel): prices 2 decimals, quantities 8.
      const field = (v: number, places: number) => v.toFixed(places).replace('.', '').replace(/^0+/, '')
      const top = (m: Map<number, number>, desc: boolean) => [...m].sort((x, y) => (desc ? y[0] - x[0] : x[0] - y[0])).slice(0, 10).map(([price, qty]) => field(price, 2) + field(qty, 8)).join('')
      return zlib.crc32(top(asks, false) + top(bids, true)) >>> 0
    }
  }
  throw new Error(`no line of replica ${replica} received at ${at}`)
}

t.test('Kraken tables read by DuckDB hold the raw payloads\' values exactly', async (t) => {
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  t.teardown(() => { conn.closeSync(); db.closeSync() })
  const trades = hourDir('record-kraken', 'kraken', 'trades')
  const tm = await manifestOf(trades)
  t.same(tm.completeness, { status: 'complete', reasons: [] })
  const envs = await envelopes(trades)
  const want = envs.flatMap((e, i) => ((JSON.parse(e.payload) as { data?: { symbol: string; trade_id: number; side: string; timestamp: string }[] }).data ?? [])
    .map((d) => `${i} ${d.symbol} ${d.trade_id} ${d.side} ${microseconds(d.timestamp)}`))
  // Prices and quantities as the venue wrote their numbers: the source text, compared as DuckDB's decimal.
  const texts = envs.flatMap((e) => [...e.payload.matchAll(/"price":([0-9.]+),"qty":([0-9.]+)/g)].map((m) => `${m[1]} ${m[2]}`))
  const got = (await conn.runAndReadAll(`SELECT raw_index::VARCHAR AS ri, instrument, trade_id, side, epoch_us(exchange_time)::VARCHAR AS et,
      rtrim(rtrim(CAST(price AS VARCHAR), '0'), '.') AS p, rtrim(rtrim(CAST(size AS VARCHAR), '0'), '.') AS q FROM read_parquet('${join(trades, 'trades.parquet')}')`)).getRowObjectsJson()
  t.equal(got.length, rowsOf(tm, 'trades.parquet'))
  t.same(got.map((r) => `${r.ri} ${r.instrument} ${r.trade_id} ${r.side} ${r.et}`), want, 'index, instrument, id, taker side and exchange time of every trade')
  t.same(got.map((r) => `${r.p} ${r.q}`), texts, 'prices and sizes as the numbers\' source texts')
  const book = hourDir('record-kraken', 'kraken', 'book')
  const bm = await manifestOf(book)
  const [deltas] = (await conn.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM read_parquet('${join(book, 'book_deltas.parquet')}')`)).getRowObjectsJson()
  t.equal(deltas!.n, rowsOf(bm, 'book_deltas.parquet'), 'book_deltas: DuckDB row count')
})

t.test('Binance USD-M funding and liquidations: chains of raw files only', async (t) => {
  for (const [channel, event] of [['funding', 'markPriceUpdate'], ['liquidations', 'forceOrder']] as const) {
    const dir = hourDir('record-binance-usdm', 'binance-usdm', channel)
    const m = await manifestOf(dir)
    t.same(m.completeness, { status: 'complete', reasons: [] }, `${channel}: complete`)
    t.same(m.files.map((f) => f.name), ['raw.jsonl.zst'], `${channel}: no tables (the format defines none)`)
    const envs = await envelopes(dir)
    t.equal(envs.length, rowsOf(m, 'raw.jsonl.zst'))
    t.ok(envs.every((e) => JSON.parse(e.payload).data?.e === event && e.receipts.length === 2), `${channel}: every line a ${event} both replicas received`)
  }
})

t.test('OKX, Bybit, Deribit, Coinbase: each hour states what the simulator did', async (t) => {
  const m = async (venue: string, channel: string) => manifestOf(hourDir(`record-${venue}`, venue, channel))
  const okxBook = await m('okx', 'book')
  t.same(okxBook.completeness, { status: 'partial', reasons: ['sequence_gap', 'checksum_failure'] }, 'OKX book: a corrupted checksum and a gap in the seqIds')
  t.same(okxBook.checksum_failures!.map((f) => f.instrument), ['ETH-USDT-SWAP', 'BTC-USDT-SWAP', 'BTC-USDT-SWAP'], 'OKX book: replica b\'s corrupted checksum, then the gap\'s on both replicas')
  t.same(okxBook.sequence_gaps.map((g) => g.instrument), ['BTC-USDT-SWAP'])
  for (const channel of ['trades', 'funding', 'liquidations']) t.same((await m('okx', channel)).completeness, { status: 'complete', reasons: [] }, `OKX ${channel}: complete`)
  const bybitBook = await m('bybit', 'book')
  t.same([bybitBook.completeness.reasons, bybitBook.sequence_gaps.map((g) => g.instrument)], [['sequence_gap'], ['ETHUSDT']], 'Bybit book: the deltas the venue dropped, a gap in u')
  const deribitTrades = await m('deribit', 'trades')
  t.same(deribitTrades.sequence_gaps.map((g) => [g.instrument, BigInt(g.before_id) - BigInt(g.after_id)]), [['BTC-PERPETUAL', 3n]], 'Deribit trades: two trade_seqs dropped')
  const coinbaseTrades = await m('coinbase', 'trades')
  t.same(coinbaseTrades.conflicts!.map((c) => c.instrument), ['BTC-USD'], 'Coinbase trades: the trade the venue sent replica b twice')
  t.equal(coinbaseTrades.replica_agreement.conflict, 1)
  t.ok(coinbaseTrades.replica_agreement.one_only > coinbaseTrades.replica_agreement.both, 'after it, b\'s sequence_num runs one ahead of a\'s: no copy pairs')
})

t.test('the simulator and the sealer still make every golden venue byte for byte (scripts/make-golden-venues.ts --check)', async (t) => {
  const r = spawnSync(process.execPath, ['dist/scripts/make-golden-venues.js', '--check'], { env: childEnv(), encoding: 'utf8', timeout: 300_000 })
  t.equal(r.status, 0, r.stderr)
  for (const tree of Object.keys(TREES)) t.match(r.stdout, new RegExp(`${tree}: identical to a fresh build`))
})

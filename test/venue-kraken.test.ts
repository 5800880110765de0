import t, { type Test } from 'tap'
import { utcTimeNs } from '../src/venues/frame-fields.js'
import type { Channel } from '../src/formats/record/types.js'
import type { FrameClass, SequenceSpan } from '../src/venues/adapter.js'
import {
  createKrakenAdapter, kraken, krakenChecksumField, krakenSequence, krakenTradeSequence,
  type KrakenAdapter,
} from '../src/venues/kraken.js'

const enc = new TextEncoder()
const fresh = (): KrakenAdapter => createKrakenAdapter()
const classifyWith = (a: KrakenAdapter, channel: Channel, text: string): FrameClass => a.classify(channel, enc.encode(text), false)
const classify = (channel: Channel, text: string): FrameClass => kraken.classify(channel, enc.encode(text), false)

/** ns since the epoch of `iso` (whole seconds, Z) plus `micros`. */
const at = (iso: string, micros: number): bigint => BigInt(Date.parse(iso)) * 1_000_000n + BigInt(micros) * 1000n

function unrep(t: Test, c: FrameClass, code: string, re: RegExp, msg: string): void {
  t.match(c, { kind: 'unrepresentable', code, reason: re }, msg)
}

// Kraken API docs, WebSocket v2, Market Data: Trades — "Example: Snapshot" and "Example: Update".
const TRADE_SNAPSHOT = '{"channel":"trade","type":"snapshot","data":[' +
  '{"symbol":"MATIC/USD","side":"buy","price":0.5147,"qty":6423.46326,"ord_type":"limit","trade_id":4665846,"timestamp":"2023-09-25T07:48:36.925533Z"},' +
  '{"symbol":"MATIC/USD","side":"buy","price":0.5147,"qty":1136.19677815,"ord_type":"limit","trade_id":4665847,"timestamp":"2023-09-25T07:49:36.925603Z"}]}'
const TRADE_UPDATE = '{"channel":"trade","type":"update","data":[' +
  '{"symbol":"MATIC/USD","side":"sell","price":0.5117,"qty":40.0,"ord_type":"market","trade_id":4665906,"timestamp":"2023-09-25T07:49:37.708706Z"}]}'

// Kraken API docs, WebSocket v2, Market Data: Book (Level 2) — "Snapshot Response" and "Update Response" examples.
const MATIC_BIDS = [['0.5666', '4831.75496356'], ['0.5665', '6658.22734739'], ['0.5664', '18724.91513344'], ['0.5663', '11563.92544914'],
  ['0.5662', '14006.65365711'], ['0.5661', '17454.85679807'], ['0.566', '18097.1547'], ['0.5659', '33644.89175666'], ['0.5658', '148.3464'],
  ['0.5657', '606.70854372']] as const
const MATIC_ASKS = [['0.5668', '4410.79769741'], ['0.5669', '4655.40412487'], ['0.567', '49844.89424998'], ['0.5671', '24306.41678'],
  ['0.5672', '29783.25223475'], ['0.5673', '57234.71239278'], ['0.5674', '45065.04744'], ['0.5675', '5912.76380354'], ['0.5676', '42514.92434778'],
  ['0.5677', '36304.0847022']] as const
const lv = (levels: readonly (readonly [string, string])[]): string => '[' + levels.map(([p, q]) => `{"price":${p},"qty":${q}}`).join(',') + ']'
const BOOK_SNAPSHOT = `{"channel":"book","type":"snapshot","data":[{"symbol":"MATIC/USD","bids":${lv(MATIC_BIDS)},"asks":${lv(MATIC_ASKS)},"checksum":2439117997,"timestamp":"2023-10-06T17:35:55.440295Z"}]}`
const BOOK_UPDATE = '{"channel":"book","type":"update","data":[{"symbol":"MATIC/USD","bids":[{"price":0.5657,"qty":1098.3947558}],"asks":[],"checksum":2114181697,"timestamp":"2023-10-06T17:35:55.440295Z"}]}'

// Kraken API docs, WebSocket v2, Market Data: Instruments — "Example: Snapshot" (trimmed to its pairs' documented fields) and "Example: Update".
const INSTRUMENT_SNAPSHOT = '{"channel":"instrument","type":"snapshot","data":{"assets":[{"id":"USD","status":"enabled","precision":4,"precision_display":2,"borrowable":true,"collateral_value":1.0,"margin_rate":0.015}],' +
  '"pairs":[{"symbol":"BTC/USD","base":"BTC","quote":"USD","status":"online","qty_precision":8,"qty_increment":1e-08,"price_precision":1,"cost_precision":5,"marginable":true,"has_index":true,"cost_min":0.5,"margin_initial":0.2,"position_limit_long":250,"position_limit_short":200,"tick_size":0.1,"price_increment":0.1,"qty_min":0.0001},' +
  '{"symbol":"MATIC/GBP","base":"MATIC","quote":"GBP","status":"online","qty_precision":8,"qty_increment":1e-08,"price_precision":4,"cost_precision":6,"marginable":false,"has_index":true,"cost_min":0.43,"tick_size":0.0001,"price_increment":0.0001,"qty_min":4.0}]}}'
const INSTRUMENT_UPDATE = '{"channel":"instrument","type":"update","data":{"assets":[{"id":"BTC","status":"enabled","precision":10,"precision_display":5,"borrowable":true,"collateral_value":1.0,"margin_rate":0.01}],"pairs":[]}}'
/**
 * The docs give no instrument message for MATIC/USD. Its book examples' checksums (2439117997, 2114181697) come
 * out with price precision 4 and quantity precision 8 (MATIC/GBP's in the instrument example), and not from the
 * numbers as written: that is what shows the values must be padded to the pair's precision.
 */
const instrumentFor = (symbol: string, price: number, qty: number): string =>
  `{"channel":"instrument","type":"update","data":{"assets":[],"pairs":[{"symbol":${JSON.stringify(symbol)},"base":"X","quote":"Y","status":"online","qty_precision":${qty},"price_precision":${price}}]}}`

t.test('trade snapshot and update -> trades rows with the taker side and the numbers as written', async (t) => {
  const t1 = at('2023-09-25T07:48:36Z', 925533)
  const t2 = at('2023-09-25T07:49:36Z', 925603)
  t.same(classify('trades', TRADE_SNAPSHOT), {
    kind: 'rows',
    table: 'trades',
    rows: [
      { instrument: 'MATIC/USD', trade_id: '4665846', side: 'buy', price: '0.5147', size: '6423.46326', exchange_time: t1 },
      { instrument: 'MATIC/USD', trade_id: '4665847', side: 'buy', price: '0.5147', size: '1136.19677815', exchange_time: t2 },
    ],
    exchangeTime: t1,
    sequences: [
      { sequence: 'trades', instrument: 'MATIC/USD', first: 4665846n, last: 4665846n, snapshot: false },
      { sequence: 'trades', instrument: 'MATIC/USD', first: 4665847n, last: 4665847n, snapshot: false },
    ],
  }, 'each row has its own trade time; the frame the earliest')
  const u = at('2023-09-25T07:49:37Z', 708706)
  t.same(classify('trades', TRADE_UPDATE), {
    kind: 'rows',
    table: 'trades',
    rows: [{ instrument: 'MATIC/USD', trade_id: '4665906', side: 'sell', price: '0.5117', size: '40.0', exchange_time: u }],
    exchangeTime: u,
    sequences: [{ sequence: 'trades', instrument: 'MATIC/USD', first: 4665906n, last: 4665906n, snapshot: false }],
  }, '40.0 stays 40.0')
  const later = classify('trades', TRADE_SNAPSHOT.replace('07:48:36.925533Z', '07:50:00.000000Z'))
  t.equal(later.kind === 'rows' && later.exchangeTime, t2, 'the earliest wherever it stands')
  const exp = classify('trades', TRADE_UPDATE.replace('"qty":40.0', '"qty":1e-08').replace('"price":0.5117', '"price":5.117E3'))
  t.match(exp, { kind: 'rows', rows: [{ price: '5117', size: '0.00000001' }] }, 'exponents become plain decimals, every digit kept')
  const big = classify('trades', TRADE_UPDATE.replace('"trade_id":4665906', '"trade_id":9007199254740993'))
  t.equal(big.kind === 'rows' && big.rows[0]!.trade_id, '9007199254740993', 'ids beyond 2^53 exactly')
  t.equal(classify('trades', TRADE_UPDATE.replace('"ord_type":"market"', '"ord_type":"iceberg"')).kind, 'rows', 'ord_type is not recorded and its value not checked')
  t.equal(classify('trades', TRADE_UPDATE.replace('{"symbol"', '{"extra":[1],"symbol"')).kind, 'rows', 'unknown fields are ignored')
  t.same(classify('trades', '{"channel":"trade","type":"update","data":[]}'), { kind: 'rows', table: 'trades', rows: [], exchangeTime: null, sequences: [] })
  const mixed = classify('trades', TRADE_UPDATE.replace(']}', ',{"symbol":"BTC/USD","side":"buy","price":64000.5,"qty":0.5,"ord_type":"limit","trade_id":12,"timestamp":"2023-09-25T07:49:37.708705Z"}]}'))
  t.match(mixed, { kind: 'rows', sequences: [{ instrument: 'MATIC/USD' }, { instrument: 'BTC/USD', first: 12n }] }, 'a span per trade, per symbol')
})

t.test('book snapshot and update -> book_snapshots and book_deltas', async (t) => {
  const ts = at('2023-10-06T17:35:55Z', 440295)
  const snap = classify('book', BOOK_SNAPSHOT)
  t.equal(snap.kind, 'rows')
  if (snap.kind !== 'rows') return
  t.equal(snap.table, 'book_snapshots')
  t.equal(snap.exchangeTime, ts)
  t.same(snap.sequences, [], 'the v2 book has no sequence numbers')
  t.equal(snap.rows.length, 20)
  t.same(snap.rows[0], { instrument: 'MATIC/USD', trade_id: null, side: 'bid', price: '0.5666', size: '4831.75496356', exchange_time: ts })
  t.same(snap.rows[6], { instrument: 'MATIC/USD', trade_id: null, side: 'bid', price: '0.566', size: '18097.1547', exchange_time: ts }, 'as written, no padding')
  t.same(snap.rows[10], { instrument: 'MATIC/USD', trade_id: null, side: 'ask', price: '0.5668', size: '4410.79769741', exchange_time: ts }, 'bids, then asks')
  const noTime = classify('book', BOOK_SNAPSHOT.replace(',"timestamp":"2023-10-06T17:35:55.440295Z"', ''))
  t.match(noTime, { kind: 'rows', table: 'book_snapshots', exchangeTime: null }, 'a snapshot without a timestamp')
  t.equal(noTime.kind === 'rows' && noTime.rows[0]!.exchange_time, null)
  t.same(classify('book', BOOK_UPDATE), {
    kind: 'rows',
    table: 'book_deltas',
    rows: [{ instrument: 'MATIC/USD', trade_id: null, side: 'bid', price: '0.5657', size: '1098.3947558', exchange_time: ts }],
    exchangeTime: ts,
    sequences: [],
  })
  const zero = classify('book', BOOK_UPDATE.replace('"asks":[]', '"asks":[{"price":0.5668,"qty":0},{"price":0.5669,"qty":0.0}]'))
  t.match(zero, { kind: 'rows', rows: [{ side: 'bid' }, { side: 'ask', price: '0.5668', size: '0' }, { side: 'ask', price: '0.5669', size: '0.0' }] }, 'a zero quantity is kept as sent')
  t.match(classify('book', BOOK_UPDATE.replace('"bids":[{"price":0.5657,"qty":1098.3947558}]', '"bids":[]')), { kind: 'rows', table: 'book_deltas', rows: [] }, 'an update of no level')
})

t.test('control messages', async (t) => {
  // Kraken API docs, WebSocket v2, Admin: Heartbeat, Status, Ping (examples).
  t.same(classify('book', '{"channel":"heartbeat"}'), { kind: 'control', note: 'heartbeat' })
  const status = '{"channel":"status","data":[{"api_version":"v2","connection_id":13834774380200032777,"system":"online","version":"2.0.0"}],"type":"update"}'
  t.same(classify('trades', status), { kind: 'control', note: 'status: system online' })
  t.same(classify('trades', status.replace('online', 'maintenance')), { kind: 'control', note: 'status: system maintenance' }, 'no closing: the docs do not say the connection ends')
  t.same(classify('book', '{"method":"pong","req_id":101,"time_in":"2023-09-24T14:10:23.799685Z","time_out":"2023-09-24T14:10:23.799703Z"}'), { kind: 'control', note: 'pong' })
  // Market Data: Book (Level 2) and Trades — "Example: Subscribe Ack", "Example: Unsubscribe Ack".
  t.same(classify('book', '{"method":"subscribe","result":{"channel":"book","depth":10,"snapshot":true,"symbol":"ALGO/USD"},"success":true,"time_in":"2023-10-06T17:35:55.219022Z","time_out":"2023-10-06T17:35:55.219067Z"}'),
    { kind: 'control', note: 'subscribe acknowledged: book ALGO/USD' })
  t.same(classify('trades', '{"method":"unsubscribe","result":{"channel":"trade","symbol":"MATIC/USD"},"success":true,"time_in":"2023-09-25T09:21:10.428340Z","time_out":"2023-09-25T09:21:10.428375Z"}'),
    { kind: 'control', note: 'unsubscribe acknowledged: trade MATIC/USD' })
  const failed = classify('book', '{"error":"Currency pair not supported XBT/USD","method":"subscribe","req_id":1,"success":false,"time_in":"2023-10-06T17:35:55.219022Z","time_out":"2023-10-06T17:35:55.219067Z"}')
  t.match(failed, { kind: 'control', note: /^subscribe failed: .*Currency pair not supported/ })
  t.match(classify('book', '{"error":"Unsupported method","success":false,"time_in":"2023-10-06T17:35:55.219022Z","time_out":"2023-10-06T17:35:55.219067Z"}'), { kind: 'control', note: /^request failed/ })
  // Market Data: Instruments — "Example: Subscribe Ack", snapshot, update.
  t.same(classify('book', '{"method":"subscribe","req_id":79,"result":{"channel":"instrument","snapshot":true,"warnings":["tick_size is deprecated, use price_increment"]},"success":true,"time_in":"2023-09-26T16:49:20.962586Z","time_out":"2023-09-26T16:49:20.962630Z"}'),
    { kind: 'control', note: 'subscribe acknowledged: instrument' })
  const a = fresh()
  t.same(classifyWith(a, 'book', INSTRUMENT_SNAPSHOT), { kind: 'control', note: 'instrument snapshot: precisions of 2 pairs' })
  t.same(a.precisions.get('BTC/USD'), { price: 1, qty: 8 })
  t.same(a.precisions.get('MATIC/GBP'), { price: 4, qty: 8 })
  t.same(classifyWith(a, 'trades', INSTRUMENT_UPDATE), { kind: 'control', note: 'instrument update: precisions of 0 pairs' })
  t.equal(a.precisions.size, 2)
  classifyWith(a, 'book', instrumentFor('BTC/USD', 2, 8))
  t.same(a.precisions.get('BTC/USD'), { price: 2, qty: 8 }, 'an update replaces a pair\'s precisions')
  classifyWith(a, 'book', instrumentFor('ODD/USD', 1, 8).replace('"price_precision":1', '"price_precision":1.5'))
  t.equal(a.precisions.get('ODD/USD'), undefined, 'a pair without integer precisions teaches nothing')
})

t.test('malformed and unrepresentable frames yield no rows and a reason', async (t) => {
  unrep(t, kraken.classify('trades', enc.encode(TRADE_UPDATE), true), 'not-json', /binary frame/, 'binary')
  unrep(t, kraken.classify('trades', Uint8Array.of(0x7b, 0xff, 0x7d), false), 'not-json', /not UTF-8/, 'not UTF-8')
  unrep(t, classify('trades', TRADE_UPDATE.slice(0, -1)), 'not-json', /not JSON/, 'truncated')
  unrep(t, classify('trades', TRADE_UPDATE.replace('"side":"sell"', '"side":"sell","side":"buy"')), 'not-json', /duplicate key "side"/, 'duplicate key')
  unrep(t, classify('trades', '[1]'), 'structure', /not a JSON object/, 'array')
  unrep(t, classify('trades', '{"foo":1}'), 'structure', /neither a channel message nor a response/, 'no channel, no method')
  unrep(t, classify('trades', '{"channel":"ticker","type":"update","data":[]}'), 'structure', /Kraken channel "ticker"/, 'another channel')
  unrep(t, classify('trades', '{"channel":7}'), 'structure', /channel is not a string/, 'channel a number')
  unrep(t, classify('book', TRADE_UPDATE), 'structure', /trade message on channel book/, 'trade on the book connection')
  unrep(t, classify('trades', BOOK_UPDATE), 'structure', /book message on channel trades/, 'book on the trades connection')
  unrep(t, classify('trades', TRADE_UPDATE.replace('"type":"update"', '"type":"delta"')), 'structure', /type "delta"/, 'unknown type')
  unrep(t, classify('trades', TRADE_UPDATE.replace('"price":0.5117', '"price":"0.5117"')), 'structure', /price is not a number/, 'price as a string')
  unrep(t, classify('trades', TRADE_UPDATE.replace('"price":0.5117', '"price":0.5117000000000000000001')), 'decimal', /price .* DECIMAL\(38, 18\)/, '22 fractional digits')
  unrep(t, classify('trades', TRADE_UPDATE.replace('"qty":40.0', '"qty":1e20')), 'decimal', /qty 1e20/, 'qty at 10^20')
  unrep(t, classify('trades', TRADE_UPDATE.replace('"qty":40.0', '"qty":1e-19')), 'decimal', /qty/, 'qty below 10^-18')
  unrep(t, classify('trades', TRADE_UPDATE.replace('"side":"sell"', '"side":"s"')), 'structure', /side "s" is not buy or sell/, 'side')
  unrep(t, classify('trades', TRADE_UPDATE.replace('"ord_type":"market",', '')), 'structure', /ord_type is missing/, 'no ord_type')
  unrep(t, classify('trades', TRADE_UPDATE.replace('"trade_id":4665906', '"trade_id":-1')), 'structure', /trade_id is not a non-negative integer/, 'negative id')
  unrep(t, classify('trades', TRADE_UPDATE.replace('"trade_id":4665906', '"trade_id":4665906.0')), 'structure', /trade_id is not a non-negative integer/, 'id with a fraction')
  unrep(t, classify('trades', TRADE_UPDATE.replace('"trade_id":4665906', '"trade_id":"4665906"')), 'structure', /trade_id is not a number/, 'id as a string')
  unrep(t, classify('trades', TRADE_UPDATE.replace('"symbol":"MATIC/USD"', '"symbol":""')), 'structure', /symbol is empty/, 'empty symbol')
  unrep(t, classify('trades', TRADE_UPDATE.replace('"data":[', '"data":[1,')), 'structure', /data\[0\] is not an object/, 'a trade that is no object')
  unrep(t, classify('trades', TRADE_UPDATE.replace('2023-09-25T07:49:37.708706Z', '2023-09-25 07:49:37.708706Z')), 'structure', /not an RFC 3339 UTC time/, 'space for T')
  unrep(t, classify('trades', TRADE_UPDATE.replace('2023-09-25T07:49:37.708706Z', '2023-09-25T07:49:37.708706+00:00')), 'structure', /not an RFC 3339 UTC time/, 'offset')
  unrep(t, classify('trades', TRADE_UPDATE.replace('2023-09-25T07:49:37.708706Z', '2023-02-30T07:49:37.708706Z')), 'structure', /not a valid time/, '30 February')
  unrep(t, classify('trades', TRADE_UPDATE.replace('2023-09-25T07:49:37.708706Z', '2300-01-01T00:00:00.000000Z')), 'time', /does not fit int64 nanoseconds/, 'year 2300')
  unrep(t, classify('trades', TRADE_UPDATE.replace('2023-09-25T07:49:37.708706Z', '2023-09-25T07:49:37.7087060001Z')), 'time', /finer than a nanosecond/, 'ten fraction digits')
  unrep(t, classify('book', BOOK_UPDATE.replace('"data":[{', '"data":[{"symbol":"A/B","bids":[],"asks":[],"checksum":1},{')), 'structure', /data has 2 elements/, 'two books')
  unrep(t, classify('book', BOOK_UPDATE.replace('"checksum":2114181697', '"checksum":4294967296')), 'structure', /unsigned 32-bit/, 'checksum of 33 bits')
  unrep(t, classify('book', BOOK_UPDATE.replace('"checksum":2114181697,', '')), 'structure', /checksum is missing/, 'no checksum')
  unrep(t, classify('book', BOOK_UPDATE.replace(',"timestamp":"2023-10-06T17:35:55.440295Z"', '')), 'structure', /timestamp is missing/, 'an update without timestamp')
  unrep(t, classify('book', BOOK_UPDATE.replace('"asks":[],', '')), 'structure', /asks is missing/, 'no asks')
  unrep(t, classify('book', BOOK_UPDATE.replace('{"price":0.5657,"qty":1098.3947558}', '[0.5657,1098.3947558]')), 'structure', /bids\[0\] is not a \{price, qty\} object/, 'a level as an array')
  unrep(t, classify('book', BOOK_UPDATE.replace('"qty":1098.3947558', '"qty":null')), 'structure', /bids\[0\] qty is not a number/, 'qty null')
  unrep(t, classify('trades', '{"channel":"status","type":"update","data":[]}'), 'structure', /status/, 'status without its object')
  unrep(t, classify('trades', '{"channel":"instrument","type":"snapshot","data":[]}'), 'structure', /instrument: data is not an object/, 'instrument data an array')
  unrep(t, classify('trades', '{"method":"subscribe","result":{}}'), 'structure', /without a boolean success/, 'a response without success')
  t.throws(() => classify('funding', TRADE_UPDATE), RangeError, 'no funding on spot')
  t.throws(() => kraken.connect('liquidations', ['BTC/USD']), RangeError)
})

t.test('an unrepresentable trade still states its place in the trade sequence', async (t) => {
  const c = classify('trades', TRADE_SNAPSHOT.replace('"price":0.5147,"qty":1136.19677815', '"price":0.51470000000000000001,"qty":1136.19677815'))
  t.equal(c.kind, 'unrepresentable')
  if (c.kind !== 'unrepresentable') return
  t.equal(c.code, 'decimal')
  t.same(c.sequences?.map((s) => s.first), [4665846n, 4665847n], 'every trade of the frame whose id parsed')
  const noId = classify('trades', TRADE_SNAPSHOT.replace('"trade_id":4665846,', ''))
  t.match(noId, { kind: 'unrepresentable', code: 'structure', reason: /trade 0: trade_id is missing/ })
  t.same(noId.kind === 'unrepresentable' && noId.sequences?.map((s) => s.first), [4665847n], 'the other trade still counts')
  const none = classify('trades', TRADE_UPDATE.replace('"trade_id":4665906,', ''))
  t.equal(none.kind === 'unrepresentable' ? none.sequences : 'rows', undefined, 'no span when no id parsed')
})

const span = (id: bigint): SequenceSpan => ({ sequence: 'trades', instrument: 'MATIC/USD', first: id, last: id, snapshot: false })

t.test('trade sequence: trade_id == prev + 1 per symbol', async (t) => {
  const s0 = krakenTradeSequence(undefined, span(4665846n))
  t.same(s0, { verdict: 'start', state: { last: 4665846n, streamFirst: 4665846n } })
  const s1 = krakenSequence(s0.state, span(4665847n))
  t.same(s1, { verdict: 'next', state: { last: 4665847n, streamFirst: 4665846n } })
  t.same(krakenSequence(s1.state, span(4665906n)), { verdict: 'gap', afterId: '4665847', beforeId: '4665906', state: { last: 4665906n, streamFirst: 4665846n } })
  const stale = krakenSequence(s1.state, span(4665847n))
  t.equal(stale.verdict, 'stale', 'a repeated id (a snapshot after a reconnect repeats trades)')
  t.equal(stale.state, s1.state)
  t.equal(krakenSequence(s1.state, span(100n)).verdict, 'stale')
  t.equal(kraken.sequence, krakenSequence)
  t.throws(() => krakenSequence(undefined, { sequence: 'book', instrument: 'MATIC/USD', first: 1n, last: 1n, snapshot: true }), RangeError, 'no book spans exist')
  // The spans of a frame, judged in order.
  const c = classify('trades', TRADE_SNAPSHOT)
  let state = undefined as ReturnType<typeof krakenSequence>['state'] | undefined
  const verdicts = (c.kind === 'rows' ? c.sequences : []).map((s) => { const v = krakenSequence(state, s); state = v.state; return v.verdict })
  t.same(verdicts, ['start', 'next'])
})

t.test('times', async (t) => {
  t.equal(utcTimeNs('2023-09-25T07:49:37.708706Z'), at('2023-09-25T07:49:37Z', 708706))
  t.equal(utcTimeNs('2023-09-25T07:49:37Z'), at('2023-09-25T07:49:37Z', 0), 'no fraction')
  t.equal(utcTimeNs('2023-09-25T07:49:37.123456789Z'), at('2023-09-25T07:49:37Z', 123456) + 789n, 'nine digits')
  t.equal(utcTimeNs('2023-09-25T07:49:37.1234567890Z'), at('2023-09-25T07:49:37Z', 123456) + 789n, 'a tenth digit that is zero')
  t.match(utcTimeNs('2023-09-25t07:49:37Z'), { code: 'structure' })
  t.match(utcTimeNs('1600-01-01T00:00:00Z'), { code: 'time' })
})

t.test('times of one second read after another: the second remembered, each fraction its own', async (t) => {
  t.equal(utcTimeNs('2023-09-25T07:49:37.708706Z'), at('2023-09-25T07:49:37Z', 708706))
  t.equal(utcTimeNs('2023-09-25T07:49:37.000001Z'), at('2023-09-25T07:49:37Z', 1), 'the same second, another fraction')
  t.equal(utcTimeNs('2023-09-25T07:49:37.5Z'), at('2023-09-25T07:49:37Z', 500000), 'a shorter fraction')
  t.equal(utcTimeNs('2023-09-25T07:49:37Z'), at('2023-09-25T07:49:37Z', 0), 'the same second without a fraction')
  t.match(utcTimeNs('2023-09-25T07:49:37.1234567891Z'), { code: 'time' }, 'a tenth digit that is not zero, after the second was remembered')
  t.match(utcTimeNs('2023-09-25T07:49:37.12x4Z'), { code: 'structure' }, 'not a fraction')
  t.equal(utcTimeNs('2023-09-25T07:49:38.000002Z'), at('2023-09-25T07:49:38Z', 2), 'the next second')
})

t.test('a plain one-trade message read without its JSON tree gives what the general reading gives', async (t) => {
  const trade = (o: { price?: string; qty?: string; side?: string; ord?: string; ts?: string; id?: string; symbol?: string } = {}) =>
    `{"channel":"trade","type":"update","data":[{"symbol":"${o.symbol ?? 'BTC/USD'}","side":"${o.side ?? 'buy'}","price":${o.price ?? '61234.5'},"qty":${o.qty ?? '0.00123'},"ord_type":"${o.ord ?? 'market'}","trade_id":${o.id ?? '77'},"timestamp":"${o.ts ?? '2026-10-03T14:00:00.123456Z'}"}]}`
  // A space after the first brace is still the same JSON, and never the plain form: the general path reads it.
  const general = (text: string) => classify('trades', '{ ' + text.slice(1))
  const cases = [
    trade(), trade({ side: 'sell', price: '0.5147', qty: '6423.46326' }), trade({ price: '12', qty: '1' }), trade({ price: '0.10', qty: '2.500' }),
    trade({ price: '1e-08' }), trade({ price: '123456789012345678901' }), trade({ qty: '0.0000000000000000001' }), trade({ ts: '2026-10-03T14:00:00Z' }),
    trade({ ts: '1600-01-01T00:00:00Z' }), trade({ ts: 'yesterday' }), trade({ ord: 'Limit' }), trade({ id: '18446744073709551616' }), trade({ symbol: 'btc/usd' }),
    trade({ side: 'BUY' }), trade({ price: '-1' }),
  ]
  for (const text of cases) t.same(classify('trades', text), general(text), text.slice(40, 130))
  t.match(classify('trades', trade({ price: '01.5' })), { kind: 'unrepresentable', code: 'not-json' }, 'a leading zero is not JSON, on either path')
  t.match(classify('trades', trade()), { kind: 'rows', rows: [{ instrument: 'BTC/USD', trade_id: '77', side: 'buy', price: '61234.5', size: '0.00123' }] })
})

t.test('connect: subscribe requests, acknowledgements, keep-alive, resync', async (t) => {
  const trades = kraken.connect('trades', ['MATIC/USD', 'BTC/USD'])
  t.equal(trades.url, 'wss://ws.kraken.com/v2')
  t.same(trades.send, ['{"method":"subscribe","params":{"channel":"trade","symbol":["MATIC/USD","BTC/USD"],"snapshot":true},"req_id":1}'])
  t.same(trades.keepAlive, { everyMs: 30_000, text: '{"method":"ping"}' })
  t.equal(trades.resync, undefined, 'trades have no checksum to resync')
  t.equal(trades.respond, undefined)
  const ta = (text: string) => trades.answers(enc.encode(text))
  // Market Data: Trades — "Example: Subscribe Ack", with the req_id the request carried.
  const tradeAck = '{"method":"subscribe","result":{"channel":"trade","snapshot":true,"symbol":"MATIC/USD"},"success":true,"time_in":"2023-09-25T09:21:10.428340Z","time_out":"2023-09-25T09:21:10.428375Z","req_id":1}'
  t.equal(ta(tradeAck), 'subscribed', 'the first symbol acknowledged')
  t.equal(ta(tradeAck.replace(',"req_id":1', '')), 'subscribed', 'without req_id, by its channel')
  t.equal(ta(tradeAck.replace('"req_id":1', '"req_id":2')), null, 'another request')
  t.equal(ta(tradeAck.replace('"channel":"trade"', '"channel":"book"')), null, 'another channel')
  t.equal(ta('{"error":"Currency pair not supported XBT/USD","method":"subscribe","req_id":1,"success":false,"time_in":"2023-09-25T09:21:10.428340Z","time_out":"2023-09-25T09:21:10.428375Z"}'), 'refused')
  t.equal(ta('{"error":"Currency pair not supported","method":"subscribe","result":{"channel":"trade","symbol":"XBT/USD"},"success":false}'), 'refused', 'a failure named by its channel')
  t.equal(ta('{"error":"Unsupported method","success":false}'), null, 'a failure of nothing we can name')
  t.equal(ta('{"channel":"heartbeat"}'), null)
  t.equal(ta(TRADE_UPDATE), null)
  t.equal(ta(tradeAck.slice(0, -1)), null, 'not JSON')
  t.equal(trades.answers(Uint8Array.of(0xff)), null, 'not UTF-8')

  const a = createKrakenAdapter({ wsBase: 'ws://127.0.0.1:9/v2', depth: 25 })
  const book = a.connect('book', ['ALGO/USD', 'MATIC/USD'])
  t.equal(book.url, 'ws://127.0.0.1:9/v2')
  t.same(book.send, [
    '{"method":"subscribe","params":{"channel":"book","symbol":["ALGO/USD","MATIC/USD"],"depth":25,"snapshot":true},"req_id":1}',
    '{"method":"subscribe","params":{"channel":"instrument","snapshot":true},"req_id":2}',
  ], 'the book first, then the instrument channel for the precisions')
  const ba = (text: string) => book.answers(enc.encode(text))
  // Market Data: Book (Level 2) — "Example: Subscribe Ack".
  t.equal(ba('{"method":"subscribe","result":{"channel":"book","depth":10,"snapshot":true,"symbol":"ALGO/USD"},"success":true,"time_in":"2023-10-06T17:35:55.219022Z","time_out":"2023-10-06T17:35:55.219067Z"}'), 'subscribed')
  t.equal(ba('{"method":"subscribe","req_id":2,"result":{"channel":"instrument","snapshot":true},"success":true,"time_in":"2023-09-26T16:49:20.962586Z","time_out":"2023-09-26T16:49:20.962630Z"}'), null, 'the instrument acknowledgement decides nothing')
  t.equal(ba('{"method":"subscribe","req_id":2,"error":"nope","success":false}'), null, 'nor its failure')
  t.equal(ba('{"method":"unsubscribe","result":{"channel":"book","symbol":"ALGO/USD"},"success":true,"req_id":1}'), null, 'an unsubscribe')
  t.equal(ba(BOOK_SNAPSHOT), null, 'a long frame is not parsed')
  t.same(book.resync?.('MATIC/USD'), [
    '{"method":"unsubscribe","params":{"channel":"book","symbol":["MATIC/USD"],"depth":25},"req_id":3}',
    '{"method":"subscribe","params":{"channel":"book","symbol":["MATIC/USD"],"depth":25,"snapshot":true},"req_id":4}',
  ])
  t.equal(kraken.connect('book', ['BTC/USD']).send[0], '{"method":"subscribe","params":{"channel":"book","symbol":["BTC/USD"],"depth":1000,"snapshot":true},"req_id":1}', 'default depth 1000')
  t.throws(() => createKrakenAdapter({ depth: 50 }), RangeError, 'only the documented depths')
  t.throws(() => kraken.connect('trades', []), RangeError)
  t.equal(kraken.snapshotRequest('book', 'BTC/USD'), null, 'the snapshot comes over the websocket')
  t.equal(kraken.snapshotRequest('trades', 'BTC/USD'), null)
  t.throws(() => kraken.wrapSnapshot('book', 'BTC/USD', '{}'), RangeError)
  t.equal(kraken.name, 'kraken')
  t.same(kraken.channels, ['trades', 'book'])
  t.ok(kraken.books, 'kraken sends book checksums')
})

// ---------------------------------------------------------------------------------------------------
// Checksums

/** Applies `text` to the adapter's books as a recorder would: classify, then apply the rows. */
function feed(a: KrakenAdapter, books: ReturnType<KrakenAdapter['books']['create']>, text: string) {
  const c = a.classify('book', enc.encode(text), false)
  if (c.kind !== 'rows') throw new Error(`not rows: ${JSON.stringify(c)}`)
  return a.books.apply(books, c, enc.encode(text))
}

t.test('the checksum guide\'s worked example', async (t) => {
  // Kraken API docs, Guides: Book checksum (WebSocket v2) — the BTC/USD example snapshot, checksum 3310070434;
  // written here as the wire writes it (JSON numbers), the guide showing them decoded as strings.
  const bids = [['45283.5', '0.10000000'], ['45283.4', '1.54582015'], ['45282.1', '0.10000000'], ['45281.0', '0.10000000'], ['45280.3', '1.54592586'],
    ['45279.0', '0.07990000'], ['45277.6', '0.03310103'], ['45277.5', '0.30000000'], ['45277.3', '1.54602737'], ['45276.6', '0.15445238']] as const
  const asks = [['45285.2', '0.00100000'], ['45286.4', '1.54571953'], ['45286.6', '1.54571109'], ['45289.6', '1.54560911'], ['45290.2', '0.15890660'],
    ['45291.8', '1.54553491'], ['45294.7', '0.04454749'], ['45296.1', '0.35380000'], ['45297.5', '0.09945542'], ['45299.5', '0.18772827']] as const
  const snapshot = `{"channel":"book","type":"snapshot","data":[{"symbol":"BTC/USD","bids":${lv(bids)},"asks":${lv(asks)},"checksum":3310070434}]}`
  const a = createKrakenAdapter({ depth: 10 })
  const books = a.books.create()
  t.same(feed(a, books, snapshot), [], 'no check before the precisions are known')
  classifyWith(a, 'book', INSTRUMENT_SNAPSHOT) // BTC/USD: price_precision 1, qty_precision 8
  t.same(feed(a, books, snapshot), [{ instrument: 'BTC/USD', expected: '3310070434', computed: '3310070434' }])
  // The same book with the trailing zeros a JSON number may leave out: the precisions restore them.
  const trimmed = snapshot.replace(/(\.[0-9]*?)0+([,}])/g, '$1$2').replace(/\.([,}])/g, '$1')
  t.not(trimmed, snapshot)
  t.match(trimmed, /"price":45281,/)
  t.same(feed(a, books, trimmed), [{ instrument: 'BTC/USD', expected: '3310070434', computed: '3310070434' }])
  t.equal(krakenChecksumField('45285.2', 1), '452852', 'the guide\'s price')
  t.equal(krakenChecksumField('0.00100000', 8), '100000', 'the guide\'s quantity')
  t.equal(krakenChecksumField('0.001', 8), '100000')
  t.equal(krakenChecksumField('45281', 1), '452810')
  t.equal(krakenChecksumField('0.123', 2), null, 'that would need rounding')
  t.equal(krakenChecksumField('-1', 2), null)
})

t.test('the book page\'s own snapshot and update, with their checksums', async (t) => {
  const a = createKrakenAdapter({ depth: 10 })
  classifyWith(a, 'book', instrumentFor('MATIC/USD', 4, 8))
  const books = a.books.create()
  t.same(feed(a, books, BOOK_SNAPSHOT), [{ instrument: 'MATIC/USD', expected: '2439117997', computed: '2439117997' }])
  t.same(feed(a, books, BOOK_UPDATE), [{ instrument: 'MATIC/USD', expected: '2114181697', computed: '2114181697' }])
  // Without padding to the precisions the same snapshot does not check out.
  const b = createKrakenAdapter({ depth: 10 })
  classifyWith(b, 'book', instrumentFor('MATIC/USD', 4, 9))
  const other = b.books.create()
  t.not(feed(b, other, BOOK_SNAPSHOT)[0]?.computed, '2439117997', 'another quantity precision, another checksum')
})

// A second route to the checksum: a plain model of the book (numbers as keys, sort and slice after each
// message), values written with toFixed, and a bit-by-bit CRC-32.
function crc32Bitwise(text: string): number {
  let c = 0xffffffff
  for (const byte of Buffer.from(text, 'ascii')) {
    c ^= byte
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1
  }
  return (c ^ 0xffffffff) >>> 0
}
class Model {
  bids = new Map<number, number>()
  asks = new Map<number, number>()
  constructor(readonly depth: number, readonly pp: number, readonly qp: number) {}
  message(bids: [number, number][], asks: [number, number][]): void {
    for (const [side, entries] of [[this.bids, bids], [this.asks, asks]] as const) {
      for (const [p, q] of entries) if (q === 0) side.delete(p); else side.set(p, q)
    }
    this.bids = new Map([...this.bids].sort((x, y) => y[0] - x[0]).slice(0, this.depth))
    this.asks = new Map([...this.asks].sort((x, y) => x[0] - y[0]).slice(0, this.depth))
  }
  checksum(): number {
    const top = (m: Map<number, number>, dir: number) => [...m].sort((x, y) => dir * (x[0] - y[0])).slice(0, 10)
    let s = ''
    for (const [p, q] of [...top(this.asks, 1), ...top(this.bids, -1)]) s += p.toFixed(this.pp).replace('.', '').replace(/^0+/, '') + q.toFixed(this.qp).replace('.', '').replace(/^0+/, '')
    return crc32Bitwise(s)
  }
}
const levelsJson = (entries: [number, number][], written?: (n: number) => string): string =>
  '[' + entries.map(([p, q]) => `{"price":${written ? written(p) : String(p)},"qty":${q === 0 ? '0' : String(q)}}`).join(',') + ']'
const bookMessage = (type: 'snapshot' | 'update', bids: [number, number][], asks: [number, number][], checksum: number, written?: (n: number) => string): string =>
  `{"channel":"book","type":"${type}","data":[{"symbol":"ETH/EUR","bids":${levelsJson(bids, written)},"asks":${levelsJson(asks, written)},"checksum":${checksum},"timestamp":"2026-03-01T12:00:00.000001Z"}]}`

t.test('a book built from a snapshot and updates, checked against an independent computation', async (t) => {
  for (const depth of [10, 25]) {
    const a = createKrakenAdapter({ depth })
    classifyWith(a, 'book', instrumentFor('ETH/EUR', 2, 4))
    const books = a.books.create()
    const model = new Model(depth, 2, 4)
    let n = 0
    const step = (type: 'snapshot' | 'update', bids: [number, number][], asks: [number, number][], written?: (n: number) => string) => {
      if (type === 'snapshot') { model.bids.clear(); model.asks.clear() }
      model.message(bids, asks)
      const expected = model.checksum()
      const checks = feed(a, books, bookMessage(type, bids, asks, expected, written))
      t.same(checks, [{ instrument: 'ETH/EUR', expected: String(expected), computed: String(expected) }], `depth ${depth}, message ${n++}`)
    }
    // A snapshot of 12 levels a side (more than the checksum's 10).
    step('snapshot', Array.from({ length: 12 }, (_, i) => [2000 - i * 0.25, 1 + i / 8] as [number, number]), Array.from({ length: 12 }, (_, i) => [2001 + i * 0.5, 0.5 + i] as [number, number]))
    step('update', [[2000.25, 3.5]], []) // a new best bid: at depth 10 the worst bid falls out of scope
    step('update', [[2000, 0]], [[2001, 0]]) // deletions: the best levels go
    step('update', [], [[2001.5, 2], [2001.5, 0], [2001.5, 7.125]]) // one level three times in one message: in order
    step('update', [[1999.5, 0], [2000.5, 1]], []) // a delete and an insert in one message, truncated once, after both
    step('update', [[1997.75, 0.0625]], [[2010.5, 9.75]], (p) => p.toFixed(3)) // prices written with a trailing zero are the same levels
    step('update', [], [])
  }
})

t.test('a mismatch, a reset, and what returns no check', async (t) => {
  const a = createKrakenAdapter({ depth: 10 })
  classifyWith(a, 'book', instrumentFor('ETH/EUR', 2, 4))
  const books = a.books.create()
  const model = new Model(10, 2, 4)
  model.message([[100, 1], [99.5, 2]], [[101, 1]])
  const good = model.checksum()
  t.same(feed(a, books, bookMessage('snapshot', [[100, 1], [99.5, 2]], [[101, 1]], good)), [{ instrument: 'ETH/EUR', expected: String(good), computed: String(good) }])
  // The venue's book has a level ours lacks (a lost message): its checksum differs from ours.
  model.message([[99.75, 3]], [[101, 2]])
  const venue = model.checksum()
  const ours = new Model(10, 2, 4)
  ours.message([[100, 1], [99.5, 2]], [[101, 2]])
  const checks = feed(a, books, bookMessage('update', [], [[101, 2]], venue))
  t.same(checks, [{ instrument: 'ETH/EUR', expected: String(venue), computed: String(ours.checksum()) }])
  t.not(checks[0]!.expected, checks[0]!.computed, 'a mismatch')
  // After a reset the instrument is unchecked until its next snapshot.
  a.books.reset(books, 'ETH/EUR')
  t.same(feed(a, books, bookMessage('update', [], [[101, 3]], 1)), [], 'no book: no check')
  t.same(feed(a, books, bookMessage('snapshot', [[100, 1]], [[101, 1]], 5)).map((c) => c.expected), ['5'], 'the snapshot rebuilds it')
  // No check while the precisions are unknown, or when a value has more decimals than its precision.
  const b = createKrakenAdapter({ depth: 10 })
  const bb = b.books.create()
  t.same(feed(b, bb, bookMessage('snapshot', [[100, 1]], [[101, 1]], 5)), [], 'precisions unknown')
  classifyWith(b, 'book', instrumentFor('ETH/EUR', 1, 4))
  t.same(feed(b, bb, bookMessage('update', [[100.25, 1]], [], 5)), [], '100.25 at one decimal would need rounding')
  t.same(feed(b, bb, bookMessage('update', [[100.25, 0]], [], 5)).length, 1, 'once that level is gone the book checks again')
  // Frames of other tables, and payloads that are not a book, return nothing.
  const trade = b.classify('trades', enc.encode(TRADE_UPDATE), false)
  t.same(trade.kind === 'rows' ? b.books.apply(bb, trade, enc.encode(TRADE_UPDATE)) : 'x', [])
  const snap = b.classify('book', enc.encode(BOOK_SNAPSHOT), false)
  t.same(snap.kind === 'rows' ? b.books.apply(bb, snap, enc.encode('not json')) : 'x', [], 'never throws on a payload')
})

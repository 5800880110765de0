/**
 * The Binance USD-M futures adapter on payloads written from Binance's documentation ("Websocket Market
 * Streams": Aggregate Trade Streams, Diff. Book Depth Streams, Mark Price Stream, Liquidation Order
 * Streams; "Market Data Endpoints: Order Book"; "How to manage a local order book correctly").
 */
import t from 'tap'
import type { Channel } from '../src/formats/record/types.js'
import type { FrameClass, SequenceSpan, SequenceState } from '../src/venues/adapter.js'
import { binanceUsdm, createBinanceUsdmAdapter, usdmBookSequence } from '../src/venues/binance-usdm.js'
import { findVenue, venueAt } from '../src/venues/index.js'

const classify = (channel: Channel, text: string): FrameClass => binanceUsdm.classify(channel, Buffer.from(text), false)
const combined = (stream: string, data: string) => `{"stream":"${stream}","data":${data}}`
const MS = 1_000_000n

const AGG_TRADE = '{"e":"aggTrade","E":123456789,"s":"BTCUSDT","a":5933014,"p":"0.001","q":"100","f":100,"l":105,"T":123456785,"m":true}'
const DEPTH = '{"e":"depthUpdate","E":123456789,"T":123456788,"s":"BTCUSDT","U":157,"u":160,"pu":149,"b":[["0.0024","10"]],"a":[["0.0026","100"],["0.0027","0"]]}'
const MARK_PRICE = '{"e":"markPriceUpdate","E":1562305380000,"s":"BTCUSDT","p":"11794.15000000","i":"11784.62659091","P":"11784.25641265","r":"0.00038167","T":1562306400000}'
const FORCE_ORDER = '{"e":"forceOrder","E":1568014460893,"o":{"s":"BTCUSDT","S":"SELL","o":"LIMIT","f":"IOC","q":"0.014","p":"9910","ap":"9910","X":"FILLED","l":"0.014","z":"0.014","T":1568014460891}}'
const SNAPSHOT_BODY = '{"lastUpdateId":1027024,"E":1589436922972,"T":1589436922959,"bids":[["4.00000000","431.00000000"]],"asks":[["4.00000200","12.00000000"]]}'

t.test('aggTrade -> one trades row per aggregate: the aggregate id, the taker side, values as written', async (t) => {
  const expected = {
    kind: 'rows', table: 'trades',
    rows: [{ instrument: 'BTCUSDT', trade_id: '5933014', side: 'sell', price: '0.001', size: '100', exchange_time: 123456785n * MS }],
    exchangeTime: 123456785n * MS,
    sequences: [{ sequence: 'trades', instrument: 'BTCUSDT', first: 5933014n, last: 5933014n, snapshot: false }],
  }
  t.same(classify('trades', AGG_TRADE), expected, 'raw stream; exchange_time the earlier of E and T')
  t.same(classify('trades', combined('btcusdt@aggTrade', AGG_TRADE)), expected, 'combined stream')
  const buy = classify('trades', AGG_TRADE.replace('"m":true', '"m":false'))
  t.equal(buy.kind === 'rows' && buy.rows[0]!.side, 'buy', 'm false: the buyer took')
})

t.test('depthUpdate -> book_deltas, bids then asks, zero kept; the span carries pu', async (t) => {
  const c = classify('book', combined('btcusdt@depth@100ms', DEPTH))
  t.same(c, {
    kind: 'rows', table: 'book_deltas',
    rows: [
      { instrument: 'BTCUSDT', trade_id: null, side: 'bid', price: '0.0024', size: '10', exchange_time: 123456788n * MS },
      { instrument: 'BTCUSDT', trade_id: null, side: 'ask', price: '0.0026', size: '100', exchange_time: 123456788n * MS },
      { instrument: 'BTCUSDT', trade_id: null, side: 'ask', price: '0.0027', size: '0', exchange_time: 123456788n * MS },
    ],
    exchangeTime: 123456788n * MS,
    sequences: [{ sequence: 'book', instrument: 'BTCUSDT', first: 157n, last: 160n, snapshot: false, previous: 149n }],
  })
})

t.test('the REST depth snapshot, journaled as spot\'s is -> book_snapshots', async (t) => {
  const adapter = createBinanceUsdmAdapter({ restBase: 'http://127.0.0.1:9' })
  const frame = adapter.wrapSnapshot('book', 'BTCUSDT', SNAPSHOT_BODY)
  const c = adapter.classify('book', Buffer.from(frame), false)
  t.same(c.kind === 'rows' && [c.table, c.rows.length, c.sequences], ['book_snapshots', 2, [{ sequence: 'book', instrument: 'BTCUSDT', first: 1027024n, last: 1027024n, snapshot: true }]])
  t.same(adapter.snapshotRequest('book', 'BTCUSDT'), { url: 'http://127.0.0.1:9/fapi/v1/depth?symbol=BTCUSDT&limit=1000' })
  t.equal(adapter.snapshotRequest('trades', 'BTCUSDT'), null)
  t.throws(() => adapter.wrapSnapshot('funding', 'BTCUSDT', SNAPSHOT_BODY), RangeError)
})

t.test('funding and liquidations are kept raw: data with their stated time, nothing unrepresentable', async (t) => {
  t.same(classify('funding', combined('btcusdt@markPrice', MARK_PRICE)), { kind: 'data', exchangeTime: 1562305380000n * MS, sequences: [] })
  t.same(classify('liquidations', combined('btcusdt@forceOrder', FORCE_ORDER)), { kind: 'data', exchangeTime: 1568014460891n * MS, sequences: [] }, 'the earlier of E and the order\'s T')
  t.same(classify('liquidations', FORCE_ORDER).kind, 'data', 'raw stream')
  t.same(classify('funding', MARK_PRICE.replace('"r":"0.00038167","T":1562306400000', '"r":"","T":0')).kind, 'data', 'a delivery contract: no funding rate, no funding time')
})

t.test('frames off the documented structure are unrepresentable, with the reason; none throws', async (t) => {
  const cases: [Channel, string, string, RegExp][] = [
    ['trades', AGG_TRADE.replace('"p":"0.001"', '"p":0.001'), 'structure', /aggTrade: p is not a string/],
    ['trades', AGG_TRADE.replace('"f":100', '"f":106'), 'structure', /f 106 is after the last/],
    ['trades', combined('ethusdt@aggTrade', AGG_TRADE), 'structure', /does not name btcusdt@aggTrade/],
    ['trades', DEPTH, 'structure', /event type "depthUpdate" on channel trades/],
    ['book', DEPTH.replace('"pu":149,', ''), 'structure', /pu is missing/],
    ['book', DEPTH.replace('"pu":149', '"pu":157'), 'structure', /pu 157 is not before U 157/],
    ['book', DEPTH.replace('"T":123456788,', ''), 'structure', /T is missing/],
    ['funding', MARK_PRICE.replace('"r":"0.00038167"', '"r":"3.8e-4"'), 'decimal', /markPriceUpdate: r/],
    ['liquidations', FORCE_ORDER.replace('"S":"SELL"', '"S":"sell"'), 'structure', /o.S is "sell"/],
    ['liquidations', FORCE_ORDER.replace(/"o":\{.*\}\}$/, '"o":[]}'), 'structure', /o is not an object/],
    ['funding', '{"e":"markPriceUpdate"', 'not-json', /not JSON/],
  ]
  for (const [channel, text, code, reason] of cases) {
    const c = classify(channel, text)
    t.equal(c.kind, 'unrepresentable', `${channel}: ${text.slice(0, 60)}`)
    if (c.kind === 'unrepresentable') {
      t.equal(c.code, code)
      t.match(c.reason, reason)
    }
  }
  const bad = classify('book', DEPTH.replace('"b":[["0.0024","10"]]', '"b":[["0.0024"]]'))
  t.same(bad.kind === 'unrepresentable' && bad.sequences, [{ sequence: 'book', instrument: 'BTCUSDT', first: 157n, last: 160n, snapshot: false, previous: 149n }], 'a depth update whose ids parsed still counts for gaps')
  t.equal(binanceUsdm.classify('trades', Buffer.from(AGG_TRADE), true).kind, 'unrepresentable', 'a binary frame')
})

t.test('replies and the shutdown notice are control frames', async (t) => {
  t.same(classify('liquidations', '{"result":null,"id":1}'), { kind: 'control', note: 'request acknowledged' })
  t.match(classify('book', '{"error":{"code":2,"msg":"Invalid request"},"id":1}'), { kind: 'control', note: /^error response/ })
  t.match(classify('trades', '{"event":{"e":"serverShutdown","E":1}}'), { kind: 'control', closing: true })
})

t.test('aggregate ids: a missing a is a gap; holes in f..l are not looked at', async (t) => {
  const span = (a: bigint): SequenceSpan => ({ sequence: 'trades', instrument: 'BTCUSDT', first: a, last: a, snapshot: false })
  const first = binanceUsdm.sequence(undefined, span(10n))
  t.equal(first.verdict, 'start')
  t.equal(binanceUsdm.sequence(first.state, span(11n)).verdict, 'next')
  t.match(binanceUsdm.sequence(first.state, span(13n)), { verdict: 'gap', afterId: '10', beforeId: '13' })
  t.equal(binanceUsdm.sequence(first.state, span(10n)).verdict, 'stale')
})

t.test('depth: pu chains updates; a snapshot is joined by U <= L <= u; older snapshots are behind', async (t) => {
  const upd = (U: bigint, u: bigint, pu: bigint): SequenceSpan => ({ sequence: 'book', instrument: 'BTCUSDT', first: U, last: u, snapshot: false, previous: pu })
  const snap = (L: bigint): SequenceSpan => ({ sequence: 'book', instrument: 'BTCUSDT', first: L, last: L, snapshot: true })
  const start = usdmBookSequence(undefined, upd(100n, 110n, 95n))
  t.same(start, { verdict: 'start', state: { last: 110n, streamFirst: 100n } })
  t.same(usdmBookSequence(start.state, upd(118n, 125n, 110n)), { verdict: 'next', state: { last: 125n, streamFirst: 100n } }, 'pu = previous u: ids between them are other symbols\'')
  t.same(usdmBookSequence(start.state, upd(130n, 140n, 120n)), { verdict: 'gap', afterId: '110', beforeId: '130', state: { last: 140n, streamFirst: 100n } }, 'pu after the previous u: an update was missed')
  t.equal(usdmBookSequence(start.state, upd(90n, 105n, 80n)).verdict, 'stale', 'u below the last id')

  t.equal(usdmBookSequence(start.state, snap(99n)).verdict, 'snapshot-behind', 'L before the first update\'s U: refetch')
  const joined = usdmBookSequence(start.state, snap(130n))
  t.same(joined, { verdict: 'snapshot', state: { last: 130n, streamFirst: 100n } })
  t.equal(usdmBookSequence(joined.state, upd(118n, 125n, 110n)).verdict, 'stale', 'u < L: in the snapshot already')
  t.equal(usdmBookSequence(joined.state, upd(126n, 135n, 125n)).verdict, 'next', 'U <= L <= u: the first update applied')
  t.equal(usdmBookSequence(joined.state, upd(131n, 135n, 130n)).verdict, 'next', 'pu = L')
  t.match(usdmBookSequence(joined.state, upd(140n, 150n, 136n)), { verdict: 'gap', afterId: '130', beforeId: '140' }, 'U after L with pu after it: updates between them are missing')
  const fresh = usdmBookSequence(undefined, snap(500n))
  t.same(fresh, { verdict: 'snapshot', state: { last: 500n, streamFirst: null } })
  const keep: SequenceState = usdmBookSequence(joined.state, snap(120n)).state
  t.equal(keep.last, 130n, 'an older snapshot does not move the last id back')
})

t.test('connect: the split endpoints, combined streams, one SUBSCRIBE; the registry knows the venue', async (t) => {
  const a = createBinanceUsdmAdapter({ wsBase: 'ws://127.0.0.1:1' })
  const plan = (c: Channel) => a.connect(c, ['BTCUSDT', 'ETHUSDT'])
  t.same([plan('trades').url, plan('book').url, plan('funding').url, plan('liquidations').url],
    ['ws://127.0.0.1:1/market/stream', 'ws://127.0.0.1:1/public/stream', 'ws://127.0.0.1:1/market/stream', 'ws://127.0.0.1:1/market/stream'])
  t.same(JSON.parse(plan('liquidations').send[0]!), { method: 'SUBSCRIBE', params: ['btcusdt@forceOrder', 'ethusdt@forceOrder'], id: 1 })
  t.same(JSON.parse(plan('book').send[0]!).params, ['btcusdt@depth@100ms', 'ethusdt@depth@100ms'])
  t.equal(plan('trades').answers(Buffer.from('{"result":null,"id":1}')), 'subscribed')
  t.equal(plan('trades').silenceMs, 180_000, 'the server pings every 3 minutes: a quiet stream is silent that long')
  t.throws(() => a.connect('trades', []), RangeError)
  t.equal(findVenue('binance-usdm'), binanceUsdm)
  t.equal(venueAt('binance-usdm', { ws: 'ws://127.0.0.1:2' }).connect('book', ['BTCUSDT']).url, 'ws://127.0.0.1:2/public/stream')
  t.throws(() => binanceUsdm.classify('nope' as Channel, Buffer.from('{}'), false), RangeError)
})

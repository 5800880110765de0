import t, { type Test } from 'tap'
import type { Channel } from '../src/formats/record/types.js'
import type { FrameClass, SequenceSpan, SequenceState } from '../src/venues/adapter.js'
import {
  bybit, bybitBookSequence, bybitInverse, bybitSequence, bybitSpot, createBybitAdapter,
  BYBIT_ARGS_PER_REQUEST, BYBIT_BOOK_DEPTHS, BYBIT_MAX_ARGS_CHARS, BYBIT_PING_INTERVAL_MS,
} from '../src/venues/bybit.js'

const enc = new TextEncoder()
const classify = (channel: Channel, text: string): FrameClass => bybit.classify(channel, enc.encode(text), false)
const MS = 1_000_000n

/** Assert an unrepresentable class with its code and a reason matching `re`. */
function unrep(t: Test, c: FrameClass, code: string, re: RegExp, msg: string): void {
  t.match(c, { kind: 'unrepresentable', code, reason: re }, msg)
}

// Payloads from Bybit's V5 API documentation, written as its examples are.

// "Trade", Response Example.
const TRADE = '{"topic":"publicTrade.BTCUSDT","type":"snapshot","ts":1672304486868,"data":[{"T":1672304486865,"s":"BTCUSDT","S":"Buy","v":"0.001","p":"16578.50","L":"PlusTick","i":"20f43950-d8dd-5b31-9112-a178eb6023af","BT":false,"seq":1783284617}]}'

// "Orderbook", Response Example: Snapshot (the example's elisions, `...`, left out).
const SNAPSHOT = '{"topic":"orderbook.50.BTCUSDT","type":"snapshot","ts":1672304484978,"data":{"s":"BTCUSDT","b":[["16493.50","0.006"],["16493.00","0.100"]],"a":[["16611.00","0.029"],["16612.00","0.213"]],"u":18521288,"seq":7961638724},"cts":1672304484976}'
// "Orderbook", Response Example: Delta.
const DELTA = '{"topic":"orderbook.50.BTCUSDT","type":"delta","ts":1687940967466,"data":{"s":"BTCUSDT","b":[["30247.20","30.028"],["30245.40","0.224"],["30242.10","1.593"],["30240.30","1.305"],["30240.00","0"]],"a":[["30248.70","0"],["30249.30","0.892"],["30249.50","1.778"],["30249.60","0"],["30251.90","2.947"],["30252.20","0.659"],["30252.50","4.591"]],"u":177400507,"seq":66544703342},"cts":1687940967464}'

// "Ticker", Response Example: Linear (LinearPerpetual, then LinearFutures), and Spot.
const TICKER_PERP = '{"topic":"tickers.BTCUSDT","type":"snapshot","data":{"symbol":"BTCUSDT","tickDirection":"MinusTick","price24hPcnt":"-0.158315","lastPrice":"66666.60","prevPrice24h":"79206.20","highPrice24h":"79266.30","lowPrice24h":"65076.90","prevPrice1h":"66666.60","markPrice":"66666.60","indexPrice":"115418.19","openInterest":"492373.72","openInterestValue":"32824881841.75","turnover24h":"4936790807.6521","volume24h":"73191.3870","fundingIntervalHour":"8","fundingCap":"0.005","nextFundingTime":"1760342400000","fundingRate":"-0.005","bid1Price":"66666.60","bid1Size":"23789.165","ask1Price":"66666.70","ask1Size":"23775.469","preOpenPrice":"","preQty":"","curPreListingPhase":""},"cs":9532239429,"ts":1760325052630}'
const TICKER_FUTURES = '{"topic":"tickers.BTC-26DEC25","type":"snapshot","data":{"symbol":"BTC-26DEC25","tickDirection":"ZeroMinusTick","price24hPcnt":"0","lastPrice":"109401.50","prevPrice24h":"109401.50","highPrice24h":"109401.50","lowPrice24h":"109401.50","prevPrice1h":"109401.50","markPrice":"121144.63","indexPrice":"114132.51","openInterest":"6.622","openInterestValue":"802219.74","turnover24h":"0.0000","volume24h":"0.0000","deliveryTime":"2025-12-26T08:00:00Z","basisRate":"0.06129209","deliveryFeeRate":"0","predictedDeliveryPrice":"0.00","basis":"-4730.84","basisRateYear":"0.30655351","nextFundingTime":"","fundingRate":"","bid1Price":"111254.50","bid1Size":"0.176","ask1Price":"131001.00","ask1Size":"0.580"},"cs":31337927919,"ts":1760409119857}'
const TICKER_SPOT = '{"topic":"tickers.BTCUSDT","ts":1673853746003,"type":"snapshot","cs":2588407389,"data":{"symbol":"BTCUSDT","lastPrice":"21109.77","highPrice24h":"21426.99","lowPrice24h":"20575","prevPrice24h":"20704.93","volume24h":"6780.866843","turnover24h":"141946527.22907118","price24hPcnt":"0.0196","usdIndexPrice":"21120.2400136"}}'
// "Ticker": "If a response param is not found in the message, then its value has not changed" — a delta (constructed).
const TICKER_DELTA = '{"topic":"tickers.BTCUSDT","type":"delta","data":{"symbol":"BTCUSDT","markPrice":"66667.10","indexPrice":"115419.02"},"cs":9532239430,"ts":1760325052730}'

// "All Liquidation", Response Example.
const LIQUIDATION = '{"topic":"allLiquidation.ROSEUSDT","type":"snapshot","ts":1739502303204,"data":[{"T":1739502302929,"s":"ROSEUSDT","S":"Sell","v":"20000","p":"0.04499"}]}'

// "Connect", How to Send the Heartbeat Packet: pong examples (Spot, Linear/Inverse, Option/Spread).
const PONG_SPOT = '{"success":true,"ret_msg":"pong","conn_id":"0970e817-426e-429a-a679-ff7f55e0b16a","op":"ping"}'
const PONG_LINEAR = '{"success":true,"ret_msg":"pong","conn_id":"465772b1-7630-4fdc-a492-e003e6f0f260","req_id":"","op":"ping"}'
const PONG_OPTION = '{"args":["1672916271846"],"op":"pong"}'
// "Connect", Understanding the Subscription Response (Public Spot, Linear/Inverse).
const SUBSCRIBED_SPOT = '{"success":true,"ret_msg":"subscribe","conn_id":"2324d924-aa4d-45b0-a858-7b8be29ab52b","req_id":"10001","op":"subscribe"}'
const SUBSCRIBED_LINEAR = '{"success":true,"ret_msg":"","conn_id":"3cd84cb1-4d06-4a05-930a-2efe5fc70f0f","req_id":"","op":"subscribe"}'
// Not in the documentation (it shows no failure): a failed reply as `success` false, constructed.
const REFUSED = '{"success":false,"ret_msg":"error:handler not found, topic:orderbook.50.NOSUCH","conn_id":"3cd84cb1-4d06-4a05-930a-2efe5fc70f0f","req_id":"1","op":"subscribe"}'
// Unsubscribe (the documentation shows the request only): its reply as the subscribe reply, constructed.
const UNSUBSCRIBED = '{"success":true,"ret_msg":"","conn_id":"3cd84cb1-4d06-4a05-930a-2efe5fc70f0f","req_id":"customised_id","op":"unsubscribe"}'

const CHANNELS: readonly Channel[] = ['trades', 'book', 'funding', 'liquidations']

t.test('the adapters: one per category', async (t) => {
  t.equal(bybit.name, 'bybit')
  t.same(bybit.channels, ['trades', 'book', 'funding', 'liquidations'])
  t.equal(bybitInverse.name, 'bybit-inverse')
  t.same(bybitInverse.channels, ['trades', 'book', 'funding', 'liquidations'])
  t.equal(bybitSpot.name, 'bybit-spot', 'the same symbol names another market in spot: another venue name')
  t.same(bybitSpot.channels, ['trades', 'book'], 'spot: no funding, no liquidations')
  t.equal(bybit.books, undefined, 'no book checksum to recompute')
  t.same(bybit.about!.endpoints, ['wss://stream.bybit.com/v5/public/linear'])
  t.same(bybitSpot.about!.endpoints, ['wss://stream.bybit.com/v5/public/spot'])
  t.same(bybitInverse.about!.endpoints, ['wss://stream.bybit.com/v5/public/inverse'])
  t.same(Object.keys(bybit.about!.channels), ['trades', 'book', 'funding', 'liquidations'], 'pipe list venues describes every channel')
  t.same(Object.keys(bybitSpot.about!.channels), ['trades', 'book'])
  t.equal(bybit.about!.checksum, null)
  t.match(bybit.about!.channels.book!.streams, /^orderbook\.200\.<symbol>/, 'depth 200 by default')
  t.match(bybit.about!.channels.book!.sequence, /u = previous u \+ 1.*u = 1/)
  t.match(bybit.about!.channels.trades!.sequence, /^none/)
  t.match(createBybitAdapter({ depth: 1 }).about!.channels.book!.sequence, /snapshots only/)
  t.match(bybit.about!.summary, /linear/)
  t.throws(() => bybit.classify('options' as Channel, enc.encode(TRADE), false), RangeError, 'a channel it does not serve')
  t.throws(() => bybitSpot.classify('funding', enc.encode(TICKER_SPOT), false), RangeError, 'spot serves no funding')
  t.throws(() => bybitSpot.connect('liquidations', ['BTCUSDT']), RangeError, 'spot serves no liquidations')
  t.throws(() => createBybitAdapter({ depth: 500 }), /depth 500/, 'level 500 is no longer documented')
  t.throws(() => createBybitAdapter({ category: 'option' as 'spot' }), /category/)
  t.same(BYBIT_BOOK_DEPTHS, [1, 50, 200, 1000])
})

t.test('publicTrade -> a trades row per trade, exactly as written', async (t) => {
  const T = 1672304486865n * MS
  t.same(classify('trades', TRADE), {
    kind: 'rows',
    table: 'trades',
    rows: [{ instrument: 'BTCUSDT', trade_id: '20f43950-d8dd-5b31-9112-a178eb6023af', side: 'Buy', price: '16578.50', size: '0.001', exchange_time: T }],
    exchangeTime: T,
    sequences: [],
  }, 'no trade sequence: trade ids are UUIDs')
  const sell = classify('trades', TRADE.replace('"S":"Buy"', '"S":"Sell"'))
  t.equal(sell.kind === 'rows' && sell.rows[0]!.side, 'Sell', "the taker side, as the venue's word")
  // Several trades in one message: each row carries its own T; the frame the earliest stated time.
  const two = TRADE.replace(/\}\]\}$/, '},{"T":1672304486866,"s":"BTCUSDT","S":"Sell","v":"1.250","p":"16578.00","L":"MinusTick","i":"8a1c6f2e-0b7d-5e6c-9d2a-3f4b5c6d7e8f","BT":false,"RPI":false,"seq":1783284618}]}')
  const c = classify('trades', two)
  t.same(c.kind === 'rows' && c.rows.map((r) => [r.trade_id, r.side, r.price, r.size, r.exchange_time]), [
    ['20f43950-d8dd-5b31-9112-a178eb6023af', 'Buy', '16578.50', '0.001', 1672304486865n * MS],
    ['8a1c6f2e-0b7d-5e6c-9d2a-3f4b5c6d7e8f', 'Sell', '16578.00', '1.250', 1672304486866n * MS],
  ], 'trailing zeros kept; each trade its own time')
  t.equal(c.kind === 'rows' && c.exchangeTime, 1672304486865n * MS)
  const tsFirst = classify('trades', TRADE.replace('"ts":1672304486868', '"ts":1672304486000'))
  t.equal(tsFirst.kind === 'rows' && tsFirst.exchangeTime, 1672304486000n * MS, 'the frame: the earliest of ts and the trades\' T')
  t.equal(tsFirst.kind === 'rows' && tsFirst.rows[0]!.exchange_time, T, 'the row: its trade\'s T')
  t.same(classify('trades', '{"topic":"publicTrade.BTCUSDT","type":"snapshot","ts":1672304486868,"data":[]}'), { kind: 'rows', table: 'trades', rows: [], exchangeTime: 1672304486868n * MS, sequences: [] }, 'an empty data array: no rows')
  const ms = classify('trades', TRADE.replace('"topic":"publicTrade.BTCUSDT"', '"topic":"publicTrade.BTC-26DEC25"').replace('"s":"BTCUSDT"', '"s":"BTC-26DEC25"'))
  t.equal(ms.kind === 'rows' && ms.rows[0]!.instrument, 'BTC-26DEC25', 'the topic names the instrument')
})

t.test('malformed trade messages yield no rows and a reason', async (t) => {
  const bad = (from: string, to: string) => classify('trades', TRADE.replace(from, to))
  unrep(t, bad('"i":"20f43950-d8dd-5b31-9112-a178eb6023af",', ''), 'structure', /data\[0\]: i is missing/, 'no trade id')
  unrep(t, bad('"i":"20f43950-d8dd-5b31-9112-a178eb6023af"', '"i":""'), 'structure', /i is empty/, 'an empty trade id')
  unrep(t, bad('"i":"20f43950-d8dd-5b31-9112-a178eb6023af"', '"i":12345'), 'structure', /i is not a string/, 'a numeric trade id')
  unrep(t, bad('"S":"Buy"', '"S":"buy"'), 'structure', /S "buy" is neither "Buy" nor "Sell"/, 'side in another case')
  unrep(t, bad('"p":"16578.50"', '"p":16578.50'), 'structure', /p is not a string/, 'price as a number')
  unrep(t, bad('"p":"16578.50"', '"p":"1.6578e4"'), 'decimal', /p "1.6578e4" is not a decimal/, 'price with an exponent')
  unrep(t, bad('"v":"0.001"', '"v":"0.0000000000000000001"'), 'decimal', /v "0.0000000000000000001"/, 'more than 18 fractional digits')
  unrep(t, bad('"v":"0.001"', '"v":"100000000000000000000"'), 'decimal', /v/, '10^20')
  unrep(t, bad('"T":1672304486865', '"T":"1672304486865"'), 'structure', /T is not a number/, 'T as a string')
  unrep(t, bad('"T":1672304486865', '"T":1672304486865.5'), 'structure', /T is not a non-negative integer/, 'T with a fraction')
  unrep(t, bad('"T":1672304486865', '"T":9223372036855'), 'time', /T 9223372036855 ms does not fit int64/, 'T beyond int64 nanoseconds')
  unrep(t, bad('"ts":1672304486868', '"ts":-1'), 'structure', /ts is not a non-negative integer/, 'negative ts')
  unrep(t, bad('"ts":1672304486868,', ''), 'structure', /publicTrade: ts is missing/, 'no ts')
  unrep(t, bad('"s":"BTCUSDT"', '"s":"ETHUSDT"'), 'structure', /s "ETHUSDT" is not the topic's "BTCUSDT"/, 'a trade of another symbol')
  unrep(t, bad('"type":"snapshot"', '"type":"delta"'), 'structure', /type is "delta", not "snapshot"/, 'trades are snapshots only')
  unrep(t, classify('trades', '{"topic":"publicTrade.BTCUSDT","type":"snapshot","ts":1,"data":{"T":1,"s":"BTCUSDT","S":"Buy","v":"1","p":"1","i":"a"}}'), 'structure', /data is not an array/, 'data not an array')
  unrep(t, classify('trades', '{"topic":"publicTrade.BTCUSDT","type":"snapshot","ts":1,"data":[1]}'), 'structure', /data\[0\] is not an object/, 'an item not an object')
  unrep(t, classify('trades', SNAPSHOT), 'structure', /topic "orderbook.50.BTCUSDT" on channel trades/, 'a book push on the trade connection')
  unrep(t, bad('"topic":"publicTrade.BTCUSDT"', '"topic":"publicTrade."'), 'structure', /topic "publicTrade\." on channel trades/, 'a topic naming no symbol')
  unrep(t, bad('"topic":"publicTrade.BTCUSDT"', '"topic":7'), 'structure', /topic is not a string/, 'topic not a string')
})

t.test('orderbook snapshot -> book_snapshots, delta -> book_deltas, sizes of zero kept', async (t) => {
  const snapshotTime = 1672304484976n * MS // cts, earlier than ts
  t.same(classify('book', SNAPSHOT), {
    kind: 'rows',
    table: 'book_snapshots',
    rows: [
      { instrument: 'BTCUSDT', trade_id: null, side: 'bid', price: '16493.50', size: '0.006', exchange_time: snapshotTime },
      { instrument: 'BTCUSDT', trade_id: null, side: 'bid', price: '16493.00', size: '0.100', exchange_time: snapshotTime },
      { instrument: 'BTCUSDT', trade_id: null, side: 'ask', price: '16611.00', size: '0.029', exchange_time: snapshotTime },
      { instrument: 'BTCUSDT', trade_id: null, side: 'ask', price: '16612.00', size: '0.213', exchange_time: snapshotTime },
    ],
    exchangeTime: snapshotTime,
    sequences: [{ sequence: 'book', instrument: 'BTCUSDT', first: 18521288n, last: 18521288n, snapshot: true }],
  })
  const d = classify('book', DELTA)
  if (d.kind !== 'rows') throw new Error('expected rows')
  t.equal(d.table, 'book_deltas')
  t.equal(d.exchangeTime, 1687940967464n * MS, 'the earlier of ts and cts')
  t.same(d.rows.map((r) => [r.side, r.price, r.size]), [
    ['bid', '30247.20', '30.028'], ['bid', '30245.40', '0.224'], ['bid', '30242.10', '1.593'], ['bid', '30240.30', '1.305'], ['bid', '30240.00', '0'],
    ['ask', '30248.70', '0'], ['ask', '30249.30', '0.892'], ['ask', '30249.50', '1.778'], ['ask', '30249.60', '0'], ['ask', '30251.90', '2.947'], ['ask', '30252.20', '0.659'], ['ask', '30252.50', '4.591'],
  ], 'bids then asks, in the order sent; "0" deletes and is kept')
  t.ok(d.rows.every((r) => r.exchange_time === d.exchangeTime && r.instrument === 'BTCUSDT' && r.trade_id === null), "every row carries the frame's time")
  t.same(d.sequences, [{ sequence: 'book', instrument: 'BTCUSDT', first: 177400507n, last: 177400507n, snapshot: false }])
  // Without cts: ts. With ts before type (spot, and futures level 1), as the Orderbook page's reminder says.
  const noCts = classify('book', '{"topic":"orderbook.1.BTCUSDT","ts":1672304484978,"type":"snapshot","data":{"s":"BTCUSDT","b":[["16493.50","0.006"]],"a":[["16611.00","0.029"]],"u":18521288,"seq":7961638724}}')
  t.equal(noCts.kind === 'rows' && noCts.exchangeTime, 1672304484978n * MS)
  const later = classify('book', SNAPSHOT.replace('"cts":1672304484976', '"cts":1672304484999'))
  t.equal(later.kind === 'rows' && later.exchangeTime, 1672304484978n * MS, 'ts when cts is later')
  const empty = classify('book', '{"topic":"orderbook.50.BTCUSDT","type":"delta","ts":1687940967466,"data":{"s":"BTCUSDT","b":[],"a":[],"u":177400508,"seq":66544703343},"cts":1687940967464}')
  t.same(empty.kind === 'rows' && [empty.rows.length, empty.sequences[0]!.last], [0, 177400508n], 'a delta without levels: no rows, still a span')
  for (const depth of [1, 50, 200, 1000]) {
    const c = classify('book', SNAPSHOT.replace('orderbook.50.', `orderbook.${depth}.`))
    t.equal(c.kind, 'rows', `depth ${depth} is read whatever the adapter's depth`)
  }
  unrep(t, classify('book', SNAPSHOT.replace('orderbook.50.', 'orderbook.500.')), 'structure', /topic "orderbook.500.BTCUSDT"/, 'level 500 is not documented')
  unrep(t, classify('book', SNAPSHOT.replace('orderbook.50.', 'orderbook.rpi.')), 'structure', /on channel book/, 'another orderbook topic')
  const huge = classify('book', DELTA.replace('"u":177400507', '"u":123456789012345678901'))
  t.equal(huge.kind === 'rows' && huge.sequences[0]!.last, 123456789012345678901n, 'u exactly, beyond 2^53')
})

t.test('malformed book messages yield no rows; their u still counts when it parsed', async (t) => {
  const span = [{ sequence: 'book', instrument: 'BTCUSDT', first: 177400507n, last: 177400507n, snapshot: false }]
  const bad = (from: string, to: string) => classify('book', DELTA.replace(from, to))
  const noU = bad('"u":177400507,', '')
  unrep(t, noU, 'structure', /data: u is missing/, 'no u')
  t.notOk('sequences' in noU, 'no span without u')
  unrep(t, bad('"u":177400507', '"u":"177400507"'), 'structure', /u is not a number/, 'u as a string')
  unrep(t, bad('"u":177400507', '"u":-3'), 'structure', /u is not a non-negative integer/, 'negative u')
  unrep(t, bad('"s":"BTCUSDT"', '"s":"ETHUSDT"'), 'structure', /s "ETHUSDT" is not the topic's/, 'another symbol')
  unrep(t, bad('"type":"delta"', '"type":"update"'), 'structure', /type is "update", not "snapshot" or "delta"/, 'an unknown type')
  unrep(t, bad('"type":"delta",', ''), 'structure', /type is missing/, 'no type')
  unrep(t, classify('book', '{"topic":"orderbook.50.BTCUSDT","type":"delta","ts":1,"data":[]}'), 'structure', /data is not an object/, 'data an array')
  const cases: [string, string, string, RegExp, string][] = [
    ['["30240.00","0"]', '["30240.00","0","x"]', 'structure', /b\[4\] is not a \[price, size\] pair/, 'a level of three'],
    ['["30248.70","0"]', '{"p":"30248.70"}', 'structure', /a\[0\] is not a \[price, size\] pair/, 'a level not an array'],
    ['["30247.20","30.028"]', '[30247.20,"30.028"]', 'structure', /b\[0\] price is not a string/, 'a price as a number'],
    ['["30247.20","30.028"]', '["30247.20","3e1"]', 'decimal', /b\[0\] size "3e1"/, 'a size with an exponent'],
    ['"b":[', '"b":{"x":[', 'structure', /b is not an array/, 'bids not an array'],
    ['"seq":66544703342', '"seq":"66544703342"', 'structure', /seq is not a number/, 'seq not a number'],
    ['"ts":1687940967466', '"ts":"1687940967466"', 'structure', /ts is not a number/, 'ts as a string'],
    ['"cts":1687940967464', '"cts":99999999999999', 'time', /cts 99999999999999 ms/, 'cts beyond int64 nanoseconds'],
  ]
  for (const [from, to, code, re, msg] of cases) {
    let text = DELTA.replace(from, to)
    if (to.startsWith('"b":{')) text = text.replace('["30240.00","0"]],', '["30240.00","0"]]},')
    const c = classify('book', text)
    unrep(t, c, code, re, msg)
    t.same(c.kind === 'unrepresentable' && c.sequences, span, `${msg}: the span still counts`)
  }
  unrep(t, classify('book', TRADE), 'structure', /topic "publicTrade.BTCUSDT" on channel book/, 'a trade on the book connection')
})

t.test('tickers and allLiquidation are data: their times, no rows, no sequence', async (t) => {
  t.same(classify('funding', TICKER_PERP), { kind: 'data', exchangeTime: 1760325052630n * MS, sequences: [] }, 'linear perpetual')
  t.same(classify('funding', TICKER_FUTURES), { kind: 'data', exchangeTime: 1760409119857n * MS, sequences: [] }, 'linear futures: empty funding fields')
  t.same(classify('funding', TICKER_DELTA), { kind: 'data', exchangeTime: 1760325052730n * MS, sequences: [] }, 'a delta with the changed fields only')
  t.same(classify('funding', TICKER_SPOT), { kind: 'data', exchangeTime: 1673853746003n * MS, sequences: [] }, 'the spot shape reads too')
  t.equal(bybitInverse.classify('funding', enc.encode(TICKER_PERP.replaceAll('BTCUSDT', 'BTCUSD')), false).kind, 'data', 'inverse')
  const arrayForm = TICKER_DELTA.replace('"data":{', '"data":[{').replace('},"cs"', '}],"cs"')
  t.same(classify('funding', arrayForm), { kind: 'data', exchangeTime: 1760325052730n * MS, sequences: [] }, 'data as an array (the parameter table)')
  const badTicker = (from: string, to: string) => classify('funding', TICKER_PERP.replace(from, to))
  unrep(t, badTicker('"fundingRate":"-0.005"', '"fundingRate":-0.005'), 'structure', /fundingRate is not a string/, 'funding rate as a number')
  unrep(t, badTicker('"fundingRate":"-0.005"', '"fundingRate":"-5e-3"'), 'decimal', /fundingRate "-5e-3"/, 'funding rate with an exponent')
  unrep(t, badTicker('"markPrice":"66666.60"', '"markPrice":"n/a"'), 'decimal', /markPrice/, 'mark price not a decimal')
  unrep(t, badTicker('"nextFundingTime":"1760342400000"', '"nextFundingTime":"soon"'), 'structure', /nextFundingTime/, 'next funding time not milliseconds')
  unrep(t, badTicker('"symbol":"BTCUSDT"', '"symbol":"ETHUSDT"'), 'structure', /symbol "ETHUSDT" is not the topic's/, 'another symbol')
  unrep(t, badTicker('"symbol":"BTCUSDT",', ''), 'structure', /symbol is missing/, 'no symbol')
  unrep(t, badTicker('"type":"snapshot"', '"type":"update"'), 'structure', /type is "update"/, 'an unknown type')
  unrep(t, badTicker('"ts":1760325052630', '"ts":"1760325052630"'), 'structure', /tickers: ts is not a number/, 'ts as a string')
  unrep(t, badTicker('"cs":9532239429', '"cs":"x"'), 'structure', /cs is not a number/, 'cs not a number')
  unrep(t, classify('funding', TRADE), 'structure', /on channel funding/, 'a trade on the funding connection')

  t.same(classify('liquidations', LIQUIDATION), { kind: 'data', exchangeTime: 1739502302929n * MS, sequences: [] }, 'the earliest of ts and T')
  const two = LIQUIDATION.replace('}]}', '},{"T":1739502302700,"s":"ROSEUSDT","S":"Buy","v":"150","p":"0.04601"}]}')
  t.same(classify('liquidations', two), { kind: 'data', exchangeTime: 1739502302700n * MS, sequences: [] }, 'several liquidations in one batch')
  const single = LIQUIDATION.replace('"data":[', '"data":').replace('}]}', '}}')
  t.same(classify('liquidations', single), { kind: 'data', exchangeTime: 1739502302929n * MS, sequences: [] }, 'data as one object (the parameter table)')
  const badLiq = (from: string, to: string) => classify('liquidations', LIQUIDATION.replace(from, to))
  unrep(t, badLiq('"S":"Sell"', '"S":"Short"'), 'structure', /S "Short"/, 'an unknown side')
  unrep(t, badLiq('"v":"20000"', '"v":"2e4"'), 'decimal', /v "2e4"/, 'a size with an exponent')
  unrep(t, badLiq('"p":"0.04499"', '"p":0.04499'), 'structure', /p is not a string/, 'a price as a number')
  unrep(t, badLiq('"T":1739502302929', '"T":"1739502302929"'), 'structure', /T is not a number/, 'T as a string')
  unrep(t, badLiq('"s":"ROSEUSDT"', '"s":"BTCUSDT"'), 'structure', /not the topic's "ROSEUSDT"/, 'another symbol')
  unrep(t, badLiq('"topic":"allLiquidation.ROSEUSDT"', '"topic":"liquidation.ROSEUSDT"'), 'structure', /topic "liquidation.ROSEUSDT" on channel liquidations/, 'the old liquidation topic')
})

t.test('replies and pongs are control frames on every channel', async (t) => {
  for (const channel of CHANNELS) {
    t.same(classify(channel, PONG_SPOT), { kind: 'control', note: 'pong' }, `${channel}: spot pong`)
    t.same(classify(channel, PONG_LINEAR), { kind: 'control', note: 'pong' }, `${channel}: linear pong`)
    t.same(classify(channel, PONG_OPTION), { kind: 'control', note: 'pong' }, `${channel}: option pong`)
    t.same(classify(channel, SUBSCRIBED_SPOT), { kind: 'control', note: 'subscribed' }, `${channel}: spot subscribe reply`)
    t.same(classify(channel, SUBSCRIBED_LINEAR), { kind: 'control', note: 'subscribed' }, `${channel}: linear subscribe reply`)
    t.same(classify(channel, UNSUBSCRIBED), { kind: 'control', note: 'unsubscribed' }, `${channel}: unsubscribe reply`)
    const refused = classify(channel, REFUSED)
    t.same(refused, { kind: 'control', note: 'subscribe failed: error:handler not found, topic:orderbook.50.NOSUCH' }, `${channel}: a failed reply`)
    t.notOk('closing' in refused, 'nothing announces a close')
    unrep(t, classify(channel, '{"success":true,"ret_msg":"","op":"auth","conn_id":"x"}'), 'structure', /unknown op "auth"/, `${channel}: auth is not for the public streams`)
    unrep(t, classify(channel, '{"ret_msg":"pong","op":"ping"}'), 'structure', /success is missing/, `${channel}: a reply without success`)
    unrep(t, classify(channel, '{"success":true,"op":3}'), 'structure', /op is not a string/, `${channel}: op not a string`)
  }
  t.match(classify('book', REFUSED.replace('error:handler not found', 'x'.repeat(500))), { kind: 'control', note: /^subscribe failed: x{182}…$/ }, 'long messages are clipped')
})

t.test('frames that are not JSON, or not an object', async (t) => {
  for (const channel of CHANNELS) {
    unrep(t, bybit.classify(channel, enc.encode(TRADE), true), 'not-json', /binary frame/, `${channel}: binary`)
    unrep(t, bybit.classify(channel, Uint8Array.of(0x7b, 0xff, 0x7d), false), 'not-json', /not UTF-8/, `${channel}: invalid UTF-8`)
    unrep(t, classify(channel, 'pong'), 'not-json', /not JSON/, `${channel}: text pong is not Bybit's`)
    unrep(t, classify(channel, '\ufeff' + PONG_LINEAR), 'not-json', /not JSON/, `${channel}: BOM`)
    unrep(t, classify(channel, DELTA.slice(0, -1)), 'not-json', /not JSON/, `${channel}: truncated`)
    unrep(t, classify(channel, '{"op":"ping","op":"pong"}'), 'not-json', /duplicate key/, `${channel}: duplicate keys`)
    unrep(t, classify(channel, '[1,2]'), 'structure', /not a JSON object/, `${channel}: an array`)
    unrep(t, classify(channel, '{}'), 'structure', /neither a push \(topic\) nor a reply \(op\)/, `${channel}: an empty object`)
  }
})

const span = (u: bigint, snapshot = false): SequenceSpan => ({ sequence: 'book', instrument: 'BTCUSDT', first: u, last: u, snapshot })
const at = (last: bigint, streamFirst: bigint | null = 100n): SequenceState => ({ last, streamFirst })

t.test('u rule: +1 per message, snapshots reset, u = 1 is a restart', async (t) => {
  t.same(bybitBookSequence(undefined, span(100n, true)), { verdict: 'snapshot', state: { last: 100n, streamFirst: null } }, 'first frame a snapshot')
  t.same(bybitBookSequence(undefined, span(100n)), { verdict: 'start', state: { last: 100n, streamFirst: 100n } }, 'first frame a delta')
  t.same(bybitBookSequence(at(100n), span(101n)), { verdict: 'next', state: at(101n) }, 'u = previous u + 1')
  t.same(bybitBookSequence(at(100n, null), span(101n)), { verdict: 'next', state: at(101n, 101n) }, 'the first delta after a snapshot starts the stream')
  t.same(bybitBookSequence(at(100n), span(105n)), { verdict: 'gap', afterId: '100', beforeId: '105', state: at(105n) }, 'a jump: ids 101..104 unseen')
  const stale = bybitBookSequence(at(100n), span(100n))
  t.same(stale, { verdict: 'stale', state: at(100n) }, 'the same message again (another connection)')
  t.equal(bybitBookSequence(at(100n), span(90n)).verdict, 'stale', 'an older message')
  t.same(bybitBookSequence(at(100n), span(120n, true)), { verdict: 'snapshot', state: at(120n) }, 'a later snapshot: the state moves on, no gap')
  t.same(bybitBookSequence(at(100n), span(98n, true)), { verdict: 'snapshot', state: at(100n) }, 'an earlier snapshot (another connection, behind) keeps the later id')
  t.same(bybitBookSequence(at(100n), span(100n, true)), { verdict: 'snapshot', state: at(100n) }, 'level 1 re-sends the snapshot with the same u')
  // Service restart: the snapshot with u = 1 overwrites the book; the numbering starts again.
  const restart = bybitBookSequence(at(177400507n), span(1n, true))
  t.same(restart, { verdict: 'snapshot', state: { last: 1n, streamFirst: null } }, 'u = 1: a new snapshot, never a gap, whatever came before')
  const after = bybitBookSequence(restart.state, span(2n))
  t.same(after, { verdict: 'next', state: { last: 2n, streamFirst: 2n } }, 'the update after the restart continues it')
  t.equal(bybitBookSequence(after.state, span(4n)).verdict, 'gap', 'and the rule holds again')
  t.same(bybitBookSequence(undefined, span(1n, true)), { verdict: 'snapshot', state: { last: 1n, streamFirst: null } })
  t.equal(bybitSequence(at(100n), span(101n)).verdict, 'next', 'bybitSequence dispatches books')
  t.equal(bybit.sequence, bybitSequence)
  t.throws(() => bybitSequence(undefined, { sequence: 'trades', instrument: 'BTCUSDT', first: 1n, last: 1n, snapshot: false }), RangeError, 'no trade sequence on Bybit')
})

t.test('u rule on classified frames', async (t) => {
  const withU = (text: string, u: number) => text.replace(/"u":[0-9]+/, `"u":${u}`)
  const frames = [withU(SNAPSHOT, 500), withU(DELTA, 501), withU(DELTA, 502), withU(DELTA, 502), withU(DELTA, 506), withU(SNAPSHOT, 1), withU(DELTA, 2), withU(SNAPSHOT, 40), withU(DELTA, 41)]
  let state: SequenceState | undefined
  const verdicts: string[] = []
  for (const text of frames) {
    const c = classify('book', text)
    if (c.kind !== 'rows') throw new Error('expected rows')
    for (const s of c.sequences) {
      const v = bybit.sequence(state, s)
      state = v.state
      verdicts.push(v.verdict === 'gap' ? `gap ${v.afterId}..${v.beforeId}` : v.verdict)
    }
  }
  t.same(verdicts, ['snapshot', 'next', 'next', 'stale', 'gap 502..506', 'snapshot', 'next', 'snapshot', 'next'])
})

t.test('connect: subscription, acknowledgement, keep-alive, resync', async (t) => {
  const plan = bybit.connect('book', ['BTCUSDT', 'ETHUSDT'])
  t.equal(plan.url, 'wss://stream.bybit.com/v5/public/linear')
  t.same(plan.send, ['{"req_id":"1","op":"subscribe","args":["orderbook.200.BTCUSDT","orderbook.200.ETHUSDT"]}'])
  t.same(plan.keepAlive, { everyMs: 20_000, text: '{"op":"ping"}' }, 'the heartbeat every 20 s, as recommended')
  t.equal(BYBIT_PING_INTERVAL_MS, 20_000)
  t.equal(plan.silenceMs, undefined, 'the pongs keep every connection busy')
  const answer = (text: string) => plan.answers(enc.encode(text))
  t.equal(answer(PONG_LINEAR), null, 'a pong')
  t.equal(answer(SNAPSHOT), null, 'market data')
  t.equal(answer(UNSUBSCRIBED), null)
  t.equal(answer('{"op":"subscribe"'), null, 'not JSON')
  t.equal(plan.answers(Uint8Array.of(0xff, 0xfe)), null, 'not UTF-8')
  t.equal(answer(SUBSCRIBED_SPOT), null, 'a reply to another request id')
  t.equal(answer(SUBSCRIBED_LINEAR), 'subscribed', 'a success reply (the request id echoed empty)')
  t.equal(bybit.connect('book', ['BTCUSDT']).answers(enc.encode(SUBSCRIBED_LINEAR.replace('"req_id":""', '"req_id":"1"'))), 'subscribed', 'its request id echoed')
  t.equal(bybit.connect('book', ['BTCUSDT']).answers(enc.encode(REFUSED)), 'refused', 'a failed reply')
  t.same(plan.resync!('BTCUSDT'), [
    '{"req_id":"resync-unsubscribe","op":"unsubscribe","args":["orderbook.200.BTCUSDT"]}',
    '{"req_id":"resync-subscribe","op":"subscribe","args":["orderbook.200.BTCUSDT"]}',
  ], 'unsubscribe and subscribe again: the venue sends a snapshot on subscription')

  // Ten args a request (spot's limit, kept in every category); subscribed when every request is answered.
  const symbols = Array.from({ length: 23 }, (_, i) => `SYM${i}USDT`)
  const many = bybitSpot.connect('trades', symbols)
  t.equal(BYBIT_ARGS_PER_REQUEST, 10)
  t.equal(many.url, 'wss://stream.bybit.com/v5/public/spot')
  t.same(many.send.map((s) => JSON.parse(s) as { req_id: string; args: string[] }).map((r) => [r.req_id, r.args.length]), [['1', 10], ['2', 10], ['3', 3]])
  t.same(JSON.parse(many.send[2]!).args, ['publicTrade.SYM20USDT', 'publicTrade.SYM21USDT', 'publicTrade.SYM22USDT'])
  const ack = (id: string) => many.answers(enc.encode(SUBSCRIBED_SPOT.replace('"req_id":"10001"', `"req_id":"${id}"`)))
  t.equal(ack('1'), null, 'one of three')
  t.equal(ack('2'), null, 'two of three')
  t.equal(ack('3'), 'subscribed', 'all three')
  const partly = bybitSpot.connect('trades', symbols)
  t.equal(partly.answers(enc.encode(SUBSCRIBED_SPOT.replace('"req_id":"10001"', '"req_id":"1"'))), null)
  t.equal(partly.answers(enc.encode(REFUSED.replace('"req_id":"1"', '"req_id":"2"'))), 'refused', 'a failure of any request refuses the subscription')

  t.same(bybit.connect('trades', ['BTCUSDT']).send, ['{"req_id":"1","op":"subscribe","args":["publicTrade.BTCUSDT"]}'])
  t.equal(bybit.connect('trades', ['BTCUSDT']).resync, undefined, 'only books resync')
  t.same(bybit.connect('funding', ['BTCUSDT']).send, ['{"req_id":"1","op":"subscribe","args":["tickers.BTCUSDT"]}'])
  t.same(bybit.connect('liquidations', ['ROSEUSDT']).send, ['{"req_id":"1","op":"subscribe","args":["allLiquidation.ROSEUSDT"]}'])
  t.same(bybitInverse.connect('book', ['BTCUSD']).url, 'wss://stream.bybit.com/v5/public/inverse')
  t.same(createBybitAdapter({ depth: 1000 }).connect('book', ['BTCUSDT']).send, ['{"req_id":"1","op":"subscribe","args":["orderbook.1000.BTCUSDT"]}'])
  for (const channel of CHANNELS) t.same(bybit.connect(channel, ['BTCUSDT']).keepAlive, { everyMs: 20_000, text: '{"op":"ping"}' }, `${channel}: pings`)

  t.throws(() => bybit.connect('trades', []), RangeError)
  t.throws(() => bybit.connect('trades', ['']), RangeError)
  t.equal(BYBIT_MAX_ARGS_CHARS, 21_000)
  t.throws(() => bybit.connect('book', Array.from({ length: 1000 }, (_, i) => `INSTRUMENT${i}USDT`)), /21000 characters/, 'args over 21,000 characters')
  t.equal(createBybitAdapter({ wsBase: 'ws://127.0.0.1:9/' }).connect('book', ['BTCUSDT']).url, 'ws://127.0.0.1:9/v5/public/linear', 'at the base it is given')
  t.equal(bybit.snapshotRequest('book', 'BTCUSDT'), null, 'the orderbook stream sends its own snapshot')
  t.throws(() => bybit.wrapSnapshot('book', 'BTCUSDT', '{}'), RangeError)
})

import t, { type Test } from 'tap'
import { utcTimeNs } from '../src/venues/frame-fields.js'
import type { Channel } from '../src/formats/record/types.js'
import type { FrameClass, SequenceSpan, SequenceState } from '../src/venues/adapter.js'
import { COINBASE_CONNECTION_WIDE, coinbase, coinbaseSequence, createCoinbaseAdapter } from '../src/venues/coinbase.js'

const enc = new TextEncoder()
const classify = (channel: Channel, text: string): FrameClass => coinbase.classify(channel, enc.encode(text), false)

/** ns since the epoch of `iso` (whole seconds, Z) plus `nanos`. */
const at = (iso: string, nanos: bigint): bigint => BigInt(Date.parse(iso)) * 1_000_000n + nanos

function unrep(t: Test, c: FrameClass, code: string, re: RegExp, msg: string): void {
  t.match(c, { kind: 'unrepresentable', code, reason: re }, msg)
}

const span = (sequence: 'trades' | 'book', n: bigint): SequenceSpan => ({ sequence, instrument: '*', first: n, last: n, snapshot: false })

// Advanced Trade docs, WebSocket Channels › Heartbeats Channel, "Heartbeats Message".
const HEARTBEAT = '{"channel":"heartbeats","client_id":"","timestamp":"2023-06-23T20:31:26.122969572Z","sequence_num":0,"events":[' +
  '{"current_time":"2023-06-23 20:31:56.121961769 +0000 UTC m=+91717.525857105","heartbeat_counter":"3049"}]}'
// WebSocket Channels › Market Trades Channel, "Market Trades Message".
const TRADES = '{"channel":"market_trades","client_id":"","timestamp":"2023-02-09T20:19:35.39625135Z","sequence_num":0,"events":[{"type":"snapshot","trades":[' +
  '{"trade_id":"000000000","product_id":"ETH-USD","price":"1260.01","size":"0.3","side":"BUY","time":"2019-08-14T20:42:27.265Z"}]}]}'
// WebSocket Channels › Level2 Channel, "Example".
const L2_SNAPSHOT = '{"channel":"l2_data","client_id":"","timestamp":"2023-02-09T20:32:50.714964855Z","sequence_num":0,"events":[{"type":"snapshot","product_id":"BTC-USD","updates":[' +
  '{"side":"bid","event_time":"1970-01-01T00:00:00Z","price_level":"21921.73","new_quantity":"0.06317902"},' +
  '{"side":"bid","event_time":"1970-01-01T00:00:00Z","price_level":"21921.3","new_quantity":"0.02"}]}]}'
// The documentation shows no update: written from the Level2 Channel's field description (type "update", side
// bid/offer, new_quantity the new size, "0" removing the level), in the example's form.
const L2_UPDATE = '{"channel":"l2_data","client_id":"","timestamp":"2023-02-09T20:32:51.001Z","sequence_num":7,"events":[{"type":"update","product_id":"BTC-USD","updates":[' +
  '{"side":"offer","event_time":"2023-02-09T20:32:50.999123456Z","price_level":"21925.01","new_quantity":"0"},' +
  '{"side":"bid","event_time":"2023-02-09T20:32:50.998Z","price_level":"21921.73","new_quantity":"0.1"}]}]}'
// Not shown by the documentation ("subscriptions" replies subscribe and unsubscribe): the object maps each
// channel of the connection to its products.
const SUBSCRIPTIONS = (subs: string, seq = 1): string =>
  `{"channel":"subscriptions","client_id":"","timestamp":"2023-02-09T20:32:50.5Z","sequence_num":${seq},"events":[{"subscriptions":${subs}}]}`
// Not shown by the Advanced Trade documentation: Coinbase Exchange's error form.
const ERROR = '{"type":"error","message":"Failed to subscribe","reason":"ETH-XYZ is not a valid product"}'

t.test('the adapter', async (t) => {
  t.equal(coinbase.name, 'coinbase')
  t.same(coinbase.channels, ['trades', 'book'], 'spot: no funding, no liquidations')
  t.equal(coinbase.books, undefined, 'no checksum to recompute')
  t.equal(coinbase.about!.checksum, null)
  t.same(Object.keys(coinbase.about!.channels), ['trades', 'book'])
  t.match(coinbase.about!.channels.trades!, { streams: /market_trades.*heartbeats/, sequence: /sequence_num.*"\*".*maker/ })
  t.match(coinbase.about!.channels.book!, { streams: /level2.*heartbeats/, sequence: /connection-wide/ })
  t.same(coinbase.about!.endpoints, ['wss://advanced-trade-ws.coinbase.com'])
  t.same(createCoinbaseAdapter({ wsBase: 'ws://127.0.0.1:9' }).about!.endpoints, ['ws://127.0.0.1:9'])
  t.equal(COINBASE_CONNECTION_WIDE, '*')
  t.throws(() => classify('funding', HEARTBEAT), RangeError, 'no funding on spot')
  t.throws(() => coinbase.connect('liquidations', ['BTC-USD']), RangeError)
  t.throws(() => coinbase.snapshotRequest('funding', 'BTC-USD'), RangeError)
})

t.test('market_trades -> one trades row per trade, exactly as written, the maker side as the venue writes it', async (t) => {
  const t1 = at('2019-08-14T20:42:27Z', 265_000_000n)
  t.same(classify('trades', TRADES), {
    kind: 'rows',
    table: 'trades',
    rows: [{ instrument: 'ETH-USD', trade_id: '000000000', side: 'BUY', price: '1260.01', size: '0.3', exchange_time: t1 }],
    exchangeTime: t1,
    sequences: [{ sequence: 'trades', instrument: '*', first: 0n, last: 0n, snapshot: false }],
  }, 'trade_id with its leading zeros, side upper case, not inverted')
  const two = TRADES.replace('"sequence_num":0', '"sequence_num":41').replace('"type":"snapshot"', '"type":"update"').replace(']}]}',
    ',{"trade_id":"12","product_id":"BTC-USD","price":"64000.5","size":"0.00000001","side":"SELL","time":"2019-08-14T20:42:27.264999999Z"}]},' +
    '{"type":"update","trades":[{"trade_id":"13","product_id":"BTC-USD","price":"64000.50","size":"1.000","side":"BUY","time":"2019-08-14T20:42:28Z"}]}]}')
  const c = classify('trades', two)
  t.equal(c.kind, 'rows')
  if (c.kind !== 'rows') return
  t.same(c.rows.map((r) => [r.instrument, r.trade_id, r.side, r.price, r.size]), [
    ['ETH-USD', '000000000', 'BUY', '1260.01', '0.3'],
    ['BTC-USD', '12', 'SELL', '64000.5', '0.00000001'],
    ['BTC-USD', '13', 'BUY', '64000.50', '1.000'],
  ], 'every trade of every event, in order, trailing zeros kept')
  t.same(c.rows.map((r) => r.exchange_time), [t1, t1 - 1n, at('2019-08-14T20:42:28Z', 0n)], 'each row its own trade time')
  t.equal(c.exchangeTime, t1 - 1n, 'the frame the earliest, wherever it stands')
  t.same(c.sequences, [span('trades', 41n)], 'one span for the message, whatever its trades: no trade-id spans')
  t.same(classify('trades', TRADES.replace(/"trades":\[.*\]\}\]\}$/, '"trades":[]}]}')), { kind: 'rows', table: 'trades', rows: [], exchangeTime: null, sequences: [span('trades', 0n)] }, 'an event of no trades')
  t.same(classify('trades', TRADES.replace(/"events":\[.*\]\}$/, '"events":[]}')), { kind: 'rows', table: 'trades', rows: [], exchangeTime: null, sequences: [span('trades', 0n)] }, 'a message of no events')
  t.equal(classify('trades', TRADES.replace(',"client_id":""', '')).kind, 'rows', 'no client_id (the feed sends none, says the AsyncAPI)')
  t.equal(classify('trades', TRADES.replace('{"trade_id"', '{"extra":[1],"trade_id"')).kind, 'rows', 'unknown fields are ignored')
  const big = classify('trades', TRADES.replace('"sequence_num":0', '"sequence_num":9007199254740993'))
  t.same(big.kind === 'rows' && big.sequences, [span('trades', 9007199254740993n)], 'sequence numbers beyond 2^53 exactly')
})

t.test('a plain market_trades message read without its JSON tree gives what the general reading gives', async (t) => {
  // A space before the last brace is still the same JSON, and never the plain form: the general path reads it.
  const general = (text: string) => classify('trades', text.slice(0, -1) + ' }')
  const entry = '{"trade_id":"000000000","product_id":"ETH-USD","price":"1260.01","size":"0.3","side":"BUY","time":"2019-08-14T20:42:27.265Z"}'
  const swap = (from: string, to: string) => TRADES.replace(from, to)
  const cases = [
    TRADES, TRADES.replace(entry, `${entry},${entry.replace('"000000000"', '"000000001"').replace('.265Z', '.264Z').replace('"BUY"', '"SELL"')}`),
    swap('"type":"snapshot"', '"type":"update"'), swap('"sequence_num":0', '"sequence_num":18446744073709551616'),
    swap('"price":"1260.01"', '"price":"1e3"'), swap('"price":"1260.01"', '"price":"123456789012345678901"'), swap('"size":"0.3"', '"size":"0.0000000000000000001"'),
    swap('"price":"1260.01"', '"price":""'), swap('"side":"BUY"', '"side":"buy"'), swap('"trade_id":"000000000"', '"trade_id":""'),
    swap('.265Z', '.2650000000Z'), swap('.265Z', '.2650000001Z'), swap('2019-08-14T20:42:27.265Z', '1600-01-01T00:00:00Z'), swap('.265Z', 'Z'),
    swap('"type":"snapshot"', '"type":"other"'), swap('"price":"1260.01"', '"price":1260.01'), swap('"sequence_num":0', '"sequence_num":-1'),
    swap(',"size":"0.3"', ''), swap('"trades":[', '"trades":[]}],"x":[{"trades":['), swap('"events":[', '"events":[{"type":"update","trades":[]},'),
    swap('"client_id":""', '"client_id":"a\\"b"'),
  ]
  for (const text of cases) t.same(classify('trades', text), general(text), text.slice(90, 230))
  t.match(classify('trades', TRADES), { kind: 'rows', rows: [{ instrument: 'ETH-USD', trade_id: '000000000', side: 'BUY', price: '1260.01', size: '0.3' }], sequences: [{ first: 0n }] })
})

t.test('level2 snapshot -> book_snapshots, update -> book_deltas; offer is ask; a quantity of "0" kept', async (t) => {
  t.same(classify('book', L2_SNAPSHOT), {
    kind: 'rows',
    table: 'book_snapshots',
    rows: [
      { instrument: 'BTC-USD', trade_id: null, side: 'bid', price: '21921.73', size: '0.06317902', exchange_time: 0n },
      { instrument: 'BTC-USD', trade_id: null, side: 'bid', price: '21921.3', size: '0.02', exchange_time: 0n },
    ],
    exchangeTime: 0n,
    sequences: [{ sequence: 'book', instrument: '*', first: 0n, last: 0n, snapshot: false }],
  }, 'the example\'s event_time 1970-01-01T00:00:00Z is recorded as stated')
  const u1 = at('2023-02-09T20:32:50Z', 999_123_456n)
  const u2 = at('2023-02-09T20:32:50Z', 998_000_000n)
  t.same(classify('book', L2_UPDATE), {
    kind: 'rows',
    table: 'book_deltas',
    rows: [
      { instrument: 'BTC-USD', trade_id: null, side: 'ask', price: '21925.01', size: '0', exchange_time: u1 },
      { instrument: 'BTC-USD', trade_id: null, side: 'bid', price: '21921.73', size: '0.1', exchange_time: u2 },
    ],
    exchangeTime: u2,
    sequences: [span('book', 7n)],
  }, 'in the order sent, each level its own event_time, the frame the earliest')
  const two = classify('book', L2_UPDATE.replace(']}]}', ']},{"type":"update","product_id":"ETH-USD","updates":[{"side":"offer","event_time":"2023-02-09T20:32:51Z","price_level":"1600.00","new_quantity":"3"}]}]}'))
  t.match(two, { kind: 'rows', table: 'book_deltas', rows: [{ instrument: 'BTC-USD' }, { instrument: 'BTC-USD' }, { instrument: 'ETH-USD', side: 'ask', price: '1600.00', size: '3' }] }, 'several products in one message')
  t.same(classify('book', L2_UPDATE.replace(/"updates":\[.*\]\}\]\}$/, '"updates":[]}]}')), { kind: 'rows', table: 'book_deltas', rows: [], exchangeTime: null, sequences: [span('book', 7n)] }, 'an update of no level')
  unrep(t, classify('book', L2_UPDATE.replace(']}]}', ']},{"type":"snapshot","product_id":"ETH-USD","updates":[]}]}')), 'structure', /a snapshot in a message of updates/, 'a mix of snapshot and update')
  unrep(t, classify('book', L2_SNAPSHOT.replace(/"events":\[.*\]\}$/, '"events":[]}')), 'structure', /events is empty/, 'no event: no table')
})

t.test('heartbeats and subscriptions carry no rows, but their sequence number counts', async (t) => {
  t.same(classify('book', HEARTBEAT), { kind: 'data', exchangeTime: null, sequences: [span('book', 0n)] }, 'the documentation\'s heartbeat')
  t.same(classify('trades', HEARTBEAT.replace('"heartbeat_counter":"3049"', '"heartbeat_counter":3049').replace('"sequence_num":0', '"sequence_num":5')),
    { kind: 'data', exchangeTime: null, sequences: [span('trades', 5n)] }, 'the counter as a JSON integer (the AsyncAPI\'s word)')
  t.equal(classify('book', HEARTBEAT.replace(/"current_time":"[^"]*",/, '')).kind, 'data', 'current_time is not read')
  t.same(classify('book', SUBSCRIPTIONS('{"level2":["BTC-USD","ETH-USD"],"heartbeats":["heartbeats"]}', 3)), { kind: 'data', exchangeTime: null, sequences: [span('book', 3n)] })
  t.same(classify('trades', SUBSCRIPTIONS('{}', 4)), { kind: 'data', exchangeTime: null, sequences: [span('trades', 4n)] }, 'after the last unsubscribe')
  const badCounter = classify('book', HEARTBEAT.replace('"heartbeat_counter":"3049"', '"heartbeat_counter":"30x"'))
  unrep(t, badCounter, 'structure', /heartbeat_counter is not a non-negative integer/, 'a counter that is no count')
  t.same(badCounter.kind === 'unrepresentable' && badCounter.sequences, [span('book', 0n)], 'still counts for gaps')
  unrep(t, classify('book', HEARTBEAT.replace('"heartbeat_counter":"3049"', '"heartbeat_counter":-1')), 'structure', /heartbeat_counter/, 'a negative counter')
  unrep(t, classify('book', HEARTBEAT.replace(/"events":\[.*\]\}$/, '"events":[]}')), 'structure', /heartbeats: events is empty/, 'a heartbeat of no event')
  unrep(t, classify('book', SUBSCRIPTIONS('[]')), 'structure', /subscriptions is not an object/, 'subscriptions an array')
})

t.test('errors are control frames on both channels', async (t) => {
  t.same(classify('book', ERROR), { kind: 'control', note: 'error: Failed to subscribe: ETH-XYZ is not a valid product' })
  t.same(classify('trades', '{"type":"error"}'), { kind: 'control', note: 'error' })
  t.match(classify('trades', `{"type":"error","message":"${'x'.repeat(500)}"}`), { kind: 'control', note: /^error: x{193}…$/ }, 'a long message is clipped')
})

t.test('malformed and unrepresentable frames yield no rows and a reason', async (t) => {
  unrep(t, coinbase.classify('trades', enc.encode(TRADES), true), 'not-json', /binary frame/, 'binary')
  unrep(t, coinbase.classify('trades', Uint8Array.of(0x7b, 0xff, 0x7d), false), 'not-json', /not UTF-8/, 'not UTF-8')
  unrep(t, classify('trades', TRADES.slice(0, -1)), 'not-json', /not JSON/, 'truncated')
  unrep(t, classify('trades', TRADES.replace('"side":"BUY"', '"side":"BUY","side":"SELL"')), 'not-json', /duplicate key "side"/, 'duplicate key')
  unrep(t, classify('trades', '[1]'), 'structure', /not a JSON object/, 'array')
  unrep(t, classify('trades', '{"type":"subscriptions"}'), 'structure', /channel is missing/, 'no channel, no error')
  unrep(t, classify('book', '{"channel":7,"sequence_num":1}'), 'structure', /channel is not a string/, 'channel a number')
  // WebSocket Channels › Ticker Channel, "Ticker message" (trimmed): a channel never subscribed.
  const ticker = classify('trades', '{"channel":"ticker","client_id":"","timestamp":"2023-02-09T20:30:37.167359596Z","sequence_num":0,"events":[{"type":"snapshot","tickers":[{"type":"ticker","product_id":"BTC-USD","price":"21932.98"}]}]}')
  unrep(t, ticker, 'structure', /Coinbase channel "ticker"/, 'another channel')
  t.same(ticker.kind === 'unrepresentable' && ticker.sequences, [span('trades', 0n)], 'its number still counts')
  unrep(t, classify('book', TRADES), 'structure', /market_trades message on channel book/, 'a trade on the book connection')
  unrep(t, classify('trades', L2_SNAPSHOT), 'structure', /l2_data message on channel trades/, 'a book on the trades connection')

  // The envelope.
  const noSeq = classify('trades', TRADES.replace('"sequence_num":0,', ''))
  unrep(t, noSeq, 'structure', /sequence_num is missing/, 'no sequence_num')
  t.equal(noSeq.kind === 'unrepresentable' ? noSeq.sequences : 'rows', undefined, 'no span when the number did not parse')
  unrep(t, classify('trades', TRADES.replace('"sequence_num":0', '"sequence_num":-1')), 'structure', /sequence_num is not a non-negative integer/, 'negative')
  unrep(t, classify('trades', TRADES.replace('"sequence_num":0', '"sequence_num":1.0')), 'structure', /sequence_num is not a non-negative integer/, 'with a fraction')
  unrep(t, classify('trades', TRADES.replace('"sequence_num":0', '"sequence_num":"0"')), 'structure', /sequence_num is not a non-negative integer/, 'a string')
  unrep(t, classify('trades', TRADES.replace('"timestamp":"2023-02-09T20:19:35.39625135Z",', '')), 'structure', /timestamp is missing/, 'no timestamp')
  unrep(t, classify('trades', TRADES.replace(/"events":\[.*\]\}$/, '"events":{}}')), 'structure', /events is not an array/, 'events an object')
  unrep(t, classify('trades', TRADES.replace('"events":[', '"events":[1,')), 'structure', /events\[0\] is not an object/, 'an event that is no object')

  // Trades.
  const tr = (from: string, to: string): FrameClass => classify('trades', TRADES.replace(from, to))
  unrep(t, tr('"type":"snapshot"', '"type":"delta"'), 'structure', /type "delta"/, 'unknown event type')
  unrep(t, tr('"type":"snapshot",', ''), 'structure', /type is missing/, 'no event type')
  unrep(t, classify('trades', TRADES.replace(/"trades":\[.*\]\}\]\}$/, '"trades":{}}]}')), 'structure', /trades is not an array/, 'trades an object')
  unrep(t, tr('"side":"BUY"', '"side":"buy"'), 'structure', /side "buy" is neither "BUY" nor "SELL"/, 'side in lower case')
  unrep(t, tr('"side":"BUY"', '"side":"UNKNOWN_ORDER_SIDE"'), 'structure', /side "UNKNOWN_ORDER_SIDE"/, 'another side')
  unrep(t, tr('"side":"BUY",', ''), 'structure', /side is missing/, 'no side')
  unrep(t, tr('"trade_id":"000000000"', '"trade_id":0'), 'structure', /trade_id is not a string/, 'trade id a number')
  unrep(t, tr('"trade_id":"000000000"', '"trade_id":""'), 'structure', /trade_id is empty/, 'empty trade id')
  unrep(t, tr('"product_id":"ETH-USD"', '"product_id":""'), 'structure', /product_id is empty/, 'empty product')
  unrep(t, tr('"price":"1260.01"', '"price":1260.01'), 'structure', /price is not a string/, 'price a number')
  unrep(t, tr('"price":"1260.01"', '"price":"1.26001e3"'), 'decimal', /price "1\.26001e3" is not a decimal/, 'an exponent')
  unrep(t, tr('"size":"0.3"', '"size":"0.3000000000000000001"'), 'decimal', /size .* DECIMAL\(38, 18\)/, '19 fractional digits')
  unrep(t, tr('"size":"0.3"', '"size":"100000000000000000000"'), 'decimal', /size/, '10^20')
  unrep(t, tr('"size":"0.3"', '"size":""'), 'decimal', /size "" is not a decimal/, 'empty size')
  unrep(t, tr('"time":"2019-08-14T20:42:27.265Z"', '"time":"2019-08-14 20:42:27.265Z"'), 'structure', /time .* not an RFC 3339 UTC time/, 'space for T')
  unrep(t, tr('"time":"2019-08-14T20:42:27.265Z"', '"time":"2019-08-14T20:42:27.265+00:00"'), 'structure', /not an RFC 3339 UTC time/, 'an offset')
  unrep(t, tr('"time":"2019-08-14T20:42:27.265Z"', '"time":"2019-02-30T20:42:27.265Z"'), 'structure', /not a valid time/, '30 February')
  unrep(t, tr('"time":"2019-08-14T20:42:27.265Z"', '"time":"2300-01-01T00:00:00Z"'), 'time', /does not fit int64 nanoseconds/, 'year 2300')
  unrep(t, tr('"time":"2019-08-14T20:42:27.265Z"', '"time":"2019-08-14T20:42:27.2650000001Z"'), 'time', /finer than a nanosecond/, 'ten fraction digits')
  unrep(t, tr('"time":"2019-08-14T20:42:27.265Z"', '"time":1565815347265'), 'structure', /time is not a string/, 'milliseconds as a number')

  // Level2.
  const l2 = (from: string, to: string): FrameClass => classify('book', L2_UPDATE.replace(from, to))
  unrep(t, l2('"side":"offer"', '"side":"ask"'), 'structure', /side "ask" is neither "bid" nor "offer"/, 'ask is not the venue\'s word')
  unrep(t, l2('"product_id":"BTC-USD",', ''), 'structure', /product_id is missing/, 'no product')
  unrep(t, l2('"type":"update"', '"type":"l2update"'), 'structure', /type "l2update"/, 'Coinbase Exchange\'s type')
  unrep(t, l2('"new_quantity":"0"', '"new_quantity":0'), 'structure', /new_quantity is not a string/, 'quantity a number')
  unrep(t, l2('"price_level":"21925.01"', '"price_level":"21925.01.5"'), 'decimal', /price_level/, 'two points')
  unrep(t, l2('"event_time":"2023-02-09T20:32:50.998Z",', ''), 'structure', /event_time is missing/, 'no event_time')
  unrep(t, classify('book', L2_UPDATE.replace(/"updates":\[.*\]\}\]\}$/, '"updates":null}]}')), 'structure', /updates is not an array/, 'updates null')
})

t.test('an unrepresentable message still states its place in the connection\'s sequence', async (t) => {
  const c = classify('book', L2_UPDATE.replace('"new_quantity":"0.1"', '"new_quantity":"0.10000000000000000001"'))
  t.match(c, { kind: 'unrepresentable', code: 'decimal' })
  t.same(c.kind === 'unrepresentable' && c.sequences, [span('book', 7n)])
  const d = classify('trades', TRADES.replace('"sequence_num":0', '"sequence_num":12').replace('"side":"BUY"', '"side":"?"'))
  t.same(d.kind === 'unrepresentable' && d.sequences, [span('trades', 12n)])
})

t.test('sequence rule: sequence_num + 1 per message of the connection, whatever its channel or product', async (t) => {
  t.equal(coinbase.sequence, coinbaseSequence)
  const s0 = coinbaseSequence(undefined, span('book', 10n))
  t.same(s0, { verdict: 'start', state: { last: 10n, streamFirst: 10n } })
  const s1 = coinbaseSequence(s0.state, span('book', 11n))
  t.same(s1, { verdict: 'next', state: { last: 11n, streamFirst: 10n } })
  t.same(coinbaseSequence(s1.state, span('book', 14n)), { verdict: 'gap', afterId: '11', beforeId: '14', state: { last: 14n, streamFirst: 10n } }, 'messages 12 and 13 lost')
  const stale = coinbaseSequence(s1.state, span('book', 11n))
  t.equal(stale.verdict, 'stale', 'a number already seen "can be ignored"')
  t.equal(stale.state, s1.state)
  t.equal(coinbaseSequence(s1.state, span('book', 3n)).verdict, 'stale', 'a lower number')
  t.equal(coinbaseSequence(s0.state, span('trades', 11n)).verdict, 'next', 'the same rule on the trades connection')

  // One connection's frames, classified and judged in order: a subscriptions reply, a snapshot, heartbeats and
  // updates share one count; the span of every frame is the connection's ("*"), never a product's.
  const frames = [
    SUBSCRIPTIONS('{"level2":["BTC-USD","ETH-USD"]}', 0),
    L2_SNAPSHOT.replace('"sequence_num":0', '"sequence_num":1'),
    SUBSCRIPTIONS('{"heartbeats":["heartbeats"],"level2":["BTC-USD","ETH-USD"]}', 2),
    HEARTBEAT.replace('"sequence_num":0', '"sequence_num":3'),
    L2_UPDATE.replace('"sequence_num":7', '"sequence_num":4').replace(/"product_id":"BTC-USD"/, '"product_id":"ETH-USD"'),
    L2_UPDATE.replace('"sequence_num":7', '"sequence_num":5'),
    HEARTBEAT.replace('"sequence_num":0', '"sequence_num":7'), // 6 lost: of which product, the count cannot say
    L2_UPDATE.replace('"sequence_num":7', '"sequence_num":8').replace('"side":"offer"', '"side":"?"'), // unrepresentable, still counted
    L2_UPDATE.replace('"sequence_num":7', '"sequence_num":9'),
    HEARTBEAT.replace('"sequence_num":0', '"sequence_num":9'), // a repeat
  ]
  let state: SequenceState | undefined
  const verdicts: string[] = []
  for (const text of frames) {
    const c = classify('book', text)
    const spans = c.kind === 'control' ? [] : c.kind === 'unrepresentable' ? (c.sequences ?? []) : c.sequences
    t.equal(spans.length, 1, 'one span a message')
    for (const s of spans) {
      t.equal(s.instrument, '*')
      const v = coinbaseSequence(state, s)
      state = v.state
      verdicts.push(v.verdict === 'gap' ? `gap ${v.afterId}..${v.beforeId}` : v.verdict)
    }
  }
  t.same(verdicts, ['start', 'next', 'next', 'next', 'next', 'next', 'gap 5..7', 'next', 'next', 'stale'])
  t.same(classify('book', ERROR), { kind: 'control', note: 'error: Failed to subscribe: ETH-XYZ is not a valid product' }, 'an error states no number')
})

t.test('times', async (t) => {
  t.equal(utcTimeNs('2023-02-09T20:32:50.714964855Z'), at('2023-02-09T20:32:50Z', 714_964_855n), 'nine digits')
  t.equal(utcTimeNs('2023-02-09T20:19:35.39625135Z'), at('2023-02-09T20:19:35Z', 396_251_350n), 'eight digits')
  t.equal(utcTimeNs('2019-08-14T20:42:27.265Z'), at('2019-08-14T20:42:27Z', 265_000_000n), 'three digits')
  t.equal(utcTimeNs('1970-01-01T00:00:00Z'), 0n, 'no fraction')
  t.equal(utcTimeNs('2019-08-14T20:42:27.2650000000Z'), at('2019-08-14T20:42:27Z', 265_000_000n), 'a tenth digit that is zero')
  t.match(utcTimeNs('2019-08-14t20:42:27Z'), { code: 'structure' })
  t.match(utcTimeNs('2019-08-14T20:42:27.Z'), { code: 'structure' })
  t.match(utcTimeNs('2023-06-23 20:31:56.121961769 +0000 UTC m=+91717.525857105'), { code: 'structure' }, 'the heartbeat\'s current_time is no RFC 3339 time')
  t.match(utcTimeNs('1600-01-01T00:00:00Z'), { code: 'time' })
})

t.test('connect: subscribe requests, answers, resync', async (t) => {
  // WebSocket Authentication › Sending Messages without API Keys, "Subscribing" (level2, ETH-USD and ETH-EUR),
  // and the WebSockets guide's heartbeats subscription.
  const book = coinbase.connect('book', ['ETH-USD', 'ETH-EUR'])
  t.equal(book.url, 'wss://advanced-trade-ws.coinbase.com')
  t.same(book.send, [
    '{"type":"subscribe","product_ids":["ETH-USD","ETH-EUR"],"channel":"level2"}',
    '{"type":"subscribe","channel":"heartbeats"}',
  ], 'the data channel, then heartbeats: one channel a message, no JWT')
  t.equal(book.keepAlive, undefined, 'no client ping: heartbeats keep the connection open')
  t.equal(book.respond, undefined)
  t.equal(book.silenceMs, undefined, 'a heartbeat every second: the recorder\'s stall time holds')
  const answer = (text: string) => book.answers(enc.encode(text))
  t.equal(answer(SUBSCRIPTIONS('{"level2":["ETH-USD","ETH-EUR"]}')), 'subscribed')
  t.equal(answer(SUBSCRIPTIONS('{"heartbeats":["heartbeats"],"level2":["ETH-USD","ETH-EUR"]}')), 'subscribed', 'with heartbeats')
  t.equal(answer(SUBSCRIPTIONS('{"heartbeats":["heartbeats"]}')), null, 'heartbeats alone')
  t.equal(answer(SUBSCRIPTIONS('{"market_trades":["ETH-USD"]}')), null, 'another channel')
  t.equal(answer(SUBSCRIPTIONS('{}')), null, 'nothing subscribed')
  t.equal(answer(ERROR), 'refused')
  t.equal(answer('{"type":"error","message":"failure"}'), 'refused')
  t.equal(answer(L2_SNAPSHOT), null, 'market data')
  t.equal(answer(HEARTBEAT), null)
  t.equal(answer(SUBSCRIPTIONS('{"level2":["ETH-USD"]}').slice(0, -1)), null, 'not JSON')
  t.equal(book.answers(Uint8Array.of(0xff, 0xfe)), null, 'not UTF-8')
  t.equal(book.answers(enc.encode(SUBSCRIPTIONS(`{"level2":[${'"X-USD",'.repeat(40_000)}"ETH-USD"]}`))), null, 'beyond 256 KiB a frame is not read as an answer')
  t.same(book.resync!('ETH-EUR'), [
    '{"type":"unsubscribe","product_ids":["ETH-EUR"],"channel":"level2"}',
    '{"type":"subscribe","product_ids":["ETH-EUR"],"channel":"level2"}',
  ], 'unsubscribe and subscribe again: a level2 subscription starts with a snapshot')

  // WebSocket Channels › Market Trades Channel, "Request" (without the JWT).
  const trades = coinbase.connect('trades', ['ETH-USD', 'BTC-USD'])
  t.same(trades.send, ['{"type":"subscribe","product_ids":["ETH-USD","BTC-USD"],"channel":"market_trades"}', '{"type":"subscribe","channel":"heartbeats"}'])
  t.equal(trades.resync, undefined, 'trades have no book to resync')
  t.equal(trades.answers(enc.encode(SUBSCRIPTIONS('{"market_trades":["ETH-USD","BTC-USD"]}'))), 'subscribed')
  t.equal(trades.answers(enc.encode(SUBSCRIPTIONS('{"level2":["ETH-USD"]}'))), null)
  t.equal(trades.answers(enc.encode(ERROR)), 'refused')

  t.equal(createCoinbaseAdapter({ wsBase: 'ws://127.0.0.1:9/' }).connect('book', ['BTC-USD']).url, 'ws://127.0.0.1:9/', 'at the URL it is given')
  t.throws(() => coinbase.connect('trades', []), RangeError)
  t.throws(() => coinbase.connect('trades', ['']), RangeError)
  t.equal(coinbase.snapshotRequest('book', 'BTC-USD'), null, 'the level2 channel sends its own snapshot')
  t.equal(coinbase.snapshotRequest('trades', 'BTC-USD'), null)
  t.throws(() => coinbase.wrapSnapshot('book', 'BTC-USD', '{}'), RangeError)
})

import t, { type Test } from 'tap'
import type { Channel } from '../src/formats/record/types.js'
import { JsonNumber, readJson, type FrameClass, type SequenceSpan, type SequenceState } from '../src/venues/adapter.js'
import {
  binanceBookSequence, binanceSequence, binanceSpot, binanceTradeSequence, createBinanceSpotAdapter, wrapBinanceDepthSnapshot,
} from '../src/venues/binance.js'
import { findVenue, getVenue, venueAt, venueNames } from '../src/venues/index.js'

const enc = new TextEncoder()
const classify = (channel: Channel, text: string): FrameClass => binanceSpot.classify(channel, enc.encode(text), false)
const MS = 1_000_000n

const TRADE = '{"e":"trade","E":1791036000123,"s":"BTCUSDT","t":5123456789,"p":"61234.56000000","q":"0.00120000","T":1791036000122,"m":true,"M":true}'
const DEPTH = '{"e":"depthUpdate","E":1791036000200,"s":"BNBBTC","U":157,"u":160,"b":[["0.0024","10"],["0.0023","0.00000000"]],"a":[["0.0026","100"]]}'
const SNAPSHOT_BODY = '{"lastUpdateId":1027024,"bids":[["4.00000000","431.00000000"],["3.99000000","9.00000000"]],"asks":[["4.00000200","12.00000000"]]}'

/** Assert an unrepresentable class with its code and a reason matching `re`. */
function unrep(t: Test, c: FrameClass, code: string, re: RegExp, msg: string): void {
  t.match(c, { kind: 'unrepresentable', code, reason: re }, msg)
}

t.test('trade frame -> one trades row, exactly as written', async (t) => {
  t.same(classify('trades', TRADE), {
    kind: 'rows',
    table: 'trades',
    rows: [{ instrument: 'BTCUSDT', trade_id: '5123456789', side: 'sell', price: '61234.56000000', size: '0.00120000', exchange_time: 1791036000122n * MS }],
    exchangeTime: 1791036000122n * MS,
    sequences: [{ sequence: 'trades', instrument: 'BTCUSDT', first: 5123456789n, last: 5123456789n, snapshot: false }],
  })
  const buy = classify('trades', TRADE.replace('"m":true', '"m":false'))
  t.equal(buy.kind === 'rows' && buy.rows[0]!.side, 'buy', 'm false: the buyer took liquidity')
  // exchange_time is the earlier of E and T, whichever it is.
  const eFirst = classify('trades', TRADE.replace('"T":1791036000122', '"T":1791036000130'))
  t.equal(eFirst.kind === 'rows' && eFirst.exchangeTime, 1791036000123n * MS)
  // M is documented as "ignore": absent is fine.
  t.equal(classify('trades', TRADE.replace(',"M":true', '')).kind, 'rows')
  // Unknown fields are ignored (they stay in the raw file); whitespace is JSON.
  t.equal(classify('trades', TRADE.replace('{', '{ "X":"extra", ')).kind, 'rows')
  // Ids beyond 2^53 are kept exactly.
  const big = classify('trades', TRADE.replace('"t":5123456789', '"t":9007199254740993'))
  t.equal(big.kind === 'rows' && big.rows[0]!.trade_id, '9007199254740993')
  t.equal(big.kind === 'rows' && big.sequences[0]!.first, 9007199254740993n)
})

t.test('microsecond connections', async (t) => {
  const us = createBinanceSpotAdapter({ timeUnit: 'us' })
  const c = us.classify('trades', enc.encode(TRADE.replace('1791036000123', '1791036000123456').replace('1791036000122', '1791036000122999')), false)
  t.equal(c.kind === 'rows' && c.exchangeTime, 1791036000122999n * 1000n)
  t.match(us.connect('trades', ['BTCUSDT']).url, /timeUnit=microsecond/)
})

t.test('depthUpdate -> book_deltas rows, bids then asks, zero sizes kept', async (t) => {
  const E = 1791036000200n * MS
  t.same(classify('book', DEPTH), {
    kind: 'rows',
    table: 'book_deltas',
    rows: [
      { instrument: 'BNBBTC', trade_id: null, side: 'bid', price: '0.0024', size: '10', exchange_time: E },
      { instrument: 'BNBBTC', trade_id: null, side: 'bid', price: '0.0023', size: '0.00000000', exchange_time: E },
      { instrument: 'BNBBTC', trade_id: null, side: 'ask', price: '0.0026', size: '100', exchange_time: E },
    ],
    exchangeTime: E,
    sequences: [{ sequence: 'book', instrument: 'BNBBTC', first: 157n, last: 160n, snapshot: false }],
  })
  const empty = classify('book', '{"e":"depthUpdate","E":1,"s":"BNBBTC","U":161,"u":161,"b":[],"a":[]}')
  t.equal(empty.kind, 'rows')
  t.same(empty.kind === 'rows' && empty.rows, [])
})

t.test('combined streams are unwrapped and checked against the event', async (t) => {
  const wrapped = classify('trades', `{"stream":"btcusdt@trade","data":${TRADE}}`)
  t.same(wrapped, classify('trades', TRADE))
  t.equal(classify('book', `{"stream":"bnbbtc@depth@100ms","data":${DEPTH}}`).kind, 'rows')
  t.equal(classify('book', `{"stream":"bnbbtc@depth","data":${DEPTH}}`).kind, 'rows')
  unrep(t, classify('trades', `{"stream":"ethusdt@trade","data":${TRADE}}`), 'structure', /does not name btcusdt@trade/, 'other symbol')
  unrep(t, classify('trades', `{"stream":"btcusdt@aggTrade","data":${TRADE}}`), 'structure', /does not name/, 'other stream')
  unrep(t, classify('trades', `{"stream":"btcusdt@trade"}`), 'structure', /data/, 'no data')
  unrep(t, classify('trades', `{"stream":1,"data":${TRADE}}`), 'structure', /stream/, 'stream not a string')
})

t.test('responses are control frames', async (t) => {
  t.same(classify('trades', '{"result":null,"id":1}'), { kind: 'control', note: 'request acknowledged' })
  t.same(classify('book', '{"result":["btcusdt@depth@100ms"],"id":3}'), { kind: 'control', note: 'request result' })
  const err = classify('trades', '{"error":{"code":2,"msg":"Invalid request: unknown variant"},"id":1}')
  t.equal(err.kind, 'control')
  t.match(err.kind === 'control' && err.note, /^error response/)
})

t.test('serverShutdown is a control frame that asks for the successor, in each shape it may come in', async (t) => {
  const shutdown = { kind: 'control', note: 'serverShutdown: the venue will close this connection', closing: true }
  for (const channel of ['trades', 'book'] as const) {
    t.same(classify(channel, '{"event":{"e":"serverShutdown","E":1770123456789}}'), shutdown, `${channel}: as the WebSocket API documents it`)
    t.same(classify(channel, '{"e":"serverShutdown","E":1770123456789}'), shutdown, `${channel}: bare`)
    t.same(classify(channel, '{"stream":"btcusdt@trade","data":{"e":"serverShutdown","E":1770123456789}}'), shutdown, `${channel}: in a combined-stream wrapper`)
  }
  t.equal(classify('trades', '{"event":{"e":"trade","E":1}}').kind, 'unrepresentable', 'another event under "event" is no notice')
  t.notOk('closing' in classify('trades', '{"result":null,"id":1}'), 'an acknowledgement closes nothing')
})

t.test('REST depth snapshot frame -> book_snapshots rows', async (t) => {
  const frame = wrapBinanceDepthSnapshot('BNBBTC', SNAPSHOT_BODY)
  t.equal(frame, '{"rest":"depth","symbol":"BNBBTC","response":' + SNAPSHOT_BODY + '}', 'the body is embedded verbatim')
  t.equal(binanceSpot.wrapSnapshot('book', 'BNBBTC', SNAPSHOT_BODY), frame)
  t.same(classify('book', frame), {
    kind: 'rows',
    table: 'book_snapshots',
    rows: [
      { instrument: 'BNBBTC', trade_id: null, side: 'bid', price: '4.00000000', size: '431.00000000', exchange_time: null },
      { instrument: 'BNBBTC', trade_id: null, side: 'bid', price: '3.99000000', size: '9.00000000', exchange_time: null },
      { instrument: 'BNBBTC', trade_id: null, side: 'ask', price: '4.00000200', size: '12.00000000', exchange_time: null },
    ],
    exchangeTime: null,
    sequences: [{ sequence: 'book', instrument: 'BNBBTC', first: 1027024n, last: 1027024n, snapshot: true }],
  })
  // A body with whitespace and a newline, as an HTTP body may carry, is still the same snapshot.
  t.equal(classify('book', wrapBinanceDepthSnapshot('BNBBTC', SNAPSHOT_BODY.replace(',', ', ') + '\n')).kind, 'rows')
  unrep(t, classify('trades', frame), 'structure', /REST snapshot frame on channel trades/, 'on trades')
  unrep(t, classify('book', frame.replace('"rest":"depth"', '"rest":"trades"')), 'structure', /rest is not "depth"/, 'other rest')
  unrep(t, classify('book', frame.replace('"symbol":"BNBBTC",', '')), 'structure', /symbol/, 'no symbol')
  unrep(t, classify('book', frame.replace('{"rest"', '{"x":1,"rest"')), 'structure', /unknown wrapper key/, 'extra key')
  unrep(t, classify('book', wrapBinanceDepthSnapshot('BNBBTC', '{"code":-1121,"msg":"Invalid symbol."}')), 'structure', /lastUpdateId is missing/, 'error body')
  unrep(t, classify('book', wrapBinanceDepthSnapshot('BNBBTC', '<html>')), 'not-json', /not JSON/, 'non-JSON body')
  unrep(t, classify('book', wrapBinanceDepthSnapshot('BNBBTC', SNAPSHOT_BODY.replace('["3.99000000","9.00000000"]', '["3.99000000","9.00000000",[]]'))), 'structure', /bids\[1\]/, 'three-element level')
})

t.test('malformed and unrepresentable frames yield no rows and a reason', async (t) => {
  unrep(t, classify('trades', TRADE.replace('"p":"61234.56000000",', '')), 'structure', /trade: p is missing/, 'missing p')
  unrep(t, classify('trades', TRADE.replace('"p":"61234.56000000"', '"p":61234.56')), 'structure', /trade: p is not a string/, 'p as a number')
  unrep(t, classify('trades', TRADE.replace('"p":"61234.56000000"', '"p":"61234.5600000000000000001"')), 'decimal', /trade: p .* DECIMAL\(38, 18\)/, 'p with 19 fractional digits')
  unrep(t, classify('trades', TRADE.replace('"q":"0.00120000"', '"q":"100000000000000000000"')), 'decimal', /trade: q/, 'q at 10^20')
  unrep(t, classify('trades', TRADE.replace('"p":"61234.56000000"', '"p":"6.123456e4"')), 'decimal', /trade: p/, 'p with an exponent')
  unrep(t, classify('trades', TRADE.replace('"t":5123456789', '"t":5123456789.5')), 'structure', /t is not a non-negative integer/, 't with a fraction')
  unrep(t, classify('trades', TRADE.replace('"t":5123456789', '"t":5.123456789e9')), 'structure', /t is not a non-negative integer/, 't with an exponent')
  unrep(t, classify('trades', TRADE.replace('"t":5123456789', '"t":"5123456789"')), 'structure', /t is not a number/, 't as a string')
  unrep(t, classify('trades', TRADE.replace('"t":5123456789', '"t":-1')), 'structure', /t is not a non-negative integer/, 'negative t')
  unrep(t, classify('trades', TRADE.replace('"m":true', '"m":"true"')), 'structure', /m is not a boolean/, 'm as a string')
  unrep(t, classify('trades', TRADE.replace('"s":"BTCUSDT"', '"s":""')), 'structure', /s is empty/, 'empty symbol')
  unrep(t, classify('trades', TRADE.replace('"E":1791036000123', '"E":9223372036855')), 'time', /does not fit int64/, 'E beyond int64 ns')
  unrep(t, classify('trades', TRADE.replace('"e":"trade"', '"e":"aggTrade"')), 'structure', /"aggTrade" on channel trades/, 'aggTrade')
  unrep(t, classify('trades', DEPTH), 'structure', /"depthUpdate" on channel trades/, 'depth on trades')
  unrep(t, classify('book', TRADE), 'structure', /"trade" on channel book/, 'trade on book')
  unrep(t, classify('trades', TRADE.replace('"M":true', '"M":true,"p":"1"')), 'not-json', /duplicate key "p"/, 'duplicate key')
  unrep(t, classify('trades', TRADE.slice(0, -1)), 'not-json', /not JSON/, 'truncated')
  unrep(t, classify('trades', '\ufeff' + TRADE), 'not-json', /not JSON/, 'BOM')
  unrep(t, classify('trades', '[1,2]'), 'structure', /not a JSON object/, 'array')
  unrep(t, classify('trades', '{"id":1}'), 'structure', /event type e is missing/, 'no type')
  unrep(t, classify('trades', 'pong'), 'not-json', /not JSON/, 'text')
  unrep(t, binanceSpot.classify('trades', enc.encode(TRADE), true), 'not-json', /binary frame/, 'binary')
  unrep(t, binanceSpot.classify('trades', Uint8Array.of(0x7b, 0xff, 0x7d), false), 'not-json', /not UTF-8/, 'invalid UTF-8')
  unrep(t, classify('book', DEPTH.replace('"U":157', '"U":161')), 'structure', /U 161 is after u 160/, 'U after u')
  unrep(t, classify('book', DEPTH.replace('["0.0024","10"]', '["0.0024",10]')), 'structure', /b\[0\] quantity is not a string/, 'level quantity a number')
  unrep(t, classify('book', DEPTH.replace('["0.0024","10"]', '["0.0024"]')), 'structure', /b\[0\] is not a \[price, quantity\] pair/, 'short level')
  unrep(t, classify('book', DEPTH.replace('"a":[["0.0026","100"]]', '"a":{}')), 'structure', /a is not an array/, 'asks an object')
  t.throws(() => classify('funding', TRADE), RangeError, 'no funding on spot')
})

t.test('readJson is strict and lossless', async (t) => {
  const v = readJson(' {"a":[1,-0.50,1e400,true,false,null,"x\\u00e9\\n\\"\\/"],"__proto__":{}} ')
  t.ok(v && typeof v === 'object' && !Array.isArray(v))
  const a = (v as Record<string, unknown>)['a'] as unknown[]
  t.same(a.map((x) => x instanceof JsonNumber ? x.text : x), ['1', '-0.50', '1e400', true, false, null, 'xé\n"/'])
  t.ok(Object.prototype.hasOwnProperty.call(v, '__proto__'), '__proto__ is a plain key')
  t.ok(new JsonNumber('12').isInteger())
  t.notOk(new JsonNumber('1.0').isInteger())
  for (const bad of ['', '{', '[1,]', '{"a":1,}', '01', '1.', '.5', '+1', 'tru', '"a', '"\t"', '"\\x"', '"\\u12"', "{'a':1}", '1 2', '{"a" 1}', 'NaN',
    '['.repeat(70) + ']'.repeat(70)]) {
    t.throws(() => readJson(bad), { name: 'JsonReadError' }, JSON.stringify(bad.slice(0, 20)))
  }
})

const span = (sequence: 'trades' | 'book', first: bigint, last = first, snapshot = false): SequenceSpan => ({ sequence, instrument: 'BTCUSDT', first, last, snapshot })

t.test('trade sequence: t == prev_t + 1', async (t) => {
  const s0 = binanceTradeSequence(undefined, span('trades', 100n))
  t.equal(s0.verdict, 'start')
  const s1 = binanceTradeSequence(s0.state, span('trades', 101n))
  t.equal(s1.verdict, 'next')
  t.equal(s1.state.last, 101n)
  t.same(binanceTradeSequence(s1.state, span('trades', 105n)), { verdict: 'gap', afterId: '101', beforeId: '105', state: { last: 105n, streamFirst: 100n } })
  const stale = binanceTradeSequence(s1.state, span('trades', 101n))
  t.equal(stale.verdict, 'stale', 'a repeated id')
  t.equal(stale.state, s1.state, 'state unchanged')
  t.equal(binanceTradeSequence(s1.state, span('trades', 50n)).verdict, 'stale')
  t.equal(binanceSequence(s1.state, span('trades', 102n)).verdict, 'next', 'binanceSequence dispatches on the span')
})

t.test('depth sequence: U == prev_u + 1, gaps, stale updates', async (t) => {
  const s0 = binanceBookSequence(undefined, span('book', 157n, 160n))
  t.same(s0, { verdict: 'start', state: { last: 160n, streamFirst: 157n } })
  const s1 = binanceBookSequence(s0.state, span('book', 161n, 165n))
  t.same(s1, { verdict: 'next', state: { last: 165n, streamFirst: 157n } })
  t.same(binanceBookSequence(s1.state, span('book', 170n, 175n)), { verdict: 'gap', afterId: '165', beforeId: '170', state: { last: 175n, streamFirst: 157n } })
  t.equal(binanceBookSequence(s1.state, span('book', 158n, 165n)).verdict, 'stale', 'u <= last')
  t.equal(binanceBookSequence(s1.state, span('book', 163n, 168n)).verdict, 'next', 'an overlapping update leaves no hole')
  t.equal(binanceSequence(s1.state, span('book', 166n, 170n)).verdict, 'next')
})

t.test('depth sequence: the snapshot rule', async (t) => {
  // Snapshot first (lastUpdateId L = 1027024): drop u <= L; the first applied update has U <= L+1 <= u.
  const snap = binanceBookSequence(undefined, span('book', 1027024n, 1027024n, true))
  t.same(snap, { verdict: 'snapshot', state: { last: 1027024n, streamFirst: null } })
  t.equal(binanceBookSequence(snap.state, span('book', 1027000n, 1027010n)).verdict, 'stale', 'u < L dropped')
  t.equal(binanceBookSequence(snap.state, span('book', 1027020n, 1027024n)).verdict, 'stale', 'u == L dropped')
  const join = binanceBookSequence(snap.state, span('book', 1027020n, 1027030n))
  t.same(join, { verdict: 'next', state: { last: 1027030n, streamFirst: 1027020n } }, 'U <= L+1 <= u joins')
  t.equal(binanceBookSequence(snap.state, span('book', 1027025n, 1027030n)).verdict, 'next', 'U == L+1 joins')
  t.same(binanceBookSequence(snap.state, span('book', 1027026n, 1027030n)), { verdict: 'gap', afterId: '1027024', beforeId: '1027026', state: { last: 1027030n, streamFirst: 1027026n } }, 'U > L+1 is a gap after L')
  // Snapshot after updates (Binance's order: buffer, note the first U, then fetch).
  let st: SequenceState = binanceBookSequence(undefined, span('book', 200n, 210n)).state
  st = binanceBookSequence(st, span('book', 211n, 220n)).state
  t.same(binanceBookSequence(st, span('book', 215n, 215n, true)), { verdict: 'snapshot', state: { last: 220n, streamFirst: 200n } }, 'L within the stream keeps the later id')
  const ahead = binanceBookSequence(st, span('book', 230n, 230n, true))
  t.same(ahead, { verdict: 'snapshot', state: { last: 230n, streamFirst: 200n } }, 'L ahead of the stream')
  t.equal(binanceBookSequence(ahead.state, span('book', 221n, 225n)).verdict, 'stale', 'buffered updates up to L are dropped')
  t.equal(binanceBookSequence(ahead.state, span('book', 226n, 235n)).verdict, 'next')
  t.same(binanceBookSequence(st, span('book', 199n, 199n, true)), { verdict: 'snapshot', state: { last: 220n, streamFirst: 200n } }, 'L + 1 == first U joins')
  const behind = binanceBookSequence(st, span('book', 150n, 150n, true))
  t.equal(behind.verdict, 'snapshot-behind', 'L + 1 < first U: refetch')
  t.equal(behind.state, st)
})

t.test('connect, snapshot request, registry', async (t) => {
  const plan = binanceSpot.connect('trades', ['BTCUSDT', 'ETHUSDT'])
  t.same({ url: plan.url, send: plan.send }, {
    url: 'wss://data-stream.binance.vision/ws',
    send: ['{"method":"SUBSCRIBE","params":["btcusdt@trade","ethusdt@trade"],"id":1}'],
  })
  const answer = (text: string) => plan.answers(Buffer.from(text))
  t.equal(answer('{"result":null,"id":1}'), 'subscribed', 'the acknowledgement of the SUBSCRIBE')
  t.equal(answer('{"id":1,"result":null}'), 'subscribed', 'in any member order')
  t.equal(answer('{"error":{"code":2,"msg":"Invalid request"},"id":1}'), 'refused', 'an error reply')
  t.equal(answer('{"result":null,"id":2}'), null, 'the answer to another request')
  t.equal(answer('{"result":["btcusdt@trade"],"id":1}'), null, 'a result that is not the acknowledgement')
  t.equal(answer('{"e":"trade","E":1,"s":"BTCUSDT","t":1,"p":"1","q":"1","T":1,"m":true,"M":true}'), null, 'a trade')
  t.equal(answer('{"result":null,"id":1'), null, 'not JSON')
  t.equal(plan.answers(Buffer.from([0xff, 0xfe])), null, 'not UTF-8')
  t.same(binanceSpot.connect('book', ['BTCUSDT']).send, ['{"method":"SUBSCRIBE","params":["btcusdt@depth@100ms"],"id":1}'])
  t.equal(createBinanceSpotAdapter({ combined: true }).connect('book', ['BTCUSDT']).url, 'wss://data-stream.binance.vision/stream')
  t.equal(venueAt('binance', {}).connect('trades', ['BTCUSDT']).url, 'wss://data-stream.binance.vision/stream', 'the recorder subscribes through the combined streams')
  t.same(venueAt('binance', { ws: 'ws://127.0.0.1:9', rest: 'http://127.0.0.1:9' }).snapshotRequest('book', 'ETHUSDT'), { url: 'http://127.0.0.1:9/api/v3/depth?symbol=ETHUSDT&limit=1000' }, 'at the endpoints it is given')
  t.throws(() => venueAt('nasdaq', {}), /no recorder for venue "nasdaq"; it records: binance, binance-usdm, bybit, bybit-inverse, bybit-spot, coinbase, deribit, kraken, okx/)
  t.throws(() => binanceSpot.connect('trades', []), RangeError)
  t.throws(() => binanceSpot.connect('trades', Array.from({ length: 1025 }, (_, i) => `S${i}`)), RangeError)
  t.throws(() => binanceSpot.connect('liquidations', ['BTCUSDT']), RangeError)
  t.same(binanceSpot.snapshotRequest('book', 'BTCUSDT'), { url: 'https://api.binance.com/api/v3/depth?symbol=BTCUSDT&limit=1000' })
  t.equal(binanceSpot.snapshotRequest('trades', 'BTCUSDT'), null)
  t.throws(() => binanceSpot.wrapSnapshot('trades', 'BTCUSDT', SNAPSHOT_BODY), RangeError)
  t.same(binanceSpot.channels, ['trades', 'book'])
  t.equal(getVenue('binance'), binanceSpot)
  t.equal(findVenue('nasdaq'), undefined)
  t.throws(() => getVenue('nasdaq'), /unknown venue "nasdaq"; known: binance, binance-usdm, bybit, bybit-inverse, bybit-spot, coinbase, deribit, kraken, okx/)
  t.same(venueNames(), ['binance', 'binance-usdm', 'bybit', 'bybit-inverse', 'bybit-spot', 'coinbase', 'deribit', 'kraken', 'okx'])
})

t.test('an unrepresentable trade still states its place in the trade sequence', async (t) => {
  const payload = Buffer.from('{"e":"trade","E":1759500000123,"s":"BTCUSDT","t":42,"p":"60000.1234567890123456789","q":"0.1","T":1759500000120,"m":true,"M":true}')
  const cls = binanceSpot.classify('trades', payload, false)
  t.equal(cls.kind, 'unrepresentable')
  if (cls.kind !== 'unrepresentable') return
  t.equal(cls.code, 'decimal')
  t.same(cls.sequences, [{ sequence: 'trades', instrument: 'BTCUSDT', first: 42n, last: 42n, snapshot: false }])
  const broken = binanceSpot.classify('trades', Buffer.from('{"e":"trade","E":1,"s":"BTCUSDT","p":"1","q":"1","T":1,"m":true}'), false)
  t.equal(broken.kind === 'unrepresentable' ? broken.sequences : 'rows', undefined, 'no span when the trade id itself is missing')
})

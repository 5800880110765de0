import t, { type Test } from 'tap'
import type { Channel } from '../src/formats/record/types.js'
import type { ChecksumCheck, FrameClass, SequenceSpan, SequenceState } from '../src/venues/adapter.js'
import {
  createOkxAdapter, okx, okxBookSequence, okxChecksum, okxChecksumText, okxSequence, OKX_PING_INTERVAL_MS,
} from '../src/venues/okx.js'

const enc = new TextEncoder()
const classify = (channel: Channel, text: string): FrameClass => okx.classify(channel, enc.encode(text), false)
const MS = 1_000_000n

/** Assert an unrepresentable class with its code and a reason matching `re`. */
function unrep(t: Test, c: FrameClass, code: string, re: RegExp, msg: string): void {
  t.match(c, { kind: 'unrepresentable', code, reason: re }, msg)
}

// Payloads from OKX's API v5 documentation, written as its examples are.

// "WS / Trades channel", Push Data Example.
const TRADE = '{"arg":{"channel":"trades","instId":"BTC-USDT"},"data":[{"instId":"BTC-USDT","tradeId":"130639474","px":"42219.9","sz":"0.12060306","side":"buy","ts":"1630048897897","count":"3","source":"0","seqId":1234}]}'

// "WS / Order book channel", Push Data Example: Full Snapshot (checksum as the current page writes it: 0).
const ASKS = '[["8476.98","415","0","13"],["8477","7","0","2"],["8477.34","85","0","1"],["8477.56","1","0","1"],["8505.84","8","0","1"],["8506.37","85","0","1"],["8506.49","2","0","1"],["8506.96","100","0","2"]]'
const BIDS = '[["8476.97","256","0","12"],["8475.55","101","0","1"],["8475.54","100","0","1"],["8475.3","1","0","1"],["8447.32","6","0","1"],["8447.02","246","0","1"],["8446.83","24","0","1"],["8446","95","0","3"]]'
const SNAPSHOT = `{"arg":{"channel":"books","instId":"BTC-USDT"},"action":"snapshot","data":[{"asks":${ASKS},"bids":${BIDS},"ts":"1597026383085","checksum":0,"prevSeqId":-1,"seqId":123456}]}`
// "WS / Order book channel", Push Data Example: Incremental Data.
const UPDATE = `{"arg":{"channel":"books","instId":"BTC-USDT"},"action":"update","data":[{"asks":${ASKS},"bids":${BIDS},"ts":"1597026383085","checksum":0,"prevSeqId":123456,"seqId":123457}]}`
// "WS / Order book channel", Sequence ID, exception 1: no change for about 60 s -> empty levels, prevSeqId == seqId.
const KEEPALIVE = '{"arg":{"channel":"books","instId":"BTC-USDT"},"action":"update","data":[{"asks":[],"bids":[],"ts":"1597026443085","checksum":0,"prevSeqId":123457,"seqId":123457}]}'

// "Funding rate channel", Push Data Example.
const FUNDING = '{"arg":{"channel":"funding-rate","instId":"BTC-USD-SWAP"},"data":[{"formulaType":"noRate","fundingRate":"0.0001875391284828","fundingTime":"1700726400000","impactValue":"","instId":"BTC-USD-SWAP","instType":"SWAP","interestRate":"","method":"current_period","maxFundingRate":"0.00375","minFundingRate":"-0.00375","nextFundingRate":"","nextFundingTime":"1700755200000","premium":"0.0001233824646391","settFundingRate":"0.0001699799259033","settState":"settled","ts":"1700724675402"}]}'

// "Liquidation orders channel", Response Example (the push, with the "id" the example shows).
const LIQUIDATION = '{"id":"1512","arg":{"channel":"liquidation-orders","instType":"SWAP"},"data":[{"details":[{"bkLoss":"0","bkPx":"0.007831","ccy":"","posSide":"short","side":"buy","sz":"13","ts":"1692266434010"}],"instFamily":"IOST-USDT","instId":"IOST-USDT-SWAP","instType":"SWAP","uly":"IOST-USDT"}]}'

// "WebSocket, Subscribe" / each channel's Response Example and Failure example; "WebSocket, Unsubscribe"; "WebSocket, Notification".
const SUBSCRIBED = (arg: string) => `{"id":"1512","event":"subscribe","arg":${arg},"connId":"a4d3ae55"}`
const UNSUBSCRIBED = '{"event":"unsubscribe","arg":{"channel":"tickers","instId":"BTC-USDT"},"connId":"d0b44253"}'
const ERROR = '{"id":"1512","event":"error","code":"60012","msg":"Invalid request: {\\"op\\": \\"subscribe\\", \\"argss\\":[{ \\"channel\\" : \\"books\\", \\"instId\\" : \\"BTC-USD-191227\\"}]}","connId":"a4d3ae55"}'
const NOTICE = '{"event":"notice","code":"64008","msg":"The connection will soon be closed for a service upgrade. Please reconnect.","connId":"a4d3ae55"}'
// "WebSocket, Connection count limit".
const CONN_COUNT = '{"event":"channel-conn-count","channel":"orders","connCount":"2","connId":"abcd1234"}'

const CHANNELS: readonly Channel[] = ['trades', 'book', 'funding', 'liquidations']

t.test('the adapter', async (t) => {
  t.equal(okx.name, 'okx')
  t.same(okx.channels, ['trades', 'book', 'funding', 'liquidations'])
  t.ok(okx.books, 'it recomputes book checksums')
  t.same(Object.keys(okx.about!.channels), ['trades', 'book', 'funding', 'liquidations'], 'pipe list venues describes every channel')
  t.same(okx.about!.endpoints, ['wss://ws.okx.com:8443/ws/v5/public'])
  t.throws(() => okx.classify('options' as Channel, enc.encode(TRADE), false), RangeError, 'a channel it does not serve')
})

t.test('trades push -> one trades row per data item, exactly as written', async (t) => {
  const T = 1630048897897n * MS
  t.same(classify('trades', TRADE), {
    kind: 'rows',
    table: 'trades',
    rows: [{ instrument: 'BTC-USDT', trade_id: '130639474', side: 'buy', price: '42219.9', size: '0.12060306', exchange_time: T }],
    exchangeTime: T,
    sequences: [],
  }, 'no trade sequence: the docs do not say trade ids are consecutive')
  const sell = classify('trades', TRADE.replace('"side":"buy"', '"side":"sell"'))
  t.equal(sell.kind === 'rows' && sell.rows[0]!.side, 'sell', 'the taker side, as the venue writes it')
  // Several trades in one push: every row carries the frame's (earliest) time.
  const two = TRADE.replace(/\}\]\}$/, '},{"instId":"BTC-USDT","tradeId":"130639473","px":"42219.8","sz":"1.5","side":"sell","ts":"1630048897890","count":"1","source":"1","seqId":1233}]}')
  const c = classify('trades', two)
  t.same(c.kind === 'rows' && c.rows.map((r) => [r.trade_id, r.side, r.price, r.size, r.exchange_time]), [
    ['130639474', 'buy', '42219.9', '0.12060306', 1630048897890n * MS],
    ['130639473', 'sell', '42219.8', '1.5', 1630048897890n * MS],
  ])
  t.equal(c.kind === 'rows' && c.exchangeTime, 1630048897890n * MS)
  // Fields the table does not define are ignored (they stay in the raw file); count, source, seqId are not required.
  t.equal(classify('trades', TRADE.replace(',"count":"3","source":"0","seqId":1234', '')).kind, 'rows')
  t.equal(classify('trades', TRADE.replace('"px"', '"extra":{"a":[1]},"px"')).kind, 'rows')
  t.equal(classify('trades', ' ' + TRADE.replace('{"arg"', '{ "arg"') + '\n').kind, 'rows', 'whitespace is JSON')
})

t.test('malformed trades pushes yield no rows and a reason', async (t) => {
  unrep(t, classify('trades', TRADE.replace('"px":"42219.9",', '')), 'structure', /data\[0\]: px is missing/, 'no px')
  unrep(t, classify('trades', TRADE.replace('"px":"42219.9"', '"px":42219.9')), 'structure', /px is not a string/, 'px a number')
  unrep(t, classify('trades', TRADE.replace('"sz":"0.12060306"', '"sz":"0.1206030600000000001"')), 'decimal', /sz .* DECIMAL\(38, 18\)/, '19 fractional digits')
  unrep(t, classify('trades', TRADE.replace('"px":"42219.9"', '"px":"4.22199e4"')), 'decimal', /px/, 'an exponent')
  unrep(t, classify('trades', TRADE.replace('"px":"42219.9"', '"px":""')), 'decimal', /px ""/, 'empty px')
  unrep(t, classify('trades', TRADE.replace('"side":"buy"', '"side":"Buy"')), 'structure', /side "Buy" is neither/, 'side not as documented')
  unrep(t, classify('trades', TRADE.replace('"tradeId":"130639474"', '"tradeId":""')), 'structure', /tradeId is empty/, 'empty trade id')
  unrep(t, classify('trades', TRADE.replace('"tradeId":"130639474"', '"tradeId":130639474')), 'structure', /tradeId is not a string/, 'trade id a number')
  unrep(t, classify('trades', TRADE.replace('"instId":"BTC-USDT","tradeId"', '"instId":"ETH-USDT","tradeId"')), 'structure', /instId "ETH-USDT" is not arg's "BTC-USDT"/, 'another instrument in data')
  unrep(t, classify('trades', TRADE.replace('"ts":"1630048897897"', '"ts":1630048897897')), 'structure', /ts is not a string/, 'ts a number')
  unrep(t, classify('trades', TRADE.replace('"ts":"1630048897897"', '"ts":"1630048897897.5"')), 'structure', /ts "1630048897897.5" is not a count of milliseconds/, 'ts with a fraction')
  unrep(t, classify('trades', TRADE.replace('"ts":"1630048897897"', '"ts":"9223372036855"')), 'time', /does not fit int64 nanoseconds/, 'ts beyond int64 ns')
  unrep(t, classify('trades', TRADE.replace(/"data":\[.*\]\}$/, '"data":[]}')), 'structure', /data is empty/, 'no data items')
  unrep(t, classify('trades', TRADE.replace(/"data":\[.*\]\}$/, '"data":{}}')), 'structure', /data is not an array/, 'data an object')
  unrep(t, classify('trades', TRADE.replace(/,"data":\[.*\]\}$/, '}')), 'structure', /data is missing/, 'no data')
  unrep(t, classify('trades', TRADE.replace(/"data":\[.*\]\}$/, '"data":[1]}')), 'structure', /data\[0\] is not an object/, 'a data item not an object')
  unrep(t, classify('trades', TRADE.replace('"arg":{"channel":"trades","instId":"BTC-USDT"},', '')), 'structure', /arg is missing/, 'no arg')
  unrep(t, classify('trades', TRADE.replace('"channel":"trades"', '"channel":"trades-all"')), 'structure', /channel "trades-all" on channel trades/, 'trades-all on the trades connection')
  unrep(t, classify('trades', TRADE.replace('"arg":{"channel":"trades",', '"arg":{')), 'structure', /arg: channel is missing/, 'arg without channel')
  unrep(t, classify('trades', SNAPSHOT), 'structure', /channel "books" on channel trades/, 'a book push on trades')
  unrep(t, classify('book', TRADE), 'structure', /channel "trades" on channel book/, 'a trade push on book')
  unrep(t, classify('trades', TRADE.replace('"px":"42219.9"', '"px":"42219.9","px":"1"')), 'not-json', /duplicate key "px"/, 'duplicate key')
})

t.test('books snapshot -> book_snapshots, update -> book_deltas, sizes of zero kept', async (t) => {
  const T = 1597026383085n * MS
  const rows = (side: 'bid' | 'ask', levels: string) => (JSON.parse(levels) as string[][]).map(([price, size]) => ({ instrument: 'BTC-USDT', trade_id: null, side, price: price!, size: size!, exchange_time: T }))
  t.same(classify('book', SNAPSHOT), {
    kind: 'rows',
    table: 'book_snapshots',
    rows: [...rows('bid', BIDS), ...rows('ask', ASKS)],
    exchangeTime: T,
    sequences: [{ sequence: 'book', instrument: 'BTC-USDT', first: 123456n, last: 123456n, snapshot: true }],
  }, 'bids then asks, in the order sent')
  t.same(classify('book', UPDATE), {
    kind: 'rows',
    table: 'book_deltas',
    rows: [...rows('bid', BIDS), ...rows('ask', ASKS)],
    exchangeTime: T,
    sequences: [{ sequence: 'book', instrument: 'BTC-USDT', first: 123457n, last: 123457n, snapshot: false, previous: 123456n }],
  }, 'an update spans (prevSeqId, seqId]: first = prevSeqId + 1, previous = prevSeqId')
  const zero = classify('book', UPDATE.replace('["8477","7","0","2"]', '["8477","0","0","0"]').replace('["8475.3","1","0","1"]', '["8475.3","0.000","0","0"]'))
  t.same(zero.kind === 'rows' && zero.rows.filter((r) => r.price === '8477' || r.price === '8475.3').map((r) => [r.side, r.size]), [['bid', '0.000'], ['ask', '0']], 'a size of zero is kept as sent')
  t.same(classify('book', KEEPALIVE), {
    kind: 'rows', table: 'book_deltas', rows: [], exchangeTime: 1597026443085n * MS,
    sequences: [{ sequence: 'book', instrument: 'BTC-USDT', first: 123458n, last: 123457n, snapshot: false, previous: 123457n }],
  }, 'the keep-alive update: no rows, an empty span')
  // The checksum field is deprecated: absent is fine (so is any signed 32-bit integer).
  t.equal(classify('book', UPDATE.replace('"checksum":0,', '')).kind, 'rows')
  t.equal(classify('book', UPDATE.replace('"checksum":0', '"checksum":-855196043')).kind, 'rows')
  // Sequence ids beyond 2^53 are exact.
  const big = classify('book', UPDATE.replace('"prevSeqId":123456,"seqId":123457', '"prevSeqId":9007199254740993,"seqId":9007199254740999'))
  t.same(big.kind === 'rows' && big.sequences[0], { sequence: 'book', instrument: 'BTC-USDT', first: 9007199254740994n, last: 9007199254740999n, snapshot: false, previous: 9007199254740993n })
  // A maintenance reset: seqId below prevSeqId.
  const reset = classify('book', UPDATE.replace('"prevSeqId":123456,"seqId":123457', '"prevSeqId":15,"seqId":3'))
  t.same(reset.kind === 'rows' && reset.sequences[0], { sequence: 'book', instrument: 'BTC-USDT', first: 16n, last: 3n, snapshot: false, previous: 15n })
})

t.test('malformed book pushes yield no rows; their sequence ids still count when they parsed', async (t) => {
  const span: SequenceSpan[] = [{ sequence: 'book', instrument: 'BTC-USDT', first: 123457n, last: 123457n, snapshot: false, previous: 123456n }]
  const bad = (text: string, code: string, re: RegExp, msg: string, sequences?: SequenceSpan[]) => {
    const c = classify('book', text)
    unrep(t, c, code, re, msg)
    t.same(c.kind === 'unrepresentable' && c.sequences, sequences ?? undefined, `${msg}: sequences`)
  }
  bad(UPDATE.replace('["8477","7","0","2"]', '["8477","7.0000000000000000001","0","2"]'), 'decimal', /asks\[1\] size/, 'a size DECIMAL(38, 18) cannot hold', span)
  bad(UPDATE.replace('["8477","7","0","2"]', '["8477",7,"0","2"]'), 'structure', /asks\[1\] is not a \[price, size, "0", orders\] array of four strings/, 'a size as a number', span)
  bad(UPDATE.replace('["8477","7","0","2"]', '["8477","7"]'), 'structure', /asks\[1\] is not/, 'a two-element level', span)
  bad(UPDATE.replace('["8477","7","0","2"]', '["8477","7","0","2","x"]'), 'structure', /asks\[1\] is not/, 'a five-element level', span)
  bad(UPDATE.replace(`"bids":${BIDS}`, '"bids":{}'), 'structure', /bids is not an array/, 'bids an object', span)
  bad(UPDATE.replace(`"bids":${BIDS},`, ''), 'structure', /bids is missing/, 'no bids', span)
  bad(UPDATE.replace('"ts":"1597026383085"', '"ts":"99999999999999"'), 'time', /does not fit int64/, 'ts beyond int64 ns', span)
  bad(UPDATE.replace('"ts":"1597026383085",', ''), 'structure', /ts is missing/, 'no ts', span)
  bad(UPDATE.replace('"checksum":0', '"checksum":"0"'), 'structure', /checksum is not an integer/, 'checksum a string', span)
  bad(UPDATE.replace('"checksum":0', '"checksum":2147483648'), 'structure', /not a signed 32-bit integer/, 'checksum beyond int32', span)
  bad(UPDATE.replace('"checksum":0', '"checksum":1.5'), 'structure', /checksum is not an integer/, 'checksum with a fraction', span)
  bad(UPDATE.replace('"ts"', '"instId":"ETH-USDT","ts"'), 'structure', /instId "ETH-USDT" is not arg's/, 'a data item naming another instrument', span)
  bad(UPDATE.replace('"prevSeqId":123456,', ''), 'structure', /prevSeqId is missing/, 'no prevSeqId')
  bad(UPDATE.replace('"seqId":123457', '"seqId":"123457"'), 'structure', /seqId is not a number/, 'seqId a string')
  bad(UPDATE.replace('"seqId":123457', '"seqId":1.23457e5'), 'structure', /seqId is not an integer/, 'seqId with an exponent')
  bad(UPDATE.replace('"seqId":123457', '"seqId":-2'), 'structure', /seqId -2 is negative/, 'a negative seqId')
  bad(UPDATE.replace('"prevSeqId":123456', '"prevSeqId":-1'), 'structure', /an update's prevSeqId -1 is negative/, 'an update with prevSeqId -1')
  bad(SNAPSHOT.replace('"prevSeqId":-1', '"prevSeqId":5'), 'structure', /a snapshot's prevSeqId is 5, not -1/, 'a snapshot whose prevSeqId is not -1')
  bad(UPDATE.replace('"action":"update",', ''), 'structure', /action is missing/, 'no action')
  bad(UPDATE.replace('"action":"update"', '"action":"partial"'), 'structure', /action is "partial", neither/, 'an unknown action')
  bad(UPDATE.replace('"instId":"BTC-USDT"', '"instId":""'), 'structure', /instId is empty/, 'an empty instrument')
  bad(UPDATE.replace(/"data":\[.*\]\}$/, '"data":[]}'), 'structure', /data is empty/, 'no data items')
})

t.test('funding-rate and liquidation-orders pushes are data: their times, no rows, no sequence', async (t) => {
  t.same(classify('funding', FUNDING), { kind: 'data', exchangeTime: 1700724675402n * MS, sequences: [] }, 'exchange_time from ts (fundingTime is the settlement time)')
  t.same(classify('liquidations', LIQUIDATION), { kind: 'data', exchangeTime: 1692266434010n * MS, sequences: [] }, 'exchange_time from the detail ts')
  const several = LIQUIDATION.replace('"ts":"1692266434010"}', '"ts":"1692266434010"},{"bkLoss":"0","bkPx":"0.0078","ccy":"","posSide":"net","side":"sell","sz":"2","ts":"1692266433000"}')
  t.same(classify('liquidations', several), { kind: 'data', exchangeTime: 1692266433000n * MS, sequences: [] }, 'the earliest of several (not in chronological order, the docs say)')
  t.equal(classify('liquidations', LIQUIDATION.replace('{"id":"1512",', '{')).kind, 'data', 'with or without the id')
  unrep(t, classify('funding', FUNDING.replace('"instId":"BTC-USD-SWAP","instType"', '"instId":"ETH-USD-SWAP","instType"')), 'structure', /instId "ETH-USD-SWAP" is not arg's/, 'funding: another instrument')
  unrep(t, classify('funding', FUNDING.replace(',"ts":"1700724675402"', '')), 'structure', /funding-rate: data\[0\]: ts is missing/, 'funding: no ts')
  unrep(t, classify('funding', FUNDING.replace('"ts":"1700724675402"', '"ts":"99999999999999"')), 'time', /ts 99999999999999 ms does not fit/, 'funding: ts beyond int64 ns')
  unrep(t, classify('funding', FUNDING.replace('"fundingTime":"1700726400000"', '"fundingTime":""')), 'structure', /fundingTime "" is not a count of milliseconds/, 'funding: empty fundingTime')
  unrep(t, classify('funding', FUNDING.replace('"fundingRate":"0.0001875391284828"', '"fundingRate":0.0001875391284828')), 'structure', /fundingRate is not a string/, 'funding: rate a number')
  unrep(t, classify('funding', TRADE), 'structure', /channel "trades" on channel funding/, 'a trade on the funding connection')
  unrep(t, classify('liquidations', LIQUIDATION.replace(/"details":\[.*?\],/, '"details":[],')), 'structure', /details is empty/, 'liquidations: no details')
  unrep(t, classify('liquidations', LIQUIDATION.replace('"ts":"1692266434010"', '"ts":"-1"')), 'structure', /details\[0\]: ts "-1" is not a count/, 'liquidations: a negative time')
  unrep(t, classify('liquidations', LIQUIDATION.replace('"instType":"SWAP","uly"', '"instType":"FUTURES","uly"')), 'structure', /instType "FUTURES" is not arg's "SWAP"/, 'liquidations: another instrument type')
  unrep(t, classify('liquidations', LIQUIDATION.replace('"instId":"IOST-USDT-SWAP",', '')), 'structure', /instId is missing/, 'liquidations: no instrument')
  unrep(t, classify('liquidations', LIQUIDATION.replace(',"instType":"SWAP"},"data"', '},"data"')), 'structure', /arg: instType is missing/, 'liquidations: arg without instType')
})

t.test('events and pong are control frames on every channel; the service-upgrade notice asks for a successor', async (t) => {
  for (const channel of CHANNELS) {
    t.same(classify(channel, 'pong'), { kind: 'control', note: 'pong' }, `${channel}: pong`)
    t.same(classify(channel, SUBSCRIBED('{"channel":"books","instId":"BTC-USDT"}')), { kind: 'control', note: 'subscribed books BTC-USDT' }, `${channel}: subscribe`)
    t.same(classify(channel, SUBSCRIBED('{"channel":"liquidation-orders","instType":"SWAP"}')), { kind: 'control', note: 'subscribed liquidation-orders SWAP' })
    t.same(classify(channel, UNSUBSCRIBED), { kind: 'control', note: 'unsubscribed tickers BTC-USDT' }, `${channel}: unsubscribe`)
    const err = classify(channel, ERROR)
    t.match(err, { kind: 'control', note: /^error 60012 Invalid request/ }, `${channel}: error`)
    t.notOk('closing' in err)
    t.same(classify(channel, NOTICE), { kind: 'control', note: 'notice 64008 The connection will soon be closed for a service upgrade. Please reconnect.: the venue will close this connection', closing: true }, `${channel}: notice`)
    t.same(classify(channel, CONN_COUNT), { kind: 'control', note: 'channel-conn-count orders 2' }, `${channel}: connection count`)
    t.equal(classify(channel, '{"event":"channel-conn-count-error","channel":"orders","connCount":"30","connId":"a4d3ae55"}').kind, 'control')
    unrep(t, classify(channel, '{"event":"login","code":"0","msg":"","connId":"a4d3ae55"}'), 'structure', /unknown event "login"/, `${channel}: login is not for the public service`)
    unrep(t, classify(channel, '{"event":1}'), 'structure', /event is not a string/, `${channel}: event not a string`)
  }
  t.match(classify('book', '{"event":"error","code":"60018","msg":"' + 'x'.repeat(500) + '"}'), { kind: 'control', note: /^error 60018 x{194}…$/ }, 'long messages are clipped')
})

t.test('frames that are not JSON, or not an object', async (t) => {
  for (const channel of CHANNELS) {
    unrep(t, okx.classify(channel, enc.encode(TRADE), true), 'not-json', /binary frame/, `${channel}: binary`)
    unrep(t, okx.classify(channel, Uint8Array.of(0x7b, 0xff, 0x7d), false), 'not-json', /not UTF-8/, `${channel}: invalid UTF-8`)
    unrep(t, classify(channel, 'ping'), 'not-json', /not JSON/, `${channel}: ping is no reply of the venue`)
    unrep(t, classify(channel, 'Pong'), 'not-json', /not JSON/, `${channel}: Pong`)
    unrep(t, classify(channel, '\ufeff' + TRADE), 'not-json', /not JSON/, `${channel}: BOM`)
    unrep(t, classify(channel, TRADE.slice(0, -1)), 'not-json', /not JSON/, `${channel}: truncated`)
    unrep(t, classify(channel, '[1,2]'), 'structure', /not a JSON object/, `${channel}: an array`)
    unrep(t, classify(channel, '{}'), 'structure', /arg is missing/, `${channel}: an empty object`)
  }
})

const span = (first: bigint, last: bigint, snapshot = false): SequenceSpan => ({ sequence: 'book', instrument: 'BTC-USDT', first, last, snapshot })
/** An update's span from its documented ids. */
const upd = (prevSeqId: bigint, seqId: bigint): SequenceSpan => ({ ...span(prevSeqId + 1n, seqId), previous: prevSeqId })

t.test('seqId rule: the documentation\'s example, step by step', async (t) => {
  // "WS / Order book channel", Sequence ID, Example.
  const s1 = okxBookSequence(undefined, span(10n, 10n, true))
  t.same(s1, { verdict: 'snapshot', state: { last: 10n, streamFirst: null } }, 'snapshot: prevSeqId = -1, seqId = 10')
  const s2 = okxBookSequence(s1.state, upd(10n, 15n))
  t.same(s2, { verdict: 'next', state: { last: 15n, streamFirst: 11n } }, 'normal update: prevSeqId = 10, seqId = 15')
  const s3 = okxBookSequence(s2.state, upd(15n, 15n))
  t.same(s3, { verdict: 'next', state: { last: 15n, streamFirst: 11n } }, 'no update: prevSeqId = 15, seqId = 15')
  const s4 = okxBookSequence(s3.state, upd(15n, 3n))
  t.same(s4, { verdict: 'next', state: { last: 3n, streamFirst: 11n } }, 'sequence reset: prevSeqId = 15, seqId = 3')
  const s5 = okxBookSequence(s4.state, upd(3n, 5n))
  t.same(s5, { verdict: 'next', state: { last: 5n, streamFirst: 11n } }, 'normal update after the reset: prevSeqId = 3, seqId = 5')
  t.equal(okxSequence(s4.state, upd(3n, 5n)).verdict, 'next', 'okxSequence dispatches books')
})

t.test('seqId rule: gaps, repeats, starts and snapshots', async (t) => {
  const at = (last: bigint, streamFirst: bigint | null = 11n): SequenceState => ({ last, streamFirst })
  t.same(okxBookSequence(at(15n), upd(20n, 25n)), { verdict: 'gap', afterId: '15', beforeId: '21', state: at(25n) }, 'a missed message: the one with seqId 20 (and any before it after 15)')
  t.same(okxBookSequence(at(15n), upd(20n, 20n)), { verdict: 'gap', afterId: '15', beforeId: '21', state: at(20n) }, 'a keep-alive ahead of the state')
  t.same(okxBookSequence(at(15n), upd(40n, 3n)), { verdict: 'gap', afterId: '15', beforeId: '41', state: at(3n) }, 'a reset whose prevSeqId is not the state: messages up to 40 were missed')
  t.same(okxBookSequence(at(15n), upd(12n, 3n)), { verdict: 'gap', afterId: '15', beforeId: '13', state: at(3n) }, 'a reset from an id before the state: neither continues nor repeats, a break')
  const stale = okxBookSequence(at(15n), upd(10n, 15n))
  t.equal(stale.verdict, 'stale', 'the same message again (another connection)')
  t.same(stale.state, at(15n), 'state unchanged')
  t.equal(okxBookSequence(at(15n), upd(8n, 10n)).verdict, 'stale', 'an older message')
  t.equal(okxBookSequence(at(15n), upd(12n, 12n)).verdict, 'stale', 'an older keep-alive')
  t.same(okxBookSequence(at(15n), upd(12n, 18n)), { verdict: 'next', state: at(18n) }, 'prevSeqId <= state < seqId: joins a snapshot taken between its ids')
  t.same(okxBookSequence(undefined, upd(100n, 107n)), { verdict: 'start', state: { last: 107n, streamFirst: 101n } }, 'updates without a snapshot start the sequence')
  t.same(okxBookSequence(at(15n), span(30n, 30n, true)), { verdict: 'snapshot', state: at(30n) }, 'a later snapshot moves the state on')
  t.same(okxBookSequence(at(15n), span(12n, 12n, true)), { verdict: 'snapshot', state: at(15n) }, 'an earlier snapshot keeps the later id (never behind)')
  const after = okxBookSequence(okxBookSequence(at(15n), span(30n, 30n, true)).state, upd(30n, 31n))
  t.equal(after.verdict, 'next', 'after a snapshot, prevSeqId = its seqId continues')
  t.same(okxBookSequence(at(15n), span(16n, 20n)), { verdict: 'next', state: at(20n) }, 'a span without previous: previous = first - 1')
  t.throws(() => okxSequence(undefined, { sequence: 'trades', instrument: 'BTC-USDT', first: 1n, last: 1n, snapshot: false }), RangeError, 'no trade sequence on OKX')
})

t.test('seqId rule on classified frames', async (t) => {
  let state: SequenceState | undefined
  const verdicts: string[] = []
  for (const text of [SNAPSHOT, UPDATE, KEEPALIVE, UPDATE.replace('"prevSeqId":123456,"seqId":123457', '"prevSeqId":123457,"seqId":123460'), UPDATE.replace('"prevSeqId":123456,"seqId":123457', '"prevSeqId":123470,"seqId":123480')]) {
    const c = classify('book', text)
    if (c.kind !== 'rows') throw new Error('expected rows')
    for (const s of c.sequences) {
      const v = okx.sequence(state, s)
      state = v.state
      verdicts.push(v.verdict === 'gap' ? `gap ${v.afterId}..${v.beforeId}` : v.verdict)
    }
  }
  t.same(verdicts, ['snapshot', 'next', 'next', 'next', 'gap 123460..123471'])
})

// ---------------------------------------------------------------------------------------------------
// Checksums, recomputed here by a second route: a map of levels by price text, sorted by Number, and a
// bit-at-a-time CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320).

function crc32Bitwise(text: string): number {
  let crc = 0xffffffff
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1
  }
  return (crc ^ 0xffffffff) | 0
}

/** The straightforward book: price text -> size text per side. */
class ReferenceBook {
  readonly bids = new Map<string, string>()
  readonly asks = new Map<string, string>()
  apply(bids: [string, string][], asks: [string, string][]): void {
    for (const [side, levels] of [[this.bids, bids], [this.asks, asks]] as const) {
      for (const [p, s] of levels) {
        if (Number(s) === 0) side.delete(p)
        else side.set(p, s)
      }
    }
  }
  checkString(): string {
    const bids = [...this.bids].sort((x, y) => Number(y[0]) - Number(x[0])).slice(0, 25)
    const asks = [...this.asks].sort((x, y) => Number(x[0]) - Number(y[0])).slice(0, 25)
    const out: string[] = []
    for (let i = 0; i < 25; i++) {
      if (bids[i]) out.push(`${bids[i]![0]}:${bids[i]![1]}`)
      if (asks[i]) out.push(`${asks[i]![0]}:${asks[i]![1]}`)
    }
    return out.join(':')
  }
  checksum(): number {
    return crc32Bitwise(this.checkString())
  }
}

function bookPush(action: 'snapshot' | 'update', instId: string, bids: [string, string][], asks: [string, string][], prevSeqId: number, seqId: number, checksum?: number): string {
  const level = ([p, s]: [string, string]) => [p, s, '0', '1']
  return JSON.stringify({
    arg: { channel: 'books', instId },
    action,
    data: [{ asks: asks.map(level), bids: bids.map(level), ts: '1597026383085', ...(checksum === undefined ? {} : { checksum }), prevSeqId, seqId }],
  })
}

/** Classifies a book frame and applies it to `books`, as a recorder does. */
function applyFrame(books: unknown, text: string): ChecksumCheck[] {
  const payload = enc.encode(text)
  const c = okx.classify('book', payload, false)
  if (c.kind !== 'rows') throw new Error(`expected rows, got ${JSON.stringify(c)}`)
  return okx.books!.apply(books, c, payload)
}

t.test('checksum: the test\'s CRC-32 is the standard one', async (t) => {
  t.equal(crc32Bitwise('123456789'), 0xcbf43926 | 0, 'the CRC-32 check value')
  t.equal(crc32Bitwise(''), 0)
})

t.test('checksum: the documentation\'s worked examples', async (t) => {
  // "WS / Order book channel", Checksum, Calculate Checksum (the section as the documentation gave it before
  // the field was deprecated): the check strings of two books.
  const more = { bids: [['3366.1', '7', '0', '3'], ['3366', '6', '3', '4']], asks: [['3366.8', '9', '10', '3'], ['3368', '8', '3', '4']] }
  const fewer = { bids: [['3366.1', '7', '0', '3']], asks: [['3366.8', '9', '10', '3'], ['3368', '8', '3', '4'], ['3372', '8', '3', '4']] }
  const levels = (l: string[][]) => l.map(([price, size]) => ({ price: price!, size: size! }))
  t.equal(okxChecksumText(levels(more.bids), levels(more.asks)), '3366.1:7:3366.8:9:3366:6:3368:8', '1. more than 25 levels (two shown)')
  t.equal(okxChecksumText(levels(fewer.bids), levels(fewer.asks)), '3366.1:7:3366.8:9:3368:8:3372:8', '2. fewer bids than asks: the asks continue alone')
  // The same books as snapshot frames carrying the CRC-32 of the documented check string: the adapter agrees.
  for (const [name, book, check] of [['more', more, '3366.1:7:3366.8:9:3366:6:3368:8'], ['fewer', fewer, '3366.1:7:3366.8:9:3368:8:3372:8']] as const) {
    const expected = crc32Bitwise(check)
    t.equal(okxChecksum(levels(book.bids), levels(book.asks)), expected, `${name}: okxChecksum`)
    const frame = JSON.stringify({ arg: { channel: 'books', instId: 'BTC-USD-SWAP' }, action: 'snapshot', data: [{ asks: book.asks, bids: book.bids, ts: '1597026383085', checksum: expected, prevSeqId: -1, seqId: 1 }] })
    const books = okx.books!.create()
    t.same(applyFrame(books, frame), [{ instrument: 'BTC-USD-SWAP', expected: String(expected), computed: String(expected) }], `${name}: the snapshot checks`)
  }
  // These are the values the earlier documentation printed for these two books.
  t.equal(crc32Bitwise('3366.1:7:3366.8:9:3366:6:3368:8'), -1881014294)
  t.equal(crc32Bitwise('3366.1:7:3366.8:9:3368:8:3372:8'), 831078360)
  // Levels beyond 25 per side are not part of it.
  const deep = Array.from({ length: 30 }, (_, i) => ({ price: String(100 - i), size: '1' }))
  t.equal(okxChecksumText(deep, []).split(':').length, 50)
  t.equal(okxChecksumText([], []), '')
})

t.test('checksum: the documentation\'s push examples carry none to check', async (t) => {
  const books = okx.books!.create()
  t.same(applyFrame(books, SNAPSHOT), [], 'checksum 0: deprecated, no checksum')
  t.same(applyFrame(books, UPDATE), [])
  t.same(applyFrame(books, UPDATE.replace('"checksum":0,', '').replace('"prevSeqId":123456,"seqId":123457', '"prevSeqId":123457,"seqId":123458')), [], 'no checksum field')
  // The example as the documentation printed it before the deprecation (checksum -855196043): its levels
  // are illustrative and do not give that checksum, so checking it shows a mismatch.
  const legacy = okx.books!.create()
  const checks = applyFrame(legacy, SNAPSHOT.replace('"checksum":0', '"checksum":-855196043'))
  const reference = new ReferenceBook()
  reference.apply((JSON.parse(BIDS) as string[][]).map(([p, s]) => [p!, s!]), (JSON.parse(ASKS) as string[][]).map(([p, s]) => [p!, s!]))
  t.same(checks, [{ instrument: 'BTC-USDT', expected: '-855196043', computed: String(reference.checksum()) }])
})

t.test('checksum: a book built by a snapshot and updates, recomputed by a second route', async (t) => {
  const inst = 'ETH-USDT-SWAP'
  const ref = new ReferenceBook()
  const books = okx.books!.create()
  // 30 bids and 28 asks, prices written with trailing zeros and without.
  const bids: [string, string][] = Array.from({ length: 30 }, (_, i) => [(2000 - i * 0.5).toFixed(i % 3 === 0 ? 2 : 1), String(10 + i)])
  const asks: [string, string][] = Array.from({ length: 28 }, (_, i) => [(2000.5 + i * 0.5).toFixed(i % 4 === 0 ? 2 : 1), `${i + 1}.${i % 7}0`])
  ref.apply(bids, asks)
  let seq = 1000
  t.same(applyFrame(books, bookPush('snapshot', inst, bids, asks, -1, seq, ref.checksum())), [{ instrument: inst, expected: String(ref.checksum()), computed: String(ref.checksum()) }], 'the snapshot')
  const updates: [[string, string][], [string, string][]][] = [
    // A size changes; a bid is removed (size "0"); a level is inserted inside the top 25.
    [[[bids[0]![0], '99'], [bids[2]![0], '0']], [[asks[1]![0], '0.001'], ['2000.75', '3']]],
    // Levels beyond the top 25 move into it as better ones are removed; zero written as "0.000".
    [[[bids[1]![0], '0'], [bids[3]![0], '0.000'], ['1980', '4']], [[asks[0]![0], '0'], ['2000.5', '0']]],
    // A new best bid and best ask; a removal of a level that is not there changes nothing.
    [[['2000.25', '1.5'], ['1234', '0']], [['2000.4', '2.25']]],
    // A keep-alive: no levels.
    [[], []],
  ]
  for (const [i, [b, a]] of updates.entries()) {
    ref.apply(b, a)
    const prev = seq
    if (b.length + a.length > 0) seq += 7
    const expected = ref.checksum()
    t.same(applyFrame(books, bookPush('update', inst, b, a, prev, seq, expected)), [{ instrument: inst, expected: String(expected), computed: String(expected) }], `update ${i + 1}`)
  }
  t.match(ref.checkString(), /^2000\.25:1\.5:2000\.4:2\.25:/, 'the reference book has the new best levels first')
  // A mismatch: the venue's checksum is not the book's; the book is then forgotten until a snapshot.
  const wrong = ref.checksum() ^ 1
  t.same(applyFrame(books, bookPush('update', inst, [], [], seq, seq, wrong)), [{ instrument: inst, expected: String(wrong), computed: String(ref.checksum()) }], 'a mismatch')
  t.same(applyFrame(books, bookPush('update', inst, [['1999', '1']], [], seq, seq + 1, 12345)), [], 'no check until the next snapshot')
  const fresh = new ReferenceBook()
  fresh.apply([['1999', '1']], [['2001', '2']])
  t.same(applyFrame(books, bookPush('snapshot', inst, [['1999', '1']], [['2001', '2']], -1, seq + 5, fresh.checksum())), [{ instrument: inst, expected: String(fresh.checksum()), computed: String(fresh.checksum()) }], 'a snapshot rebuilds it')
})

t.test('books per connection and instrument; reset; frames not made by classify', async (t) => {
  const books = okx.books!.create()
  const one = new ReferenceBook()
  one.apply([['1', '1']], [['2', '1']])
  // Updates before any snapshot: no book to check against.
  t.same(applyFrame(books, bookPush('update', 'A', [['1', '1']], [['2', '1']], 1, 2, one.checksum())), [], 'no snapshot yet')
  t.equal(applyFrame(books, bookPush('snapshot', 'A', [['1', '1']], [['2', '1']], -1, 3, one.checksum()))[0]!.computed, String(one.checksum()))
  const two = new ReferenceBook()
  two.apply([['5', '2']], [])
  t.equal(applyFrame(books, bookPush('snapshot', 'B', [['5', '2']], [], -1, 9, two.checksum()))[0]!.computed, String(two.checksum()), 'a book with no asks')
  t.equal(applyFrame(books, bookPush('update', 'A', [], [], 3, 3, one.checksum()))[0]!.computed, String(one.checksum()), "B's snapshot leaves A's book alone")
  const other = okx.books!.create()
  t.same(applyFrame(other, bookPush('update', 'A', [], [], 3, 3, one.checksum())), [], 'another connection has its own books')
  okx.books!.reset(books, 'A')
  t.same(applyFrame(books, bookPush('update', 'A', [], [], 3, 3, one.checksum())), [], 'after reset: no check until a snapshot')
  t.equal(applyFrame(books, bookPush('update', 'B', [], [], 9, 9, two.checksum())).length, 1, 'B still checks')
  // A frame object classify did not make (a copy, e.g. across threads): the payload is read again.
  two.apply([['5', '0'], ['4', '1']], [])
  t.equal(two.checkString(), '4:1')
  const payload = enc.encode(bookPush('update', 'B', [['5', '0'], ['4', '1']], [], 9, 10, two.checksum()))
  const copy = structuredClone(okx.classify('book', payload, false)) as Extract<FrameClass, { kind: 'rows' }>
  t.same(okx.books!.apply(books, copy, payload), [{ instrument: 'B', expected: String(two.checksum()), computed: String(two.checksum()) }], 'a copy of a frame')
  t.same(okx.books!.apply(books, copy, enc.encode('not json')), [], 'a copy whose payload does not parse: nothing')
})

t.test('connect: subscription, acknowledgement, keep-alive, resync', async (t) => {
  const plan = okx.connect('book', ['BTC-USDT', 'ETH-USDT-SWAP'])
  t.equal(plan.url, 'wss://ws.okx.com:8443/ws/v5/public')
  t.same(plan.send, ['{"id":"1","op":"subscribe","args":[{"channel":"books","instId":"BTC-USDT"},{"channel":"books","instId":"ETH-USDT-SWAP"}]}'])
  t.same(plan.keepAlive, { everyMs: 20_000, text: 'ping' })
  t.equal(OKX_PING_INTERVAL_MS, 20_000)
  t.ok(OKX_PING_INTERVAL_MS < 30_000, 'N < 30 s')
  const answer = (text: string) => plan.answers(enc.encode(text))
  t.equal(answer(SUBSCRIBED('{"channel":"books","instId":"BTC-USDT"}')), 'subscribed', 'the acknowledgement of one argument')
  t.equal(answer(SUBSCRIBED('{"channel":"books","instId":"ETH-USDT-SWAP"}')), 'subscribed')
  t.equal(answer('{"event":"subscribe","arg":{"instId":"BTC-USDT","channel":"books"},"connId":"x"}'), 'subscribed', 'without id, in any member order')
  t.equal(answer(SUBSCRIBED('{"channel":"books","instId":"LTC-USDT"}')), null, 'another instrument')
  t.equal(answer(SUBSCRIBED('{"channel":"books5","instId":"BTC-USDT"}')), null, 'another channel')
  t.equal(answer(ERROR), 'refused', 'an error event')
  t.equal(answer(UNSUBSCRIBED), null)
  t.equal(answer(NOTICE), null)
  t.equal(answer(SNAPSHOT), null, 'market data')
  t.equal(answer('pong'), null)
  t.equal(answer('{"event":"subscribe"'), null, 'not JSON')
  t.equal(plan.answers(Uint8Array.of(0xff, 0xfe)), null, 'not UTF-8')
  t.same(plan.resync!('BTC-USDT'), [
    '{"id":"2","op":"unsubscribe","args":[{"channel":"books","instId":"BTC-USDT"}]}',
    '{"id":"3","op":"subscribe","args":[{"channel":"books","instId":"BTC-USDT"}]}',
  ], 'unsubscribe and subscribe again: the venue sends the snapshot anew')

  t.same(okx.connect('trades', ['BTC-USDT']).send, ['{"id":"1","op":"subscribe","args":[{"channel":"trades","instId":"BTC-USDT"}]}'])
  t.equal(okx.connect('trades', ['BTC-USDT']).resync, undefined, 'only books resync')
  t.same(okx.connect('funding', ['BTC-USD-SWAP']).send, ['{"id":"1","op":"subscribe","args":[{"channel":"funding-rate","instId":"BTC-USD-SWAP"}]}'])
  const liq = okx.connect('liquidations', ['SWAP', 'FUTURES'])
  t.same(liq.send, ['{"id":"1","op":"subscribe","args":[{"channel":"liquidation-orders","instType":"SWAP"},{"channel":"liquidation-orders","instType":"FUTURES"}]}'], 'liquidation-orders by instrument type')
  t.equal(liq.answers(enc.encode(SUBSCRIBED('{"channel":"liquidation-orders","instType":"SWAP"}'))), 'subscribed')
  t.equal(liq.answers(enc.encode(SUBSCRIBED('{"channel":"liquidation-orders","instType":"OPTION"}'))), null)
  for (const channel of CHANNELS) t.same(okx.connect(channel, channel === 'liquidations' ? ['SWAP'] : ['BTC-USDT']).keepAlive, { everyMs: 20_000, text: 'ping' }, `${channel}: pings`)

  t.throws(() => okx.connect('liquidations', ['BTC-USDT-SWAP']), /subscribed by instrument type/)
  t.throws(() => okx.connect('trades', []), RangeError)
  t.throws(() => okx.connect('trades', ['']), RangeError)
  t.throws(() => okx.connect('book', Array.from({ length: 2000 }, (_, i) => `INSTRUMENT-${i}-USDT-SWAP`)), /64 KB/, 'a request over 64 KB')
  t.equal(createOkxAdapter({ wsBase: 'ws://127.0.0.1:9/' }).connect('book', ['BTC-USDT']).url, 'ws://127.0.0.1:9/ws/v5/public', 'at the base it is given')
  t.equal(okx.snapshotRequest('book', 'BTC-USDT'), null, 'the books channel sends its own snapshot')
  t.throws(() => okx.wrapSnapshot('book', 'BTC-USDT', '{}'), RangeError)
})

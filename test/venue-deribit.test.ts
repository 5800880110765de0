import t, { type Test } from 'tap'
import type { Channel } from '../src/formats/record/types.js'
import type { FrameClass, SequenceSpan, SequenceState } from '../src/venues/adapter.js'
import {
  createDeribitAdapter, deribit, deribitBookSequence, deribitRespond, deribitSequence, deribitTradeSequence,
  DERIBIT_HEARTBEAT_INTERVAL_S, DERIBIT_REQUEST_IDS,
} from '../src/venues/deribit.js'

const enc = new TextEncoder()
const classify = (channel: Channel, text: string): FrameClass => deribit.classify(channel, enc.encode(text), false)
const MS = 1_000_000n

/** A subscription notification as the Deribit documentation's "Notifications" article frames every channel's data. */
const note = (channel: string, data: string): string => `{"jsonrpc":"2.0","method":"subscription","params":{"channel":${JSON.stringify(channel)},"data":${data}}}`

function unrep(t: Test, c: FrameClass, code: string, re: RegExp, msg: string): void {
  t.match(c, { kind: 'unrepresentable', code, reason: re }, msg)
}

// Deribit API docs, Subscriptions: book.(instrument_name).(interval) — "First notification example" and
// "Repeated notification example" (the data payloads; the channel name is the subscribe example's).
const BOOK_FIRST = '{"type":"snapshot","timestamp":1554373962454,"instrument_name":"BTC-PERPETUAL","change_id":297217,' +
  '"bids":[["new",5042.34,30],["new",5041.94,20]],"asks":[["new",5042.64,40],["new",5043.3,40]]}'
const BOOK_REPEATED = '{"type":"change","timestamp":1554373911330,"prev_change_id":297217,"instrument_name":"BTC-PERPETUAL","change_id":297218,' +
  '"bids":[["delete",5041.94,0],["delete",5042.34,0]],"asks":[]}'
const BOOK_CHANNEL = 'book.BTC-PERPETUAL.100ms'
const BOOK_SNAPSHOT = note(BOOK_CHANNEL, BOOK_FIRST)
const BOOK_CHANGE = note(BOOK_CHANNEL, BOOK_REPEATED)

// Subscriptions: trades.(instrument_name).(interval) — "Repeated notification example".
const TRADE_0 = '{"trade_seq":30289442,"trade_id":"48079269","timestamp":1590484512188,"tick_direction":2,"price":8950,"mark_price":8948.9,' +
  '"instrument_name":"BTC-PERPETUAL","index_price":8955.88,"direction":"sell","amount":10}'
const TRADES_CHANNEL = 'trades.BTC-PERPETUAL.100ms'
const TRADES = note(TRADES_CHANNEL, `[${TRADE_0}]`)
/** A second trade of the same notification: the next trade_seq, a liquidation (Market data: public trade, `liquidation` "T"). */
const TRADE_1 = '{"trade_seq":30289443,"trade_id":"48079270","timestamp":1590484512187,"tick_direction":0,"price":8950.5,"mark_price":8948.9,' +
  '"instrument_name":"BTC-PERPETUAL","index_price":8955.88,"direction":"buy","amount":20,"liquidation":"T"}'

// Subscriptions: ticker.(instrument_name).(interval) — "Repeated notification example".
const TICKER = '{"best_ask_amount":100,"best_ask_price":36443,"best_bid_amount":5000,"best_bid_price":36442.5,"current_funding":0,' +
  '"estimated_delivery_price":36441.64,"funding_8h":0.0000211,"index_price":36441.64,"instrument_name":"BTC-PERPETUAL",' +
  '"interest_value":1.7362511643080387,"last_price":36457.5,"mark_price":36446.51,"max_price":36991.72,"min_price":35898.37,' +
  '"open_interest":502097590,"settlement_price":36169.49,"state":"open","stats":{"high":36824.5,"low":35213.5,"price_change":0.7229,' +
  '"volume":7871.02139035,"volume_usd":284061480},"timestamp":1623060194301}'
// Subscriptions: perpetual.(instrument_name).(interval) — "Repeated notification example".
const PERPETUAL = '{"interest":0.004999511380756577,"timestamp":1571386349530,"index_price":7872.88}'

t.test('the adapter: trades, book and funding; no liquidations channel', async (t) => {
  t.equal(deribit.name, 'deribit')
  t.same(deribit.channels, ['trades', 'book', 'funding'])
  t.equal(deribit.books, undefined, 'no book checksum')
  t.equal(deribit.about?.checksum, null)
  t.same(Object.keys(deribit.about?.channels ?? {}), ['trades', 'book', 'funding'])
  t.same(deribit.about?.endpoints, ['wss://www.deribit.com/ws/api/v2'])
  t.match(deribit.about?.channels.trades, { streams: /trades\.<instrument>\.100ms/, sequence: /trade_seq/ })
  t.match(deribit.about?.channels.book, { streams: /book\.<instrument>\.100ms/, sequence: /prev_change_id/ })
  t.match(deribit.about?.channels.funding, { streams: /ticker\.<instrument>\.100ms and perpetual\.<instrument>\.100ms, kept raw/ })
  t.throws(() => classify('liquidations', TRADES), { name: 'RangeError', message: /liquidations are marked in its trades/ })
  t.throws(() => deribit.connect('liquidations', ['BTC-PERPETUAL']), RangeError)
  t.equal(deribit.snapshotRequest('book', 'BTC-PERPETUAL'), null, 'the book snapshot comes over the websocket')
  t.equal(deribit.snapshotRequest('trades', 'BTC-PERPETUAL'), null)
  t.throws(() => deribit.wrapSnapshot('book', 'BTC-PERPETUAL', '{}'), RangeError)
  t.throws(() => createDeribitAdapter({ interval: '1s' as '100ms' }), RangeError)
})

t.test('trades -> one row per trade: trade_id, the taker direction, numbers as written, each trade\'s time', async (t) => {
  const ts = 1590484512188n * MS
  t.same(classify('trades', TRADES), {
    kind: 'rows',
    table: 'trades',
    rows: [{ instrument: 'BTC-PERPETUAL', trade_id: '48079269', side: 'sell', price: '8950', size: '10', exchange_time: ts }],
    exchangeTime: ts,
    sequences: [{ sequence: 'trades', instrument: 'BTC-PERPETUAL', first: 30289442n, last: 30289442n, snapshot: false }],
  })
  const two = classify('trades', note(TRADES_CHANNEL, `[${TRADE_0},${TRADE_1}]`))
  t.same(two, {
    kind: 'rows',
    table: 'trades',
    rows: [
      { instrument: 'BTC-PERPETUAL', trade_id: '48079269', side: 'sell', price: '8950', size: '10', exchange_time: ts },
      { instrument: 'BTC-PERPETUAL', trade_id: '48079270', side: 'buy', price: '8950.5', size: '20', exchange_time: ts - MS },
    ],
    exchangeTime: ts - MS,
    sequences: [
      { sequence: 'trades', instrument: 'BTC-PERPETUAL', first: 30289442n, last: 30289442n, snapshot: false },
      { sequence: 'trades', instrument: 'BTC-PERPETUAL', first: 30289443n, last: 30289443n, snapshot: false },
    ],
  }, 'several trades a notification; a liquidation trade is a trade; the frame states the earliest time')
  const exp = classify('trades', TRADES.replace('"price":8950', '"price":8.95E3').replace('"amount":10', '"amount":1e-05'))
  t.match(exp, { kind: 'rows', rows: [{ price: '8950', size: '0.00001' }] }, 'exponents become plain decimals, every digit kept')
  t.match(classify('trades', TRADES.replace('"amount":10', '"amount":10.0')), { kind: 'rows', rows: [{ size: '10.0' }] }, '10.0 stays 10.0')
  const big = classify('trades', TRADES.replace('"trade_seq":30289442', '"trade_seq":9007199254740993'))
  t.match(big, { kind: 'rows', sequences: [{ first: 9007199254740993n }] }, 'sequence numbers beyond 2^53 exactly')
  t.equal(classify('trades', TRADES.replace('"tick_direction":2,', '').replace('"mark_price":8948.9,', '')).kind, 'rows', 'fields not recorded are not checked')
  t.equal(classify('trades', note('trades.BTC-PERPETUAL.raw', `[${TRADE_0}]`)).kind, 'rows', 'every documented interval is read')
  t.equal(classify('trades', note('trades.BTC-PERPETUAL.agg2', `[${TRADE_0}]`)).kind, 'rows')
  t.same(classify('trades', note(TRADES_CHANNEL, '[]')), { kind: 'rows', table: 'trades', rows: [], exchangeTime: null, sequences: [] })
  const option = 'BTC-27SEP19-10500-P'
  const opt = classify('trades', note(`trades.${option}.100ms`, `[${TRADE_0.replace('BTC-PERPETUAL', option).replace('"amount":10', '"amount":0.1,"iv":52.31')}]`))
  t.match(opt, { kind: 'rows', rows: [{ instrument: option, size: '0.1' }], sequences: [{ instrument: option }] }, 'an option: the instrument from the channel and the trade')
})

t.test('a plain trades notification read without its JSON tree gives what the general reading gives', async (t) => {
  // A space before the last brace is still the same JSON (every offset a reason names the same), and never the
  // plain form: the general path reads it.
  const general = (text: string) => classify('trades', text.slice(0, -1) + ' }')
  const swap = (from: string, to: string) => TRADES.replace(from, to)
  const cases = [
    TRADES, note(TRADES_CHANNEL, `[${TRADE_0},${TRADE_1}]`), note('trades.BTC-PERPETUAL.agg2', `[${TRADE_1},${TRADE_0}]`),
    swap('"price":8950,', '"price":0.5,'), swap('"amount":10', '"amount":0.0000001'), swap('"price":8950,', '"price":1e-05,'),
    swap('"price":8950,', '"price":-1,'), swap('"price":8950,', '"price":123456789012345678901,'), swap('"amount":10', '"amount":0.0000000000000000001'),
    swap('"instrument_name":"BTC-PERPETUAL"', '"instrument_name":"ETH-PERPETUAL"'), swap('"direction":"sell"', '"direction":"SELL"'),
    swap('"trade_id":"48079269"', '"trade_id":""'), swap('"trade_seq":30289442', '"trade_seq":18446744073709551616'),
    swap('"timestamp":1590484512188', '"timestamp":9223372036855'), swap('"timestamp":1590484512188', '"timestamp":0'),
    swap('"amount":10', '"amount":"10"'), swap(',"amount":10', ''), swap('"mark_price":8948.9', '"mark_price":-8.9e+3'),
    note('trades.BTC-PERPETUAL.1s', `[${TRADE_0}]`), note(TRADES_CHANNEL, '[]'), TRADES.replace('"sell",', '"sell", '),
    note(TRADES_CHANNEL, `[${TRADE_0},${TRADE_0.replace('"tick_direction":2', '"tick_direction":2,"tick_direction":3')}]`),
  ]
  for (const text of cases) t.same(classify('trades', text), general(text), text.slice(60, 200))
  t.match(classify('trades', TRADES), { kind: 'rows', rows: [{ instrument: 'BTC-PERPETUAL', trade_id: '48079269', side: 'sell', price: '8950', size: '10' }] })
  t.match(classify('trades', swap('"price":8950,', '"price":08950,')), { kind: 'unrepresentable', code: 'not-json' }, 'a leading zero is not JSON, on either path')
})

t.test('malformed trades yield no rows and a reason; ids that parsed still count', async (t) => {
  unrep(t, classify('trades', TRADES.replace('"direction":"sell"', '"direction":"short"')), 'structure', /direction "short" is not buy or sell/, 'direction')
  unrep(t, classify('trades', TRADES.replace('"price":8950', '"price":"8950"')), 'structure', /price is not a number/, 'price as a string')
  unrep(t, classify('trades', TRADES.replace('"amount":10', '"amount":null')), 'structure', /amount is not a number/, 'amount null')
  unrep(t, classify('trades', TRADES.replace('"price":8950', '"price":0.0000000000000000001')), 'decimal', /price 0.0000000000000000001/, '19 fractional digits')
  unrep(t, classify('trades', TRADES.replace('"amount":10', '"amount":1e20')), 'decimal', /amount 1e20/, '10^20')
  unrep(t, classify('trades', TRADES.replace('"trade_id":"48079269"', '"trade_id":48079269')), 'structure', /trade_id is not a string/, 'trade_id a number')
  unrep(t, classify('trades', TRADES.replace('"trade_id":"48079269"', '"trade_id":""')), 'structure', /trade_id is empty/, 'trade_id empty')
  unrep(t, classify('trades', TRADES.replace('"timestamp":1590484512188', '"timestamp":"1590484512188"')), 'structure', /timestamp is not a number/, 'time a string')
  unrep(t, classify('trades', TRADES.replace('"timestamp":1590484512188', '"timestamp":1590484512188.5')), 'structure', /timestamp is not a non-negative integer/, 'a fraction of a ms')
  unrep(t, classify('trades', TRADES.replace('"timestamp":1590484512188', '"timestamp":9223372036855')), 'time', /does not fit int64 nanoseconds/, 'year 2262')
  unrep(t, classify('trades', TRADES.replace('"trade_seq":30289442', '"trade_seq":-1')), 'structure', /trade_seq is not a non-negative integer/, 'negative seq')
  unrep(t, classify('trades', TRADES.replace('"instrument_name":"BTC-PERPETUAL"', '"instrument_name":"ETH-PERPETUAL"')), 'structure', /instrument_name "ETH-PERPETUAL" is not the channel's "BTC-PERPETUAL"/, 'another instrument')
  unrep(t, classify('trades', note(TRADES_CHANNEL, TRADE_0)), 'structure', /trades: data is not an array/, 'one trade not in an array')
  unrep(t, classify('trades', note(TRADES_CHANNEL, '[1]')), 'structure', /data\[0\] is not an object/, 'a trade that is no object')
  unrep(t, classify('trades', note('trades.BTC-PERPETUAL.1s', `[${TRADE_0}]`)), 'structure', /interval "1s"/, 'an undocumented interval')
  unrep(t, classify('trades', note('trades.future.BTC.100ms', `[${TRADE_0}]`)), 'structure', /not the channel's "future.BTC"/, 'trades by kind and currency are not subscribed')
  unrep(t, classify('trades', note('trades', `[${TRADE_0}]`)), 'structure', /a notification of channel "trades" on channel trades/, 'a channel name without instrument')
  // The sequence numbers of a frame whose rows do not parse.
  const c = classify('trades', note(TRADES_CHANNEL, `[${TRADE_0},${TRADE_1.replace('"price":8950.5', '"price":8950.50000000000000000001')}]`))
  t.match(c, { kind: 'unrepresentable', code: 'decimal' })
  t.same(c.kind === 'unrepresentable' && c.sequences?.map((s) => s.first), [30289442n, 30289443n], 'every trade whose trade_seq parsed')
  const noSeq = classify('trades', note(TRADES_CHANNEL, `[${TRADE_0.replace('"trade_seq":30289442,', '')},${TRADE_1}]`))
  t.match(noSeq, { kind: 'unrepresentable', code: 'structure', reason: /trades 0: trade_seq is missing/ })
  t.same(noSeq.kind === 'unrepresentable' && noSeq.sequences?.map((s) => s.first), [30289443n], 'the other trade still counts')
  const none = classify('trades', TRADES.replace('"trade_seq":30289442,', ''))
  t.equal(none.kind === 'unrepresentable' ? none.sequences : 'rows', undefined, 'no span when no id parsed')
})

t.test('book: the first notification -> book_snapshots, changes -> book_deltas; delete is size 0', async (t) => {
  const t0 = 1554373962454n * MS
  const row = (side: string, price: string, size: string, time: bigint) => ({ instrument: 'BTC-PERPETUAL', trade_id: null, side, price, size, exchange_time: time })
  t.same(classify('book', BOOK_SNAPSHOT), {
    kind: 'rows',
    table: 'book_snapshots',
    rows: [row('bid', '5042.34', '30', t0), row('bid', '5041.94', '20', t0), row('ask', '5042.64', '40', t0), row('ask', '5043.3', '40', t0)],
    exchangeTime: t0,
    sequences: [{ sequence: 'book', instrument: 'BTC-PERPETUAL', first: 297217n, last: 297217n, snapshot: true }],
  }, 'bids then asks, in the order sent')
  const t1 = 1554373911330n * MS
  t.same(classify('book', BOOK_CHANGE), {
    kind: 'rows',
    table: 'book_deltas',
    rows: [row('bid', '5041.94', '0', t1), row('bid', '5042.34', '0', t1)],
    exchangeTime: t1,
    sequences: [{ sequence: 'book', instrument: 'BTC-PERPETUAL', first: 297218n, last: 297218n, snapshot: false, previous: 297217n }],
  }, 'the span covers (prev_change_id, change_id]')
  const mixed = classify('book', BOOK_CHANGE.replace('"asks":[]', '"asks":[["new",5043.5,120],["change",5042.64,15.5],["delete",5043.3,0.0]]'))
  t.match(mixed, { kind: 'rows', rows: [{ side: 'bid' }, { side: 'bid' }, { side: 'ask', price: '5043.5', size: '120' }, { side: 'ask', price: '5042.64', size: '15.5' }, { side: 'ask', price: '5043.3', size: '0' }] },
    'new and change carry the new amount; delete is written 0 (0.0 on the wire)')
  const odd = classify('book', BOOK_CHANGE.replace('["delete",5041.94,0]', '["delete",5041.94,7]'))
  t.match(odd, { kind: 'rows', rows: [{ size: '0' }] }, 'a delete is 0 whatever amount it carries (the raw file keeps it)')
  const aggregated = classify('book', BOOK_CHANGE.replace('"prev_change_id":297217', '"prev_change_id":297210'))
  t.match(aggregated, { kind: 'rows', sequences: [{ first: 297211n, last: 297218n, previous: 297210n }] }, 'change ids need not be dense')
  t.match(classify('book', BOOK_CHANGE.replace('"bids":[["delete",5041.94,0],["delete",5042.34,0]]', '"bids":[]')), { kind: 'rows', table: 'book_deltas', rows: [] }, 'a change of no level')
  t.match(classify('book', BOOK_SNAPSHOT.replace('"change_id":297217', '"change_id":297217,"prev_change_id":297100')), { kind: 'rows', table: 'book_snapshots', sequences: [{ first: 297217n, snapshot: true }] },
    'a prev_change_id in a snapshot is not looked at')
  t.match(classify('book', note('book.BTC-PERPETUAL.raw', BOOK_FIRST)), { kind: 'rows', table: 'book_snapshots' }, 'the raw interval is read too')
  t.match(classify('book', note(BOOK_CHANNEL, BOOK_FIRST.replace('5042.34,30', '5042.34,3e1'))), { kind: 'rows', rows: [{ size: '30' }] })
})

t.test('malformed book notifications yield no rows; their change ids still count when they parsed', async (t) => {
  const changeIds = (c: FrameClass) => (c.kind === 'unrepresentable' ? c.sequences : 'rows')
  let c = classify('book', BOOK_SNAPSHOT.replace('["new",5041.94,20]', '["change",5041.94,20]'))
  unrep(t, c, 'structure', /bids\[1\]: action "change" is not new/, 'a snapshot is all new')
  t.same(changeIds(c), [{ sequence: 'book', instrument: 'BTC-PERPETUAL', first: 297217n, last: 297217n, snapshot: true }])
  c = classify('book', BOOK_CHANGE.replace('"delete",5041.94', '"remove",5041.94'))
  unrep(t, c, 'structure', /action "remove" is not new or change or delete/, 'an unknown action')
  t.match(changeIds(c), [{ previous: 297217n, last: 297218n }])
  unrep(t, classify('book', BOOK_CHANGE.replace('["delete",5041.94,0]', '["delete",5041.94]')), 'structure', /bids\[0\] is not an \[action, price, amount\] triple/, 'a pair')
  unrep(t, classify('book', BOOK_CHANGE.replace('["delete",5041.94,0]', '{"action":"delete"}')), 'structure', /bids\[0\] is not an \[action, price, amount\] triple/, 'an object')
  unrep(t, classify('book', BOOK_CHANGE.replace('["delete",5041.94,0]', '[1,5041.94,0]')), 'structure', /action that is not a string/, 'action a number')
  unrep(t, classify('book', BOOK_CHANGE.replace('["delete",5041.94,0]', '["delete",5041.94,null]')), 'structure', /bids\[0\] amount is not a number/, 'a delete without a number')
  unrep(t, classify('book', BOOK_CHANGE.replace('["delete",5041.94,0]', '["delete","5041.94",0]')), 'structure', /bids\[0\] price is not a number/, 'price a string')
  c = classify('book', BOOK_SNAPSHOT.replace('5042.34,30', '5042.34,1e-19'))
  unrep(t, c, 'decimal', /bids\[0\] amount 1e-19/, 'an amount DECIMAL(38, 18) cannot hold')
  t.match(changeIds(c), [{ first: 297217n }])
  c = classify('book', BOOK_CHANGE.replace('"timestamp":1554373911330', '"timestamp":99999999999999999'))
  unrep(t, c, 'time', /timestamp 99999999999999999 ms does not fit/, 'a time beyond int64 ns')
  t.match(changeIds(c), [{ last: 297218n }])
  unrep(t, classify('book', BOOK_CHANGE.replace('"asks":[]', '"asks":null')), 'structure', /asks is not an array/, 'asks null')
  unrep(t, classify('book', BOOK_CHANGE.replace('"asks":[],', '').replace(',"asks":[]', '')), 'structure', /asks is missing/, 'no asks')
  // Before the span: no change ids to count.
  for (const [text, re, msg] of [
    [BOOK_CHANGE.replace('"prev_change_id":297217,', ''), /book change: prev_change_id is missing/, 'a change without prev_change_id'],
    [BOOK_CHANGE.replace('"prev_change_id":297217', '"prev_change_id":297218'), /change_id 297218 is not after prev_change_id 297218/, 'change_id not after prev_change_id'],
    [BOOK_CHANGE.replace('"change_id":297218', '"change_id":"297218"'), /change_id is not a number/, 'change_id a string'],
    [BOOK_CHANGE.replace('"type":"change"', '"type":"update"'), /book: type "update" is not snapshot or change/, 'an unknown type'],
    [BOOK_CHANGE.replace('"type":"change",', ''), /book: type is missing/, 'no type'],
    [BOOK_CHANGE.replace('"instrument_name":"BTC-PERPETUAL"', '"instrument_name":"ETH-PERPETUAL"'), /not the channel's "BTC-PERPETUAL"/, 'another instrument'],
    [note(BOOK_CHANNEL, '[]'), /book: data is not an object/, 'data an array'],
    [note('book.BTC-PERPETUAL.none.10.100ms', BOOK_FIRST), /not the channel's "BTC-PERPETUAL.none.10"/, 'the grouped book is not subscribed'],
  ] as const) {
    const u = classify('book', text)
    unrep(t, u, 'structure', re, msg)
    t.equal(u.kind === 'unrepresentable' ? u.sequences : 'rows', undefined, `${msg}: no span`)
  }
  unrep(t, classify('book', TRADES), 'structure', /a notification of channel "trades.BTC-PERPETUAL.100ms" on channel book/, 'a trade on the book connection')
  unrep(t, classify('trades', BOOK_SNAPSHOT), 'structure', /channel "book.BTC-PERPETUAL.100ms" on channel trades/, 'a book on the trades connection')
})

t.test('funding: ticker and perpetual notifications are data with their timestamp, no rows, no sequence', async (t) => {
  t.same(classify('funding', note('ticker.BTC-PERPETUAL.100ms', TICKER)), { kind: 'data', exchangeTime: 1623060194301n * MS, sequences: [] })
  t.same(classify('funding', note('perpetual.BTC-PERPETUAL.100ms', PERPETUAL)), { kind: 'data', exchangeTime: 1571386349530n * MS, sequences: [] })
  const future = TICKER.replace('"current_funding":0,', '').replace('"funding_8h":0.0000211,', '').replace('BTC-PERPETUAL', 'BTC-27SEP19')
  t.same(classify('funding', note('ticker.BTC-27SEP19.100ms', future)), { kind: 'data', exchangeTime: 1623060194301n * MS, sequences: [] }, 'a ticker without the perpetual-only fields')
  t.equal(classify('funding', note('perpetual.BTC-PERPETUAL.100ms', PERPETUAL.replace('0.004999511380756577', '4.999511380756577123e-7'))).kind, 'data',
    'funding values are kept raw: their DECIMAL(38, 18) fit is not asked')
  unrep(t, classify('funding', note('ticker.BTC-PERPETUAL.100ms', TICKER.replace('"current_funding":0', '"current_funding":"0"'))), 'structure', /current_funding is not a number/, 'funding as a string')
  unrep(t, classify('funding', note('ticker.BTC-PERPETUAL.100ms', TICKER.replace('"funding_8h":0.0000211', '"funding_8h":null'))), 'structure', /funding_8h is not a number/, 'funding null')
  unrep(t, classify('funding', note('ticker.BTC-PERPETUAL.100ms', TICKER.replace(',"timestamp":1623060194301', ''))), 'structure', /ticker: timestamp is missing/, 'no time')
  unrep(t, classify('funding', note('ticker.ETH-PERPETUAL.100ms', TICKER)), 'structure', /not the channel's "ETH-PERPETUAL"/, 'another instrument')
  unrep(t, classify('funding', note('perpetual.BTC-PERPETUAL.100ms', PERPETUAL.replace('"interest":0.004999511380756577,', ''))), 'structure', /perpetual: interest is missing/, 'no interest')
  unrep(t, classify('funding', note('perpetual.BTC-PERPETUAL.100ms', PERPETUAL.replace('"index_price":7872.88', '"index_price":"7872.88"'))), 'structure', /index_price is not a number/, 'index a string')
  unrep(t, classify('funding', note('perpetual.BTC-PERPETUAL.100ms', PERPETUAL.replace('1571386349530', '9223372036855'))), 'time', /does not fit int64/, 'a time beyond int64 ns')
  unrep(t, classify('funding', TRADES), 'structure', /on channel funding/, 'a trade on the funding connection')
  unrep(t, classify('book', note('ticker.BTC-PERPETUAL.100ms', TICKER)), 'structure', /on channel book/, 'a ticker on the book connection')
})

t.test('control frames: answers, heartbeats, test requests, platform state, on every channel', async (t) => {
  for (const channel of ['trades', 'book', 'funding'] as const) {
    // Session Management: public/set_heartbeat — the response example (with the adapter's id).
    t.same(classify(channel, '{"jsonrpc":"2.0","id":1,"result":"ok"}'), { kind: 'control', note: 'public/set_heartbeat 1 answered' })
    // Subscription Management: public/subscribe — the response: the list of subscribed channels.
    t.same(classify(channel, '{"jsonrpc":"2.0","id":2,"result":["trades.BTC-PERPETUAL.100ms","platform_state"],"usIn":1704153600000000,"usOut":1704153600001234,"usDiff":1234}'),
      { kind: 'control', note: 'public/subscribe 2 answered: 2 channels' })
    // Supporting: public/test — the response: the API version.
    t.same(classify(channel, '{"jsonrpc":"2.0","id":3,"result":{"version":"2.1.26"}}'), { kind: 'control', note: 'public/test 3 answered' })
    // Response Format — "Error Response".
    t.match(classify(channel, '{"jsonrpc":"2.0","error":{"code":10009,"message":"invalid_argument","data":{"reason":"invalid instrument_name","param":"instrument_name"}},"usIn":1704153600000000,"usOut":1704153600001234,"usDiff":1234,"id":42}'),
      { kind: 'control', note: /^error answering request 42: .*invalid_argument/ })
    // public/subscribe — the documented 401 answer: an integer error beside a message.
    t.match(classify(channel, '{"jsonrpc":"2.0","id":2,"message":"unauthorized","error":13009}'), { kind: 'control', note: /^error answering public\/subscribe 2: / })
    t.same(classify(channel, '{"jsonrpc":"2.0","id":"a","result":[]}'), { kind: 'control', note: 'request "a" answered: 0 channels' }, 'an id may be a string')
    // public/set_heartbeat: the server sends "heartbeat messages and test_request messages".
    t.same(classify(channel, '{"jsonrpc":"2.0","method":"heartbeat","params":{"type":"heartbeat"}}'), { kind: 'control', note: 'heartbeat' })
    t.same(classify(channel, '{"params":{"type":"test_request"},"method":"heartbeat","jsonrpc":"2.0"}'), { kind: 'control', note: 'heartbeat test_request (answered with public/test)' })
    // Subscriptions: platform_state and platform_state.public_methods_state — "Repeated notification example".
    t.same(classify(channel, note('platform_state', '{"price_index":"sol_usdc","locked":true}')), { kind: 'control', note: 'platform_state: {"price_index":"sol_usdc","locked":true}' }, 'a lock is no closing notice')
    t.match(classify(channel, note('platform_state.public_methods_state', '{"allow_unauthenticated_public_requests":true}')), { kind: 'control', note: /^platform_state.public_methods_state: / })
    t.same(classify(channel, note('announcements', '{"id":1532593832021,"title":"Scheduled maintenance","important":true}')),
      { kind: 'control', note: 'announcements: {"id":1532593832021,"title":"Scheduled maintenance","important":true}' })
  }
  const long = classify('book', note('announcements', `{"body":"${'x'.repeat(1000)}"}`))
  t.ok(long.kind === 'control' && long.note.length <= 201, 'notes are clipped')
  t.notOk('closing' in long, 'Deribit documents no notice of a coming disconnection')
})

t.test('frames that are not JSON, not an object, or of no documented kind', async (t) => {
  unrep(t, deribit.classify('trades', enc.encode(TRADES), true), 'not-json', /binary frame/, 'binary')
  unrep(t, deribit.classify('trades', Uint8Array.of(0x7b, 0xff, 0x7d), false), 'not-json', /not UTF-8/, 'not UTF-8')
  unrep(t, classify('trades', TRADES.slice(0, -1)), 'not-json', /not JSON/, 'truncated')
  unrep(t, classify('book', BOOK_CHANGE.replace('"change_id":297218', '"change_id":297218,"change_id":297219')), 'not-json', /duplicate key "change_id"/, 'duplicate key')
  unrep(t, classify('trades', '\ufeff' + TRADES), 'not-json', /not JSON/, 'a BOM')
  unrep(t, classify('trades', '[1]'), 'structure', /not a JSON object/, 'array')
  unrep(t, classify('trades', TRADES.replace('"jsonrpc":"2.0",', '')), 'structure', /jsonrpc is missing/, 'no jsonrpc')
  unrep(t, classify('trades', TRADES.replace('"jsonrpc":"2.0"', '"jsonrpc":"1.0"')), 'structure', /jsonrpc is "1.0", not "2.0"/, 'another jsonrpc')
  unrep(t, classify('trades', '{"jsonrpc":"2.0","id":2}'), 'structure', /neither a notification nor a response/, 'an id without result or error')
  unrep(t, classify('trades', '{"jsonrpc":"2.0","id":true,"result":"ok"}'), 'structure', /id is not a number or a string/, 'id a boolean')
  unrep(t, classify('trades', '{"jsonrpc":"2.0","method":7}'), 'structure', /method is not a string/, 'method a number')
  unrep(t, classify('trades', '{"jsonrpc":"2.0","method":"public/test","params":{}}'), 'structure', /method "public\/test"/, 'a request from the server')
  unrep(t, classify('trades', '{"jsonrpc":"2.0","method":"heartbeat","params":{"type":"ping"}}'), 'structure', /heartbeat: type "ping" is not heartbeat or test_request/, 'an unknown heartbeat')
  unrep(t, classify('trades', '{"jsonrpc":"2.0","method":"heartbeat"}'), 'structure', /heartbeat: params is missing/, 'a heartbeat without params')
  unrep(t, classify('trades', '{"jsonrpc":"2.0","method":"subscription","params":[]}'), 'structure', /subscription: params is not an object/, 'params an array')
  unrep(t, classify('trades', '{"jsonrpc":"2.0","method":"subscription","params":{"data":[]}}'), 'structure', /params: channel is missing/, 'no channel')
  unrep(t, classify('trades', '{"jsonrpc":"2.0","method":"subscription","params":{"channel":"trades.BTC-PERPETUAL.100ms"}}'), 'structure', /data is missing/, 'no data')
  unrep(t, classify('trades', note('deribit_price_index.btc_usd', '{"timestamp":1535098298227,"price":6521.17,"index_name":"btc_usd"}')), 'structure', /channel "deribit_price_index.btc_usd" on channel trades/,
    'a channel never subscribed (the Notifications article\'s example)')
})

const tradeSpan = (seq: bigint, instrument = 'BTC-PERPETUAL'): SequenceSpan => ({ sequence: 'trades', instrument, first: seq, last: seq, snapshot: false })
const snapshotSpan = (id: bigint): SequenceSpan => ({ sequence: 'book', instrument: 'BTC-PERPETUAL', first: id, last: id, snapshot: true })
const changeSpan = (prev: bigint, id: bigint): SequenceSpan => ({ sequence: 'book', instrument: 'BTC-PERPETUAL', first: prev + 1n, last: id, snapshot: false, previous: prev })

t.test('trade_seq: +1 per trade of an instrument', async (t) => {
  const s0 = deribitSequence(undefined, tradeSpan(30289442n))
  t.same(s0, { verdict: 'start', state: { last: 30289442n, streamFirst: 30289442n } })
  const s1 = deribitSequence(s0.state, tradeSpan(30289443n))
  t.same(s1, { verdict: 'next', state: { last: 30289443n, streamFirst: 30289442n } })
  t.same(deribitSequence(s1.state, tradeSpan(30289446n)), { verdict: 'gap', afterId: '30289443', beforeId: '30289446', state: { last: 30289446n, streamFirst: 30289442n } })
  const stale = deribitSequence(s1.state, tradeSpan(30289443n))
  t.equal(stale.verdict, 'stale', 'a repeated trade')
  t.equal(stale.state, s1.state)
  t.equal(deribitTradeSequence(s1.state, tradeSpan(1n)).verdict, 'stale')
  t.equal(deribit.sequence, deribitSequence)
  // The spans of a classified frame, judged in order.
  const c = classify('trades', note(TRADES_CHANNEL, `[${TRADE_0},${TRADE_1}]`))
  let state: SequenceState | undefined
  const verdicts = (c.kind === 'rows' ? c.sequences : []).map((s) => { const v = deribit.sequence(state, s); state = v.state; return v.verdict })
  t.same(verdicts, ['start', 'next'])
})

t.test('change_id chain: prev_change_id = the previous change_id; a snapshot starts it', async (t) => {
  const snap = deribitBookSequence(undefined, snapshotSpan(297217n))
  t.same(snap, { verdict: 'snapshot', state: { last: 297217n, streamFirst: null } })
  const next = deribitBookSequence(snap.state, changeSpan(297217n, 297218n))
  t.same(next, { verdict: 'next', state: { last: 297218n, streamFirst: 297218n } })
  const jump = deribitBookSequence(next.state, changeSpan(297218n, 297240n))
  t.same(jump, { verdict: 'next', state: { last: 297240n, streamFirst: 297218n } }, 'ids need not be dense: only the chain counts')
  t.same(deribitBookSequence(jump.state, changeSpan(297250n, 297260n)),
    { verdict: 'gap', afterId: '297240', beforeId: '297251', state: { last: 297260n, streamFirst: 297218n } }, 'the messages up to 297250 were missed')
  const stale = deribitBookSequence(jump.state, changeSpan(297217n, 297218n))
  t.equal(stale.verdict, 'stale', 'a change already accounted for')
  t.equal(stale.state, jump.state)
  t.equal(deribitBookSequence(jump.state, changeSpan(297230n, 297240n)).verdict, 'stale', 'ending at the last id')
  t.same(deribitBookSequence(jump.state, changeSpan(297230n, 297245n)), { verdict: 'next', state: { last: 297245n, streamFirst: 297218n } },
    'a change that covers the last id (another connection\'s 100 ms group) continues the chain')
  t.same(deribitBookSequence(undefined, changeSpan(297217n, 297218n)), { verdict: 'start', state: { last: 297218n, streamFirst: 297218n } }, 'a change first: nothing to compare')
  // A snapshot starts the chain anew: after a gap, the resubscribed book's snapshot.
  const after = deribitBookSequence(jump.state, snapshotSpan(297300n))
  t.same(after, { verdict: 'snapshot', state: { last: 297300n, streamFirst: 297218n } })
  t.equal(deribitBookSequence(after.state, changeSpan(297300n, 297301n)).verdict, 'next')
  t.same(deribitBookSequence(jump.state, snapshotSpan(297220n)), { verdict: 'snapshot', state: { last: 297240n, streamFirst: 297218n } },
    'an older snapshot (another connection\'s) never takes the state back')
  t.equal(deribitBookSequence({ last: 10n, streamFirst: null }, { sequence: 'book', instrument: 'X', first: 11n, last: 12n, snapshot: false }).verdict, 'next', 'no previous: first - 1')
  // On the documentation's own two notifications.
  let state: SequenceState | undefined
  const verdicts = [BOOK_SNAPSHOT, BOOK_CHANGE, BOOK_CHANGE.replace('"prev_change_id":297217', '"prev_change_id":297218').replace('"change_id":297218', '"change_id":297219'),
    BOOK_CHANGE.replace('"prev_change_id":297217', '"prev_change_id":297225').replace('"change_id":297218', '"change_id":297226')].map((text) => {
    const c = classify('book', text)
    const span = c.kind === 'rows' ? c.sequences[0]! : undefined
    if (span === undefined) return 'no span'
    const v = deribit.sequence(state, span)
    state = v.state
    return v.verdict === 'gap' ? `gap ${v.afterId} ${v.beforeId}` : v.verdict
  })
  t.same(verdicts, ['snapshot', 'next', 'next', 'gap 297219 297226'])
})

t.test('respond: a test_request is answered with public/test; nothing else is', async (t) => {
  const answer = '{"jsonrpc":"2.0","id":3,"method":"public/test","params":{}}'
  t.equal(deribitRespond(enc.encode('{"jsonrpc":"2.0","method":"heartbeat","params":{"type":"test_request"}}')), answer)
  t.equal(deribitRespond(enc.encode('{"params":{"type":"test_request"},"method":"heartbeat","jsonrpc":"2.0"}')), answer, 'in any key order')
  t.equal(deribitRespond(enc.encode('{"jsonrpc":"2.0","method":"heartbeat","params":{"type":"heartbeat"}}')), null, 'a plain heartbeat')
  t.equal(deribitRespond(enc.encode(note('platform_state', '{"test_request":true}'))), null, 'the word elsewhere')
  t.equal(deribitRespond(enc.encode(TRADES)), null)
  t.equal(deribitRespond(enc.encode('{"method":"heartbeat","params":{"type":"test_request"}')), null, 'not JSON')
  t.equal(deribitRespond(Uint8Array.of(0xff)), null)
  t.equal(deribitRespond(enc.encode(`{"method":"heartbeat","params":{"type":"test_request"},"pad":"${'x'.repeat(600)}"}`)), null, 'a long frame is not parsed')
  const plan = deribit.connect('trades', ['BTC-PERPETUAL'])
  t.equal(plan.respond?.(enc.encode('{"jsonrpc":"2.0","method":"heartbeat","params":{"type":"test_request"}}')), answer, 'every plan answers')
  t.same(JSON.parse(answer), { jsonrpc: '2.0', id: DERIBIT_REQUEST_IDS.test, method: 'public/test', params: {} })
})

t.test('connect: set_heartbeat, one subscribe, its answer, and the book\'s resync', async (t) => {
  t.equal(DERIBIT_HEARTBEAT_INTERVAL_S, 10, 'the documented minimum')
  const trades = deribit.connect('trades', ['BTC-PERPETUAL', 'ETH-PERPETUAL'])
  t.equal(trades.url, 'wss://www.deribit.com/ws/api/v2')
  t.same(trades.send, [
    '{"jsonrpc":"2.0","id":1,"method":"public/set_heartbeat","params":{"interval":10}}',
    '{"jsonrpc":"2.0","id":2,"method":"public/subscribe","params":{"channels":["trades.BTC-PERPETUAL.100ms","trades.ETH-PERPETUAL.100ms","platform_state"]}}',
  ])
  t.equal(trades.keepAlive, undefined, 'the venue sends the heartbeats')
  t.equal(trades.silenceMs, undefined, 'heartbeats every 10 s: no long silence')
  t.equal(trades.resync, undefined, 'trades have no book to resync')
  const ta = (text: string) => trades.answers(enc.encode(text))
  t.equal(ta('{"jsonrpc":"2.0","id":2,"result":["trades.BTC-PERPETUAL.100ms","trades.ETH-PERPETUAL.100ms","platform_state"],"usIn":1,"usOut":2,"usDiff":1}'), 'subscribed')
  t.equal(ta('{"jsonrpc":"2.0","id":2,"result":["trades.ETH-PERPETUAL.100ms"]}'), 'subscribed', 'one instrument is enough')
  t.equal(ta('{"jsonrpc":"2.0","id":2,"result":["platform_state"]}'), 'refused', 'no data channel: nothing would come')
  t.equal(ta('{"jsonrpc":"2.0","id":2,"result":[]}'), 'refused')
  t.equal(ta('{"jsonrpc":"2.0","id":2,"error":{"code":10009,"message":"invalid_argument"}}'), 'refused')
  t.equal(ta('{"jsonrpc":"2.0","id":2,"message":"unauthorized","error":13009}'), 'refused', 'the 401 answer')
  t.equal(ta('{"jsonrpc":"2.0","id":1,"result":"ok"}'), null, 'the set_heartbeat answer')
  t.equal(ta('{"jsonrpc":"2.0","id":1,"error":{"code":10009,"message":"invalid_argument"}}'), null, 'a refused heartbeat refuses no subscription')
  t.equal(ta('{"jsonrpc":"2.0","id":"2","result":["trades.BTC-PERPETUAL.100ms"]}'), null, 'not our id')
  t.equal(ta('{"jsonrpc":"2.0","id":2,"result":"ok"}'), null, 'not a list')
  t.equal(ta('{"jsonrpc":"2.0","method":"heartbeat","params":{"type":"test_request"}}'), null)
  t.equal(ta(TRADES), null)
  t.equal(ta('{"jsonrpc":"2.0","id":2,"result":['), null, 'not JSON')
  // The book: its resync unsubscribes and subscribes the instrument's book, whose first notification is a snapshot.
  const book = deribit.connect('book', ['BTC-PERPETUAL'])
  t.same(JSON.parse(book.send[1]!), { jsonrpc: '2.0', id: 2, method: 'public/subscribe', params: { channels: ['book.BTC-PERPETUAL.100ms', 'platform_state'] } })
  t.same(book.resync?.('BTC-PERPETUAL'), [
    '{"jsonrpc":"2.0","id":4,"method":"public/unsubscribe","params":{"channels":["book.BTC-PERPETUAL.100ms"]}}',
    '{"jsonrpc":"2.0","id":5,"method":"public/subscribe","params":{"channels":["book.BTC-PERPETUAL.100ms"]}}',
  ])
  t.equal(book.answers(enc.encode('{"jsonrpc":"2.0","id":5,"result":["book.BTC-PERPETUAL.100ms"]}')), null, 'the resync\'s answer decides nothing')
  t.same(classify('book', '{"jsonrpc":"2.0","id":4,"result":["book.BTC-PERPETUAL.100ms"]}'), { kind: 'control', note: 'public/unsubscribe (resync) 4 answered: 1 channels' })
  // Funding: the ticker and the perpetual channel of each instrument.
  const funding = deribit.connect('funding', ['BTC-PERPETUAL'])
  t.same(JSON.parse(funding.send[1]!).params.channels, ['ticker.BTC-PERPETUAL.100ms', 'perpetual.BTC-PERPETUAL.100ms', 'platform_state'])
  t.equal(funding.answers(enc.encode('{"jsonrpc":"2.0","id":2,"result":["perpetual.BTC-PERPETUAL.100ms"]}')), 'subscribed')
  t.equal(funding.resync, undefined)
  // Options: another endpoint, the raw interval.
  const raw = createDeribitAdapter({ wsBase: 'ws://127.0.0.1:9000/ws/api/v2', interval: 'raw' })
  const rawBook = raw.connect('book', ['ETH-PERPETUAL'])
  t.equal(rawBook.url, 'ws://127.0.0.1:9000/ws/api/v2')
  t.same(JSON.parse(rawBook.send[1]!).params.channels, ['book.ETH-PERPETUAL.raw', 'platform_state'])
  t.same(raw.about?.endpoints, ['ws://127.0.0.1:9000/ws/api/v2'])
  t.match(raw.about?.channels.book, { streams: /book\.<instrument>\.raw/ })
  t.equal(raw.classify('book', enc.encode(BOOK_SNAPSHOT), false).kind, 'rows', 'classify reads every interval, whatever the adapter subscribes')
  t.throws(() => deribit.connect('trades', []), RangeError)
  t.throws(() => deribit.connect('trades', ['']), RangeError)
})

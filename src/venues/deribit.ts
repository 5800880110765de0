/**
 * Deribit (name `deribit`), API v2: JSON-RPC 2.0 over one websocket, `wss://www.deribit.com/ws/api/v2`.
 * Channels `trades` (`trades.<instrument>.<interval>`), `book` (`book.<instrument>.<interval>`) and `funding`
 * (`ticker.<instrument>.<interval>` and `perpetual.<instrument>.<interval>`), each on a connection of its own.
 * There is no `liquidations` channel: Deribit publishes no liquidation stream; it marks the trades a
 * liquidation caused with a `liquidation` field in the trades channel, which the raw file keeps.
 *
 * Assumptions, from Deribit's API documentation (docs/venues/deribit.md gives the section each comes from,
 * what the recorder can and cannot detect on this venue, and the open questions). Check them against the
 * current documentation when Deribit changes its API:
 *
 * - Every message is JSON text with `"jsonrpc":"2.0"` (Response Format; Notifications). A request's answer
 *   is `{"jsonrpc","id","result"}` or `{"jsonrpc","id","error"}` (the error an object `{code, message,
 *   data}`, or, in the documented 401 answer, an integer beside a `message`), plus timing fields. A
 *   subscription notification is `{"jsonrpc","method":"subscription","params":{"channel","data"}}`. The
 *   server's heartbeats are `{"jsonrpc","method":"heartbeat","params":{"type":"heartbeat"|"test_request"}}`
 *   (the method and the two types are named in public/set_heartbeat; the exact message is not shown there).
 * - Prices, amounts and funding values are JSON numbers: read losslessly ({@link readJson}) and written to
 *   rows as the plain decimal of the number's source text ({@link jsonNumberToPlainDecimal}: the text
 *   itself without an exponent, `1e-05` -> `0.00001` with one). A price or amount DECIMAL(38, 18) cannot
 *   hold is `decimal`; one that is not a JSON number is `structure`. Times are integer milliseconds.
 * - Subscribe: `public/set_heartbeat` with interval 10 (the documented minimum, "not less than 10"), then
 *   one `public/subscribe` with every instrument's channel and `platform_state`. The subscription is
 *   acknowledged by `{"id":2,"result":[channels]}`: it counts as subscribed when the result lists at least
 *   one requested data channel, refused when it lists none or is an error.
 * - Heartbeats: once set, the server sends `heartbeat` and `test_request` messages, and "if your software
 *   fails to [answer a test_request with public/test], the API server will immediately close the
 *   connection" (public/set_heartbeat): the plan answers each test_request with `public/test`. With a
 *   10-second interval a healthy connection is never silent for long, so the plan states no `silenceMs`.
 * - Intervals: `raw`, `100ms`, `agg2` are documented; "raw interval is only available to authorized users".
 *   The adapter does not authenticate, so it subscribes at `100ms` unless told otherwise; `classify`
 *   accepts every documented interval (the sealer classifies with the default adapter).
 * - Trades: `data` is an array of trades `{trade_seq, trade_id, timestamp, tick_direction, price,
 *   mark_price, instrument_name, index_price, direction, amount, ...}`; one notification carries several.
 *   `direction` is the "trade direction of the taker" (`buy` | `sell`), written as the row's side;
 *   `trade_id` (a string, "unique (per currency)") is the row's trade_id; `amount` its size (USD for
 *   perpetuals and inverse futures, the base coin for options and linear futures). Each row carries its own
 *   trade's `timestamp`; the frame's exchange_time is the earliest. Fields not recorded (`liquidation`,
 *   `block_trade_id`, `iv`, `contracts`, combo fields, prices at the trade) are not checked; they stay raw.
 * - Trade sequence: `trade_seq` is "the sequence number of the trade within instrument": read as +1 per
 *   trade of an instrument ({@link consecutiveIds}); a span per trade.
 * - Book: `data` is `{type: "snapshot"|"change", timestamp, instrument_name, change_id, prev_change_id
 *   (not in the first), bids, asks}`, levels `[action, price, amount]`. The first notification is the whole
 *   book, every level `new`; later ones carry `new` | `change` | `delete`. Rows: bids then asks, in the
 *   order sent; `new` and `change` carry the level's new amount as size; `delete` is written as size `0`
 *   (the level is gone; the amount sent with it, 0 in the documentation's example, is not recorded). A
 *   snapshot yields `book_snapshots`, a change `book_deltas`. Every row carries the frame's `timestamp`.
 * - Book sequence: "If prev_change_id is equal to the change_id of the previous message, this means that no
 *   messages have been missed." Spans: a snapshot is `first` = `last` = `change_id`; a change covers
 *   (`prev_change_id`, `change_id`]: `previous` = `prev_change_id`, `first` = `prev_change_id` + 1, `last` =
 *   `change_id` ({@link deribitBookSequence}). A change whose `change_id` is not above its `prev_change_id`
 *   is off the structure. The ids are not consecutive (the engine's), so only the chain is checked.
 * - No book checksum; the book is sent over the websocket, so no REST snapshot. A book is restarted by
 *   subscribing again ("the first notification will contain the whole book"): `resync` unsubscribes and
 *   subscribes the instrument's book, whose first notification is then a new snapshot.
 * - Funding: `ticker` data `{instrument_name, timestamp, current_funding?, funding_8h?, mark_price, ...}`
 *   (the funding fields "perpetual only") and `perpetual` data `{interest, index_price, timestamp}`
 *   ("current interest rate - but only for perpetual instruments"). Both are `data` frames with `timestamp`
 *   as exchange_time; the funding numbers must be JSON numbers (their DECIMAL(38, 18) fit is not asked:
 *   no table holds them). No sequence.
 * - Control frames: answers to requests, heartbeats and test_requests, and the notifications of
 *   `platform_state`, `platform_state.public_methods_state` and `announcements` (locks, maintenance,
 *   whether public requests are allowed). Deribit documents no notice that it will close a connection, so
 *   no frame is `closing`. Anything else (another method, another channel, a notification of the wrong
 *   channel for the connection, a message off its structure) is unrepresentable.
 */
import type { Channel } from '../formats/record/types.js'
import { isDecimal38Text } from '../formats/record/decimal.js'
import {
  consecutiveIds, decodeUtf8, isJsonObject, JsonNumber, JsonReadError, readJson,
  type ConnectPlan, type FrameClass, type JsonObject, type JsonValue, type ParsedRow, type SequenceSpan,
  type SequenceState, type SequenceVerdict, type SnapshotRequest, type VenueAdapter,
} from './adapter.js'
import { Bad, clip, describe, eachPlainElement, INT64_MAX, nonEmpty, numberDecimal as decimal, str, UINT_RE, withSpans } from './frame-fields.js'

/** The notification intervals Deribit documents for the market-data channels. */
export const DERIBIT_INTERVALS: readonly string[] = ['raw', '100ms', 'agg2']

export interface DeribitOptions {
  /** Websocket URL; default `wss://www.deribit.com/ws/api/v2`. */
  wsBase?: string
  /**
   * Notification interval of the subscribed channels; default `100ms`. `raw` is "only available to
   * authorized users", and this adapter does not authenticate: Deribit is expected to refuse it.
   */
  interval?: '100ms' | 'raw'
}

const DEFAULT_WS = 'wss://www.deribit.com/ws/api/v2'
const CHANNELS = ['trades', 'book', 'funding'] as const
type DeribitChannel = (typeof CHANNELS)[number]

/** `public/set_heartbeat` interval in seconds: the documented minimum ("not less than 10"). */
export const DERIBIT_HEARTBEAT_INTERVAL_S = 10

/** JSON-RPC ids of the adapter's requests. */
export const DERIBIT_REQUEST_IDS = { setHeartbeat: 1, subscribe: 2, test: 3, resyncUnsubscribe: 4, resyncSubscribe: 5 } as const
const REQUEST_NAMES: Readonly<Record<string, string>> = {
  1: 'public/set_heartbeat', 2: 'public/subscribe', 3: 'public/test', 4: 'public/unsubscribe (resync)', 5: 'public/subscribe (resync)',
}

/** Channels that carry no market data and are control frames on every connection. */
const CONTROL_CHANNELS: ReadonlySet<string> = new Set(['platform_state', 'platform_state.public_methods_state', 'announcements'])
/** Subscribed on every connection beside the data channels: locks and maintenance show in the raw file. */
const PLATFORM_STATE = 'platform_state'

const NS_PER_MS = 1_000_000n
/** A test_request is short; a longer frame is not parsed by `respond`. */
const MAX_TEST_REQUEST_BYTES = 512

function uint(o: JsonObject, key: string, what: string): bigint {
  const v = o[key]
  if (!(v instanceof JsonNumber)) throw new Bad('structure', `${what}: ${key} is ${describe(v, 'a number')}`)
  if (!UINT_RE.test(v.text)) throw new Bad('structure', `${what}: ${key} is not a non-negative integer (${v.text})`)
  return BigInt(v.text)
}

/** A time in integer milliseconds, in nanoseconds. */
function msTime(o: JsonObject, key: string, what: string): bigint {
  const ms = uint(o, key, what)
  const ns = ms * NS_PER_MS
  if (ns > INT64_MAX) throw new Bad('time', `${what}: ${key} ${ms} ms does not fit int64 nanoseconds`)
  return ns
}

function jsonNumber(o: JsonObject, key: string, what: string, required: boolean): void {
  const v = o[key]
  if (v === undefined && !required) return
  if (!(v instanceof JsonNumber)) throw new Bad('structure', `${what}: ${key} is ${describe(v, 'a number')}`)
}

/** `kind.instrument.interval`: the instrument is everything between the first and the last dot. */
function channelName(name: string): { kind: string; instrument: string; interval: string } | null {
  const first = name.indexOf('.')
  const last = name.lastIndexOf('.')
  if (first <= 0 || last <= first + 1 || last === name.length - 1) return null
  return { kind: name.slice(0, first), instrument: name.slice(first + 1, last), interval: name.slice(last + 1) }
}

/** A value for a control note (numbers as doubles: a note is for reading, not for data). */
function noteText(v: JsonValue | undefined): string {
  return JSON.stringify(v, (_key, x: unknown) => (x instanceof JsonNumber ? Number(x.text) : x)) ?? 'undefined'
}

function instrumentOf(d: JsonObject, instrument: string, what: string): void {
  const name = str(d, 'instrument_name', what)
  if (name !== instrument) throw new Bad('structure', `${what}: instrument_name ${JSON.stringify(clip(name))} is not the channel's ${JSON.stringify(instrument)}`)
}

// ---------------------------------------------------------------------------------------------------
// Notifications

function parseTrades(instrument: string, data: JsonValue | undefined): FrameClass {
  const what = 'trades'
  if (!Array.isArray(data)) throw new Bad('structure', `${what}: data is ${describe(data, 'an array')}`)
  // The sequence numbers first, so that a trade that does not parse still counts for the sequence.
  const spans: SequenceSpan[] = []
  const trades: JsonObject[] = []
  let idError: Bad | null = null
  for (let i = 0; i < data.length; i++) {
    const d = data[i]
    try {
      if (!isJsonObject(d)) throw new Bad('structure', `${what}: data[${i}] is not an object`)
      instrumentOf(d, instrument, `${what} ${i}`)
      const seq = uint(d, 'trade_seq', `${what} ${i}`)
      spans.push({ sequence: 'trades', instrument, first: seq, last: seq, snapshot: false })
      trades.push(d)
    } catch (err) {
      if (!(err instanceof Bad)) throw err
      idError ??= err
    }
  }
  if (idError) {
    if (spans.length > 0) idError.sequences = spans
    throw idError
  }
  return withSpans(spans, () => {
    const rows: ParsedRow[] = []
    let exchangeTime: bigint | null = null
    for (let i = 0; i < trades.length; i++) {
      const d = trades[i]!
      const at = `${what} ${i}`
      const tradeId = nonEmpty(d, 'trade_id', at)
      const side = str(d, 'direction', at)
      if (side !== 'buy' && side !== 'sell') throw new Bad('structure', `${at}: direction ${JSON.stringify(clip(side))} is not buy or sell`)
      const price = decimal(d['price'], `${at}: price`)
      const size = decimal(d['amount'], `${at}: amount`)
      const t = msTime(d, 'timestamp', at)
      if (exchangeTime === null || t < exchangeTime) exchangeTime = t
      rows.push({ instrument, trade_id: tradeId, side, price, size, exchange_time: t })
    }
    return { kind: 'rows', table: 'trades', rows, exchangeTime, sequences: spans }
  })
}

const SNAPSHOT_ACTIONS: ReadonlySet<string> = new Set(['new'])
const CHANGE_ACTIONS: ReadonlySet<string> = new Set(['new', 'change', 'delete'])

function levels(d: JsonObject, key: 'bids' | 'asks', what: string, actions: ReadonlySet<string>, instrument: string, exchangeTime: bigint, rows: ParsedRow[]): void {
  const v = d[key]
  if (!Array.isArray(v)) throw new Bad('structure', `${what}: ${key} is ${describe(v, 'an array')}`)
  const side = key === 'bids' ? 'bid' : 'ask'
  for (let i = 0; i < v.length; i++) {
    const level = v[i]
    const at = `${what}: ${key}[${i}]`
    if (!Array.isArray(level) || level.length !== 3) throw new Bad('structure', `${at} is not an [action, price, amount] triple`)
    const action = level[0]
    if (typeof action !== 'string' || !actions.has(action)) {
      throw new Bad('structure', `${at}: action ${typeof action === 'string' ? JSON.stringify(clip(action)) : 'that is not a string'} is not ${[...actions].join(' or ')}`)
    }
    const price = decimal(level[1], `${at} price`)
    let size: string
    if (action === 'delete') {
      // The level is gone: size 0, whatever amount came with it (the raw file keeps that).
      if (!(level[2] instanceof JsonNumber)) throw new Bad('structure', `${at} amount is not a number`)
      size = '0'
    } else {
      size = decimal(level[2], `${at} amount`)
    }
    rows.push({ instrument, trade_id: null, side, price, size, exchange_time: exchangeTime })
  }
}

function parseBook(instrument: string, data: JsonValue | undefined): FrameClass {
  if (!isJsonObject(data)) throw new Bad('structure', `book: data is ${describe(data, 'an object')}`)
  const type = str(data, 'type', 'book')
  if (type !== 'snapshot' && type !== 'change') throw new Bad('structure', `book: type ${JSON.stringify(clip(type))} is not snapshot or change`)
  const what = `book ${type}`
  instrumentOf(data, instrument, what)
  const changeId = uint(data, 'change_id', what)
  let span: SequenceSpan
  if (type === 'snapshot') {
    // The first notification states no prev_change_id; one it states anyway is not looked at.
    span = { sequence: 'book', instrument, first: changeId, last: changeId, snapshot: true }
  } else {
    const prev = uint(data, 'prev_change_id', what)
    if (changeId <= prev) throw new Bad('structure', `${what}: change_id ${changeId} is not after prev_change_id ${prev}`)
    span = { sequence: 'book', instrument, first: prev + 1n, last: changeId, snapshot: false, previous: prev }
  }
  return withSpans([span], () => {
    const exchangeTime = msTime(data, 'timestamp', what)
    const actions = type === 'snapshot' ? SNAPSHOT_ACTIONS : CHANGE_ACTIONS
    const rows: ParsedRow[] = []
    levels(data, 'bids', what, actions, instrument, exchangeTime, rows)
    levels(data, 'asks', what, actions, instrument, exchangeTime, rows)
    return { kind: 'rows', table: type === 'snapshot' ? 'book_snapshots' : 'book_deltas', rows, exchangeTime, sequences: [span] }
  })
}

function parseTicker(instrument: string, data: JsonValue | undefined): FrameClass {
  const what = 'ticker'
  if (!isJsonObject(data)) throw new Bad('structure', `${what}: data is ${describe(data, 'an object')}`)
  instrumentOf(data, instrument, what)
  // Perpetuals only; a ticker of another instrument has neither.
  jsonNumber(data, 'current_funding', what, false)
  jsonNumber(data, 'funding_8h', what, false)
  return { kind: 'data', exchangeTime: msTime(data, 'timestamp', what), sequences: [] }
}

function parsePerpetual(data: JsonValue | undefined): FrameClass {
  const what = 'perpetual'
  if (!isJsonObject(data)) throw new Bad('structure', `${what}: data is ${describe(data, 'an object')}`)
  jsonNumber(data, 'interest', what, true)
  jsonNumber(data, 'index_price', what, false)
  return { kind: 'data', exchangeTime: msTime(data, 'timestamp', what), sequences: [] }
}

/** The channel kinds each of ours carries. */
const CHANNEL_KINDS: Readonly<Record<DeribitChannel, readonly string[]>> = {
  trades: ['trades'],
  book: ['book'],
  funding: ['ticker', 'perpetual'],
}

function parseNotification(channel: DeribitChannel, v: JsonObject): FrameClass {
  const params = v['params']
  if (!isJsonObject(params)) throw new Bad('structure', `subscription: params is ${describe(params, 'an object')}`)
  const ch = str(params, 'channel', 'subscription: params')
  if (!('data' in params)) throw new Bad('structure', 'subscription: params: data is missing')
  const data = params['data']
  if (CONTROL_CHANNELS.has(ch)) return { kind: 'control', note: clip(`${ch}: ${noteText(data)}`) }
  const name = channelName(ch)
  if (name === null || !CHANNEL_KINDS[channel].includes(name.kind)) {
    throw new Bad('structure', `a notification of channel ${JSON.stringify(clip(ch))} on channel ${channel}`)
  }
  if (!DERIBIT_INTERVALS.includes(name.interval)) throw new Bad('structure', `channel ${JSON.stringify(clip(ch))}: interval ${JSON.stringify(clip(name.interval))} is not ${DERIBIT_INTERVALS.join(', ')}`)
  switch (name.kind) {
    case 'trades': return parseTrades(name.instrument, data)
    case 'book': return parseBook(name.instrument, data)
    case 'ticker': return parseTicker(name.instrument, data)
    default: return parsePerpetual(data)
  }
}

function parseHeartbeat(v: JsonObject): FrameClass {
  const params = v['params']
  if (!isJsonObject(params)) throw new Bad('structure', `heartbeat: params is ${describe(params, 'an object')}`)
  const type = str(params, 'type', 'heartbeat: params')
  if (type === 'heartbeat') return { kind: 'control', note: 'heartbeat' }
  if (type === 'test_request') return { kind: 'control', note: 'heartbeat test_request (answered with public/test)' }
  throw new Bad('structure', `heartbeat: type ${JSON.stringify(clip(type))} is not heartbeat or test_request`)
}

/** An answer to a request: `id` and `result`, or `id` and `error`. */
function parseResponse(v: JsonObject, text: string): FrameClass {
  const id = v['id']
  const idText = id instanceof JsonNumber ? id.text : typeof id === 'string' ? JSON.stringify(clip(id)) : null
  if (idText === null) throw new Bad('structure', 'response: id is not a number or a string')
  const request = `${REQUEST_NAMES[idText] ?? 'request'} ${idText}`
  if ('error' in v) return { kind: 'control', note: `error answering ${request}: ${clip(text)}` }
  const result = v['result']
  if (Array.isArray(result)) return { kind: 'control', note: `${request} answered: ${result.length} channels` }
  return { kind: 'control', note: `${request} answered` }
}

/** A trades notification as Deribit writes it, up to its first trade: no whitespace, the documented keys in order. */
const PLAIN_TRADES_HEAD_RE = /^\{"jsonrpc":"2\.0","method":"subscription","params":\{"channel":"trades\.([A-Za-z0-9_-]+)\.(?:raw|100ms|agg2)","data":\[/
/** One trade in the documented order (an optional `liquidation` last); prices and amounts without sign or exponent. */
const PLAIN_TRADE_RE = /\{"trade_seq":(0|[1-9][0-9]*),"trade_id":"([^"\\\x00-\x1f]+)","timestamp":([1-9][0-9]{0,12}),"tick_direction":[0-3],"price":((?:0|[1-9][0-9]*)(?:\.[0-9]+)?),"mark_price":-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?,"instrument_name":"([A-Za-z0-9_-]+)","index_price":-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?,"direction":"(buy|sell)","amount":((?:0|[1-9][0-9]*)(?:\.[0-9]+)?)(?:,"liquidation":"[A-Z]{1,2}")?\}/y

/**
 * The class of a plain trades notification ({@link PLAIN_TRADES_HEAD_RE}, {@link PLAIN_TRADE_RE}) without
 * building its JSON tree, or null to take the general path. Gives exactly what the general path gives for
 * such a payload; anything it would refuse (another instrument, a decimal DECIMAL(38, 18) cannot hold) goes
 * the general path, which says why.
 */
function plainTrades(text: string): FrameClass | null {
  const head = PLAIN_TRADES_HEAD_RE.exec(text)
  if (head === null) return null
  const instrument = head[1]!
  const rows: ParsedRow[] = []
  const spans: SequenceSpan[] = []
  let exchangeTime: bigint | null = null
  const end = eachPlainElement(text, head[0].length, PLAIN_TRADE_RE, (m) => {
    const price = m[4]!
    const size = m[7]!
    if (m[5] !== instrument || !isDecimal38Text(price) || !isDecimal38Text(size)) return false
    const seq = BigInt(m[1]!)
    const t = BigInt(m[3]!) * NS_PER_MS
    if (t > INT64_MAX) return false
    if (exchangeTime === null || t < exchangeTime) exchangeTime = t
    spans.push({ sequence: 'trades', instrument, first: seq, last: seq, snapshot: false })
    rows.push({ instrument, trade_id: m[2]!, side: m[6]!, price, size, exchange_time: t })
    return true
  })
  if (end === -1 || end + 2 !== text.length || text.charCodeAt(end) !== 0x7d || text.charCodeAt(end + 1) !== 0x7d) return null
  return { kind: 'rows', table: 'trades', rows, exchangeTime, sequences: spans }
}

function classifyDeribit(channel: DeribitChannel, payload: Uint8Array, binary: boolean): FrameClass {
  if (binary) return { kind: 'unrepresentable', code: 'not-json', reason: 'binary frame; Deribit sends JSON text frames' }
  const text = decodeUtf8(payload)
  if (text === null) return { kind: 'unrepresentable', code: 'not-json', reason: 'payload is not UTF-8' }
  if (channel === 'trades') {
    const fast = plainTrades(text)
    if (fast !== null) return fast
  }
  let v: JsonValue
  try {
    v = readJson(text)
  } catch (e) {
    return { kind: 'unrepresentable', code: 'not-json', reason: `not JSON: ${e instanceof JsonReadError ? e.message : String(e)}` }
  }
  try {
    if (!isJsonObject(v)) throw new Bad('structure', 'payload is not a JSON object')
    if (v['jsonrpc'] !== '2.0') throw new Bad('structure', `jsonrpc is ${typeof v['jsonrpc'] === 'string' ? JSON.stringify(clip(v['jsonrpc'])) + ', not "2.0"' : describe(v['jsonrpc'], 'a string')}`)
    const method = v['method']
    if (method === undefined) {
      if ('id' in v && ('result' in v || 'error' in v)) return parseResponse(v, text)
      throw new Bad('structure', 'neither a notification nor a response')
    }
    if (typeof method !== 'string') throw new Bad('structure', 'method is not a string')
    if (method === 'subscription') return parseNotification(channel, v)
    if (method === 'heartbeat') return parseHeartbeat(v)
    throw new Bad('structure', `a message of method ${JSON.stringify(clip(method))}`)
  } catch (err) {
    if (err instanceof Bad) return { kind: 'unrepresentable', code: err.code, reason: err.message, ...(err.sequences ? { sequences: err.sequences } : {}) }
    throw err
  }
}

// ---------------------------------------------------------------------------------------------------
// Sequences

/** Deribit's `trade_seq`: per instrument, each trade's is the previous one's + 1. */
export const deribitTradeSequence = consecutiveIds

/**
 * Deribit's change_id chain for one instrument's book. A snapshot is `first` = `last` = its `change_id`; a
 * change covers (`prev_change_id`, `change_id`]: `previous` = p = `prev_change_id`, `first` = p + 1,
 * `last` = c = `change_id`. With L the state's last id:
 * - p == L: `next` (state c): the documented rule, "no messages have been missed";
 * - p < L < c: `next` — the change covers L (the chain of another connection joined where the two
 *   streams' 100 ms groups differ; within one connection it does not happen);
 * - c <= L: `stale` — nothing after what is accounted for (the same change from another connection);
 * - otherwise (p > L): `gap` after L, before p + 1: the messages up to p were not seen (state c).
 * A snapshot is `snapshot` with the state at the later of L and its change_id: a websocket snapshot starts
 * the chain that follows it, so it is never behind. (A span without `previous` reads as `first` - 1.)
 */
export function deribitBookSequence(prev: SequenceState | undefined, span: SequenceSpan): SequenceVerdict {
  if (span.snapshot) {
    const S = span.last
    if (prev === undefined) return { verdict: 'snapshot', state: { last: S, streamFirst: null } }
    return { verdict: 'snapshot', state: { last: S > prev.last ? S : prev.last, streamFirst: prev.streamFirst } }
  }
  const p = span.previous ?? span.first - 1n
  const c = span.last
  if (prev === undefined) return { verdict: 'start', state: { last: c, streamFirst: span.first } }
  const L = prev.last
  const state: SequenceState = { last: c, streamFirst: prev.streamFirst ?? span.first }
  if (p === L) return { verdict: 'next', state }
  if (p < L && L < c) return { verdict: 'next', state }
  if (c <= L) return { verdict: 'stale', state: prev }
  return { verdict: 'gap', afterId: L.toString(), beforeId: span.first.toString(), state }
}

/** Deribit's sequence rules: `trade_seq` for trades, the change_id chain for books. */
export function deribitSequence(prev: SequenceState | undefined, span: SequenceSpan): SequenceVerdict {
  return span.sequence === 'trades' ? deribitTradeSequence(prev, span) : deribitBookSequence(prev, span)
}

// ---------------------------------------------------------------------------------------------------
// Connecting

function request(id: number, method: string, params: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params })
}

/** The answer to a test_request ("respond to test_request messages by sending a public/test request"). */
const TEST_REQUEST_ANSWER = request(DERIBIT_REQUEST_IDS.test, 'public/test', {})

/** `public/test` when the frame is a `heartbeat` of type `test_request`, else null. */
export function deribitRespond(payload: Uint8Array): string | null {
  if (payload.byteLength > MAX_TEST_REQUEST_BYTES) return null
  const text = decodeUtf8(payload)
  if (text === null || !text.includes('test_request')) return null
  let v: JsonValue
  try {
    v = readJson(text)
  } catch {
    return null
  }
  if (!isJsonObject(v) || v['method'] !== 'heartbeat') return null
  const params = v['params']
  return isJsonObject(params) && params['type'] === 'test_request' ? TEST_REQUEST_ANSWER : null
}

/**
 * Whether a frame answers the subscribe request (id 2): an error refuses it; a result listing at least one
 * of the requested data channels subscribes the connection; a result listing none of them refuses it
 * (nothing would ever come).
 */
function subscribeAnswer(payload: Uint8Array, wanted: ReadonlySet<string>, maxBytes: number): 'subscribed' | 'refused' | null {
  if (payload.byteLength > maxBytes) return null
  const text = decodeUtf8(payload)
  if (text === null || !text.includes('"id"')) return null
  let v: JsonValue
  try {
    v = readJson(text)
  } catch {
    return null
  }
  if (!isJsonObject(v) || 'method' in v) return null
  const id = v['id']
  if (!(id instanceof JsonNumber) || id.text !== String(DERIBIT_REQUEST_IDS.subscribe)) return null
  if ('error' in v) return 'refused'
  const result = v['result']
  if (!Array.isArray(result)) return null
  return result.some((c) => typeof c === 'string' && wanted.has(c)) ? 'subscribed' : 'refused'
}

/** A Deribit adapter. */
export function createDeribitAdapter(opts: DeribitOptions = {}): VenueAdapter {
  const url = opts.wsBase ?? DEFAULT_WS
  const interval = opts.interval ?? '100ms'
  if (interval !== '100ms' && interval !== 'raw') throw new RangeError(`deribit interval must be 100ms or raw, not ${JSON.stringify(interval)}`)
  const served = (channel: Channel): DeribitChannel => {
    if (!(CHANNELS as readonly Channel[]).includes(channel)) {
      throw new RangeError(`deribit serves no channel ${String(channel)}${channel === 'liquidations' ? ' (liquidations are marked in its trades)' : ''}`)
    }
    return channel as DeribitChannel
  }
  const streams = (channel: DeribitChannel, instrument: string): string[] => CHANNEL_KINDS[channel].map((kind) => `${kind}.${instrument}.${interval}`)
  return {
    name: 'deribit',
    channels: CHANNELS,
    about: {
      summary: 'Deribit (API v2, JSON-RPC websocket): futures, perpetuals, options',
      channels: {
        trades: { streams: `trades.<instrument>.${interval} (liquidation trades marked in them; no liquidation stream)`, sequence: 'trade_seq: +1 per trade of an instrument' },
        book: { streams: `book.<instrument>.${interval} (a snapshot, then changes)`, sequence: 'prev_change_id = the previous change_id; a snapshot starts the chain' },
        funding: { streams: `ticker.<instrument>.${interval} and perpetual.<instrument>.${interval}, kept raw`, sequence: 'none stated by the venue' },
      },
      checksum: null,
      endpoints: [url],
    },
    classify(channel, payload, binary) {
      return classifyDeribit(served(channel), payload, binary)
    },
    sequence: deribitSequence,
    connect(channel, instruments): ConnectPlan {
      const ch = served(channel)
      if (instruments.length === 0) throw new RangeError('no instruments to subscribe')
      for (const i of instruments) if (typeof i !== 'string' || i === '') throw new RangeError('an instrument is empty')
      const data = instruments.flatMap((i) => streams(ch, i))
      const wanted = new Set(data)
      const subscribe = request(DERIBIT_REQUEST_IDS.subscribe, 'public/subscribe', { channels: [...data, PLATFORM_STATE] })
      // The answer lists the channels subscribed, with some room for the answer's other fields.
      const maxAnswerBytes = 4096 + 2 * Buffer.byteLength(subscribe, 'utf8')
      const plan: ConnectPlan = {
        url,
        send: [request(DERIBIT_REQUEST_IDS.setHeartbeat, 'public/set_heartbeat', { interval: DERIBIT_HEARTBEAT_INTERVAL_S }), subscribe],
        answers: (payload) => subscribeAnswer(payload, wanted, maxAnswerBytes),
        respond: deribitRespond,
      }
      if (ch === 'book') {
        // Subscribing again makes the first notification a snapshot of the whole book.
        plan.resync = (instrument) => [
          request(DERIBIT_REQUEST_IDS.resyncUnsubscribe, 'public/unsubscribe', { channels: streams('book', instrument) }),
          request(DERIBIT_REQUEST_IDS.resyncSubscribe, 'public/subscribe', { channels: streams('book', instrument) }),
        ]
      }
      return plan
    },
    snapshotRequest(channel): SnapshotRequest | null {
      served(channel)
      // The book's snapshot comes over the websocket.
      return null
    },
    wrapSnapshot(channel) {
      served(channel)
      throw new RangeError('deribit sends its book snapshots over the websocket: no REST snapshot to record')
    },
  }
}

/** The Deribit adapter with default options (public endpoint, 100 ms notifications). */
export const deribit: VenueAdapter = createDeribitAdapter()

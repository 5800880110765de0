/**
 * Bybit v5 public websocket: channels `trades` (`publicTrade.{symbol}`), `book` (`orderbook.{depth}.{symbol}`),
 * and, on the derivatives categories, `funding` (`tickers.{symbol}`) and `liquidations`
 * (`allLiquidation.{symbol}`), each on its own connection to the category's public stream.
 *
 * Assumptions, from Bybit's V5 API documentation (section names in brackets; docs/venues/bybit.md gives each
 * with its reading, what the recorder can and cannot detect on this venue, and the open questions). Check
 * them against the current documentation when Bybit changes its API:
 *
 * - Endpoints [Connect]: `wss://stream.bybit.com/v5/public/{spot|linear|inverse}`; linear
 *   is USDT and USDC perpetuals and USDT futures, inverse the inverse contracts. One adapter serves one
 *   category. The default, `bybit`, is linear; spot and inverse get names of their own (`bybit-spot`,
 *   `bybit-inverse`), since the same symbol (`BTCUSDT`) names a different market in each category and the
 *   recorder stores by venue name and instrument.
 * - Spot serves `trades` and `book` only: spot tickers carry no funding rate [Ticker, Spot], and
 *   allLiquidation "covers USDT contract / USDC contract / Inverse contract" [All Liquidation].
 * - Subscribe with `{"req_id":"1","op":"subscribe","args":["orderbook.200.BTCUSDT",...]}`, unsubscribe with
 *   `op` `unsubscribe` [Connect, How to Subscribe to Topics]. Args limits [Connect, Public channel - Args
 *   limits]: spot takes at most 10 args a request, futures none; the args of one connection are at most
 *   21,000 characters. The plan sends 10 args a request whatever the category, and `connect` refuses
 *   instruments whose args (as JSON) exceed 21,000 characters.
 * - Replies [Connect, Understanding the Subscription Response; How to Send the Heartbeat Packet]:
 *   `{"success":true,"ret_msg":"","conn_id":..,"req_id":..,"op":"subscribe"}` (spot writes `ret_msg`
 *   `subscribe`), and the pong `{"success":true,"ret_msg":"pong","conn_id":..,"op":"ping"}` (Option/Spread
 *   and private: `{"op":"pong","args":[..]}`). A failure is not shown; it is read as `success` false. They
 *   are control frames. The connection is subscribed when every subscribe request has been answered with
 *   success; any failure before that refuses it.
 * - Keep-alive [Connect, How to Send the Heartbeat Packet]: `{"op":"ping"}` every 20 s, as recommended; the
 *   connection is cut after 10 minutes without ping-pong or data. The pongs keep a quiet connection
 *   (allLiquidation of a calm symbol) from looking stalled.
 * - No close notice exists on the public streams: maintenance causing a short interruption or a
 *   disconnection "will not be announced" [System Status]; the system-status stream is a connection of its
 *   own, not recorded. No frame is `closing`.
 * - Every push is `{"topic","type","ts",data,...}` with `ts` a JSON integer of milliseconds ("the timestamp
 *   that the system generates the data"). The topic must be the connection's kind and name a symbol; rows
 *   and sequences take the symbol from it, and each item's own symbol must equal it. Other keys are ignored
 *   (they stay in the raw file). Anything else — not JSON, an unknown reply, a push off the documented
 *   structure — is unrepresentable. What `classify` reads does not depend on the adapter's category or
 *   depth (the sealer classifies with the registered adapter): every documented depth is read.
 * - Trades [Trade]: `type` `snapshot`, `data` an array (up to 1024 trades; more are split over messages) of
 *   `{T, s, S, v, p, L, i, BT, RPI, seq}`. A row per trade: trade_id = `i` (a string, in the example a UUID),
 *   side = `S`, the taker's side, written as the venue's word (`Buy` | `Sell`), price = `p`, size = `v`,
 *   exchange_time = the trade's `T` ("the timestamp that the order is filled"). The frame's exchange_time is
 *   the earliest of `ts` and the trades' `T`. An empty `data` is a frame without rows.
 * - Trade sequence: none. Trade ids are not numbers (the documentation's is a UUID) and no order of them is
 *   documented; the trade `seq` is a "cross sequence" that several messages may share. Trade frames carry
 *   no spans, and {@link bybitSequence} throws on a trade span.
 * - Books [Orderbook]: `type` `snapshot` (book_snapshots) or `delta` (book_deltas); `data`
 *   `{s, b, a, u, seq}`, each level exactly `[price, size]`, two strings; `cts` (matching-engine time) at the
 *   top level. Rows: bids then asks, in the order sent; a size of `0` deletes the level and is kept as sent.
 *   exchange_time is the earlier of `ts` and `cts` (`cts` may be absent: only `ts` then); every row carries it.
 *   Depths 1, 50, 200, 1000 (spot and derivatives alike); the default is 200 (100 ms pushes). Level 1 is
 *   snapshots only, re-sent with the same `u` after 3 s without change.
 * - Book sequence (`u`, "Update ID", per symbol; [Orderbook, Response Parameters] and the only statement of
 *   continuity, [SBE Level 50 Integration, Rules for the u (Update ID) Field]): each message's `u` is the
 *   previous one's + 1; a snapshot replaces the book and resets; `u` = 1 is a snapshot after a service
 *   restart (or a precision change): a new snapshot, never a gap. `seq` is a cross sequence ("compare
 *   different levels orderbook data"), not dense: it is checked to be an integer and not used. See
 *   {@link bybitBookSequence}.
 * - No book checksum: the orderbook stream states none. No REST snapshot: the stream sends its own on
 *   subscription. Resync (unsubscribe, subscribe) brings a new snapshot ("Once you have subscribed
 *   successfully, you will receive a snapshot").
 * - Funding [Ticker]: `tickers.{symbol}`, `type` `snapshot` then `delta` on derivatives ("If a response param
 *   is not found in the message, then its value has not changed"); `data` an object (the examples; the
 *   parameter table says array, so an array of objects is read too) with `symbol`; `fundingRate`,
 *   `markPrice`, `indexPrice` strings, when present and not empty plain decimals; `nextFundingTime` a string
 *   of milliseconds or empty. `data` frames; exchange_time `ts`; no sequence (`cs` is a cross sequence).
 * - Liquidations [All Liquidation]: `allLiquidation.{symbol}`, every liquidation, in 500 ms batches; `type`
 *   `snapshot`, `data` an array of `{T, s, S, v, p}` (the example; the table says Object, so one object is
 *   read too); `S` the position side (`Buy`: a long was liquidated). `data` frames; exchange_time the earliest
 *   of `ts` and the items' `T`; no sequence. The older `liquidation.{symbol}` topic is no longer documented.
 */
import type { Channel, TableName } from '../formats/record/types.js'
import { isDecimal38Text } from '../formats/record/decimal.js'
import {
  decodeUtf8, isJsonObject, JsonNumber, JsonReadError, readJson,
  type ConnectPlan, type FrameClass, type JsonObject, type JsonValue, type ParsedRow, type SequenceSpan,
  type SequenceState, type SequenceVerdict, type VenueAdapter,
} from './adapter.js'
import { Bad, clip, describe, INT64_MAX, str, UINT_RE, withSpans } from './frame-fields.js'

export type BybitCategory = 'linear' | 'spot' | 'inverse'

export interface BybitOptions {
  /** Websocket base, without the `/v5/public/{category}` path; default `wss://stream.bybit.com`. */
  wsBase?: string
  /** The market: `linear` (USDT and USDC perpetuals, USDT futures; the default), `spot` or `inverse`. */
  category?: BybitCategory
  /** Book depth to subscribe: 1, 50, 200 or 1000 (the documented depths); default 200. */
  depth?: number
}

/** The book depths Bybit documents for spot, linear and inverse. */
export const BYBIT_BOOK_DEPTHS: readonly number[] = [1, 50, 200, 1000]
const DEFAULT_DEPTH = 200
const DEFAULT_WS = 'wss://stream.bybit.com'
/** The recommended heartbeat interval. */
export const BYBIT_PING_INTERVAL_MS = 20_000
/** Spot takes at most 10 args a subscription request; the plan sends no more in any category. */
export const BYBIT_ARGS_PER_REQUEST = 10
/** "You cannot have length of "args" array over 21,000 characters" on one public connection. */
export const BYBIT_MAX_ARGS_CHARS = 21_000
/** Replies are short; a longer frame is not parsed by `answers`. */
const MAX_REPLY_BYTES = 4096
const NS_PER_MS = 1_000_000n

/** The topic prefix of each of our channels. */
const TOPIC_PREFIX: Readonly<Record<Channel, string>> = {
  trades: 'publicTrade',
  book: 'orderbook',
  funding: 'tickers',
  liquidations: 'allLiquidation',
}

const CATEGORY_CHANNELS: Readonly<Record<BybitCategory, readonly Channel[]>> = {
  linear: ['trades', 'book', 'funding', 'liquidations'],
  inverse: ['trades', 'book', 'funding', 'liquidations'],
  spot: ['trades', 'book'],
}

const CATEGORY_NAME: Readonly<Record<BybitCategory, string>> = { linear: 'bybit', spot: 'bybit-spot', inverse: 'bybit-inverse' }

const CATEGORY_SUMMARY: Readonly<Record<BybitCategory, string>> = {
  linear: 'Bybit (V5 public websocket), linear: USDT and USDC perpetuals, USDT futures',
  spot: 'Bybit (V5 public websocket), spot',
  inverse: 'Bybit (V5 public websocket), inverse perpetuals and futures',
}

/** A non-negative JSON integer, exactly. */
function uint(o: JsonObject, key: string, what: string): bigint {
  const v = o[key]
  if (!(v instanceof JsonNumber)) throw new Bad('structure', `${what}: ${key} is ${describe(v, 'a number')}`)
  if (!UINT_RE.test(v.text)) throw new Bad('structure', `${what}: ${key} is not a non-negative integer (${v.text})`)
  return BigInt(v.text)
}

/** A time written as a JSON integer of milliseconds, in nanoseconds. */
function msTime(o: JsonObject, key: string, what: string): bigint {
  const ns = uint(o, key, what) * NS_PER_MS
  if (ns > INT64_MAX) throw new Bad('time', `${what}: ${key} ${(o[key] as JsonNumber).text} ms does not fit int64 nanoseconds`)
  return ns
}

function decimal(v: JsonValue | undefined, what: string): string {
  if (typeof v !== 'string') throw new Bad('structure', `${what} is ${describe(v, 'a string')}`)
  if (!isDecimal38Text(v)) throw new Bad('decimal', `${what} ${JSON.stringify(clip(v))} is not a decimal DECIMAL(38, 18) holds exactly`)
  return v
}

/** The item's symbol, which must be the topic's. */
function sameSymbol(o: JsonObject, key: string, symbol: string, what: string): void {
  const s = str(o, key, what)
  if (s !== symbol) throw new Bad('structure', `${what}: ${key} ${JSON.stringify(clip(s))} is not the topic's ${JSON.stringify(symbol)}`)
}

function side(o: JsonObject, what: string): 'Buy' | 'Sell' {
  const s = str(o, 'S', what)
  if (s !== 'Buy' && s !== 'Sell') throw new Bad('structure', `${what}: S ${JSON.stringify(clip(s))} is neither "Buy" nor "Sell"`)
  return s
}

function pushType(v: JsonObject, allowed: readonly string[], what: string): string {
  const type = v['type']
  if (typeof type !== 'string' || !allowed.includes(type)) {
    throw new Bad('structure', `${what}: type is ${typeof type === 'string' ? JSON.stringify(clip(type)) + ', not ' + allowed.map((a) => JSON.stringify(a)).join(' or ') : describe(type, 'a string')}`)
  }
  return type
}

function objects(v: JsonValue | undefined, what: string): JsonObject[] {
  if (!Array.isArray(v)) throw new Bad('structure', `${what} is ${describe(v, 'an array')}`)
  return v.map((item, i) => {
    if (!isJsonObject(item)) throw new Bad('structure', `${what}[${i}] is not an object`)
    return item
  })
}

/** `data` as an object or an array of objects (where the documentation's table and example differ). */
function records(v: JsonValue | undefined, what: string): JsonObject[] {
  return isJsonObject(v) ? [v] : objects(v, what)
}

const earliest = (times: readonly bigint[]): bigint | null => times.reduce<bigint | null>((a, t) => (a === null || t < a ? t : a), null)

// ---------------------------------------------------------------------------------------------------
// Pushes.

const BOOK_TOPIC_RE = /^orderbook\.(1|50|200|1000)\.(.+)$/

/** The symbol a push's topic names, when the topic is of the connection's kind. */
function topicSymbol(channel: Channel, topic: string): string {
  if (channel === 'book') {
    const m = BOOK_TOPIC_RE.exec(topic)
    if (m) return m[2]!
  } else {
    const prefix = TOPIC_PREFIX[channel] + '.'
    if (topic.startsWith(prefix) && topic.length > prefix.length) return topic.slice(prefix.length)
  }
  throw new Bad('structure', `a push of topic ${JSON.stringify(clip(topic))} on channel ${channel}`)
}

function parseTrades(v: JsonObject, symbol: string): FrameClass {
  pushType(v, ['snapshot'], 'publicTrade')
  const ts = msTime(v, 'ts', 'publicTrade')
  const rows: ParsedRow[] = objects(v['data'], 'publicTrade: data').map((d, i) => {
    const what = `publicTrade: data[${i}]`
    sameSymbol(d, 's', symbol, what)
    const tradeId = str(d, 'i', what)
    if (tradeId === '') throw new Bad('structure', `${what}: i is empty`)
    const S = side(d, what)
    const price = decimal(d['p'], `${what}: p`)
    const size = decimal(d['v'], `${what}: v`)
    return { instrument: symbol, trade_id: tradeId, side: S, price, size, exchange_time: msTime(d, 'T', what) }
  })
  const exchangeTime = earliest([ts, ...rows.map((r) => r.exchange_time!)])
  return { kind: 'rows', table: 'trades', rows, exchangeTime, sequences: [] }
}

function levels(d: JsonObject, key: 'b' | 'a', what: string, symbol: string, rows: ParsedRow[]): void {
  const v = d[key]
  if (!Array.isArray(v)) throw new Bad('structure', `${what}: ${key} is ${describe(v, 'an array')}`)
  const levelSide = key === 'b' ? 'bid' : 'ask'
  for (let i = 0; i < v.length; i++) {
    const level = v[i]
    if (!Array.isArray(level) || level.length !== 2) throw new Bad('structure', `${what}: ${key}[${i}] is not a [price, size] pair`)
    const price = decimal(level[0], `${what}: ${key}[${i}] price`)
    const size = decimal(level[1], `${what}: ${key}[${i}] size`)
    rows.push({ instrument: symbol, trade_id: null, side: levelSide, price, size, exchange_time: null })
  }
}

function parseBook(v: JsonObject, symbol: string): FrameClass {
  const type = pushType(v, ['snapshot', 'delta'], 'orderbook')
  const what = `orderbook ${type}: data`
  const d = v['data']
  if (!isJsonObject(d)) throw new Bad('structure', `${what} is ${describe(d, 'an object')}`)
  sameSymbol(d, 's', symbol, what)
  const snapshot = type === 'snapshot'
  const u = uint(d, 'u', what)
  // The sequence id first: a frame whose id parsed still counts for gaps when the rest does not.
  const span: SequenceSpan = { sequence: 'book', instrument: symbol, first: u, last: u, snapshot }
  return withSpans([span], () => {
    if (d['seq'] !== undefined) uint(d, 'seq', what)
    const ts = msTime(v, 'ts', `orderbook ${type}`)
    const cts = v['cts'] === undefined ? null : msTime(v, 'cts', `orderbook ${type}`)
    const exchangeTime = cts !== null && cts < ts ? cts : ts
    const rows: ParsedRow[] = []
    levels(d, 'b', what, symbol, rows)
    levels(d, 'a', what, symbol, rows)
    for (const row of rows) row.exchange_time = exchangeTime
    const table: TableName = snapshot ? 'book_snapshots' : 'book_deltas'
    return { kind: 'rows', table, rows, exchangeTime, sequences: [span] }
  })
}

/** A ticker field kept raw: a string, when present; a plain decimal unless empty. */
function optionalDecimal(d: JsonObject, key: string, what: string): void {
  const v = d[key]
  if (v === undefined) return
  if (typeof v !== 'string') throw new Bad('structure', `${what}: ${key} is not a string`)
  if (v !== '') decimal(v, `${what}: ${key}`)
}

function parseTickers(v: JsonObject, symbol: string): FrameClass {
  const type = pushType(v, ['snapshot', 'delta'], 'tickers')
  const ts = msTime(v, 'ts', 'tickers')
  if (v['cs'] !== undefined) uint(v, 'cs', 'tickers')
  records(v['data'], 'tickers: data').forEach((d, i) => {
    const what = `tickers ${type}: data${Array.isArray(v['data']) ? `[${i}]` : ''}`
    sameSymbol(d, 'symbol', symbol, what)
    for (const key of ['fundingRate', 'markPrice', 'indexPrice']) optionalDecimal(d, key, what)
    const next = d['nextFundingTime']
    if (next !== undefined && (typeof next !== 'string' || (next !== '' && !UINT_RE.test(next)))) {
      throw new Bad('structure', `${what}: nextFundingTime is not a string of milliseconds`)
    }
  })
  return { kind: 'data', exchangeTime: ts, sequences: [] }
}

function parseLiquidations(v: JsonObject, symbol: string): FrameClass {
  pushType(v, ['snapshot'], 'allLiquidation')
  const ts = msTime(v, 'ts', 'allLiquidation')
  const times = records(v['data'], 'allLiquidation: data').map((d, i) => {
    const what = `allLiquidation: data${Array.isArray(v['data']) ? `[${i}]` : ''}`
    sameSymbol(d, 's', symbol, what)
    side(d, what)
    decimal(d['v'], `${what}: v`)
    decimal(d['p'], `${what}: p`)
    return msTime(d, 'T', what)
  })
  return { kind: 'data', exchangeTime: earliest([ts, ...times]), sequences: [] }
}

/** A reply to one of the connection's requests: subscribe, unsubscribe, ping. */
function parseReply(v: JsonObject): FrameClass {
  const op = v['op']
  if (typeof op !== 'string') throw new Bad('structure', `reply: op is ${describe(op, 'a string')}`)
  // The Option/Spread and private pong: {"op":"pong","args":[..]}.
  if (op === 'pong') return { kind: 'control', note: 'pong' }
  if (op !== 'ping' && op !== 'subscribe' && op !== 'unsubscribe') throw new Bad('structure', `reply to an unknown op ${JSON.stringify(clip(op))}`)
  const success = v['success']
  if (typeof success !== 'boolean') throw new Bad('structure', `reply to ${op}: success is ${describe(success, 'a boolean')}`)
  const msg = typeof v['ret_msg'] === 'string' ? v['ret_msg'] : ''
  if (!success) return { kind: 'control', note: clip(`${op} failed${msg === '' ? '' : ': ' + msg}`) }
  if (op === 'ping') return { kind: 'control', note: 'pong' }
  return { kind: 'control', note: op === 'subscribe' ? 'subscribed' : 'unsubscribed' }
}

function classifyBybit(channel: Channel, payload: Uint8Array, binary: boolean): FrameClass {
  if (binary) return { kind: 'unrepresentable', code: 'not-json', reason: 'binary frame; Bybit public streams send JSON text frames' }
  const text = decodeUtf8(payload)
  if (text === null) return { kind: 'unrepresentable', code: 'not-json', reason: 'payload is not UTF-8' }
  let v: JsonValue
  try {
    v = readJson(text)
  } catch (e) {
    return { kind: 'unrepresentable', code: 'not-json', reason: `not JSON: ${e instanceof JsonReadError ? e.message : String(e)}` }
  }
  try {
    if (!isJsonObject(v)) throw new Bad('structure', 'payload is not a JSON object')
    if (!('topic' in v)) {
      if ('op' in v) return parseReply(v)
      throw new Bad('structure', 'neither a push (topic) nor a reply (op)')
    }
    const topic = v['topic']
    if (typeof topic !== 'string') throw new Bad('structure', 'topic is not a string')
    const symbol = topicSymbol(channel, topic)
    switch (channel) {
      case 'trades': return parseTrades(v, symbol)
      case 'book': return parseBook(v, symbol)
      case 'funding': return parseTickers(v, symbol)
      case 'liquidations': return parseLiquidations(v, symbol)
    }
  } catch (err) {
    if (err instanceof Bad) return { kind: 'unrepresentable', code: err.code, reason: err.message, ...(err.sequences ? { sequences: err.sequences } : {}) }
    throw err
  }
}

// ---------------------------------------------------------------------------------------------------
// Sequences.

/**
 * Bybit's `u` rule for one symbol's book. Spans: `first` = `last` = `u`, `snapshot` for a snapshot. With L the
 * state's last id:
 * - a snapshot with `u` = 1 is a service restart: `snapshot`, the state starts again at 1 (never a gap);
 * - any other snapshot: `snapshot`, the state at the later of L and its `u` (a snapshot of one connection,
 *   judged among the frames of every connection, may come a little behind the updates of another: taking
 *   its lower `u` would make the next of those updates look like a gap). Level 1, snapshots only, re-sends
 *   the same `u` after 3 s without change: the same state;
 * - an update with `u` = L + 1: `next`; `u` <= L: `stale` (already accounted for); otherwise a `gap`
 *   after L and before `u`;
 * - an update with no state: `start`.
 */
export function bybitBookSequence(prev: SequenceState | undefined, span: SequenceSpan): SequenceVerdict {
  const u = span.last
  if (span.snapshot) {
    if (u === 1n || prev === undefined) return { verdict: 'snapshot', state: { last: u, streamFirst: null } }
    return { verdict: 'snapshot', state: { last: u > prev.last ? u : prev.last, streamFirst: prev.streamFirst } }
  }
  if (prev === undefined) return { verdict: 'start', state: { last: u, streamFirst: u } }
  if (u <= prev.last) return { verdict: 'stale', state: prev }
  const state: SequenceState = { last: u, streamFirst: prev.streamFirst ?? u }
  if (u === prev.last + 1n) return { verdict: 'next', state }
  return { verdict: 'gap', afterId: prev.last.toString(), beforeId: u.toString(), state }
}

/** Bybit's sequence rules: books only (the adapter states no trade sequence, so a trade span is a caller's error). */
export function bybitSequence(prev: SequenceState | undefined, span: SequenceSpan): SequenceVerdict {
  if (span.sequence !== 'book') throw new RangeError('bybit states no trade sequence: its adapter makes no trade spans')
  return bybitBookSequence(prev, span)
}

// ---------------------------------------------------------------------------------------------------
// Connecting.

function request(reqId: string, op: 'subscribe' | 'unsubscribe', args: readonly string[]): string {
  return JSON.stringify({ req_id: reqId, op, args })
}

/**
 * The subscription's answer: `subscribed` once every one of its `requests` subscribe requests has been
 * answered with success, `refused` at any failed subscribe reply before that. A reply naming another
 * `req_id` than the plan's is not counted (Bybit may echo an empty `req_id`, which is).
 */
function subscribeAnswers(requests: number, reqIds: ReadonlySet<string>): (payload: Uint8Array) => 'subscribed' | 'refused' | null {
  let acknowledged = 0
  return (payload) => {
    if (payload.byteLength > MAX_REPLY_BYTES) return null
    const text = decodeUtf8(payload)
    if (text === null || !text.includes('"op"')) return null
    let v: JsonValue
    try {
      v = readJson(text)
    } catch {
      return null
    }
    if (!isJsonObject(v) || 'topic' in v || v['op'] !== 'subscribe') return null
    const reqId = v['req_id']
    if (typeof reqId === 'string' && reqId !== '' && !reqIds.has(reqId)) return null
    if (v['success'] === false) return 'refused'
    if (v['success'] !== true) return null
    acknowledged++
    return acknowledged >= requests ? 'subscribed' : null
  }
}

/** A Bybit v5 public adapter for one category. */
export function createBybitAdapter(opts: BybitOptions = {}): VenueAdapter {
  const wsBase = (opts.wsBase ?? DEFAULT_WS).replace(/\/+$/, '')
  const category = opts.category ?? 'linear'
  if (!Object.prototype.hasOwnProperty.call(CATEGORY_CHANNELS, category)) throw new RangeError(`bybit category ${JSON.stringify(category)} is none of linear, spot, inverse`)
  const depth = opts.depth ?? DEFAULT_DEPTH
  if (!BYBIT_BOOK_DEPTHS.includes(depth)) throw new RangeError(`bybit book depth ${depth} is none of the documented ${BYBIT_BOOK_DEPTHS.join(', ')}`)
  const channels = CATEGORY_CHANNELS[category]
  const url = `${wsBase}/v5/public/${category}`
  const check = (channel: Channel): void => {
    if (!channels.includes(channel)) throw new RangeError(`bybit ${category} serves no channel ${String(channel)}`)
  }
  const topic = (channel: Channel, symbol: string): string => (channel === 'book' ? `orderbook.${depth}.${symbol}` : `${TOPIC_PREFIX[channel]}.${symbol}`)
  const derivatives = category !== 'spot'
  return {
    name: CATEGORY_NAME[category],
    tradeSequence: false,
    channels,
    about: {
      summary: CATEGORY_SUMMARY[category],
      channels: {
        trades: { streams: `publicTrade.<symbol> on /v5/public/${category}`, sequence: 'none: trade ids are not numbers and the venue documents no trade sequence' },
        book: { streams: `orderbook.${depth}.<symbol> on /v5/public/${category} (${depth === 1 ? 'snapshots only' : 'a snapshot, then deltas'})`, sequence: depth === 1 ? 'none in effect: level 1 sends snapshots only' : 'u = previous u + 1 per symbol; a snapshot resets; u = 1 is a service restart (a new snapshot, no gap)' },
        ...(derivatives
          ? {
              funding: { streams: `tickers.<symbol> on /v5/public/${category} (snapshot, then deltas of changed fields), kept raw`, sequence: 'none stated by the venue (cs is a cross sequence, not dense)' },
              liquidations: { streams: `allLiquidation.<symbol> on /v5/public/${category} (every liquidation, in 500 ms batches), kept raw`, sequence: 'none stated by the venue' },
            }
          : {}),
      },
      checksum: null,
      endpoints: [url],
    },
    classify(channel, payload, binary) {
      check(channel)
      return classifyBybit(channel, payload, binary)
    },
    sequence: bybitSequence,
    connect(channel, instruments): ConnectPlan {
      check(channel)
      if (instruments.length === 0) throw new RangeError('no instruments to subscribe')
      for (const i of instruments) if (typeof i !== 'string' || i === '') throw new RangeError('an instrument is empty')
      const args = instruments.map((i) => topic(channel, i))
      if (JSON.stringify(args).length > BYBIT_MAX_ARGS_CHARS) throw new RangeError(`the subscription's args are over Bybit's ${BYBIT_MAX_ARGS_CHARS} characters a connection; subscribe fewer instruments per connection`)
      const send: string[] = []
      const reqIds = new Set<string>()
      for (let at = 0; at < args.length; at += BYBIT_ARGS_PER_REQUEST) {
        const reqId = String(send.length + 1)
        reqIds.add(reqId)
        send.push(request(reqId, 'subscribe', args.slice(at, at + BYBIT_ARGS_PER_REQUEST)))
      }
      const plan: ConnectPlan = {
        url,
        send,
        answers: subscribeAnswers(send.length, reqIds),
        keepAlive: { everyMs: BYBIT_PING_INTERVAL_MS, text: '{"op":"ping"}' },
      }
      if (channel === 'book') {
        // Unsubscribing and subscribing again makes the venue send the book's snapshot anew.
        plan.resync = (instrument) => [
          request('resync-unsubscribe', 'unsubscribe', [topic('book', instrument)]),
          request('resync-subscribe', 'subscribe', [topic('book', instrument)]),
        ]
      }
      return plan
    },
    snapshotRequest(channel) {
      check(channel)
      return null
    },
    wrapSnapshot(channel) {
      check(channel)
      throw new RangeError('bybit records no REST snapshots: the orderbook stream sends its own')
    },
  }
}

/** The Bybit adapter for the linear category (USDT and USDC perpetuals, USDT futures) at Bybit's public endpoint. */
export const bybit: VenueAdapter = createBybitAdapter()
/** The Bybit spot adapter (`bybit-spot`): trades and book only. */
export const bybitSpot: VenueAdapter = createBybitAdapter({ category: 'spot' })
/** The Bybit inverse adapter (`bybit-inverse`). */
export const bybitInverse: VenueAdapter = createBybitAdapter({ category: 'inverse' })

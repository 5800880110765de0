/**
 * Kraken Spot, WebSocket v2 (`wss://ws.kraken.com/v2`): channels `trades` (Kraken channel `trade`) and
 * `book` (Kraken channel `book`, plus the `instrument` channel on the same connection for the precisions the
 * book checksum needs). Funding and liquidations do not exist on Kraken spot.
 *
 * Assumptions, from Kraken's API documentation (see ../../docs/venues/kraken.md for the section each comes
 * from, what the recorder can and cannot detect on this venue, and the open questions); check them against
 * the current documentation when Kraken changes its API:
 *
 * - Frames are JSON text frames. Prices and quantities are JSON numbers ("published as a number type"); they
 *   are read losslessly ({@link readJson}) and written to rows as the plain decimal of the number's source
 *   text ({@link jsonNumberToPlainDecimal}: the text unchanged when it has no exponent, `1e-08` ->
 *   `0.00000001` when it has one, since Kraken writes exponents in some numbers). A number DECIMAL(38, 18)
 *   cannot hold exactly makes the frame unrepresentable (`decimal`); a price or quantity that is not a JSON
 *   number makes it unrepresentable (`structure`).
 * - Times are RFC 3339 UTC strings with `Z` and a fraction of up to nine digits (Kraken writes six):
 *   `2023-09-25T07:49:37.708706Z`. Anything else is `structure`; a valid time outside int64 nanoseconds
 *   (or with a non-zero digit below the nanosecond) is `time`.
 * - Trade message: `{"channel":"trade","type":"snapshot"|"update","data":[{symbol, side, price, qty,
 *   ord_type, trade_id, timestamp}, ...]}`; several trades may share one message. `side` is "the side of the
 *   taker order" and must be `buy` or `sell` (written to the row as is: the taker side); `trade_id` a
 *   non-negative JSON integer; `ord_type` a string (not recorded, its value not checked); other fields are
 *   ignored (they stay in the raw file). Each row carries its own trade's `timestamp` as exchange_time (so
 *   the same trade in a snapshot and in an update makes equal rows); the frame's exchange_time is the
 *   earliest of them.
 * - The trade subscription asks for the snapshot (the most recent 50 trades): after a reconnect it repeats
 *   trades the previous connection saw, which lets the trade-id sequence show whether the reconnect window
 *   lost any. Repeated trades are equal rows.
 * - Trade ids: "a sequence number, unique per book" (and the v2 overview: "sequential int"): per symbol,
 *   each trade has the previous id + 1 ({@link krakenTradeSequence}). Every trade of a frame is a span of
 *   its own, in the order of the message.
 * - Book message: `{"channel":"book","type":"snapshot"|"update","data":[{symbol, bids:[{price, qty}],
 *   asks:[...], checksum, timestamp}]}`, `data` holding exactly one element ("always the first and only
 *   item"). `bids` and `asks` must both be arrays; `checksum` a JSON integer in 0..2^32-1; `timestamp` is
 *   required in updates and optional in snapshots (exchange_time null without it). Rows: one per level, bids
 *   then asks, in the order sent; a quantity of zero (it removes the level) is recorded as the venue wrote it.
 *   A snapshot yields `book_snapshots`, an update `book_deltas`.
 * - The v2 book carries no sequence number: book frames state no spans; the checksum is the only check.
 * - Control frames: `heartbeat` (about once a second when nothing else is sent), `status` (on connect and
 *   when the engine's state changes; never `closing`, since the documentation does not say a connection
 *   ends), `pong`, acknowledgements of `subscribe` / `unsubscribe` (success or failure, one per symbol),
 *   other responses (`success` boolean with `method` or `error`), and `instrument` messages (whose pair
 *   precisions the adapter remembers, below). Anything else (another channel, another type, a row-carrying
 *   message off its structure, a trade on the book connection or the reverse) is unrepresentable.
 * - Subscription: one `subscribe` request with `req_id` 1 for the data channel (`trade` with
 *   `snapshot: true`; `book` with the subscribed `depth` and `snapshot: true`), and on the book connection
 *   a second one, `req_id` 2, for `instrument` (sent after the book's, so that the book's acknowledgement
 *   comes first). The connection is subscribed at the first successful acknowledgement of request 1 (Kraken
 *   acknowledges each symbol separately; waiting for all would leave the frames between the first and last
 *   acknowledgement, the first snapshots among them, out of the connection's checks); a failed
 *   acknowledgement of request 1 before that refuses the subscription. Acknowledgements of the instrument
 *   request never decide it: without precisions the book is still recorded, only not checked.
 * - Keep-alive: "the server closes any open websocket connection within approximately one minute of
 *   inactivity", and any request (a `ping`) keeps it open: the plan sends `{"method":"ping"}` every 30 s,
 *   half that minute, whether or not heartbeats arrive (the documentation does not say that the server's own
 *   messages count as activity).
 * - Book checksum ("Book checksum (WebSocket v2)"): CRC32 over the top 10 asks (low to high) then the top 10
 *   bids (high to low), each level as price then quantity with the point removed and leading zeros stripped,
 *   as an unsigned 32-bit integer, after every level of the message is applied in order, a quantity of zero
 *   removing its level, and the book truncated to the subscribed depth (once, after the whole message).
 *   Because the numbers are sent without trailing zeros (the book page's own examples, e.g. `0.566` for a
 *   4-decimal pair, only check out when padded), each value is first written with its pair's
 *   `price_precision` / `qty_precision` from the `instrument` channel. A value with more significant
 *   fractional digits than its precision would need rounding, which the guide does not specify: no check.
 * - Precisions reach the books through the adapter: {@link VenueAdapter.classify} records the precisions of
 *   every `instrument` message it reads in the adapter's {@link KrakenPrecisions} (the only state it
 *   touches; what it returns does not depend on it), and the books read them when a checksum arrives. While
 *   a pair's precisions are unknown its books are kept but no check is returned.
 * - Resync after a mismatch: `unsubscribe` then `subscribe` (with `snapshot: true`) of that symbol's book, at
 *   the subscribed depth, `req_id` 3 and 4; the new snapshot rebuilds the book.
 */
import * as zlib from 'node:zlib'
import type { Channel } from '../formats/record/types.js'
import { isDecimal38Text, jsonNumberToPlainDecimal, toDecimal38_18 } from '../formats/record/decimal.js'
import {
  consecutiveIds, decodeUtf8, isJsonObject, JsonNumber, JsonReadError, readJson,
  type ChecksumCheck, type ConnectPlan, type FrameClass, type JsonObject, type JsonValue, type ParsedRow,
  type SequenceSpan, type SequenceState, type SequenceVerdict, type SnapshotRequest, type VenueAdapter, type VenueBooks,
} from './adapter.js'
import { Bad, describe, numberDecimal as decimal, str, UINT_RE, utcTimeNs, withSpans } from './frame-fields.js'

export interface KrakenOptions {
  /** Websocket URL; default `wss://ws.kraken.com/v2`. */
  wsBase?: string
  /** Book depth to subscribe: 10, 25, 100, 500 or 1000 (the documented values); default 1000. */
  depth?: number
}

/** The book depths Kraken documents. */
export const KRAKEN_BOOK_DEPTHS: readonly number[] = [10, 25, 100, 500, 1000]
/** Levels per side the checksum covers, whatever the depth. */
const CHECKSUM_LEVELS = 10
const DEFAULT_DEPTH = 1000
const DEFAULT_WS = 'wss://ws.kraken.com/v2'
/** `req_id` of the data channel's subscribe request: its acknowledgement decides the subscription. */
const DATA_REQ = 1
const INSTRUMENT_REQ = 2
const RESYNC_UNSUBSCRIBE_REQ = 3
const RESYNC_SUBSCRIBE_REQ = 4
/** Half of the "approximately one minute of inactivity" after which the server closes a connection. */
const PING_EVERY_MS = 30_000
/** The largest precision taken from an instrument message (Kraken's are single digits). */
const MAX_PRECISION = 30
/** The most pairs remembered (Kraken lists about a thousand): a venue sending endless symbols grows nothing. */
const MAX_PAIRS = 100_000
/** Acknowledgements are short; a longer frame is not parsed by `answers`. */
const MAX_ACK_BYTES = 4096

const UINT32_MAX = 4294967295n

function symbolOf(o: JsonObject, what: string): string {
  const s = str(o, 'symbol', what)
  if (s === '') throw new Bad('structure', `${what}: symbol is empty`)
  return s
}

function uint(o: JsonObject, key: string, what: string): JsonNumber {
  const v = o[key]
  if (!(v instanceof JsonNumber)) throw new Bad('structure', `${what}: ${key} is ${describe(v, 'a number')}`)
  if (!UINT_RE.test(v.text)) throw new Bad('structure', `${what}: ${key} is not a non-negative integer (${v.text})`)
  return v
}

function time(o: JsonObject, key: string, what: string): bigint {
  const t = utcTimeNs(str(o, key, what))
  if (typeof t !== 'bigint') throw new Bad(t.code, `${what}: ${key} ${t.reason}`)
  return t
}

function messageType(o: JsonObject, what: string, allowed: readonly string[]): string {
  const t = str(o, 'type', what)
  if (!allowed.includes(t)) throw new Bad('structure', `${what}: type ${JSON.stringify(t)} is not ${allowed.join(' or ')}`)
  return t
}

// ---------------------------------------------------------------------------------------------------
// Sequences

/** Kraken trade ids: per symbol, each trade has the previous id + 1 ("a sequence number, unique per book"). */
export const krakenTradeSequence = consecutiveIds

/** Kraken's sequence rule. Only trade spans exist: the v2 book has no sequence numbers. */
export function krakenSequence(prev: SequenceState | undefined, span: SequenceSpan): SequenceVerdict {
  if (span.sequence !== 'trades') throw new RangeError('kraken v2 book frames carry no sequence numbers, so no book spans')
  return krakenTradeSequence(prev, span)
}

// ---------------------------------------------------------------------------------------------------
// Precisions (instrument channel)

export interface KrakenPrecision {
  /** `price_precision`: fractional digits of the pair's prices. */
  price: number
  /** `qty_precision`: fractional digits of the pair's quantities. */
  qty: number
}

/** The pair precisions the adapter has read in `instrument` messages, by symbol. */
export class KrakenPrecisions {
  private readonly bySymbol = new Map<string, KrakenPrecision>()
  get(symbol: string): KrakenPrecision | undefined {
    return this.bySymbol.get(symbol)
  }
  /** Remembers a pair's precisions; past {@link MAX_PAIRS} pairs, only those of known pairs. */
  set(symbol: string, precision: KrakenPrecision): void {
    if (this.bySymbol.size >= MAX_PAIRS && !this.bySymbol.has(symbol)) return
    this.bySymbol.set(symbol, precision)
  }
  get size(): number {
    return this.bySymbol.size
  }
}

function precisionOf(v: JsonValue | undefined): number | null {
  if (!(v instanceof JsonNumber) || !UINT_RE.test(v.text)) return null
  const n = Number(v.text)
  return n <= MAX_PRECISION ? n : null
}

/**
 * An `instrument` message: `{"channel":"instrument","type":"snapshot"|"update","data":{"assets":[..],
 * "pairs":[{symbol, price_precision, qty_precision, ...}, ..]}}`. Pairs whose symbol or precisions are not
 * of that form are skipped (nothing learnt); the message carries no rows either way.
 */
function parseInstrument(v: JsonObject, precisions: KrakenPrecisions): FrameClass {
  const what = 'instrument'
  const type = messageType(v, what, ['snapshot', 'update'])
  const data = v['data']
  if (!isJsonObject(data)) throw new Bad('structure', `${what}: data is ${describe(data, 'an object')}`)
  const pairs = data['pairs']
  if (pairs !== undefined && !Array.isArray(pairs)) throw new Bad('structure', `${what}: pairs is not an array`)
  let learnt = 0
  for (const pair of pairs ?? []) {
    if (!isJsonObject(pair)) continue
    const symbol = pair['symbol']
    const price = precisionOf(pair['price_precision'])
    const qty = precisionOf(pair['qty_precision'])
    if (typeof symbol !== 'string' || symbol === '' || price === null || qty === null) continue
    precisions.set(symbol, { price, qty })
    learnt++
  }
  return { kind: 'control', note: `instrument ${type}: precisions of ${learnt} pairs` }
}

// ---------------------------------------------------------------------------------------------------
// Trades and books

function parseTrades(v: JsonObject): FrameClass {
  const what = 'trade'
  messageType(v, what, ['snapshot', 'update'])
  const data = v['data']
  if (!Array.isArray(data)) throw new Bad('structure', `${what}: data is ${describe(data, 'an array')}`)
  // First the ids, so that a trade that does not parse still counts for the sequence.
  const spans: SequenceSpan[] = []
  let idError: Bad | null = null
  const trades: { d: JsonObject; symbol: string; id: string }[] = []
  for (let i = 0; i < data.length; i++) {
    const d = data[i]
    try {
      if (!isJsonObject(d)) throw new Bad('structure', `${what}: data[${i}] is not an object`)
      const symbol = symbolOf(d, `${what} ${i}`)
      const id = uint(d, 'trade_id', `${what} ${i}`).text
      const n = BigInt(id)
      spans.push({ sequence: 'trades', instrument: symbol, first: n, last: n, snapshot: false })
      trades.push({ d, symbol, id })
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
      const { d, symbol, id } = trades[i]!
      const at = `${what} ${i}`
      const side = str(d, 'side', at)
      if (side !== 'buy' && side !== 'sell') throw new Bad('structure', `${at}: side ${JSON.stringify(side)} is not buy or sell`)
      const price = decimal(d['price'], `${at}: price`)
      const size = decimal(d['qty'], `${at}: qty`)
      str(d, 'ord_type', at)
      const t = time(d, 'timestamp', at)
      if (exchangeTime === null || t < exchangeTime) exchangeTime = t
      rows.push({ instrument: symbol, trade_id: id, side, price, size, exchange_time: t })
    }
    return { kind: 'rows', table: 'trades', rows, exchangeTime, sequences: spans }
  })
}

function levels(o: JsonObject, key: 'bids' | 'asks', what: string, instrument: string, exchangeTime: bigint | null, rows: ParsedRow[]): void {
  const v = o[key]
  if (!Array.isArray(v)) throw new Bad('structure', `${what}: ${key} is ${describe(v, 'an array')}`)
  const side = key === 'bids' ? 'bid' : 'ask'
  for (let i = 0; i < v.length; i++) {
    const level = v[i]
    if (!isJsonObject(level)) throw new Bad('structure', `${what}: ${key}[${i}] is not a {price, qty} object`)
    const price = decimal(level['price'], `${what}: ${key}[${i}] price`)
    const size = decimal(level['qty'], `${what}: ${key}[${i}] qty`)
    rows.push({ instrument, trade_id: null, side, price, size, exchange_time: exchangeTime })
  }
}

function parseBook(v: JsonObject): FrameClass {
  const what = 'book'
  const type = messageType(v, what, ['snapshot', 'update'])
  const data = v['data']
  if (!Array.isArray(data)) throw new Bad('structure', `${what}: data is ${describe(data, 'an array')}`)
  if (data.length !== 1) throw new Bad('structure', `${what}: data has ${data.length} elements, not the one book`)
  const d = data[0]!
  if (!isJsonObject(d)) throw new Bad('structure', `${what}: data[0] is not an object`)
  const symbol = symbolOf(d, what)
  const checksum = uint(d, 'checksum', what)
  if (BigInt(checksum.text) > UINT32_MAX) throw new Bad('structure', `${what}: checksum ${checksum.text} is not an unsigned 32-bit integer`)
  const exchangeTime = type === 'update' || d['timestamp'] !== undefined ? time(d, 'timestamp', what) : null
  const rows: ParsedRow[] = []
  levels(d, 'bids', what, symbol, exchangeTime, rows)
  levels(d, 'asks', what, symbol, exchangeTime, rows)
  return { kind: 'rows', table: type === 'snapshot' ? 'book_snapshots' : 'book_deltas', rows, exchangeTime, sequences: [] }
}

function parseStatus(v: JsonObject): FrameClass {
  const what = 'status'
  messageType(v, what, ['update'])
  const data = v['data']
  if (!Array.isArray(data) || data.length === 0 || !isJsonObject(data[0])) throw new Bad('structure', `${what}: data is not an array of the status object`)
  return { kind: 'control', note: `status: system ${str(data[0], 'system', what)}` }
}

/** A response to a request (`method` and `success`, or an `error` without `method`). */
function parseResponse(v: JsonObject, text: string): FrameClass {
  const method = v['method']
  const success = v['success']
  const short = JSON.stringify(text.length > 200 ? text.slice(0, 200) : text)
  if (method === 'pong') return { kind: 'control', note: success === false ? `pong with an error: ${short}` : 'pong' }
  if (typeof success !== 'boolean') throw new Bad('structure', 'a response without a boolean success')
  if (method !== undefined && typeof method !== 'string') throw new Bad('structure', 'a response whose method is not a string')
  if (method === undefined && typeof v['error'] !== 'string') throw new Bad('structure', 'a response without method or error')
  if (!success) return { kind: 'control', note: `${method ?? 'request'} failed: ${short}` }
  if (method === 'subscribe' || method === 'unsubscribe') {
    const r = v['result']
    const channel = isJsonObject(r) && typeof r['channel'] === 'string' ? r['channel'] : '?'
    const symbol = isJsonObject(r) && typeof r['symbol'] === 'string' ? ` ${r['symbol']}` : ''
    return { kind: 'control', note: `${method} acknowledged: ${channel}${symbol}` }
  }
  return { kind: 'control', note: `${method} succeeded` }
}

/**
 * A trade message of one trade exactly as Kraken writes it: no whitespace, no escapes, the documented keys
 * once each in the documented order, numbers without exponents or leading zeros, a plain symbol.
 */
const PLAIN_TRADE_RE = /^\{"channel":"trade","type":"(?:update|snapshot)","data":\[\{"symbol":"([A-Z0-9]+\/[A-Z0-9]+)","side":"(buy|sell)","price":((?:0|[1-9][0-9]*)(?:\.[0-9]+)?),"qty":((?:0|[1-9][0-9]*)(?:\.[0-9]+)?),"ord_type":"[a-z]+","trade_id":(0|[1-9][0-9]*),"timestamp":"([^"\\]+)"\}\]\}$/

/**
 * The class of a plain one-trade message ({@link PLAIN_TRADE_RE}) without building its JSON tree, or null to
 * take the general path. Gives exactly what the general path gives for such a payload; anything it would
 * refuse (a decimal DECIMAL(38, 18) cannot hold, a time it does not take) goes the general path, which says why.
 */
function plainTrade(text: string): FrameClass | null {
  const m = PLAIN_TRADE_RE.exec(text)
  if (m === null) return null
  const price = m[3]!
  const size = m[4]!
  if (!isDecimal38Text(price) || !isDecimal38Text(size)) return null
  const t = utcTimeNs(m[6]!)
  if (typeof t !== 'bigint') return null
  const instrument = m[1]!
  const id = m[5]!
  const n = BigInt(id)
  return {
    kind: 'rows',
    table: 'trades',
    rows: [{ instrument, trade_id: id, side: m[2]!, price, size, exchange_time: t }],
    exchangeTime: t,
    sequences: [{ sequence: 'trades', instrument, first: n, last: n, snapshot: false }],
  }
}

function classifyKraken(channel: Channel, payload: Uint8Array, binary: boolean, precisions: KrakenPrecisions): FrameClass {
  if (binary) return { kind: 'unrepresentable', code: 'not-json', reason: 'binary frame; Kraken v2 sends JSON text frames' }
  const text = decodeUtf8(payload)
  if (text === null) return { kind: 'unrepresentable', code: 'not-json', reason: 'payload is not UTF-8' }
  if (channel === 'trades') {
    const fast = plainTrade(text)
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
    const ch = v['channel']
    if (ch !== undefined) {
      if (typeof ch !== 'string') throw new Bad('structure', 'channel is not a string')
      switch (ch) {
        case 'heartbeat': return { kind: 'control', note: 'heartbeat' }
        case 'status': return parseStatus(v)
        case 'instrument': return parseInstrument(v, precisions)
        case 'trade':
          if (channel !== 'trades') throw new Bad('structure', `a trade message on channel ${channel}`)
          return parseTrades(v)
        case 'book':
          if (channel !== 'book') throw new Bad('structure', `a book message on channel ${channel}`)
          return parseBook(v)
        default: throw new Bad('structure', `a message of Kraken channel ${JSON.stringify(ch)} on channel ${channel}`)
      }
    }
    if ('method' in v || 'success' in v) return parseResponse(v, text)
    throw new Bad('structure', 'neither a channel message nor a response')
  } catch (err) {
    if (err instanceof Bad) return { kind: 'unrepresentable', code: err.code, reason: err.message, ...(err.sequences ? { sequences: err.sequences } : {}) }
    throw err
  }
}

// ---------------------------------------------------------------------------------------------------
// Books and checksums

interface Level {
  /** The price as DECIMAL(38, 18) unscaled integer: `37500` and `37500.0` are one level. */
  key: bigint
  price: string
  qty: string
}

interface Book {
  /** Best (highest) first. */
  bids: Level[]
  /** Best (lowest) first. */
  asks: Level[]
}

/** The books of one connection, by symbol. */
export interface KrakenBooks {
  readonly books: Map<string, Book>
}

/** Index of `key` in `levels` (sorted by `before`), or of the place it would take, as -(index + 1). */
function search(levels: Level[], key: bigint, descending: boolean): number {
  let lo = 0
  let hi = levels.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    const k = levels[mid]!.key
    if (k === key) return mid
    if (descending ? k > key : k < key) lo = mid + 1
    else hi = mid
  }
  return -(lo + 1)
}

/** Applies one level: a quantity of zero removes it, any other sets it. */
function applyLevel(levels: Level[], descending: boolean, price: string, qty: string): void {
  const key = toDecimal38_18(price)
  const q = toDecimal38_18(qty)
  if (key === null || q === null) return
  const at = search(levels, key, descending)
  if (q === 0n) {
    if (at >= 0) levels.splice(at, 1)
  } else if (at >= 0) {
    levels[at] = { key, price, qty }
  } else {
    levels.splice(-(at + 1), 0, { key, price, qty })
  }
}

/**
 * One field of the checksum string: the plain decimal `text` written with exactly `places` fractional digits,
 * the point removed, leading zeros stripped ("45285.2" with 1 -> "452852"; "0.001" with 8 -> "100000").
 * Null when that needs rounding (more significant fractional digits than `places`) or the value is negative.
 */
export function krakenChecksumField(text: string, places: number): string | null {
  if (text.startsWith('-')) return null
  const point = text.indexOf('.')
  const int = point < 0 ? text : text.slice(0, point)
  const fraction = point < 0 ? '' : text.slice(point + 1).replace(/0+$/, '')
  if (fraction.length > places) return null
  return (int + fraction.padEnd(places, '0')).replace(/^0+/, '')
}

function checksumString(book: Book, p: KrakenPrecision): string | null {
  let s = ''
  for (const levels of [book.asks, book.bids]) {
    const n = Math.min(CHECKSUM_LEVELS, levels.length)
    for (let i = 0; i < n; i++) {
      const price = krakenChecksumField(levels[i]!.price, p.price)
      const qty = krakenChecksumField(levels[i]!.qty, p.qty)
      if (price === null || qty === null) return null
      s += price + qty
    }
  }
  return s
}

/** CRC-32 of the ASCII text, unsigned. */
function crc32(text: string): number {
  return zlib.crc32(text) >>> 0
}

/** Symbol and checksum text of a book frame's payload (already classified as rows), or null. */
function bookHead(payload: Uint8Array): { symbol: string; checksum: string } | null {
  const text = decodeUtf8(payload)
  if (text === null) return null
  let v: JsonValue
  try {
    v = readJson(text)
  } catch {
    return null
  }
  if (!isJsonObject(v) || !Array.isArray(v['data'])) return null
  const d = v['data'][0]
  if (!isJsonObject(d) || typeof d['symbol'] !== 'string' || !(d['checksum'] instanceof JsonNumber)) return null
  return { symbol: d['symbol'], checksum: d['checksum'].text }
}

/** The books of a connection at `depth`, checked with the precisions `precisions` holds. */
export function krakenBooks(depth: number, precisions: KrakenPrecisions): VenueBooks<KrakenBooks> {
  return {
    create: () => ({ books: new Map() }),
    apply(state, frame, payload): ChecksumCheck[] {
      if (frame.table !== 'book_snapshots' && frame.table !== 'book_deltas') return []
      const head = bookHead(payload)
      if (head === null) return []
      let book = state.books.get(head.symbol)
      if (frame.table === 'book_snapshots') state.books.set(head.symbol, (book = { bids: [], asks: [] }))
      // An update without the snapshot it follows (before the first, or after a reset) builds nothing.
      else if (book === undefined) return []
      for (const row of frame.rows) {
        if (row.instrument !== head.symbol) continue
        if (row.side === 'bid') applyLevel(book.bids, true, row.price, row.size)
        else if (row.side === 'ask') applyLevel(book.asks, false, row.price, row.size)
      }
      if (book.bids.length > depth) book.bids.length = depth
      if (book.asks.length > depth) book.asks.length = depth
      const p = precisions.get(head.symbol)
      if (p === undefined) return []
      const s = checksumString(book, p)
      if (s === null) return []
      return [{ instrument: head.symbol, expected: head.checksum, computed: String(crc32(s)) }]
    },
    reset(state, instrument) {
      state.books.delete(instrument)
    },
  }
}

// ---------------------------------------------------------------------------------------------------
// Connecting

/**
 * Kraken answers each symbol of a subscribe request with `{"method":"subscribe","result":{"channel":..,
 * "symbol":..},"success":true|false,"error":..,"req_id":..}`. The data channel's first success subscribes the
 * connection; a failure of that request before it refuses it.
 */
function subscribeAnswer(kchannel: string, payload: Uint8Array): 'subscribed' | 'refused' | null {
  if (payload.byteLength > MAX_ACK_BYTES) return null
  const text = decodeUtf8(payload)
  if (text === null || !text.includes('"subscribe"')) return null
  let v: JsonValue
  try {
    v = readJson(text)
  } catch {
    return null
  }
  if (!isJsonObject(v) || v['method'] !== 'subscribe' || typeof v['success'] !== 'boolean') return null
  const req = v['req_id']
  const r = v['result']
  const resultChannel = isJsonObject(r) ? r['channel'] : undefined
  if (req !== undefined) {
    if (!(req instanceof JsonNumber) || req.text !== String(DATA_REQ)) return null
    if (resultChannel !== undefined && resultChannel !== kchannel) return null
  } else if (resultChannel !== kchannel) {
    return null
  }
  if (!v['success']) return 'refused'
  return resultChannel === kchannel ? 'subscribed' : null
}

/** A Kraken spot (WebSocket v2) adapter, with its books and the precisions it has learnt. */
export interface KrakenAdapter extends VenueAdapter {
  readonly books: VenueBooks<KrakenBooks>
  readonly precisions: KrakenPrecisions
  readonly depth: number
}

export function createKrakenAdapter(opts: KrakenOptions = {}): KrakenAdapter {
  const wsBase = opts.wsBase ?? DEFAULT_WS
  const depth = opts.depth ?? DEFAULT_DEPTH
  if (!KRAKEN_BOOK_DEPTHS.includes(depth)) throw new RangeError(`kraken book depth must be one of ${KRAKEN_BOOK_DEPTHS.join(', ')}, not ${depth}`)
  const precisions = new KrakenPrecisions()
  const check = (channel: Channel): void => {
    if (channel !== 'trades' && channel !== 'book') throw new RangeError(`kraken spot serves no channel ${channel}`)
  }
  return {
    name: 'kraken',
    channels: ['trades', 'book'] as const,
    precisions,
    depth,
    books: krakenBooks(depth, precisions),
    about: {
      summary: 'Kraken spot (WebSocket v2)',
      channels: {
        trades: { streams: 'trade (with the 50-trade snapshot)', sequence: 'trade_id: +1 per trade of a symbol' },
        book: { streams: `book at depth ${depth}, and instrument for the precisions`, sequence: 'none: the v2 book has no sequence numbers (checksum only)' },
      },
      checksum: 'CRC32 of the top 10 asks then bids, values written with the pair\'s instrument precisions',
      endpoints: [wsBase],
    },
    classify(channel, payload, binary) {
      check(channel)
      return classifyKraken(channel, payload, binary, precisions)
    },
    sequence: krakenSequence,
    connect(channel, instruments): ConnectPlan {
      check(channel)
      if (instruments.length === 0) throw new RangeError('no instruments to subscribe')
      const symbol = [...instruments]
      const keepAlive = { everyMs: PING_EVERY_MS, text: JSON.stringify({ method: 'ping' }) }
      if (channel === 'trades') {
        return {
          url: wsBase,
          send: [JSON.stringify({ method: 'subscribe', params: { channel: 'trade', symbol, snapshot: true }, req_id: DATA_REQ })],
          answers: (payload) => subscribeAnswer('trade', payload),
          keepAlive,
        }
      }
      return {
        url: wsBase,
        send: [
          JSON.stringify({ method: 'subscribe', params: { channel: 'book', symbol, depth, snapshot: true }, req_id: DATA_REQ }),
          JSON.stringify({ method: 'subscribe', params: { channel: 'instrument', snapshot: true }, req_id: INSTRUMENT_REQ }),
        ],
        answers: (payload) => subscribeAnswer('book', payload),
        keepAlive,
        resync: (instrument) => [
          JSON.stringify({ method: 'unsubscribe', params: { channel: 'book', symbol: [instrument], depth }, req_id: RESYNC_UNSUBSCRIBE_REQ }),
          JSON.stringify({ method: 'subscribe', params: { channel: 'book', symbol: [instrument], depth, snapshot: true }, req_id: RESYNC_SUBSCRIBE_REQ }),
        ],
      }
    },
    snapshotRequest(channel): SnapshotRequest | null {
      check(channel)
      // The book snapshot comes over the websocket.
      return null
    },
    wrapSnapshot(channel) {
      check(channel)
      throw new RangeError('kraken sends its book snapshots over the websocket: no REST snapshot to record')
    },
  }
}

/** The Kraken adapter with default options (public endpoint, depth 1000). */
export const kraken: VenueAdapter = createKrakenAdapter()

/**
 * Binance Spot: channels `trades` (`<symbol>@trade`) and `book` (`<symbol>@depth@100ms` plus the REST
 * depth snapshot). Funding and liquidations do not exist on spot.
 *
 * Assumptions, from Binance's public documentation (see ../shared/reference/venues.md, "Binance Spot");
 * check them against the current documentation when Binance changes its API:
 *
 * - Frames are JSON text frames. A raw stream (`/ws`) sends the event object; a combined stream
 *   (`/stream`) wraps it as `{"stream":"<symbol>@trade","data":{...}}`. Both are accepted; the stream
 *   name must name the event's symbol (lowercase) and its kind, otherwise the frame is unrepresentable.
 * - `serverShutdown` (the venue is about to close the connection for maintenance) is a control frame that
 *   asks the recorder to open the connection's successor now ({@link isServerShutdown} for its shapes).
 * - Responses to requests are control frames: `{"result":null,"id":1}` (SUBSCRIBE acknowledged),
 *   `{"result":[...],"id":3}` (LIST_SUBSCRIPTIONS), `{"error":{"code":2,"msg":"..."},"id":1}`.
 * - A connection of a channel carries only that channel's events and responses, so any other frame
 *   (not JSON, another event type, a trade missing a field) is treated as a row-carrying frame that does
 *   not parse as the documented structure: no rows, listed as unrepresentable. That errs towards marking
 *   an hour partial rather than silently dropping data.
 * - Trade: `{"e":"trade","E":<event ms>,"s":"BTCUSDT","t":<trade id>,"p":"<price>","q":"<qty>",
 *   "T":<trade ms>,"m":<buyer is maker>,"M":<ignore>}`. `E`, `t` and `T` must be JSON integers written
 *   without fraction or exponent, `t` non-negative; `p` and `q` JSON strings holding plain decimals that
 *   DECIMAL(38, 18) holds exactly; `m` a boolean; `M`, when present, a boolean. Other fields are ignored
 *   (they stay in the raw file).
 * - `side` of a trade: Binance writes no side word; it writes `m`, "is the buyer the market maker". We
 *   write the taker side that `m` states exactly: `sell` when `m` is true (the seller took liquidity),
 *   `buy` when false. This re-expresses the venue's field, it does not estimate anything, and it is the
 *   convention of the venues that do write a side (Kraken, OKX, Bybit, Deribit, BitMEX: taker side).
 * - Times are milliseconds unless the connection asked for `timeUnit=microsecond`; the adapter is told
 *   which ({@link BinanceSpotOptions.timeUnit}); it does not guess from magnitudes.
 * - exchange_time of a trade frame is the earlier of `E` and `T` ("the earliest when it states several");
 *   of a depth update its `E`; a REST snapshot states no time, so null. Rows carry their frame's
 *   exchange_time.
 * - Depth update: `{"e":"depthUpdate","E":..,"s":..,"U":<first update id>,"u":<last update id>,
 *   "b":[["<price>","<qty>"],...],"a":[...]}` with `U <= u`; each level is exactly a two-string array.
 *   Rows: one per level, bids (`bid`) then asks (`ask`), in the order sent; a quantity of zero removes the
 *   level, and is recorded as the zero the venue sent.
 * - REST depth snapshot (`GET /api/v3/depth`): `{"lastUpdateId":..,"bids":[[p,q],..],"asks":[..]}`. It is
 *   recorded as a text frame of its own on the book channel, wrapped by the recorder as
 *   `{"rest":"depth","symbol":"BTCUSDT","response":<the HTTP body, verbatim>}` ({@link wrapBinanceDepthSnapshot});
 *   it yields `book_snapshots` rows, one per level.
 * - Sequences: trade ids `t` increase by one per trade of a symbol; depth update ids chain as
 *   `U == prev_u + 1`, and after a snapshot with `lastUpdateId` L updates with `u <= L` are dropped and the
 *   first applied one satisfies `U <= L + 1 <= u` ({@link binanceBookSequence}).
 */
import type { Channel } from '../formats/record/types.js'
import {
  consecutiveIds, decodeUtf8, isJsonObject, JsonReadError, readJson,
  type ConnectPlan, type FrameClass, type JsonObject, type JsonValue, type ParsedRow, type SequenceSpan,
  type SequenceState, type SequenceVerdict, type SnapshotRequest, type VenueAdapter,
} from './adapter.js'
import {
  decimal, digitsBelow, isServerShutdown, levels, MAX_STREAMS, parseSnapshot, subscribeAnswer, SUBSCRIBE_ID, symbol,
  timeNs, timeUnit, uint, type TimeUnit,
} from './binance-common.js'
import { Bad, withSpans } from './frame-fields.js'

import { wrapBinanceDepthSnapshot } from './binance-common.js'
import { isDecimal38Text } from '../formats/record/decimal.js'

export { wrapBinanceDepthSnapshot }

export interface BinanceSpotOptions {
  /** Unit of `E` and `T`: `ms` (default) or `us` (connection opened with `timeUnit=microsecond`). */
  timeUnit?: 'ms' | 'us'
  /** Websocket base; default `wss://data-stream.binance.vision` (market data only). */
  wsBase?: string
  /** REST base; default `https://api.binance.com`. */
  restBase?: string
  /** `limit` of the depth snapshot request; default 1000. */
  snapshotLimit?: number
  /** Use the combined-stream endpoint (`/stream`, payloads wrapped in `{stream, data}`); default false (`/ws`). */
  combined?: boolean
}

/** Binance spot trade ids: each trade of a symbol has the previous id + 1. */
export const binanceTradeSequence = consecutiveIds

/**
 * Binance spot depth: an update `U..u` continues when `U == prev_u + 1` (more exactly, when
 * `U <= last + 1 <= u`: Binance's own procedure applies any update that is not stale and leaves no hole);
 * it is stale when `u <= last` (dropped); a gap when `U > last + 1` (after `last`, before `U`).
 * A snapshot with `lastUpdateId` L sets `last` to max(last, L), so updates with `u <= L` are dropped and
 * the first one applied must have `U <= L + 1 <= u`, or it is a gap after L. A snapshot with
 * `L + 1 < U` of the connection's first update is behind the stream ("refetch" in Binance's procedure).
 */
export function binanceBookSequence(prev: SequenceState | undefined, span: SequenceSpan): SequenceVerdict {
  if (span.snapshot) {
    const L = span.last
    if (prev === undefined) return { verdict: 'snapshot', state: { last: L, streamFirst: null } }
    if (prev.streamFirst !== null && L + 1n < prev.streamFirst) return { verdict: 'snapshot-behind', state: prev }
    return { verdict: 'snapshot', state: { last: L > prev.last ? L : prev.last, streamFirst: prev.streamFirst } }
  }
  const U = span.first
  const u = span.last
  if (prev === undefined) return { verdict: 'start', state: { last: u, streamFirst: U } }
  if (u <= prev.last) return { verdict: 'stale', state: prev }
  const state: SequenceState = { last: u, streamFirst: prev.streamFirst ?? U }
  if (U > prev.last + 1n) return { verdict: 'gap', afterId: prev.last.toString(), beforeId: U.toString(), state }
  return { verdict: 'next', state }
}

/** Binance's sequence rules, by the span's sequence. */
export function binanceSequence(prev: SequenceState | undefined, span: SequenceSpan): SequenceVerdict {
  return span.sequence === 'trades' ? binanceTradeSequence(prev, span) : binanceBookSequence(prev, span)
}

function parseTrade(d: JsonObject, mult: bigint): FrameClass {
  const what = 'trade'
  const E = uint(d, 'E', what)
  const s = symbol(d, what)
  const t = uint(d, 't', what)
  const id = BigInt(t.text)
  const span: SequenceSpan = { sequence: 'trades', instrument: s, first: id, last: id, snapshot: false }
  const [p, q] = withSpans([span], () => [decimal(d['p'], 'trade: p'), decimal(d['q'], 'trade: q')] as const)
  const T = uint(d, 'T', what)
  const m = d['m']
  if (typeof m !== 'boolean') throw new Bad('structure', `trade: m is ${m === undefined ? 'missing' : 'not a boolean'}`)
  const M = d['M']
  if (M !== undefined && typeof M !== 'boolean') throw new Bad('structure', 'trade: M is not a boolean')
  const eNs = timeNs(E, mult, 'trade: E')
  const tNs = timeNs(T, mult, 'trade: T')
  const exchangeTime = eNs < tNs ? eNs : tNs
  return {
    kind: 'rows',
    table: 'trades',
    rows: [{ instrument: s, trade_id: t.text, side: m ? 'sell' : 'buy', price: p, size: q, exchange_time: exchangeTime }],
    exchangeTime,
    sequences: [span],
  }
}

function parseDepthUpdate(d: JsonObject, mult: bigint): FrameClass {
  const what = 'depthUpdate'
  const E = uint(d, 'E', what)
  const s = symbol(d, what)
  const U = BigInt(uint(d, 'U', what).text)
  const u = BigInt(uint(d, 'u', what).text)
  if (U > u) throw new Bad('structure', `depthUpdate: U ${U} is after u ${u}`)
  const span: SequenceSpan = { sequence: 'book', instrument: s, first: U, last: u, snapshot: false }
  const exchangeTime = withSpans([span], () => timeNs(E, mult, 'depthUpdate: E'))
  const rows: ParsedRow[] = []
  withSpans([span], () => {
    levels(d, 'b', what, 'bid', s, exchangeTime, rows)
    levels(d, 'a', what, 'ask', s, exchangeTime, rows)
  })
  return { kind: 'rows', table: 'book_deltas', rows, exchangeTime, sequences: [span] }
}

/**
 * A raw-stream trade exactly as Binance writes it: no whitespace, no escapes, the documented keys once each
 * in the documented order, integers without leading zeros, a plain symbol and plain decimal texts.
 */
const PLAIN_TRADE_RE = /^\{"e":"trade","E":(0|[1-9][0-9]*),"s":"([A-Z0-9]+)","t":(0|[1-9][0-9]*),"p":"([0-9.]+)","q":"([0-9.]+)","T":(0|[1-9][0-9]*),"m":(true|false)(?:,"M":(?:true|false))?\}$/

const COMBINED_HEAD = '{"stream":"'
const COMBINED_DATA = '","data":'

/**
 * A plain trade in a combined stream's envelope, `{"stream":"btcusdt@trade","data":{...}}`, written exactly
 * so and naming its own symbol's stream; anything else is left to the parser, which says what is wrong.
 */
function combinedPlainTrade(text: string, unit: TimeUnit): FrameClass | null {
  const end = text.indexOf(COMBINED_DATA, COMBINED_HEAD.length)
  if (end < 0 || text.charCodeAt(text.length - 1) !== 0x7d) return null
  const trade = plainTrade(text.slice(end + COMBINED_DATA.length, -1), unit)
  if (trade === null || trade.kind !== 'rows') return null
  const stream = text.slice(COMBINED_HEAD.length, end)
  const expected = trade.sequences[0]!.instrument.toLowerCase() + '@trade'
  return stream === expected || stream.startsWith(expected + '@') ? trade : null
}

/**
 * The class of a plain trade ({@link PLAIN_TRADE_RE}) without building its JSON tree, or null to take the
 * general path. Gives exactly what the general path gives for such a payload; anything it would refuse
 * (a decimal DECIMAL(38, 18) cannot hold, a time beyond int64) goes the general path, which says why.
 */
function plainTrade(text: string, unit: TimeUnit): FrameClass | null {
  const m = PLAIN_TRADE_RE.exec(text)
  if (m === null) return null
  const p = m[4]!
  const q = m[5]!
  if (!isDecimal38Text(p) || !isDecimal38Text(q)) return null
  // E and T compared as texts: a bigint is made of the earlier only.
  const E = m[1]!
  const T = m[6]!
  const earlier = digitsBelow(T, E) ? T : E
  if (digitsBelow(unit.maxUnitsText, earlier === E ? T : E)) return null
  const exchangeTime = BigInt(earlier) * unit.mult
  const s = m[2]!
  const tText = m[3]!
  const id = BigInt(tText)
  return {
    kind: 'rows',
    table: 'trades',
    rows: [{ instrument: s, trade_id: tText, side: m[7] === 'true' ? 'sell' : 'buy', price: p, size: q, exchange_time: exchangeTime }],
    exchangeTime,
    sequences: [{ sequence: 'trades', instrument: s, first: id, last: id, snapshot: false }],
  }
}

function classifyBinance(channel: Channel, payload: Uint8Array, binary: boolean, unit: TimeUnit): FrameClass {
  if (binary) return { kind: 'unrepresentable', code: 'not-json', reason: 'binary frame; Binance spot streams send JSON text frames' }
  const text = decodeUtf8(payload)
  if (text === null) return { kind: 'unrepresentable', code: 'not-json', reason: 'payload is not UTF-8' }
  if (channel === 'trades') {
    const fast = text.startsWith(COMBINED_HEAD) ? combinedPlainTrade(text, unit) : plainTrade(text, unit)
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
    if ('rest' in v) {
      if (channel !== 'book') throw new Bad('structure', `a REST snapshot frame on channel ${channel}`)
      return parseSnapshot(v)
    }
    // Responses to our requests.
    if ('id' in v && ('result' in v || 'error' in v) && !('e' in v) && !('stream' in v)) {
      if ('error' in v) return { kind: 'control', note: `error response: ${JSON.stringify(text.length > 200 ? text.slice(0, 200) : text)}` }
      return { kind: 'control', note: v['result'] === null ? 'request acknowledged' : 'request result' }
    }
    if (isServerShutdown(v)) return { kind: 'control', note: 'serverShutdown: the venue will close this connection', closing: true }
    let d: JsonObject = v
    let stream: string | null = null
    if ('stream' in v || 'data' in v) {
      const st = v['stream']
      const data = v['data']
      if (typeof st !== 'string') throw new Bad('structure', 'combined stream: stream is missing or not a string')
      if (!isJsonObject(data)) throw new Bad('structure', 'combined stream: data is missing or not an object')
      stream = st
      d = data
    }
    const e = d['e']
    if (typeof e !== 'string') throw new Bad('structure', 'event type e is missing or not a string')
    let out: FrameClass
    let suffix: string
    if (channel === 'trades') {
      if (e !== 'trade') throw new Bad('structure', `event type ${JSON.stringify(e)} on channel trades`)
      out = parseTrade(d, unit.mult)
      suffix = '@trade'
    } else if (channel === 'book') {
      if (e !== 'depthUpdate') throw new Bad('structure', `event type ${JSON.stringify(e)} on channel book`)
      out = parseDepthUpdate(d, unit.mult)
      suffix = '@depth'
    } else {
      throw new RangeError(`binance spot serves no channel ${channel}`)
    }
    if (stream !== null && out.kind === 'rows') {
      const expected = out.sequences[0]!.instrument.toLowerCase() + suffix
      if (stream !== expected && !stream.startsWith(expected + '@')) {
        throw new Bad('structure', `combined stream ${JSON.stringify(stream)} does not name ${expected}`)
      }
    }
    return out
  } catch (err) {
    if (err instanceof Bad) return { kind: 'unrepresentable', code: err.code, reason: err.message, ...(err.sequences ? { sequences: err.sequences } : {}) }
    throw err
  }
}

/** A Binance spot adapter. */
export function createBinanceSpotAdapter(opts: BinanceSpotOptions = {}): VenueAdapter {
  const unit = timeUnit(opts.timeUnit === 'us' ? 1_000n : 1_000_000n)
  const wsBase = opts.wsBase ?? 'wss://data-stream.binance.vision'
  const restBase = opts.restBase ?? 'https://api.binance.com'
  const limit = opts.snapshotLimit ?? 1000
  const channels = ['trades', 'book'] as const
  const check = (channel: Channel): void => {
    if (channel !== 'trades' && channel !== 'book') throw new RangeError(`binance spot serves no channel ${channel}`)
  }
  return {
    name: 'binance',
    channels,
    about: {
      summary: 'Binance spot',
      channels: {
        trades: { streams: '<symbol>@trade', sequence: 'trade id t: +1 per trade of a symbol' },
        book: { streams: '<symbol>@depth@100ms, and GET /api/v3/depth after each subscription and gap', sequence: 'U = previous u + 1; the snapshot joined by U <= lastUpdateId + 1 <= u' },
      },
      checksum: null,
      // The recorder subscribes through the combined streams (venueAt); the registry's instance reads both shapes.
      endpoints: [`${wsBase}/stream`, `${restBase}/api/v3/depth`],
    },
    classify(channel, payload, binary) {
      check(channel)
      return classifyBinance(channel, payload, binary, unit)
    },
    sequence: binanceSequence,
    connect(channel, instruments): ConnectPlan {
      check(channel)
      if (instruments.length === 0) throw new RangeError('no instruments to subscribe')
      if (instruments.length > MAX_STREAMS) throw new RangeError(`binance allows ${MAX_STREAMS} streams per connection`)
      const suffix = channel === 'trades' ? '@trade' : '@depth@100ms'
      const params = instruments.map((s) => s.toLowerCase() + suffix)
      const query = opts.timeUnit === 'us' ? '?timeUnit=microsecond' : ''
      return {
        url: `${wsBase}/${opts.combined ? 'stream' : 'ws'}${query}`,
        send: [JSON.stringify({ method: 'SUBSCRIBE', params, id: SUBSCRIBE_ID })],
        answers: subscribeAnswer,
      }
    },
    snapshotRequest(channel, instrument): SnapshotRequest | null {
      check(channel)
      if (channel !== 'book') return null
      return { url: `${restBase}/api/v3/depth?symbol=${encodeURIComponent(instrument)}&limit=${limit}` }
    },
    wrapSnapshot(channel, instrument, body) {
      check(channel)
      if (channel !== 'book') throw new RangeError('only the book channel records REST snapshots')
      return wrapBinanceDepthSnapshot(instrument, body)
    },
  }
}

/** The Binance spot adapter with default options (milliseconds, raw streams). */
export const binanceSpot: VenueAdapter = createBinanceSpotAdapter()

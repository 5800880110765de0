/**
 * Binance USD-M futures (name `binance-usdm`): channels `trades` (`<symbol>@aggTrade`), `book`
 * (`<symbol>@depth@100ms` plus the REST depth snapshot), `funding` (`<symbol>@markPrice`) and
 * `liquidations` (`<symbol>@forceOrder`). docs/venues/binance-usdm.md cites the documents each assumption
 * comes from; check them against the current documentation when Binance changes its API.
 *
 * - Endpoints are split by kind (Binance's WebSocket change notice of 2026-03-06; the old URLs were retired
 *   on 2026-04-23): depth on `wss://fstream.binance.com/public`, aggregate trades, mark price and
 *   liquidation orders on `/market`. Combined streams (`/stream`) wrap each event as `{"stream","data"}`;
 *   the stream name must name the event's symbol and kind.
 * - The server pings every 3 minutes and drops a connection that has not answered within 10; the
 *   websocket library answers. A quiet stream (liquidations) may carry nothing between pings, so a plan
 *   states that silence (`silenceMs`) and the recorder does not take it for a stall.
 * - Trades are aggregate trades: `{"e":"aggTrade","E","s","a","p","q","f","l","T","m"}`, fills of one taker
 *   order at one price within 100 ms. A row is one aggregate: `trade_id` is the aggregate id `a`, `size` the
 *   aggregate's quantity, side the taker's (`m` true: the buyer made, so a sell). `a` is consecutive per
 *   symbol: a missing `a` is a gap. `f`..`l` skip the insurance-fund and ADL trades, which are not
 *   aggregated ("Aggregate Trade Streams"): those holes are not gaps. exchange_time is the earlier of `E`
 *   and `T`.
 * - Depth: `{"e":"depthUpdate","E","T","s","U","u","pu","b","a"}`. Update ids are the matching engine's,
 *   not dense per symbol: an update continues its symbol's stream when `pu` equals the previous update's `u`
 *   ("How to manage a local order book correctly"). After a REST snapshot with `lastUpdateId` L, updates with
 *   `u < L` are dropped and the first one applied has `U <= L <= u`. exchange_time is the earlier of `E` and
 *   `T`. The snapshot (`GET /fapi/v1/depth`) is journaled as spot's is, `{"rest":"depth",..}`.
 * - Funding: `{"e":"markPriceUpdate","E","s","p","i","P","r","T"}` (a delivery contract's `r` is empty and its
 *   `T` 0: no funding, as the COIN-M page documents it); liquidations:
 *   `{"e":"forceOrder","E","o":{"s","S","o","f","q","p","ap","X","l","z","T"}}`. The record format keeps both
 *   raw; the adapter checks the documented fields and states `E` (liquidations: the earlier of `E` and the
 *   order's `T`) as exchange_time. The liquidation stream is a sample, at most the latest order per symbol
 *   each second: its frames say nothing of the orders between them, and no sequence is checked.
 */
import type { Channel } from '../formats/record/types.js'
import {
  consecutiveIds, decodeUtf8, isJsonObject, JsonReadError, readJson,
  type ConnectPlan, type FrameClass, type JsonObject, type JsonValue, type SequenceSpan, type SequenceState,
  type SequenceVerdict, type SnapshotRequest, type VenueAdapter,
} from './adapter.js'
import {
  decimal, isServerShutdown, levels, MAX_STREAMS, parseSnapshot, subscribeAnswer, SUBSCRIBE_ID, symbol, timeNs,
  uint, wrapBinanceDepthSnapshot,
} from './binance-common.js'
import { Bad, str, withSpans } from './frame-fields.js'

export interface BinanceUsdmOptions {
  /** Websocket base, without the `/public` or `/market` path; default `wss://fstream.binance.com`. */
  wsBase?: string
  /** REST base; default `https://fapi.binance.com`. */
  restBase?: string
  /** `limit` of the depth snapshot request; default 1000. */
  snapshotLimit?: number
}

const CHANNELS = ['trades', 'book', 'funding', 'liquidations'] as const
const MS = 1_000_000n

/** Each channel's stream suffix, the endpoint that serves it, and the event type its frames carry. */
const STREAMS: Record<(typeof CHANNELS)[number], { suffix: string; path: 'public' | 'market'; event: string }> = {
  trades: { suffix: '@aggTrade', path: 'market', event: 'aggTrade' },
  book: { suffix: '@depth@100ms', path: 'public', event: 'depthUpdate' },
  funding: { suffix: '@markPrice', path: 'market', event: 'markPriceUpdate' },
  liquidations: { suffix: '@forceOrder', path: 'market', event: 'forceOrder' },
}

/** The server's ping interval (3 minutes) and the pong it waits for (10): a healthy connection is silent at most this long. */
const PING_SILENCE_MS = 3 * 60_000

const earlier = (a: bigint, b: bigint) => (a < b ? a : b)

function parseAggTrade(d: JsonObject): FrameClass {
  const what = 'aggTrade'
  const E = uint(d, 'E', what)
  const s = symbol(d, what)
  const a = uint(d, 'a', what)
  const id = BigInt(a.text)
  const span: SequenceSpan = { sequence: 'trades', instrument: s, first: id, last: id, snapshot: false }
  return withSpans([span], () => {
    const p = decimal(d['p'], 'aggTrade: p')
    const q = decimal(d['q'], 'aggTrade: q')
    const f = BigInt(uint(d, 'f', what).text)
    const l = BigInt(uint(d, 'l', what).text)
    if (f > l) throw new Bad('structure', `aggTrade: first trade id f ${f} is after the last, l ${l}`)
    const T = uint(d, 'T', what)
    const m = d['m']
    if (typeof m !== 'boolean') throw new Bad('structure', `aggTrade: m is ${m === undefined ? 'missing' : 'not a boolean'}`)
    const exchangeTime = earlier(timeNs(E, MS, 'aggTrade: E'), timeNs(T, MS, 'aggTrade: T'))
    return {
      kind: 'rows',
      table: 'trades',
      rows: [{ instrument: s, trade_id: a.text, side: m ? 'sell' : 'buy', price: p, size: q, exchange_time: exchangeTime }],
      exchangeTime,
      sequences: [span],
    }
  })
}

function parseDepthUpdate(d: JsonObject): FrameClass {
  const what = 'depthUpdate'
  const s = symbol(d, what)
  const U = BigInt(uint(d, 'U', what).text)
  const u = BigInt(uint(d, 'u', what).text)
  const pu = BigInt(uint(d, 'pu', what).text)
  if (U > u) throw new Bad('structure', `depthUpdate: U ${U} is after u ${u}`)
  if (pu >= U) throw new Bad('structure', `depthUpdate: pu ${pu} is not before U ${U}`)
  const span: SequenceSpan = { sequence: 'book', instrument: s, first: U, last: u, snapshot: false, previous: pu }
  return withSpans([span], () => {
    const exchangeTime = earlier(timeNs(uint(d, 'E', what), MS, 'depthUpdate: E'), timeNs(uint(d, 'T', what), MS, 'depthUpdate: T'))
    const rows: Extract<FrameClass, { kind: 'rows' }>['rows'] = []
    levels(d, 'b', what, 'bid', s, exchangeTime, rows)
    levels(d, 'a', what, 'ask', s, exchangeTime, rows)
    return { kind: 'rows', table: 'book_deltas', rows, exchangeTime, sequences: [span] }
  })
}

function parseMarkPrice(d: JsonObject): FrameClass {
  const what = 'markPriceUpdate'
  symbol(d, what)
  for (const k of ['p', 'i', 'P']) decimal(d[k], `${what}: ${k}`)
  // A delivery (quarterly) contract has no funding: its rate is written empty (and its next funding time 0).
  if (d['r'] !== '') decimal(d['r'], `${what}: r`)
  uint(d, 'T', what)
  return { kind: 'data', exchangeTime: timeNs(uint(d, 'E', what), MS, `${what}: E`), sequences: [] }
}

function parseForceOrder(d: JsonObject): FrameClass {
  const what = 'forceOrder'
  const E = timeNs(uint(d, 'E', what), MS, `${what}: E`)
  const o = d['o']
  if (!isJsonObject(o)) throw new Bad('structure', `${what}: o is ${o === undefined ? 'missing' : 'not an object'}`)
  symbol(o, `${what}: o`)
  const side = str(o, 'S', `${what}: o`)
  if (side !== 'BUY' && side !== 'SELL') throw new Bad('structure', `${what}: o.S is ${JSON.stringify(side)}, not BUY or SELL`)
  for (const k of ['q', 'p', 'ap', 'l', 'z']) decimal(o[k], `${what}: o.${k}`)
  return { kind: 'data', exchangeTime: earlier(E, timeNs(uint(o, 'T', `${what}: o`), MS, `${what}: o.T`)), sequences: [] }
}

function classifyUsdm(channel: (typeof CHANNELS)[number], payload: Uint8Array, binary: boolean): FrameClass {
  if (binary) return { kind: 'unrepresentable', code: 'not-json', reason: 'binary frame; Binance futures streams send JSON text frames' }
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
    if ('rest' in v) {
      if (channel !== 'book') throw new Bad('structure', `a REST snapshot frame on channel ${channel}`)
      return parseSnapshot(v)
    }
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
    const expected = STREAMS[channel]
    if (e !== expected.event) throw new Bad('structure', `event type ${JSON.stringify(e)} on channel ${channel}`)
    const out = channel === 'trades' ? parseAggTrade(d) : channel === 'book' ? parseDepthUpdate(d) : channel === 'funding' ? parseMarkPrice(d) : parseForceOrder(d)
    if (stream !== null) {
      const s = channel === 'liquidations' ? (d['o'] as JsonObject)['s'] : d['s']
      const name = `${String(s).toLowerCase()}${expected.suffix}`
      if (stream !== name) throw new Bad('structure', `combined stream ${JSON.stringify(stream)} does not name ${name}`)
    }
    return out
  } catch (err) {
    if (err instanceof Bad) return { kind: 'unrepresentable', code: err.code, reason: err.message, ...(err.sequences ? { sequences: err.sequences } : {}) }
    throw err
  }
}

/**
 * USD-M depth: an update continues when its `pu` is the previous update's `u`; it is stale when `u` is
 * below the last id accounted for; after a snapshot with `lastUpdateId` L the first update applied has
 * `U <= L <= u` (or `pu == L`, which says the same of the update before it). Anything else is a gap, after
 * the last id accounted for and before the update's `U`. A snapshot older than the connection's first
 * update (`L < U` of it) is behind the stream: the recorder fetches another.
 */
export function usdmBookSequence(prev: SequenceState | undefined, span: SequenceSpan): SequenceVerdict {
  if (span.snapshot) {
    const L = span.last
    if (prev === undefined) return { verdict: 'snapshot', state: { last: L, streamFirst: null } }
    if (prev.streamFirst !== null && L < prev.streamFirst) return { verdict: 'snapshot-behind', state: prev }
    return { verdict: 'snapshot', state: { last: L > prev.last ? L : prev.last, streamFirst: prev.streamFirst } }
  }
  const U = span.first
  const u = span.last
  if (prev === undefined) return { verdict: 'start', state: { last: u, streamFirst: U } }
  if (u < prev.last) return { verdict: 'stale', state: prev }
  const state: SequenceState = { last: u, streamFirst: prev.streamFirst ?? U }
  if (span.previous === prev.last || (U <= prev.last && prev.last <= u)) return { verdict: 'next', state }
  return { verdict: 'gap', afterId: prev.last.toString(), beforeId: U.toString(), state }
}

/** A Binance USD-M futures adapter. */
export function createBinanceUsdmAdapter(opts: BinanceUsdmOptions = {}): VenueAdapter {
  const wsBase = opts.wsBase ?? 'wss://fstream.binance.com'
  const restBase = opts.restBase ?? 'https://fapi.binance.com'
  const limit = opts.snapshotLimit ?? 1000
  const served = (channel: Channel): (typeof CHANNELS)[number] => {
    if (!(CHANNELS as readonly Channel[]).includes(channel)) throw new RangeError(`binance usd-m serves no channel ${channel}`)
    return channel as (typeof CHANNELS)[number]
  }
  return {
    name: 'binance-usdm',
    channels: CHANNELS,
    about: {
      summary: 'Binance USD-M futures (perpetuals and quarterlies)',
      channels: {
        trades: { streams: '<symbol>@aggTrade on /market', sequence: 'aggregate id a: +1 per aggregate of a symbol (insurance-fund and ADL fills are left out of f..l by design)' },
        book: { streams: '<symbol>@depth@100ms on /public, and GET /fapi/v1/depth after each subscription and gap', sequence: 'pu = previous u; the snapshot joined by U <= lastUpdateId <= u' },
        funding: { streams: '<symbol>@markPrice on /market, kept raw', sequence: 'none stated by the venue' },
        liquidations: { streams: '<symbol>@forceOrder on /market, kept raw', sequence: 'none: a sample, at most one order per symbol a second' },
      },
      checksum: null,
      endpoints: [`${wsBase}/public/stream`, `${wsBase}/market/stream`, `${restBase}/fapi/v1/depth`],
    },
    classify(channel, payload, binary) {
      return classifyUsdm(served(channel), payload, binary)
    },
    sequence(prev, span) {
      return span.sequence === 'trades' ? consecutiveIds(prev, span) : usdmBookSequence(prev, span)
    },
    connect(channel, instruments): ConnectPlan {
      const stream = STREAMS[served(channel)]
      if (instruments.length === 0) throw new RangeError('no instruments to subscribe')
      if (instruments.length > MAX_STREAMS) throw new RangeError(`binance allows ${MAX_STREAMS} streams per connection`)
      return {
        url: `${wsBase}/${stream.path}/stream`,
        send: [JSON.stringify({ method: 'SUBSCRIBE', params: instruments.map((s) => s.toLowerCase() + stream.suffix), id: SUBSCRIBE_ID })],
        answers: subscribeAnswer,
        silenceMs: PING_SILENCE_MS,
      }
    },
    snapshotRequest(channel, instrument): SnapshotRequest | null {
      if (served(channel) !== 'book') return null
      return { url: `${restBase}/fapi/v1/depth?symbol=${encodeURIComponent(instrument)}&limit=${limit}` }
    },
    wrapSnapshot(channel, instrument, body) {
      if (served(channel) !== 'book') throw new RangeError('only the book channel records REST snapshots')
      return wrapBinanceDepthSnapshot(instrument, body)
    },
  }
}

/** The Binance USD-M futures adapter with default options. */
export const binanceUsdm: VenueAdapter = createBinanceUsdmAdapter()

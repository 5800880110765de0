/**
 * What Binance's venues (spot, USD-M futures) write alike: integers, decimals and times as their documents
 * state them, the REST depth snapshot as the recorder journals it, request replies and the `serverShutdown`
 * notice. The parsing helpers throw {@link Bad}, which an adapter's classify turns into an unrepresentable
 * frame.
 */
import { isDecimal38Text } from '../formats/record/decimal.js'
import {
  decodeUtf8, isJsonObject, JsonNumber, readJson,
  type FrameClass, type JsonObject, type JsonValue, type ParsedRow,
} from './adapter.js'
import { Bad, INT64_MAX, str, UINT_RE } from './frame-fields.js'

/** Whether canonical decimal integer text `a` (no sign, no leading zero) is below `b`'s value. */
export function digitsBelow(a: string, b: string): boolean {
  return a.length !== b.length ? a.length < b.length : a < b
}

/** The unit of E and T: nanoseconds per unit, and the most units that fit int64 nanoseconds, as text. */
export interface TimeUnit { readonly mult: bigint; readonly maxUnitsText: string }
export const timeUnit = (mult: bigint): TimeUnit => ({ mult, maxUnitsText: (INT64_MAX / mult).toString() })
/** Binance allows 1024 streams per connection. */
export const MAX_STREAMS = 1024

export function uint(o: JsonObject, key: string, what: string): JsonNumber {
  const v = o[key]
  if (!(v instanceof JsonNumber)) throw new Bad('structure', `${what}: ${key} is ${v === undefined ? 'missing' : 'not a number'}`)
  if (!UINT_RE.test(v.text)) throw new Bad('structure', `${what}: ${key} is not a non-negative integer (${v.text})`)
  return v
}

export function decimal(v: JsonValue | undefined, what: string): string {
  if (typeof v !== 'string') throw new Bad('structure', `${what} is ${v === undefined ? 'missing' : 'not a string'}`)
  if (!isDecimal38Text(v)) throw new Bad('decimal', `${what} ${JSON.stringify(v)} is not a decimal DECIMAL(38, 18) holds exactly`)
  return v
}

export function levels(o: JsonObject, key: string, what: string, side: 'bid' | 'ask', instrument: string, exchangeTime: bigint | null, rows: ParsedRow[]): void {
  const v = o[key]
  if (!Array.isArray(v)) throw new Bad('structure', `${what}: ${key} is ${v === undefined ? 'missing' : 'not an array'}`)
  for (let i = 0; i < v.length; i++) {
    const level = v[i]
    if (!Array.isArray(level) || level.length !== 2) throw new Bad('structure', `${what}: ${key}[${i}] is not a [price, quantity] pair`)
    const price = decimal(level[0], `${what}: ${key}[${i}] price`)
    const size = decimal(level[1], `${what}: ${key}[${i}] quantity`)
    rows.push({ instrument, trade_id: null, side, price, size, exchange_time: exchangeTime })
  }
}

/** Exact text of a (validated) event-time integer in nanoseconds. */
export function timeNs(n: JsonNumber, mult: bigint, what: string): bigint {
  const ns = BigInt(n.text) * mult
  if (ns > INT64_MAX) throw new Bad('time', `${what}: time ${n.text} does not fit int64 nanoseconds`)
  return ns
}

export function symbol(o: JsonObject, what: string): string {
  const s = str(o, 's', what)
  if (s === '') throw new Bad('structure', `${what}: s is empty`)
  return s
}

/** The frame text recording a REST depth snapshot of `symbol`: `body` is embedded verbatim. */
export function wrapBinanceDepthSnapshot(symbol: string, body: string): string {
  return '{"rest":"depth","symbol":' + JSON.stringify(symbol) + ',"response":' + body + '}'
}

export function parseSnapshot(w: JsonObject): FrameClass {
  const what = 'depth snapshot'
  for (const k of Object.keys(w)) {
    if (k !== 'rest' && k !== 'symbol' && k !== 'response') throw new Bad('structure', `${what}: unknown wrapper key ${JSON.stringify(k)}`)
  }
  if (w['rest'] !== 'depth') throw new Bad('structure', `${what}: rest is not "depth"`)
  const sym = w['symbol']
  if (typeof sym !== 'string' || sym === '') throw new Bad('structure', `${what}: symbol is missing or not a non-empty string`)
  const r = w['response']
  if (!isJsonObject(r)) throw new Bad('structure', `${what}: response is not an object`)
  const L = BigInt(uint(r, 'lastUpdateId', what).text)
  const rows: ParsedRow[] = []
  levels(r, 'bids', what, 'bid', sym, null, rows)
  levels(r, 'asks', what, 'ask', sym, null, rows)
  return { kind: 'rows', table: 'book_snapshots', rows, exchangeTime: null, sequences: [{ sequence: 'book', instrument: sym, first: L, last: L, snapshot: true }] }
}

/**
 * Binance's `serverShutdown` event ("sent when the server is about to shut down, resulting in
 * disconnection"). Its one documented shape is the WebSocket API's, `{"event":{"e":"serverShutdown","E":..}}`;
 * the streams' page names the event without showing it, so it is also taken bare and in a combined-stream
 * wrapper.
 */
export function isServerShutdown(v: JsonObject): boolean {
  for (const o of [v, v['event'], v['data']]) if (o !== undefined && isJsonObject(o) && o['e'] === 'serverShutdown') return true
  return false
}

export const SUBSCRIBE_ID = 1

/** Binance answers a request with `{"result":null,"id":N}`, or `{"error":{...},"id":N}` when it refuses it. */
export function subscribeAnswer(payload: Uint8Array): 'subscribed' | 'refused' | null {
  // Replies are short; a market-data frame is not parsed here.
  if (payload.byteLength > 1024) return null
  const text = decodeUtf8(payload)
  if (text === null || !text.includes('"id"')) return null
  let v: JsonValue
  try {
    v = readJson(text)
  } catch {
    return null
  }
  if (!isJsonObject(v) || !(v['id'] instanceof JsonNumber) || v['id'].text !== String(SUBSCRIBE_ID)) return null
  if ('error' in v) return 'refused'
  return 'result' in v && v['result'] === null ? 'subscribed' : null
}

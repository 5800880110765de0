/**
 * Coinbase Advanced Trade, public market-data websocket (`wss://advanced-trade-ws.coinbase.com`): channels
 * `trades` (Coinbase channel `market_trades`) and `book` (Coinbase channel `level2`, whose messages arrive as
 * channel `l2_data`), one connection each; every connection also subscribes `heartbeats`. Coinbase spot has
 * no funding and no liquidations.
 *
 * Assumptions, from Coinbase's Advanced Trade documentation (section names in brackets; docs/venues/coinbase.md
 * gives each with its reading, what the recorder can and cannot detect here, and the open questions). Check
 * them against the current documentation when Coinbase changes its API:
 *
 * - Endpoint: market data at `wss://advanced-trade-ws.coinbase.com` [WebSocket Overview]. The public channels
 *   used here (`market_trades`, `level2`, `heartbeats`) need no authentication [WebSocket Channels, channel
 *   table "Requires Authentication: No"; WebSocket Authentication › Sending Messages without API Keys]: no
 *   JWT is sent (the recorder holds no credentials), although Coinbase recommends authenticating "for the
 *   most reliable connection".
 * - Subscribe: `{"type":"subscribe","product_ids":[..],"channel":..}`, one channel per message; a connection
 *   that has sent no subscribe within 5 s is closed [WebSockets guide › Basic Connection Setup; WebSocket
 *   Channels, each channel's Request]. The plan sends, at open, the data channel's subscribe and then
 *   `{"type":"subscribe","channel":"heartbeats"}` (no products) [WebSocket Channels › Heartbeats Channel].
 *   Unsubscribe is the same message with `"type":"unsubscribe"` [WebSocket Authentication › Unsubscribing].
 * - Heartbeats: "Most channels close within 60-90 seconds if no updates are sent"; `heartbeats` sends a
 *   message every second and keeps every subscription of the connection open [WebSocket Channels, warning
 *   and Heartbeats Channel]. No client ping is documented or sent.
 * - Envelope of every channel message: `{"channel", "client_id", "timestamp", "sequence_num", "events":[..]}`
 *   [WebSocket Channels, every example]. `channel` a string, `sequence_num` a non-negative JSON integer
 *   (kept exactly, also beyond 2^53), `timestamp` a string (not recorded), `events` an array of objects.
 *   `client_id` is not required: the AsyncAPI description says the production feed sends none. Other keys
 *   are ignored (they stay in the raw file).
 * - `sequence_num` counts the messages of one connection across all its channels and products, +1 a message
 *   (AsyncAPI: "Per-connection message sequence number"; the prose [WebSocket Authentication › Sequence
 *   Numbers] says "for each product", a sentence carried over from Coinbase Exchange, which its own examples
 *   contradict: every example is numbered 0 whatever its product). A jump means a message was dropped; a
 *   lower number "can be ignored" (same section). It is the only gap detector here. Each message is one span
 *   {@link COINBASE_CONNECTION_WIDE} (`*`) of sequence `book` on the book connection and `trades` on the trades
 *   connection, judged by the +1 rule ({@link coinbaseSequence}). A gap cannot be attributed to a product:
 *   it says that some message of the connection — a book update or trade of ANY subscribed product, a
 *   heartbeat, a subscriptions reply — was not received, between `after_id` and `before_id`, which are
 *   sequence numbers, not trade or update ids.
 * - For that count, `heartbeats` and `subscriptions` messages carry a span too, so they are `data` frames (no
 *   rows, no time): the interface lets no `control` frame state a sequence, and without their spans every
 *   heartbeat would show as a gap.
 * - `heartbeat_counter` [WebSocket Channels › Heartbeats Channel] "verifies that no messages were missed": it
 *   is read (a JSON integer, as the AsyncAPI says the feed sends it, or a string of digits, as the prose
 *   example writes it) but states no span: a lost heartbeat is already a `sequence_num` gap, and the counter's
 *   origin (3049 on a message numbered 0 in the example) shows it is not the connection's own count.
 *   `current_time` is not read (its example is Go's time text, not RFC 3339).
 * - Trades [WebSocket Channels › Market Trades Channel]: `market_trades` messages carry events `{"type":
 *   "snapshot"|"update", "trades":[{trade_id, product_id, price, size, side, time}]}`; updates gather the last
 *   250 ms. One `trades` row per trade: instrument = product_id, trade_id, price and size as sent (strings).
 *   `side` is `BUY` or `SELL` and is written as the venue wrote it: the documentation says it "refers to the
 *   makers side", so on this venue the row's side is the MAKER's side as Coinbase states it — unlike the
 *   taker side (lower case) the other adapters write. It is not inverted: whether the statement is right is
 *   an open question (see the doc), and the upper-case word keeps such rows recognisable. Each row carries its
 *   own trade's `time` as exchange_time; the frame's is the earliest.
 * - Trade ids: strings, not documented as consecutive per product: no trade-id spans.
 * - Book [WebSocket Channels › Level2 Channel]: `l2_data` messages carry events `{"type":"snapshot"|"update",
 *   "product_id", "updates":[{side, event_time, price_level, new_quantity}]}`; `new_quantity` is the level's
 *   new size, not a delta, "0" removing the level (kept as sent). `side` `bid` → `bid`, `offer` → `ask`.
 *   Rows in the order sent; each carries its level's `event_time` ("the time of the event as recorded by our
 *   trading engine") as exchange_time, the frame the earliest. A snapshot's levels carry
 *   `1970-01-01T00:00:00Z` in the documentation's example: recorded as stated. A message's events must all be
 *   of one type (a frame has one table): snapshot → `book_snapshots`, update → `book_deltas`; a mix, or no
 *   event, is `structure`.
 * - Times: RFC 3339 UTC with `Z` and a fraction of 0 to 9 digits (more only if zeros): the examples write 0, 3
 *   and 9. Anything else is `structure`; a valid time outside int64 nanoseconds is `time`.
 * - Prices and sizes are strings; a string that is not a plain decimal DECIMAL(38, 18) holds exactly is
 *   `decimal`, a non-string `structure`.
 * - No checksum: the level2 message has none [WebSocket Channels › Level2 Channel]. No REST snapshot: the
 *   channel sends its own snapshot on subscription.
 * - Replies: `subscriptions` messages answer subscribe and unsubscribe, `{"channel":"subscriptions",..,
 *   "events":[{"subscriptions":{"<channel>":[product ids],..}}]}` (the prose shows no example; the object maps
 *   each subscribed channel to its products). The connection is subscribed at the first one that names the
 *   data channel (`level2` or `market_trades`). Errors are `{"type":"error","message":..}` (not shown in the
 *   Advanced Trade documentation, which says only that every message has a `type`; the form is Coinbase
 *   Exchange's): `control`, and before the subscription they refuse it.
 * - Resync of one product's book: unsubscribe and subscribe `level2` for it; a subscription starts with a
 *   snapshot [WebSocket Channels › Level2 Channel, example]. (The recorder resyncs after checksum mismatches
 *   only, which this venue has none of.)
 * - Anything else — not JSON, another channel, a message off these structures, a trade on the book connection
 *   or the reverse — is `unrepresentable`, with its span when its `sequence_num` parsed.
 */
import type { Channel } from '../formats/record/types.js'
import { isDecimal38Text } from '../formats/record/decimal.js'
import {
  consecutiveIds, decodeUtf8, isJsonObject, JsonNumber, JsonReadError, readJson,
  type ConnectPlan, type FrameClass, type JsonObject, type JsonValue, type ParsedRow,
  type SequenceSpan, type SequenceState, type SequenceVerdict, type SnapshotRequest, type VenueAdapter,
} from './adapter.js'
import { Bad, clip, describe, eachPlainElement, nonEmpty, str, UINT_RE, utcTimeNs } from './frame-fields.js'

export interface CoinbaseOptions {
  /** Websocket URL; default `wss://advanced-trade-ws.coinbase.com`. */
  wsBase?: string
}

const DEFAULT_WS = 'wss://advanced-trade-ws.coinbase.com'

/**
 * The instrument of every span: `sequence_num` numbers the whole connection, so a gap belongs to no one
 * product. `*` cannot be a Coinbase product id (they are `BASE-QUOTE`), and reads as "every product".
 */
export const COINBASE_CONNECTION_WIDE = '*'

/** Coinbase's channel to subscribe for each of ours, and the `channel` its messages carry. */
const COINBASE_CHANNELS = {
  trades: { subscribe: 'market_trades', message: 'market_trades' },
  book: { subscribe: 'level2', message: 'l2_data' },
} as const

type Served = keyof typeof COINBASE_CHANNELS

const HEARTBEATS = 'heartbeats'
const SUBSCRIPTIONS = 'subscriptions'
/** Replies are read by `answers` up to this size (a subscriptions reply lists every product subscribed). */
const MAX_ANSWER_BYTES = 256 * 1024
function decimal(o: JsonObject, key: string, what: string): string {
  const v = str(o, key, what)
  if (!isDecimal38Text(v)) throw new Bad('decimal', `${what}: ${key} ${JSON.stringify(clip(v))} is not a decimal DECIMAL(38, 18) holds exactly`)
  return v
}

function objects(v: JsonValue | undefined, what: string): JsonObject[] {
  if (!Array.isArray(v)) throw new Bad('structure', `${what} is ${describe(v, 'an array')}`)
  return v.map((item, i) => {
    if (!isJsonObject(item)) throw new Bad('structure', `${what}[${i}] is not an object`)
    return item
  })
}

function time(o: JsonObject, key: string, what: string): bigint {
  const t = utcTimeNs(str(o, key, what))
  if (typeof t !== 'bigint') throw new Bad(t.code, `${what}: ${key} ${t.reason}`)
  return t
}

const earliest = (times: readonly bigint[]): bigint | null => times.reduce<bigint | null>((a, t) => (a === null || t < a ? t : a), null)

// ---------------------------------------------------------------------------------------------------
// Messages.

function parseTrades(events: JsonObject[], sequences: SequenceSpan[]): FrameClass {
  const rows: ParsedRow[] = []
  events.forEach((e, i) => {
    const what = `market_trades: events[${i}]`
    const type = str(e, 'type', what)
    if (type !== 'snapshot' && type !== 'update') throw new Bad('structure', `${what}: type ${JSON.stringify(clip(type))} is neither "snapshot" nor "update"`)
    objects(e['trades'], `${what}: trades`).forEach((d, j) => {
      const at = `${what}: trades[${j}]`
      const tradeId = nonEmpty(d, 'trade_id', at)
      const instrument = nonEmpty(d, 'product_id', at)
      const price = decimal(d, 'price', at)
      const size = decimal(d, 'size', at)
      const side = str(d, 'side', at)
      if (side !== 'BUY' && side !== 'SELL') throw new Bad('structure', `${at}: side ${JSON.stringify(clip(side))} is neither "BUY" nor "SELL"`)
      rows.push({ instrument, trade_id: tradeId, side, price, size, exchange_time: time(d, 'time', at) })
    })
  })
  const exchangeTime = earliest(rows.map((r) => r.exchange_time!))
  return { kind: 'rows', table: 'trades', rows, exchangeTime, sequences }
}

function parseLevel2(events: JsonObject[], sequences: SequenceSpan[]): FrameClass {
  if (events.length === 0) throw new Bad('structure', 'l2_data: events is empty (no type to choose the table by)')
  let type: 'snapshot' | 'update' | undefined
  const rows: ParsedRow[] = []
  events.forEach((e, i) => {
    const what = `l2_data: events[${i}]`
    const t = str(e, 'type', what)
    if (t !== 'snapshot' && t !== 'update') throw new Bad('structure', `${what}: type ${JSON.stringify(clip(t))} is neither "snapshot" nor "update"`)
    if (type !== undefined && t !== type) throw new Bad('structure', `${what}: a ${t} in a message of ${type}s (one frame, one table)`)
    type = t
    const instrument = nonEmpty(e, 'product_id', what)
    objects(e['updates'], `${what}: updates`).forEach((u, j) => {
      const at = `${what}: updates[${j}]`
      const s = str(u, 'side', at)
      if (s !== 'bid' && s !== 'offer') throw new Bad('structure', `${at}: side ${JSON.stringify(clip(s))} is neither "bid" nor "offer"`)
      const price = decimal(u, 'price_level', at)
      const size = decimal(u, 'new_quantity', at)
      rows.push({ instrument, trade_id: null, side: s === 'bid' ? 'bid' : 'ask', price, size, exchange_time: time(u, 'event_time', at) })
    })
  })
  const exchangeTime = earliest(rows.map((r) => r.exchange_time!))
  return { kind: 'rows', table: type === 'snapshot' ? 'book_snapshots' : 'book_deltas', rows, exchangeTime, sequences }
}

/** A heartbeat's counter: a JSON integer (the feed, per the AsyncAPI) or a string of digits (the prose example). */
function heartbeatCounter(e: JsonObject, what: string): string {
  const v = e['heartbeat_counter']
  if (v instanceof JsonNumber && UINT_RE.test(v.text)) return v.text
  if (typeof v === 'string' && UINT_RE.test(v)) return v
  throw new Bad('structure', `${what}: heartbeat_counter is ${v === undefined ? 'missing' : 'not a non-negative integer or a string of one'}`)
}

function parseHeartbeats(events: JsonObject[]): void {
  if (events.length === 0) throw new Bad('structure', 'heartbeats: events is empty')
  events.forEach((e, i) => heartbeatCounter(e, `heartbeats: events[${i}]`))
}

function parseSubscriptions(events: JsonObject[]): void {
  if (events.length === 0) throw new Bad('structure', 'subscriptions: events is empty')
  events.forEach((e, i) => {
    if (!isJsonObject(e['subscriptions'])) throw new Bad('structure', `subscriptions: events[${i}]: subscriptions is ${describe(e['subscriptions'], 'an object')}`)
  })
}

/** `{"type":"error",..}`: the note carries its message. */
function errorNote(v: JsonObject): string {
  const parts = ['message', 'reason'].map((k) => v[k]).filter((x): x is string => typeof x === 'string' && x !== '')
  return clip(`error${parts.length > 0 ? ': ' + parts.join(': ') : ''}`)
}

/** A market_trades message as Coinbase writes it, up to its first trade: no whitespace, the documented keys in order, one event. */
const PLAIN_TRADES_HEAD_RE = /^\{"channel":"market_trades","client_id":"[^"\\\x00-\x1f]*","timestamp":"[^"\\\x00-\x1f]*","sequence_num":(0|[1-9][0-9]*),"events":\[\{"type":"(?:snapshot|update)","trades":\[/
/** One trade in the documented order. */
const PLAIN_TRADE_RE = /\{"trade_id":"([^"\\\x00-\x1f]+)","product_id":"([^"\\\x00-\x1f]+)","price":"([^"\\\x00-\x1f]*)","size":"([^"\\\x00-\x1f]*)","side":"(BUY|SELL)","time":"([^"\\\x00-\x1f]*)"\}/y

/**
 * The class of a plain market_trades message ({@link PLAIN_TRADES_HEAD_RE}, {@link PLAIN_TRADE_RE}) without
 * building its JSON tree, or null to take the general path. Gives exactly what the general path gives for
 * such a payload; anything it would refuse (a decimal DECIMAL(38, 18) cannot hold, a time it does not take)
 * goes the general path, which says why.
 */
function plainTrades(text: string): FrameClass | null {
  const head = PLAIN_TRADES_HEAD_RE.exec(text)
  if (head === null) return null
  const rows: ParsedRow[] = []
  let exchangeTime: bigint | null = null
  const end = eachPlainElement(text, head[0].length, PLAIN_TRADE_RE, (m) => {
    const price = m[3]!
    const size = m[4]!
    if (!isDecimal38Text(price) || !isDecimal38Text(size)) return false
    const t = utcTimeNs(m[6]!)
    if (typeof t !== 'bigint') return false
    if (exchangeTime === null || t < exchangeTime) exchangeTime = t
    rows.push({ instrument: m[2]!, trade_id: m[1]!, side: m[5]!, price, size, exchange_time: t })
    return true
  })
  if (end === -1 || end + 3 !== text.length || !text.endsWith('}]}')) return null
  const seq = BigInt(head[1]!)
  return { kind: 'rows', table: 'trades', rows, exchangeTime, sequences: [{ sequence: 'trades', instrument: COINBASE_CONNECTION_WIDE, first: seq, last: seq, snapshot: false }] }
}

function classifyCoinbase(channel: Served, payload: Uint8Array, binary: boolean): FrameClass {
  if (binary) return { kind: 'unrepresentable', code: 'not-json', reason: 'binary frame; Coinbase sends JSON text frames' }
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
    if (v['type'] === 'error') return { kind: 'control', note: errorNote(v) }
    const ch = v['channel']
    if (typeof ch !== 'string') throw new Bad('structure', `channel is ${describe(ch, 'a string')}, and the message is no error`)
    // The sequence number first: a message whose number parsed counts for gaps even when the rest does not.
    const n = v['sequence_num']
    if (!(n instanceof JsonNumber) || !UINT_RE.test(n.text)) throw new Bad('structure', `${clip(ch)}: sequence_num is ${n === undefined ? 'missing' : 'not a non-negative integer'}`)
    const seq = BigInt(n.text)
    const spans: SequenceSpan[] = [{ sequence: channel, instrument: COINBASE_CONNECTION_WIDE, first: seq, last: seq, snapshot: false }]
    try {
      str(v, 'timestamp', clip(ch))
      const events = objects(v['events'], `${clip(ch)}: events`)
      switch (ch) {
        case HEARTBEATS:
          parseHeartbeats(events)
          return { kind: 'data', exchangeTime: null, sequences: spans }
        case SUBSCRIPTIONS:
          parseSubscriptions(events)
          return { kind: 'data', exchangeTime: null, sequences: spans }
        case COINBASE_CHANNELS.trades.message:
          if (channel !== 'trades') throw new Bad('structure', `a market_trades message on channel ${channel}`)
          return parseTrades(events, spans)
        case COINBASE_CHANNELS.book.message:
          if (channel !== 'book') throw new Bad('structure', `an l2_data message on channel ${channel}`)
          return parseLevel2(events, spans)
        default:
          throw new Bad('structure', `a message of Coinbase channel ${JSON.stringify(clip(ch))} on channel ${channel}`)
      }
    } catch (err) {
      if (err instanceof Bad) err.sequences = spans
      throw err
    }
  } catch (err) {
    if (err instanceof Bad) return { kind: 'unrepresentable', code: err.code, reason: err.message, ...(err.sequences ? { sequences: err.sequences } : {}) }
    throw err
  }
}

// ---------------------------------------------------------------------------------------------------
// Sequences.

/**
 * Coinbase's rule for `sequence_num`, one sequence per connection ({@link COINBASE_CONNECTION_WIDE}): each
 * message's number is the previous + 1; one at or below the last is stale ("can be ignored"); one above the
 * next is a gap after the last number and before it. The same rule on either connection (`trades`, `book`).
 */
export function coinbaseSequence(prev: SequenceState | undefined, span: SequenceSpan): SequenceVerdict {
  return consecutiveIds(prev, span)
}

// ---------------------------------------------------------------------------------------------------
// Connecting.

function request(type: 'subscribe' | 'unsubscribe', channel: string, productIds?: readonly string[]): string {
  return JSON.stringify(productIds === undefined ? { type, channel } : { type, product_ids: productIds, channel })
}

/**
 * Whether a frame answers the subscription: a `subscriptions` message whose `subscriptions` object names the
 * data channel (subscribed), an error (refused), or anything else (null).
 */
function subscribeAnswer(payload: Uint8Array, dataChannel: string): 'subscribed' | 'refused' | null {
  if (payload.byteLength > MAX_ANSWER_BYTES) return null
  const text = decodeUtf8(payload)
  if (text === null || !(text.includes('"subscriptions"') || text.includes('"error"'))) return null
  let v: JsonValue
  try {
    v = readJson(text)
  } catch {
    return null
  }
  if (!isJsonObject(v)) return null
  if (v['type'] === 'error') return 'refused'
  if (v['channel'] !== SUBSCRIPTIONS || !Array.isArray(v['events'])) return null
  for (const e of v['events']) {
    if (!isJsonObject(e)) continue
    const subs = e['subscriptions']
    if (isJsonObject(subs) && Array.isArray(subs[dataChannel])) return 'subscribed'
  }
  return null
}

/** A Coinbase Advanced Trade public market-data adapter. */
export function createCoinbaseAdapter(opts: CoinbaseOptions = {}): VenueAdapter {
  const wsBase = opts.wsBase ?? DEFAULT_WS
  const check = (channel: Channel): Served => {
    if (channel !== 'trades' && channel !== 'book') throw new RangeError(`coinbase spot serves no channel ${String(channel)}`)
    return channel
  }
  const sequenceText = 'sequence_num +1 per message of the connection, every channel and product: a gap is connection-wide (instrument "*"), not attributable to a product'
  return {
    name: 'coinbase',
    channels: ['trades', 'book'] as const,
    connectionWide: COINBASE_CONNECTION_WIDE,
    tradeSequence: false,
    about: {
      summary: 'Coinbase Advanced Trade (public market-data websocket): spot',
      channels: {
        trades: { streams: 'market_trades (a snapshot of recent trades, then updates every 250 ms), and heartbeats', sequence: `${sequenceText}; trade ids not checked (not documented as consecutive); side is the maker's, as the venue writes it` },
        book: { streams: 'level2 (l2_data: a snapshot on subscription, then updates), and heartbeats', sequence: sequenceText },
      },
      checksum: null,
      endpoints: [wsBase],
    },
    classify(channel, payload, binary) {
      return classifyCoinbase(check(channel), payload, binary)
    },
    sequence: coinbaseSequence,
    connect(channel, instruments): ConnectPlan {
      const served = check(channel)
      if (instruments.length === 0) throw new RangeError('no instruments to subscribe')
      for (const i of instruments) if (typeof i !== 'string' || i === '') throw new RangeError('an instrument is empty')
      const data = COINBASE_CHANNELS[served].subscribe
      const plan: ConnectPlan = {
        url: wsBase,
        // Both at open: the 5 s subscribe deadline; one channel per message.
        send: [request('subscribe', data, [...instruments]), request('subscribe', HEARTBEATS)],
        answers: (payload) => subscribeAnswer(payload, data),
      }
      if (served === 'book') {
        // A level2 subscription starts with the product's snapshot.
        plan.resync = (instrument) => [request('unsubscribe', data, [instrument]), request('subscribe', data, [instrument])]
      }
      return plan
    },
    snapshotRequest(channel): SnapshotRequest | null {
      check(channel)
      // The level2 channel sends its own snapshot.
      return null
    },
    wrapSnapshot(channel) {
      check(channel)
      throw new RangeError('coinbase sends its book snapshots over the websocket: no REST snapshot to record')
    },
  }
}

/** The Coinbase Advanced Trade adapter at Coinbase's public market-data endpoint. */
export const coinbase: VenueAdapter = createCoinbaseAdapter()

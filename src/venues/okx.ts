/**
 * OKX v5 public websocket: channels `trades` (OKX `trades`), `book` (`books`, 400 levels), `funding`
 * (`funding-rate`) and `liquidations` (`liquidation-orders`), each on its own connection to /ws/v5/public.
 *
 * Assumptions, from OKX's API v5 documentation (section names in brackets; docs/venues/okx.md gives each
 * with its reading). Check them against the current documentation when OKX changes its API:
 *
 * - Endpoint: `wss://ws.okx.com:8443/ws/v5/public` [Overview, Production Trading Services]; all four
 *   channels name /ws/v5/public as their URL path [each channel's "URL Path"].
 * - Subscribe with `{"id":"1","op":"subscribe","args":[{"channel":"books","instId":"BTC-USDT"},...]}`; the
 *   liquidation-orders channel takes an instrument type instead, `{"channel":"liquidation-orders",
 *   "instType":"SWAP"}`, so on the `liquidations` channel the "instruments" are instrument types (SWAP,
 *   FUTURES, MARGIN, OPTION) [WebSocket, Subscribe; Liquidation orders channel]. A request is at most 64 KB
 *   ("the total length of multiple channels cannot exceed 64 KB").
 * - Replies: `{"id":"1","event":"subscribe","arg":{...},"connId":".."}` per subscribed argument,
 *   `{"event":"unsubscribe",...}`, `{"id":"1","event":"error","code":"60012","msg":"..","connId":".."}`
 *   [WebSocket, Subscribe / Unsubscribe]. They are control frames. A subscription counts as acknowledged at
 *   the first `subscribe` event naming one of its arguments; any `error` event before it refuses it.
 * - `{"event":"notice","code":"64008",...}` is sent 60 s before the service is upgraded and the connection
 *   closed [WebSocket, Notification]: a control frame with `closing`. The notice type is documented for that
 *   scenario only, so every notice is taken as one (a needless successor loses nothing; a missed close
 *   opens a reconnect window). `channel-conn-count` / `channel-conn-count-error` [WebSocket, Connection count
 *   limit] are control frames too (documented for private channels; harmless here).
 * - Keep-alive: the venue closes a connection that has had no data for 30 s, and wants the text `ping`
 *   after N < 30 s without a message, answered by the text `pong` [WebSocket, Connect]. The plan sends
 *   `ping` every 20 s whatever the traffic (the interface has fixed intervals only): no silence reaches
 *   20 s without a ping, which leaves 10 s for the `pong`. `pong` is a control frame.
 * - Every push is `{"arg":{"channel":..,"instId"|"instType":..},"data":[...]}` (`action` too on books);
 *   its `arg.channel` must be the connection's channel. Other keys are ignored (they stay in the raw file).
 *   Anything else — not JSON, an unknown event, a push off the documented structure — is unrepresentable:
 *   an hour is rather marked partial than data silently dropped.
 * - Times are strings of milliseconds (`"ts":"1597026383085"`); exchange_time is the earliest stated `ts`
 *   of the frame (books: order book generation time; trades: filled time; funding-rate: data return
 *   time; liquidation-orders: each detail's liquidation time). Every row carries its frame's exchange_time.
 * - Trades [WS / Trades channel]: data items `{instId, tradeId, px, sz, side, ts, count, source, seqId}`;
 *   one message per taker order, fill price and source, `count` fills aggregated, `tradeId` the last of
 *   them, `side` the taker's (`buy` | `sell`), written as the venue's word. A row per data item:
 *   trade_id = tradeId, price = px, size = sz (the aggregated size, as sent). `instId` must name arg's.
 * - Trade sequence: none. The documentation does not say that trade ids are consecutive per instrument
 *   (only that an aggregation of `count` fills ending at `tradeId` covers the ids below it), and the
 *   trades channel's `seqId` "may be the same for different trade updates": no trade gap is detected.
 * - Books [WS / Order book channel]: `action` `snapshot` (book_snapshots) or `update` (book_deltas); data
 *   items `{asks, bids, ts, checksum, prevSeqId, seqId}`, each level exactly four strings `[px, sz, "0"
 *   (deprecated), number of orders]`. Rows: bids then asks, in the order sent; a size of "0" removes the
 *   level and is kept as sent. An update with no levels (the keep-alive below) has no rows.
 * - seqId rule [WS / Order book channel, Sequence ID]: per instId, an update's `prevSeqId` is the previous
 *   message's `seqId`; a snapshot has `prevSeqId` -1; ids are otherwise >= 0. Exceptions: after about 60 s
 *   without change an update with no levels and `prevSeqId` == `seqId` is sent; after maintenance the
 *   numbering may restart, shown by an update with `seqId` < `prevSeqId`, after which the rule holds again.
 *   See {@link okxBookSequence} for the spans and verdicts.
 * - Checksum [WS / Order book channel, `checksum`]: deprecated; the field stays in books pushes, fixed to 0,
 *   "must no longer be used". A missing or 0 checksum is no checksum. A non-zero one (the legacy
 *   behaviour) is recomputed as documented before: CRC32 of the top 25 bids and asks of the local book,
 *   interleaved `bid1px:bid1sz:ask1px:ask1sz:...` (a side with fewer levels simply ends), with prices and
 *   sizes as the venue sent them, read as a signed 32-bit integer ({@link okxChecksum}). It must be a JSON
 *   integer in the signed 32-bit range.
 * - Funding [Funding rate channel]: data items `{instId, fundingRate, fundingTime, ts, ...}`: `data`
 *   frames, no sequence. Liquidations [Liquidation orders channel]: data items `{instId, instType,
 *   details: [{side, posSide, bkPx, sz, bkLoss, ccy, ts}]}`: `data` frames, no sequence; the channel "doesn't
 *   represent the total number of liquidations" and its data is not in chronological order.
 * - No REST snapshot: the books channel sends its own.
 */
import { crc32 } from 'node:zlib'
import type { Channel, TableName } from '../formats/record/types.js'
import { isDecimal38Text, toDecimal38_18 } from '../formats/record/decimal.js'
import {
  decodeUtf8, isJsonObject, JsonNumber, JsonReadError, readJson,
  type ChecksumCheck, type ConnectPlan, type FrameClass, type JsonObject, type JsonValue, type ParsedRow,
  type SequenceSpan, type SequenceState, type SequenceVerdict, type VenueAdapter, type VenueBooks,
} from './adapter.js'
import { Bad, clip, describe, INT64_MAX, nonEmpty, str, UINT_RE, withSpans } from './frame-fields.js'

export interface OkxOptions {
  /** Websocket base; default `wss://ws.okx.com:8443` (the public service is its `/ws/v5/public`). */
  wsBase?: string
}

const NS_PER_MS = 1_000_000n
const INT32_MIN = -(2n ** 31n)
const INT32_MAX = 2n ** 31n - 1n
/** "The total length of multiple channels cannot exceed 64 KB": the whole request is kept within it. */
const MAX_REQUEST_BYTES = 64 * 1024
/** Levels per side in the checksum string. */
const CHECKSUM_DEPTH = 25
/** Fixed ping interval: below the documented N < 30 s, with room for the pong. */
export const OKX_PING_INTERVAL_MS = 20_000

/** OKX's channel for each of ours. */
const OKX_CHANNELS: Readonly<Record<Channel, string>> = {
  trades: 'trades',
  book: 'books',
  funding: 'funding-rate',
  liquidations: 'liquidation-orders',
}

/** The instrument types the liquidation-orders channel is subscribed by. */
const LIQUIDATION_INST_TYPES: ReadonlySet<string> = new Set(['SWAP', 'FUTURES', 'MARGIN', 'OPTION'])

const SUBSCRIBE_ID = '1'
const RESYNC_UNSUBSCRIBE_ID = '2'
const RESYNC_SUBSCRIBE_ID = '3'

/** A JSON integer (no fraction, no exponent) as a bigint. */
function integer(o: JsonObject, key: string, what: string): bigint {
  const v = o[key]
  if (!(v instanceof JsonNumber)) throw new Bad('structure', `${what}: ${key} is ${describe(v, 'a number')}`)
  if (!v.isInteger()) throw new Bad('structure', `${what}: ${key} is not an integer (${v.text})`)
  return BigInt(v.text)
}

/** A time written as a string of milliseconds, in nanoseconds. */
function msTime(o: JsonObject, key: string, what: string): bigint {
  const s = str(o, key, what)
  if (!UINT_RE.test(s)) throw new Bad('structure', `${what}: ${key} ${JSON.stringify(s)} is not a count of milliseconds`)
  const ns = BigInt(s) * NS_PER_MS
  if (ns > INT64_MAX) throw new Bad('time', `${what}: ${key} ${s} ms does not fit int64 nanoseconds`)
  return ns
}

function decimal(v: JsonValue | undefined, what: string): string {
  if (typeof v !== 'string') throw new Bad('structure', `${what} is ${describe(v, 'a string')}`)
  if (!isDecimal38Text(v)) throw new Bad('decimal', `${what} ${JSON.stringify(v)} is not a decimal DECIMAL(38, 18) holds exactly`)
  return v
}

function objects(v: JsonValue | undefined, what: string): JsonObject[] {
  if (!Array.isArray(v)) throw new Bad('structure', `${what} is ${describe(v, 'an array')}`)
  if (v.length === 0) throw new Bad('structure', `${what} is empty`)
  return v.map((item, i) => {
    if (!isJsonObject(item)) throw new Bad('structure', `${what}[${i}] is not an object`)
    return item
  })
}

const earliest = (times: readonly bigint[]): bigint | null => times.reduce<bigint | null>((a, t) => (a === null || t < a ? t : a), null)

// ---------------------------------------------------------------------------------------------------
// Pushes.

function parseTrades(arg: JsonObject, data: JsonValue | undefined): FrameClass {
  const instrument = nonEmpty(arg, 'instId', 'trades: arg')
  const items = objects(data, 'trades: data')
  const parsed = items.map((d, i) => {
    const what = `trades: data[${i}]`
    const instId = str(d, 'instId', what)
    if (instId !== instrument) throw new Bad('structure', `${what}: instId ${JSON.stringify(instId)} is not arg's ${JSON.stringify(instrument)}`)
    const tradeId = nonEmpty(d, 'tradeId', what)
    const price = decimal(d['px'], `${what}: px`)
    const size = decimal(d['sz'], `${what}: sz`)
    const side = str(d, 'side', what)
    if (side !== 'buy' && side !== 'sell') throw new Bad('structure', `${what}: side ${JSON.stringify(side)} is neither "buy" nor "sell"`)
    return { tradeId, price, size, side, ts: msTime(d, 'ts', what) }
  })
  const exchangeTime = earliest(parsed.map((p) => p.ts))
  const rows: ParsedRow[] = parsed.map((p) => ({ instrument, trade_id: p.tradeId, side: p.side, price: p.price, size: p.size, exchange_time: exchangeTime }))
  return { kind: 'rows', table: 'trades', rows, exchangeTime, sequences: [] }
}

/** What {@link VenueBooks.apply} needs of a book frame beyond its rows: where each data item's levels are, and its checksum. */
interface BookFrameMeta {
  instrument: string
  snapshot: boolean
  entries: { rowStart: number; rowEnd: number; checksum: string | null }[]
}

/** The book frames `classify` made, with what `books.apply` needs of them (the recorder passes the same object). */
const bookMeta = new WeakMap<object, BookFrameMeta>()

function levels(d: JsonObject, key: 'bids' | 'asks', what: string, instrument: string, rows: ParsedRow[]): void {
  const v = d[key]
  if (!Array.isArray(v)) throw new Bad('structure', `${what}: ${key} is ${describe(v, 'an array')}`)
  const side = key === 'bids' ? 'bid' : 'ask'
  for (let i = 0; i < v.length; i++) {
    const level = v[i]
    if (!Array.isArray(level) || level.length !== 4 || !level.every((x) => typeof x === 'string')) {
      throw new Bad('structure', `${what}: ${key}[${i}] is not a [price, size, "0", orders] array of four strings`)
    }
    const price = decimal(level[0], `${what}: ${key}[${i}] price`)
    const size = decimal(level[1], `${what}: ${key}[${i}] size`)
    rows.push({ instrument, trade_id: null, side, price, size, exchange_time: null })
  }
}

function parseBooks(v: JsonObject, arg: JsonObject, data: JsonValue | undefined): FrameClass {
  const instrument = nonEmpty(arg, 'instId', 'books: arg')
  const action = v['action']
  if (action !== 'snapshot' && action !== 'update') {
    throw new Bad('structure', `books: action is ${typeof action === 'string' ? JSON.stringify(action) + ', neither "snapshot" nor "update"' : describe(action, 'a string')}`)
  }
  const snapshot = action === 'snapshot'
  const items = objects(data, 'books: data')
  // The sequence ids first: a frame whose ids parsed still counts for gaps when the rest does not.
  const spans: SequenceSpan[] = items.map((d, i) => {
    const what = `books ${action}: data[${i}]`
    const prev = integer(d, 'prevSeqId', what)
    const seq = integer(d, 'seqId', what)
    if (seq < 0n) throw new Bad('structure', `${what}: seqId ${seq} is negative`)
    if (snapshot) {
      if (prev !== -1n) throw new Bad('structure', `${what}: a snapshot's prevSeqId is ${prev}, not -1`)
      return { sequence: 'book', instrument, first: seq, last: seq, snapshot: true }
    }
    if (prev < 0n) throw new Bad('structure', `${what}: an update's prevSeqId ${prev} is negative`)
    return { sequence: 'book', instrument, first: prev + 1n, last: seq, snapshot: false, previous: prev }
  })
  return withSpans(spans, () => {
    const rows: ParsedRow[] = []
    const times: bigint[] = []
    const entries: BookFrameMeta['entries'] = []
    items.forEach((d, i) => {
      const what = `books ${action}: data[${i}]`
      const instId = d['instId']
      if (instId !== undefined && instId !== instrument) throw new Bad('structure', `${what}: instId ${JSON.stringify(instId)} is not arg's ${JSON.stringify(instrument)}`)
      times.push(msTime(d, 'ts', what))
      let checksum: string | null = null
      const c = d['checksum']
      if (c !== undefined) {
        if (!(c instanceof JsonNumber) || !c.isInteger()) throw new Bad('structure', `${what}: checksum is not an integer`)
        const n = BigInt(c.text)
        if (n < INT32_MIN || n > INT32_MAX) throw new Bad('structure', `${what}: checksum ${c.text} is not a signed 32-bit integer`)
        // 0 is "no checksum": the field is deprecated and fixed to 0.
        if (n !== 0n) checksum = c.text
      }
      const rowStart = rows.length
      levels(d, 'bids', what, instrument, rows)
      levels(d, 'asks', what, instrument, rows)
      entries.push({ rowStart, rowEnd: rows.length, checksum })
    })
    const exchangeTime = earliest(times)
    for (const row of rows) row.exchange_time = exchangeTime
    const table: TableName = snapshot ? 'book_snapshots' : 'book_deltas'
    const out: FrameClass = { kind: 'rows', table, rows, exchangeTime, sequences: spans }
    bookMeta.set(out, { instrument, snapshot, entries })
    return out
  })
}

function parseFunding(arg: JsonObject, data: JsonValue | undefined): FrameClass {
  const instrument = nonEmpty(arg, 'instId', 'funding-rate: arg')
  const times = objects(data, 'funding-rate: data').map((d, i) => {
    const what = `funding-rate: data[${i}]`
    const instId = str(d, 'instId', what)
    if (instId !== instrument) throw new Bad('structure', `${what}: instId ${JSON.stringify(instId)} is not arg's ${JSON.stringify(instrument)}`)
    str(d, 'fundingRate', what)
    msTime(d, 'fundingTime', what)
    return msTime(d, 'ts', what)
  })
  return { kind: 'data', exchangeTime: earliest(times), sequences: [] }
}

function parseLiquidations(arg: JsonObject, data: JsonValue | undefined): FrameClass {
  const instType = nonEmpty(arg, 'instType', 'liquidation-orders: arg')
  const times: bigint[] = []
  objects(data, 'liquidation-orders: data').forEach((d, i) => {
    const what = `liquidation-orders: data[${i}]`
    nonEmpty(d, 'instId', what)
    const t = d['instType']
    if (t !== undefined && t !== instType) throw new Bad('structure', `${what}: instType ${JSON.stringify(t)} is not arg's ${JSON.stringify(instType)}`)
    objects(d['details'], `${what}: details`).forEach((x, j) => times.push(msTime(x, 'ts', `${what}: details[${j}]`)))
  })
  return { kind: 'data', exchangeTime: earliest(times), sequences: [] }
}

function argText(arg: JsonValue | undefined): string {
  if (!isJsonObject(arg)) return ''
  const parts = ['channel', 'instId', 'instType', 'instFamily'].map((k) => arg[k]).filter((x): x is string => typeof x === 'string')
  return parts.length > 0 ? ' ' + clip(parts.join(' ')) : ''
}

function codeText(v: JsonObject): string {
  const code = typeof v['code'] === 'string' ? v['code'] : v['code'] instanceof JsonNumber ? v['code'].text : '?'
  const msg = typeof v['msg'] === 'string' ? v['msg'] : ''
  return clip(`${code}${msg === '' ? '' : ' ' + msg}`)
}

function parseEvent(v: JsonObject): FrameClass {
  const e = v['event']
  if (typeof e !== 'string') throw new Bad('structure', 'event is not a string')
  switch (e) {
    case 'subscribe':
      return { kind: 'control', note: `subscribed${argText(v['arg'])}` }
    case 'unsubscribe':
      return { kind: 'control', note: `unsubscribed${argText(v['arg'])}` }
    case 'error':
      return { kind: 'control', note: `error ${codeText(v)}` }
    case 'notice':
      return { kind: 'control', note: `notice ${codeText(v)}: the venue will close this connection`, closing: true }
    case 'channel-conn-count':
    case 'channel-conn-count-error':
      return { kind: 'control', note: clip(`${e} ${typeof v['channel'] === 'string' ? v['channel'] : '?'} ${typeof v['connCount'] === 'string' ? v['connCount'] : '?'}`) }
    default:
      throw new Bad('structure', `unknown event ${JSON.stringify(clip(e))}`)
  }
}

function classifyOkx(channel: Channel, payload: Uint8Array, binary: boolean): FrameClass {
  if (binary) return { kind: 'unrepresentable', code: 'not-json', reason: 'binary frame; OKX sends text frames' }
  const text = decodeUtf8(payload)
  if (text === null) return { kind: 'unrepresentable', code: 'not-json', reason: 'payload is not UTF-8' }
  if (text === 'pong') return { kind: 'control', note: 'pong' }
  let v: JsonValue
  try {
    v = readJson(text)
  } catch (e) {
    return { kind: 'unrepresentable', code: 'not-json', reason: `not JSON: ${e instanceof JsonReadError ? e.message : String(e)}` }
  }
  try {
    if (!isJsonObject(v)) throw new Bad('structure', 'payload is not a JSON object')
    if ('event' in v) return parseEvent(v)
    const arg = v['arg']
    if (!isJsonObject(arg)) throw new Bad('structure', `arg is ${describe(arg, 'an object')}`)
    const ch = arg['channel']
    if (typeof ch !== 'string') throw new Bad('structure', `arg: channel is ${describe(ch, 'a string')}`)
    if (ch !== OKX_CHANNELS[channel]) throw new Bad('structure', `a push of channel ${JSON.stringify(clip(ch))} on channel ${channel}`)
    switch (channel) {
      case 'trades': return parseTrades(arg, v['data'])
      case 'book': return parseBooks(v, arg, v['data'])
      case 'funding': return parseFunding(arg, v['data'])
      case 'liquidations': return parseLiquidations(arg, v['data'])
    }
  } catch (err) {
    if (err instanceof Bad) return { kind: 'unrepresentable', code: err.code, reason: err.message, ...(err.sequences ? { sequences: err.sequences } : {}) }
    throw err
  }
}

// ---------------------------------------------------------------------------------------------------
// Sequences.

/**
 * OKX's seqId rule for one instrument's book. Spans: a snapshot is `first` = `last` = its `seqId`; an update
 * is `previous` = `prevSeqId`, `first` = `prevSeqId` + 1, `last` = `seqId` (the ids the book moves through,
 * `(prevSeqId, seqId]`), so a gap before it is "after the state's id, before `prevSeqId` + 1": the message
 * whose seqId was `prevSeqId` was not seen. A keep-alive (`prevSeqId` == `seqId`) and a reset (`seqId` <
 * `prevSeqId`) have `first` > `last`. (A span without `previous` is read as `previous` = `first` - 1.)
 *
 * With p = `prevSeqId` and s = `seqId` of an update, and L the state's last id:
 * - p == L: `next` (state s) — the documented rule, the keep-alive (s == p) and the maintenance reset
 *   (s < p) alike;
 * - p < L < s: `next` — the update spans a snapshot taken between its ids (OKX's procedure for joining a
 *   snapshot to the stream: `prevSeqId <= snapshot seqId < seqId`);
 * - p <= s <= L: `stale` — a message already accounted for (the same message from another connection);
 * - anything else: `gap` after L before p + 1, state s.
 * A snapshot is `snapshot` with the state at the later of L and its seqId (the state's documented meaning);
 * it is never behind: a websocket snapshot starts the stream it belongs to.
 */
export function okxBookSequence(prev: SequenceState | undefined, span: SequenceSpan): SequenceVerdict {
  if (span.snapshot) {
    const S = span.last
    if (prev === undefined) return { verdict: 'snapshot', state: { last: S, streamFirst: null } }
    return { verdict: 'snapshot', state: { last: S > prev.last ? S : prev.last, streamFirst: prev.streamFirst } }
  }
  const p = span.previous ?? span.first - 1n
  const s = span.last
  if (prev === undefined) return { verdict: 'start', state: { last: s, streamFirst: span.first } }
  const L = prev.last
  const state: SequenceState = { last: s, streamFirst: prev.streamFirst ?? span.first }
  if (p === L) return { verdict: 'next', state }
  if (p < L && L < s) return { verdict: 'next', state }
  if (p <= s && s <= L) return { verdict: 'stale', state: prev }
  return { verdict: 'gap', afterId: L.toString(), beforeId: span.first.toString(), state }
}

/** OKX's sequence rules: books only (the adapter states no trade sequence, so a trade span is a caller's error). */
export function okxSequence(prev: SequenceState | undefined, span: SequenceSpan): SequenceVerdict {
  if (span.sequence !== 'book') throw new RangeError('okx states no trade sequence: its adapter makes no trade spans')
  return okxBookSequence(prev, span)
}

// ---------------------------------------------------------------------------------------------------
// Books and checksums.

/** One level as the venue last sent it; `key` is its price's value (DECIMAL(38, 18) unscaled). */
interface Level { key: bigint; price: string; size: string }

/** One instrument's book: bids highest first, asks lowest first. */
interface Book { bids: Level[]; asks: Level[] }

/** The books of one connection, by instrument; an instrument is absent until its snapshot (and after a mismatch). */
export type OkxBooks = Map<string, Book>

/** Sets a level (a size of zero removes it), keeping `levels` sorted: descending for bids, ascending for asks. */
function setLevel(levels: Level[], descending: boolean, price: string, size: string): void {
  const key = toDecimal38_18(price)
  const amount = toDecimal38_18(size)
  if (key === null || amount === null) return
  let lo = 0
  let hi = levels.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    const k = levels[mid]!.key
    if (descending ? k > key : k < key) lo = mid + 1
    else hi = mid
  }
  const same = lo < levels.length && levels[lo]!.key === key
  if (amount === 0n) {
    if (same) levels.splice(lo, 1)
  } else if (same) {
    levels[lo] = { key, price, size }
  } else {
    levels.splice(lo, 0, { key, price, size })
  }
}

/**
 * The checksum string of a book: the first 25 bids and asks, alternately, each `price:size` as the venue
 * wrote them, joined by `:`; when one side has fewer levels the other continues alone.
 */
export function okxChecksumText(bids: readonly { price: string; size: string }[], asks: readonly { price: string; size: string }[]): string {
  const parts: string[] = []
  for (let i = 0; i < CHECKSUM_DEPTH; i++) {
    const b = bids[i]
    const a = asks[i]
    if (b) parts.push(b.price, b.size)
    if (a) parts.push(a.price, a.size)
  }
  return parts.join(':')
}

/** The CRC32 of {@link okxChecksumText}, as a signed 32-bit integer (how OKX writes it). */
export function okxChecksum(bids: readonly { price: string; size: string }[], asks: readonly { price: string; size: string }[]): number {
  return crc32(okxChecksumText(bids, asks)) | 0
}

export const okxBooks: VenueBooks<OkxBooks> = {
  create: () => new Map(),
  apply(books, frame, payload): ChecksumCheck[] {
    let meta = bookMeta.get(frame)
    let rows = frame.rows
    if (meta === undefined) {
      // A frame this module did not make (or a copy): read the payload again.
      const again = classifyOkx('book', payload, false)
      meta = again.kind === 'rows' ? bookMeta.get(again) : undefined
      if (meta === undefined || again.kind !== 'rows') return []
      rows = again.rows
    }
    const { instrument } = meta
    const checks: ChecksumCheck[] = []
    for (const entry of meta.entries) {
      let book = books.get(instrument)
      if (meta.snapshot) books.set(instrument, (book = { bids: [], asks: [] }))
      // No snapshot yet on this connection, or forgotten after a mismatch: nothing to apply or check.
      if (book === undefined) continue
      for (let r = entry.rowStart; r < entry.rowEnd; r++) {
        const row = rows[r]
        if (row === undefined) continue
        if (row.side === 'bid') setLevel(book.bids, true, row.price, row.size)
        else if (row.side === 'ask') setLevel(book.asks, false, row.price, row.size)
      }
      if (entry.checksum === null) continue
      const computed = String(okxChecksum(book.bids, book.asks))
      checks.push({ instrument, expected: entry.checksum, computed })
      // A book that failed its check is not checked again until a snapshot rebuilds it.
      if (computed !== entry.checksum) books.delete(instrument)
    }
    return checks
  },
  reset(books, instrument) {
    books.delete(instrument)
  },
}

// ---------------------------------------------------------------------------------------------------
// Connecting.

/**
 * Whether a frame acknowledges the subscription: a `subscribe` event naming the channel and one of the
 * subscribed instruments (instrument types on liquidation-orders), or any `error` event.
 */
function subscribeAnswer(payload: Uint8Array, okxChannel: string, key: 'instId' | 'instType', wanted: ReadonlySet<string>): 'subscribed' | 'refused' | null {
  // Replies are short; a market-data frame is not parsed here.
  if (payload.byteLength > 4096) return null
  const text = decodeUtf8(payload)
  if (text === null || !text.includes('"event"')) return null
  let v: JsonValue
  try {
    v = readJson(text)
  } catch {
    return null
  }
  if (!isJsonObject(v)) return null
  if (v['event'] === 'error') return 'refused'
  if (v['event'] !== 'subscribe') return null
  const arg = v['arg']
  if (!isJsonObject(arg) || arg['channel'] !== okxChannel) return null
  const id = arg[key]
  return typeof id === 'string' && wanted.has(id) ? 'subscribed' : null
}

function request(id: string, op: 'subscribe' | 'unsubscribe', args: Record<string, string>[]): string {
  return JSON.stringify({ id, op, args })
}

/** An OKX v5 public adapter. */
export function createOkxAdapter(opts: OkxOptions = {}): VenueAdapter {
  const wsBase = (opts.wsBase ?? 'wss://ws.okx.com:8443').replace(/\/+$/, '')
  const channels = ['trades', 'book', 'funding', 'liquidations'] as const
  const check = (channel: Channel): void => {
    if (!Object.prototype.hasOwnProperty.call(OKX_CHANNELS, channel)) throw new RangeError(`okx serves no channel ${String(channel)}`)
  }
  return {
    name: 'okx',
    tradeSequence: false,
    channels,
    about: {
      summary: 'OKX (API v5, public websocket): spot, margin, perpetuals, futures, options',
      channels: {
        trades: { streams: 'trades (one push per taker order, price and source; count fills aggregated) on /ws/v5/public', sequence: 'none: the venue documents no trade-id sequence' },
        book: { streams: 'books (400 levels: snapshot, then updates every 100 ms) on /ws/v5/public', sequence: 'prevSeqId = previous seqId per instId; snapshot prevSeqId -1; empty keep-alive with prevSeqId = seqId; seqId < prevSeqId after a maintenance reset' },
        funding: { streams: 'funding-rate on /ws/v5/public, kept raw', sequence: 'none stated by the venue' },
        liquidations: { streams: 'liquidation-orders by instrument type on /ws/v5/public, kept raw', sequence: 'none: not every liquidation, not in time order (the venue says so)' },
      },
      checksum: 'deprecated by the venue and sent as 0 (not checked); a non-zero one is checked: CRC32 of the top 25 bids and asks interleaved, signed',
      endpoints: [`${wsBase}/ws/v5/public`],
    },
    classify(channel, payload, binary) {
      check(channel)
      return classifyOkx(channel, payload, binary)
    },
    sequence: okxSequence,
    connect(channel, instruments): ConnectPlan {
      check(channel)
      if (instruments.length === 0) throw new RangeError('no instruments to subscribe')
      for (const i of instruments) if (typeof i !== 'string' || i === '') throw new RangeError('an instrument is empty')
      const okxChannel = OKX_CHANNELS[channel]
      const key = channel === 'liquidations' ? 'instType' : 'instId'
      if (channel === 'liquidations') {
        for (const i of instruments) {
          if (!LIQUIDATION_INST_TYPES.has(i)) throw new RangeError(`liquidation-orders is subscribed by instrument type (${[...LIQUIDATION_INST_TYPES].join(', ')}), not ${JSON.stringify(i)}`)
        }
      }
      const arg = (i: string): Record<string, string> => ({ channel: okxChannel, [key]: i })
      const subscribe = request(SUBSCRIBE_ID, 'subscribe', instruments.map(arg))
      if (Buffer.byteLength(subscribe, 'utf8') > MAX_REQUEST_BYTES) throw new RangeError(`the subscribe request is over OKX's 64 KB; subscribe fewer instruments per connection`)
      const wanted = new Set(instruments)
      const plan: ConnectPlan = {
        url: `${wsBase}/ws/v5/public`,
        send: [subscribe],
        answers: (payload) => subscribeAnswer(payload, okxChannel, key, wanted),
        keepAlive: { everyMs: OKX_PING_INTERVAL_MS, text: 'ping' },
      }
      if (channel === 'book') {
        // Unsubscribing and subscribing again makes the venue send the book's snapshot anew.
        plan.resync = (instrument) => [
          request(RESYNC_UNSUBSCRIBE_ID, 'unsubscribe', [arg(instrument)]),
          request(RESYNC_SUBSCRIBE_ID, 'subscribe', [arg(instrument)]),
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
      throw new RangeError('okx records no REST snapshots: the books channel sends its own')
    },
    books: okxBooks,
  }
}

/** The OKX adapter at OKX's public endpoint. */
export const okx: VenueAdapter = createOkxAdapter()

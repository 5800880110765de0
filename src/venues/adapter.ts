/**
 * The venue-adapter interface: what the recorder, the sealer and the simulator need to know about one
 * venue, as pure functions over frames and small state objects.
 *
 * - {@link VenueAdapter.classify}: one frame's payload on one channel -> a control message (no rows), a
 *   row-carrying frame (its table, rows, exchange_time and the venue-sequence spans it covers), or an
 *   unrepresentable frame (no rows, a reason; record format v1: the hourly manifest lists its line in
 *   `unrepresentable_frames` and the hour is `partial` with reason `unrepresentable_value`).
 * - {@link VenueAdapter.sequence}: a venue's sequence rule: given the previous state of one sequence
 *   (one instrument on one connection) and a frame's span, say whether the frame continues it, is stale,
 *   breaks it (a gap with `after_id` / `before_id`), or is a snapshot.
 * - {@link VenueAdapter.connect} / {@link VenueAdapter.snapshotRequest} / {@link VenueAdapter.wrapSnapshot}:
 *   how a recorder subscribes, which REST snapshot a book channel needs, and how that REST response is
 *   recorded as a frame of its own.
 *
 * `classify` never throws on a payload: whatever the bytes are, it returns a class. It throws only on a
 * programming error (a channel the venue does not serve).
 *
 * Also here: {@link readJson}, a strict JSON reader that keeps every number's source text, shared by
 * adapters (integers beyond 2^53 and venues that send prices as JSON numbers need it).
 */
import type { Channel, TableName, TableRow } from '../formats/record/types.js'

/** A row as the adapter makes it; the sealer adds `raw_index` and `receive_time` (the frame time). */
export type ParsedRow = Omit<TableRow, 'raw_index' | 'receive_time'>

/**
 * The part of one venue sequence a frame covers, for one instrument. Ids are integers as the venue
 * writes them (exactly, as bigint; render with `toString()` for `after_id` / `before_id`).
 * - Trade frames: `first` = `last` = the trade id.
 * - Book updates: `first` .. `last` = the update-id range (Binance `U` .. `u`).
 * - Book snapshots: `first` = `last` = the snapshot's update id (Binance `lastUpdateId`), `snapshot` true.
 */
export interface SequenceSpan {
  /** Which sequence of the instrument: its trade ids, or its book update ids. */
  sequence: 'trades' | 'book'
  instrument: string
  first: bigint
  last: bigint
  snapshot: boolean
  /**
   * The last id before this frame, as the venue states it, for venues whose ids are not dense (Binance
   * USD-M `pu`, OKX `prevSeqId`, Deribit `prev_change_id`): the frame continues the sequence when it equals
   * the previous frame's `last`.
   */
  previous?: bigint
}

/** State of one sequence (one instrument, one connection) after the frames seen so far. */
export interface SequenceState {
  /** The last id accounted for: the last trade id, or the later of the last update's last id and the last snapshot's id. */
  last: bigint
  /** The first id of the update stream on this connection (book: `U` of the first update), null before any update. */
  streamFirst: bigint | null
}

export type SequenceVerdict =
  /** First frame of the sequence (no previous state): nothing to compare with. */
  | { verdict: 'start'; state: SequenceState }
  /** The frame continues the sequence. */
  | { verdict: 'next'; state: SequenceState }
  /** The frame covers nothing after the state (Binance: `u <= last`, or a repeated trade id): ignore it; state unchanged. */
  | { verdict: 'stale'; state: SequenceState }
  /** A break: ids after `afterId` and before `beforeId` were not seen. */
  | { verdict: 'gap'; afterId: string; beforeId: string; state: SequenceState }
  /** A snapshot the update stream joins (or has joined). */
  | { verdict: 'snapshot'; state: SequenceState }
  /**
   * A snapshot older than the first update of this connection (Binance: `lastUpdateId + 1 < U` of the first
   * update): no book can be built from it; the recorder fetches another. Not a gap in the recorded updates.
   */
  | { verdict: 'snapshot-behind'; state: SequenceState }

/**
 * The rule of ids that count up by one (Binance's trade ids, its futures' aggregate ids, Kraken's trade ids):
 * a frame continues the sequence when its first id is the last one's + 1; one at or below the last id is
 * stale; anything after a hole is a gap, after the last id and before the frame's first.
 */
export function consecutiveIds(prev: SequenceState | undefined, span: SequenceSpan): SequenceVerdict {
  const t = span.last
  if (prev === undefined) return { verdict: 'start', state: { last: t, streamFirst: span.first } }
  if (t <= prev.last) return { verdict: 'stale', state: prev }
  const state: SequenceState = { last: t, streamFirst: prev.streamFirst ?? span.first }
  if (span.first === prev.last + 1n) return { verdict: 'next', state }
  return { verdict: 'gap', afterId: prev.last.toString(), beforeId: span.first.toString(), state }
}

export type UnrepresentableCode =
  /** The text frame is not UTF-8, or the payload is not JSON (or a binary frame where the venue sends text). */
  | 'not-json'
  /** A message of a row-carrying type (or of no type the channel knows) that is not the documented structure. */
  | 'structure'
  /** A price or size that DECIMAL(38, 18) cannot hold exactly (or that is not a plain decimal). */
  | 'decimal'
  /** A time the venue stated that does not fit int64 nanoseconds. */
  | 'time'

export type FrameClass =
  /**
   * A control message: acknowledgement, error response, anything that carries no rows by design. `closing`:
   * the venue says it will close this connection soon (Binance's `serverShutdown`): a recorder opens the
   * connection's successor now, so that the replica stays covered.
   */
  | { kind: 'control'; note: string; closing?: true }
  /**
   * A row-carrying frame. `rows` may be empty (e.g. a book update that changes no level). `exchangeTime` is
   * the venue's stated time for the frame, the earliest when it states several, null when it states none.
   */
  | { kind: 'rows'; table: TableName; rows: ParsedRow[]; exchangeTime: bigint | null; sequences: SequenceSpan[] }
  /**
   * Market data of a channel the format keeps in the raw file only (v1: `funding`, `liquidations`): no
   * rows, nothing unrepresentable; its stated time and its place in the venue's sequences still count.
   */
  | { kind: 'data'; exchangeTime: bigint | null; sequences: SequenceSpan[] }
  /** No rows: the frame is kept in the raw file only, and the hour is `partial` (`unrepresentable_value`). */
  /** `sequences` when the frame's sequence ids parsed although the rest did not: it still counts for gaps. */
  | { kind: 'unrepresentable'; code: UnrepresentableCode; reason: string; sequences?: SequenceSpan[] }

/** What a recorder opens for a channel: one websocket URL and the text frames to send once it is open. */
export interface ConnectPlan {
  url: string
  /** Text frames to send after `open`, in order (e.g. a SUBSCRIBE request). */
  send: string[]
  /**
   * Whether a received frame answers the subscription: `subscribed` (the venue acknowledged it: the
   * connection is subscribed from this frame on), `refused` (an error reply), or null (any other frame).
   * A plan that sends nothing is subscribed when it opens.
   */
  answers(payload: Uint8Array): 'subscribed' | 'refused' | null
  /**
   * For a venue that wants pings from its clients (OKX: the text `ping` within 30 s of silence): the text
   * sent every `everyMs` while the connection is open. Venues that ping their clients (Binance) need none:
   * the websocket library answers protocol pings.
   */
  keepAlive?: { everyMs: number; text: string }
  /**
   * The longest a healthy connection may carry nothing, not even a ping (a quiet stream between the venue's
   * pings): the recorder takes no longer silence for a stall. Default: the recorder's stall time.
   */
  silenceMs?: number
  /** A frame the venue wants answered (Deribit's `test_request`): the text to send back, or null for none. */
  respond?(payload: Uint8Array): string | null
  /**
   * The frames that make the venue send `instrument`'s book anew on this connection (after a checksum
   * mismatch: unsubscribe and subscribe again). Without it the connection is replaced.
   */
  resync?(instrument: string): string[]
}

/** The REST request a book channel needs per instrument and connection (Binance: the depth snapshot). */
export interface SnapshotRequest {
  url: string
}

/** A book checksum a venue sent, and the one recomputed from the connection's own copy of the book. */
export interface ChecksumCheck {
  instrument: string
  /** As the venue wrote it. */
  expected: string
  /** Written as the venue writes it, so that equal checksums are equal strings. */
  computed: string
}

/**
 * For a venue that sends book checksums: the books of one connection, kept from its book frames, against
 * which each checksum is recomputed. `S` is the adapter's own state (one per connection, every instrument).
 */
export interface VenueBooks<S = unknown> {
  /** The books of a new connection: empty. */
  create(): S
  /**
   * Applies one frame of the book channel, as {@link VenueAdapter.classify} read it (a snapshot resets its
   * instrument's book), and returns the checksums it carries with their recomputed values, in the order
   * they stand in the frame. A frame that carries none returns []. Never throws on a frame's content.
   */
  apply(books: S, frame: Extract<FrameClass, { kind: 'rows' }>, payload: Uint8Array): ChecksumCheck[]
  /** Forgets one instrument's book (after a mismatch, until its next snapshot). */
  reset(books: S, instrument: string): void
}

export interface VenueAdapter {
  /** The venue's name as it appears in storage paths (`venue=<venue>`). */
  readonly name: string
  /**
   * For an adapter that does not live in src/venues: the URL of a module that registers it
   * (`registerVenue`) when imported. The sealer classifies frames on a worker thread, which imports it
   * there to find the adapter by name.
   */
  readonly module?: string
  /** Channels the venue serves; `classify` and `connect` throw a RangeError for others. */
  readonly channels: readonly Channel[]
  /** Classify one frame of `channel` (`binary`: it arrived as a binary websocket frame). */
  classify(channel: Channel, payload: Uint8Array, binary: boolean): FrameClass
  /** The venue's rule for one sequence; `prev` undefined at the start of a connection. Pure. */
  sequence(prev: SequenceState | undefined, span: SequenceSpan): SequenceVerdict
  /** How to subscribe `instruments` on `channel`. */
  connect(channel: Channel, instruments: readonly string[]): ConnectPlan
  /** The REST snapshot to fetch for `instrument` after subscribing, or null when the channel needs none. */
  snapshotRequest(channel: Channel, instrument: string): SnapshotRequest | null
  /**
   * The frame text that records a REST snapshot response: `body` is the complete HTTP response body
   * (UTF-8 text, verbatim). The recorder journals it as a text frame on the connection it serves, with the
   * receive time at which it held the complete body.
   */
  wrapSnapshot(channel: Channel, instrument: string, body: string): string
  /** Present when the venue sends book checksums: how a recorder recomputes them. */
  readonly books?: VenueBooks
  /** What `pipe list venues` says of the venue. */
  readonly about?: VenueAbout
  /**
   * The instrument name of spans that count a whole connection's messages rather than one instrument's
   * (Coinbase's `sequence_num`: `*`). Such a count restarts with each connection and is no venue sequence two
   * connections share: the recorder judges it live, connection by connection, and the sealer states the
   * breaks it journaled rather than judging the spans across connections and replicas.
   */
  readonly connectionWide?: string
  /**
   * False for a venue whose trades carry no per-instrument sequence the recorder can check (OKX, Bybit,
   * Coinbase): an hour of its trades states no `gap_free_runs`, since no gap could have been detected.
   */
  readonly tradeSequence?: false
}

/** A venue as `pipe list venues` describes it. */
export interface VenueAbout {
  /** One line: the venue and its market. */
  summary: string
  /** Per channel served: the streams subscribed, and the sequence rule checked (or what cannot be). */
  channels: Partial<Record<Channel, { streams: string; sequence: string }>>
  /** The book checksum recomputed on each replica's book, or null when the venue sends none. */
  checksum: string | null
  /** The endpoints used unless told otherwise. */
  endpoints: string[]
}

// ---------------------------------------------------------------------------------------------------
// Strict, lossless JSON reading shared by adapters.

/** A JSON number, kept as its exact source text (RFC 8259 grammar). */
export class JsonNumber {
  constructor(readonly text: string) {}
  /** True when the text is an integer without fraction or exponent (`0`, `-12`, not `1.0`, not `1e3`). */
  isInteger(): boolean {
    return /^-?(0|[1-9][0-9]*)$/.test(this.text)
  }
}

export type JsonValue = string | boolean | null | JsonNumber | JsonValue[] | JsonObject
/** A JSON object; a null-prototype record, so keys such as `__proto__` are plain keys. */
export interface JsonObject { [key: string]: JsonValue }

export class JsonReadError extends Error {
  constructor(message: string, readonly offset: number) {
    super(`${message} at offset ${offset}`)
    this.name = 'JsonReadError'
  }
}

const MAX_DEPTH = 64
const textDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** The text of a UTF-8 payload, or null when the bytes are not UTF-8. A BOM is kept (and is then not JSON). */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return textDecoder.decode(bytes)
  } catch {
    return null
  }
}

/**
 * Parse JSON text strictly (RFC 8259: no BOM, no comments, no trailing commas) keeping numbers as
 * {@link JsonNumber}. Duplicate keys in one object are refused: which value the venue meant would be a
 * guess. Nesting deeper than 64 is refused. Throws {@link JsonReadError}.
 */
export function readJson(text: string): JsonValue {
  const r = new Reader(text)
  r.ws()
  const v = r.value(0)
  r.ws()
  if (r.i !== text.length) throw new JsonReadError('unexpected text after the value', r.i)
  return v
}

class Reader {
  i = 0
  constructor(readonly s: string) {}

  ws(): void {
    const s = this.s
    let i = this.i
    while (i < s.length) {
      const c = s.charCodeAt(i)
      if (c === 32 || c === 10 || c === 13 || c === 9) i++
      else break
    }
    this.i = i
  }

  value(depth: number): JsonValue {
    const s = this.s
    const c = s.charCodeAt(this.i)
    if (c === 34) return this.string()
    if (c === 123) return this.object(depth + 1)
    if (c === 91) return this.array(depth + 1)
    if (c === 45 || (c >= 48 && c <= 57)) return this.number()
    if (s.startsWith('true', this.i)) { this.i += 4; return true }
    if (s.startsWith('false', this.i)) { this.i += 5; return false }
    if (s.startsWith('null', this.i)) { this.i += 4; return null }
    throw new JsonReadError(this.i >= s.length ? 'unexpected end' : 'unexpected character', this.i)
  }

  object(depth: number): JsonObject {
    if (depth > MAX_DEPTH) throw new JsonReadError('nesting too deep', this.i)
    const s = this.s
    const o: JsonObject = Object.create(null) as JsonObject
    this.i++
    this.ws()
    if (s.charCodeAt(this.i) === 125) { this.i++; return o }
    for (;;) {
      if (s.charCodeAt(this.i) !== 34) throw new JsonReadError('expected a key', this.i)
      const at = this.i
      const k = this.string()
      if (Object.prototype.hasOwnProperty.call(o, k)) throw new JsonReadError(`duplicate key ${JSON.stringify(k)}`, at)
      this.ws()
      if (s.charCodeAt(this.i) !== 58) throw new JsonReadError('expected ":"', this.i)
      this.i++
      this.ws()
      o[k] = this.value(depth)
      this.ws()
      const c = s.charCodeAt(this.i)
      if (c === 44) { this.i++; this.ws(); continue }
      if (c === 125) { this.i++; return o }
      throw new JsonReadError('expected "," or "}"', this.i)
    }
  }

  array(depth: number): JsonValue[] {
    if (depth > MAX_DEPTH) throw new JsonReadError('nesting too deep', this.i)
    const s = this.s
    const a: JsonValue[] = []
    this.i++
    this.ws()
    if (s.charCodeAt(this.i) === 93) { this.i++; return a }
    for (;;) {
      a.push(this.value(depth))
      this.ws()
      const c = s.charCodeAt(this.i)
      if (c === 44) { this.i++; this.ws(); continue }
      if (c === 93) { this.i++; return a }
      throw new JsonReadError('expected "," or "]"', this.i)
    }
  }

  number(): JsonNumber {
    const s = this.s
    const start = this.i
    let i = start
    if (s.charCodeAt(i) === 45) i++
    let c = s.charCodeAt(i)
    if (c === 48) i++
    else if (c >= 49 && c <= 57) { do i++; while ((c = s.charCodeAt(i)) >= 48 && c <= 57) }
    else throw new JsonReadError('bad number', i)
    if (s.charCodeAt(i) === 46) {
      i++
      const f = i
      while ((c = s.charCodeAt(i)) >= 48 && c <= 57) i++
      if (i === f) throw new JsonReadError('bad number fraction', i)
    }
    c = s.charCodeAt(i)
    if (c === 101 || c === 69) {
      i++
      c = s.charCodeAt(i)
      if (c === 43 || c === 45) i++
      const e = i
      while ((c = s.charCodeAt(i)) >= 48 && c <= 57) i++
      if (i === e) throw new JsonReadError('bad number exponent', i)
    }
    this.i = i
    return new JsonNumber(s.slice(start, i))
  }

  string(): string {
    const s = this.s
    const start = ++this.i
    let i = start
    // Fast path: no escapes.
    for (;;) {
      if (i >= s.length) throw new JsonReadError('unterminated string', i)
      const c = s.charCodeAt(i)
      if (c === 34) { this.i = i + 1; return s.slice(start, i) }
      if (c === 92) break
      if (c < 0x20) throw new JsonReadError('control character in string', i)
      i++
    }
    let out = s.slice(start, i)
    for (;;) {
      if (i >= s.length) throw new JsonReadError('unterminated string', i)
      const c = s.charCodeAt(i)
      if (c === 34) { this.i = i + 1; return out }
      if (c < 0x20) throw new JsonReadError('control character in string', i)
      if (c !== 92) { out += s[i]; i++; continue }
      const e = s.charCodeAt(i + 1)
      switch (e) {
        case 34: out += '"'; break
        case 92: out += '\\'; break
        case 47: out += '/'; break
        case 98: out += '\b'; break
        case 102: out += '\f'; break
        case 110: out += '\n'; break
        case 114: out += '\r'; break
        case 116: out += '\t'; break
        case 117: {
          const hex = s.slice(i + 2, i + 6)
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new JsonReadError('bad \\u escape', i)
          out += String.fromCharCode(parseInt(hex, 16))
          i += 6
          continue
        }
        default: throw new JsonReadError('bad escape', i)
      }
      i += 2
    }
  }
}

/** True for a JSON object (not an array, not null). */
export function isJsonObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof JsonNumber)
}

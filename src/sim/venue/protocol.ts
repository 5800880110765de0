/**
 * What a venue's wire protocol decides in the simulator (docs/simulator.md): how a websocket upgrade names
 * its streams, what a client's messages do, what the venue sends unasked (status, heartbeats), the REST
 * snapshot, and the keep-alive. simulator.ts keeps everything else (connections, streams, the clock, faults,
 * the truth) and hands a protocol a {@link Session} per connection and the {@link Market} it trades.
 */
import type { Instrument, MarketEvent } from './binance-market.js'

/** A client's request as a JSON object, or null when it is not one (a binary frame, not JSON, another value). */
export function requestObject(text: string | null): Record<string, unknown> | null {
  if (text === null) return null
  let req: unknown
  try {
    req = JSON.parse(text)
  } catch {
    return null
  }
  return typeof req === 'object' && req !== null && !Array.isArray(req) ? req as Record<string, unknown> : null
}

/** A connection, as a protocol acts on it. */
export interface Session {
  readonly id: string
  /** The text variant its frames are written in (Binance: combined stream, time unit; 0 elsewhere). */
  readonly variant: number
  /** Every stream name it subscribed, served or not. */
  readonly names: ReadonlySet<string>
  /** Sends a message of this connection alone (an acknowledgement, an error, a pong, a status), recorded as a reply. */
  reply(text: string): void
  /** Sends a market frame of `stream` to this connection alone (a snapshot on subscription), recorded as a frame. */
  send(stream: string, text: string): void
  /** Subscribes to streams by the simulator's names; a name no endpoint of this one serves is kept but carries nothing. */
  subscribe(names: string[]): void
  unsubscribe(names: string[]): void
  setVariant(variant: number): void
}

/** What the venue trades, as a protocol reads it. */
export interface Market {
  readonly instruments: ReadonlyMap<string, Instrument>
  /** The last frames sent on a stream, oldest first (kept for the venues whose snapshot repeats them). */
  recent(stream: string): readonly MarketEvent[]
  /** The simulated time now, epoch microseconds. */
  nowUs(): number
}

/** What a websocket upgrade opens: the endpoint (route) serving it, the streams its URL names, its text variant. */
export interface Opening { route: string; streams: string[]; variant: number }

export interface Protocol {
  /** The path of the websocket base the adapters take (`` on Binance, `/v2` on Kraken). */
  readonly basePath: string
  /** What an upgrade to `url` opens, or the HTTP status line refusing it (`404 Not Found`). */
  open(url: URL): Opening | string
  /** A message from the client: its text, or null for a binary frame. */
  message(session: Session, text: string | null): void
  /** What the venue sends a connection as it opens (Kraken's status), if anything. */
  opened?(session: Session): void
  /** An HTTP request (`GET`, ...) to `url`: the status and the JSON body. */
  rest(method: string, url: URL): { status: number; text: string }
  /** Whether the venue pings (websocket pings, closing a connection that does not answer); else it waits for the client's requests. */
  readonly serverPings: boolean
  /** Real milliseconds without a request from the client after which the venue drops the connection (Kraken), if it does. */
  readonly idleCloseMs?: number
  /**
   * The venue's own keep-alive of a connection, run every few real milliseconds while it is open and not
   * stalled, `nowMs` the real time (Deribit's heartbeats and test requests): 'close' drops the connection.
   */
  keepAlive?(session: Session, nowMs: number): 'close' | undefined
  /**
   * The venue's heartbeat, every `everyUs` simulated microseconds to each subscribed connection: the text
   * `text` gives it (null: none for this one), only to a connection sent nothing for that long when
   * `idleOnly` (Kraken), else to every one (Coinbase's heartbeats channel).
   */
  readonly heartbeat?: { everyUs: number; idleOnly: boolean; text(session: Session, us: number): string | null }
  /**
   * A message as this connection gets it, for a venue that numbers each connection's messages (Coinbase's
   * `sequence_num`): the text made once for every connection, stamped for this one. Numbers are used by
   * every message made for the connection, also those a stall then drops.
   */
  stamp?(session: Session, text: string): string
  /** The notice of a server shutdown at `ms` (epoch milliseconds), or null: the venue sends none. */
  shutdownNotice: ((ms: number) => string) | null
  /** A venue whose snapshot repeats the last trades (Kraken: 50) keeps that many of each trade stream's; 0 otherwise. */
  readonly recentTrades: number
}

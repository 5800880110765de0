/**
 * What differs between the venues the simulator speaks (docs/simulator.md): the endpoints and which streams
 * each serves, the stream names a client may give, the REST snapshot's path and limits, the keep-alive's
 * defaults, the instruments and their texts. Everything else (the server, the clock and its steps, requests,
 * faults, the truth, the flood) is one implementation, simulator.ts.
 */
import { Instrument, eventText, type MarketEvent, type Mutation } from './binance-market.js'
import { Engine, LIQUIDATION_INTERVAL_MS, MARK_PRICE_INTERVAL_MS, UsdmInstrument, usdmEventText } from './binance-usdm-market.js'
import type { SimulatedVenue } from './faults.js'

/** A source of frames beyond an instrument's trades and depth: its stream, its interval, and what it makes (null: nothing this time). */
export interface Source { stream: string; intervalMs: number; make(us: number): MarketEvent | null }

export interface Dialect {
  readonly venue: SimulatedVenue
  /**
   * The endpoint a websocket path opens (`route`) and the path below it (`/ws`, `/ws/<stream>…`, `/stream`),
   * or null: refused with 404.
   */
  endpoint(pathname: string): { route: string; rest: string } | null
  /** The endpoint that serves a stream the simulator makes; on another, a subscription to it carries nothing. */
  routeOf(stream: string): string
  /** A stream name a client may give; another is refused (400 on a URL, an error reply to a request). */
  readonly streamWord: RegExp
  /** Whether `?timeUnit=` is read (spot); futures documents none, and ignores it. */
  readonly timeUnit: boolean
  readonly restPath: string
  /** The REST snapshot's `limit`: when not given, and the most levels a side it gives. */
  readonly restLimit: { default: number; max: number }
  /** Real milliseconds: the venue's documented keep-alive. */
  readonly pingIntervalMs: number
  readonly pongTimeoutMs: number
  /** Simulated milliseconds of updates that `<symbol>@depth` gathers in one frame. */
  readonly depthAggregateMs: number
  /** The instruments, made from the seed (the venue's shared state, such as futures' engine, among them). */
  instruments(symbols: string[], seed: number): Instrument[]
  /** The text of `ev` on `stream` in `variant`, as the venue writes it, or altered by `mutation`. */
  text(ev: MarketEvent, stream: string, variant: number, mutation?: Mutation): string
  /** The instrument's streams beyond trades and depth. */
  sources(ins: Instrument): Source[]
}

/** Binance spot: one endpoint, `/ws` and `/stream`. */
const spot: Dialect = {
  venue: 'binance',
  endpoint: (pathname) => ({ route: 'spot', rest: pathname }),
  routeOf: () => 'spot',
  streamWord: /^[a-z0-9_]+@[a-z0-9_@]+$/,
  timeUnit: true,
  restPath: '/api/v3/depth',
  restLimit: { default: 100, max: 5000 },
  pingIntervalMs: 20_000,
  pongTimeoutMs: 60_000,
  depthAggregateMs: 1000,
  instruments: (symbols, seed) => symbols.map((s) => new Instrument(s, seed)),
  text: eventText,
  sources: () => [],
}

/**
 * Binance USD-M futures: depth on `/public`, aggregate trades, mark prices and liquidations on `/market`
 * (the WebSocket change notice of 2026-03-06); a path without either is the public endpoint's, as Binance
 * documents ("connections that do not include a routed path will only receive data from the Public
 * endpoint"). `/private` (user data, by listenKey) is not simulated.
 */
const usdm: Dialect = {
  venue: 'binance-usdm',
  endpoint(pathname) {
    const m = /^\/(public|market|private)(\/.*)?$/.exec(pathname)
    if (m === null) return { route: 'public', rest: pathname }
    return m[1] === 'private' ? null : { route: m[1]!, rest: m[2] ?? '' }
  },
  routeOf: (stream) => (stream.includes('@depth') ? 'public' : 'market'),
  // Futures' stream names are camel case after the symbol (@aggTrade, @markPrice, @forceOrder).
  streamWord: /^[a-z0-9_]+@[A-Za-z0-9_@]+$/,
  timeUnit: false,
  restPath: '/fapi/v1/depth',
  restLimit: { default: 500, max: 1000 },
  pingIntervalMs: 3 * 60_000,
  pongTimeoutMs: 10 * 60_000,
  depthAggregateMs: 250,
  instruments(symbols, seed) {
    const engine = new Engine(seed)
    return symbols.map((s) => new UsdmInstrument(s, seed, engine))
  },
  text: usdmEventText,
  sources(ins) {
    const f = ins as UsdmInstrument
    return [
      { stream: f.markStream, intervalMs: MARK_PRICE_INTERVAL_MS, make: (us) => f.nextMarkPrice(us) },
      { stream: f.forceStream, intervalMs: LIQUIDATION_INTERVAL_MS, make: (us) => f.nextForceOrder(us) },
    ]
  },
}

export const DIALECTS: Readonly<Record<SimulatedVenue, Dialect>> = { binance: spot, 'binance-usdm': usdm }

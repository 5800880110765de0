/**
 * What differs between the venues the simulator speaks (docs/simulator.md): the endpoints and which streams
 * each serves, the protocol (protocol.ts: requests, snapshots, keep-alive), the instruments and their texts.
 * Everything else (the server, the clock and its steps, faults, the truth, the flood) is one
 * implementation, simulator.ts.
 */
import { Instrument, eventText, type MarketEvent, type Mutation } from './binance-market.js'
import { binanceProtocol } from './binance-protocol.js'
import { Engine, LIQUIDATION_INTERVAL_MS, MARK_PRICE_INTERVAL_MS, UsdmInstrument, usdmEventText } from './binance-usdm-market.js'
import type { SimulatedVenue } from './faults.js'
import { BYBIT_LIQUIDATION_INTERVAL_MS, BYBIT_TICKER_INTERVAL_MS, bybitEventText, bybitInstruments, bybitProtocol, type BybitInstrument } from './bybit-market.js'
import { CoinbaseInstrument, coinbaseEventText, coinbaseProtocol } from './coinbase-market.js'
import { DERIBIT_FUNDING_INTERVAL_MS, deribitEventText, deribitInstruments, deribitProtocol, type DeribitInstrument } from './deribit-market.js'
import { KrakenInstrument, krakenEventText, krakenProtocol } from './kraken-market.js'
import { OKX_FUNDING_INTERVAL_MS, OKX_LIQUIDATION_INTERVAL_MS, okxEventText, okxInstruments, okxProtocol, type OkxInstrument } from './okx-market.js'
import type { Market, Protocol } from './protocol.js'

/** A source of frames beyond an instrument's trades and depth: its stream, its interval, and what it makes (null: nothing this time). */
export interface Source { stream: string; intervalMs: number; make(us: number): MarketEvent | null }

export interface Dialect {
  readonly venue: SimulatedVenue
  /** The endpoint that serves a stream the simulator makes; on another, a subscription to it carries nothing. */
  routeOf(stream: string): string
  /** Real milliseconds: the venue's documented keep-alive (when it pings). */
  readonly pingIntervalMs: number
  readonly pongTimeoutMs: number
  /** Simulated milliseconds of updates that an aggregate depth stream (Binance's `<symbol>@depth`) gathers in one frame. */
  readonly depthAggregateMs: number
  /** The instruments the simulator trades when none are given. */
  readonly defaultInstruments: readonly string[]
  /** The instruments, made from the seed (the venue's shared state, such as futures' engine, among them). */
  instruments(symbols: string[], seed: number): Instrument[]
  /** The text of `ev` on `stream` in `variant`, as the venue writes it, or altered by `mutation`. */
  text(ev: MarketEvent, stream: string, variant: number, mutation?: Mutation): string
  /** The instrument's streams beyond trades and depth. */
  sources(ins: Instrument): Source[]
  /** The venue's requests, subscriptions, keep-alive and REST (protocol.ts). */
  protocol(market: Market): Protocol
  /** How the venue writes prices: a fault's `price-number` breaks string prices, `price-string` number ones. */
  readonly prices: 'string' | 'number'
  /** Whether the venue's book messages carry a checksum (a `checksum` fault corrupts it). */
  readonly checksums: boolean
  /**
   * The venue's book service restarting (a `restart` fault): the instrument numbers its book afresh, and
   * what it sends every subscriber now, if anything (Bybit: the book's snapshot). Absent: the venue shows none.
   */
  restart?(ins: Instrument, us: number): MarketEvent | null
}

/** Binance spot: one endpoint, `/ws` and `/stream`. */
const spot: Dialect = {
  venue: 'binance',
  routeOf: () => 'spot',
  pingIntervalMs: 20_000,
  pongTimeoutMs: 60_000,
  depthAggregateMs: 1000,
  defaultInstruments: ['BTCUSDT', 'ETHUSDT'],
  instruments: (symbols, seed) => symbols.map((s) => new Instrument(s, seed)),
  text: eventText,
  sources: () => [],
  protocol: (market) => binanceProtocol({
    endpoint: (pathname) => ({ route: 'spot', rest: pathname }),
    streamWord: /^[a-z0-9_]+@[a-z0-9_@]+$/,
    timeUnit: true,
    restPath: '/api/v3/depth',
    restLimit: { default: 100, max: 5000 },
  }, market),
  prices: 'string',
  checksums: false,
}

/**
 * Binance USD-M futures: depth on `/public`, aggregate trades, mark prices and liquidations on `/market`
 * (the WebSocket change notice of 2026-03-06); a path without either is the public endpoint's, as Binance
 * documents ("connections that do not include a routed path will only receive data from the Public
 * endpoint"). `/private` (user data, by listenKey) is not simulated.
 */
const usdm: Dialect = {
  venue: 'binance-usdm',
  routeOf: (stream) => (stream.includes('@depth') ? 'public' : 'market'),
  pingIntervalMs: 3 * 60_000,
  pongTimeoutMs: 10 * 60_000,
  depthAggregateMs: 250,
  defaultInstruments: ['BTCUSDT', 'ETHUSDT'],
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
  protocol: (market) => binanceProtocol({
    endpoint(pathname) {
      const m = /^\/(public|market|private)(\/.*)?$/.exec(pathname)
      if (m === null) return { route: 'public', rest: pathname }
      return m[1] === 'private' ? null : { route: m[1]!, rest: m[2] ?? '' }
    },
    // Futures' stream names are camel case after the symbol (@aggTrade, @markPrice, @forceOrder).
    streamWord: /^[a-z0-9_]+@[A-Za-z0-9_@]+$/,
    timeUnit: false,
    restPath: '/fapi/v1/depth',
    restLimit: { default: 500, max: 1000 },
  }, market),
  prices: 'string',
  checksums: false,
}

/** Kraken spot, WebSocket v2 (kraken-market.ts): one endpoint, `/v2`, subscriptions by request; no server pings. */
const kraken: Dialect = {
  venue: 'kraken',
  routeOf: () => 'v2',
  // Kraken sends no websocket pings: the keep-alive is the client's requests (kraken-market.ts).
  pingIntervalMs: 3_600_000,
  pongTimeoutMs: 3_600_000,
  depthAggregateMs: 0,
  defaultInstruments: ['BTC/USD', 'ETH/USD'],
  instruments: (symbols, seed) => symbols.map((s) => new KrakenInstrument(s, seed)),
  text: krakenEventText,
  sources: () => [],
  protocol: krakenProtocol,
  prices: 'number',
  checksums: true,
}

/** The funding and liquidation streams of a venue's perpetuals (OKX, Bybit), pushed every `fundingMs` and at most every `liquidationMs`. */
function perpetualSources(fundingMs: number, liquidationMs: number): (ins: Instrument) => Source[] {
  return (ins) => {
    const p = ins as OkxInstrument | BybitInstrument
    return [
      { stream: p.fundingStream, intervalMs: fundingMs, make: (us) => p.nextMarkPrice(us) },
      { stream: p.liquidationStream, intervalMs: liquidationMs, make: (us) => p.nextForceOrder(us) },
    ]
  }
}

/** OKX v5's public websocket (okx-market.ts): perpetual swaps, subscriptions by request, text pings from the client. */
const okx: Dialect = {
  venue: 'okx',
  routeOf: () => 'public',
  // OKX sends no websocket pings: the client sends the text `ping` (okx-market.ts).
  pingIntervalMs: 3_600_000,
  pongTimeoutMs: 3_600_000,
  depthAggregateMs: 0,
  defaultInstruments: ['BTC-USDT-SWAP', 'ETH-USDT-SWAP'],
  instruments: okxInstruments,
  text: okxEventText,
  sources: perpetualSources(OKX_FUNDING_INTERVAL_MS, OKX_LIQUIDATION_INTERVAL_MS),
  protocol: okxProtocol,
  prices: 'string',
  checksums: true,
  restart: (ins) => { (ins as OkxInstrument).restartNumbering(); return null },
}

/** Bybit v5's public websocket, linear category (bybit-market.ts): USDT perpetuals, subscriptions by request, JSON pings from the client. */
const bybit: Dialect = {
  venue: 'bybit',
  routeOf: () => 'linear',
  // Bybit sends no websocket pings: the client sends {"op":"ping"} (bybit-market.ts).
  pingIntervalMs: 3_600_000,
  pongTimeoutMs: 3_600_000,
  depthAggregateMs: 0,
  defaultInstruments: ['BTCUSDT', 'ETHUSDT'],
  instruments: bybitInstruments,
  text: bybitEventText,
  sources: perpetualSources(BYBIT_TICKER_INTERVAL_MS, BYBIT_LIQUIDATION_INTERVAL_MS),
  protocol: bybitProtocol,
  prices: 'string',
  checksums: false,
  restart: (ins, us) => { (ins as BybitInstrument).restartNumbering(); return { kind: 'bookSnapshot', ins, us } },
}

/** Deribit's API v2 (deribit-market.ts): JSON-RPC over one websocket, perpetuals, heartbeats with test requests. */
const deribit: Dialect = {
  venue: 'deribit',
  routeOf: () => 'v2',
  // Deribit's keep-alive is its heartbeat with test requests (deribit-market.ts), not websocket pings.
  pingIntervalMs: 3_600_000,
  pongTimeoutMs: 3_600_000,
  depthAggregateMs: 0,
  defaultInstruments: ['BTC-PERPETUAL', 'ETH-PERPETUAL'],
  instruments: deribitInstruments,
  text: deribitEventText,
  sources(ins) {
    const d = ins as DeribitInstrument
    return [d.tickerStream, d.perpetualStream].map((stream) => ({ stream, intervalMs: DERIBIT_FUNDING_INTERVAL_MS, make: (us: number) => d.nextMarkPrice(us) }))
  },
  protocol: deribitProtocol,
  prices: 'number',
  checksums: false,
}

/** Coinbase Advanced Trade's market data (coinbase-market.ts): subscriptions by request, every connection's messages numbered. */
const coinbase: Dialect = {
  venue: 'coinbase',
  routeOf: () => 'market',
  // Coinbase's keep-alive is its heartbeats channel, not websocket pings.
  pingIntervalMs: 3_600_000,
  pongTimeoutMs: 3_600_000,
  depthAggregateMs: 0,
  defaultInstruments: ['BTC-USD', 'ETH-USD'],
  instruments: (symbols, seed) => symbols.map((s) => new CoinbaseInstrument(s, seed)),
  text: coinbaseEventText,
  sources: () => [],
  protocol: coinbaseProtocol,
  prices: 'string',
  checksums: false,
}

export const DIALECTS: Readonly<Record<SimulatedVenue, Dialect>> = { binance: spot, 'binance-usdm': usdm, kraken, okx, bybit, deribit, coinbase }

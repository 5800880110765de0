/**
 * Registry of venue adapters by the name used in storage paths (`venue=<venue>`) and on the command line
 * (`--venue binance`).
 */
import type { VenueAdapter } from './adapter.js'
import { binanceSpot, createBinanceSpotAdapter } from './binance.js'
import { binanceUsdm, createBinanceUsdmAdapter } from './binance-usdm.js'
import { bybit, bybitInverse, bybitSpot, createBybitAdapter, type BybitOptions } from './bybit.js'
import { coinbase, createCoinbaseAdapter } from './coinbase.js'
import { createDeribitAdapter, deribit } from './deribit.js'
import { createKrakenAdapter, kraken } from './kraken.js'
import { createOkxAdapter, okx } from './okx.js'

export type { VenueAdapter } from './adapter.js'

const adapters = new Map<string, VenueAdapter>([binanceSpot, binanceUsdm, bybit, bybitInverse, bybitSpot, coinbase, deribit, kraken, okx].map((a) => [a.name, a]))

/** The adapter registered under `name`, or undefined. */
export function findVenue(name: string): VenueAdapter | undefined {
  return adapters.get(name)
}

/** The adapter registered under `name`; throws a RangeError naming the known venues when there is none. */
export function getVenue(name: string): VenueAdapter {
  const a = adapters.get(name)
  if (!a) throw new RangeError(`unknown venue ${JSON.stringify(name)}; known: ${venueNames().join(', ')}`)
  return a
}

/** Names of the registered venues, sorted. */
export function venueNames(): string[] {
  return [...adapters.keys()].sort()
}

/** Register an adapter (e.g. a user's own venue, or Binance with other options under another name). */
export function registerVenue(adapter: VenueAdapter): void {
  if (adapters.has(adapter.name)) throw new Error(`venue ${JSON.stringify(adapter.name)} is already registered`)
  adapters.set(adapter.name, adapter)
}

/** Where a recorder reaches a venue, when not at its public endpoints (a simulator, a proxy, a testnet). */
export interface VenueEndpoints {
  /** The websocket base URL (Binance: `wss://data-stream.binance.vision`). */
  ws?: string
  /** The REST base URL (Binance: `https://api.binance.com`). */
  rest?: string
}

/**
 * The recorder's adapter for venue `name` at `endpoints`; throws a RangeError naming the venues it knows.
 * Binance is recorded through its combined streams, whose every payload names the stream it belongs to.
 */
export function venueAt(name: string, endpoints: VenueEndpoints): VenueAdapter {
  const at = { ...(endpoints.ws ? { wsBase: endpoints.ws } : {}), ...(endpoints.rest ? { restBase: endpoints.rest } : {}) }
  const ws = endpoints.ws ? { wsBase: endpoints.ws } : {}
  const bybitCategory: Record<string, BybitOptions['category']> = { [bybit.name]: 'linear', [bybitSpot.name]: 'spot', [bybitInverse.name]: 'inverse' }
  if (name === binanceSpot.name) return createBinanceSpotAdapter({ combined: true, ...at })
  if (name === binanceUsdm.name) return createBinanceUsdmAdapter(at)
  // One Kraken adapter a recorder: its connections share the instrument precisions its checksums need.
  if (name === kraken.name) return createKrakenAdapter(ws)
  if (name === okx.name) return createOkxAdapter(ws)
  if (name === coinbase.name) return createCoinbaseAdapter(ws)
  if (name === deribit.name) return createDeribitAdapter(ws)
  if (name in bybitCategory) return createBybitAdapter({ ...ws, category: bybitCategory[name]! })
  throw new RangeError(`no recorder for venue ${JSON.stringify(name)}; it records: ${venueNames().join(', ')}`)
}

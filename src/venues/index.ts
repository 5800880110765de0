/**
 * Registry of venue adapters by the name used in storage paths (`venue=<venue>`) and on the command line
 * (`--venue binance`).
 */
import type { VenueAdapter } from './adapter.js'
import { binanceSpot } from './binance.js'

export type { VenueAdapter } from './adapter.js'

const adapters = new Map<string, VenueAdapter>([[binanceSpot.name, binanceSpot]])

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

import { z } from 'zod'
import { UsageError } from '../../core/errors.js'
import { parseHourName } from '../../formats/record/journal/journal.js'
import { CHANNELS, type Channel } from '../../formats/record/types.js'
import type { VenueAdapter } from '../../venues/adapter.js'
import { findVenue, venueNames } from '../../venues/index.js'

/** The options every step of a seal names its hour by. */
export const sealHourOptions = {
  venue: z.string().min(1),
  channel: z.enum(CHANNELS as [string, ...string[]]),
  hour: z.string().refine((s) => parseHourName(s) !== null, 'must be a UTC hour like 2026-10-03T14'),
}

/** The venue adapter and channel the options name, and the hour's start: a usage error naming the option otherwise. */
export function sealedHourOf(o: { venue: string; channel: string; hour: string }): { venue: VenueAdapter; channel: Channel; hourStart: bigint } {
  const venue = findVenue(o.venue)
  if (!venue) throw new UsageError('usage.unknown-venue', `unknown venue "${o.venue}" (known: ${venueNames().join(', ')})`, { location: { field: 'venue' } })
  if (!venue.channels.includes(o.channel as Channel)) throw new UsageError('usage.unknown-channel', `venue ${o.venue} has no channel ${o.channel} (it has ${venue.channels.join(', ')})`, { location: { field: 'channel' } })
  return { venue, channel: o.channel as Channel, hourStart: parseHourName(o.hour)! }
}

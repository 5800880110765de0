/**
 * After a test stops a daemon: seals, through the CLI, every hour it left unsealed, from the one after the
 * chain's last sealed hour to the last hour journaled, that one as a stopped recorder's (--recorder-stopped).
 * A daemon on a simulated clock hundreds of times real time may, on a loaded machine, have run (and sealed)
 * hours past the one a test waited for: the test then still sees every frame sealed, once.
 */
import { spawnSync } from 'node:child_process'
import { HOUR_NS, hourName, listJournalFiles, listJournalReplicas } from '../../src/formats/record/journal/journal.js'
import { chainHours } from '../../src/formats/record/seal/seal.js'
import { childEnv } from './io.js'

export interface SealRest {
  /** Every hour from the chain's first to the last journaled, sealed by the daemon or here. */
  hours: bigint[]
  /** The exit status of each seal made here (0 for all when they all succeeded). */
  statuses: (number | null)[]
}

export async function sealRest(cli: string, o: { root: string; journal: string; venue: string; channel: string; recorder: string; key: string }): Promise<SealRest> {
  const ids = { recorder: o.recorder, venue: o.venue, channel: o.channel }
  const sealed = await chainHours(o.root, ids)
  let last: bigint | null = null
  for (const replica of await listJournalReplicas(o.journal)) {
    const files = await listJournalFiles(o.journal, replica)
    const h = files[files.length - 1]?.hour
    if (h !== undefined && (last === null || h > last)) last = h
  }
  const statuses: (number | null)[] = []
  const first = sealed.length > 0 ? sealed[sealed.length - 1]! + HOUR_NS : last
  if (last !== null && first !== null) {
    for (let h = first; h <= last; h += HOUR_NS) {
      const r = spawnSync(process.execPath, [cli, 'run', 'seal-hour', '--venue', o.venue, '--channel', o.channel, '--hour', hourName(h), '--journal', o.journal, '--out', o.root, '--key', o.key, '--recorder', o.recorder, ...(h === last ? ['--recorder-stopped'] : [])], { encoding: 'utf8', env: childEnv() })
      statuses.push(r.status)
      if (r.status !== 0) process.stderr.write(`seal-hour ${hourName(h)}: ${r.stderr}`)
    }
  }
  return { hours: await chainHours(o.root, ids), statuses }
}

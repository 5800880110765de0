/**
 * The venue simulator's truth: what it sent to which connection, and every fault it injected, as JSON
 * lines (docs/simulator.md, "Truth"). Kept in memory for tests, or written to a file as it happens, a
 * chunk per step of the simulator, so a long run holds no more than a step's lines.
 */
import { once } from 'node:events'
import type { WriteStream } from 'node:fs'
import { open } from 'node:fs/promises'
import type { Fault, SimulatedVenue } from './faults.js'

/** Times are simulated, in microseconds since the epoch. Connections are `c1`, `c2`, ... in the order accepted. */
export type TruthRecord =
  | { kind: 'start'; simTimeUs: number; venue: SimulatedVenue; seed: number; instruments: string[]; rate: number; depthIntervalMs: number }
  /** A frame's text, sent to the connections in `to`; `sentUs` when sent later than made (a stall that resumed). */
  | { kind: 'frame'; simTimeUs: number; stream: string; to: string[]; text: string; sentUs?: number }
  /** A reply to a client's request (SUBSCRIBE acknowledgements, errors). */
  | { kind: 'reply'; simTimeUs: number; to: string; text: string; sentUs?: number }
  | { kind: 'open'; simTimeUs: number; conn: string; replica: string | null; path: string }
  | { kind: 'subscribe' | 'unsubscribe'; simTimeUs: number; conn: string; streams: string[] }
  /** `by`: who closed (the venue: a fault, the 24-hour limit, a missing pong, a slow reader, shutdown). */
  | { kind: 'close'; simTimeUs: number; conn: string; by: 'venue' | 'client'; code: number; reason: string; why?: string }
  | { kind: 'rest'; simTimeUs: number; path: string; status: number; text: string }
  | { kind: 'fault'; simTimeUs: number; index: number; fault: Fault; applied: boolean; detail: Record<string, unknown> }

export interface Truth {
  /** In memory only when kept (no file). */
  readonly records: readonly TruthRecord[]
  add(record: TruthRecord): void
  /** Writes what was added since the last flush (the simulator calls it after each step). */
  flush(): void
  close(): Promise<void>
}

/** A truth kept in memory (`keep`), written to `file` (which must not exist yet), both or neither. */
export async function openTruth(file: string | undefined, keep: boolean): Promise<Truth> {
  const records: TruthRecord[] = []
  let out: WriteStream | undefined
  let failure: Error | undefined
  if (file !== undefined) {
    // Opened here, so that a file that exists or cannot be made refuses the start rather than the first write.
    out = (await open(file, 'wx')).createWriteStream()
    out.on('error', (err) => { failure ??= err })
  }
  let pending = ''
  const flush = (): void => {
    if (out && pending !== '') {
      out.write(pending)
      pending = ''
    }
  }
  return {
    records,
    add(record) {
      if (keep) records.push(record)
      if (out) pending += JSON.stringify(record) + '\n'
    },
    flush,
    async close() {
      if (!out) return
      flush()
      out.end()
      if (!out.closed) await once(out, 'close').catch(() => {})
      if (failure) throw failure
    },
  }
}

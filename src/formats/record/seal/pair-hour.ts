/**
 * The first step of a seal: an hour's journal events, both replicas, paired into final frames in frame-time
 * order (merge.ts FramePairing) and packed into batches for the step that writes the hour's files, with
 * what the journal itself shows about the hour gathered on the way: each replica's coverage, clock bounds
 * and frame counts, checksum failures, the recorder's connection-wide sequence breaks, torn or corrupt
 * journal files. Batches come first, in order; the hour's facts last.
 */
import type { Measured } from '../../../core/items.js'
import type { VenueAdapter } from '../../../venues/adapter.js'
import { CoverageTracker, type ReplicaCoverage } from './coverage.js'
import { FrameBatchWriter, type FrameBatch } from './frame-batch.js'
import { HOUR_NS, isRestated, journalFilePath, listJournalFiles, locateJournalReplicas, readJournalFile, type JournalBatch, type JournalDirs } from '../journal/journal.js'
import type { ChecksumFailure, SequenceGap } from '../manifest.js'
import { FramePairing, PAIRING_WINDOW_NS, ReceiptInput } from '../merge.js'
import { formatTime } from '../time.js'
import { REPLICAS, eventTime, type Channel, type JournalEvent, type Replica } from '../types.js'

/** A batch of paired frames; the step that reads it hands its buffer back to `recycle` to be filled again. */
export class PairedFrameBatch implements FrameBatch, Measured {
  readonly kind = 'paired-frames'
  constructor(readonly bytes: Uint8Array, readonly frames: number, readonly recycle: (buffer: ArrayBuffer) => void) {}
  get itemCount(): number { return this.frames }
  get byteCount(): number { return this.bytes.byteLength }
}

export function isPairedFrameBatch(x: unknown): x is PairedFrameBatch {
  return x instanceof PairedFrameBatch
}

/** What the journal showed about an hour, apart from its frames' contents: for its manifest. */
export class HourFacts {
  readonly kind = 'hour-facts'
  constructor(
    readonly hourStart: bigint,
    /** By replica, a then b. */
    readonly frames: readonly number[],
    readonly boundMax: readonly (number | null)[],
    readonly unbounded: readonly number[],
    readonly both: number,
    readonly oneOnly: number,
    /** A frame of the hour had no receipt with a clock bound. */
    readonly offsetUnknown: boolean,
    readonly frameTimeBounds: { earliest: string; latest: string } | undefined,
    readonly covered: Record<Replica, ReplicaCoverage>,
    /** Coverage states gap-free runs: the venue's trades carry a sequence to detect a gap by. */
    readonly tracksRuns: boolean,
    readonly checksumFailures: ChecksumFailure[],
    readonly connectionGaps: SequenceGap[],
    readonly problems: { torn: boolean; corrupt: boolean },
  ) {}
}

export function isHourFacts(x: unknown): x is HourFacts {
  return x instanceof HourFacts
}

/** Everything the hourly manifest states that the frames themselves show, gathered line by line. */
class HourStats {
  /** Frame times as orders of the pairing (FramePairing.timeOf gives the instants). */
  earliest: number | null = null
  latest: number | null = null
  /** By replica, a then b. */
  readonly frames = [0, 0]
  readonly boundMax: (number | null)[] = [null, null]
  readonly unbounded = [0, 0]
  both = 0
  oneOnly = 0
  offsetUnknown = false

  /** The final frame in `slot` of `pairing`. */
  add(pairing: FramePairing, slot: number): void {
    const order = pairing.frameOrder(slot)
    if (this.earliest === null) this.earliest = order
    this.latest = order
    const count = pairing.receiptCount(slot)
    if (count === 2) this.both++
    else this.oneOnly++
    let bounded = false
    for (let r = 2 * slot; r < 2 * slot + count; r++) {
      const at = pairing.replica(r) === 'a' ? 0 : 1
      this.frames[at]!++
      if (!pairing.hasClock(r)) this.unbounded[at]!++
      else {
        bounded = true
        const bound = pairing.clockErrorBound(r)
        const max = this.boundMax[at]!
        if (max === null || bound > max) this.boundMax[at] = bound
      }
    }
    if (!bounded) this.offsetUnknown = true
  }
}

export interface PairHourOptions {
  /** The journal: a directory holding both replicas, or one directory per replica. */
  journal: JournalDirs
  venue: VenueAdapter
  channel: Channel
  /** Start of the UTC hour, ns. */
  hourStart: bigint
  windowNs?: bigint
}

/**
 * Pairs the hour's journal batches (the hour and the pairing window before it, as journal-read gives them):
 * gives the final frames in packed batches, in frame-time order (frames of the window before the hour only
 * seed the venue's sequences), then the hour's {@link HourFacts}.
 */
export async function* pairHour(o: PairHourOptions, batches: AsyncIterable<JournalBatch>): AsyncGenerator<PairedFrameBatch | HourFacts> {
  const start = o.hourStart
  const end = start + HOUR_NS
  const hourFiles = new Set([...await locateJournalReplicas(o.journal)].map(([replica, dir]) => journalFilePath(dir, replica, start)))
  const tracksRuns = o.channel === 'trades' && o.venue.tradeSequence !== false
  const coverage = Object.fromEntries(REPLICAS.map((r) => [r, new CoverageTracker(r, start, end, tracksRuns)])) as Record<Replica, CoverageTracker>
  const stats = new HourStats()
  const checksumFailures: ChecksumFailure[] = []
  const connectionGaps: SequenceGap[] = []
  const problems = { torn: false, corrupt: false }
  const ready: PairedFrameBatch[] = []
  const packer: FrameBatchWriter = new FrameBatchWriter((batch) => ready.push(new PairedFrameBatch(batch.bytes, batch.frames, (buffer) => packer.reuse(buffer))))
  /** The hour's start and end as orders of the pairing, once it has had its first receipt. */
  let hourOrders: { start: number; end: number } | undefined
  const pairing = new FramePairing((slot) => {
    hourOrders ??= { start: pairing.orderOfTime(start), end: pairing.orderOfTime(end) }
    const order = pairing.frameOrder(slot)
    if (order >= hourOrders.end) return
    const inHour = order >= hourOrders.start
    if (inHour) stats.add(pairing, slot)
    packer.add(pairing, slot, inHour)
  }, o.windowNs ?? PAIRING_WINDOW_NS)
  const receipt = new ReceiptInput()

  for await (const batch of batches) {
    for (const p of batch.problems) {
      // A problem counts for this hour when it lies in one of this hour's files.
      if (p.file === undefined || !hourFiles.has(p.file)) continue
      if (p.kind === 'torn') problems.torn = true
      else problems.corrupt = true
    }
    // Frames come off the tape without becoming event objects; other events are decoded there.
    const tape = batch.tape
    const events = tape ? undefined : batch.events
    const count = tape ? tape.length : events!.length
    for (let i = 0; i < count; i++) {
      const e = tape ? tape.decodedEvent(i) : events![i]!
      if (e === undefined || e.kind === 'frame') {
        const t = e ? e.receiveTime : tape!.time(i)
        if (t < end) coverage[e ? e.replica : tape!.frameReplica(i)].frame(e ? e.connection : tape!.frameConnection(i), t)
        else coverage[e ? e.replica : tape!.frameReplica(i)].after(t, false)
        if (e) receipt.setEvent(e)
        else tape!.frameInto(i, receipt)
        pairing.push(receipt)
        // The next step reads a batch before it asks for the next: that is the backpressure.
        while (ready.length > 0) yield ready.shift()!
        continue
      }
      const t = eventTime(e)
      if (t < end) coverage[e.replica].add(e)
      else if (!isRestated(e)) coverage[e.replica].after(t, e.kind === 'recorder-start')
      if (e.kind === 'checksum-mismatch' && t >= start && t < end) {
        checksumFailures.push({ instrument: e.instrument, receive_time: formatTime(e.time), expected: e.expected, computed: e.computed })
      }
      // Breaks in a count of one connection's messages: the recorder's own, journaled as it saw them.
      if (e.kind === 'sequence-break' && e.instrument === o.venue.connectionWide && t >= start && t < end && !isRestated(e)) {
        connectionGaps.push({ instrument: e.instrument, after_id: e.afterId, before_id: e.beforeId })
      }
    }
  }
  pairing.flush()
  packer.end()
  while (ready.length > 0) yield ready.shift()!

  // A replica silent from before the hour's end to past what was read: its next record says whether it was down.
  for (const [replica, journal] of await locateJournalReplicas(o.journal)) {
    if (!coverage[replica].awaitsNextRecord) continue
    const next = await firstRecordFrom(journal, replica, end)
    if (next) coverage[replica].after(eventTime(next), next.kind === 'recorder-start')
    else coverage[replica].noRecordAfter()
  }
  const covered = Object.fromEntries(REPLICAS.map((r) => [r, coverage[r].finish()])) as Record<Replica, ReplicaCoverage>
  const bounds = stats.earliest !== null && stats.latest !== null ? { earliest: formatTime(pairing.timeOf(stats.earliest)), latest: formatTime(pairing.timeOf(stats.latest)) } : undefined
  yield new HourFacts(
    start, stats.frames, stats.boundMax, stats.unbounded, stats.both, stats.oneOnly, stats.offsetUnknown, bounds, covered, tracksRuns,
    checksumFailures.sort((x, y) => (x.receive_time < y.receive_time ? -1 : x.receive_time > y.receive_time ? 1 : 0)), connectionGaps, problems,
  )
}

/** A replica's first record at or after `t` that is not a restatement, from its hour files; null when there is none. */
async function firstRecordFrom(journal: string, replica: Replica, t: bigint): Promise<JournalEvent | null> {
  for (const f of await listJournalFiles(journal, replica)) {
    if (f.hour + HOUR_NS <= t) continue
    for await (const b of readJournalFile(f.path)) {
      for (const e of b.events) if (!isRestated(e) && eventTime(e) >= t) return e
    }
  }
  return null
}

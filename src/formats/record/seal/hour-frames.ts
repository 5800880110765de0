/**
 * What an hour's frames become once paired: raw-file lines, table rows, venue sequence gaps, trades stated
 * differently by two lines and unrepresentable frames. `HourFrames` runs on a thread of its own (hour-frames-worker.ts)
 * while the sealer's main thread reads the journal and pairs receipts; its files are compressed and
 * encoded on a further thread (hour-files.ts), so an hour's work spreads over the cores.
 */
import { join } from 'node:path'
import { OrderedJob, siblingWorkerUrl } from '../../../core/ordered-worker.js'
import type { SequenceSpan, SequenceState, VenueAdapter } from '../../../venues/adapter.js'
import type { FrameBatch, PackedFrame } from './frame-batch.js'
import { HourFilesWriter } from './hour-files.js'
import type { FileEntry, SequenceGap } from '../manifest.js'
import { RawLineWriter } from './raw-writer.js'
import { TradeCopies, type ConflictCandidates } from './trade-copies.js'
import { RowGroupCutter, tableFileName, type RowGroupColumns } from '../tables.js'
import { CHANNEL_TABLES, type Channel, type TableName, type TableRow } from '../types.js'

/**
 * Spans a reorder window apart in frame time can be out of venue order: two replicas with different
 * latencies make a later trade's frame time earlier than the one before it. So spans wait, per sequence, in
 * a small buffer kept sorted by their first id and are judged smallest first; a true gap survives any
 * reordering, a reordering within the buffer does not make one.
 */
const SEQUENCE_REORDER_SPANS = 256

/**
 * A span that starts the venue's numbering afresh: a snapshot, or an update numbered below the one it follows
 * (OKX's seqId below its prevSeqId after a maintenance reset; OKX's keep-alive, seqId = prevSeqId, is not one). What comes after it in frame time is numbered from it, so nothing is
 * reordered across it: spans are sorted only between such barriers (Bybit's `u` = 1 after a restart would
 * otherwise be judged before the old book's last updates).
 */
const isBarrier = (span: SequenceSpan) => span.snapshot || span.last < span.first - 1n

/** One sequence's spans waiting to be judged, oldest first from `head`, and the sequence's state. */
interface PendingSpans {
  items: { span: SequenceSpan; inHour: boolean }[]
  head: number
  /** The waiting spans are in the order judge's sort would give them (sorted, and no barrier among them). */
  sorted: boolean
  barriers: number
  state: SequenceState | undefined
}

/** Judges a venue's sequence spans in venue order, within a reorder window, reporting each gap in the hour. */
export class SequenceChecker {
  /** By sequence, then instrument. */
  private readonly pending = { trades: new Map<string, PendingSpans>(), book: new Map<string, PendingSpans>() }

  constructor(private readonly venue: VenueAdapter, private readonly onGap: (gap: SequenceGap) => void) {}

  add(span: SequenceSpan, inHour: boolean): void {
    const bySequence = this.pending[span.sequence]
    let p = bySequence.get(span.instrument)
    if (!p) bySequence.set(span.instrument, (p = { items: [], head: 0, sorted: false, barriers: 0, state: undefined }))
    const items = p.items
    const item = { span, inHour }
    if (isBarrier(span)) p.barriers++
    const last = items.length > p.head ? items[items.length - 1]! : undefined
    if (p.sorted && p.barriers === 0 && last && last.span.first > span.first) {
      // The waiting spans are sorted by first id: insert after every span with an equal or smaller first id,
      // which is where the stable sort in judge would put a span pushed at the end.
      const first = span.first
      let lo = p.head
      let hi = items.length
      while (lo < hi) {
        const mid = (lo + hi) >>> 1
        if (items[mid]!.span.first <= first) lo = mid + 1
        else hi = mid
      }
      items.splice(lo, 0, item)
    } else {
      items.push(item)
      // In order (the usual case) a sorted list stays sorted; otherwise judge sorts it.
      if (!(p.sorted && p.barriers === 0 && (!last || last.span.first <= span.first))) p.sorted = false
    }
    if (items.length - p.head > SEQUENCE_REORDER_SPANS) this.judge(p, items.length - p.head - SEQUENCE_REORDER_SPANS)
  }

  flush(): void {
    for (const bySequence of [this.pending.trades, this.pending.book]) for (const p of bySequence.values()) this.judge(p, p.items.length - p.head)
  }

  private judge(p: PendingSpans, count: number): void {
    if (!(p.sorted && p.barriers === 0)) {
      // Barriers keep their place; the spans between two are sorted among themselves (stably).
      const waiting = p.items.slice(p.head)
      const byFirst = (x: { span: SequenceSpan }, y: { span: SequenceSpan }) => (x.span.first < y.span.first ? -1 : x.span.first > y.span.first ? 1 : 0)
      let from = 0
      for (let i = 0; i <= waiting.length; i++) {
        if (i < waiting.length && !isBarrier(waiting[i]!.span)) continue
        if (i - from > 1) waiting.splice(from, i - from, ...waiting.slice(from, i).sort(byFirst))
        from = i + 1
      }
      p.items = waiting
      p.head = 0
      p.sorted = p.barriers === 0
    }
    const items = p.items
    for (let n = 0; n < count; n++) {
      const { span, inHour } = items[p.head]!
      items[p.head++] = undefined as never
      if (isBarrier(span)) p.barriers--
      const verdict = this.venue.sequence(p.state, span)
      p.state = verdict.state
      if (inHour && verdict.verdict === 'gap') this.onGap({ instrument: span.instrument, after_id: verdict.afterId, before_id: verdict.beforeId })
    }
    if (p.head > 4096 && p.head * 2 > items.length) {
      items.splice(0, p.head)
      p.head = 0
    }
  }
}

export interface HourFramesResult {
  files: FileEntry[]
  rawLines: number
  sequenceGaps: SequenceGap[]
  /** Raw-file line indices of frames kept in the raw file only. */
  unrepresentable: number[]
  /** The trades whose lines stated them differently, and those lines: to be read back (seal.ts). */
  conflictCandidates: ConflictCandidates
}

/**
 * The frames of one hour, in frame-time order: frames of the previous hour's last pairing window
 * (`inHour` false) only seed the venue sequences; every other frame becomes a raw-file line and its rows.
 */
export class HourFrames {
  private readonly files: HourFilesWriter
  private readonly raw: RawLineWriter
  private readonly cutters: Map<TableName, RowGroupCutter>
  private readonly tablePaths: Map<TableName, string>
  private readonly sequences: SequenceChecker
  private readonly gaps: SequenceGap[] = []
  private readonly unrepresentable: number[] = []
  private readonly tradeCopies = new TradeCopies()
  private waitFor: Promise<void> | undefined

  constructor(dir: string, private readonly venue: VenueAdapter, private readonly channel: Channel, createdBy: string) {
    const tables = CHANNEL_TABLES[channel]
    this.files = HourFilesWriter.open(dir, tables, createdBy, (buffer) => this.raw.reuse(buffer))
    this.raw = new RawLineWriter((chunk) => { this.waitFor = this.files.raw(chunk) ?? this.waitFor })
    this.cutters = new Map(tables.map((t) => [t, new RowGroupCutter(t, {})]))
    this.tablePaths = new Map(tables.map((t) => [t, join(dir, tableFileName(t))]))
    this.sequences = new SequenceChecker(venue, (gap) => this.gaps.push(gap))
  }

  /** Handles one frame; returns a promise only when the files' thread asks to wait. */
  frame(frame: PackedFrame, inHour: boolean): Promise<void> | undefined {
    const cls = this.venue.classify(this.channel, frame.payload, frame.binary)
    const spans = cls.kind === 'control' ? undefined : cls.sequences
    // A connection-wide count is judged by the recorder, per connection (seal.ts states its breaks).
    if (spans) for (const span of spans) if (span.instrument !== this.venue.connectionWide) this.sequences.add(span, inHour)
    if (!inHour) return undefined
    const rawIndex = this.raw.lines
    this.raw.write(cls.kind === 'rows' || cls.kind === 'data' ? cls.exchangeTime : null, frame.tail)
    if (cls.kind === 'unrepresentable') this.unrepresentable.push(rawIndex)
    if (cls.kind === 'rows') {
      const cutter = this.cutters.get(cls.table)
      if (!cutter) this.unrepresentable.push(rawIndex)
      else {
        const rows = cls.rows as TableRow[]
        for (let i = 0; i < rows.length; i++) {
          // The class is made for this call alone: its rows become table rows in place (the same properties
          // in the same order as a copy with raw_index and receive_time added).
          const row = rows[i]!
          row.raw_index = rawIndex
          row.receive_time = frame.frameTime
          if (this.channel === 'trades') this.tradeCopies.add(row, rawIndex)
        }
        cutter.add(rows, this.tablePaths.get(cls.table)!, (g: RowGroupColumns) => { this.waitFor = this.files.group(g) ?? this.waitFor })
      }
    }
    const wait = this.waitFor
    this.waitFor = undefined
    return wait
  }

  /** Writes the last rows, lands every file and says what the frames showed. */
  async finish(): Promise<HourFramesResult> {
    this.sequences.flush()
    this.raw.end()
    for (const cutter of this.cutters.values()) {
      const rest = cutter.rest()
      if (rest) this.waitFor = this.files.group(rest) ?? this.waitFor
    }
    await this.waitFor
    const files = await this.files.finish(this.raw.lines)
    return {
      files, rawLines: this.raw.lines, sequenceGaps: this.gaps, unrepresentable: this.unrepresentable,
      conflictCandidates: this.tradeCopies.candidates(),
    }
  }

  abort(): Promise<void> {
    return this.files.abort()
  }
}

export interface OpenHourFrames {
  dir: string
  venue: string
  /** A module that registers the venue adapter (registerVenue) when the thread imports it; for adapters outside src/venues. */
  venueModule?: string
  channel: Channel
  createdBy: string
}

/**
 * The sealer's side of {@link HourFrames} on its thread: frames go over in packed batches
 * (frame-batch.ts, pair-hour.ts); a failure there rejects the next call.
 */
export class HourFramesWriter {
  private readonly job: OrderedJob<OpenHourFrames, FrameBatch, HourFramesResult>
  private recycle: ((buffer: ArrayBuffer) => void) | undefined

  private constructor(o: OpenHourFrames) {
    this.job = OrderedJob.open(siblingWorkerUrl(import.meta.url, 'hour-frames-worker'), o, { maxInFlight: 4, youngGenerationMb: 48, onReturned: (b) => this.recycle?.(b) })
  }

  static open(o: OpenHourFrames): HourFramesWriter {
    return new HourFramesWriter(o)
  }

  /**
   * A batch of final frames, in frame-time order; the thread takes its buffer over and, once it has read
   * it, hands it to `recycle` to be filled again. A promise only when the caller must wait.
   */
  batch(batch: FrameBatch, recycle: (buffer: ArrayBuffer) => void): Promise<void> | undefined {
    this.recycle = recycle
    return this.job.post({ bytes: batch.bytes, frames: batch.frames }, [batch.bytes.buffer as ArrayBuffer])
  }

  finish(): Promise<HourFramesResult> {
    return this.job.finish(null)
  }

  abort(): Promise<void> {
    return this.job.abort()
  }
}

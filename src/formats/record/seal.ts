import { randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { finished } from 'node:stream/promises'
import { CompressStream } from 'zstd-napi'
import { fsyncDir, writeFileAtomic } from '../../core/atomic-write.js'
import { PipeError, UsageError } from '../../core/errors.js'
import { createIncrementalHash } from '../../transforms/hash.js'
import type { SequenceSpan, SequenceState, VenueAdapter } from '../../venues/adapter.js'
import { CoverageTracker, uncoveredByBoth, type ReplicaCoverage } from './coverage.js'
import { HOUR_NS, journalFilePath, journalRangeFor, readJournalRange, type JournalBatch } from './journal.js'
import { signDetached } from './jws.js'
import type { PrivateSigningJwk } from './keys.js'
import {
  COMPLETENESS_REASONS, FORMAT_VERSION, dayDir, manifestBytes,
  type ChecksumFailure, type CompletenessReason, type Conflict, type ConflictLine, type DailyManifest, type FileEntry, type HourlyManifest, type ReplicaSummary, type SequenceGap,
} from './manifest.js'
import { FramePairer, PAIRING_WINDOW_NS, type MergedFrame } from './merge.js'
import { envelopeLine } from './raw-writer.js'
import { TableWriter, tableFileName } from './tables.js'
import { formatTime } from './time.js'
import { CHANNEL_TABLES, REPLICAS, eventTime, type Channel, type JournalEvent, type Replica, type TableName, type TableRow } from './types.js'

export interface SealHourOptions {
  root: string
  journal: string
  recorder: string
  venue: VenueAdapter
  channel: Channel
  /** Start of the UTC hour, ns. */
  hourStart: bigint
  key: PrivateSigningJwk
  createdBy: string
  windowNs?: bigint
}

export interface SealHourResult {
  status: 'sealed' | 'already-sealed'
  dir: string
  manifest: HourlyManifest
  /** The daily manifest written after hour 23, if this seal wrote one. */
  daily?: DailyManifest
}

const ROWS_PER_WRITE = 8192
const RAW_BATCH_BYTES = 1 << 20

const hourLabel = (ns: bigint) => formatTime(ns).slice(0, 13)
const dateOf = (ns: bigint) => formatTime(ns).slice(0, 10)
const isLastHourOfDay = (ns: bigint) => formatTime(ns).slice(11, 13) === '23'
const hourDirOf = (root: string, o: { recorder: string; venue: string; channel: string }, hourStart: bigint) =>
  join(root, dayDir(o.recorder, o.venue, o.channel, dateOf(hourStart)), `hour=${formatTime(hourStart).slice(11, 13)}`)

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, (err: NodeJS.ErrnoException) => { if (err.code === 'ENOENT') return false; throw err })
}

async function blake3File(path: string): Promise<string> {
  const hash = await createIncrementalHash('blake3')
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer)
  return hash.digestHex()
}

export async function blake3Hex(bytes: Uint8Array): Promise<string> {
  const hash = await createIncrementalHash('blake3')
  hash.update(bytes)
  return hash.digestHex()
}

/** The hours a chain already holds under a root, in order (from the day and hour directory names). */
async function chainHours(root: string, o: { recorder: string; venue: string; channel: string }): Promise<bigint[]> {
  const base = join(root, `recorder=${o.recorder}`, `venue=${o.venue}`, `channel=${o.channel}`)
  const days = await readdir(base).catch(() => [] as string[])
  const hours: bigint[] = []
  for (const day of days.filter((d) => /^date=\d{4}-\d{2}-\d{2}$/.test(d)).sort()) {
    for (const h of (await readdir(join(base, day))).filter((x) => /^hour=\d{2}$/.test(x)).sort()) {
      if (await exists(join(base, day, h, 'manifest.json'))) hours.push(BigInt(Date.parse(`${day.slice(5)}T${h.slice(5)}:00:00Z`)) * 1_000_000n)
    }
  }
  return hours
}

/** Writes raw.jsonl.zst: lines in, zstd out, hashing and counting the stored bytes. */
class RawFileWriter {
  private readonly compress = new CompressStream({ compressionLevel: 3 })
  private readonly file
  private pending: string[] = []
  private pendingBytes = 0
  rows = 0
  private size = 0
  private digest = ''

  private constructor(readonly path: string, private readonly hash: Awaited<ReturnType<typeof createIncrementalHash>>) {
    this.file = createWriteStream(path, { flags: 'wx' })
    this.compress.on('data', (chunk: Buffer) => { this.hash.update(chunk); this.size += chunk.byteLength })
    this.compress.pipe(this.file)
  }

  static async open(path: string): Promise<RawFileWriter> {
    return new RawFileWriter(path, await createIncrementalHash('blake3'))
  }

  /** Adds one line; returns a promise only when the compressor asks to wait (backpressure). */
  write(line: string): Promise<void> | undefined {
    this.pending.push(line)
    this.pendingBytes += line.length + 1
    this.rows++
    if (this.pendingBytes >= RAW_BATCH_BYTES) return this.flush()
    return undefined
  }

  private flush(): Promise<void> | undefined {
    const lines = this.pending
    if (lines.length === 0) return undefined
    // One pass from the strings into one buffer (UTF-8), rather than joining them into a string first.
    let size = lines.length
    for (let i = 0; i < lines.length; i++) size += lines[i]!.length
    let buf = Buffer.allocUnsafe(size * 3 <= RAW_BATCH_BYTES * 4 ? size * 3 : size)
    let pos = 0
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!
      if (buf.length - pos < line.length * 3 + 1) {
        const bigger = Buffer.allocUnsafe(Math.max(buf.length * 2, pos + line.length * 3 + 1))
        buf.copy(bigger, 0, 0, pos)
        buf = bigger
      }
      pos += buf.write(line, pos, 'utf8')
      buf[pos++] = 10
    }
    const ok = this.compress.write(buf.subarray(0, pos))
    this.pending = []
    this.pendingBytes = 0
    if (!ok) return new Promise((resolve) => this.compress.once('drain', resolve))
    return undefined
  }

  async finish(): Promise<FileEntry> {
    const wait = this.flush()
    if (wait) await wait
    this.compress.end()
    await finished(this.file)
    const fh = await open(this.path, 'r+')
    await fh.sync().finally(() => fh.close())
    this.digest = this.hash.digestHex()
    return { name: 'raw.jsonl.zst', size: this.size, blake3: this.digest, rows: this.rows }
  }
}

/**
 * The trade ids of one instrument seen so far. Venues number trades in sequence, so numeric ids are held
 * as sorted disjoint intervals — a million trades an hour take a handful of intervals, not a million map
 * entries (that map was most of the sealer's peak memory). Other ids fall back to a set.
 */
export class TradeIdSet {
  private readonly starts: number[] = []
  private readonly ends: number[] = []
  private readonly others = new Set<string>()

  /** Adds an id; true when it was already there. */
  add(id: string): boolean {
    if (!/^(0|[1-9][0-9]{0,14})$/.test(id)) {
      if (this.others.has(id)) return true
      this.others.add(id)
      return false
    }
    const n = Number(id)
    const { starts, ends } = this
    const last = ends.length - 1
    if (last >= 0 && n === ends[last]! + 1) { ends[last] = n; return false }
    let lo = 0
    let hi = starts.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (starts[mid]! <= n) lo = mid + 1
      else hi = mid
    }
    const i = lo - 1 // the last interval starting at or before n
    if (i >= 0 && n <= ends[i]!) return true
    const joinsLeft = i >= 0 && ends[i] === n - 1
    const joinsRight = lo < starts.length && starts[lo] === n + 1
    if (joinsLeft && joinsRight) { ends[i] = ends[lo]!; starts.splice(lo, 1); ends.splice(lo, 1) }
    else if (joinsLeft) ends[i] = n
    else if (joinsRight) starts[lo] = n
    else { starts.splice(lo, 0, n); ends.splice(lo, 0, n) }
    return false
  }
}

/** Everything the hourly manifest states that the frames themselves show, gathered line by line. */
class HourStats {
  earliest: bigint | null = null
  latest: bigint | null = null
  readonly frames = { a: 0, b: 0 }
  readonly boundMax: Record<Replica, bigint | null> = { a: null, b: null }
  readonly unbounded = { a: 0, b: 0 }
  both = 0
  oneOnly = 0
  offsetUnknown = false
  readonly unrepresentable: number[] = []
  readonly gaps: SequenceGap[] = []
  /** Trade ids seen, by instrument; and those seen on more than one line, which may be in conflict. */
  private readonly tradeIds = new Map<string, TradeIdSet>()
  readonly repeated = new Map<string, Set<string>>()

  add(frame: MergedFrame): void {
    if (this.earliest === null) this.earliest = frame.frameTime
    this.latest = frame.frameTime
    if (frame.receipts.length === 2) this.both++
    else this.oneOnly++
    let bounded = false
    for (const r of frame.receipts) {
      this.frames[r.replica]++
      if (r.clockErrorBound === undefined) this.unbounded[r.replica]++
      else {
        bounded = true
        const max = this.boundMax[r.replica]
        if (max === null || r.clockErrorBound > max) this.boundMax[r.replica] = r.clockErrorBound
      }
    }
    if (!bounded) this.offsetUnknown = true
  }

  /** Channel trades: notes the trade ids that more than one line carries (candidates for conflicts). */
  trade(row: TableRow): void {
    if (row.trade_id === null) return
    let ids = this.tradeIds.get(row.instrument)
    if (!ids) this.tradeIds.set(row.instrument, (ids = new TradeIdSet()))
    if (!ids.add(row.trade_id)) return
    let repeated = this.repeated.get(row.instrument)
    if (!repeated) this.repeated.set(row.instrument, (repeated = new Set()))
    repeated.add(row.trade_id)
  }

}

/**
 * Spans a reorder window apart in frame time can be out of venue order: two replicas with different
 * latencies make a later trade's frame time earlier than the one before it. So spans wait, per sequence, in
 * a small buffer kept sorted by their first id and are judged smallest first; a true gap survives any
 * reordering, a reordering within the buffer does not make one.
 */
const SEQUENCE_REORDER_SPANS = 256

interface PendingSpans {
  list: { span: SequenceSpan; inHour: boolean }[]
  /** The list is in the order judge's sort would give it (it was sorted and holds no snapshot). */
  sorted: boolean
  snapshots: number
}

class SequenceChecker {
  private readonly pending = new Map<string, PendingSpans>()
  private readonly states = new Map<string, SequenceState>()

  constructor(private readonly venue: VenueAdapter, private readonly onGap: (gap: SequenceGap) => void) {}

  add(span: SequenceSpan, inHour: boolean): void {
    const key = `${span.sequence}\u0000${span.instrument}`
    let p = this.pending.get(key)
    if (!p) this.pending.set(key, (p = { list: [], sorted: false, snapshots: 0 }))
    const list = p.list
    const item = { span, inHour }
    if (span.snapshot) p.snapshots++
    if (p.sorted && p.snapshots === 0) {
      // The list is sorted by first id: insert after every span with an equal or smaller first id, which is
      // where the stable sort in judge would put a span pushed at the end.
      const first = span.first
      let lo = 0
      let hi = list.length
      while (lo < hi) {
        const mid = (lo + hi) >>> 1
        if (list[mid]!.span.first <= first) lo = mid + 1
        else hi = mid
      }
      if (lo === list.length) list.push(item)
      else list.splice(lo, 0, item)
    } else {
      list.push(item)
      p.sorted = false
    }
    if (list.length > SEQUENCE_REORDER_SPANS) this.judge(key, p, list.length - SEQUENCE_REORDER_SPANS)
  }

  flush(): void {
    for (const [key, p] of this.pending) this.judge(key, p, p.list.length)
  }

  private judge(key: string, p: PendingSpans, count: number): void {
    const list = p.list
    if (!(p.sorted && p.snapshots === 0)) {
      // Snapshots keep their place: only row-carrying updates are reordered among themselves.
      list.sort((x, y) => (x.span.snapshot || y.span.snapshot ? 0 : x.span.first < y.span.first ? -1 : x.span.first > y.span.first ? 1 : 0))
      p.sorted = p.snapshots === 0
    }
    const judged = count === 1 ? [list.shift()!] : list.splice(0, count)
    for (const { span, inHour } of judged) {
      if (span.snapshot) p.snapshots--
      const verdict = this.venue.sequence(this.states.get(key), span)
      this.states.set(key, verdict.state)
      if (inHour && verdict.verdict === 'gap') this.onGap({ instrument: span.instrument, after_id: verdict.afterId, before_id: verdict.beforeId })
    }
  }
}

/** Calls `each` with every line (without its newline) of a written raw file, in order. */
async function eachRawLine(rawPath: string, each: (line: Buffer, index: number) => Promise<void>): Promise<void> {
  // In-process: a rare path over one hour's file, not worth a worker thread (which a TypeScript loader in
  // scripts and tests cannot reach either).
  const { zstdDecodeInProcess, decodeOptions } = await import('../../transforms/zstd.js')
  let index = 0
  let carry = Buffer.alloc(0)
  const source = createReadStream(rawPath) as AsyncIterable<Uint8Array>
  for await (const chunk of zstdDecodeInProcess(source, decodeOptions.parse({}))) {
    const data = Buffer.concat([carry, chunk])
    let pos = 0
    for (let nl = data.indexOf(10, pos); nl >= 0; nl = data.indexOf(10, pos)) {
      await each(data.subarray(pos, nl), index++)
      pos = nl + 1
    }
    carry = Buffer.from(data.subarray(pos))
  }
}

/**
 * Seals one UTC hour of one channel from the journal into `root`, exactly as record format v1 lays it out,
 * and after hour 23 the day. Idempotent: an hour whose manifest exists is left as it is. Crash-safe: the hour
 * is built in a temporary directory beside its final one and renamed into place only when complete.
 */
export async function sealHour(o: SealHourOptions, batches?: AsyncIterable<JournalBatch>): Promise<SealHourResult> {
  const start = o.hourStart
  const end = start + HOUR_NS
  const window = o.windowNs ?? PAIRING_WINDOW_NS
  const ids = { recorder: o.recorder, venue: o.venue.name, channel: o.channel }
  const finalDir = hourDirOf(o.root, ids, start)
  const where = { file: finalDir }
  if (await exists(join(finalDir, 'manifest.json'))) {
    const manifest = JSON.parse(await readFile(join(finalDir, 'manifest.json'), 'utf8')) as HourlyManifest
    const result: SealHourResult = { status: 'already-sealed', dir: finalDir, manifest }
    // A seal stopped between renaming hour 23 into place and writing the day finishes the day now.
    if (isLastHourOfDay(start) && !(await exists(join(dirname(finalDir), 'manifest.json')))) result.daily = await sealDay(o, dateOf(start))
    return result
  }
  const chain = await chainHours(o.root, ids)
  let previous: string | null = null
  if (chain.length > 0) {
    const last = chain[chain.length - 1]!
    if (last >= end) throw new UsageError('seal.before-chain-end', `the chain already holds hours after ${hourLabel(start)} (up to ${hourLabel(last)}); hours are sealed in order`, { location: where })
    if (last !== start - HOUR_NS) throw new UsageError('seal.previous-hour-missing', `seal ${hourLabel(last + HOUR_NS)} first: the chain ends at ${hourLabel(last)} and never skips an hour`, { location: where })
    previous = await blake3Hex(await readFile(join(hourDirOf(o.root, ids, start - HOUR_NS), 'manifest.json')))
  }

  const dayPath = dirname(finalDir)
  await mkdir(dayPath, { recursive: true })
  const temp = join(dayPath, `.${finalDir.slice(dayPath.length + 1)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  await mkdir(temp)
  try {
    const manifest = await buildHour(o, temp, start, end, window, previous, batches ?? readJournalRange(o.journal, journalRangeFor(start, window)))
    const bytes = manifestBytes(manifest)
    await writeFileAtomic(join(temp, 'manifest.json'), bytes)
    await writeFileAtomic(join(temp, 'manifest.json.sig'), signDetached(bytes, o.key))
    await fsyncDir(temp)
    await rename(temp, finalDir)
    await fsyncDir(dayPath)
    const result: SealHourResult = { status: 'sealed', dir: finalDir, manifest }
    if (isLastHourOfDay(start)) result.daily = await sealDay(o, dateOf(start))
    return result
  } catch (err) {
    await rm(temp, { recursive: true, force: true })
    throw err
  }
}

async function buildHour(o: SealHourOptions, dir: string, start: bigint, end: bigint, window: bigint, previous: string | null, batches: AsyncIterable<JournalBatch>): Promise<HourlyManifest> {
  const tracksRuns = o.channel === 'trades'
  const coverage = Object.fromEntries(REPLICAS.map((r) => [r, new CoverageTracker(r, start, end, tracksRuns)])) as Record<Replica, CoverageTracker>

  const raw = await RawFileWriter.open(join(dir, 'raw.jsonl.zst'))
  const tables = CHANNEL_TABLES[o.channel]
  const writers = new Map<TableName, TableWriter>()
  const buffers = new Map<TableName, TableRow[]>()
  for (const t of tables) {
    writers.set(t, await TableWriter.open(join(dir, tableFileName(t)), t, { createdBy: o.createdBy }))
    buffers.set(t, [])
  }
  const stats = new HourStats()
  const checksumFailures: ChecksumFailure[] = []
  const problems = { torn: false, corrupt: false }
  const pairer = new FramePairer(window)
  const sequences = new SequenceChecker(o.venue, (gap) => stats.gaps.push(gap))

  const trades = o.channel === 'trades'
  /** Handles one frame; returns a promise only when a writer asks to wait. */
  const onFrame = (frame: MergedFrame): Promise<unknown> | undefined => {
    if (frame.frameTime >= end) return undefined
    const cls = o.venue.classify(o.channel, frame.payload, frame.binary)
    const inHour = frame.frameTime >= start
    const spans = cls.kind === 'control' ? undefined : cls.sequences
    if (spans) for (const span of spans) sequences.add(span, inHour)
    if (!inHour) return undefined // frames of the previous hour only seed the sequence state
    const rawIndex = raw.rows
    const wait = raw.write(envelopeLine(frame, cls.kind === 'rows' ? cls.exchangeTime : null))
    stats.add(frame)
    if (cls.kind === 'unrepresentable') stats.unrepresentable.push(rawIndex)
    if (cls.kind !== 'rows') return wait
    const buffer = buffers.get(cls.table)
    if (!buffer) { stats.unrepresentable.push(rawIndex); return wait }
    const rows = cls.rows
    for (let i = 0; i < rows.length; i++) {
      // The class is made for this call alone: its rows become table rows in place (the same properties in
      // the same order as a copy with raw_index and receive_time added).
      const full = rows[i] as TableRow
      full.raw_index = rawIndex
      full.receive_time = frame.frameTime
      buffer.push(full)
      if (trades) stats.trade(full)
    }
    if (buffer.length >= ROWS_PER_WRITE) {
      const written = writers.get(cls.table)!.write(buffer.splice(0))
      return wait ? Promise.all([wait, written]) : written
    }
    return wait
  }

  try {
    for await (const batch of batches) {
      for (const p of batch.problems) {
        // A problem counts for this hour when it lies in one of this hour's files.
        if (!REPLICAS.some((r) => p.file === journalFilePath(o.journal, r, start))) continue
        if (p.kind === 'torn') problems.torn = true
        else problems.corrupt = true
      }
      for (const e of batch.events) {
        const t = eventTime(e)
        if (t < end && e.kind !== 'frame') coverage[e.replica].add(e)
        if (e.kind === 'frame') {
          if (t < end) coverage[e.replica].add(e)
          const frames = pairer.push(e)
          for (let i = 0; i < frames.length; i++) {
            const wait = onFrame(frames[i]!)
            if (wait) await wait
          }
        } else if (e.kind === 'checksum-mismatch' && t >= start && t < end) {
          checksumFailures.push({ instrument: e.instrument, receive_time: formatTime(e.time), expected: e.expected, computed: e.computed })
        }
      }
    }
    for (const f of pairer.flush()) {
      const wait = onFrame(f)
      if (wait) await wait
    }
    sequences.flush()

    const files: FileEntry[] = [await raw.finish()]
    for (const t of tables) {
      const writer = writers.get(t)!
      const rest = buffers.get(t)!
      if (rest.length > 0) await writer.write(rest.splice(0))
      const { rows, size } = await writer.finish()
      files.push({ name: tableFileName(t), size, blake3: await blake3File(join(dir, tableFileName(t))), rows })
    }
    files.sort((x, y) => (x.name < y.name ? -1 : 1))

    const covered = Object.fromEntries(REPLICAS.map((r) => [r, coverage[r].finish()])) as Record<Replica, ReplicaCoverage>
    const conflicts = await conflictsOf(stats, join(dir, 'raw.jsonl.zst'), o.venue, o.channel)
    const uncovered = uncoveredByBoth(covered.a, covered.b)
    const reasons = new Set<CompletenessReason>()
    if (uncovered.reconnect) reasons.add('reconnect')
    if (uncovered.down) reasons.add('recorder_down')
    if (stats.gaps.length > 0) reasons.add('sequence_gap')
    if (checksumFailures.length > 0) reasons.add('checksum_failure')
    if (stats.offsetUnknown) reasons.add('clock_offset_unknown')
    if (problems.torn) reasons.add('journal_torn')
    if (problems.corrupt) reasons.add('journal_corrupt')
    if (stats.unrepresentable.length > 0) reasons.add('unrepresentable_value')
    const nothing = raw.rows === 0 && covered.a.coveredNs === 0n && covered.b.coveredNs === 0n
    const status = nothing && reasons.size > 0 ? 'missing' : reasons.size > 0 ? 'partial' : 'complete'

    const replicas: ReplicaSummary[] = REPLICAS.map((r) => {
      const summary: ReplicaSummary = { replica: r, frames: stats.frames[r], covered_ns: Number(covered[r].coveredNs), reconnect_windows: covered[r].reconnectWindows }
      if (tracksRuns && covered[r].gapFreeRuns.length > 0) summary.gap_free_runs = covered[r].gapFreeRuns
      if (stats.frames[r] > 0) {
        const max = stats.boundMax[r]
        summary.clock = max === null ? { unbounded: stats.unbounded[r] } : { source: 'nts', error_bound_max: Number(max), unbounded: stats.unbounded[r] }
      }
      return summary
    })
    const manifest: HourlyManifest = {
      format_version: FORMAT_VERSION,
      recorder: o.recorder,
      venue: o.venue.name,
      channel: o.channel,
      interval: { start_time: formatTime(start), end_time: formatTime(end) },
      files,
      ...(stats.earliest !== null && stats.latest !== null ? { frame_time_bounds: { earliest: formatTime(stats.earliest), latest: formatTime(stats.latest) } } : {}),
      sequence_gaps: stats.gaps,
      checksum_failures: checksumFailures.sort((x, y) => (x.receive_time < y.receive_time ? -1 : x.receive_time > y.receive_time ? 1 : 0)),
      ...(stats.unrepresentable.length > 0 ? { unrepresentable_frames: stats.unrepresentable } : {}),
      replicas,
      replica_agreement: { both: stats.both, one_only: stats.oneOnly, conflict: conflicts.length },
      ...(conflicts.length > 0 ? { conflicts } : {}),
      completeness: { status, reasons: COMPLETENESS_REASONS.filter((r) => reasons.has(r)) },
      previous_manifest_blake3: previous,
    }
    return manifest
  } catch (err) {
    for (const w of writers.values()) await w.abort().catch(() => {})
    throw err instanceof PipeError ? err : new PipeError('seal.failed', `sealing ${hourLabel(start)} failed: ${(err as Error).message}`, { cause: err })
  }
}

/**
 * The conflicts among the trade ids more than one line carried, found by reading those lines back from the
 * written raw file (only when there are such ids): a trade id whose lines state different side, price, size
 * or exchange_time, with every line's BLAKE3.
 */
async function conflictsOf(stats: HourStats, rawPath: string, venue: VenueAdapter, channel: Channel): Promise<Conflict[]> {
  if (stats.repeated.size === 0) return []
  const found = new Map<string, { instrument: string; tradeId: string; first: string; conflict: boolean; lines: ConflictLine[] }>()
  await eachRawLine(rawPath, async (line, index) => {
    const doc = JSON.parse(line.toString('utf8')) as { payload: string; payload_encoding: string }
    const binary = doc.payload_encoding === 'base64'
    const cls = venue.classify(channel, Buffer.from(doc.payload, binary ? 'base64' : 'utf8'), binary)
    if (cls.kind !== 'rows') return
    const onLine = new Set<string>()
    for (const row of cls.rows) {
      if (row.trade_id === null || !stats.repeated.get(row.instrument)?.has(row.trade_id)) continue
      const key = `${row.instrument}\u0000${row.trade_id}`
      if (onLine.has(key)) continue
      onLine.add(key)
      const fingerprint = `${row.side}\u0000${row.price}\u0000${row.size}\u0000${row.exchange_time}`
      const entry = { raw_index: index, blake3: await blake3Hex(line) }
      const seen = found.get(key)
      if (!seen) found.set(key, { instrument: row.instrument, tradeId: row.trade_id, first: fingerprint, conflict: false, lines: [entry] })
      else {
        seen.lines.push(entry)
        if (fingerprint !== seen.first) seen.conflict = true
      }
    }
  })
  // Map order is first-seen order, which is the order of first lines.
  return [...found.values()].filter((c) => c.conflict).map((c) => ({ instrument: c.instrument, trade_id: c.tradeId, lines: c.lines }))
}

/** The day's manifest: its hours in order, chained to the previous day's. Written once hour 23 is sealed. */
export async function sealDay(o: Pick<SealHourOptions, 'root' | 'recorder' | 'venue' | 'channel' | 'key'>, date: string): Promise<DailyManifest> {
  const ids = { recorder: o.recorder, venue: o.venue.name, channel: o.channel }
  const dir = join(o.root, dayDir(ids.recorder, ids.venue, ids.channel, date))
  const hours: DailyManifest['hours'] = []
  for (let h = 0; h < 24; h++) {
    const hh = String(h).padStart(2, '0')
    const path = join(dir, `hour=${hh}`, 'manifest.json')
    if (!(await exists(path))) continue
    const bytes = await readFile(path)
    hours.push({ hour: hh, blake3: await blake3Hex(bytes), status: (JSON.parse(bytes.toString('utf8')) as HourlyManifest).completeness.status })
  }
  const prevDate = new Date(Date.parse(`${date}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10)
  const prevPath = join(o.root, dayDir(ids.recorder, ids.venue, ids.channel, prevDate), 'manifest.json')
  const previous = (await exists(prevPath)) ? await blake3Hex(await readFile(prevPath)) : null
  const daily: DailyManifest = { format_version: FORMAT_VERSION, ...ids, date, hours, previous_manifest_blake3: previous }
  const bytes = manifestBytes(daily)
  await writeFileAtomic(join(dir, 'manifest.json'), bytes)
  await writeFileAtomic(join(dir, 'manifest.json.sig'), signDetached(bytes, o.key))
  return daily
}

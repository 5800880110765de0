import { randomBytes } from 'node:crypto'
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fsyncDir, writeFileAtomic } from '../../../core/atomic-write.js'
import { PipeError, UsageError } from '../../../core/errors.js'
import { formatBytes, readInputFile } from '../../../core/input-file.js'
import { blake3Digests, createIncrementalHash } from '../../../codec/hash.js'
import type { VenueAdapter } from '../../../venues/adapter.js'
import { uncoveredByBoth } from './coverage.js'
import { FILE_HEADER_SIZE, HOUR_NS, journalRangeFor, listJournalFiles, listJournalReplicas, locateJournalReplicas, readJournalRange, type JournalBatch, type JournalDirs } from '../journal/journal.js'
import type { Sign } from '../keys/signer.js'
import { linkDocument } from '../../../codec/document-link.js'
import { isObjectStoreUrl, openStorage } from '../../../storage/storage.js'
import type { DocumentItem } from '../../../core/items.js'
import {
  COMPLETENESS_REASONS, FORMAT_VERSION, MANIFEST_LIMIT, RAW_FILE_NAME, dayDir, manifestBytes,
  type CompletenessReason, type Conflict, type ConflictLine, type DailyManifest, type HourlyManifest, type ReplicaSummary,
} from '../manifest.js'
import { PAIRING_WINDOW_NS } from '../merge.js'
import { HourFramesWriter, type HourFramesResult } from './hour-frames.js'
import { isHourFacts, isPairedFrameBatch, pairHour, type HourFacts } from './pair-hour.js'
import type { ConflictCandidates } from './trade-copies.js'
import { formatTime } from '../time.js'
import { REPLICAS, type Channel } from '../types.js'

export interface SealHourOptions {
  root: string
  /** The journal: a directory holding both replicas, or one directory per replica. */
  journal: JournalDirs
  recorder: string
  venue: VenueAdapter
  channel: Channel
  /** Start of the UTC hour, ns. */
  hourStart: bigint
  /** Signs the hour's manifest, and a day's: a key pipe holds, or an external signer (keys/signer.ts). */
  sign: Sign
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


export const hourLabel = (ns: bigint) => formatTime(ns).slice(0, 13)
export const dateOf = (ns: bigint) => formatTime(ns).slice(0, 10)
export const isLastHourOfDay = (ns: bigint) => formatTime(ns).slice(11, 13) === '23'
/** The name an hour sealed to object storage is built under, in the system's temporary folder. */
export const SEAL_TEMP_PREFIX = 'pipe-seal'
const storeSeal = () => import('./seal-store.js')
/** Where an hour of a chain is sealed: ROOT/recorder=/venue=/channel=/date=/hour=. */
export const hourDirOf = (root: string, o: { recorder: string; venue: string; channel: string }, hourStart: bigint) =>
  join(root, dayDir(o.recorder, o.venue, o.channel, dateOf(hourStart)), `hour=${formatTime(hourStart).slice(11, 13)}`)

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, (err: NodeJS.ErrnoException) => { if (err.code === 'ENOENT') return false; throw err })
}

/** A day whose manifest and its signature are both written (sealDay writes the manifest first). */
async function dayFinished(dayDir: string): Promise<boolean> {
  return (await exists(join(dayDir, 'manifest.json'))) && (await exists(join(dayDir, 'manifest.json.sig')))
}

/** A manifest this root already holds (the sealer's own, read back as a verifier would: docs/limits.md). */
export function readManifest(path: string): Promise<Buffer> {
  return readInputFile(path, MANIFEST_LIMIT)
}

/** A manifest's bytes, refused when a verifier would not read them: an hour sealed past the limit could never verify. */
export function sealableManifest(manifest: HourlyManifest | DailyManifest, dir: string): Uint8Array {
  const bytes = manifestBytes(manifest)
  if (bytes.byteLength > MANIFEST_LIMIT.maxBytes) {
    throw new PipeError('seal.manifest-too-large', `the manifest would be ${formatBytes(bytes.byteLength)}, more than the ${formatBytes(MANIFEST_LIMIT.maxBytes)} a verifier reads (docs/limits.md): nothing is sealed`, { location: { file: dir } })
  }
  return bytes
}

export async function blake3Hex(bytes: Uint8Array): Promise<string> {
  const hash = await createIncrementalHash('blake3')
  hash.update(bytes)
  return hash.digestHex()
}

/** The hours a chain already holds under a root, in order (from the day and hour directory names). */
export async function chainHours(root: string, o: { recorder: string; venue: string; channel: string }): Promise<bigint[]> {
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

/** The last hour a chain holds under a root (a folder, or object storage), or null for a chain not begun. */
export async function lastSealedHour(root: string, o: { recorder: string; venue: string; channel: string }): Promise<bigint | null> {
  if (isObjectStoreUrl(root)) return (await storeSeal()).lastStoredHour(await openStorage(root), o)
  const hours = await chainHours(root, o)
  return hours.length > 0 ? hours[hours.length - 1]! : null
}

/** Calls `each` with every line (without its newline) of a written raw file, in order. */
async function eachRawLine(rawPath: string, each: (line: Buffer, index: number) => Promise<void>): Promise<void> {
  // In-process: a rare path over one hour's file, not worth a worker thread (which a TypeScript loader in
  // scripts and tests cannot reach either). The sealer's own file: no cap of a reader's on its lines.
  const { zstdFileLines } = await import('../../../codec/zstd.js')
  let index = 0
  for await (const line of zstdFileLines(rawPath, Number.MAX_SAFE_INTEGER)) await each(line, index++)
}

/**
 * Refuses (a UsageError; nothing is written) to seal `hourStart` from `journal` when the folder is not a
 * journal, holds no records, or may still be receiving the hour: no replica has journaled a record at or
 * after the hour's end. A running recorder journals a heartbeat at the start of every hour (docs/journal.md),
 * so an hour is over on disk once a later hour's file holds a record. `recorderStopped` is the user's word
 * that the recorder is gone for good, so what the journal holds is all there will be. A sealed hour is
 * never sealed again: sealing from the wrong folder, or too early, would sign a false hour for good.
 */
export async function assertHourSealable(journal: JournalDirs, hourStart: bigint, recorderStopped: boolean): Promise<void> {
  const dirs = typeof journal === 'string' ? [journal] : journal
  for (const dir of dirs) {
    const where = { location: { file: dir } }
    const info = await stat(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') throw new UsageError('usage.journal-missing', '--journal: no such directory', where)
      throw err
    })
    if (!info.isDirectory()) throw new UsageError('usage.not-a-journal', '--journal: not a directory', where)
    if ((await listJournalReplicas(dir)).length === 0) throw new UsageError('usage.not-a-journal', '--journal: not a journal (it has no replica=a/ or replica=b/ folder)', where)
  }
  const where = { location: { file: dirs.join(', ') } }
  let latest: bigint | undefined
  for (const [replica, dir] of await locateJournalReplicas(dirs)) {
    for (const file of await listJournalFiles(dir, replica)) {
      if ((await stat(file.path)).size > FILE_HEADER_SIZE && (latest === undefined || file.hour > latest)) latest = file.hour
    }
  }
  if (latest === undefined) throw new UsageError('usage.journal-empty', '--journal: the journal holds no records', where)
  if (!recorderStopped && latest < hourStart + HOUR_NS) {
    throw new UsageError('usage.hour-not-over', `--hour ${hourLabel(hourStart)}: the journal holds nothing after hour ${hourLabel(latest)}, so a recorder still running may add to it; seal it once a later hour is journaled, or pass --recorder-stopped if the recorder is gone for good`, where)
  }
}

/**
 * An hour built in a temporary folder beside its final one (raw file and tables), its manifest not yet
 * linked to the hour before or signed: the document the chain-link and sign stages take, and
 * {@link commitHour} lands. `final`: the hour was sealed before, and passes through unchanged.
 */
export class HourDraft implements DocumentItem {
  readonly kind = 'document'
  bytes?: Uint8Array
  signature?: string

  constructor(
    readonly seal: Pick<SealHourOptions, 'root' | 'recorder' | 'venue' | 'channel' | 'sign'>,
    readonly hourStart: bigint,
    /** The hour's final folder. */
    readonly dir: string,
    /** The folder it is built in; null when final. */
    readonly temp: string | null,
    readonly manifest: HourlyManifest,
    readonly previousPath: string | null,
    readonly final: boolean,
  ) {}

  get name(): string { return `hour ${hourLabel(this.hourStart)}` }
  get value(): Record<string, unknown> { return this.manifest as unknown as Record<string, unknown> }
  serialize(): Uint8Array { return sealableManifest(this.manifest, this.dir) }
}

/** The member of a manifest that links it to the one before (check 5). */
export const PREVIOUS_FIELD = 'previous_manifest_blake3'

/**
 * Seals one UTC hour of one channel from the journal into `root`, exactly as record format v1 lays it out,
 * and after hour 23 the day: {@link prepareHour}, linked, signed, {@link commitHour}. Idempotent: an hour
 * whose manifest exists is left as it is. Crash-safe: the hour is built in a temporary directory beside its
 * final one and renamed into place only when complete.
 */
export async function sealHour(o: SealHourOptions, batches?: AsyncIterable<JournalBatch>): Promise<SealHourResult> {
  const draft = await prepareHour(o, batches)
  try {
    if (!draft.final) {
      const previous = draft.previousPath === null ? null : await readManifest(draft.previousPath)
      const bytes = await linkDocument(draft, previous, PREVIOUS_FIELD, 'blake3')
      draft.signature = await o.sign(bytes)
    }
    return await commitHour(draft)
  } catch (err) {
    if (draft.temp) await rm(draft.temp, { recursive: true, force: true })
    throw err
  }
}

/** Where an hour is being sealed: its final folder, and the temporary one it is built in (null when it was sealed before). */
export interface HourPlace {
  /** The chain the hour belongs to: its root, recorder, venue and channel. */
  chain: Pick<SealHourOptions, 'root' | 'recorder' | 'venue' | 'channel'>
  hourStart: bigint
  dir: string
  temp: string | null
  /** The hour before's manifest; null for the first hour of a chain. */
  previousPath: string | null
  /** The manifest of an hour sealed before. */
  sealed?: HourlyManifest
}

/**
 * Builds the hour into a temporary folder and gives its draft; or, for an hour already sealed, the draft of
 * what is there (final): {@link placeHour}, {@link pairHour}, {@link writeHourFiles}, {@link draftHour}.
 */
export async function prepareHour(o: SealHourOptions, batches?: AsyncIterable<JournalBatch>): Promise<HourDraft> {
  const place = await placeHour(o)
  if (place.temp === null) return draftHour(place, null, o.sign)
  try {
    const frames = pairHour(o, batches ?? readJournalRange(o.journal, journalRangeFor(o.hourStart, o.windowNs ?? PAIRING_WINDOW_NS)))
    return await draftHour(place, await writeHourFiles({ ...o, dir: place.temp }, frames), o.sign)
  } catch (err) {
    await rm(place.temp, { recursive: true, force: true })
    throw err
  }
}

/**
 * Finds where the hour goes. An hour sealed before is given as it is; otherwise the hour must be the next of
 * its chain (never one out of order, never one that skips an hour), and a temporary folder is made beside
 * its final one, after removing those that seals killed halfway left.
 */
export async function placeHour(o: Pick<SealHourOptions, 'root' | 'recorder' | 'venue' | 'channel' | 'hourStart'>): Promise<HourPlace> {
  if (isObjectStoreUrl(o.root)) return (await storeSeal()).placeHourInStore(o)
  const start = o.hourStart
  const end = start + HOUR_NS
  const ofChain = { root: o.root, recorder: o.recorder, venue: o.venue, channel: o.channel }
  const ids = { recorder: o.recorder, venue: o.venue.name, channel: o.channel }
  const finalDir = hourDirOf(o.root, ids, start)
  const where = { file: finalDir }
  if (await exists(join(finalDir, 'manifest.json'))) {
    const sealed = JSON.parse((await readManifest(join(finalDir, 'manifest.json'))).toString('utf8')) as HourlyManifest
    return { chain: ofChain, hourStart: start, dir: finalDir, temp: null, previousPath: null, sealed }
  }
  const chain = await chainHours(o.root, ids)
  let previousPath: string | null = null
  if (chain.length > 0) {
    const last = chain[chain.length - 1]!
    if (last >= end) throw new UsageError('seal.before-chain-end', `the chain already holds hours after ${hourLabel(start)} (up to ${hourLabel(last)}); hours are sealed in order`, { location: where })
    if (last !== start - HOUR_NS) throw new UsageError('seal.previous-hour-missing', `seal ${hourLabel(last + HOUR_NS)} first: the chain ends at ${hourLabel(last)} and never skips an hour`, { location: where })
    previousPath = join(hourDirOf(o.root, ids, start - HOUR_NS), 'manifest.json')
  }
  const dayPath = dirname(finalDir)
  await mkdir(dayPath, { recursive: true })
  const hourFolder = finalDir.slice(dayPath.length + 1)
  await removeDeadSealTemps(dayPath, hourFolder)
  const temp = join(dayPath, `.${hourFolder}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  await mkdir(temp)
  return { chain: ofChain, hourStart: start, dir: finalDir, temp, previousPath }
}

/**
 * Lands a linked and signed hour: its manifest and signature into its folder, the folder renamed into
 * place; after hour 23, the day. A final draft only finishes its day if that was left undone.
 */
export async function commitHour(draft: HourDraft): Promise<SealHourResult> {
  if (isObjectStoreUrl(draft.seal.root)) return (await storeSeal()).landHour(draft)
  const start = draft.hourStart
  const o = draft.seal
  if (draft.final) {
    const result: SealHourResult = { status: 'already-sealed', dir: draft.dir, manifest: draft.manifest }
    // A seal stopped between renaming hour 23 into place and writing the day finishes the day now.
    if (isLastHourOfDay(start) && !(await dayFinished(dirname(draft.dir)))) result.daily = await sealDay(o, dateOf(start))
    return result
  }
  if (!draft.bytes || draft.signature === undefined || !draft.temp) throw new PipeError('seal.not-signed', `${draft.name} reached the commit without being linked and signed: put chain-link and sign before it`)
  // A day whose hour 23 was sealed but whose own manifest was not (a seal stopped in between) is finished
  // first, or the chain of days would skip it.
  const before = start - HOUR_NS
  if (draft.previousPath !== null && isLastHourOfDay(before)) {
    if (!(await dayFinished(dirname(dirname(draft.previousPath))))) await sealDay(o, dateOf(before))
  }
  const temp = draft.temp
  const dayPath = dirname(draft.dir)
  await writeFileAtomic(join(temp, 'manifest.json'), draft.bytes)
  await writeFileAtomic(join(temp, 'manifest.json.sig'), draft.signature)
  await fsyncDir(temp)
  await rename(temp, draft.dir)
  await fsyncDir(dayPath)
  const result: SealHourResult = { status: 'sealed', dir: draft.dir, manifest: draft.manifest }
  if (isLastHourOfDay(start)) result.daily = await sealDay(o, dateOf(start))
  return result
}

/** What writing an hour's paired frames gave: the files and what the frames showed, and what the journal showed. */
export interface WrittenHour {
  facts: HourFacts
  written: HourFramesResult
}

/** The item write-hour-files gives hour-manifest: where the hour is, and what was written for it (null: sealed before). */
export class SealedHourFiles {
  readonly kind = 'sealed-hour-files'
  constructor(readonly place: HourPlace, readonly hour: WrittenHour | null) {}
}

/**
 * Writes an hour's paired frames (pairHour's batches, then its facts) as its raw file and tables into
 * `dir`, on the frames' and files' threads; gives the hour's facts and what the frames showed.
 */
export async function writeHourFiles(o: Pick<SealHourOptions, 'venue' | 'channel' | 'createdBy' | 'hourStart'> & { dir: string }, frames: AsyncIterable<unknown>): Promise<WrittenHour> {
  const writer = HourFramesWriter.open({ dir: o.dir, venue: o.venue.name, ...(o.venue.module ? { venueModule: o.venue.module } : {}), channel: o.channel, createdBy: o.createdBy })
  try {
    let facts: HourFacts | undefined
    for await (const item of frames) {
      if (isPairedFrameBatch(item)) {
        if (facts) throw new UsageError('seal.frames-after-facts', 'paired frames came after the hour\'s facts: give write-hour-files one hour, as pair-replicas gives it')
        await writer.batch(item, item.recycle)
      } else if (isHourFacts(item)) facts = item
      else throw new UsageError('usage.item-type', 'write-hour-files takes the paired frames and facts of an hour, as pair-replicas gives them')
    }
    if (facts && facts.hourStart !== o.hourStart) throw new UsageError('seal.hour-mismatch', `the frames were paired for hour ${hourLabel(facts.hourStart)}, not ${hourLabel(o.hourStart)}: give pair-replicas and write-hour-files the same hour`)
    if (!facts) throw new UsageError('seal.no-facts', 'the paired frames ended without the hour\'s facts: put pair-replicas before write-hour-files')
    const written = await writer.finish()
    written.files.sort((x, y) => (x.name < y.name ? -1 : 1))
    return { facts, written }
  } catch (err) {
    await writer.abort()
    throw err instanceof PipeError ? err : new PipeError('seal.failed', `sealing ${hourLabel(o.hourStart)} failed: ${(err as Error).message}`, { cause: err })
  }
}

/**
 * Draws up an hour's manifest from what its journal and frames showed (the conflicts read back from its
 * raw file): its draft, not yet linked to the hour before or signed. An hour sealed before gives its draft
 * as it is (final), `hour` null.
 */
export async function draftHour(place: HourPlace, hour: WrittenHour | null, sign: Sign): Promise<HourDraft> {
  const seal = { ...place.chain, sign }
  if (place.temp === null || hour === null) {
    if (!place.sealed) throw new PipeError('seal.no-files', `hour ${hourLabel(place.hourStart)}: no files were written for it`)
    return new HourDraft(seal, place.hourStart, place.dir, null, place.sealed, null, true)
  }
  const { facts, written } = hour
  const start = place.hourStart
  const end = start + HOUR_NS
  const covered = facts.covered
  const conflicts = await conflictsOf(written.conflictCandidates, join(place.temp, RAW_FILE_NAME), seal.venue, seal.channel)
  const uncovered = uncoveredByBoth(covered.a, covered.b)
  const reasons = new Set<CompletenessReason>()
  if (uncovered.reconnect) reasons.add('reconnect')
  if (uncovered.down) reasons.add('recorder_down')
  if (uncovered.destination) reasons.add('destination_unavailable')
  const sequenceGaps = [...written.sequenceGaps, ...facts.connectionGaps]
  if (sequenceGaps.length > 0) reasons.add('sequence_gap')
  if (facts.checksumFailures.length > 0) reasons.add('checksum_failure')
  if (facts.offsetUnknown) reasons.add('clock_offset_unknown')
  if (facts.problems.torn) reasons.add('journal_torn')
  if (facts.problems.corrupt) reasons.add('journal_corrupt')
  if (written.unrepresentable.length > 0) reasons.add('unrepresentable_value')
  const nothing = written.rawLines === 0 && covered.a.coveredNs === 0n && covered.b.coveredNs === 0n
  const status = nothing && reasons.size > 0 ? 'missing' : reasons.size > 0 ? 'partial' : 'complete'

  const replicas: ReplicaSummary[] = REPLICAS.map((r) => {
    const at = r === 'a' ? 0 : 1
    const summary: ReplicaSummary = { replica: r, frames: facts.frames[at]!, covered_ns: Number(covered[r].coveredNs), reconnect_windows: covered[r].reconnectWindows }
    if (facts.tracksRuns && covered[r].gapFreeRuns.length > 0) summary.gap_free_runs = covered[r].gapFreeRuns
    if (facts.frames[at]! > 0) {
      const max = facts.boundMax[at]!
      summary.clock = max === null ? { unbounded: facts.unbounded[at]! } : { source: 'nts', error_bound_max: max, unbounded: facts.unbounded[at]! }
    }
    return summary
  })
  const manifest: HourlyManifest = {
    format_version: FORMAT_VERSION,
    recorder: seal.recorder,
    venue: seal.venue.name,
    channel: seal.channel,
    interval: { start_time: formatTime(start), end_time: formatTime(end) },
    files: written.files,
    ...(facts.frameTimeBounds ? { frame_time_bounds: facts.frameTimeBounds } : {}),
    sequence_gaps: sequenceGaps,
    checksum_failures: facts.checksumFailures,
    ...(written.unrepresentable.length > 0 ? { unrepresentable_frames: written.unrepresentable } : {}),
    replicas,
    replica_agreement: { both: facts.both, one_only: facts.oneOnly, conflict: conflicts.length },
    ...(conflicts.length > 0 ? { conflicts } : {}),
    completeness: { status, reasons: COMPLETENESS_REASONS.filter((r) => reasons.has(r)) },
    // Set when the hour is linked to the one before (chain-link).
    previous_manifest_blake3: null,
  }
  return new HourDraft(seal, start, place.dir, place.temp, manifest, place.previousPath, false)
}

/**
 * Removes the temporary folders of earlier seals of this hour whose process is gone (killed halfway, as a
 * recorder's host may be): nothing else ever would. A folder whose process still runs is left to it.
 */
export async function removeDeadSealTemps(dayPath: string, hourFolder: string): Promise<void> {
  const prefix = `.${hourFolder}.`
  for (const name of await readdir(dayPath)) {
    const m = name.startsWith(prefix) ? /^(\d+)\.[0-9a-f]+\.tmp$/.exec(name.slice(prefix.length)) : null
    if (m && !processRuns(Number(m[1]))) await rm(join(dayPath, name), { recursive: true, force: true })
  }
}

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * The conflicts among the candidates the frames' thread found (trade-copies.ts): a trade id whose lines
 * state different side, price, size or exchange_time, with every line's BLAKE3. Only the candidates' lines
 * are parsed and hashed, in one reading of the written raw file; their trades are compared as written, so
 * a fingerprint that collided there adds nothing.
 */
async function conflictsOf(candidates: ConflictCandidates, rawPath: string, venue: VenueAdapter, channel: Channel): Promise<Conflict[]> {
  if (candidates.lines.length === 0) return []
  const wanted = new Set(candidates.trades.map(([instrument, tradeId]) => `${instrument}\u0000${tradeId}`))
  const found = new Map<string, { instrument: string; tradeId: string; first: string; conflict: boolean; lines: number[] }>()
  const hashes = new Map<number, string>()
  const digest = await blake3Digests()
  let next = 0
  await eachRawLine(rawPath, async (line, index) => {
    if (index !== candidates.lines[next]) return
    next++
    hashes.set(index, digest(line))
    const doc = JSON.parse(line.toString('utf8')) as { payload: string; payload_encoding: string }
    const binary = doc.payload_encoding === 'base64'
    const cls = venue.classify(channel, Buffer.from(doc.payload, binary ? 'base64' : 'utf8'), binary)
    if (cls.kind !== 'rows') return
    const onLine = new Set<string>()
    for (const row of cls.rows) {
      if (row.trade_id === null) continue
      const key = `${row.instrument}\u0000${row.trade_id}`
      if (!wanted.has(key) || onLine.has(key)) continue
      onLine.add(key)
      const fingerprint = `${row.side}\u0000${row.price}\u0000${row.size}\u0000${row.exchange_time}`
      const seen = found.get(key)
      if (!seen) found.set(key, { instrument: row.instrument, tradeId: row.trade_id, first: fingerprint, conflict: false, lines: [index] })
      else {
        seen.lines.push(index)
        if (fingerprint !== seen.first) seen.conflict = true
      }
    }
  })
  // Map order is first-seen order, which is the order of first lines.
  return [...found.values()].filter((c) => c.conflict)
    .map((c) => ({ instrument: c.instrument, trade_id: c.tradeId, lines: c.lines.map((i): ConflictLine => ({ raw_index: i, blake3: hashes.get(i)! })) }))
}

/** The day's manifest: its hours in order, chained to the previous day's. Written once hour 23 is sealed. */
export async function sealDay(o: Pick<SealHourOptions, 'root' | 'recorder' | 'venue' | 'channel' | 'sign'>, date: string): Promise<DailyManifest> {
  if (isObjectStoreUrl(o.root)) return (await storeSeal()).sealDayInStore(o, date)
  const ids = { recorder: o.recorder, venue: o.venue.name, channel: o.channel }
  const dir = join(o.root, dayDir(ids.recorder, ids.venue, ids.channel, date))
  const hours: DailyManifest['hours'] = []
  for (let h = 0; h < 24; h++) {
    const hh = String(h).padStart(2, '0')
    const path = join(dir, `hour=${hh}`, 'manifest.json')
    if (!(await exists(path))) continue
    const bytes = await readManifest(path)
    hours.push({ hour: hh, blake3: await blake3Hex(bytes), status: (JSON.parse(bytes.toString('utf8')) as HourlyManifest).completeness.status })
  }
  const prevDate = new Date(Date.parse(`${date}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10)
  const prevPath = join(o.root, dayDir(ids.recorder, ids.venue, ids.channel, prevDate), 'manifest.json')
  const previous = (await exists(prevPath)) ? await readManifest(prevPath) : null
  const daily: DailyManifest = { format_version: FORMAT_VERSION, ...ids, date, hours, previous_manifest_blake3: null }
  const doc: DocumentItem = { kind: 'document', name: `day ${date}`, value: daily as unknown as Record<string, unknown>, serialize: () => sealableManifest(daily, dir) }
  const bytes = await linkDocument(doc, previous, PREVIOUS_FIELD, 'blake3')
  const signature = await o.sign(bytes)
  await writeFileAtomic(join(dir, 'manifest.json'), bytes)
  await writeFileAtomic(join(dir, 'manifest.json.sig'), signature)
  return daily
}

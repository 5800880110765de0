/**
 * `pipe run verify`: the ten checks of "What a verifier checks" (record-format-1.md) over sealed hours,
 * days and the hash chain, in one or several roots. docs/verify.md states the readings and lists every
 * finding code with its check number.
 *
 * Layers, from pure to I/O:
 * - pure rules over one manifest or one day: {@link checkManifestBytes} (check 1), {@link checkClockSummaries}
 *   (8), {@link checkGapFreeRuns} (9), {@link checkDailyHours} (5);
 * - streaming checkers that see bytes once: {@link RawHourChecker} (3, 7 and the facts 4, 8, 9, 10 need,
 *   over LineBatches), {@link TableRowChecker} (4, over the row groups `readTableForCheck` yields);
 * - {@link RecordVerifier}: walks roots, chains, days and hours in order, reads files and reports.
 *
 * Memory: one hour's per-line data at a time (a Float64Array of frame times, grown as lines arrive), the
 * hashes of the previous hour and of the current day's hours, and the list of dates of one chain.
 */
import { lstat, readdir, stat, type FileHandle } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { Writable } from 'node:stream'
import { blake3, createBLAKE3, type IHasher } from 'hash-wasm'
import { z } from 'zod'
import { PipeError } from '../../../core/errors.js'
import { INPUT_CODES, InputError, openRegularFile, readInputFile, type ReadLimit } from '../../../core/input-file.js'
import { FindingSink, type Finding } from '../../../core/findings.js'
import { createIncrementalHash } from '../../../codec/hash.js'
import { splitLines, type LineBatch } from '../../../codec/lines.js'
import { startsWithZstdMagic, zstdDecode, zstdDecodeInProcess, type DecodeOptions } from '../../../codec/zstd.js'
import { findVenue } from '../../../venues/index.js'
import { CanonicalChecker, JsonCode } from '../../json/canonical-check.js'
import { checkEnvelope, newEnvelopeResult, type EnvelopeResult } from '../envelope.js'
import { SIGNATURE_LIMIT, verifyDetached } from '../keys/jws.js'
import { manifestSigningInstant, type PublicJwks } from '../keys/keys.js'
import { COMPLETENESS_REASONS, FORMAT_VERSION, NOT_ZSTD_RAW_FILE, MANIFEST_LIMIT, RAW_FILE_NAME, type CompletenessReason } from '../manifest.js'
import { checkSchema, readTableForCheck, tableFileName } from '../tables.js'
import { dayStartNs, formatTime, tryParseTime } from '../time.js'
import { CHANNEL_TABLES, type Channel, type Replica, type TableName } from '../types.js'

// ---------------------------------------------------------------------------------------------------
// Findings

/** The number of the check in "What a verifier checks" that a finding fails. */
export type CheckNumber = 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10

/**
 * One finding. `path` is the file the finding is about (a manifest, a raw file, a table, a signature, or
 * for a skipped hour or day the directory that should hold it). `line` is the 1-based line of the raw
 * file when `path` is a raw file and the finding is about one line, else null.
 */
export interface VerifyFinding {
  check: CheckNumber
  code: string
  path: string
  line: number | null
  detail: string
}

/** A finding before the caller knows which file it is about. */
export interface CheckFinding {
  check: CheckNumber
  code: string
  detail: string
  line?: number | null
}

/**
 * Every code `verify` reports, with its check. Published codes never change meaning. The `raw.*` line
 * codes are verify-raw's (src/formats/record/envelope.ts and the stages); the clock rules of a line are
 * check 7 and carry `clock.*` codes here.
 */
export const VERIFY_CODES: Readonly<Record<string, CheckNumber>> = {
  'manifest.not-json': 1,
  'manifest.not-canonical': 1,
  'manifest.unknown-version': 1,
  'manifest.field': 1,
  'manifest.completeness': 1,
  'file.name': 2,
  'file.missing': 2,
  'file.size': 2,
  'file.blake3': 2,
  'raw.unlisted': 3,
  'raw.not-zstd': 3,
  'raw.zstd-corrupt': 3,
  'raw.zstd-truncated': 3,
  'raw.zstd-ratio-cap': 3,
  'raw.zstd-size-cap': 3,
  'raw.zstd-window-cap': 3,
  'raw.line-too-long': 3,
  'raw.line-unterminated': 3,
  'raw.not-utf8': 3,
  'raw.bom': 3,
  'raw.not-json': 3,
  'raw.line-not-canonical': 3,
  'raw.duplicate-key': 3,
  'raw.lone-surrogate': 3,
  'raw.number-not-integer': 3,
  'raw.number-out-of-range': 3,
  'raw.too-deep': 3,
  'raw.not-object': 3,
  'raw.field-missing': 3,
  'raw.field-type': 3,
  'raw.payload-encoding': 3,
  'raw.base64-invalid': 3,
  'raw.time-invalid': 3,
  'raw.receipts-empty': 3,
  'raw.receipt-replica': 3,
  'raw.receipt-duplicate-replica': 3,
  'raw.unknown-field': 3,
  'raw.frame-time-outside-hour': 3,
  'raw.frame-time-decreasing': 3,
  'raw.row-count': 3,
  'table.missing': 4,
  'table.unreadable': 4,
  'table.schema': 4,
  'table.row-count': 4,
  'table.raw-index-missing': 4,
  'table.raw-index-decreasing': 4,
  'table.receive-time': 4,
  'table.unrepresentable-row': 4,
  'chain.identity': 5,
  'chain.interval': 5,
  'chain.hour-skipped': 5,
  'chain.day-skipped': 5,
  'chain.previous-hash': 5,
  'chain.daily-hours': 5,
  'chain.fork': 5,
  'sig.missing': 6,
  'sig.malformed': 6,
  'sig.header': 6,
  'sig.unknown-key': 6,
  'sig.bad-signature': 6,
  'sig.key-not-valid-at-time': 6,
  'sig.no-signing-time': 6,
  'clock.pair': 7,
  'clock.bound-negative': 7,
  'clock.bound-below-offset': 7,
  'clock.summary': 8,
  'clock.reason': 8,
  'replicas.frames': 8,
  'replicas.agreement': 8,
  'runs.outside-hour': 9,
  'runs.end-not-after-start': 9,
  'runs.unknown-connection': 9,
  'conflict.raw-index': 10,
  'conflict.blake3': 10,
  'conflict.trade-id': 10,
}

/** Envelope codes that are check 7's rules: each receipt's clock pair and bound. */
const CLOCK_CODES: Readonly<Record<string, string>> = {
  'raw.clock-pair': 'clock.pair',
  'raw.clock-bound-negative': 'clock.bound-negative',
  'raw.clock-bound-below-offset': 'clock.bound-below-offset',
}

// ---------------------------------------------------------------------------------------------------
// Manifest shapes (manifest.ts is authoritative; unknown members are ignored, as the spec tells readers)

const HEX64 = /^[0-9a-f]{64}$/
const timeString = z.string().refine((s) => tryParseTime(s) !== null, 'not a time in the form YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ')
const hash = z.string().regex(HEX64, 'not a BLAKE3 hash (64 lowercase hex digits)')
const count = z.number().int().min(0)
const status = z.enum(['complete', 'partial', 'missing'])
const intervalSchema = z.looseObject({ start_time: timeString, end_time: timeString })
const filesSchema = z.array(z.looseObject({ name: z.string(), size: count, blake3: hash, rows: count }))
const gapFreeRunSchema = z.looseObject({ instrument: z.string(), connection: z.string(), start_time: timeString, end_time: timeString })
const clockSchema = z.looseObject({ source: z.literal('nts').optional(), error_bound_max: count.optional(), unbounded: count })
const replicasSchema = z.array(
  z.looseObject({
    replica: z.enum(['a', 'b']),
    frames: count,
    covered_ns: count,
    reconnect_windows: z.array(z.looseObject({ start_time: timeString, end_time: timeString, close_code: z.number().int().optional() })),
    gap_free_runs: z.array(gapFreeRunSchema).optional(),
    clock: clockSchema.optional(),
  }),
)
const conflictsSchema = z.array(
  z.looseObject({ instrument: z.string(), trade_id: z.string(), lines: z.array(z.looseObject({ raw_index: count, blake3: hash })) }),
)
const completenessSchema = z.looseObject({
  status,
  reasons: z.array(z.enum(COMPLETENESS_REASONS as unknown as [CompletenessReason, ...CompletenessReason[]])),
})
const previousSchema = hash.nullable()
const identity = {
  format_version: z.literal(FORMAT_VERSION),
  recorder: z.string().min(1),
  venue: z.string().min(1),
  channel: z.enum(['trades', 'book', 'funding', 'liquidations']),
}

const hourlySchema = z.looseObject({
  ...identity,
  interval: intervalSchema,
  files: filesSchema,
  frame_time_bounds: z.looseObject({ earliest: timeString, latest: timeString }).optional(),
  sequence_gaps: z.array(z.looseObject({ instrument: z.string(), after_id: z.string(), before_id: z.string() })),
  checksum_failures: z.array(z.looseObject({ instrument: z.string(), receive_time: timeString, expected: z.string(), computed: z.string() })),
  unrepresentable_frames: z.array(count).optional(),
  replicas: replicasSchema,
  replica_agreement: z.looseObject({ both: count, one_only: count, conflict: count }),
  conflicts: conflictsSchema.optional(),
  completeness: completenessSchema,
  previous_manifest_blake3: previousSchema,
})

const dateString = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'not a date YYYY-MM-DD').refine((s) => dayStartNs(s) !== null, 'not a calendar date')
const dailyHoursSchema = z.array(z.looseObject({ hour: z.string().regex(/^([01]\d|2[0-3])$/, 'not a two-digit hour 00..23'), blake3: hash, status }))
const dailySchema = z.looseObject({
  ...identity,
  date: dateString,
  hours: dailyHoursSchema,
  previous_manifest_blake3: previousSchema,
})

export type ManifestKind = 'hourly' | 'daily'

/** Result of check 1 on one manifest's bytes. */
export interface ManifestCheck {
  findings: CheckFinding[]
  /**
   * The parsed manifest when it is JSON, an object and of format_version 1 (possibly with `manifest.field`
   * findings: each later check reads only the members it needs and skips what is malformed); null when
   * it cannot be read as a v1 manifest, so no other check looks into it.
   */
  value: Record<string, unknown> | null
}

const manifestChecker = new CanonicalChecker({ integersOnly: true, maxDepth: 32 })
const FATAL_JSON = new Set<number>([JsonCode.NOT_UTF8, JsonCode.BOM, JsonCode.SYNTAX, JsonCode.TOO_DEEP])

function memberAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let v = value
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined
    v = (v as Record<PropertyKey, unknown>)[p]
  }
  return v
}

function fieldPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? String(p) : `.${String(p)}`
  return out || '(manifest)'
}

/**
 * Check 1: the bytes are RFC 8785 canonical JSON (integers within ±(2^53 − 1)) of an object with
 * `format_version` 1 and the members of the v1 manifest of its kind with their types.
 */
export function checkManifestBytes(bytes: Uint8Array, kind: ManifestKind): ManifestCheck {
  const findings: CheckFinding[] = []
  const code = manifestChecker.check(bytes, 0, bytes.length)
  if (code !== JsonCode.OK) {
    if (FATAL_JSON.has(code)) {
      findings.push({ check: 1, code: 'manifest.not-json', detail: `the manifest is not JSON: ${manifestChecker.describe()}` })
      return { findings, value: null }
    }
    findings.push({ check: 1, code: 'manifest.not-canonical', detail: `the manifest is not RFC 8785 canonical JSON: ${manifestChecker.describe()}` })
  }
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'))
  } catch (err) {
    findings.push({ check: 1, code: 'manifest.not-json', detail: `the manifest is not JSON: ${(err as Error).message}` })
    return { findings, value: null }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    findings.push({ check: 1, code: 'manifest.field', detail: 'the manifest is not a JSON object' })
    return { findings, value: null }
  }
  const m = value as Record<string, unknown>
  if (m.format_version !== FORMAT_VERSION) {
    const v = m.format_version === undefined ? 'absent' : JSON.stringify(m.format_version)
    findings.push({ check: 1, code: 'manifest.unknown-version', detail: `format_version is ${v}; this verifier reads format major ${FORMAT_VERSION} only` })
    return { findings, value: null }
  }
  const parsed = (kind === 'hourly' ? hourlySchema : dailySchema).safeParse(m)
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const at = fieldPath(issue.path)
      const missing = issue.code === 'invalid_type' && memberAt(m, issue.path) === undefined
      findings.push({ check: 1, code: 'manifest.field', detail: `${at}: ${missing ? 'missing' : issue.message}` })
    }
  }
  if (kind === 'hourly') findings.push(...checkEmptyLists(m), ...checkCompleteness(m))
  return { findings, value: m }
}

/**
 * Check 1: the lists the spec says are absent when empty (`unrepresentable_frames`, `conflicts`, each
 * replica's `gap_free_runs`) are not written as []. A separate rule rather than part of the shapes, so that an
 * empty list does not make the later checks skip the member that holds it.
 */
function checkEmptyLists(m: Record<string, unknown>): CheckFinding[] {
  const paths: (string | number)[][] = [['unrepresentable_frames'], ['conflicts']]
  if (Array.isArray(m.replicas)) m.replicas.forEach((_, i) => paths.push(['replicas', i, 'gap_free_runs']))
  const out: CheckFinding[] = []
  for (const path of paths) {
    const list = memberAt(m, path)
    if (Array.isArray(list) && list.length === 0) out.push({ check: 1, code: 'manifest.field', detail: `${fieldPath(path)}: absent when empty, not []` })
  }
  return out
}

/** A reason that the hourly manifest's own lists show or refute: the reason is stated exactly when its list has entries. */
const LISTED_REASONS: readonly { reason: CompletenessReason; list: string }[] = [
  { reason: 'sequence_gap', list: 'sequence_gaps' },
  { reason: 'checksum_failure', list: 'checksum_failures' },
  { reason: 'unrepresentable_value', list: 'unrepresentable_frames' },
]

/**
 * Check 1, the completeness an hourly manifest states against the rest of it (docs/verify.md): an hour is
 * complete exactly when it has no reason; a missing hour has no frames; sequence_gap, checksum_failure and
 * unrepresentable_value are stated exactly when their lists have entries (an unrepresentable frame must be a
 * line of the raw file); reconnect needs a reconnect window. Each rule is judged only when the members it
 * reads have the v1 shape (a malformed one is its own `manifest.field` finding).
 */
function checkCompleteness(m: Record<string, unknown>): CheckFinding[] {
  const out: CheckFinding[] = []
  const completeness = section(completenessSchema, m, 'completeness')
  if (!completeness) return out
  const { status, reasons } = completeness
  const finding = (detail: string) => out.push({ check: 1, code: 'manifest.completeness', detail })
  if (status === 'complete' && reasons.length > 0) finding(`the hour is complete, but its reasons are ${reasons.join(', ')}`)
  if (status !== 'complete' && reasons.length === 0) finding(`the hour is ${status}, but it states no reason`)
  const replicas = section(replicasSchema, m, 'replicas')
  const files = section(filesSchema, m, 'files')
  const rawRows = files?.find((f) => f.name === RAW_FILE_NAME)?.rows
  if (status === 'missing') {
    const framesOf = replicas?.filter((r) => r.frames > 0).map((r) => `replica ${r.replica} received ${r.frames}`) ?? []
    if (rawRows !== undefined && rawRows > 0) framesOf.unshift(`${RAW_FILE_NAME} has ${rawRows} rows`)
    if (m.frame_time_bounds !== undefined) framesOf.push('frame_time_bounds is present')
    if (framesOf.length > 0) finding(`the hour is missing, but it has frames: ${framesOf.join('; ')}`)
  }
  for (const { reason, list } of LISTED_REASONS) {
    const value = m[list]
    if (value !== undefined && !Array.isArray(value)) continue
    const entries = value?.length ?? 0
    const stated = reasons.includes(reason)
    if (stated && entries === 0) finding(`the reasons include ${reason}, but ${list} is ${value === undefined ? 'absent' : 'empty'}`)
    if (!stated && entries > 0) finding(`${list} has ${entries} entries, but the reasons lack ${reason}`)
  }
  const unrepresentable = section(z.array(count), m, 'unrepresentable_frames')
  if (unrepresentable && rawRows !== undefined) {
    const beyond = unrepresentable.find((i) => i >= rawRows)
    if (beyond !== undefined) finding(`unrepresentable_frames lists line index ${beyond}, but ${RAW_FILE_NAME} has ${rawRows} rows`)
  }
  if (replicas && reasons.includes('reconnect') && replicas.every((r) => r.reconnect_windows.length === 0)) {
    finding('the reasons include reconnect, but no replica has a reconnect window')
  }
  return out
}

/** The member `key` of a manifest when it has the v1 shape, else undefined (its problem is a check 1 finding). */
function section<S extends z.ZodType>(schema: S, m: Record<string, unknown>, key: string): z.infer<S> | undefined {
  const r = schema.safeParse(m[key])
  return r.success ? r.data : undefined
}

// ---------------------------------------------------------------------------------------------------
// Times and dates

const NS_PER_HOUR = 3_600_000_000_000n
const NS_PER_DAY = 86_400_000_000_000n

function dateOf(ns: bigint): string {
  return new Date(Number(ns / 1_000_000n)).toISOString().slice(0, 10)
}

function hourLabel(ns: bigint): string {
  return new Date(Number(ns / 1_000_000n)).toISOString().slice(0, 13)
}

function timeText(ns: bigint): string {
  try {
    return formatTime(ns)
  } catch {
    return `${ns} ns`
  }
}

// ---------------------------------------------------------------------------------------------------
// Checks 8 and 9 over a manifest and the facts of its raw file

/** What the raw file says about one replica (check 8). */
export interface ReplicaClockFacts {
  /** Receipts of the replica in the raw file. */
  receipts: number
  /** The largest clock_error_bound among them, or -1 when none carries one. */
  maxBound: number
  /** Receipts without clock_error_bound. */
  unbounded: number
}

const REPLICA_NAMES: readonly Replica[] = ['a', 'b']

/**
 * Check 8: each replica with receipts carries `clock` and no other replica does; `source` "nts" is
 * present exactly when `error_bound_max` is; `error_bound_max` and `unbounded` equal the values
 * recomputed from the raw file; the reasons include `clock_offset_unknown` exactly when some line has
 * no receipt with clock_error_bound (`unboundedLines` > 0, the first such line is `firstUnboundedLine`).
 */
export function checkClockSummaries(
  manifest: Record<string, unknown>,
  facts: readonly ReplicaClockFacts[],
  unboundedLines: number,
  firstUnboundedLine: number,
): CheckFinding[] {
  const out: CheckFinding[] = []
  const replicas = section(replicasSchema, manifest, 'replicas')
  if (replicas) {
    const seen = new Set<string>()
    for (const entry of replicas) {
      if (seen.has(entry.replica)) out.push({ check: 8, code: 'clock.summary', detail: `replica ${entry.replica} is listed twice in replicas` })
      seen.add(entry.replica)
    }
    REPLICA_NAMES.forEach((name, r) => {
      const f = facts[r]!
      const entry = replicas.find((e) => e.replica === name)
      const clock = entry?.clock
      if (f.receipts === 0) {
        if (clock) out.push({ check: 8, code: 'clock.summary', detail: `replica ${name} has no receipt in the raw file but carries clock` })
        return
      }
      if (!clock) {
        out.push({ check: 8, code: 'clock.summary', detail: `replica ${name} has ${f.receipts} receipts in the raw file but ${entry ? 'carries no clock' : 'is not listed in replicas'}` })
        return
      }
      const bounded = f.maxBound >= 0
      if ((clock.source !== undefined) !== (clock.error_bound_max !== undefined)) {
        out.push({ check: 8, code: 'clock.summary', detail: `replica ${name}: clock.source is ${clock.source === undefined ? 'absent' : 'present'} but clock.error_bound_max is ${clock.error_bound_max === undefined ? 'absent' : 'present'}` })
      }
      if (bounded) {
        if (clock.error_bound_max !== f.maxBound) {
          out.push({ check: 8, code: 'clock.summary', detail: `replica ${name}: clock.error_bound_max is ${clock.error_bound_max ?? 'absent'}, the raw file's largest clock_error_bound is ${f.maxBound}` })
        }
        if (clock.source === undefined) out.push({ check: 8, code: 'clock.summary', detail: `replica ${name}: clock.source is absent, but ${f.receipts - f.unbounded} receipts carry clock_error_bound` })
      } else if (clock.error_bound_max !== undefined || clock.source !== undefined) {
        out.push({ check: 8, code: 'clock.summary', detail: `replica ${name}: every receipt is unbounded, but clock carries ${clock.source !== undefined ? 'source' : 'error_bound_max'}` })
      }
      if (clock.unbounded !== f.unbounded) {
        out.push({ check: 8, code: 'clock.summary', detail: `replica ${name}: clock.unbounded is ${clock.unbounded}, the raw file has ${f.unbounded} receipts without clock_error_bound` })
      }
    })
  }
  const completeness = section(completenessSchema, manifest, 'completeness')
  if (completeness) {
    const listed = completeness.reasons.includes('clock_offset_unknown')
    if (listed && unboundedLines === 0) {
      out.push({ check: 8, code: 'clock.reason', detail: 'the reasons include clock_offset_unknown, but every raw-file line has a receipt with clock_error_bound' })
    } else if (!listed && unboundedLines > 0) {
      out.push({ check: 8, code: 'clock.reason', detail: `the reasons lack clock_offset_unknown, but ${unboundedLines} raw-file lines (the first is line ${firstUnboundedLine}) have no receipt with clock_error_bound` })
    }
  }
  return out
}

/** What the raw file says about the replicas together: lines with a receipt of both, and of one only. */
interface AgreementFacts { both: number; oneOnly: number }

/**
 * Check 8, the replicas' counts (docs/verify.md): each replica's `frames` is the number of raw-file lines
 * with a receipt of it, and `replica_agreement`'s `both` and `one_only` count the lines with receipts of
 * both replicas and of one.
 */
function checkReplicaCounts(manifest: Record<string, unknown>, facts: readonly ReplicaClockFacts[], agreement: AgreementFacts): CheckFinding[] {
  const out: CheckFinding[] = []
  const replicas = section(replicasSchema, manifest, 'replicas')
  REPLICA_NAMES.forEach((name, r) => {
    const entry = replicas?.find((e) => e.replica === name)
    const receipts = facts[r]!.receipts
    if (entry && entry.frames !== receipts) {
      out.push({ check: 8, code: 'replicas.frames', detail: `replica ${name}: frames is ${entry.frames}, the raw file has ${receipts} lines with its receipt` })
    }
  })
  const stated = section(z.looseObject({ both: count, one_only: count }), manifest, 'replica_agreement')
  if (stated && (stated.both !== agreement.both || stated.one_only !== agreement.oneOnly)) {
    out.push({ check: 8, code: 'replicas.agreement', detail: `replica_agreement states both ${stated.both} and one_only ${stated.one_only}; the raw file has ${agreement.both} lines received by both replicas and ${agreement.oneOnly} by one` })
  }
  return out
}

/**
 * Check 9: each gap-free run lies within [start, end) of the hour, ends after it starts, and names a
 * connection that appears in a receipt of its replica (`connections` null: the raw file could not be
 * read whole, and that part is skipped).
 */
export function checkGapFreeRuns(
  manifest: Record<string, unknown>,
  hourStart: bigint,
  hourEnd: bigint,
  connections: readonly ReadonlySet<string>[] | null,
): CheckFinding[] {
  const out: CheckFinding[] = []
  const replicas = section(replicasSchema, manifest, 'replicas')
  if (!replicas) return out
  for (const entry of replicas) {
    const r = entry.replica === 'a' ? 0 : 1
    ;(entry.gap_free_runs ?? []).forEach((run, i) => {
      const where = `replica ${entry.replica} gap_free_runs[${i}] (${run.instrument}, connection ${JSON.stringify(run.connection)})`
      const start = tryParseTime(run.start_time)!
      const end = tryParseTime(run.end_time)!
      if (start < hourStart || end > hourEnd) {
        out.push({ check: 9, code: 'runs.outside-hour', detail: `${where} [${run.start_time}, ${run.end_time}) is not within the hour [${timeText(hourStart)}, ${timeText(hourEnd)})` })
      }
      if (end <= start) out.push({ check: 9, code: 'runs.end-not-after-start', detail: `${where} ends at ${run.end_time}, not after its start ${run.start_time}` })
      if (connections && !connections[r]!.has(run.connection)) {
        out.push({ check: 9, code: 'runs.unknown-connection', detail: `${where}: no receipt of replica ${entry.replica} in the raw file has that connection` })
      }
    })
  }
  return out
}

// ---------------------------------------------------------------------------------------------------
// Check 5 over one day: the daily manifest lists exactly the day's hourly manifests

/** One stored version (exact bytes) of a manifest. */
export interface ManifestVersion {
  blake3: string
  /** Roots holding exactly these bytes, in the order given. */
  roots: string[]
  /** previous_manifest_blake3 when readable (undefined when not). */
  previous: string | null | undefined
  /** completeness.status of an hourly manifest, when readable. */
  status: string | undefined
}

/**
 * Check 5, daily part: `hours` lists each hourly manifest of the day once, in order, with the BLAKE3 of
 * its bytes and its status, and no hour the day does not hold. `present` maps `HH` to the versions of
 * that hour's manifest (several only for a fork, which is its own finding; an entry may match any).
 */
export function checkDailyHours(daily: Record<string, unknown>, present: ReadonlyMap<string, readonly ManifestVersion[]>): CheckFinding[] {
  const out: CheckFinding[] = []
  const hours = section(dailyHoursSchema, daily, 'hours')
  if (!hours) return out
  const listed = new Set<string>()
  let last = ''
  for (const [i, e] of hours.entries()) {
    if (listed.has(e.hour)) out.push({ check: 5, code: 'chain.daily-hours', detail: `hours[${i}]: hour ${e.hour} is listed twice` })
    else if (e.hour < last) out.push({ check: 5, code: 'chain.daily-hours', detail: `hours[${i}]: hour ${e.hour} is listed after hour ${last}; hours are in order` })
    listed.add(e.hour)
    if (e.hour > last) last = e.hour
    const versions = present.get(e.hour)
    if (!versions) {
      out.push({ check: 5, code: 'chain.daily-hours', detail: `hours[${i}]: hour ${e.hour} has no hourly manifest in any root` })
      continue
    }
    const match = versions.find((v) => v.blake3 === e.blake3)
    if (!match) {
      out.push({ check: 5, code: 'chain.daily-hours', detail: `hours[${i}]: hour ${e.hour} is listed with blake3 ${e.blake3}, its manifest's is ${versions.map((v) => v.blake3).join(' / ')}` })
    } else if (match.status !== undefined && match.status !== e.status) {
      out.push({ check: 5, code: 'chain.daily-hours', detail: `hours[${i}]: hour ${e.hour} is listed as ${e.status}, its manifest says ${match.status}` })
    }
  }
  for (const hh of present.keys()) {
    if (!listed.has(hh)) out.push({ check: 5, code: 'chain.daily-hours', detail: `hour ${hh} has an hourly manifest but the daily manifest does not list it` })
  }
  return out
}

// ---------------------------------------------------------------------------------------------------
// Check 10: the conflicts lines, checked as the raw file streams by

/** One line of one entry of `conflicts`, sorted by raw_index for the streaming pass. */
interface ConflictLineCheck {
  rawIndex: number
  blake3: string
  instrument: string
  tradeId: string
  where: string
}

function conflictLines(manifest: Record<string, unknown>): ConflictLineCheck[] {
  const conflicts = section(conflictsSchema, manifest, 'conflicts') ?? []
  const out: ConflictLineCheck[] = []
  conflicts.forEach((c, i) => {
    c.lines.forEach((l, j) => {
      out.push({ rawIndex: l.raw_index, blake3: l.blake3, instrument: c.instrument, tradeId: c.trade_id, where: `conflicts[${i}].lines[${j}] (trade_id ${JSON.stringify(c.trade_id)} of ${c.instrument})` })
    })
  })
  return out.sort((x, y) => x.rawIndex - y.rawIndex)
}

/**
 * Whether a frame carries `tradeId` of `instrument`: with the venue's adapter, some row it makes has both;
 * without one, the payload text contains the trade id as written (a weaker test; docs/verify.md).
 */
export function frameCarriesTrade(venue: string, channel: Channel, payload: Uint8Array, binary: boolean, instrument: string, tradeId: string): { ok: boolean; detail: string } {
  const adapter = findVenue(venue)
  if (adapter && adapter.channels.includes(channel)) {
    const c = adapter.classify(channel, payload, binary)
    if (c.kind !== 'rows') return { ok: false, detail: `the ${venue} adapter reads the frame as ${c.kind === 'control' ? 'a control message' : c.kind === 'data' ? 'data kept raw' : `unrepresentable (${c.reason})`}, with no trade` }
    if (c.rows.some((row) => row.trade_id === tradeId && row.instrument === instrument)) return { ok: true, detail: '' }
    const ids = c.rows.map((row) => `${row.instrument}/${row.trade_id ?? 'null'}`).join(', ')
    return { ok: false, detail: `the frame's trades are ${ids || 'none'}` }
  }
  const text = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString(binary ? 'latin1' : 'utf8')
  return text.includes(tradeId) ? { ok: true, detail: '' } : { ok: false, detail: `the payload text does not contain ${JSON.stringify(tradeId)} (no adapter for venue ${venue}: text search)` }
}

// ---------------------------------------------------------------------------------------------------
// The raw file's lines: checks 3 and 7, and the facts of checks 4, 8, 9 and 10

export interface RawHourOptions {
  /** Report fields the spec does not define (verify-raw's --strict). */
  strict?: boolean
  venue: string
  channel: Channel
}

/**
 * Checks one hour's raw-file lines as they stream by, in LineBatches: each line a canonical envelope
 * (check 3) whose receipts pair offset and bound with bound ≥ |offset| (check 7), frame times in the hour
 * and never decreasing. Keeps what the later checks need: each line's frame time as ns from the hour's
 * start (a Float64Array grown as lines arrive; NaN for a line without one), per-replica clock facts (8),
 * the connections of each replica's receipts (9), and checks the lines `conflicts` names as they pass (10).
 * Reusable: {@link reset} before each hour keeps the arrays.
 */
export class RawHourChecker {
  frameOffsets = new Float64Array(1 << 12)
  /** Lines seen so far (1 + the index of the last line, counting lines too long to check). */
  lines = 0
  readonly facts: ReplicaClockFacts[] = [{ receipts: 0, maxBound: -1, unbounded: 0 }, { receipts: 0, maxBound: -1, unbounded: 0 }]
  readonly agreement: AgreementFacts = { both: 0, oneOnly: 0 }
  /** Lines with a finding of their own: their receipts may not have been read, so counts over lines are not compared. */
  faultyLines = 0
  unboundedLines = 0
  firstUnboundedLine = 0
  readonly connections: [Set<string>, Set<string>] = [new Set(), new Set()]

  private hourStartSec = 0
  /** Entries of frameOffsets written (lines the splitter skipped are filled in with NaN). */
  private filled = 0
  private emit: (f: CheckFinding) => void = () => undefined
  private lastSec = -Infinity
  private lastNsec = 0
  private readonly lastConnection: (Uint8Array | null)[] = [null, null]
  private readonly result: EnvelopeResult = newEnvelopeResult()
  private envelopeOptions: { strict: boolean } = { strict: false }
  private opts: RawHourOptions = { venue: '', channel: 'trades' }
  private conflicts: ConflictLineCheck[] = []
  private nextConflict = 0
  private nextConflictIndex = -1

  constructor(private readonly lineHasher: IHasher) {}

  /**
   * Starts an hour: `hourStartSec` its start in epoch seconds; `manifest` for the conflicts to check;
   * `emit` receives the findings (the caller adds the file's path).
   */
  reset(hourStartSec: number, manifest: Record<string, unknown> | null, opts: RawHourOptions, emit: (f: CheckFinding) => void): void {
    this.hourStartSec = hourStartSec
    this.opts = opts
    this.emit = emit
    this.envelopeOptions = { strict: opts.strict === true }
    this.lines = 0
    this.filled = 0
    this.lastSec = -Infinity
    this.lastNsec = 0
    for (const f of this.facts) {
      f.receipts = 0
      f.maxBound = -1
      f.unbounded = 0
    }
    this.agreement.both = 0
    this.agreement.oneOnly = 0
    this.faultyLines = 0
    this.unboundedLines = 0
    this.firstUnboundedLine = 0
    this.connections[0].clear()
    this.connections[1].clear()
    this.lastConnection[0] = null
    this.lastConnection[1] = null
    this.conflicts = manifest ? conflictLines(manifest) : []
    this.nextConflict = 0
    this.nextConflictIndex = this.conflicts.length > 0 ? this.conflicts[0]!.rawIndex : -1
  }

  /** A finding the line splitter made (line too long, last line unterminated): the line still counts. */
  splitterFinding(f: Finding): void {
    const code = f.code
    if (typeof f.line === 'number' && code === 'raw.line-too-long') this.lines = Math.max(this.lines, f.line)
    this.faultyLines++
    this.emit({ check: 3, code, detail: f.detail, line: f.line })
  }

  private grow(n: number): void {
    let size = this.frameOffsets.length
    while (size < n) size *= 2
    const next = new Float64Array(size)
    next.set(this.frameOffsets.subarray(0, this.filled))
    this.frameOffsets = next
  }

  /** Lines up to `end` that no batch brought (too long to check) have no frame time. */
  private fillTo(end: number): void {
    if (end > this.frameOffsets.length) this.grow(end)
    this.frameOffsets.fill(NaN, this.filled, end)
    if (end > this.filled) this.filled = end
  }

  /** After the last batch: every counted line has an entry in frameOffsets. */
  finishLines(): void {
    this.fillTo(this.lines)
  }

  batch(b: LineBatch): void {
    const { data, starts, ends } = b
    const n = b.count
    const base = b.firstLine - 1
    if (base + n > this.frameOffsets.length) this.grow(base + n)
    // Lines the splitter skipped (too long) have no frame time.
    if (this.filled < base) this.fillTo(base)
    const off = this.frameOffsets
    if (this.nextConflictIndex >= 0 && this.nextConflictIndex < base) this.skipConflictsBefore(base)
    const res = this.result
    const opts = this.envelopeOptions
    const h0 = this.hourStartSec
    const h1 = h0 + 3600
    let lastSec = this.lastSec
    let lastNsec = this.lastNsec
    const present = res.replicaPresent
    for (let i = 0; i < n; i++) {
      const idx = base + i
      const s = starts[i]!
      const e = ends[i]!
      checkEnvelope(data, s, e, res, opts)
      if (!res.ok) {
        this.envelopeFindings(idx + 1)
        this.faultyLines++
      }
      if (res.hasFrameTime) {
        const sec = res.frameSec
        const nsec = res.frameNsec
        off[idx] = (sec - h0) * 1e9 + nsec
        if (sec < h0 || sec >= h1) {
          this.emit({ check: 3, code: 'raw.frame-time-outside-hour', line: idx + 1, detail: `frame time ${timeText(BigInt(sec) * 1_000_000_000n + BigInt(nsec))} is outside the hour ${hourLabel(BigInt(h0) * 1_000_000_000n)}` })
        }
        if (sec < lastSec || (sec === lastSec && nsec < lastNsec)) {
          this.emit({ check: 3, code: 'raw.frame-time-decreasing', line: idx + 1, detail: `frame time ${timeText(BigInt(sec) * 1_000_000_000n + BigInt(nsec))} is before the previous line's ${timeText(BigInt(lastSec) * 1_000_000_000n + BigInt(lastNsec))}` })
        }
        lastSec = sec
        lastNsec = nsec
      } else {
        off[idx] = NaN
      }
      if (present[0] !== 0) this.receipt(0, data, res)
      if (present[1] !== 0) this.receipt(1, data, res)
      if (present[0] !== 0 && present[1] !== 0) this.agreement.both++
      else if (present[0] !== 0 || present[1] !== 0) this.agreement.oneOnly++
      if (res.receiptCount > 0 && res.unboundedReceipts === res.receiptCount) {
        if (this.unboundedLines++ === 0) this.firstUnboundedLine = idx + 1
      }
      if (idx === this.nextConflictIndex) this.conflictLine(idx, data, s, e, res)
    }
    this.lastSec = lastSec
    this.lastNsec = lastNsec
    this.filled = base + n
    if (this.lines < base + n) this.lines = base + n
  }

  private envelopeFindings(line: number): void {
    const res = this.result
    for (let f = 0; f < res.findingCount; f++) {
      const raw = res.codes[f]!
      const clock = CLOCK_CODES[raw]
      this.emit(clock ? { check: 7, code: clock, line, detail: res.details[f]! } : { check: 3, code: raw, line, detail: res.details[f]! })
    }
  }

  private receipt(r: number, data: Uint8Array, res: EnvelopeResult): void {
    const f = this.facts[r]!
    f.receipts++
    const bound = res.replicaBound[r]!
    if (bound >= 0) {
      if (bound > f.maxBound) f.maxBound = bound
    } else {
      f.unbounded++
    }
    const tok = res.replicaConnectionToken[r]!
    if (tok < 0) return
    const tape = res.json.tape
    const s = tape.start[tok]!
    const e = tape.end[tok]!
    const last = this.lastConnection[r] ?? null
    if (last !== null && last.length === e - s) {
      let i = 0
      while (i < last.length && last[i] === data[s + i]) i++
      if (i === last.length) return
    }
    this.lastConnection[r] = data.slice(s, e)
    this.connections[r]!.add(tape.stringValue(data, tok))
  }

  private skipConflictsBefore(index: number): void {
    while (this.nextConflict < this.conflicts.length && this.conflicts[this.nextConflict]!.rawIndex < index) this.nextConflict++
    this.nextConflictIndex = this.nextConflict < this.conflicts.length ? this.conflicts[this.nextConflict]!.rawIndex : -1
  }

  private conflictLine(idx: number, data: Uint8Array, s: number, e: number, res: EnvelopeResult): void {
    const h = this.lineHasher
    h.init()
    h.update(data.subarray(s, e))
    const digest = h.digest('hex')
    let payload: { bytes: Uint8Array; binary: boolean } | null = null
    if (res.payloadToken >= 0) {
      try {
        const text = res.json.tape.stringValue(data, res.payloadToken)
        payload = res.payloadBase64 ? { bytes: Buffer.from(text, 'base64'), binary: true } : { bytes: Buffer.from(text, 'utf8'), binary: false }
      } catch {
        payload = null
      }
    }
    while (this.nextConflict < this.conflicts.length && this.conflicts[this.nextConflict]!.rawIndex === idx) {
      const c = this.conflicts[this.nextConflict++]!
      if (c.blake3 !== digest) {
        this.emit({ check: 10, code: 'conflict.blake3', line: idx + 1, detail: `${c.where} lists blake3 ${c.blake3}, the line's is ${digest}` })
      }
      if (!payload) {
        this.emit({ check: 10, code: 'conflict.trade-id', line: idx + 1, detail: `${c.where}: the line has no readable payload` })
      } else {
        const carried = frameCarriesTrade(this.opts.venue, this.opts.channel, payload.bytes, payload.binary, c.instrument, c.tradeId)
        if (!carried.ok) this.emit({ check: 10, code: 'conflict.trade-id', line: idx + 1, detail: `${c.where}: ${carried.detail}` })
      }
    }
    this.nextConflictIndex = this.nextConflict < this.conflicts.length ? this.conflicts[this.nextConflict]!.rawIndex : -1
  }

  /** After the last line: conflicts lines beyond the file (check 10). Only when the file was read whole. */
  finishConflicts(): CheckFinding[] {
    const out: CheckFinding[] = []
    for (const c of this.conflicts) {
      if (c.rawIndex >= this.lines) {
        out.push({ check: 10, code: 'conflict.raw-index', detail: `${c.where} names raw_index ${c.rawIndex}, but the raw file has ${this.lines} lines` })
      }
    }
    return out
  }
}

// ---------------------------------------------------------------------------------------------------
// Check 4 over the row groups of one table

/**
 * Checks the rows of one table file group by group: raw_index present, never decreasing and naming a
 * line of the raw file, and receive_time equal to that line's frame time. `frameOffsets` / `lines` are
 * the raw pass's (null when the raw file could not be read whole: those two parts are skipped).
 */
export class TableRowChecker {
  rows = 0
  private prev: bigint | null = null
  /** int64 scratch: a row's receive_time minus the hour's start, computed from 32-bit halves without a BigInt per row. */
  private readonly view = new DataView(new ArrayBuffer(8))
  private readonly startHi: number
  private readonly startLo: number

  /**
   * `unrepresentable`: the raw-file line indices the manifest lists in unrepresentable_frames, which the
   * spec says yield no rows.
   */
  constructor(
    private readonly hourStartNs: bigint,
    private readonly raw: { frameOffsets: Float64Array; lines: number } | null,
    private readonly emit: (f: CheckFinding) => void,
    private readonly unrepresentable: ReadonlySet<number> = new Set(),
  ) {
    this.view.setBigInt64(0, hourStartNs, true)
    this.startLo = this.view.getUint32(0, true)
    this.startHi = this.view.getInt32(4, true)
  }

  /** rt − hour start in ns, exact while it is within ±2^53 (far beyond an hour; frame offsets are too). */
  private offset(rt: bigint): number {
    const v = this.view
    v.setBigInt64(0, rt, true)
    return (v.getInt32(4, true) - this.startHi) * 4294967296 + (v.getUint32(0, true) - this.startLo)
  }

  group(rawIndex: readonly (bigint | null)[], receiveTime: readonly (bigint | null)[], rowStart: number): void {
    const raw = this.raw
    const lines = raw ? BigInt(raw.lines) : 0n
    const off = raw?.frameOffsets
    const h0 = this.hourStartNs
    for (let j = 0; j < rawIndex.length; j++) {
      const row = rowStart + j
      const ri = rawIndex[j]
      const rt = receiveTime[j] ?? null
      if (ri === null || ri === undefined) {
        this.emit({ check: 4, code: 'table.raw-index-missing', detail: `row ${row} has no raw_index` })
        continue
      }
      if (this.prev !== null && ri < this.prev) {
        this.emit({ check: 4, code: 'table.raw-index-decreasing', detail: `row ${row}: raw_index ${ri} is below the previous row's ${this.prev}` })
      }
      this.prev = ri
      if (this.unrepresentable.size > 0 && this.unrepresentable.has(Number(ri))) {
        this.emit({ check: 4, code: 'table.unrepresentable-row', detail: `row ${row}: raw_index ${ri} is listed in unrepresentable_frames, whose frames yield no rows` })
      }
      if (!raw || !off) continue
      if (ri < 0n || ri >= lines) {
        this.emit({ check: 4, code: 'table.raw-index-missing', detail: `row ${row}: raw_index ${ri} names no line of the raw file (${raw.lines} lines)` })
        continue
      }
      if (rt === null) {
        this.emit({ check: 4, code: 'table.receive-time', detail: `row ${row} has no receive_time` })
        continue
      }
      const expected = off[Number(ri)]!
      // A line without a frame time has its own check 3 finding; its rows cannot be compared.
      if (Number.isNaN(expected)) continue
      if (this.offset(rt) !== expected) {
        this.emit({ check: 4, code: 'table.receive-time', detail: `row ${row}: receive_time ${timeText(rt)} is not the frame time ${timeText(h0 + BigInt(expected))} of raw line ${Number(ri) + 1} (raw_index ${ri})` })
      }
    }
    this.rows += rawIndex.length
  }
}

// ---------------------------------------------------------------------------------------------------
// Files

const READ_BYTES = 1 << 20

/** File status for check 2: null when missing (or not a regular file, `why` says). */
async function fileSize(path: string): Promise<{ size: number } | { missing: string }> {
  try {
    const s = await stat(path)
    if (!s.isFile()) return { missing: 'is not a regular file' }
    return { size: s.size }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return { missing: 'does not exist' }
    throw err
  }
}

/** A file the manifest lists, open to read, or why it is not read (not a regular file). */
async function openListedFile(path: string): Promise<{ fh: FileHandle } | { refused: InputError }> {
  try {
    return await openRegularFile(path)
  } catch (err) {
    if (err instanceof InputError) return { refused: err }
    throw err
  }
}

/**
 * BLAKE3 of the first `bytes` bytes of a regular file that stat says holds at least that many, streamed:
 * no more is read, whatever the file holds past them (a file longer than its listed size is hashed no
 * further than that size). A file that shrank since is refused as changed.
 */
async function hashFile(path: string, bytes: number): Promise<{ blake3: string } | { refused: InputError }> {
  const h = await createIncrementalHash('blake3')
  const opened = await openListedFile(path)
  if ('refused' in opened) return opened
  const { fh } = opened
  try {
    const buf = Buffer.allocUnsafe(READ_BYTES)
    for (let read = 0; read < bytes; ) {
      const { bytesRead } = await fh.read(buf, 0, Math.min(READ_BYTES, bytes - read), read)
      if (bytesRead === 0) return { refused: new InputError(INPUT_CODES.changed, path, `shrank below ${bytes} bytes while read`) }
      read += bytesRead
      h.update(buf.subarray(0, bytesRead))
    }
  } finally {
    await fh.close()
  }
  return { blake3: h.digestHex() }
}

type Stored = { bytes: Buffer } | { missing: true } | { refused: InputError }

/** A manifest or signature as stored: its bytes, or that it is missing, or why it was not read (docs/limits.md). */
async function readStored(path: string, limit: ReadLimit): Promise<Stored> {
  try {
    return { bytes: await readInputFile(path, limit) }
  } catch (err) {
    if (err instanceof InputError) return { refused: err }
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return { missing: true }
    throw err
  }
}

function sizeFinding(size: number, listed: number): CheckFinding {
  const past = size > listed ? `: it is read no further than ${listed} bytes` : ''
  return { check: 2, code: 'file.size', detail: `the file has ${size} bytes, the manifest lists ${listed}${past}` }
}

/** `readBytes`: the bytes hashed, when a file longer than listed was hashed only that far. */
function blake3Finding(actual: string, listed: string, readBytes?: number): CheckFinding {
  const of = readBytes === undefined ? "the file's blake3" : `the blake3 of the file's first ${readBytes} bytes`
  return { check: 2, code: 'file.blake3', detail: `${of} is ${actual}, the manifest lists ${listed}` }
}

/** A file the verifier would not read, as a finding of `check`: file.not-regular, file.too-large, file.changed-while-read. */
function refusedFinding(check: CheckNumber, err: InputError): CheckFinding {
  return { check, code: `file.${err.code.slice('input.'.length)}`, detail: `${err.message}: not read` }
}

async function listDir(path: string): Promise<string[]> {
  try {
    return await readdir(path)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return []
    throw err
  }
}

/** Whether anything (a file of any kind, or a link) stands at `path`. */
async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path)
    return true
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return false
    throw err
  }
}

async function isDir(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory()
  } catch {
    return false
  }
}

/** A manifest file name that cannot leave its directory or name the manifest itself. */
function safeFileName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\\') && !name.includes('\0')
}

class LineRelay extends FindingSink {
  constructor(private readonly to: (f: Finding) => void) {
    super({ json: false, out: new Writable({ write: (_c, _e, cb) => cb() }) })
  }

  override add(finding: Finding): void {
    this.count++
    this.to(finding)
  }
}

// ---------------------------------------------------------------------------------------------------
// The walk

export interface VerifyOptions {
  /** Directories holding `recorder=.../venue=.../channel=...` trees; copies of one channel are one chain. */
  roots: readonly string[]
  /** The JWK Set signatures are checked against (check 6). */
  jwks: PublicJwks
  /** Only this chain (sealed-read): the others under the roots are not walked. */
  chain?: { recorder: string; venue: string; channel: string }
  /** First date (YYYY-MM-DD, inclusive) to verify; the chain link into it is accepted (docs/verify.md). */
  from?: string
  /** Last date (inclusive). */
  to?: string
  strict?: boolean
  signal?: AbortSignal
  /** Where findings go, in the order they are found. */
  report: (f: VerifyFinding) => void
  /** zstd caps; verify-raw's defaults when absent. */
  decode?: Partial<Pick<DecodeOptions, 'maxRatio' | 'maxOutputBytes' | 'windowLogMax'>>
  maxLineBytes?: number
  /**
   * For roots mirrored from object storage (mirrored-root.ts): makes the files below `rel` (a date folder:
   * its manifests; an hour folder: its files) present in the root's mirror before they are read, and gives
   * what lets them go after.
   */
  mirror?: { fetch(root: string, rel: string): Promise<() => Promise<void>> }
  /**
   * Raw files up to this many bytes (as stored) are decompressed on this thread, larger ones on a worker
   * thread, whose start costs about what decompressing 200 MB here does. Default 16 MiB.
   */
  inProcessMaxBytes?: number
}

/** What the walk yields after each hour: for progress and the `hours` count. */
export class HourVerified {
  readonly itemCount = 1
  constructor(
    readonly path: string,
    /** Decompressed bytes of the raw file(s) checked line by line. */
    readonly byteCount: number,
  ) {}
}

export interface VerifySummary {
  chains: number
  hours: number
  days: number
}

interface Chain {
  rel: string
  recorder: string
  venue: string
  channel: string
  roots: string[]
}

/**
 * Walks the roots and runs the ten checks: chains (recorder, venue, channel) in name order, their dates
 * and hours in time order, one hour at a time. Yields one {@link HourVerified} per hour; findings go to
 * `opts.report`; {@link summary} counts what was verified.
 */
export class RecordVerifier {
  readonly summary: VerifySummary = { chains: 0, hours: 0, days: 0 }
  private readonly fromNs: bigint | null
  private raw: RawHourChecker | null = null
  private readonly decode: DecodeOptions

  constructor(private readonly opts: VerifyOptions) {
    this.fromNs = opts.from !== undefined ? dayStartNs(opts.from) : null
    if (opts.from !== undefined && this.fromNs === null) throw new RangeError(`from: ${opts.from} is not a date YYYY-MM-DD`)
    if (opts.to !== undefined && dayStartNs(opts.to) === null) throw new RangeError(`to: ${opts.to} is not a date YYYY-MM-DD`)
    this.decode = {
      mode: 'zstd',
      requireCompressed: false,
      maxRatio: opts.decode?.maxRatio ?? 1000,
      maxOutputBytes: opts.decode?.maxOutputBytes ?? 64 * 2 ** 30,
      windowLogMax: opts.decode?.windowLogMax ?? 27,
      recycle: true,
    }
  }

  private report(path: string, f: CheckFinding): void {
    this.opts.report({ check: f.check, code: f.code, path, line: f.line ?? null, detail: f.detail })
  }

  private aborted(): void {
    const s = this.opts.signal
    if (s?.aborted) throw s.reason ?? new PipeError('run.aborted', 'stopped')
  }

  /** The chains under the roots, each with the roots that hold it, in name order. */
  async chains(): Promise<Chain[]> {
    const byRel = new Map<string, Chain>()
    // A root given twice is one root, not a copy of itself.
    const roots = this.opts.roots.filter((r, i, all) => all.findIndex((o) => resolve(o) === resolve(r)) === i)
    for (const root of roots) {
      for (const r of await subdirs(root, 'recorder')) {
        for (const v of await subdirs(join(root, r), 'venue')) {
          for (const c of await subdirs(join(root, r, v), 'channel')) {
            const rel = `${r}/${v}/${c}`
            let chain = byRel.get(rel)
            if (!chain) byRel.set(rel, (chain = { rel, recorder: r.slice(9), venue: v.slice(6), channel: c.slice(8), roots: [] }))
            chain.roots.push(root)
          }
        }
      }
    }
    const only = this.opts.chain
    return [...byRel.values()]
      .filter((c) => !only || (c.recorder === only.recorder && c.venue === only.venue && c.channel === only.channel))
      .sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0))
  }

  /** Runs every check over every chain. */
  async *run(): AsyncGenerator<HourVerified> {
    this.raw = new RawHourChecker(await createBLAKE3())
    for (const chain of await this.chains()) {
      this.aborted()
      const before = this.summary.hours + this.summary.days
      yield* this.verifyChain(chain)
      if (this.summary.hours + this.summary.days > before) this.summary.chains++
    }
  }

  private inRange(date: string): boolean {
    return (this.opts.from === undefined || date >= this.opts.from) && (this.opts.to === undefined || date <= this.opts.to)
  }

  private async listDates(chain: Chain): Promise<string[]> {
    const dates = new Set<string>()
    for (const root of chain.roots) {
      for (const d of await listDir(join(root, chain.rel))) {
        if (d.startsWith('date=') && dayStartNs(d.slice(5)) !== null) dates.add(d.slice(5))
      }
    }
    return [...dates].sort()
  }

  /** Hours (`HH`) of a date whose hourly manifest exists in at least one root (as a file of any kind: reading it says more). */
  private async listHours(chain: Chain, date: string): Promise<string[]> {
    const hours = new Set<string>()
    for (const root of chain.roots) {
      const dayDir = join(root, chain.rel, `date=${date}`)
      for (const h of await listDir(dayDir)) {
        const hh = h.slice(5)
        if (!h.startsWith('hour=') || !/^([01]\d|2[0-3])$/.test(hh) || hours.has(hh)) continue
        if (await exists(join(dayDir, h, 'manifest.json'))) hours.add(hh)
      }
    }
    return [...hours].sort()
  }

  /** The stored copies of one manifest (path relative to the chain), grouped by exact bytes; a copy not read is a finding. */
  private async readVersions(chain: Chain, rel: string): Promise<StoredManifest[]> {
    const out: StoredManifest[] = []
    for (const root of chain.roots) {
      const path = join(root, chain.rel, rel)
      const stored = await readStored(path, MANIFEST_LIMIT)
      if ('refused' in stored) this.report(path, refusedFinding(1, stored.refused))
      if (!('bytes' in stored)) continue
      const bytes = stored.bytes
      const h = await blake3(bytes)
      const same = out.find((v) => v.version.blake3 === h)
      if (same) same.version.roots.push(root)
      else out.push({ bytes, version: { blake3: h, roots: [root], previous: undefined, status: undefined } })
    }
    return out
  }

  /** Check 5: one manifest path held with different bytes in different roots, reported once per path. */
  private forkFinding(chain: Chain, rel: string, stored: readonly StoredManifest[]): void {
    if (stored.length < 2) return
    const held = stored.map((v) => `${v.version.roots.join(', ')}: blake3 ${v.version.blake3}`).join('; ')
    this.report(join(stored[0]!.version.roots[0]!, chain.rel, rel), { check: 5, code: 'chain.fork', detail: `${rel} is held with ${stored.length} different contents (${held})` })
  }

  /** Check 6 for one stored copy: its manifest.json.sig verifies with a key valid at the signing instant. */
  private async checkSignature(path: string, bytes: Buffer, value: Record<string, unknown>, fallbackInstant: bigint): Promise<void> {
    const sigPath = `${path}.sig`
    const stored = await readStored(sigPath, SIGNATURE_LIMIT)
    if ('missing' in stored) {
      this.report(sigPath, { check: 6, code: 'sig.missing', detail: 'the manifest has no manifest.json.sig' })
      return
    }
    if ('refused' in stored) {
      this.report(sigPath, refusedFinding(6, stored.refused))
      return
    }
    const sig = stored.bytes
    let at = fallbackInstant
    try {
      at = manifestSigningInstant(value)
    } catch {
      // The interval or date is malformed (a check 1 finding): judge by the directory's interval.
    }
    const r = await verifyDetached(bytes, sig, this.opts.jwks, at)
    if (!r.ok) this.report(sigPath, { check: 6, code: r.code, detail: r.detail })
  }

  private async *verifyChain(chain: Chain): AsyncGenerator<HourVerified> {
    const allDates = await this.listDates(chain)
    const lastStored = allDates[allDates.length - 1]
    const hourLink = new ChainLink('hour', NS_PER_HOUR)
    const dayLink = new ChainLink('day', NS_PER_DAY)
    /** Days reported as having no daily manifest, so that no day is reported twice. */
    const skippedDays = new Set<bigint>()
    const daySkipped = (first: bigint, last: bigint) => {
      const days: bigint[] = []
      for (let d = first; d <= last; d += NS_PER_DAY) if (!skippedDays.has(d)) days.push(d)
      if (days.length === 0) return
      for (const d of days) skippedDays.add(d)
      const a = days[0]!
      const b = days[days.length - 1]!
      const what = a === b ? `day ${dateOf(a)} has` : `days ${dateOf(a)} to ${dateOf(b)} have`
      this.report(join(chain.roots[0]!, chain.rel, `date=${dateOf(a)}`), { check: 5, code: 'chain.day-skipped', detail: `${what} no daily manifest in any root, inside the chain` })
    }
    /** The last date walked that held a manifest. */
    let prevDate: bigint | null = null
    for (const date of allDates) {
      if (!this.inRange(date)) continue
      this.aborted()
      const release = await this.present(chain, `date=${date}`)
      try {
        const dayStart = dayStartNs(date)!
        const dayRel = `date=${date}`
        const hours = await this.listHours(chain, date)
        const daily = await this.readVersions(chain, `${dayRel}/manifest.json`)
        if (hours.length === 0 && daily.length === 0) continue
        this.summary.days++
        if (prevDate !== null && prevDate + NS_PER_DAY < dayStart) daySkipped(prevDate + NS_PER_DAY, dayStart - NS_PER_DAY)
        prevDate = dayStart

        const present = new Map<string, ManifestVersion[]>()
        for (const hh of hours) {
          this.aborted()
          const start = dayStart + BigInt(Number(hh)) * NS_PER_HOUR
          const { versions, progress } = await this.verifyHour(chain, `${dayRel}/hour=${hh}`, start)
          if (versions.length === 0) continue
          present.set(hh, versions)
          this.summary.hours++
          const path = join(versions[0]!.roots[0]!, chain.rel, dayRel, `hour=${hh}`, 'manifest.json')
          for (const f of await hourLink.link(start, versions, this.fromNs, () => this.storedHashes(chain, hourRelOf(start - NS_PER_HOUR)))) this.report(path, f)
          yield progress
        }

        if (daily.length === 0) {
          // The chain's last stored day may still be open: its daily manifest is not due yet.
          if (date !== lastStored) daySkipped(dayStart, dayStart)
          continue
        }
        this.forkFinding(chain, `${dayRel}/manifest.json`, daily)
        const dailyPath = (root: string) => join(root, chain.rel, dayRel, 'manifest.json')
        for (const { bytes, version } of daily) {
          const path = dailyPath(version.roots[0]!)
          const c = checkManifestBytes(bytes, 'daily')
          for (const f of c.findings) this.report(path, f)
          const m = c.value
          if (!m) continue
          version.previous = section(previousSchema, m, 'previous_manifest_blake3')
          for (const f of identityFindings(m, chain)) this.report(path, f)
          if (typeof m.date === 'string' && m.date !== date) this.report(path, { check: 5, code: 'chain.interval', detail: `date is ${m.date}, but the manifest sits in date=${date}` })
          for (const f of checkDailyHours(m, present)) this.report(path, f)
          for (const root of version.roots) await this.checkSignature(dailyPath(root), bytes, m, dayStart + NS_PER_DAY)
        }
        const versions = daily.map((d) => d.version)
        const path = dailyPath(versions[0]!.roots[0]!)
        for (const f of await dayLink.link(dayStart, versions, this.fromNs, () => this.storedHashes(chain, `date=${dateOf(dayStart - NS_PER_DAY)}`))) this.report(path, f)
        // The day the first daily manifest names as previous, when no root holds it.
        for (const d of dayLink.takeMissing()) daySkipped(d, d)
      } finally {
        await release()
      }
    }
  }

  /** Makes the files below `rel` (in the chain) present in every root; gives what lets them go (mirrored roots only). */
  private async present(chain: Chain, rel: string): Promise<() => Promise<void>> {
    const mirror = this.opts.mirror
    if (!mirror) return async () => undefined
    const releases: (() => Promise<void>)[] = []
    try {
      for (const root of chain.roots) releases.push(await mirror.fetch(root, join(chain.rel, rel)))
    } catch (err) {
      for (const r of releases) await r()
      throw err
    }
    return async () => { for (const r of releases) await r() }
  }

  /** The BLAKE3 of each stored copy of the manifest in directory `rel`, or null when no root holds one. */
  private async storedHashes(chain: Chain, rel: string): Promise<Set<string> | null> {
    const release = await this.present(chain, rel.split('/')[0]!)
    try {
      const stored = await this.readVersions(chain, `${rel}/manifest.json`)
      return stored.length === 0 ? null : new Set(stored.map((v) => v.version.blake3))
    } finally {
      await release()
    }
  }

  /** Checks one hour in every root that holds it; returns its manifest versions for the chain checks. */
  private async verifyHour(chain: Chain, rel: string, start: bigint): Promise<{ versions: ManifestVersion[]; progress: HourVerified }> {
    const release = await this.present(chain, rel)
    try {
      return await this.verifyHourIn(chain, rel, start)
    } finally {
      await release()
    }
  }

  private async verifyHourIn(chain: Chain, rel: string, start: bigint): Promise<{ versions: ManifestVersion[]; progress: HourVerified }> {
    const stored = await this.readVersions(chain, `${rel}/manifest.json`)
    this.forkFinding(chain, `${rel}/manifest.json`, stored)
    // No root held a copy that could be read (each refusal is a finding): the chain has no manifest here.
    if (stored.length === 0) return { versions: [], progress: new HourVerified(join(chain.roots[0]!, chain.rel, rel), 0) }
    const dir = (root: string) => join(root, chain.rel, rel)
    let rawBytes = 0
    for (const { bytes, version } of stored) {
      const manifestPath = join(dir(version.roots[0]!), 'manifest.json')
      const c = checkManifestBytes(bytes, 'hourly')
      for (const f of c.findings) this.report(manifestPath, f)
      const m = c.value
      if (!m) continue
      version.previous = section(previousSchema, m, 'previous_manifest_blake3')
      version.status = section(completenessSchema, m, 'completeness')?.status
      for (const f of identityFindings(m, chain)) this.report(manifestPath, f)
      const interval = section(intervalSchema, m, 'interval')
      if (interval && (tryParseTime(interval.start_time) !== start || tryParseTime(interval.end_time) !== start + NS_PER_HOUR)) {
        this.report(manifestPath, { check: 5, code: 'chain.interval', detail: `interval is [${interval.start_time}, ${interval.end_time}), but the manifest sits in the hour [${timeText(start)}, ${timeText(start + NS_PER_HOUR)})` })
      }
      for (const root of version.roots) await this.checkSignature(join(dir(root), 'manifest.json'), bytes, m, start + NS_PER_HOUR)

      const files = section(filesSchema, m, 'files')
      if (!files) continue // a check 1 finding: nothing to compare the directory with
      const entries = listedFiles(files, (f) => this.report(manifestPath, f))
      // The first root's copy is checked whole. Another root's copy of the same manifest is hashed
      // (check 2), and its content checked again only when its bytes differ from the first copy's.
      let primary: Map<string, string> | null = null
      for (const root of version.roots) {
        if (!primary) {
          const r = await this.verifyHourContent(chain, dir(root), start, m, entries, true)
          primary = r.actual
          rawBytes += r.rawBytes
          continue
        }
        const actual = new Map<string, string>()
        for (const e of entries) {
          const h = await this.checkFile(join(dir(root), e.name), e)
          if (h !== null) actual.set(e.name, h)
        }
        if ([...actual].some(([name, h]) => primary!.get(name) !== h)) {
          // Findings about bytes equal to the first copy's are not repeated.
          const rawSame = actual.get(RAW_FILE_NAME) !== undefined && actual.get(RAW_FILE_NAME) === primary.get(RAW_FILE_NAME)
          rawBytes += (await this.verifyHourContent(chain, dir(root), start, m, entries, false, !rawSame)).rawBytes
        }
      }
    }
    const versions = stored.map((s) => s.version)
    return { versions, progress: new HourVerified(dir(versions[0]!.roots[0]!), rawBytes) }
  }

  /**
   * Check 2 for one file: it exists with the listed size and BLAKE3. The size is taken from stat first, and
   * nothing past the listed size is read: a longer file (an 8 GiB sparse one, say) is hashed only that far.
   * Returns its BLAKE3, or null when it is missing, not read, or longer than listed (its contents are then
   * not checked). `report` false: the findings were made on another copy's bytes.
   */
  private async checkFile(path: string, entry: { size: number; blake3: string }, report = true): Promise<string | null> {
    const s = await fileSize(path)
    if ('missing' in s) {
      if (report) this.report(path, { check: 2, code: 'file.missing', detail: `the manifest lists this file, but it ${s.missing}` })
      return null
    }
    const longer = s.size > entry.size
    const h = await hashFile(path, longer ? entry.size : s.size)
    if ('refused' in h) {
      if (report) this.report(path, refusedFinding(2, h.refused))
      return null
    }
    if (report && s.size !== entry.size) this.report(path, sizeFinding(s.size, entry.size))
    if (report && h.blake3 !== entry.blake3) this.report(path, blake3Finding(h.blake3, entry.blake3, longer ? entry.size : undefined))
    return longer ? null : h.blake3
  }

  /**
   * Checks 2, 3, 4 and 7–10 over one hour directory. With `check2` false (a copy whose bytes differ from
   * the first root's, already hashed) check 2 is not repeated; with `rawFindings` false (its raw file is
   * the first copy's, byte for byte) the raw file is read for check 4 only, and checks 3 and 7–10 are not
   * repeated. Returns the actual BLAKE3 of the files.
   */
  private async verifyHourContent(
    chain: Chain,
    dir: string,
    start: bigint,
    m: Record<string, unknown>,
    entries: readonly FileEntryShape[],
    check2: boolean,
    rawFindings = true,
  ): Promise<{ actual: Map<string, string>; rawBytes: number }> {
    const manifestPath = join(dir, 'manifest.json')
    const channel = chain.channel as Channel
    const byName = new Map(entries.map((e) => [e.name, e]))
    const actual = new Map<string, string>()
    let rawBytes = 0

    // Check 3 (and 7, and the facts of 4, 8, 9, 10), with check 2 of the raw file on the same read.
    const raw = this.raw!
    const rawEntry = byName.get(RAW_FILE_NAME)
    const rawPath = join(dir, RAW_FILE_NAME)
    let rawRead = false
    if (!rawEntry) {
      this.report(manifestPath, { check: 3, code: 'raw.unlisted', detail: `the manifest's files do not list ${RAW_FILE_NAME}` })
    } else {
      const r = await this.rawPass(rawPath, rawEntry.size, start, m, { venue: chain.venue, channel, strict: this.opts.strict === true }, rawFindings)
      if ('missing' in r) {
        if (check2) this.report(rawPath, { check: 2, code: 'file.missing', detail: `the manifest lists this file, but it ${r.missing}` })
      } else if ('refused' in r) {
        if (check2) this.report(rawPath, refusedFinding(2, r.refused))
      } else {
        const longer = r.size > rawEntry.size
        if (check2 && r.size !== rawEntry.size) this.report(rawPath, sizeFinding(r.size, rawEntry.size))
        if (check2 && r.blake3 !== rawEntry.blake3) this.report(rawPath, blake3Finding(r.blake3, rawEntry.blake3, longer ? rawEntry.size : undefined))
        actual.set(RAW_FILE_NAME, r.blake3)
        rawBytes = r.decodedBytes
        rawRead = r.complete
        if (rawFindings && r.complete && raw.lines !== rawEntry.rows) {
          this.report(rawPath, { check: 3, code: 'raw.row-count', detail: `the raw file has ${raw.lines} lines, the manifest lists ${rawEntry.rows} rows` })
        }
      }
    }

    // Check 4, with check 2 of each table.
    const tables: readonly TableName[] = CHANNEL_TABLES[channel] ?? []
    const unrepresentable = new Set(section(z.array(count), m, 'unrepresentable_frames') ?? [])
    for (const table of tables) {
      const name = tableFileName(table)
      const entry = byName.get(name)
      if (!entry) {
        this.report(manifestPath, { check: 4, code: 'table.missing', detail: `channel ${channel} has table ${table}, but the manifest's files do not list ${name}` })
        continue
      }
      const path = join(dir, name)
      const h = await this.checkFile(path, entry, check2)
      if (h === null) continue
      actual.set(name, h)
      await this.checkTable(path, table, entry.rows, start, rawRead ? raw : null, unrepresentable)
    }

    // Check 2 of any other listed file.
    if (check2) {
      for (const e of entries) {
        if (e.name === RAW_FILE_NAME || tables.some((t) => tableFileName(t) === e.name)) continue
        const h = await this.checkFile(join(dir, e.name), e)
        if (h !== null) actual.set(e.name, h)
      }
    }

    // Checks 8, 9 and 10 compare the manifest with the raw file; they need it read whole.
    if (!rawFindings) return { actual, rawBytes }
    if (rawRead) {
      for (const f of checkClockSummaries(m, raw.facts, raw.unboundedLines, raw.firstUnboundedLine)) this.report(manifestPath, f)
      if (raw.faultyLines === 0) for (const f of checkReplicaCounts(m, raw.facts, raw.agreement)) this.report(manifestPath, f)
      for (const f of raw.finishConflicts()) this.report(manifestPath, f)
    }
    for (const f of checkGapFreeRuns(m, start, start + NS_PER_HOUR, rawRead ? raw.connections : null)) this.report(manifestPath, f)
    return { actual, rawBytes }
  }

  /**
   * Reads the raw file once: the BLAKE3 of the stored bytes (check 2) while the bytes are decompressed on
   * a worker thread, split into lines and checked (checks 3 and 7, and the facts of 4, 8, 9, 10).
   * `complete` is false when the file is not zstd or does not decompress to its end.
   */
  private async rawPass(path: string, listedSize: number, start: bigint, m: Record<string, unknown>, opts: RawHourOptions, findings = true): Promise<{ missing: string } | { refused: InputError } | { size: number; blake3: string; complete: boolean; decodedBytes: number }> {
    const s = await fileSize(path)
    if ('missing' in s) return s
    // Nothing past the listed size is read: a longer file (an 8 GiB sparse one, say) is read that far only.
    const toRead = Math.min(s.size, listedSize)
    const opened = await openListedFile(path)
    if ('refused' in opened) return opened
    const { fh } = opened
    const raw = this.raw!
    const emit = findings ? (f: CheckFinding) => this.report(path, f) : () => undefined
    raw.reset(Number(start / 1_000_000_000n), m, opts, emit)
    const hasher = await createIncrementalHash('blake3')
    let complete = false
    let decodedBytes = 0
    let pos = 0
    try {
      let stop = false
      let inflight: Promise<unknown> = Promise.resolve()
      // Every byte read is hashed before it is handed on (the worker takes the buffer over).
      const readChunk = async (): Promise<Buffer | null> => {
        if (pos >= toRead) return null
        const buf = Buffer.allocUnsafeSlow(READ_BYTES)
        const p = fh.read(buf, 0, Math.min(READ_BYTES, toRead - pos), pos)
        inflight = p
        const { bytesRead } = await p
        if (bytesRead === 0) return null
        const chunk = bytesRead === READ_BYTES ? buf : buf.subarray(0, bytesRead)
        hasher.update(chunk)
        pos += bytesRead
        return chunk
      }
      const first = await readChunk()
      if (!first || !startsWithZstdMagic(first)) {
        emit({ check: 3, code: NOT_ZSTD_RAW_FILE.code, detail: first ? NOT_ZSTD_RAW_FILE.plain : NOT_ZSTD_RAW_FILE.empty })
      } else {
        const source = async function* (): AsyncGenerator<Uint8Array> {
          yield first
          while (!stop) {
            const c = await readChunk()
            if (!c || stop) return
            yield c
          }
        }
        const counted = async function* (chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
          for await (const c of chunks) {
            decodedBytes += c.byteLength
            yield c
          }
        }
        const signal = this.opts.signal ?? new AbortController().signal
        const relay = new LineRelay((f) => raw.splitterFinding(f))
        const split = splitLines({ maxLineBytes: this.opts.maxLineBytes ?? 8 * 2 ** 20, requireFinalNewline: true }, relay)
        try {
          const decoded = s.size <= (this.opts.inProcessMaxBytes ?? 16 * 2 ** 20) ? zstdDecodeInProcess(source(), this.decode) : zstdDecode(this.decode, 'verify')(source(), { signal })
          for await (const batch of split(counted(decoded))) {
            raw.batch(batch)
            this.aborted()
          }
          complete = true
        } catch (err) {
          if (err instanceof PipeError && err.code.startsWith('raw.zstd-')) emit({ check: 3, code: err.code, detail: err.message })
          else throw err
        } finally {
          stop = true
          await inflight.catch(() => undefined)
        }
        raw.finishLines()
      }
      // What decompression left unread still counts for the file's hash.
      while (await readChunk()) {
        /* hashed by readChunk */
      }
    } finally {
      await fh.close()
    }
    if (pos !== toRead) return { refused: new InputError(INPUT_CODES.changed, path, `shrank below ${toRead} bytes while read`) }
    return { size: s.size, blake3: hasher.digestHex(), complete, decodedBytes }
  }

  /** Check 4 for one table file: schema, row count, and each row against the raw file. */
  private async checkTable(path: string, table: TableName, listedRows: number, start: bigint, raw: RawHourChecker | null, unrepresentable: ReadonlySet<number>): Promise<void> {
    const emit = (f: CheckFinding) => this.report(path, f)
    const rows = new TableRowChecker(start, raw ? { frameOffsets: raw.frameOffsets, lines: raw.lines } : null, emit, unrepresentable)
    let footerRows = -1
    try {
      for await (const item of readTableForCheck(path)) {
        if (item.kind === 'schema') {
          if (item.rowsReadable) footerRows = item.rows
          for (const p of checkSchema(table, item.metadata)) {
            emit({ check: 4, code: 'table.schema', detail: `column ${p.column}: ${p.attribute.replace(/_/g, ' ')} is ${p.found}, v1 has ${p.expected}` })
          }
          if (item.rows !== listedRows) emit({ check: 4, code: 'table.row-count', detail: `the table has ${item.rows} rows, the manifest lists ${listedRows}` })
        } else {
          rows.group(item.rawIndex, item.receiveTime, item.rowStart)
          this.aborted()
        }
      }
    } catch (err) {
      if (err instanceof PipeError && err.code === 'record.table-unreadable') {
        emit({ check: 4, code: 'table.unreadable', detail: err.message })
        return
      }
      throw err
    }
    if (footerRows >= 0 && rows.rows !== footerRows) {
      emit({ check: 4, code: 'table.row-count', detail: `the row groups hold ${rows.rows} rows, the footer states ${footerRows}` })
    }
  }
}

interface StoredManifest {
  bytes: Buffer
  version: ManifestVersion
}

type FileEntryShape = z.infer<typeof filesSchema>[number]

/** Subdirectories of `dir` named `<key>=<value>`, in name order. */
async function subdirs(dir: string, key: string): Promise<string[]> {
  const out: string[] = []
  for (const name of (await listDir(dir)).sort()) {
    if (name.startsWith(`${key}=`) && name.length > key.length + 1 && (await isDir(join(dir, name)))) out.push(name)
  }
  return out
}


function hourRelOf(start: bigint): string {
  const iso = new Date(Number(start / 1_000_000n)).toISOString()
  return `date=${iso.slice(0, 10)}/hour=${iso.slice(11, 13)}`
}

/** The listed files with a usable name, each once; other entries are check 2 findings (`file.name`). */
function listedFiles<T extends { name: string }>(files: readonly T[], report: (f: CheckFinding) => void): T[] {
  const seen = new Set<string>()
  const out: T[] = []
  files.forEach((f, i) => {
    if (!safeFileName(f.name)) {
      report({ check: 2, code: 'file.name', detail: `files[${i}].name ${JSON.stringify(f.name)} is not a file name inside the hour directory` })
    } else if (seen.has(f.name)) {
      report({ check: 2, code: 'file.name', detail: `files[${i}].name ${JSON.stringify(f.name)} is listed twice` })
    } else {
      seen.add(f.name)
      out.push(f)
    }
  })
  return out
}

function identityFindings(m: Record<string, unknown>, chain: Chain): CheckFinding[] {
  const out: CheckFinding[] = []
  for (const key of ['recorder', 'venue', 'channel'] as const) {
    if (typeof m[key] === 'string' && m[key] !== chain[key]) {
      out.push({ check: 5, code: 'chain.identity', detail: `${key} is ${JSON.stringify(m[key])}, but the manifest sits in ${key}=${chain[key]}` })
    }
  }
  return out
}

/**
 * The hash link of one chain (hours, or days): each manifest's previous_manifest_blake3 is the BLAKE3 of
 * the previous unit's manifest bytes, and no unit between the first and the last is missing.
 */
class ChainLink {
  private prev: { at: bigint; hashes: Set<string> } | null = null
  private readonly missing: bigint[] = []

  constructor(
    private readonly unit: 'hour' | 'day',
    private readonly step: bigint,
  ) {}

  /** Units before the first one that the first one names as previous, which no root holds. */
  takeMissing(): bigint[] {
    return this.missing.splice(0)
  }

  private label(at: bigint): string {
    return this.unit === 'hour' ? hourLabel(at) : dateOf(at)
  }

  async link(at: bigint, versions: readonly ManifestVersion[], rangeStart: bigint | null, stored: () => Promise<Set<string> | null>): Promise<CheckFinding[]> {
    const out: CheckFinding[] = []
    const prev = this.prev
    this.prev = { at, hashes: new Set(versions.map((v) => v.blake3)) }
    const named = versions.filter((v) => v.previous !== undefined)
    if (prev === null) {
      const nonNull = named.filter((v) => v.previous !== null)
      if (nonNull.length === 0) return out
      const before = at - this.step
      if (rangeStart !== null && before < rangeStart) {
        // At the --from boundary: checked against the earlier manifest when a root holds it, else accepted.
        const hashes = await stored()
        for (const v of nonNull) {
          if (hashes && !hashes.has(v.previous!)) {
            out.push({ check: 5, code: 'chain.previous-hash', detail: `previous_manifest_blake3 is ${v.previous}, but the ${this.unit} before (${this.label(before)}, before --from) has blake3 ${[...hashes].join(' / ')}` })
          }
        }
      } else if (this.unit === 'hour') {
        out.push({ check: 5, code: 'chain.hour-skipped', detail: `the chain's first ${this.unit} here names a previous manifest, but no root holds hour ${this.label(before)}` })
      } else {
        this.missing.push(before)
      }
      return out
    }
    if (at - prev.at !== this.step) {
      if (this.unit === 'hour') {
        const first = prev.at + this.step
        const last = at - this.step
        const what = first === last ? `hour ${this.label(first)} has` : `hours ${this.label(first)} to ${this.label(last)} have`
        out.push({ check: 5, code: 'chain.hour-skipped', detail: `${what} no manifest in any root, between ${this.label(prev.at)} and ${this.label(at)}` })
      }
      // Days: the skipped days are reported by the walk, which sees every date.
      return out
    }
    for (const v of named) {
      if (v.previous === null) {
        out.push({ check: 5, code: 'chain.previous-hash', detail: `previous_manifest_blake3 is null, but the chain holds the ${this.unit} before (${this.label(prev.at)})` })
      } else if (!prev.hashes.has(v.previous!)) {
        out.push({ check: 5, code: 'chain.previous-hash', detail: `previous_manifest_blake3 is ${v.previous}, but the manifest of ${this.label(prev.at)} has blake3 ${[...prev.hashes].join(' / ')}` })
      }
    }
    return out
  }
}

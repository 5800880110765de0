/**
 * The hourly and daily manifests of record format v1, as JSON shapes. Field names are the spec's; where
 * the spec names a field but not its inner members (frame_time_bounds, replica_agreement, clock), the
 * members chosen are documented in docs/record-format-notes.md ("Manifest members"). Times are the
 * format's nine-digit RFC 3339 strings; hashes BLAKE3 lowercase hex; every number an integer.
 */
import canonicalize from 'canonicalize'
import type { Channel, Replica } from './types.js'

export const FORMAT_VERSION = 1

/** The raw file's name in an hour directory ("Layout"). */
export const RAW_FILE_NAME = 'raw.jsonl.zst'

/**
 * A stored raw file is a zstd stream, and an hour of no frames is a zstd frame of no bytes: an empty file,
 * or one without the zstd magic number, is not one. verify says so of raw.jsonl.zst, and verify-raw of a
 * --file named *.zst; other input may be the zstd -dc output of an hour (empty for an hour of no frames).
 */
export const NOT_ZSTD_RAW_FILE = { code: 'raw.not-zstd', empty: 'the raw file is empty, not a zstd frame', plain: 'the raw file does not start with the zstd magic number' } as const

/**
 * The largest manifest read or written, hourly or daily (the spec gives none; docs/limits.md): a verifier
 * holds a manifest whole, so a hostile one must not be able to ask for gigabytes. 16 MiB, as the pack
 * format's documents, holds some 100,000 gaps, conflicts or reconnect windows; the sealer refuses to write
 * a larger manifest rather than seal an hour no verifier reads.
 */
export const MANIFEST_LIMIT = { maxBytes: 16 * 2 ** 20, what: 'a manifest' }

export type CompletenessStatus = 'complete' | 'partial' | 'missing'
export type CompletenessReason =
  | 'reconnect' | 'sequence_gap' | 'checksum_failure' | 'clock_offset_unknown' | 'journal_torn'
  | 'journal_corrupt' | 'recorder_down' | 'unrepresentable_value' | 'destination_unavailable'
/** The spec's order of reasons; a manifest lists its reasons in this order. */
export const COMPLETENESS_REASONS: readonly CompletenessReason[] = [
  'reconnect', 'sequence_gap', 'checksum_failure', 'clock_offset_unknown', 'journal_torn',
  'journal_corrupt', 'recorder_down', 'unrepresentable_value', 'destination_unavailable',
]

export interface Interval { start_time: string; end_time: string }
export interface FileEntry { name: string; size: number; blake3: string; rows: number }
export interface SequenceGap { instrument: string; after_id: string; before_id: string }
export interface ChecksumFailure { instrument: string; receive_time: string; expected: string; computed: string }
export interface ReconnectWindow { start_time: string; end_time: string; close_code?: number }
export interface GapFreeRun { instrument: string; connection: string; start_time: string; end_time: string }
export interface ClockSummary { source?: 'nts'; error_bound_max?: number; unbounded: number }
export interface ReplicaSummary {
  replica: Replica
  frames: number
  covered_ns: number
  reconnect_windows: ReconnectWindow[]
  gap_free_runs?: GapFreeRun[]
  clock?: ClockSummary
}
export interface ConflictLine { raw_index: number; blake3: string }
export interface Conflict { instrument: string; trade_id: string; lines: ConflictLine[] }

export interface HourlyManifest {
  format_version: number
  recorder: string
  venue: string
  channel: Channel
  interval: Interval
  files: FileEntry[]
  frame_time_bounds?: { earliest: string; latest: string }
  sequence_gaps: SequenceGap[]
  checksum_failures: ChecksumFailure[]
  unrepresentable_frames?: number[]
  replicas: ReplicaSummary[]
  replica_agreement: { both: number; one_only: number; conflict: number }
  conflicts?: Conflict[]
  completeness: { status: CompletenessStatus; reasons: CompletenessReason[] }
  previous_manifest_blake3: string | null
}

export interface DailyHourEntry { hour: string; blake3: string; status: CompletenessStatus }
export interface DailyManifest {
  format_version: number
  recorder: string
  venue: string
  channel: Channel
  date: string
  hours: DailyHourEntry[]
  previous_manifest_blake3: string | null
}

/** The exact bytes of a manifest: RFC 8785 canonical JSON, no trailing newline. */
export function manifestBytes(manifest: HourlyManifest | DailyManifest): Buffer {
  return Buffer.from(canonicalize(manifest)!, 'utf8')
}

/** `recorder=R/venue=V/channel=C/date=YYYY-MM-DD` below a root ("Layout"). */
export function dayDir(recorder: string, venue: string, channel: string, date: string): string {
  return `recorder=${recorder}/venue=${venue}/channel=${channel}/date=${date}`
}

/** `.../hour=HH` below a root. */
export function hourDir(recorder: string, venue: string, channel: string, hourStartNs: bigint): string {
  const iso = new Date(Number(hourStartNs / 1_000_000n)).toISOString()
  return `${dayDir(recorder, venue, channel, iso.slice(0, 10))}/hour=${iso.slice(11, 13)}`
}

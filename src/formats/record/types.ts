/**
 * Shared vocabulary of the record format's recorder side: what a replica journals, what a venue adapter
 * makes of a frame, and the rows of the normalized tables. Times are int64 nanoseconds since the Unix
 * epoch as bigint; decimals stay the venue's text until the Parquet writer encodes them.
 */

export type Replica = 'a' | 'b'
export const REPLICAS: readonly Replica[] = ['a', 'b']

export type Channel = 'trades' | 'book' | 'funding' | 'liquidations'
export const CHANNELS: readonly Channel[] = ['trades', 'book', 'funding', 'liquidations']

export type TableName = 'trades' | 'book_snapshots' | 'book_deltas'
export const TABLE_NAMES: readonly TableName[] = ['trades', 'book_snapshots', 'book_deltas']

/** The tables each channel carries ("Normalized tables"); funding and liquidations have none in v1. */
export const CHANNEL_TABLES: Readonly<Record<Channel, readonly TableName[]>> = {
  trades: ['trades'],
  book: ['book_snapshots', 'book_deltas'],
  funding: [],
  liquidations: [],
}

/** One websocket (or REST) frame exactly as one replica received it. */
export interface FrameEvent {
  kind: 'frame'
  replica: Replica
  connection: string
  /** Read when the replica held the complete frame ("Point of timestamping"). */
  receiveTime: bigint
  /** The frame's bytes: UTF-8 of a text frame, or a binary frame's bytes. */
  payload: Uint8Array
  binary: boolean
  /** Both present or both absent (record format, "Raw file"). */
  clockOffset?: bigint
  clockErrorBound?: bigint
}

export interface ConnectingEvent { kind: 'connecting'; replica: Replica; connection: string; time: bigint }
/**
 * `restated`: not a new event but the state carried into an hour file, written by the journal writer at the
 * top of each hour file with the hour's start as its time (docs/journal.md).
 */
export interface OpenEvent { kind: 'open'; replica: Replica; connection: string; time: bigint; restated?: true }
export interface SubscribedEvent { kind: 'subscribed'; replica: Replica; connection: string; time: bigint; instruments: string[]; restated?: true }
/** `closeCode` only when the venue sent a close frame carrying a status code (RFC 6455, 7.4). */
export interface ClosedEvent { kind: 'closed'; replica: Replica; connection: string; time: bigint; closeCode?: number; reason?: string; restated?: true }
export interface ErrorEvent { kind: 'error'; replica: Replica; connection: string; time: bigint; message: string }
/** The replica saw a break in a venue sequence (ids as the venue writes them, as text). */
export interface SequenceBreakEvent { kind: 'sequence-break'; replica: Replica; connection: string; time: bigint; instrument: string; afterId: string; beforeId: string }
/** The replica's recomputed venue checksum differed; `time` is the receive_time of the frame checked. */
export interface ChecksumMismatchEvent { kind: 'checksum-mismatch'; replica: Replica; connection: string; time: bigint; instrument: string; expected: string; computed: string }

export type ConnectionEvent = ConnectingEvent | OpenEvent | SubscribedEvent | ClosedEvent | ErrorEvent

/**
 * A recorder process began journaling the replica. Every connection of the replica from before it is
 * gone (the previous process ended, perhaps by a crash), and from here the replica journals at least one
 * record every `heartbeatIntervalNs` while it runs (heartbeats when nothing else happens), so that silence
 * in the journal means the replica was not running. `restated` at the top of an hour file, as for
 * connection events: then it only carries the promise into the hour, and ends nothing.
 */
export interface RecorderStartEvent { kind: 'recorder-start'; replica: Replica; time: bigint; heartbeatIntervalNs: bigint; restated?: true }
/** The replica was running and journaling at `time` (written when nothing else was journaled for a heartbeat interval). */
export interface HeartbeatEvent { kind: 'heartbeat'; replica: Replica; time: bigint }
/**
 * The replica could not write its journal from `from` to `to` (exclusive): its storage refused the writes
 * (disk full, I/O error) and `lostEvents` events received then were dropped. Written at `time`, once
 * writing works again.
 */
export interface DestinationUnavailableEvent { kind: 'destination-unavailable'; replica: Replica; time: bigint; from: bigint; to: bigint; lostEvents: number; message: string }

/** What the replica says about itself rather than about a connection. */
export type ReplicaEvent = RecorderStartEvent | HeartbeatEvent | DestinationUnavailableEvent
export type JournalEvent = FrameEvent | ConnectionEvent | SequenceBreakEvent | ChecksumMismatchEvent | ReplicaEvent

/** The instant an event happened on the replica's clock: receiveTime for frames, time otherwise. */
export function eventTime(e: JournalEvent): bigint {
  return e.kind === 'frame' ? e.receiveTime : e.time
}

/** A normalized row before encoding. `price` and `size` are the venue's decimal text, unchanged. */
export interface TableRow {
  raw_index: number
  instrument: string
  trade_id: string | null
  side: string | null
  price: string
  size: string
  exchange_time: bigint | null
  receive_time: bigint
}

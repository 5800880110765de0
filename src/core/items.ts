/**
 * Items that travel between stages can tell how many logical items and bytes they hold, so that a batch
 * of 2,000 lines counts as 2,000 lines in the metrics while crossing the stream as one object.
 */
export interface Measured {
  readonly itemCount: number
  readonly byteCount: number
}

function isMeasured(x: unknown): x is Measured {
  return typeof x === 'object' && x !== null && typeof (x as Measured).itemCount === 'number' && typeof (x as Measured).byteCount === 'number'
}

export function measure(chunk: unknown): { items: number; bytes: number } {
  if (chunk instanceof Uint8Array) return { items: 1, bytes: chunk.byteLength }
  if (isMeasured(chunk)) return { items: chunk.itemCount, bytes: chunk.byteCount }
  if (typeof chunk === 'string') return { items: 1, bytes: Buffer.byteLength(chunk) }
  return { items: 1, bytes: 0 }
}

/**
 * A value in a row: what JSON can say, exactly. A decimal is its text (`"65000.10"`, never a float), a time
 * is record format v1's text (`2026-10-03T14:00:00.123456789Z`), an integer beyond ±(2^53 − 1) is its
 * decimal text: every stage that reads Parquet or JSON gives rows of these, and every writer takes them.
 */
export type RowValue = string | number | boolean | null | readonly RowValue[] | { readonly [field: string]: RowValue }
export type Row = { readonly [field: string]: RowValue }

/** Rows crossing the stream together: per-object stream overhead dominates at millions of rows. */
export class RowBatch implements Measured {
  constructor(
    readonly rows: readonly Row[],
    /** The bytes the rows came from (a line's, a row group's share), for the run's metrics; 0 when unknown. */
    readonly byteCount = 0,
  ) {}

  get itemCount(): number { return this.rows.length }
}

/**
 * A JSON document on its way to being linked into a chain and signed (a manifest): chain-link sets the
 * member naming the hash of the document before it and fixes the bytes; sign adds the signature; a sink
 * lands both. A document marked `final` (an hour sealed before) passes through unchanged.
 */
export interface DocumentItem {
  readonly kind: 'document'
  /** What the document is, for messages and metrics (`hour 2026-10-03T14`). */
  readonly name: string
  readonly value: Record<string, unknown>
  /** The stored document this one links to; null for the first of a chain; undefined: the document before it in the stream. */
  readonly previousPath?: string | null
  /** The document's bytes once linked: a sink writes exactly these. */
  bytes?: Uint8Array
  /** The detached signature over `bytes`, once signed. */
  signature?: string
  /** The namespace an SSH signature over it is made in (pack format: a manifest's, a ref's); a JWS has none. */
  readonly namespace?: string
  readonly final?: boolean
  /** The bytes of `value` as stored (canonical JSON, within the format's limits). */
  serialize(): Uint8Array
}

export function isDocumentItem(x: unknown): x is DocumentItem {
  return typeof x === 'object' && x !== null && (x as DocumentItem).kind === 'document'
}

/** The item types stages declare (frames: an hour's paired frames, then its facts, as pair-replicas gives them). `any` matches everything; the runner refuses other mismatches. */
export type ItemType = 'none' | 'bytes' | 'lines' | 'envelopes' | 'rows' | 'documents' | 'frames' | 'any'

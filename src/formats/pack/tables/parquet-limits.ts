/**
 * The limits of the guarded part reader ("Limits"; parquet-read.ts explains how each is enforced), its
 * finding codes, and the refusal a reading step throws: shared by the reader (parquet-read.ts) and the
 * page decoder (parquet-vectors.ts).
 */
import { MAX_STRING_CELL_BYTES } from './table-schemas.js'

/**
 * The spec's limits ("Limits") and the bounds this reader adds: a page header, a page, and a row group (it
 * is decoded whole, so its stored chunks and its decoded columns must each fit in memory: the spec's
 * limits alone let a 4 GiB part decode to 256 GiB).
 */
export const READ_LIMITS = Object.freeze({
  partBytes: 4 * 1024 ** 3,
  footerBytes: 16 * 1024 * 1024,
  thriftDepth: 32,
  columns: 1024,
  schemaDepth: 32,
  pageHeaderBytes: 4 * 1024 * 1024,
  pageBytes: 256 * 1024 * 1024,
  decompressedPerByte: 64,
  valuesPerByte: 64,
  valuesExtra: 2 ** 20,
  decodedPerByte: 64,
  decodedExtra: 64 * 1024 * 1024,
  rowGroupBytes: 128 * 1024 * 1024,
  /**
   * List elements (at every depth) of one row built as objects: a row costs some 60 bytes an element so
   * built, and a row group's 128 MiB of values can be one row. A phase at the spec's limit of 1,000,000
   * cells fits.
   */
  rowListItems: 2 ** 20,
  stringBytes: MAX_STRING_CELL_BYTES,
})
export type ReadLimits = typeof READ_LIMITS

/** The decoded bytes a part of `size` bytes may hold: 64 a byte of it plus 64 MiB ("Limits": decoded size of a part). */
export const maxDecodedBytes = (size: number, limits: ReadLimits): number => limits.decodedPerByte * size + limits.decodedExtra

/**
 * What a leaf column chunk counts as decoded, as it is decoded: a string by its bytes, any other value as
 * 8, over its `values` non-null values of `valueBytes` bytes in all. The part writer counts its own parts so.
 */
export const decodedLeafBytes = (isBytes: boolean, values: number, valueBytes: number): number => (isBytes ? valueBytes : 8 * values)

/** Stable codes of the reader's findings. */
export const READ_CODES = {
  /** The part is above 4 GiB. */
  partTooLarge: 'pack.parquet-part-too-large',
  /** Too short for Parquet, or without PAR1 at its start and end (a truncated file ends without it). */
  notParquet: 'pack.parquet-not-parquet',
  /** The footer's length is above 16 MiB. */
  footerTooLarge: 'pack.parquet-footer-too-large',
  /** The footer's or a page header's Thrift nests deeper than 32. */
  thriftTooDeep: 'pack.parquet-thrift-too-deep',
  /** More than 1,024 leaf columns. */
  tooManyColumns: 'pack.parquet-too-many-columns',
  /** The schema tree nests deeper than 32. */
  schemaTooDeep: 'pack.parquet-schema-too-deep',
  /** Structure that cannot be right: lengths past the end, offsets outside the file, counts that disagree. */
  malformed: 'pack.parquet-malformed',
  /** A page header above 4 MiB. */
  pageHeaderTooLarge: 'pack.parquet-page-header-too-large',
  /** One page's uncompressed size above 256 MiB. */
  pageTooLarge: 'pack.parquet-page-too-large',
  /** The pages' uncompressed sizes add up to more than 64× the part's size (the 64x rule). */
  decompressedTooLarge: 'pack.parquet-decompressed-too-large',
  /** More data page values than 64 per byte plus 2^20, or decoded columns above 64× the size plus 64 MiB. */
  decodedTooLarge: 'pack.parquet-decoded-too-large',
  /** A row group whose stored column chunks, or whose decoded columns, pass 128 MiB (this reader's bound). */
  rowGroupTooLarge: 'pack.parquet-row-group-too-large',
  /** A row with more list elements than a reader builds a row from (rowListItems). */
  rowTooLarge: 'pack.parquet-row-too-large',
  /** A string cell above 1 MiB. */
  stringTooLarge: 'pack.parquet-string-too-large',
  /** A string cell that is not UTF-8. */
  stringNotUtf8: 'pack.parquet-string-not-utf8',
  /** A codec, encoding or page type this reader does not decode (codecs: uncompressed, snappy, zstd). */
  unsupported: 'pack.parquet-unsupported',
  /** hyparquet or zstd failed on the bytes. */
  unreadable: 'pack.parquet-unreadable',
  /** The file's schema is not the table's (a missing required column, another type). */
  schemaMismatch: 'pack.parquet-schema-mismatch',
  /** A value the table's schema cannot hold: null in a required column, an integer that does not fit. */
  valueInvalid: 'pack.parquet-value-invalid',
} as const

export type ReadCode = (typeof READ_CODES)[keyof typeof READ_CODES]

export interface ParquetFinding {
  code: ReadCode
  /** One line naming the column, page or row group. */
  detail: string
}

/** A refusal raised while reading; turned into a finding at the API's edge. */
export class Refusal extends Error {
  constructor(
    readonly code: ReadCode,
    readonly detail: string,
  ) {
    super(detail)
  }
}

export function refuse(code: ReadCode, detail: string): never {
  throw new Refusal(code, detail)
}

export function toFinding(err: unknown): ParquetFinding {
  if (err instanceof Refusal) return { code: err.code, detail: err.detail }
  const msg = err instanceof Error ? err.message : String(err)
  return { code: READ_CODES.unreadable, detail: msg.split('\n')[0]!.slice(0, 300) }
}

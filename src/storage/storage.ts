/**
 * Where pipe keeps what it seals and publishes: a folder on this machine, or a bucket of S3-compatible object
 * storage. Both are addressed by keys ('/'-separated paths below the root) and give the same few operations,
 * the ones that keep sealed data safe when several machines write: create-only puts (an object never
 * changes once written; the same bytes again is success), a conditional replace for the one kind of object
 * that moves (a pack's ref), reads whole or by range, and listings by prefix.
 */
import type { Readable } from 'node:stream'
import { EXIT_USAGE, PipeError } from '../core/errors.js'

/** Bytes in memory, or a local file streamed from disk (a raw file of an hour may be gigabytes). */
export type PutBody = Uint8Array | { file: string }

export interface ObjectHead {
  size: number
  /** An opaque version of the object's bytes, for {@link Storage.replace}. */
  etag: string
}

export interface Storage {
  /** What the user named: a folder, or `s3://bucket/prefix`. */
  readonly location: string
  /** Whether it is object storage (no folders, no renames). */
  readonly remote: boolean
  /** The full name of a key, for messages: a path, or an `s3://` URL. */
  where(key: string): string
  /**
   * Creates `key` with `body` unless it exists. 'same' when it held these bytes already (a re-run); with
   * other bytes a PipeError `storage.object-differs` naming the object, and nothing is changed.
   */
  putIfAbsent(key: string, body: PutBody): Promise<'created' | 'same'>
  /** The whole object, or null when there is none; refused (`storage.too-large`) past `maxBytes`. */
  get(key: string, maxBytes: number): Promise<Buffer | null>
  /** The object's bytes from `start` (inclusive) to `end` (exclusive; default its end) as a stream, or null. */
  read(key: string, range?: { start: number; end?: number }): Promise<Readable | null>
  head(key: string): Promise<ObjectHead | null>
  /** Every key below `prefix` ('' for all), in key order, with its size. */
  list(prefix: string): AsyncIterable<{ key: string; size: number }>
  /** The names of the folders directly below `prefix` (a key prefix ending in '/', or ''), in name order. */
  folders(prefix: string): Promise<string[]>
  /**
   * Writes `key` only if it is still the version `expected` names (null: only if it does not exist), so two
   * writers cannot both move it on: the loser gets a PipeError `storage.changed`. Returns the new version.
   */
  replace(key: string, body: Uint8Array, expected: string | null): Promise<string>
}

export const isObjectStoreUrl = (location: string): boolean => /^s3:\/\//i.test(location)

/** Another writer got there first (exit 2: the state of the storage, not data failing a check). */
export function objectDiffers(where: string): PipeError {
  return new PipeError('storage.object-differs', 'already exists with other bytes: a sealed or published object is never overwritten', { exitCode: EXIT_USAGE, location: { file: where } })
}

export function objectChanged(where: string): PipeError {
  return new PipeError('storage.changed', 'was changed by another writer since it was read: read it again and decide anew', { exitCode: EXIT_USAGE, location: { file: where } })
}

export function tooLarge(where: string, size: number, maxBytes: number): PipeError {
  return new PipeError('storage.too-large', `is ${size} bytes, more than the ${maxBytes} read of it`, { location: { file: where } })
}

const opened = new Map<string, Promise<Storage>>()

/**
 * The storage a location names: `s3://bucket/prefix` (the AWS SDK's own configuration: environment,
 * profiles, AWS_ENDPOINT_URL_S3 or --s3-endpoint for a server other than AWS), or else a local folder.
 * One client per location per process.
 */
export function openStorage(location: string): Promise<Storage> {
  let s = opened.get(location)
  if (!s) {
    s = isObjectStoreUrl(location)
      ? import('./s3-storage.js').then((m) => m.S3Storage.open(location))
      : import('./local-storage.js').then((m) => new m.LocalStorage(location))
    opened.set(location, s)
    s.catch(() => opened.delete(location))
  }
  return s
}

/** A key below another: `join('a/b', 'c')` is 'a/b/c'; an empty part adds nothing. */
export function keyJoin(...parts: string[]): string {
  return parts.filter((p) => p !== '').join('/')
}

/**
 * The store and export layouts (pack format 1.0, "The store", "Exports"): every file name a pack has,
 * built only from checked parts, and the object reader and writer both layouts share.
 *
 * - Names. Paths are relative, '/'-separated, and made by the builders below from hashes, the extension
 *   list, feed and signer names and (in exports) table names, partition values, numbers, uuids and ids,
 *   each checked; anything else is refused as pack.path-escape. parseStorePath classifies a store path
 *   and refuses every other form.
 * - Objects are written under the top-level .tmp/ folder, fsynced, renamed into place, and the folder
 *   fsynced; an object that is already there is kept, and must have the same bytes.
 * - Objects are read with their size checked before any byte is (stat first: against what the index
 *   states, and 4 GiB), then hashed while streaming; a mismatch is refused.
 * - An export is checked like a store: planExport maps each of its files to the hash its indexes (or
 *   media and tilings rows) give.
 */
import { createHash, randomBytes, type Hash } from 'node:crypto'
import { lstat, mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { PipeError } from '../../../core/errors.js'
import { INPUT_CODES, InputError, openRegularFile } from '../../../core/input-file.js'
import { fsyncDir } from '../../../core/atomic-write.js'
import { isSignerName } from '../keys/ssh-key.js'
import {
  DOC_CODES,
  HASH_PREFIX,
  MAX_DOCUMENT_BYTES,
  MAX_OBJECT_BYTES,
  isSha256Hash,
  isTableName,
  isUuid,
  parseTarget,
  quote,
  refusal,
  type PackResult,
  type Refusal,
} from './documents.js'
import { isSegmentName, type ScorePart, type SearchSegment, type TablePart } from './doc-index.js'
import type { Manifest } from './doc-manifest.js'
import { walkSearchIndex, walkTableIndex, type IndexLoader } from './index-walk.js'
import { isPartitionValue } from '../tables/table-schemas.js'

/** Stable codes of store and export findings. */
export const STORE_CODES = {
  /** A path not built from checked parts: `..`, absolute, separators, wrong lengths, upper-case hex, unknown forms. */
  pathEscape: 'pack.path-escape',
  /** A media type other than image/png, image/gif, image/webp. */
  mediaType: 'pack.media-type',
  /** No object at its name (or not a regular file there). */
  objectMissing: 'pack.object-missing',
  /** An object larger than 4 GiB. */
  objectTooLarge: 'pack.object-too-large',
  /** An object whose size is not what its index (or row) states, or that changed size while read. */
  objectSizeMismatch: 'pack.object-size-mismatch',
  /** An object whose bytes do not hash to its name. */
  objectHashMismatch: 'pack.object-hash-mismatch',
  /** Writing an object whose name is taken by other bytes (the store's copy is damaged; it is kept). */
  objectConflict: 'pack.object-conflict',
  /** Two different objects would get one export path. */
  exportCollision: 'pack.export-collision',
} as const

export const OBJECT_EXTENSIONS = ['json', 'parquet', 'png', 'gif', 'webp'] as const
export type ObjectExtension = (typeof OBJECT_EXTENSIONS)[number]
export type MediaExtension = 'png' | 'gif' | 'webp'

const MEDIA_EXTENSIONS: ReadonlyMap<string, MediaExtension> = new Map([
  ['image/png', 'png'],
  ['image/gif', 'gif'],
  ['image/webp', 'webp'],
])

/** A media row's file extension from its media_type: image/png png, image/gif gif, image/webp webp; nothing else. */
export function mediaExtension(mediaType: unknown): PackResult<MediaExtension> {
  const ext = typeof mediaType === 'string' ? MEDIA_EXTENSIONS.get(mediaType) : undefined
  return ext === undefined ? refusal(STORE_CODES.mediaType, `media type ${quote(mediaType)} is not image/png, image/gif or image/webp`) : { ok: true, value: ext }
}

/** The media type a media file's extension stands for. */
export function mediaTypeOfExtension(ext: MediaExtension): string {
  for (const [type, e] of MEDIA_EXTENSIONS) if (e === ext) return type
  throw new PipeError(STORE_CODES.mediaType, `${quote(ext)} is not a media extension`)
}

// ---------------------------------------------------------------------------------------------------
// Store paths.

export const STORE_DOCUMENT_PATH = 'jetcarp-store.json'
/** A writer's temporary folder; readers ignore it like every unknown top-level path. */
export const TMP_FOLDER = '.tmp'

export type StorePath =
  | { kind: 'store' }
  | { kind: 'ref'; feed: string }
  | { kind: 'key'; signer: string }
  | { kind: 'object'; hash: string; ext: ObjectExtension }
  | { kind: 'signature'; manifest: string; signer: string }

const EXT = OBJECT_EXTENSIONS.join('|')
const OBJECT_PATH_RE = new RegExp(`^objects/sha256/([0-9a-f]{2})/([0-9a-f]{64})\\.(${EXT})$`)
const SIGNATURE_PATH_RE = /^sigs\/sha256\/([0-9a-f]{2})\/([0-9a-f]{64})\/([0-9a-f]{64})\.sig$/
const REF_PATH_RE = /^refs\/([A-Za-z0-9-]{1,64})\.json$/
const KEY_PATH_RE = /^keys\/([0-9a-f]{64})\.json$/

/**
 * Classifies a relative store path, refusing (pack.path-escape) every form the layout does not have:
 * each is matched whole, so `..`, absolute paths, backslashes, empty or extra segments, wrong lengths,
 * upper-case hex and an `<aa>` that is not the hash's first two digits all fail.
 */
export function parseStorePath(rel: unknown): PackResult<StorePath> {
  if (typeof rel === 'string') {
    if (rel === STORE_DOCUMENT_PATH) return { ok: true, value: { kind: 'store' } }
    let m = OBJECT_PATH_RE.exec(rel)
    if (m && m[2]!.startsWith(m[1]!)) return { ok: true, value: { kind: 'object', hash: HASH_PREFIX + m[2], ext: m[3] as ObjectExtension } }
    m = SIGNATURE_PATH_RE.exec(rel)
    if (m && m[2]!.startsWith(m[1]!)) return { ok: true, value: { kind: 'signature', manifest: HASH_PREFIX + m[2], signer: m[3]! } }
    m = REF_PATH_RE.exec(rel)
    if (m) return { ok: true, value: { kind: 'ref', feed: m[1]! } }
    m = KEY_PATH_RE.exec(rel)
    if (m) return { ok: true, value: { kind: 'key', signer: m[1]! } }
  }
  return refusal(STORE_CODES.pathEscape, `${quote(rel)} is not a path of the store layout`)
}

/** The absolute file of a relative store path, after parseStorePath accepts it (else a pack.path-escape PipeError). */
export function storeFile(root: string, rel: string): string {
  const p = parseStorePath(rel)
  if (!p.ok) throw new PipeError(p.code, p.detail)
  return join(root, ...rel.split('/'))
}

function checkedStorePath(rel: string): string {
  const p = parseStorePath(rel)
  if (!p.ok) throw new PipeError(p.code, p.detail)
  return rel
}

function hexOf(hash: string): string {
  if (!isSha256Hash(hash)) throw new PipeError(STORE_CODES.pathEscape, `${quote(hash)} is not sha256: and 64 lower-case hex digits, so it names no file`)
  return hash.slice(HASH_PREFIX.length)
}

/** objects/sha256/<aa>/<hex>.<ext> */
export function objectPath(hash: string, ext: ObjectExtension): string {
  const hex = hexOf(hash)
  return checkedStorePath(`objects/sha256/${hex.slice(0, 2)}/${hex}.${ext}`)
}

/** sigs/sha256/<aa>/<hex>/<signer>.sig: a detached signature on the manifest <hex>. */
export function signaturePath(manifest: string, signer: string): string {
  const hex = hexOf(manifest)
  return checkedStorePath(`sigs/sha256/${hex.slice(0, 2)}/${hex}/${signer}.sig`)
}

/** refs/<feed>.json */
export function refPath(feed: string): string {
  return checkedStorePath(`refs/${feed}.json`)
}

/** keys/<signer>.json */
export function keyPath(signer: string): string {
  return checkedStorePath(`keys/${signer}.json`)
}

// ---------------------------------------------------------------------------------------------------
// Export paths.

export const EXPORT_MANIFEST_PATH = 'pack.json'

// Media kinds (gif, webp, poster, thumb, and any later one) never hold -, so <kind>-seed cannot be another kind's name.
const MEDIA_KIND_RE = /^[a-z][a-z0-9_]{0,31}$/

function component(ok: boolean, what: string, value: unknown): void {
  if (!ok) throw new PipeError(STORE_CODES.pathEscape, `${what} ${quote(value)} cannot be part of an export path`)
}

function positive(n: unknown): n is number {
  return Number.isSafeInteger(n) && (n as number) >= 1
}

/** index/<hex>.json */
export function exportIndexPath(hash: string): string {
  return `index/${hexOf(hash)}.json`
}

/** history/<hex>.json: an earlier manifest. */
export function exportHistoryPath(hash: string): string {
  return `history/${hexOf(hash)}.json`
}

/** The folder of a table's parts in one partition: tables/<table>/<key>=<value>/... in the partition's key order. */
export function exportPartitionFolder(table: string, partition: Record<string, string>): string {
  component(isTableName(table), 'table', table)
  let folder = `tables/${table}`
  for (const [key, value] of Object.entries(partition)) {
    component(isTableName(key), 'partition key', key)
    component(typeof value === 'string' && isPartitionValue(value), 'partition value', value)
    folder += `/${key}=${value}`
  }
  return folder
}

/** <folder>/part-NNNNNN.parquet, the n-th part (from 1) of its partition folder. */
export function exportPartPath(folder: string, n: number): string {
  component(positive(n), 'part number', n)
  return `${folder}/part-${String(n).padStart(6, '0')}.parquet`
}

/** tilings/reference/<family>.parquet */
export function exportReferencePath(family: string): string {
  component(typeof family === 'string' && isPartitionValue(family), 'tiling family', family)
  return `tilings/reference/${family}.parquet`
}

/** searches/<uuid>/runs/<segment>.parquet */
export function exportSegmentPath(search: string, segment: string): string {
  component(isUuid(search), 'search uuid', search)
  component(isSegmentName(segment), 'segment', segment)
  return `searches/${search}/runs/${segment}.parquet`
}

/** searches/<uuid>/scores-<n>/<segment>.parquet */
export function exportScorePath(search: string, version: number, segment: string): string {
  component(isUuid(search), 'search uuid', search)
  component(positive(version), 'score version', version)
  component(isSegmentName(segment), 'segment', segment)
  return `searches/${search}/scores-${version}/${segment}.parquet`
}

/** The columns of a media row that name its file. */
export interface MediaFile {
  target: string
  kind: string
  from_seed: boolean
  media_type: string
}

/** media/<target kind>/<id>/<media kind>[-seed].<ext> (pattern/<hex>, ant/ant-<hex>, quickstart/qs-<hex>). */
export function exportMediaPath(media: MediaFile): string {
  const target = parseTarget(media.target)
  // Media are of records; a search run has no media folder.
  if (!target.ok || target.value.kind === 'search_run') {
    throw new PipeError(STORE_CODES.pathEscape, `media target ${quote(media.target)} is not a pattern, ant or Quick Start target`)
  }
  component(MEDIA_KIND_RE.test(media.kind), 'media kind', media.kind)
  component(typeof media.from_seed === 'boolean', 'from_seed', media.from_seed)
  const ext = mediaExtension(media.media_type)
  if (!ext.ok) throw new PipeError(ext.code, ext.detail)
  return `media/${target.value.kind}/${target.value.id}/${media.kind}${media.from_seed ? '-seed' : ''}.${ext.value}`
}

/** sigs/<signer>.sig: one of the manifest's signatures. */
export function exportSignaturePath(signer: string): string {
  component(isSignerName(signer), 'signer', signer)
  return `sigs/${signer}.sig`
}

/** keys/<signer>.json */
export function exportKeyPath(signer: string): string {
  component(isSignerName(signer), 'signer', signer)
  return `keys/${signer}.json`
}

/** One file of an export with the hash (and, when stated, the size) it must have. */
export interface ExportEntry {
  path: string
  hash: string
  bytes?: number
}

/**
 * Where each object of one version goes in an export, and back: a table's parts are numbered from 1
 * within each partition folder in the order they are added (planExport adds them in index order). Two
 * different objects at one path are refused; the same object again at its path is kept once.
 */
export class ExportLayout {
  private readonly byPath = new Map<string, ExportEntry>()
  private readonly byHash = new Map<string, string>()
  private readonly partsInFolder = new Map<string, number>()

  add(path: string, hash: string, bytes?: number): void {
    const before = this.byPath.get(path)
    if (before !== undefined) {
      if (before.hash !== hash) throw new PipeError(STORE_CODES.exportCollision, `${path} would hold both ${before.hash} and ${hash}`)
      return
    }
    this.byPath.set(path, bytes === undefined ? { path, hash } : { path, hash, bytes })
    if (!this.byHash.has(hash)) this.byHash.set(hash, path)
  }

  addTablePart(table: string, part: TablePart): void {
    const folder = exportPartitionFolder(table, part.partition)
    const n = (this.partsInFolder.get(folder) ?? 0) + 1
    this.partsInFolder.set(folder, n)
    this.add(exportPartPath(folder, n), part.object, part.bytes)
  }

  addSegment(search: string, segment: SearchSegment): void {
    this.add(exportSegmentPath(search, segment.segment), segment.object, segment.bytes)
  }

  addScore(search: string, version: number, part: ScorePart): void {
    this.add(exportScorePath(search, version, part.segment), part.object, part.bytes)
  }

  /** A media row's file (target, kind, from_seed, media_type name it; object and bytes check it). */
  addMedia(media: MediaFile & { object: string; bytes?: number }): void {
    this.add(exportMediaPath(media), media.object, media.bytes)
  }

  /** An aperiodic family's reference patch, named by its tilings row's reference. */
  addReferencePatch(family: string, hash: string): void {
    this.add(exportReferencePath(family), hash)
  }

  /** Every file, in the order added, with the hash it must have. */
  entries(): ExportEntry[] {
    return [...this.byPath.values()]
  }

  /** The export path of an object (the first, if several hold it). */
  pathOf(hash: string): string | undefined {
    return this.byHash.get(hash)
  }
}

/**
 * The layout of one version's export: pack.json, every index of every table and search in index/, the
 * given earlier manifests in history/, every part numbered in index order, every segment and score
 * sidecar. Media files and reference patches come from table rows: add them with addMedia and
 * addReferencePatch. `loader` reads indexes (from a store, or an export's index/).
 */
export async function planExport(manifest: { manifest: Manifest; hash: string }, loader: IndexLoader, opts: { history?: readonly string[] } = {}): Promise<ExportLayout> {
  const layout = new ExportLayout()
  layout.add(EXPORT_MANIFEST_PATH, manifest.hash)
  for (const h of opts.history ?? []) layout.add(exportHistoryPath(h), h)
  for (const [table, root] of Object.entries(manifest.manifest.tables)) {
    for await (const e of walkTableIndex(root, loader, { table })) {
      if (e.kind === 'index') layout.add(exportIndexPath(e.hash), e.hash)
      else layout.addTablePart(table, e.part)
    }
  }
  for (const [search, root] of Object.entries(manifest.manifest.searches)) {
    for await (const e of walkSearchIndex(root, loader, { search })) {
      if (e.kind === 'index') layout.add(exportIndexPath(e.hash), e.hash)
      else if (e.kind === 'segment') layout.addSegment(search, e.segment)
      else layout.addScore(search, e.score.version, e.part)
    }
  }
  return layout
}

// ---------------------------------------------------------------------------------------------------
// Reading objects.

const READ_CHUNK = 1024 * 1024

interface ReadLimits {
  /** The size the index or row states. */
  expectedBytes?: number
  maxBytes: number
  tooLargeCode: string
}

/**
 * Reads a whole file, checking its size before reading a byte (a regular file, within limits, the stated
 * size), in chunks handed to `take`; a file that grows or shrinks while read is a size mismatch. `what`
 * names the file in messages (its hash, for an object).
 */
async function readChecked(path: string, what: string, limits: ReadLimits, take: (chunk: Buffer, offset: number, size: number) => void): Promise<PackResult<number>> {
  let fh: FileHandle
  let size: number
  try {
    // An object is a regular file, never a link to one elsewhere.
    ;({ fh, size } = await openRegularFile(path, { noFollow: true }))
  } catch (err) {
    if (err instanceof InputError) return refusal(STORE_CODES.objectMissing, `${what}: ${path} is ${err.code === INPUT_CODES.symlink ? 'a symbolic link' : err.message}`)
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return refusal(STORE_CODES.objectMissing, `${what}: no file at ${path}`)
    throw err
  }
  try {
    if (size > limits.maxBytes) return refusal(limits.tooLargeCode, `${what}: ${path} is ${size} bytes, more than ${limits.maxBytes}`)
    if (limits.expectedBytes !== undefined && size !== limits.expectedBytes) return refusal(STORE_CODES.objectSizeMismatch, `${what}: ${path} is ${size} bytes, but ${limits.expectedBytes} are stated`)
    const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, Math.max(size, 1)))
    for (let offset = 0; offset < size; ) {
      const { bytesRead } = await fh.read(chunk, 0, Math.min(chunk.length, size - offset), offset)
      if (bytesRead === 0) return refusal(STORE_CODES.objectSizeMismatch, `${what}: ${path} shrank while read`)
      take(chunk.subarray(0, bytesRead), offset, size)
      offset += bytesRead
    }
    if ((await fh.read(chunk, 0, 1, size)).bytesRead !== 0) return refusal(STORE_CODES.objectSizeMismatch, `${what}: ${path} grew while read`)
    return { ok: true, value: size }
  } finally {
    await fh.close()
  }
}

function hashMismatch(hash: string, sha: Hash, path: string): Refusal | undefined {
  const got = HASH_PREFIX + sha.digest('hex')
  return got === hash ? undefined : refusal(STORE_CODES.objectHashMismatch, `${path} hashes to ${got}, not ${hash}`)
}

/** Reads a file whole, at most 16 MiB (pack.json-too-large, on its size before reading). */
async function readSmallFile(path: string, what: string, sha?: Hash): Promise<PackResult<Buffer>> {
  let bytes = Buffer.alloc(0)
  const read = await readChecked(path, what, { maxBytes: MAX_DOCUMENT_BYTES, tooLargeCode: DOC_CODES.jsonTooLarge }, (chunk, offset, size) => {
    if (offset === 0) bytes = Buffer.allocUnsafe(size)
    chunk.copy(bytes, offset)
    sha?.update(chunk)
  })
  return read.ok ? { ok: true, value: bytes } : read
}

/** Reads a document object (a manifest or index) whole: at most 16 MiB, checked on its size first, then its hash. */
export async function readDocumentObject(path: string, hash: string): Promise<PackResult<Buffer>> {
  const sha = createHash('sha256')
  const read = await readSmallFile(path, hash, sha)
  if (!read.ok) return read
  return hashMismatch(hash, sha, path) ?? read
}

/** Reads a file that is no object (a ref, key statement, signature or jetcarp-store.json): at most 16 MiB, checked on its size first. */
export async function readDocumentFile(path: string): Promise<PackResult<Buffer>> {
  return readSmallFile(path, path)
}

/**
 * Checks a data object (a Parquet part, segment, sidecar, reference patch or media file) without holding
 * it: its size before reading (the stated `bytes`, and 4 GiB), then its SHA-256 while streaming. Returns
 * the verified path. Objects never change once written, so the path stays good to read.
 */
export async function verifyObjectFile(path: string, hash: string, opts: { bytes?: number } = {}): Promise<PackResult<{ path: string; bytes: number }>> {
  const sha = createHash('sha256')
  const limits = { maxBytes: MAX_OBJECT_BYTES, tooLargeCode: STORE_CODES.objectTooLarge, ...(opts.bytes !== undefined ? { expectedBytes: opts.bytes } : {}) }
  const read = await readChecked(path, hash, limits, (chunk) => sha.update(chunk))
  if (!read.ok) return read
  return hashMismatch(hash, sha, path) ?? { ok: true, value: { path, bytes: read.value } }
}

/** Loads index objects from a store (objects/sha256/<aa>/<hex>.json), hash-checked. */
export function storeIndexLoader(root: string): IndexLoader {
  return async (hash) => unwrap(await readDocumentObject(storeFile(root, objectPath(hash, 'json')), hash))
}

/** Loads index objects from an export (index/<hex>.json), hash-checked. */
export function exportIndexLoader(root: string): IndexLoader {
  return async (hash) => unwrap(await readDocumentObject(join(root, ...exportIndexPath(hash).split('/')), hash))
}

function unwrap(r: PackResult<Buffer>): Buffer | Refusal {
  return r.ok ? r.value : r
}

// ---------------------------------------------------------------------------------------------------
// Writing.

/** Writes bytes (or a stream of them) to a new file under <root>/.tmp/, fsynced; returns its SHA-256 and size. */
async function writeTemporary(root: string, data: Uint8Array | AsyncIterable<Uint8Array>): Promise<{ tmp: string; digest: string; bytes: number }> {
  const tmpFolder = join(root, TMP_FOLDER)
  await mkdir(tmpFolder, { recursive: true })
  const tmp = join(tmpFolder, `${process.pid}-${randomBytes(8).toString('hex')}`)
  const sha = createHash('sha256')
  let bytes = 0
  const fh = await open(tmp, 'wx')
  try {
    for await (const chunk of data instanceof Uint8Array ? [data] : data) {
      bytes += chunk.byteLength
      if (bytes > MAX_OBJECT_BYTES) throw new PipeError(STORE_CODES.objectTooLarge, `object is more than ${MAX_OBJECT_BYTES} bytes`)
      sha.update(chunk)
      let off = 0
      while (off < chunk.byteLength) off += (await fh.write(chunk, off, chunk.byteLength - off)).bytesWritten
    }
    await fh.sync()
  } catch (err) {
    await fh.close()
    await unlink(tmp).catch(() => undefined)
    throw err
  }
  await fh.close()
  return { tmp, digest: sha.digest('hex'), bytes }
}

/** Renames a fsynced temporary file to `dest` and makes it durable: fsyncs its folder, and every folder made for it. */
async function moveIntoPlace(tmp: string, dest: string): Promise<void> {
  const folder = dirname(dest)
  const firstMade = await mkdir(folder, { recursive: true })
  await rename(tmp, dest)
  await fsyncDir(folder)
  if (firstMade === undefined) return
  for (let f = folder; f !== dirname(firstMade); ) {
    f = dirname(f)
    await fsyncDir(f)
  }
}

export interface WrittenObject {
  hash: string
  bytes: number
  /** The relative store path. */
  path: string
  /** False when the store already had the object (same bytes): nothing was written. */
  created: boolean
}

/**
 * Writes a content-addressed object. An object already in the store is kept: it must have the same
 * bytes (else pack.object-conflict, and the store's copy stays as it is; objects are never changed).
 */
export async function writeObject(root: string, data: Uint8Array | AsyncIterable<Uint8Array>, ext: ObjectExtension): Promise<WrittenObject> {
  const { tmp, digest, bytes } = await writeTemporary(root, data)
  return placeObject(root, tmp, digest, bytes, ext)
}

/**
 * Makes an object of a file already written under <root>/.tmp/ and fsynced by its writer (a Parquet part),
 * whose SHA-256 (hex) and size the writer computed while writing it; the file is gone afterwards.
 */
export async function adoptObjectFile(root: string, tmp: string, sha256: string, bytes: number, ext: ObjectExtension): Promise<WrittenObject> {
  const folder = join(root, TMP_FOLDER)
  if (dirname(resolve(tmp)) !== resolve(folder)) throw new PipeError(STORE_CODES.pathEscape, `${tmp} is not in the store's ${TMP_FOLDER}/ folder`)
  return placeObject(root, tmp, sha256, bytes, ext)
}

async function placeObject(root: string, tmp: string, digest: string, bytes: number, ext: ObjectExtension): Promise<WrittenObject> {
  try {
    const hash = HASH_PREFIX + digest
    const path = objectPath(hash, ext)
    const dest = storeFile(root, path)
    const existing = await lstat(dest).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined
      throw err
    })
    if (existing !== undefined) {
      const same = await verifyObjectFile(dest, hash, { bytes })
      if (!same.ok) throw new PipeError(STORE_CODES.objectConflict, `${path} is already in the store with other bytes (${same.code}: ${same.detail}); it is kept as it is`)
      await unlink(tmp)
      return { hash, bytes, path, created: false }
    }
    await moveIntoPlace(tmp, dest)
    return { hash, bytes, path, created: true }
  } catch (err) {
    await unlink(tmp).catch(() => undefined)
    throw err
  }
}

/**
 * Writes a store file that is not an object: jetcarp-store.json, a ref, a key statement or a
 * signature, replacing what is there (through .tmp/, fsync, rename, fsync of the folder).
 */
export async function writeStoreFile(root: string, rel: string, bytes: Uint8Array): Promise<void> {
  const p = parseStorePath(rel)
  if (!p.ok) throw new PipeError(p.code, p.detail)
  if (p.value.kind === 'object') throw new PipeError(STORE_CODES.pathEscape, `${rel} is an object: objects are written by writeObject and never replaced`)
  if (bytes.byteLength > MAX_DOCUMENT_BYTES) throw new PipeError(DOC_CODES.jsonTooLarge, `${rel} would be ${bytes.byteLength} bytes, more than ${MAX_DOCUMENT_BYTES}`)
  const { tmp } = await writeTemporary(root, bytes)
  try {
    await moveIntoPlace(tmp, storeFile(root, rel))
  } catch (err) {
    await unlink(tmp).catch(() => undefined)
    throw err
  }
}

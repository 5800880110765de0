/**
 * One version of a pack on a static HTTP(S) host (a store or an export), fetched into a local folder with
 * the same layout, so that the importer checks and reads it exactly as it reads a folder. A static host
 * cannot list a folder, so every file is found as the spec's "The store", "Signatures and keys" and
 * "Exports" build its name: the ref names the manifest; the publisher's key statement (and those it
 * supersedes) names the keys whose signatures can make the version signed; the manifest names the
 * indexes, the indexes the parts, and the media and tilings rows the objects they hold. Every object is
 * fetched with its hash and, where an index states it, its size, both checked while it streams
 * (src/net/http-object.ts); a ref, key statement or signature has no name to check and is trusted for
 * the signature the check verifies next. Nothing fetched is used before the check that follows.
 */
import { join } from 'node:path'
import { PipeError, UsageError } from '../core/errors.js'
import { FETCH_CODES, fetchObject } from '../net/http-object.js'
import { openStorage } from '../storage/storage.js'
import type { S3Storage } from '../storage/s3-storage.js'
import { exportLayout, STORE_LAYOUT, type PackLayout } from '../formats/pack/check/check-run.js'
import { MAX_DOCUMENT_BYTES, MAX_OBJECT_BYTES, isFeedName, isSha256Hash } from '../formats/pack/documents/documents.js'
import { parseManifest, type Manifest } from '../formats/pack/documents/doc-manifest.js'
import { parseRef } from '../formats/pack/documents/doc-ref.js'
import { walkSearchIndex, walkTableIndex, type IndexLoader } from '../formats/pack/documents/index-walk.js'
import {
  EXPORT_MANIFEST_PATH, STORE_DOCUMENT_PATH, exportKeyPath, exportSignaturePath, keyPath, mediaExtension, objectPath,
  readDocumentFile, readDocumentObject, refPath, signaturePath,
} from '../formats/pack/documents/store.js'
import { parseKeyStatement } from '../formats/pack/keys/key-statements.js'
import { signerNameFromFingerprint } from '../formats/pack/keys/ssh-key.js'
import { partRowsOrRefuse } from '../formats/pack/tables/parquet-read.js'
import { PACK_TABLES } from '../formats/pack/tables/table-schemas.js'

export const MIRROR_CODES = {
  /** The URL serves neither jetcarp-store.json nor pack.json. */
  notAPack: 'import.not-a-pack',
  /** A store over HTTP with no --feed or --manifest: a static host cannot be listed for its feeds. */
  feedNeeded: 'import.feed-needed',
  /** A file the version needs is not on the host. */
  missing: 'import.file-missing',
  /** More files or bytes than one version may take (MIRROR_MAX_FILES, MIRROR_MAX_BYTES). */
  tooLarge: 'pack.check-too-large',
} as const

export interface MirrorOptions {
  /** The store's or export's base URL. */
  url: string
  /** An empty folder the version is laid out in. */
  into: string
  feed?: string
  manifest?: string
  /** Fetches at once (default 4). */
  concurrency?: number
  /** Each fetch's deadline, retries included (default 120 s). */
  timeoutMs?: number
  /** A body silent this long is cut and resumed with Range (default 15 s). */
  stallMs?: number
  retries?: number
  signal?: AbortSignal
  /**
   * Asked once the ref (of a store), the manifest, the key statements and the signatures are in `into`:
   * true when the version is one the reader has already, so its tables are not fetched (a follower
   * polling a feed that has not moved).
   */
  known?: (kind: 'store' | 'export') => Promise<boolean>
}

export interface MirroredPack {
  kind: 'store' | 'export'
  /** False when `known` stopped the fetch after the manifest. */
  complete: boolean
  files: number
  bytes: number
  requests: number
}

/** Key statements followed through `supersedes`: a chain longer than this is no publisher's. */
const MAX_KEY_CHAIN = 64
/** Signatures looked for: the chain's keys and the machine keys their statements authorise. */
const MAX_SIGNERS = 4096
/**
 * Files one version may take from a host, and their bytes: the checker's own bound on what it visits
 * (TRACKED_CAP, 2^20), applied while fetching, so that a host that makes up indexes as it is asked
 * cannot keep the mirror fetching (the checker, which would refuse such a store, runs after).
 */
export const MIRROR_MAX_FILES = 2 ** 20
export const MIRROR_MAX_BYTES = 64 * 1024 ** 3

/** Fetches one version of the pack at `o.url` into `o.into`, laid out as on the host. */
export async function mirrorPack(o: MirrorOptions): Promise<MirroredPack> {
  return new Mirror(o).run()
}

class Mirror {
  private readonly base: URL
  private readonly got: MirroredPack = { kind: 'store', complete: false, files: 0, bytes: 0, requests: 0 }
  private layout: PackLayout = STORE_LAYOUT

  constructor(private readonly o: MirrorOptions) {
    let base: URL
    try {
      base = new URL(o.url.endsWith('/') ? o.url : `${o.url}/`)
    } catch {
      throw new UsageError(FETCH_CODES.badUrl, `${JSON.stringify(o.url)} is not a URL`, { location: { field: 'src' } })
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:' && base.protocol !== 's3:') throw new UsageError(FETCH_CODES.badUrl, `${o.url}: only http:, https: and s3: are read`, { location: { field: 'src' } })
    if (o.feed !== undefined && !isFeedName(o.feed)) throw new UsageError('usage.bad-option', `${JSON.stringify(o.feed)} is not a feed name (1 to 64 letters, digits and -)`, { location: { field: '--feed' } })
    if (o.manifest !== undefined && !isSha256Hash(o.manifest)) throw new UsageError('usage.bad-option', `${JSON.stringify(o.manifest)} is not sha256: and 64 lower-case hex digits`, { location: { field: '--manifest' } })
    this.base = base
  }

  /** A bucket's objects are fetched as an HTTP(S) host's are, through URLs signed for each GET. */
  private bucket: Promise<S3Storage> | undefined

  private async fetchUrl(rel: string): Promise<string> {
    if (this.base.protocol !== 's3:') return this.url(rel)
    this.bucket ??= openStorage(this.o.url) as Promise<S3Storage>
    return (await this.bucket).signedGetUrl(rel, Math.ceil((this.o.timeoutMs ?? 120_000) / 1000) + 60)
  }

  /** The one feed of a store in a bucket, which (unlike a static host) can be listed. */
  private async onlyFeed(): Promise<string | undefined> {
    if (this.base.protocol !== 's3:') return undefined
    const feeds: string[] = []
    for await (const { key } of (await openStorage(this.o.url)).list('refs/')) {
      const m = /^refs\/([A-Za-z0-9-]{1,64})\.json$/.exec(key)
      if (m) feeds.push(m[1]!)
    }
    if (feeds.length === 1) return feeds[0]
    throw new UsageError(MIRROR_CODES.feedNeeded, `${this.base.href} holds ${feeds.length === 0 ? 'no feed' : `feeds ${feeds.join(', ')}`}: name the feed with --feed (or a version with --manifest)`, { location: { field: '--feed' } })
  }

  async run(): Promise<MirroredPack> {
    let manifest: Manifest
    let storeManifest: string | undefined
    const publishers: string[] = []
    if (await this.file(STORE_DOCUMENT_PATH, { maxBytes: MAX_DOCUMENT_BYTES, optional: true })) {
      storeManifest = this.o.manifest ?? (await this.refManifest(publishers))
      manifest = await this.manifestAt(objectPath(storeManifest, 'json'), storeManifest)
    } else if (await this.file(EXPORT_MANIFEST_PATH, { maxBytes: MAX_DOCUMENT_BYTES, optional: true })) {
      this.got.kind = 'export'
      this.layout = exportLayout()
      manifest = await this.manifestAt(EXPORT_MANIFEST_PATH)
    } else {
      throw new PipeError(MIRROR_CODES.notAPack, `${this.base.href} serves neither ${STORE_DOCUMENT_PATH} (a store) nor ${EXPORT_MANIFEST_PATH} (an export)`, { location: { file: this.o.url } })
    }
    await this.signatures([manifest.publisher, ...publishers], storeManifest)
    if (await this.o.known?.(this.got.kind)) return this.got
    await this.tables(manifest)
    this.got.complete = true
    return this.got
  }

  /** The feed's ref, kept for the check (its seq and signature), and the manifest it names. */
  private async refManifest(publishers: string[]): Promise<string> {
    const feed = this.o.feed ?? (await this.onlyFeed())
    if (feed === undefined) {
      throw new UsageError(MIRROR_CODES.feedNeeded, `${this.base.href} is a store over HTTP, whose refs/ cannot be listed: name the feed with --feed (or a version with --manifest)`, { location: { field: '--feed' } })
    }
    const rel = refPath(feed)
    if (!(await this.file(rel, { maxBytes: MAX_DOCUMENT_BYTES, optional: true }))) {
      throw new UsageError('usage.no-such-feed', `${this.base.href} has no feed ${feed} (no ${rel})`, { location: { field: '--feed' } })
    }
    const parsed = parseRef(await this.local(rel), { feed })
    if (!parsed.ok) throw new PipeError(parsed.code, `${this.url(rel)}: ${parsed.detail}`)
    publishers.push(parsed.value.ref.publisher)
    return parsed.value.ref.manifest
  }

  private async manifestAt(rel: string, hash?: string): Promise<Manifest> {
    if (hash !== undefined) await this.file(rel, { hash, maxBytes: MAX_DOCUMENT_BYTES })
    const bytes = hash === undefined ? await this.local(rel) : await readDocumentObject(this.path(rel), hash).then((r) => this.unwrap(r, rel))
    const parsed = parseManifest(bytes)
    if (!parsed.ok) throw new PipeError(parsed.code, `${this.url(rel)}: ${parsed.detail}`)
    const m = parsed.value.manifest
    if (this.o.feed !== undefined && m.feed !== this.o.feed) throw new UsageError('usage.feed-mismatch', `${this.url(rel)} is a version of feed ${m.feed}, not ${this.o.feed}`, { location: { field: '--feed' } })
    return m
  }

  /**
   * The key statements of the publisher's chain (each one's `supersedes` followed) and the signatures
   * on the manifest by each key of it and each machine key they authorise: every signature that can
   * make the version signed by its publisher ("Signatures and keys"). A signature the host lacks is none.
   */
  private async signatures(fingerprints: readonly string[], storeManifest: string | undefined): Promise<void> {
    const signers = new Set<string>()
    const chain = new Set<string>()
    const queue = [...fingerprints]
    for (let fp = queue.shift(); fp !== undefined && chain.size < MAX_KEY_CHAIN; fp = queue.shift()) {
      const signer = signerNameFromFingerprint(fp)
      if (signer === undefined || chain.has(signer)) continue
      chain.add(signer)
      signers.add(signer)
      const rel = this.got.kind === 'store' ? keyPath(signer) : exportKeyPath(signer)
      if (!(await this.file(rel, { maxBytes: MAX_DOCUMENT_BYTES, optional: true, probed: true }))) continue
      // Only to find the names of further files: the check reads each statement again, and judges it.
      const parsed = parseKeyStatement({ statement: await this.local(rel), signerName: signer, source: this.url(rel) })
      if (!parsed.ok) continue
      if (parsed.statement.supersedes !== undefined) queue.push(parsed.statement.supersedes)
      for (const a of parsed.statement.authorised) {
        const name = signerNameFromFingerprint(a.fingerprint)
        if (name !== undefined && signers.size < MAX_SIGNERS) signers.add(name)
      }
    }
    const window = new FetchWindow(this.o.concurrency ?? 4)
    try {
      for (const signer of signers) {
        await window.add(() => this.file(storeManifest === undefined ? exportSignaturePath(signer) : signaturePath(storeManifest, signer), { maxBytes: MAX_DOCUMENT_BYTES, optional: true, probed: true }))
      }
    } finally {
      await window.settled()
    }
    await window.drain()
  }

  /**
   * Every index, part, search segment and score sidecar the manifest names, then the objects that the
   * media and tilings rows name (read from their parts, fetched and hash-checked first).
   */
  private async tables(manifest: Manifest): Promise<void> {
    const loader: IndexLoader = async (hash) => {
      const rel = this.layout.indexPath(hash)
      await this.file(rel, { hash, maxBytes: MAX_DOCUMENT_BYTES })
      const read = await readDocumentObject(this.path(rel), hash)
      return read.ok ? read.value : read
    }
    const rowParts: { table: 'media' | 'tilings'; rel: string }[] = []
    const objects = new FetchWindow(this.o.concurrency ?? 4)
    const object = (rel: string, hash: string, bytes?: number) => objects.add(() => this.fetchInto(rel, { hash, maxBytes: MAX_OBJECT_BYTES, ...(bytes !== undefined ? { bytes } : {}) }))
    // Whatever ends the walk (a refused index, a name that is no path, an abort), no fetch outlives it.
    try {
      for (const [table, root] of Object.entries(manifest.tables)) {
        if (objects.failed) break
        for await (const e of walkTableIndex(root, loader, { table })) {
          if (objects.failed) break
          if (e.kind !== 'part') continue
          const rel = this.layout.partPath(table, e.part)
          await object(rel, e.part.object, e.part.bytes)
          if (table === 'media' || table === 'tilings') rowParts.push({ table, rel })
        }
      }
      for (const [search, root] of Object.entries(manifest.searches)) {
        if (objects.failed) break
        for await (const e of walkSearchIndex(root, loader, { search })) {
          if (objects.failed) break
          if (e.kind === 'segment') await object(this.layout.segmentPath(search, e.segment), e.segment.object, e.segment.bytes)
          else if (e.kind === 'score') await object(this.layout.scorePath(search, e.score.version, e.part), e.part.object, e.part.bytes)
        }
      }
      await objects.drain()
      for (const { table, rel } of rowParts) {
        if (objects.failed) break
        for await (const row of partRowsOrRefuse(this.path(rel), PACK_TABLES[table], this.url(rel))) {
          if (objects.failed) break
          if (table === 'tilings' && typeof row.reference === 'string' && isSha256Hash(row.reference) && typeof row.family === 'string') {
            await object(this.layout.referencePatchPath(row.family, row.reference), row.reference)
          }
          const ext = table === 'media' ? mediaExtension(row.media_type) : undefined
          if (ext?.ok && typeof row.object === 'string' && isSha256Hash(row.object)) {
            // A row the check will refuse names no file; the name is left for the check to judge.
            let mediaRel: string
            try {
              mediaRel = this.layout.mediaPath(row as never, ext.value)
            } catch {
              continue
            }
            await object(mediaRel, row.object)
          }
        }
      }
    } finally {
      await objects.settled()
    }
    await objects.drain()
  }

  /**
   * Fetches `rel` into the mirror once (a file fetched before is not asked for again). Returns false for
   * an `optional` file the host does not have; a required one it lacks is import.file-missing.
   */
  private readonly fetched = new Map<string, Promise<boolean>>()
  private file(rel: string, f: FileToFetch): Promise<boolean> {
    let p = this.fetched.get(rel)
    if (p === undefined) {
      p = quiet(this.fetchInto(rel, f))
      this.fetched.set(rel, p)
    }
    return p
  }

  /** Fetches `rel` into the mirror (an object: a part, a media file, whose names are met once each). */
  private async fetchInto(rel: string, f: FileToFetch): Promise<boolean> {
    const url = await this.fetchUrl(rel)
    try {
      const got = await fetchObject({
        url, dest: this.path(rel), maxBytes: f.maxBytes,
        ...(f.hash !== undefined ? { hash: f.hash } : {}), ...(f.bytes !== undefined ? { bytes: f.bytes } : {}),
        ...(this.o.timeoutMs !== undefined ? { timeoutMs: this.o.timeoutMs } : {}),
        ...(this.o.stallMs !== undefined ? { stallMs: this.o.stallMs } : {}),
        ...(this.o.retries !== undefined ? { retries: this.o.retries } : {}),
        ...(this.o.signal ? { signal: this.o.signal } : {}),
      })
      this.got.files++
      this.got.bytes += got.bytes
      this.got.requests += got.requests
      if (this.got.files > MIRROR_MAX_FILES || this.got.bytes > MIRROR_MAX_BYTES) {
        throw new PipeError(MIRROR_CODES.tooLarge, `${this.base.href}: the version takes more than ${MIRROR_MAX_FILES} files or ${MIRROR_MAX_BYTES} bytes, more than one import reads (memory and disk stay bounded)`, { location: { file: this.o.url } })
      }
      return true
    } catch (err) {
      // A signed URL is a secret for its lifetime, and no name for a user: errors name the object.
      if (err instanceof PipeError && url !== this.url(rel)) err.message = err.message.split(url).join(this.url(rel))
      // Absence can only refuse a version: a signature missing is no signature, which the check judges.
      const absent = err instanceof PipeError && (err.code === FETCH_CODES.notFound || (f.probed === true && err.code === FETCH_CODES.forbidden))
      if (absent) {
        this.got.requests++
        if (f.optional) return false
        throw new PipeError(MIRROR_CODES.missing, `${this.url(rel)}: the host has no such file, which the version names`, { location: { file: this.url(rel) } })
      }
      throw err
    }
  }

  private url(rel: string): string {
    return new URL(rel, this.base).href
  }

  /** Where a file goes: the layout built `rel` from checked parts (a hash, a signer, a table, a partition value). */
  private path(rel: string): string {
    return join(this.o.into, ...rel.split('/'))
  }

  private async local(rel: string): Promise<Buffer> {
    return this.unwrap(await readDocumentFile(this.path(rel)), rel)
  }

  private unwrap(r: { ok: true; value: Buffer } | { ok: false; code: string; detail: string }, rel: string): Buffer {
    if (!r.ok) throw new PipeError(r.code, `${this.url(rel)}: ${r.detail}`)
    return r.value
  }
}

interface FileToFetch {
  hash?: string
  bytes?: number
  maxBytes: number
  optional?: boolean
  /**
   * Looked for, not named by the version (a key statement up a chain, a signature under a key that could
   * have signed): a 403 is absence too, as an S3 bucket without list permission answers for a missing file.
   */
  probed?: boolean
}

/**
 * Fetches of objects, at most `limit` at once: `add` waits for room, so a version of a million parts holds
 * `limit` fetches in memory, not a million. After a failure nothing more starts, and `drain` throws it once
 * every fetch started has ended (none is left writing into a folder about to be removed).
 */
class FetchWindow {
  private readonly running = new Set<Promise<void>>()
  private failure: { err: unknown } | undefined

  constructor(private readonly limit: number) {}

  get failed(): boolean {
    return this.failure !== undefined
  }

  async add(start: () => Promise<unknown>): Promise<void> {
    while (this.running.size >= this.limit) await Promise.race(this.running)
    if (this.failure) return
    const p: Promise<void> = start().then(() => undefined, (err: unknown) => { this.failure ??= { err } }).finally(() => this.running.delete(p))
    this.running.add(p)
  }

  /** Every fetch started has ended (none throws here). */
  async settled(): Promise<void> {
    await Promise.all(this.running)
  }

  async drain(): Promise<void> {
    await this.settled()
    if (this.failure) throw this.failure.err
  }
}

/** A fetch awaited later, with its batch: until then its failure must not count as unhandled. */
function quiet<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined)
  return p
}



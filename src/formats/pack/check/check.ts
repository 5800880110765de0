/**
 * Checking a store or an export at conformance levels 0 to 3 (pack format 1.0, "Conformance levels";
 * docs/pack-format-notes.md, "Checking"). `checkPack(dir, { level })` yields every issue as it is found:
 * failures, and notes (not failures: records left unchecked or not replayed, identities in a spelling we
 * cannot read, tables we do not know, neighbour-list lint).
 *
 * What is followed. A store: jetcarp-store.json, every refs/<feed>.json, each ref's manifest and every
 * parent of it the store holds (a missing parent is history the store does not have), and for each
 * manifest its tables and searches (check-tables.ts). An export: pack.json and its tables and searches,
 * found through index/ and the export's names, and the earlier manifests in history/ (checked as documents
 * only: an export holds none of their tables). Each part, segment, sidecar, reference patch and media file
 * is checked once, however many indexes or versions name it.
 *
 * Levels. 0 reads every document within its limits and every row of every part; 1 checks every object's
 * size and hash before it is used, the index trees, the rows' rules, ids and pins; 2 reads keys/ and checks
 * the key statements as a chain, each manifest's signatures and that its publisher signed it, and each
 * ref's signature, feed, publisher and seq; 3 replays the periodic patterns of lattice tilings.
 */
import { createHash } from 'node:crypto'
import { lstat } from 'node:fs/promises'
import { join } from 'node:path'
import { UsageError } from '../../../core/errors.js'
import { formatBytes } from '../../../core/input-file.js'
import { isSha256Hash, objectHash, parseStoreDocument } from '../documents/documents.js'
import { parseManifest, type Manifest } from '../documents/doc-manifest.js'
import { parseRef, verifyRef } from '../documents/doc-ref.js'
import { authoriseSigner, publisherIdOf, verifyKeyChain, type KeyChain, type KeyStatementSource, type Revocation } from '../keys/key-statements.js'
import type { ReplayBudget } from './replay.js'
import { NS_MANIFEST, verifySshsig } from '../keys/sshsig.js'
import { EXPORT_MANIFEST_PATH, STORE_CODES, STORE_DOCUMENT_PATH, exportHistoryPath, objectPath, readDocumentFile } from '../documents/store.js'
import { CHECK_CODES, CheckRun, CheckTooLarge, STORE_LAYOUT, exportLayout, type CheckCaps, type CheckIssue, type CheckLevel, type CheckStats, type ReplaySample } from './check-run.js'
import { TableChecker } from './check-tables.js'

export { CHECK_CODES, levelOf, type CheckCaps, type CheckIssue, type CheckLevel, type CheckStats, type ReplaySample } from './check-run.js'

/** Not a store (no jetcarp-store.json) nor an export (no pack.json): a usage error. */
export const NOT_A_PACK = 'pack.not-a-pack'

export interface CheckOptions {
  /** The highest level to check; levels are cumulative (default 3). */
  level?: CheckLevel
  signal?: AbortSignal
  /** Lower replay limits than replay.ts's (tests). */
  replayBudget?: Partial<ReplayBudget>
  /** Threads that check parts, this one among them: threads - 1 workers (default: one per CPU the process may use; 0 or 1: this thread alone). */
  threads?: number
  /** The smallest part given to the pool's lanes (default 256 KiB; tests give them every part with 0). */
  threadPartBytes?: number
  /** How much a check keeps across parts, so that memory stays bounded (the defaults; tests give less). */
  caps?: CheckCaps
  /** A store's every file under objects/ hashed, not only those its versions name (a full fsck; level 1 and up). */
  allObjects?: boolean
  /** Revocations seen before (a library's pack_revoked): in force at level 2 whatever the store serves now. */
  knownRevocations?: readonly Revocation[]
  /** At level 3, replay only the patterns the sample takes (check-run.ts ReplaySample). */
  replaySample?: ReplaySample
}

/** Whether `dir` holds a store or an export (a store when it has jetcarp-store.json), or neither. */
export async function packKind(dir: string): Promise<'store' | 'export' | undefined> {
  for (const [file, kind] of [[STORE_DOCUMENT_PATH, 'store'], [EXPORT_MANIFEST_PATH, 'export']] as const) {
    const st = await lstat(join(dir, file)).catch(() => undefined)
    if (st?.isFile()) return kind
  }
  return undefined
}

/** Checks the store or export at `dir`, yielding each issue as it is found. Throws a UsageError when `dir` is neither. */
export function checkPack(dir: string, options: CheckOptions = {}): AsyncGenerator<CheckIssue> {
  return new PackChecker(dir, options).run()
}

/** checkPack with its counts: read `stats` once `run()` is done. */
export class PackChecker {
  private current: CheckRun | undefined

  constructor(
    readonly dir: string,
    private readonly options: CheckOptions = {},
  ) {}

  get stats(): CheckStats | undefined {
    return this.current?.stats
  }

  /** After a level-2 run: every revocation that counts (the store's and the known ones), to keep for good. */
  get revocations(): readonly Revocation[] {
    return this.versions?.revocations ?? []
  }

  /** After a level-2 run: the publisher id (the first key of its chain) of a key that stands, else undefined. */
  publisherIdOf(fingerprint: string): string | undefined {
    return this.versions?.publisherIdOf(fingerprint)
  }

  /** After a run over a store: whether the version `manifest` was among those checked (reached from a ref). */
  checkedVersion(manifest: string): boolean {
    return this.versions?.hasVersion(manifest) ?? false
  }

  private versions: VersionCheck | undefined

  async *run(): AsyncGenerator<CheckIssue> {
    const kind = await packKind(this.dir)
    if (kind === undefined) {
      throw new UsageError(NOT_A_PACK, `${this.dir} holds neither ${STORE_DOCUMENT_PATH} (a store) nor ${EXPORT_MANIFEST_PATH} (an export)`, { location: { file: this.dir } })
    }
    const run = new CheckRun(this.dir, kind === 'store' ? STORE_LAYOUT : exportLayout(), {
      level: this.options.level ?? 3,
      ...(this.options.signal ? { signal: this.options.signal } : {}),
      ...(this.options.replayBudget ? { replayBudget: this.options.replayBudget } : {}),
      ...(this.options.threads !== undefined ? { threads: this.options.threads } : {}),
      ...(this.options.threadPartBytes !== undefined ? { threadPartBytes: this.options.threadPartBytes } : {}),
      ...(this.options.caps ? { caps: this.options.caps } : {}),
      ...(this.options.replaySample ? { replaySample: this.options.replaySample } : {}),
    })
    this.current = run
    const versions = new VersionCheck(run, this.options.knownRevocations ?? [])
    this.versions = versions
    try {
      yield* kind === 'store' ? versions.store() : versions.export()
      yield* run.documentIssues()
      if (this.options.allObjects && kind === 'store' && run.at(1)) yield* run.allObjects()
    } catch (err) {
      if (!(err instanceof CheckTooLarge)) throw err
      yield* run.documentIssues()
      yield run.issue(CHECK_CODES.checkTooLarge, err.target, err.message)
    } finally {
      await versions.close()
    }
  }
}

const retractionKey = (r: { target: string; publisher: string }): string => `${r.target} ${r.publisher}`

/** 64 bits of SHA-256 of a retraction's key: two keys sharing them would be one chance in 2^64 per pair. */
function retractionDigest(key: string): bigint {
  return createHash('sha256').update(key).digest().readBigUInt64BE(0)
}

/** Whether the sorted `list` holds `d` (binary search). */
function sortedHas(list: BigUint64Array, d: bigint): boolean {
  let [lo, hi] = [0, list.length]
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (list[mid]! < d) lo = mid + 1
    else hi = mid
  }
  return lo < list.length && list[lo] === d
}

/**
 * The retraction digests a check keeps across versions: 32 MB. Retractions are cumulative, so a feed's
 * versions each list all of their parents' and more; a thousand versions of ten thousand retractions each
 * would keep 80 MB, and a 16 MiB manifest lists some 200,000.
 */
export const RETRACTION_DIGESTS_CAP = 1 << 22

/**
 * Versions' retraction lists as sorted, distinct digests (8 bytes a retraction, where a set of strings
 * took about ten times that), and one array for every version listing the same: retractions are
 * cumulative, so most versions of a feed list what their parent does. Lists beyond the cap are not kept.
 */
class RetractionSets {
  private readonly shared = new Map<string, BigUint64Array>()

  constructor(private left: number) {}

  /** A version's list, or undefined when keeping it would pass the cap. */
  of(keys: readonly string[]): BigUint64Array | undefined {
    const digests = BigUint64Array.from(new Set(keys.map(retractionDigest))).sort()
    const id = createHash('sha256').update(new Uint8Array(digests.buffer, digests.byteOffset, digests.byteLength)).digest('hex')
    const known = this.shared.get(id)
    if (known) return known
    if (digests.length > this.left) return undefined
    this.left -= digests.length
    this.shared.set(id, digests)
    return digests
  }
}

const SIGNATURE_NAME = /^([0-9a-f]{64})\.sig$/
const KEY_NAME = /^([0-9a-f]{64})\.json$/
const REF_NAME = /^([A-Za-z0-9-]{1,64})\.json$/

/**
 * The bytes of key statements a check reads from keys/: a statement is about 600 bytes, so some 28,000 of
 * them (a few a publisher), where the spec's 16 MiB a document would let keys/ hold any number of large ones.
 */
export const KEY_STATEMENT_BYTES_CAP = 16 << 20

/** What a ref's checks need of a manifest read earlier. */
interface Version {
  feed: string
  publisher: string
  firstParent: string | undefined
}

class VersionCheck {
  private readonly tables: TableChecker
  private chain: KeyChain | undefined
  private readonly versions = new Map<string, Version>()
  /**
   * Each version's retractions (as the sorted digests of `target publisher`, versions listing the same
   * sharing one array), its parents and publisher; and the versions read whose parent is not read yet.
   */
  private readonly retractions = new Map<string, { rel: string; listed: BigUint64Array | undefined; parents: readonly string[]; publisher: string }>()
  private readonly retractionSets: RetractionSets
  private retractionsNoted = false
  private readonly childrenWaiting = new Map<string, string[]>()

  constructor(private readonly run: CheckRun, private readonly knownRevocations: readonly Revocation[]) {
    this.tables = new TableChecker(run)
    this.retractionSets = new RetractionSets(run.caps.retractionDigests ?? RETRACTION_DIGESTS_CAP)
  }

  close(): Promise<void> {
    return this.tables.close()
  }

  /** The revocations the key chain counts (level 2), the known ones among them. */
  get revocations(): readonly Revocation[] {
    return this.chain?.revocations ?? []
  }

  publisherIdOf(fingerprint: string): string | undefined {
    return this.chain === undefined ? undefined : publisherIdOf(this.chain, fingerprint)
  }

  hasVersion(manifest: string): boolean {
    return this.versions.has(manifest)
  }

  async *store(): AsyncGenerator<CheckIssue> {
    const run = this.run
    const doc = await run.readPlainDocument(STORE_DOCUMENT_PATH)
    const parsed = doc.ok ? parseStoreDocument(doc.value) : doc
    if (!parsed.ok) yield run.issue(parsed.code, STORE_DOCUMENT_PATH, parsed.detail)
    if (run.at(2)) this.chain = yield* this.keyChain()
    const refs = yield* run.list('refs', REF_NAME)
    if (refs.length === 0) yield run.issue(CHECK_CODES.storeNoRefs, 'refs', 'the store has no refs/<feed>.json, so no version to check')
    for (const ref of refs) yield* this.ref(ref.key, ref.rel)
  }

  async *export(): AsyncGenerator<CheckIssue> {
    const run = this.run
    if (run.at(2)) this.chain = yield* this.keyChain()
    const read = yield* this.readManifest(EXPORT_MANIFEST_PATH, undefined, true)
    if (!read) return
    if (run.at(2)) yield* this.signatures(EXPORT_MANIFEST_PATH, read.bytes, read.manifest, yield* run.list('sigs', SIGNATURE_NAME))
    yield* this.cumulativeRetractions(objectHash(read.bytes), EXPORT_MANIFEST_PATH, read.manifest)
    yield* this.tables.manifest(read.manifest)
    // Earlier manifests: documents only, since an export carries none of their tables or signatures.
    const stack = [...read.manifest.parents].reverse()
    for (let h = stack.pop(); h !== undefined; h = stack.pop()) {
      const rel = isSha256Hash(h) ? exportHistoryPath(h) : undefined
      if (rel === undefined || !run.firstVisit(rel)) continue
      const earlier = yield* this.readManifest(rel, h, false)
      if (!earlier) continue
      yield* this.cumulativeRetractions(h, rel, earlier.manifest)
      stack.push(...[...earlier.manifest.parents].reverse())
    }
  }

  /** A ref, its manifest and the parents the store holds, then (level 2) its signature, feed, publisher and seq. */
  private async *ref(feed: string, rel: string): AsyncGenerator<CheckIssue> {
    const run = this.run
    const read = await run.readPlainDocument(rel)
    const parsed = read.ok ? parseRef(read.value, { feed }) : read
    if (!parsed.ok) {
      yield run.issue(parsed.code, rel, parsed.detail)
      return
    }
    const ref = parsed.value.ref
    yield* this.history(ref.manifest)
    const chain = this.chain
    if (!chain) return
    const verified = verifyRef(chain, ref)
    if (!verified.ok) yield run.issue(verified.code, rel, verified.detail)
    const version = this.versions.get(ref.manifest)
    if (!version) return
    if (version.feed !== ref.feed) yield run.issue(CHECK_CODES.refManifestFeed, rel, `the ref of feed ${ref.feed} names manifest ${ref.manifest}, a version of feed ${version.feed}`)
    const refPublisher = publisherIdOf(chain, ref.publisher)
    const manifestPublisher = publisherIdOf(chain, version.publisher)
    if (refPublisher !== undefined && manifestPublisher !== undefined && refPublisher !== manifestPublisher) {
      yield run.issue(CHECK_CODES.refPublisher, rel, `the ref is of publisher ${refPublisher} (key ${ref.publisher}), its manifest of publisher ${manifestPublisher} (key ${version.publisher})`)
    }
    const held = this.feedVersions(ref.manifest, ref.feed)
    if (ref.seq < held) yield run.issue(CHECK_CODES.refSeq, rel, `seq ${ref.seq}, but the store holds ${held} versions of feed ${ref.feed} up to its manifest, and seq goes up by at least one a version`)
  }

  /** The versions of `feed` from `hash` back along first parents (the feed's previous versions), as far as the store holds them. */
  private feedVersions(hash: string, feed: string): number {
    const seen = new Set<string>()
    let n = 0
    for (let h: string | undefined = hash; h !== undefined && !seen.has(h); ) {
      const v = this.versions.get(h)
      if (!v || v.feed !== feed) break
      seen.add(h)
      n++
      h = v.firstParent
    }
    return n
  }

  /** A ref's manifest (which must be there) and every parent of it the store holds, each once. */
  private async *history(start: string): AsyncGenerator<CheckIssue> {
    const run = this.run
    const stack = [start]
    for (let h = stack.pop(); h !== undefined; h = stack.pop()) {
      if (!isSha256Hash(h)) continue
      const rel = objectPath(h, 'json')
      if (!run.firstVisit(rel)) continue
      const read = yield* this.readManifest(rel, h, h === start)
      if (!read) continue
      const m = read.manifest
      this.versions.set(h, { feed: m.feed, publisher: m.publisher, firstParent: m.parents[0] })
      yield* this.cumulativeRetractions(h, rel, m)
      if (this.chain) {
        const hex = h.slice('sha256:'.length)
        yield* this.signatures(rel, read.bytes, m, yield* run.list(`sigs/sha256/${hex.slice(0, 2)}/${hex}`, SIGNATURE_NAME))
      }
      yield* this.tables.manifest(m)
      stack.push(...[...m.parents].reverse())
    }
  }

  /**
   * Level 1: "every later version of the feed lists every retraction its parents list, and a merge keeps its
   * parents' with their publishers". A version is compared with each parent the pack holds, whichever of the
   * two is read first; once, when its manifest lists a parent twice (twice waiting for it, it would be
   * judged twice).
   */
  private async *cumulativeRetractions(hash: string, rel: string, m: Manifest): AsyncGenerator<CheckIssue> {
    if (!this.run.at(1)) return
    const parents = [...new Set(m.parents)]
    this.retractions.set(hash, { rel, listed: this.retractionSets.of(m.retracts.map(retractionKey)), parents, publisher: m.publisher })
    for (const parent of parents) {
      if (this.retractions.has(parent)) yield* this.retractionsKept(hash, parent)
      else this.childrenWaiting.set(parent, [...(this.childrenWaiting.get(parent) ?? []), hash])
    }
    yield* this.firstListings(hash)
    for (const child of this.childrenWaiting.get(hash) ?? []) {
      yield* this.retractionsKept(child, hash)
      yield* this.firstListings(child)
    }
    this.childrenWaiting.delete(hash)
  }

  /**
   * Level 2: a retraction's publisher is "the version's publisher when it first listed it". A retraction
   * none of a version's parents lists is first listed there, and must name the version's publisher id,
   * which only the key statements give (the manifest names the current key). Judged once every parent is
   * read: with a parent the pack lacks, a retraction may be that parent's.
   */
  private async *firstListings(hash: string): AsyncGenerator<CheckIssue> {
    const v = this.retractions.get(hash)!
    if (!this.chain || !v.parents.every((p) => this.retractions.has(p))) return
    const id = publisherIdOf(this.chain, v.publisher)
    if (id === undefined) return
    const inherited = v.parents.map((p) => this.retractions.get(p)!.listed)
    if (!v.listed || !inherited.every((l): l is BigUint64Array => l !== undefined)) {
      yield* this.retractionsUnkept(v.rel)
      return
    }
    const firstListed = new Set(v.listed.filter((d) => !inherited.some((listed) => sortedHas(listed, d))))
    if (firstListed.size === 0) return
    // The texts are read again only when there is something to say.
    const others = (await this.retractionTexts(v.rel, firstListed)).filter((r) => r.slice(r.indexOf(' ') + 1) !== id)
    if (others.length === 0) return
    yield this.run.issue(CHECK_CODES.retractionPublisher, v.rel, `it is the first version to list ${others.length} retraction(s) (target and publisher), which must name its publisher ${id}: ${others.slice(0, 3).join(', ')}${others.length > 3 ? ', …' : ''}`)
  }

  private async *retractionsKept(child: string, parent: string): AsyncGenerator<CheckIssue> {
    const c = this.retractions.get(child)!
    const p = this.retractions.get(parent)!
    const [inherited, listed] = [p.listed, c.listed]
    if (!inherited || !listed) {
      yield* this.retractionsUnkept(c.rel)
      return
    }
    if (inherited === listed) return
    const missingDigests = new Set(inherited.filter((d) => !sortedHas(listed, d)))
    if (missingDigests.size === 0) return
    const missing = await this.retractionTexts(p.rel, missingDigests)
    yield this.run.issue(CHECK_CODES.retractsNotCumulative, c.rel, `it does not list ${missing.length} retraction(s) of its parent ${parent} (target and publisher): ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', …' : ''}`)
  }

  /** A note, once a check, that a version's retractions are not judged: its list or a parent's was beyond the cap. */
  private *retractionsUnkept(rel: string): Generator<CheckIssue> {
    if (this.retractionsNoted) return
    this.retractionsNoted = true
    yield this.run.note(CHECK_CODES.retractionsUnkept, rel, `more retractions across the versions than the ${this.run.caps.retractionDigests ?? RETRACTION_DIGESTS_CAP} a check keeps (memory stays bounded): this version's, and those of others beyond them, are not held to their parents' nor their first listings to their publisher`)
  }

  /** The retractions of the manifest at `rel` (read again) whose digests are among `digests`, as `target publisher`. */
  private async retractionTexts(rel: string, digests: ReadonlySet<bigint>): Promise<string[]> {
    const read = await readDocumentFile(this.run.file(rel))
    const parsed = read.ok ? parseManifest(read.value) : undefined
    if (!parsed?.ok) return [...digests].map((d) => `(digest ${d.toString(16)})`)
    return [...new Set(parsed.value.manifest.retracts.map(retractionKey))].filter((r) => digests.has(retractionDigest(r)))
  }

  /**
   * Reads and parses a manifest at `rel`: checked against `hash` from level 1 (pack.json has no hash to
   * be checked against: its hash is what its bytes give). A missing one that is not `required` is history
   * the pack does not have, and no issue.
   */
  private async *readManifest(rel: string, hash: string | undefined, required: boolean): AsyncGenerator<CheckIssue, { manifest: Manifest; bytes: Buffer } | undefined> {
    const run = this.run
    const read = hash === undefined ? await run.readPlainDocument(rel) : await run.readDocument(rel, hash)
    if (!read.ok) {
      if (required || read.code !== STORE_CODES.objectMissing) yield run.issue(read.code, rel, read.detail)
      return undefined
    }
    const parsed = parseManifest(read.value)
    if (!parsed.ok) {
      yield run.issue(parsed.code, rel, parsed.detail)
      return undefined
    }
    run.stats.manifests++
    return { manifest: parsed.value.manifest, bytes: read.value }
  }

  /**
   * Level 2: the key statements of keys/, verified together as one chain, so held together: within
   * KEY_STATEMENT_BYTES_CAP, beyond which the rest are not read (a failure: what their keys sign cannot
   * be verified).
   */
  private async *keyChain(): AsyncGenerator<CheckIssue, KeyChain> {
    const run = this.run
    const sources: KeyStatementSource[] = []
    const cap = run.caps.keyStatementBytes ?? KEY_STATEMENT_BYTES_CAP
    let left = cap
    for (const f of yield* run.list('keys', KEY_NAME)) {
      const read = await run.readPlainDocument(f.rel)
      if (!read.ok) {
        yield run.issue(read.code, f.rel, read.detail)
        continue
      }
      left -= read.value.length
      if (left < 0) {
        yield run.issue(CHECK_CODES.keysTooLarge, f.rel, `keys/ holds more key statements than the ${formatBytes(cap)} a check reads: this one and those after it are not read, and what their keys sign is not verified`)
        break
      }
      sources.push({ statement: read.value, signerName: f.key, source: f.rel })
    }
    const chain = verifyKeyChain(sources, { knownRevocations: this.knownRevocations })
    for (const f of chain.findings) yield run.issue(f.code, f.source ?? f.fingerprint ?? 'keys', f.detail)
    return chain
  }

  /**
   * Level 2: every signature file of a manifest verifies over its bytes and is named for its key, and one
   * of them makes the manifest signed by its publisher. Signatures by other keys are endorsements.
   */
  private async *signatures(target: string, bytes: Buffer, manifest: Manifest, files: readonly { key: string; rel: string }[]): AsyncGenerator<CheckIssue> {
    const run = this.run
    let signed = false
    let refused: { code: string; detail: string } | undefined
    for (const f of files) {
      const read = await readDocumentFile(run.file(f.rel))
      if (!read.ok) {
        yield run.issue(read.code, f.rel, read.detail)
        continue
      }
      const v = verifySshsig(read.value, bytes, NS_MANIFEST, { signerName: f.key })
      if (!v.ok) {
        yield run.issue(v.code, f.rel, v.detail)
        continue
      }
      const by = authoriseSigner(this.chain!, manifest.publisher, v.fingerprint)
      if (by.ok) signed = true
      else refused ??= by
    }
    if (signed) return
    yield refused
      ? run.issue(refused.code, target, `not signed by its publisher: ${refused.detail}`)
      : run.issue(CHECK_CODES.manifestUnsigned, target, files.length === 0 ? 'it has no signature' : 'none of its signatures verifies')
  }
}

/**
 * Publishing: records (docs/pack-records.md) to a new signed version of a feed in a store ("The store",
 * "The manifest", "Tables, indexes and parts", "Refs", "Signatures and keys").
 *
 * - Rows are completed (publish-rows.ts), checked (table-schemas.ts) and gathered in chunks (new-rows.ts),
 *   each sorted by partition, the table's sort columns and their RFC 8785 text and written as parts of its
 *   own on the part writer's thread while the next fills; what the parents already have is known by 128-bit
 *   hashes: memory stays bounded whatever the pack's size.
 * - A new version keeps its parents' parts (the feed's current version first, then any merged), adds parts
 *   holding only rows its parents lack (a fact row by its key, an event row by its bytes), and keeps an
 *   unchanged table's index hash. Retractions are cumulative, each with its publisher.
 * - Deterministic: the same records, keys and `created` give the same bytes.
 */
import { mkdir, readdir, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { PipeError, UsageError } from '../../../core/errors.js'
import type { DocumentItem } from '../../../core/items.js'
import { openRegularFile, readInputFile } from '../../../core/input-file.js'
import { buildManifest, parseManifest, type Creator, type Manifest, type RelatedIdentifier, type Retraction } from '../documents/doc-manifest.js'
import { buildSearchIndex, buildTableIndex, MAX_INDEX_PARTS, parseSearchIndex, type ScorePart, type ScoreSet, type SearchSegment, type TablePart } from '../documents/doc-index.js'
import { buildRef, parseRef, refSignedBytes, signedRef, type UnsignedRef } from '../documents/doc-ref.js'
import { isPackTime } from '../keys/key-statements.js'
import { isFeedName, isUuid, MAX_DOCUMENT_BYTES, objectHash, parseTarget, readPackJson, storeDocumentBytes } from '../documents/documents.js'
import { countPartBytes, walkSearchIndex, walkTableIndex } from '../documents/index-walk.js'
import { PackPartWriter, prewarmPartsThread, type WrittenPart } from '../tables/parquet-write.js'
import { openPart, READ_CODES, READ_LIMITS } from '../tables/parquet-read.js'
import { maxDecodedBytes } from '../tables/parquet-limits.js'
import {
  PUBLISH_CODES, FactBook, applyDefaults, factCaps, completeAnt, completePattern, completeQuickstart, completeTiling, recordError, resolveReferences, scrubLocalPaths,
  type RecordPlace, type Row,
} from './publish-rows.js'
import { keyPackSigner, type PackSign } from '../keys/pack-signer.js'
import { fingerprint, signerNameFromFingerprint, type SshPrivateKey, type SshPublicKey } from '../keys/ssh-key.js'
import { NS_MANIFEST, NS_REF, verifySshsig, writerSshsig, type PackNamespace } from '../keys/sshsig.js'
import {
  adoptObjectFile, keyPath, mediaExtension, objectPath, readDocumentFile, readDocumentObject, refPath, signaturePath, storeFile, storeIndexLoader, verifyObjectFile,
  writeObject, writeStoreFile, STORE_DOCUMENT_PATH, TMP_FOLDER, type ObjectExtension,
} from '../documents/store.js'
import { NewRowsJob, type NewRowsLimits } from './new-rows.js'
import { MainRules } from '../records/main-rules.js'
import { IdBook } from './id-book.js'
import { StagedPatterns, PARENT_PATTERN } from '../records/mover-patterns.js'
import { CHECK_CODES } from '../check/check-run.js'
import { eachRecord, exists, PatternRecordParser } from './publish-records.js'
import {
  JSON_CELL_COLUMNS, jsonCellChecker, moverOfOtherClassFinding, RaterBook, ROW_RULE_CODES, ROW_RULES, ruleRowMissing, verificationMainFinding, verificationMoverFinding,
  verificationRangeFamilyFinding, verificationSitesFinding,
} from '../records/row-rules.js'
import { EXPLORE_RUNS_SCHEMA, EXPLORE_SCORES_SCHEMA, PACK_TABLES, REFERENCE_PATCH_SCHEMA, rowValidator, type PackTableName, type RowFinding, type TableSchema } from '../tables/table-schemas.js'

/** The order tables are read in: tilings give pins, the records give ids that event rows refer to. */
const TABLE_ORDER: readonly PackTableName[] = ['tilings', 'rules', 'patterns', 'ants', 'quickstart', 'aliases', 'verifications', 'sightings', 'provenance', 'annotations', 'media', 'ratings', 'raters', 'score_models']

export const ENGINE_SCHEMES = { ant: 'jetcarp-ant-v1', geometry: 'jetcarp-geometry-v1', pattern: 'jetcarp-pattern-v3', tables: 'jetcarp-tables-1' }
/** The rule families pipe publishes, each at semantics version 1 (docs/pack-format-notes.md). */
export const RULE_SEMANTICS = { ant: '1', bs: '1', generations: '1' }

export interface PublishOptions {
  feed: string
  /** The store (created when missing). */
  store: string
  /** The records folder (docs/pack-records.md). */
  records: string
  /** The publisher's current key. */
  key: SshPrivateKey
  /** Its key statements (file bytes), written to keys/<signer>.json; the first is the key's own. */
  statements: Uint8Array[]
  /** The publisher's id, the first key of its chain (default: this key). */
  publisherId?: string
  /** The version's time, a pack time (whole seconds, Z). */
  created: string
  /** Other stores whose current version becomes a further parent. */
  merge?: string[]
  /** Records to withdraw: a target and a reason. */
  retract?: { target: string; reason: string }[]
  engineVersion: string
  /** The most patterns whose main rule is kept across the publish (default MAIN_RULES_CAP; tests give less). */
  mainRulesCap?: number
  /** The most patterns kept for the verifications' mover cells and rules (default MAIN_RULES_CAP; tests give less). */
  stagedPatternsCap?: number
  /** The most raters kept for the rating rules (default RATERS_CAP; tests give less). */
  ratersCap?: number
  /** The most tilings and rules keys kept, and their characters (default FACT_KEYS_CAP and RULE_KEYS_CAP, KEPT_TEXT_CAP; tests give less). */
  factKeysCap?: number
  keptTextCap?: number
  /** The records whose ids IdBook keeps in memory, the rest in a file (default ID_BOOK_LINES; tests give less). */
  idBookLines?: number
  /** How new rows are gathered and how many keys stay in memory before the rest spill (new-rows.ts defaults; tests give less). */
  newRows?: NewRowsLimits
  /** Records bytes below which a table with no parent parts is encoded on the caller's thread (default INLINE_TABLE_BYTES). */
  inlineTableBytes?: number
}

/** What a publish did not hold its records to, and why; the publish still succeeds. */
export interface PublishNote { code: string; detail: string }

export const PUBLISH_NOTE_CODES = {
  /** Main verifications of patterns beyond MAIN_RULES_CAP, not held to one main rule across the publish. */
  mainRulesUnheld: 'pack.verification-main-unchecked',
  /** Main verifications with a mover cell whose pattern may be one beyond those StagedPatterns keeps, not held to its class. */
  moverClassUnheld: 'pack.mover-class-unchecked',
  /** Pattern records without a rule beyond those StagedPatterns keeps, not held to having a main verification. */
  patternRuleUnheld: 'pack.pattern-rule-unchecked',
  /** Ratings and raters records of raters beyond those a RaterBook keeps, not held to its rules. */
  ratersUnheld: 'pack.raters-unchecked',
} as const

export interface PublishResult {
  manifest: string
  seq: number
  parents: string[]
  /** New parts written, by table. */
  newParts: Record<string, number>
  stats: Manifest['stats']
  notes: PublishNote[]
}

interface Parent { hash: string; manifest: Manifest; store: string; seq?: number }

/** Metadata of the version (records/pack.json), for people. */
interface PackMetadata { title?: string; description?: string; version_label?: string; licence?: string; creators?: Creator[]; doi?: string; related?: RelatedIdentifier[] }

const usage = (code: string, message: string, file?: string) => new UsageError(code, message, file ? { location: { file } } : {})

async function readDocument(path: string): Promise<Buffer> {
  const r = await readDocumentFile(path)
  if (!r.ok) throw new PipeError(r.code, r.detail, { location: { file: path } })
  return r.value
}

/** The current version of `feed` in `store` (its ref and manifest), or undefined when the store has none. */
async function currentVersion(store: string, feed: string): Promise<Parent | undefined> {
  const path = storeFile(store, refPath(feed))
  if (!(await exists(path))) return undefined
  const ref = parseRef(await readDocument(path), { feed })
  if (!ref.ok) throw new PipeError(ref.code, ref.detail, { location: { file: path } })
  return { ...(await loadManifest(store, ref.value.ref.manifest)), seq: ref.value.ref.seq }
}

async function loadManifest(store: string, hash: string): Promise<Parent> {
  const path = storeFile(store, objectPath(hash, 'json'))
  const read = await readDocumentObject(path, hash)
  if (!read.ok) throw new PipeError(read.code, read.detail, { location: { file: path } })
  const m = parseManifest(read.value)
  if (!m.ok) throw new PipeError(m.code, m.detail, { location: { file: path } })
  return { hash, manifest: m.value.manifest, store }
}

/**
 * The one feed a store to merge holds, once the store passes pack-check at level 2: a new version vouches
 * for its parents, so another publisher's version is merged only when its objects, rows and signatures
 * are right. The first failure refuses the merge, under its own code; the check's notes do not.
 */
async function mergedVersion(store: string): Promise<Parent> {
  const refs = (await readdir(join(store, 'refs')).catch(() => [] as string[])).filter((f) => f.endsWith('.json'))
  if (refs.length !== 1) throw usage('usage.merge-store', `--merge: the store must hold exactly one feed (it holds ${refs.length})`, store)
  const { checkPack } = await import('../check/check.js')
  for await (const issue of checkPack(store, { level: MERGE_CHECK_LEVEL })) {
    if (!issue.note) {
      throw new PipeError(issue.code, `--merge: the store fails pack-check at level ${MERGE_CHECK_LEVEL}: ${issue.target}: ${issue.detail} (pipe run pack-check ${store} --level ${MERGE_CHECK_LEVEL} lists every finding)`, { location: { file: store } })
    }
  }
  const v = await currentVersion(store, refs[0]!.slice(0, -'.json'.length))
  if (!v) throw usage('usage.merge-store', '--merge: no ref', store)
  return v
}

/** What a store to merge is checked at: its objects and rows (1), and its signatures and key statements (2). */
const MERGE_CHECK_LEVEL = 2

/** Copies one object from another store into this one, hash-checked. */
async function copyObject(from: string, to: string, hash: string, ext: ObjectExtension): Promise<void> {
  const src = storeFile(from, objectPath(hash, ext))
  const checked = await verifyObjectFile(src, hash)
  if (!checked.ok) throw new PipeError(checked.code, checked.detail, { location: { file: src } })
  await writeObject(to, await readStream(src, { noFollow: true }), ext)
}

/** A regular file's bytes as a stream (core/input-file.ts: never a device, FIFO or directory). */
async function readStream(path: string, opts: { noFollow?: boolean } = {}): Promise<AsyncIterable<Uint8Array>> {
  const { fh } = await openRegularFile(path, opts)
  return fh.createReadStream({ highWaterMark: 1 << 20 })
}

/** A JSON file of the records folder (pack.json, a search's search.json): what it becomes is a document, 16 MiB at most. */
async function readRecordsJson(path: string): Promise<string> {
  return (await readInputFile(path, { maxBytes: MAX_DOCUMENT_BYTES, what: 'a JSON file of the records folder' })).toString('utf8')
}

/** Brings a merged version into the store: its manifest, indexes, parts, searches, media, reference patches, signatures and keys. */
async function importVersion(p: Parent, to: string): Promise<void> {
  const loader = storeIndexLoader(p.store)
  await copyObject(p.store, to, p.hash, 'json')
  for (const [table, root] of Object.entries(p.manifest.tables)) {
    const schema = PACK_TABLES[table as PackTableName]
    for await (const e of walkTableIndex(root, loader, { table })) {
      if (e.kind === 'index') await copyObject(p.store, to, e.hash, 'json')
      else {
        await copyObject(p.store, to, e.part.object, 'parquet')
        if (table === 'media' || table === 'tilings') await copyRowObjects(p.store, to, e.part.object, schema)
      }
    }
  }
  for (const [search, root] of Object.entries(p.manifest.searches)) {
    for await (const e of walkSearchIndex(root, loader, { search })) {
      if (e.kind === 'index') await copyObject(p.store, to, e.hash, 'json')
      else await copyObject(p.store, to, e.kind === 'segment' ? e.segment.object : e.part.object, 'parquet')
    }
  }
  const sigs = join(p.store, 'sigs', 'sha256', p.hash.slice(7, 9), p.hash.slice(7))
  for (const f of await readdir(sigs).catch(() => [] as string[])) await writeStoreFile(to, signaturePath(p.hash, f.slice(0, -'.sig'.length)), await readDocument(join(sigs, f)))
  for (const f of await readdir(join(p.store, 'keys')).catch(() => [] as string[])) {
    if (!(await exists(storeFile(to, keyPath(f.slice(0, -'.json'.length)))))) await writeStoreFile(to, keyPath(f.slice(0, -'.json'.length)), await readDocument(join(p.store, 'keys', f)))
  }
}

/** Objects a part's rows name: a media row's file, a tilings row's reference patch. */
async function copyRowObjects(from: string, to: string, part: string, schema: TableSchema | undefined): Promise<void> {
  if (!schema) return
  const opened = await openPart(storeFile(from, objectPath(part, 'parquet')), schema)
  if (!opened.ok) throw new PipeError(opened.findings[0]!.code, opened.findings[0]!.detail)
  try {
    for await (const r of opened.part.rows()) {
      if (schema.name === 'media') {
        const ext = mediaExtension(r['media_type'])
        if (ext.ok) await copyObject(from, to, r['object'] as string, ext.value)
      } else if (typeof r['reference'] === 'string') await copyObject(from, to, r['reference'], 'parquet')
    }
  } finally {
    await opened.part.close()
  }
}

function firstFinding(findings: RowFinding[], at: RecordPlace): PipeError {
  const f = findings[0]!
  return recordError(f.code, at, f.detail, f.column ?? undefined)
}

/** Publishes a new version of `o.feed` in `o.store`, signed with `o.key`; see the module comment. */
export async function publishPack(o: PublishOptions): Promise<PublishResult> {
  const { key, ...rest } = o
  return signAndCommit(await preparePack({ ...rest, publicKey: key.publicKey }), keyPackSigner(key))
}

/** Signs a drawn-up version's manifest and ref with `sign`, and commits it. */
export async function signAndCommit(draft: PackDraft, sign: PackSign): Promise<PublishResult> {
  return commitPack(draft, await sign(draft.manifestBytes, NS_MANIFEST), await sign(refSignedBytes(draft.ref), NS_REF))
}

/** What preparePack takes: the publisher's public key, since the version is signed after it is drawn up. */
export type PrepareOptions = Omit<PublishOptions, 'key'> & { publicKey: SshPublicKey }

/**
 * A version drawn up but not yet published: its tables, indexes, searches and media are in the store as
 * objects no ref reaches (with, for a first version, the store document, and what --merge brought in), its
 * manifest and ref are bytes to be signed.
 */
export interface PackDraft {
  store: string
  feed: string
  /** The feed's version the draft follows (its ref's manifest), null for a feed's first: it must still be current at the commit. */
  follows: string | null
  /** The publisher's current key: the manifest and ref name it, and it must sign both. */
  publisherKey: string
  manifestBytes: Uint8Array
  manifestHash: string
  ref: UnsignedRef
  statements: Uint8Array[]
  result: PublishResult
}

/**
 * Draws up a new version of `o.feed` in `o.store` (see the module comment): everything but the manifest
 * object, its signature, the key statements and the ref, which {@link commitPack} writes once signed.
 */
export async function preparePack(o: PrepareOptions): Promise<PackDraft> {
  if (!isFeedName(o.feed)) throw usage('usage.bad-feed', `--feed ${JSON.stringify(o.feed)}: a feed is 1 to 64 letters, digits and -`)
  if (!isPackTime(o.created)) throw usage('usage.bad-time', `--created ${JSON.stringify(o.created)}: a pack time is RFC 3339 UTC with whole seconds, like 2026-11-11T00:00:00Z`)
  const publisherKey = fingerprint(o.publicKey)
  const publisherId = o.publisherId ?? publisherKey
  await mkdir(o.store, { recursive: true })
  if (!(await exists(storeFile(o.store, STORE_DOCUMENT_PATH)))) await writeStoreFile(o.store, STORE_DOCUMENT_PATH, storeDocumentBytes())

  const previous = await currentVersion(o.store, o.feed)
  if (previous && previous.manifest.feed !== o.feed) throw usage('usage.feed-mismatch', `refs/${o.feed}.json names a manifest of feed ${previous.manifest.feed}`)
  const merged: Parent[] = []
  for (const m of o.merge ?? []) {
    const v = await mergedVersion(m)
    await importVersion(v, o.store)
    merged.push({ ...v, store: o.store })
  }
  const parents = [...(previous ? [previous] : []), ...merged]
  const seq = (previous?.seq ?? 0) + 1
  const meta = await readMetadata(o.records)

  const tmp = join(o.store, TMP_FOLDER)
  await mkdir(tmp, { recursive: true })
  const loader = storeIndexLoader(o.store)
  // The parents' parts in index order (the first parent's first), each listed once.
  const inherited = new Map<string, TablePart[]>()
  const listed = new Set<string>()
  for (const p of parents) {
    for (const [table, root] of Object.entries(p.manifest.tables)) {
      const list = inherited.get(table) ?? []
      inherited.set(table, list)
      for await (const e of walkTableIndex(root, loader, { table })) {
        if (e.kind !== 'part' || listed.has(`${table} ${e.part.object}`)) continue
        listed.add(`${table} ${e.part.object}`)
        list.push(e.part)
      }
    }
  }
  const onThread = new Set<PackTableName>()
  const expectedKeys = new Map<PackTableName, number>()
  for (const name of TABLE_ORDER) {
    const bytes = await recordsBytes(o.records, name)
    const kept = inherited.get(name) ?? []
    if (kept.length > 0 || bytes >= (o.inlineTableBytes ?? INLINE_TABLE_BYTES)) onThread.add(name)
    // Only a fact table's new rows add keys (new-rows.ts).
    expectedKeys.set(name, kept.reduce((n, p) => n + p.rows, 0) + (PACK_TABLES[name].kind === 'fact' ? Math.ceil(bytes / RECORD_BYTES_PER_KEY) : 0))
  }
  if (onThread.size > 0) prewarmPartsThread()
  const book = new FactBook(factCaps(o.factKeysCap, o.keptTextCap))
  // Needed until the verifications are staged, then released (50 MB at most); not kept at all when there
  // are no verifications, which a publish of patterns alone paid 0.7 s a million patterns for.
  const verificationsComing = (inherited.get('verifications')?.length ?? 0) > 0 || (await exists(join(o.records, 'verifications.jsonl')))
  let patterns: StagedPatterns | undefined = verificationsComing ? new StagedPatterns(o.stagedPatternsCap) : undefined
  const ids: Partial<Record<PackTableName, IdBook>> = { patterns: new IdBook('', tmp, o.idBookLines), ants: new IdBook('ant-', tmp, o.idBookLines), quickstart: new IdBook('qs-', tmp, o.idBookLines) }
  const defaults = { publisher: publisherId, engineVersion: o.engineVersion, seq }
  const raters = new RaterBook<RecordPlace | undefined>(o.ratersCap)
  const newParts: Record<string, number> = {}
  const notes: PublishNote[] = []
  const tables: Record<string, string> = {}
  try {
    for (const name of TABLE_ORDER) {
      const schema = PACK_TABLES[name]
      const kept = inherited.get(name) ?? []
      const rows = new NewRowsJob(schema, { expectedKeys: expectedKeys.get(name), ...o.newRows, dir: tmp, encodeOnThread: onThread.has(name) })
      let written: WrittenPart[]
      try {
        for (const part of kept) {
          await eachPartRow(o.store, part, schema, (row) => {
            if (name === 'tilings') book.addTiling(row as never, undefined)
            if (name === 'rules') book.addRule(row, undefined)
            if (name === 'patterns') patterns?.add(row['id'] as string, PARENT_PATTERN, { mover: row['class'] === 'mover', ruleless: false, runsIn: runsInOf(row, book) })
            if (name === 'verifications' && patterns) {
              if (row['main'] === true) mainVerification(patterns, row, book, undefined, join(o.records, 'patterns.jsonl'))
              holdParentMoverCell(patterns, row, book, join(o.records, 'patterns.jsonl'))
            }
            keepRaterRow(raters, name, row, undefined)
            return rows.parent(row)
          })
        }
        await stageTable(o, name, rows, { book, ids, patterns, raters }, defaults, notes)
        if (name === 'verifications' && patterns) refuseRulelessPattern(patterns, join(o.records, 'patterns.jsonl'))
        if (name === 'raters') {
          // What the parents' rows break is theirs; what a record breaks is refused at the record.
          const broken = [...raters.findings()].find((f) => f.at !== undefined)
          if (broken) throw recordError(broken.code, broken.at!, broken.detail)
          if (raters.unheld > 0) notes.push({ code: PUBLISH_NOTE_CODES.ratersUnheld, detail: `${raters.unheld} ratings, raters rows and group members name raters beyond the first kept (memory stays bounded): they were not held to the rating rules` })
        }
        written = await rows.finish()
      } catch (err) {
        // The thread may have refused an earlier row (a fact conflict): that failure comes first.
        const earlier = await rows.finish().then(() => undefined, (e: unknown) => e)
        await rows.abort()
        throw inRecordsFile(earlier ?? err, join(o.records, `${name}.jsonl`))
      }
      if (name === 'verifications' && patterns) {
        if (patterns.unheld > 0) {
          notes.push({
            code: PUBLISH_NOTE_CODES.moverClassUnheld,
            detail: `${patterns.unheld} main verifications with a mover cell name a pattern that may be beyond the first ${patterns.size} patterns kept (memory stays bounded): their patterns' classes were not checked; pack-check holds them`,
          })
        }
        if (patterns.rulelessDropped > 0) {
          notes.push({
            code: PUBLISH_NOTE_CODES.patternRuleUnheld,
            detail: `${patterns.rulelessDropped} pattern records on lattice tilings without a rule are beyond the first ${patterns.size} patterns kept (memory stays bounded): they were not held to having a main verification; pack-check holds them at level 3`,
          })
        }
        patterns = undefined
      }
      const parts = await adoptParts(o.store, written, schema)
      newParts[name] = parts.length
      if (parts.length === 0 && kept.length === 0) continue
      const firstParentIndex = parents[0]?.manifest.tables[name]
      if (parts.length === 0 && firstParentIndex !== undefined && parents.every((p) => p.manifest.tables[name] === undefined || p.manifest.tables[name] === firstParentIndex)) {
        tables[name] = firstParentIndex // an unchanged table keeps its index
        continue
      }
      tables[name] = await writeIndex(o.store, schema, [...kept, ...parts])
    }
  } finally {
    for (const book of Object.values(ids)) book.close()
  }

  const searches: Record<string, string> = {}
  for (const p of [...parents].reverse()) Object.assign(searches, p.manifest.searches)
  Object.assign(searches, await publishSearches(o.store, o.records))

  const retracts: Retraction[] = []
  const seen = new Set<string>()
  const addRetraction = (r: Retraction) => { const k = `${r.target}\u0000${r.publisher}`; if (!seen.has(k)) { seen.add(k); retracts.push(r) } }
  for (const p of parents) for (const r of p.manifest.retracts) addRetraction(r)
  for (const r of o.retract ?? []) {
    const t = parseTarget(r.target)
    if (!t.ok) throw usage(t.code, `--retract ${r.target}: ${t.detail}`)
    addRetraction({ target: r.target, publisher: publisherId, reason: scrubLocalPaths(r.reason), date: o.created })
  }

  const stats = await statsOf(o.store, tables, searches)
  const built = buildManifest({
    feed: o.feed, title: scrubLocalPaths(meta.title ?? o.feed), description: scrubLocalPaths(meta.description ?? ''), version_label: scrubLocalPaths(meta.version_label ?? `${seq}`),
    created: o.created, licence: meta.licence ?? 'CC0-1.0', creators: meta.creators ?? [], doi: meta.doi ?? '', related: meta.related ?? [],
    parents: parents.map((p) => p.hash), publisher: publisherKey,
    engine: { name: 'pipe', version: o.engineVersion, schemes: ENGINE_SCHEMES, rule_semantics: RULE_SEMANTICS },
    tables, searches, retracts, retain: [], stats,
  })
  const manifestHash = objectHash(built.bytes)
  return {
    store: o.store, feed: o.feed, follows: previous?.hash ?? null, publisherKey, manifestBytes: built.bytes, manifestHash, statements: o.statements,
    ref: buildRef({ feed: o.feed, manifest: manifestHash, publisher: publisherKey, seq, updated: o.created }),
    result: { manifest: manifestHash, seq, parents: parents.map((p) => p.hash), newParts, stats, notes },
  }
}

/**
 * Publishes a drawn-up version: its manifest object, the manifest's signature, the publisher's key
 * statements, and last the ref that makes it the feed's current version. Both signatures must be the
 * publisher key's, in their namespaces: a signature that is not is refused before anything is written.
 */
export async function commitPack(draft: PackDraft, manifestSignature: string, refSignature: string): Promise<PublishResult> {
  const manifestSig = signatureToWrite(manifestSignature, draft.manifestBytes, NS_MANIFEST, draft.publisherKey, `the signature of manifest ${draft.manifestHash}`)
  const refSig = signatureToWrite(refSignature, refSignedBytes(draft.ref), NS_REF, draft.publisherKey, `the signature of refs/${draft.feed}.json`)
  const statements = draft.statements.map((st) => {
    const doc = readPackJson(st)
    if (!doc.ok) throw new PipeError(doc.code, `a key statement: ${doc.detail}`)
    const key = (doc.value as { fingerprint?: string }).fingerprint
    const name = typeof key === 'string' ? signerNameFromFingerprint(key) : undefined
    if (!name) throw new PipeError('pack.key-statement-invalid', 'a key statement without a fingerprint')
    return { name, bytes: st }
  })
  // Signing may take a while (a token waits for a touch): another publish of the feed in the meantime
  // would be overwritten, and two refs of one seq naming two manifests stop every follower.
  const current = await currentVersion(draft.store, draft.feed)
  if ((current?.hash ?? null) !== draft.follows) {
    throw new PipeError('pack.ref-moved', `refs/${draft.feed}.json moved while this version was signed (it now names ${current?.hash ?? 'nothing'}, drawn up after ${draft.follows ?? 'nothing'}): nothing was published; publish again`, { exitCode: 2, location: { file: storeFile(draft.store, refPath(draft.feed)) } })
  }
  const manifest = await writeObject(draft.store, draft.manifestBytes, 'json')
  await writeStoreFile(draft.store, signaturePath(manifest.hash, manifestSig.signer), Buffer.from(manifestSig.text))
  for (const st of statements) await writeStoreFile(draft.store, keyPath(st.name), st.bytes)
  await writeStoreFile(draft.store, refPath(draft.feed), signedRef(draft.ref, refSig.text).bytes)
  return draft.result
}

/** A signature checked to be the publisher key's over `bytes` in `namespace`, in the form a writer stores it. */
function signatureToWrite(signature: string, bytes: Uint8Array, namespace: PackNamespace, publisherKey: string, what: string): { text: string; signer: string } {
  const checked = verifySshsig(signature, bytes, namespace, { expectedKey: publisherKey })
  if (!checked.ok) throw new PipeError(checked.code, `${what}: ${checked.detail}`, { exitCode: 2 })
  const written = writerSshsig(signature)
  if (!written.ok) throw new PipeError(written.code, `${what}: ${written.detail}`, { exitCode: 2 })
  return { text: written.text, signer: checked.signer }
}

/**
 * A table with no parts from a parent and fewer bytes of records than this is encoded on the caller's
 * thread. The encoding thread takes longer to start (0.15 s, loading its modules) than such a table takes
 * to write, and the caller waited for it: the tilings and rules come before the patterns.
 */
const INLINE_TABLE_BYTES = 1 << 20

/**
 * Bytes of records a new key is expected for, to size a table's keys at once (NewRowsLimits.expectedKeys):
 * fewer than the shortest pattern record holds, so that a table is rarely sized below its keys; one sized
 * above them holds at most new-rows.ts SEEN_CAP keys' room.
 */
const RECORD_BYTES_PER_KEY = 128

/** The size of a table's records file; 0 when there is none. */
async function recordsBytes(dir: string, table: PackTableName): Promise<number> {
  return (await stat(join(dir, `${table}.jsonl`)).catch(() => undefined))?.size ?? 0
}

async function readMetadata(dir: string): Promise<PackMetadata> {
  const path = join(dir, 'pack.json')
  if (!(await exists(path))) return {}
  try {
    return JSON.parse(await readRecordsJson(path)) as PackMetadata
  } catch (err) {
    throw recordError(PUBLISH_CODES.record, { file: path, line: 1 }, `not JSON: ${(err as Error).message}`)
  }
}

/** Calls `each` with every row of a parent's part of the store, one row group at a time, once its bytes are found to be its hash's. */
async function eachPartRow(store: string, part: Pick<TablePart, 'object' | 'bytes'>, schema: TableSchema, each: (row: Row) => void | Promise<void>): Promise<void> {
  const path = storeFile(store, objectPath(part.object, 'parquet'))
  // The new version keeps the part by its hash and is signed: rows of a damaged file must not decide what it adds.
  const checked = await verifyObjectFile(path, part.object, { bytes: part.bytes })
  if (!checked.ok) throw new PipeError(checked.code, `a parent version's part: ${checked.detail}`, { location: { file: path } })
  const opened = await openPart(path, schema)
  if (!opened.ok) throw new PipeError(opened.findings[0]!.code, `${part.object}: ${opened.findings[0]!.detail}`)
  try {
    for await (const r of opened.part.rows()) await each(r as Row)
  } finally {
    await opened.part.close()
  }
}

/**
 * The ratings and raters rows of the parents and of this publish, for the rules across rows a check holds
 * them to (RaterBook): every rater the ratings name has a row, a note needs consent to share notes.
 */
function keepRaterRow(book: RaterBook<RecordPlace | undefined>, table: PackTableName, row: Row, at: RecordPlace | undefined): void {
  if (table === 'ratings') book.rating(row, at)
  else if (table === 'raters') book.rater(row, at)
}

/** What the tables staged so far give the next: their tilings and rules, ids by line, patterns not movers, and raters. */
interface StagedFacts {
  book: FactBook
  ids: Partial<Record<PackTableName, IdBook>>
  /** Until the verifications are staged. */
  patterns: StagedPatterns | undefined
  raters: RaterBook<RecordPlace | undefined>
}

/** Reads, completes and checks one table's records, and gives them to be written. */
async function stageTable(
  o: PrepareOptions, name: PackTableName, rows: NewRowsJob, facts: StagedFacts, defaults: { publisher: string; engineVersion: string; seq: number }, notes: PublishNote[],
): Promise<void> {
  const { book, ids, patterns, raters } = facts
  const validate = rowValidator(rows.schema)
  const nullable = rows.schema.columns.filter((c) => c.nullable).map((c) => c.name)
  // The last rule, neighbourhood and steps a pattern record stated that a rules row has: most share them.
  const lastRuleRow: { rule: unknown; neighbourhood: unknown; steps: unknown } = { rule: undefined, neighbourhood: undefined, steps: undefined }
  const findings: RowFinding[] = []
  const jsonColumns = JSON_CELL_COLUMNS[name] ?? []
  const canonicalCell = jsonCellChecker()
  const lookup = (table: string, line: number) => ids[table as PackTableName]?.get(line)
  const mainRules = name === 'verifications' ? new MainRules(o.mainRulesCap) : undefined
  const shape = name === 'patterns' ? new PatternRecordParser().parse : undefined
  // Not async, nor the record's callback below unless its table waits (a tiling's patch, a media file): a
  // promise and a microtask a record were a tenth of the main thread's garbage.
  const stage = (row: Row, at: RecordPlace): Promise<void> | undefined => {
    const pin = resolveReferences(name, row, lookup, at)
    // A publish adds this version's rows only: an annotation's rev is its ref seq, never an earlier one.
    if (name === 'annotations' && row['rev'] !== undefined && row['rev'] !== null && row['rev'] !== defaults.seq) {
      throw recordError(PUBLISH_CODES.disagrees, at, `rev ${JSON.stringify(row['rev'])}: an annotation's rev is the ref seq of the version that adds it, ${defaults.seq}`, 'rev')
    }
    applyDefaults(name, row, defaults, pin)
    // "A missing member is null": made so before any rule reads the row, as a part's reader gives it.
    for (const column of nullable) if (row[column] === undefined) row[column] = null
    if (name === 'verifications') refuseMisplacedCells(row, book, at)
    const textBytes = validate(row, at.line - 1, findings)
    if (findings.length > 0) throw firstFinding(findings, at)
    for (const column of jsonColumns) {
      const cell = row[column]
      if (typeof cell !== 'string') continue
      const bytes = Buffer.from(cell)
      const why = canonicalCell(bytes, 0, bytes.length)
      if (why) throw recordError(ROW_RULE_CODES.jsonCell, at, `${column} is not RFC 8785 canonical JSON: ${why}`, column)
    }
    const broken = ROW_RULES[name]?.check(row)[0]
    if (broken) throw recordError(broken.code, at, broken.detail)
    // After the row rules: pattern_id is a content id, publisher and rule are text.
    const earlier = mainRules && row['main'] === true ? mainRules.add(row['pattern_id'] as string, row['publisher'] as string, row['rule'] as string, at.line) : undefined
    if (earlier !== undefined) {
      const f = verificationMainFinding(row['pattern_id'] as string, row['publisher'] as string, row['rule'] as string, `on line ${earlier}`)
      throw recordError(f.code, at, f.detail, 'main')
    }
    if (name === 'patterns') {
      // Held where level 3 holds it, on lattice tilings (docs/pack-records.md); with no verification to come,
      // here or in a parent, nothing can give the pattern a rule.
      const runsIn = runsInOf(row, book)
      if (runsIn && !patterns) throw recordError(CHECK_CODES.replayRuleMissing, at, RULELESS_PATTERN, 'rule')
      // A rule stated is the one it runs in (on a lattice tiling, where level 3 replays it).
      const [rule, neighbourhood, steps] = [row['rule'], row['neighbourhood'], row['steps_per_gen']]
      if (!runsIn && rule !== null && (rule !== lastRuleRow.rule || neighbourhood !== lastRuleRow.neighbourhood || steps !== lastRuleRow.steps) && book.kindOfPin(row['pin']) === 'lattice') {
        if (!book.hasRule(rule, neighbourhood, steps)) throw recordError(CHECK_CODES.replayRuleUnknown, at, `${ruleRowMissing(rule, neighbourhood, steps)}, here or in a parent version: ${RUNS_IN_RULES_ROW}`, 'rule')
        lastRuleRow.rule = rule
        lastRuleRow.neighbourhood = neighbourhood
        lastRuleRow.steps = steps
      }
      patterns?.add(row['id'] as string, at.line, { mover: row['class'] === 'mover', ruleless: runsIn !== undefined, ...(runsIn ? { runsIn } : {}) })
    } else if (name === 'verifications' && patterns && row['main'] === true) mainVerification(patterns, row, book, at, join(o.records, 'patterns.jsonl'))
    if (name === 'verifications' && patterns && row['main'] === true && row['mover'] !== undefined && row['mover'] !== null) {
      const line = patterns.moverCell(row['pattern_id'] as string)
      if (line !== 0) {
        const f = moverOfOtherClassFinding('this main verification', `its pattern ${String(row['pattern_id'])} (${line === PARENT_PATTERN ? 'a parent version\'s' : `patterns.jsonl line ${line}`})`)
        throw recordError(f.code, at, f.detail, 'mover')
      }
    }
    keepRaterRow(raters, name, row, at)
    if (name === 'tilings') book.addTiling(row as never, at)
    if (name === 'rules') book.addRule(row, at)
    ids[name]?.add(at.line, row['id'] as string, row['pin'] as string)
    return rows.add(row, textBytes, at.line)
  }
  await eachRecord(o.records, `${name}.jsonl`, (row, at) => {
    if (name === 'tilings') {
      const done = completeTiling(row, at)
      if (!done.patch) return stage(done.row, at)
      return writePatch(o.store, done.patch).then((reference) => {
        done.row['reference'] = reference
        return stage(done.row, at)
      })
    }
    if (name === 'patterns') row = completePattern(row, book, at)
    else if (name === 'ants') row = completeAnt(row, book, at)
    else if (name === 'quickstart') row = completeQuickstart(row, book, at)
    if (name === 'media') return storeMedia(o, row, at).then(() => stage(row, at))
    return stage(row, at)
  }, shape)
  if (mainRules && mainRules.unheld > 0) {
    notes.push({
      code: PUBLISH_NOTE_CODES.mainRulesUnheld,
      detail: `${mainRules.unheld} main verifications of patterns beyond the first ${mainRules.size} were not held to one main rule across the publish (memory stays bounded); pack-check holds each part's rows to it`,
    })
  }
}

/** A refusal the rows' job gives with the line of a record (a fact conflict), named with its records file. */
function inRecordsFile(err: unknown, file: string): unknown {
  if (!(err instanceof PipeError) || err.location?.line === undefined || err.location.file !== undefined) return err
  return new PipeError(err.code, err.message, { exitCode: err.exitCode, location: { ...err.location, file } })
}

const RULELESS_PATTERN = 'rule is null and no verification of the pattern, here or in a parent version, is marked main: "every pattern has one" (its rule, else its main verification\'s)'
const RUNS_IN_RULES_ROW = 'a pattern runs in the rules row of its rule with its neighbourhood and steps per generation'

/** For a pattern without a rule column on a lattice tiling: the neighbourhood and steps its main verifications' rules run in. */
function runsInOf(row: Row, book: FactBook): { neighbourhood: string; stepsPerGen: number } | undefined {
  return (row['rule'] === null || row['rule'] === undefined) && book.kindOfPin(row['pin']) === 'lattice'
    ? { neighbourhood: row['neighbourhood'] as string, stepsPerGen: Number(row['steps_per_gen']) }
    : undefined
}

/**
 * A main verification (a record's at `at`, or a parent's): its pattern has a rule. For a pattern without a
 * rule column the pattern runs in that rule, so the rule needs a rules row with the pattern's neighbourhood
 * and steps per generation. Refused at the verification's record, or, for a parent's verification, at the
 * pattern's record; a parent's of a parent's pattern is the parent's.
 */
function mainVerification(patterns: StagedPatterns, row: Row, book: FactBook, at: RecordPlace | undefined, patternsFile: string): void {
  patterns.mainRule(row['pattern_id'] as string)
  const runs = patterns.runsInOf(row['pattern_id'] as string)
  if (!runs || book.hasRule(row['rule'], runs.neighbourhood, runs.stepsPerGen)) return
  const missing = `${ruleRowMissing(row['rule'], runs.neighbourhood, runs.stepsPerGen)}, here or in a parent version: ${RUNS_IN_RULES_ROW}`
  if (at) throw recordError(CHECK_CODES.replayRuleUnknown, at, `the main rule of pattern ${String(row['pattern_id'])}: ${missing}`, 'rule')
  if (runs.line !== PARENT_PATTERN) throw recordError(CHECK_CODES.replayRuleUnknown, { file: patternsFile, line: runs.line }, `its main verification in a parent version: ${missing}`, 'rule')
}

/** Once the verifications are staged: the first pattern record whose rule is null and that no main verification gave one is refused. */
function refuseRulelessPattern(patterns: StagedPatterns, patternsFile: string): void {
  const line = patterns.firstRuleless()
  if (line !== undefined) throw recordError(CHECK_CODES.replayRuleMissing, { file: patternsFile, line }, RULELESS_PATTERN, 'rule')
}

/**
 * A parent's main verification with a mover cell (and a pin refuseMisplacedCells would let stand) whose
 * pattern is a record of this publish that is not a mover: the record is refused, as pack-check would
 * refuse the pattern row. A parent's pattern and verification are the parent's.
 */
function holdParentMoverCell(patterns: StagedPatterns, row: Row, book: FactBook, patternsFile: string): void {
  if (row['main'] !== true || row['mover'] === null || row['mover'] === undefined || verificationMoverFinding(book.kindOfPin(row['pin']), true)) return
  const line = patterns.moverCell(row['pattern_id'] as string)
  if (line === 0 || line === PARENT_PATTERN) return
  const f = moverOfOtherClassFinding('a main verification of it in a parent version', 'it')
  throw recordError(f.code, { file: patternsFile, line }, f.detail, 'class')
}

/**
 * A verification's sites and mover against its pin's tiling, and its range against its rule's family, as
 * the checker holds them (row-rules.ts). A range or mover off the main row is the row rule's refusal: here
 * only a main row's are judged.
 */
function refuseMisplacedCells(row: Row, book: FactBook, at: RecordPlace): void {
  const isSet = (column: string) => row[column] !== undefined && row[column] !== null
  const onMain = row['main'] === true
  const kind = book.kindOfPin(row['pin'])
  const sites = verificationSitesFinding(kind, isSet('sites'))
  if (sites) throw recordError(sites.code, at, sites.detail, 'sites')
  const mover = verificationMoverFinding(kind, onMain && isSet('mover'))
  if (mover) throw recordError(mover.code, at, mover.detail, 'mover')
  const range = verificationRangeFamilyFinding(row['rule'], book.familyOf(row['rule']), onMain && isSet('range'))
  if (range) throw recordError(range.code, at, range.detail, 'range')
}

/** A media record names its file (`file`, relative to the records folder): the file becomes an object of the store. */
async function storeMedia(o: PrepareOptions, row: Row, at: RecordPlace): Promise<void> {
  const file = row['file']
  delete row['file']
  if (file === undefined) return
  if (typeof file !== 'string' || file.startsWith('/') || file.split(/[\\/]/).includes('..')) throw recordError(PUBLISH_CODES.record, at, 'file must be a path inside the records folder', 'file')
  const ext = mediaExtension(row['media_type'])
  if (!ext.ok) throw recordError(ext.code, at, ext.detail, 'media_type')
  const written = await writeObject(o.store, await readStream(join(o.records, file)), ext.value)
  row['object'] = written.hash
  row['bytes'] = written.bytes
}

async function writePatch(store: string, rows: readonly object[]): Promise<string> {
  const writer = new PackPartWriter(REFERENCE_PATCH_SCHEMA, { dir: join(store, TMP_FOLDER) })
  await writer.write(rows)
  const written = await writer.finish()
  if (written.length !== 1) throw new PipeError('pack.reference-patch', 'a reference patch is one Parquet object')
  return (await adoptParts(store, written, REFERENCE_PATCH_SCHEMA))[0]!.object
}

/**
 * Refuses a part a reader would refuse: what Limits bounds from its footer and page headers (the pages'
 * uncompressed sizes at most 64x the part's size, their values and decoded size), read back by the reader
 * itself, and its decoded size as the reader counts it while decoding (the writer's count). Rows can pass
 * every row rule and still compress beyond that, a long run of one character in a cell or a picture of
 * mostly dead cells, and a part no reader opens is not published.
 */
export async function readablePart(p: WrittenPart, schema: TableSchema): Promise<void> {
  const opened = await openPart(p.path, schema)
  let f = opened.ok ? undefined : opened.findings[0]!
  if (opened.ok) await opened.part.close()
  // What its headers do not state, the writer counted as the reader will while decoding.
  const decodedLimit = maxDecodedBytes(p.bytes, READ_LIMITS)
  if (!f && p.decodedBytes > decodedLimit) f = { code: READ_CODES.decodedTooLarge, detail: `its columns decode to ${p.decodedBytes} bytes, above ${decodedLimit} (64x the part's size plus 64 MiB)` }
  if (!f && p.largestRowGroupDecodedBytes > READ_LIMITS.rowGroupBytes) f = { code: READ_CODES.rowGroupTooLarge, detail: `a row group decodes to ${p.largestRowGroupDecodedBytes} bytes, above the ${READ_LIMITS.rowGroupBytes} a reader decodes whole` }
  if (f) throw new PipeError(f.code, `${schema.name}: the part of rows ${JSON.stringify(p.first)} to ${JSON.stringify(p.last)} compresses beyond what a reader opens (Limits): ${f.detail}`, { exitCode: 2 })
}

/** Moves written parts into the store once every one is readable; else removes them all and refuses. */
async function adoptParts(store: string, written: readonly WrittenPart[], schema: TableSchema): Promise<TablePart[]> {
  try {
    await inTurns(written, (p) => readablePart(p, schema))
  } catch (err) {
    for (const p of written) await unlink(p.path).catch(() => undefined)
    throw err
  }
  return inTurns(written, async (p) => {
    const o = await adoptObjectFile(store, p.path, p.sha256, p.bytes, 'parquet')
    return { bytes: p.bytes, first: p.first, last: p.last, object: o.hash, partition: { ...p.partition }, rows: p.rows }
  })
}

/**
 * Parts read back or moved into the store at once. Each waits mostly on the disk (a footer read, an
 * fsync, a rename and its folder's fsync); one after another, a million patterns' 62 parts were the last
 * 0.25 s of the publish, both threads otherwise idle.
 */
const PARTS_AT_ONCE = 8

/**
 * `each` of the items, PARTS_AT_ONCE at a time, every one settled before this does; the results in the
 * items' order, or the failure of the first item in that order that failed (as one after another would).
 */
async function inTurns<T, R>(items: readonly T[], each: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length)
  const failures = new Map<number, unknown>()
  let next = 0
  const worker = async (): Promise<void> => {
    for (let i = next++; i < items.length; i = next++) {
      try {
        results[i] = await each(items[i]!)
      } catch (err) {
        failures.set(i, err)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(PARTS_AT_ONCE, items.length) }, worker))
  if (failures.size > 0) throw failures.get(Math.min(...failures.keys()))
  return results
}

const WRITE_BATCH = 4096

/** A table's index: its parts in one index, or under children of at most 10,000 parts each. */
async function writeIndex(store: string, schema: TableSchema, parts: TablePart[]): Promise<string> {
  const index = (p: TablePart[], children: string[] = []) => buildTableIndex({ table: schema.name, schema: schema.schemaId, parts: p, children })
  if (parts.length <= MAX_INDEX_PARTS) return (await writeObject(store, index(parts).bytes, 'json')).hash
  const children: string[] = []
  for (let i = 0; i < parts.length; i += MAX_INDEX_PARTS) children.push((await writeObject(store, index(parts.slice(i, i + MAX_INDEX_PARTS)).bytes, 'json')).hash)
  return (await writeObject(store, index([], children).bytes, 'json')).hash
}

async function statsOf(store: string, tables: Record<string, string>, searches: Record<string, string>): Promise<Manifest['stats'] & { ants: number; bytes: number; patterns: number; quickstart: number }> {
  const loader = storeIndexLoader(store)
  const rows = async (table: string) => {
    let n = 0
    if (tables[table]) for await (const e of walkTableIndex(tables[table]!, loader, { table })) if (e.kind === 'part') n += e.part.rows
    return n
  }
  return { ants: await rows('ants'), bytes: await countPartBytes({ tables, searches }, loader), patterns: await rows('patterns'), quickstart: await rows('quickstart') }
}

interface SearchRecord { kind: string; spec: Record<string, unknown>; remeasure?: Record<string, unknown>; created: string; updated: string; engine_version: string; scores?: { version: number; created: string; engine_version: string }[] }

/**
 * A search (records/searches/<uuid>/): search.json (kind, spec, remeasure, created, updated,
 * engine_version, and each rescore's version, created and engine_version), its sealed run segments as
 * runs/<segment>.jsonl, and each rescore's sidecars as scores/<version>/<segment>.jsonl.
 */
async function publishSearches(store: string, recordsDir: string): Promise<Record<string, string>> {
  const dir = join(recordsDir, 'searches')
  const out: Record<string, string> = {}
  for (const uuid of (await readdir(dir).catch(() => [] as string[])).sort()) {
    if (!isUuid(uuid)) throw usage('usage.bad-search', `searches/${uuid}: a search folder is named by the search's uuid`, join(dir, uuid))
    const at = { file: join(dir, uuid, 'search.json'), line: 1 }
    const s = JSON.parse(await readRecordsJson(at.file)) as SearchRecord
    const segments: SearchSegment[] = []
    for (const file of (await readdir(join(dir, uuid, 'runs'))).filter((f) => f.endsWith('.jsonl')).sort()) {
      const segment = file.slice(0, -'.jsonl'.length)
      const part = await segmentObject(store, EXPLORE_RUNS_SCHEMA, join(dir, uuid, 'runs'), file)
      segments.push({ bytes: part.bytes, engine_version: s.engine_version, first: part.first, last: part.last, object: part.object, rows: part.rows, sealed: s.updated, segment })
    }
    const scores: ScoreSet[] = []
    for (const set of s.scores ?? []) {
      const parts: ScorePart[] = []
      const folder = join(dir, uuid, 'scores', String(set.version))
      for (const file of (await readdir(folder)).filter((f) => f.endsWith('.jsonl')).sort()) {
        const part = await segmentObject(store, EXPLORE_SCORES_SCHEMA, folder, file)
        parts.push({ bytes: part.bytes, object: part.object, rows: part.rows, segment: file.slice(0, -'.jsonl'.length) })
      }
      scores.push({ created: set.created, engine_version: set.engine_version, parts, version: set.version })
    }
    let built
    try {
      built = buildSearchIndex({
        created: s.created, engine_version: s.engine_version, kind: s.kind, parts: segments, run_schema: EXPLORE_RUNS_SCHEMA.schemaId,
        score_schema: EXPLORE_SCORES_SCHEMA.schemaId, search: uuid, spec: scrubLocalPaths(s.spec), ...(s.remeasure ? { remeasure: scrubLocalPaths(s.remeasure) } : {}),
        updated: s.updated, scores,
      })
    } catch (err) {
      throw recordError(PUBLISH_CODES.record, at, (err as Error).message)
    }
    const parsed = parseSearchIndex(built.bytes, { search: uuid })
    if (!parsed.ok) throw recordError(parsed.code, at, parsed.detail)
    out[uuid] = (await writeObject(store, built.bytes, 'json')).hash
  }
  return out
}

/** One segment or sidecar: its JSONL rows, in run id order (the writer refuses others), as one Parquet object. */
async function segmentObject(store: string, schema: TableSchema, dir: string, file: string): Promise<TablePart> {
  const validate = rowValidator(schema)
  const findings: RowFinding[] = []
  const writer = new PackPartWriter(schema, { dir: join(store, TMP_FOLDER) })
  let parts: TablePart[] = []
  try {
    let batch: Row[] = []
    await eachRecord(dir, file, async (row, at) => {
      validate(row, at.line - 1, findings)
      if (findings.length > 0) throw firstFinding(findings, at)
      batch.push(row)
      if (batch.length >= WRITE_BATCH) {
        await writer.write(batch)
        batch = []
      }
    })
    await writer.write(batch)
    parts = await adoptParts(store, await writer.finish(), schema)
  } catch (err) {
    await writer.abort()
    throw err
  }
  if (parts.length !== 1) throw recordError(PUBLISH_CODES.record, { file: join(dir, file), line: 1 }, 'a segment is one Parquet object with at least one row')
  return parts[0]!
}

/** One of a drawn-up version's two documents to sign, as the sign and pack-commit stages take them. */
export class PackDraftDocument implements DocumentItem {
  readonly kind = 'document'
  readonly bytes: Uint8Array
  signature?: string

  constructor(readonly draft: PackDraft, readonly namespace: typeof NS_MANIFEST | typeof NS_REF) {
    this.bytes = namespace === NS_MANIFEST ? draft.manifestBytes : refSignedBytes(draft.ref)
  }

  get value(): Record<string, unknown> { return JSON.parse(Buffer.from(this.bytes).toString('utf8')) as Record<string, unknown> }
  get name(): string { return this.namespace === NS_MANIFEST ? `manifest ${this.draft.manifestHash}` : `refs/${this.draft.feed}.json` }
  serialize(): Uint8Array { return this.bytes }
}

/** The documents of a drawn-up version: its manifest, then its ref. */
export function draftDocuments(draft: PackDraft): [PackDraftDocument, PackDraftDocument] {
  return [new PackDraftDocument(draft, NS_MANIFEST), new PackDraftDocument(draft, NS_REF)]
}

/**
 * `pipe run pack-import`: one version of a pack taken into the library (pack format 1.0, "Importing"), in
 * one transaction. The source is a store or export folder, an uncompressed tar of one, or a store or export
 * on a static HTTP(S) host, fetched first into a folder beside the library (pack-mirror.ts); every source
 * is then read as a folder. The version is checked first, by the conformance checker, at level 2 (format,
 * requires, signatures and keys, every object's hash and size, ids against identities and pins, typed
 * phases, tiling pins), and with `verify: 'sample'` a seeded sample of the new patterns replayed, or with
 * `'full'` every replayable pattern (level 3): any failure refuses the pack before the library is touched.
 * Through a feed (`follow`), the ref's seq must move on from the one the library accepted. Then its rows
 * are merged by content id, records of a changed pin or rule semantics flagged needs_reverify, its events
 * kept under their publisher, its media and reference patches stored by hash and its retractions flagged.
 * Nothing from the pack is ever run. Importing a version the library has already taken changes nothing.
 * (docs/library.md, "Importing")
 */
import { createHash } from 'node:crypto'
import { lstat, mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { extractTar } from '../codec/tar-read.js'
import { PipeError, UsageError } from '../core/errors.js'
import { CHECK_CODES, KEY_STATEMENT_BYTES_CAP, PackChecker, packKind, type CheckIssue, type ReplaySample } from '../formats/pack/check/check.js'
import { verifyKeyChain, type KeyStatementSource } from '../formats/pack/keys/key-statements.js'
import { exportLayout, STORE_LAYOUT, type PackLayout } from '../formats/pack/check/check-run.js'
import { parseManifest, type Manifest } from '../formats/pack/documents/doc-manifest.js'
import { followRef, parseRef, REF_CODES, verifyRef, type RefDocument } from '../formats/pack/documents/doc-ref.js'
import { walkTableIndex } from '../formats/pack/documents/index-walk.js'
import {
  EXPORT_MANIFEST_PATH, exportIndexLoader, mediaExtension, readDocumentFile, refPath, storeFile, storeIndexLoader, verifyObjectFile,
} from '../formats/pack/documents/store.js'
import { chooseManifest } from '../formats/pack/export/export.js'
import { RULE_SEMANTICS } from '../formats/pack/publish/publish.js'
import { partBatchesOrRefuse, partRowsOrRefuse } from '../formats/pack/tables/parquet-read.js'
import { PACK_TABLES, type TableSchema } from '../formats/pack/tables/table-schemas.js'
import { EVENT_TABLES, FACT_TABLES, Library, rowTarget, sortKey, type EventTable, type FactTable, type LibraryChange } from './library.js'
import { rowText } from './row-text.js'
import { mirrorPack, type MirroredPack } from './pack-mirror.js'

export const IMPORT_CODES = {
  /** The version failed a check an importer makes: the first failure is named. */
  refused: 'import.refused',
  /** With --strict, a fact row for an id the library has, with other values. */
  factDiffers: 'import.fact-differs',
  /** Neither a store nor an export (a folder, a tar of one, or a URL). */
  notAPack: 'import.not-a-pack',
  /** pack-follow of an export, which has no ref to follow. */
  noRef: 'import.no-ref',
  /** --manifest names a version of the store that no ref reaches, so no check read it. */
  unchecked: 'import.version-unchecked',
} as const

/** New patterns replayed by `--verify sample` unless told otherwise (the spec's "3,000 new patterns by default"). */
export const DEFAULT_SAMPLE = 3000
/** The sample's time budget: patterns it takes after this are kept as unchecked. */
export const DEFAULT_SAMPLE_BUDGET_MS = 120_000

export interface PackImportOptions {
  /** A store or export folder, an uncompressed tar of one, or the http(s) URL of one on a static host. */
  from: string
  library: string
  feed?: string
  /** A version other than the feed's newest, by its manifest hash. */
  manifest?: string
  /**
   * `none`: checks up to level 2; `sample`: and a sample of the new patterns replayed (seeded by the
   * manifest hash); `full`: level 3, every replayable pattern replayed.
   */
  verify: 'none' | 'sample' | 'full'
  /** How many new patterns the sample replays (DEFAULT_SAMPLE). */
  sample?: number
  /** The sample's time budget in ms (DEFAULT_SAMPLE_BUDGET_MS). */
  sampleBudgetMs?: number
  /** Through the feed's ref, as a follower: a lower seq, or the same seq naming another manifest, is refused. */
  follow?: boolean
  /** Take a version no signature of its publisher makes signed (a signature that does not verify is still refused). */
  allowUnsigned: boolean
  /** A fact row for an id the library has must be identical. */
  strict: boolean
  /** Fetching from a URL: fetches at once, each one's deadline, stall and retries (src/net/http-object.ts). */
  fetch?: { concurrency?: number; timeoutMs?: number; stallMs?: number; retries?: number }
  signal?: AbortSignal
  /** The import's times (tests); default now. */
  now?: () => string
}

export interface PackImportResult {
  manifest: string
  feed: string
  publisher: string
  source: 'store' | 'export'
  /** The library had taken this version before: nothing changed (but a follower's position, when it moved on). */
  already: boolean
  factsAdded: number
  eventsAdded: number
  objectsAdded: number
  retractionsAdded: number
  /** Fact rows for ids the library has, with other values (kept as the library has them). */
  factsDiffering: number
  /** Rows of or about retracted records the library did not hold: not added. */
  rowsSkipped: number
  /** New records flagged needs_reverify: a rule semantics this engine lacks, or a pin other than the library's. */
  needsReverify: number
  /** The sample (`verify: 'sample'`): patterns taken, and how they came out (a failure refuses the pack). */
  sample?: { taken: number; confirmed: number; unchecked: number }
  /** Through a feed: the ref's seq, and whether it moved the library's position on. */
  follow?: { seq: number; update: boolean }
  /** From a URL: the files fetched, their bytes, and the requests made. */
  fetched?: Omit<MirroredPack, 'kind' | 'complete'>
}

const FACTS: ReadonlySet<string> = new Set(FACT_TABLES)
const EVENTS: ReadonlySet<string> = new Set(EVENT_TABLES)

/** A version of a pack as a folder, and how its files are named. */
interface PackFolder {
  dir: string
  kind: 'store' | 'export'
  fetched?: MirroredPack
}

export async function importPack(o: PackImportOptions): Promise<PackImportResult> {
  if (o.follow && o.feed === undefined) throw new UsageError('usage.feed-needed', 'following reads one feed\'s ref: name it with --feed', { location: { field: '--feed' } })
  if (o.follow && o.manifest !== undefined) throw new UsageError('usage.bad-option', 'a follower takes the version its feed\'s ref names: --manifest is pack-import\'s', { location: { field: '--manifest' } })
  if (isUrl(o.from) && o.manifest !== undefined) {
    throw new UsageError('usage.bad-option', `${o.from}: over HTTP a version is read through its feed's ref (--feed), whose version the check reaches; --manifest names a version of a local store`, { location: { field: '--manifest' } })
  }
  // A tar or a URL is laid out in a folder beside the library first: on its file system, and gone after.
  let staging: string | undefined
  const stage = async () => (staging = await mkdtemp(join(dirname(resolve(o.library)), '.pipe-import-')))
  try {
    return await importFolder(await packFolder(o, stage), o)
  } finally {
    // A folder that cannot be removed is left; the error that ended the import is the one to tell.
    if (staging !== undefined) await rm(staging, { recursive: true, force: true }).catch(() => undefined)
  }
}

const isUrl = (from: string) => /^(https?|s3):\/\//i.test(from)

async function packFolder(o: PackImportOptions, stage: () => Promise<string>): Promise<PackFolder> {
  if (isUrl(o.from)) {
    const into = await stage()
    const fetched = await mirrorPack({
      url: o.from, into, ...(o.feed !== undefined ? { feed: o.feed } : {}), ...(o.manifest !== undefined ? { manifest: o.manifest } : {}),
      ...o.fetch, ...(o.signal ? { signal: o.signal } : {}),
      known: (kind) => knownAlready({ dir: into, kind }, o),
    })
    return { dir: into, kind: fetched.kind, fetched }
  }
  const st = await lstat(o.from).catch(() => undefined)
  if (st?.isFile()) {
    const into = await stage()
    await extractTar(o.from, into)
    return folderOfTar(into, o.from)
  }
  const kind = st?.isDirectory() ? await packKind(o.from) : undefined
  if (kind === undefined) throw notAPack(o.from)
  return { dir: o.from, kind }
}

/** The pack a tar held: at its top, or in its one top folder (an export is conventionally `<feed>-<version_label>/`). */
async function folderOfTar(into: string, tar: string): Promise<PackFolder> {
  const top = await packKind(into)
  if (top !== undefined) return { dir: into, kind: top }
  const names = await readdir(into, { withFileTypes: true })
  if (names.length === 1 && names[0]!.isDirectory()) {
    const dir = join(into, names[0]!.name)
    const kind = await packKind(dir)
    if (kind !== undefined) return { dir, kind }
  }
  throw notAPack(tar)
}

function notAPack(from: string): UsageError {
  return new UsageError(IMPORT_CODES.notAPack, `${from} is neither a store (jetcarp-store.json) nor an export (pack.json), nor an uncompressed tar or a URL of one`, { location: { file: from } })
}

/** The version to import: the feed's newest (or `manifest`) of a store, the one version of an export. */
async function versionOf(folder: PackFolder, o: PackImportOptions): Promise<{ hash: string; manifest: Manifest }> {
  if (folder.kind === 'store') return chooseManifest(folder.dir, { ...(o.feed !== undefined ? { feed: o.feed } : {}), ...(o.manifest !== undefined ? { manifest: o.manifest } : {}) })
  const read = await readDocumentFile(join(folder.dir, EXPORT_MANIFEST_PATH))
  if (!read.ok) throw new PipeError(read.code, `${o.from}: ${EXPORT_MANIFEST_PATH}: ${read.detail}`, { location: { file: o.from } })
  const hash = `sha256:${createHash('sha256').update(read.value).digest('hex')}`
  const parsed = parseManifest(read.value)
  if (!parsed.ok) throw new PipeError(parsed.code, `${o.from}: ${EXPORT_MANIFEST_PATH}: ${parsed.detail}`, { location: { file: o.from } })
  const manifest = parsed.value.manifest
  if (o.manifest !== undefined && o.manifest !== hash) throw new UsageError('usage.bad-option', `${o.from} is an export of ${hash}, not of ${o.manifest}`, { location: { field: '--manifest' } })
  if (o.feed !== undefined && o.feed !== manifest.feed) throw new UsageError('usage.feed-mismatch', `${o.from} is an export of feed ${manifest.feed}, not ${o.feed}`, { location: { field: '--feed' } })
  return { hash, manifest }
}

/** The feed's ref, for a follower: its seq, the manifest it names and the key it names as the publisher's. */
async function refOf(folder: PackFolder, o: PackImportOptions, feed: string): Promise<RefDocument> {
  if (folder.kind !== 'store') throw new UsageError(IMPORT_CODES.noRef, `${o.from} is an export, which has no ref to follow: import it with pack-import`, { location: { file: o.from } })
  const read = await readDocumentFile(storeFile(folder.dir, refPath(feed)))
  const parsed = read.ok ? parseRef(read.value, { feed }) : read
  if (!parsed.ok) throw new PipeError(parsed.code, `${o.from}: ${refPath(feed)}: ${parsed.detail}`, { location: { file: o.from } })
  return parsed.value.ref
}

async function openExisting(library: string): Promise<Library | undefined> {
  // Read as it is: an older library is taken up to this build's schema by the import's own change, so a refused pack leaves it at its schema.
  return (await stat(library).then(() => true, () => false)) ? Library.open(library, { migrate: false }) : undefined
}

/**
 * A version the library has already, so that nothing of it need be read, fetched or checked: one it
 * imported, or through a feed, a ref of the very seq and manifest the library follows it at (by the key
 * the ref names; a position kept under a rotated key's id is found after the check instead) whose
 * signature stands by the key statements at hand and the library's revocations ("A follower MUST refuse
 * a ref whose signature does not verify": such a ref goes on to the check, which refuses it).
 */
async function isKnown(lib: Library, folder: PackFolder, hash: string, ref: RefDocument | undefined, feed: string): Promise<boolean> {
  if (!ref) return lib.hasImported(hash)
  const at = lib.following(ref.publisher, feed)
  if (at === undefined || at.seq !== ref.seq || at.manifest !== ref.manifest) return false
  return (await refStands(folder, ref, lib)).ok
}

/** Verifies a ref by the key statements in the folder's keys/ (read up to the checker's cap) and the library's revocations. */
async function refStands(folder: PackFolder, ref: RefDocument, lib: Library): Promise<{ ok: boolean }> {
  const sources: KeyStatementSource[] = []
  let bytes = 0
  const names = await readdir(join(folder.dir, 'keys')).catch(() => [] as string[])
  for (const name of names.filter((n) => /^[0-9a-f]{64}\.json$/.test(n)).sort().slice(0, 4096)) {
    const read = await readDocumentFile(join(folder.dir, 'keys', name))
    if (!read.ok) continue
    bytes += read.value.length
    if (bytes > KEY_STATEMENT_BYTES_CAP) break
    sources.push({ statement: read.value, signerName: name.slice(0, -'.json'.length), source: `keys/${name}` })
  }
  return verifyRef(verifyKeyChain(sources, { knownRevocations: lib.revocations() }), ref)
}

/** isKnown of a version whose ref, manifest and key statements are in `folder` (a mirror's, before its tables are fetched). */
async function knownAlready(folder: PackFolder, o: PackImportOptions): Promise<boolean> {
  const lib = await openExisting(o.library)
  if (!lib) return false
  try {
    const ref = o.follow ? await refOf(folder, o, o.feed!) : undefined
    const { hash, manifest } = await versionOf(folder, ref ? { ...o, manifest: ref.manifest } : o)
    return await isKnown(lib, folder, hash, ref, manifest.feed)
  } finally {
    lib.close()
  }
}

async function importFolder(folder: PackFolder, o: PackImportOptions): Promise<PackImportResult> {
  const now = o.now ?? (() => new Date().toISOString().replace(/\.\d+Z$/, 'Z'))
  const started = now()
  const ref = o.follow ? await refOf(folder, o, o.feed!) : undefined
  const { hash, manifest } = await versionOf(folder, ref ? { ...o, manifest: ref.manifest } : o)

  // The library as it is, read before anything of the pack is trusted: its revocations stay in force
  // whatever statements the store serves now, and the sample takes only patterns it lacks.
  const lib = await openExisting(o.library)
  try {
    if (lib && (await isKnown(lib, folder, hash, ref, manifest.feed))) {
      return { ...emptyResult(hash, manifest, folder), already: true, ...(ref ? { follow: { seq: ref.seq, update: false } } : {}) }
    }
    if (folder.fetched && !folder.fetched.complete) throw new Error('a version fetched only up to its manifest, yet not one the library has')
    // A retracted record the library lacks: nothing of it is added (the record, its events, ratings or media), nor sampled.
    const lacking = new Set(manifest.retracts.map((r) => r.target).filter((target) => lib === undefined || !holds(lib, target)))
    const sample = o.verify === 'sample' ? new ImportSample(hash, lib, lacking, o) : undefined
    const checker = new PackChecker(folder.dir, {
      level: o.verify === 'none' ? 2 : 3, knownRevocations: lib?.revocations() ?? [],
      ...(sample ? { replaySample: sample } : {}), ...(o.signal ? { signal: o.signal } : {}),
    })
    // The check, whole, before the library is touched. (Run beside the merge it saved 3% of a million-pattern
    // import, and made a refused pack's parts reach the objects folder and a new library exist before the check.)
    await checkVersion(checker, folder, hash, o)

    const created = lib === undefined
    const writer = lib ?? Library.open(o.library, { create: true })
    const result: PackImportResult = { ...emptyResult(hash, manifest, folder), ...(sample ? { sample: sample.counts() } : {}) }
    let follow: { publisherId: string; seq: number } | undefined
    if (ref) {
      // A follower's position is the publisher id's (the first key of its chain), whichever key signs now.
      const publisherId = checker.publisherIdOf(ref.publisher) ?? ref.publisher
      const step = followRef(writer.following(publisherId, manifest.feed), ref)
      if (!step.ok) throw new PipeError(REF_CODES.rollback, `refused, the library unchanged: ${o.from}: ${refPath(manifest.feed)}: ${step.detail} (no rollback)`, { location: { file: o.from } })
      result.follow = { seq: ref.seq, update: step.update }
      if (!step.update) return { ...result, already: true }
      follow = { publisherId, seq: ref.seq }
    }
    const already = writer.hasImported(hash)
    if (already && follow === undefined) return { ...result, already: true }
    try {
      const counts = await writer.change({ manifest: hash, publisher: manifest.publisher, feed: manifest.feed, source: o.from, started, finished: now() }, async (c) => {
        if (follow) {
          // Judged again under the write lock: another follower may have moved the position since.
          const step = followRef(writer.following(follow.publisherId, manifest.feed), ref!)
          if (!step.ok || !step.update) throw new PipeError(REF_CODES.rollback, `refused, the library unchanged: ${o.from}: ${refPath(manifest.feed)}: ${step.ok ? `another import took seq ${ref!.seq} meanwhile` : step.detail} (no rollback)`, { location: { file: o.from } })
          c.follow(follow.publisherId, manifest.feed, follow.seq, hash, o.from, started)
        }
        // A version taken before, now reached through its feed: the position moves on, nothing else changes.
        if (already) return
        await mergeVersion(c, writer, folder, hash, manifest, lacking, o, result)
        for (const [id, r] of sample?.outcomes ?? []) c.reverifyResult('patterns', id, r.outcome, r.detail)
        for (const r of checker.revocations) c.revoke(r.fingerprint, r.revokedBy, manifest.publisher, hash, started)
      })
      return { ...result, already, factsAdded: counts.factsAdded, eventsAdded: counts.eventsAdded, objectsAdded: counts.objectsAdded, retractionsAdded: counts.retractionsAdded }
    } catch (err) {
      // A library this import made, whose first change did not commit, is not left behind empty.
      if (created) {
        writer.close()
        await Promise.all(['', '-wal', '-shm', '.objects'].map((end) => rm(`${o.library}${end}`, { recursive: true, force: true })))
      }
      throw err
    } finally {
      if (created) writer.close()
    }
  } finally {
    lib?.close()
  }
}

/**
 * The conformance check of the version to import; throws the refusal, naming the first failure. The
 * checker reads a store by its refs: a version none of them reaches was not checked, and is not taken.
 */
async function checkVersion(checker: PackChecker, folder: PackFolder, hash: string, o: PackImportOptions): Promise<void> {
  const failures: CheckIssue[] = []
  for await (const issue of checker.run()) {
    if (issue.note) continue
    if (o.allowUnsigned && issue.code === CHECK_CODES.manifestUnsigned) continue
    failures.push(issue)
  }
  if (failures.length > 0) {
    const first = failures[0]!
    throw new PipeError(IMPORT_CODES.refused, `refused, the library unchanged: ${first.target}: ${first.code} [level ${first.level}]: ${first.detail}${failures.length > 1 ? ` (and ${failures.length - 1} more failures: pipe run pack-check ${o.from})` : ''}`, { location: { file: o.from } })
  }
  if (folder.kind === 'store' && !checker.checkedVersion(hash)) {
    throw new PipeError(IMPORT_CODES.unchecked, `refused, the library unchanged: ${hash} is a version no ref of ${o.from} reaches (nor their parents), so the check did not read it`, { location: { file: o.from } })
  }
}

function emptyResult(hash: string, manifest: Manifest, folder: PackFolder): PackImportResult {
  return {
    manifest: hash, feed: manifest.feed, publisher: manifest.publisher, source: folder.kind, already: false,
    factsAdded: 0, eventsAdded: 0, objectsAdded: 0, retractionsAdded: 0, factsDiffering: 0, rowsSkipped: 0, needsReverify: 0,
    ...(folder.fetched ? { fetched: { files: folder.fetched.files, bytes: folder.fetched.bytes, requests: folder.fetched.requests } } : {}),
  }
}

/** Every row of the version merged: facts by content id, events under their publisher, objects by hash, retractions flagged. */
async function mergeVersion(c: LibraryChange, lib: Library, folder: PackFolder, hash: string, manifest: Manifest, lacking: ReadonlySet<string>, o: PackImportOptions, result: PackImportResult): Promise<void> {
  const files = { dir: folder.dir, layout: folder.kind === 'store' ? STORE_LAYOUT : exportLayout() }
  const loader = folder.kind === 'store' ? storeIndexLoader(folder.dir) : exportIndexLoader(folder.dir)
  const reverify = new ReverifyFlags(lib)
  for (const [table, root] of Object.entries(manifest.tables).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const schema = (PACK_TABLES as Record<string, TableSchema>)[table]
    if (!schema) continue // a table this reader does not know: ignored, as the spec asks (pack-check notes it)
    for await (const e of walkTableIndex(root, loader, { table })) {
      if (e.kind !== 'part') continue
      const path = fileIn(files, files.layout.partPath(table, e.part))
      if (FACTS.has(table)) {
        await mergeFactPart(c, lib, { table: table as FactTable, schema, object: e.part.object, path }, { files, lacking, o, result, reverify })
        continue
      }
      if (!EVENTS.has(table)) continue
      for await (const row of partRows(path, e.part.object, schema)) {
        o.signal?.throwIfAborted()
        const target = rowTarget(table, row)
        if (target !== undefined && lacking.has(target)) {
          result.rowsSkipped++
          continue
        }
        await keepEvent(c, files, table as EventTable, schema, row, manifest.publisher)
      }
    }
  }
  // "The importer adds nothing for it ... and records only the retraction."
  for (const r of manifest.retracts) c.retract(r.target, r.publisher, hash)
}

/** The fact table of each kind of record a target names (`pattern:<id>`, `ant:<id>`, `quickstart:<id>`). */
const TARGET_TABLES: Readonly<Record<string, FactTable>> = { pattern: 'patterns', ant: 'ants', quickstart: 'quickstart' }

/** Whether the library holds the record a target names (a search run is no record of the library's tables). */
function holds(lib: Library, target: string): boolean {
  const colon = target.indexOf(':')
  const table = TARGET_TABLES[target.slice(0, colon)]
  return table !== undefined && lib.hasFact(table, target.slice(colon + 1))
}

interface PackFiles {
  dir: string
  layout: PackLayout
}

/** A file of the pack: its layout built the name from checked parts (a hash, a table, a partition value). */
function fileIn(files: PackFiles, rel: string): string {
  return join(files.dir, ...rel.split('/'))
}

/**
 * The columns of a fact table the merge reads: its key, what a retraction names (aliases' target), and
 * what needs_reverify and a tiling's reference patch need. The rest of a row stays in its part.
 */
const MERGE_COLUMNS: ReadonlySet<string> = new Set(['id', 'target', 'family', 'semantics', 'pin_key', 'pin', 'rule_family', 'reference'])

interface MergeContext {
  files: PackFiles
  lacking: ReadonlySet<string>
  o: PackImportOptions
  result: PackImportResult
  reverify: ReverifyFlags
}

/** Rows held elsewhere compared at once: what a part with many of them holds in memory. */
const COMPARE_BATCH = 16_384

/**
 * A part of a fact table: stored as a library object (hash-checked as it is copied), then read from that
 * copy, only the columns the merge needs; each new id becomes a reference to its row. Ids the library
 * holds from another part, or as text, are compared a batch at a time (compareHeld).
 */
async function mergeFactPart(c: LibraryChange, lib: Library, part: { table: FactTable; schema: TableSchema; object: string; path: string }, m: MergeContext): Promise<void> {
  const { table, schema, object } = part
  await c.object(object, 'parquet', { path: part.path })
  const columns = { ...schema, columns: schema.columns.filter((col) => MERGE_COLUMNS.has(col.name) || schema.sortColumns.includes(col.name)) }
  const elsewhere: HeldElsewhere[] = []
  for await (const batch of partBatchesOrRefuse(lib.objectFile(object, 'parquet'), columns, `${table} part ${object}`)) {
    for (let i = 0; i < batch.rows; i++) {
      m.o.signal?.throwIfAborted()
      const row = batch.row(i)
      if (m.lacking.size > 0) {
        const target = rowTarget(table, row)
        if (target !== undefined && m.lacking.has(target)) {
          m.result.rowsSkipped++
          continue
        }
      }
      const key = sortKey(schema.sortColumns.map((col) => row[col]))
      const kept = c.factRef(table, key, object, batch.rowStart + i)
      if (kept.kept === 'elsewhere') {
        elsewhere.push({ key, row: batch.rowStart + i, held: 'text' in kept.held ? { digest: textDigest(kept.held.text) } : kept.held })
        if (elsewhere.length >= COMPARE_BATCH) await compareHeld(lib, table, object, elsewhere.splice(0), m)
      } else if (kept.kept === 'added') {
        const need = m.reverify.needed(table, row)
        if (need === true || (need !== false && (await need))) {
          c.flagReverify(table, key)
          m.result.needsReverify++
        }
      }
      if (table === 'tilings' && typeof row.reference === 'string' && typeof row.family === 'string') {
        await c.object(row.reference, 'parquet', { path: fileIn(m.files, m.files.layout.referencePatchPath(row.family, row.reference)) })
      }
    }
  }
  if (elsewhere.length > 0) await compareHeld(lib, table, object, elsewhere, m)
}

/** A row of a part whose id the library holds elsewhere: another part's row, or a text row (by its digest). */
interface HeldElsewhere {
  key: string
  row: number
  held: { part: string; partRow: number; ownImport: boolean } | { digest: string }
}

const textDigest = (text: string) => createHash('sha256').update(text).digest('base64')

/**
 * Rows of `part` (ascending) whose ids the library holds elsewhere, against the library's rows: the same
 * RFC 8785 text (compared by SHA-256), or `facts_differing` (with --strict, the import refused). This
 * part's rows are read first, then each part holding the others once, in row order.
 */
async function compareHeld(lib: Library, table: FactTable, part: string, elsewhere: readonly HeldElsewhere[], m: MergeContext): Promise<void> {
  const rows = lib.partRows(table)
  try {
    const mine = new Map<number, string>()
    for (const e of elsewhere) mine.set(e.row, textDigest(await rows.text(part, e.row)))
    const judge = (e: HeldElsewhere, heldDigest: string) => {
      if (heldDigest === mine.get(e.row)) return
      const holder = 'ownImport' in e.held && e.held.ownImport ? 'another part of this pack holds' : 'the library holds'
      if (m.o.strict) throw new PipeError(IMPORT_CODES.factDiffers, `${table} ${e.key.replaceAll('\u001f', ' ')}: ${holder} this record with other values (--strict); nothing was imported`)
      m.result.factsDiffering++
    }
    const inParts: (HeldElsewhere & { held: { part: string; partRow: number } })[] = []
    for (const e of elsewhere) {
      if ('digest' in e.held) judge(e, e.held.digest)
      else inParts.push(e as (typeof inParts)[number])
    }
    inParts.sort((a, b) => (a.held.part < b.held.part ? -1 : a.held.part > b.held.part ? 1 : a.held.partRow - b.held.partRow))
    for (const e of inParts) judge(e, textDigest(await rows.text(e.held.part, e.held.partRow)))
  } finally {
    await rows.close()
  }
}

/** An event row kept under its publisher (the manifest's for a table without one), with its media file. */
async function keepEvent(c: LibraryChange, files: PackFiles, table: EventTable, schema: TableSchema, row: Record<string, unknown>, manifestPublisher: string): Promise<void> {
  const publisher = typeof row.publisher === 'string' ? row.publisher : manifestPublisher
  c.event(table, publisher, sortKey(schema.sortColumns.map((col) => row[col])), rowText(row))
  const ext = table === 'media' ? mediaExtension(row.media_type) : undefined
  if (ext?.ok && typeof row.object === 'string') {
    await c.object(row.object, ext.value, { path: fileIn(files, files.layout.mediaPath(row as never, ext.value)) })
  }
}

/**
 * Step 6, needs_reverify: a new record whose rule family this engine does not have or has at another
 * semantics version (RULE_SEMANTICS), or whose tiling the library holds under another pin.
 */
class ReverifyFlags {
  /** The library's pin of each tiling asked about; a library holds few tilings, and the cap keeps it so. */
  private readonly pins = new Map<string, string | undefined>()

  constructor(private readonly lib: Library) {}

  /** A promise only when the tiling's pin must be read from the library. */
  needed(table: string, row: Record<string, unknown>): boolean | Promise<boolean> {
    if (table !== 'patterns' && table !== 'ants' && table !== 'quickstart' && table !== 'rules') return false
    const family = table === 'quickstart' ? row.rule_family : row.family
    if ((RULE_SEMANTICS as Record<string, string>)[String(family)] !== row.semantics) return true
    if (table === 'rules' || typeof row.pin_key !== 'string') return false
    const otherPin = (pin: string | undefined) => pin !== undefined && pin !== row.pin
    return this.pins.has(row.pin_key) ? otherPin(this.pins.get(row.pin_key)) : this.libraryPin(row.pin_key).then(otherPin)
  }

  private async libraryPin(pinKey: string): Promise<string | undefined> {
    const text = await this.lib.factText('tilings', pinKey)
    const held = text === undefined ? undefined : (JSON.parse(text) as { pin?: unknown })
    const pin = typeof held?.pin === 'string' ? held.pin : undefined
    if (this.pins.size < 65_536) this.pins.set(pinKey, pin)
    return pin
  }
}

/**
 * Step 7: the version's `sample` new patterns (those the library lacks) of the lowest scores, a score being
 * SHA-256 of the manifest hash and the id: the same version into the same library samples the same
 * patterns, and no publisher can choose which. The check meets the patterns one by one, so it replays
 * each that is among the lowest so far: a later one of a lower score takes the place of the highest,
 * whose outcome is forgotten (about sample × (1 + ln(new / sample)) replays in all). One whose turn comes
 * after the time budget is kept as unchecked, not replayed. A replay that fails fails the check, kept or not.
 */
class ImportSample implements ReplaySample {
  readonly outcomes = new Map<string, { outcome: 'confirmed' | 'failed' | 'unchecked'; detail: string }>()
  private readonly lowest = new MaxHeap()
  private readonly size: number
  private readonly budgetMs: number
  private readonly deadline: number

  constructor(private readonly seed: string, private readonly lib: Library | undefined, private readonly lacking: ReadonlySet<string>, o: PackImportOptions) {
    this.size = o.sample ?? DEFAULT_SAMPLE
    this.budgetMs = o.sampleBudgetMs ?? DEFAULT_SAMPLE_BUDGET_MS
    this.deadline = Date.now() + this.budgetMs
  }

  takes(id: string): boolean {
    if (this.size < 1 || this.outcomes.has(id)) return false
    const digest = createHash('sha256').update(`${this.seed}\n${id}`).digest()
    const score = digest.readUInt32BE(0) * 2 ** 21 + (digest.readUInt32BE(4) >>> 11)
    if (this.lowest.size >= this.size && score >= this.lowest.maxScore()) return false
    if (this.lacking.has(`pattern:${id}`)) return false
    if (this.lib !== undefined && this.lib.hasFact('patterns', id)) return false
    if (this.lowest.size >= this.size) this.outcomes.delete(this.lowest.pop())
    this.lowest.push(score, id)
    if (Date.now() > this.deadline) {
      this.outcomes.set(id, { outcome: 'unchecked', detail: `the sample's time budget of ${this.budgetMs} ms had run out` })
      return false
    }
    return true
  }

  outcome(id: string, outcome: 'confirmed' | 'failed' | 'unchecked', detail: string): void {
    this.outcomes.set(id, { outcome, detail })
  }

  counts(): { taken: number; confirmed: number; unchecked: number } {
    const all = [...this.outcomes.values()]
    return { taken: all.length, confirmed: all.filter((r) => r.outcome === 'confirmed').length, unchecked: all.filter((r) => r.outcome === 'unchecked').length }
  }
}

/** Ids by score, the highest on top. */
class MaxHeap {
  private readonly scores: number[] = []
  private readonly ids: string[] = []

  get size(): number {
    return this.scores.length
  }

  maxScore(): number {
    return this.scores[0]!
  }

  push(score: number, id: string): void {
    let at = this.scores.length
    this.scores.push(score)
    this.ids.push(id)
    while (at > 0) {
      const up = (at - 1) >> 1
      if (this.scores[up]! >= score) break
      this.swap(at, up)
      at = up
    }
  }

  /** Removes the highest, and gives its id. */
  pop(): string {
    const top = this.ids[0]!
    const lastScore = this.scores.pop()!
    const lastId = this.ids.pop()!
    if (this.scores.length > 0) {
      this.scores[0] = lastScore
      this.ids[0] = lastId
      for (let at = 0; ;) {
        const [l, r] = [2 * at + 1, 2 * at + 2]
        let big = at
        if (l < this.scores.length && this.scores[l]! > this.scores[big]!) big = l
        if (r < this.scores.length && this.scores[r]! > this.scores[big]!) big = r
        if (big === at) break
        this.swap(at, big)
        at = big
      }
    }
    return top
  }

  private swap(a: number, b: number): void {
    ;[this.scores[a], this.scores[b]] = [this.scores[b]!, this.scores[a]!]
    ;[this.ids[a], this.ids[b]] = [this.ids[b]!, this.ids[a]!]
  }
}

/** A part's rows, its object hash-checked first (the check before did too; the bytes read now are these). */
async function* partRows(path: string, object: string, schema: TableSchema): AsyncGenerator<Record<string, unknown>> {
  const ok = await verifyObjectFile(path, object)
  if (!ok.ok) throw new PipeError(ok.code, `${schema.name} part ${object}: ${ok.detail}`)
  yield* partRowsOrRefuse(path, schema, `${schema.name} part ${object}`)
}

/**
 * What one pack check shares (check.ts): the level asked for, where the files of a store or an export are,
 * the data objects already checked, and what an issue is. The checks themselves are in check.ts (stores,
 * exports, manifests, refs, signatures) and check-tables.ts (indexes, parts, rows, replay).
 *
 * An issue's level is its rule's conformance level, fixed by its code (levelOf). A run at level N performs
 * the checks of levels 0 to N; a rule of a higher level is still reported when breaking it stops reading
 * (a manifest of another major version, an index cycle, a malformed hash where a file must be found),
 * because the level-0 reading cannot go on past it.
 */
import { lstat, opendir } from 'node:fs/promises'
import type { Dir } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { PipeError } from '../../../core/errors.js'
import { DOC_CODES, readPackJson, type PackResult } from '../documents/documents.js'
import { INDEX_CODES, type ScorePart, type SearchSegment, type TablePart } from '../documents/doc-index.js'
import { MANIFEST_CODES } from '../documents/doc-manifest.js'
import { IDENTITY_CODES } from '../records/identity.js'
import { GEOMETRY_CODES } from '../geometry/geometry.js'
import { WALK_CODES, type IndexLoader } from '../documents/index-walk.js'
import { KEY_STATEMENT_CODES } from '../keys/key-statements.js'
import { REPLAY_CODES, type ReplayBudget } from './replay.js'
import { ROW_RULE_CODES } from '../records/row-rules.js'
import { KEY_CODES } from '../keys/ssh-key.js'
import { SIG_CODES } from '../keys/sshsig.js'
import {
  ExportLayout,
  STORE_CODES,
  exportIndexPath,
  exportMediaPath,
  exportReferencePath,
  exportScorePath,
  exportSegmentPath,
  objectPath,
  readDocumentFile,
  readDocumentObject,
  verifyObjectFile,
  type MediaExtension,
  type MediaFile,
} from '../documents/store.js'
import { FACT_CONFLICT, ROW_CODES, WRITE_CODES } from '../tables/table-schemas.js'
import { localPathInJson, WRITER_CODES } from './writer-rules.js'

export type CheckLevel = 0 | 1 | 2 | 3

/** One thing a check found. A note is not a failure: something left unchecked, or beyond what the levels cover. */
export interface CheckIssue {
  level: CheckLevel
  code: string
  /** The file (a path relative to the checked folder), record (pattern:<id>, tiling:<pin_key>) or row it concerns. */
  target: string
  detail: string
  note: boolean
}

/** Codes of the checker's own rules (the others are the modules' it calls). */
export const CHECK_CODES = {
  /** A store with no refs/<feed>.json: no version to check. */
  storeNoRefs: 'pack.store-no-refs',
  /** An index's schema number is not one this reader knows for its table. */
  schemaUnknown: 'pack.schema-unknown',
  /** A table this reader does not know (note: it is ignored, as the spec asks). */
  tableUnknown: 'pack.table-unknown',
  /** An index states another row count than its part (or segment, or sidecar) has. */
  partRows: 'pack.part-rows-mismatch',
  /** An index's first or last is not the first sort column of the part's first or last row. */
  partBounds: 'pack.part-bounds-mismatch',
  /** A record's pin_key names no row of tilings. */
  tilingMissing: 'pack.tiling-missing',
  /** A record's pin is not its tilings row's pin. */
  recordPin: 'pack.record-pin-mismatch',
  /** Neighbour lists that break the spec's rules without changing the pin (note). */
  geometryLint: 'pack.geometry-lint',
  /** A manifest that no signature by its publisher (or a machine key it authorises) makes signed. */
  manifestUnsigned: 'pack.manifest-unsigned',
  /** A ref whose manifest is of another feed. */
  refManifestFeed: 'pack.ref-manifest-feed',
  /** A ref and its manifest name keys of different publishers. */
  refPublisher: 'pack.ref-publisher-mismatch',
  /** A ref's seq below the number of versions of its feed the store holds (seq goes up by at least one a version). */
  refSeq: 'pack.ref-seq',
  /** A retraction a version lists first (no parent lists it) under another publisher than the version's. */
  retractionPublisher: 'pack.retraction-publisher',
  /** A version that does not list a retraction of a parent (the same target and publisher). */
  retractsNotCumulative: 'pack.retracts-not-cumulative',
  /** Two different rows of a fact table with one key (the same code as the publisher's refusal). */
  factConflict: FACT_CONFLICT,
  /** A pattern with no rule: its rule column is null and no verification of it is main. */
  replayRuleMissing: 'pack.replay-rule-missing',
  /** A pattern's rule has no rules row with its neighbourhood and steps per generation. */
  replayRuleUnknown: 'pack.replay-rule-unknown',
  /** A pattern without a rule column whose main rules may be among those a check does not keep (note: memory stays bounded). */
  replayRuleUnkept: 'pack.replay-rule-unkept',
  /** More patterns with a mover cell on a main verification than a check keeps: the classes of those beyond are not checked (note). */
  moverClassUnchecked: 'pack.mover-class-unchecked',
  /** More distinct raters than a check keeps: the ratings and raters rows of those beyond are not judged (note). */
  ratersUnchecked: 'pack.raters-unchecked',
  /** A row of more list elements than a check builds a row from: its rules, ids and identity are not checked (note). */
  rowUnchecked: 'pack.row-unchecked',
  /** More tilings or rules rows than a check keeps (kept-facts.ts): what needed those beyond is not checked (note). */
  factsUnkept: 'pack.facts-unkept',
  /** More retractions across the versions than a check keeps: those beyond are not held to being cumulative (note). */
  retractionsUnkept: 'pack.retractions-unkept',
  /** More bytes of key statements in keys/ than a check reads (KEY_STATEMENT_BYTES_CAP): what the rest's keys sign is not verified. */
  keysTooLarge: 'pack.keys-too-large',
  /** More manifests, index trees and data objects than a check keeps track of (CheckCaps.tracked), or entries in a folder than it lists (CheckCaps.listed): the rest is not checked. */
  checkTooLarge: 'pack.check-too-large',
} as const

const LEVEL_1: readonly string[] = [
  DOC_CODES.versionMajor, MANIFEST_CODES.requiresUnknown, DOC_CODES.hashMalformed, DOC_CODES.hashPrefix,
  STORE_CODES.objectHashMismatch, STORE_CODES.objectSizeMismatch, STORE_CODES.mediaType,
  INDEX_CODES.tooManyParts, INDEX_CODES.tooManyChildren, INDEX_CODES.partitionMalformed, INDEX_CODES.searchMismatch,
  ...Object.values(WALK_CODES), ...Object.values(ROW_CODES), WRITE_CODES.unsorted, ...Object.values(IDENTITY_CODES), ...Object.values(ROW_RULE_CODES), ...Object.values(GEOMETRY_CODES),
  ...Object.values(WRITER_CODES), CHECK_CODES.schemaUnknown, CHECK_CODES.partRows, CHECK_CODES.partBounds, CHECK_CODES.tilingMissing, CHECK_CODES.recordPin, CHECK_CODES.geometryLint, CHECK_CODES.retractsNotCumulative, CHECK_CODES.factConflict, CHECK_CODES.moverClassUnchecked, CHECK_CODES.ratersUnchecked, CHECK_CODES.rowUnchecked, CHECK_CODES.factsUnkept, CHECK_CODES.retractionsUnkept,
]
const LEVEL_2: readonly string[] = [
  ...Object.values(SIG_CODES), ...Object.values(KEY_STATEMENT_CODES), ...Object.values(KEY_CODES),
  CHECK_CODES.manifestUnsigned, CHECK_CODES.keysTooLarge, CHECK_CODES.refManifestFeed, CHECK_CODES.refPublisher, CHECK_CODES.refSeq, CHECK_CODES.retractionPublisher,
]
const LEVEL_3: readonly string[] = [...Object.values(REPLAY_CODES), CHECK_CODES.replayRuleMissing, CHECK_CODES.replayRuleUnknown, CHECK_CODES.replayRuleUnkept]
const LEVELS: ReadonlyMap<string, CheckLevel> = new Map([...LEVEL_1.map((c) => [c, 1] as const), ...LEVEL_2.map((c) => [c, 2] as const), ...LEVEL_3.map((c) => [c, 3] as const)])

/** The conformance level of a code's rule; codes of reading (JSON, Parquet, paths, missing files) are level 0. */
export function levelOf(code: string): CheckLevel {
  return LEVELS.get(code) ?? 0
}

/** A failure, at its code's level. */
export function failure(code: string, target: string, detail: string): CheckIssue {
  return { level: levelOf(code), code, target, detail, note: false }
}

/** A note (not a failure), at its code's level. */
export function note(code: string, target: string, detail: string): CheckIssue {
  return { level: levelOf(code), code, target, detail, note: true }
}

/** Counts for the summary of a check. */
export interface CheckStats {
  kind: 'store' | 'export'
  manifests: number
  indexes: number
  parts: number
  rows: number
  /** Data objects read (parts, reference patches, segments, sidecars, media), each once. */
  objects: number
  replay: { confirmed: number; failed: number; unchecked: number; notReplayed: number }
}

// ---------------------------------------------------------------------------------------------------
// Where a pack's files are.

/** How the files of one layout are named. Paths are relative and '/'-separated; export paths may throw pack.path-escape. */
export interface PackLayout {
  readonly kind: 'store' | 'export'
  indexPath(hash: string): string
  partPath(table: string, part: TablePart): string
  segmentPath(search: string, segment: SearchSegment): string
  scorePath(search: string, version: number, part: ScorePart): string
  referencePatchPath(family: string, reference: string): string
  mediaPath(media: MediaFile & { object: string }, ext: MediaExtension): string
}

export const STORE_LAYOUT: PackLayout = {
  kind: 'store',
  indexPath: (hash) => objectPath(hash, 'json'),
  partPath: (_table, part) => objectPath(part.object, 'parquet'),
  segmentPath: (_search, segment) => objectPath(segment.object, 'parquet'),
  scorePath: (_search, _version, part) => objectPath(part.object, 'parquet'),
  referencePatchPath: (_family, reference) => objectPath(reference, 'parquet'),
  mediaPath: (media, ext) => objectPath(media.object, ext),
}

/** An export's names ("Exports"): parts numbered per partition folder in the order the walk meets them, as planExport numbers them. */
export function exportLayout(): PackLayout {
  const numbering = new ExportLayout()
  return {
    kind: 'export',
    indexPath: exportIndexPath,
    partPath(table, part) {
      numbering.addTablePart(table, part)
      return numbering.pathOf(part.object)!
    },
    segmentPath: (search, segment) => exportSegmentPath(search, segment.segment),
    scorePath: (search, version, part) => exportScorePath(search, version, part.segment),
    referencePatchPath: (family) => exportReferencePath(family),
    mediaPath: (media) => exportMediaPath(media),
  }
}

// ---------------------------------------------------------------------------------------------------
// The run.

export interface CheckRunOptions {
  level: CheckLevel
  signal?: AbortSignal
  replayBudget?: Partial<ReplayBudget>
  replaySample?: ReplaySample
  /** Threads that check parts, this one among them (0 or 1: every part on this thread alone). */
  threads?: number
  /** The smallest part given to the pool's lanes: a smaller one is checked at once, in the walk. */
  threadPartBytes?: number
  caps?: CheckCaps
}

/**
 * Level 3 for a sample of the patterns only (an importer's "verifies a random sample again"): a pattern
 * `takes` declines is not replayed, and each one taken is told with what its replay found.
 */
export interface ReplaySample {
  takes(id: string): boolean
  outcome(id: string, outcome: 'confirmed' | 'failed' | 'unchecked', detail: string): void
}

/** How much a check keeps across parts; beyond each, what is not kept is noted, not failed. */
export interface CheckCaps {
  /** Patterns with a mover cell, for their class's check (MOVER_PATTERNS_CAP). */
  moverPatterns?: number
  /** Patterns whose main rules are kept for replay (MAIN_RULES_CAP). */
  mainRules?: number
  /** Raters, for the rating rules (RATERS_CAP). */
  raters?: number
  /** Manifests, index trees and data objects visited, each remembered once (TRACKED_CAP). */
  tracked?: number
  /** Keys of each map of tilings and rules facts (FACT_KEYS_CAP). */
  factKeys?: number
  /** Characters of those facts' keys and values, and of the main rules' notations, in all (KEPT_TEXT_CAP). */
  keptText?: number
  /** Bytes of lattice tilings rows whose neighbour lists level 3 keeps for replay (GEOMETRY_BYTES_CAP). */
  geometryBytes?: number
  /** Entries of a folder a check lists: refs/, keys/, a manifest's signatures (LISTED_CAP). */
  listed?: number
  /** Bytes of the key statements of keys/ a check reads (KEY_STATEMENT_BYTES_CAP). */
  keyStatementBytes?: number
  /** Retractions kept across versions, as digests (RETRACTION_DIGESTS_CAP). */
  retractionDigests?: number
}

/**
 * What a check remembers of a pack, to read each manifest, index tree and data object once: a path each,
 * 140 bytes (2^20 parts' paths, in a Map and a Set, measured 294 MB), so 2^20 of them take about 150 MB
 * beside the 170 MB a check of large parts otherwise peaks at. A pack with more (half a million parts,
 * where a billion patterns take 61,000 parts of 16,384 rows) is checked that far and refused with
 * pack.check-too-large, so that a store of millions of tiny parts cannot take memory without bound.
 */
export const TRACKED_CAP = 2 ** 20

/**
 * The entries of one folder a check lists (refs/, keys/, a manifest's signatures), all of them held to be
 * sorted: 159 bytes an entry (measured), so 42 MB at the cap. A folder of more, which no store needs (a feed
 * a ref, a few key statements a publisher, a signature a key), is refused with pack.check-too-large rather
 * than listed without bound.
 */
export const LISTED_CAP = 2 ** 18

/** Thrown by CheckRun when it would track or list more than its caps; PackChecker ends the check with the finding. */
export class CheckTooLarge extends Error {
  constructor(
    readonly target: string,
    message: string,
  ) {
    super(message)
  }
}

/** A part of at least this many bytes goes to a thread, by default. */
const THREAD_PART_BYTES = 256 * 1024

const OBJECT_FILE_NAME = /^([0-9a-f]{64})\.(?:json|parquet|png|gif|webp)$/

export class CheckRun {
  readonly level: CheckLevel
  readonly signal: AbortSignal | undefined
  readonly replayBudget: Partial<ReplayBudget>
  readonly replaySample: ReplaySample | undefined
  readonly stats: CheckStats
  /** Threads that check parts (this one and threads - 1 workers), and the smallest part given to a worker's pool. */
  readonly threads: number
  readonly threadPartBytes: number
  readonly caps: CheckCaps
  /** Data objects checked, by path: whether they may be read. */
  private readonly objects = new Map<string, boolean>()
  private readonly visited = new Set<string>()
  private readonly localPaths: CheckIssue[] = []

  constructor(
    readonly root: string,
    readonly layout: PackLayout,
    opts: CheckRunOptions,
  ) {
    this.level = opts.level
    this.signal = opts.signal
    this.replayBudget = opts.replayBudget ?? {}
    this.replaySample = opts.replaySample
    this.threads = opts.threads ?? availableParallelism()
    this.threadPartBytes = opts.threadPartBytes ?? THREAD_PART_BYTES
    this.caps = opts.caps ?? {}
    this.stats = { kind: layout.kind, manifests: 0, indexes: 0, parts: 0, rows: 0, objects: 0, replay: { confirmed: 0, failed: 0, unchecked: 0, notReplayed: 0 } }
  }

  /** Whether this run performs the checks of `level`. */
  at(level: CheckLevel): boolean {
    return this.level >= level
  }

  issue(code: string, target: string, detail: string): CheckIssue {
    return failure(code, target, detail)
  }

  note(code: string, target: string, detail: string): CheckIssue {
    return note(code, target, detail)
  }

  /** The issue of a PipeError a module threw (anything else is a bug, and thrown on). */
  thrown(err: unknown, target: string): CheckIssue {
    if (!(err instanceof PipeError)) throw err
    return this.issue(err.code, target, err.message)
  }

  /** The absolute file of a relative path. */
  file(rel: string): string {
    return join(this.root, ...rel.split('/'))
  }

  /** True the first time `key` is given: a manifest, index tree or part reached again is checked once. */
  firstVisit(key: string): boolean {
    if (this.visited.has(key)) return false
    // A key is a path, or a table's or search's name and its root's path.
    this.track(key.slice(key.lastIndexOf(' ') + 1))
    this.visited.add(key)
    return true
  }

  /** Refuses to remember one more path (CheckTooLarge) once the cap is reached. */
  private track(target: string): void {
    const cap = this.caps.tracked ?? TRACKED_CAP
    if (this.visited.size + this.objects.size >= cap) {
      throw new CheckTooLarge(target, `the pack holds more manifests, index trees and data objects than the ${cap} a check keeps track of; what lies beyond was not checked`)
    }
  }

  /** A manifest or index at `rel`: from level 1 checked against its hash before it is used (at 0 only its length). */
  async readDocument(rel: string, hash: string): Promise<PackResult<Buffer>> {
    return this.linted(rel, await (this.at(1) ? readDocumentObject(this.file(rel), hash) : readDocumentFile(this.file(rel))))
  }

  /** A JSON document at `rel` that has no hash to be checked against (pack.json, a ref, a key statement, an export's manifest). */
  async readPlainDocument(rel: string): Promise<PackResult<Buffer>> {
    return this.linted(rel, await readDocumentFile(this.file(rel)))
  }

  /**
   * The local paths found in documents as they were read, reported when the check ends (the index walk reads
   * documents where no issue can be yielded); one a document, so as many as the documents a check tracks.
   */
  *documentIssues(): Generator<CheckIssue> {
    yield* this.localPaths
    this.localPaths.length = 0
  }

  private linted(rel: string, read: PackResult<Buffer>): PackResult<Buffer> {
    if (!read.ok || !this.at(1)) return read
    // Read within the format's limits (depth 32, 16 MiB): one beyond them is its reader's finding, not linted.
    const doc = readPackJson(read.value)
    if (!doc.ok) return read
    const found = localPathInJson(doc.value)
    if (found) this.localPaths.push(failure(WRITER_CODES.localPath, rel, `${found.at}: a local path ${JSON.stringify(found.path)}; a pack holds file names, never local paths`))
    return read
  }

  /** Loads indexes for index-walk.ts, remembering the path of the last one asked for (what a failure concerns). */
  indexLoader(): { load: IndexLoader; last: () => string | undefined } {
    let last: string | undefined
    return {
      load: async (hash) => {
        last = this.layout.indexPath(hash)
        const read = await this.readDocument(last, hash)
        return read.ok ? read.value : read
      },
      last: () => last,
    }
  }

  /**
   * Checks a data object before it is read (objectProblem), once per path. Returns whether it may be read.
   */
  async *dataObject(rel: string, hash: string, bytes?: number): AsyncGenerator<CheckIssue, boolean> {
    const known = this.objects.get(rel)
    if (known !== undefined) return known
    const problem = await objectProblem(this.file(rel), rel, hash, this.level, bytes)
    this.objectChecked(rel, problem === undefined)
    if (problem) yield this.issue(problem.code, rel, problem.detail)
    return problem === undefined
  }

  /** Whether data object `rel` was checked, and passed (undefined: not checked yet). */
  objectKnown(rel: string): boolean | undefined {
    return this.objects.get(rel)
  }

  /** Records the check of data object `rel`, made here or on a worker thread. */
  objectChecked(rel: string, ok: boolean): void {
    if (!this.objects.has(rel)) this.track(rel)
    this.objects.set(rel, ok)
    if (ok) this.stats.objects++
  }

  /**
   * The entries of folder `rel` whose names match `name` (its first group is returned), sorted; a folder
   * that is not there has none. A link is refused: a store and an export are plain files, and a link
   * could point out of them. Other names are ignored, as the spec ignores paths it does not know.
   */
  /**
   * With --all-objects, a store's every file under objects/ hashed, as a full fsck: one whose name is not
   * the SHA-256 of its bytes (or not an object's name at all) is stray. Objects the check read are not read again.
   */
  async *allObjects(): AsyncGenerator<CheckIssue> {
    let folder: Dir
    try {
      folder = await opendir(this.file('objects/sha256'))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return
      throw err
    }
    const prefixes: string[] = []
    const cap = this.caps.listed ?? LISTED_CAP
    for await (const e of folder) {
      if (prefixes.length === cap) throw new CheckTooLarge('objects/sha256', `the folder holds more than the ${cap} entries a check lists; it and what lies beyond were not checked`)
      if (e.isDirectory()) prefixes.push(e.name)
      else yield failure(WRITER_CODES.strayObject, `objects/sha256/${e.name}`, 'not an object\'s folder (objects/sha256/<aa>/)')
    }
    for (const prefix of prefixes.sort()) {
      const rel = `objects/sha256/${prefix}`
      // list() gives the plain files (and reports links); anything else in the folder is no object either.
      const inside = await opendir(this.file(rel))
      let entries = 0
      for await (const e of inside) {
        if (++entries > cap) break // list() below refuses the folder
        if (!e.isFile() && !e.isSymbolicLink()) yield failure(WRITER_CODES.strayObject, `${rel}/${e.name}`, 'not a file: objects are plain files')
      }
      for (const f of yield* this.list(rel, /^(.*)$/)) {
        if (this.objects.has(f.rel)) continue
        const m = OBJECT_FILE_NAME.exec(f.key)
        if (m === null || m[1]!.slice(0, 2) !== prefix) {
          yield failure(WRITER_CODES.strayObject, f.rel, `not an object's name (objects/sha256/<aa>/<64 hex digits>.<json|parquet|png|gif|webp>, <aa> its first two digits)`)
          continue
        }
        this.stats.objects++
        const v = await verifyObjectFile(this.file(f.rel), `sha256:${m[1]!}`)
        if (!v.ok) yield failure(WRITER_CODES.strayObject, f.rel, `its name is not its hash: ${v.detail}`)
      }
    }
  }

  async *list(rel: string, name: RegExp): AsyncGenerator<CheckIssue, { key: string; rel: string }[]> {
    let folder: Dir
    try {
      folder = await opendir(this.file(rel))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return []
      throw err
    }
    const cap = this.caps.listed ?? LISTED_CAP
    const entries = []
    // Leaving the loop early closes the folder.
    for await (const e of folder) {
      if (entries.length === cap) throw new CheckTooLarge(rel, `the folder holds more than the ${cap} entries a check lists; it and what lies beyond were not checked`)
      entries.push(e)
    }
    const out: { key: string; rel: string }[] = []
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const m = name.exec(e.name)
      if (!m) continue
      if (e.isSymbolicLink()) yield this.issue(STORE_CODES.pathEscape, `${rel}/${e.name}`, 'a symbolic link: a pack is plain files, and a link may lead out of it')
      else if (e.isFile()) out.push({ key: m[1]!, rel: `${rel}/${e.name}` })
    }
    return out
  }
}

/**
 * What is wrong with a data object (a part, reference patch, segment, sidecar or media file) before it is
 * read: from level 1 its size (the stated `bytes`) and hash, at level 0 only that a plain file is there.
 */
export async function objectProblem(file: string, rel: string, hash: string, level: CheckLevel, bytes?: number): Promise<{ code: string; detail: string } | undefined> {
  if (level >= 1) {
    const v = await verifyObjectFile(file, hash, bytes === undefined ? {} : { bytes })
    return v.ok ? undefined : v
  }
  return (await isPlainFile(file)) ? undefined : { code: STORE_CODES.objectMissing, detail: `${hash}: no file at ${rel}` }
}

async function isPlainFile(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isFile()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return false
    throw err
  }
}

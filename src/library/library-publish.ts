/**
 * Publishing from the library (`pipe run pack-publish --from-library DB`): what the library holds, or a
 * selection of it, written as a records folder (docs/pack-records.md) and published from there by the
 * publisher itself (preparePack), so a version made from the library is held to every rule a version made
 * from records is. (docs/library.md, "Publishing from the library")
 *
 * - Rows go out as the library keeps them, the pack's own rows: a fact row states every column, which the
 *   publisher completes and checks to agree, so a record keeps its id.
 * - A record any retraction the library holds names is left out, with everything about it (its events,
 *   ratings, media and aliases): the library cannot tell whose assertion of it stands, and a person's wish
 *   to stop its distribution is kept.
 * - Ratings, and the raters rows they need, go out only as each rater's recorded consent allows (raters.ts);
 *   a note is kept only when its rater shares notes.
 * - An annotation's rev is the version's own ref seq (the publisher refuses any other): it is left to the
 *   publisher.
 * - Media files and reference patches come from the library's objects folder.
 */
import { once } from 'node:events'
import { createWriteStream, type WriteStream } from 'node:fs'
import { copyFile, link, mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join, sep } from 'node:path'
import { openRegularFile } from '../core/input-file.js'
import { PipeError, UsageError } from '../core/errors.js'
import { parseTarget } from '../formats/pack/documents/documents.js'
import { mediaExtension, writeObject } from '../formats/pack/documents/store.js'
import { preparePack, signAndCommit, type PackDraft, type PrepareOptions, type PublishResult } from '../formats/pack/publish/publish.js'
import { keyPackSigner } from '../formats/pack/keys/pack-signer.js'
import type { SshPrivateKey } from '../formats/pack/keys/ssh-key.js'
import { findLatticeTiling } from '../formats/pack/geometry/tilings.js'
import { PACK_TABLES, type PackType } from '../formats/pack/tables/table-schemas.js'
import { EVENT_TABLES, Library, LIBRARY_CODES, rowTarget } from './library.js'
import { ConsentBook, type Withheld } from './raters.js'

export const LIBRARY_PUBLISH_CODES = {
  /** --id names no record the library holds, or is no content id. */
  noRecord: 'library.no-such-record',
  /** --query is not the form docs/library.md gives. */
  badQuery: 'library.bad-query',
  /** An object a row names is not in the library's objects folder. */
  objectMissing: 'library.object-missing',
} as const

/** The tables of records a selection chooses from, and the kind of target each is named by. */
const RECORD_TABLES = { patterns: 'pattern', ants: 'ant', quickstart: 'quickstart' } as const
type RecordTable = keyof typeof RECORD_TABLES

type Scalar = string | number | boolean | null

/** `--query`: the records of one table whose columns have the given values (a list: any of them). */
export interface LibraryQuery {
  table: RecordTable
  where: Record<string, Scalar | Scalar[]>
}

export interface LibrarySelection {
  /** Records by content id (a pattern's id, ant-..., qs-...) or by target (pattern:<id>, ...). */
  ids: readonly string[]
  query?: LibraryQuery
  /** false (--no-searches): ratings of search runs are left out. (The library holds no search runs themselves.) */
  searches: boolean
}

/** What the library held that the version does not carry, and why. */
export interface LibraryPublishReport {
  /** Records (patterns, ants, quickstart) written. */
  records: number
  /** Records left out because a retraction names them (with their events). */
  retracted: number
  /** Ratings left out, by why their rater's consent does not allow them. */
  ratingsWithheld: Record<Withheld, number>
  /** Score models naming a rater whose consent does not allow them. */
  scoreModelsWithheld: number
  /** Ratings written without their note, their rater not sharing notes. */
  notesStripped: number
  /** Ratings of search runs left out (--no-searches, or a selection of records). */
  searchRunRatings: number
}

/** Reads `--query` text: `{"table": "patterns", "where": {"class": "spaceship", "period": [3, 4]}}`. */
export function parseLibraryQuery(text: string): LibraryQuery {
  const bad = (why: string) => new UsageError(LIBRARY_PUBLISH_CODES.badQuery, `${why}; write {"table": "patterns"|"ants"|"quickstart", "where": {"column": value or [values], ...}}`, { location: { field: '--query' } })
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (err) {
    throw bad(`not JSON (${(err as Error).message})`)
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw bad('not a JSON object')
  const { table, where, ...rest } = doc as Record<string, unknown>
  if (Object.keys(rest).length > 0) throw bad(`unknown member ${Object.keys(rest)[0]}`)
  if (typeof table !== 'string' || !(table in RECORD_TABLES)) throw bad(`table ${JSON.stringify(table)} is no table of records`)
  if (typeof where !== 'object' || where === null || Array.isArray(where)) throw bad('where is not an object')
  const columns = new Set(PACK_TABLES[table as RecordTable].columns.map((c) => c.name))
  const isScalar = (v: unknown): v is Scalar => v === null || ['string', 'number', 'boolean'].includes(typeof v)
  for (const [column, value] of Object.entries(where)) {
    if (!columns.has(column)) throw bad(`${table} has no column ${column}`)
    if (!isScalar(value) && !(Array.isArray(value) && value.every(isScalar))) throw bad(`where.${column} is neither a value nor a list of values`)
  }
  return { table: table as RecordTable, where: where as LibraryQuery['where'] }
}

/** The target an `--id` names: a target as written, or a bare id (32 hex digits, ant-..., qs-...). */
function targetOfId(id: string): string {
  const target = id.includes(':') ? id : id.startsWith('ant-') ? `ant:${id}` : id.startsWith('qs-') ? `quickstart:${id}` : `pattern:${id}`
  const parsed = parseTarget(target)
  if (!parsed.ok || parsed.value.kind === 'search_run') throw new UsageError(LIBRARY_PUBLISH_CODES.noRecord, `${JSON.stringify(id)} is not the id of a pattern, ant or Quick Start entry`, { location: { field: '--id' } })
  return target
}

function matches(row: Record<string, unknown>, where: LibraryQuery['where']): boolean {
  return Object.entries(where).every(([column, want]) => (Array.isArray(want) ? want : [want]).some((v) => v === (row[column] ?? null)))
}

/**
 * A fact row with its struct members in the order the table's schema gives them. The library keeps a row
 * as RFC 8785 text, whose members are sorted; the publisher compares what a record states with what it
 * computes by their JSON text (publish-rows.ts agree), which a struct in another order fails.
 */
function inSchemaOrder(row: Record<string, unknown>, table: string): Record<string, unknown> {
  for (const c of PACK_TABLES[table as keyof typeof PACK_TABLES].columns) if (row[c.name] !== undefined) row[c.name] = ordered(row[c.name], c.type)
  return row
}

function ordered(value: unknown, type: PackType): unknown {
  if (value === null) return value
  if (type.kind === 'list') return (value as unknown[]).map((v) => ordered(v, type.element))
  if (type.kind !== 'struct') return value
  const struct = value as Record<string, unknown>
  return Object.fromEntries(type.fields.filter((f) => f.name in struct).map((f) => [f.name, ordered(struct[f.name], f.type)]))
}

/** Whether a column's values hold float64 numbers, at any depth. */
function holdsFloat(type: PackType): boolean {
  return type.kind === 'list' ? holdsFloat(type.element) : type.kind === 'struct' ? type.fields.some((f) => holdsFloat(f.type)) : type.kind === 'float64'
}

const TILING_FLOAT_COLUMNS = new Set(PACK_TABLES.tilings.columns.filter((c) => holdsFloat(c.type)).map((c) => c.name))

/**
 * A tilings record. The library keeps a row as JSON text, which has no negative zero, while a catalogue
 * tiling's geometry has some (the square's a2 is [-0, 1]) and its pin hashes their bits. So for a family
 * the catalogue holds, the float geometry is left for the publisher to take from the catalogue, and the
 * row's pin and hashes, stated, must agree with it: the row is the catalogue's, or it is refused.
 */
function tilingRecord(row: Record<string, unknown>): Record<string, unknown> {
  if (typeof row.family !== 'string' || findLatticeTiling(row.family) === undefined) return inSchemaOrder(row, 'tilings')
  return Object.fromEntries(Object.entries(row).filter(([column]) => !TILING_FLOAT_COLUMNS.has(column)))
}

/** One records file, made when its first row comes; written with the stream's backpressure. */
class RecordsFile {
  private out: WriteStream | undefined
  constructor(private readonly path: string) {}

  async write(row: Record<string, unknown>): Promise<void> {
    this.out ??= createWriteStream(this.path, { flags: 'wx' })
    if (!this.out.write(`${JSON.stringify(row)}\n`)) await once(this.out, 'drain')
  }

  async close(): Promise<void> {
    if (!this.out) return
    const done = once(this.out, 'close')
    this.out.end()
    await done
  }
}

/**
 * Writes the library's selected rows into `folder` as records, and the reference patches its tilings name
 * into `store` (a records folder has no place for them; the publisher finds them there by hash).
 */
export async function writeLibraryRecords(lib: Library, folder: string, store: string, sel: LibrarySelection): Promise<LibraryPublishReport> {
  const report: LibraryPublishReport = {
    records: 0, retracted: 0, ratingsWithheld: { withdrawn: 0, 'no-consent': 0, 'member-without-consent': 0 }, scoreModelsWithheld: 0, notesStripped: 0, searchRunRatings: 0,
  }
  const retracted = new Set<string>()
  for await (const r of lib.query('pack_retractions')) retracted.add(String(r.target))
  const chosen = await chosenTargets(lib, sel)
  // With a selection, what the chosen records need: the records written, their tilings and rules.
  const written = new Set<string>()
  const pinKeys = new Set<string>()
  const notations = new Set<string>()
  const needs = (row: Record<string, unknown>) => {
    if (typeof row.pin_key === 'string') pinKeys.add(row.pin_key)
    if (typeof row.rule === 'string') notations.add(row.rule)
  }
  const files = new Map<string, RecordsFile>()
  const file = (table: string) => {
    let f = files.get(table)
    if (!f) files.set(table, (f = new RecordsFile(join(folder, `${table}.jsonl`))))
    return f
  }
  try {
    for (const table of Object.keys(RECORD_TABLES) as RecordTable[]) {
      for await (const r of recordsOf(lib, table, chosen)) {
        if (r.retracted) {
          report.retracted++
          continue
        }
        if (chosen) {
          written.add(rowTarget(table, r.row)!)
          needs(r.row)
        }
        await file(table).write(inSchemaOrder(r.row, table))
        report.records++
      }
    }
    // Rows about a record go with it: with a selection, about a record written; else about any not retracted.
    const about = (target: string | undefined) => (chosen ? target !== undefined && written.has(target) : target === undefined || !retracted.has(target))
    for await (const e of lib.query('aliases')) {
      const row = e.row as Record<string, unknown>
      if (about(rowTarget('aliases', row))) await file('aliases').write(inSchemaOrder(row, 'aliases'))
    }

    const consent = await ConsentBook.read(lib)
    const named = new Set<string>()
    const media = new Set<string>()
    await mkdir(join(folder, 'media'))
    for (const table of EVENT_TABLES) {
      if (table === 'raters') continue // written below, for the raters the published rows name
      for await (const e of lib.query(table)) {
        const row = e.row as Record<string, unknown>
        const target = rowTarget(table, row)
        if (target?.startsWith('search_run:')) {
          // A rating of a search run: about no record, so never part of a selection.
          if (chosen || !sel.searches) {
            report.searchRunRatings++
            continue
          }
        } else if (!about(target)) continue
        if (table === 'ratings' || (table === 'score_models' && row.rater !== null)) {
          const release = consent.release(String(row.rater))
          if (!release.publish) {
            if (table === 'ratings') report.ratingsWithheld[release.why]++
            else report.scoreModelsWithheld++
            continue
          }
          if (table === 'ratings' && row.note !== null && !release.notes) {
            row.note = null
            report.notesStripped++
          }
          named.add(String(row.rater))
        }
        if (table === 'annotations') delete row.rev
        if (table === 'media') await mediaFile(lib, folder, row, media)
        if (chosen && (table === 'verifications' || table === 'sightings')) needs(row)
        await file(table).write(row)
      }
    }
    const ratersWritten = new Set<string>()
    for (const rater of [...named].sort()) {
      const release = consent.release(rater)
      if (!release.publish) continue
      for (const row of release.rows) {
        if (ratersWritten.has(String(row.rater))) continue
        ratersWritten.add(String(row.rater))
        await file('raters').write(row)
      }
    }

    for await (const e of lib.query('tilings')) {
      const row = e.row as Record<string, unknown>
      if (chosen && !pinKeys.has(String(row.pin_key))) continue
      if (typeof row.reference === 'string') await referencePatch(lib, store, row.reference)
      await file('tilings').write(tilingRecord(row))
    }
    for await (const e of lib.query('rules')) {
      const row = e.row as Record<string, unknown>
      if (!chosen || notations.has(String(row.notation))) await file('rules').write(inSchemaOrder(row, 'rules'))
    }
  } finally {
    for (const f of files.values()) await f.close()
  }
  return report
}

/** The targets a selection chooses, or undefined for every record; an --id the library lacks is refused. */
async function chosenTargets(lib: Library, sel: LibrarySelection): Promise<Set<string> | undefined> {
  if (sel.ids.length === 0 && sel.query === undefined) return undefined
  const chosen = new Set<string>()
  for (const id of sel.ids) {
    const target = targetOfId(id)
    const colon = target.indexOf(':')
    const table = (Object.keys(RECORD_TABLES) as RecordTable[]).find((t) => RECORD_TABLES[t] === target.slice(0, colon))!
    if (!lib.hasFact(table, target.slice(colon + 1))) throw new UsageError(LIBRARY_PUBLISH_CODES.noRecord, `the library holds no record ${JSON.stringify(id)}`, { location: { field: '--id' } })
    chosen.add(target)
  }
  if (sel.query) {
    const { table, where } = sel.query
    // Only which records match: in any order, no sort.
    for await (const r of lib.factsAnyOrder(table)) if (matches(r.row as Record<string, unknown>, where)) chosen.add(rowTarget(table, r.row as Record<string, unknown>)!)
  }
  return chosen
}

/** The rows of one record table: every one, or those of the chosen targets. */
async function* recordsOf(lib: Library, table: RecordTable, chosen: Set<string> | undefined): AsyncGenerator<{ row: Record<string, unknown>; retracted: boolean }> {
  const prefix = `${RECORD_TABLES[table]}:`
  // In id order: a publish sorts its rows a chunk at a time, so the order they come in shapes its parts,
  // which must depend on what the library holds, not on how it came to hold it.
  const rows = chosen === undefined ? lib.query(table) : chosenRows(lib, table, [...chosen].filter((t) => t.startsWith(prefix)).sort().map((t) => t.slice(prefix.length)))
  for await (const r of rows) yield { row: r.row as Record<string, unknown>, retracted: r.retracted === true }
}

async function* chosenRows(lib: Library, table: RecordTable, ids: readonly string[]): AsyncGenerator<Record<string, unknown>> {
  for (const id of ids) yield* lib.query(table, id)
}

/** A media row's file: its object linked (else copied) from the library into the records folder, named in `file`. */
async function mediaFile(lib: Library, folder: string, row: Record<string, unknown>, placed: Set<string>): Promise<void> {
  const ext = mediaExtension(row.media_type)
  if (!ext.ok) throw new PipeError(ext.code, `a media row of ${String(row.target)}: ${ext.detail}`)
  const object = String(row.object)
  const file = `media/${object.slice('sha256:'.length)}.${ext.value}`
  if (!placed.has(file)) {
    const from = lib.objectFile(object, ext.value)
    const to = join(folder, file)
    await link(from, to).catch(() => copyFile(from, to)).catch((err: NodeJS.ErrnoException) => {
      throw new PipeError(LIBRARY_PUBLISH_CODES.objectMissing, `media ${object} of ${String(row.target)}: ${err.code === 'ENOENT' ? 'not in the library\'s objects folder' : err.message}`, { location: { file: from } })
    })
    placed.add(file)
  }
  // The publisher takes object and bytes from the file.
  delete row.object
  delete row.bytes
  row.file = file
}

/** A tilings row's reference patch, into the store from the library (checked against its name as it is written). */
async function referencePatch(lib: Library, store: string, reference: string): Promise<void> {
  const from = lib.objectFile(reference, 'parquet')
  const { fh } = await openRegularFile(from, { noFollow: true }).catch((err: NodeJS.ErrnoException) => {
    throw new PipeError(LIBRARY_PUBLISH_CODES.objectMissing, `reference patch ${reference}: ${err.code === 'ENOENT' ? 'not in the library\'s objects folder' : err.message}`, { location: { file: from } })
  })
  const written = await writeObject(store, fh.createReadStream({ autoClose: false }), 'parquet').finally(() => fh.close())
  if (written.hash !== reference) throw new PipeError(LIBRARY_CODES.objectHash, `the library's reference patch ${reference} hashes to ${written.hash}`, { location: { file: from } })
}

export interface LibraryPrepareOptions extends Omit<PrepareOptions, 'records'> {
  library: string
  selection: LibrarySelection
}

export type LibraryPublishOptions = Omit<LibraryPrepareOptions, 'publicKey'> & { key: SshPrivateKey }

/** Publishes the library's selection as a new version of `o.feed` in `o.store`, signed with `o.key`. */
export async function publishFromLibrary(o: LibraryPublishOptions): Promise<PublishResult & { library: LibraryPublishReport }> {
  const { key, ...rest } = o
  const { draft, library } = await prepareFromLibrary({ ...rest, publicKey: key.publicKey })
  return { ...(await signAndCommit(draft, keyPackSigner(key))), library }
}

/** Draws up the library's selection as a new version (preparePack), through a records folder removed afterwards. */
export async function prepareFromLibrary(o: LibraryPrepareOptions): Promise<{ draft: PackDraft; library: LibraryPublishReport }> {
  const { library, selection, ...publish } = o
  const folder = await mkdtemp(join(tmpdir(), 'pipe-library-records-'))
  try {
    const lib = Library.open(library)
    let report: LibraryPublishReport
    try {
      report = await writeLibraryRecords(lib, folder, o.store, selection)
    } finally {
      lib.close()
    }
    return { draft: await preparePack({ ...publish, records: folder }), library: report }
  } catch (err) {
    throw inLibrary(err, folder, library)
  } finally {
    await rm(folder, { recursive: true, force: true })
  }
}

/** A refusal at a line of the records folder, which is removed: named by the library and the table whose rows it wrote. */
function inLibrary(err: unknown, folder: string, library: string): unknown {
  const file = err instanceof PipeError ? err.location?.file : undefined
  if (file === undefined || !file.startsWith(folder + sep)) return err
  const e = err as PipeError
  const where = `the library's ${basename(file, '.jsonl')} rows as written for this publish${e.location?.line !== undefined ? `, row ${e.location.line}` : ''}`
  return new PipeError(e.code, `${e.message} (${where})`, { exitCode: e.exitCode, location: { file: library, ...(e.location?.field !== undefined ? { field: e.location.field } : {}) } })
}

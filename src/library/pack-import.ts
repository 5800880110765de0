/**
 * `pipe run pack-import`: one version of a pack store taken into the library (pack format 1.0,
 * "Importing"), in one transaction. The version is checked first, by the conformance checker, at level 2
 * (format, requires, signatures and keys, every object's hash and size, ids against identities and pins,
 * typed phases, tiling pins) or, with `verify: 'full'`, level 3 (every replayable pattern replayed): any
 * failure refuses the pack before the library is touched. Then its rows are merged by content id, its
 * events kept under their publisher, its media and reference patches stored by hash and its retractions
 * flagged. Nothing from the pack is ever run. Importing a version the library has already taken changes
 * nothing. (docs/library.md, "Importing")
 */
import { stat } from 'node:fs/promises'
import canonicalize from 'canonicalize'
import { PipeError, UsageError } from '../core/errors.js'
import { CHECK_CODES, PackChecker, packKind, type CheckIssue } from '../formats/pack/check/check.js'
import type { Revocation } from '../formats/pack/keys/key-statements.js'
import { walkTableIndex } from '../formats/pack/documents/index-walk.js'
import { objectPath, storeFile, storeIndexLoader, verifyObjectFile } from '../formats/pack/documents/store.js'
import { chooseManifest } from '../formats/pack/export/export.js'
import { partRowsOrRefuse } from '../formats/pack/tables/parquet-read.js'
import { PACK_TABLES, type TableSchema } from '../formats/pack/tables/table-schemas.js'
import { EVENT_TABLES, eventKey, FACT_TABLES, Library, type EventTable, type FactTable, type LibraryChange } from './library.js'

export const IMPORT_CODES = {
  /** The version failed a check an importer makes: the first failure is named. */
  refused: 'import.refused',
  /** With --strict, a fact row for an id the library has, with other values. */
  factDiffers: 'import.fact-differs',
  /** Not a store (an export, a tar or a URL are not read by this importer yet). */
  notAStore: 'import.not-a-store',
} as const

export interface PackImportOptions {
  /** The store's folder. */
  from: string
  library: string
  feed?: string
  /** A version other than the feed's newest, by its manifest hash. */
  manifest?: string
  /** `none`: checks up to level 2; `full`: level 3 too, every replayable pattern replayed. */
  verify: 'none' | 'full'
  /** Take a version no signature of its publisher makes signed (a signature that does not verify is still refused). */
  allowUnsigned: boolean
  /** A fact row for an id the library has must be identical. */
  strict: boolean
  signal?: AbortSignal
  /** The import's times (tests); default now. */
  now?: () => string
}

export interface PackImportResult {
  manifest: string
  feed: string
  publisher: string
  /** The library had taken this version before: nothing changed. */
  already: boolean
  factsAdded: number
  eventsAdded: number
  objectsAdded: number
  retractionsAdded: number
  /** Fact rows for ids the library has, with other values (kept as the library has them). */
  factsDiffering: number
  /** Rows of or about retracted records the library did not hold: not added. */
  rowsSkipped: number
}

const FACTS: ReadonlySet<string> = new Set(FACT_TABLES)
const EVENTS: ReadonlySet<string> = new Set(EVENT_TABLES)
const MEDIA_EXTENSIONS: Readonly<Record<string, 'png' | 'gif' | 'webp'>> = { 'image/png': 'png', 'image/gif': 'gif', 'image/webp': 'webp' }

export async function importPack(o: PackImportOptions): Promise<PackImportResult> {
  const now = o.now ?? (() => new Date().toISOString().replace(/\.\d+Z$/, 'Z'))
  const started = now()
  const kind = await packKind(o.from)
  if (kind !== 'store') {
    throw new UsageError(IMPORT_CODES.notAStore, kind === 'export'
      ? `${o.from} is an export: pack-import reads a store folder (jetcarp-store.json) for now`
      : `${o.from} holds no jetcarp-store.json, so it is no store`, { location: { file: o.from } })
  }
  const version = await chooseManifest(o.from, { ...(o.feed !== undefined ? { feed: o.feed } : {}), ...(o.manifest !== undefined ? { manifest: o.manifest } : {}) })
  const { hash, manifest } = version

  // The revocations the library has seen stay in force, whatever statements the store serves now.
  const known = await knownRevocations(o.library)
  const checker = new PackChecker(o.from, { level: o.verify === 'full' ? 3 : 2, knownRevocations: known, ...(o.signal ? { signal: o.signal } : {}) })
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

  const lib = Library.open(o.library, { create: true })
  try {
    const result: PackImportResult = {
      manifest: hash, feed: manifest.feed, publisher: manifest.publisher, already: false,
      factsAdded: 0, eventsAdded: 0, objectsAdded: 0, retractionsAdded: 0, factsDiffering: 0, rowsSkipped: 0,
    }
    if (lib.hasImported(hash)) return { ...result, already: true }
    // A retracted record the library lacks: nothing of it is added (the record, its events, ratings or media).
    const lacking = new Set(manifest.retracts.map((r) => r.target).filter((target) => !holds(lib, target)))
    const counts = await lib.change({ manifest: hash, publisher: manifest.publisher, feed: manifest.feed, source: o.from, started, finished: now() }, async (c) => {
      const loader = storeIndexLoader(o.from)
      for (const [table, root] of Object.entries(manifest.tables).sort(([a], [b]) => (a < b ? -1 : 1))) {
        const schema = (PACK_TABLES as Record<string, TableSchema>)[table]
        if (!schema) continue // a table this reader does not know: ignored, as the spec asks (pack-check notes it)
        for await (const e of walkTableIndex(root, loader, { table })) {
          if (e.kind !== 'part') continue
          for await (const row of partRows(o.from, e.part.object, schema)) {
            o.signal?.throwIfAborted()
            const target = targetOf(table, row)
            if (target !== undefined && lacking.has(target)) {
              result.rowsSkipped++
              continue
            }
            await keepRow(c, o, table, schema, row, manifest.publisher, result)
          }
        }
      }
      // "The importer adds nothing for it ... and records only the retraction."
      for (const r of manifest.retracts) c.retract(r.target, r.publisher, hash)
      for (const r of checker.revocations) c.revoke(r.fingerprint, r.revokedBy, manifest.publisher, hash, started)
    })
    return { ...result, factsAdded: counts.factsAdded, eventsAdded: counts.eventsAdded, objectsAdded: counts.objectsAdded, retractionsAdded: counts.retractionsAdded }
  } finally {
    lib.close()
  }
}

/** The revocations of the library at `path`, or none when there is no library there yet. */
async function knownRevocations(path: string): Promise<Revocation[]> {
  if (!(await stat(path).then(() => true, () => false))) return []
  const lib = Library.open(path)
  try {
    return lib.revocations()
  } finally {
    lib.close()
  }
}

/** The fact table of each kind of record a target names (`pattern:<id>`, `ant:<id>`, `quickstart:<id>`). */
const TARGET_TABLES: Readonly<Record<string, FactTable>> = { pattern: 'patterns', ant: 'ants', quickstart: 'quickstart' }

/** Whether the library holds the record a target names (a search run is no record of the library's tables). */
function holds(lib: Library, target: string): boolean {
  const colon = target.indexOf(':')
  const table = TARGET_TABLES[target.slice(0, colon)]
  return table !== undefined && [...lib.query(table, target.slice(colon + 1))].length > 0
}

/** The record a row is of or about, as a target; undefined for rows of no record (tilings, rules, raters ...). */
function targetOf(table: string, row: Record<string, unknown>): string | undefined {
  switch (table) {
    case 'patterns': return `pattern:${String(row.id)}`
    case 'ants': return `ant:${String(row.id)}`
    case 'quickstart': return `quickstart:${String(row.id)}`
    case 'verifications': case 'sightings': return `pattern:${String(row.pattern_id)}`
    case 'provenance': case 'annotations': case 'media': case 'ratings': return typeof row.target === 'string' ? row.target : undefined
    default: return undefined
  }
}

async function keepRow(c: LibraryChange, o: PackImportOptions, table: string, schema: TableSchema, row: Record<string, unknown>, manifestPublisher: string, result: PackImportResult): Promise<void> {
  const text = rowText(row)
  const key = eventKey(schema.sortColumns.map((col) => row[col]))
  if (FACTS.has(table)) {
    const kept = c.fact(table as FactTable, key, text)
    if (kept === 'differs') {
      if (o.strict) throw new PipeError(IMPORT_CODES.factDiffers, `${table} ${key.replaceAll('\u001f', ' ')}: the library holds this record with other values (--strict); nothing was imported`)
      result.factsDiffering++
    }
    if (table === 'tilings' && typeof row.reference === 'string') await keepObject(c, o.from, row.reference, 'parquet')
    return
  }
  if (!EVENTS.has(table)) return
  const publisher = typeof row.publisher === 'string' ? row.publisher : manifestPublisher
  c.event(table as EventTable, publisher, key, text)
  if (table === 'media' && typeof row.object === 'string') {
    const ext = MEDIA_EXTENSIONS[String(row.media_type)]
    if (ext) await keepObject(c, o.from, row.object, ext)
  }
}

/** An object the rows name, copied from the store; the library hashes it as it copies, and names it only if it is right. */
async function keepObject(c: LibraryChange, from: string, hash: string, ext: 'parquet' | 'png' | 'gif' | 'webp'): Promise<void> {
  await c.object(hash, ext, { path: storeFile(from, objectPath(hash, ext)) })
}

/** A part's rows, its object hash-checked first (the check before did too; the bytes read now are these). */
async function* partRows(from: string, object: string, schema: TableSchema): AsyncGenerator<Record<string, unknown>> {
  const path = storeFile(from, objectPath(object, 'parquet'))
  const ok = await verifyObjectFile(path, object)
  if (!ok.ok) throw new PipeError(ok.code, `${schema.name} part ${object}: ${ok.detail}`)
  yield* partRowsOrRefuse(path, schema, `${schema.name} part ${object}`)
}

/** A row as RFC 8785 text: an int64 within ±2^53 as a number, beyond as its decimal string. */
export function rowText(row: Record<string, unknown>): string {
  const text = canonicalize(jsonable(row))
  if (text === undefined) throw new PipeError('import.row-not-json', 'a row has no JSON form')
  return text
}

function jsonable(v: unknown): unknown {
  if (typeof v === 'bigint') return v >= -(2n ** 53n) + 1n && v <= 2n ** 53n - 1n ? Number(v) : v.toString()
  if (Array.isArray(v)) return v.map(jsonable)
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonable(x)]))
  return v
}

/**
 * The manifest (pack format 1.0, "The manifest", "Retractions"): one complete version of a pack, an
 * object whose hash is the version's id. buildManifest writes it from typed input; parseManifest reads
 * it from hostile bytes. Both apply the same rules: the builder checks what it wrote by parsing it.
 *
 * Members the reader needs are required (format, version, feed, created, publisher, licence, engine,
 * tables); the rest read as empty when absent, and the builder always writes them. Unknown members are
 * ignored everywhere, inside known members too: the typed result holds only the members defined here,
 * while the hash covers the bytes as they are.
 */
import {
  DOCUMENT_VERSION,
  checkFormatAndVersion,
  expectArray,
  expectFingerprint,
  expectHash,
  expectInteger,
  expectObject,
  expectRecord,
  expectString,
  expectTime,
  isFeedName,
  isTableName,
  isUuid,
  member,
  objectHash,
  parseTarget,
  parseWith,
  quote,
  refuse,
  SEMANTICS_VERSION_RE,
  writeChecked,
  type BuiltDocument,
  type JsonObject,
  type PackResult,
} from './documents.js'

export const MANIFEST_FORMAT = 'jetcarp-pack'

/** Stable codes of manifest findings (besides the shared pack.json-*, pack.hash-*, pack.version-* ones). */
export const MANIFEST_CODES = {
  /** A member is missing where required, or of the wrong type or form. */
  invalid: 'pack.manifest-invalid',
  /** requires names a feature; format 1.0 defines none, so a 1.0 reader refuses any. */
  requiresUnknown: 'pack.requires-unknown',
} as const

export interface Creator {
  name: string
  orcid?: string
  role: string
}

export interface RelatedIdentifier {
  relation: string
  id: string
}

export interface EngineSchemes {
  ant: string
  geometry: string
  pattern: string
  tables: string
}

export interface Engine {
  name: string
  version: string
  schemes: EngineSchemes
  /** Every rule family's semantics version: a positive integer written as a string. */
  rule_semantics: Record<string, string>
}

export interface Retraction {
  target: string
  /** The fingerprint of the publisher whose assertions it withdraws. */
  publisher: string
  reason: string
  date: string
}

/** Counts for people; not authoritative. */
export interface ManifestStats {
  ants: number
  /** Bytes of the distinct parts of the tables' indexes and of the searches' segments and score sidecars. */
  bytes: number
  patterns: number
  quickstart: number
}

export interface Manifest {
  created: string
  creators: Creator[]
  description: string
  doi: string
  engine: Engine
  feed: string
  /** Which subset a slice names, for people: any JSON value. */
  filter?: unknown
  format: typeof MANIFEST_FORMAT
  licence: string
  /** Earlier manifests' hashes, the feed's previous version first. Never needed to read this version. */
  parents: string[]
  publisher: string
  related: RelatedIdentifier[]
  requires: string[]
  retain: string[]
  retracts: Retraction[]
  /** {search uuid: search index hash}. */
  searches: Record<string, string>
  slice_of?: string
  /** As written: a reader does not rely on them, so a missing count is simply absent. */
  stats: Partial<ManifestStats>
  /** {table: index hash}. */
  tables: Record<string, string>
  title: string
  version: string
  version_label: string
}

export interface ManifestInput {
  feed: string
  title: string
  description?: string
  version_label?: string
  created: string
  licence: string
  creators?: Creator[]
  doi?: string
  related?: RelatedIdentifier[]
  parents?: string[]
  publisher: string
  engine: Engine
  tables: Record<string, string>
  searches?: Record<string, string>
  retracts?: Retraction[]
  retain?: string[]
  stats: ManifestStats
  slice_of?: string
  filter?: unknown
}

const nfc = (s: string) => (typeof s === 'string' ? s.normalize('NFC') : s)

/**
 * Builds a manifest: format jetcarp-pack, version 1.0, no requires, every member written (empty lists
 * and objects, '' for absent text), people's text in NFC. Throws a PipeError with the finding's code
 * when the result would be refused by parseManifest.
 */
export function buildManifest(input: ManifestInput): BuiltDocument<Manifest> {
  const doc: Manifest = {
    created: input.created,
    creators: (input.creators ?? []).map((c) => ({ ...c, name: nfc(c.name), role: nfc(c.role) })),
    description: nfc(input.description ?? ''),
    doi: input.doi ?? '',
    engine: input.engine,
    feed: input.feed,
    format: MANIFEST_FORMAT,
    licence: input.licence,
    parents: input.parents ?? [],
    publisher: input.publisher,
    related: input.related ?? [],
    requires: [],
    retain: input.retain ?? [],
    retracts: (input.retracts ?? []).map((r) => ({ ...r, reason: nfc(r.reason) })),
    searches: input.searches ?? {},
    stats: input.stats,
    tables: input.tables,
    title: nfc(input.title),
    version: DOCUMENT_VERSION,
    version_label: nfc(input.version_label ?? ''),
  }
  if (input.slice_of !== undefined) doc.slice_of = input.slice_of
  if (input.filter !== undefined) doc.filter = input.filter
  const { bytes, parsed } = writeChecked(doc, parseManifest, 'manifest')
  return { document: parsed.manifest, bytes, hash: parsed.hash }
}

export interface ParsedManifest {
  manifest: Manifest
  /** The version's minor (a higher minor than 0 is read, its unknown members ignored). */
  minor: number
  /** The manifest's hash: the version's id. */
  hash: string
}

/** Reads a manifest from its bytes, checking every rule of "Encodings" and every member of "The manifest". Never throws. */
export function parseManifest(bytes: Uint8Array): PackResult<ParsedManifest> {
  return parseWith(bytes, (value) => {
    const { doc, minor } = checkFormatAndVersion(value, MANIFEST_FORMAT)
    return { manifest: readManifest(doc), minor, hash: objectHash(bytes) }
  })
}

const INVALID = MANIFEST_CODES.invalid
const ORCID_RE = /^[0-9]{4}-[0-9]{4}-[0-9]{4}-[0-9]{3}[0-9X]$/
const SPDX_ID_RE = /^[A-Za-z0-9][A-Za-z0-9.+-]{0,63}$/
const FAMILY_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/

function readManifest(d: JsonObject): Manifest {
  const requires = expectArray(member(d, 'requires', []), INVALID, 'requires')
  if (requires.length > 0) refuse(MANIFEST_CODES.requiresUnknown, `requires ${quote(requires[0])}: format 1.0 defines no required features, so this reader cannot use the pack`)

  const feed = member(d, 'feed')
  if (!isFeedName(feed)) refuse(INVALID, `feed ${quote(feed)} is not 1 to 64 letters, digits and -`)
  const licence = member(d, 'licence')
  if (typeof licence !== 'string' || !SPDX_ID_RE.test(licence)) refuse(INVALID, `licence ${quote(licence)} is not an SPDX identifier`)

  const manifest: Manifest = {
    created: expectTime(member(d, 'created'), INVALID, 'created'),
    creators: expectArray(member(d, 'creators', []), INVALID, 'creators').map((c, i) => readCreator(c, `creators[${i}]`)),
    description: optionalText(d, 'description'),
    doi: optionalText(d, 'doi'),
    engine: readEngine(member(d, 'engine')),
    feed,
    format: MANIFEST_FORMAT,
    licence,
    parents: expectArray(member(d, 'parents', []), INVALID, 'parents').map((h, i) => expectHash(h, `parents[${i}]`, false)),
    publisher: expectFingerprint(member(d, 'publisher'), INVALID, 'publisher'),
    related: expectArray(member(d, 'related', []), INVALID, 'related').map((r, i) => readRelated(r, `related[${i}]`)),
    requires: [],
    retain: expectArray(member(d, 'retain', []), INVALID, 'retain').map((h, i) => expectHash(h, `retain[${i}]`, false)),
    retracts: expectArray(member(d, 'retracts', []), INVALID, 'retracts').map((r, i) => readRetraction(r, `retracts[${i}]`)),
    searches: expectRecord(member(d, 'searches', {}), INVALID, 'searches', (uuid, h) => {
      if (!isUuid(uuid)) refuse(INVALID, `searches names ${quote(uuid)}, not a lower-case uuid`)
      return expectHash(h, `searches.${uuid}`, true)
    }),
    stats: readStats(member(d, 'stats', {})),
    tables: expectRecord(member(d, 'tables'), INVALID, 'tables', (table, h) => {
      if (!isTableName(table)) refuse(INVALID, `tables names ${quote(table)}, not a table name`)
      return expectHash(h, `tables.${table}`, true)
    }),
    title: optionalText(d, 'title'),
    // As written (checked by checkFormatAndVersion), so a 1.1 manifest reads back as 1.1.
    version: member(d, 'version') as string,
    version_label: optionalText(d, 'version_label'),
  }
  const sliceOf = member(d, 'slice_of')
  if (sliceOf !== undefined) manifest.slice_of = expectHash(sliceOf, 'slice_of', false)
  const filter = member(d, 'filter')
  if (filter !== undefined) manifest.filter = filter
  return manifest
}

function optionalText(d: JsonObject, name: string): string {
  return expectString(member(d, name, ''), INVALID, name)
}

function readCreator(v: unknown, where: string): Creator {
  const o = expectObject(v, INVALID, where)
  const creator: Creator = {
    name: expectString(member(o, 'name'), INVALID, `${where}.name`, { nonEmpty: true }),
    role: expectString(member(o, 'role'), INVALID, `${where}.role`, { nonEmpty: true }),
  }
  const orcid = member(o, 'orcid')
  if (orcid !== undefined) {
    if (typeof orcid !== 'string' || !ORCID_RE.test(orcid)) refuse(INVALID, `${where}.orcid ${quote(orcid)} is not an ORCID iD (0000-0002-1825-0097)`)
    creator.orcid = orcid
  }
  return creator
}

function readRelated(v: unknown, where: string): RelatedIdentifier {
  const o = expectObject(v, INVALID, where)
  return {
    relation: expectString(member(o, 'relation'), INVALID, `${where}.relation`, { nonEmpty: true }),
    id: expectString(member(o, 'id'), INVALID, `${where}.id`, { nonEmpty: true }),
  }
}

function readEngine(v: unknown): Engine {
  const o = expectObject(v, INVALID, 'engine')
  const schemes = expectObject(member(o, 'schemes'), INVALID, 'engine.schemes')
  const scheme = (name: keyof EngineSchemes) => expectString(member(schemes, name), INVALID, `engine.schemes.${name}`, { nonEmpty: true })
  return {
    name: expectString(member(o, 'name'), INVALID, 'engine.name', { nonEmpty: true }),
    version: expectString(member(o, 'version'), INVALID, 'engine.version', { nonEmpty: true }),
    schemes: { ant: scheme('ant'), geometry: scheme('geometry'), pattern: scheme('pattern'), tables: scheme('tables') },
    rule_semantics: expectRecord(member(o, 'rule_semantics'), INVALID, 'engine.rule_semantics', (family, version) => {
      if (!FAMILY_RE.test(family)) refuse(INVALID, `engine.rule_semantics names ${quote(family)}, not a rule family id`)
      if (typeof version !== 'string' || !SEMANTICS_VERSION_RE.test(version)) {
        refuse(INVALID, `engine.rule_semantics.${family} ${quote(version)} is not a positive integer written as a string`)
      }
      return version
    }),
  }
}

function readRetraction(v: unknown, where: string): Retraction {
  const o = expectObject(v, INVALID, where)
  const target = member(o, 'target')
  const t = parseTarget(target)
  if (!t.ok) refuse(t.code, `${where}.target: ${t.detail}`)
  return {
    target: target as string,
    publisher: expectFingerprint(member(o, 'publisher'), INVALID, `${where}.publisher`),
    reason: expectString(member(o, 'reason'), INVALID, `${where}.reason`),
    date: expectTime(member(o, 'date'), INVALID, `${where}.date`),
  }
}

function readStats(v: unknown): Partial<ManifestStats> {
  const o = expectObject(v, INVALID, 'stats')
  const stats: Partial<ManifestStats> = {}
  for (const name of ['ants', 'bytes', 'patterns', 'quickstart'] as const) {
    const n = member(o, name)
    if (n !== undefined) stats[name] = expectInteger(n, INVALID, `stats.${name}`, 0)
  }
  return stats
}

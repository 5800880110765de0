/**
 * Small stores and exports for the pack-check tests, made with the pack modules themselves: rows from real
 * runs (findPeriod, runAnt), ids from identity.ts, tilings rows from tilings.ts and penrose.ts, parts from
 * PackPartWriter, documents from the doc-* builders, keys from fixed seeds. Hooks let a test write what a
 * publisher must not (another schema id, a lying index, other manifest bytes) while everything around it
 * stays signed and consistent, so each damage breaks one rule.
 */
import { cp, mkdir, readFile, unlink } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { buildSearchIndex, buildTableIndex, type TablePart } from '../src/formats/pack/documents/doc-index.js'
import { buildManifest, parseManifest, type Manifest } from '../src/formats/pack/documents/doc-manifest.js'
import { buildRef, signRef } from '../src/formats/pack/documents/doc-ref.js'
import { objectHash, storeDocumentBytes, writePackJson } from '../src/formats/pack/documents/documents.js'
import { antId, antIdentity, patternIdentity, patternId, quickstartId, type PatternClass } from '../src/formats/pack/records/identity.js'
import { firstKeyStatement, keyStatementBytes, keyStatementSignerName, type KeyStatementDocument } from '../src/formats/pack/keys/key-statements.js'
import { PackPartWriter } from '../src/formats/pack/tables/parquet-write.js'
import { patchHashes } from '../src/formats/pack/geometry/geometry.js'
import { PENROSE_KD_FAMILY, penrosePatch } from '../src/formats/pack/geometry/penrose.js'
import type { PatternCell } from '../src/formats/pack/check/replay-automaton.js'
import { findPeriod } from '../src/formats/pack/check/replay.js'
import { fingerprint, generateKey, signerName, type SshPrivateKey } from '../src/formats/pack/keys/ssh-key.js'
import { NS_MANIFEST, signSshsig } from '../src/formats/pack/keys/sshsig.js'
import {
  STORE_DOCUMENT_PATH,
  keyPath,
  objectPath,
  planExport,
  refPath,
  signaturePath,
  storeIndexLoader,
  writeObject,
  writeStoreFile,
  type MediaFile,
} from '../src/formats/pack/documents/store.js'
import { EXPLORE_RUNS_SCHEMA, EXPLORE_SCORES_SCHEMA, PACK_TABLES, REFERENCE_PATCH_SCHEMA, rowComparator, type TableSchema } from '../src/formats/pack/tables/table-schemas.js'
import { findLatticeTiling, latticeGeometry, latticeTilingRow } from '../src/formats/pack/geometry/tilings.js'
import { LIFE, STAR_WARS, antRecord, type SampleRule } from '../src/sim/pack-records.js'
import { ByteWriter } from 'hyparquet-writer'
import { serializeTCompactProtocol } from 'hyparquet-writer/src/thrift.js'

export type Row = Record<string, unknown>

export const T0 = '2026-11-11T00:00:00Z'
export const PUBLISHER = generateKey({ seed: Buffer.alloc(32, 41), comment: 'check publisher' })
export const SUCCESSOR = generateKey({ seed: Buffer.alloc(32, 42), comment: 'check successor' })
export const PUBLISHER_ID = fingerprint(PUBLISHER.publicKey)
export const FEED = 'check-a'
export const SEARCH = '4f1c2b3a-5d6e-4f70-8a9b-0c1d2e3f4a5b'
export const ENGINE = {
  name: 'pipe',
  version: '0.1.0',
  schemes: { ant: 'jetcarp-ant-v1', geometry: 'jetcarp-geometry-v1', pattern: 'jetcarp-pattern-v3', tables: 'jetcarp-tables-1' },
  rule_semantics: { ant: '1', bs: '1', generations: '1' },
}

// ---------------------------------------------------------------------------------------------------
// Rows

export const SQUARE = latticeTilingRow(findLatticeTiling('square')!) as unknown as Row
const SQUARE_GEOMETRY = latticeGeometry(findLatticeTiling('square')!)
/**
 * The Penrose kite-and-dart patch the tests' packs use: level 4 of penrose.ts's construction (265 tiles)
 * rather than the reference level 7 (4,885 tiles, a second to build), since any patch whose pin follows
 * from its rows is one a checker must accept.
 */
const PENROSE_TEST_LEVEL = 4
let penrosePatchRows: ReturnType<typeof penrosePatch>['rows'] | undefined
const testPatch = () => (penrosePatchRows ??= penrosePatch(PENROSE_TEST_LEVEL).rows)

/** Its tilings row (buildStore fills in the reference). */
export function penroseRow(): Row {
  const rows = testPatch()
  const h = patchHashes(rows)
  return {
    pin_key: PENROSE_KD_FAMILY, pin: h.pin, polygon_hash: h.polygon_hash, neighbour_hash: h.neighbour_hash, name: 'Penrose kite and dart', kind: 'aperiodic',
    family: PENROSE_KD_FAMILY, params: null, edges: null, tiling_group: PENROSE_KD_FAMILY, a1: null, a2: null, tile_types: null, edge: null, touch: null,
    reference_level: PENROSE_TEST_LEVEL, reference: null, reference_tiles: rows.length,
  }
}

const modelOf = (r: SampleRule) => (r.states === 2 ? 'bs' : `generations:${r.states}`)
const familyOf = (r: SampleRule) => (r.states === 2 ? 'bs' : 'generations')

export function ruleRow(r: SampleRule): Row {
  return { notation: r.notation, neighbourhood: r.neighbourhood, steps_per_gen: r.steps_per_gen, family: familyOf(r), semantics: '1', states: r.states, birth: BigInt(r.birth), survive: BigInt(r.survive) }
}

/** What a pattern row states about itself, so that a test can state something else (the id still follows). */
export interface PatternClaims {
  class?: PatternClass
  period?: number
  dx?: number
  dy?: number
  phases?: PatternCell[][]
  /** The exact rule a puffer, mover, gun or other states (in its identity and rule column). */
  rule?: string
}

/** A square-grid pattern row from running phase 0 (cells [i, j] or [i, j, s]) in `rule`. */
export function patternRow(rule: SampleRule, cells: readonly (readonly number[])[], claims: PatternClaims = {}): Row {
  const found = findPeriod({ geometry: SQUARE_GEOMETRY, rule: { ...rule, birth: BigInt(rule.birth), survive: BigInt(rule.survive) }, cells: cells.map(([i, j, s]) => ({ i: i!, j: j!, k: 0, s: s ?? 1 })) })
  if (found.outcome !== 'periodic') throw new Error(`not periodic in ${rule.notation}`)
  const facts = { class: found.class, period: found.period, dx: found.dx, dy: found.dy, phases: found.phases, ...claims }
  const { identity, phases, canonical } = patternIdentity({ pinKey: 'square', model: modelOf(rule), neighbourhood: rule.neighbourhood, stepsPerGen: rule.steps_per_gen, tileTypes: 1, ...facts, rule: claims.rule ?? null })
  const sizes = phases.map((p) => p.length)
  return {
    id: patternId(identity, SQUARE.pin as string), identity, pin_key: 'square', pin: SQUARE.pin, model: modelOf(rule), neighbourhood: rule.neighbourhood,
    steps_per_gen: rule.steps_per_gen, class: facts.class, period: BigInt(facts.period), dx: facts.dx, dy: facts.dy, speed: null,
    cells: sizes[0], min_cells: Math.min(...sizes), max_cells: Math.max(...sizes), phases, canonical, rule: claims.rule ?? null, site: null, gun: null,
    family: familyOf(rule), semantics: '1', class_group: facts.class, tiling_group: 'square',
  }
}

/** A Penrose pattern: level 3 does not replay it; its id and tiling are checked like any other. */
function penrosePattern(penrose: Row): Row {
  const phases = [[{ i: 0, j: 0, k: 0, s: 1 }, { i: 1, j: 0, k: 0, s: 1 }]]
  const { identity, canonical } = patternIdentity({ pinKey: 'penrose-kd', model: 'bs', neighbourhood: 'edge', stepsPerGen: 1, class: 'still_life', period: 1, dx: 0, dy: 0, phases, tileTypes: 1 })
  return {
    id: patternId(identity, penrose.pin as string), identity, pin_key: 'penrose-kd', pin: penrose.pin, model: 'bs', neighbourhood: 'edge', steps_per_gen: 1,
    class: 'still_life', period: 1n, dx: 0, dy: 0, speed: null, cells: 2, min_cells: 2, max_cells: 2, phases, canonical, rule: null, site: null, gun: null,
    family: 'bs', semantics: '1', class_group: 'still_life', tiling_group: 'penrose-kd',
  }
}

export const BLOCK = [[0, 0], [1, 0], [0, 1], [1, 1]]
export const BLINKER = [[0, 1], [1, 1], [2, 1]]
export const GLIDER = [[0, 0], [0, 1], [0, 2], [1, 0], [2, 1]]
/** A period-4 Star Wars (B2/S345/4) oscillator; states 2 and 3 are dying cells. */
export const STAR_WARS_P4 = [[-2, 2], [-1, 1], [-1, 3, 2], [0, -1], [0, 0], [0, 1], [0, 2], [0, 3, 3], [1, -1, 2], [1, 0, 3], [1, 2]]

export function verificationRow(pattern: Row, rule: SampleRule): Row {
  return {
    pattern_id: pattern.id, rule: rule.notation, publisher: PUBLISHER_ID, main: true, periods: 2n, generations: 2n * (pattern.period as bigint),
    field: 'dead-edged frame 16x16', sites: null, engine_version: '0.1.0', pin: pattern.pin, semantics: '1', date: T0, range: null, mover: null,
  }
}

function antRow(): Row {
  const r = antRecord('RL', { steps: 2000 })
  const identity = antIdentity({ pinKey: 'square', rule: 'RL', kind: 'string', states: r.states as number, colors: r.colors as number, start: r.start as string })
  const { pin_key, rule, kind, family, semantics, states, colors, start, outcome, period, dx, dy, onset, speed, steps, cells, run } = r
  return {
    id: antId(identity, SQUARE.pin as string), identity, pin_key, pin: SQUARE.pin, rule, kind, family, semantics, states, colors, start, outcome,
    period: period === null ? null : BigInt(period as number), dx, dy, onset: onset === null ? null : BigInt(onset as number), speed,
    steps: BigInt(steps as number), cells: BigInt(cells as number), run, tiling_group: 'square',
  }
}

export function quickstartRow(extra: Row = {}): Row {
  const scene = '{"automata":[{"rule":"B3/S23","tiling":"square"}],"palette":"Ember"}'
  return {
    id: quickstartId(scene, SQUARE.pin as string), title: 'A glider', description: 'One glider on the square grid.', source: null, scene, scene_format: '1',
    rule: 'B3/S23', rule_family: 'bs', semantics: '1', behaviour: 'spaceship', pin_key: 'square', pin: SQUARE.pin, tiling_group: 'square', ...extra,
  }
}

export const POSTER = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from('a poster, not a real picture')])

export function mediaRow(target: string, extra: Row = {}): Row {
  return {
    target, kind: 'poster', from_seed: false, object: objectHash(POSTER), media_type: 'image/png', width: 64, height: 64, frames: 1,
    bytes: BigInt(POSTER.length), render_key: 'r1', render: '{"palette":"Ember"}', ...extra,
  }
}

/**
 * The rows of a clean pack: the square grid, rules, four patterns replayed at level 3 and their
 * verifications, an ant, a Quick Start entry and a poster; with `aperiodic`, the Penrose tiling (whose
 * reference patch makes every check slower) and a pattern on it.
 */
export function cleanRows(opts: { aperiodic?: boolean } = {}): Record<string, Row[]> {
  const glider = patternRow(LIFE, GLIDER)
  const patterns = [patternRow(LIFE, BLOCK), patternRow(LIFE, BLINKER), glider, patternRow(STAR_WARS, STAR_WARS_P4)]
  const penrose = opts.aperiodic ? penroseRow() : undefined
  const onPenrose = penrose ? penrosePattern(penrose) : undefined
  const verifications = patterns.map((p) => verificationRow(p, p.model === 'bs' ? LIFE : STAR_WARS))
  // A still life's row names no rule: its main verification does.
  if (onPenrose) verifications.push({ ...verificationRow(onPenrose, { ...LIFE, notation: 'B2/S1' }), field: 'patch penrose-kd level 4', sites: 1 })
  return {
    tilings: penrose ? [SQUARE, penrose] : [SQUARE],
    rules: [ruleRow(LIFE), ruleRow(STAR_WARS)],
    patterns: onPenrose ? [...patterns, onPenrose] : patterns,
    verifications,
    ants: [antRow()],
    quickstart: [quickstartRow()],
    media: [mediaRow(`pattern:${String(glider.id)}`)],
  }
}

/** The rows of a small pack, for damage that no record needs: the square grid and the rules. */
export function smallRows(): Record<string, Row[]> {
  return { tilings: [SQUARE], rules: [ruleRow(LIFE), ruleRow(STAR_WARS)] }
}

// ---------------------------------------------------------------------------------------------------
// Stores

export interface TableHookArgs {
  table: string
  /** The parts written for the table's rows (one per partition). */
  parts: TablePart[]
  /** Writes a document object (RFC 8785 bytes of `doc`, checked only by the JSON rules) and gives its hash. */
  put(doc: object): Promise<string>
  /** Writes an object of any bytes and gives its hash. */
  putObject(bytes: Uint8Array, ext: 'json' | 'parquet'): Promise<string>
}

export interface StoreSpec {
  rows?: Record<string, Row[]>
  /** The schema a table's rows are written with (to write rows a writer must refuse). */
  writerSchema?: Record<string, TableSchema>
  /** Rows per row group (PackPartWriter's maxRowGroupRows), to spread a part over several. */
  rowGroupRows?: number
  /** Makes a table's index and gives its hash (default: one index of its parts). */
  tableIndex?: (args: TableHookArgs) => Promise<string>
  /** The sample search: a segment and a score sidecar (default true). */
  search?: boolean
  /** Changes the manifest document before it is written. */
  manifest?: (doc: Record<string, unknown>) => Record<string, unknown>
  /** Changes the manifest's bytes before they are written, signed and named by the ref. */
  manifestBytes?: (bytes: Buffer) => Buffer
  /** The key that signs manifests and refs and that the manifest names as publisher. */
  signer?: SshPrivateKey
  /** A machine key that signs the main version and the ref in place of `signer`, which they still name. */
  machineKey?: SshPrivateKey
  /** Changes the parent version's manifest document before it is written. */
  parentManifest?: (doc: Record<string, unknown>) => Record<string, unknown>
  keys?: KeyStatementDocument[]
  /** The ref's seq (default: the number of versions). */
  seq?: number
  /** Publish a first version (tilings and rules only) as the parent of the main one (default true). */
  history?: boolean
}

export interface BuiltStore {
  dir: string
  manifest: string
  parent: string | undefined
  manifestBytes: Buffer
  indexes: Record<string, string>
  parts: Record<string, TablePart[]>
  search: string | undefined
  /** The Penrose reference patch's object, when the rows have the Penrose tiling. */
  referencePatch: string | undefined
}

let referencePatch: Buffer | undefined

/** Writes rows of one partition with PackPartWriter (on this thread: the test stays one process) and moves them into the store. */
async function writeParts(root: string, schema: TableSchema, rows: readonly Row[], partition: Record<string, string>, rowGroupRows?: number): Promise<Omit<TablePart, 'partition'>[]> {
  const tmp = join(root, '.tmp')
  await mkdir(tmp, { recursive: true })
  const w = new PackPartWriter(schema, { dir: tmp, partition, encodeOnThread: false, ...(rowGroupRows ? { maxRowGroupRows: rowGroupRows } : {}) })
  await w.write([...rows].sort(rowComparator(schema)))
  const out: Omit<TablePart, 'partition'>[] = []
  for (const p of await w.finish()) {
    const o = await writeObject(root, await readFile(p.path), 'parquet')
    await unlink(p.path)
    out.push({ bytes: o.bytes, first: p.first, last: p.last, object: o.hash, rows: p.rows })
  }
  return out
}

async function writeTable(root: string, table: string, rows: readonly Row[], spec: StoreSpec): Promise<TablePart[]> {
  const schema = PACK_TABLES[table as keyof typeof PACK_TABLES]
  const writer = spec.writerSchema?.[table] ?? schema
  const groups = new Map<string, Row[]>()
  for (const row of rows) {
    const key = JSON.stringify(schema.partitionColumns.map((c) => row[c]))
    groups.set(key, [...(groups.get(key) ?? []), row])
  }
  const parts: TablePart[] = []
  for (const group of groups.values()) {
    const partition = Object.fromEntries(schema.partitionColumns.map((c) => [c, group[0]![c] as string]))
    const writerPartition = Object.fromEntries(writer.partitionColumns.map((c) => [c, group[0]![c] as string]))
    for (const p of await writeParts(root, writer, group, writerPartition, spec.rowGroupRows)) parts.push({ ...p, partition })
  }
  return parts
}

async function putDocument(root: string, doc: object): Promise<string> {
  return (await writeObject(root, writePackJson(doc), 'json')).hash
}

async function writeSearch(root: string): Promise<string> {
  const runs = Array.from({ length: 5 }, (_, i) => ({ run_id: BigInt(i + 1), parent: null, identity: null, pattern_id: null, outcome: 'died', generations: 100n, population: 0n, score: null, run: `{"soup":"s${i}"}` }))
  const [segment] = await writeParts(root, EXPLORE_RUNS_SCHEMA, runs, {})
  const [sidecar] = await writeParts(root, EXPLORE_SCORES_SCHEMA, [{ run_id: 2n, score: 0.5, model: 'taste 1' }], {})
  const index = buildSearchIndex({
    created: T0, engine_version: '0.1.0', kind: 'explore', run_schema: 'jetcarp-explore-runs 1', score_schema: 'jetcarp-explore-scores 1', search: SEARCH, spec: { tiling: 'square' }, updated: T0,
    parts: [{ bytes: segment!.bytes, engine_version: '0.1.0', first: '1', last: '5', object: segment!.object, rows: 5, sealed: T0, segment: 'part-000001' }],
    scores: [{ created: T0, engine_version: '0.1.0', version: 1, parts: [{ bytes: sidecar!.bytes, object: sidecar!.object, rows: 1, segment: 'part-000001' }] }],
  })
  return (await writeObject(root, index.bytes, 'json')).hash
}

async function writeVersion(root: string, spec: StoreSpec, tables: Record<string, string>, parents: string[], searches: Record<string, string>, partBytes: number): Promise<{ hash: string; bytes: Buffer }> {
  const signer = spec.signer ?? PUBLISHER
  const built = buildManifest({
    feed: FEED, title: 'check', created: T0, licence: 'CC0-1.0', creators: [{ name: 'Check Publisher', role: 'creator' }], parents,
    publisher: fingerprint(signer.publicKey), engine: ENGINE, tables, searches, stats: { ants: 1, bytes: partBytes, patterns: 5, quickstart: 1 },
  })
  // A member a later minor version might add: readers ignore it.
  const doc = { ...(built.document as unknown as Record<string, unknown>), later_minor: { note: 'ignored by 1.0 readers' } }
  let bytes = writePackJson(spec.manifest ? spec.manifest(doc) : doc)
  if (spec.manifestBytes) bytes = spec.manifestBytes(bytes)
  const hash = (await writeObject(root, bytes, 'json')).hash
  const signing = spec.machineKey ?? signer
  await writeStoreFile(root, signaturePath(hash, signerName(signing.publicKey)), Buffer.from(signSshsig(signing, bytes, NS_MANIFEST)))
  return { hash, bytes }
}

/** A store: its keys, a parent version (tilings and rules), the main version with every table and the search, signed, and its ref. */
export async function buildStore(dir: string, spec: StoreSpec = {}): Promise<BuiltStore> {
  await mkdir(dir, { recursive: true })
  await writeStoreFile(dir, STORE_DOCUMENT_PATH, storeDocumentBytes())
  for (const st of spec.keys ?? [firstKeyStatement(PUBLISHER, { created: T0, name: 'Check Publisher' })]) {
    await writeStoreFile(dir, keyPath(keyStatementSignerName(st)), keyStatementBytes(st))
  }
  const rows = spec.rows ?? cleanRows()
  let patch: string | undefined
  if ((rows.tilings ?? []).some((r) => r.kind === 'aperiodic')) {
    referencePatch ??= await (async () => {
      const [p] = await writeParts(dir, REFERENCE_PATCH_SCHEMA, testPatch() as unknown as Row[], {})
      return readFile(join(dir, ...objectPath(p!.object, 'parquet').split('/')))
    })()
    patch = (await writeObject(dir, referencePatch, 'parquet')).hash
  }
  await writeObject(dir, POSTER, 'png')

  const indexes: Record<string, string> = {}
  const parts: Record<string, TablePart[]> = {}
  let partBytes = 0
  for (const [table, tableRows] of Object.entries(rows)) {
    const withPatch = tableRows.map((r) => (r.kind === 'aperiodic' && r.reference === null ? { ...r, reference: patch } : r))
    parts[table] = await writeTable(dir, table, withPatch, spec)
    partBytes += parts[table]!.reduce((n, p) => n + p.bytes, 0)
    const args: TableHookArgs = {
      table, parts: parts[table]!, put: (doc) => putDocument(dir, doc), putObject: async (bytes, ext) => (await writeObject(dir, bytes, ext)).hash,
    }
    indexes[table] = spec.tableIndex ? await spec.tableIndex(args) : (await writeObject(dir, buildTableIndex({ table, schema: PACK_TABLES[table as keyof typeof PACK_TABLES].schemaId, parts: parts[table]! }).bytes, 'json')).hash
  }
  const search = spec.search === false ? undefined : await writeSearch(dir)
  const history = spec.history ?? true
  const parentSpec: StoreSpec = spec.parentManifest ? { manifest: spec.parentManifest } : {}
  const parent = history ? await writeVersion(dir, parentSpec, { rules: indexes.rules!, tilings: indexes.tilings! }, [], {}, 0) : undefined
  const main = await writeVersion(dir, spec, indexes, parent ? [parent.hash] : [], search ? { [SEARCH]: search } : {}, partBytes)
  const signer = spec.signer ?? PUBLISHER
  const ref = buildRef({ feed: FEED, manifest: main.hash, publisher: fingerprint(signer.publicKey), seq: spec.seq ?? (history ? 2 : 1), updated: T0 })
  await writeStoreFile(dir, refPath(FEED), signRef(ref, spec.machineKey ?? signer).bytes)
  return { dir, manifest: main.hash, parent: parent?.hash, manifestBytes: main.bytes, indexes, parts, search, referencePatch: patch }
}

/** A copy of a built store, to damage. */
export async function copyStore(store: BuiltStore, dir: string): Promise<BuiltStore> {
  await cp(store.dir, dir, { recursive: true })
  return { ...store, dir }
}

/** The absolute file of a store path. */
export const fileOf = (dir: string, rel: string) => join(dir, ...rel.split('/'))

// ---------------------------------------------------------------------------------------------------
// Exports

/**
 * Lays a store's main version out as an export ("Exports"), from planExport's layout: pack.json, index/,
 * history/, tables/, searches/, the reference patch, media, sigs/ and keys/. A media row whose file cannot
 * be named (another media type, a kind that is no name) is left out.
 */
export async function exportStore(store: BuiltStore, dir: string, rows: Record<string, Row[]>): Promise<void> {
  const parsed = parseManifest(store.manifestBytes)
  if (!parsed.ok) throw new Error(parsed.detail)
  const manifest: Manifest = parsed.value.manifest
  const layout = await planExport({ manifest, hash: store.manifest }, storeIndexLoader(store.dir), { history: manifest.parents })
  for (const m of rows.media ?? []) {
    try {
      layout.addMedia(m as unknown as MediaFile & { object: string })
    } catch {
      // Left out: the checker refuses the name.
    }
  }
  if (store.referencePatch) layout.addReferencePatch(PENROSE_KD_FAMILY, store.referencePatch)
  await mkdir(dir, { recursive: true })
  for (const e of layout.entries()) {
    const ext = e.path.slice(e.path.lastIndexOf('.') + 1) as 'json' | 'parquet' | 'png'
    const to = fileOf(dir, e.path)
    await mkdir(dirname(to), { recursive: true })
    if (e.path === 'pack.json') await cp(fileOf(store.dir, objectPath(store.manifest, 'json')), to)
    else await cp(fileOf(store.dir, objectPath(e.hash, ext)), to)
  }
  const hex = store.manifest.slice(7)
  await cp(fileOf(store.dir, `sigs/sha256/${hex.slice(0, 2)}/${hex}`), join(dir, 'sigs'), { recursive: true })
  await cp(join(store.dir, 'keys'), join(dir, 'keys'), { recursive: true })
}

// ---------------------------------------------------------------------------------------------------
// A hostile part


function thrift(value: Parameters<typeof serializeTCompactProtocol>[1]): Buffer {
  const w = new ByteWriter()
  serializeTCompactProtocol(w, value)
  return Buffer.from(w.getBytes())
}

/**
 * A Parquet part of one INT64 column whose only page header says it decompresses to `claimed` bytes
 * (its 24 bytes of values are stored uncompressed): a reader must refuse it before decoding.
 */
export function inflatedPart(claimed: number): Buffer {
  const values = Buffer.alloc(24)
  ;[1n, 2n, 3n].forEach((v, i) => values.writeBigInt64LE(v, i * 8))
  const header = thrift({ field_1: 0, field_2: claimed, field_3: values.length, field_5: { field_1: 3, field_2: 0, field_3: 3, field_4: 3 } })
  const chunk = BigInt(header.length + values.length)
  const footer = thrift({
    field_1: 1,
    field_2: [{ field_4: 'schema', field_5: 1 }, { field_1: 2, field_3: 0, field_4: 'n' }],
    field_3: 3n,
    field_4: [{ field_1: [{ field_2: 4n, field_3: { field_1: 2, field_2: [0], field_3: ['n'], field_4: 0, field_5: 3n, field_6: chunk, field_7: chunk, field_9: 4n } }], field_2: chunk, field_3: 3n }],
  })
  const length = Buffer.alloc(4)
  length.writeUInt32LE(footer.length)
  return Buffer.concat([Buffer.from('PAR1'), header, values, footer, length, Buffer.from('PAR1')])
}

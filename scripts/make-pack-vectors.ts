/**
 * Builds the pack format 1.0 conformance vectors (test/vectors/pack) from the golden packs
 * (test/golden/<name>/, scripts/make-golden-packs.ts).
 *
 * `<case>_fail/`: a store (or, for one case, an export) copied from a golden pack with only the tables the
 * case needs, changed so that one rule breaks. Everything around the change is re-published as a publisher
 * would: a changed row is written as a new part with the project's writer, the index naming it anew, the
 * manifest naming that index, the manifest signed again with the golden key and the ref re-signed to name
 * it. So a case about an index fails on the index, not on a stale hash or signature. The passing cases are
 * the golden packs themselves (test/golden/<name>/), which are not copied here.
 *
 * Each case folder: `store/` (or `export/`), `expected.json` and a one-line `README`. expected.json:
 *   {"args": [DIR, "--level", N]      the arguments of `pipe run pack-check`, DIR relative to the case folder,
 *    "findings": [{"level", "code"}]   every pair must be reported,
 *    "allowed": [{"level", "code"}]}   pairs that may also be reported (what the change breaks in turn)
 * A case passes when pack-check exits 1, reports every pair of `findings` and nothing outside `findings`
 * and `allowed` (notes are not findings). `hashes.txt` lists the sha256 of every file (sha256sum format).
 * N is the level of the rule the case breaks: checking levels 0 to N must refuse it.
 *
 * The expectations are the spec's, written here; they do not come from the checker. The build runs the
 * checker over every case and prints where it disagrees, without changing what is written.
 *
 * Usage: npm run vectors:packs [-- --check] (runs the built script: the Parquet writer uses a worker thread).
 * Like the golden scripts, it never rewrites existing bytes: when test/vectors/pack exists, a fresh build
 * must be identical to it (new cases are added).
 */
import { createHash } from 'node:crypto'
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { checkPack, type CheckLevel } from '../src/formats/pack/check/check.js'
import type { ScoreSet, SearchSegment, TablePart } from '../src/formats/pack/documents/doc-index.js'
import { buildRef, signRef } from '../src/formats/pack/documents/doc-ref.js'
import { objectHash, writePackJson, type JsonObject } from '../src/formats/pack/documents/documents.js'
import { exportPack } from '../src/formats/pack/export/export.js'
import { patternId, patternIdentity, type Cell, type PatternClass } from '../src/formats/pack/records/identity.js'
import { countPartBytes, walkSearchIndex, walkTableIndex } from '../src/formats/pack/documents/index-walk.js'
import { buildKeyStatement, firstKeyStatement, keyStatementBytes, revocationStatement, signKeyStatement } from '../src/formats/pack/keys/key-statements.js'
import { readPartRows } from '../src/formats/pack/tables/parquet-read.js'
import { PackPartWriter } from '../src/formats/pack/tables/parquet-write.js'
import { fingerprint, generateKey, signerName, type SshPrivateKey } from '../src/formats/pack/keys/ssh-key.js'
import { NS_MANIFEST, signSshsig } from '../src/formats/pack/keys/sshsig.js'
import {
  EXPORT_MANIFEST_PATH, STORE_DOCUMENT_PATH, TMP_FOLDER, adoptObjectFile, exportIndexPath, exportMediaPath, exportPartitionFolder, exportPartPath, exportSignaturePath,
  keyPath, mediaExtension, objectPath, refPath, signaturePath, storeIndexLoader, writeObject, writeStoreFile, type MediaFile,
} from '../src/formats/pack/documents/store.js'
import { PACK_TABLES, rowComparator, sortKeyText, type PackTableName, type TableSchema } from '../src/formats/pack/tables/table-schemas.js'
import { GOLDEN_PACKS_DIR } from './make-golden-packs.js'
import { REPO, writeHashes, writeOrCheckTree } from './make-golden-record.js'

const VECTORS_DIR = join(REPO, 'test', 'vectors', 'pack')

interface Pair { level: CheckLevel; code: string }
interface Expected { args: string[]; findings: Pair[]; allowed?: Pair[] }

type Row = Record<string, unknown>

// The golden packs' keys and time, derived as scripts/make-golden-packs.ts derives them.
const T0 = '2026-11-11T00:00:00Z'
const goldenKey = (name: string) => generateKey({ seed: createHash('sha256').update(`pipe pack golden key ${name}`).digest(), comment: name })
const A = goldenKey('golden-a')
const B = goldenKey('golden-b')
/** A key golden-a's publisher might rotate to; made the same way, but in no golden pack. */
const A_SUCCESSOR = goldenKey('golden-a-successor')
const A_STATEMENT = firstKeyStatement(A, { name: 'Golden Publisher A', created: T0 })

/** Replaces the one occurrence of `from` in `bytes`; a text that is not there once is a mistake in this script. */
function replaceOnce(bytes: Buffer, from: string, to: string): Buffer {
  const text = bytes.toString('utf8')
  const at = text.indexOf(from)
  if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`${JSON.stringify(from)} is not in the bytes exactly once`)
  return Buffer.from(text.slice(0, at) + to + text.slice(at + from.length), 'utf8')
}

/** The bytes with one bit of the byte at `at` flipped: the same size, another hash. */
function flipBit(bytes: Buffer, at: number): Buffer {
  const out = Buffer.from(bytes)
  out[at] = out[at]! ^ 0x01
  return out
}

// ---------------------------------------------------------------------------------------------------
// A case's store: one version of a golden store, changed and published again.

type GoldenStore = 'minimal' | 'media' | 'aperiodic' | 'searches'

interface PublishOptions {
  /** Signs the manifest and the ref, and is named as the manifest's publisher (default golden-a's key). */
  key?: SshPrivateKey
  /** The manifest's bytes, from its RFC 8785 bytes (default those). */
  bytes?: (canonical: Buffer) => Buffer
  /** What its signature is made over, from its bytes (default those). */
  signed?: (bytes: Buffer) => Buffer
  /** The `<signer>` its signature file is named by (default the signing key's). */
  signer?: string
}

class CaseStore {
  private constructor(
    readonly root: string,
    readonly manifest: JsonObject,
  ) {}

  /**
   * A copy of a golden store's version with only `tables`: jetcarp-store.json, keys/, the tables' indexes
   * and parts and the objects their rows name (media files, reference patches). The manifest, its
   * signature and the ref are written by publish(). With `searches`, the version's searches too: their
   * indexes, segments and score sidecars.
   */
  static async from(golden: GoldenStore, root: string, tables: readonly PackTableName[], opts: { searches?: boolean } = {}): Promise<CaseStore> {
    const { from, manifest } = await goldenVersion(golden)
    const copy = async (rel: string) => {
      await mkdir(dirname(fileIn(root, rel)), { recursive: true })
      await cp(fileIn(from, rel), fileIn(root, rel))
    }
    await mkdir(root, { recursive: true })
    await copy(STORE_DOCUMENT_PATH)
    await cp(join(from, 'keys'), join(root, 'keys'), { recursive: true })
    const goldenTables = manifest.tables as Record<string, string>
    const kept: Record<string, string> = {}
    for (const table of tables) {
      const index = goldenTables[table]
      if (index === undefined) throw new Error(`golden pack ${golden} has no table ${table}`)
      kept[table] = index
      for await (const e of walkTableIndex(index, storeIndexLoader(from), { table })) {
        if (e.kind === 'index') {
          await copy(objectPath(e.hash, 'json'))
          continue
        }
        const part = objectPath(e.part.object, 'parquet')
        await copy(part)
        for (const row of await partRows(fileIn(from, part), PACK_TABLES[table])) {
          if (table === 'media') await copy(objectPath(row.object as string, mediaExtensionOf(row)))
          if (table === 'tilings' && typeof row.reference === 'string') await copy(objectPath(row.reference, 'parquet'))
        }
      }
    }
    manifest.tables = kept
    if (opts.searches) {
      for (const [search, index] of Object.entries(manifest.searches as Record<string, string>)) {
        for await (const e of walkSearchIndex(index, storeIndexLoader(from), { search })) {
          await copy(e.kind === 'index' ? objectPath(e.hash, 'json') : objectPath(e.kind === 'segment' ? e.segment.object : e.part.object, 'parquet'))
        }
      }
    } else {
      manifest.searches = {}
    }
    const c = new CaseStore(root, manifest)
    await c.refreshStats()
    return c
  }

  file(rel: string): string {
    return fileIn(this.root, rel)
  }

  tableHash(table: PackTableName): string {
    const hash = (this.manifest.tables as Record<string, string>)[table]
    if (hash === undefined) throw new Error(`the case has no table ${table}`)
    return hash
  }

  indexPath(table: PackTableName): string {
    return objectPath(this.tableHash(table), 'json')
  }

  async index(table: PackTableName): Promise<JsonObject & { parts: TablePart[] }> {
    return JSON.parse(await readFile(this.file(this.indexPath(table)), 'utf8')) as JsonObject & { parts: TablePart[] }
  }

  async putObject(bytes: Buffer, ext: 'json' | 'parquet'): Promise<string> {
    return (await writeObject(this.root, bytes, ext)).hash
  }

  /** Writes a table's index as these bytes, names it in the manifest, and removes the index it replaces. */
  async setIndex(table: PackTableName, bytes: Buffer): Promise<string> {
    const before = this.indexPath(table)
    const hash = await this.putObject(bytes, 'json')
    ;(this.manifest.tables as Record<string, string>)[table] = hash
    if (objectPath(hash, 'json') !== before) await rm(this.file(before))
    return hash
  }

  /** The one search of the version: its uuid and its (root) search index. */
  async search(): Promise<{ uuid: string; index: JsonObject & { parts: SearchSegment[]; scores: ScoreSet[] } }> {
    const searches = Object.entries(this.manifest.searches as Record<string, string>)
    if (searches.length !== 1) throw new Error(`the case has ${searches.length} searches, not one`)
    const [uuid, hash] = searches[0]!
    return { uuid, index: JSON.parse(await readFile(this.file(objectPath(hash, 'json')), 'utf8')) as JsonObject & { parts: SearchSegment[]; scores: ScoreSet[] } }
  }

  /** Writes the search's index document, names it in the manifest, and removes the index it replaces. */
  async putSearchIndex(uuid: string, doc: JsonObject): Promise<void> {
    const searches = this.manifest.searches as Record<string, string>
    const before = objectPath(searches[uuid]!, 'json')
    const hash = await this.putObject(writePackJson(doc), 'json')
    searches[uuid] = hash
    if (objectPath(hash, 'json') !== before) await rm(this.file(before))
  }

  /** Writes a table's index document (its RFC 8785 bytes, whatever it says). */
  putIndex(table: PackTableName, doc: JsonObject): Promise<string> {
    return this.setIndex(table, writePackJson(doc))
  }

  /** Every row of a table's parts, as the reader gives them. */
  async rows(table: PackTableName): Promise<Row[]> {
    const rows: Row[] = []
    for (const part of (await this.index(table)).parts) rows.push(...(await partRows(this.file(objectPath(part.object, 'parquet')), PACK_TABLES[table])))
    return rows
  }

  /**
   * Publishes a table again from its rows after `transform`, as a publisher would: one part per partition
   * (in partition order), each sorted as `writerSchema` sorts (the table's own by default), a new index,
   * and the old parts removed. first and last are always those of the table's own first sort column.
   */
  async rewriteTable(table: PackTableName, transform: (rows: Row[]) => Row[], writerSchema: TableSchema = PACK_TABLES[table]): Promise<void> {
    const schema = PACK_TABLES[table]
    const index = await this.index(table)
    const groups = new Map<string, Row[]>()
    for (const row of transform(await this.rows(table))) {
      const key = JSON.stringify(schema.partitionColumns.map((c) => row[c]))
      groups.set(key, [...(groups.get(key) ?? []), row])
    }
    const parts: TablePart[] = []
    for (const [, group] of [...groups].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      group.sort(rowComparator(writerSchema))
      const partition = Object.fromEntries(schema.partitionColumns.map((c) => [c, group[0]![c] as string]))
      parts.push(await this.writePart(writerSchema, group, partition, schema))
    }
    const kept = new Set(parts.map((p) => p.object))
    for (const part of index.parts) if (!kept.has(part.object)) await rm(this.file(objectPath(part.object, 'parquet')))
    await this.putIndex(table, { ...index, parts })
    await this.refreshStats()
  }

  private async writePart(writerSchema: TableSchema, rows: Row[], partition: Record<string, string>, schema: TableSchema): Promise<TablePart> {
    const tmp = join(this.root, TMP_FOLDER)
    await mkdir(tmp, { recursive: true })
    const writer = new PackPartWriter(writerSchema, { dir: tmp, partition })
    let written
    try {
      await writer.write(rows)
      written = await writer.finish()
    } catch (err) {
      await writer.abort()
      throw err
    }
    if (written.length !== 1) throw new Error(`${schema.name}: ${written.length} parts written for one partition`)
    const part = written[0]!
    const o = await adoptObjectFile(this.root, part.path, part.sha256, part.bytes, 'parquet')
    return { bytes: part.bytes, first: sortKeyText(schema, rows[0]!), last: sortKeyText(schema, rows[rows.length - 1]!), object: o.hash, partition, rows: part.rows }
  }

  /** stats as a publisher writes them, for the tables the manifest now names. */
  async refreshStats(): Promise<void> {
    const tables = this.manifest.tables as Record<string, string>
    const loader = storeIndexLoader(this.root)
    const rows = async (table: string) => {
      let n = 0
      if (tables[table] !== undefined) for await (const e of walkTableIndex(tables[table], loader, { table })) if (e.kind === 'part') n += e.part.rows
      return n
    }
    const searches = this.manifest.searches as Record<string, string>
    this.manifest.stats = { ants: await rows('ants'), bytes: await countPartBytes({ tables, searches }, loader), patterns: await rows('patterns'), quickstart: await rows('quickstart') }
  }

  /** Writes the manifest, its signature and the ref naming it (seq 1); returns the manifest's hash. */
  async publish(o: PublishOptions = {}): Promise<string> {
    const key = o.key ?? A
    this.manifest.publisher = fingerprint(key.publicKey)
    const canonical = writePackJson(this.manifest)
    const bytes = o.bytes ? o.bytes(canonical) : canonical
    const hash = await this.putObject(bytes, 'json')
    const signature = signSshsig(key, o.signed ? o.signed(bytes) : bytes, NS_MANIFEST)
    await writeStoreFile(this.root, signaturePath(hash, o.signer ?? signerName(key.publicKey)), Buffer.from(signature))
    const feed = this.manifest.feed as string
    const ref = buildRef({ feed, manifest: hash, publisher: fingerprint(key.publicKey), seq: 1, updated: T0 })
    await writeStoreFile(this.root, refPath(feed), signRef(ref, key).bytes)
    await rm(join(this.root, TMP_FOLDER), { recursive: true, force: true })
    return hash
  }

  /** Changes a file's bytes in place: damage after publishing, which nothing re-signs. */
  async damage(rel: string, change: (bytes: Buffer) => Buffer): Promise<void> {
    await writeFile(this.file(rel), change(await readFile(this.file(rel))))
  }
}

const fileIn = (root: string, rel: string) => join(root, ...rel.split('/'))

/** A golden store's folder and the manifest its one ref names. */
async function goldenVersion(golden: GoldenStore): Promise<{ from: string; manifest: JsonObject }> {
  const from = join(GOLDEN_PACKS_DIR, golden, 'store')
  const refs = await readdir(join(from, 'refs'))
  if (refs.length !== 1) throw new Error(`${from}: one feed expected`)
  const ref = JSON.parse(await readFile(join(from, 'refs', refs[0]!), 'utf8')) as { manifest: string }
  return { from, manifest: JSON.parse(await readFile(fileIn(from, objectPath(ref.manifest, 'json')), 'utf8')) as JsonObject }
}

async function partRows(file: string, schema: TableSchema): Promise<Row[]> {
  const read = await readPartRows(file, schema)
  if (!read.ok) throw new Error(`${file}: ${JSON.stringify(read.findings)}`)
  return read.rows
}

function mediaExtensionOf(row: Row): 'png' | 'gif' | 'webp' {
  const ext = mediaExtension(row.media_type)
  if (!ext.ok) throw new Error(ext.detail)
  return ext.value
}

// ---------------------------------------------------------------------------------------------------
// Patterns published again with other facts: their identity, id, picture and counts follow the facts, and
// the verifications that name them follow the id, so everything up to level 2 holds and only replay fails.

interface RestatedFacts { class?: PatternClass; period?: number; dx?: number; dy?: number; phases?: Cell[][] }

// minimal's three patterns.
const GLIDER_ID = 'd133509cf01b734df6a6d5560e635da4'
const BLINKER_ID = '69ba2f96fab25bffd0388a32fc938d51'
const BLOCK_ID = '4ec69701fbf4cbc342427d733cfe42ed'

/** A pattern's phases listed in this order (its phase numbers). */
const pickPhases = (row: Row, order: number[]) => order.map((n) => (row.phases as Cell[][])[n]!)

function restatePattern(row: Row, facts: RestatedFacts): Row {
  const stated = {
    class: facts.class ?? (row.class as PatternClass),
    period: facts.period ?? Number(row.period),
    dx: facts.dx ?? (row.dx as number),
    dy: facts.dy ?? (row.dy as number),
    phases: facts.phases ?? (row.phases as Cell[][]),
  }
  const { identity, phases, canonical } = patternIdentity({
    pinKey: row.pin_key as string, model: row.model as string, neighbourhood: row.neighbourhood as 'touch' | 'edge', stepsPerGen: row.steps_per_gen as number,
    rule: row.rule as string | null, tileTypes: 1, ...stated,
  })
  const sizes = phases.map((p) => p.length)
  return {
    ...row, id: patternId(identity, row.pin as string), identity, class: stated.class, period: BigInt(stated.period), dx: stated.dx, dy: stated.dy, phases, canonical,
    cells: sizes[0], min_cells: Math.min(...sizes), max_cells: Math.max(...sizes), class_group: stated.class,
  }
}

/** minimal's tilings, rules, patterns and verifications, with one pattern restated; replayed at level 3. */
async function restated(root: string, id: string, facts: (row: Row) => RestatedFacts): Promise<CaseStore> {
  const c = await CaseStore.from('minimal', root, ['tilings', 'rules', 'patterns', 'verifications'])
  const before = (await c.rows('patterns')).find((r) => r.id === id)
  if (!before) throw new Error(`minimal has no pattern ${id}`)
  const after = restatePattern(before, facts(before))
  await c.rewriteTable('patterns', (rows) => rows.map((r) => (r.id === id ? after : r)))
  await c.rewriteTable('verifications', (rows) => rows.map((r) => (r.pattern_id === id ? { ...r, pattern_id: after.id, generations: (r.periods as bigint) * (after.period as bigint) } : r)))
  return c
}

// ---------------------------------------------------------------------------------------------------
// The cases

interface CaseSpec {
  name: string
  readme: string
  /** The level of the rule the case breaks: the check runs levels 0 to this one. */
  level: CheckLevel
  findings: Pair[]
  allowed?: Pair[]
  /** The case's pack folder (default store). */
  dir?: 'store' | 'export'
  build: (packDir: string, work: string) => Promise<void>
}

const p = (level: CheckLevel, code: string): Pair => ({ level, code })
const HASH = p(1, 'pack.object-hash-mismatch')
const SIZE = p(1, 'pack.object-size-mismatch')
const UNSIGNED = p(2, 'pack.manifest-unsigned')
/** The smallest version to break documents in: minimal with its rules table only. */
const rulesOnly = (root: string) => CaseStore.from('minimal', root, ['rules'])
/** The searches golden pack's version with its search and no table. */
const searchesOnly = (root: string) => CaseStore.from('searches', root, [], { searches: true })
/** The offset of the middle of a file: inside a Parquet part's pages, away from its magic and footer length. */
const middle = (bytes: Buffer) => bytes.length >> 1

const FAIL_CASES: CaseSpec[] = [
  // --- Objects: each kind with a wrong hash (one bit flipped, same size) and a wrong size.
  { name: 'manifest_hash', level: 1, findings: [HASH], readme: 'One bit of the manifest flipped (a letter of its description), so its bytes no longer hash to its name.',
    build: async (root) => { const c = await rulesOnly(root); const h = await c.publish(); await c.damage(objectPath(h, 'json'), (b) => replaceOnce(b, 'Golden pack: minimal', 'Golden pack: minimaL')) } },
  { name: 'manifest_size', level: 1, findings: [HASH], readme: 'The manifest with a final newline added: no document states a manifest\'s size, so its hash refuses it.',
    build: async (root) => { const c = await rulesOnly(root); const h = await c.publish(); await c.damage(objectPath(h, 'json'), (b) => Buffer.concat([b, Buffer.from('\n')])) } },
  { name: 'index_hash', level: 1, findings: [HASH], readme: 'One bit of the rules index flipped (its schema id spelled jetcarp-Rules), so it no longer hashes to its name.',
    build: async (root) => { const c = await rulesOnly(root); await c.publish(); await c.damage(c.indexPath('rules'), (b) => replaceOnce(b, 'jetcarp-rules', 'jetcarp-Rules')) } },
  { name: 'index_size', level: 1, findings: [HASH], readme: 'The rules index without its last byte: no document states an index\'s size, so its hash refuses it.',
    build: async (root) => { const c = await rulesOnly(root); await c.publish(); await c.damage(c.indexPath('rules'), (b) => b.subarray(0, b.length - 1)) } },
  { name: 'part_hash', level: 1, findings: [HASH], readme: 'One bit flipped in the middle of the rules part (its size as its index states).',
    build: async (root) => { const c = await rulesOnly(root); await c.publish(); await c.damage(objectPath((await c.index('rules')).parts[0]!.object, 'parquet'), (b) => flipBit(b, middle(b))) } },
  { name: 'part_size', level: 1, findings: [SIZE], readme: 'The rules index states its part one byte larger than it is (the part itself is intact).',
    build: async (root) => {
      const c = await rulesOnly(root)
      const index = await c.index('rules')
      await c.putIndex('rules', { ...index, parts: index.parts.map((part) => ({ ...part, bytes: part.bytes + 1 })) })
      await c.publish()
    } },
  { name: 'reference_patch_hash', level: 1, findings: [HASH], readme: 'One bit flipped in the middle of the Penrose kite-and-dart reference patch (aperiodic).',
    build: async (root) => { const c = await CaseStore.from('aperiodic', root, ['tilings']); await c.publish(); await c.damage(await referencePatchPath(c), (b) => flipBit(b, middle(b))) } },
  { name: 'reference_patch_size', level: 1, findings: [HASH], readme: 'The reference patch (aperiodic) without its last 8 bytes: its tilings row states no size, so its hash refuses it.',
    build: async (root) => { const c = await CaseStore.from('aperiodic', root, ['tilings']); await c.publish(); await c.damage(await referencePatchPath(c), (b) => b.subarray(0, b.length - 8)) } },
  { name: 'media_hash', level: 1, findings: [HASH], readme: 'One bit flipped in the middle of the glider\'s poster PNG (media).',
    build: async (root) => { const c = await CaseStore.from('media', root, ['media']); await c.publish(); await c.damage(await posterPath(c), (b) => flipBit(b, middle(b))) } },
  { name: 'media_size', level: 1, findings: [SIZE], readme: 'The poster\'s media row states bytes one more than its PNG has (media table published again).',
    build: async (root) => {
      const c = await CaseStore.from('media', root, ['media'])
      await c.rewriteTable('media', (rows) => rows.map((r) => (r.kind === 'poster' ? { ...r, bytes: (r.bytes as bigint) + 1n } : r)))
      await c.publish()
    } },

  { name: 'search_segment_hash', level: 1, findings: [HASH], readme: 'One bit flipped in the middle of the first run segment of the search (searches).',
    build: async (root) => { const c = await searchesOnly(root); await c.publish(); await c.damage(objectPath((await c.search()).index.parts[0]!.object, 'parquet'), (b) => flipBit(b, middle(b))) } },
  { name: 'search_segment_size', level: 1, findings: [SIZE], readme: 'The search index states its first segment one byte larger than it is (the segment itself is intact).',
    build: async (root) => {
      const c = await searchesOnly(root)
      const { uuid, index } = await c.search()
      await c.putSearchIndex(uuid, { ...index, parts: index.parts.map((s, i) => (i === 0 ? { ...s, bytes: s.bytes + 1 } : s)) })
      await c.refreshStats()
      await c.publish()
    } },
  { name: 'score_sidecar_hash', level: 1, findings: [HASH], readme: 'One bit flipped in the middle of the search\'s score sidecar (searches).',
    build: async (root) => { const c = await searchesOnly(root); await c.publish(); await c.damage(objectPath((await c.search()).index.scores[0]!.parts[0]!.object, 'parquet'), (b) => flipBit(b, middle(b))) } },
  { name: 'score_sidecar_size', level: 1, findings: [SIZE], readme: 'The search index states its score sidecar one byte larger than it is (the sidecar itself is intact).',
    build: async (root) => {
      const c = await searchesOnly(root)
      const { uuid, index } = await c.search()
      await c.putSearchIndex(uuid, { ...index, scores: index.scores.map((set, i) => (i === 0 ? { ...set, parts: set.parts.map((part, j) => (j === 0 ? { ...part, bytes: part.bytes + 1 } : part)) } : set)) } as unknown as JsonObject)
      await c.refreshStats()
      await c.publish()
    } },

  // --- Hashes
  { name: 'hash_prefix', level: 1, findings: [p(1, 'pack.hash-prefix')], readme: 'The manifest names its rules index by a sha512: hash (of the index\'s real bytes), where the object is needed.',
    build: async (root) => {
      const c = await CaseStore.from('minimal', root, [])
      const golden = await goldenVersion('minimal')
      const index = await readFile(fileIn(golden.from, objectPath((golden.manifest.tables as Record<string, string>).rules!, 'json')))
      ;(c.manifest.tables as Record<string, string>).rules = `sha512:${createHash('sha512').update(index).digest('hex')}`
      await c.publish()
    } },
  { name: 'hash_malformed', level: 1, findings: [p(1, 'pack.hash-malformed')], readme: 'The manifest names a parent as SHA256:<hex>, a malformed prefix: refused even where the object is not needed.',
    build: async (root) => {
      const c = await rulesOnly(root)
      c.manifest.parents = [`SHA256:${objectHash(Buffer.from('the parent this store does not have')).slice('sha256:'.length)}`]
      await c.publish()
    } },

  // --- Document encodings
  { name: 'manifest_not_canonical', level: 0, findings: [p(0, 'pack.json-not-canonical')], readme: 'The manifest pretty-printed (the same JSON, not its RFC 8785 bytes), signed and named by the ref.',
    build: async (root) => { await (await rulesOnly(root)).publish({ bytes: (b) => Buffer.from(JSON.stringify(JSON.parse(b.toString('utf8')), null, 2)) }) } },
  { name: 'index_not_canonical', level: 0, findings: [p(0, 'pack.json-not-canonical')], readme: 'The rules index with its members in reverse order (no whitespace), named by the manifest.',
    build: async (root) => {
      const c = await rulesOnly(root)
      await c.setIndex('rules', Buffer.from(JSON.stringify(Object.fromEntries(Object.entries(await c.index('rules')).reverse()))))
      await c.publish()
    } },
  { name: 'number_fraction', level: 0, findings: [p(0, 'pack.json-number-fraction')], readme: 'The rules index states its part\'s rows as 1.0, a number with a fraction.',
    build: async (root) => {
      const c = await rulesOnly(root)
      await c.setIndex('rules', replaceOnce(writePackJson(await c.index('rules')), '"rows":1}', '"rows":1.0}'))
      await c.publish()
    } },
  { name: 'number_range', level: 0, findings: [p(0, 'pack.json-number-range')], readme: 'The manifest\'s stats.bytes is 9007199254740992 (2^53, the bound included in what is refused).',
    build: async (root) => {
      const c = await rulesOnly(root)
      ;(c.manifest.stats as JsonObject).bytes = Number.MAX_SAFE_INTEGER
      await c.publish({ bytes: (b) => replaceOnce(b, `"bytes":${Number.MAX_SAFE_INTEGER}`, `"bytes":${2n ** 53n}`) })
    } },
  { name: 'json_too_deep', level: 0, findings: [p(0, 'pack.json-too-deep')], readme: 'The manifest has a member nesting 32 arrays, so the document is 33 levels deep.',
    build: async (root) => {
      const c = await rulesOnly(root)
      c.manifest.nested = 'deep'
      await c.publish({ bytes: (b) => replaceOnce(b, '"nested":"deep"', `"nested":${'['.repeat(32)}${']'.repeat(32)}`) })
    } },
  { name: 'version_major', level: 1, findings: [p(1, 'pack.version-major')], readme: 'The manifest says version 2.0, an unknown major.',
    build: async (root) => { const c = await rulesOnly(root); c.manifest.version = '2.0'; await c.publish() } },
  { name: 'requires_unknown', level: 1, findings: [p(1, 'pack.requires-unknown')], readme: 'The manifest requires "torrents"; format 1.0 defines no required feature.',
    build: async (root) => { const c = await rulesOnly(root); c.manifest.requires = ['torrents']; await c.publish() } },

  // --- Signatures and keys
  { name: 'signature_bad', level: 2, findings: [p(2, 'pack.sig-bad')], allowed: [UNSIGNED], readme: 'The manifest\'s signature is golden-a\'s over other bytes (the manifest with one letter changed).',
    build: async (root) => { await (await rulesOnly(root)).publish({ signed: (b) => replaceOnce(b, 'Golden pack: minimal', 'Golden pack: minimaL') }) } },
  { name: 'signer_name', level: 2, findings: [p(2, 'pack.signer-name-mismatch')], allowed: [UNSIGNED], readme: 'golden-a\'s good signature of the manifest, in the file named for golden-b\'s key.',
    build: async (root) => { await (await rulesOnly(root)).publish({ signer: signerName(B.publicKey) }) } },
  { name: 'key_revoked', level: 2, findings: [p(2, 'pack.key-revoked')], readme: 'keys/ holds golden-a\'s revocation of its own key, and the manifest and ref are signed by that key.',
    build: async (root) => {
      const c = await rulesOnly(root)
      await writeStoreFile(root, keyPath(signerName(A.publicKey)), keyStatementBytes(revocationStatement(A_STATEMENT, A)))
      await c.publish()
    } },
  { name: 'successor_unsigned', level: 2, findings: [p(2, 'pack.key-successor-not-signed-by-predecessor')], allowed: [UNSIGNED, p(2, 'pack.key-not-standing')],
    readme: 'A successor of golden-a\'s key signed by itself, not by golden-a; it signs the manifest and ref as their publisher.',
    build: async (root) => {
      const c = await rulesOnly(root)
      const successor = signKeyStatement(buildKeyStatement({ key: A_SUCCESSOR.publicKey, created: T0, name: 'Golden Publisher A', supersedes: fingerprint(A.publicKey) }), A_SUCCESSOR)
      await writeStoreFile(root, keyPath(signerName(A_SUCCESSOR.publicKey)), keyStatementBytes(successor))
      await c.publish({ key: A_SUCCESSOR })
    } },

  // --- Rows: ids, identities, pins, schemas, partitions, order
  { name: 'id_mismatch', level: 1, findings: [p(1, 'pack.id-mismatch')], readme: 'The glider\'s id with its last hex digit changed (patterns published again); its identity and pin unchanged.',
    build: async (root) => {
      const c = await CaseStore.from('minimal', root, ['tilings', 'patterns'])
      await c.rewriteTable('patterns', (rows) => rows.map((r) => (r.id === GLIDER_ID ? { ...r, id: GLIDER_ID.slice(0, -1) + '5' } : r)))
      await c.publish()
    } },
  { name: 'phases_mismatch', level: 1, findings: [p(1, 'pack.phases-mismatch')], readme: 'The glider\'s typed phases move one cell of phase 1 (0,1 to 0,0); its identity\'s phases= line unchanged.',
    build: async (root) => {
      const c = await CaseStore.from('minimal', root, ['tilings', 'patterns'])
      await c.rewriteTable('patterns', (rows) => rows.map((r) => (r.id === GLIDER_ID ? { ...r, phases: moveCell(r.phases as Cell[][], 1, { i: 0, j: 1 }, { i: 0, j: 0 }) } : r)))
      await c.publish()
    } },
  { name: 'pin_mismatch', level: 1, findings: [p(1, 'pack.pin-mismatch')], readme: 'The square grid\'s a2 written [0.0, 1] for [-0.0, 1]: the same grid, but the pin covers the sign, so its pin no longer follows.',
    build: async (root) => {
      const c = await CaseStore.from('minimal', root, ['tilings'])
      await c.rewriteTable('tilings', (rows) => rows.map((r) => ({ ...r, a2: [0, 1] })))
      await c.publish()
    } },
  { name: 'schema_unknown', level: 1, findings: [p(1, 'pack.schema-unknown')], readme: 'The rules index says schema jetcarp-rules 2, a schema number format 1.0 does not have.',
    build: async (root) => { const c = await rulesOnly(root); await c.putIndex('rules', { ...(await c.index('rules')), schema: 'jetcarp-rules 2' }); await c.publish() } },
  { name: 'partition_invalid', level: 1, findings: [p(1, 'pack.partition-malformed')], allowed: [p(1, 'pack.partition-mismatch')],
    readme: 'The quickstart index lists its part in partition tiling_group=Square: a partition value with an upper-case letter.',
    build: async (root) => {
      const c = await CaseStore.from('minimal', root, ['tilings', 'quickstart'])
      const index = await c.index('quickstart')
      await c.putIndex('quickstart', { ...index, parts: index.parts.map((part) => ({ ...part, partition: { tiling_group: 'Square' } })) })
      await c.publish()
    } },
  { name: 'part_unsorted', level: 1, findings: [p(1, 'pack.parquet-rows-unsorted')], readme: 'The raters part written sorted by notes, not by rater (raters published again; first and last as its rows give them).',
    build: async (root) => {
      const c = await CaseStore.from('minimal', root, ['raters'])
      await c.rewriteTable('raters', (rows) => rows, { ...PACK_TABLES.raters, sortColumns: ['notes'] })
      await c.publish()
    } },
  { name: 'index_cycle', level: 0, findings: [p(1, 'pack.index-cycle')], readme: 'Checked at level 0 (no hashes): the file named by the rules index\'s hash lists that hash as its child. Content addressing makes a cycle unbuildable, so only a reader that does not check hashes can meet one.',
    build: async (root) => {
      const c = await rulesOnly(root)
      await c.publish()
      const self = c.tableHash('rules')
      await c.damage(c.indexPath('rules'), (b) => writePackJson({ ...(JSON.parse(b.toString('utf8')) as JsonObject), children: [self] }))
    } },
  { name: 'index_too_deep', level: 1, findings: [p(1, 'pack.index-too-deep')], readme: 'The rules index has a chain of children (no parts) down to an index at level 9.',
    build: async (root) => {
      const c = await rulesOnly(root)
      const index = await c.index('rules')
      let child: string | undefined
      for (let level = 9; level >= 2; level--) child = await c.putObject(writePackJson({ ...index, parts: [], children: child === undefined ? [] : [child] }), 'json')
      await c.putIndex('rules', { ...index, children: [child!] })
      await c.publish()
    } },

  // --- Reading limits and names
  { name: 'parquet_inflated', level: 0, findings: [p(0, 'pack.parquet-decompressed-too-large')], readme: 'The glider\'s name annotation is 256 KiB of one letter: its pages\' uncompressed sizes add up to more than 64x the part\'s size.',
    build: async (root) => {
      const c = await CaseStore.from('minimal', root, ['annotations'])
      await c.rewriteTable('annotations', (rows) => rows.map((r) => ({ ...r, value: JSON.stringify('a'.repeat(256 * 1024)) })))
      await c.publish()
    } },
  { name: 'path_escape_export', level: 0, dir: 'export', findings: [p(0, 'pack.path-escape')], readme: 'An export of media whose thumbnail row has kind ../../../../../thumb, a path that leaves the export.',
    build: buildPathEscape },
  { name: 'path_escape_store', level: 1, findings: [p(1, 'pack.hash-malformed')], allowed: [p(0, 'pack.path-escape')],
    readme: 'The thumbnail\'s media row names its object sha256:../../../../thumb: a store names files by hashes only, so the malformed hash is refused.',
    build: async (root) => {
      const c = await CaseStore.from('media', root, ['media'])
      const thumb = (await c.rows('media')).find((r) => r.kind === 'thumb')!
      await rm(c.file(objectPath(thumb.object as string, mediaExtensionOf(thumb))))
      await c.rewriteTable('media', (rows) => rows.map((r) => (r.kind === 'thumb' ? { ...r, object: 'sha256:../../../../thumb' } : r)))
      await c.publish()
    } },

  // --- Level 3: patterns published again with a wrong period, displacement or class (correct ids)
  { name: 'replay_period', level: 3, findings: [p(3, 'pack.replay-period-mismatch')], readme: 'The blinker restated as period 3 (phases 0, 1, 0): generation 3 is not phase 0.',
    build: async (root) => { const c = await restated(root, BLINKER_ID, (r) => ({ period: 3, phases: pickPhases(r, [0, 1, 0]) })); await c.publish() } },
  { name: 'replay_not_minimal', level: 3, findings: [p(3, 'pack.replay-not-minimal')], readme: 'The blinker restated as period 4 (phases 0, 1, 0, 1): it repeats after 2.',
    build: async (root) => { const c = await restated(root, BLINKER_ID, (r) => ({ period: 4, phases: pickPhases(r, [0, 1, 0, 1]) })); await c.publish() } },
  { name: 'replay_displacement', level: 3, findings: [p(3, 'pack.replay-displacement-mismatch')], readme: 'The glider restated with d = -1,-1: after 4 generations it has moved by 1,1.',
    build: async (root) => { const c = await restated(root, GLIDER_ID, () => ({ dx: -1, dy: -1 })); await c.publish() } },
  { name: 'replay_class', level: 3, findings: [p(3, 'pack.replay-class-mismatch')], readme: 'The block restated as an oscillator (period 1, d = 0 make it a still life).',
    build: async (root) => { const c = await restated(root, BLOCK_ID, () => ({ class: 'oscillator' })); await c.publish() } },
]

function moveCell(phases: Cell[][], phase: number, from: { i: number; j: number }, to: { i: number; j: number }): Cell[][] {
  const moved = phases.map((cells) => [...cells])
  const at = moved[phase]!.findIndex((cell) => cell.i === from.i && cell.j === from.j)
  if (at < 0) throw new Error(`phase ${phase} has no cell ${from.i},${from.j}`)
  moved[phase]![at] = { ...moved[phase]![at]!, ...to }
  return moved
}

async function referencePatchPath(c: CaseStore): Promise<string> {
  const [tiling] = (await c.rows('tilings')).filter((r) => typeof r.reference === 'string')
  return objectPath(tiling!.reference as string, 'parquet')
}

async function posterPath(c: CaseStore): Promise<string> {
  const poster = (await c.rows('media')).find((r) => r.kind === 'poster')!
  return objectPath(poster.object as string, mediaExtensionOf(poster))
}

/** A media kind that walks out of an export: media/pattern/<id>/ and four more folders up. */
const ESCAPING_KIND = '../../../../../thumb'

/**
 * An export (exportPack's, of media's media table) whose thumbnail row names a path outside it. The row is
 * changed in the store as a publisher would change it, and the new part, index, manifest and signature are
 * put at the export's names; exportPack itself would refuse to lay the row out.
 */
async function buildPathEscape(exportDir: string, work: string): Promise<void> {
  const c = await CaseStore.from('media', join(work, 'path-escape-store'), ['media'])
  await c.publish()
  await exportPack({ from: c.root, to: exportDir, copy: true })
  // Made for people from the manifest and not checked; they would name the manifest before the change.
  for (const f of ['LICENSE', 'README.md', 'CITATION.cff', 'views.sql']) await rm(join(exportDir, f))
  const thumb = (await c.rows('media')).find((r) => r.kind === 'thumb')!
  const before = c.tableHash('media')
  await c.rewriteTable('media', (rows) => rows.map((r) => (r.kind === 'thumb' ? { ...r, kind: ESCAPING_KIND } : r)))
  const manifest = await c.publish()
  const signer = signerName(A.publicKey)
  const [part] = (await c.index('media')).parts
  await rm(fileIn(exportDir, exportIndexPath(before)))
  await rm(fileIn(exportDir, exportMediaPath(thumb as unknown as MediaFile)))
  await cp(c.file(c.indexPath('media')), fileIn(exportDir, exportIndexPath(c.tableHash('media'))))
  await cp(c.file(objectPath(part!.object, 'parquet')), fileIn(exportDir, exportPartPath(exportPartitionFolder('media', {}), 1)))
  await cp(c.file(objectPath(manifest, 'json')), fileIn(exportDir, EXPORT_MANIFEST_PATH))
  await cp(c.file(signaturePath(manifest, signer)), fileIn(exportDir, exportSignaturePath(signer)))
}

// ---------------------------------------------------------------------------------------------------

/** The (level, code) pairs of the failures checkPack reports (notes are not failures). */
async function reportedPairs(dir: string, level: CheckLevel): Promise<Pair[]> {
  const out: Pair[] = []
  for await (const issue of checkPack(dir, { level })) if (!issue.note) out.push({ level: issue.level, code: issue.code })
  return out
}

const pairKey = (x: Pair) => `${x.level} ${x.code}`

/** How the checker's report differs from what the case expects, or undefined when it agrees. */
function disagreement(c: CaseSpec, reported: Pair[]): string | undefined {
  const found = new Set(reported.map(pairKey))
  const ok = new Set([...c.findings, ...(c.allowed ?? [])].map(pairKey))
  const missing = c.findings.filter((x) => !found.has(pairKey(x))).map(pairKey)
  const extra = [...new Set(reported.filter((x) => !ok.has(pairKey(x))).map(pairKey))]
  if (missing.length === 0 && extra.length === 0) return undefined
  return `${missing.length > 0 ? `not reported: ${missing.join(', ')}` : ''}${missing.length > 0 && extra.length > 0 ? '; ' : ''}${extra.length > 0 ? `reported besides: ${extra.join(', ')}` : ''}`
}

async function buildVectors(dir: string): Promise<void> {
  await mkdir(dir, { recursive: false })
  const work = await mkdtemp(join(tmpdir(), 'pipe-pack-vectors-'))
  const disagreements: string[] = []
  try {
    for (const c of FAIL_CASES) {
      const caseDir = join(dir, `${c.name}_fail`)
      const pack = c.dir ?? 'store'
      await mkdir(caseDir)
      await c.build(join(caseDir, pack), work)
      const expected: Expected = { args: [pack, '--level', String(c.level)], findings: c.findings, ...(c.allowed ? { allowed: c.allowed } : {}) }
      await writeFile(join(caseDir, 'expected.json'), JSON.stringify(expected, null, 2) + '\n')
      await writeFile(join(caseDir, 'README'), c.readme + '\n')
      const problem = disagreement(c, await reportedPairs(join(caseDir, pack), c.level))
      if (problem) disagreements.push(`${c.name}: ${problem}`)
    }
    await writeFile(join(dir, 'README'), [
      'Pack format 1.0 conformance vectors, built by scripts/make-pack-vectors.ts from the golden packs in test/golden;',
      'see that script for the layout of each case. The passing cases are the golden packs themselves.',
    ].join('\n') + '\n')
    await writeHashes(dir)
  } finally {
    await rm(work, { recursive: true, force: true })
  }
  // The vectors say what the spec requires; a checker that disagrees is reported, not written into them.
  for (const d of disagreements) process.stderr.write(`the checker disagrees with case ${d}\n`)
}

async function main(argv: string[]): Promise<number> {
  const check = argv.includes('--check')
  if (argv.some((a) => a !== '--check')) {
    process.stderr.write('usage: make-pack-vectors.ts [--check]\n')
    return 2
  }
  return writeOrCheckTree(VECTORS_DIR, buildVectors, check, 'the pack vectors')
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then((code) => { process.exitCode = code }, (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
    process.exitCode = 1
  })
}

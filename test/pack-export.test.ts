import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdir, mkdtemp, readdir, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import t, { type Test } from 'tap'
import { runPipeline } from '../src/core/runner.js'
import { buildManifest, type ManifestInput } from '../src/formats/pack/documents/doc-manifest.js'
import { buildSearchIndex, buildTableIndex, type TablePart } from '../src/formats/pack/documents/doc-index.js'
import { buildRef, signRef } from '../src/formats/pack/documents/doc-ref.js'
import { objectHash, storeDocumentBytes } from '../src/formats/pack/documents/documents.js'
import { exportPack } from '../src/formats/pack/export/export.js'
import { firstKeyStatement, keyStatementBytes } from '../src/formats/pack/keys/key-statements.js'
import { PackPartWriter } from '../src/formats/pack/tables/parquet-write.js'
import { fingerprint, generateKey, signerName } from '../src/formats/pack/keys/ssh-key.js'
import { NS_MANIFEST, signSshsig } from '../src/formats/pack/keys/sshsig.js'
import {
  STORE_CODES,
  STORE_DOCUMENT_PATH,
  exportIndexLoader,
  keyPath,
  objectPath,
  planExport,
  refPath,
  signaturePath,
  storeFile,
  writeObject,
  writeStoreFile,
} from '../src/formats/pack/documents/store.js'
import { EXPLORE_RUNS_SCHEMA, EXPLORE_SCORES_SCHEMA, PACK_TABLES, REFERENCE_PATCH_SCHEMA, type TableSchema } from '../src/formats/pack/tables/table-schemas.js'
import { registry } from '../pipelines/registry.js'
import { captureIO } from './helpers/io.js'
import { needs } from './helpers/tools.js'
import { hex32, patternRows, sampleRows } from './pack-parquet-fixtures.js'

const T0 = '2026-11-11T00:00:00Z'
const T1 = '2026-11-12T00:00:00Z'
const KEY = generateKey({ seed: Buffer.alloc(32, 0x5e) })
const SIGNER = signerName(KEY.publicKey)
const PUBLISHER = fingerprint(KEY.publicKey)
const SEARCH = '0f8fad5b-d9cb-469f-a165-70867728950e'
const FEED = 'export-test'
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from('not really a picture, but a media object all the same')])
const sha256 = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'pack-export-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** Writes rows as one part of `schema` and makes it a store object; its index entry. */
async function writePart(root: string, schema: TableSchema, rows: Record<string, unknown>[], partition: Record<string, string> = {}): Promise<TablePart> {
  const tmp = join(root, '.tmp')
  await mkdir(tmp, { recursive: true })
  const writer = new PackPartWriter(schema, { dir: tmp, partition, encodeOnThread: false })
  await writer.write(rows)
  const [part] = await writer.finish()
  const object = await writeObject(root, await readFile(part!.path), 'parquet')
  await unlink(part!.path)
  return { bytes: object.bytes, first: part!.first, last: part!.last, object: object.hash, partition: { ...part!.partition }, rows: part!.rows }
}

async function writeIndex(root: string, table: string, parts: TablePart[]): Promise<string> {
  const built = buildTableIndex({ table, schema: `jetcarp-${table} 1`, parts })
  return (await writeObject(root, built.bytes, 'json')).hash
}

interface TestStore {
  root: string
  manifest: string
  parent: string
  /** The hash of every data object, by what it is. */
  objects: { patterns: string[]; tilings: string; reference: string; media: string; mediaTable: string; segment: string; sidecar: string }
  patternId: string
}

/**
 * A small store: patterns in two partitions, tilings with an aperiodic row naming a reference patch, a
 * media row and its object, a search with a segment and a score sidecar; two versions (the first the
 * second's parent, with a parent the store lacks), the second signed, its key statement and ref.
 */
async function buildStore(root: string): Promise<TestStore> {
  await writeStoreFile(root, STORE_DOCUMENT_PATH, storeDocumentBytes())
  const spaceships = patternRows(3)
  const oscillators = patternRows(2).map((r) => ({ ...r, class: 'oscillator', class_group: 'oscillator' }))
  const patterns = [
    await writePart(root, PACK_TABLES.patterns, spaceships, { class_group: 'spaceship', tiling_group: 'k1' }),
    await writePart(root, PACK_TABLES.patterns, oscillators, { class_group: 'oscillator', tiling_group: 'k1' }),
  ]
  const reference = await writePart(root, REFERENCE_PATCH_SCHEMA, sampleRows(REFERENCE_PATCH_SCHEMA))
  const tilingRows = sampleRows(PACK_TABLES.tilings).map((r) => (r.reference === null ? r : { ...r, reference: reference.object }))
  const tilings = await writePart(root, PACK_TABLES.tilings, tilingRows)
  const media = await writeObject(root, PNG, 'png')
  const patternId = spaceships[0]!.id as string
  const mediaRow = { target: `pattern:${patternId}`, kind: 'poster', from_seed: false, object: media.hash, media_type: 'image/png', width: 2, height: 2, frames: 1, bytes: media.bytes, render_key: 'r1', render: '{}' }
  const mediaTable = await writePart(root, PACK_TABLES.media, [mediaRow])
  const segment = await writePart(root, EXPLORE_RUNS_SCHEMA, sampleRows(EXPLORE_RUNS_SCHEMA))
  const sidecar = await writePart(root, EXPLORE_SCORES_SCHEMA, sampleRows(EXPLORE_SCORES_SCHEMA))
  const search = buildSearchIndex({
    created: T0, engine_version: '0.4.0', kind: 'explore', run_schema: 'jetcarp-explore-runs 1', score_schema: 'jetcarp-explore-scores 1', search: SEARCH, spec: { density: '0.35' }, updated: T0,
    parts: [{ bytes: segment.bytes, engine_version: '0.4.0', first: '1', last: '30', object: segment.object, rows: segment.rows, sealed: T0, segment: 'part-000001' }],
    scores: [{ created: T0, engine_version: '0.4.0', version: 1, parts: [{ bytes: sidecar.bytes, object: sidecar.object, rows: sidecar.rows, segment: 'part-000001' }] }],
  })
  const searchIndex = (await writeObject(root, search.bytes, 'json')).hash

  const base: ManifestInput = {
    feed: FEED, title: 'export test', description: 'A small store | made by\ntest/pack-export.test.ts.', version_label: 'v1', created: T0, licence: 'CC0-1.0',
    creators: [{ name: 'Ada Lovelace', orcid: '0000-0002-1825-0097', role: 'creator' }, { name: 'Charles Babbage', role: 'contributor' }],
    publisher: PUBLISHER,
    engine: { name: 'JETCARP', version: '0.4.0', schemes: { ant: 'jetcarp-ant-v1', geometry: 'jetcarp-geometry-v1', pattern: 'jetcarp-pattern-v3', tables: 'jetcarp-tables-1' }, rule_semantics: { bs: '1' } },
    tables: { patterns: await writeIndex(root, 'patterns', [patterns[0]!]) },
    stats: { ants: 0, bytes: patterns[0]!.bytes, patterns: 3, quickstart: 0 },
    parents: [`sha256:${'77'.repeat(32)}`],
  }
  const first = buildManifest(base)
  await writeObject(root, first.bytes, 'json')
  const second = buildManifest({
    ...base,
    version_label: 'v2',
    created: T1,
    doi: '10.5281/zenodo.1234567',
    parents: [first.hash],
    tables: { patterns: await writeIndex(root, 'patterns', patterns), tilings: await writeIndex(root, 'tilings', [tilings]), media: await writeIndex(root, 'media', [mediaTable]) },
    searches: { [SEARCH]: searchIndex },
    stats: { ants: 0, bytes: patterns[0]!.bytes + patterns[1]!.bytes + tilings.bytes + mediaTable.bytes + segment.bytes + sidecar.bytes, patterns: 5, quickstart: 0 },
  })
  await writeObject(root, second.bytes, 'json')
  await writeStoreFile(root, signaturePath(second.hash, SIGNER), Buffer.from(signSshsig(KEY, second.bytes, NS_MANIFEST)))
  await writeStoreFile(root, keyPath(SIGNER), keyStatementBytes(firstKeyStatement(KEY, { created: T0, name: 'Ada Lovelace' })))
  await writeStoreFile(root, refPath(FEED), signRef(buildRef({ feed: FEED, manifest: second.hash, publisher: PUBLISHER, seq: 2, updated: T1 }), KEY).bytes)
  await rm(join(root, '.tmp'), { recursive: true, force: true })
  return {
    root,
    manifest: second.hash,
    parent: first.hash,
    objects: { patterns: patterns.map((p) => p.object), tilings: tilings.object, reference: reference.object, media: media.hash, mediaTable: mediaTable.object, segment: segment.object, sidecar: sidecar.object },
    patternId,
  }
}

/** Every file under `dir`, relative, '/'-separated, sorted. */
async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true })
  return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name)).split('\\').join('/')).sort()
}

const hexOf = (hash: string) => hash.slice('sha256:'.length)

t.test('an export lays the version out as the spec lists, every file with the hash its index states', async (t) => {
  const dir = await tempDir(t)
  const store = await buildStore(join(dir, 'store'))
  const out = join(dir, 'out', `${FEED}-v2`)
  const r = await exportPack({ from: store.root, to: out })
  t.equal(r.manifest, store.manifest)
  t.equal(r.feed, FEED)
  t.equal(r.copied, 0, 'one file system: nothing copied')

  const files = await listFiles(out)
  const pkg = 'tables/patterns'
  const expectedData = [
    `${pkg}/class_group=oscillator/tiling_group=k1/part-000001.parquet`,
    `${pkg}/class_group=spaceship/tiling_group=k1/part-000001.parquet`,
    'tables/tilings/part-000001.parquet',
    'tables/media/part-000001.parquet',
    'tilings/reference/penrose-kd.parquet',
    `searches/${SEARCH}/runs/part-000001.parquet`,
    `searches/${SEARCH}/scores-1/part-000001.parquet`,
    `media/pattern/${store.patternId}/poster.png`,
  ]
  for (const f of [...expectedData, 'pack.json', `history/${hexOf(store.parent)}.json`, `sigs/${SIGNER}.sig`, `keys/${SIGNER}.json`, 'LICENSE', 'README.md', 'CITATION.cff', 'views.sql']) {
    t.ok(files.includes(f), f)
  }
  t.equal(files.filter((f) => f.startsWith('index/')).length, 4, 'the three table indexes and the search index')
  t.equal(files.filter((f) => f.startsWith('history/')).length, 1, 'the parent the store lacks is left out')
  t.equal(r.files, files.length)
  t.equal(r.linked, files.length - 6, 'every object linked; signatures, keys and the four made files written')
  t.same((await readdir(join(dir, 'out'))).sort(), [`${FEED}-v2`], 'no temporary folder left beside it')

  // Checked like a store: planExport over the export's own index/ names every file with its hash.
  const packJson = await readFile(join(out, 'pack.json'))
  t.equal(sha256(packJson), store.manifest, 'pack.json is the manifest\'s exact bytes')
  const { parseManifest } = await import('../src/formats/pack/documents/doc-manifest.js')
  const parsed = parseManifest(packJson)
  if (!parsed.ok) throw new Error(parsed.detail)
  const layout = await planExport({ manifest: parsed.value.manifest, hash: store.manifest }, exportIndexLoader(out), { history: [store.parent] })
  layout.addReferencePatch('penrose-kd', store.objects.reference)
  layout.addMedia({ target: `pattern:${store.patternId}`, kind: 'poster', from_seed: false, media_type: 'image/png', object: store.objects.media })
  const planned = layout.entries()
  t.same(planned.map((e) => e.path).sort(), files.filter((f) => !/^(sigs|keys)\/|^[A-Za-z.]+$/.test(f) || f === 'pack.json').sort(), 'the export holds exactly the planned files, and the others')
  for (const e of planned) t.equal(sha256(await readFile(join(out, e.path))), e.hash, `${e.path} has its stated hash`)
  t.equal(sha256(await readFile(join(out, `keys/${SIGNER}.json`))), sha256(await readFile(storeFile(store.root, keyPath(SIGNER)))), 'the key statement as the store has it')
})

t.test('data files are hard links to the store\'s objects, and --copy copies them', async (t) => {
  const dir = await tempDir(t)
  const store = await buildStore(join(dir, 'store'))
  const linked = join(dir, 'linked')
  const copied = join(dir, 'copied')
  await exportPack({ from: store.root, to: linked })
  const c = await exportPack({ from: store.root, to: copied, copy: true })
  t.equal(c.linked, 0)
  t.equal(c.copied, c.files - 6)
  const pairs: [string, string][] = [
    ['tables/tilings/part-000001.parquet', objectPath(store.objects.tilings, 'parquet')],
    ['tilings/reference/penrose-kd.parquet', objectPath(store.objects.reference, 'parquet')],
    [`media/pattern/${store.patternId}/poster.png`, objectPath(store.objects.media, 'png')],
    [`searches/${SEARCH}/scores-1/part-000001.parquet`, objectPath(store.objects.sidecar, 'parquet')],
    ['pack.json', objectPath(store.manifest, 'json')],
  ]
  for (const [exported, object] of pairs) {
    const original = await stat(storeFile(store.root, object))
    t.equal((await stat(join(linked, exported))).ino, original.ino, `${exported} shares the object's inode`)
    t.not((await stat(join(copied, exported))).ino, original.ino, `${exported} copied: its own inode`)
    t.same(await readFile(join(copied, exported)), await readFile(storeFile(store.root, object)), `${exported} copied byte for byte`)
  }
})

t.test('DuckDB reads the tables, and views.sql makes a view of each', async (t) => {
  const dir = await tempDir(t)
  const store = await buildStore(join(dir, 'store'))
  const out = join(dir, 'out')
  await exportPack({ from: store.root, to: out })
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  t.teardown(() => conn.closeSync())
  const rows = async (sql: string) => (await conn.runAndReadAll(sql)).getRowObjectsJson()
  const glob = join(out, 'tables/patterns/**/*.parquet')
  t.same(await rows(`SELECT class_group, count(*)::INTEGER AS n FROM read_parquet('${glob}', hive_partitioning = false) GROUP BY ALL ORDER BY 1`), [{ class_group: 'oscillator', n: 2 }, { class_group: 'spaceship', n: 3 }])
  t.same(await rows(`SELECT count(*)::INTEGER AS n FROM read_parquet('${glob}')`), [{ n: 5 }], 'read with its default (Hive) settings too')
  await conn.run(`SET file_search_path = '${out}'`)
  for (const statement of (await readFile(join(out, 'views.sql'), 'utf8')).split('\n').filter((l) => l.startsWith('CREATE'))) await conn.run(statement)
  t.same(await rows('SELECT count(*)::INTEGER AS n FROM patterns'), [{ n: 5 }])
  t.same(await rows('SELECT family FROM tilings ORDER BY pin_key'), [{ family: 'penrose-kd' }, { family: 'square' }])
  t.same(await rows('SELECT kind, media_type FROM media'), [{ kind: 'poster', media_type: 'image/png' }])
  t.same(await rows(`SELECT count(*)::INTEGER AS n FROM "search-${SEARCH}-runs"`), [{ n: 30 }])
})

t.test('the same store and version give the same export, byte for byte', async (t) => {
  const dir = await tempDir(t)
  const store = await buildStore(join(dir, 'store'))
  await exportPack({ from: store.root, to: join(dir, 'a') })
  await exportPack({ from: store.root, to: join(dir, 'b'), copy: true, feed: FEED })
  const a = await listFiles(join(dir, 'a'))
  t.same(await listFiles(join(dir, 'b')), a)
  for (const f of a) t.same(await readFile(join(dir, 'b', f)), await readFile(join(dir, 'a', f)), f)
  // Another store path gives the same bytes: nothing of the machine is written.
  const elsewhere = await buildStore(join(dir, 'another-store'))
  t.equal(elsewhere.manifest, store.manifest)
  await exportPack({ from: elsewhere.root, to: join(dir, 'c') })
  for (const f of a) t.same(await readFile(join(dir, 'c', f)), await readFile(join(dir, 'a', f)), `${f} (another store)`)
})

t.test('an earlier version is exported by its manifest hash', async (t) => {
  const dir = await tempDir(t)
  const store = await buildStore(join(dir, 'store'))
  const out = join(dir, 'v1')
  const r = await exportPack({ from: store.root, to: out, manifest: store.parent })
  t.equal(r.manifest, store.parent)
  const files = await listFiles(out)
  t.same(files.filter((f) => f.startsWith('tables/')), ['tables/patterns/class_group=spaceship/tiling_group=k1/part-000001.parquet'])
  t.notOk(files.some((f) => f.startsWith('sigs/') || f.startsWith('history/')), 'v1 is unsigned and its only parent is not in the store')
  t.ok(files.includes(`keys/${SIGNER}.json`), 'the publisher\'s key statement all the same')
  await t.rejects(exportPack({ from: store.root, to: join(dir, 'x'), manifest: store.parent, feed: 'other-feed' }), { code: 'usage.feed-mismatch' })
})

t.test('an object whose bytes do not match its hash stops the export, and nothing is left at DIR', async (t) => {
  const dir = await tempDir(t)
  const store = await buildStore(join(dir, 'store'))
  for (const [what, object] of [['a part', objectPath(store.objects.patterns[1]!, 'parquet')], ['a media file', objectPath(store.objects.media, 'png')], ['a reference patch', objectPath(store.objects.reference, 'parquet')]] as const) {
    const file = storeFile(store.root, object)
    const good = await readFile(file)
    const bad = Buffer.from(good)
    bad[bad.length >> 1]! ^= 1
    await writeFile(file, bad)
    const out = join(dir, 'out', what.replaceAll(' ', '-'))
    await t.rejects(exportPack({ from: store.root, to: out }), { code: STORE_CODES.objectHashMismatch }, what)
    await t.rejects(stat(out), { code: 'ENOENT' }, `${what}: no export`)
    t.same(await readdir(join(dir, 'out')), [], `${what}: no temporary folder`)
    await writeFile(file, good)
  }
  const empty = join(dir, 'empty')
  await mkdir(empty)
  const missing = storeFile(store.root, objectPath(store.objects.sidecar, 'parquet'))
  const sidecar = await readFile(missing)
  await unlink(missing)
  await t.rejects(exportPack({ from: store.root, to: empty }), { code: STORE_CODES.objectMissing }, 'a missing object')
  t.same(await readdir(empty), [], 'an empty DIR stays empty')
  await writeFile(missing, sidecar)
  const r = await exportPack({ from: store.root, to: empty })
  t.equal(r.manifest, store.manifest, 'an empty DIR is taken')
})

t.test('a signature that does not verify stops the export', async (t) => {
  const dir = await tempDir(t)
  const store = await buildStore(join(dir, 'store'))
  const other = generateKey({ seed: Buffer.alloc(32, 0x11) })
  // Signed by another key but filed under the publisher's name.
  await writeStoreFile(store.root, signaturePath(store.manifest, SIGNER), Buffer.from(signSshsig(other, Buffer.from('another message'), NS_MANIFEST)))
  await t.rejects(exportPack({ from: store.root, to: join(dir, 'out') }), { code: /^pack\.sig/ })
  await t.rejects(stat(join(dir, 'out')), { code: 'ENOENT' })
})

t.test('which version, and where: usage errors', async (t) => {
  const dir = await tempDir(t)
  const store = await buildStore(join(dir, 'store'))
  const full = join(dir, 'full')
  await mkdir(full)
  await writeFile(join(full, 'x'), 'x')
  await t.rejects(exportPack({ from: store.root, to: full }), { code: 'usage.target-not-empty', exitCode: 2 })
  await t.rejects(exportPack({ from: dir, to: join(dir, 'o') }), { code: 'usage.not-a-store' })
  await t.rejects(exportPack({ from: store.root, to: join(dir, 'o'), feed: 'nope' }), { code: 'usage.no-such-feed' })
  await t.rejects(exportPack({ from: store.root, to: join(dir, 'o'), feed: 'bad/feed' }), { code: 'usage.bad-option' })
  await t.rejects(exportPack({ from: store.root, to: join(dir, 'o'), manifest: 'sha256:ABC' }), { code: 'usage.bad-option' })
  await t.rejects(exportPack({ from: store.root, to: join(dir, 'o'), manifest: objectHash(Buffer.from('not in the store')) }), { code: STORE_CODES.objectMissing })
  const { bytes } = signRef(buildRef({ feed: 'second', manifest: store.parent, publisher: PUBLISHER, seq: 1, updated: T0 }), KEY)
  await writeStoreFile(store.root, refPath('second'), bytes)
  await t.rejects(exportPack({ from: store.root, to: join(dir, 'o') }), { code: 'usage.feed-needed', message: /export-test, second/ })
  await t.rejects(exportPack({ from: store.root, to: join(dir, 'o'), feed: 'second' }), { code: 'usage.feed-mismatch' }, 'the ref names a manifest of another feed')
})

t.test('the made files come from the manifest: LICENSE, README.md (whose check passes), CITATION.cff', async (t) => {
  const dir = await tempDir(t)
  const store = await buildStore(join(dir, 'store'))
  const out = join(dir, 'out')
  await exportPack({ from: store.root, to: out })
  const licence = await readFile(join(out, 'LICENSE'), 'utf8')
  t.match(licence, /^export test \(export-test v2\)\nManifest sha256:[0-9a-f]{64}\n/)
  t.match(licence, /CC0-1\.0 \(SPDX identifier\)/)
  const readme = await readFile(join(out, 'README.md'), 'utf8')
  t.match(readme, /^# export test\n\nA small store \| made by\ntest\/pack-export\.test\.ts\.\n/)
  t.match(readme, new RegExp(`\\| Manifest \\| \`${store.manifest}\``))
  t.match(readme, /\| Creators \| Ada Lovelace \(creator, ORCID 0000-0002-1825-0097\); Charles Babbage \(contributor\) \|/)
  t.notMatch(readme, new RegExp(dir), 'no local path')
  const check = /```sh\n([\s\S]*?)```/.exec(readme)![1]!
  await t.test("the README's check, run by sh", needs('ssh-keygen'), async (t) => {
    const sh = spawnSync('sh', ['-c', check], { cwd: out, encoding: 'utf8' })
    t.equal(sh.status, 0, `the README's ssh-keygen check passes: ${sh.stderr}${sh.stdout}`)
    t.match(sh.stdout, /Good "jetcarp-manifest" signature for publisher/)
  })
  const cff = await readFile(join(out, 'CITATION.cff'), 'utf8')
  t.equal(cff, [
    'cff-version: 1.2.0',
    'message: "If you use this data, please cite it as below."',
    'type: dataset',
    'title: "export test"',
    'abstract: "A small store | made by\\ntest/pack-export.test.ts."',
    'authors:',
    '  - name: "Ada Lovelace"',
    '    orcid: "https://orcid.org/0000-0002-1825-0097"',
    'version: "v2"',
    'date-released: "2026-11-12"',
    'license: "CC0-1.0"',
    'doi: "10.5281/zenodo.1234567"',
    'identifiers:',
    '  - type: other',
    `    value: "${store.manifest}"`,
    '    description: "The manifest hash of this version of feed export-test (JETCARP pack format 1.0)"',
    '',
  ].join('\n'))
})

t.test('pipe run pack-export runs the export and reports it', async (t) => {
  const dir = await tempDir(t)
  const store = await buildStore(join(dir, 'store'))
  const def = registry.pipeline('pack-export')!
  const io = captureIO(true)
  const r = await runPipeline(registry, def, { from: store.root, to: join(dir, 'out'), copy: true }, io.settings)
  t.equal(r.exitCode, 0, io.err())
  const summary = JSON.parse(io.out()) as Record<string, unknown>
  t.match(summary, { ok: true, manifest: store.manifest, feed: FEED, versions: 1, linked: 0, files: r.summary.files })
  const again = captureIO()
  const refused = await runPipeline(registry, def, { from: store.root, to: join(dir, 'out') }, again.settings)
  t.equal(refused.exitCode, 2)
  t.match(again.err(), /^pipe: \[pack-export\] --to: .* exists and is not an empty folder/)
})

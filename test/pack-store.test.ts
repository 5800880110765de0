import { copyFile, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import t, { type Test } from 'tap'
import { DOC_CODES, MAX_DOCUMENT_BYTES, objectHash } from '../src/formats/pack/documents/documents.js'
import { buildManifest, type ManifestInput } from '../src/formats/pack/documents/doc-manifest.js'
import { buildSearchIndex, buildTableIndex, type TablePart } from '../src/formats/pack/documents/doc-index.js'
import { walkTableIndex } from '../src/formats/pack/documents/index-walk.js'
import { fingerprint, generateKey, signerName } from '../src/formats/pack/keys/ssh-key.js'
import {
  EXPORT_MANIFEST_PATH,
  ExportLayout,
  STORE_CODES as S,
  STORE_DOCUMENT_PATH,
  exportHistoryPath,
  exportIndexLoader,
  exportIndexPath,
  exportKeyPath,
  exportMediaPath,
  exportPartPath,
  exportPartitionFolder,
  exportReferencePath,
  exportScorePath,
  exportSegmentPath,
  exportSignaturePath,
  keyPath,
  mediaExtension,
  mediaTypeOfExtension,
  objectPath,
  parseStorePath,
  planExport,
  readDocumentFile,
  readDocumentObject,
  refPath,
  signaturePath,
  storeFile,
  storeIndexLoader,
  verifyObjectFile,
  writeObject,
  writeStoreFile,
} from '../src/formats/pack/documents/store.js'

const T0 = '2026-11-11T00:00:00Z'
const KEY = generateKey({ seed: Buffer.alloc(32, 7) })
const SIGNER = signerName(KEY.publicKey)
const UUID = '0b6c2f9e-5d1a-4c3b-9a8e-7f6d5c4b3a21'
const ID = '0123456789abcdef0123456789abcdef'
const HASH = objectHash(Buffer.from('an object'))
const HEX = HASH.slice(7)

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'pack-store-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

const codeOf = (r: { ok: boolean; code?: string }) => (r.ok ? 'ok' : r.code)
function thrownCode(fn: () => unknown): string {
  try {
    fn()
    return 'ok'
  } catch (err) {
    return (err as { code?: string }).code ?? String(err)
  }
}

t.test('store paths are built from checked parts, and read back', async (t) => {
  t.equal(objectPath(HASH, 'parquet'), `objects/sha256/${HEX.slice(0, 2)}/${HEX}.parquet`)
  t.equal(signaturePath(HASH, SIGNER), `sigs/sha256/${HEX.slice(0, 2)}/${HEX}/${SIGNER}.sig`)
  t.equal(refPath('golden-a'), 'refs/golden-a.json')
  t.equal(keyPath(SIGNER), `keys/${SIGNER}.json`)
  t.same(parseStorePath(STORE_DOCUMENT_PATH), { ok: true, value: { kind: 'store' } })
  t.same(parseStorePath(objectPath(HASH, 'webp')), { ok: true, value: { kind: 'object', hash: HASH, ext: 'webp' } })
  t.same(parseStorePath(signaturePath(HASH, SIGNER)), { ok: true, value: { kind: 'signature', manifest: HASH, signer: SIGNER } })
  t.same(parseStorePath('refs/Golden-A.json'), { ok: true, value: { kind: 'ref', feed: 'Golden-A' } })
  t.same(parseStorePath(keyPath(SIGNER)), { ok: true, value: { kind: 'key', signer: SIGNER } })
  for (const ext of ['json', 'parquet', 'png', 'gif', 'webp'] as const) t.ok(parseStorePath(objectPath(HASH, ext)).ok, ext)
  t.equal(storeFile('/store', objectPath(HASH, 'json')), join('/store', 'objects', 'sha256', HEX.slice(0, 2), `${HEX}.json`))
})

t.test('every path-escape attempt is refused', async (t) => {
  const aa = HEX.slice(0, 2)
  const escapes = [
    `../objects/sha256/${aa}/${HEX}.json`,
    `/objects/sha256/${aa}/${HEX}.json`,
    `objects/sha256/${aa}/../${aa}/${HEX}.json`,
    `objects/sha256/${aa}/./${HEX}.json`,
    `objects//sha256/${aa}/${HEX}.json`,
    `objects/sha256/${aa}/${HEX}.json/`,
    `objects\\sha256\\${aa}\\${HEX}.json`,
    `objects/sha256/${aa}\\${HEX}.json`,
    `objects/sha256/${aa.toUpperCase()}/${HEX.toUpperCase()}.json`,
    `objects/sha256/${aa}/${HEX.slice(0, 63)}A.json`,
    `objects/sha256/${aa}/${HEX.slice(1)}.json`,
    `objects/sha256/${aa}/${HEX}0.json`,
    `objects/sha256/${aa === '00' ? '01' : '00'}/${HEX}.json`,
    `objects/sha256/${aa}/${HEX}.JSON`,
    `objects/sha256/${aa}/${HEX}.exe`,
    `objects/sha256/${aa}/${HEX}`,
    `objects/sha256/${aa}/${HEX}.json\0`,
    `objects/sha512/${aa}/${HEX}.json`,
    `sigs/sha256/${aa}/${HEX}/${SIGNER.toUpperCase()}.sig`,
    `sigs/sha256/${aa}/${HEX}/SHA256:abc.sig`,
    `sigs/sha256/${aa}/${HEX}.sig`,
    'refs/../keys/x.json',
    'refs/a_b.json',
    'refs/.json',
    `refs/${'a'.repeat(65)}.json`,
    'refs/a/b.json',
    `keys/${SIGNER.slice(1)}.json`,
    'views.sql',
    '.tmp/123-abc',
    'receipts/x',
    'jetcarp-store.json/',
    './jetcarp-store.json',
    'C:\\store\\jetcarp-store.json',
    '',
  ]
  for (const p of escapes) t.equal(codeOf(parseStorePath(p)), S.pathEscape, JSON.stringify(p))
  t.equal(codeOf(parseStorePath(42)), S.pathEscape)
  t.equal(thrownCode(() => storeFile('/store', '../etc/passwd')), S.pathEscape)
  t.equal(thrownCode(() => objectPath('sha256:../../../../etc/passwd/' + 'a'.repeat(34), 'json')), S.pathEscape)
  t.equal(thrownCode(() => objectPath(HASH.toUpperCase(), 'json')), S.pathEscape)
  t.equal(thrownCode(() => objectPath('sha512:' + HEX, 'json')), S.pathEscape)
  t.equal(thrownCode(() => objectPath(HASH, 'exe' as 'json')), S.pathEscape)
  t.equal(thrownCode(() => signaturePath(HASH, '../x')), S.pathEscape)
  t.equal(thrownCode(() => refPath('../x')), S.pathEscape)
  t.equal(thrownCode(() => refPath('a/b')), S.pathEscape)
  t.equal(thrownCode(() => keyPath(fingerprint(KEY.publicKey))), S.pathEscape, 'a fingerprint is no file name')
})

t.test('media types and extensions', async (t) => {
  t.same(mediaExtension('image/png'), { ok: true, value: 'png' })
  t.same(mediaExtension('image/gif'), { ok: true, value: 'gif' })
  t.same(mediaExtension('image/webp'), { ok: true, value: 'webp' })
  for (const m of ['image/jpeg', 'IMAGE/PNG', 'image/png; charset=x', 'image/svg+xml', '', 3]) t.equal(codeOf(mediaExtension(m)), S.mediaType, JSON.stringify(m))
  t.equal(mediaTypeOfExtension('webp'), 'image/webp')
  t.equal(thrownCode(() => mediaTypeOfExtension('jpg' as 'png')), S.mediaType)
})

t.test('objects are written through .tmp/, kept, and never changed', async (t) => {
  const root = await tempDir(t)
  const data = Buffer.from('PAR1 some parquet bytes PAR1')
  const first = await writeObject(root, data, 'parquet')
  t.same(first, { hash: objectHash(data), bytes: data.length, path: objectPath(objectHash(data), 'parquet'), created: true })
  t.same(await readFile(storeFile(root, first.path)), data)
  t.same(await readdir(join(root, '.tmp')), [], 'nothing left in .tmp/')
  const again = await writeObject(root, data, 'parquet')
  t.equal(again.created, false, 'an object already there is kept')
  async function* chunks() {
    yield data.subarray(0, 5)
    yield data.subarray(5)
  }
  t.same(await writeObject(root, chunks(), 'parquet'), again, 'a stream gives the same object')
  t.equal((await writeObject(root, data, 'json')).created, true, 'the extension is part of the name')

  // The store's copy damaged: writing again refuses, and keeps the damaged copy as it is.
  const file = storeFile(root, first.path)
  const damaged = Buffer.from(data)
  damaged[0] = 0x51
  await writeFile(file, damaged)
  t.equal(await writeObject(root, data, 'parquet').then(() => 'ok', (e) => e.code), S.objectConflict)
  t.same(await readFile(file), damaged, 'the existing object was not changed')
  t.same(await readdir(join(root, '.tmp')), [], 'the temporary file was removed')
})

t.test('store files that are not objects: written through .tmp/, replaced', async (t) => {
  const root = await tempDir(t)
  await writeStoreFile(root, refPath('golden-a'), Buffer.from('{"seq":1}'))
  await writeStoreFile(root, refPath('golden-a'), Buffer.from('{"seq":2}'))
  t.equal((await readFile(join(root, 'refs', 'golden-a.json'))).toString(), '{"seq":2}')
  await writeStoreFile(root, STORE_DOCUMENT_PATH, Buffer.from('{}'))
  await writeStoreFile(root, signaturePath(HASH, SIGNER), Buffer.from('sig'))
  t.ok((await lstat(storeFile(root, signaturePath(HASH, SIGNER)))).isFile())
  t.equal(await writeStoreFile(root, objectPath(HASH, 'json'), Buffer.from('x')).then(() => 'ok', (e) => e.code), S.pathEscape, 'objects only through writeObject')
  t.equal(await writeStoreFile(root, '../outside.json', Buffer.from('x')).then(() => 'ok', (e) => e.code), S.pathEscape)
  t.same(await readdir(join(root, '.tmp')), [])
})

t.test('objects are checked on their size before reading, then on their hash', async (t) => {
  const root = await tempDir(t)
  const data = Buffer.alloc(3 * 1024 * 1024 + 17, 0x61)
  const { hash, path } = await writeObject(root, data, 'parquet')
  const file = storeFile(root, path)
  t.same(await verifyObjectFile(file, hash, { bytes: data.length }), { ok: true, value: { path: file, bytes: data.length } }, 'streamed in chunks')
  t.equal(codeOf(await verifyObjectFile(file, hash)), 'ok', 'no stated size')
  t.equal(codeOf(await verifyObjectFile(file, hash, { bytes: data.length + 1 })), S.objectSizeMismatch)
  t.equal(codeOf(await verifyObjectFile(file, objectHash(Buffer.from('other')), { bytes: data.length })), S.objectHashMismatch)
  const flipped = join(root, 'flipped')
  const copy = Buffer.from(data)
  copy[data.length - 1] = 0x62
  await writeFile(flipped, copy)
  t.equal(codeOf(await verifyObjectFile(flipped, hash, { bytes: data.length })), S.objectHashMismatch, 'one byte changed, same size')
  t.equal(codeOf(await verifyObjectFile(join(root, 'none'), hash)), S.objectMissing)
  await symlink(file, join(root, 'link'))
  t.equal(codeOf(await verifyObjectFile(join(root, 'link'), hash)), S.objectMissing, 'a symbolic link is no object')
  t.equal(codeOf(await verifyObjectFile(root, hash)), S.objectMissing, 'a folder is no object')

  // Sparse files: refused on the size alone, so at once (reading 5 GiB would take seconds).
  const huge = join(root, 'huge')
  await writeFile(huge, '')
  await truncate(huge, 5 * 1024 ** 3)
  const started = Date.now()
  t.equal(codeOf(await verifyObjectFile(huge, hash)), S.objectTooLarge, 'above 4 GiB')
  t.equal(codeOf(await verifyObjectFile(huge, hash, { bytes: 10 })), S.objectTooLarge)
  await truncate(huge, 2 * 1024 ** 3)
  t.equal(codeOf(await verifyObjectFile(huge, hash, { bytes: 10 })), S.objectSizeMismatch, 'the stated size, before reading')
  t.equal(codeOf(await readDocumentObject(huge, hash)), DOC_CODES.jsonTooLarge, 'a document above 16 MiB')
  t.ok(Date.now() - started < 1000, 'nothing was read')
})

t.test('documents are read whole only within 16 MiB', async (t) => {
  const root = await tempDir(t)
  const doc = Buffer.from('{"format":"jetcarp-store","version":"1.0"}')
  const { hash, path } = await writeObject(root, doc, 'json')
  t.same(await readDocumentObject(storeFile(root, path), hash), { ok: true, value: doc })
  t.equal(codeOf(await readDocumentObject(storeFile(root, path), objectHash(Buffer.from('x')))), S.objectHashMismatch)
  const big = join(root, 'big.json')
  await writeFile(big, '')
  await truncate(big, MAX_DOCUMENT_BYTES + 1)
  t.equal(codeOf(await readDocumentFile(big)), DOC_CODES.jsonTooLarge, '16 MiB + 1')
  await truncate(big, MAX_DOCUMENT_BYTES)
  t.equal((await readDocumentFile(big)).ok, true, 'exactly 16 MiB')
  t.equal(codeOf(await readDocumentFile(join(root, 'refs', 'none.json'))), S.objectMissing)
  const empty = join(root, 'empty')
  await writeFile(empty, '')
  t.same(await readDocumentFile(empty), { ok: true, value: Buffer.alloc(0) })
})

const part = (n: number, group: string, over: Partial<TablePart> = {}): TablePart => ({
  bytes: 0,
  first: 'a',
  last: 'z',
  object: '',
  partition: { class_group: 'spaceship', tiling_group: group },
  rows: n,
  ...over,
})

t.test('export paths: every name component checked', async (t) => {
  t.equal(EXPORT_MANIFEST_PATH, 'pack.json')
  t.equal(exportIndexPath(HASH), `index/${HEX}.json`)
  t.equal(exportHistoryPath(HASH), `history/${HEX}.json`)
  t.equal(exportPartitionFolder('patterns', { class_group: 'spaceship', tiling_group: 'k3' }), 'tables/patterns/class_group=spaceship/tiling_group=k3')
  t.equal(exportPartitionFolder('rules', {}), 'tables/rules')
  t.equal(exportPartPath('tables/rules', 1), 'tables/rules/part-000001.parquet')
  t.equal(exportPartPath('tables/rules', 1234567), 'tables/rules/part-1234567.parquet', 'more digits when a folder has more parts')
  t.equal(exportReferencePath('penrose-kd'), 'tilings/reference/penrose-kd.parquet')
  t.equal(exportSegmentPath(UUID, 'part-000001'), `searches/${UUID}/runs/part-000001.parquet`)
  t.equal(exportScorePath(UUID, 2, 'part-000001'), `searches/${UUID}/scores-2/part-000001.parquet`)
  t.equal(exportMediaPath({ target: `pattern:${ID}`, kind: 'poster', from_seed: true, media_type: 'image/png' }), `media/pattern/${ID}/poster-seed.png`)
  t.equal(exportMediaPath({ target: `ant:ant-${ID}`, kind: 'thumb', from_seed: false, media_type: 'image/webp' }), `media/ant/ant-${ID}/thumb.webp`)
  t.equal(exportMediaPath({ target: `quickstart:qs-${ID}`, kind: 'gif', from_seed: false, media_type: 'image/gif' }), `media/quickstart/qs-${ID}/gif.gif`)
  t.equal(exportSignaturePath(SIGNER), `sigs/${SIGNER}.sig`)
  t.equal(exportKeyPath(SIGNER), `keys/${SIGNER}.json`)

  const media = { target: `pattern:${ID}`, kind: 'poster', from_seed: false, media_type: 'image/png' }
  const refused: [string, () => unknown][] = [
    ['hash', () => exportIndexPath('sha256:../' + HEX.slice(3))],
    ['history hash of another algorithm', () => exportHistoryPath('sha512:' + HEX + HEX)],
    ['table', () => exportPartitionFolder('../x', {})],
    ['table with a slash', () => exportPartitionFolder('a/b', {})],
    ['partition key', () => exportPartitionFolder('patterns', { 'a=b': 'x' })],
    ['partition value case', () => exportPartitionFolder('patterns', { class_group: 'K3' })],
    ['partition value dots', () => exportPartitionFolder('patterns', { class_group: '..' })],
    ['partition value slash', () => exportPartitionFolder('patterns', { class_group: 'a/b' })],
    ['partition value empty', () => exportPartitionFolder('patterns', { class_group: '' })],
    ['part number 0', () => exportPartPath('tables/rules', 0)],
    ['part number 1.5', () => exportPartPath('tables/rules', 1.5)],
    ['family', () => exportReferencePath('Penrose')],
    ['family path', () => exportReferencePath('../../x')],
    ['uuid', () => exportSegmentPath(UUID.toUpperCase(), 'part-1')],
    ['segment', () => exportSegmentPath(UUID, 'part-1/../x')],
    ['segment name', () => exportSegmentPath(UUID, 'runs')],
    ['score version', () => exportScorePath(UUID, 0, 'part-1')],
    ['media of a search run', () => exportMediaPath({ ...media, target: `search_run:${UUID}:1` })],
    ['media target', () => exportMediaPath({ ...media, target: 'pattern:../x' })],
    ['media kind with -', () => exportMediaPath({ ...media, kind: 'poster-seed' })],
    ['media kind path', () => exportMediaPath({ ...media, kind: '../poster' })],
    ['from_seed', () => exportMediaPath({ ...media, from_seed: 'yes' as unknown as boolean })],
    ['signer', () => exportSignaturePath('SHA256:abc')],
    ['key signer', () => exportKeyPath('../' + SIGNER.slice(3))],
  ]
  for (const [what, fn] of refused) t.equal(thrownCode(fn), S.pathEscape, what)
  t.equal(thrownCode(() => exportMediaPath({ ...media, media_type: 'image/jpeg' })), S.mediaType)
})

t.test('export layout: parts numbered per partition folder in index order; an export checks like a store', async (t) => {
  const store = await tempDir(t)
  const put = async (text: string) => (await writeObject(store, Buffer.from(text), 'parquet'))
  const objects = await Promise.all([1, 2, 3, 4, 5].map((n) => put(`part ${n}`)))
  const withObject = (p: TablePart, n: number): TablePart => ({ ...p, object: objects[n - 1]!.hash, bytes: objects[n - 1]!.bytes })
  const putIndex = async (bytes: Buffer) => (await writeObject(store, bytes, 'json')).hash
  const index = (parts: TablePart[], children: string[] = []) => buildTableIndex({ table: 'patterns', schema: 'jetcarp-patterns 1', parts, children }).bytes
  const grandchild = await putIndex(index([withObject(part(5, 'k3'), 5)]))
  const child = await putIndex(index([withObject(part(3, 'k3'), 3), withObject(part(4, 'k4'), 4)], [grandchild]))
  const root = await putIndex(index([withObject(part(1, 'k3'), 1), withObject(part(2, 'k4'), 2), withObject(part(1, 'k3'), 1)], [child]))

  const segment = await put('segment 1')
  const sidecar = await put('sidecar 1')
  const search = buildSearchIndex({
    created: T0,
    engine_version: '0.4.0',
    kind: 'explore',
    parts: [{ bytes: segment.bytes, engine_version: '0.4.0', first: '1', last: '9', object: segment.hash, rows: 9, sealed: T0, segment: 'part-000001' }],
    run_schema: 'jetcarp-explore-runs 1',
    score_schema: 'jetcarp-explore-scores 1',
    scores: [{ created: T0, engine_version: '0.4.0', parts: [{ bytes: sidecar.bytes, object: sidecar.hash, rows: 9, segment: 'part-000001' }], version: 1 }],
    search: UUID,
    spec: {},
    updated: T0,
  })
  const searchRoot = await putIndex(search.bytes)
  const parent = objectHash(Buffer.from('an earlier manifest'))
  const input: ManifestInput = {
    created: T0,
    engine: { name: 'pipe', version: '0.1.0', schemes: { ant: 'a', geometry: 'g', pattern: 'p', tables: 'jetcarp-tables-1' }, rule_semantics: {} },
    feed: 'golden-a',
    licence: 'CC0-1.0',
    parents: [parent],
    publisher: fingerprint(KEY.publicKey),
    searches: { [UUID]: searchRoot },
    stats: { ants: 0, bytes: 0, patterns: 5, quickstart: 0 },
    tables: { patterns: root },
    title: 'export',
  }
  const manifest = buildManifest(input)
  const layout = await planExport({ manifest: manifest.document, hash: manifest.hash }, storeIndexLoader(store), { history: [parent] })
  const k3 = 'tables/patterns/class_group=spaceship/tiling_group=k3'
  const k4 = 'tables/patterns/class_group=spaceship/tiling_group=k4'
  t.same(layout.entries().map((e) => e.path), [
    'pack.json',
    exportHistoryPath(parent),
    exportIndexPath(root),
    `${k3}/part-000001.parquet`,
    `${k4}/part-000001.parquet`,
    exportIndexPath(child),
    `${k3}/part-000002.parquet`,
    `${k4}/part-000002.parquet`,
    exportIndexPath(grandchild),
    `${k3}/part-000003.parquet`,
    exportIndexPath(searchRoot),
    `searches/${UUID}/runs/part-000001.parquet`,
    `searches/${UUID}/scores-1/part-000001.parquet`,
  ], 'own parts first, then children depth first; a part listed twice once')
  t.equal(layout.pathOf(objects[2]!.hash), `${k3}/part-000002.parquet`)
  t.equal(layout.pathOf(objects[4]!.hash), `${k3}/part-000003.parquet`)

  // Lay the export out from the store, then check it as a store is checked: by the hashes its indexes give.
  const out = await tempDir(t)
  await writeFile(join(out, 'pack.json'), manifest.bytes)
  for (const e of layout.entries()) {
    if (e.path === 'pack.json' || e.path.startsWith('history/')) continue
    await mkdir(dirname(join(out, e.path)), { recursive: true })
    await copyFile(storeFile(store, objectPath(e.hash, e.path.endsWith('.json') ? 'json' : 'parquet')), join(out, e.path))
  }
  const again = await planExport({ manifest: manifest.document, hash: manifest.hash }, exportIndexLoader(out))
  const verdicts = await Promise.all(again.entries().map((e) => verifyObjectFile(join(out, e.path), e.hash, e.bytes === undefined ? {} : { bytes: e.bytes })))
  t.same(verdicts.map(codeOf), verdicts.map(() => 'ok'), 'every file of the export has the hash its index gives')
  await writeFile(join(out, k4, 'part-000001.parquet'), 'part 9')
  t.equal(codeOf(await verifyObjectFile(join(out, k4, 'part-000001.parquet'), objects[1]!.hash, { bytes: objects[1]!.bytes })), S.objectHashMismatch, 'a changed part of an export')

  const walked = []
  for await (const e of walkTableIndex(root, exportIndexLoader(out), { table: 'patterns' })) walked.push(e.kind)
  t.same(walked, ['index', 'part', 'part', 'index', 'part', 'part', 'index', 'part'], 'an export\'s index/ serves the walk')
})

t.test('export layout: media, reference patches, collisions', async (t) => {
  const layout = new ExportLayout()
  const media = { target: `pattern:${ID}`, kind: 'poster', from_seed: true, media_type: 'image/png', object: HASH, bytes: 10 }
  layout.addMedia(media)
  layout.addMedia(media)
  t.same(layout.entries(), [{ path: `media/pattern/${ID}/poster-seed.png`, hash: HASH, bytes: 10 }], 'the same file twice is kept once')
  t.equal(thrownCode(() => layout.addMedia({ ...media, object: objectHash(Buffer.from('re-rendered')) })), S.exportCollision, 'two objects for one media path')
  layout.addMedia({ ...media, from_seed: false })
  layout.addReferencePatch('penrose-kd', objectHash(Buffer.from('patch')))
  t.equal(thrownCode(() => layout.addReferencePatch('penrose-kd', HASH)), S.exportCollision)
  t.same(layout.entries().map((e) => e.path), [`media/pattern/${ID}/poster-seed.png`, `media/pattern/${ID}/poster.png`, 'tilings/reference/penrose-kd.parquet'])
})

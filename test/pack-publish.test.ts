/**
 * pack-publish (src/formats/pack/publish/publish.ts): records to a signed version of a feed. What it writes reads
 * back as the spec says; a second version keeps its parent's parts and adds only what is new; retractions
 * accumulate; a merge has two parents; the same records and time give the same bytes; no local path
 * reaches any file or cell.
 */
import { createHash } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import t from 'tap'
import { checkPack, type CheckIssue } from '../src/formats/pack/check/check.js'
import { parseManifest } from '../src/formats/pack/documents/doc-manifest.js'
import { parseRef } from '../src/formats/pack/documents/doc-ref.js'
import { parseTableIndex } from '../src/formats/pack/documents/doc-index.js'
import { patternId } from '../src/formats/pack/records/identity.js'
import { firstKeyStatement, keyStatementBytes } from '../src/formats/pack/keys/key-statements.js'
import { readPartRows } from '../src/formats/pack/tables/parquet-read.js'
import { publishPack, readablePart, type PublishOptions } from '../src/formats/pack/publish/publish.js'
import { PackPartWriter } from '../src/formats/pack/tables/parquet-write.js'
import { patternRow } from './pack-check-fixtures.js'
import { mayHoldLocalPath, scrubRecordPaths, withoutLocalPaths } from '../src/formats/pack/publish/publish-rows.js'
import { seededRandom } from '../src/sim/random.js'
import { fingerprint, formatPublicKey, generateKey, signerName } from '../src/formats/pack/keys/ssh-key.js'
import { objectPath, storeFile } from '../src/formats/pack/documents/store.js'
import { NS_MANIFEST, signSshsig } from '../src/formats/pack/keys/sshsig.js'
import { canonicalRowText, PACK_TABLES } from '../src/formats/pack/tables/table-schemas.js'
import { FACT_KEYS_CAP } from '../src/formats/pack/records/kept-facts.js'
import { LIFE, STAR_WARS, antRecord, mask, patternRecord, ruleRecord, verificationRecord, writeJsonl, type SampleRule } from '../src/sim/pack-records.js'
import { needs } from './helpers/tools.js'

const base = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'pipe-publish-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
let n = 0
const dir = () => join(base, `d${n++}`)
const T0 = '2026-11-11T00:00:00Z'

const keyA = generateKey({ seed: Buffer.alloc(32, 1), comment: 'golden-a' })
const statementA = keyStatementBytes(firstKeyStatement(keyA, { name: 'Publisher A', created: T0 }))
const keyB = generateKey({ seed: Buffer.alloc(32, 2), comment: 'golden-b' })
const statementB = keyStatementBytes(firstKeyStatement(keyB, { name: 'Publisher B', created: T0 }))

const RANGE = '{"birth_max":11,"birth_min":8,"bits":9,"max_rule":"B013/S0123","min_rule":"B3/S23","states_max":2,"states_min":2,"survive_max":15,"survive_min":12}'
const HIGHLIFE: SampleRule = { notation: 'B36/S23', neighbourhood: 'touch', steps_per_gen: 1, states: 2, birth: mask(3, 6), survive: mask(2, 3) }
const CYCLIC = { notation: 'C3', neighbourhood: 'edge', steps_per_gen: 1, family: 'cyclic', semantics: '1', states: 0, birth: null, survive: null }

const BLOCK = patternRecord('square', LIFE, [[0, 0], [1, 0], [0, 1], [1, 1]])
const BLINKER = patternRecord('square', LIFE, [[0, 1], [1, 1], [2, 1]])
const GLIDER = patternRecord('square', LIFE, [[1, 0], [2, 1], [0, 2], [1, 2], [2, 2]], { speed: 'c/4 diagonal' })

async function records(folder: string, patterns: Record<string, unknown>[], extra: Record<string, object[]> = {}): Promise<string> {
  await writeJsonl(join(folder, 'tilings.jsonl'), [{ family: 'square' }])
  await writeJsonl(join(folder, 'rules.jsonl'), [ruleRecord(LIFE)])
  await writeJsonl(join(folder, 'patterns.jsonl'), patterns)
  await writeJsonl(join(folder, 'verifications.jsonl'), patterns.map((p, i) => verificationRecord(i + 1, LIFE, p, T0)))
  for (const [table, rows] of Object.entries(extra)) await writeJsonl(join(folder, `${table}.jsonl`), rows)
  await writeFile(join(folder, 'pack.json'), JSON.stringify({ title: 'test', description: 'made by /home/someone/secret/notes.txt' }))
  return folder
}

const opts = (store: string, recordsDir: string, over: Partial<PublishOptions> = {}): PublishOptions =>
  ({ feed: 'golden-a', store, records: recordsDir, key: keyA, statements: [statementA], created: T0, engineVersion: 'test', ...over })

async function manifestOf(store: string, hash: string) {
  const m = parseManifest(await readFile(storeFile(store, objectPath(hash, 'json'))))
  if (!m.ok) throw new Error(m.detail)
  return m.value.manifest
}
async function indexOf(store: string, hash: string) {
  const i = parseTableIndex(await readFile(storeFile(store, objectPath(hash, 'json'))))
  if (!i.ok) throw new Error(i.detail)
  return i.value.index
}
async function tableRows(store: string, table: keyof typeof PACK_TABLES, index: string) {
  const rows: Record<string, unknown>[] = []
  for (const part of (await indexOf(store, index)).parts) {
    const r = await readPartRows(storeFile(store, objectPath(part.object, 'parquet')), PACK_TABLES[table])
    if (!r.ok) throw new Error(r.findings[0]!.detail)
    rows.push(...r.rows)
  }
  return rows
}
async function files(root: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(root, { withFileTypes: true, recursive: true })) if (e.isFile()) out.push(relative(root, join(e.parentPath, e.name)))
  return out.sort()
}

t.test('a first version: store layout, manifest, index, parts, signature and ref', async (t) => {
  const store = dir()
  const r = await publishPack(opts(store, await records(dir(), [BLOCK, BLINKER, GLIDER], { ants: [antRecord('RL')] })))
  t.equal(r.seq, 1)
  t.same(r.parents, [])
  const m = await manifestOf(store, r.manifest)
  t.equal(m.feed, 'golden-a')
  t.same(Object.keys(m.tables).sort(), ['ants', 'patterns', 'rules', 'tilings', 'verifications'])
  t.same(m.stats, { ants: 1, bytes: m.stats.bytes, patterns: 3, quickstart: 0 })
  t.equal(m.description, 'made by notes.txt', 'a local path in text is written as its file name')
  const patterns = await tableRows(store, 'patterns', m.tables['patterns']!)
  t.same(patterns.map((p) => p['class']).sort(), ['oscillator', 'spaceship', 'still_life'])
  for (const p of patterns) t.equal(p['id'], patternId(p['identity'] as string, p['pin'] as string), `${p['class']}: id is the hash of identity and pin`)
  const index = await indexOf(store, m.tables['patterns']!)
  t.same(index.parts.map((p) => p.partition).sort((a, b) => (a['class_group']! < b['class_group']! ? -1 : 1)), [
    { class_group: 'oscillator', tiling_group: 'square' }, { class_group: 'spaceship', tiling_group: 'square' }, { class_group: 'still_life', tiling_group: 'square' },
  ], 'one part per partition')
  const verifications = await tableRows(store, 'verifications', m.tables['verifications']!)
  t.same(new Set(verifications.map((v) => v['pattern_id'])), new Set(patterns.map((p) => p['id'])), '@patterns:N named the patterns')
  t.ok(verifications.every((v) => v['publisher'] === fingerprint(keyA.publicKey)), 'event rows name the publisher by its id')
  const ref = parseRef(await readFile(join(store, 'refs', 'golden-a.json')), { feed: 'golden-a' })
  t.ok(ref.ok && ref.value.ref.manifest === r.manifest && ref.value.ref.seq === 1)
  const signer = signerName(keyA.publicKey)
  t.ok(existsSync(join(store, 'sigs', 'sha256', r.manifest.slice(7, 9), r.manifest.slice(7), `${signer}.sig`)))
  t.ok(existsSync(join(store, 'keys', `${signer}.json`)))
  for (const f of (await files(store)).filter((f) => f.startsWith('objects/'))) {
    const bytes = await readFile(join(store, f))
    t.equal(f.split('/')[3]!.split('.')[0], createHash('sha256').update(bytes).digest('hex'), `${f}: named by its SHA-256`)
  }
  t.notOk(existsSync(join(store, '.tmp')) && (await readdir(join(store, '.tmp'))).length > 0, 'nothing left in .tmp/')

  await t.test("ssh-keygen accepts the manifest's signature", needs('ssh-keygen'), async (t) => {
    const allowed = join(base, `allowed-${n++}`)
    await writeFile(allowed, `publisher namespaces="jetcarp-manifest" ${formatPublicKey(keyA.publicKey)}\n`)
    const v = spawnSync('ssh-keygen', ['-Y', 'verify', '-f', allowed, '-I', 'publisher', '-n', 'jetcarp-manifest', '-s', join(store, 'sigs', 'sha256', r.manifest.slice(7, 9), r.manifest.slice(7), `${signer}.sig`)], { input: await readFile(storeFile(store, objectPath(r.manifest, 'json'))) })
    t.equal(v.status, 0, `ssh-keygen -Y verify: ${v.stderr}`)
  })
})

t.test('the same records and time give byte-identical stores', async (t) => {
  const rec = await records(dir(), [BLOCK, BLINKER, GLIDER])
  const a = dir()
  const b = dir()
  await publishPack(opts(a, rec))
  await publishPack(opts(b, rec))
  const fa = await files(a)
  t.same(fa, await files(b))
  let same = 0
  for (const f of fa) if ((await readFile(join(a, f))).equals(await readFile(join(b, f)))) same++
  t.equal(same, fa.length, 'every file has the same bytes')
})

t.test('tables encoded on the caller\'s thread or on the encoding thread give the same bytes', async (t) => {
  const rec = await records(dir(), [BLOCK, BLINKER, GLIDER])
  const [inline, threaded] = [dir(), dir()]
  await publishPack(opts(inline, rec, { inlineTableBytes: Infinity }))
  await publishPack(opts(threaded, rec, { inlineTableBytes: 0 }))
  const names = await files(inline)
  t.same(await files(threaded), names)
  let same = 0
  for (const f of names) if ((await readFile(join(inline, f))).equals(await readFile(join(threaded, f)))) same++
  t.equal(same, names.length, 'every file has the same bytes')
})

t.test('keys beyond the in-memory table and ids beyond the in-memory book spill to disk: the same rows, the same bytes again, nothing left behind', async (t) => {
  // Two blocks k cells apart: a still life each, all different.
  const twoBlocks = (k: number) => patternRecord('square', LIFE, [[0, 0], [1, 0], [0, 1], [1, 1], [k, 0], [k + 1, 0], [k, 1], [k + 1, 1]])
  const all = Array.from({ length: 40 }, (_, i) => twoBlocks(3 + i))
  const first = await records(dir(), all.slice(0, 30))
  const second = await records(dir(), [...all.slice(10), ...all.slice(0, 10)])
  const limits = { newRows: { maxChunkBytes: 3000 } }
  const tight = { newRows: { maxChunkBytes: 3000, seenCap: 3, spillRecords: 4 }, idBookLines: 5 }
  const publishBoth = async (store: string, over: Partial<PublishOptions>) => {
    await publishPack(opts(store, first, over))
    const r = await publishPack(opts(store, second, { ...over, created: '2026-11-12T00:00:00Z' }))
    t.ok(r.newParts['patterns']! > 0 && r.newParts['verifications']! > 0, `new parts: ${JSON.stringify(r.newParts)}`)
    return r.manifest
  }
  const [roomy, spilled, spilledAgain] = [dir(), dir(), dir()]
  const roomyLast = await publishBoth(roomy, limits)
  const last = await publishBoth(spilled, tight)
  await publishBoth(spilledAgain, tight)
  const names = await files(spilled)
  t.same(await files(spilledAgain), names, 'spilled twice: the same files')
  let same = 0
  for (const f of names) if ((await readFile(join(spilled, f))).equals(await readFile(join(spilledAgain, f)))) same++
  t.equal(same, names.length, 'every file has the same bytes')
  const m = await manifestOf(spilled, last)
  const roomyM = await manifestOf(roomy, roomyLast)
  const texts = async (store: string, manifest: { tables: Record<string, string> }, table: keyof typeof PACK_TABLES) => (await tableRows(store, table, manifest.tables[table]!)).map((r) => canonicalRowText(PACK_TABLES[table], r)).sort()
  for (const table of Object.keys(roomyM.tables) as (keyof typeof PACK_TABLES)[]) t.same(await texts(spilled, m, table), await texts(roomy, roomyM, table), `${table}: the rows a roomy publish writes`)
  const ids = new Set((await tableRows(spilled, 'patterns', m.tables['patterns']!)).map((p) => p['id']))
  const verifications = await tableRows(spilled, 'verifications', m.tables['verifications']!)
  t.equal(ids.size, 40, 'every pattern once')
  t.ok(verifications.length === 40 && verifications.every((v) => ids.has(v['pattern_id'])), 'every @patterns:N named its pattern, beyond the lines kept in memory too')
  t.same(await readdir(join(spilled, '.tmp')), [], 'nothing left in .tmp/')
  const issues: CheckIssue[] = []
  for await (const i of checkPack(spilled, { level: 3 })) issues.push(i)
  t.same(issues.filter((i) => !i.note), [], 'and it passes level 3')
})

t.test('a second version keeps its parent\'s parts, adds only new rows, keeps an unchanged index, and retracts cumulatively', async (t) => {
  const store = dir()
  const first = await publishPack(opts(store, await records(dir(), [BLOCK, BLINKER])))
  const m1 = await manifestOf(store, first.manifest)
  const blinkerId = (await tableRows(store, 'patterns', m1.tables['patterns']!)).find((p) => p['class'] === 'oscillator')!['id'] as string
  const second = await publishPack(opts(store, await records(dir(), [BLOCK, BLINKER, GLIDER]), { created: '2026-11-12T00:00:00Z', retract: [{ target: `pattern:${blinkerId}`, reason: 'a duplicate of another entry' }] }))
  t.equal(second.seq, 2)
  t.same(second.parents, [first.manifest])
  const m2 = await manifestOf(store, second.manifest)
  t.equal(m2.tables['rules'], m1.tables['rules'], 'an unchanged table keeps its index hash')
  t.equal(m2.tables['tilings'], m1.tables['tilings'])
  const p1 = (await indexOf(store, m1.tables['patterns']!)).parts
  const p2 = (await indexOf(store, m2.tables['patterns']!)).parts
  t.same(p2.slice(0, p1.length), p1, 'the parent\'s parts come first, unchanged')
  t.same(p2.slice(p1.length).map((p) => [p.partition['class_group'], p.rows]), [['spaceship', 1]], 'one new part with the one new pattern')
  t.equal(second.newParts['verifications'], 1)
  t.same((await tableRows(store, 'verifications', m2.tables['verifications']!)).length, 3, 'no verification row twice')
  t.same(m2.retracts, [{ target: `pattern:${blinkerId}`, publisher: m2.publisher, reason: 'a duplicate of another entry', date: '2026-11-12T00:00:00Z' }])
  const third = await publishPack(opts(store, await records(dir(), [BLOCK]), { created: '2026-11-13T00:00:00Z' }))
  const m3 = await manifestOf(store, third.manifest)
  t.same(m3.retracts, m2.retracts, 'retractions are cumulative')
  t.equal(m3.stats.patterns, 3, 'a version is a full snapshot: its parent\'s parts stay')
})

t.test('a record whose fact key a parent has with another row is refused at its file and line', async (t) => {
  const store = dir()
  const ant = antRecord('RL')
  await publishPack(opts(store, await records(dir(), [BLOCK], { ants: [antRecord('LLRR'), ant] })))
  const changed = await records(dir(), [BLINKER], { ants: [antRecord('LLRR'), { ...ant, steps: Number(ant['steps']) + 1 }] })
  await t.rejects(publishPack(opts(store, changed, { created: '2026-11-12T00:00:00Z' })), {
    code: 'pack.fact-conflict', exitCode: 2, location: { file: join(changed, 'ants.jsonl'), line: 2 }, message: /^ants: two different rows for id "ant-[0-9a-f]{32}"/,
  }, 'the same ant, another steps count: the record named, not only its id')
})

t.test('a merge: another publisher\'s version with two parents', async (t) => {
  const a = dir()
  const first = await publishPack(opts(a, await records(dir(), [BLOCK, BLINKER])))
  const b = dir()
  const own = await publishPack(opts(b, await records(dir(), [GLIDER], { rules: [ruleRecord(LIFE), ruleRecord(STAR_WARS)] }), { feed: 'golden-b', key: keyB, statements: [statementB] }))
  const merged = await publishPack(opts(b, await records(dir(), [GLIDER]), { feed: 'golden-b', key: keyB, statements: [statementB], merge: [a], created: '2026-11-12T00:00:00Z' }))
  t.same(merged.parents, [own.manifest, first.manifest], 'the feed\'s previous version first, then the merged one')
  const m = await manifestOf(b, merged.manifest)
  const patterns = await tableRows(b, 'patterns', m.tables['patterns']!)
  t.equal(patterns.length, 3, 'the union of both parents\' patterns')
  t.ok(existsSync(storeFile(b, objectPath(first.manifest, 'json'))), 'the merged manifest is in the store')
  t.ok(existsSync(join(b, 'keys', `${signerName(keyA.publicKey)}.json`)), 'with its publisher\'s key statement')
  t.equal((await indexOf(b, m.tables['rules']!)).parts.length, 2, 'both parents\' rules parts, each with the Life row')
  const issues: CheckIssue[] = []
  for await (const i of checkPack(b, { level: 1 })) issues.push(i)
  t.same(issues.filter((i) => !i.note), [], 'and pack-check takes the two Life rows for one fact')
})

t.test('a parent\'s part whose bytes are not its hash\'s (damaged on disk) stops the next version before it is written', async (t) => {
  const store = dir()
  const first = await publishPack(opts(store, await records(dir(), [BLOCK, BLINKER])))
  const refBefore = await readFile(join(store, 'refs', 'golden-a.json'))
  const m = await manifestOf(store, first.manifest)
  const part = storeFile(store, objectPath((await indexOf(store, m.tables['patterns']!)).parts[0]!.object, 'parquet'))
  const good = await readFile(part)
  const flipped = Buffer.from(good)
  const middle = flipped.length >> 1
  flipped[middle] = flipped[middle]! ^ 1
  await writeFile(part, flipped)
  const glider = await records(dir(), [GLIDER])
  const next = () => publishPack(opts(store, glider, { created: '2026-11-12T00:00:00Z' }))
  await t.rejects(next(), { code: 'pack.object-hash-mismatch', exitCode: 1, location: { file: part }, message: /^a parent version's part: / }, 'a flipped byte')
  await writeFile(part, good.subarray(0, good.length - 1))
  await t.rejects(next(), { code: 'pack.object-size-mismatch', location: { file: part } }, 'a truncated file')
  t.same(await readFile(join(store, 'refs', 'golden-a.json')), refBefore, 'the feed\'s ref is unchanged')
  t.same(await readdir(join(store, '.tmp')).catch(() => []), [], 'and nothing half-written is left')
  await writeFile(part, good)
  t.equal((await next()).seq, 2, 'the part restored, the version is published')
})

t.test('a store to merge is checked at level 2 first: one that fails is refused, and nothing of it is merged', async (t) => {
  const a = dir()
  const first = await publishPack(opts(a, await records(dir(), [BLOCK, BLINKER])))
  const b = dir()
  const own = await publishPack(opts(b, await records(dir(), [GLIDER]), { feed: 'golden-b', key: keyB, statements: [statementB] }))
  const refBefore = await readFile(join(b, 'refs', 'golden-b.json'))
  const glider = await records(dir(), [GLIDER])
  const mergeInto = (from: string) => publishPack(opts(b, glider, { feed: 'golden-b', key: keyB, statements: [statementB], merge: [from], created: '2026-11-12T00:00:00Z' }))

  // Its manifest signed by another key, under the publisher's name: a level-2 failure.
  const forged = dir()
  await cp(a, forged, { recursive: true })
  const sigDir = join(forged, 'sigs', 'sha256', first.manifest.slice(7, 9), first.manifest.slice(7))
  const [sigFile] = await readdir(sigDir)
  const manifestBytes = await readFile(storeFile(forged, objectPath(first.manifest, 'json')))
  await writeFile(join(sigDir, sigFile!), signSshsig(keyB, manifestBytes, NS_MANIFEST))
  await t.rejects(mergeInto(forged), {
    code: 'pack.signer-name-mismatch', exitCode: 1, location: { file: forged },
    message: /^--merge: the store fails pack-check at level 2: sigs\/sha256\/[0-9a-f]{2}\/[0-9a-f]{64}\/[0-9a-f]{64}\.sig: file is named for signer .* \(pipe run pack-check .* --level 2 lists every finding\)$/,
  }, 'a signature by another key under the publisher\'s name')
  t.notOk(existsSync(storeFile(b, objectPath(first.manifest, 'json'))), 'its manifest is not copied in')
  t.same(await readFile(join(b, 'refs', 'golden-b.json')), refBefore, 'and the feed\'s ref is unchanged')

  // A part whose bytes are not its hash's: a level-1 failure.
  const damaged = dir()
  await cp(a, damaged, { recursive: true })
  const m = await manifestOf(damaged, first.manifest)
  const part = storeFile(damaged, objectPath((await indexOf(damaged, m.tables['patterns']!)).parts[0]!.object, 'parquet'))
  const bytes = await readFile(part)
  const middle = bytes.length >> 1
  bytes[middle] = bytes[middle]! ^ 1
  await writeFile(part, bytes)
  await t.rejects(mergeInto(damaged), { code: 'pack.object-hash-mismatch', exitCode: 1, location: { file: damaged } }, 'a damaged part, under the check\'s own code')
  t.same(await readFile(join(b, 'refs', 'golden-b.json')), refBefore, 'the ref is unchanged')

  const merged = await mergeInto(a)
  t.same(merged.parents, [own.manifest, first.manifest], 'the store itself merges')
})

t.test('a merge keeps its parents\' retractions with their publishers, beside its own, and pack-check accepts it', async (t) => {
  const a = dir()
  const first = await publishPack(opts(a, await records(dir(), [BLOCK, BLINKER])))
  const patternsOfA = await tableRows(a, 'patterns', (await manifestOf(a, first.manifest)).tables['patterns']!)
  const [block, blinker] = ['still_life', 'oscillator'].map((cls) => patternsOfA.find((p) => p['class'] === cls)!['id'] as string)
  const retractedByA = await publishPack(opts(a, await records(dir(), [BLOCK, BLINKER]), { created: '2026-11-12T00:00:00Z', retract: [{ target: `pattern:${blinker}`, reason: 'a duplicate' }] }))
  const b = dir()
  const merged = await publishPack(opts(b, await records(dir(), [GLIDER]), {
    feed: 'golden-b', key: keyB, statements: [statementB], merge: [a], created: '2026-11-13T00:00:00Z',
    retract: [{ target: `pattern:${block}`, reason: 'not ours to keep' }, { target: `pattern:${blinker}`, reason: 'a duplicate here too' }],
  }))
  t.same(merged.parents, [retractedByA.manifest])
  const [idA, idB] = [fingerprint(keyA.publicKey), fingerprint(keyB.publicKey)]
  t.same((await manifestOf(b, merged.manifest)).retracts.map((r) => [r.target, r.publisher, r.reason]), [
    [`pattern:${blinker}`, idA, 'a duplicate'],
    [`pattern:${block}`, idB, 'not ours to keep'],
    [`pattern:${blinker}`, idB, 'a duplicate here too'],
  ], 'the parent\'s with its publisher first, then this version\'s own under its publisher, the same target included')
  const issues: CheckIssue[] = []
  for await (const i of checkPack(b, { level: 2 })) issues.push(i)
  t.same(issues.filter((i) => !i.note), [], 'every version of the store keeps its parents\' retractions')
})

t.test('an annotation\'s rev is the ref seq of the version that adds it; a record stating another is refused', async (t) => {
  const store = dir()
  const name = (value: string, extra: Record<string, unknown> = {}) => ({ target: '@patterns:1', field: 'name', value: JSON.stringify(value), score_model: null, date: T0, ...extra })
  await publishPack(opts(store, await records(dir(), [BLOCK], { annotations: [name('Block')] })))
  const second = await publishPack(opts(store, await records(dir(), [BLOCK], { annotations: [name('The block')] }), { created: '2026-11-12T00:00:00Z' }))
  const rows = await tableRows(store, 'annotations', (await manifestOf(store, second.manifest)).tables['annotations']!)
  t.same(rows.map((r) => [r['value'], r['rev']]), [['"Block"', 1n], ['"The block"', 2n]], 'each row with the seq of the version that added it')
  await t.rejects(publishPack(opts(store, await records(dir(), [BLOCK], { annotations: [name('Block', { rev: 1 })] }), { created: '2026-11-13T00:00:00Z' })), { code: 'pack.record-disagrees', location: { line: 1, field: 'rev' } })
  const third = await publishPack(opts(store, await records(dir(), [BLOCK], { annotations: [name('A block', { rev: 3 })] }), { created: '2026-11-13T00:00:00Z' }))
  t.equal(third.seq, 3, 'a record may state its version\'s own seq')
})

t.test('bad records are refused with the file, line and field, and nothing is published', async (t) => {
  const store = dir()
  const rec = await records(dir(), [BLOCK])
  await writeJsonl(join(rec, 'verifications.jsonl'), [{ ...verificationRecord(1, LIFE, BLOCK, T0), pattern_id: '@patterns:9' }])
  await t.rejects(publishPack(opts(store, rec)), { code: 'pack.record-reference', location: { line: 1, field: 'pattern_id' } })
  t.notOk(existsSync(join(store, 'refs')), 'no ref')
  const rec2 = await records(dir(), [{ ...BLOCK, class: 'oscillator', period: 2 }])
  await publishPack(opts(dir(), rec2)).then(() => t.pass('a record may state a wrong class: level 3 replay, not the publisher, judges it'))
  const rec3 = await records(dir(), [{ ...BLOCK, canonical: 'o' }])
  await t.rejects(publishPack(opts(dir(), rec3)), { code: 'pack.record-disagrees', location: { field: 'canonical' } })
  const rec4 = await records(dir(), [BLOCK], { sightings: [{ pattern_id: '@patterns:1', rule: 'B3/S23', source: 'unattributed', count: 1.5, soups: 1, first_seen: T0, last_seen: T0 }] })
  await t.rejects(publishPack(opts(dir(), rec4)), { code: 'pack.table-row-invalid', location: { field: 'count' } })
})

t.test('a record breaking a row rule the check holds parts to is refused with its code, line and nothing published', async (t) => {
  const rating = (verdict: string) => ({ rater: 'rater-0123456789abcdef', target: '@patterns:1', scale: 'stars-1-5 1', verdict, note: null, round: null, date: T0 })
  const cases: [string, string, number, Promise<string>, string?][] = [
    ['a verdict off its scale', 'pack.rating-verdict-invalid', 2, records(dir(), [BLOCK], { ratings: [rating('4'), rating('keep')] })],
    ['a range cell that is not canonical JSON', 'pack.json-cell-not-canonical', 1, records(dir(), [BLOCK], { verifications: [{ ...verificationRecord(1, LIFE, BLOCK, T0), range: '{ }' }] })],
    ['a gun column on an oscillator', 'pack.pattern-gun-column', 2, records(dir(), [BLOCK, { ...BLINKER, gun: '{"per_period":1}' }])],
    ['an alias of another reason', 'pack.alias-reason-invalid', 1, records(dir(), [BLOCK], { aliases: [{ old_id: '0'.repeat(32), target: '@patterns:1', reason: 'renamed', date: T0 }] })],
    ['a sighting from no search and not unattributed', 'pack.column-value-invalid', 1, records(dir(), [BLOCK], { sightings: [{ pattern_id: '@patterns:1', rule: 'B3/S23', source: 'by hand', count: 1, soups: 1, first_seen: T0, last_seen: T0 }] })],
    ['a rating annotation written as text', 'pack.annotation-value-invalid', 1, records(dir(), [BLOCK], { annotations: [{ target: '@patterns:1', field: 'rating', value: '"4"', score_model: null, date: T0 }] })],
    ['a site on a square-grid pattern', 'pack.pattern-site-column', 1, records(dir(), [{ ...BLOCK, site: { patch: { family: 'penrose-kd', level: 4 }, anchor: 0, anchor_shape: 0, anchor_point: [0, 0], radius: 1, tiles: [] } }])],
    ['sites on a verification on the square grid', 'pack.verification-sites-column', 1, records(dir(), [BLOCK], { verifications: [{ ...verificationRecord(1, LIFE, BLOCK, T0), sites: 3 }] })],
    ['a range on a verification that is not main', 'pack.verification-range-invalid', 1, records(dir(), [BLOCK], { verifications: [{ ...verificationRecord(1, LIFE, BLOCK, T0), main: false, range: '{}' }] })],
    ['a mover on a main verification on the square grid', 'pack.verification-range-invalid', 1, records(dir(), [BLOCK], { verifications: [{ ...verificationRecord(1, LIFE, BLOCK, T0), mover: '{"followed":100}' }] }), 'mover'],
    ['a range in a rule whose rules rows are all cyclic', 'pack.verification-range-invalid', 1, records(dir(), [BLOCK], { rules: [ruleRecord(LIFE), CYCLIC], verifications: [{ ...verificationRecord(1, LIFE, BLOCK, T0), rule: 'C3', range: RANGE }] }), 'range'],
    ['a second main rule of one pattern by its publisher', 'pack.verification-main-duplicate', 2, records(dir(), [BLOCK], { verifications: [verificationRecord(1, LIFE, BLOCK, T0), { ...verificationRecord(1, LIFE, BLOCK, T0), rule: 'B36/S23' }] }), 'main'],
    // A missing nullable member is null: a B/S rule without its survive mask has none (it was a TypeError).
    ['a B/S rule whose survive member is missing', 'pack.rule-family-columns', 1, records(dir(), [BLOCK], { rules: [(({ survive: _, ...r }) => r)(ruleRecord(LIFE))] })],
  ]
  for (const [what, code, line, rec, field] of cases) {
    const store = dir()
    await t.rejects(publishPack(opts(store, await rec)), { code, exitCode: 2, location: { line, ...(field ? { field } : {}) } }, what)
    t.notOk(existsSync(join(store, 'refs')), `${what}: no ref`)
  }
})

t.test('a pattern whose cells lie far apart: its picture is refused at the 1 MiB a string cell holds, before it is made; a part that compresses beyond what a reader opens is not published', async (t) => {
  const far = 300_000_000
  // Of class other with its rule: a pattern no replay need confirm.
  const cells = (...more: object[]) => ({ ...BLOCK, class: 'other', rule: LIFE.notation, phases: [[...(BLOCK['phases'] as object[][])[0]!, ...more]] })
  for (const [what, record] of [
    ['a live cell far along a row', cells({ i: far, j: 0, k: 0, s: 1 })],
    ['a cell far down the picture', cells({ i: 0, j: far, k: 0, s: 0 })],
  ] as const) {
    const store = dir()
    const folder = dir()
    await writeJsonl(join(folder, 'tilings.jsonl'), [{ family: 'square' }])
    await writeJsonl(join(folder, 'rules.jsonl'), [ruleRecord(LIFE)])
    await writeJsonl(join(folder, 'patterns.jsonl'), [cells(), record])
    await t.rejects(publishPack(opts(store, folder)), { code: 'pack.table-string-too-large', exitCode: 2, location: { line: 2, field: 'canonical' }, message: /longer than 1048576 bytes/ }, what)
    t.notOk(existsSync(join(store, 'refs')), `${what}: nothing published`)
  }

  // Within the 1 MiB, but half a million dead cells compress beyond the 64x of a part's size a reader opens.
  const store = dir()
  const folder = dir()
  await writeJsonl(join(folder, 'tilings.jsonl'), [{ family: 'square' }])
  await writeJsonl(join(folder, 'rules.jsonl'), [ruleRecord(LIFE)])
  await writeJsonl(join(folder, 'patterns.jsonl'), [cells(), cells({ i: 500_000, j: 0, k: 0, s: 1 })])
  await t.rejects(publishPack(opts(store, folder)), { code: 'pack.parquet-decompressed-too-large', exitCode: 2, message: /^patterns: the part of rows .* compresses beyond what a reader opens \(Limits\): .*64x the part's size/ }, 'a part no reader opens is not published')
  t.notOk(existsSync(join(store, 'refs')), 'nothing published')
  t.same((await readdir(join(store, '.tmp'))).filter((f) => f.endsWith('.parquet.tmp')), [], 'and no part left behind')
})

t.test('a part is held to the decoded sizes a reader counts while decoding, which no page header states', async (t) => {
  const folder = dir()
  await mkdir(folder, { recursive: true })
  const w = new PackPartWriter(PACK_TABLES.patterns, { dir: folder, partition: { class_group: 'still_life', tiling_group: 'square' } })
  await w.write([patternRow(LIFE, [[0, 0], [1, 0], [0, 1], [1, 1]])])
  const [part] = await w.finish()
  await t.resolves(readablePart(part!, PACK_TABLES.patterns), 'as written')
  const limit = 64 * part!.bytes + 64 * 1024 * 1024
  await t.resolves(readablePart({ ...part!, decodedBytes: limit }, PACK_TABLES.patterns), 'decoding to 64x its size plus 64 MiB')
  await t.rejects(readablePart({ ...part!, decodedBytes: limit + 1 }, PACK_TABLES.patterns), { code: 'pack.parquet-decoded-too-large', exitCode: 2, message: /^patterns: the part of rows .* decode to \d+ bytes, above \d+/ }, 'a byte more')
  await t.rejects(readablePart({ ...part!, largestRowGroupDecodedBytes: 128 * 1024 * 1024 + 1 }, PACK_TABLES.patterns), { code: 'pack.parquet-row-group-too-large' }, 'a row group a reader does not decode whole')
})

t.test('a range in a rule some B/S rules row has, and main rules verified again or by others, are published; a main rule with no rules row for its pattern is refused', async (t) => {
  const other = { ...verificationRecord(1, LIFE, BLOCK, T0), rule: 'B36/S23', publisher: 'SHA256:Cq5cVSqJBAdxFfJPld1HSH/bAyUPSvZYbr+p0GAIh9g' }
  const rules = [ruleRecord(LIFE), ruleRecord(HIGHLIFE), CYCLIC, { ...CYCLIC, notation: 'B3/S23', neighbourhood: 'edge' }]
  const kept = await records(dir(), [BLOCK, BLINKER], {
    rules,
    verifications: [
      { ...verificationRecord(1, LIFE, BLOCK, T0), range: RANGE }, { ...verificationRecord(1, LIFE, BLOCK, '2026-11-12T00:00:00Z') }, other,
      { ...verificationRecord(1, LIFE, BLOCK, T0), rule: 'B36/S23', main: false }, { ...verificationRecord(2, LIFE, BLINKER, T0), rule: 'B36/S23', range: RANGE },
    ],
  })
  const store = dir()
  await publishPack(opts(store, kept))
  const issues: CheckIssue[] = []
  for await (const i of checkPack(store, { level: 3 })) issues.push(i)
  t.same(issues.filter((i) => !i.note), [], 'and the check finds nothing, at level 3 too')
  // The blinker runs in its main verification's rule: B2/S7 has no rules row, so level 3 could not replay it.
  const unknown = await records(dir(), [BLOCK, BLINKER], { rules, verifications: [verificationRecord(1, LIFE, BLOCK, T0), { ...verificationRecord(2, LIFE, BLINKER, T0), rule: 'B2/S7', range: RANGE }] })
  await t.rejects(publishPack(opts(dir(), unknown)), {
    code: 'pack.replay-rule-unknown', exitCode: 2, location: { file: join(unknown, 'verifications.jsonl'), line: 2, field: 'rule' },
    message: /^the main rule of pattern [0-9a-f]{32}: rule "B2\/S7" has no rules row with neighbourhood touch and steps_per_gen 1, here or in a parent version/,
  })
  const second = await records(dir(), [BLOCK], { verifications: [verificationRecord(1, LIFE, BLOCK, T0), { ...verificationRecord(1, LIFE, BLOCK, T0), rule: 'B36/S23' }] })
  await t.rejects(publishPack(opts(dir(), second)), { code: 'pack.verification-main-duplicate', exitCode: 2, location: { file: join(second, 'verifications.jsonl'), line: 2, field: 'main' }, message: /main rule "B36\/S23" .* and another on line 1/ })
})

t.test('a pattern runs in the rules row of its rule with its neighbourhood and steps per generation: one with none is refused, as level 3 would refuse it', async (t) => {
  // The block, stated as of class other, which states its rule.
  const other = { ...BLOCK, class: 'other', rule: 'B3/S23' }
  const stated = await records(dir(), [BLOCK, { ...other, steps_per_gen: 2 }])
  await t.rejects(publishPack(opts(dir(), stated)), {
    code: 'pack.replay-rule-unknown', exitCode: 2, location: { file: join(stated, 'patterns.jsonl'), line: 2, field: 'rule' },
    message: /^rule "B3\/S23" has no rules row with neighbourhood touch and steps_per_gen 2, here or in a parent version: a pattern runs in/,
  }, 'its rule column, with steps per generation no rules row has')
  const store = dir()
  t.equal((await publishPack(opts(store, await records(dir(), [BLOCK, other])))).seq, 1, 'the same pattern in steps the rules row has is published')

  // A parent's main verification names a pattern this publish adds without a rule column: it runs in that rule.
  const elsewhere = dir()
  const blinkerVersion = await publishPack(opts(elsewhere, await records(dir(), [BLINKER])))
  const [blinker] = await tableRows(elsewhere, 'patterns', (await manifestOf(elsewhere, blinkerVersion.manifest)).tables['patterns']!)
  const parent = dir()
  const foreign = { ...verificationRecord(2, LIFE, BLINKER, T0), pattern_id: blinker!['id'], pin: blinker!['pin'], rule: 'B2/S7' }
  await publishPack(opts(parent, await records(dir(), [BLOCK], { verifications: [verificationRecord(1, LIFE, BLOCK, T0), foreign] })))
  const added = await records(dir(), [BLINKER], { verifications: [] })
  await t.rejects(publishPack(opts(parent, added, { created: '2026-11-12T00:00:00Z' })), {
    code: 'pack.replay-rule-unknown', location: { file: join(added, 'patterns.jsonl'), line: 1, field: 'rule' },
    message: /^its main verification in a parent version: rule "B2\/S7" has no rules row/,
  }, 'refused at the pattern record')
})

t.test('main verifications beyond the main-rules cap are published with a note saying they were not held to one main rule', async (t) => {
  const rec = await records(dir(), [BLOCK, BLINKER], { rules: [ruleRecord(LIFE), ruleRecord(HIGHLIFE)], verifications: [verificationRecord(1, LIFE, BLOCK, T0), verificationRecord(2, LIFE, BLINKER, T0), { ...verificationRecord(2, LIFE, BLINKER, T0), rule: 'B36/S23' }] })
  const r = await publishPack(opts(dir(), rec, { mainRulesCap: 1 }))
  t.same(r.notes.map((n) => n.code), ['pack.verification-main-unchecked'])
  t.match(r.notes[0]!.detail, /^2 main verifications of patterns beyond the first 1 were not held/)
  const whole = await publishPack(opts(dir(), await records(dir(), [BLOCK], { verifications: [verificationRecord(1, LIFE, BLOCK, T0)] })))
  t.same(whole.notes, [], 'no note when every pattern is held')
})

t.test('a mover cell on a main verification of a pattern that is not a mover is refused, whichever of the two a parent has', async (t) => {
  const onPenrose = (cls: string, rule: string | null) => ({
    pin_key: 'penrose-kd', model: 'bs', neighbourhood: 'edge', steps_per_gen: 1, class: cls, period: 1, dx: 0, dy: 0, speed: null,
    phases: [[{ i: 0, j: 0, k: 0, s: 1 }, { i: 0, j: 0, k: 1, s: 1 }]], rule, site: null, gun: null, family: 'bs', semantics: '1',
  })
  const [PENROSE_STILL, PENROSE_MOVER] = [onPenrose('still_life', null), onPenrose('mover', 'B2/S1')]
  const verification = (pattern: string, mover: string | null) => ({
    pattern_id: pattern, rule: 'B2/S1', main: true, periods: 2, generations: 2, field: 'patch penrose-kd level 4', sites: 1, semantics: '1', date: T0, range: null, mover,
  })
  const MOVER = '{"followed":100}'
  const penrose = async (patterns: Record<string, unknown>[], verifications: object[]) => {
    const folder = await records(dir(), [BLOCK])
    await writeJsonl(join(folder, 'tilings.jsonl'), [{ family: 'square' }, { family: 'penrose-kd' }])
    await writeJsonl(join(folder, 'patterns.jsonl'), [BLOCK, ...patterns])
    await writeJsonl(join(folder, 'verifications.jsonl'), [verificationRecord(1, LIFE, BLOCK, T0), ...verifications])
    return folder
  }

  const kept = dir()
  const mover = await publishPack(opts(kept, await penrose([PENROSE_MOVER], [verification('@patterns:2', MOVER)])))
  t.same(mover.notes, [])
  const issues: CheckIssue[] = []
  for await (const i of checkPack(kept, { level: 1 })) issues.push(i)
  t.same(issues.filter((i) => !i.note), [], 'a mover cell on a mover\'s verification, which the check lets stand')

  const both = await penrose([PENROSE_STILL], [verification('@patterns:2', MOVER)])
  const refused = dir()
  await t.rejects(publishPack(opts(refused, both)), {
    code: 'pack.verification-range-invalid', exitCode: 2, location: { file: join(both, 'verifications.jsonl'), line: 2, field: 'mover' },
    message: /its pattern [0-9a-f]{32} \(patterns\.jsonl line 2\) is not a mover/,
  }, 'both records: the verification is refused')
  t.notOk(existsSync(join(refused, 'refs')), 'no ref')

  // A parent has the still life: a verification of it (by its id) with a mover cell is refused.
  const parent = dir()
  const first = await publishPack(opts(parent, await penrose([PENROSE_STILL], [verification('@patterns:2', null)])))
  const patterns = await tableRows(parent, 'patterns', (await manifestOf(parent, first.manifest)).tables['patterns']!)
  const still = patterns.find((p) => p['pin_key'] === 'penrose-kd')!
  // Named by its id, a verification states its pin.
  const ofStill = { ...verification(still['id'] as string, MOVER), pin: still['pin'] }
  const later = await penrose([], [ofStill])
  await t.rejects(publishPack(opts(parent, later, { created: '2026-11-12T00:00:00Z' })), {
    code: 'pack.verification-range-invalid', exitCode: 2, location: { file: join(later, 'verifications.jsonl'), line: 2, field: 'mover' }, message: /\(a parent version's\) is not a mover/,
  }, 'the pattern a parent\'s: the verification is refused')

  // A parent has the verification (of a pattern it lacks): the still life's record is refused.
  const verified = dir()
  await publishPack(opts(verified, await penrose([], [ofStill])))
  const pattern = await penrose([PENROSE_STILL], [])
  await t.rejects(publishPack(opts(verified, pattern, { created: '2026-11-12T00:00:00Z' })), {
    code: 'pack.verification-range-invalid', exitCode: 2, location: { file: join(pattern, 'patterns.jsonl'), line: 2, field: 'class' },
    message: /a main verification of it in a parent version has a mover cell, but it is not a mover/,
  }, 'the verification a parent\'s: the pattern is refused')

  // One pattern kept (the block): the still life's class is not known, and a note says its mover cell was not held to it.
  const capped = await publishPack(opts(dir(), both, { stagedPatternsCap: 1 }))
  t.same(capped.notes.map((n) => n.code), ['pack.mover-class-unchecked'])
  t.match(capped.notes[0]!.detail, /^1 main verifications with a mover cell name a pattern that may be beyond the first 1 /)
})

t.test('aliases and score models are published, read back as written, and pass every level', async (t) => {
  const oldId = 'f'.repeat(32)
  const folder = await records(dir(), [BLOCK, BLINKER], {
    aliases: [{ old_id: oldId, target: '@patterns:2', reason: 'scheme-change', date: T0 }],
    score_models: [{ model: 'taste', version: '1', kind: 'logistic 1', features: ['cells', 'period'], weights: [0.5, -1.25], intercept: 0.125, fitted_on: 'the ratings of version 1', rater: null, metrics: '{"auc":0.81}' }],
  })
  const store = dir()
  const published = await publishPack(opts(store, folder))
  const m = await manifestOf(store, published.manifest)
  const patterns = await tableRows(store, 'patterns', m.tables['patterns']!)
  const blinker = patterns.find((p) => p['class'] === 'oscillator')!
  t.same(await tableRows(store, 'aliases', m.tables['aliases']!), [{ old_id: oldId, target: `pattern:${String(blinker['id'])}`, reason: 'scheme-change', date: T0 }], 'the alias names the blinker by its id')
  t.match(await tableRows(store, 'score_models', m.tables['score_models']!), [{ model: 'taste', version: '1', kind: 'logistic 1', features: ['cells', 'period'], weights: [0.5, -1.25], intercept: 0.125, rater: null, metrics: '{"auc":0.81}' }])
  const issues: CheckIssue[] = []
  for await (const i of checkPack(store, { level: 3 })) issues.push(i)
  t.same(issues.filter((i) => !i.note), [], 'level 3')

  const badAlias = await records(dir(), [BLOCK], { aliases: [{ old_id: oldId, target: '@patterns:1', reason: 'renamed', date: T0 }] })
  await t.rejects(publishPack(opts(dir(), badAlias)), { code: 'pack.alias-reason-invalid', location: { file: join(badAlias, 'aliases.jsonl'), line: 1 } }, 'a reason the spec does not name')
  const badModel = await records(dir(), [BLOCK], { score_models: [{ model: 'taste', version: '1', kind: 'logistic 1', features: ['cells'], weights: [0.5, 1], intercept: 0, fitted_on: 'x', rater: null, metrics: '{}' }] })
  await t.rejects(publishPack(opts(dir(), badModel)), { code: 'pack.score-model-weights-mismatch', location: { file: join(badModel, 'score_models.jsonl'), line: 1 } }, 'two weights for one feature')
})

t.test('a nullable member a record leaves out is null, as a part\'s reader gives it: the row rules judge it so', async (t) => {
  const symmetric = antRecord('LLRR')
  t.equal(symmetric['outcome'], 'symmetric', 'LLRR, run this far, is symmetric')
  const { speed: _speed, period: _period, dx: _dx, dy: _dy, onset: _onset, ...bare } = symmetric
  const store = dir()
  const published = await publishPack(opts(store, await records(dir(), [BLOCK], { ants: [bare] })))
  t.equal(published.seq, 1, 'a symmetric run without its speed, period, dx, dy and onset members is published')
  const ants = await tableRows(store, 'ants', (await manifestOf(store, published.manifest)).tables['ants']!)
  t.same(['speed', 'period', 'dx', 'dy', 'onset'].map((c) => ants[0]![c]), [null, null, null, null, null], 'with them null')
})

t.test('a record whose pin_key names no tiling is refused at its line and field', async (t) => {
  const folder = await records(dir(), [BLOCK, BLINKER])
  await writeJsonl(join(folder, 'patterns.jsonl'), [BLOCK, { ...BLINKER, pin_key: 'hexagonal' }])
  const store = dir()
  await t.rejects(publishPack(opts(store, folder)), {
    code: 'pack.record-unknown-tiling', exitCode: 2, location: { file: join(folder, 'patterns.jsonl'), line: 2, field: 'pin_key' },
    message: /pin_key "hexagonal" names no row of tilings\.jsonl/,
  }, 'the hexagonal grid, not in tilings.jsonl')
  t.notOk(existsSync(join(store, 'refs')), 'no ref')
})

t.test('"every pattern has one" rule: a lattice pattern whose rule is null needs a main verification, here or in a parent', async (t) => {
  const withVerifications = (patterns: Record<string, unknown>[], verifications: object[]) => records(dir(), patterns).then(async (folder) => {
    await writeJsonl(join(folder, 'verifications.jsonl'), verifications)
    return folder
  })
  const none = await records(dir(), [BLOCK, BLINKER])
  await rm(join(none, 'verifications.jsonl'))
  const bare = dir()
  await t.rejects(publishPack(opts(bare, none)), {
    code: 'pack.replay-rule-missing', exitCode: 2, location: { file: join(none, 'patterns.jsonl'), line: 1, field: 'rule' }, message: /every pattern has one/,
  }, 'no verifications at all: refused at the first record')
  t.notOk(existsSync(join(bare, 'refs')), 'no ref')

  const secondUnverified = await withVerifications([BLOCK, BLINKER, GLIDER], [verificationRecord(1, LIFE, BLOCK, T0), { ...verificationRecord(2, LIFE, BLINKER, T0), main: false }, verificationRecord(3, LIFE, GLIDER, T0)])
  await t.rejects(publishPack(opts(dir(), secondUnverified)), {
    code: 'pack.replay-rule-missing', location: { file: join(secondUnverified, 'patterns.jsonl'), line: 2, field: 'rule' },
  }, 'the blinker verified, but not as main: refused at its line, once the verifications are read')

  const ruled = await withVerifications([BLOCK, BLINKER], [verificationRecord(1, LIFE, BLOCK, T0), verificationRecord(2, LIFE, BLINKER, T0)])
  const store = dir()
  const first = await publishPack(opts(store, ruled))
  t.equal(first.seq, 1, 'each with its main verification')
  const issues: CheckIssue[] = []
  for await (const i of checkPack(store, { level: 3 })) issues.push(i)
  t.same(issues.filter((i) => !i.note), [], 'and level 3 runs both')

  // Version 2 states the block again without a verification: the parent's main verification is its rule.
  const again = await withVerifications([BLOCK, GLIDER], [verificationRecord(2, LIFE, GLIDER, T0)])
  t.equal((await publishPack(opts(store, again, { created: '2026-11-12T00:00:00Z' }))).seq, 2, 'a parent\'s main verification gives the block its rule')
  const kept: CheckIssue[] = []
  for await (const i of checkPack(store, { level: 3, caps: { mainRules: 1 } })) kept.push(i)
  t.same(kept.filter((i) => !i.note), [], 'a check keeping one pattern\'s main rules fails nothing')
  t.same(kept.filter((i) => i.code === 'pack.replay-rule-unkept').map((i) => i.level), [3, 3], 'and notes the two patterns whose rules it did not keep as not replayed')

  const capped = await withVerifications([BLOCK, BLINKER], [verificationRecord(1, LIFE, BLOCK, T0)])
  const note = await publishPack(opts(dir(), capped, { stagedPatternsCap: 1 }))
  t.same(note.notes.map((n) => n.code), ['pack.pattern-rule-unchecked'], 'beyond the patterns kept: published, with a note')
  t.match(note.notes[0]!.detail, /^1 pattern records on lattice tilings without a rule are beyond the first 1 patterns kept/)
})

t.test('ratings need their raters\' rows, here or in a parent, and a note needs consent to share notes', async (t) => {
  const [SELF, OTHER_RATER] = ['rater-5a1e0f00d1a2b3c4', 'rater-9c0ffee1234abcd0']
  const raterRow = (rater: string, notes: boolean) => ({ rater, consent_date: T0, consent_scope: 'public-permanent', display_name: null, orcid: null, members: null, notes })
  const rating = (rater: string, note: string | null) => ({ rater, target: '@patterns:1', scale: 'stars-1-5 1', verdict: '4', note, round: null, date: T0 })
  const missing = dir()
  const noRow = await records(dir(), [BLOCK], { ratings: [rating(SELF, null), rating(OTHER_RATER, null)], raters: [raterRow(SELF, false)] })
  await t.rejects(publishPack(opts(missing, noRow)), { code: 'pack.rater-row-missing', exitCode: 2, location: { file: join(noRow, 'ratings.jsonl'), line: 2 } }, 'a rater with no row')
  t.notOk(existsSync(join(missing, 'refs')), 'no ref')
  const noted = await records(dir(), [BLOCK], { ratings: [rating(SELF, 'Small.')], raters: [raterRow(SELF, false)] })
  await t.rejects(publishPack(opts(dir(), noted)), { code: 'pack.rating-note-without-consent', exitCode: 2, location: { file: join(noted, 'ratings.jsonl'), line: 1 } }, 'a note its rater does not share')
  const store = dir()
  await publishPack(opts(store, await records(dir(), [BLOCK], { raters: [raterRow(SELF, true)] })))
  const later = await publishPack(opts(store, await records(dir(), [BLOCK], { ratings: [rating(SELF, 'Small.')] }), { created: '2026-11-12T00:00:00Z' }))
  t.equal(later.seq, 2, 'a rating whose rater\'s row, sharing notes, is in the parent')

  // Raters beyond those kept: published with a note, and a check keeping as few notes it too.
  const many = await records(dir(), [BLOCK], { ratings: [rating(SELF, null), rating(OTHER_RATER, null)], raters: [raterRow(SELF, false)] })
  const capped = dir()
  const note = await publishPack(opts(capped, many, { ratersCap: 1 }))
  t.same(note.notes.map((n) => n.code), ['pack.raters-unchecked'], 'the rater without a row is beyond the one kept: a note, not a refusal')
  const issues: CheckIssue[] = []
  for await (const i of checkPack(capped, { level: 1, caps: { raters: 1 } })) issues.push(i)
  t.same(issues.map((i) => `${i.level} ${i.code} ${i.note}`), ['1 pack.raters-unchecked true'], 'the check with one rater kept notes it')
  const full: CheckIssue[] = []
  for await (const i of checkPack(capped, { level: 1 })) full.push(i)
  t.same(full.filter((i) => !i.note).map((i) => i.code), ['pack.rater-row-missing'], 'and with room for both, finds the missing row')
})

t.test('tilings and rules rows beyond what a publish keeps are refused at their record, or the publish when a parent has them', async (t) => {
  const twoRules = await records(dir(), [BLOCK], { rules: [ruleRecord(LIFE), ruleRecord(HIGHLIFE)] })
  const refused = dir()
  await t.rejects(publishPack(opts(refused, twoRules, { factKeysCap: 1 })), {
    code: 'pack.facts-too-many', exitCode: 2, location: { file: join(twoRules, 'rules.jsonl'), line: 2 },
    message: /^this record makes more rules rows than a publish keeps \(1 keys, /,
  }, 'a second rule with one key kept')
  t.notOk(existsSync(join(refused, 'refs', 'golden-a.json')), 'no version is published')
  t.same(await readdir(join(refused, '.tmp')).catch(() => []), [], 'and nothing half-written is left')
  const feed = dir()
  const first = await publishPack(opts(feed, twoRules))
  const [tiling] = await tableRows(feed, 'tilings', (await manifestOf(feed, first.manifest)).tables['tilings']!)
  // The book keeps a tiling's pin key, pin, kind and group, and its pin and kind again; a rule's notation
  // and family, and its row's key.
  const text = (column: string) => String(tiling![column]).length
  const tilingChars = text('pin_key') + 2 * text('pin') + 2 * text('kind') + text('tiling_group')
  const ruleChars = (r: SampleRule) => r.notation.length + String(ruleRecord(r)['family']).length + `${r.notation}\n${r.neighbourhood}\n${r.steps_per_gen}`.length
  const both = tilingChars + ruleChars(LIFE) + ruleChars(HIGHLIFE)
  t.ok((await publishPack(opts(dir(), twoRules, { factKeysCap: 2, keptTextCap: both }))).manifest, 'at the caps, published')
  await t.rejects(publishPack(opts(dir(), twoRules, { keptTextCap: both - 1 })), {
    code: 'pack.facts-too-many', location: { file: join(twoRules, 'rules.jsonl'), line: 2 },
  }, 'a character fewer, refused at the second rule')
  await t.rejects(publishPack(opts(dir(), twoRules, { keptTextCap: tilingChars - 1 })), {
    code: 'pack.facts-too-many', location: { file: join(twoRules, 'tilings.jsonl'), line: 1 }, message: /^this record makes more tilings rows/,
  }, 'a tiling whose keys pass the characters left')
  const twoTilings = await records(dir(), [BLOCK], { tilings: [{ family: 'square' }, { family: 'hex' }] })
  await t.rejects(publishPack(opts(dir(), twoTilings, { factKeysCap: 1 })), {
    code: 'pack.facts-too-many', location: { file: join(twoTilings, 'tilings.jsonl'), line: 2 },
  }, 'a second tiling with one key kept')

  const refBefore = await readFile(join(feed, 'refs', 'golden-a.json'))
  await t.rejects(publishPack(opts(feed, await records(dir(), [BLINKER]), { created: '2026-11-12T00:00:00Z', factKeysCap: 1 })), {
    code: 'pack.facts-too-many', exitCode: 2, message: /^the parent versions hold more rules rows than a publish keeps/,
  }, 'a parent\'s second rule with one key kept')
  t.same(await readFile(join(feed, 'refs', 'golden-a.json')), refBefore, 'the feed\'s ref is unchanged')
})

t.test('a publish keeps more rules than a check: one more than the check keeps is published, and the check notes the rest', async (t) => {
  const ruleAt = (n: number) => ({ ...ruleRecord(LIFE), notation: `R${n}`, family: 'other', states: 2, birth: null, survive: null })
  const atlas = await records(dir(), [BLOCK], { rules: [ruleRecord(LIFE), ...Array.from({ length: FACT_KEYS_CAP }, (_, n) => ruleAt(n))] })
  const store = dir()
  await publishPack(opts(store, atlas))
  const issues: CheckIssue[] = []
  for await (const i of checkPack(store, { level: 1 })) issues.push(i)
  t.same(issues.map((i) => `${i.code} ${i.note}`), ['pack.facts-unkept true', 'pack.facts-unkept true'], 'the rules beyond the check\'s keys are noted (their families, and their rows\' digests), and nothing fails')
})

t.test('lines end at \\n, \\r\\n or a lone \\r, the last may have no ending, and they are read in order', async (t) => {
  const lf = await records(dir(), [BLOCK, BLINKER, GLIDER])
  const expected = (await publishPack(opts(dir(), lf))).manifest
  const mixed = await records(dir(), [BLOCK, BLINKER, GLIDER])
  const lines = [BLOCK, BLINKER, GLIDER].map((p) => JSON.stringify(p))
  await writeFile(join(mixed, 'patterns.jsonl'), `${lines[0]}\r\n${lines[1]}\r${lines[2]}`)
  t.equal((await publishPack(opts(dir(), mixed))).manifest, expected, 'the same version')
  const blank = await records(dir(), [BLOCK])
  await writeFile(join(blank, 'patterns.jsonl'), `${lines[0]}\r\n\r\n${lines[1]}\n`)
  await t.rejects(publishPack(opts(dir(), blank)), { code: 'pack.record-invalid', location: { line: 2 } }, 'a blank line, counted with \\r\\n endings')
  const first = await records(dir(), [BLOCK])
  await writeFile(join(first, 'patterns.jsonl'), `${JSON.stringify({ ...BLOCK, canonical: 'o' })}\n{not json\n`)
  await t.rejects(publishPack(opts(dir(), first)), { code: 'pack.record-disagrees', location: { line: 1 } }, 'a bad record before a line that is not JSON is the one refused')
  const conflict = await records(dir(), [BLOCK])
  await writeFile(join(conflict, 'patterns.jsonl'), `${lines[0]}\n${JSON.stringify({ ...BLOCK, speed: 'c/1' })}\n{not json\n`)
  const store = dir()
  await t.rejects(publishPack(opts(store, conflict)), { code: 'pack.fact-conflict', exitCode: 2, location: { file: join(conflict, 'patterns.jsonl'), line: 2 } }, 'a fact given two rows (found on the encoding thread) before a line that is not JSON, at the second one\'s line')
  t.same((await readdir(join(store, '.tmp'))).filter((f) => f.startsWith('.part-')), [], 'no part file left behind')
})

t.test('local paths become file names', async (t) => {
  t.equal(withoutLocalPaths('found by /home/u/runs/soup-17.rle in B3/S23 at c/4'), 'found by soup-17.rle in B3/S23 at c/4')
  t.equal(withoutLocalPaths('C:\\Users\\me\\a.txt and \\\\server\\share\\b.txt and ~/c.txt and file:///tmp/d.txt'), 'a.txt and b.txt and c.txt and d.txt')
  t.equal(withoutLocalPaths('{"source":"/x/y/z.rle"}'), '{"source":"z.rle"}', 'inside JSON text too, and the JSON stays JSON')
  t.equal(withoutLocalPaths(JSON.stringify({ source: '\\\\server\\share\\b.txt', at: 'C:\\Users\\me\\a.txt' })), '{"source":"b.txt","at":"a.txt"}', 'a UNC path and a drive path as JSON writes them, backslashes doubled')
})

t.test('the gate before the scrub: a text it lets through unwalked never held a path', async (t) => {
  t.notOk(mayHoldLocalPath('{"rule":"B3/S23","speed":"c/4 diagonal","notes":"see a/b"}'), 'rules, speeds and a/b are no path')
  for (const text of ['/x/y', '"/x/y"', 'at /tmp/a', 'a=/x/y', '(/x/y)', '[/x/y]', 'a,/x/y', 'C:\\x', '\\\\s\\x', '~/x', 'file:///x', 'a\u00a0/x/y']) t.ok(mayHoldLocalPath(text), text)
  // Random texts of the characters paths are made of: whatever the scrub changes, the gate let in.
  const random = seededRandom(11)
  const alphabet = ['/', '\\', '~', ' ', '"', '=', '(', ',', 'a', 'b', '3', ':', 'C', 'file:', '.', '\u00a0', '\n']
  let changed = 0
  for (let n = 0; n < 60_000; n++) {
    const text = Array.from({ length: 1 + Math.floor(random() * 12) }, () => alphabet[Math.floor(random() * alphabet.length)]!).join('')
    if (withoutLocalPaths(text) === text) continue
    changed++
    if (!mayHoldLocalPath(text)) t.fail(`${JSON.stringify(text)} holds a path the gate let through`)
  }
  t.ok(changed > 1000, `${changed} texts held a path, and the gate let in each`)
})

t.test('a record is scrubbed unless its JSON text holds no path mark, escaped or not', async (t) => {
  for (const text of ['{"source":"\\u002fhome\\u002falice\\u002fx.rle"}', '{"source":"\\/home\\/alice\\/x.rle"}', '{"source":"\\u007e/x.rle"}', '{"run":{"at":["/home/alice/x.rle"]}}']) {
    const scrubbed = JSON.stringify(scrubRecordPaths(JSON.parse(text) as Record<string, unknown>, text))
    t.notMatch(scrubbed, /alice|~/, `${text}: ${scrubbed}`)
  }
  const plain = { rule: 'B3-S23', n: 1 }
  t.equal(scrubRecordPaths(plain, JSON.stringify(plain)), plain, 'a text without one is left as it is')
})

t.test('no local path anywhere: every file and every table cell written is scanned', async (t) => {
  const store = dir()
  const rec = await records(dir(), [BLOCK, GLIDER], {
    provenance: [{ target: '@patterns:1', seq: 0, kind: 'found', finder: null, orcid: null, search_kind: 'hunt', search: null, machine: 'linux-x86_64', date: T0, source: '/home/alice/soups/run-7/soup-17.rle', pack: null, run: '{"source":"C:\\\\Users\\\\alice\\\\soup.rle","tiling":"square"}' }],
    annotations: [
      { target: '@patterns:2', field: 'notes', value: '"seen in file:///home/alice/notes/glider.txt and ~/more/x.txt"', score_model: null, date: T0 },
      { target: '@patterns:1', field: 'notes', value: '"copied from /tmp/scratch/block.rle, /var/lib/pipe/runs/b.rle and \\\\\\\\fileserver\\\\share\\\\y.rle"', score_model: null, date: T0 },
    ],
  })
  await publishPack(opts(store, rec))
  // Any absolute path of two or more components (not only /home or /Users), and the spec's other forms.
  const PATH = /(?:^|[^A-Za-z0-9_.~:/\\])(?:\/[A-Za-z0-9._-]+){2,}|~\/|[A-Za-z]:\\|\\\\[A-Za-z]|file:\/\//
  const bad: string[] = []
  for (const f of await files(store)) {
    if (f.endsWith('.parquet')) continue
    if (PATH.test((await readFile(join(store, f))).toString('utf8'))) bad.push(f)
  }
  const m = await manifestOf(store, (JSON.parse(await readFile(join(store, 'refs', 'golden-a.json'), 'utf8')) as { manifest: string }).manifest)
  let cells = 0
  const scan = (v: unknown, where: string): void => {
    if (typeof v === 'string') { cells++; if (PATH.test(v)) bad.push(`${where}: ${v}`) } else if (Array.isArray(v)) v.forEach((x) => scan(x, where))
    else if (v !== null && typeof v === 'object') for (const x of Object.values(v)) scan(x, where)
  }
  for (const [table, index] of Object.entries(m.tables)) for (const row of await tableRows(store, table as keyof typeof PACK_TABLES, index)) scan(row, table)
  t.same(bad, [], `no local path in ${(await files(store)).length} files and ${cells} string cells`)
  const source = (await tableRows(store, 'provenance', m.tables['provenance']!)).map((r) => [r['source'], r['run']])
  t.same(source, [['soup-17.rle', '{"source":"soup.rle","tiling":"square"}']], 'paths became file names, and JSON cells stayed JSON')
})

/**
 * checkPack (src/formats/pack/check/check.ts) over stores and exports made in test/pack-check-fixtures.ts: a clean
 * store and its export pass every level (their one note: the Penrose pattern is not replayed), levels are
 * cumulative, and each kind of damage is refused with its level and code, on the file or record it concerns.
 * Cases run at once: a check mostly waits on small reads, so they overlap well.
 */
import { createHash } from 'node:crypto'
import { appendFile, copyFile, mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, truncate, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { formatBytes } from '../src/core/input-file.js'
import { CHECK_CODES, checkPack, levelOf, PackChecker, type CheckIssue, type CheckLevel, type CheckOptions } from '../src/formats/pack/check/check.js'
import { buildTableIndex, type TablePart } from '../src/formats/pack/documents/doc-index.js'
import { writePackJson } from '../src/formats/pack/documents/documents.js'
import { patternId, quickstartId } from '../src/formats/pack/records/identity.js'
import { buildKeyStatement, firstKeyStatement, keyStatementBytes, revocationStatement, signKeyStatement, successorKeyStatement } from '../src/formats/pack/keys/key-statements.js'
import { fingerprint, generateKey, signerName } from '../src/formats/pack/keys/ssh-key.js'
import { buildRef, signRef } from '../src/formats/pack/documents/doc-ref.js'
import { NS_MANIFEST, signSshsig } from '../src/formats/pack/keys/sshsig.js'
import { exportMediaPath, objectPath, refPath, signaturePath } from '../src/formats/pack/documents/store.js'
import { READ_LIMITS } from '../src/formats/pack/tables/parquet-read.js'
import { PACK_TABLES } from '../src/formats/pack/tables/table-schemas.js'
import { findLatticeTiling, latticeTilingRow } from '../src/formats/pack/geometry/tilings.js'
import { LIFE } from '../src/sim/pack-records.js'
import {
  BLINKER,
  FEED,
  GLIDER,
  PUBLISHER,
  PUBLISHER_ID,
  SQUARE,
  SUCCESSOR,
  T0,
  buildStore,
  cleanRows,
  copyStore,
  exportStore,
  fileOf,
  inflatedPart,
  mediaRow,
  patternRow,
  quickstartRow,
  smallRows,
  type BuiltStore,
  type Row,
  type StoreSpec,
  type TableHookArgs,
} from './pack-check-fixtures.js'

const base = await mkdtemp(join(tmpdir(), 'pack-check-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
let made = 0
const fresh = () => join(base, `p${made++}`)

async function check(dir: string, level: CheckLevel = 3, opts: CheckOptions = {}): Promise<CheckIssue[]> {
  const issues: CheckIssue[] = []
  for await (const issue of checkPack(dir, { level, ...opts })) issues.push(issue)
  return issues
}

const shown = (issues: CheckIssue[]) => JSON.stringify(issues, null, 1)
const failures = (issues: CheckIssue[]) => issues.filter((i) => !i.note).map((i) => `${i.level} ${i.code}`).sort()

/** The failures are exactly `expected` ("level code"), and every issue is at its code's level. */
function exactly(t: Test, issues: CheckIssue[], expected: string[], what = ''): void {
  t.same(failures(issues), [...expected].sort(), `${what} ${shown(issues)}`)
  for (const i of issues) if (i.level !== levelOf(i.code)) t.fail(`${i.code} reported at level ${i.level}`)
}

/** Each of `expected` ("level code", target) is among the failures. */
function includes(t: Test, issues: CheckIssue[], expected: [string, string][], what = ''): void {
  for (const [lc, target] of expected) t.ok(issues.some((i) => !i.note && `${i.level} ${i.code}` === lc && i.target === target), `${what} ${lc} on ${target} in ${shown(issues)}`)
}

const each = <C>(cases: readonly C[], f: (c: C) => Promise<void>): Promise<void[]> => Promise.all(cases.map(f))

const penroseRows = cleanRows({ aperiodic: true })
const clean = await buildStore(fresh(), { rows: penroseRows })
const cleanExport = fresh()
await exportStore(clean, cleanExport, penroseRows)
/** The store most damage starts from: clean, without the Penrose tiling, whose patch every check reads. */
const plain = await buildStore(fresh())
const manifestPath = objectPath(plain.manifest, 'json')
const partOf = (s: BuiltStore, table: string) => objectPath(s.parts[table]![0]!.object, 'parquet')
const indexDoc = (table: string, parts: TablePart[], extra: Record<string, unknown> = {}) => ({
  children: [], format: 'jetcarp-index', parts, schema: PACK_TABLES[table as keyof typeof PACK_TABLES].schemaId, table, version: '1.0', ...extra,
})

async function damaged(change: (s: BuiltStore) => Promise<unknown>, from = plain): Promise<BuiltStore> {
  const s = await copyStore(from, fresh())
  await change(s)
  return s
}
async function flipByte(file: string): Promise<void> {
  const bytes = await readFile(file)
  const at = bytes.length >> 1
  bytes[at] = bytes[at]! ^ 0x01
  await writeFile(file, bytes)
}
/** A store of the small pack (tilings and rules, no search): damage that needs no record builds faster. */
const small = (spec: StoreSpec = {}): StoreSpec => ({ rows: smallRows(), search: false, ...spec })
function withRows(change: (rows: Record<string, Row[]>) => void): StoreSpec {
  const rows = cleanRows()
  change(rows)
  return { rows }
}
const gliderOf = (rows: Record<string, Row[]>) => rows.patterns!.find((p) => p.class === 'spaceship')!

t.test('a clean store passes every level; its only note is the pattern level 3 does not replay', async (t) => {
  for (const level of [0, 1, 2, 3] as const) {
    const checker = new PackChecker(clean.dir, { level })
    const issues: CheckIssue[] = []
    const started = performance.now()
    for await (const i of checker.run()) issues.push(i)
    t.comment(`clean store (${checker.stats!.rows} rows), level ${level}: ${Math.round(performance.now() - started)} ms`)
    exactly(t, issues, [])
    if (level < 3) t.same(issues, [], `level ${level}: no notes either`)
    else t.match(issues, [{ note: true, level: 3, code: 'pack.replay-not-replayable', target: /^pattern:/, detail: /penrose-kd.*aperiodic/ }])
    t.match(checker.stats, { kind: 'store', manifests: 2, objects: 14 }, 'both versions, every data object once')
    if (level === 3) t.match(checker.stats!.replay, { confirmed: 4, failed: 0, unchecked: 0, notReplayed: 1 }, 'block, blinker, glider and the Star Wars oscillator replayed')
  }
})

t.test('its export passes too, followed through index/ and the export\'s names', async (t) => {
  const checker = new PackChecker(cleanExport, { level: 3 })
  const issues: CheckIssue[] = []
  for await (const i of checker.run()) issues.push(i)
  exactly(t, issues, [])
  t.match(checker.stats, { kind: 'export', manifests: 2, objects: 14, replay: { confirmed: 4 } }, 'pack.json, its parent in history/, every file')
})

t.test('levels are cumulative: a media file that does not hash is level 1, and level 0 only finds it there', async (t) => {
  const media = objectPath(penroseRows.media![0]!.object as string, 'png')
  const s = await damaged((s) => flipByte(fileOf(s.dir, media)))
  exactly(t, await check(s.dir, 0), [], 'level 0 does not hash')
  const issues = await check(s.dir, 1)
  exactly(t, issues, ['1 pack.object-hash-mismatch'])
  includes(t, issues, [['1 pack.object-hash-mismatch', media]])
  await unlink(fileOf(s.dir, media))
  exactly(t, await check(s.dir, 0), ['0 pack.object-missing'])
})

t.test('writer rules in a store: a local path in a document, media bytes of another kind, stray objects (--all-objects)', async (t) => {
  const pathy = await buildStore(fresh(), small({ manifest: (doc) => ({ ...doc, later_minor: { note: 'built from \\\\lab-nas\\packs\\life' } }) }))
  const manifest = objectPath(pathy.manifest, 'json')
  exactly(t, await check(pathy.dir, 1), ['1 pack.local-path'], 'a local path in the manifest')
  includes(t, await check(pathy.dir, 1), [['1 pack.local-path', manifest]])
  t.match((await check(pathy.dir, 1)).find((i) => i.code === 'pack.local-path'), { detail: /^\.later_minor\.note: a local path "\\\\\\\\lab-nas\\\\packs\\\\life"/ })
  exactly(t, await check(pathy.dir, 0), [], 'level 0 does not hold a writer to it')
  const deep = await damaged((s) => writeFile(fileOf(s.dir, 'jetcarp-store.json'), `{"x":${'['.repeat(20_000)}${']'.repeat(20_000)}}`))
  includes(t, await check(deep.dir, 1), [['0 pack.json-too-deep', 'jetcarp-store.json']], 'a document nested too deep is its reader\'s finding, not linted')

  const gif = await buildStore(fresh(), withRows((rows) => { rows.media![0]!.media_type = 'image/gif' }))
  const png = objectPath(penroseRows.media![0]!.object as string, 'png')
  const named = objectPath(penroseRows.media![0]!.object as string, 'gif')
  await copyFile(fileOf(gif.dir, png), fileOf(gif.dir, named))
  const issues = await check(gif.dir, 1)
  exactly(t, issues, ['1 pack.media-kind-mismatch'])
  includes(t, issues, [['1 pack.media-kind-mismatch', named]])
  t.match(issues.find((i) => i.code === 'pack.media-kind-mismatch'), { detail: 'its row states "image/gif", its bytes are a PNG image' })

  const stray = await damaged(async (s) => {
    const other = Buffer.from('{"not":"what the name says"}')
    const unnamed = Buffer.from('{"an":"object nothing names"}')
    const hex = createHash('sha256').update(unnamed).digest('hex')
    await mkdir(fileOf(s.dir, `objects/sha256/${hex.slice(0, 2)}`), { recursive: true })
    await writeFile(fileOf(s.dir, `objects/sha256/${hex.slice(0, 2)}/${hex}.json`), unnamed)
    await mkdir(fileOf(s.dir, 'objects/sha256/ab'), { recursive: true })
    await writeFile(fileOf(s.dir, `objects/sha256/ab/ab${'0'.repeat(62)}.json`), other)
    await writeFile(fileOf(s.dir, 'objects/sha256/ab/notes.txt'), 'left here')
    await mkdir(fileOf(s.dir, 'objects/sha256/ab/a-folder'))
    await writeFile(fileOf(s.dir, `objects/sha256/cd/ab${'1'.repeat(62)}.parquet`), other).catch(async () => {
      await mkdir(fileOf(s.dir, 'objects/sha256/cd'), { recursive: true })
      await writeFile(fileOf(s.dir, `objects/sha256/cd/ab${'1'.repeat(62)}.parquet`), other)
    })
  })
  exactly(t, await check(stray.dir, 3), [], 'objects nothing names are not read without --all-objects')
  const all = await check(stray.dir, 1, { allObjects: true })
  exactly(t, all, ['1 pack.object-stray', '1 pack.object-stray', '1 pack.object-stray', '1 pack.object-stray'], 'a name that is not its hash, no object name, a folder that is not its prefix, a folder among the objects; an unnamed object with the right name is none')
  includes(t, all, [['1 pack.object-stray', `objects/sha256/ab/ab${'0'.repeat(62)}.json`], ['1 pack.object-stray', 'objects/sha256/ab/notes.txt'], ['1 pack.object-stray', `objects/sha256/cd/ab${'1'.repeat(62)}.parquet`], ['1 pack.object-stray', 'objects/sha256/ab/a-folder']])
  exactly(t, await check(clean.dir, 3, { allObjects: true }), [], 'a clean store has no stray object')
})

t.test('a wrong hash and a wrong size of each kind of object', async (t) => {
  const media = objectPath(penroseRows.media![0]!.object as string, 'png')
  const patch = objectPath(clean.referencePatch!, 'parquet')
  const index = objectPath(plain.indexes.patterns!, 'json')
  const part = partOf(plain, 'patterns')
  // A manifest, an index and a reference patch have no stated size: another size is another hash.
  const cases: [string, (s: BuiltStore) => Promise<void>, string, string][] = [
    ['manifest bytes changed', (s) => flipByte(fileOf(s.dir, manifestPath)), 'pack.object-hash-mismatch', manifestPath],
    ['manifest cut short', (s) => truncate(fileOf(s.dir, manifestPath), plain.manifestBytes.length - 1), 'pack.object-hash-mismatch', manifestPath],
    ['index bytes changed', (s) => flipByte(fileOf(s.dir, index)), 'pack.object-hash-mismatch', index],
    ['index cut short', (s) => truncate(fileOf(s.dir, index), 10), 'pack.object-hash-mismatch', index],
    ['part bytes changed', (s) => flipByte(fileOf(s.dir, part)), 'pack.object-hash-mismatch', part],
    ['part one byte longer than its index says', (s) => appendFile(fileOf(s.dir, part), 'x'), 'pack.object-size-mismatch', part],
    ['reference patch bytes changed', (s) => flipByte(fileOf(s.dir, patch)), 'pack.object-hash-mismatch', patch],
    ['reference patch one byte longer', (s) => appendFile(fileOf(s.dir, patch), 'x'), 'pack.object-hash-mismatch', patch],
    ['media bytes changed', (s) => flipByte(fileOf(s.dir, media)), 'pack.object-hash-mismatch', media],
    ['media one byte longer than its row says', (s) => appendFile(fileOf(s.dir, media), 'x'), 'pack.object-size-mismatch', media],
  ]
  await each(cases, async ([what, change, code, target]) => {
    const issues = await check((await damaged(change, target === patch ? clean : plain)).dir, 3)
    includes(t, issues, [[`1 ${code}`, target]], what)
    t.ok(issues.every((i) => i.level <= 1 || i.note), `${what}: nothing above level 1 follows from it`)
  })
  const tooLarge = await damaged((s) => writeFile(fileOf(s.dir, index), Buffer.alloc(16 * 1024 * 1024 + 1, 0x20)))
  includes(t, await check(tooLarge.dir, 0), [['0 pack.json-too-large', index]])
})

t.test('documents: canonical form, numbers, nesting, versions, requires, hashes', async (t) => {
  const later = '"later_minor":{"note":"ignored by 1.0 readers"}'
  const bytes = (from: string, to: string): StoreSpec => ({ manifestBytes: (b) => Buffer.from(b.toString().replace(from, to)) })
  const tables = (d: Record<string, unknown>, media: string) => ({ ...d, tables: { ...(d.tables as object), media } })
  const cases: [string, StoreSpec, string[]][] = [
    ['a manifest with whitespace', bytes('{', '{ '), ['0 pack.json-not-canonical']],
    ['a number with a fraction', bytes('"ants":1', '"ants":1.0'), ['0 pack.json-number-fraction']],
    ['2^53', bytes('"ants":1', '"ants":9007199254740992'), ['0 pack.json-number-range']],
    ['JSON nested 33 deep', bytes(later, `"later_minor":${'['.repeat(32)}${']'.repeat(32)}`), ['0 pack.json-too-deep']],
    ['JSON nested 32 deep', bytes(later, `"later_minor":${'['.repeat(31)}${']'.repeat(31)}`), []],
    ['major version 2', { manifest: (d) => ({ ...d, version: '2.0' }) }, ['1 pack.version-major']],
    ['minor version 7, with members 1.0 does not know', { manifest: (d) => ({ ...d, version: '1.7' }) }, []],
    ['a feature it requires', { manifest: (d) => ({ ...d, requires: ['zstd-dictionaries'] }) }, ['1 pack.requires-unknown']],
    ['a malformed hash', { manifest: (d) => tables(d, `sha256:${'AB'.repeat(32)}`) }, ['1 pack.hash-malformed']],
    ['another algorithm where the object is needed', { manifest: (d) => tables(d, `md5:${'ab'.repeat(16)}`) }, ['1 pack.hash-prefix']],
  ]
  await each(cases, async ([what, spec, expected]) => {
    const s = await buildStore(fresh(), small(spec))
    const issues = await check(s.dir, 2)
    exactly(t, issues, expected, what)
    if (expected.length > 0) t.equal(issues[0]?.target, objectPath(s.manifest, 'json'), `${what}: on the manifest`)
  })
  const index = await buildStore(fresh(), small({
    tableIndex: ({ table, parts, putObject }) => {
      const built = buildTableIndex({ table, schema: PACK_TABLES[table as keyof typeof PACK_TABLES].schemaId, parts }).bytes
      return putObject(table === 'rules' ? Buffer.from(built.toString().replace('{', '{\n')) : built, 'json')
    },
  }))
  const issues = await check(index.dir, 1)
  exactly(t, issues, ['0 pack.json-not-canonical'])
  t.equal(issues[0]!.target, objectPath(index.indexes.rules!, 'json'), 'a non-canonical index, on the index')
  const media = await buildStore(fresh(), withRows((r) => { r.media![0]!.object = 'sha256:../../../outside' }))
  includes(t, await check(media.dir, 1), [['1 pack.hash-malformed', `${String(penroseRows.media![0]!.target)} poster`]], 'a media row\'s object')
})

t.test('signatures and keys (level 2)', async (t) => {
  const sigOf = (s: BuiltStore) => fileOf(s.dir, signaturePath(s.manifest, signerName(PUBLISHER.publicKey)))
  const first = firstKeyStatement(PUBLISHER, { created: T0, name: 'Check Publisher' })
  const selfSignedSuccessor = signKeyStatement(buildKeyStatement({ key: SUCCESSOR.publicKey, created: T0, supersedes: PUBLISHER_ID }), SUCCESSOR)
  const [bad, renamed, unsigned, revoked, rotated, forged] = await Promise.all([
    damaged((s) => writeFile(sigOf(s), signSshsig(PUBLISHER, 'other bytes', NS_MANIFEST))),
    damaged((s) => rename(sigOf(s), fileOf(s.dir, signaturePath(s.manifest, signerName(SUCCESSOR.publicKey))))),
    damaged((s) => unlink(sigOf(s))),
    buildStore(fresh(), small({ keys: [revocationStatement(first, PUBLISHER)] })),
    buildStore(fresh(), small({ keys: [first, successorKeyStatement(PUBLISHER, SUCCESSOR.publicKey, { created: T0 })], signer: SUCCESSOR })),
    buildStore(fresh(), small({ keys: [first, selfSignedSuccessor], signer: SUCCESSOR })),
  ])
  const sig = signaturePath(plain.manifest, signerName(PUBLISHER.publicKey))
  const b = await check(bad.dir, 2)
  exactly(t, b, ['2 pack.sig-bad', '2 pack.manifest-unsigned'])
  includes(t, b, [['2 pack.sig-bad', sig], ['2 pack.manifest-unsigned', manifestPath]])
  exactly(t, await check(bad.dir, 1), [], 'signatures are not looked at below level 2')

  const wrongName = signaturePath(plain.manifest, signerName(SUCCESSOR.publicKey))
  includes(t, await check(renamed.dir, 2), [['2 pack.signer-name-mismatch', wrongName], ['2 pack.manifest-unsigned', manifestPath]])
  exactly(t, await check(unsigned.dir, 2), ['2 pack.manifest-unsigned'])

  const r = await check(revoked.dir, 2)
  exactly(t, r, ['2 pack.key-revoked', '2 pack.key-revoked', '2 pack.key-revoked'], 'the revoked key signs neither version nor the ref')
  includes(t, r, [['2 pack.key-revoked', objectPath(revoked.manifest, 'json')], ['2 pack.key-revoked', refPath(FEED)]])

  exactly(t, await check(rotated.dir, 2), [], 'a successor its predecessor signed publishes')
  const successorFile = `keys/${signerName(SUCCESSOR.publicKey)}.json`
  includes(t, await check(forged.dir, 2), [
    ['2 pack.key-successor-not-signed-by-predecessor', successorFile],
    ['2 pack.key-successor-not-signed-by-predecessor', objectPath(forged.manifest, 'json')],
    ['2 pack.key-successor-not-signed-by-predecessor', refPath(FEED)],
  ])
})

t.test('refs: their manifest\'s feed, and seq along the history the store holds', async (t) => {
  const [otherFeed, low, noParent, resigned] = await Promise.all([
    buildStore(fresh(), small({ manifest: (d) => ({ ...d, feed: 'check-b' }) })),
    buildStore(fresh(), small({ seq: 1 })),
    damaged((s) => unlink(fileOf(s.dir, objectPath(s.parent!, 'json')))),
    damaged(async (s) => {
      const ref = JSON.parse(await readFile(fileOf(s.dir, refPath(FEED)), 'utf8')) as Record<string, unknown>
      await writeFile(fileOf(s.dir, refPath(FEED)), writePackJson({ ...ref, seq: 3 }))
    }),
  ])
  const r = await check(resigned.dir, 2)
  exactly(t, r, ['2 pack.sig-bad'], 'a ref changed after it was signed')
  t.equal(r[0]!.target, refPath(FEED))
  exactly(t, await check(otherFeed.dir, 2), ['2 pack.ref-manifest-feed'])
  const issues = await check(low.dir, 2)
  exactly(t, issues, ['2 pack.ref-seq'])
  t.match(issues[0], { target: refPath(FEED), detail: /seq 1, but the store holds 2 versions/ })
  t.same(await check(noParent.dir, 3), [], 'a missing parent is history the store does not have')

  // A ref signed by another publisher's own standing key, for this publisher's manifest.
  const other = generateKey({ seed: Buffer.alloc(32, 44) })
  const otherRef = await damaged(async (s) => {
    await writeFile(fileOf(s.dir, `keys/${signerName(other.publicKey)}.json`), keyStatementBytes(firstKeyStatement(other, { created: T0, name: 'Another Publisher' })))
    const ref = JSON.parse(await readFile(fileOf(s.dir, refPath(FEED)), 'utf8')) as { feed: string; manifest: string; seq: number; updated: string }
    await writeFile(fileOf(s.dir, refPath(FEED)), signRef(buildRef({ feed: ref.feed, manifest: ref.manifest, seq: ref.seq, updated: ref.updated, publisher: fingerprint(other.publicKey) }), other).bytes)
  })
  const mismatch = await check(otherRef.dir, 2)
  exactly(t, mismatch, ['2 pack.ref-publisher-mismatch'], 'the ref of another publisher')
  t.match(mismatch[0], { target: refPath(FEED), detail: new RegExp(`the ref is of publisher ${fingerprint(other.publicKey).replace(/[+/]/g, '\\$&')}`) })
})

t.test('rows: ids, typed phases, pins and tilings', async (t) => {
  const zero = '0'.repeat(32)
  const cases: [string, StoreSpec, string[], string][] = [
    ['an id that is not its identity\'s hash', withRows((r) => { gliderOf(r).id = zero }), ['1 pack.id-mismatch'], `pattern:${zero}`],
    ['typed phases that differ from the identity', withRows((r) => {
      const phases = gliderOf(r).phases as unknown[][]
      gliderOf(r).phases = [phases[0], phases[1]!.slice(1), ...phases.slice(2)]
    }), ['1 pack.phases-mismatch'], `pattern:${String(patternRow(LIFE, GLIDER).id)}`],
    ['a canonical picture that is not the identity\'s', withRows((r) => { gliderOf(r).canonical = 'ooo' }), ['1 pack.identity-column-mismatch'], `pattern:${String(patternRow(LIFE, GLIDER).id)}`],
    ['a tiling whose pin is not its geometry\'s', withRows((r) => { r.tilings![0] = { ...SQUARE, a1: [1, 0.5] } }), ['1 pack.pin-mismatch'], 'tiling:square'],
    ['an ant whose id is not its identity\'s hash', withRows((r) => { r.ants![0]!.id = `ant-${zero}` }), ['1 pack.id-mismatch'], `ant:ant-${zero}`],
    ['a Quick Start entry whose id is not its scene\'s hash', withRows((r) => { r.quickstart![0]!.id = `qs-${zero}` }), ['1 pack.id-mismatch'], `quickstart:qs-${zero}`],
    ['a record whose pin is not its tiling\'s', withRows((r) => { r.quickstart![0] = quickstartRow({ pin: zero }) }), ['1 pack.record-pin-mismatch', '1 pack.id-mismatch'], `quickstart:${String(quickstartRow({ pin: zero }).id)}`],
  ]
  await each(cases, async ([what, spec, expected, target]) => {
    const issues = await check((await buildStore(fresh(), spec)).dir, 1)
    exactly(t, issues, expected, what)
    includes(t, issues, [[expected[0]!, target]], what)
  })
  const lacking = await check((await buildStore(fresh(), withRows((r) => { r.tilings = [] }))).dir, 1)
  t.equal(failures(lacking).filter((c) => c === '1 pack.tiling-missing').length, 6, 'four patterns, an ant and a Quick Start entry on a tiling the pack lacks')
})

t.test('an identity in another spelling is a note: only its hash is checked', async (t) => {
  const rows = cleanRows()
  const g = gliderOf(rows)
  const verification = rows.verifications!.find((v) => v.pattern_id === g.id)!
  g.identity = (g.identity as string).replace('jetcarp-pattern-v3', 'jetcarp-pattern-v4')
  g.id = verification.pattern_id = patternId(g.identity as string, g.pin as string)
  const issues = await check((await buildStore(fresh(), { rows })).dir, 3)
  exactly(t, issues, [])
  t.match(issues, [{ note: true, level: 1, code: 'pack.identity-unknown-scheme', target: `pattern:${String(g.id)}` }])
})

t.test('parts: partitions, order, schema ids, the index\'s rows and bounds', async (t) => {
  const qs = PACK_TABLES.quickstart
  const partitioned = (partition: Record<string, string>) => ({ table, parts, put }: TableHookArgs) =>
    put(indexDoc(table, table === 'quickstart' ? parts.map((p) => ({ ...p, partition })) : parts))
  // Two entries written in title order, which is not their id order, in row groups of one row; the index states the ids.
  const [low, high] = [quickstartRow({ scene: '{"a":1}' }), quickstartRow({ scene: '{"b":2}' })].map((r) => ({ ...r, id: quickstartId(r.scene as string, r.pin as string) })).sort((x, y) => (x.id < y.id ? -1 : 1))
  Object.assign(high!, { title: 'a' })
  Object.assign(low!, { title: 'b' })
  const [indexValue, rowValue, unsorted, schema, bounds] = await Promise.all([
    buildStore(fresh(), { tableIndex: partitioned({ tiling_group: 'Square' }) }),
    buildStore(fresh(), { ...withRows((r) => { r.quickstart = [quickstartRow({ tiling_group: 'not a value' })] }), writerSchema: { quickstart: { ...qs, partitionColumns: [] } }, tableIndex: partitioned({ tiling_group: 'square' }) }),
    buildStore(fresh(), {
      ...withRows((r) => { r.quickstart = [low!, high!] }),
      writerSchema: { quickstart: { ...qs, sortColumns: ['title'] } },
      rowGroupRows: 1,
      tableIndex: ({ table, parts, put }) => put(indexDoc(table, table === 'quickstart' ? parts.map((p) => ({ ...p, first: high!.id as string, last: low!.id as string })) : parts)),
    }),
    buildStore(fresh(), { tableIndex: ({ table, parts, put }) => put(indexDoc(table, parts, table === 'rules' ? { schema: 'jetcarp-rules 2' } : {})) }),
    buildStore(fresh(), small({ tableIndex: ({ table, parts, put }) => put(indexDoc(table, table === 'rules' ? parts.map((p) => ({ ...p, rows: p.rows + 1, last: 'Z' })) : parts)) })),
  ])
  const iv = await check(indexValue.dir, 1)
  exactly(t, iv, ['1 pack.partition-malformed'], 'a partition value in an index')
  t.equal(iv[0]!.target, objectPath(indexValue.indexes.quickstart!, 'json'))
  includes(t, await check(rowValue.dir, 1), [['1 pack.partition-value-invalid', `${partOf(rowValue, 'quickstart')} row 0`]], 'a partition value in a row')
  const us = await check(unsorted.dir, 1)
  exactly(t, us, ['1 pack.parquet-rows-unsorted'])
  t.equal(us[0]!.target, `${partOf(unsorted, 'quickstart')} row 1`)
  const sc = await check(schema.dir, 1)
  exactly(t, sc, ['1 pack.schema-unknown'], 'jetcarp-rules 2')
  t.equal(sc[0]!.target, objectPath(schema.indexes.rules!, 'json'))
  includes(t, await check(schema.dir, 3), [['3 pack.replay-rule-unknown', `pattern:${String(patternRow(LIFE, GLIDER).id)}`]], 'without its rules, nothing replays')
  exactly(t, await check(bounds.dir, 1), ['1 pack.part-rows-mismatch', '1 pack.part-bounds-mismatch'])
})

t.test('index trees: 8 levels, 9 levels, a cycle; a part whose pages claim more than 64x its size', async (t) => {
  /** The rules table's parts under a chain of `levels` indexes, whose hashes go to `into`, root first. */
  const chain = (levels: number, into: string[]) => async ({ table, parts, put }: TableHookArgs) => {
    if (table !== 'rules') return put(indexDoc(table, parts))
    let hash = await put(indexDoc(table, parts))
    into.unshift(hash)
    for (let l = 1; l < levels; l++) into.unshift((hash = await put(indexDoc(table, [], { children: [hash] }))))
    return hash
  }
  const [eight, nine, two] = [[], [], []] as string[][]
  const hostile = inflatedPart(1 << 20)
  let hostileHash = ''
  const [eightDeep, nineDeep, cyclic, withHostile] = await Promise.all([
    buildStore(fresh(), small({ tableIndex: chain(8, eight!) })),
    buildStore(fresh(), small({ tableIndex: chain(9, nine!) })),
    buildStore(fresh(), small({ tableIndex: chain(2, two!) })),
    buildStore(fresh(), small({
      tableIndex: async ({ table, parts, put, putObject }) => {
        if (table !== 'rules') return put(indexDoc(table, parts))
        hostileHash = await putObject(hostile, 'parquet')
        return put(indexDoc(table, [...parts, { bytes: hostile.length, first: 'B9/S', last: 'B9/S', object: hostileHash, partition: {}, rows: 3 }]))
      },
    })),
  ])
  exactly(t, await check(eightDeep.dir, 3), [], '8 levels')
  const d = await check(nineDeep.dir, 1)
  exactly(t, d, ['1 pack.index-too-deep'])
  t.equal(d[0]!.target, objectPath(nine![7]!, 'json'), 'on the index at level 8 that lists a ninth')

  // Content hashes cannot make a cycle; a lying file can, and only a reader that does not hash meets it.
  const lying = objectPath(two![1]!, 'json')
  await writeFile(fileOf(cyclic.dir, lying), writePackJson(indexDoc('rules', [], { children: [two![1]] })))
  t.match(await check(cyclic.dir, 0), [{ level: 1, code: 'pack.index-cycle', target: lying }], 'level 0 reads it, and stops at the cycle')
  includes(t, await check(cyclic.dir, 1), [['1 pack.object-hash-mismatch', lying]])

  const h = await check(withHostile.dir, 1)
  exactly(t, h, ['0 pack.parquet-decompressed-too-large'])
  t.equal(h[0]!.target, objectPath(hostileHash, 'parquet'))
})

t.test('paths that try to leave the pack', async (t) => {
  const outside = join(base, 'outside.json')
  await writeFile(outside, '{}')
  const linked = await damaged((s) => symlink(outside, fileOf(s.dir, 'refs/escape.json')))
  const l = await check(linked.dir, 3)
  exactly(t, l, ['0 pack.path-escape'])
  t.equal(l[0]!.target, 'refs/escape.json')

  const rows = cleanRows()
  rows.media!.push(mediaRow(rows.media![0]!.target as string, { kind: '../../../outside' }))
  const s = await buildStore(fresh(), { rows })
  // A kind outside the spec's four is refused as a value; the path is the question here.
  exactly(t, await check(s.dir, 3), ['1 pack.column-value-invalid'], 'in a store a media file is named by its hash, so its kind names nothing')
  const e = fresh()
  await exportStore(s, e, rows)
  const ex = await check(e, 3)
  exactly(t, ex, ['1 pack.column-value-invalid', '0 pack.path-escape'], 'in an export the kind is a file name')
  t.match(ex[1], { target: /^pattern:[0-9a-f]{32} \.\.\/\.\.\/\.\.\/outside$/ })
})

t.test('an export: a file missing, a signature that does not verify, an earlier manifest that does not hash', async (t) => {
  const dirs = [fresh(), fresh(), fresh()]
  await each(dirs, (d) => exportStore(plain, d, cleanRows()))
  const [missing, badSig, history] = dirs as [string, string, string]
  await unlink(fileOf(missing, exportMediaPath(penroseRows.media![0] as never)))
  await writeFile(join(badSig, 'sigs', `${signerName(PUBLISHER.publicKey)}.sig`), signSshsig(PUBLISHER, 'other', NS_MANIFEST))
  await flipByte(join(history, 'history', `${plain.parent!.slice(7)}.json`))
  exactly(t, await check(missing, 1), ['0 pack.object-missing'])
  exactly(t, await check(badSig, 2), ['2 pack.sig-bad', '2 pack.manifest-unsigned'])
  includes(t, await check(history, 1), [['1 pack.object-hash-mismatch', `history/${plain.parent!.slice(7)}.json`]])
})

t.test('level 3: a wrong period, displacement or class; a pattern without a rule; records over the budget are notes', async (t) => {
  const cases: [string, Row, string][] = [
    ['a glider said to have period 5', patternRow(LIFE, GLIDER, { period: 5 }), '3 pack.replay-period-mismatch'],
    ['a glider said to move by (1, -1)', patternRow(LIFE, GLIDER, { dx: 1 }), '3 pack.replay-displacement-mismatch'],
    ['a blinker said to be a still life', patternRow(LIFE, BLINKER, { class: 'still_life' }), '3 pack.replay-class-mismatch'],
  ]
  await each(cases, async ([what, pattern, code]) => {
    const s = await buildStore(fresh(), withRows((r) => {
      r.patterns!.push(pattern)
      r.verifications!.push({ ...r.verifications![0]!, pattern_id: pattern.id })
    }))
    exactly(t, await check(s.dir, 2), [], `${what}: nothing below level 3 sees it`)
    const issues = await check(s.dir, 3)
    exactly(t, issues, [code], what)
    includes(t, issues, [[code, `pattern:${String(pattern.id)}`]], what)
  })
  const noRule = await buildStore(fresh(), withRows((r) => { r.verifications = r.verifications!.slice(1) }))
  exactly(t, await check(noRule.dir, 3), ['3 pack.replay-rule-missing'])

  const checker = new PackChecker(plain.dir, { level: 3, replayBudget: { maxPeriod: 3 } })
  const issues: CheckIssue[] = []
  for await (const i of checker.run()) issues.push(i)
  exactly(t, issues, [])
  t.same(issues.filter((i) => i.code === 'pack.replay-over-budget').map((i) => i.note), [true, true], 'the glider and the period-4 oscillator: unchecked, as notes')
  t.same(checker.stats!.replay, { confirmed: 2, unchecked: 2, notReplayed: 0, failed: 0 })
})

t.test('a table this reader does not know is a note; not a pack, and a store without refs', async (t) => {
  const [unknown, noRefs] = await Promise.all([
    buildStore(fresh(), small({ manifest: (d) => ({ ...d, tables: { ...(d.tables as object), widgets: (d.tables as Record<string, string>).rules } }) })),
    damaged((s) => unlink(fileOf(s.dir, refPath(FEED)))),
  ])
  const issues = await check(unknown.dir, 3)
  exactly(t, issues, [])
  t.match(issues, [{ note: true, level: 0, code: CHECK_CODES.tableUnknown }])
  exactly(t, await check(noRefs.dir, 0), ['0 pack.store-no-refs'])
  await t.rejects(check(base), { code: 'pack.not-a-pack', exitCode: 2 })
})

t.test('a tiling whose neighbour lists break the spec\'s rules but hash to its pin is a note, pack.geometry-lint', async (t) => {
  const square = findLatticeTiling('square')!
  // The first touch neighbour left out (-1,-1), so the relation is not symmetric: its opposite still lists the tile.
  const lopsided = latticeTilingRow({ ...square, family: 'square-lopsided', name: 'Lopsided square', touch: [square.touch[0]!.slice(1)] }) as unknown as Row
  const store = await buildStore(fresh(), small({ rows: { ...smallRows(), tilings: [SQUARE, lopsided] } }))
  const issues = await check(store.dir, 1)
  exactly(t, issues, [], 'no failure: the pin is the geometry\'s')
  const lint = issues.filter((i) => i.code === 'pack.geometry-lint')
  t.equal(lint.length, 1, shown(issues))
  t.match(lint[0], { level: 1, note: true, target: /square-lopsided/, detail: 'touch[0] lists (1,1,0) but touch[0] does not list (-1,-1,0)' })
})

/** A tilings row whose first tile type's edge list holds `n` random neighbour offsets (random: they do not compress past the 64x rule). */
function squareWithEdges(n: number): Row {
  const offsets = Array.from({ length: n }, () => ({ di: (Math.random() * 2 ** 31) | 0, dj: (Math.random() * 2 ** 31) | 0, k: 0 }))
  return { ...SQUARE, edge: [offsets] }
}

/** A row's list elements at every depth, counted on the row as written (independent of the reader's vectors). */
function listElements(v: unknown): number {
  if (Array.isArray(v)) return v.length + v.reduce((n: number, x) => n + listElements(x), 0)
  if (v !== null && typeof v === 'object') return Object.values(v).reduce((n: number, x) => n + listElements(x), 0)
  return 0
}

t.test('a row of more list elements than a check builds a row from is a note, and is not built; one at the bound is checked', async (t) => {
  const bound = READ_LIMITS.rowListItems
  const others = listElements({ ...SQUARE, edge: [[]] })
  const [over, at] = await Promise.all([
    buildStore(fresh(), withRows((rows) => (rows.tilings = [squareWithEdges(bound - others + 1)]))),
    buildStore(fresh(), withRows((rows) => (rows.tilings = [squareWithEdges(bound - others)]))),
  ])
  const o = await check(over.dir, 3)
  const unchecked = o.filter((i) => i.code === CHECK_CODES.rowUnchecked)
  t.equal(unchecked.length, 1, 'one note')
  t.match(unchecked[0], { level: 1, note: true, target: `${partOf(over, 'tilings')} row 0`, detail: new RegExp(`holds ${bound + 1} list elements, more than the ${bound}`) })
  t.notOk(o.some((i) => i.code === 'pack.geometry-limit'), 'its geometry is not read, so the edge list\'s limit of 4,096 is not reached')
  // So a pack cannot pass by hiding a tiling in a row too large to build: the records on it fail.
  t.same(failures(o), Array(6).fill('1 pack.tiling-missing'), 'the tiling is not known to the six records on it')
  const a = await check(at.dir, 3)
  t.notOk(a.some((i) => i.code === CHECK_CODES.rowUnchecked), 'at the bound: no note')
  t.ok(a.some((i) => i.code === 'pack.geometry-limit' && i.target === 'tiling:square' && /has \d+ items, more than the limit 4096/.test(i.detail)), 'at the bound the row is built and its geometry checked')
})

t.test('a pack of more manifests, index trees and data objects than a check tracks is checked that far, then refused once', async (t) => {
  const tracked = async (cap: number) => check(clean.dir, 3, { caps: { tracked: cap } })
  let enough = 1
  while ((await tracked(enough)).some((i) => i.code === CHECK_CODES.checkTooLarge)) enough++
  t.ok(enough > 10, `the clean store needs ${enough} paths tracked`)
  exactly(t, await tracked(enough), [], 'with room for every path')
  const short = await tracked(enough - 1)
  exactly(t, short, [`0 ${CHECK_CODES.checkTooLarge}`], 'one path short')
  t.match(short.at(-1), { code: CHECK_CODES.checkTooLarge, detail: new RegExp(`than the ${enough - 1} a check keeps track of`) }, 'the last issue: nothing is checked after it')
  const first = await tracked(1)
  exactly(t, first, [`0 ${CHECK_CODES.checkTooLarge}`], 'room for the first manifest only')
  t.match(first.at(-1)!.target, /^objects\/sha256\/[0-9a-f]{2}\/[0-9a-f]{64}\.json$/, 'the target is the path not tracked')
  t.equal((await tracked(0)).length, 1, 'no room at all: the refusal alone')
})

t.test('a folder of more entries than a check lists is refused at the folder; key statements beyond the bytes it reads are a level-2 failure', async (t) => {
  const listed = async (dir: string, cap: number) => check(dir, 2, { caps: { listed: cap } })
  let enough = 0
  while ((await listed(clean.dir, enough)).some((i) => i.code === CHECK_CODES.checkTooLarge)) enough++
  t.ok(enough >= 1 && enough < 10, `the clean store's largest folder holds ${enough} entries`)
  exactly(t, await listed(clean.dir, enough), [], 'listing them all')
  const short = await listed(clean.dir, enough - 1)
  exactly(t, short, [`0 ${CHECK_CODES.checkTooLarge}`], 'one entry short')
  t.match(short.at(-1), { code: CHECK_CODES.checkTooLarge, detail: new RegExp(`^the folder holds more than the ${enough - 1} entries a check lists`) }, 'the last issue: nothing is checked after it')

  // Every entry counts, those the check would ignore too: a keys/ of other files is refused without reading them.
  const crowded = await damaged(async (s) => {
    for (let n = 0; n < 12; n++) await writeFile(join(s.dir, 'keys', `note-${n}.txt`), 'not a key statement')
  }, clean)
  const refused = await listed(crowded.dir, 12)
  exactly(t, refused, [`0 ${CHECK_CODES.checkTooLarge}`])
  t.equal(refused.at(-1)!.target, 'keys', 'on keys/')
  exactly(t, await check(crowded.dir, 2), [], 'and with the default cap the other files are ignored')

  const keyFiles = (await readdir(join(clean.dir, 'keys'))).sort()
  const keyBytes = (await Promise.all(keyFiles.map(async (f) => (await readFile(join(clean.dir, 'keys', f))).length))).reduce((a, b) => a + b, 0)
  const keys = async (cap: number) => check(clean.dir, 2, { caps: { keyStatementBytes: cap } })
  exactly(t, await keys(keyBytes), [], `room for the ${keyFiles.length} statements' ${keyBytes} bytes`)
  const over = await keys(keyBytes - 1)
  const firstFailure = over.find((i) => !i.note)!
  t.match(firstFailure, { level: 2, code: CHECK_CODES.keysTooLarge, target: `keys/${keyFiles.at(-1)}`, detail: new RegExp(`than the ${formatBytes(keyBytes - 1).replace('.', '\\.')} a check reads: this one and those after it are not read`) }, 'one byte short: the last statement is not read, and the check says so first')
  t.equal(over.filter((i) => i.code === CHECK_CODES.keysTooLarge).length, 1, 'once')
})

t.test('tilings and rules beyond what a check keeps leave what needs them unchecked, with notes, not failures', async (t) => {
  const notes = (issues: CheckIssue[], code: string) => issues.filter((i) => i.note && i.code === code)
  const notReplayed = (issues: CheckIssue[], why: RegExp) => issues.filter((i) => i.code === 'pack.replay-not-replayable' && why.test(i.detail)).map((i) => `${i.level} ${i.target}`).sort()
  const full = await check(clean.dir, 3)
  exactly(t, full, [], 'with room for every fact')
  t.same(notes(full, CHECK_CODES.factsUnkept), [], 'and no note of facts not kept')
  const onSquare = penroseRows.patterns!.filter((p) => p.pin_key === 'square').map((p) => `3 pattern:${String(p.id)}`).sort()
  t.equal(onSquare.length, 4, 'four patterns on the square tiling')
  t.same(notReplayed(full, /./), [`3 pattern:${String(penroseRows.patterns!.find((p) => p.pin_key !== 'square')!.id)}`], 'the Penrose one alone is not replayed')

  // One key a map: the first tiling by pin_key (penrose-kd), and the first rule, are kept; the parts on threads too.
  for (const threads of [1, 2]) {
    const one = await check(clean.dir, 3, { caps: { factKeys: 1 }, threads, threadPartBytes: 0 })
    exactly(t, one, [], `${threads} thread(s): the records on the square tiling, not kept, are no pack.tiling-missing`)
    t.same(notes(one, CHECK_CODES.factsUnkept).map((i) => `${i.level} ${i.target} ${i.detail.replace(/ than .*: /, ': ')}`), [
      '1 tiling:square more tilings and rules keys: the rows of the other keys are not held to being the same wherever they appear',
      '1 tiling:square more tilings: the records on the others are not checked against their tiling, nor replayed',
      `1 ${partOf(clean, 'rules')} row 1 more rule notations: the ranges of verifications in the other notations are not checked against their family`,
    ], 'a note for each map, once, on the first row it does not keep')
    t.same(notReplayed(one, /^tiling "square" is not among the 1 tilings this check keeps/), onSquare, 'the patterns on the square tiling are noted as not replayed')
  }

  const flat = await check(clean.dir, 3, { caps: { geometryBytes: 0 } })
  exactly(t, flat, [], 'no bytes of geometry: no failure')
  t.same(notReplayed(flat, /^tiling "square"'s neighbour lists are beyond the 0 bytes of geometry this check keeps/), onSquare, 'each pattern on the lattice is noted as not replayed')
  t.same(notes(flat, CHECK_CODES.factsUnkept), [], 'the tiling itself is kept')

  const none = await check(clean.dir, 3, { caps: { keptText: 0 } })
  exactly(t, none, [], 'no characters kept: no failure')
  t.equal(notes(none, CHECK_CODES.factsUnkept).length, 3, 'a note for each map')
  t.equal(notReplayed(none, /tilings this check keeps/).length, 5, 'and no pattern, the Penrose one too, has its tiling')

  // The least text that keeps both tilings: the rules and the main verifications' notations, kept after them, are not.
  let [low, high] = [0, 1 << 16]
  while (low < high) {
    const mid = (low + high) >> 1
    if (notes(await check(clean.dir, 3, { caps: { keptText: mid } }), CHECK_CODES.factsUnkept).some((i) => i.target.startsWith('tiling:'))) low = mid + 1
    else high = mid
  }
  const tight = await check(clean.dir, 3, { caps: { keptText: low } })
  exactly(t, tight, [], `${low} characters: no failure`)
  t.same(notes(tight, CHECK_CODES.replayRuleUnkept).filter((i) => /^its rule column is null, and its main verifications may be among the \d+ main rules beyond/.test(i.detail)).map((i) => `${i.level} ${i.target}`).sort(), onSquare, 'the patterns whose main rules\' notations are not kept are noted, not refused')

  // The plain store has one tiling and two rules: with one key a map, the masks of Life (after B2/S345/4) are not kept.
  const plainRules = await check(plain.dir, 3, { caps: { factKeys: 1 } })
  exactly(t, plainRules, [], 'one rule kept: no failure')
  const inLife = cleanRows().patterns!.filter((p) => p.model === 'bs').map((p) => `3 pattern:${String(p.id)}`).sort()
  t.equal(inLife.length, 3, 'three patterns in Life')
  const ruleNotes = notes(plainRules, CHECK_CODES.replayRuleUnkept)
  t.same(ruleNotes.map((i) => `${i.level} ${i.target}`).sort(), inLife, 'each is noted as not replayed')
  t.ok(ruleNotes.every((i) => i.detail === 'rule "B3/S23" with neighbourhood touch and steps_per_gen 1 is not among the 1 rules this check keeps (memory stays bounded): not replayed in it'), shown(ruleNotes))
  t.notOk(plainRules.some((i) => i.code === CHECK_CODES.replayRuleUnknown), 'and none is called unknown')
})

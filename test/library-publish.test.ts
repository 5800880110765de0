/**
 * Publishing from the library (src/library/library-publish.ts): records published, imported into a library,
 * published again from it under another feed; the new version passes pack-check at level 3, and importing it
 * changes nothing in the library it came from, its records keeping their ids. A selection (--id, --query)
 * carries its records with what belongs to them; retracted records stay out; ratings go only as their
 * raters' recorded consent allows. And the command line: --from-library, --views, pipe pack rater.
 */
import { spawnSync } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DuckDBInstance } from '@duckdb/node-api'
import Database from 'better-sqlite3'
import t from 'tap'
import { checkPack, type CheckIssue } from '../src/formats/pack/check/check.js'
import { parseManifest } from '../src/formats/pack/documents/doc-manifest.js'
import { walkTableIndex } from '../src/formats/pack/documents/index-walk.js'
import { objectPath, storeFile, storeIndexLoader } from '../src/formats/pack/documents/store.js'
import { firstKeyStatement, keyStatementBytes } from '../src/formats/pack/keys/key-statements.js'
import { generateKey } from '../src/formats/pack/keys/ssh-key.js'
import { publishPack, type PublishOptions } from '../src/formats/pack/publish/publish.js'
import { readPartRows } from '../src/formats/pack/tables/parquet-read.js'
import { PACK_TABLES, type PackTableName } from '../src/formats/pack/tables/table-schemas.js'
import { sortKey, EVENT_TABLES, FACT_TABLES, Library } from '../src/library/library.js'
import { publishFromLibrary, type LibrarySelection } from '../src/library/library-publish.js'
import { importPack } from '../src/library/pack-import.js'
import { LIFE, patternRecord, ruleRecord, verificationRecord, writeJsonl } from '../src/sim/pack-records.js'
import { childEnv, collect } from './helpers/io.js'

const base = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'library-publish-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
let n = 0
const dir = () => join(base, `d${n++}`)
const libraryPath = () => join(base, `l${n++}.db`)
const T0 = '2026-11-11T00:00:00Z'
const T1 = '2026-11-12T00:00:00Z'
const T2 = '2026-11-13T00:00:00Z'
const NOW = () => '2026-12-07T00:00:00Z'

const key = generateKey({ seed: Buffer.alloc(32, 5), comment: 'lab' })
const statement = keyStatementBytes(firstKeyStatement(key, { name: 'Lab', created: T0 }))
const version = (store: string, feed: string, created: string): Omit<PublishOptions, 'records'> => ({ feed, store, key, statements: [statement], created, engineVersion: 'test' })
const importIt = (from: string, library: string, manifest?: string) =>
  importPack({ from, library, verify: 'none', allowUnsigned: false, strict: false, now: NOW, ...(manifest ? { manifest } : {}) })
const fromLibrary = (library: string, store: string, feed: string, selection: Partial<LibrarySelection> = {}, created = T1) =>
  publishFromLibrary({ ...version(store, feed, created), library, selection: { ids: [], searches: true, ...selection } })

const BLOCK = patternRecord('square', LIFE, [[0, 0], [1, 0], [0, 1], [1, 1]])
const BLINKER = patternRecord('square', LIFE, [[0, 1], [1, 1], [2, 1]])
const GLIDER = patternRecord('square', LIFE, [[1, 0], [2, 1], [0, 2], [1, 2], [2, 2]], { speed: 'c/4 diagonal' })
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from('a poster of the glider')])
const SEARCH_RUN = 'search_run:0f8fad5b-d9cb-469f-a165-70867728950e:17'
const [ANN, BEN] = ['rater-00000000000000a1', 'rater-00000000000000b2']
const raterRow = (rater: string, o: { notes?: boolean; name?: string; members?: string[]; date?: string } = {}) =>
  ({ rater, consent_date: o.date ?? T0, consent_scope: 'public-permanent', display_name: o.name ?? null, orcid: null, members: o.members ?? null, notes: o.notes ?? false })
const rating = (rater: string, target: string, note: string | null = null) => ({ rater, target, scale: 'stars-1-5 1', verdict: '4', note, round: null, date: T0 })

/** A records folder of three Life patterns with a row of every table about them. */
async function labRecords(extra: { ratings?: object[]; raters?: object[] } = {}): Promise<string> {
  const folder = dir()
  await mkdir(folder, { recursive: true })
  const patterns = [BLOCK, BLINKER, GLIDER]
  await writeJsonl(join(folder, 'tilings.jsonl'), [{ family: 'square' }])
  await writeJsonl(join(folder, 'rules.jsonl'), [ruleRecord(LIFE)])
  await writeJsonl(join(folder, 'patterns.jsonl'), patterns)
  await writeJsonl(join(folder, 'verifications.jsonl'), patterns.map((p, i) => verificationRecord(i + 1, LIFE, p, T0)))
  await writeJsonl(join(folder, 'sightings.jsonl'), [{ pattern_id: '@patterns:3', rule: 'B3/S23', source: 'unattributed', count: 4, soups: 2, first_seen: T0, last_seen: T0 }])
  await writeJsonl(join(folder, 'provenance.jsonl'), [{ target: '@patterns:3', seq: 0, kind: 'found', finder: null, orcid: null, search_kind: 'hunt', search: null, machine: 'linux-x86_64', date: T0, source: 'soup-17.rle', pack: null, run: null }])
  await writeJsonl(join(folder, 'annotations.jsonl'), [{ target: '@patterns:1', field: 'name', value: '"Block"', score_model: null, date: T0 }])
  await writeFile(join(folder, 'glider.png'), PNG)
  await writeJsonl(join(folder, 'media.jsonl'), [{ target: '@patterns:3', kind: 'poster', from_seed: false, file: 'glider.png', media_type: 'image/png', width: 2, height: 2, frames: 1, render_key: 'r1', render: '{}' }])
  await writeJsonl(join(folder, 'aliases.jsonl'), [{ old_id: 'f'.repeat(32), target: '@patterns:2', reason: 'scheme-change', date: T0 }])
  await writeJsonl(join(folder, 'score_models.jsonl'), [{ model: 'taste', version: '1', kind: 'logistic 1', features: ['cells'], weights: [0.5], intercept: 0.125, fitted_on: 'version 1', rater: null, metrics: '{"auc":0.81}' }])
  await writeJsonl(join(folder, 'ratings.jsonl'), extra.ratings ?? [rating(ANN, '@patterns:3', 'Lovely.'), rating(BEN, '@patterns:1'), rating(ANN, SEARCH_RUN)])
  await writeJsonl(join(folder, 'raters.jsonl'), extra.raters ?? [raterRow(ANN, { notes: true, name: 'Ann' }), raterRow(BEN)])
  return folder
}

/** Every row of every table of the library but its import log, as it reads them. */
async function contents(path: string): Promise<Record<string, unknown>> {
  const lib = Library.open(path)
  try {
    const { imports: _imports, ...stats } = lib.stats()
    const tables = [...FACT_TABLES, ...EVENT_TABLES, 'objects', 'pack_retractions', 'pack_revoked', 'pack_follows', 'pack_reverify', 'library_raters', 'library_rater_consents']
    const rows: Record<string, unknown> = {}
    for (const table of tables) rows[table] = await collect(lib.query(table))
    return { stats, ...rows }
  } finally {
    lib.close()
  }
}

/** Each fact table's rows by id, leaving out retracted records and the aliases of them. */
async function facts(path: string): Promise<Record<string, Record<string, unknown>>> {
  const lib = Library.open(path)
  try {
    const retracted = new Set((await collect(lib.query('pack_retractions'))).map((r) => r.target))
    const kept = (table: string, r: Record<string, unknown>) => r.retracted !== true && !(table === 'aliases' && retracted.has((r.row as { target: string }).target))
    const byTable: Record<string, Record<string, unknown>> = {}
    for (const table of FACT_TABLES) byTable[table] = Object.fromEntries((await collect(lib.query(table))).filter((r) => kept(table, r)).map((r) => [r.id, r.row]))
    return byTable
  } finally {
    lib.close()
  }
}

async function newestManifest(store: string, feed: string): Promise<{ hash: string; tables: Record<string, string> }> {
  const ref = JSON.parse(await readFile(join(store, 'refs', `${feed}.json`), 'utf8')) as { manifest: string }
  const m = parseManifest(await readFile(storeFile(store, objectPath(ref.manifest, 'json'))))
  if (!m.ok) throw new Error(m.detail)
  return { hash: ref.manifest, tables: m.value.manifest.tables }
}

/** A table's rows in a version (the newest of `feed` unless `tables` is given). */
async function tableRows(store: string, feed: string, table: PackTableName, tables?: Record<string, string>): Promise<Record<string, unknown>[]> {
  const root = (tables ?? (await newestManifest(store, feed)).tables)[table]
  const rows: Record<string, unknown>[] = []
  if (root === undefined) return rows
  for await (const e of walkTableIndex(root, storeIndexLoader(store), { table })) {
    if (e.kind !== 'part') continue
    const r = await readPartRows(storeFile(store, objectPath(e.part.object, 'parquet')), PACK_TABLES[table])
    if (!r.ok) throw new Error(r.findings[0]!.detail)
    rows.push(...r.rows)
  }
  return rows
}

async function failures(store: string): Promise<string[]> {
  const issues: CheckIssue[] = []
  for await (const i of checkPack(store, { level: 3 })) if (!i.note) issues.push(i)
  return issues.map((i) => `${i.target}: ${i.code}: ${i.detail}`)
}

/** L1: the lab's feed imported, version 1 then version 2, which retracts the blinker. */
async function labLibrary(): Promise<{ library: string; store: string; blinker: string }> {
  const store = dir()
  const v1 = await publishPack({ ...version(store, 'lab', T0), records: await labRecords() })
  const blinker = (await tableRows(store, 'lab', 'patterns')).find((p) => p.class === 'oscillator')!.id as string
  const empty = dir()
  await mkdir(empty)
  await publishPack({ ...version(store, 'lab', T1), records: empty, retract: [{ target: `pattern:${blinker}`, reason: 'not ours' }] })
  const library = libraryPath()
  await importIt(store, library, v1.manifest)
  await importIt(store, library)
  return { library, store, blinker }
}

t.test('round trip: publish, import, publish from the library under another feed, check, import again: nothing changes', async (t) => {
  const { library: l1, blinker } = await labLibrary()
  const store = dir()
  const published = await fromLibrary(l1, store, 'lab-library')
  t.same(published.library, { records: 2, retracted: 1, ratingsWithheld: { withdrawn: 0, 'no-consent': 0, 'member-without-consent': 0 }, scoreModelsWithheld: 0, notesStripped: 0, searchRunRatings: 0 })
  t.same(await failures(store), [], 'pack-check level 3 passes')

  const patterns = await tableRows(store, 'lab-library', 'patterns')
  t.same(patterns.map((p) => p.id).sort(), Object.keys((await facts(l1)).patterns!).sort(), 'the records keep their ids')
  t.notOk(patterns.some((p) => p.id === blinker), 'the retracted blinker is not published')
  t.notOk((await tableRows(store, 'lab-library', 'verifications')).some((v) => v.pattern_id === blinker), 'nor its verification')
  t.same(await tableRows(store, 'lab-library', 'aliases'), [], 'nor its alias')
  t.equal((await tableRows(store, 'lab-library', 'annotations'))[0]!.rev, 1n, 'an annotation carries this version\'s seq')
  t.equal((await tableRows(store, 'lab-library', 'media')).length, 1, 'the glider\'s poster, from the library\'s objects')
  t.same((await tableRows(store, 'lab-library', 'ratings')).map((r) => [r.rater, r.target, r.note]).sort(), [[ANN, SEARCH_RUN, null], [ANN, `pattern:${String(patterns.find((p) => p.class === 'spaceship')!.id)}`, 'Lovely.'], [BEN, `pattern:${String(patterns.find((p) => p.class === 'still_life')!.id)}`, null]].sort())
  t.same((await tableRows(store, 'lab-library', 'raters')).map((r) => [r.rater, r.display_name, r.notes]), [[ANN, 'Ann', true], [BEN, null, false]], 'the raters rows as imported')

  const before = (await contents(l1))
  const again = await importIt(store, l1)
  t.match(again, { already: false, factsAdded: 0, eventsAdded: 0, objectsAdded: 0, retractionsAdded: 0, factsDiffering: 0, rowsSkipped: 0 })
  t.same((await contents(l1)), before, 'L1 unchanged: every table\'s rows, and the stats but the import log')

  const l2 = libraryPath()
  await importIt(store, l2)
  t.same((await facts(l2)), (await facts(l1)), 'a fresh library holds the same facts as L1 (its records not retracted)')
})

t.test('a selection carries its records with what belongs to them', async (t) => {
  const { library, blinker } = await labLibrary()
  const all = (await facts(library)).patterns!
  const block = Object.entries(all).find(([, p]) => (p as { class: string }).class === 'still_life')![0]

  const byId = dir()
  const r = await fromLibrary(library, byId, 'one', { ids: [block] })
  t.equal(r.library.records, 1)
  t.equal(r.library.searchRunRatings, 1, 'a rating of a search run is of no record chosen')
  t.same((await tableRows(byId, 'one', 'patterns')).map((p) => p.id), [block])
  t.same((await tableRows(byId, 'one', 'verifications')).map((v) => v.pattern_id), [block], 'its verification')
  t.same((await tableRows(byId, 'one', 'annotations')).map((a) => a.target), [`pattern:${block}`], 'its annotation')
  t.same((await tableRows(byId, 'one', 'ratings')).map((x) => x.rater), [BEN], 'its rating')
  t.same((await tableRows(byId, 'one', 'raters')).map((x) => x.rater), [BEN], 'and its rater, only')
  t.same((await tableRows(byId, 'one', 'tilings')).map((x) => x.family), ['square'])
  t.same((await tableRows(byId, 'one', 'rules')).map((x) => x.notation), ['B3/S23'])
  for (const table of ['media', 'sightings', 'provenance', 'score_models'] as const) t.same(await tableRows(byId, 'one', table), [], `no ${table}: none is of the block`)
  t.same(await failures(byId), [])

  const byQuery = dir()
  await fromLibrary(library, byQuery, 'ships', { query: { table: 'patterns', where: { class: ['spaceship', 'oscillator'] } } })
  t.same((await tableRows(byQuery, 'ships', 'patterns')).map((p) => p.class), ['spaceship'], 'the query matches the blinker too, but it is retracted')
  t.same((await tableRows(byQuery, 'ships', 'media')).length, 1, 'the glider\'s poster')
  t.same(await failures(byQuery), [])

  const retracted = await fromLibrary(library, dir(), 'none', { ids: [`pattern:${blinker}`] })
  t.match(retracted.library, { records: 0, retracted: 1 })
  await t.rejects(fromLibrary(library, dir(), 'x', { ids: ['0'.repeat(32)] }), { code: 'library.no-such-record' })
  await t.rejects(fromLibrary(library, dir(), 'x', { ids: ['not-an-id'] }), { code: 'library.no-such-record' })

  const noSearches = await fromLibrary(library, dir(), 'no-searches', { searches: false })
  t.equal(noSearches.library.searchRunRatings, 1, '--no-searches leaves the search run\'s rating out')
})

t.test('ratings go only as their raters\' recorded consent allows', async (t) => {
  const library = libraryPath()
  let lib = Library.open(library, { create: true })
  const cy = lib.recordConsent('Cy', { showName: false, notes: true, withdrawn: false }, T0)
  const dee = lib.recordConsent('Dee', { showName: false, notes: false, withdrawn: false }, T0)
  lib.close()
  const [GROUP_OK, GROUP_WITHDRAWN, NOBODY] = ['rater-0000000000000c01', 'rater-0000000000000c02', 'rater-0000000000000c03']
  const store = dir()
  await publishPack({
    ...version(store, 'lab', T0),
    records: await labRecords({
      ratings: [rating(ANN, '@patterns:1', 'Neat.'), rating(cy.rater, '@patterns:1', 'Mine.'), rating(dee.rater, '@patterns:2'), rating(GROUP_OK, '@patterns:3'), rating(GROUP_WITHDRAWN, '@patterns:3')],
      raters: [raterRow(ANN, { notes: true, name: 'Ann' }), raterRow(cy.rater, { notes: true }), raterRow(dee.rater), raterRow(GROUP_OK, { members: [ANN, cy.rater] }), raterRow(GROUP_WITHDRAWN, { members: [ANN, dee.rater] })],
    }),
  })
  await importIt(store, library)
  lib = Library.open(library)
  // Cy now chooses to be named, but not to share notes; Dee withdraws.
  lib.recordConsent('Cy', { showName: true, notes: false, withdrawn: false }, T1)
  lib.recordConsent('Dee', { showName: false, notes: false, withdrawn: true }, T1)
  // A rating the library holds with no consent recorded anywhere (no pack row names its rater).
  await lib.change({ manifest: 'sha256:' + 'a'.repeat(64), publisher: 'SHA256:other', feed: 'other', source: 'test', started: T1, finished: T1 }, async (c) => {
    const row = rating(NOBODY, `pattern:${String(Object.keys((await facts(library)).patterns!)[0])}`)
    c.event('ratings', 'SHA256:other', sortKey([row.rater, row.target, row.date]), JSON.stringify(row))
  })
  lib.close()

  const out = dir()
  const r = await fromLibrary(library, out, 'consented')
  t.same(r.library.ratingsWithheld, { withdrawn: 1, 'no-consent': 1, 'member-without-consent': 1 })
  t.equal(r.library.notesStripped, 1, 'Cy\'s note')
  t.same(await failures(out), [])
  const ratings = await tableRows(out, 'consented', 'ratings')
  t.same(ratings.map((x) => [x.rater, x.note]).sort(), [[ANN, 'Neat.'], [cy.rater, null], [GROUP_OK, null]].sort(), 'Ann\'s with her note, Cy\'s without, the group whose members consented')
  const raters = await tableRows(out, 'consented', 'raters')
  t.same(raters.map((x) => [x.rater, x.display_name, x.notes, x.consent_date]).sort(), [
    [ANN, 'Ann', true, T0], [cy.rater, 'Cy', false, T1], [GROUP_OK, null, false, T0],
  ].sort(), 'Cy\'s row from the library\'s own consent: named now, notes not shared; no row of Dee, nor of a group with Dee')

  // Dee consented when a first version went out, then withdrew: the next version adds no row of hers.
  lib = Library.open(library)
  lib.recordConsent('Dee', { showName: false, notes: false, withdrawn: false }, T1)
  lib.close()
  const feed = dir()
  const first = await fromLibrary(library, feed, 'lab-library', {}, T1)
  t.ok((await tableRows(feed, 'lab-library', 'ratings')).some((x) => x.rater === dee.rater), 'with consent, Dee\'s rating goes out')
  lib = Library.open(library)
  lib.recordConsent('Dee', { showName: false, notes: false, withdrawn: true }, T2)
  lib.close()
  const second = await fromLibrary(library, feed, 'lab-library', {}, T2)
  t.equal(second.seq, 2)
  t.equal(second.newParts.ratings, 0, 'no new ratings')
  t.equal(second.newParts.raters, 0, 'no new raters rows')
  t.ok(first.manifest !== second.manifest)
  t.same(await failures(feed), [])
})

t.test('a row the publisher refuses is named by the library and its table; nothing is published', async (t) => {
  const { library } = await labLibrary()
  // A row no pack could have given, kept as text as a library before schema 5 kept facts: a neighbourhood the spec does not name.
  const db = new Database(library)
  db.prepare('INSERT INTO facts (table_name, id, row, import_id) VALUES (?, ?, ?, (SELECT max(id) FROM pack_imports))')
    .run('rules', sortKey(['B3/S23', 'diagonal', 1]), JSON.stringify({ ...ruleRecord(LIFE), neighbourhood: 'diagonal' }))
  db.close()
  const store = dir()
  await t.rejects(fromLibrary(library, store, 'refused'), { code: 'pack.column-value-invalid', location: { file: library }, message: /\(the library's rules rows as written for this publish, row 1\)$/ })
  t.notOk(existsSync(join(store, 'refs', 'refused.json')), 'no ref written')
})

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const home = join(base, 'home')
const pipe = (args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 120_000, env: { ...childEnv(), PIPE_HOME: home } })

t.test('pipe run pack-publish --from-library, with --views; --records and --from-library are alternatives', async (t) => {
  const made = pipe(['pack', 'key', '--name', 'Lab', '--seed', '05'.repeat(32), '--created', T0])
  t.equal(made.status, 0, made.stderr)
  const { library } = await labLibrary()
  const store = dir()
  const r = pipe(['run', 'pack-publish', '--from-library', library, '--feed', 'lab-library', '--to', store, '--created', T1, '--views', '--no-searches', '--json'])
  t.equal(r.status, 0, r.stderr)
  const summary = JSON.parse(r.stdout) as Record<string, unknown>
  t.match(summary, { seq: 1, from_library: { records: 2, retracted: 1, search_run_ratings: 1 }, views: join(store, 'views.sql') })

  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  t.teardown(() => conn.closeSync())
  await conn.run(`SET file_search_path = '${store}'`)
  for (const statement of (await readFile(join(store, 'views.sql'), 'utf8')).split('\n').filter((l) => l.startsWith('CREATE'))) await conn.run(statement)
  t.same((await conn.runAndReadAll('SELECT class FROM patterns ORDER BY class')).getRowObjectsJson(), [{ class: 'spaceship' }, { class: 'still_life' }], 'views.sql reads the version\'s parts')

  for (const [why, args, message] of [
    ['neither', [], /give --records DIR .* or --from-library DB/],
    ['both', ['--records', dir(), '--from-library', library], /one of them/],
    ['--id without a library', ['--records', dir(), '--id', 'f'.repeat(32)], /--id: selects from a library/],
    ['a query of no table of records', ['--from-library', library, '--query', '{"table":"rules","where":{}}'], /--query: table "rules" is no table of records.*library\.bad-query/],
    ['a query of no column', ['--from-library', library, '--query', '{"table":"patterns","where":{"colour":"red"}}'], /patterns has no column colour/],
  ] as const) {
    const bad = pipe(['run', 'pack-publish', '--feed', 'x', '--to', dir(), ...args])
    t.equal(bad.status, 2, why)
    t.match(bad.stderr, message, why)
  }
})

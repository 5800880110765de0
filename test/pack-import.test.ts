import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import t from 'tap'
import { PackChecker } from '../src/formats/pack/check/check.js'
import { FACT_TABLES, Library, LIBRARY_SCHEMA_VERSION } from '../src/library/library.js'
import { importPack, type PackImportOptions } from '../src/library/pack-import.js'
import { childEnv, collect } from './helpers/io.js'
import { fingerprint } from '../src/formats/pack/keys/ssh-key.js'
import { firstKeyStatement, revocationStatement } from '../src/formats/pack/keys/key-statements.js'
import { buildStore, PUBLISHER, smallRows, T0 } from './pack-check-fixtures.js'

const golden = (name: string) => fileURLToPath(new URL(`./golden/${name}/store`, import.meta.url))
const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const base = await mkdtemp(join(tmpdir(), 'pack-import-'))
let made = 0
const fresh = () => join(base, `l${made++}.db`)
const NOW = () => '2026-12-07T00:00:00Z'
const PUBLISHER_FINGERPRINT = fingerprint(PUBLISHER.publicKey)
const importIt = (from: string, library: string, extra: Partial<PackImportOptions> = {}) => importPack({ from, library, verify: 'none', allowUnsigned: false, strict: false, now: NOW, ...extra })
const stats = (path: string) => {
  const lib = Library.open(path)
  try { return lib.stats() } finally { lib.close() }
}
/** The files under a library's objects folder, by their path in it. */
const objectFiles = async (library: string) => (await readdir(`${library}.objects`, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name)).sort()
const rowsOf = async (store: string) => {
  const checker = new PackChecker(store, { level: 1 })
  for await (const _ of checker.run()) void _
  return checker.stats!.rows
}
const manifestOf = async (store: string, hash: string) => {
  const hex = hash.slice(7)
  return JSON.parse(await readFile(join(store, 'objects', 'sha256', hex.slice(0, 2), `${hex}.json`), 'utf8')) as { parents: string[]; retracts: { target: string }[] }
}

t.test('golden stores: every row kept once, by content id or under its publisher; objects by hash; a second import changes nothing', async (t) => {
  for (const name of ['minimal', 'media', 'ants']) {
    const library = fresh()
    const r = await importIt(golden(name), library)
    t.equal(r.already, false)
    t.equal(r.factsAdded + r.eventsAdded, await rowsOf(golden(name)), `${name}: the rows pack-check reads, each added once`)
    const before = stats(library)
    const again = await importIt(golden(name), library)
    t.same({ already: again.already, facts: again.factsAdded, events: again.eventsAdded }, { already: true, facts: 0, events: 0 }, `${name}: the same version again`)
    t.same(stats(library), before, `${name}: the library unchanged`)
  }
  const library = fresh()
  const r = await importIt(golden('media'), library)
  const lib = Library.open(library)
  t.teardown(() => lib.close())
  const objects = await collect(lib.query('objects'))
  t.equal(objects.filter((o) => o.ext !== 'parquet').length, 2, 'the media files')
  t.equal(r.objectsAdded, objects.length, 'and the parts of its fact tables, each once')
  for await (const o of lib.query('objects')) {
    const hex = String(o.hash).slice(7)
    const bytes = await readFile(join(lib.objectsDir, 'sha256', hex.slice(0, 2), `${hex}.${String(o.ext)}`))
    t.equal(`sha256:${createHash('sha256').update(bytes).digest('hex')}`, o.hash, 'each stored under its hash')
  }
  const patterns = (await collect(lib.query('patterns')))
  t.ok(patterns.length > 0 && patterns.every((p) => (p.row as { id: string }).id === p.id), 'a pattern under its id, its row as the pack has it')
  const ids = patterns.map((p) => String(p.id))
  t.same(ids, [...ids].sort(), 'in id order, though read part by part')
  t.equal(ids.length, lib.stats().facts.patterns, 'each once')
  const parts = new Set((await collect(lib.query('objects'))).filter((o) => o.ext === 'parquet').map((o) => o.hash))
  t.ok(parts.size > 1, `the library keeps the parts its facts are read from (${parts.size})`)
})

t.test('a retraction is recorded and flags the record the library holds; one it lacks adds nothing of it', async (t) => {
  const store = golden('retraction')
  const newest = JSON.parse(await readFile(join(store, 'refs', 'golden-a.json'), 'utf8')) as { manifest: string }
  const m = await manifestOf(store, newest.manifest)
  const target = m.retracts[0]!.target
  const id = target.slice('pattern:'.length)

  const held = fresh()
  await importIt(store, held, { manifest: m.parents[0]! })
  let lib = Library.open(held)
  t.match((await collect(lib.query('patterns', id))), [{ id, retracted: false }], 'the parent version brings the record')
  lib.close()
  const r = await importIt(store, held)
  t.equal(r.retractionsAdded, 1)
  lib = Library.open(held)
  t.match((await collect(lib.query('patterns', id))), [{ id, retracted: true }], 'flagged, and kept')
  lib.close()

  const lacking = fresh()
  const r2 = await importIt(store, lacking)
  t.equal(r2.retractionsAdded, 1, 'only the retraction is recorded')
  lib = Library.open(lacking)
  t.same((await collect(lib.query('patterns', id))), [], 'not the record')
  t.same((await collect(lib.query('verifications', id))), [], 'nor its events')
  t.ok(r2.rowsSkipped > 0, `${r2.rowsSkipped} rows of it skipped`)
  lib.close()
})

t.test('a pack that fails a check is refused before the library is touched', async (t) => {
  const library = fresh()
  await importIt(golden('minimal'), library)
  const before = stats(library)
  const damaged = join(base, 'damaged')
  await cp(golden('merge'), damaged, { recursive: true })
  const { readdir } = await import('node:fs/promises')
  const prefix = (await readdir(join(damaged, 'objects', 'sha256')))[0]!
  const file = join(damaged, 'objects', 'sha256', prefix, (await readdir(join(damaged, 'objects', 'sha256', prefix)))[0]!)
  const bytes = await readFile(file)
  bytes[bytes.length >> 1]! ^= 1
  await writeFile(file, bytes)
  await t.rejects(importIt(damaged, library), { code: 'import.refused', message: /refused, the library unchanged: objects\/sha256\/.*: pack\.object-hash-mismatch \[level 1\]/ })
  t.same(stats(library), before)
  const none = fresh()
  await t.rejects(importIt(damaged, none), { code: 'import.refused' })
  await t.rejects(readFile(none), { code: 'ENOENT' }, 'no library is made for a refused pack')

  const unsigned = join(base, 'unsigned')
  await cp(golden('minimal'), unsigned, { recursive: true })
  await rm(join(unsigned, 'sigs'), { recursive: true })
  await t.rejects(importIt(unsigned, fresh()), { code: 'import.refused', message: /pack\.manifest-unsigned/ })
  t.equal((await importIt(unsigned, fresh(), { allowUnsigned: true })).already, false, '--allow-unsigned takes it')
})

t.test('an older library stays at its schema when a pack is refused, and is taken up with the first import that commits', async (t) => {
  const library = fresh()
  await importIt(golden('minimal'), library)
  // The library as the schema before this one keeps it: each fact as its row's text (schema 5 keeps references to part rows).
  const before = stats(library)
  const older = String(LIBRARY_SCHEMA_VERSION - 1)
  await asTextFacts(library, older)
  const version = () => { const db = new Database(library, { readonly: true }); const v = db.prepare("SELECT value FROM library_meta WHERE key = 'schema_version'").pluck().get(); db.close(); return v }
  const unsigned = join(base, 'unsigned-older')
  await cp(golden('retraction'), unsigned, { recursive: true })
  await rm(join(unsigned, 'sigs'), { recursive: true })
  await t.rejects(importIt(unsigned, library), { code: 'import.refused', message: /pack\.manifest-unsigned/ })
  t.equal(version(), older, 'a refused pack leaves the schema as it was')
  const db = new Database(library)
  const tampered = db.prepare("SELECT id FROM facts WHERE table_name = 'patterns' ORDER BY id LIMIT 1").pluck().get() as string
  db.prepare("UPDATE facts SET row = '{\"changed\":true}' WHERE table_name = 'patterns' AND id = ?").run(tampered)
  db.close()
  await t.rejects(importIt(golden('retraction'), library, { strict: true }), { code: 'import.fact-differs' })
  t.equal(version(), older, 'so does one refused inside its change: the migration rolls back with it')
  const r = await importIt(golden('retraction'), library)
  t.equal(r.already, false)
  t.equal(r.factsDiffering, 1, 'the text row held, against the pack\'s row read from its part')
  t.equal(version(), String(LIBRARY_SCHEMA_VERSION), 'the first import that commits takes the library up')
  const after = stats(library) as { facts: Record<string, number> }
  t.ok(after.facts.patterns! >= (before as { facts: Record<string, number> }).facts.patterns!, 'nothing it held is lost')
  const lib = Library.open(library)
  t.teardown(() => lib.close())
  t.match(await collect(lib.query('patterns', tampered)), [{ id: tampered, row: { changed: true } }], 'the text row stands, and reads back')
  t.ok((await collect(lib.query('patterns'))).some((f) => f.id === tampered && (f.row as { changed?: boolean }).changed === true), 'in the whole table too')
})

/**
 * Makes `library` what a library of schema `version` (before 5) holds: each fact as the RFC 8785 text of its
 * row in `facts`, no reference tables.
 */
async function asTextFacts(library: string, version: string): Promise<void> {
  const lib = Library.open(library)
  const texts: [string, string, string, number, number][] = []
  for (const table of FACT_TABLES) {
    for await (const f of lib.query(table)) texts.push([table, String(f.id), (await lib.factText(table, String(f.id)))!, Number(f.import_id), f.needs_reverify ? 1 : 0])
  }
  lib.close()
  const db = new Database(library)
  const put = db.prepare('INSERT INTO facts (table_name, id, row, import_id, needs_reverify) VALUES (?, ?, ?, ?, ?)')
  db.transaction(() => {
    for (const row of texts) put.run(...row)
    db.exec('DROP TABLE fact_refs; DROP TABLE fact_parts')
    db.prepare("UPDATE library_meta SET value = ? WHERE key = 'schema_version'").run(version)
  })()
  db.close()
}

t.test('--strict: a record the library holds must come again identical', async (t) => {
  const library = fresh()
  await importIt(golden('minimal'), library)
  // The library's row of one pattern made another's: its reference pointed at another pattern's part row.
  const db = new Database(library)
  const [tampered, other] = db.prepare("SELECT id FROM fact_refs WHERE table_name = 'patterns' ORDER BY id LIMIT 2").pluck().all() as string[]
  db.prepare("UPDATE fact_refs SET (part, part_row) = (SELECT part, part_row FROM fact_refs WHERE table_name = 'patterns' AND id = ?) WHERE table_name = 'patterns' AND id = ?").run(other, tampered)
  db.close()
  const before = stats(library)
  const objectsBefore = await objectFiles(library)
  await t.rejects(importIt(golden('retraction'), library, { strict: true }), { code: 'import.fact-differs', message: new RegExp(`patterns ${tampered}: the library holds this record with other values`) })
  t.same(stats(library), before, 'nothing of the refused import')
  t.same(await objectFiles(library), objectsBefore, 'and the objects folder as it was')
  const r = await importIt(golden('retraction'), library)
  t.equal(r.factsDiffering, 1, 'without --strict the library\'s row stands, counted')
  t.ok((await objectFiles(library)).length > objectsBefore.length, 'which the same import keeps when it commits')
})

t.test('a revocation the library has seen stays in force when a store serves the older statement', async (t) => {
  const first = firstKeyStatement(PUBLISHER, { created: T0, name: 'Check Publisher' })
  const older = await buildStore(join(base, 'older'), { rows: smallRows(), search: false, keys: [first] })
  t.equal((await importIt(older.dir, fresh())).already, false, 'a library that never saw the revocation takes the store')
  const library = fresh()
  const lib = Library.open(library, { create: true })
  // As an import of a store whose statements revoked the key would have kept it (pack_revoked).
  await lib.change({ manifest: 'sha256:' + 'e'.repeat(64), publisher: PUBLISHER_FINGERPRINT, feed: 'f', source: 'earlier', started: T0, finished: T0 }, async (c) => {
    c.revoke(PUBLISHER_FINGERPRINT, PUBLISHER_FINGERPRINT, PUBLISHER_FINGERPRINT, 'earlier', T0)
  })
  const before = lib.stats()
  lib.close()
  await t.rejects(importIt(older.dir, library), { code: 'import.refused', message: /pack\.key-revoked \[level 2\]: not signed by its publisher: publisher key .* is revoked/ }, 'this one refuses it')
  t.same(stats(library), before)
  // The chain's revocations are kept by the import that sees them: here the known one, in force.
  const revoking = await buildStore(join(base, 'revoking'), { rows: smallRows(), search: false, keys: [revocationStatement(first, PUBLISHER)] })
  await t.rejects(importIt(revoking.dir, fresh()), { code: 'import.refused', message: /pack\.key-revoked/ }, 'a store whose own statement revokes its key: nothing it signed counts')
})

t.test('pipe run pack-import, and what it refuses', async (t) => {
  const library = fresh()
  const run = (...args: string[]) => spawnSync(process.execPath, [cli, 'run', 'pack-import', ...args], { encoding: 'utf8', env: childEnv() })
  let r = run(golden('minimal'), '--library', library, '--json')
  t.equal(r.status, 0, r.stderr)
  t.match(JSON.parse(r.stdout), { ok: true, feed: 'golden-a', already_imported: false, facts_added: 6, events_added: 14 })
  r = run(fileURLToPath(new URL('./golden/export', import.meta.url)), '--library', library, '--json')
  t.equal(r.status, 0, r.stderr)
  t.match(JSON.parse(r.stdout), { ok: true, source: 'export', already_imported: true, facts_added: 0 }, 'the export of the version taken from the store')
  r = run(base, '--library', library)
  t.equal(r.status, 2)
  t.match(r.stderr, /is neither a store \(jetcarp-store\.json\) nor an export \(pack\.json\), nor an uncompressed tar or a URL of one \(import\.not-a-pack\)/)
})

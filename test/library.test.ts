import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import t from 'tap'
import { sortKey, Library, LIBRARY_SCHEMA_VERSION, type ImportRecord } from '../src/library/library.js'
import { childEnv, collect } from './helpers/io.js'

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const built = fileURLToPath(new URL('../dist/src/library/library.js', import.meta.url))
const base = await mkdtemp(join(tmpdir(), 'library-'))
let made = 0
const fresh = () => join(base, `l${made++}.db`)
const record = (manifest: string): ImportRecord => ({ manifest, publisher: 'SHA256:pub', feed: 'life', source: '/somewhere', started: '2026-12-07T00:00:00Z', finished: '2026-12-07T00:00:01Z' })
const sha = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from('a picture')])
/** Two parts of the minimal golden store's patterns table, of one row each. */
const goldenPart = async (hex: string) => {
  const bytes = await readFile(fileURLToPath(new URL(`./golden/minimal/store/objects/sha256/${hex.slice(0, 2)}/${hex}.parquet`, import.meta.url)))
  return { object: `sha256:${hex}`, bytes }
}
const PART_A = await goldenPart('255da0e3d43cae5379e443b287fb91fff08514d434b340f70900b826ba8bd23c')
const PART_B = await goldenPart('3da007faff4848482c7b6244708bc3ca3903357c8289e4b94a677c39cc79b1bb')
const ID_A = '4ec69701fbf4cbc342427d733cfe42ed'
const ID_B = '69ba2f96fab25bffd0388a32fc938d51'
/** A part name for changes that are not read back (no object of that name is stored). */
const NO_PART = `sha256:${'0'.repeat(64)}`

t.test('a new library is made at this build\'s schema, and opens again as it was', async (t) => {
  const path = fresh()
  t.throws(() => Library.open(path), { code: 'env.enoent' }, 'opening without create does not make one')
  const lib = Library.open(path, { create: true })
  t.equal(lib.schemaVersion, LIBRARY_SCHEMA_VERSION)
  t.match(lib.stats(), { schema: LIBRARY_SCHEMA_VERSION, facts: { patterns: 0, tilings: 0 }, events: { verifications: 0 }, objects: 0, imports: 0, follows: [] })
  lib.close()
  const again = Library.open(path)
  t.equal(again.schemaVersion, LIBRARY_SCHEMA_VERSION)
  again.close()
})

t.test('what is not a library, or a newer one, is refused and left as it was', async (t) => {
  const other = fresh()
  const db = new Database(other)
  db.exec('CREATE TABLE mine (x INTEGER)')
  db.close()
  t.throws(() => Library.open(other), { code: 'library.not-a-library', message: /a SQLite database of other tables/ })
  const text = fresh()
  await writeFile(text, 'not a database at all, just some text that is long enough to be read as a header by SQLite\n'.repeat(20))
  t.throws(() => Library.open(text), { code: 'library.not-a-library', message: /not a SQLite database/ })
  t.match(await readFile(text, 'utf8'), /^not a database at all/, 'the file is untouched')
  const newer = fresh()
  Library.open(newer, { create: true }).close()
  const raw = new Database(newer)
  raw.prepare("UPDATE library_meta SET value = ? WHERE key = 'schema_version'").run(String(LIBRARY_SCHEMA_VERSION + 1))
  raw.close()
  t.throws(() => Library.open(newer), { code: 'library.schema-newer', message: new RegExp(`schema ${LIBRARY_SCHEMA_VERSION + 1}; this pipe knows schemas up to ${LIBRARY_SCHEMA_VERSION}`) })
})

t.test('one import is one transaction: facts merge by id, events under their publisher, objects by hash, flags, follows', async (t) => {
  const lib = Library.open(fresh(), { create: true })
  t.teardown(() => lib.close())
  const first = await lib.change(record('sha256:aa'), async (c) => {
    t.equal(await c.object(PART_A.object, 'parquet', PART_A.bytes), 'added')
    t.same(c.factRef('patterns', ID_A, PART_A.object, 0), { kept: 'added' })
    t.same(c.factRef('patterns', ID_A, PART_A.object, 0), { kept: 'same' }, 'the very row of the very part')
    t.equal(c.event('verifications', 'SHA256:pub', sortKey(['p1', 'B3/S23', 'SHA256:pub', '2026-11-11T00:00:00Z']), '{"pattern_id":"p1"}'), 'added')
    t.equal(await c.object(sha(PNG), 'png', PNG), 'added')
    t.equal(c.retract('p0', 'SHA256:pub', 'sha256:aa'), 'added')
    c.revoke('SHA256:old', 'SHA256:old', 'SHA256:pub', 'sha256:aa', '2026-12-07T00:00:00Z')
    c.follow('SHA256:pub', 'life', 3, 'sha256:aa', 'https://example.org/store', '2026-12-07T00:00:00Z')
  })
  t.same(first, { factsAdded: 1, eventsAdded: 1, objectsAdded: 2, retractionsAdded: 1, importId: 1 })
  const hex = sha(PNG).slice(7)
  t.ok((await readFile(join(lib.objectsDir, 'sha256', hex.slice(0, 2), `${hex}.png`))).equals(PNG), 'the object in the folder, named by its hash')

  const second = await lib.change(record('sha256:bb'), async (c) => {
    t.equal(await c.object(PART_B.object, 'parquet', PART_B.bytes), 'added')
    t.same(c.factRef('patterns', ID_A, PART_B.object, 0), { kept: 'elsewhere', held: { part: PART_A.object, partRow: 0, ownImport: false } }, 'the library\'s row stands, where it is, for the importer to compare')
    t.same(c.factRef('patterns', ID_B, PART_B.object, 0), { kept: 'added' })
    t.same(c.factRef('patterns', ID_B, PART_A.object, 0), { kept: 'elsewhere', held: { part: PART_B.object, partRow: 0, ownImport: true } }, 'an id two parts of one pack hold: the first stands, put there by this change')
    t.equal(c.event('verifications', 'SHA256:pub', sortKey(['p1', 'B3/S23', 'SHA256:pub', '2026-11-11T00:00:00Z']), '{"pattern_id":"p1"}'), 'same')
    t.equal(c.event('verifications', 'SHA256:other', sortKey(['p1', 'B3/S23', 'SHA256:other', '2026-11-11T00:00:00Z']), '{"pattern_id":"p1"}'), 'added', 'another publisher\'s')
    t.equal(await c.object(sha(PNG), 'png', PNG), 'same')
    c.revoke('SHA256:old', 'SHA256:new', 'SHA256:pub', 'sha256:bb', '2026-12-08T00:00:00Z')
    c.flagReverify('patterns', ID_B)
    c.reverifyResult('patterns', ID_B, 'confirmed', 'replayed 4 generations')
    c.follow('SHA256:pub', 'life', 4, 'sha256:bb', 'https://example.org/store', '2026-12-08T00:00:00Z')
  })
  t.same(second, { factsAdded: 1, eventsAdded: 1, objectsAdded: 1, retractionsAdded: 0, importId: 2 })
  t.match(lib.stats(), { facts: { patterns: 2 }, events: { verifications: 2 }, objects: 3, objectBytes: PNG.length + PART_A.bytes.length + PART_B.bytes.length, retractions: 1, revokedKeys: 1, imports: 2, needsReverify: 1, follows: [{ publisher: 'SHA256:pub', feed: 'life', seq: 4, manifest: 'sha256:bb' }] })
  const [rowA] = (await collect(lib.query('patterns', ID_A)))
  t.match(rowA, { id: ID_A, row: { id: ID_A, family: String }, needs_reverify: false, retracted: false, import_id: 1 }, 'read back from its part')
  t.same(rowA!.row, JSON.parse((await lib.factText('patterns', ID_A))!))
  t.same((await collect(lib.query('patterns'))).map((r) => [r.id, r.needs_reverify]), [[ID_A, false], [ID_B, true]], 'every fact in id order, read part by part')
  t.same(await collect(lib.query('patterns', 'p0')), [], 'an id the library lacks')
  t.ok(lib.hasFact('patterns', ID_B))
  t.notOk(lib.hasFact('ants', ID_B))
  t.same((await collect(lib.query('verifications', 'p1'))).map((r) => r.publisher), ['SHA256:other', 'SHA256:pub'], 'events by their first key column')
  t.same((await collect(lib.query('pack_revoked'))), [{ fingerprint: 'SHA256:old', revoked_by: 'SHA256:old', publisher: 'SHA256:pub', seen_in: 'sha256:aa', first_seen: '2026-12-07T00:00:00Z' }], 'a revocation is kept as first seen')
  t.ok(lib.isRevoked('SHA256:old'))
  t.same(lib.following('SHA256:pub', 'life'), { seq: 4, manifest: 'sha256:bb' })
  await t.rejects(collect(lib.query('nothing')), { code: 'library.unknown-table' })
})

t.test('a change that fails leaves the library exactly as it was', async (t) => {
  const lib = Library.open(fresh(), { create: true })
  t.teardown(() => lib.close())
  await lib.change(record('sha256:aa'), async (c) => { c.factRef('rules', 'B3/S23', NO_PART, 0) })
  const before = lib.stats()
  await t.rejects(lib.change(record('sha256:bb'), async (c) => {
    c.factRef('rules', 'B36/S23', NO_PART, 1)
    c.event('ratings', 'SHA256:pub', 'k', '{}')
    c.revoke('SHA256:k', 'SHA256:k', 'SHA256:pub', 'sha256:bb', '2026-12-07T00:00:00Z')
    t.equal(await c.object(PART_B.object, 'parquet', PART_B.bytes), 'added')
    t.ok(existsSync(lib.objectFile(PART_B.object, 'parquet')), 'an object is in the folder before the commit')
    await c.object('sha256:' + '0'.repeat(64), 'png', PNG)
  }), { code: 'library.object-hash-mismatch' })
  t.same(lib.stats(), before, 'no row, revocation or import record of the failed change')
  t.notOk(existsSync(lib.objectFile(PART_B.object, 'parquet')), 'nor the object it wrote')
  t.notOk(lib.isRevoked('SHA256:k'))
})

t.test('a process killed mid-import leaves the library as it was (SQLite\'s transaction, WAL, synchronous=FULL)', async (t) => {
  const path = fresh()
  const lib = Library.open(path, { create: true })
  await lib.change(record('sha256:aa'), async (c) => { c.factRef('patterns', 'kept', NO_PART, 0) })
  const before = lib.stats()
  lib.close()
  const script = `
    const { Library } = await import(${JSON.stringify(built)})
    const lib = Library.open(${JSON.stringify(path)})
    await lib.change({ manifest: 'sha256:bb', publisher: 'p', feed: 'f', source: 's', started: 'x', finished: 'y' }, async (c) => {
      for (let i = 0; i < 20000; i++) c.factRef('patterns', 'p' + i, 'sha256:' + '1'.repeat(64), i)
      process.stdout.write('halfway\\n')
      await new Promise(() => {})
    })`
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: childEnv(), stdio: ['ignore', 'pipe', 'inherit'] })
  await new Promise<void>((resolve) => child.stdout.on('data', (d: Buffer) => { if (d.toString().includes('halfway')) resolve() }))
  child.kill('SIGKILL')
  await new Promise((resolve) => child.once('exit', resolve))
  const after = Library.open(path)
  t.teardown(() => after.close())
  t.same(after.stats(), before, 'none of the 20,000 rows, nor the import record')
  const check = new Database(path, { readonly: true })
  t.equal(check.pragma('integrity_check', { simple: true }), 'ok')
  check.close()
})

t.test('events are kept by their sort key and their row: a later row of one sort key is another event', async (t) => {
  const path = fresh()
  const lib = Library.open(path, { create: true })
  const first = '{"consent_date":"2026-11-01T00:00:00Z","notes":false,"rater":"rater-0123456789abcdef"}'
  const later = '{"consent_date":"2026-12-01T00:00:00Z","notes":true,"rater":"rater-0123456789abcdef"}'
  await lib.change(record('sha256:aa'), async (c) => {
    t.equal(c.event('raters', 'SHA256:pub', sortKey(['rater-0123456789abcdef']), first), 'added')
    t.equal(c.event('raters', 'SHA256:pub', sortKey(['rater-0123456789abcdef']), later), 'added', 'the rater\'s later consent, same sort key')
    t.equal(c.event('raters', 'SHA256:pub', sortKey(['rater-0123456789abcdef']), first), 'same', 'the very row again')
  })
  const rows = (await collect(lib.query('raters', 'rater-0123456789abcdef')))
  t.equal(rows.length, 2)
  t.match(rows[0], { key: ['rater-0123456789abcdef'], digest: /^[0-9a-f]{32}$/ })
  lib.close()

  // A version 2 library kept events by their sort key alone (so it held one of the two): opening it re-keys them, row by row.
  const raw = new Database(path)
  raw.prepare('DELETE FROM events WHERE row = ?').run(later)
  const keys = raw.prepare('SELECT substr(key, length(key) - 31) FROM events').pluck().all()
  raw.exec("UPDATE events SET key = substr(key, 1, length(key) - 33); DROP TABLE fact_refs; DROP TABLE fact_parts; UPDATE library_meta SET value = '2' WHERE key = 'schema_version'")
  raw.close()
  const migrated = Library.open(path)
  t.teardown(() => migrated.close())
  t.equal(migrated.schemaVersion, LIBRARY_SCHEMA_VERSION)
  t.same((await collect(migrated.query('raters'))).map((r) => r.digest), keys, 'the same keys as this build makes')
})

t.test('pipe library stats and query read it back', async (t) => {
  const path = fresh()
  const lib = Library.open(path, { create: true })
  await lib.change(record('sha256:aa'), async (c) => {
    await c.object(PART_A.object, 'parquet', PART_A.bytes)
    c.factRef('patterns', ID_A, PART_A.object, 0)
    c.follow('SHA256:pub', 'life', 7, 'sha256:aa', 'https://example.org/store', '2026-12-07T00:00:00Z')
  })
  lib.close()
  const run = (...args: string[]) => spawnSync(process.execPath, [cli, 'library', ...args], { encoding: 'utf8', env: childEnv() })
  let r = run('stats', '--library', path, '--json')
  t.equal(r.status, 0, r.stderr)
  t.match(JSON.parse(r.stdout), { schema: LIBRARY_SCHEMA_VERSION, facts: { patterns: 1 }, imports: 1, follows: [{ feed: 'life', seq: 7 }] })
  r = run('stats', '--library', path)
  t.match(r.stdout, new RegExp(`^schema ${LIBRARY_SCHEMA_VERSION}\n`))
  t.match(r.stdout, /\nrecords: tilings 0, rules 0, patterns 1,/)
  t.match(r.stdout, /feeds followed: 1\n  SHA256:pub life: seq 7, manifest sha256:aa\n$/)
  const read = Library.open(path)
  const row = JSON.parse((await read.factText('patterns', ID_A))!) as unknown
  read.close()
  r = run('query', '--library', path, '--table', 'patterns', '--id', ID_A, '--json')
  t.equal(r.stdout, `${JSON.stringify({ table: 'patterns', rows: [{ id: ID_A, row, needs_reverify: false, retracted: false, import_id: 1 }] })}\n`, '--json: one object, as JSON.stringify writes it, though written row by row')
  r = run('query', '--library', path, '--table', 'patterns', '--json')
  t.same(JSON.parse(r.stdout), { table: 'patterns', rows: [{ id: ID_A, row, needs_reverify: false, retracted: false, import_id: 1 }] })
  r = run('query', '--library', path, '--table', 'rules', '--json')
  t.equal(r.stdout, '{"table":"rules","rows":[]}\n', 'an empty table')
  r = run('query', '--library', path, '--table', 'patterns')
  t.equal(r.stdout, `${JSON.stringify({ id: ID_A, row, needs_reverify: false, retracted: false, import_id: 1 })}\n`, 'a line a row')
  r = run('query', '--library', path, '--table', 'nope')
  t.equal(r.status, 2)
  t.match(r.stderr, /library\.unknown-table/)
  r = run('stats', '--library', join(base, 'missing.db'))
  t.equal(r.status, 2)
  t.match(r.stderr, /cannot open the library/)
})

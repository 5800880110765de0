/**
 * The library's schema 2: its own raters (pipe pack rater), a version 1 library taken up to it, and
 * pipe library feeds.
 */
import { spawnSync } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import t from 'tap'
import { Library, LIBRARY_SCHEMA_VERSION, type ImportRecord } from '../src/library/library.js'
import { childEnv, collect } from './helpers/io.js'

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const base = await mkdtemp(join(tmpdir(), 'library-raters-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
let made = 0
const fresh = () => join(base, `l${made++}.db`)
const record = (manifest: string): ImportRecord => ({ manifest, publisher: 'SHA256:pub', feed: 'life', source: 'https://example.org/store', started: '2026-12-07T00:00:00Z', finished: '2026-12-07T00:00:01Z' })
const pipe = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', env: childEnv() })
const RATER_ID = /^rater-[0-9a-f]{16}$/

t.test('a version 1 library is taken up to this build\'s, keeping what it holds', async (t) => {
  const path = fresh()
  const lib = Library.open(path, { create: true })
  await lib.change(record('sha256:aa'), async (c) => {
    c.event('verifications', 'SHA256:pub', 'p1', '{"pattern_id":"p1"}')
    c.follow('SHA256:pub', 'life', 3, 'sha256:aa', 'https://example.org/store', '2026-12-07T00:00:00Z')
  })
  const held = lib.stats()
  lib.close()
  // Version 1 is version 2 without the raters' tables (and version 3 re-keys events, of which it has none): what a library made by the build before this one holds.
  const raw = new Database(path)
  raw.exec("DROP TABLE library_rater_consents; DROP TABLE library_raters; DROP TABLE fact_refs; DROP TABLE fact_parts; UPDATE library_meta SET value = '1' WHERE key = 'schema_version'")
  // A version 1 library keeps a fact as its row's text.
  raw.exec("INSERT INTO facts (table_name, id, row, import_id) VALUES ('patterns', 'p1', '{\"id\":\"p1\"}', 1)")
  raw.close()

  const migrated = Library.open(path)
  t.teardown(() => migrated.close())
  t.equal(migrated.schemaVersion, LIBRARY_SCHEMA_VERSION)
  t.same(migrated.stats(), { ...held, schema: LIBRARY_SCHEMA_VERSION, facts: { ...held.facts, patterns: 1 } }, 'its rows, imports and follows as they were')
  t.same(await migrated.factText('patterns', 'p1'), '{"id":"p1"}', 'a fact kept as text reads back')
  const c = migrated.recordConsent('Ann', { showName: true, notes: false, withdrawn: false }, '2026-12-07T00:00:00Z')
  t.match(c, { name: 'Ann', rater: RATER_ID, made: true })
  t.same((await collect(migrated.query('library_raters'))), [{ name: 'Ann', rater: c.rater, consent_date: '2026-12-07T00:00:00Z', show_name: 1, notes: 0, withdrawn: 0 }], 'and it keeps raters now')
})

t.test('a rater\'s id is made once; each consent is a row of its history, dated after the one before', async (t) => {
  const lib = Library.open(fresh(), { create: true })
  t.teardown(() => lib.close())
  const T = '2026-12-07T10:00:00Z'
  const first = lib.recordConsent('Ann', { showName: false, notes: false, withdrawn: false }, T)
  const again = lib.recordConsent('Ann', { showName: true, notes: true, withdrawn: false }, T)
  t.equal(again.rater, first.rater, 'the same id')
  t.equal(again.made, false)
  t.equal(again.consentDate, '2026-12-07T10:00:01Z', 'recorded in the same second: one second later, so it is the latest')
  const withdrawn = lib.recordConsent('Ann', { showName: false, notes: false, withdrawn: true }, '2026-12-08T00:00:00Z')
  t.match(withdrawn, { rater: first.rater, withdrawn: true, consentDate: '2026-12-08T00:00:00Z' })
  t.same((await collect(lib.query('library_rater_consents'))).map((r) => [r.seq, r.show_name, r.notes, r.withdrawn]), [[1, 0, 0, 0], [2, 1, 1, 0], [3, 0, 0, 1]], 'the whole history')
  t.same(lib.raterConsents().get(first.rater), { name: 'Ann', rater: first.rater, consentDate: '2026-12-08T00:00:00Z', showName: false, notes: false, withdrawn: true })
  t.not(lib.recordConsent('Ben', { showName: false, notes: false, withdrawn: false }, T).rater, first.rater, 'another name, another id')
  t.throws(() => lib.recordConsent('Cy', { showName: false, notes: false, withdrawn: true }, T), { code: 'library.no-such-rater' }, 'no consent to withdraw')
  t.throws(() => lib.recordConsent(' Ann', { showName: false, notes: false, withdrawn: false }, T), { code: 'library.rater-name-invalid' })
  t.throws(() => lib.recordConsent('', { showName: false, notes: false, withdrawn: false }, T), { code: 'library.rater-name-invalid' })
})

t.test('pipe pack rater records consent and prints the id', async (t) => {
  const path = fresh()
  let r = pipe('pack', 'rater', 'Ann Example', '--library', path)
  t.equal(r.status, 0, r.stderr)
  const id = r.stdout.split('\n')[0]!
  t.match(id, RATER_ID)
  t.match(r.stdout, /a new rater, \S+: not named, notes not shared\n$/)
  r = pipe('pack', 'rater', 'Ann Example', '--show-name', '--notes', '--library', path, '--json')
  t.equal(r.status, 0, r.stderr)
  t.match(JSON.parse(r.stdout), { rater: id, showName: true, notes: true, withdrawn: false, made: false })
  r = pipe('pack', 'rater', 'Ann Example', '--withdraw', '--library', path)
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout, new RegExp(`^${id}\\nconsent recorded again, \\S+: consent withdrawn`))
  r = pipe('pack', 'rater', 'Ann Example', '--withdraw', '--notes', '--library', path)
  t.equal(r.status, 2)
  t.match(r.stderr, /--withdraw: a withdrawal records no other choice/)
  r = pipe('pack', 'rater', 'Nobody', '--withdraw', '--library', path)
  t.equal(r.status, 2)
  t.match(r.stderr, /library\.no-such-rater/)
  r = pipe('library', 'query', '--library', path, '--table', 'library_rater_consents', '--json')
  t.equal((JSON.parse(r.stdout) as { rows: unknown[] }).rows.length, 3, 'three consents of Ann; the refusals recorded nothing')
})

t.test('pipe library feeds lists the followed feeds', async (t) => {
  const path = fresh()
  const lib = Library.open(path, { create: true })
  let r = pipe('library', 'feeds', '--library', path)
  t.equal(r.stdout, 'no feeds followed\n')
  await lib.change(record('sha256:aa'), async (c) => {
    c.follow('SHA256:pub', 'life', 7, 'sha256:aa', 'https://example.org/store', '2026-12-07T00:00:00Z')
    c.follow('SHA256:pub', 'ants', 2, 'sha256:bb', '/srv/stores/ants', '2026-12-06T00:00:00Z')
  })
  lib.close()
  r = pipe('library', 'feeds', '--library', path, '--json')
  t.equal(r.status, 0, r.stderr)
  t.same(JSON.parse(r.stdout), {
    feeds: [
      { publisher: 'SHA256:pub', feed: 'ants', seq: 2, manifest: 'sha256:bb', source: '/srv/stores/ants', updated: '2026-12-06T00:00:00Z' },
      { publisher: 'SHA256:pub', feed: 'life', seq: 7, manifest: 'sha256:aa', source: 'https://example.org/store', updated: '2026-12-07T00:00:00Z' },
    ],
  })
  r = pipe('library', 'feeds', '--library', path)
  t.equal(r.stdout, 'SHA256:pub ants: seq 2, manifest sha256:bb, from /srv/stores/ants, updated 2026-12-06T00:00:00Z\nSHA256:pub life: seq 7, manifest sha256:aa, from https://example.org/store, updated 2026-12-07T00:00:00Z\n')
})

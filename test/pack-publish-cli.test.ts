/**
 * The pack pipelines as a user runs them, through the built CLI: `pipe pack key`, `pipe run pack-publish`
 * (a first version, a second one that adds a pattern and retracts another), `pipe run pack-check` at
 * level 3 on the store and on `pipe run pack-export`'s folder, ssh-keygen on the new version's
 * signature; and bad input refused with exit 2 and one line, the store's ref left as it was.
 */
import { spawnSync } from 'node:child_process'
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DuckDBInstance } from '@duckdb/node-api'
import t from 'tap'
import { childEnv } from './helpers/io.js'
import { needs } from './helpers/tools.js'
import { LIFE, patternRecord, writeLifeRecords } from '../src/sim/pack-records.js'

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const base = await mkdtemp(join(tmpdir(), 'pipe-pack-cli-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
const env = { ...childEnv(), PIPE_HOME: join(base, 'home') }
const pipe = (args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 120_000, env })
const T0 = '2026-11-11T00:00:00Z'
const T1 = '2026-11-12T00:00:00Z'

const BLOCK = patternRecord('square', LIFE, [[0, 0], [1, 0], [0, 1], [1, 1]])
const BLINKER = patternRecord('square', LIFE, [[0, 1], [1, 1], [2, 1]])
const GLIDER = patternRecord('square', LIFE, [[1, 0], [2, 1], [0, 2], [1, 2], [2, 2]], { speed: 'c/4 diagonal' })

const records = (folder: string, patterns: Record<string, unknown>[], date: string) => writeLifeRecords(folder, patterns, date, { title: 'cli', description: 'published by the CLI test' })

const json = (stdout: string) => JSON.parse(stdout) as Record<string, unknown>

t.test('key, publish twice, check at level 3, export, and ssh-keygen on the signature', async (t) => {
  const key = pipe(['pack', 'key', '--name', 'CLI Publisher', '--seed', '07'.repeat(32), '--created', T0])
  t.equal(key.status, 0, key.stderr)
  const fp = /SHA256:[A-Za-z0-9+/]{43}/.exec(key.stdout)?.[0]
  t.ok(fp, `pack key prints the fingerprint: ${key.stdout}`)

  const store = join(base, 'store')
  const v1 = pipe(['run', 'pack-publish', '--feed', 'cli-feed', '--to', store, '--records', await records(join(base, 'r1'), [BLOCK, BLINKER], T0), '--created', T0, '--json'])
  t.equal(v1.status, 0, v1.stderr)
  const s1 = json(v1.stdout)
  t.match(s1, { ok: true, seq: 1, parents: [] })
  t.match(String(s1.manifest), /^sha256:[0-9a-f]{64}$/)

  const ref1 = JSON.parse(await readFile(join(store, 'refs', 'cli-feed.json'), 'utf8')) as { manifest: string; seq: number; publisher: string }
  t.equal(ref1.manifest, s1.manifest)
  t.equal(ref1.publisher, fp)
  const blockId = (JSON.parse(await readFile(join(base, 'r1', 'patterns.jsonl'), 'utf8').then((s) => s.split('\n')[0]!)) as { id?: string }).id
  t.equal(blockId, undefined, 'the records leave the id to the publisher')

  const check1 = pipe(['run', 'pack-check', store, '--level', '3', '--json'])
  t.equal(check1.status, 0, check1.stdout.slice(-2000) + check1.stderr)
  t.match(json(check1.stdout), { ok: true, findings: [] })

  const listed = pipe(['run', 'pack-export', '--from', store, '--to', join(base, 'export-1')])
  t.equal(listed.status, 0, listed.stderr)
  const views = await readFile(join(base, 'export-1', 'views.sql'), 'utf8')
  t.match(views, /CREATE OR REPLACE VIEW "patterns"/)
  const exported = (await readdir(join(base, 'export-1', 'tables', 'patterns'), { recursive: true })).filter((f) => f.endsWith('.parquet'))
  t.ok(exported.length > 0, 'the export lays out the patterns parts')
  const check1x = pipe(['run', 'pack-check', join(base, 'export-1'), '--level', '3', '--json'])
  t.equal(check1x.status, 0, check1x.stdout.slice(-2000))

  // Version 2: the glider added, the blinker retracted by its id.

  const blinkerId = await patternIdOf(store, String(s1.manifest), 3)
  const v2 = pipe(['run', 'pack-publish', '--feed', 'cli-feed', '--to', store, '--records', await records(join(base, 'r2'), [GLIDER], T1), '--created', T1, '--retract', `pattern:${blinkerId}=not a pattern of this feed`, '--json'])
  t.equal(v2.status, 0, v2.stderr)
  const s2 = json(v2.stdout)
  t.match(s2, { ok: true, seq: 2, parents: [s1.manifest] })
  const m2 = JSON.parse(await readFile(objectFile(store, String(s2.manifest)), 'utf8')) as { retracts: { target: string; reason: string }[]; stats: { patterns: number } }
  t.same(m2.retracts.map((r) => [r.target, r.reason]), [[`pattern:${blinkerId}`, 'not a pattern of this feed']])
  t.equal(m2.stats.patterns, 3, 'a full snapshot: the parent\'s two patterns and the glider')
  const check2 = pipe(['run', 'pack-check', store, '--level', '3', '--json'])
  t.equal(check2.status, 0, check2.stdout.slice(-2000))

  await t.test("ssh-keygen checks the new version's signature against the publisher's key statement", needs('ssh-keygen'), async (t) => {
    const hex = String(s2.manifest).slice(7)
    const signer = (await readdir(join(store, 'sigs', 'sha256', hex.slice(0, 2), hex)))[0]!
    const statement = JSON.parse(await readFile(join(store, 'keys', signer.replace(/\.sig$/, '.json')), 'utf8')) as { key: string }
    const allowed = join(base, 'allowed')
    await writeFile(allowed, `publisher namespaces="jetcarp-manifest" ${statement.key}\n`)
    const v = spawnSync('ssh-keygen', ['-Y', 'verify', '-f', allowed, '-I', 'publisher', '-n', 'jetcarp-manifest', '-s', join(store, 'sigs', 'sha256', hex.slice(0, 2), hex, signer)], { input: await readFile(objectFile(store, String(s2.manifest))), encoding: 'utf8' })
    t.equal(v.status, 0, v.stderr + v.stdout)
  })
})

t.test('bad input is refused with exit 2 and one line, and the ref stays as it was', async (t) => {
  const store = join(base, 'store')
  const before = await readFile(join(store, 'refs', 'cli-feed.json'))
  const good = await records(join(base, 'r3'), [BLOCK], T1)
  for (const [what, args, message] of [
    ['a retraction without a reason', ['--retract', 'pattern:abc'], /--retract "pattern:abc": write TARGET=reason/],
    ['a records folder that is not there', ['--records', join(base, 'nope')], /--records: not a directory/],
    ['a key file that is not there', ['--key', join(base, 'no-key')], /--key: /],
  ] as const) {
    const r = pipe(['run', 'pack-publish', '--feed', 'cli-feed', '--to', store, '--records', good, '--created', T1, ...args])
    t.equal(r.status, 2, `${what}: ${r.stderr}`)
    t.match(r.stderr, message, what)
    t.equal(r.stderr.trim().split('\n').length, 1, `${what}: one line`)
  }
  const broken = join(base, 'r4')
  await records(broken, [BLOCK], T1)
  await writeFile(join(broken, 'patterns.jsonl'), JSON.stringify(BLOCK) + '\n{"pin_key": "square", \n')
  const r = pipe(['run', 'pack-publish', '--feed', 'cli-feed', '--to', store, '--records', broken, '--created', T1])
  t.not(r.status, 0, 'a record that is not JSON fails the publish')
  t.match(r.stderr, /patterns\.jsonl/, `names the file: ${r.stderr}`)
  t.match(r.stderr, /line 2/, 'and the line')
  t.equal(r.stderr.trim().split('\n').length, 1, 'one line')
  t.same(await readFile(join(store, 'refs', 'cli-feed.json')), before, 'the ref is unchanged')
})

function objectFile(store: string, hash: string): string {
  const hex = hash.slice(7)
  return join(store, 'objects', 'sha256', hex.slice(0, 2), `${hex}.json`)
}

/** The id of the pattern of `cells` cells in the version's patterns, read with DuckDB. */
async function patternIdOf(store: string, manifest: string, cells: number): Promise<string> {
  const m = JSON.parse(await readFile(objectFile(store, manifest), 'utf8')) as { tables: Record<string, string> }
  const index = JSON.parse(await readFile(objectFile(store, m.tables.patterns!), 'utf8')) as { parts: { object: string }[] }
  const parts = index.parts.map((p) => `'${join(store, 'objects', 'sha256', p.object.slice(7, 9), `${p.object.slice(7)}.parquet`)}'`)
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  try {
    const rows = (await conn.runAndReadAll(`SELECT id FROM read_parquet([${parts.join(',')}]) WHERE cells = ${cells}`)).getRows()
    if (rows.length !== 1) throw new Error(`${rows.length} patterns of ${cells} cells`)
    return String(rows[0]![0])
  } finally {
    conn.closeSync()
  }
}

t.test('a rotated key stands for the versions it signed; one rotated away with --revoke signs nothing any more', async (t) => {
  /** A home and store of their own: a key, version 1, a rotation (with `rotateFlags`), version 2, and the level 2 check. */
  const scenario = async (name: string, rotateFlags: string[]) => {
    const home = join(base, `${name}-home`)
    const run = (args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 120_000, env: { ...env, PIPE_HOME: home } })
    const store = join(base, `${name}-store`)
    const publish = async (n: number, patterns: Record<string, unknown>[], created: string) => {
      const r = run(['run', 'pack-publish', '--feed', name, '--to', store, '--records', await records(join(base, `${name}-r${n}`), patterns, created), '--created', created, '--json'])
      t.equal(r.status, 0, r.stderr)
      return String(json(r.stdout).manifest).slice('sha256:'.length)
    }
    t.equal(run(['pack', 'key', '--name', 'Rotating Publisher', '--seed', '11'.repeat(32), '--created', T0]).status, 0)
    const v1 = await publish(1, [BLOCK], T0)
    const rotated = run(['pack', 'key', '--rotate', ...rotateFlags, '--seed', '22'.repeat(32), '--created', T1])
    t.equal(rotated.status, 0, rotated.stderr)
    const v2 = await publish(2, [BLINKER], T1)
    const checked = run(['run', 'pack-check', store, '--level', '2', '--json'])
    return { v1, v2, rotated: rotated.stdout, status: checked.status, findings: (json(checked.stdout) as { findings: { code: string; target: string }[] }).findings }
  }

  const kept = await scenario('rotating', [])
  t.match(kept.rotated, /which stands for the versions it signed/)
  t.match(kept, { status: 0, findings: [] }, 'the first key still signs version 1, its successor version 2')

  const revoked = await scenario('revoking', ['--revoke'])
  t.match(revoked.rotated, /which it revoked \(every version that key signed now fails level 2\)/)
  t.equal(revoked.status, 1)
  t.ok(revoked.findings.length > 0 && revoked.findings.every((f) => f.code === 'pack.key-revoked'), `only pack.key-revoked: ${JSON.stringify(revoked.findings)}`)
  t.ok(revoked.findings.some((f) => f.target.includes(revoked.v1)), 'version 1, signed by the revoked key, fails')
  t.notOk(revoked.findings.some((f) => f.target.includes(revoked.v2)), 'version 2, signed by its successor, stands')
})

/**
 * A library whose fact table is longer than a query's page (1,024 rows): `library query` reads it back
 * through its keyset pages, every fact once and in id order, whether it is read whole or by id, as JSON or
 * a line a row, and a read nested inside another.
 */
import { spawnSync } from 'node:child_process'
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { Library } from '../src/library/library.js'
import { LIFE, ruleRecord } from '../src/sim/pack-records.js'
import { childEnv, collect } from './helpers/io.js'

/** More than two pages and not a multiple of one, so that a full page, a part page and the end are all met. */
const PATTERNS = 2_600
const QUERY_PAGE = 1024

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const base = await mkdtemp(join(tmpdir(), 'library-pages-'))
const env = { ...childEnv(), PIPE_HOME: join(base, 'home') }
const pipe = (args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 120_000, env, maxBuffer: 256 * 1024 * 1024 })

const records = join(base, 'records')
await mkdir(records)
await writeFile(join(records, 'tilings.jsonl'), '{"family":"square"}\n')
await writeFile(join(records, 'rules.jsonl'), `${JSON.stringify(ruleRecord(LIFE))}\n`)
let lines = ''
for (let n = 0; n < PATTERNS; n++) {
  // Pattern n: the cell (0, 0) and one more cell for each set bit of n: all distinct.
  const cells = [{ i: 0, j: 0, k: 0, s: 1 }]
  for (let b = 0; b < 12; b++) if ((n >> b) & 1) cells.push({ i: 1 + (b % 5), j: 1 + Math.floor(b / 5), k: 0, s: 1 })
  lines += `${JSON.stringify({ pin_key: 'square', model: 'bs', neighbourhood: 'touch', steps_per_gen: 1, class: 'other', period: 1, dx: 0, dy: 0, speed: null, phases: [cells], rule: LIFE.notation, site: null, gun: null, family: 'bs', semantics: '1' })}\n`
}
await writeFile(join(records, 'patterns.jsonl'), lines)
const store = join(base, 'store')
const library = join(base, 'lib.db')
for (const args of [
  ['pack', 'key', '--name', 'Pages Publisher', '--seed', '0b'.repeat(32), '--created', '2026-11-11T00:00:00Z'],
  ['run', 'pack-publish', '--feed', 'pages', '--to', store, '--records', records, '--created', '2026-11-11T00:00:00Z'],
  ['run', 'pack-import', store, '--library', library, '--verify', 'none'],
]) {
  const r = pipe(args)
  if (r.status !== 0) throw new Error(`pipe ${args.slice(0, 2).join(' ')}: ${r.stderr}`)
}

t.test(`${PATTERNS} patterns, past two query pages: each once, in id order, read whole or by id`, async (t) => {
  const r = pipe(['library', 'query', '--library', library, '--table', 'patterns', '--json'])
  t.equal(r.status, 0, r.stderr)
  const { rows } = JSON.parse(r.stdout) as { rows: { id: string; row: { id: string } }[] }
  const ids = rows.map((row) => row.id)
  t.equal(ids.length, PATTERNS, 'every pattern')
  t.ok(PATTERNS > 2 * QUERY_PAGE && PATTERNS % QUERY_PAGE !== 0, 'more than two pages, the last one part full')
  t.ok(ids.every((id, i) => i === 0 || ids[i - 1]! < id), 'strictly ascending: in id order, none twice')
  t.ok(rows.every((row) => row.row.id === row.id), 'each row the one of its id')

  const lineRows = pipe(['library', 'query', '--library', library, '--table', 'patterns']).stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as unknown)
  t.same(lineRows, rows, 'a line a row: the same rows')

  const lib = Library.open(library)
  t.teardown(() => lib.close())
  t.equal(lib.stats().facts.patterns, PATTERNS)
  for (const at of [0, QUERY_PAGE - 1, QUERY_PAGE, 2 * QUERY_PAGE + 7, PATTERNS - 1]) {
    t.same(await collect(lib.query('patterns', ids[at]!)), [rows[at]], `by id: the fact at ${at} of the whole read`)
  }
  const anyOrder = await collect(lib.factsAnyOrder('patterns'))
  t.same(anyOrder.sort((a, b) => (String(a.id) < String(b.id) ? -1 : 1)), rows, 'factsAnyOrder: the same facts, each once, unsorted')
  // Two reads at once on one library (a publish reads a table while it reads another): each its own scratch tables.
  const inner: string[] = []
  let outer = 0
  for await (const _ of lib.query('patterns')) {
    if (outer++ === QUERY_PAGE + 1) for await (const g of lib.query('patterns')) inner.push(String(g.id))
  }
  t.equal(outer, PATTERNS, 'the outer read goes on to the end')
  t.same(inner, ids, 'the read nested inside it gives the whole table')
})

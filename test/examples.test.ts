/**
 * Every pipeline in examples/ runs through the built CLI (`pipe run examples/X.json --param value`) on
 * golden data, and its output is checked against what an independent reader finds in the same data:
 * DuckDB over the sealed tables and the pack export, nginx serving a raw file, the journal's own JSONL.
 * Also the parameters of a pipeline file: a missing one, an unknown one and an undeclared `${name}`.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { DuckDBInstance } from '@duckdb/node-api'
import { childEnv } from './helpers/io.js'
import { startNginx } from './helpers/nginx.js'
import { needs } from './helpers/tools.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const cli = join(ROOT, 'dist/bin/pipe.js')
const example = (name: string) => join(ROOT, 'examples', `${name}.json`)
const run = (args: string[]) => spawnSync(process.execPath, [cli, 'run', ...args], { encoding: 'utf8', timeout: 120_000, env: childEnv(), cwd: ROOT })
const dir = await mkdtemp(join(tmpdir(), 'pipe-examples-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

const RECORD = join(ROOT, 'test/golden/record')
const BYBIT = join(ROOT, 'test/golden/record-bybit')
const db = await (await DuckDBInstance.create(':memory:')).connect()
t.teardown(() => db.closeSync())
const query = async (sql: string) => (await db.runAndReadAll(sql)).getRowObjectsJS()

/** A decimal's text as an integer of 10^-18, for sums compared exactly. */
const atto = (text: string) => {
  const [int, frac = ''] = text.replace('-', '').split('.')
  const v = BigInt(int! + frac.padEnd(18, '0'))
  return text.startsWith('-') ? -v : v
}

t.test('every example is run by this file', async (t) => {
  t.same((await readdir(join(ROOT, 'examples'))).filter((f) => f.endsWith('.json')).sort(),
    ['book-deltas-to-parquet.json', 'journal-connection-events.json', 'pack-patterns-to-jsonl.json', 'raw-over-http.json', 'trades-day-to-csv.json'])
})

t.test('trades-day-to-csv: one instrument\'s verified trades of a day, as DuckDB reads them from the tables', async (t) => {
  const out = join(dir, 'btc.csv')
  const r = run([example('trades-day-to-csv'), '--root', join(RECORD, 'root'), '--keys', join(RECORD, 'jwks.json'), '--date', '2026-10-04', '--instrument', 'BTCUSDT', '--out', out])
  t.equal(r.status, 0, r.stderr)
  const lines = (await readFile(out, 'utf8')).split('\r\n')
  t.equal(lines[0], 'receive_time,exchange_time,trade_id,side,price,size')
  const rows = lines.slice(1, -1).map((l) => l.split(','))
  const files = join(RECORD, 'root/recorder=golden/venue=binance/channel=trades/date=2026-10-04/*/trades.parquet')
  const [expected] = await query(`SELECT count(*)::INTEGER AS n, sum(price)::VARCHAR AS price, string_agg(trade_id, ',' ORDER BY trade_id) AS ids FROM read_parquet('${files}') WHERE instrument = 'BTCUSDT'`)
  t.ok(rows.length > 100, `${rows.length} trades`)
  t.equal(rows.length, expected!.n)
  t.equal(rows.reduce((s, c) => s + atto(c[4]!), 0n), atto(expected!.price as string), 'the prices, exactly')
  t.equal(rows.map((c) => c[2]).sort().join(','), expected!.ids)
  t.same(rows.map((c) => c[0]), rows.map((c) => c[0]).sort(), 'in receive-time order, hour by hour')
})

t.test('trades-day-to-csv refuses an hour that fails verification, and writes nothing', async (t) => {
  const root = join(dir, 'tampered')
  const hour = 'recorder=golden/venue=binance/channel=trades/date=2026-10-04/hour=14'
  await cpDir(join(RECORD, 'root'), root)
  const table = join(root, hour, 'trades.parquet')
  const bytes = await readFile(table)
  bytes[100] = bytes[100]! ^ 1
  await writeFile(table, bytes)
  const out = join(dir, 'tampered.csv')
  const r = run([example('trades-day-to-csv'), '--root', root, '--keys', join(RECORD, 'jwks.json'), '--date', '2026-10-04', '--out', out])
  t.equal(r.status, 1, r.stderr)
  t.match(r.stderr, new RegExp(`${hour.replaceAll('/', '.')}.*check 2 fails .*nothing after it is read \\(sealed-read.unverified\\)`))
  t.notOk(existsSync(out))
})

t.test('book-deltas-to-parquet: a chosen column set of the sealed book deltas, read back by DuckDB', async (t) => {
  const out = join(dir, 'deltas.parquet')
  const r = run([example('book-deltas-to-parquet'), '--root', join(BYBIT, 'root'), '--keys', join(BYBIT, 'jwks.json'), '--venue', 'bybit', '--from', '2026-10-03T14', '--to', '2026-10-03T14', '--out', out])
  t.equal(r.status, 0, r.stderr)
  const source = join(BYBIT, 'root/*/venue=bybit/channel=book/date=2026-10-03/hour=14/book_deltas.parquet')
  const [mine] = await query(`SELECT count(*)::INTEGER AS n, sum(quantity)::VARCHAR AS q, sum(price)::VARCHAR AS p FROM read_parquet('${out}')`)
  const [theirs] = await query(`SELECT count(*)::INTEGER AS n, sum(size)::VARCHAR AS q, sum(price)::VARCHAR AS p FROM read_parquet('${source}')`)
  t.ok(Number(theirs!.n) > 0)
  t.same(mine, theirs, 'every delta, sizes and prices exactly')
  const columns = await query(`SELECT name, type FROM parquet_schema('${out}') WHERE name <> 'schema'`)
  t.same(columns.map((c) => c.name), ['receive_time', 'instrument', 'side', 'price', 'quantity'])
})

t.test('raw-over-http: a raw file fetched from nginx, hash-checked and verified line by line', needs('nginx'), async (t) => {
  const hourDir = join(RECORD, 'root/recorder=golden/venue=binance/channel=trades/date=2026-10-04/hour=14')
  // Its own folder: nginx serves as nobody, who may not pass through this test's 0700 one.
  const served = await mkdtemp(join(tmpdir(), 'pipe-examples-www-'))
  t.teardown(() => rm(served, { recursive: true, force: true }))
  await copyFile(join(hourDir, 'raw.jsonl.zst'), join(served, 'raw.jsonl.zst'))
  const nginx = await startNginx(served)
  t.teardown(() => nginx.stop())
  const manifest = JSON.parse(await readFile(join(hourDir, 'manifest.json'), 'utf8')) as { files: { name: string; blake3: string; rows: number }[] }
  const raw = manifest.files.find((f) => f.name === 'raw.jsonl.zst')!
  const sha256 = createHash('sha256').update(await readFile(join(served, 'raw.jsonl.zst'))).digest('hex')
  const args = [example('raw-over-http'), '--url', `${nginx.base}/raw.jsonl.zst`, '--sha256', sha256, '--json']
  const ok = run([...args, '--blake3', raw.blake3])
  t.equal(ok.status, 0, ok.stderr)
  t.match(JSON.parse(ok.stdout), { ok: true, findings: [], lines: raw.rows })
  const wrong = run([...args, '--blake3', '0'.repeat(64)])
  t.equal(wrong.status, 1)
  t.match(JSON.parse(wrong.stdout), { ok: false, findings: [{ code: 'raw.blake3-mismatch' }] })

  // verify-raw is the same composition, with --url for its source.
  const url = `${nginx.base}/raw.jsonl.zst`
  const direct = run(['verify-raw', '--url', url, '--sha256', sha256, '--blake3', raw.blake3, '--rows', String(raw.rows), '--hour', '2026-10-04T14', '--json'])
  t.equal(direct.status, 0, direct.stderr)
  t.match(JSON.parse(direct.stdout), { ok: true, findings: [], lines: raw.rows })
  const tampered = run(['verify-raw', '--url', url, '--sha256', '0'.repeat(64), '--json'])
  t.equal(tampered.status, 1, 'bytes that do not hash to --sha256 are refused before a line is read')
  t.match(JSON.parse(tampered.stdout).error, { code: 'fetch.hash-mismatch' })
  const noHash = run(['verify-raw', '--url', url])
  t.equal(noHash.status, 2)
  t.equal(noHash.stderr, 'pipe: --sha256: --url needs --sha256: a fetched file is checked before a line of it is read (usage.missing-option)\n')
})

t.test('pack-patterns-to-jsonl: one class of a store\'s patterns, the ones the export holds under that class', async (t) => {
  for (const cls of ['oscillator', 'spaceship']) {
    const out = join(dir, `${cls}.jsonl`)
    const r = run([example('pack-patterns-to-jsonl'), '--store', join(ROOT, 'test/golden/minimal/store'), '--class', cls, '--out', out])
    t.equal(r.status, 0, r.stderr)
    const rows = (await readFile(out, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { id: string; class: string; period: number })
    const expected = await query(`SELECT id, period::INTEGER AS period FROM read_parquet('${join(ROOT, 'test/golden/export/tables/patterns')}/class_group=${cls}/*/*.parquet') ORDER BY id`)
    t.ok(expected.length > 0, `${cls}: ${expected.length} in the export`)
    t.same(rows.map((r) => ({ id: r.id, period: r.period })).sort((a, b) => (a.id < b.id ? -1 : 1)), expected, `${cls}: the same patterns`)
    t.ok(rows.every((r) => r.class === cls))
  }
})

t.test('journal-connection-events: the connection events of a journal, in event-time order, as journaled', async (t) => {
  const sample = join(ROOT, 'test/fixtures/journal-sample.jsonl')
  const journal = join(dir, 'journal')
  const made = run(['journal-import', '--from', sample, '--journal', journal])
  t.equal(made.status, 0, made.stderr)
  const out = join(dir, 'connections.jsonl')
  const r = run([example('journal-connection-events'), '--journal', journal, '--out', out])
  t.equal(r.status, 0, r.stderr)
  const kinds = new Set(['connecting', 'open', 'subscribed', 'closed', 'error'])
  const expected = (await readFile(sample, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { kind: string; time: string })
    .filter((e) => kinds.has(e.kind))
  const got = (await readFile(out, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { kind: string; time: string })
  t.ok(expected.length >= 6)
  const key = (e: object) => JSON.stringify(Object.fromEntries(Object.entries(e).sort()))
  t.same(got.map(key).sort(), expected.map(key).sort(), 'every connection event and no other, member for member')
  t.same(got.map((e) => e.time), got.map((e) => e.time).sort(), 'in event-time order')
})

t.test('a pipeline file\'s parameters: each declared one needed or defaulted, no other accepted', async (t) => {
  const missing = run([example('trades-day-to-csv'), '--root', join(RECORD, 'root'), '--keys', join(RECORD, 'jwks.json'), '--out', join(dir, 'x.csv')])
  t.equal(missing.status, 2)
  t.equal(missing.stderr, 'pipe: --date: trades-day-to-csv needs --date: the UTC day, YYYY-MM-DD (usage.missing-param)\n')
  const unknown = run([example('journal-connection-events'), '--journal', dir, '--out', join(dir, 'y.jsonl'), '--jornal', dir])
  t.equal(unknown.status, 2)
  t.equal(unknown.stderr, 'pipe: --jornal: journal-connection-events declares no parameter --jornal (it has --journal, --out) (usage.unknown-param)\n')
  const file = join(dir, 'undeclared.json')
  await writeFile(file, JSON.stringify({ params: { out: { description: 'x' } }, stages: [{ stage: 'file', options: { path: '${in}' } }, { stage: 'atomic-file', options: { path: '${out}' } }] }))
  const undeclared = run([file, '--out', join(dir, 'z')])
  t.equal(undeclared.status, 2)
  t.match(undeclared.stderr, /stages\[0\]\.options: uses \$\{in\}, which "params" does not declare \(usage\.bad-pipeline-file\)/)
})

async function cpDir(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true })
  for (const e of await readdir(from, { withFileTypes: true })) {
    if (e.isDirectory()) await cpDir(join(from, e.name), join(to, e.name))
    else await copyFile(join(from, e.name), join(to, e.name))
  }
}

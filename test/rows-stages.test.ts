/**
 * The stages of users' own ETL over rows: from-jsonl, filter, select, to-jsonl, to-csv, parquet-read and
 * parquet-write, run in-process as a JSON pipeline file would name them, with their output read back by
 * independent means (exact bytes; DuckDB for Parquet) and their refusals checked for a named row or field.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { DuckDBInstance } from '@duckdb/node-api'
import { runStageList } from '../src/core/runner.js'
import type { StageUse } from '../src/core/stage.js'
import { registry } from '../pipelines/registry.js'
import { parseTimeText } from '../src/transforms/rows/row-values.js'
import { captureIO } from './helpers/io.js'

const dir = await mkdtemp(join(tmpdir(), 'pipe-rows-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

async function run(stages: StageUse[]) {
  const io = captureIO(true)
  const result = await runStageList(registry, 'test', stages, io.settings)
  const summary = JSON.parse(io.out()) as { ok: boolean; error?: { code: string; message: string; location: Record<string, unknown> | null } }
  return { result, summary, err: io.err() }
}

let n = 0
async function jsonl(rows: string[]): Promise<string> {
  const path = join(dir, `in-${++n}.jsonl`)
  await writeFile(path, rows.map((r) => r + '\n').join(''))
  return path
}
const read = (path: string): StageUse[] => [{ stage: 'file', options: { path } }, { stage: 'split-lines' }, { stage: 'from-jsonl' }]
const out = (name: string) => join(dir, name)
const toFile = (path: string): StageUse => ({ stage: 'atomic-file', options: { path } })

const TRADES = [
  '{"instrument":"BTCUSDT","price":"65000.10","size":"0.5","receive_time":"2026-10-03T14:00:00.000000001Z","note":"a, \\"quoted\\" note"}',
  '{"instrument":"ETHUSDT","price":"3200","size":"1","receive_time":"2026-10-03T14:30:00.000000000Z","note":""}',
  '{"instrument":"BTCUSDT","price":"65000.1","size":"0.25","receive_time":"2026-10-03T15:00:00.000000000Z","note":null}',
  '{"instrument":"BTCUSDT","price":"64999.999999999999999999","size":"2","receive_time":"2026-10-03T15:59:59.999999999Z","note":"line\\nbreak"}',
]

t.test('from-jsonl -> filter -> select -> to-csv: RFC 4180 bytes, null and empty apart, renamed columns', async (t) => {
  const path = out('btc.csv')
  const r = await run([...read(await jsonl(TRADES)), { stage: 'filter', options: { where: [{ field: 'instrument', eq: 'BTCUSDT' }] } },
    { stage: 'select', options: { fields: ['receive_time', { field: 'price', as: 'px' }, 'note'] } }, { stage: 'to-csv' }, toFile(path)])
  t.equal(r.result.exitCode, 0, r.err)
  t.equal(await readFile(path, 'utf8'), [
    'receive_time,px,note',
    '2026-10-03T14:00:00.000000001Z,65000.10,"a, ""quoted"" note"',
    '2026-10-03T15:00:00.000000000Z,65000.1,',
    '2026-10-03T15:59:59.999999999Z,64999.999999999999999999,"line\nbreak"',
    '',
  ].join('\r\n'))
  const both = out('both.csv')
  t.equal((await run([...read(await jsonl(TRADES)), { stage: 'select', options: { fields: ['note'] } }, { stage: 'to-csv', options: { lineEnding: 'lf', header: false } }, toFile(both)])).result.exitCode, 0)
  t.equal((await readFile(both, 'utf8')).split('\n')[1], '""', 'an empty string is a quoted empty field; a null (row 3) an empty one')
})

t.test('filter: decimals compared exactly, times from loose bounds, membership, and null in no range', async (t) => {
  const input = await jsonl(TRADES)
  const kept = async (where: unknown[]) => {
    const path = out(`f-${++n}.jsonl`)
    const r = await run([...read(input), { stage: 'filter', options: { where } }, { stage: 'select', options: { fields: ['price'] } }, { stage: 'to-jsonl' }, toFile(path)])
    t.equal(r.result.exitCode, 0, r.err)
    return (await readFile(path, 'utf8')).split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { price: string }).price)
  }
  t.same(await kept([{ field: 'price', gte: '65000.1' }]), ['65000.10', '65000.1'], '65000.10 and 65000.1 are the same decimal')
  t.same(await kept([{ field: 'price', lt: 65000.1 }]), ['3200', '64999.999999999999999999'], 'a number bound compares exactly, not as a float (64999.999…9 is below)')
  t.same(await kept([{ field: 'price', eq: '65000.1', as: 'decimal' }]), ['65000.10', '65000.1'])
  t.same(await kept([{ field: 'price', eq: '65000.1' }]), ['65000.1'], 'without "as", eq is the same JSON value')
  t.same(await kept([{ field: 'receive_time', gte: '2026-10-03T14:30Z', lt: '2026-10-03T15:59:59.999999999Z' }]), ['3200', '65000.1'])
  t.same(await kept([{ field: 'receive_time', gte: '2026-10-03' }, { field: 'instrument', in: ['ETHUSDT', 'SOLUSDT'] }]), ['3200'])
  t.same(await kept([{ field: 'note', gte: 'a', as: 'string' }]), ['65000.10', '64999.999999999999999999'], 'a null note is in no range; "" sorts before "a"')
  t.same(await kept([{ field: 'missing', eq: null }]), ['65000.10', '3200', '65000.1', '64999.999999999999999999'], 'a field a row lacks is null')
  t.equal(parseTimeText('2026-10-03T14:30:05.25Z'), 1_791_037_805_250_000_000n)
  t.equal(parseTimeText('2026-10-03T14:30:05+01:00'), null, 'UTC only')

  const bad = await run([...read(input), { stage: 'filter', options: { where: [{ field: 'instrument', gt: '100' }] } }, { stage: 'to-jsonl' }, toFile(out('bad.jsonl'))])
  t.equal(bad.result.exitCode, 1)
  t.match(bad.summary.error, { code: 'rows.filter-value', location: { row: 1 } }, 'a value that is not the range\'s kind names its row')
  t.notOk(existsSync(out('bad.jsonl')), 'nothing is written when the run fails')
  const mixed = await run([...read(input), { stage: 'filter', options: { where: [{ field: 'price', gt: '1', lt: '2026-10-04' }] } }, { stage: 'to-jsonl' }, toFile(out('mixed.jsonl'))])
  t.equal(mixed.result.exitCode, 2)
  t.match(mixed.summary.error, { code: 'usage.bad-option', message: /decimal and time: say which with "as"/ })
  const empty = await run([...read(input), { stage: 'filter', options: { where: [{ field: 'price' }] } }, { stage: 'to-jsonl' }, toFile(out('e.jsonl'))])
  t.match(empty.summary.error, { code: 'usage.bad-option', message: /needs eq, in, gt, gte, lt or lte/ })
})

t.test('from-jsonl refuses what it cannot read exactly, naming the line; to-csv refuses a field it has no column for', async (t) => {
  for (const [line, code] of [['{"a": 1', 'rows.line-not-json'], ['[1, 2]', 'rows.line-not-object'], ['{"id": 9007199254740993}', 'rows.number-inexact']] as const) {
    const r = await run([...read(await jsonl(['{"a": 1}', line])), { stage: 'to-jsonl' }, toFile(out('x.jsonl'))])
    t.equal(r.result.exitCode, 1, line)
    t.match(r.summary.error, { code, location: { line: 2 } }, line)
  }
  const long = await run([{ stage: 'file', options: { path: await jsonl(['{"a": 1}', `{"a": "${'x'.repeat(5000)}"}`, '{"a": 3}']) } }, { stage: 'split-lines', options: { maxLineBytes: 1024 } }, { stage: 'from-jsonl' }, { stage: 'to-jsonl' }, toFile(out('long.jsonl'))])
  t.match(long.summary.error, { code: 'rows.line-too-long', location: { line: 2 } }, 'a line over the cap is a row lost: the run stops there')
  t.notOk(existsSync(out('long.jsonl')))
  const r = await run([...read(await jsonl(['{"a": 1}', '{"a": 2, "b": 3}'])), { stage: 'to-csv' }, toFile(out('x.csv'))])
  t.match(r.summary.error, { code: 'rows.csv-unknown-field', location: { row: 2 }, message: /field "b" is not a column \(a\)/ })
  const named = out('named.csv')
  t.equal((await run([...read(await jsonl(['{"a": 1}', '{"a": 2, "b": 3}'])), { stage: 'to-csv', options: { columns: ['b', 'a'] } }, toFile(named)])).result.exitCode, 0)
  t.equal(await readFile(named, 'utf8'), 'b,a\r\n,1\r\n3,2\r\n')
  const canonical = out('c.jsonl')
  t.equal((await run([...read(await jsonl(['{"b": 1, "a": [true, null]}'])), { stage: 'to-jsonl', options: { canonical: true } }, toFile(canonical)])).result.exitCode, 0)
  t.equal(await readFile(canonical, 'utf8'), '{"a":[true,null],"b":1}\n')
})

const COLUMNS = [
  { name: 'instrument', type: 'string', optional: false },
  { name: 'price', type: 'decimal(38,18)', optional: false },
  { name: 'qty', type: 'decimal(9,2)' },
  { name: 'seq', type: 'int64' },
  { name: 'receive_time', type: 'timestamp-ns', optional: false },
  { name: 'ms', type: 'timestamp-ms' },
  { name: 'ok', type: 'boolean' },
  { name: 'ratio', type: 'double' },
]
const ROWS = [
  '{"instrument":"BTCUSDT","price":"65000.000000000000000001","qty":"0.5","seq":"9223372036854775807","receive_time":"2026-10-03T14:00:00.123456789Z","ms":"2026-10-03T14:00:00.123000000Z","ok":true,"ratio":0.1}',
  '{"instrument":"ETHUSDT","price":"-0.1","qty":null,"seq":-5,"receive_time":"2026-10-03T14:00:01.000000000Z","ms":null,"ok":false,"ratio":null}',
]

t.test('parquet-write then parquet-read: every value back exactly, row groups as they fill, and DuckDB reads the same file', async (t) => {
  const path = out('rows.parquet')
  const many = Array.from({ length: 2500 }, (_, i) => ROWS[i % 2]!)
  const w = await run([...read(await jsonl(many)), { stage: 'parquet-write', options: { path, columns: COLUMNS, rowGroupRows: 1000 } }])
  t.equal(w.result.exitCode, 0, w.err)
  t.same((await readdir(dir)).filter((f) => f.includes('.tmp')), [], 'no temporary file is left')
  const back = out('back.jsonl')
  const r = await run([{ stage: 'parquet-read', options: { path } }, { stage: 'to-jsonl' }, toFile(back)])
  t.equal(r.result.exitCode, 0, r.err)
  const lines = (await readFile(back, 'utf8')).split('\n').filter(Boolean)
  t.equal(lines.length, 2500)
  t.same(JSON.parse(lines[0]!), { instrument: 'BTCUSDT', price: '65000.000000000000000001', qty: '0.5', seq: '9223372036854775807', receive_time: '2026-10-03T14:00:00.123456789Z', ms: '2026-10-03T14:00:00.123000000Z', ok: true, ratio: 0.1 })
  t.same(JSON.parse(lines[1]!), { instrument: 'ETHUSDT', price: '-0.1', qty: null, seq: -5, receive_time: '2026-10-03T14:00:01.000000000Z', ms: null, ok: false, ratio: null })

  const db = await (await DuckDBInstance.create(':memory:')).connect()
  const q = await db.runAndReadAll(`SELECT count(*)::INTEGER AS n, count(DISTINCT instrument)::INTEGER AS i, max(price)::VARCHAR AS p, max(seq)::VARCHAR AS s, min(qty)::VARCHAR AS q FROM read_parquet('${path}')`)
  t.same(q.getRowObjectsJS()[0], { n: 2500, i: 2, p: '65000.000000000000000001', s: '9223372036854775807', q: '0.50' }, 'DuckDB reads the decimals and the int64 exactly')
  const groups = await db.runAndReadAll(`SELECT count(DISTINCT row_group_id)::INTEGER AS g FROM parquet_metadata('${path}')`)
  t.equal(groups.getRowObjectsJS()[0]!.g, 3, '1000-row groups: 1000, 1000, 500')
  db.closeSync()

  const picked = out('picked.jsonl')
  t.equal((await run([{ stage: 'parquet-read', options: { path, columns: ['seq', 'instrument'] } }, { stage: 'to-jsonl' }, toFile(picked)])).result.exitCode, 0)
  t.equal((await readFile(picked, 'utf8')).split('\n')[0], '{"seq":"9223372036854775807","instrument":"BTCUSDT"}', 'the columns asked for, in that order')
  const unknown = await run([{ stage: 'parquet-read', options: { path, columns: ['nope'] } }, { stage: 'to-jsonl' }, toFile(out('u.jsonl'))])
  t.match(unknown.summary.error, { code: 'usage.unknown-column', message: /no column "nope" \(it has instrument, price/ })
})

t.test('parquet-write refuses a value it would have to round, and leaves no file', async (t) => {
  for (const [row, message] of [
    ['{"instrument":"X","price":"1.0000000000000000001","receive_time":"2026-10-03T14:00:00.000000000Z"}', /column "price": "1.0000000000000000001" has more than 18 decimal places/],
    ['{"instrument":"X","price":"1","qty":"12345678.9","receive_time":"2026-10-03T14:00:00.000000000Z"}', /column "qty": "12345678.9" has more than 9 digits/],
    ['{"instrument":"X","price":"1","ms":"2026-10-03T14:00:00.000000001Z","receive_time":"2026-10-03T14:00:00.000000000Z"}', /column "ms": .* is finer than the column's millis/],
    ['{"instrument":"X","price":"1","receive_time":"2026-10-03 14:00"}', /column "receive_time": .* is not a time/],
    ['{"instrument":"X","receive_time":"2026-10-03T14:00:00.000000000Z"}', /column "price" is required/],
    ['{"instrument":"X","price":"1","receive_time":"2026-10-03T14:00:00.000000000Z","extra":1}', /field "extra" is not a column/],
  ] as const) {
    const path = out(`refused-${++n}.parquet`)
    const r = await run([...read(await jsonl([ROWS[0]!, row])), { stage: 'parquet-write', options: { path, columns: COLUMNS } }])
    t.equal(r.result.exitCode, 1, row)
    t.match(r.summary.error, { location: { row: 2 }, message }, row)
    t.notOk(existsSync(path), 'no file under the final name')
  }
  t.same((await readdir(dir)).filter((f) => f.includes('.tmp')), [], 'and no temporary file')
  const neither = await run([...read(await jsonl(ROWS)), { stage: 'parquet-write', options: { path: out('n.parquet') } }])
  t.match(neither.summary.error, { code: 'usage.bad-option', message: /"columns" or as a record "table"/ })
})

t.test('parquet-read: a file DuckDB wrote reads exactly; a hostile one is refused in one line before anything is decoded', async (t) => {
  const written = out('duck.parquet')
  const db = await (await DuckDBInstance.create(':memory:')).connect()
  t.teardown(() => db.closeSync())
  await db.run(`COPY (SELECT i::BIGINT AS id, ('x' || i) AS name, (i / 8)::DECIMAL(18,3) AS amount, TIMESTAMP '2026-10-03 14:00:00.000001' + INTERVAL (i) SECOND AS at, NULL::VARCHAR AS nothing FROM range(3000) t(i)) TO '${written}' (FORMAT PARQUET, ROW_GROUP_SIZE 1000)`)
  const back = out('duck.jsonl')
  const r = await run([{ stage: 'parquet-read', options: { path: written } }, { stage: 'to-jsonl' }, toFile(back)])
  t.equal(r.result.exitCode, 0, r.err)
  const lines = (await readFile(back, 'utf8')).split('\n').filter(Boolean)
  t.equal(lines.length, 3000)
  t.same(JSON.parse(lines[9]!), { id: 9, name: 'x9', amount: '1.125', at: '2026-10-03T14:00:09.000001000Z', nothing: null })

  const bytes = await readFile(written)
  for (const [what, mutated] of [
    ['not Parquet', Buffer.from('hello, this is not a parquet file at all\n')],
    ['cut short', bytes.subarray(0, bytes.length - 100)],
    ['a footer length past the file', Buffer.concat([bytes.subarray(0, bytes.length - 8), Buffer.from([0xff, 0xff, 0xff, 0x7f]), Buffer.from('PAR1')])],
  ] as const) {
    const path = out(`hostile-${++n}.parquet`)
    await writeFile(path, mutated)
    const h = await run([{ stage: 'parquet-read', options: { path } }, { stage: 'to-jsonl' }, toFile(out(`h-${n}.jsonl`))])
    t.equal(h.result.exitCode, 1, what)
    t.match(h.summary.error, { code: /^pack\.parquet-/, location: { file: path } }, `${what}: ${h.summary.error?.message}`)
    t.notOk(existsSync(out(`h-${n}.jsonl`)))
  }
  const missing = await run([{ stage: 'parquet-read', options: { path: out('none.parquet') } }, { stage: 'to-jsonl' }, toFile(out('m.jsonl'))])
  t.match(missing.summary.error, { code: 'env.enoent' })
})

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { HashTable128, NewRows, type ChunkSink } from '../src/formats/pack/new-rows.js'
import { PartsJob } from '../src/formats/pack/parquet-write.js'
import { readPartRows } from '../src/formats/pack/parquet-read.js'
import { PACK_TABLES, canonicalRowText, rowComparator, validateRow, rowValidator, type TableSchema } from '../src/formats/pack/table-schemas.js'
import { latticeTilingRows } from '../src/formats/pack/tilings.js'
import { seededRandom } from '../src/sim/random.js'

const dir = await mkdtemp(join(tmpdir(), 'pack-new-rows-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

const rand = seededRandom(17)
const CHARS = ['a', 'é', 'z', '😀', 'B']
const word = () => Array.from({ length: 1 + Math.floor(rand() * 6) }, () => CHARS[Math.floor(rand() * CHARS.length)]).join('')
const sighting = () => ({
  pattern_id: word(), rule: word(), publisher: 'SHA256:x', source: word(), source_kind: null, count: Math.floor(rand() * 5), soups: 1,
  first_seen: '2026-11-11T00:00:00Z', last_seen: '2026-11-11T00:00:00Z',
})

/** Runs rows through NewRows into parts (written on this thread); gives each chunk's rows as read back, and each chunk's row count. */
async function collect(schema: TableSchema, added: object[], parents: object[] = [], maxChunkBytes?: number) {
  const job = new PartsJob(schema, { dir, encodeOnThread: false })
  const chunkRows: number[] = []
  const sink: ChunkSink = (taken, order, runs) => {
    chunkRows.push(order.length)
    return job.post(taken, order, runs)
  }
  const rows = new NewRows(schema, sink, maxChunkBytes)
  const measure = rowValidator(schema)
  for (const p of parents) rows.parent(p as Record<string, unknown>)
  for (const r of added) await rows.add(r as Record<string, unknown>, measure(r, 0, []))
  await rows.end()
  const parts = []
  for (const p of await job.finish()) {
    const read = await readPartRows(p.path, schema)
    if (!read.ok) throw new Error(read.findings[0]!.detail)
    parts.push({ partition: p.partition, rows: read.rows })
  }
  return { parts, chunkRows }
}

t.test('each chunk is sorted as a part must be; rows the parents have are left out', async (t) => {
  const schema = PACK_TABLES.sightings
  const all = Array.from({ length: 3000 }, sighting)
  const parents = all.filter((_, i) => i % 5 === 0)
  const { parts, chunkRows } = await collect(schema, all, parents, 20_000)
  t.ok(chunkRows.length > 5, `several chunks (${chunkRows.length})`)
  t.equal(parts.length, chunkRows.length, 'a part a chunk (the table is unpartitioned)')
  const cmp = rowComparator(schema)
  t.ok(parts.every((p) => p.rows.every((r, i) => i === 0 || cmp(p.rows[i - 1]!, r) <= 0)), 'every part in the table\'s order, ties by text')
  const written = parts.flatMap((p) => p.rows.map((r) => canonicalRowText(schema, r)))
  const parentTexts = new Set(parents.map((p) => canonicalRowText(schema, p)))
  t.same(written.sort(), all.map((r) => canonicalRowText(schema, r)).filter((x) => !parentTexts.has(x)).sort(), 'every new event row, none a parent has')
})

t.test('a chunk ends once its rows\' texts reach the limit in UTF-16 units, 64 more a row', async (t) => {
  const schema = PACK_TABLES.sightings
  const all = Array.from({ length: 2000 }, sighting)
  const limit = 15_000
  const expected: number[] = []
  let bytes = 0
  let rows = 0
  for (const r of all) {
    bytes += canonicalRowText(schema, r).length + 64
    rows++
    if (bytes >= limit) { expected.push(rows); bytes = 0; rows = 0 }
  }
  if (rows > 0) expected.push(rows)
  const { chunkRows } = await collect(schema, all, [], limit)
  t.same(chunkRows, expected, 'the same cuts as counting each text\'s length (the words hold é and 😀)')
})

t.test('partitions: a chunk writes a part for each, in partition order', async (t) => {
  const schema = PACK_TABLES.ants
  const ant = (n: number) => ({
    id: `ant-${String(n).padStart(32, '0')}`, identity: `jetcarp-ant-v1\n${n}`, pin_key: 'k', pin: 'p', rule: 'RL', kind: 'string', family: 'ant', semantics: '1', states: 1, colors: 2,
    start: '"empty"', outcome: 'highway', period: null, dx: null, dy: null, onset: null, speed: n % 3 ? -0 : 0.5, steps: 10n, cells: 3, run: '{}', tiling_group: ['hex', 'square', 'tri'][n % 3]!,
  })
  const all = Array.from({ length: 30 }, (_, n) => ant(29 - n))
  t.same(all.map((r) => validateRow(schema, r, 0)).flat(), [], 'valid rows')
  const { parts } = await collect(schema, all)
  t.same(parts.map((p) => p.partition), [{ tiling_group: 'hex' }, { tiling_group: 'square' }, { tiling_group: 'tri' }])
  for (const p of parts) t.ok(p.rows.every((r, i) => i === 0 || (r['id'] as string) > (p.rows[i - 1]!['id'] as string)), `${p.partition['tiling_group']}: by id`)
  t.ok(parts.flatMap((p) => p.rows).filter((r) => r['speed'] !== 0.5).every((r) => Object.is(r['speed'], -0)), 'a float64 -0 is written -0')
})

t.test('a fact key: kept once, and refused when given two different rows', async (t) => {
  const schema = PACK_TABLES.tilings
  const tilings = latticeTilingRows() as unknown as Record<string, unknown>[]
  const { parts } = await collect(schema, [...tilings, ...tilings], [tilings[0]!], 10)
  const out = parts.flatMap((p) => p.rows)
  t.same(out.map((r) => r['pin_key']).sort(), tilings.slice(1).map((r) => r['pin_key']).sort(), 'once each, and not the parent\'s')
  const square = out.find((r) => r['pin_key'] === 'square')
  t.ok(square && Object.is((square['a2'] as number[])[0], -0), 'a row holding -0 keeps it (the pin covers its sign)')
  const conflict = new NewRows(schema, async () => {})
  const measure = rowValidator(schema)
  await conflict.add(tilings[1]!, measure(tilings[1], 0, []))
  const other = { ...tilings[1]!, name: 'another name' }
  await t.rejects(conflict.add(other, measure(other, 0, [])), { code: 'pack.fact-conflict' })
  const signed = { ...tilings[1]!, a1: (tilings[1]!['a1'] as number[]).map((x) => (x === 0 ? -0 : x)) }
  await t.resolves(conflict.add(signed, measure(signed, 0, [])), 'a row that differs only by the sign of a zero is the same row, as its text is')
})

t.test('HashTable128 keeps every key and its value through growth', async (t) => {
  const table = new HashTable128()
  const keys: Uint32Array[] = []
  for (let i = 0; i < 50_000; i++) {
    const k = new Uint32Array(4)
    for (let w = 0; w < 4; w++) k[w] = Math.floor(rand() * 2 ** 32)
    if (i === 7) k.fill(0)
    keys.push(k)
    table.add(k, k)
  }
  let ok = 0
  for (const k of keys) if (table.has(k) && table.holds(k, k)) ok++
  t.equal(ok, keys.length, 'every key found with its value, the all-zero key too')
  t.equal(table.holds(keys[3]!, keys[4]!), false, 'another value')
  const absent = new Uint32Array(4).fill(0xabababab)
  t.equal(table.has(absent), false)
  t.equal(table.holds(absent, absent), undefined)
})

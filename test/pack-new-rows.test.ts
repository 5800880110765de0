import t from 'tap'
import { HashTable128, NewRows } from '../src/formats/pack/new-rows.js'
import { PACK_TABLES, canonicalRowText, rowComparator } from '../src/formats/pack/table-schemas.js'
import { latticeTilingRows } from '../src/formats/pack/tilings.js'
import { seededRandom } from '../src/sim/random.js'

const rand = seededRandom(17)
const word = () => Array.from({ length: 1 + Math.floor(rand() * 6) }, () => 'aéz😀B'[Math.floor(rand() * 5)]).join('')
const sighting = () => ({
  pattern_id: word(), rule: word(), publisher: 'SHA256:x', source: word(), source_kind: null, count: Math.floor(rand() * 5), soups: 1,
  first_seen: '2026-11-11T00:00:00Z', last_seen: '2026-11-11T00:00:00Z',
})

async function collect(rows: NewRows, added: object[], parents: object[] = []) {
  for (const p of parents) rows.parent(p as Record<string, unknown>)
  for (const r of added) await rows.add(r as Record<string, unknown>)
  await rows.end()
}

t.test('each chunk is sorted as a part must be; rows the parents have are left out', async (t) => {
  const schema = PACK_TABLES.sightings
  const chunks: { part: string; row: Record<string, unknown> }[][] = []
  const rows = new NewRows(schema, async (c) => { chunks.push(c) }, 20_000)
  const all = Array.from({ length: 3000 }, sighting)
  const parents = all.filter((_, i) => i % 5 === 0)
  await collect(rows, all, parents)
  t.ok(chunks.length > 5, `several chunks (${chunks.length})`)
  const cmp = rowComparator(schema)
  t.ok(chunks.every((c) => c.every((r, i) => i === 0 || cmp(c[i - 1]!.row, r.row) <= 0)), 'every chunk in the table\'s order')
  const written = chunks.flat().map((r) => canonicalRowText(schema, r.row))
  const parentTexts = new Set(parents.map((p) => canonicalRowText(schema, p)))
  t.same(written.sort(), all.map((r) => canonicalRowText(schema, r)).filter((x) => !parentTexts.has(x)).sort(), 'every new event row, none a parent has')
})

t.test('a fact key: kept once, and refused when given two different rows', async (t) => {
  const schema = PACK_TABLES.tilings
  const out: Record<string, unknown>[] = []
  const rows = new NewRows(schema, async (c) => { out.push(...c.map((x) => x.row)) }, 10)
  const tilings = latticeTilingRows() as unknown as Record<string, unknown>[]
  await collect(rows, [...tilings, ...tilings], [tilings[0]!])
  t.same(out.map((r) => r['pin_key']).sort(), tilings.slice(1).map((r) => r['pin_key']).sort(), 'once each, and not the parent\'s')
  const square = out.find((r) => r['pin_key'] === 'square')
  t.ok(square && Object.is((square['a2'] as number[])[0], -0), 'a row holding -0 keeps it (the pin covers its sign)')
  const conflict = new NewRows(schema, async () => {})
  await conflict.add(tilings[1]!)
  await t.rejects(conflict.add({ ...tilings[1]!, name: 'another name' }), { code: 'pack.fact-conflict' })
})

t.test('HashTable128 keeps every key and its value through growth', async (t) => {
  const table = new HashTable128()
  const keys: Buffer[] = []
  for (let i = 0; i < 50_000; i++) {
    const k = Buffer.from(new ArrayBuffer(16))
    for (let b = 0; b < 16; b++) k[b] = Math.floor(rand() * 256)
    if (i === 7) k.fill(0)
    keys.push(k)
    table.add(k, k)
  }
  let ok = 0
  for (const k of keys) { const v = table.get(k); if (v && Buffer.from(v.buffer, v.byteOffset, 16).equals(k)) ok++ }
  t.equal(ok, keys.length, 'every key found with its value, the all-zero key too')
  const absent = Buffer.from(new ArrayBuffer(16)).fill(0xab)
  t.equal(table.get(absent), undefined)
})

import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { existsSync } from 'node:fs'
import { PipeError } from '../src/core/errors.js'
import { HashTable128, NewRowsJob, type NewRowsLimits } from '../src/formats/pack/publish/new-rows.js'
import { WRITE_CODES } from '../src/formats/pack/tables/parquet-write.js'
import { SpillSort } from '../src/formats/pack/publish/spill-sort.js'
import { readPartRows } from '../src/formats/pack/tables/parquet-read.js'
import { PACK_TABLES, canonicalRowText, rowComparator, validateRow, rowValidator, type TableSchema } from '../src/formats/pack/tables/table-schemas.js'
import { latticeTilingRows } from '../src/formats/pack/geometry/tilings.js'
import { seededRandom } from '../src/sim/random.js'
import { patternRows } from './pack-parquet-fixtures.js'

const dir = await mkdtemp(join(tmpdir(), 'pack-new-rows-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

const rand = seededRandom(17)
const CHARS = ['a', 'é', 'z', '😀', 'B']
const word = () => Array.from({ length: 1 + Math.floor(rand() * 6) }, () => CHARS[Math.floor(rand() * CHARS.length)]).join('')
const sighting = () => ({
  pattern_id: word(), rule: word(), publisher: 'SHA256:x', source: word(), source_kind: null, count: Math.floor(rand() * 5), soups: 1,
  first_seen: '2026-11-11T00:00:00Z', last_seen: '2026-11-11T00:00:00Z',
})

/** Runs rows through a NewRowsJob (on this thread, or on the encoding thread) and reads its parts back. */
async function collect(schema: TableSchema, added: object[], parents: object[] = [], opts: NewRowsLimits & { encodeOnThread?: boolean; dir?: string; callerHashesFromBacklog?: number } = {}) {
  const rows = new NewRowsJob(schema, { ...opts, dir: opts.dir ?? dir, encodeOnThread: opts.encodeOnThread ?? false })
  const measure = rowValidator(schema)
  for (const p of parents) await rows.parent(p as Record<string, unknown>)
  // Each added row as from line 1, 2, ... of a records file, as a fact conflict names it.
  for (const [i, r] of added.entries()) await rows.add(r as Record<string, unknown>, measure(r, 0, []), i + 1)
  const parts = []
  for (const p of await rows.finish()) {
    const read = await readPartRows(p.path, schema)
    if (!read.ok) throw new Error(read.findings[0]!.detail)
    parts.push({ partition: p.partition, rows: read.rows, sha256: p.sha256 })
  }
  return parts
}

t.test('each chunk is sorted as a part must be; rows the parents have are left out', async (t) => {
  const schema = PACK_TABLES.sightings
  const all = Array.from({ length: 3000 }, sighting)
  const parents = all.filter((_, i) => i % 5 === 0)
  const parts = await collect(schema, all, parents, { maxChunkBytes: 20_000 })
  t.ok(parts.length > 5, `several chunks, a part each (the table is unpartitioned): ${parts.length}`)
  const cmp = rowComparator(schema)
  t.ok(parts.every((p) => p.rows.every((r, i) => i === 0 || cmp(p.rows[i - 1]!, r) <= 0)), 'every part in the table\'s order, ties by text')
  const written = parts.flatMap((p) => p.rows.map((r) => canonicalRowText(schema, r)))
  const parentTexts = new Set(parents.map((p) => canonicalRowText(schema, p)))
  t.same(written.sort(), all.map((r) => canonicalRowText(schema, r)).filter((x) => !parentTexts.has(x)).sort(), 'every new event row, none a parent has')
  const threaded = await collect(schema, all, parents, { maxChunkBytes: 20_000, encodeOnThread: true })
  t.same(threaded.map((p) => p.sha256), parts.map((p) => p.sha256), 'on the encoding thread, the same parts')
})

t.test('a chunk ends at its row limit as at its text limit: a row group\'s rows, one part of one partition', async (t) => {
  const schema = PACK_TABLES.sightings
  const all = Array.from({ length: 1000 }, sighting)
  const parts = await collect(schema, all, [], { maxChunkRows: 128 })
  t.same(parts.map((p) => p.rows.length), [...Array.from({ length: 7 }, () => 128), 1000 - 7 * 128], 'chunks of 128 rows, the last of the rest')
  const roomy = await collect(schema, all, [], { maxChunkRows: 128, maxChunkBytes: 20_000 })
  t.ok(roomy.length > parts.length && roomy.every((p) => p.rows.length <= 128), `and of less where their text ends them first (${roomy.length} parts)`)
})

t.test('patterns: a key is its content id\'s own bits, as a hash of it would be', async (t) => {
  const schema = PACK_TABLES.patterns
  const rows = patternRows(6) as Record<string, unknown>[]
  const out = (await collect(schema, [...rows, ...rows], [rows[0]!, rows[3]!])).flatMap((p) => p.rows)
  t.same(out.map((r) => r['id']), [1, 2, 4, 5].map((i) => rows[i]!['id']), 'once each, and not the parents\'')
  await t.rejects(collect(schema, [{ ...rows[1]!, identity: 'another' }], [rows[1]!]), { code: 'pack.fact-conflict' }, 'against a parent\'s row')
  await t.rejects(collect(schema, [rows[2]!, { ...rows[2]!, identity: 'another' }]), { code: 'pack.fact-conflict' }, 'twice in this publish')
  const odd = { ...rows[4]!, id: (rows[4]!['id'] as string).toUpperCase() }
  const kept = (await collect(schema, [rows[4]!], [odd])).flatMap((p) => p.rows)
  t.same(kept.map((r) => r['id']), [rows[4]!['id']], 'a parent\'s id that is not a content id keeps out no row')
  await t.rejects(collect(schema, [odd]), /not a content id/, 'a new row\'s id is always a content id')
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
  const parts = await collect(schema, all, [], { maxChunkBytes: limit })
  t.same(parts.map((p) => p.rows.length), expected, 'the same cuts as counting each text\'s length (the words hold é and 😀)')
})

t.test('partitions: a chunk writes a part for each, in partition order', async (t) => {
  const schema = PACK_TABLES.ants
  const ant = (n: number) => ({
    id: `ant-${String(n).padStart(32, '0')}`, identity: `jetcarp-ant-v1\n${n}`, pin_key: 'k', pin: 'p', rule: 'RL', kind: 'string', family: 'ant', semantics: '1', states: 1, colors: 2,
    start: '"empty"', outcome: 'highway', period: null, dx: null, dy: null, onset: null, speed: n % 3 ? -0 : 0.5, steps: 10n, cells: 3, run: '{}', tiling_group: ['hex', 'square', 'tri'][n % 3]!,
  })
  const all = Array.from({ length: 30 }, (_, n) => ant(29 - n))
  t.same(all.map((r) => validateRow(schema, r, 0)).flat(), [], 'valid rows')
  const parts = await collect(schema, all)
  t.same(parts.map((p) => p.partition), [{ tiling_group: 'hex' }, { tiling_group: 'square' }, { tiling_group: 'tri' }])
  for (const p of parts) t.ok(p.rows.every((r, i) => i === 0 || (r['id'] as string) > (p.rows[i - 1]!['id'] as string)), `${p.partition['tiling_group']}: by id`)
  t.ok(parts.flatMap((p) => p.rows).filter((r) => r['speed'] !== 0.5).every((r) => Object.is(r['speed'], -0)), 'a float64 -0 is written -0')
})

t.test('a fact key: kept once, and refused when given two different rows', async (t) => {
  const schema = PACK_TABLES.tilings
  const tilings = latticeTilingRows() as unknown as Record<string, unknown>[]
  const parts = await collect(schema, [...tilings, ...tilings], [tilings[0]!], { maxChunkBytes: 10 })
  const out = parts.flatMap((p) => p.rows)
  t.same(out.map((r) => r['pin_key']).sort(), tilings.slice(1).map((r) => r['pin_key']).sort(), 'once each, and not the parent\'s')
  const square = out.find((r) => r['pin_key'] === 'square')
  t.ok(square && Object.is((square['a2'] as number[])[0], -0), 'a row holding -0 keeps it (the pin covers its sign)')
  const other = { ...tilings[1]!, name: 'another name' }
  const refused = await mkdtemp(join(dir, 'refused-'))
  const many = [...tilings, ...tilings.map((r) => ({ ...r, name: `${r['name']} again` }))]
  await t.rejects(collect(schema, many, [], { dir: refused, maxChunkBytes: 10 }), { code: 'pack.fact-conflict', exitCode: 2 })
  await t.rejects(collect(schema, many, [], { dir: refused, maxChunkBytes: 10, encodeOnThread: true }), { code: 'pack.fact-conflict', exitCode: 2 }, 'found on the encoding thread, the same failure')
  t.same(await readdir(refused), [], 'a refused job leaves no file, though it wrote parts before the conflict')
  await t.rejects(collect(schema, [other], [tilings[1]!]), { code: 'pack.fact-conflict' }, 'against a parent\'s row')
  const signed = { ...tilings[1]!, a1: (tilings[1]!['a1'] as number[]).map((x) => (x === 0 ? -0 : x)) }
  const both = await collect(schema, [tilings[1]!, signed])
  t.equal(both.flatMap((p) => p.rows).length, 1, 'a row that differs only by the sign of a zero is the same row, as its text is')
})

t.test('rows hashed by the caller or by the encoding thread: the same parts, the same refusals', async (t) => {
  const modes = [{ name: 'the caller', callerHashesFromBacklog: 0 }, { name: 'the thread', callerHashesFromBacklog: Infinity }]
  const sightings = Array.from({ length: 3000 }, sighting)
  const tilings = latticeTilingRows() as unknown as Record<string, unknown>[]
  const signed = { ...tilings[1]!, a1: (tilings[1]!['a1'] as number[]).map((x) => (x === 0 ? -0 : x)) }
  const parents = sightings.filter((_, i) => i % 7 === 0)
  const parentTexts = new Set(parents.map((r) => canonicalRowText(PACK_TABLES.sightings, r)))
  const inline = await collect(PACK_TABLES.sightings, sightings, parents, { maxChunkBytes: 20_000 })
  const written: string[][] = []
  for (const { name, callerHashesFromBacklog } of modes) {
    const opts = { maxChunkBytes: 20_000, encodeOnThread: true, callerHashesFromBacklog }
    const events = await collect(PACK_TABLES.sightings, sightings, parents, opts)
    t.same(events.map((p) => p.sha256), inline.map((p) => p.sha256), `${name}: the parts written on the caller's thread`)
    t.notOk(events.some((p) => p.rows.some((r) => parentTexts.has(canonicalRowText(PACK_TABLES.sightings, r)))), `${name}: no event row a parent has`)
    const facts = await collect(PACK_TABLES.tilings, [...tilings, signed, ...tilings], [tilings[0]!], opts)
    t.equal(facts.flatMap((p) => p.rows).length, tilings.length - 1, `${name}: a fact once, a row with -0 the same as with +0`)
    await t.rejects(collect(PACK_TABLES.tilings, [...tilings, { ...tilings[2]!, name: 'another' }], [], opts), { code: 'pack.fact-conflict', exitCode: 2 }, `${name}: a conflict is refused`)
    await t.rejects(collect(PACK_TABLES.tilings, [{ ...tilings[2]!, name: 'another' }], [tilings[2]!], opts), { code: 'pack.fact-conflict', exitCode: 2 }, `${name}: a conflict with a parent is refused`)
    written.push([...events, ...facts].map((p) => p.sha256))
  }
  t.same(written[1], written[0], 'the same parts')
})

t.test('rows go to the thread once their text reaches the staging limit, as they do at its row limit: the same parts', async (t) => {
  const sightings = Array.from({ length: 300 }, sighting)
  const measure = rowValidator(PACK_TABLES.sightings)
  const units = sightings.map((r) => measure(r, 0, []))
  // A staging measures its rows' RFC 8785 texts in UTF-16 units, as a chunk does.
  const limit = sightings.slice(0, 10).reduce((a, r) => a + canonicalRowText(PACK_TABLES.sightings, r).length, 0)
  const rows = new NewRowsJob(PACK_TABLES.sightings, { dir, encodeOnThread: true, stageTextUnits: limit })
  // add() gives a promise exactly when what is staged goes to the thread.
  const posted: number[] = []
  for (const [i, r] of sightings.entries()) {
    const sent = rows.add(r, units[i]!, i + 1)
    if (sent) {
      posted.push(i)
      await sent
    }
  }
  await rows.abort()
  const expected: number[] = []
  let text = 0
  for (const [i, r] of sightings.entries()) {
    text += canonicalRowText(PACK_TABLES.sightings, r).length
    if (text >= limit) {
      expected.push(i)
      text = 0
    }
  }
  t.equal(posted[0], 9, 'the first staging goes once ten rows\' text reach the limit')
  t.same(posted, expected, `and each after it once its own rows' text does (${expected.length} of 300 rows)`)
  const byText = await collect(PACK_TABLES.sightings, sightings, [], { encodeOnThread: true, stageTextUnits: limit, maxChunkBytes: 20_000 })
  const byRows = await collect(PACK_TABLES.sightings, sightings, [], { encodeOnThread: true, maxChunkBytes: 20_000 })
  t.same(byText.map((p) => p.sha256), byRows.map((p) => p.sha256), 'the parts are the same as with one staging of every row')
})

t.test('a failure on the encoding thread: one line with its code, every call after it refused, no file left', async (t) => {
  const schema = PACK_TABLES.sightings
  const gone = await mkdtemp(join(dir, 'gone-'))
  const rows = new NewRowsJob(schema, { dir: gone, maxChunkBytes: 2_000 })
  const measure = rowValidator(schema)
  const all = Array.from({ length: 9000 }, sighting)
  for (const r of all.slice(0, 4500)) await rows.add(r, measure(r, 0, []))
  // The thread may be writing a part into the folder as it goes: ENOTEMPTY, tried again (1 run in 6 here).
  await rm(gone, { recursive: true, maxRetries: 20, retryDelay: 5 })
  const failed = await (async () => {
    for (const r of all.slice(4500)) await rows.add(r, measure(r, 0, []))
    return rows.finish()
  })().then(() => undefined, (e: unknown) => e as PipeError)
  t.ok(failed instanceof PipeError, 'refused')
  t.equal(failed!.code, WRITE_CODES.io)
  t.notOk(failed!.oneLine().includes('\n'), `one line: ${failed!.oneLine()}`)
  await t.rejects(rows.finish(), { code: WRITE_CODES.io }, 'and so is what comes after')
  await rows.abort()
  t.notOk(existsSync(gone), 'nothing written where the folder was')
})

t.test('HashTable128 keeps every key and its value through growth, made small, as large as its keys, or larger', async (t) => {
  const n = 50_000
  // Entries side by side, each its key and its value (the key again), as the parents' hashes come.
  const entries = new Uint32Array(8 * n)
  for (let i = 0; i < n; i++) for (let w = 0; w < 4; w++) entries[8 * i + w] = entries[8 * i + 4 + w] = i === 7 ? 0 : Math.floor(rand() * 2 ** 32)
  for (const expected of [0, 3_000, n - 1, n, 5 * n]) {
    const table = new HashTable128(expected)
    for (let i = 0; i < n; i++) table.add(entries, 8 * i)
    let ok = 0
    for (let i = 0; i < n; i++) if (table.has(entries, 8 * i) && table.holds(entries, 8 * i)) ok++
    t.equal(ok, n, `made for ${expected}: every key found with its value, the all-zero key too`)
    t.equal(table.size, n)
    const otherValue = entries.slice(8 * 3, 8 * 3 + 8)
    otherValue[4]! ^= 1
    t.equal(table.holds(otherValue, 0), false, 'another value')
    const absent = new Uint32Array(8).fill(0xabababab)
    t.equal(table.has(absent, 0), false)
    t.equal(table.holds(absent, 0), undefined)
  }
})

t.test('keys beyond the in-memory table spill to disk: the same rows, sorted parts, the same bytes again, and the same refusals as with room for every key', async (t) => {
  // A table of room for `seenCap` keys, spilled runs of `spillRecords` keys: 3 makes more runs than one merge takes (MERGE_FAN_IN).
  const spills = [{ seenCap: 0, spillRecords: 3 }, { seenCap: 40, spillRecords: 3 }, { seenCap: 700, spillRecords: 100 }, { seenCap: 2500, spillRecords: 50 }]
  const sightings = Array.from({ length: 3000 }, sighting)
  const sightingParents = [...sightings.filter((_, i) => i % 5 === 0), ...sightings.slice(0, 9)]
  const patterns = patternRows(400) as Record<string, unknown>[]
  const patternInput = [...patterns.slice(0, 250), ...patterns.slice(100, 400), ...patterns.slice(390)]
  const patternParents = patterns.filter((_, i) => i % 3 === 0)
  const tilings = latticeTilingRows() as unknown as Record<string, unknown>[]
  const cases = [
    { name: 'event rows, some a parent has, some given twice', schema: PACK_TABLES.sightings, added: sightings.concat(sightings.slice(100, 200)), parents: sightingParents, maxChunkBytes: 20_000 },
    { name: 'patterns keyed by content id, given twice, a third a parent\'s', schema: PACK_TABLES.patterns, added: patternInput, parents: patternParents, maxChunkBytes: 30_000 },
    { name: 'a fact table keyed by hashes of its key', schema: PACK_TABLES.tilings, added: [...tilings, ...tilings], parents: [tilings[0]!], maxChunkBytes: 10 },
  ]
  // Rows decided at once are placed at once and the rest after them, so a spilled table's parts may split its rows otherwise.
  const rowsOf = (schema: TableSchema, parts: { rows: Record<string, unknown>[] }[]) => parts.flatMap((p) => p.rows.map((r) => canonicalRowText(schema, r))).sort()
  for (const c of cases) {
    const roomy = await collect(c.schema, c.added, c.parents, { maxChunkBytes: c.maxChunkBytes })
    t.ok(roomy.length > 1, `${c.name}: several parts (${roomy.length})`)
    const cmp = rowComparator(c.schema)
    for (const limits of spills) {
      const spilled = await mkdtemp(join(dir, 'spilled-'))
      const parts = await collect(c.schema, c.added, c.parents, { maxChunkBytes: c.maxChunkBytes, ...limits, dir: spilled })
      t.same(rowsOf(c.schema, parts), rowsOf(c.schema, roomy), `${c.name}, ${JSON.stringify(limits)}: the same rows`)
      t.ok(parts.every((p) => p.rows.every((r, i) => i === 0 || cmp(p.rows[i - 1]!, r) <= 0)), 'each part sorted')
      const again = await collect(c.schema, c.added, c.parents, { maxChunkBytes: c.maxChunkBytes, ...limits, dir: spilled })
      t.same(again.map((p) => p.sha256), parts.map((p) => p.sha256), 'the same parts again, byte for byte')
      t.same((await readdir(spilled)).filter((f) => f.includes('spill')), [], 'no spill file left')
    }
    const inline = await collect(c.schema, c.added, c.parents, { maxChunkBytes: c.maxChunkBytes, seenCap: 10, spillRecords: 7 })
    const threaded = await collect(c.schema, c.added, c.parents, { maxChunkBytes: c.maxChunkBytes, seenCap: 10, spillRecords: 7, encodeOnThread: true })
    t.same(threaded.map((p) => p.sha256), inline.map((p) => p.sha256), `${c.name}: spilled on the encoding thread, the same parts as on the caller's`)
    t.same(rowsOf(c.schema, threaded), rowsOf(c.schema, roomy), 'and the same rows')
  }

  const other = (r: Record<string, unknown>, name: string) => ({ ...r, identity: name })
  for (const limits of spills) {
    const refused = await mkdtemp(join(dir, 'refused-spill-'))
    const opts = { ...limits, dir: refused, maxChunkBytes: 30_000 }
    // Two conflicts: the first in the order rows came is the one named, as without a spill.
    const twice = [...patterns.slice(0, 300), other(patterns[250]!, 'another'), other(patterns[5]!, 'another')]
    await t.rejects(collect(PACK_TABLES.patterns, twice, patternParents, opts), { code: 'pack.fact-conflict', exitCode: 2, message: new RegExp(`id "${patterns[250]!['id']}"`), location: { line: 301 } }, `${JSON.stringify(limits)}: the first conflict, within this publish, at the later row's line`)
    await t.rejects(collect(PACK_TABLES.patterns, [...patterns.slice(1, 300), other(patterns[0]!, 'another')], patternParents, opts), { code: 'pack.fact-conflict', message: new RegExp(`id "${patterns[0]!['id']}"`), location: { line: 300 } }, `${JSON.stringify(limits)}: against a parent's row, at the record's line`)
    await t.rejects(collect(PACK_TABLES.tilings, [...tilings, { ...tilings[2]!, name: 'another' }], [], { ...limits, dir: refused }), { code: 'pack.fact-conflict' }, `${JSON.stringify(limits)}: a fact table's conflict`)
    t.same(await readdir(refused), [], 'a refused job leaves no file, spilled or written')
  }
})

t.test('SpillSort: records in order through runs and merge passes, whatever the buffer', async (t) => {
  const words = 5
  const cases: { n: number; buffer: number; spread?: boolean }[] = [{ n: 0, buffer: 4 }, { n: 1, buffer: 4 }, { n: 1000, buffer: 2000 }, { n: 1000, buffer: 1000 }, { n: 5000, buffer: 7 }, { n: 333, buffer: 1 }]
  // First words spread like the hashes spilled keys start with: a run's buckets (sortBuffer) hold a few records each.
  for (const { n, buffer, spread } of [...cases, { n: 20_000, buffer: 20_000, spread: true }, { n: 20_000, buffer: 6_000, spread: true }]) {
    const folder = await mkdtemp(join(dir, 'sort-'))
    const sort = new SpillSort(folder, 'x-', words, 3, buffer)
    const records: number[][] = []
    for (let i = 0; i < n; i++) {
      // Few values a word, so that records tie on early words and are ordered by later ones; or spread.
      const first = spread ? Math.floor(rand() * 2 ** 32) : Math.floor(rand() * 4) * 0x40000000 + 7
      const r = [first, Math.floor(rand() * 3), i, Math.floor(rand() * 2 ** 32), i]
      records.push(r)
      const wait = sort.push(Uint32Array.from(r), 0)
      if (wait) await wait
    }
    const out: number[][] = []
    for await (const { words: w, count } of sort.sorted(64)) for (let i = 0; i < count; i++) out.push([...w.subarray(i * words, i * words + words)])
    const expected = records.slice().sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!)
    t.same(out, expected, `${n} records${spread ? ' (first words spread)' : ''}, ${buffer} a run (${Math.ceil(n / buffer)} runs): every record, in order`)
    t.same(await readdir(folder), [], 'every run removed')
  }
})

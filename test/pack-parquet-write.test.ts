/**
 * The pack part writer (src/formats/pack/tables/parquet-write.ts): every table schema round trips exactly through
 * our reader and through DuckDB (column types and values); the same rows give the same bytes; statistics,
 * column and offset indexes on every column chunk, single-page ones included (parsed back, and used by
 * hyparquet to read a row range); zstd, v1 pages, no key-value metadata, created_by; row groups cut at
 * 16,384 rows and at 32 MiB of row text; parts closed at their size limit; refusals.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance, DuckDBListValue, DuckDBStructValue, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api'
import { parquetMetadata, parquetReadObjects, readColumnIndex, readOffsetIndex, type FileMetaData } from 'hyparquet'
import t from 'tap'
import { decompress } from 'zstd-napi'
import { PipeError } from '../src/core/errors.js'
import { MAX_ROW_GROUP_ROWS, MAX_ROW_GROUP_TEXT_BYTES, PACK_CREATED_BY, PackPartWriter, WRITE_CODES, type WrittenPart } from '../src/formats/pack/tables/parquet-write.js'
import { openPart, partFacts, READ_CODES, READ_LIMITS, readPartRows } from '../src/formats/pack/tables/parquet-read.js'
import { EXPLORE_RUNS_SCHEMA, EXPLORE_SCORES_SCHEMA, PACK_TABLES, ROW_CODES, canonicalRowText, rowComparator, validateRow, type PackType, type TableSchema } from '../src/formats/pack/tables/table-schemas.js'
import { latticeTilingRows } from '../src/formats/pack/geometry/tilings.js'
import { penroseTilingsRow } from '../src/formats/pack/geometry/penrose.js'
import { ALL_SCHEMAS, asRead, exact, patternRows, samplePartition, sampleRows } from './pack-parquet-fixtures.js'

const dir = await mkdtemp(join(tmpdir(), 'pack-parquet-write-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

async function writeParts(schema: TableSchema, rows: readonly object[], opts: { batch?: number; partition?: Record<string, string>; maxRowGroupRows?: number; maxPartBytes?: number } = {}): Promise<WrittenPart[]> {
  const w = new PackPartWriter(schema, { dir, partition: opts.partition ?? samplePartition(schema, rows as Record<string, unknown>[]), maxRowGroupRows: opts.maxRowGroupRows, maxPartBytes: opts.maxPartBytes })
  const batch = opts.batch ?? rows.length
  for (let i = 0; i < rows.length; i += batch) await w.write(rows.slice(i, i + batch))
  return w.finish()
}

async function writeOne(schema: TableSchema, rows: readonly object[], opts: Parameters<typeof writeParts>[2] = {}): Promise<WrittenPart> {
  const parts = await writeParts(schema, rows, opts)
  if (parts.length !== 1) throw new Error(`expected one part, got ${parts.length}`)
  return parts[0]!
}

function footer(bytes: Buffer): FileMetaData {
  return parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer)
}

const written = new Map<string, WrittenPart>()
for (const s of ALL_SCHEMAS) written.set(s.name, await writeOne(s, sampleRows(s)))

t.test('every schema round trips exactly through the reader', async (t) => {
  for (const s of ALL_SCHEMAS) {
    const part = written.get(s.name)!
    const rows = sampleRows(s)
    const read = await readPartRows(part.path, s)
    if (!read.ok) {
      t.fail(`${s.name}: ${JSON.stringify(read.findings)}`)
      continue
    }
    t.equal(exact(read.rows), exact(rows.map((r) => asRead(s, r))), `${s.name}: ${rows.length} rows exactly`)
    t.equal(part.rows, rows.length)
    t.equal(part.first, String(rows[0]![s.sortColumns[0]!]), `${s.name}: first`)
    t.equal(part.last, String(rows.at(-1)![s.sortColumns[0]!]), `${s.name}: last`)
    const bytes = await readFile(part.path)
    t.equal(part.bytes, bytes.length, `${s.name}: bytes`)
    t.equal(part.sha256, createHash('sha256').update(bytes).digest('hex'), `${s.name}: sha256`)
  }
})

t.test('the writer counts each part\'s decoded size as the reader counts it while decoding', async (t) => {
  const count = async (part: WrittenPart, schema: TableSchema): Promise<{ all: number; largest: number }> => {
    const opened = await openPart(part.path, schema)
    if (!opened.ok) throw new Error(JSON.stringify(opened.findings))
    let [before, largest] = [0, 0]
    try {
      for await (const _ of opened.part.batches()) {
        largest = Math.max(largest, opened.part.decodedBytes - before)
        before = opened.part.decodedBytes
      }
      return { all: opened.part.decodedBytes, largest }
    } finally {
      await opened.part.close()
    }
  }
  for (const s of ALL_SCHEMAS) {
    const part = written.get(s.name)!
    t.equal(part.decodedBytes, (await count(part, s)).all, `${s.name}: ${part.decodedBytes} bytes`)
  }
  // Several row groups, lists, nulls and dictionary and PLAIN strings.
  const rows = patternRows(3000)
  const part = await writeOne(PACK_TABLES.patterns, rows, { maxRowGroupRows: 700 })
  const read = await count(part, PACK_TABLES.patterns)
  t.equal(part.decodedBytes, read.all, 'patterns in row groups of 700')
  t.equal(part.largestRowGroupDecodedBytes, read.largest, 'and the largest row group')
  t.ok(read.largest < read.all, 'of several')
})

/** DuckDB's name for a schema type (its own quotes around keyword-like names are dropped before comparing). */
function duckType(type: PackType): string {
  switch (type.kind) {
    case 'string':
    case 'time':
      return 'VARCHAR'
    case 'int32':
      return 'INTEGER'
    case 'int64':
      return 'BIGINT'
    case 'bool':
      return 'BOOLEAN'
    case 'float64':
      return 'DOUBLE'
    case 'list':
      return `${duckType(type.element)}[]`
    case 'struct':
      return `STRUCT(${type.fields.map((f) => `${f.name} ${duckType(f.type)}`).join(', ')})`
  }
}

function plain(v: DuckDBValue): unknown {
  if (v instanceof DuckDBListValue) return v.items.map(plain)
  if (v instanceof DuckDBStructValue) return Object.fromEntries(Object.entries(v.entries).map(([k, x]) => [k, plain(x)]))
  return v
}

t.test('the tilings rows tilings.ts makes (lattice catalogue, Penrose) write and read back exactly', async (t) => {
  const rows = [...latticeTilingRows(), penroseTilingsRow(`sha256:${'ab'.repeat(32)}`)].sort(rowComparator(PACK_TABLES.tilings))
  rows.forEach((row, i) => t.same(validateRow(PACK_TABLES.tilings, row, i), [], `${row.pin_key}: a valid row`))
  const read = await readPartRows((await writeOne(PACK_TABLES.tilings, rows)).path, PACK_TABLES.tilings)
  t.equal(read.ok && exact(read.rows), exact(rows.map((r) => asRead(PACK_TABLES.tilings, r as unknown as Record<string, unknown>))), `${rows.length} rows, -0 and all`)
})

t.test('a row whose page levels outgrow the page buffer (1.3 M list elements in one page) reads back, here and in DuckDB', async (t) => {
  // One row cannot be cut into pages, so its 1.3 M offsets are one page; writing their levels grows the
  // page's buffer, whose old view once took the levels' length (a part every reader refused).
  const n = 1_300_000
  const offsets = Array.from({ length: n }, (_, i) => ({ di: (i * 7919) % 100_003, dj: -i, k: i % 3 }))
  const row = { ...latticeTilingRows()[0]!, edge: [offsets] }
  const path = (await writeOne(PACK_TABLES.tilings, [row])).path
  t.match(await readPartRows(path, PACK_TABLES.tilings), { ok: false, findings: [{ code: READ_CODES.rowTooLarge, detail: /^row 0 holds \d+ list elements, more than the 1048576 a row is built from$/ }] }, 'the reader does not build a row past its bound')
  const read = await readPartRows(path, PACK_TABLES.tilings, { ...READ_LIMITS, rowListItems: 2 ** 21 })
  const edge = read.ok ? (read.rows[0]!['edge'] as { di: number; dj: number; k: number }[][])[0]! : []
  t.equal(edge.length, n, 'with a larger bound: every offset')
  t.ok(edge.every((o, i) => o.di === offsets[i]!.di && o.dj === offsets[i]!.dj && o.k === offsets[i]!.k), 'each as written')
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  t.teardown(() => {
    conn.closeSync()
    db.closeSync()
  })
  const [duck] = (await conn.runAndReadAll(`SELECT count(*) AS n, sum(e.dj) AS dj FROM (SELECT unnest(edge[1]) AS e FROM read_parquet('${path}'))`)).getRowObjectsJson()
  t.same({ n: Number(duck!['n']), dj: Number(duck!['dj']) }, { n, dj: -(n * (n - 1)) / 2 }, 'DuckDB reads the same offsets')
})

t.test('DuckDB reads every table\'s part with the expected types and exact values', async (t) => {
  const db = await DuckDBInstance.create(':memory:')
  const conn: DuckDBConnection = await db.connect()
  t.teardown(() => {
    conn.closeSync()
    db.closeSync()
  })
  for (const s of ALL_SCHEMAS) {
    const path = written.get(s.name)!.path
    const described = (await conn.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${path}')`)).getRowObjectsJson()
    t.same(
      described.map((r) => `${String(r['column_name'])} ${String(r['column_type']).replaceAll('"', '')}`),
      s.columns.map((c) => `${c.name} ${duckType(c.type)}`),
      `${s.name}: column types`,
    )
    const rows = (await conn.runAndReadAll(`SELECT * FROM read_parquet('${path}')`)).getRowObjects().map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, plain(v)])))
    t.equal(exact(rows), exact(sampleRows(s).map((r) => asRead(s, r))), `${s.name}: values`)
  }
})

t.test('the same rows give the same bytes, however they are batched', async (t) => {
  for (const s of [PACK_TABLES.patterns, PACK_TABLES.tilings, EXPLORE_RUNS_SCHEMA]) {
    const rows = sampleRows(s)
    const again = await writeOne(s, rows)
    const oneByOne = await writeOne(s, rows, { batch: 1 })
    t.equal(again.sha256, written.get(s.name)!.sha256, `${s.name}: twice`)
    t.equal(oneByOne.sha256, written.get(s.name)!.sha256, `${s.name}: one row per write`)
    t.same(await readFile(again.path), await readFile(written.get(s.name)!.path))
  }
  const many = patternRows(3000)
  const a = await writeOne(PACK_TABLES.patterns, many, { batch: 1000 })
  const b = await writeOne(PACK_TABLES.patterns, many, { batch: 7 })
  t.equal(a.sha256, b.sha256, '3,000 patterns in batches of 1,000 and of 7')
  const here = new PackPartWriter(PACK_TABLES.patterns, { dir, partition: { class_group: 'spaceship', tiling_group: 'k1' }, encodeOnThread: false })
  await here.write(many)
  const [c] = await here.finish()
  t.equal(c!.sha256, a.sha256, 'encoded on the caller\'s thread: the same bytes')
})

t.test('zstd, v1 pages, statistics and both page indexes on every chunk, no key-value metadata', async (t) => {
  for (const s of ALL_SCHEMAS) {
    const facts = await partFacts(written.get(s.name)!.path)
    if (!facts.ok) {
      t.fail(JSON.stringify(facts.findings))
      continue
    }
    const f = facts.facts
    t.equal(f.createdBy, PACK_CREATED_BY, `${s.name}: created_by`)
    t.equal(f.keyValueMetadata, false, `${s.name}: no key-value metadata`)
    t.equal(f.version, 1)
    const bad = f.chunks.filter((c) => c.codec !== 'ZSTD' || c.pageVersions.join() !== '1' || !c.statistics || !c.columnIndex || !c.offsetIndex)
    t.same(bad, [], `${s.name}: ${f.chunks.length} chunks, each zstd, v1 pages, statistics, column and offset index`)
    t.ok(f.chunks.some((c) => c.dataPages === 1), `${s.name}: single-page chunks among them`)
  }
  const bytes = await readFile(written.get('patterns')!.path)
  t.notOk(bytes.includes(Buffer.from('ARROW:schema')), 'no ARROW:schema')
})

t.test('page indexes parse back and locate the pages; hyparquet reads a row range through them', async (t) => {
  // Runs with 200 KB of text each: the run column takes several pages, the others one.
  const rows = sampleRows(EXPLORE_RUNS_SCHEMA).map((r, i) => ({ ...r, run: `{"soup":"${String(i).padStart(6, '0')}${'ab'.repeat(100_000)}"}` }))
  const part = await writeOne(EXPLORE_RUNS_SCHEMA, rows)
  const bytes = await readFile(part.path)
  const md = footer(bytes)
  const view = (off: bigint | undefined, len: number | undefined) => ({ view: new DataView(bytes.buffer, bytes.byteOffset + Number(off), len), offset: 0 })
  let multi = 0
  for (const chunk of md.row_groups[0]!.columns) {
    const name = chunk.meta_data!.path_in_schema.join('.')
    const element = md.schema.find((e) => e.name === name)!
    const ci = readColumnIndex(view(chunk.column_index_offset, chunk.column_index_length), element)
    const oi = readOffsetIndex(view(chunk.offset_index_offset, chunk.offset_index_length))
    t.equal(ci.null_pages.length, oi.page_locations.length, `${name}: one column index entry per located page`)
    t.equal(oi.page_locations[0]!.offset, chunk.meta_data!.data_page_offset, `${name}: the first page is the first data page`)
    t.equal(oi.page_locations[0]!.first_row_index, 0n)
    const starts = oi.page_locations.map((p) => Number(p.first_row_index))
    for (let p = 0; p < starts.length; p++) {
      const inPage = rows.slice(starts[p], starts[p + 1] ?? rows.length).map((r) => (r as Record<string, unknown>)[name]).filter((v) => v !== null)
      if (inPage.length === 0) {
        t.equal(ci.null_pages[p], true, `${name} page ${p}: a null page`)
        continue
      }
      if (name === 'run') {
        const texts = inPage as string[]
        const min = ci.min_values[p] as unknown as string
        t.ok(texts.some((x) => x.startsWith(min)) && min.length <= 64, `${name} page ${p}: min is a prefix of a value, truncated`)
      } else if (name === 'run_id') {
        t.equal(ci.min_values[p], BigInt(inPage[0] as bigint), `${name} page ${p}: min`)
        t.equal(ci.max_values[p], BigInt(inPage.at(-1) as bigint), `${name} page ${p}: max`)
      }
      t.equal(ci.null_counts![p], BigInt(starts[p + 1] ?? rows.length) - BigInt(starts[p]!) - BigInt(inPage.length), `${name} page ${p}: null count`)
    }
    if (oi.page_locations.length > 1) multi++
  }
  t.equal(multi, 1, 'exactly the run column has several pages')
  t.equal(md.row_groups[0]!.columns[0]!.meta_data!.statistics!.min_value, 1n, 'chunk statistics: min')
  t.equal(md.row_groups[0]!.columns[0]!.meta_data!.statistics!.max_value, 30n, 'chunk statistics: max')
  const file = { byteLength: bytes.length, slice: async (s: number, e?: number) => bytes.buffer.slice(bytes.byteOffset + s, bytes.byteOffset + (e ?? bytes.length)) as ArrayBuffer }
  const got = await parquetReadObjects({ file, rowStart: 20, rowEnd: 23, useOffsetIndex: true, columns: ['run_id', 'run'], compressors: { ZSTD: (b: Uint8Array) => decompress(b) } })
  t.same(got.map((r) => [r['run_id'], (r['run'] as string).slice(0, 15)]), [20, 21, 22].map((i) => [BigInt(i + 1), `{"soup":"0000${i}`]), 'rows 20 to 22 through the offset index')
})

t.test('statistics and column indexes of every row group describe that row group', async (t) => {
  const rows = patternRows(2000)
  const bytes = await readFile((await writeOne(PACK_TABLES.patterns, rows, { maxRowGroupRows: 300 })).path)
  const md = footer(bytes)
  t.equal(md.row_groups.length, 7)
  md.row_groups.forEach((rg, g) => {
    const group = rows.slice(g * 300, (g + 1) * 300)
    const byName = (name: string) => rg.columns.find((c) => c.meta_data!.path_in_schema.join('.') === name)!
    const id = byName('id')
    // ids are 32 hex digits, within the 64-byte truncation: exact.
    t.same([id.meta_data!.statistics!.min_value, id.meta_data!.statistics!.max_value], [group[0]!['id'], group.at(-1)!['id']], `row group ${g}: id min and max`)
    const ci = readColumnIndex({ view: new DataView(bytes.buffer, bytes.byteOffset + Number(id.column_index_offset), id.column_index_length), offset: 0 }, md.schema.find((e) => e.name === 'id')!)
    t.same([ci.min_values[0], ci.max_values[0]], [group[0]!['id'], group.at(-1)!['id']], `row group ${g}: id column index`)
    const cells = group.map((r) => r['cells'] as number)
    t.same([byName('cells').meta_data!.statistics!.min_value, byName('cells').meta_data!.statistics!.max_value], [Math.min(...cells), Math.max(...cells)], `row group ${g}: cells min and max`)
    const speeds = group.map((r) => r['speed'])
    t.equal(byName('speed').meta_data!.statistics!.null_count, BigInt(speeds.filter((x) => x === null).length), `row group ${g}: speed null count`)
  })
})

t.test('dictionary encoding where it helps, PLAIN where it does not', async (t) => {
  const facts = await partFacts((await writeOne(PACK_TABLES.patterns, patternRows(3000))).path)
  if (!facts.ok) return t.fail(JSON.stringify(facts.findings))
  const byColumn = new Map(facts.facts.chunks.filter((c) => c.rowGroup === 0).map((c) => [c.column, c]))
  t.equal(byColumn.get('id')!.dictionaryPage, false, 'unique ids: PLAIN')
  for (const c of ['pin_key', 'class_group', 'phases.list.element.list.element.i', 'period']) t.equal(byColumn.get(c)!.dictionaryPage, true, `${c}: a dictionary`)
  t.same(byColumn.get('pin_key')!.encodings, ['PLAIN', 'RLE_DICTIONARY'])
})

t.test('row groups end at 16,384 rows', async (t) => {
  const rows = Array.from({ length: MAX_ROW_GROUP_ROWS * 2 + 1 }, (_, i) => ({ run_id: i, score: i / 3, model: 'm' }))
  const facts = await partFacts((await writeOne(EXPLORE_SCORES_SCHEMA, rows)).path)
  if (!facts.ok) return t.fail(JSON.stringify(facts.findings))
  t.same(facts.facts.rowGroups.map((g) => g.rows), [16_384, 16_384, 1])
})

t.test('row groups end before their row text passes the limit (32 MiB by default)', async (t) => {
  t.equal(MAX_ROW_GROUP_TEXT_BYTES, 32 * 1024 * 1024)
  // Incompressible text: a part of one repeated string would break the readers' 64x rule (see partFacts).
  const random = () => randomBytes(100_000).toString('hex')
  const rows = Array.from({ length: 40 }, (_, i) => ({ run_id: i, parent: null, identity: null, pattern_id: null, outcome: 'died', generations: 1, population: 2, score: null, run: `"${random()}"` }))
  const limit = 1_000_000
  const text = rows.map((r) => Buffer.byteLength(canonicalRowText(EXPLORE_RUNS_SCHEMA, r)))
  const expected: number[] = []
  for (let i = 0, sum = 0, n = 0; i <= text.length; i++) {
    if (i === text.length || (n > 0 && sum + text[i]! > limit)) {
      expected.push(n)
      sum = 0
      n = 0
    }
    if (i < text.length) {
      sum += text[i]!
      n++
    }
  }
  const w = new PackPartWriter(EXPLORE_RUNS_SCHEMA, { dir, maxRowGroupTextBytes: limit })
  await w.write(rows)
  const [part] = await w.finish()
  const facts = await partFacts(part!.path)
  if (!facts.ok) return t.fail(JSON.stringify(facts.findings))
  t.same(facts.facts.rowGroups.map((g) => g.rows), expected, `row groups of ${expected.join(', ')} rows of about 205 KB`)
  t.ok(expected.length > 5)
})

t.test('parts close at their size limit, each a valid part of consecutive rows', async (t) => {
  const rows = patternRows(3000)
  const limit = 40_000
  const parts = await writeParts(PACK_TABLES.patterns, rows, { maxRowGroupRows: 250, maxPartBytes: limit, batch: 500 })
  t.ok(parts.length >= 3, `${parts.length} parts`)
  const back: unknown[] = []
  for (const p of parts) {
    const facts = await partFacts(p.path)
    if (!facts.ok) return t.fail(JSON.stringify(facts.findings))
    const groups = facts.facts.rowGroups
    t.ok(groups.length === 1 || 4 + groups.reduce((n, g) => n + g.compressedBytes, 0) <= limit, `row groups take the part to at most ${limit} bytes`)
    const read = await readPartRows(p.path, PACK_TABLES.patterns)
    if (!read.ok) return t.fail(JSON.stringify(read.findings))
    t.equal(p.first, read.rows[0]!['id'])
    t.equal(p.last, read.rows.at(-1)!['id'])
    t.same(p.partition, { class_group: 'spaceship', tiling_group: 'k1' })
    back.push(...read.rows)
  }
  t.equal(exact(back), exact(rows.map((r) => asRead(PACK_TABLES.patterns, r))), 'the parts hold the rows, in order')
})

t.test('refusals', async (t) => {
  const s = PACK_TABLES.patterns
  const rows = patternRows(10)
  const w = new PackPartWriter(s, { dir, partition: { class_group: 'spaceship', tiling_group: 'k1' } })
  await t.rejects(w.write([rows[1]!, rows[0]!]), { code: WRITE_CODES.unsorted, location: { row: 1 } }, 'rows out of order')
  await t.rejects(w.write([rows[0]!, { ...rows[1]!, dx: 'x' }]), { code: ROW_CODES.invalid, location: { row: 1, field: 'dx' } }, 'an invalid row refuses its batch')
  await t.rejects(w.write([{ ...rows[0]!, tiling_group: 'k2' }]), { code: ROW_CODES.partitionMismatch }, 'a row of another partition')
  await w.write(rows.slice(0, 5))
  await t.rejects(w.write([rows[2]!]), { code: WRITE_CODES.unsorted, location: { row: 5 } }, 'order holds across batches')
  await w.write(rows.slice(5))
  const [part] = await w.finish()
  t.equal(part!.rows, 10, 'the writer stayed usable after each refusal')
  await t.rejects(w.write(rows), { code: WRITE_CODES.state })
  t.throws(() => new PackPartWriter(s, { dir, partition: { class_group: 'spaceship' } }), { code: ROW_CODES.partitionMismatch })
  t.throws(() => new PackPartWriter(s, { dir, partition: { class_group: 'spaceship', tiling_group: 'K1' } }), { code: ROW_CODES.partitionValue })
  t.throws(() => new PackPartWriter(PACK_TABLES.rules, { dir, partition: { tiling_group: 'k1' } }), PipeError)
  t.same(await new PackPartWriter(PACK_TABLES.rules, { dir }).finish(), [], 'no rows, no parts')

  const nowhere = new PackPartWriter(PACK_TABLES.rules, { dir: join(dir, 'no-such-dir') })
  await nowhere.write(sampleRows(PACK_TABLES.rules))
  await t.rejects(nowhere.finish(), { code: WRITE_CODES.io }, 'a part the encoding thread cannot create')

  const sub = await mkdtemp(join(dir, 'abort-'))
  const a = new PackPartWriter(s, { dir: sub, partition: { class_group: 'spaceship', tiling_group: 'k1' }, maxRowGroupRows: 100, maxPartBytes: 20_000 })
  await a.write(patternRows(1000))
  t.ok((await readdir(sub)).length > 0, 'parts under temporary names while writing')
  await a.abort()
  t.same(await readdir(sub), [], 'abort removes them all')
})

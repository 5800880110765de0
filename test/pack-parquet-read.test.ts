/**
 * The guarded part reader (src/formats/pack/tables/parquet-read.ts): hostile parts made here byte by byte are
 * refused with the right code before anything is decoded or allocated (pages claiming more than 64x the
 * part, too many values, a footer claiming more than 16 MiB, Thrift 33 deep, 1,025 columns, a schema 33
 * deep, a page header above 4 MiB, a 2 MiB string cell, bad UTF-8, truncation, bad magic, chunks outside the
 * file), a seeded fuzz of bit flips and truncations never throws or hangs; and the schema readings: other
 * integer widths that fit, FLOAT for float64, missing nullable columns, unknown columns, a part DuckDB wrote.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import type { ColumnSource } from 'hyparquet-writer'
import t from 'tap'
import { PackPartWriter } from '../src/formats/pack/tables/parquet-write.js'
import { READ_CODES, READ_LIMITS, openPart, partFacts, readPartRows, type ParquetFinding } from '../src/formats/pack/tables/parquet-read.js'
import { PACK_TABLES, type PackField, type TableSchema } from '../src/formats/pack/tables/table-schemas.js'
import { seededRandom } from '../src/sim/random.js'
import { asRead, exact, patternRows } from './pack-parquet-fixtures.js'
import { ByteWriter, parquetWriteBuffer } from 'hyparquet-writer'
import { serializeTCompactProtocol } from 'hyparquet-writer/src/thrift.js'

type Tap = Parameters<Parameters<typeof t.test>[0]>[0]
type Thrift = Parameters<typeof serializeTCompactProtocol>[1]

const dir = await mkdtemp(join(tmpdir(), 'pack-parquet-read-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
let files = 0
async function save(bytes: Uint8Array): Promise<string> {
  const path = join(dir, `f${files++}.parquet`)
  await writeFile(path, bytes)
  return path
}

function table(columns: PackField[]): TableSchema {
  return { name: 'test', schemaId: 'jetcarp-test 1', kind: 'fact', sortColumns: [columns[0]!.name], partitionColumns: [], columns, ourChoice: false }
}
const N_SCHEMA = table([{ name: 'n', type: { kind: 'int64' }, nullable: false }])

function thrift(value: Thrift): Uint8Array {
  const w = new ByteWriter()
  serializeTCompactProtocol(w, value)
  return w.getBytes().slice()
}

function le32(n: number): Uint8Array {
  const b = new Uint8Array(4)
  new DataView(b.buffer).setUint32(0, n, true)
  return b
}
const PAR1 = new TextEncoder().encode('PAR1')
const concat = (...parts: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(parts))
const withFooter = (body: Uint8Array[], footer: Uint8Array): Uint8Array => concat(PAR1, ...body, footer, le32(footer.length), PAR1)

interface CraftOptions {
  values?: bigint[]
  /** Page header fields to state instead of the true ones. */
  uncompressed?: number
  numValues?: number
  chunkValues?: bigint
  dataPageOffset?: bigint
  /** Extra bytes of page-level statistics in the header (a large header). */
  headerStatistics?: number
  /** The column chunk's codec, as Parquet's enum numbers it (0 uncompressed, 2 GZIP, 7 LZ4_RAW). */
  codec?: number
  /** An OPTIONAL column, with these RLE / bit-packed runs as its definition levels (the values are the defined ones). */
  definitionLevels?: number[]
}

/** A part of one INT64 column `n`: one row group, one uncompressed PLAIN v1 data page. */
function craft(o: CraftOptions = {}): Uint8Array {
  const values = o.values ?? [1n, 2n, 3n]
  const plain = new Uint8Array(values.length * 8)
  values.forEach((v, i) => new DataView(plain.buffer).setBigInt64(i * 8, v, true))
  const levels = o.definitionLevels ? concat(le32(o.definitionLevels.length), new Uint8Array(o.definitionLevels)) : new Uint8Array(0)
  const body = concat(levels, plain)
  // With levels, the rows are the entries, nulls among them.
  const rows = BigInt(o.definitionLevels ? o.numValues ?? values.length : values.length)
  const header = thrift({
    field_1: 0,
    field_2: o.uncompressed ?? body.length,
    field_3: body.length,
    field_5: { field_1: o.numValues ?? values.length, field_2: 0, field_3: 3, field_4: 3, ...(o.headerStatistics ? { field_5: { field_5: new Uint8Array(o.headerStatistics) } } : {}) },
  })
  const footer = thrift({
    field_1: 1,
    field_2: [{ field_4: 'schema', field_5: 1 }, { field_1: 2, field_3: o.definitionLevels ? 1 : 0, field_4: 'n' }],
    field_3: rows,
    field_4: [{
      field_1: [{
        field_2: 4n,
        field_3: {
          field_1: 2, field_2: [0], field_3: ['n'], field_4: o.codec ?? 0, field_5: o.chunkValues ?? BigInt(o.numValues ?? values.length),
          field_6: BigInt(header.length + body.length), field_7: BigInt(header.length + body.length), field_9: o.dataPageOffset ?? 4n,
        },
      }],
      field_2: BigInt(header.length + body.length),
      field_3: rows,
    }],
  })
  return withFooter([header, body], footer)
}

async function refused(t: Tap, bytes: Uint8Array, code: string, what: string, schema: TableSchema = N_SCHEMA): Promise<ParquetFinding[]> {
  const path = await save(bytes)
  const opened = await openPart(path, schema)
  if (opened.ok) {
    await opened.part.close()
    t.fail(`${what}: expected ${code}, the part opened`)
    return []
  }
  t.equal(opened.findings[0]!.code, code, `${what}: ${code} (${opened.findings[0]!.detail})`)
  const facts = await partFacts(path)
  t.notOk(facts.ok, `${what}: partFacts refuses it too`)
  return opened.findings
}

/** Runs `f` and returns how many bytes of ArrayBuffers it left allocated at its peak, sampled after. */
async function allocated<T>(f: () => Promise<T>): Promise<{ result: T; bytes: number }> {
  const before = process.memoryUsage().arrayBuffers
  const result = await f()
  return { result, bytes: process.memoryUsage().arrayBuffers - before }
}

// A real part of ours, made before the tests start (its writer runs on a thread of its own).
const good = await (async () => {
  const w = new PackPartWriter(PACK_TABLES.patterns, { dir, partition: { class_group: 'spaceship', tiling_group: 'k1' } })
  await w.write(patternRows(120, { site: true }))
  const [part] = await w.finish()
  return new Uint8Array(await readFile(part!.path))
})()

t.test('a crafted part reads', async (t) => {
  const r = await readPartRows(await save(craft({ values: [5n, -1n, 2n ** 62n] })), N_SCHEMA)
  t.same(r.ok && r.rows, [{ n: 5n }, { n: -1n }, { n: 2n ** 62n }])
})

t.test('definition levels: an RLE run wider than the levels\' bit width is refused, not taken for a level', async (t) => {
  const nullable = table([{ name: 'n', type: { kind: 'int64' }, nullable: true }])
  // Runs: a header (count << 1 for RLE, (groups << 1) | 1 bit-packed), then the value in one byte (width 1).
  const read = async (definitionLevels: number[], values: bigint[], numValues: number) => readPartRows(await save(craft({ definitionLevels, values, numValues })), nullable)
  t.same(await read([3 << 1, 1], [5n, -1n, 7n], 3), { ok: true, rows: [{ n: 5n }, { n: -1n }, { n: 7n }] }, 'three defined')
  t.same(await read([(1 << 1) | 1, 0b101], [5n, 7n], 3), { ok: true, rows: [{ n: 5n }, { n: null }, { n: 7n }] }, 'bit-packed: defined, null, defined')
  for (const wide of [2, 255]) {
    const r = await read([3 << 1, wide], [5n, -1n, 7n], 3)
    t.match(r, { ok: false, findings: [{ code: READ_CODES.malformed, detail: new RegExp(`an RLE run of ${wide}, wider than 1 bits`) }] }, `a run of ${wide} in 1-bit levels`)
  }
})

t.test('pages claiming more than 64x the part are refused before anything is allocated', async (t) => {
  const size = craft().length
  await refused(t, craft({ uncompressed: 64 * size + 100 }), READ_CODES.decompressedTooLarge, 'just above 64x')
  const big = 200 * 1024 * 1024
  const path = await save(craft({ uncompressed: big }))
  const { result, bytes } = await allocated(() => openPart(path, N_SCHEMA))
  t.match(result, { ok: false, findings: [{ code: READ_CODES.decompressedTooLarge }] }, 'a page claiming 200 MiB')
  t.ok(bytes < 16 * 1024 * 1024, `and nothing near it allocated (${bytes} bytes)`)
  await refused(t, craft({ uncompressed: 300 * 1024 * 1024 }), READ_CODES.pageTooLarge, 'one page above 256 MiB')
})

t.test('data pages holding more values than 64 per byte plus 2^20 are refused', async (t) => {
  // The claim itself makes the part a few bytes longer: the limit is computed on the part as made.
  const n = 64 * craft({ numValues: 2 ** 21 }).length + 2 ** 20 + 1
  t.equal(craft({ numValues: n }).length, craft({ numValues: 2 ** 21 }).length)
  await refused(t, craft({ numValues: n }), READ_CODES.decodedTooLarge, `${n} values claimed`)
  const within = await openPart(await save(craft({ numValues: n - 1 })), N_SCHEMA)
  t.ok(within.ok, 'one value fewer is within the limit (its pages are not decoded to open it)')
  if (within.ok) await within.part.close()
  await refused(t, craft({ numValues: 4, chunkValues: 3n }), READ_CODES.malformed, 'pages that disagree with the chunk\'s value count')
})

t.test('a footer length claiming more than 16 MiB', async (t) => {
  const bytes = craft()
  bytes.set(le32(16 * 1024 * 1024 + 1), bytes.length - 8)
  const path = await save(bytes)
  const { result, bytes: used } = await allocated(() => openPart(path, N_SCHEMA))
  t.match(result, { ok: false, findings: [{ code: READ_CODES.footerTooLarge }] })
  t.ok(used < 4 * 1024 * 1024, `nothing near 16 MiB allocated (${used} bytes)`)
  const within = craft()
  within.set(le32(within.length), within.length - 8)
  await refused(t, within, READ_CODES.malformed, 'a footer length longer than the part')
})

t.test('Thrift nested 33 deep; 32 is within the limit', async (t) => {
  const nested = (depth: number) => concat(new Uint8Array(depth - 1).fill(0x1c), new Uint8Array(depth).fill(0))
  await refused(t, withFooter([], nested(33)), READ_CODES.thriftTooDeep, '33 deep')
  const f = await refused(t, withFooter([], nested(32)), READ_CODES.malformed, '32 deep')
  t.notMatch(f[0]!.detail, /deeper/)
  // A page header nested too deep.
  const header = concat(new Uint8Array([0x15, 0x00, 0x15, 0x02, 0x15, 0x02]), new Uint8Array(32).fill(0x1c), new Uint8Array(33).fill(0))
  const good = craft()
  const footerStart = good.length - 8 - new DataView(good.buffer).getUint32(good.length - 8, true)
  await refused(t, concat(PAR1, header, good.subarray(footerStart)), READ_CODES.thriftTooDeep, 'a page header 34 deep')
})

function wideSchema(leaves: number): Uint8Array {
  const elements = [{ field_4: 'schema', field_5: leaves }, ...Array.from({ length: leaves }, (_, i) => ({ field_1: 2, field_3: 1, field_4: `c${i}` }))]
  return withFooter([], thrift({ field_1: 1, field_2: elements, field_3: 0n, field_4: [] }))
}

t.test('1,025 columns are refused, 1,024 read', async (t) => {
  await refused(t, wideSchema(1025), READ_CODES.tooManyColumns, '1,025 leaf columns')
  const facts = await partFacts(await save(wideSchema(1024)))
  t.match(facts, { ok: true, facts: { rows: 0, rowGroups: [] } }, '1,024 leaf columns')
  const chain = [{ field_4: 'schema', field_5: 1 }, ...Array.from({ length: 33 }, (_, i) => ({ field_3: 1, field_4: `g${i}`, field_5: 1 })), { field_1: 2, field_3: 1, field_4: 'leaf' }]
  await refused(t, withFooter([], thrift({ field_1: 1, field_2: chain, field_3: 0n, field_4: [] })), READ_CODES.schemaTooDeep, 'a schema 34 groups deep')
  const missing = [{ field_4: 'schema', field_5: 3 }, { field_1: 2, field_3: 1, field_4: 'a' }]
  await refused(t, withFooter([], thrift({ field_1: 1, field_2: missing, field_3: 0n, field_4: [] })), READ_CODES.malformed, 'a root with fewer children than it declares')
})

t.test('a page header above 4 MiB', async (t) => {
  await refused(t, craft({ headerStatistics: 5 * 1024 * 1024 }), READ_CODES.pageHeaderTooLarge, '5 MiB of page statistics')
  const r = await readPartRows(await save(craft({ headerStatistics: 100_000 })), N_SCHEMA)
  t.ok(r.ok, 'a 100 KB page header is read')
})

t.test('a codec this reader does not decode, and a part above 4 GiB, are refused before a page is read', async (t) => {
  await refused(t, craft({ codec: 2 }), READ_CODES.unsupported, 'a GZIP chunk')
  const lz4 = await refused(t, craft({ codec: 7 }), READ_CODES.unsupported, 'an LZ4_RAW chunk')
  t.match(lz4[0]!.detail, /row group 0, column n: codec LZ4_RAW/)
  t.ok((await readPartRows(await save(craft()), N_SCHEMA)).ok, 'the same part uncompressed reads')
  // 4 GiB of test data is not written: the limit is the same code path at a smaller size.
  const bytes = craft()
  const path = await save(bytes)
  t.match(await openPart(path, N_SCHEMA, { ...READ_LIMITS, partBytes: bytes.length - 1 }), { ok: false, findings: [{ code: READ_CODES.partTooLarge }] }, 'a part one byte above the size limit')
  const atLimit = await openPart(path, N_SCHEMA, { ...READ_LIMITS, partBytes: bytes.length })
  t.ok(atLimit.ok, 'and one exactly at it opens')
  if (atLimit.ok) await atLimit.part.close()
})

t.test('column chunks outside the file', async (t) => {
  await refused(t, craft({ dataPageOffset: 10_000n }), READ_CODES.malformed, 'data page offset past the end')
  await refused(t, craft({ dataPageOffset: 0n }), READ_CODES.malformed, 'data page offset in the magic')
})

const S_SCHEMA = table([{ name: 's', type: { kind: 'string' }, nullable: false }])
const stringColumn = (data: unknown[]): ColumnSource[] => [{ name: 's', data: data as string[], type: 'STRING', nullable: false }]

t.test('string cells: above 1 MiB, not UTF-8', async (t) => {
  const big = parquetWriteBuffer({ columnData: stringColumn(['ok', 'x'.repeat(2 * 1024 * 1024)]) })
  const path = await save(new Uint8Array(big))
  const opened = await openPart(path, S_SCHEMA)
  t.ok(opened.ok, 'the part opens: the cell is found while decoding')
  const r = await readPartRows(path, S_SCHEMA)
  t.match(r, { ok: false, findings: [{ code: READ_CODES.stringTooLarge, detail: /row group 0: column s: a string cell of 2097152 bytes/ }] }, 'a 2 MiB string cell')
  if (opened.ok) await opened.part.close()
  const exactly = parquetWriteBuffer({ columnData: stringColumn(['y'.repeat(1024 * 1024)]) })
  t.match(await readPartRows(await save(new Uint8Array(exactly)), S_SCHEMA), { ok: true }, 'a 1 MiB cell is read')
  const schema = [{ name: 'root', num_children: 1 }, { name: 's', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'REQUIRED' }] as const
  const bad = parquetWriteBuffer({ columnData: [{ name: 's', data: [new Uint8Array([0x61, 0xff, 0x62])] }], schema: schema as never, statistics: false })
  t.match(await readPartRows(await save(new Uint8Array(bad)), S_SCHEMA), { ok: false, findings: [{ code: READ_CODES.stringNotUtf8 }] }, 'a cell that is not UTF-8')
})


t.test('truncated files and bad magic', async (t) => {
  for (const n of [0, 3, 11, 12, 100, good.length - 9, good.length - 1]) {
    await refused(t, good.subarray(0, n), READ_CODES.notParquet, `truncated to ${n} bytes`, PACK_TABLES.patterns)
  }
  const head = good.slice()
  head[0] = 0x51
  await refused(t, head, READ_CODES.notParquet, 'bad magic at the start', PACK_TABLES.patterns)
  const tail = good.slice()
  tail[tail.length - 1] = 0x30
  await refused(t, tail, READ_CODES.notParquet, 'bad magic at the end', PACK_TABLES.patterns)
  t.match(await readPartRows(join(dir, 'no-such-file.parquet'), PACK_TABLES.patterns), { ok: false, findings: [{ code: READ_CODES.unreadable }] }, 'a missing file')
})

t.test('a seeded fuzz of bit flips and truncations: findings, never a throw or a hang', async (t) => {
  const random = seededRandom(20261111)
  const codes = new Set<string>(Object.values(READ_CODES))
  const seen = new Map<string, number>()
  const footerAt = good.length - 8 - new DataView(good.buffer, good.byteOffset).getUint32(good.length - 8, true)
  for (let i = 0; i < 300; i++) {
    const bytes = good.slice()
    let cut = bytes.length
    const kind = i % 4
    if (kind === 3) {
      cut = Math.floor(random() * bytes.length)
    } else {
      // Flips anywhere, in the footer only, or in the pages only.
      const [lo, hi] = kind === 0 ? [0, bytes.length] : kind === 1 ? [footerAt, bytes.length - 8] : [4, footerAt]
      const flips = 1 + Math.floor(random() * 8)
      for (let f = 0; f < flips; f++) {
        const at = lo + Math.floor(random() * (hi - lo))
        bytes[at]! ^= 1 << Math.floor(random() * 8)
      }
    }
    const path = await save(bytes.subarray(0, cut))
    const timeout = new Promise<'hang'>((resolve) => setTimeout(resolve, 10_000, 'hang').unref())
    const [r, facts] = await Promise.all([Promise.race([readPartRows(path, PACK_TABLES.patterns), timeout]), Promise.race([partFacts(path), timeout])])
    if (r === 'hang' || facts === 'hang') {
      t.fail(`case ${i}: hung`)
      continue
    }
    for (const f of [...(r.ok ? [] : r.findings), ...(facts.ok ? [] : facts.findings)]) {
      if (!codes.has(f.code)) t.fail(`case ${i}: unknown code ${f.code}`)
      seen.set(f.code, (seen.get(f.code) ?? 0) + 1)
    }
    await rm(path)
  }
  t.ok(seen.size >= 3, `refusals seen: ${[...seen].map(([c, n]) => `${c} ${n}`).join(', ')}`)
})

t.test('schema readings: other integer widths, FLOAT, missing and unknown columns, OPTIONAL for required', async (t) => {
  const schema = table([
    { name: 'a', type: { kind: 'int32' }, nullable: false },
    { name: 'b', type: { kind: 'int64' }, nullable: false },
    { name: 'c', type: { kind: 'float64' }, nullable: false },
    { name: 'd', type: { kind: 'string' }, nullable: true },
    { name: 'e', type: { kind: 'list', element: { kind: 'int32' } }, nullable: true },
  ])
  const write = async (columnData: ColumnSource[]) => save(new Uint8Array(parquetWriteBuffer({ columnData })))
  const path = await write([
    { name: 'a', data: [1n, -5n], type: 'INT64', nullable: false },
    { name: 'b', data: [7, 8], type: 'INT32', nullable: false },
    { name: 'c', data: [0.5, 2], type: 'FLOAT', nullable: false },
    { name: 'zz', data: ['ignored', 'too'], type: 'STRING' },
  ])
  const r = await readPartRows(path, schema)
  t.equal(exact(r.ok && r.rows), exact([{ a: 1, b: 7n, c: 0.5, d: null, e: null }, { a: -5, b: 8n, c: 2, d: null, e: null }]), 'INT64 for int32, INT32 for int64, FLOAT for float64; missing nullable columns null; unknown ignored')
  const wide = await write([
    { name: 'a', data: [2n ** 40n], type: 'INT64', nullable: false },
    { name: 'b', data: [1], type: 'INT32', nullable: false },
    { name: 'c', data: [1], type: 'DOUBLE', nullable: false },
  ])
  t.match(await readPartRows(wide, schema), { ok: false, findings: [{ code: READ_CODES.valueInvalid, detail: /row 0, column a: 1099511627776 does not fit int32/ }] }, 'an int64 that does not fit int32')
  const noB = await write([{ name: 'a', data: [1], type: 'INT32', nullable: false }, { name: 'c', data: [1], type: 'DOUBLE', nullable: false }])
  t.match(await openPart(noB, schema), { ok: false, findings: [{ code: READ_CODES.schemaMismatch, detail: /^b: a required column the file does not have/ }] }, 'a missing required column')
  const wrongType = await write([{ name: 'a', data: ['1'], type: 'STRING' }, { name: 'b', data: [1], type: 'INT32', nullable: false }, { name: 'c', data: [1], type: 'DOUBLE', nullable: false }])
  t.match(await openPart(wrongType, schema), { ok: false, findings: [{ code: READ_CODES.schemaMismatch, detail: /^a: expected int32, the file has BYTE_ARRAY/ }] }, 'a wrong type')
  const optional = await write([{ name: 'a', data: [1, null], type: 'INT32', nullable: true }, { name: 'b', data: [1, 2], type: 'INT32' }, { name: 'c', data: [1, 2], type: 'DOUBLE' }])
  t.match(await readPartRows(optional, schema), { ok: false, findings: [{ code: READ_CODES.valueInvalid, detail: /row 1, column a: null in a required column/ }] }, 'a null in a column the table requires')
})

t.test('a part DuckDB wrote from ours reads back the same rows; its facts show what it lacks', async (t) => {
  const w = new PackPartWriter(PACK_TABLES.patterns, { dir, partition: { class_group: 'spaceship', tiling_group: 'k1' } })
  const rows = patternRows(200, { site: true })
  await w.write(rows)
  const [ours] = await w.finish()
  const theirs = join(dir, 'duckdb.parquet')
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  await conn.run(`COPY (SELECT * FROM read_parquet('${ours!.path}')) TO '${theirs}' (FORMAT parquet, COMPRESSION zstd)`)
  conn.closeSync()
  db.closeSync()
  const r = await readPartRows(theirs, PACK_TABLES.patterns)
  t.equal(exact(r.ok && r.rows), exact(rows.map((row) => asRead(PACK_TABLES.patterns, row))), 'the same rows')
  const facts = await partFacts(theirs)
  if (!facts.ok) return t.fail(JSON.stringify(facts.findings))
  t.match(facts.facts.createdBy, /DuckDB/)
  t.ok(facts.facts.chunks.every((c) => c.codec === 'ZSTD'), 'zstd')
  t.comment(`DuckDB's part: page versions ${[...new Set(facts.facts.chunks.flatMap((c) => c.pageVersions))].join(',')}, column indexes on ${facts.facts.chunks.filter((c) => c.columnIndex).length} of ${facts.facts.chunks.length} chunks`)
})

t.test('other writers\' encodings read back the same: DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT, with nulls', async (t) => {
  const schema = table([
    { name: 'a', type: { kind: 'int32' }, nullable: false },
    { name: 'b', type: { kind: 'int64' }, nullable: true },
    { name: 'c', type: { kind: 'string' }, nullable: false },
    { name: 'd', type: { kind: 'string' }, nullable: true },
    { name: 'e', type: { kind: 'float64' }, nullable: false },
  ])
  const n = 700
  const rows = Array.from({ length: n }, (_, i) => ({
    a: (i * 7919) % 1000 - 500,
    b: i % 5 === 0 ? null : BigInt(i) * 2n ** 40n - 3n,
    c: `value ${i % 13} ${'é'.repeat(i % 3)}`,
    d: i % 4 === 0 ? null : `apple${'t'.repeat(i % 6)}${i}`,
    e: i % 3 === 0 ? -0 : i / 7,
  }))
  const path = await save(new Uint8Array(parquetWriteBuffer({
    columnData: [
      { name: 'a', data: rows.map((r) => r.a), type: 'INT32', nullable: false, encoding: 'DELTA_BINARY_PACKED' },
      { name: 'b', data: rows.map((r) => r.b), type: 'INT64', encoding: 'DELTA_BINARY_PACKED' },
      { name: 'c', data: rows.map((r) => r.c), type: 'STRING', nullable: false, encoding: 'DELTA_LENGTH_BYTE_ARRAY' },
      { name: 'd', data: rows.map((r) => r.d), type: 'STRING', encoding: 'DELTA_BYTE_ARRAY' },
      { name: 'e', data: rows.map((r) => r.e), type: 'DOUBLE', nullable: false, encoding: 'BYTE_STREAM_SPLIT' },
    ] as ColumnSource[],
    pageSize: 1000,
  })))
  const facts = await partFacts(path)
  const written = new Set(facts.ok ? facts.facts.chunks.flatMap((c) => c.encodings) : [])
  for (const e of ['DELTA_BINARY_PACKED', 'DELTA_LENGTH_BYTE_ARRAY', 'DELTA_BYTE_ARRAY', 'BYTE_STREAM_SPLIT']) t.ok(written.has(e), `written ${e}`)
  t.ok(facts.ok && facts.facts.chunks.some((c) => c.dataPages > 1), 'over several pages')
  const r = await readPartRows(path, schema)
  t.equal(exact(r.ok && r.rows), exact(rows), 'every value, -0 and nulls included, over several pages')
})

t.test('DELTA_BYTE_ARRAY values are measured before they are built: 1 MiB values from a few bytes each are refused', async (t) => {
  const big = 'x'.repeat(1024 * 1024)
  // One page: the first value stored, each later one its predecessor's 1 MiB as a prefix and no more, a few bits.
  const write = (n: number) => parquetWriteBuffer({ columnData: stringColumn(Array.from({ length: n }, () => big)).map((c) => ({ ...c, encoding: 'DELTA_BYTE_ARRAY' })) as ColumnSource[], statistics: false, pageSize: 2 ** 30 })
  const bytes = write(150)
  t.ok(bytes.byteLength < 1.1 * 1024 * 1024, `the part is ${bytes.byteLength} bytes`)
  const path = await save(new Uint8Array(bytes))
  const { result, bytes: used } = await allocated(() => readPartRows(path, S_SCHEMA))
  t.match(result, { ok: false, findings: [{ code: READ_CODES.decodedTooLarge, detail: /column s: .*would pass/ }] }, '150 MiB of values, above 64x the part plus 64 MiB')
  t.ok(used < 32 * 1024 * 1024, `and nothing near them allocated (${used} bytes)`)
  const fewer = write(3)
  t.match(await readPartRows(await save(new Uint8Array(fewer)), S_SCHEMA), { ok: true, rows: [{ s: big }, { s: big }, { s: big }] }, 'three of them are within the limit')
})

t.test('a row group is read and decoded whole, so it is bounded on its own: its stored chunks and its decoded columns', async (t) => {
  const MiB = 1024 * 1024
  const limits = { ...READ_LIMITS, rowGroupBytes: 1 * MiB }
  const half = 'h'.repeat(MiB / 2)
  const write = (data: string[], o: { rowGroupSize?: number; encoding?: string } = {}) =>
    new Uint8Array(parquetWriteBuffer({ columnData: stringColumn(data).map((c) => ({ ...c, encoding: o.encoding ?? 'PLAIN' })) as ColumnSource[], statistics: false, pageSize: 2 ** 30, rowGroupSize: o.rowGroupSize ?? 1000 }))
  const three = await save(write([half, half, half]))
  const opened = await openPart(three, S_SCHEMA, limits)
  t.match(opened, { ok: false, findings: [{ code: READ_CODES.rowGroupTooLarge, detail: /row group 0, column s, page at byte \d+: the row group's decoded columns pass 1048576 bytes/ }] }, 'three 512 KiB cells in one row group: refused from the page headers, before decoding')
  t.match(await readPartRows(three, S_SCHEMA), { ok: true, rows: [{ s: half }, { s: half }, { s: half }] }, 'within the default 128 MiB')
  t.match(await readPartRows(await save(write([half, half, half], { rowGroupSize: 1 })), S_SCHEMA, limits), { ok: true, rows: [{}, {}, {}] }, 'the same cells a row group each: each group is within the bound')

  const random = seededRandom(7)
  const noise = (n: number) => Array.from({ length: n }, () => String.fromCharCode(33 + Math.floor(random() * 90))).join('')
  const stored = await save(new Uint8Array(parquetWriteBuffer({ columnData: [{ name: 's', data: [noise(600 * 1024), noise(600 * 1024)], type: 'STRING', nullable: false }], statistics: false, pageSize: 2 ** 30, codec: 'UNCOMPRESSED' } as never)))
  t.match(await openPart(stored, S_SCHEMA, limits), { ok: false, findings: [{ code: READ_CODES.rowGroupTooLarge, detail: /row group 0: its column chunks pass 1048576 bytes/ }] }, '1.2 MiB of stored chunks in one row group: refused before they are read')

  // DELTA_BYTE_ARRAY: each value its predecessor's bytes as a prefix, so the headers say little and the bound holds while decoding.
  const big = 'x'.repeat(MiB / 4)
  const shared = await save(write(Array.from({ length: 8 }, () => big), { encoding: 'DELTA_BYTE_ARRAY' }))
  t.ok((await openPart(shared, S_SCHEMA, limits)).ok, 'eight 256 KiB values from a few bytes each: the headers are within the bound')
  const { result, bytes: used } = await allocated(() => readPartRows(shared, S_SCHEMA, limits))
  t.match(result, { ok: false, findings: [{ code: READ_CODES.rowGroupTooLarge, detail: /row group 0: column s: .*the row group's decoded values would pass 1048576 bytes/ }] }, '2 MiB decoded: refused as its values are measured')
  t.ok(used < MiB, `and they were not built (${used} bytes)`)
  t.match(await readPartRows(await save(write(Array.from({ length: 8 }, () => big), { encoding: 'DELTA_BYTE_ARRAY', rowGroupSize: 2 })), S_SCHEMA, limits), { ok: true }, 'the same values two a row group are read')
})

t.test('rowAt: a row by its index, across row groups', async (t) => {
  const n = Array.from({ length: 25 }, (_, i) => BigInt(i * 3))
  const path = await save(new Uint8Array(parquetWriteBuffer({ columnData: [{ name: 'n', data: n, type: 'INT64' }] as ColumnSource[], rowGroupSize: 7 })))
  const opened = await openPart(path, N_SCHEMA)
  if (!opened.ok) throw new Error(JSON.stringify(opened.findings))
  const part = opened.part
  t.teardown(() => part.close())
  t.equal(part.metadata.row_groups.length, 4, 'groups of 7, 7, 7 and 4 rows')
  t.same([0, 6, 7, 13, 14, 20, 21, 24].map((row) => part.rowGroupOf(row)), [0, 0, 1, 1, 2, 2, 3, 3], 'each row in its group, at both edges')
  t.same([-1, 25, 1.5].map((row) => part.rowGroupOf(row)), [undefined, undefined, undefined], 'none past the part, nor of a fraction')
  for (const row of [0, 6, 7, 20, 24]) t.same(await part.rowAt(row), { n: n[row] }, `row ${row}`)
  t.same(await part.rowAt(2), { n: n[2] }, 'a row of a group decoded before: decoded again')
  await t.rejects(part.rowAt(25), { name: 'PartReadError', message: new RegExp(`no row 25 \\(${READ_CODES.malformed}\\)`) }, 'past the last row: a finding, not a crash')
})

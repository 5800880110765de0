/**
 * A part's rows checked on their vectors (src/formats/pack/check/check-part.ts): row groups whose times, floats
 * or partition values might break a row rule have their rows validated, each finding on its row.
 *
 * Parts checked in a pool's lanes (src/formats/pack/check/check-pool.ts: the calling thread's and worker
 * threads'): a lane's findings carry their level, code and target; a hostile part is a refusal there too, as
 * is an object that does not hash; a part with thousands of findings comes back whole and in order, though a
 * lane may run only a few chunks ahead; a failure in a lane fails the check rather than losing the part; a
 * pool closed early stops the calling thread's parts, and waits for them to end. And checkPack gives the same
 * issues, in the same order, with the same counts, whether its parts are checked in lanes or not.
 */
import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { checkPart } from '../src/formats/pack/check/check-part.js'
import { CheckPool, type PartJob, type PartJobResult } from '../src/formats/pack/check/check-pool.js'
import { PackChecker, type CheckIssue } from '../src/formats/pack/check/check.js'
import { PackPartWriter } from '../src/formats/pack/tables/parquet-write.js'
import { PACK_TABLES, type TableSchema } from '../src/formats/pack/tables/table-schemas.js'
import { LIFE } from '../src/sim/pack-records.js'
import { BLOCK, buildStore, cleanRows, inflatedPart, patternRow, type Row } from './pack-check-fixtures.js'
import { parquetWriteBuffer } from 'hyparquet-writer'
import { WRITER_CODES } from '../src/formats/pack/check/writer-rules.js'


const dir = await mkdtemp(join(tmpdir(), 'pack-check-pool-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
let files = 0

async function save(bytes: Uint8Array): Promise<{ file: string; hash: string; bytes: number }> {
  const file = join(dir, `f${files++}.parquet`)
  await writeFile(file, bytes)
  return { file, hash: `sha256:${createHash('sha256').update(bytes).digest('hex')}`, bytes: bytes.length }
}

const job = (o: Partial<PartJob> & { file: string; hash: string }): PartJob => ({ rel: 'objects/part.parquet', schemaId: PACK_TABLES.rules.schemaId, level: 1, verify: true, tilings: [], ruleFamilies: [], ...o })

async function take(pool: CheckPool, j: PartJob): Promise<{ issues: CheckIssue[]; result: PartJobResult }> {
  const issues: CheckIssue[] = []
  const part = pool.submit(j).issues()
  for (let next = await part.next(); ; next = await part.next()) {
    if (next.done) return { issues, result: next.value }
    issues.push(next.value)
  }
}

/** `n` block patterns (each its own row: the cells moved along), every id wrong: a finding per row. */
async function wrongIds(n: number): Promise<{ file: string; hash: string; bytes: number; rows: Row[] }> {
  const rows = Array.from({ length: n }, (_, i) => ({ ...patternRow(LIFE, BLOCK.map(([x, y]) => [x! + i, y!])), id: createHash('sha256').update(`row ${i}`).digest('hex').slice(0, 32) }))
  const w = new PackPartWriter(PACK_TABLES.patterns, { dir, partition: { class_group: 'still_life', tiling_group: 'square' }, encodeOnThread: false })
  const sorted = [...rows].sort((a, b) => (String(a.id) < String(b.id) ? -1 : 1))
  await w.write(sorted)
  const [part] = await w.finish()
  return { ...(await save(await readFile(part!.path))), rows: sorted }
}

t.test('in a lane: a hostile part is refused, an object that does not hash too, each finding at its level on its part', async (t) => {
  const pool = new CheckPool(2)
  t.teardown(() => pool.close())
  const hostile = await save(inflatedPart(1 << 20))
  const refused = await take(pool, job(hostile))
  t.same(refused.issues.map((i) => [i.level, i.code, i.target, i.note]), [[0, 'pack.parquet-decompressed-too-large', 'objects/part.parquet', false]])
  t.same(refused.result, { objectChecked: true, objectOk: true, outcome: { opened: false, rows: 0, complete: false } }, 'its object is good, the part does not open')

  const other = await take(pool, job({ ...hostile, hash: `sha256:${'0'.repeat(64)}` }))
  t.same(other.issues.map((i) => [i.level, i.code, i.target]), [[1, 'pack.object-hash-mismatch', 'objects/part.parquet']])
  t.same(other.result, { objectChecked: true, objectOk: false, outcome: { opened: false, rows: 0, complete: false } })

  const longer = await take(pool, job({ ...hostile, bytes: hostile.bytes - 1 }))
  t.same(longer.issues.map((i) => i.code), ['pack.object-size-mismatch'], 'a size other than the index states')
})

t.test('a part with a finding on each of 3,000 rows comes back whole and in order', async (t) => {
  const part = await wrongIds(3000)
  const tilings: PartJob['tilings'] = [['square', { pin: String(part.rows[0]!.pin), tilingGroup: 'square', kind: 'lattice' }]]
  const pool = new CheckPool(2)
  t.teardown(() => pool.close())
  // Two at once, so that one thread runs ahead while the other's issues are taken.
  const jobs = [0, 1].map(() => job({ ...part, schemaId: PACK_TABLES.patterns.schemaId, tilings, partition: { class_group: 'still_life', tiling_group: 'square' } }))
  const pending = jobs.map((j) => pool.submit(j))
  for (const p of pending) {
    const issues: CheckIssue[] = []
    const it = p.issues()
    let next = await it.next()
    for (; !next.done; next = await it.next()) issues.push(next.value)
    t.equal(issues.length, 3000, 'every finding')
    t.same(issues.map((i) => i.target), part.rows.map((r) => `pattern:${String(r.id)}`), 'in row order, each on its pattern')
    t.ok(issues.every((i) => i.level === 1 && i.code === 'pack.id-mismatch' && !i.note))
    t.same(next.value.outcome, { opened: true, rows: 3000, complete: true })
  }
  const inline: CheckIssue[] = []
  const spec = { rel: jobs[0]!.rel, file: part.file, schema: PACK_TABLES.patterns, partition: jobs[0]!.partition! }
  for await (const i of checkPart(spec, { level: 1, tilings: new Map(tilings), ruleFamilies: new Map() })) inline.push(i)
  const threaded = await take(pool, jobs[0]!)
  t.same(threaded.issues, inline, 'what checkPart gives on this thread')
})

t.test('a failure in a lane fails the check', async (t) => {
  const part = await save(inflatedPart(1 << 20))
  // A pool of one lane is the calling thread's; in a pool of two, a second part at once goes to a thread.
  for (const size of [1, 2]) {
    const pool = new CheckPool(size)
    t.teardown(() => pool.close())
    const [bad, good] = [pool.submit(job({ ...part, schemaId: 'jetcarp-nothing 1' })), pool.submit(job(part))]
    const issues = async (p: typeof bad) => {
      const codes: string[] = []
      for await (const i of p.issues()) codes.push(i.code)
      return codes
    }
    await t.rejects(issues(bad), { code: 'internal.schema-unknown' }, `${size} lanes`)
    t.same(await issues(good), ['pack.parquet-decompressed-too-large'], `${size} lanes: and the pool goes on with the next part`)
    t.same((await take(pool, job(part))).issues.map((i) => i.code), ['pack.parquet-decompressed-too-large'], `${size} lanes: and the one after`)
  }
})

t.test('a pool closed with parts in the calling thread\'s lane stops them: they end, and close() waits for them', async (t) => {
  const part = await wrongIds(3000)
  const tilings: PartJob['tilings'] = [['square', { pin: String(part.rows[0]!.pin), tilingGroup: 'square', kind: 'lattice' }]]
  const pool = new CheckPool(1)
  const pending = [0, 1].map(() => pool.submit(job({ ...part, schemaId: PACK_TABLES.patterns.schemaId, tilings, partition: { class_group: 'still_life', tiling_group: 'square' } })))
  // A few issues taken: each part is held a few chunks ahead of its caller, with 3,000 findings to give.
  const it = pending[0]!.issues()
  for (let n = 0; n < 10; n++) await it.next()
  const late = new Promise((resolve) => setTimeout(resolve, 5000, 'still running')).then((v) => v)
  t.equal(await Promise.race([pool.close().then(() => 'closed'), late]), 'closed', 'close() resolves: the parts ended')
})

t.test('a lane\'s parts take turns at their rows in the order they came, though a later one is ready sooner', async (t) => {
  const part = await wrongIds(3000)
  const tilings: PartJob['tilings'] = [['square', { pin: String(part.rows[0]!.pin), tilingGroup: 'square', kind: 'lattice' }]]
  const like = { ...part, schemaId: PACK_TABLES.patterns.schemaId, tilings, partition: { class_group: 'still_life', tiling_group: 'square' } }
  for (const size of [1, 2]) {
    const pool = new CheckPool(size)
    t.teardown(() => pool.close())
    // The first's object is hashed before its rows; the second's is not, so it would be ready first. Each
    // has more findings than a lane sends ahead: had the second taken the turn, it would wait for its issues
    // to be taken, and the caller, taking the first's, for it.
    const pending = [pool.submit(job({ ...like, verify: true })), pool.submit(job({ ...like, verify: false })), pool.submit(job({ ...like, verify: true }))]
    const all = (async () => {
      const counts: number[] = []
      for (const p of pending) {
        let n = 0
        for await (const _issue of p.issues()) n++
        counts.push(n)
      }
      return counts
    })()
    const late = new Promise((resolve) => setTimeout(resolve, 20_000, 'stuck'))
    t.same(await Promise.race([all, late]), [3000, 3000, 3000], `${size} lanes: every part's findings, in turn`)
  }
})

t.test('checkPack in lanes: the same issues in the same order, and the same counts', async (t) => {
  const rows = cleanRows({ aperiodic: true })
  const glider = rows.patterns!.find((p) => p.class === 'spaceship')!
  glider.id = '0'.repeat(32)
  rows.quickstart![0]!.pin = '1'.repeat(32)
  const store = await buildStore(join(dir, 'store'), { rows, rowGroupRows: 1 })
  for (const level of [0, 1, 2, 3] as const) {
    const run = async (threads: number) => {
      const checker = new PackChecker(store.dir, { level, threads, threadPartBytes: 0 })
      const issues: CheckIssue[] = []
      for await (const i of checker.run()) issues.push(i)
      return { issues, stats: checker.stats }
    }
    const here = await run(0)
    // Two lanes: the calling thread's and a worker's; three: and another worker's.
    for (const threads of [2, 3]) t.same(await run(threads), here, `level ${level}, ${threads} lanes`)
    if (level === 1) t.ok(here.issues.some((i) => i.code === 'pack.id-mismatch' && i.target === `pattern:${'0'.repeat(32)}`) && here.issues.some((i) => i.code === 'pack.record-pin-mismatch'), 'the damage is found')
  }
})

t.test('rows whose times, floats or partition values break the row rules are found among valid ones', async (t) => {
  const schema: TableSchema = {
    name: 'test', schemaId: 'jetcarp-test 1', kind: 'event', sortColumns: ['n'], partitionColumns: ['g'], ourChoice: false,
    columns: [
      { name: 'n', type: { kind: 'int32' }, nullable: false },
      { name: 'at', type: { kind: 'time' }, nullable: false },
      { name: 'x', type: { kind: 'float64' }, nullable: true },
      { name: 'g', type: { kind: 'string' }, nullable: false },
    ],
  }
  const n = 40
  const at = (i: number) => (i === 7 ? 'yesterday' : '2026-11-11T00:00:00Z')
  const x = (i: number) => (i === 21 ? Number.NaN : i === 30 ? null : i / 3)
  const g = (i: number) => (i === 33 ? 'Other' : 'one')
  const part = await save(new Uint8Array(parquetWriteBuffer({
    columnData: [
      { name: 'n', data: Array.from({ length: n }, (_, i) => (i === 12 ? 11 - 5 : i)), type: 'INT32', nullable: false },
      { name: 'at', data: Array.from({ length: n }, (_, i) => at(i)), type: 'STRING', nullable: false },
      { name: 'x', data: Array.from({ length: n }, (_, i) => x(i)), type: 'DOUBLE' },
      { name: 'g', data: Array.from({ length: n }, (_, i) => g(i)), type: 'STRING', nullable: false },
    ],
    rowGroupSize: 10,
  })))
  const issues: CheckIssue[] = []
  for await (const i of checkPart({ rel: 'p', file: part.file, schema, partition: { g: 'one' } }, { level: 1, tilings: new Map(), ruleFamilies: new Map() })) issues.push(i)
  t.same(issues.map((i) => [i.code, i.target]), [
    // hyparquet-writer's defaults: snappy, and an offset index without a column index.
    ['pack.part-not-zstd', 'p'],
    ['pack.part-no-page-index', 'p'],
    ['pack.table-time-invalid', 'p row 7'],
    ['pack.parquet-rows-unsorted', 'p row 12'],
    ['pack.table-row-invalid', 'p row 21'],
    ['pack.partition-value-invalid', 'p row 33'],
  ], 'each on its row, in row order, among row groups with nothing to find')
  t.match(issues[4], { level: 1, detail: /^x: expected a finite float64, got NaN$/ })
})

/** The issues of a part's rows, without the writer rules hyparquet-writer's defaults break (shown above). */
const rowIssues = (issues: CheckIssue[]) => issues.filter((i) => !Object.values(WRITER_CODES).includes(i.code as never))

t.test('writer rules: a part not zstd, without statistics or page indexes, with local paths in its cells', async (t) => {
  const schema: TableSchema = {
    name: 'test', schemaId: 'jetcarp-test 1', kind: 'event', sortColumns: ['s'], partitionColumns: [], ourChoice: false,
    columns: [{ name: 's', type: { kind: 'string' }, nullable: false }, { name: 'l', type: { kind: 'list', element: { kind: 'string' } }, nullable: true }],
  }
  const parquetSchema = [
    { name: 'root', num_children: 2 }, { name: 's', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'REQUIRED' },
    { name: 'l', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 }, { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    { name: 'element', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
  ] as const
  const write = (s: string[], l: (string[] | null)[], statistics: boolean) =>
    save(new Uint8Array(parquetWriteBuffer({ columnData: [{ name: 's', data: s, statistics }, { name: 'l', data: l }], schema: parquetSchema as never })))
  const writerIssues = async (file: string, level: 0 | 1) => {
    const issues: CheckIssue[] = []
    for await (const i of checkPart({ rel: 'p', file, schema }, { level, tilings: new Map(), ruleFamilies: new Map() })) issues.push(i)
    return issues.filter((i) => rowIssues([i]).length === 0)
  }
  // Neither a rule, a speed, a URL's path nor a relative path is a local path.
  const s = ['B3/S23', 'C:\\Users\\alice\\x.png', 'c/4 orthogonal', 'https://example.org/a/b', 'see /home/alice/x', 'plain']
  const part = await write(s, [null, ['a'], [], ['2c/5', '~/notes'], null, ['file:///tmp/y']], false)
  const issues = await writerIssues(part.file, 1)
  t.same(issues.map((i) => [i.code, i.detail]), [
    ['pack.part-not-zstd', 'row group 0, column s: compressed with SNAPPY; parts are written with zstd (and 1 more of its 2 column chunks)'],
    ['pack.part-no-statistics', 'row group 0, column s: no statistics (min, max and null count); parts are written with statistics'],
    ['pack.part-no-page-index', 'row group 0, column s: no column index and no offset index locating its data pages; parts are written with page indexes (and 1 more of its 2 column chunks)'],
    ['pack.local-path', 'row 1, column s: a local path "C:\\\\Users\\\\alice\\\\x.png" (and 3 more cells); a pack holds file names, never local paths'],
  ], 'one finding a rule, naming the first chunk or cell that breaks it and how many more do')
  t.ok(issues.every((i) => i.level === 1 && !i.note && i.target === 'p'), 'failures, at level 1, on the part')
  t.same(await writerIssues(part.file, 0), [], 'level 0 does not hold a writer to them')

  const inList = await write(['a', 'b', 'c', 'd'], [null, ['a/b'], [], ['2c/5', '~/notes']], true)
  t.same((await writerIssues(inList.file, 1)).filter((i) => i.code === 'pack.local-path').map((i) => i.detail),
    ['row 3, column l[]: a local path "~/notes"; a pack holds file names, never local paths'], 'a list element\'s row')

  // One value in many rows (a dictionary entry, looked at once): each row still counts.
  const repeated = await write(['/srv/a/b', '/srv/a/b', 'x', '/srv/a/b'], [null, null, null, null], true)
  t.same((await writerIssues(repeated.file, 1)).filter((i) => i.code === 'pack.local-path').map((i) => i.detail),
    ['row 0, column s: a local path "/srv/a/b" (and 2 more cells); a pack holds file names, never local paths'], 'every cell counted')
})

t.test('rows out of order by their UTF-8 bytes are found within row groups and across them', async (t) => {
  const schema: TableSchema = {
    name: 'test', schemaId: 'jetcarp-test 1', kind: 'event', sortColumns: ['s'], partitionColumns: [], ourChoice: false,
    columns: [{ name: 's', type: { kind: 'string' }, nullable: false }],
  }
  // U+FFFD before U+1F600 by code point (and UTF-8 bytes), though not by UTF-16 units.
  const values = ['a', 'b', 'c', 'b', '\uFFFD', '\u{1F600}', 'é', 'z', 'y']
  const part = await save(new Uint8Array(parquetWriteBuffer({ columnData: [{ name: 's', data: values, type: 'STRING', nullable: false }], rowGroupSize: 3 })))
  const issues: CheckIssue[] = []
  const listing = { rows: values.length, first: 'a', last: 'y' }
  for await (const i of checkPart({ rel: 'p', file: part.file, schema, listing }, { level: 1, tilings: new Map(), ruleFamilies: new Map() })) issues.push(i)
  t.same(rowIssues(issues).map((i) => [i.code, i.target]), [
    ['pack.parquet-rows-unsorted', 'p row 3'],
    ['pack.parquet-rows-unsorted', 'p row 6'],
    ['pack.parquet-rows-unsorted', 'p row 7'],
    ['pack.parquet-rows-unsorted', 'p row 8'],
  ], 'row 3 and row 6 after the last row of the group before, rows 7 and 8 in theirs; the index\'s first and last are the rows\'')

  // A row group's rows are checked in stretches of 2,048 (between which the thread takes its messages): the
  // order runs across them, the first row of the second stretch held to the last of the first.
  const many = Array.from({ length: 3000 }, (_x, n) => String(n).padStart(5, '0'))
  ;[many[2047], many[2048]] = [many[2048]!, many[2047]!]
  const long = await save(new Uint8Array(parquetWriteBuffer({ columnData: [{ name: 's', data: many, type: 'STRING', nullable: false }], rowGroupSize: 5000 })))
  const found: CheckIssue[] = []
  for await (const i of checkPart({ rel: 'p', file: long.file, schema, listing: { rows: many.length, first: many[0]!, last: many.at(-1)! } }, { level: 1, tilings: new Map(), ruleFamilies: new Map() })) found.push(i)
  t.same(rowIssues(found).map((i) => [i.code, i.target]), [['pack.parquet-rows-unsorted', 'p row 2048']], 'a row out of order where a stretch begins')
})

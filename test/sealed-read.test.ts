/**
 * sealed-read: the hours of one chain, in order, each verified before a row of it is given; its envelopes
 * or one table's rows; the range by date or hour; and its refusals (no keys, a table the channel lacks, two
 * recorders, an hour that fails a check). Run in-process as a pipeline file names it.
 */
import { cp, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { decompress } from 'zstd-napi'
import t from 'tap'
import { registry } from '../pipelines/registry.js'
import { runStageList } from '../src/core/runner.js'
import type { StageUse } from '../src/core/stage.js'
import { captureIO } from './helpers/io.js'

const GOLDEN = fileURLToPath(new URL('./golden/record/', import.meta.url))
const ROOT = join(GOLDEN, 'root')
const KEYS = join(GOLDEN, 'jwks.json')
const CHAIN = join(ROOT, 'recorder=golden/venue=binance/channel=trades')
const dir = await mkdtemp(join(tmpdir(), 'pipe-sealed-read-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

let n = 0
async function read(options: Record<string, unknown>): Promise<{ code: number; rows: Record<string, unknown>[]; error?: { code: string; message: string } }> {
  const out = join(dir, `out-${++n}.jsonl`)
  const io = captureIO(true)
  const stages: StageUse[] = [{ stage: 'sealed-read', options: { roots: [ROOT], keys: KEYS, venue: 'binance', channel: 'trades', ...options } }, { stage: 'to-jsonl' }, { stage: 'atomic-file', options: { path: out } }]
  const r = await runStageList(registry, 'test', stages, io.settings)
  const summary = JSON.parse(io.out()) as { error?: { code: string; message: string } }
  const rows = existsSync(out) ? (await readFile(out, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) : []
  return { code: r.exitCode, rows, ...(summary.error ? { error: summary.error } : {}) }
}

const manifestRows = async (date: string, hh: string, file: string) =>
  (JSON.parse(await readFile(join(CHAIN, `date=${date}`, `hour=${hh}`, 'manifest.json'), 'utf8')) as { files: { name: string; rows: number }[] }).files.find((f) => f.name === file)?.rows ?? 0

t.test('envelopes: every line of each hour\'s raw file, in order, as written', async (t) => {
  const r = await read({ from: '2026-10-04T13', to: '2026-10-04T14' })
  t.equal(r.code, 0, JSON.stringify(r.error))
  const lines = [13, 14].flatMap((h) => decompress(require13(h)).toString('utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>))
  t.equal(r.rows.length, (await manifestRows('2026-10-04', '13', 'raw.jsonl.zst')) + (await manifestRows('2026-10-04', '14', 'raw.jsonl.zst')))
  t.same(r.rows, lines)
})

const rawOf = new Map<number, Buffer>()
for (const h of [13, 14]) rawOf.set(h, await readFile(join(CHAIN, 'date=2026-10-04', `hour=${h}`, 'raw.jsonl.zst')))
function require13(h: number): Buffer { return rawOf.get(h)! }

t.test('a table\'s rows for a range of days, hour by hour in time order', async (t) => {
  const r = await read({ table: 'trades', from: '2026-10-04', to: '2026-10-05' })
  t.equal(r.code, 0, JSON.stringify(r.error))
  let expected = 0
  for (const date of ['2026-10-04', '2026-10-05']) {
    for (const h of (await readdir(join(CHAIN, `date=${date}`))).filter((d) => d.startsWith('hour='))) expected += await manifestRows(date, h.slice(5), 'trades.parquet')
  }
  t.ok(expected > 1000)
  t.equal(r.rows.length, expected)
  const times = r.rows.map((x) => x.receive_time as string)
  t.same(times, [...times].sort(), 'receive times ascend across hours')
  t.match(r.rows[0], { raw_index: Number, instrument: String, price: /^\d+(\.\d+)?$/, receive_time: /^2026-10-04T\d\d:\d\d:\d\d\.\d{9}Z$/ })
})

t.test('refusals: no keys, a table the channel lacks, a range backwards, a chain that is not there', async (t) => {
  t.match((await read({ keys: undefined })).error, { code: 'usage.missing-option' })
  t.match((await read({ table: 'book_deltas' })).error, { code: 'usage.bad-option', message: /channel trades has no book_deltas table \(it has trades\)/ })
  t.match((await read({ from: '2026-10-05', to: '2026-10-04' })).error, { code: 'usage.bad-range' })
  t.match((await read({ venue: 'kraken' })).error, { code: 'usage.no-chains', message: /no chain of venue=kraken\/channel=trades/ })
})

t.test('two recorders: one must be named; a tampered hour stops the read there, and nothing lands', async (t) => {
  const root = join(dir, 'two')
  await cp(ROOT, root, { recursive: true })
  await cp(join(root, 'recorder=golden'), join(root, 'recorder=other'), { recursive: true })
  const two = await read({ roots: [root] })
  t.match(two.error, { code: 'usage.no-chains', message: /chains of golden, other: name one with recorder/ })
  const copied = await read({ roots: [root], recorder: 'other', from: '2026-10-04T13', to: '2026-10-04T13' })
  t.match(copied.error, { code: 'sealed-read.unverified', message: /check 5 fails \(chain.identity\): recorder is "golden", but the manifest sits in recorder=other/ }, 'a chain copied under another name is not that recorder\'s')
  const raw = join(root, 'recorder=golden/venue=binance/channel=trades/date=2026-10-04/hour=14/raw.jsonl.zst')
  const bytes = await readFile(raw)
  await writeFile(raw, Buffer.concat([bytes, Buffer.from([0])]))
  const before = await read({ roots: [root], recorder: 'golden', from: '2026-10-04T13', to: '2026-10-04T13' })
  t.equal(before.code, 0, 'the hour before the damage reads')
  t.ok(before.rows.length > 0)
  const damaged = await read({ roots: [root], recorder: 'golden', from: '2026-10-04', to: '2026-10-04' })
  t.equal(damaged.code, 1)
  t.match(damaged.error, { code: 'sealed-read.unverified', message: /check 2 fails/ })
  t.same(damaged.rows, [], 'no file landed, though the hours before it were read')
  const unverified = await read({ roots: [root], recorder: 'golden', from: '2026-10-04T14', to: '2026-10-04T14', noVerify: true, keys: undefined })
  t.equal(unverified.code, 1, 'unverified, the damaged raw file is still caught by its decompression')
})

/**
 * bench:pack — `pipe run pack-publish` and `pipe run pack-check --level 1` on a pack of BENCH_PATTERNS
 * (default 1,000,000) pattern records, against baselines measured in the same run:
 *   publish vs DuckDB writing the same rows to Parquet: the rows of the published patterns table, every
 *           column (identity, id, canonical, cells ... as well as the records' own fields), given to it as
 *           JSONL and written to one zstd Parquet file, 2 threads, at the zstd level the pack's parts are
 *           written with (ZSTD_LEVEL, 9: the same compression work). The identity, id and canonical columns
 *           are ~290 of the ~310 MB of values a million patterns' parts hold, so DuckDB writing only the
 *           input records (~20 MB of values) would be a baseline of a different job; it is still timed
 *           and printed for reference. The rows' JSONL is exported by DuckDB from the first round's parts,
 *           untimed;
 *   check   vs the floor: sha256 of every object of the store (node:crypto, streaming) plus DuckDB
 *           scanning every column of every part.
 * The records are synthetic: distinct cell sets on the square grid stated as patterns of class other in
 * Life (the rule column set, as "every pattern has one" rule asks of a pattern without verifications),
 * which level 1 (ids, identity lines, typed phases, pins, hashes, order) checks and level 3 notes as not
 * replayable (class other);
 * generating them is not timed. Each side runs BENCH_ROUNDS times (default 3, as the other benches: the same code on this
 * shared box moves 10-20% between minutes) and its best wall time counts; the check and its floor, a few
 * seconds a round, run BENCH_CHECK_ROUNDS times (default 5) in turn: the same check of the same store took
 * 1.57 to 2.46 s within one hour (2026-12-06), and in the box's slow minutes the check slows more than the
 * floor does (its CPU 35-40% up, the floor 25%), so more rounds give both sides the box's quiet minutes.
 * The last line: `pack-check ratio-vs-floor R pack-publish ratio-vs-duckdb R2 peak-rss-mb M`
 * (M: the higher peak RSS of the publish and the check).
 */
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { benchRecords, PATTERNS } from './pack-bench-records.js'
import { timedCli, type Timed } from './timed-cli.js'
import { DuckDBInstance } from '@duckdb/node-api'
import { ZSTD_LEVEL } from '../src/formats/pack/tables/parquet-write.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CHECK_ROUNDS = Number(process.env.BENCH_CHECK_ROUNDS ?? 5)

/** The fastest round, with the highest peak RSS of all rounds. */
function best(rounds: Timed[]): Timed {
  if (rounds.length === 0) throw new Error('no round ran')
  const fastest = rounds.reduce((a, b) => (b.wall < a.wall ? b : a))
  return { ...fastest, rssMb: Math.max(...rounds.map((r) => r.rssMb)) }
}

async function files(root: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(root, { withFileTypes: true, recursive: true })) if (e.isFile()) out.push(join(e.parentPath, e.name))
  return out
}

const dir = process.env.BENCH_DIR ?? await mkdtemp(join(tmpdir(), 'bench-pack-'))
try {
  const { records, patterns, env } = await benchRecords(dir)
  console.log(`records: ${PATTERNS} patterns, ${((await stat(patterns)).size / 1e6).toFixed(0)} MB of JSONL`)

  const db = await DuckDBInstance.create(':memory:', { threads: '2' })
  const conn = await db.connect()
  const store = join(dir, 'store')
  const publishes: Timed[] = []
  let duck = Infinity
  let duckRecords = Infinity
  const rows = join(dir, 'rows.jsonl')
  const out = join(dir, 'duckdb.parquet')
  /** Seconds DuckDB takes to write `from` (JSONL) to one zstd Parquet file at the parts' level. */
  const duckWrite = async (from: string): Promise<number> => {
    await rm(out, { force: true })
    const t0 = performance.now()
    await conn.run(`COPY (SELECT * FROM read_json('${from}')) TO '${out}' (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL ${ZSTD_LEVEL})`)
    return (performance.now() - t0) / 1000
  }
  for (let round = 0; round < ROUNDS; round++) {
    await rm(store, { recursive: true, force: true })
    const p = timedCli(['run', 'pack-publish', '--feed', 'bench', '--to', store, '--records', records, '--created', '2026-11-11T00:00:00Z'], { env })
    publishes.push(p)
    if (round === 0) {
      const patternParts = (await conn.runAndReadAll(`SELECT DISTINCT file_name FROM parquet_schema('${store}/objects/sha256/*/*.parquet') WHERE name = 'identity'`)).getRowObjects().map((r) => `'${String(r.file_name)}'`)
      await conn.run(`COPY (SELECT * FROM read_parquet([${patternParts.join(',')}])) TO '${rows}' (FORMAT json)`)
    }
    const d = await duckWrite(rows)
    const dr = await duckWrite(patterns)
    duck = Math.min(duck, d)
    duckRecords = Math.min(duckRecords, dr)
    console.log(`round ${round + 1}: publish ${p.wall.toFixed(1)} s (${p.cpu.toFixed(1)} s CPU, ${p.rssMb.toFixed(0)} MB), duckdb writing the pack's rows ${d.toFixed(1)} s, the input records ${dr.toFixed(1)} s`)
  }
  await rm(out, { force: true })
  await rm(rows, { force: true })
  const publish = best(publishes)

  const checks: Timed[] = []
  let floor = Infinity
  const objects = (await files(join(store, 'objects'))).sort()
  const parts = objects.filter((f) => f.endsWith('.parquet'))
  for (let round = 0; round < CHECK_ROUNDS; round++) {
    const c = timedCli(['run', 'pack-check', store, '--level', '1', '--json'], { env })
    const doc = JSON.parse(c.stdout.trim().split('\n').pop()!) as { ok: boolean; findings: unknown[] }
    if (!doc.ok) throw new Error(`pack-check found ${JSON.stringify(doc.findings.slice(0, 3))}`)
    checks.push(c)
    const f0 = performance.now()
    for (const f of objects) {
      const h = createHash('sha256')
      for await (const chunk of createReadStream(f, { highWaterMark: 1 << 20 })) h.update(chunk as Buffer)
      if (`${h.digest('hex')}` !== f.split('/').pop()!.split('.')[0]) throw new Error(`${relative(store, f)}: hash`)
    }
    await conn.run(`SELECT sum(hash(COLUMNS(*))) FROM read_parquet([${parts.map((p) => `'${p}'`).join(',')}], union_by_name = true)`)
    floor = Math.min(floor, (performance.now() - f0) / 1000)
    console.log(`round ${round + 1}: check ${c.wall.toFixed(1)} s (${c.cpu.toFixed(1)} s CPU, ${c.rssMb.toFixed(0)} MB), floor ${((performance.now() - f0) / 1000).toFixed(1)} s`)
  }
  conn.closeSync()
  const check = best(checks)
  const bytes = (await Promise.all(objects.map((f) => stat(f)))).reduce((s, x) => s + x.size, 0)
  console.log(`store: ${objects.length} objects, ${parts.length} parts, ${(bytes / 1e6).toFixed(0)} MB`)
  console.log(`pack-publish (best): ${publish.wall.toFixed(2)} s wall, ${publish.cpu.toFixed(1)} s CPU, peak RSS ${publish.rssMb.toFixed(0)} MB; duckdb (best, zstd ${ZSTD_LEVEL}) writing the pack's rows ${duck.toFixed(2)} s (ratio ${(publish.wall / duck).toFixed(2)}), the input records ${duckRecords.toFixed(2)} s (ratio ${(publish.wall / duckRecords).toFixed(2)})`)
  console.log(`pack-check --level 1 (best): ${check.wall.toFixed(2)} s wall, ${check.cpu.toFixed(1)} s CPU, peak RSS ${check.rssMb.toFixed(0)} MB; floor (best) ${floor.toFixed(2)} s`)
  console.log(`pack-check ratio-vs-floor ${(check.wall / floor).toFixed(3)} pack-publish ratio-vs-duckdb ${(publish.wall / duck).toFixed(3)} peak-rss-mb ${Math.max(publish.rssMb, check.rssMb).toFixed(0)}`)
} finally {
  if (!process.env.BENCH_DIR) await rm(dir, { recursive: true, force: true })
}

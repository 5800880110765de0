/**
 * bench:import — `pipe run pack-import STORE --library DB --verify none` of the store bench:pack publishes
 * (BENCH_PATTERNS, default 1,000,000, pattern records) into an empty library, then the same version again
 * into that library, against DuckDB loading every part of the same version into a DuckDB database file,
 * measured in the same run:
 *   import   a child process (the CLI, so its peak RSS is the importer's alone): the level-2 conformance
 *            check, then every row of every table merged into SQLite in one transaction;
 *   re-import the same version again into the library that now holds it (the check runs again, then the
 *            library says it has the version: nothing changes);
 *   duckdb   a new database file, and for each table of the version (its parts found by walking the
 *            manifest's index tree) `CREATE TABLE t AS SELECT * FROM read_parquet([...its parts])`, then a
 *            CHECKPOINT (the rows on disk, as the import's commit puts them), 2 threads;
 *   check    `pipe run pack-check STORE --level 2` alone, printed to show the check's share of the import.
 * The records and the store are made as bench:pack makes them (the same records, key and created time)
 * and, with BENCH_DIR, kept there and reused: a BENCH_DIR bench:pack has used serves as it is (its
 * records/, home/ and store/). Without BENCH_DIR everything goes to a temporary folder, removed at the
 * end. Making the records and the store is not timed.
 * Each side runs BENCH_ROUNDS times (default 3; a round imports into a new library, then imports again)
 * and its best wall time counts; peak RSS is the highest of every import and re-import.
 * The last line: `pack-import ratio-vs-duckdb R reimport-s S peak-rss-mb M`.
 */
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { benchRecords, PATTERNS } from './pack-bench-records.js'
import { timedCli, type Timed } from './timed-cli.js'
import { DuckDBInstance } from '@duckdb/node-api'
import { walkTableIndex } from '../src/formats/pack/documents/index-walk.js'
import { objectPath, storeFile, storeIndexLoader } from '../src/formats/pack/documents/store.js'
import { chooseManifest } from '../src/formats/pack/export/export.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)

/** The fastest round, with the highest peak RSS of all rounds. */
function best(rounds: Timed[]): Timed {
  if (rounds.length === 0) throw new Error('no round ran')
  const fastest = rounds.reduce((a, b) => (b.wall < a.wall ? b : a))
  return { ...fastest, rssMb: Math.max(...rounds.map((r) => r.rssMb)) }
}

/** The JSON document a `--json` run prints last. */
function doc(t: Timed): Record<string, unknown> {
  return JSON.parse(t.stdout.trim().split('\n').pop()!) as Record<string, unknown>
}

/** A field of a run's summary, wherever the document keeps it. */
function summaryField(d: Record<string, unknown>, field: string): unknown {
  const s = d.summary as Record<string, unknown> | undefined
  return s?.[field] ?? d[field]
}

const sql = (s: string): string => `'${s.replaceAll("'", "''")}'`

const dir = process.env.BENCH_DIR ?? await mkdtemp(join(tmpdir(), 'bench-import-'))
try {
  const { records, env } = await benchRecords(dir)
  const store = join(dir, 'store')
  if (!existsSync(join(store, 'jetcarp-store.json'))) {
    await rm(store, { recursive: true, force: true })
    const p = timedCli(['run', 'pack-publish', '--feed', 'bench', '--to', store, '--records', records, '--created', '2026-11-11T00:00:00Z'], { env })
    console.log(`store published: ${p.wall.toFixed(1)} s (not timed)`)
  }

  // The version's tables and their parts, from the manifest's index walk.
  const { hash, manifest } = await chooseManifest(store, {})
  const loader = storeIndexLoader(store)
  const tables: { table: string; parts: string[]; rows: number }[] = []
  for (const [table, root] of Object.entries(manifest.tables).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const parts: string[] = []
    let rows = 0
    for await (const e of walkTableIndex(root, loader, { table })) {
      if (e.kind !== 'part') continue
      parts.push(storeFile(store, objectPath(e.part.object, 'parquet')))
      rows += e.part.rows
    }
    tables.push({ table, parts, rows })
  }
  let bytes = 0
  for (const t of tables) for (const p of t.parts) bytes += (await stat(p)).size
  console.log(`records: ${PATTERNS} patterns; version ${hash.slice(0, 19)}...: ${tables.map((t) => `${t.table} ${t.rows} rows in ${t.parts.length} parts`).join(', ')}; ${(bytes / 1e6).toFixed(0)} MB of parts`)

  const work = join(dir, 'import')
  await mkdir(work, { recursive: true })
  const library = join(work, 'library.db')
  const duckFile = join(work, 'duckdb.db')
  const clearLibrary = async (): Promise<void> => {
    for (const f of [library, `${library}-wal`, `${library}-shm`, `${library}-journal`, `${library}.objects`]) await rm(f, { recursive: true, force: true })
  }
  /** Seconds DuckDB takes to load every table's parts into a new database file (wall, and this process's CPU: DuckDB's threads). */
  const duckLoad = async (): Promise<{ wall: number; cpu: number }> => {
    for (const f of [duckFile, `${duckFile}.wal`]) await rm(f, { force: true })
    const db = await DuckDBInstance.create(duckFile, { threads: '2' })
    const conn = await db.connect()
    const t0 = performance.now()
    const c0 = process.cpuUsage()
    for (const t of tables) {
      if (t.parts.length === 0) continue
      await conn.run(`CREATE TABLE "${t.table}" AS SELECT * FROM read_parquet([${t.parts.map(sql).join(',')}])`)
    }
    await conn.run('CHECKPOINT')
    const s = (performance.now() - t0) / 1000
    const c = process.cpuUsage(c0)
    const loaded = Number((await conn.runAndReadAll(`SELECT count(*) AS n FROM "patterns"`)).getRowObjects()[0]!.n)
    const expected = tables.find((t) => t.table === 'patterns')?.rows
    if (loaded !== expected) throw new Error(`duckdb loaded ${loaded} patterns, the index lists ${expected}`)
    conn.closeSync()
    db.closeSync()
    return { wall: s, cpu: (c.user + c.system) / 1e6 }
  }

  const imports: Timed[] = []
  const reimports: Timed[] = []
  const checks: Timed[] = []
  let duck = Infinity
  let duckCpu = Infinity
  for (let round = 0; round < ROUNDS; round++) {
    await clearLibrary()
    const first = timedCli(['run', 'pack-import', store, '--library', library, '--verify', 'none', '--json'], { env })
    const d1 = doc(first)
    if (summaryField(d1, 'already_imported') !== false) throw new Error(`the first import says ${first.stdout.slice(-1000)}`)
    imports.push(first)
    const again = timedCli(['run', 'pack-import', store, '--library', library, '--verify', 'none', '--json'], { env })
    const d2 = doc(again)
    if (summaryField(d2, 'already_imported') !== true) throw new Error(`the second import says ${again.stdout.slice(-1000)}`)
    reimports.push(again)
    const libMb = (await stat(library)).size / 1e6
    const check = timedCli(['run', 'pack-check', store, '--level', '2', '--json'], { env })
    if (doc(check).ok !== true) throw new Error(`pack-check --level 2 found ${check.stdout.slice(-1000)}`)
    checks.push(check)
    const dl = await duckLoad()
    duck = Math.min(duck, dl.wall)
    duckCpu = Math.min(duckCpu, dl.cpu)
    const duckMb = (await stat(duckFile)).size / 1e6
    console.log(`round ${round + 1}: import ${first.wall.toFixed(1)} s (${first.cpu.toFixed(1)} s CPU, ${first.rssMb.toFixed(0)} MB; facts ${String(summaryField(d1, 'facts_added'))}, library ${libMb.toFixed(0)} MB), re-import ${again.wall.toFixed(1)} s (${again.cpu.toFixed(1)} s CPU, ${again.rssMb.toFixed(0)} MB), pack-check --level 2 ${check.wall.toFixed(1)} s (${check.cpu.toFixed(1)} s CPU, ${check.rssMb.toFixed(0)} MB), duckdb load ${dl.wall.toFixed(2)} s (${dl.cpu.toFixed(1)} s CPU, file ${duckMb.toFixed(0)} MB)`)
  }
  await clearLibrary()
  for (const f of [duckFile, `${duckFile}.wal`]) await rm(f, { force: true })
  const imp = best(imports)
  const re = best(reimports)
  const check = best(checks)
  const rss = Math.max(imp.rssMb, re.rssMb)
  console.log(`pack-import (best): ${imp.wall.toFixed(2)} s wall, ${imp.cpu.toFixed(1)} s CPU; re-import (best) ${re.wall.toFixed(2)} s (${((100 * re.wall) / imp.wall).toFixed(0)}% of the import); peak RSS ${rss.toFixed(0)} MB; duckdb load (best) ${duck.toFixed(2)} s wall, ${duckCpu.toFixed(1)} s CPU (least)`)
  console.log(`pack-check --level 2 (best): ${check.wall.toFixed(2)} s wall, ${check.cpu.toFixed(1)} s CPU, peak RSS ${check.rssMb.toFixed(0)} MB: ${((100 * check.wall) / imp.wall).toFixed(0)}% of the import's wall time`)
  console.log(`pack-import ratio-vs-duckdb ${(imp.wall / duck).toFixed(3)} reimport-s ${re.wall.toFixed(2)} peak-rss-mb ${rss.toFixed(0)}`)
} finally {
  if (!process.env.BENCH_DIR) await rm(dir, { recursive: true, force: true })
}

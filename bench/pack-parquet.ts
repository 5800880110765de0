/**
 * Pack part writer throughput and memory against DuckDB, in the same run.
 *
 *   npm run build && node dist/bench/pack-parquet.js
 *
 * (Built: the writer's worker thread does not get tsx's loader under `node --import tsx`.)
 *
 * Rows: BENCH_ROWS (default 1,000,000) pattern-like rows of the patterns table (realistic identity text with
 * its phases= line, typed phases lists of 3 to 9 cells over periods 1 to 4, a few nulls), made by a pure
 * function of the row number in id order (the ids look like hashes but are made increasing, so no sort is
 * needed; they do not hash their identity, which no writer checks).
 *
 * (1) DuckDB, 2 threads: the same rows as JSONL (written first, not timed) to one zstd level 9 Parquet
 *     file with the patterns table's column types.
 * (2) Our writer, in a child process so its peak RSS is its own: the rows made on the fly and written in
 *     batches of 1,000 to parts (several, if they pass 224 MiB). Making the rows is timed with it; the
 *     child reports how long making them alone takes too.
 * Both run BENCH_ROUNDS times (default 3), alternately; each side's best time counts, since on a shared
 * machine any one run can be slowed by others. The last line is machine-readable:
 *   pack-parquet-write ratio-vs-duckdb R peak-rss-mb M
 * R = our best wall seconds / DuckDB's best; M = the writer process's highest peak RSS. Targets: R <= 2, M <= 512.
 */
import { spawnSync } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { once } from 'node:events'
import { DuckDBInstance } from '@duckdb/node-api'
import { PackPartWriter } from '../src/formats/pack/tables/parquet-write.js'
import { PACK_TABLES } from '../src/formats/pack/tables/table-schemas.js'

const ROWS = Number(process.env['BENCH_ROWS'] ?? 1_000_000)
const BATCH = 1000
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3)

/** Random-looking 24-hex-digit tails; a row's id is 8 hex digits growing with it and one of these. */
const TAILS = Array.from({ length: 65_536 }, (_, k) => {
  let x = Math.imul(k ^ 0x9e3779b9, 0x85ebca6b) >>> 0
  let tail = ''
  for (let j = 0; j < 3; j++) {
    x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35) >>> 0
    tail += x.toString(16).padStart(8, '0')
  }
  return tail
})

/** 32 hex digits, unique and increasing with i (for i < ROWS <= 2^32). */
function idOf(i: number): string {
  return Math.floor((i / ROWS) * 2 ** 32).toString(16).padStart(8, '0') + TAILS[i % TAILS.length]!
}

const CLASSES = ['oscillator', 'spaceship', 'still_life', 'puffer'] as const
const PHASE_TEXT = new Map<number, string>()
const PIN = '98f947d2e0b965f8beff68af32762fe4'

function row(i: number): Record<string, unknown> {
  const period = 1 + (i % 4)
  const cells = 3 + ((i >>> 2) % 7)
  const cls = CLASSES[i % 4]!
  const dx = cls === 'spaceship' ? 1 : 0
  const dy = cls === 'spaceship' ? -1 : 0
  const phases: { i: number; j: number; k: number; s: number }[][] = []
  for (let p = 0; p < period; p++) {
    const phase: { i: number; j: number; k: number; s: number }[] = []
    for (let c = 0; c < cells; c++) phase.push({ i: (c * 7 + i) % 5, j: ((c * 3) % 4) + p, k: 0, s: 1 })
    phases.push(phase)
  }
  // The phases= line depends on (period, cells, i % 5) only: made once for each.
  const key = (period * 16 + cells) * 8 + (i % 5)
  let text = PHASE_TEXT.get(key)
  if (text === undefined) PHASE_TEXT.set(key, (text = phases.map((ph) => ph.map((c) => `${c.i},${c.j},${c.k},${c.s}`).join(' ')).join(';')))
  const canonical = `${'.O.'.repeat(1 + (i % 3))}\n${(i % 977).toString(2).replaceAll('0', '.').replaceAll('1', 'O')}`
  const identity =
    `jetcarp-pattern-v3\ntiling=square\nrule=B3/S23\nnb=touch\nsteps=1\nclass=${cls}\nperiod=${period}\nd=${dx},${dy}\n` +
    `cells=${cells}\ncanonical=${canonical.replaceAll('\n', '/')}\nphases=${text}`
  return {
    id: idOf(i), identity, pin_key: 'square', pin: PIN, model: 'life-like', neighbourhood: 'touch', steps_per_gen: 1, class: cls,
    period, dx, dy, speed: cls === 'spaceship' ? 'c/4 diagonal' : null, cells, min_cells: cells, max_cells: cells + (i % 2), phases,
    canonical, rule: cls === 'puffer' ? 'B3/S23' : null, site: null, gun: null, family: 'bs', semantics: '1',
    class_group: 'mixed', tiling_group: 'square',
  }
}

async function writer(dir: string): Promise<void> {
  const t0 = performance.now()
  const w = new PackPartWriter(PACK_TABLES.patterns, { dir, partition: { class_group: 'mixed', tiling_group: 'square' } })
  let batch: object[] = []
  for (let i = 0; i < ROWS; i++) {
    batch.push(row(i))
    if (batch.length === BATCH) {
      await w.write(batch)
      batch = []
    }
  }
  if (batch.length > 0) await w.write(batch)
  const parts = await w.finish()
  const seconds = (performance.now() - t0) / 1000
  const rssMb = process.resourceUsage().maxRSS / 1024
  const g0 = performance.now()
  let keep = 0
  for (let i = 0; i < ROWS; i++) keep += (row(i)['cells'] as number) & 1
  const genSeconds = (performance.now() - g0) / 1000
  console.log(JSON.stringify({ seconds, rssMb, genSeconds, keep, parts: parts.length, bytes: parts.reduce((n, p) => n + p.bytes, 0) }))
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-pack-parquet-'))
  try {
    const jsonl = join(dir, 'rows.jsonl')
    const out = createWriteStream(jsonl)
    let lines: string[] = []
    for (let i = 0; i < ROWS; i++) {
      lines.push(JSON.stringify(row(i)))
      if (lines.length === 10_000) {
        if (!out.write(lines.join('\n') + '\n')) await once(out, 'drain')
        lines = []
      }
    }
    if (lines.length > 0) out.write(lines.join('\n') + '\n')
    out.end()
    await once(out, 'finish')
    console.log(`data: ${ROWS} pattern rows, JSONL ${((await stat(jsonl)).size / 1e6).toFixed(0)} MB (not timed)`)

    // On a shared machine one run of either can be slowed by others: alternate, and take each one's best.
    const duckFile = join(dir, 'duckdb.parquet')
    // DuckDB reads the JSON as the column types it gives our own part of one row: the same table both ways.
    const probe = new PackPartWriter(PACK_TABLES.patterns, { dir, partition: { class_group: 'mixed', tiling_group: 'square' } })
    await probe.write([row(0)])
    const [probePart] = await probe.finish()
    const describe = await DuckDBInstance.create(':memory:')
    const described = (await (await describe.connect()).runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${probePart!.path}')`)).getRowObjectsJson()
    describe.closeSync()
    await rm(probePart!.path)
    const columns = described.map((c) => `"${String(c['column_name'])}": '${String(c['column_type']).replaceAll("'", "''")}'`).join(', ')
    const duckTimes: number[] = []
    const ours: { seconds: number; rssMb: number; genSeconds: number; parts: number; bytes: number }[] = []
    for (let round = 1; round <= ROUNDS; round++) {
      await rm(duckFile, { force: true })
      const db = await DuckDBInstance.create(':memory:', { threads: '2' })
      const conn = await db.connect()
      const d0 = performance.now()
      await conn.run(`COPY (SELECT * FROM read_json('${jsonl}', format = 'newline_delimited', columns = {${columns}}))
        TO '${duckFile}' (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 9)`)
      duckTimes.push((performance.now() - d0) / 1000)
      conn.closeSync()
      db.closeSync()
      const child = spawnSync(process.execPath, [...process.execArgv, process.argv[1]!, '--writer', dir], { encoding: 'utf8', maxBuffer: 1 << 20 })
      if (child.status !== 0) throw new Error(`writer failed: ${child.stderr}`)
      const run = JSON.parse(child.stdout.trim().split('\n').pop()!) as (typeof ours)[number]
      ours.push(run)
      for (const f of await readdir(dir)) if (f.startsWith('.part-')) await rm(join(dir, f))
      console.log(`round ${round}: duckdb (2 threads, zstd 9) ${duckTimes.at(-1)!.toFixed(2)} s, ${((await stat(duckFile)).size / 1e6).toFixed(1)} MB; ` +
        `pack writer ${run.seconds.toFixed(2)} s (making the rows alone ${run.genSeconds.toFixed(2)} s), ${run.parts} part(s), ${(run.bytes / 1e6).toFixed(1)} MB, peak RSS ${run.rssMb.toFixed(0)} MB`)
    }
    const duck = Math.min(...duckTimes)
    const best = Math.min(...ours.map((r) => r.seconds))
    const rss = Math.max(...ours.map((r) => r.rssMb))
    console.log(`pack-parquet-write ratio-vs-duckdb ${(best / duck).toFixed(3)} peak-rss-mb ${rss.toFixed(0)}`)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

if (process.argv[2] === '--writer') await writer(process.argv[3]!)
else await main()

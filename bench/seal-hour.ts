/**
 * bench:seal-hour — `pipe run seal-hour` on a deterministic hour of one venue's trades (1,000,000 venue frames
 * over 10 instruments, received by both replicas, 1% by one only) against DuckDB turning the same frames
 * from JSONL into one zstd Parquet table, in the same run; then `pipe run verify` on the sealed hour, in MB/s
 * of raw JSON (decompressed raw.jsonl.zst bytes / seconds). Data preparation is not timed. The last line is
 * machine-readable:
 *   seal-hour ratio-vs-duckdb R peak-rss-mb M verify-mb-per-s V
 * R = seal wall seconds / DuckDB wall seconds; M = the seal's peak RSS; V = verify's MB/s of raw JSON.
 *
 * `--venue V` picks the venue (default binance):
 * - `binance`: Binance spot trades from src/sim/replicas.ts, as before this option.
 * - `binance-usdm`: USD-M aggregate trades (`@aggTrade`) on combined streams, as the recorder records futures.
 * - `kraken`: Kraken WebSocket v2 trade messages, one trade each.
 * - `okx`: OKX v5 `trades` pushes of perpetual swaps (`BTC-USDT-SWAP`), one taker order each.
 * - `bybit`: Bybit v5 linear `publicTrade` messages (`BTCUSDT`), one trade each.
 * - `deribit`: Deribit JSON-RPC notifications of `trades.<instrument>.100ms` (`BTC-PERPETUAL`), one trade each.
 * - `coinbase`: Coinbase Advanced Trade `market_trades` updates (`BTC-USD`), one trade each, every copy
 *   numbered by its replica's connection (`sequence_num`): see {@link coinbaseNumbering}.
 * All but binance are made by the venue simulator's own market code (src/sim/venue: DIALECTS) and journaled
 * here as src/sim/replicas.ts journals Binance spot (connect, open, subscribed, then each frame's receipts,
 * with clock fields, and a `sequence-break` where a replica's own sequence skips), without acknowledgement
 * or heartbeat frames. DuckDB reads a JSONL line per frame the sealer sees (a pair of identical copies is one
 * frame; on Coinbase most copies differ, and each is a frame of its own), and the run checks that its table
 * has as many rows as the sealed trades table.
 * Any venue but binance names itself in the last line (`seal-hour ratio-vs-duckdb R venue V peak-rss-mb ..`);
 * Binance spot's line is the one earlier runs printed, so that they compare.
 * `--venue all` runs every venue in turn, prints one summary line each (`seal-hour venue V frames N ..`),
 * then the last line with the worst of them: the highest ratio and the venue that has it, the highest peak
 * RSS, the lowest verify MB/s. A venue that fails is reported and the others still run; the bench then fails
 * without a last line.
 *
 * The seal and DuckDB run alternately BENCH_ROUNDS times (default 3) and each side's best wall time is
 * compared: the box is shared, and a neighbour's burst in one run should not decide the ratio.
 *
 * Environment: BENCH_FRAMES (default 1000000), BENCH_ROUNDS, BENCH_DIR (keep and reuse each venue's journal
 * and JSONL there, in BENCH_DIR/<venue>, for repeated runs while profiling), BENCH_SEAL_NODE_ARGS (extra node
 * flags for the seal, e.g. --cpu-prof).
 */
import { readdir, readFile, rm, stat, mkdir, mkdtemp } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'
import { Decompressor } from 'zstd-napi'
import { timedCli, type Timed } from './timed-cli.js'
import { HOUR, ROUNDS, VENUES, VENUE_NAMES, prepareHour, sealNodeArgs, selectList, type VenueName } from './hours.js'

interface VenueResult { venue: VenueName; frames: number; sealWall: number; duckWall: number; ratio: number; peakRssMb: number; verifyMbPerS: number }

/** Prepares (or reuses) `venue`'s hour in `dir`, times the seal against DuckDB, verifies the sealed hour. */
async function benchVenue(name: VenueName, dir: string, keys: string, conn: DuckDBConnection): Promise<VenueResult> {
  const venue = VENUES[name]
  const { journal, jsonl, jsonlLines } = await prepareHour(name, dir)
  const keyFile = join(keys, (await readdir(keys)).find((f) => f !== 'jwks.json')!)
  const jwks = join(keys, 'jwks.json')
  let journalBytes = 0
  for (const r of await readdir(journal)) for (const f of await readdir(join(journal, r))) journalBytes += (await stat(join(journal, r, f))).size
  console.log(`data: ${jsonlLines} trade frames over ${venue.instruments.length} instruments; journal ${(journalBytes / 1e6).toFixed(0)} MB, JSONL ${((await stat(jsonl)).size / 1e6).toFixed(0)} MB`)
  if (venue.note) console.log(`${name}: ${venue.note}`)

  // (1) the sealer and (2) DuckDB (JSONL -> one zstd Parquet table, 2 threads, exact decimals and
  // nanosecond times), alternately; each side's best round counts.
  const root = join(dir, `root-${process.pid}`)
  const parquet = join(dir, `duckdb-${process.pid}.parquet`)
  const sql = `COPY (
    SELECT ${selectList(venue.columns)},
           make_timestamp_ns(CAST(json->>'$.receive_time' AS BIGINT)) AS receive_time
    FROM read_ndjson_objects('${jsonl}')
  ) TO '${parquet}' (FORMAT parquet, COMPRESSION zstd)`
  let seal: Timed | null = null
  let duckWall = Infinity
  let duckCpu = { user: 0, system: 0 }
  let sealPeakMb = 0
  try {
    for (let round = 0; round < ROUNDS; round++) {
      await rm(root, { recursive: true, force: true })
      const s = timedCli(['run', 'seal-hour', '--venue', name, '--channel', 'trades', '--hour', HOUR, '--journal', journal, '--out', root, '--key', keyFile, '--recorder-stopped'], { nodeArgs: sealNodeArgs })
      sealPeakMb = Math.max(sealPeakMb, s.rssMb)
      if (!seal || s.wall < seal.wall) seal = s
      await rm(parquet, { force: true })
      const cpu0 = process.cpuUsage()
      const d0 = performance.now()
      await conn.run(sql)
      const wall = (performance.now() - d0) / 1000
      if (wall < duckWall) { duckWall = wall; duckCpu = process.cpuUsage(cpu0) }
      console.log(`round ${round + 1}: seal ${s.wall.toFixed(2)} s (${(s.user + s.sys).toFixed(1)} s CPU, ${s.rssMb.toFixed(0)} MB), duckdb ${wall.toFixed(2)} s`)
    }
    const duckRows = Number((await conn.runAndReadAll(`SELECT count(*) FROM read_parquet('${parquet}')`)).getRows()[0]![0])
    if (duckRows !== jsonlLines) throw new Error(`DuckDB wrote ${duckRows} rows, expected ${jsonlLines}`)
    if (!seal) throw new Error('no round ran')

    // (3) the verifier on the sealed hour.
    const verify = timedCli(['run', 'verify', '--root', root, '--keys', jwks, '--json'])
    const summary = JSON.parse(verify.stdout.trim().split('\n').pop()!) as Record<string, unknown>
    const hourDir = join(root, 'recorder=recorder', `venue=${name}`, 'channel=trades', 'date=2026-10-03', 'hour=14')
    const zst = await readFile(join(hourDir, 'raw.jsonl.zst'))
    const rawBytes = new Decompressor().decompress(zst).byteLength
    const manifest = JSON.parse(await readFile(join(hourDir, 'manifest.json'), 'utf8')) as { files: { name: string; rows: number }[]; completeness: unknown; replica_agreement: unknown }
    const verifyMbPerS = rawBytes / 1e6 / verify.wall
    // The comparison is fair only if DuckDB converted exactly the frames the sealer wrote rows for.
    const sealedRows = manifest.files.find((f) => f.name === 'trades.parquet')?.rows
    if (sealedRows !== duckRows) throw new Error(`the sealed trades table has ${sealedRows} rows, DuckDB's ${duckRows}`)

    const cpu = (t: { user: number; sys: number }) => `${(t.user + t.sys).toFixed(1)} s CPU (user ${t.user.toFixed(1)}, sys ${t.sys.toFixed(1)})`
    console.log(`sealed: ${manifest.files.map((f) => `${f.name} ${f.rows} rows`).join(', ')}; agreement ${JSON.stringify(manifest.replica_agreement)}; completeness ${JSON.stringify(manifest.completeness)}`)
    console.log(`seal-hour (best):   ${seal.wall.toFixed(2)} s wall, ${cpu(seal)}, peak RSS ${sealPeakMb.toFixed(0)} MB (highest of ${ROUNDS} rounds)`)
    console.log(`duckdb (best):      ${duckWall.toFixed(2)} s wall, ${cpu({ user: duckCpu.user / 1e6, sys: duckCpu.system / 1e6 })}, ${duckRows} rows`)
    console.log(`verify:             ${verify.wall.toFixed(2)} s wall, ${cpu(verify)}, peak RSS ${verify.rssMb.toFixed(0)} MB, ${(rawBytes / 1e6).toFixed(0)} MB raw JSON, ${verifyMbPerS.toFixed(0)} MB/s; findings ${JSON.stringify(summary['findings'] ?? summary)}`.slice(0, 400))
    return { venue: name, frames: jsonlLines, sealWall: seal.wall, duckWall, ratio: seal.wall / duckWall, peakRssMb: sealPeakMb, verifyMbPerS }
  } finally {
    // The prepared data stays for reuse; what the rounds made goes.
    await rm(root, { recursive: true, force: true })
    await rm(parquet, { force: true })
  }
}

/** The machine-readable last line; `venue` names the venue the ratio is of (omitted for Binance spot alone, as before --venue). */
function lastLine(ratio: number, venue: VenueName | null, peakRssMb: number, verifyMbPerS: number): string {
  return `seal-hour ratio-vs-duckdb ${ratio.toFixed(3)}${venue === null ? '' : ` venue ${venue}`} peak-rss-mb ${peakRssMb.toFixed(0)} verify-mb-per-s ${verifyMbPerS.toFixed(0)}`
}

/** The venues `argv` asks for (`--venue V`, default binance; `all`: every one), or a usage error. */
function venuesOf(argv: string[]): VenueName[] | string {
  const usage = `usage: seal-hour [--venue ${[...VENUE_NAMES, 'all'].join('|')}]`
  if (argv.length === 0) return ['binance']
  if (argv.length !== 2 || argv[0] !== '--venue') return `${usage}; got: ${argv.join(' ')}`
  const v = argv[1]!
  if (v === 'all') return VENUE_NAMES
  if ((VENUE_NAMES as string[]).includes(v)) return [v as VenueName]
  return `unknown venue ${JSON.stringify(v)}; supported: ${VENUE_NAMES.join(', ')}, or all`
}

const venues = venuesOf(process.argv.slice(2))
if (typeof venues === 'string') {
  console.error(`seal-hour: ${venues}`)
  process.exit(2)
}
const keep = process.env.BENCH_DIR
const dir = keep ?? await mkdtemp(join(tmpdir(), 'bench-seal-hour-'))
try {
  await mkdir(dir, { recursive: true })
  const keys = join(dir, 'keys')
  if (!existsSync(join(keys, 'jwks.json'))) timedCli(['key', 'new', '--out', keys, '--valid-from', '2026-01-01T00:00:00.000000000Z'])
  const db = await DuckDBInstance.create(':memory:', { threads: '2' })
  const conn = await db.connect()
  const results: VenueResult[] = []
  // With several venues, one that cannot be sealed (e.g. the seal's worker out of memory) is reported and the
  // others still run; the bench fails at the end, with no last line, as a single venue's failure does.
  const failed: VenueName[] = []
  try {
    for (const name of venues) {
      if (venues.length === 1) results.push(await benchVenue(name, join(dir, name), keys, conn))
      else {
        console.log(`venue ${name}:`)
        try {
          results.push(await benchVenue(name, join(dir, name), keys, conn))
        } catch (err) {
          failed.push(name)
          console.log(`failed: ${err instanceof Error ? err.message : String(err)}`)
        }
      }
    }
  } finally {
    conn.closeSync()
  }
  if (venues.length === 1) {
    const r = results[0]!
    console.log(lastLine(r.ratio, r.venue === 'binance' ? null : r.venue, r.peakRssMb, r.verifyMbPerS))
  } else {
    for (const r of results) {
      console.log(`seal-hour venue ${r.venue} frames ${r.frames} seal-s ${r.sealWall.toFixed(2)} duckdb-s ${r.duckWall.toFixed(2)} ratio-vs-duckdb ${r.ratio.toFixed(3)} peak-rss-mb ${r.peakRssMb.toFixed(0)} verify-mb-per-s ${r.verifyMbPerS.toFixed(0)}`)
    }
    if (failed.length > 0) throw new Error(`no result for ${failed.join(', ')} (see each venue's output above)`)
    const worst = results.reduce((w, r) => (r.ratio > w.ratio ? r : w))
    console.log(lastLine(worst.ratio, worst.venue, Math.max(...results.map((r) => r.peakRssMb)), Math.min(...results.map((r) => r.verifyMbPerS))))
  }
} finally {
  if (!keep) await rm(dir, { recursive: true, force: true })
}

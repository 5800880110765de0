/**
 * bench:seal-hour — `pipe run seal-hour` on a deterministic hour of Binance trades (1,000,000 venue frames
 * over 10 instruments, received by both replicas, 1% by one only) against DuckDB turning the same frames
 * from JSONL into one zstd Parquet table, in the same run; then `pipe run verify` on the sealed hour, in MB/s
 * of raw JSON (decompressed raw.jsonl.zst bytes / seconds). Data preparation is not timed. The last line is
 * machine-readable:
 *   seal-hour ratio-vs-duckdb R peak-rss-mb M verify-mb-per-s V
 * R = seal wall seconds / DuckDB wall seconds; M = the seal's peak RSS; V = verify's MB/s of raw JSON.
 *
 * The seal and DuckDB run alternately BENCH_ROUNDS times (default 3) and each side's best wall time is
 * compared: the box is shared, and a neighbour's burst in one run should not decide the ratio.
 *
 * Environment: BENCH_FRAMES (default 1000000), BENCH_ROUNDS, BENCH_DIR (keep and reuse the journal and
 * JSONL there, for repeated runs while profiling), BENCH_SEAL_NODE_ARGS (extra node flags for the seal,
 * e.g. --cpu-prof).
 */
import { createWriteStream, existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { once } from 'node:events'
import { timedCli, type Timed } from './timed-cli.js'
import { DuckDBInstance } from '@duckdb/node-api'
import { Decompressor } from 'zstd-napi'
import { readFile } from 'node:fs/promises'
import { JournalBuilder } from '../src/formats/record/journal/journal.js'
import { FramePairer, type MergedFrame } from '../src/formats/record/merge.js'
import { simulateReplicas } from '../src/sim/replicas.js'

const FRAMES = Number(process.env.BENCH_FRAMES ?? 1_000_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const HOUR = '2026-10-03T14'
const HOUR_START = BigInt(Date.UTC(2026, 9, 3, 14)) * 1_000_000n
const HOUR_NS = 3_600_000_000_000n
const INSTRUMENTS = ['BTCUSDT', 'ETHUSDT', 'SOLUSDT', 'BNBUSDT', 'XRPUSDT', 'ADAUSDT', 'DOGEUSDT', 'TRXUSDT', 'LINKUSDT', 'AVAXUSDT']
const sealNodeArgs = (process.env.BENCH_SEAL_NODE_ARGS ?? '').split(' ').filter((s) => s !== '')

const keep = process.env.BENCH_DIR
const dir = keep ?? await mkdtemp(join(tmpdir(), 'bench-seal-hour-'))
try {
  await mkdir(dir, { recursive: true })
  const journal = join(dir, 'journal')
  const jsonl = join(dir, 'trades.jsonl')
  const keys = join(dir, 'keys')
  const ready = join(dir, 'ready')

  if (!existsSync(ready)) {
    await rm(journal, { recursive: true, force: true })
    const t0 = performance.now()
    const builder = new JournalBuilder(journal)
    const pairer = new FramePairer()
    const out = createWriteStream(jsonl)
    let pending: string[] = []
    let lines = 0
    const writeFrames = async (frames: MergedFrame[]) => {
      for (const f of frames) {
        if (f.frameTime < HOUR_START || f.frameTime >= HOUR_START + HOUR_NS) continue
        const text = Buffer.from(f.payload).toString('utf8')
        if (!text.startsWith('{"e":"trade"')) continue
        pending.push(`{"receive_time":${f.frameTime},${text.slice(1)}`)
        lines++
      }
      if (pending.length >= 4096) {
        if (!out.write(pending.join('\n') + '\n')) await once(out, 'drain')
        pending = []
      }
    }
    const events = simulateReplicas({
      channel: 'trades', start: HOUR_START - 10_000_000_000n, end: HOUR_START + HOUR_NS, instruments: INSTRUMENTS,
      framesPerSecond: FRAMES / 3600, oneReplicaShare: 0.01, seed: 11,
    })
    for (const e of events) {
      await builder.append(e)
      if (e.kind === 'frame') await writeFrames(pairer.push(e))
    }
    await writeFrames(pairer.flush())
    if (pending.length > 0) out.write(pending.join('\n') + '\n')
    out.end()
    await once(out, 'finish')
    await builder.commit()
    timedCli(['key', 'new', '--out', keys, '--valid-from', '2026-01-01T00:00:00.000000000Z'])
    await writeFile(ready, `${lines}\n`)
    console.log(`prepared in ${((performance.now() - t0) / 1000).toFixed(1)} s (not timed): ${builder.events} journal events, ${lines} trade frames as JSONL`)
  }
  const jsonlLines = Number((await readFile(ready, 'utf8')).trim())
  const keyFile = join(keys, (await readdir(keys)).find((f) => f !== 'jwks.json')!)
  const jwks = join(keys, 'jwks.json')
  let journalBytes = 0
  for (const r of await readdir(journal)) for (const f of await readdir(join(journal, r))) journalBytes += (await stat(join(journal, r, f))).size
  console.log(`data: ${jsonlLines} trade frames over ${INSTRUMENTS.length} instruments; journal ${(journalBytes / 1e6).toFixed(0)} MB, JSONL ${((await stat(jsonl)).size / 1e6).toFixed(0)} MB`)

  // (1) the sealer and (2) DuckDB (JSONL -> one zstd Parquet table, 2 threads, exact decimals and
  // nanosecond times), alternately; each side's best round counts.
  const root = join(dir, `root-${process.pid}`)
  const parquet = join(dir, `duckdb-${process.pid}.parquet`)
  const db = await DuckDBInstance.create(':memory:', { threads: '2' })
  const conn = await db.connect()
  const sql = `COPY (
    SELECT json->>'$.s' AS instrument,
           CAST(json->>'$.t' AS BIGINT) AS trade_id,
           CASE WHEN CAST(json->'$.m' AS BOOLEAN) THEN 'sell' ELSE 'buy' END AS side,
           CAST(json->>'$.p' AS DECIMAL(38,18)) AS price,
           CAST(json->>'$.q' AS DECIMAL(38,18)) AS size,
           make_timestamp_ns(least(CAST(json->>'$.E' AS BIGINT), CAST(json->>'$.T' AS BIGINT)) * 1000000) AS exchange_time,
           make_timestamp_ns(CAST(json->>'$.receive_time' AS BIGINT)) AS receive_time
    FROM read_ndjson_objects('${jsonl}')
  ) TO '${parquet}' (FORMAT parquet, COMPRESSION zstd)`
  let seal: Timed | null = null
  let duckWall = Infinity
  let duckCpu = { user: 0, system: 0 }
  let sealPeakMb = 0
  for (let round = 0; round < ROUNDS; round++) {
    await rm(root, { recursive: true, force: true })
    const s = timedCli(['run', 'seal-hour', '--venue', 'binance', '--channel', 'trades', '--hour', HOUR, '--journal', journal, '--out', root, '--key', keyFile, '--recorder-stopped'], { nodeArgs: sealNodeArgs })
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
  conn.closeSync()
  if (duckRows !== jsonlLines) throw new Error(`DuckDB wrote ${duckRows} rows, expected ${jsonlLines}`)
  if (!seal) throw new Error('no round ran')

  // (3) the verifier on the sealed hour.
  const verify = timedCli(['run', 'verify', '--root', root, '--keys', jwks, '--json'])
  const summary = JSON.parse(verify.stdout.trim().split('\n').pop()!) as Record<string, unknown>
  const hourDir = join(root, 'recorder=recorder', 'venue=binance', 'channel=trades', 'date=2026-10-03', 'hour=14')
  const zst = await readFile(join(hourDir, 'raw.jsonl.zst'))
  const rawBytes = new Decompressor().decompress(zst).byteLength
  const manifest = JSON.parse(await readFile(join(hourDir, 'manifest.json'), 'utf8')) as { files: { name: string; rows: number }[]; completeness: unknown; replica_agreement: unknown }

  const cpu = (t: { user: number; sys: number }) => `${(t.user + t.sys).toFixed(1)} s CPU (user ${t.user.toFixed(1)}, sys ${t.sys.toFixed(1)})`
  console.log(`sealed: ${manifest.files.map((f) => `${f.name} ${f.rows} rows`).join(', ')}; agreement ${JSON.stringify(manifest.replica_agreement)}; completeness ${JSON.stringify(manifest.completeness)}`)
  console.log(`seal-hour (best):   ${seal.wall.toFixed(2)} s wall, ${cpu(seal)}, peak RSS ${sealPeakMb.toFixed(0)} MB (highest of ${ROUNDS} rounds)`)
  console.log(`duckdb (best):      ${duckWall.toFixed(2)} s wall, ${cpu({ user: duckCpu.user / 1e6, sys: duckCpu.system / 1e6 })}, ${duckRows} rows`)
  console.log(`verify:             ${verify.wall.toFixed(2)} s wall, ${cpu(verify)}, peak RSS ${verify.rssMb.toFixed(0)} MB, ${(rawBytes / 1e6).toFixed(0)} MB raw JSON, ${(rawBytes / 1e6 / verify.wall).toFixed(0)} MB/s; findings ${JSON.stringify(summary['findings'] ?? summary)}`.slice(0, 400))
  console.log(`seal-hour ratio-vs-duckdb ${(seal.wall / duckWall).toFixed(3)} peak-rss-mb ${sealPeakMb.toFixed(0)} verify-mb-per-s ${(rawBytes / 1e6 / verify.wall).toFixed(0)}`)
  if (keep) await rm(root, { recursive: true, force: true })
  if (keep) await rm(parquet, { force: true })
} finally {
  if (!keep) await rm(dir, { recursive: true, force: true })
}

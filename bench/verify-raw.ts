/**
 * bench:verify-raw — verify-raw's throughput against the raw I/O floor, `zstd -dc FILE | b3sum`, on the same
 * deterministic file in the same run, and its peak RSS, on four shapes of data: a trades hour (BENCH_FRAMES
 * envelopes, default 1,000,000, 1% received by one replica only), a book hour (BENCH_BOOK_FRAMES depth updates,
 * default 250,000, of 20 levels a side), the trades hour with every frame received by one replica only, and
 * with no clock fields in its receipts. Each shape prints its own line; the last line is machine-readable,
 * with the lowest ratio and the highest peak RSS of them:
 *   verify-raw ratio-vs-floor R peak-rss-mb M
 */
import { spawnSync } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { CompressStream } from 'zstd-napi'
import { rawSampleLines, type RawSampleOptions } from '../src/sim/raw-sample.js'
import { timedCli } from './timed-cli.js'

const FRAMES = Number(process.env.BENCH_FRAMES ?? 1_000_000)
const BOOK_FRAMES = Number(process.env.BENCH_BOOK_FRAMES ?? 250_000)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
/** Seconds `bash -c command` takes; throws with its stderr unless it exits 0. */
function timedShell(command: string): number {
  const t0 = performance.now()
  const r = spawnSync('bash', ['-c', command], { encoding: 'utf8', maxBuffer: 1 << 26 })
  if (r.status !== 0) throw new Error(`${command} failed (exit ${r.status}): ${r.stderr.slice(-500)}`)
  return (performance.now() - t0) / 1000
}

/** The data shapes: each one's file is verified against its own floor. */
const SHAPES: { name: string; frames: number; opts: Partial<RawSampleOptions> }[] = [
  { name: 'trades', frames: FRAMES, opts: {} },
  { name: 'book', frames: BOOK_FRAMES, opts: { shape: 'book', levels: 20 } },
  { name: 'one-replica', frames: FRAMES, opts: { oneReplicaShare: 1 } },
  { name: 'no-clock', frames: FRAMES, opts: { clock: false } },
]

const dir = await mkdtemp(join(tmpdir(), 'bench-verify-raw-'))
try {
  const results: { name: string; ratio: number; rssMb: number }[] = []
  for (const shape of SHAPES) {
    const file = join(dir, `${shape.name}.jsonl.zst`)
    let plainBytes = 0
    const lines = Readable.from((function* () {
      for (const line of rawSampleLines({ hourStart: Date.UTC(2026, 9, 3, 14) / 1000, frames: shape.frames, seed: 7, ...shape.opts })) {
        plainBytes += Buffer.byteLength(line)
        yield line
      }
    })())
    await pipeline(lines, new CompressStream({ compressionLevel: 3 }), createWriteStream(file))
    const zstBytes = (await stat(file)).size
    const mb = plainBytes / 1e6
    console.log(`${shape.name}: ${shape.frames} envelopes, ${mb.toFixed(0)} MB of JSON, ${(zstBytes / 1e6).toFixed(1)} MB zstd`)

    const floorSeconds = Math.min(...Array.from({ length: RUNS }, () => timedShell(`zstd -dc '${file}' | b3sum`)))
    const verifyRuns = Array.from({ length: RUNS }, () => timedCli(['run', 'verify-raw', '--file', file, '--rows', String(shape.frames), '--hour', '2026-10-03T14']))
    const verifySeconds = Math.min(...verifyRuns.map((r) => r.wall))
    const peakRssMb = Math.max(...verifyRuns.map((r) => r.rssMb))
    const floorMbs = mb / floorSeconds
    const verifyMbs = mb / verifySeconds
    console.log(`  floor (zstd -dc | b3sum): ${floorSeconds.toFixed(2)} s, ${floorMbs.toFixed(0)} MB/s of JSON (best of ${RUNS})`)
    console.log(`  verify-raw:               ${verifySeconds.toFixed(2)} s, ${verifyMbs.toFixed(0)} MB/s of JSON (best of ${RUNS}), ${(shape.frames / verifySeconds / 1e6).toFixed(2)} M lines/s, peak RSS ${peakRssMb.toFixed(0)} MB`)
    console.log(`verify-raw shape ${shape.name} ratio-vs-floor ${(verifyMbs / floorMbs).toFixed(3)} peak-rss-mb ${peakRssMb.toFixed(0)}`)
    results.push({ name: shape.name, ratio: verifyMbs / floorMbs, rssMb: peakRssMb })
    await rm(file, { force: true })
  }
  const lowest = results.reduce((w, r) => (r.ratio < w.ratio ? r : w))
  console.log(`verify-raw ratio-vs-floor ${lowest.ratio.toFixed(3)} peak-rss-mb ${Math.max(...results.map((r) => r.rssMb)).toFixed(0)}`)
} finally {
  await rm(dir, { recursive: true, force: true })
}

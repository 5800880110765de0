/**
 * bench:verify-raw — verify-raw's throughput against the raw I/O floor, `zstd -dc FILE | b3sum`, on the same
 * deterministic file in the same run, and its peak RSS. The last line is machine-readable:
 *   verify-raw ratio-vs-floor R peak-rss-mb M
 */
import { spawnSync } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { CompressStream } from 'zstd-napi'
import { rawSampleLines } from '../src/sim/raw-sample.js'

const FRAMES = Number(process.env.BENCH_FRAMES ?? 1_000_000)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const cli = fileURLToPath(new URL('../bin/pipe.js', import.meta.url))

function timed(cmd: string, args: string[]): { seconds: number; stdout: string; stderr: string; status: number | null } {
  const t0 = performance.now()
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 26 })
  return { seconds: (performance.now() - t0) / 1000, stdout: r.stdout, stderr: r.stderr, status: r.status }
}

function best<T extends { seconds: number }>(runs: T[]): T {
  return runs.reduce((a, b) => (b.seconds < a.seconds ? b : a))
}

const dir = await mkdtemp(join(tmpdir(), 'bench-verify-raw-'))
try {
  const file = join(dir, 'raw.jsonl.zst')
  let plainBytes = 0
  const lines = Readable.from((function* () {
    for (const line of rawSampleLines({ hourStart: Date.UTC(2026, 9, 3, 14) / 1000, frames: FRAMES, seed: 7 })) {
      plainBytes += Buffer.byteLength(line)
      yield line
    }
  })())
  await pipeline(lines, new CompressStream({ compressionLevel: 3 }), createWriteStream(file))
  const zstBytes = (await stat(file)).size
  const mb = plainBytes / 1e6
  console.log(`file: ${FRAMES} envelopes, ${mb.toFixed(0)} MB of JSON, ${(zstBytes / 1e6).toFixed(1)} MB zstd`)

  const floorRuns = Array.from({ length: RUNS }, () => timed('bash', ['-c', `zstd -dc '${file}' | b3sum`]))
  const floor = best(floorRuns)
  if (floor.status !== 0) throw new Error(`floor command failed: ${floor.stderr}`)

  const verifyRuns = Array.from({ length: RUNS }, () => timed('/usr/bin/time', ['-f', 'maxrss-kb %M', process.execPath, cli, 'run', 'verify-raw', '--file', file, '--rows', String(FRAMES), '--hour', '2026-10-03T14']))
  for (const r of verifyRuns) if (r.status !== 0) throw new Error(`verify-raw failed (exit ${r.status}): ${r.stdout.slice(-500)} ${r.stderr.slice(-500)}`)
  const verify = best(verifyRuns)
  const peakRssMb = Math.max(...verifyRuns.map((r) => Number(/maxrss-kb (\d+)/.exec(r.stderr)?.[1] ?? 0) / 1024))

  const floorMbs = mb / floor.seconds
  const verifyMbs = mb / verify.seconds
  console.log(`floor (zstd -dc | b3sum): ${floor.seconds.toFixed(2)} s, ${floorMbs.toFixed(0)} MB/s of JSON (best of ${RUNS})`)
  console.log(`verify-raw:               ${verify.seconds.toFixed(2)} s, ${verifyMbs.toFixed(0)} MB/s of JSON (best of ${RUNS}), ${(FRAMES / verify.seconds / 1e6).toFixed(2)} M lines/s`)
  console.log(`verify-raw ratio-vs-floor ${(verifyMbs / floorMbs).toFixed(3)} peak-rss-mb ${peakRssMb.toFixed(0)}`)
} finally {
  await rm(dir, { recursive: true, force: true })
}

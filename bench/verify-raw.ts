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
import { CompressStream } from 'zstd-napi'
import { rawSampleLines } from '../src/sim/raw-sample.js'
import { timedCli } from './timed-cli.js'

const FRAMES = Number(process.env.BENCH_FRAMES ?? 1_000_000)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
/** Seconds `bash -c command` takes; throws with its stderr unless it exits 0. */
function timedShell(command: string): number {
  const t0 = performance.now()
  const r = spawnSync('bash', ['-c', command], { encoding: 'utf8', maxBuffer: 1 << 26 })
  if (r.status !== 0) throw new Error(`${command} failed (exit ${r.status}): ${r.stderr.slice(-500)}`)
  return (performance.now() - t0) / 1000
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

  const floorSeconds = Math.min(...Array.from({ length: RUNS }, () => timedShell(`zstd -dc '${file}' | b3sum`)))
  const verifyRuns = Array.from({ length: RUNS }, () => timedCli(['run', 'verify-raw', '--file', file, '--rows', String(FRAMES), '--hour', '2026-10-03T14']))
  const verifySeconds = Math.min(...verifyRuns.map((r) => r.wall))
  const peakRssMb = Math.max(...verifyRuns.map((r) => r.rssMb))

  const floorMbs = mb / floorSeconds
  const verifyMbs = mb / verifySeconds
  console.log(`floor (zstd -dc | b3sum): ${floorSeconds.toFixed(2)} s, ${floorMbs.toFixed(0)} MB/s of JSON (best of ${RUNS})`)
  console.log(`verify-raw:               ${verifySeconds.toFixed(2)} s, ${verifyMbs.toFixed(0)} MB/s of JSON (best of ${RUNS}), ${(FRAMES / verifySeconds / 1e6).toFixed(2)} M lines/s`)
  console.log(`verify-raw ratio-vs-floor ${(verifyMbs / floorMbs).toFixed(3)} peak-rss-mb ${peakRssMb.toFixed(0)}`)
} finally {
  await rm(dir, { recursive: true, force: true })
}

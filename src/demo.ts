import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createWriteStream } from 'node:fs'
import { CompressStream } from 'zstd-napi'
import { runPipeline } from './core/runner.js'
import { registry } from './registry.js'
import { rawSampleLines } from './sim/raw-sample.js'
import { createIncrementalHash, hashingPassThrough } from './transforms/hash.js'

const DEMO_HOUR = '2026-10-03T14'
const DEMO_FRAMES = 20_000

/**
 * What `npm start` runs until the sealer lands: writes a deterministic simulated hour of Binance trades as
 * raw.jsonl.zst and verifies it with verify-raw, printing the report.
 */
export async function runDemo(outDir: string): Promise<number> {
  await mkdir(outDir, { recursive: true })
  const file = join(outDir, 'raw.jsonl.zst')
  let blake3 = ''
  await pipeline(
    Readable.from(rawSampleLines({ hourStart: Date.UTC(2026, 9, 3, 14) / 1000, frames: DEMO_FRAMES })),
    new CompressStream({ compressionLevel: 3 }),
    hashingPassThrough(await createIncrementalHash('blake3'), (hex) => { blake3 = hex }),
    createWriteStream(file),
  )
  process.stdout.write(`wrote ${file}: ${DEMO_FRAMES} simulated Binance trade frames for ${DEMO_HOUR}, blake3 ${blake3}\n`)
  process.stdout.write(`verifying: pipe run verify-raw --file ${file} --hour ${DEMO_HOUR} --rows ${DEMO_FRAMES} --blake3 ${blake3}\n`)
  const def = registry.pipeline('verify-raw')!
  const result = await runPipeline(registry, def, { file, hour: DEMO_HOUR, rows: DEMO_FRAMES, blake3 }, {
    stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, json: false, progress: false, handleSignals: true,
  })
  return result.exitCode
}

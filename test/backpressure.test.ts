import t from 'tap'
import { childEnv } from './helpers/io.js'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const fixture = fileURLToPath(new URL('./fixtures/backpressure.mjs', import.meta.url))

/**
 * BLAKE3 of the fixture's 1 GiB: chunk k = 1..1024 of 1 MiB, each the byte k & 0xff repeated. Computed once,
 * independently of pipe and of hash-wasm, with b3sum 1.2.0 (Debian's, the BLAKE3 team's Rust code):
 *   python3 -c "import sys; [sys.stdout.buffer.write(bytes([k & 0xff]) * (1 << 20)) for k in range(1, 1025)]" | b3sum
 */
const EXPECTED_BLAKE3 = '3ef78f906fb5c2fdef0f6af2167dc4ccea2c4ed9162f01fb2ed0b204214e4b3a'

t.test('a fast source into a slow sink moves 1 GiB with peak RSS under 200 MB', async (t) => {
  const out = execFileSync(process.execPath, [fixture, '1024'], { encoding: 'utf8', timeout: 120_000, env: childEnv() })
  const report = JSON.parse(out) as { exitCode: number; received: number; maxRssMb: number; blake3: string }
  t.equal(report.exitCode, 0)
  t.equal(report.received, 2 ** 30, 'every byte reached the sink')
  t.equal(report.blake3, EXPECTED_BLAKE3, 'the hashing stage saw the whole stream, every chunk once and in order')
  t.ok(report.maxRssMb < 200, `peak RSS ${report.maxRssMb.toFixed(0)} MB`)
})

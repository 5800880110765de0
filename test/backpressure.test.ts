import t from 'tap'
import { childEnv } from './helpers/io.js'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const fixture = fileURLToPath(new URL('./fixtures/backpressure.mjs', import.meta.url))

t.test('a fast source into a slow sink moves 1 GiB with peak RSS under 200 MB', async (t) => {
  const out = execFileSync(process.execPath, [fixture, '1024'], { encoding: 'utf8', timeout: 120_000, env: childEnv() })
  const report = JSON.parse(out) as { exitCode: number; received: number; maxRssMb: number; blake3: string }
  t.equal(report.exitCode, 0)
  t.equal(report.received, 2 ** 30, 'every byte reached the sink')
  t.match(report.blake3, /^[0-9a-f]{64}$/, 'the hashing stage saw the whole stream')
  t.ok(report.maxRssMb < 200, `peak RSS ${report.maxRssMb.toFixed(0)} MB`)
})

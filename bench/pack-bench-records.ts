/**
 * The records bench:pack and bench:import publish: BENCH_PATTERNS (default 1,000,000) distinct patterns on
 * the square grid, in Life, and the publisher key made from a fixed seed. Made once in `dir` (records/,
 * home/) and reused by any later run given the same folder (BENCH_DIR).
 */
import { createWriteStream, existsSync } from 'node:fs'
import { mkdir, rename, writeFile } from 'node:fs/promises'
import { once } from 'node:events'
import { join } from 'node:path'
import { LIFE, ruleRecord } from '../src/sim/pack-records.js'
import { timedCli } from './timed-cli.js'

export const PATTERNS = Number(process.env.BENCH_PATTERNS ?? 1_000_000)

/** The records folder, its patterns.jsonl, and the environment whose PIPE_HOME holds the publisher key. */
export async function benchRecords(dir: string): Promise<{ records: string; patterns: string; env: NodeJS.ProcessEnv }> {
  const records = join(dir, 'records')
  await mkdir(records, { recursive: true })
  const patterns = join(records, 'patterns.jsonl')
  if (!existsSync(patterns)) {
    await writeFile(join(records, 'tilings.jsonl'), '{"family":"square"}\n')
    await writeFile(join(records, 'rules.jsonl'), JSON.stringify(ruleRecord(LIFE)) + '\n')
    // Written under another name first: a run stopped midway leaves no short file to be reused.
    const part = `${patterns}.part`
    const out = createWriteStream(part)
    for (let n = 0; n < PATTERNS; n++) {
      // Pattern n: the cell (0, 0) and one cell for each set bit of n in a 5-wide block: all distinct.
      const cells = [{ i: 0, j: 0, k: 0, s: 1 }]
      for (let b = 0; b < 24; b++) if ((n >> b) & 1) cells.push({ i: 1 + (b % 5), j: 1 + Math.floor(b / 5), k: 0, s: 1 })
      const line = JSON.stringify({ pin_key: 'square', model: 'bs', neighbourhood: 'touch', steps_per_gen: 1, class: 'other', period: 1, dx: 0, dy: 0, speed: null, phases: [cells], rule: LIFE.notation, site: null, gun: null, family: 'bs', semantics: '1' }) + '\n'
      if (!out.write(line)) await once(out, 'drain')
    }
    out.end()
    await once(out, 'finish')
    await rename(part, patterns)
  }
  const env = { ...process.env, PIPE_HOME: join(dir, 'home') }
  if (!existsSync(join(dir, 'home'))) timedCli(['pack', 'key', '--name', 'Bench Publisher', '--seed', '42'.repeat(32), '--created', '2026-11-11T00:00:00Z'], { env })
  return { records, patterns, env }
}

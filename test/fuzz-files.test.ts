/**
 * A seeded subset of `npm run fuzz` (scripts/fuzz-files.ts): 100 hostile files across every command that
 * reads files, none of which may end outside exit 0, 1 or 2, by a signal, with a stack trace or an
 * `internal` code, past 30 s or 512 MB, or with --json output that does not parse. Then every vector an
 * earlier run kept under test/vectors/hostile/ is replayed: what once failed must stay fixed.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { fuzz, fuzzCase, LIMITS, makeFixtures, summaryLine, VECTORS, type Mutation } from '../scripts/fuzz-files.js'

const SEED = 20261206

t.test('100 seeded hostile files: no anomaly', async (t) => {
  const report = await fuzz({ cases: 100, seed: SEED, jobs: 2, vectors: null })
  t.equal(report.cases, 100)
  t.ok(Object.keys(report.byTarget).length >= 10, `every target had cases: ${JSON.stringify(report.byTarget)}`)
  t.same(report.anomalies.map((a) => `${a.target} ${a.mutation.kind} ${a.mutation.file}: ${a.anomalies.join('; ')}`), [], summaryLine(report))
  t.comment(summaryLine(report))
})

t.test('every kept hostile vector replays without an anomaly', async (t) => {
  const kept = existsSync(VECTORS) ? readdirSync(VECTORS).filter((d) => existsSync(join(VECTORS, d, 'case.json'))).sort() : []
  if (kept.length === 0) {
    t.pass('no vectors kept: no run has found an anomaly since the harness was written')
    return
  }
  const work = await mkdtemp(join(tmpdir(), 'pipe-hostile-vectors-'))
  t.teardown(() => rm(work, { recursive: true, force: true }))
  const targets = await makeFixtures(join(work, 'fixtures'))
  for (const name of kept) {
    const v = JSON.parse(readFileSync(join(VECTORS, name, 'case.json'), 'utf8')) as { target: string; mutation: Mutation }
    const target = targets.find((x) => x.name === v.target)
    if (!target) {
      t.fail(`${name}: no target ${v.target}`)
      continue
    }
    const o = await fuzzCase(join(work, 'fixtures'), target, v.mutation, join(work, name), LIMITS)
    t.same(o.anomalies, [], `${name}: ${v.mutation.kind} ${v.mutation.file} (exit ${o.code}, ${o.wallS.toFixed(1)} s, ${o.rssMb.toFixed(0)} MB)`)
  }
})

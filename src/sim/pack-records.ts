/**
 * Records for pack-publish (docs/pack-records.md) made from real runs: a pattern's facts come from running
 * its phase 0 under its rule (replay.ts findPeriod), an ant's from running it (ant.ts). The golden packs,
 * the tests and bench/pack build their records here, so every record they publish is true.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import canonicalize from 'canonicalize'
import { dirname } from 'node:path'
import type { PatternCell } from '../formats/pack/check/replay-automaton.js'
import { findPeriod } from '../formats/pack/check/replay.js'
import { runAnt } from '../formats/pack/records/ant.js'
import { findLatticeTiling, latticeGeometry } from '../formats/pack/geometry/tilings.js'

export interface SampleRule {
  /** As the rules table writes it: the notation without the neighbourhood (B3/S23). */
  notation: string
  neighbourhood: 'touch' | 'edge'
  steps_per_gen: number
  /** 2 for B/S; more for Generations. */
  states: number
  birth: number
  survive: number
}

/** A bit mask of neighbour counts. */
export const mask = (...counts: number[]) => counts.reduce((m, n) => m + 2 ** n, 0)

export const LIFE: SampleRule = { notation: 'B3/S23', neighbourhood: 'touch', steps_per_gen: 1, states: 2, birth: mask(3), survive: mask(2, 3) }
export const STAR_WARS: SampleRule = { notation: 'B2/S345/4', neighbourhood: 'touch', steps_per_gen: 1, states: 4, birth: mask(2), survive: mask(3, 4, 5) }
export const HEX_B2S34: SampleRule = { notation: 'B2/S34', neighbourhood: 'edge', steps_per_gen: 1, states: 2, birth: mask(2), survive: mask(3, 4) }

const familyOf = (r: SampleRule) => (r.states === 2 ? 'bs' : 'generations')
const modelOf = (r: SampleRule) => (r.states === 2 ? 'bs' : `generations:${r.states}`)

export function ruleRecord(r: SampleRule): Record<string, unknown> {
  return { notation: r.notation, neighbourhood: r.neighbourhood, steps_per_gen: r.steps_per_gen, family: familyOf(r), semantics: '1', states: r.states, birth: r.birth, survive: r.survive }
}

const cell = ([i, j, s = 1, k = 0]: readonly number[]): PatternCell => ({ i: i!, j: j!, k, s })

/**
 * A patterns record for the pattern whose phase 0 is `cells` ([i, j] or [i, j, s] or [i, j, s, k]) on
 * a catalogue tiling under `rule`: its phases, period, displacement, class and counts from running it.
 */
export function patternRecord(tiling: string, rule: SampleRule, cells: readonly (readonly number[])[], extra: { speed?: string } = {}): Record<string, unknown> {
  const def = findLatticeTiling(tiling)
  if (!def) throw new RangeError(`no catalogue tiling ${tiling}`)
  const found = findPeriod({ geometry: latticeGeometry(def), rule: { neighbourhood: rule.neighbourhood, birth: rule.birth, survive: rule.survive, states: rule.states, steps_per_gen: rule.steps_per_gen }, cells: cells.map(cell) })
  if (found.outcome !== 'periodic') throw new RangeError(`the pattern is not periodic under ${rule.notation}: ${found.outcome}`)
  return {
    pin_key: tiling, model: modelOf(rule), neighbourhood: rule.neighbourhood, steps_per_gen: rule.steps_per_gen, class: found.class,
    period: found.period, dx: found.dx, dy: found.dy, speed: extra.speed ?? null, phases: found.phases, rule: null, site: null, gun: null,
    family: familyOf(rule), semantics: '1',
  }
}

/** A verifications record of the pattern on line `patternLine` of patterns.jsonl, run in `rule` for `periods` periods. */
export function verificationRecord(patternLine: number, rule: SampleRule, pattern: Record<string, unknown>, date: string, periods = 2): Record<string, unknown> {
  const def = findLatticeTiling(pattern['pin_key'] as string)!
  const found = findPeriod({ geometry: latticeGeometry(def), rule: { neighbourhood: rule.neighbourhood, birth: rule.birth, survive: rule.survive, states: rule.states, steps_per_gen: rule.steps_per_gen }, cells: (pattern['phases'] as PatternCell[][])[0]! })
  if (found.outcome !== 'periodic') throw new RangeError('not periodic')
  return {
    pattern_id: `@patterns:${patternLine}`, rule: rule.notation, main: true, periods, generations: periods * found.period, field: found.reached.field,
    sites: null, semantics: '1', date, range: null, mover: null,
  }
}

/** An ants record for a turn-string ant on the square grid, from running it. */
export function antRecord(turns: string, opts: { steps?: number } = {}): Record<string, unknown> {
  const run = runAnt({ turns }, { limits: { steps: opts.steps ?? 20_000 } })
  const r = run.run as Record<string, unknown>
  const d = r['d'] as [number, number] | undefined
  return {
    pin_key: 'square', rule: turns, kind: 'string', family: 'ant', semantics: '1', states: 1, colors: turns.length, start: '"empty"',
    outcome: r['outcome'], period: r['period'] ?? null, dx: d ? d[0] : null, dy: d ? d[1] : null, onset: r['onset'] ?? null, speed: r['speed'] ?? null,
    steps: r['steps'], cells: r['cells'], run: canonicalize(run),
  }
}

/** Writes rows as one JSON object a line. */
export async function writeJsonl(path: string, rows: readonly object[]): Promise<void> {
  await mkdir(dirname(path), { recursive: true })
  await writeFile(path, rows.map((r) => JSON.stringify(r) + '\n').join(''))
}

/**
 * A records folder of Life patterns on the square tiling, each verified on `date`: tilings, rules,
 * patterns, verifications and pack.json (`meta`, its title and description). Gives the folder.
 */
export async function writeLifeRecords(folder: string, patterns: Record<string, unknown>[], date: string, meta: { title: string; description: string }): Promise<string> {
  await mkdir(folder, { recursive: true })
  await writeJsonl(`${folder}/tilings.jsonl`, [{ family: 'square' }])
  await writeJsonl(`${folder}/rules.jsonl`, [ruleRecord(LIFE)])
  await writeJsonl(`${folder}/patterns.jsonl`, patterns)
  await writeJsonl(`${folder}/verifications.jsonl`, patterns.map((p, i) => verificationRecord(i + 1, LIFE, p, date)))
  await writeFile(`${folder}/pack.json`, JSON.stringify(meta))
  return folder
}

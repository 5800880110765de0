/**
 * Level-3 replay of periodic B/S and Generations patterns on lattice tilings (pack format 1.0,
 * "Conformance levels"), and period finding for publishers. The automaton is replay-automaton.ts.
 *
 * Our reading of a record's phases: all phases are in one coordinate frame. Phase n is exactly generation
 * n of phase 0, cell for cell, never moved back to an origin; generation `period` is phase 0 moved by
 * (dx, dy) lattice steps, a cell (i, j, k) going to (i + dx, j + dy, k). Under a B0 rule a phase lists the
 * cells that differ from the background of its generation (replay-automaton.ts).
 *
 * The period is the least P ≥ 1 such that generation n + P is generation n moved by (dx, dy) for every
 * n ≥ 0. Usually generation P being phase 0 moved proves that. Under a B0 rule whose background flips
 * every step, it does not when P · steps_per_gen is odd (the next step runs the other rule of the pair),
 * so such a period is confirmed by running a second period as well.
 */
import { PipeError } from '../../../core/errors.js'
import { PATTERN_CLASSES } from '../records/identity.js'
import {
  AUTOMATON_CODES,
  CellPacking,
  Field,
  compileRule,
  packPhase,
  translateDelta,
  unpackCells,
  type AutomatonLimit,
  type AutomatonTiling,
  type CellBox,
  type CompiledRule,
  type MaskRule,
  type PackedCells,
  type PatternCell,
} from './replay-automaton.js'

/** The classes a periodic replay can confirm; the others need JETCARP's own trackers. */
const REPLAYABLE_CLASSES: readonly string[] = ['still_life', 'oscillator', 'spaceship']

/** Stable codes of replay findings. */
export const REPLAY_CODES = {
  ...AUTOMATON_CODES,
  /** puffer, mover, gun, other: not level-3 replayable (not a failure) */
  notReplayable: 'pack.replay-not-replayable',
  /** a phase above 1,000,000 cells or a period above 2^32 (the spec's limits): refused before simulating */
  tooLarge: 'pack.replay-too-large',
  /** beyond the replay budget (period, cells or rule applications): left unchecked */
  overBudget: 'pack.replay-over-budget',
  /** a step held more cells than the cell cap: stopped, unchecked */
  cellCap: 'pack.replay-cell-cap',
  /** a cell left the coordinate window (millions of lattice steps): stopped, unchecked */
  outOfRange: 'pack.replay-out-of-range',
  /** generation n (named) is not phase n */
  phaseMismatch: 'pack.replay-phase-mismatch',
  /** the phases do not repeat at the stated period, or the record lists another number of phases */
  periodMismatch: 'pack.replay-period-mismatch',
  /** generation `period` is phase 0 moved, but by another displacement */
  displacementMismatch: 'pack.replay-displacement-mismatch',
  /** the pattern repeats before its stated period */
  notMinimal: 'pack.replay-not-minimal',
  /** the class does not agree with the period and displacement */
  classMismatch: 'pack.replay-class-mismatch',
} as const

/** The spec's reader limits: beyond them a record is refused, never simulated. */
export const REPLAY_LIMITS = Object.freeze({ maxPhaseCells: 1_000_000, maxPeriod: 2 ** 32 })

/**
 * How much one record may cost. JETCARP leaves a record unchecked above a period of 4,096 or above 10,000
 * cells; rule applications (period × steps_per_gen, twice that when a second period is needed) are our
 * addition, so a record with a huge steps_per_gen cannot run for ever.
 */
export interface ReplayBudget {
  maxPeriod: number
  maxCells: number
  maxSteps: number
}

export const REPLAY_BUDGET: Readonly<ReplayBudget> = Object.freeze({ maxPeriod: 4096, maxCells: 10_000, maxSteps: 65_536 })

/** The most cells one step may hold before a run is stopped (the spec's limit on a phase). */
export const DEFAULT_CELL_CAP = 1_000_000

export interface ReplayFinding {
  code: string
  detail: string
  /** the generation the finding is about, when it is about one */
  generation?: number
}

/**
 * confirmed: every check held; failed: a check did not hold (or the record is malformed); unchecked: beyond
 * the budget or a run limit; not-replayed: a class or rule level 3 does not cover; refused: beyond the
 * spec's limits.
 */
export type ReplayStatus = 'confirmed' | 'failed' | 'unchecked' | 'not-replayed' | 'refused'

/** A pattern record as the patterns and rules tables give it. */
export interface PeriodicRecord {
  geometry: AutomatonTiling
  rule: MaskRule
  phases: readonly (readonly PatternCell[])[]
  period: number | bigint
  dx: number
  dy: number
  class: string
}

export interface ReplayOptions {
  budget?: Partial<ReplayBudget>
  cellCap?: number
}

/** Where a run went: the cells it reached and the smallest dead-edged frame that holds the same run. */
export interface FieldReport {
  box: CellBox
  /**
   * `dead-edged frame WxH`: the box widened on every side by the neighbourhood's reach, so every cell on
   * the frame's edge stayed background throughout and a finite frame would have run identically.
   */
  field: string
}

export interface ReplayResult {
  status: ReplayStatus
  findings: ReplayFinding[]
  /** generations run, every one matching when confirmed */
  generations: number
  /** whole periods run: 1, or 2 when the background was out of phase after one */
  periods: number
  /** present once a run started */
  reached?: FieldReport
}

function fieldReport(box: CellBox, reach: number): FieldReport {
  const width = box.i1 - box.i0 + 1 + 2 * reach
  const height = box.j1 - box.j0 + 1 + 2 * reach
  return { box: { ...box }, field: `dead-edged frame ${width}x${height}` }
}

const limitFinding = (stop: AutomatonLimit, generation: number, cellCap: number): ReplayFinding =>
  stop === 'cell-cap'
    ? { code: REPLAY_CODES.cellCap, detail: `generation ${generation} holds more than ${cellCap} cells`, generation }
    : { code: REPLAY_CODES.outOfRange, detail: `generation ${generation} reaches the edge of the coordinate window`, generation }

/** The class a period and displacement make. */
export function classOf(period: number, dx: number, dy: number): 'still_life' | 'oscillator' | 'spaceship' {
  if (dx !== 0 || dy !== 0) return 'spaceship'
  return period === 1 ? 'still_life' : 'oscillator'
}

const isInt32 = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= -0x8000_0000 && n <= 0x7fff_ffff

/** The period as a number, or why it cannot be one (a period beyond 2^32 is refused, however written). */
function readPeriod(period: unknown): number | ReplayFinding {
  const exact = typeof period === 'bigint' ? period : typeof period === 'number' && Number.isInteger(period) ? BigInt(period) : undefined
  if (exact === undefined || exact < 1n) return { code: REPLAY_CODES.malformed, detail: `period ${String(period)} is not a positive integer` }
  if (exact > BigInt(REPLAY_LIMITS.maxPeriod)) return { code: REPLAY_CODES.tooLarge, detail: `period ${exact} is above the limit 2^32` }
  return Number(exact)
}

/**
 * Replays a periodic record (level 3): every generation n < period equals phases[n] exactly, generation
 * `period` is phase 0 moved by (dx, dy), no earlier generation is phase 0 moved by any translation, and the
 * class agrees with the period and displacement. Limits are checked before anything is simulated.
 */
export function replayPeriodic(record: PeriodicRecord, options: ReplayOptions = {}): ReplayResult {
  const budget = { ...REPLAY_BUDGET, ...options.budget }
  const cellCap = options.cellCap ?? DEFAULT_CELL_CAP
  // A class that disagrees with the stated period and displacement fails the record whatever a run shows.
  const classFindings: ReplayFinding[] = []
  const withClass = (r: ReplayResult): ReplayResult =>
    classFindings.length === 0 ? r : { ...r, status: r.status === 'confirmed' || r.status === 'unchecked' ? 'failed' : r.status, findings: [...r.findings, ...classFindings] }
  const result = (status: ReplayStatus, findings: ReplayFinding[]): ReplayResult => withClass({ status, findings, generations: 0, periods: 0 })

  if (!Array.isArray(record.phases) || !record.phases.every(Array.isArray)) return result('failed', [{ code: REPLAY_CODES.malformed, detail: 'phases is not a list of lists' }])
  const period = readPeriod(record.period)
  if (typeof period !== 'number') return result(period.code === REPLAY_CODES.tooLarge ? 'refused' : 'failed', [period])
  const phases = record.phases
  const largest = phases.reduce((m, p) => Math.max(m, p.length), 0)
  if (largest > REPLAY_LIMITS.maxPhaseCells) {
    return result('refused', [{ code: REPLAY_CODES.tooLarge, detail: `a phase holds ${largest} cells, above the limit ${REPLAY_LIMITS.maxPhaseCells}` }])
  }
  if (!(PATTERN_CLASSES as readonly string[]).includes(record.class)) return result('failed', [{ code: REPLAY_CODES.malformed, detail: `class ${JSON.stringify(record.class)} is not a pattern class` }])
  if (!REPLAYABLE_CLASSES.includes(record.class)) {
    return result('not-replayed', [{ code: REPLAY_CODES.notReplayable, detail: `a ${record.class} is not replayed at level 3` }])
  }
  if (!isInt32(record.dx) || !isInt32(record.dy)) return result('failed', [{ code: REPLAY_CODES.malformed, detail: 'dx and dy are not int32 integers' }])
  const stated = classOf(period, record.dx, record.dy)
  if (stated !== record.class) {
    classFindings.push({ code: REPLAY_CODES.classMismatch, detail: `class ${record.class}, but period ${period} and d = (${record.dx}, ${record.dy}) make a ${stated}` })
  }

  let rule: CompiledRule
  try {
    rule = compileRule(record.geometry, record.rule)
  } catch (err) {
    if (!(err instanceof PipeError)) throw err
    return result(err.code === REPLAY_CODES.unsupportedRule ? 'not-replayed' : 'failed', [{ code: err.code, detail: err.message }])
  }

  const twoPeriods = rule.phases.length === 2 && period % 2 === 1 && rule.stepsPerGen % 2 === 1
  const steps = period * rule.stepsPerGen * (twoPeriods ? 2 : 1)
  if (period > budget.maxPeriod || largest > budget.maxCells || steps > budget.maxSteps) {
    return result('unchecked', [{ code: REPLAY_CODES.overBudget, detail: `period ${period}, ${largest} cells and ${steps} rule applications: beyond the budget (period ${budget.maxPeriod}, ${budget.maxCells} cells, ${budget.maxSteps} rule applications)` }])
  }

  if (phases.length !== period) return result('failed', [{ code: REPLAY_CODES.periodMismatch, detail: `the record lists ${phases.length} phases for period ${period}` }])

  let packed: PackedCells[]
  let packing: CellPacking
  try {
    const first = phases[0] as readonly PatternCell[]
    if (first.length === 0) throw new PipeError(REPLAY_CODES.malformed, 'phase 0 has no cells')
    packing = packingAround(rule, first)
    const maybe = phases.map((p, n) => packPhase(p, packing, rule.states, `phase ${n}`))
    if (maybe.some((p) => p === undefined)) {
      return result('unchecked', [{ code: REPLAY_CODES.outOfRange, detail: 'a phase lies beyond the coordinate window around phase 0' }])
    }
    packed = maybe as PackedCells[]
  } catch (err) {
    if (!(err instanceof PipeError)) throw err
    return result('failed', [{ code: err.code, detail: err.message }])
  }

  return withClass(runReplay(rule, packing, packed, record.dx, record.dy, twoPeriods, cellCap))
}

/** Packed coordinates centred on a phase's lowest i and j (a phase may lie anywhere in the int32 plane). */
function packingAround(rule: CompiledRule, cells: readonly PatternCell[]): CellPacking {
  let i = Infinity
  let j = Infinity
  for (const c of cells) {
    if (c === null || typeof c !== 'object' || !Number.isSafeInteger(c.i) || !Number.isSafeInteger(c.j)) throw new PipeError(REPLAY_CODES.malformed, 'phase 0 holds a cell without integer coordinates')
    i = Math.min(i, c.i)
    j = Math.min(j, c.j)
  }
  return new CellPacking(rule.types, i, j)
}

function runReplay(
  rule: CompiledRule,
  packing: CellPacking,
  phases: PackedCells[],
  dx: number,
  dy: number,
  twoPeriods: boolean,
  cellCap: number,
): ReplayResult {
  const period = phases.length
  const phase0 = phases[0] as PackedCells
  const move = packing.delta(dx, dy)
  const field = new Field(rule, packing, phase0, cellCap)
  const done = (status: ReplayStatus, findings: ReplayFinding[], periods: number): ReplayResult =>
    ({ status, findings, generations: field.generation, periods, reached: fieldReport(field.box, rule.reach) })
  if (!field.startsInRange) return done('unchecked', [{ code: REPLAY_CODES.outOfRange, detail: 'phase 0 lies at the edge of the coordinate window', generation: 0 }], 0)

  // One period, then a second one when the background is out of phase after the first.
  const last = twoPeriods ? 2 * period : period
  for (let g = 1; g <= last; g++) {
    const stop = field.advance()
    if (stop !== undefined) return done('unchecked', [limitFinding(stop, g, cellCap)], Math.floor((g - 1) / period))
    const expected = phases[g % period] as PackedCells
    const shift = Math.floor(g / period) * move
    if (field.equalsShifted(expected, shift)) continue
    if (g < period) return done('failed', [{ code: REPLAY_CODES.phaseMismatch, detail: `generation ${g} is not phase ${g}`, generation: g }], 0)
    if (g === period) {
      const actual = field.deltaFrom(phase0)
      if (actual !== undefined) {
        const d = packing.translation(actual)
        return done('failed', [{ code: REPLAY_CODES.displacementMismatch, detail: `generation ${g} is phase 0 moved by (${d.dx}, ${d.dy}), not (${dx}, ${dy})`, generation: g }], 0)
      }
      return done('failed', [{ code: REPLAY_CODES.periodMismatch, detail: `generation ${g} is not phase 0 moved by any translation`, generation: g }], 0)
    }
    return done('failed', [{
      code: REPLAY_CODES.periodMismatch,
      detail: `generation ${period} is phase 0 moved, but the background is out of phase there and generation ${g} is not phase ${g - period} moved by (${dx}, ${dy})`,
      generation: g,
    }], 1)
  }

  const earlier = earlierPeriod(phases, packing, move, field)
  if (earlier !== undefined) {
    const d = packing.translation(earlier.delta)
    return done('failed', [{ code: REPLAY_CODES.notMinimal, detail: `the pattern repeats after ${earlier.n} generations, moved by (${d.dx}, ${d.dy})`, generation: earlier.n }], twoPeriods ? 2 : 1)
  }
  return done('confirmed', [], twoPeriods ? 2 : 1)
}

/**
 * The smallest n < period after which the pattern truly repeats, if any. Once the record is confirmed,
 * generation g is phases[g mod P] moved by floor(g / P) · d. A repeat at n with the background out of phase
 * holds for good only if generations n .. 2n are generations 0 .. n moved alike (then 2n is in phase).
 */
function earlierPeriod(phases: PackedCells[], packing: CellPacking, move: number, field: Field): { n: number; delta: number } | undefined {
  const period = phases.length
  const phase0 = phases[0] as PackedCells
  for (let n = 1; n < period; n++) {
    const delta = translateDelta(phases[n] as PackedCells, phase0, packing)
    if (delta === undefined) continue
    if (field.inPhase(n)) return { n, delta }
    let holds = true
    for (let m = 1; m <= n && holds; m++) {
      const g = n + m
      const d = translateDelta(phases[g % period] as PackedCells, phases[m] as PackedCells, packing)
      holds = d !== undefined && d + Math.floor(g / period) * move === delta
    }
    if (holds) return { n, delta }
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------------------
// Period finding (publishers)
// ---------------------------------------------------------------------------------------------------------

export interface FindPeriodInput {
  geometry: AutomatonTiling
  rule: MaskRule
  /** phase 0 */
  cells: readonly PatternCell[]
}

export interface FindPeriodOptions {
  /** the longest period looked for (default 4,096, the replay budget's) */
  maxPeriod?: number
  /** the most cells one generation may hold (default 10,000, the replay budget's) */
  cellCap?: number
  /** the most cells kept over all generations together, which bounds memory (default 4,000,000) */
  maxKeptCells?: number
}

export interface FoundPeriodic {
  outcome: 'periodic'
  /** one period, phase 0 first, in phase 0's frame; each phase's cells sorted by i, then j, then k */
  phases: PatternCell[][]
  period: number
  dx: number
  dy: number
  class: 'still_life' | 'oscillator' | 'spaceship'
  /** cells of phase 0, and the fewest and most over the period: every listed cell, ageing ones too */
  cells: number
  min_cells: number
  max_cells: number
  generations: number
  reached: FieldReport
}

export type FoundPeriod =
  | FoundPeriodic
  /** no cell is left after `generations` */
  | { outcome: 'dies'; generations: number }
  /** phase 0 is not on its cycle: generation `onset` is the first that comes back; its cells are phase */
  | { outcome: 'settles'; onset: number; phase: PatternCell[]; generations: number }
  | { outcome: 'limit'; reason: 'max-period' | 'cell-cap' | 'out-of-range'; generations: number }

/** A hash of a sorted cell set that ignores translation (keys relative to the first). */
function shapeHash(p: PackedCells): string {
  let a = 0x811c9dc5
  let b = 0x01000193
  const base = p.keys[0] ?? 0
  for (let x = 0; x < p.keys.length; x++) {
    const rel = (p.keys[x] as number) - base
    a = Math.imul(a ^ (rel % 0x1_0000_0000), 0x01000193) ^ (p.states[x] as number)
    b = Math.imul(b ^ Math.floor(rel / 0x1_0000_0000), 0x5bd1e995) + Math.imul(a, 0x27d4eb2d)
  }
  return `${p.keys.length}:${a >>> 0}:${b >>> 0}`
}

/**
 * Runs phase 0 until it repeats up to a lattice translation, and returns the record's facts: the phases in
 * one frame, period, displacement, class and cell counts. Stops when the pattern dies, settles into a cycle
 * that does not hold phase 0, or reaches a limit. Throws PipeError pack.replay-malformed for a malformed
 * rule or phase and pack.replay-unsupported-rule for a rule the automaton cannot run.
 */
export function findPeriod(input: FindPeriodInput, options: FindPeriodOptions = {}): FoundPeriod {
  const maxPeriod = options.maxPeriod ?? REPLAY_BUDGET.maxPeriod
  const cellCap = options.cellCap ?? REPLAY_BUDGET.maxCells
  const maxKept = options.maxKeptCells ?? 4_000_000
  for (const [name, n] of [['maxPeriod', maxPeriod], ['cellCap', cellCap], ['maxKeptCells', maxKept]] as const) {
    if (!Number.isSafeInteger(n) || n < 1) throw new PipeError(REPLAY_CODES.malformed, `${name} ${n} is not a positive integer`)
  }
  const rule = compileRule(input.geometry, input.rule)
  if (input.cells.length === 0) throw new PipeError(REPLAY_CODES.malformed, 'phase 0 has no cells')
  if (input.cells.length > cellCap) return { outcome: 'limit', reason: 'cell-cap', generations: 0 }
  const packing = packingAround(rule, input.cells)
  const phase0 = packPhase(input.cells, packing, rule.states, 'phase 0')
  if (phase0 === undefined) return { outcome: 'limit', reason: 'out-of-range', generations: 0 }
  const field = new Field(rule, packing, phase0, cellCap)
  if (!field.startsInRange) return { outcome: 'limit', reason: 'out-of-range', generations: 0 }

  const kept: PackedCells[] = [phase0]
  let keptCells = phase0.keys.length
  const byShape = new Map<string, number[]>([[shapeHash(phase0), [0]]])
  // Repeats of phase 0 still being confirmed (background out of phase), and those confirmed.
  let pending: { n: number; delta: number }[] = []
  const confirmed: { n: number; delta: number }[] = []

  for (let g = 1; ; g++) {
    if (g > maxPeriod && pending.length === 0) return { outcome: 'limit', reason: 'max-period', generations: g - 1 }
    const stop = field.advance()
    if (stop !== undefined) return { outcome: 'limit', reason: stop, generations: g - 1 }
    if (field.cells.size === 0) return { outcome: 'dies', generations: g }
    const now = field.snapshot()
    keptCells += now.keys.length
    if (keptCells > maxKept) return { outcome: 'limit', reason: 'cell-cap', generations: g }
    kept.push(now)

    pending = pending.filter((c) => translateDelta(now, kept[g - c.n] as PackedCells, packing) === c.delta)
    for (const c of pending) if (g === 2 * c.n) confirmed.push(c)
    pending = pending.filter((c) => g < 2 * c.n)
    const delta = g <= maxPeriod ? translateDelta(now, phase0, packing) : undefined
    if (delta !== undefined) (field.inPhase(g) ? confirmed : pending).push({ n: g, delta })
    const best = confirmed.reduce<{ n: number; delta: number } | undefined>((m, c) => (m === undefined || c.n < m.n ? c : m), undefined)
    if (best !== undefined && pending.every((c) => c.n > best.n)) return periodic(kept.slice(0, best.n), best.delta, packing, field)

    const hash = shapeHash(now)
    const same = byShape.get(hash)
    if (same === undefined) {
      byShape.set(hash, [g])
      continue
    }
    if (pending.length === 0) {
      const onset = same.find((m) => m > 0 && field.inPhase(g - m) && translateDelta(now, kept[m] as PackedCells, packing) !== undefined)
      if (onset !== undefined) return { outcome: 'settles', onset, phase: unpackCells(kept[onset] as PackedCells, packing), generations: g }
    }
    same.push(g)
  }
}

function periodic(phases: PackedCells[], delta: number, packing: CellPacking, field: Field): FoundPeriodic {
  const d = packing.translation(delta)
  const sizes = phases.map((p) => p.keys.length)
  return {
    outcome: 'periodic',
    phases: phases.map((p) => unpackCells(p, packing)),
    period: phases.length,
    dx: d.dx,
    dy: d.dy,
    class: classOf(phases.length, d.dx, d.dy),
    cells: sizes[0] as number,
    min_cells: Math.min(...sizes),
    max_cells: Math.max(...sizes),
    generations: field.generation,
    reached: fieldReport(field.box, field.rule.reach),
  }
}

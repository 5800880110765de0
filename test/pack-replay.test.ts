import t, { type Test } from 'tap'
import { PipeError } from '../src/core/errors.js'
import type { LatticeGeometry } from '../src/formats/pack/geometry/geometry.js'
import {
  AUTOMATON_CODES,
  CellPacking,
  Field,
  compileRule,
  packPhase,
  type MaskRule,
  type PatternCell,
} from '../src/formats/pack/check/replay-automaton.js'
import { REPLAY_CODES, findPeriod, replayPeriodic, type FoundPeriodic, type PeriodicRecord } from '../src/formats/pack/check/replay.js'
import { findLatticeTiling, latticeGeometry } from '../src/formats/pack/geometry/tilings.js'
import { seededRandom } from '../src/sim/random.js'

const tiling = (family: string): LatticeGeometry => latticeGeometry(findLatticeTiling(family)!)
const SQUARE = tiling('square')
const HEX = tiling('hex')
const TRI = tiling('tri')
const TRIHEX = tiling('trihex')
const OCT = tiling('oct')

const mask = (counts: number[]): bigint => counts.reduce((m, n) => m | (1n << BigInt(n)), 0n)
const rule = (birth: number[], survive: number[], opts: Partial<MaskRule> = {}): MaskRule => ({
  neighbourhood: 'touch',
  birth: mask(birth),
  survive: mask(survive),
  states: 2,
  steps_per_gen: 1,
  ...opts,
})
const LIFE = rule([3], [2, 3])
/** Star Wars, B2/S345/4 */
const STAR_WARS = rule([2], [3, 4, 5], { states: 4 })
/** AntiLife, B0123478/S01234678: B0 with S8, Life's black/white reversal */
const ANTILIFE = rule([0, 1, 2, 3, 4, 7, 8], [0, 1, 2, 3, 4, 6, 7, 8])

/** [i, j, k] or [i, j, k, s] → cells. */
const cells = (list: number[][]): PatternCell[] => list.map(([i, j, k, s]) => ({ i: i!, j: j!, k: k ?? 0, s: s ?? 1 }))
const square = (list: number[][]): PatternCell[] => cells(list.map(([i, j]) => [i!, j!, 0]))

// -----------------------------------------------------------------------------------------------------------
// The patterns (found with findPeriod, written out so a change of behaviour shows)
// -----------------------------------------------------------------------------------------------------------

const BLOCK = [square([[0, 0], [1, 0], [0, 1], [1, 1]])]
const BLINKER = [square([[0, 1], [1, 1], [2, 1]]), square([[1, 0], [1, 1], [1, 2]])]
/** Moves up and to the left: d = (-1, -1) on the y-down grid, as the spec's glider. */
const GLIDER = [
  square([[0, 0], [0, 1], [0, 2], [1, 0], [2, 1]]),
  square([[-1, 1], [0, 0], [0, 1], [1, 0], [1, 2]]),
  square([[-1, 0], [-1, 1], [0, 0], [0, 2], [1, 0]]),
  square([[-1, 0], [-1, 1], [0, -1], [0, 0], [1, 1]]),
]
/** Moves left: d = (-2, 0). */
const LWSS = [
  square([[0, 1], [0, 2], [0, 3], [1, 0], [1, 3], [2, 3], [3, 3], [4, 0], [4, 2]]),
  square([[-1, 2], [0, 1], [0, 2], [0, 3], [1, 1], [1, 3], [1, 4], [2, 2], [2, 3], [2, 4], [3, 2], [3, 3]]),
  square([[-1, 1], [-1, 2], [-1, 3], [0, 1], [0, 4], [1, 1], [2, 1], [3, 2], [3, 4]]),
  square([[-2, 2], [-1, 1], [-1, 2], [-1, 3], [0, 0], [0, 1], [0, 3], [1, 0], [1, 1], [1, 2], [2, 1], [2, 2]]),
]
/** A period-4 Star Wars oscillator; states 2 and 3 are dying cells. */
const STAR_WARS_P4 = cells([[-2, 2, 0], [-1, 1, 0], [-1, 3, 0, 2], [0, -1, 0], [0, 0, 0], [0, 1, 0], [0, 2, 0], [0, 3, 0, 3], [1, -1, 0, 2], [1, 0, 0, 3], [1, 2, 0]])
/** Hexagonal B2/S34 on edge neighbours: a period-4 oscillator of three and four cells. */
const HEX_B2S34_P4 = cells([[0, 3, 0], [1, 1, 0], [1, 4, 0]])
/** Hexagonal B3/S23: three mutually adjacent hexagons, a still life. */
const HEX_B3S23_TRIANGLE = [cells([[1, 1, 0], [1, 2, 0], [2, 1, 0]])]
/** Triangular B4/S345 on touch neighbours: a period-2 oscillator. */
const TRI_B4S345_P2 = [cells([[4, -4, 0], [4, -4, 1], [4, -3, 0], [4, -3, 1]]), cells([[3, -3, 1], [4, -4, 1], [4, -3, 0], [5, -4, 0]])]
/** Triangular B4/S456 on touch neighbours: a c/3 spaceship. */
const TRI_B4S456_SHIP = cells([[-1, 0, 1], [-1, 1, 0], [-1, 1, 1], [-1, 2, 0], [0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1]])

const record = (phases: PatternCell[][], r: MaskRule, period: number | bigint, dx: number, dy: number, cls: string, geometry: LatticeGeometry = SQUARE): PeriodicRecord => ({
  geometry,
  rule: r,
  phases,
  period,
  dx,
  dy,
  class: cls,
})
const codes = (r: { findings: { code: string }[] }): string[] => r.findings.map((f) => f.code)

function found(geometry: LatticeGeometry, r: MaskRule, phase0: PatternCell[]): FoundPeriodic {
  const f = findPeriod({ geometry, rule: r, cells: phase0 })
  if (f.outcome !== 'periodic') throw new Error(`not periodic: ${JSON.stringify(f)}`)
  return f
}

// -----------------------------------------------------------------------------------------------------------
// A brute-force automaton on a finite torus, from the rule's definition alone: the true rule, every cell
// stored, the background explicit. The sparse field must agree with it cell for cell.
// -----------------------------------------------------------------------------------------------------------

interface Torus {
  width: number
  height: number
  types: number
  state: Int32Array
}

function torusStep(g: LatticeGeometry, r: MaskRule, torus: Torus): Torus {
  const { width, height, types } = torus
  const lists = g[r.neighbourhood]
  const has = (m: bigint | number, n: number): boolean => ((BigInt(m) >> BigInt(n)) & 1n) === 1n
  const at = (i: number, j: number, k: number): number => ((((j % height) + height) % height) * width + (((i % width) + width) % width)) * types + k
  const next = new Int32Array(torus.state.length)
  for (let j = 0; j < height; j++) {
    for (let i = 0; i < width; i++) {
      for (let k = 0; k < types; k++) {
        const live = lists[k]!.filter((o) => torus.state[at(i + o.di, j + o.dj, o.k)] === 1).length
        const s = torus.state[at(i, j, k)]!
        next[at(i, j, k)] = s === 0 ? (has(r.birth, live) ? 1 : 0) : s === 1 ? (has(r.survive, live) ? 1 : r.states > 2 ? 2 : 0) : s + 1 < r.states ? s + 1 : 0
      }
    }
  }
  return { ...torus, state: next }
}

/**
 * Runs a phase both ways for `generations` and compares every torus cell with the sparse field read against
 * its background: `background(step)` is the true state of an empty cell after that many rule applications.
 */
function agreeWithTorus(
  t: Test,
  g: LatticeGeometry,
  r: MaskRule,
  phase0: PatternCell[],
  generations: number,
  background: (step: number) => 0 | 1,
  what: string,
): void {
  const types = g.tile_types.length
  const size = 48
  const origin = -size / 2
  let torus: Torus = { width: size, height: size, types, state: new Int32Array(size * size * types).fill(background(0)) }
  for (const c of phase0) torus.state[((c.j - origin) * size + (c.i - origin)) * types + c.k] = background(0) === 1 ? 0 : c.s
  const compiled = compileRule(g, r)
  const packing = new CellPacking(types, 0, 0)
  const field = new Field(compiled, packing, packPhase(phase0, packing, r.states, 'phase 0')!, 1e6)
  let mismatches = 0
  for (let gen = 1; gen <= generations; gen++) {
    t.equal(field.advance(), undefined)
    for (let s = 0; s < r.steps_per_gen; s++) torus = torusStep(g, r, torus)
    const bg = background(gen * r.steps_per_gen)
    t.ok(field.box.i0 > origin && field.box.j0 > origin && field.box.i1 < origin + size - 1 && field.box.j1 < origin + size - 1, `${what}: generation ${gen} stays inside the torus`)
    for (let j = 0; j < size; j++) {
      for (let i = 0; i < size; i++) {
        for (let k = 0; k < types; k++) {
          const stored = field.cells.get(packing.key(i + origin, j + origin, k)!) ?? 0
          const expected = r.states > 2 ? stored : stored === 0 ? bg : 1 - bg
          if (torus.state[(j * size + i) * types + k] !== expected) mismatches++
        }
      }
    }
  }
  t.equal(mismatches, 0, `${what}: ${generations} generations agree with the torus`)
}

function soup(seed: number, types: number, side = 6): PatternCell[] {
  const rnd = seededRandom(seed)
  const out: PatternCell[] = []
  for (let j = 0; j < side; j++) for (let i = 0; i < side; i++) for (let k = 0; k < types; k++) if (rnd() < 0.5) out.push({ i, j, k, s: 1 })
  return out
}

const dead = (): 0 => 0

t.test('the sparse field agrees with a brute-force torus', async (t) => {
  agreeWithTorus(t, SQUARE, LIFE, soup(1, 1), 12, dead, 'Life')
  agreeWithTorus(t, SQUARE, STAR_WARS, soup(2, 1), 10, dead, 'Star Wars (Generations)')
  agreeWithTorus(t, HEX, rule([2], [3, 4], { neighbourhood: 'edge' }), soup(3, 1), 10, dead, 'hex B2/S34')
  agreeWithTorus(t, TRI, rule([4], [3, 4, 5]), soup(4, 2), 10, dead, 'tri B4/S345')
  agreeWithTorus(t, TRIHEX, rule([2], [1, 2], { neighbourhood: 'edge' }), soup(5, 3), 8, dead, 'trihex B2/S12 (6 and 3 neighbours)')
  agreeWithTorus(t, SQUARE, rule([3], [2, 3], { steps_per_gen: 2 }), soup(6, 1), 6, dead, 'Life, two steps a generation')
})

t.test('B0 rules: the background flips, and the stored cells are those that differ from it', async (t) => {
  const alternating = (step: number): 0 | 1 => (step % 2 === 1 ? 1 : 0)
  // B0 without S8: dead before even steps, alive before odd ones (Golly's pair of rules).
  agreeWithTorus(t, SQUARE, rule([0, 1, 2, 3, 7], [0, 5, 6]), soup(7, 1), 10, alternating, 'B01237/S056')
  agreeWithTorus(t, SQUARE, rule([0, 1, 3, 5, 7, 8], [2, 5, 6]), soup(8, 1), 10, alternating, 'B013578/S256')
  agreeWithTorus(t, SQUARE, rule([0], [1, 4], { steps_per_gen: 2 }), soup(9, 1), 6, alternating, 'B0/S14, two steps a generation')
  agreeWithTorus(t, TRIHEX, rule([0, 4], [1, 2], { neighbourhood: 'edge' }), soup(10, 3), 6, alternating, 'trihex B04/S12')
  // B0 with S8: the plane is alive from the start, and the pattern is its holes (Golly's reversal).
  const alive = (): 1 => 1
  agreeWithTorus(t, SQUARE, ANTILIFE, soup(11, 1), 12, alive, 'AntiLife')
  agreeWithTorus(t, OCT, rule([0, 1], [2, 4, 8]), soup(12, 2), 6, alive, 'oct B01/S248 (8 and 4 neighbours, both full counts survive)')
})

t.test('AntiLife runs as Life: a blinker is a blinker', async (t) => {
  t.equal(replayPeriodic(record(BLINKER, ANTILIFE, 2, 0, 0, 'oscillator')).status, 'confirmed')
  const f = found(SQUARE, ANTILIFE, GLIDER[0]!)
  t.same([f.period, f.dx, f.dy, f.class], [4, -1, -1, 'spaceship'])
})

t.test('rules the automaton refuses', async (t) => {
  t.throws(() => compileRule(SQUARE, rule([0, 2], [], { states: 3 })), { code: AUTOMATON_CODES.unsupportedRule }, 'Generations with B0')
  // On trihex edge a hexagon has 6 neighbours, a triangle 3: S6 without S3 splits an alive background.
  t.throws(() => compileRule(TRIHEX, rule([0], [6], { neighbourhood: 'edge' })), { code: AUTOMATON_CODES.unsupportedRule }, 'a background that would not stay uniform')
  t.throws(() => compileRule(SQUARE, rule([3], [2, 3], { states: 1 })), { code: AUTOMATON_CODES.malformed })
  t.throws(() => compileRule(SQUARE, rule([3], [2, 3], { steps_per_gen: 0 })), { code: AUTOMATON_CODES.malformed })
  t.throws(() => compileRule(SQUARE, { ...LIFE, neighbourhood: 'moore' as 'touch' }), { code: AUTOMATON_CODES.malformed })
  t.throws(() => compileRule(SQUARE, { ...LIFE, birth: 2 ** 60 }), { code: AUTOMATON_CODES.malformed }, 'a mask beyond safe integers as a number')
  t.doesNotThrow(() => compileRule(SQUARE, { ...LIFE, birth: -(1n << 63n) | 8n }), 'a signed int64 with bit 63 set')
  const r = replayPeriodic(record([cells([[0, 0, 0, 1]])], rule([0, 2], [], { states: 3 }), 1, 0, 0, 'still_life'))
  t.same([r.status, codes(r)], ['not-replayed', [REPLAY_CODES.unsupportedRule]])
})

// -----------------------------------------------------------------------------------------------------------
// Replay: records that hold
// -----------------------------------------------------------------------------------------------------------

t.test('Life: block, blinker, glider and lightweight spaceship replay', async (t) => {
  const block = replayPeriodic(record(BLOCK, LIFE, 1, 0, 0, 'still_life'))
  t.same([block.status, block.findings, block.generations, block.periods], ['confirmed', [], 1, 1])
  t.same(block.reached, { box: { i0: 0, j0: 0, i1: 1, j1: 1 }, field: 'dead-edged frame 4x4' })
  const blinker = replayPeriodic(record(BLINKER, LIFE, 2, 0, 0, 'oscillator'))
  t.same([blinker.status, blinker.generations, blinker.reached?.field], ['confirmed', 2, 'dead-edged frame 5x5'])
  const glider = replayPeriodic(record(GLIDER, LIFE, 4, -1, -1, 'spaceship'))
  t.same([glider.status, glider.reached?.box], ['confirmed', { i0: -1, j0: -1, i1: 2, j1: 2 }])
  t.equal(replayPeriodic(record(LWSS, LIFE, 4, -2, 0, 'spaceship')).status, 'confirmed')
  t.equal(replayPeriodic(record(BLINKER, LIFE, 2n, 0, 0, 'oscillator')).status, 'confirmed', 'a period read as int64 (bigint)')
  const moved = GLIDER.map((p) => p.map((c) => ({ ...c, i: c.i + 2_000_000_000, j: c.j - 2_000_000_000 })))
  t.equal(replayPeriodic(record(moved, LIFE, 4, -1, -1, 'spaceship')).status, 'confirmed', 'far from the origin of the int32 plane')
})

t.test('findPeriod gives the facts of each pattern, and they replay', async (t) => {
  const cases: [string, LatticeGeometry, MaskRule, PatternCell[], [number, number, number, string, number, number, number]][] = [
    ['block', SQUARE, LIFE, BLOCK[0]!, [1, 0, 0, 'still_life', 4, 4, 4]],
    ['blinker', SQUARE, LIFE, BLINKER[0]!, [2, 0, 0, 'oscillator', 3, 3, 3]],
    ['glider', SQUARE, LIFE, GLIDER[0]!, [4, -1, -1, 'spaceship', 5, 5, 5]],
    ['LWSS', SQUARE, LIFE, LWSS[0]!, [4, -2, 0, 'spaceship', 9, 9, 12]],
    ['Star Wars p4', SQUARE, STAR_WARS, STAR_WARS_P4, [4, 0, 0, 'oscillator', 11, 11, 12]],
    ['hex B2/S34 p4', HEX, rule([2], [3, 4], { neighbourhood: 'edge' }), HEX_B2S34_P4, [4, 0, 0, 'oscillator', 3, 3, 4]],
    ['hex B3/S23 triangle', HEX, rule([3], [2, 3], { neighbourhood: 'edge' }), HEX_B3S23_TRIANGLE[0]!, [1, 0, 0, 'still_life', 3, 3, 3]],
    ['tri B4/S345 p2', TRI, rule([4], [3, 4, 5]), TRI_B4S345_P2[0]!, [2, 0, 0, 'oscillator', 4, 4, 4]],
    ['tri B4/S456 ship', TRI, rule([4], [4, 5, 6]), TRI_B4S456_SHIP, [3, 0, -1, 'spaceship', 8, 8, 10]],
    ['B01237/S056 ship', SQUARE, rule([0, 1, 2, 3, 7], [0, 5, 6]), square([[0, 0], [0, 2], [2, 0], [2, 1], [2, 2]]), [2, 1, 0, 'spaceship', 5, 4, 5]],
    ['glider, two steps a generation', SQUARE, rule([3], [2, 3], { steps_per_gen: 2 }), GLIDER[0]!, [2, -1, -1, 'spaceship', 5, 5, 5]],
    ['blinker, two steps a generation', SQUARE, rule([3], [2, 3], { steps_per_gen: 2 }), BLINKER[0]!, [1, 0, 0, 'still_life', 3, 3, 3]],
  ]
  for (const [name, g, r, phase0, facts] of cases) {
    const f = found(g, r, phase0)
    t.same([f.period, f.dx, f.dy, f.class, f.cells, f.min_cells, f.max_cells], facts, name)
    t.same(f.phases[0], [...phase0].sort((a, b) => a.i - b.i || a.j - b.j || a.k - b.k), `${name}: phase 0 is the input, sorted`)
    const replayed = replayPeriodic(record(f.phases, r, f.period, f.dx, f.dy, f.class, g))
    t.equal(replayed.status, 'confirmed', `${name} replays`)
  }
  t.same(found(SQUARE, LIFE, GLIDER[0]!).phases, GLIDER, 'the glider phases in one frame')
  t.same(found(SQUARE, LIFE, LWSS[0]!).phases, LWSS, 'the LWSS phases in one frame')
  t.same(found(TRI, rule([4], [3, 4, 5]), TRI_B4S345_P2[0]!).phases, TRI_B4S345_P2)
  t.equal(replayPeriodic(record(HEX_B3S23_TRIANGLE, rule([3], [2, 3], { neighbourhood: 'edge' }), 1, 0, 0, 'still_life', HEX)).status, 'confirmed')
})

t.test('the Generations oscillator ages through its dying states', async (t) => {
  const f = found(SQUARE, STAR_WARS, STAR_WARS_P4)
  t.ok(f.phases.every((p) => p.some((c) => c.s === 2) && p.some((c) => c.s === 3)), 'every phase holds dying cells of both ages')
  agreeWithTorus(t, SQUARE, STAR_WARS, STAR_WARS_P4, 4, dead, 'Star Wars p4')
  const younger = f.phases.map((p, n) => (n === 1 ? p.map((c) => (c.s === 3 ? { ...c, s: 2 } : c)) : p))
  const r = replayPeriodic(record(younger, STAR_WARS, 4, 0, 0, 'oscillator'))
  t.same([r.status, r.findings[0]?.code, r.findings[0]?.generation], ['failed', REPLAY_CODES.phaseMismatch, 1], 'a dying state wrong')
})

t.test('a B0 still life whose background is out of phase after one generation replays over two periods', async (t) => {
  const b013578 = rule([0, 1, 3, 5, 7, 8], [2, 5, 6])
  const one = [square([[0, 0]])]
  const r = replayPeriodic(record(one, b013578, 1, 0, 0, 'still_life'))
  t.same([r.status, r.generations, r.periods], ['confirmed', 2, 2])
  t.same(found(SQUARE, b013578, one[0]!).period, 1)
  const twice = replayPeriodic(record([one[0]!, one[0]!], b013578, 2, 0, 0, 'oscillator'))
  t.same([twice.status, codes(twice)], ['failed', [REPLAY_CODES.notMinimal]])
  // B01/S2 keeps one cell on even steps and kills it on odd ones: the repeat after one generation is false.
  const b01 = rule([0, 1], [2])
  const false1 = replayPeriodic(record(one, b01, 1, 0, 0, 'still_life'))
  t.same([false1.status, codes(false1), false1.findings[0]?.generation], ['failed', [REPLAY_CODES.periodMismatch], 2])
  t.same(findPeriod({ geometry: SQUARE, rule: b01, cells: one[0]! }), { outcome: 'dies', generations: 2 })
})

t.test('each listed neighbour counts once', async (t) => {
  const doubled: LatticeGeometry = { ...SQUARE, touch: [[...SQUARE.touch[0]!, ...SQUARE.touch[0]!]] }
  t.equal(replayPeriodic(record(GLIDER, LIFE, 4, -1, -1, 'spaceship', doubled)).status, 'confirmed')
})

// -----------------------------------------------------------------------------------------------------------
// Replay: records that fail, and records left alone
// -----------------------------------------------------------------------------------------------------------

t.test('a wrong phase names its generation', async (t) => {
  const wrong = GLIDER.map((p, n) => (n === 2 ? p.map((c, x) => (x === 0 ? { ...c, i: c.i - 5 } : c)) : p))
  const r = replayPeriodic(record(wrong, LIFE, 4, -1, -1, 'spaceship'))
  t.same([r.status, codes(r), r.findings[0]?.generation], ['failed', [REPLAY_CODES.phaseMismatch], 2])
  t.match(r.findings[0]?.detail, /generation 2 is not phase 2/)
})

t.test('a wrong period', async (t) => {
  const three = replayPeriodic(record([BLINKER[0]!, BLINKER[1]!, BLINKER[0]!], LIFE, 3, 0, 0, 'oscillator'))
  t.same([three.status, codes(three), three.findings[0]?.generation], ['failed', [REPLAY_CODES.periodMismatch], 3])
  const one = replayPeriodic(record([BLINKER[0]!], LIFE, 1, 0, 0, 'still_life'))
  t.same([one.status, codes(one)], ['failed', [REPLAY_CODES.periodMismatch]])
  const count = replayPeriodic(record(BLINKER, LIFE, 3, 0, 0, 'oscillator'))
  t.same([count.status, codes(count)], ['failed', [REPLAY_CODES.periodMismatch]], 'two phases listed for period 3')
})

t.test('a period that is not minimal', async (t) => {
  const r = replayPeriodic(record([...BLINKER, ...BLINKER], LIFE, 4, 0, 0, 'oscillator'))
  t.same([r.status, codes(r), r.findings[0]?.generation], ['failed', [REPLAY_CODES.notMinimal], 2])
  const glider8 = found(SQUARE, LIFE, GLIDER[0]!).phases
  const eight = [...glider8, ...glider8.map((p) => p.map((c) => ({ ...c, i: c.i - 1, j: c.j - 1 })))]
  const g = replayPeriodic(record(eight, LIFE, 8, -2, -2, 'spaceship'))
  t.same([g.status, codes(g)], ['failed', [REPLAY_CODES.notMinimal]])
  t.match(g.findings[0]?.detail, /after 4 generations, moved by \(-1, -1\)/)
})

t.test('a wrong displacement', async (t) => {
  const r = replayPeriodic(record(GLIDER, LIFE, 4, 1, 1, 'spaceship'))
  t.same([r.status, codes(r)], ['failed', [REPLAY_CODES.displacementMismatch]])
  t.match(r.findings[0]?.detail, /moved by \(-1, -1\), not \(1, 1\)/)
  const still = replayPeriodic(record(GLIDER, LIFE, 4, 0, 0, 'oscillator'))
  t.same(codes(still), [REPLAY_CODES.displacementMismatch])
})

t.test('a wrong class', async (t) => {
  const asOscillator = replayPeriodic(record(GLIDER, LIFE, 4, -1, -1, 'oscillator'))
  t.same([asOscillator.status, codes(asOscillator)], ['failed', [REPLAY_CODES.classMismatch]])
  t.same(codes(replayPeriodic(record(BLOCK, LIFE, 1, 0, 0, 'oscillator'))), [REPLAY_CODES.classMismatch])
  t.same(codes(replayPeriodic(record(BLINKER, LIFE, 2, 0, 0, 'still_life'))), [REPLAY_CODES.classMismatch])
  t.same(codes(replayPeriodic(record(BLOCK, LIFE, 1, 0, 0, 'spaceship'))), [REPLAY_CODES.classMismatch])
  const beyond = replayPeriodic(record(new Array<PatternCell[]>(5000).fill(BLOCK[0]!), LIFE, 5000, 0, 0, 'still_life'))
  t.same([beyond.status, codes(beyond)], ['failed', [REPLAY_CODES.overBudget, REPLAY_CODES.classMismatch]], 'a wrong class fails even beyond the budget')
  const unknown = replayPeriodic(record(BLOCK, LIFE, 1, 0, 0, 'glider'))
  t.same([unknown.status, codes(unknown)], ['failed', [REPLAY_CODES.malformed]])
})

t.test('puffers, movers, guns and others are not replayed', async (t) => {
  for (const cls of ['puffer', 'mover', 'gun', 'other']) {
    const r = replayPeriodic(record(GLIDER, LIFE, 4, -1, -1, cls))
    t.same([r.status, codes(r), r.generations], ['not-replayed', [REPLAY_CODES.notReplayable], 0], cls)
  }
})

t.test('records beyond the spec limits are refused before anything runs', async (t) => {
  const huge = new Array<PatternCell>(1_000_001).fill({ i: 0, j: 0, k: 0, s: 1 })
  const r = replayPeriodic(record([huge], LIFE, 1, 0, 0, 'still_life'))
  t.same([r.status, codes(r), r.generations], ['refused', [REPLAY_CODES.tooLarge], 0])
  const long = replayPeriodic(record(BLINKER, LIFE, 2n ** 32n + 1n, 0, 0, 'oscillator'))
  t.same([long.status, codes(long)], ['refused', [REPLAY_CODES.tooLarge]])
  t.same(replayPeriodic(record(BLINKER, LIFE, 0, 0, 0, 'oscillator')).status, 'failed', 'period 0')
})

t.test('records beyond the budget are left unchecked, not failed', async (t) => {
  const long = replayPeriodic(record(new Array<PatternCell[]>(4097).fill(BLOCK[0]!), LIFE, 4097, 0, 0, 'oscillator'))
  t.same([long.status, codes(long)], ['unchecked', [REPLAY_CODES.overBudget]])
  // 50 × 51 blocks, one dead cell apart: every gap cell has four neighbours, so nothing is born.
  const big = square(Array.from({ length: 2550 }, (_, n) => [3 * (n % 50), 3 * Math.floor(n / 50)]).flatMap(([i, j]) => [[i!, j!], [i! + 1, j!], [i!, j! + 1], [i! + 1, j! + 1]]))
  t.equal(big.length, 10_200)
  const blocks = replayPeriodic(record([big], LIFE, 1, 0, 0, 'still_life'))
  t.same([blocks.status, codes(blocks)], ['unchecked', [REPLAY_CODES.overBudget]])
  t.equal(replayPeriodic(record([big], LIFE, 1, 0, 0, 'still_life'), { budget: { maxCells: 20_000 } }).status, 'confirmed', 'within a larger budget')
  t.equal(replayPeriodic(record(BLINKER, LIFE, 2, 0, 0, 'oscillator'), { budget: { maxPeriod: 1 } }).status, 'unchecked')
  const slow = replayPeriodic(record(BLOCK, rule([3], [2, 3], { steps_per_gen: 70_000 }), 1, 0, 0, 'still_life'))
  t.same([slow.status, codes(slow)], ['unchecked', [REPLAY_CODES.overBudget]], 'too many rule applications')
})

t.test('a run that explodes or leaves the window is stopped with a finding', async (t) => {
  const growth = rule([1], [0, 1, 2, 3, 4, 5, 6, 7, 8], { steps_per_gen: 40 })
  const r = replayPeriodic(record([square([[0, 0]])], growth, 1, 0, 0, 'still_life'), { cellCap: 500 })
  t.same([r.status, codes(r), r.findings[0]?.generation], ['unchecked', [REPLAY_CODES.cellCap], 1])
  const far = replayPeriodic(record([BLINKER[0]!, BLINKER[1]!.map((c) => ({ ...c, i: c.i + 2 ** 30 }))], LIFE, 2, 0, 0, 'oscillator'))
  t.same([far.status, codes(far)], ['unchecked', [REPLAY_CODES.outOfRange]])
  t.same(findPeriod({ geometry: SQUARE, rule: growth, cells: square([[0, 0]]) }, { cellCap: 500 }), { outcome: 'limit', reason: 'cell-cap', generations: 0 })
})

t.test('malformed phases fail', async (t) => {
  const cases: [string, PatternCell[][]][] = [
    ['a dying state in a B/S rule', [square([[0, 0], [1, 0], [0, 1]]).concat(cells([[1, 1, 0, 2]]))]],
    ['a cell listed twice', [square([[0, 0], [1, 0], [0, 1], [1, 1], [1, 1]])]],
    ['a tile type the tiling lacks', [cells([[0, 0, 1], [1, 0, 0], [0, 1, 0], [1, 1, 0]])]],
    ['no cells', [[]]],
  ]
  for (const [name, phases] of cases) {
    const r = replayPeriodic(record(phases, LIFE, 1, 0, 0, 'still_life'))
    t.same([r.status, codes(r)], ['failed', [REPLAY_CODES.malformed]], name)
  }
  t.same(replayPeriodic(record(BLOCK, LIFE, 1, 0.5, 0, 'still_life')).status, 'failed', 'a fractional displacement')
  t.throws(() => findPeriod({ geometry: SQUARE, rule: LIFE, cells: [] }), PipeError)
  t.throws(() => findPeriod({ geometry: SQUARE, rule: LIFE, cells: BLOCK[0]! }, { maxPeriod: NaN }), { code: REPLAY_CODES.malformed })
})

t.test('findPeriod: patterns that die, settle, or run past the limits', async (t) => {
  t.same(findPeriod({ geometry: SQUARE, rule: LIFE, cells: square([[0, 0]]) }), { outcome: 'dies', generations: 1 })
  const tromino = findPeriod({ geometry: SQUARE, rule: LIFE, cells: square([[0, 0], [1, 0], [0, 1]]) })
  t.same(tromino, { outcome: 'settles', onset: 1, phase: square([[0, 0], [0, 1], [1, 0], [1, 1]]), generations: 2 }, 'an L tromino becomes a block')
  const rPentomino = findPeriod({ geometry: SQUARE, rule: LIFE, cells: square([[1, 0], [2, 0], [0, 1], [1, 1], [1, 2]]) }, { maxPeriod: 50 })
  t.same(rPentomino, { outcome: 'limit', reason: 'max-period', generations: 50 })
  const kept = findPeriod({ geometry: SQUARE, rule: LIFE, cells: square([[1, 0], [2, 0], [0, 1], [1, 1], [1, 2]]) }, { maxKeptCells: 300 })
  t.same([kept.outcome, kept.outcome === 'limit' && kept.reason], ['limit', 'cell-cap'])
})

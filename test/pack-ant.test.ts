import t from 'tap'
import { ANT_CODES, ANT_LIMITS, antTable, runAnt, type AntRunJson, type TurmiteTransition } from '../src/formats/pack/records/ant.js'
import { seededRandom } from '../src/sim/random.js'

// -----------------------------------------------------------------------------------------------------------
// A plain simulation to check the module against: a Map of colours, every step recorded.
// -----------------------------------------------------------------------------------------------------------

const STEP_I = [0, 1, 0, -1]
const STEP_J = [-1, 0, 1, 0]
const TURN: Record<string, number> = { N: 0, R: 1, U: 2, L: 3 }

interface Plain {
  /** before each step s (and after the last): position, heading, state; and the colour read at s */
  i: number[]
  j: number[]
  heading: number[]
  state: number[]
  read: number[]
  /** the colours after the last step */
  grid: Map<string, number>
}

function plainRun(table: TurmiteTransition[][], steps: number, heading = 0, each?: (step: number, p: Plain) => void): Plain {
  const p: Plain = { i: [0], j: [0], heading: [heading], state: [0], read: [], grid: new Map() }
  let [i, j, h, q] = [0, 0, heading, 0]
  for (let s = 0; s < steps; s++) {
    const key = `${i},${j}`
    const c = p.grid.get(key) ?? 0
    const tr = table[q]![c]!
    p.read.push(c)
    if (tr.write === 0) p.grid.delete(key)
    else p.grid.set(key, tr.write)
    h = (h + TURN[tr.turn]!) & 3
    q = tr.next
    i += STEP_I[h]!
    j += STEP_J[h]!
    p.i.push(i)
    p.j.push(j)
    p.heading.push(h)
    p.state.push(q)
    each?.(s + 1, p)
  }
  return p
}

/** Whether every step s in [at, at + periods · period) is step s + period moved back by d: same heading, state and colour read. */
function repeats(p: Plain, at: number, period: number, d: number[], periods: number): boolean {
  for (let s = at; s < at + periods * period; s++) {
    const same = p.i[s + period] === p.i[s]! + d[0]! && p.j[s + period] === p.j[s]! + d[1]! && p.heading[s + period] === p.heading[s] && p.state[s + period] === p.state[s] && p.read[s + period] === p.read[s]
    if (!same) return false
  }
  return true
}

const reachOf = (p: Plain, upTo: number): number[] => {
  const is = p.i.slice(0, upTo + 1)
  const js = p.j.slice(0, upTo + 1)
  return [Math.min(...is), Math.min(...js), Math.max(...is), Math.max(...js)]
}

const REFLECTIONS = [[-1, 0, 0, 1], [1, 0, 0, -1], [0, 1, 1, 0], [0, -1, -1, 0]]

/** The first reflection and translation under which the grid maps onto itself, if any. */
function mirrorOf(grid: Map<string, number>): { reflection: number[]; translation: number[] } | undefined {
  const list = [...grid].map(([key, c]) => [...key.split(',').map(Number), c] as [number, number, number])
  for (const [a, b, c, d] of REFLECTIONS as [number, number, number, number][]) {
    // Try the translation that maps the first cell's image onto some cell of the same colour.
    const [i0, j0, c0] = list[0]!
    for (const [i1, j1, c1] of list) {
      if (c1 !== c0) continue
      const x = i1 - (a * i0 + b * j0)
      const y = j1 - (c * i0 + d * j0)
      if (list.every(([i, j, col]) => grid.get(`${a * i + b * j + x},${c * i + d * j + y}`) === col)) return { reflection: [a, b, c, d], translation: [x, y] }
    }
  }
  return undefined
}

// -----------------------------------------------------------------------------------------------------------
// Langton's ant
// -----------------------------------------------------------------------------------------------------------

t.test("Langton's ant builds its highway: found by simulation, period 104 from step 9,977", async (t) => {
  const started = Date.now()
  const r = runAnt({ turns: 'RL' })
  const run = r.run
  t.same(r.limits, { ...ANT_LIMITS })
  t.equal(run.outcome, 'highway')
  t.equal(run.period, 104)
  t.equal(run.onset, 9977)
  // Facing up and turning clockwise on white, the highway leaves down and to the left on the y-down grid.
  t.same(run.d, [-2, 2])
  t.equal(run.speed, Number((Math.sqrt(8) / 104).toFixed(6)))
  t.equal(run.speed, 0.027196)
  t.same(run.proof, { at: 9977, period: 104, d: [-2, 2], cells: run.proof?.cells })
  t.equal(run.steps, 9977 + 104, 'the run ends where the proof compared')

  const plain = plainRun(antTable('RL'), run.steps)
  t.equal(run.cells, plain.grid.size, 'coloured cells at the end')
  t.same(run.reach, reachOf(plain, run.steps), 'reach relative to the start')
  t.ok(Date.now() - started < 2000, 'fast')
})

t.test("the highway proof, checked again: the moves repeat long past it, and not from one step earlier", async (t) => {
  const run = runAnt({ turns: 'RL' }).run
  const { at, period, d } = run.proof!
  const periods = 40
  const p = plainRun(antTable('RL'), at + (periods + 1) * period)
  t.ok(repeats(p, at, period, d, periods), `every step of ${periods} periods after the proof is the step one period earlier, moved by d`)
  t.notOk(repeats(p, at - 1, period, d, 1), 'step at − 1 is not periodic: at is the onset')

  // The proof's own test, from its definition, on the plain simulation's fields at `at` and at + P.
  const before = plainRun(antTable('RL'), at).grid
  const after = plainRun(antTable('RL'), at + period).grid
  const colour = (g: Map<string, number>, i: number, j: number): number => g.get(`${i},${j}`) ?? 0
  const v = new Set<string>()
  for (let s2 = at; s2 < at + period; s2++) v.add(`${p.i[s2]},${p.j[s2]}`)
  const [r0, r1, r2, r3] = reachOf(p, at + period) as [number, number, number, number]
  const inR = (i: number, j: number): boolean => i >= r0 && j >= r1 && i <= r2 && j <= r3
  const compared = new Set<string>()
  let holds = true
  for (let k = 0; k < 200; k++) {
    for (const key of v) {
      const [vi, vj] = key.split(',').map(Number) as [number, number]
      const [i, j] = [vi + k * d[0], vj + k * d[1]]
      if (!inR(i, j) && !inR(i + d[0], j + d[1])) continue
      compared.add(`${i},${j}`)
      holds &&= colour(after, i + d[0], j + d[1]) === colour(before, i, j)
    }
  }
  t.ok(holds, 'every cell of V + k·d has at step at + P the colour its predecessor had at step at')
  t.equal(run.proof!.cells, compared.size, 'cells counts the cells compared')
})

t.test('turning the start heading turns the highway', async (t) => {
  const right = runAnt({ turns: 'RL' }, { heading: 'right' }).run
  t.same([right.outcome, right.period, right.onset, right.d], ['highway', 104, 9977, [-2, -2]])
  const mirrored = runAnt({ turns: 'LR' }).run
  t.same([mirrored.outcome, mirrored.period, mirrored.d], ['highway', 104, [2, 2]], 'LR is RL mirrored')
})

// -----------------------------------------------------------------------------------------------------------
// LLRR and symmetry
// -----------------------------------------------------------------------------------------------------------

t.test('LLRR grows symmetrically', async (t) => {
  const steps = 20_000
  const r = runAnt({ turns: 'LLRR' }, { limits: { steps } })
  const run = r.run
  t.same(r.limits, { ...ANT_LIMITS, steps })
  t.equal(run.outcome, 'symmetric')
  t.equal(run.steps, steps)
  t.notOk('period' in run || 'proof' in run || 'speed' in run || 'd' in run || 'onset' in run, 'no highway members')

  // Every return to the start cell, with the field checked for each mirror line directly.
  const events: { step: number; cells: number; mirror: ReturnType<typeof mirrorOf> }[] = []
  const plain = plainRun(antTable('LLRR'), steps, 0, (step, p) => {
    if (p.i[step] === 0 && p.j[step] === 0 && p.grid.size > 0) {
      const mirror = mirrorOf(p.grid)
      if (mirror) events.push({ step, cells: p.grid.size, mirror })
    }
  })
  const last = events[events.length - 1]!
  t.ok(events.length > 100, `${events.length} symmetric fields`)
  t.same(run.symmetry, {
    count: events.length,
    first_step: events[0]!.step,
    last_step: last.step,
    last_cells: last.cells,
    reflection: last.mirror!.reflection,
    translation: last.mirror!.translation,
  })
  t.ok(run.symmetry!.last_step > steps / 2, 'still symmetric in the second half of the run')
  t.equal(run.cells, plain.grid.size)
  t.same(run.reach, reachOf(plain, steps))
})

t.test('a longer LLRR run stays symmetric', async (t) => {
  const run = runAnt({ turns: 'LLRR' }, { limits: { steps: 100_000 } }).run
  t.same([run.outcome, run.symmetry!.reflection, run.symmetry!.translation], ['symmetric', [1, 0, 0, -1], [0, 1]], 'mirrored about the line between rows 0 and 1')
})

t.test('limits.symmetry false skips the test', async (t) => {
  const r = runAnt({ turns: 'LLRR' }, { limits: { steps: 5000, symmetry: false } })
  t.equal(r.limits.symmetry, false)
  t.notOk('symmetry' in r.run)
  t.not(r.run.outcome, 'symmetric')
})

// -----------------------------------------------------------------------------------------------------------
// Other outcomes, turmites, and malformed rules
// -----------------------------------------------------------------------------------------------------------

t.test('a one-colour ant walks a square for ever: periodic', async (t) => {
  const run = runAnt({ turns: 'R' }).run
  t.same(run, { outcome: 'periodic', steps: 4, cells: 0, reach: [0, 0, 1, 1], period: 4, d: [0, 0], onset: 0, proof: { at: 0, period: 4, d: [0, 0], cells: 4 } })
  const looking = runAnt({ turns: 'R' }, { limits: { max_period: 2, steps: 1000 } }).run
  t.same([looking.outcome, looking.steps], ['bounded', 1000], 'with the period out of reach, bounded')
})

t.test('two repeated periods that run into old cells prove nothing', async (t) => {
  // LRRRRRLLR runs a period-4 stretch from step 19,985 to 20,048 and then breaks off; a proof that compared
  // moves alone, not the colours ahead, would call it a highway at the check at step 20,000.
  const run = runAnt({ turns: 'LRRRRRLLR' }, { limits: { steps: 130_000 } }).run
  t.same([run.outcome, run.steps], ['chaotic', 130_000])
})

t.test('RLR is chaotic', async (t) => {
  const steps = 30_000
  const run = runAnt({ turns: 'RLR' }, { limits: { steps } }).run
  t.equal(run.outcome, 'chaotic')
  const plain = plainRun(antTable('RLR'), steps)
  t.same([run.cells, run.reach], [plain.grid.size, reachOf(plain, steps)])
})

t.test('a turmite table runs as its ant does, and random turmites match the plain simulation', async (t) => {
  t.same(runAnt({ table: antTable('RL') }), runAnt({ turns: 'RL' }))
  const rnd = seededRandom(42)
  const turns = ['L', 'R', 'N', 'U'] as const
  for (let n = 0; n < 8; n++) {
    const table = [0, 1].map(() => [0, 1].map((): TurmiteTransition => ({ write: Math.floor(rnd() * 2), turn: turns[Math.floor(rnd() * 4)]!, next: Math.floor(rnd() * 2) })))
    const steps = 5000
    const r: AntRunJson = runAnt({ table }, { limits: { steps } })
    const end = r.run.steps
    const plain = plainRun(table, end)
    t.same([r.run.cells, r.run.reach], [plain.grid.size, reachOf(plain, end)], `turmite ${JSON.stringify(table)}: ${r.run.outcome}`)
    if (r.run.proof) {
      const { at, period, d } = r.run.proof
      t.ok(repeats(plainRun(table, at + 20 * period), at, period, d, 19), 'its proof holds past the run')
    }
  }
})

t.test('malformed rules and limits', async (t) => {
  t.throws(() => runAnt({ turns: 'RX' }), { code: ANT_CODES.malformed })
  t.throws(() => runAnt({ turns: '' }), { code: ANT_CODES.malformed })
  t.throws(() => runAnt({ table: [[{ write: 2, turn: 'R', next: 0 }, { write: 0, turn: 'L', next: 0 }]] }), { code: ANT_CODES.malformed })
  t.throws(() => runAnt({ table: [[{ write: 1, turn: 'R', next: 1 }, { write: 0, turn: 'L', next: 0 }]] }), { code: ANT_CODES.malformed })
  t.throws(() => runAnt({ turns: 'RL' }, { limits: { max_period: 0 } }), { code: ANT_CODES.malformed })
  t.throws(() => runAnt({ turns: 'RL' }, { limits: { steps: -1 } }), { code: ANT_CODES.malformed })
  t.throws(() => runAnt({ turns: 'RL' }, { heading: 'north' as 'up' }), { code: ANT_CODES.malformed })
})

t.test('the run JSON holds integers as integers', async (t) => {
  const r = runAnt({ turns: 'RL' })
  const ints = JSON.stringify(r).match(/-?\d+(\.\d+)?/g)!.filter((x) => x.includes('.'))
  t.same(ints, ['0.027196'], 'the speed is the only number with a fraction')
})

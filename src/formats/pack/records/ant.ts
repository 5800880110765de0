/**
 * Ants and turmites on the square grid, and the facts the ants table and its run JSON hold (pack format 1.0,
 * "Tables" > "ants"): outcome, steps, cells, reach and, for a highway or periodic run, its period,
 * displacement, onset, speed and proof; for a run that saw mirror-symmetric fields, its symmetry.
 *
 * Conventions (the spec's square grid): y down, i right, j down; a cell (i, j) is relative to the ant's
 * start. A turn string has one letter per colour: R turns clockwise on the y-down screen, L
 * counter-clockwise, N not at all, U about. The ant starts on an empty plane (every cell colour 0) facing
 * up (j − 1) unless told otherwise. Each step: turn by the colour under the ant, advance that colour
 * (mod colors), move one cell. A turmite does the same from its table: by its state and the colour under
 * it, it writes a colour, turns and takes a new state.
 *
 * The highway proof. Let V be the cells the ant stands on during steps [at, at + P), and F the cells
 * V + k·d for every k ≥ 0. The proof holds when the ant's heading and state before step at + P are those
 * before step at, its position is moved by d, and for every cell x of F the colour of x + d at step at + P
 * equals the colour of x at step at. Then, step by step, the run from at + P is the run from at moved by
 * d: the cell the ant reads at step at + P + s is either one it wrote since at + P, holding what the run
 * from at wrote there moved by d, or x + d for the cell x of F read at step at + s, whose colour the proof
 * compared; so the run repeats for ever. Only cells inside R, the box of every cell reached by step
 * at + P, can be coloured at either step, so the cells x of F with neither x nor x + d in R hold 0 at both;
 * `cells` counts the others, the cells the proof compared. The test is also necessary: when the run is
 * periodic for ever from a step on, the test holds there. A run looks every max(max_period, 1024) steps
 * for the shortest P whose last two periods repeat (colours read, headings, states), walks back to the
 * first step of that tail, the onset, and tries the proof there: so `at` is the onset, and the run ends at
 * at + P, where the proof compared.
 *
 * Symmetric fields. After each step that leaves the ant on its start cell, a field with coloured cells is
 * symmetric when a mirror p → M·p + t of the square lattice (p relative to the start) takes every
 * coloured cell to a cell of the same colour. M = [a, b, c, d] is tried in the order [-1, 0, 0, 1]
 * (i mirrored), [1, 0, 0, -1] (j mirrored), [0, 1, 1, 0] and [0, -1, -1, 0] (the diagonals); the first
 * that holds is the one reported, and t follows from each colour's cells keeping their sum.
 */
import { PipeError } from '../../../core/errors.js'

/** Stable codes of ant errors. */
export const ANT_CODES = {
  /** A turn string, table, heading or limit that is not well formed. */
  malformed: 'pack.ant-malformed',
} as const

export type Turn = 'L' | 'R' | 'N' | 'U'
export type Heading = 'up' | 'right' | 'down' | 'left'

/** What a turmite does in one state on one colour. */
export interface TurmiteTransition {
  write: number
  turn: Turn
  next: number
}

export interface AntLimits {
  /** the most steps the run takes */
  steps: number
  /** the longest highway or orbit period looked for */
  max_period: number
  /** whether fields are tested for mirror symmetry */
  symmetry: boolean
}

export const ANT_LIMITS: Readonly<AntLimits> = Object.freeze({ steps: 1_000_000, max_period: 10_000, symmetry: true })

/** A rule: a turn string (an ant), or a table [state][colour] (a turmite). */
export type AntRule = { turns: string } | { table: readonly (readonly TurmiteTransition[])[] }

export interface AntOptions {
  limits?: Partial<AntLimits>
  heading?: Heading
}

export type AntOutcome = 'highway' | 'periodic' | 'symmetric' | 'bounded' | 'chaotic'

export interface AntProof {
  at: number
  period: number
  d: [number, number]
  cells: number
}

export interface AntSymmetry {
  count: number
  first_step: number
  last_step: number
  last_cells: number
  /** [a, b, c, d]: cell (i, j) goes to (a·i + b·j + x, c·i + d·j + y) */
  reflection: [number, number, number, number]
  translation: [number, number]
}

/** The run JSON of an ants row (members that do not apply are absent). */
export interface AntRunJson {
  limits: AntLimits
  run: {
    outcome: AntOutcome
    steps: number
    cells: number
    reach: [number, number, number, number]
    period?: number
    d?: [number, number]
    onset?: number
    speed?: number
    proof?: AntProof
    symmetry?: AntSymmetry
  }
}

const MAX_COLOURS = 0x1_0000
const MAX_STATES = 0x4000
/** The most steps a run may be asked for: positions stay int32 and chunk keys exact. */
const MAX_STEPS = 0x7fff_ffff
/** The longest period looked for: the history kept is about four times as long. */
const MAX_PERIOD = 1_000_000
const TURN_DELTA: Record<Turn, number> = { N: 0, R: 1, U: 2, L: 3 }
const HEADINGS: readonly Heading[] = ['up', 'right', 'down', 'left']
const STEP_I = [0, 1, 0, -1]
const STEP_J = [-1, 0, 1, 0]
/** The four mirror lines of the square lattice, as [a, b, c, d]. */
const REFLECTIONS: readonly [number, number, number, number][] = [[-1, 0, 0, 1], [1, 0, 0, -1], [0, 1, 1, 0], [0, -1, -1, 0]]

function malformed(message: string): PipeError {
  return new PipeError(ANT_CODES.malformed, message)
}

/** The table of a turn-string ant: one state; on colour c it turns by letter c and writes c + 1 (mod colors). */
export function antTable(turns: string): TurmiteTransition[][] {
  if (turns.length < 1 || turns.length > MAX_COLOURS) throw malformed(`a turn string has 1 to ${MAX_COLOURS} letters, not ${turns.length}`)
  const row = [...turns].map((letter, c): TurmiteTransition => {
    if (!(letter in TURN_DELTA)) throw malformed(`turn ${JSON.stringify(letter)} is not L, R, N or U`)
    return { write: (c + 1) % turns.length, turn: letter as Turn, next: 0 }
  })
  return [row]
}

/** A compiled table: flat arrays indexed by state · colors + colour. */
interface Machine {
  colors: number
  write: Uint16Array
  turn: Uint8Array
  next: Uint16Array
}

function compile(rule: AntRule): Machine {
  const table = 'turns' in rule ? antTable(rule.turns) : rule.table
  const states = table.length
  const colors = table[0]?.length ?? 0
  if (states < 1 || states > MAX_STATES) throw malformed(`a turmite has 1 to ${MAX_STATES} states, not ${states}`)
  if (colors < 1 || colors > MAX_COLOURS) throw malformed(`a turmite has 1 to ${MAX_COLOURS} colours, not ${colors}`)
  const m: Machine = { colors, write: new Uint16Array(states * colors), turn: new Uint8Array(states * colors), next: new Uint16Array(states * colors) }
  table.forEach((row, q) => {
    if (row.length !== colors) throw malformed(`state ${q} has ${row.length} colours, state 0 has ${colors}`)
    row.forEach((t, c) => {
      if (!Number.isInteger(t.write) || t.write < 0 || t.write >= colors) throw malformed(`state ${q}, colour ${c} writes colour ${t.write}`)
      if (!Number.isInteger(t.next) || t.next < 0 || t.next >= states) throw malformed(`state ${q}, colour ${c} goes to state ${t.next}`)
      if (!(t.turn in TURN_DELTA)) throw malformed(`state ${q}, colour ${c} turns ${JSON.stringify(t.turn)}`)
      m.write[q * colors + c] = t.write
      m.turn[q * colors + c] = TURN_DELTA[t.turn]
      m.next[q * colors + c] = t.next
    })
  })
  return m
}

// ---------------------------------------------------------------------------------------------------------
// The plane: 64 × 64 chunks of colours, made as the ant reaches them
// ---------------------------------------------------------------------------------------------------------

/** [i0, j0, i1, j1], inclusive */
type Box = [number, number, number, number]

const CHUNK_BITS = 6
const CHUNK_MASK = (1 << CHUNK_BITS) - 1
const CHUNK_SPAN = 2 ** 26

const chunkKey = (ci: number, cj: number): number => (ci + CHUNK_SPAN / 2) * CHUNK_SPAN + (cj + CHUNK_SPAN / 2)
const cellIndex = (i: number, j: number): number => ((j & CHUNK_MASK) << CHUNK_BITS) | (i & CHUNK_MASK)
/** A cell as a key of the proof's maps (a few periods of cells each; positions span int32, so a string). */
const cellKey = (i: number, j: number): string => `${i},${j}`

class Plane {
  readonly chunks = new Map<number, Uint16Array>()
  // The chunk colour() read last (or its absence): a symmetry test reads cells in runs within a chunk.
  private lastKey = NaN
  private last: Uint16Array | undefined

  chunk(ci: number, cj: number): Uint16Array {
    const key = chunkKey(ci, cj)
    let c = this.chunks.get(key)
    if (c === undefined) {
      c = new Uint16Array(1 << (2 * CHUNK_BITS))
      this.chunks.set(key, c)
      if (key === this.lastKey) this.last = c
    }
    return c
  }

  colour(i: number, j: number): number {
    const key = chunkKey(i >> CHUNK_BITS, j >> CHUNK_BITS)
    if (key !== this.lastKey) {
      this.lastKey = key
      this.last = this.chunks.get(key)
    }
    return this.last?.[cellIndex(i, j)] ?? 0
  }

  /** Whether f(i, j, colour) holds for every coloured cell of a box (stops at the first that fails). */
  everyColoured(box: Box, f: (i: number, j: number, c: number) => boolean): boolean {
    for (let cj = box[1] >> CHUNK_BITS; cj <= box[3] >> CHUNK_BITS; cj++) {
      for (let ci = box[0] >> CHUNK_BITS; ci <= box[2] >> CHUNK_BITS; ci++) {
        const chunk = this.chunks.get(chunkKey(ci, cj))
        if (chunk === undefined) continue
        const j1 = Math.min(box[3], ((cj + 1) << CHUNK_BITS) - 1)
        const i1 = Math.min(box[2], ((ci + 1) << CHUNK_BITS) - 1)
        for (let j = Math.max(box[1], cj << CHUNK_BITS); j <= j1; j++) {
          for (let i = Math.max(box[0], ci << CHUNK_BITS); i <= i1; i++) {
            const c = chunk[cellIndex(i, j)] as number
            if (c !== 0 && !f(i, j, c)) return false
          }
        }
      }
    }
    return true
  }
}

// ---------------------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------------------

interface SymmetricField {
  step: number
  cells: number
  reflection: [number, number, number, number]
  translation: [number, number]
}

/**
 * Runs an ant or turmite from an empty plane and classes its run: highway or periodic when the proof holds
 * (the run stops at at + P, where the proof compared), otherwise symmetric (mirror-symmetric fields with the
 * ant on its start cell, the last in the second half of the run), bounded (the reach stopped growing in the
 * first half) or chaotic. Throws PipeError pack.ant-malformed for a malformed rule, heading or limit.
 */
export function runAnt(rule: AntRule, options: AntOptions = {}): AntRunJson {
  const limits: AntLimits = { ...ANT_LIMITS, ...options.limits }
  if (!Number.isSafeInteger(limits.steps) || limits.steps < 0 || limits.steps > MAX_STEPS) throw malformed(`steps ${limits.steps} is not 0 to ${MAX_STEPS}`)
  if (!Number.isSafeInteger(limits.max_period) || limits.max_period < 1 || limits.max_period > MAX_PERIOD) throw malformed(`max_period ${limits.max_period} is not 1 to ${MAX_PERIOD}`)
  const heading = HEADINGS.indexOf(options.heading ?? 'up')
  if (heading < 0) throw malformed(`heading ${JSON.stringify(options.heading)} is not up, right, down or left`)
  return new AntRun(compile(rule), limits, heading).run()
}

class AntRun {
  private readonly plane = new Plane()
  // The ant before step `step`.
  private i = 0
  private j = 0
  private heading: number
  private state = 0
  private step = 0
  private coloured = 0
  /** per colour: how many cells, and the sums of their i and j (a cheap symmetry test before the full one) */
  private readonly count: Float64Array
  private readonly sumI: Float64Array
  private readonly sumJ: Float64Array
  /** the reach, and each step at which it grew with the reach after it */
  private readonly reach: Box = [0, 0, 0, 0]
  private readonly growth: { step: number; reach: Box }[] = [{ step: 0, reach: [0, 0, 0, 0] }]
  /**
   * Symmetric fields seen: how many, the first, and the recent ones (a run that ends at a proof ends up to
   * a ring's length of steps before now, and leaves out the fields after its end)
   */
  private symmetricCount = 0
  private firstSymmetric: SymmetricField | undefined
  private recentSymmetric: SymmetricField[] = []
  /** ring buffers of the last steps: colour read, and heading | state << 2 before the step */
  private readonly reads: Uint16Array
  private readonly before: Uint32Array
  private readonly ring: number
  private readonly checkEvery: number

  constructor(private readonly m: Machine, private readonly limits: AntLimits, heading: number) {
    this.heading = heading
    this.count = new Float64Array(m.colors)
    this.sumI = new Float64Array(m.colors)
    this.sumJ = new Float64Array(m.colors)
    // A periodic tail is found at the first check at least two periods into it, so the ring holds the
    // tail from its onset: two periods plus one check interval.
    this.checkEvery = Math.max(limits.max_period, 1024)
    this.ring = 2 ** Math.ceil(Math.log2(2 * limits.max_period + this.checkEvery + 2))
    this.reads = new Uint16Array(this.ring)
    this.before = new Uint32Array(this.ring)
  }

  run(): AntRunJson {
    const { m, plane, limits } = this
    let ci = 0
    let cj = 0
    let chunk = plane.chunk(0, 0)
    while (this.step < limits.steps) {
      const x = cellIndex(this.i, this.j)
      const c = chunk[x] as number
      const slot = this.step & (this.ring - 1)
      this.reads[slot] = c
      this.before[slot] = this.heading | (this.state << 2)
      const t = this.state * m.colors + c
      const w = m.write[t] as number
      chunk[x] = w
      if (w !== c) this.recolour(c, w)
      this.heading = (this.heading + (m.turn[t] as number)) & 3
      this.state = m.next[t] as number
      this.i += STEP_I[this.heading] as number
      this.j += STEP_J[this.heading] as number
      this.step++
      if (this.i >> CHUNK_BITS !== ci || this.j >> CHUNK_BITS !== cj) {
        ci = this.i >> CHUNK_BITS
        cj = this.j >> CHUNK_BITS
        chunk = plane.chunk(ci, cj)
      }
      this.widen()
      if (limits.symmetry && this.i === 0 && this.j === 0 && this.coloured > 0) this.testSymmetry()
      if (this.step % this.checkEvery === 0) {
        const found = this.findPeriodicTail()
        if (found !== undefined) return found
      }
    }
    const found = this.findPeriodicTail()
    return found ?? this.unproved()
  }

  private recolour(from: number, to: number): void {
    if (from === 0) this.coloured++
    else this.tally(from, -1)
    if (to === 0) this.coloured--
    else this.tally(to, 1)
  }

  private tally(colour: number, sign: 1 | -1): void {
    this.count[colour] = (this.count[colour] as number) + sign
    this.sumI[colour] = (this.sumI[colour] as number) + sign * this.i
    this.sumJ[colour] = (this.sumJ[colour] as number) + sign * this.j
  }

  private widen(): void {
    const r = this.reach
    if (this.i >= r[0] && this.j >= r[1] && this.i <= r[2] && this.j <= r[3]) return
    r[0] = Math.min(r[0], this.i)
    r[1] = Math.min(r[1], this.j)
    r[2] = Math.max(r[2], this.i)
    r[3] = Math.max(r[3], this.j)
    this.growth.push({ step: this.step, reach: [...r] })
  }

  private reachAt(step: number): Box {
    let g = this.growth.length - 1
    while ((this.growth[g] as { step: number }).step > step) g--
    return [...(this.growth[g] as { reach: Box }).reach]
  }

  // -------------------------------------------------------------------------------------------------------
  // Symmetry
  // -------------------------------------------------------------------------------------------------------

  /** Records the field when it is mirror-symmetric (the ant is on its start cell). */
  private testSymmetry(): void {
    for (const r of REFLECTIONS) {
      const translation = this.momentTranslation(r)
      if (translation !== undefined && this.mirrors(r, translation)) {
        const field: SymmetricField = { step: this.step, cells: this.coloured, reflection: [...r], translation }
        this.symmetricCount++
        this.firstSymmetric ??= field
        this.recentSymmetric.push(field)
        // At most one field every other step is within a ring's length, so trimming at a ring's count is
        // rare; the newest field older than that is kept too, as the last one for the earliest possible end.
        if (this.recentSymmetric.length > this.ring) {
          const old = this.recentSymmetric.findLastIndex((f) => f.step <= this.step - this.ring)
          this.recentSymmetric = this.recentSymmetric.slice(Math.max(old, 0))
        }
        return
      }
    }
  }

  /**
   * The translation t with which p → r·p + t could map each colour's cells onto themselves: a colour's
   * cells keep their sum, so n·t = sum − r·sum for every colour. Undefined when no integer t fits all.
   */
  private momentTranslation(r: readonly number[]): [number, number] | undefined {
    const [a, b, c, d] = r as [number, number, number, number]
    let t: [number, number] | undefined
    for (let colour = 1; colour < this.m.colors; colour++) {
      const n = this.count[colour] as number
      if (n === 0) continue
      const si = this.sumI[colour] as number
      const sj = this.sumJ[colour] as number
      const ti = si - (a * si + b * sj)
      const tj = sj - (c * si + d * sj)
      if (t === undefined) {
        if (ti % n !== 0 || tj % n !== 0) return undefined
        t = [ti / n, tj / n]
      } else if (ti !== n * t[0] || tj !== n * t[1]) return undefined
    }
    return t
  }

  private mirrors(r: readonly number[], t: readonly number[]): boolean {
    const [a, b, c, d] = r as [number, number, number, number]
    const [x, y] = t as [number, number]
    // Only cells the ant reached can be coloured.
    return this.plane.everyColoured(this.reach, (i, j, colour) => this.plane.colour(a * i + b * j + x, c * i + d * j + y) === colour)
  }

  // -------------------------------------------------------------------------------------------------------
  // Highways and periodic runs
  // -------------------------------------------------------------------------------------------------------

  /** The same colour read, heading and state before steps s and s + P. */
  private sameAt(s: number, p: number): boolean {
    const mask = this.ring - 1
    return this.reads[s & mask] === this.reads[(s + p) & mask] && this.before[s & mask] === this.before[(s + p) & mask]
  }

  /**
   * Looks for the shortest period P whose last two periods repeat, finds the first step of that periodic
   * tail and tries the proof there; returns the finished run when it holds.
   */
  private findPeriodicTail(): AntRunJson | undefined {
    const now = this.step
    const oldest = Math.max(0, now - this.ring + 1)
    for (let p = 1; p <= this.limits.max_period && now - 2 * p >= oldest; p++) {
      let s = 0
      while (s < p && this.sameAt(now - 1 - p - s, p)) s++
      if (s < p) continue
      let onset = now - 2 * p
      while (onset > oldest && this.sameAt(onset - 1, p)) onset--
      // A tail reaching back past the history kept was tested already, at the first check two periods
      // into it, and the proof at a given onset gives the same answer whenever it is tried.
      if (onset === oldest && oldest > 0) continue
      const proof = this.prove(onset, p)
      if (proof !== undefined) return this.finish(proof)
    }
    return undefined
  }

  /** Positions of the ant before each step from `from` to now, walked back from where it stands. */
  private positionsSince(from: number): { i: Int32Array; j: Int32Array } {
    const n = this.step - from + 1
    const pi = new Int32Array(n)
    const pj = new Int32Array(n)
    pi[n - 1] = this.i
    pj[n - 1] = this.j
    for (let s = this.step - 1; s >= from; s--) {
      // The heading before step s + 1 is the one the ant moved in at step s.
      const h = s + 1 === this.step ? this.heading : (this.before[(s + 1) & (this.ring - 1)] as number) & 3
      pi[s - from] = (pi[s - from + 1] as number) - (STEP_I[h] as number)
      pj[s - from] = (pj[s - from + 1] as number) - (STEP_J[h] as number)
    }
    return { i: pi, j: pj }
  }

  /**
   * Each cell the ant stood on during steps [from, to), with the colour it read there first: the cell's
   * colour before step `from`. pos holds the positions from step `since` on.
   */
  private firstReads(pos: { i: Int32Array; j: Int32Array }, since: number, from: number, to: number): Map<string, { i: number; j: number; c: number }> {
    const out = new Map<string, { i: number; j: number; c: number }>()
    for (let s = from; s < to; s++) {
      const i = pos.i[s - since] as number
      const j = pos.j[s - since] as number
      const key = cellKey(i, j)
      if (!out.has(key)) out.set(key, { i, j, c: this.reads[s & (this.ring - 1)] as number })
    }
    return out
  }

  /** The proof at step `at` with period p (the module's comment defines it), or undefined when it fails. */
  private prove(at: number, p: number): AntProof | undefined {
    const pos = this.positionsSince(at)
    const di = (pos.i[p] as number) - (pos.i[0] as number)
    const dj = (pos.j[p] as number) - (pos.j[0] as number)
    // Colours at step at + p of the cells visited since, and at step `at` of V: each read at its first visit.
    const then = this.firstReads(pos, at, at + p, this.step)
    const colourThen = (i: number, j: number): number => then.get(cellKey(i, j))?.c ?? this.plane.colour(i, j)
    const start = this.firstReads(pos, at, at, at + p)
    const colourAt = (i: number, j: number): number => start.get(cellKey(i, j))?.c ?? colourThen(i, j)

    const r = this.reachAt(at + p)
    const inR = (i: number, j: number): boolean => i >= r[0] && j >= r[1] && i <= r[2] && j <= r[3]
    const v = [...start.values()]
    const vBox: Box = [Infinity, Infinity, -Infinity, -Infinity]
    for (const x of v) {
      vBox[0] = Math.min(vBox[0], x.i)
      vBox[1] = Math.min(vBox[1], x.j)
      vBox[2] = Math.max(vBox[2], x.i)
      vBox[3] = Math.max(vBox[3], x.j)
    }
    // V + k·d meets R or R − d for an interval of k from 0; beyond it every cell is colour 0 at both steps.
    const b: Box = [Math.min(r[0], r[0] - di), Math.min(r[1], r[1] - dj), Math.max(r[2], r[2] - di), Math.max(r[3], r[3] - dj)]
    const meets = (k: number): boolean => vBox[0] + k * di <= b[2] && vBox[2] + k * di >= b[0] && vBox[1] + k * dj <= b[3] && vBox[3] + k * dj >= b[1]
    const compared = new Set<string>()
    for (let k = 0; k === 0 || ((di !== 0 || dj !== 0) && meets(k)); k++) {
      for (const x of v) {
        const i = x.i + k * di
        const j = x.j + k * dj
        if (!inR(i, j) && !inR(i + di, j + dj)) continue
        const key = cellKey(i, j)
        if (compared.has(key)) continue
        compared.add(key)
        if (colourThen(i + di, j + dj) !== colourAt(i, j)) return undefined
      }
    }
    return { at, period: p, d: [di, dj], cells: compared.size }
  }

  /** The run ending at proof.at + proof.period, where the proof compared. */
  private finish(proof: AntProof): AntRunJson {
    const end = proof.at + proof.period
    // The cells coloured at `end`: now's count, less what changed since (the colours first read then).
    let cells = this.coloured
    for (const { i, j, c } of this.firstReads(this.positionsSince(end), end, end, this.step).values()) {
      cells += (c !== 0 ? 1 : 0) - (this.plane.colour(i, j) !== 0 ? 1 : 0)
    }
    const [dx, dy] = proof.d
    const moving = dx !== 0 || dy !== 0
    return {
      limits: { ...this.limits },
      run: {
        outcome: moving ? 'highway' : 'periodic',
        steps: end,
        cells,
        reach: this.reachAt(end),
        period: proof.period,
        d: [dx, dy],
        onset: proof.at,
        // Square grid: world units are lattice steps and a tile's area is 1.
        ...(moving ? { speed: Number((Math.hypot(dx, dy) / proof.period).toFixed(6)) } : {}),
        proof,
        ...this.symmetryUpTo(end),
      },
    }
  }

  private unproved(): AntRunJson {
    const steps = this.step
    const half = steps / 2
    const symmetry = this.symmetryUpTo(steps)
    const lastGrowth = (this.growth[this.growth.length - 1] as { step: number }).step
    const outcome: AntOutcome =
      symmetry.symmetry !== undefined && symmetry.symmetry.last_step > half ? 'symmetric' : lastGrowth <= half ? 'bounded' : 'chaotic'
    return { limits: { ...this.limits }, run: { outcome, steps, cells: this.coloured, reach: [...this.reach], ...symmetry } }
  }

  private symmetryUpTo(end: number): { symmetry?: AntSymmetry } {
    const after = this.recentSymmetric.filter((f) => f.step > end).length
    const last = this.recentSymmetric[this.recentSymmetric.length - 1 - after]
    const first = this.firstSymmetric
    if (first === undefined || last === undefined) return {}
    return {
      symmetry: {
        count: this.symmetricCount - after,
        first_step: first.step,
        last_step: last.step,
        last_cells: last.cells,
        reflection: last.reflection,
        translation: last.translation,
      },
    }
  }
}

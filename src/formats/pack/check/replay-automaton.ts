/**
 * A B/S and Generations cellular automaton on any lattice tiling, for level-3 replay (pack format 1.0,
 * "Conformance levels") and for publishers' period finding (replay.ts).
 *
 * Cells are (i, j, k): tile type k moved by i·a1 + j·a2. A cell's neighbours are (i + di, j + dj, k') for
 * each slot of its type's edge or touch list; a neighbour listed twice counts once. Only the lists matter:
 * the corners and lattice vectors never enter the rule.
 *
 * The plane is unbounded and sparse: a Map from a packed coordinate to the state of every cell that differs
 * from the background, so nothing ever reaches an edge; a run stops only at a cell cap or at the edge of
 * the coordinate window a packed number can hold (millions of lattice steps), each with its own reason.
 *
 * B0 rules. Under a rule with birth on 0 the dead plane does not stay dead, so cells are stored relative
 * to a uniform background that flips (Golly's emulation, "black/white reversal"). For a tile type with N
 * neighbours and a true rule (B, S), counting steps (rule applications) from generation 0:
 *   - B0 without S_N: the background is dead before even steps and alive before odd ones. An even step
 *     runs (B', S') = (not B, not S) and an odd step (N − S, N − B), both without B0.
 *   - B0 with S_N: an alive background is a fixed point, and the plane is read as alive from the first
 *     step on: every step runs (N − not S, N − not B). (AntiLife B0123478/S01234678 runs as Life.)
 * Both are derived here from one rule, never listed: with the background b before a step and b' after,
 * a stored cell c with n stored neighbours is the true cell c XOR b with n or N − n true neighbours, and
 * is stored afterwards when its true next state differs from b'. On tilings whose tile types have
 * different neighbour counts (trihex, oct) an alive background must stay uniformly alive or die
 * uniformly; when S holds some types' N but not others', the background stops being uniform and the
 * rule is refused (pack.replay-unsupported-rule). Generations rules with B0 are refused too: the plane
 * would be born and then age through every dying state, so no complementary pair of rules exists (Golly's
 * Generations grammar has no B0 either).
 */
import { PipeError } from '../../../core/errors.js'
import type { LatticeGeometry, NeighbourOffset } from '../geometry/geometry.js'

/** One cell of a phase: tile (i, j, k) in state s (1 alive; 2 and up dying, Generations). */
export interface PatternCell {
  i: number
  j: number
  k: number
  s: number
}

export type Neighbourhood = 'edge' | 'touch'

/** A B/S or Generations rule as its rules row gives it: birth and survive masks, bit n for n live neighbours. */
export interface MaskRule {
  neighbourhood: Neighbourhood
  /** int64 masks as a Parquet reader gives them (bigint), or safe integers; only bits 0 to 63 exist */
  birth: bigint | number
  survive: bigint | number
  /** 2 for B/S; 3 and up for Generations (1 alive, 2 .. states − 1 dying) */
  states: number
  steps_per_gen: number
}

/** What the automaton needs of a tiling: its tile types (for their count) and neighbour lists. */
export type AutomatonTiling = Pick<LatticeGeometry, 'tile_types' | 'edge' | 'touch'>

/** The cells reached, as inclusive lattice-step bounds in the pattern's own frame. */
export interface CellBox {
  i0: number
  j0: number
  i1: number
  j1: number
}

/** Error codes raised here (and reported by replay.ts as findings). */
export const AUTOMATON_CODES = {
  /** A rule, tiling or cell that is not well formed (a state out of range, a cell listed twice…). */
  malformed: 'pack.replay-malformed',
  /** A rule this simulator cannot run faithfully: Generations with B0, or a B0 rule whose background would not stay uniform. */
  unsupportedRule: 'pack.replay-unsupported-rule',
} as const

/** Why a run stopped before it was asked to. */
export type AutomatonLimit = 'cell-cap' | 'out-of-range'

/** The largest state a cell may have: states is an int32 column. */
const MAX_STATES = 0x7fff_ffff

function malformed(message: string): PipeError {
  return new PipeError(AUTOMATON_CODES.malformed, message)
}

// ---------------------------------------------------------------------------------------------------------
// Rules
// ---------------------------------------------------------------------------------------------------------

/** A mask column as its 64 bits (a signed int64 with bit 63 set reads as a negative number). */
function maskBits(v: unknown, field: string): bigint {
  if (typeof v === 'bigint') {
    if (v < -(1n << 63n) || v >= 1n << 64n) throw malformed(`${field} does not fit 64 bits`)
    return BigInt.asUintN(64, v)
  }
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt.asUintN(64, BigInt(v))
  throw malformed(`${field} is not an integer mask`)
}

/** For each live-neighbour count 0 .. n, whether the mask has its bit. */
function countTable(mask: bigint, n: number): Uint8Array {
  const t = new Uint8Array(n + 1)
  for (let c = 0; c <= n && c < 64; c++) t[c] = Number((mask >> BigInt(c)) & 1n)
  return t
}

/** The stored rule for one background phase: per tile type, whether a stored cell is stored after a step. */
interface PhaseTables {
  /** [type][stored live neighbours]: an empty stored cell becomes stored (alive) */
  birth: Uint8Array[]
  /** [type][stored live neighbours]: a stored live cell stays stored */
  survive: Uint8Array[]
}

/** A rule compiled for one tiling: deduplicated neighbour offsets and the tables of each background phase. */
export interface CompiledRule {
  types: number
  states: number
  stepsPerGen: number
  offsets: NeighbourOffset[][]
  /** the largest |di| or |dj| of any offset: how far one step reaches */
  reach: number
  /** one entry (a background that never changes) or two (dead before even steps, alive before odd ones) */
  phases: PhaseTables[]
  /** whether the background is alive before step 0: true only for B0 rules with S_N */
  backgroundAlive: boolean
}

function dedupe(list: readonly NeighbourOffset[]): NeighbourOffset[] {
  const seen = new Set<string>()
  const out: NeighbourOffset[] = []
  for (const o of list) {
    const key = `${o.di},${o.dj},${o.k}`
    if (!seen.has(key)) {
      seen.add(key)
      out.push({ di: o.di, dj: o.dj, k: o.k })
    }
  }
  return out
}

/**
 * The stored tables for one step, from the true tables and the background before (b) and after (b2).
 * A stored cell is the true cell XOR b; its true live neighbours are n, or N − n when b is alive.
 */
function storedTables(birth: Uint8Array[], survive: Uint8Array[], b: boolean, b2: boolean): PhaseTables {
  const out: PhaseTables = { birth: [], survive: [] }
  birth.forEach((trueBirth, k) => {
    const trueSurvive = survive[k] as Uint8Array
    const n = trueBirth.length - 1
    const sb = new Uint8Array(n + 1)
    const ss = new Uint8Array(n + 1)
    for (let stored = 0; stored <= n; stored++) {
      const live = b ? n - stored : stored
      // An empty stored cell is a true background cell (alive when b), a stored one its opposite.
      const fromEmpty = b ? trueSurvive[live] === 1 : trueBirth[live] === 1
      const fromStored = b ? trueBirth[live] === 1 : trueSurvive[live] === 1
      sb[stored] = fromEmpty !== b2 ? 1 : 0
      ss[stored] = fromStored !== b2 ? 1 : 0
    }
    out.birth.push(sb)
    out.survive.push(ss)
  })
  return out
}

/**
 * Compiles a rule for a tiling. Throws PipeError pack.replay-malformed for a rule or tiling that is not
 * well formed, and pack.replay-unsupported-rule for Generations with B0 and for B0 rules whose alive
 * background would not stay uniform on this tiling.
 */
export function compileRule(tiling: AutomatonTiling, rule: MaskRule): CompiledRule {
  const types = tiling.tile_types.length
  if (types < 1) throw malformed('the tiling has no tile types')
  if (rule.neighbourhood !== 'edge' && rule.neighbourhood !== 'touch') throw malformed(`neighbourhood ${JSON.stringify(rule.neighbourhood)} is neither edge nor touch`)
  if (!Number.isSafeInteger(rule.states) || rule.states < 2 || rule.states > MAX_STATES) throw malformed(`states ${rule.states} is not 2 (B/S) or more (Generations)`)
  if (!Number.isSafeInteger(rule.steps_per_gen) || rule.steps_per_gen < 1 || rule.steps_per_gen > MAX_STATES) throw malformed(`steps_per_gen ${rule.steps_per_gen} is not a positive int32`)
  const lists = tiling[rule.neighbourhood]
  if (lists.length !== types) throw malformed(`${rule.neighbourhood} has ${lists.length} lists for ${types} tile types`)
  const offsets = lists.map(dedupe)
  let reach = 0
  for (const list of offsets) {
    for (const o of list) {
      if (!Number.isSafeInteger(o.di) || !Number.isSafeInteger(o.dj) || !Number.isInteger(o.k) || o.k < 0 || o.k >= types) throw malformed(`neighbour offset (${o.di}, ${o.dj}, ${o.k}) is not a cell of the tiling`)
      reach = Math.max(reach, Math.abs(o.di), Math.abs(o.dj))
    }
  }
  const birthMask = maskBits(rule.birth, 'birth')
  const surviveMask = maskBits(rule.survive, 'survive')
  const trueBirth = offsets.map((l) => countTable(birthMask, l.length))
  const trueSurvive = offsets.map((l) => countTable(surviveMask, l.length))
  const base = { types, states: rule.states, stepsPerGen: rule.steps_per_gen, offsets, reach }
  if ((birthMask & 1n) === 0n) return { ...base, phases: [{ birth: trueBirth, survive: trueSurvive }], backgroundAlive: false }

  if (rule.states > 2) throw new PipeError(AUTOMATON_CODES.unsupportedRule, 'a Generations rule with B0 has no complementary form: the plane would be born and then age through every dying state')
  // A full neighbourhood survives on some tile types and not on others: the background would split.
  const fullSurvives = offsets.map((l, k) => (trueSurvive[k] as Uint8Array)[l.length] === 1)
  if (fullSurvives.some((x) => x !== fullSurvives[0])) {
    throw new PipeError(AUTOMATON_CODES.unsupportedRule, 'under this B0 rule an alive background survives on some tile types and dies on others, so it does not stay uniform')
  }
  if (fullSurvives[0]) return { ...base, phases: [storedTables(trueBirth, trueSurvive, true, true)], backgroundAlive: true }
  return { ...base, phases: [storedTables(trueBirth, trueSurvive, false, true), storedTables(trueBirth, trueSurvive, true, false)], backgroundAlive: false }
}

// ---------------------------------------------------------------------------------------------------------
// Packed coordinates
// ---------------------------------------------------------------------------------------------------------

/**
 * Cells packed into one safe integer: ((i + half) · span + (j + half)) · types + k, relative to an origin.
 * Keys sort by i, then j, then k, and a lattice translation adds one constant to every key. Coordinates are
 * kept within a quarter of the span on either side (the window), so a translation between two cell sets
 * in the window has exactly one decomposition and a step never carries into a neighbouring row.
 */
export class CellPacking {
  readonly types: number
  readonly span: number
  readonly half: number
  /** cells may lie at |i|, |j| < window (origin-relative) */
  readonly window: number

  constructor(types: number, readonly originI: number, readonly originJ: number) {
    this.types = types
    const typeBits = Math.ceil(Math.log2(types))
    const coordBits = Math.floor((53 - typeBits) / 2)
    this.span = 2 ** coordBits
    this.half = this.span / 2
    this.window = this.span / 4
  }

  /** The key of a frame cell, or undefined when it lies outside the window. */
  key(i: number, j: number, k: number): number | undefined {
    const ri = i - this.originI
    const rj = j - this.originJ
    if (Math.abs(ri) >= this.window || Math.abs(rj) >= this.window) return undefined
    return ((ri + this.half) * this.span + (rj + this.half)) * this.types + k
  }

  typeOf(key: number): number {
    return this.types === 1 ? 0 : key % this.types
  }

  /** The frame coordinates of a key. */
  cell(key: number): { i: number; j: number; k: number } {
    const k = this.typeOf(key)
    const rest = (key - k) / this.types
    const rj = rest % this.span
    const ri = (rest - rj) / this.span
    return { i: ri - this.half + this.originI, j: rj - this.half + this.originJ, k }
  }

  /** The key difference of a translation by (di, dj) lattice steps. */
  delta(di: number, dj: number): number {
    return (di * this.span + dj) * this.types
  }

  /** The translation a key difference between two sets of the window stands for (translateDelta's, deltaFrom's). */
  translation(delta: number): { dx: number; dy: number } {
    const d = delta / this.types
    const dx = Math.round(d / this.span)
    // `|| 0` turns a -0 (from rounding a small negative quotient) into 0.
    return { dx: dx || 0, dy: d - dx * this.span || 0 }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Phases as packed cell sets
// ---------------------------------------------------------------------------------------------------------

/** A set of cells with their states, keys sorted: a phase read from a record, or a generation kept. */
export interface PackedCells {
  keys: Float64Array
  states: Int32Array
}

/**
 * Packs a phase's cells, checking each: integer coordinates, a tile type of the tiling, a state of the rule
 * (1 .. states − 1), no cell twice. Returns undefined when a cell lies outside the coordinate window.
 */
export function packPhase(cells: readonly PatternCell[], packing: CellPacking, states: number, what: string): PackedCells | undefined {
  const pairs: [number, number][] = []
  for (const c of cells) {
    if (c === null || typeof c !== 'object') throw malformed(`${what} holds a cell that is not a struct`)
    const { i, j, k, s } = c
    if (!Number.isSafeInteger(i) || !Number.isSafeInteger(j)) throw malformed(`${what}: cell (${i}, ${j}, ${k}) has coordinates that are not integers`)
    if (!Number.isInteger(k) || k < 0 || k >= packing.types) throw malformed(`${what}: cell (${i}, ${j}, ${k}) has no tile type ${k}`)
    if (!Number.isInteger(s) || s < 1 || s >= states) throw malformed(`${what}: cell (${i}, ${j}, ${k}) has state ${s}, not one of 1 .. ${states - 1}`)
    const key = packing.key(i, j, k)
    if (key === undefined) return undefined
    pairs.push([key, s])
  }
  pairs.sort((a, b) => a[0] - b[0])
  const keys = new Float64Array(pairs.length)
  const stateList = new Int32Array(pairs.length)
  pairs.forEach(([key, s], n) => {
    if (n > 0 && keys[n - 1] === key) {
      const { i, j, k } = packing.cell(key)
      throw malformed(`${what} lists cell (${i}, ${j}, ${k}) twice`)
    }
    keys[n] = key
    stateList[n] = s
  })
  return { keys, states: stateList }
}

/** The cells of a packed set, in key order (by i, then j, then k). */
export function unpackCells(p: PackedCells, packing: CellPacking): PatternCell[] {
  const out: PatternCell[] = []
  p.keys.forEach((key, n) => out.push({ ...packing.cell(key), s: p.states[n] as number }))
  return out
}

/**
 * The key difference that moves set b onto set a (a is b moved by a lattice translation), or undefined when
 * a is no translate of b. A difference that changes tile types is no lattice translation.
 */
export function translateDelta(a: PackedCells, b: PackedCells, packing: CellPacking): number | undefined {
  const n = a.keys.length
  if (n !== b.keys.length) return undefined
  if (n === 0) return 0
  const delta = (a.keys[0] as number) - (b.keys[0] as number)
  if (delta % packing.types !== 0) return undefined
  for (let x = 0; x < n; x++) {
    if ((a.keys[x] as number) - (b.keys[x] as number) !== delta || a.states[x] !== b.states[x]) return undefined
  }
  return delta
}

// ---------------------------------------------------------------------------------------------------------
// The field
// ---------------------------------------------------------------------------------------------------------

/** A sparse field running one compiled rule, generation by generation. */
export class Field {
  /** every stored cell (differing from the background) and its state */
  cells: Map<number, number>
  /** generations run */
  generation = 0
  /** rule applications run */
  steps = 0
  /** the cells reached so far, in the frame's coordinates */
  readonly box: CellBox
  /** false when a starting cell lies so near the window's edge that a step could leave it */
  readonly startsInRange: boolean
  private readonly deltas: Float64Array[]

  constructor(readonly rule: CompiledRule, readonly packing: CellPacking, start: PackedCells, private readonly cellCap: number) {
    this.cells = new Map()
    start.keys.forEach((key, n) => this.cells.set(key, start.states[n] as number))
    this.deltas = rule.offsets.map((list, k) => Float64Array.from(list, (o) => packing.delta(o.di, o.dj) + o.k - k))
    this.box = { i0: Infinity, j0: Infinity, i1: -Infinity, j1: -Infinity }
    let inRange = true
    for (const key of this.cells.keys()) inRange = this.widen(key) && inRange
    this.startsInRange = inRange
  }

  /**
   * Whether the background is in the same phase after generation g as before generation 0, so that equal
   * stored cells mean equal true fields.
   */
  inPhase(g: number): boolean {
    return this.rule.phases.length === 1 || (g % 2) * (this.rule.stepsPerGen % 2) === 0
  }

  /** Runs one generation (steps_per_gen rule applications); returns why it stopped early, if it did. */
  advance(): AutomatonLimit | undefined {
    for (let s = 0; s < this.rule.stepsPerGen; s++) {
      const stop = this.step()
      if (stop !== undefined) return stop
    }
    this.generation++
    return undefined
  }

  /** The stored cells as a sorted packed set. */
  snapshot(): PackedCells {
    const keys = Float64Array.from(this.cells.keys()).sort()
    const states = Int32Array.from(keys, (key) => this.cells.get(key) as number)
    return { keys, states }
  }

  /** Whether the stored cells are exactly p translated by a key difference. */
  equalsShifted(p: PackedCells, delta: number): boolean {
    if (p.keys.length !== this.cells.size) return false
    for (let x = 0; x < p.keys.length; x++) {
      if (this.cells.get((p.keys[x] as number) + delta) !== p.states[x]) return false
    }
    return true
  }

  /** The key difference that moves p onto the stored cells, or undefined when they are no translate of p. */
  deltaFrom(p: PackedCells): number | undefined {
    if (p.keys.length !== this.cells.size) return undefined
    if (p.keys.length === 0) return 0
    let min = Infinity
    for (const key of this.cells.keys()) if (key < min) min = key
    const delta = min - (p.keys[0] as number)
    return delta % this.packing.types === 0 && this.equalsShifted(p, delta) ? delta : undefined
  }

  private step(): AutomatonLimit | undefined {
    const { rule, packing } = this
    const tables = rule.phases[this.steps % rule.phases.length] as PhaseTables
    const counts = new Map<number, number>()
    for (const [key, s] of this.cells) {
      if (s !== 1) continue
      const deltas = this.deltas[packing.typeOf(key)] as Float64Array
      for (let x = 0; x < deltas.length; x++) {
        const nb = key + (deltas[x] as number)
        counts.set(nb, (counts.get(nb) ?? 0) + 1)
      }
    }
    const next = new Map<number, number>()
    for (const [key, s] of this.cells) {
      if (s === 1) {
        if ((tables.survive[packing.typeOf(key)] as Uint8Array)[counts.get(key) ?? 0] === 1) next.set(key, 1)
        else if (rule.states > 2) next.set(key, 2)
      } else if (s + 1 < rule.states) next.set(key, s + 1)
    }
    for (const [key, n] of counts) {
      if (this.cells.has(key) || (tables.birth[packing.typeOf(key)] as Uint8Array)[n] !== 1) continue
      next.set(key, 1)
      if (!this.widen(key)) return 'out-of-range'
    }
    this.cells = next
    this.steps++
    return next.size > this.cellCap ? 'cell-cap' : undefined
  }

  /** Widens the box to a new cell; false when the cell is so near the window's edge that a step could leave it. */
  private widen(key: number): boolean {
    const { i, j } = this.packing.cell(key)
    const b = this.box
    if (i < b.i0) b.i0 = i
    if (i > b.i1) b.i1 = i
    if (j < b.j0) b.j0 = j
    if (j > b.j1) b.j1 = j
    const limit = this.packing.window - this.rule.reach
    return Math.abs(i - this.packing.originI) < limit && Math.abs(j - this.packing.originJ) < limit
  }
}

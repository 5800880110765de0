/**
 * A Penrose kite-and-dart (P2) reference patch, built by deflation, in the form "Reference patches" defines
 * (rows tile, shape, corners, edge, touch, open), with its pin.
 *
 * Construction. Every point is exact: an element of Z[ζ] with ζ = e^(2πi/5), held as four integers in the
 * basis 1, ζ, ζ², ζ³ (a unique spelling, so equal points have equal keys). The golden ratio φ = -(ζ² + ζ³)
 * is a unit of that ring, so dividing by φ never leaves it. The plane is the complex plane drawn y down:
 * x = Re, y = Im, and multiplying by e^(iθ) turns clockwise on screen.
 *
 * Tiles are split along their axes into half-tiles (Robinson triangles), each with a head, a wing and a tail:
 *   half-kite (H, W, T): |HW| = |HT| = φ·s, |WT| = s     (kite: head 72°, wings 72°, tail 144°)
 *   half-dart (H, W, T): |HW| = φ·s, |HT| = |WT| = s      (dart: head 72°, wings 36°, tail 216°)
 * One deflation divides every length by φ:
 *   half-kite (H, W, T) -> half-dart (H, D, E), half-kite (W, T, D), half-kite (W, E, D)
 *                          with D = H + (T - H)/φ on the axis and E = W + (H - W)/φ on the long edge
 *   half-dart (H, W, T) -> half-kite (H, F, T), half-dart (W, T, F)   with F = H + (W - H)/φ
 * so half-kites and half-darts grow as (K, D) -> (2K + D, K + D): Fibonacci numbers.
 *
 * The seed is the sun: five kites with their heads at the origin, the first one's axis along +x. Level n is n
 * deflations of a sun scaled by φ^n, so every level's tiles have short edges 1 and long edges φ. Two
 * half-tiles of one kind with the same head and tail make a whole tile; a half whose mate would lie outside
 * the seed is left out, so the patch is the whole tiles inside the deflated sun.
 *
 * Rows. Tiles are numbered by the distance of their centre (the mean of their corners) from the origin,
 * then clockwise by the angle of the centre from +x. Corners are head, wing, tail, wing, clockwise on the
 * y-down screen (kites and darts are mirror-symmetric, so no tile is mirrored). shape is 0 for the kite and
 * 1 for the dart. Neighbours are in the spec's cyclic order; a tile is open when one of its corners lies on
 * the patch's boundary (an end of an edge only one tile of the patch has), so its touch list may be
 * incomplete there. Coordinates are the exact values rounded to the nearest float64.
 */
import { PipeError } from '../../../core/errors.js'
import { SHA256_NAME } from '../../../codec/hash.js'
import {
  GEOMETRY_CODES,
  GEOMETRY_LIMITS,
  Interval,
  QSurd,
  patchHashes,
  roundToF64,
  type GeometryHashes,
  type ReferencePatchRow,
} from './geometry.js'
import type { TilingsRow } from './tilings.js'

export const PENROSE_KD_FAMILY = 'penrose-kd'
/** The level the reference patch (and so the pin) is computed on. */
export const PENROSE_REFERENCE_LEVEL = 7
/** The deepest level penrosePatch builds (about 35,000 tiles). */
export const PENROSE_MAX_LEVEL = 9

export const KITE = 0
export const DART = 1

// ---------------------------------------------------------------------------------------------------------
// Z[ζ], ζ = e^(2πi/5)
// ---------------------------------------------------------------------------------------------------------

/** An element c0 + c1ζ + c2ζ² + c3ζ³ of Z[ζ]. */
export class Z5 {
  readonly c: readonly [number, number, number, number]

  constructor(c0: number, c1: number, c2: number, c3: number) {
    for (const v of [c0, c1, c2, c3]) if (!Number.isSafeInteger(v)) throw new RangeError('Z5 coefficient is not a safe integer')
    this.c = [c0, c1, c2, c3]
  }

  static readonly ZERO = new Z5(0, 0, 0, 0)
  static readonly ONE = new Z5(1, 0, 0, 0)

  add(o: Z5): Z5 {
    const [a, b, c, d] = this.c
    const [e, f, g, h] = o.c
    return new Z5(a + e, b + f, c + g, d + h)
  }

  sub(o: Z5): Z5 {
    const [a, b, c, d] = this.c
    const [e, f, g, h] = o.c
    return new Z5(a - e, b - f, c - g, d - h)
  }

  neg(): Z5 {
    const [a, b, c, d] = this.c
    return new Z5(-a, -b, -c, -d)
  }

  mul(o: Z5): Z5 {
    const p = [0, 0, 0, 0, 0, 0, 0]
    for (let i = 0; i < 4; i++) for (let j = 0; j < 4; j++) p[i + j]! += this.c[i]! * o.c[j]!
    // ζ^5 = 1, ζ^6 = ζ, ζ^4 = -(1 + ζ + ζ² + ζ³)
    const c4 = p[4]!
    return new Z5(p[0]! + p[5]! - c4, p[1]! + p[6]! - c4, p[2]! - c4, p[3]! - c4)
  }

  /** The complex conjugate: ζ^k -> ζ^(5-k). */
  conj(): Z5 {
    const [a, b, c, d] = this.c
    return new Z5(a - b, -b, d - b, c - b)
  }

  equals(o: Z5): boolean {
    return this.c[0] === o.c[0] && this.c[1] === o.c[1] && this.c[2] === o.c[2] && this.c[3] === o.c[3]
  }

  /** A string naming the point (unique, since the basis spelling is). */
  key(): string {
    return this.c.join(',')
  }

  /** The real part, exactly: (4c0 - c1 - c2 - c3 + (c1 - c2 - c3)√5) / 4. */
  re(): QSurd {
    const [a, b, c, d] = this.c
    return QSurd.of(4 * a - b - c - d, b - c - d, 4, 5)
  }

  /** Im = sin 36° · (c1·φ + c2 - c3); this is the second factor, (c1 + 2c2 - 2c3 + c1√5) / 2. */
  imFactor(): QSurd {
    const [, b, c, d] = this.c
    return QSurd.of(b + 2 * c - 2 * d, b, 2, 5)
  }

  /** The sign of the imaginary part (y, downward on screen). */
  imSign(): -1 | 0 | 1 {
    return this.imFactor().sign()
  }

  /** x, the nearest float64. */
  x(): number {
    return this.re().toF64()
  }

  /** y, the nearest float64: sqrt(10 - 2√5) / 8 · (u + v√5). */
  y(): number {
    const [, b, c, d] = this.c
    const u = BigInt(b + 2 * c - 2 * d)
    const v = BigInt(b)
    if (u === 0n && v === 0n) return 0
    return roundToF64((prec) => {
      const s5 = Interval.sqrtInt(5n, prec)
      const sin = Interval.exact(10n, prec).sub(s5.scale(2n, 1n)).sqrt()
      const m = Interval.exact(u, prec).add(s5.scale(v, 1n))
      const p = sin.mul(m)
      return new Interval(p.lo, p.hi, prec + 3) // divided by 8
    })
  }
}

/** ζ^k for any integer k. */
function zetaPow(k: number): Z5 {
  switch (((k % 5) + 5) % 5) {
    case 0: return Z5.ONE
    case 1: return new Z5(0, 1, 0, 0)
    case 2: return new Z5(0, 0, 1, 0)
    case 3: return new Z5(0, 0, 0, 1)
    default: return new Z5(-1, -1, -1, -1)
  }
}

/** e^(iπm/5), the unit vector turned 36°·m clockwise on screen from +x: (-1)^m ζ^(3m). */
export function unit10(m: number): Z5 {
  const z = zetaPow(3 * m)
  return ((m % 2) + 2) % 2 === 1 ? z.neg() : z
}

/** φ = -(ζ² + ζ³) and 1/φ = φ - 1. */
export const PHI = new Z5(0, 0, -1, -1)
export const PHI_INV = new Z5(-1, 0, -1, -1)

export function phiPow(n: number): Z5 {
  let r = Z5.ONE
  const f = n >= 0 ? PHI : PHI_INV
  for (let i = 0; i < Math.abs(n); i++) r = r.mul(f)
  return r
}

/** The sign of the cross product a × b (positive: b is clockwise from a on the y-down screen). */
export function crossSign(a: Z5, b: Z5): -1 | 0 | 1 {
  return a.conj().mul(b).imSign()
}

/** The sign of the dot product a · b. */
export function dotSign(a: Z5, b: Z5): -1 | 0 | 1 {
  return a.conj().mul(b).re().sign()
}

/** |a|², exactly. */
export function norm2(a: Z5): QSurd {
  return a.conj().mul(a).re()
}

// ---------------------------------------------------------------------------------------------------------
// Half-tiles and deflation
// ---------------------------------------------------------------------------------------------------------

export type HalfKind = 'kite' | 'dart'

export interface HalfTile {
  kind: HalfKind
  head: Z5
  wing: Z5
  tail: Z5
}

/** The sun, scaled by φ^level so that `level` deflations give short edges of 1. */
export function sunSeed(level: number): HalfTile[] {
  const s = phiPow(level + 1)
  const out: HalfTile[] = []
  for (let k = 0; k < 5; k++) {
    const tail = s.mul(unit10(2 * k))
    out.push({ kind: 'kite', head: Z5.ZERO, wing: s.mul(unit10(2 * k + 1)), tail })
    out.push({ kind: 'kite', head: Z5.ZERO, wing: s.mul(unit10(2 * k - 1)), tail })
  }
  return out
}

/** One deflation: every length divided by φ. */
export function deflate(halves: readonly HalfTile[]): HalfTile[] {
  const out: HalfTile[] = []
  for (const { kind, head: H, wing: W, tail: T } of halves) {
    if (kind === 'kite') {
      const D = H.add(T.sub(H).mul(PHI_INV))
      const E = W.add(H.sub(W).mul(PHI_INV))
      out.push({ kind: 'dart', head: H, wing: D, tail: E })
      out.push({ kind: 'kite', head: W, wing: T, tail: D })
      out.push({ kind: 'kite', head: W, wing: E, tail: D })
    } else {
      const F = H.add(W.sub(H).mul(PHI_INV))
      out.push({ kind: 'kite', head: H, wing: F, tail: T })
      out.push({ kind: 'dart', head: W, wing: T, tail: F })
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------
// The patch
// ---------------------------------------------------------------------------------------------------------

/** A whole tile, exactly: corners head, wing, tail, wing, clockwise on screen. */
export interface ExactTile {
  shape: typeof KITE | typeof DART
  corners: [Z5, Z5, Z5, Z5]
}

export interface PenrosePatch {
  level: number
  /** half-tiles after `level` deflations of the sun */
  halfCounts: { kite: number; dart: number }
  /** halves left out because their mates lie outside the seed */
  unpaired: { kite: number; dart: number }
  /** whole tiles in row order */
  tiles: ExactTile[]
  /** the reference patch's rows (schema jetcarp-reference-patch 1) */
  rows: ReferencePatchRow[]
}

function signedAreaSign(c: readonly Z5[]): -1 | 0 | 1 {
  let s = Z5.ZERO
  for (let i = 0; i < c.length; i++) s = s.add(c[i]!.conj().mul(c[(i + 1) % c.length]!))
  return s.imSign()
}

/** Orders vectors clockwise from +x, angles in [0, 2π). */
function angleFromX(a: Z5, b: Z5): number {
  const half = (v: Z5): number => {
    const s = v.imSign()
    return s > 0 || (s === 0 && v.re().sign() > 0) ? 0 : 1
  }
  const ha = half(a)
  const hb = half(b)
  if (ha !== hb) return ha - hb
  return -crossSign(a, b)
}

/** Orders vectors clockwise about the reference direction r, angles in (-π, π]. */
function angleAbout(r: Z5, a: Z5, b: Z5): number {
  const half = (v: Z5): number => (crossSign(r, v) < 0 ? 0 : 1)
  const ha = half(a)
  const hb = half(b)
  if (ha !== hb) return ha - hb
  return -crossSign(a, b)
}

const sum4 = (c: readonly Z5[]): Z5 => c.reduce((s, p) => s.add(p), Z5.ZERO)

function fail(message: string): never {
  throw new PipeError(GEOMETRY_CODES.malformed, message)
}

/** Builds the kite-and-dart patch of the given level (0 is the sun itself). */
export function penrosePatch(level: number): PenrosePatch {
  if (!Number.isInteger(level) || level < 0 || level > PENROSE_MAX_LEVEL) {
    throw new PipeError(GEOMETRY_CODES.limit, `Penrose level ${level} is not an integer from 0 to ${PENROSE_MAX_LEVEL}`)
  }
  let halves = sunSeed(level)
  for (let i = 0; i < level; i++) halves = deflate(halves)
  const halfCounts = { kite: 0, dart: 0 }
  for (const h of halves) halfCounts[h.kind]++

  // Pair halves: one kind, one head, one tail.
  const groups = new Map<string, HalfTile[]>()
  for (const h of halves) {
    const k = `${h.kind}|${h.head.key()}|${h.tail.key()}`
    const g = groups.get(k)
    if (g) g.push(h)
    else groups.set(k, [h])
  }
  const unpaired = { kite: 0, dart: 0 }
  const whole: { tile: ExactTile; sum: Z5 }[] = []
  for (const g of groups.values()) {
    const a = g[0]!
    if (g.length === 1) {
      unpaired[a.kind]++
      continue
    }
    if (g.length !== 2 || g[1]!.wing.equals(a.wing)) fail('half-tiles overlap: the deflation is inconsistent')
    const b = g[1]!
    let corners: [Z5, Z5, Z5, Z5] = [a.head, a.wing, a.tail, b.wing]
    if (signedAreaSign(corners) < 0) corners = [a.head, b.wing, a.tail, a.wing]
    whole.push({ tile: { shape: a.kind === 'kite' ? KITE : DART, corners }, sum: sum4(corners) })
  }
  if (whole.length > GEOMETRY_LIMITS.maxPatchTiles) fail('patch too large')

  // Row order: distance of the centre from the origin, then clockwise angle from +x.
  const n2 = new Map<Z5, QSurd>()
  for (const w of whole) n2.set(w.sum, norm2(w.sum))
  whole.sort((p, q) => {
    const c = n2.get(p.sum)!.cmp(n2.get(q.sum)!)
    if (c !== 0) return c
    const a = angleFromX(p.sum, q.sum)
    if (a === 0) fail('two tiles with one centre')
    return a
  })
  const tiles = whole.map((w) => w.tile)
  const sums = whole.map((w) => w.sum)

  // Vertices, and the tiles at each.
  const atVertex = new Map<string, number[]>()
  tiles.forEach((t, i) => {
    for (const c of t.corners) {
      const k = c.key()
      const l = atVertex.get(k)
      if (l) l.push(i)
      else atVertex.set(k, [i])
    }
  })
  // Boundary: edges only one tile has; their ends are boundary vertices.
  const edgeCount = new Map<string, number>()
  const edgeKey = (a: Z5, b: Z5): string => {
    const ka = a.key()
    const kb = b.key()
    return ka < kb ? `${ka}|${kb}` : `${kb}|${ka}`
  }
  for (const t of tiles) for (let i = 0; i < 4; i++) {
    const k = edgeKey(t.corners[i]!, t.corners[(i + 1) % 4]!)
    edgeCount.set(k, (edgeCount.get(k) ?? 0) + 1)
  }
  const boundary = new Set<string>()
  for (const [k, n] of edgeCount) {
    if (n > 2) fail('an edge shared by more than two tiles')
    if (n === 1) for (const v of k.split('|')) boundary.add(v)
  }

  // Neighbours in the spec's cyclic order.
  const rows: ReferencePatchRow[] = []
  const f64 = new Map<string, number[]>()
  const point = (z: Z5): number[] => {
    const k = z.key()
    let p = f64.get(k)
    if (!p) {
      p = [z.x(), z.y()]
      f64.set(k, p)
    }
    return p
  }
  tiles.forEach((t, ti) => {
    const mine = t.corners.map((c) => c.key())
    const contacts = new Map<number, Set<number>>() // other tile -> my corners it touches
    mine.forEach((k, ci) => {
      for (const u of atVertex.get(k)!) {
        if (u === ti) continue
        let s = contacts.get(u)
        if (!s) contacts.set(u, (s = new Set()))
        s.add(ci)
      }
    })
    const found: { tile: number; key: number; isEdge: boolean; corner: number }[] = []
    for (const [u, cs] of contacts) {
      const theirs = tiles[u]!.corners.map((c) => c.key())
      const sharedEdges: number[] = []
      for (let i = 0; i < 4; i++) {
        if (!cs.has(i) || !cs.has((i + 1) % 4)) continue
        const a = theirs.indexOf(mine[i]!)
        const b = theirs.indexOf(mine[(i + 1) % 4]!)
        if ((a - b + 4) % 4 === 1) sharedEdges.push(i) // their edge b -> a runs the other way round
      }
      if (sharedEdges.length > 1) fail(`tiles ${ti} and ${u} share two edges`)
      if (sharedEdges.length === 1) {
        found.push({ tile: u, key: 2 * sharedEdges[0]! + 1, isEdge: true, corner: -1 })
      } else {
        if (cs.size !== 1) fail(`tiles ${ti} and ${u} meet at separate points`)
        const c = [...cs][0]!
        found.push({ tile: u, key: 2 * c, isEdge: false, corner: c })
      }
    }
    const me = sums[ti]!
    found.sort((p, q) => {
      if (p.key !== q.key) return p.key - q.key
      const r = t.corners[p.corner]!.mul(new Z5(4, 0, 0, 0)).sub(me)
      const a = angleAbout(r, sums[p.tile]!.sub(me), sums[q.tile]!.sub(me))
      if (a === 0) fail(`tiles ${p.tile} and ${q.tile} lie in one direction from tile ${ti}`)
      return a
    })
    rows.push({
      tile: ti,
      shape: t.shape,
      corners: t.corners.map(point),
      edge: found.filter((f) => f.isEdge).map((f) => f.tile),
      touch: found.map((f) => f.tile),
      open: mine.some((k) => boundary.has(k)),
    })
  })
  return { level, halfCounts, unpaired, tiles, rows }
}

let reference: { patch: PenrosePatch; hashes: GeometryHashes } | undefined

/** The reference patch (level PENROSE_REFERENCE_LEVEL) and its hashes, built once and shared: do not mutate. */
export function penroseReference(): { patch: PenrosePatch; hashes: GeometryHashes } {
  if (!reference) {
    const patch = penrosePatch(PENROSE_REFERENCE_LEVEL)
    reference = { patch, hashes: patchHashes(patch.rows) }
  }
  return reference
}

/**
 * The tilings-table row of the kite-and-dart family. `referenceObject` is the sha256: hash of the reference
 * patch's Parquet object, which whoever writes that object knows (null until it is written).
 */
export function penroseTilingsRow(referenceObject: string | null): TilingsRow {
  if (referenceObject !== null && !SHA256_NAME.test(referenceObject)) {
    throw new PipeError(GEOMETRY_CODES.malformed, 'reference is not sha256: and 64 lower-case hex digits')
  }
  const { patch, hashes } = penroseReference()
  return {
    pin_key: PENROSE_KD_FAMILY,
    pin: hashes.pin,
    polygon_hash: hashes.polygon_hash,
    neighbour_hash: hashes.neighbour_hash,
    name: 'Penrose kite and dart',
    kind: 'aperiodic',
    family: PENROSE_KD_FAMILY,
    params: null,
    edges: null,
    tiling_group: PENROSE_KD_FAMILY,
    a1: null,
    a2: null,
    tile_types: null,
    edge: null,
    touch: null,
    reference_level: patch.level,
    reference: referenceObject,
    reference_tiles: patch.rows.length,
  }
}

/**
 * A catalogue of lattice tilings and their tilings-table rows (pack format 1.0, "Tables" > "tilings").
 *
 * Each tiling is defined exactly: its lattice vectors and its tile types' corners are exact numbers
 * (rationals, or (p + q√3)/r and (p + q√2)/r), turned into float64 only for the row, by correct rounding.
 * Its edge and touch lists are written out by hand in the spec's cyclic order (clockwise on the y-down
 * screen from corner 0: by where each neighbour meets the tile's boundary, ties at a point by the angle of
 * their centres about the tile's); the tests derive them again from the geometry alone.
 *
 * Conventions (the spec's): y down, x right; a cell (i, j, k) is tile type k moved by i·a1 + j·a2; corners
 * clockwise on screen; a tile's edge is 1 long.
 */
import {
  GEOMETRY_LIMITS,
  QSurd,
  checkPatchTileCount,
  compareHashes,
  latticeHashes,
  lintLatticeNeighbours,
  lintReferencePatch,
  parseLatticeGeometry,
  parseReferencePatch,
  patchHashes,
  type GeometryHashes,
  type GeometryLimits,
  type LatticeGeometry,
  type NeighbourOffset,
  type TileType,
} from './geometry.js'

/** An exact point. */
export interface ExactPoint {
  x: QSurd
  y: QSurd
}

/** A lattice tiling, defined exactly. */
export interface LatticeTilingDef {
  /** the tiling family id (also its tiling_group and, with no params or edges, its pin key) */
  family: string
  /** display name */
  name: string
  /** vertex configuration, for people */
  vertexConfig: string
  tiling_group: string
  a1: ExactPoint
  a2: ExactPoint
  tileTypes: { shape: number; corners: ExactPoint[] }[]
  edge: NeighbourOffset[][]
  touch: NeighbourOffset[][]
}

/** One row of the tilings table (schema jetcarp-tilings 1), columns in the spec's order. */
export interface TilingsRow {
  pin_key: string
  pin: string
  polygon_hash: string
  neighbour_hash: string
  name: string
  kind: 'lattice' | 'aperiodic'
  family: string
  params: string | null
  edges: string | null
  tiling_group: string
  a1: number[] | null
  a2: number[] | null
  tile_types: TileType[] | null
  edge: NeighbourOffset[][] | null
  touch: NeighbourOffset[][] | null
  reference_level: number | null
  reference: string | null
  reference_tiles: number | null
}

export const TILINGS_SCHEMA = 'jetcarp-tilings 1'

// ---------------------------------------------------------------------------------------------------------
// Exact coordinates
// ---------------------------------------------------------------------------------------------------------

/** (p + q√3) / r */
const s3 = (p: number, q: number, r = 1): QSurd => QSurd.of(p, q, r, 3)
/** (p + q√2) / r */
const s2 = (p: number, q: number, r = 1): QSurd => QSurd.of(p, q, r, 2)
/** p / r */
const rat = (p: number, r = 1): QSurd => QSurd.rational(p, r)
const pt = (x: QSurd, y: QSurd): ExactPoint => ({ x, y })
const off = (di: number, dj: number, k: number): NeighbourOffset => ({ di, dj, k })

// ---------------------------------------------------------------------------------------------------------
// The catalogue
// ---------------------------------------------------------------------------------------------------------

/**
 * Square grid (4.4.4.4): exactly the row the spec prints, a2 = [-0.0, 1] included, so its hashes and pin
 * are the spec's test vector.
 */
const SQUARE: LatticeTilingDef = {
  family: 'square',
  name: 'Square',
  vertexConfig: '4.4.4.4',
  tiling_group: 'square',
  a1: pt(rat(1), rat(0)),
  a2: pt(QSurd.NEG_ZERO, rat(1)),
  tileTypes: [{ shape: 0, corners: [pt(rat(0), rat(0)), pt(rat(1), rat(0)), pt(rat(1), rat(1)), pt(rat(0), rat(1))] }],
  edge: [[off(0, -1, 0), off(1, 0, 0), off(0, 1, 0), off(-1, 0, 0)]],
  touch: [[off(-1, -1, 0), off(0, -1, 0), off(1, -1, 0), off(1, 0, 0), off(1, 1, 0), off(0, 1, 0), off(-1, 1, 0), off(-1, 0, 0)]],
}

/**
 * Hexagonal grid (6.6.6): pointy-top hexagons of edge 1 centred on the lattice points, a1 = (√3, 0) to the
 * right, a2 = (√3/2, 3/2) down and to the right. Corner 0 is the top corner. Edge and touch neighbours are
 * the same six.
 */
const HEX: LatticeTilingDef = {
  family: 'hex',
  name: 'Hexagonal',
  vertexConfig: '6.6.6',
  tiling_group: 'hex',
  a1: pt(s3(0, 1), rat(0)),
  a2: pt(s3(0, 1, 2), rat(3, 2)),
  tileTypes: [
    {
      shape: 0,
      corners: [
        pt(rat(0), rat(-1)),
        pt(s3(0, 1, 2), rat(-1, 2)),
        pt(s3(0, 1, 2), rat(1, 2)),
        pt(rat(0), rat(1)),
        pt(s3(0, -1, 2), rat(1, 2)),
        pt(s3(0, -1, 2), rat(-1, 2)),
      ],
    },
  ],
  edge: [[off(1, -1, 0), off(1, 0, 0), off(0, 1, 0), off(-1, 1, 0), off(-1, 0, 0), off(0, -1, 0)]],
  touch: [[off(1, -1, 0), off(1, 0, 0), off(0, 1, 0), off(-1, 1, 0), off(-1, 0, 0), off(0, -1, 0)]],
}

/**
 * Triangular grid (3.3.3.3.3.3): a1 = (1, 0), a2 = (1/2, √3/2). Type 0 points down (corners (0,0), (1,0),
 * (1/2,√3/2)); type 1 points up (corners (1,0), (3/2,√3/2), (1/2,√3/2)), the same prototile turned. Each has
 * 3 edge and 12 touch neighbours (three more at each corner, ordered by the angle of their centres).
 */
const TRI: LatticeTilingDef = {
  family: 'tri',
  name: 'Triangular',
  vertexConfig: '3.3.3.3.3.3',
  tiling_group: 'tri',
  a1: pt(rat(1), rat(0)),
  a2: pt(rat(1, 2), s3(0, 1, 2)),
  tileTypes: [
    { shape: 0, corners: [pt(rat(0), rat(0)), pt(rat(1), rat(0)), pt(rat(1, 2), s3(0, 1, 2))] },
    { shape: 0, corners: [pt(rat(1), rat(0)), pt(rat(3, 2), s3(0, 1, 2)), pt(rat(1, 2), s3(0, 1, 2))] },
  ],
  edge: [
    [off(0, -1, 1), off(0, 0, 1), off(-1, 0, 1)],
    [off(1, 0, 0), off(0, 1, 0), off(0, 0, 0)],
  ],
  touch: [
    [
      off(-1, 0, 0), off(-1, -1, 1), off(0, -1, 0), off(0, -1, 1),
      off(1, -1, 0), off(1, -1, 1), off(1, 0, 0), off(0, 0, 1),
      off(0, 1, 0), off(-1, 1, 1), off(-1, 1, 0), off(-1, 0, 1),
    ],
    [
      off(0, -1, 1), off(1, -1, 0), off(1, -1, 1), off(1, 0, 0),
      off(1, 0, 1), off(1, 1, 0), off(0, 1, 1), off(0, 1, 0),
      off(-1, 1, 1), off(-1, 1, 0), off(-1, 0, 1), off(0, 0, 0),
    ],
  ],
}

/**
 * Trihexagonal tiling, kagome (3.6.3.6): a1 = (2, 0), a2 = (1, √3). Type 0 a flat-top hexagon centred on
 * the lattice point (corner 0 its top-left corner), type 1 the triangle pointing up to its lower right,
 * type 2 the triangle pointing down below it; both triangles are prototile 1. A hexagon touches six more
 * hexagons at its corners, a triangle three more triangles.
 */
const TRIHEX: LatticeTilingDef = {
  family: 'trihex',
  name: 'Trihexagonal (3.6.3.6)',
  vertexConfig: '3.6.3.6',
  tiling_group: 'trihex',
  a1: pt(rat(2), rat(0)),
  a2: pt(rat(1), s3(0, 1)),
  tileTypes: [
    {
      shape: 0,
      corners: [
        pt(rat(-1, 2), s3(0, -1, 2)),
        pt(rat(1, 2), s3(0, -1, 2)),
        pt(rat(1), rat(0)),
        pt(rat(1, 2), s3(0, 1, 2)),
        pt(rat(-1, 2), s3(0, 1, 2)),
        pt(rat(-1), rat(0)),
      ],
    },
    { shape: 1, corners: [pt(rat(1), rat(0)), pt(rat(3, 2), s3(0, 1, 2)), pt(rat(1, 2), s3(0, 1, 2))] },
    { shape: 1, corners: [pt(rat(-1, 2), s3(0, 1, 2)), pt(rat(1, 2), s3(0, 1, 2)), pt(rat(0), s3(0, 1))] },
  ],
  edge: [
    [off(0, -1, 1), off(1, -1, 2), off(0, 0, 1), off(0, 0, 2), off(-1, 0, 1), off(0, -1, 2)],
    [off(1, 0, 0), off(0, 1, 0), off(0, 0, 0)],
    [off(0, 0, 0), off(0, 1, 0), off(-1, 1, 0)],
  ],
  touch: [
    [
      off(0, -1, 0), off(0, -1, 1), off(1, -1, 0), off(1, -1, 2), off(1, 0, 0), off(0, 0, 1),
      off(0, 1, 0), off(0, 0, 2), off(-1, 1, 0), off(-1, 0, 1), off(-1, 0, 0), off(0, -1, 2),
    ],
    [off(1, -1, 2), off(1, 0, 0), off(1, 0, 2), off(0, 1, 0), off(0, 0, 2), off(0, 0, 0)],
    [off(-1, 0, 1), off(0, 0, 0), off(0, 0, 1), off(0, 1, 0), off(-1, 1, 1), off(-1, 1, 0)],
  ],
}

/**
 * Truncated square tiling (4.8.8): a1 = (1+√2, 0), a2 = (0, 1+√2). Type 0 a regular octagon of edge 1
 * centred on the lattice point (corner 0 the left end of its top edge), type 1 the square turned 45° below
 * and to the right of it (corner 0 its top). Three tiles meet at every corner, so touch equals edge.
 */
const H = s2(1, 1, 2) // (1 + √2) / 2, half the octagon's width
const OCT: LatticeTilingDef = {
  family: 'oct',
  name: 'Truncated square (4.8.8)',
  vertexConfig: '4.8.8',
  tiling_group: 'oct',
  a1: pt(s2(1, 1), rat(0)),
  a2: pt(rat(0), s2(1, 1)),
  tileTypes: [
    {
      shape: 0,
      corners: [
        pt(rat(-1, 2), H.neg()),
        pt(rat(1, 2), H.neg()),
        pt(H, rat(-1, 2)),
        pt(H, rat(1, 2)),
        pt(rat(1, 2), H),
        pt(rat(-1, 2), H),
        pt(H.neg(), rat(1, 2)),
        pt(H.neg(), rat(-1, 2)),
      ],
    },
    {
      shape: 1,
      corners: [pt(H, rat(1, 2)), pt(s2(1, 2, 2), H), pt(H, s2(1, 2, 2)), pt(rat(1, 2), H)],
    },
  ],
  edge: [
    [off(0, -1, 0), off(0, -1, 1), off(1, 0, 0), off(0, 0, 1), off(0, 1, 0), off(-1, 0, 1), off(-1, 0, 0), off(-1, -1, 1)],
    [off(1, 0, 0), off(1, 1, 0), off(0, 1, 0), off(0, 0, 0)],
  ],
  touch: [
    [off(0, -1, 0), off(0, -1, 1), off(1, 0, 0), off(0, 0, 1), off(0, 1, 0), off(-1, 0, 1), off(-1, 0, 0), off(-1, -1, 1)],
    [off(1, 0, 0), off(1, 1, 0), off(0, 1, 0), off(0, 0, 0)],
  ],
}

/** Every lattice tiling of the catalogue. */
export const LATTICE_TILINGS: readonly LatticeTilingDef[] = Object.freeze([SQUARE, HEX, TRI, TRIHEX, OCT])

export function findLatticeTiling(family: string): LatticeTilingDef | undefined {
  return LATTICE_TILINGS.find((t) => t.family === family)
}

// ---------------------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------------------

const pointF64 = (p: ExactPoint): number[] => [p.x.toF64(), p.y.toF64()]

/** The geometry columns of a lattice tiling, its exact numbers rounded to the nearest float64. */
export function latticeGeometry(def: LatticeTilingDef): LatticeGeometry {
  return {
    a1: pointF64(def.a1),
    a2: pointF64(def.a2),
    tile_types: def.tileTypes.map((t) => ({ shape: t.shape, corners: t.corners.map(pointF64) })),
    edge: def.edge.map((l) => l.map((o) => ({ ...o }))),
    touch: def.touch.map((l) => l.map((o) => ({ ...o }))),
  }
}

/**
 * The pin key of a tiling with no params and no reshaped edges: its family id. (The full spelling of a
 * tiling= line is Library format's; a catalogue tiling here has neither params nor edges.)
 */
export function pinKeyOf(family: string, params: string | null, edges: string | null): string {
  if (params !== null || edges !== null) throw new RangeError('pin keys with params or edges are spelled by Library format, not by this catalogue')
  return family
}

/** The tilings-table row of a lattice tiling of the catalogue. */
export function latticeTilingRow(def: LatticeTilingDef): TilingsRow {
  const g = latticeGeometry(def)
  const h = latticeHashes(g)
  return {
    pin_key: pinKeyOf(def.family, null, null),
    pin: h.pin,
    polygon_hash: h.polygon_hash,
    neighbour_hash: h.neighbour_hash,
    name: def.name,
    kind: 'lattice',
    family: def.family,
    params: null,
    edges: null,
    tiling_group: def.tiling_group,
    a1: [...g.a1],
    a2: [...g.a2],
    tile_types: g.tile_types.map((t) => ({ shape: t.shape, corners: t.corners.map((c) => [...c]) })),
    edge: g.edge.map((l) => [...l]),
    touch: g.touch.map((l) => [...l]),
    reference_level: null,
    reference: null,
    reference_tiles: null,
  }
}

const utf8Compare = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))

/** The catalogue's rows, sorted by pin_key (by UTF-8 bytes), as the tilings table is. */
export function latticeTilingRows(): TilingsRow[] {
  return LATTICE_TILINGS.map(latticeTilingRow).sort((a, b) => utf8Compare(a.pin_key, b.pin_key))
}

// ---------------------------------------------------------------------------------------------------------
// Checking a row read from a pack (conformance level 1: the pin follows from the geometry)
// ---------------------------------------------------------------------------------------------------------

export interface TilingRowCheck {
  /** the hashes the row's geometry gives */
  computed: GeometryHashes
  /** how the stated hashes differ from the computed ones (empty when the pin holds) */
  mismatches: string[]
  /** neighbour lists that break the spec's rules (symmetric, each once, not itself, edge within touch) */
  lint: string[]
}

/**
 * Checks a lattice tilings row as read from a pack: parses its geometry columns within the limits, computes
 * its hashes and compares them with the row's pin, polygon_hash and neighbour_hash. Throws PipeError
 * pack.geometry-malformed / pack.geometry-limit on malformed or oversized geometry.
 */
export function checkLatticeTilingRow(row: unknown, limits: GeometryLimits = GEOMETRY_LIMITS): TilingRowCheck {
  const g = parseLatticeGeometry(row, limits)
  const computed = latticeHashes(g)
  const r = row as Record<string, unknown>
  return { computed, mismatches: compareHashes(r, computed), lint: lintLatticeNeighbours(g) }
}

/**
 * Checks an aperiodic tilings row against its reference patch's rows: reference_tiles is checked against
 * the limits first (before the patch is read), then the patch's rows, then the hashes.
 */
export function checkAperiodicTilingRow(row: unknown, patchRows: unknown, limits: GeometryLimits = GEOMETRY_LIMITS): TilingRowCheck {
  const r = row as Record<string, unknown>
  const n = checkPatchTileCount(r?.reference_tiles, limits)
  const rows = parseReferencePatch(patchRows, n, limits)
  const computed = patchHashes(rows)
  return { computed, mismatches: compareHashes(r, computed), lint: lintReferencePatch(rows) }
}

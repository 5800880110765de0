/**
 * Geometry pins (pack format 1.0, "Geometry pins"): the polygon hash, the neighbour hash and the 32-hex pin
 * of a lattice tiling (from its tilings row's columns) or of an aperiodic family (from its reference patch's
 * rows), plus the exact numbers the catalogue and the reference patches are built from.
 *
 * The bytes hashed are exactly the spec's layout:
 *
 *   polygon hash   = SHA-256("jetcarp-geometry-v1 polygons\n" + body)
 *     lattice:   "lattice", a1.x, a1.y, a2.x, a2.y (f64), types (u32),
 *                then per tile type: shape (u32), corners (u32), corners × (x, y) (f64)
 *     aperiodic: "patch", tiles (u32), then per tile: shape (u32), corners (u32), corners × (x, y) (f64)
 *   neighbour hash = SHA-256("jetcarp-geometry-v1 neighbours\n" + body)
 *     lattice:   for edge, then touch: per tile type: slots (u32), slots × (di i32, dj i32, k u32)
 *     aperiodic: for edge, then touch: per tile: degree (u32), degree × neighbour tile (u32);
 *                then per tile: open (one byte)
 *   pin            = first 32 hex of SHA-256("jetcarp-geometry-v1\n" + polygon hex + "\n" + neighbour hex)
 *
 * Integers are little-endian; floats are the little-endian u64 of their IEEE 754 bits (so -0.0 and 0.0
 * differ). Nothing here does arithmetic on a float that is hashed: hashed floats are either read from a
 * table as they are, or made from an exact number by correct rounding (QSurd.toF64, roundToF64).
 */
import { createHash, type Hash } from 'node:crypto'
import { PipeError } from '../../../core/errors.js'

export const GEOMETRY_SCHEME = 'jetcarp-geometry-v1'
const POLYGONS_PREFIX = 'jetcarp-geometry-v1 polygons\n'
const NEIGHBOURS_PREFIX = 'jetcarp-geometry-v1 neighbours\n'

/** Error codes raised here. */
export const GEOMETRY_CODES = {
  malformed: 'pack.geometry-malformed',
  limit: 'pack.geometry-limit',
  pinMismatch: 'pack.pin-mismatch',
} as const

// ---------------------------------------------------------------------------------------------------------
// Types: the geometry columns of a tilings row, and the rows of a reference patch
// ---------------------------------------------------------------------------------------------------------

/** One slot of a tile type's edge or touch list: the neighbour is cell (i + di, j + dj, k). */
export interface NeighbourOffset {
  di: number
  dj: number
  k: number
}

/** One tile type of a lattice tiling: its prototile index and its corners placed in the unit cell. */
export interface TileType {
  shape: number
  corners: number[][]
}

/** The columns of a lattice tilings row that its pin covers, in the pin's order. */
export interface LatticeGeometry {
  a1: number[]
  a2: number[]
  tile_types: TileType[]
  edge: NeighbourOffset[][]
  touch: NeighbourOffset[][]
}

/** One row of a reference patch (schema jetcarp-reference-patch 1). */
export interface ReferencePatchRow {
  tile: number
  shape: number
  corners: number[][]
  edge: number[]
  touch: number[]
  open: boolean
}

export interface GeometryHashes {
  polygon_hash: string
  neighbour_hash: string
  pin: string
}

// ---------------------------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------------------------

/**
 * Structural limits applied to geometry read from a pack before anything is allocated or iterated. The
 * spec's own limits (string cells 1 MiB, objects 4 GiB, decoded Parquet bounded by the part's size) bound
 * the bytes; these bound the shapes, so a hostile row cannot make a reader walk or hash without end.
 * They are far above every real tiling (the spec's reference patches have 4,000 to 4,401 tiles of at most
 * 14 corners; catalogue tilings have a few dozen tile types).
 */
export interface GeometryLimits {
  /** tile types of one lattice tiling */
  maxTileTypes: number
  /** corners of one tile or tile type */
  maxCorners: number
  /** slots in one tile type's edge or touch list, or one patch tile's degree */
  maxNeighbours: number
  /** tiles in one reference patch (the spec's limit on cells in a record's phase) */
  maxPatchTiles: number
  /** corners, and neighbour slots, summed over a whole patch or lattice row */
  maxTotalItems: number
}

export const GEOMETRY_LIMITS: Readonly<GeometryLimits> = Object.freeze({
  maxTileTypes: 4096,
  maxCorners: 1024,
  maxNeighbours: 4096,
  maxPatchTiles: 1_000_000,
  maxTotalItems: 64_000_000,
})

const U32_MAX = 0xffff_ffff
const I32_MIN = -0x8000_0000
const I32_MAX = 0x7fff_ffff

function malformed(message: string, field?: string): PipeError {
  return new PipeError(GEOMETRY_CODES.malformed, message, field === undefined ? {} : { location: { field } })
}

function overLimit(message: string, field?: string): PipeError {
  return new PipeError(GEOMETRY_CODES.limit, message, field === undefined ? {} : { location: { field } })
}

// ---------------------------------------------------------------------------------------------------------
// Reading values from a table row (untrusted): lists, integers, floats
// ---------------------------------------------------------------------------------------------------------

type ListLike = ArrayLike<unknown>

/** A list cell as a reader gives it: an array or a typed array. Its length is checked before any use. */
function asList(v: unknown, field: string, max: number): ListLike {
  let list: ListLike
  if (Array.isArray(v)) list = v
  else if (ArrayBuffer.isView(v) && !(v instanceof DataView)) list = v as unknown as ListLike
  else throw malformed(`${field} is not a list`, field)
  if (list.length > max) throw overLimit(`${field} has ${list.length} items, more than the limit ${max}`, field)
  return list
}

/** An integer cell: a number that is an integer, or a bigint (another integer width), in [min, max]. */
function asInt(v: unknown, field: string, min: number, max: number): number {
  let n: number
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw malformed(`${field} is not an integer`, field)
    n = v
  } else if (typeof v === 'bigint') {
    if (v < BigInt(min) || v > BigInt(max)) throw malformed(`${field} is out of range`, field)
    n = Number(v)
  } else throw malformed(`${field} is not an integer`, field)
  if (n < min || n > max) throw malformed(`${field} is out of range`, field)
  return Object.is(n, -0) ? 0 : n
}

/** A float cell: a finite number (kept as it is, -0.0 included). NaN and infinities are refused. */
function asFloat(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw malformed(`${field} is not a finite float64`, field)
  return v
}

function asPoint(v: unknown, field: string): number[] {
  const l = asList(v, field, Number.MAX_SAFE_INTEGER)
  if (l.length !== 2) throw malformed(`${field} does not have two coordinates`, field)
  return [asFloat(l[0], `${field}[0]`), asFloat(l[1], `${field}[1]`)]
}

function asRecord(v: unknown, field: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw malformed(`${field} is not a struct`, field)
  return v as Record<string, unknown>
}

function asCorners(v: unknown, field: string, limits: GeometryLimits): number[][] {
  const l = asList(v, field, limits.maxCorners)
  if (l.length < 3) throw malformed(`${field} has fewer than three corners`, field)
  const out: number[][] = []
  for (let i = 0; i < l.length; i++) out.push(asPoint(l[i], `${field}[${i}]`))
  return out
}

/**
 * Reads and checks the geometry columns of a lattice tilings row (a1, a2, tile_types, edge, touch) as a
 * Parquet reader gives them. Every list's length is checked against the limits before it is walked.
 * Throws PipeError pack.geometry-malformed or pack.geometry-limit.
 */
export function parseLatticeGeometry(row: unknown, limits: GeometryLimits = GEOMETRY_LIMITS): LatticeGeometry {
  const r = asRecord(row, 'row')
  const a1 = asPoint(r.a1, 'a1')
  const a2 = asPoint(r.a2, 'a2')
  const typesIn = asList(r.tile_types, 'tile_types', limits.maxTileTypes)
  if (typesIn.length === 0) throw malformed('tile_types is empty', 'tile_types')
  const types = typesIn.length
  let total = 0
  const budget = (n: number, field: string): void => {
    total += n
    if (total > limits.maxTotalItems) throw overLimit(`the row holds more than ${limits.maxTotalItems} corners and slots`, field)
  }
  const tile_types: TileType[] = []
  for (let t = 0; t < types; t++) {
    const f = `tile_types[${t}]`
    const tt = asRecord(typesIn[t], f)
    const shape = asInt(tt.shape, `${f}.shape`, 0, I32_MAX)
    const cornersList = asList(tt.corners, `${f}.corners`, limits.maxCorners)
    budget(cornersList.length, `${f}.corners`)
    tile_types.push({ shape, corners: asCorners(cornersList, `${f}.corners`, limits) })
  }
  const lists = (name: 'edge' | 'touch'): NeighbourOffset[][] => {
    const outer = asList(r[name], name, limits.maxTileTypes)
    if (outer.length !== types) throw malformed(`${name} has ${outer.length} lists for ${types} tile types`, name)
    const out: NeighbourOffset[][] = []
    for (let t = 0; t < types; t++) {
      const f = `${name}[${t}]`
      const inner = asList(outer[t], f, limits.maxNeighbours)
      budget(inner.length, f)
      const slots: NeighbourOffset[] = []
      for (let s = 0; s < inner.length; s++) {
        const g = `${f}[${s}]`
        const o = asRecord(inner[s], g)
        slots.push({
          di: asInt(o.di, `${g}.di`, I32_MIN, I32_MAX),
          dj: asInt(o.dj, `${g}.dj`, I32_MIN, I32_MAX),
          k: asInt(o.k, `${g}.k`, 0, types - 1),
        })
      }
      out.push(slots)
    }
    return out
  }
  return { a1, a2, tile_types, edge: lists('edge'), touch: lists('touch') }
}

/**
 * Checks a tilings row's reference_tiles before the reference patch is read, so a hostile count is refused
 * before anything is allocated for it.
 */
export function checkPatchTileCount(count: unknown, limits: GeometryLimits = GEOMETRY_LIMITS): number {
  const n = asInt(count, 'reference_tiles', 0, I32_MAX)
  if (n < 1) throw malformed('reference_tiles is not positive', 'reference_tiles')
  if (n > limits.maxPatchTiles) throw overLimit(`reference_tiles ${n} is more than the limit ${limits.maxPatchTiles}`, 'reference_tiles')
  return n
}

/**
 * Reads and checks a reference patch's rows (tile, shape, corners, edge, touch, open). Rows MUST be sorted by
 * tile, and tile is the row's index (0 first). Neighbour indexes must name tiles of the patch. When the
 * tilings row's reference_tiles is given, the row count must equal it. Lengths are checked before walking.
 */
export function parseReferencePatch(rows: unknown, expectedTiles?: number, limits: GeometryLimits = GEOMETRY_LIMITS): ReferencePatchRow[] {
  const list = asList(rows, 'rows', limits.maxPatchTiles)
  const n = list.length
  if (n === 0) throw malformed('the reference patch has no rows', 'rows')
  if (expectedTiles !== undefined && n !== expectedTiles) {
    throw malformed(`the reference patch has ${n} rows, its tilings row says ${expectedTiles}`, 'rows')
  }
  let total = 0
  const budget = (k: number, field: string): void => {
    total += k
    if (total > limits.maxTotalItems) throw overLimit(`the patch holds more than ${limits.maxTotalItems} corners and slots`, field)
  }
  const out: ReferencePatchRow[] = []
  for (let i = 0; i < n; i++) {
    const f = `rows[${i}]`
    const r = asRecord(list[i], f)
    const tile = asInt(r.tile, `${f}.tile`, 0, I32_MAX)
    if (tile !== i) throw malformed(`${f}.tile is ${tile}: rows must be sorted by tile, numbered from 0`, `${f}.tile`)
    const shape = asInt(r.shape, `${f}.shape`, 0, I32_MAX)
    const cornersList = asList(r.corners, `${f}.corners`, limits.maxCorners)
    budget(cornersList.length, `${f}.corners`)
    const corners = asCorners(cornersList, `${f}.corners`, limits)
    const indexes = (name: 'edge' | 'touch'): number[] => {
      const l = asList(r[name], `${f}.${name}`, limits.maxNeighbours)
      budget(l.length, `${f}.${name}`)
      const a: number[] = []
      for (let s = 0; s < l.length; s++) a.push(asInt(l[s], `${f}.${name}[${s}]`, 0, n - 1))
      return a
    }
    const edge = indexes('edge')
    const touch = indexes('touch')
    if (typeof r.open !== 'boolean') throw malformed(`${f}.open is not a bool`, `${f}.open`)
    out.push({ tile, shape, corners, edge, touch, open: r.open })
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------
// Semantic checks (the spec's rules on neighbour lists): each neighbour once, symmetric, not itself
// ---------------------------------------------------------------------------------------------------------

/**
 * Problems with a lattice row's neighbour lists, as sentences (empty when none): a tile listed as its own
 * neighbour, a neighbour listed twice, a relation that is not symmetric, an edge neighbour missing from
 * touch. These do not change the pin (the pin hashes whatever the row holds); an importer reports them.
 */
export function lintLatticeNeighbours(g: LatticeGeometry): string[] {
  const problems: string[] = []
  const key = (o: NeighbourOffset): string => `${o.di},${o.dj},${o.k}`
  for (const name of ['edge', 'touch'] as const) {
    const sets = g[name].map((l) => new Set(l.map(key)))
    g[name].forEach((list, k) => {
      const seen = new Set<string>()
      for (const o of list) {
        const kk = key(o)
        if (o.di === 0 && o.dj === 0 && o.k === k) problems.push(`${name}[${k}] lists the tile itself`)
        if (seen.has(kk)) problems.push(`${name}[${k}] lists (${kk}) twice`)
        seen.add(kk)
        const back = sets[o.k]
        if (!back || !back.has(`${-o.di},${-o.dj},${k}`)) problems.push(`${name}[${k}] lists (${kk}) but ${name}[${o.k}] does not list (${-o.di},${-o.dj},${k})`)
      }
    })
  }
  g.edge.forEach((list, k) => {
    const touch = new Set((g.touch[k] ?? []).map(key))
    for (const o of list) if (!touch.has(key(o))) problems.push(`edge[${k}] lists (${key(o)}) which touch[${k}] does not`)
  })
  return problems
}

/** The same rules for a reference patch's rows. */
export function lintReferencePatch(rows: readonly ReferencePatchRow[]): string[] {
  const problems: string[] = []
  for (const name of ['edge', 'touch'] as const) {
    const sets = rows.map((r) => new Set(r[name]))
    rows.forEach((r, i) => {
      const seen = new Set<number>()
      for (const j of r[name]) {
        if (j === i) problems.push(`tile ${i}: ${name} lists the tile itself`)
        if (seen.has(j)) problems.push(`tile ${i}: ${name} lists ${j} twice`)
        seen.add(j)
        if (!sets[j]?.has(i)) problems.push(`tile ${i}: ${name} lists ${j}, whose ${name} does not list ${i}`)
      }
    })
  }
  rows.forEach((r, i) => {
    const touch = new Set(r.touch)
    for (const j of r.edge) if (!touch.has(j)) problems.push(`tile ${i}: edge lists ${j}, touch does not`)
  })
  return problems
}

// ---------------------------------------------------------------------------------------------------------
// Hashing
// ---------------------------------------------------------------------------------------------------------

/** Writes the spec's little-endian values into a SHA-256, through a small buffer. Checks every range. */
class HashWriter {
  private readonly hash: Hash = createHash('sha256')
  private readonly buf = Buffer.alloc(1 << 16)
  private pos = 0

  private room(n: number): void {
    if (this.pos + n > this.buf.length) this.flush()
  }

  private flush(): void {
    if (this.pos > 0) this.hash.update(this.buf.subarray(0, this.pos))
    this.pos = 0
  }

  ascii(s: string): void {
    for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) throw new Error('not ASCII')
    this.flush()
    this.hash.update(Buffer.from(s, 'ascii'))
  }

  u32(n: number, field: string): void {
    if (!Number.isInteger(n) || n < 0 || n > U32_MAX) throw malformed(`${field} is not a u32`, field)
    this.room(4)
    this.buf.writeUInt32LE(n, this.pos)
    this.pos += 4
  }

  i32(n: number, field: string): void {
    if (!Number.isInteger(n) || n < I32_MIN || n > I32_MAX) throw malformed(`${field} is not an i32`, field)
    this.room(4)
    this.buf.writeInt32LE(n, this.pos)
    this.pos += 4
  }

  f64(x: number, field: string): void {
    if (typeof x !== 'number' || !Number.isFinite(x)) throw malformed(`${field} is not a finite float64`, field)
    this.room(8)
    this.buf.writeDoubleLE(x, this.pos)
    this.pos += 8
  }

  byte(b: number): void {
    this.room(1)
    this.buf[this.pos++] = b
  }

  hex(): string {
    this.flush()
    return this.hash.digest('hex')
  }
}

function writeCorners(w: HashWriter, corners: readonly (readonly number[])[], field: string): void {
  w.u32(corners.length, `${field}.length`)
  corners.forEach((c, i) => {
    if (c.length !== 2) throw malformed(`${field}[${i}] does not have two coordinates`, `${field}[${i}]`)
    w.f64(c[0] as number, `${field}[${i}][0]`)
    w.f64(c[1] as number, `${field}[${i}][1]`)
  })
}

/** The polygon hash of a lattice tiling: 64 hex digits. */
export function latticePolygonHash(g: LatticeGeometry): string {
  const w = new HashWriter()
  w.ascii(POLYGONS_PREFIX)
  w.ascii('lattice')
  if (g.a1.length !== 2 || g.a2.length !== 2) throw malformed('a1 and a2 must have two coordinates')
  w.f64(g.a1[0] as number, 'a1[0]')
  w.f64(g.a1[1] as number, 'a1[1]')
  w.f64(g.a2[0] as number, 'a2[0]')
  w.f64(g.a2[1] as number, 'a2[1]')
  w.u32(g.tile_types.length, 'tile_types.length')
  g.tile_types.forEach((t, i) => {
    w.u32(t.shape, `tile_types[${i}].shape`)
    writeCorners(w, t.corners, `tile_types[${i}].corners`)
  })
  return w.hex()
}

/**
 * The neighbour hash of a lattice tiling: 64 hex digits. The edge lists of every tile type in order, then
 * the touch lists of every tile type in order; no count of tile types is written (the polygon hash has it).
 */
export function latticeNeighbourHash(g: LatticeGeometry): string {
  const w = new HashWriter()
  w.ascii(NEIGHBOURS_PREFIX)
  for (const name of ['edge', 'touch'] as const) {
    g[name].forEach((list, t) => {
      w.u32(list.length, `${name}[${t}].length`)
      list.forEach((o, s) => {
        w.i32(o.di, `${name}[${t}][${s}].di`)
        w.i32(o.dj, `${name}[${t}][${s}].dj`)
        w.u32(o.k, `${name}[${t}][${s}].k`)
      })
    })
  }
  return w.hex()
}

/** The polygon hash of an aperiodic family: its reference patch's rows in tile order. */
export function patchPolygonHash(rows: readonly ReferencePatchRow[]): string {
  const w = new HashWriter()
  w.ascii(POLYGONS_PREFIX)
  w.ascii('patch')
  w.u32(rows.length, 'tiles')
  rows.forEach((r, i) => {
    w.u32(r.shape, `rows[${i}].shape`)
    writeCorners(w, r.corners, `rows[${i}].corners`)
  })
  return w.hex()
}

/** The neighbour hash of an aperiodic family: edge lists, then touch lists, then one open byte per tile. */
export function patchNeighbourHash(rows: readonly ReferencePatchRow[]): string {
  const w = new HashWriter()
  w.ascii(NEIGHBOURS_PREFIX)
  for (const name of ['edge', 'touch'] as const) {
    rows.forEach((r, i) => {
      w.u32(r[name].length, `rows[${i}].${name}.length`)
      r[name].forEach((j, s) => w.u32(j, `rows[${i}].${name}[${s}]`))
    })
  }
  rows.forEach((r) => w.byte(r.open ? 1 : 0))
  return w.hex()
}

const HEX64 = /^[0-9a-f]{64}$/

/** The pin: the first 32 hex digits of SHA-256 over "jetcarp-geometry-v1\n" + polygon hash + "\n" + neighbour hash. */
export function pinFromHashes(polygonHash: string, neighbourHash: string): string {
  if (!HEX64.test(polygonHash)) throw malformed('the polygon hash is not 64 lower-case hex digits')
  if (!HEX64.test(neighbourHash)) throw malformed('the neighbour hash is not 64 lower-case hex digits')
  return createHash('sha256').update(`${GEOMETRY_SCHEME}\n${polygonHash}\n${neighbourHash}`, 'ascii').digest('hex').slice(0, 32)
}

export function latticeHashes(g: LatticeGeometry): GeometryHashes {
  const polygon_hash = latticePolygonHash(g)
  const neighbour_hash = latticeNeighbourHash(g)
  return { polygon_hash, neighbour_hash, pin: pinFromHashes(polygon_hash, neighbour_hash) }
}

export function patchHashes(rows: readonly ReferencePatchRow[]): GeometryHashes {
  const polygon_hash = patchPolygonHash(rows)
  const neighbour_hash = patchNeighbourHash(rows)
  return { polygon_hash, neighbour_hash, pin: pinFromHashes(polygon_hash, neighbour_hash) }
}

/**
 * Compares computed hashes with the ones a row states; returns the differences as sentences (empty when
 * the row's pin follows from its geometry).
 */
export function compareHashes(stated: { polygon_hash?: unknown; neighbour_hash?: unknown; pin?: unknown }, computed: GeometryHashes): string[] {
  const out: string[] = []
  for (const k of ['polygon_hash', 'neighbour_hash', 'pin'] as const) {
    if (stated[k] !== computed[k]) out.push(`${k} is ${JSON.stringify(stated[k])}, its geometry gives ${computed[k]}`)
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------
// Exact numbers and correct rounding to float64
// ---------------------------------------------------------------------------------------------------------

/** floor(sqrt(n)) for n >= 0. */
export function isqrt(n: bigint): bigint {
  if (n < 0n) throw new RangeError('isqrt of a negative number')
  if (n < 2n) return n
  let x = 1n << BigInt(Math.ceil(bitLength(n) / 2))
  for (;;) {
    const y = (x + n / x) >> 1n
    if (y >= x) return x
    x = y
  }
}

function bitLength(n: bigint): number {
  if (n < 0n) n = -n
  return n === 0n ? 0 : n.toString(2).length
}

function floorDiv(a: bigint, b: bigint): bigint {
  if (b <= 0n) throw new RangeError('floorDiv by a non-positive number')
  const q = a / b
  return a % b !== 0n && a < 0n ? q - 1n : q
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return -floorDiv(-a, b)
}

function gcd(a: bigint, b: bigint): bigint {
  if (a < 0n) a = -a
  if (b < 0n) b = -b
  while (b !== 0n) [a, b] = [b, a % b]
  return a
}

/** A closed interval [lo, hi] · 2^-prec holding an exact real number. */
export class Interval {
  constructor(readonly lo: bigint, readonly hi: bigint, readonly prec: number) {
    if (lo > hi) throw new RangeError('empty interval')
  }

  static exact(n: bigint, prec: number): Interval {
    const v = n << BigInt(prec)
    return new Interval(v, v, prec)
  }

  static rational(num: bigint, den: bigint, prec: number): Interval {
    if (den < 0n) [num, den] = [-num, -den]
    const v = num << BigInt(prec)
    return new Interval(floorDiv(v, den), ceilDiv(v, den), prec)
  }

  /** sqrt(n) for a non-negative integer n. */
  static sqrtInt(n: bigint, prec: number): Interval {
    const v = n << BigInt(2 * prec)
    const s = isqrt(v)
    return new Interval(s, s * s === v ? s : s + 1n, prec)
  }

  add(o: Interval): Interval {
    this.same(o)
    return new Interval(this.lo + o.lo, this.hi + o.hi, this.prec)
  }

  sub(o: Interval): Interval {
    return this.add(o.neg())
  }

  neg(): Interval {
    return new Interval(-this.hi, -this.lo, this.prec)
  }

  mul(o: Interval): Interval {
    this.same(o)
    const ps = [this.lo * o.lo, this.lo * o.hi, this.hi * o.lo, this.hi * o.hi]
    let min = ps[0] as bigint
    let max = min
    for (const p of ps) {
      if (p < min) min = p
      if (p > max) max = p
    }
    const s = BigInt(this.prec)
    return new Interval(min >> s, -(-max >> s), this.prec)
  }

  /** Multiplies by a rational num/den. */
  scale(num: bigint, den: bigint): Interval {
    if (den < 0n) [num, den] = [-num, -den]
    const a = this.lo * num
    const b = this.hi * num
    const [x, y] = a <= b ? [a, b] : [b, a]
    return new Interval(floorDiv(x, den), ceilDiv(y, den), this.prec)
  }

  /** The square root of a number known to be non-negative (a lower end below 0 is taken as 0). */
  sqrt(): Interval {
    if (this.hi < 0n) throw new RangeError('sqrt of a negative interval')
    const s = BigInt(this.prec)
    const lo = this.lo <= 0n ? 0n : isqrt(this.lo << s)
    const hiv = this.hi << s
    const r = isqrt(hiv)
    return new Interval(lo, r * r === hiv ? r : r + 1n, this.prec)
  }

  private same(o: Interval): void {
    if (o.prec !== this.prec) throw new RangeError('intervals of different precision')
  }
}

/** n · 2^-prec rounded to the nearest float64, ties to even (the rounding of ECMAScript's Number(bigint)). */
function scaledToF64(n: bigint, prec: number): number {
  if (n === 0n) return 0
  const neg = n < 0n
  let m = neg ? -n : n
  let e = -prec
  const len = bitLength(m)
  if (len > 64) {
    const shift = BigInt(len - 64)
    const q = m >> shift
    m = (q << shift) === m ? q : q | 1n // keep a sticky bit far below the rounding bit
    e += len - 64
  }
  let x = Number(m) // m has at most 64 bits: correctly rounded to 53
  // Scale by 2^e exactly (no overflow or underflow for numbers of geometric size).
  while (e > 0) {
    const k = Math.min(e, 1000)
    x *= 2 ** k
    e -= k
  }
  while (e < 0) {
    const k = Math.min(-e, 1000)
    x /= 2 ** k
    e += k
  }
  if (!Number.isFinite(x) || (x !== 0 && Math.abs(x) < 2 ** -1022)) throw new RangeError('value outside the normal float64 range')
  return neg ? -x : x
}

/**
 * The float64 nearest to an exact real number (ties to even), given a way to enclose the number in an
 * interval at any precision. Precision doubles until both ends of the interval round to the same float;
 * for a non-zero number that always happens. The caller handles exact zero (and its sign) itself.
 */
export function roundToF64(enclose: (prec: number) => Interval): number {
  for (let prec = 96; prec <= 12288; prec *= 2) {
    const iv = enclose(prec)
    const a = scaledToF64(iv.lo, iv.prec)
    const b = scaledToF64(iv.hi, iv.prec)
    if (a === b && !(a === 0 && iv.lo !== iv.hi)) return a
  }
  throw new RangeError('could not round to float64 (is the number zero?)')
}

const sqrtCache = new Map<string, Interval>()

function sqrtIntCached(d: number, prec: number): Interval {
  const key = `${d}:${prec}`
  let iv = sqrtCache.get(key)
  if (!iv) {
    iv = Interval.sqrtInt(BigInt(d), prec)
    if (sqrtCache.size > 256) sqrtCache.clear()
    sqrtCache.set(key, iv)
  }
  return iv
}

/**
 * An exact number (p + q·√d) / r with integers p, q, r > 0 and a square-free radicand d > 1 (d is 1 when
 * q is 0): the coordinates of regular-polygon tilings (d = 3 for triangles and hexagons, d = 2 for
 * octagons) and of Penrose tilings' x axis (d = 5). Rounded to float64 only when written (toF64).
 *
 * negZero marks a zero that is written as -0.0: the spec's square row has a2 = [-0.0, 1], and the pin
 * covers that sign. Arithmetic never makes one.
 */
export class QSurd {
  readonly p: bigint
  readonly q: bigint
  readonly r: bigint
  readonly d: number
  readonly negZero: boolean

  private constructor(p: bigint, q: bigint, r: bigint, d: number, negZero: boolean) {
    this.p = p
    this.q = q
    this.r = r
    this.d = d
    this.negZero = negZero
  }

  /** (p + q·√d) / r, normalised. */
  static of(p: bigint | number, q: bigint | number, r: bigint | number = 1n, d = 1): QSurd {
    let P = BigInt(p)
    let Q = BigInt(q)
    let R = BigInt(r)
    if (R === 0n) throw new RangeError('denominator 0')
    if (Q !== 0n && (!Number.isSafeInteger(d) || d < 2 || !squareFree(d))) throw new RangeError(`radicand ${d} is not a square-free integer above 1`)
    if (R < 0n) {
      P = -P
      Q = -Q
      R = -R
    }
    const g = gcd(gcd(P, Q), R)
    if (g > 1n) {
      P /= g
      Q /= g
      R /= g
    }
    if (P === 0n && Q === 0n) R = 1n
    return new QSurd(P, Q, R, Q === 0n ? 1 : d, false)
  }

  static rational(num: bigint | number, den: bigint | number = 1n): QSurd {
    return QSurd.of(num, 0n, den)
  }

  static readonly ZERO = QSurd.of(0, 0)
  static readonly ONE = QSurd.of(1, 0)
  /** Zero, written as -0.0. */
  static readonly NEG_ZERO = new QSurd(0n, 0n, 1n, 1, true)

  /** The exact value of a float64 (every finite float is a dyadic rational). */
  static fromF64(x: number): QSurd {
    if (!Number.isFinite(x)) throw new RangeError('not a finite float64')
    if (x === 0) return Object.is(x, -0) ? QSurd.NEG_ZERO : QSurd.ZERO
    const dv = new DataView(new ArrayBuffer(8))
    dv.setFloat64(0, x)
    const bits = dv.getBigUint64(0)
    const neg = bits >> 63n === 1n
    const exp = Number((bits >> 52n) & 0x7ffn)
    const frac = bits & ((1n << 52n) - 1n)
    const mant = exp === 0 ? frac : frac | (1n << 52n)
    const e = (exp === 0 ? 1 : exp) - 1075
    const s = neg ? -mant : mant
    return e >= 0 ? QSurd.rational(s << BigInt(e), 1n) : QSurd.rational(s, 1n << BigInt(-e))
  }

  isZero(): boolean {
    return this.p === 0n && this.q === 0n
  }

  private radicand(o: QSurd): number {
    if (this.q !== 0n && o.q !== 0n && this.d !== o.d) throw new RangeError(`cannot combine √${this.d} and √${o.d}`)
    return this.q !== 0n ? this.d : o.d
  }

  add(o: QSurd): QSurd {
    const d = this.radicand(o)
    return QSurd.of(this.p * o.r + o.p * this.r, this.q * o.r + o.q * this.r, this.r * o.r, d)
  }

  sub(o: QSurd): QSurd {
    return this.add(o.neg())
  }

  neg(): QSurd {
    return QSurd.of(-this.p, -this.q, this.r, this.d)
  }

  mul(o: QSurd): QSurd {
    const d = this.radicand(o)
    const D = BigInt(d)
    return QSurd.of(this.p * o.p + this.q * o.q * D, this.p * o.q + this.q * o.p, this.r * o.r, d)
  }

  div(o: QSurd): QSurd {
    if (o.isZero()) throw new RangeError('division by zero')
    const d = this.radicand(o)
    // 1 / ((a + b√d)/r) = r (a - b√d) / (a² - b² d)
    const D = BigInt(d)
    const n = o.p * o.p - o.q * o.q * D
    const inv = QSurd.of(o.r * o.p, -o.r * o.q, n, d)
    return this.mul(inv)
  }

  sign(): -1 | 0 | 1 {
    const sp = this.p > 0n ? 1 : this.p < 0n ? -1 : 0
    const sq = this.q > 0n ? 1 : this.q < 0n ? -1 : 0
    if (sq === 0) return sp
    if (sp === 0 || sp === sq) return sq
    // p and q√d have opposite signs: the larger magnitude wins (never equal for a square-free d > 1)
    return this.p * this.p > this.q * this.q * BigInt(this.d) ? sp : sq
  }

  cmp(o: QSurd): -1 | 0 | 1 {
    return this.sub(o).sign()
  }

  equals(o: QSurd): boolean {
    return this.cmp(o) === 0
  }

  /** An interval holding the value, at precision prec. */
  enclose(prec: number): Interval {
    if (this.q === 0n) return Interval.rational(this.p, this.r, prec)
    const s = sqrtIntCached(this.d, prec)
    const base = this.p << BigInt(prec)
    const a = base + this.q * s.lo
    const b = base + this.q * s.hi
    const [x, y] = a <= b ? [a, b] : [b, a]
    return new Interval(floorDiv(x, this.r), ceilDiv(y, this.r), prec)
  }

  /** The nearest float64 (ties to even); exact zero is 0.0, or -0.0 for NEG_ZERO. */
  toF64(): number {
    if (this.isZero()) return this.negZero ? -0 : 0
    return roundToF64((prec) => this.enclose(prec))
  }

  toString(): string {
    if (this.isZero()) return this.negZero ? '-0' : '0'
    const parts = this.q === 0n ? `${this.p}` : `${this.p} + ${this.q}√${this.d}`
    return this.r === 1n ? parts : `(${parts})/${this.r}`
  }
}

function squareFree(d: number): boolean {
  for (let f = 2; f * f <= d; f++) if (d % (f * f) === 0) return false
  return true
}

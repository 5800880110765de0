import { createHash } from 'node:crypto'
import t from 'tap'
import {
  GEOMETRY_CODES,
  GEOMETRY_LIMITS,
  Interval,
  QSurd,
  checkPatchTileCount,
  compareHashes,
  isqrt,
  latticeHashes,
  latticeNeighbourHash,
  latticePolygonHash,
  lintLatticeNeighbours,
  lintReferencePatch,
  parseLatticeGeometry,
  parseReferencePatch,
  patchHashes,
  patchNeighbourHash,
  patchPolygonHash,
  pinFromHashes,
  roundToF64,
  type LatticeGeometry,
  type ReferencePatchRow,
} from '../src/formats/pack/geometry/geometry.js'

// -----------------------------------------------------------------------------------------------------------
// A second, deliberately plain encoder of the spec's byte layout, to check the module's against.
// -----------------------------------------------------------------------------------------------------------

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex')
const u32 = (n: number): Buffer => { const b = Buffer.alloc(4); b.writeUInt32LE(n); return b }
const i32 = (n: number): Buffer => { const b = Buffer.alloc(4); b.writeInt32LE(n); return b }
const f64 = (x: number): Buffer => { const b = Buffer.alloc(8); b.writeDoubleLE(x); return b }
const str = (s: string): Buffer => Buffer.from(s, 'ascii')

function plainLattice(g: LatticeGeometry): [string, string] {
  const p: Buffer[] = [str('jetcarp-geometry-v1 polygons\n'), str('lattice')]
  p.push(f64(g.a1[0]!), f64(g.a1[1]!), f64(g.a2[0]!), f64(g.a2[1]!), u32(g.tile_types.length))
  for (const tt of g.tile_types) {
    p.push(u32(tt.shape), u32(tt.corners.length))
    for (const c of tt.corners) p.push(f64(c[0]!), f64(c[1]!))
  }
  const n: Buffer[] = [str('jetcarp-geometry-v1 neighbours\n')]
  for (const lists of [g.edge, g.touch]) {
    for (const l of lists) {
      n.push(u32(l.length))
      for (const o of l) n.push(i32(o.di), i32(o.dj), u32(o.k))
    }
  }
  return [sha(Buffer.concat(p)), sha(Buffer.concat(n))]
}

function plainPatch(rows: ReferencePatchRow[]): [string, string] {
  const p: Buffer[] = [str('jetcarp-geometry-v1 polygons\n'), str('patch'), u32(rows.length)]
  for (const r of rows) {
    p.push(u32(r.shape), u32(r.corners.length))
    for (const c of r.corners) p.push(f64(c[0]!), f64(c[1]!))
  }
  const n: Buffer[] = [str('jetcarp-geometry-v1 neighbours\n')]
  for (const name of ['edge', 'touch'] as const) {
    for (const r of rows) {
      n.push(u32(r[name].length))
      for (const j of r[name]) n.push(u32(j))
    }
  }
  n.push(Buffer.from(rows.map((r) => (r.open ? 1 : 0))))
  return [sha(Buffer.concat(p)), sha(Buffer.concat(n))]
}

const off = (di: number, dj: number, k: number): { di: number; dj: number; k: number } => ({ di, dj, k })

const SQUARE: LatticeGeometry = {
  a1: [1, 0],
  a2: [-0.0, 1],
  tile_types: [{ shape: 0, corners: [[0, 0], [1, 0], [1, 1], [0, 1]] }],
  edge: [[off(0, -1, 0), off(1, 0, 0), off(0, 1, 0), off(-1, 0, 0)]],
  touch: [[off(-1, -1, 0), off(0, -1, 0), off(1, -1, 0), off(1, 0, 0), off(1, 1, 0), off(0, 1, 0), off(-1, 1, 0), off(-1, 0, 0)]],
}

/** Two unit squares side by side, and a third tile touching the first at its corner 0. */
const PATCH: ReferencePatchRow[] = [
  { tile: 0, shape: 0, corners: [[0, 0], [1, 0], [1, 1], [0, 1]], edge: [1], touch: [2, 1], open: true },
  { tile: 1, shape: 0, corners: [[1, 0], [2, 0], [2, 1], [1, 1]], edge: [0], touch: [0], open: true },
  { tile: 2, shape: 1, corners: [[-1, -1], [0, -1], [0, 0], [-1, 0]], edge: [], touch: [0], open: true },
]

// -----------------------------------------------------------------------------------------------------------

t.test('the spec square grid test vector', async (t) => {
  t.equal(latticePolygonHash(SQUARE), 'f5a761f20c098aba5f00361946f6b309ccbb17ab5f6aca2474d0aa3e64a8075b')
  t.equal(latticeNeighbourHash(SQUARE), '12a567c8a5480b1b7ca4a8d4ccd2439565888a698ace2567508ed2c954c0bbdb')
  t.equal(pinFromHashes(latticePolygonHash(SQUARE), latticeNeighbourHash(SQUARE)), '0145310ebd49abfe89eb01c42ecaf459')
  t.same(latticeHashes(SQUARE), {
    polygon_hash: 'f5a761f20c098aba5f00361946f6b309ccbb17ab5f6aca2474d0aa3e64a8075b',
    neighbour_hash: '12a567c8a5480b1b7ca4a8d4ccd2439565888a698ace2567508ed2c954c0bbdb',
    pin: '0145310ebd49abfe89eb01c42ecaf459',
  })
  // The pin text has no trailing newline.
  const p = 'f5a761f20c098aba5f00361946f6b309ccbb17ab5f6aca2474d0aa3e64a8075b'
  const n = '12a567c8a5480b1b7ca4a8d4ccd2439565888a698ace2567508ed2c954c0bbdb'
  t.equal(sha(`jetcarp-geometry-v1\n${p}\n${n}`).slice(0, 32), '0145310ebd49abfe89eb01c42ecaf459')
  t.not(sha(`jetcarp-geometry-v1\n${p}\n${n}\n`).slice(0, 32), '0145310ebd49abfe89eb01c42ecaf459')
  // The same row, as a Parquet reader gives it, parses to the same hashes.
  const parsed = parseLatticeGeometry(structuredClone(SQUARE))
  t.same(latticeHashes(parsed), latticeHashes(SQUARE))
  t.ok(Object.is(parsed.a2[0], -0), '-0.0 survives parsing')
})

t.test('the module writes the same bytes as a plain encoder', async (t) => {
  t.same([latticePolygonHash(SQUARE), latticeNeighbourHash(SQUARE)], plainLattice(SQUARE))
  const multi: LatticeGeometry = {
    a1: [2, 0],
    a2: [1, Math.sqrt(3)],
    tile_types: [
      { shape: 0, corners: [[-0.5, -0.8], [0.5, -0.8], [1, 0], [0.5, 0.8], [-0.5, 0.8], [-1, 0]] },
      { shape: 1, corners: [[1, 0], [1.5, 0.8], [0.5, 0.8]] },
      { shape: 1, corners: [[-0.5, 0.8], [0.5, 0.8], [0, 1.7]] },
    ],
    edge: [[off(0, -1, 1), off(-2147483648, 2147483647, 2)], [off(1, 0, 0)], []],
    touch: [[off(0, -1, 1)], [off(1, 0, 0), off(-7, 3, 2)], [off(0, 0, 0)]],
  }
  t.same([latticePolygonHash(multi), latticeNeighbourHash(multi)], plainLattice(multi), 'several tile types, i32 extremes, an empty list')
  t.same([patchPolygonHash(PATCH), patchNeighbourHash(PATCH)], plainPatch(PATCH))
  const h = patchHashes(PATCH)
  t.equal(h.pin, pinFromHashes(h.polygon_hash, h.neighbour_hash))
  // Lattice and patch bodies are told apart by their first word.
  t.not(patchPolygonHash(PATCH), latticePolygonHash(SQUARE))
})

t.test('every value the pin covers changes it', async (t) => {
  const base = latticeHashes(SQUARE).pin
  const variants: [string, (g: LatticeGeometry) => void][] = [
    ['a1.x', (g) => (g.a1[0] = 2)],
    ['a2.x sign of zero', (g) => (g.a2[0] = 0)],
    ['shape', (g) => (g.tile_types[0]!.shape = 1)],
    ['a corner', (g) => (g.tile_types[0]!.corners[2] = [1, 1.0000000000000002])],
    ['corner order', (g) => g.tile_types[0]!.corners.reverse()],
    ['an edge slot', (g) => (g.edge[0]![0] = off(0, -1, 1))],
    ['touch order', (g) => g.touch[0]!.reverse()],
    ['a slot moved from touch to edge', (g) => g.edge[0]!.push(g.touch[0]!.shift()!)],
  ]
  for (const [name, f] of variants) {
    const g = structuredClone(SQUARE)
    f(g)
    t.not(latticeHashes(g).pin, base, name)
  }
  const p = patchHashes(PATCH).pin
  const q = structuredClone(PATCH)
  q[1]!.open = false
  t.not(patchHashes(q).pin, p, 'an open flag')
})

t.test('pinFromHashes takes only 64 lower-case hex digits', async (t) => {
  const h = 'a'.repeat(64)
  t.match(pinFromHashes(h, h), /^[0-9a-f]{32}$/)
  t.throws(() => pinFromHashes('A'.repeat(64), h), { code: GEOMETRY_CODES.malformed })
  t.throws(() => pinFromHashes(h, 'a'.repeat(63)), { code: GEOMETRY_CODES.malformed })
  t.throws(() => pinFromHashes('sha256:' + h, h), { code: GEOMETRY_CODES.malformed })
})

t.test('hashing refuses values outside their types', async (t) => {
  const bad: [string, (g: LatticeGeometry) => void][] = [
    ['a NaN coordinate', (g) => (g.a1[0] = NaN)],
    ['an infinite corner', (g) => (g.tile_types[0]!.corners[0] = [Infinity, 0])],
    ['a negative shape', (g) => (g.tile_types[0]!.shape = -1)],
    ['a fractional di', (g) => (g.edge[0]![0] = off(0.5, 0, 0))],
    ['a dj beyond i32', (g) => (g.edge[0]![0] = off(0, 2 ** 31, 0))],
    ['a negative k', (g) => (g.touch[0]![0] = off(0, 0, -1))],
    ['a corner with one coordinate', (g) => (g.tile_types[0]!.corners[0] = [1])],
  ]
  for (const [name, f] of bad) {
    const g = structuredClone(SQUARE)
    f(g)
    t.throws(() => latticeHashes(g), { code: GEOMETRY_CODES.malformed }, name)
  }
})

t.test('parsing a lattice row from a table: malformed and oversized input', async (t) => {
  const row = (): Record<string, unknown> => structuredClone(SQUARE) as unknown as Record<string, unknown>
  const cases: [string, (r: Record<string, unknown>) => void, string][] = [
    ['no a1', (r) => delete r.a1, GEOMETRY_CODES.malformed],
    ['a1 a string', (r) => (r.a1 = '1,0'), GEOMETRY_CODES.malformed],
    ['a1 with three numbers', (r) => (r.a1 = [1, 0, 0]), GEOMETRY_CODES.malformed],
    ['a2 null', (r) => (r.a2 = null), GEOMETRY_CODES.malformed],
    ['no tile types', (r) => (r.tile_types = []), GEOMETRY_CODES.malformed],
    ['a tile type not a struct', (r) => (r.tile_types = [[0, 1]]), GEOMETRY_CODES.malformed],
    ['a polygon of two corners', (r) => ((r.tile_types as { corners: unknown }[])[0]!.corners = [[0, 0], [1, 1]]), GEOMETRY_CODES.malformed],
    ['a string coordinate', (r) => ((r.tile_types as { corners: unknown[][] }[])[0]!.corners[0] = ['0', 0]), GEOMETRY_CODES.malformed],
    ['a fractional shape', (r) => ((r.tile_types as { shape: unknown }[])[0]!.shape = 0.5), GEOMETRY_CODES.malformed],
    ['edge lists for two types', (r) => (r.edge = [[], []]), GEOMETRY_CODES.malformed],
    ['touch missing', (r) => delete r.touch, GEOMETRY_CODES.malformed],
    ['k naming no tile type', (r) => ((r.edge as unknown[][])[0]![0] = off(0, 1, 1)), GEOMETRY_CODES.malformed],
    ['di a string', (r) => ((r.edge as unknown[][])[0]![0] = { di: '0', dj: 1, k: 0 }), GEOMETRY_CODES.malformed],
    ['a bigint beyond i32', (r) => ((r.edge as unknown[][])[0]![0] = { di: 2n ** 40n, dj: 1, k: 0 }), GEOMETRY_CODES.malformed],
    ['a million tile types', (r) => (r.tile_types = new Array(1_000_000)), GEOMETRY_CODES.limit],
    ['a million corners', (r) => ((r.tile_types as { corners: unknown }[])[0]!.corners = new Array(1_000_000)), GEOMETRY_CODES.limit],
    ['a million touch slots', (r) => ((r.touch as unknown[])[0] = new Array(1_000_000)), GEOMETRY_CODES.limit],
  ]
  for (const [name, f, code] of cases) {
    const r = row()
    f(r)
    const t0 = Date.now()
    t.throws(() => parseLatticeGeometry(r), { code }, name)
    t.ok(Date.now() - t0 < 200, `${name}: refused at once`)
  }
  t.throws(() => parseLatticeGeometry(null), { code: GEOMETRY_CODES.malformed })
  t.throws(() => parseLatticeGeometry([1, 2]), { code: GEOMETRY_CODES.malformed })

  // Limits can be tightened; the total budget counts corners and slots together.
  const tight = { ...GEOMETRY_LIMITS, maxTotalItems: 15 }
  t.throws(() => parseLatticeGeometry(row(), tight), { code: GEOMETRY_CODES.limit }, '4 corners + 4 + 8 slots > 15')
  t.doesNotThrow(() => parseLatticeGeometry(row(), { ...GEOMETRY_LIMITS, maxTotalItems: 16 }))
  t.throws(() => parseLatticeGeometry(row(), { ...GEOMETRY_LIMITS, maxNeighbours: 7 }), { code: GEOMETRY_CODES.limit })

  // What readers may give: typed arrays for float lists, bigint for integers.
  const r = row()
  r.a1 = new Float64Array([1, 0])
  ;(r.tile_types as { shape: unknown }[])[0]!.shape = 0n
  ;(r.edge as { k: unknown }[][])[0]![0]!.k = 0n
  t.same(latticeHashes(parseLatticeGeometry(r)), latticeHashes(SQUARE))
})

t.test('reference patch rows and their count', async (t) => {
  t.same(parseReferencePatch(structuredClone(PATCH), 3), PATCH)
  t.equal(checkPatchTileCount(4000), 4000)
  t.equal(checkPatchTileCount(4000n), 4000)
  t.throws(() => checkPatchTileCount(0), { code: GEOMETRY_CODES.malformed })
  t.throws(() => checkPatchTileCount(null), { code: GEOMETRY_CODES.malformed })
  t.throws(() => checkPatchTileCount(1_000_001), { code: GEOMETRY_CODES.limit })
  t.throws(() => checkPatchTileCount(2n ** 62n), { code: GEOMETRY_CODES.malformed })
  t.throws(() => parseReferencePatch(structuredClone(PATCH), 4), { code: GEOMETRY_CODES.malformed })
  t.throws(() => parseReferencePatch([]), { code: GEOMETRY_CODES.malformed })
  t.throws(() => parseReferencePatch({ length: 3 }), { code: GEOMETRY_CODES.malformed })
  const p = structuredClone(PATCH) as unknown as Record<string, unknown>[]
  p[0]!.tile = 1
  t.throws(() => parseReferencePatch(p), { code: GEOMETRY_CODES.malformed }, 'tile must be the row index')
  const q = structuredClone(PATCH) as unknown as Record<string, unknown>[]
  q[1]!.edge = [3]
  t.throws(() => parseReferencePatch(q), { code: GEOMETRY_CODES.malformed }, 'a neighbour that is not in the patch')
  t.throws(() => parseReferencePatch(structuredClone(PATCH), undefined, { ...GEOMETRY_LIMITS, maxPatchTiles: 2 }), { code: GEOMETRY_CODES.limit })
})

t.test('lint: the spec rules on neighbour lists', async (t) => {
  t.same(lintLatticeNeighbours(SQUARE), [])
  const g = structuredClone(SQUARE)
  g.edge[0]!.push(off(0, 0, 0)) // itself (also not in touch)
  g.touch[0]!.push(off(1, 0, 0)) // twice
  g.touch[0]!.push(off(5, 5, 0)) // one-sided
  const l = lintLatticeNeighbours(g)
  t.ok(l.some((s) => /edge\[0\] lists the tile itself/.test(s)))
  t.ok(l.some((s) => /touch\[0\] lists \(1,0,0\) twice/.test(s)))
  t.ok(l.some((s) => /\(5,5,0\) but touch\[0\] does not list \(-5,-5,0\)/.test(s)))
  t.ok(l.some((s) => /which touch\[0\] does not/.test(s)))

  t.same(lintReferencePatch(PATCH), [])
  const p = structuredClone(PATCH)
  p[2]!.touch = [0, 1]
  p[0]!.edge = [1, 2]
  const m = lintReferencePatch(p)
  t.ok(m.some((s) => /tile 2: touch lists 1, whose touch does not list 2/.test(s)))
  t.ok(m.some((s) => /tile 0: edge lists 2, whose edge does not list 0/.test(s)))
})

t.test('compareHashes', async (t) => {
  const h = latticeHashes(SQUARE)
  t.same(compareHashes({ ...h }, h), [])
  const d = compareHashes({ ...h, pin: h.pin.toUpperCase() }, h)
  t.equal(d.length, 1)
  t.match(d[0], /^pin is/)
  t.equal(compareHashes({}, h).length, 3)
})

t.test('exact numbers: isqrt, intervals, correct rounding', async (t) => {
  for (const n of [0n, 1n, 2n, 3n, 4n, 15n, 16n, 17n, 10n ** 40n, 10n ** 40n - 1n, 2n ** 200n + 12345n]) {
    const r = isqrt(n)
    t.ok(r * r <= n && (r + 1n) * (r + 1n) > n, `isqrt(${n})`)
  }
  t.throws(() => isqrt(-1n))
  const s2 = Interval.sqrtInt(2n, 200)
  t.ok(s2.lo * s2.lo <= 2n << 400n && s2.hi * s2.hi >= 2n << 400n, 'sqrt(2) enclosed')
  t.ok(s2.hi - s2.lo <= 1n)
  t.equal(roundToF64((p) => Interval.sqrtInt(2n, p)), Math.SQRT2)
  t.equal(roundToF64((p) => Interval.rational(1n, 10n, p)), 0.1)
  t.equal(roundToF64((p) => Interval.rational(-1n, 3n, p)), -1 / 3)
  // Large and small magnitudes.
  t.equal(roundToF64((p) => Interval.rational(10n ** 30n, 7n, p)), 1e30 / 7)
  t.equal(roundToF64((p) => Interval.rational(1n, 7n * 10n ** 20n, p)), 1 / 7e20)
  // Just above a halfway point rounds up; exactly halfway rounds to even.
  const above = QSurd.rational((1n << 54n) + 2n, 2n).add(QSurd.rational(1n, 1n << 60n))
  t.equal(above.toF64(), 2 ** 53 + 2)
  t.equal(QSurd.rational((1n << 54n) + 2n, 2n).toF64(), 2 ** 53)
  // An interval holding 0 never rounds: the caller handles exact zero.
  t.throws(() => roundToF64((p) => new Interval(-1n, 1n, p)), RangeError)
  // Interval arithmetic encloses.
  const p = 64
  const a = Interval.rational(1n, 3n, p)
  const b = Interval.rational(-2n, 7n, p)
  const m = a.mul(b)
  const exact = QSurd.rational(-2, 21)
  t.ok(QSurd.rational(m.lo, 1n << 64n).cmp(exact) <= 0 && QSurd.rational(m.hi, 1n << 64n).cmp(exact) >= 0)
  t.ok(Interval.exact(2n, p).sqrt().hi >= Interval.sqrtInt(2n, p).lo)
  // QSurd arithmetic.
  const x = QSurd.of(1, 1, 2, 3) // (1 + √3)/2
  t.ok(x.mul(x).equals(QSurd.of(2, 1, 2, 3)), '((1 + √3)/2)² = (2 + √3)/2')
  t.ok(x.div(x).equals(QSurd.ONE))
  t.ok(QSurd.ONE.div(QSurd.of(0, 1, 1, 2)).equals(QSurd.of(0, 1, 2, 2)), '1/√2 = √2/2')
  t.equal(x.toString(), '(1 + 1√3)/2')
  t.equal(QSurd.of(2, 4, 6, 5).toString(), '(1 + 2√5)/3', 'normalised')
  t.throws(() => QSurd.ONE.div(QSurd.ZERO), RangeError)
})

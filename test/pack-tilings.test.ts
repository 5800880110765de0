import t from 'tap'
import { QSurd, latticeHashes, type NeighbourOffset } from '../src/formats/pack/geometry/geometry.js'
import {
  LATTICE_TILINGS,
  checkLatticeTilingRow,
  findLatticeTiling,
  latticeGeometry,
  latticeTilingRow,
  latticeTilingRows,
  type ExactPoint,
  type LatticeTilingDef,
} from '../src/formats/pack/geometry/tilings.js'

// -----------------------------------------------------------------------------------------------------------
// An independent, exact computation of each tile type's edge and touch neighbours from the geometry alone:
// lay out a patch of cells, intersect every edge of the tile with every edge of every other cell exactly,
// and order what it finds as the spec says (clockwise from corner 0 by where a neighbour meets the boundary:
// a stretch at its middle, a point at that point; ties at one point by the angle of the centres).
// -----------------------------------------------------------------------------------------------------------

type P = ExactPoint
const sub = (a: P, b: P): P => ({ x: a.x.sub(b.x), y: a.y.sub(b.y) })
const add = (a: P, b: P): P => ({ x: a.x.add(b.x), y: a.y.add(b.y) })
const scale = (a: P, s: QSurd): P => ({ x: a.x.mul(s), y: a.y.mul(s) })
const cross = (a: P, b: P): QSurd => a.x.mul(b.y).sub(a.y.mul(b.x))
const dot = (a: P, b: P): QSurd => a.x.mul(b.x).add(a.y.mul(b.y))
const int = (n: number): QSurd => QSurd.rational(n)

function cell(def: LatticeTilingDef, i: number, j: number, k: number): P[] {
  const o = add(scale(def.a1, int(i)), scale(def.a2, int(j)))
  return def.tileTypes[k]!.corners.map((c) => add(c, o))
}

function centre(poly: P[]): P {
  let s: P = { x: int(0), y: int(0) }
  for (const c of poly) s = add(s, c)
  return scale(s, QSurd.rational(1, poly.length))
}

/** Twice the signed area; positive means clockwise on the y-down screen. */
function area2(poly: P[]): QSurd {
  let s = int(0)
  poly.forEach((c, i) => (s = s.add(cross(c, poly[(i + 1) % poly.length]!))))
  return s
}

interface Contact {
  stretches: [QSurd, QSurd][]
  points: QSurd[]
}

/** Where polygon b meets polygon a's boundary, as boundary parameters of a (edge index + fraction). */
function contact(a: P[], b: P[]): Contact & { crossings: number } {
  const n = a.length
  const out: Contact & { crossings: number } = { stretches: [], points: [], crossings: 0 }
  const zero = int(0)
  const one = int(1)
  const param = (e: number, f: QSurd): QSurd => {
    const v = int(e).add(f)
    return v.cmp(int(n)) >= 0 ? v.sub(int(n)) : v
  }
  for (let e = 0; e < n; e++) {
    const a0 = a[e]!
    const d = sub(a[(e + 1) % n]!, a0)
    const dd = dot(d, d)
    for (let f = 0; f < b.length; f++) {
      const b0 = b[f]!
      const g = sub(b[(f + 1) % b.length]!, b0)
      const den = cross(d, g)
      const w = sub(b0, a0)
      if (den.isZero()) {
        if (!cross(d, w).isZero()) continue // parallel, apart
        const t0 = dot(w, d).div(dd)
        const t1 = dot(sub(b[(f + 1) % b.length]!, a0), d).div(dd)
        const lo0 = t0.cmp(t1) <= 0 ? t0 : t1
        const hi0 = t0.cmp(t1) <= 0 ? t1 : t0
        const lo = lo0.cmp(zero) > 0 ? lo0 : zero
        const hi = hi0.cmp(one) < 0 ? hi0 : one
        const c = lo.cmp(hi)
        if (c < 0) out.stretches.push([int(e).add(lo), int(e).add(hi)])
        else if (c === 0) out.points.push(param(e, lo))
        continue
      }
      const tt = cross(w, g).div(den)
      const uu = cross(w, d).div(den)
      if (tt.sign() < 0 || tt.cmp(one) > 0 || uu.sign() < 0 || uu.cmp(one) > 0) continue
      const tEnd = tt.isZero() || tt.equals(one)
      const uEnd = uu.isZero() || uu.equals(one)
      if (!tEnd && !uEnd) out.crossings++ // two edges crossing inside both: tiles would overlap
      out.points.push(param(e, tt))
    }
  }
  return out
}

/** Clockwise angle comparison of v1 and v2 about the reference direction r, angles in (-π, π]. */
function angleCmp(r: P, v1: P, v2: P): number {
  const half = (v: P): number => (cross(r, v).sign() < 0 ? 0 : 1)
  const h1 = half(v1)
  const h2 = half(v2)
  if (h1 !== h2) return h1 - h2
  return -cross(v1, v2).sign()
}

interface Found {
  edge: NeighbourOffset[]
  touch: NeighbourOffset[]
  crossings: number
  uncovered: string[]
}

function neighboursOf(def: LatticeTilingDef, k: number, reach = 3): Found {
  const me = cell(def, 0, 0, k)
  const c0 = centre(me)
  const found: { off: NeighbourOffset; key: QSurd; isEdge: boolean; point: P | null; centre: P }[] = []
  let crossings = 0
  const coverage: [QSurd, QSurd][][] = me.map(() => [])
  for (let i = -reach; i <= reach; i++) {
    for (let j = -reach; j <= reach; j++) {
      for (let kk = 0; kk < def.tileTypes.length; kk++) {
        if (i === 0 && j === 0 && kk === k) continue
        const other = cell(def, i, j, kk)
        const c = contact(me, other)
        crossings += c.crossings
        if (c.stretches.length === 0 && c.points.length === 0) continue
        let key: QSurd
        let point: P | null = null
        if (c.stretches.length > 0) {
          const [lo, hi] = c.stretches[0]!
          key = lo.add(hi).mul(QSurd.rational(1, 2))
          for (const [a, b] of c.stretches) {
            const e = Number(a.p / a.r) // edge index (floor of a non-negative rational)
            coverage[e]!.push([a.sub(int(e)), b.sub(int(e))])
          }
        } else {
          key = c.points[0]!
          for (const p of c.points) if (!p.equals(key)) throw new Error('a neighbour meeting the tile at two separate points')
          const e = Number(key.p / key.r)
          const frac = key.sub(int(e))
          point = add(me[e]!, scale(sub(me[(e + 1) % me.length]!, me[e]!), frac))
        }
        found.push({ off: { di: i, dj: j, k: kk }, key, isEdge: c.stretches.length > 0, point, centre: centre(other) })
      }
    }
  }
  found.sort((a, b) => {
    const c = a.key.cmp(b.key)
    if (c !== 0) return c
    const r = sub(a.point ?? b.point!, c0)
    return angleCmp(r, sub(a.centre, c0), sub(b.centre, c0))
  })
  // Every edge of the tile is covered exactly once by neighbours' stretches.
  const uncovered: string[] = []
  coverage.forEach((segs, e) => {
    segs.sort((a, b) => a[0].cmp(b[0]))
    let at = int(0)
    for (const [a, b] of segs) {
      if (!a.equals(at)) uncovered.push(`edge ${e} at ${at}`)
      at = b
    }
    if (!at.equals(int(1))) uncovered.push(`edge ${e} ends at ${at}`)
  })
  const mirrored = area2(me).sign() < 0
  const order = (l: NeighbourOffset[]): NeighbourOffset[] => (mirrored ? l.reverse() : l)
  return {
    edge: order(found.filter((f) => f.isEdge).map((f) => f.off)),
    touch: order(found.map((f) => f.off)),
    crossings,
    uncovered,
  }
}

// -----------------------------------------------------------------------------------------------------------

t.test('the square grid reproduces the spec test vector exactly', async (t) => {
  // Written from the spec's text, independently of the catalogue.
  const spec = {
    a1: [1, 0],
    a2: [-0.0, 1],
    tile_types: [{ shape: 0, corners: [[0, 0], [1, 0], [1, 1], [0, 1]] }],
    edge: [[[0, -1, 0], [1, 0, 0], [0, 1, 0], [-1, 0, 0]]].map((l) => l.map(([di, dj, k]) => ({ di: di!, dj: dj!, k: k! }))),
    touch: [[[-1, -1, 0], [0, -1, 0], [1, -1, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [-1, 1, 0], [-1, 0, 0]]].map((l) =>
      l.map(([di, dj, k]) => ({ di: di!, dj: dj!, k: k! })),
    ),
  }
  const h = latticeHashes(spec)
  t.equal(h.polygon_hash, 'f5a761f20c098aba5f00361946f6b309ccbb17ab5f6aca2474d0aa3e64a8075b')
  t.equal(h.neighbour_hash, '12a567c8a5480b1b7ca4a8d4ccd2439565888a698ace2567508ed2c954c0bbdb')
  t.equal(h.pin, '0145310ebd49abfe89eb01c42ecaf459')

  const row = latticeTilingRow(findLatticeTiling('square')!)
  t.equal(row.polygon_hash, h.polygon_hash)
  t.equal(row.neighbour_hash, h.neighbour_hash)
  t.equal(row.pin, h.pin)
  t.ok(Object.is(row.a2![0], -0), 'a2.x is -0.0, as the spec prints it')
  t.same(row.edge, spec.edge)
  t.same(row.touch, spec.touch)

  // -0.0 and 0.0 differ in the pin.
  const plus = latticeHashes({ ...spec, a2: [0, 1] })
  t.not(plus.polygon_hash, h.polygon_hash)
  t.equal(plus.neighbour_hash, h.neighbour_hash)
  t.not(plus.pin, h.pin)
})

t.test('the catalogue: at least square, hex, triangular and two more Archimedean tilings', async (t) => {
  const fams = LATTICE_TILINGS.map((d) => d.family)
  t.same(fams.slice().sort(), ['hex', 'oct', 'square', 'tri', 'trihex'])
  const rows = latticeTilingRows()
  t.same(rows.map((r) => r.pin_key), ['hex', 'oct', 'square', 'tri', 'trihex'], 'sorted by pin_key')
  for (const r of rows) {
    t.equal(r.kind, 'lattice')
    t.equal(r.params, null)
    t.equal(r.edges, null)
    t.equal(r.reference, null)
    t.equal(r.reference_level, null)
    t.equal(r.reference_tiles, null)
    t.match(r.pin, /^[0-9a-f]{32}$/)
    t.match(r.tiling_group, /^[a-z0-9][a-z0-9_-]{0,63}$/)
  }
  t.equal(new Set(rows.map((r) => r.pin)).size, rows.length, 'pins are distinct')
})

t.test('neighbour lists agree with an exact geometric computation', async (t) => {
  for (const def of LATTICE_TILINGS) {
    t.test(def.family, async (t) => {
      def.tileTypes.forEach((tt, k) => {
        const poly = cell(def, 0, 0, k)
        t.equal(area2(poly).sign(), 1, `type ${k}: corners clockwise on the y-down screen`)
        poly.forEach((c, i) => {
          const e = sub(poly[(i + 1) % poly.length]!, c)
          t.ok(dot(e, e).equals(int(1)), `type ${k} edge ${i} has length 1`)
        })
        const f = neighboursOf(def, k)
        t.equal(f.crossings, 0, `type ${k}: no tiles overlap`)
        t.same(f.uncovered, [], `type ${k}: every edge is covered by exactly one neighbour`)
        t.same(def.edge[k], f.edge, `type ${k} edge list`)
        t.same(def.touch[k], f.touch, `type ${k} touch list`)
        // The layout does not depend on how large a patch was searched.
        t.same(neighboursOf(def, k, 4).touch, f.touch)
        t.ok(tt.shape >= 0)
      })
      // The tile types fill the unit cell: their areas add up to |a1 × a2|.
      let total = int(0)
      def.tileTypes.forEach((_, k) => (total = total.add(area2(cell(def, 0, 0, k)))))
      const cellArea = cross(def.a1, def.a2)
      t.ok(total.equals(cellArea.mul(int(2))) || total.equals(cellArea.mul(int(-2))), 'tile areas fill the cell')
      // Symmetric, each once, edge within touch.
      const row = latticeTilingRow(def)
      const check = checkLatticeTilingRow(row)
      t.same(check.lint, [])
      t.same(check.mismatches, [])
    })
  }
})

t.test('known neighbour counts', async (t) => {
  const counts = (f: string): [number[], number[]] => {
    const d = findLatticeTiling(f)!
    return [d.edge.map((l) => l.length), d.touch.map((l) => l.length)]
  }
  t.same(counts('square'), [[4], [8]])
  t.same(counts('hex'), [[6], [6]])
  t.same(counts('tri'), [[3, 3], [12, 12]])
  t.same(counts('trihex'), [[6, 3, 3], [12, 6, 6]])
  t.same(counts('oct'), [[8, 4], [8, 4]])
})

// -----------------------------------------------------------------------------------------------------------
// The floats in the rows are the exact coordinates correctly rounded.
// -----------------------------------------------------------------------------------------------------------

function nextAfter(x: number, up: boolean): number {
  const dv = new DataView(new ArrayBuffer(8))
  if (x === 0) return up ? Number.MIN_VALUE : -Number.MIN_VALUE
  dv.setFloat64(0, x)
  let b = dv.getBigUint64(0)
  b = (x > 0) === up ? b + 1n : b - 1n
  dv.setBigUint64(0, b)
  return dv.getFloat64(0)
}

function isNearest(v: QSurd, x: number): boolean {
  const ex = QSurd.fromF64(x)
  const err = v.sub(ex)
  const abs = (q: QSurd): QSurd => (q.sign() < 0 ? q.neg() : q)
  for (const y of [nextAfter(x, true), nextAfter(x, false)]) {
    const e2 = v.sub(QSurd.fromF64(y))
    if (abs(e2).cmp(abs(err)) < 0) return false
  }
  return true
}

t.test('every float in a row is its exact value correctly rounded', async (t) => {
  let n = 0
  for (const def of LATTICE_TILINGS) {
    const g = latticeGeometry(def)
    const pairs: [QSurd, number][] = [
      [def.a1.x, g.a1[0]!], [def.a1.y, g.a1[1]!], [def.a2.x, g.a2[0]!], [def.a2.y, g.a2[1]!],
    ]
    def.tileTypes.forEach((tt, k) => tt.corners.forEach((c, i) => {
      pairs.push([c.x, g.tile_types[k]!.corners[i]![0]!], [c.y, g.tile_types[k]!.corners[i]![1]!])
    }))
    for (const [v, x] of pairs) {
      if (!isNearest(v, x)) t.fail(`${def.family}: ${v} written as ${x}`)
      n++
    }
  }
  t.ok(n > 50, `${n} coordinates checked`)
  // Spot values: √3/2 and 1 + √2 against the platform's correctly rounded sqrt.
  t.equal(QSurd.of(0, 1, 2, 3).toF64(), Math.sqrt(3) / 2)
  t.equal(findLatticeTiling('hex')!.a1.x.toF64(), Math.sqrt(3))
})

t.test('QSurd rounding is correct for many surds', async (t) => {
  for (const d of [2, 3, 5, 6, 7, 10, 11, 13, 15]) {
    t.equal(QSurd.of(0, 1, 1, d).toF64(), Math.sqrt(d), `√${d}`)
    for (const [p, q, r] of [[1, 1, 2], [-3, 2, 7], [5, -1, 4], [1, 1, 3], [-1, 3, 1000003], [123456789, 1, 1]] as const) {
      const v = QSurd.of(p, q, r, d)
      const x = v.toF64()
      if (!isNearest(v, x)) t.fail(`(${p} + ${q}√${d})/${r} rounded to ${x}`)
    }
  }
  t.equal(QSurd.rational(1, 3).toF64(), 1 / 3)
  t.equal(QSurd.rational(-22, 7).toF64(), -22 / 7)
  // A rational exactly halfway between two floats rounds to even.
  const half = QSurd.rational((1n << 53n) + 1n, 1n)
  t.equal(half.toF64(), 2 ** 53)
  t.equal(QSurd.rational((1n << 53n) + 3n, 1n).toF64(), 2 ** 53 + 4)
  t.ok(Object.is(QSurd.NEG_ZERO.toF64(), -0))
  t.ok(Object.is(QSurd.ZERO.toF64(), 0))
  t.ok(QSurd.NEG_ZERO.equals(QSurd.ZERO), '-0 equals 0 as a number')
  t.ok(Object.is(QSurd.NEG_ZERO.add(QSurd.ZERO).toF64(), 0), 'arithmetic never makes -0')
  // fromF64 is exact.
  for (const x of [0.1, -2.5, 1e-300, 123456.789, Math.PI]) t.equal(QSurd.fromF64(x).toF64(), x)
  // Signs of surds whose parts cancel nearly.
  t.equal(QSurd.of(-1414213562, 1000000000, 1, 2).sign(), 1)
  t.equal(QSurd.of(-1414213563, 1000000000, 1, 2).sign(), -1)
  t.throws(() => QSurd.of(1, 1, 1, 4), RangeError, 'a radicand that is not square-free is refused')
  t.throws(() => QSurd.of(0, 1, 1, 3).add(QSurd.of(0, 1, 1, 2)), RangeError)
})

t.test('pins of the catalogue are stable (regression anchors, not external vectors)', async (t) => {
  const pins = Object.fromEntries(latticeTilingRows().map((r) => [r.pin_key, r.pin]))
  t.same(pins, {
    hex: 'd99db4e85575085c17f97450b8d73681',
    oct: '88504e6425d507777f55b7a4364f4f7c',
    square: '0145310ebd49abfe89eb01c42ecaf459',
    tri: '99c2af53f165e95fb3cc48c25094f7eb',
    trihex: '2d645c4a9615758725bcb864a42e80d2',
  })
  // Computed twice, equal.
  t.same(latticeTilingRows(), latticeTilingRows())
})

t.test('checking a row read from a pack', async (t) => {
  const row = latticeTilingRow(findLatticeTiling('trihex')!)
  t.same(checkLatticeTilingRow(row).mismatches, [])

  const moved = structuredClone(row)
  moved.tile_types![1]!.corners[0]![0] = nextAfter(moved.tile_types![1]!.corners[0]![0]!, true)
  const m = checkLatticeTilingRow(moved).mismatches
  t.equal(m.length, 2, 'one ulp on one corner changes the polygon hash and the pin')
  t.match(m[0], /^polygon_hash/)
  t.match(m[1], /^pin/)

  const reordered = structuredClone(row)
  const l = reordered.touch![0]!
  ;[l[0], l[1]] = [l[1]!, l[0]!]
  const m2 = checkLatticeTilingRow(reordered).mismatches
  t.match(m2[0], /^neighbour_hash/, 'the cyclic order is part of the pin')

  const asymmetric = structuredClone(row)
  asymmetric.edge![0]!.pop()
  const c = checkLatticeTilingRow(asymmetric)
  t.ok(c.lint.some((s) => /does not list/.test(s)), 'a one-sided neighbour is reported')
  t.ok(c.lint.some((s) => /touch\[0\] does not/.test(s)) === false)

  // Parquet readers may give int64 columns as bigint and lists as typed arrays.
  const loose = structuredClone(row) as unknown as Record<string, unknown>
  loose.a1 = Float64Array.from(row.a1!)
  ;(loose.edge as { di: unknown }[][])[0]![0]!.di = BigInt(row.edge![0]![0]!.di)
  t.same(checkLatticeTilingRow(loose).mismatches, [])
})

import t from 'tap'
import { GEOMETRY_CODES, QSurd, lintReferencePatch, patchHashes, type ReferencePatchRow } from '../src/formats/pack/geometry/geometry.js'
import {
  DART,
  KITE,
  PENROSE_KD_FAMILY,
  PENROSE_REFERENCE_LEVEL,
  PHI,
  PHI_INV,
  Z5,
  deflate,
  penrosePatch,
  penroseReference,
  penroseTilingsRow,
  phiPow,
  sunSeed,
  unit10,
} from '../src/formats/pack/geometry/penrose.js'
import { checkAperiodicTilingRow } from '../src/formats/pack/geometry/tilings.js'

const phi = (1 + Math.sqrt(5)) / 2
const fib = (n: number): number => {
  let a = 0
  let b = 1
  for (let i = 0; i < n; i++) [a, b] = [b, a + b]
  return a
}

const ref = penroseReference()
const rows = ref.patch.rows

// -----------------------------------------------------------------------------------------------------------
// Exact numbers
// -----------------------------------------------------------------------------------------------------------

t.test('Z[ζ] arithmetic', async (t) => {
  t.ok(PHI.mul(PHI_INV).equals(Z5.ONE), 'φ · 1/φ = 1')
  t.ok(PHI.mul(PHI).equals(PHI.add(Z5.ONE)), 'φ² = φ + 1')
  t.ok(phiPow(5).mul(phiPow(-5)).equals(Z5.ONE))
  let z = Z5.ONE
  for (let i = 0; i < 10; i++) z = z.mul(unit10(1))
  t.ok(z.equals(Z5.ONE), 'a tenth root of unity')
  t.ok(unit10(5).equals(Z5.ONE.neg()))
  for (let m = 0; m < 10; m++) {
    const u = unit10(m)
    t.ok(Math.abs(u.x() - Math.cos((Math.PI * m) / 5)) < 1e-15, `cos 36°·${m}`)
    t.ok(Math.abs(u.y() - Math.sin((Math.PI * m) / 5)) < 1e-15, `sin 36°·${m}`)
    t.ok(u.mul(u.conj()).equals(Z5.ONE), '|u| = 1')
  }
  t.equal(PHI.x(), phi)
  t.ok(Object.is(PHI.y(), 0))
})

/** For y > 0 irrational: x is its nearest float iff the midpoints to x's neighbours enclose y (compared squared). */
function yIsNearest(z: Z5, x: number): boolean {
  const [, b, c, d] = z.c
  // y² = (10 - 2√5)(u + v√5)² / 64
  const u = BigInt(b + 2 * c - 2 * d)
  const v = BigInt(b)
  const A = u * u + 5n * v * v
  const B = 2n * u * v
  const y2 = QSurd.of(10n * A - 10n * B, 10n * B - 2n * A, 64n, 5)
  const up = new Float64Array([x])
  const bits = new BigUint64Array(up.buffer)
  bits[0] = bits[0]! + 1n
  const xUp = up[0]!
  bits[0] = bits[0]! - 2n
  const xDown = up[0]!
  const mid = (a: number, b2: number): QSurd => QSurd.fromF64(a).add(QSurd.fromF64(b2)).mul(QSurd.rational(1, 2))
  const lo = mid(xDown, x)
  const hi = mid(x, xUp)
  return lo.mul(lo).cmp(y2) <= 0 && y2.cmp(hi.mul(hi)) <= 0
}

t.test('coordinates are the exact values correctly rounded', async (t) => {
  let checked = 0
  for (const tile of ref.patch.tiles.slice(0, 400)) {
    for (const c of tile.corners) {
      const y = c.y()
      if (y > 0) {
        if (!yIsNearest(c, y)) t.fail(`y of ${c.key()} is ${y}`)
        checked++
      }
      const x = c.x()
      const ex = c.re()
      const err = ex.sub(QSurd.fromF64(x))
      const abs = (q: QSurd): QSurd => (q.sign() < 0 ? q.neg() : q)
      for (const other of [x + Math.abs(x) * 2.3e-16 + Number.MIN_VALUE, x - Math.abs(x) * 2.3e-16 - Number.MIN_VALUE]) {
        if (abs(ex.sub(QSurd.fromF64(other))).cmp(abs(err)) < 0) t.fail(`x of ${c.key()} is ${x}`)
      }
    }
  }
  t.ok(checked > 200, `${checked} y coordinates checked`)
})

// -----------------------------------------------------------------------------------------------------------
// Growth
// -----------------------------------------------------------------------------------------------------------

t.test('half-tile counts are Fibonacci numbers at every level', async (t) => {
  let halves = sunSeed(10)
  for (let n = 0; n <= 10; n++) {
    const k = halves.filter((h) => h.kind === 'kite').length
    const d = halves.length - k
    t.equal(k, 10 * fib(2 * n + 1), `level ${n}: half-kites 10·F(${2 * n + 1})`)
    t.equal(d, 10 * fib(2 * n), `level ${n}: half-darts 10·F(${2 * n})`)
    if (n < 10) halves = deflate(halves)
  }
})

t.test('whole tiles grow by φ² and their ratio tends to φ', async (t) => {
  const counts: { k: number; d: number }[] = []
  for (let n = 0; n <= PENROSE_REFERENCE_LEVEL; n++) {
    const p = n === PENROSE_REFERENCE_LEVEL ? ref.patch : penrosePatch(n)
    const k = p.tiles.filter((x) => x.shape === KITE).length
    const d = p.tiles.length - k
    t.equal(2 * k + p.unpaired.kite, p.halfCounts.kite, `level ${n}: every half-kite is in a whole kite or left out`)
    t.equal(2 * d + p.unpaired.dart, p.halfCounts.dart, `level ${n}: the same for darts`)
    t.equal(p.rows.length, p.tiles.length)
    counts.push({ k, d })
  }
  t.same(counts[0], { k: 5, d: 0 }, 'level 0 is the sun')
  t.same(counts[1], { k: 10, d: 5 }, 'level 1 is a star ringed by ten kites')
  t.same(counts[2], { k: 25, d: 10 }, 'level 2 has a sun at its centre again')
  const top = counts[PENROSE_REFERENCE_LEVEL]!
  t.ok(Math.abs(top.k / top.d - phi) < 0.02, `kites/darts = ${(top.k / top.d).toFixed(4)}, near φ`)
  const total = (c: { k: number; d: number }): number => c.k + c.d
  const g = total(top) / total(counts[PENROSE_REFERENCE_LEVEL - 1]!)
  t.ok(Math.abs(g - phi * phi) < 0.03, `tiles grow by ${g.toFixed(4)} per level, near φ²`)
  t.equal(total(top), 4885, 'the reference patch has 4,885 tiles')
})

// -----------------------------------------------------------------------------------------------------------
// Geometry, edge to edge, matching rules — from the float rows alone
// -----------------------------------------------------------------------------------------------------------

const key = (p: readonly number[]): string => `${p[0]},${p[1]}`
const dist = (a: readonly number[], b: readonly number[]): number => Math.hypot(a[0]! - b[0]!, a[1]! - b[1]!)
const area = (c: readonly (readonly number[])[]): number => {
  let s = 0
  c.forEach((p, i) => {
    const q = c[(i + 1) % c.length]!
    s += p[0]! * q[1]! - p[1]! * q[0]!
  })
  return s / 2
}
/** Interior angle at corner i of a clockwise (y-down) polygon, in units of 36°. */
function angleAt(c: readonly (readonly number[])[], i: number): number {
  const p = c[i]!
  const a = c[(i + c.length - 1) % c.length]!
  const b = c[(i + 1) % c.length]!
  const v1 = [a[0]! - p[0]!, a[1]! - p[1]!]
  const v2 = [b[0]! - p[0]!, b[1]! - p[1]!]
  // angle from v2 to v1 turning clockwise on screen (the inside of a clockwise polygon)
  let ang = Math.atan2(v1[1]!, v1[0]!) - Math.atan2(v2[1]!, v2[0]!)
  while (ang <= 0) ang += 2 * Math.PI
  return (ang * 5) / Math.PI
}

const ROLE = ['head', 'wing', 'tail', 'wing'] as const
const ANGLES = { [KITE]: [2, 2, 4, 2], [DART]: [2, 1, 6, 1] } as Record<number, number[]>
const LENGTHS = [phi, 1, 1, phi]
/** The matching rule as a vertex colouring: kite head and tail, and dart wings, are one colour; the rest the other. */
const colour = (shape: number, corner: number): string => {
  const r = ROLE[corner]!
  if (shape === KITE) return r === 'wing' ? 'W' : 'B'
  return r === 'wing' ? 'B' : 'W'
}
/** The seven legal vertex stars of a kite-and-dart tiling. */
const LEGAL: Record<string, string> = {
  'kh,kh,kh,kh,kh': 'sun',
  'dh,dh,dh,dh,dh': 'star',
  'dt,kw,kw': 'ace',
  'dw,dw,kt,kt': 'deuce',
  'dw,dw,kh,kh,kt': 'jack',
  'dh,kw,kw,kw,kw': 'queen',
  'dh,dh,dh,kw,kw': 'king',
}
const code = (shape: number, corner: number): string => `${shape === KITE ? 'k' : 'd'}${ROLE[corner]![0]}`

interface VertexInfo {
  corners: { tile: number; corner: number }[]
  angle: number
}

function vertices(rs: readonly ReferencePatchRow[]): Map<string, VertexInfo> {
  const m = new Map<string, VertexInfo>()
  rs.forEach((r, i) => r.corners.forEach((c, ci) => {
    const k = key(c)
    let v = m.get(k)
    if (!v) m.set(k, (v = { corners: [], angle: 0 }))
    v.corners.push({ tile: i, corner: ci })
    v.angle += angleAt(r.corners, ci)
  }))
  return m
}

/** Problems with the matching rules in a set of rows. */
function matchingProblems(rs: readonly ReferencePatchRow[]): string[] {
  const out: string[] = []
  for (const [k, v] of vertices(rs)) {
    const cols = new Set(v.corners.map((c) => colour(rs[c.tile]!.shape, c.corner)))
    if (cols.size > 1) out.push(`vertex ${k}: corners of both colours`)
    if (Math.abs(v.angle - Math.round(v.angle)) > 1e-9 || v.angle > 10 + 1e-9) out.push(`vertex ${k}: angles add up to ${v.angle * 36}°`)
  }
  return out
}

t.test('tiles are kites and darts of the right shape, clockwise', async (t) => {
  let bad = 0
  rows.forEach((r) => {
    if (r.corners.length !== 4) bad++
    if (!(area(r.corners) > 0)) bad++
    r.corners.forEach((c, i) => {
      if (Math.abs(dist(c, r.corners[(i + 1) % 4]!) - LENGTHS[i]!) > 1e-12) bad++
      if (Math.abs(angleAt(r.corners, i) - ANGLES[r.shape]![i]!) > 1e-9) bad++
    })
  })
  t.equal(bad, 0, 'side lengths φ, 1, 1, φ; angles 72 72 144 72 (kite) and 72 36 216 36 (dart)')
  t.same([...new Set(rows.map((r) => r.shape))].sort(), [KITE, DART])
})

t.test('no gaps and no overlaps: the tiles and the halves left out fill the sun', async (t) => {
  const s36 = Math.sin(Math.PI / 5)
  const kiteArea = phi * phi * s36
  const dartArea = Math.sin((3 * Math.PI) / 5)
  const level = PENROSE_REFERENCE_LEVEL
  const sun = 5 * kiteArea * phi ** (2 * level)
  const tiles = rows.reduce((s, r) => s + area(r.corners), 0)
  const left = (ref.patch.unpaired.kite * kiteArea + ref.patch.unpaired.dart * dartArea) / 2
  t.ok(Math.abs(tiles + left - sun) / sun < 1e-9, `${tiles + left} = ${sun}`)
})

t.test('kites and darts meet edge to edge and obey the matching rules', async (t) => {
  t.same(matchingProblems(rows), [], 'one colour at every vertex; no vertex over 360°')
  const vs = vertices(rows)
  // Every edge is shared by at most two tiles, of one length; interior edges by exactly two.
  const edges = new Map<string, { tiles: number; len: number[] }>()
  rows.forEach((r) => r.corners.forEach((c, i) => {
    const d = r.corners[(i + 1) % 4]!
    const k = [key(c), key(d)].sort().join('|')
    let e = edges.get(k)
    if (!e) edges.set(k, (e = { tiles: 0, len: [] }))
    e.tiles++
    e.len.push(dist(c, d))
  }))
  let badEdges = 0
  let interiorUnshared = 0
  for (const [k, e] of edges) {
    if (e.tiles > 2 || (e.tiles === 2 && Math.abs(e.len[0]! - e.len[1]!) > 1e-12)) badEdges++
    const [a, b] = k.split('|')
    const full = (x: string): boolean => Math.abs(vs.get(x)!.angle - 10) < 1e-9
    if (e.tiles === 1 && full(a!) && full(b!)) interiorUnshared++
  }
  t.equal(badEdges, 0)
  t.equal(interiorUnshared, 0, 'an edge between two interior vertices always has a tile on each side')
  // Every interior vertex is one of the seven legal vertex stars.
  const seen: Record<string, number> = {}
  let illegal = 0
  for (const v of vs.values()) {
    if (Math.abs(v.angle - 10) > 1e-9) continue
    const star = v.corners.map((c) => code(rows[c.tile]!.shape, c.corner)).sort().join(',')
    const name = LEGAL[star]
    if (!name) illegal++
    else seen[name] = (seen[name] ?? 0) + 1
  }
  t.equal(illegal, 0, 'every interior vertex is a sun, star, ace, deuce, jack, queen or king')
  t.same(Object.keys(seen).sort(), ['ace', 'deuce', 'jack', 'king', 'queen', 'star', 'sun'], 'all seven appear')
})

t.test('the matching-rule check can fail: a kite and a dart made into a rhombus', async (t) => {
  // A kite with its head at the origin pointing along +x, and a dart whose notch takes the kite's tail.
  const s36 = Math.sin(Math.PI / 5)
  const c36 = Math.cos(Math.PI / 5)
  const kite = [[0, 0], [phi * c36, phi * s36], [phi, 0], [phi * c36, -phi * s36]].map(([x, y]) => [x!, y!])
  // Reflect the kite through the line of its wings: a dart with the same wings and tail point.
  const dart = [[2 * phi * c36, 0], [phi * c36, -phi * s36], [phi, 0], [phi * c36, phi * s36]].map(([x, y]) => [x!, y!])
  const mk = (shape: number, corners: number[][]): ReferencePatchRow => ({ tile: 0, shape, corners, edge: [], touch: [], open: true })
  const probs = matchingProblems([mk(KITE, kite), mk(DART, dart)])
  t.ok(probs.length > 0, probs.join('; '))
})

// -----------------------------------------------------------------------------------------------------------
// Neighbours, open flags, order — recomputed from the float rows
// -----------------------------------------------------------------------------------------------------------

t.test('neighbour lists, recomputed from coordinates, in the spec cyclic order', async (t) => {
  t.same(lintReferencePatch(rows), [], 'symmetric, each once, edge within touch')
  const vs = vertices(rows)
  const centres = rows.map((r) => [r.corners.reduce((s, c) => s + c[0]!, 0) / 4, r.corners.reduce((s, c) => s + c[1]!, 0) / 4])
  let wrongEdge = 0
  let wrongTouch = 0
  rows.forEach((r, i) => {
    const shared = new Map<number, number[]>()
    r.corners.forEach((c, ci) => {
      for (const o of vs.get(key(c))!.corners) if (o.tile !== i) shared.set(o.tile, [...(shared.get(o.tile) ?? []), ci])
    })
    const found: { tile: number; pos: number; edge: boolean; corner: number }[] = []
    for (const [u, cs] of shared) {
      const edgeAt = cs.find((c) => cs.includes((c + 1) % 4))
      if (edgeAt !== undefined) found.push({ tile: u, pos: edgeAt + 0.5, edge: true, corner: -1 })
      else found.push({ tile: u, pos: cs[0]!, edge: false, corner: cs[0]! })
    }
    const me = centres[i]!
    const rel = (u: number, corner: number): number => {
      const p = r.corners[corner]!
      const ref0 = Math.atan2(p[1]! - me[1]!, p[0]! - me[0]!)
      const c = centres[u]!
      let a = Math.atan2(c[1]! - me[1]!, c[0]! - me[0]!) - ref0
      while (a <= -Math.PI) a += 2 * Math.PI
      while (a > Math.PI) a -= 2 * Math.PI
      return a
    }
    found.sort((a, b) => a.pos - b.pos || rel(a.tile, a.corner) - rel(b.tile, b.corner))
    const edge = found.filter((f) => f.edge).map((f) => f.tile)
    const touch = found.map((f) => f.tile)
    if (JSON.stringify(edge) !== JSON.stringify(r.edge)) wrongEdge++
    if (JSON.stringify(touch) !== JSON.stringify(r.touch)) wrongTouch++
  })
  t.equal(wrongEdge, 0, 'edge lists')
  t.equal(wrongTouch, 0, 'touch lists')
  const interior = rows.filter((r) => !r.open)
  t.ok(interior.every((r) => r.edge.length === 4), 'a tile inside the patch has four edge neighbours')
  const degrees = new Set(interior.map((r) => r.touch.length))
  t.ok([...degrees].every((d) => d >= 8 && d <= 13), `touch degrees inside: ${[...degrees].sort().join(' ')}`)
})

t.test('open flags: tiles with a corner on the patch boundary', async (t) => {
  const vs = vertices(rows)
  const count = new Map<string, number>()
  rows.forEach((r) => r.corners.forEach((c, i) => {
    const k = [key(c), key(r.corners[(i + 1) % 4]!)].sort().join('|')
    count.set(k, (count.get(k) ?? 0) + 1)
  }))
  const boundary = new Set<string>()
  for (const [k, n] of count) if (n === 1) for (const v of k.split('|')) boundary.add(v)
  let wrong = 0
  rows.forEach((r) => {
    if (r.open !== r.corners.some((c) => boundary.has(key(c)))) wrong++
  })
  t.equal(wrong, 0)
  // Equivalently: an open tile has a corner whose angles do not add up to 360°.
  rows.forEach((r) => {
    const partial = r.corners.some((c) => Math.abs(vs.get(key(c))!.angle - 10) > 1e-9)
    if (partial !== r.open) wrong++
  })
  t.equal(wrong, 0)
  const open = rows.filter((r) => r.open).length
  t.ok(open > 0 && open < rows.length / 5, `${open} open tiles`)
})

t.test('rows are numbered by distance from the centre, then clockwise from +x', async (t) => {
  t.ok(rows.every((r, i) => r.tile === i))
  const c = rows.map((r) => [r.corners.reduce((s, p) => s + p[0]!, 0) / 4, r.corners.reduce((s, p) => s + p[1]!, 0) / 4])
  let bad = 0
  for (let i = 1; i < c.length; i++) {
    const [a, b] = [c[i - 1]!, c[i]!]
    const da = Math.hypot(a[0]!, a[1]!)
    const db = Math.hypot(b[0]!, b[1]!)
    if (db < da - 1e-9) bad++
    if (Math.abs(db - da) < 1e-9) {
      const ang = (p: number[]): number => (Math.atan2(p[1]!, p[0]!) + 2 * Math.PI) % (2 * Math.PI)
      if (ang(b) < ang(a) - 1e-9) bad++
    }
  }
  t.equal(bad, 0)
  // An odd level has a star at its centre: five darts with their heads at the origin come first.
  t.equal(PENROSE_REFERENCE_LEVEL % 2, 1)
  t.same(rows.slice(0, 5).map((r) => r.shape), [DART, DART, DART, DART, DART])
  for (const r of rows.slice(0, 5)) t.same(r.corners[0], [0, 0])
  // And an even level a sun of five kites.
  const even = penrosePatch(4).rows
  t.same(even.slice(0, 5).map((r) => r.shape), [KITE, KITE, KITE, KITE, KITE])
})

// -----------------------------------------------------------------------------------------------------------
// The pin
// -----------------------------------------------------------------------------------------------------------

t.test('the pin is stable and covers every tile', async (t) => {
  const again = penrosePatch(PENROSE_REFERENCE_LEVEL)
  t.same(again.rows, rows, 'built twice, the same rows')
  const h1 = patchHashes(rows)
  const h2 = patchHashes(again.rows)
  t.same(h1, h2)
  t.same(h1, ref.hashes)
  t.equal(h1.pin, '30e655ad84f04d3770862b9919b3027a', 'regression anchor')

  const moved = structuredClone(again.rows)
  const tile = moved[1234]!
  tile.corners = tile.corners.map(([x, y]) => [x! + 0.25, y!])
  const hm = patchHashes(moved)
  t.not(hm.polygon_hash, h1.polygon_hash, 'moving one tile changes the polygon hash')
  t.equal(hm.neighbour_hash, h1.neighbour_hash)
  t.not(hm.pin, h1.pin, 'and the pin')

  const ulp = structuredClone(again.rows)
  const c0 = ulp[77]!.corners[2]!
  const f = new Float64Array([c0[1]!])
  new BigUint64Array(f.buffer)[0]! += 1n
  t.not(f[0], c0[1])
  c0[1] = f[0]!
  t.not(patchHashes(ulp).pin, h1.pin, 'one ulp on one corner changes the pin')

  const reshaped = structuredClone(again.rows)
  reshaped[10]!.shape = 1 - reshaped[10]!.shape
  t.not(patchHashes(reshaped).pin, h1.pin, 'the shape index is part of the pin')

  const opened = structuredClone(again.rows)
  opened[0]!.open = !opened[0]!.open
  const ho = patchHashes(opened)
  t.equal(ho.polygon_hash, h1.polygon_hash)
  t.not(ho.neighbour_hash, h1.neighbour_hash, 'the open flag is part of the neighbour hash')

  const reordered = structuredClone(again.rows)
  reordered[0]!.touch.reverse()
  t.not(patchHashes(reordered).neighbour_hash, h1.neighbour_hash, 'neighbour order is part of the pin')

  t.not(patchHashes(penrosePatch(PENROSE_REFERENCE_LEVEL - 1).rows).pin, h1.pin, 'another level, another pin')
})

t.test('the tilings row and checking it against the patch', async (t) => {
  const refHash = 'sha256:' + 'ab'.repeat(32)
  const row = penroseTilingsRow(refHash)
  t.equal(row.kind, 'aperiodic')
  t.equal(row.family, PENROSE_KD_FAMILY)
  t.equal(row.pin_key, 'penrose-kd')
  t.equal(row.tiling_group, 'penrose-kd')
  t.equal(row.reference, refHash)
  t.equal(row.reference_level, PENROSE_REFERENCE_LEVEL)
  t.equal(row.reference_tiles, rows.length)
  t.equal(row.pin, ref.hashes.pin)
  for (const k of ['a1', 'a2', 'tile_types', 'edge', 'touch', 'params', 'edges'] as const) t.equal(row[k], null, `${k} is null`)
  t.equal(penroseTilingsRow(null).reference, null)
  t.throws(() => penroseTilingsRow('sha256:XYZ'), { code: GEOMETRY_CODES.malformed })

  const ok = checkAperiodicTilingRow(row, rows)
  t.same(ok.mismatches, [])
  t.same(ok.lint, [])

  const moved = structuredClone(rows)
  moved[3]!.corners[0]![0] = 0.5
  const bad = checkAperiodicTilingRow(row, moved)
  t.match(bad.mismatches.join('\n'), /polygon_hash[\s\S]*pin/)
})

t.test('hostile reference patches are refused before anything is allocated', async (t) => {
  const row = penroseTilingsRow(null)
  // A count beyond the limits is refused before the rows are touched.
  const untouchable = new Proxy([], { get: () => { throw new Error('rows were read') } })
  t.throws(() => checkAperiodicTilingRow({ ...row, reference_tiles: 2 ** 31 - 1 }, untouchable), { code: GEOMETRY_CODES.limit })
  t.throws(() => checkAperiodicTilingRow({ ...row, reference_tiles: -5 }, untouchable), { code: GEOMETRY_CODES.malformed })
  t.throws(() => checkAperiodicTilingRow({ ...row, reference_tiles: 1.5 }, untouchable), { code: GEOMETRY_CODES.malformed })
  // A patch longer than the limit is refused by its length alone.
  const huge = new Array(2_000_000)
  t.throws(() => checkAperiodicTilingRow({ ...row, reference_tiles: 1_000_000 }, huge), { code: GEOMETRY_CODES.limit })
  // A row count that differs from reference_tiles.
  t.throws(() => checkAperiodicTilingRow({ ...row, reference_tiles: rows.length - 1 }, rows), { code: GEOMETRY_CODES.malformed })

  const tamper = (f: (r: Record<string, unknown>[]) => void): unknown[] => {
    const c = structuredClone(rows) as unknown as Record<string, unknown>[]
    f(c)
    return c
  }
  const cases: [string, (r: Record<string, unknown>[]) => void, string][] = [
    ['a neighbour index outside the patch', (r) => ((r[5]!.touch as number[])[0] = rows.length), GEOMETRY_CODES.malformed],
    ['a negative neighbour index', (r) => ((r[5]!.edge as number[])[0] = -1), GEOMETRY_CODES.malformed],
    ['rows out of tile order', (r) => ([r[3], r[4]] = [r[4]!, r[3]!]), GEOMETRY_CODES.malformed],
    ['a NaN corner', (r) => ((r[9]!.corners as number[][])[1]![0] = NaN), GEOMETRY_CODES.malformed],
    ['an infinite corner', (r) => ((r[9]!.corners as number[][])[1]![1] = Infinity), GEOMETRY_CODES.malformed],
    ['a corner with three coordinates', (r) => ((r[9]!.corners as number[][])[1] = [1, 2, 3]), GEOMETRY_CODES.malformed],
    ['a tile with two corners', (r) => (r[9]!.corners = [[0, 0], [1, 1]]), GEOMETRY_CODES.malformed],
    ['a tile with a million corners', (r) => (r[9]!.corners = new Array(1_000_000)), GEOMETRY_CODES.limit],
    ['a touch list of a million', (r) => (r[9]!.touch = new Array(1_000_000)), GEOMETRY_CODES.limit],
    ['a negative shape', (r) => (r[9]!.shape = -1), GEOMETRY_CODES.malformed],
    ['open as a number', (r) => (r[9]!.open = 1), GEOMETRY_CODES.malformed],
    ['a row that is not a struct', (r) => (r[9] = 'tile' as unknown as Record<string, unknown>), GEOMETRY_CODES.malformed],
  ]
  for (const [name, f, code] of cases) {
    t.throws(() => checkAperiodicTilingRow(row, tamper(f)), { code }, name)
  }
  // bigint integers (another integer width) are read as numbers.
  const wide = tamper((r) => {
    r[0]!.tile = 0n
    r[0]!.touch = (r[0]!.touch as number[]).map((x) => BigInt(x))
  })
  t.same(checkAperiodicTilingRow(row, wide).mismatches, [])
  // Level limits of the builder.
  t.throws(() => penrosePatch(99), { code: GEOMETRY_CODES.limit })
  t.throws(() => penrosePatch(-1), { code: GEOMETRY_CODES.limit })
  t.throws(() => penrosePatch(1.5), { code: GEOMETRY_CODES.limit })
})

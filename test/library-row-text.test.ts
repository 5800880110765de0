/**
 * The library's row text (row-text.ts rowText) against an independent RFC 8785 implementation (the
 * canonicalize package): byte for byte on random rows of every kind of cell, and on every row of the
 * golden stores.
 */
import canonicalize from 'canonicalize'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { PackChecker } from '../src/formats/pack/check/check.js'
import { rowText } from '../src/library/row-text.js'
import { seededRandom } from '../src/sim/random.js'

/** What rowText means by a bigint, in the form canonicalize takes: a number within ±(2^53 − 1), else its decimal string. */
function jsonable(v: unknown): unknown {
  if (typeof v === 'bigint') return v >= -(2n ** 53n) + 1n && v <= 2n ** 53n - 1n ? Number(v) : v.toString()
  if (Array.isArray(v)) return v.map(jsonable)
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonable(x)]))
  return v
}

t.test('random rows: the same bytes as canonicalize', async (t) => {
  const rand = seededRandom(27)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!
  const strings = ['', 'a', 'B3/S23', 'é', '\u00e9\u0301', '😀', '\u2028', '"quoted"\\', '\u0000\u001f', 'z'.repeat(40), '\ud800', 'Ω≈ç√']
  const numbers = [0, -0, 1, -1, 0.1, 1e21, 1e-7, 123456789.125, -2.5e-300, Number.MAX_SAFE_INTEGER, 5e-324, 1.7976931348623157e308]
  const bigints = [0n, 1n, -1n, 2n ** 53n - 1n, -(2n ** 53n) + 1n, 2n ** 53n, -(2n ** 53n), 2n ** 63n - 1n, -(2n ** 63n)]
  const keys = ['id', 'a', 'B', 'é', '😀', 'z', '\u00e9', '_', '10', '9', 'phases', 'ﬀ']
  const value = (depth: number): unknown => {
    const kind = Math.floor(rand() * (depth > 3 ? 5 : 7))
    switch (kind) {
      case 0: return pick(strings)
      case 1: return pick(numbers)
      case 2: return pick(bigints)
      case 3: return rand() < 0.5
      case 4: return null
      case 5: return Array.from({ length: Math.floor(rand() * 5) }, () => value(depth + 1))
      default: return Object.fromEntries(Array.from({ length: Math.floor(rand() * 6) }, () => [pick(keys), value(depth + 1)]))
    }
  }
  let checked = 0
  for (let n = 0; n < 5_000; n++) {
    const row = Object.fromEntries(Array.from({ length: 1 + Math.floor(rand() * 8) }, () => [pick(keys), value(0)]))
    let want: string | undefined
    try {
      want = canonicalize(jsonable(row))
    } catch {
      // A lone surrogate: canonicalize refuses it, and so must rowText.
      t.throws(() => rowText(row), { code: 'import.row-not-json' })
      checked++
      continue
    }
    if (rowText(row) !== want) {
      t.equal(rowText(row), want, JSON.stringify(jsonable(row)))
      return
    }
    checked++
  }
  t.equal(checked, 5_000, 'every one the same')
  t.throws(() => rowText({ x: Number.NaN }), { code: 'import.row-not-json' })
  t.throws(() => rowText({ x: new Uint8Array(2) }), { code: 'import.row-not-json' })
})

t.test('every row of the golden stores: the same bytes as canonicalize', async (t) => {
  for (const name of ['minimal', 'media', 'ants', 'aperiodic', 'searches', 'merge', 'retraction']) {
    const store = fileURLToPath(new URL(`./golden/${name}/store`, import.meta.url))
    const { partRowsOrRefuse } = await import('../src/formats/pack/tables/parquet-read.js')
    const { PACK_TABLES } = await import('../src/formats/pack/tables/table-schemas.js')
    const { walkTableIndex } = await import('../src/formats/pack/documents/index-walk.js')
    const { chooseManifest } = await import('../src/formats/pack/export/export.js')
    const { objectPath, storeFile, storeIndexLoader } = await import('../src/formats/pack/documents/store.js')
    const checker = new PackChecker(store, { level: 0 })
    for await (const _ of checker.run()) void _
    const { manifest } = await chooseManifest(store, {})
    let rows = 0
    let differ = 0
    for (const [table, root] of Object.entries(manifest.tables)) {
      const schema = (PACK_TABLES as Record<string, (typeof PACK_TABLES)[keyof typeof PACK_TABLES]>)[table]
      if (!schema) continue
      for await (const e of walkTableIndex(root, storeIndexLoader(store), { table })) {
        if (e.kind !== 'part') continue
        for await (const row of partRowsOrRefuse(storeFile(store, objectPath(e.part.object, 'parquet')), schema, table)) {
          rows++
          if (rowText(row) !== canonicalize(jsonable(row))) differ++
        }
      }
    }
    t.ok(rows > 0, `${name}: ${rows} rows`)
    t.equal(differ, 0, `${name}: every row the same`)
  }
})

import t from 'tap'
import { objectHash, refusal, writePackJson } from '../src/formats/pack/documents/documents.js'
import { INDEX_CODES, buildSearchIndex, buildTableIndex, type SearchIndexInput, type TablePart } from '../src/formats/pack/documents/doc-index.js'
import { MAX_INDEX_LEVELS, WALK_CODES as W, countPartBytes, walkSearchIndex, walkTableIndex, type IndexLoader } from '../src/formats/pack/documents/index-walk.js'

const T0 = '2026-11-11T00:00:00Z'
const UUID = '0b6c2f9e-5d1a-4c3b-9a8e-7f6d5c4b3a21'
const h = (n: number) => objectHash(Buffer.from(`part ${n}`))
const part = (n: number, over: Partial<TablePart> = {}): TablePart => ({ bytes: 100 + n, first: 'a', last: 'z', object: h(n), partition: { tiling_group: 'square' }, rows: n, ...over })

/** An in-memory store of index objects; `loads` counts every load by hash. */
class Indexes {
  readonly bytes = new Map<string, Uint8Array>()
  readonly loads: string[] = []
  readonly loader: IndexLoader = async (hash) => {
    this.loads.push(hash)
    return this.bytes.get(hash) ?? refusal('pack.object-missing', `no index ${hash}`)
  }

  table(parts: TablePart[], children: string[] = [], table = 'patterns', schema = `jetcarp-${table} 1`): string {
    const built = buildTableIndex({ table, schema, parts, children })
    this.bytes.set(built.hash, built.bytes)
    return built.hash
  }

  /** Stores an index under a hash that is not its own: what only a lying loader can serve (cycles). */
  tableAs(hash: string, parts: TablePart[], children: string[]): void {
    this.bytes.set(hash, writePackJson({ children, format: 'jetcarp-index', parts, schema: 'jetcarp-patterns 1', table: 'patterns', version: '1.0' }))
  }
}

async function collect<T>(events: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const e of events) out.push(e)
  return out
}

async function walkCode(events: AsyncIterable<unknown>): Promise<string> {
  try {
    await collect(events)
    return 'ok'
  } catch (err) {
    return (err as { code?: string }).code ?? String(err)
  }
}

const partsOf = (events: { kind: string; part?: TablePart }[]) => events.flatMap((e) => (e.kind === 'part' ? [e.part!.rows] : []))

t.test('parts in export order: own parts first, then children depth first', async (t) => {
  const s = new Indexes()
  const c = s.table([part(4)])
  const a = s.table([part(3)], [c])
  const b = s.table([part(5)])
  const root = s.table([part(1), part(2)], [a, b])
  const events = await collect(walkTableIndex(root, s.loader, { table: 'patterns' }))
  t.same(partsOf(events), [1, 2, 3, 4, 5])
  t.same(events.filter((e) => e.kind === 'index').map((e) => e.kind === 'index' && [e.hash, e.level]), [[root, 1], [a, 2], [c, 3], [b, 2]])
  t.same(s.loads, [root, a, c, b])
})

t.test('an index reached twice is read once; a part listed twice counts once', async (t) => {
  const s = new Indexes()
  const shared = s.table([part(3)])
  const a = s.table([part(1), part(2)], [shared])
  const b = s.table([part(2), part(4)], [shared, shared])
  const root = s.table([part(1)], [a, b, a])
  const events = await collect(walkTableIndex(root, s.loader, { table: 'patterns' }))
  t.same(partsOf(events), [1, 2, 3, 4])
  t.same(s.loads, [root, a, shared, b], 'each index loaded once')

  const conflicting = new Indexes()
  const child = conflicting.table([part(1, { bytes: 999 })])
  const top = conflicting.table([part(1)], [child])
  t.equal(await walkCode(walkTableIndex(top, conflicting.loader, { table: 'patterns' })), W.partConflict, 'the same object listed with another size')
  const other = new Indexes()
  const moved = other.table([part(1, { partition: { tiling_group: 'hex' } })])
  t.equal(await walkCode(walkTableIndex(other.table([part(1)], [moved]), other.loader, { table: 'patterns' })), W.partConflict, 'or in another partition')
})

t.test('at most 8 levels: a 9th is refused before it is loaded', async (t) => {
  const chain = (levels: number) => {
    const s = new Indexes()
    let hash = s.table([part(levels)])
    for (let level = levels - 1; level >= 1; level--) hash = s.table([part(level)], [hash])
    return { s, root: hash }
  }
  const eight = chain(MAX_INDEX_LEVELS)
  const events = await collect(walkTableIndex(eight.root, eight.s.loader, { table: 'patterns' }))
  t.same(partsOf(events), [1, 2, 3, 4, 5, 6, 7, 8], '8 levels')
  const nine = chain(9)
  t.equal(await walkCode(walkTableIndex(nine.root, nine.s.loader, { table: 'patterns' })), W.tooDeep, '9 levels')
  t.equal(nine.s.loads.length, 8, 'the 9th level was never loaded')

  // An index first reached near the root and listed again at level 8 is a repeat, not a 9th level.
  const s = new Indexes()
  const shared = s.table([part(100)])
  let deep = s.table([part(8)], [shared])
  for (let level = 7; level >= 2; level--) deep = s.table([part(level)], [deep])
  const root = s.table([part(1)], [shared, deep])
  t.equal(await walkCode(walkTableIndex(root, s.loader, { table: 'patterns' })), 'ok')
})

t.test('an index that lists its own ancestor is a cycle, seen before loading it', async (t) => {
  const s = new Indexes()
  const [r, a, b] = [h(1000), h(1001), h(1002)]
  s.tableAs(r, [part(1)], [a])
  s.tableAs(a, [part(2)], [b])
  s.tableAs(b, [part(3)], [r])
  t.equal(await walkCode(walkTableIndex(r, s.loader, { table: 'patterns' })), W.cycle)
  t.same(s.loads, [r, a, b], 'the ancestor was not loaded again')
  const self = new Indexes()
  self.tableAs(a, [part(1)], [a])
  t.equal(await walkCode(walkTableIndex(a, self.loader, { table: 'patterns' })), W.cycle, 'an index listing itself')
})

t.test('every index of a tree names the same table and schema', async (t) => {
  const s = new Indexes()
  const rules = s.table([part(1)], [], 'rules')
  const patterns2 = s.table([part(2)], [], 'patterns', 'jetcarp-patterns 2')
  t.equal(await walkCode(walkTableIndex(s.table([part(3)], [rules]), s.loader, { table: 'patterns' })), W.treeMismatch, 'a child of another table')
  t.equal(await walkCode(walkTableIndex(s.table([part(3)], [patterns2]), s.loader, { table: 'patterns' })), W.treeMismatch, 'a child of another schema')
  t.equal(await walkCode(walkTableIndex(rules, s.loader, { table: 'patterns' })), W.treeMismatch, 'the manifest\'s table is the root\'s')
})

t.test('refusals: a loader\'s, a document\'s, 10,001 parts', async (t) => {
  const s = new Indexes()
  t.equal(await walkCode(walkTableIndex(h(1), s.loader, { table: 'patterns' })), 'pack.object-missing', 'the loader\'s code')
  t.equal(await walkCode(walkTableIndex(s.table([part(1)], [h(2)]), s.loader, { table: 'patterns' })), 'pack.object-missing', 'a missing child')
  s.bytes.set(h(3), Buffer.from('{"children": []}'))
  t.equal(await walkCode(walkTableIndex(h(3), s.loader, { table: 'patterns' })), 'pack.json-not-canonical')
  const big = buildTableIndex({ table: 'patterns', schema: 'jetcarp-patterns 1', parts: Array.from({ length: 10_000 }, (_, i) => part(i)) })
  const doc = JSON.parse(big.bytes.toString())
  s.bytes.set(h(4), writePackJson({ ...doc, parts: [...doc.parts, part(10_000)] }))
  t.equal(await walkCode(walkTableIndex(h(4), s.loader, { table: 'patterns' })), INDEX_CODES.tooManyParts, '10,001 parts')
})

t.test('streaming: parts come as found, and children load only when reached', async (t) => {
  const s = new Indexes()
  const children = Array.from({ length: 5 }, (_, i) => s.table([part(10 + i)]))
  const root = s.table([part(1)], children)
  for await (const e of walkTableIndex(root, s.loader, { table: 'patterns' })) {
    if (e.kind === 'part' && e.part.rows === 11) break
  }
  t.equal(s.loads.length, 3, 'the root and two children: the rest never loaded')
})

const SEARCH: SearchIndexInput = {
  created: T0,
  engine_version: '0.4.0',
  kind: 'explore',
  parts: [],
  run_schema: 'jetcarp-explore-runs 1',
  score_schema: 'jetcarp-explore-scores 1',
  search: UUID,
  spec: {},
  updated: T0,
}
const segment = (n: number, object = h(200 + n)) => ({ bytes: 10, engine_version: '0.4.0', first: String(n * 10), last: String(n * 10 + 9), object, rows: 10, sealed: T0, segment: `part-${String(n).padStart(6, '0')}` })
const sidecar = (n: number, object = h(500 + n)) => ({ bytes: 5, object, rows: 2, segment: `part-${String(n).padStart(6, '0')}` })

t.test('search indexes: segments and score sidecars, children of the same search', async (t) => {
  const s = new Indexes()
  const put = (input: Partial<SearchIndexInput>) => {
    const built = buildSearchIndex({ ...SEARCH, ...input })
    s.bytes.set(built.hash, built.bytes)
    return built.hash
  }
  const child = put({ parts: [segment(2)], scores: [{ created: T0, engine_version: '0.4.0', version: 1, parts: [sidecar(1), sidecar(2)] }] })
  const root = put({ parts: [segment(1)], children: [child], scores: [{ created: T0, engine_version: '0.4.0', version: 1, parts: [sidecar(1)] }] })
  const events = await collect(walkSearchIndex(root, s.loader, { search: UUID }))
  t.same(events.map((e) => (e.kind === 'index' ? `index ${e.level}` : e.kind === 'segment' ? e.segment.segment : `scores-${e.score.version}/${e.part.segment}`)), [
    'index 1',
    'part-000001',
    'scores-1/part-000001',
    'index 2',
    'part-000002',
    'scores-1/part-000002',
  ], 'a sidecar listed twice counts once')
  t.equal(await walkCode(walkSearchIndex(root, s.loader, { search: '11111111-2222-3333-4444-555555555555' })), INDEX_CODES.searchMismatch)
  const otherSearch = put({ search: '11111111-2222-3333-4444-555555555555', parts: [segment(3)] })
  t.equal(await walkCode(walkSearchIndex(put({ children: [otherSearch] }), s.loader, { search: UUID })), INDEX_CODES.searchMismatch, 'a child of another search')
  const otherRuns = put({ run_schema: 'jetcarp-explore-runs 2' })
  t.equal(await walkCode(walkSearchIndex(put({ children: [otherRuns] }), s.loader, { search: UUID })), W.treeMismatch, 'a child with other run segments')
  const renamed = put({ parts: [segment(1, h(77))] })
  t.equal(await walkCode(walkSearchIndex(put({ parts: [segment(1)], children: [renamed] }), s.loader, { search: UUID })), W.partConflict, 'one segment name, two objects')
  const rescored = put({ scores: [{ created: T0, engine_version: '0.4.0', version: 1, parts: [sidecar(1, h(78))] }] })
  t.equal(await walkCode(walkSearchIndex(put({ children: [child, rescored] }), s.loader, { search: UUID })), W.partConflict, 'one scores-<n>/<segment>, two objects')

  // stats.bytes: each distinct part, segment and sidecar once (parts 1 and 2: 101 + 102; segments 2 × 10; sidecars 2 × 5).
  const patterns = s.table([part(1), part(2)], [s.table([part(1)])])
  t.equal(await countPartBytes({ tables: { patterns }, searches: { [UUID]: root } }, s.loader), 101 + 102 + 20 + 10)
})

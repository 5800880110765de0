/**
 * Walking an index tree (pack format 1.0, "Indexes", "Search runs"): from the hash a manifest gives a
 * table (or a search), through children, depth first, yielding each index and its parts as they are
 * found, in the order an export numbers them (an index's own parts, then each child's in the order
 * children lists them).
 *
 * The rules: at most 8 levels, the manifest's index being level 1 (a child at level 9 is refused before
 * it is loaded); an index reached more than once is read once; a part listed more than once counts once
 * (listed again with other sizes or another partition, it is a conflict); an index that lists one of its
 * own ancestors is a cycle, seen from the child hash before loading it; and every index of the tree names
 * the root's table and schema (a search's: its search, schema, run and score schemas).
 *
 * The loader returns an index's bytes already checked against its hash (store.ts's loaders do), so a
 * cycle can only come from a loader that lies; it is refused all the same. Memory: the path being walked
 * (at most 8 lists of at most 10,000 child hashes) and one entry per distinct index and part seen.
 */
import { PipeError } from '../../../core/errors.js'
import { quote, type PackResult, type Refusal } from './documents.js'
import {
  parseSearchIndex,
  parseTableIndex,
  type ParsedIndex,
  type ScorePart,
  type ScoreSet,
  type SearchIndex,
  type SearchSegment,
  type TableIndex,
  type TablePart,
} from './doc-index.js'

/** "nesting of indexes: 8 levels" (Limits); the manifest's index is level 1. */
export const MAX_INDEX_LEVELS = 8

/** Stable codes of index-walk findings. */
export const WALK_CODES = {
  /** An index would be at level 9 or deeper. */
  tooDeep: 'pack.index-too-deep',
  /** An index lists one of its own ancestors. */
  cycle: 'pack.index-cycle',
  /** An index of the tree names another table or schema than the root (or the root another table than the manifest's). */
  treeMismatch: 'pack.index-tree-mismatch',
  /** One object listed as two different parts (other bytes, rows, partition or segment), or one segment name for two objects. */
  partConflict: 'pack.index-part-conflict',
} as const

/** Fetches an index object's bytes by hash, checked against the hash, or says why it cannot. */
export type IndexLoader = (hash: string) => Promise<Uint8Array | Refusal>

export type TableWalkEvent =
  | { kind: 'index'; hash: string; level: number; index: TableIndex }
  | { kind: 'part'; part: TablePart; index: string }

export type SearchWalkEvent =
  | { kind: 'index'; hash: string; level: number; index: SearchIndex }
  | { kind: 'segment'; segment: SearchSegment; index: string }
  | { kind: 'score'; score: Omit<ScoreSet, 'parts'>; part: ScorePart; index: string }

/** Walks the table index tree at `root` (the manifest's tables[table]), whose every index must name `table`. */
export async function* walkTableIndex(root: string, loader: IndexLoader, expected: { table: string }): AsyncGenerator<TableWalkEvent> {
  const parts = new Map<string, string>()
  const tree = walkTree<TableIndex>(root, loader, {
    parse: parseTableIndex,
    treeKey: (i) => `table ${i.table}, schema ${i.schema}`,
    rootProblem: (i) => (i.table === expected.table ? undefined : `the manifest lists it as table ${expected.table}, but it names table ${i.table}`),
  })
  for await (const { hash, level, index } of tree) {
    yield { kind: 'index', hash, level, index }
    for (const part of index.parts) {
      const listing = `${part.bytes} bytes, ${part.rows} rows, partition ${Object.entries(part.partition).map(([k, v]) => `${k}=${v}`).join('/')}`
      if (firstListing(parts, part.object, listing, hash)) yield { kind: 'part', part, index: hash }
    }
  }
}

/** Walks the search index tree at `root` (the manifest's searches[search]), whose every index must be of `search`. */
export async function* walkSearchIndex(root: string, loader: IndexLoader, expected: { search: string }): AsyncGenerator<SearchWalkEvent> {
  const segments = new Map<string, string>()
  const segmentObjects = new Map<string, string>()
  const sidecars = new Map<string, string>()
  const tree = walkTree<SearchIndex>(root, loader, {
    parse: (bytes) => parseSearchIndex(bytes, expected),
    treeKey: (i) => `search ${i.search}, schema ${i.schema}, runs ${i.run_schema}, scores ${i.score_schema}`,
  })
  for await (const { hash, level, index } of tree) {
    yield { kind: 'index', hash, level, index }
    for (const segment of index.parts) {
      // A segment name is a file name in an export: one name, one object.
      firstListing(segmentObjects, segment.segment, segment.object, hash)
      if (firstListing(segments, segment.object, `segment ${segment.segment}, ${segment.bytes} bytes, ${segment.rows} rows`, hash)) {
        yield { kind: 'segment', segment, index: hash }
      }
    }
    for (const { parts, ...score } of index.scores) {
      for (const part of parts) {
        const listing = `${part.object}, ${part.bytes} bytes, ${part.rows} rows`
        if (firstListing(sidecars, `scores ${score.version} segment ${part.segment}`, listing, hash)) yield { kind: 'score', score, part, index: hash }
      }
    }
  }
}

/** Records `listing` under `key`: true the first time, false when the same listing comes again, a conflict when another does. */
function firstListing(seen: Map<string, string>, key: string, listing: string, index: string): boolean {
  const before = seen.get(key)
  if (before === undefined) {
    seen.set(key, listing)
    return true
  }
  if (before !== listing) throw new PipeError(WALK_CODES.partConflict, `index ${index} lists ${key} as ${listing}, but it was listed before as ${before}`)
  return false
}

interface TreeRules<T> {
  parse: (bytes: Uint8Array) => PackResult<ParsedIndex<T>>
  /** What every index of one tree shares, as text (compared, and shown in messages). */
  treeKey: (index: T) => string
  /** Why the root does not belong where the manifest put it, if it does not (parse may check it instead). */
  rootProblem?: (index: T) => string | undefined
}

interface Frame {
  hash: string
  level: number
  children: readonly string[]
  next: number
}

async function* walkTree<T extends { children: string[] }>(root: string, loader: IndexLoader, rules: TreeRules<T>): AsyncGenerator<{ hash: string; level: number; index: T }> {
  const load = async (hash: string, level: number): Promise<T> => {
    const bytes = await loader(hash)
    if (!(bytes instanceof Uint8Array)) throw new PipeError(bytes.code, `index ${hash} (level ${level}): ${bytes.detail}`)
    const parsed = rules.parse(bytes)
    if (!parsed.ok) throw new PipeError(parsed.code, `index ${hash} (level ${level}): ${parsed.detail}`)
    return parsed.value.index
  }

  const rootIndex = await load(root, 1)
  const problem = rules.rootProblem?.(rootIndex)
  if (problem !== undefined) throw new PipeError(WALK_CODES.treeMismatch, `index ${root}: ${problem}`)
  const rootKey = rules.treeKey(rootIndex)
  yield { hash: root, level: 1, index: rootIndex }

  const seen = new Set([root])
  const ancestors = new Set([root])
  const path: Frame[] = [{ hash: root, level: 1, children: rootIndex.children, next: 0 }]
  while (path.length > 0) {
    const top = path[path.length - 1]!
    const child = top.children[top.next++]
    if (child === undefined) {
      path.pop()
      ancestors.delete(top.hash)
      continue
    }
    if (ancestors.has(child)) throw new PipeError(WALK_CODES.cycle, `index ${top.hash} (level ${top.level}) lists its own ancestor ${child}`)
    if (seen.has(child)) continue
    const level = top.level + 1
    if (level > MAX_INDEX_LEVELS) throw new PipeError(WALK_CODES.tooDeep, `index ${top.hash} at level ${top.level} lists child ${child}, which would be level ${level}; at most ${MAX_INDEX_LEVELS} levels`)
    seen.add(child)
    const index = await load(child, level)
    const key = rules.treeKey(index)
    if (key !== rootKey) throw new PipeError(WALK_CODES.treeMismatch, `index ${child} (level ${level}) is of ${quote(key)}, but its tree's root is of ${quote(rootKey)}`)
    yield { hash: child, level, index }
    path.push({ hash: child, level, children: index.children, next: 0 })
    ancestors.add(child)
  }
}

/**
 * stats.bytes as pipe counts it: the bytes of every distinct object (by hash) among the tables' parts and
 * the searches' segments and score sidecars, as their indexes state them. Indexes, media and reference
 * patches are not counted.
 */
export async function countPartBytes(manifest: { tables: Record<string, string>; searches: Record<string, string> }, loader: IndexLoader): Promise<number> {
  const counted = new Set<string>()
  let total = 0
  const count = (object: string, bytes: number) => {
    if (counted.has(object)) return
    counted.add(object)
    total += bytes
  }
  for (const [table, root] of Object.entries(manifest.tables)) {
    for await (const e of walkTableIndex(root, loader, { table })) if (e.kind === 'part') count(e.part.object, e.part.bytes)
  }
  for (const [search, root] of Object.entries(manifest.searches)) {
    for await (const e of walkSearchIndex(root, loader, { search })) {
      if (e.kind === 'segment') count(e.segment.object, e.segment.bytes)
      else if (e.kind === 'score') count(e.part.object, e.part.bytes)
    }
  }
  return total
}

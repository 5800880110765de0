/**
 * Builds pipe's golden packs (test/golden/<name>/): JETCARP pack format 1.0 stores made by pack-publish
 * from records of real runs (src/sim/pack-records.ts), with keys from fixed seeds and fixed times, so that
 * making them again gives the same bytes. Each folder holds the store (or, for `export`, the export
 * folder), MANIFEST (the version's manifest hash) and hashes.txt (sha256sum of every file). Never
 * rewritten: a build that differs from what is committed is refused (as for the record golden day).
 *
 *   minimal     three Life patterns (block, blinker, glider), a sighting, a Quick Start entry, ratings by
 *               the publisher, a consented pseudonymous rater and a group of both; rules, verifications,
 *               provenance, annotations
 *   retraction  minimal, then a second version retracting the blinker, adding a lightweight spaceship and
 *               renaming the glider (an annotation of rev 2)
 *   merge       another publisher: its own version (a Generations oscillator in Star Wars B2/S345/4 and a
 *               hexagonal-grid oscillator), then a version merging minimal: two parents
 *   searches    an explore search of Life soups: two run segments and a score sidecar, and verdicts on runs
 *   media       the glider with a poster and a thumbnail (PNG)
 *   aperiodic   a still life and an oscillator of Life on the Penrose kite-and-dart patch, with the patch
 *   ants        Langton's ant (a highway, named) and LLRR (symmetric growth)
 *   export      minimal as an export
 *
 * Usage: npm run golden:packs [-- --check]   (runs the built script: the Parquet writer uses a worker thread)
 */
import { createHash } from 'node:crypto'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { firstKeyStatement, keyStatementBytes } from '../src/formats/pack/keys/key-statements.js'
import { penroseReference } from '../src/formats/pack/geometry/penrose.js'
import { findPeriod } from '../src/formats/pack/check/replay.js'
import { publishPack, type PublishOptions } from '../src/formats/pack/publish/publish.js'
import { generateKey, type SshPrivateKey } from '../src/formats/pack/keys/ssh-key.js'
import { findLatticeTiling, latticeGeometry, latticeTilingRow } from '../src/formats/pack/geometry/tilings.js'
import { patternId, patternIdentity, type Cell } from '../src/formats/pack/records/identity.js'
import { HEX_B2S34, LIFE, STAR_WARS, antRecord, patternRecord, ruleRecord, verificationRecord, writeJsonl } from '../src/sim/pack-records.js'
import { seededRandom } from '../src/sim/random.js'
import { REPO, writeHashes, writeOrCheckTree } from './make-golden-record.js'

export const GOLDEN_PACKS = ['minimal', 'retraction', 'merge', 'searches', 'media', 'aperiodic', 'ants', 'export'] as const
export type GoldenPack = (typeof GOLDEN_PACKS)[number]

const T0 = '2026-11-11T00:00:00Z'
const T1 = '2026-11-12T00:00:00Z'
const ENGINE = '0.1.0-golden'
const seedOf = (name: string) => createHash('sha256').update(`pipe pack golden key ${name}`).digest()
const publisher = (name: string, display: string): { key: SshPrivateKey; statement: Uint8Array } => {
  const key = generateKey({ seed: seedOf(name), comment: name })
  return { key, statement: keyStatementBytes(firstKeyStatement(key, { name: display, created: T0 })) }
}
const A = publisher('golden-a', 'Golden Publisher A')
const B = publisher('golden-b', 'Golden Publisher B')

const BLOCK = patternRecord('square', LIFE, [[0, 0], [1, 0], [0, 1], [1, 1]])
const BLINKER = patternRecord('square', LIFE, [[0, 1], [1, 1], [2, 1]])
const GLIDER = patternRecord('square', LIFE, [[1, 0], [2, 1], [0, 2], [1, 2], [2, 2]], { speed: 'c/4 diagonal' })
const LWSS = patternRecord('square', LIFE, [[0, 1], [0, 2], [0, 3], [1, 0], [1, 3], [2, 3], [3, 3], [4, 0], [4, 2]], { speed: 'c/2 orthogonal' })
const STAR_WARS_OSCILLATOR = patternRecord('square', STAR_WARS, [[-2, 2, 1], [-1, 1, 1], [-1, 3, 2], [0, -1, 1], [0, 0, 1], [0, 1, 1], [0, 2, 1], [0, 3, 3], [1, -1, 2], [1, 0, 3], [1, 2, 1]])
const HEX_OSCILLATOR = patternRecord('hex', HEX_B2S34, [[0, 3], [1, 1], [1, 4]])

const RATER_SELF = 'rater-5a1e0f00d1a2b3c4'
const RATER_PSEUDONYM = 'rater-9c0ffee1234abcd0'
const RATER_GROUP = 'rater-0123456789abcdef'

async function minimalRecords(dir: string, patterns = [BLOCK, BLINKER, GLIDER]): Promise<void> {
  await writeJsonl(join(dir, 'tilings.jsonl'), [{ family: 'square' }])
  await writeJsonl(join(dir, 'rules.jsonl'), [ruleRecord(LIFE)])
  await writeJsonl(join(dir, 'patterns.jsonl'), patterns)
  await writeJsonl(join(dir, 'verifications.jsonl'), patterns.map((p, i) => verificationRecord(i + 1, LIFE, p, T0)))
  await writeJsonl(join(dir, 'sightings.jsonl'), [{ pattern_id: '@patterns:1', rule: 'B3/S23', source: 'unattributed', source_kind: 'manual', count: 12, soups: 5, first_seen: T0, last_seen: T0 }])
  await writeJsonl(join(dir, 'provenance.jsonl'), patterns.map((_, i) => ({
    target: `@patterns:${i + 1}`, seq: 0, kind: 'found', finder: null, orcid: null, search_kind: 'manual', search: null, machine: 'linux-x86_64',
    date: T0, source: 'golden-soups.rle', pack: null, run: null,
  })))
  await writeJsonl(join(dir, 'annotations.jsonl'), [{ target: '@patterns:3', field: 'name', value: '"Glider"', score_model: null, date: T0 }])
  const scene = JSON.stringify({ automata: [{ cells: (GLIDER['phases'] as { i: number; j: number }[][])[0]!.map((c) => [c.i, c.j]), rule: 'B3/S23', tiling: 'square' }], format: 1, palette: 'Ember' })
  await writeJsonl(join(dir, 'quickstart.jsonl'), [{
    title: 'A glider', description: 'The smallest Life spaceship, moving one cell diagonally every four generations.', source: '@patterns:3', scene, scene_format: '1',
    rule: 'B3/S23', rule_family: 'bs', semantics: '1', behaviour: 'spaceship', pin_key: 'square',
  }])
  await writeJsonl(join(dir, 'raters.jsonl'), [
    { rater: RATER_SELF, consent_date: T0, consent_scope: 'public-permanent', display_name: 'Golden Publisher A', orcid: null, members: null, notes: true },
    { rater: RATER_PSEUDONYM, consent_date: T0, consent_scope: 'public-permanent', display_name: null, orcid: null, members: null, notes: false },
    { rater: RATER_GROUP, consent_date: T0, consent_scope: 'public-permanent', display_name: null, orcid: null, members: [RATER_SELF, RATER_PSEUDONYM], notes: false },
  ])
  await writeJsonl(join(dir, 'ratings.jsonl'), [
    { rater: RATER_SELF, target: '@patterns:3', scale: 'stars-1-5 1', verdict: '5', note: 'Moves, and is small.', round: 'review', date: T0 },
    { rater: RATER_PSEUDONYM, target: '@patterns:2', scale: 'keep-maybe-drop 1', verdict: 'keep', note: null, round: 'review', date: T0 },
    { rater: RATER_GROUP, target: '@quickstart:1', scale: 'keep-maybe-drop 1', verdict: 'keep', note: null, round: 'review', date: T0 },
  ])
  await writeFile(join(dir, 'pack.json'), JSON.stringify({ title: 'minimal', description: "Golden pack: minimal. Made by pipe's tests; never rewritten.", version_label: 'golden-1', creators: [{ name: 'Golden Publisher A', role: 'creator' }] }))
}

const options = (store: string, records: string, who: { key: SshPrivateKey; statement: Uint8Array }, feed: string, over: Partial<PublishOptions> = {}): PublishOptions =>
  ({ feed, store, records, key: who.key, statements: [who.statement], created: T0, engineVersion: ENGINE, ...over })

/** A store with minimal published into it; the manifest hash. */
async function publishMinimal(store: string, work: string): Promise<string> {
  const records = join(work, 'minimal-records')
  await rm(records, { recursive: true, force: true })
  await minimalRecords(records)
  return (await publishPack(options(store, records, A, 'golden-a'))).manifest
}

async function retraction(store: string, work: string): Promise<string> {
  await publishMinimal(store, work)
  const records = join(work, 'retraction-records')
  await minimalRecords(records, [BLOCK, BLINKER, GLIDER, LWSS])
  await writeJsonl(join(records, 'annotations.jsonl'), [{ target: '@patterns:3', field: 'name', value: '"The glider"', score_model: null, date: T1 }])
  await writeFile(join(records, 'pack.json'), JSON.stringify({ title: 'retraction', description: "Golden pack: retraction. Made by pipe's tests; never rewritten.", version_label: 'golden-2' }))
  const { identity } = patternIdentity({ pinKey: 'square', model: 'bs', neighbourhood: 'touch', stepsPerGen: 1, class: 'oscillator', period: 2, dx: 0, dy: 0, phases: BLINKER['phases'] as Cell[][], tileTypes: 1 })
  const blinker = `pattern:${patternId(identity, latticeTilingRow(findLatticeTiling('square')!).pin)}`
  return (await publishPack(options(store, records, A, 'golden-a', { created: T1, retract: [{ target: blinker, reason: 'Retracted by the golden tests: a duplicate entry.' }] }))).manifest
}

async function merge(store: string, work: string): Promise<string> {
  const minimal = join(work, 'merge-minimal')
  await rm(minimal, { recursive: true, force: true })
  await publishMinimal(minimal, work)
  const records = join(work, 'merge-records')
  await writeJsonl(join(records, 'tilings.jsonl'), [{ family: 'square' }, { family: 'hex' }])
  await writeJsonl(join(records, 'rules.jsonl'), [ruleRecord(STAR_WARS), ruleRecord(HEX_B2S34)])
  await writeJsonl(join(records, 'patterns.jsonl'), [STAR_WARS_OSCILLATOR, HEX_OSCILLATOR])
  await writeJsonl(join(records, 'verifications.jsonl'), [verificationRecord(1, STAR_WARS, STAR_WARS_OSCILLATOR, T0), verificationRecord(2, HEX_B2S34, HEX_OSCILLATOR, T0)])
  await writeFile(join(records, 'pack.json'), JSON.stringify({ title: 'merge', description: "Golden pack: merge. Another publisher's version merging minimal. Made by pipe's tests.", version_label: 'golden-b-1' }))
  await publishPack(options(store, records, B, 'golden-b'))
  await writeFile(join(records, 'pack.json'), JSON.stringify({ title: 'merge', description: "Golden pack: merge. Another publisher's version merging minimal. Made by pipe's tests.", version_label: 'golden-b-2' }))
  return (await publishPack(options(store, records, B, 'golden-b', { created: T1, merge: [minimal] }))).manifest
}

const SEARCH = '0b9e3c52-6f0e-4c1a-9d3e-2a6b7c8d9e01'

/** Life soups (5x5, seeded) run to their end: what an explore search's runs record. */
function soupRuns(from: number, count: number, rand: () => number): Record<string, unknown>[] {
  const geometry = latticeGeometry(findLatticeTiling('square')!)
  const rows: Record<string, unknown>[] = []
  for (let id = from; id < from + count; id++) {
    const cells = []
    for (let i = 0; i < 5; i++) for (let j = 0; j < 5; j++) if (rand() < 0.4) cells.push({ i, j, k: 0, s: 1 })
    const found = cells.length === 0 ? { outcome: 'dies' as const, generations: 0 } : findPeriod({ geometry, rule: { neighbourhood: 'touch', birth: LIFE.birth, survive: LIFE.survive, states: 2, steps_per_gen: 1 }, cells }, { maxPeriod: 64, cellCap: 2000 })
    const outcome = found.outcome === 'periodic' ? found.class : found.outcome === 'settles' ? 'settles' : found.outcome
    const population = found.outcome === 'periodic' ? found.cells : found.outcome === 'settles' ? found.phase.length : 0
    rows.push({ run_id: id, parent: null, identity: null, pattern_id: null, outcome, generations: found.generations, population, score: population / 25, run: JSON.stringify({ density: '0.4', seed: id, size: [5, 5] }) })
  }
  return rows
}

async function searches(store: string, work: string): Promise<string> {
  const records = join(work, 'searches-records')
  const rand = seededRandom(2026)
  const s = join(records, 'searches', SEARCH)
  await writeJsonl(join(s, 'runs', 'part-000001.jsonl'), soupRuns(1, 6, rand))
  await writeJsonl(join(s, 'runs', 'part-000002.jsonl'), soupRuns(7, 6, rand))
  await writeJsonl(join(s, 'scores', '1', 'part-000001.jsonl'), [1, 2, 3].map((run_id) => ({ run_id, score: run_id / 10, model: 'golden-taste 1' })))
  await writeFile(join(s, 'search.json'), JSON.stringify({
    kind: 'explore', spec: { density: '0.4', rule: 'B3/S23', size: [5, 5], tiling: 'square' }, created: T0, updated: T0, engine_version: ENGINE,
    scores: [{ version: 1, created: T0, engine_version: ENGINE }],
  }))
  await writeJsonl(join(records, 'raters.jsonl'), [{ rater: RATER_SELF, consent_date: T0, consent_scope: 'public-permanent', display_name: 'Golden Publisher A', orcid: null, members: null, notes: true }])
  await writeJsonl(join(records, 'ratings.jsonl'), [1, 2, 7].map((run, i) => ({ rater: RATER_SELF, target: `search_run:${SEARCH}:${run}`, scale: 'keep-maybe-drop 1', verdict: ['keep', 'maybe', 'drop'][i], note: null, round: 'ratings:golden1', date: T0 })))
  await writeFile(join(records, 'pack.json'), JSON.stringify({ title: 'searches', description: "Golden pack: searches. An explore search's two segments and a score sidecar, with verdicts. Made by pipe's tests." }))
  return (await publishPack(options(store, records, A, 'golden-searches'))).manifest
}

/** A PNG of cells (each `scale` pixels, black on white), with stored (uncompressed) deflate blocks: the same bytes with any zlib. */
export function png(cells: readonly { i: number; j: number }[], scale: number): Buffer {
  const w = (Math.max(...cells.map((c) => c.i)) + 3) * scale
  const h = (Math.max(...cells.map((c) => c.j)) + 3) * scale
  const raw = Buffer.alloc((w + 1) * h, 255)
  for (let y = 0; y < h; y++) raw[y * (w + 1)] = 0
  for (const c of cells) for (let y = 0; y < scale; y++) for (let x = 0; x < scale; x++) raw[((c.j + 1) * scale + y) * (w + 1) + 1 + (c.i + 1) * scale + x] = 0
  const blocks: Buffer[] = [Buffer.from([0x78, 0x01])]
  for (let at = 0; at < raw.length; at += 65535) {
    const part = raw.subarray(at, at + 65535)
    const head = Buffer.alloc(5)
    head[0] = at + 65535 >= raw.length ? 1 : 0
    head.writeUInt16LE(part.length, 1)
    head.writeUInt16LE(~part.length & 0xffff, 3)
    blocks.push(head, part)
  }
  let a = 1, b = 0
  for (const byte of raw) { a = (a + byte) % 65521; b = (b + a) % 65521 }
  const adler = Buffer.alloc(4)
  adler.writeUInt32BE(((b << 16) | a) >>> 0)
  blocks.push(adler)
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(w, 0)
  ihdr.writeUInt32BE(h, 4)
  ihdr.set([8, 0, 0, 0, 0], 8) // 8-bit greyscale
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', Buffer.concat(blocks)), chunk('IEND', Buffer.alloc(0))])
}

const CRC = Array.from({ length: 256 }, (_, n) => { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; return c >>> 0 })
function chunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data])
  let c = 0xffffffff
  for (const byte of body) c = CRC[(c ^ byte) & 0xff]! ^ (c >>> 8)
  const out = Buffer.alloc(12 + data.length)
  out.writeUInt32BE(data.length, 0)
  body.copy(out, 4)
  out.writeUInt32BE((c ^ 0xffffffff) >>> 0, 8 + data.length)
  return out
}

async function media(store: string, work: string): Promise<string> {
  const records = join(work, 'media-records')
  await minimalRecords(records, [GLIDER])
  await rm(join(records, 'quickstart.jsonl'))
  await rm(join(records, 'ratings.jsonl'))
  await writeJsonl(join(records, 'annotations.jsonl'), [{ target: '@patterns:1', field: 'name', value: '"Glider"', score_model: null, date: T0 }])
  const cells = (GLIDER['phases'] as { i: number; j: number }[][])[0]!
  const files = { poster: png(cells, 16), thumb: png(cells, 4) }
  const rows = []
  for (const [kind, bytes] of Object.entries(files)) {
    await writeFile(join(records, `glider-${kind}.png`), bytes)
    rows.push({ target: '@patterns:1', kind, from_seed: false, file: `glider-${kind}.png`, media_type: 'image/png', width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20), frames: 1, render_key: 'golden-cells 1', render: JSON.stringify({ palette: 'Mono', scale: kind === 'poster' ? 16 : 4 }) })
  }
  await writeJsonl(join(records, 'media.jsonl'), rows)
  await writeFile(join(records, 'pack.json'), JSON.stringify({ title: 'media', description: "Golden pack: media. A poster and a thumbnail. Made by pipe's tests." }))
  return (await publishPack(options(store, records, A, 'golden-media'))).manifest
}

/**
 * Life (B3/S23 on touch neighbours) run on the kite-and-dart reference patch's tile graph: the phases of a
 * pattern from its tiles, or an error when it is not periodic within the patch. Not level 3 (a reader does
 * not replay aperiodic patterns): it makes the golden records true.
 */
function patchPhases(tiles: number[]): number[][] {
  const rows = penroseReference().patch.rows
  const step = (live: Set<number>) => {
    const counts = new Map<number, number>()
    for (const t of live) for (const n of rows[t]!.touch) counts.set(n, (counts.get(n) ?? 0) + 1)
    return new Set([...counts].filter(([t, c]) => (live.has(t) ? c === 2 || c === 3 : c === 3)).map(([t]) => t))
  }
  const phases: number[][] = [tiles]
  for (let live = step(new Set(tiles)); phases.length < 16; live = step(live)) {
    const now = [...live].sort((a, b) => a - b)
    if (now.join() === phases[0]!.join()) return phases
    if (now.some((t) => rows[t]!.open)) throw new Error('the pattern reaches the patch edge')
    phases.push(now)
  }
  throw new Error('not periodic within 16 generations')
}

function aperiodicPattern(tiles: number[]): Record<string, unknown> {
  const { patch } = penroseReference()
  const rows = patch.rows
  const phases = patchPhases(tiles)
  const inPattern = [...new Set(phases.flat())].sort((a, b) => a - b)
  const around = [...new Set(inPattern.flatMap((t) => rows[t]!.touch))].filter((t) => !inPattern.includes(t)).sort((a, b) => a - b)
  const local = [...inPattern, ...around]
  const centre = (t: number) => { const c = rows[t]!.corners; return [c.reduce((s, p) => s + p[0]!, 0) / c.length, c.reduce((s, p) => s + p[1]!, 0) / c.length] }
  return {
    pin_key: 'penrose-kd', model: 'bs', neighbourhood: 'touch', steps_per_gen: 1, class: phases.length === 1 ? 'still_life' : 'oscillator', period: phases.length, dx: 0, dy: 0,
    speed: null, phases: phases.map((p) => p.map((t) => ({ i: 0, j: 0, k: local.indexOf(t), s: 1 }))), rule: null, gun: null, family: 'bs', semantics: '1',
    site: {
      patch: { family: 'penrose-kd', params: null, level: patch.level }, anchor: local[0], anchor_shape: rows[local[0]!]!.shape, anchor_point: centre(local[0]!), radius: 1, nb: 'touch',
      tiles: local.map((t) => ({ shape: rows[t]!.shape, dist: inPattern.includes(t) ? 0 : 1, point: centre(t), corners: rows[t]!.corners })),
      graph: null,
    },
  }
}

async function aperiodic(store: string, work: string): Promise<string> {
  const records = join(work, 'aperiodic-records')
  await writeJsonl(join(records, 'tilings.jsonl'), [{ family: 'penrose-kd' }])
  await writeJsonl(join(records, 'rules.jsonl'), [ruleRecord(LIFE)])
  await writeJsonl(join(records, 'patterns.jsonl'), [aperiodicPattern([26, 36, 37, 56]), aperiodicPattern([28, 40, 50])])
  await writeFile(join(records, 'pack.json'), JSON.stringify({ title: 'aperiodic', description: "Golden pack: aperiodic. Life on the Penrose kite-and-dart patch, with the reference patch. Made by pipe's tests." }))
  return (await publishPack(options(store, records, A, 'golden-aperiodic'))).manifest
}

async function ants(store: string, work: string): Promise<string> {
  const records = join(work, 'ants-records')
  await writeJsonl(join(records, 'tilings.jsonl'), [{ family: 'square' }])
  await writeJsonl(join(records, 'ants.jsonl'), [antRecord('RL'), antRecord('LLRR', { steps: 100_000 })])
  await writeJsonl(join(records, 'annotations.jsonl'), [{ target: '@ants:1', field: 'name', value: '"Langton\'s ant"', score_model: null, date: T0 }])
  await writeFile(join(records, 'pack.json'), JSON.stringify({ title: 'ants', description: "Golden pack: ants. Langton's ant (a highway) and LLRR (symmetric growth). Made by pipe's tests." }))
  return (await publishPack(options(store, records, A, 'golden-ants'))).manifest
}

async function exported(target: string, work: string): Promise<string> {
  const store = join(work, 'export-store')
  await rm(store, { recursive: true, force: true })
  const manifest = await publishMinimal(store, work)
  const { exportPack } = await import('../src/formats/pack/export/export.js')
  await exportPack({ from: store, to: target, copy: true })
  return manifest
}

const BUILD: Record<GoldenPack, (dir: string, work: string) => Promise<string>> = { minimal: publishMinimal, retraction, merge, searches, media, aperiodic, ants, export: exported }

/** Builds one golden pack into `dir` (which must not exist). */
export async function buildGoldenPack(name: GoldenPack, dir: string): Promise<void> {
  const work = `${dir}.work`
  await rm(work, { recursive: true, force: true })
  await mkdir(work, { recursive: true })
  try {
    const manifest = await BUILD[name](name === 'export' ? dir : join(dir, 'store'), work)
    await rm(join(dir, 'store', '.tmp'), { recursive: true, force: true })
    await writeFile(join(dir, 'MANIFEST'), manifest + '\n')
    await writeHashes(dir)
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

export const GOLDEN_PACKS_DIR = join(REPO, 'test', 'golden')

async function main(argv: string[]): Promise<number> {
  const check = argv.includes('--check')
  const only = argv.filter((a) => a !== '--check')
  for (const a of only) if (!GOLDEN_PACKS.includes(a as GoldenPack)) { process.stderr.write(`unknown golden pack ${a}; known: ${GOLDEN_PACKS.join(', ')}\n`); return 2 }
  let code = 0
  for (const name of only.length > 0 ? (only as GoldenPack[]) : GOLDEN_PACKS) {
    code = Math.max(code, await writeOrCheckTree(join(GOLDEN_PACKS_DIR, name), (dir) => buildGoldenPack(name, dir), check, `golden pack ${name}`))
  }
  return code
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then((code) => { process.exitCode = code }, (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
    process.exitCode = 1
  })
}


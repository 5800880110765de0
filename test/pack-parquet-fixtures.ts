/**
 * Real-looking rows for every pack table schema, shared by the pack Parquet tests: nested lists and structs,
 * nulls, empty lists, -0, int64 beyond 2^53, text outside the BMP, JSON cells. Rows come in their table's order.
 */
import { createHash } from 'node:crypto'
import {
  EXPLORE_RUNS_SCHEMA,
  EXPLORE_SCORES_SCHEMA,
  PACK_TABLES,
  REFERENCE_PATCH_SCHEMA,
  rowComparator,
  type TableSchema,
} from '../src/formats/pack/tables/table-schemas.js'

export const hex32 = (s: string): string => createHash('sha256').update(s).digest('hex').slice(0, 32)
const PIN = hex32('square-pin')
const T = (n: number): string => new Date(Date.UTC(2026, 10, 11, 9, 2, 38) + n * 1000).toISOString().replace('.000Z', 'Z')

type Row = Record<string, unknown>

function pattern(i: number, opts: { site?: boolean } = {}): Row {
  const period = 1 + (i % 4)
  const cells = 3 + (i % 5)
  const phases = Array.from({ length: period }, (_, p) => Array.from({ length: cells }, (_, c) => ({ i: c % 3, j: Math.floor(c / 3) + p, k: 0, s: 1 + (c % 2) })))
  // A picture that differs from row to row, so every row has its own identity and id.
  const canonical = `.O.\n..O\nOOO\n${i.toString(2).replaceAll('0', '.').replaceAll('1', 'O')}`
  const identity = [
    'jetcarp-pattern-v3',
    'tiling=square',
    'rule=B3/S23',
    'nb=touch',
    'steps=1',
    `class=${i % 2 ? 'spaceship' : 'oscillator'}`,
    `period=${period}`,
    `d=${i % 2},${i % 3 === 0 ? 0 : -(i % 3)}`,
    `canonical=${canonical.replaceAll('\n', '/')}`,
    `phases=${phases.map((ph) => ph.map((c) => `${c.i},${c.j},${c.k},${c.s}`).join(' ')).join(';')}`,
  ].join('\n')
  const site = opts.site
    ? {
        patch: { family: 'penrose-kd', params: i % 2 ? '{"level":7}' : null, level: 7 },
        anchor: 100 + i,
        anchor_shape: i % 2,
        anchor_point: [1.5 * i, -0],
        radius: 3,
        nb: i % 3 ? 'edge' : null,
        tiles: [
          { shape: 0, dist: 0, point: [0.25, -1.75], corners: [[0, 0], [1, 0], [0.80901699437494745, 0.58778525229247314]] },
          { shape: 1, dist: 1, point: [], corners: [] },
        ],
        graph: i % 2
          ? null
          : {
              rule: 'B2/S',
              degrees: true,
              chirality: false,
              cells: [{ shape: 0, flip: false, degree: 4, states: [1, 0, 1], neighbours: [] }, { shape: 1, flip: true, degree: 3, states: [0, 1, 0], neighbours: [0] }],
              around: [{ tiles: [1, 2, 3], count: 2 }, { tiles: [], count: 0 }],
            },
      }
    : null
  return {
    id: hex32(`${identity}\n${PIN}`),
    identity,
    pin_key: 'square',
    pin: PIN,
    model: 'life-like',
    neighbourhood: 'touch',
    steps_per_gen: 1,
    class: i % 2 ? 'spaceship' : 'oscillator',
    period: BigInt(period),
    dx: i % 2,
    dy: i % 3 === 0 ? 0 : -(i % 3),
    speed: i % 2 ? 'c/4 diagonal' : null,
    cells,
    min_cells: cells,
    max_cells: cells + (i % 2),
    phases,
    canonical,
    rule: i % 3 === 0 ? 'B36/S23' : null,
    site,
    gun: null,
    family: 'bs',
    semantics: '1',
    class_group: 'spaceship',
    tiling_group: 'k1',
  }
}

/** `n` pattern rows of one partition (spaceship, k1), in the table's order. */
export function patternRows(n: number, opts: { site?: boolean } = {}): Row[] {
  return Array.from({ length: n }, (_, i) => ({ ...pattern(i, opts), class_group: 'spaceship', class: 'spaceship' })).sort(rowComparator(PACK_TABLES.patterns))
}

const SAMPLES: Record<string, () => Row[]> = {
  tilings: () => [
    {
      pin_key: 'square', pin: PIN, polygon_hash: hex32('p'), neighbour_hash: hex32('n'), name: 'Square', kind: 'lattice', family: 'square',
      params: null, edges: null, tiling_group: 'square', a1: [1, 0], a2: [-0, 1],
      tile_types: [{ shape: 0, corners: [[0, 0], [1, 0], [1, 1], [0, 1]] }],
      edge: [[{ di: 0, dj: -1, k: 0 }, { di: 1, dj: 0, k: 0 }, { di: 0, dj: 1, k: 0 }, { di: -1, dj: 0, k: 0 }]],
      touch: [[{ di: -1, dj: -1, k: 0 }, { di: 0, dj: -1, k: 0 }]],
      reference_level: null, reference: null, reference_tiles: null,
    },
    {
      pin_key: 'penrose-kd', pin: hex32('pk'), polygon_hash: hex32('pkp'), neighbour_hash: hex32('pkn'), name: 'Penrose kite and dart', kind: 'aperiodic', family: 'penrose-kd',
      params: '{}', edges: '[]', tiling_group: 'penrose-kd', a1: null, a2: null, tile_types: null, edge: null, touch: [],
      reference_level: 7, reference: `sha256:${'ab'.repeat(32)}`, reference_tiles: 4885,
    },
  ],
  rules: () => [
    { notation: 'B3/S23', neighbourhood: 'edge', steps_per_gen: 1, family: 'bs', semantics: '1', states: 2, birth: 8, survive: 12n },
    { notation: 'B3/S23', neighbourhood: 'touch', steps_per_gen: 1, family: 'bs', semantics: '1', states: 2, birth: 8n, survive: 12 },
    { notation: 'B3/S23', neighbourhood: 'touch', steps_per_gen: 2, family: 'bs', semantics: '1', states: 2, birth: 2n ** 62n, survive: null },
    { notation: 'turmite:{…}', neighbourhood: 'edge', steps_per_gen: 1, family: 'turmite', semantics: '1', states: 0, birth: null, survive: null },
  ],
  patterns: () => [...patternRows(5, { site: true }), ...patternRows(3)],
  verifications: () => [
    {
      pattern_id: hex32('a'), rule: 'B3/S23', publisher: 'SHA256:pub', main: true, periods: 64n, generations: 256, field: 'dead-edged frame 64x64',
      sites: null, engine_version: '0.4.0', pin: PIN, semantics: '1', date: T(0),
      range: '{"bits":9,"birth_max":8,"birth_min":8,"max_rule":"B3/S23","min_rule":"B3/S23","survive_max":12,"survive_min":12}', mover: null,
    },
    { pattern_id: hex32('a'), rule: 'B3/S23', publisher: 'SHA256:pub', main: false, periods: 64, generations: 256, field: 'patch hat level 6', sites: 12, engine_version: '0.4.0', pin: PIN, semantics: '1', date: T(0), range: null, mover: '{"steps":1000}' },
    { pattern_id: hex32('a'), rule: 'B36/S23', publisher: 'SHA256:pub', main: false, periods: 1, generations: 4, field: 'x', sites: null, engine_version: '0.4.0', pin: PIN, semantics: '1', date: T(5), range: null, mover: null },
  ],
  sightings: () => [
    { pattern_id: hex32('a'), rule: 'B3/S23', publisher: 'SHA256:pub', source: '0f8fad5b-d9cb-469f-a165-70867728950e', source_kind: 'explore', count: 3n, soups: 2n, first_seen: T(0), last_seen: T(60) },
    { pattern_id: hex32('a'), rule: 'B3/S23', publisher: 'SHA256:pub', source: 'unattributed', source_kind: null, count: 9_007_199_254_740_993n, soups: 0, first_seen: T(1), last_seen: T(1) },
  ],
  provenance: () => [
    {
      target: `pattern:${hex32('a')}`, publisher: 'SHA256:pub', seq: 0, kind: 'found', finder: 'Zoë Ørsted', orcid: '0000-0002-1825-0097', search_kind: 'explore',
      search: '0f8fad5b-d9cb-469f-a165-70867728950e', machine: 'linux-x86_64', engine_version: '0.4.0', pin: PIN, date: T(0), source: 'search', pack: null,
      run: '{"density":"0.35","generation":120,"soup":"x3"}',
    },
    { target: `pattern:${hex32('a')}`, publisher: 'SHA256:pub', seq: 1, kind: 'imported', finder: null, orcid: null, search_kind: null, search: null, machine: null, engine_version: '0.4.0', pin: PIN, date: T(9), source: 'import catalog.sqlite', pack: `sha256:${'cd'.repeat(32)}`, run: null },
  ],
  annotations: () => [
    { target: `ant:ant-${hex32('ant')}`, publisher: 'SHA256:pub', field: 'name', value: '"Langton’s ant"', score_model: null, date: T(0), rev: 1 },
    { target: `ant:ant-${hex32('ant')}`, publisher: 'SHA256:pub', field: 'tags', value: '["highway","ant"]', score_model: null, date: T(0), rev: 2n },
    { target: `pattern:${hex32('a')}`, publisher: 'SHA256:pub', field: 'score', value: '"0.35"', score_model: 'taste 1', date: T(3), rev: 0 },
  ],
  ants: () => [
    {
      id: `ant-${hex32('ant')}`, identity: 'jetcarp-ant-v1\nrule=RL\nstart="empty"', pin_key: 'square', pin: PIN, rule: 'RL', kind: 'string', family: 'ant', semantics: '1',
      states: 2, colors: 2, start: '"empty"', outcome: 'highway', period: 104n, dx: 2, dy: -2, onset: 9977n, speed: 0.027196, steps: 11000n, cells: 10000n,
      run: '{"limits":{"max_period":100000,"steps":11000},"run":{"cells":10000,"outcome":"highway","reach":[-60,-60,20,20],"speed":0.027196,"steps":11000}}', tiling_group: 'square',
    },
    {
      id: `ant-${hex32('llrr')}`, identity: 'jetcarp-ant-v1\nrule=LLRR\nstart="empty"', pin_key: 'square', pin: PIN, rule: 'LLRR', kind: 'string', family: 'ant', semantics: '1',
      states: 4, colors: 4, start: '"empty"', outcome: 'symmetric', period: null, dx: null, dy: null, onset: null, speed: null, steps: 500000, cells: 12345,
      run: '{"limits":{"steps":500000},"run":{"cells":12345,"outcome":"symmetric","reach":[-9,-9,9,9],"steps":500000}}', tiling_group: 'square',
    },
  ],
  quickstart: () => [
    { id: `qs-${hex32('scene')}`, title: 'Gliders on a hex field', description: 'Two gliders meet.\nWatch them pass.', source: `pattern:${hex32('a')}`, scene: '{"automata":[{"rule":"B2/S34H"}],"palette":"Ember"}', scene_format: '1', rule: 'B2/S34H', rule_family: 'bs', semantics: '1', behaviour: 'spaceship', pin_key: 'hex', pin: hex32('hex'), tiling_group: 'hex' },
    { id: `qs-${hex32('scene2')}`, title: '', description: '', source: null, scene: '{}', scene_format: '1', rule: 'B3/S23', rule_family: 'bs', semantics: '1', behaviour: null, pin_key: 'hex', pin: hex32('hex'), tiling_group: 'hex' },
  ],
  media: () => [
    { target: `pattern:${hex32('a')}`, kind: 'poster', from_seed: false, object: `sha256:${'ef'.repeat(32)}`, media_type: 'image/png', width: 1200, height: 630, frames: 1, bytes: 81234, render_key: 'r1', render: '{"palette":"Ember","scale":4}' },
    { target: `pattern:${hex32('a')}`, kind: 'poster', from_seed: true, object: `sha256:${'ee'.repeat(32)}`, media_type: 'image/png', width: 1200, height: 630, frames: 1, bytes: 5_000_000_000n, render_key: 'r1', render: '{}' },
    { target: `pattern:${hex32('a')}`, kind: 'thumb', from_seed: false, object: `sha256:${'ed'.repeat(32)}`, media_type: 'image/webp', width: 128, height: 128, frames: 24, bytes: 4096, render_key: 'r1', render: '{}' },
  ],
  aliases: () => [{ old_id: hex32('old'), target: `pattern:${hex32('a')}`, reason: 'scheme-change', date: T(0) }],
  ratings: () => [
    { rater: 'rater-0123456789abcdef', target: `search_run:0f8fad5b-d9cb-469f-a165-70867728950e:17`, scale: 'keep-maybe-drop 1', verdict: 'keep', note: 'lovely ✨ 𝔾', round: 'review', date: T(0) },
    { rater: 'rater-0123456789abcdef', target: `search_run:0f8fad5b-d9cb-469f-a165-70867728950e:17`, scale: 'stars-1-5 1', verdict: '4', note: null, round: null, date: T(2) },
  ],
  raters: () => [
    { rater: 'rater-0123456789abcdef', consent_date: '2026-11-01T00:00:00Z', consent_scope: 'public-permanent', display_name: 'Ada', orcid: null, members: null, notes: true },
    { rater: 'rater-fedcba9876543210', consent_date: T(0), consent_scope: 'public-permanent', display_name: null, orcid: null, members: ['rater-0123456789abcdef', 'rater-1111111111111111'], notes: false },
    { rater: 'rater-ffffffffffffffff', consent_date: T(0), consent_scope: 'public-permanent', display_name: null, orcid: null, members: [], notes: false },
  ],
  score_models: () => [
    { model: 'taste', version: '1', kind: 'logistic 1', features: ['period', 'cells', 'symmetry'], weights: [0.5, -1.25e-7, 3], intercept: -0.125, fitted_on: 'ratings1', rater: null, metrics: '{"auc":"0.81"}' },
    { model: 'taste', version: '2', kind: 'logistic 1', features: [], weights: [], intercept: 0, fitted_on: 'ratings2', rater: 'rater-0123456789abcdef', metrics: '{}' },
  ],
  'reference-patch': () =>
    Array.from({ length: 40 }, (_, tile) => ({
      tile, shape: tile % 2, corners: [[tile * 0.5, -tile / 3], [tile + 1, 0.1], [-0, 2 ** -1074]], edge: tile ? [tile - 1] : [], touch: [tile + 1, tile + 2], open: tile > 30,
    })),
  'explore-runs': () =>
    Array.from({ length: 30 }, (_, i) => ({
      run_id: BigInt(i + 1), parent: i % 4 ? null : i, identity: i % 3 ? null : `jetcarp-pattern-v3\nperiod=${i}`, pattern_id: i % 3 ? null : hex32(`r${i}`), outcome: i % 5 ? 'died' : 'found',
      generations: 1000 + i, population: 40n * BigInt(i), score: i % 2 ? null : i / 7, run: `{"soup":"s${i}"}`,
    })),
  'explore-scores': () => Array.from({ length: 3 }, (_, i) => ({ run_id: i * 3 + 1, score: 1 / (i + 3), model: 'taste 2' })),
}

export const ALL_SCHEMAS: readonly TableSchema[] = [...Object.values(PACK_TABLES), REFERENCE_PATCH_SCHEMA, EXPLORE_RUNS_SCHEMA, EXPLORE_SCORES_SCHEMA]

/** The sample rows of a schema, in its order. */
export function sampleRows(schema: TableSchema): Row[] {
  const make = SAMPLES[schema.name]
  if (!make) throw new Error(`no sample rows for ${schema.name}`)
  return make().sort(rowComparator(schema))
}

/** The partition of the samples' parts. */
export function samplePartition(schema: TableSchema, rows: readonly Row[]): Record<string, string> {
  return Object.fromEntries(schema.partitionColumns.map((c) => [c, rows[0]![c] as string]))
}

/** The row model as read back: int64 as bigint, missing nullable members as null. */
export function asRead(schema: TableSchema, row: Row): Row {
  const conv = (type: TableSchema['columns'][number]['type'], v: unknown): unknown => {
    if (v === null || v === undefined) return null
    if (type.kind === 'int64') return BigInt(v as number | bigint)
    if (type.kind === 'list') return (v as unknown[]).map((x) => conv(type.element, x))
    if (type.kind === 'struct') return Object.fromEntries(type.fields.map((f) => [f.name, conv(f.type, (v as Row)[f.name])]))
    return v
  }
  return Object.fromEntries(schema.columns.map((c) => [c.name, conv(c.type, row[c.name])]))
}

/** A text that tells -0 from 0 and bigints from numbers, for exact comparisons. */
export function exact(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : Object.is(x, -0) ? '-0' : x))
}

/**
 * The pack table schemas (src/formats/pack/tables/table-schemas.ts): every table of "Tables" with its schema id,
 * kind, order and partition; the typed site as the spec's block gives it; partition values; row validation
 * with findings naming table, row and column; the sort order and the RFC 8785 row text.
 */
import canonicalize from 'canonicalize'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t from 'tap'
import {
  EXPLORE_RUNS_SCHEMA,
  EXPLORE_SCORES_SCHEMA,
  PACK_TABLES,
  REFERENCE_PATCH_SCHEMA,
  ROW_CODES,
  SCHEMAS_BY_ID,
  canonicalRowText,
  compareUtf8,
  isPartitionValue,
  partitionFindings,
  rowComparator,
  rowValidator,
  sortKeyText,
  utf8OrderPrefix,
  validateRow,
  type PackType,
  type TableSchema,
} from '../src/formats/pack/tables/table-schemas.js'
import { ALL_SCHEMAS, patternRows, sampleRows } from './pack-parquet-fixtures.js'
import { patternIdentity } from '../src/formats/pack/records/identity.js'

/** The spec's notation again, from the parsed schema, to compare with the spec's text. */
function notation(type: PackType): string {
  if (type.kind === 'list') return `list<${notation(type.element)}>`
  if (type.kind === 'struct') return `struct<${type.fields.map((f) => `${f.name}: ${notation(f.type)}${f.nullable ? '?' : ''}`).join(', ')}>`
  return type.kind === 'time' ? 'string' : type.kind
}
const columnsOf = (s: TableSchema): string => s.columns.map((c) => `${c.name}: ${notation(c.type)}${c.nullable ? '?' : ''}`).join(', ')

t.test('every table of "Tables", with its schema id, kind, sort and partition columns', async (t) => {
  const expected: [string, 'fact' | 'event', string[], string[]][] = [
    ['tilings', 'fact', ['pin_key'], []],
    ['rules', 'fact', ['notation', 'neighbourhood', 'steps_per_gen'], []],
    ['patterns', 'fact', ['id'], ['class_group', 'tiling_group']],
    ['verifications', 'event', ['pattern_id', 'rule', 'publisher', 'date'], []],
    ['sightings', 'event', ['pattern_id', 'rule', 'publisher', 'source'], []],
    ['provenance', 'event', ['target', 'publisher', 'seq'], []],
    ['annotations', 'event', ['target', 'publisher', 'field', 'date'], []],
    ['ants', 'fact', ['id'], ['tiling_group']],
    ['quickstart', 'fact', ['id'], ['tiling_group']],
    ['media', 'event', ['target', 'kind', 'from_seed'], []],
    ['aliases', 'fact', ['old_id'], []],
    ['ratings', 'event', ['rater', 'target', 'date'], []],
    ['raters', 'event', ['rater'], []],
    ['score_models', 'event', ['model', 'version'], []],
  ]
  t.same(Object.keys(PACK_TABLES), expected.map((e) => e[0]), 'the fourteen tables in the spec\'s order')
  for (const [name, kind, sort, partition] of expected) {
    const s = PACK_TABLES[name as keyof typeof PACK_TABLES]
    t.equal(s.schemaId, `jetcarp-${name} 1`, `${name}: schema id`)
    t.equal(s.kind, kind, `${name}: ${kind}`)
    t.same(s.sortColumns, sort, `${name}: sorted by ${sort.join(', ')}`)
    t.same(s.partitionColumns, partition, `${name}: partitioned by ${partition.join(', ') || 'nothing'}`)
    t.equal(s.ourChoice, false)
    // Patterns' ids are bare content ids; ants' and Quick Start's carry a prefix (ant-, qs-).
    t.equal(s.contentIdKey === true, name === 'patterns', `${name}: keyed by bare content ids or not`)
  }
  t.equal(REFERENCE_PATCH_SCHEMA.schemaId, 'jetcarp-reference-patch 1')
  t.same(REFERENCE_PATCH_SCHEMA.sortColumns, ['tile'])
  t.equal(EXPLORE_RUNS_SCHEMA.schemaId, 'jetcarp-explore-runs 1')
  t.equal(EXPLORE_SCORES_SCHEMA.schemaId, 'jetcarp-explore-scores 1')
  t.ok(EXPLORE_RUNS_SCHEMA.ourChoice && EXPLORE_SCORES_SCHEMA.ourChoice, 'the search objects\' columns are marked as ours')
  t.equal(SCHEMAS_BY_ID.size, 17)
  t.equal(SCHEMAS_BY_ID.get('jetcarp-score_models 1'), PACK_TABLES.score_models, 'score_models keeps its underscore')
})

t.test('columns as the spec lists them', async (t) => {
  t.equal(
    columnsOf(PACK_TABLES.tilings),
    'pin_key: string, pin: string, polygon_hash: string, neighbour_hash: string, name: string, kind: string, family: string, params: string?, edges: string?, tiling_group: string, ' +
      'a1: list<float64>?, a2: list<float64>?, tile_types: list<struct<shape: int32, corners: list<list<float64>>>>?, ' +
      'edge: list<list<struct<di: int32, dj: int32, k: int32>>>?, touch: list<list<struct<di: int32, dj: int32, k: int32>>>?, reference_level: int32?, reference: string?, reference_tiles: int32?',
  )
  t.equal(columnsOf(PACK_TABLES.rules), 'notation: string, neighbourhood: string, steps_per_gen: int32, family: string, semantics: string, states: int32, birth: int64?, survive: int64?')
  t.equal(
    columnsOf(REFERENCE_PATCH_SCHEMA),
    'tile: int32, shape: int32, corners: list<list<float64>>, edge: list<int32>, touch: list<int32>, open: bool',
  )
  t.equal(
    columnsOf(PACK_TABLES.score_models),
    'model: string, version: string, kind: string, features: list<string>, weights: list<float64>, intercept: float64, fitted_on: string, rater: string?, metrics: string',
  )
  t.equal(columnsOf(PACK_TABLES.raters), 'rater: string, consent_date: string, consent_scope: string, display_name: string?, orcid: string?, members: list<string>?, notes: bool')
  const pattern = columnsOf(PACK_TABLES.patterns)
  t.match(pattern, /^id: string, identity: string, pin_key: string, pin: string, model: string, neighbourhood: string, steps_per_gen: int32, class: string, period: int64, dx: int32, dy: int32, speed: string\?, cells: int32, min_cells: int32, max_cells: int32, phases: list<list<struct<i: int32, j: int32, k: int32, s: int32>>>, canonical: string, rule: string\?, site: struct<.*>\?, gun: string\?, family: string, semantics: string, class_group: string, tiling_group: string$/)
})

t.test('the typed site is the spec\'s block', async (t) => {
  const site = PACK_TABLES.patterns.columns.find((c) => c.name === 'site')!
  t.ok(site.nullable, 'site is nullable (aperiodic only)')
  t.equal(
    notation(site.type),
    'struct<patch: struct<family: string, params: string?, level: int32>, anchor: int32, anchor_shape: int32, anchor_point: list<float64>, radius: int32, nb: string?, ' +
      'tiles: list<struct<shape: int32, dist: int32, point: list<float64>, corners: list<list<float64>>>>, ' +
      'graph: struct<rule: string, degrees: bool, chirality: bool, cells: list<struct<shape: int32, flip: bool, degree: int32, states: list<int32>, neighbours: list<int32>>>, ' +
      'around: list<struct<tiles: list<int32>, count: int32>>>?>',
  )
})

t.test('time columns are pack times', async (t) => {
  const times = ALL_SCHEMAS.flatMap((s) => s.columns.filter((c) => c.type.kind === 'time').map((c) => `${s.name}.${c.name}`))
  t.same(times, [
    'verifications.date', 'sightings.first_seen', 'sightings.last_seen', 'provenance.date', 'annotations.date',
    'aliases.date', 'ratings.date', 'raters.consent_date',
  ])
  const row = { ...sampleRows(PACK_TABLES.raters)[0]!, consent_date: '2026-11-01' }
  t.match(validateRow(PACK_TABLES.raters, row, 4), [{ code: ROW_CODES.time, table: 'raters', row: 4, column: 'consent_date' }], 'a calendar date alone is refused')
  for (const bad of ['2026-11-11T09:02:38.5Z', '2026-11-11T09:02:38+00:00', '2026-02-30T00:00:00Z']) {
    t.equal(validateRow(PACK_TABLES.aliases, { ...sampleRows(PACK_TABLES.aliases)[0]!, date: bad }, 0)[0]?.code, ROW_CODES.time, bad)
  }
})

t.test('isPartitionValue', async (t) => {
  for (const ok of ['k1', 'spaceship', 'penrose-kd', 'still_life', '0', 'a'.repeat(64), 'ih01']) t.ok(isPartitionValue(ok), ok)
  for (const bad of ['', '-k1', '_x', 'K1', 'a'.repeat(65), 'a b', 'a/b', 'é', 'x.y', 'k1\n']) t.notOk(isPartitionValue(bad), JSON.stringify(bad))
})

t.test('sample rows of every schema are valid, and their text length is measured exactly', async (t) => {
  for (const s of ALL_SCHEMAS) {
    const validate = rowValidator(s)
    const rows = sampleRows(s)
    rows.forEach((row, i) => {
      const findings: Parameters<typeof validate>[2] = []
      const bytes = validate(row, i, findings)
      t.same(findings, [], `${s.name} row ${i} is valid`)
      t.equal(bytes, Buffer.byteLength(canonicalRowText(s, row)), `${s.name} row ${i}: measured length = its text's`)
    })
  }
})

t.test('text length counts every escape as RFC 8785 writes it', async (t) => {
  const rows = sampleRows(PACK_TABLES.ratings)
  const validate = rowValidator(PACK_TABLES.ratings)
  const notes: [string, string][] = [['short escapes', '"\\\b\f\n\r\t'], ['other controls', '\u0000\u0001\u001f\u007f'], ['non-ASCII, U+2028 unescaped', 'é𝔾\u2028 ✨'], ['escapes among non-ASCII', 'é\n𝔾"\u0001✨\\'], ['empty', ''], ['printable ASCII, short', 'square-k1 ~'], ['longer than the by-hand count takes', `${'x'.repeat(70)}\n"`]]
  for (const [what, note] of notes) {
    const row = { ...rows[0]!, note }
    t.equal(validate(row, 0, []), Buffer.byteLength(canonicalRowText(PACK_TABLES.ratings, row)), what)
  }
})

t.test('one validator over many rows: lengths stay exact and problems are found every time', async (t) => {
  const validate = rowValidator(PACK_TABLES.patterns)
  const rows = patternRows(5000)
  let wrong = 0
  for (const [i, row] of rows.entries()) if (validate(row, i, []) !== Buffer.byteLength(canonicalRowText(PACK_TABLES.patterns, row))) wrong++
  for (const [i, row] of rows.slice(0, 100).entries()) if (validate(row, i, []) !== Buffer.byteLength(canonicalRowText(PACK_TABLES.patterns, row))) wrong++
  t.equal(wrong, 0, '5,100 rows, unique and repeated strings, measured exactly')
  const aliases = rowValidator(PACK_TABLES.aliases)
  const bad = { ...sampleRows(PACK_TABLES.aliases)[0]!, date: '2026-11-11' }
  for (let i = 0; i < 3; i++) {
    const out: Parameters<typeof aliases>[2] = []
    aliases(bad, i, out)
    t.match(out, [{ code: ROW_CODES.time, row: i, column: 'date' }], `the same bad time, row ${i}`)
  }
})

t.test('a validator keeps no long string it has seen: 4,096 targets of 10,000 characters leave nothing behind', async (t) => {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const validate = rowValidator(PACK_TABLES.aliases)
  const row = (n: number) => ({ old_id: `old-${n}`, target: `${n} ${'x'.repeat(10_000)}`, reason: 'renamed', date: '2026-11-11T00:00:00Z' })
  gc()
  const before = process.memoryUsage().heapUsed
  let wrong = 0
  for (let n = 0; n < 4096; n++) {
    const r = row(n)
    if (validate(r, n, []) !== Buffer.byteLength(canonicalRowText(PACK_TABLES.aliases, r))) wrong++
  }
  gc()
  const kept = process.memoryUsage().heapUsed - before
  t.equal(wrong, 0, 'each measured exactly')
  // A memo that kept them would hold 4,096 x 10,000 one-byte characters, 41 MB.
  t.ok(kept < 8e6, `${(kept / 1e6).toFixed(1)} MB kept after a collection`)
  t.equal(validate(row(1), 1, []), Buffer.byteLength(canonicalRowText(PACK_TABLES.aliases, row(1))), 'and a target seen before is measured again')
})

t.test('an identity just built is measured as its RFC 8785 text, whatever its facts hold', async (t) => {
  const p = PACK_TABLES.patterns
  const check = rowValidator(p)
  const good = patternRows(1)[0]!
  const facts = { pinKey: 'square', neighbourhood: 'touch' as const, stepsPerGen: 1, class: 'gun' as const, period: 30, dx: 0, dy: 0, tileTypes: 1 }
  const phases = [[{ i: 0, j: 0, k: 0, s: 1 }, { i: 70, j: 3, k: 0, s: 40 }, { i: -2, j: 1, k: 0, s: 2 ** 40 }], [{ i: 1, j: 1, k: 0, s: 1 }]]
  const models = ['bs', 'bs\ttab', 'a"quote', 'back\\slash', 'ctl\u0001', 'é€', '😀', 'lone\ud800', 'lone\udc00x', 'hi\ud800é']
  for (const model of models) {
    for (const rule of ['B3/S23', 'R"1\\']) {
      const { identity } = patternIdentity({ ...facts, model, rule, phases })
      const row = { ...good, period: 30, identity }
      const findings: never[] = []
      t.equal(check(row, 0, findings), Buffer.byteLength(canonicalize(row)!), `${JSON.stringify(model)}, ${JSON.stringify(rule)}`)
      t.same(findings, [])
      t.equal(check({ ...row, identity: identity + '\n' }, 0, findings), Buffer.byteLength(canonicalize(row)!) + 2, 'another text is measured itself')
    }
  }
})

t.test('row findings name table, row and column', async (t) => {
  const p = PACK_TABLES.patterns
  const good = patternRows(1, { site: true })[0]!
  const site = good.site as Record<string, unknown>
  const cases: [string, Record<string, unknown>, string, string][] = [
    ['int32 above range', { ...good, dx: 2 ** 31 }, ROW_CODES.invalid, 'dx'],
    ['int32 not an integer', { ...good, cells: 1.5 }, ROW_CODES.invalid, 'cells'],
    ['int64 above 2^63-1', { ...good, period: 2n ** 63n }, ROW_CODES.invalid, 'period'],
    ['int64 unsafe number', { ...good, period: 2 ** 53 }, ROW_CODES.invalid, 'period'],
    ['required null', { ...good, canonical: null }, ROW_CODES.invalid, 'canonical'],
    ['required missing', { ...good, identity: undefined }, ROW_CODES.invalid, 'identity'],
    ['a string as a number', { ...good, pin: 7 }, ROW_CODES.invalid, 'pin'],
    ['unknown column', { ...good, finderr: 'x' }, ROW_CODES.invalid, 'finderr'],
    ['lone surrogate', { ...good, speed: 'c/\ud800' }, ROW_CODES.notUtf8, 'speed'],
    ['2 MiB string', { ...good, identity: 'x'.repeat(2 * 1024 * 1024) }, ROW_CODES.stringTooLarge, 'identity'],
    ['null list element', { ...good, phases: [[null]] }, ROW_CODES.invalid, 'phases[0][0]'],
    ['nested int', { ...good, phases: [[{ i: 0, j: 0, k: 0, s: 'x' }]] }, ROW_CODES.invalid, 'phases[0][0].s'],
    ['deep in site', { ...good, site: { ...site, tiles: [{ shape: 0, dist: 0, point: [Number.NaN], corners: [] }] } }, ROW_CODES.invalid, 'site.tiles[0].point[0]'],
    ['Infinity', { ...good, site: { ...site, anchor_point: [Infinity] } }, ROW_CODES.invalid, 'site.anchor_point[0]'],
    ['a bool as a number', { ...good, site: { ...site, graph: { ...(site.graph as object), degrees: 1 } } }, ROW_CODES.invalid, 'site.graph.degrees'],
    ['partition value', { ...good, class_group: 'Spaceship' }, ROW_CODES.partitionValue, 'class_group'],
  ]
  for (const [what, row, code, column] of cases) {
    const f = validateRow(p, row, 7)
    t.equal(f[0]?.code, code, `${what}: ${code}`)
    t.equal(f[0]?.column, column, `${what}: column ${column}`)
    t.equal(f[0]?.row, 7)
    t.equal(f[0]?.table, 'patterns')
  }
  t.equal(validateRow(p, good, 0, { class_group: 'spaceship', tiling_group: 'k1' }).length, 0, 'the part\'s own partition')
  t.match(validateRow(p, good, 0, { class_group: 'gun', tiling_group: 'k1' }), [{ code: ROW_CODES.partitionMismatch, column: 'class_group' }], 'another partition')
  t.match(validateRow(p, [good], 0), [{ code: ROW_CODES.invalid, column: '' }], 'a row that is not an object')
  t.same(partitionFindings(p, { class_group: 'spaceship', tiling_group: 'k1' }), [])
  t.match(partitionFindings(p, { class_group: 'spaceship' }), [{ code: ROW_CODES.partitionMismatch, column: 'tiling_group', row: null }])
  t.match(partitionFindings(PACK_TABLES.rules, { x: 'a' }), [{ code: ROW_CODES.partitionMismatch, column: 'x' }])
  t.match(partitionFindings(PACK_TABLES.ants, { tiling_group: 'Hex' }), [{ code: ROW_CODES.partitionValue }])
  t.equal(validateRow(p, { ...good, speed: undefined, rule: undefined, site: undefined, gun: undefined }, 0).length, 0, 'missing nullable members are null')
  // Unknown columns wherever they are in the row's order, which the check compares with the schema's first.
  const columns = p.columns.map((c) => c.name)
  const ordered = Object.fromEntries(columns.map((c) => [c, good[c]]))
  t.equal(validateRow(p, ordered, 0).length, 0, 'the columns in the schema\'s order')
  t.equal(validateRow(p, Object.fromEntries(columns.toReversed().map((c) => [c, good[c]])), 0).length, 0, 'in reverse order')
  for (const at of [0, 5, columns.length]) {
    const entries = columns.map((c) => [c, good[c]])
    entries.splice(at, 0, ['finder_name', 'x'])
    t.match(validateRow(p, Object.fromEntries(entries), 0), [{ code: ROW_CODES.invalid, column: 'finder_name' }], `an unknown column at ${at} of the columns' order, and no other finding`)
    t.equal(validateRow(p, Object.fromEntries(entries), 0).length, 1)
  }
  t.equal(validateRow(p, { ...good, site: { ...site, extra: 1 } }, 0).length, 0, 'a nested struct\'s extra member is ignored')
})

t.test('canonical row text is RFC 8785 of the row with every column', async (t) => {
  for (const s of ALL_SCHEMAS) {
    for (const row of sampleRows(s)) {
      // canonicalize cannot take bigints: give it the same row with int64 as numbers where they are safe.
      const text = canonicalRowText(s, row)
      const safe = JSON.parse(text, (_k, v: unknown) => v) as unknown
      if (!/\d{16,}/.test(text)) t.equal(text, canonicalize(safe), `${s.name}: RFC 8785`)
    }
  }
  const rules = PACK_TABLES.rules
  const big = canonicalRowText(rules, { notation: 'B3/S23', neighbourhood: 'touch', steps_per_gen: 1, family: 'bs', semantics: '1', states: 2, birth: 2n ** 62n, survive: 7 })
  t.equal(big, '{"birth":4611686018427387904,"family":"bs","neighbourhood":"touch","notation":"B3/S23","semantics":"1","states":2,"steps_per_gen":1,"survive":7}', 'int64 as JSON integers, nulls written, members sorted')
  t.equal(canonicalRowText(PACK_TABLES.tilings, { ...sampleRows(PACK_TABLES.tilings)[1]!, a1: [-0, 0.1] }).includes('"a1":[0,0.1]'), true, '-0 is written 0, as RFC 8785 does')
})

t.test('utf8OrderPrefix never disagrees with compareUtf8', async (t) => {
  // Short strings over units that matter: ASCII, the surrogates' edges, U+E000..U+FFFF; pairs that share prefixes.
  const units = [0x00, 0x30, 0x61, 0x7f, 0xe9, 0xd7ff, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xe000, 0xfffe, 0xffff]
  let seed = 7
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31)
  const text = () => String.fromCharCode(...Array.from({ length: next() % 9 }, () => units[next() % units.length]!))
  let bad = 0
  let decided = 0
  for (let n = 0; n < 20_000; n++) {
    const a = text()
    const b = next() % 2 ? text() : a.slice(0, next() % 4) + text()
    // As new-rows sorts: the first three units, then, where those are equal, the next three.
    const d = utf8OrderPrefix(a) - utf8OrderPrefix(b) || utf8OrderPrefix(a, 3) - utf8OrderPrefix(b, 3)
    if (d !== 0) decided++
    if (d !== 0 && Math.sign(d) !== Math.sign(compareUtf8(a, b))) bad++
  }
  t.equal(bad, 0, 'where the prefixes differ, compareUtf8 agrees')
  t.ok(decided > 10_000, `and they decide most pairs (${decided})`)
  t.equal(utf8OrderPrefix('abc'), utf8OrderPrefix('abcz'), 'equal on three units: compareUtf8 decides')
  t.ok(utf8OrderPrefix('abcd', 3) < utf8OrderPrefix('abce', 3), 'the next three units')
})

t.test('sort order: text by UTF-8 bytes, integers by value, false before true, ties by row text', async (t) => {
  t.ok(compareUtf8('\uffff', '\u{10000}') < 0, 'U+FFFF before U+10000 (UTF-16 order says otherwise)')
  t.ok('\uffff' > '\u{10000}', 'JS\'s own order differs')
  t.ok(compareUtf8('\ue000', '\ud83d\ude00') < 0)
  t.ok(compareUtf8('a', 'ab') < 0 && compareUtf8('b', 'ab') > 0 && compareUtf8('x', 'x') === 0)
  t.ok(compareUtf8('Z', 'a') < 0 && compareUtf8('é', 'z') > 0)

  const rules = PACK_TABLES.rules
  const cmp = rowComparator(rules)
  const base = { notation: 'B3/S23', neighbourhood: 'touch', family: 'bs', semantics: '1', states: 2, birth: null, survive: null }
  t.ok(cmp({ ...base, steps_per_gen: 2 }, { ...base, steps_per_gen: 10 }) < 0, 'integers by value, not text')
  t.ok(cmp({ ...base, steps_per_gen: 1, neighbourhood: 'edge' }, { ...base, steps_per_gen: 0 }) < 0, 'earlier sort columns first')
  t.ok(cmp({ ...base, steps_per_gen: 1, birth: 9n }, { ...base, steps_per_gen: 1, birth: 10 }) > 0, 'a tie broken by the rows\' text ("9" after "1...")')
  t.equal(cmp({ ...base, steps_per_gen: 1, birth: 9n }, { ...base, steps_per_gen: 1, birth: 9 }), 0, 'a bigint and a number of one value are one row')
  const media = rowComparator(PACK_TABLES.media)
  const [m] = sampleRows(PACK_TABLES.media)
  t.ok(media({ ...m!, from_seed: false }, { ...m!, from_seed: true }) < 0, 'false before true')
  const runs = rowComparator(EXPLORE_RUNS_SCHEMA)
  const r = sampleRows(EXPLORE_RUNS_SCHEMA)[0]!
  t.ok(runs({ ...r, run_id: 2n ** 60n }, { ...r, run_id: 2n ** 60n + 1n }) < 0, 'int64 beyond 2^53 by value')

  for (const s of ALL_SCHEMAS) {
    const rows = sampleRows(s)
    const c = rowComparator(s)
    t.ok(rows.every((row, i) => i === 0 || c(rows[i - 1]!, row) <= 0), `${s.name}: the samples sort`)
  }
  t.equal(sortKeyText(EXPLORE_RUNS_SCHEMA, { ...r, run_id: 12345678901234567n }), '12345678901234567', 'first/last: an integer in decimal')
  t.equal(sortKeyText(PACK_TABLES.patterns, patternRows(1)[0]!), patternRows(1)[0]!.id)
})

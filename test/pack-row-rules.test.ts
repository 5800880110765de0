/**
 * The column rules of "Tables" that hold within a row (src/formats/pack/records/row-rules.ts), as checkPack finds
 * them at level 1: a store made with every rule kept passes, and each case breaks exactly one rule of one
 * row, which is reported with its code at level 1 on that row.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { checkPack, levelOf, type CheckIssue } from '../src/formats/pack/check/check.js'
import { patternId, patternIdentity, quickstartId, type Cell } from '../src/formats/pack/records/identity.js'
import { patternClassColumnFinding, RaterBook, ROW_RULE_CODES } from '../src/formats/pack/records/row-rules.js'
import { objectPath } from '../src/formats/pack/documents/store.js'
import { PACK_TABLES, rowComparator } from '../src/formats/pack/tables/table-schemas.js'
import { LIFE } from '../src/sim/pack-records.js'
import { BLINKER, BLOCK, PUBLISHER_ID, SEARCH, T0, buildStore, cleanRows, mediaRow, patternRow, quickstartRow, verificationRow, type BuiltStore, type Row } from './pack-check-fixtures.js'

const base = await mkdtemp(join(tmpdir(), 'pack-row-rules-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
let made = 0
const fresh = () => join(base, `p${made++}`)

const GROUP = 'rater-0123456789abcdef'
const MEMBER_A = 'rater-5a1e0f00d1a2b3c4'
const MEMBER_B = 'rater-9c0ffee1234abcd0'
const OTHER_PUBLISHER = 'SHA256:Cq5cVSqJBAdxFfJPld1HSH/bAyUPSvZYbr+p0GAIh9g'

function rater(id: string, extra: Row = {}): Row {
  return { rater: id, consent_date: T0, consent_scope: 'public-permanent', display_name: null, orcid: null, members: null, notes: false, ...extra }
}

function sceneRow(scene: string): Row {
  const row = quickstartRow({ scene })
  return { ...row, id: quickstartId(scene, row.pin as string) }
}

const GUN = '{"extra":"ignored","per_period":1,"ship":"glider","ship_displacement":[1,1],"ship_label":"glider","ship_period":4,"ship_phases":[],"ship_speed":"c/4"}'
const RANGE = '{"birth_max":11,"birth_min":8,"bits":9,"density":0.35,"max_rule":"B013/S0123","min_rule":"B3/S23","states_max":2,"states_min":2,"survive_max":15,"survive_min":12}'

/**
 * The clean pack's rows, plus rows that keep every rule at its edge: a mover with its rule whose
 * min_cells and max_cells span more than its phases, a gun with its rule and a gun cell holding a member
 * beyond the spec's, JSON cells with non-integer numbers, a scene naming a registry palette and one of its
 * own and made from a pattern, aliases of a pattern (both reasons) and of an ant, annotations of every
 * field's shape (a cleared one, and a field the spec does not name), a group of two raters rating beside a
 * member whose rating has a note she shares and a rating of a search run, a pattern's main rule verified
 * twice by its publisher (once with its range) and another main rule by another publisher, a rule of a
 * family without masks, sightings from a search and unattributed, a provenance row 0 with its run and an
 * imported row 1 naming its pack, a score model, and a tiling and a rule given twice, identically.
 */
function keptRows(): Record<string, Row[]> {
  const rows = cleanRows()
  const mover = { ...patternRow(LIFE, BLOCK, { class: 'mover', rule: 'B3/S23' }), min_cells: 2, max_cells: 9 }
  const gun = { ...patternRow(LIFE, BLINKER, { class: 'gun', rule: 'B3/S23' }), gun: GUN }
  rows.patterns!.push(mover, gun)
  const glider = rows.patterns!.find((p) => p.class === 'spaceship')!
  const target = `pattern:${String(glider.id)}`
  const cyclic = { notation: 'C3', neighbourhood: 'edge', steps_per_gen: 1, family: 'cyclic', semantics: '1', states: 0, birth: null, survive: null }
  // A fact given twice, identically: kept once.
  rows.rules!.push(cyclic, { ...cyclic, notation: 'C4' }, { ...cyclic, notation: 'C4' })
  rows.tilings!.push({ ...rows.tilings![0]! })
  rows.verifications!.push(
    { ...verificationRow(glider, LIFE), date: '2026-11-12T00:00:00Z', range: RANGE },
    { ...verificationRow(glider, { ...LIFE, notation: 'B36/S23' }), publisher: OTHER_PUBLISHER },
    { ...verificationRow(glider, { ...LIFE, notation: 'B38/S23' }), main: false },
  )
  rows.sightings = [
    { pattern_id: glider.id, rule: 'B3/S23', publisher: PUBLISHER_ID, source: SEARCH, source_kind: 'explore', count: 3n, soups: 2n, first_seen: T0, last_seen: T0 },
    { pattern_id: glider.id, rule: 'B3/S23', publisher: PUBLISHER_ID, source: 'unattributed', source_kind: null, count: 1n, soups: 1n, first_seen: T0, last_seen: T0 },
  ]
  const provenance = { target, publisher: PUBLISHER_ID, finder: null, orcid: null, search_kind: null, search: null, machine: 'linux-x86_64', engine_version: '0.1.0', pin: glider.pin, date: T0, source: null }
  rows.provenance = [
    { ...provenance, seq: 0, kind: 'found', pack: null, run: '{"soup":"s1"}' },
    { ...provenance, seq: 1, kind: 'imported', pack: `sha256:${'a'.repeat(64)}`, run: null },
  ]
  rows.media![0]!.render = '{"palette":"Ember","scale":0.5}'
  rows.media!.push(mediaRow(target, { kind: 'thumb' }))
  rows.quickstart = [{ ...sceneRow('{"automata":[{"palette":"Dusk","rule":"B3/S23","tiling":"square"}],"palette":"Deep Sea","palettes":{"Dusk":["#201040","#ff8800"]}}'), source: target }]
  const ant = rows.ants![0]!
  rows.aliases = [
    { old_id: '0'.repeat(32), target, reason: 'geometry-change', date: T0 },
    { old_id: '1'.repeat(32), target, reason: 'scheme-change', date: T0 },
    { old_id: `ant-${'2'.repeat(32)}`, target: `ant:${String(ant.id)}`, reason: 'scheme-change', date: T0 },
  ]
  rows.raters = [rater(GROUP, { members: [MEMBER_A, MEMBER_B] }), rater(MEMBER_A, { display_name: 'A Rater', notes: true }), rater(MEMBER_B)]
  const annotation = (field: string, value: string, extra: Row = {}): Row => ({ target, publisher: PUBLISHER_ID, field, value, score_model: null, date: T0, rev: 1n, ...extra })
  rows.annotations = [
    annotation('score', '"0.35"', { score_model: 'taste 1' }), annotation('name', '"Glider"'), annotation('tags', '["small","ship"]'), annotation('rating', '4'),
    annotation('notes', 'null'), annotation('colour', '{"any":"shape"}', { score_model: 'taste 1' }),
  ]
  rows.ratings = [
    { rater: GROUP, target, scale: 'stars-1-5 1', verdict: '4', note: null, round: 'review', date: T0 },
    { rater: MEMBER_A, target, scale: 'stars-1-5 1', verdict: '5', note: 'Moves, and is small.', round: 'review', date: T0 },
    { rater: MEMBER_B, target: `search_run:${SEARCH}:2`, scale: 'keep-maybe-drop 1', verdict: 'keep', note: null, round: null, date: T0 },
  ]
  rows.score_models = [{ model: 'taste', version: '1', kind: 'logistic 1', features: ['cells', 'period'], weights: [0.5, -1.25], intercept: 0.1, fitted_on: 'review', rater: MEMBER_A, metrics: '{"auc":0.8}' }]
  return rows
}

async function check(s: BuiltStore): Promise<CheckIssue[]> {
  const issues: CheckIssue[] = []
  for await (const i of checkPack(s.dir, { level: 1 })) issues.push(i)
  return issues
}
const failures = (issues: CheckIssue[]) => issues.filter((i) => !i.note)
const partRow = (s: BuiltStore, table: string, row: number) => `${objectPath(s.parts[table]![0]!.object, 'parquet')} row ${row}`
/** Where the row `which` picks lands in its (one) part, whose rows are sorted. */
const sortedRow = (table: keyof typeof PACK_TABLES, which: (row: Row) => boolean) => (s: BuiltStore, rows: Record<string, Row[]>) =>
  partRow(s, table, [...rows[table]!].sort(rowComparator(PACK_TABLES[table])).findIndex(which))

t.test('rows that keep every rule pass', async (t) => {
  const issues = await check(await buildStore(fresh(), { rows: keptRows() }))
  t.same(failures(issues), [], JSON.stringify(issues, null, 1))
})

/** A case: what it changes in the kept rows, the code, and where the finding must be. */
type Case = [string, (rows: Record<string, Row[]>) => void, string, (s: BuiltStore, rows: Record<string, Row[]>) => string]
const pattern = (cls: string) => (_s: BuiltStore, rows: Record<string, Row[]>) => `pattern:${String(rows.patterns!.find((p) => p.class === cls)!.id)}`
const find = (rows: Record<string, Row[]>, cls: string) => rows.patterns!.find((p) => p.class === cls)!

const cases: Case[] = [
  ['a mover without its rule', (r) => { find(r, 'mover').rule = null }, 'pack.pattern-rule-column', pattern('mover')],
  ['a spaceship with a rule', (r) => { find(r, 'spaceship').rule = 'B3/S23' }, 'pack.pattern-rule-column', pattern('spaceship')],
  ['a rating on a scale the spec does not name', (r) => { r.ratings![0]!.scale = 'stars-1-10 1' }, 'pack.rating-verdict-invalid', (s) => partRow(s, 'ratings', 0)],
  ['a rating whose verdict is not on its scale', (r) => { r.ratings![1]!.verdict = 'keep' }, 'pack.rating-verdict-invalid', (s) => partRow(s, 'ratings', 1)],
  ['a spaceship with a gun', (r) => { find(r, 'spaceship').gun = '{"per_period":1,"ship":"x","ship_displacement":[1,1],"ship_label":"glider","ship_period":4,"ship_phases":[],"ship_speed":"c/4"}' }, 'pack.pattern-gun-column', pattern('spaceship')],
  ['cells that are not phase 0\'s', (r) => { find(r, 'spaceship').cells = 6 }, 'pack.pattern-cells-mismatch', pattern('spaceship')],
  ['an oscillator whose max_cells is above its largest phase', (r) => {
    const p = r.patterns!.find((x) => x.model !== 'bs')!
    p.max_cells = (p.max_cells as number) + 1
  }, 'pack.pattern-cells-mismatch', (_s, r) => `pattern:${String(r.patterns!.find((x) => x.model !== 'bs')!.id)}`],
  ['a mover whose max_cells is below its phases', (r) => { find(r, 'mover').max_cells = 3 }, 'pack.pattern-cells-mismatch', pattern('mover')],
  ['a JSON cell with its members out of order', (r) => { r.media![0]!.render = '{"scale":0.5,"palette":"Ember"}' }, 'pack.json-cell-not-canonical', (s) => partRow(s, 'media', 0)],
  ['a JSON cell with a number not as ECMAScript writes it', (r) => { r.media![0]!.render = '{"palette":"Ember","scale":0.50}' }, 'pack.json-cell-not-canonical', (s) => partRow(s, 'media', 0)],
  ['a scene naming a palette outside the registry', (r) => { r.quickstart = [sceneRow('{"automata":[{"rule":"B3/S23","tiling":"square"}],"palette":"Sunset"}')] }, 'pack.scene-palette-unknown', (_s, r) => `quickstart:${String(r.quickstart![0]!.id)}`],
  ['an automaton naming a palette the scene does not hold', (r) => { r.quickstart = [sceneRow('{"automata":[{"palette":"Dusk","rule":"B3/S23","tiling":"square"}],"palette":"Ember"}')] }, 'pack.scene-palette-unknown', (_s, r) => `quickstart:${String(r.quickstart![0]!.id)}`],
  ['an alias with another reason', (r) => { r.aliases![1]!.reason = 'renamed' }, 'pack.alias-reason-invalid', (s) => partRow(s, 'aliases', 1)],
  ['a group with a display name', (r) => { r.raters![0]!.display_name = 'The Group' }, 'pack.rater-row-invalid', (s) => partRow(s, 'raters', 0)],
  ['a group with no members', (r) => { r.raters![0]!.members = [] }, 'pack.rater-row-invalid', (s) => partRow(s, 'raters', 0)],
  ['a consent scope other than public-permanent', (r) => { r.raters![2]!.consent_scope = 'private' }, 'pack.rater-row-invalid', (s) => partRow(s, 'raters', 2)],
  ['a group member\'s id that is not a rater id', (r) => { r.raters![0]!.members = [MEMBER_A, 'Alice'] }, 'pack.rater-id-malformed', (s) => partRow(s, 'raters', 0)],
  ['a rating by an id that is not a rater id', (r) => { r.ratings![0]!.rater = 'rater-0123' }, 'pack.rater-id-malformed', (s) => partRow(s, 'ratings', 0)],
  ['an annotation of rev 0', (r) => { r.annotations![0]!.rev = 0n }, 'pack.annotation-rev-invalid', sortedRow('annotations', (a) => a.rev === 0n)],
  ['a rating by a rater with no raters row', (r) => { r.ratings![0]!.rater = 'rater-00000000000000aa' }, 'pack.rater-row-missing', (s) => partRow(s, 'ratings', 0)],
  ['a group member with no raters row', (r) => { r.raters = r.raters!.filter((x) => x.rater !== MEMBER_B) }, 'pack.rater-row-missing', (s) => partRow(s, 'raters', 0)],
  ['a note by a rater whose rows do not share notes', (r) => { r.ratings![1]!.rater = MEMBER_B }, 'pack.rating-note-without-consent', (s) => partRow(s, 'ratings', 1)],
  ['a group among a group\'s members', (r) => { r.raters!.push(rater('rater-00000000000000aa', { members: [GROUP, MEMBER_A] })) }, 'pack.rater-row-invalid', (s) => partRow(s, 'raters', 0)],
  ['a second main rule of one pattern by one publisher', (r) => {
    const glider = find(r, 'spaceship')
    r.verifications!.push(verificationRow(glider, { ...LIFE, notation: 'B3/S236' }))
  }, 'pack.verification-main-duplicate', (s, r) => {
    // The second of the two main rules in the part's order is the one refused.
    const sorted = [...r.verifications!].sort(rowComparator(PACK_TABLES.verifications))
    return partRow(s, 'verifications', sorted.findIndex((v) => v.rule === 'B3/S236'))
  }],
  ['a gun cell without its ship_period', (r) => { find(r, 'gun').gun = GUN.replace('"ship_period":4,', '') }, 'pack.pattern-gun-json-invalid', pattern('gun')],
  ['a gun cell whose ship_displacement is not [dx, dy]', (r) => { find(r, 'gun').gun = GUN.replace('[1,1]', '"1,1"') }, 'pack.pattern-gun-json-invalid', pattern('gun')],
  ['a B/S rule of 3 states', (r) => { r.rules!.find((x) => x.family === 'bs')!.states = 3 }, 'pack.rule-family-columns', sortedRow('rules', (x) => x.family === 'bs')],
  ['a B/S rule without its survive mask', (r) => { r.rules!.find((x) => x.family === 'bs')!.survive = null }, 'pack.rule-family-columns', sortedRow('rules', (x) => x.family === 'bs')],
  ['a Generations rule of 2 states', (r) => { r.rules!.find((x) => x.family === 'generations')!.states = 2 }, 'pack.rule-family-columns', sortedRow('rules', (x) => x.family === 'generations')],
  ['a rule of another family with masks', (r) => { r.rules!.find((x) => x.family === 'cyclic')!.birth = 8n }, 'pack.rule-family-columns', sortedRow('rules', (x) => x.family === 'cyclic')],
  ['a rule on a neighbourhood other than touch and edge', (r) => { r.rules!.find((x) => x.family === 'cyclic')!.neighbourhood = 'vertex' }, 'pack.column-value-invalid', sortedRow('rules', (x) => x.family === 'cyclic')],
  ['a rule applied 0 times a generation', (r) => { r.rules!.find((x) => x.family === 'cyclic')!.steps_per_gen = 0 }, 'pack.column-value-invalid', sortedRow('rules', (x) => x.family === 'cyclic')],
  ['a semantics version that is not a positive integer', (r) => { r.rules!.find((x) => x.family === 'cyclic')!.semantics = '01' }, 'pack.column-value-invalid', sortedRow('rules', (x) => x.family === 'cyclic')],
  ['a semantics version of ten digits, which no manifest can state', (r) => { r.rules!.find((x) => x.family === 'cyclic')!.semantics = '1000000000' }, 'pack.column-value-invalid', sortedRow('rules', (x) => x.family === 'cyclic')],
  ['a range on a verification that is not main', (r) => { r.verifications!.find((v) => v.main === false)!.range = RANGE }, 'pack.verification-range-invalid', sortedRow('verifications', (v) => v.main === false)],
  ['a mover cell on a verification that is not main', (r) => { r.verifications!.find((v) => v.main === false)!.mover = '{"followed":100}' }, 'pack.verification-range-invalid', sortedRow('verifications', (v) => v.main === false)],
  ['a range without its min_rule', (r) => { r.verifications!.find((v) => v.range !== null)!.range = RANGE.replace('"min_rule":"B3/S23",', '') }, 'pack.verification-range-invalid', sortedRow('verifications', (v) => v.range !== null)],
  ['sites on a verification on the square grid', (r) => { r.verifications!.find((v) => v.main === false)!.sites = 2 }, 'pack.verification-sites-column', sortedRow('verifications', (v) => v.sites === 2)],
  ['a verification naming a pattern in another form', (r) => { r.verifications!.find((v) => v.main === false)!.pattern_id = 'glider' }, 'pack.row-target-invalid', sortedRow('verifications', (v) => v.pattern_id === 'glider')],
  ['a sighting whose source is neither a uuid nor unattributed', (r) => { r.sightings![1]!.source = 'by hand' }, 'pack.column-value-invalid', sortedRow('sightings', (x) => x.source === 'by hand')],
  ['a provenance row of another kind', (r) => { r.provenance![1]!.kind = 'copied' }, 'pack.column-value-invalid', (s) => partRow(s, 'provenance', 1)],
  ['a provenance seq below 0', (r) => { r.provenance![0]!.seq = -1; r.provenance![0]!.run = null }, 'pack.column-value-invalid', (s) => partRow(s, 'provenance', 0)],
  ['a run on provenance row 1', (r) => { r.provenance![1]!.run = '{"soup":"s1"}' }, 'pack.provenance-run-not-first', (s) => partRow(s, 'provenance', 1)],
  ['a provenance pack that is not a hash', (r) => { r.provenance![1]!.pack = 'sha256:abc' }, 'pack.hash-malformed', (s) => partRow(s, 'provenance', 1)],
  ['a provenance row naming a search run', (r) => { r.provenance![1]!.target = `search_run:${SEARCH}:2` }, 'pack.row-target-invalid', sortedRow('provenance', (p) => String(p.target).startsWith('search_run:'))],
  ['an annotation rating written as a string', (r) => { r.annotations!.find((a) => a.field === 'rating')!.value = '"4"' }, 'pack.annotation-value-invalid', sortedRow('annotations', (a) => a.field === 'rating')],
  ['an annotation rating of 6', (r) => { r.annotations!.find((a) => a.field === 'rating')!.value = '6' }, 'pack.annotation-value-invalid', sortedRow('annotations', (a) => a.field === 'rating')],
  ['annotation tags that are not a list of strings', (r) => { r.annotations!.find((a) => a.field === 'tags')!.value = '"small"' }, 'pack.annotation-value-invalid', sortedRow('annotations', (a) => a.field === 'tags')],
  ['an annotation score written as a number', (r) => { r.annotations!.find((a) => a.field === 'score')!.value = '0.35' }, 'pack.annotation-value-invalid', sortedRow('annotations', (a) => a.field === 'score')],
  ['an annotation score not as ECMAScript writes it', (r) => { r.annotations!.find((a) => a.field === 'score')!.value = '"0.350"' }, 'pack.annotation-value-invalid', sortedRow('annotations', (a) => a.field === 'score')],
  ['an annotation name that is not a string', (r) => { r.annotations!.find((a) => a.field === 'name')!.value = '["Glider"]' }, 'pack.annotation-value-invalid', sortedRow('annotations', (a) => a.field === 'name')],
  ['a score model on an annotation other than score', (r) => { r.annotations!.find((a) => a.field === 'name')!.score_model = 'taste 1' }, 'pack.annotation-value-invalid', sortedRow('annotations', (a) => a.field === 'name')],
  ['an ant run of an outcome the spec does not name', (r) => { r.ants![0]!.outcome = 'spiral' }, 'pack.column-value-invalid', (_s, r) => `ant:${String(r.ants![0]!.id)}`],
  ['a highway without its speed', (r) => { Object.assign(r.ants![0]!, { outcome: 'highway', period: 104n, dx: -2, dy: 2, onset: 9977n }) }, 'pack.ant-outcome-columns', (_s, r) => `ant:${String(r.ants![0]!.id)}`],
  ['a periodic ant run without its onset', (r) => { Object.assign(r.ants![0]!, { outcome: 'periodic', period: 4n, dx: 0, dy: 0 }) }, 'pack.ant-outcome-columns', (_s, r) => `ant:${String(r.ants![0]!.id)}`],
  ['a chaotic ant run with a speed', (r) => { r.ants![0]!.speed = 0.5 }, 'pack.ant-outcome-columns', (_s, r) => `ant:${String(r.ants![0]!.id)}`],
  ['media of a kind the spec does not name', (r) => { r.media![1]!.kind = 'video' }, 'pack.column-value-invalid', sortedRow('media', (m) => m.kind === 'video')],
  ['a score model of another kind', (r) => { r.score_models![0]!.kind = 'linear 1' }, 'pack.column-value-invalid', (s) => partRow(s, 'score_models', 0)],
  ['a score model with a weight too few', (r) => { r.score_models![0]!.weights = [0.5] }, 'pack.score-model-weights-mismatch', (s) => partRow(s, 'score_models', 0)],
  ['a rating of a target in no target form', (r) => { r.ratings![2]!.target = 'search_run:2' }, 'pack.row-target-invalid', sortedRow('ratings', (x) => x.target === 'search_run:2')],
  ['an alias of a search run', (r) => { r.aliases![2]!.target = `search_run:${SEARCH}:2` }, 'pack.row-target-invalid', (s) => partRow(s, 'aliases', 2)],
  ['an alias whose old id is of another kind than its target', (r) => { r.aliases![2]!.old_id = '2'.repeat(32) }, 'pack.row-target-invalid', sortedRow('aliases', (x) => x.old_id === '2'.repeat(32))],
  ['an alias whose old id is its target\'s', (r) => { r.aliases![2]!.old_id = r.ants![0]!.id }, 'pack.row-target-invalid', sortedRow('aliases', (x) => x.reason === 'scheme-change' && String(x.target).startsWith('ant:'))],
  ['a rules row given again with other columns', (r) => { r.rules!.push({ ...r.rules![0]!, semantics: '2' }) }, 'pack.fact-conflict', sortedRow('rules', (x) => x.semantics === '2')],
  ['a tilings row given again with another name', (r) => { r.tilings!.push({ ...r.tilings![0]!, name: 'Squares' }) }, 'pack.fact-conflict', () => 'tiling:square'],
  ['a Quick Start entry made from a Quick Start entry', (r) => { r.quickstart![0]!.source = `quickstart:${String(r.quickstart![0]!.id)}` }, 'pack.row-target-invalid', (_s, r) => `quickstart:${String(r.quickstart![0]!.id)}`],
]

t.test('each rule broken alone is refused at level 1, on its row', async (t) => {
  await Promise.all(cases.map(async ([what, change, code, target]) => {
    const rows = keptRows()
    change(rows)
    // Row groups of one row: a rule that spans rows (one main rule per pattern) spans row groups too.
    const s = await buildStore(fresh(), { rows, search: false, rowGroupRows: 1 })
    const found = failures(await check(s))
    t.same(found.map((i) => `${i.level} ${i.code}`), [`1 ${code}`], `${what}: ${JSON.stringify(found)}`)
    t.equal(levelOf(code), 1, `${code} is a level-1 rule`)
    t.equal(found[0]?.target, target(s, rows), `${what}: on the row that breaks it`)
  }))
})


t.test('a site is set only on patterns of aperiodic tilings, and sites only on their verifications', async (t) => {
  const site = { patch: { family: 'penrose-kd', params: null, level: 4 }, anchor: 0, anchor_shape: 0, anchor_point: [0.5, 0.25], radius: 1, nb: 'edge', tiles: [], graph: null }
  const rows = cleanRows({ aperiodic: true })
  rows.patterns!.find((p) => p.pin_key === 'penrose-kd')!.site = site
  const kept = await buildStore(fresh(), { rows, search: false })
  t.same(failures(await check(kept)), [], 'a site on the Penrose pattern, and sites on its verification')
  const block = rows.patterns!.find((p) => p.class === 'still_life' && p.pin_key === 'square')!
  block.site = site
  const found = failures(await check(await buildStore(fresh(), { rows, search: false })))
  t.same(found.map((i) => `${i.level} ${i.code} ${i.target}`), [`1 pack.pattern-site-column pattern:${String(block.id)}`], 'a site on a square-grid pattern')
})

/** The Penrose pattern of the clean rows made a mover (in its main rule, B2/S1), with its verification's id. */
function penroseMover(rows: Record<string, Row[]>): Row {
  const p = rows.patterns!.find((x) => x.pin_key === 'penrose-kd')!
  const verification = rows.verifications!.find((v) => v.pattern_id === p.id)!
  const facts = { pinKey: 'penrose-kd', model: 'bs', neighbourhood: 'edge' as const, stepsPerGen: 1, class: 'mover' as const, period: 1, dx: 0, dy: 0, phases: p.phases as Cell[][], tileTypes: 1, rule: 'B2/S1' }
  const { identity, canonical } = patternIdentity(facts)
  Object.assign(p, { id: patternId(identity, p.pin as string), identity, canonical, class: 'mover', class_group: 'mover', rule: 'B2/S1' })
  verification.pattern_id = p.id
  return p
}

t.test('a range only in a rule some B/S or Generations rules row has, a mover only on an aperiodic mover: here and in lanes (the calling thread\'s and workers\')', async (t) => {
  const cyclic = { notation: 'C3', neighbourhood: 'edge', steps_per_gen: 1, family: 'cyclic', semantics: '1', states: 0, birth: null, survive: null }
  const kept = () => {
    const rows = cleanRows({ aperiodic: true })
    penroseMover(rows)
    // B3/S23 is B/S on touch and cyclic on edge: the pattern's neighbourhood, read later, picks the row, so its range stands.
    rows.rules!.push(cyclic, { ...cyclic, notation: 'B3/S23' })
    rows.verifications!.find((v) => v.rule === 'B3/S23')!.range = RANGE
    // The Penrose pattern's main rule, B2/S1, has no rules row: left alone, as a pin no tiling has is.
    Object.assign(rows.verifications!.find((v) => v.sites !== null)!, { range: RANGE, mover: '{"followed":100}' })
    return rows
  }
  const run = async (rows: Record<string, Row[]>, threads: number, moverPatternCap?: number) => {
    const s = await buildStore(fresh(), { rows, search: false })
    const issues: CheckIssue[] = []
    for await (const i of checkPack(s.dir, { level: 1, threads, threadPartBytes: 0, ...(moverPatternCap === undefined ? {} : { caps: { moverPatterns: moverPatternCap } }) })) issues.push(i)
    return { s, found: failures(issues), notes: issues.filter((i) => i.note) }
  }
  for (const threads of [0, 2, 3]) {
    const { found } = await run(kept(), threads)
    t.same(found, [], `kept, ${threads} threads: ${JSON.stringify(found)}`)
  }
  const broken: [string, (rows: Record<string, Row[]>) => Row, RegExp][] = [
    ['a range in a rule whose rules rows are all cyclic', (rows) => Object.assign(rows.verifications!.find((v) => v.rule === 'B2/S345/4')!, { rule: 'C3', range: RANGE }), /range is set, but rule "C3" is a cyclic rule/],
    ['a mover on a square-grid pattern\'s main verification', (rows) => Object.assign(rows.verifications!.find((v) => v.rule === 'B2/S345/4')!, { mover: '{"followed":100}' }), /mover is set, but its pin is a lattice tiling's/],
  ]
  for (const [what, change, detail] of broken) {
    for (const threads of [0, 2, 3]) {
      const rows = kept()
      const changed = change(rows)
      const { s, found } = await run(rows, threads)
      t.same(found.map((i) => `${i.level} ${i.code}`), ['1 pack.verification-range-invalid'], `${what}, ${threads} threads: ${JSON.stringify(found)}`)
      t.equal(found[0]?.target, sortedRow('verifications', (v) => v === changed)(s, rows), `${what}: on its row`)
      t.match(found[0]?.detail, detail)
    }
  }
  // The pattern is read after its verification: the finding is on the pattern.
  const stillLife = () => {
    const rows = kept()
    const block = rows.patterns!.find((p) => p.class === 'still_life' && p.pin_key === 'square')!
    const p = rows.patterns!.find((x) => x.pin_key === 'penrose-kd')!
    rows.verifications!.push({ ...verificationRow(block, LIFE), pin: p.pin, publisher: OTHER_PUBLISHER, mover: '{"followed":100}' })
    return { rows, block }
  }
  for (const threads of [0, 2, 3]) {
    const { rows, block } = stillLife()
    const { found, notes } = await run(rows, threads)
    t.same(found.map((i) => `${i.level} ${i.code} ${i.target}`), [`1 pack.verification-range-invalid pattern:${String(block.id)}`], `a mover cell on a still life's main verification, ${threads} threads: ${JSON.stringify(found)}`)
    t.match(found[0]?.detail, /a main verification of it has a mover cell, but it is a still_life/)
    t.same(notes, [], 'no note: every mover pattern kept')
    // One id kept: the first read (verifications sort by pattern_id); the other pattern's class is not checked.
    const capped = await run(rows, threads, 1)
    const blockFirst = String(block.id) < String(rows.patterns!.find((x) => x.pin_key === 'penrose-kd')!.id)
    t.same(capped.found.map((i) => i.target), blockFirst ? [`pattern:${String(block.id)}`] : [], `${threads} threads, one id kept`)
    t.same(capped.notes.map((i) => `${i.level} ${i.code}`), ['1 pack.mover-class-unchecked'], 'and a note says so')
  }
})

t.test('the raters book judges after each manifest only what its rows changed, each finding once', async (t) => {
  const book = new RaterBook()
  const [A, B, C, D] = ['rater-000000000000000a', 'rater-000000000000000b', 'rater-000000000000000c', 'rater-000000000000000d']
  const rating = (r: string, note: string | null) => ({ rater: r, note })
  const codes = () => book.findings().map((f) => `${f.code} ${f.at}`)
  book.rating(rating(A, 'Small.'), 'ratings 0')
  book.rater(rater(GROUP, { members: [B, C] }), 'raters 0')
  book.rater(rater(B), 'raters 1')
  t.same(codes(), ['pack.rater-row-missing ratings 0', 'pack.rater-row-missing raters 0'], 'A and C have no row; A\'s note waits for a row')
  book.rater(rater(A), 'raters 2')
  book.rater(rater(C, { members: [B] }), 'raters 3')
  t.same(codes(), ['pack.rating-note-without-consent ratings 0', 'pack.rater-row-invalid raters 0'], 'A\'s rows do not share notes; C, a member of the group judged before, has become a group')
  t.same(codes(), [], 'nothing new, nothing found')
  book.rater(rater(A, { notes: true }), 'raters 4')
  book.rating(rating(D, null), 'ratings 1')
  book.rater(rater('rater-00000000000000ee', { members: [C] }), 'raters 5')
  t.same(codes(), ['pack.rater-row-missing ratings 1', 'pack.rater-row-invalid raters 5'], 'each finding once: D\'s missing row, and a new group listing C')
})

t.test('the raters book keeps at most its cap of raters: those beyond are counted, not judged, and those kept still are', async (t) => {
  const book = new RaterBook(3)
  const id = (n: number) => `rater-${n.toString(16).padStart(16, '0')}`
  const codes = () => book.findings().map((f) => `${f.code} ${f.at}`)
  book.rating({ rater: id(1), note: null }, 'ratings 0')
  book.rating({ rater: id(2), note: 'Nice.' }, 'ratings 1')
  book.rating({ rater: id(3), note: null }, 'ratings 2')
  book.rating({ rater: id(4), note: null }, 'ratings 3')
  t.equal(book.unheld, 1, 'a fourth rater is beyond the cap')
  book.rater(rater(id(2)), 'raters 0')
  book.rater(rater(id(5)), 'raters 1')
  t.equal(book.unheld, 2, 'a raters row of a rater beyond it too')
  t.same(codes(), ['pack.rater-row-missing ratings 0', 'pack.rater-row-missing ratings 2', 'pack.rating-note-without-consent ratings 1'], 'the raters kept are judged (a row kept for one named before the cap); the others are not')
  book.rating({ rater: id(1), note: null }, 'ratings 4')
  t.equal(book.unheld, 2, 'a rater kept stays kept')
})

t.test('rule and gun are set exactly for their classes, both ways', async (t) => {
  for (const cls of ['still_life', 'oscillator', 'spaceship', 'puffer', 'mover', 'gun', 'other']) {
    const withRule = ['puffer', 'mover', 'gun', 'other'].includes(cls)
    t.equal(patternClassColumnFinding('rule', cls, withRule), undefined, `a ${cls} with${withRule ? '' : 'out'} a rule`)
    t.equal(patternClassColumnFinding('rule', cls, !withRule)?.code, ROW_RULE_CODES.patternRule, `a ${cls} with${withRule ? 'out' : ''} a rule`)
    t.equal(patternClassColumnFinding('gun', cls, cls === 'gun'), undefined, `a ${cls} with${cls === 'gun' ? '' : 'out'} a gun`)
    t.equal(patternClassColumnFinding('gun', cls, cls !== 'gun')?.code, ROW_RULE_CODES.patternGun, `a ${cls} with${cls === 'gun' ? 'out' : ''} a gun`)
  }
  t.match(patternClassColumnFinding('gun', 'gun', false)?.detail, /a gun has the ship it emits in gun, which is null/)
})

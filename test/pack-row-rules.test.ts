/**
 * The column rules of "Tables" that hold within a row (src/formats/pack/row-rules.ts), as checkPack finds
 * them at level 1: a store made with every rule kept passes, and each case breaks exactly one rule of one
 * row, which is reported with its code at level 1 on that row.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { checkPack, levelOf, type CheckIssue } from '../src/formats/pack/check.js'
import { quickstartId } from '../src/formats/pack/identity.js'
import { patternClassColumnFinding, ROW_RULE_CODES } from '../src/formats/pack/row-rules.js'
import { objectPath } from '../src/formats/pack/store.js'
import { PACK_TABLES, rowComparator } from '../src/formats/pack/table-schemas.js'
import { LIFE } from '../src/sim/pack-records.js'
import { BLOCK, PUBLISHER_ID, T0, buildStore, cleanRows, patternRow, quickstartRow, verificationRow, type BuiltStore, type Row } from './pack-check-fixtures.js'

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

/**
 * The clean pack's rows, plus rows that keep every rule at its edge: a mover with its rule whose
 * min_cells and max_cells span more than its phases, JSON cells with non-integer numbers, a scene naming
 * a registry palette and one of its own, both alias reasons, an annotation of rev 1, a group of two raters
 * rating beside a member whose rating has a note she shares, and a pattern's main rule verified twice by
 * its publisher and another main rule by another publisher.
 */
function keptRows(): Record<string, Row[]> {
  const rows = cleanRows()
  const mover = { ...patternRow(LIFE, BLOCK, { class: 'mover', rule: 'B3/S23' }), min_cells: 2, max_cells: 9 }
  rows.patterns!.push(mover)
  const glider = rows.patterns!.find((p) => p.class === 'spaceship')!
  rows.verifications!.push(
    { ...verificationRow(glider, LIFE), date: '2026-11-12T00:00:00Z', range: '{"bits":9,"density":0.35}' },
    { ...verificationRow(glider, { ...LIFE, notation: 'B36/S23' }), publisher: OTHER_PUBLISHER },
  )
  rows.media![0]!.render = '{"palette":"Ember","scale":0.5}'
  rows.quickstart = [sceneRow('{"automata":[{"palette":"Dusk","rule":"B3/S23","tiling":"square"}],"palette":"Deep Sea","palettes":{"Dusk":["#201040","#ff8800"]}}')]
  rows.aliases = [
    { old_id: '0'.repeat(32), target: `pattern:${String(glider.id)}`, reason: 'geometry-change', date: T0 },
    { old_id: '1'.repeat(32), target: `pattern:${String(glider.id)}`, reason: 'scheme-change', date: T0 },
  ]
  rows.raters = [rater(GROUP, { members: [MEMBER_A, MEMBER_B] }), rater(MEMBER_A, { display_name: 'A Rater', notes: true }), rater(MEMBER_B)]
  rows.annotations = [{ target: `pattern:${String(glider.id)}`, publisher: PUBLISHER_ID, field: 'score', value: '"0.35"', score_model: 'taste 1', date: T0, rev: 1n }]
  rows.ratings = [
    { rater: GROUP, target: `pattern:${String(glider.id)}`, scale: 'stars-1-5 1', verdict: '4', note: null, round: 'review', date: T0 },
    { rater: MEMBER_A, target: `pattern:${String(glider.id)}`, scale: 'stars-1-5 1', verdict: '5', note: 'Moves, and is small.', round: 'review', date: T0 },
  ]
  return rows
}

async function check(s: BuiltStore): Promise<CheckIssue[]> {
  const issues: CheckIssue[] = []
  for await (const i of checkPack(s.dir, { level: 1 })) issues.push(i)
  return issues
}
const failures = (issues: CheckIssue[]) => issues.filter((i) => !i.note)
const partRow = (s: BuiltStore, table: string, row: number) => `${objectPath(s.parts[table]![0]!.object, 'parquet')} row ${row}`

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
  ['an annotation of rev 0', (r) => { r.annotations![0]!.rev = 0n }, 'pack.annotation-rev-invalid', (s) => partRow(s, 'annotations', 0)],
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

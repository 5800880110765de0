import { createHash } from 'node:crypto'
import t from 'tap'
import {
  IDENTITY_CODES, antId, antIdentity, canonicalPicture, checkAntRow, checkPatternRow, checkQuickstartRow, identityLines, normalisePhases,
  patternId, patternIdentity, quickstartId, type Cell,
} from '../src/formats/pack/identity.js'

const SQUARE_PIN = '0145310ebd49abfe89eb01c42ecaf459'
const cell = (i: number, j: number, s = 1, k = 0): Cell => ({ i, j, k, s })
// The Life glider, phases in one frame (each is the generation after the one before), away from the origin.
const GLIDER = [
  [cell(11, 10), cell(12, 11), cell(10, 12), cell(11, 12), cell(12, 12)],
  [cell(10, 11), cell(12, 11), cell(11, 12), cell(12, 12), cell(11, 13)],
  [cell(12, 11), cell(10, 12), cell(12, 12), cell(11, 13), cell(12, 13)],
  [cell(11, 11), cell(12, 12), cell(13, 12), cell(11, 13), cell(12, 13)],
]

t.test('the spec\'s own recipe: id = sha256(identity + "\\n" + pin)[:32]', async (t) => {
  const identity = 'jetcarp-pattern-v3\ntiling=square'
  t.equal(patternId(identity, SQUARE_PIN), createHash('sha256').update(identity + '\n' + SQUARE_PIN).digest('hex').slice(0, 32))
  t.match(antId('x', SQUARE_PIN), /^ant-[0-9a-f]{32}$/)
  t.equal(quickstartId('{"scene":1}', SQUARE_PIN), 'qs-' + createHash('sha256').update('{"scene":1}\n' + SQUARE_PIN).digest('hex').slice(0, 32))
})

t.test('a glider: translation does not change its identity; its lines and picture', async (t) => {
  const facts = { pinKey: 'square', model: 'bs', neighbourhood: 'touch' as const, stepsPerGen: 1, class: 'spaceship' as const, period: 4, dx: 1, dy: 1, phases: GLIDER, tileTypes: 1 }
  const a = patternIdentity(facts)
  const moved = patternIdentity({ ...facts, phases: GLIDER.map((p) => p.map((c) => ({ ...c, i: c.i - 40, j: c.j + 7 }))) })
  t.equal(a.identity, moved.identity, 'the same pattern elsewhere on the plane has the same identity')
  t.equal(a.canonical, '.o/..o/ooo')
  t.same(a.phases[0], [cell(0, 2), cell(1, 0), cell(1, 2), cell(2, 1), cell(2, 2)], 'phase 0 at the origin, sorted by i, j, k')
  t.same(a.phases[1]![0], cell(0, 1), 'later phases move with it (one frame)')
  const lines = identityLines(a.identity, 'jetcarp-pattern-v3')!
  t.same([...lines.keys()], ['tiling', 'model', 'nb', 'steps', 'class', 'period', 'd', 'phases', 'canonical'])
  t.equal(lines.get('d'), '1,1')
  t.equal(lines.get('phases')!.split(';').length, 4)
  t.notOk(a.identity.endsWith('\n'))
  t.throws(() => patternIdentity({ ...facts, class: 'gun' }), /exact rule/, 'a gun states its rule')
  t.match(patternIdentity({ ...facts, class: 'gun', rule: 'B3/S23' }).identity, /\nrule=B3\/S23\nphases=/)
})

t.test('pictures: tile types, states, empty rows', async (t) => {
  t.equal(canonicalPicture([cell(0, 0, 1, 1), cell(1, 0, 3, 0), cell(0, 2, 2, 0)], 2), '.o3/ /2'.replace(' ', ''), 'two types a cell, a row of nothing is empty')
  t.equal(canonicalPicture([cell(0, 0, 40)], 1), '(40)')
  t.same(normalisePhases([[]]), [[]])
})

t.test('pictures and phases of unusual cells: repeated, out of order, k past the tile types, a state below 0', async (t) => {
  t.equal(canonicalPicture([cell(2, 0), cell(0, 1, 2), cell(0, 0, 3), cell(2, 0, 0)], 1), '3/2', 'cells in any order; of two same cells the later wins')
  t.equal(canonicalPicture([cell(0, 0, 1, 3), cell(1, 0, 2, 0)], 2), '..o2', 'a k past the tile types lengthens its group')
  t.equal(canonicalPicture([cell(0, 0, -1), cell(1, 0, 1)], 1), 'o', 'a state below 0 has no character')
  t.same(normalisePhases([[cell(3, 4), cell(2, 5, 2), cell(2, 5, 3), cell(2, 4)]]), [[cell(0, 0), cell(0, 1, 2), cell(0, 1, 3), cell(1, 0)]], 'same cells keep their order')
  const many = Array.from({ length: 100 }, (_, n) => cell((n * 37) % 11, (n * 13) % 7, n))
  const sorted = normalisePhases([many])[0]!
  t.ok(sorted.every((c, n) => n === 0 || c.i > sorted[n - 1]!.i || (c.i === sorted[n - 1]!.i && (c.j > sorted[n - 1]!.j || (c.j === sorted[n - 1]!.j && c.s > sorted[n - 1]!.s)))), 'a long phase: by i, j, k, same cells in their order')
})

t.test('level 1 on a pattern row: the id, the lines against the columns, the typed phases', async (t) => {
  const { identity, phases, canonical } = patternIdentity({ pinKey: 'square', model: 'bs', neighbourhood: 'touch', stepsPerGen: 1, class: 'spaceship', period: 4, dx: 1, dy: 1, phases: GLIDER, tileTypes: 1 })
  const row = { id: patternId(identity, SQUARE_PIN), identity, pin: SQUARE_PIN, pin_key: 'square', class: 'spaceship', neighbourhood: 'touch', canonical, phases, period: 4n, dx: 1, dy: 1, steps_per_gen: 1, model: 'bs' }
  t.same(checkPatternRow(row), { findings: [], spelling: 'ours' })
  const codes = (r: object) => checkPatternRow({ ...row, ...r }).findings.map((f) => f.code)
  t.same(codes({ id: '0'.repeat(32) }), [IDENTITY_CODES.idMismatch])
  t.same(codes({ class: 'oscillator' }), [IDENTITY_CODES.identityColumn])
  t.same(codes({ neighbourhood: 'edge' }), [IDENTITY_CODES.identityColumn])
  t.same(codes({ canonical: 'ooo' }), [IDENTITY_CODES.identityColumn])
  t.same(codes({ dy: -1 }), [IDENTITY_CODES.identityColumn])
  t.same(codes({ phases: [phases[0], phases[2], phases[1], phases[3]] }), [IDENTITY_CODES.phasesMismatch], 'phases out of order differ from the line')
  t.same(codes({ phases: [[{ i: 'x' }]] }), [IDENTITY_CODES.phasesMismatch])
  const other = checkPatternRow({ ...row, identity: 'jetcarp-pattern-v9\nwhatever', id: patternId('jetcarp-pattern-v9\nwhatever', SQUARE_PIN) })
  t.same(other, { findings: [], spelling: 'unknown' }, 'another spelling: only the hash can be checked')
})

t.test('level 1 on ant and Quick Start rows', async (t) => {
  const identity = antIdentity({ pinKey: 'square', rule: 'RL', kind: 'string', states: 1, colors: 2, start: '"empty"' })
  t.equal(identity, 'jetcarp-ant-v1\ntiling=square\nrule=RL\nkind=string\nstates=1\ncolors=2\nstart="empty"')
  t.same(checkAntRow({ id: antId(identity, SQUARE_PIN), identity, pin: SQUARE_PIN }), [])
  t.same(checkAntRow({ id: antId(identity, SQUARE_PIN).slice(4), identity, pin: SQUARE_PIN }).map((f) => f.code), [IDENTITY_CODES.idMismatch], 'the ant- prefix is part of the id')
  const scene = '{"automata":[]}'
  t.same(checkQuickstartRow({ id: quickstartId(scene, SQUARE_PIN), scene, pin: SQUARE_PIN }), [])
  t.same(checkQuickstartRow({ id: quickstartId(scene + ' ', SQUARE_PIN), scene, pin: SQUARE_PIN }).map((f) => f.code), [IDENTITY_CODES.idMismatch])
})

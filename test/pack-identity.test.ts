import { createHash } from 'node:crypto'
import t from 'tap'
import { seededRandom } from '../src/sim/random.js'
import {
  IDENTITY_CODES, antId, antIdentity, canonicalPicture, normalisePhases, patternId, patternIdentity, PictureTooLong, quickstartId, writeNumber, type Cell,
} from '../src/formats/pack/records/identity.js'
import { checkAntRow, checkPatternIdentity, checkQuickstartRow, type PatternCells, type TextCell } from '../src/formats/pack/records/identity-check.js'

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
  const [scheme, ...lines] = a.identity.split('\n')
  t.equal(scheme, 'jetcarp-pattern-v3')
  const values = new Map(lines.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]))
  t.same([...values.keys()], ['tiling', 'model', 'nb', 'steps', 'class', 'period', 'd', 'phases', 'canonical'])
  t.equal(values.get('d'), '1,1')
  t.equal(values.get('phases')!.split(';').length, 4)
  t.notOk(a.identity.endsWith('\n'))
  t.throws(() => patternIdentity({ ...facts, class: 'gun' }), /exact rule/, 'a gun states its rule')
  t.match(patternIdentity({ ...facts, class: 'gun', rule: 'B3/S23' }).identity, /\nrule=B3\/S23\nphases=/)
})

t.test('a pattern\'s canonical column is its identity\'s picture: short, long, past the scratch, after a head of more bytes than characters', async (t) => {
  const facts = { pinKey: 'square', model: 'bs', neighbourhood: 'touch' as const, stepsPerGen: 1, class: 'still_life' as const, period: 1, dx: 0, dy: 0, tileTypes: 1 }
  const pictures = [
    [cell(0, 0)],
    [cell(0, 0, 2), cell(20, 0, 2 ** 40), cell(3, 1, 35)],
    [cell(0, 0), cell(70_000, 0), cell(5, 2_000)],
  ]
  for (const model of ['bs', 'bs-é€😀']) {
    for (const phase of pictures) {
      const made = patternIdentity({ ...facts, model, phases: [phase] })
      const picture = canonicalPicture(made.phases[0]!, 1)
      t.equal(made.canonical, picture, `${model}: ${picture.length} characters`)
      t.ok(made.identity.endsWith(`\ncanonical=${picture}`), 'the identity ends with it')
      t.ok(made.identity.includes(`\nmodel=${model}\n`))
    }
  }
  t.match(canonicalPicture([cell(0, 0, 2 ** 40)], 1), '(1099511627776)')
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
  for (const phases of [[[cell(3, 4), cell(2, 5, 2), cell(2, 5, 3), cell(2, 4)], [cell(9, 9)]], [many], [[cell(0, 0), cell(0, 1)]], [[]]]) {
    const own = phases.map((p) => p.map((c) => ({ ...c })))
    const moved = normalisePhases(own, true)
    t.same(moved, normalisePhases(phases), 'in place: the same phases as a copy')
    t.ok(moved.every((p, n) => p === own[n]), 'in place: the lists given, moved and sorted')
  }
})

/**
 * The picture as docs/pack-format-notes.md states it, written plainly: rows j = 0 to the last, joined by `/`;
 * a row is, for each i from 0, its tile types' characters (the later of two same cells winning, a k past
 * the tile types lengthening the group with empty places, one below 0 left out, a state below 0 empty),
 * `.` for each type of an i with no cell; trailing `.` left off. Cells at i or j below 0 are not drawn.
 */
function pictureByTheRule(phase0: Cell[], tileTypes: number): string {
  const rows: string[] = []
  const maxJ = phase0.reduce((m, c) => Math.max(m, c.j), -1)
  for (let j = 0; j <= maxJ; j++) {
    const cells = phase0.filter((c) => c.j === j && c.i >= 0)
    const maxI = cells.reduce((m, c) => Math.max(m, c.i), -1)
    let text = ''
    for (let i = 0; i <= maxI; i++) {
      const group: (string | undefined)[] = Array<string>(tileTypes).fill('.')
      for (const c of cells) if (c.i === i && c.k >= 0) group[c.k] = c.s < 0 ? undefined : c.s < 36 ? '.o23456789abcdefghijklmnopqrstuvwxyz'[c.s] : `(${c.s})`
      text += group.join('')
    }
    rows.push(text.replace(/\.+$/, ''))
  }
  return rows.join('/')
}

t.test('pictures agree with the rule written plainly, over 20,000 random phases with odd cells', async (t) => {
  const random = seededRandom(7)
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1))
  for (let n = 0; n < 20_000; n++) {
    const tileTypes = int(1, 3)
    const odd = random() < 0.3
    const phase0 = Array.from({ length: int(0, 12) }, () => cell(int(odd ? -1 : 0, 9), int(odd ? -1 : 0, 5), odd ? int(-1, 40) : int(0, 3), odd ? int(-1, tileTypes + 1) : int(0, tileTypes - 1)))
    const got = canonicalPicture(phase0, tileTypes)
    const expected = pictureByTheRule(phase0, tileTypes)
    if (got !== expected) {
      t.fail(`${JSON.stringify(phase0)} in ${tileTypes} types: ${JSON.stringify(got)}, the rule says ${JSON.stringify(expected)}`)
      return
    }
  }
  t.pass('every picture as the rule draws it')
})

t.test('a picture costs what it holds: cells far apart are refused at the 1 MiB a string cell holds, before it is made', async (t) => {
  const far = 300_000_000
  const rss = process.memoryUsage().rss
  t.equal(canonicalPicture([cell(0, 0), cell(far, 0, 0)], 1), 'o', 'a dead cell far along its row is left off, not drawn')
  t.equal(canonicalPicture([cell(0, 0, 1, far)], 1), '.o', 'a tile type far past the tiling\'s lengthens its group with empty places')
  // Drawing either would take 300 MB (a character a place).
  t.ok(process.memoryUsage().rss - rss < 128 * 1024 * 1024, 'memory stays near what the pictures hold')
  const tooLong = (phase0: Cell[], tileTypes: number): string | undefined => {
    try {
      return `made, ${canonicalPicture(phase0, tileTypes).length} characters`
    } catch (err) {
      return err instanceof PictureTooLong ? /longer than 1048576 bytes/.exec(err.message)?.[0] : String(err)
    }
  }
  t.equal(tooLong([cell(0, 0), cell(far, 0)], 1), 'longer than 1048576 bytes', 'a live cell far along its row')
  t.equal(tooLong([cell(0, 0), cell(0, far, 0)], 1), 'longer than 1048576 bytes', 'a cell far down: a `/` a row')
  t.equal(tooLong([cell(0, 0), cell(1, 0)], far), 'longer than 1048576 bytes', 'a tiling of many tile types')
  t.equal(canonicalPicture([cell(0, 0), cell(0, 1024 * 1024 - 1, 0)], 1), 'o' + '/'.repeat(1024 * 1024 - 1), 'a picture of exactly 1 MiB is made')
  t.equal(tooLong([cell(0, 0), cell(0, 1024 * 1024 - 1)], 1), 'longer than 1048576 bytes', 'one byte more is not')
})

/** A pattern row's cells as a decoded part holds them: text as UTF-8 bytes (each cell in a buffer of its own, at an offset), phases flat. */
function cellsOf(row: { id: string; identity: string; pin: string; pin_key: string; model: string; neighbourhood: string; class: string; canonical: string; steps_per_gen: number; period: bigint | number; dx: number; dy: number; phases: Cell[][] }): PatternCells {
  const text = (s: string): TextCell => {
    const bytes = Buffer.concat([Buffer.from('xx'), Buffer.from(s), Buffer.from(';,=\n')])
    return { bytes, start: 2, end: bytes.length - 4 }
  }
  const cells = row.phases.flat()
  const cellOffsets = Int32Array.from([0, ...row.phases.map((_p, q) => row.phases.slice(0, q + 1).reduce((n, p) => n + p.length, 0))])
  return {
    id: text(row.id), identity: text(row.identity), pin: text(row.pin), pinKey: text(row.pin_key), model: text(row.model), neighbourhood: text(row.neighbourhood),
    class: text(row.class), canonical: text(row.canonical), stepsPerGen: row.steps_per_gen, period: row.period, dx: row.dx, dy: row.dy,
    phases: { first: 0, last: row.phases.length, cellOffsets, i: Int32Array.from(cells, (c) => c.i), j: Int32Array.from(cells, (c) => c.j), k: Int32Array.from(cells, (c) => c.k), s: Int32Array.from(cells, (c) => c.s) },
  }
}

t.test('level 1 on a pattern\'s cells: the id, the lines against the columns, the typed phases', async (t) => {
  const { identity, phases, canonical } = patternIdentity({ pinKey: 'square', model: 'bs', neighbourhood: 'touch', stepsPerGen: 1, class: 'spaceship', period: 4, dx: 1, dy: -1, phases: GLIDER, tileTypes: 1 })
  const row = { id: patternId(identity, SQUARE_PIN), identity, pin: SQUARE_PIN, pin_key: 'square', class: 'spaceship', neighbourhood: 'touch', canonical, phases, period: 4n, dx: 1, dy: -1, steps_per_gen: 1, model: 'bs' }
  const check = (r: object) => {
    const findings: { code: string; detail: string }[] = []
    const spelling = checkPatternIdentity(cellsOf({ ...row, ...r }), findings)
    return { findings, spelling }
  }
  t.same(check({}), { findings: [], spelling: 'ours' })
  const codes = (r: object) => check(r).findings.map((f) => f.code)
  t.same(codes({ id: '0'.repeat(32) }), [IDENTITY_CODES.idMismatch])
  t.same(codes({ id: row.id.slice(0, 31) }), [IDENTITY_CODES.idMismatch], 'an id one digit short')
  t.same(codes({ id: `${row.id}0` }), [IDENTITY_CODES.idMismatch], 'an id one digit long')
  t.same(codes({ id: row.id.toUpperCase() }), [IDENTITY_CODES.idMismatch], 'upper-case hex is another id')
  t.same(codes({ class: 'oscillator' }), [IDENTITY_CODES.identityColumn])
  t.same(codes({ neighbourhood: 'edge' }), [IDENTITY_CODES.identityColumn])
  t.same(codes({ canonical: 'ooo' }), [IDENTITY_CODES.identityColumn])
  t.same(codes({ canonical: `${canonical}.` }), [IDENTITY_CODES.identityColumn], 'a picture one character longer')
  t.same(codes({ dy: 1 }), [IDENTITY_CODES.identityColumn])
  t.same(codes({ dx: -1 }), [IDENTITY_CODES.identityColumn])
  t.same(codes({ dx: 11 }), [IDENTITY_CODES.identityColumn])
  t.same(codes({ steps_per_gen: 10 }), [IDENTITY_CODES.identityColumn])
  t.same(codes({ period: 40n }), [IDENTITY_CODES.identityColumn])
  t.same(codes({ period: 4 }), [], 'a period read as a number')
  t.same(codes({ period: 40 }), [IDENTITY_CODES.identityColumn])
  t.same(codes({ pin_key: 'squares' }), [IDENTITY_CODES.identityColumn])
  t.same(check({ model: 'generations:3' }).findings, [{ code: IDENTITY_CODES.identityColumn, detail: 'model= says "bs", the column "generations:3"' }], 'the finding quotes the line and the column')
  t.same(codes({ phases: [phases[0], phases[2], phases[1], phases[3]] }), [IDENTITY_CODES.phasesMismatch], 'phases out of order differ from the line')
  t.same(codes({ phases: [phases[0], phases[1], phases[2]] }), [IDENTITY_CODES.phasesMismatch], 'a phase missing')
  t.same(codes({ phases: [...phases, []] }), [IDENTITY_CODES.phasesMismatch], 'an empty phase more')
  t.same(codes({ phases: [phases[0]!.slice(1), ...phases.slice(1)] }), [IDENTITY_CODES.phasesMismatch], 'a cell missing')
  t.same(codes({ phases: [phases[0]!.map((c, x) => (x === 2 ? { ...c, s: 12 } : c)), ...phases.slice(1)] }), [IDENTITY_CODES.phasesMismatch], 'a state of 12 where the line says 1')
  t.same(codes({ phases: [] }), [IDENTITY_CODES.phasesMismatch], 'no phases at all')

  // Lines in other spellings, each with its id recomputed so only the spelling is at stake.
  const spelled = (text: string) => check({ identity: text, id: patternId(text, SQUARE_PIN) })
  t.same(spelled('jetcarp-pattern-v9\nwhatever'), { findings: [], spelling: 'unknown' }, 'another scheme: only the hash can be checked')
  t.same(spelled(`${identity}\n`).spelling, 'unknown', 'a final line break is an empty line')
  t.same(spelled(identity.replace('\nclass=', '\nclass=spaceship\nclass=')).spelling, 'unknown', 'a key twice')
  t.same(spelled(identity.replace('\nnb=touch', '\nnb=touch\nfoo=1\nfoo=2')).spelling, 'unknown', 'an unknown key twice')
  t.same(spelled(identity.replace('\nphases=', '\nsteps=1\nphases=')).spelling, 'unknown', 'a key twice, after all the others in their order')
  t.same(spelled(identity.replace('\nphases=', '\nfoo=1\nphases=').replace('\ncanonical=', '\nfoo=2\ncanonical=')).spelling, 'unknown', 'an unknown key twice, after them')
  t.same(check({ identity: `${identity}\nsteps=2`, id: patternId(`${identity}\nsteps=2`, SQUARE_PIN) }).spelling, 'unknown', 'a key again at the end')
  t.same(spelled(identity.replace('\nnb=touch', '\nnb=touch\nrule=B3/S23')), { findings: [], spelling: 'ours' }, 'a line nothing is checked against')
  t.same(spelled(identity.replace('\nnb=touch', '\n=touch')).spelling, 'unknown', 'an empty key')
  t.same(spelled(identity.replace('\nnb=touch', '\nnb touch')).spelling, 'unknown', 'a line without =')
  t.same(spelled(identity.replace('\nsteps=1', '')).findings, [{ code: IDENTITY_CODES.identityMalformed, detail: 'the identity has no steps= line' }])
  t.same(spelled(identity.replace('\nsteps=1', '\nsteps=01')).findings.map((f) => f.code), [IDENTITY_CODES.identityColumn], 'a leading zero is another spelling')
  t.same(spelled(identity.replace('\nd=1,-1', '\nd=1,-1,')).findings.map((f) => f.code), [IDENTITY_CODES.identityColumn])
  const cut = identity.replace('tiling=square', 'tiling=square\nfoo=1')
  t.same(check({ identity: cut, id: patternId(cut, SQUARE_PIN), pin_key: 'square\nfoo=1' }).findings.map((f) => f.code), [IDENTITY_CODES.identityColumn], 'a column with a line break: its line ends there')
  const nonAscii = identity.replace('tiling=square', 'tiling=carré ✓')
  t.same(check({ identity: nonAscii, id: patternId(nonAscii, SQUARE_PIN), pin_key: 'carré ✓' }), { findings: [], spelling: 'ours' }, 'UTF-8 lines and the hash of their bytes')
  const big = identity.replace('\nperiod=4', `\nperiod=${2n ** 60n}`)
  t.same(check({ identity: big, id: patternId(big, SQUARE_PIN), period: 2n ** 60n }), { findings: [], spelling: 'ours' }, 'a period beyond 2^53')
  t.same(check({ identity: big, id: patternId(big, SQUARE_PIN), period: 2n ** 60n + 1n }).findings.map((f) => f.code), [IDENTITY_CODES.identityColumn])
})

/**
 * What checkPatternIdentity finds for an identity whose id is its own hash, by the rule as docs/pack-format-notes.md
 * states it, written plainly: the scheme line, then `key=value` lines, no key twice (else not our spelling);
 * each line of LINE_ORDER missing (but phases=) or unequal to its column is a finding, in that order.
 */
function spellingByTheRule(identity: string, columns: Record<string, string>): { spelling: string; codes: string[] } {
  const [scheme, ...lines] = identity.split('\n')
  if (scheme !== 'jetcarp-pattern-v3') return { spelling: 'unknown', codes: [] }
  const values = new Map<string, string>()
  for (const line of lines) {
    const eq = line.indexOf('=')
    if (eq <= 0 || values.has(line.slice(0, eq))) return { spelling: 'unknown', codes: [] }
    values.set(line.slice(0, eq), line.slice(eq + 1))
  }
  const codes: string[] = []
  for (const key of ['tiling', 'model', 'nb', 'steps', 'class', 'period', 'd', 'canonical', 'phases']) {
    const value = values.get(key)
    if (value === undefined) {
      if (key !== 'phases') codes.push(IDENTITY_CODES.identityMalformed)
    } else if (value !== columns[key]) codes.push(key === 'phases' ? IDENTITY_CODES.phasesMismatch : IDENTITY_CODES.identityColumn)
  }
  return { spelling: 'ours', codes }
}

t.test('level 1 on a pattern\'s lines agrees with the rule written plainly, over 20,000 edits of identities our publisher writes', async (t) => {
  const random = seededRandom(20261205)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!
  const facts = [
    { pinKey: 'square', model: 'bs', neighbourhood: 'touch' as const, stepsPerGen: 1, class: 'other' as const, rule: 'B3/S23', period: 1, dx: 0, dy: 0, phases: [GLIDER[0]!], tileTypes: 1 },
    { pinKey: 'square', model: 'bs', neighbourhood: 'touch' as const, stepsPerGen: 1, class: 'spaceship' as const, period: 4, dx: 1, dy: -1, phases: GLIDER, tileTypes: 1 },
    { pinKey: 'hex', model: 'generations:3', neighbourhood: 'edge' as const, stepsPerGen: 2, class: 'gun' as const, rule: 'B2/S/3', period: 30, dx: 0, dy: 0, phases: [[cell(0, 0, 2), cell(1, 0, 1, 1)]], tileTypes: 2 },
    // Numbers of several digits, and a state past 9.
    { pinKey: 'square', model: 'generations:40', neighbourhood: 'touch' as const, stepsPerGen: 12, class: 'oscillator' as const, period: 107, dx: 0, dy: 0, phases: [[cell(0, 3, 39), cell(120, 0, 12), cell(7, 1045, 1)], [cell(0, 3, 38), cell(120, 0, 11)]], tileTypes: 1 },
    // Each number at 9 and 10, and below 0, where one digit ends.
    { pinKey: 'square', model: 'generations:11', neighbourhood: 'touch' as const, stepsPerGen: 1, class: 'oscillator' as const, period: 2, dx: 0, dy: 0, phases: [[cell(0, 0, 10, 9), cell(10, 9, 9, 10)], [cell(-1, -10, -1, -10), cell(9, 10, -10, -1)]], tileTypes: 11 },
  ]
  // Edits that make or break lines, keys, separators and numbers.
  const alphabet = ['\n', '=', ';', ',', ' ', '-', '0', '1', '2', 'o', '.', '/', 'r', 'x', 'rule=', 'phases=', '\ncanonical=', '\nrule=B3']
  let fast = 0
  for (let n = 0; n < 20_000; n++) {
    const f = pick(facts)
    const written = patternIdentity(f)
    let identity = written.identity
    for (let edits = Math.floor(random() * 3); edits > 0; edits--) {
      const at = Math.floor(random() * (identity.length + 1))
      const kind = random()
      if (kind < 0.4) identity = identity.slice(0, at) + pick(alphabet) + identity.slice(at)
      else if (kind < 0.7) identity = identity.slice(0, at) + identity.slice(at + 1 + Math.floor(random() * 3))
      else if (kind < 0.85) identity = identity.slice(0, at) + pick(alphabet) + identity.slice(at + 1)
      else {
        const lines = identity.split('\n')
        const [a, b] = [Math.floor(random() * lines.length), Math.floor(random() * lines.length)]
        ;[lines[a], lines[b]] = [lines[b]!, lines[a]!]
        identity = lines.join('\n')
      }
    }
    // Now and then a canonical column with a line break, which only a line of the identity can end, as the
    // identity's last line too.
    const broken = random() < 0.05
    const canonical = broken ? `${written.canonical}\nx=1` : written.canonical
    if (broken && random() < 0.5) identity = `${identity}\nx=1`
    if (identity === written.identity && canonical === written.canonical) fast++
    const columns = { tiling: f.pinKey, model: f.model, nb: f.neighbourhood, steps: String(f.stepsPerGen), class: f.class, period: String(f.period), d: `${f.dx},${f.dy}`, canonical, phases: written.phases.map((p) => p.map((c) => `${c.i},${c.j},${c.k},${c.s}`).join(' ')).join(';') }
    const found: { code: string; detail: string }[] = []
    const row = { id: patternId(identity, SQUARE_PIN), identity, pin: SQUARE_PIN, pin_key: f.pinKey, model: f.model, neighbourhood: f.neighbourhood, class: f.class, canonical, steps_per_gen: f.stepsPerGen, period: f.period, dx: f.dx, dy: f.dy, phases: written.phases }
    const spelling = checkPatternIdentity(cellsOf(row), found)
    const expected = spellingByTheRule(identity, columns)
    if (spelling !== expected.spelling || found.map((x) => x.code).join() !== expected.codes.join()) {
      t.fail(`${JSON.stringify(identity)} (canonical ${JSON.stringify(canonical)}): ${spelling} ${JSON.stringify(found)}, the rule says ${JSON.stringify(expected)}`)
      return
    }
  }
  t.ok(fast > 1000 && fast < 19_000, `identities left as written (${fast}) and edited ones both tried`)
})

t.test('level 1 on long identities: spelled and hashed past the scratch\'s first size, or copied to be hashed', async (t) => {
  // Some 60,000 cells in four phases: an identity of about 1 MiB, far past the 16 KiB the scratch starts with.
  const phase = Array.from({ length: 15_000 }, (_x, n) => cell(n % 1000, Math.floor(n / 1000) * 3, 1 + (n % 7)))
  const f = { pinKey: 'square', model: 'generations:8', neighbourhood: 'touch' as const, stepsPerGen: 1, class: 'oscillator' as const, period: 4, dx: 0, dy: 0, phases: [phase, phase, phase, phase], tileTypes: 1 }
  const { identity, phases, canonical } = patternIdentity(f)
  t.ok(identity.length > 500_000, `${identity.length} bytes`)
  const row = { id: patternId(identity, SQUARE_PIN), identity, pin: SQUARE_PIN, pin_key: 'square', model: 'generations:8', neighbourhood: 'touch', class: 'oscillator', canonical, steps_per_gen: 1, period: 4, dx: 0, dy: 0, phases }
  const check = (r: object) => {
    const found: { code: string; detail: string }[] = []
    return { spelling: checkPatternIdentity(cellsOf({ ...row, ...r }), found), codes: found.map((x) => x.code) }
  }
  const short = patternIdentity({ ...f, phases: [[cell(0, 0, 2)]] })
  const shortRow = { ...short, id: patternId(short.identity, SQUARE_PIN) }
  t.same(check(shortRow), { spelling: 'ours', codes: [] }, 'a short one first')
  t.same(check({}), { spelling: 'ours', codes: [] }, 'in our spelling')
  t.same(check({ id: '0'.repeat(32) }), { spelling: 'ours', codes: [IDENTITY_CODES.idMismatch] }, 'its id checked')
  const other = `${identity}\nnote=1`
  t.same(check({ identity: other, id: patternId(other, SQUARE_PIN) }), { spelling: 'ours', codes: [] }, 'one line more: read line by line, hashed from a copy')
  t.same(check({ phases: [phase, phase, phase] }), { spelling: 'ours', codes: [IDENTITY_CODES.phasesMismatch] }, 'a phase fewer in the typed phases')
  // As long as the first short one, other bytes: the scratch grew under what it had spelled.
  const other2 = patternIdentity({ ...f, phases: [[cell(0, 0, 3)]] })
  t.equal(other2.identity.length, short.identity.length)
  t.same(check({ ...other2, id: patternId(other2.identity, SQUARE_PIN) }), { spelling: 'ours', codes: [] }, 'and a short one after, the scratch grown')
})

t.test('writeNumber writes a number as String() does, 32-bit integers digit by digit', async (t) => {
  const random = seededRandom(20261206)
  const edges = [0, -0, 1, 9, 10, 11, 99, 100, -1, -9, -10, -11, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, -(2 ** 31) - 1, 1.5, -0.25, 1e21, 1e-7, 2 ** 53, Number.MAX_VALUE, NaN, Infinity, -Infinity]
  const numbers = [...edges, ...Array.from({ length: 5000 }, () => Math.floor((random() - 0.5) * 2 ** 33))]
  const b = Buffer.alloc(64)
  for (const x of numbers) {
    const end = writeNumber(b, 3, x)
    if (b.toString('latin1', 3, end) !== String(x)) {
      t.fail(`${x}: wrote ${b.toString('latin1', 3, end)}`)
      return
    }
  }
  t.pass(`${numbers.length} numbers`)
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

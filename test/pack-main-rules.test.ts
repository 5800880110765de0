/**
 * Tables keyed by pattern id (src/formats/pack/records/id-table.ts): the main rules of a publish (main-rules.ts),
 * one main rule per pattern and publisher kept across the table's growth with the line of the first; the
 * check's mover patterns (mover-patterns.ts), capped, and read on a thread from shared words; and the
 * publisher's patterns that are not movers, capped, with the lines of their records.
 */
import { createHash } from 'node:crypto'
import t from 'tap'
import { MAIN_RULES_CAP, MainRules, PatternMainRules } from '../src/formats/pack/records/main-rules.js'
import { KeptFacts, KeptText } from '../src/formats/pack/records/kept-facts.js'
import { MoverPatterns, PARENT_PATTERN, StagedPatterns } from '../src/formats/pack/records/mover-patterns.js'
import { contentIdText, contentIdWords } from '../src/formats/pack/records/id-table.js'

const id = (n: number) => createHash('sha256').update(String(n)).digest('hex').slice(0, 32)
const [A, B] = ['SHA256:publisher-a', 'SHA256:publisher-b']

t.test('a content id\'s words give its text back, and order ids as their text does', async (t) => {
  const ids = Array.from({ length: 2000 }, (_, n) => createHash('sha256').update(String(n)).digest('hex').slice(0, 32))
  ids.push('0'.repeat(32), 'f'.repeat(32), '00000000ffffffff0000000000000001', '80000000000000000000000000000000')
  const words = new Uint32Array(4 * ids.length)
  t.ok(ids.every((id, n) => contentIdWords(id, words, 4 * n)), 'every id read')
  let back = 0
  for (let n = 0; n < ids.length; n++) if (contentIdText(words, 4 * n) === ids[n]) back++
  t.equal(back, ids.length, 'every id read back')
  const byWords = ids.map((_, n) => n).sort((a, b) => {
    for (let w = 0; w < 4; w++) if (words[4 * a + w] !== words[4 * b + w]) return words[4 * a + w]! < words[4 * b + w]! ? -1 : 1
    return 0
  })
  t.same(byWords.map((n) => ids[n]), [...ids].sort(), 'words in order, as unsigned numbers, sort as the text')
})

t.test('a second main rule of a pattern and publisher names the first line; the same rule again and other publishers do not', async (t) => {
  const rules = new MainRules()
  // Enough patterns for the table to double several times from its first 1,024 slots.
  const n = 5000
  let quiet = true
  for (let i = 0; i < n; i++) quiet &&= rules.add(id(i), A, 'B3/S23', i + 1) === undefined
  t.ok(quiet, 'a main rule of each pattern')
  t.equal(rules.size, n)
  for (let i = 0; i < n; i++) {
    quiet &&= rules.add(id(i), A, 'B3/S23', n + i + 1) === undefined && rules.add(id(i), B, 'B36/S23', 2 * n + i + 1) === undefined
  }
  t.ok(quiet, 'the same rule again, and another publisher\'s own rule, after growing')
  t.equal(rules.size, 2 * n, 'each pattern and publisher kept once')
  t.equal(rules.add(id(1234), A, 'B36/S23', 9 * n), 1235, 'another rule by the same publisher: the first line')
  t.equal(rules.add(id(1234), B, 'B3/S23', 9 * n), 2 * n + 1235, 'and by the other')
  t.equal(rules.add('f'.repeat(32), A, 'B3/S23', 1), undefined, 'an id of all f')
  t.equal(rules.add('0'.repeat(32), A, 'B3/S23', 2), undefined, 'an id of all 0')
  t.equal(rules.add('0'.repeat(32), A, 'B2/S', 3), 2)
})

t.test('main rules: patterns beyond the cap are counted, not kept; those kept are still held to one main rule', async (t) => {
  const rules = new MainRules(3)
  for (let i = 0; i < 5; i++) t.equal(rules.add(id(i), A, 'B3/S23', i + 1), undefined)
  t.equal(rules.size, 3, 'three patterns kept')
  t.equal(rules.unheld, 2, 'two main verifications counted as not held')
  t.equal(rules.add(id(1), A, 'B36/S23', 6), 2, 'a kept pattern in another rule: the first line')
  t.equal(rules.add(id(4), A, 'B36/S23', 7), undefined, 'a pattern beyond the cap is not judged')
  t.equal(rules.unheld, 3)
  t.equal(new MainRules().add(id(0), A, 'B3/S23', 1), undefined, 'the default cap keeps the first')
  t.ok(MAIN_RULES_CAP >= 1_000_000, `the default cap (${MAIN_RULES_CAP}) holds a million-pattern publish whole`)
})

t.test('mover patterns: kept up to the cap, across growth, and read from a copy of their words', async (t) => {
  const movers = new MoverPatterns(3000)
  let kept = true
  for (let i = 0; i < 3000; i++) kept &&= movers.add(id(i))
  t.ok(kept, 'every id up to the cap')
  t.ok(movers.add(id(7)), 'an id kept already')
  t.notOk(movers.add(id(3000)), 'a new id beyond the cap')
  t.equal(movers.size, 3000)
  const shared = new Uint32Array(new SharedArrayBuffer(movers.slots.byteLength))
  shared.set(movers.slots)
  const thread = new MoverPatterns(undefined, shared)
  let found = true
  for (let i = 0; i < 3000; i++) found &&= thread.has(id(i))
  t.ok(found, 'each kept id, on the copy')
  t.notOk(thread.has(id(3000)), 'not the one beyond the cap')
  t.notOk(thread.has('0'.repeat(32)), 'nor an id of all 0 (a slot is marked full, not known by its id)')
})

t.test('the publisher\'s patterns: the first line kept, up to the cap, and mover cells on others counted once patterns were dropped', async (t) => {
  const other = { mover: false, ruleless: false }
  const others = new StagedPatterns(3000)
  for (let i = 0; i < 2999; i++) others.add(id(i), i + 1, other)
  others.add(id(2999), 3000, { mover: true, ruleless: false })
  others.add(id(7), 9000, other)
  others.add('0'.repeat(32), PARENT_PATTERN, other)
  t.equal(others.size, 3000, 'up to the cap')
  t.equal(others.dropped, 1, 'the id of all 0 beyond it')
  t.equal(others.moverCell(id(7)), 8, 'the first line of a kept pattern, after growing')
  t.equal(others.unheld, 0)
  t.equal(others.moverCell('0'.repeat(32)), 0, 'a pattern dropped is not known')
  t.equal(others.moverCell('not a content id'), 0, 'nor a string that is no content id')
  t.equal(others.unheld, 2, 'and both are counted: either may be one dropped')
  t.equal(others.moverCell(id(2999)), 0, 'a mover is not held')
  const parents = new StagedPatterns()
  parents.add(id(1), PARENT_PATTERN, other)
  parents.add(id(1), 4, other)
  parents.add('z'.repeat(32), 5, other)
  t.equal(parents.moverCell(id(1)), PARENT_PATTERN, 'a parent\'s pattern stays its own')
  t.equal(parents.size, 1, 'a string that is no content id is not kept')
  t.equal(parents.moverCell(id(2)), 0, 'a pattern the publish lacks')
  t.equal(parents.unheld, 0, 'is not counted when none was dropped')
})

t.test('the publisher\'s patterns without a rule: the first line no main verification gave one, records only, and those beyond the cap counted', async (t) => {
  const book = new StagedPatterns(100)
  book.add(id(0), PARENT_PATTERN, { mover: false, ruleless: true })
  for (let i = 1; i < 100; i++) book.add(id(i), i + 1, { mover: false, ruleless: i % 10 === 3 })
  t.equal(book.firstRuleless(), 4, 'lines 4, 14, ..., 94 have no rule; the parent\'s pattern is not this publish\'s to refuse')
  book.mainRule(id(3))
  book.mainRule(id(13))
  t.equal(book.firstRuleless(), 24, 'a main verification gives lines 4 and 14 their rule')
  for (let i = 23; i < 100; i += 10) book.mainRule(id(i))
  t.equal(book.firstRuleless(), undefined, 'and then every one has one')
  book.mainRule(id(500))
  book.mainRule('not a content id')
  t.equal(book.firstRuleless(), undefined, 'a verification of a pattern not kept changes nothing')
  book.add(id(100), 101, { mover: false, ruleless: true })
  book.add(id(101), 102, { mover: false, ruleless: false })
  t.same([book.dropped, book.rulelessDropped], [2, 1], 'beyond the cap: two dropped, one of them without a rule')
})

t.test('a check\'s main rules: every distinct rule of a pattern, first first, and what was dropped beyond the caps said', async (t) => {
  const book = new PatternMainRules(3, 2)
  book.add(id(1), 'B3/S23')
  book.add(id(1), 'B3/S23')
  book.add(id(1), 'B36/S23')
  book.add(id(2), 'B36/S23')
  book.add('not a content id', 'B3/S23')
  t.same(book.rulesOf(id(1)), { rules: ['B3/S23', 'B36/S23'], unsure: false }, 'two publishers\' main rules, each once')
  t.same(book.rulesOf(id(2)), { rules: ['B36/S23'], unsure: false })
  t.same(book.rulesOf(id(3)), { rules: [], unsure: false }, 'a pattern with none, nothing dropped: no rule')
  book.add(id(3), 'B2/S')
  t.equal(book.dropped, 1, 'a third notation is beyond the notations\' cap')
  t.same(book.rulesOf(id(3)), { rules: [], unsure: true }, 'so a pattern without a rule may be one dropped')
  book.add(id(4), 'B3/S23')
  t.same([book.rulesOf(id(4)), book.dropped], [{ rules: ['B3/S23'], unsure: false }, 1], 'the third pattern kept')
  book.add(id(5), 'B3/S23')
  t.same([book.rulesOf(id(5)), book.dropped], [{ rules: [], unsure: true }, 2], 'the fourth beyond the patterns\' cap')
  book.add(id(2), 'B3/S23')
  book.add(id(4), 'B36/S23')
  t.same(book.rulesOf(id(2)).rules, ['B36/S23', 'B3/S23'], 'a second rule while there is room')
  t.same([book.rulesOf(id(4)).rules, book.dropped], [['B3/S23'], 3], 'and one beyond the cap of patterns with more than one')
})

t.test('a check\'s main rules keep the characters of their notations within the text budget they share', async (t) => {
  const text = new KeptText(10)
  const book = new PatternMainRules(10, 10, text)
  book.add(id(1), 'B3/S23')
  book.add(id(2), 'B3/S23')
  t.same([book.rulesOf(id(2)), book.dropped], [{ rules: ['B3/S23'], unsure: false }, 0], 'a notation kept once costs its six characters once')
  book.add(id(3), 'B36/S23')
  t.same([book.rulesOf(id(3)), book.dropped], [{ rules: [], unsure: true }, 1], 'seven more are beyond the four left: dropped')
  book.add(id(4), 'B2/S')
  t.same([book.rulesOf(id(4)), book.dropped], [{ rules: ['B2/S'], unsure: false }, 1], 'four fit exactly')
  t.notOk(text.take(1), 'and the budget is spent')
})

t.test('kept facts: a cap on keys and a shared budget of characters, the first value kept, what is not kept counted', async (t) => {
  const text = new KeptText(12)
  const [a, b] = [new KeptFacts<string>(2, text), new KeptFacts<string>(5, text)]
  t.ok(a.keep('x', 'first', 4), 'a new key within both')
  t.ok(a.keep('x', 'second', 4), 'a kept key is kept')
  t.equal(a.get('x'), 'first', 'with its first value')
  t.ok(a.admit('x', 100), 'and admitted again at no cost')
  t.ok(b.keep('y', 'v', 6), 'another map takes from the same budget')
  t.notOk(a.keep('z', 'v', 3), 'three characters are beyond the two left')
  t.same([a.dropped, a.get('z')], [1, undefined], 'counted, not kept')
  t.ok(a.keep('z', 'v', 2), 'two fit')
  t.notOk(a.keep('w', 'v', 0), 'a third key is beyond the cap of two, even at no cost')
  t.same([a.dropped, b.dropped, a.entries.size, b.entries.size], [2, 0, 2, 1])
  t.notOk(b.admit('u', 1), 'the budget is spent')
  t.equal(b.dropped, 1)
})

/**
 * The main rules of a publish (src/formats/pack/main-rules.ts): one main rule per pattern and publisher,
 * kept across the table's growth, with the line of the first.
 */
import { createHash } from 'node:crypto'
import t from 'tap'
import { MainRules } from '../src/formats/pack/main-rules.js'

const id = (n: number) => createHash('sha256').update(String(n)).digest('hex').slice(0, 32)
const [A, B] = ['SHA256:publisher-a', 'SHA256:publisher-b']

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

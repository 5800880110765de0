import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { IdBook } from '../src/formats/pack/publish/id-book.js'
import { seededRandom } from '../src/sim/random.js'

const dir = await mkdtemp(join(tmpdir(), 'pack-id-book-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

t.test('every line\'s id and pin, in memory, waiting to be written, and read back from the file', async (t) => {
  const rand = seededRandom(5)
  const hex = () => Array.from({ length: 32 }, () => '0123456789abcdef'[Math.floor(rand() * 16)]).join('')
  // 3 lines in memory, then blocks of 4096 in the file and the last ones waiting.
  const book = new IdBook('ant-', dir, 3)
  const lines: { id: string; pin: string }[] = []
  const pins = Array.from({ length: 70_000 }, (_, i) => `pin-${i}`)
  const n = 3 * 4096 + 100
  for (let line = 1; line <= n; line++) {
    // More pins than a 16-bit number holds.
    const entry = { id: `ant-${hex()}`, pin: pins[line % pins.length]! }
    lines.push(entry)
    book.add(line, entry.id, entry.pin)
    if (line % 997 === 0) t.same(book.get(line), entry, `line ${line} at once`)
  }
  t.equal((await readdir(dir)).length, 0, 'the file has no name')
  let right = 0
  for (let k = 0; k < 20_000; k++) {
    const line = 1 + Math.floor(rand() * n)
    const got = book.get(line)
    if (got && got.id === lines[line - 1]!.id && got.pin === lines[line - 1]!.pin) right++
  }
  t.equal(right, 20_000, 'lines read in any order')
  t.same([book.get(0), book.get(n + 1), book.get(1.5)], [undefined, undefined, undefined], 'no line 0, none past the last, none between')
  t.throws(() => book.add(n + 2, lines[0]!.id, 'p'), /line order/)
  book.close()
})

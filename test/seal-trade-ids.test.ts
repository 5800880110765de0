import t from 'tap'
import { TradeIdSet } from '../src/formats/record/seal/hour-frames.js'
import { seededRandom } from '../src/sim/random.js'

t.test('the interval set of trade ids answers "seen before?" exactly as a plain set does', async (t) => {
  const rand = seededRandom(11)
  for (let round = 0; round < 20; round++) {
    const ids = new TradeIdSet()
    const truth = new Set<string>()
    let wrong = 0
    let next = 1_000_000 + Math.floor(rand() * 1000)
    for (let i = 0; i < 5000; i++) {
      const r = rand()
      // Mostly the next id in sequence, sometimes a jump ahead, a step back, or a non-numeric id.
      const id = r < 0.8 ? String(next++) : r < 0.9 ? String((next += Math.floor(rand() * 20))) : r < 0.98 ? String(next - 1 - Math.floor(rand() * 50)) : `x${Math.floor(rand() * 30)}`
      if (ids.add(id) !== truth.has(id)) wrong++
      truth.add(id)
    }
    t.equal(wrong, 0, `round ${round}`)
  }
  const edge = new TradeIdSet()
  t.same(['0', '2', '1', '1', '007', '9007199254740991', '9007199254740991'].map((id) => edge.add(id)), [false, false, false, true, false, false, true], 'joining both neighbours, leading zeros are another id, large ids')
})

import t from 'tap'
import { FramePairer, frameTimeOf, PAIRING_WINDOW_NS, type MergedFrame } from '../src/formats/record/merge.js'
import type { FrameEvent, Replica } from '../src/formats/record/types.js'
import { seededRandom } from '../src/sim/random.js'

const frame = (replica: Replica, t: bigint, text: string, bounded = true): FrameEvent => ({
  kind: 'frame', replica, connection: `${replica}-1`, receiveTime: t, payload: Buffer.from(text), binary: false,
  ...(bounded ? { clockOffset: 10n, clockErrorBound: 500n } : {}),
})

function runAll(events: FrameEvent[]): MergedFrame[] {
  const p = new FramePairer()
  const out: MergedFrame[] = []
  for (const e of events) out.push(...p.push(e))
  out.push(...p.flush())
  return out
}

t.test('frame time: earliest bounded receipt, else earliest of all', async (t) => {
  const a = { replica: 'a' as const, connection: 'a', receiveTime: 100n }
  const b = { replica: 'b' as const, connection: 'b', receiveTime: 200n, clockOffset: 1n, clockErrorBound: 5n }
  t.equal(frameTimeOf([a, b]), 200n, 'the bounded receipt wins though it is later')
  t.equal(frameTimeOf([a, { ...b, clockOffset: undefined, clockErrorBound: undefined }]), 100n)
  t.equal(frameTimeOf([{ ...a, clockOffset: 0n, clockErrorBound: 0n }, b]), 100n)
})

t.test('random two-replica streams: every frame once, right receipts, frame-time order', async (t) => {
  const rand = seededRandom(99)
  for (let round = 0; round < 30; round++) {
    const truth = new Map<string, Replica[]>()
    const events: FrameEvent[] = []
    let clock = 1_000_000_000n
    for (let i = 0; i < 400; i++) {
      clock += BigInt(Math.floor(rand() * 50_000_000))
      const text = `{"t":${i}}`
      const who: Replica[] = rand() < 0.05 ? ['a'] : rand() < 0.05 ? ['b'] : ['a', 'b']
      truth.set(text, who)
      for (const r of who) events.push(frame(r, clock + BigInt(Math.floor(rand() * 2e9)), text, rand() > 0.1))
    }
    events.sort((x, y) => (x.receiveTime < y.receiveTime ? -1 : x.receiveTime > y.receiveTime ? 1 : 0))
    const out = runAll(events)
    t.equal(out.length, truth.size, `round ${round}: one frame per payload`)
    let prev = -1n
    let ordered = true
    let receiptsRight = true
    for (const f of out) {
      if (f.frameTime < prev) ordered = false
      prev = f.frameTime
      const text = Buffer.from(f.payload).toString()
      if (JSON.stringify(f.receipts.map((r) => r.replica)) !== JSON.stringify(truth.get(text))) receiptsRight = false
      if (f.frameTime !== frameTimeOf(f.receipts)) receiptsRight = false
    }
    t.ok(ordered, 'frame times never decrease')
    t.ok(receiptsRight, 'each frame has exactly the replicas that received it')
  }
})

t.test('identical frames pair in receipt order, and stay apart beyond the window', async (t) => {
  const ack = '{"id":1,"result":null}'
  const w = PAIRING_WINDOW_NS
  const out = runAll([frame('a', 0n, ack), frame('a', 10n, ack), frame('b', 20n, ack), frame('b', 30n, ack), frame('a', 2n * w, ack)])
  t.same(out.map((f) => f.receipts.map((r) => `${r.replica}@${r.receiveTime}`)), [['a@0', 'b@20'], ['a@10', 'b@30'], [`a@${2n * w}`]])
  const late = runAll([frame('a', 0n, ack), frame('b', w + 1n, ack)])
  t.equal(late.length, 2, 'a receipt beyond the window is another frame')
})

t.test('a clock estimate the format cannot hold is withheld, offset and bound together', async (t) => {
  const withClock = (offset: bigint, bound: bigint): FrameEvent => ({ ...frame('a', 0n, 'x'), clockOffset: offset, clockErrorBound: bound })
  for (const [offset, bound] of [[2n ** 53n, 2n ** 53n], [-9n, 3n], [0n, -1n]] as const) {
    const [f] = runAll([withClock(offset, bound)])
    t.equal(f!.receipts[0]!.clockOffset, undefined, `offset ${offset} bound ${bound}`)
    t.equal(f!.receipts[0]!.clockErrorBound, undefined)
  }
  const [kept] = runAll([withClock(-7n, 7n)])
  t.same([kept!.receipts[0]!.clockOffset, kept!.receipts[0]!.clockErrorBound], [-7n, 7n], 'a bound equal to |offset| stands')
})

t.test('input out of receive-time order is refused', async (t) => {
  const p = new FramePairer()
  p.push(frame('a', 100n, 'x'))
  t.throws(() => p.push(frame('b', 99n, 'y')), /receive-time order/)
})

/**
 * The venue simulator speaking OKX v5's public websocket (`venue: 'okx'`, src/sim/venue/okx-market.ts), read
 * by our OKX adapter as the recorder reads it: a subscribe event per argument, the books snapshot then
 * updates chained by prevSeqId with checksums the adapter's books recompute, trades, funding rates and
 * liquidations (by instrument type), text ping and pong, the service-upgrade notice, OKX's errors, and the
 * faults OKX can show.
 */
import t, { type Test } from 'tap'
import { manualClock, startVenueSimulator, type VenueSimulator, type VenueSimulatorOptions } from '../src/sim/venue/simulator.js'
import type { FaultPlanInput } from '../src/sim/venue/faults.js'
import type { Channel } from '../src/formats/record/types.js'
import { createOkxAdapter } from '../src/venues/okx.js'
import type { VenueAdapter } from '../src/venues/adapter.js'
import { advance, type Client, connect, parsed, readAsRecorder, settle, subscribedAs, until } from './helpers/sim-client.js'

const START = Date.UTC(2026, 9, 3, 14)
const SWAPS = ['BTC-USDT-SWAP', 'ETH-USDT-SWAP']

async function okx(t: Test, o: VenueSimulatorOptions & { faults?: FaultPlanInput } = {}): Promise<{ sim: VenueSimulator; clock: ReturnType<typeof manualClock> }> {
  const clock = manualClock(START)
  const sim = await startVenueSimulator({ venue: 'okx', seed: 3, rate: 4, depthIntervalMs: 100, clock: clock.now, ...o })
  t.teardown(() => sim.close())
  return { sim, clock }
}

/** A client subscribed as the recorder's OKX plan subscribes `channel`. */
const subscribed = (sim: VenueSimulator, adapter: VenueAdapter, channel: Channel, replica: string): Promise<Client> => subscribedAs(sim, adapter.connect(channel, channel === 'liquidations' ? ['SWAP'] : SWAPS), replica)


t.test('four channels subscribed as the recorder does; books chained by seqId with checksums the adapter recomputes', async (t) => {
  const { sim, clock } = await okx(t)
  const adapter = createOkxAdapter({ wsBase: sim.wsUrl })
  const clients = {
    trades: await subscribed(sim, adapter, 'trades', 'a'),
    book: await subscribed(sim, adapter, 'book', 'a'),
    funding: await subscribed(sim, adapter, 'funding', 'a'),
    liquidations: await subscribed(sim, adapter, 'liquidations', 'a'),
  }
  advance(sim, clock, 180_000, 500)
  await settle(sim, Object.values(clients))
  const book = parsed(clients.book.texts)
  t.match(book.slice(0, 4), [
    { id: '1', event: 'subscribe', arg: { channel: 'books', instId: 'BTC-USDT-SWAP' }, connId: /^[0-9a-f]{8}$/ },
    { arg: { channel: 'books', instId: 'BTC-USDT-SWAP' }, action: 'snapshot', data: [{ prevSeqId: -1 }] },
    { id: '1', event: 'subscribe', arg: { channel: 'books', instId: 'ETH-USDT-SWAP' } },
    { action: 'snapshot', data: [{ prevSeqId: -1 }] },
  ], 'an event per argument, each book\'s snapshot after it')
  for (const channel of ['trades', 'book', 'funding', 'liquidations'] as const) {
    const read = readAsRecorder(adapter, channel, clients[channel].texts)
    t.same(read.classes.filter((c) => c.kind === 'unrepresentable'), [], `${channel}: every message is one the adapter reads`)
    const carrying = read.classes.filter((c) => c.kind === (channel === 'funding' || channel === 'liquidations' ? 'data' : 'rows')).length
    t.ok(carrying > (channel === 'funding' ? 4 : 10), `${channel}: ${carrying} frames of data`)
    if (channel === 'book') {
      t.ok(read.checks.length > 1000, `${read.checks.length} checksums checked`)
      t.same(read.mismatches, [], 'every checksum matched the book the adapter built')
      t.same(read.verdicts.filter((v) => v !== 'next' && v !== 'snapshot' && v !== 'start'), [], 'every update\'s prevSeqId is the previous seqId')
    }
  }
  const liq = parsed(clients.liquidations.texts).filter((x) => 'data' in x) as { arg: { instType: string }; data: [{ instId: string }] }[]
  t.same(new Set(liq.map((x) => x.data[0].instId)), new Set(SWAPS), 'liquidation-orders by instrument type: both swaps\' liquidations')
})

t.test('ping and pong, the idle limit, errors as OKX writes them', async (t) => {
  const { sim } = await okx(t, { idleCloseMs: 300 })
  const c = await connect(sim, '/ws/v5/public')
  c.ws.send('ping')
  await until(() => c.texts.includes('pong'), 'pong')
  const ask = async (text: string) => {
    const n = c.texts.length
    c.ws.send(text)
    await until(() => c.texts.length > n, `an answer to ${text}`)
    return JSON.parse(c.texts.at(-1)!) as Record<string, unknown>
  }
  t.match(await ask('{"id":"7","op":"subscribe","args":[{"channel":"books","instId":"DOGE-USDT-SWAP"}]}'), { id: '7', event: 'error', code: '60018', msg: /doesn't exist/ })
  t.match(await ask('{"op":"subscribe","args":[{"channel":"liquidation-orders","instType":"OPTION"}]}'), { event: 'error', code: '60018' })
  t.match(await ask('{"op":"login","args":[]}'), { event: 'error', code: '60012' })
  t.match(await ask('not json'), { event: 'error', code: '60012' })
  const idle = await connect(sim, '/ws/v5/public')
  t.equal((await idle.closed).code, 1006, 'no message for the idle limit: dropped')
  t.equal((await connect(sim, '/ws/v5/business').catch((e: Error) => e)) instanceof Error, true, 'another path is refused')
})

t.test('faults: a corrupted checksum, a gap in the seqIds, a notice before a service upgrade', async (t) => {
  const { sim, clock } = await okx(t, {
    faults: {
      faults: [
        { kind: 'checksum', at: 2_000, replica: 'a', stream: 'btc-usdt-swap@book' },
        { kind: 'gap', at: 4_000, stream: 'eth-usdt-swap@book', count: 2 },
        { kind: 'server-shutdown', at: 6_000, replica: 'b', closeAfterMs: 1000 },
      ],
    },
  })
  const adapter = createOkxAdapter({ wsBase: sim.wsUrl })
  const a = await subscribed(sim, adapter, 'book', 'a')
  const b = await subscribed(sim, adapter, 'book', 'b')
  advance(sim, clock, 8_000, 100)
  await settle(sim, [a, b])
  const ra = readAsRecorder(adapter, 'book', a.texts)
  t.same(ra.mismatches.map((m) => m.instrument), ['BTC-USDT-SWAP', 'ETH-USDT-SWAP'], 'replica a: the corrupted checksum, then the gap\'s first update')
  t.ok(ra.verdicts.includes('gap'), 'the gap breaks the seqId chain')
  const rb = readAsRecorder(adapter, 'book', b.texts)
  t.same(rb.mismatches.map((m) => m.instrument), ['ETH-USDT-SWAP'], 'replica b: the gap only')
  const notice = b.texts.find((x) => x.includes('"notice"'))!
  t.match(JSON.parse(notice), { event: 'notice', code: '64008' })
  t.match(adapter.classify('book', Buffer.from(notice), false), { kind: 'control', closing: true }, 'the adapter reads the notice as a close to come')
  t.equal((await b.closed).code, 1001, 'and the venue closed the connection')
})

t.test('a maintenance reset: the next update\'s seqId below its prevSeqId, the chain going on from it, and no gap', async (t) => {
  const { sim, clock } = await okx(t, { faults: { faults: [{ kind: 'restart', at: 3_000, stream: 'btc-usdt-swap@book' }] } })
  const adapter = createOkxAdapter({ wsBase: sim.wsUrl })
  const book = await subscribed(sim, adapter, 'book', 'a')
  advance(sim, clock, 6_000, 100)
  await settle(sim, [book])
  const updates = parsed(book.texts).filter((x) => x['action'] === 'update' && (x['arg'] as { instId: string }).instId === 'BTC-USDT-SWAP').map((x) => (x['data'] as [{ prevSeqId: number; seqId: number }])[0])
  const reset = updates.findIndex((u) => u.seqId < u.prevSeqId)
  t.ok(reset > 0, 'one update\'s seqId is below its prevSeqId')
  t.ok(updates.slice(reset + 1).every((u, i) => u.prevSeqId === updates[reset + i]!.seqId), 'the chain goes on from it')
  const read = readAsRecorder(adapter, 'book', book.texts)
  t.same([read.verdicts.filter((v) => v === 'gap'), read.mismatches], [[], []], 'no gap, every checksum matched')
})

/**
 * The venue simulator speaking Bybit v5's public websocket, linear category (`venue: 'bybit'`,
 * src/sim/venue/bybit-market.ts), read by our Bybit adapter as the recorder reads it: a reply per subscribe
 * request, the book's snapshot then deltas whose `u` is the previous + 1, trades, tickers (a snapshot, then
 * deltas) and liquidations, `{"op":"ping"}` and its pong, Bybit's errors, and a gap the adapter sees.
 */
import t, { type Test } from 'tap'
import { manualClock, startVenueSimulator, type VenueSimulator, type VenueSimulatorOptions } from '../src/sim/venue/simulator.js'
import type { FaultPlanInput } from '../src/sim/venue/faults.js'
import type { Channel } from '../src/formats/record/types.js'
import { createBybitAdapter } from '../src/venues/bybit.js'
import type { VenueAdapter } from '../src/venues/adapter.js'
import { advance, type Client, connect, parsed, readAsRecorder, settle, subscribedAs, until } from './helpers/sim-client.js'

const START = Date.UTC(2026, 9, 3, 14)
const SYMBOLS = ['BTCUSDT', 'ETHUSDT']

async function bybit(t: Test, o: VenueSimulatorOptions & { faults?: FaultPlanInput } = {}): Promise<{ sim: VenueSimulator; clock: ReturnType<typeof manualClock> }> {
  const clock = manualClock(START)
  const sim = await startVenueSimulator({ venue: 'bybit', seed: 4, rate: 4, depthIntervalMs: 100, clock: clock.now, ...o })
  t.teardown(() => sim.close())
  return { sim, clock }
}

const subscribed = (sim: VenueSimulator, adapter: VenueAdapter, channel: Channel, replica: string): Promise<Client> => subscribedAs(sim, adapter.connect(channel, SYMBOLS), replica)


t.test('four channels subscribed as the recorder does; the book\'s u +1 a message, every message read', async (t) => {
  const { sim, clock } = await bybit(t)
  const adapter = createBybitAdapter({ wsBase: sim.wsUrl })
  const clients = {
    trades: await subscribed(sim, adapter, 'trades', 'a'),
    book: await subscribed(sim, adapter, 'book', 'a'),
    funding: await subscribed(sim, adapter, 'funding', 'a'),
    liquidations: await subscribed(sim, adapter, 'liquidations', 'a'),
  }
  advance(sim, clock, 120_000, 500)
  await settle(sim, Object.values(clients))
  t.match(parsed(clients.book.texts).slice(0, 3), [
    { success: true, ret_msg: '', req_id: '1', op: 'subscribe' },
    { topic: 'orderbook.200.BTCUSDT', type: 'snapshot', data: { s: 'BTCUSDT' } },
    { topic: 'orderbook.200.ETHUSDT', type: 'snapshot', data: { s: 'ETHUSDT' } },
  ], 'the reply, then each book\'s snapshot')
  t.match(parsed(clients.funding.texts).slice(1, 3), [{ topic: 'tickers.BTCUSDT', type: 'snapshot', data: { fundingRate: /^-?0\.\d+$/ } }, { type: 'snapshot' }], 'tickers: a snapshot of each')
  for (const channel of ['trades', 'book', 'funding', 'liquidations'] as const) {
    const read = readAsRecorder(adapter, channel, clients[channel].texts)
    t.same(read.classes.filter((c) => c.kind === 'unrepresentable'), [], `${channel}: every message is one the adapter reads`)
    const carrying = read.classes.filter((c) => c.kind === (channel === 'funding' || channel === 'liquidations' ? 'data' : 'rows')).length
    t.ok(carrying > 5, `${channel}: ${carrying} frames of data`)
    if (channel === 'book') t.same(read.verdicts.filter((v) => v !== 'next' && v !== 'snapshot'), [], 'every delta\'s u is the previous + 1')
  }
})

t.test('ping and pong; errors as Bybit writes them; a gap in the book\'s u', async (t) => {
  const { sim, clock } = await bybit(t, { faults: { faults: [{ kind: 'gap', at: 2_000, stream: 'btcusdt@book', count: 3 }] } })
  const adapter = createBybitAdapter({ wsBase: sim.wsUrl })
  const c = await connect(sim, '/v5/public/linear')
  const ask = async (text: string) => {
    const n = c.texts.length
    c.ws.send(text)
    await until(() => c.texts.length > n, `an answer to ${text}`)
    return JSON.parse(c.texts.at(-1)!) as Record<string, unknown>
  }
  t.match(await ask('{"req_id":"p","op":"ping"}'), { success: true, ret_msg: 'pong', req_id: 'p', op: 'ping' })
  t.match(await ask('{"req_id":"2","op":"subscribe","args":["orderbook.50.BTCUSDT"]}'), { success: false, ret_msg: /serves orderbook.200 and orderbook.1000/, op: 'subscribe' })
  t.match(await ask('{"req_id":"3","op":"subscribe","args":["publicTrade.DOGEUSDT"]}'), { success: false, ret_msg: /handler not found/ })
  t.match(await ask('{"op":"auth"}'), { success: false })
  const book = await subscribed(sim, adapter, 'book', 'b')
  advance(sim, clock, 5_000, 100)
  await settle(sim, [book])
  const read = readAsRecorder(adapter, 'book', book.texts)
  t.equal(read.verdicts.filter((v) => v === 'gap').length, 1, 'the dropped deltas break the u chain once')
})

t.test('a service restart: a snapshot with u = 1 to every subscriber, deltas from 2, and no gap', async (t) => {
  const { sim, clock } = await bybit(t, { faults: { faults: [{ kind: 'restart', at: 3_000, stream: 'btcusdt@book' }] } })
  const adapter = createBybitAdapter({ wsBase: sim.wsUrl })
  const book = await subscribed(sim, adapter, 'book', 'a')
  advance(sim, clock, 6_000, 100)
  await settle(sim, [book])
  const snapshots = parsed(book.texts).filter((x) => x['topic'] === 'orderbook.200.BTCUSDT' && x['type'] === 'snapshot') as { data: { u: number } }[]
  t.equal(snapshots.length, 2, 'the subscription\'s snapshot and the restart\'s')
  t.equal(snapshots[1]!.data.u, 1, 'the restart\'s has u = 1')
  const after = parsed(book.texts).filter((x) => x['topic'] === 'orderbook.200.BTCUSDT' && x['type'] === 'delta').map((x) => (x['data'] as { u: number }).u)
  t.ok(after.includes(2) && after.includes(3), 'deltas numbered from 2')
  t.same(readAsRecorder(adapter, 'book', book.texts).verdicts.filter((v) => v === 'gap'), [], 'no gap')
  await t.rejects(startVenueSimulator({ venue: 'kraken', faults: { faults: [{ kind: 'restart', at: 1, stream: 'btc/usd@book' }] } }), /kraken shows no restart/)
})

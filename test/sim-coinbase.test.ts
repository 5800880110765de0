/**
 * The venue simulator speaking Coinbase Advanced Trade's market data (`venue: 'coinbase'`,
 * src/sim/venue/coinbase-market.ts), read by our Coinbase adapter as the recorder reads it: a subscriptions
 * message per subscribe, the level2 snapshot then updates, the trade snapshot then updates, heartbeats every
 * second with their counter, every message of a connection numbered by sequence_num whatever its channel,
 * Coinbase's errors, the 5 s subscribe deadline, and a stall that drops messages seen as a sequence gap.
 */
import t, { type Test } from 'tap'
import { manualClock, startVenueSimulator, type VenueSimulator, type VenueSimulatorOptions } from '../src/sim/venue/simulator.js'
import type { FaultPlanInput } from '../src/sim/venue/faults.js'
import type { Channel } from '../src/formats/record/types.js'
import { createCoinbaseAdapter } from '../src/venues/coinbase.js'
import type { VenueAdapter } from '../src/venues/adapter.js'
import { advance, type Client, connect, parsed, readAsRecorder, settle, subscribedAs, until } from './helpers/sim-client.js'

const START = Date.UTC(2026, 9, 3, 14)
const PRODUCTS = ['BTC-USD', 'ETH-USD']

async function coinbase(t: Test, o: VenueSimulatorOptions & { faults?: FaultPlanInput } = {}): Promise<{ sim: VenueSimulator; clock: ReturnType<typeof manualClock> }> {
  const clock = manualClock(START)
  const sim = await startVenueSimulator({ venue: 'coinbase', seed: 8, rate: 4, depthIntervalMs: 100, clock: clock.now, ...o })
  t.teardown(() => sim.close())
  return { sim, clock }
}

const subscribed = (sim: VenueSimulator, adapter: VenueAdapter, channel: Channel, replica: string): Promise<Client> => subscribedAs(sim, adapter.connect(channel, PRODUCTS), replica)


t.test('both channels subscribed as the recorder does; sequence_num +1 a message of the connection, every message read', async (t) => {
  const { sim, clock } = await coinbase(t)
  const adapter = createCoinbaseAdapter({ wsBase: sim.wsUrl })
  const book = await subscribed(sim, adapter, 'book', 'a')
  const trades = await subscribed(sim, adapter, 'trades', 'b')
  advance(sim, clock, 30_000, 250)
  await settle(sim, [book, trades])
  const b = parsed(book.texts)
  t.match(b.slice(0, 3), [
    { channel: 'subscriptions', sequence_num: 0, events: [{ subscriptions: { level2: PRODUCTS } }] },
    { channel: 'l2_data', sequence_num: 1, events: [{ type: 'snapshot', product_id: 'BTC-USD' }] },
    { channel: 'l2_data', sequence_num: 2, events: [{ type: 'snapshot', product_id: 'ETH-USD' }] },
  ], 'the subscriptions message, then each product\'s snapshot')
  t.same(b.map((x) => x['sequence_num']), b.map((_, i) => i), 'every message of the connection numbered +1, heartbeats and replies among them')
  const beats = b.filter((x) => x['channel'] === 'heartbeats') as { events: [{ heartbeat_counter: number }] }[]
  t.ok(beats.length >= 29 && beats.length <= 31, `a heartbeat each simulated second (${beats.length} in 30 s)`)
  t.same(beats.map((x) => x.events[0].heartbeat_counter), beats.map((_, i) => i), 'with its counter')
  for (const [channel, client] of [['book', book], ['trades', trades]] as const) {
    const read = readAsRecorder(adapter, channel, client.texts)
    t.same(read.classes.filter((c) => c.kind === 'unrepresentable'), [], `${channel}: every message is one the adapter reads`)
    t.ok(read.classes.filter((c) => c.kind === 'rows').length > 100, `${channel}: frames of rows`)
    t.same(read.verdicts.filter((v) => v !== 'next' && v !== 'start'), [], `${channel}: the connection's count continues`)
  }
  t.not(book.texts.at(-1), trades.texts.at(-1), 'two connections never get the same bytes')
})

t.test('errors; the subscribe deadline; a stall that drops messages is a gap in the connection\'s count', async (t) => {
  const { sim, clock } = await coinbase(t, { faults: { faults: [{ kind: 'stall', at: 3_000, replica: 'a', durationMs: 2_000, then: 'drop' }] } })
  const adapter = createCoinbaseAdapter({ wsBase: sim.wsUrl })
  const c = await connect(sim, '/')
  const ask = async (text: string) => {
    const n = c.texts.length
    c.ws.send(text)
    await until(() => c.texts.length > n, `an answer to ${text}`)
    return JSON.parse(c.texts.at(-1)!) as Record<string, unknown>
  }
  t.match(await ask('{"type":"subscribe","product_ids":["DOGE-USD"],"channel":"level2"}'), { type: 'error', message: /unknown products DOGE-USD/ })
  t.match(await ask('{"type":"subscribe","product_ids":["BTC-USD"],"channel":"user"}'), { type: 'error', message: /not served/ })
  t.match(await ask('nope'), { type: 'error' })
  t.equal((await c.closed).code, 1006, 'a connection that subscribed nothing within 5 s is closed')
  const a = await subscribed(sim, adapter, 'book', 'a')
  advance(sim, clock, 8_000, 100)
  await settle(sim, [a])
  const gaps = readAsRecorder(adapter, 'book', a.texts).verdicts.filter((v) => v === 'gap')
  t.equal(gaps.length, 1, 'the messages the stall dropped are one gap in sequence_num')
})

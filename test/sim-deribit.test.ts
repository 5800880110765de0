/**
 * The venue simulator speaking Deribit's API v2 (`venue: 'deribit'`, src/sim/venue/deribit-market.ts), read
 * by our Deribit adapter as the recorder reads it: JSON-RPC answers, the whole book first then changes
 * chained by prev_change_id, trades with trade_seq +1, ticker and perpetual notifications, platform_state,
 * Deribit's errors, and the heartbeat's test requests: answered by the adapter's plan, or the connection is
 * dropped.
 */
import t, { type Test } from 'tap'
import { manualClock, startVenueSimulator, type VenueSimulator, type VenueSimulatorOptions } from '../src/sim/venue/simulator.js'
import type { FaultPlanInput } from '../src/sim/venue/faults.js'
import type { Channel } from '../src/formats/record/types.js'
import { createDeribitAdapter } from '../src/venues/deribit.js'
import type { VenueAdapter } from '../src/venues/adapter.js'
import { advance, type Client, connect, parsed, readAsRecorder, settle, subscribedAs, until } from './helpers/sim-client.js'

const START = Date.UTC(2026, 9, 3, 14)
const PERPETUALS = ['BTC-PERPETUAL', 'ETH-PERPETUAL']

async function deribit(t: Test, o: VenueSimulatorOptions & { faults?: FaultPlanInput } = {}): Promise<{ sim: VenueSimulator; clock: ReturnType<typeof manualClock> }> {
  const clock = manualClock(START)
  const sim = await startVenueSimulator({ venue: 'deribit', seed: 6, rate: 4, depthIntervalMs: 100, clock: clock.now, ...o })
  t.teardown(() => sim.close())
  return { sim, clock }
}

/** A client subscribed as the recorder's plan subscribes `channel`, answering what the plan answers (test requests). */
const subscribed = (sim: VenueSimulator, adapter: VenueAdapter, channel: Channel, replica: string): Promise<Client> => subscribedAs(sim, adapter.connect(channel, PERPETUALS), replica)


t.test('three channels subscribed as the recorder does; the book chained by change ids, trade_seq +1, every message read', async (t) => {
  const { sim, clock } = await deribit(t)
  const adapter = createDeribitAdapter({ wsBase: sim.wsUrl })
  t.match(sim.wsUrl, /\/ws\/api\/v2$/)
  const clients = {
    trades: await subscribed(sim, adapter, 'trades', 'a'),
    book: await subscribed(sim, adapter, 'book', 'a'),
    funding: await subscribed(sim, adapter, 'funding', 'a'),
  }
  advance(sim, clock, 60_000, 500)
  await settle(sim, Object.values(clients))
  t.match(parsed(clients.book.texts).slice(0, 5), [
    { jsonrpc: '2.0', id: 1, result: 'ok' },
    { jsonrpc: '2.0', id: 2, result: ['book.BTC-PERPETUAL.100ms', 'book.ETH-PERPETUAL.100ms', 'platform_state'] },
    { method: 'subscription', params: { channel: 'platform_state' } },
    { method: 'subscription', params: { channel: 'book.BTC-PERPETUAL.100ms', data: { type: 'snapshot' } } },
    { method: 'subscription', params: { channel: 'book.ETH-PERPETUAL.100ms', data: { type: 'snapshot' } } },
  ], 'the heartbeat set, the channels subscribed, platform_state, then each whole book')
  t.ok(clients.book.texts.some((x) => x.includes('["new",')) && clients.book.texts.some((x) => x.includes('["change",')) && clients.book.texts.some((x) => x.includes('["delete",')), 'changes carry new, change and delete')
  for (const channel of ['trades', 'book', 'funding'] as const) {
    const read = readAsRecorder(adapter, channel, clients[channel].texts)
    t.same(read.classes.filter((c) => c.kind === 'unrepresentable'), [], `${channel}: every message is one the adapter reads`)
    t.ok(read.classes.filter((c) => c.kind === (channel === 'funding' ? 'data' : 'rows')).length > 50, `${channel}: frames of data`)
    if (channel !== 'funding') t.same(read.verdicts.filter((v) => v !== 'next' && v !== 'snapshot' && v !== 'start'), [], `${channel}: every sequence continues`)
  }
})

t.test('errors as Deribit writes them; a gap in the trades and in the change ids', async (t) => {
  const { sim, clock } = await deribit(t, { faults: { faults: [{ kind: 'gap', at: 2_000, stream: 'btc-perpetual@trade', count: 2 }, { kind: 'gap', at: 2_000, stream: 'eth-perpetual@book', count: 2 }] } })
  const adapter = createDeribitAdapter({ wsBase: sim.wsUrl })
  const c = await connect(sim, '')
  const ask = async (text: string) => {
    const n = c.texts.length
    c.ws.send(text)
    await until(() => c.texts.length > n, `an answer to ${text}`)
    return JSON.parse(c.texts.at(-1)!) as Record<string, unknown>
  }
  t.match(await ask('{"jsonrpc":"2.0","id":9,"method":"public/set_heartbeat","params":{"interval":5}}'), { id: 9, error: { code: 11029 } })
  t.match(await ask('{"jsonrpc":"2.0","id":10,"method":"private/buy","params":{}}'), { id: 10, error: { code: -32601 } })
  t.match(await ask('{"jsonrpc":"2.0","id":11,"method":"public/subscribe","params":{"channels":["book.DOGE-PERPETUAL.100ms","trades.BTC-PERPETUAL.raw"]}}'), { id: 11, result: [] }, 'an unknown instrument and the raw interval (authorised users only) are not subscribed')
  const trades = await subscribed(sim, adapter, 'trades', 'a')
  const book = await subscribed(sim, adapter, 'book', 'a')
  advance(sim, clock, 5_000, 100)
  await settle(sim, [trades, book])
  t.equal(readAsRecorder(adapter, 'trades', trades.texts).verdicts.filter((v) => v === 'gap').length, 1, 'trades: the dropped trade_seqs')
  t.equal(readAsRecorder(adapter, 'book', book.texts).verdicts.filter((v) => v === 'gap').length, 1, 'book: the dropped change ids')
})

t.test('heartbeat: a test_request every interval; answered, the connection lives; not answered, it is dropped', async (t) => {
  const { sim } = await deribit(t)
  const adapter = createDeribitAdapter({ wsBase: sim.wsUrl })
  const answering = await subscribed(sim, adapter, 'trades', 'a')
  const silent = await connect(sim, '')
  silent.ws.send('{"jsonrpc":"2.0","id":1,"method":"public/set_heartbeat","params":{"interval":10}}')
  const closed = await silent.closed
  t.equal(closed.code, 1006, 'the connection that did not answer its test_request was dropped')
  t.ok(silent.texts.some((x) => x.includes('"test_request"')), 'after a test_request')
  t.ok(answering.texts.some((x) => x.includes('"test_request"')) && answering.ws.readyState === answering.ws.OPEN, 'the one that answered lives')
  t.ok(answering.texts.some((x) => x.includes('"version"')), 'its public/test was answered')
})

/**
 * The venue simulator speaking Kraken spot, WebSocket v2 (`venue: 'kraken'`, src/sim/venue/kraken-market.ts),
 * read by our Kraken adapter as the recorder reads it: subscriptions by request with an acknowledgement
 * per symbol and a snapshot after it, book checksums the adapter's books recompute (and a corrupted one they
 * catch), the trade snapshot, ping and pong, heartbeats, a status on connecting, Kraken's errors, and a
 * connection dropped after a minute without a request.
 */
import t, { type Test } from 'tap'
import { manualClock, startVenueSimulator, type VenueSimulator, type VenueSimulatorOptions } from '../src/sim/venue/simulator.js'
import type { FaultPlanInput } from '../src/sim/venue/faults.js'
import type { TruthRecord } from '../src/sim/venue/truth.js'
import { createKrakenAdapter, type KrakenAdapter } from '../src/venues/kraken.js'
import { advance, type Client, connect, parsed, readAsRecorder, settle, subscribedAs, until } from './helpers/sim-client.js'

const START = Date.UTC(2026, 9, 3, 14)

async function kraken(t: Test, o: VenueSimulatorOptions & { faults?: FaultPlanInput } = {}): Promise<{ sim: VenueSimulator; clock: ReturnType<typeof manualClock> }> {
  const clock = manualClock(START)
  const sim = await startVenueSimulator({ venue: 'kraken', seed: 5, rate: 4, depthIntervalMs: 250, clock: clock.now, ...o })
  t.teardown(() => sim.close())
  return { sim, clock }
}

/** A client of the simulator subscribed as the recorder's Kraken plan subscribes `channel`. */
const subscribed = (sim: VenueSimulator, adapter: KrakenAdapter, channel: 'trades' | 'book', replica: string): Promise<Client> => subscribedAs(sim, adapter.connect(channel, ['BTC/USD', 'ETH/USD']), replica)


t.test('subscribing as the recorder does: a status, an acknowledgement per symbol, each snapshot after it, and book checksums the adapter recomputes', async (t) => {
  const { sim, clock } = await kraken(t)
  const adapter = createKrakenAdapter({ wsBase: sim.wsUrl })
  t.match(sim.wsUrl, /\/v2$/, 'the websocket base is /v2')
  const book = await subscribed(sim, adapter, 'book', 'a')
  const trades = await subscribed(sim, adapter, 'trades', 'b')
  advance(sim, clock, 30_000)
  await settle(sim, [book, trades])

  const b = parsed(book.texts)
  t.match(b[0], { channel: 'status', type: 'update', data: [{ system: 'online', api_version: 'v2' }] }, 'a status first')
  t.match(b.slice(1, 5), [
    { method: 'subscribe', result: { channel: 'book', depth: 1000, snapshot: true, symbol: 'BTC/USD' }, success: true, req_id: 1 },
    { channel: 'book', type: 'snapshot', data: [{ symbol: 'BTC/USD' }] },
    { method: 'subscribe', result: { channel: 'book', symbol: 'ETH/USD' }, success: true, req_id: 1 },
    { channel: 'book', type: 'snapshot', data: [{ symbol: 'ETH/USD' }] },
  ], 'each symbol acknowledged, its snapshot after it')
  t.match(b.slice(5, 7), [
    { method: 'subscribe', result: { channel: 'instrument' }, success: true, req_id: 2 },
    { channel: 'instrument', type: 'snapshot', data: { pairs: [{ symbol: 'BTC/USD', price_precision: 2, qty_precision: 8 }, { symbol: 'ETH/USD' }] } },
  ], 'the instrument channel: the precisions the checksum needs')
  const read = readAsRecorder(adapter, 'book', book.texts)
  t.same(read.classes.filter((c) => c.kind === 'unrepresentable'), [], 'every message is one the adapter reads')
  t.ok(read.checks.length > 200, `the adapter checked ${read.checks.length} book messages`)
  t.same(read.mismatches, [], 'and every checksum matched the book it built')
  t.ok(b.some((x) => x['type'] === 'update' && JSON.stringify(x).includes('"qty":0}')), 'updates remove levels with a quantity of 0')

  const tr = parsed(trades.texts)
  const snapshots = tr.filter((x) => x['channel'] === 'trade' && x['type'] === 'snapshot') as { data: { trade_id: number }[] }[]
  t.equal(snapshots.length, 2, 'a trade snapshot a symbol')
  const rt = readAsRecorder(adapter, 'trades', trades.texts)
  t.same(rt.classes.filter((c) => c.kind === 'unrepresentable'), [], 'every trade message is one the adapter reads')
  t.same(rt.verdicts.filter((v) => v !== 'next' && v !== 'start'), [], 'trade ids +1 a symbol')
  t.ok(rt.verdicts.length > 200, `${rt.verdicts.length} trades followed`)
})

t.test('the trade snapshot repeats the last 50 trades sent; a reconnect after a gap in the stream gets what it missed', async (t) => {
  const { sim, clock } = await kraken(t)
  const adapter = createKrakenAdapter({ wsBase: sim.wsUrl })
  const first = await subscribed(sim, adapter, 'trades', 'a')
  advance(sim, clock, 20_000)
  await settle(sim, [first])
  const sent = parsed(first.texts).filter((x) => x['type'] === 'update').flatMap((x) => x['data'] as { symbol: string; trade_id: number }[])
  const later = await subscribed(sim, adapter, 'trades', 'b')
  await settle(sim, [later])
  const snap = parsed(later.texts).filter((x) => x['type'] === 'snapshot') as { data: { symbol: string; trade_id: number }[] }[]
  const btc = sent.filter((x) => x.symbol === 'BTC/USD').slice(-50).map((x) => x.trade_id)
  t.same(snap[0]!.data.map((x) => x.trade_id), btc, 'BTC/USD: the last 50 trades sent, oldest first')
  t.equal(snap[0]!.data.length, 50)
})

t.test('ping, heartbeats, and a connection with no request for the idle limit dropped', async (t) => {
  const { sim, clock } = await kraken(t, { rate: 0.1, depthIntervalMs: 10_000, idleCloseMs: 400 })
  const adapter = createKrakenAdapter({ wsBase: sim.wsUrl })
  const c = await subscribed(sim, adapter, 'trades', 'a')
  c.ws.send('{"method":"ping","req_id":7}')
  await until(() => c.texts.some((x) => x.startsWith('{"method":"pong"')), 'pong')
  t.match(JSON.parse(c.texts.find((x) => x.startsWith('{"method":"pong"'))!), { method: 'pong', req_id: 7 }, 'pong echoes req_id')
  const before = c.texts.filter((x) => x === '{"channel":"heartbeat"}').length
  advance(sim, clock, 5_000)
  await settle(sim, [c])
  const beats = c.texts.filter((x) => x === '{"channel":"heartbeat"}').length - before
  t.ok(beats >= 3 && beats <= 5, `a heartbeat each second with nothing else (${beats} in 5 s at a trade every 10 s)`)
  const idle = await connect(sim, '?replica=b')
  const closed = await idle.closed
  t.equal(closed.code, 1006, 'a connection that sends no request is dropped')
  t.match(sim.truth.find((r) => r.kind === 'close' && r.conn === idle.id), { by: 'venue', why: 'no request for 400 ms' })
})

t.test('requests Kraken refuses, answered as Kraken answers', async (t) => {
  const { sim } = await kraken(t)
  const c = await connect(sim, '')
  const ask = async (text: string) => {
    const n = c.texts.length
    c.ws.send(text)
    await until(() => c.texts.length > n, `an answer to ${text}`)
    return JSON.parse(c.texts.at(-1)!) as Record<string, unknown>
  }
  t.match(await ask('{"method":"subscribe","params":{"channel":"trade","symbol":["XBT/EUR"]},"req_id":3}'), { method: 'subscribe', success: false, symbol: 'XBT/EUR', error: /Currency pair not supported/, req_id: 3 })
  t.match(await ask('{"method":"subscribe","params":{"channel":"book","symbol":["BTC/USD"],"depth":10}}'), { success: false, error: /serves depth 100, 500, 1000/ })
  t.match(await ask('{"method":"subscribe","params":{"channel":"book","symbol":["BTC/USD"],"depth":7}}'), { success: false, error: /depth: must be one of/ })
  t.match(await ask('{"method":"subscribe","params":{"channel":"ohlc","symbol":["BTC/USD"]}}'), { success: false, error: /Channel not supported/ })
  t.match(await ask('{"method":"subscribe","params":{"channel":"trade"}}'), { success: false, error: /symbol/ })
  t.match(await ask('{"method":"add_order"}'), { success: false, method: 'add_order', error: 'Method not supported' })
  t.match(await ask('{not json'), { success: false, error: 'Malformed request' })
  await ask('{"method":"subscribe","params":{"channel":"trade","symbol":["BTC/USD"],"snapshot":false}}')
  t.match(await ask('{"method":"subscribe","params":{"channel":"trade","symbol":["BTC/USD"]}}'), { success: false, error: 'Already subscribed' })
  t.match(await ask('{"method":"unsubscribe","params":{"channel":"trade","symbol":["BTC/USD"]},"req_id":9}'), { method: 'unsubscribe', success: true, result: { channel: 'trade', symbol: 'BTC/USD' }, req_id: 9 })
  t.match(await ask('{"method":"unsubscribe","params":{"channel":"trade","symbol":["BTC/USD"]}}'), { success: false, error: 'Subscription Not Found' })
  t.notOk(c.texts.some((x) => x.includes('"type":"snapshot"')), 'snapshot: false sends none')
})

t.test('faults: a corrupted checksum caught by the adapter on its connection alone, then a resync; a gap in the book caught by the checksum; a price as a string', async (t) => {
  const { sim, clock } = await kraken(t, {
    faults: {
      faults: [
        { kind: 'checksum', at: 5_000, replica: 'a', stream: 'btc/usd@book' },
        { kind: 'gap', at: 12_000, stream: 'eth/usd@book', count: 2 },
        { kind: 'unrepresentable', at: 15_000, replica: 'b', stream: 'btc/usd@trade', variant: 'price-string' },
      ],
    },
  })
  const adapter = createKrakenAdapter({ wsBase: sim.wsUrl })
  const a = await subscribed(sim, adapter, 'book', 'a')
  const b = await subscribed(sim, adapter, 'book', 'b')
  const tb = await subscribed(sim, adapter, 'trades', 'b')
  advance(sim, clock, 8_000)
  await settle(sim, [a, b])
  const fault = sim.truth.find((r) => r.kind === 'fault' && r.fault.kind === 'checksum')
  t.match(fault, { applied: true, detail: { conn: a.id, stream: 'btc/usd@book' } })
  const detail = (fault as Extract<TruthRecord, { kind: 'fault' }>).detail as { text: string; original: string }
  const ra = readAsRecorder(adapter, 'book', a.texts)
  const corrupted = JSON.parse(detail.text) as { data: [{ checksum: number }] }
  const original = JSON.parse(detail.original) as { data: [{ checksum: number }] }
  t.same(ra.mismatches, [{ instrument: 'BTC/USD', expected: String(corrupted.data[0].checksum), computed: String(original.data[0].checksum) }], 'replica a: the corrupted checksum, against the book\'s')
  t.same(readAsRecorder(adapter, 'book', b.texts).mismatches, [], 'replica b: none')

  // The recorder's resync: unsubscribe and subscribe the symbol's book; a new snapshot rebuilds it.
  for (const text of adapter.connect('book', ['BTC/USD', 'ETH/USD']).resync!('BTC/USD')) a.ws.send(text)
  await until(() => a.texts.filter((x) => x.startsWith('{"channel":"book","type":"snapshot","data":[{"symbol":"BTC/USD"')).length === 2, 'a second BTC/USD snapshot')
  advance(sim, clock, 10_000)
  await settle(sim, [a, b])
  const after = readAsRecorder(adapter, 'book', a.texts)
  const gap = sim.truth.find((r) => r.kind === 'fault' && r.fault.kind === 'gap')!
  t.ok(gap.kind === 'fault' && gap.applied, 'the gap applied')
  t.same(after.mismatches.map((m) => m.instrument), ['BTC/USD', 'ETH/USD'], 'replica a: after the resync BTC/USD checks out again, and ETH/USD\'s gap fails its checksum')
  t.same(readAsRecorder(adapter, 'book', b.texts).mismatches.map((m) => m.instrument), ['ETH/USD'], 'replica b: the gap too')

  await settle(sim, [tb])
  const broken = readAsRecorder(adapter, 'trades', tb.texts).classes.filter((c) => c.kind === 'unrepresentable')
  t.match(broken, [{ code: 'structure', reason: /price/ }], 'a price as a string is unrepresentable')
})

t.test('a plan Kraken cannot show is refused; a checksum fault on a venue without checksums too', async (t) => {
  await t.rejects(startVenueSimulator({ venue: 'kraken', faults: { faults: [{ kind: 'unrepresentable', at: 1, stream: 'btc/usd@trade', variant: 'price-number' }] } }), /faults\[0\]: kraken writes prices as numbers: break one with price-string/)
  await t.rejects(startVenueSimulator({ venue: 'kraken', faults: { faults: [{ kind: 'server-shutdown', at: 1 }] } }), /faults\[0\]: kraken announces no server shutdown/)
  await t.rejects(startVenueSimulator({ venue: 'binance', faults: { faults: [{ kind: 'checksum', at: 1, stream: 'btcusdt@depth@100ms' }] } }), /faults\[0\]: binance's books carry no checksum/)
  await t.rejects(startVenueSimulator({ venue: 'binance', faults: { faults: [{ kind: 'unrepresentable', at: 1, stream: 'btcusdt@trade', variant: 'price-string' }] } }), /binance writes prices as strings/)
  await t.rejects(startVenueSimulator({ venue: 'kraken', instruments: ['BTCUSD'] }), /not a Kraken symbol \(BASE\/QUOTE/)
  await t.rejects(startVenueSimulator({ venue: 'kraken', faults: { faults: [{ kind: 'checksum', at: 1, stream: 'btc/usd@trade' }] } }), /a checksum is a book's/)
})

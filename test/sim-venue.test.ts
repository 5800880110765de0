import t, { type Test } from 'tap'
import { once } from 'node:events'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { WebSocket } from 'ws'
import { z } from 'zod'
import { manualClock, startVenueSimulator, type VenueSimulator, type VenueSimulatorOptions } from '../src/sim/venue/simulator.js'
import { faultPlanSchema, type FaultPlanInput } from '../src/sim/venue/faults.js'
import type { TruthRecord } from '../src/sim/venue/truth.js'
import type { FrameClass, SequenceSpan, SequenceState, SequenceVerdict } from '../src/venues/adapter.js'
import { binanceSpot, createBinanceSpotAdapter } from '../src/venues/binance.js'
import { binanceUsdm, createBinanceUsdmAdapter } from '../src/venues/binance-usdm.js'
import { Registry } from '../src/core/registry.js'
import { runPipeline } from '../src/core/runner.js'
import type { StageDef } from '../src/core/stage.js'
import { reportSink } from '../src/sinks/report.js'
import { registerSimulateVenue, simulateVenuePipeline } from '../pipelines/simulate-venue.js'
import { captureIO } from './helpers/io.js'
import { advance, connect, sentTo, settle, until, type Client } from './helpers/sim-client.js'

const START = Date.UTC(2026, 9, 3, 14)
const FOUR = ['btcusdt@trade', 'btcusdt@depth@100ms', 'ethusdt@trade', 'ethusdt@depth@100ms']
const dir = mkdtempSync(join(tmpdir(), 'pipe-sim-venue-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

// ---------------------------------------------------------------------------------------------------
// Clients and helpers

async function subscribe(client: Client, streams: string[], id = 1): Promise<void> {
  client.ws.send(JSON.stringify({ method: 'SUBSCRIBE', params: streams, id }))
  const ack = `{"result":null,"id":${id}}`
  await until(() => client.texts.includes(ack), `the acknowledgement of SUBSCRIBE ${id}`)
}

/** The channel of a text: book for depth updates and snapshots, trades for the rest. */
const channelOf = (text: string): 'trades' | 'book' => text.includes('"e":"depthUpdate"') || text.startsWith('{"rest"') ? 'book' : 'trades'
const classify = (text: string): FrameClass => binanceSpot.classify(channelOf(text), Buffer.from(text), false)
const payloadOf = (text: string): Record<string, unknown> => JSON.parse(text) as Record<string, unknown>
const trades = (texts: string[], symbol = 'BTCUSDT') => texts.filter((x) => x.startsWith('{"e":"trade"') && x.includes(`"s":"${symbol}"`))
const depths = (texts: string[], symbol = 'BTCUSDT') => texts.filter((x) => x.startsWith('{"e":"depthUpdate"') && x.includes(`"s":"${symbol}"`))

/**
 * Binance's sequence rules over one connection's frames, per sequence and instrument (and, given `streamOf`,
 * per stream: futures' `@depth@100ms` and `@depth` of a symbol are two chains); keeps the verdicts other than `next`.
 */
class Sequences {
  readonly states = new Map<string, SequenceState>()
  readonly verdicts: (SequenceVerdict & { span: SequenceSpan })[] = []
  constructor(private readonly adapter = binanceSpot, private readonly classifyText = classify, private readonly streamOf: (text: string) => string = () => '') {}
  feed(span: SequenceSpan, stream = ''): SequenceVerdict {
    const key = `${span.sequence}:${span.instrument}${stream}`
    const v = this.adapter.sequence(this.states.get(key), span)
    this.states.set(key, v.state)
    if (v.verdict !== 'next') this.verdicts.push({ ...v, span })
    return v
  }
  feedTexts(texts: string[]): FrameClass[] {
    return texts.map((text) => {
      const c = this.classifyText(text)
      for (const span of c.kind === 'rows' ? c.sequences : c.kind === 'unrepresentable' ? c.sequences ?? [] : []) this.feed(span, this.streamOf(text))
      return c
    })
  }
  /** The verdicts other than a sequence's start. */
  breaks(): string[] {
    return this.verdicts.filter((v) => v.verdict !== 'start').map((v) => v.verdict === 'gap' ? `gap ${v.span.sequence}:${v.span.instrument} after ${v.afterId} before ${v.beforeId}` : `${v.verdict} ${v.span.sequence}:${v.span.instrument}`)
  }
}

type Scenario = { sim: VenueSimulator; clock: ReturnType<typeof manualClock>; a: Client; b: Client }

/** A simulator on a manual clock with two connections, `a` and `b`, subscribed to `streams`. */
async function twoReplicas(t: Test, options: VenueSimulatorOptions = {}, streams = FOUR): Promise<Scenario> {
  const clock = manualClock(START)
  const sim = await startVenueSimulator({ clock: clock.now, rate: 50, ...options })
  t.teardown(() => sim.close())
  const a = await connect(sim, '/ws?replica=a')
  const b = await connect(sim, '/ws?replica=b')
  await subscribe(a, streams)
  await subscribe(b, streams)
  return { sim, clock, a, b }
}

const faultRecords = (sim: VenueSimulator) => sim.truth.filter((r): r is Extract<TruthRecord, { kind: 'fault' }> => r.kind === 'fault')
const closeRecords = (sim: VenueSimulator) => sim.truth.filter((r): r is Extract<TruthRecord, { kind: 'close' }> => r.kind === 'close')

// ---------------------------------------------------------------------------------------------------
// The streams

t.test('two replicas get the same frames in the same order; every frame classifies and every sequence continues', async (t) => {
  const { sim, clock, a, b } = await twoReplicas(t)
  const combined = await connect(sim, '/stream?streams=btcusdt@trade/btcusdt@depth@100ms&replica=c')
  advance(sim, clock, 3000)
  await settle(sim, [a, b, combined])
  t.same(a.texts, b.texts, 'byte for byte, in order')
  t.equal(a.texts[0], '{"result":null,"id":1}', 'the SUBSCRIBE acknowledgement first')
  t.ok(trades(a.texts).length >= 140 && trades(a.texts, 'ETHUSDT').length >= 140, 'some 150 trades a symbol (50 a second, 3 seconds)')
  t.ok(depths(a.texts).length >= 29 && depths(a.texts, 'ETHUSDT').length >= 29, 'some 30 depth updates a symbol (one every 100 ms)')
  const seq = new Sequences()
  const classes = seq.feedTexts(a.texts)
  t.same(classes[0], { kind: 'control', note: 'request acknowledged' })
  t.same(classes.slice(1).filter((c) => c.kind !== 'rows'), [], 'every other frame carries rows')
  t.same(seq.breaks(), [], 'trade ids +1, U == previous u + 1, on both symbols')
  t.equal(seq.verdicts.length, 4, 'four sequences started')
  let lastE = 0
  for (const x of a.texts.slice(1)) {
    const E = payloadOf(x).E as number
    if (E < lastE) t.fail('event times go back')
    lastE = E
  }
  t.ok(lastE >= START + 2900 && lastE <= START + 3000, 'E from the simulated clock')
  for (const x of trades(a.texts)) if ((payloadOf(x).T as number) > (payloadOf(x).E as number)) t.fail('T after E')
  const bookOk = depths(a.texts).every((x) => {
    const d = payloadOf(x) as { b: [string, string][]; a: [string, string][] }
    return d.b.every(([p]) => d.a.every(([q]) => Number(p) < Number(q)))
  })
  t.ok(bookOk, 'no update puts a bid at or above an ask it carries')

  const btc = a.texts.filter((x) => x.includes('"s":"BTCUSDT"'))
  t.same(combined.texts.map((x) => {
    const w = payloadOf(x) as { stream: string; data: unknown }
    t.equal(w.stream, x.includes('"e":"trade"') ? 'btcusdt@trade' : 'btcusdt@depth@100ms')
    return x.slice(x.indexOf(',"data":') + 8, -1)
  }), btc, 'a combined stream carries the same payloads, wrapped')
  t.same(combined.texts.filter((x) => classify(x).kind !== 'rows'), [], 'and the adapter reads them')

  const frames = sim.truth.filter((r) => r.kind === 'frame')
  t.ok(frames.every((r) => r.kind === 'frame' && r.simTimeUs >= START * 1000), 'the truth has each frame with its simulated time')
  t.same(frames.filter((r) => r.kind === 'frame' && r.stream.startsWith('eth')).map((r) => r.kind === 'frame' && r.to), Array(trades(a.texts, 'ETHUSDT').length + depths(a.texts, 'ETHUSDT').length).fill([a.id, b.id]), 'sent to both')
})

t.test('flood: a fixed number of trades as fast as the clients take them, ids +1 after the clock\'s, and the truth of each', async (t) => {
  const { sim, clock, a, b } = await twoReplicas(t, {}, ['btcusdt@trade', 'ethusdt@trade'])
  const combined = await connect(sim, '/stream?streams=btcusdt@trade&timeUnit=microsecond&replica=c')
  advance(sim, clock, 200)
  const result = await sim.flood(5001)
  t.equal(result.frames, 5001)
  advance(sim, clock, 200)
  await settle(sim, [a, b, combined])
  t.same(a.texts, b.texts, 'both replicas, byte for byte, in order')
  const seq = new Sequences()
  t.same(seq.feedTexts(a.texts).slice(1).filter((c) => c.kind !== 'rows'), [], 'every frame a trade')
  t.same(seq.breaks(), [], 'ids +1 across the clock\'s trades and the flood\'s, on both symbols')
  t.ok(trades(a.texts).length >= 2501 + 15 && trades(a.texts, 'ETHUSDT').length >= 2500 + 15, 'the flood\'s trades, the symbols in turn, between the clock\'s')
  let lastE = 0
  for (const x of a.texts.slice(1)) {
    const E = payloadOf(x).E as number
    if (E < lastE) t.fail('event times go back')
    lastE = E
  }
  t.same(combined.texts.filter((x) => !x.startsWith('{"stream":"btcusdt@trade","data":{"e":"trade","E":1791036')), [], 'a combined microsecond connection gets its variant')
  t.equal(sim.truth.filter((r) => r.kind === 'frame' && r.to.includes(a.id)).length, a.texts.length - 1, 'the truth lists every frame sent')
  await sim.close()
})

t.test('flood, each frame sent by itself: the same frames as in batches', async (t) => {
  const received: string[][] = []
  for (const sendEach of [false, true]) {
    const { sim, a, b } = await twoReplicas(t, {}, ['btcusdt@trade', 'ethusdt@trade'])
    t.equal((await sim.flood(3001, { sendEach })).frames, 3001)
    await settle(sim, [a, b])
    t.same(a.texts, b.texts, `sendEach ${sendEach}: both replicas, byte for byte, in order`)
    t.equal(sim.truth.filter((r) => r.kind === 'frame' && r.to.includes(a.id)).length, a.texts.length - 1, `sendEach ${sendEach}: the truth lists every frame sent`)
    received.push(a.texts)
    await sim.close()
  }
  t.equal(received[1]!.length, 3002, 'the acknowledgement and every trade')
  t.same(received[1], received[0], 'the same texts in the same order either way')
})

t.test('flood: refused while a fault is pending or a connection is stalled', async (t) => {
  const pending = await twoReplicas(t, { faults: { faults: [{ kind: 'disconnect', at: 60_000, replica: 'a' }] } })
  await t.rejects(pending.sim.flood(10), /a flood does not mix with faults: 1 pending, 0 connections stalled/)
  const stalled = await twoReplicas(t, { faults: { faults: [{ kind: 'stall', at: 10, replica: 'a', durationMs: 60_000 }] } })
  advance(stalled.sim, stalled.clock, 100)
  await t.rejects(stalled.sim.flood(10), /0 pending, 1 connections stalled/)
  await t.rejects(stalled.sim.flood(0), /a positive whole number of frames/)
})

t.test('the REST snapshot joins the depth stream, and the updates after it rebuild the venue\'s book', async (t) => {
  const clock = manualClock(START)
  const sim = await startVenueSimulator({ clock: clock.now })
  t.teardown(() => sim.close())
  const adapter = createBinanceSpotAdapter({ wsBase: sim.wsUrl, restBase: sim.restUrl })
  const plan = adapter.connect('book', ['BTCUSDT'])
  t.equal(plan.url, `${sim.wsUrl}/ws`)
  const client = await connect(sim, plan.url.slice(sim.wsUrl.length))
  client.ws.send(plan.send[0]!)
  await until(() => client.texts.length === 1, 'the acknowledgement')
  advance(sim, clock, 1000)
  const seq = new Sequences()
  const fetchSnapshot = async () => {
    const res = await fetch(adapter.snapshotRequest('book', 'BTCUSDT')!.url)
    t.equal(res.status, 200)
    t.equal(res.headers.get('content-type'), 'application/json;charset=UTF-8')
    return res.text()
  }
  const body = await fetchSnapshot()
  await settle(sim, [client])
  seq.feedTexts(client.texts)
  const snap = binanceSpot.classify('book', Buffer.from(adapter.wrapSnapshot('book', 'BTCUSDT', body)), false)
  if (snap.kind !== 'rows') throw new Error('the snapshot does not classify as rows')
  t.equal(snap.table, 'book_snapshots')
  t.equal(seq.feed(snap.sequences[0]!).verdict, 'snapshot', 'the snapshot joins (not snapshot-behind)')
  const L = (payloadOf(body) as { lastUpdateId: number }).lastUpdateId
  t.equal(L, (payloadOf(depths(client.texts).at(-1)!) as { u: number }).u, 'lastUpdateId is the last update sent')

  // A book from the snapshot, moved by the updates after it, is the venue's book.
  type Side = Map<string, string>
  const parse = (text: string) => {
    const s = payloadOf(text) as { bids: [string, string][]; asks: [string, string][] }
    return { bids: new Map(s.bids) as Side, asks: new Map(s.asks) as Side }
  }
  const book = parse(body)
  const before = client.texts.length
  advance(sim, clock, 2000)
  await settle(sim, [client])
  for (const x of client.texts.slice(before)) {
    t.equal(seq.feed((classify(x) as Extract<FrameClass, { kind: 'rows' }>).sequences[0]!).verdict, 'next')
    const d = payloadOf(x) as { b: [string, string][]; a: [string, string][] }
    for (const [levels, side] of [[d.b, book.bids], [d.a, book.asks]] as const) {
      for (const [p, q] of levels) if (q === '0.00000000') side.delete(p); else side.set(p, q)
    }
  }
  const later = parse(await fetchSnapshot())
  const sorted = (m: Side, desc: boolean) => [...m].sort((x, y) => (desc ? Number(y[0]) - Number(x[0]) : Number(x[0]) - Number(y[0])))
  t.same(sorted(book.bids, true), sorted(later.bids, true), 'bids')
  t.same(sorted(book.asks, false), sorted(later.asks, false), 'asks')
  t.ok(Number(sorted(later.bids, true)[0]![0]) < Number(sorted(later.asks, false)[0]![0]), 'the book does not cross')

  const limited = payloadOf(await (await fetch(`${sim.restUrl}/api/v3/depth?symbol=BTCUSDT&limit=5`)).text()) as { bids: unknown[]; asks: unknown[] }
  t.same([limited.bids.length, limited.asks.length], [5, 5], 'limit')
  const refusals: [string, number, string][] = [
    ['/api/v3/depth?symbol=NOPE', 400, '{"code":-1121,"msg":"Invalid symbol."}'],
    ['/api/v3/depth', 400, '{"code":-1102,"msg":"Mandatory parameter \'symbol\' was not sent, was empty/null, or malformed."}'],
    ['/api/v3/depth?symbol=BTCUSDT&limit=x', 400, '{"code":-1100,"msg":"Illegal characters found in parameter \'limit\'; legal range is \'^[0-9]{1,20}$\'."}'],
    ['/api/v3/ticker', 404, '{"code":-1000,"msg":"The simulator serves GET /api/v3/depth only."}'],
  ]
  for (const [path, status, text] of refusals) {
    const res = await fetch(sim.restUrl + path)
    t.same([res.status, await res.text()], [status, text], path)
  }
  t.ok(sim.truth.some((r) => r.kind === 'rest' && r.status === 200 && r.text === body), 'the truth has the snapshot served')
})

t.test('requests: URL subscriptions, UNSUBSCRIBE, LIST_SUBSCRIPTIONS, combined as a property, microseconds, errors', async (t) => {
  const clock = manualClock(START)
  const sim = await startVenueSimulator({ clock: clock.now, rate: 20 })
  t.teardown(() => sim.close())
  const raw = await connect(sim, '/ws/btcusdt@trade/ethusdt@trade')
  const micro = await connect(sim, '/ws?timeUnit=MICROSECOND')
  await subscribe(micro, ['btcusdt@trade'])
  advance(sim, clock, 500)
  await settle(sim, [raw, micro])
  t.ok(trades(raw.texts).length >= 9 && trades(raw.texts, 'ETHUSDT').length >= 9, 'subscribed by the URL')
  const usAdapter = createBinanceSpotAdapter({ timeUnit: 'us' })
  const m = trades(micro.texts)
  t.equal(m.length, trades(raw.texts).length)
  for (let i = 0; i < m.length; i++) {
    const us = payloadOf(m[i]!).E as number
    t.equal(Math.floor(us / 1000), payloadOf(trades(raw.texts)[i]!).E, 'the same time, in microseconds')
    t.equal(usAdapter.classify('trades', Buffer.from(m[i]!), false).kind, 'rows')
  }

  const ask = async (req: unknown): Promise<string> => {
    const n = raw.texts.length
    raw.ws.send(typeof req === 'string' ? req : JSON.stringify(req))
    await until(() => raw.texts.length > n, 'a reply')
    return raw.texts[n]!
  }
  t.equal(await ask({ method: 'LIST_SUBSCRIPTIONS', id: 3 }), '{"result":["btcusdt@trade","ethusdt@trade"],"id":3}')
  t.equal(await ask({ method: 'UNSUBSCRIBE', params: ['ethusdt@trade'], id: 4 }), '{"result":null,"id":4}')
  t.equal(await ask({ method: 'SET_PROPERTY', params: ['combined', true], id: 5 }), '{"result":null,"id":5}')
  t.equal(await ask({ method: 'GET_PROPERTY', params: ['combined'], id: 6 }), '{"result":true,"id":6}')
  t.match(await ask('{"method":'), /^\{"error":\{"code":3,"msg":"Invalid JSON: .*"\},"id":null\}$/)
  t.equal(await ask({ method: 'SUBSCRIBE', params: ['btcusdt@trade'], id: -1 }), '{"error":{"code":2,"msg":"Invalid request: request ID must be an unsigned integer"},"id":null}')
  t.match(await ask({ method: 'PING', id: 7 }), /^\{"error":\{"code":2,"msg":"Invalid request: unknown method.*"\},"id":7\}$/)
  t.match(await ask({ method: 'SUBSCRIBE', params: ['BTCUSDT@trade'], id: 8 }), /^\{"error":\{"code":2,.*"id":8\}$/)
  const n = raw.texts.length
  advance(sim, clock, 500)
  await settle(sim, [raw])
  const after = raw.texts.slice(n)
  t.ok(after.length > 0 && after.every((x) => x.startsWith('{"stream":"btcusdt@trade","data":{"e":"trade"')), 'only btcusdt, combined from now on')
  for (const x of after) t.equal(classify(x).kind, 'rows')

  for (const path of ['/nope', '/ws?timeUnit=second', '/ws/BTCUSDT@trade']) {
    const ws = new WebSocket(sim.wsUrl + path)
    const [err] = await once(ws, 'error') as [Error]
    t.match(err.message, /Unexpected server response: (404|400)/, `${path} refused`)
  }
})

// ---------------------------------------------------------------------------------------------------
// Faults

t.test('gap: the venue drops trades and depth updates, on every connection', async (t) => {
  const { sim, clock, a, b } = await twoReplicas(t, { faults: { faults: [
    { kind: 'gap', at: 1000, stream: 'btcusdt@trade', count: 3 },
    { kind: 'gap', afterFrames: 100, stream: 'ethusdt@depth@100ms', count: 2 },
  ] } })
  advance(sim, clock, 3000)
  await settle(sim, [a, b])
  t.same(a.texts, b.texts)
  const seq = new Sequences()
  seq.feedTexts(a.texts)
  const tradeGap = faultRecords(sim).find((r) => r.index === 0)
  const depthGap = faultRecords(sim).find((r) => r.index === 1)
  t.ok(tradeGap!.applied && depthGap!.applied)
  const dropped = tradeGap!.detail.dropped as { first: number; last: number }[]
  t.equal(dropped.length, 3)
  t.ok(tradeGap!.simTimeUs >= (START + 1000) * 1000, 'at the time given')
  const dropsDepth = depthGap!.detail.dropped as { first: number; last: number }[]
  t.same(seq.breaks().sort(), [
    `gap book:ETHUSDT after ${dropsDepth[0]!.first - 1} before ${dropsDepth[1]!.last + 1}`,
    `gap trades:BTCUSDT after ${dropped[0]!.first - 1} before ${dropped[2]!.last + 1}`,
  ], 'the adapter sees the gaps the truth names, and no others')
  const ids = new Set(trades(a.texts).map((x) => payloadOf(x).t as number))
  t.ok(dropped.every((d) => !ids.has(d.first)), 'no dropped id was sent')
})

t.test('disconnect: one connection closes with the code and reason given; 1006 drops it without a close frame', async (t) => {
  const { sim, clock, a, b } = await twoReplicas(t, { faults: { faults: [
    { kind: 'disconnect', at: 500, replica: 'a', code: 4000, reason: 'test' },
    { kind: 'disconnect', at: 1000, connection: 2 },
  ] } })
  advance(sim, clock, 600)
  t.same(await a.closed, { code: 4000, reason: 'test' })
  advance(sim, clock, 600)
  t.same(await b.closed, { code: 1006, reason: '' }, 'no close frame: the client sees 1006')
  t.equal(a.texts.length, sentTo(sim, a.id), 'every frame the truth lists as sent arrived')
  t.equal(b.texts.length, sentTo(sim, b.id))
  t.ok(b.texts.length > a.texts.length, 'b went on after a left')
  t.same(closeRecords(sim).map((r) => [r.conn, r.by, r.code, r.reason, r.why]), [[a.id, 'venue', 4000, 'test', 'fault'], [b.id, 'venue', 1006, '', 'fault']])
  t.same(faultRecords(sim).map((r) => [r.applied, r.detail.conn]), [[true, a.id], [true, b.id]])
})

t.test('stall: no frames and no pings, then the frames held back arrive late, or never, or the connection closes', async (t) => {
  const { sim, clock, a, b } = await twoReplicas(t, { pingIntervalMs: 20, pongTimeoutMs: 10_000, faults: { faults: [
    { kind: 'stall', at: 500, replica: 'b', durationMs: 1000 },
  ] } }, ['btcusdt@trade'])
  advance(sim, clock, 700)
  await settle(sim, [a, b])
  const pings = b.pings
  const held = b.texts.length
  await new Promise((r) => setTimeout(r, 100))
  advance(sim, clock, 100)
  await settle(sim, [a])
  t.equal(b.texts.length, held, 'nothing during the stall')
  t.equal(b.pings, pings, 'no pings during the stall')
  t.ok(a.pings > 0 && a.texts.length > held, 'a is served meanwhile')
  advance(sim, clock, 1000)
  await settle(sim, [a, b])
  t.same(b.texts, a.texts, 'resume: every frame arrives, late, in order')
  const late = sim.truth.filter((r) => r.kind === 'frame' && r.sentUs !== undefined)
  t.ok(late.length > 0 && late.every((r) => r.kind === 'frame' && r.to[0] === b.id && r.sentUs! >= (START + 1500) * 1000), 'the truth says which were late')

  const drop = await twoReplicas(t, { faults: { faults: [
    { kind: 'stall', at: 500, replica: 'b', durationMs: 1000, then: 'drop' },
    { kind: 'stall', at: 2000, replica: 'a', durationMs: 200, then: 'close', code: 4001, reason: 'stalled' },
  ] } }, ['btcusdt@trade'])
  advance(drop.sim, drop.clock, 2500)
  await settle(drop.sim, [drop.b])
  // Frames made from the stall's start (500 ms) to its end (1500 ms), exclusive, are the stall's.
  const E = (x: string) => (payloadOf(x).E as number | undefined) ?? 0
  const beforeAStalls = (x: string) => E(x) < START + 2000
  t.same(drop.b.texts.filter(beforeAStalls), drop.a.texts.filter((x) => beforeAStalls(x) && !(E(x) >= START + 500 && E(x) < START + 1500)), 'drop: the stall\'s frames never come')
  const seq = new Sequences()
  seq.feedTexts(drop.b.texts)
  t.equal(seq.breaks().length, 1, 'b sees one gap')
  t.same(await drop.a.closed, { code: 4001, reason: 'stalled' }, 'close: at the end of the stall')
})

t.test('only-one, conflict, unrepresentable: what one frame does to one connection or all', async (t) => {
  const { sim, clock, a, b } = await twoReplicas(t, { faults: { faults: [
    { kind: 'only-one', at: 200, replica: 'a', stream: 'btcusdt@trade' },
    { kind: 'conflict', at: 400, replica: 'b', stream: 'btcusdt@trade' },
    { kind: 'conflict', at: 600, replica: 'b', stream: 'ethusdt@trade', replace: true },
    { kind: 'unrepresentable', at: 800, stream: 'btcusdt@trade' },
    { kind: 'unrepresentable', at: 1000, replica: 'a', stream: 'btcusdt@depth@100ms', variant: 'missing-field' },
    { kind: 'unrepresentable', at: 1200, stream: 'ethusdt@trade', variant: 'truncated' },
    { kind: 'only-one', afterFrames: 150, replica: 'b', stream: 'ethusdt@trade' },
    { kind: 'only-one', at: 1400, replica: 'nobody', stream: 'ethusdt@trade' },
  ] } })
  advance(sim, clock, 2000)
  await settle(sim, [a, b])
  const f = faultRecords(sim)
  const byIndex = (i: number) => f.find((r) => r.index === i)!
  t.same([0, 1, 2, 3, 4, 5, 6, 7].map((i) => byIndex(i).applied), [true, true, true, true, true, true, true, false], 'each fault in the truth')
  t.match(byIndex(7).detail.why, /no open connection/)

  const onlyA = a.texts.filter((x) => !b.texts.includes(x))
  const onlyB = b.texts.filter((x) => !a.texts.includes(x))
  t.ok(onlyA.includes(byIndex(0).detail.text as string), 'only-one: a got a frame b never did')
  t.same(byIndex(0).detail.withheldFrom, [b.id])
  t.ok(onlyB.includes(byIndex(6).detail.text as string), 'only-one after 150 frames, to b')

  const conflict = byIndex(1)
  const dup = b.texts.filter((x) => x.includes(`"t":${conflict.detail.first},`))
  t.equal(dup.length, 2, 'conflict: b has the trade id twice')
  t.not(payloadOf(dup[0]!).p, payloadOf(dup[1]!).p, 'with another price')
  t.same(dup, [conflict.detail.original, conflict.detail.text])
  t.equal(a.texts.filter((x) => x.includes(`"t":${conflict.detail.first},`)).length, 1)
  const replaced = byIndex(2)
  t.ok(b.texts.includes(replaced.detail.text as string) && !b.texts.includes(replaced.detail.original as string), 'replace: b has only the altered trade')
  t.ok(a.texts.includes(replaced.detail.original as string) && !a.texts.includes(replaced.detail.text as string), 'a has the true one')
  const [ca, cb] = [classify(replaced.detail.original as string), classify(replaced.detail.text as string)]
  if (ca.kind !== 'rows' || cb.kind !== 'rows') throw new Error('not rows')
  t.equal(ca.rows[0]!.trade_id, cb.rows[0]!.trade_id)
  t.not(ca.rows[0]!.price, cb.rows[0]!.price, 'same t, another price: a conflict')

  const bad = byIndex(3).detail.text as string
  t.match(bad, /"p":\d+\.\d{8},/, 'price-number: p is a JSON number')
  for (const c of [a, b]) t.ok(c.texts.includes(bad), 'to every connection')
  const badClass = classify(bad)
  t.match(badClass, { kind: 'unrepresentable', code: 'structure', sequences: [{ sequence: 'trades' }] }, 'the adapter finds it unrepresentable, and still places it in its sequence')
  const missing = byIndex(4).detail.text as string
  t.notMatch(missing, /"b":/)
  t.ok(a.texts.includes(missing) && !b.texts.includes(missing), 'to a only')
  t.match(classify(missing), { kind: 'unrepresentable', code: 'structure' })
  const truncated = byIndex(5).detail.text as string
  t.match(classify(truncated), { kind: 'unrepresentable', code: 'not-json' })
  for (const c of [a, b]) t.ok(c.texts.includes(truncated))
})

t.test('scheduled disconnect: 1001 with an empty reason, brought forward by the plan or at maxConnectionMs', async (t) => {
  const { sim, clock, a, b } = await twoReplicas(t, { faults: { faults: [{ kind: 'scheduled-disconnect', at: 300 }] } })
  advance(sim, clock, 400)
  t.same(await a.closed, { code: 1001, reason: '' })
  t.same(await b.closed, { code: 1001, reason: '' })
  t.same(faultRecords(sim)[0]!.detail.conns, [a.id, b.id])
  t.same(closeRecords(sim).map((r) => r.why), ['scheduled', 'scheduled'])

  const aged = await twoReplicas(t, { maxConnectionMs: 1000 })
  const c = await connect(aged.sim, '/ws?replica=late')
  advance(aged.sim, aged.clock, 500)
  advance(aged.sim, aged.clock, 600)
  t.same(await aged.a.closed, { code: 1001, reason: '' }, 'a connection lives maxConnectionMs')
  t.same(aged.sim.connections(), [], 'none is left open')
  t.same(closeRecords(aged.sim).map((r) => [r.conn, r.why]), [[aged.a.id, '24-hour limit'], [aged.b.id, '24-hour limit'], [c.id, '24-hour limit']])
})

// ---------------------------------------------------------------------------------------------------
// Keep-alive, determinism, the truth file, the clock

t.test('keep-alive: pings every interval; no pong, dropped; a client ping answered', async (t) => {
  const sim = await startVenueSimulator({ pingIntervalMs: 30, pongTimeoutMs: 100, rate: 1 })
  t.teardown(() => sim.close())
  const live = await connect(sim, '/ws')
  const mute = await connect(sim, '/ws', { autoPong: false })
  const started = Date.now()
  t.same(await mute.closed, { code: 1006, reason: '' }, 'a client that does not pong is dropped')
  const took = Date.now() - started
  t.ok(took >= 100 && took < 1000, `after the pong timeout (${took} ms)`)
  t.ok(mute.pings >= 1)
  t.match(closeRecords(sim), [{ conn: mute.id, by: 'venue', why: 'no pong' }])
  await new Promise((r) => setTimeout(r, 150))
  t.ok(live.pings >= 4, `a client that pongs stays, pinged (${live.pings} pings)`)
  t.equal(live.ws.readyState, WebSocket.OPEN)
  live.ws.ping('hello')
  const [payload] = await once(live.ws, 'pong') as [Buffer]
  t.equal(payload.toString(), 'hello', 'the server answers a ping with its payload')
})

t.test('determinism: the same seed sends the same texts; another seed, others', async (t) => {
  const run = async (seed: number) => {
    const { sim, clock, a, b } = await twoReplicas(t, { seed, faults: { faults: [{ kind: 'gap', at: 700, stream: 'btcusdt@depth@100ms' }] } })
    advance(sim, clock, 1500)
    await settle(sim, [a, b])
    return sim.truth.filter((r) => r.kind === 'frame').map((r) => r.kind === 'frame' && `${r.simTimeUs} ${r.stream} ${r.text}`)
  }
  const first = await run(7)
  t.ok(first.length > 100)
  t.same(await run(7), first)
  t.not((await run(8)).join('\n'), first.join('\n'))
})

t.test('the truth file: JSON lines written as they happen, nothing kept in memory; an existing file is refused', async (t) => {
  const file = join(dir, 'truth.jsonl')
  const clock = manualClock(START)
  const sim = await startVenueSimulator({ clock: clock.now, truthFile: file, faults: { faults: [{ kind: 'disconnect', at: 600, replica: 'a', code: 1000 }, { kind: 'gap', at: 5000, stream: 'btcusdt@trade' }] } })
  const a = await connect(sim, '/ws?replica=a')
  await subscribe(a, ['btcusdt@trade'])
  advance(sim, clock, 1000)
  await a.closed
  await sim.close()
  t.same(sim.truth, [], 'not kept in memory')
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as TruthRecord)
  t.same(lines.map((r) => r.kind).filter((k, i, all) => all.indexOf(k) === i), ['start', 'open', 'subscribe', 'reply', 'frame', 'close', 'fault'])
  t.same(lines.filter((r) => r.kind === 'frame' || r.kind === 'reply').map((r) => (r as { text: string }).text), a.texts, 'every text sent, exactly')
  t.match(lines.filter((r) => r.kind === 'fault'), [
    { index: 0, applied: true, fault: { kind: 'disconnect', replica: 'a', code: 1000, reason: '' } },
    { index: 1, applied: false, detail: { why: /before the simulator stopped/ } },
  ])
  await t.rejects(startVenueSimulator({ truthFile: file }), { code: 'EEXIST' })
})

t.test('timeScale: a thousand simulated seconds a real second', async (t) => {
  const sim = await startVenueSimulator({ startTime: START, timeScale: 1000, rate: 1, instruments: ['BTCUSDT'] })
  t.teardown(() => sim.close())
  const c = await connect(sim, '/ws/btcusdt@trade')
  const real = Date.now()
  await until(() => c.texts.length >= 40, '40 trades')
  const E = c.texts.map((x) => payloadOf(x).E as number)
  const simulated = E.at(-1)! - E[0]!
  const elapsed = Date.now() - real
  t.ok(simulated >= 39_000, `40 trades at one a simulated second span 39 s (${simulated} ms)`)
  t.ok(elapsed < simulated / 10, `in well under a tenth of that in real time (${elapsed} ms)`)
  t.ok(E[0]! >= START, 'from startTime')
  await t.rejects(startVenueSimulator({ clock: () => START, timeScale: 2 }), /not both/)
})

t.test('options and plans that are wrong are refused, naming what', async (t) => {
  await t.rejects(startVenueSimulator({ faults: { faults: [{ kind: 'stall', at: 1, replica: 'a' }] } as FaultPlanInput }), /faults\[0\]\.durationMs/)
  await t.rejects(startVenueSimulator({ faults: { faults: [{ kind: 'disconnect', at: 1, code: 1005, replica: 'a' }] } }), /faults\[0\]\.code: must be 1006/)
  await t.rejects(startVenueSimulator({ faults: { faults: [{ kind: 'only-one', at: 1, stream: 'btcusdt@trade' }] } }), /exactly one of replica and connection/)
  await t.rejects(startVenueSimulator({ faults: { faults: [{ kind: 'gap', stream: 'btcusdt@trade' }] } }), /exactly one of at and afterFrames/)
  await t.rejects(startVenueSimulator({ faults: { faults: [{ kind: 'conflict', at: 1, replica: 'a', stream: 'btcusdt@depth@100ms' }] } }), /a conflict is a trade/)
  await t.rejects(startVenueSimulator({ instruments: ['btcusdt'] }), /not a Binance spot symbol/)
  await t.rejects(startVenueSimulator({ rate: 0 }), /rate must be/)
})

t.test('docs/simulator.md shows the fault plan\'s JSON Schema as the code defines it', async (t) => {
  const doc = readFileSync(new URL('../docs/simulator.md', import.meta.url), 'utf8')
  const block = /<!-- fault-plan-schema -->\n```json\n([\s\S]*?)\n```/.exec(doc)
  t.ok(block, 'the schema block is there')
  t.same(JSON.parse(block![1]!), z.toJSONSchema(faultPlanSchema, { io: 'input' }))
  const example = /<!-- fault-plan-example -->\n```json\n([\s\S]*?)\n```/.exec(doc)
  t.ok(faultPlanSchema.safeParse(JSON.parse(example![1]!)).success, 'the example plan is valid')
})

// ---------------------------------------------------------------------------------------------------
// USD-M futures

const usdm = createBinanceUsdmAdapter()
const MARKET = ['btcusdt@aggTrade', 'btcusdt@markPrice', 'btcusdt@forceOrder', 'ethusdt@aggTrade', 'ethusdt@markPrice', 'ethusdt@forceOrder']
const PUBLIC = ['btcusdt@depth@100ms', 'btcusdt@depth', 'ethusdt@depth@100ms', 'ethusdt@depth']
type UsdmChannel = 'trades' | 'book' | 'funding' | 'liquidations'
const usdmChannelOf = (text: string): UsdmChannel =>
  text.includes('"e":"depthUpdate"') || text.startsWith('{"rest"') ? 'book' : text.includes('"e":"aggTrade"') ? 'trades' : text.includes('"e":"markPriceUpdate"') ? 'funding' : 'liquidations'
/**
 * The adapter's reading of a text. It records `<symbol>@depth@100ms` and checks a combined stream's name
 * against it, so a `<symbol>@depth` frame is read unwrapped, as its raw stream sends it.
 */
const classifyUsdm = (text: string): FrameClass => {
  const unwrapped = /^\{"stream":"[a-z0-9]+@depth","data":/.test(text) ? text.slice(text.indexOf(',"data":') + 8, -1) : text
  return usdm.classify(usdmChannelOf(text), Buffer.from(unwrapped), false)
}
/** The payload of a text, unwrapped from a combined stream's `{"stream","data"}`. */
const dataOf = (text: string): Record<string, unknown> => {
  const v = payloadOf(text)
  return 'data' in v ? v.data as Record<string, unknown> : v
}
const streamOfText = (text: string): string => text.startsWith('{"stream":"') ? text.slice(11, text.indexOf('"', 11)) : ''
const usdmSequences = () => new Sequences(binanceUsdm, classifyUsdm, streamOfText)
/** The texts of one stream, by its combined wrapper. */
const onStream = (texts: string[], stream: string) => texts.filter((x) => x.startsWith(`{"stream":"${stream}"`))

async function startUsdm(t: Test, options: VenueSimulatorOptions = {}) {
  const clock = manualClock(START)
  const sim = await startVenueSimulator({ venue: 'binance-usdm', clock: clock.now, rate: 50, ...options })
  t.teardown(() => sim.close())
  return { sim, clock }
}

t.test('USD-M futures: depth on /public, aggregates, mark prices and liquidations on /market; a stream asked of the other endpoint carries nothing', async (t) => {
  const { sim, clock } = await startUsdm(t, { rate: 5 })
  const market = await connect(sim, '/market/stream?replica=m')
  const pub = await connect(sim, '/public/stream?replica=p')
  const raw = await connect(sim, '/public/ws/btcusdt@depth@100ms?timeUnit=microsecond')
  const unrouted = await connect(sim, '/ws/btcusdt@depth@100ms/btcusdt@aggTrade')
  await subscribe(market, [...MARKET, 'btcusdt@depth@100ms'])
  await subscribe(pub, [...PUBLIC, 'btcusdt@aggTrade'])
  advance(sim, clock, 5 * 60_000, 200)
  await settle(sim, [market, pub, raw, unrouted])
  const streams = (c: Client) => [...new Set(c.texts.slice(1).map(streamOfText))].sort()
  t.same(streams(market), [...MARKET].sort(), '/market: aggregates, mark prices and liquidations of both symbols, no depth')
  t.same(streams(pub), [...PUBLIC].sort(), '/public: depth, no aggregates')
  const kinds = (c: Client) => c.texts.slice(1).map((x) => classifyUsdm(x).kind)
  t.same(kinds(market).filter((k, i) => (k === 'data') !== /@(markPrice|forceOrder)"/.test(market.texts[i + 1]!)), [], 'the adapter reads aggregates as rows, mark prices and liquidations as data kept raw')
  t.same(kinds(pub).filter((k) => k !== 'rows'), [], 'and depth updates as rows')
  t.ok(onStream(market.texts, 'btcusdt@markPrice').length >= 99, 'a mark price every 3 s')
  t.ok(onStream(market.texts, 'btcusdt@forceOrder').length + onStream(market.texts, 'ethusdt@forceOrder').length >= 5, 'liquidations now and then')
  t.ok(raw.texts.length > 2000 && raw.texts.every((x) => x.startsWith('{"e":"depthUpdate","E":1791036') && x.includes('"s":"BTCUSDT"')), '/public/ws/<stream>: raw, in milliseconds (futures has no timeUnit)')
  t.same(unrouted.texts, raw.texts, 'a path without /public or /market is the public endpoint\'s: depth flows, aggregates do not')
  market.ws.send(JSON.stringify({ method: 'LIST_SUBSCRIPTIONS', id: 9 }))
  await until(() => market.texts.some((x) => x.endsWith('"id":9}')), 'the list')
  t.ok(market.texts.find((x) => x.endsWith('"id":9}'))!.includes('"btcusdt@depth@100ms"'), 'the silent subscription is listed, as Binance accepts it')
  t.match(sim.truth[0], { kind: 'start', venue: 'binance-usdm' })
  for (const [path, status] of [['/private/ws', 404], ['/fapi/ws', 404], ['/market', 404], ['/market/ws/BTCUSDT@aggTrade', 400], ['/public/stream?streams=btcusdt@depth!', 400]] as const) {
    const ws = new WebSocket(sim.wsUrl + path)
    const [err] = await once(ws, 'error') as [Error]
    t.match(err.message, new RegExp(`Unexpected server response: ${status}`), `${path} refused`)
  }
})

t.test('USD-M ids: aggregate ids +1 with holes in f..l that are no gap; depth ids the engine\'s, pu the symbol\'s previous u', async (t) => {
  const { sim, clock } = await startUsdm(t)
  const market = await connect(sim, '/market/stream?replica=m')
  const pub = await connect(sim, '/public/stream?replica=p')
  await subscribe(market, ['btcusdt@aggTrade', 'ethusdt@aggTrade'])
  await subscribe(pub, PUBLIC)
  advance(sim, clock, 30_000)
  await settle(sim, [market, pub])
  const seq = usdmSequences()
  seq.feedTexts(market.texts.slice(1))
  seq.feedTexts(pub.texts.slice(1))
  t.same(seq.breaks(), [], 'the adapter sees no gap: neither in the aggregates, whose f..l have holes, nor in the depth chains')
  t.equal(seq.verdicts.length, 2 + 4, 'six chains started: two symbols\' aggregates, @depth@100ms and @depth')
  for (const symbol of ['BTCUSDT', 'ETHUSDT']) {
    const aggs = onStream(market.texts, `${symbol.toLowerCase()}@aggTrade`).map((x) => dataOf(x) as { a: number; f: number; l: number; T: number; E: number })
    t.ok(aggs.length >= 1490, `${symbol}: some 1,500 aggregates (50 a second)`)
    t.same(aggs.filter((x, i) => i > 0 && x.a !== aggs[i - 1]!.a + 1), [], `${symbol}: a +1 per aggregate`)
    t.same(aggs.filter((x) => x.l - x.f < 0 || x.l - x.f > 2 || x.T > x.E), [], `${symbol}: each covers 1 to 3 trades, T no later than E`)
    const holes = aggs.filter((x, i) => i > 0 && x.f !== aggs[i - 1]!.l + 1)
    t.ok(holes.length >= 20 && holes.every((x) => x.f > aggs[aggs.indexOf(x) - 1]!.l + 1), `${symbol}: now and then trade ids left out between aggregates (${holes.length})`)

    const depth = onStream(pub.texts, `${symbol.toLowerCase()}@depth@100ms`).map((x) => dataOf(x) as { U: number; u: number; pu: number; E: number; T: number })
    t.ok(depth.length >= 299, `${symbol}: an update every 100 ms`)
    t.same(depth.filter((x, i) => i > 0 && x.pu !== depth[i - 1]!.u), [], `${symbol}: pu is the previous update's u`)
    t.same(depth.filter((x) => !(x.U > x.pu + 1 && x.u >= x.U)), [], `${symbol}: U is never pu + 1: the engine's ids went to other symbols between`)
    t.same(depth.filter((x) => !(x.T <= x.E && x.E - x.T < 5)), [], `${symbol}: T a little before E`)
    const agg = onStream(pub.texts, `${symbol.toLowerCase()}@depth`).map((x) => dataOf(x) as { U: number; u: number; pu: number; E: number })
    t.ok(agg.length >= 99, `${symbol}: @depth every 300 ms (250 ms in whole 100 ms updates)`)
    t.same(agg.map((x, i) => [x.U, x.u, x.pu]).slice(1), agg.slice(1).map((x) => {
      const parts = depth.filter((d) => d.u > agg[agg.indexOf(x) - 1]!.u && d.u <= x.u)
      return [parts[0]!.U, parts.at(-1)!.u, agg[agg.indexOf(x) - 1]!.u]
    }), `${symbol}: @depth gathers the updates since the last: U the first's, u the last's, pu the previous frame's u`)
  }
  // In the order the venue made them, the depth updates of both symbols take disjoint, rising ranges of one engine's ids.
  const made = sim.truth.filter((r) => r.kind === 'frame' && r.stream.endsWith('@depth@100ms')).map((r) => dataOf((r as { text: string }).text) as { U: number; u: number })
  t.same(made.filter((x, i) => i > 0 && x.U <= made[i - 1]!.u), [], 'update ids are shared by the symbols: each update\'s U is above the last u of any symbol')
})

t.test('USD-M mark prices every 3 simulated seconds, liquidations at most one a second and a few a minute, from the seed', async (t) => {
  const run = async (seed: number) => {
    const { sim, clock } = await startUsdm(t, { seed, rate: 1 })
    const c = await connect(sim, '/market/stream?replica=m')
    await subscribe(c, MARKET.filter((s) => !s.endsWith('@aggTrade')))
    advance(sim, clock, 10 * 60_000, 500)
    await settle(sim, [c])
    await sim.close()
    return c.texts.slice(1)
  }
  const texts = await run(7)
  for (const symbol of ['btcusdt', 'ethusdt']) {
    const marks = onStream(texts, `${symbol}@markPrice`).map((x) => dataOf(x) as { E: number; T: number; p: string; r: string })
    t.ok(marks.length >= 199 && marks.length <= 200, `${symbol}: 200 mark prices in 10 minutes (${marks.length})`)
    t.same(marks.slice(1).map((x, i) => x.E - marks[i]!.E).filter((d) => d !== 3000), [], `${symbol}: exactly 3 s apart`)
    t.same(marks.filter((x) => x.T % (8 * 3_600_000) !== 0 || x.T <= x.E || x.T - x.E > 8 * 3_600_000), [], `${symbol}: T the next funding time (00, 08, 16 UTC)`)
    t.ok(marks.every((x) => /^\d+\.\d{8}$/.test(x.p) && /^-?0\.\d{8}$/.test(x.r)), `${symbol}: prices and rates with 8 decimals`)
    const liq = onStream(texts, `${symbol}@forceOrder`).map((x) => dataOf(x) as { E: number; o: { T: number; S: string; p: string; ap: string; q: string; z: string } })
    t.ok(liq.length >= 5 && liq.length <= 80, `${symbol}: a few liquidations a minute (${liq.length} in 10)`)
    t.same(liq.slice(1).map((x, i) => x.E - liq[i]!.E).filter((d) => d < 1000 || d % 1000 !== 0), [], `${symbol}: at most one a second, on the stream's 1 s beat`)
    t.same(liq.filter((x) => !(x.o.T <= x.E && x.E - x.o.T < 1000)), [], `${symbol}: o.T in the second before E`)
    t.same(liq.filter((x) => (x.o.S === 'SELL' ? Number(x.o.ap) < Number(x.o.p) : Number(x.o.ap) > Number(x.o.p)) || x.o.q !== x.o.z), [], `${symbol}: filled at its limit or better`)
  }
  t.same(await run(7), texts, 'the same seed, the same frames')
  t.not((await run(8)).join('\n'), texts.join('\n'), 'another seed, others')
})

t.test('USD-M REST snapshot: /fapi/v1/depth joins the depth stream by pu, and the updates after it rebuild the venue\'s book', async (t) => {
  const { sim, clock } = await startUsdm(t)
  const adapter = createBinanceUsdmAdapter({ wsBase: sim.wsUrl, restBase: sim.restUrl })
  const plan = adapter.connect('book', ['BTCUSDT'])
  t.equal(plan.url, `${sim.wsUrl}/public/stream`)
  const client = await connect(sim, plan.url.slice(sim.wsUrl.length))
  client.ws.send(plan.send[0]!)
  await until(() => client.texts.length === 1, 'the acknowledgement')
  advance(sim, clock, 1000)
  const fetchSnapshot = async () => {
    const res = await fetch(adapter.snapshotRequest('book', 'BTCUSDT')!.url)
    t.equal(res.status, 200)
    t.equal(res.headers.get('content-type'), 'application/json;charset=UTF-8')
    return res.text()
  }
  const body = await fetchSnapshot()
  await settle(sim, [client])
  const seq = usdmSequences()
  seq.feedTexts(client.texts)
  const snap = adapter.classify('book', Buffer.from(adapter.wrapSnapshot('book', 'BTCUSDT', body)), false)
  if (snap.kind !== 'rows') throw new Error('the snapshot does not classify as rows')
  t.equal(seq.feed(snap.sequences[0]!, 'btcusdt@depth@100ms').verdict, 'snapshot', 'the snapshot joins (not snapshot-behind)')
  const s = payloadOf(body) as { lastUpdateId: number; E: number; T: number; bids: [string, string][] }
  const lastSent = dataOf(client.texts.at(-1)!) as { u: number; T: number }
  t.equal(s.lastUpdateId, lastSent.u, 'lastUpdateId is the last u sent')
  t.same([s.E, s.T], [START + 1000, lastSent.T], 'E the time of the answer, T the last update\'s')
  t.match(body, /^\{"lastUpdateId":\d+,"E":\d+,"T":\d+,"bids":\[\["\d+\.\d{2}","\d+\.\d{5}"\]/, 'prices and quantities with the tick\'s and lot\'s decimals')

  type Side = Map<string, string>
  const parse = (text: string) => {
    const v = payloadOf(text) as { bids: [string, string][]; asks: [string, string][] }
    return { bids: new Map(v.bids) as Side, asks: new Map(v.asks) as Side }
  }
  const book = parse(body)
  const before = client.texts.length
  advance(sim, clock, 2000)
  await settle(sim, [client])
  const after = client.texts.slice(before)
  t.equal((dataOf(after[0]!) as { pu: number }).pu, s.lastUpdateId, 'the first update after it has pu == lastUpdateId')
  for (const x of after) {
    t.equal(seq.feed((classifyUsdm(x) as Extract<FrameClass, { kind: 'rows' }>).sequences[0]!, 'btcusdt@depth@100ms').verdict, 'next')
    const d = dataOf(x) as { b: [string, string][]; a: [string, string][] }
    for (const [levels, side] of [[d.b, book.bids], [d.a, book.asks]] as const) {
      for (const [p, q] of levels) if (Number(q) === 0) side.delete(p); else side.set(p, q)
    }
  }
  const later = parse(await fetchSnapshot())
  const sorted = (m: Side, desc: boolean) => [...m].sort((x, y) => (desc ? Number(y[0]) - Number(x[0]) : Number(x[0]) - Number(y[0])))
  t.same(sorted(book.bids, true), sorted(later.bids, true), 'bids')
  t.same(sorted(book.asks, false), sorted(later.asks, false), 'asks')
  const limited = payloadOf(await (await fetch(`${sim.restUrl}/fapi/v1/depth?symbol=ETHUSDT&limit=5`)).text()) as { bids: unknown[]; asks: unknown[] }
  t.same([limited.bids.length, limited.asks.length], [5, 5], 'limit')
  const refusals: [string, number, string][] = [
    ['/fapi/v1/depth?symbol=NOPE', 400, '{"code":-1121,"msg":"Invalid symbol."}'],
    ['/fapi/v1/depth', 400, '{"code":-1102,"msg":"Mandatory parameter \'symbol\' was not sent, was empty/null, or malformed."}'],
    ['/api/v3/depth?symbol=BTCUSDT', 404, '{"code":-1000,"msg":"The simulator serves GET /fapi/v1/depth only."}'],
  ]
  for (const [path, status, text] of refusals) {
    const res = await fetch(sim.restUrl + path)
    t.same([res.status, await res.text()], [status, text], path)
  }
})

t.test('USD-M faults: each kind on the futures streams', async (t) => {
  const { sim, clock } = await startUsdm(t, { rate: 10, faults: { faults: [
    { kind: 'gap', at: 500, stream: 'btcusdt@aggTrade', count: 3 },
    { kind: 'gap', at: 700, stream: 'ethusdt@depth@100ms', count: 2 },
    { kind: 'gap', at: 900, stream: 'btcusdt@depth', count: 1 },
    { kind: 'conflict', at: 1100, replica: 'b', stream: 'ethusdt@aggTrade' },
    { kind: 'conflict', at: 1200, replica: 'a', stream: 'btcusdt@aggTrade', replace: true },
    { kind: 'only-one', at: 1300, replica: 'a', stream: 'btcusdt@markPrice' },
    { kind: 'unrepresentable', at: 1400, stream: 'ethusdt@markPrice', variant: 'price-number' },
    { kind: 'unrepresentable', at: 1500, replica: 'b', stream: 'btcusdt@aggTrade', variant: 'missing-field' },
    { kind: 'unrepresentable', at: 1600, replica: 'pa', stream: 'btcusdt@depth@100ms', variant: 'truncated' },
    { kind: 'unrepresentable', at: 100, stream: 'ethusdt@forceOrder', variant: 'missing-field' },
    { kind: 'only-one', at: 1800, replica: 'pb', stream: 'ethusdt@depth@100ms' },
    { kind: 'stall', at: 2000, replica: 'b', durationMs: 1000, then: 'resume' },
    { kind: 'stall', at: 2000, replica: 'pb', durationMs: 1000, then: 'drop' },
    { kind: 'disconnect', at: 5000, replica: 'pa', code: 4000, reason: 'test' },
    { kind: 'stall', at: 5000, replica: 'a', durationMs: 500, then: 'close', code: 4001, reason: 'stalled' },
    { kind: 'server-shutdown', at: 6000, replica: 'b', closeAfterMs: 1000 },
    { kind: 'scheduled-disconnect', at: 60_000 },
    { kind: 'gap', at: 100, stream: 'btcusdt@trade' },
  ] } })
  const a = await connect(sim, '/market/stream?replica=a')
  const b = await connect(sim, '/market/stream?replica=b')
  const c = await connect(sim, '/market/ws/btcusdt@forceOrder/ethusdt@forceOrder?replica=c')
  const pa = await connect(sim, '/public/stream?replica=pa')
  const pb = await connect(sim, '/public/stream?replica=pb')
  for (const m of [a, b]) await subscribe(m, MARKET)
  for (const p of [pa, pb]) await subscribe(p, PUBLIC)
  advance(sim, clock, 61_000, 100)
  await settle(sim, [a, b, c, pa, pb])
  const f = faultRecords(sim)
  const byIndex = (i: number) => f.find((r) => r.index === i)!
  t.same(f.filter((r) => !r.applied).map((r) => r.index), [17], 'every fault applied but the one naming a spot stream')
  t.match(byIndex(17).detail.why, /serves no stream btcusdt@trade/)

  // Gaps: the ids dropped never come, and the adapter sees each gap around them.
  const dropped = (i: number) => byIndex(i).detail.dropped as { first: number; last: number }[]
  const gapAround = (seq: Sequences, instrument: string, d: { first: number; last: number }[]) =>
    seq.verdicts.filter((v) => v.verdict === 'gap' && v.span.instrument === instrument && BigInt(v.afterId) < d[0]!.first && BigInt(v.beforeId) > d.at(-1)!.last).length
  const seqs = new Map([a, b, pa, pb].map((x) => {
    const s = usdmSequences()
    s.feedTexts(x.texts.filter((y) => y.startsWith('{"stream"')))
    return [x, s]
  }))
  const trades = dropped(0)
  t.same(seqs.get(a)!.breaks(), [`gap trades:BTCUSDT after ${trades[0]!.first - 1} before ${trades[2]!.last + 1}`], 'a: the aggregates dropped, and no other break (conflict, only-one)')
  t.same(seqs.get(b)!.breaks().filter((x) => x.startsWith('gap')), seqs.get(a)!.breaks(), 'b: the same gap, and none for a conflict, an aggregate without q or a stall that resumed')
  for (const p of [pa, pb]) {
    t.equal(gapAround(seqs.get(p)!, 'ETHUSDT', dropped(1)), 1, `${p.id}: the depth updates dropped are a gap by pu`)
    t.equal(gapAround(seqs.get(p)!, 'BTCUSDT', dropped(2)), 1, `${p.id}: so is the @depth frame dropped`)
  }
  for (const [i, stream] of [[0, 'btcusdt@aggTrade'], [1, 'ethusdt@depth@100ms']] as const) {
    const ids = new Set(sim.truth.filter((r) => r.kind === 'frame' && r.stream === stream).map((r) => { const d = dataOf((r as { text: string }).text); return (d.a ?? d.U) as number }))
    t.ok(dropped(i).every((x) => !ids.has(x.first)), `no dropped id of ${stream} was sent`)
  }
  const gaps = (x: Client) => seqs.get(x)!.verdicts.filter((v) => v.verdict === 'gap').length
  t.equal(gaps(pa), 4, 'pa: the two gaps, the update only pb got, and the one truncated')
  t.equal(gaps(pb), 6, 'pb: the two gaps, and one on each of its four streams after the stall that dropped frames')

  const conflict = byIndex(3)
  const dup = b.texts.filter((x) => x.includes(`"a":${conflict.detail.first},`))
  t.same(dup, [conflict.detail.original, conflict.detail.text], 'conflict: b has the aggregate twice')
  const [c0, c1] = dup.map(classifyUsdm) as Extract<FrameClass, { kind: 'rows' }>[]
  t.ok(c0!.rows[0]!.trade_id === c1!.rows[0]!.trade_id && c0!.rows[0]!.price !== c1!.rows[0]!.price, 'the same aggregate id, another price')
  const replaced = byIndex(4)
  t.ok(a.texts.includes(replaced.detail.text as string) && !a.texts.includes(replaced.detail.original as string), 'replace: a has only the altered aggregate')
  t.ok(b.texts.includes(replaced.detail.original as string), 'b the true one')

  t.same(byIndex(5).detail.withheldFrom, [b.id], 'only-one: a mark price to a alone')
  t.ok(a.texts.includes(byIndex(5).detail.text as string) && !b.texts.includes(byIndex(5).detail.text as string))
  t.equal(byIndex(5).detail.first, undefined, 'mark prices carry no ids')
  t.ok(pb.texts.includes(byIndex(10).detail.text as string) && !pa.texts.includes(byIndex(10).detail.text as string), 'only-one: a depth update to pb alone')

  const bad = [6, 7, 8, 9].map((i) => byIndex(i).detail.text as string)
  t.match(bad[0], /"p":\d+\.\d{8},/, 'price-number: the mark price as a JSON number')
  t.notMatch(bad[1], /"q":/, 'missing-field: an aggregate without q')
  t.notMatch(bad[3], /"q":/, 'missing-field: a liquidation without o.q')
  t.same(bad.map((x) => classifyUsdm(x).kind), ['unrepresentable', 'unrepresentable', 'unrepresentable', 'unrepresentable'], 'the adapter finds each unrepresentable')
  t.match(classifyUsdm(bad[1]!), { code: 'structure', sequences: [{ sequence: 'trades' }] }, 'an aggregate without q still holds its place in the sequence')
  t.match(classifyUsdm(bad[2]!), { code: 'not-json' })
  // An untargeted fault's text in the truth is the raw one; the combined connections get it wrapped.
  const wrapped = (text: string, stream: string) => `{"stream":"${stream}","data":${text}}`
  t.ok(a.texts.includes(wrapped(bad[0]!, 'ethusdt@markPrice')) && b.texts.includes(wrapped(bad[0]!, 'ethusdt@markPrice')), 'to every subscriber')
  t.ok(b.texts.includes(bad[1]!) && !a.texts.some((x) => x.includes(`"a":${byIndex(7).detail.first},`) && !x.includes('"q":')), 'or to the target only')
  t.ok(pa.texts.includes(bad[2]!) && !pb.texts.includes(bad[2]!))
  t.ok(c.texts.includes(bad[3]!), 'a liquidation without q, to the raw connection as to the others')

  t.same(await pa.closed, { code: 4000, reason: 'test' }, 'disconnect')
  t.same(await a.closed, { code: 4001, reason: 'stalled' }, 'stall, then close')
  t.match(b.texts.find((x) => x.includes('serverShutdown')), /^\{"event":\{"e":"serverShutdown","E":\d+\}\}$/, 'server-shutdown: the notice')
  t.match(classifyUsdm(b.texts.find((x) => x.includes('serverShutdown'))!), { kind: 'control', closing: true })
  t.same(await b.closed, { code: 1001, reason: '' }, 'then the close')
  t.same(await pb.closed, { code: 1001, reason: '' }, 'scheduled-disconnect')
  t.same(await c.closed, { code: 1001, reason: '' })
  t.same(byIndex(16).detail.conns, [c.id, pb.id])
  const late = sim.truth.filter((r) => r.kind === 'frame' && r.sentUs !== undefined)
  t.ok(late.length > 0 && late.every((r) => r.kind === 'frame' && r.to[0] === b.id), 'the stall that resumed sent b its frames late')
  for (const x of [a, b, c, pa, pb]) t.equal(x.texts.length, sentTo(sim, x.id), `${x.id}: every text the truth lists as sent arrived`)

  await t.rejects(startVenueSimulator({ venue: 'binance-usdm', faults: { faults: [{ kind: 'gap', at: 1, stream: 'btcusdt@markPrice' }] } }), /faults\[0\]\.stream: a gap skips ids/)
  await t.rejects(startVenueSimulator({ venue: 'binance-usdm', faults: { faults: [{ kind: 'conflict', at: 1, replica: 'a', stream: 'btcusdt@forceOrder' }] } }), /a conflict is a trade/)
  await t.rejects(startVenueSimulator({ venue: 'binance-usdm', instruments: ['BTC-USDT'] }), /not a Binance USD-M symbol/)
  await t.rejects(startVenueSimulator({ venue: 'nasdaq' as 'binance' }), /no simulator for venue "nasdaq"; the venues known: binance, binance-usdm, kraken/)
})

// ---------------------------------------------------------------------------------------------------
// The pipeline, in process (test/sim-venue-cli.test.ts runs the CLI)

t.test('the simulate-venue pipeline prints its URLs first, serves, and closes when the run is stopped', async (t) => {
  const registry = new Registry()
  registry.addStage(reportSink as unknown as StageDef)
  registerSimulateVenue(registry)
  const io = captureIO()
  const stop = new AbortController()
  const plan = join(dir, 'plan.json')
  writeFileSync(plan, JSON.stringify({ faults: [{ kind: 'gap', at: 1, stream: 'btcusdt@trade' }] }))
  const truth = join(dir, 'pipeline-truth.jsonl')
  const running = runPipeline(registry, simulateVenuePipeline, { port: 0, rate: 200, faults: plan, truth }, { ...io.settings, signal: stop.signal }, false)
  await until(() => io.out().split('\n').length >= 3, 'the URLs')
  const [ws, rest] = io.out().split('\n')
  t.match(ws, /^ws ws:\/\/127\.0\.0\.1:\d+$/)
  t.match(rest, /^rest http:\/\/127\.0\.0\.1:\d+$/)
  const base = ws!.slice(3)
  const client = new WebSocket(`${base}/ws/btcusdt@trade?replica=a`)
  const texts: string[] = []
  client.on('message', (d) => texts.push(d.toString()))
  await until(() => texts.length >= 3, 'trades')
  t.equal(classify(texts[0]!).kind, 'rows')
  t.equal((await fetch(`${rest!.slice(5)}/api/v3/depth?symbol=ETHUSDT`)).status, 200)
  const closed = new Promise<number>((resolve) => client.on('close', (code) => resolve(code)))
  stop.abort()
  const result = await running
  t.equal(result.exitCode, 130, 'a run stopped from outside (not asked to stop by a signal) is interrupted')
  t.equal(await closed, 1001, 'the clients are told the venue is going away')
  await until(() => existsSync(truth) && readFileSync(truth, 'utf8').includes('"kind":"close"'), 'the truth file')
  t.match(readFileSync(truth, 'utf8'), /"kind":"fault","simTimeUs":\d+,"index":0,"fault":\{"kind":"gap"/)

  const unknown = captureIO()
  const r = await runPipeline(registry, simulateVenuePipeline, { venue: 'nasdaq' }, unknown.settings, false)
  t.equal(r.exitCode, 2)
  t.match(unknown.err(), /no simulator for "nasdaq"; the venues known: binance, binance-usdm, kraken/)
  writeFileSync(plan, JSON.stringify({ faults: [{ kind: 'stall', at: 1, replica: 'a' }] }))
  const badPlan = captureIO()
  t.equal((await runPipeline(registry, simulateVenuePipeline, { faults: plan }, badPlan.settings, false)).exitCode, 2)
  t.match(badPlan.err(), /--faults: faults\[0\]\.durationMs/)
})

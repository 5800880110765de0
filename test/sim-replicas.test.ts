import t from 'tap'
import { createHash } from 'node:crypto'
import { eventTime, type FrameEvent, type JournalEvent } from '../src/formats/record/types.js'
import { simulateReplicas, type ReplicaSimOptions } from '../src/sim/replicas.js'
import type { SequenceState } from '../src/venues/adapter.js'
import { binanceSequence, binanceSpot } from '../src/venues/binance.js'
import { toDecimal38_18 } from '../src/formats/record/decimal.js'

const START = BigInt(Date.UTC(2026, 9, 3, 14)) * 1_000_000n
const at = (s: number): bigint => START + BigInt(Math.round(s * 1e9))
const MS = 1_000_000n

/** Every field of every event, bytes included, in order. */
function digest(events: Iterable<JournalEvent>): string {
  const h = createHash('sha256')
  for (const e of events) {
    h.update(JSON.stringify(e, (k, v) => typeof v === 'bigint' ? v.toString() + 'n' : k === 'payload' ? Buffer.from(v as Uint8Array).toString('base64') : v))
    h.update('\n')
  }
  return h.digest('hex')
}

const text = (e: FrameEvent): string => Buffer.from(e.payload).toString('utf8')

t.test('same seed, same event stream; another seed, another', async (t) => {
  const o: ReplicaSimOptions = { channel: 'trades', start: START, end: at(20), framesPerSecond: 200, seed: 11,
    incidents: [{ kind: 'reconnect', replica: 'a', at: at(5) }, { kind: 'sequence-gap', instrument: 'BTCUSDT', at: at(8) }] }
  const d1 = digest(simulateReplicas(o))
  t.equal(digest(simulateReplicas(o)), d1)
  t.not(digest(simulateReplicas({ ...o, seed: 12 })), d1)
  const b = { ...o, channel: 'book' as const }
  t.equal(digest(simulateReplicas(b)), digest(simulateReplicas(b)), 'book channel too')
})

t.test('trades: order, shared bytes, receive-time spread, clocks, classification', async (t) => {
  const events = [...simulateReplicas({ channel: 'trades', start: START, end: at(60), framesPerSecond: 500, seed: 5, oneReplicaShare: 0.01, instruments: ['BTCUSDT', 'ETHUSDT', 'SOLUSDT'] })]
  let prev = -1n
  const lastPer = { a: -1n, b: -1n }
  for (const e of events) {
    const ti = eventTime(e)
    if (ti < prev) t.fail('merged stream goes back in time')
    if (ti < lastPer[e.replica]) t.fail('a replica goes back in time')
    if (ti < START || ti >= at(60)) t.fail('event outside the range')
    prev = ti
    lastPer[e.replica] = ti
  }
  t.same(events.slice(0, 2).map((e) => [e.kind, e.replica, 'connection' in e ? e.connection : undefined]), [['connecting', 'a', 'a-1'], ['connecting', 'b', 'b-1']])
  t.equal(eventTime(events[0]!), START, 'a connects at the start')
  for (const r of ['a', 'b'] as const) {
    const mine = events.filter((e) => e.replica === r)
    t.same(mine.slice(0, 4).map((e) => e.kind), ['connecting', 'open', 'frame', 'subscribed'])
    t.equal(text(mine[2] as FrameEvent), '{"result":null,"id":1}', 'the SUBSCRIBE acknowledgement is a frame')
    t.same((mine[3] as { instruments: string[] }).instruments, ['BTCUSDT', 'ETHUSDT', 'SOLUSDT'])
  }
  const frames = events.filter((e): e is FrameEvent => e.kind === 'frame')
  const byPayload = new Map<string, FrameEvent[]>()
  let bounded = 0
  for (const f of frames) {
    const k = text(f)
    byPayload.set(k, [...(byPayload.get(k) ?? []), f])
    if ((f.clockOffset === undefined) !== (f.clockErrorBound === undefined)) t.fail('clock fields come in pairs')
    if (f.clockOffset !== undefined) {
      bounded++
      const abs = f.clockOffset < 0n ? -f.clockOffset : f.clockOffset
      if (f.clockErrorBound! < abs) t.fail('bound below the offset')
    }
    if (f.binary) t.fail('binary frame')
    const c = binanceSpot.classify('trades', f.payload, false)
    if (c.kind === 'unrepresentable') t.fail(`unrepresentable: ${c.reason}`)
    if (c.kind === 'rows') {
      const row = c.rows[0]!
      if (toDecimal38_18(row.price) === null || !/^\d+\.\d{8}$/.test(row.price) || !/^\d+\.\d{8}$/.test(row.size)) t.fail('price/size text')
      if (c.exchangeTime! >= f.receiveTime) t.fail('exchange time after receive time')
    }
  }
  t.equal(bounded, frames.length, 'every receipt carries a clock estimate when no stretch is scripted')
  const trades = [...byPayload.entries()].filter(([k]) => k.startsWith('{"e":"trade"'))
  t.ok(trades.length > 25_000, `about 30,000 trades (${trades.length})`)
  const both = trades.filter(([, fs]) => fs.length === 2)
  const one = trades.filter(([, fs]) => fs.length === 1)
  t.equal(both.length + one.length, trades.length, 'no frame is received more than once per replica')
  const share = one.length / trades.length
  t.ok(share > 0.005 && share < 0.02, `one-replica share near 1% (${share})`)
  let bLater = 0
  for (const [, [x, y]] of both) {
    const a = x!.replica === 'a' ? x! : y!
    const b = x!.replica === 'a' ? y! : x!
    if (a.replica === b.replica) t.fail('two receipts of one replica')
    if (a.payload !== b.payload) t.fail('both receipts share the bytes')
    const d = b.receiveTime - a.receiveTime
    if (d < -2n * MS || d > 3n * MS) t.fail(`b - a = ${d} ns`)
    if (d > 0n) bLater++
  }
  const later = bLater / both.length
  t.ok(later > 0.75 && later < 0.95, `b is usually later (${later})`)
  // Trade ids of one instrument follow on; breaks only where one replica missed a frame.
  const breaks = events.filter((e) => e.kind === 'sequence-break')
  t.ok(breaks.length > 0 && breaks.length <= one.length, 'breaks come from frames one replica missed')
})

/** Re-run Binance's rules over the stream, per replica, connection and instrument, as an independent check. */
function recomputeBreaks(events: JournalEvent[], channel: 'trades' | 'book'): string[] {
  const states = new Map<string, SequenceState>()
  const out: string[] = []
  for (const e of events) {
    if (e.kind !== 'frame') continue
    const c = binanceSpot.classify(channel, e.payload, e.binary)
    if (c.kind !== 'rows') continue
    for (const s of c.sequences) {
      const key = `${e.connection}|${s.instrument}`
      const v = binanceSequence(states.get(key), s)
      states.set(key, v.state)
      if (v.verdict === 'gap') out.push(`${e.replica} ${e.connection} ${e.receiveTime} ${s.instrument} ${v.afterId} ${v.beforeId}`)
    }
  }
  return out
}
const breakLines = (events: JournalEvent[]): string[] => events.flatMap((e) => e.kind === 'sequence-break'
  ? [`${e.replica} ${e.connection} ${e.time} ${e.instrument} ${e.afterId} ${e.beforeId}`] : [])

t.test('scripted incidents appear where scripted', async (t) => {
  const incidents: ReplicaSimOptions['incidents'] = [
    { kind: 'reconnect', replica: 'b', at: at(10), closeCode: 1006, pauseNs: 2_000_000_000n },
    { kind: 'reconnect', replica: 'a', at: at(20), closeCode: 1001 },
    { kind: 'sequence-gap', instrument: 'ETHUSDT', at: at(25), skip: 7 },
    { kind: 'checksum-mismatch', replica: 'a', instrument: 'BTCUSDT', at: at(30), expected: '123', computed: '456' },
    { kind: 'outage', start: at(40), end: at(45) },
    { kind: 'unsynchronised', replica: 'b', start: at(50), end: at(52) },
  ]
  const events = [...simulateReplicas({ channel: 'trades', start: START, end: at(60), framesPerSecond: 200, seed: 9, oneReplicaShare: 0, incidents })]
  const of = (r: 'a' | 'b') => events.filter((e) => e.replica === r)
  // Reconnect of b with 1006: error, closed without a close code, a 2 s pause, a new connection.
  const b = of('b')
  const bClose = b.findIndex((e) => e.kind === 'closed')
  t.match(b[bClose - 1], { kind: 'error', connection: 'b-1', time: at(10) })
  t.match(b[bClose], { kind: 'closed', connection: 'b-1' })
  t.equal((b[bClose] as { closeCode?: number }).closeCode, undefined, '1006: no close frame, no close code')
  t.same(b.slice(bClose + 1, bClose + 5).map((e) => [e.kind, 'connection' in e ? e.connection : undefined]), [['connecting', 'b-2'], ['open', 'b-2'], ['frame', 'b-2'], ['subscribed', 'b-2']])
  t.equal(eventTime(b[bClose + 1]!), at(12))
  const bSubscribed = eventTime(b[bClose + 4]!)
  t.notOk(b.some((e) => e.kind === 'frame' && e.receiveTime >= at(10) && e.receiveTime < bSubscribed && !text(e).startsWith('{"result"')), 'b receives nothing while reconnecting')
  t.ok(events.some((e) => e.kind === 'frame' && e.replica === 'a' && e.receiveTime > at(10) && e.receiveTime < at(12)), 'a goes on receiving')
  // Reconnect of a with 1001: the venue's close frame carries the code.
  t.match(of('a').find((e) => e.kind === 'closed'), { kind: 'closed', connection: 'a-1', time: at(20), closeCode: 1001 })
  t.match(of('a').find((e) => e.kind === 'connecting' && e.connection === 'a-2'), { time: at(21) })
  // The venue gap: both replicas journal a break of 7 skipped ids.
  const gaps = events.filter((e) => e.kind === 'sequence-break')
  t.equal(gaps.length, 2)
  t.same(gaps.map((e) => e.replica).sort(), ['a', 'b'])
  for (const g of gaps) {
    if (g.kind !== 'sequence-break') continue
    t.equal(g.instrument, 'ETHUSDT')
    t.equal(BigInt(g.beforeId) - BigInt(g.afterId), 8n)
    t.ok(g.time >= at(25))
  }
  t.same(breakLines(events), recomputeBreaks(events, 'trades'), 'the journalled breaks are what the adapter rules find')
  // The checksum mismatch follows the first BTCUSDT frame a receives at or after 30 s.
  const ci = events.findIndex((e) => e.kind === 'checksum-mismatch')
  t.match(events[ci], { replica: 'a', instrument: 'BTCUSDT', expected: '123', computed: '456' })
  const cm = events[ci]!
  const checked = events.slice(0, ci).reverse().find((e) => e.kind === 'frame' && e.replica === 'a') as FrameEvent
  t.equal(eventTime(cm), checked.receiveTime, 'its time is the receive time of the frame checked')
  t.match(text(checked), /"s":"BTCUSDT"/)
  t.ok(checked.receiveTime >= at(30))
  // Outage: nothing at all, then both replicas connect anew.
  t.notOk(events.some((e) => eventTime(e) >= at(40) && eventTime(e) < at(45)), 'no event while the recorder is down')
  t.notOk(events.some((e) => e.kind === 'closed' && eventTime(e) >= at(39)), 'a crash journals no close')
  const after = events.filter((e) => e.kind === 'connecting' && eventTime(e) >= at(45))
  t.same(after.map((e) => ('connection' in e ? e.connection : undefined)).sort(), ['a-3', 'b-3'])
  // Unsynchronised: b's receipts carry no clock in [50, 52) s, and do elsewhere.
  const bFrames = events.filter((e): e is FrameEvent => e.kind === 'frame' && e.replica === 'b')
  const inside = bFrames.filter((f) => f.receiveTime >= at(50) && f.receiveTime < at(52))
  t.ok(inside.length > 100)
  t.ok(inside.every((f) => f.clockOffset === undefined && f.clockErrorBound === undefined), 'withheld inside the stretch')
  t.ok(bFrames.filter((f) => f.receiveTime < at(50) || f.receiveTime >= at(52)).every((f) => f.clockOffset !== undefined), 'present outside it')
  t.ok(events.filter((e): e is FrameEvent => e.kind === 'frame' && e.replica === 'a').every((f) => f.clockOffset !== undefined), 'a is unaffected')
})

t.test('combined streams', async (t) => {
  const events = [...simulateReplicas({ channel: 'trades', start: START, end: at(5), framesPerSecond: 100, combined: true, seed: 2 })]
  const frames = events.filter((e): e is FrameEvent => e.kind === 'frame' && !text(e).startsWith('{"result"'))
  t.ok(frames.length > 300)
  t.ok(frames.every((f) => /^\{"stream":"(btcusdt|ethusdt)@trade","data":\{"e":"trade",/.test(text(f))))
  t.ok(frames.every((f) => binanceSpot.classify('trades', f.payload, false).kind === 'rows'))
})

t.test('book: snapshots per connection and instrument, updates chain, the book rebuilds uncrossed', async (t) => {
  const events = [...simulateReplicas({
    channel: 'book', start: START, end: at(30), seed: 4, oneReplicaShare: 0.01, instruments: ['BTCUSDT', 'ETHUSDT', 'XRPUSDT'],
    incidents: [
      { kind: 'reconnect', replica: 'a', at: at(10) },
      { kind: 'sequence-gap', instrument: 'XRPUSDT', at: at(15), skip: 3 },
      { kind: 'checksum-mismatch', replica: 'b', instrument: 'ETHUSDT', at: at(20) },
    ],
  })]
  const frames = events.filter((e): e is FrameEvent => e.kind === 'frame')
  const classes = frames.map((f) => ({ f, c: binanceSpot.classify('book', f.payload, false) }))
  t.notOk(classes.some(({ c }) => c.kind === 'unrepresentable'), 'every frame parses')
  // Updates every 100 ms per instrument, received by both replicas.
  const updates = classes.filter(({ c }) => c.kind === 'rows' && c.table === 'book_deltas')
  t.ok(updates.length > 2 * 3 * 280 * 0.95, `updates at 100 ms (${updates.length})`)
  // One snapshot per instrument per connection after subscribing, plus refetches after gaps.
  const snaps = classes.filter(({ c }) => c.kind === 'rows' && c.table === 'book_snapshots')
  const perConn = new Map<string, number>()
  for (const { f, c } of snaps) {
    if (c.kind !== 'rows') continue
    const k = `${f.connection} ${c.sequences[0]!.instrument}`
    perConn.set(k, (perConn.get(k) ?? 0) + 1)
    if (c.rows.length !== 40 || c.exchangeTime !== null) t.fail('a snapshot has 20 levels a side and no exchange time')
  }
  for (const conn of ['a-1', 'a-2', 'b-1']) {
    for (const s of ['BTCUSDT', 'ETHUSDT', 'XRPUSDT']) t.ok((perConn.get(`${conn} ${s}`) ?? 0) >= 1, `snapshot of ${s} on ${conn}`)
  }
  for (const r of ['a', 'b']) t.ok((perConn.get(`${r}-${r === 'a' ? 2 : 1} XRPUSDT`) ?? 0) >= 2, `${r} refetches XRPUSDT after the gap`)
  t.ok((perConn.get('b-1 ETHUSDT') ?? 0) >= 2, 'b refetches ETHUSDT after the checksum mismatch')
  t.same(breakLines(events), recomputeBreaks(events, 'book'), 'the journalled breaks are what the adapter rules find')
  const xrpGaps = events.filter((e) => e.kind === 'sequence-break' && e.instrument === 'XRPUSDT' && e.time >= at(15) && e.time < at(15.2))
  t.equal(xrpGaps.length, 2, 'both replicas see the venue gap')
  // Rebuild each replica's book from its snapshots and the updates after them; it never crosses.
  for (const r of ['a', 'b'] as const) {
    const books = new Map<string, { bids: Map<string, string>; asks: Map<string, string>; state: SequenceState | undefined; synced: boolean }>()
    let crossed = 0
    let applied = 0
    for (const { f, c } of classes) {
      if (f.replica !== r || c.kind !== 'rows') continue
      const span = c.sequences[0]!
      const key = `${f.connection} ${span.instrument}`
      let b = books.get(key)
      if (!b) books.set(key, b = { bids: new Map(), asks: new Map(), state: undefined, synced: false })
      const v = binanceSequence(b.state, span)
      b.state = v.state
      if (v.verdict === 'snapshot') { b.bids.clear(); b.asks.clear(); b.synced = true }
      else if (v.verdict === 'gap' || v.verdict === 'start') { b.synced = false; continue }
      else if (v.verdict !== 'next' || !b.synced) continue
      for (const row of c.rows) {
        const side = row.side === 'bid' ? b.bids : b.asks
        if (toDecimal38_18(row.size) === 0n) side.delete(row.price)
        else side.set(row.price, row.size)
      }
      applied++
      const best = (m: Map<string, string>, max: boolean): number => Math.max(...[...m.keys()].map((p) => (max ? 1 : -1) * Number(p)))
      if (b.bids.size && b.asks.size && best(b.bids, true) >= -best(b.asks, false)) crossed++
    }
    t.ok(applied > 500, `${r} applied updates (${applied})`)
    t.equal(crossed, 0, `${r}'s book never crosses`)
  }
})

t.test('options are checked', async (t) => {
  t.throws(() => [...simulateReplicas({ channel: 'trades', start: START, end: START })], RangeError)
  t.throws(() => [...simulateReplicas({ channel: 'trades', start: START, end: at(1), instruments: ['btc-usdt'] })], RangeError)
  t.throws(() => [...simulateReplicas({ channel: 'trades', start: START, end: at(1), incidents: [{ kind: 'sequence-gap', instrument: 'DOGEUSDT', at: at(0.5) }] })], RangeError)
})

t.test('speed: 100,000 trade frames for two replicas', async (t) => {
  const t0 = performance.now()
  let frames = 0
  for (const e of simulateReplicas({ channel: 'trades', start: START, end: at(100), framesPerSecond: 1000, seed: 3 })) if (e.kind === 'frame') frames++
  const ms = performance.now() - t0
  t.ok(frames > 190_000, `${frames} frame events in ${ms.toFixed(0)} ms`)
  t.comment(`${((frames / ms) * 1000).toFixed(0)} frame events/s`)
})

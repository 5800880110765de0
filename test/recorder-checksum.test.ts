/**
 * The recorder against a venue that sends book checksums, over a real websocket on loopback: a Kraken v2
 * server (written here from Kraken's documented messages) sends the book's snapshot, a good update and then
 * an update whose checksum does not match. The recorder journals every frame, journals the mismatch with
 * both values, forgets the book, asks for it again (unsubscribe, subscribe), and checks the new book; its
 * text pings keep the connection alive. Then an OKX server whose book skips update ids: the venue has no REST
 * snapshot, so the recorder asks for the book again on the connection, once until it comes. The sealer's side
 * (checksum_failures and sequence_gaps in the manifest) is test/seal.test.ts's.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { WebSocketServer, type WebSocket } from 'ws'
import { readJournalRange } from '../src/formats/record/journal/journal.js'
import type { JournalEvent } from '../src/formats/record/types.js'
import { NoneClock } from '../src/recorder/clock/none-clock.js'
import { Recorder } from '../src/recorder/recorder.js'
import { createKrakenAdapter } from '../src/venues/kraken.js'
import { createOkxAdapter } from '../src/venues/okx.js'

const dir = await mkdtemp(join(tmpdir(), 'pipe-recorder-checksum-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

// Kraken API docs, WebSocket v2, Market Data: Book — the examples' MATIC/USD book, whose checksums hold at
// price precision 4 and quantity precision 8 (test/venue-kraken.test.ts shows it).
const MATIC_BIDS = [['0.5666', '4831.75496356'], ['0.5665', '6658.22734739'], ['0.5664', '18724.91513344'], ['0.5663', '11563.92544914'],
  ['0.5662', '14006.65365711'], ['0.5661', '17454.85679807'], ['0.566', '18097.1547'], ['0.5659', '33644.89175666'], ['0.5658', '148.3464'],
  ['0.5657', '606.70854372']]
const MATIC_ASKS = [['0.5668', '4410.79769741'], ['0.5669', '4655.40412487'], ['0.567', '49844.89424998'], ['0.5671', '24306.41678'],
  ['0.5672', '29783.25223475'], ['0.5673', '57234.71239278'], ['0.5674', '45065.04744'], ['0.5675', '5912.76380354'], ['0.5676', '42514.92434778'],
  ['0.5677', '36304.0847022']]
const lv = (levels: readonly (readonly string[])[]): string => '[' + levels.map(([p, q]) => `{"price":${p},"qty":${q}}`).join(',') + ']'
const SNAPSHOT = `{"channel":"book","type":"snapshot","data":[{"symbol":"MATIC/USD","bids":${lv(MATIC_BIDS)},"asks":${lv(MATIC_ASKS)},"checksum":2439117997,"timestamp":"2023-10-06T17:35:55.440295Z"}]}`
const update = (checksum: number) => `{"channel":"book","type":"update","data":[{"symbol":"MATIC/USD","bids":[{"price":0.5657,"qty":1098.3947558}],"asks":[],"checksum":${checksum},"timestamp":"2023-10-06T17:35:56.440295Z"}]}`
const GOOD_UPDATE = update(2114181697)
const BAD_UPDATE = update(12345)
const INSTRUMENT = '{"channel":"instrument","type":"snapshot","data":{"assets":[],"pairs":[{"symbol":"MATIC/USD","base":"MATIC","quote":"USD","status":"online","qty_precision":8,"price_precision":4}]}}'
const ack = (channel: string, reqId: number, method = 'subscribe') => JSON.stringify({ method, result: { channel, symbol: 'MATIC/USD' }, success: true, time_in: '2023-10-06T17:35:55.000000Z', time_out: '2023-10-06T17:35:55.000100Z', req_id: reqId })

t.test('a checksum that does not match: journaled with both values, the book asked for again and checked anew', async (t) => {
  const received: { method: string; channel?: string; req_id?: number }[] = []
  const sent: string[] = []
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise((r) => wss.once('listening', r))
  t.teardown(() => new Promise((r) => wss.close(r)))
  const send = (ws: WebSocket, text: string) => { sent.push(text); ws.send(text) }
  wss.on('connection', (ws) => {
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as { method: string; params?: { channel: string }; req_id?: number }
      received.push({ method: m.method, ...(m.params ? { channel: m.params.channel } : {}), ...(m.req_id !== undefined ? { req_id: m.req_id } : {}) })
      if (m.method === 'ping') return send(ws, JSON.stringify({ method: 'pong', req_id: m.req_id, time_in: '2023-10-06T17:35:57.000000Z', time_out: '2023-10-06T17:35:57.000100Z' }))
      if (m.method === 'unsubscribe') return send(ws, ack('book', m.req_id!, 'unsubscribe'))
      if (m.params?.channel === 'instrument') {
        send(ws, ack('instrument', m.req_id!))
        send(ws, INSTRUMENT)
        // The book follows once the connection knows the pair's precision; the third update is corrupt.
        for (const text of [SNAPSHOT, GOOD_UPDATE, BAD_UPDATE]) send(ws, text)
        return
      }
      if (m.params?.channel === 'book') {
        send(ws, ack('book', m.req_id!))
        // A resubscription gets the book anew: the first one's goes wrong again, the second one's does not.
        const round = received.filter((r) => r.channel === 'book' && r.method === 'subscribe').length
        if (round > 1) for (const text of round === 2 ? [SNAPSHOT, GOOD_UPDATE, BAD_UPDATE] : [SNAPSHOT, GOOD_UPDATE]) send(ws, text)
      }
    })
  })
  const url = `ws://127.0.0.1:${(wss.address() as { port: number }).port}`
  const journal = join(dir, 'journal')
  const clock = new NoneClock()
  await clock.start()
  const logs: { level: string; msg: string }[] = []
  const recorder = new Recorder({
    venue: createKrakenAdapter({ wsBase: url, depth: 10 }), instruments: ['MATIC/USD'], channels: ['book'], replicas: ['a'], journal, clock,
    log: (level, msg) => { logs.push({ level, msg }) },
  })
  await recorder.start()
  const until = Date.now() + 20_000
  while (sent.filter((s) => s === GOOD_UPDATE).length < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
  // The second good update's frame reaches the journal after it is sent.
  await new Promise((r) => setTimeout(r, 200))
  await recorder.stop()
  await clock.stop()

  t.same(received.slice(0, 2), [{ method: 'subscribe', channel: 'book', req_id: 1 }, { method: 'subscribe', channel: 'instrument', req_id: 2 }], 'the book, then the instrument channel for the precisions')
  const resync = [{ method: 'unsubscribe', channel: 'book', req_id: 3 }, { method: 'subscribe', channel: 'book', req_id: 4 }]
  t.same(received.filter((r) => r.method !== 'ping').slice(2), [...resync, ...resync], 'after each mismatch: the book asked for again, once, and nothing else')

  const events: JournalEvent[] = []
  for await (const b of readJournalRange(join(journal, 'book'), {})) events.push(...b.events)
  const mismatches = events.filter((e): e is Extract<JournalEvent, { kind: 'checksum-mismatch' }> => e.kind === 'checksum-mismatch')
  t.equal(mismatches.length, 2, 'two mismatches: the third book checks')
  for (const m of mismatches) t.match(m, { instrument: 'MATIC/USD', expected: '12345', computed: '2114181697' }, 'the venue\'s value and the recomputed one (the good update\'s: the corrupt update changed the same level)')
  const frames = events.filter((e): e is Extract<JournalEvent, { kind: 'frame' }> => e.kind === 'frame').map((e) => Buffer.from(e.payload).toString('utf8'))
  t.same(frames.filter((f) => f.includes('"channel":"book","type"') || f.includes('"channel":"instrument","type"')), [INSTRUMENT, SNAPSHOT, GOOD_UPDATE, BAD_UPDATE, SNAPSHOT, GOOD_UPDATE, BAD_UPDATE, SNAPSHOT, GOOD_UPDATE], 'every frame journaled, the corrupt ones too')
  const after = events.flatMap((e, i) => (e.kind === 'frame' && Buffer.from(e.payload).toString('utf8') === BAD_UPDATE ? [events[i + 1]?.kind] : []))
  t.same(after, ['checksum-mismatch', 'checksum-mismatch'], 'each mismatch journaled right after the frame that shows it')
  t.equal((await recorder.metrics.checksumFailures.get()).values.reduce((n, v) => n + v.value, 0), 2, 'pipe_recorder_checksum_failures_total')
  const warning = ['book checksum mismatch', 'asking the venue for the book again']
  t.same(logs.filter((l) => l.level === 'warn').map((l) => l.msg), [...warning, ...warning])
})

// OKX API v5, WS / Order book channel: the push examples (levels trimmed), whose seqId/prevSeqId chain a book.
const OKX_LEVELS = '"asks":[["8476.98","415","0","13"]],"bids":[["8476.97","256","0","12"]]'
const okxBook = (action: 'snapshot' | 'update', prev: number, seq: number) => `{"arg":{"channel":"books","instId":"BTC-USDT"},"action":"${action}","data":[{${OKX_LEVELS},"ts":"1597026383085","checksum":0,"prevSeqId":${prev},"seqId":${seq}}]}`

t.test('a gap in a book sequence, on a venue with no REST snapshot: journaled, and the book asked for again once', async (t) => {
  const received: { op: string; channel?: string }[] = []
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise((r) => wss.once('listening', r))
  t.teardown(() => new Promise((r) => wss.close(r)))
  let subscriptions = 0
  wss.on('connection', (ws) => {
    ws.on('message', (data) => {
      if (String(data) === 'ping') return ws.send('pong')
      const m = JSON.parse(String(data)) as { id: string; op: string; args: { channel: string; instId: string }[] }
      received.push({ op: m.op, channel: m.args[0]?.channel })
      ws.send(JSON.stringify({ id: m.id, event: m.op, arg: m.args[0], connId: 'a4d3ae55' }))
      if (m.op !== 'subscribe') return
      // The first book skips from 101 to 104, twice (one resync, not two); the one resent after it is whole.
      const first = ++subscriptions === 1
      const pushes = first
        ? [okxBook('snapshot', -1, 100), okxBook('update', 100, 101), okxBook('update', 103, 104), okxBook('update', 106, 107)]
        : [okxBook('snapshot', -1, 200), okxBook('update', 200, 201)]
      for (const p of pushes) ws.send(p)
    })
  })
  const journal = join(dir, 'okx-journal')
  const clock = new NoneClock()
  await clock.start()
  const logs: string[] = []
  const recorder = new Recorder({
    venue: createOkxAdapter({ wsBase: `ws://127.0.0.1:${(wss.address() as { port: number }).port}` }), instruments: ['BTC-USDT'], channels: ['book'], replicas: ['a'], journal, clock,
    log: (level, msg) => { if (level !== 'info') logs.push(msg) },
  })
  await recorder.start()
  const until = Date.now() + 20_000
  while (subscriptions < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
  await new Promise((r) => setTimeout(r, 200))
  await recorder.stop()
  await clock.stop()

  t.same(received, [{ op: 'subscribe', channel: 'books' }, { op: 'unsubscribe', channel: 'books' }, { op: 'subscribe', channel: 'books' }], 'one resync for the two breaks before the book came again')
  const events: JournalEvent[] = []
  for await (const b of readJournalRange(join(journal, 'book'), {})) events.push(...b.events)
  const breaks = events.filter((e): e is Extract<JournalEvent, { kind: 'sequence-break' }> => e.kind === 'sequence-break')
  t.same(breaks.map((e) => [e.instrument, e.afterId, e.beforeId]), [['BTC-USDT', '101', '104'], ['BTC-USDT', '104', '107']], 'both breaks journaled')
  t.same(logs, ['asking the venue for the book again'])
})

/**
 * What a venue may send that it should not: a text frame that is not JSON, a binary frame, a frame larger
 * than the journal can hold, a flood. The recorder journals every frame it received as it was received
 * (the sealer lists what the adapter cannot read as unrepresentable), refuses only the oversized frame —
 * with a clear log line, the connection closed with 1009 and a reconnect — and never crashes. The venue is
 * a plain `ws` server on loopback that the test scripts frame by frame.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { WebSocketServer, type WebSocket } from 'ws'
import { readJournalRange } from '../src/formats/record/journal/journal.js'
import type { JournalEvent } from '../src/formats/record/types.js'
import { NoneClock } from '../src/recorder/clock/none-clock.js'
import { jsonLogger } from '../src/recorder/log.js'
import { Recorder } from '../src/recorder/recorder.js'
import { createBinanceSpotAdapter } from '../src/venues/binance.js'

const dir = await mkdtemp(join(tmpdir(), 'pipe-hostile-venue-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

async function waitFor(what: string, ok: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!ok()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

const trade = (id: number) => JSON.stringify({ e: 'trade', E: 1791036000000 + id, s: 'BTCUSDT', t: id, p: '61234.50000000', q: '0.00100000', T: 1791036000000 + id, m: false, M: true })

t.test('malformed, binary and oversized frames from the venue: journaled as received, or refused with a log line and a reconnect', async (t) => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((r) => wss.once('listening', () => r()))
  t.teardown(() => new Promise<void>((r) => { for (const c of wss.clients) c.terminate(); wss.close(() => r()) }))
  const port = (wss.address() as { port: number }).port
  const oversized = Buffer.alloc(17 * 2 ** 20, 0x61)
  let connections = 0
  wss.on('connection', (ws: WebSocket) => {
    const n = ++connections
    ws.on('message', (data) => {
      const req = JSON.parse(data.toString()) as { id: number }
      ws.send(JSON.stringify({ result: null, id: req.id }))
      if (n > 1) { ws.send(trade(1004)); return }
      ws.send(trade(1001))
      ws.send('{"e":"trade", not json')
      ws.send(Buffer.from([0x00, 0xff, 0x10]), { binary: true })
      ws.send(trade(1002))
      // The first connection's last frame is one the journal cannot hold.
      ws.send(oversized)
    })
  })

  const logLines: string[] = []
  const journal = join(dir, 'journal')
  const recorder = new Recorder({
    venue: createBinanceSpotAdapter({ wsBase: `ws://127.0.0.1:${port}`, restBase: `http://127.0.0.1:${port}` }), instruments: ['BTCUSDT'], channels: ['trades'], replicas: ['a'],
    journal, clock: new NoneClock(), log: jsonLogger({ write: (l: string) => { logLines.push(l); return true } } as never), backoffMs: { first: 20, max: 100 }, fsyncIntervalMs: 10,
  })
  await recorder.start()
  t.teardown(() => recorder.stop())
  await waitFor('the reconnect after the oversized frame', () => connections >= 2 && recorder.health().ok, 20_000)
  await new Promise((r) => setTimeout(r, 200))
  await recorder.stop()

  const events: JournalEvent[] = []
  for await (const b of readJournalRange(join(journal, 'trades'))) events.push(...b.events)
  const frames = events.filter((e) => e.kind === 'frame').map((e) => (e.kind === 'frame' ? { text: Buffer.from(e.payload).toString('latin1'), binary: e.binary } : null))
  t.same(frames, [
    { text: '{"result":null,"id":1}', binary: false },
    { text: trade(1001), binary: false },
    { text: '{"e":"trade", not json', binary: false },
    { text: '\x00\xff\x10', binary: true },
    { text: trade(1002), binary: false },
    { text: '{"result":null,"id":1}', binary: false },
    { text: trade(1004), binary: false },
  ], 'every frame received is journaled as received, the malformed and the binary ones too; the oversized one is not received')
  const first = events.filter((e) => 'connection' in e && e.connection.endsWith('-1'))
  const error = first.find((e) => e.kind === 'error')
  t.match(error, { kind: 'error', message: /Max payload size exceeded/ }, 'the refusal is journaled on the connection')
  const closed = first.find((e) => e.kind === 'closed')
  t.ok(closed, 'and its close')
  t.notOk(closed && 'closeCode' in closed && closed.closeCode !== undefined, 'with no close code: the venue sent no close frame')
  t.ok(logLines.some((l) => /"level":"warn".*"msg":"connection ended; reconnecting"/.test(l)), 'a log line says the connection ended and is reconnecting')
  t.ok(logLines.some((l) => /"level":"(warn|error)".*Max payload size exceeded/.test(l)), `a log line names the refusal: ${logLines.filter((l) => !/"level":"info"/.test(l)).join('')}`)
})

t.test('a flood faster than the journal: reading pauses until the journal catches up, and every frame is journaled in order', async (t) => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((r) => wss.once('listening', () => r()))
  t.teardown(() => new Promise<void>((r) => { for (const c of wss.clients) c.terminate(); wss.close(() => r()) }))
  const port = (wss.address() as { port: number }).port
  const count = 20_000
  const padding = 'x'.repeat(900)
  wss.on('connection', (ws: WebSocket) => {
    ws.once('message', (data) => {
      ws.send(JSON.stringify({ result: null, id: (JSON.parse(data.toString()) as { id: number }).id }))
      for (let i = 1; i <= count; i++) ws.send(trade(i).replace('"M":true', `"M":true,"pad":"${padding}"`))
    })
  })
  const logLines: string[] = []
  const journal = join(dir, 'flood-journal')
  const backlogLimit = 32 * 1024
  const recorder = new Recorder({
    venue: createBinanceSpotAdapter({ wsBase: `ws://127.0.0.1:${port}`, restBase: `http://127.0.0.1:${port}` }), instruments: ['BTCUSDT'], channels: ['trades'], replicas: ['a'],
    journal, clock: new NoneClock(), log: jsonLogger({ write: (l: string) => { logLines.push(l); return true } } as never), journalBacklogBytes: backlogLimit,
  })
  await recorder.start()
  t.teardown(() => recorder.stop())
  const frames = async () => (await recorder.metrics.frames.get()).values.reduce((n, v) => n + v.value, 0)
  const until = Date.now() + 30_000
  while ((await frames()) < count + 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
  await recorder.stop()

  const ids: number[] = []
  for await (const b of readJournalRange(join(journal, 'trades'))) {
    for (const e of b.events) if (e.kind === 'frame' && !e.binary) { const m = /"t":(\d+)/.exec(Buffer.from(e.payload).toString('utf8')); if (m) ids.push(Number(m[1])) }
  }
  t.equal(ids.length, count, 'every frame of the flood journaled')
  t.ok(ids.every((id, i) => id === i + 1), 'in the order received')
  const pauses = (await recorder.metrics.backlogPauses.get()).values[0]?.value ?? 0
  t.ok(pauses >= 1, `reading paused ${pauses} times (pipe_recorder_journal_backlog_pauses_total)`)
  const said = logLines.filter((l) => /"level":"warn".*"msg":"the journal is behind the venue: reading paused/.test(l))
  t.equal(said.length, 1, 'said once in the log, however often it paused within a minute')
  t.equal(logLines.filter((l) => /"msg":"the journal caught up: reading from the venue again"/.test(l)).length, 1, 'and its end')
})

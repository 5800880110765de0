import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { WebSocket } from 'ws'
import { binanceSpot, createBinanceSpotAdapter } from '../src/venues/binance.js'
import { createBinanceUsdmAdapter } from '../src/venues/binance-usdm.js'
import { childEnv } from './helpers/io.js'

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'pipe-sim-venue-cli-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

t.test('pipe run simulate-venue prints its URLs, serves, and exits 0 within 2 s of SIGTERM', async (t) => {
  const truth = join(dir, 'truth.jsonl')
  const plan = join(dir, 'plan.json')
  writeFileSync(plan, JSON.stringify({ faults: [{ kind: 'gap', afterFrames: 20, stream: 'btcusdt@trade', count: 2 }] }))
  const child = spawn(process.execPath, [cli, 'run', 'simulate-venue', '--venue', 'binance', '--port', '0', '--rate', '200', '--seed', '3', '--faults', plan, '--truth', truth], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { child.kill('SIGKILL') })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d })
  const lines: string[] = []
  createInterface({ input: child.stdout }).on('line', (l) => lines.push(l))
  let exitedEarly = false
  void exited.then(() => { exitedEarly = true })
  for (let i = 0; i < 500 && lines.length < 2 && !exitedEarly; i++) await new Promise((r) => setTimeout(r, 10))
  // Until pipelines/registry.ts registers the pipeline, this says so (no pipeline named "simulate-venue").
  if (lines.length < 2) return void t.fail(`no URLs printed; stderr: ${stderr}`)
  t.match(lines[0], /^ws ws:\/\/127\.0\.0\.1:\d+$/, 'the websocket base first')
  t.match(lines[1], /^rest http:\/\/127\.0\.0\.1:\d+$/, 'then the REST base')
  const adapter = createBinanceSpotAdapter({ wsBase: lines[0]!.slice(3), restBase: lines[1]!.slice(5) })

  const plan1 = adapter.connect('trades', ['BTCUSDT'])
  const url = new URL(plan1.url)
  url.searchParams.set('replica', 'a')
  const ws = new WebSocket(url)
  const texts: string[] = []
  ws.on('message', (d) => texts.push(d.toString()))
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)))
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
  ws.send(plan1.send[0]!)
  for (let i = 0; i < 500 && texts.length < 30; i++) await new Promise((r) => setTimeout(r, 10))
  t.equal(texts[0], '{"result":null,"id":1}')
  t.ok(texts.length >= 30, 'trades flow')
  t.same(texts.slice(1).filter((x) => binanceSpot.classify('trades', Buffer.from(x), false).kind !== 'rows'), [], 'and classify')
  const snapshot = await fetch(adapter.snapshotRequest('book', 'BTCUSDT')!.url)
  t.equal(snapshot.status, 200)
  t.match(await snapshot.text(), /^\{"lastUpdateId":\d+,"bids":\[\["\d+\.\d{8}","\d+\.\d{8}"\]/)

  const stopped = Date.now()
  child.kill('SIGTERM')
  const code = await exited
  const took = Date.now() - stopped
  t.equal(code, 0, 'a clean stop')
  t.ok(took < 2000, `within 2 s (${took} ms)`)
  t.equal(await closed, 1001, 'the client is told the venue is going away')
  t.match(lines.at(-1), /^simulate-venue: ok, frames_sent \d+, connections 1, items 0, findings 0$/)
  t.equal(stderr, '')
  const records = readFileSync(truth, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { kind: string; text?: string; to?: string[]; why?: string })
  t.same(records.filter((r) => r.kind === 'frame').map((r) => r.text), texts.slice(1).filter((x) => x.startsWith('{"e"')).slice(0, records.filter((r) => r.kind === 'frame').length), 'the truth lists what the client got')
  t.match(records.filter((r) => r.kind === 'fault'), [{ kind: 'fault', applied: true }])
  t.equal(records.at(-1)!.why, 'shutdown', 'and ends with the close at shutdown')
})

t.test('pipe run simulate-venue --venue binance-usdm serves futures: aggregates on /market, the snapshot on /fapi/v1/depth', async (t) => {
  const child = spawn(process.execPath, [cli, 'run', 'simulate-venue', '--venue', 'binance-usdm', '--port', '0', '--rate', '200', '--seed', '3'], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { child.kill('SIGKILL') })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d })
  const lines: string[] = []
  createInterface({ input: child.stdout }).on('line', (l) => lines.push(l))
  for (let i = 0; i < 500 && lines.length < 2; i++) await new Promise((r) => setTimeout(r, 10))
  if (lines.length < 2) return void t.fail(`no URLs printed; stderr: ${stderr}`)
  const adapter = createBinanceUsdmAdapter({ wsBase: lines[0]!.slice(3), restBase: lines[1]!.slice(5) })
  const plan = adapter.connect('trades', ['BTCUSDT'])
  t.match(plan.url, /\/market\/stream$/)
  const ws = new WebSocket(plan.url)
  const texts: string[] = []
  ws.on('message', (d) => texts.push(d.toString()))
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
  ws.send(plan.send[0]!)
  for (let i = 0; i < 500 && texts.length < 30; i++) await new Promise((r) => setTimeout(r, 10))
  t.equal(texts[0], '{"result":null,"id":1}')
  t.ok(texts.length >= 30, 'aggregates flow')
  t.same(texts.slice(1).filter((x) => adapter.classify('trades', Buffer.from(x), false).kind !== 'rows'), [], 'and classify')
  const snapshot = await fetch(adapter.snapshotRequest('book', 'BTCUSDT')!.url)
  t.equal(snapshot.status, 200)
  t.match(await snapshot.text(), /^\{"lastUpdateId":\d+,"E":\d+,"T":\d+,"bids":\[\["\d+\.\d+","\d+\.\d+"\]/)
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'a clean stop')
  t.equal(stderr, '')
})

t.test('an unknown venue is a usage error naming the venues known', async (t) => {
  const r = spawnSync(process.execPath, [cli, 'run', 'simulate-venue', '--venue', 'nasdaq'], { encoding: 'utf8', timeout: 60_000, env: childEnv() })
  t.equal(r.status, 2)
  t.match(r.stderr, /no simulator for "nasdaq"; the venues known: binance, binance-usdm, kraken, okx, bybit, deribit, coinbase/)
  t.equal(r.stdout, '', 'no URLs')
})

/**
 * Channels the record format keeps raw only (funding, liquidations; Binance USD-M here): an hour of them is
 * sealed through the CLI with no tables, each line states the exchange time the adapter read, nothing is
 * unrepresentable but what breaks the documented structure, and the chain verifies.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { childEnv } from './helpers/io.js'
import { buildJournal, byTime, connect, ev, MS, readHour, S } from './helpers/seal-fixtures.js'
import { hourName } from '../src/formats/record/journal/journal.js'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import { formatTime } from '../src/formats/record/time.js'
import type { JournalEvent } from '../src/formats/record/types.js'

const CLI = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const base = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'pipe-kept-raw-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
const { privateJwk, publicJwk } = await newSigningKey({ validFrom: '2020-01-01T00:00:00.000000000Z', seed: new Uint8Array(32).fill(5) })
const keyFile = join(base, 'key.jwk')
const keysFile = join(base, 'jwks.json')
await writePrivateJwkFile(keyFile, privateJwk)
await writeJwksFile(keysFile, { keys: [publicJwk] })

const H = BigInt(Date.UTC(2026, 9, 3, 14)) * 1_000_000n
const ms = (ns: bigint) => ns / MS
const markPrice = (at: bigint) => `{"stream":"btcusdt@markPrice","data":{"e":"markPriceUpdate","E":${ms(at) - 3n},"s":"BTCUSDT","p":"61794.15000000","i":"61784.62659091","P":"61784.25641265","r":"0.00010000","T":1791043200000}}`
const forceOrder = (at: bigint) => `{"stream":"btcusdt@forceOrder","data":{"e":"forceOrder","E":${ms(at) - 2n},"o":{"s":"BTCUSDT","S":"SELL","o":"LIMIT","f":"IOC","q":"0.014","p":"61910","ap":"61910","X":"FILLED","l":"0.014","z":"0.014","T":${ms(at) - 4n}}}}`

async function sealed(channel: 'funding' | 'liquidations', payloads: string[]) {
  const journal = join(base, channel, 'journal')
  const root = join(base, channel, 'root')
  const frames = payloads.map((p, i) => ev.frame('a', 'a-1', H + BigInt(i + 1) * S, p))
  await buildJournal(journal, byTime([
    ...(['a', 'b'] as const).map((r): JournalEvent => ({ kind: 'recorder-start', replica: r, time: H - S, heartbeatIntervalNs: S })),
    ...connect('a', 'a-1', H - S / 2n), ...connect('b', 'b-1', H - S / 2n),
    ...frames, ...payloads.map((p, i) => ev.frame('b', 'b-1', H + BigInt(i + 1) * S + 7n * MS, p)),
  ]))
  const run = spawnSync(process.execPath, [CLI, 'run', 'seal-hour', '--venue', 'binance-usdm', '--channel', channel, '--hour', hourName(H), '--journal', journal, '--out', root, '--key', keyFile, '--recorder', 'rec-1', '--recorder-stopped'], { encoding: 'utf8', env: childEnv() })
  const dir = join(root, 'recorder=rec-1', 'venue=binance-usdm', `channel=${channel}`, 'date=2026-10-03', 'hour=14')
  const verify = spawnSync(process.execPath, [CLI, 'run', 'verify', '--root', root, '--keys', keysFile], { encoding: 'utf8', env: childEnv() })
  return { run, hour: await readHour(dir), files: await readdir(dir), verify }
}

t.test('funding: the raw file alone, each line with its markPriceUpdate\'s E', async (t) => {
  const payloads = [markPrice(H + S), markPrice(H + 2n * S), markPrice(H + 3n * S).replace('"r":"0.00010000"', '"r":0.0001')]
  const { run, hour, files, verify } = await sealed('funding', payloads)
  t.equal(run.status, 0, run.stderr)
  t.same(files.filter((f) => f.endsWith('.parquet')), [], 'no tables')
  t.same(hour.envelopes.map((e) => e.payload), payloads, 'every frame, in frame-time order')
  t.same(hour.envelopes.map((e) => e.receipts.length), [2, 2, 2], 'paired across the replicas')
  t.same(hour.envelopes.slice(0, 2).map((e) => e.exchange_time), [formatTime(H + S - 3n * MS), formatTime(H + 2n * S - 3n * MS)])
  t.equal(hour.envelopes[2]!.exchange_time, undefined, 'a frame off the documented structure states no time')
  t.same(hour.manifest.unrepresentable_frames, [2], 'and is the one unrepresentable frame: a rate as a JSON number')
  t.equal(verify.status, 0, verify.stdout + verify.stderr)
})

t.test('liquidations: kept raw, with the earlier of E and the order\'s T', async (t) => {
  const payloads = [forceOrder(H + S), forceOrder(H + 2n * S)]
  const { run, hour, verify } = await sealed('liquidations', payloads)
  t.equal(run.status, 0, run.stderr)
  t.same(hour.envelopes.map((e) => e.exchange_time), [formatTime(H + S - 4n * MS), formatTime(H + 2n * S - 4n * MS)])
  t.equal(hour.manifest.unrepresentable_frames, undefined, 'nothing unrepresentable')
  t.same(hour.manifest.completeness.reasons.filter((r) => r === 'unrepresentable_value'), [])
  t.equal(verify.status, 0, verify.stdout + verify.stderr)
})

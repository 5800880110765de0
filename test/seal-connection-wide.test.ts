/**
 * A venue whose only gap detector counts one connection's messages (Coinbase's `sequence_num`, instrument
 * `*`): each connection's count starts anew, and the two replicas' copies of a frame differ in it, so the
 * sealer must not judge the counts across connections. It states the breaks the recorder journaled, on the
 * connection where they happened, and none that merging the connections would invent.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { childEnv } from './helpers/io.js'
import { buildJournal, byTime, connect, ev, MS, readHour, S } from './helpers/seal-fixtures.js'
import { hourName } from '../src/formats/record/journal/journal.js'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import type { JournalEvent, Replica } from '../src/formats/record/types.js'

const CLI = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const base = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'pipe-connection-wide-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
const { privateJwk, publicJwk } = await newSigningKey({ validFrom: '2020-01-01T00:00:00.000000000Z', seed: new Uint8Array(32).fill(6) })
const keyFile = join(base, 'key.jwk')
const keysFile = join(base, 'jwks.json')
await writePrivateJwkFile(keyFile, privateJwk)
await writeJwksFile(keysFile, { keys: [publicJwk] })

const H = BigInt(Date.UTC(2026, 9, 3, 14)) * 1_000_000n
// WebSocket Channels › Market Trades Channel, "Example" (Coinbase Advanced Trade), with our ids, times and counts.
const trade = (seq: number, id: number, at: bigint, replica: Replica) => `{"channel":"market_trades","client_id":"","timestamp":"2026-10-03T14:00:0${replica === 'a' ? 1 : 2}.000000000Z","sequence_num":${seq},"events":[{"type":"update","trades":[` +
  `{"trade_id":"${id}","product_id":"ETH-USD","price":"1260.01","size":"0.3","side":"BUY","time":"${new Date(Number(at / MS)).toISOString()}"}]}]}`

t.test('Coinbase: the sealed hour states the one break the recorder journaled, none from merging the connections', async (t) => {
  const journal = join(base, 'journal')
  const root = join(base, 'root')
  const events: JournalEvent[] = []
  for (const replica of ['a', 'b'] as const) {
    const conn = `${replica}-1`
    events.push({ kind: 'recorder-start', replica, time: H - S, heartbeatIntervalNs: S }, ...connect(replica, conn, H - S / 2n, ['ETH-USD']))
    // Replica a's connection counts 1..10 and loses message 6; b's counts from 40 (it had other messages first).
    for (let i = 1; i <= 10; i++) {
      const seq = replica === 'a' ? i : 40 + i
      if (replica === 'a' && i === 6) continue
      const at = H + BigInt(i) * S + (replica === 'a' ? 0n : 3n * MS)
      events.push(ev.frame(replica, conn, at, trade(seq, 1000 + i, H + BigInt(i) * S - 5n * MS, replica)))
    }
  }
  events.push({ kind: 'sequence-break', replica: 'a', connection: 'a-1', time: H + 7n * S, instrument: '*', afterId: '5', beforeId: '7' })
  await buildJournal(journal, byTime(events))
  const run = spawnSync(process.execPath, [CLI, 'run', 'seal-hour', '--venue', 'coinbase', '--channel', 'trades', '--hour', hourName(H), '--journal', journal, '--out', root, '--key', keyFile, '--recorder', 'rec-1', '--recorder-stopped'], { encoding: 'utf8', env: childEnv() })
  t.equal(run.status, 0, run.stderr)
  const hour = await readHour(join(root, 'recorder=rec-1', 'venue=coinbase', 'channel=trades', 'date=2026-10-03', 'hour=14'))
  t.same(hour.manifest.sequence_gaps, [{ instrument: '*', after_id: '5', before_id: '7' }], 'the journaled break, and no break between a\'s count and b\'s')
  t.ok(hour.manifest.completeness.reasons.includes('sequence_gap'))
  t.equal(hour.lines.length, 19, 'every frame of both connections: their copies differ in sequence_num and timestamp')
  t.same(hour.manifest.replicas.map((r) => r.gap_free_runs), [undefined, undefined], 'no gap-free runs: Coinbase\'s trades carry no sequence of their own to detect a gap by')
  const verify = spawnSync(process.execPath, [CLI, 'run', 'verify', '--root', root, '--keys', keysFile], { encoding: 'utf8', env: childEnv() })
  t.equal(verify.status, 0, verify.stdout + verify.stderr)
})

/**
 * `pipe key new` and `pipe key rotate` through the built CLI: the files they write (a 0600 private JWK,
 * a JWK Set with RFC 7638 kids and validity), and a rotation that verify then honours: hours signed by
 * the key valid at their interval's end pass check 6, an hour the old key signed after it was closed fails.
 */
import { spawnSync } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { calculateJwkThumbprint } from 'jose'
import t from 'tap'
import { childEnv } from './helpers/io.js'
import { verifyRoots } from './helpers/seal-fixtures.js'
import { JournalBuilder } from '../src/formats/record/journal/journal.js'
import { readPrivateJwkFile, type PublicJwks } from '../src/formats/record/keys/keys.js'
import { sealHour } from '../src/formats/record/seal/seal.js'
import { simulateReplicas } from '../src/sim/replicas.js'
import { binanceSpot } from '../src/venues/binance.js'
import { keySigner } from '../src/formats/record/keys/signer.js'

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const pipe = (args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 60_000, env: childEnv() })

const HOUR = 3_600_000_000_000n
const S = 1_000_000_000n
const H12 = BigInt(Date.UTC(2026, 9, 3, 12)) * 1_000_000n
const base = await mkdtemp(join(tmpdir(), 'pipe-key-cli-'))
t.teardown(() => rm(base, { recursive: true, force: true }))

const readJwks = async (dir: string) => JSON.parse(await readFile(join(dir, 'jwks.json'), 'utf8')) as PublicJwks
const privateFiles = async (dir: string) => (await readdir(dir)).filter((f) => f !== 'jwks.json').sort()

t.test('key new, key rotate, and verify judging each hour by the key valid at its end', async (t) => {
  const keys = join(base, 'keys')
  const made = pipe(['key', 'new', '--out', keys, '--valid-from', '2026-10-03T00:00:00.000000000Z'])
  t.equal(made.status, 0, made.stderr)
  const [first] = await privateFiles(keys)
  t.ok(first, 'a private key file')
  t.equal((await stat(join(keys, first!))).mode & 0o777, 0o600, 'the private key is mode 0600')
  const jwks1 = await readJwks(keys)
  t.equal(jwks1.keys.length, 1)
  const k1 = jwks1.keys[0]!
  t.match(k1, { kty: 'OKP', crv: 'Ed25519', valid_from: '2026-10-03T00:00:00.000000000Z' })
  t.equal(k1.valid_until, undefined, 'open-ended until rotated')
  t.notOk('d' in k1, 'the JWK Set holds no private part')
  t.equal(k1.kid, await calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: k1.x }, 'sha256'), 'kid is the RFC 7638 thumbprint')
  t.match(made.stdout, new RegExp(`key ${k1.kid}`))

  const rotated = pipe(['key', 'rotate', '--keys', join(keys, 'jwks.json'), '--key', join(keys, first!), '--out', keys, '--at', '2026-10-03T12:30:00.000000000Z'])
  t.equal(rotated.status, 0, rotated.stderr)
  const jwks2 = await readJwks(keys)
  t.equal(jwks2.keys.length, 2)
  const [old, next] = [jwks2.keys.find((k) => k.kid === k1.kid)!, jwks2.keys.find((k) => k.kid !== k1.kid)!]
  t.equal(old.valid_until, '2026-10-03T12:30:00.000000000Z', 'the old key closes at the rotation')
  t.equal(next.valid_from, '2026-10-03T12:30:00.000000000Z', 'the successor opens there: no gap, no overlap')
  const files = await privateFiles(keys)
  t.equal(files.length, 2)
  const second = files.find((f) => f !== first)!
  t.equal((await stat(join(keys, second)).then((s) => s.mode)) & 0o777, 0o600)

  // Hour 11 ends before the rotation (the old key signs it); hour 12 ends after it (the successor signs it).
  const journal = join(base, 'journal')
  const builder = new JournalBuilder(journal)
  for (const e of simulateReplicas({ channel: 'trades', start: H12 - HOUR - 10n * S, end: H12 + HOUR, framesPerSecond: 2, seed: 7, heartbeatIntervalMs: 1000 })) await builder.append(e)
  await builder.commit()
  const oldKey = await readPrivateJwkFile(join(keys, first!))
  const newKey = await readPrivateJwkFile(join(keys, second))
  const seal = (root: string, hourStart: bigint, key: typeof oldKey) => sealHour({ root, journal, recorder: 'r1', venue: binanceSpot, channel: 'trades', hourStart, sign: keySigner(key), createdBy: 'pipe test' })

  const good = join(base, 'good')
  await seal(good, H12 - HOUR, oldKey)
  await seal(good, H12, newKey)
  const ok = await verifyRoots([good], join(keys, 'jwks.json'))
  t.equal(ok.exitCode, 0, JSON.stringify(ok.doc.findings))
  t.equal(ok.doc.hours, 2)

  const late = join(base, 'late')
  await seal(late, H12 - HOUR, oldKey)
  await seal(late, H12, oldKey)
  const bad = await verifyRoots([late], join(keys, 'jwks.json'))
  t.equal(bad.exitCode, 1)
  t.same(bad.doc.findings.map((f) => `${f.check} ${f.code}`), ['6 sig.key-not-valid-at-time'], 'the old key signed an hour ending after it closed')
  t.match(bad.doc.findings[0]!.path, /hour=12\/manifest\.json\.sig$/)
})

t.test('key rotate refuses what it cannot do, with exit 2 and one line', async (t) => {
  const keys = join(base, 'keys2')
  t.equal(pipe(['key', 'new', '--out', keys, '--valid-from', '2026-10-03T00:00:00.000000000Z']).status, 0)
  const [priv] = await privateFiles(keys)
  const noKeys = pipe(['key', 'rotate', '--key', join(keys, priv!), '--out', keys])
  t.equal(noKeys.status, 2)
  t.match(noKeys.stderr, /key rotate needs --keys JWKS and --key PRIVATE/)
  const early = pipe(['key', 'rotate', '--keys', join(keys, 'jwks.json'), '--key', join(keys, priv!), '--out', keys, '--at', '2026-10-02T00:00:00.000000000Z'])
  t.equal(early.status, 2)
  t.match(early.stderr, /keys\.rotate-bad-time/)
  t.equal(early.stderr.trim().split('\n').length, 1, 'one line')
  t.equal((await readJwks(keys)).keys.length, 1, 'the JWK Set is unchanged')
  t.equal((await privateFiles(keys)).length, 1, 'no new private key was left behind')
})

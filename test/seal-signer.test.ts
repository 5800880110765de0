/**
 * `pipe run seal-hour --signer-cmd CMD --kid KID`: the sign stage hands the JWS signing input to an
 * external signer (here openssl, holding the key as PEM, as a token or a KMS would) and checks what it
 * returns against the key set before the hour is landed. Ed25519 is deterministic, so the hour sealed
 * through openssl is byte for byte the hour sealed with the key file, and verify accepts it. A signer that
 * signs with another key, or fails, stops the seal with nothing landed and no temporary folder left.
 */
import { spawnSync } from 'node:child_process'
import { createPrivateKey } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import { childEnv } from './helpers/io.js'
import { needs } from './helpers/tools.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const cli = (args: string[]) => spawnSync(process.execPath, [join(ROOT, 'dist/bin/pipe.js'), ...args], { encoding: 'utf8', timeout: 120_000, env: childEnv() })
const dir = await mkdtemp(join(tmpdir(), 'pipe-seal-signer-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

const journal = join(dir, 'journal')
const imported = cli(['run', 'journal-import', '--from', join(ROOT, 'test/fixtures/journal-sample.jsonl'), '--journal', journal])
if (imported.status !== 0) throw new Error(imported.stderr)

async function key(name: string, seed: number) {
  const { privateJwk, publicJwk } = await newSigningKey({ validFrom: '2026-01-01T00:00:00.000000000Z', seed: new Uint8Array(32).fill(seed) })
  await writePrivateJwkFile(join(dir, `${name}.jwk`), privateJwk)
  const pem = join(dir, `${name}.pem`)
  await writeFile(pem, createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', x: privateJwk.x, d: privateJwk.d }, format: 'jwk' }).export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
  return { privateJwk, publicJwk, jwk: join(dir, `${name}.jwk`), pem }
}
const signing = await key('signing', 21)
const other = await key('other', 22)
const jwks = join(dir, 'jwks.json')
await writeJwksFile(jwks, { keys: [signing.publicJwk] })

const seal = (root: string, signer: string[]) => cli(['run', 'seal-hour', '--venue', 'binance', '--channel', 'trades', '--hour', '2026-10-03T14', '--journal', journal, '--out', root, '--keys', jwks, '--recorder-stopped', ...signer])
const hourDir = (root: string) => join(root, 'recorder=recorder/venue=binance/channel=trades/date=2026-10-03/hour=14')
const openssl = (pem: string) => `openssl pkeyutl -sign -rawin -inkey '${pem}' -in "$PIPE_SIGN_INPUT"`

t.test('an hour signed through openssl is the hour signed with the key file, and verifies', needs('openssl'), async (t) => {
  const withKey = join(dir, 'with-key')
  const a = seal(withKey, ['--key', signing.jwk])
  t.equal(a.status, 0, a.stderr)
  const withCmd = join(dir, 'with-cmd')
  const b = seal(withCmd, ['--signer-cmd', openssl(signing.pem), '--kid', signing.publicJwk.kid])
  t.equal(b.status, 0, b.stderr)
  for (const file of ['manifest.json', 'manifest.json.sig', 'raw.jsonl.zst', 'trades.parquet']) {
    t.same(await readFile(join(hourDir(withCmd), file)), await readFile(join(hourDir(withKey), file)), `${file}: the same bytes`)
  }
  const v = cli(['run', 'verify', '--root', withCmd, '--keys', jwks, '--json'])
  t.equal(v.status, 0, v.stdout)
})

t.test('a signer that signs with another key, or fails, stops the seal: nothing landed, no temporary folder', needs('openssl'), async (t) => {
  for (const [what, signer, code, message] of [
    ['another key', ['--signer-cmd', openssl(other.pem), '--kid', signing.publicJwk.kid], 'sign.bad-signature', /does not verify under key/],
    ['a failing command', ['--signer-cmd', 'echo token locked >&2; exit 3', '--kid', signing.publicJwk.kid], 'sign.command-failed', /exited with status 3: token locked/],
    ['no signature', ['--signer-cmd', 'cat >/dev/null; echo hello', '--kid', signing.publicJwk.kid], 'sign.bad-signature', /not a 64-byte Ed25519 signature/],
    ['an unknown kid', ['--signer-cmd', openssl(signing.pem), '--kid', 'nope'], 'usage.unknown-key', /--kid nope: the key set .* has no such key/],
    ['both signers', ['--signer-cmd', openssl(signing.pem), '--key', signing.jwk], 'usage.signer', /name the signer/],
  ] as const) {
    const root = join(dir, `refused-${code}-${what.length}`)
    const r = seal(root, [...signer])
    t.equal(r.status, 2, `${what}: ${r.stderr}`)
    t.match(r.stderr, new RegExp(`${message.source}.*\\(${code.replace('.', '\\.')}\\)\\n$`), what)
    t.notOk(existsSync(hourDir(root)), `${what}: no hour landed`)
    const day = join(hourDir(root), '..')
    t.same(existsSync(day) ? (await readdir(day)).filter((f) => f.endsWith('.tmp')) : [], [], `${what}: no temporary folder left`)
  }
})

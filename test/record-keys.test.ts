import { createHash, createPublicKey } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { writeFileAtomic } from '../src/core/atomic-write.js'
import { PipeError } from '../src/core/errors.js'
import {
  KeyFileError,
  formatTimeNs,
  isKeyValidAt,
  keyValidityAt,
  manifestSigningInstant,
  newSigningKey,
  parseJwks,
  parsePrivateJwk,
  parseTimeNs,
  privateKeyFileName,
  publicJwkOf,
  readJwksFile,
  readPrivateJwkFile,
  rotateKey,
  writeJwksFile,
  writeKeyFiles,
  writePrivateJwkFile,
  type PublicJwks,
} from '../src/formats/record/keys/keys.js'

// RFC 8037 appendix A.1 (private key), A.2 (public key), A.3 (thumbprint).
const RFC8037_D = 'nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A'
const RFC8037_X = '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo'
const RFC8037_KID = 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k'

const T0 = '2026-10-03T14:00:00.000000000Z'
const T0_NS = 1_791_036_000_000_000_000n // 2026-10-03T14:00:00Z
const HOUR = 3_600_000_000_000n

/** RFC 7638 computed here without jose: SHA-256 of the members crv, kty, x in that order, no whitespace. */
function thumbprintByHand(x: string): string {
  const json = `{"crv":"Ed25519","kty":"OKP","x":"${x}"}`
  return createHash('sha256').update(json, 'utf8').digest('base64url')
}

function seed(byte: number): Uint8Array {
  return new Uint8Array(32).fill(byte)
}

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'record-keys-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

function expectKeyError(t: Test, err: unknown, code: string, ...fragments: string[]): void {
  t.ok(err instanceof KeyFileError, 'a KeyFileError')
  const e = err as KeyFileError
  t.equal(e.code, code)
  for (const f of fragments) t.match(e.message, f, `message names ${f}`)
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p
  } catch (err) {
    return err
  }
  throw new Error('expected a rejection')
}

t.test('time encoding used for validity', async (t) => {
  t.equal(formatTimeNs(T0_NS), T0)
  t.equal(parseTimeNs(T0), T0_NS)
  t.equal(formatTimeNs(T0_NS + 1n), '2026-10-03T14:00:00.000000001Z')
  t.equal(formatTimeNs(-1n), '1969-12-31T23:59:59.999999999Z')
  t.equal(parseTimeNs('1969-12-31T23:59:59.999999999Z'), -1n)
  for (const bad of ['2026-10-03T14:00:00Z', '2026-10-03T14:00:00.000Z', '2026-02-30T00:00:00.000000000Z', '2026-10-03T24:00:00.000000000Z', '2026-10-03T14:00:60.000000000Z', '2026-10-03 14:00:00.000000000Z', '2026-10-03T14:00:00.000000000+00:00']) {
    t.equal(parseTimeNs(bad), undefined, `${bad} is not the encoding`)
  }
})

t.test('kid is the RFC 7638 thumbprint; RFC 8037 A.1 key gives A.2 x and A.3 thumbprint', async (t) => {
  t.equal(thumbprintByHand(RFC8037_X), RFC8037_KID, 'the hand computation reproduces RFC 8037 A.3')
  const { privateJwk, publicJwk } = await newSigningKey({ validFrom: T0, seed: Buffer.from(RFC8037_D, 'base64url') })
  t.equal(privateJwk.d, RFC8037_D)
  t.equal(privateJwk.x, RFC8037_X)
  t.equal(privateJwk.kid, RFC8037_KID)
  t.same(privateJwk, { kty: 'OKP', crv: 'Ed25519', x: RFC8037_X, d: RFC8037_D, kid: RFC8037_KID, alg: 'Ed25519', use: 'sig' })
  t.same(publicJwk, { kty: 'OKP', crv: 'Ed25519', x: RFC8037_X, kid: RFC8037_KID, alg: 'Ed25519', use: 'sig', valid_from: T0 })
  t.notOk('d' in publicJwk, 'the public JWK has no d')
  t.same(publicJwkOf(privateJwk, { validFrom: T0_NS, validUntil: T0_NS + HOUR }), { ...publicJwk, valid_until: '2026-10-03T15:00:00.000000000Z' })
})

t.test('random keys: kid is the independently computed thumbprint, x is the public key of d', async (t) => {
  const kids = new Set<string>()
  for (let i = 0; i < 5; i++) {
    const { privateJwk, publicJwk } = await newSigningKey({ validFrom: T0_NS })
    t.equal(publicJwk.kid, thumbprintByHand(publicJwk.x))
    t.equal(publicJwk.valid_from, T0)
    const fromD = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', d: privateJwk.d, x: privateJwk.x }, format: 'jwk' })
    t.equal(fromD.export({ format: 'jwk' }).x, publicJwk.x)
    kids.add(publicJwk.kid)
  }
  t.equal(kids.size, 5, 'five distinct keys')
})

t.test('deterministic keys from a seed', async (t) => {
  const a = await newSigningKey({ validFrom: T0, seed: seed(7) })
  const b = await newSigningKey({ validFrom: T0, seed: seed(7) })
  const c = await newSigningKey({ validFrom: T0, seed: seed(8) })
  t.same(a, b)
  t.not(a.publicJwk.kid, c.publicJwk.kid)
  t.equal(a.privateJwk.d, Buffer.from(seed(7)).toString('base64url'))
  const err = await rejection(newSigningKey({ validFrom: T0, seed: new Uint8Array(31) }))
  t.equal((err as PipeError).code, 'keys.bad-seed')
})

t.test('validity options', async (t) => {
  const k = await newSigningKey({ validFrom: T0_NS, validUntil: T0_NS + HOUR, seed: seed(1) })
  t.equal(k.publicJwk.valid_until, '2026-10-03T15:00:00.000000000Z')
  t.equal((await rejection(newSigningKey({ validFrom: '2026-10-03T14:00:00Z' })) as PipeError).code, 'keys.bad-time', 'a non-canonical time is refused')
  t.equal((await rejection(newSigningKey({ validFrom: T0_NS, validUntil: T0_NS })) as PipeError).code, 'keys.bad-time', 'an empty window is refused')
})

t.test('isKeyValidAt: valid_from inclusive, valid_until exclusive, absent valid_until open-ended', async (t) => {
  const closed = { valid_from: T0, valid_until: formatTimeNs(T0_NS + HOUR) }
  t.notOk(isKeyValidAt(closed, T0_NS - 1n))
  t.equal(keyValidityAt(closed, T0_NS - 1n), 'not-yet-valid')
  t.ok(isKeyValidAt(closed, T0_NS))
  t.ok(isKeyValidAt(closed, T0_NS + HOUR - 1n))
  t.notOk(isKeyValidAt(closed, T0_NS + HOUR))
  t.equal(keyValidityAt(closed, T0_NS + HOUR), 'expired')
  const open = { valid_from: T0 }
  t.ok(isKeyValidAt(open, T0_NS + 1_000_000n * HOUR))
  t.notOk(isKeyValidAt(open, T0_NS - 1n))
  t.notOk(isKeyValidAt({ valid_from: 'garbage' }, T0_NS), 'an unreadable valid_from is never valid')
})

t.test('manifestSigningInstant: the end of the interval', async (t) => {
  t.equal(manifestSigningInstant({ interval: { start_time: T0, end_time: '2026-10-03T15:00:00.000000000Z' } }), T0_NS + HOUR)
  t.equal(manifestSigningInstant({ date: '2026-10-03' }), parseTimeNs('2026-10-04T00:00:00.000000000Z'))
  t.equal(manifestSigningInstant({ date: '2026-12-31' }), parseTimeNs('2027-01-01T00:00:00.000000000Z'))
  for (const bad of [null, {}, { date: '2026-10-3' }, { date: '2026-02-30' }, { interval: { end_time: '2026-10-03T15:00:00Z' } }]) {
    t.throws(() => manifestSigningInstant(bad), { code: 'sig.no-signing-time' }, JSON.stringify(bad))
  }
})

t.test('rotateKey closes the old key at `at` and adds a successor valid from `at`', async (t) => {
  const first = await newSigningKey({ validFrom: T0, seed: seed(1) })
  const jwks: PublicJwks = { keys: [first.publicJwk] }
  const at = T0_NS + 24n * HOUR
  const r = await rotateKey(jwks, first.privateJwk, at, { seed: seed(2) })
  t.equal(r.jwks.keys.length, 2)
  t.same(r.jwks.keys[0], { ...first.publicJwk, valid_until: formatTimeNs(at) })
  t.same(r.jwks.keys[1], r.publicJwk)
  t.equal(r.publicJwk.valid_from, formatTimeNs(at))
  t.equal(r.publicJwk.valid_until, undefined)
  t.equal(r.privateJwk.kid, r.publicJwk.kid)
  t.not(r.privateJwk.kid, first.privateJwk.kid)
  t.equal(jwks.keys[0]?.valid_until, undefined, 'the input set is not modified')
  await parseJwks(r.jwks)
  // Exactly one of the two keys is valid at every instant around the rotation.
  for (const ns of [at - 1n, at, at + 1n]) {
    const valid = r.jwks.keys.filter((k) => isKeyValidAt(k, ns)).map((k) => k.kid)
    t.same(valid, [ns < at ? first.publicJwk.kid : r.publicJwk.kid], `at ${formatTimeNs(ns)}`)
  }
  // A second rotation closes the successor.
  const r2 = await rotateKey(r.jwks, r.privateJwk, at + HOUR, { seed: seed(3) })
  t.same(r2.jwks.keys.map((k) => [k.valid_from, k.valid_until]), [
    [T0, formatTimeNs(at)],
    [formatTimeNs(at), formatTimeNs(at + HOUR)],
    [formatTimeNs(at + HOUR), undefined],
  ])

  t.equal((await rejection(rotateKey(jwks, first.privateJwk, T0_NS))) instanceof PipeError, true)
  t.equal(((await rejection(rotateKey(jwks, first.privateJwk, T0_NS))) as PipeError).code, 'keys.rotate-bad-time', 'not after valid_from')
  t.equal(((await rejection(rotateKey(r.jwks, first.privateJwk, at + HOUR))) as PipeError).code, 'keys.rotate-bad-time', 'old key already closed')
  const stranger = await newSigningKey({ validFrom: T0, seed: seed(9) })
  t.equal(((await rejection(rotateKey(jwks, stranger.privateJwk, at))) as PipeError).code, 'keys.rotate-unknown-key')
  t.equal(((await rejection(rotateKey(jwks, first.privateJwk, at, { seed: seed(1) }))) as PipeError).code, 'keys.rotate-duplicate-key')
  // Shortening a key that was already closed later is allowed.
  const shortened = await rotateKey(r2.jwks, r.privateJwk, at + HOUR / 2n, { seed: seed(4) })
  t.equal(shortened.jwks.keys[1]?.valid_until, formatTimeNs(at + HOUR / 2n))
})

t.test('parseJwks accepts a good set and keeps unknown members', async (t) => {
  const a = await newSigningKey({ validFrom: T0, validUntil: T0_NS + HOUR, seed: seed(1) })
  const b = await newSigningKey({ validFrom: T0_NS + HOUR, seed: seed(2) })
  const set = { keys: [{ ...a.publicJwk, note: 'first' }, b.publicJwk], publisher: 'x' }
  const parsed = await parseJwks(JSON.parse(JSON.stringify(set)))
  t.same(parsed, set)
  const minimal = { keys: [{ kty: 'OKP', crv: 'Ed25519', x: RFC8037_X, kid: RFC8037_KID, valid_from: T0 }] }
  t.same(await parseJwks(minimal), minimal, 'alg and use are optional')
  t.same(await parseJwks({ keys: [] }), { keys: [] })
})

t.test('parseJwks refuses bad sets with a message naming the field', async (t) => {
  const k = (await newSigningKey({ validFrom: T0, seed: seed(1) })).publicJwk
  const k2 = (await newSigningKey({ validFrom: T0, seed: seed(2) })).publicJwk
  const k3 = (await newSigningKey({ validFrom: T0, seed: seed(3) })).publicJwk
  const priv = (await newSigningKey({ validFrom: T0, seed: seed(3) })).privateJwk
  const cases: Array<[string, unknown, string[]]> = [
    ['private member d', { keys: [k, { ...k3, d: priv.d }] }, ['keys[1].d: private key member in a public JWK Set']],
    ['private member d with other faults', { keys: [{ ...k, x: 'abc', d: priv.d }] }, ['keys[0].d: private', 'keys[0].x: not base64url of 32 bytes']],
    ['symmetric k', { keys: [{ ...k, k: 'AAAA' }] }, ['keys[0].k: private']],
    ['short x', { keys: [k, k2, { ...k3, x: 'AAAA' }] }, ['keys[2].x: not base64url of 32 bytes']],
    ['padded x', { keys: [{ ...k, x: `${k.x}=` }] }, ['keys[0].x: not base64url of 32 bytes']],
    ['base64 (not url) x', { keys: [{ ...k, x: Buffer.from(k.x, 'base64url').toString('base64') }] }, ['keys[0].x: not base64url of 32 bytes']],
    ['missing x', { keys: [{ ...k, x: undefined }] }, ['keys[0].x: not base64url of 32 bytes']],
    ['wrong kty', { keys: [{ ...k, kty: 'EC' }] }, ['keys[0].kty: must be "OKP"']],
    ['wrong crv', { keys: [{ ...k, crv: 'X25519' }] }, ['keys[0].crv: must be "Ed25519"']],
    ['alg EdDSA', { keys: [{ ...k, alg: 'EdDSA' }] }, ['keys[0].alg: must be "Ed25519"']],
    ['use enc', { keys: [{ ...k, use: 'enc' }] }, ['keys[0].use: must be "sig"']],
    ['key_ops without verify', { keys: [{ ...k, key_ops: ['sign'] }] }, ['keys[0].key_ops: does not include "verify"']],
    ['kid not the thumbprint', { keys: [{ ...k, kid: k2.kid }] }, [`keys[0].kid: not the RFC 7638 thumbprint of the key (${k.kid})`]],
    ['missing kid', { keys: [{ ...k, kid: undefined }] }, ['keys[0].kid: missing']],
    ['duplicate kid', { keys: [k, k2, { ...k, valid_from: '2027-01-01T00:00:00.000000000Z' }] }, ['keys[2].kid: duplicate of keys[0].kid']],
    ['missing valid_from', { keys: [{ ...k, valid_from: undefined }] }, ['keys[0].valid_from: missing']],
    ['valid_from not nine digits', { keys: [{ ...k, valid_from: '2026-10-03T14:00:00Z' }] }, ['keys[0].valid_from: not a time']],
    ['valid_until not after valid_from', { keys: [{ ...k, valid_until: T0 }] }, ['keys[0].valid_until: not after valid_from']],
    ['keys missing', {}, ['keys: missing']],
    ['keys not an array', { keys: {} }, ['keys: must be an array']],
    ['a key not an object', { keys: [k, 'x'] }, ['keys[1]: must be an object']],
    ['not an object', [], ['JWK Set: must be an object']],
  ]
  for (const [name, value, fragments] of cases) {
    const clean = JSON.parse(JSON.stringify(value)) as unknown
    const err = await rejection(parseJwks(clean))
    t.test(name, async (t) => {
      expectKeyError(t, err, 'keys.jwks-invalid', ...fragments)
    })
  }
  const err = (await rejection(parseJwks({ keys: [k, k2, { ...k3, x: 'AAAA' }] }))) as KeyFileError
  t.same(err.issues, ['keys[2].x: not base64url of 32 bytes'])
  t.equal(err.location?.field, 'keys[2].x')
  t.equal(err.message, 'invalid JWK Set: keys[2].x: not base64url of 32 bytes')
})

t.test('parsePrivateJwk', async (t) => {
  const { privateJwk } = await newSigningKey({ validFrom: T0, seed: seed(5) })
  t.same(await parsePrivateJwk(JSON.parse(JSON.stringify(privateJwk))), privateJwk)
  const other = (await newSigningKey({ validFrom: T0, seed: seed(6) })).privateJwk
  expectKeyError(t, await rejection(parsePrivateJwk({ ...privateJwk, x: other.x, kid: other.kid })), 'keys.private-jwk-invalid', 'x: not the public key of d')
  expectKeyError(t, await rejection(parsePrivateJwk({ ...privateJwk, kid: other.kid })), 'keys.private-jwk-invalid', 'kid: not the RFC 7638 thumbprint')
  expectKeyError(t, await rejection(parsePrivateJwk({ ...privateJwk, d: undefined })), 'keys.private-jwk-invalid', 'd: not base64url of 32 bytes')
})

t.test('key files: private 0600, jwks.json canonical, atomic, no temp files left', async (t) => {
  const dir = await tempDir(t)
  const { privateJwk, publicJwk } = await newSigningKey({ validFrom: T0, seed: seed(1) })
  const jwks: PublicJwks = { keys: [publicJwk] }
  const { privatePath, jwksPath } = await writeKeyFiles(dir, { privateJwk, jwks })
  t.equal(privatePath, join(dir, privateKeyFileName(privateJwk.kid)))
  t.equal(jwksPath, join(dir, 'jwks.json'))
  t.equal((await stat(privatePath)).mode & 0o777, 0o600, 'private key file mode 0600')
  t.equal((await stat(jwksPath)).mode & 0o777, 0o644, 'jwks.json mode 0644')
  t.same((await readdir(dir)).sort(), [privateKeyFileName(privateJwk.kid), 'jwks.json'].sort(), 'no temporary files')
  const jwksText = await readFile(jwksPath, 'utf8')
  t.equal(
    jwksText,
    `{"keys":[{"alg":"Ed25519","crv":"Ed25519","kid":"${publicJwk.kid}","kty":"OKP","use":"sig","valid_from":"${T0}","x":"${publicJwk.x}"}]}`,
    'canonical JSON, keys sorted, no trailing newline',
  )
  t.same(await readJwksFile(jwksPath), jwks)
  t.same(await readPrivateJwkFile(privatePath), privateJwk)

  // Rotate and write again: files are replaced, modes kept, still no temporary files.
  const r = await rotateKey(jwks, privateJwk, T0_NS + HOUR, { seed: seed(2) })
  await writeKeyFiles(dir, { privateJwk: r.privateJwk, jwks: r.jwks })
  t.equal((await readdir(dir)).length, 3)
  t.same(await readJwksFile(jwksPath), r.jwks)
  t.equal((await stat(join(dir, privateKeyFileName(r.privateJwk.kid)))).mode & 0o777, 0o600)

  // A set carrying a private member is never written.
  const bad = { keys: [{ ...publicJwk, d: privateJwk.d }] } as unknown as PublicJwks
  expectKeyError(t, await rejection(writeJwksFile(join(dir, 'bad.json'), bad)), 'keys.jwks-invalid', 'keys[0].d: private key member in a public JWK Set')
  t.same((await readdir(dir)).length, 3, 'nothing written for the refused set')
  t.equal(((await rejection(writeKeyFiles(dir, { privateJwk: r.privateJwk, jwks }))) as PipeError).code, 'keys.key-not-in-set')

  const notJson = join(dir, 'not.json')
  await writeFile(notJson, '{"keys": [')
  expectKeyError(t, await rejection(readJwksFile(notJson)), 'keys.jwks-invalid', 'JWK Set: not JSON')
  await writePrivateJwkFile(join(dir, 'p.jwk'), privateJwk)
  t.equal((await stat(join(dir, 'p.jwk'))).mode & 0o777, 0o600)
})

t.test('writeFileAtomic', async (t) => {
  const dir = await tempDir(t)
  const p = join(dir, 'a.txt')
  await writeFileAtomic(p, 'one')
  t.equal(await readFile(p, 'utf8'), 'one')
  await writeFileAtomic(p, new Uint8Array([0x74, 0x77, 0x6f]), { mode: 0o640 })
  t.equal(await readFile(p, 'utf8'), 'two')
  t.equal((await stat(p)).mode & 0o777, 0o640, 'mode applied exactly, also when replacing')
  const big = Buffer.alloc(3 * 1024 * 1024, 0x61)
  await writeFileAtomic(p, big)
  t.equal((await readFile(p)).length, big.length)
  t.same(await readdir(dir), ['a.txt'], 'no temporary files')
  // A failing write (target is a directory) leaves the directory as it was and no temporary file.
  const sub = join(dir, 'sub')
  await writeFileAtomic(join(dir, 'keep'), 'k')
  await import('node:fs/promises').then((fs) => fs.mkdir(sub))
  await writeFile(join(sub, 'x'), 'x')
  const err = await rejection(writeFileAtomic(sub, 'data'))
  t.ok(err, 'renaming over a non-empty directory fails')
  t.same((await readdir(dir)).sort(), ['a.txt', 'keep', 'sub'], 'no temporary file after a failure')
  const missing = await rejection(writeFileAtomic(join(dir, 'nope', 'f'), 'x'))
  t.equal((missing as NodeJS.ErrnoException).code, 'ENOENT')
})

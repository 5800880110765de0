import { execFileSync } from 'node:child_process'
import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FlattenedSign } from 'jose'
import t, { type Test } from 'tap'
import { formatTimeNs, manifestSigningInstant, newSigningKey, privateKeyObject, rotateKey, type PrivateSigningJwk, type PublicJwks } from '../src/formats/record/keys/keys.js'
import { assertDetached, protectedHeaderJson, signDetached, verifyDetached, type VerifyResult } from '../src/formats/record/keys/jws.js'
import { hasTool, needs } from './helpers/tools.js'

const T0 = '2026-10-03T14:00:00.000000000Z'
const T0_NS = 1_791_036_000_000_000_000n
const HOUR = 3_600_000_000_000n

const MANIFEST = Buffer.from(
  '{"channel":"trades","format_version":1,"interval":{"end_time":"2026-10-03T15:00:00.000000000Z","start_time":"2026-10-03T14:00:00.000000000Z"},"previous_manifest_blake3":null,"recorder":"r1","venue":"v"}',
  'utf8',
)

function seed(byte: number): Uint8Array {
  return new Uint8Array(32).fill(byte)
}

const b64u = (s: string | Uint8Array): string => Buffer.from(s).toString('base64url')

/** An independent signer (node:crypto directly, no code under test): any header text, any payload. */
function signWithHeader(headerText: string, payload: Uint8Array, jwk: PrivateSigningJwk): string {
  const key = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', d: jwk.d, x: jwk.x }, format: 'jwk' })
  const h = b64u(headerText)
  const sig = sign(null, Buffer.concat([Buffer.from(`${h}.`, 'ascii'), payload]), key)
  return `${h}..${b64u(sig)}`
}

async function fixture(validUntil?: bigint) {
  const k = await newSigningKey({ validFrom: T0, seed: seed(1), ...(validUntil !== undefined ? { validUntil } : {}) })
  const jwks: PublicJwks = { keys: [k.publicJwk] }
  return { ...k, jwks }
}

function expectFail(t: Test, r: VerifyResult, code: string, detail?: RegExp): void {
  t.equal(r.ok, false, 'refused')
  if (!r.ok) {
    t.equal(r.code, code)
    if (detail) t.match(r.detail, detail)
  }
}

t.test('signDetached writes a compact detached JWS with the canonical b64:false header', async (t) => {
  const { privateJwk, jwks } = await fixture()
  const sig = signDetached(MANIFEST, privateJwk)
  const parts = sig.split('.')
  t.equal(parts.length, 3)
  t.equal(parts[1], '', 'the payload part is empty (detached)')
  const header = Buffer.from(parts[0] as string, 'base64url').toString('utf8')
  t.equal(header, `{"alg":"Ed25519","b64":false,"crit":["b64"],"kid":"${privateJwk.kid}"}`)
  t.equal(header, protectedHeaderJson(privateJwk.kid))
  t.equal(Buffer.from(parts[2] as string, 'base64url').length, 64)
  t.match(sig, /^[A-Za-z0-9_-]+\.\.[A-Za-z0-9_-]+$/, 'ASCII, no newline, no padding')
  t.same(await verifyDetached(MANIFEST, sig, jwks, T0_NS + HOUR), { ok: true, kid: privateJwk.kid })
  t.equal(await assertDetached(MANIFEST, sig, jwks, T0_NS + HOUR), privateJwk.kid)
  t.same(await verifyDetached(MANIFEST, `${sig}\n`, jwks, T0_NS + HOUR), { ok: true, kid: privateJwk.kid }, 'one trailing LF is accepted')
  t.same(await verifyDetached(MANIFEST, Buffer.from(sig, 'ascii'), jwks, T0_NS + HOUR), { ok: true, kid: privateJwk.kid }, 'the file bytes may be passed as they are')
  expectFail(t, await verifyDetached(MANIFEST, Buffer.concat([Buffer.from(sig), Buffer.from([0xc3, 0xa9])]), jwks, T0_NS + HOUR), 'sig.malformed')
  t.same(await verifyDetached(new Uint8Array(0), signDetached(new Uint8Array(0), privateJwk), jwks, T0_NS), { ok: true, kid: privateJwk.kid }, 'empty payload')
})

t.test('signatures are deterministic and equal what jose FlattenedSign makes', async (t) => {
  const { privateJwk } = await fixture()
  const a = signDetached(MANIFEST, privateJwk)
  t.equal(signDetached(MANIFEST, privateJwk), a)
  const key = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', d: privateJwk.d, x: privateJwk.x }, format: 'jwk' })
  const jws = await new FlattenedSign(MANIFEST).setProtectedHeader({ alg: 'Ed25519', b64: false, crit: ['b64'], kid: privateJwk.kid }).sign(key)
  t.equal(`${jws.protected}..${jws.signature}`, a)
})

t.test('node:crypto verifies the signature over ASCII(BASE64URL(header)) || "." || payload', async (t) => {
  const { privateJwk, publicJwk } = await fixture()
  const [h, , s] = signDetached(MANIFEST, privateJwk).split('.') as [string, string, string]
  const pub = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicJwk.x }, format: 'jwk' })
  t.ok(verify(null, Buffer.concat([Buffer.from(`${h}.`), MANIFEST]), pub, Buffer.from(s, 'base64url')))
  t.notOk(verify(null, Buffer.concat([Buffer.from(`${h}.`), Buffer.from(b64u(MANIFEST))]), pub, Buffer.from(s, 'base64url')), 'not over the base64url payload')
})

t.test('RFC 8037 A.4: the key import signs the published vector; its attached EdDSA JWS is refused', async (t) => {
  const a1 = await newSigningKey({ validFrom: T0, seed: Buffer.from('nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A', 'base64url') })
  const input = 'eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc'
  const expected = 'hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg'
  t.equal(b64u(sign(null, Buffer.from(input), privateKeyObject(a1.privateJwk))), expected)
  const jwks = { keys: [a1.publicJwk] }
  const payload = Buffer.from('Example of Ed25519 signing')
  expectFail(t, await verifyDetached(payload, `${input}.${expected}`, jwks, T0_NS), 'sig.malformed', /not a detached JWS/)
  expectFail(t, await verifyDetached(payload, `eyJhbGciOiJFZERTQSJ9..${expected}`, jwks, T0_NS), 'sig.header', /alg is "EdDSA"/)
})

t.test('tampering is detected', async (t) => {
  const { privateJwk, jwks } = await fixture()
  const sig = signDetached(MANIFEST, privateJwk)
  const at = T0_NS + HOUR
  const flipped = Buffer.from(MANIFEST)
  flipped[10] = (flipped[10] as number) ^ 1
  expectFail(t, await verifyDetached(flipped, sig, jwks, at), 'sig.bad-signature', /does not verify/)
  expectFail(t, await verifyDetached(Buffer.concat([MANIFEST, Buffer.from('\n')]), sig, jwks, at), 'sig.bad-signature')
  expectFail(t, await verifyDetached(MANIFEST.subarray(0, -1), sig, jwks, at), 'sig.bad-signature')
  const [h, , s] = sig.split('.') as [string, string, string]
  const sigBytes = Buffer.from(s, 'base64url')
  sigBytes[0] = (sigBytes[0] as number) ^ 0x80
  expectFail(t, await verifyDetached(MANIFEST, `${h}..${b64u(sigBytes)}`, jwks, at), 'sig.bad-signature')
  // Another key of the set with the same kid cannot exist (kid = thumbprint), but a header naming a
  // different key of the set over this signature fails.
  const other = await newSigningKey({ validFrom: T0, seed: seed(2) })
  const both = { keys: [...jwks.keys, other.publicJwk] }
  const swapped = `${b64u(protectedHeaderJson(other.publicJwk.kid))}..${s}`
  expectFail(t, await verifyDetached(MANIFEST, swapped, both, at), 'sig.bad-signature')
})

t.test('unknown kid', async (t) => {
  const { privateJwk } = await fixture()
  const other = await newSigningKey({ validFrom: T0, seed: seed(2) })
  const r = await verifyDetached(MANIFEST, signDetached(MANIFEST, privateJwk), { keys: [other.publicJwk] }, T0_NS + HOUR)
  expectFail(t, r, 'sig.unknown-key', new RegExp(privateJwk.kid))
  t.equal(r.ok ? '' : r.kid, privateJwk.kid)
  expectFail(t, await verifyDetached(MANIFEST, signDetached(MANIFEST, privateJwk), { keys: [] }, T0_NS), 'sig.unknown-key')
})

t.test('the key must be valid at the signing instant', async (t) => {
  const { privateJwk, jwks } = await fixture(T0_NS + 2n * HOUR) // valid [14:00, 16:00)
  const sig = signDetached(MANIFEST, privateJwk)
  t.same(await verifyDetached(MANIFEST, sig, jwks, T0_NS), { ok: true, kid: privateJwk.kid }, 'valid_from is inclusive')
  t.same(await verifyDetached(MANIFEST, sig, jwks, T0_NS + 2n * HOUR - 1n), { ok: true, kid: privateJwk.kid })
  expectFail(t, await verifyDetached(MANIFEST, sig, jwks, T0_NS + 2n * HOUR), 'sig.key-not-valid-at-time', /expired before the signing instant 2026-10-03T16:00:00.000000000Z/)
  expectFail(t, await verifyDetached(MANIFEST, sig, jwks, T0_NS + 1000n * HOUR), 'sig.key-not-valid-at-time', /expired/)
  expectFail(t, await verifyDetached(MANIFEST, sig, jwks, T0_NS - 1n), 'sig.key-not-valid-at-time', /not yet valid at the signing instant 2026-10-03T13:59:59.999999999Z/)
  // A bad signature by an expired key reports the bad signature: the validity code means the key signed.
  expectFail(t, await verifyDetached(Buffer.from('x'), sig, jwks, T0_NS + 2n * HOUR), 'sig.bad-signature')
})

t.test('rotation: each manifest is judged at its interval end', async (t) => {
  const first = await newSigningKey({ validFrom: T0, seed: seed(1) })
  const at = T0_NS + 3n * HOUR // 17:00
  const r = await rotateKey({ keys: [first.publicJwk] }, first.privateJwk, at, { seed: seed(2) })
  const hour = (start: bigint) => ({ interval: { start_time: formatTimeNs(start), end_time: formatTimeNs(start + HOUR) } })
  const before = hour(at - 2n * HOUR) // 15:00-16:00, ends before the rotation
  const last = hour(at - HOUR) // 16:00-17:00, ends exactly at the rotation instant
  const after = hour(at) // 17:00-18:00
  const bytes = (m: unknown) => Buffer.from(JSON.stringify(m))
  const check = async (m: unknown, key: PrivateSigningJwk) => verifyDetached(bytes(m), signDetached(bytes(m), key), r.jwks, manifestSigningInstant(m))
  t.equal((await check(before, first.privateJwk)).ok, true, 'old key for an hour that ended before the rotation')
  expectFail(t, await check(before, r.privateJwk), 'sig.key-not-valid-at-time', /not yet valid/)
  expectFail(t, await check(last, first.privateJwk), 'sig.key-not-valid-at-time', /expired/)
  t.equal((await check(last, r.privateJwk)).ok, true, 'the hour ending at the rotation instant is signed with the successor')
  t.equal((await check(after, r.privateJwk)).ok, true)
  expectFail(t, await check(after, first.privateJwk), 'sig.key-not-valid-at-time')
  // A daily manifest is judged at 00:00 of the next day.
  const day = { date: '2026-10-03' }
  t.equal((await check(day, r.privateJwk)).ok, true)
  expectFail(t, await check(day, first.privateJwk), 'sig.key-not-valid-at-time')
})

t.test('header rules', async (t) => {
  const { privateJwk, jwks } = await fixture()
  const kid = privateJwk.kid
  const at = T0_NS + HOUR
  const run = (header: string) => verifyDetached(MANIFEST, signWithHeader(header, MANIFEST, privateJwk), jwks, at)
  const ok = { ok: true, kid }

  t.same(await run(`{"alg":"Ed25519","b64":false,"crit":["b64"],"kid":"${kid}"}`), ok, 'the independent signer agrees')
  t.same(await run(`{ "kid": "${kid}", "crit": ["b64"], "b64": false, "alg": "Ed25519" }`), ok, 'member order and whitespace are free')
  t.same(await run(`{"alg":"Ed25519","b64":false,"crit":["b64"],"kid":"${kid}","typ":"JOSE"}`), ok, 'a non-critical extra member is ignored')
  t.same(await run(`{"alg":"Ed25519","b64":false,"crit":["b64"],"kid":"${kid}","x":{"kid":"a","kid":"b"}}`), ok, 'nested repeats are not top-level duplicates')

  const cases: Array<[string, string, RegExp]> = [
    ['b64 true', `{"alg":"Ed25519","b64":true,"crit":["b64"],"kid":"${kid}"}`, /b64 is true/],
    ['b64 absent', `{"alg":"Ed25519","crit":["b64"],"kid":"${kid}"}`, /b64 is undefined/],
    ['b64 "false"', `{"alg":"Ed25519","b64":"false","crit":["b64"],"kid":"${kid}"}`, /b64 is "false"/],
    ['crit missing', `{"alg":"Ed25519","b64":false,"kid":"${kid}"}`, /crit is missing/],
    ['crit a string', `{"alg":"Ed25519","b64":false,"crit":"b64","kid":"${kid}"}`, /crit is missing or not an array/],
    ['crit empty', `{"alg":"Ed25519","b64":false,"crit":[],"kid":"${kid}"}`, /crit is \[\]/],
    ['crit repeats b64', `{"alg":"Ed25519","b64":false,"crit":["b64","b64"],"kid":"${kid}"}`, /crit is \["b64","b64"\]/],
    ['unknown crit', `{"alg":"Ed25519","b64":false,"crit":["b64","exp"],"exp":1,"kid":"${kid}"}`, /crit names "exp"/],
    ['alg EdDSA', `{"alg":"EdDSA","b64":false,"crit":["b64"],"kid":"${kid}"}`, /alg is "EdDSA"/],
    ['alg none', `{"alg":"none","b64":false,"crit":["b64"],"kid":"${kid}"}`, /alg is "none"/],
    ['alg missing', `{"b64":false,"crit":["b64"],"kid":"${kid}"}`, /alg is undefined/],
    ['kid missing', `{"alg":"Ed25519","b64":false,"crit":["b64"]}`, /kid is missing/],
    ['kid a number', `{"alg":"Ed25519","b64":false,"crit":["b64"],"kid":5}`, /kid is missing/],
    ['duplicate kid', `{"alg":"Ed25519","b64":false,"crit":["b64"],"kid":"other","kid":"${kid}"}`, /"kid" appears twice/],
    ['duplicate alg by escape', `{"alg":"HS256","b64":false,"crit":["b64"],"kid":"${kid}","\\u0061lg":"Ed25519"}`, /"alg" appears twice/],
  ]
  for (const [name, header, detail] of cases) {
    t.comment(name)
    JSON.parse(header) // every case is valid JSON
    expectFail(t, await run(header), 'sig.header', detail)
  }
})

t.test('malformed signature files', async (t) => {
  const { privateJwk, jwks } = await fixture()
  const sig = signDetached(MANIFEST, privateJwk)
  const [h, , s] = sig.split('.') as [string, string, string]
  const at = T0_NS + HOUR
  const sig63 = b64u(Buffer.from(s, 'base64url').subarray(0, 63))
  // 64 bytes take 86 characters carrying 4 spare bits; changing those gives the same bytes.
  const last = s[s.length - 1] as string
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const sameBytes = s.slice(0, -1) + alphabet[alphabet.indexOf(last) ^ 1]
  t.same(Buffer.from(sameBytes, 'base64url'), Buffer.from(s, 'base64url'), 'non-canonical encoding decodes to the same bytes')
  const cases: Array<[string, string, RegExp]> = [
    ['empty', '', /3 dot-separated parts, found 1/],
    ['two parts', `${h}.${s}`, /found 2/],
    ['four parts', `${h}...${s}`, /found 4/],
    ['attached payload', `${h}.${b64u(MANIFEST)}.${s}`, /not a detached JWS/],
    ['empty header', `..${s}`, /header is not base64url/],
    ['padded header', `${h}=..${s}`, /header is not base64url/],
    ['standard base64 signature', `${h}..${Buffer.from(s, 'base64url').toString('base64')}`, /signature is not base64url/],
    ['non-canonical signature encoding', `${h}..${sameBytes}`, /signature is not base64url/],
    ['63-byte signature', `${h}..${sig63}`, /64 bytes, found 63/],
    ['CRLF', `${sig}\r\n`, /signature is not base64url/],
    ['two newlines', `${sig}\n\n`, /signature is not base64url/],
    ['header not JSON', `${b64u('{"alg":')}..${s}`, /not UTF-8 JSON/],
    ['header not UTF-8', `${b64u(Buffer.from([0x7b, 0xff, 0x7d]))}..${s}`, /not UTF-8 JSON/],
    ['header an array', `${b64u('["alg"]')}..${s}`, /not a JSON object/],
    ['header null', `${b64u('null')}..${s}`, /not a JSON object/],
  ]
  for (const [name, text, detail] of cases) {
    t.comment(name)
    expectFail(t, await verifyDetached(MANIFEST, text, jwks, at), 'sig.malformed', detail)
  }
  await t.rejects(assertDetached(MANIFEST, '', jwks, at), { code: 'sig.malformed' })
})

function opensslMajor(): number {
  try {
    const v = execFileSync('openssl', ['version'], { encoding: 'utf8' })
    return Number(/OpenSSL (\d+)\./.exec(v)?.[1] ?? 0)
  } catch {
    return 0
  }
}

/** openssl on PATH (else skipped, and failed under PIPE_REQUIRE_TOOLS=1), and version 3 for pkeyutl -rawin. */
const openssl3 = () => (!hasTool('openssl') || opensslMajor() >= 3 ? needs('openssl') : { skip: 'needs OpenSSL 3 (pkeyutl -rawin)' })

t.test('interoperability with openssl pkeyutl -rawin', openssl3(), async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'record-jws-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const { privateJwk, publicJwk, jwks } = await fixture()
  const pubPem = join(dir, 'pub.pem')
  const privPem = join(dir, 'priv.pem')
  await writeFile(pubPem, createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicJwk.x }, format: 'jwk' }).export({ type: 'spki', format: 'pem' }))
  await writeFile(privPem, privateKeyObject(privateJwk).export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
  const openssl = (args: string[]) => execFileSync('openssl', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })

  // Ours -> openssl.
  const sig = signDetached(MANIFEST, privateJwk)
  const [h, , s] = sig.split('.') as [string, string, string]
  const input = join(dir, 'input')
  const sigFile = join(dir, 'sig')
  await writeFile(input, Buffer.concat([Buffer.from(`${h}.`), MANIFEST]))
  await writeFile(sigFile, Buffer.from(s, 'base64url'))
  const out = openssl(['pkeyutl', '-verify', '-pubin', '-inkey', pubPem, '-rawin', '-in', input, '-sigfile', sigFile])
  t.match(out, 'Signature Verified Successfully')
  // openssl refuses a tampered input (exit status 1).
  await writeFile(join(dir, 'input2'), Buffer.concat([Buffer.from(`${h}.`), MANIFEST, Buffer.from(' ')]))
  t.throws(() => openssl(['pkeyutl', '-verify', '-pubin', '-inkey', pubPem, '-rawin', '-in', join(dir, 'input2'), '-sigfile', sigFile]))

  // openssl -> ours: a signature made by openssl over the signing input verifies.
  const payload = Buffer.from('{"date":"2026-10-03","format_version":1}')
  const header = b64u(protectedHeaderJson(privateJwk.kid))
  const input3 = join(dir, 'input3')
  const sig3 = join(dir, 'sig3')
  await writeFile(input3, Buffer.concat([Buffer.from(`${header}.`), payload]))
  openssl(['pkeyutl', '-sign', '-inkey', privPem, '-rawin', '-in', input3, '-out', sig3])
  const sigBytes = await readFile(sig3)
  t.equal(sigBytes.length, 64)
  const text = `${header}..${b64u(sigBytes)}`
  t.same(await verifyDetached(payload, text, jwks, T0_NS + HOUR), { ok: true, kid: privateJwk.kid })
  t.equal(text, signDetached(payload, privateJwk), 'openssl and signDetached make the same bytes (Ed25519 is deterministic)')
  expectFail(t, await verifyDetached(Buffer.concat([payload, Buffer.from(' ')]), text, jwks, T0_NS + HOUR), 'sig.bad-signature')
})

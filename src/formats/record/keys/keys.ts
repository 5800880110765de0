/**
 * Ed25519 signing keys of the record format (spec "Signatures"): OKP JWKs (RFC 8037) whose `kid` is
 * the RFC 7638 thumbprint, published as a JWK Set (RFC 7517) in `jwks.json`.
 *
 * Validity. Each public key in the set carries two extension members in the format's time encoding
 * (`YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`, UTC): `valid_from` (required, inclusive) and `valid_until`
 * (optional, exclusive; absent means open-ended). A key is valid at instant t when
 * valid_from <= t < valid_until. The instant at which a manifest's signature is judged is its
 * interval's end (see `manifestSigningInstant`): the earliest moment the manifest can have been signed.
 */
import { formatTime, tryParseTime } from '../time.js'
import canonicalize from 'canonicalize'
import { createPrivateKey, createPublicKey, randomBytes, type KeyObject } from 'node:crypto'
import { join } from 'node:path'
import { calculateJwkThumbprint } from 'jose'
import { z } from 'zod'
import { writeFileAtomic } from '../../../core/atomic-write.js'
import { PipeError } from '../../../core/errors.js'
import { readInputFile, type ReadLimit } from '../../../core/input-file.js'

/** A public signing key as it appears in `jwks.json`. Members this code does not know are kept. */
export interface PublicSigningJwk {
  kty: 'OKP'
  crv: 'Ed25519'
  /** base64url (no padding) of the 32-byte public key. */
  x: string
  /** RFC 7638 thumbprint (SHA-256, base64url) of `{"crv","kty","x"}`. */
  kid: string
  alg?: 'Ed25519'
  use?: 'sig'
  /** Inclusive start of validity, `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`. */
  valid_from: string
  /** Exclusive end of validity; absent means open-ended. */
  valid_until?: string
  [member: string]: unknown
}

/** A private signing key as written to its 0600 key file. Carries no validity: the JWK Set is its one home. */
export interface PrivateSigningJwk {
  kty: 'OKP'
  crv: 'Ed25519'
  x: string
  /** base64url of the 32-byte Ed25519 seed (RFC 8032 private key). */
  d: string
  kid: string
  alg: 'Ed25519'
  use: 'sig'
}

export interface PublicJwks {
  keys: PublicSigningJwk[]
  [member: string]: unknown
}

/** Thrown for a JWK Set or private JWK that fails validation; `issues` lists every problem as `field: message`. */
export class KeyFileError extends PipeError {
  readonly issues: string[]
  constructor(code: string, what: string, issues: string[], file?: string) {
    const first = issues[0] ?? ''
    const field = first.slice(0, first.indexOf(':'))
    super(code, `invalid ${what}: ${issues.join('; ')}`, { location: { ...(file ? { file } : {}), ...(field ? { field } : {}) } })
    this.name = 'KeyFileError'
    this.issues = issues
  }
}


/** The format's one encoding of an instant (shared with the raw file: src/formats/record/time.ts). */
export const formatTimeNs = formatTime

/** The instant of a nine-digit UTC time string, or undefined when it is not exactly that encoding. */
export function parseTimeNs(s: string): bigint | undefined {
  return tryParseTime(s) ?? undefined
}

function toTimeString(t: bigint | string, what: string): string {
  if (typeof t === 'bigint') return formatTimeNs(t)
  if (parseTimeNs(t) === undefined) {
    throw new PipeError('keys.bad-time', `${what}: ${JSON.stringify(t)} is not a time in the form YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`)
  }
  return t
}

function toTimeNs(t: bigint | string, what: string): bigint {
  return typeof t === 'bigint' ? t : (parseTimeNs(toTimeString(t, what)) as bigint)
}

// ---------------------------------------------------------------------------------------------------
// Encodings and key objects

/** PKCS#8 DER of an Ed25519 private key is this 16-byte prefix followed by the 32-byte seed (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')

/** True when `s` is unpadded base64url in its one canonical form and decodes to `bytes` bytes. */
export function isBase64urlOfLength(s: unknown, bytes: number): s is string {
  if (typeof s !== 'string' || !/^[A-Za-z0-9_-]*$/.test(s)) return false
  const buf = Buffer.from(s, 'base64url')
  return buf.length === bytes && buf.toString('base64url') === s
}

function privateKeyFromSeed(seed: Uint8Array): KeyObject {
  if (seed.length !== 32) throw new PipeError('keys.bad-seed', `an Ed25519 seed is 32 bytes, got ${seed.length}`)
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' })
}

/** base64url of the public key of a 32-byte seed. */
function publicXOfSeed(seed: Uint8Array): string {
  const jwk = createPublicKey(privateKeyFromSeed(seed)).export({ format: 'jwk' })
  return jwk.x as string
}

/** A node:crypto private key from a private JWK (built from `d` alone; `x` is checked against it). */
export function privateKeyObject(jwk: Pick<PrivateSigningJwk, 'd' | 'x'>): KeyObject {
  if (!isBase64urlOfLength(jwk.d, 32)) throw new PipeError('keys.private-jwk-invalid', 'd: not base64url of 32 bytes')
  const seed = Buffer.from(jwk.d, 'base64url')
  const key = privateKeyFromSeed(seed)
  const x = createPublicKey(key).export({ format: 'jwk' }).x
  if (x !== jwk.x) throw new PipeError('keys.private-jwk-invalid', 'x: not the public key of d')
  return key
}

/** A node:crypto public key (SPKI) from a public JWK's `x`. */
export function publicKeyObject(jwk: Pick<PublicSigningJwk, 'x'>): KeyObject {
  if (!isBase64urlOfLength(jwk.x, 32)) throw new PipeError('keys.jwks-invalid', 'x: not base64url of 32 bytes')
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' })
}

/** RFC 7638 thumbprint of an Ed25519 public key: SHA-256 of `{"crv":"Ed25519","kty":"OKP","x":...}`, base64url. */
export async function ed25519Thumbprint(x: string): Promise<string> {
  return calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x }, 'sha256')
}

// ---------------------------------------------------------------------------------------------------
// Creating and rotating keys

export interface NewSigningKeyOptions {
  /** Start of the key's validity (inclusive): int64 ns since the epoch, or the nine-digit time string. */
  validFrom: bigint | string
  /** End of validity (exclusive); absent means open-ended. */
  validUntil?: bigint | string
  /** 32-byte Ed25519 seed for a deterministic key (golden data); random when absent. */
  seed?: Uint8Array
}

export interface SigningKeyPair {
  privateJwk: PrivateSigningJwk
  publicJwk: PublicSigningJwk
}

/** A new Ed25519 key: the private JWK (for the key file) and its public JWK with validity (for the JWK Set). */
export async function newSigningKey(opts: NewSigningKeyOptions): Promise<SigningKeyPair> {
  const validFrom = toTimeString(opts.validFrom, 'validFrom')
  const validUntil = opts.validUntil === undefined ? undefined : toTimeString(opts.validUntil, 'validUntil')
  if (validUntil !== undefined && (parseTimeNs(validUntil) as bigint) <= (parseTimeNs(validFrom) as bigint)) {
    throw new PipeError('keys.bad-time', `validUntil ${validUntil} is not after validFrom ${validFrom}`)
  }
  const seed = opts.seed ?? randomBytes(32)
  const x = publicXOfSeed(seed)
  const d = Buffer.from(seed).toString('base64url')
  const kid = await ed25519Thumbprint(x)
  const privateJwk: PrivateSigningJwk = { kty: 'OKP', crv: 'Ed25519', x, d, kid, alg: 'Ed25519', use: 'sig' }
  const publicJwk: PublicSigningJwk = { kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'Ed25519', use: 'sig', valid_from: validFrom }
  if (validUntil !== undefined) publicJwk.valid_until = validUntil
  return { privateJwk, publicJwk }
}

/** The public half of a private JWK, with the given validity. */
export function publicJwkOf(privateJwk: PrivateSigningJwk, validity: { validFrom: bigint | string; validUntil?: bigint | string }): PublicSigningJwk {
  const pub: PublicSigningJwk = {
    kty: 'OKP',
    crv: 'Ed25519',
    x: privateJwk.x,
    kid: privateJwk.kid,
    alg: 'Ed25519',
    use: 'sig',
    valid_from: toTimeString(validity.validFrom, 'validFrom'),
  }
  if (validity.validUntil !== undefined) pub.valid_until = toTimeString(validity.validUntil, 'validUntil')
  return pub
}

export interface RotatedKeys {
  /** The new set: every old key (the rotated one now closed at `at`) followed by the successor. */
  jwks: PublicJwks
  /** The successor's private JWK; write it with `writePrivateJwkFile`. */
  privateJwk: PrivateSigningJwk
  publicJwk: PublicSigningJwk
}

/**
 * Replaces the key of `oldPrivateJwk` from instant `at` on: the old key's `valid_until` becomes `at`
 * and a new key valid from `at` (open-ended) is appended. Manifests whose interval ends before `at`
 * stay with the old key, so keep its private file until every such manifest is signed. `at` may lie
 * in the past (revoking a compromised key): manifests ending at or after `at` must then be signed
 * again with the successor. Does not modify its arguments.
 */
export async function rotateKey(
  jwks: PublicJwks,
  oldPrivateJwk: PrivateSigningJwk,
  at: bigint | string,
  opts: { seed?: Uint8Array } = {},
): Promise<RotatedKeys> {
  const atNs = toTimeNs(at, 'at')
  const index = jwks.keys.findIndex((k) => k.kid === oldPrivateJwk.kid)
  const old = jwks.keys[index]
  if (!old || old.x !== oldPrivateJwk.x) {
    throw new PipeError('keys.rotate-unknown-key', `key ${oldPrivateJwk.kid} is not in the JWK Set`)
  }
  const from = parseTimeNs(old.valid_from)
  if (from === undefined || atNs <= from) {
    throw new PipeError('keys.rotate-bad-time', `rotation time ${formatTimeNs(atNs)} is not after the old key's valid_from ${old.valid_from}`)
  }
  if (old.valid_until !== undefined) {
    const until = parseTimeNs(old.valid_until)
    if (until === undefined || until < atNs) {
      throw new PipeError('keys.rotate-bad-time', `the old key's validity already ended at ${old.valid_until}, before ${formatTimeNs(atNs)}`)
    }
  }
  const next = await newSigningKey({ validFrom: atNs, ...(opts.seed ? { seed: opts.seed } : {}) })
  if (jwks.keys.some((k) => k.kid === next.publicJwk.kid)) {
    throw new PipeError('keys.rotate-duplicate-key', `the successor key ${next.publicJwk.kid} is already in the JWK Set`)
  }
  const keys = jwks.keys.map((k, i) => (i === index ? { ...k, valid_until: formatTimeNs(atNs) } : { ...k }))
  keys.push(next.publicJwk)
  return { jwks: { ...jwks, keys }, privateJwk: next.privateJwk, publicJwk: next.publicJwk }
}

// ---------------------------------------------------------------------------------------------------
// Validity

export type KeyValidity = 'valid' | 'not-yet-valid' | 'expired'

/** Where instant `ns` lies against the key's [valid_from, valid_until). */
export function keyValidityAt(jwk: Pick<PublicSigningJwk, 'valid_from' | 'valid_until'>, ns: bigint): KeyValidity {
  const from = parseTimeNs(jwk.valid_from)
  if (from === undefined || ns < from) return 'not-yet-valid'
  if (jwk.valid_until !== undefined) {
    const until = parseTimeNs(jwk.valid_until)
    if (until === undefined || ns >= until) return 'expired'
  }
  return 'valid'
}

/** valid_from <= ns < valid_until (valid_until absent: open-ended). */
export function isKeyValidAt(jwk: Pick<PublicSigningJwk, 'valid_from' | 'valid_until'>, ns: bigint): boolean {
  return keyValidityAt(jwk, ns) === 'valid'
}

/**
 * Why check 6 would refuse a signature by `privateJwk` judged at `instant` against `jwks`, or undefined when
 * it would accept it: the set must hold the key (its kid, with the same public key) valid at that instant.
 */
export function signingRefusal(jwks: PublicJwks, privateJwk: Pick<PrivateSigningJwk, 'kid' | 'x'>, instant: bigint): string | undefined {
  const published = jwks.keys.find((k) => k.kid === privateJwk.kid)
  if (!published) return `key ${privateJwk.kid} is not in the key set`
  if (published.x !== privateJwk.x) return `the key set's key ${privateJwk.kid} is not the public key of this private key`
  const validity = keyValidityAt(published, instant)
  if (validity === 'valid') return undefined
  const span = `valid from ${published.valid_from}${published.valid_until ? ` until ${published.valid_until}` : ', open-ended'}`
  return `key ${privateJwk.kid} is ${span}, so it is ${validity === 'expired' ? 'no longer' : 'not yet'} valid at ${formatTimeNs(instant)}`
}

/**
 * The instant at which a manifest's signature is judged: the end of the interval the manifest covers,
 * the earliest moment it can have been signed. Hourly manifest: `interval.end_time`. Daily manifest:
 * 00:00:00 UTC of the day after `date`. Throws `sig.no-signing-time` for anything else.
 */
export function manifestSigningInstant(manifest: unknown): bigint {
  const m = manifest as { interval?: { end_time?: unknown }; date?: unknown } | null
  if (m && typeof m === 'object') {
    const end = m.interval && typeof m.interval === 'object' ? m.interval.end_time : undefined
    if (typeof end === 'string') {
      const ns = parseTimeNs(end)
      if (ns !== undefined) return ns
      throw new PipeError('sig.no-signing-time', `interval.end_time ${JSON.stringify(end)} is not a time`)
    }
    if (typeof m.date === 'string') {
      const ns = /^\d{4}-\d{2}-\d{2}$/.test(m.date) ? parseTimeNs(`${m.date}T00:00:00.000000000Z`) : undefined
      if (ns !== undefined) return ns + 86_400_000_000_000n
      throw new PipeError('sig.no-signing-time', `date ${JSON.stringify(m.date)} is not a date`)
    }
  }
  throw new PipeError('sig.no-signing-time', 'the manifest has neither interval.end_time nor date')
}

// ---------------------------------------------------------------------------------------------------
// Reading and validating

/** Members that hold private or symmetric key material in any JWK type (RFC 7518, RFC 8037). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const

function expected(what: string) {
  return (iss: { input?: unknown }) => (iss.input === undefined ? 'missing' : `must be ${what}`)
}

const timeString = z
  .string({ error: expected('a string') })
  .refine((s) => parseTimeNs(s) !== undefined, 'not a time in the form YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ')

const bytes32 = z.custom<string>((s) => isBase64urlOfLength(s, 32), 'not base64url of 32 bytes')

const publicKeySchema = z.looseObject(
  {
    kty: z.literal('OKP', { error: expected('"OKP"') }),
    crv: z.literal('Ed25519', { error: expected('"Ed25519"') }),
    x: bytes32,
    kid: z.string({ error: expected('a string') }).min(1, 'empty'),
    alg: z.literal('Ed25519', { error: expected('"Ed25519"') }).optional(),
    use: z.literal('sig', { error: expected('"sig"') }).optional(),
    key_ops: z
      .array(z.string(), { error: expected('an array of strings') })
      .refine((ops) => ops.includes('verify'), 'does not include "verify"')
      .optional(),
    valid_from: timeString,
    valid_until: timeString.optional(),
  },
  { error: expected('an object') },
)

const jwksSchema = z.looseObject({ keys: z.array(publicKeySchema, { error: expected('an array') }) }, { error: expected('an object') })

const privateKeySchema = z.looseObject(
  {
    kty: z.literal('OKP', { error: expected('"OKP"') }),
    crv: z.literal('Ed25519', { error: expected('"Ed25519"') }),
    x: bytes32,
    d: bytes32,
    kid: z.string({ error: expected('a string') }).min(1, 'empty'),
    alg: z.literal('Ed25519', { error: expected('"Ed25519"') }).optional(),
    use: z.literal('sig', { error: expected('"sig"') }).optional(),
  },
  { error: expected('an object') },
)

function fieldName(path: readonly PropertyKey[], root: string): string {
  let out = ''
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? String(p) : `.${String(p)}`
  return out === '' ? root : out
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/**
 * Validates a JWK Set of record-format signing keys and returns it typed. Every problem is reported,
 * each naming its field (`keys[2].x: not base64url of 32 bytes`): a member other than OKP/Ed25519,
 * a private member such as `d`, a `kid` that is not the key's RFC 7638 thumbprint, a `kid` held twice,
 * a missing or malformed `valid_from`, a `valid_until` not after `valid_from`. Unknown members are kept.
 */
export async function parseJwks(value: unknown, file?: string): Promise<PublicJwks> {
  const issues: string[] = []
  // Private members are looked for on the raw input so they are reported whatever else is wrong.
  if (isPlainObject(value) && Array.isArray(value.keys)) {
    value.keys.forEach((k: unknown, i) => {
      if (!isPlainObject(k)) return
      for (const m of PRIVATE_MEMBERS) {
        if (Object.hasOwn(k, m)) issues.push(`keys[${i}].${m}: private key member in a public JWK Set`)
      }
    })
  }
  const parsed = jwksSchema.safeParse(value)
  if (!parsed.success) {
    for (const iss of parsed.error.issues) issues.push(`${fieldName(iss.path, 'JWK Set')}: ${iss.message}`)
    throw new KeyFileError('keys.jwks-invalid', 'JWK Set', issues, file)
  }
  const jwks = parsed.data as PublicJwks
  const seen = new Map<string, number>()
  for (const [i, k] of jwks.keys.entries()) {
    const thumb = await ed25519Thumbprint(k.x)
    if (k.kid !== thumb) issues.push(`keys[${i}].kid: not the RFC 7638 thumbprint of the key (${thumb})`)
    const first = seen.get(k.kid)
    if (first !== undefined) issues.push(`keys[${i}].kid: duplicate of keys[${first}].kid`)
    else seen.set(k.kid, i)
    if (k.valid_until !== undefined && (parseTimeNs(k.valid_until) as bigint) <= (parseTimeNs(k.valid_from) as bigint)) {
      issues.push(`keys[${i}].valid_until: not after valid_from`)
    }
  }
  if (issues.length > 0) throw new KeyFileError('keys.jwks-invalid', 'JWK Set', issues, file)
  return jwks
}

/** Validates a private signing JWK: OKP/Ed25519, `d` and `x` of 32 bytes, `x` the public key of `d`, `kid` its thumbprint. */
export async function parsePrivateJwk(value: unknown, file?: string): Promise<PrivateSigningJwk> {
  const parsed = privateKeySchema.safeParse(value)
  if (!parsed.success) {
    const issues = parsed.error.issues.map((iss) => `${fieldName(iss.path, 'JWK')}: ${iss.message}`)
    throw new KeyFileError('keys.private-jwk-invalid', 'private JWK', issues, file)
  }
  const k = parsed.data
  const issues: string[] = []
  const x = publicXOfSeed(Buffer.from(k.d, 'base64url'))
  if (x !== k.x) issues.push('x: not the public key of d')
  const thumb = await ed25519Thumbprint(k.x)
  if (k.kid !== thumb) issues.push(`kid: not the RFC 7638 thumbprint of the key (${thumb})`)
  if (issues.length > 0) throw new KeyFileError('keys.private-jwk-invalid', 'private JWK', issues, file)
  return { kty: 'OKP', crv: 'Ed25519', x: k.x, d: k.d, kid: k.kid, alg: 'Ed25519', use: 'sig' }
}

/** docs/limits.md: a key set of a few thousand keys, and one private key, with room to spare. */
export const KEY_SET_LIMIT = { maxBytes: 2 ** 20, what: 'a key set' }
export const PRIVATE_KEY_LIMIT = { maxBytes: 64 * 2 ** 10, what: 'a private key' }

async function readJsonFile(path: string, code: string, what: string, limit: ReadLimit): Promise<unknown> {
  const text = (await readInputFile(path, limit)).toString('utf8')
  try {
    return JSON.parse(text) as unknown
  } catch (err) {
    throw new KeyFileError(code, what, [`${what}: not JSON (${(err as Error).message})`], path)
  }
}

export async function readJwksFile(path: string): Promise<PublicJwks> {
  return parseJwks(await readJsonFile(path, 'keys.jwks-invalid', 'JWK Set', KEY_SET_LIMIT), path)
}

export async function readPrivateJwkFile(path: string): Promise<PrivateSigningJwk> {
  return parsePrivateJwk(await readJsonFile(path, 'keys.private-jwk-invalid', 'private JWK', PRIVATE_KEY_LIMIT), path)
}

// ---------------------------------------------------------------------------------------------------
// Writing

/** RFC 8785 canonical JSON of a value (no trailing newline), as manifests are written. */
function canonicalJson(value: unknown): string {
  const s = canonicalize(value)
  if (s === undefined) throw new PipeError('internal', 'value has no JSON form')
  return s
}

/** Writes a private JWK as canonical JSON, atomically, with file mode 0600. */
export async function writePrivateJwkFile(path: string, jwk: PrivateSigningJwk): Promise<void> {
  await writeFileAtomic(path, canonicalJson(jwk), { mode: 0o600 })
}

/** Writes a JWK Set as canonical JSON, atomically, with file mode 0644. Refuses a set with private members. */
export async function writeJwksFile(path: string, jwks: PublicJwks): Promise<void> {
  await parseJwks(jwks)
  await writeFileAtomic(path, canonicalJson(jwks), { mode: 0o644 })
}

/** File name of a private key file in a key directory. */
export function privateKeyFileName(kid: string): string {
  return `signing-key-${kid}.jwk`
}

/** Writes `<dir>/signing-key-<kid>.jwk` (0600) and `<dir>/jwks.json`, private key first. */
export async function writeKeyFiles(dir: string, keys: { privateJwk: PrivateSigningJwk; jwks: PublicJwks }): Promise<{ privatePath: string; jwksPath: string }> {
  const privatePath = join(dir, privateKeyFileName(keys.privateJwk.kid))
  const jwksPath = join(dir, 'jwks.json')
  if (!keys.jwks.keys.some((k) => k.kid === keys.privateJwk.kid && k.x === keys.privateJwk.x)) {
    throw new PipeError('keys.key-not-in-set', `key ${keys.privateJwk.kid} is not in the JWK Set`)
  }
  await writePrivateJwkFile(privatePath, keys.privateJwk)
  await writeJwksFile(jwksPath, keys.jwks)
  return { privatePath, jwksPath }
}

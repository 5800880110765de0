/**
 * `manifest.json.sig`: a detached JWS (RFC 7515 appendix F) with an unencoded payload (RFC 7797) over
 * the exact bytes of `manifest.json`, signed with Ed25519 (alg `Ed25519`, RFC 9864).
 *
 * Serialisation: the JWS Compact Serialization with the payload part empty,
 * `BASE64URL(protected header) + ".." + BASE64URL(signature)`, ASCII, no trailing newline (a reader
 * accepts one trailing LF). The protected header is the RFC 8785 canonical JSON
 * `{"alg":"Ed25519","b64":false,"crit":["b64"],"kid":"<thumbprint>"}`; Ed25519 is deterministic, so
 * one key and one manifest give one signature file, byte for byte. The signing input is
 * `ASCII(BASE64URL(header)) || "." || manifest bytes`.
 */
import canonicalize from 'canonicalize'
import { sign, verify } from 'node:crypto'
import { flattenedVerify, importJWK } from 'jose'
import { PipeError, UsageError } from '../../../core/errors.js'
import { formatTimeNs, keyValidityAt, privateKeyObject, publicKeyObject, type PrivateSigningJwk, type PublicJwks, type PublicSigningJwk } from './keys.js'

export const JWS_ALG = 'Ed25519'

/** A manifest.json.sig is some 200 bytes; docs/limits.md. */
export const SIGNATURE_LIMIT = { maxBytes: 64 * 2 ** 10, what: 'a signature' }

/** Stable codes of a failed signature check; they never change meaning once published. */
export type SigCode =
  /** Not `header..signature` with strict base64url parts, a JSON object header and a 64-byte signature. */
  | 'sig.malformed'
  /** alg is not Ed25519, b64 is not false, crit is not exactly ["b64"], kid missing, a member held twice. */
  | 'sig.header'
  /** No key of the JWK Set has the header's kid. */
  | 'sig.unknown-key'
  /** The signature is the key's, but the key was not valid at the signing instant (expired or not yet valid). */
  | 'sig.key-not-valid-at-time'
  /** The signature does not verify over the payload with the key. */
  | 'sig.bad-signature'

export type VerifyResult = { ok: true; kid: string } | { ok: false; code: SigCode; detail: string; kid?: string }

/** The protected header bytes (canonical JSON) for a key. */
export function protectedHeaderJson(kid: string): string {
  return canonicalize({ alg: JWS_ALG, b64: false, crit: ['b64'], kid }) as string
}

/** `ASCII(encodedHeader) || "." || payload`: the bytes Ed25519 signs (RFC 7797 section 3). */
export function signingInput(encodedHeader: string, payload: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${encodedHeader}.`, 'ascii'), payload])
}

/** Signs `payload` (the exact manifest bytes) and returns the text of `manifest.json.sig`. */
export function signDetached(payload: Uint8Array, privateJwk: PrivateSigningJwk): string {
  const key = privateKeyObject(privateJwk)
  const encodedHeader = encodedHeaderOf(privateJwk.kid)
  return detachedText(encodedHeader, sign(null, signingInput(encodedHeader, payload), key))
}

const encodedHeaderOf = (kid: string) => Buffer.from(protectedHeaderJson(kid), 'utf8').toString('base64url')
const detachedText = (encodedHeader: string, signature: Uint8Array) => `${encodedHeader}..${Buffer.from(signature).toString('base64url')}`

/**
 * The text of `manifest.json.sig` made by a signer that holds the key elsewhere (`signRaw`: a hardware
 * token or a KMS behind a command): it is given the JWS signing input and returns the raw 64-byte Ed25519
 * signature, which must verify under `publicJwk` (the key set's entry for its kid) before it is used.
 */
export async function signDetachedWith(payload: Uint8Array, publicJwk: Pick<PublicSigningJwk, 'kid' | 'x'>, signRaw: (input: Buffer) => Promise<Uint8Array>): Promise<string> {
  const encodedHeader = encodedHeaderOf(publicJwk.kid)
  const input = signingInput(encodedHeader, payload)
  const signature = await signRaw(input)
  if (signature.byteLength !== 64) throw new UsageError('sign.bad-signature', `the signer gave ${signature.byteLength} bytes, not a 64-byte Ed25519 signature`)
  if (!verify(null, input, publicKeyObject(publicJwk), signature)) throw new UsageError('sign.bad-signature', `the signer's signature does not verify under key ${publicJwk.kid}: it signed with another key`)
  return detachedText(encodedHeader, signature)
}

function fail(code: SigCode, detail: string, kid?: string): VerifyResult {
  return kid === undefined ? { ok: false, code, detail } : { ok: false, code, detail, kid }
}

const B64URL = /^[A-Za-z0-9_-]+$/

function strictBase64url(s: string): Buffer | undefined {
  if (!B64URL.test(s)) return undefined
  const buf = Buffer.from(s, 'base64url')
  // One encoding per value: no stray trailing bits, no impossible lengths.
  return buf.toString('base64url') === s ? buf : undefined
}

/** Names of the top-level members of a JSON object text in order, duplicates included. */
function topLevelMemberNames(json: string): string[] {
  const names: string[] = []
  let depth = 0
  let expectName = false
  for (let i = 0; i < json.length; i++) {
    const c = json[i]
    if (c === '"') {
      let j = i + 1
      while (j < json.length && json[j] !== '"') j += json[j] === '\\' ? 2 : 1
      if (depth === 1 && expectName) {
        names.push(JSON.parse(json.slice(i, j + 1)) as string)
        expectName = false
      }
      i = j
    } else if (c === '{' || c === '[') {
      depth++
      if (depth === 1) expectName = true
    } else if (c === '}' || c === ']') {
      depth--
    } else if (c === ',' && depth === 1) {
      expectName = true
    }
  }
  return names
}

/** Header parameters this verifier understands; a `crit` naming any other is refused (RFC 7515 4.1.11). */
const UNDERSTOOD_CRIT = new Set(['b64'])

/**
 * Checks `sigText` (the content of `manifest.json.sig`) over `payload` (the exact bytes of
 * `manifest.json`) against the JWK Set, with the key required to be valid at `atNs` (see
 * `manifestSigningInstant`). Checks run in order and the first failure is returned: form
 * (`sig.malformed`), header (`sig.header`), key lookup (`sig.unknown-key`), signature
 * (`sig.bad-signature`), then validity (`sig.key-not-valid-at-time`), so that the last code means
 * the key did make this signature. Keys are taken from the JWK Set only, never from the header (`jwk`,
 * `jku`, `x5c` and other non-critical members are ignored). Pass a set checked by `parseJwks`.
 */
export async function verifyDetached(payload: Uint8Array, sigText: string | Uint8Array, jwks: PublicJwks, atNs: bigint): Promise<VerifyResult> {
  // Bytes are taken one char per byte: anything outside ASCII then fails the base64url test.
  const raw = typeof sigText === 'string' ? sigText : Buffer.from(sigText).toString('latin1')
  const text = raw.endsWith('\n') ? raw.slice(0, -1) : raw
  const parts = text.split('.')
  if (parts.length !== 3) return fail('sig.malformed', `expected 3 dot-separated parts, found ${parts.length}`)
  const [encodedHeader, encodedPayload, encodedSignature] = parts as [string, string, string]
  if (encodedPayload !== '') return fail('sig.malformed', 'the payload part is not empty: not a detached JWS')
  const headerBytes = strictBase64url(encodedHeader)
  if (!headerBytes) return fail('sig.malformed', 'the protected header is not base64url')
  const signature = strictBase64url(encodedSignature)
  if (!signature) return fail('sig.malformed', 'the signature is not base64url')
  if (signature.length !== 64) return fail('sig.malformed', `an Ed25519 signature is 64 bytes, found ${signature.length}`)

  let headerText: string
  let header: unknown
  try {
    headerText = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(headerBytes)
    header = JSON.parse(headerText)
  } catch {
    return fail('sig.malformed', 'the protected header is not UTF-8 JSON')
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) {
    return fail('sig.malformed', 'the protected header is not a JSON object')
  }
  const names = topLevelMemberNames(headerText)
  const dup = names.find((n, i) => names.indexOf(n) !== i)
  if (dup !== undefined) return fail('sig.header', `header member ${JSON.stringify(dup)} appears twice`)

  const h = header as Record<string, unknown>
  if (h.alg !== JWS_ALG) return fail('sig.header', `alg is ${JSON.stringify(h.alg)}, not "${JWS_ALG}"`)
  if (h.b64 !== false) return fail('sig.header', `b64 is ${JSON.stringify(h.b64)}, not false (unencoded payload)`)
  if (!Array.isArray(h.crit)) return fail('sig.header', 'crit is missing or not an array')
  const crit = h.crit as unknown[]
  const unknownCrit = crit.find((c) => typeof c !== 'string' || !UNDERSTOOD_CRIT.has(c))
  if (unknownCrit !== undefined) return fail('sig.header', `crit names ${JSON.stringify(unknownCrit)}, which this verifier does not understand`)
  if (crit.length !== 1 || crit[0] !== 'b64') return fail('sig.header', `crit is ${JSON.stringify(crit)}, not ["b64"]`)
  if (typeof h.kid !== 'string' || h.kid === '') return fail('sig.header', 'kid is missing or not a non-empty string')
  const kid = h.kid

  const jwk = jwks.keys.find((k) => k.kid === kid)
  if (!jwk) return fail('sig.unknown-key', `no key with kid ${kid} in the JWK Set`, kid)

  try {
    const key = await importJWK({ kty: 'OKP', crv: 'Ed25519', x: jwk.x }, JWS_ALG)
    await flattenedVerify({ protected: encodedHeader, payload, signature: encodedSignature }, key, { algorithms: [JWS_ALG] })
  } catch (err) {
    const code = (err as { code?: unknown }).code
    const detail = code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' ? 'the signature does not verify over the payload' : `verification failed: ${(err as Error).message}`
    return fail('sig.bad-signature', detail, kid)
  }

  const validity = keyValidityAt(jwk, atNs)
  if (validity !== 'valid') {
    const window = `[${jwk.valid_from}, ${jwk.valid_until ?? 'open'})`
    const what = validity === 'expired' ? 'expired before' : 'not yet valid at'
    return fail('sig.key-not-valid-at-time', `key ${kid} ${what} the signing instant ${timeText(atNs)}; its validity is ${window}`, kid)
  }
  return { ok: true, kid }
}

function timeText(ns: bigint): string {
  try {
    return formatTimeNs(ns)
  } catch {
    return `${ns} ns`
  }
}

/** Like `verifyDetached`, but throws a PipeError carrying the code when the signature does not verify. */
export async function assertDetached(payload: Uint8Array, sigText: string | Uint8Array, jwks: PublicJwks, atNs: bigint): Promise<string> {
  const r = await verifyDetached(payload, sigText, jwks, atNs)
  if (!r.ok) throw new PipeError(r.code, r.detail)
  return r.kid
}

/**
 * Who signs a record-format manifest: a private JWK file pipe reads, or an external command (a hardware
 * token, a KMS) that holds the key and signs the JWS signing input it is given, for a key the key set names
 * by its kid. Either way the signer is refused, before anything is sealed, when check 6 would refuse its
 * signature at the instant the verifier judges it (the hour's or the day's end).
 */
import { asUsage, UsageError, type Location } from '../../../core/errors.js'
import { runSignerCommand } from '../../../core/signer-command.js'
import { formatTime } from '../time.js'
import { signDetached, signDetachedWith } from './jws.js'
import type { SignerOptions } from './signer-options.js'
import { readJwksFile, readPrivateJwkFile, signingRefusal, type PrivateSigningJwk, type PublicJwks } from './keys.js'

/** Signs a manifest's exact bytes; gives the text of its `.sig`. */
export type Sign = (bytes: Uint8Array) => Promise<string>

export interface RecordSigner {
  sign: Sign
  /** Why check 6 would refuse this signer's signature judged at `instant`, or undefined. */
  refusal(instant: bigint): string | undefined
  /** The option to name in an error about the key, and where it points. */
  readonly field: '--key' | '--kid'
  readonly where: Location
}

/** Signs with a private key pipe holds. */
export function keySigner(key: PrivateSigningJwk): Sign {
  return async (bytes) => signDetached(bytes, key)
}

/** The signer the options name, its key set read: a usage error when they name none, or both. */
export async function recordSigner(o: SignerOptions, keysBeside: (key: string) => string, signal?: AbortSignal): Promise<RecordSigner> {
  if ((o.key === undefined) === (o.signerCmd === undefined)) throw new UsageError('usage.signer', 'name the signer: --key FILE, or --signer-cmd CMD with --kid', { location: { field: '--key' } })
  const keysPath = o.keys ?? (o.key !== undefined ? keysBeside(o.key) : undefined)
  if (keysPath === undefined) throw new UsageError('usage.missing-option', '--signer-cmd needs --keys, the key set that publishes its key', { location: { field: '--keys' } })
  const jwks: PublicJwks = await asUsage(() => readJwksFile(keysPath), '--keys: ', { file: keysPath })
  if (o.key !== undefined) {
    const key = await readPrivateJwkFile(o.key)
    return { sign: keySigner(key), refusal: (instant) => signingRefusal(jwks, key, instant), field: '--key', where: { file: o.key } }
  }
  if (o.kid === undefined) throw new UsageError('usage.missing-option', '--signer-cmd needs --kid, the kid of its key in the key set', { location: { field: '--kid' } })
  const published = jwks.keys.find((k) => k.kid === o.kid)
  if (!published) throw new UsageError('usage.unknown-key', `--kid ${o.kid}: the key set at ${keysPath} has no such key`, { location: { field: '--kid' } })
  const command = o.signerCmd!
  return {
    sign: (bytes) => signDetachedWith(bytes, published, async (input) => rawSignature(await runSignerCommand(command, input, signal ? { signal } : {}))),
    refusal: (instant) => signingRefusal(jwks, published, instant),
    field: '--kid',
    where: { field: '--kid' },
  }
}

/** A signer's output: the 64 raw bytes, or their base64 or base64url text (with a trailing newline or not). */
function rawSignature(out: Buffer): Uint8Array {
  if (out.byteLength === 64) return out
  const text = out.toString('latin1').trim()
  return /^[A-Za-z0-9+/_-]+={0,2}$/.test(text) ? Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64') : out
}

/** The usage error for a signer whose signature check 6 would refuse at `instant`, the verifier's instant for `what`. */
export function signerRefused(signer: RecordSigner, refusal: string, instant: bigint, what: string): UsageError {
  const remedy = refusal.includes('not yet valid')
    ? `to seal hours recorded before the key existed, make a key valid from then: pipe key new --valid-from ${formatTime(instant - 3_600_000_000_000n)} --out DIR`
    : 'sign with the key the key set says was valid then'
  return new UsageError('usage.key-not-valid-for-hour', `${signer.field}: ${refusal}, the instant verify judges ${what}'s signature at (check 6); ${remedy}`, { location: signer.where })
}

/**
 * SSH signatures (OpenSSH PROTOCOL.sshsig) for packs: signing and verifying with a namespace.
 *
 * Blob:   "SSHSIG", uint32 1, string publickey, string namespace, string reserved, string hash_algorithm,
 *         string signature (string "ssh-ed25519", string 64-byte signature)
 * Signed: "SSHSIG", string namespace, string reserved, string hash_algorithm, string H(message)
 *
 * Written as ssh-keygen -Y sign writes it: SHA-512, empty reserved, armored under SSH SIGNATURE with
 * base64 at 70 columns and a final newline. Verification accepts SHA-512 and SHA-256, a missing final
 * newline and any base64 line width, and refuses everything else with a stable code; it never throws
 * and never allocates from a length field in the input.
 */
import { createHash } from 'node:crypto'
import {
  SSH_ED25519,
  SshReader,
  SshWriter,
  armor,
  checkSignerName,
  dearmor,
  ed25519Sign,
  ed25519Verify,
  fingerprint as keyFingerprint,
  parsePublicKeyBlob,
  printable,
  publicKeyBlob,
  signerName as keySignerName,
  type SshPrivateKey,
  type SshPublicKey,
} from './ssh-key.js'

/** Namespace of a manifest's detached signature. */
export const NS_MANIFEST = 'jetcarp-manifest'
/** Namespace of a ref's signature. */
export const NS_REF = 'jetcarp-ref'
/** Namespace of a key statement's signature. */
export const NS_KEY = 'jetcarp-key'
/** Reserved for verification receipts (not written by 0.4). */
export const NS_RECEIPT = 'jetcarp-receipt'
export const PACK_NAMESPACES = [NS_MANIFEST, NS_REF, NS_KEY, NS_RECEIPT] as const
export type PackNamespace = (typeof PACK_NAMESPACES)[number]

export type SshsigHashAlgorithm = 'sha512' | 'sha256'

/** Signature failure codes. */
export const SIG_CODES = {
  /** Armor, base64, magic, version, length fields, trailing bytes: the signature cannot be read. */
  malformed: 'pack.sig-malformed',
  /** The signature is for another namespace than the one checked. */
  namespace: 'pack.sig-namespace',
  /** Well formed, but the Ed25519 signature does not verify over this message. */
  bad: 'pack.sig-bad',
  /** Signed by a key that is not Ed25519 (format 1.0 counts it as no signature). */
  keyType: 'pack.sig-key-type',
  /** The message was hashed with an algorithm other than sha512 or sha256. */
  hashAlgorithm: 'pack.sig-hash-algorithm',
  /** The signature verifies, but by another key than the one required. */
  keyMismatch: 'pack.sig-key-mismatch',
  /** The signature file's `<signer>` name is not its key's name. */
  signerNameMismatch: 'pack.signer-name-mismatch',
} as const

export type SshsigVerifyResult =
  | {
      ok: true
      publicKey: SshPublicKey
      /** `SHA256:...` of the signing key. */
      fingerprint: string
      /** The signing key's signer name (64 hex). */
      signer: string
      namespace: string
      hashAlgorithm: SshsigHashAlgorithm
    }
  | { ok: false; code: string; detail: string }

const MAGIC = Buffer.from('SSHSIG', 'latin1')
const SIG_VERSION = 1
const SIG_LABEL = 'SSH SIGNATURE'
/** An Ed25519 signature is about 300 characters armored; anything beyond this is refused unread. */
export const MAX_ARMORED_SIGNATURE = 64 * 1024

function toBytes(m: Uint8Array | string): Buffer {
  return typeof m === 'string' ? Buffer.from(m, 'utf8') : Buffer.from(m.buffer, m.byteOffset, m.byteLength)
}

function signedData(namespace: Uint8Array | string, reserved: Uint8Array, hashAlgorithm: string, message: Uint8Array): Buffer {
  const h = createHash(hashAlgorithm).update(message).digest()
  return new SshWriter().raw(MAGIC).string(namespace).string(reserved).string(hashAlgorithm).string(h).toBuffer()
}

/** The binary sshsig blob of `message` signed by `sk` in `namespace`. */
export function signSshsigBlob(sk: SshPrivateKey, message: Uint8Array | string, namespace: string, opts: { hashAlgorithm?: SshsigHashAlgorithm } = {}): Buffer {
  if (typeof namespace !== 'string' || namespace.length === 0) throw new TypeError('an sshsig namespace is a non-empty string')
  const hashAlgorithm = opts.hashAlgorithm ?? 'sha512'
  if (hashAlgorithm !== 'sha512' && hashAlgorithm !== 'sha256') throw new TypeError(`unsupported hash algorithm ${String(hashAlgorithm)}`)
  const reserved = Buffer.alloc(0)
  const sig = ed25519Sign(sk, signedData(namespace, reserved, hashAlgorithm, toBytes(message)))
  const sigBlob = new SshWriter().string(SSH_ED25519).string(sig).toBuffer()
  return new SshWriter()
    .raw(MAGIC)
    .u32(SIG_VERSION)
    .string(publicKeyBlob(sk.publicKey))
    .string(namespace)
    .string(reserved)
    .string(hashAlgorithm)
    .string(sigBlob)
    .toBuffer()
}

/** Armors an sshsig blob as ssh-keygen does (70 columns, final newline). */
export function armorSshsig(blob: Uint8Array): string {
  return armor(SIG_LABEL, blob)
}

/**
 * A signature in the form a writer stores it, the one ssh-keygen writes: SHA-512, an empty reserved field,
 * armored at 70 columns with a final newline. A reader accepts more (docs/pack-format-notes.md); what pipe
 * writes, whoever signed it, is this, so that `ssh-keygen -Y verify` accepts it. Never throws.
 */
export function writerSshsig(signature: string | Uint8Array): { ok: true; text: string } | Fail {
  const d = dearmorSshsig(signature)
  if (!d.ok) return d
  const p = parseSshsigBlob(d.blob)
  if (!p.ok) return p
  const alg = p.sig.hashAlgorithm.toString('latin1')
  if (alg !== 'sha512') return fail(SIG_CODES.hashAlgorithm, `signed with hash ${printable(p.sig.hashAlgorithm)}: a pack's writer signs with sha512`)
  if (p.sig.reserved.length > 0) return fail(SIG_CODES.malformed, 'the reserved field is not empty: a pack\'s writer leaves it empty')
  return { ok: true, text: armorSshsig(d.blob) }
}

/**
 * Signs `message` (bytes, or text as UTF-8) in `namespace`: the armored `-----BEGIN SSH SIGNATURE-----`
 * text ending in a newline, byte-identical to what `ssh-keygen -Y sign` writes for the same key.
 */
export function signSshsig(sk: SshPrivateKey, message: Uint8Array | string, namespace: string, opts: { hashAlgorithm?: SshsigHashAlgorithm } = {}): string {
  return armorSshsig(signSshsigBlob(sk, message, namespace, opts))
}

/** The parts of an sshsig blob, as views into it. */
export interface ParsedSshsig {
  publicKeyBlob: Buffer
  namespace: Buffer
  reserved: Buffer
  hashAlgorithm: Buffer
  /** The inner signature blob: string type, string signature. */
  signatureBlob: Buffer
}

type Fail = { ok: false; code: string; detail: string }
const fail = (code: string, detail: string): Fail => ({ ok: false, code, detail })

/** Decodes armored text to the blob (`pack.sig-malformed` on any departure from the armor). */
export function dearmorSshsig(text: string | Uint8Array): { ok: true; blob: Buffer } | Fail {
  let s: string
  if (typeof text === 'string') s = text
  else if (text instanceof Uint8Array) {
    if (text.byteLength > MAX_ARMORED_SIGNATURE) return fail(SIG_CODES.malformed, `signature longer than ${MAX_ARMORED_SIGNATURE} bytes`)
    s = Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString('latin1')
  } else return fail(SIG_CODES.malformed, 'signature is not text')
  const a = dearmor(s, SIG_LABEL, MAX_ARMORED_SIGNATURE)
  if (!a.ok) return fail(SIG_CODES.malformed, a.detail)
  return { ok: true, blob: a.data }
}

/** Splits a binary sshsig blob into its fields, refusing wrong magic, version, lengths or trailing bytes. */
export function parseSshsigBlob(blob: Uint8Array): { ok: true; sig: ParsedSshsig } | Fail {
  if (!(blob instanceof Uint8Array)) return fail(SIG_CODES.malformed, 'signature is not bytes')
  const r = new SshReader(blob)
  const magic = r.raw(MAGIC.length)
  if (!magic || !magic.equals(MAGIC)) return fail(SIG_CODES.malformed, 'no SSHSIG magic')
  const version = r.u32()
  if (version === undefined) return fail(SIG_CODES.malformed, 'truncated before the version')
  if (version !== SIG_VERSION) return fail(SIG_CODES.malformed, `sshsig version ${version} is not 1`)
  const fields = ['public key', 'namespace', 'reserved', 'hash algorithm', 'signature'] as const
  const got: Buffer[] = []
  for (const f of fields) {
    const v = r.string()
    if (v === undefined) return fail(SIG_CODES.malformed, `${f} field runs past the end (offset ${r.offset}, ${r.remaining} bytes left)`)
    got.push(v)
  }
  if (!r.atEnd()) return fail(SIG_CODES.malformed, `${r.remaining} bytes after the signature`)
  const [publicKeyBlob, namespace, reserved, hashAlgorithm, signatureBlob] = got as [Buffer, Buffer, Buffer, Buffer, Buffer]
  return { ok: true, sig: { publicKeyBlob, namespace, reserved, hashAlgorithm, signatureBlob } }
}

export interface SshsigVerifyOptions {
  /** The signature must be by this key (public key or `SHA256:` fingerprint): else `pack.sig-key-mismatch`. */
  expectedKey?: SshPublicKey | string
  /** The `<signer>` part of the signature's file name: it must be the signing key's name, else `pack.signer-name-mismatch`. */
  signerName?: string
}

/**
 * Verifies an sshsig signature (armored text, or the binary blob) over `message` in `namespace`.
 * Checks, in order: armor and structure (`pack.sig-malformed`), key type (`pack.sig-key-type`),
 * namespace (`pack.sig-namespace`), hash algorithm (`pack.sig-hash-algorithm`), the Ed25519
 * signature (`pack.sig-bad`), then the optional expected key and file signer name. Never throws.
 */
export function verifySshsig(signature: string | Uint8Array, message: Uint8Array | string, namespace: string, opts: SshsigVerifyOptions = {}): SshsigVerifyResult {
  try {
    return verifyInner(signature, message, namespace, opts)
  } catch (err) {
    // Nothing above is expected to throw; if something does, it is still a refusal, never a crash.
    return fail(SIG_CODES.malformed, `signature could not be checked: ${err instanceof Error ? err.message : String(err)}`)
  }
}

function verifyInner(signature: string | Uint8Array, message: Uint8Array | string, namespace: string, opts: SshsigVerifyOptions): SshsigVerifyResult {
  if (typeof namespace !== 'string' || namespace.length === 0) return fail(SIG_CODES.namespace, 'no namespace given to check against')
  let blob: Buffer
  if (typeof signature === 'string' || looksArmored(signature)) {
    const d = dearmorSshsig(signature)
    if (!d.ok) return d
    blob = d.blob
  } else if (signature instanceof Uint8Array) {
    if (signature.byteLength > MAX_ARMORED_SIGNATURE) return fail(SIG_CODES.malformed, 'signature too long')
    blob = Buffer.from(signature.buffer, signature.byteOffset, signature.byteLength)
  } else return fail(SIG_CODES.malformed, 'signature is neither text nor bytes')

  const p = parseSshsigBlob(blob)
  if (!p.ok) return p
  const { sig } = p

  // The signing key.
  const pk = parsePublicKeyBlob(sig.publicKeyBlob)
  if (!pk.ok) return fail(pk.code === 'pack.key-type' ? SIG_CODES.keyType : SIG_CODES.malformed, `signing key: ${pk.detail}`)

  // The inner signature must be an Ed25519 signature of 64 bytes and nothing more.
  const sr = new SshReader(sig.signatureBlob)
  const sigType = sr.string()
  if (sigType === undefined) return fail(SIG_CODES.malformed, 'inner signature has no type')
  if (!sigType.equals(Buffer.from(SSH_ED25519))) return fail(SIG_CODES.keyType, `signature type ${printable(sigType)} is not ${SSH_ED25519}`)
  const raw = sr.string()
  if (raw === undefined || raw.length !== 64) return fail(SIG_CODES.malformed, 'Ed25519 signature is not 64 bytes')
  if (!sr.atEnd()) return fail(SIG_CODES.malformed, 'bytes after the inner signature')

  if (!sig.namespace.equals(Buffer.from(namespace, 'utf8'))) {
    return fail(SIG_CODES.namespace, `signature is for namespace ${printable(sig.namespace)}, not ${JSON.stringify(namespace)}`)
  }
  const alg = sig.hashAlgorithm.toString('latin1')
  if (alg !== 'sha512' && alg !== 'sha256') return fail(SIG_CODES.hashAlgorithm, `hash algorithm ${printable(sig.hashAlgorithm)} is not sha512 or sha256`)

  // The reserved field is signed too; PROTOCOL.sshsig says to ignore its contents otherwise.
  const data = signedData(sig.namespace, sig.reserved, alg, toBytes(message))
  if (!ed25519Verify(pk.value, data, raw)) return fail(SIG_CODES.bad, 'signature does not verify over this message')

  const fp = keyFingerprint(pk.value)
  if (opts.expectedKey !== undefined) {
    const want = typeof opts.expectedKey === 'string' ? opts.expectedKey : keyFingerprint(opts.expectedKey)
    if (want !== fp) return fail(SIG_CODES.keyMismatch, `signed by ${fp}, not by ${want}`)
  }
  if (opts.signerName !== undefined) {
    const m = checkSignerName(opts.signerName, pk.value)
    if (m) return fail(SIG_CODES.signerNameMismatch, m.detail)
  }
  return { ok: true, publicKey: pk.value, fingerprint: fp, signer: keySignerName(pk.value), namespace, hashAlgorithm: alg }
}

function looksArmored(b: unknown): boolean {
  if (!(b instanceof Uint8Array) || b.byteLength < 5) return false
  return b[0] === 0x2d && b[1] === 0x2d && b[2] === 0x2d && b[3] === 0x2d && b[4] === 0x2d
}

/**
 * Reads the signing key of a signature without verifying it (e.g. to find which key statement to
 * fetch). The result is untrusted until verifySshsig succeeds.
 */
export function sshsigSigningKey(signature: string | Uint8Array): { ok: true; publicKey: SshPublicKey; fingerprint: string; signer: string } | Fail {
  try {
    let blob: Buffer
    if (typeof signature === 'string' || looksArmored(signature)) {
      const d = dearmorSshsig(signature)
      if (!d.ok) return d
      blob = d.blob
    } else blob = Buffer.from(signature.buffer, signature.byteOffset, signature.byteLength)
    const p = parseSshsigBlob(blob)
    if (!p.ok) return p
    const pk = parsePublicKeyBlob(p.sig.publicKeyBlob)
    if (!pk.ok) return fail(pk.code === 'pack.key-type' ? SIG_CODES.keyType : SIG_CODES.malformed, `signing key: ${pk.detail}`)
    return { ok: true, publicKey: pk.value, fingerprint: keyFingerprint(pk.value), signer: keySignerName(pk.value) }
  } catch (err) {
    return fail(SIG_CODES.malformed, `signature could not be read: ${err instanceof Error ? err.message : String(err)}`)
  }
}

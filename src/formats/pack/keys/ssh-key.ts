/**
 * Ed25519 keys in OpenSSH format, and how pack format 1.0 names keys.
 *
 * - Keys are made from a 32-byte seed (deterministic, for golden packs) or at random.
 * - The private key is written in the unencrypted `-----BEGIN OPENSSH PRIVATE KEY-----` form
 *   (PROTOCOL.key, cipher and kdf "none") by our own small encoder, byte for byte as ssh-keygen lays it
 *   out; the public key as the one-line `ssh-ed25519 AAAA... comment`.
 * - Keys are named two ways, both from SHA-256 over the public key blob: in documents by the fingerprint
 *   `SHA256:` + unpadded base64 (exactly as `ssh-keygen -l` prints it), in file names by the signer name,
 *   the same digest as 64 lower-case hex digits (keys/<signer>.json, sigs/.../<signer>.sig).
 *
 * Every parser here takes hostile input: lengths are checked against the buffer before use, nothing is
 * allocated from a length field, and failures are returned as `{ ok: false, code, detail }`.
 */
import { createHash, createPrivateKey, createPublicKey, randomBytes, sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto'
import { PipeError } from '../../../core/errors.js'

/** The only key type of pack format 1.0. */
export const SSH_ED25519 = 'ssh-ed25519'

/** Key parse failure codes. */
export const KEY_CODES = {
  /** Armor, base64, wire structure, lengths or consistency of a key is wrong. */
  malformed: 'pack.key-malformed',
  /** The key is not an Ed25519 (`ssh-ed25519`) key. */
  keyType: 'pack.key-type',
  /** The private key is encrypted (a passphrase); JETCARP reads only unencrypted keys. */
  encrypted: 'pack.key-encrypted',
  /** A file's `<signer>` name is not the name of the key it holds or was signed by. */
  signerNameMismatch: 'pack.signer-name-mismatch',
  /** A fingerprint or signer name is not in its one spelling. */
  badName: 'pack.key-name-malformed',
} as const

export type KeyResult<T> = { ok: true; value: T } | { ok: false; code: string; detail: string }

/** An Ed25519 public key. `key` is the 32-byte raw public key. */
export interface SshPublicKey {
  readonly type: typeof SSH_ED25519
  readonly key: Buffer
  /** The comment of its public key line or private key file ('' for none). */
  readonly comment: string
}

/** An Ed25519 private key, with what it needs to be written again byte for byte. */
export interface SshPrivateKey {
  readonly publicKey: SshPublicKey
  /** The 32-byte Ed25519 seed (RFC 8032's private key). */
  readonly seed: Buffer
  /** The check-int of the OpenSSH private section (both copies are equal). */
  readonly checkInt: number
}

// ---------------------------------------------------------------------------------------------------
// SSH wire encoding (RFC 4251 section 5): uint32 big-endian, string = uint32 length + bytes.

/** A bounds-checked reader over SSH wire data. Every method returns undefined past the end. */
export class SshReader {
  private off = 0
  constructor(private readonly buf: Uint8Array) {}

  get offset(): number {
    return this.off
  }

  get remaining(): number {
    return this.buf.length - this.off
  }

  u32(): number | undefined {
    if (this.remaining < 4) return undefined
    const b = this.buf
    const o = this.off
    const v = ((b[o]! << 24) >>> 0) + (b[o + 1]! << 16) + (b[o + 2]! << 8) + b[o + 3]!
    this.off += 4
    return v
  }

  /** A string's bytes, as a view (no copy, no allocation from the length field). */
  string(): Buffer | undefined {
    const start = this.off
    const len = this.u32()
    if (len === undefined) return undefined
    if (len > this.remaining) {
      this.off = start
      return undefined
    }
    const v = Buffer.from(this.buf.buffer, this.buf.byteOffset + this.off, len)
    this.off += len
    return v
  }

  raw(n: number): Buffer | undefined {
    if (n < 0 || n > this.remaining) return undefined
    const v = Buffer.from(this.buf.buffer, this.buf.byteOffset + this.off, n)
    this.off += n
    return v
  }

  atEnd(): boolean {
    return this.off === this.buf.length
  }
}

/** Builds SSH wire data. */
export class SshWriter {
  private readonly parts: Buffer[] = []

  u32(v: number): this {
    const b = Buffer.alloc(4)
    b.writeUInt32BE(v >>> 0)
    this.parts.push(b)
    return this
  }

  string(v: Uint8Array | string): this {
    const b = typeof v === 'string' ? Buffer.from(v, 'utf8') : Buffer.from(v.buffer, v.byteOffset, v.byteLength)
    this.u32(b.length)
    this.parts.push(b)
    return this
  }

  raw(v: Uint8Array | string): this {
    this.parts.push(typeof v === 'string' ? Buffer.from(v, 'utf8') : Buffer.from(v.buffer, v.byteOffset, v.byteLength))
    return this
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.parts)
  }
}

// ---------------------------------------------------------------------------------------------------
// Strict base64 and armor.

const B64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** Decodes standard padded base64 in its one spelling (no whitespace, canonical padding bits), or undefined. */
export function decodeBase64Strict(s: string): Buffer | undefined {
  if (!B64_RE.test(s)) return undefined
  const b = Buffer.from(s, 'base64')
  if (b.toString('base64') !== s) return undefined
  return b
}

/** Base64 of `data` broken into lines of `width` characters, each ending in \n (as ssh-keygen writes). */
export function wrapBase64(data: Uint8Array, width = 70): string {
  const b64 = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64')
  let out = ''
  for (let i = 0; i < b64.length; i += width) out += b64.slice(i, i + width) + '\n'
  return out
}

/** Armor text under `label`: BEGIN line, base64 at 70 columns, END line, final newline. */
export function armor(label: string, data: Uint8Array): string {
  return `-----BEGIN ${label}-----\n${wrapBase64(data)}-----END ${label}-----\n`
}

/**
 * Reads armor under `label`: exactly the BEGIN line, base64 lines (any width; \n or \r\n line ends), the
 * END line and at most one final line end. Nothing before or after. Returns the decoded bytes or a reason.
 */
export function dearmor(text: string, label: string, maxChars: number): { ok: true; data: Buffer } | { ok: false; detail: string } {
  if (text.length > maxChars) return { ok: false, detail: `armored text longer than ${maxChars} characters` }
  const begin = `-----BEGIN ${label}-----`
  const end = `-----END ${label}-----`
  let body = text
  if (body.endsWith('\r\n')) body = body.slice(0, -2)
  else if (body.endsWith('\n')) body = body.slice(0, -1)
  const lines = body.split(/\r?\n/)
  if (lines.length < 3) return { ok: false, detail: 'armor has no body' }
  if (lines[0] !== begin) return { ok: false, detail: `first line is not ${begin}` }
  if (lines[lines.length - 1] !== end) return { ok: false, detail: `last line is not ${end}` }
  const b64 = lines.slice(1, -1)
  for (const l of b64) {
    if (l.length === 0) return { ok: false, detail: 'empty line inside armor' }
  }
  const data = decodeBase64Strict(b64.join(''))
  if (!data) return { ok: false, detail: 'armor body is not valid base64' }
  return { ok: true, data }
}

// ---------------------------------------------------------------------------------------------------
// Raw Ed25519 through node:crypto.

const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')

// KeyObjects are costly to make (DER parsing); keep them per seed / key buffer while those live.
const privateKeyObjects = new WeakMap<Uint8Array, KeyObject>()
const publicKeyObjects = new WeakMap<Uint8Array, KeyObject>()

function privateKeyObject(seed: Uint8Array): KeyObject {
  let k = privateKeyObjects.get(seed)
  if (!k) {
    k = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' })
    privateKeyObjects.set(seed, k)
  }
  return k
}

/** The KeyObject for a raw 32-byte Ed25519 public key (throws on a wrong length). */
export function publicKeyObject(pk: SshPublicKey | Uint8Array): KeyObject {
  const raw = pk instanceof Uint8Array ? pk : pk.key
  if (raw.length !== 32) throw new PipeError(KEY_CODES.malformed, 'an Ed25519 public key is 32 bytes')
  let k = publicKeyObjects.get(raw)
  if (!k) {
    k = createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, raw]), format: 'der', type: 'spki' })
    publicKeyObjects.set(raw, k)
  }
  return k
}

function rawPublicFromSeed(seed: Uint8Array): Buffer {
  const spki = createPublicKey(privateKeyObject(seed)).export({ format: 'der', type: 'spki' })
  return Buffer.from(spki.subarray(spki.length - 32))
}

/** Ed25519 signature (64 bytes) of `data` by `sk`. */
export function ed25519Sign(sk: SshPrivateKey, data: Uint8Array): Buffer {
  return cryptoSign(null, data, privateKeyObject(sk.seed))
}

/** Whether `sig` is a valid Ed25519 signature of `data` by `pk`. Never throws. */
export function ed25519Verify(pk: SshPublicKey | Uint8Array, data: Uint8Array, sig: Uint8Array): boolean {
  try {
    if (sig.length !== 64) return false
    return cryptoVerify(null, data, publicKeyObject(pk), sig)
  } catch {
    return false
  }
}

// ---------------------------------------------------------------------------------------------------
// Keys.

function checkComment(comment: string): string {
  if (/[\r\n\0]/.test(comment)) throw new PipeError(KEY_CODES.malformed, 'a key comment cannot hold a line end or NUL')
  return comment
}

/** The public key for a raw 32-byte Ed25519 key. */
export function publicKeyFromRaw(raw: Uint8Array, comment = ''): SshPublicKey {
  if (raw.length !== 32) throw new PipeError(KEY_CODES.malformed, 'an Ed25519 public key is 32 bytes')
  return { type: SSH_ED25519, key: Buffer.from(raw), comment: checkComment(comment) }
}

/**
 * The check-int written for a key made from a seed: the first four bytes, big-endian, of
 * SHA-256("jetcarp-openssh-checkint\n" + seed), so the same seed always writes the same file.
 */
export function deterministicCheckInt(seed: Uint8Array): number {
  return createHash('sha256').update('jetcarp-openssh-checkint\n').update(seed).digest().readUInt32BE(0)
}

/**
 * Makes an Ed25519 key. With `seed` (32 bytes) the key, and by default its check-int, are fixed, so the
 * private key file is the same bytes every time; without, both are random.
 */
export function generateKey(opts: { seed?: Uint8Array; comment?: string; checkInt?: number } = {}): SshPrivateKey {
  const seed = opts.seed === undefined ? randomBytes(32) : Buffer.from(opts.seed)
  if (seed.length !== 32) throw new PipeError(KEY_CODES.malformed, 'an Ed25519 seed is 32 bytes')
  const checkInt = opts.checkInt ?? (opts.seed === undefined ? randomBytes(4).readUInt32BE(0) : deterministicCheckInt(seed))
  if (!Number.isInteger(checkInt) || checkInt < 0 || checkInt > 0xffffffff) throw new PipeError(KEY_CODES.malformed, 'check-int must be a uint32')
  return { publicKey: publicKeyFromRaw(rawPublicFromSeed(seed), opts.comment ?? ''), seed, checkInt }
}

/** The same key with another comment. */
export function withComment<T extends SshPublicKey | SshPrivateKey>(k: T, comment: string): T {
  if ('seed' in k) return { ...k, publicKey: { ...k.publicKey, comment: checkComment(comment) } }
  return { ...k, comment: checkComment(comment) }
}

/** The SSH wire blob of a public key: string "ssh-ed25519", string key. */
export function publicKeyBlob(pk: SshPublicKey): Buffer {
  return new SshWriter().string(SSH_ED25519).string(pk.key).toBuffer()
}

/**
 * Parses a public key blob. Non-Ed25519 types are `pack.key-type`; anything else wrong, including bytes
 * after the key, `pack.key-malformed`.
 */
export function parsePublicKeyBlob(blob: Uint8Array, comment = ''): KeyResult<SshPublicKey> {
  const r = new SshReader(blob)
  const type = r.string()
  if (type === undefined) return { ok: false, code: KEY_CODES.malformed, detail: 'public key blob has no key type' }
  if (!type.equals(Buffer.from(SSH_ED25519))) {
    return { ok: false, code: KEY_CODES.keyType, detail: `key type ${printable(type)} is not ${SSH_ED25519}` }
  }
  const key = r.string()
  if (key === undefined || key.length !== 32) return { ok: false, code: KEY_CODES.malformed, detail: 'Ed25519 public key is not 32 bytes' }
  if (!r.atEnd()) return { ok: false, code: KEY_CODES.malformed, detail: 'bytes after the public key' }
  return { ok: true, value: { type: SSH_ED25519, key: Buffer.from(key), comment } }
}

/** A short printable rendering of untrusted bytes for messages. */
export function printable(b: Uint8Array): string {
  const s = Buffer.from(b.buffer, b.byteOffset, Math.min(b.byteLength, 40)).toString('latin1')
  return JSON.stringify(s.replace(/[^\x20-\x7e]/g, '?') + (b.byteLength > 40 ? '...' : ''))
}

/** The OpenSSH public key line: `ssh-ed25519 AAAA... comment` (no comment, no trailing space), no line end. */
export function formatPublicKey(pk: SshPublicKey, comment: string = pk.comment): string {
  checkComment(comment)
  const line = `${SSH_ED25519} ${publicKeyBlob(pk).toString('base64')}`
  return comment === '' ? line : `${line} ${comment}`
}

const MAX_PUBLIC_LINE = 16 * 1024

/**
 * Parses an OpenSSH public key line (`ssh-ed25519 AAAA... [comment]`, one final line end allowed). The
 * type word must agree with the blob's type.
 */
export function parsePublicKey(line: string): KeyResult<SshPublicKey> {
  if (typeof line !== 'string') return { ok: false, code: KEY_CODES.malformed, detail: 'public key is not text' }
  if (line.length > MAX_PUBLIC_LINE) return { ok: false, code: KEY_CODES.malformed, detail: 'public key line too long' }
  const text = line.endsWith('\r\n') ? line.slice(0, -2) : line.endsWith('\n') ? line.slice(0, -1) : line
  if (/[\r\n\0]/.test(text)) return { ok: false, code: KEY_CODES.malformed, detail: 'public key is more than one line' }
  const m = /^([A-Za-z0-9@.-]+)[ \t]+([A-Za-z0-9+/=]+)(?:[ \t]+(.*))?$/.exec(text)
  if (!m) return { ok: false, code: KEY_CODES.malformed, detail: 'not a public key line (type base64 [comment])' }
  const [, type, b64, comment] = m
  const blob = decodeBase64Strict(b64!)
  if (!blob) return { ok: false, code: KEY_CODES.malformed, detail: 'public key base64 is malformed' }
  if (type !== SSH_ED25519) return { ok: false, code: KEY_CODES.keyType, detail: `key type ${JSON.stringify(type)} is not ${SSH_ED25519}` }
  return parsePublicKeyBlob(blob, (comment ?? '').replace(/[ \t]+$/, ''))
}

/** Parses a public key line, throwing a PipeError with the parse code. */
export function publicKeyFromLine(line: string): SshPublicKey {
  const r = parsePublicKey(line)
  if (!r.ok) throw new PipeError(r.code, r.detail)
  return r.value
}

const OPENSSH_KEY_LABEL = 'OPENSSH PRIVATE KEY'
const OPENSSH_KEY_MAGIC = Buffer.from('openssh-key-v1\0', 'latin1')
const MAX_PRIVATE_TEXT = 64 * 1024

/**
 * The private key file in OpenSSH's format, unencrypted: magic, cipher "none", kdf "none", empty kdf
 * options, one key, its public blob, and the private section (check-int twice, type, public key,
 * seed + public key, comment, padding 1, 2, 3... to a multiple of 8), armored at 70 columns.
 */
export function formatPrivateKey(sk: SshPrivateKey, comment: string = sk.publicKey.comment): string {
  checkComment(comment)
  const pub = sk.publicKey.key
  const section = new SshWriter()
    .u32(sk.checkInt)
    .u32(sk.checkInt)
    .string(SSH_ED25519)
    .string(pub)
    .string(Buffer.concat([sk.seed, pub]))
    .string(comment)
    .toBuffer()
  const padLen = (8 - (section.length % 8)) % 8
  const padding = Buffer.alloc(padLen)
  for (let i = 0; i < padLen; i++) padding[i] = i + 1
  const blob = new SshWriter()
    .raw(OPENSSH_KEY_MAGIC)
    .string('none')
    .string('none')
    .string('')
    .u32(1)
    .string(publicKeyBlob(sk.publicKey))
    .string(Buffer.concat([section, padding]))
    .toBuffer()
  return armor(OPENSSH_KEY_LABEL, blob)
}

/**
 * Parses an unencrypted OpenSSH Ed25519 private key file, checking everything: magic, "none" cipher and
 * kdf, one key, equal check-ints, the public key in both places and derived from the seed, the
 * padding, and no bytes after.
 */
export function parsePrivateKey(text: string): KeyResult<SshPrivateKey> {
  const bad = (detail: string): KeyResult<SshPrivateKey> => ({ ok: false, code: KEY_CODES.malformed, detail })
  if (typeof text !== 'string') return bad('private key is not text')
  const a = dearmor(text, OPENSSH_KEY_LABEL, MAX_PRIVATE_TEXT)
  if (!a.ok) return bad(a.detail)
  const r = new SshReader(a.data)
  const magic = r.raw(OPENSSH_KEY_MAGIC.length)
  if (!magic || !magic.equals(OPENSSH_KEY_MAGIC)) return bad('not an openssh-key-v1 key')
  const cipher = r.string()
  const kdf = r.string()
  const kdfOptions = r.string()
  if (cipher === undefined || kdf === undefined || kdfOptions === undefined) return bad('truncated key header')
  if (cipher.toString('latin1') !== 'none' || kdf.toString('latin1') !== 'none') {
    return { ok: false, code: KEY_CODES.encrypted, detail: `key is encrypted (cipher ${printable(cipher)}); give an unencrypted key` }
  }
  if (kdfOptions.length !== 0) return bad('kdf options present with kdf none')
  const n = r.u32()
  if (n !== 1) return bad(`key file holds ${n ?? 'no'} keys, not 1`)
  const pubBlob = r.string()
  if (pubBlob === undefined) return bad('truncated public key')
  const pub = parsePublicKeyBlob(pubBlob)
  if (!pub.ok) return pub.code === KEY_CODES.keyType ? { ok: false, code: pub.code, detail: pub.detail } : bad(pub.detail)
  const section = r.string()
  if (section === undefined) return bad('truncated private section')
  if (!r.atEnd()) return bad('bytes after the private section')
  if (section.length % 8 !== 0) return bad('private section is not a multiple of 8 bytes')
  const s = new SshReader(section)
  const c1 = s.u32()
  const c2 = s.u32()
  if (c1 === undefined || c2 === undefined) return bad('truncated check-int')
  if (c1 !== c2) return bad('check-ints differ (wrong passphrase or corrupt key)')
  const type = s.string()
  if (type === undefined) return bad('truncated private key type')
  if (type.toString('latin1') !== SSH_ED25519) return { ok: false, code: KEY_CODES.keyType, detail: `private key type ${printable(type)} is not ${SSH_ED25519}` }
  const pk2 = s.string()
  const priv = s.string()
  const comment = s.string()
  if (pk2 === undefined || priv === undefined || comment === undefined) return bad('truncated private key')
  if (pk2.length !== 32 || !pk2.equals(pub.value.key)) return bad('private section public key differs from the public key')
  if (priv.length !== 64) return bad('Ed25519 private key is not 64 bytes')
  if (!priv.subarray(32).equals(pub.value.key)) return bad('private key does not end with its public key')
  const seed = Buffer.from(priv.subarray(0, 32))
  if (!rawPublicFromSeed(seed).equals(pub.value.key)) return bad('public key is not the seed\'s')
  const commentText = comment.toString('utf8')
  if (!Buffer.from(commentText, 'utf8').equals(comment) || /[\r\n\0]/.test(commentText)) return bad('comment is not one line of UTF-8')
  const padding = s.raw(s.remaining)!
  if (padding.length >= 8) return bad('padding longer than a block')
  for (let i = 0; i < padding.length; i++) if (padding[i] !== i + 1) return bad('padding is not 1, 2, 3...')
  return { ok: true, value: { publicKey: { type: SSH_ED25519, key: Buffer.from(pub.value.key), comment: commentText }, seed, checkInt: c1 } }
}

/** Parses a private key file, throwing a PipeError with the parse code. */
export function privateKeyFromText(text: string): SshPrivateKey {
  const r = parsePrivateKey(text)
  if (!r.ok) throw new PipeError(r.code, r.detail)
  return r.value
}

// ---------------------------------------------------------------------------------------------------
// Names: fingerprints in documents, signer names in file names.

const FINGERPRINT_RE = /^SHA256:[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]$/
const SIGNER_RE = /^[0-9a-f]{64}$/

function digest(k: SshPublicKey | Uint8Array): Buffer {
  const blob = k instanceof Uint8Array ? k : publicKeyBlob(k)
  return createHash('sha256').update(blob).digest()
}

/** `SHA256:` + unpadded base64 of SHA-256 over the public key blob: what `ssh-keygen -l` prints. */
export function fingerprint(k: SshPublicKey | Uint8Array): string {
  return 'SHA256:' + digest(k).toString('base64').replace(/=+$/, '')
}

/** The key's name in file names: 64 lower-case hex digits of the same SHA-256 digest. */
export function signerName(k: SshPublicKey | Uint8Array): string {
  return digest(k).toString('hex')
}

/** Whether `s` is a fingerprint in its one spelling (SHA256: and 43 base64 digits, canonical last digit). */
export function isFingerprint(s: unknown): s is string {
  return typeof s === 'string' && FINGERPRINT_RE.test(s)
}

/** Whether `s` is a signer name: exactly 64 lower-case hex digits. */
export function isSignerName(s: unknown): s is string {
  return typeof s === 'string' && SIGNER_RE.test(s)
}

/** The signer name for a fingerprint (undefined when the fingerprint is malformed). */
export function signerNameFromFingerprint(fp: string): string | undefined {
  if (!isFingerprint(fp)) return undefined
  return Buffer.from(fp.slice(7) + '=', 'base64').toString('hex')
}

/** The fingerprint for a signer name (undefined when the name is malformed). */
export function fingerprintFromSignerName(name: string): string | undefined {
  if (!isSignerName(name)) return undefined
  return 'SHA256:' + Buffer.from(name, 'hex').toString('base64').replace(/=+$/, '')
}

/**
 * Checks that a file's `<signer>` name is the name of `key` (a public key, or a fingerprint). Returns
 * null when it is, else a `pack.signer-name-mismatch` (or `pack.key-name-malformed`) problem.
 */
export function checkSignerName(fileSigner: string, key: SshPublicKey | string): { code: string; detail: string } | null {
  if (!isSignerName(fileSigner)) return { code: KEY_CODES.badName, detail: `signer name ${JSON.stringify(String(fileSigner).slice(0, 80))} is not 64 lower-case hex digits` }
  const expected = typeof key === 'string' ? signerNameFromFingerprint(key) : signerName(key)
  if (expected === undefined) return { code: KEY_CODES.badName, detail: `fingerprint ${JSON.stringify(String(key).slice(0, 80))} is malformed` }
  if (expected !== fileSigner) {
    return { code: KEY_CODES.signerNameMismatch, detail: `file is named for signer ${fileSigner} but the key is ${fingerprintFromSignerName(expected)} (${expected})` }
  }
  return null
}

/**
 * Key statements (pack format 1.0, "Signatures and keys"): `keys/<signer>.json` documents that say who a
 * publisher is, which key succeeds which, which keys are revoked, and which machine keys may sign the
 * publisher's manifests and refs. This module builds and signs them (RFC 8785 bytes, namespace
 * jetcarp-key), parses them from hostile bytes, and verifies a set of them as a chain.
 *
 * The rules, as the spec states them and as read here (see the notes in docs/pack-format-notes.md):
 * - A first statement (no supersedes) is signed by its own key.
 * - A successor (supersedes = the predecessor's fingerprint) is signed by the predecessor, whose own
 *   statement must stand.
 * - A revocation (revoked: true) is signed by the revoked key itself, or by a successor (a key whose
 *   statement supersedes it and is signed by it).
 * - A revoked key signs nothing. A successor stands after its predecessor's revocation only if it signed
 *   that revocation itself (read: every revocation of the predecessor this reader knows was signed by it).
 * - Revocation is permanent, and nothing depends on time: the verifier is order-independent and monotone.
 *   Machine keys' authorisations are the union over a key's standing statements, and an entry marked
 *   revoked in any of them is revoked for good.
 */
import canonicalize from 'canonicalize'
import { PipeError } from '../../../core/errors.js'
import {
  checkSignerName,
  fingerprint as keyFingerprint,
  formatPublicKey,
  isFingerprint,
  parsePublicKey,
  signerName as keySignerName,
  type SshPrivateKey,
  type SshPublicKey,
} from './ssh-key.js'
import { NS_KEY, NS_MANIFEST, NS_REF, signSshsig, verifySshsig } from './sshsig.js'

export const KEY_STATEMENT_FORMAT = 'jetcarp-key'
export const KEY_STATEMENT_VERSION = '1.0'
/** "manifest, index, ref or key statement: 16 MiB" (Limits). */
export const MAX_KEY_STATEMENT_BYTES = 16 * 1024 * 1024
/** "JSON nesting: 32 levels" (Limits). */
export const MAX_JSON_DEPTH = 32

/** Stable codes of key-statement findings. */
export const KEY_STATEMENT_CODES = {
  /** Not JSON, too large or deep, a member of the wrong type, a number that is not a safe integer, bad UTF-8. */
  malformed: 'pack.key-statement-malformed',
  /** The bytes are not the statement's RFC 8785 form (JETCARP refuses them). */
  notCanonical: 'pack.key-statement-not-canonical',
  /** A version whose major is not 1. */
  version: 'pack.key-statement-version',
  /** The statement's key (or an authorised key) is not ssh-ed25519. */
  keyType: 'pack.key-type',
  /** fingerprint is not the fingerprint of key (the statement's, or an authorised entry's). */
  fingerprintMismatch: 'pack.key-fingerprint-mismatch',
  /** keys/<signer>.json holds a statement of another key. */
  signerNameMismatch: 'pack.signer-name-mismatch',
  /** A first statement (no supersedes) not signed by its own key. */
  firstNotSelfSigned: 'pack.key-first-not-self-signed',
  /** A successor statement not signed by the key it supersedes. */
  successorNotSignedByPredecessor: 'pack.key-successor-not-signed-by-predecessor',
  /** A successor whose predecessor's own statement does not stand (missing, or fallen). */
  predecessorNotStanding: 'pack.key-predecessor-not-standing',
  /** A successor whose predecessor is revoked by a revocation it did not sign. */
  predecessorRevoked: 'pack.key-predecessor-revoked',
  /** A revocation signed by neither the revoked key nor a successor of it. */
  revocationNotSignedByKeyOrSuccessor: 'pack.key-revocation-not-signed-by-key-or-successor',
  /** Following supersedes comes back to a key already on the path. */
  chainCycle: 'pack.key-chain-cycle',
  /** A key both first and successor, or successor of two keys: its publisher is ambiguous. */
  chainConflict: 'pack.key-chain-conflict',
  /** No statement for a key that is needed (a publisher's key, a predecessor). */
  statementMissing: 'pack.key-statement-missing',
  /** The key has statements but none stands. */
  notStanding: 'pack.key-not-standing',
  /** The key is revoked: it signs nothing. */
  revoked: 'pack.key-revoked',
  /** The signing machine key is marked revoked in the publisher's statement. */
  machineKeyRevoked: 'pack.machine-key-revoked',
  /** The signing key is neither the publisher's key nor a machine key its statement authorises. */
  signerNotAuthorised: 'pack.signer-not-authorised',
  /** A remembered revocation is not in its form (fingerprint, revokedBy). */
  knownRevocationMalformed: 'pack.key-known-revocation-malformed',
} as const

/** An authorised machine key as a statement holds it. */
export interface AuthorisedEntry {
  key: string
  fingerprint: string
  label?: string
  revoked?: boolean
}

/** A key statement without its signature: what the signature covers. Unknown members are kept (signed) and otherwise ignored. */
export interface UnsignedKeyStatement {
  authorised?: AuthorisedEntry[]
  created?: string
  fingerprint: string
  format: string
  github?: string
  key: string
  name?: string
  orcid?: string
  revoked?: boolean
  supersedes?: string
  version: string
  [member: string]: unknown
}

/** A key statement document (keys/<signer>.json). */
export interface KeyStatementDocument extends UnsignedKeyStatement {
  signature: string
}

export interface KeyFinding {
  code: string
  detail: string
  /** The key the finding is about, when known. */
  fingerprint?: string
  /** Where the statement came from (a path), as the caller named it. */
  source?: string
}

// ---------------------------------------------------------------------------------------------------
// Building and signing.

export interface AuthorisedInput {
  key: SshPublicKey | string
  label?: string
  revoked?: boolean
}

export interface KeyStatementInput {
  /** The statement's key: a public key or its OpenSSH line. */
  key: SshPublicKey | string
  /** RFC 3339 UTC with whole seconds (2026-11-11T00:00:00Z). */
  created: string
  name?: string
  orcid?: string
  github?: string
  /** The predecessor's fingerprint, on a successor. */
  supersedes?: string
  revoked?: boolean
  authorised?: AuthorisedInput[]
}

const TIME_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z$/

/** Whether `s` is a pack time: RFC 3339, UTC, Z, whole seconds, a real date. */
export function isPackTime(s: unknown): s is string {
  if (typeof s !== 'string') return false
  const m = TIME_RE.exec(s)
  if (!m) return false
  const [y, mo, d, h, mi, se] = m.slice(1).map(Number) as [number, number, number, number, number, number]
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || se > 59) return false
  const t = new Date(Date.UTC(y, mo - 1, d, h, mi, se))
  return t.getUTCFullYear() === y && t.getUTCMonth() === mo - 1 && t.getUTCDate() === d
}

function toKey(k: SshPublicKey | string, what: string): SshPublicKey {
  if (typeof k !== 'string') return k
  const r = parsePublicKey(k)
  if (!r.ok) throw new PipeError(r.code, `${what}: ${r.detail}`)
  return r.value
}

function text(v: string | undefined, what: string): string | undefined {
  if (v === undefined) return undefined
  if (typeof v !== 'string') throw new PipeError(KEY_STATEMENT_CODES.malformed, `${what} must be a string`)
  const n = v.normalize('NFC')
  return n === '' ? undefined : n
}

/**
 * Builds an unsigned statement as the spec defines it: format jetcarp-key, version 1.0, key and its
 * fingerprint, revoked always written (false or true), and empty members (name, orcid, github,
 * supersedes, authorised, an authorised entry's label) omitted; an authorised entry's revoked is
 * written only when true. Text is written in NFC.
 */
export function buildKeyStatement(input: KeyStatementInput): UnsignedKeyStatement {
  const pk = toKey(input.key, 'key')
  if (!isPackTime(input.created)) throw new PipeError(KEY_STATEMENT_CODES.malformed, `created ${JSON.stringify(input.created)} is not an RFC 3339 UTC time with whole seconds`)
  const fp = keyFingerprint(pk)
  const doc: UnsignedKeyStatement = {
    created: input.created,
    fingerprint: fp,
    format: KEY_STATEMENT_FORMAT,
    key: formatPublicKey(pk),
    revoked: input.revoked === true,
    version: KEY_STATEMENT_VERSION,
  }
  const name = text(input.name, 'name')
  const orcid = text(input.orcid, 'orcid')
  const github = text(input.github, 'github')
  if (name !== undefined) doc.name = name
  if (orcid !== undefined) doc.orcid = orcid
  if (github !== undefined) doc.github = github
  if (input.supersedes !== undefined) {
    if (!isFingerprint(input.supersedes)) throw new PipeError(KEY_STATEMENT_CODES.malformed, `supersedes ${JSON.stringify(input.supersedes)} is not a SHA256: fingerprint`)
    if (input.supersedes === fp) throw new PipeError(KEY_STATEMENT_CODES.chainCycle, 'a key cannot supersede itself')
    doc.supersedes = input.supersedes
  }
  if (input.authorised !== undefined && input.authorised.length > 0) {
    const seen = new Set<string>()
    doc.authorised = input.authorised.map((a, i) => {
      const mk = toKey(a.key, `authorised[${i}].key`)
      const mfp = keyFingerprint(mk)
      if (seen.has(mfp)) throw new PipeError(KEY_STATEMENT_CODES.malformed, `authorised lists ${mfp} twice`)
      seen.add(mfp)
      const e: AuthorisedEntry = { fingerprint: mfp, key: formatPublicKey(mk) }
      const label = text(a.label, `authorised[${i}].label`)
      if (label !== undefined) e.label = label
      if (a.revoked === true) e.revoked = true
      return e
    })
  }
  canonicalBytes(doc) // throws on anything canonicalize refuses
  return doc
}

function canonicalBytes(doc: unknown): Buffer {
  const s = canonicalize(doc)
  if (s === undefined) throw new PipeError(KEY_STATEMENT_CODES.malformed, 'statement has no JSON form')
  return Buffer.from(s, 'utf8')
}

/** The bytes a statement's signature covers: RFC 8785 of the statement without its signature member. */
export function keyStatementSignedBytes(doc: UnsignedKeyStatement | KeyStatementDocument): Buffer {
  const { signature: _omit, ...rest } = doc as KeyStatementDocument
  return canonicalBytes(rest)
}

/** The file bytes of a signed statement (RFC 8785, no final newline), for keys/<signer>.json. */
export function keyStatementBytes(doc: KeyStatementDocument): Buffer {
  return canonicalBytes(doc)
}

/** The `<signer>` a statement is stored under: its key's signer name (keys/<signer>.json). */
export function keyStatementSignerName(doc: UnsignedKeyStatement | KeyStatementDocument): string {
  return keySignerName(toKey(doc.key, 'key'))
}

/** Signs a statement (namespace jetcarp-key) with `signer`. Who may sign is the verifier's business. */
export function signKeyStatement(doc: UnsignedKeyStatement, signer: SshPrivateKey): KeyStatementDocument {
  const unsigned = { ...doc }
  delete (unsigned as Partial<KeyStatementDocument>).signature
  const signature = signSshsig(signer, keyStatementSignedBytes(unsigned), NS_KEY)
  return { ...unsigned, signature } as KeyStatementDocument
}

type StatementExtras = Omit<KeyStatementInput, 'key' | 'supersedes' | 'revoked'>

/** A first statement: the key's own, no supersedes, signed by itself. */
export function firstKeyStatement(sk: SshPrivateKey, extras: StatementExtras): KeyStatementDocument {
  return signKeyStatement(buildKeyStatement({ ...extras, key: sk.publicKey }), sk)
}

/** A successor statement for `successor`, superseding `predecessor`'s key, signed by the predecessor. */
export function successorKeyStatement(predecessor: SshPrivateKey, successor: SshPublicKey | string, extras: StatementExtras): KeyStatementDocument {
  return signKeyStatement(buildKeyStatement({ ...extras, key: successor, supersedes: keyFingerprint(predecessor.publicKey) }), predecessor)
}

/**
 * A revocation of `statement`'s key: the same members with revoked: true (and `created` when given),
 * signed by `signer`, which must be the key itself or a successor of it for a reader to count it.
 */
export function revocationStatement(statement: KeyStatementDocument | UnsignedKeyStatement, signer: SshPrivateKey, opts: { created?: string } = {}): KeyStatementDocument {
  const { signature: _omit, ...rest } = statement as KeyStatementDocument
  const doc: UnsignedKeyStatement = { ...rest, revoked: true }
  if (opts.created !== undefined) {
    if (!isPackTime(opts.created)) throw new PipeError(KEY_STATEMENT_CODES.malformed, `created ${JSON.stringify(opts.created)} is not a pack time`)
    doc.created = opts.created
  }
  return signKeyStatement(doc, signer)
}

/**
 * The statement again with more authorised machine keys and/or some marked revoked in place (entries
 * are never removed), signed by `signer` (the key itself for a first statement, its predecessor for a
 * successor).
 */
export function updateAuthorised(
  statement: KeyStatementDocument | UnsignedKeyStatement,
  signer: SshPrivateKey,
  change: { add?: AuthorisedInput[]; revoke?: string[]; created?: string },
): KeyStatementDocument {
  const { signature: _omit, ...rest } = statement as KeyStatementDocument
  const entries: AuthorisedEntry[] = (rest.authorised ?? []).map((e) => ({ ...e }))
  const byFp = new Map(entries.map((e) => [e.fingerprint, e]))
  for (const a of change.add ?? []) {
    const mk = toKey(a.key, 'authorised key')
    const mfp = keyFingerprint(mk)
    if (byFp.has(mfp)) throw new PipeError(KEY_STATEMENT_CODES.malformed, `${mfp} is already authorised`)
    const e: AuthorisedEntry = { fingerprint: mfp, key: formatPublicKey(mk) }
    const label = text(a.label, 'label')
    if (label !== undefined) e.label = label
    if (a.revoked === true) e.revoked = true
    entries.push(e)
    byFp.set(mfp, e)
  }
  for (const fp of change.revoke ?? []) {
    const e = byFp.get(fp)
    if (!e) throw new PipeError(KEY_STATEMENT_CODES.malformed, `${fp} is not authorised in this statement`)
    e.revoked = true
  }
  const doc: UnsignedKeyStatement = { ...rest }
  if (entries.length > 0) doc.authorised = entries
  if (change.created !== undefined) {
    if (!isPackTime(change.created)) throw new PipeError(KEY_STATEMENT_CODES.malformed, `created ${JSON.stringify(change.created)} is not a pack time`)
    doc.created = change.created
  }
  return signKeyStatement(doc, signer)
}

// ---------------------------------------------------------------------------------------------------
// Parsing one statement.

export interface AuthorisedKey {
  publicKey: SshPublicKey
  fingerprint: string
  label?: string
  revoked: boolean
}

/** A statement that parsed, is well formed, and whose signature verifies (by some key). */
export interface ParsedKeyStatement {
  document: KeyStatementDocument
  publicKey: SshPublicKey
  fingerprint: string
  supersedes?: string
  revoked: boolean
  authorised: AuthorisedKey[]
  /** The fingerprint of the key whose jetcarp-key signature verifies over it. */
  signedBy: string
  /** The bytes the signature covers. */
  signedBytes: Buffer
  source?: string
}

export interface KeyStatementSource {
  /** The file's bytes (or text), or an already parsed document. */
  statement: Uint8Array | string | KeyStatementDocument
  /** The `<signer>` of its file name (keys/<signer>.json), checked against its key. */
  signerName?: string
  /** A name for findings (a path or URL). */
  source?: string
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** Depth of JSON nesting, scanned without parsing (strings skipped), stopping past `max`. */
function jsonDepthExceeds(s: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

/** Checks a parsed JSON value: depth and numbers (integers within ±2^53, bound excluded). */
function checkJsonValue(v: unknown, depth: number): string | null {
  if (depth > MAX_JSON_DEPTH) return `nested deeper than ${MAX_JSON_DEPTH}`
  if (typeof v === 'number') {
    if (!Number.isInteger(v) || Math.abs(v) >= 2 ** 53) return `number ${v} is not an integer within ±2^53`
    return null
  }
  if (Array.isArray(v)) {
    for (const x of v) {
      const r = checkJsonValue(x, depth + 1)
      if (r) return r
    }
    return null
  }
  if (v !== null && typeof v === 'object') {
    for (const x of Object.values(v)) {
      const r = checkJsonValue(x, depth + 1)
      if (r) return r
    }
  }
  return null
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

/**
 * Parses one key statement from hostile input and checks it alone: size, UTF-8, JSON, depth, numbers,
 * RFC 8785 form, format and version, members' types, key type, fingerprints, the file's signer name,
 * and that its jetcarp-key signature verifies (recording by whom). Who may sign it is checked by
 * verifyKeyChain. Never throws.
 */
export type ParseKeyStatementResult = { ok: true; statement: ParsedKeyStatement; findings: KeyFinding[] } | { ok: false; findings: KeyFinding[] }

export function parseKeyStatement(src: KeyStatementSource): ParseKeyStatementResult {
  try {
    return parseInner(src)
  } catch (err) {
    return { ok: false, findings: [{ code: KEY_STATEMENT_CODES.malformed, detail: `statement could not be read: ${err instanceof Error ? err.message : String(err)}`, ...(src?.source !== undefined ? { source: src.source } : {}) }] }
  }
}

function parseInner(src: KeyStatementSource): ParseKeyStatementResult {
  const where = src.source !== undefined ? { source: src.source } : {}
  const refuse = (code: string, detail: string, fingerprint?: string) => ({
    ok: false as const,
    findings: [{ code, detail, ...(fingerprint !== undefined ? { fingerprint } : {}), ...where }],
  })
  let parsed: unknown
  const input = src.statement
  if (typeof input === 'string' || input instanceof Uint8Array) {
    let s: string
    if (typeof input === 'string') {
      if (input.length > MAX_KEY_STATEMENT_BYTES) return refuse(KEY_STATEMENT_CODES.malformed, 'statement larger than 16 MiB')
      s = input
    } else {
      if (input.byteLength > MAX_KEY_STATEMENT_BYTES) return refuse(KEY_STATEMENT_CODES.malformed, 'statement larger than 16 MiB')
      try {
        s = utf8.decode(input)
      } catch {
        return refuse(KEY_STATEMENT_CODES.malformed, 'statement is not UTF-8')
      }
    }
    if (Buffer.byteLength(s, 'utf8') > MAX_KEY_STATEMENT_BYTES) return refuse(KEY_STATEMENT_CODES.malformed, 'statement larger than 16 MiB')
    if (jsonDepthExceeds(s, MAX_JSON_DEPTH)) return refuse(KEY_STATEMENT_CODES.malformed, `JSON nested deeper than ${MAX_JSON_DEPTH}`)
    try {
      parsed = JSON.parse(s)
    } catch (err) {
      return refuse(KEY_STATEMENT_CODES.malformed, `not JSON: ${err instanceof Error ? err.message : String(err)}`)
    }
    const bad = checkJsonValue(parsed, 1)
    if (bad) return refuse(KEY_STATEMENT_CODES.malformed, bad)
    let canon: string | undefined
    try {
      canon = canonicalize(parsed)
    } catch (err) {
      return refuse(KEY_STATEMENT_CODES.malformed, `no RFC 8785 form: ${err instanceof Error ? err.message : String(err)}`)
    }
    if (canon !== s) return refuse(KEY_STATEMENT_CODES.notCanonical, 'statement bytes are not its RFC 8785 form (whitespace, member order, escapes, number spelling or duplicate members)')
  } else {
    parsed = input
    const bad = checkJsonValue(parsed, 1)
    if (bad) return refuse(KEY_STATEMENT_CODES.malformed, bad)
  }
  if (!isPlainObject(parsed)) return refuse(KEY_STATEMENT_CODES.malformed, 'statement is not a JSON object')
  const d = parsed

  if (d.format !== KEY_STATEMENT_FORMAT) return refuse(KEY_STATEMENT_CODES.malformed, `format is ${JSON.stringify(d.format)}, not ${KEY_STATEMENT_FORMAT}`)
  if (typeof d.version !== 'string' || !/^[0-9]+\.[0-9]+$/.test(d.version)) return refuse(KEY_STATEMENT_CODES.malformed, 'version is not major.minor')
  if (d.version.split('.')[0] !== '1') return refuse(KEY_STATEMENT_CODES.version, `version ${d.version} has an unknown major`)
  if (typeof d.key !== 'string') return refuse(KEY_STATEMENT_CODES.malformed, 'key is not a string')
  const pk = parsePublicKey(d.key)
  if (!pk.ok) return refuse(pk.code === 'pack.key-type' ? KEY_STATEMENT_CODES.keyType : KEY_STATEMENT_CODES.malformed, `key: ${pk.detail}`)
  const fp = keyFingerprint(pk.value)
  if (typeof d.fingerprint !== 'string') return refuse(KEY_STATEMENT_CODES.malformed, 'fingerprint is not a string', fp)
  if (d.fingerprint !== fp) return refuse(KEY_STATEMENT_CODES.fingerprintMismatch, `fingerprint ${JSON.stringify(d.fingerprint.slice(0, 80))} is not its key's (${fp})`, fp)
  if (src.signerName !== undefined) {
    const m = checkSignerName(src.signerName, pk.value)
    if (m) return refuse(m.code, `keys/${String(src.signerName).slice(0, 80)}.json: ${m.detail}`, fp)
  }
  if (d.revoked !== undefined && typeof d.revoked !== 'boolean') return refuse(KEY_STATEMENT_CODES.malformed, 'revoked is not a boolean', fp)
  if (d.supersedes !== undefined) {
    if (!isFingerprint(d.supersedes)) return refuse(KEY_STATEMENT_CODES.malformed, 'supersedes is not a SHA256: fingerprint', fp)
    if (d.supersedes === fp) return refuse(KEY_STATEMENT_CODES.chainCycle, 'the key supersedes itself', fp)
  }
  for (const m of ['name', 'orcid', 'github'] as const) {
    if (d[m] !== undefined && typeof d[m] !== 'string') return refuse(KEY_STATEMENT_CODES.malformed, `${m} is not a string`, fp)
  }
  if (d.created !== undefined && !isPackTime(d.created)) return refuse(KEY_STATEMENT_CODES.malformed, 'created is not an RFC 3339 UTC time with whole seconds', fp)
  if (typeof d.signature !== 'string') return refuse(KEY_STATEMENT_CODES.malformed, 'signature is not a string', fp)

  const findings: KeyFinding[] = []
  const authorised: AuthorisedKey[] = []
  if (d.authorised !== undefined) {
    if (!Array.isArray(d.authorised)) return refuse(KEY_STATEMENT_CODES.malformed, 'authorised is not an array', fp)
    const seen = new Set<string>()
    for (let i = 0; i < d.authorised.length; i++) {
      const e: unknown = d.authorised[i]
      if (!isPlainObject(e) || typeof e.key !== 'string' || typeof e.fingerprint !== 'string') {
        return refuse(KEY_STATEMENT_CODES.malformed, `authorised[${i}] is not {"key", "fingerprint", ...}`, fp)
      }
      if (e.label !== undefined && typeof e.label !== 'string') return refuse(KEY_STATEMENT_CODES.malformed, `authorised[${i}].label is not a string`, fp)
      if (e.revoked !== undefined && typeof e.revoked !== 'boolean') return refuse(KEY_STATEMENT_CODES.malformed, `authorised[${i}].revoked is not a boolean`, fp)
      const mk = parsePublicKey(e.key)
      if (!mk.ok) {
        if (mk.code === 'pack.key-type') {
          // Another kind of key may count as no key (format 1.0 is Ed25519 only): skip the entry.
          findings.push({ code: KEY_STATEMENT_CODES.keyType, detail: `authorised[${i}] is not an Ed25519 key and signs nothing: ${mk.detail}`, fingerprint: fp, ...where })
          continue
        }
        return refuse(KEY_STATEMENT_CODES.malformed, `authorised[${i}].key: ${mk.detail}`, fp)
      }
      const mfp = keyFingerprint(mk.value)
      if (e.fingerprint !== mfp) return refuse(KEY_STATEMENT_CODES.fingerprintMismatch, `authorised[${i}].fingerprint is not its key's (${mfp})`, fp)
      if (seen.has(mfp)) return refuse(KEY_STATEMENT_CODES.malformed, `authorised lists ${mfp} twice`, fp)
      seen.add(mfp)
      authorised.push({ publicKey: mk.value, fingerprint: mfp, ...(typeof e.label === 'string' ? { label: e.label } : {}), revoked: e.revoked === true })
    }
  }

  const doc = d as KeyStatementDocument
  const signedBytes = keyStatementSignedBytes(doc)
  const v = verifySshsig(doc.signature, signedBytes, NS_KEY)
  if (!v.ok) return refuse(v.code, `statement signature: ${v.detail}`, fp)

  const statement: ParsedKeyStatement = {
    document: doc,
    publicKey: pk.value,
    fingerprint: fp,
    revoked: d.revoked === true,
    authorised,
    signedBy: v.fingerprint,
    signedBytes,
    ...(typeof d.supersedes === 'string' ? { supersedes: d.supersedes } : {}),
    ...(src.source !== undefined ? { source: src.source } : {}),
  }
  return { ok: true, statement, findings }
}

// ---------------------------------------------------------------------------------------------------
// Verifying a chain.

/** A revocation a reader keeps (JETCARP's pack_revoked): the key and who signed its revocation. */
export interface Revocation {
  fingerprint: string
  revokedBy: string
}

export interface MachineKeyState {
  publicKey: SshPublicKey
  fingerprint: string
  label?: string
  revoked: boolean
}

export type KeyStatus = 'active' | 'revoked' | 'fallen'

export interface KeyState {
  fingerprint: string
  /** Absent for a key known only from a remembered revocation. */
  publicKey?: SshPublicKey
  /**
   * active: its statement stands and it is not revoked; revoked: a revocation counts (whether or not it
   * still stands as a link of the chain, see `stands`); fallen: not revoked, but no statement of it stands.
   */
  status: KeyStatus
  /** Whether a statement of it stands (it links to a first key). */
  stands: boolean
  /** Why it does not stand (the finding), when it does not. */
  reason?: KeyFinding
  /** The publisher id: the fingerprint of the first key of its chain (when it stands). */
  publisherId?: string
  predecessor?: string
  /** Keys whose standing successor statements supersede it. */
  successors: string[]
  revoked: boolean
  /** Who signed the revocations that count (the key itself or a successor). */
  revokedBy: string[]
  name?: string
  orcid?: string
  github?: string
  /** Machine keys its standing statements authorise (union; revoked in any is revoked). */
  authorised: Map<string, MachineKeyState>
  /** Its statements that stand (first or successor statements signed by the right key). */
  statements: ParsedKeyStatement[]
}

export interface KeyChain {
  keys: Map<string, KeyState>
  /** Every revocation that counts, to keep (revocation is permanent). */
  revocations: Revocation[]
  findings: KeyFinding[]
}

export interface VerifyKeyChainOptions {
  /** Revocations seen before (JETCARP's pack_revoked): they stay in force whatever the store serves now. */
  knownRevocations?: Iterable<Revocation>
}

/**
 * Verifies a set of key statements together (from a store, an export and the reader's own records).
 * Order does not matter and nothing depends on time. Returns every key's state and all findings.
 */
export function verifyKeyChain(sources: Iterable<KeyStatementSource>, opts: VerifyKeyChainOptions = {}): KeyChain {
  const findings: KeyFinding[] = []
  const byKey = new Map<string, ParsedKeyStatement[]>()
  const publicKeys = new Map<string, SshPublicKey>()
  const seenStatements = new Set<string>()

  for (const src of sources) {
    const r = parseKeyStatement(src)
    findings.push(...r.findings)
    if (!r.ok) continue
    const st = r.statement
    // The same statement served twice counts once (Ed25519 is deterministic: same bytes and signer, same signature).
    const id = `${st.fingerprint}\n${st.document.signature}`
    if (seenStatements.has(id)) continue
    seenStatements.add(id)
    const list = byKey.get(st.fingerprint) ?? []
    list.push(st)
    byKey.set(st.fingerprint, list)
    publicKeys.set(st.fingerprint, st.publicKey)
  }

  // Links: K -> P when a (non-revocation) statement of K supersedes P and is signed by P. Roots: a
  // first statement signed by K itself, or a revocation of K without supersedes that counts (a key
  // claiming to be first can only ever be its own publisher).
  const parents = new Map<string, Set<string>>()
  const linkStatements = new Map<string, ParsedKeyStatement[]>()
  const rootStatements = new Map<string, ParsedKeyStatement[]>()
  const push = <V>(m: Map<string, V[]>, k: string, v: V) => {
    const l = m.get(k) ?? []
    l.push(v)
    m.set(k, l)
  }
  for (const [fp, list] of byKey) {
    for (const st of list) {
      if (st.revoked) continue
      if (st.supersedes === undefined) {
        if (st.signedBy === fp) push(rootStatements, fp, st)
        else findings.push(finding(KEY_STATEMENT_CODES.firstNotSelfSigned, `first statement of ${fp} is signed by ${st.signedBy}, not by its own key`, fp, st))
      } else if (st.signedBy === st.supersedes) {
        push(linkStatements, fp, st)
        const s = parents.get(fp) ?? new Set<string>()
        s.add(st.supersedes)
        parents.set(fp, s)
      } else {
        findings.push(finding(KEY_STATEMENT_CODES.successorNotSignedByPredecessor, `statement of ${fp} supersedes ${st.supersedes} but is signed by ${st.signedBy}`, fp, st))
      }
    }
  }

  // Revocations that count: by the key itself, or by a key linked to it as its successor.
  const revokedBy = new Map<string, Set<string>>()
  const addRevocation = (fp: string, by: string) => {
    const s = revokedBy.get(fp) ?? new Set<string>()
    s.add(by)
    revokedBy.set(fp, s)
  }
  const revocationStatements = new Map<string, ParsedKeyStatement[]>()
  for (const [fp, list] of byKey) {
    for (const st of list) {
      if (!st.revoked) continue
      const bySuccessor = parents.get(st.signedBy)?.has(fp) === true
      if (st.signedBy === fp || bySuccessor) {
        addRevocation(fp, st.signedBy)
        push(revocationStatements, fp, st)
        if (st.supersedes === undefined) push(rootStatements, fp, st)
      } else {
        findings.push(finding(KEY_STATEMENT_CODES.revocationNotSignedByKeyOrSuccessor, `revocation of ${fp} is signed by ${st.signedBy}, neither the key nor a successor it signed`, fp, st))
      }
    }
  }
  for (const r of opts.knownRevocations ?? []) {
    if (!r || !isFingerprint(r.fingerprint) || !isFingerprint(r.revokedBy)) {
      findings.push({ code: KEY_STATEMENT_CODES.knownRevocationMalformed, detail: `remembered revocation ${JSON.stringify(r).slice(0, 200)} is not {fingerprint, revokedBy}` })
      continue
    }
    addRevocation(r.fingerprint, r.revokedBy)
  }

  // Keys on a supersedes cycle (each signed by the one it supersedes, round a loop): found once, so every
  // key on the loop gets the same finding whatever the order.
  const inCycle = new Set<string>()
  {
    const state = new Map<string, 1 | 2>()
    for (const start of parents.keys()) {
      const path: string[] = []
      let cur: string | undefined = start
      while (cur !== undefined && !state.has(cur)) {
        state.set(cur, 1)
        path.push(cur)
        const ps = parents.get(cur)
        cur = ps && ps.size === 1 ? [...ps][0] : undefined
      }
      if (cur !== undefined && state.get(cur) === 1) {
        for (let i = path.indexOf(cur); i < path.length; i++) inCycle.add(path[i]!)
      }
      for (const n of path) state.set(n, 2)
    }
  }

  // Standing: follow supersedes to a first key. Iterative (a hostile store's chain can be long), each key
  // resolved once; a failure carries its first cause so details stay short.
  type Link = { ok: true; root: string } | { ok: false; finding: KeyFinding; cause: KeyFinding }
  const memo = new Map<string, Link>()
  const isRoot = (fp: string) => (rootStatements.get(fp)?.length ?? 0) > 0
  const singleParent = (fp: string): string | undefined => {
    const ps = parents.get(fp)
    return ps && ps.size === 1 && !isRoot(fp) && !inCycle.has(fp) ? [...ps][0] : undefined
  }
  const resolve = (fp: string, parentLink: Link | undefined): Link => {
    const ps = parents.get(fp)
    const fail = (code: string, detail: string, cause?: KeyFinding): Link => {
      const f = { code, detail, fingerprint: fp }
      return { ok: false, finding: f, cause: cause ?? f }
    }
    if (inCycle.has(fp)) return fail(KEY_STATEMENT_CODES.chainCycle, `following supersedes from ${fp} comes back to it`)
    if (!ps && !isRoot(fp)) {
      if (!byKey.has(fp)) return fail(KEY_STATEMENT_CODES.statementMissing, `no statement of ${fp}`)
      return fail(KEY_STATEMENT_CODES.notStanding, `no statement of ${fp} is signed by the key that may sign it`)
    }
    if (ps && (ps.size > 1 || isRoot(fp))) {
      return fail(KEY_STATEMENT_CODES.chainConflict, `${fp} is ${isRoot(fp) ? 'a first key and ' : ''}a successor of ${[...ps].join(', ')}: its publisher is ambiguous`)
    }
    if (!ps) return { ok: true, root: fp }
    const p = [...ps][0]!
    if (!parentLink) return fail(KEY_STATEMENT_CODES.predecessorNotStanding, `predecessor ${p} was not resolved`)
    if (!parentLink.ok) {
      const c = parentLink.cause
      return fail(KEY_STATEMENT_CODES.predecessorNotStanding, `predecessor ${p} does not stand (first cause: ${c.code} at ${c.fingerprint ?? '?'}: ${c.detail})`, c)
    }
    const by = revokedBy.get(p)
    if (by && by.size > 0 && ![...by].every((b) => b === fp)) {
      return fail(KEY_STATEMENT_CODES.predecessorRevoked, `predecessor ${p} is revoked by ${[...by].filter((b) => b !== fp).join(', ')}, not by this successor: it counts no successor by it`)
    }
    return { ok: true, root: parentLink.root }
  }
  const link = (fp: string): Link => {
    const path: string[] = []
    let cur: string | undefined = fp
    while (cur !== undefined && !memo.has(cur)) {
      path.push(cur)
      cur = singleParent(cur)
    }
    for (let i = path.length - 1; i >= 0; i--) {
      const node = path[i]!
      const up = singleParent(node)
      memo.set(node, resolve(node, up === undefined ? undefined : memo.get(up)))
    }
    return memo.get(fp)!
  }

  const roleFinding = new Map<string, KeyFinding>()
  for (const f of findings) if (f.fingerprint !== undefined && ROLE_CODES.has(f.code) && !roleFinding.has(f.fingerprint)) roleFinding.set(f.fingerprint, f)
  const reported = new Set<KeyFinding>(findings)

  const keys = new Map<string, KeyState>()
  const all = new Set<string>([...byKey.keys(), ...revokedBy.keys()])
  for (const fp of [...all].sort()) {
    let l = link(fp)
    if (!l.ok && l.finding.code === KEY_STATEMENT_CODES.notStanding) {
      // Its statements were all signed by the wrong key: the specific finding is the reason.
      const specific = roleFinding.get(fp)
      if (specific) l = { ok: false, finding: specific, cause: specific }
    }
    const by = revokedBy.get(fp)
    const revoked = by !== undefined && by.size > 0
    const standing = l.ok ? [...(parents.has(fp) ? linkStatements.get(fp) ?? [] : rootStatements.get(fp)?.filter((s) => !s.revoked) ?? [])] : []
    const authorised = new Map<string, MachineKeyState>()
    for (const st of standing) {
      for (const a of st.authorised) {
        const cur = authorised.get(a.fingerprint)
        if (!cur) authorised.set(a.fingerprint, { publicKey: a.publicKey, fingerprint: a.fingerprint, ...(a.label !== undefined ? { label: a.label } : {}), revoked: a.revoked })
        else if (a.revoked) cur.revoked = true
      }
    }
    // A revoked mark in a revocation that counts counts too (revocation only removes trust), and so
    // does a machine key's own revocation.
    for (const st of revocationStatements.get(fp) ?? []) {
      for (const a of st.authorised) {
        const cur = authorised.get(a.fingerprint)
        if (cur && a.revoked) cur.revoked = true
      }
    }
    for (const m of authorised.values()) if ((revokedBy.get(m.fingerprint)?.size ?? 0) > 0) m.revoked = true

    // Who the publisher is, from statements that count only (a tie goes to the latest, then the bytes).
    const info = latest(standing.length > 0 ? standing : revocationStatements.get(fp) ?? [])
    const pk = publicKeys.get(fp)
    const state: KeyState = {
      fingerprint: fp,
      ...(pk ? { publicKey: pk } : {}),
      status: revoked ? 'revoked' : !l.ok ? 'fallen' : 'active',
      stands: l.ok,
      ...(!l.ok ? { reason: l.finding } : {}),
      ...(l.ok ? { publisherId: l.root } : {}),
      ...(l.ok && parents.has(fp) ? { predecessor: [...parents.get(fp)!][0]! } : {}),
      successors: [],
      revoked,
      revokedBy: by ? [...by].sort() : [],
      authorised,
      statements: standing,
      ...(info && typeof info.document.name === 'string' && info.document.name !== '' ? { name: info.document.name } : {}),
      ...(info && typeof info.document.orcid === 'string' && info.document.orcid !== '' ? { orcid: info.document.orcid } : {}),
      ...(info && typeof info.document.github === 'string' && info.document.github !== '' ? { github: info.document.github } : {}),
    }
    keys.set(fp, state)
    if (!l.ok && byKey.has(fp) && !reported.has(l.finding)) {
      findings.push(l.finding)
      reported.add(l.finding)
    }
  }
  for (const st of keys.values()) {
    if (st.stands && st.predecessor) keys.get(st.predecessor)?.successors.push(st.fingerprint)
  }

  const revocations: Revocation[] = []
  for (const [fp, by] of revokedBy) for (const b of by) revocations.push({ fingerprint: fp, revokedBy: b })
  revocations.sort((a, b) => (a.fingerprint + a.revokedBy < b.fingerprint + b.revokedBy ? -1 : 1))
  return { keys, revocations, findings }
}

const ROLE_CODES: ReadonlySet<string> = new Set([KEY_STATEMENT_CODES.firstNotSelfSigned, KEY_STATEMENT_CODES.successorNotSignedByPredecessor])

function finding(code: string, detail: string, fp: string, st: ParsedKeyStatement): KeyFinding {
  return { code, detail, fingerprint: fp, ...(st.source !== undefined ? { source: st.source } : {}) }
}

/** Of several statements, the one a tie goes to: latest created, then greatest signed bytes. */
function latest(list: ParsedKeyStatement[]): ParsedKeyStatement | undefined {
  let best: ParsedKeyStatement | undefined
  for (const st of list) {
    if (!best) {
      best = st
      continue
    }
    const a = String(st.document.created ?? '')
    const b = String(best.document.created ?? '')
    if (a > b || (a === b && Buffer.compare(st.signedBytes, best.signedBytes) > 0)) best = st
  }
  return best
}

// ---------------------------------------------------------------------------------------------------
// Who may sign a manifest or ref.

export type AuthoriseResult =
  | { ok: true; publisherId: string; via: 'key' | 'machine'; signer: string }
  | { ok: false; code: string; detail: string }

/**
 * Whether `signer` (the fingerprint of the key a manifest or ref signature verifies by) may sign for
 * the publisher key `publisher` (the document's publisher member): the publisher's statement stands, its
 * key is not revoked, and the signer is that key or a machine key its statement authorises and has
 * not revoked.
 */
export function authoriseSigner(chain: KeyChain, publisher: string, signer: string): AuthoriseResult {
  const fail = (code: string, detail: string): AuthoriseResult => ({ ok: false, code, detail })
  if (!isFingerprint(publisher)) return fail('pack.key-name-malformed', `publisher ${JSON.stringify(String(publisher).slice(0, 80))} is not a SHA256: fingerprint`)
  const st = chain.keys.get(publisher)
  if (!st) return fail(KEY_STATEMENT_CODES.statementMissing, `no key statement for publisher key ${publisher}`)
  if (st.revoked) return fail(KEY_STATEMENT_CODES.revoked, `publisher key ${publisher} is revoked (by ${st.revokedBy.join(', ')}): it signs nothing`)
  if (!st.stands) {
    // The specific reason's code: pack.key-successor-not-signed-by-predecessor, pack.key-predecessor-revoked...
    const r = st.reason
    return fail(r?.code ?? KEY_STATEMENT_CODES.notStanding, `publisher key ${publisher}'s statement does not stand: ${r?.detail ?? 'unknown'}`)
  }
  if (signer === publisher) return { ok: true, publisherId: st.publisherId!, via: 'key', signer }
  const signerState = chain.keys.get(signer)
  const m = st.authorised.get(signer)
  if (!m) return fail(KEY_STATEMENT_CODES.signerNotAuthorised, `signed by ${signer}, which is neither publisher key ${publisher} nor a machine key it authorises`)
  if (m.revoked || signerState?.revoked) return fail(KEY_STATEMENT_CODES.machineKeyRevoked, `machine key ${signer}${m.label ? ` (${m.label})` : ''} is revoked: it signs nothing`)
  return { ok: true, publisherId: st.publisherId!, via: 'machine', signer }
}

/**
 * Verifies a manifest's or ref's signature and that it makes the document signed by its publisher:
 * the sshsig verifies in `namespace` (jetcarp-manifest or jetcarp-ref), its file's `<signer>` (when
 * given) is the signing key's, and authoriseSigner accepts the signing key. Never throws.
 */
export function verifySignedByPublisher(
  chain: KeyChain,
  args: { publisher: string; signature: string | Uint8Array; message: Uint8Array | string; namespace: typeof NS_MANIFEST | typeof NS_REF; signerName?: string },
): AuthoriseResult & { fingerprint?: string } {
  if (args.namespace !== NS_MANIFEST && args.namespace !== NS_REF) {
    return { ok: false, code: 'pack.sig-namespace', detail: `publishers sign manifests and refs, not ${JSON.stringify(args.namespace)}` }
  }
  const v = verifySshsig(args.signature, args.message, args.namespace, args.signerName !== undefined ? { signerName: args.signerName } : {})
  if (!v.ok) return v
  return { ...authoriseSigner(chain, args.publisher, v.fingerprint), fingerprint: v.fingerprint }
}

/** The publisher id (first key of the chain) for a publisher key, when its statement stands. */
export function publisherIdOf(chain: KeyChain, publisher: string): string | undefined {
  const st = chain.keys.get(publisher)
  return st?.stands ? st.publisherId : undefined
}

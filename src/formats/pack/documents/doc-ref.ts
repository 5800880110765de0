/**
 * Refs (pack format 1.0, "Refs"): `refs/<feed>.json`, a feed's signed pointer to its newest manifest.
 * The signature (namespace jetcarp-ref) covers the RFC 8785 bytes of the ref without its signature
 * member, unknown members included, so a ref keeps every member it was read with.
 */
import { verifySignedByPublisher, type AuthoriseResult, type KeyChain } from '../keys/key-statements.js'
import type { SshPrivateKey } from '../keys/ssh-key.js'
import { NS_REF, signSshsig } from '../keys/sshsig.js'
import {
  DOCUMENT_VERSION,
  checkFormatAndVersion,
  expectFingerprint,
  expectHash,
  expectInteger,
  expectString,
  expectTime,
  isFeedName,
  member,
  objectHash,
  parseWith,
  quote,
  refuse,
  refusal,
  writeChecked,
  writePackJson,
  type BuiltDocument,
  type PackResult,
  type Refusal,
} from './documents.js'

export const REF_FORMAT = 'jetcarp-ref'

/** Stable codes of ref findings (besides the shared pack.json-*, pack.hash-*, pack.version-* ones, and the signature codes of sshsig.ts and key-statements.ts). */
export const REF_CODES = {
  /** A member is missing, or of the wrong type or form. */
  invalid: 'pack.ref-invalid',
  /** refs/<feed>.json holds the ref of another feed. */
  feedMismatch: 'pack.ref-feed-mismatch',
  /** A lower seq than the follower accepted, or the same seq with another manifest. */
  rollback: 'pack.ref-rollback',
} as const

const INVALID = REF_CODES.invalid

/** A ref without its signature: what the signature covers. Unknown members are kept (they are signed). */
export interface UnsignedRef {
  feed: string
  format: typeof REF_FORMAT
  manifest: string
  publisher: string
  seq: number
  updated: string
  version: string
  [member: string]: unknown
}

export interface RefDocument extends UnsignedRef {
  signature: string
}

export interface RefInput {
  feed: string
  manifest: string
  /** The fingerprint of the publisher's current key. */
  publisher: string
  /** 1 for a feed's first version, up by at least one with every update. */
  seq: number
  updated: string
}

/** Builds an unsigned ref (format jetcarp-ref, version 1.0). Throws a PipeError when a reader would refuse it. */
export function buildRef(input: RefInput): UnsignedRef {
  const doc: UnsignedRef = { ...input, format: REF_FORMAT, version: DOCUMENT_VERSION }
  writeChecked(doc, (bytes) => parseWith(bytes, readUnsignedRef), 'ref')
  return doc
}

/** The bytes a ref's signature covers: RFC 8785 of the ref without its signature member. */
export function refSignedBytes(ref: UnsignedRef | RefDocument): Buffer {
  const { signature: _signature, ...unsigned } = ref as RefDocument
  return writePackJson(unsigned)
}

/** Signs a ref with `key` (the publisher's current key or a machine key it authorises): the document and its file bytes. */
export function signRef(ref: UnsignedRef, key: SshPrivateKey): BuiltDocument<RefDocument> {
  return signedRef(ref, signSshsig(key, refSignedBytes(ref), NS_REF))
}

/** A ref with its signature (made over {@link refSignedBytes}, by pipe or an external signer): the document and its file bytes. */
export function signedRef(ref: UnsignedRef, signature: string): BuiltDocument<RefDocument> {
  const document: RefDocument = { ...ref, signature }
  const bytes = writePackJson(document)
  return { document, bytes, hash: objectHash(bytes) }
}

export interface ParsedRef {
  ref: RefDocument
  minor: number
}

/**
 * Reads a ref from its bytes. `feed`, when given, is the `<feed>` of its file name, which the ref must
 * name. The signature is only checked to be text here: verifyRef checks it. Never throws.
 */
export function parseRef(bytes: Uint8Array, opts: { feed?: string } = {}): PackResult<ParsedRef> {
  return parseWith(bytes, (value) => {
    const { ref, minor } = readUnsignedRef(value)
    if (opts.feed !== undefined && ref.feed !== opts.feed) refuse(REF_CODES.feedMismatch, `refs/${opts.feed}.json holds the ref of feed ${quote(ref.feed)}`)
    const signature = expectString(member(ref, 'signature'), INVALID, 'signature', { nonEmpty: true })
    return { ref: { ...ref, signature }, minor }
  })
}

function readUnsignedRef(value: unknown): { ref: UnsignedRef; minor: number } {
  const { doc, minor } = checkFormatAndVersion(value, REF_FORMAT)
  const feed = member(doc, 'feed')
  if (!isFeedName(feed)) refuse(INVALID, `feed ${quote(feed)} is not 1 to 64 letters, digits and -`)
  const ref: UnsignedRef = {
    ...doc,
    feed,
    format: REF_FORMAT,
    manifest: expectHash(member(doc, 'manifest'), 'manifest', true),
    publisher: expectFingerprint(member(doc, 'publisher'), INVALID, 'publisher'),
    seq: expectInteger(member(doc, 'seq'), INVALID, 'seq', 1),
    updated: expectTime(member(doc, 'updated'), INVALID, 'updated'),
    version: member(doc, 'version') as string,
  }
  return { ref, minor }
}

/**
 * Verifies a ref's signature: an sshsig in namespace jetcarp-ref over refSignedBytes, by the key its
 * publisher names or a machine key that key's statement authorises (as `chain` says). Never throws.
 */
export function verifyRef(chain: KeyChain, ref: RefDocument): AuthoriseResult & { fingerprint?: string } {
  let message: Buffer
  try {
    message = refSignedBytes(ref)
  } catch (err) {
    return { ok: false, code: INVALID, detail: `ref has no RFC 8785 form: ${err instanceof Error ? err.message : String(err)}` }
  }
  return verifySignedByPublisher(chain, { publisher: ref.publisher, signature: ref.signature, message, namespace: NS_REF })
}

/** What a follower keeps per (publisher id, feed): the last ref it accepted. */
export interface RefPosition {
  seq: number
  manifest: string
}

/**
 * The follower's rule: with nothing accepted yet, or a higher seq, the ref is an update; the same seq
 * and manifest is no update; the same seq with another manifest, or a lower seq, is a rollback.
 */
export function followRef(last: RefPosition | undefined, next: RefPosition): { ok: true; update: boolean } | Refusal {
  if (last === undefined || next.seq > last.seq) return { ok: true, update: true }
  if (next.seq === last.seq && next.manifest === last.manifest) return { ok: true, update: false }
  if (next.seq === last.seq) return refusal(REF_CODES.rollback, `seq ${next.seq} again, naming ${next.manifest} instead of ${last.manifest}`)
  return refusal(REF_CODES.rollback, `seq ${next.seq} is below the accepted ${last.seq}`)
}

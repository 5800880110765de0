/**
 * What every JSON document of a pack shares (pack format 1.0, "Encodings"): manifests, indexes, refs,
 * key statements and jetcarp-store.json are RFC 8785 bytes of at most 16 MiB, nested at most 32 deep,
 * with integers only, inside ±2^53 with the bound excluded. This module reads such bytes from hostile
 * input, writes them, and holds the syntax of the names documents carry (hashes, targets, uuids, feeds,
 * table names, schema ids) and jetcarp-store.json itself. The documents are in doc-manifest.ts,
 * doc-index.ts and doc-ref.ts.
 *
 * Every check of the bytes happens before they are parsed: the length first, then one iterative pass of
 * the repo's RFC 8785 checker (UTF-8, BOM, syntax, nesting, canonical form, numbers), and only then
 * JSON.parse, which can no longer meet a deep or huge document.
 */
import { createHash } from 'node:crypto'
import canonicalize from 'canonicalize'
import { PipeError } from '../../../core/errors.js'
import { SHA256_NAME } from '../../../codec/hash.js'
import { CanonicalChecker, JsonCode, Kind, NumberFlag } from '../../json/canonical-check.js'
import { MAX_JSON_DEPTH, isPackTime } from '../keys/key-statements.js'
import { isFingerprint } from '../keys/ssh-key.js'

/** "manifest, index, ref or key statement: 16 MiB" (Limits); jetcarp-store.json is held to it too. */
export const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
/** "object: 4 GiB" (Limits): no object, and so no part, is larger. */
export const MAX_OBJECT_BYTES = 4 * 1024 ** 3

/** Stable codes of document findings. */
export const DOC_CODES = {
  /** Longer than 16 MiB (refused on the length, before reading further). */
  jsonTooLarge: 'pack.json-too-large',
  /** Starts with a UTF-8 byte order mark. */
  jsonBom: 'pack.json-bom',
  /** Bytes that are not UTF-8. */
  jsonNotUtf8: 'pack.json-not-utf8',
  /** Not JSON at all. */
  jsonInvalid: 'pack.json-invalid',
  /** Arrays and objects nested deeper than 32. */
  jsonTooDeep: 'pack.json-too-deep',
  /** JSON, but not its RFC 8785 bytes (whitespace, member order, escapes, number spelling, lone surrogates). */
  jsonNotCanonical: 'pack.json-not-canonical',
  /** An object names a member twice. */
  jsonDuplicateMember: 'pack.json-duplicate-member',
  /** A number written with a fraction or an exponent (1.0 and 1e5 included). */
  jsonNumberFraction: 'pack.json-number-fraction',
  /** An integer beyond ±(2^53 − 1). */
  jsonNumberRange: 'pack.json-number-range',
  /** format is not the document's (or the document is not an object). */
  format: 'pack.document-format',
  /** version is not major.minor. */
  versionMalformed: 'pack.version-malformed',
  /** A major version other than 1. */
  versionMajor: 'pack.version-major',
  /** A hash that is not `<algorithm>:<hex>`, or a sha256: one without exactly 64 lower-case hex digits. */
  hashMalformed: 'pack.hash-malformed',
  /** A well-formed hash of another algorithm where the object is needed. */
  hashPrefix: 'pack.hash-prefix',
  /** A target that is none of pattern:, ant:ant-, quickstart:qs-, search_run:<uuid>:<run id>. */
  targetMalformed: 'pack.target-malformed',
} as const

export interface Refusal {
  ok: false
  code: string
  detail: string
}

export type PackResult<T> = { ok: true; value: T } | Refusal

/** A document a builder wrote: its typed form, its RFC 8785 bytes and their hash. */
export interface BuiltDocument<T> {
  document: T
  bytes: Buffer
  hash: string
}

export function refusal(code: string, detail: string): Refusal {
  return { ok: false, code, detail }
}

// ---------------------------------------------------------------------------------------------------
// Reading and writing document bytes.

/** Whole document bytes from a stream (an HTTP body), refused as soon as they pass 16 MiB. */
export async function collectDocumentBytes(chunks: AsyncIterable<Uint8Array>): Promise<PackResult<Buffer>> {
  const parts: Buffer[] = []
  let total = 0
  for await (const chunk of chunks) {
    total += chunk.byteLength
    if (total > MAX_DOCUMENT_BYTES) return refusal(DOC_CODES.jsonTooLarge, `document longer than ${MAX_DOCUMENT_BYTES} bytes`)
    parts.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))
  }
  return { ok: true, value: Buffer.concat(parts, total) }
}

const utf8 = new TextDecoder('utf-8')
const MAX_SAFE_DIGITS = String(Number.MAX_SAFE_INTEGER)

/**
 * Parses document bytes after checking every rule of "Encodings" on them. Returns the JSON value (any
 * type: the document parsers check its shape).
 */
export function readPackJson(bytes: Uint8Array): PackResult<unknown> {
  if (bytes.byteLength > MAX_DOCUMENT_BYTES) return refusal(DOC_CODES.jsonTooLarge, `document is ${bytes.byteLength} bytes, more than ${MAX_DOCUMENT_BYTES}`)
  // A checker per document: its tape grows with the document, and must not stay grown after a hostile one.
  const checker = new CanonicalChecker({ integersOnly: true, maxDepth: MAX_JSON_DEPTH })
  const code = checker.check(bytes, 0, bytes.byteLength)
  if (code !== JsonCode.OK) {
    const fatal = FATAL_CODES.get(code)
    if (fatal !== undefined) return refusal(fatal, checker.describe())
    // The checker keeps only its first soft finding; a number's problem is named before a spelling one.
    const numberProblem = findNumberProblem(checker, bytes)
    if (numberProblem) return numberProblem
    return refusal(code === JsonCode.DUPLICATE_KEY ? DOC_CODES.jsonDuplicateMember : DOC_CODES.jsonNotCanonical, checker.describe())
  }
  return { ok: true, value: JSON.parse(utf8.decode(bytes)) as unknown }
}

const FATAL_CODES: ReadonlyMap<number, string> = new Map([
  [JsonCode.NOT_UTF8, DOC_CODES.jsonNotUtf8],
  [JsonCode.BOM, DOC_CODES.jsonBom],
  [JsonCode.SYNTAX, DOC_CODES.jsonInvalid],
  [JsonCode.TOO_DEEP, DOC_CODES.jsonTooDeep],
])

/** The first number (in document order) with a fraction or exponent, or beyond ±(2^53 − 1). */
function findNumberProblem(checker: CanonicalChecker, bytes: Uint8Array): Refusal | undefined {
  const tape = checker.tape
  for (let t = 0; t < tape.length; t++) {
    if (tape.kind[t] !== Kind.NUMBER) continue
    const start = tape.start[t]!
    const text = tape.text(bytes, t)
    if ((tape.aux[t]! & NumberFlag.NOT_INTEGER_FORM) !== 0) return refusal(DOC_CODES.jsonNumberFraction, `number ${text} at byte ${start} has a fraction or an exponent`)
    const digits = text.startsWith('-') ? text.slice(1) : text
    if (digits.length > MAX_SAFE_DIGITS.length || (digits.length === MAX_SAFE_DIGITS.length && digits > MAX_SAFE_DIGITS)) {
      return refusal(DOC_CODES.jsonNumberRange, `integer ${text} at byte ${start} is beyond ±(2^53 − 1)`)
    }
  }
  return undefined
}

/** Whether a JS value nests arrays and objects deeper than `max` (iterative: builder input is not trusted to be shallow). */
function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!
    if (v === null || typeof v !== 'object') continue
    if (depth + 1 > max) return true
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1])
  }
  return false
}

/**
 * The RFC 8785 bytes of a document, checked by the same rules a reader applies (so nothing is written
 * that a reader refuses). Throws a PipeError with the finding's code.
 */
export function writePackJson(doc: unknown): Buffer {
  if (nestsDeeperThan(doc, MAX_JSON_DEPTH)) throw new PipeError(DOC_CODES.jsonTooDeep, `document nests deeper than ${MAX_JSON_DEPTH}`)
  let text: string | undefined
  try {
    text = canonicalize(doc)
  } catch (err) {
    throw new PipeError(DOC_CODES.jsonInvalid, `document has no RFC 8785 form: ${err instanceof Error ? err.message : String(err)}`)
  }
  if (text === undefined) throw new PipeError(DOC_CODES.jsonInvalid, 'document has no JSON form')
  const bytes = Buffer.from(text, 'utf8')
  const check = readPackJson(bytes)
  if (!check.ok) throw new PipeError(check.code, check.detail)
  return bytes
}

/**
 * A builder's last step: the document's bytes, read back by the reader's own parser, so a builder writes
 * only what a reader accepts. Throws a PipeError with the reader's code.
 */
export function writeChecked<P>(doc: unknown, parse: (bytes: Uint8Array) => PackResult<P>, what: string): { bytes: Buffer; parsed: P } {
  const bytes = writePackJson(doc)
  const parsed = parse(bytes)
  if (!parsed.ok) throw new PipeError(parsed.code, `${what} would be refused: ${parsed.detail}`)
  return { bytes, parsed: parsed.value }
}

/** The `sha256:` hash of bytes, as documents write it. */
export function objectHash(bytes: Uint8Array): string {
  return HASH_PREFIX + createHash('sha256').update(bytes).digest('hex')
}

// ---------------------------------------------------------------------------------------------------
// Checking a parsed document's members. Validators throw a DocumentRefusal at the first problem, and
// `parseWith` turns it into a Refusal, so each check reads as one line.

class DocumentRefusal extends Error {
  constructor(
    readonly code: string,
    readonly detail: string,
  ) {
    super(detail)
  }
}

export function refuse(code: string, detail: string): never {
  throw new DocumentRefusal(code, detail)
}

/** Runs a validator over document bytes: the JSON rules first, then `validate` on the value. Never throws. */
export function parseWith<T>(bytes: Uint8Array, validate: (value: unknown) => T): PackResult<T> {
  const json = readPackJson(bytes)
  if (!json.ok) return json
  try {
    return { ok: true, value: validate(json.value) }
  } catch (err) {
    if (err instanceof DocumentRefusal) return refusal(err.code, err.detail)
    return refusal(DOC_CODES.jsonInvalid, `document could not be read: ${err instanceof Error ? err.message : String(err)}`)
  }
}

export type JsonObject = { [member: string]: unknown }

export function isJsonObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

/**
 * A member's value when the object has it as its own (never one inherited from Object.prototype), else
 * `absent`: only a missing member takes the default, a null one stays null (and is refused by its check).
 */
export function member(o: JsonObject, name: string, absent?: unknown): unknown {
  return Object.hasOwn(o, name) ? o[name] : absent
}

/** Shortens untrusted text for a message. */
export function quote(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v) ?? String(v)
  return JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}...` : s)
}

export function expectObject(v: unknown, code: string, where: string): JsonObject {
  if (!isJsonObject(v)) refuse(code, `${where} is not an object`)
  return v
}

export function expectArray(v: unknown, code: string, where: string, max = Infinity, tooMany: string = code): unknown[] {
  if (!Array.isArray(v)) refuse(code, `${where} is not an array`)
  if (v.length > max) refuse(tooMany, `${where} lists ${v.length} entries, more than ${max}`)
  return v
}

export function expectString(v: unknown, code: string, where: string, opts: { nonEmpty?: boolean } = {}): string {
  if (typeof v !== 'string') refuse(code, `${where} is not a string`)
  if (opts.nonEmpty === true && v === '') refuse(code, `${where} is empty`)
  return v
}

/** An integer member in [min, max] (the JSON rules have already bounded it by ±(2^53 − 1)). */
export function expectInteger(v: unknown, code: string, where: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) refuse(code, `${where} is not an integer`)
  if (v < min || v > max) refuse(code, `${where} is ${v}, outside ${min}..${max}`)
  return v
}

export function expectTime(v: unknown, code: string, where: string): string {
  if (!isPackTime(v)) refuse(code, `${where} ${quote(v)} is not an RFC 3339 UTC time with whole seconds and Z`)
  return v
}

export function expectFingerprint(v: unknown, code: string, where: string): string {
  if (!isFingerprint(v)) refuse(code, `${where} ${quote(v)} is not a SHA256: fingerprint`)
  return v
}

/** An object whose members all pass `check`, as a record without a prototype (so no member name means anything to JS). */
export function expectRecord<T>(v: unknown, code: string, where: string, check: (name: string, value: unknown) => T): Record<string, T> {
  const o = expectObject(v, code, where)
  const out = Object.create(null) as Record<string, T>
  for (const [name, value] of Object.entries(o)) out[name] = check(name, value)
  return out
}

/** Checks `format` and `version` (major.minor, major 1; a higher minor is read). Returns the minor. */
export function checkFormatAndVersion(doc: unknown, format: string): { doc: JsonObject; minor: number } {
  if (!isJsonObject(doc)) refuse(DOC_CODES.format, `document is not a JSON object, so not ${format}`)
  const f = member(doc, 'format')
  if (f !== format) refuse(DOC_CODES.format, `format is ${quote(f)}, not ${format}`)
  const v = member(doc, 'version')
  const m = typeof v === 'string' ? /^(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})$/.exec(v) : null
  if (!m) refuse(DOC_CODES.versionMalformed, `version ${quote(v)} is not major.minor`)
  if (m[1] !== '1') refuse(DOC_CODES.versionMajor, `version ${v} has major ${m[1]}; this reader knows major 1 only`)
  return { doc, minor: Number(m[2]) }
}

// ---------------------------------------------------------------------------------------------------
// Names documents carry.

export const HASH_PREFIX = 'sha256:'
// Any algorithm's hash in the same shape; what another prefix may look like without being malformed.
const ANY_HASH_RE = /^[a-z][a-z0-9-]{0,31}:[0-9a-f]{2,256}$/

/** Whether `s` is `sha256:` and 64 lower-case hex digits. */
export function isSha256Hash(s: unknown): s is string {
  return typeof s === 'string' && SHA256_NAME.test(s)
}

/**
 * Checks a hash member. `needed`: the reader fetches the object by it, so it must be sha256; otherwise
 * (parents, retain, slice_of) a well-formed hash of another algorithm is kept, as the spec asks a
 * reader to refuse it only where it needs the object. A malformed hash is refused everywhere.
 */
export function expectHash(v: unknown, where: string, needed: boolean): string {
  if (typeof v !== 'string' || !ANY_HASH_RE.test(v) || (v.startsWith(HASH_PREFIX) && !SHA256_NAME.test(v))) {
    refuse(DOC_CODES.hashMalformed, `${where} ${quote(v)} is not sha256: and 64 lower-case hex digits`)
  }
  if (needed && !SHA256_NAME.test(v)) refuse(DOC_CODES.hashPrefix, `${where} ${quote(v)} is not a sha256: hash, and its object is needed`)
  return v
}

/** expectHash for a value outside a document (a table cell): its refusal, or undefined when the hash is good. */
export function hashRefusal(v: unknown, where: string, needed: boolean): Refusal | undefined {
  try {
    expectHash(v, where, needed)
    return undefined
  } catch (err) {
    if (err instanceof DocumentRefusal) return refusal(err.code, err.detail)
    throw err
  }
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const CONTENT_ID_RE = /^[0-9a-f]{32}$/
const RUN_ID_RE = /^(0|[1-9][0-9]{0,18})$/
const MAX_RUN_ID = 2n ** 63n - 1n
const FEED_RE = /^[A-Za-z0-9-]{1,64}$/
const TABLE_NAME_RE = /^[a-z][a-z0-9_]{0,63}$/
const SCHEMA_ID_RE = /^jetcarp-([a-z][a-z0-9_-]{0,63}) ([1-9][0-9]{0,8})$/

/** A rule-semantics version: a positive integer of at most nine digits, written as a string (manifests and table rows alike). */
export const SEMANTICS_VERSION_RE = /^[1-9][0-9]{0,8}$/

/** A search uuid: 8-4-4-4-12 lower-case hex (one spelling, since it names folders). */
export function isUuid(s: unknown): s is string {
  return typeof s === 'string' && UUID_RE.test(s)
}

/** A content id: 32 lower-case hex digits. */
export function isContentId(s: unknown): s is string {
  return typeof s === 'string' && CONTENT_ID_RE.test(s)
}

/** A search run id: a decimal integer in 0..2^63 − 1 with no leading zeros, as index parts' first and last write it. */
export function isRunId(s: unknown): s is string {
  return typeof s === 'string' && RUN_ID_RE.test(s) && BigInt(s) <= MAX_RUN_ID
}

/** A feed name: 1 to 64 ASCII letters, digits and -. */
export function isFeedName(s: unknown): s is string {
  return typeof s === 'string' && FEED_RE.test(s)
}

/** A table name (and a partition key, which names a column): a lower-case letter, then lower-case letters, digits and _. */
export function isTableName(s: unknown): s is string {
  return typeof s === 'string' && TABLE_NAME_RE.test(s)
}

/** A schema id `jetcarp-<name> <n>` (jetcarp-patterns 1, jetcarp-score_models 1, jetcarp-explore-runs 1), or undefined. */
export function parseSchemaId(s: unknown): { name: string; number: number } | undefined {
  const m = typeof s === 'string' ? SCHEMA_ID_RE.exec(s) : null
  return m ? { name: m[1]!, number: Number(m[2]) } : undefined
}

export type Target =
  | { kind: 'pattern'; id: string }
  | { kind: 'ant'; id: string }
  | { kind: 'quickstart'; id: string }
  | { kind: 'search_run'; search: string; run: string }

/**
 * Parses a target: `pattern:<32 hex>`, `ant:ant-<32 hex>`, `quickstart:qs-<32 hex>` (id is the table's
 * id: `<hex>`, `ant-<hex>`, `qs-<hex>`) or `search_run:<uuid>:<run id>`.
 */
export function parseTarget(s: unknown): PackResult<Target> {
  const colon = typeof s === 'string' ? s.indexOf(':') : -1
  if (typeof s === 'string' && colon > 0) {
    const kind = s.slice(0, colon)
    const rest = s.slice(colon + 1)
    if (kind === 'pattern' && isContentId(rest)) return { ok: true, value: { kind, id: rest } }
    if (kind === 'ant' && rest.startsWith('ant-') && isContentId(rest.slice(4))) return { ok: true, value: { kind, id: rest } }
    if (kind === 'quickstart' && rest.startsWith('qs-') && isContentId(rest.slice(3))) return { ok: true, value: { kind, id: rest } }
    if (kind === 'search_run') {
      const search = rest.slice(0, 36)
      const run = rest.slice(37)
      if (isUuid(search) && rest[36] === ':' && isRunId(run)) return { ok: true, value: { kind, search, run } }
    }
  }
  return refusal(DOC_CODES.targetMalformed, `target ${quote(s)} is none of pattern:<32 hex>, ant:ant-<32 hex>, quickstart:qs-<32 hex>, search_run:<uuid>:<run id>`)
}

/** The target text of a parsed target. */
export function formatTarget(t: Target): string {
  return t.kind === 'search_run' ? `search_run:${t.search}:${t.run}` : `${t.kind}:${t.id}`
}

// ---------------------------------------------------------------------------------------------------
// jetcarp-store.json.

export const STORE_FORMAT = 'jetcarp-store'
export const DOCUMENT_VERSION = '1.0'

/** The bytes of jetcarp-store.json: {"format":"jetcarp-store","version":"1.0"}. */
export function storeDocumentBytes(): Buffer {
  return writePackJson({ format: STORE_FORMAT, version: DOCUMENT_VERSION })
}

/** Checks jetcarp-store.json: the JSON rules, format jetcarp-store, version 1.x. Returns the minor. */
export function parseStoreDocument(bytes: Uint8Array): PackResult<{ minor: number }> {
  return parseWith(bytes, (v) => ({ minor: checkFormatAndVersion(v, STORE_FORMAT).minor }))
}

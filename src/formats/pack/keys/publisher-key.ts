/**
 * The publisher's key (`pipe pack key`; pack format 1.0, "Signatures and keys", "The command line"): an
 * Ed25519 key in OpenSSH format and the signed key statements that say who the publisher is. The CLI,
 * pack-publish and the tests all go through these functions.
 *
 * Files, all beside the private key (`<settings>/pack/publisher_ed25519` by default, or `--key FILE`):
 *
 *   <key>                         the current private key, unencrypted OpenSSH, mode 0600
 *   <key>.pub                     its public key line
 *   <key>.statement.json          its current statement, RFC 8785 bytes: what a store holds as keys/<signer>.json
 *   <key>.predecessor             after a rotation, the previous private key (0600): a successor's
 *                                 statements are signed by its predecessor, so every later update needs it
 *   <key>.chain/<signer>.json     each earlier key's last statement
 *   <key>.chain/<signer>.revocation.json   its revocation, signed by its successor, when the rotation
 *                                 revoked it (--revoke: the key was compromised)
 *   <key>.rotation/               a rotation being written (see settleRotation)
 *
 * Every file is written atomically. A rotation changes several files, so it is staged whole in
 * <key>.rotation/ and committed by a `ready` marker written last; whoever loads the key next finishes a
 * committed rotation (every staged file renamed into place) or discards one that was not committed.
 */
import { mkdir, readdir, rename, rm, unlink } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fsyncDir, writeFileAtomic } from '../../../core/atomic-write.js'
import { EXIT_USAGE, PipeError } from '../../../core/errors.js'
import { readInputFile } from '../../../core/input-file.js'
import {
  buildKeyStatement,
  isPackTime,
  keyStatementBytes,
  MAX_KEY_STATEMENT_BYTES,
  parseKeyStatement,
  revocationStatement,
  updateAuthorised,
  verifyKeyChain,
  type AuthorisedEntry,
  type KeyStatementDocument,
  type MachineKeyState,
} from './key-statements.js'
import {
  fingerprint,
  formatPrivateKey,
  formatPublicKey,
  generateKey,
  parsePrivateKey,
  parsePublicKey,
  signerName,
  signerNameFromFingerprint,
  withComment,
  type SshPrivateKey,
  type SshPublicKey,
} from './ssh-key.js'

/** Stable codes of the publisher key's findings. All are exit 2: the user's files or flags, not pack data. */
export const PUBLISHER_KEY_CODES = {
  /** No private key at the path. */
  missing: 'pack.publisher-key-missing',
  /** A private key but no statement yet (`pipe pack key` makes one). */
  noStatement: 'pack.publisher-key-no-statement',
  /** A statement is already there: making a key again would start another publisher. */
  exists: 'pack.publisher-key-exists',
  /** The files disagree (a .pub or statement of another key), or the statements do not make the key stand. */
  inconsistent: 'pack.publisher-key-inconsistent',
  /** A file that cannot be read as what it should be (not an unencrypted Ed25519 key, not a statement). */
  unreadable: 'pack.publisher-key-unreadable',
  /** A change that cannot be made: authorising a key twice or the publisher's own, revoking one not authorised, an update that needs the missing predecessor. */
  badChange: 'pack.publisher-key-bad-change',
} as const

/** The comment of the keys we make (in the key files only: statements are written without comments). */
export const PUBLISHER_KEY_COMMENT = 'pipe-pack-publisher'

const PRIVATE_MODE = 0o600
const FOLDER_MODE = 0o700
const READY_MARKER = 'ready'

function fail(code: string, message: string): never {
  throw new PipeError(code, message, { exitCode: EXIT_USAGE })
}

// Where the key lives: key-home.ts, apart so that naming the default path loads nothing else.
export { defaultPublisherKeyPath, settingsDir } from './key-home.js'

export interface PublisherKeyFiles {
  privateKey: string
  publicKey: string
  statement: string
  predecessor: string
  chain: string
  rotation: string
}

/** The files of the key at `path` (see the module comment). */
export function publisherKeyFiles(path: string): PublisherKeyFiles {
  const p = resolve(path)
  return { privateKey: p, publicKey: `${p}.pub`, statement: `${p}.statement.json`, predecessor: `${p}.predecessor`, chain: `${p}.chain`, rotation: `${p}.rotation` }
}

// ---------------------------------------------------------------------------------------------------
// Who the publisher is: checked input.

export interface PublisherDetails {
  name?: string
  orcid?: string
  github?: string
}

export type DetailField = keyof PublisherDetails

const ORCID_RE = /^[0-9]{4}-[0-9]{4}-[0-9]{4}-[0-9]{3}[0-9X]$/
// GitHub's rule for user and organisation names: letters, digits and single inner hyphens, at most 39.
const GITHUB_RE = /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/
const MAX_NAME_CHARS = 200
// C0 and C1 controls, DEL, and the Unicode line and paragraph separators: a name is one line of text.
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/

/** The ISO 7064 MOD 11-2 check character of an ORCID iD's first 15 digits. */
function orcidCheckCharacter(digits: string): string {
  let total = 0
  for (const d of digits) total = (total + Number(d)) * 2
  const r = (12 - (total % 11)) % 11
  return r === 10 ? 'X' : String(r)
}

/**
 * Why a detail cannot be recorded, or undefined when it can. '' is always accepted: it removes the
 * member. An orcid is the bare iD (0000-0002-1825-0097) with a correct check character; a github a
 * GitHub user name; a name one line of at most 200 characters without surrounding spaces.
 */
export function detailProblem(field: DetailField, value: string): string | undefined {
  if (value === '') return undefined
  if (field === 'orcid') {
    if (!ORCID_RE.test(value)) return `${JSON.stringify(value)} is not a bare ORCID iD like 0000-0002-1825-0097 (no https://orcid.org/)`
    const digits = value.replaceAll('-', '')
    if (orcidCheckCharacter(digits.slice(0, 15)) !== digits[15]) return `${value} has a wrong check character (a mistyped digit?)`
    return undefined
  }
  if (field === 'github') return GITHUB_RE.test(value) ? undefined : `${JSON.stringify(value)} is not a GitHub user name (letters, digits and single inner hyphens, at most 39)`
  if (CONTROL_RE.test(value)) return 'a name is one line of text, without control characters'
  if (value.trim() !== value) return 'a name has no leading or trailing spaces'
  if ([...value.normalize('NFC')].length > MAX_NAME_CHARS) return `a name is at most ${MAX_NAME_CHARS} characters`
  return undefined
}

/** The first detail that cannot be recorded, thrown as pack.publisher-key-bad-change. */
function checkDetails(details: PublisherDetails): void {
  for (const field of ['name', 'orcid', 'github'] as const) {
    const v = details[field]
    const problem = v === undefined ? undefined : detailProblem(field, v)
    if (problem !== undefined) fail(PUBLISHER_KEY_CODES.badChange, `${field}: ${problem}`)
  }
}

/** The current statement's details with `changes` over them ('' removes a member). */
function mergeDetails(statement: KeyStatementDocument | undefined, changes: PublisherDetails): PublisherDetails {
  const merged: PublisherDetails = {}
  for (const field of ['name', 'orcid', 'github'] as const) {
    const v = changes[field] ?? statement?.[field]
    if (v !== undefined && v !== '') merged[field] = v
  }
  return merged
}

// ---------------------------------------------------------------------------------------------------
// The loaded key.

export interface EarlierKey {
  fingerprint: string
  signer: string
  /** Its last statement (a first statement, or a successor's signed by its own predecessor). */
  statement: KeyStatementDocument
  /** Its revocation, signed by the key that succeeded it, when the rotation revoked it; else it still stands for what it signed. */
  revocation?: KeyStatementDocument
}

/** Who publishes, as the key files say, without the private key: what a version names, and whose signature it needs. */
export interface PublisherIdentity {
  files: PublisherKeyFiles
  /** The current key's public half. */
  publicKey: SshPublicKey
  /** The current key's SHA256: fingerprint: what manifests and refs name in publisher. */
  fingerprint: string
  /** Its `<signer>` name (keys/<signer>.json, sigs/.../<signer>.sig). */
  signer: string
  /** The current key's statement. */
  statement: KeyStatementDocument
  /**
   * The statements a store carries for this publisher, as file bytes, one per key (keys/<signer>.json),
   * the current key's first: for the first key of the chain its revocation when it was revoked (a
   * revocation without supersedes stands as a first key, so the chain still begins there), else its
   * statement; for each key between, its last
   * statement, since only that links it to its predecessor (a store has one file per key, so its
   * revocation cannot go there too).
   */
  statements: Buffer[]
  /** Every earlier key, newest first. */
  earlier: EarlierKey[]
  /** The publisher's id: the first key of the chain, which never changes. */
  publisherId: string
  /** Machine keys the current key's statement authorises (revoked ones marked). */
  machineKeys: MachineKeyState[]
}

export interface PublisherKey extends PublisherIdentity {
  /** The current private key: it signs manifests and refs. */
  key: SshPrivateKey
  /** The previous key, after a rotation: the signer of this key's statements. */
  predecessor?: SshPrivateKey
}

/** A key file or statement the publisher keeps: the largest is a key statement, which the spec bounds (Limits). */
const PUBLISHER_FILE_LIMIT = { maxBytes: MAX_KEY_STATEMENT_BYTES, what: "a publisher's key file or statement" }

async function readOptional(path: string): Promise<Buffer | undefined> {
  try {
    return await readInputFile(path, PUBLISHER_FILE_LIMIT)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
}

function readPrivateKey(path: string, bytes: Buffer): SshPrivateKey {
  const parsed = parsePrivateKey(bytes.toString('utf8'))
  if (!parsed.ok) fail(PUBLISHER_KEY_CODES.unreadable, `${path}: ${parsed.detail} (${parsed.code})`)
  return parsed.value
}

function readStatement(path: string, bytes: Buffer): KeyStatementDocument {
  const parsed = parseKeyStatement({ statement: bytes, source: path })
  if (!parsed.ok) {
    const f = parsed.findings[0]!
    fail(PUBLISHER_KEY_CODES.unreadable, `${path}: ${f.detail} (${f.code})`)
  }
  return parsed.statement.document
}

/**
 * Loads the key at `path` with its statements, after settling an interrupted rotation, and checks that
 * they agree: the .pub (when there) and the statement are the private key's, the earlier keys are
 * reached by following supersedes, and verifyKeyChain finds the current key standing, unrevoked, and
 * each earlier key revoked when there is its revocation, standing when there is not. Throws pack.publisher-key-missing when there is no private key, and
 * pack.publisher-key-no-statement when there is a key but no statement yet.
 */
export async function loadPublisherKey(path: string): Promise<PublisherKey> {
  const files = publisherKeyFiles(path)
  await settleRotation(files)
  const keyBytes = await readOptional(files.privateKey)
  if (keyBytes === undefined) fail(PUBLISHER_KEY_CODES.missing, `no publisher key at ${files.privateKey} (pipe pack key makes one)`)
  const privateKey = readPrivateKey(files.privateKey, keyBytes)
  const fp = fingerprint(privateKey.publicKey)
  const pubText = await readOptional(files.publicKey)
  if (pubText !== undefined) {
    const pub = parsePublicKey(pubText.toString('utf8'))
    if (!pub.ok || fingerprint(pub.value) !== fp) fail(PUBLISHER_KEY_CODES.inconsistent, `${files.publicKey} is not the public key of ${files.privateKey} (${fp})`)
  }
  const identity = await identityOf(files, privateKey.publicKey, files.privateKey)
  let predecessor: SshPrivateKey | undefined
  const predecessorBytes = await readOptional(files.predecessor)
  if (predecessorBytes !== undefined) {
    predecessor = readPrivateKey(files.predecessor, predecessorBytes)
    if (fingerprint(predecessor.publicKey) !== identity.statement.supersedes) fail(PUBLISHER_KEY_CODES.inconsistent, `${files.predecessor} is not the key ${fp} supersedes`)
  }
  return { ...identity, key: privateKey, ...(predecessor !== undefined ? { predecessor } : {}) }
}

/**
 * The publisher the key files at `path` name, from the public key (`<path>.pub`) and the statements, held
 * to the same rules as {@link loadPublisherKey}: for a private key pipe never reads (an external signer's).
 */
export async function loadPublisherIdentity(path: string): Promise<PublisherIdentity> {
  const files = publisherKeyFiles(path)
  await settleRotation(files)
  const pubText = await readOptional(files.publicKey)
  if (pubText === undefined) fail(PUBLISHER_KEY_CODES.missing, `no publisher public key at ${files.publicKey} (pipe pack key makes one)`)
  const pub = parsePublicKey(pubText.toString('utf8'))
  if (!pub.ok) fail(PUBLISHER_KEY_CODES.unreadable, `${files.publicKey}: ${pub.detail} (${pub.code})`)
  return identityOf(files, pub.value, files.publicKey)
}

async function identityOf(files: PublisherKeyFiles, publicKey: SshPublicKey, keyFile: string): Promise<PublisherIdentity> {
  const fp = fingerprint(publicKey)
  const statementBytes = await readOptional(files.statement)
  if (statementBytes === undefined) fail(PUBLISHER_KEY_CODES.noStatement, `${keyFile} has no statement yet (${files.statement}); pipe pack key makes it`)
  const statement = readStatement(files.statement, statementBytes)
  if (statement.fingerprint !== fp) fail(PUBLISHER_KEY_CODES.inconsistent, `${files.statement} is the statement of ${statement.fingerprint}, not of ${keyFile} (${fp})`)

  const earlier: EarlierKey[] = []
  const seen = new Set([fp])
  for (let previous = statement.supersedes; previous !== undefined; ) {
    const signer = signerNameFromFingerprint(previous)
    if (signer === undefined || seen.has(previous)) fail(PUBLISHER_KEY_CODES.inconsistent, `the chain of ${fp} supersedes ${previous} again or in no valid form`)
    seen.add(previous)
    const statementFile = join(files.chain, `${signer}.json`)
    const bytes = await readOptional(statementFile)
    if (bytes === undefined) fail(PUBLISHER_KEY_CODES.inconsistent, `${statementFile} is missing: the chain of statements from ${fp} stops at ${previous}`)
    const st = readStatement(statementFile, bytes)
    const revocationFile = join(files.chain, `${signer}.revocation.json`)
    const revocationBytes = await readOptional(revocationFile)
    earlier.push({ fingerprint: previous, signer, statement: st, ...(revocationBytes !== undefined ? { revocation: readStatement(revocationFile, revocationBytes) } : {}) })
    previous = st.supersedes
  }

  const chain = verifyKeyChain(chainStatementsOf(statement, earlier).map((s) => ({ statement: s })))
  const state = chain.keys.get(fp)
  if (state?.status !== 'active' || state.publisherId === undefined) {
    const why = state?.reason ?? chain.findings[0]
    fail(PUBLISHER_KEY_CODES.inconsistent, `the statements at ${keyFile} do not make ${fp} stand${why ? `: ${why.detail} (${why.code})` : ''}`)
  }
  for (const e of earlier) {
    const earlierState = chain.keys.get(e.fingerprint)
    if (e.revocation !== undefined && earlierState?.revoked !== true) fail(PUBLISHER_KEY_CODES.inconsistent, `earlier key ${e.fingerprint} is not revoked by its revocation in ${files.chain}`)
    if (e.revocation === undefined && earlierState?.status !== 'active') fail(PUBLISHER_KEY_CODES.inconsistent, `earlier key ${e.fingerprint} has no revocation in ${files.chain} but does not stand${earlierState?.reason ? `: ${earlierState.reason.detail} (${earlierState.reason.code})` : ''}`)
  }
  return {
    files,
    publicKey,
    fingerprint: fp,
    signer: signerName(publicKey),
    statement,
    statements: [statementBytes, ...earlier.map((e) => keyStatementBytes(e.statement.supersedes === undefined ? (e.revocation ?? e.statement) : e.statement))],
    earlier,
    publisherId: state.publisherId,
    machineKeys: [...state.authorised.values()],
  }
}

/** Every statement the key directory keeps, for verifyKeyChain: the current one, each earlier key's and its revocation if any. */
export function chainStatements(key: PublisherKey): KeyStatementDocument[] {
  return chainStatementsOf(key.statement, key.earlier)
}

function chainStatementsOf(current: KeyStatementDocument, earlier: readonly EarlierKey[]): KeyStatementDocument[] {
  return [current, ...earlier.flatMap((e) => (e.revocation !== undefined ? [e.statement, e.revocation] : [e.statement]))]
}

// ---------------------------------------------------------------------------------------------------
// Making and changing.

/** Machine keys to authorise (public keys; their comments are not written) and fingerprints to revoke. */
export interface MachineKeyChange {
  authorise?: { key: SshPublicKey; label?: string }[]
  revoke?: string[]
}

export interface StatementChange extends MachineKeyChange {
  details?: PublisherDetails
  /** The new statement's created time (RFC 3339 UTC, whole seconds). */
  created: string
}

/** Now as a pack time: RFC 3339 UTC with whole seconds. */
export function packTimeNow(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/**
 * The statement of `key` signed by `signer` (the key itself for a first statement, its predecessor for
 * a successor's): the details, the machine keys it already authorised, then the change. Comments are
 * left out of every key line: they often hold a user and host name, which a pack must not carry
 * unless the person chose to be named.
 */
function signedStatement(key: SshPublicKey, signer: SshPrivateKey, supersedes: string | undefined, details: PublisherDetails, authorised: readonly AuthorisedEntry[], change: StatementChange): KeyStatementDocument {
  if (!isPackTime(change.created)) fail(PUBLISHER_KEY_CODES.badChange, `created ${JSON.stringify(change.created)} is not an RFC 3339 UTC time with whole seconds`)
  checkDetails(details)
  const fp = fingerprint(key)
  const add = (change.authorise ?? []).map((a) => {
    if (fingerprint(a.key) === fp) fail(PUBLISHER_KEY_CODES.badChange, `${fp} is the publisher's own key, not a machine key`)
    if (authorised.some((e) => e.fingerprint === fingerprint(a.key))) fail(PUBLISHER_KEY_CODES.badChange, `${fingerprint(a.key)} is already authorised`)
    const labelProblem = a.label === undefined ? undefined : detailProblem('name', a.label)
    if (labelProblem !== undefined) fail(PUBLISHER_KEY_CODES.badChange, `label: ${labelProblem}`)
    return { key: withComment(a.key, ''), ...(a.label !== undefined ? { label: a.label } : {}) }
  })
  for (const r of change.revoke ?? []) {
    if (!authorised.some((e) => e.fingerprint === r)) fail(PUBLISHER_KEY_CODES.badChange, `${r} is not a machine key of ${fp}`)
  }
  const unsigned = buildKeyStatement({
    key: withComment(key, ''),
    created: change.created,
    ...details,
    ...(supersedes !== undefined ? { supersedes } : {}),
    authorised: authorised.map((e) => ({ key: e.key, ...(e.label !== undefined ? { label: e.label } : {}), ...(e.revoked === true ? { revoked: true } : {}) })),
  })
  return updateAuthorised(unsigned, signer, { add, revoke: change.revoke ?? [] })
}

async function writePrivate(path: string, sk: SshPrivateKey): Promise<void> {
  await writeFileAtomic(path, formatPrivateKey(sk), { mode: PRIVATE_MODE })
}

async function writePublic(path: string, pk: SshPublicKey): Promise<void> {
  await writeFileAtomic(path, formatPublicKey(pk) + '\n')
}

/**
 * Makes the publisher's key at `path` and its first, self-signed statement. A private key already there
 * (one ssh-keygen made, given with --key) is kept and only its statement made; `seed` (32 bytes, for
 * tests and golden data) makes the key deterministic. Refuses when a statement is already there.
 */
export async function makePublisherKey(path: string, opts: StatementChange & { seed?: Uint8Array }): Promise<PublisherKey> {
  const files = publisherKeyFiles(path)
  await settleRotation(files)
  if ((await readOptional(files.statement)) !== undefined) fail(PUBLISHER_KEY_CODES.exists, `${files.privateKey} already has a statement: it is the publisher's key`)
  if ((await readOptional(files.predecessor)) !== undefined) fail(PUBLISHER_KEY_CODES.inconsistent, `${files.predecessor} is there but the statement is not: a first statement would start another publisher`)
  const existing = await readOptional(files.privateKey)
  if (existing !== undefined && opts.seed !== undefined) fail(PUBLISHER_KEY_CODES.exists, `${files.privateKey} is already a key: a seed makes a new one`)
  const sk = existing !== undefined ? readPrivateKey(files.privateKey, existing) : generateKey({ ...(opts.seed !== undefined ? { seed: opts.seed } : {}), comment: PUBLISHER_KEY_COMMENT })
  const statement = signedStatement(sk.publicKey, sk, undefined, mergeDetails(undefined, opts.details ?? {}), [], opts)
  await mkdir(dirname(files.privateKey), { recursive: true, mode: FOLDER_MODE })
  // The private key first: a crash before the statement leaves a key that the next run adopts.
  if (existing === undefined) await writePrivate(files.privateKey, sk)
  if (existing === undefined || (await readOptional(files.publicKey)) === undefined) await writePublic(files.publicKey, sk.publicKey)
  await writeFileAtomic(files.statement, keyStatementBytes(statement))
  return loadPublisherKey(path)
}

/**
 * Writes a new statement for the same key with the change (details, machine keys authorised or
 * revoked), or returns the key as it is when the new statement would say the same as the current one.
 * A successor's statement is signed by its predecessor, so it needs <key>.predecessor.
 */
export async function updatePublisherKey(key: PublisherKey, change: StatementChange): Promise<PublisherKey> {
  const details = mergeDetails(key.statement, change.details ?? {})
  const signer = key.statement.supersedes === undefined ? key.key : key.predecessor
  if (signer === undefined) fail(PUBLISHER_KEY_CODES.badChange, `${key.files.predecessor} is missing: this key's statements are signed by the key it succeeded`)
  const next = signedStatement(key.key.publicKey, signer, key.statement.supersedes, details, key.statement.authorised ?? [], change)
  if (sameClaims(next, key.statement)) return key
  await writeFileAtomic(key.files.statement, keyStatementBytes(next))
  return loadPublisherKey(key.files.privateKey)
}

/** Whether two statements say the same, whatever their created times and signatures. */
function sameClaims(a: KeyStatementDocument, b: KeyStatementDocument): boolean {
  const claims = ({ created: _c, signature: _s, ...rest }: KeyStatementDocument) => keyStatementBytes(rest as KeyStatementDocument)
  return claims(a).equals(claims(b))
}

/**
 * Rotates to a new key: the successor's statement (same details and machine keys, then the change)
 * signed by the current key. With `revokeOld` (the key was compromised) also the current key's
 * revocation, signed by the successor so that the successor stands after it (docs/pack-format-notes.md);
 * a revoked key signs nothing, so every version it signed then fails level 2. Without it the old key
 * stands for the versions it signed. The old key becomes the predecessor (it signs the successor's later
 * statements); the one before it, no longer needed, is deleted. Staged and committed whole
 * (settleRotation).
 */
export async function rotatePublisherKey(key: PublisherKey, change: StatementChange & { seed?: Uint8Array; revokeOld?: boolean }): Promise<PublisherKey> {
  const next = generateKey({ ...(change.seed !== undefined ? { seed: change.seed } : {}), comment: PUBLISHER_KEY_COMMENT })
  if (fingerprint(next.publicKey) === key.fingerprint) fail(PUBLISHER_KEY_CODES.badChange, 'the seed makes the current key again')
  const details = mergeDetails(key.statement, change.details ?? {})
  const statement = signedStatement(next.publicKey, key.key, key.fingerprint, details, key.statement.authorised ?? [], change)
  const revocation = change.revokeOld === true ? revocationStatement(key.statement, next, { created: change.created }) : undefined

  const { files } = key
  const staged = stagedFiles(files)
  await rm(files.rotation, { recursive: true, force: true })
  await mkdir(staged.chain, { recursive: true, mode: FOLDER_MODE })
  await writePrivate(staged.privateKey, next)
  await writePublic(staged.publicKey, next.publicKey)
  await writeFileAtomic(staged.statement, keyStatementBytes(statement))
  await writePrivate(staged.predecessor, key.key)
  await writeFileAtomic(join(staged.chain, `${key.signer}.json`), keyStatementBytes(key.statement))
  if (revocation !== undefined) await writeFileAtomic(join(staged.chain, `${key.signer}.revocation.json`), keyStatementBytes(revocation))
  await writeFileAtomic(join(files.rotation, READY_MARKER), '')
  return loadPublisherKey(files.privateKey)
}

/** Where a rotation stages each file: <key>.rotation/ mirrors the files it replaces. */
function stagedFiles(files: PublisherKeyFiles): Omit<PublisherKeyFiles, 'rotation'> {
  const at = (name: string) => join(files.rotation, name)
  return { privateKey: at('key'), publicKey: at('key.pub'), statement: at('statement.json'), predecessor: at('predecessor'), chain: at('chain') }
}

async function renameIfThere(from: string, to: string): Promise<void> {
  try {
    await rename(from, to)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
}

/**
 * Finishes or discards a rotation left by an interrupted run. With its `ready` marker the rotation was
 * committed: each staged file is renamed into place (the chain first, the private key last; a file
 * already moved is skipped, so this can itself be interrupted and run again), then the staging folder
 * goes. Without the marker it never happened and is removed. Nothing to do when there is none.
 */
export async function settleRotation(files: PublisherKeyFiles): Promise<void> {
  const ready = (await readOptional(join(files.rotation, READY_MARKER))) !== undefined
  if (ready) {
    const staged = stagedFiles(files)
    await mkdir(files.chain, { recursive: true, mode: FOLDER_MODE })
    for (const name of (await readdir(staged.chain).catch(() => [] as string[])).sort()) await renameIfThere(join(staged.chain, name), join(files.chain, name))
    await renameIfThere(staged.predecessor, files.predecessor)
    await renameIfThere(staged.statement, files.statement)
    await renameIfThere(staged.publicKey, files.publicKey)
    await renameIfThere(staged.privateKey, files.privateKey)
    await fsyncDir(dirname(files.privateKey))
    await fsyncDir(files.chain)
    await unlink(join(files.rotation, READY_MARKER))
  }
  await rm(files.rotation, { recursive: true, force: true })
}

// ---------------------------------------------------------------------------------------------------
// Showing.

/** What `pipe pack key` prints about a key: one `label  value` line each. */
export function describePublisherKey(key: PublisherKey): string[] {
  const lines: [string, string][] = [
    ['key', key.files.privateKey],
    ['fingerprint', key.fingerprint],
    ['signer', key.signer],
    ['public', formatPublicKey(key.key.publicKey, '')],
    ['publisher', key.publisherId === key.fingerprint ? `${key.publisherId} (this key)` : `${key.publisherId} (the first key: the publisher's id)`],
  ]
  for (const field of ['name', 'orcid', 'github'] as const) {
    const v = key.statement[field]
    if (v !== undefined) lines.push([field, v])
  }
  for (const e of key.earlier) lines.push(['succeeds', `${e.fingerprint} ${e.revocation !== undefined ? '(revoked: what it signed no longer counts)' : '(stands for what it signed)'}`])
  for (const m of key.machineKeys) lines.push(['machine', `${m.fingerprint}${m.label !== undefined ? ` ${m.label}` : ''}${m.revoked ? ' (revoked)' : ''}`])
  lines.push(['statement', key.files.statement])
  return lines.map(([label, value]) => `${label.padEnd(13)}${value}`)
}

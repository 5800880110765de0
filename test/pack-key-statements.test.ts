import { spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import canonicalize from 'canonicalize'
import t from 'tap'
import {
  KEY_STATEMENT_CODES as C,
  authoriseSigner,
  buildKeyStatement,
  firstKeyStatement,
  isPackTime,
  keyStatementBytes,
  keyStatementSignedBytes,
  keyStatementSignerName,
  parseKeyStatement,
  publisherIdOf,
  revocationStatement,
  signKeyStatement,
  successorKeyStatement,
  updateAuthorised,
  verifyKeyChain,
  verifySignedByPublisher,
  type KeyStatementDocument,
  type KeyStatementSource,
} from '../src/formats/pack/keys/key-statements.js'
import { fingerprint, formatPublicKey, generateKey, signerName, type SshPrivateKey } from '../src/formats/pack/keys/ssh-key.js'
import { NS_KEY, NS_MANIFEST, NS_REF, signSshsig } from '../src/formats/pack/keys/sshsig.js'
import { needs } from './helpers/tools.js'

const T0 = '2026-11-11T00:00:00Z'
const T1 = '2026-12-01T09:30:00Z'
const key = (n: number, comment = `key ${n}`) => generateKey({ seed: Buffer.alloc(32, n), comment })
const K1 = key(1)
const K2 = key(2)
const K3 = key(3)
const M1 = key(11, 'laptop')
const M2 = key(12, 'server')
const X = key(99, 'stranger')
const fp = (k: SshPrivateKey) => fingerprint(k.publicKey)
const MANIFEST = Buffer.from('{"format":"jetcarp-pack","version":"1.0"}')

/** Key statements as a store serves them: bytes, named by their key's signer. */
const src = (doc: KeyStatementDocument, source?: string): KeyStatementSource => ({
  statement: keyStatementBytes(doc),
  signerName: keyStatementSignerName(doc),
  ...(source ? { source } : {}),
})

const codes = (findings: { code: string }[]) => findings.map((f) => f.code).sort()

function signedBy(chain: ReturnType<typeof verifyKeyChain>, publisher: SshPrivateKey, signer: SshPrivateKey, ns: typeof NS_MANIFEST | typeof NS_REF = NS_MANIFEST) {
  return verifySignedByPublisher(chain, { publisher: fp(publisher), signature: signSshsig(signer, MANIFEST, ns), message: MANIFEST, namespace: ns, signerName: signerName(signer.publicKey) })
}
const outcome = (r: { ok: boolean; code?: string; via?: string }) => (r.ok ? `ok:${r.via}` : r.code)

t.test('a first statement as the spec writes it', async (t) => {
  const doc = firstKeyStatement(K1, { created: T0, name: 'Golden Publisher A', github: '' })
  t.same(Object.keys(doc).sort(), ['created', 'fingerprint', 'format', 'key', 'name', 'revoked', 'signature', 'version'], 'empty members omitted, revoked written')
  t.equal(doc.format, 'jetcarp-key')
  t.equal(doc.version, '1.0')
  t.equal(doc.revoked, false)
  t.equal(doc.key, formatPublicKey(K1.publicKey))
  t.equal(doc.fingerprint, fp(K1))
  t.match(doc.signature, /^-----BEGIN SSH SIGNATURE-----\n[\s\S]+-----END SSH SIGNATURE-----\n$/)
  const bytes = keyStatementBytes(doc).toString()
  t.equal(bytes, canonicalize(doc), 'RFC 8785 bytes')
  t.ok(bytes.startsWith('{"created":"2026-11-11T00:00:00Z","fingerprint":"SHA256:'), 'members in order')
  t.equal(keyStatementSignerName(doc), signerName(K1.publicKey), 'stored at keys/<signer>.json')
  t.equal(keyStatementSignedBytes(doc).toString(), canonicalize({ ...doc, signature: undefined }), 'signature covers the statement without signature')
  // Deterministic: the same inputs give the same bytes (golden packs).
  t.equal(keyStatementBytes(firstKeyStatement(K1, { created: T0, name: 'Golden Publisher A' })).toString(), bytes)
  // NFC text, and its one spelling of created.
  t.equal(buildKeyStatement({ key: K1.publicKey, created: T0, name: 'Cafe\u0301' }).name, 'Caf\u00e9')
  t.throws(() => buildKeyStatement({ key: K1.publicKey, created: '2026-11-11T00:00:00.000Z' }), { code: C.malformed })
  t.throws(() => buildKeyStatement({ key: K1.publicKey, created: T0, supersedes: 'SHA256:x' }), { code: C.malformed })
  t.throws(() => buildKeyStatement({ key: K1.publicKey, created: T0, supersedes: fp(K1) }), { code: C.chainCycle })
  t.notOk(isPackTime('2026-02-30T00:00:00Z'))
  t.ok(isPackTime('2028-02-29T23:59:59Z'))

  const withMachines = firstKeyStatement(K1, { created: T0, authorised: [{ key: M1.publicKey, label: 'laptop' }, { key: formatPublicKey(M2.publicKey) }] })
  t.same(withMachines.authorised, [
    { fingerprint: fp(M1), key: formatPublicKey(M1.publicKey), label: 'laptop' },
    { fingerprint: fp(M2), key: formatPublicKey(M2.publicKey) },
  ])
  const succ = successorKeyStatement(K1, K2.publicKey, { created: T1 })
  t.equal(succ.supersedes, fp(K1))
})

t.test('ssh-keygen -Y verify accepts a statement\'s signature over its bytes without signature', needs('ssh-keygen'), async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pack-key-statements-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const doc = firstKeyStatement(K1, { created: T0, name: 'Golden Publisher A' })
  await writeFile(join(dir, 'allowed'), `publisher namespaces="${NS_KEY}" ${formatPublicKey(K1.publicKey)}\n`)
  await writeFile(join(dir, 'stmt.sig'), doc.signature)
  const r = spawnSync('ssh-keygen', ['-Y', 'verify', '-f', join(dir, 'allowed'), '-I', 'publisher', '-n', NS_KEY, '-s', join(dir, 'stmt.sig')], { input: keyStatementSignedBytes(doc) })
  t.equal(r.status, 0, r.stderr.toString())
})

t.test('parsing one statement: hostile and non-canonical input', async (t) => {
  const doc = firstKeyStatement(K1, { created: T0, name: 'A' })
  const bytes = keyStatementBytes(doc)
  const parse = (s: KeyStatementSource) => {
    const r = parseKeyStatement(s)
    return r.ok ? 'ok' : r.findings[0]!.code
  }
  t.equal(parse({ statement: bytes }), 'ok')
  t.equal(parse({ statement: bytes.toString() }), 'ok', 'text')
  t.equal(parse({ statement: doc }), 'ok', 'parsed document')
  const r = parseKeyStatement({ statement: bytes })
  t.ok(r.ok && r.statement.signedBy === fp(K1) && r.statement.fingerprint === fp(K1))

  t.equal(parse({ statement: JSON.stringify(doc, null, 1) }), C.notCanonical, 'whitespace')
  t.equal(parse({ statement: bytes.toString().replace('{"created":"2026-11-11T00:00:00Z",', '{') .replace('"version":"1.0"}', '"version":"1.0","created":"2026-11-11T00:00:00Z"}') }), C.notCanonical, 'member order')
  t.equal(parse({ statement: bytes.toString().replace('"name":"A"', '"name":"\\u0041"') }), C.notCanonical, 'escape spelling')
  t.equal(parse({ statement: bytes.toString().replace('{', '{"name":"B",') }), C.notCanonical, 'duplicate member')
  t.equal(parse({ statement: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]) }), C.malformed, 'byte-order mark')
  t.equal(parse({ statement: Buffer.from([0x7b, 0xff, 0x7d]) }), C.malformed, 'bad UTF-8')
  t.equal(parse({ statement: '[' .repeat(40) + ']'.repeat(40) }), C.malformed, 'nested too deep')
  t.equal(parse({ statement: '['.repeat(1_000_000) }), C.malformed, 'a million brackets')
  t.equal(parse({ statement: 'null' }), C.malformed, 'not an object')
  t.equal(parse({ statement: '{"a":' }), C.malformed, 'not JSON')
  t.equal(parse({ statement: new Uint8Array(16 * 1024 * 1024 + 1) }), C.malformed, 'over 16 MiB')

  const resign = (d: Record<string, unknown>, signer = K1) => keyStatementBytes(signKeyStatement(d as KeyStatementDocument, signer))
  t.equal(parse({ statement: resign({ ...doc, extra: { any: ['thing', 1] } }) }), 'ok', 'unknown members ignored (and signed)')
  t.equal(parse({ statement: resign({ ...doc, extra: 1.5 }) }), C.malformed, 'a fraction')
  t.equal(parse({ statement: resign({ ...doc, extra: 2 ** 53 }) }), C.malformed, 'an integer at 2^53')
  t.equal(parse({ statement: resign({ ...doc, extra: -(2 ** 53 - 1) }) }), 'ok', 'an integer within 2^53')
  t.equal(parse({ statement: bytes.toString().replace('"revoked":false', '"revoked":false,"x":1.0') }), C.notCanonical, '1.0 written with a fraction')
  t.equal(parse({ statement: resign({ ...doc, format: 'jetcarp-ref' }) }), C.malformed, 'another format')
  t.equal(parse({ statement: resign({ ...doc, version: '2.0' }) }), C.version, 'unknown major')
  t.equal(parse({ statement: resign({ ...doc, version: '1.7' }) }), 'ok', 'higher minor read')
  t.equal(parse({ statement: resign({ ...doc, fingerprint: fp(K2) }) }), C.fingerprintMismatch, 'fingerprint not the key\'s')
  t.equal(parse({ statement: resign({ ...doc, key: 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7 x' }) }), C.keyType, 'RSA key')
  t.equal(parse({ statement: resign({ ...doc, key: 'ssh-ed25519 AAAA' }) }), C.malformed, 'broken key')
  t.equal(parse({ statement: resign({ ...doc, revoked: 'no' }) }), C.malformed, 'revoked not boolean')
  t.equal(parse({ statement: resign({ ...doc, created: '11/11/2026' }) }), C.malformed, 'created not a pack time')
  t.equal(parse({ statement: resign({ ...doc, authorised: [{ key: formatPublicKey(M1.publicKey), fingerprint: fp(M2) }] }) }), C.fingerprintMismatch, 'authorised fingerprint not its key\'s')
  t.equal(parse({ statement: resign({ ...doc, authorised: {} }) }), C.malformed, 'authorised not an array')
  const rsaEntry = parseKeyStatement({ statement: resign({ ...doc, authorised: [{ key: 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7', fingerprint: 'SHA256:x' }] }) })
  t.ok(rsaEntry.ok && rsaEntry.statement.authorised.length === 0 && rsaEntry.findings[0]?.code === C.keyType, 'a non-Ed25519 machine key is skipped with a finding')

  // Signatures: tampered, another namespace, the file name.
  t.equal(parse({ statement: bytes.toString().replace('"name":"A"', '"name":"B"') }), 'pack.sig-bad', 'changed after signing')
  const wrongNs = { ...doc, signature: signSshsig(K1, keyStatementSignedBytes(doc), NS_MANIFEST) }
  t.equal(parse({ statement: keyStatementBytes(wrongNs) }), 'pack.sig-namespace', 'signed in jetcarp-manifest')
  t.equal(parse({ statement: keyStatementBytes({ ...doc, signature: 'junk' }) }), 'pack.sig-malformed', 'signature junk')
  t.equal(parse({ statement: bytes, signerName: signerName(K1.publicKey) }), 'ok', 'keys/<signer>.json named for its key')
  t.equal(parse({ statement: bytes, signerName: signerName(K2.publicKey) }), C.signerNameMismatch, 'named for another key')
  t.equal(parse(undefined as unknown as KeyStatementSource), C.malformed, 'nothing at all: refused, not thrown')
})

t.test('chain: a valid chain with rotation and revocation by the successor', async (t) => {
  const s1 = firstKeyStatement(K1, { created: T0, name: 'Publisher' })
  const s2 = successorKeyStatement(K1, K2.publicKey, { created: T1, name: 'Publisher' })
  const chain0 = verifyKeyChain([src(s1), src(s2)])
  t.same(chain0.findings, [])
  t.equal(chain0.keys.get(fp(K1))!.status, 'active', 'before revocation both stand')
  t.equal(chain0.keys.get(fp(K2))!.status, 'active')
  t.equal(chain0.keys.get(fp(K2))!.publisherId, fp(K1), 'publisher id is the first key')
  t.same(chain0.keys.get(fp(K1))!.successors, [fp(K2)])
  t.equal(chain0.keys.get(fp(K2))!.name, 'Publisher')

  // K2 revokes K1 (the store now serves the revocation at K1's name).
  const r1 = revocationStatement(s1, K2, { created: T1 })
  t.equal(r1.revoked, true)
  for (const statements of [[src(s1), src(s2), src(r1)], [src(r1), src(s2)]]) {
    const chain = verifyKeyChain(statements)
    t.same(chain.findings, [], 'no findings')
    t.equal(chain.keys.get(fp(K1))!.status, 'revoked')
    t.equal(chain.keys.get(fp(K2))!.status, 'active', 'the successor stands: it signed the revocation')
    t.equal(publisherIdOf(chain, fp(K2)), fp(K1))
    t.same(chain.revocations, [{ fingerprint: fp(K1), revokedBy: fp(K2) }], 'revocation to keep')
    t.equal(outcome(signedBy(chain, K2, K2)), 'ok:key', 'current key signs manifests')
    t.equal(outcome(signedBy(chain, K2, K2, NS_REF)), 'ok:key', 'and refs')
    t.equal(outcome(signedBy(chain, K1, K1)), C.revoked, 'the revoked key signs nothing')
    t.equal(outcome(signedBy(chain, K2, K1)), C.signerNotAuthorised, 'nor for its successor')
  }
  // A further rotation: K2 -> K3, K3 revokes K2, chain of three.
  const s3 = successorKeyStatement(K2, K3.publicKey, { created: T1 })
  const r2 = revocationStatement(s2, K3)
  const chain3 = verifyKeyChain([src(s1), src(s2), src(r1), src(s3), src(r2)])
  t.same(chain3.findings, [])
  t.equal(chain3.keys.get(fp(K3))!.status, 'active')
  t.equal(chain3.keys.get(fp(K3))!.publisherId, fp(K1))
  t.equal(outcome(signedBy(chain3, K3, K3)), 'ok:key')
  t.equal(outcome(signedBy(chain3, K2, K2)), C.revoked)
  // Order does not matter.
  const shuffled = verifyKeyChain([src(r2), src(s3), src(r1), src(s2), src(s1)])
  t.same([...shuffled.keys.values()].map((k) => [k.fingerprint, k.status]), [...chain3.keys.values()].map((k) => [k.fingerprint, k.status]))
})

t.test('chain: successor not signed by its predecessor', async (t) => {
  const s1 = firstKeyStatement(K1, { created: T0 })
  const selfSigned = signKeyStatement(buildKeyStatement({ key: K2.publicKey, created: T1, supersedes: fp(K1) }), K2)
  const byStranger = signKeyStatement(buildKeyStatement({ key: K3.publicKey, created: T1, supersedes: fp(K1) }), X)
  const chain = verifyKeyChain([src(s1), src(selfSigned, 'keys/k2.json'), src(byStranger)])
  t.same(codes(chain.findings), [C.successorNotSignedByPredecessor, C.successorNotSignedByPredecessor])
  t.equal(chain.findings[0]!.source ?? chain.findings[1]!.source, 'keys/k2.json', 'finding names its source')
  t.equal(chain.keys.get(fp(K2))!.status, 'fallen')
  t.equal(outcome(signedBy(chain, K2, K2)), C.successorNotSignedByPredecessor, 'its manifests are not signed by a publisher')
  t.equal(outcome(signedBy(chain, K1, K1)), 'ok:key', 'the predecessor is unaffected')

  // A first statement not signed by its own key.
  const notSelf = signKeyStatement(buildKeyStatement({ key: K3.publicKey, created: T0 }), K1)
  const c2 = verifyKeyChain([src(notSelf)])
  t.same(codes(c2.findings), [C.firstNotSelfSigned])
  t.equal(outcome(signedBy(c2, K3, K3)), C.firstNotSelfSigned)
  // A successor whose predecessor has no statement.
  const orphan = successorKeyStatement(K1, K2.publicKey, { created: T1 })
  const c3 = verifyKeyChain([src(orphan)])
  t.same(codes(c3.findings), [C.predecessorNotStanding])
  t.equal(outcome(signedBy(c3, K2, K2)), C.predecessorNotStanding)
  // No statement at all for the publisher.
  t.equal(outcome(signedBy(verifyKeyChain([]), K1, K1)), C.statementMissing)
  // A machine key cannot sign a successor.
  const s1m = firstKeyStatement(K1, { created: T0, authorised: [{ key: M1.publicKey }] })
  const byMachine = signKeyStatement(buildKeyStatement({ key: K2.publicKey, created: T1, supersedes: fp(K1) }), M1)
  const c4 = verifyKeyChain([src(s1m), src(byMachine)])
  t.same(codes(c4.findings), [C.successorNotSignedByPredecessor])
})

t.test('chain: signing after revocation', async (t) => {
  const s1 = firstKeyStatement(K1, { created: T0 })
  const r1 = revocationStatement(s1, K1, { created: T1 })
  const chain = verifyKeyChain([src(s1), src(r1)])
  t.same(chain.findings, [])
  t.equal(chain.keys.get(fp(K1))!.status, 'revoked')
  t.equal(outcome(signedBy(chain, K1, K1)), C.revoked, 'manifest by a revoked key')
  t.equal(outcome(signedBy(chain, K1, K1, NS_REF)), C.revoked, 'ref by a revoked key')

  // The revoked key signs a successor (whatever its date says): it does not stand.
  const late = successorKeyStatement(K1, K2.publicKey, { created: '2030-01-01T00:00:00Z' })
  const c2 = verifyKeyChain([src(r1), src(late)])
  t.same(codes(c2.findings), [C.predecessorRevoked])
  t.equal(outcome(signedBy(c2, K2, K2)), C.predecessorRevoked)

  // Revocation is permanent: a store serving the older statement again cannot undo it.
  const again = verifyKeyChain([src(s1)], { knownRevocations: chain.revocations })
  t.equal(again.keys.get(fp(K1))!.status, 'revoked')
  t.equal(outcome(signedBy(again, K1, K1)), C.revoked)
  t.equal(outcome(signedBy(verifyKeyChain([src(s1)]), K1, K1)), 'ok:key', '(without the remembered revocation it would count)')

  // A revocation by a key that is neither the key nor its successor does not count.
  const forged = revocationStatement(s1, X)
  const c3 = verifyKeyChain([src(s1), src(forged)])
  t.same(codes(c3.findings), [C.revocationNotSignedByKeyOrSuccessor])
  t.equal(c3.keys.get(fp(K1))!.status, 'active')

  // Two revocations, one by the key itself (say after a compromise) and one by a successor: the
  // successor did not sign every revocation, so it falls (fail closed).
  const s2 = successorKeyStatement(K1, K2.publicKey, { created: T1 })
  const byK2 = revocationStatement(s1, K2)
  const c4 = verifyKeyChain([src(s1), src(s2), src(r1), src(byK2)])
  t.equal(c4.keys.get(fp(K2))!.status, 'fallen')
  t.equal(outcome(signedBy(c4, K2, K2)), C.predecessorRevoked)
  const c5 = verifyKeyChain([src(s1), src(s2), src(byK2)])
  t.equal(c5.keys.get(fp(K2))!.status, 'active', 'with only its own revocation it stands')
  // A remembered revocation by the key itself makes the same difference.
  const c6 = verifyKeyChain([src(s1), src(s2), src(byK2)], { knownRevocations: [{ fingerprint: fp(K1), revokedBy: fp(K1) }] })
  t.equal(c6.keys.get(fp(K2))!.status, 'fallen')
  const c7 = verifyKeyChain([src(s1)], { knownRevocations: [{ fingerprint: 'nope', revokedBy: fp(K1) } as never] })
  t.same(codes(c7.findings), [C.knownRevocationMalformed])
})

t.test('chain: authorised machine keys sign manifests and refs', async (t) => {
  const s1 = firstKeyStatement(K1, { created: T0, authorised: [{ key: M1.publicKey, label: 'laptop' }] })
  const chain = verifyKeyChain([src(s1)])
  t.same(chain.findings, [])
  t.equal(chain.keys.get(fp(K1))!.authorised.get(fp(M1))?.label, 'laptop')
  t.equal(outcome(signedBy(chain, K1, M1)), 'ok:machine', 'machine key signs a manifest')
  t.equal(outcome(signedBy(chain, K1, M1, NS_REF)), 'ok:machine', 'and a ref')
  const r = signedBy(chain, K1, M1)
  t.ok(r.ok && r.publisherId === fp(K1))
  t.equal(outcome(signedBy(chain, K1, M2)), C.signerNotAuthorised, 'an unlisted key')
  t.equal(outcome(signedBy(chain, K1, X)), C.signerNotAuthorised)
  // authoriseSigner alone, by fingerprints.
  t.equal(outcome(authoriseSigner(chain, fp(K1), fp(M1))), 'ok:machine')
  t.equal(outcome(authoriseSigner(chain, fp(K1), fp(K1))), 'ok:key')
  t.equal(outcome(authoriseSigner(chain, 'SHA256:bad', fp(K1))), 'pack.key-name-malformed')
  t.equal(outcome(authoriseSigner(chain, fp(K2), fp(K2))), C.statementMissing)
  // The signature file must be named for the key that signed it.
  const wrongName = verifySignedByPublisher(chain, { publisher: fp(K1), signature: signSshsig(M1, MANIFEST, NS_MANIFEST), message: MANIFEST, namespace: NS_MANIFEST, signerName: signerName(K1.publicKey) })
  t.equal(outcome(wrongName), 'pack.signer-name-mismatch')
  // Publishers sign manifests and refs, not key statements, through this door.
  t.equal(outcome(verifySignedByPublisher(chain, { publisher: fp(K1), signature: signSshsig(K1, MANIFEST, NS_KEY), message: MANIFEST, namespace: NS_KEY as never })), 'pack.sig-namespace')
  t.equal(outcome(verifySignedByPublisher(chain, { publisher: fp(K1), signature: signSshsig(K1, MANIFEST, NS_REF), message: MANIFEST, namespace: NS_MANIFEST })), 'pack.sig-namespace')
  // A successor's machine keys come from its own statement.
  const s2 = successorKeyStatement(K1, K2.publicKey, { created: T1, authorised: [{ key: M2.publicKey }] })
  const c2 = verifyKeyChain([src(s1), src(s2)])
  t.equal(outcome(signedBy(c2, K2, M2)), 'ok:machine')
  t.equal(outcome(signedBy(c2, K2, M1)), C.signerNotAuthorised, 'not inherited from the predecessor')
  // Machine keys added later: the re-issued statement and the older one together.
  const s1b = updateAuthorised(s1, K1, { add: [{ key: M2.publicKey, label: 'server' }], created: T1 })
  const c3 = verifyKeyChain([src(s1), src(s1b)])
  t.same(c3.findings, [])
  t.equal(outcome(signedBy(c3, K1, M2)), 'ok:machine')
  t.equal(outcome(signedBy(c3, K1, M1)), 'ok:machine')
  // Machine keys on a revoked publisher key sign nothing either.
  const c4 = verifyKeyChain([src(s1), src(revocationStatement(s1, K1))])
  t.equal(outcome(signedBy(c4, K1, M1)), C.revoked)
})

t.test('chain: revoked machine key signing', async (t) => {
  const s1 = firstKeyStatement(K1, { created: T0, authorised: [{ key: M1.publicKey, label: 'laptop' }, { key: M2.publicKey }] })
  const s1r = updateAuthorised(s1, K1, { revoke: [fp(M1)], created: T1 })
  t.same(s1r.authorised?.map((a) => a.revoked ?? false), [true, false], 'revoked in place, never removed')
  for (const statements of [[src(s1r)], [src(s1), src(s1r)], [src(s1r), src(s1)]]) {
    const chain = verifyKeyChain(statements)
    t.same(chain.findings, [])
    t.equal(outcome(signedBy(chain, K1, M1)), C.machineKeyRevoked, 'revoked machine key signs nothing, whatever else is served')
    t.equal(outcome(signedBy(chain, K1, M2)), 'ok:machine', 'the other still signs')
    t.equal(outcome(signedBy(chain, K1, K1)), 'ok:key')
  }
  // A machine key that revokes itself (a statement of its own) signs nothing either.
  const mSelf = revocationStatement(buildKeyStatement({ key: M2.publicKey, created: T1 }), M2)
  const c2 = verifyKeyChain([src(s1), src(mSelf)])
  t.equal(outcome(signedBy(c2, K1, M2)), C.machineKeyRevoked)
  // A revoked mark in a statement signed by the wrong key does not count.
  const forged = updateAuthorised(s1, X, { revoke: [fp(M2)] })
  const c3 = verifyKeyChain([src(s1), src(forged)])
  t.same(codes(c3.findings), [C.firstNotSelfSigned])
  t.equal(outcome(signedBy(c3, K1, M2)), 'ok:machine')
})

t.test('chain: cycles and conflicts fail closed', async (t) => {
  // K1 and K2 each claim to succeed the other, each signed by the other.
  const a = successorKeyStatement(K2, K1.publicKey, { created: T0 })
  const b = successorKeyStatement(K1, K2.publicKey, { created: T0 })
  const chain = verifyKeyChain([src(a), src(b)])
  t.ok(codes(chain.findings).includes(C.chainCycle))
  t.equal(outcome(signedBy(chain, K1, K1)), C.chainCycle)
  // A key that is both a first key and a successor: its publisher is ambiguous.
  const s1 = firstKeyStatement(K1, { created: T0 })
  const s2first = firstKeyStatement(K2, { created: T0 })
  const s2succ = successorKeyStatement(K1, K2.publicKey, { created: T1 })
  const c2 = verifyKeyChain([src(s1), src(s2first), src(s2succ)])
  t.same(codes(c2.findings), [C.chainConflict])
  t.equal(outcome(signedBy(c2, K2, K2)), C.chainConflict)
  // The same statement served twice counts once and finds nothing.
  t.same(verifyKeyChain([src(s1), src(s1)]).findings, [])
  // Malformed statements among good ones are findings, not crashes.
  const c3 = verifyKeyChain([src(s1), { statement: '{' }, { statement: new Uint8Array([0xff]) }])
  t.same(codes(c3.findings), [C.malformed, C.malformed])
  t.equal(outcome(signedBy(c3, K1, K1)), 'ok:key')
})

t.test('chain: a long chain resolves without deep recursion', async (t) => {
  const N = 1000
  const keys = Array.from({ length: N }, () => generateKey())
  const statements: KeyStatementSource[] = [src(firstKeyStatement(keys[0]!, { created: T0 }))]
  for (let i = 1; i < N; i++) statements.push(src(successorKeyStatement(keys[i - 1]!, keys[i]!.publicKey, { created: T0 })))
  const chain = verifyKeyChain(statements.reverse())
  t.same(chain.findings, [])
  t.equal(publisherIdOf(chain, fp(keys[N - 1]!)), fp(keys[0]!))
  // Break the chain at the bottom: every key above falls, with a short detail naming the first cause.
  const broken = verifyKeyChain(statements.slice(0, -1))
  const top = broken.keys.get(fp(keys[N - 1]!))!
  t.equal(top.status, 'fallen')
  t.equal(top.reason?.code, C.predecessorNotStanding)
  t.ok((top.reason?.detail.length ?? 0) < 400, 'detail stays short')
  t.match(top.reason?.detail, /first cause: pack\.key-statement-missing/)
  // A key known only from a remembered revocation is revoked.
  const only = verifyKeyChain([], { knownRevocations: [{ fingerprint: fp(K3), revokedBy: fp(K3) }] })
  t.equal(only.keys.get(fp(K3))?.status, 'revoked')
  t.equal(outcome(signedBy(only, K3, K3)), C.revoked)
})

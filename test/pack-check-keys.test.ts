/**
 * checkPack over stores whose versions are signed through the publisher's key statements (level 2):
 * machine keys the statement authorises, revoked in place or by themselves, and a chain of successors;
 * and over versions whose retractions must be cumulative (level 1), in a store and in an export.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { checkPack, levelOf, type CheckCaps, type CheckIssue, type CheckLevel } from '../src/formats/pack/check/check.js'
import { buildKeyStatement, firstKeyStatement, revocationStatement, signKeyStatement, successorKeyStatement, updateAuthorised } from '../src/formats/pack/keys/key-statements.js'
import { fingerprint, generateKey, signerName } from '../src/formats/pack/keys/ssh-key.js'
import { objectPath, refPath } from '../src/formats/pack/documents/store.js'
import { FEED, PUBLISHER, PUBLISHER_ID, SUCCESSOR, T0, buildStore, exportStore, smallRows, type StoreSpec } from './pack-check-fixtures.js'

const base = await mkdtemp(join(tmpdir(), 'pack-check-keys-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
let made = 0
const fresh = () => join(base, `p${made++}`)

const MACHINE = generateKey({ seed: Buffer.alloc(32, 51), comment: 'check machine' })
const MACHINE_ID = fingerprint(MACHINE.publicKey)
const THIRD = generateKey({ seed: Buffer.alloc(32, 52), comment: 'check third key' })
const THIRD_SIGNER = signerName(THIRD.publicKey)
const T1 = '2026-11-12T00:00:00Z'

const first = firstKeyStatement(PUBLISHER, { created: T0, name: 'Check Publisher' })
const withMachine = updateAuthorised(first, PUBLISHER, { add: [{ key: MACHINE.publicKey, label: 'laptop' }], created: T1 })

async function check(spec: StoreSpec, level: CheckLevel = 2, caps?: CheckCaps): Promise<{ issues: CheckIssue[]; manifest: string }> {
  const s = await buildStore(fresh(), { rows: smallRows(), search: false, ...spec })
  const issues: CheckIssue[] = []
  for await (const i of checkPack(s.dir, { level, ...(caps ? { caps } : {}) })) issues.push(i)
  return { issues, manifest: objectPath(s.manifest, 'json') }
}

/** The failures are exactly `expected` ([level code, target]), each at its code's level. */
function exactly(t: Test, issues: CheckIssue[], expected: [string, string][], what: string): void {
  const found = issues.filter((i) => !i.note).map((i) => [`${i.level} ${i.code}`, i.target])
  t.same(found.sort(), [...expected].sort(), `${what}: ${JSON.stringify(issues)}`)
  for (const i of issues) t.equal(i.level, levelOf(i.code), `${i.code} at its level`)
}

t.test('machine keys sign manifests and refs when the publisher\'s statement authorises them', async (t) => {
  const signedBy = { signer: PUBLISHER, machineKey: MACHINE }
  const [authorised, unlisted, revokedInPlace, revokedByItself] = await Promise.all([
    check({ ...signedBy, keys: [withMachine] }),
    check({ ...signedBy, keys: [first] }),
    check({ ...signedBy, keys: [updateAuthorised(withMachine, PUBLISHER, { revoke: [MACHINE_ID] })] }),
    // The publisher's statement, made later, lists the machine key unrevoked: a revocation still stands.
    check({ ...signedBy, keys: [withMachine, revocationStatement(firstKeyStatement(MACHINE, { created: T0 }), MACHINE)] }),
  ])
  exactly(t, authorised.issues, [], 'an authorised machine key signs the version and the ref')
  for (const [what, c, code] of [
    ['a machine key the statement does not list', unlisted, 'pack.signer-not-authorised'],
    ['a machine key revoked in place', revokedInPlace, 'pack.machine-key-revoked'],
    ['a machine key that revoked itself', revokedByItself, 'pack.machine-key-revoked'],
  ] as const) {
    exactly(t, c.issues, [[`2 ${code}`, c.manifest], [`2 ${code}`, refPath(FEED)]], what)
  }
})

t.test('a chain of successors: the third key publishes; a link its predecessor did not sign breaks it', async (t) => {
  const second = successorKeyStatement(PUBLISHER, SUCCESSOR.publicKey, { created: T0 })
  const third = successorKeyStatement(SUCCESSOR, THIRD.publicKey, { created: T1 })
  // The third key claims the second as its predecessor, but the first key signed the claim.
  const skipped = signKeyStatement(buildKeyStatement({ key: THIRD.publicKey, created: T1, supersedes: fingerprint(SUCCESSOR.publicKey) }), PUBLISHER)
  const [chain, broken] = await Promise.all([
    check({ signer: THIRD, keys: [first, second, third] }),
    check({ signer: THIRD, keys: [first, second, skipped] }),
  ])
  exactly(t, chain.issues, [], 'first, second and third key')
  const code = '2 pack.key-successor-not-signed-by-predecessor'
  exactly(t, broken.issues, [[code, `keys/${THIRD_SIGNER}.json`], [code, broken.manifest], [code, refPath(FEED)]], 'a link signed by the wrong key')
})

const retraction = (target: string, publisher: string) => ({ date: T0, publisher, reason: 'withdrawn', target })
const X = `pattern:${'a'.repeat(32)}`
const Y = `pattern:${'b'.repeat(32)}`
const OTHER = 'SHA256:Cq5cVSqJBAdxFfJPld1HSH/bAyUPSvZYbr+p0GAIh9g'

t.test('retractions are cumulative: a version lists each of its parents\' with its publisher', async (t) => {
  const parentRetracts = (d: Record<string, unknown>) => ({ ...d, retracts: [retraction(X, PUBLISHER_ID)] })
  const retracts = (...r: ReturnType<typeof retraction>[]) => (d: Record<string, unknown>) => ({ ...d, retracts: r })
  const [kept, dropped, otherPublisher] = await Promise.all([
    check({ parentManifest: parentRetracts, manifest: retracts(retraction(X, PUBLISHER_ID), retraction(Y, PUBLISHER_ID)) }, 1),
    check({ parentManifest: parentRetracts, manifest: retracts(retraction(Y, PUBLISHER_ID)) }, 1),
    check({ parentManifest: parentRetracts, manifest: retracts(retraction(X, OTHER)) }, 1),
  ])
  exactly(t, kept.issues, [], 'the parent\'s retraction kept, and one added')
  exactly(t, dropped.issues, [['1 pack.retracts-not-cumulative', dropped.manifest]], 'the parent\'s retraction dropped')
  exactly(t, otherPublisher.issues, [['1 pack.retracts-not-cumulative', otherPublisher.manifest]], 'the same target under another publisher')
  t.match(dropped.issues[0]!.detail, `does not list 1 retraction(s) of its parent sha256:`, 'the detail counts what is missing')
  t.match(dropped.issues[0]!.detail, `${X} ${PUBLISHER_ID}`, 'and names it (read again from the parent)')
  t.notMatch(otherPublisher.issues[0]!.detail, OTHER, 'the retraction missing is the parent\'s, not the version\'s own')
})

t.test('a retraction a version lists first names its publisher\'s id (level 2)', async (t) => {
  const parentRetracts = (d: Record<string, unknown>) => ({ ...d, retracts: [retraction(X, PUBLISHER_ID)] })
  const retracts = (...r: ReturnType<typeof retraction>[]) => (d: Record<string, unknown>) => ({ ...d, retracts: r })
  const second = successorKeyStatement(PUBLISHER, SUCCESSOR.publicKey, { created: T0 })
  const SUCCESSOR_ID = fingerprint(SUCCESSOR.publicKey)
  const [own, other, otherKept, rotatedId, rotatedKey, parentMissing] = await Promise.all([
    check({ parentManifest: parentRetracts, manifest: retracts(retraction(X, PUBLISHER_ID), retraction(Y, PUBLISHER_ID)) }),
    check({ parentManifest: parentRetracts, manifest: retracts(retraction(X, PUBLISHER_ID), retraction(Y, OTHER)) }),
    // The parent's first listing names another publisher: the parent is refused, the version keeping it is not.
    check({ parentManifest: retracts(retraction(Y, OTHER)), manifest: retracts(retraction(Y, OTHER)) }),
    // After a key change the manifest names the current key, and a retraction the publisher's id.
    check({ signer: SUCCESSOR, keys: [first, second], history: false, manifest: retracts(retraction(X, PUBLISHER_ID)) }),
    check({ signer: SUCCESSOR, keys: [first, second], history: false, manifest: retracts(retraction(X, SUCCESSOR_ID)) }),
    // A parent the store lacks may have listed it first.
    check({ history: false, manifest: (d) => ({ ...d, parents: [`sha256:${'c'.repeat(64)}`], retracts: [retraction(Y, OTHER)] }) }),
  ])
  exactly(t, own.issues, [], 'its own retraction added beside its parent\'s')
  exactly(t, other.issues, [['2 pack.retraction-publisher', other.manifest]], 'a retraction it adds under another publisher')
  t.match(other.issues[0]!.detail, `list 1 retraction(s) (target and publisher), which must name its publisher ${PUBLISHER_ID}: ${Y} ${OTHER}`, 'naming the retraction, read again from the version')
  t.same(otherKept.issues.filter((i) => !i.note).map((i) => `${i.level} ${i.code}`), ['2 pack.retraction-publisher'], `only the parent, which listed it first: ${JSON.stringify(otherKept.issues)}`)
  t.not(otherKept.issues[0]?.target, otherKept.manifest, 'not on the version that keeps it')
  exactly(t, rotatedId.issues, [], 'the publisher\'s id after a key change')
  exactly(t, rotatedKey.issues, [['2 pack.retraction-publisher', rotatedKey.manifest]], 'the current key, which is not the publisher\'s id')
  exactly(t, parentMissing.issues, [], 'a parent the store lacks')
  const atLevel1 = await check({ parentManifest: parentRetracts, manifest: retracts(retraction(X, PUBLISHER_ID), retraction(Y, OTHER)) }, 1)
  exactly(t, atLevel1.issues, [], 'not judged at level 1, which reads no key statements')
})

t.test('retractions beyond the digests a check keeps are not judged, and a note says so', async (t) => {
  const parentRetracts = (d: Record<string, unknown>) => ({ ...d, retracts: [retraction(X, PUBLISHER_ID)] })
  const retracts = (...r: ReturnType<typeof retraction>[]) => (d: Record<string, unknown>) => ({ ...d, retracts: r })
  const unkept = (issues: CheckIssue[]) => issues.filter((i) => i.code === 'pack.retractions-unkept').map((i) => `${i.level} ${i.note}`)
  const dropped = { parentManifest: parentRetracts, manifest: retracts(retraction(Y, PUBLISHER_ID)) }
  const other = { parentManifest: parentRetracts, manifest: retracts(retraction(X, PUBLISHER_ID), retraction(Y, OTHER)) }
  const [droppedRoom, droppedShort, droppedNone, otherRoom, otherShort] = await Promise.all([
    check(dropped, 1, { retractionDigests: 2 }),
    check(dropped, 1, { retractionDigests: 1 }),
    check(dropped, 1, { retractionDigests: 0 }),
    check(other, 2, { retractionDigests: 3 }),
    check(other, 2, { retractionDigests: 2 }),
  ])
  exactly(t, droppedRoom.issues, [['1 pack.retracts-not-cumulative', droppedRoom.manifest]], 'room for both lists: the dropped retraction is found')
  t.same(unkept(droppedRoom.issues), [], 'and nothing is noted')
  for (const [what, c] of [['room for one list', droppedShort], ['room for none', droppedNone]] as const) {
    exactly(t, c.issues, [], `${what}: not judged`)
    t.same(unkept(c.issues), ['1 true'], 'a note, once')
  }
  exactly(t, otherRoom.issues, [['2 pack.retraction-publisher', otherRoom.manifest]], 'room for the three digests: the first listing under another publisher is found')
  exactly(t, otherShort.issues, [], 'room for two of the three: one of the two lists is not kept, and nothing is judged')
  t.same(unkept(otherShort.issues), ['1 true'])
})

t.test('a manifest that lists its parent twice is judged against it once', async (t) => {
  const parentRetracts = (d: Record<string, unknown>) => ({ ...d, retracts: [retraction(X, PUBLISHER_ID)] })
  const twice = (...r: ReturnType<typeof retraction>[]) => (d: Record<string, unknown>) => ({ ...d, parents: [...(d.parents as string[]), ...(d.parents as string[])], retracts: r })
  const [other, dropped] = await Promise.all([
    check({ parentManifest: parentRetracts, manifest: twice(retraction(X, PUBLISHER_ID), retraction(Y, OTHER)) }),
    check({ parentManifest: parentRetracts, manifest: twice(retraction(Y, PUBLISHER_ID)) }),
  ])
  exactly(t, other.issues, [['2 pack.retraction-publisher', other.manifest]], 'a retraction it adds under another publisher')
  exactly(t, dropped.issues, [['1 pack.retracts-not-cumulative', dropped.manifest]], 'the parent\'s retraction dropped')
})

t.test('in an export, pack.json is held to the earlier manifests in history/', async (t) => {
  const rows = smallRows()
  const s = await buildStore(fresh(), { rows, search: false, parentManifest: (d) => ({ ...d, retracts: [retraction(X, PUBLISHER_ID)] }) })
  const dir = fresh()
  await exportStore(s, dir, rows)
  const issues: CheckIssue[] = []
  for await (const i of checkPack(dir, { level: 1 })) issues.push(i)
  exactly(t, issues, [['1 pack.retracts-not-cumulative', 'pack.json']], 'an export')
})

/**
 * A seeded fuzz of whole packs: one file of a golden store or export gets flipped bits, a truncation, a
 * stray byte or an inserted member, and pack-check at level 3, on one thread or two, must end with its
 * findings (never a throw, never a hang), and must find the mutation wherever a rule covers the file's bytes.
 *
 * What each kind of file must give (a failure is an issue that is not a note; "on it": its target is the file):
 *
 *   store   jetcarp-store.json    a failure on it: pack.json-*, pack.document-format or pack.version-*
 *           refs/<feed>.json      a failure on it: its JSON, format, version, hashes, key or signature (every
 *                                 member but the signature is signed, and the signature is strict base64)
 *           keys/<signer>.json    a failure on it: its JSON, format, version, key or signature, as a ref's
 *           sigs/.../<signer>.sig a failure on it (pack.sig-*, pack.signer-name-mismatch), and
 *                                 pack.manifest-unsigned on its manifest (each golden manifest has one signature)
 *           objects/...           pack.object-hash-mismatch or pack.object-size-mismatch on it
 *   export  pack.json             a failure on it, of any code: it cannot be read, or pack.manifest-unsigned
 *                                 (its exact bytes are what its signatures sign)
 *           index/, history/, tables/, tilings/, searches/, media/
 *                                 as a store's objects: the manifest, the indexes and the rows give each its hash
 *           keys/, sigs/          as in a store (the manifest a signature signs is pack.json)
 *
 * The only mutations allowed to pass, which must then give no failure at all (pack format 1.0 and the checker
 * were read for them; the last sub-test makes each, and its nearest harmful neighbour, on purpose):
 *   1. Any change to an export's LICENSE, README.md, CITATION.cff or views.sql: "made from the manifest" and
 *      "not part of the format" ("Exports"), no rule covers their bytes; nor the golden suite's own MANIFEST
 *      and hashes.txt beside it, which test/pack-golden.test.ts checks and pack-check does not read.
 *   2. jetcarp-store.json with its minor version made another digit ("1.0" to "1.1", "1.2", "1.4" or "1.8"
 *      by a bit flip): a higher minor, which a reader MUST read ("Versions and compatibility"), in the one
 *      document that has neither a hash nor a signature.
 *   3. A signature file cut by its final newline alone: "ending with a newline (a reader accepts one
 *      without)" ("Signatures and keys").
 * (A store object no ref reaches would be a fourth, but the goldens hold none.)
 *
 * Every case is drawn from its own generator, seeded from the run's seed and the case's number, and every
 * message starts with both: PACK_CHECK_FUZZ_SEED=S runs seed S, and PACK_CHECK_FUZZ_CASE=N only its case N.
 */
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative, sep } from 'node:path'
import t from 'tap'
import { checkPack, type CheckIssue } from '../src/formats/pack/check/check.js'
import { seededRandom } from '../src/sim/random.js'
import { mutateBytes } from './helpers/mutate.js'

const GOLDEN = new URL('./golden/', import.meta.url).pathname
const STORES = ['minimal/store', 'searches/store', 'aperiodic/store', 'merge/store', 'retraction/store', 'media/store', 'ants/store']
const EXPORT = 'export'
const SEED = Number(process.env.PACK_CHECK_FUZZ_SEED ?? 20261206)
const ONLY = process.env.PACK_CHECK_FUZZ_CASE === undefined ? undefined : Number(process.env.PACK_CHECK_FUZZ_CASE)

type Kind = 'store-document' | 'ref' | 'key-statement' | 'signature' | 'object' | 'manifest' | 'unchecked'

/** What is drawn, case by case in turn, so that each run mutates every kind of file (store objects twice as often). */
const STRATA: readonly (readonly ['store' | 'export', Kind])[] = [
  ['store', 'store-document'], ['store', 'ref'], ['store', 'key-statement'], ['store', 'signature'], ['store', 'object'], ['store', 'object'],
  ['export', 'manifest'], ['export', 'object'], ['export', 'key-statement'], ['export', 'signature'], ['export', 'unchecked'],
]
const CASES = STRATA.length * 6

/** The codes a failure on the mutated file may have, by its kind (`manifest`: any; `unchecked`: none is allowed). */
const FAMILY: Record<Exclude<Kind, 'unchecked'>, { re: RegExp; says: string }> = {
  'store-document': { re: /^pack\.(json-[a-z0-9-]+|document-format|version-[a-z]+)$/, says: 'pack.json-*, document-format or version-*' },
  ref: {
    re: /^pack\.(json-[a-z0-9-]+|document-format|version-[a-z]+|ref-[a-z-]+|hash-[a-z]+|key-[a-z-]+|sig-[a-z-]+|signer-name-mismatch)$/,
    says: 'pack.json-*, document-format, version-*, ref-*, hash-*, key-*, sig-* or signer-name-mismatch',
  },
  'key-statement': {
    re: /^pack\.(json-[a-z0-9-]+|document-format|version-[a-z]+|key-[a-z-]+|hash-[a-z]+|sig-[a-z-]+|signer-name-mismatch)$/,
    says: 'pack.json-*, document-format, version-*, key-*, hash-*, sig-* or signer-name-mismatch',
  },
  signature: { re: /^pack\.(sig-[a-z-]+|signer-name-mismatch)$/, says: 'pack.sig-* or signer-name-mismatch' },
  object: { re: /^pack\.object-(hash|size)-mismatch$/, says: 'pack.object-hash-mismatch or object-size-mismatch' },
  manifest: { re: /^pack\.[a-z0-9.-]+$/, says: 'any code' },
}

/** An export's files that no rule of the format covers (1 above). */
const UNCHECKED = new Set(['LICENSE', 'README.md', 'CITATION.cff', 'views.sql', 'MANIFEST', 'hashes.txt'])

function kindOf(pack: string, rel: string): Kind {
  const top = rel.split('/')[0]!
  if (pack === EXPORT) {
    if (rel === 'pack.json') return 'manifest'
    if (UNCHECKED.has(rel)) return 'unchecked'
    if (['index', 'history', 'tables', 'tilings', 'searches', 'media'].includes(top)) return 'object'
  } else {
    if (rel === 'jetcarp-store.json') return 'store-document'
    if (top === 'refs') return 'ref'
    if (top === 'objects') return 'object'
  }
  if (top === 'keys') return 'key-statement'
  if (top === 'sigs') return 'signature'
  throw new Error(`${pack}: ${rel} is of no kind this test knows: say what a mutation of it must give`)
}

/** The manifest a signature file signs. */
function signedManifest(pack: string, rel: string): string {
  if (pack === EXPORT) return 'pack.json'
  const hex = rel.split('/')[3]!
  return `objects/sha256/${hex.slice(0, 2)}/${hex}.json`
}

/** Why a mutation may pass (2 and 3 above; 1 is every mutation of an unchecked file), or undefined. */
function harmless(kind: Kind, original: Buffer, mutated: Buffer): string | undefined {
  if (kind === 'unchecked') return 'a file no rule of the format covers'
  if (kind === 'store-document') {
    const minor = original.indexOf('"version":"1.') + '"version":"1.'.length
    const changed = [...mutated.keys()].filter((i) => mutated[i] !== original[i])
    if (mutated.length === original.length && changed.length === 1 && changed[0] === minor && mutated[minor]! >= 0x30 && mutated[minor]! <= 0x39) {
      return `a higher minor version, 1.${String.fromCharCode(mutated[minor]!)}`
    }
  }
  if (kind === 'signature' && original.at(-1) === 0x0a && mutated.equals(original.subarray(0, -1))) return 'a signature without its final newline'
  return undefined
}

const base = await mkdtemp(join(tmpdir(), 'pack-check-fuzz-'))
t.teardown(() => rm(base, { recursive: true, force: true }))

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, e.name)
    if (e.isDirectory()) out.push(...(await filesUnder(path)))
    else out.push(path)
  }
  return out.sort()
}

async function check(dir: string, threads: number): Promise<CheckIssue[]> {
  const issues: CheckIssue[] = []
  for await (const issue of checkPack(dir, { level: 3, threads, threadPartBytes: 0 })) issues.push(issue)
  return issues
}

const failuresOf = (issues: readonly CheckIssue[]): string[] => issues.filter((i) => !i.note).map((i) => `${i.code} on ${i.target}`)

/** What a pack's file may be given in place of a byte: JSON's marks and digits, a NUL and a byte no UTF-8 text holds. */
const STRAYS = [0x22, 0x7b, 0x5b, 0x30, 0x2d, 0x00, 0xff]

t.test(`${CASES} mutated packs (seed ${SEED}): the mutation found wherever a rule covers the file, never a throw or a hang`, async (t) => {
  for (let n = 0; n < CASES; n++) {
    if (ONLY !== undefined && n !== ONLY) continue
    const random = seededRandom((SEED ^ Math.imul(n + 1, 0x9e3779b1)) >>> 0)
    const [layout, kind] = STRATA[n % STRATA.length]!
    const pack = layout === 'export' ? EXPORT : STORES[Math.floor(random() * STORES.length)]!
    const dir = join(base, `case-${n}`)
    await cp(join(GOLDEN, pack), dir, { recursive: true })
    const files = (await filesUnder(dir)).map((f) => relative(dir, f).split(sep).join('/')).filter((rel) => kindOf(pack, rel) === kind)
    const rel = files[Math.floor(random() * files.length)]!
    const original = await readFile(join(dir, rel))
    const { how, bytes } = mutateBytes(original, random, { bits: 8, strays: STRAYS })
    await writeFile(join(dir, rel), bytes)
    const threads = random() < 0.5 ? 1 : 2
    const what = `seed ${SEED} case ${n}: ${pack}: ${rel} (${kind}), ${how}, ${threads} thread(s)`
    let issues: CheckIssue[]
    try {
      issues = await check(dir, threads)
    } catch (err) {
      t.fail(`${what}: threw ${(err as Error).stack ?? String(err)}`)
      continue
    }
    const failures = failuresOf(issues)
    const allowed = harmless(kind, original, bytes)
    if (allowed !== undefined) {
      t.same(failures, [], `${what}: may pass (${allowed}), and nothing is found`)
    } else {
      const onFile = issues.filter((i) => !i.note && i.target === rel)
      const family = FAMILY[kind as Exclude<Kind, 'unchecked'>]
      t.ok(onFile.some((i) => family.re.test(i.code)), `${what}: a failure on it, ${family.says} (found: ${failures.join(', ') || 'none'})`)
      if (kind === 'signature') {
        const manifest = signedManifest(pack, rel)
        t.ok(issues.some((i) => !i.note && i.code === 'pack.manifest-unsigned' && i.target === manifest), `${what}: pack.manifest-unsigned on ${manifest}`)
      }
    }
    await rm(dir, { recursive: true, force: true })
  }
})

t.test('the mutations allowed to pass, and their nearest harmful neighbours, made on purpose', async (t) => {
  const signature = 'sigs/sha256/b7/b71ff4a74703252c7cecfa37da800864bc5f709baa3fa31ca69d15b8a4184e54/8003b7662f23b01414603eb42cf19af2242f1385f2cf6bd7fbb87b87e85400ab.sig'
  const exportSignature = 'sigs/8003b7662f23b01414603eb42cf19af2242f1385f2cf6bd7fbb87b87e85400ab.sig'
  const storeDocument = (version: string) => () => Buffer.from(`{"format":"jetcarp-store","version":"${version}"}`)
  const cases: { pack: string; rel: string; change: (b: Buffer) => Buffer; failures: string[] }[] = [
    ...[...UNCHECKED].map((rel) => ({ pack: EXPORT, rel, change: (b: Buffer) => Buffer.concat([b, Buffer.from('x')]), failures: [] })),
    ...['1.1', '1.2', '1.4', '1.8', '1.9'].map((v) => ({ pack: 'minimal/store', rel: 'jetcarp-store.json', change: storeDocument(v), failures: [] })),
    { pack: 'minimal/store', rel: 'jetcarp-store.json', change: storeDocument('0.0'), failures: ['pack.version-major on jetcarp-store.json'] },
    { pack: 'minimal/store', rel: 'jetcarp-store.json', change: storeDocument('3.0'), failures: ['pack.version-major on jetcarp-store.json'] },
    { pack: 'minimal/store', rel: 'jetcarp-store.json', change: storeDocument('1. '), failures: ['pack.version-malformed on jetcarp-store.json'] },
    { pack: 'minimal/store', rel: signature, change: (b) => b.subarray(0, -1), failures: [] },
    { pack: EXPORT, rel: exportSignature, change: (b) => b.subarray(0, -1), failures: [] },
    {
      pack: 'minimal/store', rel: signature, change: (b) => b.subarray(0, -2),
      failures: [`pack.sig-malformed on ${signature}`, 'pack.manifest-unsigned on objects/sha256/b7/b71ff4a74703252c7cecfa37da800864bc5f709baa3fa31ca69d15b8a4184e54.json'],
    },
    { pack: EXPORT, rel: exportSignature, change: (b) => b.subarray(0, -2), failures: [`pack.sig-malformed on ${exportSignature}`, 'pack.manifest-unsigned on pack.json'] },
    // Other documents with a version: a ref and a key statement sign theirs.
    {
      pack: 'minimal/store', rel: 'refs/golden-a.json', change: (b) => Buffer.from(b.toString().replace('"version":"1.0"', '"version":"1.1"')),
      failures: ['pack.sig-bad on refs/golden-a.json'],
    },
  ]
  for (const [n, c] of cases.entries()) {
    const dir = join(base, `harmless-${n}`)
    await cp(join(GOLDEN, c.pack), dir, { recursive: true })
    const original = await readFile(join(dir, c.rel))
    const changed = c.change(original)
    await writeFile(join(dir, c.rel), changed)
    const failures = failuresOf(await check(dir, 1))
    const kind = kindOf(c.pack, c.rel)
    t.same(failures, c.failures, `${c.pack}: ${c.rel} (${kind}), ${JSON.stringify(changed.subarray(-24).toString('latin1'))} at its end: ${c.failures.length ? c.failures.join(', ') : 'nothing found'}`)
    t.equal(harmless(kind, original, changed) !== undefined, c.failures.length === 0, `${c.pack}: ${c.rel}: the fuzz allows it to pass exactly when it does`)
    await rm(dir, { recursive: true, force: true })
  }
})

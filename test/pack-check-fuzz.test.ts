/**
 * A seeded fuzz of whole packs: one file of a golden store or export (a manifest, index, ref, key
 * statement, signature, part, patch or media object) gets flipped bits, a truncation, a stray byte or an
 * inserted member, and pack-check at level 3, on one thread or two, must end with its findings: never a
 * throw, never a hang. A changed object of a store is always a failure (its bytes are no longer its hash's).
 */
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import t from 'tap'
import { checkPack, type CheckIssue } from '../src/formats/pack/check/check.js'
import { seededRandom } from '../src/sim/random.js'
import { mutateBytes } from './helpers/mutate.js'

const GOLDEN = new URL('./golden/', import.meta.url).pathname
const PACKS = ['minimal/store', 'searches/store', 'aperiodic/store', 'merge/store', 'retraction/store', 'media/store', 'ants/store', 'export']
const CASES = 48

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

/** What a pack's file may be given in place of a byte: JSON's marks and digits, a NUL and a byte no UTF-8 text holds. */
const STRAYS = [0x22, 0x7b, 0x5b, 0x30, 0x2d, 0x00, 0xff]

t.test(`${CASES} mutated packs: findings, never a throw or a hang`, async (t) => {
  const random = seededRandom(20261206)
  for (let n = 0; n < CASES; n++) {
    const pack = PACKS[Math.floor(random() * PACKS.length)]!
    const dir = join(base, `case-${n}`)
    await cp(join(GOLDEN, pack), dir, { recursive: true })
    const files = (await filesUnder(dir)).filter((f) => !f.endsWith('MANIFEST') && !f.endsWith('hashes.txt'))
    const file = files[Math.floor(random() * files.length)]!
    const original = await readFile(file)
    if (original.length === 0) continue
    const { how, bytes } = mutateBytes(original, random, { bits: 8, strays: STRAYS })
    await writeFile(file, bytes)
    const threads = random() < 0.5 ? 1 : 2
    const what = `${pack}: ${relative(dir, file)}, ${how}, ${threads} thread(s)`
    const issues: CheckIssue[] = []
    try {
      for await (const issue of checkPack(dir, { level: 3, threads, threadPartBytes: 0 })) issues.push(issue)
    } catch (err) {
      // A pack whose store document is gone is not a pack: the one refusal the CLI makes before a check.
      if ((err as { code?: string }).code !== 'pack.not-a-pack') t.fail(`${what}: threw ${(err as Error).stack ?? String(err)}`)
      continue
    }
    if (pack.endsWith('/store') && relative(dir, file).startsWith('objects/')) {
      t.ok(issues.some((i) => !i.note), `${what}: a failure (${issues.filter((i) => !i.note).map((i) => i.code).join(', ')})`)
    } else {
      t.pass(`${what}: checked (${issues.filter((i) => !i.note).length} failures)`)
    }
    await rm(dir, { recursive: true, force: true })
  }
})

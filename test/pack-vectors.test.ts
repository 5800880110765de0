/**
 * The pack format 1.0 conformance vectors (test/vectors/pack, built by scripts/make-pack-vectors.ts): their
 * hashes; every `<case>_fail` refused by checkPack (in-process) at its level with every (level, code) pair
 * of its expected.json and nothing outside its findings and allowed pairs; one case per level through the
 * built CLI (dist/bin/pipe.js, made by npm run build) with --json, exit 1; the untouched golden packs, which
 * are the passing cases, pass.
 */
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { checkPack, levelOf, type CheckLevel } from '../src/formats/pack/check/check.js'
import { GOLDEN_PACKS } from '../scripts/make-golden-packs.js'
import { childEnv } from './helpers/io.js'

const VECTORS = join(import.meta.dirname, 'vectors', 'pack')
const GOLDEN = join(import.meta.dirname, 'golden')
const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))

interface Pair { level: number; code: string }
interface Expected { args: string[]; findings: Pair[]; allowed?: Pair[] }

const key = (p: Pair) => `${p.level} ${p.code}`
const walk = async (d: string, rel = ''): Promise<string[]> =>
  (await Promise.all((await readdir(d, { withFileTypes: true })).map((e) => (e.isDirectory() ? walk(join(d, e.name), `${rel}${e.name}/`) : [`${rel}${e.name}`])))).flat()
const expectedOf = async (c: string) => JSON.parse(await readFile(join(VECTORS, c, 'expected.json'), 'utf8')) as Expected

/** `pipe run pack-check` arguments as expected.json gives them: DIR --level N. */
function argsOf(e: Expected): { dir: string; level: CheckLevel } {
  const [dir, flag, level] = e.args
  if (e.args.length !== 3 || flag !== '--level' || !['0', '1', '2', '3'].includes(level!)) throw new Error(`unexpected args ${JSON.stringify(e.args)}`)
  return { dir: dir!, level: Number(level) as CheckLevel }
}

/** The failures checkPack reports (notes are not failures). */
async function failures(dir: string, level: CheckLevel): Promise<Pair[]> {
  const out: Pair[] = []
  for await (const issue of checkPack(dir, { level })) if (!issue.note) out.push(issue)
  return out
}

/** Every expected pair is reported, and nothing but expected and allowed pairs. */
function agrees(t: Test, reported: Pair[], e: Expected): void {
  const found = new Set(reported.map(key))
  for (const p of e.findings) t.ok(found.has(key(p)), `reports ${key(p)}`)
  const ok = new Set([...e.findings, ...(e.allowed ?? [])].map(key))
  t.same(reported.filter((f) => !ok.has(key(f))).map(key), [], 'nothing else')
}

const cases = (await readdir(VECTORS, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort()

t.test('the vectors are what hashes.txt lists', async (t) => {
  const listed = (await readFile(join(VECTORS, 'hashes.txt'), 'utf8')).trimEnd().split('\n').map((l) => /^([0-9a-f]{64}) {2}(.+)$/.exec(l)!)
  t.ok(listed.every(Boolean), 'sha256sum format')
  t.same((await walk(VECTORS)).filter((f) => f !== 'hashes.txt').sort(), listed.map((m) => m[2]).sort(), 'every file listed, nothing else')
  let bad = 0
  for (const [, sha, file] of listed) if (createHash('sha256').update(await readFile(join(VECTORS, file!))).digest('hex') !== sha) { bad++; t.fail(`${file}: sha256 differs`) }
  t.equal(bad, 0, `${listed.length} files match`)
  t.ok(cases.length > 0 && cases.every((c) => c.endsWith('_fail')), 'every case folder is a _fail case')
})

t.test('a failing case for every conformance level 0 to 3, each pair at its code\'s level', async (t) => {
  const levels = new Set<number>()
  for (const c of cases) {
    for (const p of (await expectedOf(c)).findings) {
      levels.add(p.level)
      t.equal(levelOf(p.code), p.level, `${c}: ${key(p)}`)
    }
  }
  t.same([...levels].sort(), [0, 1, 2, 3])
})

for (const c of cases) {
  t.test(c, async (t) => {
    const e = await expectedOf(c)
    t.ok((await readFile(join(VECTORS, c, 'README'), 'utf8')).trim().length > 0, 'README')
    const { dir, level } = argsOf(e)
    const reported = await failures(join(VECTORS, c, dir), level)
    t.ok(reported.length > 0, 'refused (pack-check would exit 1)')
    agrees(t, reported, e)
  })
}

/** Runs the built CLI in `cwd`: its exit code and stdout. */
function pipe(cwd: string, args: string[]): Promise<{ status: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { cwd, env: childEnv(), stdio: ['ignore', 'pipe', 'ignore'], timeout: 60_000 })
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d })
    child.on('error', reject)
    child.on('close', (status) => resolve({ status, stdout }))
  })
}

t.test('through the built CLI with --json: exit 1 and the expected pairs, one case per level', async (t) => {
  const chosen = ['path_escape_export_fail', 'part_size_fail', 'signature_bad_fail', 'replay_class_fail']
  // In parallel: each run is mostly the CLI starting.
  const runs = await Promise.all(chosen.map(async (c) => {
    const e = await expectedOf(c)
    return { c, e, r: await pipe(join(VECTORS, c), ['run', 'pack-check', ...e.args, '--json']) }
  }))
  for (const { c, e, r } of runs) {
    t.equal(r.status, 1, `${c}: exit 1`)
    const doc = JSON.parse(r.stdout) as { ok: boolean; level: number; findings: Pair[] }
    t.equal(doc.ok, false, `${c}: ok is false`)
    t.equal(doc.level, argsOf(e).level, `${c}: checked at its level`)
    agrees(t, doc.findings, e)
  }
})

t.test('the untouched golden packs pass at level 3', async (t) => {
  for (const name of GOLDEN_PACKS) {
    t.same(await failures(name === 'export' ? join(GOLDEN, 'export') : join(GOLDEN, name, 'store'), 3), [], name)
  }
})

t.test('the vectors are what scripts/make-pack-vectors.ts makes now, byte for byte (--check)', async (t) => {
  const r = spawnSync(process.execPath, ['dist/scripts/make-pack-vectors.js', '--check'], { env: childEnv(), encoding: 'utf8', timeout: 300_000 })
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout + r.stderr, /identical to a fresh build/)
})

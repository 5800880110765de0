/**
 * The record format v1 conformance vectors (test/vectors/record, built by scripts/make-record-vectors.ts):
 * their hashes; every `<case>_fail` fails `pipe run verify` (exit 1) with its expected (check, code) pairs
 * and nothing but them and its allowed pairs; every `reason_<reason>` case passes and its manifest states
 * the reason, and every `reason_<reason>_fail` case states a completeness its data refutes; the untouched
 * golden day passes. Verify runs in-process (the runner, as `pipe run verify`).
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import t from 'tap'
import { captureIO, childEnv } from './helpers/io.js'
import { runPipeline } from '../src/core/runner.js'
import { COMPLETENESS_REASONS, type HourlyManifest } from '../src/formats/record/manifest.js'
import { VERIFY_CODES } from '../src/formats/record/verify/verify.js'
import { registry } from '../pipelines/registry.js'

const VECTORS = join(import.meta.dirname, 'vectors', 'record')
const GOLDEN = join(import.meta.dirname, 'golden', 'record')

interface Pair { check: number; code: string }
interface Expected { args: string[]; findings: Pair[]; allowed?: Pair[]; reasons?: string[] }
interface Finding extends Pair { path: string; detail: string }

async function verify(dir: string, args: readonly string[]): Promise<{ exitCode: number; findings: Finding[]; hours: number }> {
  const options: { root: string[]; keys?: string; from?: string; to?: string } = { root: [] }
  for (let i = 0; i < args.length; i += 2) {
    const [flag, value] = [args[i]!, args[i + 1]!]
    if (flag === '--root') options.root.push(resolve(dir, value))
    else if (flag === '--keys') options.keys = resolve(dir, value)
    else if (flag === '--from') options.from = value
    else if (flag === '--to') options.to = value
    else throw new Error(`unknown argument ${flag}`)
  }
  const io = captureIO(true)
  const r = await runPipeline(registry, registry.pipeline('verify')!, options, io.settings)
  const doc = JSON.parse(io.out()) as { findings: Finding[]; hours: number }
  return { exitCode: r.exitCode, findings: doc.findings, hours: doc.hours }
}

const key = (p: Pair) => `${p.check} ${p.code}`
const walk = async (d: string, rel = ''): Promise<string[]> =>
  (await Promise.all((await readdir(d, { withFileTypes: true })).map((e) => (e.isDirectory() ? walk(join(d, e.name), `${rel}${e.name}/`) : [`${rel}${e.name}`])))).flat()

const cases = (await readdir(VECTORS, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort()
const failCases = cases.filter((c) => c.endsWith('_fail'))
const reasonCases = cases.filter((c) => c.startsWith('reason_') && !c.endsWith('_fail'))

t.test('the vectors are what hashes.txt lists', async (t) => {
  const listed = (await readFile(join(VECTORS, 'hashes.txt'), 'utf8')).trimEnd().split('\n').map((l) => /^([0-9a-f]{64}) {2}(.+)$/.exec(l)!)
  t.ok(listed.every(Boolean), 'sha256sum format')
  t.same((await walk(VECTORS)).filter((f) => f !== 'hashes.txt').sort(), listed.map((m) => m[2]).sort(), 'every file listed, nothing else')
  let bad = 0
  for (const [, sha, file] of listed) if (createHash('sha256').update(await readFile(join(VECTORS, file!))).digest('hex') !== sha) { bad++; t.fail(`${file}: sha256 differs`) }
  t.equal(bad, 0, `${listed.length} files match`)
  t.equal(cases.length, failCases.length + reasonCases.length, 'every case folder is a _fail or a reason_ case')
})

t.test('at least one failing case per check 1..10, and a case the sealer makes for every completeness reason', async (t) => {
  const checks = new Set<number>()
  for (const c of failCases) for (const p of (JSON.parse(await readFile(join(VECTORS, c, 'expected.json'), 'utf8')) as Expected).findings) checks.add(p.check)
  t.same([...checks].sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  const stated = new Set<string>()
  for (const c of reasonCases) for (const r of (JSON.parse(await readFile(join(VECTORS, c, 'expected.json'), 'utf8')) as Expected).reasons ?? []) stated.add(r)
  t.same([...stated].sort(), [...COMPLETENESS_REASONS].sort())
  t.same(COMPLETENESS_REASONS.filter((r) => !failCases.includes(`reason_${r}_fail`)), [], 'a failing case per completeness reason')
})

for (const c of failCases) {
  t.test(c, async (t) => {
    const dir = join(VECTORS, c)
    const expected = JSON.parse(await readFile(join(dir, 'expected.json'), 'utf8')) as Expected
    t.ok((await readFile(join(dir, 'README'), 'utf8')).trim().length > 0, 'README')
    const r = await verify(dir, expected.args)
    t.equal(r.exitCode, 1, 'verify fails')
    const found = new Set(r.findings.map(key))
    for (const p of expected.findings) t.ok(found.has(key(p)), `reports ${key(p)}`)
    const ok = new Set([...expected.findings, ...(expected.allowed ?? [])].map(key))
    t.same(r.findings.filter((f) => !ok.has(key(f))), [], 'nothing else')
    for (const f of r.findings) t.equal(VERIFY_CODES[f.code], f.check, `${key(f)} is a published code of its check`)
  })
}

for (const c of reasonCases) {
  t.test(c, async (t) => {
    const dir = join(VECTORS, c)
    const expected = JSON.parse(await readFile(join(dir, 'expected.json'), 'utf8')) as Expected
    const r = await verify(dir, expected.args)
    t.equal(r.exitCode, 0, 'verify passes')
    t.same(r.findings, [])
    t.equal(r.hours, 1)
    const manifests = (await walk(join(dir, 'root'))).filter((f) => /hour=\d\d\/manifest\.json$/.test(f))
    t.equal(manifests.length, 1)
    const m = JSON.parse(await readFile(join(dir, 'root', manifests[0]!), 'utf8')) as HourlyManifest
    for (const reason of expected.reasons ?? []) t.ok(m.completeness.reasons.includes(reason as never), `the sealer states ${reason}`)
    t.not(m.completeness.status, 'complete')
  })
}

t.test('the untouched golden day passes', async (t) => {
  const r = await verify(GOLDEN, ['--root', 'root', '--keys', 'jwks.json'])
  t.equal(r.exitCode, 0)
  t.same(r.findings, [])
  t.equal(r.hours, 25)
})

t.test('the vectors are what scripts/make-record-vectors.ts makes now, byte for byte (--check)', async (t) => {
  const r = spawnSync(process.execPath, ['dist/scripts/make-record-vectors.js', '--check'], { env: childEnv(), encoding: 'utf8', timeout: 300_000 })
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout + r.stderr, /identical to a fresh build/)
})

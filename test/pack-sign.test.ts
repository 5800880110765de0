/**
 * `pipe run pack-publish` as its stages (pack-version -> sign -> pack-commit), and `--signer-cmd`: the
 * manifest and the ref are signed by an external signer (here ssh-keygen -Y sign, holding the key as an
 * agent or a token would), with pipe never reading the private key. Ed25519 is deterministic, so the store
 * published through ssh-keygen is byte for byte the store published with the key file, and pack-check
 * passes it. A signer that signs with another key or in another namespace, or fails, stops the publish:
 * the feed's ref and the manifest are not written, and the store's ref stays as it was.
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { LIFE, patternRecord, ruleRecord, verificationRecord, writeJsonl } from '../src/sim/pack-records.js'
import { childEnv } from './helpers/io.js'
import { needs } from './helpers/tools.js'

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const base = await mkdtemp(join(tmpdir(), 'pipe-pack-sign-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
const T0 = '2026-11-11T00:00:00Z'
const pipe = (home: string, args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 120_000, env: { ...childEnv(), PIPE_HOME: home } })

const home = join(base, 'home')
const made = pipe(home, ['pack', 'key', '--name', 'Sign Test', '--seed', '0b'.repeat(32), '--created', T0])
if (made.status !== 0) throw new Error(made.stderr)
const keyPath = join(home, 'pack', 'publisher_ed25519')
const otherHome = join(base, 'other-home')
const other = pipe(otherHome, ['pack', 'key', '--name', 'Someone Else', '--seed', '0c'.repeat(32), '--created', T0])
if (other.status !== 0) throw new Error(other.stderr)

// The signer's copy of the key, as a token holds it; the home the publish reads keeps only .pub and statements.
const tokenKey = join(base, 'token', 'key')
await mkdir(join(base, 'token'), { mode: 0o700 })
await copyFile(keyPath, tokenKey)
const publicHome = join(base, 'public-home')
await mkdir(join(publicHome, 'pack'), { recursive: true })
for (const f of await readdir(join(home, 'pack'))) if (f !== 'publisher_ed25519') await copyFile(join(home, 'pack', f), join(publicHome, 'pack', f))

const records = join(base, 'records')
await mkdir(records)
const GLIDER = patternRecord('square', LIFE, [[1, 0], [2, 1], [0, 2], [1, 2], [2, 2]], { speed: 'c/4 diagonal' })
await writeJsonl(join(records, 'tilings.jsonl'), [{ family: 'square' }])
await writeJsonl(join(records, 'rules.jsonl'), [ruleRecord(LIFE)])
await writeJsonl(join(records, 'patterns.jsonl'), [GLIDER])
await writeJsonl(join(records, 'verifications.jsonl'), [verificationRecord(1, LIFE, GLIDER, T0)])

const publish = (h: string, store: string, extra: string[] = []) => pipe(h, ['run', 'pack-publish', '--feed', 'signed', '--to', store, '--records', records, '--created', T0, '--json', ...extra])
const keygen = (key: string, namespace = '"$PIPE_SIGN_NAMESPACE"') => `ssh-keygen -Y sign -q -f '${key}' -n ${namespace}`

async function files(dir: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>()
  for (const f of (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile())) {
    const path = join(f.parentPath, f.name)
    out.set(path.slice(dir.length + 1), await readFile(path))
  }
  return out
}

t.test('pipe describe pack-publish shows its stages', async (t) => {
  const d = pipe(home, ['describe', 'pack-publish'])
  t.equal(d.status, 0, d.stderr)
  const stages = [...d.stdout.matchAll(/^ {2}([a-z-]+) \{/gm)].map((m) => m[1])
  t.same(stages, ['pack-version', 'sign', 'pack-commit'])
  t.match(d.stdout, `sign {"format":"ssh","key":${JSON.stringify(keyPath)}}`, 'signed with the publisher key of the settings directory')
})

t.test('a store signed through ssh-keygen is the store signed with the key file, and passes pack-check', needs('ssh-keygen'), async (t) => {
  const withKey = join(base, 'with-key')
  const a = publish(home, withKey)
  t.equal(a.status, 0, a.stderr)
  const withCmd = join(base, 'with-cmd')
  const b = publish(publicHome, withCmd, ['--signer-cmd', keygen(tokenKey)])
  t.equal(b.status, 0, b.stderr)
  t.equal(JSON.parse(b.stdout).manifest, JSON.parse(a.stdout).manifest)
  t.equal(JSON.parse(b.stdout).versions, 1)
  const want = await files(withKey)
  const got = await files(withCmd)
  t.same([...got.keys()].sort(), [...want.keys()].sort(), 'the same files')
  for (const [name, bytes] of want) t.same(got.get(name), bytes, `${name}: the same bytes`)
  t.ok([...got.keys()].some((f) => f.startsWith('sigs/')) && got.has('refs/signed.json'), 'a manifest signature and a ref')
  const check = pipe(home, ['run', 'pack-check', withCmd, '--level', '2', '--json'])
  t.equal(check.status, 0, check.stdout.slice(-2000))
})

t.test('what a signer prints is stored as ssh-keygen writes it, or refused when a writer may not store it', needs('ssh-keygen'), async (t) => {
  const crlf = join(base, 'crlf')
  const r = publish(publicHome, crlf, ['--signer-cmd', `${keygen(tokenKey)} | sed 's/$/\r/'`])
  t.equal(r.status, 0, r.stderr)
  const want = await files(join(base, 'with-key'))
  const got = await files(crlf)
  for (const [name, bytes] of want) t.same(got.get(name), bytes, `${name}: CRLF lines stored as ssh-keygen's`)
  const sig = [...got.keys()].find((f) => f.startsWith('sigs/'))!
  const allowed = join(base, 'allowed_signers')
  await writeFile(allowed, `publisher ${(await readFile(`${keyPath}.pub`, 'utf8')).trim()}\n`)
  const manifestHex = sig.split('/')[3]!
  const manifest = [...got.keys()].find((f) => f.startsWith('objects/') && f.endsWith(`${manifestHex}.json`))!
  const verified = spawnSync('ssh-keygen', ['-Y', 'verify', '-f', allowed, '-I', 'publisher', '-n', 'jetcarp-manifest', '-s', join(crlf, sig)], { input: got.get(manifest) })
  t.equal(verified.status, 0, `ssh-keygen -Y verify accepts the stored signature: ${verified.stderr}`)
  const sha256 = publish(publicHome, join(base, 'sha256'), ['--signer-cmd', `ssh-keygen -Y sign -q -O hashalg=sha256 -f '${tokenKey}' -n "$PIPE_SIGN_NAMESPACE"`])
  t.equal(sha256.status, 2, sha256.stderr)
  t.match(sha256.stderr, /sign\.bad-signature.*pack\.sig-hash-algorithm|pack\.sig-hash-algorithm.*sign\.bad-signature/)
  t.notOk(existsSync(join(base, 'sha256', 'refs', 'signed.json')))
})

t.test('a publish whose feed moved while it was signed is refused; one stopped while signing publishes nothing', needs('ssh-keygen'), async (t) => {
  const store = join(base, 'race')
  const slow = spawn(process.execPath, [cli, 'run', 'pack-publish', '--feed', 'signed', '--to', store, '--records', records, '--created', T0, '--signer-cmd', `sleep 3; ${keygen(tokenKey)}`],
    { env: { ...childEnv(), PIPE_HOME: publicHome }, stdio: ['ignore', 'pipe', 'pipe'] })
  let slowErr = ''
  slow.stderr.on('data', (d: Buffer) => { slowErr += d.toString() })
  const slowExit = new Promise<number | null>((resolve) => slow.on('close', resolve))
  await new Promise((resolve) => setTimeout(resolve, 1500))
  const fast = publish(home, store, ['--created', '2026-11-12T00:00:00Z'])
  t.equal(fast.status, 0, fast.stderr)
  const moved = await slowExit
  t.equal(moved, 2, slowErr)
  t.match(slowErr, /pack\.ref-moved/)
  t.equal(JSON.parse(await readFile(join(store, 'refs', 'signed.json'), 'utf8')).manifest, JSON.parse(fast.stdout).manifest, 'the ref names the version that landed')

  const stopped = join(base, 'stopped')
  const child = spawn(process.execPath, [cli, 'run', 'pack-publish', '--feed', 'signed', '--to', stopped, '--records', records, '--created', T0, '--signer-cmd', `sleep 30; ${keygen(tokenKey)}`],
    { env: { ...childEnv(), PIPE_HOME: publicHome }, stdio: ['ignore', 'pipe', 'pipe'] })
  const exit = new Promise<number | null>((resolve) => child.on('close', resolve))
  await new Promise((resolve) => setTimeout(resolve, 1500))
  const at = Date.now()
  child.kill('SIGINT')
  t.not(await exit, 0, 'a stopped publish does not succeed')
  t.ok(Date.now() - at < 10_000, 'the waiting signer is stopped with the run')
  t.notOk(existsSync(join(stopped, 'refs', 'signed.json')), 'no ref')
  t.notOk(existsSync(join(stopped, 'sigs')), 'no signature')
})

t.test('a signer with another key, in another namespace, or failing, publishes nothing', needs('ssh-keygen'), async (t) => {
  const otherKey = join(otherHome, 'pack', 'publisher_ed25519')
  for (const [what, cmd, code] of [
    ['another key', keygen(otherKey), 'sign.bad-signature'],
    ['another namespace', keygen(tokenKey, 'jetcarp-key'), 'sign.bad-signature'],
    ['no signature', 'echo not a signature', 'sign.bad-signature'],
    ['a failing command', 'echo no token >&2; exit 3', 'sign.command-failed'],
  ] as const) {
    const store = join(base, `refused-${what.replace(/ /g, '-')}`)
    const r = publish(publicHome, store, ['--signer-cmd', cmd])
    t.equal(r.status, 2, `${what}: exit 2 (${r.stderr})`)
    t.match(r.stderr, new RegExp(code.replace('.', '\\.')), `${what}: ${code}`)
    t.equal(r.stderr.trim().split('\n').length, 1, `${what}: one line`)
    t.notOk(existsSync(join(store, 'refs', 'signed.json')), `${what}: no ref`)
    t.notOk(existsSync(join(store, 'sigs')), `${what}: no signature`)
  }
  const noKey = publish(publicHome, join(base, 'no-key'))
  t.equal(noKey.status, 2, 'without --signer-cmd the private key is needed')
  t.match(noKey.stderr, /pack\.publisher-key-missing/)
})

t.test('the sign stage refuses a JWS key option with --format ssh, and a document without a namespace', async (t) => {
  const bad = pipe(home, ['run', 'pack-publish', '--feed', 'x', '--to', join(base, 'x'), '--records', records, '--signer-cmd', 'true', '--key', join(base, 'missing')])
  t.equal(bad.status, 2)
  t.match(bad.stderr, /publisher public key|publisher-key-missing/)
  const { signStage } = await import('../src/transforms/sign.js')
  const ctx = { stage: 'sign', summary: {}, signal: new AbortController().signal } as never
  await t.rejects(async () => signStage.create(signStage.options.parse({ format: 'ssh', key: keyPath, kid: 'k' }), ctx), { code: 'usage.bad-option' })
  const run = await signStage.create(signStage.options.parse({ format: 'ssh', key: keyPath }), ctx)
  const doc = { kind: 'document', name: 'a document', value: {}, bytes: new Uint8Array([1]), serialize: () => new Uint8Array([1]) }
  async function* one() { yield doc }
  await t.rejects((async () => { for await (const _ of (run as (s: AsyncIterable<unknown>) => AsyncIterable<unknown>)(one())) { /* drained */ } })(), { code: 'sign.no-namespace' })
})

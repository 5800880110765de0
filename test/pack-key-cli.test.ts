/**
 * `pipe pack key` through the built CLI (npm run build first), with HOME and PIPE_HOME in a temporary
 * folder, checked with OpenSSH: ssh-keygen -l names the key as we do, -y reads the private key, and
 * -Y verify accepts every statement's signature (those subtests are skipped without ssh-keygen, and fail
 * under PIPE_REQUIRE_TOOLS=1: test/helpers/tools.ts). Also the rotation's crash safety, through the module.
 */
import { spawnSync } from 'node:child_process'
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import canonicalize from 'canonicalize'
import sshpk from 'sshpk'
import t, { type Test } from 'tap'
import { verifyKeyChain, type KeyStatementDocument } from '../src/formats/pack/keys/key-statements.js'
import { chainStatements, loadPublisherKey, publisherKeyFiles } from '../src/formats/pack/keys/publisher-key.js'
import { fingerprint, formatPublicKey, generateKey, signerName } from '../src/formats/pack/keys/ssh-key.js'
import { childEnv } from './helpers/io.js'
import { needs } from './helpers/tools.js'

const CLI = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const T0 = '2026-11-11T00:00:00Z'
const T1 = '2026-11-12T00:00:00Z'
const T2 = '2026-11-13T00:00:00Z'
const SEED_A = 'a1'.repeat(32)
const SEED_B = 'b2'.repeat(32)
const SEED_C = 'c3'.repeat(32)
const ORCID = '0000-0002-1825-0097'

interface Home {
  home: string
  /** The default key file under PIPE_HOME. */
  key: string
  run(args: string[], env?: NodeJS.ProcessEnv): { status: number | null; stdout: string; stderr: string }
}

async function makeHome(t: Test): Promise<Home> {
  const home = await mkdtemp(join(tmpdir(), 'pack-key-cli-'))
  t.teardown(() => rm(home, { recursive: true, force: true }))
  const base = childEnv()
  delete base.XDG_CONFIG_HOME
  return {
    home,
    key: join(home, 'pipe', 'pack', 'publisher_ed25519'),
    run: (args, env = { PIPE_HOME: join(home, 'pipe') }) => {
      const r = spawnSync(process.execPath, [CLI, 'pack', 'key', ...args], { encoding: 'utf8', timeout: 60_000, env: { ...base, HOME: home, ...env } })
      return { status: r.status, stdout: r.stdout, stderr: r.stderr }
    },
  }
}

/** The value of a `label  value` line of pipe pack key's output. */
function field(stdout: string, label: string): string | undefined {
  return stdout.split('\n').find((l) => l.startsWith(`${label} `))?.slice(label.length).trim()
}

async function readStatement(path: string): Promise<{ bytes: Buffer; doc: KeyStatementDocument }> {
  const bytes = await readFile(path)
  return { bytes, doc: JSON.parse(bytes.toString('utf8')) as KeyStatementDocument }
}

/** ssh-keygen -Y verify of a statement's signature (namespace jetcarp-key) by `signerKey` (a public key line). */
async function keygenVerifiesStatement(dir: string, doc: KeyStatementDocument, signerKey: string): Promise<{ status: number | null; output: string }> {
  const { signature, ...unsigned } = doc
  const allowed = join(dir, 'allowed_signers')
  await writeFile(allowed, `publisher namespaces="jetcarp-key" ${signerKey}\n`)
  const sig = join(dir, 'statement.sig')
  await writeFile(sig, signature)
  const r = spawnSync('ssh-keygen', ['-Y', 'verify', '-f', allowed, '-I', 'publisher', '-n', 'jetcarp-key', '-s', sig], { input: canonicalize(unsigned)!, encoding: 'utf8' })
  return { status: r.status, output: r.stdout + r.stderr }
}

function keygen(args: string[]): string {
  const r = spawnSync('ssh-keygen', args, { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`ssh-keygen ${args.join(' ')}: ${r.stderr}`)
  return r.stdout
}

const chainOf = (docs: KeyStatementDocument[]) => verifyKeyChain(docs.map((statement) => ({ statement })))

t.test('--help lists the options', async (t) => {
  const h = await makeHome(t)
  const r = h.run(['--help'])
  t.equal(r.status, 0, r.stderr)
  for (const flag of ['--key', '--name', '--orcid', '--github', '--rotate', '--revoke', '--authorise', '--label', '--revoke-machine', '--seed', '--created']) t.match(r.stdout, flag)
})

t.test('make, show and update the key: OpenSSH reads it, names it as we do, and verifies its statements', async (t) => {
  const h = await makeHome(t)
  const made = h.run(['--name', 'Ada Lovelace', '--orcid', ORCID, '--github', 'ada', '--seed', SEED_A, '--created', T0])
  t.equal(made.status, 0, made.stderr)
  t.match(made.stdout, /^made the publisher's key and its first statement\n/)
  const files = publisherKeyFiles(h.key)
  t.equal((await stat(files.privateKey)).mode & 0o777, 0o600, 'private key mode 0600')
  t.equal((await stat(join(h.home, 'pipe', 'pack'))).mode & 0o777, 0o700, 'its folder 0700')
  t.notOk(await stat(join(h.home, '.ssh')).catch(() => undefined), 'nothing under ~/.ssh')

  const fp = field(made.stdout, 'fingerprint')!
  t.equal(fp, fingerprint(generateKey({ seed: Buffer.from(SEED_A, 'hex') }).publicKey), '--seed makes the key of that seed')
  t.equal(field(made.stdout, 'signer'), signerName(generateKey({ seed: Buffer.from(SEED_A, 'hex') }).publicKey))
  const pubLine = (await readFile(files.publicKey, 'utf8')).trim()

  const first = await readStatement(files.statement)
  t.equal(first.bytes.toString('utf8'), canonicalize(first.doc), 'the statement file is its RFC 8785 bytes')
  t.match(first.doc, { fingerprint: fp, name: 'Ada Lovelace', orcid: ORCID, github: 'ada', created: T0, revoked: false, format: 'jetcarp-key', version: '1.0' })
  t.notOk('supersedes' in first.doc)
  t.equal(first.doc.key, formatPublicKey(generateKey({ seed: Buffer.from(SEED_A, 'hex') }).publicKey, ''), 'the statement\'s key line has no comment')

  const shown = h.run([])
  t.equal(shown.status, 0, shown.stderr)
  t.match(shown.stdout, /^the publisher's key\n/)
  t.equal(field(shown.stdout, 'fingerprint'), fp)
  t.equal(field(shown.stdout, 'name'), 'Ada Lovelace')
  t.equal(field(shown.stdout, 'orcid'), ORCID)
  t.equal(field(shown.stdout, 'public'), first.doc.key)
  t.same(await readFile(files.statement), first.bytes, 'showing writes nothing')

  const updated = h.run(['--name', 'Ada King', '--github', '', '--created', T1])
  t.equal(updated.status, 0, updated.stderr)
  t.match(updated.stdout, /^wrote a new statement/)
  t.equal(field(updated.stdout, 'fingerprint'), fp, 'the same key')
  const second = await readStatement(files.statement)
  t.match(second.doc, { name: 'Ada King', orcid: ORCID, created: T1 })
  t.notOk('github' in second.doc, "--github '' removed it")

  const same = h.run(['--name', 'Ada King'])
  t.equal(same.status, 0)
  t.match(same.stdout, /^the publisher's key\n/, 'saying the same again writes nothing')
  t.same(await readFile(files.statement), second.bytes)

  // The key files are the same throughout: the update wrote only a new statement.
  await t.test('OpenSSH: ssh-keygen -l names the key as we do, -y reads it, -Y verify accepts both statements', needs('ssh-keygen'), async (t) => {
    t.equal(keygen(['-l', '-f', files.publicKey]).split(' ')[1], fp, 'ssh-keygen -l prints our fingerprint')
    t.equal(keygen(['-y', '-f', files.privateKey]).trim(), pubLine, 'ssh-keygen -y reads the private key: the same public key')
    const v = await keygenVerifiesStatement(h.home, first.doc, pubLine)
    t.equal(v.status, 0, `ssh-keygen -Y verify accepts the self-signed statement: ${v.output}`)
    t.equal((await keygenVerifiesStatement(h.home, second.doc, pubLine)).status, 0, 'ssh-keygen -Y verify accepts the new statement')
  })
})

t.test('the settings directory: PIPE_HOME, else XDG_CONFIG_HOME/pipe, else ~/.config/pipe; --key elsewhere', async (t) => {
  const h = await makeHome(t)
  t.equal(h.run(['--seed', SEED_A], { XDG_CONFIG_HOME: join(h.home, 'xdg') }).status, 0)
  t.ok(await stat(join(h.home, 'xdg', 'pipe', 'pack', 'publisher_ed25519')))
  const plain = h.run(['--seed', SEED_B], {})
  t.equal(plain.status, 0, plain.stderr)
  t.equal(field(plain.stdout, 'key'), join(h.home, '.config', 'pipe', 'pack', 'publisher_ed25519'))

  // A key ssh-keygen made, given with --key: kept as it is, and its statement made beside it without its comment.
  await t.test('--key: a key ssh-keygen made is adopted, an encrypted one refused', needs('ssh-keygen'), async (t) => {
    const own = join(h.home, 'keys', 'id_ed25519')
    await mkdir(join(h.home, 'keys'))
    keygen(['-t', 'ed25519', '-N', '', '-C', 'ada@laptop', '-f', own, '-q'])
    const before = await readFile(own)
    const adopted = h.run(['--key', own, '--name', 'Ada', '--created', T0])
    t.equal(adopted.status, 0, adopted.stderr)
    t.same(await readFile(own), before, 'the private key file is untouched')
    t.equal(field(adopted.stdout, 'fingerprint'), keygen(['-l', '-f', `${own}.pub`]).split(' ')[1])
    const st = await readStatement(`${own}.statement.json`)
    t.notMatch(st.doc.key, /ada@laptop/, 'no user or host name in the statement')
    t.equal((await keygenVerifiesStatement(h.home, st.doc, (await readFile(`${own}.pub`, 'utf8')).trim())).status, 0)

    const locked = join(h.home, 'keys', 'locked')
    keygen(['-t', 'ed25519', '-N', 'secret', '-f', locked, '-q'])
    const refused = h.run(['--key', locked])
    t.equal(refused.status, 2)
    t.match(refused.stderr, /encrypted.*\(pack\.publisher-key-unreadable\)/)
  })
})

t.test('machine keys: authorised from a .pub file or a key line, with a label, and revoked in place', async (t) => {
  const h = await makeHome(t)
  t.equal(h.run(['--name', 'Ada', '--seed', SEED_A, '--created', T0]).status, 0)
  // The laptop's .pub as OpenSSH writes it (key line with its comment), its fingerprint read by sshpk.
  const laptop = join(h.home, 'laptop')
  await writeFile(`${laptop}.pub`, formatPublicKey(generateKey({ seed: Buffer.alloc(32, 10), comment: 'ada@laptop' }).publicKey) + '\n')
  const laptopFp = sshpk.parseKey(await readFile(`${laptop}.pub`, 'utf8'), 'ssh').fingerprint('sha256').toString()
  const ci = formatPublicKey(generateKey({ seed: Buffer.alloc(32, 9) }).publicKey, 'runner@ci')
  const ciFp = fingerprint(generateKey({ seed: Buffer.alloc(32, 9) }).publicKey)

  const a = h.run(['--authorise', `${laptop}.pub`, '--label', 'laptop', '--created', T1])
  t.equal(a.status, 0, a.stderr)
  t.equal(field(a.stdout, 'machine'), `${laptopFp} laptop`)
  const b = h.run(['--authorize', ci, '--created', T1])
  t.equal(b.status, 0, b.stderr)
  const st = await readStatement(publisherKeyFiles(h.key).statement)
  t.same(st.doc.authorised!.map((e) => [e.fingerprint, e.label ?? null, e.revoked ?? false]), [[laptopFp, 'laptop', false], [ciFp, null, false]])
  t.notOk(st.doc.authorised!.some((e) => /@/.test(e.key)), 'machine keys are written without their comments')
  const pubLine = (await readFile(publisherKeyFiles(h.key).publicKey, 'utf8')).trim()
  await t.test('ssh-keygen -Y verify accepts the statement with its machine keys', needs('ssh-keygen'), async (t) => {
    t.equal((await keygenVerifiesStatement(h.home, st.doc, pubLine)).status, 0)
  })

  const r = h.run(['--revoke-machine', laptopFp, '--created', T2])
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout, new RegExp(`machine +${laptopFp.replace(/[+/]/g, '\\$&')} laptop \\(revoked\\)`))
  const revoked = await readStatement(publisherKeyFiles(h.key).statement)
  t.same(revoked.doc.authorised!.map((e) => e.revoked ?? false), [true, false], 'kept, and marked revoked')
  const chain = chainOf([revoked.doc])
  const machines = chain.keys.get(revoked.doc.fingerprint)!.authorised
  t.equal(machines.get(laptopFp)!.revoked, true)
  t.equal(machines.get(ciFp)!.revoked, false)
})

t.test('rotation: the successor signed by the old key, the old key revoked by the successor, the chain verified', async (t) => {
  const h = await makeHome(t)
  t.equal(h.run(['--name', 'Ada', '--orcid', ORCID, '--seed', SEED_A, '--created', T0]).status, 0)
  const files = publisherKeyFiles(h.key)
  const oldPub = (await readFile(files.publicKey, 'utf8')).trim()
  const oldFp = fingerprint(generateKey({ seed: Buffer.from(SEED_A, 'hex') }).publicKey)
  const oldSigner = signerName(generateKey({ seed: Buffer.from(SEED_A, 'hex') }).publicKey)
  const ci = formatPublicKey(generateKey({ seed: Buffer.alloc(32, 9) }).publicKey)
  t.equal(h.run(['--authorise', ci, '--label', 'ci', '--created', T0]).status, 0)

  const rotated = h.run(['--rotate', '--revoke', '--seed', SEED_B, '--created', T1])
  t.equal(rotated.status, 0, rotated.stderr)
  t.match(rotated.stdout, new RegExp(`^rotated: a new key succeeds ${oldFp.replace(/[+/]/g, '\\$&')}, which it revoked`))
  t.match(field(rotated.stdout, 'succeeds'), /\(revoked: what it signed no longer counts\)$/)
  const newFp = field(rotated.stdout, 'fingerprint')!
  t.equal(newFp, fingerprint(generateKey({ seed: Buffer.from(SEED_B, 'hex') }).publicKey))
  t.match(field(rotated.stdout, 'publisher'), oldFp, 'the publisher\'s id stays the first key')
  t.equal(field(rotated.stdout, 'name'), 'Ada', 'the details carried over')
  t.match(field(rotated.stdout, 'machine'), /ci$/, 'and the machine keys')
  t.equal((await stat(files.privateKey)).mode & 0o777, 0o600)
  t.equal((await stat(files.predecessor)).mode & 0o777, 0o600, 'the old key kept 0600 as the predecessor')
  t.same((await readdir(files.chain)).sort(), [`${oldSigner}.json`, `${oldSigner}.revocation.json`])
  t.notOk(await stat(files.rotation).catch(() => undefined), 'no staging folder left')

  const successor = await readStatement(files.statement)
  t.equal(successor.doc.supersedes, oldFp)
  const revocation = await readStatement(join(files.chain, `${oldSigner}.revocation.json`))
  t.equal(revocation.doc.revoked, true)
  const newPub = (await readFile(files.publicKey, 'utf8')).trim()

  const loaded = await loadPublisherKey(h.key)
  const all = [successor.doc, (await readStatement(join(files.chain, `${oldSigner}.json`))).doc, revocation.doc]
  for (const [what, docs] of [['every statement kept', all], ['the statements a store carries', loaded.statements.map((b) => JSON.parse(b.toString('utf8')) as KeyStatementDocument)]] as const) {
    const chain = chainOf([...docs])
    t.same(chain.findings, [], `${what}: no findings`)
    t.match(chain.keys.get(newFp), { status: 'active', publisherId: oldFp, predecessor: oldFp }, `${what}: the new key stands`)
    t.match(chain.keys.get(oldFp), { status: 'revoked', revokedBy: [newFp] }, `${what}: the old key is revoked by the new one`)
  }

  // Later statements of the successor are signed by its predecessor.
  const renamed = h.run(['--name', 'Ada King', '--created', T1])
  t.equal(renamed.status, 0, renamed.stderr)

  // OpenSSH on the first rotation's files (the rename wrote only a new statement).
  await t.test('ssh-keygen: the new .pub, the predecessor, and who signed each statement', needs('ssh-keygen'), async (t) => {
    t.equal(keygen(['-l', '-f', files.publicKey]).split(' ')[1], newFp, 'the .pub is the new key\'s')
    t.equal(keygen(['-y', '-f', files.predecessor]).trim(), oldPub)
    t.equal((await keygenVerifiesStatement(h.home, successor.doc, oldPub)).status, 0, 'ssh-keygen: the successor statement is signed by the old key')
    t.equal((await keygenVerifiesStatement(h.home, revocation.doc, newPub)).status, 0, 'ssh-keygen: the revocation is signed by the new key')
    t.equal((await keygenVerifiesStatement(h.home, (await readStatement(files.statement)).doc, oldPub)).status, 0)
  })

  // A second rotation, not revoking: three keys, one publisher, the second still standing for what it signed.
  const again = h.run(['--rotate', '--seed', SEED_C, '--created', T2])
  t.equal(again.status, 0, again.stderr)
  t.match(again.stdout, /^rotated: a new key succeeds \S+, which stands for the versions it signed/)
  const thirdFp = field(again.stdout, 'fingerprint')!
  const three = await loadPublisherKey(h.key)
  t.equal(three.earlier.length, 2)
  t.equal(three.statements.length, 3, 'one statement per key for a store')
  t.equal(fingerprint(three.predecessor!.publicKey), newFp, 'the predecessor is the second key; the first one\'s private key is gone')
  const newSigner = three.earlier[0]!.signer
  t.same((await readdir(files.chain)).sort(), [`${oldSigner}.json`, `${oldSigner}.revocation.json`, `${newSigner}.json`].sort(), 'no revocation of the second key')
  const chain = chainOf(three.statements.map((b) => JSON.parse(b.toString('utf8')) as KeyStatementDocument))
  t.same(chain.findings, [])
  t.match(chain.keys.get(thirdFp), { status: 'active', publisherId: oldFp, predecessor: newFp })
  t.match(chain.keys.get(newFp), { status: 'active', revoked: false, publisherId: oldFp }, 'the second key stands')
  t.match(chain.keys.get(oldFp), { status: 'revoked' })
  t.equal(field(again.stdout, 'name'), 'Ada King')

  // Revoking a key that has a predecessor: a store cannot carry that revocation, and the CLI says so.
  const fourth = h.run(['--rotate', '--revoke', '--seed', 'd4'.repeat(32), '--created', T2])
  t.equal(fourth.status, 0, fourth.stderr)
  t.match(fourth.stdout, new RegExp(`^rotated: a new key succeeds ${thirdFp.replace(/[+/]/g, '\\$&')}, which it revoked.*\nnote: stores carry \\S+'s statement, which links it to the key before it, not its revocation`))
  const four = await loadPublisherKey(h.key)
  const kept = chainOf(chainStatements(four))
  t.match(kept.keys.get(thirdFp), { status: 'revoked' }, 'the kept statements revoke the third key')
  t.match(kept.keys.get(four.fingerprint), { status: 'active', publisherId: oldFp }, 'and the fourth stands after it')
})

t.test('an interrupted rotation is finished when it was committed, and discarded when not', async (t) => {
  const h = await makeHome(t)
  t.equal(h.run(['--name', 'Ada', '--seed', SEED_A, '--created', T0]).status, 0)
  const files = publisherKeyFiles(h.key)
  const before = join(h.home, 'before')
  await cp(join(h.home, 'pipe'), before, { recursive: true })
  t.equal(h.run(['--rotate', '--revoke', '--seed', SEED_B, '--created', T1]).status, 0)
  const after = await loadPublisherKey(h.key)

  // The state before the rotation, with its staging folder as a rotation leaves it just before settling.
  const restage = async (committed: boolean, alreadyMoved: string[] = []) => {
    await rm(join(h.home, 'pipe'), { recursive: true })
    await cp(before, join(h.home, 'pipe'), { recursive: true })
    const staged = files.rotation
    await mkdir(join(staged, 'chain'), { recursive: true })
    const copies: [string, string][] = [
      [files.privateKey, 'key'], [files.publicKey, 'key.pub'], [files.statement, 'statement.json'], [files.predecessor, 'predecessor'],
      [join(files.chain, `${after.earlier[0]!.signer}.json`), `chain/${after.earlier[0]!.signer}.json`],
      [join(files.chain, `${after.earlier[0]!.signer}.revocation.json`), `chain/${after.earlier[0]!.signer}.revocation.json`],
    ]
    for (const [final, name] of copies) {
      const bytes = await readFile(join(h.home, 'after', final.slice(join(h.home, 'pipe').length)))
      if (alreadyMoved.includes(name)) {
        await mkdir(join(final, '..'), { recursive: true })
        await writeFile(final, bytes)
      } else await writeFile(join(staged, name), bytes)
    }
    if (committed) await writeFile(join(staged, 'ready'), '')
  }
  await cp(join(h.home, 'pipe'), join(h.home, 'after'), { recursive: true })

  await restage(true)
  t.equal((await loadPublisherKey(h.key)).fingerprint, after.fingerprint, 'committed: finished on the next load')
  t.notOk(await stat(files.rotation).catch(() => undefined))
  await restage(true, ['chain/' + after.earlier[0]!.signer + '.json', 'predecessor'])
  const resumed = h.run([])
  t.equal(resumed.status, 0, resumed.stderr)
  t.equal(field(resumed.stdout, 'fingerprint'), after.fingerprint, 'committed and half moved: finished by the CLI too')
  await restage(false)
  const discarded = await loadPublisherKey(h.key)
  t.equal(discarded.fingerprint, fingerprint(generateKey({ seed: Buffer.from(SEED_A, 'hex') }).publicKey), 'not committed: the old key stays')
  t.notOk(await stat(files.rotation).catch(() => undefined), 'and the staging folder is gone')
})

t.test('bad flags exit 2 with one line naming the flag, and change nothing', async (t) => {
  const h = await makeHome(t)
  t.equal(h.run(['--rotate']).status, 2, '--rotate without a key')
  const revokeAlone = h.run(['--revoke'])
  t.equal(revokeAlone.status, 2, '--revoke without --rotate')
  t.match(revokeAlone.stderr, /^pipe: --revoke: .*give it with --rotate/)
  t.equal(h.run(['--name', 'Ada', '--seed', SEED_A, '--created', T0]).status, 0)
  const statement = await readFile(publisherKeyFiles(h.key).statement)
  const fp = fingerprint(generateKey({ seed: Buffer.from(SEED_A, 'hex') }).publicKey)
  const cases: [string[], RegExp][] = [
    [['--orcid', '0000-0002-1825-0098'], /^pipe: --orcid: .*check character/],
    [['--orcid', `https://orcid.org/${ORCID}`], /^pipe: --orcid: .*bare ORCID/],
    [['--orcid', '1234'], /^pipe: --orcid: /],
    [['--github=-ada'], /^pipe: --github: /],
    [['--github', 'a--b'], /^pipe: --github: /],
    [['--name', 'Ada\nKing'], /^pipe: --name: .*one line/],
    [['--name', ' Ada'], /^pipe: --name: /],
    [['--label', 'laptop'], /^pipe: --label: .*--authorise/],
    [['--authorise', join(h.home, 'missing.pub')], /^pipe: --authorise: cannot read .*no such file/],
    [['--authorise', 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ== x'], /^pipe: --authorise: not an Ed25519 public key/],
    [['--authorise', formatPublicKey(generateKey({ seed: Buffer.from(SEED_A, 'hex') }).publicKey)], /^pipe: --authorise: .*the publisher's own key/],
    [['--revoke-machine', 'laptop'], /^pipe: --revoke-machine: .*not a SHA256: fingerprint/],
    [['--revoke-machine', fingerprint(generateKey({ seed: Buffer.alloc(32, 3) }).publicKey)], /^pipe: --revoke-machine: .*not a machine key/],
    [['--seed', 'beef'], /^pipe: --seed: /],
    [['--seed', SEED_B], /^pipe: --seed: .*already a key/],
    [['--created', '2026-11-11'], /^pipe: --created: /],
    [['--authorise', 'x', '--authorise', 'y'], /^pipe: --authorise: give it once/],
    [['--nmae', 'Ada'], /Unknown argument: nmae/],
  ]
  for (const [args, message] of cases) {
    const r = h.run(args)
    t.equal(r.status, 2, args.join(' '))
    t.match(r.stderr, message, args.join(' '))
    t.equal(r.stderr.trim().split('\n').length, 1, `${args.join(' ')}: one line`)
  }
  t.same(await readFile(publisherKeyFiles(h.key).statement), statement, 'the statement is as it was')
  t.equal(field(h.run([]).stdout, 'fingerprint'), fp)
})

t.test('the key files refused by what is wrong with them, each with its code and nothing changed', async (t) => {
  const pk = await import('../src/formats/pack/keys/publisher-key.js')
  const C = pk.PUBLISHER_KEY_CODES
  const home = await mkdtemp(join(tmpdir(), 'pack-key-codes-'))
  t.teardown(() => rm(home, { recursive: true, force: true }))
  const path = join(home, 'publisher_ed25519')
  const files = publisherKeyFiles(path)
  await t.rejects(pk.loadPublisherKey(path), { code: C.missing }, 'no key at all')

  await t.test('a key ssh-keygen made', needs('ssh-keygen'), async (t) => {
    const own = join(home, 'ssh-keygen_ed25519')
    keygen(['-q', '-t', 'ed25519', '-N', '', '-C', 'someone@host', '-f', own])
    await t.rejects(pk.loadPublisherKey(own), { code: C.noStatement }, 'a key ssh-keygen made, no statement yet')
    const adopted = await pk.makePublisherKey(own, { details: { name: 'Ada' }, created: T0 })
    t.equal(adopted.fingerprint, keygen(['-l', '-f', `${own}.pub`]).split(' ')[1], 'which is adopted as it is')
  })
  const made = await pk.makePublisherKey(path, { details: { name: 'Ada' }, created: T0 })
  await t.rejects(pk.makePublisherKey(path, { created: T0 }), { code: C.exists }, 'making it again would start another publisher')

  await t.rejects(pk.updatePublisherKey(made, { authorise: [{ key: made.key.publicKey }], created: T0 }), { code: C.badChange }, 'authorising the publisher\'s own key')
  await t.rejects(pk.updatePublisherKey(made, { revoke: [fingerprint(generateKey({ seed: Buffer.alloc(32, 5) }).publicKey)], created: T0 }), { code: C.badChange }, 'revoking a machine key it never authorised')
  await t.rejects(pk.updatePublisherKey(made, { created: '2026-11-11' }), { code: C.badChange }, 'a created time that is not RFC 3339 UTC')

  const pub = await readFile(files.publicKey)
  await writeFile(files.publicKey, formatPublicKey(generateKey({ seed: Buffer.alloc(32, 6) }).publicKey) + '\n')
  await t.rejects(pk.loadPublisherKey(path), { code: C.inconsistent, message: /is not the public key of/ }, 'a .pub of another key')
  await writeFile(files.publicKey, pub)
  const statement = await readFile(files.statement)
  const other = join(home, 'other')
  await pk.makePublisherKey(other, { created: T0, seed: Buffer.alloc(32, 7) })
  await writeFile(files.statement, await readFile(publisherKeyFiles(other).statement))
  await t.rejects(pk.loadPublisherKey(path), { code: C.inconsistent, message: /is the statement of/ }, 'a statement of another key')
  await writeFile(files.statement, '{"format": "jetcarp-key"')
  await t.rejects(pk.loadPublisherKey(path), { code: C.unreadable }, 'a statement that does not parse')
  await writeFile(files.statement, statement)
  t.equal((await pk.loadPublisherKey(path)).fingerprint, made.fingerprint, 'put back, the key loads')

  const rotated = await pk.rotatePublisherKey(await pk.loadPublisherKey(path), { created: T1, seed: Buffer.alloc(32, 8) })
  await rm(files.predecessor)
  const { predecessor: _loadedBefore, ...withoutPredecessor } = rotated
  await t.rejects(pk.updatePublisherKey(withoutPredecessor, { details: { name: 'Ada King' }, created: T1 }), { code: C.badChange, message: /predecessor is missing/ }, 'an update of a successor without its predecessor')
  await rm(join(files.chain, `${rotated.earlier[0]!.signer}.json`))
  await t.rejects(pk.loadPublisherKey(path), { code: C.inconsistent, message: /the chain of statements .* stops at/ }, 'a chain with an earlier statement missing')

  await writeFile(path, 'not a key\n')
  await t.rejects(pk.loadPublisherKey(path), { code: C.unreadable }, 'a private key file that is not one')
})

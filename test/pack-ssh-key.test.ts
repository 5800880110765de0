import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import sshpk from 'sshpk'
import t, { type Test } from 'tap'
import {
  KEY_CODES,
  SshReader,
  SshWriter,
  checkSignerName,
  decodeBase64Strict,
  fingerprint,
  fingerprintFromSignerName,
  formatPrivateKey,
  formatPublicKey,
  generateKey,
  isFingerprint,
  isSignerName,
  parsePrivateKey,
  parsePublicKey,
  parsePublicKeyBlob,
  privateKeyFromText,
  publicKeyBlob,
  publicKeyFromLine,
  signerName,
  signerNameFromFingerprint,
  withComment,
} from '../src/formats/pack/keys/ssh-key.js'
import { seededRandom } from '../src/sim/random.js'
import { needs } from './helpers/tools.js'

const SEED_A = Buffer.from('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f', 'hex')
/** The seed of the fuzz test's mutations: a failure replays as it was. */
const FUZZ_SEED = 20261112

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'pack-ssh-key-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

function keygen(args: string[], input?: string): string {
  return execFileSync('ssh-keygen', args, { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'], ...(input !== undefined ? { input } : {}) })
}

t.test('a key from a seed is deterministic, random keys differ', async (t) => {
  const a = generateKey({ seed: SEED_A, comment: 'golden a' })
  const b = generateKey({ seed: SEED_A, comment: 'golden a' })
  t.equal(formatPrivateKey(a), formatPrivateKey(b), 'same seed, same private key file bytes')
  t.equal(formatPublicKey(a.publicKey), formatPublicKey(b.publicKey))
  t.equal(a.checkInt, b.checkInt, 'check-int derived from the key')
  const r1 = generateKey()
  const r2 = generateKey()
  t.not(formatPublicKey(r1.publicKey), formatPublicKey(r2.publicKey))
  t.equal(r1.seed.length, 32)
  // RFC 8032 test 1: the seed 9d61b19d... has the public key d75a9801...
  const rfc = generateKey({ seed: Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex') })
  t.equal(rfc.publicKey.key.toString('hex'), 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 'RFC 8032 test vector 1')
  t.throws(() => generateKey({ seed: Buffer.alloc(31) }), { code: KEY_CODES.malformed })
})

t.test('public key line, blob and comment', async (t) => {
  const k = generateKey({ seed: SEED_A, comment: 'Golden Publisher A' })
  const line = formatPublicKey(k.publicKey)
  t.match(line, /^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI[A-Za-z0-9+/]+ Golden Publisher A$/)
  t.equal(formatPublicKey(k.publicKey, ''), line.split(' ').slice(0, 2).join(' '), 'no comment, no trailing space')
  const p = parsePublicKey(line + '\n')
  t.ok(p.ok)
  if (p.ok) {
    t.equal(p.value.comment, 'Golden Publisher A')
    t.same(p.value.key, k.publicKey.key)
  }
  t.equal(formatPublicKey(withComment(k.publicKey, 'x')), line.replace(/Golden Publisher A$/, 'x'))
  t.equal(publicKeyFromLine(line).comment, 'Golden Publisher A')
  t.throws(() => formatPublicKey(k.publicKey, 'a\nb'), { code: KEY_CODES.malformed })
})

t.test('fingerprint equals ssh-keygen -l; our private key is accepted by ssh-keygen -y', async (t) => {
  const dir = await tempDir(t)
  const keys = [generateKey({ seed: SEED_A, comment: 'golden' }), generateKey({ seed: Buffer.alloc(32, 0xff) }), generateKey({ comment: 'random key' }), generateKey()]
  for (const [i, k] of keys.entries()) {
    const pub = join(dir, `k${i}.pub`)
    const priv = join(dir, `k${i}`)
    await writeFile(pub, formatPublicKey(k.publicKey) + '\n')
    await writeFile(priv, formatPrivateKey(k))
    await chmod(priv, 0o600)
    // sshpk, an independent parser, reads our file the same way.
    const sp = sshpk.parsePrivateKey(await readFile(priv), 'ssh')
    t.equal(sp.type, 'ed25519')
    t.equal(sp.fingerprint('sha256').toString(), fingerprint(k.publicKey), `key ${i}: sshpk fingerprint`)
    t.equal(sp.toPublic().toString('ssh').split(' ').slice(0, 2).join(' '), formatPublicKey(k.publicKey, ''), `key ${i}: sshpk public key`)
  }
  await t.test('ssh-keygen -l and -y', needs('ssh-keygen'), async (t) => {
    for (const [i, k] of keys.entries()) {
      const pub = join(dir, `k${i}.pub`)
      const priv = join(dir, `k${i}`)
      const l = keygen(['-l', '-f', pub]).trim().split(' ')
      t.equal(l[0], '256')
      t.equal(l[1], fingerprint(k.publicKey), `key ${i}: fingerprint as ssh-keygen -l prints it`)
      t.equal(keygen(['-l', '-f', priv]).trim().split(' ')[1], fingerprint(k.publicKey), `key ${i}: ssh-keygen -l on the private key`)
      const y = keygen(['-y', '-f', priv]).trim()
      t.equal(y, formatPublicKey(k.publicKey), `key ${i}: ssh-keygen -y prints the same public key (with comment)`)
    }
  })
})

t.test('keys ssh-keygen makes are read, and written again byte for byte', needs('ssh-keygen'), async (t) => {
  const dir = await tempDir(t)
  for (const comment of ['made by ssh-keygen', '', 'x'.repeat(37)]) {
    const f = join(dir, `kg-${comment.length}`)
    keygen(['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', f])
    const text = await readFile(f, 'utf8')
    const p = parsePrivateKey(text)
    t.ok(p.ok, 'parsed')
    if (!p.ok) continue
    t.equal(p.value.publicKey.comment, comment)
    t.equal(formatPrivateKey(p.value), text, `re-encoded identically (comment length ${comment.length})`)
    const pubLine = (await readFile(f + '.pub', 'utf8')).trim()
    t.equal(formatPublicKey(p.value.publicKey), pubLine)
    t.equal(fingerprint(p.value.publicKey), keygen(['-l', '-f', f + '.pub']).split(' ')[1])
  }
})

t.test('refused private keys', async (t) => {
  await t.test('keys ssh-keygen made: encrypted, RSA', needs('ssh-keygen'), async (t) => {
    const dir = await tempDir(t)
    const enc = join(dir, 'enc')
    keygen(['-q', '-t', 'ed25519', '-N', 'secret passphrase', '-f', enc])
    const e = parsePrivateKey(await readFile(enc, 'utf8'))
    t.equal(e.ok ? 'ok' : e.code, KEY_CODES.encrypted, 'encrypted key')

    const rsa = join(dir, 'rsa')
    keygen(['-q', '-t', 'rsa', '-b', '1024', '-N', '', '-f', rsa])
    const r = parsePrivateKey(await readFile(rsa, 'utf8'))
    t.equal(r.ok ? 'ok' : r.code, KEY_CODES.keyType, 'RSA key')
    const rp = parsePublicKey(await readFile(rsa + '.pub', 'utf8'))
    t.equal(rp.ok ? 'ok' : rp.code, KEY_CODES.keyType, 'RSA public key')
  })
  t.throws(() => privateKeyFromText(''), { code: KEY_CODES.malformed })

  const k = generateKey({ seed: SEED_A })
  const text = formatPrivateKey(k)
  const blob = decodeBase64Strict(text.split('\n').slice(1, -2).join(''))!
  const rearmor = (b: Buffer) => `-----BEGIN OPENSSH PRIVATE KEY-----\n${b.toString('base64')}\n-----END OPENSSH PRIVATE KEY-----\n`
  t.ok(parsePrivateKey(rearmor(blob)).ok, 'one long base64 line is fine')
  t.ok(parsePrivateKey(text.replace(/\n/g, '\r\n')).ok, 'CRLF line ends are fine')
  t.ok(parsePrivateKey(text.slice(0, -1)).ok, 'no final newline is fine')

  // Check-ints that differ, a wrong seed, bad padding, trailing bytes: rebuilt by hand.
  const build = (over: { c2?: number; priv?: Buffer; pad?: number[]; tail?: Buffer; nkeys?: number }) => {
    const section = new SshWriter().u32(1).u32(over.c2 ?? 1).string('ssh-ed25519').string(k.publicKey.key).string(over.priv ?? Buffer.concat([k.seed, k.publicKey.key])).string('c').toBuffer()
    const padLen = (8 - (section.length % 8)) % 8
    const pad = Buffer.from(over.pad ?? Array.from({ length: padLen }, (_, i) => i + 1))
    const w = new SshWriter().raw('openssh-key-v1\0').string('none').string('none').string('').u32(over.nkeys ?? 1).string(publicKeyBlob(k.publicKey)).string(Buffer.concat([section, pad]))
    if (over.tail) w.raw(over.tail)
    return rearmor(w.toBuffer())
  }
  t.ok(parsePrivateKey(build({})).ok, 'hand-built key parses')
  const code = (s: string) => {
    const p = parsePrivateKey(s)
    return p.ok ? 'ok' : p.code
  }
  t.equal(code(build({ c2: 2 })), KEY_CODES.malformed, 'check-ints differ')
  t.equal(code(build({ priv: Buffer.concat([Buffer.alloc(32, 7), k.publicKey.key]) })), KEY_CODES.malformed, 'seed is not the public key\'s')
  t.equal(code(build({ pad: [1, 2, 3, 4, 5, 6, 8] })), KEY_CODES.malformed, 'bad padding')
  t.equal(code(build({ tail: Buffer.from([0]) })), KEY_CODES.malformed, 'trailing bytes')
  t.equal(code(build({ nkeys: 2 })), KEY_CODES.malformed, 'two keys')
  t.equal(code(text.replace('-----BEGIN OPENSSH', '-----BEGIN OPENSSX')), KEY_CODES.malformed, 'wrong armor')
  t.equal(code('junk\n' + text), KEY_CODES.malformed, 'text before the armor')
  t.equal(code(text.replace(/^b3Bl/m, 'b3B!')), KEY_CODES.malformed, 'garbage base64')

  // Hostile mutations of the blob never throw and are refused unless they leave the key unchanged. The
  // mutations come from a seeded source; each assertion names the seed and the case.
  const random = seededRandom(FUZZ_SEED)
  const at = (n: number) => Math.floor(random() * n)
  let refused = 0
  for (let i = 0; i < 400; i++) {
    const m = Buffer.from(blob)
    const kind = i % 4
    let mutated: Buffer
    let how: string
    if (kind === 0) {
      const pos = at(m.length)
      const bit = at(8)
      m[pos] = m[pos]! ^ (1 << bit)
      mutated = m
      how = `bit ${bit} flipped at ${pos}`
    } else if (kind === 1) {
      mutated = m.subarray(0, at(m.length))
      how = `cut to ${mutated.length} bytes`
    } else if (kind === 2) {
      const pos = at(m.length - 4)
      const len = [0xffffffff, 0x7fffffff, m.length, m.length + 1, 0][i % 5]!
      m.writeUInt32BE(len, pos)
      mutated = m
      how = `length ${len} at ${pos}`
    } else {
      const pos = at(m.length)
      const bytes = Buffer.from(Array.from({ length: 1 + (i % 7) }, () => at(256)))
      mutated = Buffer.concat([m.subarray(0, pos), bytes, m.subarray(pos)])
      how = `${bytes.length} bytes inserted at ${pos}`
    }
    const what = `seed ${FUZZ_SEED}, case ${i}: ${how}`
    let p: ReturnType<typeof parsePrivateKey> | undefined
    t.doesNotThrow(() => {
      p = parsePrivateKey(rearmor(mutated))
    }, `${what}: does not throw`)
    if (p && p.ok) {
      // Only a change that leaves every checked part alone can be accepted: the check-ints (equal pairs
      // are not cross-checked beyond equality) and the comment are free text.
      t.same(p.value.publicKey.key, k.publicKey.key, `${what}: accepted mutation keeps the key`)
      t.same(p.value.seed, k.seed, `${what}: accepted mutation keeps the seed`)
    } else refused++
  }
  t.ok(refused > 300, `most mutations refused (${refused}/400, seed ${FUZZ_SEED})`)
})

t.test('refused public keys', async (t) => {
  const k = generateKey({ seed: SEED_A })
  const blob = publicKeyBlob(k.publicKey)
  const code = (line: string) => {
    const p = parsePublicKey(line)
    return p.ok ? 'ok' : p.code
  }
  t.equal(code(`ssh-ed25519 ${blob.toString('base64')}`), 'ok')
  t.equal(code(`ssh-ed25519 ${blob.toString('base64')}`.replace('AAAA', 'AA!A')), KEY_CODES.malformed, 'garbage base64')
  t.equal(code(`ssh-ed25519 ${blob.toString('base64').slice(0, -4)}`), KEY_CODES.malformed, 'truncated blob')
  t.equal(code(`ssh-ed25519 ${Buffer.concat([blob, Buffer.from([0])]).toString('base64')}`), KEY_CODES.malformed, 'trailing byte in blob')
  t.equal(code(`ssh-rsa ${blob.toString('base64')}`), KEY_CODES.keyType, 'type word not ssh-ed25519')
  const dsaBlob = new SshWriter().string('ssh-dss').string(Buffer.alloc(32)).toBuffer()
  t.equal(code(`ssh-ed25519 ${dsaBlob.toString('base64')}`), KEY_CODES.keyType, 'blob type not ssh-ed25519')
  const sk = new SshWriter().string('sk-ssh-ed25519@openssh.com').string(k.publicKey.key).string('ssh:').toBuffer()
  t.equal(code(`sk-ssh-ed25519@openssh.com ${sk.toString('base64')}`), KEY_CODES.keyType, 'security-key Ed25519 is another type')
  const huge = new SshWriter().u32(0xffffffff).raw('ssh-ed25519').toBuffer()
  t.equal(code(`ssh-ed25519 ${huge.toString('base64')}`), KEY_CODES.malformed, 'huge length field')
  t.equal(code(`ssh-ed25519 ${blob.toString('base64')}\nssh-ed25519 ${blob.toString('base64')}`), KEY_CODES.malformed, 'two lines')
  t.equal(code(''), KEY_CODES.malformed)
  t.equal(code('x'.repeat(100_000)), KEY_CODES.malformed, 'very long line')
  t.equal(code(`ssh-ed25519 ${blob.toString('base64')} ${'c'.repeat(100)}`), 'ok', 'long comment fine')
  t.equal(parsePublicKeyBlob(new SshWriter().string('ssh-ed25519').string(Buffer.alloc(31)).toBuffer()).ok, false, '31-byte key')
  t.throws(() => publicKeyFromLine('nope'), { code: KEY_CODES.malformed })

  const r = new SshReader(Buffer.from([0, 0, 0, 9, 1, 2]))
  t.equal(r.string(), undefined, 'reader refuses a length past the end')
  t.equal(r.offset, 0, 'and does not move')
})

t.test('names: fingerprints in documents, signer names in file names', async (t) => {
  const k = generateKey({ seed: SEED_A, comment: 'whatever' })
  const fp = fingerprint(k.publicKey)
  const name = signerName(k.publicKey)
  t.match(fp, /^SHA256:[A-Za-z0-9+/]{43}$/)
  t.match(name, /^[0-9a-f]{64}$/)
  // As the spec's Python: hashlib.sha256(base64.b64decode(blob)).hexdigest() over the key's base64 blob.
  const b64 = formatPublicKey(k.publicKey).split(' ')[1]!
  t.equal(name, createHash('sha256').update(Buffer.from(b64, 'base64')).digest('hex'))
  // ... and base64.b64decode(fp[7:] + "=").hex() from the fingerprint.
  t.equal(name, Buffer.from(fp.slice(7) + '=', 'base64').toString('hex'))
  t.equal(signerNameFromFingerprint(fp), name)
  t.equal(fingerprintFromSignerName(name), fp)
  t.equal(fingerprint(publicKeyBlob(k.publicKey)), fp, 'from the blob too')
  t.equal(signerName(withComment(k.publicKey, 'other')), name, 'the comment is not part of the name')
  t.ok(isFingerprint(fp))
  t.notOk(isFingerprint(fp.replace('SHA256:', 'sha256:')))
  t.notOk(isFingerprint(fp + '='), 'padding is not part of the spelling')
  t.notOk(isFingerprint('SHA256:' + 'A'.repeat(42) + 'B'), 'non-canonical last digit')
  t.notOk(isFingerprint('MD5:aa'))
  t.ok(isSignerName(name))
  t.notOk(isSignerName(name.toUpperCase()), 'no names that differ only in case')
  t.notOk(isSignerName(name.slice(1)))
  t.notOk(isSignerName('../' + name.slice(3)))
  t.equal(signerNameFromFingerprint('SHA256:nope'), undefined)
  t.equal(fingerprintFromSignerName('ABC'), undefined)
  t.equal(checkSignerName(name, k.publicKey), null)
  t.equal(checkSignerName(name, fp), null)
  const other = generateKey({ seed: Buffer.alloc(32, 9) })
  t.equal(checkSignerName(name, other.publicKey)?.code, 'pack.signer-name-mismatch')
  t.equal(checkSignerName(name.toUpperCase(), k.publicKey)?.code, 'pack.key-name-malformed')
})

t.test('ssh-keygen is present for the interop tests', needs('ssh-keygen'), async (t) => {
  const r = spawnSync('ssh-keygen', ['-?'], { encoding: 'utf8' })
  t.match(r.stderr, /usage: ssh-keygen/)
})

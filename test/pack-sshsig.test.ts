import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import {
  SshWriter,
  decodeBase64Strict,
  ed25519Sign,
  fingerprint,
  formatPrivateKey,
  formatPublicKey,
  generateKey,
  publicKeyBlob,
  signerName,
  type SshPrivateKey,
} from '../src/formats/pack/keys/ssh-key.js'
import {
  NS_KEY,
  NS_MANIFEST,
  NS_RECEIPT,
  NS_REF,
  PACK_NAMESPACES,
  SIG_CODES,
  armorSshsig,
  dearmorSshsig,
  parseSshsigBlob,
  signSshsig,
  signSshsigBlob,
  sshsigSigningKey,
  verifySshsig,
} from '../src/formats/pack/keys/sshsig.js'
import { seededRandom } from '../src/sim/random.js'
import { needs } from './helpers/tools.js'

const SEED = Buffer.from('a0'.repeat(32), 'hex')
const MESSAGE = Buffer.from('{"format":"jetcarp-pack","title":"minimal","version":"1.0"}')
/** The seed of the fuzz test's mutations and of the random-looking inputs: a failure replays as it was. */
const FUZZ_SEED = 20261111

/** `n` bytes from a seeded random source. */
const seededBytes = (random: () => number, n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)))

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'pack-sshsig-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

async function writeKey(dir: string, name: string, k: SshPrivateKey): Promise<string> {
  const f = join(dir, name)
  await writeFile(f, formatPrivateKey(k))
  await chmod(f, 0o600)
  await writeFile(f + '.pub', formatPublicKey(k.publicKey) + '\n')
  return f
}

/** Runs ssh-keygen -Y verify; returns its exit status. */
async function keygenVerify(dir: string, k: SshPrivateKey, namespace: string, sig: string, data: Uint8Array, allowNs = namespace): Promise<number> {
  const allowed = join(dir, 'allowed_signers')
  await writeFile(allowed, `publisher namespaces="${allowNs}" ${formatPublicKey(k.publicKey, '')}\n`)
  const sigFile = join(dir, 'file.sig')
  await writeFile(sigFile, sig)
  const r = spawnSync('ssh-keygen', ['-Y', 'verify', '-f', allowed, '-I', 'publisher', '-n', namespace, '-s', sigFile], { input: data })
  return r.status ?? -1
}

function blobOf(armored: string): Buffer {
  const d = dearmorSshsig(armored)
  if (!d.ok) throw new Error(d.detail)
  return d.blob
}

const codeOf = (r: ReturnType<typeof verifySshsig>) => (r.ok ? 'ok' : r.code)

t.test('namespaces are the spec\'s', async (t) => {
  t.same([NS_MANIFEST, NS_REF, NS_KEY, NS_RECEIPT], ['jetcarp-manifest', 'jetcarp-ref', 'jetcarp-key', 'jetcarp-receipt'])
  t.same(PACK_NAMESPACES, [NS_MANIFEST, NS_REF, NS_KEY, NS_RECEIPT])
})

t.test('what we sign, ssh-keygen -Y verify accepts, in every namespace', async (t) => {
  const dir = await tempDir(t)
  const signed: { k: SshPrivateKey; ns: string; sig: string }[] = []
  const sha256s: { k: SshPrivateKey; sig: string }[] = []
  for (const k of [generateKey({ seed: SEED, comment: 'golden' }), generateKey()]) {
    for (const ns of [NS_MANIFEST, NS_REF, NS_KEY]) {
      const sig = signSshsig(k, MESSAGE, ns)
      t.match(sig, /^-----BEGIN SSH SIGNATURE-----\n(?:[A-Za-z0-9+/=]{1,70}\n)+-----END SSH SIGNATURE-----\n$/, 'armored, final newline')
      for (const line of sig.split('\n').slice(1, -3)) t.equal(line.length, 70, '70 columns')
      signed.push({ k, ns, sig })
      const v = verifySshsig(sig, MESSAGE, ns)
      t.ok(v.ok, `we accept ${ns}`)
      if (v.ok) {
        t.equal(v.fingerprint, fingerprint(k.publicKey))
        t.equal(v.signer, signerName(k.publicKey))
        t.equal(v.hashAlgorithm, 'sha512')
        t.same(v.publicKey.key, k.publicKey.key)
      }
    }
    sha256s.push({ k, sig: signSshsig(k, MESSAGE, NS_MANIFEST, { hashAlgorithm: 'sha256' }) })
  }
  await t.test('ssh-keygen -Y verify', needs('ssh-keygen'), async (t) => {
    for (const { k, ns, sig } of signed) {
      t.equal(await keygenVerify(dir, k, ns, sig, MESSAGE), 0, `ssh-keygen accepts ${ns}`)
      t.not(await keygenVerify(dir, k, ns === NS_REF ? NS_MANIFEST : NS_REF, sig, MESSAGE), 0, `ssh-keygen refuses ${ns} as another namespace`)
    }
    for (const { k, sig } of sha256s) t.equal(await keygenVerify(dir, k, NS_MANIFEST, sig, MESSAGE), 0, 'ssh-keygen accepts our sha256 signature')
  })
  // Text messages are signed as their UTF-8 bytes.
  const k = generateKey({ seed: SEED })
  t.equal(signSshsig(k, 'héllo', NS_REF), signSshsig(k, Buffer.from('héllo', 'utf8'), NS_REF))
})

t.test('byte-identical to ssh-keygen -Y sign; its signatures verify here', needs('ssh-keygen'), async (t) => {
  const dir = await tempDir(t)
  const k = generateKey({ seed: SEED, comment: 'golden' })
  const keyFile = await writeKey(dir, 'id_ed25519', k)
  const data = join(dir, 'data')
  await writeFile(data, MESSAGE)
  execFileSync('ssh-keygen', ['-Y', 'sign', '-f', keyFile, '-n', NS_REF, data], { stdio: 'pipe' })
  const theirs = await readFile(data + '.sig', 'utf8')
  t.equal(signSshsig(k, MESSAGE, NS_REF), theirs, 'Ed25519 is deterministic: same bytes as ssh-keygen')
  const v = verifySshsig(theirs, MESSAGE, NS_REF)
  t.ok(v.ok, 'ssh-keygen -Y sign accepted')
  t.equal(codeOf(verifySshsig(theirs, MESSAGE, NS_MANIFEST)), SIG_CODES.namespace)

  // -O hashalg=sha256: accepted when verifying.
  const data2 = join(dir, 'data2')
  await writeFile(data2, MESSAGE)
  execFileSync('ssh-keygen', ['-Y', 'sign', '-O', 'hashalg=sha256', '-f', keyFile, '-n', NS_MANIFEST, data2], { stdio: 'pipe' })
  const theirs256 = await readFile(data2 + '.sig', 'utf8')
  const v2 = verifySshsig(theirs256, MESSAGE, NS_MANIFEST)
  t.ok(v2.ok && v2.hashAlgorithm === 'sha256', 'sha256 signature accepted')
  t.equal(signSshsig(k, MESSAGE, NS_MANIFEST, { hashAlgorithm: 'sha256' }), theirs256)

  // A key ssh-keygen made signs; we verify.
  const kg = join(dir, 'kg')
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', kg], { stdio: 'pipe' })
  const data3 = join(dir, 'data3')
  await writeFile(data3, 'x')
  execFileSync('ssh-keygen', ['-Y', 'sign', '-f', kg, '-n', NS_KEY, data3], { stdio: 'pipe' })
  const v3 = verifySshsig(await readFile(data3 + '.sig'), 'x', NS_KEY)
  t.ok(v3.ok, 'bytes of a .sig file accepted')
  if (v3.ok) t.equal(v3.fingerprint, execFileSync('ssh-keygen', ['-l', '-f', kg + '.pub'], { encoding: 'utf8' }).split(' ')[1])
})

t.test('refusals with their codes', async (t) => {
  const random = seededRandom(FUZZ_SEED)
  const k = generateKey({ seed: SEED })
  const sig = signSshsig(k, MESSAGE, NS_MANIFEST)
  const blob = blobOf(sig)

  t.equal(codeOf(verifySshsig(sig, MESSAGE, NS_REF)), SIG_CODES.namespace, 'wrong namespace')
  t.equal(codeOf(verifySshsig(sig, MESSAGE, '')), SIG_CODES.namespace, 'no namespace to check')
  const flipped = Buffer.from(MESSAGE)
  flipped[3] = flipped[3]! ^ 0x01
  t.equal(codeOf(verifySshsig(sig, flipped, NS_MANIFEST)), SIG_CODES.bad, 'flipped bit in data')
  const sigFlip = Buffer.from(blob)
  sigFlip[sigFlip.length - 10] = sigFlip[sigFlip.length - 10]! ^ 0x80
  t.equal(codeOf(verifySshsig(armorSshsig(sigFlip), MESSAGE, NS_MANIFEST)), SIG_CODES.bad, 'flipped bit in signature')
  const keyFlip = Buffer.from(blob)
  keyFlip[10 + 4 + 4 + 11 + 4 + 5] = keyFlip[10 + 4 + 4 + 11 + 4 + 5]! ^ 0x04
  t.equal(codeOf(verifySshsig(armorSshsig(keyFlip), MESSAGE, NS_MANIFEST)), SIG_CODES.bad, 'flipped bit in the signing key')

  const lines = sig.split('\n')
  t.equal(codeOf(verifySshsig(lines.slice(0, 3).join('\n') + '\n', MESSAGE, NS_MANIFEST)), SIG_CODES.malformed, 'truncated armor (no END line)')
  t.equal(codeOf(verifySshsig([lines[0], lines[1], lines.at(-2), ''].join('\n'), MESSAGE, NS_MANIFEST)), SIG_CODES.malformed, 'truncated armor body')
  t.equal(codeOf(verifySshsig(sig.slice(0, 40), MESSAGE, NS_MANIFEST)), SIG_CODES.malformed, 'cut short')
  t.equal(codeOf(verifySshsig(sig.replace(lines[2]!, lines[2]!.replace(/[A-Za-z]/, '*')), MESSAGE, NS_MANIFEST)), SIG_CODES.malformed, 'garbage base64')
  t.equal(codeOf(verifySshsig(`-----BEGIN SSH SIGNATURE-----\n${seededBytes(random, 120).toString('base64')}\n-----END SSH SIGNATURE-----\n`, MESSAGE, NS_MANIFEST)), SIG_CODES.malformed, `random base64 (seed ${FUZZ_SEED})`)
  t.equal(codeOf(verifySshsig(sig.replace('SSH SIGNATURE-----\n', 'SSH SIGNATURE-----\n\n'), MESSAGE, NS_MANIFEST)), SIG_CODES.malformed, 'blank line')
  t.equal(codeOf(verifySshsig('prefix\n' + sig, MESSAGE, NS_MANIFEST)), SIG_CODES.malformed, 'text before')
  t.equal(codeOf(verifySshsig(sig + 'suffix\n', MESSAGE, NS_MANIFEST)), SIG_CODES.malformed, 'text after')
  t.equal(codeOf(verifySshsig(sig + '\n', MESSAGE, NS_MANIFEST)), SIG_CODES.malformed, 'two final newlines')
  t.equal(codeOf(verifySshsig('', MESSAGE, NS_MANIFEST)), SIG_CODES.malformed, 'empty')
  t.equal(codeOf(verifySshsig('x'.repeat(200_000), MESSAGE, NS_MANIFEST)), SIG_CODES.malformed, 'huge text')
  t.equal(codeOf(verifySshsig(new Uint8Array(200_000), MESSAGE, NS_MANIFEST)), SIG_CODES.malformed, 'huge bytes')
  t.equal(codeOf(verifySshsig(undefined as unknown as string, MESSAGE, NS_MANIFEST)), SIG_CODES.malformed, 'not a signature at all')
  t.equal(codeOf(verifySshsig(sig, undefined as unknown as string, NS_MANIFEST)), SIG_CODES.malformed, 'no message: refused, not thrown')

  // Accepted variants of the armor: no final newline, CRLF, other widths, the blob itself.
  t.equal(codeOf(verifySshsig(sig.slice(0, -1), MESSAGE, NS_MANIFEST)), 'ok', 'no final newline')
  t.equal(codeOf(verifySshsig(sig.replace(/\n/g, '\r\n'), MESSAGE, NS_MANIFEST)), 'ok', 'CRLF')
  t.equal(codeOf(verifySshsig(`-----BEGIN SSH SIGNATURE-----\n${blob.toString('base64')}\n-----END SSH SIGNATURE-----`, MESSAGE, NS_MANIFEST)), 'ok', 'one line')
  t.equal(codeOf(verifySshsig(blob, MESSAGE, NS_MANIFEST)), 'ok', 'binary blob')
  t.equal(codeOf(verifySshsig(Buffer.from(sig), MESSAGE, NS_MANIFEST)), 'ok', 'armored bytes')
})

/** Builds an sshsig blob field by field. */
function rawSig(f: { magic?: string; version?: number; key?: Buffer; ns?: string; reserved?: Buffer; alg?: string; sig?: Buffer; tail?: Buffer }): Buffer {
  const w = new SshWriter()
    .raw(f.magic ?? 'SSHSIG')
    .u32(f.version ?? 1)
    .string(f.key ?? Buffer.alloc(0))
    .string(f.ns ?? NS_MANIFEST)
    .string(f.reserved ?? Buffer.alloc(0))
    .string(f.alg ?? 'sha512')
    .string(f.sig ?? Buffer.alloc(0))
  if (f.tail) w.raw(f.tail)
  return w.toBuffer()
}

function signedData(ns: string, reserved: Buffer, alg: string, msg: Uint8Array): Buffer {
  return new SshWriter().raw('SSHSIG').string(ns).string(reserved).string(alg).string(createHash(alg).update(msg).digest()).toBuffer()
}

t.test('hostile structures are refused cleanly', async (t) => {
  const random = seededRandom(FUZZ_SEED)
  const k = generateKey({ seed: SEED })
  const key = publicKeyBlob(k.publicKey)
  const good = (reserved = Buffer.alloc(0), alg = 'sha512', ns = NS_MANIFEST) =>
    new SshWriter().string('ssh-ed25519').string(ed25519Sign(k, signedData(ns, reserved, alg, MESSAGE))).toBuffer()
  const v = (b: Buffer) => codeOf(verifySshsig(armorSshsig(b), MESSAGE, NS_MANIFEST))

  t.equal(v(rawSig({ key, sig: good() })), 'ok', 'hand-built signature verifies')
  t.same(rawSig({ key, sig: good() }), signSshsigBlob(k, MESSAGE, NS_MANIFEST), 'and equals ours')
  t.equal(v(rawSig({ key, sig: good(Buffer.from('future tag')), reserved: Buffer.from('future tag') })), 'ok', 'non-empty reserved is signed and otherwise ignored')
  t.equal(v(rawSig({ key, sig: good(), reserved: Buffer.from('x') })), SIG_CODES.bad, 'reserved changed after signing')
  t.equal(v(rawSig({ key, sig: good(), magic: 'SSHSIH' })), SIG_CODES.malformed, 'wrong magic')
  t.equal(v(rawSig({ key, sig: good(), version: 2 })), SIG_CODES.malformed, 'version 2')
  t.equal(v(rawSig({ key, sig: good(), tail: Buffer.from([0]) })), SIG_CODES.malformed, 'trailing byte')
  t.equal(v(rawSig({ key, sig: good(), alg: 'md5' })), SIG_CODES.hashAlgorithm, 'unknown hash algorithm')
  t.equal(v(rawSig({ key, sig: good(undefined, 'sha256'), alg: 'sha256' })), 'ok', 'sha256 accepted')
  t.equal(v(rawSig({ key, sig: good(), alg: 'sha256' })), SIG_CODES.bad, 'sha512 signature claiming sha256')
  t.equal(v(rawSig({ key: Buffer.concat([key, Buffer.from([0])]), sig: good() })), SIG_CODES.malformed, 'trailing byte in key')
  t.equal(v(rawSig({ key, sig: Buffer.concat([good(), Buffer.from([0])]) })), SIG_CODES.malformed, 'trailing byte in inner signature')
  t.equal(v(rawSig({ key, sig: new SshWriter().string('ssh-ed25519').string(Buffer.alloc(63)).toBuffer() })), SIG_CODES.malformed, '63-byte signature')
  t.equal(v(rawSig({ key, sig: new SshWriter().string('rsa-sha2-512').string(Buffer.alloc(64)).toBuffer() })), SIG_CODES.keyType, 'signature type not Ed25519')
  const rsaKey = new SshWriter().string('ssh-rsa').string(Buffer.from([1, 0, 1])).string(seededBytes(random, 128)).toBuffer()
  t.equal(v(rawSig({ key: rsaKey, sig: new SshWriter().string('rsa-sha2-512').string(seededBytes(random, 128)).toBuffer() })), SIG_CODES.keyType, `RSA key (random bytes of seed ${FUZZ_SEED})`)
  const skKey = new SshWriter().string('sk-ssh-ed25519@openssh.com').string(k.publicKey.key).string('ssh:').toBuffer()
  t.equal(v(rawSig({ key: skKey, sig: good() })), SIG_CODES.keyType, 'security-key Ed25519')
  t.equal(v(rawSig({ key: new SshWriter().string('ssh-ed25519').string(Buffer.alloc(33)).toBuffer(), sig: good() })), SIG_CODES.malformed, '33-byte key')
  t.equal(v(Buffer.from('SSHSIG')), SIG_CODES.malformed, 'magic only')
  t.equal(v(Buffer.alloc(0)), SIG_CODES.malformed, 'empty blob')
  // Length fields beyond the buffer, and huge ones: every field.
  const base = rawSig({ key, sig: good() })
  const offsets: number[] = []
  for (let off = 10, i = 0; i < 5; i++) {
    offsets.push(off)
    off += 4 + base.readUInt32BE(off)
  }
  for (const off of offsets) {
    for (const len of [0xffffffff, 0x80000000, base.length, base.length - off - 3]) {
      const b = Buffer.from(base)
      b.writeUInt32BE(len, off)
      const r = verifySshsig(armorSshsig(b), MESSAGE, NS_MANIFEST)
      t.equal(codeOf(r), SIG_CODES.malformed, `length ${len} at ${off}`)
    }
  }
  t.equal(v(rawSig({ key, sig: good() }).subarray(0, 8)), SIG_CODES.malformed, 'cut in the version')
  // parseSshsigBlob itself.
  const p = parseSshsigBlob(base)
  t.ok(p.ok)
  if (p.ok) t.equal(p.sig.namespace.toString(), NS_MANIFEST)
  t.equal(parseSshsigBlob('x' as unknown as Uint8Array).ok, false)
})

t.test('expected key and signer file name', async (t) => {
  const k = generateKey({ seed: SEED })
  const other = generateKey({ seed: Buffer.alloc(32, 3) })
  const sig = signSshsig(k, MESSAGE, NS_MANIFEST)
  t.equal(codeOf(verifySshsig(sig, MESSAGE, NS_MANIFEST, { expectedKey: k.publicKey })), 'ok')
  t.equal(codeOf(verifySshsig(sig, MESSAGE, NS_MANIFEST, { expectedKey: fingerprint(k.publicKey) })), 'ok')
  t.equal(codeOf(verifySshsig(sig, MESSAGE, NS_MANIFEST, { expectedKey: other.publicKey })), SIG_CODES.keyMismatch)
  t.equal(codeOf(verifySshsig(sig, MESSAGE, NS_MANIFEST, { signerName: signerName(k.publicKey) })), 'ok', 'sigs/.../<signer>.sig named for its key')
  t.equal(codeOf(verifySshsig(sig, MESSAGE, NS_MANIFEST, { signerName: signerName(other.publicKey) })), SIG_CODES.signerNameMismatch, 'named for another key')
  t.equal(codeOf(verifySshsig(sig, MESSAGE, NS_MANIFEST, { signerName: 'not-hex' })), SIG_CODES.signerNameMismatch, 'malformed name')
  const sk = sshsigSigningKey(sig)
  t.ok(sk.ok && sk.fingerprint === fingerprint(k.publicKey), 'signing key read without verifying')
  t.equal(sshsigSigningKey('junk').ok, false)
})

t.test(`fuzz (seed ${FUZZ_SEED}): mutated signatures never throw, and are refused unless unchanged`, async (t) => {
  const random = seededRandom(FUZZ_SEED)
  const at = (n: number) => Math.floor(random() * n)
  const k = generateKey({ seed: SEED })
  const sig = signSshsig(k, MESSAGE, NS_MANIFEST)
  const blob = blobOf(sig)
  let refused = 0
  const threw: string[] = []
  const acceptedChanged: string[] = []
  const N = 600
  for (let i = 0; i < N; i++) {
    const m = Buffer.from(blob)
    let mutated: Buffer
    let how: string
    switch (i % 6) {
      case 0: {
        const pos = at(m.length)
        const bit = at(8)
        m[pos] = m[pos]! ^ (1 << bit)
        mutated = m
        how = `bit ${bit} flipped at ${pos}`
        break
      }
      case 1:
        mutated = m.subarray(0, at(m.length))
        how = `cut to ${mutated.length} bytes`
        break
      case 2: {
        const pos = at(m.length - 3)
        const len = [0xffffffff, 0x7fffffff, 0x10000000, m.length, at(300)][i % 5]!
        m.writeUInt32BE(len, pos)
        mutated = m
        how = `length ${len} at ${pos}`
        break
      }
      case 3: {
        const pos = at(m.length)
        mutated = Buffer.concat([m.subarray(0, pos), seededBytes(random, 1 + (i % 9)), m.subarray(pos)])
        how = `${1 + (i % 9)} bytes inserted at ${pos}`
        break
      }
      case 4: {
        const pos = at(m.length)
        mutated = Buffer.concat([m.subarray(0, pos), m.subarray(pos + 1 + (i % 5))])
        how = `${1 + (i % 5)} bytes removed at ${pos}`
        break
      }
      default: {
        const places: number[] = []
        for (let j = 0; j < 4; j++) {
          const pos = at(m.length)
          m[pos] = at(256)
          places.push(pos)
        }
        mutated = m
        how = `bytes replaced at ${places.join(', ')}`
      }
    }
    const what = `seed ${FUZZ_SEED}, binary case ${i}${i % 2 ? ' (armored)' : ''}: ${how}`
    let r: ReturnType<typeof verifySshsig> | undefined
    try {
      r = verifySshsig(i % 2 ? armorSshsig(mutated) : mutated, MESSAGE, NS_MANIFEST)
    } catch {
      threw.push(what)
      continue
    }
    if (!r.ok) {
      refused++
      if (!Object.values(SIG_CODES).includes(r.code as never)) t.fail(`${what}: unknown code ${r.code}`)
    } else if (!mutated.equals(blob)) acceptedChanged.push(what)
  }
  // Mutations of the armored text too: accepted only when the decoded blob is unchanged.
  for (let i = 0; i < 300; i++) {
    const chars = sig.split('')
    const pos = at(chars.length)
    const op = i % 3
    let how: string
    if (op === 0) {
      chars[pos] = String.fromCharCode(32 + at(95))
      how = `${JSON.stringify(chars[pos])} at ${pos}`
    } else if (op === 1) {
      chars.splice(pos, 1)
      how = `character ${pos} removed`
    } else {
      chars.splice(pos, 0, ['\n', '\r', ' ', '=', 'A', '-'][i % 6]!)
      how = `${JSON.stringify(chars[pos])} inserted at ${pos}`
    }
    const what = `seed ${FUZZ_SEED}, text case ${i}: ${how}`
    const text = chars.join('')
    let r: ReturnType<typeof verifySshsig> | undefined
    try {
      r = verifySshsig(text, MESSAGE, NS_MANIFEST)
    } catch {
      threw.push(what)
      continue
    }
    if (r.ok) {
      const d = decodeBase64Strict(text.split(/\r?\n/).filter((l) => l && !l.startsWith('-----')).join(''))
      if (!d || !d.equals(blob)) acceptedChanged.push(what)
    }
  }
  t.equal(threw.length, 0, `never throws (seed ${FUZZ_SEED})${threw.length ? `: ${threw.join('; ')}` : ''}`)
  t.equal(acceptedChanged.length, 0, `never accepts changed bytes (seed ${FUZZ_SEED})${acceptedChanged.length ? `: ${acceptedChanged.join('; ')}` : ''}`)
  t.ok(refused >= N - 5, `binary mutations refused: ${refused}/${N} (seed ${FUZZ_SEED})`)
})

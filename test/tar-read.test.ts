import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import t, { type Test } from 'tap'
import { extractTar, parseNumeric, readTar, TarError, type ExtractTarOptions, type ReadTarOptions } from '../src/codec/tar-read.js'
// For its side effect: with PIPE_REQUIRE_TOOLS=1 a skipped subtest (here: no GNU tar) fails.
import './helpers/tools.js'

const REQUIRED = process.env.PIPE_REQUIRE_TOOLS === '1'
const gnuTar = /GNU tar/.test(spawnSync('tar', ['--version'], { encoding: 'utf8' }).stdout ?? '')
/** tap options for a subtest that spawns GNU tar (the Tool list of helpers/tools.ts has no 'tar'). */
const needsGnuTar = (): { skip?: string } => (gnuTar ? {} : { skip: REQUIRED ? 'GNU tar is not installed, and PIPE_REQUIRE_TOOLS=1 requires it' : 'GNU tar is not installed' })

const base = await mkdtemp(join(tmpdir(), 'tar-read-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
let made = 0

// ---- Archives built by hand, hostile ones among them ----------------------------------------------

interface HeaderSpec {
  name: string | Buffer
  type?: string
  /** A number written in octal, or the raw 12-byte field. */
  size?: number | Buffer
  linkname?: string
  prefix?: string
  format?: 'posix' | 'gnu'
  /** Spoil the checksum, or sum the bytes as signed (what some old tars wrote). */
  checksum?: 'good' | 'bad' | 'signed'
}

const octal = (n: number, width: number) => n.toString(8).padStart(width - 1, '0') + '\0'

/** One 512-byte tar header. */
function header(h: HeaderSpec): Buffer {
  const b = Buffer.alloc(512)
  const name = typeof h.name === 'string' ? Buffer.from(h.name) : h.name
  name.copy(b, 0, 0, Math.min(name.length, 100))
  b.write(octal(0o644, 8), 100, 'latin1')
  b.write(octal(1000, 8), 108, 'latin1')
  b.write(octal(1000, 8), 116, 'latin1')
  if (Buffer.isBuffer(h.size)) h.size.copy(b, 124)
  else b.write(octal(h.size ?? 0, 12), 124, 'latin1')
  b.write(octal(1_700_000_000, 12), 136, 'latin1')
  b.write(h.type ?? '0', 156, 'latin1')
  if (h.linkname) b.write(h.linkname, 157, 'latin1')
  if ((h.format ?? 'posix') === 'posix') {
    b.write('ustar\x0000', 257, 'latin1')
    if (h.prefix) b.write(h.prefix, 345, 'latin1')
  } else {
    b.write('ustar  \0', 257, 'latin1')
  }
  b.fill(0x20, 148, 156)
  let sum = 0
  for (const byte of b) sum += h.checksum === 'signed' && byte > 127 ? byte - 256 : byte
  b.write(octal(h.checksum === 'bad' ? sum + 1 : sum, 7) + ' ', 148, 'latin1')
  return b
}

const pad = (data: Buffer) => Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)])
const END = Buffer.alloc(1024)

/** A file entry: its header, then its bytes padded to a block. */
const file = (name: string | Buffer, body: string | Buffer = '', extra: Partial<HeaderSpec> = {}) => {
  const bytes = Buffer.from(body)
  return Buffer.concat([header({ name, size: bytes.length, ...extra }), pad(bytes)])
}
const folder = (name: string) => header({ name, type: '5' })

/** A pax extended header ('x') of the given records. */
function pax(records: Record<string, string>, type = 'x'): Buffer {
  const parts = Object.entries(records).map(([k, v]) => {
    const text = ` ${k}=${v}\n`
    let length = text.length + 1
    while (String(length).length + text.length !== length) length++
    return `${length}${text}`
  })
  const data = Buffer.from(parts.join(''))
  return Buffer.concat([header({ name: 'PaxHeaders/x', type, size: data.length }), pad(data)])
}

const tarOf = (...parts: Buffer[]) => Buffer.concat([...parts, END])

/** Base-256 (GNU) form of a size field. */
function base256(n: bigint): Buffer {
  const b = Buffer.alloc(12)
  for (let i = 11; i > 0; i--) {
    b[i] = Number(n & 0xffn)
    n >>= 8n
  }
  b[0] = 0x80
  return b
}

/** An input in chunks of awkward sizes, so that headers straddle them. */
async function* chunked(bytes: Buffer, size = 333): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size)
}

async function listTar(bytes: Buffer, opts: ReadTarOptions = {}) {
  const out: { name: string; type: string; size: number; offset: number; body: string }[] = []
  for await (const e of readTar(chunked(bytes), { archive: 'test.tar', ...opts })) {
    const parts: Buffer[] = []
    for await (const p of e.body) parts.push(Buffer.from(p))
    out.push({ name: e.name, type: e.type, size: e.size, offset: e.offset, body: Buffer.concat(parts).toString() })
  }
  return out
}

/** Every path under `dir`, relative to it, folders with a trailing '/'. */
async function walk(dir: string, under = dir): Promise<string[]> {
  const out: string[] = []
  for (const d of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, d.name)
    const rel = relative(under, path)
    if (d.isDirectory()) out.push(rel + '/', ...(await walk(path, under)))
    else out.push(rel)
  }
  return out.sort()
}

/**
 * Extracts a hand-made archive into <work>/outer/into and answers the error it threw; asserts that
 * nothing but the archive and that folder (and what is inside it) exists in <work> afterwards.
 */
async function refused(t: Test, bytes: Buffer, code: string, opts: ExtractTarOptions = {}): Promise<TarError> {
  const work = join(base, `w${made++}`)
  const into = join(work, 'outer', 'into')
  await mkdir(into, { recursive: true })
  const archive = join(work, 'archive.tar')
  await writeFile(archive, bytes)
  const err = await extractTar(archive, into, opts).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.type(err, TarError, 'a TarError')
  t.match(err, { code }, `refused with ${code}`)
  const e = err as TarError
  t.match(e.message, /^\S*archive\.tar: /, 'the message names the archive')
  t.match(e.message, new RegExp(`at byte ${e.offset}: `), 'and the byte offset')
  t.notMatch(e.message, /\n/, 'on one line')
  const outside = (await walk(work)).filter((p) => p !== 'archive.tar' && p !== 'outer/' && p !== 'outer/into/' && !p.startsWith('outer/into/'))
  t.same(outside, [], 'nothing written outside the folder extracted into')
  return e
}

// ---- Archives made by GNU tar, extracted and compared ---------------------------------------------

const LONG_SEGMENT = 'class_group=spaceship-with-a-rather-long-partition-value-to-pass-the-hundred-bytes-of-a-tar-name'

/** A folder shaped like a pack export, with names past 100 bytes, an empty file and folder, and a multi-chunk file. */
async function makeExport(): Promise<string> {
  const dir = join(base, `export${made++}`)
  const files: Record<string, Buffer> = {
    'pack.json': Buffer.from('{"pack":"jetcarp","version":"1.0"}\n'),
    [`index/${'ab'.repeat(32)}.json`]: Buffer.from('{"objects":[]}\n'),
    [`tables/patterns/${LONG_SEGMENT}/part-000000.parquet`]: randomBytes(1_300_007),
    [`tables/patterns/${LONG_SEGMENT}/${'deeper-'.repeat(12)}/part-000001.parquet`]: randomBytes(513),
    'sigs/empty.sig': Buffer.alloc(0),
    'media/pattern/x/thumb é.png': randomBytes(4096),
  }
  for (const [name, bytes] of Object.entries(files)) {
    await mkdir(join(dir, name, '..'), { recursive: true })
    await writeFile(join(dir, name), bytes)
  }
  await mkdir(join(dir, 'history'))
  return dir
}

async function sameTree(t: Test, a: string, b: string) {
  const left = await walk(a)
  t.same(await walk(b), left, 'the same files and folders')
  let differing = 0
  for (const p of left) {
    if (p.endsWith('/')) continue
    if (!(await readFile(join(a, p))).equals(await readFile(join(b, p)))) differing++
  }
  t.equal(differing, 0, 'every file byte for byte')
}

for (const [label, args] of [
  ['tar -cf (GNU format, its default)', ['-cf']],
  ['tar --format=pax -cf', ['--format=pax', '-cf']],
  ['tar --format=gnu -cf', ['--format=gnu', '-cf']],
  ['tar --format=ustar -cf (names split into prefix and name)', ['--format=ustar', '-cf']],
] as const) {
  t.test(`an archive made by ${label} is extracted as the folder it was made of`, needsGnuTar(), async (t) => {
    const source = await makeExport()
    const archive = join(base, `a${made++}.tar`)
    const tarArgs = label.includes('ustar')
      ? // ustar has no long names: only the names it can hold, still past 100 bytes through its prefix.
        [...args, archive, '-C', source, 'pack.json', `tables/patterns/${LONG_SEGMENT}/part-000000.parquet`]
      : [...args, archive, '-C', source, '.']
    const made_ = spawnSync('tar', tarArgs, { encoding: 'utf8' })
    t.equal(made_.status, 0, made_.stderr)
    const into = await mkdtemp(join(base, 'into-'))
    const got = await extractTar(archive, into)
    const expected = label.includes('ustar') ? 2 : (await walk(source)).filter((p) => !p.endsWith('/')).length
    t.equal(got.files, expected, 'every file counted')
    if (label.includes('ustar')) {
      t.ok((await readFile(join(into, 'pack.json'))).equals(await readFile(join(source, 'pack.json'))))
      const part = `tables/patterns/${LONG_SEGMENT}/part-000000.parquet`
      t.ok((await readFile(join(into, part))).equals(await readFile(join(source, part))), 'a name past 100 bytes, through the prefix')
    } else {
      await sameTree(t, source, into)
    }
  })
}

t.test('an archive of a folder named at its top (tar -cf x.tar folder) keeps that folder', needsGnuTar(), async (t) => {
  const source = await makeExport()
  const archive = join(base, `a${made++}.tar`)
  t.equal(spawnSync('tar', ['--format=pax', '-cf', archive, '-C', join(source, '..'), relative(join(source, '..'), source)]).status, 0)
  const into = await mkdtemp(join(base, 'into-'))
  await extractTar(archive, into)
  await sameTree(t, source, join(into, relative(join(source, '..'), source)))
})

// ---- The reader, on hand-made archives ------------------------------------------------------------

t.test('the reader streams entries in order, with their offsets, across awkward chunks', async (t) => {
  const bytes = tarOf(folder('./'), folder('./d/'), file('./d/a.txt', 'hello'), file('d/b.txt', 'x'.repeat(1000)))
  t.same(await listTar(bytes), [
    { name: 'd', type: 'directory', size: 0, offset: 512, body: '' },
    { name: 'd/a.txt', type: 'file', size: 5, offset: 1024, body: 'hello' },
    { name: 'd/b.txt', type: 'file', size: 1000, offset: 2048, body: 'x'.repeat(1000) },
  ])
})

t.test('a body not read is skipped; one read after moving on throws', async (t) => {
  const bytes = tarOf(file('a', 'A'.repeat(2000)), file('b', 'B'))
  const names: string[] = []
  let late: AsyncIterable<Uint8Array> | undefined
  for await (const e of readTar(chunked(bytes, 100))) {
    names.push(e.name)
    late ??= e.body
  }
  t.same(names, ['a', 'b'])
  await t.rejects(async () => { for await (const _ of late!) void _ }, /read after the next entry/)
})

t.test('pax, GNU long names, base-256 sizes and signed checksums are read as GNU tar reads them', async (t) => {
  const longName = `${'n'.repeat(120)}/${'m'.repeat(120)}.txt`
  const gnuLong = Buffer.from(`${'g'.repeat(300)}\0`)
  const bytes = tarOf(
    pax({ comment: 'ignored' }, 'g'),
    pax({ path: longName, mtime: '1700000000.5' }),
    file('short-name-ignored', 'pax'),
    header({ name: '././@LongLink', type: 'L', size: gnuLong.length, format: 'gnu' }),
    pad(gnuLong),
    file('ignored-too', 'gnu', { format: 'gnu' }),
    header({ name: 'b256', size: base256(3n) }),
    pad(Buffer.from('256')),
    file('\u00e9t\u00e9', 'signed', { checksum: 'signed' }),
    header({ name: 'p.txt', prefix: 'with/a/prefix', size: 1 }),
    pad(Buffer.from('p')),
  )
  const got = await listTar(bytes)
  t.same(got.map((e) => [e.name, e.body]), [
    [longName, 'pax'],
    ['g'.repeat(300), 'gnu'],
    ['b256', '256'],
    ['\u00e9t\u00e9', 'signed'],
    ['with/a/prefix/p.txt', 'p'],
  ])
})

t.test('how an archive ends', async (t) => {
  t.same((await listTar(Buffer.concat([file('a', 'x'), Buffer.alloc(512)]))).length, 1, 'end of input after one zero block')
  t.same(await listTar(END), [], 'two zero blocks alone: an empty archive')
  t.same((await listTar(Buffer.concat([tarOf(file('a', 'x')), Buffer.from('trailing bytes are not read')]))).length, 1, 'bytes after the end')
  await t.rejects(listTar(Buffer.alloc(0)), { code: 'tar.empty' }, '0 bytes: not an archive')
  await t.rejects(listTar(file('a', 'x')), { code: 'tar.truncated' }, 'no end-of-archive blocks')
  await t.rejects(listTar(Buffer.concat([file('a', 'x'), Buffer.alloc(512), file('b', 'y'), END])), { code: 'tar.bad-header' }, 'a lone zero block before more entries')
  await t.rejects(listTar(tarOf(file('a', 'x')).subarray(0, 700)), { code: 'tar.truncated' }, 'cut inside an entry')
})

t.test('numeric fields', async (t) => {
  t.equal(parseNumeric(Buffer.from('00000000012\0')), 10)
  t.equal(parseNumeric(Buffer.from('   12 \0\0\0\0\0\0')), 10, 'leading spaces, trailing space and NULs')
  t.equal(parseNumeric(Buffer.from('777777777777')), 8 ** 12 - 1, 'all twelve digits')
  t.equal(parseNumeric(base256(2n ** 40n + 5n)), 2 ** 40 + 5, 'base-256')
  t.equal(parseNumeric(base256(2n ** 62n)), Infinity, 'past 2^53: Infinity, refused by size, never allocated')
  t.equal(parseNumeric(Buffer.from('\0\0\0\0\0\0\0\0\0\0\0\0')), undefined, 'no digits')
  t.equal(parseNumeric(Buffer.from('0000000001x\0')), undefined, 'a stray character')
  t.equal(parseNumeric(Buffer.from('0000008\0')), undefined, 'not octal')
  t.equal(parseNumeric(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])), undefined, 'base-256, negative')
})

// ---- Hostile archives, extracted: refused, and nothing outside `into` ------------------------------

t.test('hostile archives are refused with their codes and write nothing outside', async (t) => {
  const outsideDir = join(base, `outside-${made++}`)

  await t.test('a bad checksum', async (t) => {
    const h = file('a.txt', 'x')
    h[0] = h[0]! ^ 1
    await refused(t, tarOf(h), 'tar.bad-checksum')
  })
  await t.test('../x', async (t) => { await refused(t, tarOf(file('../x', 'escaped')), 'tar.unsafe-name') })
  await t.test('a/../../x', async (t) => { await refused(t, tarOf(folder('a/'), file('a/../../x', 'escaped')), 'tar.unsafe-name') })
  await t.test('/etc/x and an absolute name outside', async (t) => {
    const before = existsSync('/etc/x')
    await refused(t, tarOf(file('/etc/x', 'owned')), 'tar.unsafe-name')
    t.equal(existsSync('/etc/x'), before, '/etc/x untouched')
    await refused(t, tarOf(pax({ path: `${outsideDir}/x` }), file('x', 'owned')), 'tar.unsafe-name')
    t.notOk(existsSync(outsideDir), 'the absolute path was not made')
  })
  await t.test('other unsafe names', async (t) => {
    for (const name of ['a\\b', 'C:/x', 'C:x', 'a//b', 'a/./b', '.', './', 'a/', '..', 'a/..']) {
      await refused(t, tarOf(file(name, 'x')), 'tar.unsafe-name')
    }
    await refused(t, tarOf(pax({ path: 'a\0b' }), file('x', 'x')), 'tar.unsafe-name')
    await refused(t, tarOf(pax({ path: 'n'.repeat(4097) }), file('x', 'x')), 'tar.unsafe-name')
    await refused(t, tarOf(file(Buffer.from([0x61, 0xff, 0x62]), 'x')), 'tar.unsafe-name')
  })
  await t.test('a symbolic link, and a file through it', async (t) => {
    const e = await refused(t, tarOf(header({ name: 'evil', type: '2', linkname: outsideDir }), file('evil/x', 'owned')), 'tar.link-refused')
    t.equal(e.entry, 'evil')
    t.equal(e.offset, 0)
    t.notOk(existsSync(outsideDir))
  })
  await t.test('a hard link', async (t) => {
    await refused(t, tarOf(file('a', 'x'), header({ name: 'b', type: '1', linkname: '/etc/passwd' })), 'tar.link-refused')
  })
  await t.test('devices, FIFOs and unknown types', async (t) => {
    for (const type of ['3', '4', '6', 'S', 'V', 'Z']) await refused(t, tarOf(header({ name: 'dev', type })), 'tar.unsupported-type')
    await refused(t, tarOf(pax({ 'GNU.sparse.major': '1' }), file('s', 'x')), 'tar.unsupported-type')
  })
  await t.test('a size past the bytes that follow', async (t) => {
    const cut = Buffer.concat([header({ name: 'big', size: 100_000 }), Buffer.alloc(600, 7)])
    const e = await refused(t, cut, 'tar.truncated')
    t.equal(e.entry, 'big')
  })
  await t.test('a base-256 size of 2^62', async (t) => {
    const rss = process.memoryUsage().rss
    const started = Date.now()
    await refused(t, tarOf(header({ name: 'huge', size: base256(2n ** 62n) })), 'tar.too-large')
    t.ok(Date.now() - started < 2000, 'at once')
    t.ok(process.memoryUsage().rss - rss < 256 * 2 ** 20, 'nothing allocated for it')
  })
  await t.test('a pax size of 2^40', async (t) => {
    await refused(t, tarOf(pax({ size: String(2 ** 40) }), file('huge', 'x')), 'tar.too-large')
  })
  await t.test('a pax header of 2 MiB', async (t) => {
    await refused(t, tarOf(pax({ comment: 'c'.repeat(2 * 2 ** 20) }), file('a', 'x')), 'tar.too-large')
    await refused(t, tarOf(pax({ comment: 'c'.repeat(2 * 2 ** 20) }, 'g'), file('a', 'x')), 'tar.too-large', {})
  })
  await t.test('more entries than allowed, counting implied folders', async (t) => {
    const many = Array.from({ length: 20 }, (_, i) => file(`f${i}`, 'x'))
    await refused(t, tarOf(...many), 'tar.too-many-entries', { maxEntries: 10 })
    await refused(t, tarOf(file('a/b/c/d/e/f/g/h/i/j/k', 'x')), 'tar.too-many-entries', { maxEntries: 10 })
    const into = await mkdtemp(join(base, 'into-'))
    const ok = join(base, `a${made++}.tar`)
    await writeFile(ok, tarOf(...many.slice(0, 10)))
    t.same(await extractTar(ok, into, { maxEntries: 10 }), { files: 10, bytes: 10 }, 'exactly the limit is fine')
  })
  await t.test('more bytes in all than allowed', async (t) => {
    await refused(t, tarOf(file('a', 'x'.repeat(600)), file('b', 'y'.repeat(600))), 'tar.too-large', { maxTotalBytes: 1000 })
  })
  await t.test('an entry larger than allowed', async (t) => {
    await refused(t, tarOf(file('a', 'x'.repeat(600))), 'tar.too-large', { maxEntryBytes: 512 })
  })
  await t.test('the same name twice', async (t) => {
    const e = await refused(t, tarOf(file('a.txt', 'one'), file('./a.txt', 'two')), 'tar.duplicate-name')
    t.equal(e.offset, 1024)
    await refused(t, tarOf(folder('d/'), folder('d/')), 'tar.duplicate-name')
    await refused(t, tarOf(pax({ path: 'p/x' }), file('1', 'one'), header({ name: '././@LongLink', type: 'L', size: 4, format: 'gnu' }), pad(Buffer.from('p/x\0')), file('2', 'two', { format: 'gnu' })), 'tar.duplicate-name')
  })
  await t.test('a file, then a folder at the same path', async (t) => {
    await refused(t, tarOf(file('a', 'file'), file('a/b', 'under a file')), 'tar.duplicate-name')
    await refused(t, tarOf(file('a', 'file'), folder('a/')), 'tar.duplicate-name')
    await refused(t, tarOf(file('d/x', 'x'), file('d', 'a file where a folder is')), 'tar.duplicate-name')
  })
  await t.test('random bytes', async (t) => { await refused(t, randomBytes(10 * 1024), 'tar.not-tar') })
  await t.test('an empty file', async (t) => { await refused(t, Buffer.alloc(0), 'tar.empty') })
  await t.test('a folder with a size', async (t) => { await refused(t, tarOf(header({ name: 'd/', type: '5', size: 512 }), Buffer.alloc(512)), 'tar.bad-header') })
  await t.test('a bad size field', async (t) => { await refused(t, tarOf(header({ name: 'a', size: Buffer.from('12x45678901\0') })), 'tar.bad-header') })
  await t.test('malformed pax records', async (t) => {
    for (const data of ['10 path=abc', '99 path=a\n', 'x path=a\n', '6 ab\n\n']) {
      const bytes = Buffer.from(data)
      await refused(t, tarOf(header({ name: 'P', type: 'x', size: bytes.length }), pad(bytes), file('a', 'x')), 'tar.bad-header')
    }
  })
  await t.test('two pax headers, or a pax path and a long name, before one entry', async (t) => {
    await refused(t, tarOf(pax({ path: 'a' }), pax({ path: 'b' }), file('c', 'x')), 'tar.bad-header')
    await refused(t, tarOf(pax({ path: 'a' }), header({ name: '././@LongLink', type: 'L', size: 2, format: 'gnu' }), pad(Buffer.from('b\0')), file('c', 'x')), 'tar.bad-header')
  })
  await t.test('a header that is not ustar after the first', async (t) => {
    const v7 = header({ name: 'v7', size: 0 })
    v7.fill(0, 257, 265)
    await refused(t, tarOf(file('a', 'x'), v7), 'tar.bad-header')
  })
})

t.test('the folder extracted into must exist, be a folder and be empty', async (t) => {
  const archive = join(base, `a${made++}.tar`)
  await writeFile(archive, tarOf(file('a', 'x')))
  await t.rejects(extractTar(archive, join(base, 'missing')), { code: 'tar.bad-target' })
  await t.rejects(extractTar(archive, archive), { code: 'tar.bad-target' })
  const full = await mkdtemp(join(base, 'full-'))
  await writeFile(join(full, 'mine'), 'keep')
  await t.rejects(extractTar(archive, full), { code: 'tar.bad-target' })
  t.equal(await readFile(join(full, 'mine'), 'utf8'), 'keep')
  await t.rejects(extractTar('/dev/zero', await mkdtemp(join(base, 'into-'))), { code: 'input.not-regular' }, 'a device is never read')
  const into = await mkdtemp(join(base, 'into-'))
  t.same(await extractTar(archive, into), { files: 1, bytes: 1 })
  t.ok((await lstat(join(into, 'a'))).isFile())
})

/**
 * pack-import from every kind of source (a store, an export, a tar of either, a store or export over HTTP
 * from a real nginx, with faults injected in front of it), pack-follow's no-rollback rule, the seeded
 * sample and needs_reverify. Each refusal leaves the library exactly as it was.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { Library } from '../src/library/library.js'
import { importPack, type PackImportOptions } from '../src/library/pack-import.js'
import { LIFE } from '../src/sim/pack-records.js'
import { BLOCK, buildStore, cleanRows, patternRow, PUBLISHER_ID, smallRows, T0, type Row } from './pack-check-fixtures.js'
import { FaultProxy } from './helpers/fault-proxy.js'
import { childEnv, collect } from './helpers/io.js'
import { startNginx } from './helpers/nginx.js'
import { needs } from './helpers/tools.js'

const golden = (name: string) => fileURLToPath(new URL(`./golden/${name}`, import.meta.url))
const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const base = await mkdtemp(join(tmpdir(), 'pack-import-sources-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
let made = 0
const fresh = () => join(base, `l${made++}.db`)
const NOW = () => '2026-12-07T00:00:00Z'
const importIt = (from: string, library: string, extra: Partial<PackImportOptions> = {}) =>
  importPack({ from, library, verify: 'none', allowUnsigned: false, strict: false, now: NOW, ...extra })

/** Everything a library holds but where each import came from and when: what two sources of one version must agree on. */
async function contents(path: string): Promise<unknown> {
  const lib = Library.open(path)
  try {
    const tables = ['tilings', 'rules', 'patterns', 'ants', 'quickstart', 'aliases', 'verifications', 'sightings', 'provenance', 'annotations', 'media', 'ratings', 'raters', 'score_models', 'objects', 'pack_retractions', 'pack_revoked', 'pack_reverify']
    const { imports: _imports, ...stats } = lib.stats()
    const rows: Record<string, unknown> = {}
    for (const table of tables) rows[table] = (await collect(lib.query(table))).map(({ import_id: _i, ...r }) => r)
    return { stats, rows }
  } finally {
    lib.close()
  }
}

/** A library's bytes-level state: its stats and every table, import records included. */
async function snapshot(path: string): Promise<unknown> {
  const lib = Library.open(path)
  try {
    return { stats: lib.stats(), imports: (await collect(lib.query('pack_imports'))), follows: (await collect(lib.query('pack_follows'))), contents: await contents(path) }
  } finally {
    lib.close()
  }
}

/** Files a source left beside the library (a staging folder that was not removed). */
const leftovers = async () => (await readdir(base)).filter((n) => n.startsWith('.pipe-import-'))

t.test('an export folder, and a tar of a store or an export, import as the store does', async (t) => {
  const fromStore = fresh()
  await importIt(join(golden('minimal'), 'store'), fromStore)
  const fromExport = fresh()
  const r = await importIt(golden('export'), fromExport)
  t.equal(r.source, 'export')
  t.same((await contents(fromExport)), (await contents(fromStore)), 'the export of the same version: the same library')
  const again = await importIt(golden('export'), fromStore)
  t.equal(again.already, true, 'the export of a version the library took from its store: nothing to do')

  await t.test('tars made by GNU tar', async (t) => {
    const tars = join(base, 'tars')
    await mkdir(tars, { recursive: true })
    const tar = (name: string, ...args: string[]) => {
      const r = spawnSync('tar', ['-cf', join(tars, name), ...args])
      t.equal(r.status, 0, r.stderr?.toString())
      return join(tars, name)
    }
    const flat = fresh()
    await importIt(tar('export-flat.tar', '-C', golden('export'), '.'), flat)
    t.same((await contents(flat)), (await contents(fromStore)), 'an export tarred at its top')
    const named = fresh()
    await importIt(tar('golden-a-golden-1.tar', '-C', golden(''), 'export'), named)
    t.same((await contents(named)), (await contents(fromStore)), 'an export in its one top folder, as `<feed>-<version_label>/`')
    const store = fresh()
    await importIt(tar('store.tar', '--format=pax', '-C', join(golden('minimal'), 'store'), '.'), store)
    t.same((await contents(store)), (await contents(fromStore)), 'a store tarred (pax format)')
    t.same(await leftovers(), [], 'each staging folder removed')
  })

  await t.test('what is no pack is refused, and the library is not made', async (t) => {
    const library = fresh()
    const junk = join(base, 'junk.tar')
    await writeFile(junk, Buffer.alloc(10_240, 7))
    await t.rejects(importIt(junk, library), { code: /^tar\./ })
    const empty = join(base, 'not-a-pack')
    await mkdir(empty, { recursive: true })
    await t.rejects(importIt(empty, library), { code: 'import.not-a-pack', message: /neither a store \(jetcarp-store\.json\) nor an export \(pack\.json\)/ })
    await t.rejects(importIt(join(base, 'nothing-here'), library), { code: 'import.not-a-pack' })
    t.same((await readdir(base)).filter((n) => n.startsWith(library.slice(base.length + 1))), [], 'no library file')
    t.same(await leftovers(), [])
  })
})

t.test('over HTTP from nginx: a store and an export, and every fault of the way', needs('nginx'), async (t) => {
  // Its own folder under the system's: nginx serves as nobody, who cannot pass through this test's 0700 one.
  const root = await mkdtemp(join(tmpdir(), 'pack-www-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  await cp(join(golden('media'), 'store'), join(root, 'store'), { recursive: true })
  await cp(golden('export'), join(root, 'export'), { recursive: true })
  const nginx = await startNginx(root)
  t.teardown(() => nginx.stop())
  const proxy = await new FaultProxy(nginx.base).start()
  t.teardown(() => proxy.stop())
  const local = fresh()
  await importIt(join(golden('media'), 'store'), local)
  const fast = { fetch: { retries: 3, stallMs: 1000, timeoutMs: 10_000 } }

  await t.test('a store by its feed, found without listing a folder', async (t) => {
    const library = fresh()
    const from = proxy.requests.length
    const r = await importIt(`${proxy.base}/store/`, library, { feed: 'golden-media', ...fast })
    t.same((await contents(library)), (await contents(local)), 'the library holds what the local import gave')
    t.ok(r.fetched && r.fetched.files > 5, `${r.fetched?.files} files, ${r.fetched?.bytes} bytes, ${r.fetched?.requests} requests`)
    const paths = proxy.requests.slice(from).map((q) => q.path)
    t.ok(paths.every((p) => !p.endsWith('/')), 'no folder was asked for')
    t.ok(paths.some((p) => /^\/store\/sigs\/sha256\/[0-9a-f]{2}\/[0-9a-f]{64}\/[0-9a-f]{64}\.sig$/.test(p)), 'the signature at the publisher key\'s name')
    t.ok(paths.some((p) => /\.png$/.test(p)), 'the media file a media row names')
    t.ok(proxy.maxInFlight <= 4, `at most 4 requests at once (${proxy.maxInFlight})`)
    await t.rejects(importIt(`${proxy.base}/store/`, fresh(), fast), { code: 'import.feed-needed', message: /refs\/ cannot be listed: name the feed with --feed/ })
    t.same(await leftovers(), [])
  })

  await t.test('a feed that has not moved, or a version the library has: nothing past the manifest is fetched', async (t) => {
    const library = fresh()
    const follow = { feed: 'golden-media', follow: true, ...fast }
    t.same((await importIt(`${proxy.base}/store/`, library, follow)).follow, { seq: 1, update: true })
    let from = proxy.requests.length
    const again = await importIt(`${proxy.base}/store/`, library, follow)
    t.same({ follow: again.follow, already: again.already }, { follow: { seq: 1, update: false }, already: true })
    const asked = (since: number) => proxy.requests.slice(since).map((q) => q.path)
    t.same(asked(from).filter((p) => p.startsWith('/store/objects/')), [`/store/objects/sha256/${again.manifest.slice(7, 9)}/${again.manifest.slice(7)}.json`], 'of the objects, the manifest alone')
    t.ok(asked(from).every((p) => /^\/store\/(jetcarp-store\.json|refs\/|objects\/|keys\/|sigs\/)/.test(p)), 'and the store document, the ref, key statements and signatures, to verify the ref')
    from = proxy.requests.length
    t.equal((await importIt(`${proxy.base}/store/`, library, { feed: 'golden-media', ...fast })).already, true, 'pack-import of the version it took')
    t.same(asked(from).filter((p) => p.endsWith('.parquet') || p.endsWith('.png')), [], 'no part, no media')
    await t.rejects(importIt(`${proxy.base}/store/`, fresh(), { manifest: again.manifest, ...fast }), { code: 'usage.bad-option', message: /over HTTP a version is read through its feed's ref/ })
  })

  await t.test('an export', async (t) => {
    const library = fresh()
    const r = await importIt(`${proxy.base}/export`, library, fast)
    t.equal(r.source, 'export')
    const fromExport = fresh()
    await importIt(golden('export'), fromExport)
    t.same((await contents(library)), (await contents(fromExport)))
  })

  /** The first part the store's version names, as its URL path. */
  const aPart = async () => {
    const lib = Library.open(local)
    lib.close()
    const store = join(root, 'store', 'objects', 'sha256')
    for (const aa of await readdir(store)) for (const f of await readdir(join(store, aa))) if (f.endsWith('.parquet')) return `/store/objects/sha256/${aa}/${f}`
    throw new Error('no part')
  }

  await t.test('a 403, as an S3 bucket without list permission answers for a missing file: absence for a signature looked for, a failure for a part', async (t) => {
    const sigs = proxy.requests.map((q) => q.path).filter((p) => /^\/store\/sigs\//.test(p))
    const sig = sigs[0]!
    proxy.fault(sig, { kind: 'status', status: 403 }, 10)
    const unsigned = fresh()
    await t.rejects(importIt(`${proxy.base}/store/`, unsigned, { feed: 'golden-media', ...fast }), { code: 'import.refused', message: /pack\.manifest-unsigned/ }, 'a 403 signature is no signature: refused as unsigned')
    const allowed = fresh()
    await importIt(`${proxy.base}/store/`, allowed, { feed: 'golden-media', ...fast, allowUnsigned: true })
    t.same((await contents(allowed)), (await contents(local)), 'and taken with --allow-unsigned')
    proxy.clear(sig)
    const part = await aPart()
    proxy.fault(part, { kind: 'status', status: 403 }, 10)
    await t.rejects(importIt(`${proxy.base}/store/`, fresh(), { feed: 'golden-media', ...fast }), { code: 'fetch.forbidden', message: /403/ }, 'a part the version names is never taken for absent')
    proxy.clear(part)
    t.same(await leftovers(), [])
  })

  await t.test('a transfer cut mid-object resumes with Range', async (t) => {
    const part = await aPart()
    proxy.fault(part, { kind: 'cut', after: 100 })
    const from = proxy.requests.length
    const library = fresh()
    await importIt(`${proxy.base}/store/`, library, { feed: 'golden-media', ...fast })
    t.same((await contents(library)), (await contents(local)))
    t.match(proxy.requests.slice(from).filter((q) => q.path === part).map((q) => q.range), [undefined, /^bytes=\d+-$/], 'asked again from where it was cut')
  })

  await t.test('500s are retried; wrong bytes, a 404, a stall past the deadline and a body past its size are refused, the library unchanged', async (t) => {
    const part = await aPart()
    const library = fresh()
    await importIt(join(golden('minimal'), 'store'), library)
    const before = (await snapshot(library))
    proxy.fault(part, { kind: 'status', status: 500 }, 2)
    const retried = fresh()
    await importIt(`${proxy.base}/store/`, retried, { feed: 'golden-media', ...fast })
    t.same((await contents(retried)), (await contents(local)), 'two 500s, then the part')
    const cases: [string, Parameters<FaultProxy['fault']>[1], RegExp, RegExp][] = [
      ['wrong bytes', { kind: 'wrong-bytes' }, /^fetch\.hash-mismatch$/, /its bytes hash to sha256:/],
      ['a 404', { kind: 'status', status: 404 }, /^import\.file-missing$/, /the host has no such file, which the version names/],
      ['a stall past the deadline', { kind: 'silent' }, /^fetch\.(timeout|unavailable)$/, /not fetched within|gave up/],
      ['a body past its size', { kind: 'oversize', extra: 100_000 }, /^fetch\.too-large$/, /past the \d+ bytes allowed; stopped there/],
    ]
    for (const [what, fault, code, message] of cases) {
      proxy.fault(part, fault, 10)
      await t.rejects(importIt(`${proxy.base}/store/`, library, { feed: 'golden-media', fetch: { retries: 1, stallMs: 300, timeoutMs: 2000 } }), { code, message }, what)
      proxy.clear(part)
      t.same((await snapshot(library)), before, `${what}: the library unchanged`)
    }
    t.same(await leftovers(), [], 'no staging folder left')
  })

  await t.test('pipe run pack-import URL', async (t) => {
    const library = fresh()
    const r = spawnSync(process.execPath, [cli, 'run', 'pack-import', `${nginx.base}/store/`, '--feed', 'golden-media', '--library', library, '--json'], { encoding: 'utf8', env: childEnv() })
    t.equal(r.status, 0, r.stderr)
    t.match(JSON.parse(r.stdout), { ok: true, source: 'store', fetched: { files: Number }, sample: { taken: Number } })
  })
})

t.test('pack-follow: a feed followed by its ref, never rolled back', async (t) => {
  const s2 = await buildStore(join(base, 'follow-2'), { rows: smallRows(), search: false })
  const otherRows = { ...smallRows(), patterns: [patternRow(LIFE, BLOCK)] }
  const s1 = await buildStore(join(base, 'follow-1'), { rows: otherRows, search: false, seq: 1, history: false })
  const s2b = await buildStore(join(base, 'follow-2b'), { rows: otherRows, search: false, seq: 2 })
  const s3 = await buildStore(join(base, 'follow-3'), { rows: otherRows, search: false, seq: 3 })
  const follow = (store: string, library: string) => importIt(store, library, { follow: true, feed: 'check-a' })
  const library = fresh()
  const first = await follow(s2.dir, library)
  t.same(first.follow, { seq: 2, update: true })
  const lib = Library.open(library)
  t.match((await collect(lib.query('pack_follows'))), [{ feed: 'check-a', seq: 2, manifest: s2.manifest }])
  lib.close()
  const again = await follow(s2.dir, library)
  t.same({ follow: again.follow, already: again.already }, { follow: { seq: 2, update: false }, already: true }, 'the same ref again: no update')
  const before = (await snapshot(library))
  await t.rejects(follow(s1.dir, library), { code: 'pack.ref-rollback', message: /seq 1 is below the accepted 2 \(no rollback\)/ })
  await t.rejects(follow(s2b.dir, library), { code: 'pack.ref-rollback', message: /seq 2 again, naming sha256:[0-9a-f]{64} instead of sha256:/ })
  t.same((await snapshot(library)), before, 'each refused, the library unchanged')
  const next = await follow(s3.dir, library)
  t.same(next.follow, { seq: 3, update: true })
  t.ok(next.factsAdded > 0, 'the new version imported')
  const lib3 = Library.open(library)
  t.match((await collect(lib3.query('pack_follows'))), [{ seq: 3, manifest: s3.manifest }])
  lib3.close()
  await t.rejects(importIt(golden('export'), fresh(), { follow: true, feed: 'golden-a' }), { code: 'import.no-ref' }, 'an export has no ref')

  await t.test('a ref of the followed seq and manifest whose signature does not stand is refused, not taken for no update', async (t) => {
    const library = fresh()
    await follow(s2.dir, library)
    const forged = join(base, 'follow-forged')
    await cp(s2.dir, forged, { recursive: true })
    const refFile = join(forged, 'refs', 'check-a.json')
    const ref = JSON.parse(await readFile(refFile, 'utf8')) as { signature: string }
    // Another valid-looking signature: that of a different message by the same key.
    ref.signature = (JSON.parse(await readFile(join(s3.dir, 'refs', 'check-a.json'), 'utf8')) as { signature: string }).signature
    await writeFile(refFile, JSON.stringify(ref))
    const before = (await snapshot(library))
    await t.rejects(follow(forged, library), { code: 'import.refused' })
    t.same((await snapshot(library)), before)
  })

  await t.test('--manifest of a version no ref reaches is refused: the check did not read it', async (t) => {
    const mixed = join(base, 'follow-mixed')
    await cp(s2.dir, mixed, { recursive: true })
    await cp(join(s3.dir, 'objects'), join(mixed, 'objects'), { recursive: true })
    await cp(join(s3.dir, 'sigs'), join(mixed, 'sigs'), { recursive: true })
    const library = fresh()
    await t.rejects(importIt(mixed, library, { manifest: s3.manifest }), { code: 'import.version-unchecked', message: /is a version no ref of .* reaches/ })
    t.same((await readdir(base)).filter((n) => n.startsWith(library.slice(base.length + 1))), [], 'no library made')
  })

  await t.test('a revocation the library has seen stays, when the store serves the older statement again', async (t) => {
    const library = fresh()
    const lib = Library.open(library, { create: true })
    // As an import of a store whose statements revoked the key would have kept it (pack_revoked).
    await lib.change({ manifest: 'sha256:' + 'e'.repeat(64), publisher: PUBLISHER_ID, feed: 'f', source: 'earlier', started: T0, finished: T0 }, async (c) => {
      c.revoke(PUBLISHER_ID, PUBLISHER_ID, PUBLISHER_ID, 'earlier', T0)
    })
    lib.close()
    const before = (await snapshot(library))
    await t.rejects(follow(s3.dir, library), { code: 'import.refused', message: /pack\.key-revoked/ }, 's3 serves the statement from before the revocation')
    t.same((await snapshot(library)), before)
  })

  await t.test('pipe run pack-follow', async (t) => {
    const library = fresh()
    const run = (dir: string) => spawnSync(process.execPath, [cli, 'run', 'pack-follow', dir, '--feed', 'check-a', '--library', library, '--verify', 'none', '--json'], { encoding: 'utf8', env: childEnv() })
    let r = run(s2.dir)
    t.equal(r.status, 0, r.stderr)
    t.match(JSON.parse(r.stdout), { ok: true, follow: { seq: 2, update: true } })
    r = run(s1.dir)
    t.not(r.status, 0)
    t.match(r.stderr, /seq 1 is below the accepted 2 \(no rollback\) \(pack\.ref-rollback\)/)
    const feeds = spawnSync(process.execPath, [cli, 'library', 'stats', '--library', library, '--json'], { encoding: 'utf8', env: childEnv() })
    t.match(JSON.parse(feeds.stdout), { follows: [{ feed: 'check-a', seq: 2 }] })
  })
})

t.test('--verify sample: new patterns replayed, the same ones for the same version, a false one refuses', async (t) => {
  const store = await buildStore(join(base, 'sample'), { rows: cleanRows(), search: false })
  const outcomes = async (library: string) => {
    const lib = Library.open(library)
    try { return (await collect(lib.query('pack_reverify'))).map((r) => ({ id: r.id, outcome: r.outcome })) } finally { lib.close() }
  }
  const a = fresh()
  const r = await importIt(store.dir, a, { verify: 'sample', sample: 2 })
  t.equal(r.sample?.taken, 2, 'two of the four')
  t.equal(r.sample?.confirmed, 2)
  const score = (id: string) => createHash('sha256').update(`${store.manifest}\n${id}`).digest().readBigUInt64BE(0)
  const lowest = cleanRows().patterns!.map((p) => String(p.id)).sort((x, y) => (score(x) < score(y) ? -1 : 1)).slice(0, 2).sort()
  t.same((await outcomes(a)).map((o) => o.id).sort(), lowest, 'the two of the lowest SHA-256 of the manifest hash and the id')
  const b = fresh()
  await importIt(store.dir, b, { verify: 'sample', sample: 2 })
  t.same((await outcomes(b)), (await outcomes(a)), 'seeded by the manifest hash: the same patterns')
  t.equal((await outcomes(a)).length, 2)
  const all = fresh()
  const every = await importIt(store.dir, all, { verify: 'sample' })
  t.equal(every.sample?.taken, 4, 'a sample larger than the pack takes every pattern')
  const held = await importIt(store.dir, fresh(), { verify: 'sample', sampleBudgetMs: 0 })
  t.same({ confirmed: held.sample?.confirmed, unchecked: held.sample?.unchecked }, { confirmed: 0, unchecked: 4 }, 'past the time budget: kept as unchecked')

  const lying = cleanRows()
  lying.patterns = lying.patterns!.map((p: Row, i: number) => (i === 0 ? patternRow(LIFE, BLOCK, { period: 2, class: 'oscillator' }) : p))
  lying.verifications = lying.verifications!.map((v: Row, i: number) => (i === 0 ? { ...v, pattern_id: lying.patterns![0]!.id } : v))
  const false1 = await buildStore(join(base, 'sample-false'), { rows: lying, search: false })
  const library = fresh()
  await t.rejects(importIt(false1.dir, library, { verify: 'sample' }), { code: 'import.refused', message: /\[level 3\]/ }, 'a sampled pattern whose replay fails refuses the pack')
  await t.resolves(importIt(false1.dir, library, { verify: 'none' }), '--verify none does not replay it')
})

t.test('needs_reverify: a rule semantics this engine lacks, or a pin other than the library\'s', async (t) => {
  const rows = cleanRows()
  const v2 = (r: Row) => ({ ...r, semantics: '2' })
  const changed = { ...rows, rules: rows.rules!.map(v2), patterns: rows.patterns!.map(v2) }
  const store = await buildStore(join(base, 'semantics-2'), {
    rows: changed, search: false,
    manifest: (doc) => ({ ...doc, engine: { ...(doc.engine as object), rule_semantics: { ant: '1', bs: '2', generations: '2' } } }),
  })
  const library = fresh()
  const r = await importIt(store.dir, library)
  t.equal(r.needsReverify, changed.rules!.length + changed.patterns!.length, 'every rule and pattern of semantics 2')
  const lib = Library.open(library)
  t.ok((await collect(lib.query('patterns'))).every((p) => p.needs_reverify === true), 'flagged, kept with their ids')
  t.ok((await collect(lib.query('ants'))).every((p) => p.needs_reverify === false), 'the ants of semantics 1 are not')
  lib.close()
})

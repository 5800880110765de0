/**
 * pipe's golden packs (test/golden/<name>/, built by scripts/make-golden-packs.ts): their hashes, and the
 * same facts read with independent tools — sha256sum names every object, ssh-keygen -Y verify accepts every
 * signature (manifests, refs, key statements), DuckDB reads every table part with the row counts the
 * indexes state — every pack checked at level 3, and one made again and compared byte for byte. Without
 * ssh-keygen its subtest is skipped, and fails under PIPE_REQUIRE_TOOLS=1 (test/helpers/tools.ts).
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import t from 'tap'
import { parseTableIndex } from '../src/formats/pack/documents/doc-index.js'
import { parseManifest } from '../src/formats/pack/documents/doc-manifest.js'
import { refSignedBytes } from '../src/formats/pack/documents/doc-ref.js'
import { keyStatementSignedBytes, type KeyStatementDocument } from '../src/formats/pack/keys/key-statements.js'
import { objectPath } from '../src/formats/pack/documents/store.js'
import { checkPack } from '../src/formats/pack/check/check.js'
import { partFacts } from '../src/formats/pack/tables/parquet-read.js'
import { buildGoldenPack } from '../scripts/make-golden-packs.js'
import { childEnv } from './helpers/io.js'
import { needs } from './helpers/tools.js'

const GOLDEN = join(import.meta.dirname, 'golden')
const PACKS = ['minimal', 'retraction', 'merge', 'searches', 'media', 'aperiodic', 'ants']
const work = await mkdtemp(join(tmpdir(), 'pipe-pack-golden-'))
t.teardown(() => rm(work, { recursive: true, force: true }))

async function files(root: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(root, { withFileTypes: true, recursive: true })) if (e.isFile()) out.push(relative(root, join(e.parentPath, e.name)))
  return out.sort()
}

t.test('every golden pack is what its hashes.txt lists', async (t) => {
  for (const name of [...PACKS, 'export']) {
    const dir = join(GOLDEN, name)
    const listed = (await readFile(join(dir, 'hashes.txt'), 'utf8')).trimEnd().split('\n').map((l) => /^([0-9a-f]{64}) {2}(.+)$/.exec(l)!)
    t.same((await files(dir)).filter((f) => f !== 'hashes.txt'), listed.map((m) => m[2]).sort(), `${name}: every file listed, nothing else`)
    let bad = 0
    for (const [, sha, f] of listed) if (createHash('sha256').update(await readFile(join(dir, f!))).digest('hex') !== sha) bad++
    t.equal(bad, 0, `${name}: ${listed.length} files match`)
  }
})

t.test('sha256sum of every object equals its name', async (t) => {
  for (const name of PACKS) {
    const store = join(GOLDEN, name, 'store')
    const objects = (await files(store)).filter((f) => f.startsWith('objects/'))
    const out = execFileSync('sha256sum', objects, { cwd: store, encoding: 'utf8', maxBuffer: 1 << 26 })
    let bad = 0
    for (const line of out.trimEnd().split('\n')) {
      const [sha, f] = line.split(/ {2}/)
      if (f!.split('/').pop()!.split('.')[0] !== sha) bad++
    }
    t.equal(bad, 0, `${name}: ${objects.length} objects`)
  }
})

t.test('ssh-keygen -Y verify accepts every manifest, ref and key-statement signature', needs('ssh-keygen'), async (t) => {
  const verify = async (publicKey: string, namespace: string, signature: string | Buffer, message: Buffer) => {
    const allowed = join(work, `allowed-${Math.random().toString(16).slice(2)}`)
    const sig = `${allowed}.sig`
    await writeFile(allowed, `signer namespaces="${namespace}" ${publicKey}\n`)
    await writeFile(sig, signature)
    return spawnSync('ssh-keygen', ['-Y', 'verify', '-f', allowed, '-I', 'signer', '-n', namespace, '-s', sig], { input: message, encoding: 'utf8' })
  }
  for (const name of PACKS) {
    const store = join(GOLDEN, name, 'store')
    const keys = new Map<string, string>()
    for (const f of await readdir(join(store, 'keys'))) {
      const doc = JSON.parse(await readFile(join(store, 'keys', f), 'utf8')) as KeyStatementDocument
      keys.set(f.slice(0, -'.json'.length), doc.key)
      const r = await verify(doc.key, 'jetcarp-key', doc.signature, keyStatementSignedBytes(doc))
      t.equal(r.status, 0, `${name}: key statement ${f}: ${r.stderr}`)
    }
    for (const sig of (await files(store)).filter((f) => f.startsWith('sigs/'))) {
      const [, , , hex, file] = sig.split('/')
      const manifest = await readFile(join(store, objectPath(`sha256:${hex}`, 'json')))
      const r = await verify(keys.get(file!.slice(0, -'.sig'.length))!, 'jetcarp-manifest', await readFile(join(store, sig)), manifest)
      t.equal(r.status, 0, `${name}: ${sig}: ${r.stderr}`)
    }
    for (const f of await readdir(join(store, 'refs'))) {
      const ref = JSON.parse(await readFile(join(store, 'refs', f), 'utf8')) as { signature: string; publisher: string }
      const signer = Buffer.from(ref.publisher.slice(7) + '=', 'base64').toString('hex')
      const r = await verify(keys.get(signer)!, 'jetcarp-ref', ref.signature, refSignedBytes(ref as never))
      t.equal(r.status, 0, `${name}: ref ${f}: ${r.stderr}`)
    }
  }
  // The export: pack.json is the manifest's bytes, signed as sigs/<signer>.sig by the key of keys/<signer>.json.
  const exported = join(GOLDEN, 'export')
  const manifest = await readFile(join(exported, 'pack.json'))
  const sigs = await readdir(join(exported, 'sigs'))
  t.ok(sigs.length > 0, 'the export carries its signatures')
  for (const f of sigs) {
    const doc = JSON.parse(await readFile(join(exported, 'keys', f.replace(/\.sig$/, '.json')), 'utf8')) as KeyStatementDocument
    t.equal((await verify(doc.key, 'jetcarp-key', doc.signature, keyStatementSignedBytes(doc))).status, 0, `export: key statement of ${f}`)
    const r = await verify(doc.key, 'jetcarp-manifest', await readFile(join(exported, 'sigs', f)), manifest)
    t.equal(r.status, 0, `export: sigs/${f} over pack.json: ${r.stderr}`)
  }
})

t.test('DuckDB reads every table part, with the rows its index states', async (t) => {
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  t.teardown(() => conn.closeSync())
  for (const name of PACKS) {
    const store = join(GOLDEN, name, 'store')
    const hash = (await readFile(join(GOLDEN, name, 'MANIFEST'), 'utf8')).trim()
    const m = parseManifest(await readFile(join(store, objectPath(hash, 'json'))))
    if (!m.ok) { t.fail(m.detail); continue }
    for (const [table, indexHash] of Object.entries(m.value.manifest.tables)) {
      const index = parseTableIndex(await readFile(join(store, objectPath(indexHash, 'json'))))
      if (!index.ok) { t.fail(index.detail); continue }
      for (const part of index.value.index.parts) {
        const path = join(store, objectPath(part.object, 'parquet'))
        const rows = Number((await conn.runAndReadAll(`SELECT count(*) FROM read_parquet('${path}')`)).getRows()[0]![0])
        t.equal(rows, part.rows, `${name}: ${table} part ${part.object.slice(7, 15)}: ${rows} rows`)
        if (table === 'patterns') {
          const first = (await conn.runAndReadAll(`SELECT min(id) FROM read_parquet('${path}')`)).getRows()[0]![0]
          t.equal(first, part.first, `${name}: the part's first id is DuckDB's least id`)
          const types = (await conn.runAndReadAll(`SELECT column_name, column_type FROM (DESCRIBE SELECT phases, period FROM read_parquet('${path}'))`)).getRows()
          t.same(types, [['phases', 'STRUCT(i INTEGER, j INTEGER, k INTEGER, s INTEGER)[][]'], ['period', 'BIGINT']])
        }
      }
    }
  }
})

t.test('DuckDB reads every Parquet object of every golden pack, search segments, score sidecars and reference patches too, with the rows our reader counts', async (t) => {
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  t.teardown(() => conn.closeSync())
  const kinds = new Map<string, number>()
  for (const name of [...PACKS, 'export']) {
    const root = join(GOLDEN, name)
    for (const f of (await files(root)).filter((f) => f.endsWith('.parquet'))) {
      const path = join(root, f)
      const ours = await partFacts(path)
      if (!ours.ok) { t.fail(`${name}/${f}: ${JSON.stringify(ours.findings)}`); continue }
      const rows = Number((await conn.runAndReadAll(`SELECT count(*) FROM read_parquet('${path}')`)).getRows()[0]![0])
      t.equal(rows, ours.facts.rows, `${name}/${f}: ${rows} rows`)
      kinds.set(name, (kinds.get(name) ?? 0) + 1)
    }
  }
  // The searches pack holds a segment and a score sidecar beside its table parts; the aperiodic one its reference patch.
  const tableParts = async (name: string) => {
    const hash = (await readFile(join(GOLDEN, name, 'MANIFEST'), 'utf8')).trim()
    const m = parseManifest(await readFile(join(GOLDEN, name, 'store', objectPath(hash, 'json'))))
    let n = 0
    if (m.ok) for (const indexHash of Object.values(m.value.manifest.tables)) {
      const index = parseTableIndex(await readFile(join(GOLDEN, name, 'store', objectPath(indexHash, 'json'))))
      if (index.ok) n += index.value.index.parts.length
    }
    return n
  }
  for (const name of ['searches', 'aperiodic']) t.ok(kinds.get(name)! > (await tableParts(name)), `${name}: Parquet objects beyond its table parts were read (${kinds.get(name)})`)
})

t.test('every golden pack passes pack-check at level 3 (stores and the export)', async (t) => {
  for (const name of [...PACKS, 'export']) {
    const dir = name === 'export' ? join(GOLDEN, name) : join(GOLDEN, name, 'store')
    const failures: string[] = []
    const notes: string[] = []
    for await (const i of checkPack(dir, { level: 3 })) (i.note ? notes : failures).push(`${i.code} ${i.target}: ${i.detail}`)
    t.same(failures, [], `${name}: no finding`)
    t.ok(notes.every((n) => n.startsWith('pack.replay-not-replayable') && name === 'aperiodic'), `${name}: notes only for aperiodic patterns (${notes.length})`)
  }
})

t.test('the aperiodic pack made again, twice in different seconds, is the committed one byte for byte', async (t) => {
  for (const round of [1, 2]) {
    if (round === 2) await new Promise((r) => setTimeout(r, 1100))
    const dir = join(work, `aperiodic-${round}`)
    await buildGoldenPack('aperiodic', dir)
    const built = await files(dir)
    t.same(built, await files(join(GOLDEN, 'aperiodic')), `round ${round}: the same files`)
    let same = 0
    for (const f of built) if ((await readFile(join(dir, f))).equals(await readFile(join(GOLDEN, 'aperiodic', f)))) same++
    t.equal(same, built.length, `round ${round}: the same bytes`)
  }
})

t.test('DuckDB runs the export\'s views.sql and reads every table through it', async (t) => {
  const dir = join(GOLDEN, 'export')
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  t.teardown(() => conn.closeSync())
  const sql = (await readFile(join(dir, 'views.sql'), 'utf8')).replace(/read_parquet\('([^']+)'/g, (_m, p: string) => `read_parquet('${join(dir, p)}'`)
  for (const statement of sql.split('\n').filter((l) => l.startsWith('CREATE'))) await conn.run(statement)
  const views = [...sql.matchAll(/VIEW "([a-z_]+)"/g)].map((m) => m[1]!)
  t.ok(views.includes('patterns') && views.includes('quickstart'))
  const patterns = (await conn.runAndReadAll('SELECT class, period, dx, dy FROM patterns ORDER BY class')).getRows()
  t.same(patterns.map((r) => [r[0], Number(r[1]), r[2], r[3]]), [['oscillator', 2, 0, 0], ['spaceship', 4, 1, 1], ['still_life', 1, 0, 0]], 'the blinker, the glider (down and to the right on the y-down grid), the block')
  for (const v of views) t.ok(Number((await conn.runAndReadAll(`SELECT count(*) FROM "${v}"`)).getRows()[0]![0]) > 0, `${v} has rows`)
})

t.test('the publisher still makes every golden pack byte for byte (scripts/make-golden-packs.ts --check)', async (t) => {
  const r = spawnSync(process.execPath, ['dist/scripts/make-golden-packs.js', '--check'], { env: childEnv(), encoding: 'utf8', timeout: 300_000 })
  t.equal(r.status, 0, r.stderr)
  t.equal((r.stdout.match(/identical to a fresh build/g) ?? []).length, PACKS.length + 1, r.stdout)
})

/**
 * A full disk mid-import leaves the library exactly as it was. The disk is a 4 MiB tmpfs when this
 * machine lets the test mount one (root, with CAP_SYS_ADMIN): writes end with ENOSPC. Where it does not (a
 * container without the capability), the writer runs under `ulimit -f`, and a file past the limit ends
 * with EFBIG: the same failed write, for one file at a time.
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { Library } from '../src/library/library.js'
import { childEnv } from './helpers/io.js'

const base = await mkdtemp(join(tmpdir(), 'library-full-'))
const disk = join(base, 'disk')
await mkdir(disk)
// PIPE_TEST_FULL_DISK=ulimit tries the fallback on a machine that could mount.
const mounted = process.env.PIPE_TEST_FULL_DISK !== 'ulimit' && spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', disk]).status === 0
t.teardown(async () => {
  if (mounted) spawnSync('umount', [disk])
  await rm(base, { recursive: true, force: true })
})
t.comment(mounted ? 'a 4 MiB tmpfs: writes end with ENOSPC' : 'no tmpfs mount here: the writer runs under ulimit -f 4096 (EFBIG)')

const libraryModule = new URL('../dist/src/library/library.js', import.meta.url).href

/** Runs `body` (a module script with `lib`, an open Library) in a child on the small disk; gives its exit and output. */
async function onFullDisk(path: string, body: string): Promise<{ status: number | null; out: string }> {
  // SIGXFSZ handled (Node resets an inherited "ignore"), so that a write past ulimit -f fails with EFBIG instead of killing the writer.
  const script = `process.on('SIGXFSZ', () => {})
    const { Library } = await import(${JSON.stringify(libraryModule)})
    const lib = Library.open(${JSON.stringify(path)})
    try { ${body}; process.stdout.write('finished\\n') } catch (err) { process.stdout.write('failed: ' + (err.code ?? '') + ' ' + err.message + '\\n'); process.exitCode = 1 } finally { lib.close() }`
  const node = [process.execPath, '--input-type=module', '-e', script]
  const argv = mounted ? node : ['bash', '-c', 'ulimit -f 4096 && exec "$@"', 'bash', ...node]
  const child = spawn(argv[0]!, argv.slice(1), { env: childEnv(), stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (d: Buffer) => { out += d.toString() })
  const status = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { status, out }
}

const record = (manifest: string) => ({ manifest, publisher: 'SHA256:pub', feed: 'f', source: 'test', started: '2026-12-07T00:00:00Z', finished: '2026-12-07T00:00:00Z' })

t.test('rows past the free space: the import fails, and the library is as it was', async (t) => {
  const path = join(disk, 'rows.db')
  const lib = Library.open(path, { create: true })
  await lib.change(record('sha256:before'), async (c) => { c.event('verifications', 'SHA256:pub', 'p0', '{"pattern_id":"p0"}') })
  const before = lib.stats()
  lib.close()
  const r = await onFullDisk(path, `await lib.change(${JSON.stringify(record('sha256:big'))}, async (c) => {
      for (let i = 0; i < 100000; i++) c.event('verifications', 'SHA256:pub', 'p' + (i + 1), JSON.stringify({ pattern_id: 'p' + (i + 1), text: 'x'.repeat(200) }))
    })`)
  t.equal(r.status, 1, r.out)
  t.match(r.out, /^failed: SQLITE_(FULL|IOERR)/, 'the write that found no room')
  const after = Library.open(path)
  t.same(after.stats(), before, 'none of the rows, nor the import record')
  after.close()
  const check = new Database(path, { readonly: true })
  t.equal(check.pragma('integrity_check', { simple: true }), 'ok')
  check.close()
})

t.test('an object past the free space: refused, and nothing of it left in the objects folder', async (t) => {
  const path = join(disk, 'objects.db')
  Library.open(path, { create: true }).close()
  const bytes = 6 * 1024 * 1024
  const r = await onFullDisk(path, `const data = Buffer.alloc(${bytes}, 1)
    const hash = 'sha256:' + (await import('node:crypto')).createHash('sha256').update(data).digest('hex')
    await lib.change(${JSON.stringify(record('sha256:obj'))}, async (c) => { await c.object(hash, 'png', data) })`)
  t.equal(r.status, 1, `exit ${r.status}: ${r.out}`)
  t.match(r.out, /^failed: (ENOSPC|EFBIG)/)
  const after = Library.open(path)
  t.match(after.stats(), { objects: 0, imports: 0 })
  after.close()
  const left = async (dir: string): Promise<string[]> => (await readdir(dir, { withFileTypes: true, recursive: true })).filter((e) => e.isFile()).map((e) => e.name)
  t.same(await left(`${path}.objects`).catch(() => []), [], 'no temporary file and no object')
})

/**
 * `pipe run pack-check DIR [--level N] [--json]`: in-process through the runner (the JSON object and the
 * text lines), and through the built CLI (dist/bin/pipe.js, made by npm run build) for exit codes and
 * usage errors. Notes are not failures: a table the reader does not know leaves the run ok.
 */
import { spawnSync } from 'node:child_process'
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { runPipeline } from '../src/core/runner.js'
import { coerceFlags } from '../src/core/schema.js'
import { signerName } from '../src/formats/pack/keys/ssh-key.js'
import { NS_MANIFEST, signSshsig } from '../src/formats/pack/keys/sshsig.js'
import { refPath, signaturePath } from '../src/formats/pack/documents/store.js'
import { registry } from '../pipelines/registry.js'
import { packCheckPipeline } from '../pipelines/pack-check.js'
import { captureIO, childEnv } from './helpers/io.js'
import { FEED, PUBLISHER, buildStore, copyStore, fileOf } from './pack-check-fixtures.js'

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const pipe = (args: string[]) => spawnSync(process.execPath, [cli, 'run', 'pack-check', ...args], { encoding: 'utf8', timeout: 60_000, env: childEnv() })

const base = await mkdtemp(join(tmpdir(), 'pack-check-cli-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
const store = await buildStore(join(base, 'store'), { manifest: (d) => ({ ...d, tables: { ...(d.tables as object), widgets: (d.tables as Record<string, string>).rules } }) })
const badSig = await copyStore(store, join(base, 'bad-sig'))
const sig = signaturePath(store.manifest, signerName(PUBLISHER.publicKey))
await writeFile(fileOf(badSig.dir, sig), signSshsig(PUBLISHER, 'other bytes', NS_MANIFEST))

async function inProcess(dir: string, json: boolean, level = 3) {
  const io = captureIO(json)
  const result = await runPipeline(registry, packCheckPipeline as never, { dir, level }, io.settings, false)
  return { result, out: io.out(), err: io.err() }
}

t.test('--json: exactly one object {ok, level, findings: [{level, code, target, detail}], findings_left_out}; notes and counts only in the text report', async (t) => {
  const ok = await inProcess(store.dir, true)
  t.equal(ok.result.exitCode, 0)
  t.same(JSON.parse(ok.out), { findings: [], ok: true, level: 3, findings_left_out: 0 })
  t.match(ok.result.summary, { kind: 'store', notes: 1, note_codes: { 'pack.table-unknown': 1 }, replay: { confirmed: 4 } }, 'the run still counts notes and replays')

  const bad = await inProcess(badSig.dir, true)
  t.equal(bad.result.exitCode, 1)
  const failed = JSON.parse(bad.out)
  t.same(Object.keys(failed).sort(), ['findings', 'findings_left_out', 'level', 'ok'])
  t.equal(failed.ok, false)
  t.equal(failed.level, 3)
  t.same(failed.findings.map((f: object) => Object.keys(f).sort()), [['code', 'detail', 'level', 'target'], ['code', 'detail', 'level', 'target']], 'exactly level, code, target, detail')
  t.match(failed.findings, [{ level: 2, code: 'pack.sig-bad', target: sig }, { level: 2, code: 'pack.manifest-unsigned' }])

  const below = JSON.parse((await inProcess(badSig.dir, true, 1)).out)
  t.match(below, { ok: true, level: 1, findings: [] }, 'signatures are level 2')
})

t.test('text: one line per finding and per note, in the order found, then the summary', async (t) => {
  const bad = await inProcess(badSig.dir, false)
  const lines = bad.out.trim().split('\n')
  t.equal(lines.length, 4)
  t.match(lines[0], new RegExp(`^${sig}: pack\\.sig-bad \\[level 2\\]: signature does not verify`))
  t.match(lines[1], /^objects\/sha256\/[0-9a-f]{2}\/[0-9a-f]{64}\.json: pack\.manifest-unsigned \[level 2\]: /)
  t.match(lines[2], /^note: objects\/sha256\/[0-9a-f]{2}\/[0-9a-f]{64}\.json: pack\.table-unknown \[level 0\]: table widgets is not one of format 1\.0's: ignored$/, 'the note, marked as one, where the tables are read (after the signatures)')
  t.match(lines[3], /^pack-check: FAILED, level 3, kind store, .*notes 1, findings 2$/)
  const clean = await inProcess(store.dir, false)
  t.same(clean.out.trim().split('\n').map((l) => l.split(':')[0]), ['note', 'pack-check'], 'a clean store with a note: ok, and the note shown')
  t.equal(clean.result.exitCode, 0)
})

t.test('the CLI: exit 0 clean, 1 on a finding, 2 on usage errors with one line naming the field', async (t) => {
  const ok = pipe([store.dir, '--json'])
  t.equal(ok.status, 0, ok.stderr)
  t.match(JSON.parse(ok.stdout), { ok: true, level: 3, findings: [] })
  const bad = pipe([badSig.dir])
  t.equal(bad.status, 1)
  t.match(bad.stdout, /pack\.sig-bad \[level 2\]/)
  t.equal(pipe(['--dir', badSig.dir, '--level', '1']).status, 0, '--dir works as well as the bare word, and --level 1 stops below signatures')
  const usage: [string[], RegExp][] = [
    [[], /^pipe: --dir: name the store or export to check/],
    [[store.dir, '--level', '4'], /^pipe: --level: must be a conformance level: 0, 1, 2 or 3 \(usage\.bad-option\)$/],
    [[store.dir, 'another'], /unexpected argument "another"/],
  ]
  for (const [args, message] of usage) {
    const r = pipe(args)
    t.equal(r.status, 2, args.join(' '))
    t.match(r.stderr.trim(), message, args.join(' '))
    t.equal(r.stderr.trim().split('\n').length, 1, 'one line')
  }
})

t.test('usage errors the runner finds, with the flags as the CLI gives them', async (t) => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ dir: join(base, 'missing') }, /--dir: cannot read: no such directory \(env\.enoent\)$/],
    [{ dir: base }, /--dir: neither a store \(jetcarp-store\.json\) nor an export \(pack\.json\) \(pack\.not-a-pack\)$/],
    [{ dir: store.dir, level: 'two' }, /^pipe: --level: must be a conformance level/],
    [{ dir: store.dir, level: '-1' }, /^pipe: --level: must be a conformance level/],
  ]
  for (const [flags, message] of cases) {
    const io = captureIO(true)
    const r = await runPipeline(registry, packCheckPipeline as never, coerceFlags(packCheckPipeline.options, flags), io.settings)
    t.equal(r.exitCode, 2, JSON.stringify(flags))
    t.match(io.err().trim(), message)
    t.equal(io.err().trim().split('\n').length, 1, 'one line')
    t.match(JSON.parse(io.out()), { ok: false, error: { code: /./ } }, 'and --json still prints one object')
  }
  const noRefs = await copyStore(store, join(base, 'no-refs'))
  await unlink(fileOf(noRefs.dir, refPath(FEED)))
  const empty = await inProcess(noRefs.dir, true)
  t.equal(empty.result.exitCode, 1, 'a store with no ref is a finding, not a usage error')
  t.match(JSON.parse(empty.out).findings, [{ level: 0, code: 'pack.store-no-refs', target: 'refs' }])
})

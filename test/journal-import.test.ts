/**
 * `pipe run journal-import --from events.jsonl --journal DIR` (pipelines/journal-import.ts): the sample
 * JSONL (test/fixtures/journal-sample.jsonl) builds a journal that reads back equal; bad lines stop the run
 * with exit 2 naming the line and field and leave no file under a final name; an existing file is refused.
 * In-process through the runner, and through the built CLI (dist/bin/pipe.js).
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { captureIO } from './helpers/io.js'
import { runPipeline, runStageList } from '../src/core/runner.js'
import { eventFromJson, eventToJson, isRestated, readJournalFile, readJournalRange } from '../src/formats/record/journal/journal.js'
import type { JournalEvent } from '../src/formats/record/types.js'
import { registry } from '../pipelines/registry.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const CLI = join(ROOT, 'dist/bin/pipe.js')
const SAMPLE = join(ROOT, 'test/fixtures/journal-sample.jsonl')
const sampleLines = readFileSync(SAMPLE, 'utf8').split('\n').filter((l) => l !== '')
/** The sample's events in their JSONL form with sorted members, as the export writes them. */
const sample = sampleLines.map((l) => eventToJson(eventFromJson(JSON.parse(l))))

const io = captureIO

async function runImport(from: string, journal: string) {
  const def = registry.pipeline('journal-import')!
  const s = io()
  const result = await runPipeline(registry, def, { from, journal }, s.settings)
  return { ...result, stdout: s.out(), stderr: s.err() }
}

/** Every file under a directory, relative, including hidden ones. */
function tree(dir: string): string[] {
  if (!existsSync(dir)) return []
  const out: string[] = []
  const walk = (d: string, rel: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name)
      if (statSync(p).isDirectory()) { out.push(`${rel}${name}/`); walk(p, `${rel}${name}/`) } else out.push(`${rel}${name}`)
    }
  }
  walk(dir, '')
  return out.sort()
}

const tmp = () => mkdtempSync(join(tmpdir(), 'journal-import-'))
const byTime = (e: JournalEvent) => (e.kind === 'frame' ? e.receiveTime : e.time)

t.test('the sample JSONL builds a journal that reads back equal', async (t) => {
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const journal = join(dir, 'journal')
  const r = await runImport(SAMPLE, journal)
  t.equal(r.exitCode, 0, r.stderr)
  t.equal(r.stdout, `journal-import: ok, events ${sample.length}, files 5, findings 0\n`)
  t.same(tree(journal), [
    'replica=a/', 'replica=a/2026-10-03T13.journal', 'replica=a/2026-10-03T14.journal', 'replica=a/2026-10-03T15.journal',
    'replica=b/', 'replica=b/2026-10-03T13.journal', 'replica=b/2026-10-03T14.journal',
  ], 'one file per replica per UTC hour of event time, no temporary files left')

  // File by file: each holds its replica's events of its hour, in input order, with no problem.
  for (const [replica, hour] of [['a', '13'], ['a', '14'], ['a', '15'], ['b', '13'], ['b', '14']] as const) {
    const got: Record<string, unknown>[] = []
    for await (const b of readJournalFile(join(journal, `replica=${replica}`, `2026-10-03T${hour}.journal`))) {
      t.same(b.problems, [])
      got.push(...b.events.filter((e) => !isRestated(e)).map(eventToJson))
    }
    t.same(got, sample.filter((e) => e.replica === replica && String(e.time ?? e.receive_time).slice(11, 13) === hour), `replica ${replica}, hour ${hour}`)
  }

  // Merged over the whole range: the same events, in event-time order.
  const merged: JournalEvent[] = []
  for await (const b of readJournalRange(journal)) merged.push(...b.events.filter((e) => !isRestated(e)))
  t.same(merged.map(eventToJson), [...sample].sort((x, y) => {
    const tx = String(x.time ?? x.receive_time), ty = String(y.time ?? y.receive_time)
    return tx < ty ? -1 : tx > ty ? 1 : String(x.replica) < String(y.replica) ? -1 : 1
  }), 'merged in event-time order')
  for (let i = 1; i < merged.length; i++) if (byTime(merged[i]!) < byTime(merged[i - 1]!)) t.fail('merged order decreases')

  // Importing again into the same directory is refused: nothing is replaced, nothing added.
  const before = tree(journal).map((p) => [p, p.endsWith('/') ? 0 : statSync(join(journal, p)).mtimeMs])
  const again = await runImport(SAMPLE, journal)
  t.equal(again.exitCode, 2)
  t.match(again.stderr, /journal-write.*already exists.*\(journal\.exists\)/)
  t.same(tree(journal).map((p) => [p, p.endsWith('/') ? 0 : statSync(join(journal, p)).mtimeMs]), before, 'the existing journal is untouched')
})

t.test('each hour file after the first restates the connection state at its top', async (t) => {
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const journal = join(dir, 'journal')
  t.equal((await runImport(SAMPLE, journal)).exitCode, 0)
  const events = async (hour: string) => {
    const xs: JournalEvent[] = []
    for await (const b of readJournalFile(join(journal, 'replica=a', `2026-10-03T${hour}.journal`))) xs.push(...b.events)
    return xs
  }
  t.notOk((await events('13')).some(isRestated), 'the first file restates nothing')
  for (const hour of ['14', '15']) {
    const xs = await events(hour)
    const top = xs.slice(0, xs.findIndex((e) => !isRestated(e)))
    t.ok(top.length > 0, `hour ${hour} begins with restated events`)
    t.ok(top.every((e) => e.kind !== 'frame' && e.time === BigInt(Date.UTC(2026, 9, 3, Number(hour))) * 1_000_000n), 'each at the hour start')
    t.notOk(xs.slice(top.length).some(isRestated), 'and none later in the file')
  }
})

t.test('a journal-read | journal-to-jsonl pipeline exports what was imported', async (t) => {
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const journal = join(dir, 'j')
  t.equal((await runImport(SAMPLE, journal)).exitCode, 0)
  const s = io()
  const r = await runStageList(registry, 'export', [
    { stage: 'journal-read', options: { dir: journal, hour: '2026-10-03T14', replicas: ['a'] } },
    { stage: 'journal-to-jsonl' },
    { stage: 'stdout' },
  ], s.settings)
  t.equal(r.exitCode, 0, s.err())
  const lines = s.out().split('\n').filter((l) => l.startsWith('{') && !l.includes('"restated":true'))
  t.same(lines.map((l) => JSON.parse(l)), sample.filter((e) => e.replica === 'a' && String(e.time ?? e.receive_time).slice(11, 13) === '14'))
  t.same(lines, lines.map((l) => JSON.stringify(JSON.parse(l))), 'the export is in sorted-member form')
})

t.test('journal-read | journal-write (append) copies a journal, and appending again extends it', async (t) => {
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  t.equal((await runImport(SAMPLE, join(dir, 'src'))).exitCode, 0)
  const copy = async () => {
    const s = io()
    const r = await runStageList(registry, 'copy', [
      { stage: 'journal-read', options: { dir: join(dir, 'src') } },
      { stage: 'journal-write', options: { dir: join(dir, 'dst'), fsync: 'record' } },
    ], s.settings)
    t.equal(r.exitCode, 0, s.err())
    return r
  }
  let restatedInSource = 0
  for (const f of tree(join(dir, 'src')).filter((p) => p.endsWith('.journal'))) {
    for await (const b of readJournalFile(join(dir, 'src', f))) restatedInSource += b.events.filter(isRestated).length
  }
  const first = await copy()
  t.match(first.summary, { events: sample.length + restatedInSource, files: 5, journal_torn: 0, journal_corrupt: 0 }, 'every event read reached the writer, which restates by itself')
  t.same(tree(join(dir, 'dst')), tree(join(dir, 'src')))
  await copy()
  for (const f of tree(join(dir, 'src')).filter((p) => p.endsWith('.journal'))) {
    const read = async (path: string) => {
      const xs: Record<string, unknown>[] = []
      for await (const b of readJournalFile(path)) { t.same(b.problems, []); xs.push(...b.events.map(eventToJson)) }
      return xs
    }
    const src = await read(join(dir, 'src', f))
    t.same(await read(join(dir, 'dst', f)), [...src, ...src], `${f}: appended to, in order`)
  }
})

t.test('journal-read refuses bad options, naming the field', async (t) => {
  for (const [options, field] of [
    [{ dir: '/x', hour: '2026-10-03T24' }, 'stages[0].options.hour'],
    [{ dir: '/x', start: '2026-10-03T14:00:00Z' }, 'stages[0].options.start'],
    [{ dir: '/x', replicas: ['c'] }, 'stages[0].options.replicas.0'],
    [{ dir: '/x', start: '2026-10-03T14:00:00.000000001Z', end: '2026-10-03T14:00:00.000000000Z' }, 'end'],
  ] as const) {
    const s = io()
    const r = await runStageList(registry, 'bad', [{ stage: 'journal-read', options: options as Record<string, unknown> }, { stage: 'report' }], s.settings)
    t.equal(r.exitCode, 2, JSON.stringify(options))
    t.match(s.err(), field, s.err().trim())
  }
})

const badCases: [string, (lines: string[]) => string[], number, string][] = [
  ['a bad time', (l) => { l[2] = l[2]!.replace('13:59:58.500000000Z', '13:59:58.5Z'); return l }, 3, 'time'],
  ['a bad receive_time', (l) => { l[6] = l[6]!.replace('"receive_time":"2026-10-03T13:59:59.999999999Z"', '"receive_time":"2026-10-03T13:59:59.999999999+00:00"'); return l }, 7, 'receive_time'],
  ['an unknown field', (l) => { l[4] = l[4]!.replace('{', '{"extra":1,'); return l }, 5, 'extra'],
  ['a missing kind', (l) => { l[0] = l[0]!.replace('"kind":"connecting",', ''); return l }, 1, 'kind'],
  ['not JSON', (l) => { l[9] = l[9]!.slice(0, -1); return l }, 10, ''],
  ['bad base64', (l) => { l[9] = l[9]!.replace('AAECA/dKUk6A/w==', 'AAECA/dKUk6A/w='); return l }, 10, 'payload'],
  ['one clock field', (l) => { l[7] = l[7]!.replace('"clock_offset":3000,', ''); return l }, 8, 'clock_offset'],
  ['an instrument that is not a string', (l) => { l[5] = l[5]!.replace('"ETHUSDT"]', '7]'); return l }, 6, 'instruments[1]'],
  ['a close code out of range', (l) => { l[14] = l[14]!.replace('1001', '70000'); return l }, 15, 'close_code'],
  ['an empty line', (l) => { l.splice(11, 0, ''); return l }, 12, ''],
  ['a bad replica on the last line', (l) => { l[l.length - 1] = l[l.length - 1]!.replace('"replica":"a"', '"replica":"c"'); return l }, 21, 'replica'],
]

t.test('a bad line stops the import with exit 2, naming the line and field, and leaves nothing', async (t) => {
  for (const [name, edit, line, field] of badCases) {
    const dir = tmp()
    const input = join(dir, 'events.jsonl')
    writeFileSync(input, edit([...sampleLines]).join('\n') + '\n')
    const journal = join(dir, 'out', 'journal')
    const r = await runImport(input, journal)
    t.equal(r.exitCode, 2, `${name}: exit 2`)
    const lines = r.stderr.split('\n').filter(Boolean)
    t.equal(lines.length, 1, `${name}: one line`)
    t.match(lines[0], new RegExp(`^pipe: \\[journal-from-jsonl\\] ${input.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, line ${line}${field ? `, ${field.replace(/[[\]]/g, '\\$&')}` : ''}: .* \\(journal\\.bad-jsonl\\)$`), `${name}: ${lines[0]}`)
    t.same(tree(dir), ['events.jsonl'], `${name}: no journal file, temporary file or new directory left`)
    rmSync(dir, { recursive: true, force: true })
  }
})

t.test('a bad line after many good ones (written already, to temporary files) still leaves nothing', async (t) => {
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const lines: string[] = []
  const base = Date.parse('2026-10-03T13:30:00Z') / 1000
  for (let i = 0; i < 30_000; i++) {
    const sec = base + i * 0.25
    const time = new Date(Math.floor(sec) * 1000).toISOString().slice(0, 19) + `.${String((i % 4) * 250_000_000).padStart(9, '0')}Z`
    lines.push(JSON.stringify({ kind: 'frame', replica: i % 2 ? 'b' : 'a', connection: 'c', receive_time: time, payload: `{"t":${i},"pad":"${'x'.repeat(100)}"}`, payload_encoding: 'text' }))
  }
  const input = join(dir, 'events.jsonl')
  writeFileSync(input, lines.join('\n') + '\n{"kind":"open"}\n')
  t.ok(statSync(input).size > 3 * 2 ** 20, 'several read chunks, so earlier batches reach the writer first')
  const r = await runImport(input, join(dir, 'a', 'b', 'journal'))
  t.equal(r.exitCode, 2)
  t.match(r.stderr, new RegExp(`line ${lines.length + 1}, replica: is missing`))
  t.same(tree(dir), ['events.jsonl'], 'no file and no directory left')

  const ok = await runImport(input.replace('events', 'none'), join(dir, 'j'))
  t.equal(ok.exitCode, 2, 'a missing input is a usage error')
  writeFileSync(input, lines.join('\n'))
  const good = await runImport(input, join(dir, 'j'))
  t.equal(good.exitCode, 0, good.stderr)
  t.equal(good.summary.events, lines.length, 'a last line without a newline is read')
  t.same(tree(join(dir, 'j')).filter((p) => p.endsWith('.journal')), [
    'replica=a/2026-10-03T13.journal', 'replica=a/2026-10-03T14.journal', 'replica=a/2026-10-03T15.journal',
    'replica=b/2026-10-03T13.journal', 'replica=b/2026-10-03T14.journal', 'replica=b/2026-10-03T15.journal',
  ])
})

t.test('an import into a directory that holds one of its files adds nothing', async (t) => {
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const journal = join(dir, 'j')
  mkdirSync(join(journal, 'replica=b'), { recursive: true })
  writeFileSync(join(journal, 'replica=b', '2026-10-03T14.journal'), 'theirs')
  const r = await runImport(SAMPLE, journal)
  t.equal(r.exitCode, 2)
  t.match(r.stderr, /replica=b\/2026-10-03T14\.journal.*\(journal\.exists\)/)
  t.same(tree(journal), ['replica=b/', 'replica=b/2026-10-03T14.journal'])
  t.equal(readFileSync(join(journal, 'replica=b', '2026-10-03T14.journal'), 'utf8'), 'theirs')
})

interface Run { code: number | null; stdout: string; stderr: string }
function runCli(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on('data', (d: Buffer) => out.push(d))
    child.stderr.on('data', (d: Buffer) => err.push(d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }))
  })
}

t.test('through the built CLI', { skip: existsSync(CLI) ? false : 'dist/bin/pipe.js is not built (npm run build)' }, async (t) => {
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const journal = join(dir, 'journal')
  const ok = await runCli(['run', 'journal-import', '--from', SAMPLE, '--journal', journal])
  t.equal(ok.code, 0, ok.stderr)
  t.equal(ok.stdout, `journal-import: ok, events ${sample.length}, files 5, findings 0\n`)
  const json = await runCli(['run', 'journal-import', '--from', SAMPLE, '--journal', join(dir, 'j2'), '--json'])
  t.equal(json.code, 0, json.stderr)
  t.match(JSON.parse(json.stdout), { ok: true, events: sample.length, files: 5, findings: [] })

  // Export through a JSON pipeline file and compare with the sample.
  const spec = join(dir, 'export.json')
  writeFileSync(spec, JSON.stringify({ name: 'export', stages: [{ stage: 'journal-read', options: { dir: journal, merge: false } }, { stage: 'journal-to-jsonl' }, { stage: 'stdout' }] }))
  const exported = await runCli(['run', spec])
  t.equal(exported.code, 0, exported.stderr)
  const lines = exported.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((e) => e.restated !== true)
  t.same(lines, [...sample.filter((e) => e.replica === 'a'), ...sample.filter((e) => e.replica === 'b')])

  const input = join(dir, 'bad.jsonl')
  writeFileSync(input, sampleLines.map((l, i) => (i === 6 ? l.replace('"clock_error_bound":48000', '"clock_error_bound":"48000"') : l)).join('\n') + '\n')
  const bad = await runCli(['run', 'journal-import', '--from', input, '--journal', join(dir, 'bad')])
  t.equal(bad.code, 2)
  t.equal(bad.stderr, `pipe: [journal-from-jsonl] ${input}, line 7, clock_error_bound: must be an integer within ±(2^53 − 1) (journal.bad-jsonl)\n`)
  t.notOk(existsSync(join(dir, 'bad')), 'nothing created')

  const missing = await runCli(['run', 'journal-import', '--journal', join(dir, 'x')])
  t.equal(missing.code, 2, 'a missing --from is a usage error')
  t.match(missing.stderr, /--from/)
  const list = await runCli(['stages'])
  for (const s of ['journal-read', 'journal-from-jsonl', 'journal-to-jsonl', 'journal-write']) t.match(list.stdout, new RegExp(`^${s} `, 'm'))
})

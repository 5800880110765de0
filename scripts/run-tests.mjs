#!/usr/bin/env node
// Runs the test files (test/**/*.test.ts, or the files named on the command line), PIPE_TEST_JOBS at a time
// (2 unless set), each in a Node process of its own with our TypeScript loader (test/loader/typescript.mjs,
// which keeps what it transpiles), and prints the TAP stream
// tap's runner would: each file's output as a subtest named for the file, then `ok N - FILE # time=…ms`.
// It ends with the plain line `N passed, N failed, N skipped` that CI reads (leaf assertions only; a
// subtest's own summary line is not one), after naming each failure again with the subtests around it,
// since CI keeps only the tail of a long run.
//
// Why not tap's runner: it loads @tapjs/processinfo into every test process, which wraps child_process and
// puts its own loader into the NODE_OPTIONS of every process a test spawns, whatever env the test passes.
// Nearly every CLI test spawns dist/bin/pipe.js, and each such process then took twice as long to start
// (523 ms against 268 ms per `pipe --help`): the suite spent half its time there. The test files still use
// tap's library (`import t from 'tap'`), which needs no runner; `npx tap FILE` works as well (package.json
// "tap"), only slower.
//
// A file fails when its process exits non-zero, dies of a signal or outlives PIPE_TEST_TIMEOUT_S (900 s
// unless set; its whole process group is then killed): if it printed no failing assertion, one is added
// that says which. A file's stdout is printed whole once it ends, so two files' lines never interleave;
// stderr passes through as it comes.
import { spawn, spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const jobs = Math.max(1, Number(process.env.PIPE_TEST_JOBS ?? 2) || 2)
const timeoutS = Math.max(1, Number(process.env.PIPE_TEST_TIMEOUT_S ?? 900) || 900)
const timeoutMs = timeoutS * 1000

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name)
    if (e.isDirectory()) return e.name === 'fixtures' ? [] : testFiles(path)
    return e.name.endsWith('.test.ts') ? [relative(root, path)] : []
  }).sort()
}

const files = process.argv.length > 2 ? process.argv.slice(2).map((f) => relative(root, join(process.cwd(), f))) : testFiles(join(root, 'test'))

// Built output must not be stale: tests import src/ and spawn dist/.
const build = spawnSync(process.execPath, [join(root, 'scripts', 'build-if-stale.mjs')], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] })
if (build.status !== 0) process.exit(build.status || 1)

const nodeArgs = ['--import=./test/loader/typescript.mjs', '--enable-source-maps', '--import=./test/loader/package-exports.mjs']
// tap's library gives each top-level test TAP_TIMEOUT seconds (30 unless set), as it would under its runner.
const childEnv = { ...process.env, TAP_TIMEOUT: String(timeoutS) }

let passed = 0, failed = 0, skipped = 0, fileNumber = 0
const failures = []
const running = new Set()

/** Counts one file's TAP output and returns it indented as a subtest of the run, with the file's own line. */
function report(file, output, ended, ms) {
  const open = [{ indent: -1, name: file }] // subtests still open: { indent, name }
  let fileFailed = false, lastLeaf = 0
  const lines = []
  for (const line of output.split('\n')) {
    if (line === '' || /^TAP version \d+$/.test(line)) continue
    lines.push(`    ${line}`)
    const indent = line.length - line.trimStart().length
    const text = line.trimStart()
    if (text.startsWith('# Subtest')) { open.push({ indent, name: text.replace(/^# Subtest:?\s*/, '') }); continue }
    const m = /^(not )?ok (\d+)/.exec(text)
    if (!m) continue
    if (indent === 0) lastLeaf = Number(m[2])
    if (open.length > 1 && open[open.length - 1].indent === indent) { open.pop(); continue }
    if (/# (SKIP|TODO)\b/i.test(text)) skipped++
    else if (m[1]) {
      failed++
      fileFailed = true
      failures.push([...open.map((s) => s.name), text].join(' > '))
    } else passed++
  }
  if (ended.problem && !fileFailed) {
    const text = `not ok ${lastLeaf + 1} - ${ended.problem}`
    lines.push(`    ${text}`)
    failed++
    fileFailed = true
    failures.push(`${file} > ${text}`)
  }
  fileNumber++
  return `# Subtest: ${file}\n${lines.join('\n')}\n${fileFailed ? 'not ok' : 'ok'} ${fileNumber} - ${file} # time=${ms}ms\n`
}

function runFile(file) {
  return new Promise((resolve) => {
    const started = performance.now()
    const child = spawn(process.execPath, [...nodeArgs, file], { cwd: root, env: childEnv, stdio: ['ignore', 'pipe', 'inherit'], detached: true })
    running.add(child)
    const chunks = []
    child.stdout.on('data', (c) => chunks.push(c))
    let timedOut = false
    const timer = setTimeout(() => { timedOut = true; killGroup(child) }, timeoutMs)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      running.delete(child)
      killGroup(child) // what the file left running (a server, a daemon) goes with it
      const problem = timedOut ? `${file} did not end within ${timeoutS} s (PIPE_TEST_TIMEOUT_S)`
        : signal ? `${file} was killed by ${signal}`
        : code !== 0 ? `${file} exited with code ${code}` : null
      process.stdout.write(report(file, Buffer.concat(chunks).toString('utf8'), { problem }, (performance.now() - started).toFixed(3)))
      resolve()
    })
  })
}

function killGroup(child) {
  try { process.kill(-child.pid, 'SIGKILL') } catch { /* the group is gone */ }
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of running) killGroup(child)
    process.exit(130)
  })
}

process.stdout.write('TAP version 14\n')
const queue = [...files]
await Promise.all(Array.from({ length: Math.min(jobs, queue.length) }, async () => {
  while (queue.length) await runFile(queue.shift())
}))
process.stdout.write(`1..${fileNumber}\n`)
if (failures.length) process.stdout.write(`\nfailed:\n${failures.map((f) => `  ${f}\n`).join('')}`)
process.stdout.write(`${passed} passed, ${failed} failed, ${skipped} skipped\n`)
process.exitCode = failed > 0 ? 1 : 0

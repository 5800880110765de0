#!/usr/bin/env node
// Runs the tap suite with the TAP reporter, passes its output through, and ends with the plain line
// `N passed, N failed, N skipped` that CI reads (tap's own closing lines are not one CI knows).
// Counts leaf assertions: a subtest's own summary line is not an assertion. Each failure is named again,
// with the subtests around it, just before that line: CI keeps only the tail of a long run.
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

const child = spawn(process.execPath, ['node_modules/tap/dist/esm/run.mjs', '--reporter=tap', ...process.argv.slice(2)], { stdio: ['ignore', 'pipe', 'inherit'] })
let passed = 0, failed = 0, skipped = 0
const open = [] // subtests still open: { indent, name }
const failures = []
const lines = createInterface({ input: child.stdout })
lines.on('line', (line) => {
  process.stdout.write(line + '\n')
  const indent = line.length - line.trimStart().length
  const text = line.trimStart()
  if (text.startsWith('# Subtest')) { open.push({ indent, name: text.replace(/^# Subtest:?\s*/, '') }); return }
  const m = /^(not )?ok \d+/.exec(text)
  if (!m) return
  if (open.length && open[open.length - 1].indent === indent) { open.pop(); return }
  if (/# (SKIP|TODO)\b/i.test(text)) skipped++
  else if (m[1]) {
    failed++
    failures.push([...open.map((s) => s.name), text].join(' > '))
  } else passed++
})
child.on('close', (code, signal) => {
  lines.close()
  if (failures.length) process.stdout.write(`\nfailed:\n${failures.map((f) => `  ${f}\n`).join('')}`)
  process.stdout.write(`${passed} passed, ${failed} failed, ${skipped} skipped\n`)
  process.exitCode = code ?? (signal ? 1 : 0)
  if (code === 0 && failed > 0) process.exitCode = 1
})

#!/usr/bin/env node
// Builds dist/ when a source is newer than the last build, so that tests which import or spawn dist/ never
// run stale code. tap runs it once before the test files (package.json "tap": "before"), so `npx tap
// test/X.test.ts` and `node scripts/run-tests.mjs test/X.test.ts` are safe after an edit; `npm test` builds
// first, and this then finds nothing newer.
//
// The sources are what tsconfig.build.json compiles (bin, src, pipelines, bench, scripts: their .ts files,
// and any .json they may import) and what decides how: tsconfig*.json and package.json. A folder's own time
// counts too, so that a source deleted or renamed is a change. The last build's time is dist/.build-stamp's,
// which this script sets to when its build started (an edit made while tsc ran is then still newer); when
// a build it did not run came later (`npm run build`, `npm test`), it is dist/bin/pipe.js's, which every
// build writes. Prints one line (on stderr, which tap passes through) when it builds, nothing otherwise
// (BUILD_IF_STALE_VERBOSE=1: a line either way, with the time the look took). A failed build fails the run.
//
// tap 21 runs its before script with its coverage hooks even with disable-coverage, and then fails the run
// (exit 1) because this file is not fully covered: the whole file is left out of coverage.
/* c8 ignore start */
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const SOURCE_DIRS = ['bin', 'src', 'pipelines', 'bench', 'scripts']
const SOURCE_FILE = /\.(ts|mts|cts|json)$/
const STAMP = join(root, 'dist', '.build-stamp')
const OUTPUT = join(root, 'dist', 'bin', 'pipe.js')

const mtimeOf = (path) => statSync(path, { throwIfNoEntry: false })?.mtimeMs

/** The newest source, as [mtime, path]. */
function newestSource() {
  let newest = [0, '']
  const see = (path, ms) => {
    if (ms > newest[0]) newest = [ms, path]
  }
  for (const f of readdirSync(root)) if (/^tsconfig.*\.json$/.test(f) || f === 'package.json') see(f, mtimeOf(join(root, f)))
  const walk = (dir) => {
    const entries = readdirSync(dir, { withFileTypes: true })
    see(`${relative(root, dir)}/ (a file added, removed or renamed there)`, mtimeOf(dir))
    for (const e of entries) {
      const path = join(dir, e.name)
      if (e.isDirectory()) walk(path)
      else if (SOURCE_FILE.test(e.name)) see(relative(root, path), mtimeOf(path))
    }
  }
  for (const d of SOURCE_DIRS) if (mtimeOf(join(root, d)) !== undefined) walk(join(root, d))
  return newest
}

/** When the last build read its sources, or undefined when there is no build. */
function lastBuild() {
  const output = mtimeOf(OUTPUT)
  if (output === undefined) return undefined
  try {
    const stamp = JSON.parse(readFileSync(STAMP, 'utf8'))
    // Our build was the last one when pipe.js is still the file it wrote.
    if (stamp.output === output) return mtimeOf(STAMP)
  } catch {
    // No stamp, or not ours: the last build was another's.
  }
  return output
}

const started = performance.now()
const [sourceMs, source] = newestSource()
const builtMs = lastBuild()
if (builtMs !== undefined && sourceMs <= builtMs) {
  if (process.env.BUILD_IF_STALE_VERBOSE) process.stderr.write(`build-if-stale: dist/ is up to date (${(performance.now() - started).toFixed(0)} ms)\n`)
} else {
  process.stderr.write(`build-if-stale: ${builtMs === undefined ? 'no build in dist/' : `${source} is newer than the last build`}: npm run build\n`)
  const buildStart = new Date()
  // npm's and tsc's output goes to stderr: tap reads this process's stdout as TAP.
  const run = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', 2, 2] })
  if (run.status !== 0) {
    process.stderr.write(`build-if-stale: the build failed (${run.error?.message ?? (run.signal ? `signal ${run.signal}` : `exit ${run.status}`)})\n`)
    process.exit(run.status || 1)
  }
  writeFileSync(STAMP, JSON.stringify({ output: mtimeOf(OUTPUT) }) + '\n')
  utimesSync(STAMP, buildStart, buildStart)
}
/* c8 ignore stop */

/**
 * The layers and rooms of docs/architecture.md hold: no file imports across a forbidden line, no folder under
 * src passes 20 files, and every room says what it holds. The checker is run on this checkout, and on small
 * trees made here with one wrong import each, which it must name.
 */
import t from 'tap'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { checkImports, crowdedFolders, ROOMS, specifiers } from '../scripts/import-rules.js'

const REPO = fileURLToPath(new URL('..', import.meta.url))

t.test('this checkout keeps the import rules', async (t) => {
  t.same(checkImports(REPO), [], 'no import crosses a forbidden line')
  t.same(crowdedFolders(REPO), [], 'no folder under src holds more than 20 files')
})

t.test('every room opens with a README on its job and what it may import', async (t) => {
  for (const room of Object.keys(ROOMS).filter((r) => r !== 'bin')) {
    t.ok(existsSync(join(REPO, room, 'README.md')), `${room}/README.md`)
  }
})

/** A tree of `files` (path -> text) under a new folder. */
type Test = Parameters<Parameters<typeof t.test>[0]>[0]

function tree(t: Test, files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'pipe-rooms-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}

const wrong: { why: string; file: string; text: string; from: string; to: string }[] = [
  { why: 'a format imports a stage', file: 'src/formats/record/x.ts', text: "import { hashTee } from '../../transforms/hash.js'\n", from: 'src/formats/record', to: 'src/transforms' },
  { why: 'a format imports a pipeline (dynamically)', file: 'src/formats/pack/check/x.ts', text: "export const p = () => import('../../../../pipelines/verify.js')\n", from: 'src/formats/pack/check', to: 'pipelines' },
  { why: 'the record format imports the pack format', file: 'src/formats/record/seal/x.ts', text: "import type { Manifest } from '../../pack/documents/doc-manifest.js'\n", from: 'src/formats/record/seal', to: 'src/formats/pack/documents' },
  { why: 'the pack format imports the record format', file: 'src/formats/pack/keys/x.ts', text: "export { formatTime } from '../../record/time.js'\n", from: 'src/formats/pack/keys', to: 'src/formats/record' },
  { why: 'the core imports a format', file: 'src/core/x.ts', text: "import '../formats/json/canonical-check.js'\n", from: 'src/core', to: 'src/formats/json' },
  { why: 'the core imports a venue', file: 'src/core/x.ts', text: "import { findVenue } from '../venues/index.js'\n", from: 'src/core', to: 'src/venues' },
  { why: 'a stage imports a pipeline', file: 'src/sinks/x.ts', text: "import { verifyRaw } from '../../pipelines/verify-raw.js'\n", from: 'src/sinks', to: 'pipelines' },
  { why: 'a codec imports a stage', file: 'src/codec/x.ts', text: "import { splitLinesStage } from '../transforms/split-lines.js'\n", from: 'src/codec', to: 'src/transforms' },
  { why: 'a lower pack room imports a higher one', file: 'src/formats/pack/tables/x.ts', text: "import { newRowsWork } from '../publish/new-rows.js'\n", from: 'src/formats/pack/tables', to: 'src/formats/pack/publish' },
  { why: 'a worker thread started by name in a higher room', file: 'src/formats/pack/keys/x.ts', text: "const url = new URL('../check/check-pool-worker.js', import.meta.url)\n", from: 'src/formats/pack/keys', to: 'src/formats/pack/check' },
  { why: 'export imports check', file: 'src/formats/pack/export/x.ts', text: "import type { Issue } from '../check/check-run.js'\n", from: 'src/formats/pack/export', to: 'src/formats/pack/check' },
]

for (const w of wrong) {
  t.test(`a deliberately wrong import is found: ${w.why}`, async (t) => {
    const root = tree(t, { [w.file]: `// the first line\n${w.text}`, 'src/core/ok.ts': "export const ok = 1\n" })
    const crossings = checkImports(root)
    t.equal(crossings.length, 1, 'one crossing')
    t.match(crossings[0], { file: w.file, line: 2, from: w.from, to: w.to }, 'named with its file, line and rooms')
  })
}

t.test('imports within a room, down the layers and of packages pass', async (t) => {
  const root = tree(t, {
    'src/formats/pack/publish/a.ts': "import { b } from './b.js'\nimport { checkPack } from '../check/check.js'\nimport { createHash } from 'node:crypto'\nimport canonicalize from 'canonicalize'\n",
    'src/formats/record/seal/a.ts': "import { findVenue } from '../../../venues/index.js'\nimport { formatTime } from '../time.js'\nimport { createIncrementalHash } from '../../../codec/hash.js'\n",
    'pipelines/a.ts': "import { seal } from '../src/sinks/seal.js'\n",
    'bin/a.ts': "import { x } from '../pipelines/a.js'\n",
  })
  t.same(checkImports(root), [])
})

t.test('a file outside every room is named', async (t) => {
  const root = tree(t, { 'src/loose.ts': "import { ok } from './core/ok.js'\n", 'src/core/ok.ts': 'export const ok = 1\n' })
  t.match(checkImports(root), [{ file: 'src/loose.ts', from: '(no room)' }])
})

t.test('a folder of 21 files is crowded', async (t) => {
  const files: Record<string, string> = {}
  for (let i = 0; i < 21; i++) files[`src/core/f${i}.ts`] = 'export {}\n'
  t.same(crowdedFolders(tree(t, files)), [{ dir: 'src/core', files: 21 }])
  delete files['src/core/f20.ts']
  t.same(crowdedFolders(tree(t, files)), [])
})

t.test('what counts as an import', async (t) => {
  const found = specifiers([
    "import a from './a.js'",
    "import type { B } from './b.js'",
    "export * from './c.js'",
    "const d = await import('./d.js')",
    "type E = import('./e.js').E",
    "const w = siblingWorkerUrl(import.meta.url, 'f-worker')",
    "// import g from './g.js' in a comment is not an import",
  ].join('\n')).map((s) => s.spec)
  t.same(found.sort(), ['./a.js', './b.js', './c.js', './d.js', './e.js', './f-worker.js'])
})

t.test('every file a command reads is opened through src/core/input-file.ts', async (t) => {
  // The other opens for reading, each not of input: a descriptor to fsync, a run this process spilled, pipe's own package.json.
  const allowed = new Map([
    ['src/core/atomic-write.ts', 'fsync of a directory'],
    ['src/formats/pack/export/export.ts', 'fsync of a file the export wrote'],
    ['src/formats/pack/publish/spill-sort.ts', 'a run of keys this publish spilled, in its own temporary folder'],
    ['src/core/version.ts', "pipe's own package.json"],
    ['src/recorder/sealer.ts', "a seal's CPU time, from the kernel's /proc/<pid>/stat"],
    ['src/storage/local-storage.ts', 'objects of a folder used as storage, read with the limit its caller gives, and the files it is given to store'],
    ['src/storage/s3-storage.ts', "the local files it is given to upload (a seal's own files)"],
    ['src/storage/folders.ts', "the files a command wrote into a folder staged for a storage (a publish's), landed there"],
  ])
  const reads = /\breadFile(Sync)?\(|(?<!\.)createReadStream\(|\bopen\([^)]*,\s*'r'\)/
  const found = new Set<string>()
  const walk = (d: string) => {
    for (const e of readdirSync(join(REPO, d), { withFileTypes: true })) {
      const rel = `${d}/${e.name}`
      if (e.isDirectory()) walk(rel)
      else if (rel.endsWith('.ts') && rel !== 'src/core/input-file.ts' && reads.test(readFileSync(join(REPO, rel), 'utf8'))) found.add(rel)
    }
  }
  walk('src')
  walk('pipelines')
  walk('bin')
  walk('api')
  t.same([...found].sort(), [...allowed.keys()].sort(), 'only the allowed files open files for reading themselves')
})

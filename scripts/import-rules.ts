/**
 * The import rules of docs/architecture.md, checked over the source tree: each folder of the code is a room,
 * and a room may import only from itself and the rooms its rule lists. `npm run check:imports` prints every
 * import that crosses a forbidden line and exits 1; test/architecture.test.ts runs the same check.
 *
 * Imports are read with TypeScript's own pre-processor (static and dynamic imports, `import type`, re-exports),
 * and worker threads started by name beside their module (`siblingWorkerUrl(import.meta.url, 'name')`,
 * `new URL('./name.js', import.meta.url)`) count as imports of that module.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, posix, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import ts from 'typescript'

/** Every room and the rooms it may import from, besides itself. Rooms are folders, the longest match wins. */
export const ROOMS: Readonly<Record<string, readonly string[]>> = {
  'src/core': [],
  'src/codec': ['src/core'],
  'src/net': ['src/core', 'src/codec'],
  'src/storage': ['src/core', 'src/codec'],
  'src/formats/json': [],
  'src/formats/record': ['src/core', 'src/codec', 'src/formats/json'],
  'src/formats/record/journal': ['src/formats/record', 'src/core', 'src/codec', 'src/formats/json'],
  'src/formats/record/keys': ['src/formats/record', 'src/core', 'src/codec'],
  'src/formats/record/seal': ['src/formats/record', 'src/formats/record/journal', 'src/formats/record/keys', 'src/venues', 'src/core', 'src/codec', 'src/storage', 'src/formats/json'],
  'src/formats/record/verify': ['src/formats/record', 'src/formats/record/keys', 'src/venues', 'src/core', 'src/codec', 'src/storage', 'src/formats/json'],
  'src/venues': ['src/formats/record', 'src/core', 'src/codec', 'src/formats/json'],
  'src/formats/pack/keys': ['src/core', 'src/codec', 'src/formats/json'],
  'src/formats/pack/geometry': ['src/core', 'src/codec'],
  'src/formats/pack/tables': ['src/formats/pack/keys', 'src/core', 'src/codec', 'src/formats/json'],
  'src/formats/pack/documents': ['src/formats/pack/keys', 'src/formats/pack/tables', 'src/core', 'src/codec', 'src/formats/json'],
  'src/formats/pack/records': ['src/formats/pack/keys', 'src/formats/pack/tables', 'src/formats/pack/documents', 'src/core', 'src/codec', 'src/formats/json'],
  'src/formats/pack/check': ['src/formats/pack/keys', 'src/formats/pack/geometry', 'src/formats/pack/tables', 'src/formats/pack/documents', 'src/formats/pack/records', 'src/core', 'src/codec', 'src/formats/json'],
  'src/formats/pack/publish': ['src/formats/pack/keys', 'src/formats/pack/geometry', 'src/formats/pack/tables', 'src/formats/pack/documents', 'src/formats/pack/records', 'src/formats/pack/check', 'src/core', 'src/codec', 'src/formats/json'],
  'src/formats/pack/export': ['src/formats/pack/keys', 'src/formats/pack/tables', 'src/formats/pack/documents', 'src/core', 'src/codec', 'src/formats/json'],
  'src/sources': ['src/storage', 'src/core', 'src/codec', 'src/net', 'src/formats', 'src/venues'],
  'src/transforms': ['src/storage', 'src/sources', 'src/core', 'src/codec', 'src/net', 'src/formats', 'src/venues'],
  'src/sinks': ['src/storage', 'src/transforms', 'src/core', 'src/codec', 'src/formats', 'src/venues'],
  'src/sim': ['src/core', 'src/codec', 'src/formats', 'src/venues'],
  'src/recorder': ['src/storage', 'src/core', 'src/codec', 'src/formats', 'src/venues'],
  'src/library': ['src/storage', 'src/core', 'src/codec', 'src/net', 'src/formats/pack', 'src/formats/json'],
  'pipelines': ['src'],
  'bin': ['src', 'pipelines'],
  'api': ['src', 'pipelines'],
}

export interface Crossing { file: string; line: number; imports: string; from: string; to: string }

const CODE = /\.(ts|mts|js|mjs)$/

function roomOf(file: string): string | undefined {
  let best: string | undefined
  for (const room of Object.keys(ROOMS)) if ((file === room || file.startsWith(room + '/')) && (!best || room.length > best.length)) best = room
  return best
}

/** Whether `from` may import a file of room `to`: the same room, or one its rule lists (a listed folder covers its rooms). */
function allowed(from: string, toFile: string): boolean {
  const to = roomOf(toFile)
  if (to === from) return true
  return ROOMS[from]!.some((r) => toFile === r || toFile.startsWith(r + '/'))
}

function* codeFiles(root: string, dir: string): Generator<string> {
  for (const name of readdirSync(join(root, dir)).sort()) {
    const path = posix.join(dir, name)
    if (statSync(join(root, path)).isDirectory()) yield* codeFiles(root, path)
    else if (CODE.test(name) && !name.endsWith('.d.ts')) yield path
  }
}

/** The module specifiers a file names, with their lines: imports, re-exports, dynamic imports, sibling workers. */
export function specifiers(text: string): { spec: string; line: number }[] {
  const info = ts.preProcessFile(text, true, true)
  const lineOf = (pos: number) => text.slice(0, pos).split('\n').length
  const found = info.importedFiles.map((f) => ({ spec: f.fileName, line: lineOf(f.pos) }))
  for (const m of text.matchAll(/siblingWorkerUrl\(\s*import\.meta\.url\s*,\s*['"]([\w.-]+)['"]\s*\)/g)) found.push({ spec: `./${m[1]}.js`, line: lineOf(m.index) })
  for (const m of text.matchAll(/new URL\(\s*[`'"](\.{1,2}\/[^`'"$]+)[`'"]\s*,\s*import\.meta\.url\s*\)/g)) found.push({ spec: m[1]!, line: lineOf(m.index) })
  return found
}

/** Every import of the code under `root` (a checkout) that crosses a line the rooms' rules forbid. */
export function checkImports(root: string): Crossing[] {
  const crossings: Crossing[] = []
  for (const top of ['src', 'pipelines', 'bin', 'api'].filter((d) => existsSync(join(root, d)))) {
    for (const file of codeFiles(root, top)) {
      const from = roomOf(file)
      for (const { spec, line } of specifiers(readFileSync(join(root, file), 'utf8'))) {
        if (!spec.startsWith('.')) continue
        const target = posix.normalize(posix.join(posix.dirname(file), spec))
        if (from === undefined) {
          crossings.push({ file, line, imports: spec, from: '(no room)', to: roomOf(target) ?? target })
          continue
        }
        if (!allowed(from, target)) crossings.push({ file, line, imports: spec, from, to: roomOf(target) ?? target })
      }
    }
  }
  return crossings
}

/** Folders under src with more than `max` files of their own: each wants rooms. */
export function crowdedFolders(root: string, max = 20): { dir: string; files: number }[] {
  const crowded: { dir: string; files: number }[] = []
  const walk = (dir: string) => {
    const entries = readdirSync(join(root, dir), { withFileTypes: true })
    const files = entries.filter((e) => e.isFile()).length
    if (files > max) crowded.push({ dir, files })
    for (const e of entries) if (e.isDirectory()) walk(posix.join(dir, e.name))
  }
  walk('src')
  return crowded
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const root = resolve(process.argv[2] ?? '.')
  const crossings = checkImports(root)
  const crowded = crowdedFolders(root)
  for (const c of crossings) console.log(`${c.file}:${c.line}: ${c.from} may not import ${c.to} (${c.imports}): docs/architecture.md`)
  for (const f of crowded) console.log(`${f.dir}: ${f.files} files, over 20: give it rooms (docs/architecture.md)`)
  console.log(`import rules: ${crossings.length} crossing(s), ${crowded.length} crowded folder(s)`)
  process.exitCode = crossings.length + crowded.length > 0 ? 1 : 0
}

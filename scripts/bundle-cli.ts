/**
 * The CLI as it is run, dist/bin/: bin/pipe.ts and every worker thread's module (src/**\/*-worker.ts),
 * bundled by esbuild with the code they share in chunks beside them. Node 20's ESM loader resolved, read,
 * compiled and linked some 230 modules (95 of them zod's) at every start before a command ran; bundled,
 * `pipe run pack-check` of a million patterns took 7% less wall time (median of ten alternating runs), and
 * every command starts sooner.
 *
 * A worker's module goes beside the chunks because the code that starts it finds it there, as the module
 * beside its own (siblingWorkerUrl). Packages with native bindings stay outside the bundle (esbuild stops on
 * a .node file, so one added later cannot slip in), as do the modules the code loads with `require` at run
 * time and two packages that need their own files (below). The bundle replaces what tsc wrote to dist/bin
 * (tsc still checks bin/ with the rest); the tsc build of src/ and pipelines/ is what the benches and
 * scripts import.
 */
import { build } from 'esbuild'
import { readdir, rm } from 'node:fs/promises'
import { basename, join } from 'node:path'

const NATIVE = ['zstd-napi', 'better-sqlite3', '@duckdb/node-api']
/**
 * Packages that Node loads as before, from node_modules: hash-wasm's main file is a UMD module, and bundled
 * and loaded with `import()` (src/transforms/hash.ts) it had only a default export; yargs finds the
 * package.json whose version and parser settings it takes from where its own file is, which bundled would be
 * the working directory's (`pipe --version` printed "unknown" outside the repository).
 */
const LOADED_BY_NODE = ['hash-wasm', 'yargs']
const OUT = 'dist/bin'

const workers = (await readdir('src', { recursive: true })).filter((f) => f.endsWith('-worker.ts')).map((f) => join('src', f)).sort()
const names = workers.map((w) => basename(w, '.ts'))
const twice = names.find((n, i) => names.indexOf(n) !== i)
if (twice) throw new Error(`two worker modules are named ${twice}: bundled, they would be one file`)

await rm(OUT, { recursive: true, force: true })
await build({
  entryPoints: ['bin/pipe.ts', ...workers],
  outdir: OUT,
  entryNames: '[name]',
  chunkNames: 'chunk-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: [...NATIVE, ...LOADED_BY_NODE],
  // esbuild turns a bundled CommonJS package's require of a Node module into a call of `require`, which an
  // ES module does not have.
  banner: { js: "import { createRequire as __pipeCreateRequire } from 'node:module'; const require = __pipeCreateRequire(import.meta.url);" },
  sourcemap: 'linked',
  logLevel: 'warning',
})

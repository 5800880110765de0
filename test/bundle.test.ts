/**
 * The built CLI is a bundle (scripts/bundle-cli.ts): the code that starts a worker thread finds the worker's
 * module beside its own file, so every worker module must be bundled into dist/bin too; and the packages left
 * to Node must still be loaded from node_modules, not copied in.
 */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const bin = join(root, 'dist/bin')
const built = new Set(readdirSync(bin))

t.test('every worker module under src/ is bundled beside the CLI', async (t) => {
  const workers = readdirSync(join(root, 'src'), { recursive: true }).map(String).filter((f) => f.endsWith('-worker.ts'))
  t.ok(workers.length >= 5, `worker modules found: ${workers.join(', ')}`)
  for (const w of workers) t.ok(built.has(`${basename(w, '.ts')}.js`), `dist/bin/${basename(w, '.ts')}.js`)
})

t.test('the bundle imports yargs and hash-wasm from node_modules rather than holding them', async (t) => {
  const code = [...built].filter((f) => f.endsWith('.js')).map((f) => readFileSync(join(bin, f), 'utf8')).join('\n')
  for (const name of ['yargs', 'hash-wasm']) {
    // Tested, not matched: a failed match would print megabytes of bundle.
    t.ok(new RegExp(`from ["']${name}["']|import\\(["']${name}["']\\)`).test(code), `${name} is imported`)
    t.notOk(code.includes(`// node_modules/${name}/`), `no file of ${name} is in the bundle`)
  }
})

// The resolve and load hooks of typescript.mjs.
import { createHash, randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const cacheDir = join(root, 'node_modules', '.cache', 'pipe-test-ts')
// Part of every cache key: a change of these options or of the compiler makes every entry stale.
const COMPILER_OPTIONS = { target: 'ES2022', module: 'ESNext', inlineSourceMap: true, inlineSources: true, useDefineForClassFields: true }
const KEY_PREFIX = JSON.stringify(COMPILER_OPTIONS) + JSON.parse(readFileSync(join(root, 'node_modules', 'typescript', 'package.json'), 'utf8')).version

let ts
async function transpile(source, path) {
  ts ??= (await import('typescript')).default
  const options = { ...COMPILER_OPTIONS, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext }
  const { outputText, diagnostics } = ts.transpileModule(source, { compilerOptions: options, fileName: path, reportDiagnostics: true })
  // A syntax error is refused here, not transpiled into a module that fails somewhere else.
  const first = diagnostics?.find((d) => d.category === ts.DiagnosticCategory.Error)
  if (first) {
    const at = first.file && first.start !== undefined ? first.file.getLineAndCharacterOfPosition(first.start) : null
    throw new SyntaxError(`${path}${at ? `:${at.line + 1}:${at.character + 1}` : ''}: ${ts.flattenDiagnosticMessageText(first.messageText, '\n')}`)
  }
  return outputText
}

/** An import of `./x.js` names the module `./x.ts` when no x.js exists (TypeScript's NodeNext convention). */
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context)
  } catch (err) {
    const relative = specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('file:')
    if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !relative || !specifier.endsWith('.js')) throw err
    return next(`${specifier.slice(0, -3)}.ts`, context)
  }
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context)
  const path = fileURLToPath(url)
  const source = readFileSync(path, 'utf8')
  const entry = join(cacheDir, `${createHash('sha256').update(KEY_PREFIX).update('\0').update(path).update('\0').update(source).digest('hex')}.js`)
  let output
  try {
    output = readFileSync(entry, 'utf8')
  } catch {
    output = await transpile(source, path)
    // Written under a temporary name and renamed: two test processes may transpile the same file at once.
    mkdirSync(cacheDir, { recursive: true })
    const temp = `${entry}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
    writeFileSync(temp, output)
    renameSync(temp, entry)
  }
  return { format: 'module', source: output, shortCircuit: true }
}

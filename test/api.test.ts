/**
 * The published surface is what is tested: `npm pack` makes the package a user would install, it is
 * unpacked into a new project's node_modules (its dependencies linked from this checkout's, as an install
 * would place them: no network), and the example of docs/api.md, taken from the page itself, is compiled
 * with tsc against the package's type declarations and run on a golden trades table. Its output is checked
 * against DuckDB's own price × size.
 */
import { spawnSync } from 'node:child_process'
import { mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { DuckDBInstance } from '@duckdb/node-api'
import { childEnv } from './helpers/io.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string; dependencies: Record<string, string>; exports: Record<string, unknown>; private?: boolean }
const dir = await mkdtemp(join(tmpdir(), 'pipe-api-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
const sh = (cmd: string, args: string[], cwd: string) => spawnSync(cmd, args, { cwd, encoding: 'utf8', env: childEnv(), timeout: 180_000 })

t.test('the package: public, versioned, with four typed entry points', async (t) => {
  t.notOk(pkg.private, 'not private')
  t.match(pkg.version, /^\d+\.\d+\.\d+$/)
  t.same(Object.keys(pkg.exports), ['.', './stages', './record', './pack', './package.json'])
})

t.test('npm pack, installed into a new project: the docs/api.md example compiles against the types and runs', async (t) => {
  // The build is current (npm test builds first); scripts are not run again here.
  const packed = sh('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], ROOT)
  t.equal(packed.status, 0, packed.stderr)
  const [{ filename, files }] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }]
  const paths = files.map((f) => f.path)
  t.ok(paths.includes('dist/api/index.d.ts') && paths.includes('dist/api/stages.d.ts'), 'type declarations are in the package')
  t.notOk(paths.some((p) => p.startsWith('test/') || p.startsWith('dist/bench/') || p.startsWith('src/')), 'no tests, benches or TypeScript sources')

  const app = join(dir, 'app')
  const modules = join(app, 'node_modules')
  await mkdir(join(modules, pkg.name), { recursive: true })
  const untar = sh('tar', ['-xzf', join(dir, filename), '-C', join(modules, pkg.name), '--strip-components=1'], dir)
  t.equal(untar.status, 0, untar.stderr)
  for (const dep of [...Object.keys(pkg.dependencies), '@types/node']) {
    await mkdir(join(modules, dep, '..'), { recursive: true })
    await symlink(join(ROOT, 'node_modules', dep), join(modules, dep))
  }
  const page = await readFile(join(ROOT, 'docs/api.md'), 'utf8')
  const code = /```ts\n([\s\S]*?)```/.exec(page)![1]!
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'app', type: 'module', private: true }))
  await writeFile(join(app, 'notional.ts'), code)
  await writeFile(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, types: ['node'], outDir: 'out' }, include: ['notional.ts'] }))
  const tsc = sh(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], app)
  t.equal(tsc.status, 0, `the example type-checks against the package: ${tsc.stdout}${tsc.stderr}`)

  const table = join(ROOT, 'test/golden/record/root/recorder=golden/venue=binance/channel=trades/date=2026-10-04/hour=14/trades.parquet')
  const out = join(app, 'notional.csv')
  const ran = sh(process.execPath, [join(app, 'out/notional.js'), table, out], app)
  t.equal(ran.status, 0, ran.stderr)
  const lines = (await readFile(out, 'utf8')).trim().split('\n')
  t.equal(lines[0], 'trade_id,price,size,notional')
  const db = await (await DuckDBInstance.create(':memory:')).connect()
  t.teardown(() => db.closeSync())
  const expected = (await db.runAndReadAll(`SELECT trade_id, (price::DECIMAL(38,10) * size::DECIMAL(38,10))::VARCHAR AS notional FROM read_parquet('${table}')`)).getRowObjectsJS() as { trade_id: string; notional: string }[]
  const trim = (d: string) => (d.includes('.') ? d.replace(/0+$/, '').replace(/\.$/, '') : d)
  const mine = new Map(lines.slice(1).map((l) => { const c = l.split(','); return [c[0]!, c[3]!] }))
  t.equal(mine.size, expected.length)
  t.same(expected.filter((e) => trim(e.notional) !== mine.get(e.trade_id)), [], 'every notional as DuckDB computes it, exactly')
  t.ok((await readdir(app)).includes('notional.csv'))
})

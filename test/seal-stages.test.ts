/**
 * A seal as a user composes it: the seven stages of `pipe describe seal-hour` in a JSON pipeline seal the
 * hour byte for byte as `pipe run seal-hour` does; stages given different hours are refused before the
 * hour lands, with no temporary folder left.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { newSigningKey, writeJwksFile, writePrivateJwkFile } from '../src/formats/record/keys/keys.js'
import { childEnv } from './helpers/io.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const cli = (args: string[]) => spawnSync(process.execPath, [join(ROOT, 'dist/bin/pipe.js'), ...args], { encoding: 'utf8', timeout: 120_000, env: childEnv() })
const dir = await mkdtemp(join(tmpdir(), 'pipe-seal-stages-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

const journal = join(dir, 'journal')
const imported = cli(['run', 'journal-import', '--from', join(ROOT, 'test/fixtures/journal-sample.jsonl'), '--journal', journal])
if (imported.status !== 0) throw new Error(imported.stderr)
const { privateJwk, publicJwk } = await newSigningKey({ validFrom: '2026-01-01T00:00:00.000000000Z', seed: new Uint8Array(32).fill(31) })
const key = join(dir, 'key.jwk')
await writePrivateJwkFile(key, privateJwk)
await writeJwksFile(join(dir, 'jwks.json'), { keys: [publicJwk] })

const HOUR = '2026-10-03T14'
const hourDir = (root: string) => join(root, 'recorder=recorder/venue=binance/channel=trades/date=2026-10-03/hour=14')
const chain = { venue: 'binance', channel: 'trades' }

function pipelineFile(root: string, manifestHour: string): object {
  return {
    name: 'my-seal',
    stages: [
      { stage: 'journal-read', options: { dir: journal, start: '2026-10-03T13:59:55.000000000Z', end: '2026-10-03T15:00:05.000000000Z' } },
      { stage: 'pair-replicas', options: { ...chain, hour: HOUR, journal, recorderStopped: true } },
      { stage: 'write-hour-files', options: { ...chain, hour: HOUR, out: root } },
      { stage: 'hour-manifest', options: { ...chain, hour: manifestHour, key } },
      { stage: 'chain-link' },
      { stage: 'sign', options: { key } },
      { stage: 'seal-commit' },
    ],
  }
}

t.test('the seven stages in a JSON pipeline seal the hour as pipe run seal-hour does', async (t) => {
  const byPipeline = join(dir, 'by-pipeline')
  const sealed = cli(['run', 'seal-hour', '--venue', 'binance', '--channel', 'trades', '--hour', HOUR, '--journal', journal, '--out', byPipeline, '--key', key, '--recorder-stopped'])
  t.equal(sealed.status, 0, sealed.stderr)
  const byStages = join(dir, 'by-stages')
  const file = join(dir, 'my-seal.json')
  await writeFile(file, JSON.stringify(pipelineFile(byStages, HOUR)))
  const r = cli(['run', file])
  t.equal(r.status, 0, r.stderr)
  for (const f of await readdir(hourDir(byPipeline))) t.same(await readFile(join(hourDir(byStages), f)), await readFile(join(hourDir(byPipeline), f)), `${f}: the same bytes`)
})

t.test('stages given different hours are refused before the hour lands', async (t) => {
  const root = join(dir, 'mismatch')
  const file = join(dir, 'mismatch.json')
  await writeFile(file, JSON.stringify(pipelineFile(root, '2026-10-03T15')))
  const r = cli(['run', file])
  t.equal(r.status, 2, r.stderr)
  t.match(r.stderr, /seal\.hour-mismatch/)
  t.equal(r.stderr.trim().split('\n').length, 1, 'one line')
  t.notOk(existsSync(hourDir(root)), 'the hour did not land')
  const day = join(hourDir(root), '..')
  t.same((await readdir(day).catch(() => [] as string[])).filter((f) => f.endsWith('.tmp')), [], 'no temporary folder is left')
})

/**
 * The CLI's errors name the real problem in one line, and what is not an error is not reported as one:
 * a reader that closes stdout early, flags before the pipeline's name, an unknown action, a malformed
 * digest, and `pipe describe` of every pipeline showing the stages it runs.
 */
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { childEnv } from './helpers/io.js'

const cli = fileURLToPath(new URL('../dist/bin/pipe.js', import.meta.url))
const run = (args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 60_000, env: childEnv() })
const VALID_RAW = fileURLToPath(new URL('./vectors/raw/valid/input.jsonl.zst', import.meta.url))

/** Runs the CLI with its stdout's reading end closed before it writes: every write fails with EPIPE. */
function withClosedStdout(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() })
  child.stdout.destroy()
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })))
}

t.test('a reader that closed stdout early (| head) is not a usage error: exit 0, nothing on stderr', async (t) => {
  for (const args of [['stages'], ['list'], ['describe', 'seal-hour']]) {
    const r = await withClosedStdout(args)
    t.equal(r.code, 0, `pipe ${args.join(' ')}: exit 0`)
    t.equal(r.stderr, '', `pipe ${args.join(' ')}: quiet`)
  }
})

t.test('flags may come before the pipeline name: the word after a flag is its value', async (t) => {
  const r = run(['run', '--file', VALID_RAW, 'verify-raw', '--json'])
  t.equal(r.status, 0, r.stderr)
  t.match(JSON.parse(r.stdout), { ok: true, findings: [] })
  const json = run(['run', '--json', 'verify-raw', '--file', VALID_RAW])
  t.equal(json.status, 0, `a switch of run itself takes no value: ${json.stderr}`)
  const unknown = run(['run', '--file', VALID_RAW, 'nope'])
  t.equal(unknown.status, 2)
  t.equal(unknown.stderr, 'pipe: no pipeline named "nope" (see pipe list) (usage.unknown-pipeline)\n', 'the pipeline is named, not the file')
})

t.test('pipe key names an unknown action before a missing flag', async (t) => {
  const bogus = run(['key', 'bogus'])
  t.equal(bogus.status, 2)
  t.equal(bogus.stderr, 'pipe: key: no action "bogus": pipe key new, or pipe key rotate (usage.unknown-action)\n')
  const noOut = run(['key', 'new'])
  t.equal(noOut.status, 2)
  t.equal(noOut.stderr, 'pipe: key new needs --out DIR, the directory for the private key and jwks.json (usage.missing-option)\n')
})

t.test('a malformed --blake3 is named as --blake3, before anything is read', async (t) => {
  for (const value of ['00', 'A'.repeat(64), 'g'.repeat(64), '0'.repeat(65)]) {
    const r = run(['run', 'verify-raw', '--file', VALID_RAW, '--blake3', value])
    t.equal(r.status, 2, value)
    t.equal(r.stderr, 'pipe: --blake3: must be a BLAKE3 digest: 64 lowercase hex digits (usage.bad-option)\n', value)
  }
})

t.test('pipe describe shows the stages of every pipeline, as a typical run builds them', async (t) => {
  const names = run(['list']).stdout.trim().split('\n').map((l) => l.split(/\s+/)[0]!)
  t.ok(names.length >= 7, `${names.length} pipelines`)
  for (const name of names) {
    const r = run(['describe', name])
    t.equal(r.status, 0, `${name}: ${r.stderr}`)
    const stages = r.stdout.split('\n').slice(r.stdout.split('\n').findIndex((l) => l.startsWith('stages, as run by: pipe run ' + name)) + 1).filter((l) => l.startsWith('  '))
    t.ok(stages.length >= 1, `${name}: lists its stages`)
    t.notMatch(r.stdout, /depends on the options/, `${name}: no stage list hidden`)
  }
  const seal = run(['describe', 'seal-hour']).stdout
  t.match(seal, /^stages, as run by: pipe run seal-hour --venue binance --channel trades --hour 2026-10-03T14 --journal journal\/ --out root\/ --key keys\/signing-key\.jwk\n  journal-read \{"dir":"journal\/","start":"2026-10-03T13:59:55\.000000000Z","end":"2026-10-03T15:00:05\.000000000Z"\}\n  pair-replicas \{"venue":"binance".*\n  write-hour-files \{"venue":"binance".*"out":"root\/".*\n  hour-manifest \{"venue":"binance".*"key":"keys\/signing-key\.jwk"\}\n  chain-link \{"field":"previous_manifest_blake3","algorithm":"blake3"\}\n  sign \{"key":"keys\/signing-key\.jwk"\}\n  seal-commit \{\}$/m, 'a seal is its steps, each a stage: journal read, pair, write, manifest, link, sign, commit')
})

t.test('--max-findings takes a whole number of at least 1', async (t) => {
  for (const value of ['0', '-1', '1.5', 'many']) {
    const r = run(['run', 'verify-raw', '--file', VALID_RAW, '--max-findings', value])
    t.equal(r.status, 2, value)
    t.equal(r.stderr, `pipe: --max-findings: must be a whole number of at least 1, got "${value}" (usage.bad-option)\n`, value)
  }
})

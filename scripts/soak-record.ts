/**
 * `npm run soak:record`: the crash-safety procedure of scripts/crash-record.ts with 200 SIGKILLs of
 * `pipe run record` (test/recorder-crash.test.ts runs it with 20-odd in the suite). Prints a line per kill,
 * what failed, and last `soak-record kills N ... failures F wall-s W`; exits 1 when a check failed. The work
 * folder is removed after a clean run and kept (its path printed) otherwise, for the journal and root to be read.
 *
 * Usage: node dist/scripts/soak-record.js [--kills 200] [--seed 1] [--time-scale 360] [--rate 1] [--dir DIR]
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CHECKS, crashRecord, summaryLine } from './crash-record.js'

const flag = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback
}
const positive = (name: string, fallback: string) => {
  const v = Number(flag(name, fallback))
  if (!(v > 0) || !Number.isFinite(v)) {
    console.error(`soak-record: --${name} must be a positive number`)
    process.exit(2)
  }
  return v
}

const kills = positive('kills', '200')
const seed = Number(flag('seed', '1'))
if (!Number.isSafeInteger(seed)) {
  console.error('soak-record: --seed must be an integer')
  process.exit(2)
}
const given = flag('dir', '')
const dir = given || (await mkdtemp(join(tmpdir(), 'pipe-soak-record-')))
const report = await crashRecord({
  dir, kills: Math.floor(kills), seed, timeScale: positive('time-scale', '360'), rate: positive('rate', '1'),
  log: (line) => console.log(line),
})
for (const h of report.hours) console.log(`hour ${h.hour} ${h.status} ${h.reasons.join(',') || '-'} covered a ${h.covered.a} b ${h.covered.b}`)
for (const line of report.errorLogs) console.log(`daemon logged: ${line}`)
const failed = CHECKS.filter((c) => report.failures[c].count > 0)
for (const c of failed) for (const m of report.failures[c].examples) console.log(`FAILED ${c}: ${m}`)
if (failed.length === 0 && !given) await rm(dir, { recursive: true, force: true })
else console.log(`work folder: ${dir}`)
console.log(summaryLine(report))
process.exitCode = failed.length > 0 ? 1 : 0

/**
 * Crash safety of `pipe run record` (issue 25, item 5): the built CLI records the venue simulator on a
 * simulated clock and seals its hours itself, and is killed with SIGKILL 20 times at seeded moments —
 * while starting, while recording or sealing, alone or with its seal-hour child, and just before an hour
 * ends — and restarted on the same journal and root; some kills also tear a record. The procedure and its
 * checks are scripts/crash-record.ts, which `npm run soak:record` runs with 200 kills. What must hold:
 * every frame the journal held after a kill is in a sealed raw file (and the raw files hold nothing else);
 * torn tails are reported where docs/journal.md says, and as `journal_torn`; each downtime is
 * `recorder_down` in its hours and covered by no replica; the chain verifies.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { CHECKS, crashRecord, summaryLine, type Check } from '../scripts/crash-record.js'

const SEED = 20261207
const KILLS = 20

const WHAT: Record<Check, string> = {
  crash: 'no daemon ends on its own, before or after a restart',
  stop: 'the last daemon stops on SIGTERM with exit 0',
  lost: 'no frame the journal held after a kill is gone from it after the restarts',
  unsealed: 'every journaled frame is a receipt of a sealed raw file',
  invented: 'every raw receipt is a journaled frame',
  torn: 'every torn tail is reported at its offset and as journal_torn in its hour, and only those',
  corrupt: 'no journal record is corrupt',
  silence: 'every downtime is recorder_down in each hour it touches',
  covered: 'no replica counts a downtime as covered',
  seal: 'every journaled hour is sealed, and no seal-hour is left running',
  verify: 'pipe run verify passes',
}

t.test(`${KILLS} SIGKILLs of pipe run record: nothing journaled is lost, every downtime is stated, the chain verifies`, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pipe-recorder-crash-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  // One kill just before an hour ends (it waits for the hour: seconds of the budget); the soak has more.
  const report = await crashRecord({ dir, kills: KILLS, seed: SEED, hourEndShare: 0.05 })
  t.comment(summaryLine(report))
  const count = (f: (k: (typeof report.kills)[number]) => boolean) => report.kills.filter(f).length
  t.comment(`kills: ${count((k) => k.kind === 'starting')} starting, ${count((k) => k.kind === 'recording')} recording, ${count((k) => k.kind === 'hour-end')} at an hour's end; ${count((k) => k.mode === 'group')} with the process group; ${count((k) => k.orphan)} left a seal-hour running; ${count((k) => k.tore)} tore a record`)

  t.equal(report.kills.length, KILLS)
  t.ok(report.kills.some((k) => k.kind === 'hour-end' && k.toHourEndMs !== undefined && k.toHourEndMs > 0), `a kill in the last heartbeat interval of an hour: ${JSON.stringify(report.kills.filter((k) => k.kind === 'hour-end'))}`)
  t.ok(report.kills.some((k) => k.mode === 'group') && report.kills.some((k) => k.mode === 'daemon'), 'kills of the daemon alone and of its process group')
  t.ok(report.framesBeforeKills > 1000, `${report.framesBeforeKills} frames held by the journal after the kills, checked against the raw files`)
  t.ok(report.tears.length > 0, `${report.tears.length} torn tails`)
  t.ok(report.downtimes.length > 0, `${report.downtimes.length} downtimes`)
  for (const r of ['a', 'b'] as const) t.ok(report.recorderStarts[r] >= report.recordingDaemons, `replica ${r}: a recorder-start for each daemon that recorded (${report.recorderStarts[r]} >= ${report.recordingDaemons})`)
  t.ok(report.hours.some((h) => h.hour.startsWith('2026-10-04')), `the hours cross a day: ${report.hours.map((h) => h.hour).join(' ')}`)
  for (const c of CHECKS) t.same(report.failures[c].examples, [], `${WHAT[c]}${report.failures[c].count > 0 ? ` (${report.failures[c].count} failures)` : ''}`)
  if (report.errorLogs.length > 0) t.comment(`the daemons logged errors:\n${report.errorLogs.join('\n')}`)
})

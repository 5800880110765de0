/**
 * The recorder's chrony clock (src/recorder/clock/: chronyc.ts, chrony-clock.ts, command.ts, none-clock.ts)
 * on recorded chronyc answers (test/fixtures/chronyc/) and fake clocks, so every case is deterministic: the
 * field order, the offset's sign, synchronized and NTS, each withholding reason of "Clock calibration"
 * (unsynchronized, too old, not NTS, stepped), the bound with the reading's error added, and a chronyc that
 * is missing, fails or hangs (fake chronyc scripts on PATH, killed after the timeout, the event loop free).
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { clockErrorBound } from '../src/formats/record/clock.js'
import { ChronyClock, probeChronyc } from '../src/recorder/clock/chrony-clock.js'
import {
  CHRONYC_ARGS,
  clockOffsetFromSystemTime,
  isNtsAuthenticated,
  isSynchronized,
  parseChronycReport,
  secondsToNs,
} from '../src/recorder/clock/chronyc.js'
import type { CommandResult, CommandRunner } from '../src/recorder/clock/command.js'
import { NoneClock } from '../src/recorder/clock/none-clock.js'
import { residentRunner } from '../src/recorder/clock/resident-runner.js'
import { RealtimeReader, type ClockSources } from '../src/recorder/clock/realtime.js'
import { withEnv } from './helpers/io.js'

const MS = 1_000_000n
const S = 1_000_000_000n
const FIXTURES = fileURLToPath(new URL('fixtures/chronyc/', import.meta.url))
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8')

t.test('tracking fields in chrony\'s order, exactly in nanoseconds', async (t) => {
  const r = parseChronycReport(fixture('nts-synchronized.csv'))
  t.same(r.tracking, {
    refId: '7F000001',
    name: '127.0.0.1',
    stratum: 2,
    refTime: 1_796_593_603_958_177_779n,
    systemTime: -1360n,
    rootDelay: 3134n,
    rootDispersion: 466n,
    leapStatus: 'Normal',
  })
  t.same(r.sources, [{ mode: '^', state: '*', name: '127.0.0.1' }])
  t.same(r.authdata, [{ name: '127.0.0.1', mechanism: 'NTS' }])
  const mixed = parseChronycReport(fixture('nts-beside-unauthenticated.csv'))
  t.equal(mixed.sources.length, 2, 'two sources')
  t.equal(mixed.authdata.length, 2, 'and two authdata lines')
})

t.test('seconds to ns: exact, never through floating point', async (t) => {
  t.equal(secondsToNs('0.000000001', 'nearest'), 1n)
  t.equal(secondsToNs('-0.250000924', 'nearest'), -250_000_924n)
  t.equal(secondsToNs('1796593603.958177779', 'nearest'), 1_796_593_603_958_177_779n, 'a time since the epoch: 19 digits, beyond a double')
  t.equal(secondsToNs('1', 'ceil'), S)
  t.equal(secondsToNs('0.0000000011', 'ceil'), 2n, 'past the ninth digit rounds up with ceil')
  t.equal(secondsToNs('0.0000000011', 'nearest'), 1n)
  t.equal(secondsToNs('0.0000000015', 'nearest'), 2n)
  t.equal(secondsToNs('-0.0000000015', 'nearest'), -2n, 'half away from zero')
  t.equal(secondsToNs('-0.0000000011', 'ceil'), -1n, 'ceil is toward +∞')
  for (const bad of ['', 'nan', '1e-9', '0.1.2', ' 1']) t.throws(() => secondsToNs(bad, 'nearest'), { name: 'ChronycParseError' }, JSON.stringify(bad))
})

t.test('the offset\'s sign: chrony\'s System time is positive when the host clock is slow; clock_offset is positive when it is fast', async (t) => {
  for (const [name, word] of [['offset-slow', 'slow'], ['offset-fast', 'fast']] as const) {
    const human = /System time\s*:\s*([\d.]+) seconds (slow|fast) of NTP time/.exec(fixture(`${name}.txt`))!
    t.equal(human[2], word, `${name}.txt says "${word}"`)
    const csv = parseChronycReport(fixture(`${name}.csv`)).tracking.systemTime
    const magnitude = secondsToNs(human[1]!, 'nearest')
    // The two commands ran a moment apart: the same number here, to the nanosecond.
    t.equal(csv, word === 'slow' ? magnitude : -magnitude, `CSV ${csv} ns: ${word === 'slow' ? 'positive' : 'negative'} when ${word}`)
    const offset = clockOffsetFromSystemTime(csv)
    t.ok(word === 'slow' ? offset < 0n : offset > 0n, `clock_offset ${offset} ns: ${word === 'slow' ? 'negative, the host clock behind UTC' : 'positive, the host clock ahead'}`)
  }
  // The client was told its source reads 0.25 s ahead of what it measures: it believes it is 0.25 s slow.
  t.equal(clockOffsetFromSystemTime(parseChronycReport(fixture('offset-slow.csv')).tracking.systemTime), -249_999_821n)
  t.equal(clockOffsetFromSystemTime(parseChronycReport(fixture('offset-fast.csv')).tracking.systemTime), 250_000_924n)
})

t.test('synchronized: leap status not "Not synchronised", and not chronyd\'s own local clock', async (t) => {
  t.equal(isSynchronized(parseChronycReport(fixture('nts-synchronized.csv')).tracking), true)
  t.equal(isSynchronized(parseChronycReport(fixture('no-nts.csv')).tracking), true)
  t.equal(isSynchronized(parseChronycReport(fixture('unsynchronized.csv')).tracking), false, 'Not synchronised')
  t.equal(isSynchronized(parseChronycReport(fixture('local-reference.csv')).tracking), false, 'local stratum 1 says Normal, but follows nothing')
  const leap = parseChronycReport(fixture('nts-synchronized.csv')).tracking
  t.equal(isSynchronized({ ...leap, leapStatus: 'Insert second' }), true, 'a leap second announced is still synchronized')
  t.equal(isSynchronized({ ...leap, leapStatus: 'Invalid' }), false)
})

t.test('NTS: the selected source and every source combined with it authenticated with NTS', async (t) => {
  t.equal(isNtsAuthenticated(parseChronycReport(fixture('nts-synchronized.csv'))), true)
  t.equal(isNtsAuthenticated(parseChronycReport(fixture('no-nts.csv'))), false, 'no authentication')
  t.equal(isNtsAuthenticated(parseChronycReport(fixture('unsynchronized.csv'))), false, 'nothing selected')
  t.equal(isNtsAuthenticated(parseChronycReport(fixture('local-reference.csv'))), false, 'no sources at all')
  const mixed = fixture('nts-beside-unauthenticated.csv')
  t.equal(isNtsAuthenticated(parseChronycReport(mixed)), true, 'an unauthenticated source chronyd does not use (?) does not matter')
  t.equal(isNtsAuthenticated(parseChronycReport(mixed.replace('^,?,127.0.0.2', '^,+,127.0.0.2'))), false, 'one it combines (+) does')
  t.equal(isNtsAuthenticated(parseChronycReport(mixed.replace('^,?,127.0.0.2', '^,-,127.0.0.2'))), true, 'one it does not combine (-) does not')
  const nts = fixture('nts-synchronized.csv')
  t.equal(isNtsAuthenticated(parseChronycReport(nts.replace('127.0.0.1,NTS', '127.0.0.1,SK'))), false, 'a symmetric key is not NTS')
  t.equal(isNtsAuthenticated(parseChronycReport(nts.replace(',127.0.0.1,2,', ',127.0.0.9,2,'))), false, 'tracking names another reference (the answers changed between commands)')
  const refclock = '50505300,PPS,1,1796593603.958177779,-0.000000100,0,0,0,0,0,0.000000000,0.000001000,16.0,Normal\n#,*,PPS,0,4,377,3,-0.000000100,-0.000000100,0.000000200\n'
  t.equal(isNtsAuthenticated(parseChronycReport(refclock)), false, 'a reference clock is not NTS')
})

t.test('answers that do not parse are refused, with the reason', async (t) => {
  t.throws(() => parseChronycReport(''), /printed nothing/)
  t.throws(() => parseChronycReport('506 Cannot talk to daemon\n'), /14/)
  t.throws(() => parseChronycReport(fixture('nts-synchronized.csv').replace(',0.000003134,', ',-0.000003134,')), /root delay is negative/)
  t.throws(() => parseChronycReport(fixture('nts-synchronized.csv') + 'a,b\n'), /not 10/)
})

/** Fake clocks: real-time = monotonic + offset; each read advances the monotonic clock 50 ns. */
class FakeClocks implements ClockSources {
  mono = 5000n * S
  offset: bigint
  constructor(realtimeNow: bigint) {
    this.offset = realtimeNow - this.mono
  }
  monotonicNs(): bigint {
    this.mono += 50n
    return this.mono
  }
  realtimeMs(): number {
    this.mono += 50n
    return Number((this.mono + this.offset) / MS)
  }
}

type Answer = string | Partial<CommandResult>

/**
 * A runner that answers with `answers` in turn (the last repeats; `answers` may be replaced as the test
 * goes), recording the calls. A string is chronyc's stdout with exit 0; an object a failure.
 */
function recorded(...initial: Answer[]): CommandRunner & { calls: string[][]; answers: Answer[] } {
  const calls: string[][] = []
  let index = 0
  const runner = Object.assign(
    async (command: string, args: readonly string[]) => {
      calls.push([command, ...args])
      const a = runner.answers[Math.min(index++, runner.answers.length - 1)]!
      return typeof a === 'string' ? { code: 0, stdout: a, stderr: '', timedOut: false } : { code: 1, stdout: '', stderr: '', timedOut: false, ...a }
    },
    { calls, answers: initial },
  )
  return runner
}

/** A chrony clock on recorded answers and fake clocks reading 0.3 s after the nts fixture's reference time. */
function fakeChrony(...answers: Answer[]) {
  const refTime = parseChronycReport(fixture('nts-synchronized.csv')).tracking.refTime
  const clocks = new FakeClocks(refTime + 300n * MS)
  const run = recorded(...answers)
  const clock = new ChronyClock({ run, reader: new RealtimeReader(clocks), host: '/run/test/chronyd.sock' })
  return { clocks, clock, run, refTime }
}

t.test('a synchronized NTS sample: clock_offset, and the bound of "Clock calibration" plus the reading\'s error', async (t) => {
  const { clocks, clock, run } = fakeChrony(fixture('nts-synchronized.csv'))
  await clock.poll()
  t.same(run.calls[0], ['chronyc', '-h', '/run/test/chronyd.sock', ...CHRONYC_ARGS], 'one chronyc, three commands, the socket given')
  const sample = clock.status().sample!
  t.equal(sample.offset, 1360n, 'System time -0.000001360 (fast): clock_offset +1,360 ns')
  t.equal(sample.rootDelay, 3134n)
  t.equal(sample.rootDispersion, 466n)
  t.equal(sample.synchronized, true)
  t.equal(sample.nts, true)
  clocks.mono += 2n * S
  const reading = clock.now()
  const fields = clock.receiptClock(reading)
  const age = reading.monotonic - sample.readAt
  t.ok(age > 2n * S && age < 2n * S + MS, 'aged 2 s since the read started')
  t.same(fields, { clockOffset: 1360n, clockErrorBound: clockErrorBound(1360n, 466n, 3134n, age) + reading.readingError })
  t.ok(reading.readingError < 1000n, `the reading's error (${reading.readingError} ns) is small once refined`)
  t.same(clock.status().withheld, undefined, 'status: nothing withheld')
})

t.test('measuredAt: chrony\'s reference time (UTC) on the monotonic clock, never later than the truth', async (t) => {
  const { clocks, clock, refTime } = fakeChrony(fixture('nts-synchronized.csv'))
  await clock.poll()
  const sample = clock.status().sample!
  // The host clock read refTime + clock_offset at the measurement; on the monotonic clock:
  const truth = refTime + 1360n - clocks.offset
  t.ok(sample.measuredAt <= truth && truth - sample.measuredAt < 2n * MS, `${sample.measuredAt} ≤ ${truth}, within the reading's error`)
  t.ok(sample.measuredAt < sample.readAt, 'measured before it was read')
})

t.test('a reference time ahead of the host clock is capped at the read that first showed it', async (t) => {
  const future = (parseChronycReport(fixture('nts-synchronized.csv')).tracking.refTime + 10n * S) / MS
  const text = fixture('nts-synchronized.csv').replace('1796593603.958177779', `${future / 1000n}.${String(future % 1000n).padStart(3, '0')}000000`)
  const { clock } = fakeChrony(text)
  await clock.poll()
  const sample = clock.status().sample!
  t.ok(sample.measuredAt > sample.readAt && sample.measuredAt - sample.readAt < MS, 'at the end of the read, not 10 s on')
})

t.test('withheld while chronyd is unsynchronized, or follows only its own clock', async (t) => {
  for (const name of ['unsynchronized.csv', 'local-reference.csv']) {
    const { clock } = fakeChrony(fixture(name))
    await clock.poll()
    t.same(clock.receiptClock(clock.now()), { withheld: 'unsynchronized' }, name)
    t.equal(clock.status().withheld, 'unsynchronized')
  }
})

t.test('withheld for a source without NTS', async (t) => {
  const { clock } = fakeChrony(fixture('no-nts.csv'))
  await clock.poll()
  t.same(clock.receiptClock(clock.now()), { withheld: 'not-nts' })
})

t.test('withheld when the sample is older than 16 s (its reads failing since)', async (t) => {
  const { clocks, clock } = fakeChrony(fixture('nts-synchronized.csv'), { code: 1, stderr: '506 Cannot talk to daemon' })
  await clock.poll()
  const readAt = clock.status().sample!.readAt
  await clock.poll()
  t.equal(clock.status().failures, 1)
  t.match(clock.status().lastError!.message, /exited with 1: 506 Cannot talk to daemon/)
  clocks.mono = readAt + 16n * S - 200n
  t.ok('clockOffset' in clock.receiptClock(clock.now()), 'at 16 s, still bounded')
  clocks.mono = readAt + 16n * S + 1n
  t.same(clock.receiptClock(clock.now()), { withheld: 'sample-too-old' }, 'past 16 s, withheld')
})

t.test('a step of the real-time clock: withheld until chronyd updates from a measurement after it', async (t) => {
  const { clocks, clock, run, refTime } = fakeChrony(fixture('nts-synchronized.csv'))
  await clock.poll()
  t.ok('clockOffset' in clock.receiptClock(clock.now()), 'bounded before the step')
  clocks.offset -= 3n * S // the real-time clock steps back 3 s
  const reading = clock.now()
  const step = clock.status().lastStep!
  t.ok(step.change <= -3n * S + MS, `the step is seen: ${step.change} ns`)
  t.same(clock.receiptClock(reading), { withheld: 'stepped' })
  t.equal(clock.status().steps, 1)

  const at = (ns: bigint) => `${ns / S}.${String(ns % S).padStart(9, '0')}`
  const withRefTime = (ns: bigint) => fixture('nts-synchronized.csv').replace(at(refTime), at(ns))
  // A step chronyd did not make: its reference time is the old one, which now converts 3 s late; it was
  // seen before the step, and that caps it.
  await clock.poll()
  t.same(clock.receiptClock(clock.now()), { withheld: 'stepped' }, 'the measurement from before the step, unchanged')
  // A step chronyd made: it shifts its reference time with it (reference.c handle_slew); the measurement
  // still dates before the step.
  run.answers = [withRefTime(refTime - 3n * S)]
  await clock.poll()
  t.same(clock.receiptClock(clock.now()), { withheld: 'stepped' }, 'the measurement from before the step, shifted')
  // A measurement 0.2 s after the step was seen.
  clocks.mono += 500n * MS
  run.answers = [withRefTime(clocks.mono - 300n * MS + clocks.offset)]
  await clock.poll()
  t.ok('clockOffset' in clock.receiptClock(clock.now()), 'bounded again after an update from a later measurement')
})

t.test('a receipt read before the latest sample was read rests on the sample before it', async (t) => {
  const { clocks, clock } = fakeChrony(fixture('nts-synchronized.csv'), fixture('no-nts.csv'))
  await clock.poll()
  clocks.mono += S
  const early = clock.now()
  await clock.poll()
  t.ok('clockOffset' in clock.receiptClock(early), 'the earlier (NTS) sample, no throw')
  t.same(clock.receiptClock(clock.now()), { withheld: 'not-nts' }, 'a later receipt: the latest sample')
  const fresh = fakeChrony(fixture('nts-synchronized.csv'))
  const before = fresh.clock.now()
  await fresh.clock.poll()
  t.same(fresh.clock.receiptClock(before), { withheld: 'no-sample' }, 'before the first sample: none')
})

t.test('failures are kept in status, never thrown: missing, exiting, unparsable, timed out', async (t) => {
  const cases: [Partial<CommandResult> | string, RegExp][] = [
    [{ error: Object.assign(new Error('spawn chronyc ENOENT'), { code: 'ENOENT' }) }, /could not be run: spawn chronyc ENOENT/],
    [{ code: 1, stderr: '506 Cannot talk to daemon\n' }, /exited with 1: 506 Cannot talk to daemon/],
    ['hello\n', /did not parse: tracking has 1 fields/],
    [{ code: null, timedOut: true }, /did not answer within 2000 ms and was killed/],
  ]
  for (const [answer, message] of cases) {
    const { clock } = fakeChrony(answer)
    await clock.poll()
    const status = clock.status()
    t.match(status.lastError?.message, message)
    t.equal(status.failures, 1)
    t.equal(status.reads, 0)
    t.same(clock.receiptClock(clock.now()), { withheld: 'no-sample' })
  }
})

t.test('--clock none: receive times at nanosecond resolution, clock fields always withheld', async (t) => {
  const clock = new NoneClock()
  await clock.start()
  const a = clock.now()
  const b = clock.now()
  t.ok(b.monotonic > a.monotonic && b.receiveTime >= a.receiveTime)
  // The error is the width of the brackets across a millisecond edge read at start: a few hundred ns, unless
  // the thread was preempted inside one, so the best of three starts must be well under Date.now()'s 1 ms.
  const errors = [a.readingError]
  for (let i = 0; i < 2; i++) {
    const again = new NoneClock()
    await again.start()
    errors.push(again.now().readingError)
    await again.stop()
  }
  t.ok(errors.some((e) => e < 100_000n), `reading errors ${errors.join(', ')} ns`)
  t.same(clock.receiptClock(a), { withheld: 'no-sample' })
  t.match(clock.status(), { source: 'none', withheld: 'no-sample', steps: 0 })
  await clock.stop()
})

// Real processes: fake chronyc scripts, spawned by the clock's own runner.
const bin = mkdtempSync(join(tmpdir(), 'pipe-chronyc-'))
t.teardown(() => rmSync(bin, { recursive: true, force: true }))
/** A shell script named `chronyc` in a folder of its own; returns the folder. */
function fakeChronyc(name: string, script: string): string {
  const dir = join(bin, name)
  mkdirSync(dir)
  writeFileSync(join(dir, 'chronyc'), `#!/bin/sh\n${script}\n`)
  chmodSync(join(dir, 'chronyc'), 0o755)
  return dir
}

t.test('a chronyc on PATH that answers: a sample, and the probe says it answered', async (t) => {
  const dir = fakeChronyc('answers', `exec cat '${join(FIXTURES, 'nts-synchronized.csv')}'`)
  await withEnv('PATH', `${dir}:${process.env.PATH}`, async () => {
    t.same(await probeChronyc(), { answered: true })
    const clock = new ChronyClock()
    await clock.poll()
    t.equal(clock.status().sample?.nts, true)
    t.ok('clockOffset' in clock.receiptClock(clock.now()))
    await clock.stop()
  })
})

t.test('chronyc runs in one resident shell: the recorder forks once, not at every poll', async (t) => {
  const dir = fakeChronyc('counting', `echo x >> '${join(bin, 'runs')}'; exec cat '${join(FIXTURES, 'nts-synchronized.csv')}'`)
  const run = residentRunner()
  const args = ['-c', '-m', 'tracking', 'sources', 'authdata']
  const first = await run(join(dir, 'chronyc'), args, { timeoutMs: 5000 })
  const pid = run.pid
  t.equal(first.code, 0)
  t.equal(first.stdout, fixture('nts-synchronized.csv'), 'the output exactly, without the end marker')
  for (let i = 0; i < 5; i++) t.equal((await run(join(dir, 'chronyc'), args, { timeoutMs: 5000 })).code, 0)
  t.equal(run.pid, pid, 'the same shell all along')
  t.equal(readFileSync(join(bin, 'runs'), 'utf8'), 'x\n'.repeat(6), 'chronyc ran six times')
  const failing = fakeChronyc('failing-resident', 'echo "506 Cannot talk to daemon" >&2; exit 1')
  t.same(await run(join(failing, 'chronyc'), args, { timeoutMs: 5000 }), { code: 1, stdout: '506 Cannot talk to daemon\n', stderr: '', timedOut: false }, 'another command: its exit status, stderr in stdout')
  t.not(run.pid, pid, 'in a new shell')
  run.close()
  t.equal(run.pid, undefined, 'closed')
})

t.test('no chronyc at all: the probe says so; the clock keeps the reason', async (t) => {
  await withEnv('PATH', join(bin, 'nothing-here'), async () => {
    const probe = await probeChronyc()
    t.equal(probe.answered, false)
    t.match(probe, { reason: /could not be run: spawn chronyc ENOENT/ })
    const clock = new ChronyClock()
    await clock.poll()
    t.match(clock.status().lastError?.message, /exited with 127: .*chronyc: not found/, 'the resident shell finds no chronyc')
    await clock.stop()
  })
})

t.test('a chronyc that fails: the probe says why', async (t) => {
  const dir = fakeChronyc('failing', 'echo "506 Cannot talk to daemon" >&2; exit 1')
  t.same(await probeChronyc({ chronyc: join(dir, 'chronyc') }), { answered: false, reason: 'chronyc exited with 1: 506 Cannot talk to daemon' })
})

/** Whether process `pid` has ended: no such process, or a zombie waiting for a reaper (this sandbox's init may not reap). */
function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').startsWith('Z')
  } catch {
    return true
  }
}

t.test('a chronyc that hangs is killed after the timeout, with its children, and the event loop stays free', async (t) => {
  const pidFile = join(bin, 'sleep.pid')
  const dir = fakeChronyc('hanging', `sleep 30 & echo $! > '${pidFile}'; wait`)
  await withEnv('PATH', `${dir}:${process.env.PATH}`, async () => {
    const clock = new ChronyClock({ timeoutMs: 300 })
    const delay = monitorEventLoopDelay({ resolution: 10 })
    delay.enable()
    const started = Date.now()
    await clock.poll()
    const took = Date.now() - started
    delay.disable()
    t.ok(took >= 290 && took < 2000, `gave up after ${took} ms`)
    t.match(clock.status().lastError?.message, /did not answer within 300 ms and was killed/)
    t.ok(delay.max < 100e6, `the event loop was never held more than ${(delay.max / 1e6).toFixed(1)} ms`)
    const sleepPid = Number(readFileSync(pidFile, 'utf8'))
    await new Promise((resolve) => setTimeout(resolve, 100))
    t.ok(gone(sleepPid), 'the script\'s child is gone too')
  })
})

t.test('start polls on its interval; stop ends it and kills a read in flight', async (t) => {
  const answering = join(fakeChronyc('answering', `exec cat '${join(FIXTURES, 'nts-synchronized.csv')}'`), 'chronyc')
  const clock = new ChronyClock({ chronyc: answering, intervalMs: 50 })
  await clock.start()
  t.equal(clock.status().reads, 1, 'start took the first sample')
  await new Promise((resolve) => setTimeout(resolve, 400))
  await clock.stop()
  const reads = clock.status().reads
  t.ok(reads >= 3, `${reads} reads in 400 ms at 50 ms intervals`)
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.equal(clock.status().reads, reads, 'none after stop')

  const hanging = join(fakeChronyc('hanging-stop', 'exec sleep 30'), 'chronyc')
  const slow = new ChronyClock({ chronyc: hanging, intervalMs: 10, timeoutMs: 60_000 })
  const starting = slow.start()
  await new Promise((resolve) => setTimeout(resolve, 100))
  const stopped = Date.now()
  await slow.stop()
  await starting
  t.ok(Date.now() - stopped < 1000, 'stop did not wait for the hung chronyc')
  t.equal(slow.status().failures, 0, 'a read killed by stop is not a failure')
})

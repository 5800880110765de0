/**
 * The recorder's clock when chrony keeps the host's time: it reads the real-time clock at nanosecond
 * resolution (realtime.ts), asks chronyc for the time daemon's state every second or so, keeps the latest
 * sample, and gives each receipt the clock fields "Clock calibration" allows (src/formats/record/clock.ts),
 * the bound widened by the reading's own error. docs/recorder-clock.md.
 *
 * A read never holds up the event loop: chronyc runs in a resident shell's child process, with a timeout
 * (resident-runner.ts). A failed read keeps the previous sample, which ages out after 16 s; nothing throws
 * into the recorder.
 */
import { receiptClock, type ReceiptClock, type TimeDaemonSample } from '../../formats/record/clock.js'
import { CHRONYC_ARGS, parseChronycReport, sampleFromReport } from './chronyc.js'
import { runCommand, type CommandResult, type CommandRunner } from './command.js'
import { RealtimeReader } from './realtime.js'
import { residentRunner, type ResidentRunner } from './resident-runner.js'
import type { ClockReading, ClockStatus, RecorderClock } from './recorder-clock.js'

export interface ChronyClockOptions {
  /** The chronyc command. Default `chronyc` on PATH. */
  chronyc?: string
  /**
   * The chronyd to ask (`chronyc -h`): its command socket's path or an address. Default chronyc's own
   * (/run/chrony/chronyd.sock, then 127.0.0.1). authdata needs the socket: over UDP chronyd refuses it.
   */
  host?: string
  /** Time from the end of one read to the start of the next. Default 1000 ms. */
  intervalMs?: number
  /** A read that takes longer is killed and counts as failed. Default 2000 ms. */
  timeoutMs?: number
  /** Runs chronyc. Default: through one resident shell (resident-runner.ts); tests give recorded outputs. */
  run?: CommandRunner
  /** Reads the real-time clock; tests give fake clocks. */
  reader?: RealtimeReader
  /**
   * A poll first narrows the reading's interval when it is wider than this, spinning across a millisecond
   * edge (under 1 ms). Between steps it stays narrow, so this costs nothing but at start and after a step.
   * Default 1,000 ns.
   */
  targetReadingErrorNs?: bigint
}

export class ChronyClock implements RecorderClock {
  private readonly chronyc: string
  private readonly args: readonly string[]
  private readonly intervalMs: number
  private readonly timeoutMs: number
  private readonly run: CommandRunner
  /** The default runner's shell, closed by stop(). */
  private readonly resident: ResidentRunner | undefined
  private readonly reader: RealtimeReader
  private readonly targetReadingErrorNs: bigint
  /** The latest sample, and the one before it for a receipt read while the latest was being read. */
  private latest: TimeDaemonSample | undefined
  private previous: TimeDaemonSample | undefined
  /** chronyd's latest reference time, and the monotonic time by which we had seen it. */
  private reference: { refTime: bigint; seenBy: bigint } | undefined
  private reads = 0
  private failures = 0
  private lastError: { at: bigint; message: string } | undefined
  private timer: NodeJS.Timeout | undefined
  private polling: Promise<void> | undefined
  private abort: AbortController | undefined

  constructor(options: ChronyClockOptions = {}) {
    this.chronyc = options.chronyc ?? 'chronyc'
    this.args = options.host === undefined ? CHRONYC_ARGS : ['-h', options.host, ...CHRONYC_ARGS]
    this.intervalMs = options.intervalMs ?? 1000
    this.timeoutMs = options.timeoutMs ?? 2000
    this.resident = options.run ? undefined : residentRunner()
    this.run = options.run ?? this.resident!
    this.reader = options.reader ?? new RealtimeReader()
    this.targetReadingErrorNs = options.targetReadingErrorNs ?? 1000n
  }

  now(): ClockReading {
    return this.reader.read()
  }

  receiptClock(reading: ClockReading): ReceiptClock {
    const fields = receiptClock(this.sampleAt(reading.monotonic), reading.monotonic, this.reader.lastStep?.at)
    if ('withheld' in fields) return fields
    return { clockOffset: fields.clockOffset, clockErrorBound: fields.clockErrorBound + reading.readingError }
  }

  /** Anchors the reading, takes the first sample (a failure is kept in status(), not thrown), then polls. */
  async start(): Promise<void> {
    if (this.abort) return
    this.abort = new AbortController()
    this.reader.refineTo(this.targetReadingErrorNs)
    await this.poll()
    this.schedule()
  }

  async stop(): Promise<void> {
    this.abort?.abort()
    clearTimeout(this.timer)
    this.timer = undefined
    await this.polling
    this.resident?.close()
  }

  status(): ClockStatus {
    const reading = this.reader.read()
    const fields = this.receiptClock(reading)
    return {
      source: 'chrony',
      ...(this.latest && { sample: this.latest }),
      ...('withheld' in fields && { withheld: fields.withheld }),
      ...(this.lastError && { lastError: this.lastError }),
      reads: this.reads,
      failures: this.failures,
      ...(this.reader.lastStep && { lastStep: this.reader.lastStep }),
      steps: this.reader.steps,
      readingError: reading.readingError,
    }
  }

  /**
   * One read of chronyd: its sample replaces the latest. The sample's age counts from the monotonic time
   * at which the read started. Exposed for tests, which drive reads one at a time.
   */
  poll(): Promise<void> {
    this.polling = this.readOnce().catch((e: unknown) => this.fail(this.reader.read().monotonic, `unexpected: ${String(e)}`))
    return this.polling
  }

  private async readOnce(): Promise<void> {
    this.reader.refineTo(this.targetReadingErrorNs, 1)
    const readAt = this.reader.read().monotonic
    const result = await this.run(this.chronyc, this.args, { timeoutMs: this.timeoutMs, ...(this.abort && { signal: this.abort.signal }) })
    const answeredBy = this.reader.read().monotonic
    const failure = describeFailure(result, this.timeoutMs)
    if (failure !== undefined) return this.fail(readAt, failure)
    let report
    try {
      report = parseChronycReport(result.stdout)
    } catch (e) {
      return this.fail(readAt, `chronyc's answer did not parse: ${(e as Error).message}`)
    }
    const sample = sampleFromReport(report, readAt, (realtime) => this.reader.earliestMonotonic(realtime))
    // chronyd cannot report a measurement before making it: by the end of the read that first shows a
    // reference time, it had been measured. This caps measuredAt should the conversion run late.
    if (this.reference?.refTime !== report.tracking.refTime) this.reference = { refTime: report.tracking.refTime, seenBy: answeredBy }
    if (sample.measuredAt > this.reference.seenBy) sample.measuredAt = this.reference.seenBy
    this.previous = this.latest
    this.latest = sample
    this.reads++
  }

  private fail(at: bigint, message: string): void {
    if (this.abort?.signal.aborted) return
    this.failures++
    this.lastError = { at, message }
  }

  private schedule(): void {
    if (this.abort?.signal.aborted) return
    this.timer = setTimeout(() => void this.poll().then(() => this.schedule()), this.intervalMs)
    // The recorder's sockets keep the process alive, not its clock.
    this.timer.unref()
  }

  /** The latest sample read no later than `monotonic`: a receipt never rests on a sample read after it. */
  private sampleAt(monotonic: bigint): TimeDaemonSample | undefined {
    if (this.latest && this.latest.readAt <= monotonic) return this.latest
    if (this.previous && this.previous.readAt <= monotonic) return this.previous
    return undefined
  }
}

function describeFailure(result: CommandResult, timeoutMs: number): string | undefined {
  if (result.error) return `chronyc could not be run: ${result.error.message}`
  if (result.timedOut) return `chronyc did not answer within ${timeoutMs} ms and was killed`
  if (result.aborted) return 'chronyc was killed: the clock stopped'
  if (result.code !== 0) return `chronyc exited with ${result.code}: ${(result.stderr.trim() || result.stdout.trim()).slice(0, 500)}`
  return undefined
}

export type ChronycProbe = { answered: true } | { answered: false; reason: string }

/**
 * Whether chronyc is installed and chronyd answers it (`chronyc -c tracking`): the caller picks the clock
 * (`--clock none` when not).
 */
export async function probeChronyc(options: Pick<ChronyClockOptions, 'chronyc' | 'host' | 'timeoutMs' | 'run'> = {}): Promise<ChronycProbe> {
  const timeoutMs = options.timeoutMs ?? 2000
  const args = [...(options.host === undefined ? [] : ['-h', options.host]), '-c', 'tracking']
  const result = await (options.run ?? runCommand)(options.chronyc ?? 'chronyc', args, { timeoutMs })
  const failure = describeFailure(result, timeoutMs)
  if (failure !== undefined) return { answered: false, reason: failure }
  try {
    parseChronycReport(result.stdout)
  } catch (e) {
    return { answered: false, reason: `chronyc's answer did not parse: ${(e as Error).message}` }
  }
  return { answered: true }
}

/**
 * chronyc's CSV answers read into the time daemon's sample (src/formats/record/clock.ts TimeDaemonSample).
 * Kept apart from the polling so that every rule — field order, the offset's sign, what counts as
 * synchronized and as NTS — is a pure function tested on recorded outputs (test/fixtures/chronyc/).
 *
 * One chronyc process answers three commands, `chronyc -c -m tracking sources authdata` (chrony 4.x,
 * client.c): `tracking` is one line of 14 fields; `sources` one line of 10 per source, starting with its
 * mode `^`, `=` or `#`; `authdata` one line of 10 per NTP source, its second field the authentication
 * mechanism (`-`, `SK`, `NTS`). In CSV mode chronyc prints names as addresses (no DNS), times as
 * seconds.nanoseconds since the epoch and seconds as decimals with nine fraction digits.
 */
import type { TimeDaemonSample } from '../../formats/record/clock.js'

export const CHRONYC_ARGS = ['-c', '-m', 'tracking', 'sources', 'authdata'] as const

/** `chronyc -c tracking`, fields in chrony's order (client.c process_cmd_tracking). */
export interface ChronyTracking {
  /** Reference ID, 8 hex digits: 7F7F0101 is chronyd's own local clock (`local` directive). */
  refId: string
  /** The reference's address (or reference clock's refid); empty when there is none. */
  name: string
  stratum: number
  /** When the clock was last updated from a measurement, ns since the epoch (UTC, chrony's estimate). */
  refTime: bigint
  /**
   * chronyd's "System time", ns, in chrony's sign: the correction still to apply to the system clock,
   * positive when the system clock is slow (the human format says "slow of NTP time"). Not a clock_offset.
   */
  systemTime: bigint
  /** Root delay and root dispersion, ns, rounded up. */
  rootDelay: bigint
  rootDispersion: bigint
  /** `Normal`, `Insert second`, `Delete second` or `Not synchronised`. */
  leapStatus: string
}

export interface ChronySource {
  /** `^` server, `=` peer, `#` reference clock. */
  mode: string
  /** `*` selected, `+` combined with it, `-` not combined, `?` unusable, `x` falseticker, `~` too variable. */
  state: string
  name: string
}

export interface ChronyAuth {
  name: string
  /** `-` none, `SK` symmetric key, `NTS` Network Time Security. */
  mechanism: string
}

export interface ChronycReport {
  tracking: ChronyTracking
  sources: ChronySource[]
  authdata: ChronyAuth[]
}

/** The reference ID chronyd reports when it serves its own clock (`local`), synchronized to nothing. */
const LOCAL_REFERENCE_ID = '7F7F0101'

const SYNCHRONIZED_LEAP_STATUSES = new Set(['Normal', 'Insert second', 'Delete second'])

export class ChronycParseError extends Error {
  override name = 'ChronycParseError'
}

/**
 * Decimal seconds as chronyc prints them ("-0.000012345", "1796593398.803733617") to integer ns, exactly:
 * through floating point a nine-digit fraction could come out a nanosecond off. Digits past the ninth
 * (chronyc prints none) round up with 'ceil', to the nearest with 'nearest'.
 */
export function secondsToNs(text: string, rounding: 'ceil' | 'nearest'): bigint {
  const m = /^([+-]?)(\d+)(?:\.(\d+))?$/.exec(text)
  if (!m) throw new ChronycParseError(`not a number of seconds: ${JSON.stringify(text)}`)
  const fraction = m[3] ?? ''
  let ns = BigInt(m[2]!) * 1_000_000_000n + BigInt(fraction.slice(0, 9).padEnd(9, '0'))
  const rest = fraction.slice(9)
  if (/[1-9]/.test(rest) && (rounding === 'ceil' ? m[1] !== '-' : rest[0]! >= '5')) ns += 1n
  return m[1] === '-' ? -ns : ns
}

/** Reads the output of `chronyc -c -m tracking sources authdata`. */
export function parseChronycReport(text: string): ChronycReport {
  const lines = text.split('\n').filter((line) => line !== '')
  const first = lines[0]
  if (first === undefined) throw new ChronycParseError('chronyc printed nothing')
  const t = first.split(',')
  if (t.length !== 14) throw new ChronycParseError(`tracking has ${t.length} fields, not 14: ${JSON.stringify(first)}`)
  const stratum = Number(t[2])
  if (!Number.isInteger(stratum)) throw new ChronycParseError(`stratum is not an integer: ${JSON.stringify(t[2])}`)
  const tracking: ChronyTracking = {
    refId: t[0]!,
    name: t[1]!,
    stratum,
    refTime: secondsToNs(t[3]!, 'nearest'),
    systemTime: secondsToNs(t[4]!, 'nearest'),
    rootDelay: nonNegative('root delay', secondsToNs(t[10]!, 'ceil')),
    rootDispersion: nonNegative('root dispersion', secondsToNs(t[11]!, 'ceil')),
    leapStatus: t[13]!,
  }
  const sources: ChronySource[] = []
  const authdata: ChronyAuth[] = []
  for (const line of lines.slice(1)) {
    const f = line.split(',')
    if (f.length !== 10) throw new ChronycParseError(`a sources or authdata line has ${f.length} fields, not 10: ${JSON.stringify(line)}`)
    // sources come first and each starts with its mode; authdata starts with a name or address.
    if (authdata.length === 0 && ['^', '=', '#'].includes(f[0]!)) sources.push({ mode: f[0]!, state: f[1]!, name: f[2]! })
    else authdata.push({ name: f[0]!, mechanism: f[1]! })
  }
  return { tracking, sources, authdata }
}

function nonNegative(what: string, ns: bigint): bigint {
  if (ns < 0n) throw new ChronycParseError(`${what} is negative: ${ns} ns`)
  return ns
}

/**
 * clock_offset (the host clock's offset from UTC, positive when the host clock is fast) from chronyd's
 * "System time", which is positive when the host clock is slow: chronyd computes true time as
 * raw + correction (reference.c REF_GetTrackingReport) and prints the correction's sign as "slow" when
 * positive (client.c print_report, `%O`). So the sign flips.
 */
export function clockOffsetFromSystemTime(systemTime: bigint): bigint {
  return -systemTime
}

/**
 * chronyd reports itself synchronized: a leap status other than "Not synchronised", and a reference that is
 * not its own local clock (the `local` directive reports leap status Normal while synchronized to nothing).
 */
export function isSynchronized(tracking: ChronyTracking): boolean {
  return SYNCHRONIZED_LEAP_STATUSES.has(tracking.leapStatus) && tracking.refId !== LOCAL_REFERENCE_ID
}

/**
 * The clock was updated from NTS-authenticated sources only: there is a selected source (`*`), it is the
 * tracking reference, and it and every source combined with it (`+`: chronyd averages them into the
 * update) use NTS per authdata. A reference clock, a symmetric-key or unauthenticated source, or answers
 * that changed between the three commands all give false.
 */
export function isNtsAuthenticated(report: ChronycReport): boolean {
  const used = report.sources.filter((s) => s.state === '*' || s.state === '+')
  const selected = used.filter((s) => s.state === '*')
  if (selected.length !== 1 || selected[0]!.name !== report.tracking.name) return false
  const mechanism = new Map(report.authdata.map((a) => [a.name, a.mechanism]))
  return used.every((s) => (s.mode === '^' || s.mode === '=') && mechanism.get(s.name) === 'NTS')
}

/**
 * The time daemon's sample from one report, read starting at monotonic `readAt`. `measuredAt` is the
 * monotonic time of the reference time: chrony's Ref time is UTC, so on the host clock it read
 * refTime + clock_offset, which `earliestMonotonic` maps to the monotonic clock never later than the truth
 * (a sample must not look newer than a step it precedes).
 */
export function sampleFromReport(report: ChronycReport, readAt: bigint, earliestMonotonic: (realtimeNs: bigint) => bigint): TimeDaemonSample {
  const offset = clockOffsetFromSystemTime(report.tracking.systemTime)
  return {
    offset,
    rootDelay: report.tracking.rootDelay,
    rootDispersion: report.tracking.rootDispersion,
    synchronized: isSynchronized(report.tracking),
    nts: isNtsAuthenticated(report),
    measuredAt: earliestMonotonic(report.tracking.refTime + offset),
    readAt,
  }
}

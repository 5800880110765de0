/**
 * Record format v1 time encoding ("Encodings", record-format-1.md).
 *
 * A time is int64 nanoseconds since the Unix epoch. In JSON it is written as
 * `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`: exactly nine fraction digits, the `Z`
 * designator, a valid proleptic-Gregorian calendar date, hour 00-23, minute and
 * second 00-59, and an instant inside the int64 nanosecond range
 * (1677-09-21T00:12:43.145224192Z .. 2262-04-11T23:47:16.854775807Z).
 * "One instant has one encoding", so nothing else is accepted: no lowercase
 * `t`/`z`, no offsets, no leap second 60 (an int64 count of nanoseconds since
 * the epoch, like POSIX time, has no leap seconds, so 60 would name an instant
 * that already has another encoding, or none).
 *
 * There is one implementation of the rule: `parseTimeBytes` scans bytes. The
 * string variants encode the string to bytes and call it, so the string and
 * byte forms cannot drift apart. `parseTimeBytes` allocates nothing: the raw
 * file verifier calls it for every receipt of every line.
 */

/** Result codes of {@link parseTimeBytes}. 0 means the bytes are a valid time. */
export const TimeError = {
  OK: 0,
  /** A byte of the fixed `YYYY-MM-DDTHH:MM:SS.` prefix is not what the form needs. */
  SYNTAX: 1,
  /** The text ends before the form is complete. */
  TRUNCATED: 2,
  /** The fraction does not have exactly nine digits. */
  FRACTION_DIGITS: 3,
  /** `z` instead of `Z`. */
  LOWERCASE_Z: 4,
  /** A numeric offset (`+01:00`, `-00:00`) instead of `Z`. */
  OFFSET: 5,
  /** Something other than `Z` after the fraction. */
  DESIGNATOR: 6,
  /** Bytes after the `Z`. */
  TRAILING: 7,
  MONTH: 8,
  DAY: 9,
  HOUR: 10,
  MINUTE: 11,
  SECOND: 12,
  /** A valid calendar time outside the int64 nanosecond range. */
  RANGE: 13,
} as const;
export type TimeErrorCode = (typeof TimeError)[keyof typeof TimeError];

/**
 * Output of {@link parseTimeBytes}. On success `sec` holds whole seconds since
 * the epoch (floor, so negative for times before 1970) and `nsec` 0..999999999;
 * the instant is `sec * 1e9 + nsec` nanoseconds. Both are plain numbers: `sec`
 * stays far inside 2^53 for the int64 range, and numbers compare and store
 * without the cost of a bigint. On failure `errorAt` is the offset, relative to
 * `start`, of the byte the error is about.
 */
export interface TimeParts {
  sec: number;
  nsec: number;
  errorAt: number;
}

export function newTimeParts(): TimeParts {
  return { sec: 0, nsec: 0, errorAt: 0 };
}

/** An invalid time string; `code` is one of {@link TimeError}. */
export class TimeFormatError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.name = 'TimeFormatError';
    this.code = code;
  }
}

// Length of the one valid form, and the prefix template: 'd' is a digit.
const TIME_LENGTH = 30;
const TEMPLATE = 'dddd-dd-ddTdd:dd:dd.';

// int64 nanosecond bounds split into (sec, nsec) with floor semantics:
// -2^63 ns = -9223372037 s + 145224192 ns; 2^63-1 ns = 9223372036 s + 854775807 ns.
const MIN_SEC = -9223372037;
const MIN_NSEC = 145224192;
const MAX_SEC = 9223372036;
const MAX_NSEC = 854775807;

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const NS_PER_SEC = 1_000_000_000n;

// Non-leap month lengths and days before each month, indexed by month 1..12.
const MONTH_DAYS = Int32Array.of(0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31);
const DAYS_BEFORE_MONTH = Int32Array.of(0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334);

/** Days in a month of the proleptic Gregorian calendar. */
function daysInMonth(year: number, month: number): number {
  if (month === 2) {
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    return leap ? 29 : 28;
  }
  // 30 days hath September, April, June and November.
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * Days from 1970-01-01 to the given civil date (proleptic Gregorian).
 * Counts in 400-year eras starting on March 1st, so that the leap day is the
 * last day of its "year" and the month lengths from March on follow the
 * 153-days-per-5-months pattern.
 */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400; // 0..399
  const monthFromMarch = month > 2 ? month - 3 : month + 9; // 0..11
  const dayOfYear = Math.floor((153 * monthFromMarch + 2) / 5) + day - 1; // 0..365
  const dayOfEra =
    yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  // 719468 = days from 0000-03-01 to 1970-01-01.
  return era * 146097 + dayOfEra - 719468;
}

/** Inverse of {@link daysFromCivil}; writes into a 3-element array [y, m, d]. */
function civilFromDays(days: number, out: number[]): void {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const dayOfEra = z - era * 146097; // 0..146096
  const yearOfEra = Math.floor(
    (dayOfEra -
      Math.floor(dayOfEra / 1460) +
      Math.floor(dayOfEra / 36524) -
      Math.floor(dayOfEra / 146096)) /
      365,
  ); // 0..399
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthFromMarch = Math.floor((5 * dayOfYear + 2) / 153); // 0..11
  const day = dayOfYear - Math.floor((153 * monthFromMarch + 2) / 5) + 1;
  const month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9;
  out[0] = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  out[1] = month;
  out[2] = day;
}

function d2(buf: Uint8Array, p: number): number {
  return (buf[p]! - 48) * 10 + (buf[p + 1]! - 48);
}

/**
 * Parses the one valid time form from `buf[start, end)` without allocating.
 * Returns {@link TimeError.OK} (0) and fills `out.sec` / `out.nsec`, or a
 * nonzero {@link TimeError} code and `out.errorAt`. Use
 * {@link describeTimeError} for a human sentence.
 */
export function parseTimeBytes(buf: Uint8Array, start: number, end: number, out: TimeParts): number {
  // Fast path for the common, well-formed case: fixed length, separators in
  // place, twenty-three digits. Anything else takes the byte-by-byte path below,
  // which also says exactly what is wrong.
  if (
    end - start === TIME_LENGTH &&
    buf[start + 4] === 0x2d &&
    buf[start + 7] === 0x2d &&
    buf[start + 10] === 0x54 &&
    buf[start + 13] === 0x3a &&
    buf[start + 16] === 0x3a &&
    buf[start + 19] === 0x2e &&
    buf[start + 29] === 0x5a
  ) {
    let bad = 0;
    let nsec = 0;
    for (let p = start + 20; p < start + 29; p++) {
      const d = buf[p]! - 48;
      bad |= d; // a byte below '0' makes d negative: the sign bit sticks in `bad`
      bad |= 9 - d; // a byte above '9' makes 9 - d negative
      nsec = nsec * 10 + d;
    }
    const y0 = buf[start]! - 48, y1 = buf[start + 1]! - 48, y2 = buf[start + 2]! - 48, y3 = buf[start + 3]! - 48;
    const mo0 = buf[start + 5]! - 48, mo1 = buf[start + 6]! - 48;
    const d0 = buf[start + 8]! - 48, d1 = buf[start + 9]! - 48;
    const h0 = buf[start + 11]! - 48, h1 = buf[start + 12]! - 48;
    const mi0 = buf[start + 14]! - 48, mi1 = buf[start + 15]! - 48;
    const s0 = buf[start + 17]! - 48, s1 = buf[start + 18]! - 48;
    bad |= y0 | y1 | y2 | y3 | mo0 | mo1 | d0 | d1 | h0 | h1 | mi0 | mi1 | s0 | s1;
    bad |= (9 - y0) | (9 - y1) | (9 - y2) | (9 - y3) | (9 - mo0) | (9 - mo1) | (9 - d0) | (9 - d1);
    bad |= (9 - h0) | (9 - h1) | (9 - mi0) | (9 - mi1) | (9 - s0) | (9 - s1);
    if (bad >= 0) {
      const year = y0 * 1000 + y1 * 100 + y2 * 10 + y3;
      const month = mo0 * 10 + mo1;
      const day = d0 * 10 + d1;
      const hour = h0 * 10 + h1;
      const minute = mi0 * 10 + mi1;
      const second = s0 * 10 + s1;
      // Years strictly inside the int64 range (1678..2261) need no range check
      // and keep every quotient below positive, so integer division (| 0)
      // is exact floor division here.
      if (
        year >= 1678 &&
        year <= 2261 &&
        month >= 1 &&
        month <= 12 &&
        day >= 1 &&
        hour <= 23 &&
        minute <= 59 &&
        second <= 59
      ) {
        const leap = (year & 3) === 0 && (year % 100 !== 0 || year % 400 === 0);
        const monthDays = month === 2 ? (leap ? 29 : 28) : MONTH_DAYS[month]!;
        if (day <= monthDays) {
          const ym1 = year - 1;
          // Days since 1970-01-01: whole years, their leap days (477 leap days
          // fall before 1970), whole months, then the day.
          const days =
            (year - 1970) * 365 +
            ((ym1 / 4) | 0) -
            ((ym1 / 100) | 0) +
            ((ym1 / 400) | 0) -
            477 +
            DAYS_BEFORE_MONTH[month]! +
            (leap && month > 2 ? 1 : 0) +
            day -
            1;
          out.sec = days * 86400 + hour * 3600 + minute * 60 + second;
          out.nsec = nsec;
          return 0; // TimeError.OK
        }
      }
    }
  }
  return parseTimeSlow(buf, start, end, out);
}

/** The byte-by-byte path: same rule, and it finds the first thing wrong. */
function parseTimeSlow(buf: Uint8Array, start: number, end: number, out: TimeParts): number {
  const len = end - start;
  // Fixed prefix "dddd-dd-ddTdd:dd:dd." (20 bytes). The template is walked by
  // hand rather than from the TEMPLATE string to keep this path free of string
  // indexing; TEMPLATE is used only for messages.
  for (let i = 0; i < 20; i++) {
    if (i >= len) {
      out.errorAt = i;
      return TimeError.TRUNCATED;
    }
    const c = buf[start + i]!;
    let ok: boolean;
    switch (i) {
      case 4:
      case 7:
        ok = c === 0x2d; // '-'
        break;
      case 10:
        ok = c === 0x54; // 'T'
        break;
      case 13:
      case 16:
        ok = c === 0x3a; // ':'
        break;
      case 19:
        ok = c === 0x2e; // '.'
        break;
      default:
        ok = c >= 0x30 && c <= 0x39;
    }
    if (!ok) {
      out.errorAt = i;
      return TimeError.SYNTAX;
    }
  }
  // Fraction: count digits, then require exactly nine.
  let p = start + 20;
  let nsec = 0;
  while (p < end) {
    const c = buf[p]!;
    if (c < 0x30 || c > 0x39) break;
    nsec = nsec * 10 + (c - 48);
    p++;
  }
  const fractionDigits = p - (start + 20);
  if (fractionDigits !== 9) {
    out.errorAt = 20;
    return TimeError.FRACTION_DIGITS;
  }
  // Designator.
  if (p >= end) {
    out.errorAt = 29;
    return TimeError.DESIGNATOR;
  }
  const z = buf[p]!;
  if (z !== 0x5a) {
    out.errorAt = 29;
    if (z === 0x7a) return TimeError.LOWERCASE_Z;
    if (z === 0x2b || z === 0x2d) return TimeError.OFFSET;
    return TimeError.DESIGNATOR;
  }
  if (len !== TIME_LENGTH) {
    out.errorAt = TIME_LENGTH;
    return TimeError.TRAILING;
  }
  // Fields.
  const year =
    (buf[start]! - 48) * 1000 + (buf[start + 1]! - 48) * 100 + d2(buf, start + 2);
  const month = d2(buf, start + 5);
  if (month < 1 || month > 12) {
    out.errorAt = 5;
    return TimeError.MONTH;
  }
  const day = d2(buf, start + 8);
  if (day < 1 || day > daysInMonth(year, month)) {
    out.errorAt = 8;
    return TimeError.DAY;
  }
  const hour = d2(buf, start + 11);
  if (hour > 23) {
    out.errorAt = 11;
    return TimeError.HOUR;
  }
  const minute = d2(buf, start + 14);
  if (minute > 59) {
    out.errorAt = 14;
    return TimeError.MINUTE;
  }
  const second = d2(buf, start + 17);
  if (second > 59) {
    out.errorAt = 17;
    return TimeError.SECOND;
  }
  const sec = daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
  if (sec < MIN_SEC || sec > MAX_SEC || (sec === MIN_SEC && nsec < MIN_NSEC) || (sec === MAX_SEC && nsec > MAX_NSEC)) {
    out.errorAt = 0;
    return TimeError.RANGE;
  }
  out.sec = sec;
  out.nsec = nsec;
  return TimeError.OK;
}

function show(c: number): string {
  if (c >= 0x20 && c < 0x7f) return JSON.stringify(String.fromCharCode(c));
  return `byte 0x${c.toString(16).padStart(2, '0')}`;
}

/**
 * A short clause saying what is wrong (to follow "... is invalid: "), for a
 * nonzero code returned by {@link parseTimeBytes} on the same bytes, with its
 * `errorAt` (error path only: it allocates).
 */
export function describeTimeError(code: number, buf: Uint8Array, start: number, end: number, errorAt: number): string {
  const len = end - start;
  const at = (i: number) => buf[start + i]!;
  switch (code) {
    case TimeError.SYNTAX: {
      const want = TEMPLATE[errorAt] === 'd' ? 'a digit' : JSON.stringify(TEMPLATE[errorAt]);
      return `expected ${want} at position ${errorAt} of YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ, found ${show(at(errorAt))}`;
    }
    case TimeError.TRUNCATED:
      return `ends after ${len} characters; the form is YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`;
    case TimeError.FRACTION_DIGITS: {
      let n = 0;
      while (20 + n < len && at(20 + n) >= 0x30 && at(20 + n) <= 0x39) n++;
      return `has ${n} fraction digit${n === 1 ? '' : 's'}; exactly 9 are required`;
    }
    case TimeError.LOWERCASE_Z:
      return 'ends in lowercase "z"; the UTC designator must be "Z"';
    case TimeError.OFFSET:
      return 'has a numeric UTC offset; only the "Z" designator is allowed';
    case TimeError.DESIGNATOR:
      return errorAt < len
        ? `has ${show(at(errorAt))} where the "Z" designator must be`
        : 'lacks the "Z" designator';
    case TimeError.TRAILING:
      return `has ${len - TIME_LENGTH} character(s) after the "Z" designator`;
    case TimeError.MONTH:
      return `month ${String.fromCharCode(at(5), at(6))} is not 01-12`;
    case TimeError.DAY:
      return `day ${String.fromCharCode(at(8), at(9))} does not exist in ${String.fromCharCode(
        at(0),
        at(1),
        at(2),
        at(3),
        at(4),
        at(5),
        at(6),
      )}`;
    case TimeError.HOUR:
      return `hour ${String.fromCharCode(at(11), at(12))} is not 00-23`;
    case TimeError.MINUTE:
      return `minute ${String.fromCharCode(at(14), at(15))} is not 00-59`;
    case TimeError.SECOND: {
      const s = String.fromCharCode(at(17), at(18));
      return s === '60'
        ? 'second 60 (a leap second) cannot be encoded: int64 nanoseconds since the epoch have no leap seconds'
        : `second ${s} is not 00-59`;
    }
    case TimeError.RANGE:
      return 'outside the int64 nanosecond range (1677-09-21T00:12:43.145224192Z to 2262-04-11T23:47:16.854775807Z)';
    default:
      return 'not of the form YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ';
  }
}

const encoder = new TextEncoder();

/**
 * Parses a time string to int64 nanoseconds since the epoch. Throws
 * {@link TimeFormatError} naming what is wrong.
 */
export function parseTime(s: string): bigint {
  const bytes = encoder.encode(s);
  const out = newTimeParts();
  const code = parseTimeBytes(bytes, 0, bytes.length, out);
  if (code !== TimeError.OK) {
    throw new TimeFormatError(
      code,
      `time ${JSON.stringify(s)} is invalid: ${describeTimeError(code, bytes, 0, bytes.length, out.errorAt)}`,
    );
  }
  return BigInt(out.sec) * NS_PER_SEC + BigInt(out.nsec);
}

/** Like {@link parseTime} but returns null instead of throwing. */
export function tryParseTime(s: string): bigint | null {
  const bytes = encoder.encode(s);
  const out = newTimeParts();
  if (parseTimeBytes(bytes, 0, bytes.length, out) !== TimeError.OK) return null;
  return BigInt(out.sec) * NS_PER_SEC + BigInt(out.nsec);
}

/** (sec, nsec) as produced by {@link parseTimeBytes} to int64 nanoseconds. */
export function timePartsToNs(sec: number, nsec: number): bigint {
  return BigInt(sec) * NS_PER_SEC + BigInt(nsec);
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

const civil = [0, 0, 0];

/**
 * Formats whole seconds since the epoch plus 0..999999999 nanoseconds. Throws
 * RangeError outside the int64 nanosecond range or for a bad nsec.
 */
export function formatTimeParts(sec: number, nsec: number): string {
  if (!Number.isInteger(sec) || !Number.isInteger(nsec) || nsec < 0 || nsec > 999_999_999) {
    throw new RangeError(`invalid time parts (${sec} s, ${nsec} ns)`);
  }
  if (sec < MIN_SEC || sec > MAX_SEC || (sec === MIN_SEC && nsec < MIN_NSEC) || (sec === MAX_SEC && nsec > MAX_NSEC)) {
    throw new RangeError(`time ${sec} s + ${nsec} ns is outside the int64 nanosecond range`);
  }
  const days = Math.floor(sec / 86400);
  const secOfDay = sec - days * 86400;
  civilFromDays(days, civil);
  const hour = Math.floor(secOfDay / 3600);
  const minute = Math.floor((secOfDay % 3600) / 60);
  const second = secOfDay % 60;
  return (
    `${pad(civil[0]!, 4)}-${pad(civil[1]!, 2)}-${pad(civil[2]!, 2)}` +
    `T${pad(hour, 2)}:${pad(minute, 2)}:${pad(second, 2)}.${pad(nsec, 9)}Z`
  );
}

/**
 * Formats int64 nanoseconds since the epoch in the one valid form. Throws
 * RangeError outside the int64 range.
 */
export function formatTime(ns: bigint): string {
  if (ns < INT64_MIN || ns > INT64_MAX) {
    throw new RangeError(`time ${ns} ns is outside the int64 range`);
  }
  let sec = ns / NS_PER_SEC; // truncates toward zero
  let nsec = ns - sec * NS_PER_SEC;
  if (nsec < 0n) {
    sec -= 1n;
    nsec += NS_PER_SEC;
  }
  return formatTimeParts(Number(sec), Number(nsec));
}

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/

/** 00:00 UTC of a `YYYY-MM-DD` calendar date in ns, or null when it is not one. */
export function dayStartNs(date: string): bigint | null {
  const m = DATE_RE.exec(date)
  if (!m) return null
  const ms = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!)
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== date) return null
  return BigInt(ms) * 1_000_000n
}

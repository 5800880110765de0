import t from 'tap';
import { seededRandom } from '../src/sim/random.js';
import {
  describeTimeError,
  formatTime,
  formatTimeParts,
  newTimeParts,
  parseTime,
  parseTimeBytes,
  TimeError,
  TimeFormatError,
  timePartsToNs,
  tryParseTime,
} from '../src/formats/record/time.js';

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

// Seeded, so that every failure reproduces.
const rng = seededRandom;

/** Independent oracle: regex + Date for the calendar, BigInt for the instant. */
function oracle(s: string): bigint | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{9})Z$/.exec(s);
  if (!m) return null;
  const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (h > 23 || mi > 59 || se > 59 || mo < 1 || mo > 12 || d < 1) return null;
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi, se, 0);
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d) return null;
  const ns = BigInt(date.getTime() / 1000) * 1_000_000_000n + BigInt(m[7]!);
  if (ns < INT64_MIN || ns > INT64_MAX) return null;
  return ns;
}

function codeOf(s: string): number {
  const b = Buffer.from(s, 'utf8');
  return parseTimeBytes(b, 0, b.length, newTimeParts());
}

t.test('round trips', async (t) => {
  const fixed: [string, bigint][] = [
    ['1970-01-01T00:00:00.000000000Z', 0n],
    ['1970-01-01T00:00:00.000000001Z', 1n],
    ['1969-12-31T23:59:59.999999999Z', -1n],
    ['2026-10-03T14:00:00.123000000Z', 1791036000123000000n],
    ['2000-02-29T12:34:56.789012345Z', 951827696789012345n],
    ['1677-09-21T00:12:43.145224192Z', INT64_MIN],
    ['2262-04-11T23:47:16.854775807Z', INT64_MAX],
  ];
  for (const [s, ns] of fixed) {
    t.equal(parseTime(s), ns, s);
    t.equal(formatTime(ns), s, `format ${ns}`);
  }
  const r = rng(7);
  let n = 0;
  for (let i = 0; i < 20000; i++) {
    // Random int64 across the whole range, plus values near the bounds and the epoch.
    const hi = BigInt(Math.floor(r() * 0x100000000));
    const lo = BigInt(Math.floor(r() * 0x100000000));
    let ns = BigInt.asIntN(64, (hi << 32n) | lo);
    if (i % 4 === 1) ns = INT64_MIN + BigInt(Math.floor(r() * 1e12));
    if (i % 4 === 2) ns = INT64_MAX - BigInt(Math.floor(r() * 1e12));
    if (i % 4 === 3) ns = BigInt(Math.floor((r() - 0.5) * 1e18));
    const s = formatTime(ns);
    if (parseTime(s) !== ns || oracle(s) !== ns) {
      t.fail(`round trip ${ns} -> ${s}`);
      break;
    }
    // The byte variant agrees and needs no string.
    const b = Buffer.from(s);
    const p = newTimeParts();
    if (parseTimeBytes(b, 0, b.length, p) !== 0 || timePartsToNs(p.sec, p.nsec) !== ns) {
      t.fail(`bytes ${s}`);
      break;
    }
    if (formatTimeParts(p.sec, p.nsec) !== s) {
      t.fail(`formatTimeParts ${s}`);
      break;
    }
    n++;
  }
  t.equal(n, 20000, 'random round trips');
  // Agreement with Date for millisecond instants.
  for (let i = 0; i < 2000; i++) {
    const ms = Math.floor((r() - 0.5) * 2 * 8.64e15 * 0.001);
    const iso = new Date(ms).toISOString();
    t.equal(formatTime(BigInt(ms) * 1_000_000n), iso.slice(0, 23) + '000000Z');
  }
});

t.test('byte variant reads a range inside a larger buffer', async (t) => {
  const b = Buffer.from('xx"2024-02-29T23:59:59.999999999Z"yy');
  const p = newTimeParts();
  t.equal(parseTimeBytes(b, 3, 33, p), 0);
  t.equal(timePartsToNs(p.sec, p.nsec), parseTime('2024-02-29T23:59:59.999999999Z'));
  t.equal(p.nsec, 999999999);
  t.equal(parseTimeBytes(b, 3, 34, p), TimeError.TRAILING);
  t.equal(parseTimeBytes(b, 2, 33, p), TimeError.SYNTAX);
});

t.test('leap years', async (t) => {
  t.equal(codeOf('2024-02-29T00:00:00.000000000Z'), 0, '2024-02-29 ok');
  t.equal(codeOf('2000-02-29T00:00:00.000000000Z'), 0, '2000-02-29 ok (divisible by 400)');
  t.equal(codeOf('2023-02-29T00:00:00.000000000Z'), TimeError.DAY, '2023-02-29 bad');
  t.equal(codeOf('2100-02-29T00:00:00.000000000Z'), TimeError.DAY, '2100-02-29 bad (divisible by 100)');
  t.equal(codeOf('1900-02-29T00:00:00.000000000Z'), TimeError.DAY, '1900-02-29 bad');
  t.equal(codeOf('2024-02-30T00:00:00.000000000Z'), TimeError.DAY);
  t.equal(codeOf('2023-02-28T23:59:59.999999999Z'), 0);
  t.equal(
    parseTime('2024-03-01T00:00:00.000000000Z') - parseTime('2024-02-28T00:00:00.000000000Z'),
    2n * 86400n * 1_000_000_000n,
    'Feb 2024 has a 29th',
  );
  t.equal(
    parseTime('2100-03-01T00:00:00.000000000Z') - parseTime('2100-02-28T00:00:00.000000000Z'),
    86400n * 1_000_000_000n,
    'Feb 2100 has no 29th',
  );
  t.throws(() => parseTime('2023-02-29T00:00:00.000000000Z'), /day 29 does not exist in 2023-02/);
});

t.test('calendar fields', async (t) => {
  t.equal(codeOf('2026-04-31T00:00:00.000000000Z'), TimeError.DAY, 'April has 30 days');
  t.equal(codeOf('2026-04-30T00:00:00.000000000Z'), 0);
  t.equal(codeOf('2026-12-31T23:59:59.999999999Z'), 0);
  t.equal(codeOf('2026-00-01T00:00:00.000000000Z'), TimeError.MONTH);
  t.equal(codeOf('2026-13-01T00:00:00.000000000Z'), TimeError.MONTH);
  t.equal(codeOf('2026-01-00T00:00:00.000000000Z'), TimeError.DAY);
  t.equal(codeOf('2026-01-32T00:00:00.000000000Z'), TimeError.DAY);
  t.equal(codeOf('2026-01-01T24:00:00.000000000Z'), TimeError.HOUR, 'hour 24');
  t.equal(codeOf('2026-01-01T23:60:00.000000000Z'), TimeError.MINUTE);
  t.equal(codeOf('2026-01-01T23:59:60.000000000Z'), TimeError.SECOND, 'no leap second');
  t.equal(codeOf('2016-12-31T23:59:60.000000000Z'), TimeError.SECOND, 'not even on a real leap second');
  t.throws(() => parseTime('2016-12-31T23:59:60.000000000Z'), /leap second/);
  t.throws(() => parseTime('2026-13-01T00:00:00.000000000Z'), /month 13 is not 01-12/);
  t.throws(() => parseTime('2026-01-01T24:00:00.000000000Z'), /hour 24 is not 00-23/);
});

t.test('int64 bounds', async (t) => {
  t.equal(codeOf('1677-09-21T00:12:43.145224192Z'), 0, 'int64 min');
  t.equal(codeOf('1677-09-21T00:12:43.145224191Z'), TimeError.RANGE, '1 ns before int64 min');
  t.equal(codeOf('2262-04-11T23:47:16.854775807Z'), 0, 'int64 max');
  t.equal(codeOf('2262-04-11T23:47:16.854775808Z'), TimeError.RANGE, '1 ns after int64 max');
  t.equal(codeOf('0000-01-01T00:00:00.000000000Z'), TimeError.RANGE);
  t.equal(codeOf('9999-12-31T23:59:59.999999999Z'), TimeError.RANGE);
  t.equal(codeOf('1677-12-31T23:59:59.999999999Z'), 0);
  t.equal(codeOf('2262-01-01T00:00:00.000000000Z'), 0);
  t.throws(() => parseTime('2262-04-11T23:47:16.854775808Z'), /outside the int64 nanosecond range/);
  t.throws(() => formatTime(INT64_MAX + 1n), RangeError);
  t.throws(() => formatTime(INT64_MIN - 1n), RangeError);
  t.throws(() => formatTimeParts(0, 1_000_000_000), RangeError);
  t.throws(() => formatTimeParts(0.5, 0), RangeError);
});

t.test('only the one form is accepted', async (t) => {
  const base = '2026-10-03T14:00:00.123456789Z';
  t.equal(codeOf(base), 0);
  const cases: [string, number, RegExp][] = [
    ['2026-10-03T14:00:00.12345678Z', TimeError.FRACTION_DIGITS, /has 8 fraction digits; exactly 9/],
    ['2026-10-03T14:00:00.1234567890Z', TimeError.FRACTION_DIGITS, /has 10 fraction digits/],
    ['2026-10-03T14:00:00.123Z', TimeError.FRACTION_DIGITS, /has 3 fraction digits/],
    ['2026-10-03T14:00:00Z', TimeError.SYNTAX, /expected "\." at position 19/],
    ['2026-10-03T14:00:00.Z', TimeError.FRACTION_DIGITS, /has 0 fraction digits/],
    ['2026-10-03T14:00:00.123456789z', TimeError.LOWERCASE_Z, /lowercase "z"/],
    ['2026-10-03t14:00:00.123456789Z', TimeError.SYNTAX, /expected "T" at position 10/],
    ['2026-10-03 14:00:00.123456789Z', TimeError.SYNTAX, /expected "T"/],
    ['2026-10-03T14:00:00.123456789+00:00', TimeError.OFFSET, /numeric UTC offset/],
    ['2026-10-03T14:00:00.123456789-00:00', TimeError.OFFSET, /numeric UTC offset/],
    ['2026-10-03T16:00:00.123456789+02:00', TimeError.OFFSET, /numeric UTC offset/],
    ['2026-10-03T14:00:00.123456789', TimeError.DESIGNATOR, /lacks the "Z"/],
    ['2026-10-03T14:00:00.123456789ZZ', TimeError.TRAILING, /after the "Z"/],
    ['2026-10-03T14:00:00.123456789Z ', TimeError.TRAILING, /after the "Z"/],
    [' 2026-10-03T14:00:00.123456789Z', TimeError.SYNTAX, /expected a digit at position 0/],
    ['+2026-10-03T14:00:00.123456789Z', TimeError.SYNTAX, /position 0/],
    ['26-10-03T14:00:00.123456789Z', TimeError.SYNTAX, /position 2/],
    ['2026-1-03T14:00:00.123456789Z', TimeError.SYNTAX, /position 6/],
    ['2026/10/03T14:00:00.123456789Z', TimeError.SYNTAX, /expected "-" at position 4/],
    ['2026-10-03T14-00-00.123456789Z', TimeError.SYNTAX, /expected ":" at position 13/],
    ['2026-10-03T14:00:00,123456789Z', TimeError.SYNTAX, /expected "\." at position 19/],
    ['2026-10-03T14:00:0a.123456789Z', TimeError.SYNTAX, /expected a digit at position 18 .*found "a"/],
    ['2026-10-03T14:00:00.12345678aZ', TimeError.FRACTION_DIGITS, /has 8 fraction digits/],
    ['２026-10-03T14:00:00.123456789Z', TimeError.SYNTAX, /position 0 .*found byte 0xef/],
    ['2026-10-03', TimeError.TRUNCATED, /ends after 10 characters/],
    ['', TimeError.TRUNCATED, /ends after 0 characters/],
  ];
  for (const [s, code, re] of cases) {
    t.equal(codeOf(s), code, `${JSON.stringify(s)} -> ${code}`);
    let err: unknown;
    try {
      parseTime(s);
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof TimeFormatError, `${JSON.stringify(s)} throws TimeFormatError`);
    const e = err as TimeFormatError;
    t.equal(e.code, code);
    t.match(e.message, re);
    t.ok(e.message.includes(JSON.stringify(s)), 'message quotes the input');
    t.equal(tryParseTime(s), null);
  }
});

t.test('describeTimeError covers every code', async (t) => {
  // For each code, a time that parseTimeBytes gives it, and exactly what is said of it.
  const cases: [string, number, string][] = [
    ['2026-1O-03T14:00:00.123456789Z', TimeError.SYNTAX, 'expected a digit at position 6 of YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ, found "O"'],
    ['2026-10-03 14:00:00.123456789Z', TimeError.SYNTAX, 'expected "T" at position 10 of YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ, found " "'],
    ['2026-10-03T14:00', TimeError.TRUNCATED, 'ends after 16 characters; the form is YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ'],
    ['2026-10-03T14:00:00.1234Z', TimeError.FRACTION_DIGITS, 'has 4 fraction digits; exactly 9 are required'],
    ['2026-10-03T14:00:00.123456789z', TimeError.LOWERCASE_Z, 'ends in lowercase "z"; the UTC designator must be "Z"'],
    ['2026-10-03T14:00:00.123456789+01:00', TimeError.OFFSET, 'has a numeric UTC offset; only the "Z" designator is allowed'],
    ['2026-10-03T14:00:00.123456789X', TimeError.DESIGNATOR, 'has "X" where the "Z" designator must be'],
    ['2026-10-03T14:00:00.123456789', TimeError.DESIGNATOR, 'lacks the "Z" designator'],
    ['2026-10-03T14:00:00.123456789Zab', TimeError.TRAILING, 'has 2 character(s) after the "Z" designator'],
    ['2026-13-03T14:00:00.123456789Z', TimeError.MONTH, 'month 13 is not 01-12'],
    ['2026-02-30T14:00:00.123456789Z', TimeError.DAY, 'day 30 does not exist in 2026-02'],
    ['2026-10-03T24:00:00.123456789Z', TimeError.HOUR, 'hour 24 is not 00-23'],
    ['2026-10-03T14:60:00.123456789Z', TimeError.MINUTE, 'minute 60 is not 00-59'],
    ['2026-10-03T14:00:61.123456789Z', TimeError.SECOND, 'second 61 is not 00-59'],
    ['2026-10-03T14:00:60.123456789Z', TimeError.SECOND, 'second 60 (a leap second) cannot be encoded: int64 nanoseconds since the epoch have no leap seconds'],
    ['2263-01-01T00:00:00.000000000Z', TimeError.RANGE, 'outside the int64 nanosecond range (1677-09-21T00:12:43.145224192Z to 2262-04-11T23:47:16.854775807Z)'],
  ];
  for (const [s, code, text] of cases) {
    const b = Buffer.from(s);
    const p = newTimeParts();
    t.equal(parseTimeBytes(b, 0, b.length, p), code, `${JSON.stringify(s)}: code ${code}`);
    t.equal(describeTimeError(code, b, 0, b.length, p.errorAt), text, `${JSON.stringify(s)} described`);
  }
  const covered = new Set(cases.map(([, code]) => code));
  t.same(Object.values(TimeError).filter((code) => code !== TimeError.OK && !covered.has(code)), [], 'every code but OK has a case');
});

t.test('agrees with an independent oracle on mutated strings', async (t) => {
  const r = rng(99);
  const alphabet = '0123456789-:.TZtz+ 9';
  let disagreements = 0;
  let accepted = 0;
  const total = 30000;
  for (let i = 0; i < total; i++) {
    // Start from a valid time near interesting places, then mutate a few characters.
    let ns: bigint;
    const pick = i % 5;
    if (pick === 0) ns = INT64_MIN + BigInt(Math.floor(r() * 1e11));
    else if (pick === 1) ns = INT64_MAX - BigInt(Math.floor(r() * 1e11));
    else ns = BigInt(Math.floor((r() - 0.5) * 1.8e18));
    const chars = formatTime(ns).split('');
    const edits = Math.floor(r() * 3);
    for (let e = 0; e < edits; e++) {
      const at = Math.floor(r() * chars.length);
      const op = r();
      if (op < 0.7) chars[at] = alphabet[Math.floor(r() * alphabet.length)]!;
      else if (op < 0.85) chars.splice(at, 1);
      else chars.splice(at, 0, alphabet[Math.floor(r() * alphabet.length)]!);
    }
    const s = chars.join('');
    const want = oracle(s);
    const got = tryParseTime(s);
    if (want !== got) {
      disagreements++;
      if (disagreements < 5) t.fail(`${s}: oracle ${want}, parseTime ${got}`);
    }
    if (got !== null) accepted++;
  }
  t.equal(disagreements, 0, `no disagreements in ${total} cases (${accepted} valid)`);
  t.ok(accepted > 5000 && accepted < total - 5000, 'both outcomes are well represented');
});

import canonicalize from 'canonicalize';
import t from 'tap';
import { seededRandom } from '../src/sim/random.js';
import {
  CanonicalChecker,
  compareCanonicalStrings,
  firstInvalidUtf8,
  isCanonicalJson,
  JSON_CODE_NAMES,
  JsonCode,
  JsonReason,
  Kind,
  NumberFlag,
  StringFlag,
} from '../src/formats/json/canonical-check.js';

// ---------------------------------------------------------------------------
// Helpers

// Seeded, so that every failure reproduces.
const rng = seededRandom;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const strictDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const enc = new TextEncoder();

function depthOf(v: Json): number {
  if (v === null || typeof v !== 'object') return 0;
  let d = 0;
  for (const x of Array.isArray(v) ? v : Object.values(v)) d = Math.max(d, depthOf(x));
  return d + 1;
}

function allSafeIntegers(v: Json): boolean {
  if (typeof v === 'number') return Number.isSafeInteger(v) && !Object.is(v, -0);
  if (v === null || typeof v !== 'object') return true;
  for (const x of Array.isArray(v) ? v : Object.values(v)) if (!allSafeIntegers(x)) return false;
  return true;
}

/**
 * The reference verdict: the bytes are strict UTF-8, JSON.parse accepts them,
 * and canonicalize() of the parsed value gives back exactly the same text;
 * plus the checker's options (integers within 2^53 - 1, depth).
 */
function reference(bytes: Uint8Array, integersOnly: boolean, maxDepth = 32): boolean {
  let text: string;
  try {
    text = strictDecoder.decode(bytes);
  } catch {
    return false;
  }
  let value: Json;
  try {
    value = JSON.parse(text) as Json;
  } catch {
    return false;
  }
  let canon: string | undefined;
  try {
    canon = canonicalize(value);
  } catch {
    return false;
  }
  if (canon !== text) return false;
  if (integersOnly && !allSafeIntegers(value)) return false;
  return depthOf(value) <= maxDepth;
}

const CHAR_POOL: string[] = [
  ...'abcxyzABZ019 _-',
  '"',
  '\\',
  '/',
  '\u0000',
  '\u0001',
  '\b',
  '\t',
  '\n',
  '\u000b',
  '\f',
  '\r',
  '\u001f',
  '\u007f',
  '\u0080',
  'é',
  '\u07ff',
  '\u0800',
  '\u2028',
  '\u2029',
  '\ud7ff',
  '\ue000',
  '\ue001',
  '\ufeff',
  '\ufffd',
  '\uffff',
  '\u{10000}',
  '\u{1f600}',
  '\u{1f601}',
  '\u{10ffff}',
];
const KEY_POOL = ['a', 'b', 'B', '_', '\n', '"', '\\', '/', 'é', '\u0800', '\ue000', '\uffff', '\u{10000}', '\u{1f600}', '\u007f', ' '];

function randomString(r: () => number, pool: string[], maxLen: number): string {
  const n = Math.floor(r() * (maxLen + 1));
  let s = '';
  for (let i = 0; i < n; i++) s += pool[Math.floor(r() * pool.length)]!;
  return s;
}

const SPECIAL_INTS = [0, 1, -1, 9, 10, -10, 123456789, 2 ** 31, -(2 ** 31), 2 ** 32, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53 - 2, 1e15, 1e15 + 1];
const SPECIAL_FLOATS = [0.1, -0.5, 1.5, 123.456, 1e21, 1e-7, 1e-6, 1e20, 123456789012345680000, 5e-324, 1.7976931348623157e308, 2 ** 53, 2 ** 64, 1 / 3, -1e-300];

function randomNumber(r: () => number, integersOnly: boolean): number {
  const p = r();
  if (p < 0.3) return SPECIAL_INTS[Math.floor(r() * SPECIAL_INTS.length)]!;
  if (p < 0.6) return Math.floor((r() - 0.5) * 2000);
  if (p < 0.8 || integersOnly) {
    const v = Math.floor(r() * 2 ** 53) * (r() < 0.5 ? -1 : 1);
    return Object.is(v, -0) ? 0 : v;
  }
  if (p < 0.9) return SPECIAL_FLOATS[Math.floor(r() * SPECIAL_FLOATS.length)]!;
  // Arbitrary finite doubles from random bits.
  const dv = new DataView(new ArrayBuffer(8));
  for (;;) {
    dv.setUint32(0, Math.floor(r() * 0x100000000));
    dv.setUint32(4, Math.floor(r() * 0x100000000));
    const v = dv.getFloat64(0);
    if (Number.isFinite(v)) return v;
  }
}

function randomValue(r: () => number, integersOnly: boolean, depth: number): Json {
  const p = r();
  if (depth < 5 && p < 0.25) {
    const o: { [k: string]: Json } = {};
    const n = Math.floor(r() * 6);
    for (let i = 0; i < n; i++) o[randomString(r, KEY_POOL, 3)] = randomValue(r, integersOnly, depth + 1);
    return o;
  }
  if (depth < 5 && p < 0.4) {
    const a: Json[] = [];
    const n = Math.floor(r() * 5);
    for (let i = 0; i < n; i++) a.push(randomValue(r, integersOnly, depth + 1));
    return a;
  }
  if (p < 0.65) return randomString(r, CHAR_POOL, 8);
  if (p < 0.9) return randomNumber(r, integersOnly);
  if (p < 0.94) return true;
  if (p < 0.97) return false;
  return null;
}

/**
 * A serializer equal to canonicalize() except for two optional faults, so that
 * mutations can be made structurally: reorder the keys of the n-th object
 * (pre-order), or write one of its members twice.
 */
function serializeWithFault(v: Json, fault: { kind: 'permute' | 'duplicate'; target: number; r: () => number }): string {
  let objectIndex = 0;
  const ser = (x: Json): string => {
    if (x === null || typeof x !== 'object') return canonicalize(x)!;
    if (Array.isArray(x)) return '[' + x.map(ser).join(',') + ']';
    const mine = objectIndex++ === fault.target;
    const keys = Object.keys(x).sort();
    let members = keys.map((k) => JSON.stringify(k) + ':' + ser(x[k]!));
    if (mine && members.length > 0) {
      if (fault.kind === 'permute' && members.length > 1) {
        const i = Math.floor(fault.r() * (members.length - 1));
        [members[i], members[i + 1]] = [members[i + 1]!, members[i]!];
      } else if (fault.kind === 'duplicate') {
        const i = Math.floor(fault.r() * members.length);
        members = [...members.slice(0, i + 1), members[i]!, ...members.slice(i + 1)];
      }
    }
    return '{' + members.join(',') + '}';
  };
  return ser(v);
}

function replaceAt(s: string, re: RegExp, r: () => number, fn: (m: string) => string): string {
  const hits = [...s.matchAll(new RegExp(re.source, re.flags + 'g'))];
  if (hits.length === 0) return s;
  const h = hits[Math.floor(r() * hits.length)]!;
  return s.slice(0, h.index) + fn(h[0]) + s.slice(h.index! + h[0].length);
}

const hex4 = (n: number) => n.toString(16).padStart(4, '0');

/** Text-level and byte-level mutations of a canonical text. */
const MUTATIONS: { name: string; apply: (text: string, value: Json, r: () => number) => Uint8Array }[] = [
  {
    name: 'insert whitespace',
    apply: (s, _v, r) => {
      const at = Math.floor(r() * (s.length + 1));
      return enc.encode(s.slice(0, at) + ' \t\n\r'[Math.floor(r() * 4)] + s.slice(at));
    },
  },
  {
    name: 'swap adjacent keys',
    apply: (_s, v, r) => enc.encode(serializeWithFault(v, { kind: 'permute', target: Math.floor(r() * 4), r })),
  },
  {
    name: 'duplicate a key',
    apply: (_s, v, r) => enc.encode(serializeWithFault(v, { kind: 'duplicate', target: Math.floor(r() * 4), r })),
  },
  {
    name: 'escape a character as \\uXXXX',
    apply: (s, _v, r) =>
      enc.encode(
        replaceAt(s, /[^"\\]/, r, (m) => {
          const h = hex4(m.charCodeAt(0));
          return '\\u' + (r() < 0.5 ? h : h.toUpperCase());
        }),
      ),
  },
  { name: 'escape A as \\u0041', apply: (s, _v, r) => enc.encode(replaceAt(s, /[A-Za-z]/, r, (m) => '\\u00' + m.charCodeAt(0).toString(16))) },
  { name: 'escape / as \\/', apply: (s, _v, r) => enc.encode(replaceAt(s, /\//, r, () => '\\/')) },
  { name: 'uppercase hex in \\u001f', apply: (s, _v, r) => enc.encode(replaceAt(s, /\\u00[0-1][0-9a-f]/, r, (m) => m.toUpperCase().replace('\\U', '\\u'))) },
  { name: 'short escape as \\u', apply: (s, _v, r) => enc.encode(replaceAt(s, /\\[nrtbf]/, r, (m) => '\\u' + hex4(JSON.parse(`"${m}"`).charCodeAt(0)))) },
  { name: 'short escape as a raw control character', apply: (s, _v, r) => enc.encode(replaceAt(s, /\\[nrtbf]/, r, (m) => JSON.parse(`"${m}"`) as string)) },
  {
    name: 'escape an astral character as a surrogate pair',
    apply: (s, _v, r) =>
      enc.encode(replaceAt(s, /[\u{10000}-\u{10ffff}]/u, r, (m) => '\\u' + hex4(m.charCodeAt(0)) + '\\u' + hex4(m.charCodeAt(1)))),
  },
  { name: 'insert a lone surrogate escape', apply: (s, _v, r) => enc.encode(replaceAt(s, /"[^"]/, r, (m) => '"\\u' + (r() < 0.5 ? 'd800' : 'dfff') + m.slice(1))) },
  { name: 'add a leading zero', apply: (s, _v, r) => enc.encode(replaceAt(s, /(?<=[:,[])-?\d/, r, (m) => (m[0] === '-' ? '-0' + m.slice(1) : '0' + m))) },
  {
    name: 'replace a number',
    apply: (s, _v, r) => {
      const forms = ['-0', '1.0', '1e2', '1E2', '100', '0.5', '1e21', '1e+21', '1.5', '-1.5e-7', '9007199254740992', '-9007199254740992', '9007199254740991', '-9007199254740991', '9007199254740993', '1e400', '0', '00', '-', '1.', '.5', '+1', '12345678901234567890'];
      return enc.encode(replaceAt(s, /(?<=[:,[])-?\d[\d.eE+-]*/, r, () => forms[Math.floor(r() * forms.length)]!));
    },
  },
  {
    name: 'flip a byte',
    apply: (s, _v, r) => {
      const b = enc.encode(s);
      if (b.length > 0) {
        const at = Math.floor(r() * b.length);
        b[at] = b[at]! ^ (1 << Math.floor(r() * 8));
      }
      return b;
    },
  },
  {
    name: 'set a random byte',
    apply: (s, _v, r) => {
      const b = enc.encode(s);
      if (b.length > 0) b[Math.floor(r() * b.length)] = Math.floor(r() * 256);
      return b;
    },
  },
  {
    name: 'truncate',
    apply: (s, _v, r) => {
      const b = enc.encode(s);
      return b.subarray(0, Math.floor(r() * b.length));
    },
  },
  {
    name: 'delete a byte',
    apply: (s, _v, r) => {
      const b = enc.encode(s);
      if (b.length === 0) return b;
      const at = Math.floor(r() * b.length);
      return Uint8Array.from([...b.subarray(0, at), ...b.subarray(at + 1)]);
    },
  },
];

/** Checks bytes placed inside a larger buffer, so that ranges are honoured. */
function checkIn(checker: CanonicalChecker, bytes: Uint8Array): number {
  const buf = new Uint8Array(bytes.length + 6);
  buf.set([0x7b, 0x22, 0x20], 0); // junk before: '{" '
  buf.set(bytes, 3);
  buf.set([0x20, 0x22, 0x7d], bytes.length + 3); // junk after
  return checker.check(buf, 3, 3 + bytes.length);
}

function codeOf(text: string | Uint8Array, options?: ConstructorParameters<typeof CanonicalChecker>[0]): number {
  const bytes = typeof text === 'string' ? enc.encode(text) : text;
  return new CanonicalChecker(options).check(bytes, 0, bytes.length);
}

// ---------------------------------------------------------------------------
// Differential tests

for (const integersOnly of [true, false]) {
  t.test(`differential against canonicalize (integersOnly ${integersOnly})`, async (t) => {
    const r = rng(integersOnly ? 1234 : 5678);
    const checker = new CanonicalChecker({ integersOnly });
    const VALUES = 3000;
    let accepted = 0;
    let badAccept = 0;
    const perMutation = new Map<string, { cases: number; changed: number; rejected: number; disagree: number }>();
    for (let i = 0; i < VALUES; i++) {
      const value = randomValue(r, integersOnly, 0);
      const canon = canonicalize(value)!;
      const bytes = enc.encode(canon);
      if (checkIn(checker, bytes) === 0) accepted++;
      else if (badAccept++ < 5) t.fail(`canonical text rejected: ${canon} (${checker.codeName}: ${checker.describe(3)})`);
      for (const m of MUTATIONS) {
        const mutated = m.apply(canon, value, r);
        const want = reference(mutated, integersOnly);
        const got = checkIn(checker, mutated) === 0;
        const stat = perMutation.get(m.name) ?? { cases: 0, changed: 0, rejected: 0, disagree: 0 };
        stat.cases++;
        if (Buffer.compare(Buffer.from(mutated), Buffer.from(bytes)) !== 0) stat.changed++;
        if (!want) stat.rejected++;
        if (want !== got) {
          if (stat.disagree++ < 3) {
            t.fail(
              `${m.name}: reference ${want ? 'accepts' : 'rejects'}, checker ${got ? 'accepts' : 'rejects'} ` +
                `${JSON.stringify(Buffer.from(mutated).toString('latin1'))} (${checker.codeName}: ${checker.describe(3)})`,
            );
          }
        }
        perMutation.set(m.name, stat);
      }
    }
    t.equal(accepted, VALUES, `all ${VALUES} canonicalize() outputs accepted`);
    let total = 0;
    for (const [name, s] of perMutation) {
      total += s.cases;
      t.equal(s.disagree, 0, `${name}: agrees on ${s.cases} cases (${s.changed} changed, ${s.rejected} rejected by the reference)`);
      t.ok(s.changed > s.cases / 10, `${name} changes the text often enough (${s.changed}/${s.cases})`);
    }
    t.ok(total >= VALUES * MUTATIONS.length, `${total} mutated cases`);
    // These mutations always make a non-canonical text when they change it.
    // (Others need not: a space inserted inside a string is canonical, and a
    // letter after an escaped backslash is not part of an escape.)
    for (const name of ['add a leading zero', 'escape / as \\/', 'short escape as a raw control character', 'escape an astral character as a surrogate pair']) {
      const s = perMutation.get(name)!;
      t.equal(s.rejected, s.changed, `${name}: every change is rejected (${s.rejected}/${s.changed})`);
    }
  });
}

t.test('the structural fault serializer equals canonicalize without a fault', async (t) => {
  const r = rng(42);
  for (let i = 0; i < 500; i++) {
    const v = randomValue(r, false, 0);
    if (serializeWithFault(v, { kind: 'permute', target: -1, r }) !== canonicalize(v)) {
      t.fail(`differs for ${canonicalize(v)}`);
      return;
    }
  }
  t.pass('500 values');
});

t.test('key comparison follows UTF-16 code units', async (t) => {
  const r = rng(77);
  let n = 0;
  for (let i = 0; i < 20000; i++) {
    const a = randomString(r, KEY_POOL.concat(CHAR_POOL), 4);
    const b = r() < 0.2 ? a + randomString(r, KEY_POOL, 1) : r() < 0.1 ? a : randomString(r, KEY_POOL.concat(CHAR_POOL), 4);
    const ea = enc.encode(JSON.stringify(a).slice(1, -1));
    const eb = enc.encode(JSON.stringify(b).slice(1, -1));
    const buf = new Uint8Array(ea.length + eb.length);
    buf.set(ea, 0);
    buf.set(eb, ea.length);
    const got = Math.sign(compareCanonicalStrings(buf, 0, ea.length, ea.length, buf.length));
    const want = a < b ? -1 : a > b ? 1 : 0;
    if (got !== want) {
      t.fail(`compare ${JSON.stringify(a)} ${JSON.stringify(b)}: got ${got}, want ${want}`);
      return;
    }
    n++;
  }
  t.equal(n, 20000);
  // The cases where UTF-8 byte order and UTF-16 order disagree.
  t.equal(codeOf('{"\u{1f600}":1,"\ue000":2}'), 0, 'astral (D83D..) sorts before U+E000 in UTF-16');
  t.equal(codeOf('{"\ue000":2,"\u{1f600}":1}'), JsonCode.NOT_CANONICAL, 'UTF-8 byte order is not canonical');
  t.equal(codeOf('{"\u{10000}":1,"\uffff":2}'), 0);
  t.equal(codeOf('{"\\n":1,"!":2}'), 0, 'escaped \\n (U+000A) sorts before "!" although its first byte is "\\\\"');
  t.equal(codeOf('{"!":2,"\\n":1}'), JsonCode.NOT_CANONICAL);
  t.equal(codeOf('{"\\"":1,"#":2}'), 0, '\\" (U+0022) before #');
  t.equal(codeOf('{"[":1,"\\\\":2,"]":3}'), 0, '\\\\ (U+005C) between [ and ]');
  t.equal(codeOf('{"\\u0000":1,"\\u0001":2,"\\b":3}'), 0);
  t.equal(codeOf('{"\\u0001":1,"\\u0000":2}'), JsonCode.NOT_CANONICAL);
  t.equal(codeOf('{"":1,"a":2,"aa":3,"ab":4,"b":5}'), 0, 'prefixes sort first');
  t.equal(codeOf('{"aa":1,"a":2}'), JsonCode.NOT_CANONICAL);
});

// ---------------------------------------------------------------------------
// Codes for specific cases

/** What describe() says of a code and reason, in full but for the byte it names. */
function described(code: number, reason: number): RegExp {
  const C = JsonCode;
  const R = JsonReason;
  const why: Record<number, string> = {
    [R.WHITESPACE]: 'whitespace outside a string',
    [R.KEY_ORDER]: 'object keys out of order',
    [R.ESCAPE_SOLIDUS]: 'escaped "/" (canonical form is a literal "/")',
    [R.ESCAPE_NOT_NEEDED]: 'escaped character that canonical form writes literally',
    [R.ESCAPE_SHORT_FORM]: '\\u escape of a character that has a short escape',
    [R.ESCAPE_UPPERCASE_HEX]: 'uppercase hexadecimal in a \\u escape',
    [R.ESCAPE_SURROGATE_PAIR]: 'escaped surrogate pair (canonical form is the literal character)',
    [R.NEGATIVE_ZERO]: '-0 (canonical form is 0)',
    [R.NUMBER_FORM]: 'number not in shortest ES2015 form',
    [R.UNEXPECTED_END]: 'unexpected end of text',
    [R.UNEXPECTED_BYTE]: 'unexpected byte',
    [R.UNTERMINATED_STRING]: 'unterminated string',
    [R.CONTROL_IN_STRING]: 'raw control character in a string',
    [R.BAD_ESCAPE]: 'invalid escape',
    [R.BAD_NUMBER]: 'malformed number',
    [R.TRAILING_DATA]: 'data after the JSON value',
    [R.EXPECTED_KEY]: 'expected an object key',
    [R.EXPECTED_COLON]: 'expected ":"',
  };
  const text: Record<number, string> = {
    [C.OK]: 'canonical',
    [C.NOT_UTF8]: 'invalid UTF-8 AT',
    [C.BOM]: 'starts with a UTF-8 byte order mark',
    [C.SYNTAX]: `not JSON: ${why[reason] ?? `(no text for reason ${reason})`} AT`,
    [C.NOT_CANONICAL]: `not canonical JSON: ${why[reason] ?? `(no text for reason ${reason})`} AT`,
    [C.DUPLICATE_KEY]: 'duplicate object key AT',
    [C.LONE_SURROGATE]: '\\u escape of a lone surrogate AT',
    [C.NUMBER_NOT_INTEGER]: 'number is not an integer AT',
    [C.NUMBER_OUT_OF_RANGE]: 'integer is outside +-(2^53 - 1) AT',
    [C.TOO_DEEP]: 'nesting deeper than 32 AT',
  };
  const escaped = (text[code] ?? `(no text for code ${code})`).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${escaped.replace(/ AT$/, ' at byte \\d+')}$`);
}

t.test('specific cases and their codes', async (t) => {
  const C = JsonCode;
  const R = JsonReason;
  const cases: [string | number[], number, number?, string?][] = [
    // accepted
    ['{}', C.OK],
    ['[]', C.OK],
    ['""', C.OK],
    ['0', C.OK],
    ['-1', C.OK],
    ['true', C.OK],
    ['false', C.OK],
    ['null', C.OK],
    ['{"a":[1,{"b":null}],"c":"\\u001f\\n\\"\\\\/\u007f\u2028\u{10ffff}"}', C.OK],
    ['9007199254740991', C.OK, undefined, '2^53 - 1'],
    ['-9007199254740991', C.OK, undefined, '-(2^53 - 1)'],
    // whitespace
    [' {}', C.NOT_CANONICAL, R.WHITESPACE],
    ['{} ', C.NOT_CANONICAL, R.WHITESPACE],
    ['{}\n', C.NOT_CANONICAL, R.WHITESPACE],
    ['{ }', C.NOT_CANONICAL, R.WHITESPACE],
    ['[ ]', C.NOT_CANONICAL, R.WHITESPACE],
    ['{"a": 1}', C.NOT_CANONICAL, R.WHITESPACE],
    ['{"a" :1}', C.NOT_CANONICAL, R.WHITESPACE],
    ['[1 ,2]', C.NOT_CANONICAL, R.WHITESPACE],
    ['[1,\t2]', C.NOT_CANONICAL, R.WHITESPACE],
    // syntax beats an earlier non-canonical finding
    ['{ "a":1,}', C.SYNTAX, R.EXPECTED_KEY],
    ['[1, 2,]', C.SYNTAX, R.UNEXPECTED_BYTE],
    ['{"b":1,"a":2', C.SYNTAX, R.UNEXPECTED_END],
    // syntax
    ['', C.SYNTAX, R.UNEXPECTED_END],
    [' ', C.SYNTAX, R.UNEXPECTED_END],
    ['{', C.SYNTAX, R.UNEXPECTED_END],
    ['{"a"}', C.SYNTAX, R.EXPECTED_COLON],
    ['{"a":}', C.SYNTAX, R.UNEXPECTED_BYTE],
    ['{1:2}', C.SYNTAX, R.EXPECTED_KEY],
    ['[1,]', C.SYNTAX, R.UNEXPECTED_BYTE],
    ['[,1]', C.SYNTAX, R.UNEXPECTED_BYTE],
    ['[1 2]', C.SYNTAX, R.UNEXPECTED_BYTE],
    ['{}{}', C.SYNTAX, R.TRAILING_DATA],
    ['{}]', C.SYNTAX, R.TRAILING_DATA],
    ['[}', C.SYNTAX, R.UNEXPECTED_BYTE],
    ['tru', C.SYNTAX],
    ['nul', C.SYNTAX],
    ['True', C.SYNTAX],
    ['"abc', C.SYNTAX, R.UNTERMINATED_STRING],
    ['"a\u0001"', C.SYNTAX, R.CONTROL_IN_STRING],
    ['"a\nb"', C.SYNTAX, R.CONTROL_IN_STRING],
    ['"\\x"', C.SYNTAX, R.BAD_ESCAPE],
    ['"\\u12"', C.SYNTAX, R.BAD_ESCAPE],
    ['"\\u12g4"', C.SYNTAX, R.BAD_ESCAPE],
    ["'a'", C.SYNTAX],
    ['01', C.SYNTAX, R.TRAILING_DATA],
    ['-', C.SYNTAX, R.BAD_NUMBER],
    ['-a', C.SYNTAX, R.BAD_NUMBER],
    ['1.', C.SYNTAX, R.BAD_NUMBER],
    ['1e', C.SYNTAX, R.BAD_NUMBER],
    ['.5', C.SYNTAX],
    ['+1', C.SYNTAX],
    ['NaN', C.SYNTAX],
    ['\u00e9', C.SYNTAX, R.UNEXPECTED_BYTE, 'valid UTF-8 outside a string'],
    ['\u000b{}', C.SYNTAX, R.UNEXPECTED_BYTE, 'vertical tab is not JSON whitespace'],
    // escapes
    ['"\\u0041"', C.NOT_CANONICAL, R.ESCAPE_NOT_NEEDED],
    ['"\\u00e9"', C.NOT_CANONICAL, R.ESCAPE_NOT_NEEDED],
    ['"\\u007f"', C.NOT_CANONICAL, R.ESCAPE_NOT_NEEDED, 'DEL is literal'],
    ['"\\u2028"', C.NOT_CANONICAL, R.ESCAPE_NOT_NEEDED],
    ['"\\u0022"', C.NOT_CANONICAL, R.ESCAPE_NOT_NEEDED],
    ['"\\/"', C.NOT_CANONICAL, R.ESCAPE_SOLIDUS],
    ['"\\u001F"', C.NOT_CANONICAL, R.ESCAPE_UPPERCASE_HEX],
    ['"\\u001f"', C.OK],
    ['"\\u000a"', C.NOT_CANONICAL, R.ESCAPE_SHORT_FORM],
    ['"\\u0009"', C.NOT_CANONICAL, R.ESCAPE_SHORT_FORM],
    ['"\\u000b"', C.OK, undefined, 'vertical tab has no short escape'],
    ['"\\u000B"', C.NOT_CANONICAL, R.ESCAPE_UPPERCASE_HEX],
    ['"\\ud83d\\ude00"', C.NOT_CANONICAL, R.ESCAPE_SURROGATE_PAIR],
    // lone surrogates
    ['"\\ud800"', C.LONE_SURROGATE],
    ['"\\udfff"', C.LONE_SURROGATE],
    ['"\\ud800\\u0041"', C.LONE_SURROGATE],
    ['"\\ude00\\ud83d"', C.LONE_SURROGATE, undefined, 'pair halves in the wrong order'],
    ['"\\ud800x"', C.LONE_SURROGATE],
    ['{"\\udc00":1}', C.LONE_SURROGATE, undefined, 'in a key'],
    // numbers
    ['-0', C.NOT_CANONICAL, R.NEGATIVE_ZERO],
    ['1.0', C.NOT_CANONICAL, R.NUMBER_FORM],
    ['1e2', C.NOT_CANONICAL, R.NUMBER_FORM],
    ['1E2', C.NOT_CANONICAL, R.NUMBER_FORM],
    ['1e21', C.NOT_CANONICAL, R.NUMBER_FORM],
    ['-0.0', C.NOT_CANONICAL, R.NUMBER_FORM],
    ['1.5', C.NUMBER_NOT_INTEGER],
    ['-0.5', C.NUMBER_NOT_INTEGER],
    ['1e-7', C.NUMBER_NOT_INTEGER],
    ['9007199254740992', C.NUMBER_OUT_OF_RANGE, undefined, '2^53'],
    ['-9007199254740992', C.NUMBER_OUT_OF_RANGE, undefined, '-(2^53)'],
    ['9007199254740993', C.NUMBER_OUT_OF_RANGE],
    ['99999999999999999999', C.NUMBER_OUT_OF_RANGE],
    ['1e+21', C.NUMBER_OUT_OF_RANGE],
    ['{"a":1e2}', C.NOT_CANONICAL, R.NUMBER_FORM],
    // keys
    ['{"a":1,"a":2}', C.DUPLICATE_KEY],
    ['{"a":1,"b":2,"a":3}', C.DUPLICATE_KEY, undefined, 'non-adjacent duplicate'],
    ['{"b":1,"a":2}', C.NOT_CANONICAL, R.KEY_ORDER],
    ['[{"a":1},{"a":1}]', C.OK, undefined, 'keys are per object'],
    // UTF-8
    [[0xef, 0xbb, 0xbf, 0x7b, 0x7d], C.BOM],
    [[0xef, 0xbb, 0xbf, 0x22, 0xff, 0x22], C.NOT_UTF8, undefined, 'BOM and invalid UTF-8'],
    [[0x22, 0xef, 0xbb, 0xbf, 0x22], C.OK, undefined, 'U+FEFF inside a string is a character'],
    [[0x22, 0xc0, 0x80, 0x22], C.NOT_UTF8, undefined, 'overlong NUL'],
    [[0x22, 0xc1, 0xbf, 0x22], C.NOT_UTF8, undefined, 'overlong 2-byte'],
    [[0x22, 0xe0, 0x80, 0x80, 0x22], C.NOT_UTF8, undefined, 'overlong 3-byte'],
    [[0x22, 0xe0, 0x9f, 0xbf, 0x22], C.NOT_UTF8, undefined, 'overlong 3-byte (U+07FF)'],
    [[0x22, 0xf0, 0x80, 0x80, 0x80, 0x22], C.NOT_UTF8, undefined, 'overlong 4-byte'],
    [[0x22, 0xf0, 0x8f, 0xbf, 0xbf, 0x22], C.NOT_UTF8, undefined, 'overlong 4-byte (U+FFFF)'],
    [[0x22, 0xed, 0xa0, 0x80, 0x22], C.NOT_UTF8, undefined, 'UTF-8 encoded surrogate U+D800'],
    [[0x22, 0xed, 0xbf, 0xbf, 0x22], C.NOT_UTF8, undefined, 'UTF-8 encoded surrogate U+DFFF'],
    [[0x22, 0xed, 0x9f, 0xbf, 0x22], C.OK, undefined, 'U+D7FF'],
    [[0x22, 0xf4, 0x8f, 0xbf, 0xbf, 0x22], C.OK, undefined, 'U+10FFFF'],
    [[0x22, 0xf4, 0x90, 0x80, 0x80, 0x22], C.NOT_UTF8, undefined, 'above U+10FFFF'],
    [[0x22, 0xf5, 0x80, 0x80, 0x80, 0x22], C.NOT_UTF8, undefined, 'F5 lead'],
    [[0x22, 0xff, 0x22], C.NOT_UTF8],
    [[0x22, 0x80, 0x22], C.NOT_UTF8, undefined, 'lone continuation byte'],
    [[0x22, 0xc3, 0x22], C.NOT_UTF8, undefined, 'truncated 2-byte sequence'],
    [[0x22, 0xe2, 0x82, 0x22], C.NOT_UTF8, undefined, 'truncated 3-byte sequence'],
    [[0x22, 0xe2, 0x82], C.NOT_UTF8, undefined, 'truncated at the end of the text'],
    [[0xff], C.NOT_UTF8, undefined, 'outside a string'],
    [[0x7b, 0x7d, 0x20, 0xff], C.NOT_UTF8, undefined, 'after a whitespace finding'],
    [[0x7b, 0x7d, 0x7d, 0xc0, 0xaf], C.NOT_UTF8, undefined, 'invalid UTF-8 after a syntax error'],
    [[0x5b, 0x22, 0x5c, 0x2f, 0x22, 0x2c, 0x22, 0xc3, 0x28, 0x22, 0x5d], C.NOT_UTF8, undefined, 'after a soft finding'],
  ];
  for (const [input, code, reason, note] of cases) {
    const bytes = typeof input === 'string' ? enc.encode(input) : Uint8Array.from(input);
    const label = `${note ? note + ': ' : ''}${JSON.stringify(Buffer.from(bytes).toString('latin1'))}`;
    const checker = new CanonicalChecker();
    const got = checkIn(checker, bytes);
    t.equal(JSON_CODE_NAMES[got], JSON_CODE_NAMES[code], label);
    if (reason !== undefined) t.equal(checker.reason, reason, `${label} reason`);
    t.match(checker.describe(3), described(got, reason ?? checker.reason), `${label} described`);
    const at = /at byte (\d+)$/.exec(checker.describe(3));
    if (at) t.ok(Number(at[1]) <= bytes.length, `${label}: byte ${at[1]} is within its ${bytes.length} bytes (counted from the range's start)`);
    // The reference agrees on acceptance.
    t.equal(got === 0, reference(bytes, true), `${label}: reference agrees`);
  }
});

t.test('integersOnly false accepts canonical non-integers', async (t) => {
  const o = { integersOnly: false };
  for (const s of ['1.5', '-0.5', '1e-7', '1e+21', '9007199254740992', '5e-324', '1.7976931348623157e+308', '0.1', '123456789012345680000', '[1.5,{"a":2.5e-8}]']) {
    t.equal(codeOf(s, o), 0, s);
  }
  for (const s of ['1.0', '1e21', '-0', '1E+21', '0.10', '1e400', '123456789012345678901', '9007199254740993', '1.50', '2.5E-8']) {
    t.equal(codeOf(s, o), JsonCode.NOT_CANONICAL, s);
  }
});

t.test('nesting depth', async (t) => {
  const nest = (n: number) => '['.repeat(n) + ']'.repeat(n);
  const nestObj = (n: number) => '{"a":'.repeat(n - 1) + '{}' + '}'.repeat(n - 1);
  t.equal(codeOf(nest(32)), 0, 'depth 32 accepted');
  t.equal(codeOf(nest(33)), JsonCode.TOO_DEEP, 'depth 33 is too deep');
  t.equal(codeOf(nestObj(32)), 0, 'object depth 32');
  t.equal(codeOf(nestObj(33)), JsonCode.TOO_DEEP, 'object depth 33');
  t.equal(codeOf('[' + nest(32) + ',1]'), JsonCode.TOO_DEEP);
  t.equal(codeOf(nest(200000)), JsonCode.TOO_DEEP, 'very deep input is a finding, not a stack overflow');
  t.equal(codeOf(nest(4), { maxDepth: 3 }), JsonCode.TOO_DEEP);
  t.equal(codeOf(nest(3), { maxDepth: 3 }), 0);
  t.equal(codeOf('1', { maxDepth: 0 }), 0, 'maxDepth 0 allows scalars');
  t.equal(codeOf('[]', { maxDepth: 0 }), JsonCode.TOO_DEEP);
  t.equal(codeOf(nest(1000), { maxDepth: 1000 }), 0);
  t.throws(() => new CanonicalChecker({ maxDepth: -1 }), RangeError);
  const c = new CanonicalChecker();
  c.check(enc.encode(nest(33)), 0, 66);
  t.match(c.describe(), /nesting deeper than 32 at byte 32/);
});

// ---------------------------------------------------------------------------
// Tape

t.test('tape describes the structure', async (t) => {
  const text = '{"a":[1,"x\\n",true,false,null],"b":{},"c":{"d":-5,"é":"\u{1f600}"},"e":[]}';
  const buf = enc.encode(text);
  const c = new CanonicalChecker();
  t.equal(c.check(buf, 0, buf.length), 0);
  const tape = c.tape;
  const kinds = Array.from(tape.kind.subarray(0, tape.length));
  t.same(kinds, [
    Kind.OBJECT,
    Kind.STRING, // "a"
    Kind.ARRAY,
    Kind.NUMBER,
    Kind.STRING,
    Kind.TRUE,
    Kind.FALSE,
    Kind.NULL,
    Kind.STRING, // "b"
    Kind.OBJECT,
    Kind.STRING, // "c"
    Kind.OBJECT,
    Kind.STRING, // "d"
    Kind.NUMBER,
    Kind.STRING, // "é"
    Kind.STRING,
    Kind.STRING, // "e"
    Kind.ARRAY,
  ]);
  const text0 = (i: number) => tape.text(buf, i);
  t.equal(text0(0), text);
  t.equal(tape.next[0], tape.length, 'root skips to the end');
  t.equal(tape.aux[0], 4, 'root has 4 members');
  t.equal(text0(2), '[1,"x\\n",true,false,null]');
  t.equal(tape.aux[2], 5, 'array has 5 elements');
  t.equal(tape.next[2], 8);
  t.equal(tape.aux[4], StringFlag.ESCAPED);
  t.equal(tape.stringValue(buf, 4), 'x\n');
  t.equal(tape.aux[9], 0, 'empty object');
  t.equal(tape.next[9], 10);
  t.equal(tape.aux[14], StringFlag.NON_ASCII);
  t.equal(tape.stringValue(buf, 15), '\u{1f600}');
  t.equal(tape.aux[17], 0, 'empty array');
  t.equal(text0(13), '-5');

  // Iteration as documented.
  const keys: string[] = [];
  for (let k = 1; k < tape.next[0]!; k = tape.next[k + 1]!) keys.push(tape.stringValue(buf, k));
  t.same(keys, ['a', 'b', 'c', 'e']);
  const elems: string[] = [];
  for (let e = 3; e < tape.next[2]!; e = tape.next[e]!) elems.push(text0(e));
  t.same(elems, ['1', '"x\\n"', 'true', 'false', 'null']);

  // find / stringEquals
  const c11 = tape.find(buf, 0, enc.encode('c'));
  t.equal(c11, 11);
  t.equal(tape.find(buf, c11, enc.encode('é')), 15);
  t.equal(tape.find(buf, 0, enc.encode('z')), -1);
  t.equal(tape.find(buf, 2, enc.encode('a')), -1, 'find on a non-object');
  t.ok(tape.stringEquals(buf, 15, enc.encode('\u{1f600}')));
  t.notOk(tape.stringEquals(buf, 15, enc.encode('x')));
  t.notOk(tape.stringEquals(buf, 13, enc.encode('-5')), 'not a string');
});

t.test('tape offsets are absolute, and numbers carry a form flag', async (t) => {
  const buf = enc.encode('xxxx[1.5,2]yy');
  const c = new CanonicalChecker({ integersOnly: false });
  t.equal(c.check(buf, 4, 11), 0);
  t.same([c.tape.start[0], c.tape.end[0]], [4, 11]);
  t.same([c.tape.start[1], c.tape.end[1]], [5, 8]);
  t.equal(c.tape.aux[1], NumberFlag.NOT_INTEGER_FORM);
  t.equal(c.tape.aux[2], 0);
});

t.test('tape grows geometrically and is reused', async (t) => {
  const c = new CanonicalChecker();
  const cap0 = c.tape.capacity;
  const n = 100000;
  const big = enc.encode('[' + Array.from({ length: n }, (_, i) => String(i)).join(',') + ']');
  t.equal(c.check(big, 0, big.length), 0);
  t.equal(c.tape.length, n + 1);
  t.equal(c.tape.aux[0], n);
  t.ok(c.tape.capacity >= n + 1 && c.tape.capacity <= 2 * (n + 1) + cap0);
  t.equal(c.tape.text(big, n), String(n - 1));
  const arrays = c.tape.kind;
  t.equal(c.check(enc.encode('[1,2]'), 0, 5), 0);
  t.equal(c.tape.kind, arrays, 'the same arrays are reused');
  t.equal(c.tape.length, 3);
  // A big object with sorted keys exercises key tokens across growth.
  const keys = Array.from({ length: 5000 }, (_, i) => 'k' + String(i).padStart(5, '0'));
  const obj = enc.encode(canonicalize(Object.fromEntries(keys.map((k, i) => [k, i])))!);
  t.equal(c.check(obj, 0, obj.length), 0);
  t.equal(c.tape.aux[0], 5000);
});

t.test('a checker resets between checks', async (t) => {
  const c = new CanonicalChecker();
  t.equal(c.check(enc.encode('{"b":1,"a":2}'), 0, 13), JsonCode.NOT_CANONICAL);
  t.equal(c.codeName, 'json.not-canonical');
  t.match(c.describe(), /keys out of order at byte 7/);
  t.equal(c.check(enc.encode('{"a":1}'), 0, 7), 0);
  t.equal(c.code, 0);
  t.equal(c.pos, -1);
  t.equal(c.codeName, 'json.ok');
  t.throws(() => c.check(new Uint8Array(3), 0, 4), RangeError);
});

t.test('helpers', async (t) => {
  t.ok(isCanonicalJson(enc.encode('{"a":1}')));
  t.notOk(isCanonicalJson(enc.encode('{"a":1.5}')));
  t.ok(isCanonicalJson(enc.encode('{"a":1.5}'), { integersOnly: false }));
  t.equal(firstInvalidUtf8(enc.encode('abc é \u{1f600}'), 0, 11), -1);
  t.equal(firstInvalidUtf8(Uint8Array.from([0x61, 0xe2, 0x82]), 0, 3), 1);
  t.equal(firstInvalidUtf8(Uint8Array.from([0x61, 0xed, 0xa0, 0x80]), 0, 4), 1);
});

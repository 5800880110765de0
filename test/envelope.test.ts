import canonicalize from 'canonicalize';
import t from 'tap';
import { seededRandom } from '../src/sim/random.js';
import {
  checkBase64,
  checkEnvelope,
  EnvelopeResult,
  newEnvelopeResult,
  RawCode,
  REPLICA_A,
  REPLICA_B,
} from '../src/formats/record/envelope.js';
import { formatTime, parseTime, timePartsToNs, tryParseTime } from '../src/formats/record/time.js';

type Obj = { [k: string]: unknown };

const enc = new TextEncoder();

// Seeded, so that every failure reproduces.
const rng = seededRandom;

const T0 = '2026-10-03T14:00:00.125123456Z';
const T1 = '2026-10-03T14:00:00.126001999Z';
const TX = '2026-10-03T14:00:00.123000000Z';

function base(): Obj {
  return {
    exchange_time: TX,
    payload: '{"e":"trade","E":1759500000123,"s":"BTCUSDT","t":5123456789,"p":"61234.56000000","q":"0.00120000","T":1759500000123,"m":true,"M":true}',
    payload_encoding: 'text',
    receipts: [
      { clock_error_bound: 812345, clock_offset: -21000, connection: 'a-17', receive_time: T0, replica: 'a' },
      { clock_error_bound: 790001, clock_offset: 15000, connection: 'b-3', receive_time: T1, replica: 'b' },
    ],
  };
}

/** Runs checkEnvelope on the line placed inside a larger buffer (to exercise ranges). */
function run(line: string | Uint8Array, options?: { strict?: boolean }, result: EnvelopeResult = newEnvelopeResult()): EnvelopeResult {
  const bytes = typeof line === 'string' ? enc.encode(line) : line;
  const buf = new Uint8Array(bytes.length + 2);
  buf[0] = 0x0a;
  buf.set(bytes, 1);
  buf[bytes.length + 1] = 0x0a;
  const ok = checkEnvelope(buf, 1, 1 + bytes.length, result, options);
  if (ok !== result.ok) throw new Error('return value differs from result.ok');
  return result;
}

function codes(r: EnvelopeResult): string[] {
  return r.codes.slice(0, r.findingCount);
}

/** Modify a copy of the base envelope and return its canonical line. */
function lineWith(edit: (o: Obj & { receipts: Obj[] }) => void): string {
  const o = base() as Obj & { receipts: Obj[] };
  edit(o);
  return canonicalize(o)!;
}

t.test('a valid envelope', async (t) => {
  const line = canonicalize(base())!;
  const r = run(line);
  t.ok(r.ok);
  t.equal(r.findingCount, 0);
  t.same(r.findings, []);
  t.ok(r.hasFrameTime);
  t.equal(timePartsToNs(r.frameSec, r.frameNsec), parseTime(T0), 'frame time is the earliest bounded receive_time');
  t.ok(r.hasExchangeTime);
  t.equal(timePartsToNs(r.exchangeSec, r.exchangeNsec), parseTime(TX));
  t.equal(r.receiptCount, 2);
  t.equal(r.unboundedReceipts, 0);
  t.equal(r.lacksOffset, false);
  t.equal(r.payloadBase64, false);
  const tape = r.json.tape;
  t.equal(tape.stringValue(Buffer.from('\n' + line), r.payloadToken), base().payload);
  t.same(Array.from(r.replicaPresent), [1, 1]);
  t.same(Array.from(r.replicaBound), [812345, 790001]);
  const buf = Buffer.from('\n' + line);
  t.equal(tape.stringValue(buf, r.replicaConnectionToken[REPLICA_A]!), 'a-17');
  t.equal(tape.stringValue(buf, r.replicaConnectionToken[REPLICA_B]!), 'b-3');
  t.equal(timePartsToNs(r.replicaReceiveSec[REPLICA_B]!, r.replicaReceiveNsec[REPLICA_B]!), parseTime(T1));
});

t.test('frame time rule', async (t) => {
  // Bounded receipts win even when an unbounded one is earlier.
  let r = run(
    lineWith((o) => {
      o.receipts[0] = { connection: 'a-1', receive_time: '2026-10-03T14:00:00.000000001Z', replica: 'a' };
    }),
  );
  t.ok(r.ok);
  t.equal(timePartsToNs(r.frameSec, r.frameNsec), parseTime(T1), 'earliest bounded, not earliest overall');
  t.equal(r.unboundedReceipts, 1);
  t.equal(r.lacksOffset, true);
  t.same(Array.from(r.replicaBound), [-1, 790001]);
  // No receipt bounded: earliest of all.
  r = run(
    lineWith((o) => {
      o.receipts = [
        { connection: 'b', receive_time: '2026-10-03T14:00:00.900000000Z', replica: 'b' },
        { connection: 'a', receive_time: '2026-10-03T14:00:00.100000000Z', replica: 'a' },
      ];
    }),
  );
  t.ok(r.ok);
  t.equal(timePartsToNs(r.frameSec, r.frameNsec), parseTime('2026-10-03T14:00:00.100000000Z'));
  t.equal(r.unboundedReceipts, 2);
  t.equal(r.receiptCount, 2);
  // Both bounded: earliest; same second, nanoseconds decide.
  r = run(
    lineWith((o) => {
      o.receipts[0]!.receive_time = '2026-10-03T14:00:00.126001998Z';
    }),
  );
  t.equal(timePartsToNs(r.frameSec, r.frameNsec), parseTime('2026-10-03T14:00:00.126001998Z'));
  // One receipt, before 1970 (negative seconds).
  r = run(
    lineWith((o) => {
      o.receipts = [{ connection: 'x', receive_time: '1969-12-31T23:59:59.999999999Z', replica: 'a' }];
    }),
  );
  t.ok(r.ok);
  t.equal(timePartsToNs(r.frameSec, r.frameNsec), -1n);
  t.equal(r.receiptCount, 1);
});

interface Case {
  name: string;
  line: string | Uint8Array;
  codes: string[];
  strict?: boolean;
  detail?: RegExp;
}

const canonicalBytes = (o: unknown) => enc.encode(canonicalize(o)!);

const FAILING: Case[] = [
  // JSON level
  {
    name: 'invalid UTF-8 in the payload',
    line: (() => {
      const b = canonicalBytes(base());
      const i = Buffer.from(b).indexOf('BTCUSDT');
      b[i] = 0xff;
      return b;
    })(),
    codes: [RawCode.NOT_UTF8],
    detail: /invalid UTF-8 at byte \d+/,
  },
  { name: 'BOM', line: Uint8Array.from([0xef, 0xbb, 0xbf, ...canonicalBytes(base())]), codes: [RawCode.BOM] },
  { name: 'truncated line', line: canonicalize(base())!.slice(0, -3), codes: [RawCode.NOT_JSON], detail: /not JSON/ },
  { name: 'not JSON at all', line: 'hello', codes: [RawCode.NOT_JSON] },
  { name: 'empty line', line: '', codes: [RawCode.NOT_JSON] },
  { name: 'whitespace', line: canonicalize(base())!.replace('"payload":', '"payload": '), codes: [RawCode.LINE_NOT_CANONICAL], detail: /whitespace/ },
  {
    name: 'key order',
    line: canonicalize(base())!.replace(/^\{("exchange_time":"[^"]*"),("payload":"(?:[^"\\]|\\.)*")/, '{$2,$1'),
    codes: [RawCode.LINE_NOT_CANONICAL],
    detail: /keys out of order/,
  },
  { name: 'escape form', line: canonicalize(base())!.replace('BTCUSDT', 'BTC\\u0055SDT'), codes: [RawCode.LINE_NOT_CANONICAL] },
  { name: 'escaped solidus', line: lineWith((o) => (o.payload = 'a/b')).replace('a/b', 'a\\/b'), codes: [RawCode.LINE_NOT_CANONICAL] },
  { name: 'duplicate key', line: canonicalize(base())!.replace('"payload_encoding":"text"', '"payload_encoding":"text","payload_encoding":"text"'), codes: [RawCode.DUPLICATE_KEY] },
  { name: 'lone surrogate', line: lineWith((o) => (o.payload = 'X')).replace('"X"', '"\\ud800"'), codes: [RawCode.LONE_SURROGATE] },
  { name: 'number not integer', line: canonicalize(base())!.replace('-21000', '-21000.5'), codes: [RawCode.NUMBER_NOT_INTEGER] },
  { name: 'number 2^53', line: canonicalize(base())!.replace('812345', '9007199254740992'), codes: [RawCode.NUMBER_OUT_OF_RANGE] },
  { name: 'number -(2^53)', line: canonicalize(base())!.replace('-21000', '-9007199254740992'), codes: [RawCode.NUMBER_OUT_OF_RANGE] },
  { name: 'number -0', line: canonicalize(base())!.replace('15000', '-0'), codes: [RawCode.LINE_NOT_CANONICAL] },
  {
    name: 'too deep',
    line: lineWith((o) => {
      let v: unknown = [];
      for (let i = 1; i < 32; i++) v = [v];
      o.zz = v; // root 1 + 32 arrays = 33
    }),
    codes: [RawCode.TOO_DEEP],
  },
  // envelope level
  { name: 'array line', line: '[]', codes: [RawCode.NOT_OBJECT] },
  { name: 'string line', line: '"payload"', codes: [RawCode.NOT_OBJECT] },
  { name: 'payload missing', line: lineWith((o) => delete o.payload), codes: [RawCode.FIELD_MISSING], detail: /^payload is missing$/ },
  { name: 'payload_encoding missing', line: lineWith((o) => delete o.payload_encoding), codes: [RawCode.FIELD_MISSING] },
  { name: 'receipts missing', line: lineWith((o) => delete (o as Obj).receipts), codes: [RawCode.FIELD_MISSING] },
  { name: 'empty object', line: '{}', codes: [RawCode.FIELD_MISSING, RawCode.FIELD_MISSING, RawCode.FIELD_MISSING] },
  { name: 'payload a number', line: lineWith((o) => (o.payload = 5)), codes: [RawCode.FIELD_TYPE], detail: /payload is a number, not a string/ },
  { name: 'payload_encoding null', line: lineWith((o) => (o.payload_encoding = null)), codes: [RawCode.FIELD_TYPE] },
  { name: 'payload_encoding utf8', line: lineWith((o) => (o.payload_encoding = 'utf8')), codes: [RawCode.PAYLOAD_ENCODING], detail: /"utf8" is not "text" or "base64"/ },
  { name: 'payload_encoding TEXT', line: lineWith((o) => (o.payload_encoding = 'TEXT')), codes: [RawCode.PAYLOAD_ENCODING] },
  { name: 'payload_encoding empty', line: lineWith((o) => (o.payload_encoding = '')), codes: [RawCode.PAYLOAD_ENCODING] },
  { name: 'exchange_time a number', line: lineWith((o) => (o.exchange_time = 1759500000123)), codes: [RawCode.FIELD_TYPE] },
  { name: 'exchange_time 8 fraction digits', line: lineWith((o) => (o.exchange_time = '2026-10-03T14:00:00.12300000Z')), codes: [RawCode.TIME_INVALID], detail: /^exchange_time "2026-10-03T14:00:00.12300000Z" is invalid: has 8 fraction digits/ },
  { name: 'exchange_time with offset', line: lineWith((o) => (o.exchange_time = '2026-10-03T14:00:00.123000000+00:00')), codes: [RawCode.TIME_INVALID] },
  { name: 'receive_time lowercase z', line: lineWith((o) => (o.receipts[1]!.receive_time = '2026-10-03T14:00:00.126001999z')), codes: [RawCode.TIME_INVALID], detail: /^receipts\[1\]\.receive_time "[^"]+" is invalid: ends in lowercase "z"/ },
  { name: 'receive_time Feb 29 2023', line: lineWith((o) => (o.receipts[0]!.receive_time = '2023-02-29T00:00:00.000000000Z')), codes: [RawCode.TIME_INVALID] },
  { name: 'receipts an object', line: lineWith((o) => ((o as Obj).receipts = {})), codes: [RawCode.FIELD_TYPE], detail: /receipts is an object, not an array/ },
  { name: 'receipts empty', line: lineWith((o) => (o.receipts = [])), codes: [RawCode.RECEIPTS_EMPTY] },
  { name: 'receipt not an object', line: lineWith((o) => ((o.receipts as unknown[])[1] = 'b')), codes: [RawCode.FIELD_TYPE], detail: /^receipts\[1\] is a string, not an object$/ },
  { name: 'replica missing', line: lineWith((o) => delete o.receipts[0]!.replica), codes: [RawCode.FIELD_MISSING], detail: /^receipts\[0\]\.replica is missing$/ },
  { name: 'replica a number', line: lineWith((o) => (o.receipts[0]!.replica = 1)), codes: [RawCode.FIELD_TYPE] },
  { name: 'replica "c"', line: lineWith((o) => (o.receipts[1]!.replica = 'c')), codes: [RawCode.RECEIPT_REPLICA], detail: /^receipts\[1\]\.replica "c" is not "a" or "b"$/ },
  { name: 'replica "A"', line: lineWith((o) => (o.receipts[0]!.replica = 'A')), codes: [RawCode.RECEIPT_REPLICA] },
  { name: 'replica ""', line: lineWith((o) => (o.receipts[0]!.replica = '')), codes: [RawCode.RECEIPT_REPLICA] },
  { name: 'replica "ab"', line: lineWith((o) => (o.receipts[0]!.replica = 'ab')), codes: [RawCode.RECEIPT_REPLICA] },
  { name: 'duplicate replica', line: lineWith((o) => (o.receipts[1]!.replica = 'a')), codes: [RawCode.RECEIPT_DUPLICATE_REPLICA], detail: /^receipts\[1\]\.replica "a" already has a receipt/ },
  { name: 'connection missing', line: lineWith((o) => delete o.receipts[1]!.connection), codes: [RawCode.FIELD_MISSING] },
  { name: 'connection a number', line: lineWith((o) => (o.receipts[1]!.connection = 3)), codes: [RawCode.FIELD_TYPE] },
  { name: 'receive_time missing', line: lineWith((o) => delete o.receipts[0]!.receive_time), codes: [RawCode.FIELD_MISSING] },
  { name: 'receive_time a number', line: lineWith((o) => (o.receipts[0]!.receive_time = 0)), codes: [RawCode.FIELD_TYPE] },
  { name: 'clock_offset a string', line: lineWith((o) => (o.receipts[0]!.clock_offset = '-21000')), codes: [RawCode.FIELD_TYPE], detail: /clock_offset is a string, not an integer/ },
  { name: 'clock_error_bound null', line: lineWith((o) => (o.receipts[0]!.clock_error_bound = null)), codes: [RawCode.FIELD_TYPE] },
  { name: 'offset without bound', line: lineWith((o) => delete o.receipts[0]!.clock_error_bound), codes: [RawCode.CLOCK_PAIR], detail: /^receipts\[0\]\.clock_offset is present without clock_error_bound$/ },
  { name: 'bound without offset', line: lineWith((o) => delete o.receipts[1]!.clock_offset), codes: [RawCode.CLOCK_PAIR], detail: /^receipts\[1\]\.clock_error_bound is present without clock_offset$/ },
  { name: 'bound negative', line: lineWith((o) => Object.assign(o.receipts[0]!, { clock_error_bound: -1, clock_offset: 0 })), codes: [RawCode.CLOCK_BOUND_NEGATIVE], detail: /^receipts\[0\]\.clock_error_bound -1 is negative$/ },
  { name: 'bound below |offset|', line: lineWith((o) => Object.assign(o.receipts[1]!, { clock_error_bound: 5, clock_offset: -7 })), codes: [RawCode.CLOCK_BOUND_BELOW_OFFSET], detail: /^receipts\[1\]\.clock_error_bound 5 is below \|clock_offset\| 7$/ },
  { name: 'bound below offset', line: lineWith((o) => Object.assign(o.receipts[0]!, { clock_error_bound: 6, clock_offset: 7 })), codes: [RawCode.CLOCK_BOUND_BELOW_OFFSET] },
  { name: 'unknown top-level field, strict', line: lineWith((o) => (o.venue = 'x')), strict: true, codes: [RawCode.UNKNOWN_FIELD], detail: /^envelope has field "venue" that the format does not define$/ },
  { name: 'unknown receipt field, strict', line: lineWith((o) => (o.receipts[1]!.host = 'x')), strict: true, codes: [RawCode.UNKNOWN_FIELD], detail: /^receipts\[1\] has field "host"/ },
  // base64
  ...[
    ['Zg=', 'length not a multiple of 4'],
    ['Zg', 'no padding'],
    ['Zm9vYg', 'no padding (6)'],
    ['Zh==', 'nonzero pad bits (1 byte)'],
    ['Zm9=', 'nonzero pad bits (2 bytes)'],
    ['Zm9v\n', 'newline'],
    ['Zm9 v', 'space'],
    ['Zm-v', 'URL-safe alphabet -'],
    ['Zm_v', 'URL-safe alphabet _'],
    ['=Zm9', 'padding first'],
    ['Zg==Zm9v', 'padding in the middle'],
    ['Z===', 'three pad characters'],
    ['====', 'only padding'],
    ['Zm9v=', 'extra padding'],
    ['Zm\u00e9v', 'non-ASCII'],
  ].map(
    ([p, why]): Case => ({
      name: `base64 ${why}`,
      line: lineWith((o) => Object.assign(o, { payload: p, payload_encoding: 'base64' })),
      codes: [RawCode.BASE64_INVALID],
      detail: /^payload is not strict base64/,
    }),
  ),
  // several findings on one line
  {
    name: 'several semantic findings',
    line: lineWith((o) => {
      o.payload_encoding = 'hex';
      o.receipts[0]!.replica = 'z';
      delete o.receipts[0]!.clock_offset;
      o.receipts[1]!.receive_time = '2026-10-03T14:00:60.000000000Z';
      o.receipts[1]!.clock_error_bound = 1;
    }),
    codes: [RawCode.PAYLOAD_ENCODING, RawCode.RECEIPT_REPLICA, RawCode.CLOCK_PAIR, RawCode.CLOCK_BOUND_BELOW_OFFSET, RawCode.TIME_INVALID],
  },
];

t.test('each rule fails with its exact code', async (t) => {
  const result = newEnvelopeResult();
  for (const c of FAILING) {
    const r = run(c.line, { strict: c.strict === true }, result);
    t.notOk(r.ok, `${c.name}: not ok`);
    t.same(codes(r), c.codes, `${c.name}: ${c.codes.join(', ')}`);
    if (c.detail) t.match(r.details[0], c.detail, `${c.name}: detail`);
    for (let i = 0; i < r.findingCount; i++) t.ok(r.details[i]!.length > 0 && r.details[i]!.length < 300, 'short detail');
  }
  // Every code is exercised by some case.
  const seen = new Set(FAILING.flatMap((c) => c.codes));
  for (const code of Object.values(RawCode)) t.ok(seen.has(code), `${code} has a failing case`);
});

const PASSING: { name: string; line: string; strict?: boolean }[] = [
  { name: 'base envelope', line: canonicalize(base())! },
  { name: 'base envelope, strict', line: canonicalize(base())!, strict: true },
  { name: 'no exchange_time', line: lineWith((o) => delete o.exchange_time) },
  { name: 'one receipt', line: lineWith((o) => o.receipts.pop()) },
  { name: 'receipt of b only', line: lineWith((o) => o.receipts.shift()) },
  { name: 'receipts b then a', line: lineWith((o) => o.receipts.reverse()) },
  { name: 'no clock estimates', line: lineWith((o) => o.receipts.forEach((r) => (delete r.clock_offset, delete r.clock_error_bound))) },
  { name: 'bound equals |offset|', line: lineWith((o) => Object.assign(o.receipts[0]!, { clock_error_bound: 7, clock_offset: -7 })) },
  { name: 'bound and offset zero', line: lineWith((o) => Object.assign(o.receipts[0]!, { clock_error_bound: 0, clock_offset: 0 })) },
  { name: 'bound 2^53 - 1', line: lineWith((o) => Object.assign(o.receipts[0]!, { clock_error_bound: 2 ** 53 - 1, clock_offset: -(2 ** 53 - 1) })) },
  { name: 'empty payload', line: lineWith((o) => (o.payload = '')) },
  { name: 'payload with any characters', line: lineWith((o) => (o.payload = '\u0000\n"\\/\u2028\u{1f600}\ue000')) },
  { name: 'connection any string', line: lineWith((o) => (o.receipts[0]!.connection = '')) },
  { name: 'unknown fields ignored when not strict', line: lineWith((o) => ((o.venue = { deep: [1, 2] }), (o.receipts[0]!.host = 'x'))) },
  { name: 'leap day', line: lineWith((o) => (o.exchange_time = '2024-02-29T23:59:59.999999999Z')) },
  ...['', 'Zg==', 'Zm8=', 'Zm9v', 'AAECAwQ=', 'AAECAwQFBgcICQ==', '+/+/', 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].map((p) => ({
    name: `base64 ${JSON.stringify(p)}`,
    line: lineWith((o) => Object.assign(o, { payload: p, payload_encoding: 'base64' })),
  })),
];

t.test('each rule has a passing case', async (t) => {
  const result = newEnvelopeResult();
  for (const c of PASSING) {
    const r = run(c.line, { strict: c.strict === true }, result);
    t.ok(r.ok, c.name);
    t.same(r.findings, [], `${c.name}: no findings`);
  }
  const r = run(lineWith((o) => Object.assign(o, { payload: 'AAECAwQ=', payload_encoding: 'base64' })));
  t.equal(r.payloadBase64, true);
});

t.test('result is reused without leftovers', async (t) => {
  const result = newEnvelopeResult();
  const codesArray = result.codes;
  run(FAILING.find((c) => c.name === 'several semantic findings')!.line, {}, result);
  t.equal(result.findingCount, 5);
  t.equal(result.hasFrameTime, true, 'frame time is still computed from the bounded receipt with a valid time');
  t.equal(timePartsToNs(result.frameSec, result.frameNsec), parseTime(T0));
  run(canonicalize(base())!, {}, result);
  t.ok(result.ok);
  t.equal(result.findingCount, 0);
  t.same(result.findings, []);
  t.equal(result.codes, codesArray, 'the same arrays are reused');
  t.ok(result.hasFrameTime);
  run('[]', {}, result);
  t.equal(result.receiptCount, 0);
  t.equal(result.hasFrameTime, false);
  t.same(Array.from(result.replicaPresent), [0, 0]);
});

t.test('checkBase64 reports positions', async (t) => {
  const at = (s: string) => {
    const b = enc.encode(s);
    return checkBase64(b, 0, b.length);
  };
  t.equal(at('Zm9v'), -1);
  t.equal(at('Zm9vYg=='), -1);
  t.equal(at('Zm9vYh=='), 5);
  t.equal(at('Z!9v'), 1);
  t.equal(at('Zm9vY'), 5, 'wrong length reports the length');
});

// ---------------------------------------------------------------------------
// Randomized comparison against a straightforward reference of the rules.

/** The envelope rules written plainly over JSON.parse (reference for canonical lines). */
function referenceEnvelope(line: string, strict: boolean): { codes: string[]; frame: bigint | null } {
  const out: string[] = [];
  const o = JSON.parse(line) as unknown;
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return { codes: [RawCode.NOT_OBJECT], frame: null };
  const env = o as Obj;
  const known = ['payload', 'payload_encoding', 'exchange_time', 'receipts'];
  if (strict) for (const k of Object.keys(env).sort()) if (!known.includes(k)) out.push(RawCode.UNKNOWN_FIELD);
  if (!('payload' in env)) out.push(RawCode.FIELD_MISSING);
  else if (typeof env.payload !== 'string') out.push(RawCode.FIELD_TYPE);
  if (!('payload_encoding' in env)) out.push(RawCode.FIELD_MISSING);
  else if (typeof env.payload_encoding !== 'string') out.push(RawCode.FIELD_TYPE);
  else if (env.payload_encoding === 'base64') {
    if (typeof env.payload === 'string' && Buffer.from(env.payload, 'base64').toString('base64') !== env.payload) out.push(RawCode.BASE64_INVALID);
  } else if (env.payload_encoding !== 'text') out.push(RawCode.PAYLOAD_ENCODING);
  if ('exchange_time' in env) {
    if (typeof env.exchange_time !== 'string') out.push(RawCode.FIELD_TYPE);
    else if (tryParseTime(env.exchange_time) === null) out.push(RawCode.TIME_INVALID);
  }
  if (!('receipts' in env)) return { codes: [...out, RawCode.FIELD_MISSING], frame: null };
  if (!Array.isArray(env.receipts)) return { codes: [...out, RawCode.FIELD_TYPE], frame: null };
  if (env.receipts.length === 0) return { codes: [...out, RawCode.RECEIPTS_EMPTY], frame: null };
  const seen = new Set<string>();
  const bounded: bigint[] = [];
  const all: bigint[] = [];
  for (const rc of env.receipts as unknown[]) {
    if (rc === null || typeof rc !== 'object' || Array.isArray(rc)) {
      out.push(RawCode.FIELD_TYPE);
      continue;
    }
    const r = rc as Obj;
    const rknown = ['replica', 'connection', 'receive_time', 'clock_offset', 'clock_error_bound'];
    if (strict) for (const k of Object.keys(r).sort()) if (!rknown.includes(k)) out.push(RawCode.UNKNOWN_FIELD);
    if (!('replica' in r)) out.push(RawCode.FIELD_MISSING);
    else if (typeof r.replica !== 'string') out.push(RawCode.FIELD_TYPE);
    else if (r.replica !== 'a' && r.replica !== 'b') out.push(RawCode.RECEIPT_REPLICA);
    else if (seen.has(r.replica)) out.push(RawCode.RECEIPT_DUPLICATE_REPLICA);
    else seen.add(r.replica);
    if (!('connection' in r)) out.push(RawCode.FIELD_MISSING);
    else if (typeof r.connection !== 'string') out.push(RawCode.FIELD_TYPE);
    const hasOff = 'clock_offset' in r;
    const hasBound = 'clock_error_bound' in r;
    if (hasOff && typeof r.clock_offset !== 'number') out.push(RawCode.FIELD_TYPE);
    if (hasBound && typeof r.clock_error_bound !== 'number') out.push(RawCode.FIELD_TYPE);
    if (hasOff !== hasBound) out.push(RawCode.CLOCK_PAIR);
    if (typeof r.clock_error_bound === 'number') {
      if (r.clock_error_bound < 0) out.push(RawCode.CLOCK_BOUND_NEGATIVE);
      else if (typeof r.clock_offset === 'number' && r.clock_error_bound < Math.abs(r.clock_offset)) out.push(RawCode.CLOCK_BOUND_BELOW_OFFSET);
    }
    if (!('receive_time' in r)) out.push(RawCode.FIELD_MISSING);
    else if (typeof r.receive_time !== 'string') out.push(RawCode.FIELD_TYPE);
    else {
      const ns = tryParseTime(r.receive_time);
      if (ns === null) out.push(RawCode.TIME_INVALID);
      else {
        all.push(ns);
        if (hasBound) bounded.push(ns);
      }
    }
  }
  const min = (xs: bigint[]) => xs.reduce((a, b) => (b < a ? b : a));
  const frame = bounded.length > 0 ? min(bounded) : all.length > 0 ? min(all) : null;
  return { codes: out, frame };
}

t.test('randomized envelopes agree with the reference', async (t) => {
  const r = rng(2026);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!;
  const hour = parseTime('2026-10-03T14:00:00.000000000Z');
  const randTime = () => formatTime(hour + BigInt(Math.floor(r() * 3.6e12)));
  const badTimes = ['2026-10-03T14:00:00.12345678Z', '2026-10-03T14:00:00.123456789z', '2026-02-29T00:00:00.000000000Z', '2026-10-03T24:00:00.000000000Z', '2026-10-03T14:00:00.123456789+00:00', ''];
  // The first receipt when it is still an object (an earlier fault may have replaced it).
  const first = (o: Obj & { receipts: Obj[] }): Obj => {
    const x = Array.isArray(o.receipts) ? (o.receipts as unknown[])[0] : undefined;
    return x !== null && typeof x === 'object' && !Array.isArray(x) ? (x as Obj) : {};
  };
  const faults: ((o: Obj & { receipts: Obj[] }) => void)[] = [
    (o) => delete o.payload,
    (o) => (o.payload = pick([1, null, true, [], {}])),
    (o) => delete o.payload_encoding,
    (o) => (o.payload_encoding = pick(['utf8', 'Base64', '', 7])),
    (o) => Object.assign(o, { payload_encoding: 'base64', payload: pick(['Zg=', 'Zh==', 'Zm9=', 'Zm9v ', 'Zm-v', 'Zm9v', '']) }),
    (o) => (o.exchange_time = pick([...badTimes, 5])),
    (o) => delete (o as Obj).receipts,
    (o) => ((o as Obj).receipts = pick([[], {}, 'x'])),
    (o) => Array.isArray(o.receipts) && o.receipts.length > 0 && ((o.receipts as unknown[])[0] = pick(['a', 1, null, []])),
    (o) => delete first(o).replica,
    (o) => (first(o).replica = pick(['c', 'A', '', 3])),
    (o) => Array.isArray(o.receipts) && o.receipts.push({ ...first(o), replica: 'a' }),
    (o) => delete first(o).connection,
    (o) => (first(o).connection = 1),
    (o) => (first(o).receive_time = pick([...badTimes, 0])),
    (o) => delete first(o).receive_time,
    (o) => delete first(o).clock_offset,
    (o) => delete first(o).clock_error_bound,
    (o) => (first(o).clock_error_bound = pick([-1, -500, 0, 3, '5'])),
    (o) => (first(o).clock_offset = pick([-1_000_000_000, 1_000_000_000, '0', null])),
    (o) => (o.extra = 1),
    (o) => (first(o).extra = 'x'),
  ];
  const result = newEnvelopeResult();
  let okLines = 0;
  let disagreements = 0;
  const N = 6000;
  for (let i = 0; i < N; i++) {
    const receipts: Obj[] = [];
    for (const replica of r() < 0.8 ? ['a', 'b'] : [pick(['a', 'b'])]) {
      const rc: Obj = { replica, connection: `${replica}-${Math.floor(r() * 100)}`, receive_time: randTime() };
      if (r() < 0.8) {
        const off = Math.floor((r() - 0.5) * 1e6);
        rc.clock_offset = off;
        rc.clock_error_bound = Math.abs(off) + Math.floor(r() * 1e6);
      }
      receipts.push(rc);
    }
    if (r() < 0.5) receipts.reverse();
    const o: Obj & { receipts: Obj[] } = {
      payload: r() < 0.5 ? 'text \u00e9 "q" \\ /' : Buffer.from(Array.from({ length: Math.floor(r() * 9) }, () => Math.floor(r() * 256))).toString('base64'),
      payload_encoding: 'text',
      receipts,
    };
    if (typeof o.payload === 'string' && !o.payload.startsWith('text')) o.payload_encoding = 'base64';
    if (r() < 0.7) o.exchange_time = randTime();
    const nFaults = r() < 0.3 ? 0 : 1 + Math.floor(r() * 3);
    for (let f = 0; f < nFaults; f++) pick(faults)(o);
    const strict = r() < 0.5;
    const line = canonicalize(o)!;
    const want = referenceEnvelope(line, strict);
    const got = run(line, { strict }, result);
    const gotCodes = codes(got).sort();
    const wantCodes = [...want.codes].sort();
    let agree = JSON.stringify(gotCodes) === JSON.stringify(wantCodes);
    if (agree && got.ok) {
      okLines++;
      agree = got.hasFrameTime && timePartsToNs(got.frameSec, got.frameNsec) === want.frame;
    }
    if (!agree) {
      disagreements++;
      if (disagreements <= 3) t.fail(`${line} (strict ${strict}): got ${gotCodes.join(',')} want ${wantCodes.join(',')}`);
    }
  }
  t.equal(disagreements, 0, `${N} random envelopes agree (${okLines} valid)`);
  t.ok(okLines > N / 5 && okLines < N - N / 5, 'valid and invalid lines are both well represented');
});

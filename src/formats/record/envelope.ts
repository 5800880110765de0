/**
 * The record format's raw-file envelope rule ("Raw file", record-format-1.md).
 *
 * `checkEnvelope(buf, start, end, result, options)` checks one line of
 * raw.jsonl (without its newline): RFC 8785 canonical JSON whose numbers are
 * integers within +-(2^53 - 1) ("Encodings"), then the envelope table:
 *
 *   payload           string
 *   payload_encoding  "text" | "base64"; base64: strict RFC 4648, standard
 *                     alphabet, "=" padding required, zero unused bits
 *   exchange_time     time, optional
 *   receipts          non-empty array, at most one receipt per replica, each:
 *     replica            "a" | "b"
 *     connection         string
 *     receive_time       time
 *     clock_offset       integer  } both present or both absent (check 7);
 *     clock_error_bound  integer  } bound >= 0 and bound >= |offset|
 *
 * and computes the frame time: the earliest receive_time among receipts that
 * carry clock_error_bound, or among all receipts when none does.
 *
 * It fills a caller-owned {@link EnvelopeResult} (see {@link newEnvelopeResult})
 * and allocates nothing for a valid line: the verifier checks millions of lines an hour. Findings carry
 * the `raw.*` codes that the rest of the project (reports, vectors) relies on.
 *
 * Finding policy: a JSON-level failure (not UTF-8, BOM, not JSON, not
 * canonical, duplicate key, lone surrogate, number not integer / out of range,
 * too deep) is the line's only finding, because the structure it would be
 * checked against may be meaningless. Otherwise every envelope rule is
 * checked and each violation is a finding, so a line can have several.
 * Fields the spec does not define are ignored ("readers ignore fields they do
 * not know"); with `options.strict` each one is reported as
 * `raw.unknown-field`, which makes the line fail.
 *
 * Byte positions in details are relative to `start` (the line's first byte).
 */

import { CanonicalChecker } from '../json/canonical-check.js';
import { describeTimeError, newTimeParts, parseTimeBytes, type TimeParts } from './time.js';

/** The finding codes of this rule. */
export const RawCode = {
  NOT_UTF8: 'raw.not-utf8',
  BOM: 'raw.bom',
  NOT_JSON: 'raw.not-json',
  LINE_NOT_CANONICAL: 'raw.line-not-canonical',
  DUPLICATE_KEY: 'raw.duplicate-key',
  LONE_SURROGATE: 'raw.lone-surrogate',
  NUMBER_NOT_INTEGER: 'raw.number-not-integer',
  NUMBER_OUT_OF_RANGE: 'raw.number-out-of-range',
  TOO_DEEP: 'raw.too-deep',
  NOT_OBJECT: 'raw.not-object',
  FIELD_MISSING: 'raw.field-missing',
  FIELD_TYPE: 'raw.field-type',
  PAYLOAD_ENCODING: 'raw.payload-encoding',
  BASE64_INVALID: 'raw.base64-invalid',
  TIME_INVALID: 'raw.time-invalid',
  RECEIPTS_EMPTY: 'raw.receipts-empty',
  RECEIPT_REPLICA: 'raw.receipt-replica',
  RECEIPT_DUPLICATE_REPLICA: 'raw.receipt-duplicate-replica',
  CLOCK_PAIR: 'raw.clock-pair',
  CLOCK_BOUND_NEGATIVE: 'raw.clock-bound-negative',
  CLOCK_BOUND_BELOW_OFFSET: 'raw.clock-bound-below-offset',
  UNKNOWN_FIELD: 'raw.unknown-field',
} as const;
export type RawCodeValue = (typeof RawCode)[keyof typeof RawCode];

/** raw.* code for each JsonCode (index = JsonCode value). */
const JSON_TO_RAW: readonly RawCodeValue[] = [
  RawCode.NOT_JSON, // OK: unused
  RawCode.NOT_UTF8,
  RawCode.BOM,
  RawCode.NOT_JSON,
  RawCode.LINE_NOT_CANONICAL,
  RawCode.DUPLICATE_KEY,
  RawCode.LONE_SURROGATE,
  RawCode.NUMBER_NOT_INTEGER,
  RawCode.NUMBER_OUT_OF_RANGE,
  RawCode.TOO_DEEP,
];

export interface EnvelopeFinding {
  code: RawCodeValue;
  /** A short sentence naming the field path. */
  detail: string;
}

export interface EnvelopeOptions {
  /** Report fields the spec does not define as `raw.unknown-field`. */
  strict?: boolean;
}

/** Replica index used by the per-replica fields: 0 = "a", 1 = "b". */
export const REPLICA_A = 0;
export const REPLICA_B = 1;

/**
 * Reusable output of {@link checkEnvelope}. Every field is overwritten by each
 * call and nothing is allocated for a valid line: findings live in two
 * parallel arrays (`codes`, `details`) of which the first `findingCount`
 * entries are this line's (later entries are stale leftovers). Times are
 * (seconds since the epoch, 0..999999999 ns) as numbers.
 *
 * Values describe what was found on the line even when it has findings, but
 * only a line with `ok` true is a valid envelope.
 */
export class EnvelopeResult {
  /** True when the line has no findings. */
  ok = true;
  /** Number of findings of the line. */
  findingCount = 0;
  /** Finding codes; entries [0, findingCount) belong to the line. */
  readonly codes: RawCodeValue[] = [];
  /** Finding details (short sentences naming the field path), parallel to `codes`. */
  readonly details: string[] = [];

  /** Whether a frame time was computed ("Raw file": earliest bounded receive_time, else earliest of all). */
  hasFrameTime = false;
  frameSec = 0;
  frameNsec = 0;

  /** exchange_time, when present and valid. */
  hasExchangeTime = false;
  exchangeSec = 0;
  exchangeNsec = 0;

  /** Number of elements of `receipts` (0 when absent or not an array). */
  receiptCount = 0;
  /**
   * Receipts without clock_error_bound. When it equals `receiptCount` (> 0)
   * no receipt of the frame is bounded: the hour's reasons must include
   * clock_offset_unknown (check 8).
   */
  unboundedReceipts = 0;
  /** Some receipt lacks clock_offset. */
  lacksOffset = false;

  /** Tape token of the payload string, -1 when absent; see `json.tape`. */
  payloadToken = -1;
  /** payload_encoding is "base64". */
  payloadBase64 = false;

  /** Per replica (index {@link REPLICA_A}/{@link REPLICA_B}): 1 when the line has its receipt. */
  readonly replicaPresent = new Uint8Array(2);
  /** Per replica: its receipt's clock_error_bound, or -1 when absent (for clock.error_bound_max / unbounded). */
  readonly replicaBound = new Float64Array(2);
  /** Per replica: tape token of its receipt's `connection` string, or -1 (for check 9). */
  readonly replicaConnectionToken = new Int32Array(2);
  /** Per replica: its receipt's receive_time (valid when present and the line is ok). */
  readonly replicaReceiveSec = new Float64Array(2);
  readonly replicaReceiveNsec = new Float64Array(2);

  /**
   * The canonical-JSON checker used for the line. After checkEnvelope its
   * `tape` describes the line (when no JSON-level finding was made), with
   * offsets into the caller's buffer.
   */
  readonly json = new CanonicalChecker({ integersOnly: true, maxDepth: 32 });

  /** Scratch for time parsing. */
  readonly time: TimeParts = newTimeParts();

  /** The line's findings as objects (allocates; for tests and reports). */
  get findings(): EnvelopeFinding[] {
    const out: EnvelopeFinding[] = [];
    for (let i = 0; i < this.findingCount; i++) out.push({ code: this.codes[i]!, detail: this.details[i]! });
    return out;
  }
}

/** A fresh reusable result. */
export function newEnvelopeResult(): EnvelopeResult {
  return new EnvelopeResult();
}

// Field names as bytes. Canonical text has one encoding per string, so a key
// is a given name exactly when its content bytes are the name's bytes.
const ascii = (s: string) => Uint8Array.from(s, (ch) => ch.charCodeAt(0));
const K_EXCHANGE_TIME = ascii('exchange_time');
const K_PAYLOAD = ascii('payload');
const K_PAYLOAD_ENCODING = ascii('payload_encoding');
const K_RECEIPTS = ascii('receipts');
const K_CLOCK_ERROR_BOUND = ascii('clock_error_bound');
const K_CLOCK_OFFSET = ascii('clock_offset');
const K_CONNECTION = ascii('connection');
const K_RECEIVE_TIME = ascii('receive_time');
const K_REPLICA = ascii('replica');
const V_TEXT = ascii('text');
const V_BASE64 = ascii('base64');

function bytesEqual(buf: Uint8Array, s: number, e: number, lit: Uint8Array): boolean {
  const n = lit.length;
  if (e - s !== n) return false;
  for (let i = 0; i < n; i++) if (buf[s + i] !== lit[i]) return false;
  return true;
}

/** Base64 digit value of a byte, or 255 (standard alphabet only). */
const B64 = (() => {
  const t = new Uint8Array(256).fill(255);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (let i = 0; i < 64; i++) t[alphabet.charCodeAt(i)] = i;
  return t;
})();

/**
 * Strict RFC 4648 base64 check of string content bytes: standard alphabet,
 * length a multiple of 4, `=` only as the last one or two characters, and the
 * bits that padding leaves unused all zero (so that each byte string has one
 * encoding). Returns -1 when valid, else the offset (from s) of the first bad
 * character, or the content length when the length is wrong. The content of a
 * canonical string cannot hold an escape that decodes to an alphabet
 * character, so a backslash is simply an invalid character.
 */
export function checkBase64(buf: Uint8Array, s: number, e: number): number {
  const n = e - s;
  const t = B64;
  if (n === 0) return -1;
  // All but the last quantum: alphabet only.
  const last = e - 4;
  let p = s;
  for (; p < last; p++) if (t[buf[p]!] === 255) return p - s;
  if (n % 4 !== 0) {
    for (; p < e; p++) if (t[buf[p]!] === 255 && buf[p] !== 0x3d) return p - s;
    return n;
  }
  const c0 = t[buf[last]!]!;
  const c1 = t[buf[last + 1]!]!;
  if (c0 === 255) return n - 4;
  if (c1 === 255) return n - 3;
  const b2 = buf[last + 2]!;
  const b3 = buf[last + 3]!;
  if (b3 === 0x3d) {
    if (b2 === 0x3d) {
      // "xx==": one byte; the low 4 bits of the second digit are unused.
      return (c1 & 0x0f) === 0 ? -1 : n - 3;
    }
    const c2 = t[b2]!;
    if (c2 === 255) return n - 2;
    // "xxx=": two bytes; the low 2 bits of the third digit are unused.
    return (c2 & 0x03) === 0 ? -1 : n - 2;
  }
  if (t[b2] === 255) return n - 2;
  if (t[b3] === 255) return n - 1;
  return -1;
}

/** Value of a canonical integer token's bytes (exact: |value| < 2^53). */
function intValue(buf: Uint8Array, s: number, e: number): number {
  let p = s;
  const neg = buf[p] === 0x2d;
  if (neg) p++;
  let v = 0;
  for (; p < e; p++) v = v * 10 + (buf[p]! - 48);
  return neg ? -v : v;
}

// --- error-path helpers (allocate) -------------------------------------------

const utf8 = new TextDecoder('utf-8');

function add(result: EnvelopeResult, code: RawCodeValue, detail: string): void {
  const i = result.findingCount++;
  result.ok = false;
  result.codes[i] = code;
  result.details[i] = detail;
}

function tokenText(buf: Uint8Array, result: EnvelopeResult, tok: number): string {
  const tape = result.json.tape;
  const text = utf8.decode(buf.subarray(tape.start[tok]!, tape.end[tok]!));
  return text.length > 80 ? text.slice(0, 77) + '...' : text;
}

const KIND_NAMES = ['', 'an object', 'an array', 'a string', 'a number', 'true', 'false', 'null'];

function kindName(result: EnvelopeResult, tok: number): string {
  return KIND_NAMES[result.json.tape.kind[tok]!] ?? 'a value';
}

function receiptPath(i: number, field: string): string {
  return `receipts[${i}].${field}`;
}

function timeFinding(buf: Uint8Array, result: EnvelopeResult, tok: number, path: string, code: number): void {
  const tape = result.json.tape;
  const why = describeTimeError(code, buf, tape.start[tok]! + 1, tape.end[tok]! - 1, result.time.errorAt);
  add(result, RawCode.TIME_INVALID, `${path} ${tokenText(buf, result, tok)} is invalid: ${why}`);
}

function unknownField(buf: Uint8Array, result: EnvelopeResult, keyTok: number, where: string): void {
  add(result, RawCode.UNKNOWN_FIELD, `${where}has field ${tokenText(buf, result, keyTok)} that the format does not define`);
}

// -----------------------------------------------------------------------------

/**
 * Checks one raw-file line `buf[start, end)` (without its newline) and fills
 * `result`. Returns `result.ok`.
 */
export function checkEnvelope(
  buf: Uint8Array,
  start: number,
  end: number,
  result: EnvelopeResult,
  options?: EnvelopeOptions,
): boolean {
  const strict = options !== undefined && options.strict === true;
  result.ok = true;
  result.findingCount = 0;
  result.hasFrameTime = false;
  result.frameSec = 0;
  result.frameNsec = 0;
  result.hasExchangeTime = false;
  result.exchangeSec = 0;
  result.exchangeNsec = 0;
  result.receiptCount = 0;
  result.unboundedReceipts = 0;
  result.lacksOffset = false;
  result.payloadToken = -1;
  result.payloadBase64 = false;
  const replicaPresent = result.replicaPresent;
  const replicaBound = result.replicaBound;
  const replicaConn = result.replicaConnectionToken;
  replicaPresent[0] = 0;
  replicaPresent[1] = 0;
  replicaBound[0] = -1;
  replicaBound[1] = -1;
  replicaConn[0] = -1;
  replicaConn[1] = -1;

  // ---- JSON level ----
  const checker = result.json;
  const code = checker.check(buf, start, end);
  if (code !== 0 /* JsonCode.OK */) {
    add(result, JSON_TO_RAW[code] ?? RawCode.NOT_JSON, `line ${checker.describe(start)}`);
    return false;
  }

  const tape = checker.tape;
  const kinds = tape.kind;
  const starts = tape.start;
  const ends = tape.end;
  const nexts = tape.next;
  const time = result.time;

  if (kinds[0] !== 1) {
    add(result, RawCode.NOT_OBJECT, `line is ${kindName(result, 0)}, not an object`);
    return false;
  }

  // ---- top-level fields (keys come sorted; match by length, then bytes) ----
  let payloadTok = -1;
  let encodingTok = -1;
  let exchangeTok = -1;
  let receiptsTok = -1;
  const rootEnd = nexts[0]!;
  for (let k = 1; k < rootEnd; k = nexts[k + 1]!) {
    const ks = starts[k]! + 1;
    const ke = ends[k]! - 1;
    const len = ke - ks;
    if (len === 7 && bytesEqual(buf, ks, ke, K_PAYLOAD)) payloadTok = k + 1;
    else if (len === 16 && bytesEqual(buf, ks, ke, K_PAYLOAD_ENCODING)) encodingTok = k + 1;
    else if (len === 8 && bytesEqual(buf, ks, ke, K_RECEIPTS)) receiptsTok = k + 1;
    else if (len === 13 && bytesEqual(buf, ks, ke, K_EXCHANGE_TIME)) exchangeTok = k + 1;
    else if (strict) unknownField(buf, result, k, 'envelope ');
  }

  // payload
  if (payloadTok < 0) {
    add(result, RawCode.FIELD_MISSING, 'payload is missing');
  } else if (kinds[payloadTok] !== 3) {
    add(result, RawCode.FIELD_TYPE, `payload is ${kindName(result, payloadTok)}, not a string`);
  } else {
    result.payloadToken = payloadTok;
  }

  // payload_encoding (and the payload's base64 form)
  if (encodingTok < 0) {
    add(result, RawCode.FIELD_MISSING, 'payload_encoding is missing');
  } else if (kinds[encodingTok] !== 3) {
    add(result, RawCode.FIELD_TYPE, `payload_encoding is ${kindName(result, encodingTok)}, not a string`);
  } else {
    const s = starts[encodingTok]! + 1;
    const e = ends[encodingTok]! - 1;
    if (bytesEqual(buf, s, e, V_TEXT)) {
      // verbatim text: any string
    } else if (bytesEqual(buf, s, e, V_BASE64)) {
      result.payloadBase64 = true;
      if (result.payloadToken >= 0) {
        const ps = starts[payloadTok]! + 1;
        const pe = ends[payloadTok]! - 1;
        const bad = checkBase64(buf, ps, pe);
        if (bad >= 0) {
          add(
            result,
            RawCode.BASE64_INVALID,
            bad === pe - ps
              ? `payload is not strict base64: length ${pe - ps} is not a multiple of 4`
              : `payload is not strict base64 (standard alphabet, "=" padding, zero unused bits): bad character at offset ${bad}`,
          );
        }
      }
    } else {
      add(
        result,
        RawCode.PAYLOAD_ENCODING,
        `payload_encoding ${tokenText(buf, result, encodingTok)} is not "text" or "base64"`,
      );
    }
  }

  // exchange_time (optional)
  if (exchangeTok >= 0) {
    if (kinds[exchangeTok] !== 3) {
      add(result, RawCode.FIELD_TYPE, `exchange_time is ${kindName(result, exchangeTok)}, not a time string`);
    } else {
      const tc = parseTimeBytes(buf, starts[exchangeTok]! + 1, ends[exchangeTok]! - 1, time);
      if (tc === 0 /* TimeError.OK */) {
        result.hasExchangeTime = true;
        result.exchangeSec = time.sec;
        result.exchangeNsec = time.nsec;
      } else {
        timeFinding(buf, result, exchangeTok, 'exchange_time', tc);
      }
    }
  }

  // receipts
  if (receiptsTok < 0) {
    add(result, RawCode.FIELD_MISSING, 'receipts is missing');
    return result.ok;
  }
  if (kinds[receiptsTok] !== 2) {
    add(result, RawCode.FIELD_TYPE, `receipts is ${kindName(result, receiptsTok)}, not an array`);
    return result.ok;
  }
  const receiptsEnd = nexts[receiptsTok]!;
  if (receiptsEnd === receiptsTok + 1) {
    add(result, RawCode.RECEIPTS_EMPTY, 'receipts is empty; a frame has at least one receipt');
    return result.ok;
  }

  // Frame time candidates: earliest among bounded receipts, earliest among all.
  let boundedFound = false;
  let boundedSec = 0;
  let boundedNsec = 0;
  let anyFound = false;
  let anySec = 0;
  let anyNsec = 0;
  let count = 0;
  let unbounded = 0;

  for (let r = receiptsTok + 1; r < receiptsEnd; r = nexts[r]!, count++) {
    if (kinds[r] !== 1) {
      add(result, RawCode.FIELD_TYPE, `receipts[${count}] is ${kindName(result, r)}, not an object`);
      unbounded++;
      result.lacksOffset = true;
      continue;
    }
    let replicaTok = -1;
    let connectionTok = -1;
    let receiveTok = -1;
    let offsetTok = -1;
    let boundTok = -1;
    const rEnd = nexts[r]!;
    for (let k = r + 1; k < rEnd; k = nexts[k + 1]!) {
      const ks = starts[k]! + 1;
      const ke = ends[k]! - 1;
      const len = ke - ks;
      if (len === 7 && bytesEqual(buf, ks, ke, K_REPLICA)) replicaTok = k + 1;
      else if (len === 10 && bytesEqual(buf, ks, ke, K_CONNECTION)) connectionTok = k + 1;
      else if (len === 12 && bytesEqual(buf, ks, ke, K_RECEIVE_TIME)) receiveTok = k + 1;
      else if (len === 12 && bytesEqual(buf, ks, ke, K_CLOCK_OFFSET)) offsetTok = k + 1;
      else if (len === 17 && bytesEqual(buf, ks, ke, K_CLOCK_ERROR_BOUND)) boundTok = k + 1;
      else if (strict) unknownField(buf, result, k, `receipts[${count}] `);
    }

    // replica
    let replica = -1;
    if (replicaTok < 0) {
      add(result, RawCode.FIELD_MISSING, `${receiptPath(count, 'replica')} is missing`);
    } else if (kinds[replicaTok] !== 3) {
      add(result, RawCode.FIELD_TYPE, `${receiptPath(count, 'replica')} is ${kindName(result, replicaTok)}, not a string`);
    } else {
      const s = starts[replicaTok]! + 1;
      const c = buf[s]!;
      if (ends[replicaTok]! - 1 - s === 1 && (c === 0x61 || c === 0x62)) {
        replica = c - 0x61;
        if (replicaPresent[replica] !== 0) {
          add(
            result,
            RawCode.RECEIPT_DUPLICATE_REPLICA,
            `${receiptPath(count, 'replica')} "${replica === 0 ? 'a' : 'b'}" already has a receipt on this line`,
          );
          replica = -1; // the first receipt of the replica stays the one recorded
        } else {
          replicaPresent[replica] = 1;
        }
      } else {
        add(result, RawCode.RECEIPT_REPLICA, `${receiptPath(count, 'replica')} ${tokenText(buf, result, replicaTok)} is not "a" or "b"`);
      }
    }

    // connection
    if (connectionTok < 0) {
      add(result, RawCode.FIELD_MISSING, `${receiptPath(count, 'connection')} is missing`);
    } else if (kinds[connectionTok] !== 3) {
      add(result, RawCode.FIELD_TYPE, `${receiptPath(count, 'connection')} is ${kindName(result, connectionTok)}, not a string`);
    } else if (replica >= 0) {
      replicaConn[replica] = connectionTok;
    }

    // clock_offset / clock_error_bound
    let offset = 0;
    let bound = -1;
    let offsetOk = false;
    let boundOk = false;
    if (offsetTok >= 0) {
      if (kinds[offsetTok] !== 4) {
        add(result, RawCode.FIELD_TYPE, `${receiptPath(count, 'clock_offset')} is ${kindName(result, offsetTok)}, not an integer`);
      } else {
        offset = intValue(buf, starts[offsetTok]!, ends[offsetTok]!);
        offsetOk = true;
      }
    }
    if (boundTok >= 0) {
      if (kinds[boundTok] !== 4) {
        add(result, RawCode.FIELD_TYPE, `${receiptPath(count, 'clock_error_bound')} is ${kindName(result, boundTok)}, not an integer`);
      } else {
        bound = intValue(buf, starts[boundTok]!, ends[boundTok]!);
        boundOk = true;
      }
    }
    if (offsetTok < 0) result.lacksOffset = true;
    if (boundTok < 0) unbounded++;
    if ((offsetTok >= 0) !== (boundTok >= 0)) {
      add(
        result,
        RawCode.CLOCK_PAIR,
        offsetTok >= 0
          ? `${receiptPath(count, 'clock_offset')} is present without clock_error_bound`
          : `${receiptPath(count, 'clock_error_bound')} is present without clock_offset`,
      );
    }
    if (boundOk) {
      if (bound < 0) {
        add(result, RawCode.CLOCK_BOUND_NEGATIVE, `${receiptPath(count, 'clock_error_bound')} ${bound} is negative`);
      } else if (offsetOk && bound < (offset < 0 ? -offset : offset)) {
        add(
          result,
          RawCode.CLOCK_BOUND_BELOW_OFFSET,
          `${receiptPath(count, 'clock_error_bound')} ${bound} is below |clock_offset| ${offset < 0 ? -offset : offset}`,
        );
      }
      if (replica >= 0) replicaBound[replica] = bound;
    }

    // receive_time
    if (receiveTok < 0) {
      add(result, RawCode.FIELD_MISSING, `${receiptPath(count, 'receive_time')} is missing`);
    } else if (kinds[receiveTok] !== 3) {
      add(result, RawCode.FIELD_TYPE, `${receiptPath(count, 'receive_time')} is ${kindName(result, receiveTok)}, not a time string`);
    } else {
      const tc = parseTimeBytes(buf, starts[receiveTok]! + 1, ends[receiveTok]! - 1, time);
      if (tc !== 0 /* TimeError.OK */) {
        timeFinding(buf, result, receiveTok, receiptPath(count, 'receive_time'), tc);
      } else {
        const sec = time.sec;
        const nsec = time.nsec;
        if (replica >= 0) {
          result.replicaReceiveSec[replica] = sec;
          result.replicaReceiveNsec[replica] = nsec;
        }
        if (!anyFound || sec < anySec || (sec === anySec && nsec < anyNsec)) {
          anyFound = true;
          anySec = sec;
          anyNsec = nsec;
        }
        if (boundTok >= 0 && (!boundedFound || sec < boundedSec || (sec === boundedSec && nsec < boundedNsec))) {
          boundedFound = true;
          boundedSec = sec;
          boundedNsec = nsec;
        }
      }
    }
  }

  result.receiptCount = count;
  result.unboundedReceipts = unbounded;
  if (boundedFound) {
    result.hasFrameTime = true;
    result.frameSec = boundedSec;
    result.frameNsec = boundedNsec;
  } else if (anyFound && unbounded === count) {
    // No receipt carries clock_error_bound: the earliest of all receipts.
    result.hasFrameTime = true;
    result.frameSec = anySec;
    result.frameNsec = anyNsec;
  }
  return result.ok;
}

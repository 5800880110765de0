/**
 * A byte-level validator for RFC 8785 (JSON Canonicalization Scheme) text.
 *
 * `CanonicalChecker.check(buf, start, end)` decides whether the bytes
 * `buf[start, end)` are exactly what a JCS serializer (for example the
 * `canonicalize` package) writes for the value they denote, and leaves a token
 * tape describing the parsed structure. It never calls JSON.parse and never
 * decodes strings to JS strings on the way: the raw-file verifier runs it over
 * millions of lines, and decoding would cost more than the whole check (see
 * DESIGN.md, "Measured speeds").
 *
 * What "canonical" means here, byte for byte:
 * - valid UTF-8 (no overlong forms, no UTF-8-encoded surrogates, nothing above
 *   U+10FFFF), no byte order mark;
 * - no whitespace outside strings;
 * - object keys strictly increasing in UTF-16 code-unit order (so no
 *   duplicates); UTF-8 byte order is not that order: U+E000..U+FFFF sort after
 *   supplementary characters in UTF-16 (whose high surrogates are 0xD800..)
 *   but before them in UTF-8;
 * - strings escaped as ES2015+ JSON.stringify does: `\"`, `\\`, `\b`, `\f`,
 *   `\n`, `\r`, `\t`, other code points below U+0020 as `\u00xx` with
 *   lowercase hex, everything else literal (including `/`, DEL, U+2028,
 *   U+2029 and all non-ASCII). An escaped lone surrogate has no canonical form
 *   (JCS rejects it) and is reported as such; an escaped surrogate pair is a
 *   valid character written in a non-canonical way;
 * - numbers as ES2015 Number-to-String writes them (shortest round trip, no
 *   `-0`, `1e+21` style exponents). With `integersOnly` (the default, as the
 *   record format requires) a number must in addition be an integer within
 *   +-(2^53 - 1).
 *
 * Findings. `check` returns 0 or one of {@link JsonCode}. Some failures stop
 * the scan ("fatal": invalid UTF-8, BOM, syntax error, nesting too deep).
 * Others ("soft": not canonical, duplicate key, lone surrogate, number not an
 * integer or out of range) are recorded and the scan goes on, so that a text
 * that is not JSON at all is reported as a syntax error rather than as
 * "not canonical" because of an earlier space. Only the first finding is kept;
 * a fatal one replaces a soft one, and a fatal one is replaced by NOT_UTF8 when
 * the bytes from its position on are not valid UTF-8 (undecodable bytes are
 * the more basic fault). Whitespace is only looked for in the branches taken
 * when an unexpected byte turns up, so tolerating it costs nothing on
 * canonical input.
 *
 * Speed notes (the target is several hundred MB/s on one core):
 * - all cursors and array references are locals of `check`; V8 keeps them in
 *   registers, which module-level or `this` fields would defeat;
 * - one table lookup per string byte on the ASCII path;
 * - no recursion: an explicit stack of typed arrays bounded by `maxDepth`;
 * - the tape is a set of parallel typed arrays that are reused across calls
 *   and doubled when full: no object per token, no allocation per line once
 *   warm.
 */

// ---------------------------------------------------------------------------
// Codes

/** Result codes of {@link CanonicalChecker.check}. 0 means canonical. */
export const JsonCode = {
  OK: 0,
  /** Bytes that are not UTF-8 (fatal). */
  NOT_UTF8: 1,
  /** A UTF-8 byte order mark at the start (fatal). */
  BOM: 2,
  /** Not JSON at all (fatal). */
  SYNTAX: 3,
  /** Valid JSON, but not the canonical bytes (soft). */
  NOT_CANONICAL: 4,
  /** An object key appears twice (soft). */
  DUPLICATE_KEY: 5,
  /** A `\u` escape of an unpaired surrogate (soft). */
  LONE_SURROGATE: 6,
  /** With integersOnly: a number that is not an integer (soft). */
  NUMBER_NOT_INTEGER: 7,
  /** With integersOnly: an integer outside +-(2^53 - 1) (soft). */
  NUMBER_OUT_OF_RANGE: 8,
  /** More nested containers than maxDepth (fatal). */
  TOO_DEEP: 9,
} as const;
export type JsonCodeValue = (typeof JsonCode)[keyof typeof JsonCode];

/** Stable neutral names of {@link JsonCode}, indexed by code. */
export const JSON_CODE_NAMES: readonly string[] = [
  'json.ok',
  'json.not-utf8',
  'json.bom',
  'json.syntax',
  'json.not-canonical',
  'json.duplicate-key',
  'json.lone-surrogate',
  'json.number-not-integer',
  'json.number-out-of-range',
  'json.too-deep',
];

/** Why a finding was made: the sub-reason behind a {@link JsonCode}. */
export const JsonReason = {
  NONE: 0,
  // not canonical
  WHITESPACE: 1,
  KEY_ORDER: 2,
  ESCAPE_SOLIDUS: 3,
  ESCAPE_NOT_NEEDED: 4,
  ESCAPE_SHORT_FORM: 5,
  ESCAPE_UPPERCASE_HEX: 6,
  ESCAPE_SURROGATE_PAIR: 7,
  NEGATIVE_ZERO: 8,
  NUMBER_FORM: 9,
  // syntax
  UNEXPECTED_END: 10,
  UNEXPECTED_BYTE: 11,
  UNTERMINATED_STRING: 12,
  CONTROL_IN_STRING: 13,
  BAD_ESCAPE: 14,
  BAD_NUMBER: 15,
  TRAILING_DATA: 16,
  EXPECTED_KEY: 17,
  EXPECTED_COLON: 18,
  // others carry no sub-reason beyond their code
} as const;

const REASON_TEXT: readonly string[] = [
  '',
  'whitespace outside a string',
  'object keys out of order',
  'escaped "/" (canonical form is a literal "/")',
  'escaped character that canonical form writes literally',
  '\\u escape of a character that has a short escape',
  'uppercase hexadecimal in a \\u escape',
  'escaped surrogate pair (canonical form is the literal character)',
  '-0 (canonical form is 0)',
  'number not in shortest ES2015 form',
  'unexpected end of text',
  'unexpected byte',
  'unterminated string',
  'raw control character in a string',
  'invalid escape',
  'malformed number',
  'data after the JSON value',
  'expected an object key',
  'expected ":"',
];

// ---------------------------------------------------------------------------
// Tape

/** Token kinds stored in {@link JsonTape.kind}. */
export const Kind = {
  OBJECT: 1,
  ARRAY: 2,
  STRING: 3,
  NUMBER: 4,
  TRUE: 5,
  FALSE: 6,
  NULL: 7,
} as const;
export type KindValue = (typeof Kind)[keyof typeof Kind];

/** Bits of {@link JsonTape.aux} for strings. */
export const StringFlag = {
  /** The string contains at least one escape: its bytes are not its value. */
  ESCAPED: 1,
  /** The string contains non-ASCII (multi-byte UTF-8) characters. */
  NON_ASCII: 2,
} as const;

/** Bits of {@link JsonTape.aux} for numbers. */
export const NumberFlag = {
  /** The number has a fraction or an exponent (never set when the check passed with integersOnly). */
  NOT_INTEGER_FORM: 1,
} as const;

/**
 * The parsed structure of the last checked text: one token per JSON value and
 * one per object key, in document (pre-)order, stored in parallel typed arrays.
 *
 * Why this shape: callers (the envelope rule, the normalizer) need to find a
 * few fields and read their bytes, millions of times. Parallel typed arrays
 * cost four or five integer stores per token and nothing per line once grown;
 * an object per token would be the dominant cost of the whole check. Offsets
 * are absolute positions in the checked buffer, so a caller reads values
 * straight from its own bytes.
 *
 * For token i:
 * - `kind[i]`: a {@link Kind}.
 * - `start[i]`, `end[i]`: byte range of the token's JSON text, `end` exclusive.
 *   For strings the range includes the quotes (content is
 *   `[start + 1, end - 1)`); for containers it spans the brackets.
 * - `next[i]`: index of the first token after i's whole subtree (i + 1 for
 *   scalars and keys). It makes skipping a value O(1) and iteration simple.
 * - `aux[i]`: containers: member count (array elements, or object key/value
 *   pairs); strings: {@link StringFlag} bits; numbers: {@link NumberFlag} bits.
 *
 * An object at i is followed by its members as (key, value) pairs: the key is
 * a STRING token, the value's subtree starts right after it.
 *
 *     // iterate an object's members
 *     for (let k = i + 1; k < tape.next[i]; k = tape.next[k + 1]) { key k, value k + 1 }
 *     // iterate an array's elements
 *     for (let e = i + 1; e < tape.next[i]; e = tape.next[e]) { element e }
 *
 * Token 0 is the root. The tape is complete only when `check` returned OK or
 * a soft code; after a fatal code `length` is 0 and the arrays hold garbage.
 */
export class JsonTape {
  kind: Uint8Array;
  start: Int32Array;
  end: Int32Array;
  next: Int32Array;
  aux: Int32Array;
  /** Number of tokens. */
  length = 0;

  constructor(initialCapacity = 256) {
    const n = Math.max(16, initialCapacity | 0);
    this.kind = new Uint8Array(n);
    this.start = new Int32Array(n);
    this.end = new Int32Array(n);
    this.next = new Int32Array(n);
    this.aux = new Int32Array(n);
  }

  get capacity(): number {
    return this.kind.length;
  }

  /** Doubles the capacity, keeping the first `used` tokens. */
  grow(used: number): void {
    const n = this.kind.length * 2;
    const kind = new Uint8Array(n);
    kind.set(this.kind.subarray(0, used));
    const start = new Int32Array(n);
    start.set(this.start.subarray(0, used));
    const end = new Int32Array(n);
    end.set(this.end.subarray(0, used));
    const next = new Int32Array(n);
    next.set(this.next.subarray(0, used));
    const aux = new Int32Array(n);
    aux.set(this.aux.subarray(0, used));
    this.kind = kind;
    this.start = start;
    this.end = end;
    this.next = next;
    this.aux = aux;
  }

  /**
   * Token index of the value of `key` in the object at token `obj`, or -1.
   * `key` is the key's canonical content bytes (for ASCII keys without
   * characters that need escaping, simply its ASCII bytes). Canonical text has
   * one encoding per string, so comparing bytes compares values.
   */
  find(buf: Uint8Array, obj: number, key: Uint8Array): number {
    if (this.kind[obj] !== Kind.OBJECT) return -1;
    const stop = this.next[obj]!;
    const n = key.length;
    for (let k = obj + 1; k < stop; k = this.next[k + 1]!) {
      const s = this.start[k]! + 1;
      if (this.end[k]! - 1 - s !== n) continue;
      let i = 0;
      while (i < n && buf[s + i] === key[i]) i++;
      if (i === n) return k + 1;
    }
    return -1;
  }

  /** True when the STRING token `tok` has exactly the content bytes `value`. */
  stringEquals(buf: Uint8Array, tok: number, value: Uint8Array): boolean {
    if (this.kind[tok] !== Kind.STRING) return false;
    const s = this.start[tok]! + 1;
    const n = value.length;
    if (this.end[tok]! - 1 - s !== n) return false;
    for (let i = 0; i < n; i++) if (buf[s + i] !== value[i]) return false;
    return true;
  }

  /**
   * The JS string value of a STRING token (decodes; not for hot paths). Uses
   * JSON.parse on the token's own text, which is a valid JSON string.
   */
  stringValue(buf: Uint8Array, tok: number): string {
    const s = this.start[tok]!;
    const e = this.end[tok]!;
    if ((this.aux[tok]! & StringFlag.ESCAPED) === 0) return utf8.decode(buf.subarray(s + 1, e - 1));
    return JSON.parse(utf8.decode(buf.subarray(s, e))) as string;
  }

  /** The raw JSON text of token `tok` (decodes; not for hot paths). */
  text(buf: Uint8Array, tok: number): string {
    return utf8.decode(buf.subarray(this.start[tok]!, this.end[tok]!));
  }
}

const utf8 = new TextDecoder('utf-8');

// ---------------------------------------------------------------------------
// Byte classes

/**
 * Class of a byte inside a string: 0 ordinary ASCII (stays on the fast path),
 * 1 '"', 2 '\\', 3 control (< 0x20, invalid raw), 4 lead of a 2-byte sequence
 * (C2..DF), 5 lead of a 3-byte sequence (E0..EF), 6 lead of a 4-byte sequence
 * (F0..F4), 7 never valid here (continuation bytes, C0, C1, F5..FF).
 */
const STRING_CLASS = (() => {
  const t = new Uint8Array(256);
  for (let c = 0; c < 0x20; c++) t[c] = 3;
  t[0x22] = 1;
  t[0x5c] = 2;
  for (let c = 0x80; c < 0xc2; c++) t[c] = 7;
  for (let c = 0xc2; c < 0xe0; c++) t[c] = 4;
  for (let c = 0xe0; c < 0xf0; c++) t[c] = 5;
  for (let c = 0xf0; c < 0xf5; c++) t[c] = 6;
  for (let c = 0xf5; c < 0x100; c++) t[c] = 7;
  return t;
})();

/** Hex digit value, or 255. */
const HEX = (() => {
  const t = new Uint8Array(256).fill(255);
  for (let c = 0; c < 10; c++) t[0x30 + c] = c;
  for (let c = 0; c < 6; c++) {
    t[0x61 + c] = 10 + c;
    t[0x41 + c] = 10 + c;
  }
  return t;
})();

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * Position of the first byte in `buf[pos, end)` that does not belong to a
 * valid UTF-8 sequence, or -1. `pos` must be at a character boundary.
 */
export function firstInvalidUtf8(buf: Uint8Array, pos: number, end: number): number {
  let p = pos;
  while (p < end) {
    const c = buf[p]!;
    if (c < 0x80) {
      p++;
      continue;
    }
    let n: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) n = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      if (c === 0xe0) lo = 0xa0; // overlong
      else if (c === 0xed) hi = 0x9f; // surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      if (c === 0xf0) lo = 0x90; // overlong
      else if (c === 0xf4) hi = 0x8f; // above U+10FFFF
    } else return p;
    if (p + n >= end) return p; // truncated sequence
    const b1 = buf[p + 1]!;
    if (b1 < lo || b1 > hi) return p;
    for (let i = 2; i <= n; i++) if ((buf[p + i]! & 0xc0) !== 0x80) return p;
    p += n + 1;
  }
  return -1;
}

/**
 * The UTF-16 sort key of the character starting at `p` in canonical string
 * content: first code unit * 0x10000 + second code unit (0 for BMP
 * characters). Escapes are decoded; canonical escapes only stand for
 * characters below U+0020, '"' and '\\'.
 */
function unitKey(buf: Uint8Array, p: number): number {
  const c = buf[p]!;
  if (c < 0x80) {
    if (c !== 0x5c) return c * 0x10000;
    const e = buf[p + 1]!;
    switch (e) {
      case 0x62:
        return 0x08 * 0x10000; // \b
      case 0x66:
        return 0x0c * 0x10000; // \f
      case 0x6e:
        return 0x0a * 0x10000; // \n
      case 0x72:
        return 0x0d * 0x10000; // \r
      case 0x74:
        return 0x09 * 0x10000; // \t
      case 0x75:
        return ((HEX[buf[p + 2]!]! << 12) | (HEX[buf[p + 3]!]! << 8) | (HEX[buf[p + 4]!]! << 4) | HEX[buf[p + 5]!]!) * 0x10000;
      default:
        return e * 0x10000; // \" or \\ (the escaped byte is the character)
    }
  }
  if (c < 0xe0) return (((c & 0x1f) << 6) | (buf[p + 1]! & 0x3f)) * 0x10000;
  if (c < 0xf0) return (((c & 0x0f) << 12) | ((buf[p + 1]! & 0x3f) << 6) | (buf[p + 2]! & 0x3f)) * 0x10000;
  const cp =
    ((c & 0x07) << 18) | ((buf[p + 1]! & 0x3f) << 12) | ((buf[p + 2]! & 0x3f) << 6) | (buf[p + 3]! & 0x3f);
  const v = cp - 0x10000;
  return (0xd800 + (v >> 10)) * 0x10000 + (0xdc00 + (v & 0x3ff));
}

/**
 * Compares two canonical string contents `buf[a, aEnd)` and `buf[b, bEnd)` in
 * UTF-16 code-unit order: negative, 0 (equal) or positive.
 *
 * Canonical strings have one encoding per value, so an equal byte prefix is an
 * equal character prefix. At the first differing byte we step back to the
 * start of the character (both sides are at the same offset and both mid-
 * character, or both at a boundary) and compare the two characters' UTF-16
 * units. ASCII bytes that are not escapes compare as themselves: the fast path.
 */
export function compareCanonicalStrings(buf: Uint8Array, a: number, aEnd: number, b: number, bEnd: number): number {
  let i = a;
  let j = b;
  for (;;) {
    if (i === aEnd) return j === bEnd ? 0 : -1;
    if (j === bEnd) return 1;
    const x = buf[i]!;
    const y = buf[j]!;
    if (x === y) {
      if (x === 0x5c) {
        // Whole escapes are compared at once so that the first difference is
        // never found in the middle of one.
        const kx = unitKey(buf, i);
        const ky = unitKey(buf, j);
        if (kx !== ky) return kx - ky;
        // (Each side steps over its own escape, so that even for non-canonical
        // input, where the two could differ in length, both stay in range.)
        i += buf[i + 1] === 0x75 ? 6 : 2;
        j += buf[j + 1] === 0x75 ? 6 : 2;
        continue;
      }
      i++;
      j++;
      continue;
    }
    if (x < 0x80 && y < 0x80 && x !== 0x5c && y !== 0x5c) return x - y;
    while ((buf[i]! & 0xc0) === 0x80) {
      i--;
      j--;
    }
    return unitKey(buf, i) - unitKey(buf, j);
  }
}

// ---------------------------------------------------------------------------
// Checker

export interface CanonicalCheckOptions {
  /** Numbers must be integers within +-(2^53 - 1). Default true (record format). */
  integersOnly?: boolean;
  /** Maximum number of nested containers; the root container is depth 1. Default 32. */
  maxDepth?: number;
}

const MAX_SAFE = 9007199254740991;

/**
 * Checks texts for canonical form; reuse one instance for many texts (its
 * tape and stack are reused). Not reentrant: one check at a time per instance.
 */
export class CanonicalChecker {
  readonly tape: JsonTape;
  readonly integersOnly: boolean;
  readonly maxDepth: number;

  /** Result of the last check: a {@link JsonCode}. */
  code = 0;
  /** Absolute byte position the finding is about (-1 when OK). */
  pos = -1;
  /** A {@link JsonReason} refining `code`. */
  reason = 0;

  // Explicit parse stack, indexed by depth (1-based; 0 is "outside any container").
  private stackTok: Int32Array;
  private stackIsObj: Uint8Array;
  private stackCommas: Int32Array;
  private stackPrevKey: Int32Array;

  constructor(options: CanonicalCheckOptions = {}) {
    this.integersOnly = options.integersOnly ?? true;
    const maxDepth = options.maxDepth ?? 32;
    if (!Number.isInteger(maxDepth) || maxDepth < 0 || maxDepth > 1_000_000) {
      throw new RangeError(`maxDepth must be an integer 0..1000000, got ${maxDepth}`);
    }
    this.maxDepth = maxDepth;
    this.tape = new JsonTape();
    const n = maxDepth + 2;
    this.stackTok = new Int32Array(n);
    this.stackIsObj = new Uint8Array(n);
    this.stackCommas = new Int32Array(n);
    this.stackPrevKey = new Int32Array(n);
  }

  /** The stable neutral name of the last result, e.g. `json.not-canonical`. */
  get codeName(): string {
    return JSON_CODE_NAMES[this.code] ?? 'json.unknown';
  }

  /**
   * A short sentence describing the last finding (allocates; error path only).
   * `base` is subtracted from the byte position (pass the line's start to get
   * line-relative offsets).
   */
  describe(base = 0): string {
    const at = `at byte ${this.pos - base}`;
    switch (this.code) {
      case JsonCode.OK:
        return 'canonical';
      case JsonCode.NOT_UTF8:
        return `invalid UTF-8 ${at}`;
      case JsonCode.BOM:
        return 'starts with a UTF-8 byte order mark';
      case JsonCode.SYNTAX:
        return `not JSON: ${REASON_TEXT[this.reason] ?? 'syntax error'} ${at}`;
      case JsonCode.NOT_CANONICAL:
        return `not canonical JSON: ${REASON_TEXT[this.reason] ?? 'differs from canonical form'} ${at}`;
      case JsonCode.DUPLICATE_KEY:
        return `duplicate object key ${at}`;
      case JsonCode.LONE_SURROGATE:
        return `\\u escape of a lone surrogate ${at}`;
      case JsonCode.NUMBER_NOT_INTEGER:
        return `number is not an integer ${at}`;
      case JsonCode.NUMBER_OUT_OF_RANGE:
        return `integer is outside +-(2^53 - 1) ${at}`;
      case JsonCode.TOO_DEEP:
        return `nesting deeper than ${this.maxDepth} ${at}`;
      default:
        return `finding ${this.code} ${at}`;
    }
  }

  // Records a soft finding unless one is already recorded.
  private soft(code: number, reason: number, pos: number): void {
    if (this.code === 0) {
      this.code = code;
      this.reason = reason;
      this.pos = pos;
    }
  }

  // Records a fatal finding (replacing a soft one); returns -1 for callers to propagate.
  private fatal(code: number, reason: number, pos: number, buf: Uint8Array, end: number): number {
    if (code !== JsonCode.NOT_UTF8) {
      const bad = firstInvalidUtf8(buf, code === JsonCode.BOM ? pos + 3 : pos, end);
      if (bad >= 0) {
        code = JsonCode.NOT_UTF8;
        reason = 0;
        pos = bad;
      }
    }
    this.code = code;
    this.reason = reason;
    this.pos = pos;
    return -1;
  }

  /**
   * Checks `buf[start, end)`. Returns 0 when the bytes are canonical, else a
   * {@link JsonCode} (also in `this.code`, with `this.pos` and `this.reason`).
   * The tape describes the text unless the code is fatal (NOT_UTF8, BOM,
   * SYNTAX, TOO_DEEP).
   */
  check(buf: Uint8Array, start: number, end: number): number {
    if (start < 0 || end > buf.length || start > end || end > 0x7fffffff) {
      throw new RangeError(`invalid range [${start}, ${end}) for a buffer of ${buf.length} bytes`);
    }
    this.code = 0;
    this.reason = 0;
    this.pos = -1;
    const tape = this.tape;
    tape.length = 0;

    let kinds = tape.kind;
    let starts = tape.start;
    let ends = tape.end;
    let nexts = tape.next;
    let aux = tape.aux;
    let cap = kinds.length;

    const stackTok = this.stackTok;
    const stackIsObj = this.stackIsObj;
    const stackCommas = this.stackCommas;
    const stackPrevKey = this.stackPrevKey;
    const maxDepth = this.maxDepth;
    const cls = STRING_CLASS;

    let pos = start;
    let nt = 0;
    let depth = 0;
    let needKey = false;
    let c = 0;

    if (end - start >= 3 && buf[pos] === 0xef && buf[pos + 1] === 0xbb && buf[pos + 2] === 0xbf) {
      this.fatal(JsonCode.BOM, 0, pos, buf, end);
      return this.code;
    }

    outer: for (;;) {
      afterValue: {
        // ---- an object key and its colon, when inside an object ----
        if (needKey) {
          needKey = false;
          if (pos >= end) return this.fail(JsonCode.SYNTAX, JsonReason.UNEXPECTED_END, pos, buf, end);
          c = buf[pos]!;
          if (c !== 0x22) {
            if (isWs(c)) {
              this.soft(JsonCode.NOT_CANONICAL, JsonReason.WHITESPACE, pos);
              while (pos < end && isWs(buf[pos]!)) pos++;
              if (pos >= end) return this.fail(JsonCode.SYNTAX, JsonReason.UNEXPECTED_END, pos, buf, end);
              c = buf[pos]!;
            }
            // "{ }": an empty object with whitespace inside.
            if (c === 0x7d && nt === stackTok[depth]! + 1) break afterValue;
            if (c !== 0x22) return this.fail(JsonCode.SYNTAX, JsonReason.EXPECTED_KEY, pos, buf, end);
          }
          if (nt === cap) {
            tape.grow(nt);
            kinds = tape.kind;
            starts = tape.start;
            ends = tape.end;
            nexts = tape.next;
            aux = tape.aux;
            cap = kinds.length;
          }
          const k = nt++;
          kinds[k] = 3; // Kind.STRING
          starts[k] = pos;
          // Inline ASCII fast path; anything else continues in scanString.
          let p = pos + 1;
          while (p < end && cls[buf[p]!] === 0) p++;
          if (p < end && buf[p] === 0x22) {
            aux[k] = 0;
            pos = p + 1;
          } else {
            p = this.scanString(buf, pos, p, end, aux, k);
            if (p < 0) return this.code;
            pos = p;
          }
          ends[k] = pos;
          nexts[k] = k + 1;
          // Keys strictly increasing in UTF-16 order.
          const pk = stackPrevKey[depth]!;
          if (pk >= 0) {
            const cmp = compareCanonicalStrings(buf, starts[pk]! + 1, ends[pk]! - 1, starts[k]! + 1, pos - 1);
            if (cmp >= 0 && this.code === 0) this.keyOrderFinding(buf, cmp, stackTok[depth]!, k);
          }
          stackPrevKey[depth] = k;
          if (pos < end && buf[pos] === 0x3a) {
            pos++;
          } else {
            if (pos < end && isWs(buf[pos]!)) {
              this.soft(JsonCode.NOT_CANONICAL, JsonReason.WHITESPACE, pos);
              while (pos < end && isWs(buf[pos]!)) pos++;
            }
            if (pos < end && buf[pos] === 0x3a) pos++;
            else return this.fail(JsonCode.SYNTAX, pos < end ? JsonReason.EXPECTED_COLON : JsonReason.UNEXPECTED_END, pos, buf, end);
          }
        }

        // ---- a value ----
        if (pos >= end) return this.fail(JsonCode.SYNTAX, JsonReason.UNEXPECTED_END, pos, buf, end);
        c = buf[pos]!;
        if (c <= 0x20) {
          if (!isWs(c)) return this.fail(JsonCode.SYNTAX, JsonReason.UNEXPECTED_BYTE, pos, buf, end);
          this.soft(JsonCode.NOT_CANONICAL, JsonReason.WHITESPACE, pos);
          while (pos < end && isWs(buf[pos]!)) pos++;
          if (pos >= end) return this.fail(JsonCode.SYNTAX, JsonReason.UNEXPECTED_END, pos, buf, end);
          c = buf[pos]!;
          // "[ ]": an empty array with whitespace inside.
          if (c === 0x5d && depth > 0 && stackIsObj[depth] === 0 && nt === stackTok[depth]! + 1) break afterValue;
        }
        if (nt === cap) {
          tape.grow(nt);
          kinds = tape.kind;
          starts = tape.start;
          ends = tape.end;
          nexts = tape.next;
          aux = tape.aux;
          cap = kinds.length;
        }
        const t = nt++;
        starts[t] = pos;
        if (c === 0x22) {
          kinds[t] = 3; // Kind.STRING
          let p = pos + 1;
          while (p < end && cls[buf[p]!] === 0) p++;
          if (p < end && buf[p] === 0x22) {
            aux[t] = 0;
            pos = p + 1;
          } else {
            p = this.scanString(buf, pos, p, end, aux, t);
            if (p < 0) return this.code;
            pos = p;
          }
          ends[t] = pos;
          nexts[t] = t + 1;
        } else if (c === 0x7b || c === 0x5b) {
          // '{' or '['
          if (++depth > maxDepth) return this.fail(JsonCode.TOO_DEEP, 0, pos, buf, end);
          const isObj = c === 0x7b;
          kinds[t] = isObj ? 1 : 2; // Kind.OBJECT : Kind.ARRAY
          stackTok[depth] = t;
          stackIsObj[depth] = isObj ? 1 : 0;
          stackCommas[depth] = 0;
          stackPrevKey[depth] = -1;
          pos++;
          if (pos < end && buf[pos] === (isObj ? 0x7d : 0x5d)) break afterValue; // empty: close below
          needKey = isObj;
          continue outer;
        } else if ((c >= 0x30 && c <= 0x39) || c === 0x2d) {
          kinds[t] = 4; // Kind.NUMBER
          const p = this.scanNumber(buf, pos, end, aux, t);
          if (p < 0) return this.code;
          pos = p;
          ends[t] = pos;
          nexts[t] = t + 1;
        } else if (c === 0x74) {
          // true
          if (pos + 4 > end || buf[pos + 1] !== 0x72 || buf[pos + 2] !== 0x75 || buf[pos + 3] !== 0x65) {
            return this.fail(JsonCode.SYNTAX, JsonReason.UNEXPECTED_BYTE, pos, buf, end);
          }
          kinds[t] = 5; // Kind.TRUE
          pos += 4;
          ends[t] = pos;
          nexts[t] = t + 1;
        } else if (c === 0x66) {
          // false
          if (
            pos + 5 > end ||
            buf[pos + 1] !== 0x61 ||
            buf[pos + 2] !== 0x6c ||
            buf[pos + 3] !== 0x73 ||
            buf[pos + 4] !== 0x65
          ) {
            return this.fail(JsonCode.SYNTAX, JsonReason.UNEXPECTED_BYTE, pos, buf, end);
          }
          kinds[t] = 6; // Kind.FALSE
          pos += 5;
          ends[t] = pos;
          nexts[t] = t + 1;
        } else if (c === 0x6e) {
          // null
          if (pos + 4 > end || buf[pos + 1] !== 0x75 || buf[pos + 2] !== 0x6c || buf[pos + 3] !== 0x6c) {
            return this.fail(JsonCode.SYNTAX, JsonReason.UNEXPECTED_BYTE, pos, buf, end);
          }
          kinds[t] = 7; // Kind.NULL
          pos += 4;
          ends[t] = pos;
          nexts[t] = t + 1;
        } else {
          return this.fail(JsonCode.SYNTAX, JsonReason.UNEXPECTED_BYTE, pos, buf, end);
        }
      }

      // ---- after a value: separators and closing brackets ----
      for (;;) {
        if (depth === 0) {
          if (pos === end) {
            tape.length = nt;
            return this.code;
          }
          if (isWs(buf[pos]!)) {
            this.soft(JsonCode.NOT_CANONICAL, JsonReason.WHITESPACE, pos);
            while (pos < end && isWs(buf[pos]!)) pos++;
            continue;
          }
          return this.fail(JsonCode.SYNTAX, JsonReason.TRAILING_DATA, pos, buf, end);
        }
        if (pos >= end) return this.fail(JsonCode.SYNTAX, JsonReason.UNEXPECTED_END, pos, buf, end);
        c = buf[pos]!;
        if (c === 0x2c) {
          // ','
          stackCommas[depth]!++;
          pos++;
          needKey = stackIsObj[depth] === 1;
          continue outer;
        }
        if (c === (stackIsObj[depth] === 1 ? 0x7d : 0x5d)) {
          const o = stackTok[depth]!;
          ends[o] = pos + 1;
          nexts[o] = nt;
          aux[o] = nt === o + 1 ? 0 : stackCommas[depth]! + 1;
          depth--;
          pos++;
          continue;
        }
        if (isWs(c)) {
          this.soft(JsonCode.NOT_CANONICAL, JsonReason.WHITESPACE, pos);
          while (pos < end && isWs(buf[pos]!)) pos++;
          continue;
        }
        return this.fail(JsonCode.SYNTAX, JsonReason.UNEXPECTED_BYTE, pos, buf, end);
      }
    }
  }

  // Fatal finding; returns the code for `return this.fail(...)` in check().
  private fail(code: number, reason: number, pos: number, buf: Uint8Array, end: number): number {
    this.fatal(code, reason, pos, buf, end);
    return this.code;
  }

  /**
   * A key did not sort after its predecessor (cmp >= 0). Equal: duplicate.
   * Out of order: still a duplicate if it equals any earlier key of the same
   * object (error path, so a linear scan is fine), otherwise a key-order
   * finding.
   */
  private keyOrderFinding(buf: Uint8Array, cmp: number, obj: number, key: number): void {
    const starts = this.tape.start;
    const ends = this.tape.end;
    const nexts = this.tape.next;
    const ks = starts[key]! + 1;
    const ke = ends[key]! - 1;
    if (cmp === 0) {
      this.soft(JsonCode.DUPLICATE_KEY, 0, starts[key]!);
      return;
    }
    for (let k = obj + 1; k < key; k = nexts[k + 1]!) {
      if (compareCanonicalStrings(buf, starts[k]! + 1, ends[k]! - 1, ks, ke) === 0) {
        this.soft(JsonCode.DUPLICATE_KEY, 0, starts[key]!);
        return;
      }
    }
    this.soft(JsonCode.NOT_CANONICAL, JsonReason.KEY_ORDER, starts[key]!);
  }

  /**
   * Scans the string whose opening quote is at `pos`, from `from` (bytes
   * before it are known to be plain ASCII); returns the position after the
   * closing quote, or -1 after recording a fatal finding. Writes the string's
   * flags to aux[t].
   */
  private scanString(buf: Uint8Array, pos: number, from: number, end: number, aux: Int32Array, t: number): number {
    const cls = STRING_CLASS;
    let p = from;
    let flags = 0;
    for (;;) {
      // ASCII fast path: one table lookup per byte.
      let c = 0;
      while (p < end) {
        c = buf[p]!;
        if (cls[c] !== 0) break;
        p++;
      }
      if (p >= end) return this.fatal(JsonCode.SYNTAX, JsonReason.UNTERMINATED_STRING, pos, buf, end);
      switch (cls[c]) {
        case 1: // closing quote
          aux[t] = flags;
          return p + 1;
        case 2: {
          // escape
          flags |= 1; // StringFlag.ESCAPED
          if (p + 1 >= end) return this.fatal(JsonCode.SYNTAX, JsonReason.UNTERMINATED_STRING, pos, buf, end);
          const e = buf[p + 1]!;
          if (e === 0x22 || e === 0x5c || e === 0x6e || e === 0x74 || e === 0x72 || e === 0x62 || e === 0x66) {
            p += 2;
          } else if (e === 0x75) {
            p = this.scanUnicodeEscape(buf, p, end);
            if (p < 0) return -1;
          } else if (e === 0x2f) {
            this.soft(JsonCode.NOT_CANONICAL, JsonReason.ESCAPE_SOLIDUS, p);
            p += 2;
          } else {
            return this.fatal(JsonCode.SYNTAX, JsonReason.BAD_ESCAPE, p, buf, end);
          }
          break;
        }
        case 3:
          return this.fatal(JsonCode.SYNTAX, JsonReason.CONTROL_IN_STRING, p, buf, end);
        case 4:
          // C2..DF 80..BF
          flags |= 2; // StringFlag.NON_ASCII
          if (p + 1 >= end || (buf[p + 1]! & 0xc0) !== 0x80) return this.fatal(JsonCode.NOT_UTF8, 0, p, buf, end);
          p += 2;
          break;
        case 5: {
          // E0 A0..BF 80..BF | E1..EC 80..BF 80..BF | ED 80..9F 80..BF | EE..EF 80..BF 80..BF
          flags |= 2;
          if (p + 2 >= end) return this.fatal(JsonCode.NOT_UTF8, 0, p, buf, end);
          const b1 = buf[p + 1]!;
          const lo = c === 0xe0 ? 0xa0 : 0x80;
          const hi = c === 0xed ? 0x9f : 0xbf;
          if (b1 < lo || b1 > hi || (buf[p + 2]! & 0xc0) !== 0x80) return this.fatal(JsonCode.NOT_UTF8, 0, p, buf, end);
          p += 3;
          break;
        }
        case 6: {
          // F0 90..BF | F1..F3 80..BF | F4 80..8F, then two continuation bytes
          flags |= 2;
          if (p + 3 >= end) return this.fatal(JsonCode.NOT_UTF8, 0, p, buf, end);
          const b1 = buf[p + 1]!;
          const lo = c === 0xf0 ? 0x90 : 0x80;
          const hi = c === 0xf4 ? 0x8f : 0xbf;
          if (b1 < lo || b1 > hi || (buf[p + 2]! & 0xc0) !== 0x80 || (buf[p + 3]! & 0xc0) !== 0x80) {
            return this.fatal(JsonCode.NOT_UTF8, 0, p, buf, end);
          }
          p += 4;
          break;
        }
        default:
          return this.fatal(JsonCode.NOT_UTF8, 0, p, buf, end);
      }
    }
  }

  /**
   * A `\uXXXX` escape at `p` (the backslash). Returns the position after it
   * (after both halves of an escaped surrogate pair), or -1 (fatal).
   * Canonical only for code points below U+0020 without a short escape,
   * written with lowercase hex.
   */
  private scanUnicodeEscape(buf: Uint8Array, p: number, end: number): number {
    if (p + 6 > end) return this.fatal(JsonCode.SYNTAX, JsonReason.BAD_ESCAPE, p, buf, end);
    const h0 = HEX[buf[p + 2]!]!;
    const h1 = HEX[buf[p + 3]!]!;
    const h2 = HEX[buf[p + 4]!]!;
    const h3 = HEX[buf[p + 5]!]!;
    if ((h0 | h1 | h2 | h3) > 15) {
      return this.fatal(JsonCode.SYNTAX, JsonReason.BAD_ESCAPE, p, buf, end);
    }
    const v = (h0 << 12) | (h1 << 8) | (h2 << 4) | h3;
    if (v < 0x20) {
      if (v === 0x08 || v === 0x09 || v === 0x0a || v === 0x0c || v === 0x0d) {
        this.soft(JsonCode.NOT_CANONICAL, JsonReason.ESCAPE_SHORT_FORM, p);
      } else if (buf[p + 5]! >= 0x41 && buf[p + 5]! <= 0x46) {
        // Only the last digit can be a letter below U+0020 ("\u001F").
        this.soft(JsonCode.NOT_CANONICAL, JsonReason.ESCAPE_UPPERCASE_HEX, p);
      }
      return p + 6;
    }
    if (v >= 0xd800 && v <= 0xdbff) {
      // A high surrogate: canonical JSON has no escaped pairs, but a pair is a
      // valid character; only an unpaired half has no canonical form at all.
      if (p + 12 <= end && buf[p + 6] === 0x5c && buf[p + 7] === 0x75) {
        const l0 = HEX[buf[p + 8]!]!;
        const l1 = HEX[buf[p + 9]!]!;
        const l2 = HEX[buf[p + 10]!]!;
        const l3 = HEX[buf[p + 11]!]!;
        if (l0 !== 255 && l1 !== 255 && l2 !== 255 && l3 !== 255) {
          const w = (l0 << 12) | (l1 << 8) | (l2 << 4) | l3;
          if (w >= 0xdc00 && w <= 0xdfff) {
            this.soft(JsonCode.NOT_CANONICAL, JsonReason.ESCAPE_SURROGATE_PAIR, p);
            return p + 12;
          }
        }
      }
      this.soft(JsonCode.LONE_SURROGATE, 0, p);
      return p + 6;
    }
    if (v >= 0xdc00 && v <= 0xdfff) {
      this.soft(JsonCode.LONE_SURROGATE, 0, p);
      return p + 6;
    }
    this.soft(JsonCode.NOT_CANONICAL, JsonReason.ESCAPE_NOT_NEEDED, p);
    return p + 6;
  }

  /**
   * Scans the number at `pos`; returns the position after it, or -1 (fatal).
   * Integers without fraction or exponent are judged on the bytes; other forms
   * (rare, and never valid with integersOnly) are judged by comparing with
   * ES2015 Number-to-String, which decodes a few ASCII bytes.
   */
  private scanNumber(buf: Uint8Array, pos: number, end: number, aux: Int32Array, t: number): number {
    let p = pos;
    let neg = false;
    if (buf[p] === 0x2d) {
      neg = true;
      p++;
      if (p >= end) return this.fatal(JsonCode.SYNTAX, JsonReason.BAD_NUMBER, pos, buf, end);
    }
    const digitsStart = p;
    let c = buf[p]!;
    let value = 0;
    if (c === 0x30) {
      p++;
    } else if (c >= 0x31 && c <= 0x39) {
      value = c - 48;
      p++;
      while (p < end) {
        c = buf[p]!;
        if (c < 0x30 || c > 0x39) break;
        value = value * 10 + (c - 48);
        p++;
      }
    } else {
      return this.fatal(JsonCode.SYNTAX, JsonReason.BAD_NUMBER, pos, buf, end);
    }
    const intEnd = p;
    if (p < end && buf[p] === 0x2e) {
      p++;
      const f = p;
      while (p < end && buf[p]! >= 0x30 && buf[p]! <= 0x39) p++;
      if (p === f) return this.fatal(JsonCode.SYNTAX, JsonReason.BAD_NUMBER, pos, buf, end);
    }
    if (p < end && (buf[p] === 0x65 || buf[p] === 0x45)) {
      p++;
      if (p < end && (buf[p] === 0x2b || buf[p] === 0x2d)) p++;
      const f = p;
      while (p < end && buf[p]! >= 0x30 && buf[p]! <= 0x39) p++;
      if (p === f) return this.fatal(JsonCode.SYNTAX, JsonReason.BAD_NUMBER, pos, buf, end);
    }
    if (p === intEnd) {
      aux[t] = 0;
      const digits = intEnd - digitsStart;
      if (neg && value === 0) {
        this.soft(JsonCode.NOT_CANONICAL, JsonReason.NEGATIVE_ZERO, pos);
      } else if (this.integersOnly) {
        // value is exact below 2^53, and rounds to >= 2^53 above it.
        if (digits > 16 || value > MAX_SAFE) this.soft(JsonCode.NUMBER_OUT_OF_RANGE, 0, pos);
      } else if (digits > 15) {
        this.slowNumber(buf, pos, p);
      }
    } else {
      aux[t] = 1; // NumberFlag.NOT_INTEGER_FORM
      this.slowNumber(buf, pos, p);
    }
    return p;
  }

  // Judges a number by ES2015 Number-to-String (the JCS rule) and records findings.
  private slowNumber(buf: Uint8Array, a: number, b: number): void {
    if (this.code !== 0) return; // only the first finding is kept
    let s = '';
    for (let i = a; i < b; i++) s += String.fromCharCode(buf[i]!);
    const n = Number(s);
    if (String(n) !== s) {
      this.soft(JsonCode.NOT_CANONICAL, JsonReason.NUMBER_FORM, a);
    } else if (this.integersOnly) {
      if (!Number.isInteger(n)) this.soft(JsonCode.NUMBER_NOT_INTEGER, 0, a);
      else if (!Number.isSafeInteger(n)) this.soft(JsonCode.NUMBER_OUT_OF_RANGE, 0, a);
    }
  }
}

/**
 * Convenience: checks a whole buffer with a shared default checker. For bulk
 * work, keep your own {@link CanonicalChecker}.
 */
export function isCanonicalJson(buf: Uint8Array, options?: CanonicalCheckOptions): boolean {
  const checker = options === undefined ? (defaultChecker ??= new CanonicalChecker()) : new CanonicalChecker(options);
  return checker.check(buf, 0, buf.length) === JsonCode.OK;
}
let defaultChecker: CanonicalChecker | undefined;

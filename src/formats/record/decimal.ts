/**
 * DECIMAL(38, 18) of record format v1 ("Normalized tables": `price` and `size` are DECIMAL(38, 18) on
 * FIXED_LEN_BYTE_ARRAY(16)).
 *
 * A DECIMAL(38, 18) value is an integer of at most 38 decimal digits (the "unscaled" value) read as
 * that integer × 10^-18. It holds exactly the numbers with at most 18 fractional digits whose magnitude
 * is below 10^20, i.e. from -(10^20 - 10^-18) to 10^20 - 10^-18.
 *
 * Accepted text ({@link toDecimal38_18}): a plain decimal, `-?[0-9]+(\.[0-9]+)?`. That is what Binance
 * (and every venue that sends prices as JSON strings) writes. Refused, with `null`:
 * - a leading `+`, whitespace, a leading or trailing point (`.5`, `5.`), an exponent (`1e5`), `NaN`,
 *   `Infinity`, hexadecimal, digit separators: none is a plain decimal, and accepting them would mean
 *   guessing what the venue meant. Venues that send JSON numbers (Kraken v2, Deribit, BitMEX) convert
 *   the number's exact source text with {@link jsonNumberToPlainDecimal} in their adapter, so that the
 *   choice is made once, visibly, per venue.
 * - more than 18 fractional digits once trailing zeros are removed (`0.0000000000000000001`): the value
 *   cannot be held exactly. Trailing zeros carry no value, so `1.000000000000000000000000` is accepted.
 * - a magnitude of 10^20 or more.
 * Leading zeros of the integer part (`007.5`) are accepted: they change neither the value nor its
 * exactness. `-0` (and `-0.000`) is accepted as zero: DECIMAL has no negative zero, and the value is
 * held exactly. The text the venue sent stays in the raw file either way.
 *
 * {@link decimalToText} renders an unscaled value canonically: an optional `-`, the integer part
 * without leading zeros (`0` when it is zero), and a point followed by the fractional digits without
 * trailing zeros only when the fraction is not zero. `toDecimal38_18(decimalToText(x)) === x` for every
 * x in range.
 *
 * On disk the unscaled value is 16 bytes, big-endian two's complement (Parquet's DECIMAL on
 * FIXED_LEN_BYTE_ARRAY): {@link encodeDecimal16} and {@link decodeDecimal16}.
 */

export const DECIMAL_PRECISION = 38
export const DECIMAL_SCALE = 18
/** The largest unscaled value, 10^38 - 1 (the number 10^20 - 10^-18). */
export const DECIMAL38_MAX_UNSCALED = 10n ** 38n - 1n
/** The smallest unscaled value, -(10^38 - 1). */
export const DECIMAL38_MIN_UNSCALED = -DECIMAL38_MAX_UNSCALED
/** Bytes of the FIXED_LEN_BYTE_ARRAY that carries a DECIMAL(38, 18). */
export const DECIMAL_BYTES = 16

const ZEROS_18 = '000000000000000000'
const MAX_INT_DIGITS = DECIMAL_PRECISION - DECIMAL_SCALE // 20

/**
 * Where the digits of a plain decimal text lie, once the rule of the module comment is applied: the
 * significant integer digits [intStart, intEnd) and the fractional digits up to the last non-zero one
 * [fracStart, fracEnd). Kept in module state rather than returned, because it runs for every price and
 * size of an hour and an object per call was measurable garbage.
 */
let negative = false
let intStart = 0
let intEnd = 0
let fracStart = 0
let fracEnd = 0

/** Scans `text` into the module's digit positions; false when it is not a DECIMAL(38, 18) text. */
function scan(text: string): boolean {
  const n = text.length
  let i = 0
  negative = n > 0 && text.charCodeAt(0) === 45 /* - */
  if (negative) i = 1
  // Integer part: at least one digit; skip leading zeros.
  const first = i
  while (i < n && text.charCodeAt(i) === 48) i++
  intStart = i
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c < 48 || c > 57) break
    i++
  }
  if (i === first) return false
  intEnd = i
  if (intEnd - intStart > MAX_INT_DIGITS) return false
  fracStart = fracEnd = i
  if (i < n) {
    if (text.charCodeAt(i) !== 46 /* . */) return false
    i++
    fracStart = fracEnd = i
    while (i < n) {
      const c = text.charCodeAt(i)
      if (c < 48 || c > 57) return false
      i++
      if (c !== 48) fracEnd = i
    }
    if (i === fracStart) return false
    if (fracEnd - fracStart > DECIMAL_SCALE) return false
  }
  return true
}

/** True when `text` is a plain decimal that DECIMAL(38, 18) holds exactly (the rule of {@link toDecimal38_18}). */
export function isDecimal38Text(text: string): boolean {
  return scan(text)
}

/**
 * The unscaled DECIMAL(38, 18) integer (value × 10^18) of a plain decimal text, or null when the text is
 * not a plain decimal (see the module comment) or DECIMAL(38, 18) cannot hold its value exactly.
 */
export function toDecimal38_18(text: string): bigint | null {
  if (!scan(text)) return null
  const frac = text.slice(fracStart, fracEnd)
  const unscaled = BigInt(text.slice(intStart, intEnd) + frac + ZEROS_18.slice(frac.length))
  return negative ? -unscaled : unscaled
}

/** 16-bit limbs of the unscaled value, least significant first: products of a limb and 10^9 stay exact in a double. */
const limbs = new Float64Array(8)

/**
 * Writes the DECIMAL(38, 18) of a plain decimal text as 16 big-endian two's complement bytes into `out` at
 * `offset`, without a bigint (the sealer does this for every price and size); false, and nothing written,
 * when the text is not one DECIMAL(38, 18) holds. Equal to `encodeDecimal16Into(toDecimal38_18(text))`.
 */
export function encodeDecimalTextInto(text: string, out: Uint8Array, offset: number): boolean {
  if (!scan(text)) return false
  if (offset < 0 || offset + DECIMAL_BYTES > out.length) throw new RangeError('decimal does not fit the buffer')
  limbs.fill(0)
  // The digits are the integer digits, the fractional ones, then zeros up to 18 fractional digits:
  // taken nine at a time, each group multiplies the value by 10^k and adds itself.
  const total = intEnd - intStart + DECIMAL_SCALE
  let chunk = 0
  let chunkDigits = 0
  // Limbs from `used` up are zero: a group need not multiply them (prices and sizes take four or five of eight).
  let used = 0
  for (let d = 0; d < total; d++) {
    const at = d < intEnd - intStart ? intStart + d : fracStart + d - (intEnd - intStart)
    const digit = at < (d < intEnd - intStart ? intEnd : fracEnd) ? text.charCodeAt(at) - 48 : 0
    chunk = chunk * 10 + digit
    if (++chunkDigits === 9 || d === total - 1) {
      let carry = chunk
      const scale = TEN_POWERS[chunkDigits]!
      let l = 0
      for (; l < 8 && (l < used || carry !== 0); l++) {
        const v = limbs[l]! * scale + carry
        carry = Math.floor(v / 65536)
        limbs[l] = v - carry * 65536
      }
      if (l > used) used = l
      chunk = 0
      chunkDigits = 0
    }
  }
  if (negative) {
    // Two's complement: invert and add one.
    let carry = 1
    for (let l = 0; l < 8; l++) {
      const v = 65535 - limbs[l]! + carry
      carry = v >= 65536 ? 1 : 0
      limbs[l] = v - carry * 65536
    }
  }
  for (let l = 0; l < 8; l++) {
    const v = limbs[l]!
    out[offset + 15 - 2 * l] = v & 255
    out[offset + 14 - 2 * l] = v >>> 8
  }
  return true
}

const TEN_POWERS = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000]

/** Orders two 16-byte big-endian two's complement values: negative, zero or positive as a is below, equal or above b. */
export function compareDecimal16(a: Uint8Array, aOffset: number, b: Uint8Array, bOffset: number): number {
  const signed = (a[aOffset]! ^ 128) - (b[bOffset]! ^ 128)
  if (signed !== 0) return signed
  for (let i = 1; i < DECIMAL_BYTES; i++) {
    const d = a[aOffset + i]! - b[bOffset + i]!
    if (d !== 0) return d
  }
  return 0
}

/** True when `unscaled` lies in DECIMAL(38, 18)'s range, ±(10^38 - 1). */
export function isDecimal38(unscaled: bigint): boolean {
  return unscaled >= DECIMAL38_MIN_UNSCALED && unscaled <= DECIMAL38_MAX_UNSCALED
}

/**
 * Canonical text of an unscaled value (module comment). Renders any bigint, also one outside
 * DECIMAL(38, 18)'s range (so a verifier can show what a corrupt cell holds).
 */
export function decimalToText(unscaled: bigint): string {
  const negative = unscaled < 0n
  const abs = negative ? -unscaled : unscaled
  const s = abs.toString()
  let int: string
  let frac: string
  if (s.length > DECIMAL_SCALE) {
    int = s.slice(0, s.length - DECIMAL_SCALE)
    frac = s.slice(s.length - DECIMAL_SCALE)
  } else {
    int = '0'
    frac = ZEROS_18.slice(s.length) + s
  }
  let end = frac.length
  while (end > 0 && frac.charCodeAt(end - 1) === 48) end--
  const body = end === 0 ? int : int + '.' + frac.slice(0, end)
  return negative ? '-' + body : body
}

/**
 * Write `unscaled` as 16 bytes, big-endian two's complement, into `out` at `offset`.
 * Throws a RangeError when the value lies outside DECIMAL(38, 18)'s range.
 */
export function encodeDecimal16Into(unscaled: bigint, out: Uint8Array, offset = 0): void {
  if (!isDecimal38(unscaled)) throw new RangeError(`decimal out of DECIMAL(38, 18) range: ${unscaled}`)
  if (offset < 0 || offset + DECIMAL_BYTES > out.length) throw new RangeError('decimal does not fit the buffer')
  const view = new DataView(out.buffer, out.byteOffset + offset, DECIMAL_BYTES)
  view.setBigInt64(0, BigInt.asIntN(64, unscaled >> 64n))
  view.setBigUint64(8, BigInt.asUintN(64, unscaled))
}

/** `unscaled` as a new 16-byte big-endian two's complement array (see {@link encodeDecimal16Into}). */
export function encodeDecimal16(unscaled: bigint): Uint8Array {
  const out = new Uint8Array(DECIMAL_BYTES)
  encodeDecimal16Into(unscaled, out, 0)
  return out
}

/**
 * The signed 128-bit integer held by 16 big-endian two's complement bytes at `offset`. Any 128-bit value
 * is returned; check it with {@link isDecimal38} before treating it as a DECIMAL(38, 18).
 */
export function decodeDecimal16(bytes: Uint8Array, offset = 0): bigint {
  if (offset < 0 || offset + DECIMAL_BYTES > bytes.length) throw new RangeError('decimal needs 16 bytes')
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset, DECIMAL_BYTES)
  return (view.getBigInt64(0) << 64n) | view.getBigUint64(8)
}

/**
 * The plain decimal text of a JSON number's exact source text (RFC 8259 grammar: `-?(0|[1-9][0-9]*)
 * (\.[0-9]+)?([eE][+-]?[0-9]+)?`), for adapters of venues that send prices as JSON numbers: `1.5e-7` ->
 * `0.00000015`, `25E2` -> `2500`, `0.10` -> `0.10` (digits kept as written when there is no exponent).
 * No rounding: every digit of the source is kept, so the result is exact. Null when the text is not a
 * JSON number, or when the exponent would produce more than `maxDigits` digits (default 64), which
 * guards against `1e1000000`; such a value is out of DECIMAL(38, 18)'s range anyway.
 */
export function jsonNumberToPlainDecimal(text: string, maxDigits = 64): string | null {
  const m = /^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(text)
  if (!m) return null
  const sign = m[1]!
  const int = m[2]!
  const frac = m[3] ?? ''
  if (m[4] === undefined) return text
  const exp = Number(m[4])
  if (!Number.isSafeInteger(exp)) return null
  // digits = int + frac, with the point after int.length + exp digits.
  const digits = int + frac
  const point = int.length + exp
  if (point > maxDigits || digits.length - point > maxDigits) return null
  let intPart: string
  let fracPart: string
  if (point <= 0) {
    intPart = '0'
    fracPart = '0'.repeat(-point) + digits
  } else if (point >= digits.length) {
    intPart = digits + '0'.repeat(point - digits.length)
    fracPart = ''
  } else {
    intPart = digits.slice(0, point)
    fracPart = digits.slice(point)
  }
  intPart = intPart.replace(/^0+(?=[0-9])/, '')
  return sign + intPart + (fracPart === '' ? '' : '.' + fracPart)
}

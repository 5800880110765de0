/**
 * Decimal numbers as plain text (`-12.0500`), exactly: an unscaled integer and a scale, never a float.
 * What rows carry for Parquet DECIMAL columns and what `filter` compares, so that 0.1 + 0.2 is never the
 * question. Plain text only: no exponent, no `+`, no leading `.`; at most 1,000 digits, so a hostile value
 * cannot make a BigInt of a megabyte.
 */

export interface ScaledDecimal {
  /** The value × 10^scale. */
  readonly unscaled: bigint
  /** Digits after the point. */
  readonly scale: number
}

const PLAIN_DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/
const MAX_DIGITS = 1000

/** The decimal `text` states, or null when it is not plain decimal text. */
export function parseDecimalText(text: string): ScaledDecimal | null {
  if (text.length > MAX_DIGITS + 2) return null
  const m = PLAIN_DECIMAL.exec(text)
  if (!m) return null
  const fraction = m[3] ?? ''
  const digits = BigInt(m[2]! + fraction)
  return { unscaled: m[1] ? -digits : digits, scale: fraction.length }
}

const pow10 = (n: number): bigint => 10n ** BigInt(n)

/** Sign of a − b, exactly. */
export function compareDecimals(a: ScaledDecimal, b: ScaledDecimal): number {
  const scale = Math.max(a.scale, b.scale)
  const x = a.unscaled * pow10(scale - a.scale)
  const y = b.unscaled * pow10(scale - b.scale)
  return x < y ? -1 : x > y ? 1 : 0
}

/** `d` as an integer × 10^-scale, or null when it has non-zero digits past `scale` (it would be rounded). */
export function unscaledAt(d: ScaledDecimal, scale: number): bigint | null {
  if (d.scale <= scale) return d.unscaled * pow10(scale - d.scale)
  const factor = pow10(d.scale - scale)
  return d.unscaled % factor === 0n ? d.unscaled / factor : null
}

/** The text of unscaled × 10^-scale: no exponent, trailing fraction zeros dropped (`1.50` is `1.5`, `2.0` is `2`). */
export function decimalText(unscaled: bigint, scale: number): string {
  const negative = unscaled < 0n
  const digits = (negative ? -unscaled : unscaled).toString()
  if (scale === 0) return negative ? `-${digits}` : digits
  const padded = digits.padStart(scale + 1, '0')
  const int = padded.slice(0, padded.length - scale)
  const fraction = padded.slice(padded.length - scale).replace(/0+$/, '')
  const body = fraction ? `${int}.${fraction}` : int
  return negative && /[1-9]/.test(body) ? `-${body}` : body
}

/** The signed big-endian two's complement integer in `bytes` (a Parquet DECIMAL stored as FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY). */
export function bigEndianSigned(bytes: Uint8Array): bigint {
  let v = 0n
  for (const b of bytes) v = (v << 8n) | BigInt(b)
  return bytes.length > 0 && bytes[0]! & 0x80 ? v - (1n << BigInt(8 * bytes.length)) : v
}

/** `value` as `width` big-endian two's complement bytes, or null when it does not fit. */
export function toBigEndianSigned(value: bigint, width: number): Uint8Array | null {
  const bits = BigInt(8 * width)
  if (value >= 1n << (bits - 1n) || value < -(1n << (bits - 1n))) return null
  let v = BigInt.asUintN(8 * width, value)
  const out = new Uint8Array(width)
  for (let i = width - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn)
    v >>= 8n
  }
  return out
}

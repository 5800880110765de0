/**
 * Reading row values as what they denote: a decimal exactly (from its text, or a number at its shortest
 * text), an instant from loose UTC time text. Shared by filter and parquet-write.
 */
import { parseDecimalText, type ScaledDecimal } from '../../codec/decimal-text.js'
import { jsonNumberToPlainDecimal } from '../../formats/record/decimal.js'
import { tryParseTime } from '../../formats/record/time.js'

const TIME_TEXT = /^(\d{4}-\d{2}-\d{2})(?:T(\d{2}:\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?Z)?$/

/**
 * An instant in ns from `2026-10-03`, `2026-10-03T14:30Z`, `…T14:30:05Z` or `…T14:30:05.25Z` (up to nine
 * fraction digits; UTC only), so that a bound need not be written with record format v1's nine digits.
 */
export function parseTimeText(text: string): bigint | null {
  const m = TIME_TEXT.exec(text)
  if (!m) return null
  return tryParseTime(`${m[1]}T${m[2] ?? '00:00'}:${m[3] ?? '00'}.${(m[4] ?? '').padEnd(9, '0')}Z`)
}

/** The decimal a number or plain decimal text denotes, or null. */
export function decimalOf(value: string | number): ScaledDecimal | null {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return null
    const plain = jsonNumberToPlainDecimal(String(value))
    return plain === null ? null : parseDecimalText(plain)
  }
  return parseDecimalText(value)
}

/**
 * Reading a venue frame's documented fields, shared by the adapters: each reader throws {@link Bad} naming
 * the field and what is wrong with it, which an adapter's classify turns into an unrepresentable frame.
 */
import { isDecimal38Text, jsonNumberToPlainDecimal } from '../formats/record/decimal.js'
import { newTimeParts, parseTimeBytes, timePartsToNs, TimeError } from '../formats/record/time.js'
import { JsonNumber, type JsonObject, type JsonValue, type SequenceSpan } from './adapter.js'

export const INT64_MAX = (1n << 63n) - 1n
/** A non-negative integer written as venues write ids: no sign, no leading zero, no fraction or exponent. */
export const UINT_RE = /^(0|[1-9][0-9]*)$/

/** A frame off its venue's documented structure: the unrepresentable code, and the reason. */
export class Bad extends Error {
  /** The frame's place in its venue sequences, when that much parsed: the frame still counts for gaps. */
  sequences?: SequenceSpan[]
  constructor(readonly code: 'structure' | 'decimal' | 'time', message: string) { super(message) }
}

/** How a value fails to be `kind`: missing, or something else. */
export const describe = (v: JsonValue | undefined, kind: string): string => (v === undefined ? 'missing' : `not ${kind}`)

export function str(o: JsonObject, key: string, what: string): string {
  const v = o[key]
  if (typeof v !== 'string') throw new Bad('structure', `${what}: ${key} is ${describe(v, 'a string')}`)
  return v
}

export function nonEmpty(o: JsonObject, key: string, what: string): string {
  const s = str(o, key, what)
  if (s === '') throw new Bad('structure', `${what}: ${key} is empty`)
  return s
}

/** Runs `parse`; a Bad it throws carries `spans`, since the frame's sequence ids parsed before it failed. */
export function withSpans<T>(spans: SequenceSpan[], parse: () => T): T {
  try {
    return parse()
  } catch (err) {
    if (err instanceof Bad && spans.length > 0) err.sequences = spans
    throw err
  }
}

/** At most this much of a venue's message goes into a control note or a reason. */
const NOTE_TEXT = 200

export const clip = (s: string): string => (s.length > NOTE_TEXT ? s.slice(0, NOTE_TEXT) + '…' : s)

/** The plain decimal of a JSON number (its source text, an exponent written out) that DECIMAL(38, 18) holds exactly. */
export function numberDecimal(v: JsonValue | undefined, what: string): string {
  if (!(v instanceof JsonNumber)) throw new Bad('structure', `${what} is ${describe(v, 'a number')}`)
  const plain = jsonNumberToPlainDecimal(v.text)
  if (plain === null || !isDecimal38Text(plain)) throw new Bad('decimal', `${what} ${v.text} is not a decimal DECIMAL(38, 18) holds exactly`)
  return plain
}

const TIME_RE = /^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]+))?Z$/
const FRACTION_RE = /^\.([0-9]{1,9})Z$/
const timeParts = newTimeParts()
const textEncoder = new TextEncoder()
/** The second the last time read began with, and its nanoseconds: a venue's trades of one second share it (the parse was half a seal's time). */
let cachedSecond = ''
let cachedSecondNs = 0n

/**
 * Nanoseconds since the epoch of an RFC 3339 UTC time (`Z`) with a fraction of up to nine digits (more only
 * when they are zeros), or why not: `structure` for another form or an invalid date, `time` beyond int64.
 */
export function utcTimeNs(text: string): bigint | { code: 'structure' | 'time'; reason: string } {
  if (cachedSecond !== '' && text.startsWith(cachedSecond)) {
    const f = FRACTION_RE.exec(text.slice(cachedSecond.length))
    if (f !== null) return cachedSecondNs + BigInt(f[1]!.padEnd(9, '0'))
  }
  const m = TIME_RE.exec(text)
  if (m === null) return { code: 'structure', reason: `${JSON.stringify(clip(text))} is not an RFC 3339 UTC time` }
  let fraction = m[2] ?? ''
  if (fraction.length > 9) {
    if (!/^0+$/.test(fraction.slice(9))) return { code: 'time', reason: `${JSON.stringify(text)} is finer than a nanosecond` }
    fraction = fraction.slice(0, 9)
  }
  const bytes = textEncoder.encode(`${m[1]!}.${fraction.padEnd(9, '0')}Z`)
  const code = parseTimeBytes(bytes, 0, bytes.length, timeParts)
  if (code === TimeError.RANGE) return { code: 'time', reason: `${JSON.stringify(text)} does not fit int64 nanoseconds` }
  if (code !== TimeError.OK) return { code: 'structure', reason: `${JSON.stringify(text)} is not a valid time` }
  const ns = timePartsToNs(timeParts.sec, timeParts.nsec)
  cachedSecond = m[1]!
  cachedSecondNs = ns - BigInt(fraction.padEnd(9, '0'))
  return ns
}

/**
 * The elements of a JSON array written without whitespace, `[e1,e2,...]`, each matched by `element` (a
 * sticky expression) from `at`, just past the `[`: the adapters' fast paths read their plain trade messages
 * with it, without a JSON tree. `each` takes a match and says whether the element is one the fast path
 * gives (false ends the reading). Returns the index just past the `]`, or -1 when the text is not such an
 * array of at least one element or `each` refused one.
 */
export function eachPlainElement(text: string, at: number, element: RegExp, each: (m: RegExpExecArray) => boolean): number {
  for (;;) {
    element.lastIndex = at
    const m = element.exec(text)
    if (m === null || !each(m)) return -1
    at = element.lastIndex
    const c = text.charCodeAt(at++)
    if (c === 0x5d /* ] */) return at
    if (c !== 0x2c /* , */) return -1
  }
}

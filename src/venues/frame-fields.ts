/**
 * Reading a venue frame's documented fields, shared by the adapters: each reader throws {@link Bad} naming
 * the field and what is wrong with it, which an adapter's classify turns into an unrepresentable frame.
 */
import type { JsonObject, JsonValue, SequenceSpan } from './adapter.js'

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

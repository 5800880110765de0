/**
 * A pack row as RFC 8785 text: how the library keeps a row it holds as text, compares a row with the one
 * it holds, and gives rows back to `query`.
 */
import { PipeError } from '../core/errors.js'

const MAX_SAFE = 2n ** 53n - 1n

/**
 * An object's keys in UTF-16 order, each quoted with its colon, by the object's own key order: the rows
 * of a part, and their structs, share a few shapes, so each is sorted once (a bounded cache).
 */
const shapes = new Map<string, { sorted: string[]; quoted: string[] }>()
function shapeOf(value: object): { sorted: string[]; quoted: string[] } {
  const keys = Object.keys(value)
  const id = keys.join('\u0000')
  let shape = shapes.get(id)
  if (shape === undefined) {
    const sorted = [...keys].sort()
    shape = { sorted, quoted: sorted.map((k) => `${rowText(k)}:`) }
    if (shapes.size < 4096) shapes.set(id, shape)
  }
  return shape
}

/**
 * A row as RFC 8785 text: an int64 within ±(2^53 − 1) as a number, beyond as its decimal string. Written
 * here rather than through a general canonicalizer, which took a third of an import (a differential test
 * holds the two to the same bytes, test/library-row-text.test.ts): keys in UTF-16 order, strings as
 * JSON.stringify writes them and numbers as String does (the ECMAScript forms RFC 8785 adopts).
 */
export function rowText(value: unknown): string {
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) throw new PipeError('import.row-not-json', 'a row holds a string with a lone surrogate, which RFC 8785 refuses')
      return JSON.stringify(value)
    case 'number':
      if (!Number.isFinite(value)) throw new PipeError('import.row-not-json', `a row holds ${value}, which JSON cannot`)
      return String(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'bigint':
      return value >= -MAX_SAFE && value <= MAX_SAFE ? value.toString() : `"${value}"`
    case 'object': {
      if (value === null) return 'null'
      if (Array.isArray(value)) {
        let text = '['
        for (let i = 0; i < value.length; i++) text += (i > 0 ? ',' : '') + rowText(value[i])
        return `${text}]`
      }
      if (ArrayBuffer.isView(value)) throw new PipeError('import.row-not-json', 'a row holds bytes, which JSON cannot')
      const { sorted, quoted } = shapeOf(value)
      let text = '{'
      for (let i = 0; i < sorted.length; i++) {
        const v = (value as Record<string, unknown>)[sorted[i]!]
        if (v === undefined) continue
        text += (text.length > 1 ? ',' : '') + quoted[i]! + rowText(v)
      }
      return `${text}}`
    }
    default:
      throw new PipeError('import.row-not-json', `a row holds a ${typeof value}, which JSON cannot`)
  }
}

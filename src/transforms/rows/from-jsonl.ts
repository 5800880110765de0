import { z } from 'zod'
import type { LineBatch } from '../../codec/lines.js'
import { PipeError } from '../../core/errors.js'
import { RowBatch, type Row } from '../../core/items.js'
import { defineStage } from '../../core/stage.js'

/** The first number in `value` that JSON.parse could not have read exactly: an integer beyond ±(2^53 − 1). */
function inexactNumber(value: unknown, path: string): string | null {
  if (typeof value === 'number') return Number.isInteger(value) && !Number.isSafeInteger(value) ? path : null
  if (value === null || typeof value !== 'object') return null
  for (const [key, v] of Object.entries(value)) {
    const found = inexactNumber(v, Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key)
    if (found !== null) return found
  }
  return null
}

export const fromJsonlStage = defineStage({
  name: 'from-jsonl',
  kind: 'transform',
  summary: 'Parses each line (JSON Lines) as one JSON object: a row',
  takes: 'lines',
  gives: 'rows',
  options: z.object({}),
  create() {
    return async function* (source: AsyncIterable<unknown>) {
      for await (const item of source) {
        const lines = item as LineBatch
        // A line over split-lines' cap was dropped: a row lost is an error here, not a finding, and the
        // run stops at once rather than read the rest of an endless line.
        if (lines.skipped > 0) throw new PipeError('rows.line-too-long', 'a line is longer than split-lines\' maxLineBytes: it cannot be read as a row', { location: { line: lines.firstLine - lines.skipped } })
        const rows: Row[] = new Array(lines.count)
        for (let i = 0; i < lines.count; i++) {
          const where = { location: { line: lines.firstLine + i } }
          let value: unknown
          try {
            value = JSON.parse(lines.line(i).toString('utf8'))
          } catch (err) {
            throw new PipeError('rows.line-not-json', `not JSON: ${(err as Error).message}`, where)
          }
          if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new PipeError('rows.line-not-object', 'a row must be a JSON object', where)
          const inexact = inexactNumber(value, '')
          if (inexact !== null) throw new PipeError('rows.number-inexact', `${inexact}: an integer beyond ±(2^53 − 1) cannot be read exactly from a JSON number; write it as a string`, where)
          rows[i] = value as Row
        }
        yield new RowBatch(rows, lines.byteCount)
      }
    }
  },
})

import { z } from 'zod'
import { PipeError, UsageError } from '../../core/errors.js'
import type { RowBatch, RowValue } from '../../core/items.js'
import { defineStage } from '../../core/stage.js'

const NEEDS_QUOTES = /[",\r\n]/

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break, quotes doubled. A null is
 * an empty field and an empty string a quoted one (`""`), as PostgreSQL and DuckDB read them back; a list or
 * an object is its JSON text.
 */
function field(value: RowValue | undefined): string {
  if (value === null || value === undefined) return ''
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value)
  if (text === '') return '""'
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

export const toCsvStage = defineStage({
  name: 'to-csv',
  kind: 'transform',
  summary: 'Writes rows as CSV (RFC 4180): a header, then one record per row, CRLF line ends',
  takes: 'rows',
  gives: 'bytes',
  options: z.object({
    columns: z.array(z.string().min(1)).min(1).optional().describe('the columns, in order; default: the fields of the first row. A row with a field not among them is an error, never dropped silently'),
    header: z.boolean().default(true).describe('write the header record'),
    lineEnding: z.enum(['crlf', 'lf']).default('crlf').describe('CRLF as RFC 4180 says, or LF'),
  }),
  create(o) {
    if (o.columns && new Set(o.columns).size !== o.columns.length) throw new UsageError('usage.bad-option', 'a column is named twice', { location: { field: 'columns' } })
    const eol = o.lineEnding === 'crlf' ? '\r\n' : '\n'
    return async function* (source: AsyncIterable<unknown>) {
      let columns = o.columns
      let known: Set<string> | undefined = columns && new Set(columns)
      let row = 0
      if (columns && o.header) yield Buffer.from(columns.map(field).join(',') + eol, 'utf8')
      for await (const item of source) {
        const { rows } = item as RowBatch
        if (rows.length === 0) continue
        if (!columns) {
          columns = Object.keys(rows[0]!)
          known = new Set(columns)
          if (o.header) yield Buffer.from(columns.map(field).join(',') + eol, 'utf8')
        }
        let out = ''
        for (const r of rows) {
          row++
          for (const name in r) {
            if (!known!.has(name)) throw new PipeError('rows.csv-unknown-field', `field "${name}" is not a column (${columns.join(', ')}): name every column with "columns", or drop the field with select`, { location: { row } })
          }
          out += columns.map((c) => field(r[c])).join(',') + eol
        }
        yield Buffer.from(out, 'utf8')
      }
    }
  },
})

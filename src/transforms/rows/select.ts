import { z } from 'zod'
import { UsageError } from '../../core/errors.js'
import { RowBatch, type Row, type RowValue } from '../../core/items.js'
import { defineStage } from '../../core/stage.js'

const fieldSpec = z.union([z.string().min(1), z.object({ field: z.string().min(1), as: z.string().min(1) }).strict()])

export const selectStage = defineStage({
  name: 'select',
  kind: 'transform',
  summary: 'Keeps the named fields of each row, in the order named, renaming those given as {"field", "as"}',
  takes: 'rows',
  gives: 'rows',
  options: z.object({
    fields: z.array(fieldSpec).min(1).describe('fields to keep: "name", or {"field": "name", "as": "new_name"}; a field a row lacks is null'),
  }),
  create({ fields }) {
    const pairs: [from: string, to: string][] = fields.map((f) => (typeof f === 'string' ? [f, f] : [f.field, f.as]))
    const names = pairs.map(([, to]) => to)
    const twice = names.find((n, i) => names.indexOf(n) !== i)
    if (twice !== undefined) throw new UsageError('usage.bad-option', `two fields would be named "${twice}"`, { location: { field: 'fields' } })
    return async function* (source: AsyncIterable<unknown>) {
      for await (const item of source) {
        const batch = item as RowBatch
        const rows = batch.rows.map((r) => {
          const out: Record<string, RowValue> = {}
          for (const [from, to] of pairs) out[to] = Object.hasOwn(r, from) ? r[from]! : null
          return out as Row
        })
        yield new RowBatch(rows, batch.byteCount)
      }
    }
  },
})

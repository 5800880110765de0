import canonicalize from 'canonicalize'
import { z } from 'zod'
import type { Row, RowBatch } from '../../core/items.js'
import { defineStage } from '../../core/stage.js'

export const toJsonlStage = defineStage({
  name: 'to-jsonl',
  kind: 'transform',
  summary: 'Writes each row as one line of JSON (JSON Lines), in the order the rows come',
  takes: 'rows',
  gives: 'bytes',
  options: z.object({
    canonical: z.boolean().default(false).describe('write each row as RFC 8785 canonical JSON (members sorted), so equal rows are equal bytes'),
  }),
  create({ canonical }) {
    const text = canonical ? (row: Row) => canonicalize(row)! : (row: Row) => JSON.stringify(row)
    return async function* (source: AsyncIterable<unknown>) {
      for await (const item of source) {
        const { rows } = item as RowBatch
        if (rows.length === 0) continue
        let out = ''
        for (const row of rows) out += text(row) + '\n'
        yield Buffer.from(out, 'utf8')
      }
    }
  },
})

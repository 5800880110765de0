import { z } from 'zod'
import { measure } from '../core/items.js'
import { defineStage } from '../core/stage.js'

/**
 * The end of a checking pipeline: counts the items that reached it into the summary (`lines` by default)
 * and, given `rows`, reports a count that differs. Findings themselves flow through the run's sink.
 */
export const reportSink = defineStage({
  name: 'report',
  kind: 'sink',
  summary: 'Counts the items that arrive into the run summary; optionally checks the count',
  takes: 'any',
  gives: 'none',
  options: z.object({
    field: z.string().min(1).default('lines').describe('summary field for the count'),
    rows: z.number().int().min(0).optional().describe('expected count; a different count is a finding'),
    code: z.string().default('raw.row-count').describe('finding code for a count that differs'),
  }),
  create({ field, rows, code }, ctx) {
    return async (source: AsyncIterable<unknown>) => {
      let count = 0
      for await (const chunk of source) count += measure(chunk).items
      ctx.summary[field] = count
      if (rows !== undefined && rows !== count) ctx.findings.add({ line: null, code, detail: `the input has ${count} ${field}, expected ${rows}` })
    }
  },
})

import { splitLines, splitOptions } from '../codec/lines.js'
import { defineStage } from '../core/stage.js'

export const splitLinesStage = defineStage({
  name: 'split-lines',
  kind: 'transform',
  summary: 'Splits bytes into batches of lines, with a cap on line length',
  takes: 'bytes',
  gives: 'lines',
  options: splitOptions,
  create(options, ctx) {
    return splitLines(options, ctx.findings) as (source: AsyncIterable<unknown>) => AsyncIterable<unknown>
  },
})

import { z } from 'zod'
import { defineStage } from '../core/stage.js'

export const stdoutSink = defineStage({
  name: 'stdout',
  kind: 'sink',
  summary: 'Writes bytes to standard output',
  takes: 'bytes',
  gives: 'none',
  usesStdout: true,
  options: z.object({}),
  create(_options, ctx) {
    return async (source: AsyncIterable<unknown>) => {
      for await (const chunk of source) {
        if (!ctx.stdout.write(chunk as Uint8Array)) await new Promise((resolve) => ctx.stdout.once('drain', resolve))
      }
    }
  },
})

import { z } from 'zod'
import { PipeError } from '../core/errors.js'
import { defineStage } from '../core/stage.js'
import { readFileChunks } from '../sources/file.js'

/** The bytes of each item's file, one file after the other: what turns fetched objects back into a byte stream. */
export const readFilesStage = defineStage({
  name: 'read-files',
  kind: 'transform',
  summary: 'Gives the bytes of each item\'s file ({path}, as fetch-object gives them), file after file, in order',
  takes: 'any',
  gives: 'bytes',
  options: z.object({
    maxBytes: z.number().int().positive().optional().describe('read at most this many bytes of each file; more is an error (input.too-large), default unlimited'),
  }),
  create({ maxBytes }) {
    return async function* (source: AsyncIterable<unknown>) {
      for await (const item of source) {
        const path = (item as { path?: unknown } | null)?.path
        if (typeof path !== 'string') throw new PipeError('read-files.bad-item', `read-files takes items with a path, got ${JSON.stringify(item)?.slice(0, 200)}`)
        yield* await readFileChunks(path, maxBytes)
      }
    }
  },
})

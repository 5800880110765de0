import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { z } from 'zod'
import { UsageError } from '../core/errors.js'
import { defineStage } from '../core/stage.js'

/** 1 MiB reads: large enough that per-chunk costs vanish, small enough to keep memory flat. */
export const READ_CHUNK = 1 << 20

export const fileSource = defineStage({
  name: 'file',
  kind: 'source',
  summary: 'Reads a file as bytes',
  takes: 'none',
  gives: 'bytes',
  options: z.object({ path: z.string().min(1).describe('the file to read') }),
  async create({ path }) {
    const info = await stat(path).catch((err: NodeJS.ErrnoException) => {
      throw new UsageError(`env.${(err.code ?? 'io').toLowerCase()}`, `cannot read: ${err.code === 'ENOENT' ? 'no such file' : err.message}`, { location: { file: path } })
    })
    if (!info.isFile() && !info.isFIFO() && !info.isCharacterDevice()) throw new UsageError('env.not-a-file', 'cannot read: not a file', { location: { file: path } })
    return createReadStream(path, { highWaterMark: READ_CHUNK })
  },
})

export const stdinSource = defineStage({
  name: 'stdin',
  kind: 'source',
  summary: 'Reads standard input as bytes',
  takes: 'none',
  gives: 'bytes',
  options: z.object({}),
  create(_options, ctx) {
    return ctx.stdin
  },
})

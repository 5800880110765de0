import { z } from 'zod'
import { PipeError, UsageError } from '../core/errors.js'
import { INPUT_CODES, openRegularFile } from '../core/input-file.js'
import { defineStage } from '../core/stage.js'

/** 1 MiB reads: large enough that per-chunk costs vanish, small enough to keep memory flat. */
export const READ_CHUNK = 1 << 20

const maxBytesOption = z.number().int().positive().optional().describe('read at most this many bytes; more is an error (input.too-large), default unlimited')

function tooMuch(max: number, where: string, file?: string): PipeError {
  return new PipeError(INPUT_CODES.tooLarge, `${where} holds more than the ${max} bytes --max-bytes allows`, { location: { ...(file !== undefined ? { file } : {}), offset: max } })
}

/** The bytes of `source` until more than `max` have come, then a failure: a bound on an input of no stated size. */
async function* limitBytes(source: AsyncIterable<Buffer>, max: number, where: string, file?: string): AsyncGenerator<Buffer> {
  let seen = 0
  for await (const chunk of source) {
    seen += chunk.byteLength
    if (seen > max) throw tooMuch(max, where, file)
    yield chunk
  }
}

/**
 * The bytes of the regular file at `path`, READ_CHUNK at a time. With `maxBytes`, a larger file is refused
 * on its size before a byte is read, and a file that grows while read is held to the bound too.
 */
export async function readFileChunks(path: string, maxBytes: number | undefined): Promise<AsyncIterable<Buffer>> {
  const { fh, size } = await openRegularFile(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') throw new UsageError('env.enoent', 'cannot read: no such file', { location: { file: path } })
    throw err
  })
  if (maxBytes !== undefined && size > maxBytes) {
    await fh.close()
    throw tooMuch(maxBytes, 'the file', path)
  }
  const stream = fh.createReadStream({ highWaterMark: READ_CHUNK })
  return maxBytes === undefined ? stream : limitBytes(stream, maxBytes, 'the file', path)
}

export const fileSource = defineStage({
  name: 'file',
  kind: 'source',
  summary: 'Reads a regular file as bytes (a device, FIFO or directory is refused: read streams from stdin)',
  takes: 'none',
  gives: 'bytes',
  options: z.object({ path: z.string().min(1).describe('the file to read'), maxBytes: maxBytesOption }),
  create({ path, maxBytes }) {
    return readFileChunks(path, maxBytes)
  },
})

export const stdinSource = defineStage({
  name: 'stdin',
  kind: 'source',
  summary: 'Reads standard input as bytes, to its end',
  takes: 'none',
  gives: 'bytes',
  options: z.object({ maxBytes: maxBytesOption }),
  create({ maxBytes }, ctx) {
    return maxBytes === undefined ? ctx.stdin : limitBytes(ctx.stdin, maxBytes, 'standard input')
  },
})

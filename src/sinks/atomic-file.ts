import { randomBytes } from 'node:crypto'
import { open, rename, unlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { z } from 'zod'
import { defineStage } from '../core/stage.js'
import { fsyncDir } from '../core/atomic-write.js'

/**
 * Writes bytes under a temporary name in the destination's directory, then fsyncs, renames and fsyncs
 * the directory, so a crash or Ctrl-C never leaves a partial file under the final name.
 */
export const atomicFileSink = defineStage({
  name: 'atomic-file',
  kind: 'sink',
  summary: 'Writes bytes to a file atomically (temp name, fsync, rename, fsync dir)',
  takes: 'bytes',
  gives: 'none',
  options: z.object({
    path: z.string().min(1).describe('the final file name'),
    mode: z.number().int().min(0).max(0o777).default(0o644).describe('file mode bits'),
  }),
  create({ path, mode }) {
    return async (source: AsyncIterable<unknown>) => {
      const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`)
      const handle = await open(temp, 'wx', mode)
      let done = false
      try {
        for await (const chunk of source) {
          const bytes = chunk as Uint8Array
          let written = 0
          while (written < bytes.byteLength) written += (await handle.write(bytes, written)).bytesWritten
        }
        await handle.sync()
        await handle.close()
        await rename(temp, path)
        done = true
        await fsyncDir(dirname(path))
      } finally {
        if (!done) {
          await handle.close().catch(() => {})
          await unlink(temp).catch(() => {})
        }
      }
    }
  },
})

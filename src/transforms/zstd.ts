import { CompressStream } from 'zstd-napi'
import { z } from 'zod'
import { decodeOptions, zstdDecode } from '../codec/zstd.js'
import { defineStage } from '../core/stage.js'

export const zstdDecodeStage = defineStage({
  name: 'zstd-decode',
  kind: 'transform',
  summary: 'Decompresses zstd on a worker thread, with caps on size, ratio and window; passes plain input through in auto mode',
  takes: 'bytes',
  gives: 'bytes',
  options: decodeOptions,
  create(options, ctx) {
    return zstdDecode(options, ctx.stage) as (source: AsyncIterable<unknown>, o: { signal: AbortSignal }) => AsyncIterable<unknown>
  },
})

export const zstdEncodeStage = defineStage({
  name: 'zstd-encode',
  kind: 'transform',
  summary: 'Compresses bytes with zstd',
  takes: 'bytes',
  gives: 'bytes',
  options: z.object({ level: z.number().int().min(1).max(19).default(3).describe('zstd compression level') }),
  create({ level }) {
    return new CompressStream({ compressionLevel: level })
  },
})

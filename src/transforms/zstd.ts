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
  options: decodeOptions.extend({
    notZstd: z.object({ code: z.string().min(1), empty: z.string().min(1), plain: z.string().min(1) }).optional()
      .describe('input that must be zstd: when it is not, a finding with this code (and the detail for empty or plain input), and nothing passed on'),
  }),
  create({ notZstd, ...options }, ctx) {
    const finding = notZstd && ((empty: boolean) => ctx.findings.add({ line: null, code: notZstd.code, detail: empty ? notZstd.empty : notZstd.plain }))
    return zstdDecode(options, ctx.stage, finding) as (source: AsyncIterable<unknown>, o: { signal: AbortSignal }) => AsyncIterable<unknown>
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

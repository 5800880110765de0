import { z } from 'zod'
import { UsageError } from '../core/errors.js'
import { isDocumentItem } from '../core/items.js'
import { defineStage } from '../core/stage.js'
import { RAW_FILE_NAME } from '../formats/record/manifest.js'

/**
 * The last step of a seal: lands each linked and signed hour (its manifest and signature into its folder,
 * the folder renamed into place, fsynced) and, after hour 23, the day's manifest, linked and signed by the
 * signer the hour was prepared with. An hour sealed before is left as it is.
 */
export const sealCommitSink = defineStage({
  name: 'seal-commit',
  kind: 'sink',
  summary: 'Lands sealed hours (record format v1): manifest and signature, the hour renamed into place; the day after hour 23',
  takes: 'documents',
  gives: 'none',
  options: z.object({}),
  create(_o, ctx) {
    return async (source: AsyncIterable<unknown>) => {
      const { HourDraft, commitHour } = await import('../formats/record/seal/seal.js')
      for await (const item of source) {
        if (!isDocumentItem(item) || !(item instanceof HourDraft)) throw new UsageError('usage.item-type', `${ctx.stage} takes the hours hour-manifest draws up`)
        // Stopped while signing (an external signer): nothing lands after the user was told so.
        ctx.signal.throwIfAborted()
        const result = await commitHour(item)
        const m = result.manifest
        ctx.summary.hour = m.interval.start_time.slice(0, 13)
        ctx.summary.sealed = result.status
        ctx.summary.status = m.completeness.status
        ctx.summary.reasons = m.completeness.reasons
        ctx.summary.frames = m.files.find((f) => f.name === RAW_FILE_NAME)?.rows ?? 0
        ctx.summary.gaps = m.sequence_gaps.length
        ctx.summary.dir = result.dir
        if (result.daily) ctx.summary.daily = result.daily.date
      }
    }
  },
})

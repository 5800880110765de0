import { z } from 'zod'
import { linkDocument } from '../codec/document-link.js'
import { PipeError } from '../core/errors.js'
import { readInputFile } from '../core/input-file.js'
import { isDocumentItem } from '../core/items.js'
import { defineStage } from '../core/stage.js'

/**
 * Links each document to the one before it: the member `field` is set to the hash of the exact bytes of
 * the document it follows (the stored one a document names, as a sealed hour names the hour before it, or
 * else the one before it in the stream; null for the first of a chain), and its bytes are fixed.
 */
export const chainLinkStage = defineStage({
  name: 'chain-link',
  kind: 'transform',
  summary: 'Links each document (a manifest) to the previous one by the BLAKE3 or SHA-256 of its exact bytes, and fixes its bytes',
  takes: 'documents',
  gives: 'documents',
  options: z.object({
    field: z.string().min(1).default('previous_manifest_blake3').describe('the member that holds the previous document\'s hash'),
    algorithm: z.enum(['blake3', 'sha256']).default('blake3').describe('the hash'),
    maxPreviousBytes: z.number().int().positive().default(16 * 2 ** 20).describe('the largest stored previous document read (docs/limits.md)'),
  }),
  create(o, ctx) {
    const limit = { maxBytes: o.maxPreviousBytes, what: 'a previous document' }
    return async function* (source: AsyncIterable<unknown>) {
      let before: Uint8Array | null = null
      for await (const item of source) {
        if (!isDocumentItem(item)) throw new PipeError('usage.item-type', `${ctx.stage} takes documents (manifests)`)
        if (item.final) {
          before = item.serialize()
          yield item
          continue
        }
        const previous = item.previousPath === undefined ? before : item.previousPath === null ? null : await readInputFile(item.previousPath, limit)
        before = await linkDocument(item, previous, o.field, o.algorithm)
        yield item
      }
    }
  },
})

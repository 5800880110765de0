import { dirname, join } from 'node:path'
import { z } from 'zod'
import { PipeError } from '../core/errors.js'
import { isDocumentItem } from '../core/items.js'
import { defineStage } from '../core/stage.js'
import { signerOptions } from '../formats/record/keys/signer-options.js'

/**
 * Signs each linked document's exact bytes: the detached JWS of record format v1 (`manifest.json.sig`),
 * with a private key file, or through an external signer command holding the key (a hardware token, a
 * KMS), whose signature is checked against the key set's public key before it is used.
 */
export const signStage = defineStage({
  name: 'sign',
  kind: 'transform',
  summary: 'Signs each document\'s bytes (a detached JWS, Ed25519) with a key file or an external signer command',
  takes: 'documents',
  gives: 'documents',
  options: z.object(signerOptions),
  async create(o, ctx) {
    const { recordSigner } = await import('../formats/record/keys/signer.js')
    const signer = await recordSigner(o, (key) => join(dirname(key), 'jwks.json'))
    return async function* (source: AsyncIterable<unknown>) {
      for await (const item of source) {
        if (!isDocumentItem(item)) throw new PipeError('usage.item-type', `${ctx.stage} takes documents (manifests)`)
        if (!item.final) {
          if (!item.bytes) throw new PipeError('sign.not-linked', `${item.name} has no bytes to sign yet: put chain-link before sign`)
          item.signature = await signer.sign(item.bytes)
        }
        yield item
      }
    }
  },
})

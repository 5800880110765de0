/**
 * Linking a document into a hash chain (record format manifests: `previous_manifest_blake3`): the member
 * `field` is set to the hash of the exact bytes of the document before it, or null for a chain's first,
 * and the document's bytes are fixed from then on. One implementation, used by the chain-link stage and
 * by the sealer's own days.
 */
import type { DocumentItem } from '../core/items.js'
import { createIncrementalHash, type HashAlgorithm } from './hash.js'

export async function linkDocument(doc: DocumentItem, previous: Uint8Array | null, field: string, algorithm: HashAlgorithm): Promise<Uint8Array> {
  let link: string | null = null
  if (previous !== null) {
    const hash = await createIncrementalHash(algorithm)
    hash.update(previous)
    link = hash.digestHex()
  }
  doc.value[field] = link
  doc.bytes = doc.serialize()
  return doc.bytes
}

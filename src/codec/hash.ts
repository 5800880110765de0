/**
 * Incremental hashing of byte streams: BLAKE3 (the record format's chains and file digests) and SHA-256
 * (the pack format's ids), and a pass-through that hashes what flows by.
 */
import { createHash } from 'node:crypto'
import { Transform } from 'node:stream'

/** A content name: `sha256:` and the 64 lower-case hex digits of the bytes' SHA-256 (the digits captured). */
export const SHA256_NAME = /^sha256:([0-9a-f]{64})$/

export type HashAlgorithm = 'blake3' | 'sha256'

interface IncrementalHash { update(data: Uint8Array): unknown; digestHex(): string }

/** BLAKE3 from hash-wasm (equals b3sum); SHA-256 from node:crypto (3.5x faster than wasm here). */
export async function createIncrementalHash(algorithm: HashAlgorithm): Promise<IncrementalHash> {
  if (algorithm === 'sha256') {
    const h = createHash('sha256')
    return { update: (d) => h.update(d), digestHex: () => h.digest('hex') }
  }
  // Loaded on first use: the wasm module costs ~12 MB of RSS that runs without BLAKE3 need not pay.
  const { createBLAKE3 } = await import('hash-wasm')
  const h = await createBLAKE3()
  h.init()
  return { update: (d) => h.update(d), digestHex: () => h.digest('hex') }
}

/** The BLAKE3 hex digest of each byte string given, from one hasher reused: for many small inputs (raw lines). */
export async function blake3Digests(): Promise<(bytes: Uint8Array) => string> {
  const { createBLAKE3 } = await import('hash-wasm')
  const h = await createBLAKE3()
  return (bytes) => {
    h.init()
    h.update(bytes)
    return h.digest('hex')
  }
}

/** Passes bytes through unchanged while hashing them; calls `done` with the hex digest at the end. */
export function hashingPassThrough(hash: IncrementalHash, done: (hex: string, bytes: number) => void): Transform {
  let bytes = 0
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk)
      bytes += chunk.byteLength
      cb(null, chunk)
    },
    flush(cb) {
      done(hash.digestHex(), bytes)
      cb()
    },
  })
}


import { createHash } from 'node:crypto'
import { Transform } from 'node:stream'
import { z } from 'zod'
import { UsageError } from '../core/errors.js'
import { defineStage } from '../core/stage.js'

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

const algorithmOption = z.enum(['blake3', 'sha256']).default('blake3').describe('hash algorithm')

export const hashTee = defineStage({
  name: 'hash-tee',
  kind: 'transform',
  summary: 'Passes bytes through and puts their hash into the run summary',
  takes: 'bytes',
  gives: 'bytes',
  options: z.object({
    algorithm: algorithmOption,
    field: z.string().min(1).optional().describe('summary field for the digest (default: the algorithm name)'),
  }),
  async create({ algorithm, field }, ctx) {
    const key = field ?? algorithm
    return hashingPassThrough(await createIncrementalHash(algorithm), (hex, bytes) => {
      ctx.summary[key] = hex
      ctx.summary[`${key}_bytes`] = bytes
    })
  },
})

export const hashCheck = defineStage({
  name: 'hash-check',
  kind: 'transform',
  summary: 'Passes bytes through and reports a finding when their hash differs from the expected one',
  takes: 'bytes',
  gives: 'bytes',
  options: z.object({
    algorithm: algorithmOption,
    expected: z.string().describe('expected digest, lowercase hex'),
    code: z.string().default('hash.mismatch').describe('finding code reported on a mismatch'),
  }),
  async create({ algorithm, expected, code }, ctx) {
    if (!/^[0-9a-f]{64}$/.test(expected)) {
      throw new UsageError('usage.bad-hash', `expected ${algorithm} digest must be 64 lowercase hex digits, got "${expected}"`, { location: { field: 'expected' } })
    }
    return hashingPassThrough(await createIncrementalHash(algorithm), (hex) => {
      if (hex !== expected) ctx.findings.add({ line: null, code, detail: `${algorithm} of the input is ${hex}, expected ${expected}` })
    })
  },
})

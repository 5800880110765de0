import { z } from 'zod'
import { createIncrementalHash, hashingPassThrough } from '../codec/hash.js'
import { UsageError } from '../core/errors.js'
import { defineStage } from '../core/stage.js'

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

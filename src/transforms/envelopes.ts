import { z } from 'zod'
import type { Measured } from '../core/items.js'
import { defineStage } from '../core/stage.js'
import { CanonicalChecker } from '../formats/json/canonical-check.js'
import { checkEnvelope, newEnvelopeResult } from '../formats/record/envelope.js'
import type { LineBatch } from '../codec/lines.js'

/**
 * What the envelope check learned about each line of a batch, in parallel typed arrays: the frame time
 * (epoch seconds + nanoseconds) when the line had one, and whether some receipt lacked clock_offset.
 */
export class EnvelopeBatch implements Measured {
  readonly frameSec: Float64Array
  readonly frameNano: Uint32Array
  readonly hasFrameTime: Uint8Array
  readonly lacksOffset: Uint8Array

  constructor(readonly lines: LineBatch) {
    const n = lines.count
    this.frameSec = new Float64Array(n)
    this.frameNano = new Uint32Array(n)
    this.hasFrameTime = new Uint8Array(n)
    this.lacksOffset = new Uint8Array(n)
  }

  get count(): number { return this.lines.count }
  get firstLine(): number { return this.lines.firstLine }
  get itemCount(): number { return this.lines.itemCount }
  get byteCount(): number { return this.lines.byteCount }
}

export const parseEnvelopesStage = defineStage({
  name: 'parse-envelopes',
  kind: 'transform',
  summary: 'Checks each line is an RFC 8785 canonical raw-file envelope (record format v1) and extracts its frame time',
  takes: 'lines',
  gives: 'envelopes',
  options: z.object({ strict: z.boolean().default(false).describe('also report fields the spec does not define') }),
  create({ strict }, ctx) {
    const result = newEnvelopeResult()
    const options = { strict }
    return async function* (source: AsyncIterable<unknown>) {
      for await (const item of source) {
        const lines = item as LineBatch
        const batch = new EnvelopeBatch(lines)
        const { data, starts, ends } = lines
        for (let i = 0; i < lines.count; i++) {
          checkEnvelope(data, starts[i]!, ends[i]!, result, options)
          if (result.hasFrameTime) {
            batch.hasFrameTime[i] = 1
            batch.frameSec[i] = result.frameSec
            batch.frameNano[i] = result.frameNsec
          }
          if (result.lacksOffset) batch.lacksOffset[i] = 1
          for (let f = 0; f < result.findingCount; f++) {
            ctx.findings.add({ line: lines.firstLine + i, code: result.codes[f]!, detail: result.details[f]! })
          }
        }
        yield batch
      }
    }
  },
})

export const canonicalCheckStage = defineStage({
  name: 'canonical-check',
  kind: 'transform',
  summary: 'Reports lines that are not RFC 8785 canonical JSON (integers within ±(2^53 − 1) unless told otherwise)',
  takes: 'lines',
  gives: 'lines',
  options: z.object({
    integersOnly: z.boolean().default(true).describe('numbers must be integers within ±(2^53 − 1)'),
    maxDepth: z.number().int().min(1).max(1000).default(32).describe('deepest nesting accepted'),
  }),
  create({ integersOnly, maxDepth }, ctx) {
    const checker = new CanonicalChecker({ integersOnly, maxDepth })
    return async function* (source: AsyncIterable<unknown>) {
      for await (const item of source) {
        const lines = item as LineBatch
        for (let i = 0; i < lines.count; i++) {
          const start = lines.starts[i]!
          if (checker.check(lines.data, start, lines.ends[i]!) !== 0) {
            ctx.findings.add({ line: lines.firstLine + i, code: checker.codeName, detail: checker.describe(start) })
          }
        }
        yield lines
      }
    }
  },
})

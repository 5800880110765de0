/**
 * The zstd decoding rule shared by the worker thread and the in-process decoder: one zstd context, the
 * caps on window, size and ratio checked as bytes are produced, and the error codes hostile input gets.
 */
import { createRequire } from 'node:module'
import { PipeError } from '../core/errors.js'

const require = createRequire(import.meta.url)
const zstd = require('zstd-napi/binding') as {
  DCtx: new () => { decompressStream(out: Uint8Array, input: Uint8Array): [number, number, number]; setParameter(p: number, v: number): void }
  DParameter: { windowLogMax: number }
}

export interface DecodeCaps { maxRatio: number; maxOutputBytes: number; windowLogMax: number }

/** Decompressed bytes allowed before the ratio cap applies, so small legitimate inputs are never refused. */
const RATIO_SLACK_BYTES = 1 << 20
const EMPTY = new Uint8Array(0)

export class ZstdDecoder {
  private readonly dctx = new zstd.DCtx()
  inputBytes = 0
  outputBytes = 0
  /** Whether the stream is inside a frame (input ending now would be a truncated file). */
  frameOpen = false

  constructor(private readonly caps: DecodeCaps) {
    this.dctx.setParameter(zstd.DParameter.windowLogMax, caps.windowLogMax)
  }

  private fail(code: string, message: string): never {
    throw new PipeError(code, message, { location: { offset: this.inputBytes } })
  }

  /** Decodes from `input` into `out`; returns [produced, consumed]. Throws a PipeError with a raw.zstd-* code. */
  step(out: Uint8Array, input: Uint8Array = EMPTY): [number, number] {
    let result: [number, number, number]
    try {
      result = this.dctx.decompressStream(out, input)
    } catch (err) {
      const msg = (err as Error).message
      if (/window|memory/i.test(msg)) this.fail('raw.zstd-window-cap', `zstd frame needs more window memory than the cap of 2^${this.caps.windowLogMax} bytes (${msg})`)
      this.fail('raw.zstd-corrupt', `zstd stream is corrupt: ${msg}`)
    }
    const [hint, produced, consumed] = result
    this.frameOpen = hint !== 0
    this.outputBytes += produced
    this.inputBytes += consumed
    if (this.outputBytes > this.caps.maxOutputBytes) this.fail('raw.zstd-size-cap', `decompressed size exceeds the cap of ${this.caps.maxOutputBytes} bytes`)
    if (this.outputBytes > RATIO_SLACK_BYTES && this.outputBytes > this.caps.maxRatio * this.inputBytes) {
      this.fail('raw.zstd-ratio-cap', `decompression ratio exceeds the cap of ${this.caps.maxRatio}:1 (${this.outputBytes} bytes from ${this.inputBytes})`)
    }
    return [produced, consumed]
  }

  /** At the end of the input: a frame still open means the file was cut short. */
  assertComplete(): void {
    if (this.frameOpen) this.fail('raw.zstd-truncated', `zstd stream ends inside a frame after ${this.inputBytes} bytes: the file is truncated`)
  }
}

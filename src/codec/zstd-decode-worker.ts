/**
 * Decompresses a zstd stream on its own thread, so that the main thread spends its time checking lines.
 * Credit-based flow control keeps memory bounded: the worker posts at most `credits` output buffers
 * ahead of the consumer and holds at most two input chunks. The caps (zstd-core.ts) are checked as bytes
 * are produced, so a zstd bomb stops after one output buffer over the cap.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { BufferPool } from '../core/buffer-pool.js'
import { PipeError } from '../core/errors.js'
import { ZstdDecoder, type DecodeCaps } from './zstd-core.js'

export interface DecodeLimits extends DecodeCaps { outputChunkBytes: number; credits: number }
/** A credit may hand back a consumed output buffer for reuse (see `recycle` in zstd.ts). */
export type ToWorker = { type: 'input'; buf: Uint8Array } | { type: 'end' } | { type: 'credit'; buf?: Uint8Array }
export type FromWorker =
  | { type: 'output'; buf: Uint8Array }
  | { type: 'consumed'; buf: ArrayBuffer }
  | { type: 'done'; inputBytes: number; outputBytes: number }
  | { type: 'error'; code: string; message: string; offset: number }

const limits = workerData as DecodeLimits
const port = parentPort!
const decoder = new ZstdDecoder(limits)

const inputs: Uint8Array[] = []
const spare = new BufferPool(limits.outputChunkBytes, limits.credits)
let ended = false
let credits = limits.credits
let out = new Uint8Array(spare.take())
let outFill = 0
let failed = false

function post(msg: FromWorker, transfer?: ArrayBuffer[]) {
  port.postMessage(msg, transfer ?? [])
}

function flushOutput() {
  post({ type: 'output', buf: out.subarray(0, outFill) }, [out.buffer as ArrayBuffer])
  credits--
  out = new Uint8Array(spare.take())
  outFill = 0
}

function pump() {
  while (credits > 0) {
    const input = inputs[0]
    if (!input) break
    const [produced, consumed] = decoder.step(out.subarray(outFill), input)
    outFill += produced
    if (consumed === input.byteLength) {
      inputs.shift()
      // Sent back rather than dropped: this thread allocates so little that its GC would let consumed
      // inputs pile up (~65 MB measured on a 1M-line hour); the main thread collects them promptly.
      post({ type: 'consumed', buf: input.buffer as ArrayBuffer }, [input.buffer as ArrayBuffer])
    } else {
      inputs[0] = input.subarray(consumed)
    }
    if (outFill === out.byteLength) flushOutput()
  }
  if (!ended || inputs.length > 0 || credits === 0) return
  // zstd may still hold decoded bytes in its window buffer after the input is consumed.
  while (decoder.frameOpen && credits > 0) {
    const [produced] = decoder.step(out.subarray(outFill))
    outFill += produced
    if (outFill === out.byteLength) flushOutput()
    else if (produced === 0) break
  }
  if (credits === 0) return
  if (outFill > 0) flushOutput()
  decoder.assertComplete()
  post({ type: 'done', inputBytes: decoder.inputBytes, outputBytes: decoder.outputBytes })
}

port.on('message', (msg: ToWorker) => {
  if (failed) return
  if (msg.type === 'input') inputs.push(msg.buf)
  else if (msg.type === 'end') ended = true
  else {
    credits++
    if (msg.buf) spare.give(msg.buf.buffer as ArrayBuffer)
  }
  try {
    pump()
  } catch (err) {
    failed = true
    const e = err instanceof PipeError ? err : new PipeError('raw.zstd-corrupt', (err as Error).message)
    post({ type: 'error', code: e.code, message: e.message, offset: e.location?.offset ?? decoder.inputBytes })
  }
})

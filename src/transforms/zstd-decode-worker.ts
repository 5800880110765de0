/**
 * Decompresses a zstd stream on its own thread, so that the main thread spends its time checking lines.
 * Credit-based flow control keeps memory bounded: the worker posts at most `credits` output buffers
 * ahead of the consumer and holds at most two input chunks. Caps (ratio, size, window) are enforced here,
 * before the bytes exist, so a zstd bomb stops after one output buffer over the cap.
 */
import { createRequire } from 'node:module'
import { parentPort, workerData } from 'node:worker_threads'

const require = createRequire(import.meta.url)
const zstd = require('zstd-napi/binding') as {
  DCtx: new () => { decompressStream(out: Uint8Array, input: Uint8Array): [number, number, number]; setParameter(p: number, v: number): void }
  DParameter: { windowLogMax: number }
}

export interface DecodeLimits { maxRatio: number; maxOutputBytes: number; windowLogMax: number; outputChunkBytes: number; credits: number }
/** A credit may hand back a consumed output buffer for reuse (see `recycle` in zstd.ts). */
export type ToWorker = { type: 'input'; buf: Uint8Array } | { type: 'end' } | { type: 'credit'; buf?: Uint8Array }
export type FromWorker =
  | { type: 'output'; buf: Uint8Array }
  | { type: 'consumed'; buf: ArrayBuffer }
  | { type: 'done'; inputBytes: number; outputBytes: number }
  | { type: 'error'; code: string; message: string; offset: number }

/** Decompressed bytes allowed before the ratio cap applies, so small legitimate inputs are never refused. */
const RATIO_SLACK_BYTES = 1 << 20

const limits = workerData as DecodeLimits
const port = parentPort!
const dctx = new zstd.DCtx()
dctx.setParameter(zstd.DParameter.windowLogMax, limits.windowLogMax)

const inputs: Uint8Array[] = []
let ended = false
let credits = limits.credits
const spare: Uint8Array[] = []
let out: Uint8Array = new Uint8Array(limits.outputChunkBytes)
let outFill = 0
let inputBytes = 0
let outputBytes = 0
let frameOpen = false
let failed = false

function post(msg: FromWorker, transfer?: ArrayBuffer[]) {
  port.postMessage(msg, transfer ?? [])
}

function fail(code: string, message: string) {
  failed = true
  post({ type: 'error', code, message, offset: inputBytes })
}

function flushOutput() {
  post({ type: 'output', buf: out.subarray(0, outFill) }, [out.buffer as ArrayBuffer])
  credits--
  out = spare.pop() ?? new Uint8Array(limits.outputChunkBytes)
  outFill = 0
}

function pump() {
  while (!failed && credits > 0) {
    const input = inputs[0]
    if (!input) break
    let result: [number, number, number]
    try {
      result = dctx.decompressStream(out.subarray(outFill), input)
    } catch (err) {
      const msg = (err as Error).message
      if (/window|memory/i.test(msg)) fail('raw.zstd-window-cap', `zstd frame needs more window memory than the cap of 2^${limits.windowLogMax} bytes (${msg})`)
      else fail('raw.zstd-corrupt', `zstd stream is corrupt: ${msg}`)
      return
    }
    const [hint, produced, consumed] = result
    frameOpen = hint !== 0
    outFill += produced
    outputBytes += produced
    inputBytes += consumed
    if (outputBytes > limits.maxOutputBytes) {
      fail('raw.zstd-size-cap', `decompressed size exceeds the cap of ${limits.maxOutputBytes} bytes`)
      return
    }
    if (outputBytes > RATIO_SLACK_BYTES && outputBytes > limits.maxRatio * inputBytes) {
      fail('raw.zstd-ratio-cap', `decompression ratio exceeds the cap of ${limits.maxRatio}:1 (${outputBytes} bytes from ${inputBytes})`)
      return
    }
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
  if (!failed && ended && inputs.length === 0 && credits > 0) {
    // zstd may still hold decoded bytes in its window buffer after the input is consumed.
    while (frameOpen && credits > 0) {
      const before = outFill
      try {
        const [hint, produced] = dctx.decompressStream(out.subarray(outFill), new Uint8Array(0))
        frameOpen = hint !== 0
        outFill += produced
        outputBytes += produced
      } catch (err) {
        fail('raw.zstd-corrupt', `zstd stream is corrupt: ${(err as Error).message}`)
        return
      }
      if (outFill === out.byteLength) flushOutput()
      else if (outFill === before) break
    }
    if (credits === 0) return
    if (outFill > 0) flushOutput()
    if (frameOpen) {
      fail('raw.zstd-truncated', `zstd stream ends inside a frame after ${inputBytes} bytes: the file is truncated`)
      return
    }
    post({ type: 'done', inputBytes, outputBytes })
  }
}

port.on('message', (msg: ToWorker) => {
  if (msg.type === 'input') inputs.push(msg.buf)
  else if (msg.type === 'end') ended = true
  else {
    credits++
    if (msg.buf && msg.buf.byteLength === limits.outputChunkBytes) spare.push(msg.buf)
  }
  pump()
})

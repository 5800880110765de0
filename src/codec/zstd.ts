/**
 * zstd decompression with caps on size, ratio and window: on a worker thread for large streams
 * (zstd-decode-worker.ts), or on the caller's thread for small ones; both apply zstd-core.ts's rule.
 */
import { Worker } from 'node:worker_threads'
import { z } from 'zod'
import { PipeError, UsageError } from '../core/errors.js'
import { openRegularFile } from '../core/input-file.js'
import type { DecodeLimits, FromWorker, ToWorker } from './zstd-decode-worker.js'
import { ZstdDecoder, type DecodeCaps } from './zstd-core.js'

/** A zstd stream starts with a data frame (0xFD2FB528) or a skippable frame (0x184D2A50..5F, as pzstd writes). */
export function startsWithZstdMagic(buf: Uint8Array): boolean {
  if (buf.byteLength < 4) return false
  const dataFrame = buf[0] === 0x28 && buf[1] === 0xb5 && buf[2] === 0x2f && buf[3] === 0xfd
  const skippableFrame = (buf[0]! & 0xf0) === 0x50 && buf[1] === 0x2a && buf[2] === 0x4d && buf[3] === 0x18
  return dataFrame || skippableFrame
}

export const decodeOptions = z.object({
  mode: z.enum(['auto', 'zstd', 'none']).default('auto').describe('auto: decompress when the input starts with the zstd magic, else pass it through'),
  requireCompressed: z.boolean().default(false).describe('refuse (exit 2) input that is not zstd'),
  maxRatio: z.number().positive().default(1000).describe('largest decompressed:compressed ratio accepted (zstd bomb guard)'),
  maxOutputBytes: z.number().int().positive().default(64 * 2 ** 30).describe('largest decompressed size accepted'),
  windowLogMax: z.number().int().min(10).max(31).default(27).describe('largest zstd window accepted, as a power of two (memory guard)'),
  recycle: z.boolean().default(false).describe('reuse an output chunk once the next is asked for: only when no later stage keeps chunks after asking for the next'),
})
export type DecodeOptions = z.infer<typeof decodeOptions>

const OUTPUT_CHUNK_BYTES = 1 << 20
const OUTPUT_CREDITS = 4
const MAX_PENDING_INPUTS = 2

function workerUrl(): URL {
  // Under a TypeScript loader (tests) this module is .ts and so is its worker; built, both are .js.
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js'
  return new URL(`./zstd-decode-worker${ext}`, import.meta.url)
}

/**
 * Decompresses zstd (detected by its magic, or forced) on a worker thread and yields 1 MiB chunks of
 * plain bytes; plain input passes through untouched, or, given `notZstd`, is not passed on at all and
 * `notZstd` is told whether it was empty. The caps make hostile input a finding-free PipeError rather
 * than unbounded memory.
 */
export function zstdDecode(opts: DecodeOptions, stage = 'zstd-decode', notZstd?: (empty: boolean) => void) {
  return async function* (source: AsyncIterable<Uint8Array>, { signal }: { signal: AbortSignal }): AsyncGenerator<Uint8Array> {
    const it = source[Symbol.asyncIterator]()
    let first = await it.next()
    while (!first.done && first.value.byteLength < 4) {
      const more = await it.next()
      if (more.done) break
      first = { done: false, value: Buffer.concat([first.value, more.value]) }
    }
    const head = first.done ? new Uint8Array(0) : first.value
    const compressed = opts.mode === 'zstd' || (opts.mode === 'auto' && startsWithZstdMagic(head))
    if (!compressed && notZstd) {
      notZstd(head.byteLength === 0)
      return
    }
    if (!compressed) {
      if (opts.requireCompressed) throw new UsageError('usage.not-compressed', 'the input is not zstd-compressed, but the options need the compressed file as stored (e.g. --blake3)', { stage })
      if (!first.done) yield head
      for (let r = await it.next(); !r.done; r = await it.next()) yield r.value
      return
    }
    yield* decodeOnWorker(head, it, opts, stage, signal)
  }
}

async function* decodeOnWorker(head: Uint8Array, it: AsyncIterator<Uint8Array>, opts: DecodeOptions, stage: string, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  const limits: DecodeLimits = { maxRatio: opts.maxRatio, maxOutputBytes: opts.maxOutputBytes, windowLogMax: opts.windowLogMax, outputChunkBytes: OUTPUT_CHUNK_BYTES, credits: OUTPUT_CREDITS }
  const worker = new Worker(workerUrl(), { workerData: limits })
  const outputs: Uint8Array[] = []
  let finished = false
  let failure: unknown = null
  let wake: (() => void) | null = null
  let pending = 0
  let inputWaiter: (() => void) | null = null
  const notify = () => { const w = wake; wake = null; w?.() }
  const send = (msg: ToWorker, transfer: ArrayBuffer[] = []) => worker.postMessage(msg, transfer)

  worker.on('message', (msg: FromWorker) => {
    if (msg.type === 'output') outputs.push(msg.buf)
    else if (msg.type === 'consumed') { pending--; const w = inputWaiter; inputWaiter = null; w?.() }
    else if (msg.type === 'done') finished = true
    else failure ??= new PipeError(msg.code, msg.message, { stage, location: { offset: msg.offset } })
    notify()
  })
  worker.on('error', (err) => { failure ??= err; notify() })
  worker.on('exit', () => { if (!finished) failure ??= new PipeError('internal', 'zstd worker stopped unexpectedly', { stage }); notify() })

  const toTransferable = (chunk: Uint8Array): Uint8Array => {
    // A chunk that owns its whole ArrayBuffer (file reads) moves to the worker as it is; a view into a
    // shared slab (pooled small reads) is copied, so the transfer never detaches someone else's memory.
    if (chunk.byteOffset === 0 && chunk.buffer.byteLength === chunk.byteLength && !(chunk.buffer instanceof SharedArrayBuffer)) return chunk
    const copy = new Uint8Array(chunk.byteLength)
    copy.set(chunk)
    return copy
  }
  const feed = (async () => {
    let chunk: Uint8Array | null = head
    for (;;) {
      if (failure || signal.aborted) return
      if (chunk && chunk.byteLength > 0) {
        while (pending >= MAX_PENDING_INPUTS && !failure) await new Promise<void>((r) => (inputWaiter = r))
        const copy = toTransferable(chunk)
        pending++
        send({ type: 'input', buf: copy }, [copy.buffer as ArrayBuffer])
      }
      const r = await it.next()
      if (r.done) break
      chunk = r.value
    }
    send({ type: 'end' })
  })().catch((err) => { failure ??= err; notify() })

  try {
    for (;;) {
      if (outputs.length > 0) {
        const buf = outputs.shift()!
        yield Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength)
        // Handing the buffer back detaches it here, so a stage that kept it by mistake reads nothing
        // rather than the next chunk's bytes. It spares ~1 MiB of garbage per chunk (GC lag was RSS).
        if (opts.recycle) send({ type: 'credit', buf: new Uint8Array(buf.buffer) }, [buf.buffer as ArrayBuffer])
        else send({ type: 'credit' })
        continue
      }
      if (failure) throw failure
      if (finished) break
      await new Promise<void>((r) => (wake = r))
    }
    await feed
  } finally {
    const w = inputWaiter as (() => void) | null
    inputWaiter = null
    w?.()
    await worker.terminate()
  }
}

/**
 * Decompresses on this thread, with the same rule and caps as the worker, yielding chunks of `chunkBytes`.
 * Each chunk is reused once the next is asked for, so the consumer must be done with it by then. For
 * inputs small enough that starting a worker thread (~130 ms) would cost more than decompressing here.
 */
export async function* zstdDecodeInProcess(source: AsyncIterable<Uint8Array>, caps: DecodeCaps, chunkBytes = OUTPUT_CHUNK_BYTES): AsyncGenerator<Uint8Array> {
  const decoder = new ZstdDecoder(caps)
  const out = Buffer.allocUnsafeSlow(chunkBytes)
  let fill = 0
  for await (const chunk of source) {
    let input = chunk
    while (input.byteLength > 0) {
      const [produced, consumed] = decoder.step(out.subarray(fill), input)
      fill += produced
      input = input.subarray(consumed)
      if (fill === out.byteLength) {
        yield out
        fill = 0
      }
    }
  }
  while (decoder.frameOpen) {
    const [produced] = decoder.step(out.subarray(fill))
    fill += produced
    if (fill === out.byteLength) {
      yield out
      fill = 0
    } else if (produced === 0) {
      break
    }
  }
  if (fill > 0) yield out.subarray(0, fill)
  decoder.assertComplete()
}

/**
 * The lines (without their newline) of a zstd file such as a raw.jsonl.zst, decompressed on this thread:
 * for a rare or small read, where a worker thread's start would cost more. Each line is valid until the
 * next is asked for. Only a line split across chunks is copied; one longer than `maxLineBytes` is refused
 * before it is held whole, and so is a last line without its newline.
 */
export async function* zstdFileLines(path: string, maxLineBytes: number): AsyncGenerator<Buffer> {
  const { fh } = await openRegularFile(path)
  const tooLong = (line: number) => new PipeError('raw.line-too-long', `line is longer than ${maxLineBytes} bytes`, { location: { file: path, line } })
  try {
    let carry: Buffer | null = null
    let line = 0
    const caps = decodeOptions.parse({ mode: 'zstd', requireCompressed: true })
    for await (const chunk of zstdDecodeInProcess(fh.createReadStream({ autoClose: false }) as AsyncIterable<Uint8Array>, caps)) {
      const data = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
      let pos = 0
      if (carry) {
        const nl = data.indexOf(10)
        if (nl < 0) {
          if (carry.byteLength + data.byteLength > maxLineBytes) throw tooLong(line + 1)
          carry = Buffer.concat([carry, data])
          continue
        }
        line++
        if (carry.byteLength + nl > maxLineBytes) throw tooLong(line)
        yield Buffer.concat([carry, data.subarray(0, nl)])
        carry = null
        pos = nl + 1
      }
      for (let nl = data.indexOf(10, pos); nl >= 0; nl = data.indexOf(10, pos)) {
        line++
        if (nl - pos > maxLineBytes) throw tooLong(line)
        yield data.subarray(pos, nl)
        pos = nl + 1
      }
      if (pos < data.byteLength) {
        if (data.byteLength - pos > maxLineBytes) throw tooLong(line + 1)
        carry = Buffer.from(data.subarray(pos))
      }
    }
    if (carry) throw new PipeError('raw.no-final-newline', 'the last line has no newline', { location: { file: path, line: line + 1 } })
  } finally {
    await fh.close()
  }
}

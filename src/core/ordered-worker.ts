/**
 * A job on a worker thread that takes a stream of items in order: `open` once, any number of items, then
 * `finish`, which gives the job's result. Each item is acknowledged once the worker has handled it; the
 * caller may have at most `maxInFlight` unacknowledged items, which is the flow control that bounds memory.
 * A failure on the thread (a thrown error, a crash) rejects the caller's next call, keeping a PipeError's
 * code and location. Threads that finished a job are kept, unref'd, for the next job of the same module in
 * this process: starting one and loading its modules costs a few hundred milliseconds.
 *
 * The worker module calls {@link serveOrderedJobs} with its handlers; the caller uses {@link OrderedJob}.
 */
import { parentPort, Worker } from 'node:worker_threads'
import { PipeError, type Location } from './errors.js'

type ToWorker = { type: 'open'; value: unknown } | { type: 'item'; value: unknown } | { type: 'finish'; value: unknown }
type FromWorker = { type: 'ack'; returned?: ArrayBuffer[] } | { type: 'finished'; value: unknown } | { type: 'error'; code: string; message: string; location?: Location }

interface Thread {
  worker: Worker
  url: string
  owner: OrderedJob<unknown, unknown, unknown> | null
}

const idle: Thread[] = []

/**
 * The module `name` beside `moduleUrl` (an `import.meta.url`): under a TypeScript loader (tests) modules
 * are .ts and so is the worker; built, both are .js.
 */
export function siblingWorkerUrl(moduleUrl: string, name: string): URL {
  return new URL(`./${name}${moduleUrl.endsWith('.ts') ? '.ts' : '.js'}`, moduleUrl)
}

/**
 * The old-generation limit of a job's thread. V8 lets garbage pile up to a limit it sets from the
 * machine's memory (gigabytes); a streaming job's live set is a few megabytes (the sealer's threads peak at
 * 10 MB after a collection), so this keeps its heap, and the process's RSS, near what it uses.
 */
const OLD_GENERATION_MB = 96

const DEFAULT_YOUNG_GENERATION_MB = 16

export interface OrderedJobOptions {
  /** Unacknowledged items the caller may have (default 8). */
  maxInFlight?: number
  /**
   * The young generation of a new thread, MB (default 16). Objects that outlive it are promoted and cost
   * a full collection later: a job that keeps each batch's objects alive while it works wants more.
   */
  youngGenerationMb?: number
  /**
   * Takes back the buffers an item moved to the thread once the thread is done with them (what the
   * handler's `item` returns), for the caller to fill again: fresh megabyte buffers cost page faults and
   * garbage collections on both sides.
   */
  onReturned?: (buffer: ArrayBuffer) => void
}

function startThread(url: URL, youngGenerationMb: number): Thread {
  const resourceLimits = { maxOldGenerationSizeMb: OLD_GENERATION_MB, maxYoungGenerationSizeMb: youngGenerationMb }
  const thread: Thread = { worker: new Worker(url, { resourceLimits }), url: url.href, owner: null }
  thread.worker.on('message', (msg: FromWorker) => thread.owner?.onMessage(msg))
  thread.worker.on('error', (err) => thread.owner?.onFailure(new PipeError('internal.worker-failed', `worker thread failed: ${err.message}`, { cause: err })))
  thread.worker.on('exit', () => {
    const at = idle.indexOf(thread)
    if (at >= 0) idle.splice(at, 1)
    thread.owner?.onFailure(new PipeError('internal.worker-failed', 'worker thread stopped unexpectedly'))
  })
  return thread
}

export class OrderedJob<Open, Item, Result> {
  private inFlight = 0
  private waiters: (() => void)[] = []
  private failure: PipeError | null = null
  private finishing: { resolve: (value: Result) => void; reject: (err: PipeError) => void } | null = null
  private released = false

  private constructor(private readonly thread: Thread, private readonly maxInFlight: number, private readonly onReturned: ((buffer: ArrayBuffer) => void) | undefined) {
    thread.owner = this as OrderedJob<unknown, unknown, unknown>
  }

  /**
   * Starts a thread of `url`'s module (with the default young generation), idle, unless one is: the next job
   * of the module takes it. Starting a thread and loading its modules takes a few hundred milliseconds,
   * which the caller spends on its own start rather than waiting for them at its first job.
   */
  static prewarm(url: URL): void {
    if (idle.some((t) => t.url === url.href)) return
    const thread = startThread(url, DEFAULT_YOUNG_GENERATION_MB)
    thread.worker.unref()
    idle.push(thread)
  }

  /** Starts a job on an idle thread of `url`'s module, or a new one. */
  static open<Open, Item, Result>(url: URL, open: Open, opts: OrderedJobOptions = {}): OrderedJob<Open, Item, Result> {
    const at = idle.findIndex((t) => t.url === url.href)
    const thread = at >= 0 ? idle.splice(at, 1)[0]! : startThread(url, opts.youngGenerationMb ?? DEFAULT_YOUNG_GENERATION_MB)
    thread.worker.ref()
    const job = new OrderedJob<Open, Item, Result>(thread, opts.maxInFlight ?? 8, opts.onReturned)
    job.send({ type: 'open', value: open })
    return job
  }

  /** Sends an item (the buffers in `transfer` move to the thread); a promise only when the caller must wait. */
  post(item: Item, transfer: ArrayBuffer[] = []): Promise<void> | undefined {
    if (this.failure) return Promise.reject(this.failure)
    this.inFlight++
    this.send({ type: 'item', value: item }, transfer)
    return this.inFlight > this.maxInFlight ? this.drained() : undefined
  }

  /** Items sent that the thread has not finished. */
  get pending(): number {
    return this.inFlight
  }

  /** Ends the job and gives its result; the thread goes back to the idle ones. */
  async finish(value: unknown): Promise<Result> {
    try {
      if (this.failure) throw this.failure
      const result = new Promise<Result>((resolve, reject) => { this.finishing = { resolve, reject } })
      this.send({ type: 'finish', value })
      const r = await result
      this.released = true
      this.thread.owner = null
      this.thread.worker.unref()
      idle.push(this.thread)
      return r
    } finally {
      if (!this.released) await this.abort()
    }
  }

  /** Stops the thread, whatever it was doing. */
  async abort(): Promise<void> {
    this.thread.owner = null
    await this.thread.worker.terminate()
  }

  /** @internal Called by the thread's listeners. */
  onMessage(msg: FromWorker): void {
    if (msg.type === 'ack') {
      this.inFlight--
      if (msg.returned && this.onReturned) for (const b of msg.returned) this.onReturned(b)
    }
    else if (msg.type === 'finished') this.finishing?.resolve(msg.value as Result)
    else this.onFailure(new PipeError(msg.code, msg.message, msg.location ? { location: msg.location } : {}))
    this.wake()
  }

  /** @internal */
  onFailure(err: PipeError): void {
    this.failure ??= err
    this.finishing?.reject(this.failure)
    this.wake()
  }

  private async drained(): Promise<void> {
    while (this.inFlight > this.maxInFlight / 2) {
      if (this.failure) throw this.failure
      await new Promise<void>((r) => { this.waiters.push(r) })
    }
    if (this.failure) throw this.failure
  }

  private send(msg: ToWorker, transfer: ArrayBuffer[] = []): void {
    this.thread.worker.postMessage(msg, transfer)
  }

  private wake(): void {
    const waiting = this.waiters
    this.waiters = []
    for (const w of waiting) w()
  }
}

export interface OrderedJobHandlers<Open, Item, Finish, Result> {
  open(value: Open): void | Promise<void>
  /** Handles an item; may give back buffers of it the thread no longer uses (see OrderedJobOptions.onReturned). */
  item(value: Item): void | ArrayBuffer[] | Promise<void | ArrayBuffer[]>
  /** The result and the buffers in it to move rather than copy. */
  finish(value: Finish): Promise<{ result: Result; transfer?: ArrayBuffer[] }>
}

/**
 * The worker side: handles messages strictly in order, one job after another. After a failure the
 * thread only reports it; the caller terminates it.
 */
export function serveOrderedJobs<Open, Item, Finish, Result>(handlers: OrderedJobHandlers<Open, Item, Finish, Result>): void {
  const port = parentPort
  if (!port) throw new Error('serveOrderedJobs runs on a worker thread')
  let queue: Promise<void> = Promise.resolve()
  let failed = false
  const handle = async (msg: ToWorker): Promise<void> => {
    if (msg.type === 'open') await handlers.open(msg.value as Open)
    else if (msg.type === 'item') {
      const returned = await handlers.item(msg.value as Item)
      if (returned) port.postMessage({ type: 'ack', returned } satisfies FromWorker, returned)
      else port.postMessage({ type: 'ack' } satisfies FromWorker)
    } else {
      const { result, transfer } = await handlers.finish(msg.value as Finish)
      port.postMessage({ type: 'finished', value: result } satisfies FromWorker, transfer ?? [])
    }
  }
  port.on('message', (msg: ToWorker) => {
    queue = queue.then(() => (failed ? undefined : handle(msg))).catch((err: unknown) => {
      failed = true
      const code = err instanceof PipeError ? err.code : 'internal.worker-failed'
      const location = err instanceof PipeError ? err.location : undefined
      port.postMessage({ type: 'error', code, message: err instanceof Error ? err.message : String(err), ...(location ? { location } : {}) } satisfies FromWorker)
    })
  })
}

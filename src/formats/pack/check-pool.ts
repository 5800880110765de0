/**
 * Parts checked on worker threads (check-tables.ts). A part's object check and its rows (check-part.ts) run
 * on one of up to `threads` threads while the calling thread walks the indexes, and the calling thread takes
 * the issues back in the order it gave the parts, so a check reports exactly what it reports on one thread.
 * A thread sends issues in chunks and runs at most a few chunks ahead of the caller, so a part with an issue
 * on every row waits for its turn rather than filling memory. Threads start with the first part given to
 * them, and are kept, unref'd, for the next check in the process: starting one and loading the reader costs
 * a few hundred milliseconds.
 *
 * Only parts whose checks need nothing but the part and a snapshot of the tilings go to a thread: those of
 * tables with a row hook (tilings, media, and at level 3 rules, verifications and patterns) are checked
 * where the hook's state is.
 */
import { Worker } from 'node:worker_threads'
import { PipeError } from '../../core/errors.js'
import { siblingWorkerUrl } from '../../core/ordered-worker.js'
import { SCHEMAS_BY_ID } from './table-schemas.js'
import { checkPart, type PartOutcome, type RecordTiling } from './check-part.js'
import { failure, objectProblem, type CheckIssue, type CheckLevel } from './check-run.js'

/** A part as a thread is given it. */
export interface PartJob {
  rel: string
  file: string
  hash: string
  bytes?: number
  schemaId: string
  partition?: Record<string, string>
  listing?: { rows: number; first: string; last: string }
  level: CheckLevel
  /** Whether its object is still to be checked (no earlier read of the same path did). */
  verify: boolean
  /** The tilings a record's pin_key must name. */
  tilings: [string, RecordTiling][]
}

export interface PartJobResult {
  /** Whether the object was checked here, and passed. */
  objectChecked: boolean
  objectOk: boolean
  outcome: PartOutcome
}

/** Issues a thread sends at once, and how many such chunks it may send before the caller has taken them. */
const CHUNK_ISSUES = 256
const CHUNKS_AHEAD = 4

/** A part's checks, as a thread runs them: its object (unless checked before), then its rows. */
export async function* runPartJob(job: PartJob): AsyncGenerator<CheckIssue, PartJobResult> {
  if (job.verify) {
    const problem = await objectProblem(job.file, job.rel, job.hash, job.level, job.bytes)
    if (problem) {
      yield failure(problem.code, job.rel, problem.detail)
      return { objectChecked: true, objectOk: false, outcome: { opened: false, rows: 0, complete: false } }
    }
  }
  const schema = SCHEMAS_BY_ID.get(job.schemaId)
  if (!schema) throw new PipeError('internal.schema-unknown', `no schema ${job.schemaId}`)
  const spec = { rel: job.rel, file: job.file, schema, ...(job.partition ? { partition: job.partition } : {}), ...(job.listing ? { listing: job.listing } : {}) }
  const outcome = yield* checkPart(spec, { level: job.level, tilings: new Map(job.tilings) })
  return { objectChecked: job.verify, objectOk: true, outcome }
}

type ToThread = { type: 'part'; id: number; job: PartJob } | { type: 'more'; id: number }
type FromThread =
  | { type: 'issues'; id: number; issues: CheckIssue[] }
  | { type: 'done'; id: number; result: PartJobResult }
  | { type: 'failed'; id: number; code: string; message: string }

/** A part given to the pool: its issues and result, as they come back. */
export class PendingPart {
  thread: Thread | undefined
  private readonly chunks: CheckIssue[][] = []
  private result: PartJobResult | undefined
  private failure: PipeError | undefined
  private wake: (() => void) | undefined

  constructor(
    readonly id: number,
    readonly job: PartJob,
    /** Issues that go out before the part's own (its partition's, found by the caller). */
    private readonly before: readonly CheckIssue[],
  ) {}

  /** Its issues, in order; then its result. Throws if its thread fails. */
  async *issues(): AsyncGenerator<CheckIssue, PartJobResult> {
    yield* this.before
    for (;;) {
      const chunk = this.chunks.shift()
      if (chunk) {
        if (!this.result) this.thread?.send({ type: 'more', id: this.id })
        yield* chunk
        continue
      }
      if (this.failure) throw this.failure
      if (this.result) return this.result
      await new Promise<void>((resolve) => { this.wake = resolve })
    }
  }

  /** @internal The thread's messages. */
  receive(msg: FromThread): void {
    if (msg.type === 'issues') this.chunks.push(msg.issues)
    else if (msg.type === 'done') this.result = msg.result
    else this.fail(new PipeError(msg.code, msg.message))
    this.notify()
  }

  /** @internal */
  fail(err: PipeError): void {
    this.failure ??= err
    this.notify()
  }

  private notify(): void {
    const wake = this.wake
    this.wake = undefined
    wake?.()
  }
}

const WORKER_URL = siblingWorkerUrl(import.meta.url, 'check-pool-worker')
/**
 * A thread's heap. A row group's vectors and the rows built from them take a few tens of MB; the old
 * generation is kept near that, as ordered-worker.ts explains, with room for a part with large row groups.
 */
const RESOURCE_LIMITS = { maxOldGenerationSizeMb: 512, maxYoungGenerationSizeMb: 32 }

class Thread {
  job: PendingPart | undefined
  /** The pool it works for (none while it waits, idle, for the next check). */
  pool: CheckPool | undefined
  dead = false
  readonly worker = new Worker(WORKER_URL, { resourceLimits: RESOURCE_LIMITS })

  constructor() {
    this.worker.on('message', (msg: FromThread) => {
      const job = this.job
      if (!job || msg.id !== job.id) return
      job.receive(msg)
      if (msg.type === 'issues') return
      this.job = undefined
      this.pool?.dispatch()
    })
    this.worker.on('error', (err) => this.job?.fail(new PipeError('internal.worker-failed', `check thread failed: ${err.message}`, { cause: err })))
    this.worker.on('exit', () => {
      this.dead = true
      const at = idle.indexOf(this)
      if (at >= 0) idle.splice(at, 1)
      this.job?.fail(new PipeError('internal.worker-failed', 'check thread stopped unexpectedly'))
    })
  }

  send(msg: ToThread): void {
    this.worker.postMessage(msg)
  }
}

/** Threads that finished their check, for the next one in this process. */
const idle: Thread[] = []

/** Parts' ids, unique in the process: a thread kept for the next check must not take an old credit for a new part. */
let nextId = 0

export class CheckPool {
  private readonly threads: Thread[] = []
  private readonly queue: PendingPart[] = []

  constructor(private readonly size: number) {}

  /** Gives a part to the next free thread; take its issues with `issues()`, in the order parts were given. */
  submit(job: PartJob, before: readonly CheckIssue[] = []): PendingPart {
    const part = new PendingPart(nextId++, job, before)
    this.queue.push(part)
    this.dispatch()
    return part
  }

  /** Stops threads that are still working (a check that ended early) and keeps the others for the next check. */
  async close(): Promise<void> {
    this.queue.length = 0
    const threads = this.threads.splice(0)
    await Promise.all(threads.map(async (t) => {
      t.pool = undefined
      if (t.job || t.dead) {
        t.job = undefined
        await t.worker.terminate()
        return
      }
      t.worker.unref()
      idle.push(t)
    }))
  }

  /** @internal Starts queued parts on free threads. */
  dispatch(): void {
    while (this.queue.length > 0) {
      let thread = this.threads.find((t) => !t.job && !t.dead)
      if (!thread && this.threads.filter((t) => !t.dead).length < this.size) {
        thread = idle.pop() ?? new Thread()
        thread.worker.ref()
        thread.pool = this
        this.threads.push(thread)
      }
      if (!thread) return
      const part = this.queue.shift()!
      thread.job = part
      part.thread = thread
      thread.send({ type: 'part', id: part.id, job: part.job })
    }
  }
}

/** The thread's side: one part at a time, its issues in chunks, never more than CHUNKS_AHEAD untaken. */
export function servePartJobs(port: { on(event: 'message', f: (msg: ToThread) => void): void; postMessage(msg: FromThread): void }): void {
  let current: { id: number; ahead: number; wake: (() => void) | undefined } | undefined
  const send = async (id: number, issues: CheckIssue[]): Promise<void> => {
    port.postMessage({ type: 'issues', id, issues })
    current!.ahead++
    while (current!.ahead >= CHUNKS_AHEAD) await new Promise<void>((resolve) => { current!.wake = resolve })
  }
  const run = async (id: number, job: PartJob): Promise<void> => {
    current = { id, ahead: 0, wake: undefined }
    try {
      const issues = runPartJob(job)
      let chunk: CheckIssue[] = []
      for (let next = await issues.next(); ; next = await issues.next()) {
        if (next.done) {
          if (chunk.length > 0) port.postMessage({ type: 'issues', id, issues: chunk })
          port.postMessage({ type: 'done', id, result: next.value })
          return
        }
        chunk.push(next.value)
        if (chunk.length >= CHUNK_ISSUES) {
          await send(id, chunk)
          chunk = []
        }
      }
    } catch (err) {
      port.postMessage({ type: 'failed', id, code: err instanceof PipeError ? err.code : 'internal.worker-failed', message: err instanceof Error ? err.message : String(err) })
    }
  }
  port.on('message', (msg) => {
    if (msg.type === 'part') void run(msg.id, msg.job)
    else if (current?.id === msg.id) {
      current.ahead--
      const wake = current.wake
      current.wake = undefined
      wake?.()
    }
  })
}

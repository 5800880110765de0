/**
 * Parts checked in lanes (check-tables.ts): the calling thread's own and up to `threads - 1` worker threads.
 * A part's object check and its rows (check-part.ts) run in one lane while the calling thread walks the
 * indexes, and the calling thread takes the issues back in the order it gave the parts, so a check reports
 * exactly what it reports on one thread. A lane sends issues in chunks and runs at most a few chunks ahead of
 * the caller, so a part with an issue on every row waits for its turn rather than filling memory. Threads
 * start with the first part given to them, and are kept, unref'd, for the next check in the process:
 * starting one and loading the reader costs a few hundred milliseconds.
 *
 * Only parts whose checks need nothing but the part and a snapshot of the tilings, the rules' families and
 * the mover patterns (shared, not copied) go to the pool: those of tables with a row hook (tilings, rules,
 * media, ratings, raters, and at level 3 verifications and patterns) are checked where the hook's state is.
 *
 * A lane's side is check-part-jobs.ts. This module loads none of the checks, so that a caller can start
 * threads (startThreads) first and have them load the checker while it loads its own copy.
 */
import { Worker } from 'node:worker_threads'
import { PipeError } from '../../../core/errors.js'
import { siblingWorkerUrl } from '../../../core/ordered-worker.js'
import type { PartOutcome, RecordTiling } from './check-part.js'
import type { CheckIssue, CheckLevel } from './check-run.js'

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
  /** Not every tilings row was kept (PartContext.tilingsPartial). */
  tilingsPartial?: true
  /** Each rule notation's family, as a verification's rule sees it. */
  ruleFamilies: [string, string][]
  /** A patterns part's: the words of the MoverPatterns read before, shared (not copied) with the threads. */
  moverPatterns?: Uint32Array
}

export interface PartJobResult {
  /** Whether the object was checked here, and passed. */
  objectChecked: boolean
  objectOk: boolean
  outcome: PartOutcome
}

export type ToThread = { type: 'part'; id: number; job: PartJob } | { type: 'more'; id: number }
export type FromThread =
  | { type: 'issues'; id: number; issues: CheckIssue[] }
  | { type: 'done'; id: number; result: PartJobResult }
  | { type: 'failed'; id: number; code: string; message: string }

/** A part given to the pool: its issues and result, as they come back. */
export class PendingPart {
  lane: Lane | undefined
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

  /** Its issues, in order; then its result. Throws if its lane fails. */
  async *issues(): AsyncGenerator<CheckIssue, PartJobResult> {
    yield* this.before
    for (;;) {
      const chunk = this.chunks.shift()
      if (chunk) {
        if (!this.result) this.lane?.send({ type: 'more', id: this.id })
        yield* chunk
        continue
      }
      if (this.failure) throw this.failure
      if (this.result) return this.result
      await new Promise<void>((resolve) => { this.wake = resolve })
    }
  }

  /** @internal Its lane's messages. */
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

/**
 * Parts a lane is given at once: while it checks one, the next one's file is read and hashed (the reads
 * run on libuv's threads), rather than the lane waiting for it after each part.
 */
const PARTS_PER_LANE = 2

/** Where parts are checked: a worker thread, or the calling thread's own lane. */
abstract class Lane {
  readonly jobs = new Map<number, PendingPart>()
  /** The pool it works for (none while it waits, idle, for the next check). */
  pool: CheckPool | undefined
  dead = false

  abstract send(msg: ToThread): void
  /** Taken by a pool: kept from ending the process while it works. */
  abstract enlist(pool: CheckPool): void
  /**
   * Let go by its pool (a thread is kept for the next check); its parts stopped, when it still has some (a
   * check that ended early), and ended (files closed) by the time it resolves.
   */
  abstract release(): Promise<void>

  protected receive(msg: FromThread): void {
    const job = this.jobs.get(msg.id)
    if (!job) return
    job.receive(msg)
    if (msg.type === 'issues') return
    this.jobs.delete(msg.id)
    this.pool?.dispatch()
  }

  protected failAll(err: PipeError): void {
    for (const job of this.jobs.values()) job.fail(err)
  }
}

class Thread extends Lane {
  readonly worker = new Worker(WORKER_URL, { resourceLimits: RESOURCE_LIMITS })

  constructor() {
    super()
    this.worker.on('message', (msg: FromThread) => this.receive(msg))
    this.worker.on('error', (err) => this.failAll(new PipeError('internal.worker-failed', `check thread failed: ${err.message}`, { cause: err })))
    this.worker.on('exit', () => {
      this.dead = true
      const at = idle.indexOf(this)
      if (at >= 0) idle.splice(at, 1)
      this.failAll(new PipeError('internal.worker-failed', 'check thread stopped unexpectedly'))
    })
  }

  send(msg: ToThread): void {
    this.worker.postMessage(msg)
  }

  enlist(pool: CheckPool): void {
    this.worker.ref()
    this.pool = pool
  }

  async release(): Promise<void> {
    this.pool = undefined
    if (this.jobs.size > 0 || this.dead) {
      this.jobs.clear()
      await this.worker.terminate()
      return
    }
    this.worker.unref()
    idle.push(this)
  }
}

/**
 * The calling thread as one more lane: between walking indexes and passing issues on it mostly waits for
 * the threads, and checking parts itself saves a thread's start and the warming of its own copy of the
 * checks (a second thread cost 0.46 s of CPU on a pack of a million patterns). Messages go both ways as
 * microtasks, in order, with no copy; the part's checks run between the caller's own steps. Its parts are
 * held to the reader's limits (a row group decodes to at most 128 MiB) but not to a thread's heap limit.
 */
class CallerLane extends Lane {
  private deliver: ((msg: ToThread) => void) | undefined
  private readonly serving = import('./check-part-jobs.js').then(({ servePartJobs }) => servePartJobs({
    on: (_event, f) => { this.deliver = f },
    postMessage: (msg) => queueMicrotask(() => this.receive(msg)),
  }))

  send(msg: ToThread): void {
    this.serving.then(() => this.deliver!(msg), (err: unknown) => {
      this.dead = true
      this.failAll(new PipeError('internal.part-check-failed', `the checks did not load: ${err instanceof Error ? err.message : String(err)}`, { cause: err }))
    })
  }

  enlist(pool: CheckPool): void {
    this.pool = pool
  }

  async release(): Promise<void> {
    this.pool = undefined
    if (this.jobs.size === 0 || this.dead) return
    this.jobs.clear()
    const stop = await this.serving
    await stop()
  }
}

/** Threads that finished their check, or were started ahead of one, for the next check in this process. */
const idle: Thread[] = []

/**
 * Starts `n` threads for a check about to begin, unref'd (unused, they do not keep the process): they load
 * the checker while the caller starts the check, instead of after it has found its first part.
 */
export function startThreads(n: number): void {
  while (idle.length < n) {
    const thread = new Thread()
    thread.worker.unref()
    idle.push(thread)
  }
}

/** Parts' ids, unique in the process: a thread kept for the next check must not take an old credit for a new part. */
let nextId = 0

/**
 * Parts checked in `size` lanes: `size - 1` worker threads and the calling thread. Each part goes to the
 * least busy lane; issues come back in the order parts were given.
 */
export class CheckPool {
  private readonly lanes: Lane[] = []
  private readonly queue: PendingPart[] = []

  constructor(private readonly size: number) {}

  /** Gives a part to the next free lane; take its issues with `issues()`, in the order parts were given. */
  submit(job: PartJob, before: readonly CheckIssue[] = []): PendingPart {
    const part = new PendingPart(nextId++, job, before)
    this.queue.push(part)
    this.dispatch()
    return part
  }

  /** Stops lanes that are still working (a check that ended early) and keeps the others for the next check. */
  async close(): Promise<void> {
    this.queue.length = 0
    await Promise.all(this.lanes.splice(0).map((lane) => lane.release()))
  }

  /** @internal Starts queued parts on free lanes. */
  dispatch(): void {
    while (this.queue.length > 0) {
      // The least busy lane; a new one while every lane has a part and there may be more.
      const alive = this.lanes.filter((t) => !t.dead)
      let lane = alive.reduce<Lane | undefined>((best, t) => (!best || t.jobs.size < best.jobs.size ? t : best), undefined)
      if ((!lane || lane.jobs.size > 0) && alive.length < this.size) {
        // The caller's lane first, since it starts at once; then threads.
        lane = this.lanes.some((l) => l instanceof CallerLane) ? idle.pop() ?? new Thread() : new CallerLane()
        lane.enlist(this)
        this.lanes.push(lane)
      }
      if (!lane || lane.jobs.size >= PARTS_PER_LANE) return
      const part = this.queue.shift()!
      lane.jobs.set(part.id, part)
      part.lane = lane
      lane.send({ type: 'part', id: part.id, job: part.job })
    }
  }
}

/**
 * The side of a CheckPool (check-pool.ts) that checks parts: on a worker thread (check-pool-worker.ts) and
 * in the calling thread's own lane, the same code. It loads the checks; check-pool.ts, which the calling
 * thread loads to start threads, does not, so threads start before the checker has loaded.
 */
import { PipeError } from '../../../core/errors.js'
import { SCHEMAS_BY_ID } from '../tables/table-schemas.js'
import { checkPart } from './check-part.js'
import { MoverPatterns } from '../records/mover-patterns.js'
import { failure, objectProblem, type CheckIssue } from './check-run.js'
import type { FromThread, PartJob, PartJobResult, ToThread } from './check-pool.js'

/** Issues a lane sends at once, and how many such chunks it may send before the caller has taken them. */
const CHUNK_ISSUES = 256
const CHUNKS_AHEAD = 4

/**
 * A lane's parts take turns at their rows: while one is decoded and checked, the next one's object is read
 * and hashed, but it is opened only when the one before has ended. A part's rows are checked in stretches
 * that let the thread's other tasks run (check-part.ts); the lane's next part is not one of them, so a lane
 * holds one part's decoded row group (and one arena), not two.
 */
class Turns {
  private last: Promise<void> = Promise.resolve()

  /** Waits for the turns taken before this one; the function it gives ends this one. */
  async take(): Promise<() => void> {
    let end!: () => void
    const mine = new Promise<void>((resolve) => { end = resolve })
    const before = this.last
    this.last = before.then(() => mine)
    await before
    return end
  }
}

/**
 * A part's checks, as a lane runs them: its object (unless checked before), then its rows in its turn. The
 * turn is taken when the part comes, for the caller takes the parts' issues in that order: a part that took
 * it first would wait, its issues untaken, for the caller, who would wait for the part before it.
 */
async function* runPartJob(job: PartJob, turn: Promise<() => void>): AsyncGenerator<CheckIssue, PartJobResult> {
  let endTurn: (() => void) | undefined
  try {
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
    endTurn = await turn
    const outcome = yield* checkPart(spec, {
      level: job.level, tilings: new Map(job.tilings), ...(job.tilingsPartial ? { tilingsPartial: true } : {}), ruleFamilies: new Map(job.ruleFamilies), ...(job.moverPatterns ? { moverPatterns: new MoverPatterns(undefined, job.moverPatterns) } : {}),
    })
    return { objectChecked: job.verify, objectOk: true, outcome }
  } finally {
    // A part that ended before its turn came (its object refused, or it failed) gives the turn up when it comes.
    if (endTurn) endTurn()
    else void turn.then((end) => end())
  }
}

/** Where a lane's messages come from and go: a worker's parentPort, or the calling thread's lane. */
export interface JobPort {
  on(event: 'message', f: (msg: ToThread) => void): void
  postMessage(msg: FromThread): void
}

interface Credit { ahead: number; wake: (() => void) | undefined; stopped: boolean; ended: Promise<void> }

/**
 * A lane's side: its parts' issues in chunks, never more than CHUNKS_AHEAD of a part's untaken. Returns what
 * stops the parts it is running (a worker thread is terminated instead): each ends at its next step, its
 * file closed, and the promise it returns settles when all have.
 */
export function servePartJobs(port: JobPort): () => Promise<void> {
  const jobs = new Map<number, Credit>()
  const turns = new Turns()
  const send = async (id: number, issues: CheckIssue[]): Promise<void> => {
    port.postMessage({ type: 'issues', id, issues })
    const credit = jobs.get(id)!
    credit.ahead++
    while (credit.ahead >= CHUNKS_AHEAD && !credit.stopped) await new Promise<void>((resolve) => { credit.wake = resolve })
  }
  const run = async (credit: Credit, id: number, job: PartJob, turn: Promise<() => void>): Promise<void> => {
    const issues = runPartJob(job, turn)
    try {
      let chunk: CheckIssue[] = []
      for (;;) {
        const next = await issues.next()
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
        // Stopped (while it read, or waited to send): no further row group is decoded.
        if (credit.stopped) {
          await issues.return(undefined as never)
          return
        }
      }
    } catch (err) {
      port.postMessage({ type: 'failed', id, code: err instanceof PipeError ? err.code : 'internal.part-check-failed', message: err instanceof Error ? err.message : String(err) })
    } finally {
      jobs.delete(id)
    }
  }
  port.on('message', (msg) => {
    if (msg.type === 'part') {
      const credit: Credit = { ahead: 0, wake: undefined, stopped: false, ended: Promise.resolve() }
      jobs.set(msg.id, credit)
      credit.ended = run(credit, msg.id, msg.job, turns.take())
      return
    }
    const credit = jobs.get(msg.id)
    if (!credit) return
    credit.ahead--
    wake(credit)
  })
  return async () => {
    const stopped = [...jobs.values()]
    for (const credit of stopped) {
      credit.stopped = true
      wake(credit)
    }
    await Promise.all(stopped.map((c) => c.ended))
  }
}

function wake(credit: { wake: (() => void) | undefined }): void {
  const f = credit.wake
  credit.wake = undefined
  f?.()
}

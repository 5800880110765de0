/**
 * The thread a CheckPool checks parts on (check-pool.ts). It loads the checks; check-pool.ts, which the
 * calling thread loads to start threads, does not, so threads start before the checker has loaded.
 */
import { parentPort } from 'node:worker_threads'
import { PipeError } from '../../core/errors.js'
import { SCHEMAS_BY_ID } from './table-schemas.js'
import { checkPart } from './check-part.js'
import { MoverPatterns } from './mover-patterns.js'
import { failure, objectProblem, type CheckIssue } from './check-run.js'
import type { FromThread, PartJob, PartJobResult, ToThread } from './check-pool.js'

/** Issues a thread sends at once, and how many such chunks it may send before the caller has taken them. */
const CHUNK_ISSUES = 256
const CHUNKS_AHEAD = 4

/** A part's checks, as a thread runs them: its object (unless checked before), then its rows. */
async function* runPartJob(job: PartJob): AsyncGenerator<CheckIssue, PartJobResult> {
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
  const outcome = yield* checkPart(spec, {
    level: job.level, tilings: new Map(job.tilings), ruleFamilies: new Map(job.ruleFamilies), ...(job.moverPatterns ? { moverPatterns: new MoverPatterns(undefined, job.moverPatterns) } : {}),
  })
  return { objectChecked: job.verify, objectOk: true, outcome }
}

/** The thread's side: its parts' issues in chunks, never more than CHUNKS_AHEAD of a part's untaken. */
function servePartJobs(port: { on(event: 'message', f: (msg: ToThread) => void): void; postMessage(msg: FromThread): void }): void {
  const jobs = new Map<number, { ahead: number; wake: (() => void) | undefined }>()
  const send = async (id: number, issues: CheckIssue[]): Promise<void> => {
    port.postMessage({ type: 'issues', id, issues })
    const credit = jobs.get(id)!
    credit.ahead++
    while (credit.ahead >= CHUNKS_AHEAD) await new Promise<void>((resolve) => { credit.wake = resolve })
  }
  const run = async (id: number, job: PartJob): Promise<void> => {
    jobs.set(id, { ahead: 0, wake: undefined })
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
    } finally {
      jobs.delete(id)
    }
  }
  port.on('message', (msg) => {
    if (msg.type === 'part') {
      void run(msg.id, msg.job)
      return
    }
    const credit = jobs.get(msg.id)
    if (!credit) return
    credit.ahead--
    const wake = credit.wake
    credit.wake = undefined
    wake?.()
  })
}

if (!parentPort) throw new Error('check-pool-worker runs on a worker thread')
servePartJobs(parentPort)

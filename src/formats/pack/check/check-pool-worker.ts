/** The worker thread a CheckPool checks parts on (check-pool.ts); what it runs is check-part-jobs.ts. */
import { parentPort } from 'node:worker_threads'
import { servePartJobs } from './check-part-jobs.js'

if (!parentPort) throw new Error('check-pool-worker runs on a worker thread')
servePartJobs(parentPort)

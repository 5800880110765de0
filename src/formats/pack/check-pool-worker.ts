/** The thread a CheckPool checks parts on (check-pool.ts). */
import { parentPort } from 'node:worker_threads'
import { servePartJobs } from './check-pool.js'

if (!parentPort) throw new Error('check-pool-worker runs on a worker thread')
servePartJobs(parentPort)

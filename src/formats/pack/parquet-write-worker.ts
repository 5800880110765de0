/**
 * The pack part writer's encoding thread (parquet-write.ts `PartsJob`): items of encoded rows arrive, their
 * buffers moved rather than copied (core/ordered-worker.ts carries them in order, with flow control), and
 * leave as row groups in part files. A `runs` job writes rows as they come (PackPartWriter); a `new-rows`
 * job first leaves out what a table's parents have and sorts its chunks (new-rows.ts).
 */
import { serveOrderedJobs } from '../../core/ordered-worker.js'
import { newRowsWork } from './new-rows.js'
import { partFileWork, partRuns, type PartsJobOpen, type PartsWork, type WrittenPart } from './parquet-write.js'

let work: PartsWork<unknown> | null = null

function current(): PartsWork<unknown> {
  if (!work) throw new Error('pack part files: no open job')
  return work
}

serveOrderedJobs<PartsJobOpen, unknown, null, WrittenPart[]>({
  async open(open) {
    work = (open.work.kind === 'runs' ? partRuns(open) : await newRowsWork(open)) as PartsWork<unknown>
  },
  item(rows) {
    return partFileWork('writing a row group', () => current().add(rows))
  },
  async finish() {
    const parts = await partFileWork('closing a part', () => current().finish())
    work = null
    return { result: parts }
  },
})

/**
 * The pack part writer's encoding thread (parquet-write.ts `PartsJob`): items of encoded rows arrive, their
 * buffers moved rather than copied (core/ordered-worker.ts carries them in order, with flow control), and
 * leave as row groups in part files. What a job does with them is made by the module its open message
 * names (PartsWorkMaker): PackPartWriter's jobs write rows as they come; a publish's new rows first leave
 * out what a table's parents have and sort their chunks (publish/new-rows.ts).
 */
import { serveOrderedJobs } from '../../../core/ordered-worker.js'
import { makePartsWork, partFileWork, type PartsJobOpen, type PartsWork, type WrittenPart } from './parquet-write.js'

let work: PartsWork<unknown> | null = null

function current(): PartsWork<unknown> {
  if (!work) throw new Error('pack part files: no open job')
  return work
}

serveOrderedJobs<PartsJobOpen, unknown, null, WrittenPart[]>({
  async open(open) {
    work = await makePartsWork(open)
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

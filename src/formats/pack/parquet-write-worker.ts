/**
 * The pack part writer's encoding thread (parquet-write.ts `PartsJob`): batches of encoded rows arrive,
 * their buffers moved rather than copied (core/ordered-worker.ts carries them in order, with flow
 * control), and leave as row groups in part files.
 */
import { serveOrderedJobs } from '../../core/ordered-worker.js'
import { PartFiles, partFileWork, type PartFilesOptions, type PartRowsItem, type WrittenPart } from './parquet-write.js'

let files: PartFiles | null = null

function current(): PartFiles {
  if (!files) throw new Error('pack part files: no open job')
  return files
}

serveOrderedJobs<PartFilesOptions, PartRowsItem, null, WrittenPart[]>({
  open(opts) {
    files = new PartFiles(opts)
  },
  item(rows) {
    return partFileWork('writing a row group', () => current().add(rows))
  },
  async finish() {
    const parts = await partFileWork('closing a part', () => current().finish())
    files = null
    return { result: parts }
  },
})

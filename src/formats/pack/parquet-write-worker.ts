/**
 * The pack part writer's encoding thread (parquet-write.ts `PackPartWriter`): row groups arrive shredded,
 * their buffers moved rather than copied (core/ordered-worker.ts carries them in order, with flow
 * control), and leave as pages in part files.
 */
import { serveOrderedJobs } from '../../core/ordered-worker.js'
import { PartFiles, partFileWork, type PartFilesOptions, type RowGroupItem, type WrittenPart } from './parquet-write.js'

let files: PartFiles | null = null

function current(): PartFiles {
  if (!files) throw new Error('pack part files: no open job')
  return files
}

serveOrderedJobs<PartFilesOptions, RowGroupItem, null, WrittenPart[]>({
  open(opts) {
    files = new PartFiles(opts)
  },
  item(group) {
    return partFileWork('writing a row group', () => current().add(group))
  },
  async finish() {
    const parts = await partFileWork('closing a part', () => current().finish())
    files = null
    return { result: parts }
  },
})

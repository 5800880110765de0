import { OrderedJob, siblingWorkerUrl } from '../../../core/ordered-worker.js'
import type { FinishHourFiles, HourFilesItem, OpenHourFiles } from './hour-files-worker.js'
import type { FileEntry } from '../manifest.js'
import { rowGroupTransferList, type RowGroupColumns } from '../tables.js'
import type { TableName } from '../types.js'

/**
 * The files of one hour being sealed — raw.jsonl.zst and the channel's tables — written on a thread of
 * their own (hour-files-worker.ts), so that compression and Parquet encoding run beside the work that
 * makes the lines and rows. Calls return a promise only when the thread is behind and the caller must
 * wait; a failure on the thread rejects the next call. Files are written into `dir` (the hour's
 * temporary directory).
 */
export class HourFilesWriter {
  private constructor(private readonly job: OrderedJob<OpenHourFiles, HourFilesItem, FileEntry[]>) {}

  /** `onRawReturned` takes back the buffers of raw-file chunks once they are compressed, to fill again. */
  static open(dir: string, tables: readonly TableName[], createdBy: string, onRawReturned?: (buffer: ArrayBuffer) => void): HourFilesWriter {
    const open: OpenHourFiles = { dir, tables: [...tables], createdBy }
    return new HourFilesWriter(OrderedJob.open(siblingWorkerUrl(import.meta.url, 'hour-files-worker'), open, { youngGenerationMb: 64, ...(onRawReturned ? { onReturned: onRawReturned } : {}) }))
  }

  /** A chunk of raw-file lines; the writer takes it over (and gives its buffer back when it moved). */
  raw(chunk: Uint8Array): Promise<void> | undefined {
    // A chunk at the start of a buffer of its own moves with its buffer; anything else (a view into a
    // pooled or shared buffer) is copied, so the move never detaches memory someone else holds.
    const own = chunk.byteOffset === 0 && chunk.buffer.byteLength >= 4096 && !(chunk.buffer instanceof SharedArrayBuffer)
    const sent = own ? chunk : new Uint8Array(chunk)
    return this.job.post({ type: 'raw', chunk: sent }, [sent.buffer as ArrayBuffer])
  }

  /** A full row group of one of the hour's tables; the writer takes its buffers over. */
  group(group: RowGroupColumns): Promise<void> | undefined {
    return this.job.post({ type: 'group', group }, rowGroupTransferList(group))
  }

  /** Lands every file (raw first, then the tables in the order opened) and says what was written. */
  finish(rawRows: number): Promise<FileEntry[]> {
    return this.job.finish({ rawRows } satisfies FinishHourFiles)
  }

  /** Stops the thread; the files it left are in the hour's temporary directory, which the sealer removes. */
  abort(): Promise<void> {
    return this.job.abort()
  }
}

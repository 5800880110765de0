/**
 * The sealer's writer thread: it compresses, hashes and writes an hour's files while the main thread
 * pairs and classifies frames. Raw-file chunks arrive as finished bytes and row groups as flat column
 * buffers (tables.ts `RowGroupColumns`), both moved rather than copied (core/ordered-worker.ts carries
 * them in order, with flow control).
 */
import { createWriteStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { finished } from 'node:stream/promises'
import { CompressStream } from 'zstd-napi'
import { openRegularFile } from '../../../core/input-file.js'
import { serveOrderedJobs } from '../../../core/ordered-worker.js'
import { createIncrementalHash } from '../../../codec/hash.js'
import { RAW_FILE_NAME, type FileEntry } from '../manifest.js'
import { RowGroupEncoder, tableFileName, type RowGroupColumns } from '../tables.js'
import type { TableName } from '../types.js'

export interface OpenHourFiles { dir: string; tables: TableName[]; createdBy: string }
export type HourFilesItem = { type: 'raw'; chunk: Uint8Array } | { type: 'group'; group: RowGroupColumns }
export interface FinishHourFiles { rawRows: number }

async function blake3File(path: string): Promise<string> {
  const hash = await createIncrementalHash('blake3')
  const { fh } = await openRegularFile(path)
  for await (const chunk of fh.createReadStream({ highWaterMark: 1 << 20 })) hash.update(chunk as Buffer)
  return hash.digestHex()
}

/** raw.jsonl.zst: bytes in, zstd out, hashing and counting the stored bytes. */
class RawFile {
  private readonly compress = new CompressStream({ compressionLevel: 3 })
  private readonly file
  private size = 0

  private constructor(readonly path: string, private readonly hash: Awaited<ReturnType<typeof createIncrementalHash>>) {
    this.file = createWriteStream(path, { flags: 'wx' })
    this.compress.on('data', (chunk: Buffer) => { this.hash.update(chunk); this.size += chunk.byteLength })
    this.compress.pipe(this.file)
  }

  static async open(path: string): Promise<RawFile> {
    return new RawFile(path, await createIncrementalHash('blake3'))
  }

  /** Resolves once zstd has taken the chunk in (and so no longer reads it) and can take more. */
  write(chunk: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => this.compress.write(chunk, (err) => (err ? reject(err) : resolve())))
  }

  async finish(rows: number): Promise<FileEntry> {
    this.compress.end()
    await finished(this.file)
    const fh = await open(this.path, 'r+')
    await fh.sync().finally(() => fh.close())
    return { name: RAW_FILE_NAME, size: this.size, blake3: this.hash.digestHex(), rows }
  }
}

interface Hour {
  dir: string
  raw: RawFile
  tables: Map<TableName, { encoder: RowGroupEncoder; rows: number }>
}

let hour: Hour | null = null

function current(): Hour {
  if (!hour) throw new Error('hour files: no open hour')
  return hour
}

serveOrderedJobs<OpenHourFiles, HourFilesItem, FinishHourFiles, FileEntry[]>({
  async open(msg) {
    const tables = new Map<TableName, { encoder: RowGroupEncoder; rows: number }>()
    hour = { dir: msg.dir, raw: await RawFile.open(join(msg.dir, RAW_FILE_NAME)), tables }
    for (const t of msg.tables) tables.set(t, { encoder: await RowGroupEncoder.open(join(msg.dir, tableFileName(t)), t, { createdBy: msg.createdBy }), rows: 0 })
  },
  async item(msg) {
    if (msg.type === 'raw') {
      await current().raw.write(msg.chunk)
      return [msg.chunk.buffer as ArrayBuffer]
    }
    const table = current().tables.get(msg.group.table)
    if (!table) throw new Error(`hour files: no table ${msg.group.table} is open`)
    await table.encoder.encode(msg.group)
    table.rows += msg.group.rows
  },
  async finish(msg) {
    const h = current()
    const files: FileEntry[] = [await h.raw.finish(msg.rawRows)]
    for (const [name, t] of h.tables) {
      const { size } = await t.encoder.finish()
      files.push({ name: tableFileName(name), size, blake3: await blake3File(join(h.dir, tableFileName(name))), rows: t.rows })
    }
    hour = null
    return { result: files }
  },
})

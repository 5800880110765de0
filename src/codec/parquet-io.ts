/**
 * Parquet files on disk for hyparquet and hyparquet-writer: a writer sink that flushes each row group to the
 * file as it is encoded (so a table never sits in memory whole), an AsyncBuffer that reads exactly the
 * ranges the reader asks for, zstd page decompression checked against the page header, and timestamps kept
 * as their stored int64. Shared by the record format's tables and the parquet-read and parquet-write stages.
 */
import type { FileHandle } from 'node:fs/promises'
import type { AsyncBuffer, Compressors, SchemaElement } from 'hyparquet'
import { ByteWriter } from 'hyparquet-writer'
import { decompress } from 'zstd-napi'
import { openRegularFile } from '../core/input-file.js'

/** Writes to an open file in the order bytes are appended; one row group at a time stays in memory. */
export class ParquetFileSink extends ByteWriter {
  private written = 0
  private writing = false

  constructor(private readonly fh: FileHandle) {
    super(1 << 20)
  }

  override ensure(size: number): void {
    if (this.writing) throw new Error('table file sink: append while a flush is in progress')
    super.ensure(size)
  }

  flush(): Promise<void> {
    return this.drain()
  }

  override finish(): Promise<void> {
    return this.drain()
  }

  private async drain(): Promise<void> {
    const n = this.index
    this.writing = true
    try {
      let off = 0
      while (off < n) {
        const { bytesWritten } = await this.fh.write(new Uint8Array(this.buffer, off, n - off), 0, n - off, this.written)
        off += bytesWritten
        this.written += bytesWritten
      }
    } finally {
      this.writing = false
    }
    this.index = 0
  }
}

/** zstd pages, each checked to decompress to the size its header states. */
export const ZSTD_DECOMPRESSORS: Compressors = {
  ZSTD: (input: Uint8Array, outputLength: number) => {
    const out = decompress(input)
    if (out.length !== outputLength) throw new Error(`zstd page decompressed to ${out.length} bytes, header says ${outputLength}`)
    return out
  },
}

/** Keeps nanosecond (and any other unit's) timestamps as the stored int64, not as a Date. */
export const RAW_TIMESTAMPS = {
  timestampFromMilliseconds: (v: bigint) => v,
  timestampFromMicroseconds: (v: bigint) => v,
  timestampFromNanoseconds: (v: bigint) => v,
}

export interface OpenParquetFile {
  file: AsyncBuffer
  close(): Promise<void>
}

/** An AsyncBuffer over one open file handle: reads exactly the ranges hyparquet asks for. */
export async function openParquetFile(path: string): Promise<OpenParquetFile> {
  const { fh } = await openRegularFile(path)
  try {
    const { size } = await fh.stat()
    const file: AsyncBuffer = {
      byteLength: size,
      async slice(start: number, end: number = size): Promise<ArrayBuffer> {
        const length = Math.max(0, end - start)
        const buf = new Uint8Array(length)
        let off = 0
        while (off < length) {
          const { bytesRead } = await fh.read(buf, off, length - off, start + off)
          if (bytesRead === 0) throw new Error(`${path}: file ended at byte ${start + off}, expected ${size} bytes`)
          off += bytesRead
        }
        return buf.buffer
      },
    }
    return { file, close: () => fh.close() }
  } catch (err) {
    await fh.close().catch(() => undefined)
    throw err
  }
}

/** The root's children in a flat Parquet schema (depth-first), each group's subtree skipped. */
export function topLevelElements(schema: readonly SchemaElement[]): SchemaElement[] {
  const out: SchemaElement[] = []
  const skip = (i: number): number => {
    const n = schema[i]?.num_children ?? 0
    let j = i + 1
    for (let k = 0; k < n && j < schema.length; k++) j = skip(j)
    return j
  }
  const rootChildren = schema[0]?.num_children ?? 0
  let i = 1
  for (let c = 0; c < rootChildren && i < schema.length; c++) {
    out.push(schema[i]!)
    i = skip(i)
  }
  return out
}

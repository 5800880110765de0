import { randomBytes } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { copyFile, link, mkdir, open, readdir, rename, stat, unlink, type FileHandle } from 'node:fs/promises'
import { dirname, join, sep } from 'node:path'
import type { Readable } from 'node:stream'
import { fsyncDir, writeFully } from '../core/atomic-write.js'
import { objectChanged, objectDiffers, tooLarge, type ObjectHead, type PutBody, type Storage } from './storage.js'

/**
 * A folder as storage: each key a file below it. A create-only put writes a temporary file beside the
 * final one, fsyncs it and hard-links it to its final name, which fails when the name exists, as
 * `If-None-Match: *` does; the directory is fsynced after.
 */
export class LocalStorage implements Storage {
  readonly remote = false

  constructor(readonly location: string) {}

  where(key: string): string {
    return key === '' ? this.location : join(this.location, ...key.split('/'))
  }

  async putIfAbsent(key: string, body: PutBody): Promise<'created' | 'same'> {
    const path = this.where(key)
    const dir = dirname(path)
    await mkdir(dir, { recursive: true })
    const temp = await this.writeTemp(path, body)
    try {
      await link(temp, path)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      if (await sameFiles(temp, path)) return 'same'
      throw objectDiffers(path)
    } finally {
      await unlink(temp).catch(() => undefined)
    }
    await fsyncDir(dir)
    return 'created'
  }

  async get(key: string, maxBytes: number): Promise<Buffer | null> {
    const path = this.where(key)
    let fh: FileHandle
    try {
      fh = await open(path, 'r')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw err
    }
    try {
      const { size } = await fh.stat()
      if (size > maxBytes) throw tooLarge(path, size, maxBytes)
      return await fh.readFile()
    } finally {
      await fh.close()
    }
  }

  async read(key: string, range?: { start: number; end?: number }): Promise<Readable | null> {
    const path = this.where(key)
    if (!(await this.head(key))) return null
    return createReadStream(path, range ? { start: range.start, ...(range.end !== undefined ? { end: range.end - 1 } : {}) } : {})
  }

  async head(key: string): Promise<ObjectHead | null> {
    try {
      const s = await stat(this.where(key), { bigint: true })
      if (!s.isFile()) return null
      // Every replace renames a new file into place: a new inode, so a new version.
      return { size: Number(s.size), etag: `${s.ino}-${s.size}-${s.mtimeNs}` }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return null
      throw err
    }
  }

  async *list(prefix: string): AsyncIterable<{ key: string; size: number }> {
    // A prefix names a folder, or a folder and the start of a name in it.
    const cut = prefix.lastIndexOf('/')
    const folder = cut < 0 ? '' : prefix.slice(0, cut)
    const start = prefix.slice(cut + 1)
    yield* this.walk(folder, (name) => name.startsWith(start))
  }

  private async *walk(folder: string, take: (name: string) => boolean): AsyncIterable<{ key: string; size: number }> {
    const entries = await readdir(this.where(folder), { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return []
      throw err
    })
    // Key order: a folder's keys sort as `name/…`.
    const named = entries.filter((e) => take(e.name) && !isTemp(e.name)).map((e) => ({ e, sortKey: e.isDirectory() ? `${e.name}/` : e.name }))
    named.sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0))
    for (const { e } of named) {
      const key = folder === '' ? e.name : `${folder}/${e.name}`
      if (e.isDirectory()) yield* this.walk(key, () => true)
      else if (e.isFile()) yield { key, size: (await stat(this.where(key))).size }
    }
  }

  async folders(prefix: string): Promise<string[]> {
    const entries = await readdir(this.where(prefix.replace(/\/$/, '')), { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return []
      throw err
    })
    return entries.filter((e) => e.isDirectory() && !isTemp(e.name)).map((e) => e.name).sort()
  }

  async replace(key: string, body: Uint8Array, expected: string | null): Promise<string> {
    const path = this.where(key)
    await mkdir(dirname(path), { recursive: true })
    // One replacer at a time: the lock file is created exclusively, and removed after.
    const lock = `${path}.lock`
    let held: FileHandle
    try {
      held = await open(lock, 'wx')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw objectChanged(path)
      throw err
    }
    try {
      const current = await this.head(key)
      if ((current?.etag ?? null) !== expected) throw objectChanged(path)
      const temp = await this.writeTemp(path, body)
      try {
        await rename(temp, path)
      } catch (err) {
        await unlink(temp).catch(() => undefined)
        throw err
      }
      await fsyncDir(dirname(path))
      return (await this.head(key))!.etag
    } finally {
      await held.close()
      await unlink(lock).catch(() => undefined)
    }
  }

  private async writeTemp(path: string, body: PutBody): Promise<string> {
    const temp = join(dirname(path), `.${path.slice(path.lastIndexOf(sep) + 1)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`)
    try {
      if (body instanceof Uint8Array) {
        const fh = await open(temp, 'wx', 0o644)
        try {
          await writeFully(fh, body)
          await fh.sync()
        } finally {
          await fh.close()
        }
      } else {
        await copyFile(body.file, temp)
        const fh = await open(temp, 'r+')
        try {
          await fh.sync()
        } finally {
          await fh.close()
        }
      }
    } catch (err) {
      await unlink(temp).catch(() => undefined)
      throw err
    }
    return temp
  }
}

/** The names a writer gives its temporaries (dot-prefixed, ending .tmp), which no listing shows. */
const isTemp = (name: string) => name.startsWith('.') && name.endsWith('.tmp')

/** Whether two files hold the same bytes, compared a block at a time. */
async function sameFiles(a: string, b: string): Promise<boolean> {
  const [fa, fb] = await Promise.all([open(a, 'r'), open(b, 'r')])
  try {
    const [sa, sb] = await Promise.all([fa.stat(), fb.stat()])
    if (sa.size !== sb.size) return false
    const ba = Buffer.allocUnsafe(1 << 20)
    const bb = Buffer.allocUnsafe(1 << 20)
    for (let pos = 0; pos < sa.size; ) {
      const n = Math.min(ba.length, sa.size - pos)
      const [ra, rb] = await Promise.all([fa.read(ba, 0, n, pos), fb.read(bb, 0, n, pos)])
      if (ra.bytesRead !== n || rb.bytesRead !== n || !ba.subarray(0, n).equals(bb.subarray(0, n))) return false
      pos += n
    }
    return true
  } finally {
    await Promise.all([fa.close(), fb.close()])
  }
}

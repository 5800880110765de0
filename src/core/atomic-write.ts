import { randomBytes } from 'node:crypto'
import { open, rename, unlink, type FileHandle } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

export interface WriteFileAtomicOptions {
  /**
   * Permission bits of the final file, applied exactly (umask does not narrow them). The temporary
   * file is created with these bits, so a 0o600 file is never readable by others, not even briefly.
   * Without it the file is created as `writeFile` would (0o666 less the umask).
   */
  mode?: number
}

/**
 * Writes `data` to `path` so that `path` holds either its old content or all of `data`, never a part:
 * write under a temporary name in the same directory, fsync, rename over `path`, fsync the directory.
 * On failure the temporary file is removed and `path` is untouched.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, opts: WriteFileAtomicOptions = {}): Promise<void> {
  const dir = dirname(path)
  // Dot-prefixed and ending in .tmp: hidden from listings and ignored by .gitignore.
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`)
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
  let created = false
  try {
    const fh = await open(tmp, 'wx', opts.mode ?? 0o666)
    created = true
    try {
      if (opts.mode !== undefined) await fh.chmod(opts.mode)
      await writeFully(fh, bytes)
      await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(tmp, path)
    created = false
  } catch (err) {
    if (created) await unlink(tmp).catch(() => undefined)
    throw err
  }
  await fsyncDir(dir)
}

/**
 * Writes all of `bytes` (at `position`, or at the file's current offset): a write may take fewer bytes
 * than it is given (a disk that fills takes what fits, and the next write fails with ENOSPC), so one
 * `write` call is no proof that the bytes are in the file.
 */
export async function writeFully(fh: FileHandle, bytes: Uint8Array, position?: number): Promise<void> {
  for (let off = 0; off < bytes.length; ) {
    const { bytesWritten } = await fh.write(bytes, off, bytes.length - off, position === undefined ? null : position + off)
    // A file system that takes nothing and reports no error would be asked forever.
    if (bytesWritten === 0) throw Object.assign(new Error(`a write took none of ${bytes.length - off} bytes`), { code: 'ENOSPC' })
    off += bytesWritten
  }
}

/** Makes a rename or create in `dir` durable. Platforms that cannot fsync a directory are tolerated. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r')
  try {
    await fh.sync()
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'EINVAL' && code !== 'EISDIR' && code !== 'EPERM' && code !== 'ENOTSUP') throw err
  } finally {
    await fh.close()
  }
}

/**
 * The one way pipe opens a file it reads. A name says nothing about what is behind it: a manifest may be a
 * link to /dev/zero, a raw file a FIFO that never ends, a key set a directory. So every read goes through
 * here: the file is opened without blocking (a FIFO's open would wait for a writer), its type is taken
 * from the open handle (no race with a rename), and anything but a regular file is refused — a device,
 * FIFO, socket or directory; a symbolic link is followed only to a regular file, or not at all where the
 * caller's format forbids links. A whole-file read is capped per kind of file (docs/limits.md) on the
 * file's size before a byte is read, and again while reading, so a file that grows cannot get past it.
 *
 * Refusals are InputErrors with their own codes, exit 2 (an input the user named, or the environment, is
 * wrong); a checker that reads the file as data under check turns one into a finding instead.
 */
import { constants as fs } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import type { Stats } from 'node:fs'
import { EXIT_USAGE, PipeError } from './errors.js'

export const INPUT_CODES = {
  notRegular: 'input.not-regular',
  tooLarge: 'input.too-large',
  symlink: 'input.symlink',
  changed: 'input.changed-while-read',
} as const

/** Why a file was not read: its code (INPUT_CODES) and the file, in the location. */
export class InputError extends PipeError {
  constructor(code: string, readonly path: string, message: string) {
    super(code, message, { location: { file: path }, exitCode: EXIT_USAGE })
    this.name = 'InputError'
  }
}

export interface OpenOptions {
  /** Refuse a symbolic link, even to a regular file (the pack format's stores: an object is never a link). */
  noFollow?: boolean
}

const KIND_OF = (s: Stats): string =>
  s.isDirectory() ? 'a directory' : s.isFIFO() ? 'a FIFO' : s.isSocket() ? 'a socket' : s.isCharacterDevice() ? 'a character device' : s.isBlockDevice() ? 'a block device' : 'not a regular file'

/**
 * Opens `path` for reading if it is a regular file, with its size. ENOENT and ENOTDIR pass through as they
 * are (a missing file is the caller's finding); everything else that is not a regular file is an InputError.
 */
export async function openRegularFile(path: string, opts: OpenOptions = {}): Promise<{ fh: FileHandle; size: number }> {
  const flags = fs.O_RDONLY | (fs.O_NONBLOCK ?? 0) | (fs.O_NOCTTY ?? 0) | (opts.noFollow ? (fs.O_NOFOLLOW ?? 0) : 0)
  let fh: FileHandle
  try {
    fh = await open(path, flags)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ELOOP' && opts.noFollow) throw new InputError(INPUT_CODES.symlink, path, 'a symbolic link, which is not read here')
    if (code === 'ENXIO') throw new InputError(INPUT_CODES.notRegular, path, 'a socket or a device without a reader, not a regular file')
    throw err
  }
  try {
    const s = await fh.stat()
    if (!s.isFile()) throw new InputError(INPUT_CODES.notRegular, path, `${KIND_OF(s)}, not a regular file`)
    return { fh, size: s.size }
  } catch (err) {
    await fh.close()
    throw err
  }
}

export interface ReadLimit {
  /** The most bytes read; a larger file is refused on its size, before a byte is read. */
  maxBytes: number
  /** What the file is, for messages: 'a manifest', 'the key set'. */
  what: string
}

/** Reads a whole regular file of at most `limit.maxBytes` (its size checked first, and again as it is read). */
export async function readInputFile(path: string, limit: ReadLimit, opts: OpenOptions = {}): Promise<Buffer> {
  const { fh, size } = await openRegularFile(path, opts)
  try {
    if (size > limit.maxBytes) throw tooLarge(path, limit, `${size} bytes`)
    // One byte more than the cap is asked for, so that a file that grew since fstat is still caught.
    const buf = Buffer.allocUnsafe(Math.min(size, limit.maxBytes) + 1)
    let filled = 0
    for (;;) {
      const { bytesRead } = await fh.read(buf, filled, buf.length - filled, filled)
      if (bytesRead === 0) break
      filled += bytesRead
      if (filled === buf.length) {
        if (filled > limit.maxBytes) throw tooLarge(path, limit, 'more bytes than that, having grown while read')
        break
      }
    }
    if (filled !== size) throw new InputError(INPUT_CODES.changed, path, `changed size while read (${size} bytes, then ${filled})`)
    return buf.subarray(0, filled)
  } finally {
    await fh.close()
  }
}

function tooLarge(path: string, limit: ReadLimit, size: string): InputError {
  return new InputError(INPUT_CODES.tooLarge, path, `${size}: ${limit.what} is read only up to ${formatBytes(limit.maxBytes)} (docs/limits.md)`)
}

/** A size as people read it: 512 B, 1.5 KiB, 16.0 MiB, 4.00 GiB. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`
  return `${(n / 1024 ** 3).toFixed(2)} GiB`
}

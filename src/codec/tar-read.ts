/**
 * Reading and extracting uncompressed tar archives that come from elsewhere: a pack export (or store)
 * delivered as "an uncompressed tar of it" (pack-format-1.0.md, Exports). The archive is hostile until
 * proven otherwise, so the reader never crashes, hangs or allocates without bound, and every refusal is a
 * TarError with a stable code (TAR_CODES).
 *
 * What is read: POSIX ustar headers (prefix + name), pax extended headers ('x': path and size honoured,
 * other keys ignored; 'g' global headers skipped) and GNU long names ('L'). Only plain files and folders
 * are accepted, as a pack is nothing else: links, devices, FIFOs, sparse and multi-volume entries are
 * refused. Old v7 headers (no "ustar" magic) are refused too: no tool writes them today, and without the
 * magic a block of random bytes is harder to tell from a header.
 *
 * Where the archive ends: at two zero blocks, or at the end of the input after one. Bytes after the two
 * zero blocks are not read (GNU tar pads archives with zeros to a 10 KiB record and ignores them too). A
 * single zero block followed by more headers is refused: tools disagree on whether it ends the archive,
 * and a reader must not see other files than the tool that made the archive meant.
 *
 * An input of 0 bytes is refused (`tar.empty`): even an archive of no files is two zero blocks, and a
 * 0-byte download is a failed one. Two zero blocks alone are a valid, empty archive.
 *
 * May import: src/core.
 */
import { createHash } from 'node:crypto'
import { constants as fsConstants } from 'node:fs'
import { lstat, mkdir, open, readdir } from 'node:fs/promises'
import { dirname, join, resolve, sep } from 'node:path'
import { PipeError, UsageError } from '../core/errors.js'
import { formatBytes, openRegularFile } from '../core/input-file.js'

export const TAR_CODES = {
  empty: 'tar.empty',
  notTar: 'tar.not-tar',
  badHeader: 'tar.bad-header',
  badChecksum: 'tar.bad-checksum',
  truncated: 'tar.truncated',
  unsafeName: 'tar.unsafe-name',
  linkRefused: 'tar.link-refused',
  unsupportedType: 'tar.unsupported-type',
  tooLarge: 'tar.too-large',
  tooManyEntries: 'tar.too-many-entries',
  duplicateName: 'tar.duplicate-name',
  badTarget: 'tar.bad-target',
} as const

/**
 * Why an archive was refused. The message is one line naming the archive, the entry (when its name is
 * known) and the byte offset of the header at fault, then the rule broken; the same facts are fields
 * here for scripts, rather than a Location, so that oneLine() does not print them twice.
 */
export class TarError extends PipeError {
  constructor(
    code: string,
    readonly archive: string,
    readonly offset: number,
    readonly entry: string | undefined,
    rule: string,
  ) {
    super(code, `${archive}: ${entry === undefined ? '' : `entry ${quoteName(entry)} `}at byte ${offset}: ${rule}`)
    this.name = 'TarError'
  }
}

/** A name as messages show it: quoted and escaped (a hostile name may hold a newline), and cut when long. */
function quoteName(name: string): string {
  return JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}...` : name)
}

export interface ReadTarOptions {
  /** The archive's name, for messages. */
  archive?: string
  /** The largest entry accepted, in bytes; 4 GiB by default (the pack format's largest object). */
  maxEntryBytes?: number
  /** The largest pax extended header or GNU long name, in bytes; 1 MiB by default. */
  maxHeaderBytes?: number
  /** The most entries, counting folders that names imply without an entry of their own; 1,000,000 by default. */
  maxEntries?: number
}

export const TAR_DEFAULTS = {
  maxEntryBytes: 4 * 2 ** 30,
  maxHeaderBytes: 2 ** 20,
  maxEntries: 1_000_000,
  maxTotalBytes: 64 * 2 ** 30,
} as const

/** The longest name accepted, in UTF-8 bytes (Linux's PATH_MAX). */
export const MAX_NAME_BYTES = 4096

export interface TarEntry {
  /** Relative, '/'-separated, no '.', '..' or empty segments; a folder's without its trailing '/'. */
  name: string
  type: 'file' | 'directory'
  /** Bytes of the body; 0 for a folder. */
  size: number
  /** Byte offset of the entry's own header in the archive (after any pax or long-name headers); its body starts 512 bytes later. */
  offset: number
  /**
   * The entry's bytes, streamed as views into the input's chunks. Read it before asking for the next
   * entry, or not at all: the reader skips what was not read, and a body read too late throws.
   */
  body: AsyncIterable<Uint8Array>
}

const BLOCK = 512
const EMPTY = Buffer.alloc(0)

/**
 * Pulls bytes from an async iterable on demand, as views into its chunks: a body is never copied, and only
 * a header (512 bytes, or a pax header within its cap) is ever gathered into a buffer of its own.
 */
class ByteReader {
  private chunk: Buffer = EMPTY
  private at = 0
  private ended = false
  /** Bytes handed out so far: the archive offset of the next byte. */
  position = 0

  constructor(private readonly source: AsyncIterator<Uint8Array>) {}

  /** Up to `max` bytes (max > 0); an empty buffer only at the end of the input. */
  async next(max: number): Promise<Buffer> {
    while (this.at === this.chunk.length) {
      if (this.ended) return EMPTY
      const step = await this.source.next()
      if (step.done) {
        this.ended = true
        return EMPTY
      }
      const v = step.value
      this.chunk = Buffer.from(v.buffer, v.byteOffset, v.byteLength)
      this.at = 0
    }
    const n = Math.min(max, this.chunk.length - this.at)
    const out = this.chunk.subarray(this.at, this.at + n)
    this.at += n
    this.position += n
    return out
  }

  /** Exactly `n` bytes in one buffer, or fewer at the end of the input. */
  async read(n: number): Promise<Buffer> {
    const first = await this.next(n)
    if (first.length === n || first.length === 0) return first
    const buf = Buffer.allocUnsafe(n)
    first.copy(buf)
    let filled = first.length
    while (filled < n) {
      const part = await this.next(n - filled)
      if (part.length === 0) return buf.subarray(0, filled)
      part.copy(buf, filled)
      filled += part.length
    }
    return buf
  }

  /** Skips `n` bytes; answers how many were there. */
  async skip(n: number): Promise<number> {
    let left = n
    while (left > 0) {
      const part = await this.next(left)
      if (part.length === 0) break
      left -= part.length
    }
    return n - left
  }

  async close(): Promise<void> {
    await this.source.return?.()
  }
}

const padding = (size: number) => (BLOCK - (size % BLOCK)) % BLOCK

const isZeroBlock = (b: Buffer) => {
  for (let i = 0; i < b.length; i++) if (b[i] !== 0) return false
  return true
}

/** A NUL-terminated (or field-filling) byte string. */
function cString(field: Buffer): Buffer {
  const end = field.indexOf(0)
  return end === -1 ? field : field.subarray(0, end)
}

/**
 * A numeric header field: octal digits (leading spaces allowed, then NULs or spaces to the end), or GNU's
 * base-256 (top bit set; the next bit is the sign). Undefined when malformed or negative; a value past
 * Number.MAX_SAFE_INTEGER is Infinity, so that a 2^62-byte size is refused by a comparison, not allocated.
 */
export function parseNumeric(field: Uint8Array): number | undefined {
  const first = field[0] ?? 0
  if (first & 0x80) {
    if (first & 0x40) return undefined
    let value = first & 0x3f
    for (let i = 1; i < field.length; i++) {
      value = value * 256 + field[i]!
      if (value > Number.MAX_SAFE_INTEGER) return Infinity
    }
    return value
  }
  let i = 0
  while (i < field.length && field[i] === 0x20) i++
  let value = 0
  let digits = 0
  for (; i < field.length; i++) {
    const c = field[i]!
    if (c < 0x30 || c > 0x37) break
    value = value * 8 + (c - 0x30)
    digits++
  }
  if (digits === 0) return undefined
  for (; i < field.length; i++) if (field[i] !== 0 && field[i] !== 0x20) return undefined
  return value
}

/** The checksum as GNU tar accepts it: the header's bytes summed with the checksum field as spaces, unsigned or signed. */
function checksumMatches(header: Buffer, stored: number): boolean {
  let unsigned = 0
  let signed = 0
  for (let i = 0; i < BLOCK; i++) {
    const b = i >= 148 && i < 156 ? 0x20 : header[i]!
    unsigned += b
    signed += b > 127 ? b - 256 : b
  }
  return stored === unsigned || stored === signed
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** What a pax extended header ('x') sets for the next entry. */
interface PaxOverrides {
  path?: Buffer
  size?: number
}

/**
 * The header types that are not entries of their own but describe the next one. A type seen twice before
 * one entry, or a pax path together with a long name, is refused: tools differ on which one wins.
 */
interface Pending {
  pax?: PaxOverrides
  longName?: Buffer
  offset: number
}

type Kind = 'file' | 'directory' | 'implied-directory'

/**
 * Yields the entries of an uncompressed tar archive in archive order, each body streamed. Every name is
 * checked (checkName) and no two entries name the same path, nor does a name pass through a file; the
 * paths seen are kept as 32-byte digests, so memory is bounded by `maxEntries`, not by the names' length.
 */
export async function* readTar(source: AsyncIterable<Uint8Array>, opts: ReadTarOptions = {}): AsyncGenerator<TarEntry> {
  const archive = opts.archive ?? '<tar>'
  const maxEntryBytes = opts.maxEntryBytes ?? TAR_DEFAULTS.maxEntryBytes
  const maxHeaderBytes = opts.maxHeaderBytes ?? TAR_DEFAULTS.maxHeaderBytes
  const maxEntries = opts.maxEntries ?? TAR_DEFAULTS.maxEntries
  const reader = new ByteReader(source[Symbol.asyncIterator]())
  const fail = (code: string, offset: number, entry: string | undefined, rule: string) => new TarError(code, archive, offset, entry, rule)

  const seen = new Map<string, Kind>()
  let entries = 0
  const count = (offset: number, name: string) => {
    if (++entries > maxEntries) throw fail(TAR_CODES.tooManyEntries, offset, name, `more than ${maxEntries} entries (counting folders that names imply)`)
  }
  const keyOf = (path: string) => createHash('sha256').update(path).digest().toString('latin1')

  /** Records `name`, refusing a second entry of the same path or a path through an earlier file. */
  const claim = (name: string, type: 'file' | 'directory', offset: number) => {
    // Folders above the name, nearest first; a known folder's own parents were claimed with it.
    for (let cut = name.lastIndexOf('/'); cut > 0; cut = name.lastIndexOf('/', cut - 1)) {
      const parent = name.slice(0, cut)
      const key = keyOf(parent)
      const kind = seen.get(key)
      if (kind === 'file') throw fail(TAR_CODES.duplicateName, offset, name, `${quoteName(parent)} is a file earlier in the archive, and this name makes it a folder`)
      if (kind !== undefined) break
      count(offset, name)
      seen.set(key, 'implied-directory')
    }
    const key = keyOf(name)
    const kind = seen.get(key)
    if (kind === undefined) {
      count(offset, name)
      seen.set(key, type)
    } else if (kind === 'implied-directory' && type === 'directory') {
      seen.set(key, type)
    } else {
      const before = kind === 'file' ? 'a file' : 'a folder'
      throw fail(TAR_CODES.duplicateName, offset, name, `names the same path as ${before} earlier in the archive`)
    }
  }

  /** The body of a pax header or long name, within its cap. */
  const readMeta = async (size: number, offset: number, what: string): Promise<Buffer> => {
    if (size > maxHeaderBytes) throw fail(TAR_CODES.tooLarge, offset, undefined, `${what} of ${size} bytes, over the ${formatBytes(maxHeaderBytes)} allowed`)
    // A copy: it may be a view into the input's chunk, which is not ours to keep past the next read.
    const data = Buffer.from(await reader.read(size))
    if (data.length < size || (await reader.skip(padding(size))) < padding(size)) throw fail(TAR_CODES.truncated, offset, undefined, `the input ends inside a ${what}`)
    return data
  }

  try {
    let pending: Pending | undefined
    let blocks = 0
    for (;;) {
      const offset = reader.position
      const header = await reader.read(BLOCK)
      if (header.length === 0) {
        if (blocks === 0) throw fail(TAR_CODES.empty, 0, undefined, 'the input is empty (0 bytes): not a tar archive; even an archive of no files is two zero blocks')
        throw fail(TAR_CODES.truncated, offset, undefined, 'the input ends without the end-of-archive zero blocks: the archive is cut short')
      }
      if (header.length < BLOCK) throw fail(TAR_CODES.truncated, offset, undefined, `the input ends inside a header (${header.length} of 512 bytes)`)
      blocks++

      if (isZeroBlock(header)) {
        if (pending) throw fail(TAR_CODES.badHeader, pending.offset, undefined, 'a pax or long-name header is followed by the end of the archive, not by its entry')
        const second = await reader.read(BLOCK)
        if (second.length === 0 || isZeroBlock(second)) return
        if (second.length < BLOCK) throw fail(TAR_CODES.truncated, offset + BLOCK, undefined, `the input ends inside a block after a zero block (${second.length} of 512 bytes)`)
        throw fail(TAR_CODES.badHeader, offset, undefined, 'a lone zero block inside the archive: the end of an archive is two zero blocks')
      }

      const magic = header.toString('latin1', 257, 263)
      const posix = magic === 'ustar\0'
      if (!posix && magic !== 'ustar ') {
        if (offset === 0) throw fail(TAR_CODES.notTar, 0, undefined, 'not a tar archive (no ustar, pax or GNU header at its start)')
        throw fail(TAR_CODES.badHeader, offset, undefined, 'not a ustar, pax or GNU tar header (no "ustar" magic)')
      }
      const stored = parseNumeric(header.subarray(148, 156))
      if (stored === undefined || !checksumMatches(header, stored)) throw fail(TAR_CODES.badChecksum, offset, undefined, 'the header checksum does not match its bytes')

      const type = String.fromCharCode(header[156]!)
      // GNU headers keep times and sparse maps where ustar keeps the prefix, so only a POSIX header has one.
      const headerName = () => {
        const name = cString(header.subarray(0, 100))
        const prefix = posix ? cString(header.subarray(345, 500)) : EMPTY
        return prefix.length ? Buffer.concat([prefix, Buffer.from('/'), name]) : name
      }
      const fieldSize = (entry?: string) => {
        const size = parseNumeric(header.subarray(124, 136))
        if (size === undefined) throw fail(TAR_CODES.badHeader, offset, entry, 'the size field is not an octal or base-256 number')
        return size
      }

      if (type === 'x' || type === 'g' || type === 'L') {
        const what = type === 'L' ? 'GNU long name' : 'pax extended header'
        const size = fieldSize()
        if (type === 'g') {
          // Global pax headers set defaults (times, owners) that a pack has no use for.
          await readMeta(size, offset, 'pax global header')
          continue
        }
        pending ??= { offset }
        if ((type === 'x' && pending.pax) || (type === 'L' && pending.longName)) throw fail(TAR_CODES.badHeader, offset, undefined, `two ${what}s before one entry`)
        const data = await readMeta(size, offset, what)
        if (type === 'x') pending.pax = parsePax(data, (rule, unsupported) => fail(unsupported ? TAR_CODES.unsupportedType : TAR_CODES.badHeader, offset, undefined, rule))
        else pending.longName = cString(data)
        if (pending.pax?.path && pending.longName) throw fail(TAR_CODES.badHeader, offset, undefined, 'both a pax path and a GNU long name name the next entry')
        continue
      }

      const rawName = pending?.pax?.path ?? pending?.longName ?? headerName()
      const meta = pending
      pending = undefined
      const shown = rawName.toString('utf8')
      if (type === '1' || type === '2' || type === 'K') {
        throw fail(TAR_CODES.linkRefused, offset, shown, `a ${type === '2' ? 'symbolic' : 'hard'} link: a pack holds plain files only, and links are never made`)
      }
      if (type !== '0' && type !== '\0' && type !== '7' && type !== '5') {
        throw fail(TAR_CODES.unsupportedType, offset, shown, `entry type ${JSON.stringify(type)} (${TYPE_NAMES[type] ?? 'unknown'}): a pack holds plain files and folders only`)
      }
      const isDirectory = type === '5'
      const size = meta?.pax?.size ?? fieldSize(shown)
      if (size > maxEntryBytes) throw fail(TAR_CODES.tooLarge, offset, shown, `an entry of ${Number.isFinite(size) ? size : 'over 2^53'} bytes, over the ${formatBytes(maxEntryBytes)} allowed`)
      if (isDirectory && size !== 0) throw fail(TAR_CODES.badHeader, offset, shown, `a folder entry with a size of ${size} bytes`)

      const checked = checkName(rawName, isDirectory)
      if (typeof checked !== 'string') throw fail(TAR_CODES.unsafeName, offset, shown, checked.rule)
      if (checked === '') {
        // './', the archive's own top folder (what `tar -C dir .` writes first): the folder extracted into.
        count(offset, '.')
        continue
      }
      claim(checked, isDirectory ? 'directory' : 'file', offset)

      const body = { remaining: size, done: false, reading: undefined as Promise<Buffer> | undefined }
      const name = checked
      async function* streamBody(): AsyncGenerator<Uint8Array> {
        while (body.remaining > 0) {
          if (body.done) throw new Error(`${archive}: the body of ${quoteName(name)} was read after the next entry was asked for`)
          body.reading = reader.next(body.remaining)
          const part = await body.reading
          body.reading = undefined
          if (part.length === 0) throw fail(TAR_CODES.truncated, offset, name, `the input ends inside the entry's ${size} bytes (${size - body.remaining} there)`)
          body.remaining -= part.length
          yield part
        }
      }
      yield { name, type: isDirectory ? 'directory' : 'file', size, offset, body: streamBody() }

      body.done = true
      await body.reading?.catch(() => undefined)
      const rest = body.remaining + padding(size)
      if ((await reader.skip(rest)) < rest) throw fail(TAR_CODES.truncated, offset, name, `the input ends inside the entry's ${size} bytes and their padding`)
    }
  } finally {
    await reader.close()
  }
}

const TYPE_NAMES: Record<string, string> = {
  '3': 'character device',
  '4': 'block device',
  '6': 'FIFO',
  S: 'GNU sparse file',
  D: 'GNU dump directory',
  M: 'GNU multi-volume continuation',
  V: 'GNU volume label',
  N: 'GNU old long name',
  A: 'Solaris access control list',
  E: 'Solaris extended attributes',
  X: 'old pax extended header',
}

/**
 * The records of a pax extended header, "<length> <key>=<value>\n" each, the length counting the whole
 * record. Only path and size matter to a pack; a sparse file's keys are refused, as its bytes are not
 * the file's.
 */
function parsePax(data: Buffer, refuse: (rule: string, unsupported?: boolean) => TarError): PaxOverrides {
  const out: PaxOverrides = {}
  let at = 0
  while (at < data.length) {
    const space = data.indexOf(0x20, at)
    const lengthText = space === -1 ? '' : data.toString('latin1', at, space)
    if (!/^[1-9][0-9]{0,15}$/.test(lengthText)) throw refuse(`a pax record at byte ${at} of its header does not start with its length`)
    const length = Number(lengthText)
    const end = at + length
    if (end > data.length || data[end - 1] !== 0x0a) throw refuse(`a pax record at byte ${at} of its header runs past its stated length of ${length}`)
    const equals = data.indexOf(0x3d, space + 1)
    if (equals === -1 || equals >= end - 1) throw refuse(`a pax record at byte ${at} of its header has no key=value`)
    const key = data.toString('latin1', space + 1, equals)
    const value = data.subarray(equals + 1, end - 1)
    if (key.startsWith('GNU.sparse.')) throw refuse('a sparse file (GNU.sparse pax keys): a pack holds plain files only', true)
    // An empty value removes the key (POSIX), so the header's own field applies again.
    if (key === 'path') {
      if (value.length) out.path = value
      else delete out.path
    } else if (key === 'size') {
      if (!value.length) delete out.size
      else if (!/^[0-9]+$/.test(value.toString('latin1'))) throw refuse('the pax size is not a decimal number')
      else out.size = value.length > 16 ? Infinity : Number(value.toString('latin1'))
    }
    at = end
  }
  return out
}

/**
 * The name an entry is extracted under, or why it is unsafe. Accepted: relative, '/'-separated UTF-8 of
 * at most MAX_NAME_BYTES, with no '.', '..' or empty segment once a leading './' is dropped (and a
 * folder's one trailing '/'), no backslash, NUL or drive letter. '' names the top folder itself ('./').
 */
export function checkName(raw: Uint8Array, isDirectory: boolean): string | { rule: string } {
  if (raw.length === 0) return { rule: 'an empty name' }
  if (raw.length > MAX_NAME_BYTES) return { rule: `a name of ${raw.length} bytes, over the ${MAX_NAME_BYTES} allowed` }
  let name: string
  try {
    name = utf8.decode(raw)
  } catch {
    return { rule: 'a name that is not UTF-8' }
  }
  if (name.includes('\0')) return { rule: 'a name holding a NUL byte' }
  if (name.includes('\\')) return { rule: 'a name holding a backslash (a Windows separator)' }
  if (name.startsWith('/')) return { rule: 'an absolute name' }
  if (/^[A-Za-z]:/.test(name)) return { rule: 'a name starting with a drive letter' }
  if (name.startsWith('./')) name = name.slice(2)
  if (isDirectory && name.endsWith('/')) name = name.slice(0, -1)
  if (isDirectory && (name === '' || name === '.')) return ''
  for (const segment of name.split('/')) {
    if (segment === '') return { rule: 'a name with an empty segment (// or a trailing /)' }
    if (segment === '.' || segment === '..') return { rule: `a name with a "${segment}" segment` }
  }
  return name
}

export interface ExtractTarOptions extends Omit<ReadTarOptions, 'archive'> {
  /** The most bytes of all files together; 64 GiB by default. */
  maxTotalBytes?: number
}

/** How many bytes are read from the archive at a time. */
const READ_CHUNK = 256 * 1024

/**
 * Extracts the archive at `archivePath` into `into`, an existing empty folder, and answers how many files
 * and bytes it wrote. Files are created new (O_EXCL, O_NOFOLLOW: never following or overwriting anything)
 * with the default mode (0o666 less the umask: a pack holds nothing executable), folders with 0o777 less
 * the umask; times and owners are not restored. Nothing is written outside `into`: names are checked by
 * readTar and no link is ever made, so no path can lead out.
 *
 * On any error it throws and leaves what it wrote: the caller removes `into` (it is the caller's folder,
 * and only the caller knows it holds nothing else). Files are not fsynced: an import checks every hash
 * after extraction anyway.
 */
export async function extractTar(archivePath: string, into: string, opts: ExtractTarOptions = {}): Promise<{ files: number; bytes: number }> {
  const maxTotalBytes = opts.maxTotalBytes ?? TAR_DEFAULTS.maxTotalBytes
  const root = resolve(into)
  await checkTarget(root)
  const { fh: archive } = await openRegularFile(archivePath)
  async function* chunks(): AsyncGenerator<Uint8Array> {
    let position = 0
    for (;;) {
      // A fresh buffer each time: the bodies handed out are views into it, held while they are written.
      const buf = Buffer.allocUnsafe(READ_CHUNK)
      const { bytesRead } = await archive.read(buf, 0, buf.length, position)
      if (bytesRead === 0) return
      position += bytesRead
      yield buf.subarray(0, bytesRead)
    }
  }

  let files = 0
  let bytes = 0
  let madeParent = ''
  try {
    for await (const entry of readTar(chunks(), { ...opts, archive: archivePath })) {
      const path = join(root, entry.name)
      // readTar's names cannot lead out; this guards against a future change to its rules.
      if (!path.startsWith(root + sep)) throw new TarError(TAR_CODES.unsafeName, archivePath, entry.offset, entry.name, 'a name that leads outside the folder extracted into')
      const collision = (err: unknown): never => {
        const code = (err as NodeJS.ErrnoException).code
        // readTar refuses duplicates by name; the file system still sees a case-insensitive or
        // normalising collision ('A' and 'a' on macOS), and that is the same refusal.
        if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') {
          throw new TarError(TAR_CODES.duplicateName, archivePath, entry.offset, entry.name, `collides with an earlier entry on this file system (${code})`)
        }
        throw err
      }
      if (entry.type === 'directory') {
        await mkdir(path, { recursive: true }).catch(collision)
        continue
      }
      bytes += entry.size
      if (bytes > maxTotalBytes) throw new TarError(TAR_CODES.tooLarge, archivePath, entry.offset, entry.name, `the files add up to more than the ${formatBytes(maxTotalBytes)} allowed`)
      const parent = dirname(path)
      if (parent !== madeParent) {
        await mkdir(parent, { recursive: true }).catch(collision)
        madeParent = parent
      }
      const out = await open(path, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | (fsConstants.O_NOFOLLOW ?? 0), 0o666).catch(collision)
      try {
        for await (const part of entry.body) {
          let done = 0
          while (done < part.length) done += (await out.write(part, done, part.length - done)).bytesWritten
        }
      } finally {
        await out.close()
      }
      files++
    }
  } finally {
    await archive.close()
  }
  return { files, bytes }
}

/** `into` must be a folder (not a link to one) that holds nothing, so that nothing of its own is at stake. */
async function checkTarget(into: string): Promise<void> {
  const s = await lstat(into).catch((err: NodeJS.ErrnoException) => {
    throw new UsageError(TAR_CODES.badTarget, `${into}: the folder to extract into cannot be used (${err.code ?? err.message})`)
  })
  if (!s.isDirectory()) throw new UsageError(TAR_CODES.badTarget, `${into}: the folder to extract into is not a folder`)
  if ((await readdir(into)).length > 0) throw new UsageError(TAR_CODES.badTarget, `${into}: the folder to extract into is not empty`)
}

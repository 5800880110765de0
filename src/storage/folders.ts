/**
 * Whole folders to and from a storage: a store in a bucket fetched into a local folder for a command that
 * reads a folder (pack-check, pack-export), and a folder a command wrote locally (a pack version, published
 * into a staging copy of the store) landed in the bucket. Landing creates every new file only if absent,
 * replaces the files that move (a pack's refs and key statements) only from the version read before, and
 * lands those last, so that what they name is there before them.
 */
import { createHash } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { mkdir, readdir, readFile } from 'node:fs/promises'
import { join, relative, resolve, sep } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { PipeError } from '../core/errors.js'
import type { Storage } from './storage.js'

/** Transfers at once. */
const AT_ONCE = 8

/**
 * Runs `each` over the items, at most 8 at once; after a failure nothing more starts, and the first
 * failure is thrown once every started one has ended.
 */
export async function inTurns<T>(items: AsyncIterable<T> | Iterable<T>, each: (item: T) => Promise<void>): Promise<void> {
  const running = new Set<Promise<void>>()
  let failed: unknown
  for await (const item of items) {
    if (failed !== undefined) break
    const task: Promise<void> = each(item).catch((err: unknown) => { failed ??= err }).finally(() => running.delete(task))
    running.add(task)
    if (running.size >= AT_ONCE) await Promise.race(running)
  }
  await Promise.all(running)
  if (failed !== undefined) throw failed
}

/** A key every part of which is a plain name: one that cannot reach outside the folder it is fetched into. */
export const plainKey = (key: string) => key.split('/').every((p) => p !== '' && p !== '.' && p !== '..' && !p.includes('\\') && !p.includes('\0'))

/**
 * Fetches every object below the storage's root into `dir`, laid out as in the bucket; refuses a key that
 * is no plain path (`storage.bad-key`), which could name a place outside `dir`.
 */
export async function fetchFolder(store: Storage, dir: string, signal?: AbortSignal): Promise<{ files: number; bytes: number }> {
  let files = 0
  let bytes = 0
  await inTurns(store.list(''), async ({ key, size }) => {
    signal?.throwIfAborted()
    if (!plainKey(key)) throw new PipeError('storage.bad-key', 'is not a plain path of names: it is not fetched', { location: { file: store.where(key) } })
    if (!(await fetchObjectInto(store, key, join(dir, ...key.split('/')), { ...(signal ? { signal } : {}) }))) return
    files++
    bytes += size
  })
  return { files, bytes }
}

/** Streams one object (or `range` of it) into a local file, its folder made; false when there is no such object. */
export async function fetchObjectInto(store: Storage, key: string, path: string, o: { range?: { start: number; end?: number }; signal?: AbortSignal } = {}): Promise<boolean> {
  await mkdir(path.slice(0, path.lastIndexOf(sep)), { recursive: true })
  const body = await store.read(key, o.range)
  if (!body) return false
  await pipeline(body, createWriteStream(path), ...(o.signal ? [{ signal: o.signal }] : []))
  return true
}

/** Every regular file below `dir`, as '/'-separated paths relative to it, in name order. */
export async function folderFiles(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(relative(dir, join(e.parentPath, e.name)).split(sep).join('/'))
  }
  return out.sort()
}

/**
 * A local folder standing in for a storage while a command writes into it (a store in a bucket, copied
 * here for a publish): what came from the storage, and the files that move with what each held then.
 */
export interface StagedFolder {
  storage: Storage
  dir: string
  /** The files copied from the storage. */
  fromStorage: ReadonlySet<string>
  /** Files that move (a pack's refs and key statements), not created once for all. */
  moving: (rel: string) => boolean
  /** What each moving file held in the storage when read: its version and SHA-256. Absent: it did not exist. */
  held: ReadonlyMap<string, { etag: string; sha256: string }>
  /** The order moving files land in, after all others (a ref after the key statements it relies on). */
  order: (rel: string) => number
  /** The command's own temporaries, never landed. */
  temporary: (rel: string) => boolean
  /** Removes the folder, once landed (or given up). */
  remove: () => Promise<void>
}

/**
 * Lands what the command wrote into a staged folder: each new file created only if absent (in turns), then
 * each moving file whose bytes changed, replaced only from the version read (or created only if it did not
 * exist), in order. Another writer that moved one meanwhile stops this with `storage.changed`, before a
 * ref names anything. Gives the files landed.
 */
export async function landStaged(s: StagedFolder): Promise<string[]> {
  const fixed: string[] = []
  const moved: { rel: string; bytes: Buffer }[] = []
  for (const rel of await folderFiles(s.dir)) {
    if (s.temporary(rel)) continue
    if (s.moving(rel)) {
      const bytes = await readFile(join(s.dir, ...rel.split('/')))
      if (s.held.get(rel)?.sha256 !== createHash('sha256').update(bytes).digest('hex')) moved.push({ rel, bytes })
    } else if (!s.fromStorage.has(rel)) fixed.push(rel)
  }
  await inTurns(fixed, async (rel) => { await s.storage.putIfAbsent(rel, { file: join(s.dir, ...rel.split('/')) }) })
  moved.sort((a, b) => s.order(a.rel) - s.order(b.rel))
  for (const { rel, bytes } of moved) await s.storage.replace(rel, bytes, s.held.get(rel)?.etag ?? null)
  return [...fixed, ...moved.map((m) => m.rel)]
}

const staged = new Map<string, StagedFolder>()

export function stageFolder(s: StagedFolder): void {
  staged.set(resolve(s.dir), s)
}

/** The storage a folder stands in for, if it is one. */
export function stagedFolder(dir: string): StagedFolder | undefined {
  return staged.get(resolve(dir))
}

export function unstageFolder(dir: string): void {
  staged.delete(resolve(dir))
}

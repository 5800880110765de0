/**
 * A root in object storage, verified through a local mirror of what the checks read: every manifest and
 * signature (small, and all of them are needed to walk the chains), and the files of one hour at a time,
 * fetched before the hour is checked and removed after. The verifier itself reads a folder as always, so
 * a bucket is checked by exactly the rules a folder is; findings name the objects, not the mirror.
 *
 * Only keys of the sealed layout are mirrored (recorder=/venue=/channel=/date=/hour=, each part a plain
 * name): a hostile key cannot reach outside the mirror, and anything else in the bucket is ignored, as
 * the verifier ignores stray files in a folder.
 */
import { randomBytes } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { mkdir, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { openStorage, type Storage } from '../../../storage/storage.js'
import { MANIFEST_LIMIT } from '../manifest.js'
import { SIGNATURE_LIMIT } from '../keys/jws.js'

const PART = '[^/\\\\\\0]+'
const CHAIN = `recorder=${PART}/venue=${PART}/channel=${PART}`
const DAY_FILE = new RegExp(`^${CHAIN}/date=\\d{4}-\\d{2}-\\d{2}/manifest\\.json(\\.sig)?$`)
const HOUR_FILE = new RegExp(`^(${CHAIN}/date=\\d{4}-\\d{2}-\\d{2}/hour=\\d{2})/(${PART})$`)
const plainParts = (key: string) => key.split('/').every((p) => p !== '.' && p !== '..')

/** Manifests fetched at once while the mirror is made. */
const FETCHES_AT_ONCE = 16

export class MirroredRoot {
  private constructor(
    readonly url: string,
    /** The local folder the verifier is given as the root. */
    readonly dir: string,
    private readonly store: Storage,
  ) {}

  /**
   * Mirrors the root's manifests and signatures into a new folder under the system's temporary folder: of
   * every date, or of the dates from the day before `range.from` (whose manifests link into it) to `range.to`.
   */
  static async open(url: string, range: { from?: string; to?: string } = {}): Promise<MirroredRoot> {
    const store = await openStorage(url)
    const dir = join(tmpdir(), `.pipe-verify.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
    await mkdir(dir)
    const root = new MirroredRoot(url, dir, store)
    try {
      await root.mirrorManifests(range)
    } catch (err) {
      await root.close()
      throw err
    }
    return root
  }

  private async mirrorManifests(range: { from?: string; to?: string }): Promise<void> {
    const running = new Set<Promise<void>>()
    const first = range.from === undefined ? undefined : new Date(Date.parse(`${range.from}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10)
    for await (const { key } of range.from === undefined && range.to === undefined ? this.store.list('') : this.keysOfDates(first, range.to)) {
      if (!plainParts(key)) continue
      const hour = HOUR_FILE.exec(key)
      const isManifest = hour ? hour[2] === 'manifest.json' || hour[2] === 'manifest.json.sig' : DAY_FILE.test(key)
      if (!isManifest && !hour) continue
      // Every hour folder is made, so that the walk sees an hour whose manifest is missing as a folder.
      const folder = join(this.dir, ...(hour ? hour[1]! : key.slice(0, key.lastIndexOf('/'))).split('/'))
      if (!isManifest) {
        await mkdir(folder, { recursive: true })
        continue
      }
      const task = this.fetch(key, key.endsWith('.sig') ? SIGNATURE_LIMIT.maxBytes : MANIFEST_LIMIT.maxBytes).finally(() => running.delete(task))
      running.add(task)
      if (running.size >= FETCHES_AT_ONCE) await Promise.race(running)
    }
    await Promise.all(running)
  }

  /** The keys of the dates from `first` to `last` (inclusive; open when undefined) of every chain: a listing a date. */
  private async *keysOfDates(first: string | undefined, last: string | undefined): AsyncIterable<{ key: string }> {
    for (const r of (await this.store.folders('')).filter((n) => n.startsWith('recorder='))) {
      for (const v of (await this.store.folders(r)).filter((n) => n.startsWith('venue='))) {
        for (const c of (await this.store.folders(`${r}/${v}`)).filter((n) => n.startsWith('channel='))) {
          for (const d of await this.store.folders(`${r}/${v}/${c}`)) {
            const date = d.slice(5)
            if (!d.startsWith('date=') || (first !== undefined && date < first) || (last !== undefined && date > last)) continue
            yield* this.store.list(`${r}/${v}/${c}/${d}/`)
          }
        }
      }
    }
  }

  /**
   * Fetches one object into the mirror, streamed to disk. A manifest or signature larger than a verifier
   * reads is fetched only that far and one byte past it, so that the check refuses it as it would a file.
   */
  private async fetch(key: string, maxBytes = Infinity): Promise<void> {
    const path = join(this.dir, ...key.split('/'))
    await mkdir(path.slice(0, path.lastIndexOf('/')), { recursive: true })
    const body = await this.store.read(key, Number.isFinite(maxBytes) ? { start: 0, end: maxBytes + 1 } : undefined)
    if (!body) return
    await pipeline(body, createWriteStream(path))
  }

  /** Fetches the files of the hour folder `rel` (below the root) other than its manifest and signature. */
  async fetchHour(rel: string): Promise<void> {
    const prefix = `${rel.split(/[\\/]/).join('/')}/`
    for await (const { key } of this.store.list(prefix)) {
      const hour = HOUR_FILE.exec(key)
      if (!hour || !plainParts(key) || hour[1] !== prefix.slice(0, -1) || hour[2] === 'manifest.json' || hour[2] === 'manifest.json.sig') continue
      await this.fetch(key)
    }
  }

  /** Removes what {@link fetchHour} fetched, keeping the manifests. */
  async releaseHour(rel: string): Promise<void> {
    const folder = join(this.dir, ...rel.split(/[\\/]/))
    for (const name of await readdir(folder).catch(() => [] as string[])) {
      if (name !== 'manifest.json' && name !== 'manifest.json.sig') await rm(join(folder, name), { force: true })
    }
  }

  /** A path in the mirror as the object's URL; other text unchanged. */
  name(text: string): string {
    return text.split(this.dir).join(this.url)
  }

  async close(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true })
  }
}

/**
 * A root in object storage, verified through a local mirror of what the checks read: the folders of the
 * sealed layout (from one listing), then, as the verifier walks, one date's manifests and signatures at a
 * time, and within it one hour's files at a time, each fetched before it is read and removed after. The
 * verifier itself reads a folder as always, so a bucket is checked by exactly the rules a folder is;
 * findings name the objects, not the mirror. Local disk holds one date's manifests and one hour's files.
 *
 * Only keys of the sealed layout are mirrored (recorder=/venue=/channel=/date=/hour=, each part a plain
 * name): a hostile key cannot reach outside the mirror, and anything else in the bucket is ignored, as
 * the verifier ignores stray files in a folder.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fetchObjectInto, inTurns, plainKey } from '../../../storage/folders.js'
import { openStorage, type Storage } from '../../../storage/storage.js'
import { MANIFEST_LIMIT } from '../manifest.js'
import { SIGNATURE_LIMIT } from '../keys/jws.js'

const PART = '[^/\\\\\\0]+'
const CHAIN = `recorder=${PART}/venue=${PART}/channel=${PART}`
const DAY_FILE = new RegExp(`^${CHAIN}/date=\\d{4}-\\d{2}-\\d{2}/manifest\\.json(\\.sig)?$`)
const HOUR_FILE = new RegExp(`^(${CHAIN}/date=\\d{4}-\\d{2}-\\d{2}/hour=\\d{2})/(${PART})$`)

export class MirroredRoot {
  private constructor(
    /** The local folder the verifier is given as the root. */
    readonly dir: string,
    private readonly store: Storage,
  ) {}

  /**
   * Makes a mirror of the root in a new folder under the system's temporary folder, holding at first only
   * the date folders of each chain (every date, or from the day before `range.from`, whose manifests link
   * into it, to `range.to`): a few listings a chain, however many hours it holds.
   */
  static async open(url: string, range: { from?: string; to?: string } = {}): Promise<MirroredRoot> {
    const store = await openStorage(url)
    const dir = join(tmpdir(), `.pipe-verify.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
    await mkdir(dir)
    const root = new MirroredRoot(dir, store)
    try {
      const first = range.from === undefined ? undefined : new Date(Date.parse(`${range.from}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10)
      for (const chain of await root.chains()) {
        for (const d of await store.folders(chain)) {
          const date = d.slice(5)
          if (!/^date=\d{4}-\d{2}-\d{2}$/.test(d) || (first !== undefined && date < first) || (range.to !== undefined && date > range.to)) continue
          await mkdir(join(dir, ...chain.split('/'), d), { recursive: true })
        }
      }
    } catch (err) {
      await root.close()
      throw err
    }
    return root
  }

  /** The chains' keys (recorder=/venue=/channel=) below the root, each part a plain name. */
  private async chains(): Promise<string[]> {
    const plain = (n: string, key: string) => n.startsWith(`${key}=`) && n.length > key.length + 1 && plainKey(n)
    const out: string[] = []
    for (const r of (await this.store.folders('')).filter((n) => plain(n, 'recorder'))) {
      for (const v of (await this.store.folders(r)).filter((n) => plain(n, 'venue'))) {
        for (const c of (await this.store.folders(`${r}/${v}`)).filter((n) => plain(n, 'channel'))) out.push(`${r}/${v}/${c}`)
      }
    }
    return out
  }

  /** How many readers hold each folder's files (a date's manifests, an hour's files) present. */
  private readonly held = new Map<string, number>()

  /**
   * Makes the files below `rel` present: a date folder's manifests and signatures (its own and its hours'),
   * or an hour folder's other files. Gives what lets them go: the last reader's release removes them.
   */
  async fetch(rel: string): Promise<() => Promise<void>> {
    const folder = rel.split(/[\\/]/).join('/')
    const isHour = /\/hour=[^/]+$/.test(folder)
    const readers = this.held.get(folder) ?? 0
    this.held.set(folder, readers + 1)
    if (readers === 0) {
      try {
        await this.fetchFiles(folder, isHour)
      } catch (err) {
        await this.release(folder, isHour)
        throw err
      }
    }
    return () => this.release(folder, isHour)
  }

  private async fetchFiles(folder: string, isHour: boolean): Promise<void> {
    await inTurns(this.store.list(`${folder}/`), async ({ key }) => {
      if (!plainKey(key)) return
      const hour = HOUR_FILE.exec(key)
      const isManifest = hour ? hour[2] === 'manifest.json' || hour[2] === 'manifest.json.sig' : DAY_FILE.test(key)
      // An hour's own files, or a date's manifests (its own, and each of its hours').
      if (isHour ? !hour || hour[1] !== folder || isManifest : !isManifest) return
      // A manifest or signature larger than a verifier reads is fetched only that far and a byte past it,
      // so that the check refuses it as it would a file.
      const limit = !isManifest ? undefined : key.endsWith('.sig') ? SIGNATURE_LIMIT.maxBytes : MANIFEST_LIMIT.maxBytes
      await fetchObjectInto(this.store, key, join(this.dir, ...key.split('/')), limit === undefined ? {} : { range: { start: 0, end: limit + 1 } })
    })
  }

  private async release(folder: string, isHour: boolean): Promise<void> {
    const readers = (this.held.get(folder) ?? 1) - 1
    if (readers > 0) {
      this.held.set(folder, readers)
      return
    }
    this.held.delete(folder)
    const path = join(this.dir, ...folder.split('/'))
    const manifest = (name: string) => name === 'manifest.json' || name === 'manifest.json.sig'
    // An hour lets go of its files, keeping the manifests its date holds; a date lets go of its manifests.
    const remove = async (dir: string, take: (name: string) => boolean) => {
      for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) if (e.isFile() && take(e.name)) await rm(join(dir, e.name), { force: true })
    }
    if (isHour) await remove(path, (name) => !manifest(name))
    else {
      await remove(path, manifest)
      for (const e of await readdir(path, { withFileTypes: true }).catch(() => [])) if (e.isDirectory()) await remove(join(path, e.name), manifest)
    }
  }

  /** A path in the mirror as the object's URL; other text unchanged. */
  name(text: string): string {
    return text.split(this.dir).join(this.store.location)
  }

  async close(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true })
  }
}

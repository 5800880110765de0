import { createHash } from 'node:crypto'
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { z } from 'zod'
import { PipeError, UsageError } from '../src/core/errors.js'
import { definePipeline, type PipelineDef } from '../src/core/pipeline.js'
import type { Registry } from '../src/core/registry.js'
import { defineStage, type StageContext, type StageDef } from '../src/core/stage.js'
import { isObjectStoreUrl, type Storage } from '../src/storage/storage.js'
import { VERSION } from '../src/core/version.js'
import { defaultPublisherKeyPath } from '../src/formats/pack/keys/key-home.js'

const RETRACTION = /^([^=]+)=(.*)$/s


/**
 * The source of `pipe run pack-publish`: draws up the records, or what a library holds (--from-library), as a
 * new version of a feed (its tables, indexes and media into the store), and gives its two documents to sign:
 * the manifest, then the ref. pack-commit lands them once signed.
 */
export const packVersionStage = defineStage({
  name: 'pack-version',
  kind: 'source',
  summary: 'Draws up records (docs/pack-records.md), or what the library holds, as a new version of a feed in a JETCARP store: its manifest and ref, to sign',
  takes: 'none',
  gives: 'documents',
  options: z.object({
    feed: z.string().min(1).describe('the feed: 1 to 64 letters, digits and -'),
    to: z.string().min(1).describe('the store (created when missing): a folder, or s3://BUCKET/PREFIX'),
    records: z.string().min(1).optional().describe('the records folder: <table>.jsonl files, pack.json, media files, searches/ (or --from-library)'),
    fromLibrary: z.string().min(1).optional().describe('publish what this library holds instead of a records folder: its rows as consent and retractions allow (docs/library.md)'),
    id: z.array(z.string().min(1)).default([]).describe('with --from-library: a record to publish, by content id (a pattern\'s id, ant-..., qs-...), with its events, tilings, rules and media; repeat for several'),
    query: z.string().min(1).optional().describe('with --from-library: records whose columns have these values, {"table":"patterns","where":{"class":"spaceship","period":[3,4]}}'),
    searches: z.boolean().default(true).describe('with --from-library, --no-searches leaves out ratings of search runs (the library holds no search runs)'),
    key: z.string().min(1).optional().describe('the publisher key made by `pipe pack key` (default: the one in the settings directory)'),
    publicOnly: z.boolean().default(false).describe('read only the key\'s .pub and statements: an external signer (sign with signerCmd) holds the private key'),
    created: z.string().optional().describe('the version\'s time (RFC 3339 UTC, whole seconds): the same records and time give the same bytes'),
    merge: z.array(z.string().min(1)).default([]).describe('another store whose current version becomes a further parent; repeat for several'),
    retract: z.array(z.string().min(1)).default([]).describe('TARGET=reason: withdraw a record (pattern:<id>, ant:<id>, quickstart:<id>); repeat for several'),
  }),
  async create(o, ctx) {
    const retract = o.retract.map((r) => {
      const m = RETRACTION.exec(r)
      if (!m) throw new UsageError('usage.bad-retract', `--retract ${JSON.stringify(r)}: write TARGET=reason`, { location: { field: '--retract' } })
      return { target: m[1]!, reason: m[2]! }
    })
    if ((o.records === undefined) === (o.fromLibrary === undefined)) {
      throw new UsageError('usage.missing-option', 'give --records DIR (a records folder) or --from-library DB (what a library holds), one of them')
    }
    if (o.records !== undefined) {
      const libraryOnly = [o.id.length > 0 && '--id', o.query !== undefined && '--query', !o.searches && '--no-searches'].find(Boolean)
      if (libraryOnly) throw new UsageError('usage.bad-option', 'selects from a library: give it with --from-library', { location: { field: libraryOnly } })
      const info = await stat(o.records).catch(() => null)
      if (!info?.isDirectory()) throw new UsageError('usage.no-records', '--records: not a directory', { location: { file: o.records } })
    }
    if (isObjectStoreUrl(o.to) && o.merge.some(isObjectStoreUrl)) throw new UsageError('usage.bad-option', 'merges a store folder: fetch the bucket\'s store into a folder first', { location: { field: '--merge' } })
    // A store in a bucket is published into a local copy of its feed's current version, and landed from it (pack-commit).
    const store = isObjectStoreUrl(o.to) ? await stageBucketStore(o.to, o.feed, ctx) : o.to
    // The library's modules (SQLite among them) are loaded only to publish from one.
    const fromLibrary = o.fromLibrary === undefined ? undefined : await import('../src/library/library-publish.js')
    const query = o.query === undefined ? undefined : fromLibrary!.parseLibraryQuery(o.query)
    const [{ preparePack, draftDocuments }, publisherKeys] = await Promise.all([import('../src/formats/pack/publish/publish.js'), import('../src/formats/pack/keys/publisher-key.js')])
    const path = o.key ?? defaultPublisherKeyPath()
    // With an external signer the private key is not pipe's to read: who publishes comes from the .pub and statements.
    const publisher = await (o.publicOnly ? publisherKeys.loadPublisherIdentity(path) : publisherKeys.loadPublisherKey(path)).catch((err: unknown) => {
      throw new UsageError(err instanceof PipeError ? err.code : 'usage.key', `--key: ${(err as Error).message}`, { location: { file: path } })
    })
    return (async function* () {
      const version = {
        feed: o.feed, store, publicKey: publisher.publicKey, statements: publisher.statements, publisherId: publisher.publisherId,
        created: o.created ?? publisherKeys.packTimeNow(), merge: o.merge, retract, engineVersion: VERSION,
      }
      let draft
      if (fromLibrary) {
        const prepared = await fromLibrary.prepareFromLibrary({ ...version, library: o.fromLibrary!, selection: { ids: o.id, ...(query ? { query } : {}), searches: o.searches } })
        const left = prepared.library
        ctx.summary.from_library = {
          records: left.records, retracted: left.retracted, ratings_withheld: left.ratingsWithheld, score_models_withheld: left.scoreModelsWithheld,
          notes_stripped: left.notesStripped, search_run_ratings: left.searchRunRatings,
        }
        draft = prepared.draft
      } else {
        draft = await preparePack({ ...version, records: o.records! })
      }
      const r = draft.result
      Object.assign(ctx.summary, { manifest: r.manifest, seq: r.seq, parents: r.parents, new_parts: r.newParts, stats: r.stats, ...(r.notes.length > 0 ? { notes: r.notes } : {}) })
      yield* draftDocuments(draft)
    })()
  },
})

/**
 * A local copy of what a publish of `feed` reads from a store in a bucket: the feed's current version (as
 * pack-import fetches one), its ref and every key statement with the version each held then, for the
 * conditional writes that land the new version (storage/folders.ts).
 */
async function stageBucketStore(url: string, feed: string, ctx: StageContext): Promise<string> {
  const [{ openStorage }, { folderFiles, stageFolder, unstageFolder }, { mirrorPack }] = await Promise.all([
    import('../src/storage/storage.js'), import('../src/storage/folders.js'), import('../src/library/pack-mirror.js'),
  ])
  const storage = await openStorage(url)
  const work = await mkdtemp(join(tmpdir(), '.pipe-publish-'))
  const dir = join(work, 'store')
  const remove = async () => {
    unstageFolder(dir)
    await rm(work, { recursive: true, force: true })
  }
  ctx.onFailure(remove)
  const held = new Map<string, { etag: string; sha256: string }>()
  const refRel = `refs/${feed}.json`
  const keyRels: string[] = []
  for await (const { key } of storage.list('keys/')) keyRels.push(key)
  for (const rel of [refRel, ...keyRels]) {
    const version = await versionOf(storage, rel)
    if (version) held.set(rel, version)
  }
  await mkdir(dir)
  if (held.has(refRel)) await mirrorPack({ url, into: dir, feed, ...(ctx.signal ? { signal: ctx.signal } : {}) })
  else {
    const storeDocument = await storage.get('jetcarp-store.json', 1 << 20)
    if (storeDocument) await writeFile(join(dir, 'jetcarp-store.json'), storeDocument)
  }
  stageFolder({
    storage, dir, fromStorage: new Set(await folderFiles(dir)), held, remove,
    moving: (rel) => rel.startsWith('refs/') || rel.startsWith('keys/'),
    order: (rel) => (rel.startsWith('refs/') ? 1 : 0),
    temporary: (rel) => rel.startsWith('.tmp/'),
  })
  return dir
}

/** What a moving object holds now, its version and bytes read together: a version that moved between the two is read again. */
async function versionOf(storage: Storage, rel: string): Promise<{ etag: string; sha256: string } | undefined> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const before = await storage.head(rel)
    if (!before) return undefined
    const bytes = await storage.get(rel, 1 << 24)
    const after = await storage.head(rel)
    if (bytes && after?.etag === before.etag) return { etag: before.etag, sha256: createHash('sha256').update(bytes).digest('hex') }
  }
  throw new UsageError('storage.changed', 'keeps changing while it is read: another publisher is at work', { location: { file: storage.where(rel) } })
}

const { publicOnly: _publicOnly, ...versionOptions } = packVersionStage.options.shape

/** pack-version -> sign (the publisher's SSH key, or --signer-cmd) -> pack-commit. */
export const packPublishPipeline = definePipeline({
  name: 'pack-publish',
  summary: 'Publish records, or what a library holds, as a new signed version of a feed (JETCARP pack format 1.0): tables, indexes, manifest, signature, ref',
  options: z.object({
    ...versionOptions,
    signerCmd: z.string().min(1).optional().describe('sign through this command instead of reading the key (run by /bin/sh): it prints the armored SSH signature of the bytes on its stdin in namespace $PIPE_SIGN_NAMESPACE, as `ssh-keygen -Y sign -f KEY.pub -n "$PIPE_SIGN_NAMESPACE"` does with the key in an agent or a token; the key\'s .pub and statements are read from --key\'s path'),
    views: z.boolean().default(false).describe('write views.sql in the store: DuckDB views over the new version\'s tables (not part of the format)'),
  }),
  stages(o) {
    if (o.views && isObjectStoreUrl(o.to)) throw new UsageError('usage.bad-option', 'views.sql is written into a store folder, not a bucket', { location: { field: '--views' } })
    const { views, signerCmd, ...version } = o
    const key = o.key ?? defaultPublisherKeyPath()
    return [
      { stage: 'pack-version', options: { ...version, publicOnly: signerCmd !== undefined } },
      { stage: 'sign', options: { format: 'ssh', ...(signerCmd === undefined ? { key } : { signerCmd, publicKey: `${key}.pub` }) } },
      { stage: 'pack-commit', options: { views } },
    ]
  },
})

/** Registers the pack-version stage and the pack-publish pipeline. */
export function registerPackPublish(registry: Registry): void {
  registry.addStage(packVersionStage as unknown as StageDef)
  registry.addPipeline(packPublishPipeline as unknown as PipelineDef)
}

import { stat } from 'node:fs/promises'
import { z } from 'zod'
import { PipeError, UsageError } from '../src/core/errors.js'
import { definePipeline, type PipelineDef } from '../src/core/pipeline.js'
import type { Registry } from '../src/core/registry.js'
import { defineStage, type StageDef } from '../src/core/stage.js'
import { VERSION } from '../src/core/version.js'

const RETRACTION = /^([^=]+)=(.*)$/s

/**
 * The source of `pipe run pack-publish`: publishes the records, or what a library holds (--from-library), as
 * a new version and yields one item, the manifest hash (so the run's summary counts one version); the rest
 * goes to the summary.
 */
export const packPublishStage = defineStage({
  name: 'pack-publish',
  kind: 'source',
  summary: 'Publishes records (docs/pack-records.md), or what the library holds, as a new signed version of a feed in a JETCARP store',
  takes: 'none',
  gives: 'any',
  options: z.object({
    feed: z.string().min(1).describe('the feed: 1 to 64 letters, digits and -'),
    to: z.string().min(1).describe('the store (created when missing)'),
    records: z.string().min(1).optional().describe('the records folder: <table>.jsonl files, pack.json, media files, searches/ (or --from-library)'),
    fromLibrary: z.string().min(1).optional().describe('publish what this library holds instead of a records folder: its rows as consent and retractions allow (docs/library.md)'),
    id: z.array(z.string().min(1)).default([]).describe('with --from-library: a record to publish, by content id (a pattern\'s id, ant-..., qs-...), with its events, tilings, rules and media; repeat for several'),
    query: z.string().min(1).optional().describe('with --from-library: records whose columns have these values, {"table":"patterns","where":{"class":"spaceship","period":[3,4]}}'),
    searches: z.boolean().default(true).describe('with --from-library, --no-searches leaves out ratings of search runs (the library holds no search runs)'),
    views: z.boolean().default(false).describe('write views.sql in the store: DuckDB views over the new version\'s tables (not part of the format)'),
    key: z.string().min(1).optional().describe('the publisher key made by `pipe pack key` (default: the one in the settings directory)'),
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
    // The library's modules (SQLite among them) are loaded only to publish from one.
    const fromLibrary = o.fromLibrary === undefined ? undefined : await import('../src/library/library-publish.js')
    const query = o.query === undefined ? undefined : fromLibrary!.parseLibraryQuery(o.query)
    const [{ publishPack }, publisherKeys] = await Promise.all([import('../src/formats/pack/publish/publish.js'), import('../src/formats/pack/keys/publisher-key.js')])
    const { loadPublisherKey, defaultPublisherKeyPath } = publisherKeys
    const path = o.key ?? defaultPublisherKeyPath()
    const publisher = await loadPublisherKey(path).catch((err: unknown) => {
      throw new UsageError(err instanceof PipeError ? err.code : 'usage.key', `--key: ${(err as Error).message}`, { location: { file: path } })
    })
    return (async function* () {
      const version = {
        feed: o.feed, store: o.to, key: publisher.key, statements: publisher.statements, publisherId: publisher.publisherId,
        created: o.created ?? publisherKeys.packTimeNow(), merge: o.merge, retract, engineVersion: VERSION,
      }
      let r
      if (fromLibrary) {
        const published = await fromLibrary.publishFromLibrary({ ...version, library: o.fromLibrary!, selection: { ids: o.id, ...(query ? { query } : {}), searches: o.searches } })
        const left = published.library
        ctx.summary.from_library = {
          records: left.records, retracted: left.retracted, ratings_withheld: left.ratingsWithheld, score_models_withheld: left.scoreModelsWithheld,
          notes_stripped: left.notesStripped, search_run_ratings: left.searchRunRatings,
        }
        r = published
      } else {
        r = await publishPack({ ...version, records: o.records! })
      }
      Object.assign(ctx.summary, { manifest: r.manifest, seq: r.seq, parents: r.parents, new_parts: r.newParts, stats: r.stats, ...(r.notes.length > 0 ? { notes: r.notes } : {}) })
      if (o.views) {
        const { writeStoreViews } = await import('../src/formats/pack/publish/store-views.js')
        ctx.summary.views = await writeStoreViews(o.to, r.manifest)
      }
      yield r.manifest
    })()
  },
})

export const packPublishPipeline = definePipeline({
  name: 'pack-publish',
  summary: 'Publish records, or what a library holds, as a new signed version of a feed (JETCARP pack format 1.0): tables, indexes, manifest, signature, ref',
  options: packPublishStage.options,
  stages(o) {
    return [{ stage: 'pack-publish', options: o }, { stage: 'report', options: { field: 'versions' } }]
  },
})

/** Registers the pack-publish stage and pipeline. */
export function registerPackPublish(registry: Registry): void {
  registry.addStage(packPublishStage as unknown as StageDef)
  registry.addPipeline(packPublishPipeline as unknown as PipelineDef)
}


import { stat } from 'node:fs/promises'
import { z } from 'zod'
import { PipeError, UsageError } from '../src/core/errors.js'
import { definePipeline, type PipelineDef } from '../src/core/pipeline.js'
import type { Registry } from '../src/core/registry.js'
import { defineStage, type StageDef } from '../src/core/stage.js'
import { VERSION } from '../src/core/version.js'

const RETRACTION = /^([^=]+)=(.*)$/s

/**
 * The source of `pipe run pack-publish`: publishes the records as a new version and yields one item, the
 * manifest hash (so the run's summary counts one version); the rest goes to the summary.
 */
export const packPublishStage = defineStage({
  name: 'pack-publish',
  kind: 'source',
  summary: 'Publishes records (docs/pack-records.md) as a new signed version of a feed in a JETCARP store',
  takes: 'none',
  gives: 'any',
  options: z.object({
    feed: z.string().min(1).describe('the feed: 1 to 64 letters, digits and -'),
    to: z.string().min(1).describe('the store (created when missing)'),
    records: z.string().min(1).describe('the records folder: <table>.jsonl files, pack.json, media files, searches/'),
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
    const info = await stat(o.records).catch(() => null)
    if (!info?.isDirectory()) throw new UsageError('usage.no-records', '--records: not a directory', { location: { file: o.records } })
    const [{ publishPack }, publisherKeys] = await Promise.all([import('../src/formats/pack/publish/publish.js'), import('../src/formats/pack/keys/publisher-key.js')])
    const { loadPublisherKey, defaultPublisherKeyPath } = publisherKeys
    const path = o.key ?? defaultPublisherKeyPath()
    const publisher = await loadPublisherKey(path).catch((err: unknown) => {
      throw new UsageError(err instanceof PipeError ? err.code : 'usage.key', `--key: ${(err as Error).message}`, { location: { file: path } })
    })
    return (async function* () {
      const r = await publishPack({
        feed: o.feed, store: o.to, records: o.records, key: publisher.key, statements: publisher.statements, publisherId: publisher.publisherId,
        created: o.created ?? publisherKeys.packTimeNow(), merge: o.merge, retract, engineVersion: VERSION,
      })
      Object.assign(ctx.summary, { manifest: r.manifest, seq: r.seq, parents: r.parents, new_parts: r.newParts, stats: r.stats, ...(r.notes.length > 0 ? { notes: r.notes } : {}) })
      yield r.manifest
    })()
  },
})

export const packPublishPipeline = definePipeline({
  name: 'pack-publish',
  summary: 'Publish records as a new signed version of a feed (JETCARP pack format 1.0): tables, indexes, manifest, signature, ref',
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


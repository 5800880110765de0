import { z } from 'zod'
import { definePipeline, type PipelineDef } from '../src/core/pipeline.js'
import type { Registry } from '../src/core/registry.js'
import { defineStage, type StageContext, type StageDef } from '../src/core/stage.js'

const common = {
  src: z.string().min(1, 'name the pack: a store or export folder, an uncompressed tar of one, an http(s) URL or an s3:// location').describe('a store or export folder, an uncompressed tar of one, the http(s) URL of a store or export on a static host, or its s3://BUCKET/PREFIX in object storage'),
  library: z.string().min(1).describe('the library database (made when it does not exist)'),
  verify: z.enum(['none', 'sample', 'full']).default('sample').describe('none: checks to level 2 (signatures, hashes, ids, pins) before anything is stored; sample: and a sample of the new patterns replayed (seeded by the manifest hash); full: every replayable pattern replayed'),
  sample: z.number().int().min(1).default(3000).describe('new patterns the sample replays'),
  sampleBudgetS: z.number().positive().default(120).describe('the sample\'s time budget in seconds: patterns past it are kept as unchecked'),
  allowUnsigned: z.boolean().default(false).describe('take a version that no signature of its publisher makes signed (one that does not verify is still refused)'),
  strict: z.boolean().default(false).describe('a record the library holds must come again identical; one with other values refuses the pack'),
  concurrency: z.number().int().min(1).max(64).default(4).describe('from a URL: fetches at once'),
  timeoutS: z.number().positive().default(300).describe('from a URL: each file\'s deadline in seconds, retries included'),
}

const options = z.object({
  ...common,
  feed: z.string().min(1).optional().describe('the feed whose newest version is imported (default: the store\'s only feed; needed for a store over HTTP)'),
  manifest: z.string().min(1).optional().describe('the manifest hash of the version to import, instead of the feed\'s newest'),
})

const followOptions = z.object({
  ...common,
  feed: z.string().min(1).describe('the feed to follow'),
})

/**
 * The source of `pipe run pack-import`: checks one version of a store and merges it into the library in
 * one transaction; yields the manifest hash, the counts go to the summary.
 */
export const packImportStage = defineStage({
  name: 'pack-import',
  kind: 'source',
  summary: 'Checks one version of a pack store and merges it into the library in one transaction (all or nothing)',
  takes: 'none',
  gives: 'any',
  options,
  create(o, ctx) {
    return importRun({ ...o, follow: false }, ctx)
  },
})

/** The source of `pipe run pack-follow`: pack-import through the feed's ref, as a follower (no rollback). */
export const packFollowStage = defineStage({
  name: 'pack-follow',
  kind: 'source',
  summary: 'Follows a feed: checks its ref\'s signature and seq against the library\'s last accepted (no rollback), then imports the new version',
  takes: 'none',
  gives: 'any',
  options: followOptions,
  create(o, ctx) {
    return importRun({ ...o, follow: true }, ctx)
  },
})

async function importRun(o: z.infer<typeof options> & { follow: boolean }, ctx: StageContext): Promise<AsyncIterable<unknown>> {
  // Loaded here: the import pulls in the checker, the Parquet reader and SQLite, which other commands need not load.
  const { importPack } = await import('../src/library/pack-import.js')
  return (async function* () {
    const r = await importPack({
      from: o.src, library: o.library, ...(o.feed !== undefined ? { feed: o.feed } : {}), ...(o.manifest !== undefined ? { manifest: o.manifest } : {}),
      verify: o.verify, sample: o.sample, sampleBudgetMs: o.sampleBudgetS * 1000, follow: o.follow, allowUnsigned: o.allowUnsigned, strict: o.strict,
      fetch: { concurrency: o.concurrency, timeoutMs: o.timeoutS * 1000 }, signal: ctx.signal,
    })
    Object.assign(ctx.summary, {
      manifest: r.manifest, feed: r.feed, source: r.source, already_imported: r.already, facts_added: r.factsAdded, events_added: r.eventsAdded,
      objects_added: r.objectsAdded, retractions_added: r.retractionsAdded, facts_differing: r.factsDiffering, rows_skipped: r.rowsSkipped,
      needs_reverify: r.needsReverify, ...(r.sample ? { sample: r.sample } : {}), ...(r.follow ? { follow: r.follow } : {}), ...(r.fetched ? { fetched: r.fetched } : {}),
    })
    yield r.manifest
  })()
}

/** `pipe run pack-import SRC --library DB [--feed NAME | --manifest HASH] [--verify sample|full|none] [--sample N] [--allow-unsigned] [--strict] [--json]`. */
export const packImportPipeline = definePipeline({
  name: 'pack-import',
  summary: 'Import one version of a pack (a store, an export, a tar of one, or a URL) into the library: checked (signatures, hashes, ids, pins; a sample replayed), then merged by content id in one transaction',
  options,
  positional: ['src'],
  stages(o) {
    return [{ stage: 'pack-import', options: o }, { stage: 'report', options: { field: 'versions' } }]
  },
})

/** `pipe run pack-follow URL|DIR --feed NAME --library DB`. */
export const packFollowPipeline = definePipeline({
  name: 'pack-follow',
  summary: 'Follow a feed into the library: its ref checked (signature, and a seq that moves on: no rollback), then the new version imported as pack-import does',
  options: followOptions,
  positional: ['src'],
  stages(o) {
    return [{ stage: 'pack-follow', options: o }, { stage: 'report', options: { field: 'versions' } }]
  },
})

export function registerPackImport(registry: Registry): void {
  registry.addStage(packImportStage as unknown as StageDef)
  registry.addPipeline(packImportPipeline as unknown as PipelineDef)
  registry.addStage(packFollowStage as unknown as StageDef)
  registry.addPipeline(packFollowPipeline as unknown as PipelineDef)
}

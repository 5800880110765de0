import { z } from 'zod'
import { definePipeline, type PipelineDef } from '../src/core/pipeline.js'
import type { Registry } from '../src/core/registry.js'
import { defineStage, type StageDef } from '../src/core/stage.js'

const options = z.object({
  src: z.string().min(1, 'name the store to import: pipe run pack-import STORE --library DB').describe('the store folder (jetcarp-store.json, refs/, objects/, ...)'),
  library: z.string().min(1).describe('the library database (made when it does not exist)'),
  feed: z.string().min(1).optional().describe('the feed whose newest version is imported (default: the store\'s only feed)'),
  manifest: z.string().min(1).optional().describe('the manifest hash of the version to import, instead of the feed\'s newest'),
  verify: z.enum(['none', 'full']).default('none').describe('none: checks to level 2 (signatures, hashes, ids, pins) before anything is stored; full: level 3 too, every replayable pattern replayed'),
  allowUnsigned: z.boolean().default(false).describe('take a version that no signature of its publisher makes signed (one that does not verify is still refused)'),
  strict: z.boolean().default(false).describe('a record the library holds must come again identical; one with other values refuses the pack'),
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
  async create(o, ctx) {
    // Loaded here: the import pulls in the checker, the Parquet reader and SQLite, which other commands need not load.
    const { importPack } = await import('../src/library/pack-import.js')
    return (async function* () {
      const r = await importPack({ from: o.src, library: o.library, ...(o.feed !== undefined ? { feed: o.feed } : {}), ...(o.manifest !== undefined ? { manifest: o.manifest } : {}), verify: o.verify, allowUnsigned: o.allowUnsigned, strict: o.strict, signal: ctx.signal })
      Object.assign(ctx.summary, {
        manifest: r.manifest, feed: r.feed, already_imported: r.already, facts_added: r.factsAdded, events_added: r.eventsAdded,
        objects_added: r.objectsAdded, retractions_added: r.retractionsAdded, facts_differing: r.factsDiffering, rows_skipped: r.rowsSkipped,
      })
      yield r.manifest
    })()
  },
})

/** `pipe run pack-import STORE --library DB [--feed NAME | --manifest HASH] [--verify none|full] [--allow-unsigned] [--strict] [--json]`. */
export const packImportPipeline = definePipeline({
  name: 'pack-import',
  summary: 'Import one version of a pack store into the library: checked (signatures, hashes, ids, pins; replay with --verify full), then merged by content id in one transaction',
  options,
  positional: ['src'],
  stages(o) {
    return [{ stage: 'pack-import', options: o }, { stage: 'report', options: { field: 'versions' } }]
  },
})

export function registerPackImport(registry: Registry): void {
  registry.addStage(packImportStage as unknown as StageDef)
  registry.addPipeline(packImportPipeline as unknown as PipelineDef)
}

import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { z } from 'zod'
import { definePipeline, type PipelineDef } from '../src/core/pipeline.js'
import type { Registry } from '../src/core/registry.js'
import { defineStage, type StageDef } from '../src/core/stage.js'
import { isObjectStoreUrl } from '../src/storage/storage.js'

/**
 * The source of `pipe run pack-export`: lays one version of a store out as an export and yields one
 * item, the manifest hash (so the run counts one version); the files, links and copies go to the summary.
 */
export const packExportStage = defineStage({
  name: 'pack-export',
  kind: 'source',
  summary: 'Lays one version of a JETCARP store out as an export (readable names, hard links or copies), all or nothing',
  takes: 'none',
  gives: 'any',
  options: z.object({
    from: z.string().min(1).describe('the store: a folder, or s3://BUCKET/PREFIX'),
    to: z.string().min(1).describe('the export\'s folder: new, or empty'),
    feed: z.string().min(1).optional().describe('the feed whose newest version is exported (default: the store\'s only feed)'),
    manifest: z.string().min(1).optional().describe('the manifest hash of the version to export, instead of the feed\'s newest'),
    copy: z.boolean().default(false).describe('copy the data files instead of hard-linking them to the store\'s objects'),
  }),
  async create(o, ctx) {
    // Loaded here: the export pulls in the Parquet reader, which other commands need not load.
    const { exportPack } = await import('../src/formats/pack/export/export.js')
    return (async function* () {
      // A store in a bucket is fetched into a folder beside the export (so the export's files can be hard
      // links to it), exported from there as from any store, and removed.
      let from = o.from
      let work: string | undefined
      if (isObjectStoreUrl(o.from)) {
        const [{ openStorage }, { fetchFolder }] = await Promise.all([import('../src/storage/storage.js'), import('../src/storage/folders.js')])
        const parent = dirname(resolve(o.to))
        await mkdir(parent, { recursive: true })
        work = await mkdtemp(join(parent, '.pipe-export-from-'))
        from = join(work, 'store')
        await mkdir(from)
        ctx.summary.fetched = await fetchFolder(await openStorage(o.from), from, ctx.signal)
      }
      let r
      try {
        r = await exportPack({ ...o, from, signal: ctx.signal })
      } finally {
        if (work !== undefined) await rm(work, { recursive: true, force: true })
      }
      Object.assign(ctx.summary, { manifest: r.manifest, feed: r.feed, files: r.files, linked: r.linked, copied: r.copied, bytes: r.bytes })
      yield r.manifest
    })()
  },
})

/** `pipe run pack-export --from STORE --to DIR [--feed NAME] [--manifest HASH] [--copy]`. */
export const packExportPipeline = definePipeline({
  name: 'pack-export',
  summary: 'Export one version of a pack store for a single download: pack.json, index/, tables/, media/, sigs/, keys/, LICENSE, README.md, CITATION.cff',
  options: packExportStage.options,
  stages(o) {
    return [{ stage: 'pack-export', options: o }, { stage: 'report', options: { field: 'versions' } }]
  },
})

/** Registers the pack-export stage and pipeline. */
export function registerPackExport(registry: Registry): void {
  registry.addStage(packExportStage as unknown as StageDef)
  registry.addPipeline(packExportPipeline as unknown as PipelineDef)
}

import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { z } from 'zod'
import { UsageError } from '../src/core/errors.js'
import { definePipeline, type PipelineDef } from '../src/core/pipeline.js'
import type { Registry } from '../src/core/registry.js'
import { defineStage, type StageContext, type StageDef } from '../src/core/stage.js'
import { isObjectStoreUrl } from '../src/storage/storage.js'
import type { CheckLevel } from '../src/formats/pack/check/check.js'

const LEVEL_MESSAGE = 'must be a conformance level: 0, 1, 2 or 3'
const DIR_MESSAGE = 'name the store or export to check: pipe run pack-check DIR'

const options = z.object({
  dir: z.string({ error: DIR_MESSAGE }).min(1, DIR_MESSAGE).describe('the store (jetcarp-store.json, refs/, objects/, ...) or export (pack.json, index/, tables/, ...) to check: a folder, or s3://BUCKET/PREFIX'),
  level: z.number({ error: LEVEL_MESSAGE }).int(LEVEL_MESSAGE).min(0, LEVEL_MESSAGE).max(3, LEVEL_MESSAGE).default(3)
    .describe('check levels 0 to this one: 0 documents and rows, 1 hashes, ids and pins, 2 signatures and keys, 3 replay'),
  allObjects: z.boolean().default(false).describe('also hash every file under a store\'s objects/, not only those its versions name: a stray object is found (a full fsck; level 1 and up)'),
})

/**
 * The source of `pipe run pack-check`: runs the checker over the folder. Failures go to the run's sink (so
 * any makes the run fail); notes go to it as notes (printed in the text report, the run stays ok) and
 * flow on as items, which the report stage counts as `notes`, and their codes are counted in `note_codes`.
 */
export const checkPackStage = defineStage({
  name: 'check-pack',
  kind: 'source',
  summary: 'Checks a pack store or export at conformance levels 0 to N; failures go to the run, notes flow on as items',
  takes: 'none',
  gives: 'any',
  options,
  async create(o, ctx) {
    // A store or export in a bucket is fetched whole into a local folder (a check of a store reads every
    // object anyway), checked there, and removed; findings name the objects.
    if (isObjectStoreUrl(o.dir)) {
      const [{ openStorage }, { fetchFolder }] = await Promise.all([import('../src/storage/storage.js'), import('../src/storage/folders.js')])
      const work = await mkdtemp(join(tmpdir(), '.pipe-check-'))
      const remove = () => rm(work, { recursive: true, force: true })
      ctx.onFailure(remove)
      const dir = join(work, 'pack')
      await mkdir(dir)
      const fetched = await fetchFolder(await openStorage(o.dir), dir, ctx.signal)
      Object.assign(ctx.summary, { fetched })
      const named = (text: string) => text.split(dir).join(o.dir.replace(/\/+$/, ''))
      const checked = await checkFolder({ ...o, dir }, ctx, named)
      return (async function* () {
        try {
          yield* checked
        } finally {
          await remove()
        }
      })()
    }
    return checkFolder(o, ctx, (text) => text)
  },
})

/** The check of a folder; `named` gives a text that names a file in it as the user named the pack. */
async function checkFolder(o: z.infer<typeof options>, ctx: StageContext, named: (text: string) => string): Promise<AsyncIterable<unknown>> {
  const info = await stat(o.dir).catch((err: NodeJS.ErrnoException) => {
    throw new UsageError(`env.${(err.code ?? 'io').toLowerCase()}`, `--dir: cannot read: ${err.code === 'ENOENT' ? 'no such directory' : err.message}`, { location: { file: o.dir } })
  })
  if (!info.isDirectory()) throw new UsageError('env.not-a-directory', '--dir: not a directory', { location: { file: o.dir } })
  // Loaded here: the checks pull in the Parquet, zstd and signature code that other commands need not load.
  // The threads start first, to load the checker alongside this thread.
  const { startThreads } = await import('../src/formats/pack/check/check-pool.js')
  // This thread checks parts too (check-pool.ts): one thread fewer than the CPUs.
  startThreads(availableParallelism() - 1)
  const { PackChecker, packKind, NOT_A_PACK } = await import('../src/formats/pack/check/check.js')
  const kind = await packKind(o.dir)
  if (kind === undefined) throw new UsageError(NOT_A_PACK, '--dir: neither a store (jetcarp-store.json) nor an export (pack.json)', { location: { file: o.dir } })
  Object.assign(ctx.summary, { level: o.level, kind })
  const checker = new PackChecker(o.dir, { level: o.level as CheckLevel, signal: ctx.signal, allObjects: o.allObjects })
  return (async function* () {
    const noteCodes: Record<string, number> = {}
    for await (const { note, ...found } of checker.run()) {
      const issue = { ...found, target: named(found.target), detail: named(found.detail) }
      if (!note) {
        ctx.findings.add(issue)
        continue
      }
      noteCodes[issue.code] = (noteCodes[issue.code] ?? 0) + 1
      ctx.findings.note(issue)
      yield issue
    }
    const { manifests, indexes, parts, rows, objects, replay } = checker.stats!
    Object.assign(ctx.summary, { manifests, indexes, parts, rows, objects, replay, note_codes: noteCodes })
  })()
}

/** `pipe run pack-check DIR [--level N] [--all-objects] [--json]`. */
export const packCheckPipeline = definePipeline({
  name: 'pack-check',
  summary: 'Check a pack store or export (pack format 1.0) at conformance levels 0 to 3: documents and rows, hashes, ids and pins, signatures and keys, replay',
  options,
  positional: ['dir'],
  stages(o) {
    return [
      { stage: 'check-pack', options: { dir: o.dir, level: o.level, allObjects: o.allObjects } },
      { stage: 'report', options: { field: 'notes' } },
    ]
  },
  formatFinding: (f) => `${String(f.target)}: ${f.code} [level ${String(f.level)}]: ${f.detail}`,
  // Published in the issue that defined pack-check; the notes and counts stay in the text report.
  jsonReport: {
    finding: (f) => ({ level: f.level, code: f.code, target: f.target, detail: f.detail }),
    summary: ['level'],
  },
})

/** Registers the pack-check stage and pipeline. */
export function registerPackCheck(registry: Registry): void {
  registry.addStage(checkPackStage as unknown as StageDef)
  registry.addPipeline(packCheckPipeline as unknown as PipelineDef)
}

import { z } from 'zod'
import { UsageError } from '../core/errors.js'
import { defineStage } from '../core/stage.js'
import { landStaged, stagedFolder } from '../storage/folders.js'

const unpaired = (name: string, without: string) => new UsageError('pack.not-signed', `${name} came without ${without}: keep pack-version's documents together; nothing of it was published`)

/**
 * The last step of a pack publish: once a version's manifest and ref are both signed, lands the manifest
 * object, its signature, the publisher's key statements and the ref, in that order, each signature checked
 * first to be the publisher key's in its namespace; with `views`, writes views.sql for the new version.
 */
export const packCommitSink = defineStage({
  name: 'pack-commit',
  kind: 'sink',
  summary: 'Lands signed pack versions (JETCARP pack format): manifest, its signature, key statements, then the ref',
  takes: 'documents',
  gives: 'none',
  options: z.object({
    views: z.boolean().default(false).describe('write views.sql in the store: DuckDB views over the new version\'s tables (not part of the format)'),
  }),
  create(o, ctx) {
    return async (source: AsyncIterable<unknown>) => {
      const { PackDraftDocument, commitPack } = await import('../formats/pack/publish/publish.js')
      let manifest: InstanceType<typeof PackDraftDocument> | undefined
      let versions = 0
      for await (const item of source) {
        if (!(item instanceof PackDraftDocument)) throw new UsageError('usage.item-type', `${ctx.stage} takes the manifests and refs pack-version draws up`)
        if (item.namespace === 'jetcarp-manifest') {
          if (manifest) throw unpaired(manifest.name, 'its ref')
          manifest = item
          continue
        }
        if (manifest?.draft !== item.draft) throw unpaired(item.name, 'its manifest')
        if (manifest.signature === undefined || item.signature === undefined) throw new UsageError('pack.not-signed', `${manifest.signature === undefined ? manifest.name : item.name} reached the commit unsigned: put sign before pack-commit`)
        // Stopped while signing (a token waiting for a touch): nothing lands after the user was told so.
        ctx.signal.throwIfAborted()
        const r = await commitPack(item.draft, manifest.signature, item.signature)
        manifest = undefined
        // A store in a bucket: the version was committed into a local copy of it, and lands now.
        const staged = stagedFolder(item.draft.store)
        if (staged) {
          ctx.summary.landed = (await landStaged(staged)).length
          ctx.summary.store = staged.storage.location
          await staged.remove()
        }
        versions++
        if (o.views) {
          const { writeStoreViews } = await import('../formats/pack/publish/store-views.js')
          ctx.summary.views = await writeStoreViews(item.draft.store, r.manifest)
        }
      }
      if (manifest) throw unpaired(manifest.name, 'its ref')
      ctx.summary.versions = versions
    }
  },
})

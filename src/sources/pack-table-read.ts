import { resolve } from 'node:path'
import { z } from 'zod'
import { UsageError } from '../core/errors.js'
import { RowBatch, type Row } from '../core/items.js'
import { defineStage } from '../core/stage.js'
import { PACK_TABLES, type PackTableName } from '../formats/pack/tables/table-schemas.js'

const BATCH_ROWS = 4096
const TABLE_NAMES = Object.keys(PACK_TABLES) as [PackTableName, ...PackTableName[]]

export const packTableReadSource = defineStage({
  name: 'pack-table-read',
  kind: 'source',
  summary: 'Reads one table of a version in a JETCARP pack store, part by part in index order, each part hash-checked before a row of it is given',
  takes: 'none',
  gives: 'rows',
  options: z.object({
    store: z.string().min(1).describe('the store folder (holding jetcarp-store.json)'),
    table: z.enum(TABLE_NAMES).describe('the table to read'),
    feed: z.string().min(1).optional().describe('the feed whose current version is read; needed when the store has more than one'),
    manifest: z.string().min(1).optional().describe('read this version (sha256:...) instead of the feed\'s current one'),
  }),
  async create(o) {
    // Loaded here: the pack's store and Parquet readers, which other commands need not load.
    const [{ storeIndexLoader }, { checkStore, chooseManifest, storeTableRows }, { plain }] = await Promise.all([
      import('../formats/pack/documents/store.js'), import('../formats/pack/export/export.js'), import('./parquet-rows.js'),
    ])
    const from = resolve(o.store)
    await checkStore(from)
    const { hash, manifest } = await chooseManifest(from, { ...(o.feed !== undefined ? { feed: o.feed } : {}), ...(o.manifest !== undefined ? { manifest: o.manifest } : {}) })
    const root = manifest.tables[o.table]
    if (root === undefined) throw new UsageError('usage.no-table', `version ${hash} has no ${o.table} table (it has ${Object.keys(manifest.tables).sort().join(', ') || 'none'})`, { location: { field: 'table' } })
    const loader = storeIndexLoader(from)
    return (async function* () {
      let rows: Row[] = []
      for await (const row of storeTableRows(from, o.table, root, loader)) {
        rows.push(plain(row) as Row)
        if (rows.length === BATCH_ROWS) {
          yield new RowBatch(rows)
          rows = []
        }
      }
      if (rows.length > 0) yield new RowBatch(rows)
    })()
  },
})

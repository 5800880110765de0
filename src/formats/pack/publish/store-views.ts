/**
 * views.sql in a store (pipe run pack-publish --views): DuckDB views over one version's tables and search
 * runs, "optional, not part of the format" (pack format 1.0, "The store"). A store's objects are named by
 * hash, so each view lists its parts' files, relative to the store's folder: `duckdb -init views.sql`
 * from there. An export writes its own views.sql over its table folders (export.ts viewsText).
 */
import { join } from 'node:path'
import { writeFileAtomic } from '../../../core/atomic-write.js'
import { PipeError } from '../../../core/errors.js'
import { parseManifest } from '../documents/doc-manifest.js'
import { walkSearchIndex, walkTableIndex } from '../documents/index-walk.js'
import { objectPath, readDocumentObject, storeFile, storeIndexLoader } from '../documents/store.js'

export const STORE_VIEWS_FILE = 'views.sql'

/** Writes `<store>/views.sql` for the version `manifest` (replacing one an earlier version had). */
export async function writeStoreViews(store: string, manifest: string): Promise<string> {
  const path = storeFile(store, objectPath(manifest, 'json'))
  const read = await readDocumentObject(path, manifest)
  if (!read.ok) throw new PipeError(read.code, read.detail, { location: { file: path } })
  const parsed = parseManifest(read.value)
  if (!parsed.ok) throw new PipeError(parsed.code, parsed.detail, { location: { file: path } })
  const m = parsed.value.manifest
  const loader = storeIndexLoader(store)
  const views: string[] = []
  for (const table of Object.keys(m.tables).sort()) {
    const files: string[] = []
    for await (const e of walkTableIndex(m.tables[table]!, loader, { table })) if (e.kind === 'part') files.push(objectPath(e.part.object, 'parquet'))
    if (files.length > 0) views.push(view(table, files))
  }
  for (const search of Object.keys(m.searches).sort()) {
    const files: string[] = []
    for await (const e of walkSearchIndex(m.searches[search]!, loader, { search })) if (e.kind === 'segment') files.push(objectPath(e.segment.object, 'parquet'))
    if (files.length > 0) views.push(view(`search-${search}-runs`, files))
  }
  const text = [`-- DuckDB views over version ${manifest} of feed ${m.feed} (not part of the pack format). From the store's folder: duckdb -init views.sql`, ...views, ''].join('\n')
  const file = join(store, STORE_VIEWS_FILE)
  await writeFileAtomic(file, text)
  return file
}

/** A view over the listed files; the partition columns are in the files, so without Hive partitioning. */
function view(name: string, files: readonly string[]): string {
  return `CREATE OR REPLACE VIEW "${name}" AS SELECT * FROM read_parquet([${files.map((f) => `'${f}'`).join(', ')}], hive_partitioning = false);`
}

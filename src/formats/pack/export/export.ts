/**
 * Exports (pack format 1.0, "Exports"; `pipe run pack-export`): one version of a store laid out with
 * readable names for a single download. store.ts's planExport and ExportLayout give every object's
 * name; this module picks the version, adds what table rows name (reference patches, media), the
 * earlier manifests, signatures and key statements, and the files made from the manifest (LICENSE,
 * README.md, CITATION.cff) and views.sql.
 *
 * - Every object's hash (and stated size) is checked before it is linked or copied; data files are hard
 *   links to the store's objects where the file system allows, else copies (or always, with `copy`).
 * - All or nothing: the export is built in a temporary folder beside the target and renamed to it at
 *   the end, so nothing half-written ever has the target's name; a failure removes the temporary folder.
 * - Deterministic: the same store and version give the same files with the same bytes (nothing depends
 *   on the time, the machine or the paths; the generated files on the manifest alone, views.sql on the
 *   layout).
 *
 * Signatures are checked to verify over the manifest by the key their name says (a bad one stops the
 * export); whether the version is signed by its publisher is pack-check's question, not an export's.
 */
import { randomBytes } from 'node:crypto'
import { constants as fsConstants } from 'node:fs'
import { copyFile, link, lstat, mkdir, open, readdir, rename, rm, writeFile } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import { fsyncDir } from '../../../core/atomic-write.js'
import { PipeError, UsageError } from '../../../core/errors.js'
import { parseManifest, type Manifest } from '../documents/doc-manifest.js'
import { parseRef } from '../documents/doc-ref.js'
import { isFeedName, isSha256Hash, parseStoreDocument, type PackResult } from '../documents/documents.js'
import { walkTableIndex, type IndexLoader } from '../documents/index-walk.js'
import { parseKeyStatement } from '../keys/key-statements.js'
import { partRowsOrRefuse } from '../tables/parquet-read.js'
import { signerNameFromFingerprint } from '../keys/ssh-key.js'
import { NS_MANIFEST, verifySshsig } from '../keys/sshsig.js'
import {
  EXPORT_MANIFEST_PATH,
  STORE_CODES,
  STORE_DOCUMENT_PATH,
  exportKeyPath,
  exportSignaturePath,
  keyPath,
  objectPath,
  planExport,
  readDocumentFile,
  readDocumentObject,
  refPath,
  storeFile,
  storeIndexLoader,
  verifyObjectFile,
  type ExportLayout,
  type ObjectExtension,
} from '../documents/store.js'
import { PACK_TABLES, type PackTableName, type TableSchema } from '../tables/table-schemas.js'

export interface ExportOptions {
  /** The store. */
  from: string
  /** The export's folder: it must not exist, or be empty. */
  to: string
  /** The feed whose newest version (its ref's manifest) is exported; by default the store's only feed. */
  feed?: string
  /** A manifest hash to export instead of a feed's newest version (its feed must be `feed`, when given). */
  manifest?: string
  /** Copy every data file, never hard-link. */
  copy?: boolean
  signal?: AbortSignal
}

export interface ExportResult {
  /** The export's folder (absolute). */
  dir: string
  manifest: string
  feed: string
  /** Every file of the export. */
  files: number
  /** Objects hard-linked to the store's, and copied. */
  linked: number
  copied: number
  /** Bytes of the objects, linked or copied. */
  bytes: number
}

function fromStore<T>(r: PackResult<T>, where?: string): T {
  if (!r.ok) throw new PipeError(r.code, where === undefined ? r.detail : `${where}: ${r.detail}`)
  return r.value
}

/** Lays the chosen version of the store out at `to` (see the module comment). */
export async function exportPack(opts: ExportOptions): Promise<ExportResult> {
  const from = resolve(opts.from)
  const to = resolve(opts.to)
  await checkStore(from)
  await checkTarget(to)
  const { hash, bytes: manifestBytes, manifest } = await chooseManifest(from, opts)
  const loader = storeIndexLoader(from)
  const history = await readHistory(from, hash, manifest)
  const layout = await planExport({ manifest, hash }, loader, { history })
  // Object hash -> size, once checked.
  const verified = new Map<string, number>()
  await addRowFiles(from, manifest, loader, layout, verified)
  const signatures = await readSignatures(from, hash, manifestBytes)
  const keys = await readKeyStatements(from, [signerNameFromFingerprint(manifest.publisher)!, ...signatures.keys()])

  const tmp = join(dirname(to), `.${basename(to)}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`)
  await mkdir(dirname(to), { recursive: true })
  await mkdir(tmp)
  try {
    const folders = new Set<string>([tmp])
    const place = async (rel: string): Promise<string> => {
      const file = join(tmp, ...rel.split('/'))
      for (let d = dirname(file); d !== tmp && !folders.has(d); d = dirname(d)) folders.add(d)
      await mkdir(dirname(file), { recursive: true })
      return file
    }
    const result: ExportResult = { dir: to, manifest: hash, feed: manifest.feed, files: 0, linked: 0, copied: 0, bytes: 0 }
    let linksWork = opts.copy !== true
    for (const entry of [...layout.entries()].sort((a, b) => (a.path < b.path ? -1 : 1))) {
      opts.signal?.throwIfAborted()
      const source = storeFile(from, objectPath(entry.hash, extensionOf(entry.path)))
      let bytes = verified.get(entry.hash)
      if (bytes === undefined) {
        bytes = fromStore(await verifyObjectFile(source, entry.hash, entry.bytes !== undefined ? { bytes: entry.bytes } : {}), entry.path).bytes
        verified.set(entry.hash, bytes)
      }
      const dest = await place(entry.path)
      if (linksWork) linksWork = await tryLink(source, dest)
      if (linksWork) result.linked++
      else {
        await copyFile(source, dest, fsConstants.COPYFILE_EXCL)
        await syncFile(dest)
        result.copied++
      }
      result.bytes += bytes
      result.files++
    }
    const written = new Map<string, Uint8Array | string>()
    for (const [signer, sig] of signatures) written.set(exportSignaturePath(signer), sig)
    for (const [signer, statement] of keys) written.set(exportKeyPath(signer), statement)
    written.set('LICENSE', licenceText(manifest, hash))
    written.set('README.md', readmeText(manifest, hash))
    written.set('CITATION.cff', citationText(manifest, hash))
    written.set('views.sql', viewsText(layout))
    for (const [rel, data] of written) {
      const dest = await place(rel)
      await writeFile(dest, data, { flag: 'wx' })
      await syncFile(dest)
      result.files++
    }
    // Deepest first, so that each folder's entries are durable before the folder that names it.
    for (const folder of [...folders].sort((a, b) => b.length - a.length)) await fsyncDir(folder)
    opts.signal?.throwIfAborted()
    await rename(tmp, to).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOTEMPTY' || err.code === 'EEXIST') throw targetTaken(to)
      throw err
    })
    await fsyncDir(dirname(to))
    return result
  } catch (err) {
    await rm(tmp, { recursive: true, force: true })
    throw err
  }
}

function targetTaken(to: string): UsageError {
  return new UsageError('usage.target-not-empty', `${to} exists and is not an empty folder: an export goes to a new one`, { location: { field: '--to' } })
}

/** Refuses (usage) a folder that holds no readable store document. */
export async function checkStore(from: string): Promise<void> {
  const doc = await readDocumentFile(join(from, STORE_DOCUMENT_PATH))
  if (!doc.ok || !parseStoreDocument(doc.value).ok) {
    throw new UsageError('usage.not-a-store', `${from} is not a store (no readable ${STORE_DOCUMENT_PATH})`, { location: { field: '--from' } })
  }
}

async function checkTarget(to: string): Promise<void> {
  const st = await lstat(to).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined
    throw err
  })
  if (st === undefined) return
  if (!st.isDirectory() || (await readdir(to)).length > 0) throw targetTaken(to)
}

/**
 * The version to export: `manifest` when given, else the newest version of `feed` (its ref's manifest),
 * else of the store's only feed. The manifest is read hash-checked and parsed.
 */
/** The version a store's feed refs (or `opts.manifest`), read hash-checked: what an export or an import takes. */
export async function chooseManifest(from: string, opts: Pick<ExportOptions, 'feed' | 'manifest'>): Promise<{ hash: string; bytes: Buffer; manifest: Manifest }> {
  if (opts.feed !== undefined && !isFeedName(opts.feed)) {
    throw new UsageError('usage.bad-option', `${JSON.stringify(opts.feed)} is not a feed name (1 to 64 letters, digits and -)`, { location: { field: '--feed' } })
  }
  let hash = opts.manifest
  if (hash !== undefined) {
    if (!isSha256Hash(hash)) throw new UsageError('usage.bad-option', `${JSON.stringify(hash)} is not sha256: and 64 lower-case hex digits`, { location: { field: '--manifest' } })
  } else {
    const feed = opts.feed ?? (await onlyFeed(from))
    const bytes = await readDocumentFile(storeFile(from, refPath(feed)))
    if (!bytes.ok && bytes.code === STORE_CODES.objectMissing) {
      throw new UsageError('usage.no-such-feed', `the store has no feed ${feed} (no ${refPath(feed)})`, { location: { field: '--feed' } })
    }
    hash = fromStore(parseRef(fromStore(bytes, refPath(feed)), { feed }), refPath(feed)).ref.manifest
  }
  const bytes = fromStore(await readDocumentObject(storeFile(from, objectPath(hash, 'json')), hash), 'manifest')
  const manifest = fromStore(parseManifest(bytes), `manifest ${hash}`).manifest
  if (opts.feed !== undefined && manifest.feed !== opts.feed) {
    throw new UsageError('usage.feed-mismatch', `manifest ${hash} is a version of feed ${manifest.feed}, not ${opts.feed}`, { location: { field: '--feed' } })
  }
  return { hash, bytes, manifest }
}

async function onlyFeed(from: string): Promise<string> {
  const names = await readdir(join(from, 'refs')).catch(() => [] as string[])
  const feeds = names.filter((n) => n.endsWith('.json') && isFeedName(n.slice(0, -5))).map((n) => n.slice(0, -5)).sort()
  if (feeds.length === 1) return feeds[0]!
  if (feeds.length === 0) throw new UsageError('usage.no-feed', `the store at ${from} has no feed (refs/ holds no ref): name a version with --manifest`, { location: { field: '--from' } })
  throw new UsageError('usage.feed-needed', `the store has ${feeds.length} feeds (${feeds.join(', ')}): name one with --feed`, { location: { field: '--feed' } })
}

/**
 * The earlier manifests the store has: the parents, their parents and so on, each read hash-checked. A
 * parent the store lacks is history it does not have (skipped), and so is a parent named by another
 * algorithm's hash; one whose bytes do not hash to its name stops the export. A parent that is not a
 * manifest this reader can parse (a later major version) is kept, but its own parents are not followed.
 */
async function readHistory(from: string, hash: string, manifest: Manifest): Promise<string[]> {
  const found: string[] = []
  const seen = new Set([hash])
  const queue = [...manifest.parents]
  for (let h = queue.shift(); h !== undefined; h = queue.shift()) {
    if (seen.has(h) || !isSha256Hash(h)) continue
    seen.add(h)
    const read = await readDocumentObject(storeFile(from, objectPath(h, 'json')), h)
    if (!read.ok && read.code === STORE_CODES.objectMissing) continue
    const bytes = fromStore(read, `parent ${h}`)
    found.push(h)
    const parsed = parseManifest(bytes)
    if (parsed.ok) queue.push(...parsed.value.manifest.parents)
  }
  return found
}

/**
 * Every row of a table's parts under the index `root`, in index order, each part hash-checked before it is
 * read (and remembered in `verified` as checked).
 */
export async function* storeTableRows(from: string, table: PackTableName, root: string, loader: IndexLoader, verified = new Map<string, number>()): AsyncGenerator<Record<string, unknown>> {
  const schema: TableSchema = PACK_TABLES[table]
  for await (const e of walkTableIndex(root, loader, { table })) {
    if (e.kind !== 'part') continue
    const path = storeFile(from, objectPath(e.part.object, 'parquet'))
    fromStore(await verifyObjectFile(path, e.part.object, { bytes: e.part.bytes }), `${table} part`)
    verified.set(e.part.object, e.part.bytes)
    yield* partRowsOrRefuse(path, schema, `${table} part ${e.part.object}`)
  }
}

/** The files table rows name: each aperiodic family's reference patch (tilings.reference) and each media file. */
async function addRowFiles(from: string, manifest: Manifest, loader: IndexLoader, layout: ExportLayout, verified: Map<string, number>): Promise<void> {
  const tilings = manifest.tables.tilings
  if (tilings !== undefined) {
    for await (const row of storeTableRows(from, 'tilings', tilings, loader, verified)) {
      if (row.reference === null) continue
      if (!isSha256Hash(row.reference)) throw new PipeError('pack.hash-malformed', `tilings row ${String(row.pin_key)}: reference ${JSON.stringify(row.reference)} is not sha256: and 64 hex digits`)
      layout.addReferencePatch(String(row.family), row.reference)
    }
  }
  const media = manifest.tables.media
  if (media !== undefined) {
    for await (const row of storeTableRows(from, 'media', media, loader, verified)) {
      layout.addMedia({
        target: row.target as string,
        kind: row.kind as string,
        from_seed: row.from_seed as boolean,
        media_type: row.media_type as string,
        object: row.object as string,
        bytes: Number(row.bytes as bigint),
      })
    }
  }
}

/**
 * The manifest's signatures in the store (sigs/sha256/<aa>/<hex>/<signer>.sig), by signer, each
 * verified over the manifest by the key its file is named for; other names there are ignored.
 */
async function readSignatures(from: string, hash: string, manifestBytes: Buffer): Promise<Map<string, Buffer>> {
  const hex = hash.slice('sha256:'.length)
  const folder = join(from, 'sigs', 'sha256', hex.slice(0, 2), hex)
  const names = await readdir(folder).catch(() => [] as string[])
  const signatures = new Map<string, Buffer>()
  for (const name of names.sort()) {
    const m = /^([0-9a-f]{64})\.sig$/.exec(name)
    if (!m) continue
    const signer = m[1]!
    const sig = fromStore(await readDocumentFile(join(folder, name)), `signature ${name}`)
    const v = verifySshsig(sig, manifestBytes, NS_MANIFEST, { signerName: signer })
    if (!v.ok) throw new PipeError(v.code, `sigs/sha256/${hex.slice(0, 2)}/${hex}/${name}: ${v.detail}`)
    signatures.set(signer, sig)
  }
  return signatures
}

/**
 * The key statements an export needs to be checked like the store: the publisher's key's and the
 * signers', then those of every key they supersede, and so on. Each is parsed (canonical, its
 * signature verifying, its file named for its key); a key the store has no statement for is left out.
 */
async function readKeyStatements(from: string, signers: string[]): Promise<Map<string, Buffer>> {
  const statements = new Map<string, Buffer>()
  const seen = new Set<string>()
  for (let i = 0; i < signers.length; i++) {
    const signer = signers[i]!
    if (seen.has(signer)) continue
    seen.add(signer)
    const read = await readDocumentFile(storeFile(from, keyPath(signer)))
    if (!read.ok && read.code === STORE_CODES.objectMissing) continue
    const bytes = fromStore(read, keyPath(signer))
    const parsed = parseKeyStatement({ statement: bytes, signerName: signer, source: keyPath(signer) })
    if (!parsed.ok) throw new PipeError(parsed.findings[0]!.code, `${keyPath(signer)}: ${parsed.findings[0]!.detail}`)
    statements.set(signer, bytes)
    const previous = parsed.statement.supersedes
    if (previous !== undefined) signers.push(signerNameFromFingerprint(previous)!)
  }
  return new Map([...statements].sort(([a], [b]) => (a < b ? -1 : 1)))
}

function extensionOf(path: string): ObjectExtension {
  if (path === EXPORT_MANIFEST_PATH) return 'json'
  return path.slice(path.lastIndexOf('.') + 1) as ObjectExtension
}

/** Hard-links `dest` to `source`; false when this file system pair cannot (then every later file is copied). */
async function tryLink(source: string, dest: string): Promise<boolean> {
  try {
    await link(source, dest)
    return true
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EXDEV' || code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'EMLINK' || code === 'ENOSYS') return false
    throw err
  }
}

async function syncFile(path: string): Promise<void> {
  // fsync through a read-only descriptor: a copy of a read-only object is read-only too.
  const fh = await open(path, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

// ---------------------------------------------------------------------------------------------------
// Files made from the manifest. Only its members and its hash go in, so the same version always makes
// the same bytes; its text is the publisher's, so each format's quoting applies.

const SPDX_LICENCE_URL = 'https://spdx.org/licenses/'

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim()
}

function heading(m: Manifest): string {
  return oneLine(m.title) || m.feed
}

function versionName(m: Manifest): string {
  return m.version_label === '' ? m.feed : `${m.feed} ${oneLine(m.version_label)}`
}

/** LICENSE: the manifest's licence by its SPDX id and where its text is; no licence text is invented. */
export function licenceText(m: Manifest, hash: string): string {
  return [
    `${heading(m)} (${versionName(m)})`,
    `Manifest ${hash}`,
    '',
    `Licence: ${m.licence} (SPDX identifier). Its text: ${SPDX_LICENCE_URL}${m.licence}.html`,
    '',
    'The licence covers what this version adds. A version that follows or merges others (parents in',
    'pack.json) leaves their data under the licences those versions gave it: see history/.',
    '',
  ].join('\n')
}

function cell(s: string): string {
  return oneLine(s).replaceAll('|', '\\|')
}

/** README.md: what the version is, its files, and how to read and check them. */
export function readmeText(m: Manifest, hash: string): string {
  const signer = signerNameFromFingerprint(m.publisher)!
  const rows: [string, string][] = [
    ['Feed', `\`${m.feed}\``],
    ['Version', cell(m.version_label) || '(no label)'],
    ['Created', m.created],
    ['Manifest', `\`${hash}\` (this version's id: the SHA-256 of pack.json)`],
    ['Publisher', `\`${m.publisher}\` (key statement keys/${signer}.json)`],
    ['Licence', `${cell(m.licence)} (see LICENSE)`],
  ]
  if (m.doi !== '') rows.push(['DOI', cell(m.doi)])
  if (m.creators.length > 0) rows.push(['Creators', m.creators.map((c) => `${cell(c.name)} (${cell(c.role)}${c.orcid !== undefined ? `, ORCID ${c.orcid}` : ''})`).join('; ')])
  rows.push(['Made by', `${cell(m.engine.name)} ${cell(m.engine.version)}`])
  if (m.parents.length > 0) rows.push(['Parents', m.parents.map((p) => `\`${p}\``).join(', ')])
  const stats = m.stats
  const counts = [['patterns', stats.patterns], ['ants', stats.ants], ['Quick Start entries', stats.quickstart], ['bytes of tables and searches', stats.bytes]] as const
  const stated = counts.filter(([, n]) => n !== undefined).map(([what, n]) => `${n} ${what}`)
  if (stated.length > 0) rows.push(['Counts', `${stated.join(', ')} (as the manifest states them, for people)`])
  if (m.retracts.length > 0) rows.push(['Retractions', `${m.retracts.length} (retracts in pack.json)`])
  const tables = Object.keys(m.tables).sort()
  const searches = Object.keys(m.searches).sort()
  const description = m.description.trim()
  return [
    `# ${heading(m)}`,
    '',
    ...(description !== '' ? [description, ''] : []),
    '| | |',
    '|---|---|',
    ...rows.map(([k, v]) => `| ${k} | ${v} |`),
    '',
    '## Files',
    '',
    'An export of a JETCARP pack, format 1.0: one version laid out for a single download. Data files are',
    'named for people; the indexes give each one\'s SHA-256, so the export is checked like a store.',
    '',
    '- `pack.json`: the manifest, byte for byte.',
    '- `index/<hex>.json`: every index of the version, named by its hash; `history/<hex>.json`: earlier manifests.',
    `- \`tables/<table>/<key>=<value>/.../part-NNNNNN.parquet\`: the tables${tables.length > 0 ? ` (${tables.join(', ')})` : ''}.`,
    ...(searches.length > 0 ? [`- \`searches/<uuid>/\`: search runs (\`runs/\`) and score sidecars (\`scores-<n>/\`) of ${searches.join(', ')}.`] : []),
    '- `tilings/reference/<family>.parquet`: aperiodic reference patches; `media/`: pictures and animations.',
    '- `sigs/<signer>.sig`: signatures on pack.json; `keys/<signer>.json`: key statements.',
    '- `views.sql`: DuckDB views over the tables (not part of the format).',
    '',
    '## Reading',
    '',
    'Every table is Parquet. With DuckDB, from this folder:',
    '',
    '```sql',
    `SELECT * FROM read_parquet('tables/${tables.includes('patterns') ? 'patterns' : tables[0] ?? 'patterns'}/**/*.parquet', hive_partitioning = false);`,
    '```',
    '',
    'or `duckdb -init views.sql` for a view per table. The partition columns are in the files as well as in',
    'the folder names: read without Hive partitioning, or drop one of each pair.',
    '',
    '## Checking',
    '',
    'Every file of `tables/`, `searches/`, `media/` and `tilings/` has the SHA-256 its index (or row) states.',
    'The publisher\'s signature, when the version is signed, with OpenSSH:',
    '',
    '```sh',
    `echo "publisher namespaces=\\"jetcarp-manifest\\" $(sed 's/.*"key":"\\([^"]*\\)".*/\\1/' keys/${signer}.json)" > allowed`,
    `ssh-keygen -Y verify -f allowed -I publisher -n jetcarp-manifest -s sigs/${signer}.sig < pack.json`,
    '```',
    '',
  ].join('\n')
}

/** A YAML double-quoted scalar: JSON's escapes, and every character YAML does not print escaped too. */
function yamlString(s: string): string {
  return JSON.stringify(s).replace(/[\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

const CFF_DOI_RE = /^10\.\d{4,9}(\.\d+)?\/[A-Za-z0-9:/_;\-.()[\]\\]+$/

/**
 * CITATION.cff (Citation File Format 1.2.0), a dataset: the manifest's creators with role creator as
 * authors (all creators when none has it; the publisher's key when there are none), its title,
 * description, version label, licence, DOI (when in DOI form), the date it was created, and its hash.
 */
export function citationText(m: Manifest, hash: string): string {
  const creators = m.creators.some((c) => c.role === 'creator') ? m.creators.filter((c) => c.role === 'creator') : m.creators
  const authors = creators.length > 0 ? creators : [{ name: `Publisher ${m.publisher}` }]
  const doi = m.doi.replace(/^(doi:|https:\/\/doi\.org\/)/i, '')
  const lines = [
    'cff-version: 1.2.0',
    'message: "If you use this data, please cite it as below."',
    'type: dataset',
    `title: ${yamlString(heading(m))}`,
    ...(m.description.trim() !== '' ? [`abstract: ${yamlString(m.description.trim())}`] : []),
    'authors:',
    ...authors.flatMap((a) => [`  - name: ${yamlString(a.name)}`, ...('orcid' in a && a.orcid !== undefined ? [`    orcid: ${yamlString(`https://orcid.org/${a.orcid}`)}`] : [])]),
    ...(m.version_label !== '' ? [`version: ${yamlString(m.version_label)}`] : []),
    `date-released: ${yamlString(m.created.slice(0, 10))}`,
    `license: ${yamlString(m.licence)}`,
    ...(CFF_DOI_RE.test(doi) ? [`doi: ${yamlString(doi)}`] : []),
    'identifiers:',
    '  - type: other',
    `    value: ${yamlString(hash)}`,
    `    description: ${yamlString(`The manifest hash of this version of feed ${m.feed} (JETCARP pack format 1.0)`)}`,
    '',
  ]
  return lines.join('\n')
}

/**
 * views.sql: a DuckDB view for each table with parts and for each search's runs, over the export's
 * relative paths (so it is read from the export's folder), without Hive partitioning since the
 * partition columns are in the files.
 */
export function viewsText(layout: ExportLayout): string {
  const tables = new Map<string, boolean>()
  const searches = new Set<string>()
  for (const { path } of layout.entries()) {
    const parts = path.split('/')
    if (parts[0] === 'tables') tables.set(parts[1]!, (tables.get(parts[1]!) ?? false) || parts.length > 3)
    else if (parts[0] === 'searches' && parts[2] === 'runs') searches.add(parts[1]!)
  }
  const view = (name: string, glob: string) => `CREATE OR REPLACE VIEW "${name}" AS SELECT * FROM read_parquet('${glob}', hive_partitioning = false);`
  return [
    '-- DuckDB views over this export (not part of the pack format). From the export\'s folder: duckdb -init views.sql',
    ...[...tables].sort(([a], [b]) => (a < b ? -1 : 1)).map(([table, partitioned]) => view(table, `tables/${table}/${partitioned ? '**/' : ''}*.parquet`)),
    ...[...searches].sort().map((uuid) => view(`search-${uuid}-runs`, `searches/${uuid}/runs/*.parquet`)),
    '',
  ].join('\n')
}

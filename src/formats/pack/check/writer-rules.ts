/**
 * What a conformance check holds a pack's writer to beyond what a reader needs (pack format 1.0, "Pack
 * documents", "Parquet tables", "Personal data"): zstd parts with statistics and page indexes, no local
 * path in any document or table cell, media bytes of the kind their row states. Readers stay lenient on
 * these; pack-check reports them, at level 1.
 */
import { openRegularFile } from '../../../core/input-file.js'
import type { ChunkFacts, RowBatch, Vector } from '../tables/parquet-read.js'
import type { MediaExtension } from '../documents/store.js'

export const WRITER_CODES = {
  /** A part with a column chunk not compressed with zstd. */
  partNotZstd: 'pack.part-not-zstd',
  /** A part with a column chunk without statistics (min, max and null count; an all-null chunk needs no min and max). */
  partNoStatistics: 'pack.part-no-statistics',
  /** A part with a column chunk without a column index and an offset index that locate its data pages. */
  partNoPageIndex: 'pack.part-no-page-index',
  /** A local path (`/x/y`, `~/`, `C:\`, `\\server\`, `file://`) in a document or a table cell. */
  localPath: 'pack.local-path',
  /** A media object whose bytes are not the kind (PNG, GIF, WebP) its row's media_type states. */
  mediaKind: 'pack.media-kind-mismatch',
  /** With --all-objects: a file under objects/ whose name is not the SHA-256 of its bytes. */
  strayObject: 'pack.object-stray',
} as const

/** A writer rule a part breaks: its code and what shows it (the first chunk that breaks it, and how many do). */
export interface PartRuleBreak {
  code: string
  detail: string
}

/** The part rules its chunks break, each once. */
export function partRuleBreaks(chunks: readonly ChunkFacts[]): PartRuleBreak[] {
  const out: PartRuleBreak[] = []
  const rule = (code: string, breaks: (c: ChunkFacts) => boolean, what: (c: ChunkFacts) => string) => {
    const broken = chunks.filter(breaks)
    if (broken.length === 0) return
    const first = broken[0]!
    const more = broken.length > 1 ? ` (and ${broken.length - 1} more of its ${chunks.length} column chunks)` : ''
    out.push({ code, detail: `row group ${first.rowGroup}, column ${first.column}: ${what(first)}${more}` })
  }
  rule(WRITER_CODES.partNotZstd, (c) => c.codec !== 'ZSTD', (c) => `compressed with ${c.codec}; parts are written with zstd`)
  rule(WRITER_CODES.partNoStatistics, (c) => !c.statistics, () => 'no statistics (min, max and null count); parts are written with statistics')
  rule(WRITER_CODES.partNoPageIndex, (c) => !c.columnIndex || !c.offsetIndex,
    (c) => `${!c.columnIndex && !c.offsetIndex ? 'no column index and no offset index' : !c.columnIndex ? 'no column index' : 'no offset index'} locating its data pages; parts are written with page indexes`)
  return out
}

/**
 * A local path in a text: an absolute path of two names or more (`/x/y`) starting the text or after an
 * ASCII space, quote, bracket, `=`, `,` or `;` (so a URL's path, after its host, is none, nor `B3/S23`), a home
 * path `~/`, a drive `C:\` or `C:/`, a share `\\server\`, or `file://`. Returns the path as found.
 */
const LOCAL_PATH_RE = /(?:^|[ \t\n\r\v\f"'(\[{<=,;])((?:\/[^\s/"'<>]+\/[^\s"'<>)\]}]*)|~\/[^\s"'<>)\]}]*|[A-Za-z]:[\\/][^\s"'<>)\]}]*|\\\\[^\s\\"'<>]+\\[^\s"'<>)\]}]*)|(file:\/\/[^\s"'<>)\]}]*)/i
/** Characters one of the forms needs: a text without them holds none (most cells), and is not matched at all. */
const LOCAL_PATH_HINT = /[/\\]/

export function localPathIn(text: string): string | null {
  if (!LOCAL_PATH_HINT.test(text)) return null
  const m = LOCAL_PATH_RE.exec(text)
  return m === null ? null : (m[1] ?? m[2]!)
}

/**
 * An armored signature (`-----BEGIN SSH SIGNATURE-----`) or an OpenSSH public key (`ssh-ed25519 AAAA...`):
 * base64, whose lines and blobs may start with `/` and hold more, so `/z6P/ob48...` is no path. Only a
 * key's comment is text a writer chose.
 */
const ARMORED = /^-----BEGIN [A-Z0-9 ]+-----\r?\n[A-Za-z0-9+/=\r\n]*-----END [A-Z0-9 ]+-----\r?\n?$/
const PUBLIC_KEY = /^(?:ssh|ecdsa|sk)-[\w@.-]+ [A-Za-z0-9+/=]+(?= |$)/

/** The text of a string a writer chose: none of an armored block, a public key's comment only. */
function writtenText(text: string): string {
  if (ARMORED.test(text)) return ''
  return text.replace(PUBLIC_KEY, '')
}

/** The first local path among a JSON document's strings (keys included), with where it is. */
export function localPathInJson(value: unknown, at = ''): { path: string; at: string } | null {
  if (typeof value === 'string') {
    const path = localPathIn(writtenText(value))
    return path === null ? null : { path, at: at || '(the document)' }
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = localPathInJson(value[i], `${at}[${i}]`)
      if (found) return found
    }
    return null
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const key = localPathIn(k)
      if (key !== null) return { path: key, at: `${at}.${k}` }
      const found = localPathInJson(v, `${at}.${k}`)
      if (found) return found
    }
  }
  return null
}

/** A file's first `n` bytes (fewer when it is shorter). */
export async function readHead(path: string, n: number): Promise<Uint8Array> {
  const { fh } = await openRegularFile(path)
  try {
    const head = new Uint8Array(n)
    const { bytesRead } = await fh.read(head, 0, n, 0)
    return head.subarray(0, bytesRead)
  } finally {
    await fh.close()
  }
}

/** The media kind a file's first bytes are (PNG, GIF87a/89a, RIFF WebP), or null for none of them. */
export function mediaKindOf(head: Uint8Array): MediaExtension | null {
  const at = (i: number, bytes: readonly number[]) => bytes.every((b, k) => head[i + k] === b)
  if (at(0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png'
  if (at(0, [0x47, 0x49, 0x46, 0x38]) && (head[4] === 0x37 || head[4] === 0x39) && head[5] === 0x61) return 'gif'
  if (at(0, [0x52, 0x49, 0x46, 0x46]) && at(8, [0x57, 0x45, 0x42, 0x50])) return 'webp'
  return null
}

/** The cells of a row group's string columns (in lists and structs too) that hold a local path: how many, and the first. */
export interface LocalPathCells {
  count: number
  column: string
  /** The row in the part. */
  row: number
  path: string
}

export function localPathCells(batch: RowBatch): LocalPathCells | null {
  let found: LocalPathCells | null = null
  const scan = (v: Vector | null, column: string, rowOf: (slot: number) => number): void => {
    if (v === null) return
    if (v.kind === 'string') {
      // Most columns hold no slash or backslash at all: one search of their bytes passes them.
      if (v.bytes.indexOf(0x2f) < 0 && v.bytes.indexOf(0x5c) < 0) return
      // A dictionary entry is looked at once, however many slots hold it (each slot still counts as a cell).
      const seen = v.entry === null ? null : new Map<number, boolean>()
      for (let i = 0; i < v.length; i++) {
        if (v.valid && !v.valid[i]) continue
        const e = seen === null ? -1 : v.entry![i]!
        if (e >= 0) {
          const hasPath = seen!.get(e)
          if (hasPath === false) continue
          if (hasPath === true) {
            found!.count++
            continue
          }
        }
        const path = mayHoldLocalPath(v.bytes, v.start[i]!, v.end[i]!) ? localPathIn(v.text(i)) : null
        if (e >= 0) seen!.set(e, path !== null)
        if (path === null) continue
        if (found) found.count++
        else found = { count: 1, column, row: batch.rowStart + rowOf(i), path }
      }
    } else if (v.kind === 'list') {
      const offsets = v.offsets
      scan(v.element, `${column}[]`, (slot) => rowOf(rowOfElement(offsets, slot)))
    } else if (v.kind === 'struct') {
      for (const [name, field] of v.fields) scan(field, `${column}.${name}`, rowOf)
    }
  }
  for (const [name, v] of batch.columns) scan(v, name, (slot) => slot)
  return found
}

/**
 * Whether a cell's UTF-8 bytes may hold a local path, without decoding them: a `/` or `\` at the start or
 * after a boundary (as LOCAL_PATH_RE's), `~/`, a drive's `:\` or `:/`, or `\\`. Rules (`B3/S23`), speeds
 * (`c/4`) and most cells with a slash fail it. `file://` has `:/`.
 */
export function mayHoldLocalPath(bytes: Uint8Array, start: number, end: number): boolean {
  for (let p = start; p < end; p++) {
    const c = bytes[p]!
    if (c !== 0x2f && c !== 0x5c) continue
    if (p === start) return true
    const before = bytes[p - 1]!
    if (before === 0x3a /* : */ || before === 0x7e /* ~ */ || BOUNDARY_BYTES[before] === 1) return true
    if (c === 0x5c && bytes[p + 1] === 0x5c) return true
  }
  return false
}

/** The bytes LOCAL_PATH_RE takes as a boundary before a path: white space, quotes, brackets, `=`, `,`, `;`. */
const BOUNDARY_BYTES = (() => {
  const table = new Uint8Array(256)
  for (const c of ' \t\n\r\v\f"\'([{<=,;') table[c.charCodeAt(0)] = 1
  return table
})()

/** The list (slot of the list vector) whose elements include element slot `j`: offsets[r] <= j < offsets[r + 1]. */
function rowOfElement(offsets: Int32Array, j: number): number {
  let lo = 0
  let hi = offsets.length - 1
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1
    if (offsets[mid]! <= j) lo = mid
    else hi = mid
  }
  return lo
}

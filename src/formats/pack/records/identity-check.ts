/**
 * Level 1 on records' ids and identity texts ("Ids"; identity.ts gives our spelling of the lines). A
 * pattern's cells are checked where they lie, as UTF-8 bytes and typed arrays of a decoded part
 * (parquet-vectors.ts), with no string made for them: our spelling of the row's columns is written as bytes
 * (its typed phases with the publisher's writeNumber) and compared with the identity in one call, and where
 * they are the same the spelling, already in place, is what is hashed. Any other identity has its lines
 * found and compared one by one. Ants and Quick Start entries are checked on their rows.
 */
import { hash } from 'node:crypto'
import { antId, CONTENT_ID_DIGITS, IDENTITY_CODES, PATTERN_SCHEME, patternHeadLines, quickstartId, writeNumber } from './identity.js'

export interface IdentityFinding { code: string; detail: string }

/** A text cell: its UTF-8 bytes, bytes[start, end). */
export interface TextCell { bytes: Buffer; start: number; end: number }

/** A pattern's typed phases: phases first to last - 1, phase q's cells i, j, k, s[cellOffsets[q] ... cellOffsets[q + 1]). */
export interface TypedPhases {
  first: number
  last: number
  cellOffsets: Int32Array
  i: Int32Array
  j: Int32Array
  k: Int32Array
  s: Int32Array
}

/** The cells of a pattern row that its id and identity lines are checked against. */
export interface PatternCells {
  id: TextCell
  identity: TextCell
  pin: TextCell
  pinKey: TextCell
  model: TextCell
  neighbourhood: TextCell
  class: TextCell
  canonical: TextCell
  stepsPerGen: number
  /** A number where it is a safe integer, as most are: a bigint costs an allocation a row. */
  period: number | bigint
  dx: number
  dy: number
  phases: TypedPhases
}

const text = (c: TextCell): string => c.bytes.toString('utf8', c.start, c.end)

/** Whether a's bytes from `at` are b[start, end), byte by byte: a native compare's call costs more than a cell's bytes. */
const bytesAt = (a: Uint8Array, at: number, b: Uint8Array, start: number, end: number): boolean => {
  for (let x = at, y = start; y < end; x++, y++) if (a[x] !== b[y]) return false
  return true
}

const sameText = (a: TextCell, b: Uint8Array, start: number, end: number): boolean => a.end - a.start === end - start && bytesAt(a.bytes, a.start, b, start, end)

/** Where a number's text is written to be compared (numberEnd): a 32-bit integer takes at most 11 bytes. */
const NUMBER_TEXT = Buffer.alloc(32)

/**
 * Where the text of number v (as JS writes it: writeNumber) ends if it starts at b[p] and ends by `end`, or -1
 * when the bytes there are not that text.
 */
function numberEnd(b: Uint8Array, p: number, end: number, v: number): number {
  const n = writeNumber(NUMBER_TEXT, 0, v)
  return p + n <= end && bytesAt(b, p, NUMBER_TEXT, 0, n) ? p + n : -1
}

const SCHEME = Buffer.from(PATTERN_SCHEME)
const SCHEME_CELL: TextCell = { bytes: SCHEME, start: 0, end: SCHEME.length }
/** The lines checked against columns, in the order their findings come. */
const LINES = ['tiling', 'model', 'nb', 'steps', 'class', 'period', 'd', 'canonical', 'phases'] as const
const LINE_KEYS = LINES.map((l) => Buffer.from(l))
// Their indexes in LINES, for lineKey.
const [LINE_TILING, LINE_MODEL, LINE_NB, LINE_STEPS, LINE_CLASS, LINE_PERIOD, LINE_D, LINE_CANONICAL, PHASES] = [0, 1, 2, 3, 4, 5, 6, 7, 8] as const

/**
 * Where an identity is put for its hash, with "\n" and the pin after it: spelled from its row's columns
 * (spellIdentity) or copied (contentDigest). It grows, keeping what it holds, to the longest identity met (a
 * cell is at most 1 MiB).
 */
let scratch = Buffer.allocUnsafe(16 * 1024)
/**
 * Views of the scratch's first bytes, by length, up to VIEWS_UP_TO: hash() takes a whole view, and making one
 * a row cost more than the hash's own work on a short identity.
 */
const VIEWS_UP_TO = 4096
let views: Buffer[] = []
/** The head whose bytes the scratch starts with (null: none). */
let headInScratch: PatternHead | null = null

/** The scratch, with room for `bytes`. */
function room(bytes: number): Buffer {
  if (scratch.length < bytes) {
    const grown = Buffer.allocUnsafe(Math.max(bytes, 2 * scratch.length))
    scratch.copy(grown)
    scratch = grown
    views = []
  }
  return scratch
}

/** The SHA-256 (hex) of the scratch's first `length` bytes, "\n" and the pin. */
function scratchDigest(length: number, pin: TextCell): string {
  const n = pin.end - pin.start
  const total = length + 1 + n
  const b = room(total)
  b[length] = 0x0a
  for (let x = 0; x < n; x++) b[length + 1 + x] = pin.bytes[pin.start + x]!
  return hash('sha256', total <= VIEWS_UP_TO ? (views[total] ??= b.subarray(0, total)) : b.subarray(0, total), 'hex')
}

/** The SHA-256 (hex) of text + "\n" + pin, from the cells' bytes. */
function contentDigest(textCell: TextCell, pin: TextCell): string {
  const t = textCell.end - textCell.start
  const b = room(t + 1 + pin.end - pin.start)
  textCell.bytes.copy(b, 0, textCell.start, textCell.end)
  headInScratch = null
  return scratchDigest(t, pin)
}

/** Whether an id cell is a digest's first CONTENT_ID_DIGITS digits. */
function isIdOf(id: TextCell, digest: string): boolean {
  const { bytes, start } = id
  if (id.end - start !== CONTENT_ID_DIGITS) return false
  for (let x = 0; x < CONTENT_ID_DIGITS; x++) if (bytes[start + x] !== digest.charCodeAt(x)) return false
  return true
}

/** The lines that copy a text column, and its cell; the others are numbers (steps, period, d) or the phases. */
const TEXT_CELLS = LINES.map((l) => ({ tiling: 'pinKey', model: 'model', nb: 'neighbourhood', class: 'class', canonical: 'canonical' } as const)[l as 'tiling'])

/** Whether line n of LINES (its value at b[start, end)) says what the pattern's column says. */
function lineMatches(c: PatternCells, n: number, b: Buffer, start: number, end: number): boolean {
  const cell = TEXT_CELLS[n]
  if (cell) return sameText(c[cell], b, start, end)
  switch (LINES[n]) {
    case 'steps':
      return numberEnd(b, start, end, c.stepsPerGen) === end
    case 'period':
      return typeof c.period === 'number' ? numberEnd(b, start, end, c.period) === end : b.toString('utf8', start, end) === String(c.period)
    case 'd': {
      const comma = numberEnd(b, start, end, c.dx)
      return comma >= 0 && b[comma] === 0x2c && numberEnd(b, comma + 1, end, c.dy) === end
    }
    default:
      return spellsPhases(b, start, end, c.phases)
  }
}

/** What a line's column says, for a finding (the phases have their own). */
function columnText(c: PatternCells, n: number): string {
  const cell = TEXT_CELLS[n]
  if (cell) return text(c[cell])
  return LINES[n] === 'd' ? `${c.dx},${c.dy}` : String(LINES[n] === 'steps' ? c.stepsPerGen : c.period)
}

/**
 * Level 1 for a pattern: its id is the hash of its identity and pin; and where the identity is in our
 * spelling (its first line the scheme, then `key=value` lines, no key twice), its tiling=, model=, nb=,
 * steps=, class=, period=, d= and canonical= lines equal the columns and the typed phases equal the phases=
 * line. An identity in another scheme or spelling states nothing checkable but its hash (the caller notes
 * it: level 4 is JETCARP's). Findings are appended to `out`.
 */
export function checkPatternIdentity(c: PatternCells, out: IdentityFinding[]): 'ours' | 'unknown' {
  const head = headOf(c)
  // An identity that is our spelling of its columns has every line right, and its hash is the spelling's.
  const spelled = head.bytes === null ? -1 : spellIdentity(c, head)
  const ours = spelled >= 0 && c.identity.bytes.compare(scratch, 0, spelled, c.identity.start, c.identity.end) === 0
  const digest = ours ? scratchDigest(spelled, c.pin) : contentDigest(c.identity, c.pin)
  if (!isIdOf(c.id, digest)) out.push({ code: IDENTITY_CODES.idMismatch, detail: `id ${text(c.id)} is not the hash of its identity and pin (${digest.slice(0, CONTENT_ID_DIGITS)})` })
  if (ours) return 'ours'
  // An identity that starts with the head of its columns has their lines, each equal to its column.
  const afterHead = startsWithHead(c.identity, head)
  const found = lineValues(c.identity, afterHead ? head : undefined)
  if (!found) return 'unknown'
  const b = c.identity.bytes
  for (let n = afterHead ? HEAD_LINES : 0; n < LINES.length; n++) {
    const start = found[2 * n]!
    const end = found[2 * n + 1]!
    // Without a phases= line there is nothing to compare the typed phases with, and no finding.
    if (start < 0) {
      if (n !== PHASES) out.push({ code: IDENTITY_CODES.identityMalformed, detail: `the identity has no ${LINES[n]}= line` })
    } else if (!lineMatches(c, n, b, start, end)) {
      out.push(n === PHASES
        ? { code: IDENTITY_CODES.phasesMismatch, detail: 'the typed phases differ from the phases= line' }
        : { code: IDENTITY_CODES.identityColumn, detail: `${LINES[n]}= says ${JSON.stringify(b.toString('utf8', start, end))}, the column ${JSON.stringify(columnText(c, n))}` })
    }
  }
  return 'ours'
}

/**
 * Our spelling of a pattern's first lines (patternHeadLines: the scheme, then tiling= to d=, the first
 * HEAD_LINES of LINES) for the columns of the last row checked, and the `\n` after them, as bytes, with where
 * their values are. A part's rows mostly share these columns, so an identity is compared with the head in one
 * call, rather than its first lines found and compared one by one. Null bytes: a column holds a line break,
 * so the lines are not what the columns say, and each identity is read in full.
 */
interface PatternHead {
  columns: { pinKey: Buffer; model: Buffer; neighbourhood: Buffer; class: Buffer; stepsPerGen: number; period: number | bigint; dx: number; dy: number }
  bytes: Buffer | null
  /** Each head line's value start and end, from the head's start. */
  bounds: Int32Array
}

const HEAD_LINES = LINE_D + 1
let lastHead: PatternHead | undefined

const sameColumn = (cell: TextCell, held: Buffer): boolean => sameText(cell, held, 0, held.length)

function headOf(c: PatternCells): PatternHead {
  const h = lastHead
  if (h && h.columns.stepsPerGen === c.stepsPerGen && h.columns.period === c.period && h.columns.dx === c.dx && h.columns.dy === c.dy &&
    sameColumn(c.pinKey, h.columns.pinKey) && sameColumn(c.model, h.columns.model) && sameColumn(c.neighbourhood, h.columns.neighbourhood) && sameColumn(c.class, h.columns.class)) return h
  const held = (cell: TextCell): Buffer => Buffer.from(cell.bytes.subarray(cell.start, cell.end))
  const columns = { pinKey: held(c.pinKey), model: held(c.model), neighbourhood: held(c.neighbourhood), class: held(c.class), stepsPerGen: c.stepsPerGen, period: c.period, dx: c.dx, dy: c.dy }
  const lines = Buffer.from(patternHeadLines({ pinKey: text(c.pinKey), model: text(c.model), neighbourhood: text(c.neighbourhood), stepsPerGen: c.stepsPerGen, class: text(c.class), period: c.period, dx: c.dx, dy: c.dy }).join('\n'))
  const breaks = [columns.pinKey, columns.model, columns.neighbourhood, columns.class].some((v) => v.includes(0x0a))
  const found = breaks ? null : lineValues({ bytes: lines, start: 0, end: lines.length })
  lastHead = { columns, bytes: found ? Buffer.concat([lines, Buffer.from('\n')]) : null, bounds: found ? found.slice(0, 2 * HEAD_LINES) : new Int32Array(0) }
  return lastHead
}

function startsWithHead(identity: TextCell, head: PatternHead): boolean {
  const bytes = head.bytes
  return bytes !== null && identity.end - identity.start >= bytes.length && bytesAt(identity.bytes, identity.start, bytes, 0, bytes.length)
}

const RULE_KEY = Buffer.from('rule=')
const PHASES_KEY = Buffer.from('phases=')
const CANONICAL_KEY = Buffer.from('\ncanonical=')
/** The most a phase's separator and a cell of four 32-bit integers take: spelling stops after one that passes its limit. */
const CELL_TEXT_MAX = 1 + 4 * 11 + 4

/** Writes a few bytes at s[p] (a loop: TypedArray set's call cost more than copying a key); returns the end. */
function put(s: Uint8Array, p: number, bytes: Uint8Array): number {
  for (let x = 0; x < bytes.length; x++) s[p++] = bytes[x]!
  return p
}

/**
 * Spells at the scratch's start the identity our publisher writes for the row's columns: the head, the
 * identity's own rule= line where it has one (checked against nothing), phases= the typed phases, canonical=
 * the canonical column to the end. Returns its length, or -1 where it cannot be the identity (it would be
 * longer or shorter, the identity's rule= line does not end, the canonical column holds a line break). The
 * identity is in our spelling with every line right exactly when it is these bytes; any other (lines in
 * another order, one more line) is read by lineValues.
 */
function spellIdentity(c: PatternCells, head: PatternHead): number {
  const { bytes: b, start, end } = c.identity
  const length = end - start
  const headBytes = head.bytes!
  if (headBytes.length > length) return -1
  const s = room(length + CELL_TEXT_MAX + CANONICAL_KEY.length)
  if (headInScratch !== head) {
    s.set(headBytes, 0)
    headInScratch = head
  }
  let p = headBytes.length
  if (length - p >= RULE_KEY.length && bytesAt(b, start + p, RULE_KEY, 0, RULE_KEY.length)) {
    let x = start + p
    while (x < end && b[x] !== 0x0a) s[p++] = b[x++]!
    if (x === end) return -1
    s[p++] = 0x0a
  }
  if (p + PHASES_KEY.length > length) return -1
  p = put(s, p, PHASES_KEY)
  p = writeTypedPhases(s, p, c.phases, length)
  const { bytes: canonical, start: from, end: to } = c.canonical
  if (p < 0 || p + CANONICAL_KEY.length + to - from !== length) return -1
  p = put(s, p, CANONICAL_KEY)
  for (let x = from; x < to; x++) {
    const byte = canonical[x]!
    if (byte === 0x0a) return -1
    s[p++] = byte
  }
  return p
}

/** lineValues' answer, reused: allocating a typed array per row cost more than finding the lines. */
const lineBounds = new Int32Array(2 * LINES.length)

/**
 * Where the value of each of LINES is in an identity (start and end; -1 when it has no such line), or null
 * when the identity is not in our spelling. Given the head it starts with, only the lines after the head
 * are read. The answer is good until the next call.
 */
function lineValues(identity: TextCell, head?: PatternHead): Int32Array | null {
  const b = identity.bytes
  const end = identity.end
  const found = lineBounds
  let nl: number
  if (head) {
    for (let x = 0; x < 2 * HEAD_LINES; x++) found[x] = identity.start + head.bounds[x]!
    for (let n = HEAD_LINES; n < LINES.length; n++) found[2 * n] = -1
    nl = identity.start + head.bytes!.length - 1
  } else {
    nl = identity.start + SCHEME.length
    if (nl > end || !sameText(SCHEME_CELL, b, identity.start, nl) || (nl < end && b[nl] !== 0x0a)) return null
    for (let n = 0; n < LINES.length; n++) found[2 * n] = -1
  }
  let others: Set<string> | undefined
  while (nl < end) {
    const start = nl + 1
    let eq = start
    while (eq < end && b[eq] !== 0x3d && b[eq] !== 0x0a) eq++
    if (eq === start || eq === end || b[eq] === 0x0a) return null
    const n = lineKey(b, start, eq)
    // A short value's end byte by byte; a long one's (phases, canonical, lines we do not know) natively.
    if (n === PHASES || n === LINE_CANONICAL || n < 0) {
      const at = b.indexOf(0x0a, eq + 1)
      nl = at < 0 || at > end ? end : at
    } else {
      nl = eq + 1
      while (nl < end && b[nl] !== 0x0a) nl++
    }
    if (n < 0) {
      const key = b.toString('utf8', start, eq)
      if ((others ??= new Set()).has(key)) return null
      others.add(key)
    } else {
      if (found[2 * n]! >= 0) return null
      found[2 * n] = eq + 1
      found[2 * n + 1] = nl
    }
  }
  return found
}

/** Which of LINES the key b[start, end) is, or -1: the one its length and a letter allow, if its bytes are that. */
function lineKey(b: Uint8Array, start: number, end: number): number {
  let n: number
  switch (end - start) {
    case 1:
      n = LINE_D
      break
    case 2:
      n = LINE_NB
      break
    case 5:
      n = b[start] === 0x6d ? LINE_MODEL : b[start] === 0x73 ? LINE_STEPS : LINE_CLASS
      break
    case 6:
      n = b[start] === 0x74 ? LINE_TILING : b[start + 1] === 0x65 ? LINE_PERIOD : PHASES
      break
    case 9:
      n = LINE_CANONICAL
      break
    default:
      return -1
  }
  const key = LINE_KEYS[n]!
  for (let x = 0; x < key.length; x++) if (key[x] !== b[start + x]) return -1
  return n
}

/** Whether b[start, end) is exactly the phases= text of the typed phases. */
function spellsPhases(b: Uint8Array, start: number, end: number, t: TypedPhases): boolean {
  const s = room(end - start + CELL_TEXT_MAX)
  headInScratch = null
  return writeTypedPhases(s, 0, t, end - start) === end - start && bytesAt(b, start, s, 0, end - start)
}

/**
 * Writes the phases= text of the typed phases (cells `i,j,k,s` joined by spaces, phases by `;`, as the
 * publisher's writePhases) at s[p]; returns its end, or -1 once it passes `limit` (the writing stops within
 * CELL_TEXT_MAX of it).
 */
function writeTypedPhases(s: Uint8Array, p: number, t: TypedPhases, limit: number): number {
  for (let q = t.first; q < t.last; q++) {
    if (q > t.first) s[p++] = 0x3b
    const from = t.cellOffsets[q]!
    const to = t.cellOffsets[q + 1]!
    for (let x = from; x < to; x++) {
      if (x > from) s[p++] = 0x20
      p = writeNumber(s, p, t.i[x]!)
      s[p++] = 0x2c
      p = writeNumber(s, p, t.j[x]!)
      s[p++] = 0x2c
      p = writeNumber(s, p, t.k[x]!)
      s[p++] = 0x2c
      p = writeNumber(s, p, t.s[x]!)
      if (p > limit) return -1
    }
    if (p > limit) return -1
  }
  return p
}

/** Level 1 for an ant row: its id is `ant-` and the hash of its identity and pin. */
export function checkAntRow(row: { id: unknown; identity: unknown; pin: unknown }): IdentityFinding[] {
  if (typeof row.identity !== 'string' || typeof row.pin !== 'string' || typeof row.id !== 'string') return [{ code: IDENTITY_CODES.identityMalformed, detail: 'id, identity and pin must be strings' }]
  const expected = antId(row.identity, row.pin)
  return row.id === expected ? [] : [{ code: IDENTITY_CODES.idMismatch, detail: `id ${row.id} is not ant- and the hash of its identity and pin (${expected})` }]
}

/** Level 1 for a Quick Start row: its id is `qs-` and the hash of its scene and pin. */
export function checkQuickstartRow(row: { id: unknown; scene: unknown; pin: unknown }): IdentityFinding[] {
  if (typeof row.scene !== 'string' || typeof row.pin !== 'string' || typeof row.id !== 'string') return [{ code: IDENTITY_CODES.identityMalformed, detail: 'id, scene and pin must be strings' }]
  const expected = quickstartId(row.scene, row.pin)
  return row.id === expected ? [] : [{ code: IDENTITY_CODES.idMismatch, detail: `id ${row.id} is not qs- and the hash of its scene and pin (${expected})` }]
}

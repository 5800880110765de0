/**
 * Level 1 on records' ids and identity texts ("Ids"; identity.ts gives our spelling of the lines). A
 * pattern's cells are checked where they lie, as UTF-8 bytes and typed arrays of a decoded part
 * (parquet-vectors.ts): hashing its identity and comparing its lines with its columns needs no string, and
 * its typed phases are matched against the phases= line number by number, with no text built for them.
 * Ants and Quick Start entries are checked on their rows.
 */
import { hash } from 'node:crypto'
import { antId, CONTENT_ID_DIGITS, IDENTITY_CODES, PATTERN_SCHEME, patternHeadLines, quickstartId } from './identity.js'

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

/**
 * Where the decimal text of integer v (as JS writes it: a minus sign, no leading zeros) ends if it starts
 * at b[p], or -1 when the bytes there are not that text.
 */
function spellsInteger(b: Uint8Array, p: number, end: number, v: number): number {
  // One digit, as most cells' coordinates and states are.
  if (v >= 0 && v < 10) return p < end && b[p] === 0x30 + v ? p + 1 : -1
  if (v < 0) {
    if (p >= end || b[p] !== 0x2d) return -1
    p++
    v = -v
  }
  let digits = 1
  for (let t = v; t >= 10; t = Math.floor(t / 10)) digits++
  if (p + digits > end) return -1
  for (let q = p + digits - 1; q >= p; q--) {
    if (b[q] !== 0x30 + (v % 10)) return -1
    v = Math.floor(v / 10)
  }
  return p + digits
}

const SCHEME = Buffer.from(PATTERN_SCHEME)
const SCHEME_CELL: TextCell = { bytes: SCHEME, start: 0, end: SCHEME.length }
/** The lines checked against columns, in the order their findings come. */
const LINES = ['tiling', 'model', 'nb', 'steps', 'class', 'period', 'd', 'canonical', 'phases'] as const
const LINE_KEYS = LINES.map((l) => Buffer.from(l))
// Their indexes in LINES, for lineKey.
const [LINE_TILING, LINE_MODEL, LINE_NB, LINE_STEPS, LINE_CLASS, LINE_PERIOD, LINE_D, LINE_CANONICAL, PHASES] = [0, 1, 2, 3, 4, 5, 6, 7, 8] as const

/**
 * Where identity + "\n" + pin is put together to be hashed: the line break at PIN_AT, the pin after it and
 * the identity copied to end before it. A part's rows mostly share a pin, so the pin is copied only when it
 * is not the one already there; a cell too long for its side is joined on its own.
 */
const PIN_AT = 4096
const joined = Buffer.allocUnsafe(2 * PIN_AT)
joined[PIN_AT] = 0x0a
/** The length of the pin after PIN_AT (-1: none yet), and the views to hash for it, by the identity's length. */
let pinHeld = -1
let views: Buffer[] = []
const LINE_BREAK = Buffer.from('\n')

/** The SHA-256 (hex) of text + "\n" + pin, from the cells' bytes. */
function contentDigest(textCell: TextCell, pin: TextCell): string {
  const t = textCell.end - textCell.start
  const p = pin.end - pin.start
  if (t > PIN_AT || p >= PIN_AT) return hash('sha256', Buffer.concat([textCell.bytes.subarray(textCell.start, textCell.end), LINE_BREAK, pin.bytes.subarray(pin.start, pin.end)]), 'hex')
  if (p !== pinHeld || !bytesAt(pin.bytes, pin.start, joined, PIN_AT + 1, PIN_AT + 1 + p)) {
    if (p !== pinHeld) views = []
    pinHeld = p
    pin.bytes.copy(joined, PIN_AT + 1, pin.start, pin.end)
  }
  textCell.bytes.copy(joined, PIN_AT - t, textCell.start, textCell.end)
  return hash('sha256', (views[t] ??= joined.subarray(PIN_AT - t, PIN_AT + 1 + p)), 'hex')
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
      return spellsInteger(b, start, end, c.stepsPerGen) === end
    case 'period':
      return typeof c.period === 'number' ? spellsInteger(b, start, end, c.period) === end : b.toString('utf8', start, end) === String(c.period)
    case 'd': {
      const comma = spellsInteger(b, start, end, c.dx)
      return comma >= 0 && b[comma] === 0x2c && spellsInteger(b, comma + 1, end, c.dy) === end
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
  const digest = contentDigest(c.identity, c.pin)
  if (!isIdOf(c.id, digest)) out.push({ code: IDENTITY_CODES.idMismatch, detail: `id ${text(c.id)} is not the hash of its identity and pin (${digest.slice(0, CONTENT_ID_DIGITS)})` })
  const head = headOf(c)
  // An identity that starts with the head of its columns has their lines, each equal to its column.
  const afterHead = startsWithHead(c.identity, head)
  if (afterHead && tailMatches(c, c.identity.start + head.bytes!.length)) return 'ours'
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

/**
 * Whether the identity's lines after its head are those our publisher writes, each equal to its column: an
 * optional rule= line (checked against nothing), then phases= spelling the typed phases, then canonical=
 * holding the canonical column to the end. Such an identity is in our spelling with every line right, as
 * lineValues and lineMatches would find it, without finding its lines first; any other tail (lines in
 * another order, one more line, a canonical column with a line break) is read by them.
 */
function tailMatches(c: PatternCells, p: number): boolean {
  const b = c.identity.bytes
  const end = c.identity.end
  if (end - p >= RULE_KEY.length && bytesAt(b, p, RULE_KEY, 0, RULE_KEY.length)) {
    p += RULE_KEY.length
    while (p < end && b[p] !== 0x0a) p++
    p++
  }
  if (end - p < PHASES_KEY.length || !bytesAt(b, p, PHASES_KEY, 0, PHASES_KEY.length)) return false
  p = phasesEnd(b, p + PHASES_KEY.length, end, c.phases)
  if (p < 0 || end - p < CANONICAL_KEY.length || !bytesAt(b, p, CANONICAL_KEY, 0, CANONICAL_KEY.length)) return false
  p += CANONICAL_KEY.length
  const { bytes, start, end: canonicalEnd } = c.canonical
  if (end - p !== canonicalEnd - start) return false
  for (let x = start; x < canonicalEnd; x++, p++) if (b[p] !== bytes[x] || bytes[x] === 0x0a) return false
  return true
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
const spellsPhases = (b: Uint8Array, start: number, end: number, t: TypedPhases): boolean => phasesEnd(b, start, end, t) === end

/**
 * Where the phases= text of the typed phases (cells `i,j,k,s` joined by spaces, phases by `;`) ends if it
 * starts at b[start] and ends by `end`, or -1 when the bytes there are not that text.
 */
function phasesEnd(b: Uint8Array, start: number, end: number, t: TypedPhases): number {
  let p = start
  for (let q = t.first; q < t.last; q++) {
    if (q > t.first) {
      if (b[p] !== 0x3b || p >= end) return -1
      p++
    }
    const from = t.cellOffsets[q]!
    const to = t.cellOffsets[q + 1]!
    for (let x = from; x < to; x++) {
      if (x > from) {
        if (b[p] !== 0x20 || p >= end) return -1
        p++
      }
      p = spellsInteger(b, p, end, t.i[x]!)
      if (p < 0 || b[p] !== 0x2c) return -1
      p = spellsInteger(b, p + 1, end, t.j[x]!)
      if (p < 0 || b[p] !== 0x2c) return -1
      p = spellsInteger(b, p + 1, end, t.k[x]!)
      if (p < 0 || b[p] !== 0x2c) return -1
      p = spellsInteger(b, p + 1, end, t.s[x]!)
      if (p < 0) return -1
    }
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

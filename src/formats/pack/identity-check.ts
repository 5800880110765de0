/**
 * Level 1 on records' ids and identity texts ("Ids"; identity.ts gives our spelling of the lines). A
 * pattern's cells are checked where they lie, as UTF-8 bytes and typed arrays of a decoded part
 * (parquet-vectors.ts): hashing its identity and comparing its lines with its columns needs no string, and
 * its typed phases are matched against the phases= line number by number, with no text built for them.
 * Ants and Quick Start entries are checked on their rows.
 */
import { hash } from 'node:crypto'
import { antId, IDENTITY_CODES, PATTERN_SCHEME, quickstartId } from './identity.js'

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
  period: bigint
  dx: number
  dy: number
  phases: TypedPhases
}

const text = (c: TextCell): string => c.bytes.toString('utf8', c.start, c.end)

const sameText = (a: TextCell, b: Uint8Array, start: number, end: number): boolean => {
  if (a.end - a.start !== end - start) return false
  for (let x = a.start, y = start; x < a.end; x++, y++) if (a.bytes[x] !== b[y]) return false
  return true
}

/**
 * Where the decimal text of integer v (as JS writes it: a minus sign, no leading zeros) ends if it starts
 * at b[p], or -1 when the bytes there are not that text.
 */
function spellsInteger(b: Uint8Array, p: number, end: number, v: number): number {
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
/** The lines checked against columns, in the order their findings come. */
const LINES = ['tiling', 'model', 'nb', 'steps', 'class', 'period', 'd', 'canonical', 'phases'] as const
const LINE_KEYS = LINES.map((l) => Buffer.from(l))
const PHASES = LINES.indexOf('phases')

/** Scratch space for identity + "\n" + pin, grown as needed (a cell is at most 1 MiB). */
let scratch = Buffer.allocUnsafe(4096)

/** The 32 hex digits of a content id over text + "\n" + pin, written in `cells` bytes, compared with `id`. */
function idMatches(textCell: TextCell, pin: TextCell, id: TextCell): { ok: boolean; expected: string } {
  const t = textCell.end - textCell.start
  const n = t + 1 + pin.end - pin.start
  if (scratch.length < n) scratch = Buffer.allocUnsafe(Math.max(n, 2 * scratch.length))
  textCell.bytes.copy(scratch, 0, textCell.start, textCell.end)
  scratch[t] = 0x0a
  pin.bytes.copy(scratch, t + 1, pin.start, pin.end)
  const digest = hash('sha256', scratch.subarray(0, n), 'hex')
  let ok = id.end - id.start === 32
  for (let x = 0; ok && x < 32; x++) ok = id.bytes[id.start + x] === digest.charCodeAt(x)
  return { ok, expected: digest.slice(0, 32) }
}

/**
 * Level 1 for a pattern: its id is the hash of its identity and pin; and where the identity is in our
 * spelling (its first line the scheme, then `key=value` lines, no key twice), its tiling=, model=, nb=,
 * steps=, class=, period=, d= and canonical= lines equal the columns and the typed phases equal the phases=
 * line. An identity in another scheme or spelling states nothing checkable but its hash (the caller notes
 * it: level 4 is JETCARP's). Findings are appended to `out`.
 */
export function checkPatternIdentity(c: PatternCells, out: IdentityFinding[]): 'ours' | 'unknown' {
  const id = idMatches(c.identity, c.pin, c.id)
  if (!id.ok) out.push({ code: IDENTITY_CODES.idMismatch, detail: `id ${text(c.id)} is not the hash of its identity and pin (${id.expected})` })
  const found = lineValues(c.identity)
  if (!found) return 'unknown'
  const b = c.identity.bytes
  const line = (n: number, matches: (start: number, end: number) => boolean, column: () => string): void => {
    const start = found[2 * n]!
    const end = found[2 * n + 1]!
    if (start < 0) out.push({ code: IDENTITY_CODES.identityMalformed, detail: `the identity has no ${LINES[n]}= line` })
    else if (!matches(start, end)) out.push({ code: IDENTITY_CODES.identityColumn, detail: `${LINES[n]}= says ${JSON.stringify(b.toString('utf8', start, end))}, the column ${JSON.stringify(column())}` })
  }
  const cell = (n: number, v: TextCell): void => line(n, (s, e) => sameText(v, b, s, e), () => text(v))
  const integer = (n: number, v: number | bigint): void =>
    line(n, (s, e) => (typeof v === 'number' || (v >= -(2n ** 53n) && v <= 2n ** 53n) ? spellsInteger(b, s, e, Number(v)) === e : b.toString('utf8', s, e) === String(v)), () => String(v))
  cell(0, c.pinKey)
  cell(1, c.model)
  cell(2, c.neighbourhood)
  integer(3, c.stepsPerGen)
  cell(4, c.class)
  integer(5, c.period)
  line(6, (s, e) => {
    const comma = spellsInteger(b, s, e, c.dx)
    return comma >= 0 && b[comma] === 0x2c && spellsInteger(b, comma + 1, e, c.dy) === e
  }, () => `${c.dx},${c.dy}`)
  cell(7, c.canonical)
  const phases = found[2 * PHASES]!
  if (phases >= 0 && !spellsPhases(b, phases, found[2 * PHASES + 1]!, c.phases)) {
    out.push({ code: IDENTITY_CODES.phasesMismatch, detail: 'the typed phases differ from the phases= line' })
  }
  return 'ours'
}

/** lineValues' answer, reused: allocating a typed array per row cost more than finding the lines. */
const lineBounds = new Int32Array(2 * LINES.length)

/**
 * Where the value of each of LINES is in an identity (start and end; -1 when it has no such line), or null
 * when the identity is not in our spelling. The answer is good until the next call.
 */
function lineValues(identity: TextCell): Int32Array | null {
  const b = identity.bytes
  const end = identity.end
  let nl = identity.start
  while (nl < end && b[nl] !== 0x0a) nl++
  if (nl - identity.start !== SCHEME.length || SCHEME.compare(b, identity.start, nl) !== 0) return null
  const found = lineBounds.fill(-1)
  let others: Set<string> | undefined
  while (nl < end) {
    const start = nl + 1
    let eq = -1
    for (nl = start; nl < end; nl++) {
      const x = b[nl]
      if (x === 0x0a) break
      if (x === 0x3d && eq < 0) eq = nl
    }
    if (eq <= start) return null
    const n = lineKey(b, start, eq)
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

/** Which of LINES the key b[start, end) is, or -1. */
function lineKey(b: Uint8Array, start: number, end: number): number {
  next: for (let n = 0; n < LINE_KEYS.length; n++) {
    const key = LINE_KEYS[n]!
    if (key.length !== end - start) continue
    for (let x = 0; x < key.length; x++) if (key[x] !== b[start + x]) continue next
    return n
  }
  return -1
}

/** Whether b[start, end) is exactly the phases= text of the typed phases: cells `i,j,k,s` joined by spaces, phases by `;`. */
function spellsPhases(b: Uint8Array, start: number, end: number, t: TypedPhases): boolean {
  let p = start
  for (let q = t.first; q < t.last; q++) {
    if (q > t.first) {
      if (b[p] !== 0x3b || p >= end) return false
      p++
    }
    const from = t.cellOffsets[q]!
    const to = t.cellOffsets[q + 1]!
    for (let x = from; x < to; x++) {
      if (x > from) {
        if (b[p] !== 0x20 || p >= end) return false
        p++
      }
      p = spellsInteger(b, p, end, t.i[x]!)
      if (p < 0 || b[p] !== 0x2c) return false
      p = spellsInteger(b, p + 1, end, t.j[x]!)
      if (p < 0 || b[p] !== 0x2c) return false
      p = spellsInteger(b, p + 1, end, t.k[x]!)
      if (p < 0 || b[p] !== 0x2c) return false
      p = spellsInteger(b, p + 1, end, t.s[x]!)
      if (p < 0) return false
    }
  }
  return p === end
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

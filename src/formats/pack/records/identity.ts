/**
 * Identity texts and content ids ("Ids"). The seeds do not include JETCARP's Library format, so this is
 * our spelling of the identity lines the spec names (docs/pack-format-notes.md, "Identity texts"): the
 * same facts give the same text, and the typed columns of a row are copies of its lines.
 *
 * A pattern (scheme jetcarp-pattern-v3), one `key=value` line each, joined by \n, no final newline:
 *
 *   jetcarp-pattern-v3
 *   tiling=<pin_key>
 *   model=<bs | generations:N>   the cell-state model: two-state B/S, or Generations with N states
 *   nb=<touch|edge>
 *   steps=<steps_per_gen>
 *   class=<class>
 *   period=<period>
 *   d=<dx>,<dy>
 *   rule=<notation>                  only for puffer, mover, gun and other (their exact rule)
 *   phases=<phase>;<phase>;...       each phase its cells "i,j,k,s" joined by spaces, sorted by i, j, k
 *   canonical=<picture of phase 0>
 *
 * The phases are in one frame (phase n is generation n of phase 0), translated so that phase 0's least i
 * and least j are 0. The picture is phase 0's rows j = 0, 1, ..., joined by `/`; a row is its cells
 * i = 0, 1, ... with one character per tile type k (`.` dead, `o` state 1, `2`..`9` and `a`..`z` for states
 * 2 to 35, `(n)` beyond), trailing dead cells left off.
 *
 * An ant (jetcarp-ant-v1): jetcarp-ant-v1, tiling=, rule=, kind=, states=, colors=, start= (JSON: the
 * empty start is start="empty").
 *
 * Ids: a pattern's is the first 32 hex digits of SHA-256 over identity + "\n" + pin; an ant's is `ant-`
 * and the same hash over its identity; a Quick Start entry's is `qs-` and the hash over its scene + "\n" +
 * pin.
 */
import { hash } from 'node:crypto'
import { jsonStringLength, MAX_STRING_CELL_BYTES, tellStringCell } from '../tables/table-schemas.js'

export const PATTERN_SCHEME = 'jetcarp-pattern-v3'
export const ANT_SCHEME = 'jetcarp-ant-v1'

/** Classes a pattern row may state; the first three are periodic and replayable (level 3). */
export const PATTERN_CLASSES = ['still_life', 'oscillator', 'spaceship', 'puffer', 'mover', 'gun', 'other'] as const
export type PatternClass = (typeof PATTERN_CLASSES)[number]
/** The classes whose identity and pattern row state their exact rule (puffers, movers, guns and other). */
export const WITH_RULE: ReadonlySet<string> = new Set(['puffer', 'mover', 'gun', 'other'])

export interface Cell { i: number; j: number; k: number; s: number }

export const IDENTITY_CODES = {
  idMismatch: 'pack.id-mismatch',
  identityUnknown: 'pack.identity-unknown-scheme',
  identityMalformed: 'pack.identity-malformed',
  identityColumn: 'pack.identity-column-mismatch',
  phasesMismatch: 'pack.phases-mismatch',
} as const

/** A content id's hex digits: the first of SHA-256 over the text, "\n" and the pin (identity-check.ts hashes the same bytes from cells). */
export const CONTENT_ID_DIGITS = 32

/** The content id of a text and a geometry pin. */
export function contentHash(text: string, pin: string): string {
  return hash('sha256', `${text}\n${pin}`, 'hex').slice(0, CONTENT_ID_DIGITS)
}

export const patternId = (identity: string, pin: string) => contentHash(identity, pin)
export const antId = (identity: string, pin: string) => `ant-${contentHash(identity, pin)}`
export const quickstartId = (scene: string, pin: string) => `qs-${contentHash(scene, pin)}`

const compareCells = (x: Cell, y: Cell) => x.i - y.i || x.j - y.j || x.k - y.k

/**
 * The phases moved so that phase 0's least i and least j are 0, each phase's cells sorted by i, j, k.
 * `inPlace`: the phases' lists and cells are moved and sorted themselves (a parsed record's, which nothing
 * else holds: copying them was a sixth of a publish's garbage); else they are copied.
 */
export function normalisePhases(phases: readonly (readonly Cell[])[], inPlace = false): Cell[][] {
  const first = phases[0] ?? []
  let di = first.length > 0 ? Infinity : 0
  let dj = di
  for (const c of first) {
    if (c.i < di) di = c.i
    if (c.j < dj) dj = c.j
  }
  return phases.map((p) => {
    let out: Cell[]
    if (inPlace) {
      out = p as Cell[]
      if (di !== 0 || dj !== 0) {
        for (let n = 0; n < out.length; n++) {
          const c = out[n]!
          c.i -= di
          c.j -= dj
        }
      }
    } else {
      out = new Array<Cell>(p.length)
      for (let n = 0; n < p.length; n++) {
        const c = p[n]!
        out[n] = { i: c.i - di, j: c.j - dj, k: c.k, s: c.s }
      }
    }
    if (out.length > 32) return out.sort(compareCells)
    // A short phase by insertion, which is stable like Array#sort (equal cells keep their order) and, without
    // a call per comparison, several times faster on a pattern's few cells.
    for (let a = 1; a < out.length; a++) {
      const x = out[a]!
      let b = a - 1
      for (; b >= 0; b--) {
        const y = out[b]!
        if (!(x.i < y.i || (x.i === y.i && (x.j < y.j || (x.j === y.j && x.k < y.k))))) break
        out[b + 1] = y
      }
      out[b + 1] = x
    }
    return out
  })
}

const STATE_CHARS = '.o23456789abcdefghijklmnopqrstuvwxyz'
const DEAD = 0x2e // .

/** writePicture's row offsets for pictures of up to ROW_SCRATCH - 1 rows: where each row's cells start, and where its next cell goes. */
const ROW_SCRATCH = 4096
const rowStarts = new Int32Array(ROW_SCRATCH)
const rowNext = new Int32Array(ROW_SCRATCH)

/** The longest picture: the canonical column is a string cell, at most 1 MiB (table-schemas.ts MAX_STRING_CELL_BYTES). */
const MAX_PICTURE_BYTES = MAX_STRING_CELL_BYTES

/** A picture longer than a string cell may be: its pattern is refused before more of it is made. */
export class PictureTooLong extends RangeError {}

const tooLong = (): PictureTooLong => new PictureTooLong(`the canonical picture would be longer than ${MAX_PICTURE_BYTES} bytes, the most a string cell holds`)

/**
 * A picture being written in the identity scratch, after `canonical=`: it is ASCII, a byte a character. A
 * row's dead characters are owed (`owed`) until a live one follows, so the dead run a row ends with, which
 * the picture leaves off, is never written: a pattern whose cells lie far apart costs what its picture
 * holds, and one whose picture would pass MAX_PICTURE_BYTES is refused before it does. Written as bytes:
 * as a string joined from a row's characters it was a sixth of the main thread's garbage at a million
 * patterns, and the identity holds it as bytes anyway.
 */
interface PictureWriter {
  start: number
  at: number
  owed: number
}

const picture: PictureWriter = { start: 0, at: 0, owed: 0 }

/** Writes the dead characters owed and the character of state `s` (above 0). */
function writeLive(w: PictureWriter, s: number): void {
  // `(n)`: n as writeNumber writes it, at most 24 characters.
  const room = w.owed + (s < STATE_CHARS.length ? 1 : 26)
  if (w.at - w.start + w.owed + 1 > MAX_PICTURE_BYTES) throw tooLong()
  const b = scratchRoom(w.at, room)
  // A few dead characters by hand: Buffer#fill checks its arguments in JS, which cost more than a short run.
  if (w.owed > 16) b.fill(DEAD, w.at, w.at + w.owed)
  else for (let n = 0; n < w.owed; n++) b[w.at + n] = DEAD
  w.at += w.owed
  w.owed = 0
  if (s < STATE_CHARS.length) b[w.at++] = STATE_CHARS.charCodeAt(s)
  else {
    b[w.at++] = 0x28 // (
    w.at = writeNumber(b, w.at, s)
    b[w.at++] = 0x29 // )
  }
  if (w.at - w.start > MAX_PICTURE_BYTES) throw tooLong()
}

/** Where the cells of row[n]'s i end, from n. */
function groupEnd(row: readonly Cell[], n: number, to: number): number {
  const i = row[n]!.i
  let end = n + 1
  while (end < to && row[end]!.i === i) end++
  return end
}

/**
 * The characters of one i's cells row[from, to): one a tile type k, `.` for a type no cell has, the later
 * of two same cells winning. A k outside [0, tileTypes) is placed as an array index would take it: past
 * the end it lengthens the group (the places between are empty, not dead), below 0 it is not part of it.
 * Written from the cells, not from a character a tile type, so a hostile k costs nothing.
 */
function writeGroup(w: PictureWriter, row: readonly Cell[], from: number, to: number, tileTypes: number): void {
  // By k, the later cell last among equal k (a stable sort of the cells' order).
  const cells = row.slice(from, to).filter((c) => c.k >= 0).sort((x, y) => x.k - y.k)
  let next = 0 // the next k the group is at
  for (let x = 0; x < cells.length; x++) {
    const c = cells[x]!
    if (x + 1 < cells.length && cells[x + 1]!.k === c.k) continue
    if (c.k > next) w.owed += Math.min(c.k, tileTypes) - Math.min(next, tileTypes)
    if (c.s === 0) w.owed++
    else if (c.s > 0) writeLive(w, c.s)
    next = c.k + 1
  }
  if (tileTypes > next) w.owed += tileTypes - next
}

/**
 * Writes phase 0's picture (module comment) at `at` in the identity scratch; returns its end.
 * `tileTypes` is the tiling's number of tile types.
 */
function writePicture(at: number, phase0: readonly Cell[], tileTypes: number): number {
  let maxJ = -1
  for (const c of phase0) if (c.j > maxJ) maxJ = c.j
  // Every row after the first adds a `/`: a picture of more rows than the limit has bytes is refused at once.
  if (maxJ > MAX_PICTURE_BYTES) throw tooLong()
  // The picture starts at i = j = 0. Row j's cells are byRow[start[j], start[j + 1]), in phase 0's order (a
  // stable counting sort), which for a normalised phase 0 is by i, then k.
  // Offsets in scratch arrays while they fit: two typed arrays made a picture were a fifth of its time.
  const fits = maxJ + 2 <= ROW_SCRATCH
  const start = fits ? rowStarts.fill(0, 0, maxJ + 2) : new Int32Array(maxJ + 2)
  const next = fits ? rowNext : new Int32Array(maxJ + 1)
  for (const c of phase0) if (c.i >= 0 && c.j >= 0) start[c.j + 1]!++
  for (let j = 0; j <= maxJ; j++) start[j + 1]! += start[j]!
  const byRow = new Array<Cell>(start[maxJ + 1]!)
  for (let j = 0; j <= maxJ; j++) next[j] = start[j]!
  for (const c of phase0) if (c.i >= 0 && c.j >= 0) byRow[next[c.j]!++] = c
  const w = picture
  w.start = at
  w.at = at
  for (let j = 0; j <= maxJ; j++) {
    // A `/` before every row but the first; the dead run a row ends with is left off.
    if (j > 0) {
      if (w.at - w.start + 1 > MAX_PICTURE_BYTES) throw tooLong()
      scratchRoom(w.at, 1)[w.at++] = 0x2f
    }
    w.owed = 0
    let from = start[j]!
    let to = start[j + 1]!
    let row = byRow
    for (let n = from + 1; n < to; n++) {
      if (byRow[n]!.i >= byRow[n - 1]!.i) continue
      row = byRow.slice(from, to).sort((x, y) => x.i - y.i)
      to -= from
      from = 0
      break
    }
    let reached = 0 // the next i the row is at
    for (let n = from; n < to; ) {
      const c = row[n]!
      if (c.i > reached) w.owed += tileTypes * (c.i - reached)
      if (tileTypes === 1 && c.k === 0 && (n + 1 === to || row[n + 1]!.i !== c.i)) {
        // One character (a state below 0 has none).
        if (c.s === 0) w.owed++
        else if (c.s > 0) writeLive(w, c.s)
        n++
      } else {
        const end = groupEnd(row, n, to)
        writeGroup(w, row, n, end, tileTypes)
        n = end
      }
      reached = c.i + 1
    }
  }
  return w.at
}

/** Phase 0's picture (module comment) as a string; `tileTypes` is the tiling's number of tile types. */
export function canonicalPicture(phase0: readonly Cell[], tileTypes: number): string {
  // Written where an identity's head is kept: the next identity writes its head again.
  head = undefined
  const end = writePicture(0, phase0, tileTypes)
  return identityScratch.toString('latin1', 0, end)
}

/**
 * Where a pattern's identity is built: its UTF-8, then "\n" and the pin, which the id hashes. Built once as
 * bytes and read back once: concatenating a cell's numbers made a rope of small strings that every later
 * pass (the line-break check, the join, the hash's own UTF-8) had to walk.
 */
let identityScratch: Buffer = Buffer.allocUnsafe(64 * 1024)

/** The scratch with room for `more` bytes after `at`. */
function scratchRoom(at: number, more: number): Buffer {
  if (identityScratch.length < at + more) {
    const next = Buffer.allocUnsafe(Math.max(at + more, identityScratch.length * 2))
    identityScratch.copy(next, 0, 0, at)
    identityScratch = next
  }
  return identityScratch
}

/** Writes text as UTF-8 at `at`; returns the end. */
function writeText(at: number, text: string): number {
  const b = scratchRoom(at, 3 * text.length)
  return at + b.write(text, at, 'utf8')
}

/** Writes the phases' cells "i,j,k,s", joined by spaces, phases by ';'; returns the end. */
function writePhases(at: number, phases: readonly (readonly Cell[])[]): number {
  for (let p = 0; p < phases.length; p++) {
    const cells = phases[p]!
    // A cell takes at most four numbers of 24 characters (an integer as JS prints it: -1.2345678901234567e+300) and four separators.
    const b = scratchRoom(at, 1 + cells.length * 100)
    if (p > 0) b[at++] = 0x3b // ;
    for (let n = 0; n < cells.length; n++) {
      const c = cells[n]!
      if (n > 0) b[at++] = 0x20
      at = writeNumber(b, at, c.i)
      b[at++] = 0x2c // ,
      at = writeNumber(b, at, c.j)
      b[at++] = 0x2c
      at = writeNumber(b, at, c.k)
      b[at++] = 0x2c
      at = writeNumber(b, at, c.s)
    }
  }
  return at
}

/**
 * Writes a number as JS prints it; returns the end. A 32-bit integer, as every cell's numbers are, is written
 * digit by digit (at most 11 bytes), with no string made for it: the checker spells a row's typed phases with
 * this too (identity-check.ts). One digit, most of a pattern's numbers, is written here and anything longer
 * in a function of its own, so that this stays small enough for V8 to inline where it is called: the call
 * a number was most of spelling a row's phases (44 million of them in a check of a million patterns).
 */
export function writeNumber(b: Uint8Array, at: number, x: number): number {
  if (x >>> 0 === x && x < 10) {
    b[at] = 0x30 + x
    return at + 1
  }
  return writeLongerNumber(b, at, x)
}

function writeLongerNumber(b: Uint8Array, at: number, x: number): number {
  if ((x | 0) !== x) {
    const text = String(x)
    for (let i = 0; i < text.length; i++) b[at + i] = text.charCodeAt(i)
    return at + text.length
  }
  if (x < 0) {
    b[at++] = 0x2d
    x = -x
  }
  if (x < 10) {
    b[at] = 0x30 + x
    return at + 1
  }
  let digits = 1
  for (let t = x; t >= 10; t = Math.floor(t / 10)) digits++
  for (let q = at + digits - 1; q >= at; q--) {
    b[q] = 0x30 + (x % 10)
    x = Math.floor(x / 10)
  }
  return at + digits
}

export interface PatternFacts {
  pinKey: string
  /** `bs`, or `generations:N` for Generations with N states: what a cell's s means. */
  model: string
  neighbourhood: 'touch' | 'edge'
  stepsPerGen: number
  class: PatternClass
  period: number
  dx: number
  dy: number
  /** For puffers, movers, guns and other: the exact rule's notation. */
  rule?: string | null
  /** In one frame; normalised here. */
  phases: readonly (readonly Cell[])[]
  /** Whether `phases` may be normalised in place (see normalisePhases). */
  phasesOwned?: boolean
  tileTypes: number
}

/** The lines a pattern's identity starts with: the scheme, then tiling= to d=, each a copy of a column. */
export function patternHeadLines(f: { pinKey: string; model: string; neighbourhood: string; stepsPerGen: number; class: string; period: number | bigint; dx: number; dy: number }): string[] {
  return [
    PATTERN_SCHEME, `tiling=${f.pinKey}`, `model=${f.model}`, `nb=${f.neighbourhood}`, `steps=${f.stepsPerGen}`,
    `class=${f.class}`, `period=${f.period}`, `d=${f.dx},${f.dy}`,
  ]
}

/** The identity text of a pattern, and the normalised phases and picture its typed columns copy. */
export function patternIdentity(f: PatternFacts): { identity: string; phases: Cell[][]; canonical: string } {
  const { bytes, phases, pictureBytes } = writePatternIdentity(f)
  const identity = madeIdentity(bytes)
  return { identity, phases, canonical: identity.slice(identity.length - pictureBytes) }
}

/**
 * As patternIdentity, with the pattern's id under `pin` (patternId's hash, of the bytes just built). A fact
 * with a lone surrogate has its UTF-8 replacement character in the text, as in the hash; the fact's own
 * column is refused for it.
 */
export function identifiedPattern(f: PatternFacts, pin: string): { identity: string; id: string; phases: Cell[][]; canonical: string } {
  const { bytes, phases, pictureBytes } = writePatternIdentity(f)
  const identity = madeIdentity(bytes)
  const end = writeText(bytes, `\n${pin}`)
  const id = hash('sha256', identityScratch.subarray(0, end), 'hex').slice(0, CONTENT_ID_DIGITS)
  // The picture ends the identity, a character a byte.
  return { identity, id, phases, canonical: identity.slice(identity.length - pictureBytes) }
}

/**
 * The identity of `bytes` bytes at the scratch's start, as a string, whose RFC 8785 text length the row
 * check is told (tellStringCell): after the head, only the line break before canonical= is escaped (the
 * phases and the picture are digits, signs, `,` `;` `.` `/` `(` `)`, spaces and letters).
 */
function madeIdentity(bytes: number): string {
  const identity = identityScratch.toString('utf8', 0, bytes)
  tellStringCell(identity, bytes, bytes + 2 + head!.escapes + 1)
  return identity
}

/**
 * Writes a pattern's identity at the scratch's start; `bytes` is its length, the last `pictureBytes` of it
 * the picture (ASCII: as many characters).
 */
function writePatternIdentity(f: PatternFacts): { bytes: number; phases: Cell[][]; pictureBytes: number } {
  const phases = normalisePhases(f.phases, f.phasesOwned)
  let at = writeHead(f)
  at = writePhases(at, phases)
  const b = scratchRoom(at, CANONICAL_LINE.length)
  for (let n = 0; n < CANONICAL_LINE.length; n++) b[at++] = CANONICAL_LINE.charCodeAt(n)
  const end = writePicture(at, phases[0] ?? [], f.tileTypes)
  return { bytes: end, phases, pictureBytes: end - at }
}

const CANONICAL_LINE = '\ncanonical='

/**
 * The facts whose head (the lines before the phases) is at the scratch's start, where it ends, and the bytes
 * its escapes add to its RFC 8785 text (its line breaks, and whatever the facts' own text holds).
 */
let head: { f: PatternFacts; rule: string | null; end: number; escapes: number } | undefined

/**
 * Writes the lines before the phases, and `phases=`, at the scratch's start, unless they are there already:
 * the records of a publish mostly share them, and making them again was a fifth of building an identity.
 */
function writeHead(f: PatternFacts): number {
  let rule: string | null = null
  if (WITH_RULE.has(f.class)) {
    if (!f.rule) throw new RangeError(`a ${f.class} states its exact rule`)
    rule = f.rule
  }
  const was = head?.f
  if (was && was.pinKey === f.pinKey && was.model === f.model && was.neighbourhood === f.neighbourhood && was.stepsPerGen === f.stepsPerGen
    && was.class === f.class && was.period === f.period && was.dx === f.dx && was.dy === f.dy && head!.rule === rule) return head!.end
  const lines = patternHeadLines(f)
  if (rule !== null) lines.push(`rule=${rule}`)
  // Only the facts' own text can hold a line break: the phases and the picture are numbers and state characters.
  for (const l of lines) if (l.includes('\n')) throw new RangeError(`an identity line holds a line break: ${JSON.stringify(l)}`)
  const end = writeText(0, `${lines.join('\n')}\nphases=`)
  // Measured as written: a fact's lone surrogate is written as the replacement character.
  head = { f: { ...f, phases: [] }, rule, end, escapes: jsonStringLength(identityScratch.toString('utf8', 0, end)) - 2 - end }
  return end
}

export interface AntFacts { pinKey: string; rule: string; kind: string; states: number; colors: number; start: string }

export function antIdentity(f: AntFacts): string {
  const lines = [ANT_SCHEME, `tiling=${f.pinKey}`, `rule=${f.rule}`, `kind=${f.kind}`, `states=${f.states}`, `colors=${f.colors}`, `start=${f.start}`]
  for (const l of lines) if (l.includes('\n')) throw new RangeError(`an identity line holds a line break: ${JSON.stringify(l)}`)
  return lines.join('\n')
}

/**
 * Reading a records file (docs/pack-records.md): its lines as readline gives them, each a JSON object,
 * local paths scrubbed. Lines are read as bytes; a table may have a shape parser that reads its common
 * records straight from them, and any line it does not take is decoded and parsed by JSON.parse, so what
 * a record means, and every refusal, stays the general path's.
 */
import { openRegularFile } from '../../../core/input-file.js'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { READ_LIMITS } from '../tables/parquet-limits.js'
import { mayHoldLocalPath, PATTERN_STATED, PUBLISH_CODES, recordError, scrubLocalPaths, scrubRecordPaths, type RecordPlace, type Row } from './publish-rows.js'

/**
 * Reads the record in `bytes[start, end)` (a line without its \n), or gives undefined for the general path
 * to read it. What it gives must be what JSON.parse gives, members with no value aside.
 */
export type ShapeParser = (bytes: Buffer, start: number, end: number) => Row | undefined

/** What ends a line, as readline reads it: \r\n, \n or a lone \r. */
const LINE_END = /\r\n|\n|\r/

/**
 * The lines of a line's text split at \n: more than one where it holds a lone \r. A \r at its end is the
 * first half of its \r\n (or, on the last line, an ending with nothing after it).
 */
function linesOf(text: string): string[] {
  if (!text.includes('\r')) return [text]
  return (text.endsWith('\r') ? text.slice(0, -1) : text).split(LINE_END)
}

/**
 * The longest records line read: well past any row a part can hold (a row group is at most 32 MiB of row
 * text), so that a file without line breaks is refused instead of gathered into memory without bound.
 */
export const MAX_RECORD_LINE_BYTES = 64 << 20

/** A line longer than MAX_RECORD_LINE_BYTES, found before it is gathered; the reader knows its place. */
class LineTooLong extends Error {}

/** Whether anything is at `path`. */
export async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false)
}

/**
 * The file in blocks of whole lines: each but the last ends with \n. A \n byte is never part of another
 * character's UTF-8, so a line decoded alone reads as it does in the whole file. The chunks of a line longer
 * than a chunk are joined once, when it ends.
 */
async function* lineBlocks(path: string): AsyncGenerator<Buffer> {
  let pending: Buffer[] = []
  let pendingBytes = 0
  const { fh } = await openRegularFile(path)
  for await (const chunk of fh.createReadStream({ highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    const last = chunk.lastIndexOf(0x0a)
    if (last < 0) {
      pendingBytes += chunk.length
      if (pendingBytes > MAX_RECORD_LINE_BYTES) throw new LineTooLong()
      pending.push(chunk)
      continue
    }
    const first = chunk.indexOf(0x0a)
    if (pendingBytes + first > MAX_RECORD_LINE_BYTES) throw new LineTooLong()
    // Only the line that straddles the chunks is joined: joining the whole chunk copied most of the file.
    let from = 0
    if (pending.length > 0) {
      pending.push(chunk.subarray(0, first + 1))
      yield Buffer.concat(pending)
      from = first + 1
    }
    if (from <= last) yield chunk.subarray(from, last + 1)
    pending = last + 1 < chunk.length ? [chunk.subarray(last + 1)] : []
    pendingBytes = chunk.length - last - 1
  }
  if (pending.length > 0) yield Buffer.concat(pending)
}

/**
 * Calls `each` with every record of `<dir>/<file>` (if the file is there) and its place (lines from 1), in
 * order; `shape` reads the lines it can. A record is parsed when its turn comes, so that a block of lines
 * never becomes thousands of live objects.
 */
export async function eachRecord(dir: string, file: string, each: (record: Row, at: RecordPlace) => Promise<void> | undefined, shape?: ShapeParser): Promise<void> {
  const path = join(dir, file)
  if (!(await exists(path))) return
  let line = 0
  try {
    for await (const block of lineBlocks(path)) {
      for (let start = 0; start < block.length; ) {
        let end = block.indexOf(0x0a, start)
        if (end < 0) end = block.length
        const record = shape?.(block, start, end)
        if (record && end - start >= LIST_ITEMS_GATE) refuseUnbuildable(record, { file: path, line: line + 1 })
        if (record) {
          // Awaited only when `each` waits: an await a record cost a promise and a microtask.
          const waits = each(record, { file: path, line: ++line })
          if (waits) await waits
        } else {
          for (const text of linesOf(block.toString('utf8', start, end))) {
            const at = { file: path, line: ++line }
            const parsed = parseRecord(text, at)
            if (text.length >= LIST_ITEMS_GATE) refuseUnbuildable(parsed, at)
            const waits = each(scrubRecordPaths(parsed, text), at)
            if (waits) await waits
          }
        }
        start = end + 1
      }
    }
  } catch (err) {
    // The line being gathered is the one after the last read.
    if (err instanceof LineTooLong) throw recordError(PUBLISH_CODES.record, { file: path, line: line + 1 }, `a line longer than ${MAX_RECORD_LINE_BYTES >> 20} MiB`)
    throw err
  }
}

/**
 * Lines shorter than this cannot hold more list elements than a reader builds a row from: each element
 * takes two bytes of JSON at least (a value, and a comma or a bracket).
 */
const LIST_ITEMS_GATE = 2 * READ_LIMITS.rowListItems

/** Refuses a record of more list elements than a reader builds a row from: its row would be published unchecked. */
function refuseUnbuildable(record: Row, at: RecordPlace): void {
  const n = listElements(record)
  if (n > READ_LIMITS.rowListItems) throw recordError(PUBLISH_CODES.record, at, `the record holds ${n} list elements, more than the ${READ_LIMITS.rowListItems} a reader builds a row from`)
}

function listElements(v: unknown): number {
  if (Array.isArray(v)) {
    let n = v.length
    for (const x of v) if (typeof x === 'object' && x !== null) n += listElements(x)
    return n
  }
  let n = 0
  if (typeof v === 'object' && v !== null) for (const x of Object.values(v)) if (typeof x === 'object' && x !== null) n += listElements(x)
  return n
}

/** A line's record: refused when blank, not JSON, or not an object. */
function parseRecord(text: string, at: RecordPlace): Row {
  if (text.trim() === '') throw recordError(PUBLISH_CODES.record, at, 'blank line')
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw recordError(PUBLISH_CODES.record, at, `not JSON: ${(err as Error).message}`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw recordError(PUBLISH_CODES.record, at, 'a record is a JSON object')
  return value as Row
}

/** The members a patterns record states, in the order the parser's record has them. */
const PATTERN_MEMBERS = PATTERN_STATED
const PHASES = PATTERN_MEMBERS.indexOf('phases')
const MEMBER_BYTES = PATTERN_MEMBERS.map((m) => Buffer.from(m, 'latin1'))

const QUOTE = 0x22
const COMMA = 0x2c
const MINUS = 0x2d
const SLASH = 0x2f
const ZERO = 0x30
const NINE = 0x39
const COLON = 0x3a
const OPEN_LIST = 0x5b
const BACKSLASH = 0x5c
const CLOSE_LIST = 0x5d
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const TILDE = 0x7e

/**
 * The parser of the common patterns record: one line of compact JSON with the members a record states
 * (each once), string values of printable ASCII without escapes, integers of at most nine digits written
 * as JSON.parse reads them exactly (no -0), null, and phases as lists of cells {"i","j","k","s"} in that
 * order. Anything else (whitespace, escapes, other members or number forms, a site) is the general path's.
 * JSON.parse was a fifth of the main thread's time at a million patterns, most of it the decoding and the
 * JSON.parse's own objects; bytes read here need no string a line, and repeated strings are not made again.
 * Every read is of the line's own bytes, [start, end): those after it are another line's.
 */
export class PatternRecordParser {
  private b: Buffer = Buffer.alloc(0)
  private p = 0
  private end = 0
  /** The string or phases just read; an integer is `n`. */
  private v: unknown = undefined
  private n = 0
  /** Whether a string read may hold a local path (publish-rows.ts mayHoldLocalPath). */
  private pathMark = false
  /** Each member's last string, and its bytes: most records repeat a pin key, model, class or family. */
  private readonly lastText: string[] = PATTERN_MEMBERS.map(() => '')
  private readonly lastBytes: Buffer[] = PATTERN_MEMBERS.map(() => Buffer.alloc(0))
  /** Whether each member's last string may hold a local path. */
  private readonly lastMark: boolean[] = PATTERN_MEMBERS.map(() => false)
  /** The member that followed each member (and, last, the first member) in the last record: records mostly keep one order. */
  private readonly next = new Int32Array(PATTERN_MEMBERS.length + 1)
  private readonly values: unknown[] = PATTERN_MEMBERS.map(() => undefined)

  readonly parse: ShapeParser = (bytes, start, end) => {
    this.b = bytes
    this.p = start
    this.end = end
    this.pathMark = false
    const values = this.values
    for (let m = 0; m < values.length; m++) values[m] = undefined
    let seen = 0
    let previous: number = PATTERN_MEMBERS.length
    if (start >= end || bytes[this.p++] !== OPEN_OBJECT) return undefined
    for (;;) {
      const m = this.member(this.next[previous]!)
      // The colon and the value's first byte both within the line.
      if (m < 0 || (seen & (1 << m)) !== 0 || this.p + 1 >= end || bytes[this.p++] !== COLON) return undefined
      seen |= 1 << m
      this.next[previous] = m
      previous = m
      const c = bytes[this.p]
      if (c === QUOTE) {
        if (!this.text(m)) return undefined
        values[m] = this.v
      } else if (c === 0x6e) {
        if (this.p + 3 >= end || bytes[this.p + 1] !== 0x75 || bytes[this.p + 2] !== 0x6c || bytes[this.p + 3] !== 0x6c) return undefined // null
        this.p += 4
        values[m] = null
      } else if (c === OPEN_LIST) {
        if (m !== PHASES || !this.phases()) return undefined
        values[m] = this.v
      } else {
        const p = this.integer(this.p)
        if (p < 0) return undefined
        this.p = p
        values[m] = this.n
      }
      if (this.p >= end) return undefined
      const d = bytes[this.p++]
      if (d === CLOSE_OBJECT) break
      if (d !== COMMA) return undefined
    }
    if (this.p !== end) return undefined
    // A literal in PATTERN_MEMBERS' order: one shape for every record, made at once.
    const record: Row = {
      pin_key: values[0], model: values[1], neighbourhood: values[2], steps_per_gen: values[3], class: values[4], period: values[5], dx: values[6], dy: values[7],
      speed: values[8], phases: values[9], rule: values[10], site: values[11], gun: values[12], family: values[13], semantics: values[14],
    }
    return this.pathMark ? scrubLocalPaths(record) : record
  }

  /** Reads `"name"` and gives its member's number, or -1; `guess` is tried first. */
  private member(guess: number): number {
    const b = this.b
    if (this.p >= this.end || b[this.p] !== QUOTE) return -1
    const from = this.p + 1
    let to = from
    while (to < this.end && b[to] !== QUOTE) to++
    if (to >= this.end) return -1
    this.p = to + 1
    if (sameBytes(b, from, to, MEMBER_BYTES[guess]!)) return guess
    for (let m = 0; m < MEMBER_BYTES.length; m++) if (sameBytes(b, from, to, MEMBER_BYTES[m]!)) return m
    return -1
  }

  /** Reads a string of printable ASCII without escapes. */
  private text(m: number): boolean {
    const b = this.b
    const from = this.p + 1
    let to = from
    let slash = false
    for (; to < this.end; to++) {
      const c = b[to]!
      if (c === QUOTE) break
      if (c < 0x20 || c >= 0x7f || c === BACKSLASH) return false
      if (c === SLASH || c === TILDE) slash = true
    }
    if (to >= this.end) return false
    this.p = to + 1
    if (sameBytes(b, from, to, this.lastBytes[m]!)) this.v = this.lastText[m]
    else {
      const text = b.toString('latin1', from, to)
      this.lastText[m] = text
      this.lastBytes[m] = Buffer.from(b.subarray(from, to))
      // Every path holds a `/` or `~`; most strings with one are rules (B3/S23) or speeds (c/4), which are none.
      this.lastMark[m] = slash && mayHoldLocalPath(text)
      this.v = text
    }
    if (this.lastMark[m]) this.pathMark = true
    return true
  }

  /**
   * Reads an integer at `p` as JSON.parse reads it exactly: -?(0|[1-9][0-9]{0,8}), not -0, not followed by
   * a fraction or exponent. Gives the position after it (the value in `n`), or -1. A byte at the line's
   * end or past it reads as -1, which is none of those.
   */
  private integer(p: number): number {
    const { b, end } = this
    let c = p < end ? b[p]! : -1
    const negative = c === MINUS
    if (negative) c = ++p < end ? b[p]! : -1
    let x: number
    if (c === ZERO) {
      if (negative) return -1
      x = 0
      c = ++p < end ? b[p]! : -1
    } else {
      if (c < 0x31 || c > NINE) return -1
      x = c - ZERO
      let digits = 1
      for (c = ++p < end ? b[p]! : -1; c >= ZERO && c <= NINE; c = ++p < end ? b[p]! : -1) {
        if (++digits > 9) return -1
        x = x * 10 + c - ZERO
      }
    }
    if ((c >= ZERO && c <= NINE) || c === 0x2e || c === 0x65 || c === 0x45) return -1
    this.n = negative ? -x : x
    return p
  }

  /** Reads `[[{"i":n,"j":n,"k":n,"s":n},...],...]`; `p + 4 < end` before the five bytes up to a cell's integer. */
  private phases(): boolean {
    const { b, end } = this
    const phases: { i: number; j: number; k: number; s: number }[][] = []
    let p = this.p + 1
    for (;;) {
      if (p >= end || b[p++] !== OPEN_LIST) return false
      const cells: { i: number; j: number; k: number; s: number }[] = []
      if (p < end && b[p] === CLOSE_LIST) p++
      else {
        for (;;) {
          if (p + 4 >= end || b[p] !== OPEN_OBJECT || !cellMember(b, p + 1, 0x69) || (p = this.integer(p + 5)) < 0) return false
          const i = this.n
          if (p + 4 >= end || b[p] !== COMMA || !cellMember(b, p + 1, 0x6a) || (p = this.integer(p + 5)) < 0) return false
          const j = this.n
          if (p + 4 >= end || b[p] !== COMMA || !cellMember(b, p + 1, 0x6b) || (p = this.integer(p + 5)) < 0) return false
          const k = this.n
          if (p + 4 >= end || b[p] !== COMMA || !cellMember(b, p + 1, 0x73) || (p = this.integer(p + 5)) < 0) return false
          if (p >= end || b[p++] !== CLOSE_OBJECT) return false
          cells.push({ i, j, k, s: this.n })
          const c = p < end ? b[p++] : -1
          if (c === CLOSE_LIST) break
          if (c !== COMMA) return false
        }
      }
      phases.push(cells)
      const c = p < end ? b[p++] : -1
      if (c === CLOSE_LIST) break
      if (c !== COMMA) return false
    }
    this.p = p
    this.v = phases
    return true
  }
}

/** Whether b[from, to) holds `bytes`. */
function sameBytes(b: Buffer, from: number, to: number, bytes: Buffer): boolean {
  if (to - from !== bytes.length) return false
  for (let k = 0; k < bytes.length; k++) if (b[from + k] !== bytes[k]) return false
  return true
}

/** Whether b[p, p + 4) is `"x":` for the one-letter member x. */
function cellMember(b: Buffer, p: number, x: number): boolean {
  return b[p] === QUOTE && b[p + 1] === x && b[p + 2] === QUOTE && b[p + 3] === COLON
}

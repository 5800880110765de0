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

export const PATTERN_SCHEME = 'jetcarp-pattern-v3'
export const ANT_SCHEME = 'jetcarp-ant-v1'

/** Classes a pattern row may state; the first three are periodic and replayable (level 3). */
export const PATTERN_CLASSES = ['still_life', 'oscillator', 'spaceship', 'puffer', 'mover', 'gun', 'other'] as const
export type PatternClass = (typeof PATTERN_CLASSES)[number]
const WITH_RULE: ReadonlySet<string> = new Set(['puffer', 'mover', 'gun', 'other'])

export interface Cell { i: number; j: number; k: number; s: number }

export const IDENTITY_CODES = {
  idMismatch: 'pack.id-mismatch',
  identityUnknown: 'pack.identity-unknown-scheme',
  identityMalformed: 'pack.identity-malformed',
  identityColumn: 'pack.identity-column-mismatch',
  phasesMismatch: 'pack.phases-mismatch',
} as const

/** The 32-hex content id of a text and a geometry pin. */
export function contentHash(text: string, pin: string): string {
  return hash('sha256', `${text}\n${pin}`, 'hex').slice(0, 32)
}

export const patternId = (identity: string, pin: string) => contentHash(identity, pin)
export const antId = (identity: string, pin: string) => `ant-${contentHash(identity, pin)}`
export const quickstartId = (scene: string, pin: string) => `qs-${contentHash(scene, pin)}`

const compareCells = (x: Cell, y: Cell) => x.i - y.i || x.j - y.j || x.k - y.k

/** The phases moved so that phase 0's least i and least j are 0, each phase's cells sorted by i, j, k. */
export function normalisePhases(phases: readonly (readonly Cell[])[]): Cell[][] {
  const first = phases[0] ?? []
  let di = first.length > 0 ? Infinity : 0
  let dj = di
  for (const c of first) {
    if (c.i < di) di = c.i
    if (c.j < dj) dj = c.j
  }
  return phases.map((p) => {
    const out = p.map((c) => ({ i: c.i - di, j: c.j - dj, k: c.k, s: c.s }))
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

/** A cell's character: `undefined` for a state below 0, which a picture leaves out. */
const stateChar = (s: number): string | undefined => (s < STATE_CHARS.length ? STATE_CHARS[s] : `(${s})`)

/** Phase 0's picture (module comment); `tileTypes` is the tiling's number of tile types. */
export function canonicalPicture(phase0: readonly Cell[], tileTypes: number): string {
  let maxJ = -1
  for (const c of phase0) if (c.j > maxJ) maxJ = c.j
  // The picture starts at i = j = 0. Row j's cells are byRow[start[j], start[j + 1]), in phase 0's order (a
  // stable counting sort), which for a normalised phase 0 is by i, then k.
  const start = new Int32Array(maxJ + 2)
  for (const c of phase0) if (c.i >= 0 && c.j >= 0) start[c.j + 1]!++
  for (let j = 0; j <= maxJ; j++) start[j + 1]! += start[j]!
  const byRow = new Array<Cell>(start[maxJ + 1]!)
  const next = start.slice(0, maxJ + 1)
  for (const c of phase0) if (c.i >= 0 && c.j >= 0) byRow[next[c.j]!++] = c
  const dead = '.'.repeat(tileTypes)
  let picture = ''
  for (let j = 0; j <= maxJ; j++) {
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
    let text = ''
    let reached = 0 // the next i the text is at
    for (let n = from; n < to; ) {
      const c = row[n]!
      text += dead.repeat(c.i - reached)
      if (tileTypes === 1 && c.k === 0 && (n + 1 === to || row[n + 1]!.i !== c.i)) {
        text += stateChar(c.s) ?? ''
        n++
      } else {
        // The cell's tile types, the later of two same cells winning; a k outside [0, tileTypes) is placed as
        // an array index would take it (past the end it lengthens the group, below 0 it is not part of it).
        const group = Array<string>(tileTypes).fill('.')
        for (; n < to && row[n]!.i === c.i; n++) group[row[n]!.k] = stateChar(row[n]!.s)!
        text += group.join('')
      }
      reached = c.i + 1
    }
    let end = text.length
    while (end > 0 && text.charCodeAt(end - 1) === 0x2e) end--
    picture += j === 0 ? text.slice(0, end) : `/${text.slice(0, end)}`
  }
  return picture
}

export function phasesText(phases: readonly (readonly Cell[])[]): string {
  // Concatenated, not mapped and joined: a template and an array a cell cost half as much again.
  let text = ''
  for (let p = 0; p < phases.length; p++) {
    const cells = phases[p]!
    if (p > 0) text += ';'
    for (let n = 0; n < cells.length; n++) {
      const c = cells[n]!
      text += (n > 0 ? ' ' : '') + c.i + ',' + c.j + ',' + c.k + ',' + c.s
    }
  }
  return text
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
  tileTypes: number
}

/** The identity text of a pattern, and the normalised phases and picture its typed columns copy. */
export function patternIdentity(f: PatternFacts): { identity: string; phases: Cell[][]; canonical: string } {
  const phases = normalisePhases(f.phases)
  const canonical = canonicalPicture(phases[0] ?? [], f.tileTypes)
  const lines = [
    PATTERN_SCHEME, `tiling=${f.pinKey}`, `model=${f.model}`, `nb=${f.neighbourhood}`, `steps=${f.stepsPerGen}`,
    `class=${f.class}`, `period=${f.period}`, `d=${f.dx},${f.dy}`,
  ]
  if (WITH_RULE.has(f.class)) {
    if (!f.rule) throw new RangeError(`a ${f.class} states its exact rule`)
    lines.push(`rule=${f.rule}`)
  }
  lines.push(`phases=${phasesText(phases)}`, `canonical=${canonical}`)
  for (const l of lines) if (l.includes('\n')) throw new RangeError(`an identity line holds a line break: ${JSON.stringify(l)}`)
  return { identity: lines.join('\n'), phases, canonical }
}

export interface AntFacts { pinKey: string; rule: string; kind: string; states: number; colors: number; start: string }

export function antIdentity(f: AntFacts): string {
  const lines = [ANT_SCHEME, `tiling=${f.pinKey}`, `rule=${f.rule}`, `kind=${f.kind}`, `states=${f.states}`, `colors=${f.colors}`, `start=${f.start}`]
  for (const l of lines) if (l.includes('\n')) throw new RangeError(`an identity line holds a line break: ${JSON.stringify(l)}`)
  return lines.join('\n')
}

/** The `key=value` lines of an identity after its scheme line, or null when it is not in our spelling. */
export function identityLines(identity: string, scheme: string): Map<string, string> | null {
  const lines = identity.split('\n')
  if (lines[0] !== scheme) return null
  const out = new Map<string, string>()
  for (const line of lines.slice(1)) {
    const eq = line.indexOf('=')
    if (eq <= 0 || out.has(line.slice(0, eq))) return null
    out.set(line.slice(0, eq), line.slice(eq + 1))
  }
  return out
}

export interface IdentityFinding { code: string; detail: string }

interface PatternRow {
  id: unknown; identity: unknown; pin: unknown; pin_key: unknown; class: unknown; neighbourhood: unknown; canonical: unknown
  phases: unknown; period: unknown; dx: unknown; dy: unknown; steps_per_gen: unknown; model: unknown
}

/**
 * Level 1 for a pattern row: its id is the hash of its identity and pin; and where the identity is in our
 * spelling, its tiling=, model=, nb=, steps=, class=, period=, d= and canonical= lines equal the columns and
 * the typed phases equal the phases= line. An identity in another scheme or spelling states nothing
 * checkable but its hash (`pack.identity-unknown-scheme`, a note rather than a failure: level 4 is JETCARP's).
 */
export function checkPatternRow(row: PatternRow): { findings: IdentityFinding[]; spelling: 'ours' | 'unknown' } {
  const findings: IdentityFinding[] = []
  if (typeof row.identity !== 'string' || typeof row.pin !== 'string' || typeof row.id !== 'string') {
    return { findings: [{ code: IDENTITY_CODES.identityMalformed, detail: 'id, identity and pin must be strings' }], spelling: 'unknown' }
  }
  const expected = patternId(row.identity, row.pin)
  if (row.id !== expected) findings.push({ code: IDENTITY_CODES.idMismatch, detail: `id ${row.id} is not the hash of its identity and pin (${expected})` })
  const lines = identityLines(row.identity, PATTERN_SCHEME)
  if (!lines) return { findings, spelling: 'unknown' }
  const column = (line: string, value: unknown, text = String(value)) => {
    const stated = lines.get(line)
    if (stated === undefined) findings.push({ code: IDENTITY_CODES.identityMalformed, detail: `the identity has no ${line}= line` })
    else if (stated !== text) findings.push({ code: IDENTITY_CODES.identityColumn, detail: `${line}= says ${JSON.stringify(stated)}, the column ${JSON.stringify(text)}` })
  }
  column('tiling', row.pin_key)
  column('model', row.model)
  column('nb', row.neighbourhood)
  column('steps', row.steps_per_gen)
  column('class', row.class)
  column('period', row.period)
  column('d', null, `${row.dx},${row.dy}`)
  column('canonical', row.canonical)
  const stated = lines.get('phases')
  const typed = typedPhasesText(row.phases)
  if (stated !== undefined && typed !== stated) findings.push({ code: IDENTITY_CODES.phasesMismatch, detail: `the typed phases differ from the phases= line${typed === null ? ' (not a list of lists of cells)' : ''}` })
  return { findings, spelling: 'ours' }
}

/** The phases= text of a typed phases column, or null when it is not a list of lists of {i, j, k, s}. */
function typedPhasesText(phases: unknown): string | null {
  if (!Array.isArray(phases)) return null
  const out: Cell[][] = []
  for (const p of phases) {
    if (!Array.isArray(p)) return null
    const cells: Cell[] = []
    for (const c of p) {
      if (typeof c !== 'object' || c === null) return null
      const { i, j, k, s } = c as Record<string, unknown>
      if (![i, j, k, s].every((v) => typeof v === 'number' && Number.isInteger(v))) return null
      cells.push({ i: i as number, j: j as number, k: k as number, s: s as number })
    }
    out.push(cells)
  }
  return phasesText(out)
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

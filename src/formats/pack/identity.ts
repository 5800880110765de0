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
import { createHash } from 'node:crypto'

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
  return createHash('sha256').update(`${text}\n${pin}`, 'utf8').digest('hex').slice(0, 32)
}

export const patternId = (identity: string, pin: string) => contentHash(identity, pin)
export const antId = (identity: string, pin: string) => `ant-${contentHash(identity, pin)}`
export const quickstartId = (scene: string, pin: string) => `qs-${contentHash(scene, pin)}`

const compareCells = (x: Cell, y: Cell) => x.i - y.i || x.j - y.j || x.k - y.k

/** The phases moved so that phase 0's least i and least j are 0, each phase's cells sorted by i, j, k. */
export function normalisePhases(phases: readonly (readonly Cell[])[]): Cell[][] {
  const first = phases[0] ?? []
  const di = first.length > 0 ? Math.min(...first.map((c) => c.i)) : 0
  const dj = first.length > 0 ? Math.min(...first.map((c) => c.j)) : 0
  return phases.map((p) => p.map((c) => ({ i: c.i - di, j: c.j - dj, k: c.k, s: c.s })).sort(compareCells))
}

const STATE_CHARS = '.o23456789abcdefghijklmnopqrstuvwxyz'

/** Phase 0's picture (module comment); `tileTypes` is the tiling's number of tile types. */
export function canonicalPicture(phase0: readonly Cell[], tileTypes: number): string {
  const rows = new Map<number, Map<number, string[]>>()
  for (const c of phase0) {
    let row = rows.get(c.j)
    if (!row) rows.set(c.j, (row = new Map()))
    let group = row.get(c.i)
    if (!group) row.set(c.i, (group = Array<string>(tileTypes).fill('.')))
    group[c.k] = c.s < STATE_CHARS.length ? STATE_CHARS[c.s]! : `(${c.s})`
  }
  const maxJ = Math.max(-1, ...rows.keys())
  const out: string[] = []
  for (let j = 0; j <= maxJ; j++) {
    const row = rows.get(j)
    if (!row) { out.push(''); continue }
    const maxI = Math.max(...row.keys())
    let text = ''
    for (let i = 0; i <= maxI; i++) text += (row.get(i) ?? Array<string>(tileTypes).fill('.')).join('')
    let end = text.length
    while (end > 0 && text.charCodeAt(end - 1) === 0x2e) end--
    out.push(text.slice(0, end))
  }
  return out.join('/')
}

export const phasesText = (phases: readonly (readonly Cell[])[]) => phases.map((p) => p.map((c) => `${c.i},${c.j},${c.k},${c.s}`).join(' ')).join(';')

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

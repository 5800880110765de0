/**
 * Column rules of "Tables" that hold within one row (or, for verifications, within one pattern's rows of a
 * part), beyond each column's type: JSON cells in RFC 8785 form, a pattern's rule and cell counts against
 * its class and phases, aliases' reasons, Quick Start scenes' palettes, rater ids and raters rows; and
 * (RaterBook) the raters rows that ratings and groups need. check-part.ts and check-tables.ts apply them
 * at level 1; docs/pack-format-notes.md ("Row rules") gives our readings.
 */
import { CanonicalChecker } from '../json/canonical-check.js'
import type { IdentityFinding } from './identity-check.js'
import { WITH_RULE } from './identity.js'
import { MAX_JSON_DEPTH } from './key-statements.js'

export const ROW_RULE_CODES = {
  /** A cell that holds JSON ("Text columns that hold JSON say so") is not RFC 8785 canonical JSON. */
  jsonCell: 'pack.json-cell-not-canonical',
  /** A pattern's rule column is null for a puffer, mover, gun or other, or set for another class. */
  patternRule: 'pack.pattern-rule-column',
  /** A pattern's gun column is null for a gun, or set for another class. */
  patternGun: 'pack.pattern-gun-column',
  /** cells is not phase 0's count, or min_cells/max_cells are not the fewest and most over the phases. */
  patternCells: 'pack.pattern-cells-mismatch',
  /** An alias whose reason is neither geometry-change nor scheme-change. */
  aliasReason: 'pack.alias-reason-invalid',
  /** A Quick Start scene naming a palette outside the frozen registry and its own palettes. */
  scenePalette: 'pack.scene-palette-unknown',
  /** A rater id that is not rater- and 16 lower-case hex digits. */
  raterId: 'pack.rater-id-malformed',
  /** A raters row breaking its table's rules: consent_scope, a named or nested group, an empty group. */
  raterRow: 'pack.rater-row-invalid',
  /** An annotation whose rev cannot be a ref seq (seq is 1 for a feed's first version and only goes up). */
  annotationRev: 'pack.annotation-rev-invalid',
  /** A rating whose scale is not one of the spec's rubrics, or whose verdict is not a value on its scale. */
  ratingVerdict: 'pack.rating-verdict-invalid',
  /** A rater that ratings or a group name has no raters row. */
  raterRowMissing: 'pack.rater-row-missing',
  /** A rating with a note by a rater none of whose raters rows shares notes. */
  ratingNoteWithoutConsent: 'pack.rating-note-without-consent',
  /** Two main verifications of one pattern by one publisher in different rules, in one part. */
  verificationMain: 'pack.verification-main-duplicate',
} as const

/** Each table's columns that hold JSON, as "Tables" describes them. */
export const JSON_CELL_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  tilings: ['params', 'edges'],
  patterns: ['gun'],
  verifications: ['range', 'mover'],
  provenance: ['run'],
  annotations: ['value'],
  ants: ['start', 'run'],
  quickstart: ['scene'],
  media: ['render'],
  score_models: ['metrics'],
}

/** A checker of JSON cells: canonical, non-integer numbers allowed ("a cell is data, not a pack document"). */
export function jsonCellChecker(): (bytes: Uint8Array, start: number, end: number) => string | undefined {
  const checker = new CanonicalChecker({ integersOnly: false, maxDepth: MAX_JSON_DEPTH })
  return (bytes, start, end) => (checker.check(bytes, start, end) === 0 ? undefined : checker.describe(start))
}

/** The pattern columns set exactly for some classes ("Tables", patterns: rule "for puffers, movers, guns and other (else null)", gun "guns: JSON ..."). */
const CLASS_COLUMNS = {
  rule: { classes: WITH_RULE, code: ROW_RULE_CODES.patternRule, holds: 'its exact rule', only: 'puffers, movers, guns and other' },
  gun: { classes: new Set(['gun']), code: ROW_RULE_CODES.patternGun, holds: 'the ship it emits', only: 'guns' },
} as const

export function patternClassColumnFinding(column: keyof typeof CLASS_COLUMNS, cls: string, isSet: boolean): IdentityFinding | undefined {
  const rule = CLASS_COLUMNS[column]
  const wants = rule.classes.has(cls)
  if (wants === isSet) return undefined
  return { code: rule.code, detail: wants ? `a ${cls} has ${rule.holds} in ${column}, which is null` : `${column} is set, but a ${cls} has none there (only ${rule.only} do)` }
}

/** The counts a pattern row states, and those its typed phases give. */
export interface PhaseCounts {
  cells: number
  minCells: number
  maxCells: number
  phase0: number
  fewest: number
  most: number
}

/**
 * cells is phase 0's; min_cells and max_cells bound every phase, and are the fewest and most over the
 * period except for a mover, whose are over its whole track (longer than the period its phases hold).
 */
export function patternCellsFinding(cls: string, c: PhaseCounts): IdentityFinding | undefined {
  const problems: string[] = []
  if (c.cells !== c.phase0) problems.push(`cells ${c.cells}, but phase 0 has ${c.phase0}`)
  if (cls === 'mover') {
    if (c.minCells > c.fewest || c.maxCells < c.most) problems.push(`min_cells ${c.minCells} and max_cells ${c.maxCells} do not bound its phases' ${c.fewest} to ${c.most}`)
  } else if (c.minCells !== c.fewest || c.maxCells !== c.most) {
    problems.push(`min_cells ${c.minCells} and max_cells ${c.maxCells}, but its phases have ${c.fewest} to ${c.most}`)
  }
  return problems.length === 0 ? undefined : { code: ROW_RULE_CODES.patternCells, detail: problems.join('; ') }
}

const ALIAS_REASONS: ReadonlySet<string> = new Set(['geometry-change', 'scheme-change'])

function aliasFindings(row: Record<string, unknown>): IdentityFinding[] {
  return ALIAS_REASONS.has(row.reason as string) ? [] : [{ code: ROW_RULE_CODES.aliasReason, detail: `reason ${JSON.stringify(row.reason)} is neither geometry-change nor scheme-change` }]
}

/** "The frozen palette registry": each name means its palette for good. */
const FROZEN_PALETTES: ReadonlySet<string> = new Set([
  'Ember', 'Tide', 'Prism', 'Mono', 'Ink', 'Aurora', 'Synthwave', 'Moss', 'Candy', 'Lava', 'Glacier', 'Phosphor', 'Koi', 'Desert', 'Thermal',
  'Deep Sea', 'Paper', 'Blueprint', 'Neon', 'Autumn', 'Verdigris', 'Marigold', 'Coral', 'Orchid', 'Citrus', 'Riso', 'Bone', 'Ultramarine',
  'Stained Glass', 'Opal',
])

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * A scene names a palette by a string `palette` member, of the scene or of one of its `automata`; the name
 * must be in the frozen registry or be one of the scene's own `palettes` (an object by name, or a list of
 * palettes with a `name`). A palette written out (not a string) names nothing. A scene that is not JSON is
 * the JSON cell rule's finding, not this one's.
 */
function scenePaletteFindings(scene: unknown): IdentityFinding[] {
  let doc: unknown
  try {
    doc = JSON.parse(String(scene))
  } catch {
    return []
  }
  if (!isObject(doc)) return []
  const own = new Set<string>()
  if (isObject(doc.palettes)) for (const name of Object.keys(doc.palettes)) own.add(name)
  if (Array.isArray(doc.palettes)) for (const p of doc.palettes) if (isObject(p) && typeof p.name === 'string') own.add(p.name)
  const named = [doc.palette, ...(Array.isArray(doc.automata) ? doc.automata.map((a) => (isObject(a) ? a.palette : undefined)) : [])]
  return named
    .filter((p): p is string => typeof p === 'string' && !FROZEN_PALETTES.has(p) && !own.has(p))
    .map((p) => ({ code: ROW_RULE_CODES.scenePalette, detail: `palette ${JSON.stringify(p)} is not in the frozen registry nor among the scene's own palettes` }))
}

const RATER_ID = /^rater-[0-9a-f]{16}$/

function raterIdFinding(v: unknown, column: string): IdentityFinding | undefined {
  return typeof v === 'string' && RATER_ID.test(v) ? undefined : { code: ROW_RULE_CODES.raterId, detail: `${column} ${JSON.stringify(v)} is not rater- and 16 lower-case hex digits` }
}

/** The rubrics of ratings.scale and the verdicts each allows ("Ratings"). */
const RATING_SCALES: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['keep-maybe-drop 1', new Set(['keep', 'maybe', 'drop'])],
  ['stars-1-5 1', new Set(['1', '2', '3', '4', '5'])],
])

function ratingFindings(row: Record<string, unknown>): IdentityFinding[] {
  const out: IdentityFinding[] = []
  const id = raterIdFinding(row.rater, 'rater')
  if (id) out.push(id)
  const verdicts = typeof row.scale === 'string' ? RATING_SCALES.get(row.scale) : undefined
  if (!verdicts) out.push({ code: ROW_RULE_CODES.ratingVerdict, detail: `scale ${JSON.stringify(row.scale)} is neither "keep-maybe-drop 1" nor "stars-1-5 1"` })
  else if (typeof row.verdict !== 'string' || !verdicts.has(row.verdict)) out.push({ code: ROW_RULE_CODES.ratingVerdict, detail: `verdict ${JSON.stringify(row.verdict)} is not on the scale ${JSON.stringify(row.scale)} (${[...verdicts].join(', ')})` })
  return out
}

/** A raters row on its own: its ids, its scope, and a group's shape (groups name no one and are not empty). */
function raterFindings(row: Record<string, unknown>): IdentityFinding[] {
  const out: IdentityFinding[] = []
  const id = raterIdFinding(row.rater, 'rater')
  if (id) out.push(id)
  if (row.consent_scope !== 'public-permanent') out.push({ code: ROW_RULE_CODES.raterRow, detail: `consent_scope ${JSON.stringify(row.consent_scope)}: always public-permanent in 1.0` })
  const members = row.members as unknown[] | null
  if (members !== null) {
    if (members.length === 0) out.push({ code: ROW_RULE_CODES.raterRow, detail: 'a group with no members' })
    if (row.display_name !== null || row.orcid !== null) out.push({ code: ROW_RULE_CODES.raterRow, detail: 'a group has a display_name or orcid, which are never on a group' })
    if (members.includes(row.rater)) out.push({ code: ROW_RULE_CODES.raterRow, detail: 'a group lists itself among its members' })
    for (const m of members) {
      const f = raterIdFinding(m, 'member')
      if (f) out.push(f)
    }
  }
  return out
}

/**
 * "Every rater the ratings name, and every member of a group, has a row"; groups do not nest; "a rating's
 * note needs some row of its rater with notes true". Rows of every version the check reads are gathered
 * (a later version holds its parents' parts, so a version's raters are among them), and what is still
 * missing is reported once, where it was first named.
 */
export class RaterBook {
  /** Each rater with a row: whether some row shares notes, and whether it is a group. */
  private readonly rows = new Map<string, { notes: boolean; group: boolean }>()
  /** Where each rater was first named, by a rating or a group. */
  private readonly named = new Map<string, string>()
  /** Where each rater's first rating with a note is. */
  private readonly noted = new Map<string, string>()
  private readonly groups: { at: string; members: readonly string[] }[] = []
  private readonly reported = new Set<string>()

  // A malformed id is the id rule's finding alone: it is not looked for among the rows.
  rating(row: Record<string, unknown>, at: string): undefined {
    const rater = row.rater as string
    if (!RATER_ID.test(rater)) return undefined
    if (!this.named.has(rater)) this.named.set(rater, at)
    if (row.note !== null && !this.noted.has(rater)) this.noted.set(rater, at)
    return undefined
  }

  rater(row: Record<string, unknown>, at: string): undefined {
    const rater = row.rater as string
    const members = row.members as string[] | null
    const had = this.rows.get(rater)
    this.rows.set(rater, { notes: row.notes === true || had?.notes === true, group: members !== null || had?.group === true })
    if (members !== null) {
      this.groups.push({ at, members })
      for (const m of members) if (RATER_ID.test(m) && !this.named.has(m)) this.named.set(m, at)
    }
    return undefined
  }

  /** What the rows read so far break; each rater's finding once per check. */
  *findings(): Generator<IdentityFinding & { at: string }> {
    const once = (key: string): boolean => {
      if (this.reported.has(key)) return false
      this.reported.add(key)
      return true
    }
    for (const [rater, at] of this.named) {
      if (!this.rows.has(rater) && once(`missing ${rater}`)) yield { code: ROW_RULE_CODES.raterRowMissing, at, detail: `rater ${rater} is named but has no raters row` }
    }
    for (const [rater, at] of this.noted) {
      const r = this.rows.get(rater)
      if (r && !r.notes && once(`notes ${rater}`)) yield { code: ROW_RULE_CODES.ratingNoteWithoutConsent, at, detail: `a rating by ${rater} has a note, but no raters row of ${rater} shares notes` }
    }
    for (const g of this.groups) {
      for (const m of g.members) {
        if (this.rows.get(m)?.group && once(`nested ${g.at} ${m}`)) yield { code: ROW_RULE_CODES.raterRow, at: g.at, detail: `member ${m} is itself a group: groups do not nest` }
      }
    }
  }
}

/**
 * The row rules a single record row is held to, by table: the checker applies them to each row of a part,
 * and a publish to each record before it is written, so a publish never writes a row its check refuses.
 * (Patterns' class columns are read from vectors in the checker; quickstart's palettes join its id check.)
 */
export const ROW_RULES: Readonly<Record<string, (row: Record<string, unknown>) => IdentityFinding[]>> = {
  aliases: aliasFindings,
  ratings: ratingFindings,
  raters: raterFindings,
  quickstart: (row) => scenePaletteFindings(row.scene),
  patterns: (row) => {
    // Two calls, not a map over the two columns: the arrays it made were most of this rule's time in a publish.
    const cls = String(row.class)
    const rule = patternClassColumnFinding('rule', cls, row.rule !== undefined && row.rule !== null)
    const gun = patternClassColumnFinding('gun', cls, row.gun !== undefined && row.gun !== null)
    return rule && gun ? [rule, gun] : rule ? [rule] : gun ? [gun] : []
  },
}

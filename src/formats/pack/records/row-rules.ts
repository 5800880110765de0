/**
 * Column rules of "Tables" that hold within one row (or, for verifications, within one pattern's rows of a
 * part), beyond each column's type: JSON cells in RFC 8785 form, a pattern's rule, gun and cell counts
 * against its class and phases, closed value sets, the form of columns that name records, rules' columns
 * per family, ants' columns per outcome, verifications' range, annotations' values, aliases, Quick Start
 * scenes' palettes, rater ids and raters rows; and
 * (RaterBook) the raters rows that ratings and groups need. check-part.ts and check-tables.ts apply them
 * at level 1; docs/pack-format-notes.md ("Row rules") gives our readings.
 */
import { CanonicalChecker } from '../../json/canonical-check.js'
import { hashRefusal, isContentId, isUuid, parseTarget, quote, SEMANTICS_VERSION_RE, type Target } from '../documents/documents.js'
import type { IdentityFinding } from './identity-check.js'
import { WITH_RULE } from './identity.js'
import { MAX_JSON_DEPTH } from '../keys/key-statements.js'

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
  /** Two main verifications of one pattern by one publisher in different rules, in one part or one publish. */
  verificationMain: 'pack.verification-main-duplicate',
  /** A column holding a value outside the set "Tables" gives it (media kind, provenance kind, ants outcome...). */
  columnValue: 'pack.column-value-invalid',
  /** A column that names a record or search run (target, pattern_id, source, old_id) in no form its table allows. */
  rowTarget: 'pack.row-target-invalid',
  /** sites on a verification of a pattern whose tiling is not aperiodic. */
  verificationSites: 'pack.verification-sites-column',
  /** A site on a pattern whose tiling is not aperiodic. */
  patternSite: 'pack.pattern-site-column',
  /** A gun cell without the members "Tables" lists for it, or with one of the wrong kind. */
  patternGunJson: 'pack.pattern-gun-json-invalid',
  /**
   * range or mover where "Tables" does not put them: on a verification that is not main, a range in a rule
   * whose rules rows are all of another family than B/S and Generations, a mover on a lattice tiling's pin;
   * or a range without its members.
   */
  verificationRange: 'pack.verification-range-invalid',
  /** An annotation value that is not the JSON its field holds, or a score_model on a field other than score. */
  annotationValue: 'pack.annotation-value-invalid',
  /** A provenance row's run on a row other than row 0. */
  provenanceRun: 'pack.provenance-run-not-first',
  /** A score model with another number of weights than features. */
  scoreModelWeights: 'pack.score-model-weights-mismatch',
  /** A rules row whose states or masks do not fit its family (B/S: 2 states and masks; Generations: 3 or more and masks; others: no masks). */
  ruleFamily: 'pack.rule-family-columns',
  /** An ant's period, displacement, onset or speed set for an outcome that has none, or missing for one that has. */
  antOutcomeColumns: 'pack.ant-outcome-columns',
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

/** "site: struct? aperiodic only": a pattern on a lattice tiling has none (its cells are lattice cells). A missing tiling is not this rule's. */
export function patternSiteFinding(tilingKind: string | undefined, hasSite: boolean): IdentityFinding | undefined {
  return hasSite && tilingKind !== undefined && tilingKind !== 'aperiodic' ? { code: ROW_RULE_CODES.patternSite, detail: `site is set, but its tiling is ${tilingKind}: only patterns on aperiodic tilings have a site` } : undefined
}

/** "sites: int32? aperiodic: the sites it was run at": a verification on a lattice tiling (its pin's) has none. A pin no tiling has is not this rule's. */
export function verificationSitesFinding(tilingKind: string | undefined, hasSites: boolean): IdentityFinding | undefined {
  return hasSites && tilingKind !== undefined && tilingKind !== 'aperiodic' ? { code: ROW_RULE_CODES.verificationSites, detail: `sites is set, but its pin is a ${tilingKind} tiling's: only patterns on aperiodic tilings are run at sites` } : undefined
}

/**
 * "mover: on the main row of aperiodic movers": a verification whose pin is a lattice tiling's has none. A
 * pin no tiling has is not this rule's. That the pattern is a mover is verificationMoverClassFinding's.
 */
export function verificationMoverFinding(tilingKind: string | undefined, hasMover: boolean): IdentityFinding | undefined {
  return hasMover && tilingKind !== undefined && tilingKind !== 'aperiodic' ? { code: ROW_RULE_CODES.verificationRange, detail: `mover is set, but its pin is a ${tilingKind} tiling's: only aperiodic movers have a mover cell` } : undefined
}

/** The other half of the mover rule, on the pattern row read after its verifications (mover-patterns.ts). */
export function verificationMoverClassFinding(cls: string): IdentityFinding {
  return { code: ROW_RULE_CODES.verificationRange, detail: `a main verification of it has a mover cell, but it is a ${cls}: only aperiodic movers have one` }
}

/**
 * The other half of the mover rule as the publisher meets it, the pattern read first (mover-patterns.ts
 * StagedPatterns keeps only whether it is a mover): `verification` names the main verification with a
 * mover cell, `pattern` its pattern.
 */
export function moverOfOtherClassFinding(verification: string, pattern: string): IdentityFinding {
  return { code: ROW_RULE_CODES.verificationRange, detail: `${verification} has a mover cell, but ${pattern} is not a mover: only aperiodic movers have one` }
}

/**
 * "range: on the main row of B/S and Generations patterns": a verification's rule is a notation whose rules
 * row the pattern's neighbourhood and steps per generation pick, and the pattern is read after it; so a
 * range is refused only when no rules row of its notation is B/S or Generations (`family`, as
 * keepRuleFamily keeps it). A notation no rules row has is not this rule's.
 */
export function verificationRangeFamilyFinding(rule: unknown, family: string | undefined, hasRange: boolean): IdentityFinding | undefined {
  return hasRange && family !== undefined && !Object.hasOwn(MASKED_FAMILIES, family)
    ? { code: ROW_RULE_CODES.verificationRange, detail: `range is set, but rule ${JSON.stringify(rule)} is a ${family} rule: only B/S and Generations patterns have a rule range` }
    : undefined
}

/**
 * The key of the rules row a pattern runs in ("the rules row of that notation with the pattern's
 * neighbourhood and steps per generation"): the rules table's sort columns, as replay looks them up.
 */
export function ruleRowKey(notation: unknown, neighbourhood: unknown, stepsPerGen: unknown): string {
  return `${String(notation)}\n${String(neighbourhood)}\n${String(stepsPerGen)}`
}

/** A pattern's rule with no rules row for its neighbourhood and steps per generation (replay's pack.replay-rule-unknown). */
export function ruleRowMissing(notation: unknown, neighbourhood: unknown, stepsPerGen: unknown): string {
  return `rule ${quote(notation)} has no rules row with neighbourhood ${String(neighbourhood)} and steps_per_gen ${String(stepsPerGen)}`
}

/**
 * Keeps a rules row's family as a verification's rule sees it (by notation alone): B/S or Generations when
 * any row of the notation is, so that a range is refused only when every row of it is of another family.
 */
export function keepRuleFamily(families: Map<string, string>, notation: string, family: string): void {
  const had = families.get(notation)
  if (had === undefined || (!Object.hasOwn(MASKED_FAMILIES, had) && Object.hasOwn(MASKED_FAMILIES, family))) families.set(notation, family)
}

/**
 * "main: the rule the publisher runs the pattern in by default (one per pattern and publisher)", read as one
 * main rule (the same rule verified again is fine): `rule` is this row's, `earlier` names the other's.
 */
export function verificationMainFinding(patternId: string, publisher: string, rule: string, earlier: string): IdentityFinding {
  return { code: ROW_RULE_CODES.verificationMain, detail: `pattern ${patternId} has main rule ${JSON.stringify(rule)} by publisher ${publisher} here and another ${earlier}: one main rule per pattern and publisher` }
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
  const doc = jsonCell(scene)
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
 * missing is reported once, where it was first named. `At` is how the caller names a row: a part's row for
 * the checker, a record's file and line (or none, for a parent's row) for a publish.
 *
 * findings() runs after every manifest of a check, so it judges only what the rows given since its last
 * run can have changed (raters named, noted or given a row; groups listed; raters that became groups):
 * its cost follows the rows read, not the versions times the raters.
 *
 * Raters are people who consented, a few thousand in a large pack; so that memory stays bounded whatever
 * a pack holds, at most `cap` distinct raters (and as many group rows) are kept. A rating, raters row or
 * group member of a rater beyond them is not judged, and counted in `unheld`, for the caller's note.
 */
/** The distinct raters a RaterBook keeps, and group rows (about 250 bytes a rater with its places: 65 MB at the cap). */
export const RATERS_CAP = 2 ** 18

export class RaterBook<At = string> {
  /** Each rater with a row: whether some row shares notes, and whether it is a group. */
  private readonly rows = new Map<string, { notes: boolean; group: boolean }>()
  /** Where each rater was first named, by a rating or a group. */
  private readonly named = new Map<string, At>()
  /** Where each rater's first rating with a note is. */
  private readonly noted = new Map<string, At>()
  private readonly groups: { at: At; members: readonly string[] }[] = []
  /** The groups (indexes in groups) listing each member: where a rater that becomes a group is nested. */
  private readonly memberOf = new Map<string, number[]>()
  private readonly reported = new Set<string>()
  // What findings() has still to judge.
  private newlyNamed: string[] = []
  private readonly notesToJudge = new Set<string>()
  private newGroupRaters: string[] = []
  private groupsJudged = 0
  /** Ratings, raters rows and group members of raters beyond the cap, not judged. */
  unheld = 0

  constructor(private readonly cap = RATERS_CAP) {}

  /** Whether the rater is kept, or can be (under the cap): else it is counted and left alone. */
  private kept(rater: string): boolean {
    if (this.named.has(rater) || this.rows.has(rater) || this.named.size + this.rows.size < this.cap) return true
    this.unheld++
    return false
  }

  // A malformed id is the id rule's finding alone: it is not looked for among the rows.
  rating(row: Record<string, unknown>, at: At): undefined {
    const rater = row.rater as string
    if (!RATER_ID.test(rater) || !this.kept(rater)) return undefined
    this.name(rater, at)
    if (row.note !== null && !this.noted.has(rater)) {
      this.noted.set(rater, at)
      this.notesToJudge.add(rater)
    }
    return undefined
  }

  rater(row: Record<string, unknown>, at: At): undefined {
    const rater = row.rater as string
    const members = row.members as string[] | null
    if (!this.kept(rater)) return undefined
    const had = this.rows.get(rater)
    this.rows.set(rater, { notes: row.notes === true || had?.notes === true, group: members !== null || had?.group === true })
    if (this.noted.has(rater)) this.notesToJudge.add(rater)
    // The row counts; beyond the cap of group rows its members are not judged.
    if (members !== null && this.groups.length >= this.cap) this.unheld++
    else if (members !== null) {
      if (had?.group !== true) this.newGroupRaters.push(rater)
      const n = this.groups.push({ at, members }) - 1
      for (const m of members) {
        if (!this.kept(m)) continue
        if (RATER_ID.test(m)) this.name(m, at)
        const of = this.memberOf.get(m)
        if (of) of.push(n)
        else this.memberOf.set(m, [n])
      }
    }
    return undefined
  }

  private name(rater: string, at: At): void {
    if (this.named.has(rater)) return
    this.named.set(rater, at)
    this.newlyNamed.push(rater)
  }

  /** What the rows given since the last call break; each rater's finding once per check. */
  findings(): (IdentityFinding & { at: At })[] {
    const out: (IdentityFinding & { at: At })[] = []
    const once = (key: string): boolean => {
      if (this.reported.has(key)) return false
      this.reported.add(key)
      return true
    }
    // A rater named before had a row then, or was reported then.
    for (const rater of this.newlyNamed) {
      if (!this.rows.has(rater)) out.push({ code: ROW_RULE_CODES.raterRowMissing, at: this.named.get(rater)!, detail: `rater ${rater} is named but has no raters row` })
    }
    // A noted rater is judged again only when it is given a row (notes, once shared, stay shared).
    for (const rater of this.notesToJudge) {
      const r = this.rows.get(rater)
      if (r && !r.notes && once(`notes ${rater}`)) out.push({ code: ROW_RULE_CODES.ratingNoteWithoutConsent, at: this.noted.get(rater)!, detail: `a rating by ${rater} has a note, but no raters row of ${rater} shares notes` })
    }
    const nested = (n: number, m: string): void => {
      if (once(`nested ${n} ${m}`)) out.push({ code: ROW_RULE_CODES.raterRow, at: this.groups[n]!.at, detail: `member ${m} is itself a group: groups do not nest` })
    }
    for (let n = this.groupsJudged; n < this.groups.length; n++) for (const m of this.groups[n]!.members) if (this.rows.get(m)?.group) nested(n, m)
    // The groups judged before are judged again only for their members that have become groups since.
    for (const m of this.newGroupRaters) for (const n of this.memberOf.get(m) ?? []) if (n < this.groupsJudged) nested(n, m)
    this.newlyNamed = []
    this.notesToJudge.clear()
    this.newGroupRaters = []
    this.groupsJudged = this.groups.length
    return out
  }
}

const finding = (code: string, detail: string): IdentityFinding => ({ code, detail })

/** Parses a JSON cell; a cell that is not JSON is the JSON cell rule's finding, so the rules of its members see undefined. */
function jsonCell(text: unknown): unknown {
  try {
    return JSON.parse(String(text))
  } catch {
    return undefined
  }
}

/** "a positive integer written as a string" ("Rule-semantics versions"). */
function semanticsFindings(v: unknown): IdentityFinding[] {
  return typeof v === 'string' && SEMANTICS_VERSION_RE.test(v) ? [] : [finding(ROW_RULE_CODES.columnValue, `semantics ${JSON.stringify(v)} is not a semantics version (a positive integer of at most nine digits, written as a string)`)]
}

/** The columns "Tables" gives a closed set of values, by table. */
const VALUE_SETS: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>> = {
  rules: { neighbourhood: ['touch', 'edge'] },
  ants: { kind: ['string', 'table'], family: ['ant', 'turmite'], outcome: ['highway', 'periodic', 'symmetric', 'bounded', 'chaotic'] },
  provenance: { kind: ['found', 'imported', 'reverified'] },
  media: { kind: ['gif', 'webp', 'poster', 'thumb'] },
  // "kind: string (logistic 1)": a model of another kind is one no reader can apply, refused as a rating on an unknown rubric is.
  score_models: { kind: ['logistic 1'] },
}

function valueSetFindings(table: string, row: Record<string, unknown>): IdentityFinding[] {
  return Object.entries(VALUE_SETS[table] ?? {})
    .filter(([column, values]) => !values.includes(row[column] as string))
    .map(([column, values]) => finding(ROW_RULE_CODES.columnValue, `${column} ${JSON.stringify(row[column])} is none of ${values.join(', ')}`))
}

type TargetKind = Target['kind']
const RECORD_KINDS: readonly TargetKind[] = ['pattern', 'ant', 'quickstart']

/**
 * A column naming a target of one of `kinds` (a null one is left to the column's nullability): the target,
 * or undefined with its finding appended to `out`.
 */
function targetOf(v: unknown, column: string, kinds: readonly TargetKind[], out: IdentityFinding[]): Target | undefined {
  if (v === null || v === undefined) return undefined
  const t = parseTarget(v)
  if (!t.ok) out.push(finding(ROW_RULE_CODES.rowTarget, `${column}: ${t.detail}`))
  else if (!kinds.includes(t.value.kind)) out.push(finding(ROW_RULE_CODES.rowTarget, `${column} ${JSON.stringify(v)} names a ${t.value.kind}; here it names ${kinds.join(', ')}`))
  else return t.value
  return undefined
}

function targetFindings(v: unknown, column: string, kinds: readonly TargetKind[]): IdentityFinding[] {
  const out: IdentityFinding[] = []
  targetOf(v, column, kinds, out)
  return out
}

function patternIdFindings(v: unknown): IdentityFinding[] {
  return isContentId(v) ? [] : [finding(ROW_RULE_CODES.rowTarget, `pattern_id ${JSON.stringify(v)} is not a pattern's content id (32 lower-case hex digits)`)]
}

/** The members of a gun cell ("Tables", patterns: the emitted ship in the gun's orientation), and what each holds. */
const GUN_MEMBERS: Readonly<Record<string, (v: unknown) => boolean>> = {
  ship: (v) => typeof v === 'string',
  ship_label: (v) => typeof v === 'string',
  ship_period: (v) => Number.isInteger(v) && (v as number) >= 1,
  ship_displacement: (v) => Array.isArray(v) && v.length === 2 && v.every(Number.isInteger),
  ship_speed: (v) => typeof v === 'string',
  per_period: (v) => Number.isInteger(v) && (v as number) >= 1,
  ship_phases: (v) => Array.isArray(v),
}

/** A gun cell: an object with every member of GUN_MEMBERS, each of its kind; members beyond them are ignored. */
export function gunFindings(text: unknown): IdentityFinding[] {
  const gun = jsonCell(text)
  if (gun === undefined) return []
  if (!isObject(gun)) return [finding(ROW_RULE_CODES.patternGunJson, 'gun is not a JSON object')]
  const bad = Object.entries(GUN_MEMBERS).filter(([name, holds]) => !holds(gun[name])).map(([name]) => name)
  return bad.length === 0 ? [] : [finding(ROW_RULE_CODES.patternGunJson, `gun's ${bad.join(', ')} ${bad.length === 1 ? 'is' : 'are'} missing or not what the member holds (ship, ship_label and ship_speed text; ship_period and per_period positive integers; ship_displacement [dx, dy]; ship_phases a list)`)]
}

const RANGE_BOUNDS = ['bits', 'birth_min', 'birth_max', 'survive_min', 'survive_max', 'states_min', 'states_max'] as const

/**
 * range and mover are "on the main row": a row that is not main has neither. A range holds the bounds as
 * non-negative integers and min_rule and max_rule as notation.
 */
function verificationFindings(row: Record<string, unknown>): IdentityFinding[] {
  const out = patternIdFindings(row.pattern_id)
  out.push(...semanticsFindings(row.semantics))
  for (const column of ['range', 'mover'] as const) {
    if (row[column] !== null && row.main !== true) out.push(finding(ROW_RULE_CODES.verificationRange, `${column} is set on a verification that is not main (it goes on the main row)`))
  }
  if (row.range === null) return out
  const range = jsonCell(row.range)
  if (range === undefined) return out
  const bad = isObject(range)
    ? [...RANGE_BOUNDS.filter((m) => !Number.isInteger(range[m]) || (range[m] as number) < 0), ...(['min_rule', 'max_rule'] as const).filter((m) => typeof range[m] !== 'string')]
    : ['the whole range']
  if (bad.length > 0) out.push(finding(ROW_RULE_CODES.verificationRange, `range's ${bad.join(', ')}: the bounds are non-negative integers (bits, birth_min, birth_max, survive_min, survive_max, states_min, states_max) and min_rule and max_rule notation`))
  return out
}

function sightingFindings(row: Record<string, unknown>): IdentityFinding[] {
  const out = patternIdFindings(row.pattern_id)
  if (row.source !== 'unattributed' && !isUuid(row.source)) out.push(finding(ROW_RULE_CODES.columnValue, `source ${JSON.stringify(row.source)} is neither a search's uuid nor unattributed`))
  return out
}

/** provenance: its target a record, its kind, seq from 0, run on row 0 only, pack a manifest hash. */
function provenanceFindings(row: Record<string, unknown>): IdentityFinding[] {
  const out = [...targetFindings(row.target, 'target', RECORD_KINDS), ...valueSetFindings('provenance', row)]
  if ((row.seq as number) < 0) out.push(finding(ROW_RULE_CODES.columnValue, `seq ${String(row.seq)}: the publisher's history of a record counts from 0`))
  else if (row.run !== null && row.seq !== 0) out.push(finding(ROW_RULE_CODES.provenanceRun, `run is set on row ${String(row.seq)}: the run that found a record goes on row 0`))
  const pack = row.pack === null ? undefined : hashRefusal(row.pack, 'pack', false)
  if (pack) out.push(pack)
  return out
}

/** The JSON each annotation field this format names holds; null clears a field. Fields it does not name are not judged. */
const ANNOTATION_VALUES: Readonly<Record<string, { holds: (v: unknown) => boolean; what: string }>> = {
  ...Object.fromEntries(['name', 'label', 'notes', 'state', 'discovered_by'].map((f) => [f, { holds: (v: unknown) => typeof v === 'string', what: 'a string' }])),
  tags: { holds: (v) => Array.isArray(v) && v.every((t) => typeof t === 'string'), what: 'a list of strings' },
  rating: { holds: (v) => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 5, what: 'an integer 1 to 5' },
  score: { holds: (v) => typeof v === 'string' && v !== '' && String(Number(v)) === v && Number.isFinite(Number(v)), what: 'a decimal as a string, as ECMAScript writes the number' },
}

function annotationFindings(row: Record<string, unknown>): IdentityFinding[] {
  const out = targetFindings(row.target, 'target', [...RECORD_KINDS, 'search_run'])
  const field = ANNOTATION_VALUES[row.field as string]
  if (!field) return out
  const value = jsonCell(row.value)
  if (value !== undefined && value !== null && !field.holds(value)) out.push(finding(ROW_RULE_CODES.annotationValue, `value ${String(row.value)}: ${String(row.field)} holds ${field.what}, or null`))
  if (row.field !== 'score' && row.score_model !== null) out.push(finding(ROW_RULE_CODES.annotationValue, `score_model is set on ${String(row.field)}: it belongs to score`))
  return out
}

/** "B/S and Generations: bit masks" and "states: 2 for B/S rules; 0 when not fixed". */
const MASKED_FAMILIES: Readonly<Record<string, { states: (n: number) => boolean; what: string }>> = {
  bs: { states: (n) => n === 2, what: '2' },
  generations: { states: (n) => n >= 3, what: '3 or more' },
}

function ruleFindings(row: Record<string, unknown>): IdentityFinding[] {
  const out = [...valueSetFindings('rules', row), ...semanticsFindings(row.semantics)]
  if ((row.steps_per_gen as number) < 1) out.push(finding(ROW_RULE_CODES.columnValue, `steps_per_gen ${String(row.steps_per_gen)}: a rule is applied at least once a generation`))
  const masks = [row.birth, row.survive]
  const family = MASKED_FAMILIES[row.family as string]
  if (family) {
    if (!family.states(row.states as number)) out.push(finding(ROW_RULE_CODES.ruleFamily, `states ${String(row.states)}: a ${String(row.family)} rule has ${family.what}`))
    if (masks.some((m) => m === null || BigInt(m as bigint) < 0n)) out.push(finding(ROW_RULE_CODES.ruleFamily, `a ${String(row.family)} rule has its birth and survive masks (non-negative)`))
  } else {
    if ((row.states as number) < 0) out.push(finding(ROW_RULE_CODES.ruleFamily, `states ${String(row.states)}: a count of cell states, or 0 when not fixed`))
    if (masks.some((m) => m !== null)) out.push(finding(ROW_RULE_CODES.ruleFamily, `family ${JSON.stringify(row.family)} has birth or survive masks, which only B/S and Generations rules have`))
  }
  return out
}

/** Highways and periodic runs have a period, displacement and onset; highways alone a speed. */
function antFindings(row: Record<string, unknown>): IdentityFinding[] {
  const out = [...valueSetFindings('ants', row), ...semanticsFindings(row.semantics)]
  const periodic = row.outcome === 'highway' || row.outcome === 'periodic'
  const wrong = [...(['period', 'dx', 'dy', 'onset'] as const).filter((c) => (row[c] !== null) !== periodic), ...((row.speed !== null) !== (row.outcome === 'highway') ? ['speed'] : [])]
  if (wrong.length > 0 && VALUE_SETS.ants!.outcome!.includes(row.outcome as string)) {
    out.push(finding(ROW_RULE_CODES.antOutcomeColumns, `${wrong.join(', ')} ${periodic ? 'must be set' : 'must be null'} for a ${String(row.outcome)} run (period, dx, dy and onset for highways and periodic runs, speed for highways)`))
  }
  return out
}

function scoreModelFindings(row: Record<string, unknown>): IdentityFinding[] {
  const out = valueSetFindings('score_models', row)
  const [features, weights] = [row.features as unknown[], row.weights as unknown[]]
  if (features.length !== weights.length) out.push(finding(ROW_RULE_CODES.scoreModelWeights, `${weights.length} weights for ${features.length} features: one weight a feature`))
  if (row.rater !== null) {
    const id = raterIdFinding(row.rater, 'rater')
    if (id) out.push(id)
  }
  return out
}

/** An alias names a record, and its old id is an id of that record's kind other than the record's own. */
function aliasFindings(row: Record<string, unknown>): IdentityFinding[] {
  const out: IdentityFinding[] = []
  const target = targetOf(row.target, 'target', RECORD_KINDS, out)
  if (!ALIAS_REASONS.has(row.reason as string)) out.push(finding(ROW_RULE_CODES.aliasReason, `reason ${JSON.stringify(row.reason)} is neither geometry-change nor scheme-change`))
  if (target === undefined || target.kind === 'search_run') return out
  // The old id is read as a target of its target's kind, so the two ids are of one form.
  const old = parseTarget(`${target.kind}:${String(row.old_id)}`)
  if (!old.ok) out.push(finding(ROW_RULE_CODES.rowTarget, `old_id ${JSON.stringify(row.old_id)} is not a ${target.kind}'s id, as its target is`))
  else if (old.value.kind !== 'search_run' && old.value.id === target.id) out.push(finding(ROW_RULE_CODES.rowTarget, `old_id is its target's own id`))
  return out
}

/**
 * The rules a single row is held to, by table, and the columns they read (a checker builds only those of a
 * row): the checker applies them to each row of a part, and a publish to each record before it is written,
 * so a publish never writes a row its check refuses. (Patterns' are read from vectors in the checker, the
 * same functions on the same cells; quickstart's and ants' join their id checks.)
 */
export interface RowRule {
  readonly columns: readonly { name: string }[]
  readonly check: (row: Record<string, unknown>) => IdentityFinding[]
}

const rule = (columns: string, check: RowRule['check']): RowRule => ({ columns: columns.split(' ').map((name) => ({ name })), check })

export const ROW_RULES: Readonly<Record<string, RowRule>> = {
  rules: rule('neighbourhood steps_per_gen family semantics states birth survive', ruleFindings),
  patterns: rule('class rule gun', (row) => {
    // Two calls, not a map over the two columns: the arrays it made were most of this rule's time in a publish.
    const cls = String(row.class)
    const hasGun = row.gun !== undefined && row.gun !== null
    const rule = patternClassColumnFinding('rule', cls, row.rule !== undefined && row.rule !== null)
    const gun = patternClassColumnFinding('gun', cls, hasGun)
    const out = rule && gun ? [rule, gun] : rule ? [rule] : gun ? [gun] : []
    return hasGun ? [...out, ...gunFindings(row.gun)] : out
  }),
  verifications: rule('pattern_id main semantics range mover', verificationFindings),
  sightings: rule('pattern_id source', sightingFindings),
  provenance: rule('target kind seq run pack', provenanceFindings),
  annotations: rule('target field value score_model', annotationFindings),
  ants: rule('kind family semantics outcome period dx dy onset speed', antFindings),
  quickstart: rule('scene source semantics', (row) => [...scenePaletteFindings(row.scene), ...targetFindings(row.source, 'source', ['pattern', 'ant']), ...semanticsFindings(row.semantics)]),
  media: rule('kind', (row) => valueSetFindings('media', row)),
  aliases: rule('old_id target reason', aliasFindings),
  ratings: rule('rater target scale verdict', (row) => [...ratingFindings(row), ...targetFindings(row.target, 'target', [...RECORD_KINDS, 'search_run'])]),
  raters: rule('rater consent_scope members display_name orcid', raterFindings),
  score_models: rule('kind features weights rater', scoreModelFindings),
}

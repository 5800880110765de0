/**
 * "mover: on the main row of aperiodic movers": that the pattern is a mover needs its row, which a check
 * reads after the verifications. So the checker keeps the ids of the patterns whose main verifications
 * carry a mover cell (check-tables.ts gathers them from the verification parts) and holds each pattern row
 * read later to it (check-part.ts). A hostile pack could carry a mover cell on every verification, so the
 * ids kept are capped: beyond the cap a pattern is not checked, and the check says so in a note. A publish
 * reads the patterns first, and holds its verifications to them with StagedPatterns, below, which also
 * holds a pattern record without a rule to having a main verification.
 */
import { contentIdWords, IdTable } from './id-table.js'
import { MAIN_RULES_CAP } from './main-rules.js'

/** A slot's words: the pattern id's four, and a 1 that marks it full (a content id may be all zeros). */
const [MARK, SLOT_WORDS] = [4, 5]

/**
 * The most ids kept: aperiodic movers are few (a search finds a handful), and at 20 bytes a slot and at
 * most three quarters full the table stays within 3 MB. A thread gets a copy of it with each pattern part.
 */
export const MOVER_PATTERNS_CAP = 1 << 16

export class MoverPatterns {
  private readonly table: IdTable
  private readonly probe = new Uint32Array(SLOT_WORDS)

  /** A table over `slots`, another's (a thread's copy), to look up only. */
  constructor(
    private readonly cap = MOVER_PATTERNS_CAP,
    slots?: Uint32Array,
  ) {
    this.table = new IdTable(SLOT_WORDS, 4, MARK, slots)
  }

  get size(): number {
    return this.table.count
  }

  /** Keeps a content id; false when it is not kept because the cap is reached. */
  add(patternId: string): boolean {
    const at = this.find(patternId)
    if (this.table.slots[at + MARK] !== 0) return true
    if (this.table.count >= this.cap) return false
    this.probe[MARK] = 1
    this.table.insert(this.probe, at)
    return true
  }

  has(patternId: string): boolean {
    return this.table.slots[this.find(patternId) + MARK] !== 0
  }

  /** The table's words, for a thread. */
  get slots(): Uint32Array {
    return this.table.slots
  }

  private find(patternId: string): number {
    contentIdWords(patternId, this.probe)
    return this.table.find(this.probe)
  }
}

/** The line of a pattern a parent version has (a record's line is from 1, and 0 marks an empty slot). */
export const PARENT_PATTERN = 0xffffffff

/** A slot's words for the publisher's table: the pattern id's four, the line of its record (or PARENT_PATTERN), and its flags. */
const [LINE, FLAGS, PATTERN_SLOT_WORDS] = [4, 5, 6]
const MOVER = 1
/** A record of this publish whose rule column is null: its rule must come from a main verification. */
const RULELESS = 2
/** A main verification (a record's or a parent's) gives its pattern a rule. */
const RULED = 4
/** Flags' bits above these hold the number (from 1) of the neighbourhood and steps a pattern without a rule column runs in. */
const FLAG_BITS = 3
/** Distinct neighbourhoods and steps per generation kept (a pack has a few). */
const RUNS_IN_CAP = 1 << 16

/**
 * The publisher's patterns, kept while it stages the verifications (it stages the patterns first), for
 * two rules a pattern row cannot be held to alone:
 * - "mover: on the main row of aperiodic movers": each main verification with a mover cell is held to its
 *   pattern's class (`moverCell`);
 * - "A pattern's rule is its rule when set, else that of its verification marked main; every pattern has
 *   one": a record whose rule is null must have a main verification, this publish's or a parent's
 *   (`mainRule`, then `firstRuleless`).
 * Each pattern row (its parents' and its records') is kept with the line of its record, so the cap is the
 * main rules' (main-rules.ts): the table stays at 2^21 slots of 24 bytes, 50 MB. A pattern beyond it is
 * not kept: a mover cell on a verification of it is not held to its class (`unheld`), and a record of it
 * without a rule is not held to having one (`rulelessDropped`).
 */
export class StagedPatterns {
  private readonly table = new IdTable(PATTERN_SLOT_WORDS, 4, LINE)
  private readonly probe = new Uint32Array(PATTERN_SLOT_WORDS)
  /** The neighbourhoods and steps per generation patterns run in, numbered from 1 in the flags. */
  private readonly runsIn: { neighbourhood: string; stepsPerGen: number }[] = []
  private readonly runsInNumbers = new Map<string, number>()
  /** Patterns not kept, beyond the cap. */
  dropped = 0
  /** Of those, records without a rule, not held to having a main verification. */
  rulelessDropped = 0
  /** Mover cells not held to their pattern's class: it may be one of those dropped. */
  unheld = 0

  constructor(private readonly cap = MAIN_RULES_CAP) {}

  get size(): number {
    return this.table.count
  }

  /**
   * Keeps a content id's pattern from its record's `line` (or PARENT_PATTERN); the first kept stays.
   * `ruleless` counts for a record only; `runsIn`, for a pattern on a lattice tiling without a rule column,
   * is the neighbourhood and steps per generation its main verifications' rules must have rules rows for.
   */
  add(patternId: string, line: number, facts: { mover: boolean; ruleless: boolean; runsIn?: { neighbourhood: string; stepsPerGen: number } }): void {
    const at = this.find(patternId)
    if (at < 0 || this.table.slots[at + LINE] !== 0) return
    const ruleless = facts.ruleless && line !== PARENT_PATTERN
    if (this.table.count >= this.cap) {
      this.dropped++
      if (ruleless) this.rulelessDropped++
      return
    }
    this.probe[LINE] = line
    this.probe[FLAGS] = (facts.mover ? MOVER : 0) | (ruleless ? RULELESS : 0) | (facts.runsIn ? this.runsInNumber(facts.runsIn) << FLAG_BITS : 0)
    this.table.insert(this.probe, at)
  }

  /** The number of a neighbourhood and steps per generation (0 beyond the cap: not held). */
  private runsInNumber(r: { neighbourhood: string; stepsPerGen: number }): number {
    const key = `${r.neighbourhood}\n${r.stepsPerGen}`
    let n = this.runsInNumbers.get(key)
    if (n === undefined) {
      if (this.runsIn.length >= RUNS_IN_CAP) return 0
      n = this.runsIn.push({ neighbourhood: r.neighbourhood, stepsPerGen: r.stepsPerGen })
      this.runsInNumbers.set(key, n)
    }
    return n
  }

  /** For a main verification: its pattern's record line (or PARENT_PATTERN) and what it runs in, when it has no rule column (add's `runsIn`). */
  runsInOf(patternId: string): { line: number; neighbourhood: string; stepsPerGen: number } | undefined {
    const at = this.find(patternId)
    if (at < 0) return undefined
    const n = this.table.slots[at + FLAGS]! >>> FLAG_BITS
    return n === 0 ? undefined : { line: this.table.slots[at + LINE]!, ...this.runsIn[n - 1]! }
  }

  /**
   * For a main verification with a mover cell: the line of its pattern's record (PARENT_PATTERN for a
   * parent's) when that is not a mover, else 0 (a mover, a pattern the publish lacks, or no content id; counted
   * in `unheld` when it may be one beyond the cap).
   */
  moverCell(patternId: string): number {
    const at = this.find(patternId)
    const line = at < 0 || (this.table.slots[at + FLAGS]! & MOVER) !== 0 ? 0 : this.table.slots[at + LINE]!
    if (line === 0 && this.dropped > 0) this.unheld++
    return line
  }

  /** A main verification of the pattern: it has a rule. */
  mainRule(patternId: string): void {
    const at = this.find(patternId)
    if (at >= 0 && this.table.slots[at + LINE] !== 0) this.table.slots[at + FLAGS]! |= RULED
  }

  /** The first line of a record whose rule is null and that no main verification gave one, if any. */
  firstRuleless(): number | undefined {
    const { slots } = this.table
    let first: number | undefined
    for (let at = 0; at < slots.length; at += PATTERN_SLOT_WORDS) {
      if ((slots[at + FLAGS]! & (RULELESS | RULED)) === RULELESS && (first === undefined || slots[at + LINE]! < first)) first = slots[at + LINE]!
    }
    return first
  }

  /** The slot of a content id, or -1 for a string that is not one (a parent's row is not checked again). */
  private find(patternId: string): number {
    return contentIdWords(patternId, this.probe) ? this.table.find(this.probe) : -1
  }
}

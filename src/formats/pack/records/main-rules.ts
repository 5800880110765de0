/**
 * The main rule of each pattern and publisher across one publish, for "main: ... (one per pattern and
 * publisher)", which we read as one main *rule* (docs/pack-format-notes.md, "Row rules"). A publish may
 * hold a million patterns: a JS map of their main rules took about 100 bytes an entry, so this is an
 * IdTable (id-table.ts) of 28 bytes a slot: about 60 MB at a million main verifications, half as much
 * again while it doubles, 15 MB at a quarter million.
 *
 * A slot holds the pattern's whole content id (16 bytes, so two patterns never share a slot's key), a
 * 32-bit hash of the publisher id and of the rule notation, and the line of the first record. Two
 * publishers of one pattern whose ids hash alike would be taken for one (a refusal of a record that keeps
 * the rule), two rules of one pattern that hash alike for one rule (a second main rule let through): each
 * one chance in 2^32, and only where one pattern has two publishers or two main rules in one publish.
 *
 * Memory stays bounded whatever the publish's size: at most MAIN_RULES_CAP patterns are kept (the table
 * then stays at 2^21 slots, 59 MB). A main verification of a pattern beyond them is not held to the rule
 * and is counted (`unheld`), for the publish to say so; pack-check still holds each part's rows to it.
 */

import { contentIdWords, IdTable } from './id-table.js'
import { KEPT_TEXT_CAP, KeptText } from './kept-facts.js'

/** A slot's words: the pattern id's four, the publisher's hash, the rule's hash, and the record's line (from 1, so never 0). */
const [PUBLISHER, RULE, LINE, SLOT_WORDS] = [4, 5, 6, 7]

/** 32-bit FNV-1a of a string's UTF-16 code units. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/** Three quarters of 2^21 slots: one more would double the table (IdTable grows at three quarters full). */
export const MAIN_RULES_CAP = 3 * 2 ** 19

export class MainRules {
  private readonly table = new IdTable(SLOT_WORDS, PUBLISHER + 1, LINE)
  /** Main verifications of patterns beyond the cap, not held to one main rule. */
  unheld = 0

  constructor(private readonly cap = MAIN_RULES_CAP) {}
  /** The slot being looked up, as its words. */
  private readonly probe = new Uint32Array(SLOT_WORDS)
  /** The last publisher and rule hashed: most records of a publish share them, and hashing them was a third of add's time. */
  private readonly last = { publisher: '', publisherHash: fnv1a(''), rule: '', ruleHash: fnv1a('') }

  /** Main verifications kept. */
  get size(): number {
    return this.table.count
  }

  /**
   * Keeps the main rule of a main verification on `line` (from 1) of a content id's pattern; returns the
   * line of an earlier one of the same pattern and publisher in another rule, if any (the first is kept).
   */
  add(patternId: string, publisher: string, rule: string, line: number): number | undefined {
    const { probe, last, table } = this
    contentIdWords(patternId, probe)
    if (publisher !== last.publisher) {
      last.publisher = publisher
      last.publisherHash = fnv1a(publisher)
    }
    if (rule !== last.rule) {
      last.rule = rule
      last.ruleHash = fnv1a(rule)
    }
    probe[PUBLISHER] = last.publisherHash
    probe[RULE] = last.ruleHash
    probe[LINE] = line
    const at = table.find(probe)
    const slots = table.slots
    if (slots[at + LINE] !== 0) return slots[at + RULE] === probe[RULE] ? undefined : slots[at + LINE]
    if (table.count >= this.cap) this.unheld++
    else table.insert(probe, at)
    return undefined
  }
}

/** A checker's slot: the pattern id's four words and the number of its first main rule (from 1, so never 0). */
const [FIRST_RULE, CHECK_SLOT_WORDS] = [4, 5]
/** Distinct rule notations, and patterns with a second main rule, kept at most (each a few bytes: a pack has a handful of rules). */
export const MAIN_RULE_NOTATIONS_CAP = 1 << 16

/**
 * The main rules of each pattern across a check, for replay (level 3: "a pattern's rule is its rule when
 * set, else that of its verification marked main"): read from the verifications before the patterns. A
 * JS map of arrays took about 133 bytes a pattern (over 512 MB at 2.7 million); this is an IdTable of 20
 * bytes a slot (42 MB at the cap) with the notations numbered, and the rare pattern with more than one main
 * rule (several publishers) in a small map. Memory stays bounded: beyond MAIN_RULES_CAP patterns, or
 * MAIN_RULE_NOTATIONS_CAP notations (or their characters beyond the check's KeptText) or patterns with a
 * second rule, rules are not kept and counted in
 * `dropped`, and a pattern found without a rule then may be one of them (`rulesOf` says so).
 */
export class PatternMainRules {
  private readonly table = new IdTable(CHECK_SLOT_WORDS, 4, FIRST_RULE)
  private readonly probe = new Uint32Array(CHECK_SLOT_WORDS)
  private readonly numbers = new Map<string, number>()
  private readonly notations: string[] = []
  /** Second and later main rules, by pattern id. */
  private readonly more = new Map<string, number[]>()
  /** Main rules not kept. */
  dropped = 0

  /** `text`: the characters of notations it may keep, shared with the check's other facts (a notation is any string cell). */
  constructor(
    private readonly cap = MAIN_RULES_CAP,
    private readonly notationsCap = MAIN_RULE_NOTATIONS_CAP,
    private readonly text = new KeptText(KEPT_TEXT_CAP),
  ) {}

  /** Keeps a main verification's rule for its pattern (a string that is no content id is level 1's finding). */
  add(patternId: string, rule: string): void {
    if (!contentIdWords(patternId, this.probe)) return
    let number = this.numbers.get(rule)
    if (number === undefined) {
      if (this.notations.length >= this.notationsCap || !this.text.take(rule.length)) {
        this.dropped++
        return
      }
      number = this.notations.push(rule)
      this.numbers.set(rule, number)
    }
    const at = this.table.find(this.probe)
    const first = this.table.slots[at + FIRST_RULE]!
    if (first === 0) {
      if (this.table.count >= this.cap) this.dropped++
      else {
        this.probe[FIRST_RULE] = number
        this.table.insert(this.probe, at)
      }
      return
    }
    if (first === number) return
    const others = this.more.get(patternId)
    if (others?.includes(number)) return
    if (others) others.push(number)
    else if (this.more.size < this.notationsCap) this.more.set(patternId, [number])
    else this.dropped++
  }

  /** The distinct main rules of a pattern, first kept first; `unsure` when none is kept but one may have been dropped. */
  rulesOf(patternId: string): { rules: string[]; unsure: boolean } {
    if (!contentIdWords(patternId, this.probe)) return { rules: [], unsure: false }
    const first = this.table.slots[this.table.find(this.probe) + FIRST_RULE]!
    if (first === 0) return { rules: [], unsure: this.dropped > 0 }
    const rules = [this.notations[first - 1]!]
    for (const n of this.more.get(patternId) ?? []) rules.push(this.notations[n - 1]!)
    return { rules, unsure: false }
  }
}

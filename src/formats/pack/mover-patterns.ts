/**
 * "mover: on the main row of aperiodic movers": that the pattern is a mover needs its row, which a check
 * reads after the verifications. So the checker keeps the ids of the patterns whose main verifications
 * carry a mover cell (check-tables.ts gathers them from the verification parts) and holds each pattern row
 * read later to it (check-part.ts). A hostile pack could carry a mover cell on every verification, so the
 * ids kept are capped: beyond the cap a pattern is not checked, and the check says so in a note.
 */
import { contentIdWords, IdTable } from './id-table.js'

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

/**
 * The main rule of each pattern and publisher across one publish, for "main: ... (one per pattern and
 * publisher)", which we read as one main *rule* (docs/pack-format-notes.md, "Row rules"). A publish may
 * hold a million patterns: a JS map of their main rules took about 100 bytes an entry, so this is one
 * open-addressing table on one typed array, doubling when three quarters full, of 28 bytes a slot (about
 * 60 MB at a million main verifications, half as much again while it doubles; 15 MB at a quarter million).
 *
 * A slot holds the pattern's whole content id (16 bytes, so two patterns never share a slot's key), a
 * 32-bit hash of the publisher id and of the rule notation, and the line of the first record. Two
 * publishers of one pattern whose ids hash alike would be taken for one (a refusal of a record that keeps
 * the rule), two rules of one pattern that hash alike for one rule (a second main rule let through): each
 * one chance in 2^32, and only where one pattern has two publishers or two main rules in one publish.
 */

/**
 * A slot's words, together so that a look-up reads one cache line: the pattern id's four, the publisher's
 * hash, the rule's hash, and the record's line (from 1; 0 marks an empty slot).
 */
const SLOT_WORDS = 7
const [PUBLISHER, RULE, LINE] = [4, 5, 6]
const FIRST_SLOTS = 1024

/** 32-bit FNV-1a of a string's UTF-16 code units. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/** A hex digit's value (the caller has checked the id is a content id: lower-case hex). */
const nibble = (c: number): number => (c <= 57 ? c - 48 : c - 87)

export class MainRules {
  private slots = new Uint32Array(FIRST_SLOTS * SLOT_WORDS)
  private capacity = FIRST_SLOTS
  private count = 0
  /** The slot being looked up, as its words. */
  private readonly probe = new Uint32Array(SLOT_WORDS)
  /** The last publisher and rule hashed: most records of a publish share them, and hashing them was a third of add's time. */
  private readonly last = { publisher: '', publisherHash: fnv1a(''), rule: '', ruleHash: fnv1a('') }

  /** Main verifications kept. */
  get size(): number {
    return this.count
  }

  /**
   * Keeps the main rule of a main verification on `line` (from 1) of a content id's pattern; returns the
   * line of an earlier one of the same pattern and publisher in another rule, if any (the first is kept).
   */
  add(patternId: string, publisher: string, rule: string, line: number): number | undefined {
    const probe = this.probe
    for (let w = 0; w < 4; w++) {
      let v = 0
      for (let c = 8 * w; c < 8 * w + 8; c++) v = (v << 4) | nibble(patternId.charCodeAt(c))
      probe[w] = v
    }
    const last = this.last
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
    if (4 * (this.count + 1) > 3 * this.capacity) this.grow()
    const at = this.find(this.slots, this.capacity, probe)
    const slots = this.slots
    if (slots[at + LINE] !== 0) return slots[at + RULE] === probe[RULE] ? undefined : slots[at + LINE]
    slots.set(probe, at)
    this.count++
    return undefined
  }

  /** Where the slot whose key `probe` holds is in `slots`, or the empty slot where it goes (linear probing). */
  private find(slots: Uint32Array, capacity: number, probe: Uint32Array): number {
    const mask = capacity - 1
    for (let slot = (Math.imul(probe[0]! ^ probe[PUBLISHER]!, 0x9e3779b1) >>> 0) & mask; ; slot = (slot + 1) & mask) {
      const at = slot * SLOT_WORDS
      if (slots[at + LINE] === 0) return at
      if (slots[at] === probe[0] && slots[at + 1] === probe[1] && slots[at + 2] === probe[2] && slots[at + 3] === probe[3] && slots[at + PUBLISHER] === probe[PUBLISHER]) return at
    }
  }

  private grow(): void {
    const old = this.slots
    this.capacity *= 2
    this.slots = new Uint32Array(this.capacity * SLOT_WORDS)
    const slot = new Uint32Array(SLOT_WORDS)
    for (let at = 0; at < old.length; at += SLOT_WORDS) {
      if (old[at + LINE] === 0) continue
      for (let w = 0; w < SLOT_WORDS; w++) slot[w] = old[at + w]!
      this.slots.set(slot, this.find(this.slots, this.capacity, slot))
    }
  }
}

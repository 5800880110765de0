/**
 * Open-addressing tables keyed by a pattern's content id, for what a publish or a check must remember of
 * every pattern where a JS map (about 100 bytes an entry) would cost too much at a million: one
 * Uint32Array of `words` a slot, the id's 16 bytes first (so two patterns never share a key) and the
 * caller's words after, together so that a look-up reads one cache line. A slot is empty while its
 * `mark` word is 0. The table doubles when three quarters full (main-rules.ts, mover-patterns.ts).
 */

/** Each ASCII unit's hex digit value (lower case, as content ids are written), -1 for any other. */
const HEX_DIGIT = new Int8Array(128).fill(-1)
for (let d = 0; d < 16; d++) HEX_DIGIT['0123456789abcdef'.charCodeAt(d)] = d

/**
 * Puts a content id's 128 bits (its 32 hex digits) in `into[at, at + 4)`, as four words; false when `id`
 * is not one (documents.ts isContentId's form), which reads it a second time. A fifth of a SHA-256's cost.
 */
export function contentIdWords(id: unknown, into: Uint32Array, at = 0): boolean {
  if (typeof id !== 'string' || id.length !== 32) return false
  let bad = 0
  for (let w = 0; w < 4; w++) {
    let v = 0
    for (let d = 8 * w; d < 8 * w + 8; d++) {
      const unit = id.charCodeAt(d)
      const digit = HEX_DIGIT[unit & 127]!
      bad |= digit | (unit >> 7)
      v = (v << 4) | (digit & 15)
    }
    into[at + w] = v >>> 0
  }
  return bad >= 0
}

/** The content id whose words contentIdWords put at `words[at, at + 4)`: its 32 lower-case hex digits. */
export function contentIdText(words: Uint32Array, at = 0): string {
  let text = ''
  for (let w = 0; w < 4; w++) text += words[at + w]!.toString(16).padStart(8, '0')
  return text
}

export class IdTable {
  slots: Uint32Array
  private capacity: number
  count = 0

  /**
   * `words` a slot, the first `keyWords` (at least the id's 4) its key; `mark` the word that is never 0
   * in a full slot. `slots` makes a table over another's words (a thread's copy), to look up only.
   */
  constructor(
    readonly words: number,
    private readonly keyWords: number,
    private readonly mark: number,
    slots?: Uint32Array,
  ) {
    this.slots = slots ?? new Uint32Array(1024 * words)
    this.capacity = this.slots.length / words
  }

  /** Where the slot whose key `probe` holds is, or the empty slot where it goes (linear probing from the id's first word, mixed). */
  find(probe: Uint32Array): number {
    const { slots, words, keyWords, mark } = this
    const mask = this.capacity - 1
    for (let slot = (Math.imul(probe[0]! ^ (keyWords > 4 ? probe[4]! : 0), 0x9e3779b1) >>> 0) & mask; ; slot = (slot + 1) & mask) {
      const at = slot * words
      if (slots[at + mark] === 0) return at
      let same = true
      for (let w = 0; w < keyWords && same; w++) same = slots[at + w] === probe[w]
      if (same) return at
    }
  }

  /** Puts `probe` (a full slot's words) in the empty slot `find` gave, first doubling a table three quarters full. */
  insert(probe: Uint32Array, at: number): void {
    if (4 * (this.count + 1) > 3 * this.capacity) {
      this.grow()
      at = this.find(probe)
    }
    this.slots.set(probe, at)
    this.count++
  }

  private grow(): void {
    const { words, mark } = this
    const old = this.slots
    this.capacity *= 2
    this.slots = new Uint32Array(this.capacity * words)
    const slot = new Uint32Array(words)
    for (let at = 0; at < old.length; at += words) {
      if (old[at + mark] === 0) continue
      for (let w = 0; w < words; w++) slot[w] = old[at + w]!
      this.slots.set(slot, this.find(slot))
    }
  }
}

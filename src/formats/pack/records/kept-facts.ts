/**
 * What a check keeps of the fact rows later rows are held to (check-tables.ts): each tiling's pin, group and
 * (level 3) neighbour lists, each rule notation's family and (level 3) masks, and a digest of every tilings
 * and rules row for "a key's rows are the same wherever they appear". A real pack has a few dozen tilings
 * and a handful of rules, but nothing in the spec bounds how many rows those tables hold or how long a key
 * is (a string cell may be 1 MiB), so each map is capped by its keys and all of them by the characters
 * they keep. A key beyond a cap is not kept, and what needed it is not checked (a note says so): a pack
 * may legitimately hold many rules, so it is not refused for it. A publish keeps its tilings and rules
 * under this budget of characters and caps of its own (publish-rows.ts): it cannot leave a record
 * unchecked, so it refuses a row beyond them.
 */

/** The most keys a check keeps in each map of facts (tilings, rules' families, level 3's rules, row digests), and a publish of tilings. */
export const FACT_KEYS_CAP = 1 << 16

/**
 * The characters of the keys and values kept in all those maps, and of the main rules' notations: at most
 * 32 MiB as one-byte strings, 64 MiB if every one is two-byte.
 */
export const KEPT_TEXT_CAP = 1 << 25

/** The bytes of lattice geometry (its tilings rows' bytes, row-bytes.ts) level 3 keeps for replay. */
export const GEOMETRY_BYTES_CAP = 1 << 24

/** A budget of characters kept, shared by a check's maps of facts. */
export class KeptText {
  constructor(private left: number) {}

  /** Takes `chars` from the budget: false, and nothing taken, when fewer are left. */
  take(chars: number): boolean {
    if (chars > this.left) return false
    this.left -= chars
    return true
  }
}

/** A map of facts under a cap on its keys and a shared budget of characters; the keys not kept are counted. */
export class KeptFacts<V> {
  readonly entries = new Map<string, V>()
  /** New keys not kept. */
  dropped = 0

  constructor(
    private readonly cap: number,
    private readonly text: KeptText,
  ) {}

  get(key: string): V | undefined {
    return this.entries.get(key)
  }

  /** Whether `key` is kept, or can be: a new key under the cap, whose `chars` the budget still has (they are taken). */
  admit(key: string, chars: number): boolean {
    if (this.entries.has(key)) return true
    if (this.entries.size < this.cap && this.text.take(chars)) return true
    this.dropped++
    return false
  }

  /** Keeps `value` under a new `key` (the first value kept stays); false when the key cannot be kept. */
  keep(key: string, value: V, chars: number): boolean {
    if (this.entries.has(key)) return true
    if (!this.admit(key, chars)) return false
    this.entries.set(key, value)
    return true
  }
}

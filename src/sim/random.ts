/** A small seeded PRNG (mulberry32): simulations and fixtures must be byte-for-byte repeatable. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** FNV-1a over 32-bit words, mixed: seeds for separate random streams drawn from one seed. */
export function hash32(...xs: number[]): number {
  let h = 0x811c9dc5
  for (const x of xs) {
    h = Math.imul(h ^ (x >>> 0), 0x01000193)
    h ^= h >>> 15
  }
  return h >>> 0
}

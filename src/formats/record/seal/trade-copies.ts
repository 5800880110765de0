/**
 * Which trades of an hour more than one line carries with different values: the candidates for the
 * manifest's conflicts. Every trade is kept as two 64-bit fingerprints (of its instrument and trade id, and
 * of the side, price, size and exchange_time its first line stated) in typed arrays outside the JavaScript
 * heap: an hour holds a million trades, their ids may be UUIDs (Bybit), and a venue whose replicas' copies
 * never pair (Coinbase) carries every trade twice. Only a trade whose copies differ keeps its lines and ids.
 *
 * Fingerprints can collide, so what this finds are candidates: the sealer reads their lines back and keeps
 * a conflict only where one trade id's lines truly differ (seal.ts). A collision can add a candidate; it
 * cannot hide one, except where two different statements of one trade share a 64-bit fingerprint.
 */
import type { TableRow } from '../types.js'

/** The lines and trades (instrument, trade id) to read back; lines ascending. */
export interface ConflictCandidates {
  lines: number[]
  trades: [string, string][]
}

/** Per trade: key fingerprint (2 words), first statement's fingerprint (2 words), first line, last line. */
const TRADE_WORDS = 6

export class TradeCopies {
  private trades = new Uint32Array(TRADE_WORDS * 1024)
  private count = 0
  /** Open addressing, linear probing: a trade's index + 1, 0 for an empty slot. */
  private slots = new Uint32Array(2048)
  /** Lines after a trade's first, as (trade, line) pairs: read back only for the trades that conflict. */
  private repeats = new Uint32Array(2048)
  private repeatCount = 0
  /** By trade index: the instrument and trade id of every line whose statement differed from the first. */
  private readonly conflicting = new Map<number, [string, string][]>()

  /** Notes one trade row of raw-file line `line`; lines come in ascending order. */
  add(row: TableRow, line: number): void {
    if (row.trade_id === null) return
    hashText(row.instrument, 0x811c9dc5, 0x2f1a6b3d)
    hashText(row.trade_id, keyA ^ 0x9e3779b9, keyB ^ 0x7f4a7c15)
    const k0 = fmix(keyA)
    const k1 = fmix(keyB)
    hashText(row.side ?? '\u0000', 0x811c9dc5, 0x2f1a6b3d)
    hashText(row.price, keyA, keyB)
    hashText(row.size, keyA ^ 0x85ebca6b, keyB ^ 0xc2b2ae35)
    hashText(row.exchange_time === null ? '' : String(row.exchange_time), keyA ^ 0x27d4eb2f, keyB ^ 0x165667b1)
    const s0 = fmix(keyA)
    const s1 = fmix(keyB)

    const mask = this.slots.length - 1
    let slot = (k0 ^ Math.imul(k1, 0x9e3779b1)) & mask
    for (;;) {
      const entry = this.slots[slot]!
      if (entry === 0) break
      const base = (entry - 1) * TRADE_WORDS
      const t = this.trades
      if (t[base] === k0 && t[base + 1] === k1) {
        // A line's lines are noted once; a second row of the fingerprint in one line is still compared (it may
        // be another trade whose key collided), and the read-back decides (it reads a line's trade once).
        if (t[base + 5] !== line) {
          t[base + 5] = line
          this.repeat(entry - 1, line)
        }
        if (t[base + 2] !== s0 || t[base + 3] !== s1) {
          const named = this.conflicting.get(entry - 1)
          if (!named) this.conflicting.set(entry - 1, [[row.instrument, row.trade_id]])
          else if (!named.some(([i, id]) => i === row.instrument && id === row.trade_id)) named.push([row.instrument, row.trade_id])
        }
        return
      }
      slot = (slot + 1) & mask
    }
    if (this.count * TRADE_WORDS === this.trades.length) this.trades = grown(this.trades)
    const base = this.count * TRADE_WORDS
    const t = this.trades
    t[base] = k0; t[base + 1] = k1; t[base + 2] = s0; t[base + 3] = s1; t[base + 4] = line; t[base + 5] = line
    this.slots[slot] = ++this.count
    if (this.count * 2 > this.slots.length) this.rehash()
  }

  /** The trades whose copies differed, with every line of theirs; empty when none did. */
  candidates(): ConflictCandidates {
    if (this.conflicting.size === 0) return { lines: [], trades: [] }
    const lines = new Set<number>()
    const trades: [string, string][] = []
    for (const [index, named] of this.conflicting) {
      lines.add(this.trades[index * TRADE_WORDS + 4]!)
      trades.push(...named)
    }
    for (let i = 0; i < this.repeatCount; i++) if (this.conflicting.has(this.repeats[2 * i]!)) lines.add(this.repeats[2 * i + 1]!)
    return { lines: [...lines].sort((x, y) => x - y), trades }
  }

  private repeat(index: number, line: number): void {
    if (2 * this.repeatCount === this.repeats.length) this.repeats = grown(this.repeats)
    this.repeats[2 * this.repeatCount] = index
    this.repeats[2 * this.repeatCount + 1] = line
    this.repeatCount++
  }

  private rehash(): void {
    const slots = new Uint32Array(this.slots.length * 2)
    const mask = slots.length - 1
    const t = this.trades
    for (let i = 0; i < this.count; i++) {
      let slot = (t[i * TRADE_WORDS]! ^ Math.imul(t[i * TRADE_WORDS + 1]!, 0x9e3779b1)) & mask
      while (slots[slot] !== 0) slot = (slot + 1) & mask
      slots[slot] = i + 1
    }
    this.slots = slots
  }
}

function grown(a: Uint32Array<ArrayBuffer>): Uint32Array<ArrayBuffer> {
  const b = new Uint32Array(a.length * 2)
  b.set(a)
  return b
}

/** Two 32-bit lanes of a text's hash, left in module state rather than in an allocated pair (a call per row field). */
let keyA = 0
let keyB = 0

/** FNV-1a in one lane and a multiply-rotate hash in the other, over the UTF-16 code units, each seeded. */
function hashText(text: string, seedA: number, seedB: number): void {
  let a = seedA | 0
  let b = seedB | 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    a = Math.imul(a ^ c, 0x01000193)
    b = Math.imul((b ^ c) + 0x6b43a9b5, 0x5bd1e995)
    b ^= b >>> 15
  }
  // The length closes each field, so that "1" + "23" and "12" + "3" differ.
  keyA = Math.imul(a ^ text.length, 0x01000193)
  keyB = Math.imul(b ^ text.length, 0x5bd1e995)
}

/** MurmurHash3's finalizer: every input bit reaches every output bit. */
function fmix(h: number): number {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

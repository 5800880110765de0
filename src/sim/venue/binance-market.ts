/**
 * Deterministic Binance spot market data for the venue simulator, one {@link Instrument} per symbol:
 * - trades: ids +1 per trade, a price walking by ticks, sizes in lots, `T` a little before `E`;
 * - a small book that never crosses (bids below the mid, asks above it), moved by depth updates whose
 *   update ids chain (`U` == previous `u` + 1; `u` - `U` counts changes Binance made inside, not only the
 *   levels shown), and aggregated per second for `<symbol>@depth`;
 * - the REST depth snapshot of the book as it stands.
 * Each instrument draws from random streams of its own, seeded by the seed and its symbol: what one
 * instrument does depends neither on the others nor on who is subscribed. The ideas (prices in units of
 * 1e-8, the book's moves) are those of src/sim/replicas.ts.
 *
 * Texts are built as Binance writes them (the plain trade of src/venues/binance.ts), only when a
 * connection wants them, in one of four variants: raw or combined stream, milliseconds or microseconds.
 */
import { BINANCE_INSTRUMENTS, fmt8, moveBookSide, type InstrumentSpec } from '../binance-instruments.js'
import { hash32, seededRandom } from '../random.js'

/** Bit 0: combined stream (`{"stream":..,"data":..}`); bit 1: times in microseconds (`?timeUnit=microsecond`). */
export type Variant = 0 | 1 | 2 | 3
export const COMBINED = 1
export const MICROSECONDS = 2

/** How a fault alters a frame's text. */
export type Mutation = 'price-number' | 'missing-field' | 'truncated' | 'conflict'

/** Levels either side of the mid that updates touch; the book starts with this many a side. */
const BOOK_SPAN = 40

export interface TradeEvent {
  kind: 'trade'
  ins: Instrument
  /** Simulated time the venue pushed it (E), epoch microseconds. */
  us: number
  id: number
  /** In units of 1e-8. */
  price: number
  qty: number
  buyerMaker: boolean
  /** Simulated time of the match (T), epoch microseconds, at most `us`. */
  tradeUs: number
}

export interface DepthEvent {
  kind: 'depth'
  ins: Instrument
  us: number
  U: number
  u: number
  /** Changed levels: tick index -> quantity in units of 1e-8 (0 removes the level). */
  bids: Map<number, number>
  asks: Map<number, number>
}

export type MarketEvent = TradeEvent | DepthEvent

function hashText(s: string): number {
  return hash32(...Array.from(s, (c) => c.charCodeAt(0)))
}

export class Instrument {
  readonly lower: string
  readonly tradeStream: string
  readonly depthStream: string
  /** `<symbol>@depth`: the updates of each second in one frame. */
  readonly depthSecondStream: string
  readonly spec: InstrumentSpec
  private readonly tradeRand: () => number
  private readonly bookRand: () => number
  lastTradeId: number
  lastUpdateId: number
  private price: number
  private mid: number
  private readonly bids = new Map<number, number>()
  private readonly asks = new Map<number, number>()
  /** The current second of `@depth`: its first U and the levels changed so far (last quantity wins). */
  private secondU = 0
  private readonly secondBids = new Map<number, number>()
  private readonly secondAsks = new Map<number, number>()

  constructor(readonly symbol: string, seed: number) {
    if (!/^[A-Z0-9]{1,20}$/.test(symbol)) throw new RangeError(`instrument ${JSON.stringify(symbol)} is not a Binance spot symbol (A-Z, 0-9)`)
    this.lower = symbol.toLowerCase()
    this.tradeStream = this.lower + '@trade'
    this.depthStream = this.lower + '@depth@100ms'
    this.depthSecondStream = this.lower + '@depth'
    const h = hashText(symbol)
    const setup = seededRandom(hash32(seed, h, 1))
    this.tradeRand = seededRandom(hash32(seed, h, 2))
    this.bookRand = seededRandom(hash32(seed, h, 3))
    const known = BINANCE_INSTRUMENTS[symbol]
    this.spec = known
      ? { ...known, price: known.price + Math.round((setup() - 0.5) * 200) * known.tick }
      : { price: (10_000 + (h % 90_000)) * 1_000_000, tick: 1_000_000, lot: 1_000_000 }
    this.price = this.spec.price
    this.lastTradeId = 1_000_000_000 + Math.floor(setup() * 1_000_000_000)
    this.lastUpdateId = 40_000_000_000 + Math.floor(setup() * 10_000_000_000)
    this.mid = Math.round(this.spec.price / this.spec.tick)
    for (let k = 1; k <= BOOK_SPAN; k++) {
      this.bids.set(this.mid - k, this.spec.lot * (1 + Math.floor(setup() * 3000)))
      this.asks.set(this.mid + k, this.spec.lot * (1 + Math.floor(setup() * 3000)))
    }
  }

  /** The next trade, pushed at `us`; `spacingUs` (the time since the previous one) bounds how far T lies before E. */
  nextTrade(us: number, spacingUs: number): TradeEvent {
    const r = this.tradeRand
    const spec = this.spec
    const move = r()
    if (move < 0.15) this.price = Math.max(spec.tick, this.price - spec.tick)
    else if (move > 0.85) this.price += spec.tick
    const u = r()
    const qty = spec.lot * (1 + Math.floor(u * u * u * 5000))
    const buyerMaker = r() < 0.5
    const tradeUs = us - Math.floor(r() * Math.min(800, spacingUs))
    return { kind: 'trade', ins: this, us, id: ++this.lastTradeId, price: this.price, qty, buyerMaker, tradeUs }
  }

  /** The next depth update, at `us`: the book moves, and the changed levels are the update. */
  nextDepth(us: number): DepthEvent {
    const r = this.bookRand
    const spec = this.spec
    const bidChanges = new Map<number, number>()
    const askChanges = new Map<number, number>()
    const move = r()
    // A mid that moves takes the levels it passes with it, so the book never crosses.
    if (move < 0.05) {
      this.mid -= 1
      for (const p of this.bids.keys()) if (p >= this.mid) { this.bids.delete(p); bidChanges.set(p, 0) }
    } else if (move > 0.95) {
      this.mid += 1
      for (const p of this.asks.keys()) if (p <= this.mid) { this.asks.delete(p); askChanges.set(p, 0) }
    }
    for (const side of [0, 1] as const) {
      const levels = side === 0 ? this.bids : this.asks
      const changed = side === 0 ? bidChanges : askChanges
      moveBookSide(levels, changed, side, this.mid, BOOK_SPAN, spec.lot, r)
      // Levels the mid has drifted far from leave, so the book stays small.
      if (move < 0.05 || move > 0.95) {
        for (const p of levels.keys()) if (Math.abs(p - this.mid) > 2 * BOOK_SPAN) { levels.delete(p); changed.set(p, 0) }
      }
    }
    const U = this.lastUpdateId + 1
    const u = U + bidChanges.size + askChanges.size + Math.floor(r() * 20) - 1
    this.lastUpdateId = u
    if (this.secondU === 0) this.secondU = U
    for (const [p, q] of bidChanges) this.secondBids.set(p, q)
    for (const [p, q] of askChanges) this.secondAsks.set(p, q)
    return { kind: 'depth', ins: this, us, U, u, bids: bidChanges, asks: askChanges }
  }

  /** The `@depth` update of the second that ends at `us`: every change since the last one. */
  takeSecond(us: number): DepthEvent {
    const ev: DepthEvent = { kind: 'depth', ins: this, us, U: this.secondU, u: this.lastUpdateId, bids: new Map(this.secondBids), asks: new Map(this.secondAsks) }
    this.secondU = 0
    this.secondBids.clear()
    this.secondAsks.clear()
    return ev
  }

  /** The REST depth snapshot body: `{"lastUpdateId":..,"bids":[..],"asks":[..]}`, best `limit` levels a side. */
  snapshot(limit: number): string {
    const tick = this.spec.tick
    const side = (m: Map<number, number>, desc: boolean): string => {
      const keys = [...m.keys()].sort((x, y) => (desc ? y - x : x - y)).slice(0, limit)
      return '[' + keys.map((p) => '["' + fmt8(p * tick) + '","' + fmt8(m.get(p)!) + '"]').join(',') + ']'
    }
    return '{"lastUpdateId":' + this.lastUpdateId + ',"bids":' + side(this.bids, true) + ',"asks":' + side(this.asks, false) + '}'
  }
}

/** The text of `ev` on `stream` in `variant`, as Binance writes it, or altered by `mutation`. */
export function eventText(ev: MarketEvent, stream: string, variant: number, mutation?: Mutation): string {
  const micro = (variant & MICROSECONDS) !== 0
  let payload = ev.kind === 'trade' ? tradeText(ev, micro, mutation) : depthText(ev, micro, mutation)
  if (variant & COMBINED) payload = '{"stream":"' + stream + '","data":' + payload + '}'
  return mutation === 'truncated' ? payload.slice(0, -1) : payload
}

function time(us: number, micro: boolean): number {
  return micro ? us : Math.floor(us / 1000)
}

function tradeText(t: TradeEvent, micro: boolean, mutation: Mutation | undefined): string {
  const price = fmt8(mutation === 'conflict' ? t.price + t.ins.spec.tick : t.price)
  return '{"e":"trade","E":' + time(t.us, micro) + ',"s":"' + t.ins.symbol + '","t":' + t.id +
    ',"p":' + (mutation === 'price-number' ? price : '"' + price + '"') +
    (mutation === 'missing-field' ? '' : ',"q":"' + fmt8(t.qty) + '"') +
    ',"T":' + time(t.tradeUs, micro) + ',"m":' + t.buyerMaker + ',"M":true}'
}

function depthText(d: DepthEvent, micro: boolean, mutation: Mutation | undefined): string {
  const tick = d.ins.spec.tick
  // price-number: the first level's price as a JSON number.
  let bare = mutation === 'price-number'
  const levels = (m: Map<number, number>): string => {
    let out = ''
    for (const [p, q] of m) {
      const price = bare ? fmt8(p * tick) : '"' + fmt8(p * tick) + '"'
      out += (out ? ',[' : '[') + price + ',"' + fmt8(q) + '"]'
      bare = false
    }
    return '[' + out + ']'
  }
  const b = levels(d.bids)
  const a = levels(d.asks)
  return '{"e":"depthUpdate","E":' + time(d.us, micro) + ',"s":"' + d.ins.symbol + '","U":' + d.U + ',"u":' + d.u +
    (mutation === 'missing-field' ? '' : ',"b":' + b) + ',"a":' + a + '}'
}

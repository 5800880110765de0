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
 *
 * USD-M futures (binance-usdm-market.ts) extend {@link Instrument}: the same book, price walk and random
 * streams, with the futures' ids, events and texts on top. The event types of both are here.
 */
import { BINANCE_INSTRUMENTS, fmt8, moveBookSide, type InstrumentSpec } from '../binance-instruments.js'
import { hash32, seededRandom } from '../random.js'

/** Bit 0: combined stream (`{"stream":..,"data":..}`); bit 1: times in microseconds (`?timeUnit=microsecond`). */
export type Variant = 0 | 1 | 2 | 3
export const COMBINED = 1
export const MICROSECONDS = 2

/** How a fault alters a frame's text. */
export type Mutation = 'price-number' | 'price-string' | 'missing-field' | 'truncated' | 'conflict' | 'checksum'

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
  /** USD-M futures only: the symbol's previous `u` on this stream (`pu`), and the transaction time (`T`), epoch microseconds. */
  pu?: number
  tradeUs?: number
  /** Deribit only: the changed levels the book did not hold before (`new`, where the others are `change` or `delete`). */
  added?: Set<number>
}

/** A USD-M aggregate trade: aggregate id `a` (`id`), the trade ids it covers (`f`..`l`), the fills' price and taking side. */
export interface AggTradeEvent {
  kind: 'aggTrade'
  ins: Instrument
  us: number
  id: number
  first: number
  last: number
  price: number
  qty: number
  buyerMaker: boolean
  tradeUs: number
}

/** A USD-M `markPriceUpdate`: prices and the funding rate in units of 1e-8, the next funding time in epoch milliseconds. */
export interface MarkPriceEvent {
  kind: 'markPrice'
  ins: Instrument
  us: number
  mark: number
  index: number
  settle: number
  funding: number
  nextFundingMs: number
}

/** A USD-M `forceOrder`: a liquidation order, filled at once (`X` FILLED, `l` = `z` = `q`). */
export interface ForceOrderEvent {
  kind: 'forceOrder'
  ins: Instrument
  us: number
  sell: boolean
  price: number
  avgPrice: number
  qty: number
  /** The order's trade time (`o.T`), epoch microseconds, at most `us`. */
  tradeUs: number
}

/** The whole book sent to every subscriber after the venue's book service restarted (Bybit's snapshot with u = 1). */
export interface BookSnapshotEvent { kind: 'bookSnapshot'; ins: Instrument; us: number }

export type MarketEvent = TradeEvent | DepthEvent | AggTradeEvent | MarkPriceEvent | ForceOrderEvent | BookSnapshotEvent

/** The venue ids a frame carries (a trade's or aggregate's id, a depth update's `U`..`u`), or null (mark price, liquidations). */
export function idsOf(ev: MarketEvent): { first: number; last: number } | null {
  switch (ev.kind) {
    case 'trade': case 'aggTrade': return { first: ev.id, last: ev.id }
    case 'depth': return { first: ev.U, last: ev.u }
    default: return null
  }
}

export function hashText(s: string): number {
  return hash32(...Array.from(s, (c) => c.charCodeAt(0)))
}

/**
 * How a venue names an instrument and its streams: the symbols it takes, the streams' suffixes after the
 * lower-case symbol, and the known instrument whose prices, tick and lot it trades at.
 */
export interface Naming {
  /** Names the venue's symbols in an error: `spot`, `USD-M`, `Kraken`. */
  market: string
  symbol: RegExp
  /** What a symbol that does not match `symbol` must be, in an error. */
  symbolRule: string
  tradeSuffix: string
  depthSuffix: string
  /** The aggregate of each `depthAggregateMs` (Binance's `@depth`), or null: the venue has none. */
  aggregateSuffix: string | null
  /** The key of src/sim/binance-instruments.ts whose price, tick and lot the symbol trades at. */
  specOf(symbol: string): string
}

export const SPOT_NAMING: Naming = {
  market: 'Binance spot', symbol: /^[A-Z0-9]{1,20}$/, symbolRule: 'A-Z, 0-9', tradeSuffix: '@trade', depthSuffix: '@depth@100ms', aggregateSuffix: '@depth', specOf: (s) => s,
}

export class Instrument {
  readonly lower: string
  readonly tradeStream: string
  readonly depthStream: string
  /** `<symbol>@depth`: the updates of each second in one frame (null: the venue has no such stream). */
  readonly depthSecondStream: string | null
  readonly spec: InstrumentSpec
  protected readonly tradeRand: () => number
  protected readonly bookRand: () => number
  lastTradeId: number
  lastUpdateId: number
  /** The last trade's price, units of 1e-8. */
  protected price: number
  private mid: number
  private readonly bids = new Map<number, number>()
  private readonly asks = new Map<number, number>()
  /** The current aggregate of `@depth` (a second on spot): its first U and pu, and the levels changed so far (last quantity wins). */
  protected secondU = 0
  protected secondPu = 0
  protected readonly secondBids = new Map<number, number>()
  protected readonly secondAsks = new Map<number, number>()

  constructor(readonly symbol: string, seed: number, naming: Naming = SPOT_NAMING) {
    if (!naming.symbol.test(symbol)) throw new RangeError(`instrument ${JSON.stringify(symbol)} is not a ${naming.market} symbol (${naming.symbolRule})`)
    this.lower = symbol.toLowerCase()
    this.tradeStream = this.lower + naming.tradeSuffix
    this.depthStream = this.lower + naming.depthSuffix
    this.depthSecondStream = naming.aggregateSuffix === null ? null : this.lower + naming.aggregateSuffix
    const h = hashText(symbol)
    const setup = seededRandom(hash32(seed, h, 1))
    this.tradeRand = seededRandom(hash32(seed, h, 2))
    this.bookRand = seededRandom(hash32(seed, h, 3))
    const known = BINANCE_INSTRUMENTS[naming.specOf(symbol)]
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

  /** The next frame of the instrument's trade stream (spot: a trade), pushed at `us`. */
  tradeEvent(us: number, spacingUs: number): MarketEvent {
    return this.nextTrade(us, spacingUs)
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
    const [bidChanges, askChanges] = this.moveBook()
    const U = this.lastUpdateId + 1
    const u = U + bidChanges.size + askChanges.size + Math.floor(this.bookRand() * 20) - 1
    this.lastUpdateId = u
    this.noteAggregate(U, bidChanges, askChanges)
    return { kind: 'depth', ins: this, us, U, u, bids: bidChanges, asks: askChanges }
  }

  /** Moves the book one update's worth: the changed levels, bids and asks (0: removed). */
  protected moveBook(): [Map<number, number>, Map<number, number>] {
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
    return [bidChanges, askChanges]
  }

  /** Adds an update to the current `@depth` aggregate. */
  protected noteAggregate(U: number, bids: Map<number, number>, asks: Map<number, number>, pu = 0): void {
    if (this.secondU === 0) {
      this.secondU = U
      this.secondPu = pu
    }
    for (const [p, q] of bids) this.secondBids.set(p, q)
    for (const [p, q] of asks) this.secondAsks.set(p, q)
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
  snapshot(limit: number, _nowUs: number): string {
    return '{"lastUpdateId":' + this.lastUpdateId + ',' + this.bookText(limit, fmt8, fmt8) + '}'
  }

  /** The best `limit` levels of a side, best first: [price, quantity] in units of 1e-8. */
  best(side: 'bids' | 'asks', limit: number): [number, number][] {
    const m = side === 'bids' ? this.bids : this.asks
    const tick = this.spec.tick
    return [...m.keys()].sort((x, y) => (side === 'bids' ? y - x : x - y)).slice(0, limit).map((p) => [p * tick, m.get(p)!])
  }

  /** `"bids":[..],"asks":[..]`: the best `limit` levels a side, prices and quantities written by `price` and `qty`. */
  protected bookText(limit: number, price: (units: number) => string, qty: (units: number) => string): string {
    const side = (levels: [number, number][]): string => '[' + levels.map(([p, q]) => '["' + price(p) + '","' + qty(q) + '"]').join(',') + ']'
    return '"bids":' + side(this.best('bids', limit)) + ',"asks":' + side(this.best('asks', limit))
  }
}

/** The text of spot's `ev` on `stream` in `variant`, as Binance writes it, or altered by `mutation`. */
export function eventText(ev: MarketEvent, stream: string, variant: number, mutation?: Mutation): string {
  const micro = (variant & MICROSECONDS) !== 0
  return framed(ev.kind === 'trade' ? tradeText(ev, micro, mutation) : depthText(ev as DepthEvent, micro, mutation), stream, variant, mutation)
}

/** A payload as sent: wrapped for a combined stream, and cut short when `truncated`. */
export function framed(payload: string, stream: string, variant: number, mutation: Mutation | undefined): string {
  if (variant & COMBINED) payload = '{"stream":"' + stream + '","data":' + payload + '}'
  return mutation === 'truncated' ? payload.slice(0, -1) : payload
}

export function time(us: number, micro: boolean): number {
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
  const [b, a] = depthLevels(d, mutation, fmt8, fmt8)
  return '{"e":"depthUpdate","E":' + time(d.us, micro) + ',"s":"' + d.ins.symbol + '","U":' + d.U + ',"u":' + d.u +
    (mutation === 'missing-field' ? '' : ',"b":' + b) + ',"a":' + a + '}'
}

/** A depth update's `b` and `a` texts; `price-number` writes the first level's price as a JSON number. */
export function depthLevels(d: DepthEvent, mutation: Mutation | undefined, price: (units: number) => string, qty: (units: number) => string): [string, string] {
  const tick = d.ins.spec.tick
  let bare = mutation === 'price-number'
  const levels = (m: Map<number, number>): string => {
    let out = ''
    for (const [p, q] of m) {
      const text = bare ? price(p * tick) : '"' + price(p * tick) + '"'
      out += (out ? ',[' : '[') + text + ',"' + qty(q) + '"]'
      bare = false
    }
    return '[' + out + ']'
  }
  const b = levels(d.bids)
  return [b, levels(d.asks)]
}

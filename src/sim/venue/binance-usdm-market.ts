/**
 * Deterministic Binance USD-M futures market data for the venue simulator (docs/simulator.md, "USD-M
 * futures"): {@link UsdmInstrument} is spot's {@link Instrument} (the same book, price walk and random
 * streams) with the futures' ids and events on top:
 * - aggregate trades: aggregate id `a` +1 per aggregate, each covering 1 to 3 trade ids `f`..`l`, with now
 *   and then a hole before `f` (insurance-fund and ADL fills, which Binance leaves out of aggregates);
 * - depth updates whose ids are the matching engine's, shared by every symbol ({@link Engine}): a symbol's
 *   next `U` is never its previous `u` + 1, and `pu` states that previous `u`; `T` a little before `E`;
 * - a mark price every 3 seconds, and now and then a liquidation (at most one a second);
 * - the REST snapshot of `/fapi/v1/depth`, with `E` and `T`.
 * Prices and quantities are written with the decimals of the symbol's tick and lot (`"61234.56"`,
 * `"0.012"`), as futures writes them; mark prices and funding rates with 8, as Binance's example does.
 * Times are in milliseconds: futures documents no `timeUnit`.
 */
import { decimalsOf, fmt8 } from '../binance-instruments.js'
import { hash32, seededRandom } from '../random.js'
import {
  Instrument, SPOT_NAMING, depthLevels, framed, hashText, time,
  type AggTradeEvent, type DepthEvent, type ForceOrderEvent, type MarkPriceEvent, type MarketEvent, type Mutation, type Naming,
} from './binance-market.js'

const USDM_NAMING: Naming = { ...SPOT_NAMING, market: 'Binance USD-M', tradeSuffix: '@aggTrade' }

/** `<symbol>@markPrice` pushes every 3 seconds (Binance's "Mark Price Stream"; `@markPrice@1s` is not simulated). */
export const MARK_PRICE_INTERVAL_MS = 3000
/** `<symbol>@forceOrder` pushes at most the latest liquidation of each second ("Liquidation Order Streams"). */
export const LIQUIDATION_INTERVAL_MS = 1000
/** The odds that a symbol has a liquidation in a given second: three a minute, on average. */
export const LIQUIDATION_ODDS = 0.05
/** The odds of a hole in the trade ids before an aggregate (fills Binance does not aggregate). */
const HOLE_ODDS = 0.05
const FUNDING_PERIOD_MS = 8 * 3_600_000

/** The matching engine's update ids, shared by every symbol's depth stream. */
export class Engine {
  lastId: number
  constructor(seed: number) {
    this.lastId = 8_000_000_000_000 + Math.floor(seededRandom(hash32(seed, 0x05ed, 7))() * 1_000_000_000_000)
  }
}

/** `units` (of 1e-8) written with `d` decimals. */
function fmtDecimals(units: number, d: number): string {
  const s = fmt8(units)
  return d >= 8 ? s : s.slice(0, d === 0 ? -9 : d - 8)
}

function fmtSigned8(units: number): string {
  return units < 0 ? '-' + fmt8(-units) : fmt8(units)
}

export class UsdmInstrument extends Instrument {
  readonly markStream: string
  readonly forceStream: string
  lastAggId: number
  /** Prices and quantities as texts: the tick's and the lot's decimals. */
  readonly fmtPrice: (units: number) => string
  readonly fmtQty: (units: number) => string
  private readonly aggRand: () => number
  private readonly markRand: () => number
  private readonly liqRand: () => number
  /** The funding rate, units of 1e-8 (10,000: 0.0001). */
  private funding: number
  /** The last depth update's transaction time, epoch microseconds (0: none yet). */
  private lastDepthTUs = 0

  /** `naming`: Binance USD-M's by default; OKX's perpetuals trade on the same engine (okx-market.ts). */
  constructor(symbol: string, seed: number, protected readonly engine: Engine, naming: Naming = USDM_NAMING) {
    super(symbol, seed, naming)
    this.markStream = this.lower + '@markPrice'
    this.forceStream = this.lower + '@forceOrder'
    const h = hashText(symbol)
    const setup = seededRandom(hash32(seed, h, 4))
    this.aggRand = seededRandom(hash32(seed, h, 5))
    this.markRand = seededRandom(hash32(seed, h, 6))
    this.liqRand = seededRandom(hash32(seed, h, 7))
    this.lastAggId = 1_000_000_000 + Math.floor(setup() * 1_000_000_000)
    this.funding = 10_000 + Math.round((setup() - 0.5) * 4000)
    engine.lastId += 1 + Math.floor(setup() * 50)
    this.lastUpdateId = engine.lastId
    const priceDecimals = decimalsOf(this.spec.tick)
    const qtyDecimals = decimalsOf(this.spec.lot)
    this.fmtPrice = (units) => fmtDecimals(units, priceDecimals)
    this.fmtQty = (units) => fmtDecimals(units, qtyDecimals)
  }

  /** The next aggregate trade, pushed at `us`: the fills of one taker at one price. */
  override tradeEvent(us: number, spacingUs: number): MarketEvent {
    const r = this.aggRand
    // Insurance-fund and ADL fills take trade ids but are not aggregated: a hole before f.
    if (r() < HOLE_ODDS) this.lastTradeId += 1 + Math.floor(r() * 3)
    const fills = 1 + Math.floor(r() * 3)
    const t = this.nextTrade(us, spacingUs)
    this.lastTradeId += fills - 1
    return { kind: 'aggTrade', ins: this, us, id: ++this.lastAggId, first: t.id, last: this.lastTradeId, price: t.price, qty: t.qty, buyerMaker: t.buyerMaker, tradeUs: t.tradeUs }
  }

  /** The next depth update, at `us`: ids from the engine, after other symbols' (U > pu + 1), and `pu` the previous `u`. */
  override nextDepth(us: number): DepthEvent {
    const [bids, asks] = this.moveBook()
    const r = this.bookRand
    const pu = this.lastUpdateId
    const U = this.engine.lastId + 2 + Math.floor(r() * 40)
    const u = U + bids.size + asks.size + Math.floor(r() * 20) - 1
    this.engine.lastId = u
    this.lastUpdateId = u
    const tradeUs = us - Math.floor(r() * 3000)
    this.lastDepthTUs = tradeUs
    this.noteAggregate(U, bids, asks, pu)
    return { kind: 'depth', ins: this, us, U, u, bids, asks, pu, tradeUs }
  }

  /** The `@depth` update gathering the updates since the last one: `pu` the last one's `u`. */
  override takeSecond(us: number): DepthEvent {
    const pu = this.secondPu
    const ev = super.takeSecond(us)
    ev.pu = pu
    ev.tradeUs = this.lastDepthTUs
    return ev
  }

  /** The mark price at `us`: about the last trade's price, the index and settle prices near it, the funding rate drifting. */
  nextMarkPrice(us: number): MarkPriceEvent {
    const r = this.markRand
    const tick = this.spec.tick
    const mark = Math.max(1, this.price + Math.round((r() - 0.5) * 2 * tick))
    const index = Math.max(1, mark + Math.round((r() - 0.5) * tick))
    const settle = Math.max(1, index + Math.round((r() - 0.5) * tick / 2))
    this.funding = Math.max(-300_000, Math.min(300_000, this.funding + Math.round((r() - 0.5) * 40)))
    const nextFundingMs = (Math.floor(us / 1000 / FUNDING_PERIOD_MS) + 1) * FUNDING_PERIOD_MS
    return { kind: 'markPrice', ins: this, us, mark, index, settle, funding: this.funding, nextFundingMs }
  }

  /** The liquidation of the second that ends at `us`, if any (LIQUIDATION_ODDS): an IOC order away from the price, filled. */
  nextForceOrder(us: number): ForceOrderEvent | null {
    const r = this.liqRand
    if (r() >= LIQUIDATION_ODDS) return null
    const tick = this.spec.tick
    const sell = r() < 0.5
    const away = 1 + Math.floor(r() * 20)
    // A long liquidated sells below the market and fills at or above its limit; a short, the other way.
    const price = Math.max(tick, this.price + (sell ? -away : away) * tick)
    const better = Math.floor(r() * away) * tick
    const avgPrice = Math.max(tick, sell ? price + better : price - better)
    const u = r()
    const qty = this.spec.lot * (1 + Math.floor(u * u * 2000))
    const tradeUs = us - Math.floor(r() * 999_000)
    return { kind: 'forceOrder', ins: this, us, sell, price, avgPrice, qty, tradeUs }
  }

  /** The REST body of `GET /fapi/v1/depth`: `{"lastUpdateId","E","T","bids","asks"}`, at `nowUs`. */
  override snapshot(limit: number, nowUs: number): string {
    const E = Math.floor(nowUs / 1000)
    const T = this.lastDepthTUs === 0 ? E : Math.floor(this.lastDepthTUs / 1000)
    return '{"lastUpdateId":' + this.lastUpdateId + ',"E":' + E + ',"T":' + T + ',' + this.bookText(limit, this.fmtPrice, this.fmtQty) + '}'
  }
}

/** The text of a USD-M `ev` on `stream` in `variant` (raw or combined), as Binance writes it, or altered by `mutation`. */
export function usdmEventText(ev: MarketEvent, stream: string, variant: number, mutation?: Mutation): string {
  let payload: string
  switch (ev.kind) {
    case 'aggTrade': payload = aggTradeText(ev, mutation); break
    case 'depth': payload = depthText(ev, mutation); break
    case 'markPrice': payload = markPriceText(ev, mutation); break
    case 'forceOrder': payload = forceOrderText(ev, mutation); break
    default: throw new Error(`USD-M futures has no ${ev.kind} stream`)
  }
  return framed(payload, stream, variant, mutation)
}

const ms = (us: number) => time(us, false)

function aggTradeText(t: AggTradeEvent, mutation: Mutation | undefined): string {
  const ins = t.ins as UsdmInstrument
  const price = ins.fmtPrice(mutation === 'conflict' ? t.price + ins.spec.tick : t.price)
  return '{"e":"aggTrade","E":' + ms(t.us) + ',"s":"' + ins.symbol + '","a":' + t.id +
    ',"p":' + (mutation === 'price-number' ? price : '"' + price + '"') +
    (mutation === 'missing-field' ? '' : ',"q":"' + ins.fmtQty(t.qty) + '"') +
    ',"f":' + t.first + ',"l":' + t.last + ',"T":' + ms(t.tradeUs) + ',"m":' + t.buyerMaker + '}'
}

function depthText(d: DepthEvent, mutation: Mutation | undefined): string {
  const ins = d.ins as UsdmInstrument
  const [b, a] = depthLevels(d, mutation, ins.fmtPrice, ins.fmtQty)
  return '{"e":"depthUpdate","E":' + ms(d.us) + ',"T":' + ms(d.tradeUs!) + ',"s":"' + ins.symbol + '","U":' + d.U + ',"u":' + d.u + ',"pu":' + d.pu +
    (mutation === 'missing-field' ? '' : ',"b":' + b) + ',"a":' + a + '}'
}

function markPriceText(m: MarkPriceEvent, mutation: Mutation | undefined): string {
  const p = fmt8(m.mark)
  return '{"e":"markPriceUpdate","E":' + ms(m.us) + ',"s":"' + m.ins.symbol + '"' +
    (mutation === 'missing-field' ? '' : ',"p":' + (mutation === 'price-number' ? p : '"' + p + '"')) +
    ',"i":"' + fmt8(m.index) + '","P":"' + fmt8(m.settle) + '","r":"' + fmtSigned8(m.funding) + '","T":' + m.nextFundingMs + '}'
}

function forceOrderText(f: ForceOrderEvent, mutation: Mutation | undefined): string {
  const ins = f.ins as UsdmInstrument
  const p = ins.fmtPrice(f.price)
  const q = ins.fmtQty(f.qty)
  return '{"e":"forceOrder","E":' + ms(f.us) + ',"o":{"s":"' + ins.symbol + '","S":"' + (f.sell ? 'SELL' : 'BUY') + '","o":"LIMIT","f":"IOC"' +
    (mutation === 'missing-field' ? '' : ',"q":"' + q + '"') +
    ',"p":' + (mutation === 'price-number' ? p : '"' + p + '"') + ',"ap":"' + ins.fmtPrice(f.avgPrice) + '","X":"FILLED","l":"' + q + '","z":"' + q + '","T":' + ms(f.tradeUs) + '}}'
}

/**
 * Bybit v5's public websocket, linear category, in the venue simulator (docs/simulator.md, "Bybit"): the
 * endpoint `/v5/public/linear`; `{"req_id":..,"op":"subscribe","args":[topics]}` answered once a request;
 * the topics `publicTrade.<symbol>`, `orderbook.<depth>.<symbol>` (a snapshot on subscribing, then deltas
 * whose `u` is the previous + 1), `tickers.<symbol>` (a snapshot, then deltas of the fields that changed:
 * funding rate, mark and index prices) and `allLiquidation.<symbol>`; `{"op":"ping"}` answered with a pong,
 * and a connection without a ping or data for ten minutes dropped. Bybit's books carry no checksum and its
 * public streams no close notice.
 *
 * The instruments are USDT perpetuals (`BTCUSDT`) on Binance USD-M's simulated engine
 * (binance-usdm-market.ts): its aggregates are Bybit's trades, its mark prices and funding rates Bybit's
 * tickers, its liquidations Bybit's; the book's `u` is Bybit's own count of the symbol's messages.
 */
import { fmtTrimmed as rate } from '../binance-instruments.js'
import { hash32 } from '../random.js'
import type { AggTradeEvent, DepthEvent, ForceOrderEvent, MarkPriceEvent, MarketEvent, Mutation, Naming } from './binance-market.js'
import { SPOT_NAMING } from './binance-market.js'
import { Engine, UsdmInstrument } from './binance-usdm-market.js'
import { requestObject, type Market, type Protocol, type Session } from './protocol.js'

export const BYBIT_NAMING: Naming = { ...SPOT_NAMING, market: 'Bybit linear', tradeSuffix: '@trade', depthSuffix: '@book', aggregateSuffix: null }

/** tickers pushes a delta when a field changes: with each mark price here, every 3 s. */
export const BYBIT_TICKER_INTERVAL_MS = 3000
export const BYBIT_LIQUIDATION_INTERVAL_MS = 1000
/** The depths served: the simulator's books (at most 81 levels a side) are whole at 200 and 1000. */
const SERVED_DEPTHS = ['200', '1000']
const FUNDING_PERIOD_MS = 8 * 3_600_000

export class BybitInstrument extends UsdmInstrument {
  readonly fundingStream: string
  readonly liquidationStream: string
  /** The symbol's book messages so far: Bybit's `u`. */
  private bookU = 0
  private lastMark: MarkPriceEvent | null = null
  constructor(symbol: string, seed: number, engine: Engine) {
    super(symbol, seed, engine, BYBIT_NAMING)
    this.fundingStream = this.lower + '@funding'
    this.liquidationStream = this.lower + '@liquidation'
    this.bookU = 1 + (hash32(seed, this.lastUpdateId) % 1_000_000)
  }

  /** The next delta: the engine's update, numbered by Bybit's `u` (the previous + 1). */
  override nextDepth(us: number): DepthEvent {
    const ev = super.nextDepth(us)
    ev.U = ev.u = ++this.bookU
    ev.pu = ev.u - 1
    return ev
  }

  /** A service restart: the next message is the book's snapshot with u = 1, the deltas after it 2, 3, ... */
  restartNumbering(): void {
    this.bookU = 1
  }

  override nextMarkPrice(us: number): MarkPriceEvent {
    return (this.lastMark = super.nextMarkPrice(us))
  }

  bookSnapshot(depthTopic: string, us: number): string {
    const side = (name: 'bids' | 'asks') => JSON.stringify(this.best(name, Infinity).map(([p, q]) => [this.fmtPrice(p), this.fmtQty(q)]))
    return '{"topic":"' + depthTopic + '","type":"snapshot","ts":' + Math.floor(us / 1000) + ',"data":{"s":"' + this.symbol + '","b":' + side('bids') + ',"a":' + side('asks') +
      ',"u":' + this.bookU + ',"seq":' + (this.lastUpdateId) + '},"cts":' + Math.floor(us / 1000) + '}'
  }

  /** The tickers snapshot: every field, as of the last mark price (or the last trade's price before the first). */
  tickerSnapshot(us: number): string {
    const m = this.lastMark
    const mark = this.fmtPrice(m?.mark ?? this.price)
    const next = m?.nextFundingMs ?? (Math.floor(us / 1000 / FUNDING_PERIOD_MS) + 1) * FUNDING_PERIOD_MS
    return '{"topic":"tickers.' + this.symbol + '","type":"snapshot","data":{"symbol":"' + this.symbol + '","tickDirection":"ZeroPlusTick","lastPrice":"' + this.fmtPrice(this.price) +
      '","markPrice":"' + mark + '","indexPrice":"' + this.fmtPrice(m?.index ?? this.price) + '","fundingRate":"' + rate(m?.funding ?? 10_000) +
      '","nextFundingTime":"' + next + '","fundingIntervalHour":"8"},"cs":' + this.lastUpdateId + ',"ts":' + Math.floor(us / 1000) + '}'
  }
}

/** A UUID made from a trade id: Bybit's trade ids are UUIDs. */
function uuidOf(id: number): string {
  const hex = [1, 2, 3, 4].map((k) => hash32(id, k).toString(16).padStart(8, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`
}

const quoted = (s: string, bare: boolean) => (bare ? s : '"' + s + '"')

function tradeText(t: AggTradeEvent, mutation: Mutation | undefined): string {
  const ins = t.ins as BybitInstrument
  const p = ins.fmtPrice(mutation === 'conflict' ? t.price + ins.spec.tick : t.price)
  return '{"topic":"publicTrade.' + ins.symbol + '","type":"snapshot","ts":' + Math.floor(t.us / 1000) + ',"data":[{"T":' + Math.floor(t.tradeUs / 1000) +
    ',"s":"' + ins.symbol + '","S":"' + (t.buyerMaker ? 'Sell' : 'Buy') + '"' + (mutation === 'missing-field' ? '' : ',"v":"' + ins.fmtQty(t.qty) + '"') +
    ',"p":' + quoted(p, mutation === 'price-number') + ',"L":"ZeroPlusTick","i":"' + uuidOf(t.id) + '","BT":false,"RPI":false,"seq":' + t.last + '}]}'
}

function bookText(d: DepthEvent, mutation: Mutation | undefined, depth: string): string {
  const ins = d.ins as BybitInstrument
  const tick = ins.spec.tick
  let bare = mutation === 'price-number'
  const levels = (m: Map<number, number>) => {
    let out = ''
    for (const [p, q] of m) {
      out += (out ? ',' : '') + '[' + quoted(ins.fmtPrice(p * tick), bare) + ',"' + ins.fmtQty(q) + '"]'
      bare = false
    }
    return '[' + out + ']'
  }
  const b = levels(d.bids)
  const a = levels(d.asks)
  const ms = Math.floor(d.us / 1000)
  return '{"topic":"orderbook.' + depth + '.' + ins.symbol + '","type":"delta","ts":' + ms + ',"data":{"s":"' + ins.symbol + '"' + (mutation === 'missing-field' ? '' : ',"b":' + b) +
    ',"a":' + a + ',"u":' + d.u + ',"seq":' + d.U + '},"cts":' + Math.floor((d.tradeUs ?? d.us) / 1000) + '}'
}

function tickerText(m: MarkPriceEvent, mutation: Mutation | undefined): string {
  const ins = m.ins as BybitInstrument
  return '{"topic":"tickers.' + ins.symbol + '","type":"delta","data":{' + (mutation === 'missing-field' ? '' : '"symbol":"' + ins.symbol + '",') +
    '"markPrice":' + quoted(ins.fmtPrice(m.mark), mutation === 'price-number') + ',"indexPrice":"' + ins.fmtPrice(m.index) + '","fundingRate":"' + rate(m.funding) +
    '","nextFundingTime":"' + m.nextFundingMs + '"},"cs":' + hash32(m.us, m.mark) + ',"ts":' + Math.floor(m.us / 1000) + '}'
}

function liquidationText(f: ForceOrderEvent, mutation: Mutation | undefined): string {
  const ins = f.ins as BybitInstrument
  return '{"topic":"allLiquidation.' + ins.symbol + '","type":"snapshot","ts":' + Math.floor(f.us / 1000) + ',"data":[{"T":' + Math.floor(f.tradeUs / 1000) +
    ',"s":"' + ins.symbol + '","S":"' + (f.sell ? 'Buy' : 'Sell') + '"' + (mutation === 'missing-field' ? '' : ',"v":"' + ins.fmtQty(f.qty) + '"') +
    ',"p":' + quoted(ins.fmtPrice(f.price), mutation === 'price-number') + '}]}'
}

/** The text of a Bybit `ev`, as Bybit writes it, or altered by `mutation`; book deltas name the depth `200` (variant 1: `1000`). */
export function bybitEventText(ev: MarketEvent, _stream: string, variant: number, mutation?: Mutation): string {
  let text: string
  switch (ev.kind) {
    case 'aggTrade': text = tradeText(ev, mutation); break
    case 'depth': text = bookText(ev, mutation, variant === 1 ? '1000' : '200'); break
    case 'markPrice': text = tickerText(ev, mutation); break
    case 'forceOrder': text = liquidationText(ev, mutation); break
    case 'bookSnapshot': text = (ev.ins as BybitInstrument).bookSnapshot(`orderbook.${variant === 1 ? '1000' : '200'}.${ev.ins.symbol}`, ev.us); break
    default: throw new Error(`Bybit has no ${ev.kind} stream`)
  }
  return mutation === 'truncated' ? text.slice(0, -1) : text
}

export function bybitInstruments(symbols: string[], seed: number): BybitInstrument[] {
  const engine = new Engine(seed)
  return symbols.map((s) => new BybitInstrument(s, seed, engine))
}

export function bybitProtocol(market: Market): Protocol {
  const connId = (session: Session) => `sim-${session.id}`
  const reply = (session: Session, reqId: unknown, op: string, success: boolean, msg: string) => session.reply(
    '{"success":' + success + ',"ret_msg":' + JSON.stringify(msg) + ',"conn_id":"' + connId(session) + '"' + (typeof reqId === 'string' ? ',"req_id":' + JSON.stringify(reqId) : '') + ',"op":"' + op + '"}')
  /** The stream a topic names, and the depth variant of a book's; or why it names none. */
  const streamOf = (topic: string): { ins: BybitInstrument; stream: string; variant: number } | string => {
    const m = /^(publicTrade|orderbook\.(\d+)|tickers|allLiquidation)\.([A-Z0-9]+)$/.exec(topic)
    const ins = m ? market.instruments.get(m[3]!) as BybitInstrument | undefined : undefined
    if (m === null || ins === undefined) return `error:handler not found,topic:${topic}`
    if (m[2] !== undefined && !SERVED_DEPTHS.includes(m[2])) return `error:the simulator serves orderbook.${SERVED_DEPTHS.join(' and orderbook.')} (its books hold at most 81 levels a side),topic:${topic}`
    const kind = m[1]!.startsWith('orderbook') ? 'orderbook' : m[1]!
    const stream = { publicTrade: ins.tradeStream, orderbook: ins.depthStream, tickers: ins.fundingStream, allLiquidation: ins.liquidationStream }[kind]!
    return { ins, stream, variant: m[2] === '1000' ? 1 : 0 }
  }
  return {
    basePath: '',
    serverPings: false,
    idleCloseMs: 600_000,
    shutdownNotice: null,
    recentTrades: 0,

    open(url) {
      return url.pathname === '/v5/public/linear' ? { route: 'linear', streams: [], variant: 0 } : '404 Not Found'
    },

    message(session, text) {
      const req = requestObject(text)
      if (req === null) return reply(session, undefined, 'unknown', false, 'error:request not json')
      const { req_id: reqId, op, args } = req
      if (op === 'ping') return reply(session, reqId, 'ping', true, 'pong')
      if (op !== 'subscribe' && op !== 'unsubscribe') return reply(session, reqId, typeof op === 'string' ? op : 'unknown', false, `error:unknown op ${String(op)}`)
      if (!Array.isArray(args) || args.length === 0 || !args.every((a) => typeof a === 'string')) return reply(session, reqId, op, false, 'error:args must be topics')
      const found = (args as string[]).map(streamOf)
      const wrong = found.find((f) => typeof f === 'string')
      if (wrong !== undefined) return reply(session, reqId, op, false, wrong as string)
      const streams = found as { ins: BybitInstrument; stream: string; variant: number }[]
      // One book depth a connection: its deltas are written in the variant of that depth.
      const depths = new Set(streams.filter((s) => s.stream.endsWith('@book')).map((s) => s.variant))
      if (op === 'subscribe' && depths.size === 1) session.setVariant([...depths][0]!)
      if (op === 'unsubscribe') session.unsubscribe(streams.map((s) => s.stream))
      else session.subscribe(streams.map((s) => s.stream))
      reply(session, reqId, op, true, '')
      if (op !== 'subscribe') return
      for (const [i, s] of streams.entries()) {
        if (s.stream === s.ins.depthStream) session.send(s.stream, s.ins.bookSnapshot((args as string[])[i]!, market.nowUs()))
        else if (s.stream === s.ins.fundingStream) session.send(s.stream, s.ins.tickerSnapshot(market.nowUs()))
      }
    },

    rest(_method, url) {
      return { status: 404, text: `{"retCode":10001,"retMsg":"the simulator serves no REST path on Bybit (${url.pathname}): books come over the websocket","result":{}}` }
    },
  }
}

/**
 * Kraken spot, WebSocket v2, in the venue simulator (docs/simulator.md, "Kraken"): the endpoint `/v2`; the
 * `trade`, `book` and `instrument` channels subscribed by request, each symbol acknowledged by itself and
 * followed by its snapshot (the last 50 trades; the whole book); prices and quantities as JSON numbers
 * without trailing zeros; RFC 3339 times with microseconds; every book message carrying the CRC32 of the top
 * ten levels a side, written at the pair's precisions; `ping` answered with `pong`; a heartbeat after a
 * second with nothing else; a status message on connecting; and a connection with no request for a minute
 * dropped. The book and the trades are Binance spot's (binance-market.ts), named `BASE/QUOTE`.
 *
 * The simulator's books are never deeper than 81 levels a side, so a subscription at depth 100, 500 or 1000
 * gets the whole book, and the levels a removal brings into a shallower book (which Kraken sends) never
 * arise; depths 10 and 25 are refused rather than served wrong.
 */
import * as zlib from 'node:zlib'
import { decimalsOf, fmtTrimmed as number } from '../binance-instruments.js'
import { Instrument, type DepthEvent, type MarketEvent, type Mutation, type Naming, type TradeEvent } from './binance-market.js'
import { requestObject, type Market, type Protocol, type Session } from './protocol.js'

export const KRAKEN_NAMING: Naming = {
  market: 'Kraken', symbol: /^[A-Z0-9]{2,10}\/[A-Z0-9]{2,10}$/, symbolRule: 'BASE/QUOTE in A-Z and 0-9',
  tradeSuffix: '@trade', depthSuffix: '@book', aggregateSuffix: null,
  specOf: (symbol) => symbol.slice(0, symbol.indexOf('/')) + 'USDT',
}

/** The quantities' precision (Kraken's `qty_precision` of most pairs). */
const QTY_PRECISION = 8
/** Levels a side the checksum covers. */
const CHECKSUM_LEVELS = 10
/** Trades in a trade snapshot ("the most recent 50 trades"). */
export const KRAKEN_TRADE_SNAPSHOT = 50
const DEPTHS = [10, 25, 100, 500, 1000]
const SERVED_DEPTHS = [100, 500, 1000]
/** Kraken's default book depth when a subscription names none. */
const DEFAULT_DEPTH = 10

export class KrakenInstrument extends Instrument {
  /** `price_precision`: the tick's decimals. */
  readonly pricePrecision: number
  constructor(symbol: string, seed: number) {
    super(symbol, seed, KRAKEN_NAMING)
    this.pricePrecision = decimalsOf(this.spec.tick)
  }

  /**
   * The book's checksum as it stands ("Book checksum (WebSocket v2)"): CRC32 of the top ten asks, low to
   * high, then the top ten bids, high to low, each price and quantity written at its precision with the point
   * and the leading zeros removed. Written here from the units, not from the texts, so that the recorder's
   * reading of the texts is checked against an independent one.
   */
  checksum(): number {
    let s = ''
    for (const side of ['asks', 'bids'] as const) {
      for (const [p, q] of this.best(side, CHECKSUM_LEVELS)) s += checksumField(p, this.pricePrecision) + checksumField(q, QTY_PRECISION)
    }
    return zlib.crc32(s) >>> 0
  }

  /** The whole book as a snapshot message. */
  bookSnapshot(): string {
    const side = (name: 'bids' | 'asks') => this.best(name, Infinity).map(([p, q]) => level(p, q, false)).join(',')
    return '{"channel":"book","type":"snapshot","data":[{"symbol":"' + this.symbol + '","bids":[' + side('bids') + '],"asks":[' + side('asks') + '],"checksum":' + this.checksum() + '}]}'
  }

  /** The `instrument` channel's entry of the pair. */
  pairText(): string {
    const [base, quote] = this.symbol.split('/')
    return '{"symbol":"' + this.symbol + '","base":"' + base + '","quote":"' + quote + '","status":"online","qty_precision":' + QTY_PRECISION +
      ',"qty_increment":0.00000001,"price_precision":' + this.pricePrecision + ',"price_increment":' + number(this.spec.tick) +
      ',"qty_min":' + number(this.spec.lot) + ',"marginable":false,"has_index":true}'
  }
}

/** A value in units of 1e-8 at `precision` decimals, as the checksum writes it: digits only, no leading zeros. */
function checksumField(units: number, precision: number): string {
  return String(units / 10 ** (8 - precision))
}

/** RFC 3339 UTC with microseconds, as Kraken writes times. */
export function krakenTime(us: number): string {
  const ms = Math.floor(us / 1000)
  return new Date(ms).toISOString().slice(0, -1) + String(us - ms * 1000).padStart(3, '0') + 'Z'
}

function level(price: number, qty: number, priceString: boolean): string {
  const p = number(price)
  return '{"price":' + (priceString ? '"' + p + '"' : p) + ',"qty":' + number(qty) + '}'
}

function tradeEntry(t: TradeEvent, mutation?: Mutation): string {
  const p = number(mutation === 'conflict' ? t.price + t.ins.spec.tick : t.price)
  return '{"symbol":"' + t.ins.symbol + '","side":"' + (t.buyerMaker ? 'sell' : 'buy') +
    '","price":' + (mutation === 'price-string' ? '"' + p + '"' : p) +
    (mutation === 'missing-field' ? '' : ',"qty":' + number(t.qty)) +
    ',"ord_type":"' + (t.id % 5 === 0 ? 'limit' : 'market') + '","trade_id":' + t.id + ',"timestamp":"' + krakenTime(t.tradeUs) + '"}'
}

function bookUpdate(d: DepthEvent, mutation?: Mutation): string {
  const ins = d.ins as KrakenInstrument
  const tick = ins.spec.tick
  let priceString = mutation === 'price-string'
  const side = (m: Map<number, number>) => {
    let out = ''
    for (const [p, q] of m) {
      out += (out ? ',' : '') + level(p * tick, q, priceString)
      priceString = false
    }
    return '[' + out + ']'
  }
  const bids = side(d.bids)
  const asks = side(d.asks)
  const sum = mutation === 'checksum' ? (ins.checksum() ^ 0x5a5a5a5a) >>> 0 : ins.checksum()
  return '{"channel":"book","type":"update","data":[{"symbol":"' + ins.symbol + '"' + (mutation === 'missing-field' ? '' : ',"bids":' + bids) +
    ',"asks":' + asks + ',"checksum":' + sum + ',"timestamp":"' + krakenTime(d.us) + '"}]}'
}

/** The text of a Kraken `ev`, as Kraken writes it, or altered by `mutation` (`checksum`: a book message's checksum that is not the book's). */
export function krakenEventText(ev: MarketEvent, _stream: string, _variant: number, mutation?: Mutation): string {
  let text: string
  if (ev.kind === 'trade') text = '{"channel":"trade","type":"update","data":[' + tradeEntry(ev, mutation) + ']}'
  else if (ev.kind === 'depth') text = bookUpdate(ev, mutation)
  else throw new Error(`Kraken has no ${ev.kind} stream`)
  return mutation === 'truncated' ? text.slice(0, -1) : text
}

export function krakenProtocol(market: Market): Protocol {
  const stamp = () => {
    const t = krakenTime(market.nowUs())
    return '"time_in":"' + t + '","time_out":"' + t + '"'
  }
  const reqId = (id: unknown) => (typeof id === 'number' && Number.isSafeInteger(id) ? ',"req_id":' + id : '')
  const error = (session: Session, message: string, method: unknown, id: unknown, symbol?: string) => {
    session.reply('{"error":' + JSON.stringify(message) + (typeof method === 'string' ? ',"method":' + JSON.stringify(method) : '') +
      ',"success":false' + (symbol === undefined ? '' : ',"symbol":' + JSON.stringify(symbol)) + ',' + stamp() + reqId(id) + '}')
  }
  const instruments = () => [...market.instruments.values()] as KrakenInstrument[]

  function dataChannel(session: Session, method: 'subscribe' | 'unsubscribe', channel: 'trade' | 'book', p: Record<string, unknown>, id: unknown): void {
    const symbols = p['symbol']
    if (!Array.isArray(symbols) || symbols.length === 0 || !symbols.every((s) => typeof s === 'string')) return error(session, 'symbol: must be a non-empty array of pairs', method, id)
    const depth = p['depth'] ?? DEFAULT_DEPTH
    if (channel === 'book') {
      if (typeof depth !== 'number' || !DEPTHS.includes(depth)) return error(session, `depth: must be one of ${DEPTHS.join(', ')}`, method, id)
      if (!SERVED_DEPTHS.includes(depth)) return error(session, `depth: the simulator serves depth ${SERVED_DEPTHS.join(', ')} (its books hold at most 81 levels a side)`, method, id)
    }
    const snapshot = p['snapshot'] !== false
    for (const symbol of symbols as string[]) {
      const ins = market.instruments.get(symbol) as KrakenInstrument | undefined
      if (ins === undefined) {
        error(session, `Currency pair not supported ${symbol}`, method, id, symbol)
        continue
      }
      const stream = channel === 'trade' ? ins.tradeStream : ins.depthStream
      if (method === 'subscribe' && session.names.has(stream)) {
        error(session, 'Already subscribed', method, id, symbol)
        continue
      }
      if (method === 'unsubscribe' && !session.names.has(stream)) {
        error(session, 'Subscription Not Found', method, id, symbol)
        continue
      }
      const result = '{"channel":"' + channel + '"' + (channel === 'book' ? ',"depth":' + depth : '') + (method === 'subscribe' ? ',"snapshot":' + snapshot : '') + ',"symbol":"' + symbol + '"}'
      if (method === 'unsubscribe') session.unsubscribe([stream])
      else session.subscribe([stream])
      session.reply('{"method":"' + method + '","result":' + result + ',"success":true,' + stamp() + reqId(id) + '}')
      if (method !== 'subscribe' || !snapshot) continue
      if (channel === 'book') session.send(stream, ins.bookSnapshot())
      else {
        const trades = market.recent(stream).map((t) => tradeEntry(t as TradeEvent)).join(',')
        session.send(stream, '{"channel":"trade","type":"snapshot","data":[' + trades + ']}')
      }
    }
  }

  return {
    basePath: '/v2',
    serverPings: false,
    idleCloseMs: 60_000,
    heartbeat: { everyUs: 1_000_000, idleOnly: true, text: () => '{"channel":"heartbeat"}' },
    shutdownNotice: null,
    recentTrades: KRAKEN_TRADE_SNAPSHOT,

    open(url) {
      return url.pathname === '/v2' ? { route: 'v2', streams: [], variant: 0 } : '404 Not Found'
    },

    opened(session) {
      session.reply('{"channel":"status","type":"update","data":[{"version":"2.0.10","system":"online","api_version":"v2","connection_id":' +
        (1_000_000_000 + Number(session.id.slice(1))) + ',"timestamp":"' + krakenTime(market.nowUs()) + '"}]}')
    },

    message(session, text) {
      if (text === null) return error(session, 'binary frames are not supported: requests are JSON text', undefined, undefined)
      const req = requestObject(text)
      if (req === null) return error(session, 'Malformed request', undefined, undefined)
      const { method, params, req_id: id } = req
      if (method === 'ping') return session.reply('{"method":"pong"' + reqId(id) + ',' + stamp() + '}')
      if (method !== 'subscribe' && method !== 'unsubscribe') return error(session, 'Method not supported', method, id)
      if (typeof params !== 'object' || params === null || Array.isArray(params)) return error(session, 'params: must be an object', method, id)
      const p = params as Record<string, unknown>
      const channel = p['channel']
      if (channel === 'trade' || channel === 'book') return dataChannel(session, method, channel, p, id)
      if (channel !== 'instrument') return error(session, `Channel not supported: ${String(channel)}`, method, id)
      const snapshot = p['snapshot'] !== false
      session.reply('{"method":"' + method + '","result":{"channel":"instrument"' + (method === 'subscribe' ? ',"snapshot":' + snapshot : '') + '},"success":true,' + stamp() + reqId(id) + '}')
      if (method === 'subscribe' && snapshot) {
        const pairs = instruments().map((ins) => ins.pairText()).join(',')
        const assets = [...new Set(instruments().flatMap((ins) => ins.symbol.split('/')))].map((a) => '{"id":"' + a + '","status":"enabled","precision":10}').join(',')
        session.reply('{"channel":"instrument","type":"snapshot","data":{"assets":[' + assets + '],"pairs":[' + pairs + ']}}')
      }
    },

    rest(_method, url) {
      return { status: 404, text: `{"error":["EGeneral:Unknown method"],"note":"the simulator serves no REST path on Kraken (${url.pathname}): its books come over the websocket"}` }
    },
  }
}

/**
 * Deribit's API v2 in the venue simulator (docs/simulator.md, "Deribit"): JSON-RPC 2.0 over one websocket at
 * `/ws/api/v2`; `public/subscribe` and `public/unsubscribe` answered with the channels, `public/set_heartbeat`
 * and `public/test`; notifications of `trades.<instrument>.<interval>` (`trade_seq` +1 an instrument),
 * `book.<instrument>.<interval>` (the whole book first, then changes chained by `prev_change_id` = the
 * previous `change_id`, levels `[new|change|delete, price, amount]`), `ticker.<instrument>.<interval>`
 * (funding fields) and `perpetual.<instrument>.<interval>` (the interest), and `platform_state`; prices and
 * amounts as JSON numbers. Once a connection sets a heartbeat, the venue sends a `test_request` every interval
 * (real seconds) and drops the connection when the previous one was not answered with `public/test`.
 * Deribit has no liquidation stream, no book checksum and no close notice.
 *
 * The instruments are perpetuals (`BTC-PERPETUAL`) on Binance USD-M's simulated engine
 * (binance-usdm-market.ts): its trades, depth ids (Deribit's change ids, not consecutive), mark prices and
 * funding rates.
 */
import { fmtTrimmed as number } from '../binance-instruments.js'
import type { DepthEvent, MarkPriceEvent, MarketEvent, Mutation, Naming, TradeEvent } from './binance-market.js'
import { SPOT_NAMING } from './binance-market.js'
import { Engine, UsdmInstrument } from './binance-usdm-market.js'
import { requestObject, type Market, type Protocol, type Session } from './protocol.js'

export const DERIBIT_NAMING: Naming = {
  ...SPOT_NAMING,
  market: 'Deribit perpetual', symbol: /^[A-Z0-9]{2,10}-PERPETUAL$/, symbolRule: 'BASE-PERPETUAL in A-Z and 0-9',
  tradeSuffix: '@trade', depthSuffix: '@book', aggregateSuffix: null,
  specOf: (symbol) => symbol.slice(0, symbol.indexOf('-')) + 'USDT',
}

/** ticker and perpetual push on every change: with each mark price here, every second. */
export const DERIBIT_FUNDING_INTERVAL_MS = 1000
/** The intervals a subscription may name; `raw` is for authorised users only, and the simulator authorises none. */
const INTERVALS = ['100ms', 'agg2']

export class DeribitInstrument extends UsdmInstrument {
  readonly tickerStream: string
  readonly perpetualStream: string
  constructor(symbol: string, seed: number, engine: Engine) {
    super(symbol, seed, engine, DERIBIT_NAMING)
    this.tickerStream = this.lower + '@ticker'
    this.perpetualStream = this.lower + '@perpetual'
  }

  /** A spot-style trade (Deribit's trades are fills, each with its own `trade_seq`), not an aggregate. */
  override tradeEvent(us: number, spacingUs: number): MarketEvent {
    return this.nextTrade(us, spacingUs)
  }

  /** The next change: the engine's update, with the levels it adds to the book marked `new`. */
  override nextDepth(us: number): DepthEvent {
    const held = new Set([...this.best('bids', Infinity), ...this.best('asks', Infinity)].map(([p]) => p / this.spec.tick))
    const ev = super.nextDepth(us)
    ev.added = new Set([...ev.bids, ...ev.asks].filter(([p, q]) => q !== 0 && !held.has(p)).map(([p]) => p))
    return ev
  }

  /** The whole book, the first notification of a subscription. */
  bookSnapshot(channel: string, us: number): string {
    const side = (name: 'bids' | 'asks') => '[' + this.best(name, Infinity).map(([p, q]) => '["new",' + number(p) + ',' + number(q) + ']').join(',') + ']'
    return notification(channel, '{"type":"snapshot","timestamp":' + Math.floor(us / 1000) + ',"instrument_name":"' + this.symbol + '","change_id":' + this.lastUpdateId +
      ',"bids":' + side('bids') + ',"asks":' + side('asks') + '}')
  }
}

function notification(channel: string, data: string): string {
  return '{"jsonrpc":"2.0","method":"subscription","params":{"channel":"' + channel + '","data":' + data + '}}'
}

/** The channel of `stream` at the interval subscribed (variant 1: agg2). */
function channelOf(kind: string, ins: DeribitInstrument, variant: number): string {
  return `${kind}.${ins.symbol}.${variant === 1 ? 'agg2' : '100ms'}`
}

const priced = (units: number, asString: boolean) => (asString ? '"' + number(units) + '"' : number(units))

function tradeText(t: TradeEvent, mutation: Mutation | undefined, variant: number): string {
  const ins = t.ins as DeribitInstrument
  const price = mutation === 'conflict' ? t.price + ins.spec.tick : t.price
  return notification(channelOf('trades', ins, variant), '[{"trade_seq":' + t.id + ',"trade_id":"' + (t.id + 300_000_000) + '","timestamp":' + Math.floor(t.tradeUs / 1000) +
    ',"tick_direction":0,"price":' + priced(price, mutation === 'price-string') + ',"mark_price":' + number(price) + ',"instrument_name":"' + ins.symbol +
    '","index_price":' + number(price) + ',"direction":"' + (t.buyerMaker ? 'sell' : 'buy') + '"' + (mutation === 'missing-field' ? '' : ',"amount":' + number(t.qty)) + '}]')
}

function bookText(d: DepthEvent, mutation: Mutation | undefined, variant: number): string {
  const ins = d.ins as DeribitInstrument
  const tick = ins.spec.tick
  let asString = mutation === 'price-string'
  const levels = (m: Map<number, number>) => {
    let out = ''
    for (const [p, q] of m) {
      const action = q === 0 ? 'delete' : d.added?.has(p) ? 'new' : 'change'
      out += (out ? ',' : '') + '["' + action + '",' + priced(p * tick, asString) + ',' + number(q) + ']'
      asString = false
    }
    return '[' + out + ']'
  }
  const bids = levels(d.bids)
  const asks = levels(d.asks)
  return notification(channelOf('book', ins, variant), '{"type":"change","timestamp":' + Math.floor(d.us / 1000) + ',"instrument_name":"' + ins.symbol +
    '","prev_change_id":' + d.pu + ',"change_id":' + d.u + (mutation === 'missing-field' ? '' : ',"bids":' + bids) + ',"asks":' + asks + '}')
}

function fundingText(m: MarkPriceEvent, stream: string, mutation: Mutation | undefined, variant: number): string {
  const ins = m.ins as DeribitInstrument
  const rate = number(m.funding)
  const ms = Math.floor(m.us / 1000)
  if (stream === ins.perpetualStream) {
    return notification(channelOf('perpetual', ins, variant), '{"timestamp":' + ms + (mutation === 'missing-field' ? '' : ',"interest":' + (mutation === 'price-string' ? '"' + rate + '"' : rate)) +
      ',"index_price":' + number(m.index) + '}')
  }
  return notification(channelOf('ticker', ins, variant), '{"timestamp":' + ms + ',"state":"open","settlement_price":' + number(m.settle) + ',"open_interest":' + number(ins.spec.lot * 1000) +
    ',"min_price":' + number(m.mark - 50 * ins.spec.tick) + ',"max_price":' + number(m.mark + 50 * ins.spec.tick) + ',"mark_price":' + priced(m.mark, mutation === 'price-string') +
    ',"last_price":' + number(m.mark) + ',"interest_value":' + rate + (mutation === 'missing-field' ? '' : ',"instrument_name":"' + ins.symbol + '"') +
    ',"index_price":' + number(m.index) + ',"funding_8h":' + rate + ',"estimated_delivery_price":' + number(m.index) + ',"current_funding":' + rate + '}')
}

/** The text of a Deribit `ev` on `stream`, as Deribit writes it, or altered by `mutation`; variant 1 names the agg2 interval. */
export function deribitEventText(ev: MarketEvent, stream: string, variant: number, mutation?: Mutation): string {
  let text: string
  switch (ev.kind) {
    case 'trade': text = tradeText(ev, mutation, variant); break
    case 'depth': text = bookText(ev, mutation, variant); break
    case 'markPrice': text = fundingText(ev, stream, mutation, variant); break
    default: throw new Error(`Deribit has no ${ev.kind} stream`)
  }
  return mutation === 'truncated' ? text.slice(0, -1) : text
}

export function deribitInstruments(symbols: string[], seed: number): DeribitInstrument[] {
  const engine = new Engine(seed)
  return symbols.map((s) => new DeribitInstrument(s, seed, engine))
}

interface Heartbeat { everyMs: number; lastMs: number; unanswered: boolean }

export function deribitProtocol(market: Market): Protocol {
  const heartbeats = new WeakMap<Session, Heartbeat>()
  const answer = (session: Session, id: unknown, result: string) => {
    const us = market.nowUs()
    session.reply('{"jsonrpc":"2.0","id":' + JSON.stringify(id ?? null) + ',"result":' + result + ',"usIn":' + us + ',"usOut":' + us + ',"usDiff":0,"testnet":false}')
  }
  const error = (session: Session, id: unknown, code: number, message: string) =>
    session.reply('{"jsonrpc":"2.0","id":' + JSON.stringify(id ?? null) + ',"error":{"code":' + code + ',"message":' + JSON.stringify(message) + '},"testnet":false}')
  /** The stream and interval variant a channel names, `platform_state`, or null. */
  const streamOf = (channel: string): { stream: string; variant: number; ins: DeribitInstrument; kind: string } | 'platform_state' | null => {
    if (channel === 'platform_state') return channel
    const m = /^(trades|book|ticker|perpetual)\.([A-Z0-9-]+)\.([a-z0-9]+)$/.exec(channel)
    const ins = m ? market.instruments.get(m[2]!) as DeribitInstrument | undefined : undefined
    if (m === null || ins === undefined || !INTERVALS.includes(m[3]!)) return null
    const stream = { trades: ins.tradeStream, book: ins.depthStream, ticker: ins.tickerStream, perpetual: ins.perpetualStream }[m[1]!]!
    return { stream, variant: m[3] === 'agg2' ? 1 : 0, ins, kind: m[1]! }
  }
  return {
    basePath: '/ws/api/v2',
    serverPings: false,
    shutdownNotice: null,
    recentTrades: 0,

    open(url) {
      return url.pathname === '/ws/api/v2' ? { route: 'v2', streams: [], variant: 0 } : '404 Not Found'
    },

    keepAlive(session, nowMs) {
      const h = heartbeats.get(session)
      if (h === undefined || nowMs - h.lastMs < h.everyMs) return undefined
      // "If your software fails to [answer a test_request], the API server will immediately close the connection."
      if (h.unanswered) return 'close'
      h.lastMs = nowMs
      h.unanswered = true
      session.reply('{"jsonrpc":"2.0","method":"heartbeat","params":{"type":"test_request"}}')
      return undefined
    },

    message(session, text) {
      const req = requestObject(text)
      if (req === null) return error(session, null, 11050, 'bad_request')
      const { id, method, params } = req
      const p = (typeof params === 'object' && params !== null ? params : {}) as Record<string, unknown>
      switch (method) {
        case 'public/set_heartbeat': {
          const interval = p['interval']
          if (typeof interval !== 'number' || interval < 10) return error(session, id, 11029, 'invalid_arguments: interval must be at least 10')
          heartbeats.set(session, { everyMs: interval * 1000, lastMs: performance.now(), unanswered: false })
          return answer(session, id, '"ok"')
        }
        case 'public/test': {
          const h = heartbeats.get(session)
          if (h) h.unanswered = false
          return answer(session, id, '{"version":"1.2.26"}')
        }
        case 'public/subscribe': case 'public/unsubscribe': {
          const channels = p['channels']
          if (!Array.isArray(channels) || !channels.every((c) => typeof c === 'string')) return error(session, id, 11029, 'invalid_arguments: channels')
          const found = (channels as string[]).map((c) => ({ channel: c, s: streamOf(c) }))
          const known = found.filter((f) => f.s !== null)
          const data = known.filter((f) => f.s !== 'platform_state') as { channel: string; s: { stream: string; variant: number; ins: DeribitInstrument; kind: string } }[]
          const variants = new Set(data.map((f) => f.s.variant))
          if (method === 'public/subscribe' && variants.size === 1) session.setVariant([...variants][0]!)
          if (method === 'public/unsubscribe') session.unsubscribe(data.map((f) => f.s.stream))
          else session.subscribe(data.map((f) => f.s.stream))
          answer(session, id, JSON.stringify(known.map((f) => f.channel)))
          if (method !== 'public/subscribe') return
          if (known.some((f) => f.s === 'platform_state')) session.reply(notification('platform_state', '{"allow_unauthenticated_public_requests":true}'))
          for (const f of data) if (f.s.kind === 'book') session.send(f.s.stream, f.s.ins.bookSnapshot(f.channel, market.nowUs()))
          return
        }
        default:
          return error(session, id, -32601, 'Method not found')
      }
    },

    rest(_method, url) {
      return { status: 404, text: `{"jsonrpc":"2.0","error":{"code":-32601,"message":"the simulator serves no REST path on Deribit (${url.pathname})"}}` }
    },
  }
}

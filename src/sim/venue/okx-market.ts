/**
 * OKX v5's public websocket in the venue simulator (docs/simulator.md, "OKX"): the endpoint `/ws/v5/public`;
 * `{"op":"subscribe","args":[{"channel":..,"instId"|"instType":..}]}` answered by an event per argument;
 * the channels `trades` (one push per taker order, `count` fills, `tradeId` the last), `books` (the
 * snapshot on subscribing, then updates chained by `prevSeqId` = the previous `seqId`, each with the book's
 * checksum), `funding-rate` and `liquidation-orders` (subscribed by instrument type: SWAP); the text `ping`
 * answered by `pong`, a connection with no message for 30 s dropped, and the `notice` (64008) before a
 * service upgrade closes a connection.
 *
 * The instruments are perpetual swaps (`BTC-USDT-SWAP`) trading on Binance USD-M's simulated engine
 * (binance-usdm-market.ts): its aggregates are OKX's taker-order pushes, its depth ids OKX's seqIds (not
 * consecutive, as OKX's are not), its funding rates and liquidations OKX's.
 *
 * OKX has deprecated the book checksum and sends 0 ("no longer to be used"); the simulator sends the
 * checksum OKX computed before (CRC32 of the top 25 bids and asks interleaved, `price:size` as sent,
 * signed), so that the recorder's check of a venue that does send one is proven; the adapter's reading of a
 * 0 is its parser tests' case.
 */
import * as zlib from 'node:zlib'
import { hash32 } from '../random.js'
import type { AggTradeEvent, DepthEvent, ForceOrderEvent, MarkPriceEvent, MarketEvent, Mutation, Naming } from './binance-market.js'
import { SPOT_NAMING } from './binance-market.js'
import { Engine, UsdmInstrument } from './binance-usdm-market.js'
import { requestObject, type Market, type Protocol, type Session } from './protocol.js'

export const OKX_NAMING: Naming = {
  ...SPOT_NAMING,
  market: 'OKX perpetual swap', symbol: /^[A-Z0-9]{2,10}-[A-Z0-9]{2,10}-SWAP$/, symbolRule: 'BASE-QUOTE-SWAP in A-Z and 0-9',
  tradeSuffix: '@trade', depthSuffix: '@book', aggregateSuffix: null,
  specOf: (symbol) => symbol.slice(0, symbol.indexOf('-')) + 'USDT',
}

/** funding-rate pushes "every 30 to 90 seconds": once a minute here. */
export const OKX_FUNDING_INTERVAL_MS = 60_000
/** liquidation-orders pushes at most one liquidation an instrument a second here. */
export const OKX_LIQUIDATION_INTERVAL_MS = 1000
const CHECKSUM_DEPTH = 25
/** The instrument type of the simulated instruments, by which liquidation-orders is subscribed. */
const INST_TYPE = 'SWAP'
const FUNDING_PERIOD_MS = 8 * 3_600_000

export class OkxInstrument extends UsdmInstrument {
  readonly fundingStream: string
  readonly liquidationStream: string
  constructor(symbol: string, seed: number, engine: Engine) {
    super(symbol, seed, engine, OKX_NAMING)
    this.fundingStream = this.lower + '@funding'
    this.liquidationStream = this.lower + '@liquidation'
  }

  /** What the engine's ids are lowered by to make this book's seqIds: 0 until a maintenance reset. */
  private seqOffset = 0

  /** A maintenance reset: the next update's seqId starts again near 10, below its prevSeqId, and the chain goes on from there. */
  restartNumbering(): void {
    this.seqOffset = this.engine.lastId - 10
  }

  override nextDepth(us: number): DepthEvent {
    const ev = super.nextDepth(us)
    ev.U -= this.seqOffset
    ev.u -= this.seqOffset
    this.lastUpdateId = ev.u
    return ev
  }

  /** The book's levels, best first, as OKX writes them: `[px, sz, "0", orders]`. */
  private side(name: 'bids' | 'asks'): string[][] {
    return this.best(name, Infinity).map(([p, q]) => [this.fmtPrice(p), this.fmtQty(q), '0', String(1 + (hash32(p, q) % 9))])
  }

  /** The legacy checksum of the book as it stands (see the header). */
  checksum(): number {
    const bids = this.side('bids')
    const asks = this.side('asks')
    const parts: string[] = []
    for (let i = 0; i < CHECKSUM_DEPTH; i++) {
      if (bids[i]) parts.push(bids[i]![0]!, bids[i]![1]!)
      if (asks[i]) parts.push(asks[i]![0]!, asks[i]![1]!)
    }
    return zlib.crc32(parts.join(':')) | 0
  }

  bookSnapshot(us: number): string {
    return '{"arg":{"channel":"books","instId":"' + this.symbol + '"},"action":"snapshot","data":[{"asks":' + JSON.stringify(this.side('asks')) +
      ',"bids":' + JSON.stringify(this.side('bids')) + ',"ts":"' + Math.floor(us / 1000) + '","checksum":' + this.checksum() + ',"prevSeqId":-1,"seqId":' + this.lastUpdateId + '}]}'
  }
}

const quoted = (s: string, bare: boolean) => (bare ? s : '"' + s + '"')

function tradeText(t: AggTradeEvent, mutation: Mutation | undefined): string {
  const ins = t.ins as OkxInstrument
  const px = ins.fmtPrice(mutation === 'conflict' ? t.price + ins.spec.tick : t.price)
  return '{"arg":{"channel":"trades","instId":"' + ins.symbol + '"},"data":[{"instId":"' + ins.symbol + '","tradeId":"' + t.last +
    '","px":' + quoted(px, mutation === 'price-number') + (mutation === 'missing-field' ? '' : ',"sz":"' + ins.fmtQty(t.qty) + '"') +
    ',"side":"' + (t.buyerMaker ? 'sell' : 'buy') + '","ts":"' + Math.floor(t.tradeUs / 1000) + '","count":"' + (t.last - t.first + 1) + '","source":"0","seqId":' + t.id + '}]}'
}

function bookText(d: DepthEvent, mutation: Mutation | undefined): string {
  const ins = d.ins as OkxInstrument
  const tick = ins.spec.tick
  let bare = mutation === 'price-number'
  const levels = (m: Map<number, number>) => {
    let out = ''
    for (const [p, q] of m) {
      out += (out ? ',' : '') + '[' + quoted(ins.fmtPrice(p * tick), bare) + ',"' + ins.fmtQty(q) + '","0","' + (q === 0 ? 0 : 1 + (hash32(p * tick, q) % 9)) + '"]'
      bare = false
    }
    return '[' + out + ']'
  }
  const bids = levels(d.bids)
  const asks = levels(d.asks)
  const sum = mutation === 'checksum' ? (ins.checksum() ^ 0x5a5a5a5a) | 0 : ins.checksum()
  return '{"arg":{"channel":"books","instId":"' + ins.symbol + '"},"action":"update","data":[{"asks":' + asks + (mutation === 'missing-field' ? '' : ',"bids":' + bids) +
    ',"ts":"' + Math.floor(d.us / 1000) + '","checksum":' + sum + ',"prevSeqId":' + d.pu + ',"seqId":' + d.u + '}]}'
}

function fundingText(m: MarkPriceEvent, mutation: Mutation | undefined): string {
  const ins = m.ins as OkxInstrument
  const rate = (m.funding < 0 ? '-' : '') + (Math.abs(m.funding) / 1e8).toFixed(8)
  return '{"arg":{"channel":"funding-rate","instId":"' + ins.symbol + '"},"data":[{"instId":"' + ins.symbol + '","instType":"SWAP"' +
    (mutation === 'missing-field' ? '' : ',"fundingRate":' + quoted(rate, mutation === 'price-number')) +
    ',"fundingTime":"' + m.nextFundingMs + '","nextFundingTime":"' + (m.nextFundingMs + FUNDING_PERIOD_MS) +
    '","method":"current_period","ts":"' + Math.floor(m.us / 1000) + '"}]}'
}

function liquidationText(f: ForceOrderEvent, mutation: Mutation | undefined): string {
  const ins = f.ins as OkxInstrument
  const px = ins.fmtPrice(f.price)
  const details = '[{"side":"' + (f.sell ? 'sell' : 'buy') + '","posSide":"' + (f.sell ? 'long' : 'short') + '","bkPx":' + quoted(px, mutation === 'price-number') +
    ',"sz":"' + ins.fmtQty(f.qty) + '","bkLoss":"0","ccy":"","ts":"' + Math.floor(f.tradeUs / 1000) + '"}]'
  return '{"arg":{"channel":"liquidation-orders","instType":"SWAP"},"data":[{"instId":"' + ins.symbol + '","instFamily":"' + ins.symbol.slice(0, -5) +
    '","instType":"SWAP","uly":"' + ins.symbol.slice(0, -5) + '"' + (mutation === 'missing-field' ? '' : ',"details":' + details) + '}]}'
}

/** The text of an OKX `ev`, as OKX writes it, or altered by `mutation`. */
export function okxEventText(ev: MarketEvent, _stream: string, _variant: number, mutation?: Mutation): string {
  let text: string
  switch (ev.kind) {
    case 'aggTrade': text = tradeText(ev, mutation); break
    case 'depth': text = bookText(ev, mutation); break
    case 'markPrice': text = fundingText(ev, mutation); break
    case 'forceOrder': text = liquidationText(ev, mutation); break
    default: throw new Error(`OKX has no ${ev.kind} stream`)
  }
  return mutation === 'truncated' ? text.slice(0, -1) : text
}

export function okxInstruments(symbols: string[], seed: number): OkxInstrument[] {
  const engine = new Engine(seed)
  return symbols.map((s) => new OkxInstrument(s, seed, engine))
}

export function okxProtocol(market: Market): Protocol {
  const connId = (session: Session) => (0x9e3779b9 ^ hash32(Number(session.id.slice(1)))).toString(16).padStart(8, '0').slice(-8)
  const event = (session: Session, body: Record<string, unknown>) => session.reply(JSON.stringify({ ...body, connId: connId(session) }))
  const streamsOf = (channel: string, arg: Record<string, unknown>): string[] | string => {
    const all = [...market.instruments.values()] as OkxInstrument[]
    if (channel === 'liquidation-orders') {
      if (arg['instType'] !== INST_TYPE) return `Wrong URL or channel:liquidation-orders,instType:${String(arg['instType'])} doesn't exist. The simulator serves SWAP.`
      return all.map((i) => i.liquidationStream)
    }
    const ins = market.instruments.get(String(arg['instId'])) as OkxInstrument | undefined
    if (ins === undefined) return `Wrong URL or channel:${channel},instId:${String(arg['instId'])} doesn't exist. Please use the correct URL, channel and parameters referring to API document.`
    switch (channel) {
      case 'trades': return [ins.tradeStream]
      case 'books': return [ins.depthStream]
      case 'funding-rate': return [ins.fundingStream]
      default: return `Wrong URL or channel:${channel} doesn't exist. The simulator serves trades, books, funding-rate and liquidation-orders.`
    }
  }
  return {
    basePath: '',
    serverPings: false,
    idleCloseMs: 30_000,
    shutdownNotice: () => '{"event":"notice","code":"64008","msg":"The connection will soon be closed for a service upgrade. Please reconnect."}',
    recentTrades: 0,

    open(url) {
      return url.pathname === '/ws/v5/public' ? { route: 'public', streams: [], variant: 0 } : '404 Not Found'
    },

    message(session, text) {
      if (text === 'ping') return session.reply('pong')
      const req = requestObject(text)
      if (req === null) return event(session, { event: 'error', code: '60012', msg: `Invalid request: ${text === null ? 'a binary frame' : text.slice(0, 100)}` })
      const { id, op, args } = req
      const withId = typeof id === 'string' ? { id } : {}
      if (op !== 'subscribe' && op !== 'unsubscribe') return event(session, { ...withId, event: 'error', code: '60012', msg: `Invalid request: ${text!.slice(0, 100)}` })
      if (!Array.isArray(args) || args.length === 0) return event(session, { ...withId, event: 'error', code: '60012', msg: 'Invalid request: args must be a non-empty array' })
      for (const arg of args as unknown[]) {
        if (typeof arg !== 'object' || arg === null || typeof (arg as Record<string, unknown>)['channel'] !== 'string') {
          event(session, { ...withId, event: 'error', code: '60012', msg: `Invalid request: ${JSON.stringify(arg)}` })
          continue
        }
        const a = arg as Record<string, unknown>
        const channel = a['channel'] as string
        const streams = streamsOf(channel, a)
        if (typeof streams === 'string') {
          event(session, { ...withId, event: 'error', code: '60018', msg: streams })
          continue
        }
        if (op === 'unsubscribe') session.unsubscribe(streams)
        else session.subscribe(streams)
        event(session, { ...withId, event: op, arg: a })
        if (op === 'subscribe' && channel === 'books') session.send(streams[0]!, (market.instruments.get(String(a['instId'])) as OkxInstrument).bookSnapshot(market.nowUs()))
      }
    },

    rest(_method, url) {
      return { status: 404, text: `{"code":"50000","msg":"the simulator serves no REST path on OKX (${url.pathname}): books come over the websocket","data":[]}` }
    },
  }
}

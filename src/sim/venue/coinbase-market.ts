/**
 * Coinbase Advanced Trade's public market-data websocket in the venue simulator (docs/simulator.md,
 * "Coinbase"): one endpoint; `{"type":"subscribe","product_ids":[..],"channel":..}`, one channel a message,
 * answered by a `subscriptions` message listing the connection's subscriptions; `level2` (messages on
 * channel `l2_data`: a snapshot on subscribing, then updates of each level's new quantity), `market_trades`
 * (the last 50 trades on subscribing, then updates) and `heartbeats` (a message every second, with its
 * counter); every message numbered by the connection's `sequence_num` (+1 a message, whatever its channel);
 * a connection that has subscribed nothing within 5 s is closed. Coinbase's books carry no checksum.
 *
 * The instruments are spot products (`BTC-USD`) with Binance spot's simulated trades and book
 * (binance-market.ts). Each message is made once and stamped with each connection's own `sequence_num`:
 * two connections get the same bytes only while their counts coincide (subscribed in one turn, nothing yet
 * sent to one alone), as two of Coinbase's own would.
 */
import { fmt8 } from '../binance-instruments.js'
import { Instrument, type DepthEvent, type MarketEvent, type Mutation, type Naming, type TradeEvent } from './binance-market.js'
import { SPOT_NAMING } from './binance-market.js'
import { requestObject, type Market, type Protocol, type Session } from './protocol.js'

export const COINBASE_NAMING: Naming = {
  ...SPOT_NAMING,
  market: 'Coinbase', symbol: /^[A-Z0-9]{2,10}-[A-Z0-9]{2,10}$/, symbolRule: 'BASE-QUOTE in A-Z and 0-9',
  tradeSuffix: '@trade', depthSuffix: '@book', aggregateSuffix: null,
  specOf: (symbol) => symbol.slice(0, symbol.indexOf('-')) + 'USDT',
}

export const COINBASE_TRADE_SNAPSHOT = 50
/** A connection that has subscribed nothing within this many real milliseconds is closed. */
const SUBSCRIBE_DEADLINE_MS = 5000
/** What each message is made with, for {@link Protocol.stamp} to number per connection. */
const UNNUMBERED = '"sequence_num":0,'

export class CoinbaseInstrument extends Instrument {
  constructor(symbol: string, seed: number) {
    super(symbol, seed, COINBASE_NAMING)
  }
}

/** RFC 3339 UTC with nanoseconds, as Coinbase writes its envelopes' times. */
function time(us: number): string {
  const ms = Math.floor(us / 1000)
  return new Date(ms).toISOString().slice(0, -1) + String(us - ms * 1000).padStart(3, '0') + '000Z'
}

function envelope(channel: string, us: number, events: string): string {
  return '{"channel":"' + channel + '","client_id":"","timestamp":"' + time(us) + '",' + UNNUMBERED + '"events":' + events + '}'
}

const quoted = (s: string, bare: boolean) => (bare ? s : '"' + s + '"')

function tradeEntry(t: TradeEvent, mutation?: Mutation): string {
  const price = fmt8(mutation === 'conflict' ? t.price + t.ins.spec.tick : t.price)
  return '{"trade_id":"' + t.id + '","product_id":"' + t.ins.symbol + '","price":' + quoted(price, mutation === 'price-number') +
    (mutation === 'missing-field' ? '' : ',"size":"' + fmt8(t.qty) + '"') + ',"side":"' + (t.buyerMaker ? 'BUY' : 'SELL') + '","time":"' + time(t.tradeUs) + '"}'
}

function level(side: 'bid' | 'offer', eventUs: number | null, price: string, qty: string, bare: boolean, missing: boolean): string {
  return '{"side":"' + side + '","event_time":"' + (eventUs === null ? '1970-01-01T00:00:00Z' : time(eventUs)) + '","price_level":' + quoted(price, bare) + (missing ? '' : ',"new_quantity":"' + qty + '"') + '}'
}

function bookUpdate(d: DepthEvent, mutation?: Mutation): string {
  const tick = d.ins.spec.tick
  let bare = mutation === 'price-number'
  const levels: string[] = []
  for (const [side, m] of [['bid', d.bids], ['offer', d.asks]] as const) {
    for (const [p, q] of m) {
      levels.push(level(side, d.us, fmt8(p * tick), fmt8(q), bare, mutation === 'missing-field'))
      bare = false
    }
  }
  return envelope('l2_data', d.us, '[{"type":"update","product_id":"' + d.ins.symbol + '","updates":[' + levels.join(',') + ']}]')
}

/** The text of a Coinbase `ev`, as Coinbase writes it (unnumbered: {@link Protocol.stamp} numbers it), or altered by `mutation`. */
export function coinbaseEventText(ev: MarketEvent, _stream: string, _variant: number, mutation?: Mutation): string {
  let text: string
  if (ev.kind === 'trade') text = envelope('market_trades', ev.us, '[{"type":"update","trades":[' + tradeEntry(ev, mutation) + ']}]')
  else if (ev.kind === 'depth') text = bookUpdate(ev, mutation)
  else throw new Error(`Coinbase has no ${ev.kind} stream`)
  return mutation === 'truncated' ? text.slice(0, -1) : text
}

interface Connection { sequence: number; heartbeats: number; openedAt: number; channels: Map<string, Set<string>> }

export function coinbaseProtocol(market: Market): Protocol {
  const state = new WeakMap<Session, Connection>()
  const of = (session: Session): Connection => {
    let c = state.get(session)
    if (c === undefined) state.set(session, (c = { sequence: 0, heartbeats: 0, openedAt: performance.now(), channels: new Map() }))
    return c
  }
  const error = (session: Session, message: string) => session.reply('{"type":"error","message":' + JSON.stringify(message) + '}')
  const subscriptions = (session: Session) => {
    const subs = [...of(session).channels].filter(([, products]) => products.size > 0).map(([ch, products]) => JSON.stringify(ch) + ':' + JSON.stringify([...products]))
    session.reply(envelope('subscriptions', market.nowUs(), '[{"subscriptions":{' + subs.join(',') + '}}]'))
  }
  return {
    basePath: '',
    serverPings: false,
    shutdownNotice: null,
    recentTrades: COINBASE_TRADE_SNAPSHOT,
    heartbeat: {
      everyUs: 1_000_000,
      idleOnly: false,
      text(session, us) {
        const c = of(session)
        if (!c.channels.get('heartbeats')?.size) return null
        return envelope('heartbeats', us, '[{"current_time":"' + new Date(Math.floor(us / 1000)).toISOString().replace('T', ' ').replace('Z', ' +0000 UTC') + '","heartbeat_counter":' + c.heartbeats++ + '}]')
      },
    },

    stamp(session, text) {
      // Errors are Coinbase Exchange's form, outside the numbered envelope.
      return text.includes(UNNUMBERED) ? text.replace(UNNUMBERED, '"sequence_num":' + of(session).sequence++ + ',') : text
    },

    open(url) {
      return url.pathname === '/' ? { route: 'market', streams: [], variant: 0 } : '404 Not Found'
    },

    opened(session) {
      of(session)
    },

    keepAlive(session, nowMs) {
      const c = of(session)
      return c.channels.size === 0 && nowMs - c.openedAt > SUBSCRIBE_DEADLINE_MS ? 'close' : undefined
    },

    message(session, text) {
      const req = requestObject(text)
      if (req === null) return error(session, 'Failed to parse the message as JSON')
      const { type, channel, product_ids: products } = req
      if (type !== 'subscribe' && type !== 'unsubscribe') return error(session, `type ${JSON.stringify(type)} is not subscribe or unsubscribe`)
      if (channel !== 'level2' && channel !== 'market_trades' && channel !== 'heartbeats') return error(session, `channel ${JSON.stringify(channel)} is not served: level2, market_trades, heartbeats`)
      const c = of(session)
      const subscribed = c.channels.get(channel) ?? new Set<string>()
      if (channel === 'heartbeats') {
        c.channels.set(channel, subscribed)
        if (type === 'subscribe') subscribed.add('heartbeats')
        else subscribed.clear()
        // The simulator sends heartbeats to a connection subscribed to something: the name stands for it.
        if (type === 'subscribe') session.subscribe(['heartbeats'])
        else session.unsubscribe(['heartbeats'])
        return subscriptions(session)
      }
      if (!Array.isArray(products) || products.length === 0 || !products.every((p) => typeof p === 'string')) return error(session, 'product_ids must be a non-empty array of products')
      const instruments = (products as string[]).map((p) => market.instruments.get(p))
      const unknown = (products as string[]).filter((_, i) => instruments[i] === undefined)
      if (unknown.length > 0) return error(session, `Failed to subscribe: unknown products ${unknown.join(', ')}`)
      c.channels.set(channel, subscribed)
      const streams = instruments.map((ins) => (channel === 'level2' ? ins!.depthStream : ins!.tradeStream))
      if (type === 'unsubscribe') {
        session.unsubscribe(streams)
        for (const p of products as string[]) subscribed.delete(p)
        return subscriptions(session)
      }
      const fresh = instruments.filter((ins) => !subscribed.has(ins!.symbol))
      session.subscribe(streams)
      for (const p of products as string[]) subscribed.add(p)
      subscriptions(session)
      const us = market.nowUs()
      for (const ins of fresh) {
        if (channel === 'level2') {
          const levels = (['bids', 'asks'] as const).flatMap((side) => ins!.best(side, Infinity).map(([p, q]) => level(side === 'bids' ? 'bid' : 'offer', null, fmt8(p), fmt8(q), false, false)))
          session.send(ins!.depthStream, envelope('l2_data', us, '[{"type":"snapshot","product_id":"' + ins!.symbol + '","updates":[' + levels.join(',') + ']}]'))
        } else {
          const trades = market.recent(ins!.tradeStream).map((t) => tradeEntry(t as TradeEvent)).join(',')
          session.send(ins!.tradeStream, envelope('market_trades', us, '[{"type":"snapshot","trades":[' + trades + ']}]'))
        }
      }
    },

    rest(_method, url) {
      return { status: 404, text: `{"error":"NOT_FOUND","message":"the simulator serves no REST path on Coinbase (${url.pathname}): books come over the websocket"}` }
    },
  }
}

/**
 * Binance's websocket and REST protocol, spot and USD-M futures alike (docs/simulator.md): streams named in
 * the URL (`/ws/<stream>`, `/stream?streams=`), the requests SUBSCRIBE, UNSUBSCRIBE, LIST_SUBSCRIPTIONS,
 * SET_PROPERTY and GET_PROPERTY with Binance's error codes, websocket pings, the `serverShutdown` event, and
 * the REST depth snapshot. What differs between spot and futures is a {@link BinanceEndpoints}.
 */
import { COMBINED, MICROSECONDS } from './binance-market.js'
import type { Market, Protocol, Session } from './protocol.js'

export interface BinanceEndpoints {
  /**
   * The endpoint a websocket path opens (`route`) and the path below it (`/ws`, `/ws/<stream>…`, `/stream`),
   * or null: refused with 404.
   */
  endpoint(pathname: string): { route: string; rest: string } | null
  /** A stream name a client may give; another is refused (400 on a URL, an error reply to a request). */
  streamWord: RegExp
  /** Whether `?timeUnit=` is read (spot); futures documents none, and ignores it. */
  timeUnit: boolean
  restPath: string
  /** The REST snapshot's `limit`: when not given, and the most levels a side it gives. */
  restLimit: { default: number; max: number }
}

export function binanceProtocol(e: BinanceEndpoints, market: Market): Protocol {
  const reply = (session: Session, body: object) => session.reply(JSON.stringify(body))
  return {
    basePath: '',
    serverPings: true,
    recentTrades: 0,
    // The one shape Binance documents for the event (WebSocket API, "Connection events"); its streams' page
    // names the event without showing it.
    shutdownNotice: (ms) => JSON.stringify({ event: { e: 'serverShutdown', E: ms } }),

    open(url) {
      const endpoint = e.endpoint(url.pathname)
      if (endpoint === null) return '404 Not Found'
      const path = endpoint.rest
      let names: string[]
      if (path === '/stream') names = (url.searchParams.get('streams') ?? '').split('/').filter(Boolean)
      else if (path === '/ws' || path.startsWith('/ws/')) names = path.slice(4).split('/').filter(Boolean)
      else return '404 Not Found'
      const unit = e.timeUnit ? url.searchParams.get('timeUnit') : null
      const micro = unit !== null && /^microsecond$/i.test(unit)
      if (unit !== null && !micro && !/^millisecond$/i.test(unit)) return '400 Bad Request'
      if (!names.every((n) => e.streamWord.test(n))) return '400 Bad Request'
      return { route: endpoint.route, streams: names, variant: (path === '/stream' ? COMBINED : 0) | (micro ? MICROSECONDS : 0) }
    },

    message(session, text) {
      if (text === null) return reply(session, { error: { code: 3, msg: 'Invalid JSON: a binary frame; requests are JSON text frames' }, id: null })
      let req: unknown
      try {
        req = JSON.parse(text)
      } catch (err) {
        return reply(session, { error: { code: 3, msg: `Invalid JSON: ${(err as Error).message}` }, id: null })
      }
      if (typeof req !== 'object' || req === null || Array.isArray(req)) return reply(session, { error: { code: 2, msg: 'Invalid request: expected an object' }, id: null })
      const { method, params, id } = req as { method?: unknown; params?: unknown; id?: unknown }
      if (!(typeof id === 'number' && Number.isSafeInteger(id) && id >= 0)) return reply(session, { error: { code: 2, msg: 'Invalid request: request ID must be an unsigned integer' }, id: null })
      const names = Array.isArray(params) && params.every((p) => typeof p === 'string') ? params as string[] : null
      switch (method) {
        case 'SUBSCRIBE': case 'UNSUBSCRIBE':
          if (names === null || !names.every((n) => e.streamWord.test(n))) return reply(session, { error: { code: 2, msg: 'Invalid request: params must be stream names' }, id })
          if (method === 'SUBSCRIBE') session.subscribe(names)
          else session.unsubscribe(names)
          return reply(session, { result: null, id })
        case 'LIST_SUBSCRIPTIONS':
          return reply(session, { result: [...session.names], id })
        case 'SET_PROPERTY':
          if (!Array.isArray(params) || params[0] !== 'combined' || typeof params[1] !== 'boolean') return reply(session, { error: { code: 2, msg: 'Invalid request: SET_PROPERTY takes ["combined", true|false]' }, id })
          session.setVariant((session.variant & ~COMBINED) | (params[1] ? COMBINED : 0))
          return reply(session, { result: null, id })
        case 'GET_PROPERTY':
          if (!Array.isArray(params) || params[0] !== 'combined') return reply(session, { error: { code: 2, msg: 'Invalid request: GET_PROPERTY takes ["combined"]' }, id })
          return reply(session, { result: (session.variant & COMBINED) !== 0, id })
        default:
          return reply(session, { error: { code: 2, msg: 'Invalid request: unknown method, expected one of SUBSCRIBE, UNSUBSCRIBE, LIST_SUBSCRIPTIONS, SET_PROPERTY, GET_PROPERTY' }, id })
      }
    },

    rest(method, url) {
      if (method !== 'GET' || url.pathname !== e.restPath) return { status: 404, text: `{"code":-1000,"msg":"The simulator serves GET ${e.restPath} only."}` }
      const symbol = url.searchParams.get('symbol')
      if (!symbol) return { status: 400, text: '{"code":-1102,"msg":"Mandatory parameter \'symbol\' was not sent, was empty/null, or malformed."}' }
      const ins = market.instruments.get(symbol)
      if (ins === undefined) return { status: 400, text: '{"code":-1121,"msg":"Invalid symbol."}' }
      const limitText = url.searchParams.get('limit') ?? String(e.restLimit.default)
      if (!/^[0-9]{1,20}$/.test(limitText)) return { status: 400, text: '{"code":-1100,"msg":"Illegal characters found in parameter \'limit\'; legal range is \'^[0-9]{1,20}$\'."}' }
      return { status: 200, text: ins.snapshot(Math.min(e.restLimit.max, Math.max(1, Number(limitText))), market.nowUs()) }
    },
  }
}

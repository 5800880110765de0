import canonicalize from 'canonicalize'
import { formatTime as nsToTime } from '../formats/record/time.js'
import { seededRandom } from './random.js'

export interface RawSampleOptions {
  /** Epoch seconds of the hour's start. */
  hourStart: number
  frames: number
  instruments?: string[]
  seed?: number
  /** Share of frames received by one replica only. */
  oneReplicaShare?: number
  /** The frames: Binance spot trades (default), or depth updates (`depthUpdate`) of `levels` price levels a side. */
  shape?: 'trades' | 'book'
  /** Price levels a side of each depth update (default 20). */
  levels?: number
  /** Whether receipts carry the clock fields (default), or none: a recorder that had no time daemon. */
  clock?: boolean
}

const NS_PER_S = 1_000_000_000n

/**
 * Deterministic Binance-spot-like trade envelopes for one hour, in frame-time order, each line RFC 8785
 * canonical and newline-terminated: what a sealed raw file of the trades channel holds. Most frames have
 * receipts from both replicas with clock estimates; a share come from one replica only.
 */
export function* rawSampleLines(opts: RawSampleOptions): Generator<string> {
  const rand = seededRandom(opts.seed ?? 1)
  const instruments = opts.instruments ?? ['BTCUSDT', 'ETHUSDT', 'SOLUSDT', 'BNBUSDT', 'XRPUSDT', 'ADAUSDT', 'DOGEUSDT', 'LTCUSDT', 'DOTUSDT', 'AVAXUSDT']
  const oneOnly = opts.oneReplicaShare ?? 0.01
  const tradeIds = instruments.map((_, i) => 1_000_000_000 + i * 7_919_000)
  const prices = instruments.map((_, i) => 100 + i * 1234.5)
  const startNs = BigInt(opts.hourStart) * NS_PER_S
  const stepNs = (3600n * NS_PER_S) / BigInt(Math.max(1, opts.frames))
  for (let n = 0; n < opts.frames; n++) {
    const k = Math.floor(rand() * instruments.length)
    tradeIds[k]!++
    prices[k] = Math.max(0.01, prices[k]! * (1 + (rand() - 0.5) * 0.001))
    const frameNs = startNs + BigInt(n) * stepNs + BigInt(Math.floor(rand() * Number(stepNs)))
    const exchangeMs = Number(frameNs / 1_000_000n) - 2 - Math.floor(rand() * 5)
    const payload = opts.shape === 'book' ? depthUpdate(instruments[k]!, exchangeMs, tradeIds, k, prices[k]!, opts.levels ?? 20, rand) : JSON.stringify({
      e: 'trade', E: exchangeMs + 1, s: instruments[k], t: tradeIds[k], p: prices[k]!.toFixed(8), q: (rand() * 2).toFixed(8), T: exchangeMs, m: rand() < 0.5, M: true,
    })
    const receipt = (replica: 'a' | 'b', delayNs: number) => {
      const at = { replica, connection: `${replica}-1`, receive_time: nsToTime(frameNs + BigInt(delayNs)) }
      if (opts.clock === false) return at
      const offset = Math.round((rand() - 0.5) * 40_000)
      return { ...at, clock_offset: offset, clock_error_bound: Math.abs(offset) + 500_000 + Math.floor(rand() * 400_000) }
    }
    const r = rand()
    const receipts = r < oneOnly / 2 ? [receipt('a', 0)] : r < oneOnly ? [receipt('b', 0)] : [receipt('a', 0), receipt('b', Math.floor(rand() * 900_000))]
    yield canonicalize({ payload, payload_encoding: 'text', exchange_time: nsToTime(BigInt(exchangeMs) * 1_000_000n), receipts })! + '\n'
  }
}

/** A Binance depth update of `levels` bids and asks around `price`; `ids[k]` is the instrument's last update id. */
function depthUpdate(symbol: string, exchangeMs: number, ids: number[], k: number, price: number, levels: number, rand: () => number): string {
  const first = ids[k]! + 1
  ids[k] = first + levels * 2
  const side = (sign: number) => Array.from({ length: levels }, (_, j) => [(price * (1 + sign * (j + 1) * 0.0001)).toFixed(8), (rand() * 5).toFixed(8)])
  return JSON.stringify({ e: 'depthUpdate', E: exchangeMs, s: symbol, U: first, u: ids[k], b: side(-1), a: side(1) })
}

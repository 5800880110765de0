/**
 * The venue simulator's fault plan: what goes wrong, when, and to which connection (docs/simulator.md,
 * "Fault plan"). One zod schema is the plan's only definition: the API, `--faults PLAN.json` and the JSON
 * Schema printed in the docs all come from it.
 */
import { z } from 'zod'

/** Venues the simulator speaks: Binance spot, Binance USD-M futures, Kraken spot (WebSocket v2), OKX (v5, perpetual swaps), Bybit (v5, linear), Deribit (API v2, perpetuals) and Coinbase (Advanced Trade). */
export const SIMULATED_VENUES = ['binance', 'binance-usdm', 'kraken', 'okx', 'bybit', 'deribit', 'coinbase'] as const
export type SimulatedVenue = (typeof SIMULATED_VENUES)[number]

/**
 * Stream names the simulator serves: spot's `<symbol>@trade`, `<symbol>@depth@100ms`, `<symbol>@depth`,
 * futures' `<symbol>@aggTrade`, `<symbol>@depth@100ms`, `<symbol>@depth`, `<symbol>@markPrice`,
 * `<symbol>@forceOrder`, Kraken's `<base>/<quote>@trade` and `<base>/<quote>@book` (its channels of one pair),
 * OKX's `<base>-<quote>-swap@trade`, `@book`, `@funding` and `@liquidation`, and Bybit's `<symbol>@trade`,
 * `@book`, `@funding` and `@liquidation`, Deribit's `<base>-perpetual@trade`, `@book`, `@ticker` and `@perpetual`, and Coinbase's `<base>-<quote>@trade`
 * and `@book`.
 */
export const STREAM_NAME = /^[a-z0-9]+([/-][a-z0-9]+)*@(trade|aggTrade|markPrice|forceOrder|depth@100ms|depth|book|funding|liquidation|ticker|perpetual)$/

const stream = z.string().regex(STREAM_NAME, 'must be a stream the simulator serves: <symbol>@trade, @depth@100ms or @depth (spot); <symbol>@aggTrade, @depth@100ms, @depth, @markPrice or @forceOrder (USD-M futures); <base>/<quote>@trade or @book (Kraken); <base>-<quote>-swap@trade, @book, @funding or @liquidation (OKX); <symbol>@trade, @book, @funding or @liquidation (Bybit); <base>-perpetual@trade, @book, @ticker or @perpetual (Deribit); <base>-<quote>@trade or @book (Coinbase); lowercase')
  .describe('the stream, as the simulator names it (btcusdt@trade, btcusdt@aggTrade, btc/usd@book)')

/** A trade stream: spot's and Kraken's trades, or futures' aggregates. */
const isTradeStream = (s: string) => s.endsWith('@trade') || s.endsWith('@aggTrade')
/** A book stream: Binance's depth updates, or Kraken's book. */
export const isBookStream = (s: string) => s.includes('@depth') || s.endsWith('@book')

/** Close codes a server may put in a close frame (RFC 6455 7.4), and 1006 for "no close frame at all". */
const closeCode = z.number().int().refine((c) => c === 1006 || (c >= 1000 && c <= 1014 && ![1004, 1005, 1006].includes(c)) || (c >= 3000 && c <= 4999),
  'must be 1006 (the connection drops without a close frame) or a close code a server may send: 1000-1003, 1007-1014, 3000-4999')

const when = {
  at: z.number().min(0).optional().describe('simulated milliseconds after the simulator started'),
  afterFrames: z.number().int().min(1).optional().describe('right after the venue made its N-th frame (all streams counted, subscribed or not)'),
}

const target = {
  replica: z.string().min(1).optional().describe('the connection labelled so (?replica=LABEL in its URL) that opened last and is still open'),
  connection: z.number().int().min(1).optional().describe('the N-th connection the simulator accepted (c1, c2, ...), if still open'),
}

const reason = z.string().max(123).default('').describe('the close frame\'s reason (at most 123 bytes)')

export const faultSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('gap').describe('the venue drops frames: their ids are skipped on every connection'),
    ...when,
    stream: stream.refine((s) => isTradeStream(s) || isBookStream(s), 'a gap skips ids: name a trade, aggTrade, depth or book stream (markPrice, forceOrder, funding and liquidation carry none)'),
    count: z.number().int().min(1).default(1).describe('frames dropped (trades, aggregates, or depth updates)'),
  }),
  z.strictObject({
    kind: z.literal('disconnect').describe('one connection is closed'),
    ...when,
    ...target,
    code: closeCode.default(1006).describe('1006: the TCP connection ends without a close frame; otherwise the close frame\'s code'),
    reason,
  }),
  z.strictObject({
    kind: z.literal('stall').describe('one connection gets no frames and no pings for a while'),
    ...when,
    ...target,
    durationMs: z.number().positive().describe('simulated milliseconds'),
    then: z.enum(['resume', 'drop', 'close']).default('resume')
      .describe('resume: the frames held back are sent, late; drop: they are never sent, later frames flow again; close: the connection is closed'),
    code: closeCode.default(1006).describe('with then: close, as for disconnect'),
    reason,
  }),
  z.strictObject({
    kind: z.literal('only-one').describe('the next frame of the stream goes to one connection only'),
    ...when,
    ...target,
    stream,
  }),
  z.strictObject({
    kind: z.literal('conflict').describe('one connection gets a second trade (or aggregate) with the same id and another price'),
    ...when,
    ...target,
    stream: stream.refine(isTradeStream, 'a conflict is a trade: name a <symbol>@trade or <symbol>@aggTrade stream'),
    replace: z.boolean().default(false).describe('true: the connection gets only the altered trade, in place of the true one'),
  }),
  z.strictObject({
    kind: z.literal('unrepresentable').describe('the next frame of the stream breaks the venue\'s documented structure'),
    ...when,
    ...target,
    stream,
    variant: z.enum(['price-number', 'price-string', 'missing-field', 'truncated']).default('price-number')
      .describe('price-number: a price as a JSON number (Binance, whose prices are strings); price-string: a price as a JSON string (Kraken, whose prices are numbers); missing-field: a trade or aggregate without its quantity, a depth update or book message without its bids, a markPriceUpdate without p, a forceOrder without o.q; truncated: the last byte cut (not JSON)'),
  }),
  z.strictObject({
    kind: z.literal('checksum').describe('the next message of the book stream carries a checksum that is not the book\'s (venues whose books carry one: Kraken)'),
    ...when,
    ...target,
    stream: stream.refine(isBookStream, 'a checksum is a book\'s: name a book stream'),
  }),
  z.strictObject({
    kind: z.literal('restart').describe('the venue\'s book service restarts and numbers the book afresh (Bybit: a new snapshot with u = 1 to every subscriber; OKX: the next update\'s seqId below its prevSeqId)'),
    ...when,
    stream: stream.refine(isBookStream, 'a restart is a book\'s: name a book stream'),
  }),
  z.strictObject({
    kind: z.literal('scheduled-disconnect').describe('the 24-hour disconnect, now: close code 1001, empty reason'),
    ...when,
    ...target,
  }),
  z.strictObject({
    kind: z.literal('server-shutdown').describe('the venue announces a server shutdown (a serverShutdown event), then closes the connection'),
    ...when,
    ...target,
    closeAfterMs: z.number().min(0).default(600_000).describe('simulated milliseconds from the notice to the close (code 1001, empty reason)'),
  }),
]).superRefine((f, ctx) => {
  if ((f.at === undefined) === (f.afterFrames === undefined)) ctx.addIssue({ code: 'custom', message: 'give exactly one of at and afterFrames', path: ['at'] })
  if (f.kind === 'gap' || f.kind === 'restart') return
  const targets = (f.replica === undefined ? 0 : 1) + (f.connection === undefined ? 0 : 1)
  const optional = f.kind === 'unrepresentable' || f.kind === 'checksum' || f.kind === 'scheduled-disconnect' || f.kind === 'server-shutdown'
  if (targets > 1 || (targets === 0 && !optional)) {
    ctx.addIssue({ code: 'custom', message: optional ? 'give at most one of replica and connection (none: every connection)' : 'give exactly one of replica and connection', path: ['replica'] })
  }
})

export const faultPlanSchema = z.strictObject({
  faults: z.array(faultSchema).describe('in any order; faults due at the same moment apply in this order'),
})

export type Fault = z.infer<typeof faultSchema>
export type FaultPlan = z.infer<typeof faultPlanSchema>
/** A plan as written (defaults not yet filled in). */
export type FaultPlanInput = z.input<typeof faultPlanSchema>

/** Validates a plan; throws a RangeError naming the first bad field (`faults[2].durationMs: ...`). */
export function parseFaultPlan(input: unknown): FaultPlan {
  const result = faultPlanSchema.safeParse(input)
  if (result.success) return result.data
  const issue = result.error.issues[0]!
  const path = issue.path.map((p, i) => typeof p === 'number' ? `[${p}]` : (i === 0 ? '' : '.') + String(p)).join('')
  throw new RangeError(`${path || 'the plan'}: ${issue.message}`)
}

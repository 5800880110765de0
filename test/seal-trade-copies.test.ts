import { randomUUID } from 'node:crypto'
import t from 'tap'
import { TradeCopies } from '../src/formats/record/seal/trade-copies.js'
import type { TableRow } from '../src/formats/record/types.js'
import { seededRandom } from '../src/sim/random.js'

const row = (instrument: string, tradeId: string | null, price: string, extra: Partial<TableRow> = {}): TableRow => ({
  raw_index: 0, instrument, trade_id: tradeId, side: 'buy', price, size: '1', exchange_time: 1_700_000_000_000_000_000n, receive_time: 0n, ...extra,
})

t.test('the candidates are exactly the trades some line states differently, with all their lines', async (t) => {
  const rand = seededRandom(7)
  const uuids = Array.from({ length: 300 }, () => randomUUID())
  for (let round = 0; round < 10; round++) {
    const copies = new TradeCopies()
    // The model: every (instrument, trade id)'s lines and whether any row states it otherwise than its first.
    const byTrade = new Map<string, { lines: number[]; first: string; differs: boolean }>()
    let next = 1000
    for (let line = 0; line < 4000; line++) {
      const rows: TableRow[] = []
      for (let k = 1 + Math.floor(rand() * 3); k > 0; k--) {
        const instrument = rand() < 0.5 ? 'BTCUSDT' : 'ETHUSDT'
        const r = rand()
        const id = r < 0.6 ? String(next++) : r < 0.85 ? String(next - 1 - Math.floor(rand() * 40)) : uuids[Math.floor(rand() * uuids.length)]!
        const d = rand()
        // Mostly the same statement again; sometimes another price, size, side or time.
        const extra: Partial<TableRow> = d < 0.97 ? {} : d < 0.98 ? { size: '2' } : d < 0.99 ? { side: 'sell' } : { exchange_time: 1_700_000_000_000_000_001n }
        rows.push(row(instrument, id, d < 0.965 ? `${Number(id.length > 20 ? 7 : id) % 97}.5` : '0.25', extra))
      }
      if (rand() < 0.01) rows.push(row('BTCUSDT', null, '1'))
      for (const x of rows) {
        copies.add(x, line)
        if (x.trade_id === null) continue
        const key = `${x.instrument} ${x.trade_id}`
        const said = `${x.side} ${x.price} ${x.size} ${x.exchange_time}`
        let m = byTrade.get(key)
        if (!m) byTrade.set(key, (m = { lines: [], first: said, differs: false }))
        if (m.lines.at(-1) !== line) m.lines.push(line)
        if (said !== m.first) m.differs = true
      }
    }
    const conflicting = [...byTrade].filter(([, m]) => m.differs)
    const got = copies.candidates()
    t.ok(conflicting.length > 0, `round ${round}: ${conflicting.length} trades conflict`)
    t.same(new Set(got.trades.map(([i, id]) => `${i} ${id}`)), new Set(conflicting.map(([k]) => k)), `round ${round}: the trades`)
    t.same(got.lines, [...new Set(conflicting.flatMap(([, m]) => m.lines))].sort((x, y) => x - y), `round ${round}: their lines`)
  }
})

t.test('copies that agree are no candidate; one line stating a trade twice, otherwise, is one for the read-back to judge', async (t) => {
  const copies = new TradeCopies()
  for (let line = 0; line < 50_000; line++) {
    copies.add(row('BTC-USD', String(line >> 1), String(line >> 1)), line)
    copies.add(row('BTC-USD', randomUUID(), '1'), line)
  }
  t.same(copies.candidates(), { lines: [], trades: [] })
  copies.add(row('ETH-USD', '5', '1'), 60_000)
  copies.add(row('ETH-USD', '5', '2'), 60_000)
  t.same(copies.candidates(), { lines: [60_000], trades: [['ETH-USD', '5']] }, 'its line, once (the sealer reads a line\'s trade once: no conflict)')
  copies.add(row('ETH-USD', '5', '2'), 60_001)
  t.same(copies.candidates(), { lines: [60_000, 60_001], trades: [['ETH-USD', '5']] }, 'the next line that differs is read back with it')
})

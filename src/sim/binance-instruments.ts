/** Binance spot instruments as the simulators make them: amounts in units of 1e-8, as Binance writes 8 decimals. */

export interface InstrumentSpec { price: number; tick: number; lot: number }

/** Starting prices, ticks and lots of the symbols the simulators know, in units of 1e-8. */
export const BINANCE_INSTRUMENTS: Readonly<Record<string, InstrumentSpec>> = {
  BTCUSDT: { price: 6_123_456_000_000, tick: 1_000_000, lot: 1_000 },
  ETHUSDT: { price: 234_567_000_000, tick: 1_000_000, lot: 10_000 },
  SOLUSDT: { price: 14_523_000_000, tick: 1_000_000, lot: 100_000 },
  BNBUSDT: { price: 56_780_000_000, tick: 1_000_000, lot: 100_000 },
  XRPUSDT: { price: 52_340_000, tick: 10_000, lot: 10_000_000 },
}

/** Text of an amount in units of 1e-8 with 8 decimals, as Binance writes it. */
export function fmt8(units: number): string {
  const i = Math.floor(units / 1e8)
  return i + '.' + String(units - i * 1e8 + 1e8).slice(1)
}

/** Text of an amount in units of 1e-8 without trailing zeros, as venues that send JSON numbers write it (`45285.2`, `0.001`, `12`). */
export function fmtTrimmed(units: number): string {
  return (units < 0 ? '-' : '') + fmt8(Math.abs(units)).replace(/0+$/, '').replace(/\.$/, '')
}

/** Decimals an amount in units of 1e-8 needs: a tick of 1,000,000 (0.01) needs 2. */
export function decimalsOf(units: number): number {
  let d = 8
  while (d > 0 && units % 10 === 0) {
    units /= 10
    d--
  }
  return d
}

/**
 * One depth update's changes to one side of a book (`side` 0: bids below `mid`, 1: asks above it): one to
 * three levels within `span` ticks of the mid set to a new size in lots, or removed; each change noted in
 * `changed` (0: removed). Draws from `rand` in a fixed order, so a seed makes the same book.
 */
export function moveBookSide(levels: Map<number, number>, changed: Map<number, number>, side: 0 | 1, mid: number, span: number, lot: number, rand: () => number): void {
  const n = 1 + Math.floor(rand() * 3)
  for (let j = 0; j < n; j++) {
    const x = rand()
    const off = 1 + Math.floor(x * x * span)
    const p = side === 0 ? mid - off : mid + off
    const size = rand() < 0.15 ? 0 : lot * (1 + Math.floor(rand() * 3000))
    if (size === 0) levels.delete(p)
    else levels.set(p, size)
    changed.set(p, size)
  }
}

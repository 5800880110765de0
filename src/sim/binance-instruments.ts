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

/**
 * Items that travel between stages can tell how many logical items and bytes they hold, so that a batch
 * of 2,000 lines counts as 2,000 lines in the metrics while crossing the stream as one object.
 */
export interface Measured {
  readonly itemCount: number
  readonly byteCount: number
}

function isMeasured(x: unknown): x is Measured {
  return typeof x === 'object' && x !== null && typeof (x as Measured).itemCount === 'number' && typeof (x as Measured).byteCount === 'number'
}

export function measure(chunk: unknown): { items: number; bytes: number } {
  if (chunk instanceof Uint8Array) return { items: 1, bytes: chunk.byteLength }
  if (isMeasured(chunk)) return { items: chunk.itemCount, bytes: chunk.byteCount }
  if (typeof chunk === 'string') return { items: 1, bytes: Buffer.byteLength(chunk) }
  return { items: 1, bytes: 0 }
}

/** The item types stages declare. `any` matches everything; the runner refuses other mismatches. */
export type ItemType = 'none' | 'bytes' | 'lines' | 'envelopes' | 'any'

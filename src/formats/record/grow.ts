type Growable = Int32Array | Uint32Array | Uint8Array | Float64Array

/** A copy of `a` in a longer array of its kind (`length` elements, the rest zero): for flat tables that grow. */
export function grown<T extends Growable>(a: T, length: number): T {
  const b = new (a.constructor as new (length: number) => T)(length)
  b.set(a)
  return b
}

/**
 * Parquet's RLE / bit-packed hybrid (levels and dictionary indexes), written as hyparquet-writer's
 * `writeRleBitPackedHybrid` writes it, byte for byte: a run of 8 or more equal values is an RLE run, and
 * anything else is packed in groups of 8 from where the run stopped, the groups between two runs under one
 * header. The parts' bytes depend on these choices, so they are the library's; what differs is that this
 * writes into the page's buffer directly, where the library made a call and a bounds check a byte (a
 * twentieth of the part writer's time on a million patterns).
 */

/** What is written into: hyparquet-writer's ByteWriter, of which this needs its buffer and cursor. */
export interface HybridTarget {
  buffer: ArrayBuffer
  index: number
  offset: number
  ensure(size: number): void
}

type Values = Uint8Array | Int32Array | Uint32Array

/** Writes `values` (each below 2^bitWidth) as the hybrid; returns the bytes written. */
export function writeRleHybrid(w: HybridTarget, values: Values, bitWidth: number): number {
  const n = values.length
  const valueBytes = (bitWidth + 7) >> 3
  // At most: every 8 values a header of up to 5 bytes and the larger of a group's bitWidth bytes and a run's value.
  w.ensure((Math.ceil(n / 8) + 1) * (5 + Math.max(bitWidth, valueBytes)))
  const out = new Uint8Array(w.buffer)
  const start = w.index
  let at = start
  let pendingGroups = 0
  let packedStart = 0
  let i = 0
  while (i < n) {
    const first = values[i]!
    let run = 1
    while (i + run < n && values[i + run] === first) run++
    if (run >= 8) {
      if (pendingGroups > 0) {
        at = packGroups(out, at, values, packedStart, pendingGroups, bitWidth)
        pendingGroups = 0
      }
      at = varInt(out, at, run << 1)
      for (let j = 0; j < valueBytes; j++) out[at++] = (first >> (j << 3)) & 0xff
      i += run
    } else {
      if (pendingGroups === 0) packedStart = i
      pendingGroups++
      i += 8
    }
  }
  if (pendingGroups > 0) at = packGroups(out, at, values, packedStart, pendingGroups, bitWidth)
  w.offset += at - start
  w.index = at
  return at - start
}

function varInt(out: Uint8Array, at: number, value: number): number {
  while ((value & ~0x7f) !== 0) {
    out[at++] = (value & 0x7f) | 0x80
    value >>>= 7
  }
  out[at++] = value
  return at
}

/** `groups` groups of 8 values from `start`, little-endian bit order, values past the end as 0. */
function packGroups(out: Uint8Array, at: number, values: Values, start: number, groups: number, bitWidth: number): number {
  at = varInt(out, at, (groups << 1) | 1)
  if (bitWidth === 0) return at
  const mask = (1 << bitWidth) - 1
  const n = values.length
  const end = start + groups * 8
  let buffer = 0
  let bits = 0
  for (let i = start; i < end; i++) {
    buffer |= (i < n ? values[i]! & mask : 0) << bits
    bits += bitWidth
    while (bits >= 8) {
      out[at++] = buffer & 0xff
      buffer >>>= 8
      bits -= 8
    }
  }
  if (bits > 0) out[at++] = buffer & 0xff
  return at
}

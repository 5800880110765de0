/** Seeded mutations for the fuzz tests. */

/**
 * Bytes changed one of four ways, chosen and placed by `random`: a bit flipped (among the low `bits`), a
 * cut, a byte replaced by one of `strays` (never by itself), or a JSON member inserted.
 */
export function mutateBytes(bytes: Buffer, random: () => number, opts: { bits: number; strays: readonly number[] }): { how: string; bytes: Buffer } {
  const at = Math.floor(random() * bytes.length)
  switch (Math.floor(random() * 4)) {
    case 0: {
      const out = Buffer.from(bytes)
      out[at] = out[at]! ^ (1 << Math.floor(random() * opts.bits))
      return { how: `bit flipped at ${at}`, bytes: out }
    }
    case 1:
      return { how: `cut to ${at} bytes`, bytes: bytes.subarray(0, at) }
    case 2: {
      const out = Buffer.from(bytes)
      const stray = opts.strays.find((b) => b !== out[at])!
      out[at] = stray
      return { how: `byte ${stray} at ${at}`, bytes: out }
    }
    default:
      return { how: `a member inserted at ${at}`, bytes: Buffer.concat([bytes.subarray(0, at), Buffer.from('"x":1,'), bytes.subarray(at)]) }
  }
}

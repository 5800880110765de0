/**
 * The RLE / bit-packed hybrid writer (src/formats/pack/tables/rle-hybrid.ts) writes exactly the bytes
 * hyparquet-writer's `writeRleBitPackedHybrid` writes, which the parts' bytes (and the golden packs) were
 * made with: runs shorter and longer than 8, groups cut by the end, every bit width up to the dictionary's,
 * a full buffer that must grow, and what hyparquet reads back.
 */
import t from 'tap'
import { writeRleHybrid } from '../src/formats/pack/tables/rle-hybrid.js'
import { ByteWriter } from 'hyparquet-writer'
import { writeRleBitPackedHybrid } from 'hyparquet-writer/src/encoding.js'
import { readRleBitPackedHybrid } from 'hyparquet/src/encoding.js'


/** A seeded generator (mulberry32), so that a failure is repeatable. */
function random(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 2 ** 32
  }
}

/** Values in runs: each run's length from 1 to `maxRun`, its value below 2^bitWidth. */
function runs(next: () => number, count: number, bitWidth: number, maxRun: number): Uint32Array {
  const out = new Uint32Array(count)
  for (let i = 0; i < count; ) {
    const v = Math.floor(next() * 2 ** bitWidth)
    const len = 1 + Math.floor(next() * maxRun)
    for (let j = 0; j < len && i < count; j++) out[i++] = v
  }
  return out
}

/** Ours and the library's bytes for `values`, after one byte already written; `returned`: what ours said it wrote, less that byte's -1 when its cursor and total disagree. */
function both(values: Uint8Array | Uint32Array, bitWidth: number, initial = 1024): { ours: Uint8Array; theirs: Uint8Array; returned: number } {
  const a = new ByteWriter(initial)
  a.appendUint8(0xaa) // something before, as a page's other bytes are
  const returned = writeRleHybrid(a, values, bitWidth)
  const b = new ByteWriter(initial)
  b.appendUint8(0xaa)
  writeRleBitPackedHybrid(b, values, bitWidth)
  return { ours: a.getBytes(), theirs: b.getBytes(), returned: a.offset === a.index ? returned : -1 }
}

t.test('the library\'s bytes for random runs at every bit width', async (t) => {
  const next = random(20261203)
  let cases = 0
  for (let bitWidth = 0; bitWidth <= 20; bitWidth++) {
    for (const maxRun of [1, 3, 7, 8, 9, 40, 2000]) {
      for (const count of [0, 1, 7, 8, 9, 15, 16, 17, 100, 1000, 16_384]) {
        const values = bitWidth === 0 ? new Uint32Array(count) : runs(next, count, bitWidth, maxRun)
        const { ours, theirs, returned } = both(values, bitWidth)
        if (Buffer.compare(ours, theirs) !== 0) t.fail(`bitWidth ${bitWidth}, maxRun ${maxRun}, count ${count}: bytes differ`)
        if (returned !== ours.length - 1) t.fail(`bitWidth ${bitWidth}, count ${count}: returned ${returned}, wrote ${ours.length - 1}`)
        cases++
      }
    }
  }
  t.equal(cases, 21 * 7 * 11)
})

t.test('levels as Uint8Array, all defined, all null and alternating', async (t) => {
  for (const values of [new Uint8Array(16_384).fill(1), new Uint8Array(16_384), Uint8Array.from({ length: 1001 }, (_, i) => i & 1)]) {
    const { ours, theirs } = both(values, 1)
    t.same(ours, theirs)
  }
})

t.test('a buffer too small for the output grows, keeping what was before', async (t) => {
  const values = runs(random(7), 5000, 13, 2)
  const { ours, theirs } = both(values, 13, 4)
  t.same(ours, theirs)
  t.equal(ours[0], 0xaa)
})

t.test('hyparquet reads the values back', async (t) => {
  const values = runs(random(11), 3000, 9, 12)
  const w = new ByteWriter(16)
  writeRleHybrid(w, values, 9)
  const bytes = w.getBytes()
  const out = new Array<number>(values.length)
  readRleBitPackedHybrid({ view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset: 0 }, 9, out, bytes.length)
  t.same(out, [...values])
})

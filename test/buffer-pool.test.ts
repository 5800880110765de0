import t from 'tap'
import { BufferPool } from '../src/core/buffer-pool.js'
import { RawLineWriter } from '../src/formats/record/seal/raw-writer.js'

t.test('a pool hands back what it was given, up to its limit and only of its size', async (t) => {
  const pool = new BufferPool(16, 2)
  const a = pool.take()
  const b = pool.take()
  const c = pool.take()
  t.equal(a.byteLength, 16)
  t.not(a, b, 'an empty pool makes a new buffer each time')
  pool.give(a)
  pool.give(b)
  pool.give(c) // over the limit: left to the GC
  pool.give(new ArrayBuffer(32)) // another size: never kept
  const again = [pool.take(), pool.take()]
  t.same(new Set(again), new Set([a, b]), 'the two kept buffers come back')
  const fresh = pool.take()
  t.ok(fresh !== a && fresh !== b && fresh !== c && fresh.byteLength === 16, 'then new ones')
})

t.test("the raw line writer fills a chunk's buffer again once it is given back, but not an oversized one", async (t) => {
  const chunks: Buffer[] = []
  const writer = new RawLineWriter((chunk) => chunks.push(chunk), 256)
  const tail = Buffer.from('"x":1}\n')
  while (chunks.length < 1) writer.write(null, tail)
  const first = chunks[0]!.buffer as ArrayBuffer
  t.equal(first.byteLength, 256, 'a chunk is the pool size')
  writer.reuse(first) // the second chunk is already being filled, in a new buffer
  while (chunks.length < 3) writer.write(null, tail)
  t.not(chunks[1]!.buffer, first)
  t.equal(chunks[2]!.buffer, first, 'the chunk after it is written into the buffer given back')

  writer.write(null, Buffer.alloc(1000, 0x20)) // longer than a chunk: a buffer of its own
  writer.end()
  const oversized = chunks.at(-1)!.buffer as ArrayBuffer
  t.ok(oversized.byteLength >= 1000 && chunks.at(-1)!.includes(0x20), 'the long line is whole in one chunk')
  writer.reuse(oversized)
  writer.write(null, tail)
  writer.end()
  t.not(chunks.at(-1)!.buffer, oversized, 'an oversized buffer is not kept')
  t.equal(chunks.at(-1)!.buffer.byteLength, 256)
})

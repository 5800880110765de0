import t from 'tap'
import { PassThrough } from 'node:stream'
import { FindingSink, type Finding } from '../src/core/findings.js'
import { seededRandom } from '../src/sim/random.js'
import { splitLines, type LineBatch } from '../src/codec/lines.js'

async function split(chunks: Buffer[], maxLineBytes = 1000) {
  const found: Finding[] = []
  const sink = new FindingSink({ json: false, out: new PassThrough(), textLimit: 0 })
  sink.add = (f) => { found.push(f) }
  const lines: { no: number; offset: number; text: string }[] = []
  let items = 0
  for await (const batch of splitLines({ maxLineBytes, requireFinalNewline: true }, sink)(chunks as AsyncIterable<Uint8Array> & Buffer[])) {
    const b = batch as LineBatch
    items += b.itemCount
    for (let i = 0; i < b.count; i++) lines.push({ no: b.firstLine + i, offset: b.baseOffset + b.starts[i]!, text: b.line(i).toString() })
  }
  return { lines, found, items }
}

function chunked(data: Buffer, rand: () => number): Buffer[] {
  const out: Buffer[] = []
  for (let pos = 0; pos < data.length;) {
    const n = 1 + Math.floor(rand() * 300)
    out.push(data.subarray(pos, pos + n))
    pos += n
  }
  return out
}

t.test('lines, numbers and offsets do not depend on how the bytes are chunked', async (t) => {
  const rand = seededRandom(42)
  for (let round = 0; round < 50; round++) {
    const texts = Array.from({ length: 1 + Math.floor(rand() * 40) }, () => 'x'.repeat(Math.floor(rand() * 120)))
    const data = Buffer.from(texts.map((s) => s + '\n').join(''))
    const expected: { no: number; offset: number; text: string }[] = []
    let offset = 0
    texts.forEach((text, i) => { expected.push({ no: i + 1, offset, text }); offset += text.length + 1 })
    const { lines, found } = await split(chunked(data, rand))
    t.same(lines, expected, `round ${round}`)
    t.same(found, [])
  }
})

t.test('a line over the cap is reported and skipped, wherever the chunks break it', async (t) => {
  const rand = seededRandom(7)
  const data = Buffer.from(`short\n${'y'.repeat(5000)}\nafter\n`)
  for (let round = 0; round < 20; round++) {
    const { lines, found, items } = await split(chunked(data, rand), 100)
    t.same(lines.map((l) => [l.no, l.text]), [[1, 'short'], [3, 'after']])
    t.equal(items, 3, 'the skipped line still counts as a line')
    t.same(found.map((f) => [f.line, f.code]), [[2, 'raw.line-too-long']])
  }
})

t.test('a line over the cap at the very end still counts', async (t) => {
  const { found, items } = await split([Buffer.from('a\n' + 'z'.repeat(500))], 100)
  t.same(found.map((f) => [f.line, f.code]), [[2, 'raw.line-too-long']])
  t.equal(items, 2)
})

t.test('a last line without its newline is still a line, and a finding', async (t) => {
  const { lines, found } = await split([Buffer.from('a\nb')])
  t.same(lines.map((l) => l.text), ['a', 'b'])
  t.same(found.map((f) => [f.line, f.code]), [[2, 'raw.line-unterminated']])
})

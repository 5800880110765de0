import t from 'tap'
import canonicalize from 'canonicalize'
import { checkEnvelope, newEnvelopeResult } from '../src/formats/record/envelope.js'
import type { MergedFrame } from '../src/formats/record/merge.js'
import { envelopeLine } from '../src/formats/record/seal/raw-writer.js'
import { seededRandom } from '../src/sim/random.js'

t.test('every written envelope is canonical and passes the envelope rule', async (t) => {
  const rand = seededRandom(5)
  const result = newEnvelopeResult()
  const odd = ['é', '😀', '\u2028', '\u0000', '\u001f', '"', '\\', '/', '\u007f', '\ue000', 'plain']
  let allCanonical = true
  let allValid = true
  for (let i = 0; i < 2000; i++) {
    const text = Array.from({ length: 1 + Math.floor(rand() * 8) }, () => odd[Math.floor(rand() * odd.length)]).join('')
    const binary = rand() < 0.2
    const receipts: MergedFrame['receipts'] = []
    for (const replica of ['a', 'b'] as const) {
      if (rand() < 0.3) continue
      const offset = BigInt(Math.floor((rand() - 0.5) * 1e6))
      receipts.push({ replica, connection: `${replica}-${i % 3}"x`, receiveTime: 1_759_500_000_000_000_000n + BigInt(i), ...(rand() < 0.8 ? { clockOffset: offset, clockErrorBound: (offset < 0n ? -offset : offset) + 17n } : {}) })
    }
    if (receipts.length === 0) receipts.push({ replica: 'a', connection: 'c', receiveTime: 5n })
    const frame: MergedFrame = { payload: binary ? Uint8Array.from([0, 255, i & 255]) : Buffer.from(text), binary, receipts, frameTime: 0n }
    const line = envelopeLine(frame, rand() < 0.5 ? 1_759_499_999_000_000_000n : null)
    if (canonicalize(JSON.parse(line)) !== line) allCanonical = false
    const bytes = Buffer.from(line)
    checkEnvelope(bytes, 0, bytes.length, result, { strict: true })
    if (result.findingCount !== 0) { allValid = false; t.comment(line, result.codes.slice(0, result.findingCount)) }
  }
  t.ok(allCanonical, 'canonicalize(JSON.parse(line)) === line')
  t.ok(allValid, 'no envelope finding, even under --strict')
})

t.test('a text frame that is not UTF-8 is kept byte for byte as base64', async (t) => {
  const doc = JSON.parse(envelopeLine({ payload: Uint8Array.from([0xc3, 0x28]), binary: false, frameTime: 0n, receipts: [{ replica: 'b', connection: 'c', receiveTime: 0n }] }, null))
  t.equal(doc.payload_encoding, 'base64')
  t.same([...Buffer.from(doc.payload, 'base64')], [0xc3, 0x28])
})

t.test('a binary frame is base64 even when its bytes are text; a text frame is verbatim', async (t) => {
  const receipts = [{ replica: 'a' as const, connection: 'c', receiveTime: 0n }]
  const bytes = Buffer.from('{"e":"trade"}')
  const binary = JSON.parse(envelopeLine({ payload: bytes, binary: true, frameTime: 0n, receipts }, null))
  t.equal(binary.payload_encoding, 'base64')
  t.equal(binary.payload, bytes.toString('base64'))
  const text = JSON.parse(envelopeLine({ payload: bytes, binary: false, frameTime: 0n, receipts }, null))
  t.equal(text.payload_encoding, 'text')
  t.equal(text.payload, '{"e":"trade"}')
})

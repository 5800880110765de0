/**
 * Rows as bytes (src/formats/pack/tables/row-bytes.ts): rows hash alike exactly when their RFC 8785 texts are the
 * same; a batch knows each row's text length in UTF-16 units; dropping a row leaves the batch as before.
 */
import t from 'tap'
import { RowBatchBuilder, RowHashBytes } from '../src/formats/pack/tables/row-bytes.js'
import { ALL_SCHEMAS, sampleRows } from './pack-parquet-fixtures.js'
import { canonicalRowText, rowValidator } from '../src/formats/pack/tables/table-schemas.js'

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex')

t.test('the same bytes exactly when the same text, zeros of either sign and int64 of either type', async (t) => {
  for (const s of ALL_SCHEMAS) {
    const bytes = new RowHashBytes(s)
    const rows = sampleRows(s)
    const byText = new Map<string, string>()
    for (const r of rows) {
      const b = hex(bytes.of(r))
      const text = canonicalRowText(s, r)
      if (byText.has(text)) t.equal(byText.get(text), b, `${s.name}: a repeated row`)
      byText.set(text, b)
    }
    t.equal(new Set(byText.values()).size, byText.size, `${s.name}: ${byText.size} different rows, ${byText.size} different byte strings`)
    const flipped = rows.map((r) => JSON.parse(JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? Number(v) : v)), (_, v) => (v === 0 ? -0 : v)) as object)
    for (const [i, r] of flipped.entries()) {
      if (Object.values(rows[i]!).some((v) => typeof v === 'bigint' && !Number.isSafeInteger(Number(v)))) continue
      t.equal(hex(bytes.of(r)), hex(bytes.of(rows[i]!)), `${s.name} row ${i}: every zero -0 and every int64 a number, the same bytes`)
    }
  }
})

t.test('a batch: each row\'s UTF-16 text length and -0, its bytes, and its first sort column as text', async (t) => {
  for (const s of ALL_SCHEMAS) {
    const measure = rowValidator(s)
    const batch = new RowBatchBuilder(s, { keys: true, initialBytes: 64 })
    const hashed = new RowHashBytes(s)
    const rows = sampleRows(s)
    const own: string[] = []
    for (const r of rows) {
      const added = batch.add(r, measure(r, 0, []))
      t.equal(added.textUnits, canonicalRowText(s, r).length, `${s.name}: text length in UTF-16 units`)
      t.equal(added.negativeZero, JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? 0 : Object.is(v, -0) ? '-0!' : v)).includes('"-0!"'), `${s.name}: -0 seen`)
      if (!added.negativeZero) own.push(hex(hashed.of(r)))
    }
    const taken = batch.take().batch
    t.equal(taken.rows, rows.length)
    const inBatch = Array.from({ length: taken.rows }, (_, r) => hex(taken.bytes.subarray(r === 0 ? 0 : taken.ends[r - 1]!, taken.ends[r]!)))
    t.same(inBatch.filter((_, r) => !JSON.stringify(rows[r], (_, v) => (typeof v === 'bigint' ? 0 : Object.is(v, -0) ? '-0!' : v)).includes('"-0!"')), own, `${s.name}: a row without -0 has the bytes it is hashed by`)
    t.same(taken.keys, rows.map((r) => String((r as Record<string, unknown>)[s.sortColumns[0]!])), `${s.name}: each row's first sort column as text`)
    t.equal(batch.take().batch.rows, 0, 'the next batch starts empty')
  }
})

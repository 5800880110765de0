/**
 * Reading records files (src/formats/pack/publish/publish-records.ts): the patterns shape parser gives exactly
 * what JSON.parse (local paths scrubbed) gives, or leaves the line to it; and a file read with the parser
 * gives the same records and the same refusals, on the same lines, as one read without it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { eachRecord, MAX_RECORD_LINE_BYTES, PatternRecordParser } from '../src/formats/pack/publish/publish-records.js'
import { READ_LIMITS } from '../src/formats/pack/tables/parquet-limits.js'
import { scrubRecordPaths, type Row } from '../src/formats/pack/publish/publish-rows.js'
import { LIFE, patternRecord } from '../src/sim/pack-records.js'

const base = await mkdtemp(join(tmpdir(), 'pack-publish-records-'))
t.teardown(() => rm(base, { recursive: true, force: true }))

const GLIDER = patternRecord('square', LIFE, [[1, 0], [2, 1], [0, 2], [1, 2], [2, 2]], { speed: 'c/4 diagonal' })
const BLOCK = patternRecord('square', LIFE, [[0, 0], [1, 0], [0, 1], [1, 1]])
const LINES = [JSON.stringify(GLIDER), JSON.stringify(BLOCK)]

/** The record without the members it has no value for: the parser's object names every member. */
const defined = (r: Row): Row => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined))

/** What the general path makes of a line: the record, or undefined when JSON.parse refuses it or it is no object. */
function general(text: string): Row | undefined {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch {
    return undefined
  }
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? scrubRecordPaths(v as Row, text) : undefined
}

/** Parses a line with a fresh parser and with one that read other lines first (its strings are reused). */
function fast(text: string): (Row | undefined)[] {
  const bytes = Buffer.from(text)
  const warm = new PatternRecordParser()
  for (const l of LINES) warm.parse(Buffer.from(l), 0, l.length)
  return [new PatternRecordParser().parse(bytes, 0, bytes.length), warm.parse(bytes, 0, bytes.length)]
}

function same(t: Test, text: string, expectTaken?: boolean): void {
  const want = general(text)
  for (const got of fast(text)) {
    if (expectTaken !== undefined) t.equal(got !== undefined, expectTaken, `${expectTaken ? 'taken' : 'left to JSON.parse'}: ${text}`)
    if (got === undefined) continue
    t.ok(want !== undefined, `JSON.parse reads what the parser took: ${text.slice(0, 120)}`)
    t.same(defined(got), want, `as JSON.parse reads it: ${text.slice(0, 120)}`)
  }
}

t.test('records of the common shape are taken, and read as JSON.parse reads them', async (t) => {
  for (const l of LINES) same(t, l, true)
  same(t, JSON.stringify({ ...GLIDER, rule: 'B3/S23', gun: 'x1', speed: 'c/2' }), true)
  same(t, JSON.stringify({ phases: [[]], dx: -12, dy: 123456789 }), true)
  same(t, JSON.stringify({ pin_key: 'square', phases: [[{ i: 0, j: 0, k: 0, s: 1 }], []] }), true)
  same(t, JSON.stringify({ model: 5, class: null, phases: 'x' }), true)
  same(t, '{"speed":"see /home/someone/notes.txt"}', true)
  same(t, '{"speed":"~/x"}', true)
  same(t, LINES[0]!.replace('"phases":[', '"phases":[[],'), true)
})

t.test('anything else is left to JSON.parse', async (t) => {
  const g = LINES[0]!
  const cases = [
    g.replace('"square"', '"squ\\u0061re"'), g.replace('"c/4 diagonal"', '"c/4\\/diagonal"'), g.replace('"square"', '"squäre"'), g.replace('"square"', '"sq\tuare"'),
    g.replace('{"pin_key"', '{ "pin_key"'), g.replace('"model":', '"model" :'), g.replace('"model":', '"model": '), `${g} `, ` ${g}`, g.replace('}]]', '} ]]'),
    g.replace('"dx":1', '"dx":1e0'), g.replace('"dx":1', '"dx":1.0'), g.replace('"dx":1', '"dx":1E0'), g.replace('"dx":1', '"dx":-0'), g.replace('"dx":1', '"dx":01'),
    g.replace('"dx":1', '"dx":1234567890'), g.replace('"dx":1', '"dx":2147483648'), g.replace('"dx":1', '"dx":-2147483649'), g.replace('"dx":1', '"dx":true'),
    g.replace('{"pin_key"', '{"id":"abc","pin_key"'), g.replace('{"pin_key"', '{"colour":"red","pin_key"'), g.replace('{"pin_key"', '{"__proto__":{},"pin_key"'),
    g.replace('{"pin_key":"square",', '{"pin_key":"hex","pin_key":"square",'), g.replace('"dy":', '"dy":2,"dy":'),
    g.replace('"site":null', '"site":{"tiles":[[[[1]]]]}'), g.replace('"gun":null', '"gun":[[[[[[1]]]]]]'), g.replace('"gun":null', '"gun":{"a":{"b":{"c":[1]}}}'),
    g.replace('{"i":1,"j":0,"k":0,"s":1}', '{"j":0,"i":1,"k":0,"s":1}'), g.replace('{"i":1,"j":0,"k":0,"s":1}', '{"i":1,"j":0,"k":0,"s":1,"t":2}'),
    g.replace('{"i":1,"j":0,"k":0,"s":1}', '{"i":1,"j":0,"k":0}'), g.replace('{"i":1,"j":0,"k":0,"s":1}', '[1,0,0,1]'),
    g.replace('"phases":', '"phases":[') + ']', '{}', '[]', '"x"', '', g.slice(0, -1), g.slice(0, 40), `${g}\r`, g.replace('"model"', '"mod\rel"'),
    g.replace('"speed":"c/4 diagonal"', '"speed":nul'), g.replace('"speed":"c/4 diagonal"', '"speed":nulll'), g.replace('"speed":"c/4 diagonal"', '"speed":false'),
  ]
  t.ok(cases.every((c) => c !== g), 'every case changes the record')
  for (const c of cases) same(t, c, false)
})

t.test('random edits: whatever the parser takes, JSON.parse reads the same', async (t) => {
  let seed = 7
  const random = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
    return (seed >>> 8) % n
  }
  const pieces = ['"', ',', ':', '{', '}', '[', ']', '-', '0', '1', '9', '.', 'e', ' ', '\\', 'null', '"i"', '"s":', '"rule":', '"id":', 'ä', '/', '~', '\t']
  let taken = 0
  let checked = 0
  for (let n = 0; n < 4000; n++) {
    let text = LINES[n % 2]!
    for (let edits = 1 + random(3); edits > 0; edits--) {
      const at = random(text.length + 1)
      const op = random(3)
      if (op === 0) text = text.slice(0, at) + pieces[random(pieces.length)] + text.slice(at)
      else if (op === 1) text = text.slice(0, at) + text.slice(at + 1 + random(4))
      else text = text.slice(0, at) + pieces[random(pieces.length)] + text.slice(at + 1)
    }
    const want = general(text)
    for (const got of fast(text)) {
      if (got === undefined) continue
      taken++
      if (want === undefined || !sameRecord(defined(got), want)) t.fail(`the parser took a line JSON.parse reads otherwise: ${text}`)
      checked++
    }
  }
  t.ok(taken > 100, `the parser took ${taken} edited lines, each as JSON.parse reads it`)
  t.equal(checked, taken)
})

/** `bytes` seen through a proxy that keeps the highest index read (its methods still run on the bytes). */
function watched(bytes: Buffer): { bytes: Buffer; highest: () => number } {
  let highest = -1
  const proxy = new Proxy(bytes, {
    get(target, key) {
      if (typeof key === 'string' && /^\d+$/.test(key)) highest = Math.max(highest, Number(key))
      const v = Reflect.get(target, key) as unknown
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
    },
  })
  return { bytes: proxy, highest: () => highest }
}

t.test('every read stays within the line, though the bytes after it would complete the record', async (t) => {
  // A line cut anywhere (after a member name, mid-integer, mid-null, mid-cell), in a buffer whose next bytes are the rest of the record.
  const line = JSON.stringify({ ...GLIDER, dx: -12, dy: 123, speed: null })
  const before = 'x\n'
  const bytes = Buffer.from(before + line)
  // One parser that read the whole line first: its strings and member order are the record's.
  const warm = new PatternRecordParser()
  t.ok(warm.parse(Buffer.from(line), 0, line.length), 'the line is of the common shape')
  let within = true
  let taken = 0
  for (let cut = 0; cut <= line.length; cut++) {
    const start = before.length
    const end = start + cut
    for (const parser of [new PatternRecordParser(), warm]) {
      const seen = watched(bytes)
      const got = parser.parse(seen.bytes, start, end)
      if (got !== undefined) taken++
      if (seen.highest() >= end || (got === undefined) !== (cut < line.length)) {
        within = false
        t.fail(`cut at ${cut} (${line.slice(Math.max(0, cut - 12), cut)}|): read up to ${seen.highest() - start}, ${got === undefined ? 'left' : 'taken'}`)
      }
    }
  }
  t.ok(within, 'no read at or past the line\'s end, and only the whole line is taken')
  t.equal(taken, 2, 'the whole line, by both parsers')
})

/** Deep equality, members in any order. */
function sameRecord(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b)
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && sameRecord((a as Row)[k], (b as Row)[k]))
}

t.test('a file read with the parser gives the same records and refusals on the same lines', async (t) => {
  const g = LINES[0]!
  const texts = [
    `${g}\n${LINES[1]}\n`, `${g}\r\n${LINES[1]}\r${g}`, `${g}\n\n${g}\n`, `${g}\r\n\r\n${g}`, `${g}\r`, `${g}\n\r`, `${g}\r\r\n${g}\n`,
    `${g}\n${g.replace('"dx":1', '"dx":1.5')}\n`, `${g}\n${g.slice(0, 30)}\n${g}\n`, `${g}\n[]\n`, `\uFEFF${g}\n`, `${g}\n${g.replace('"square"', '"squ\\u0061re"')}`,
    // Lines longer than a read chunk (1 MiB), one ending with \r\n across chunks.
    `${g}\n${g.replace('"c/4 diagonal"', `"${'x'.repeat(3 << 20)}"`)}\r\n${g.replace('"c/4 diagonal"', `"${'ä'.repeat(1 << 20)}"`)}\n${g}`,
  ]
  let n = 0
  for (const text of texts) {
    const file = `p${n++}.jsonl`
    await writeFile(join(base, file), text)
    const read = async (shape: boolean) => {
      const out: { line: number; record: Row }[] = []
      const error = await eachRecord(base, file, async (record, at) => { out.push({ line: at.line, record: defined(record) }) }, shape ? new PatternRecordParser().parse : undefined)
        .then(() => undefined, (e: { code?: string; location?: unknown; message?: string }) => ({ code: e.code, location: e.location, message: e.message }))
      return { out, error }
    }
    const [withShape, without] = [await read(true), await read(false)]
    t.ok(sameRecord(withShape, without), `the same records and refusal: ${JSON.stringify(text.slice(0, 60))}`)
  }
})

t.test('a line longer than the cap is refused at its line before it is gathered, ended or not', async (t) => {
  const g = LINES[0]!
  const long = 'x'.repeat(MAX_RECORD_LINE_BYTES + 1)
  for (const [name, text] of [['unended', `${g}\n${g}\n${long}`], ['ended', `${g}\n${g}\n${long}\n${g}\n`]] as const) {
    const file = `long-${name}.jsonl`
    await writeFile(join(base, file), text)
    const lines: number[] = []
    const error = await eachRecord(base, file, async (_, at) => { lines.push(at.line) }, new PatternRecordParser().parse)
      .then(() => undefined, (e: { code?: string; location?: { line?: number }; message?: string }) => e)
    t.same(lines, [1, 2], `${name}: the lines before it are read`)
    t.equal(error?.code, 'pack.record-invalid', name)
    t.equal(error?.location?.line, 3, `${name}: the long line's number`)
    t.match(error?.message, /longer than 64 MiB/)
    await rm(join(base, file))
  }
  await writeFile(join(base, 'at-cap.jsonl'), `${g}\n${'x'.repeat(MAX_RECORD_LINE_BYTES)}\n`)
  const error = await eachRecord(base, 'at-cap.jsonl', async () => {}).then(() => undefined, (e: { message?: string }) => e)
  t.match(error?.message, /not JSON/, 'a line of exactly the cap is read (and refused only as what it holds)')
  await rm(join(base, 'at-cap.jsonl'))
})

t.test('a record of more list elements than a reader builds a row from is refused at its line; one at the bound is read', async (t) => {
  const bound = READ_LIMITS.rowListItems
  const cells = (n: number) => Array.from({ length: n }, (_, i) => ({ i, j: 0, k: 0, s: 1 }))
  // A pattern's phases (the parser's shape): the outer list and its one phase's cells; and any record (JSON.parse's).
  const pattern = (elements: number) => JSON.stringify({ ...GLIDER, phases: [cells(elements - 1)] })
  const zeros = (elements: number) => JSON.stringify({ zeros: new Array(elements).fill(0) })
  const small = Buffer.from(pattern(3))
  t.ok(new PatternRecordParser().parse(small, 0, small.length), 'the pattern lines are the parser\'s shape')
  for (const [name, make] of [['pattern', pattern], ['any record', zeros]] as const) {
    const file = `elements-${name}.jsonl`
    await writeFile(join(base, file), `${LINES[0]}\n${make(bound)}\n${make(bound + 1)}\n`)
    const lines: number[] = []
    const error = await eachRecord(base, file, async (_, at) => { lines.push(at.line) }, new PatternRecordParser().parse)
      .then(() => undefined, (e: { code?: string; location?: { line?: number }; message?: string }) => e)
    t.same(lines, [1, 2], `${name}: the record at the bound is read`)
    t.match(error, { code: 'pack.record-invalid', location: { line: 3 }, message: new RegExp(`holds ${bound + 1} list elements, more than the ${bound}`) }, `${name}: one more is refused at its line`)
    await rm(join(base, file))
  }
})

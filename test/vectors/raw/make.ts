/**
 * Writes the conformance vectors of `pipe run verify-raw` (record format v1, "Raw file" and checks 3 and 7):
 * one folder per case, `<case>/` for inputs that pass and `<case>_fail/` for inputs that fail, each with
 * the input (`input.jsonl.zst`, or `input.jsonl` where the case is about plain input), `expected.json` and a
 * one-line `README`; and `hashes.txt`, the SHA-256 of every file written, in `sha256sum` format.
 *
 *   npx tsx test/vectors/raw/make.ts          write the vectors (refuses to change a file that exists)
 *   npx tsx test/vectors/raw/make.ts --check  regenerate in memory and compare with the files on disk
 *
 * Deterministic: fixed times, fixed payloads, no randomness, and zstd frames from a pinned zstd-napi at
 * fixed parameters (or written block by block here, where the case is about the frame's structure).
 * Golden data is never rewritten: a changed case is a new case.
 *
 * Every failing case starts from the same valid three-line file (`valid`) and changes one thing, so that
 * each case fails on its own rule. `expected.json` holds the exact set of (line, code) findings.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import canonicalize from 'canonicalize'
import { createBLAKE3 } from 'hash-wasm'
import { Compressor } from 'zstd-napi'
import { rawSampleLines } from '../../../src/sim/raw-sample.js'

/** Nine-digit RFC 3339 UTC (the record format's one encoding of an instant), written here so that the
 * vectors do not depend on the code under test. */
function nsToTime(ns: bigint): string {
  const sec = ns / 1_000_000_000n - (ns % 1_000_000_000n < 0n ? 1n : 0n)
  const frac = ns - sec * 1_000_000_000n
  return new Date(Number(sec) * 1000).toISOString().slice(0, 19) + '.' + frac.toString().padStart(9, '0') + 'Z'
}

export const HOUR = '2026-10-03T14'
const HOUR_START_S = Date.UTC(2026, 9, 3, 14) / 1000
const HOUR_START_NS = BigInt(HOUR_START_S) * 1_000_000_000n
const MS = 1_000_000n
const S = 1_000_000_000n

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }
type Obj = { [k: string]: Json }

export interface Expected {
  exit: number
  args: string[]
  findings?: { line: number | null; code: string }[]
  /** The `lines` member of the JSON summary (lines in the file), where the run completes. */
  lines?: number
  /** For cases the decoder refuses: the error's code. */
  error?: string
}

interface Case {
  name: string
  /** Plain input (written as input.jsonl) or compressed bytes (input.jsonl.zst). */
  input: { plain: Buffer } | { zst: Buffer }
  expected: Expected
  readme: string
}

// ---------------------------------------------------------------------------------------------------
// Envelopes

/** `14:00:0{n}.123456789` plus `extraNs`: frame n (1-based) of the base file. */
function frameNs(n: number, extraNs = 0n): bigint {
  return HOUR_START_NS + BigInt(n) * S + 123_456_789n + extraNs
}

const SYMBOLS = ['BTCUSDT', 'ADAUSDT', 'ETHUSDT', 'SOLUSDT']

function tradePayload(n: number, symbol = SYMBOLS[(n - 1) % SYMBOLS.length]!): string {
  const ms = Number(frameNs(n) / MS) - 3
  return JSON.stringify({ e: 'trade', E: ms + 1, s: symbol, t: 4_000_000 + n, p: `${60000 + n}.12000000`, q: '0.00150000', T: ms, m: n % 2 === 0, M: true })
}

function receipt(replica: string, ns: bigint, clock: { offset: number; bound: number } | null): Obj {
  const r: Obj = { replica, connection: `${replica}-1`, receive_time: nsToTime(ns) }
  if (clock) {
    r.clock_offset = clock.offset
    r.clock_error_bound = clock.bound
  }
  return r
}

/** Frame n of the base file: a trade received by both replicas, a first, b 250 µs later. */
function envelope(n: number): Obj {
  const t = frameNs(n)
  return {
    payload: tradePayload(n),
    payload_encoding: 'text',
    exchange_time: nsToTime(t - 3n * MS - 123_456_789n % MS),
    receipts: [receipt('a', t, { offset: -1200 * n, bound: 480_000 + n }), receipt('b', t + 250_000n, { offset: 3100 + n, bound: 610_000 + n })],
  }
}

function line(obj: Json): string {
  const s = canonicalize(obj)
  if (s === undefined) throw new Error('not serializable')
  return s + '\n'
}

function baseLines(count = 3): string[] {
  return Array.from({ length: count }, (_, i) => line(envelope(i + 1)))
}

/** The base file with line `n` (1-based) built from a changed envelope. */
function withEnvelope(n: number, change: (e: Obj) => void, count = 3): string[] {
  const lines = baseLines(count)
  const e = envelope(n)
  change(e)
  lines[n - 1] = line(e)
  return lines
}

/** Replaces `from` (which must occur) in a line's text; for byte-level changes canonicalize cannot make. */
function replaceOnce(text: string, from: string, to: string): string {
  const i = text.indexOf(from)
  if (i < 0) throw new Error(`make: "${from}" not found in ${text}`)
  return text.slice(0, i) + to + text.slice(i + from.length)
}

function editLine(lines: string[], n: number, edit: (text: string) => string): string[] {
  const out = [...lines]
  out[n - 1] = edit(out[n - 1]!)
  return out
}

const bytes = (lines: (string | Buffer)[]): Buffer => Buffer.concat(lines.map((l) => (typeof l === 'string' ? Buffer.from(l, 'utf8') : l)))

/** Line 2's text split around `marker`, with raw bytes spliced in its place (for invalid UTF-8). */
function spliceBytes(lines: string[], n: number, marker: string, raw: number[]): Buffer {
  const text = lines[n - 1]!
  const i = text.indexOf(marker)
  if (i < 0) throw new Error(`make: marker ${marker} not found`)
  const spliced = Buffer.concat([Buffer.from(text.slice(0, i), 'utf8'), Buffer.from(raw), Buffer.from(text.slice(i + marker.length), 'utf8')])
  return bytes(lines.map((l, j) => (j === n - 1 ? spliced : l)))
}

// ---------------------------------------------------------------------------------------------------
// zstd

/** A real zstd frame: level 19, with the content checksum, from the pinned zstd-napi. */
function zstd(data: Buffer): Buffer {
  const c = new Compressor()
  c.setParameters({ compressionLevel: 19, checksumFlag: true })
  return c.compress(data)
}

const MAGIC = [0x28, 0xb5, 0x2f, 0xfd]

function blockHeader(last: boolean, type: 0 | 1 | 2 | 3, size: number): number[] {
  const v = (last ? 1 : 0) | (type << 1) | (size << 3)
  return [v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff]
}

/**
 * A zstd frame written by hand (RFC 8878): a window descriptor of 2^windowLog bytes, no content size, no
 * checksum, then `blocks`. Lets a case control exactly what the decoder sees.
 */
function handFrame(windowLog: number, blocks: number[][]): Buffer {
  const fhd = 0x00 // no content size, not single-segment, no checksum, no dictionary
  const windowDescriptor = (windowLog - 10) << 3
  return Buffer.from([...MAGIC, fhd, windowDescriptor, ...blocks.flat()])
}

function rawBlocks(data: Buffer, blockSize = 1 << 17): number[][] {
  const blocks: number[][] = []
  for (let off = 0; off < data.length || blocks.length === 0; off += blockSize) {
    const part = data.subarray(off, off + blockSize)
    blocks.push([...blockHeader(off + blockSize >= data.length, 0, part.length), ...part])
  }
  return blocks
}

async function blake3Hex(data: Buffer): Promise<string> {
  const h = await createBLAKE3()
  h.init()
  h.update(data)
  return h.digest('hex')
}

// ---------------------------------------------------------------------------------------------------
// Cases

const H = ['--hour', HOUR]
const rows = (n: number) => ['--rows', String(n)]
type F = { line: number | null; code: string }
const f = (line: number | null, code: string): F => ({ line, code })

export async function buildCases(): Promise<Case[]> {
  const cases: Case[] = []
  const valid = baseLines()
  const validBytes = bytes(valid)
  const validZst = zstd(validBytes)

  const pass = (name: string, data: Buffer, args: string[], lines: number, readme: string, plain = false) =>
    cases.push({ name, input: plain ? { plain: data } : { zst: zstd(data) }, expected: { exit: 0, args, findings: [], lines }, readme })
  const fail = (name: string, data: Buffer, args: string[], findings: F[], lines: number, readme: string, plain = false) =>
    cases.push({ name: `${name}_fail`, input: plain ? { plain: data } : { zst: zstd(data) }, expected: { exit: 1, args, findings, lines }, readme })
  const error = (name: string, input: Case['input'], args: string[], exit: number, code: string, readme: string) =>
    cases.push({ name: `${name}_fail`, input, expected: { exit, args, error: code }, readme })
  /** Fails on line 2 only: the base file with line 2's envelope changed. */
  const failEnv = (name: string, code: string, change: (e: Obj) => void, readme: string, args: string[] = []) =>
    fail(name, bytes(withEnvelope(2, change)), [...H, ...rows(3), ...args], [f(2, code)], 3, readme)
  /** Fails on line 2 only: line 2's canonical text edited. */
  const failText = (name: string, code: string, edit: (text: string) => string, readme: string) =>
    fail(name, bytes(editLine(valid, 2, edit)), [...H, ...rows(3)], [f(2, code)], 3, readme)

  // --- passing ---
  pass('valid', validBytes, [...H, ...rows(3)], 3, 'passes: three canonical envelopes in frame-time order within the hour, zstd-compressed')
  pass('valid-plain', validBytes, [...H, ...rows(3)], 3, 'passes: the valid file uncompressed (plain input is detected by the missing zstd magic)', true)
  const sample = [...rawSampleLines({ hourStart: HOUR_START_S, frames: 40, seed: 11, oneReplicaShare: 0.2 })]
  pass('valid-sample', bytes(sample), [...H, ...rows(40)], 40, 'passes: 40 lines from the simulator (src/sim/raw-sample.ts), some from one replica only')
  pass('empty', Buffer.alloc(0), [...H, ...rows(0)], 0, 'passes: an hour with no frames has an empty raw file, here one zstd frame of empty content, with --rows 0')
  pass('empty-plain', Buffer.alloc(0), [...H, ...rows(0)], 0, 'passes: zero bytes of plain input is an empty raw file, with --rows 0', true)
  cases.push({
    name: 'blake3-match',
    input: { zst: validZst },
    expected: { exit: 0, args: [...H, ...rows(3), '--blake3', await blake3Hex(validZst)], findings: [], lines: 3 },
    readme: 'passes: --blake3 is the BLAKE3 of the compressed file as stored (what b3sum prints)',
  })
  const unknown = withEnvelope(1, (e) => { e.note = 'venue said hi' })
  const unknownBoth = editLine(unknown, 3, () => line({ ...envelope(3), receipts: [{ ...receipt('a', frameNs(3), { offset: -3600, bound: 480_003 }), host: 'rec-a-7' }, receipt('b', frameNs(3, 250_000n), { offset: 3103, bound: 610_003 })] }))
  pass('unknown-fields', bytes(unknownBoth), [...H, ...rows(3)], 3, 'passes: an unknown envelope field (line 1) and an unknown receipt field (line 3) are ignored without --strict')
  fail('unknown-fields', bytes(unknownBoth), [...H, ...rows(3), '--strict'], [f(1, 'raw.unknown-field'), f(3, 'raw.unknown-field')], 3, 'fails with --strict: line 1 has an unknown envelope field, line 3 an unknown receipt field')
  pass('base64-payload', bytes(withEnvelope(2, (e) => { e.payload = Buffer.from([0x00, 0x01, 0x02, 0xff, 0xfe, 0x80, 0x7f]).toString('base64'); e.payload_encoding = 'base64' })), [...H, ...rows(3)], 3, 'passes: line 2 is a binary frame, payload_encoding base64 with valid padded base64')
  pass('receipts-unbounded', bytes(withEnvelope(2, (e) => { e.receipts = [receipt('a', frameNs(2), null), receipt('b', frameNs(2, 250_000n), null)] })), [...H, ...rows(3)], 3, 'passes: on line 2 neither receipt carries clock_offset or clock_error_bound (both absent is allowed)')
  pass('clock-bound-equals-offset', bytes(withEnvelope(2, (e) => { e.receipts = [receipt('a', frameNs(2), { offset: 123456, bound: 123456 }), receipt('b', frameNs(2, 250_000n), { offset: -7, bound: 7 })] })), [...H, ...rows(3)], 3, 'passes: clock_error_bound equal to abs(clock_offset), for a positive and a negative offset (check 7 says at least)')
  pass('clock-zero', bytes(withEnvelope(2, (e) => { e.receipts = [receipt('a', frameNs(2), { offset: 0, bound: 0 })] })), [...H, ...rows(3)], 3, 'passes: clock_offset 0 and clock_error_bound 0 (non-negative, at least abs(offset))')
  pass('number-max-safe', bytes(withEnvelope(2, (e) => { e.receipts = [receipt('a', frameNs(2), { offset: -9007199254740991, bound: 9007199254740991 }), receipt('b', frameNs(2, 250_000n), { offset: 9007199254740991, bound: 9007199254740991 })] })), [...H, ...rows(3)], 3, 'passes: 9007199254740991 and -9007199254740991 (plus and minus 2^53-1) are the largest integers allowed')
  pass('hour-edges', bytes([
    line({ ...envelope(1), receipts: [receipt('a', HOUR_START_NS, { offset: 5, bound: 500 })] }),
    line(envelope(2)),
    line({ ...envelope(3), receipts: [receipt('b', HOUR_START_NS + 3600n * S - 1n, { offset: 5, bound: 500 })] }),
  ]), [...H, ...rows(3)], 3, 'passes: frame times exactly at the hour start (14:00:00.000000000) and 1 ns before its end (14:59:59.999999999)')
  pass('frame-time-bounded-receipt', bytes([
    line({ ...envelope(1), receipts: [receipt('a', frameNs(1), { offset: 10, bound: 400_000 }), receipt('b', HOUR_START_NS - 500n * MS, null)] }),
    line({ ...envelope(2), receipts: [receipt('a', frameNs(2), { offset: 10, bound: 400_000 }), receipt('b', frameNs(1, -1000n), null)] }),
    line(envelope(3)),
  ]), [...H, ...rows(3)], 3, 'passes: the frame time is the earliest receive_time among receipts with clock_error_bound; the earlier unbounded receipts (before the hour on line 1, before line 1 on line 2) do not count')
  pass('frame-times-equal', bytes([line(envelope(1)), line({ ...envelope(2), receipts: (envelope(1).receipts as Obj[]) }), line(envelope(3))]), [...H, ...rows(3)], 3, 'passes: lines 1 and 2 have the same frame time (frame times never decrease; equal is allowed)')
  pass('single-receipt', bytes(withEnvelope(2, (e) => { e.receipts = [receipt('b', frameNs(2), { offset: 1, bound: 2 })] })), [...H, ...rows(3)], 3, 'passes: line 2 was received by replica b only (one receipt)')
  pass('exchange-time-absent', bytes(withEnvelope(2, (e) => { delete e.exchange_time })), [...H, ...rows(3)], 3, 'passes: exchange_time is optional and line 2 has none')
  pass('payload-unicode', bytes(withEnvelope(2, (e) => { e.payload = 'caf\u00e9 \u{1F600} \u00ff tab\there nl\nquote" backslash\\ slash/ ctl\u001f del\u007f A' })), [...H, ...rows(3)], 3, 'passes: line 2 payload with raw UTF-8 (2- and 4-byte), short escapes, \\u001f, an unescaped / and DEL, in RFC 8785 form')
  cases.push({
    name: 'zstd-two-frames',
    input: { zst: Buffer.concat([zstd(bytes(valid.slice(0, 2))), zstd(bytes(valid.slice(2)))]) },
    expected: { exit: 0, args: [...H, ...rows(3)], findings: [], lines: 3 },
    readme: 'passes: the file is two concatenated zstd frames (lines 1-2, then line 3), which zstd -d also accepts',
  })
  cases.push({
    name: 'zstd-raw-blocks',
    input: { zst: handFrame(17, rawBlocks(validBytes, 700)) },
    expected: { exit: 0, args: [...H, ...rows(3)], findings: [], lines: 3 },
    readme: 'passes: the valid file in a hand-written zstd frame of 700-byte raw blocks (lines cross block boundaries), without checksum',
  })

  // A skippable frame (RFC 8878, 3.1.2): magic 0x184D2A50..5F, 4-byte little-endian size, that many bytes.
  // pzstd writes one before every frame, holding the frame's size.
  const skippable = (content: number[]) => Buffer.from([0x50, 0x2a, 0x4d, 0x18, content.length, 0, 0, 0, ...content])
  cases.push({
    name: 'zstd-skippable-first',
    input: { zst: Buffer.concat([skippable([validZst.length & 0xff, validZst.length >>> 8, 0, 0]), validZst]) },
    expected: { exit: 0, args: [...H, ...rows(3)], findings: [], lines: 3 },
    readme: 'passes: a skippable zstd frame (RFC 8878 3.1.2, what pzstd writes first) precedes the data frame; zstd -d accepts it',
  })
  cases.push({
    name: 'zstd-skippable-last',
    input: { zst: Buffer.concat([validZst, skippable([1, 2, 3, 4, 5, 6, 7, 8])]) },
    expected: { exit: 0, args: [...H, ...rows(3)], findings: [], lines: 3 },
    readme: 'passes: a skippable zstd frame of 8 bytes follows the data frame; zstd -d accepts it',
  })

  // --- encoding and canonical form (one finding, on line 2, unless stated) ---
  fail('not-utf8', spliceBytes(valid, 2, 'trade', [0x74, 0x72, 0xff, 0x64, 0x65]), [...H, ...rows(3)], [f(2, 'raw.not-utf8')], 3, 'line 2 has the byte 0xFF inside the payload string: not UTF-8')
  fail('not-utf8-overlong', spliceBytes(valid, 2, 'trade', [0x74, 0xc0, 0xaf, 0x64, 0x65]), [...H, ...rows(3)], [f(2, 'raw.not-utf8')], 3, 'line 2 has the overlong sequence C0 AF (an overlong "/") inside a string: not UTF-8')
  fail('not-utf8-surrogate-bytes', spliceBytes(valid, 2, 'trade', [0x74, 0xed, 0xa0, 0x80, 0x65]), [...H, ...rows(3)], [f(2, 'raw.not-utf8')], 3, 'line 2 has ED A0 80 (U+D800 encoded as bytes, CESU/WTF-8) inside a string: not UTF-8')
  fail('not-utf8-truncated-sequence', spliceBytes(valid, 2, 'trade', [0x74, 0xe2, 0x82, 0x65]), [...H, ...rows(3)], [f(2, 'raw.not-utf8')], 3, 'line 2 has E2 82 followed by an ASCII byte (a 3-byte sequence cut short): not UTF-8')
  fail('bom', bytes(['\ufeff', ...valid]), [...H, ...rows(3)], [f(1, 'raw.bom')], 3, 'the file (compressed) starts with a UTF-8 byte order mark EF BB BF before line 1')
  fail('bom-plain', bytes(['\ufeff', ...valid]), [...H, ...rows(3)], [f(1, 'raw.bom')], 3, 'the plain file starts with a UTF-8 byte order mark EF BB BF before line 1', true)
  failText('not-json', 'raw.not-json', (t) => t.slice(0, 60) + '\n', 'line 2 is cut off in the middle of the object: not JSON')
  fail('empty-line', bytes([valid[0]!, '\n', valid[1]!, valid[2]!]), [...H, ...rows(4)], [f(2, 'raw.not-json')], 4, 'line 2 is empty (a blank line between two envelopes): not JSON')
  failText('number-leading-zero', 'raw.not-json', (t) => replaceOnce(t, '"clock_offset":-2400', '"clock_offset":-02400'), 'line 2 has the number -02400: a leading zero is not JSON')
  failText('whitespace', 'raw.line-not-canonical', (t) => replaceOnce(t, '"payload_encoding":"text"', '"payload_encoding": "text"'), 'line 2 has a space after a colon: valid JSON but not RFC 8785 canonical')
  failText('trailing-space', 'raw.line-not-canonical', (t) => t.replace(/\n$/, ' \n'), 'line 2 has a space after its closing brace: not canonical')
  fail('crlf', bytes(valid.map((l) => l.replace(/\n$/, '\r\n'))), [...H, ...rows(3)], [f(1, 'raw.line-not-canonical'), f(2, 'raw.line-not-canonical'), f(3, 'raw.line-not-canonical')], 3, 'every line ends with CR LF: the CR is whitespace after the JSON value, not canonical')
  fail('key-order', bytes(editLine(valid, 2, (t) => {
    const e = envelope(2)
    // payload_encoding before payload: every key as canonicalize writes it, in the wrong order.
    const wrong = `{"exchange_time":${JSON.stringify(e.exchange_time)},"payload_encoding":"text","payload":${JSON.stringify(e.payload)},"receipts":${canonicalize(e.receipts)}}\n`
    if (wrong.length !== t.length) throw new Error('make: key-order line differs in length')
    return wrong
  })), [...H, ...rows(3)], [f(2, 'raw.line-not-canonical')], 3, 'line 2 has payload_encoding before payload: keys not in RFC 8785 order')
  failText('escape-u0041', 'raw.line-not-canonical', (t) => replaceOnce(t, 'ADAUSDT', '\\u0041DAUSDT'), 'line 2 writes "A" as the escape \\u0041: RFC 8785 writes it as the character')
  failText('escape-solidus', 'raw.line-not-canonical', (t) => replaceOnce(t, '"connection":"a-1"', '"connection":"a\\/1"'), 'line 2 writes "/" as \\/ in a receipt connection: RFC 8785 writes it unescaped')
  fail('escape-uppercase-hex', bytes(editLine(withEnvelope(2, (e) => { e.payload = 'ctl\u001fx' }), 2, (t) => replaceOnce(t, '\\u001f', '\\u001F'))), [...H, ...rows(3)], [f(2, 'raw.line-not-canonical')], 3, 'line 2 writes U+001F as \\u001F: RFC 8785 uses lowercase hex digits')
  fail('escape-long-form', bytes(editLine(withEnvelope(2, (e) => { e.payload = 'nl\nx' }), 2, (t) => replaceOnce(t, '\\n', '\\u000a'))), [...H, ...rows(3)], [f(2, 'raw.line-not-canonical')], 3, 'line 2 writes a newline in a string as \\u000a: RFC 8785 uses the short escape \\n')
  failText('number-negative-zero', 'raw.line-not-canonical', (t) => replaceOnce(t, '"clock_offset":-2400', '"clock_offset":-0'), 'line 2 has clock_offset -0: canonical JSON writes zero as 0')
  failText('duplicate-key', 'raw.duplicate-key', (t) => replaceOnce(t, '"payload_encoding":"text"', '"payload_encoding":"text","payload_encoding":"text"'), 'line 2 has the key payload_encoding twice (same value, canonical position)')
  failText('duplicate-key-receipt', 'raw.duplicate-key', (t) => replaceOnce(t, '"replica":"a"', '"replica":"a","replica":"a"'), 'a receipt of line 2 has the key replica twice')
  failText('lone-surrogate', 'raw.lone-surrogate', (t) => replaceOnce(t, 'trade', 'tr\\ud800de'), 'line 2 has the escape \\ud800 (a high surrogate with no low surrogate) inside the payload')
  failText('lone-surrogate-low', 'raw.lone-surrogate', (t) => replaceOnce(t, 'trade', 'tr\\udc00\\ud800de'), 'line 2 has \\udc00\\ud800: a low surrogate first, then a high one, a reversed pair of lone surrogates')
  failEnv('number-2p53', 'raw.number-out-of-range', (e) => { e.receipts = [receipt('a', frameNs(2), { offset: 0, bound: 2 ** 53 })] }, 'line 2 has clock_error_bound 9007199254740992 (2^53): outside plus or minus (2^53 - 1)')
  failEnv('number-neg-2p53', 'raw.number-out-of-range', (e) => { e.seq = -(2 ** 53) }, 'line 2 has an (unknown) field with -9007199254740992, -(2^53): every number of a line must lie within plus or minus (2^53 - 1)')
  failText('number-not-integer', 'raw.number-not-integer', (t) => replaceOnce(t, '"clock_offset":-2400', '"clock_offset":-2400.5'), 'line 2 has clock_offset -2400.5: numbers are integers')
  failEnv('too-deep', 'raw.too-deep', (e) => { e.x = JSON.parse('['.repeat(100_000) + ']'.repeat(100_000)) as Json }, 'line 2 has a field holding arrays nested 100000 deep')

  // --- the envelope's fields ---
  fail('not-object', bytes(editLine(valid, 2, () => '[]\n')), [...H, ...rows(3)], [f(2, 'raw.not-object')], 3, 'line 2 is the canonical JSON array [], not an object')
  fail('not-object-string', bytes(editLine(valid, 2, () => '"envelope"\n')), [...H, ...rows(3)], [f(2, 'raw.not-object')], 3, 'line 2 is a JSON string, not an object')
  failEnv('field-missing', 'raw.field-missing', (e) => { delete e.receipts }, 'line 2 has no receipts field')
  failEnv('field-missing-payload', 'raw.field-missing', (e) => { delete e.payload }, 'line 2 has no payload field')
  failEnv('field-missing-receipt', 'raw.field-missing', (e) => { delete (e.receipts as Obj[])[1]!.connection }, "line 2's receipt b has no connection field")
  failEnv('field-type', 'raw.field-type', (e) => { e.payload = 5 }, 'line 2 has payload 5, a number: payload is a string')
  failEnv('field-type-receipts', 'raw.field-type', (e) => { e.receipts = (e.receipts as Obj[])[0]! }, 'line 2 has receipts as an object, not an array')
  failEnv('field-type-clock', 'raw.field-type', (e) => { (e.receipts as Obj[])[1]!.clock_offset = '3102' }, "line 2's receipt b has clock_offset as the string \"3102\": it is an integer")
  failEnv('field-type-null', 'raw.field-type', (e) => { e.exchange_time = null }, 'line 2 has exchange_time null: a time is a string (an optional field is absent, not null)')
  failEnv('payload-encoding', 'raw.payload-encoding', (e) => { e.payload_encoding = 'hex' }, 'line 2 has payload_encoding "hex": only text and base64 exist')
  failEnv('base64-invalid', 'raw.base64-invalid', (e) => { e.payload = 'not base64!'; e.payload_encoding = 'base64' }, 'line 2 is base64 but its payload has characters outside the base64 alphabet')
  failEnv('base64-unpadded', 'raw.base64-invalid', (e) => { e.payload = 'AAEC//4'; e.payload_encoding = 'base64' }, 'line 2 is base64 without its padding (AAEC//4 instead of AAEC//4=)')
  failEnv('exchange-time-6-digits', 'raw.time-invalid', (e) => { e.exchange_time = '2026-10-03T14:00:02.120456Z' }, 'line 2 has exchange_time with 6 fraction digits: a time has exactly nine')
  failEnv('time-24h', 'raw.time-invalid', (e) => { e.exchange_time = '2026-10-03T24:00:00.000000000Z' }, 'line 2 has exchange_time at hour 24 (24:00:00): hours run 00-23')
  failEnv('time-feb30', 'raw.time-invalid', (e) => { e.exchange_time = '2026-02-30T14:00:02.120456789Z' }, 'line 2 has exchange_time on February 30, a date that does not exist')
  failEnv('time-offset', 'raw.time-invalid', (e) => { e.exchange_time = '2026-10-03T14:00:02.120456789+00:00' }, 'line 2 has exchange_time with +00:00 instead of Z')
  failEnv('receive-time-lowercase-z', 'raw.time-invalid', (e) => { (e.receipts as Obj[])[1]!.receive_time = nsToTime(frameNs(2, 250_000n)).replace('Z', 'z') }, "line 2's receipt b has a receive_time ending in lowercase z")
  failEnv('receipts-empty', 'raw.receipts-empty', (e) => { e.receipts = [] }, 'line 2 has an empty receipts array: every frame was received by at least one replica')
  failEnv('receipt-replica', 'raw.receipt-replica', (e) => { (e.receipts as Obj[])[1]!.replica = 'c' }, "line 2's second receipt names replica c: only a and b exist")
  failEnv('receipt-duplicate-replica', 'raw.receipt-duplicate-replica', (e) => { (e.receipts as Obj[])[1]!.replica = 'a' }, 'line 2 has two receipts of replica a: one receipt per replica')
  failEnv('clock-pair-offset-only', 'raw.clock-pair', (e) => { delete (e.receipts as Obj[])[1]!.clock_error_bound }, "line 2's receipt b has clock_offset without clock_error_bound (check 7)")
  failEnv('clock-pair-bound-only', 'raw.clock-pair', (e) => { delete (e.receipts as Obj[])[1]!.clock_offset }, "line 2's receipt b has clock_error_bound without clock_offset (check 7)")
  failEnv('clock-bound-negative', 'raw.clock-bound-negative', (e) => { (e.receipts as Obj[])[1]!.clock_offset = 0; (e.receipts as Obj[])[1]!.clock_error_bound = -1 }, "line 2's receipt b has clock_error_bound -1 (with clock_offset 0): the bound is non-negative")
  failEnv('clock-bound-below-offset', 'raw.clock-bound-below-offset', (e) => { (e.receipts as Obj[])[1]!.clock_offset = -1000; (e.receipts as Obj[])[1]!.clock_error_bound = 999 }, "line 2's receipt b has clock_error_bound 999 below abs(clock_offset -1000) (check 7)")

  // --- lines, order, counts ---
  const long = withEnvelope(2, (e) => { e.payload = 'x'.repeat(3000) })
  fail('line-too-long', bytes(long), [...H, ...rows(3), '--max-line-bytes', '1024'], [f(2, 'raw.line-too-long')], 3, 'line 2 is over 3000 bytes, above --max-line-bytes 1024 (it still counts as a line)')
  fail('line-unterminated', bytes(editLine(valid, 3, (t) => t.slice(0, -1))), [...H, ...rows(3)], [f(3, 'raw.line-unterminated')], 3, 'the last line (3) has no terminating newline')
  fail('frame-time-decreasing', bytes([valid[0]!, valid[2]!, valid[1]!]), [...H, ...rows(3)], [f(3, 'raw.frame-time-decreasing')], 3, 'lines 2 and 3 are swapped: the frame time of line 3 is before that of line 2')
  fail('frame-time-outside-hour', bytes(editLine(valid, 3, () => line({ ...envelope(3), receipts: [receipt('a', HOUR_START_NS + 3600n * S, { offset: 5, bound: 500 })] }))), [...H, ...rows(3)], [f(3, 'raw.frame-time-outside-hour')], 3, 'line 3 has frame time 15:00:00.000000000, the end of --hour 2026-10-03T14 (exclusive)')
  fail('frame-time-before-hour', bytes(editLine(valid, 1, () => line({ ...envelope(1), receipts: [receipt('a', HOUR_START_NS - 1n, { offset: 5, bound: 500 })] }))), [...H, ...rows(3)], [f(1, 'raw.frame-time-outside-hour')], 3, 'line 1 has frame time 13:59:59.999999999, 1 ns before --hour 2026-10-03T14')
  fail('frame-time-unbounded-receipts', bytes(editLine(valid, 1, () => line({ ...envelope(1), receipts: [receipt('a', frameNs(1), null), receipt('b', HOUR_START_NS - 500n * MS, null)] }))), [...H, ...rows(3)], [f(1, 'raw.frame-time-outside-hour')], 3, "line 1's receipts carry no clock_error_bound, so its frame time is the earliest of all its receipts: b's 13:59:59.5, before the hour")
  fail('frame-time-bounded-earliest', bytes(editLine(valid, 2, () => line({ ...envelope(2), receipts: [receipt('a', frameNs(2), null), receipt('b', frameNs(1, -1000n), { offset: 5, bound: 500 })] }))), [...H, ...rows(3)], [f(2, 'raw.frame-time-decreasing')], 3, "line 2's only bounded receipt (b) is 1 us before line 1's frame time; its later unbounded receipt a does not count")
  fail('row-count', validBytes, [...H, ...rows(4)], [f(null, 'raw.row-count')], 3, 'the file has 3 lines but --rows says 4')
  fail('row-count-empty', Buffer.alloc(0), [...H, ...rows(1)], [f(null, 'raw.row-count')], 0, 'the (empty) file has 0 lines but --rows says 1')
  cases.push({ name: 'blake3-mismatch_fail', input: { zst: validZst }, expected: { exit: 1, args: [...H, ...rows(3), '--blake3', '0'.repeat(64)], findings: [f(null, 'raw.blake3-mismatch')], lines: 3 }, readme: 'the BLAKE3 of the compressed file is not the --blake3 given (64 zeros)' })

  // --- input the decoder or the options refuse (errors, not findings) ---
  error('blake3-plain', { plain: validBytes }, [...H, ...rows(3), '--blake3', await blake3Hex(validBytes)], 2, 'usage.not-compressed', '--blake3 names the compressed file as stored, but the input is plain (exit 2), even with the plain bytes\' own BLAKE3')
  error('zstd-truncated', { zst: validZst.subarray(0, Math.floor(validZst.length / 2)) }, [...H, ...rows(3)], 1, 'raw.zstd-truncated', 'the zstd file is cut in half: the stream ends inside a frame')
  error('zstd-truncated-checksum', { zst: validZst.subarray(0, validZst.length - 2) }, [...H, ...rows(3)], 1, 'raw.zstd-truncated', 'the zstd file lacks the last 2 bytes of its 4-byte content checksum')
  const flipped = Buffer.from(validZst)
  flipped[flipped.length - 1] = flipped[flipped.length - 1]! ^ 0xff
  error('zstd-checksum', { zst: flipped }, [...H, ...rows(3)], 1, 'raw.zstd-corrupt', "the zstd frame's content checksum (last byte flipped) does not match the content")
  error('zstd-corrupt', { zst: handFrame(17, [[...blockHeader(true, 3, 16), ...Buffer.alloc(16)]]) }, [...H, ...rows(3)], 1, 'raw.zstd-corrupt', 'a zstd frame whose only block has the reserved block type 3')
  error('zstd-trailing-garbage', { zst: Buffer.concat([validZst, Buffer.from('garbage!garbage!')]) }, [...H, ...rows(3)], 1, 'raw.zstd-corrupt', 'a valid zstd frame followed by 16 bytes that are not a zstd frame')
  error('zstd-window-cap', { zst: handFrame(30, rawBlocks(validBytes)) }, [...H, ...rows(3)], 1, 'raw.zstd-window-cap', 'the zstd frame declares a 1 GiB (2^30) window, over the 2^27 cap, though its content is small')
  const rle = Array.from({ length: 32 }, (_, i) => [...blockHeader(i === 31, 1, 1 << 17), 0x00])
  error('zstd-ratio-cap', { zst: handFrame(17, rle) }, [...H, ...rows(3)], 1, 'raw.zstd-ratio-cap', `a ${6 + 4 * 32}-byte zstd frame of 32 RLE blocks that decompresses to 4 MiB of zeros: over the 1000:1 ratio cap`)

  return cases
}

// ---------------------------------------------------------------------------------------------------
// Writing

export function sha256Hex(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex')
}

/** Every file the script writes, relative to the vectors folder, with its bytes (hashes.txt last). */
export async function buildFiles(): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>()
  const names = new Set<string>()
  for (const c of await buildCases()) {
    if (names.has(c.name)) throw new Error(`make: duplicate case ${c.name}`)
    names.add(c.name)
    if (c.readme.includes('\n')) throw new Error(`make: README of ${c.name} is more than one line`)
    if ('plain' in c.input) files.set(`${c.name}/input.jsonl`, c.input.plain)
    else files.set(`${c.name}/input.jsonl.zst`, c.input.zst)
    files.set(`${c.name}/expected.json`, Buffer.from(JSON.stringify(c.expected) + '\n'))
    files.set(`${c.name}/README`, Buffer.from(c.readme + '\n'))
  }
  const sorted = [...files.keys()].sort()
  const hashes = sorted.map((p) => `${sha256Hex(files.get(p)!)}  ${p}\n`).join('')
  const out = new Map(sorted.map((p) => [p, files.get(p)!] as const))
  out.set('hashes.txt', Buffer.from(hashes))
  return out
}

async function main(argv: string[]): Promise<number> {
  const here = dirname(fileURLToPath(import.meta.url))
  const check = argv.includes('--check')
  const files = await buildFiles()
  const differ: string[] = []
  for (const [rel, data] of files) {
    const path = join(here, rel)
    if (existsSync(path)) {
      if (!readFileSync(path).equals(data)) differ.push(rel)
      continue
    }
    if (check) { differ.push(`${rel} (missing)`); continue }
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, data)
  }
  if (differ.length > 0) {
    process.stderr.write(`make: ${differ.length} file(s) differ from what this script makes; golden data is never rewritten (add a new case instead):\n${differ.map((d) => '  ' + d + '\n').join('')}`)
    return 1
  }
  process.stdout.write(`${check ? 'checked' : 'wrote'} ${files.size} files in ${here}\n`)
  return 0
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).then((code) => { process.exitCode = code }, (err) => { process.stderr.write(`make: ${(err as Error).stack}\n`); process.exitCode = 2 })
}

/**
 * `pipe run verify`: the ten checks of record-format-1.md ("What a verifier checks") over chains built
 * with test/helpers/sealed-hour.ts. A passing two-day chain (two roots too), then at least one failing
 * case per check, each asserting the check number and code of what it breaks (exactly, where one change
 * breaks one rule), the --from boundary, and the pipeline's JSON and exit codes.
 */
import { cp, mkdir, mkdtemp, readFile, rm, truncate, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createBLAKE3 } from 'hash-wasm'
import { parquetMetadata } from 'hyparquet'
import t from 'tap'
import { captureIO } from './helpers/io.js'
import { runPipeline } from '../src/core/runner.js'
import { toDecimal38_18 } from '../src/formats/record/decimal.js'
import type { HourlyManifest } from '../src/formats/record/manifest.js'
import { writeJwksFile, type PublicJwks } from '../src/formats/record/keys/keys.js'
import { TableWriter, tableSchema } from '../src/formats/record/tables.js'
import { formatTime } from '../src/formats/record/time.js'
import type { TableName, TableRow } from '../src/formats/record/types.js'
import { checkManifestBytes, RecordVerifier, VERIFY_CODES, type VerifyFinding, type VerifyOptions } from '../src/formats/record/verify/verify.js'
import { registry } from '../pipelines/registry.js'
import { verifyPipeline } from '../pipelines/verify.js'
import { depthSnapshot, depthUpdate, HOUR_NS, sealDay, sealHour, sealHours, testKey, trade, writeManifest, type Sealed, type SealHourOptions, type TestFrame } from './helpers/sealed-hour.js'
import { ByteWriter, ParquetWriter } from 'hyparquet-writer'


type Tap = Parameters<Parameters<typeof t.test>[0]>[0]

const S = 1_000_000_000n
const T0 = BigInt(Date.UTC(2026, 9, 3, 22)) * 1_000_000n // 2026-10-03T22:00:00Z
const { key, jwks } = await testKey(1)
const other = await testKey(2)
const lineHash = await createBLAKE3()
const b3 = (s: string): string => {
  lineHash.init()
  lineHash.update(s)
  return lineHash.digest('hex')
}

const base = await mkdtemp(join(tmpdir(), 'pipe-verify-'))
t.teardown(() => rm(base, { recursive: true, force: true }))
let seq = 0
async function freshRoot(): Promise<string> {
  const dir = join(base, `root-${seq++}`)
  await mkdir(dir)
  return dir
}

async function verify(roots: string[], opts: Partial<VerifyOptions> = {}): Promise<{ findings: VerifyFinding[]; hours: number; days: number; chains: number }> {
  const findings: VerifyFinding[] = []
  const v = new RecordVerifier({ roots, jwks, report: (f) => findings.push(f), ...opts })
  for await (const _ of v.run()) {
    // one item per hour
  }
  return { findings, ...v.summary }
}

const key2 = (f: VerifyFinding) => `${f.check} ${f.code}`
const dump = (fs: VerifyFinding[]) => JSON.stringify(fs, null, 1)

/** The findings are exactly `expected` ("check code", each as often as listed). */
function exactly(t: Tap, findings: VerifyFinding[], expected: string[]): void {
  t.same(findings.map(key2).sort(), [...expected].sort(), dump(findings))
  for (const f of findings) t.equal(VERIFY_CODES[f.code], f.check, `${f.code} is listed under check ${f.check}`)
}

/** Each of `expected` is among the findings. */
function includes(t: Tap, findings: VerifyFinding[], expected: string[]): void {
  const got = findings.map(key2)
  for (const e of expected) t.ok(got.includes(e), `${e} found in ${dump(findings)}`)
}

/** Three trades a second apart; the third is received by replica b only. */
function frames(start: bigint, id = 100): TestFrame[] {
  return [trade(start + 1n * S, id), trade(start + 2n * S, id + 1), trade(start + 3n * S, id + 2, { replicas: ['b'] })]
}

/** One sealed hour, the whole chain: no daily manifest is due (its day is the chain's last, still open). */
async function oneHour(o: Partial<SealHourOptions> = {}) {
  const root = await freshRoot()
  const h = await sealHour({ root, hourStart: T0, frames: frames(T0), previous: null, key, ...o })
  return { root, h, raw: join(h.dir, 'raw.jsonl.zst'), table: join(h.dir, 'trades.parquet') }
}

/** A trade id that two lines carry with different prices: a conflict. */
function conflictFrames(start: bigint): TestFrame[] {
  return [trade(start + 1n * S, 500, { price: '1.5' }), trade(start + 2n * S, 500, { price: '2.5', replicas: ['b'] }), trade(start + 3n * S, 501)]
}

const conflictOf = (tradeId = '500', hashes?: string[]) => (lines: readonly string[]) => [
  { instrument: 'BTCUSDT', trade_id: tradeId, lines: [0, 1].map((i) => ({ raw_index: i, blake3: hashes?.[i] ?? b3(lines[i]!) })) },
]

/** Two days: 2026-10-03 hours 22, 23 and 2026-10-04 hours 00, 01 (one with a conflict), with daily manifests. */
async function twoDays(root: string) {
  const runs = (start: bigint) => ({ a: [{ instrument: 'BTCUSDT', connection: 'a-1', start_time: formatTime(start), end_time: formatTime(start + HOUR_NS) }] })
  const day1 = await sealHours({ root }, T0, 2, null, key, (i, s) => frames(s, 100 + 3 * i))
  const h2 = await sealHour({ root, hourStart: T0 + 2n * HOUR_NS, frames: conflictFrames(T0 + 2n * HOUR_NS), previous: day1[1]!.blake3, key, conflicts: conflictOf(), gapFreeRuns: runs(T0 + 2n * HOUR_NS) })
  const h3 = await sealHour({ root, hourStart: T0 + 3n * HOUR_NS, frames: frames(T0 + 3n * HOUR_NS, 200), previous: h2.blake3, key })
  const d1 = await sealDay({ root, date: '2026-10-03', hours: day1, previous: null, key })
  const d2 = await sealDay({ root, date: '2026-10-04', hours: [h2, h3], previous: d1.blake3, key })
  return { hours: [...day1, h2, h3], days: [d1, d2] }
}

/** Replaces an hour's raw file with `text` (not zstd), listed with its size and hash and signed again. */
async function replaceRawFile(h: Sealed<HourlyManifest>, text: string): Promise<void> {
  await writeFile(join(h.dir, 'raw.jsonl.zst'), text)
  h.manifest.files[0] = { ...h.manifest.files[0]!, size: Buffer.byteLength(text), blake3: b3(text) }
  await writeManifest(h.dir, h.manifest, key)
}

async function flipBit(path: string, at: (bytes: Buffer) => number, bit = 1): Promise<void> {
  const bytes = await readFile(path)
  const i = at(bytes)
  bytes[i] = bytes[i]! ^ bit
  await writeFile(path, bytes)
}

// ---------------------------------------------------------------------------------------------------

t.test('a two-day chain of four hours passes, and so do two identical roots holding it', async (t) => {
  const root = await freshRoot()
  await twoDays(root)
  const r = await verify([root])
  exactly(t, r.findings, [])
  t.match(r, { hours: 4, days: 2, chains: 1 })
  const copy = await freshRoot()
  await cp(root, copy, { recursive: true })
  const both = await verify([root, copy])
  exactly(t, both.findings, [])
  t.match(both, { hours: 4, days: 2, chains: 1 })
  exactly(t, (await verify([root, `${root}/`])).findings, [])
})

t.test('large raw files go through the worker thread with the same results', async (t) => {
  const { root, raw } = await oneHour()
  exactly(t, (await verify([root], { inProcessMaxBytes: 0 })).findings, [])
  await truncate(raw, 100)
  includes(t, (await verify([root], { inProcessMaxBytes: 0 })).findings, ['2 file.size', '2 file.blake3', '3 raw.zstd-truncated'])
})

t.test('check 1: manifests are canonical JSON of format_version 1', async (t) => {
  t.test('not canonical (a space), even when signed', async (t) => {
    const { root, h } = await oneHour()
    const spaced = Buffer.from(h.bytes.toString('utf8').replace('{"', '{ "'))
    await writeManifest(h.dir, h.manifest, key, spaced)
    exactly(t, (await verify([root])).findings, ['1 manifest.not-canonical'])
  })
  t.test('an unknown major is rejected, and so is a manifest without format_version', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.format_version = 2 } })
    exactly(t, (await verify([root])).findings, ['1 manifest.unknown-version'])
    const without = await oneHour({ edit: (m) => { delete (m as Partial<typeof m>).format_version } })
    const r = await verify([without.root])
    exactly(t, r.findings, ['1 manifest.unknown-version'])
    t.match(r.findings[0]!.detail, /format_version is absent/)
  })
  t.test('members a reader does not know are ignored (a later 1.x may add optional ones)', async (t) => {
    const { root } = await oneHour({
      edit: (m) => {
        Object.assign(m, { zz_added_in_1_1: { nested: ['x'] } })
        Object.assign(m.replicas[0]!, { latency_p99_ns: 12 })
        Object.assign(m.completeness, { note: 'x' })
      },
    })
    exactly(t, (await verify([root])).findings, [])
  })
  t.test('a member of the wrong shape', async (t) => {
    const { root } = await oneHour({ edit: (m) => { delete (m as Partial<typeof m>).replica_agreement } })
    const r = await verify([root])
    exactly(t, r.findings, ['1 manifest.field'])
    t.match(r.findings[0]!.detail, /replica_agreement: missing/)
  })
  t.test('a completeness status or reason the format does not define', async (t) => {
    for (const completeness of [{ status: 'partial', reasons: ['gremlins'] }, { status: 'done', reasons: [] }]) {
      const r = await verify([(await oneHour({ edit: (m) => { (m as { completeness: unknown }).completeness = completeness } })).root])
      exactly(t, r.findings, ['1 manifest.field'])
      t.match(r.findings[0]!.detail, /^completeness\.(reasons\[0\]|status): /)
    }
  })
  t.test('not JSON', async (t) => {
    const { root, h } = await oneHour()
    await writeManifest(h.dir, h.manifest, key, Buffer.from(h.bytes.toString('utf8').slice(0, -1)))
    exactly(t, (await verify([root])).findings, ['1 manifest.not-json'])
  })
  t.test('JSON that is not an object', async (t) => {
    const { root, h } = await oneHour()
    await writeManifest(h.dir, h.manifest, key, Buffer.from('[1]'))
    const r = await verify([root])
    exactly(t, r.findings, ['1 manifest.field'])
    t.match(r.findings[0]!.detail, /not a JSON object/)
  })
  t.test('a daily manifest too', async (t) => {
    const root = await freshRoot()
    const hours = await sealHours({ root }, T0, 1, null, key, (_, s) => frames(s))
    await sealDay({ root, date: '2026-10-03', hours, previous: null, key, edit: (m) => { m.format_version = 3 } })
    exactly(t, (await verify([root])).findings, ['1 manifest.unknown-version'])
  })
  t.test('times are RFC 3339 UTC with Z and exactly nine fractional digits, one encoding per instant', async (t) => {
    const earliest = formatTime(T0 + S)
    for (const other of [earliest.replace('.000000000Z', '.000Z'), earliest.replace('Z', '+00:00'), earliest.replace('Z', 'z'), earliest.replace('.000000000Z', 'Z')]) {
      const r = await verify([(await oneHour({ edit: (m) => { m.frame_time_bounds!.earliest = other } })).root])
      exactly(t, r.findings, ['1 manifest.field'])
      t.match(r.findings[0]!.detail, /^frame_time_bounds\.earliest: not a time/, other)
    }
    const window = await oneHour({ edit: (m) => { m.replicas[0]!.reconnect_windows = [{ start_time: formatTime(T0 + 10n * S).replace('Z', '000Z'), end_time: formatTime(T0 + 12n * S) }] } })
    exactly(t, (await verify([window.root])).findings, ['1 manifest.field'])
  })
  t.test('numbers are integers within ±(2^53 − 1); other values are strings', async (t) => {
    for (const [what, value, codes] of [
      ['2^53', 2 ** 53, ['1 manifest.not-canonical', '1 manifest.field']],
      ['a fraction', 1.5, ['1 manifest.not-canonical', '1 manifest.field']],
      ['a number as a string', '3600000000000', ['1 manifest.field']],
    ] as const) {
      const { root } = await oneHour({ edit: (m) => { (m.replicas[0] as unknown as Record<string, unknown>).covered_ns = value } })
      const r = await verify([root])
      exactly(t, r.findings, [...codes])
      t.ok(r.findings.filter((f) => f.code === 'manifest.field').every((f) => f.detail.startsWith('replicas[0].covered_ns: ')), `${what}: ${dump(r.findings)}`)
    }
    const largest = await oneHour({ edit: (m) => { m.replicas[0]!.covered_ns = 2 ** 53 - 1 } })
    exactly(t, (await verify([largest.root])).findings, [])
    const number = await oneHour({ edit: (m) => { (m.sequence_gaps as unknown[]) = [{ instrument: 'BTCUSDT', after_id: 100, before_id: '102' }] } })
    includes(t, (await verify([number.root])).findings, ['1 manifest.field'])
  })
  t.test('unrepresentable_frames, conflicts and gap_free_runs are absent when empty, never []', async (t) => {
    for (const [member, edit] of [
      ['unrepresentable_frames', (m) => { m.unrepresentable_frames = [] }],
      ['conflicts', (m) => { m.conflicts = [] }],
      ['replicas[0].gap_free_runs', (m) => { m.replicas[0]!.gap_free_runs = [] }],
    ] as [string, (m: HourlyManifest) => void][]) {
      const r = await verify([(await oneHour({ edit })).root])
      exactly(t, r.findings, ['1 manifest.field'])
      t.equal(r.findings[0]!.detail, `${member}: absent when empty, not []`)
    }
    const alsoWrong = await oneHour({ edit: (m) => { m.replicas[0]!.gap_free_runs = []; m.replicas[0]!.clock!.unbounded = 5 } })
    exactly(t, (await verify([alsoWrong.root])).findings, ['1 manifest.field', '8 clock.summary'])
  })
  t.test('hashes are lowercase hexadecimal', async (t) => {
    const upper = await oneHour({ edit: (m) => { m.files[0]!.blake3 = m.files[0]!.blake3.toUpperCase() } })
    const r = await verify([upper.root])
    exactly(t, r.findings, ['1 manifest.field'])
    t.match(r.findings[0]!.detail, /^files\[0\]\.blake3: not a BLAKE3 hash/)
    const root = await freshRoot()
    const hours = await sealHours({ root }, T0, 1, null, key, (_, s) => frames(s))
    await sealDay({ root, date: '2026-10-03', hours, previous: null, key, edit: (m) => { m.hours[0]!.blake3 = m.hours[0]!.blake3.toUpperCase() } })
    const daily = await verify([root])
    exactly(t, daily.findings, ['1 manifest.field'])
    t.match(daily.findings[0]!.detail, /^hours\[0\]\.blake3: not a BLAKE3 hash/)
  })
  t.test('checkManifestBytes reports duplicate keys as not canonical', async (t) => {
    const c = checkManifestBytes(Buffer.from('{"format_version":1,"format_version":1}'), 'daily')
    t.equal(c.findings[0]?.code, 'manifest.not-canonical')
  })
})

t.test('check 2: every listed file exists with its size and BLAKE3', async (t) => {
  t.test('bit flip in the raw file', async (t) => {
    const { root, raw } = await oneHour()
    await flipBit(raw, (b) => b.length - 20)
    includes(t, (await verify([root])).findings, ['2 file.blake3'])
  })
  t.test('bit flip in a table', async (t) => {
    const { root, table } = await oneHour()
    await flipBit(table, (b) => b.length - 30)
    includes(t, (await verify([root])).findings, ['2 file.blake3'])
  })
  t.test('a listed file is missing, or is not a regular file', async (t) => {
    const { root, table } = await oneHour()
    await unlink(table)
    exactly(t, (await verify([root])).findings, ['2 file.missing'])
    await mkdir(table)
    const r = await verify([root])
    exactly(t, r.findings, ['2 file.missing'])
    t.match(r.findings[0]!.detail, /is not a regular file/)
  })
  t.test('a truncated raw file', async (t) => {
    const { root, raw } = await oneHour()
    await truncate(raw, 60)
    const r = await verify([root])
    includes(t, r.findings, ['2 file.size', '2 file.blake3'])
    t.ok(r.findings.some((f) => f.check === 3 && f.code.startsWith('raw.zstd-')), dump(r.findings))
  })
  t.test('a listed name that leaves the directory', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.files.push({ name: '../x', size: 1, blake3: '0'.repeat(64), rows: 0 }) } })
    exactly(t, (await verify([root])).findings, ['2 file.name'])
  })
  t.test('a name listed twice', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.files.push({ ...m.files[1]! }) } })
    const r = await verify([root])
    exactly(t, r.findings, ['2 file.name'])
    t.match(r.findings[0]!.detail, /"trades\.parquet" is listed twice/)
  })
  t.test('a listed file besides the raw file and the tables is checked too; a file not listed is not looked at', async (t) => {
    const listed = await oneHour({ edit: (m) => { m.files.push({ name: 'notes.txt', size: 1, blake3: b3('x'), rows: 0 }) } })
    exactly(t, (await verify([listed.root])).findings, ['2 file.missing'])
    await writeFile(join(listed.h.dir, 'notes.txt'), 'x')
    exactly(t, (await verify([listed.root])).findings, [])
    const { root, h } = await oneHour()
    await writeFile(join(h.dir, 'notes.txt'), 'x')
    exactly(t, (await verify([root])).findings, [])
  })
})

t.test('check 3: the raw file', async (t) => {
  t.test('lines out of frame-time order', async (t) => {
    const f = frames(T0)
    const { root } = await oneHour({ frames: [f[1]!, f[0]!, f[2]!] })
    const r = await verify([root])
    exactly(t, r.findings, ['3 raw.frame-time-decreasing'])
    t.equal(r.findings[0]!.line, 2)
    t.match(r.findings[0]!.path, /raw\.jsonl\.zst$/)
  })
  t.test('a line that goes back is reported once, and the next line is compared with it', async (t) => {
    // 1 s, 3 s, 2 s, 2.5 s: line 3 goes back; line 4 is after line 3 though still before line 2.
    const { root } = await oneHour({ frames: [trade(T0 + S, 1), trade(T0 + 3n * S, 2), trade(T0 + 2n * S, 3), trade(T0 + 2n * S + S / 2n, 4)] })
    const r = await verify([root])
    exactly(t, r.findings, ['3 raw.frame-time-decreasing'])
    t.equal(r.findings[0]!.line, 3)
  })
  t.test('a line that is not canonical', async (t) => {
    const { root } = await oneHour({ editLine: (l, i) => (i === 0 ? l.replace('{"', '{ "') : l) })
    const r = await verify([root])
    exactly(t, r.findings, ['3 raw.line-not-canonical'])
    t.equal(r.findings[0]!.line, 1)
  })
  t.test('the line count differs from the listed rows', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.files[0]!.rows++ } })
    exactly(t, (await verify([root])).findings, ['3 raw.row-count'])
  })
  t.test('a frame time outside the hour', async (t) => {
    const { root } = await oneHour({ frames: [trade(T0 - S, 99), ...frames(T0)] })
    exactly(t, (await verify([root])).findings, ['3 raw.frame-time-outside-hour'])
  })
  t.test('the hour is [start, end): a frame at its start or 1 ns before its end is in it, one at its end is not', async (t) => {
    const inside = await oneHour({ frames: [trade(T0, 1, { replicas: ['a'] }), trade(T0 + HOUR_NS - 1n, 2, { replicas: ['a'] })] })
    exactly(t, (await verify([inside.root])).findings, [])
    const atEnd = await oneHour({ frames: [...frames(T0), trade(T0 + HOUR_NS, 103, { replicas: ['a'] })] })
    const r = await verify([atEnd.root])
    exactly(t, r.findings, ['3 raw.frame-time-outside-hour'])
    t.equal(r.findings[0]!.line, 4)
  })
  t.test('frame time is the earliest receipt with clock_error_bound, even when an unbounded receipt is earlier', async (t) => {
    // Received first by a without an estimate, 5 µs later by b with one: its frame time is b's.
    const early = trade(T0 + S, 1)
    early.receipts = [
      { replica: 'a', connection: 'a-1', receiveTime: T0 + S },
      { replica: 'b', connection: 'b-1', receiveTime: T0 + S + 5000n, clockOffset: 1500n, clockErrorBound: 400_000n },
    ]
    const between = trade(T0 + S + 2000n, 2, { replicas: ['a'] })
    const ordered = await oneHour({ frames: [between, early] })
    exactly(t, (await verify([ordered.root])).findings, [])
    const byEarliestReceipt = await oneHour({ frames: [early, between] })
    const r = await verify([byEarliestReceipt.root])
    exactly(t, r.findings, ['3 raw.frame-time-decreasing'])
    t.equal(r.findings[0]!.line, 2)
    const rowsAtEarliestReceipt = await oneHour({ frames: [between, early], editRows: (_, rows) => rows.map((row) => (row.raw_index === 1 ? { ...row, receive_time: T0 + S } : row)) })
    exactly(t, (await verify([rowsAtEarliestReceipt.root])).findings, ['4 table.receive-time'])
  })
  t.test('exchange_time may be after receive_time: the venue\'s clock carries no bound', async (t) => {
    const ahead = trade(T0 + S, 1)
    ahead.receipts = trade(T0 + S - 10_000_000n, 1).receipts
    exactly(t, (await verify([(await oneHour({ frames: [ahead] })).root])).findings, [])
  })
  t.test('the raw file is not listed', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.files.shift() } })
    exactly(t, (await verify([root])).findings, ['3 raw.unlisted'])
  })
  t.test('with the raw file unreadable, the tables\' counts and order are still checked', async (t) => {
    const { root, h } = await oneHour({ editRows: (_, rows) => [rows[1]!, rows[0]!, rows[2]!], edit: (m) => { m.files[1]!.rows++ } })
    await replaceRawFile(h, '')
    exactly(t, (await verify([root])).findings, ['3 raw.not-zstd', '4 table.row-count', '4 table.raw-index-decreasing'])
  })
  t.test('the raw file is not zstd (an empty file is not a zstd frame either)', async (t) => {
    for (const plain of ['{}\n', '']) {
      const { root, h } = await oneHour()
      await replaceRawFile(h, plain)
      exactly(t, (await verify([root])).findings, ['3 raw.not-zstd'])
    }
  })
})

t.test('check 4: the tables', async (t) => {
  t.test('a table of the channel is not listed', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.files = m.files.filter((f) => f.name !== 'trades.parquet') } })
    exactly(t, (await verify([root])).findings, ['4 table.missing'])
  })
  t.test('a table that is not Parquet', async (t) => {
    const { root } = await oneHour({
      writeTable: async (_, path) => {
        const bytes = Buffer.from('not parquet')
        await writeFile(path, bytes)
        return bytes
      },
    })
    exactly(t, (await verify([root])).findings, ['4 table.unreadable'])
  })
  t.test('a changed column type', async (t) => {
    const priceAsText = (table: TableName) => tableSchema(table).map((e) => (e.name === 'price' ? { name: 'price', type: 'BYTE_ARRAY' as const, repetition_type: 'REQUIRED' as const, converted_type: 'UTF8' as const } : e))
    const { root } = await oneHour({ writeTable: writeWithHyparquet(priceAsText, { price: (text) => text }) })
    const r = await verify([root])
    t.ok(r.findings.length > 0 && r.findings.every((f) => f.check === 4 && f.code === 'table.schema' && /column price/.test(f.detail)), dump(r.findings))
  })
  t.test('a wrong row count', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.files[1]!.rows++ } })
    exactly(t, (await verify([root])).findings, ['4 table.row-count'])
  })
  t.test('a footer that states more rows than its row groups hold', async (t) => {
    const { root } = await oneHour({ writeTable: writeWithHyparquet(tableSchema, { footerRowsOverstated: 1 }), edit: (m) => { m.files[1]!.rows++ } })
    const r = await verify([root])
    exactly(t, r.findings, ['4 table.row-count'])
    t.match(r.findings[0]!.detail, /the row groups hold 3 rows, the footer states 4/)
  })
  t.test('raw_index repeating (rows of one frame) is fine', async (t) => {
    const { root } = await oneHour({ editRows: (_, rows) => rows.map((r, i) => (i === 1 ? { ...r, raw_index: 0, receive_time: rows[0]!.receive_time } : r)) })
    exactly(t, (await verify([root])).findings, [])
  })
  t.test('raw_index decreasing', async (t) => {
    const { root } = await oneHour({ editRows: (_, rows) => rows.map((r, i) => (i === 2 ? { ...r, raw_index: 0, receive_time: rows[0]!.receive_time } : r)) })
    exactly(t, (await verify([root])).findings, ['4 table.raw-index-decreasing'])
  })
  t.test('a raw_index with no line', async (t) => {
    const { root } = await oneHour({ editRows: (_, rows) => rows.map((r, i) => (i === 2 ? { ...r, raw_index: 7 } : r)) })
    exactly(t, (await verify([root])).findings, ['4 table.raw-index-missing'])
  })
  t.test('the compression codec is not part of the v1 schema: Snappy pages pass', async (t) => {
    const { root, table } = await oneHour({ writeTable: writeWithHyparquet(tableSchema) })
    const bytes = await readFile(table)
    const md = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength))
    t.same([...new Set(md.row_groups.flatMap((g) => g.columns.map((c) => c.meta_data?.codec)))], ['SNAPPY'])
    exactly(t, (await verify([root])).findings, [])
  })
  t.test('a row without receive_time (a column v1 requires, written optional)', async (t) => {
    const optionalReceiveTime = (table: TableName) => tableSchema(table).map((e) => (e.name === 'receive_time' ? { ...e, repetition_type: 'OPTIONAL' as const } : e))
    const { root } = await oneHour({ writeTable: writeWithHyparquet(optionalReceiveTime), editRows: (_, rows) => rows.map((r, i) => (i === 1 ? { ...r, receive_time: null as unknown as bigint } : r)) })
    const r = await verify([root])
    exactly(t, r.findings, ['4 table.schema', '4 table.receive-time'])
    t.match(r.findings.find((f) => f.code === 'table.receive-time')!.detail, /row 1 has no receive_time/)
  })
  t.test('a negative raw_index (which TableWriter refuses to write) names no line', async (t) => {
    const { root } = await oneHour({ writeTable: writeWithHyparquet(tableSchema), editRows: (_, rows) => rows.map((r, i) => (i === 0 ? { ...r, raw_index: -1 } : r)) })
    const r = await verify([root])
    exactly(t, r.findings, ['4 table.raw-index-missing'])
    t.match(r.findings[0]!.detail, /row 0: raw_index -1 names no line/)
  })
  t.test('a wrong receive_time', async (t) => {
    const { root } = await oneHour({ editRows: (_, rows) => rows.map((r, i) => (i === 1 ? { ...r, receive_time: r.receive_time + 1n } : r)) })
    const r = await verify([root])
    exactly(t, r.findings, ['4 table.receive-time'])
    t.match(r.findings[0]!.detail, /row 1: receive_time .* is not the frame time .* of raw line 2/)
  })
  t.test('channel book: book_snapshots and book_deltas, side required', async (t) => {
    const bookHour = (o: Partial<SealHourOptions> = {}) => oneHour({ channel: 'book', frames: [depthSnapshot(T0 + S, 1000), depthUpdate(T0 + 2n * S, 1001, 1002)], ...o })
    const ok = await bookHour()
    t.same(ok.h.manifest.files.map((f) => [f.name, f.rows]), [['raw.jsonl.zst', 2], ['book_snapshots.parquet', 2], ['book_deltas.parquet', 2]])
    exactly(t, (await verify([ok.root])).findings, [])
    const unlisted = await bookHour({ edit: (m) => { m.files = m.files.filter((f) => f.name !== 'book_deltas.parquet') } })
    exactly(t, (await verify([unlisted.root])).findings, ['4 table.missing'])
    const optionalSide = await bookHour({
      writeTable: async (table, path, rows) => {
        const w = await TableWriter.open(path, table === 'book_deltas' ? 'trades' : table, { createdBy: 'pipe test' })
        await w.write(rows)
        await w.finish()
        return readFile(path)
      },
    })
    const r = await verify([optionalSide.root])
    exactly(t, r.findings, ['4 table.schema'])
    t.match(r.findings[0]!.detail, /column side: repetition is OPTIONAL, v1 has REQUIRED/)
    const snapshotTime = await bookHour({ editRows: (table, rows) => (table === 'book_snapshots' ? rows.map((row, i) => (i === 1 ? { ...row, receive_time: row.receive_time + 1n } : row)) : rows) })
    exactly(t, (await verify([snapshotTime.root])).findings, ['4 table.receive-time'])
  })
  t.test('channels funding and liquidations have no tables: the raw file alone passes', async (t) => {
    for (const channel of ['funding', 'liquidations'] as const) {
      const { root, h } = await oneHour({ channel, venue: 'no-adapter' })
      t.same(h.manifest.files.map((f) => f.name), ['raw.jsonl.zst'])
      exactly(t, (await verify([root])).findings, [])
    }
  })
})

/**
 * A `writeTable` hook that writes with hyparquet-writer instead of TableWriter, so that a test can write a
 * schema, rows or a footer TableWriter never would: `price` gives the price column's data (unscaled DECIMAL
 * by default), and the footer's num_rows can overstate the rows the row groups hold.
 */
function writeWithHyparquet(schemaOf: (table: TableName) => readonly object[], o: { price?: (text: string) => unknown; footerRowsOverstated?: number } = {}) {
  const price = o.price ?? toDecimal38_18
  return async (table: TableName, path: string, rows: TableRow[]): Promise<Uint8Array> => {
    const columnData = [
      { name: 'raw_index', data: rows.map((r) => BigInt(r.raw_index)) },
      { name: 'instrument', data: rows.map((r) => r.instrument) },
      { name: 'trade_id', data: rows.map((r) => r.trade_id) },
      { name: 'side', data: rows.map((r) => r.side) },
      { name: 'price', data: rows.map((r) => price(r.price)) },
      { name: 'size', data: rows.map((r) => toDecimal38_18(r.size)) },
      { name: 'exchange_time', data: rows.map((r) => r.exchange_time) },
      { name: 'receive_time', data: rows.map((r) => r.receive_time) },
    ]
    const writer = new ByteWriter()
    const parquet = new ParquetWriter({ writer, schema: schemaOf(table) as never })
    parquet.write({ columnData })
    parquet.num_rows += BigInt(o.footerRowsOverstated ?? 0)
    parquet.finish()
    const bytes = new Uint8Array(writer.getBuffer())
    await writeFile(path, bytes)
    return bytes
  }
}

t.test('check 1: the completeness a manifest states agrees with the rest of it', async (t) => {
  const gap = { instrument: 'BTCUSDT', after_id: '100', before_id: '102' }
  const failure = { instrument: 'BTCUSDT', receive_time: formatTime(T0 + S), expected: '1', computed: '2' }
  for (const [what, edit] of [
    ['complete with a reason', (m) => { m.completeness = { status: 'complete', reasons: ['journal_torn'] } }],
    ['partial without a reason', (m) => { m.completeness = { status: 'partial', reasons: [] } }],
    ['missing with frames', (m) => { m.completeness = { status: 'missing', reasons: ['recorder_down'] } }],
    ['sequence_gaps without the reason', (m) => { m.sequence_gaps = [gap] }],
    ['sequence_gap without sequence_gaps', (m) => { m.completeness = { status: 'partial', reasons: ['sequence_gap'] } }],
    ['checksum_failures without the reason', (m) => { m.checksum_failures = [failure] }],
    ['checksum_failure without checksum_failures', (m) => { m.completeness = { status: 'partial', reasons: ['checksum_failure'] } }],
    ['unrepresentable_value without unrepresentable_frames', (m) => { m.completeness = { status: 'partial', reasons: ['unrepresentable_value'] } }],
    ['reconnect without a reconnect window', (m) => { m.completeness = { status: 'partial', reasons: ['reconnect'] } }],
  ] as [string, (m: HourlyManifest) => void][]) {
    t.test(what, async (t) => {
      const { root } = await oneHour({ edit })
      exactly(t, (await verify([root])).findings, ['1 manifest.completeness'])
    })
  }
  t.test('each stated with its entries passes', async (t) => {
    const { root } = await oneHour({
      edit: (m) => {
        m.sequence_gaps = [gap]
        m.checksum_failures = [failure]
        // The verifier does not check close_code (spec): any status code passes.
        m.replicas[0]!.reconnect_windows = [{ start_time: formatTime(T0 + 10n * S), end_time: formatTime(T0 + 12n * S), close_code: 4999 }]
        m.completeness = { status: 'partial', reasons: ['reconnect', 'sequence_gap', 'checksum_failure'] }
      },
    })
    exactly(t, (await verify([root])).findings, [])
  })
  t.test('a missing hour without frames passes', async (t) => {
    const { root } = await oneHour({ frames: [], edit: (m) => { m.completeness = { status: 'missing', reasons: ['recorder_down'] } } })
    exactly(t, (await verify([root])).findings, [])
  })
  t.test('unrepresentable_frames without the reason, or beyond the raw file', async (t) => {
    const without = await oneHour({ editRows: (_t, rows) => rows.filter((r) => r.raw_index !== 1), edit: (m) => { m.unrepresentable_frames = [1] } })
    exactly(t, (await verify([without.root])).findings, ['1 manifest.completeness'])
    const beyond = await oneHour({ edit: (m) => { m.unrepresentable_frames = [3]; m.completeness = { status: 'partial', reasons: ['unrepresentable_value'] } } })
    exactly(t, (await verify([beyond.root])).findings, ['1 manifest.completeness'])
  })
})

t.test('check 4: a frame listed as unrepresentable has no rows', async (t) => {
  const partial = (m: HourlyManifest) => {
    m.unrepresentable_frames = [1]
    m.completeness = { status: 'partial', reasons: ['unrepresentable_value'] }
  }
  const ok = await oneHour({ editRows: (_t, rows) => rows.filter((r) => r.raw_index !== 1), edit: partial })
  exactly(t, (await verify([ok.root])).findings, [])
  const bad = await oneHour({ edit: partial })
  const r = await verify([bad.root])
  exactly(t, r.findings, ['4 table.unrepresentable-row'])
  t.match(r.findings[0]!.path, /trades\.parquet$/)
})

t.test('check 8: the replicas\' frame counts and their agreement', async (t) => {
  t.test('a replica\'s frames', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.replicas[1]!.frames++ } })
    const r = await verify([root])
    exactly(t, r.findings, ['8 replicas.frames'])
    t.match(r.findings[0]!.detail, /replica b: frames is 4, the raw file has 3 lines with its receipt/)
  })
  t.test('both and one_only', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.replica_agreement.both++; m.replica_agreement.one_only-- } })
    exactly(t, (await verify([root])).findings, ['8 replicas.agreement'])
  })
  t.test('not compared when a line could not be read', async (t) => {
    const { root } = await oneHour({ editLine: (l, i) => (i === 0 ? l.replace('{"', '{ "') : l) })
    exactly(t, (await verify([root])).findings, ['3 raw.line-not-canonical'])
  })
})

t.test('check 5: the hash chain', async (t) => {
  t.test('a broken link', async (t) => {
    const root = await freshRoot()
    const [h0] = await sealHours({ root }, T0, 1, null, key, (_, s) => frames(s))
    await sealHour({ root, hourStart: T0 + HOUR_NS, frames: frames(T0 + HOUR_NS), previous: h0!.blake3.replace(/^./, (c) => (c === '0' ? '1' : '0')), key })
    exactly(t, (await verify([root])).findings, ['5 chain.previous-hash'])
  })
  t.test('a null link inside the chain', async (t) => {
    const root = await freshRoot()
    await sealHours({ root }, T0, 1, null, key, (_, s) => frames(s))
    await sealHour({ root, hourStart: T0 + HOUR_NS, frames: frames(T0 + HOUR_NS), previous: null, key })
    exactly(t, (await verify([root])).findings, ['5 chain.previous-hash'])
  })
  t.test('a skipped hour', async (t) => {
    const root = await freshRoot()
    const [h0] = await sealHours({ root }, T0 - HOUR_NS, 1, null, key, (_, s) => frames(s))
    await sealHour({ root, hourStart: T0 + HOUR_NS, frames: frames(T0 + HOUR_NS), previous: h0!.blake3, key })
    const r = await verify([root])
    exactly(t, r.findings, ['5 chain.hour-skipped'])
    t.match(r.findings[0]!.detail, /hour 2026-10-03T22 has no manifest/)
  })
  t.test('an hour directory without its manifest is a skipped hour', async (t) => {
    const root = await freshRoot()
    const hours = await sealHours({ root }, T0 - HOUR_NS, 3, null, key, (_, s) => frames(s))
    await unlink(hours[1]!.path)
    await unlink(`${hours[1]!.path}.sig`)
    const r = await verify([root])
    exactly(t, r.findings, ['5 chain.hour-skipped'])
    t.equal(r.hours, 2)
  })
  t.test('a daily manifest missing an hour', async (t) => {
    const root = await freshRoot()
    const hours = await sealHours({ root }, T0, 2, null, key, (i, s) => frames(s, 100 + 3 * i))
    await sealDay({ root, date: '2026-10-03', hours: hours.slice(0, 1), previous: null, key })
    const r = await verify([root])
    exactly(t, r.findings, ['5 chain.daily-hours'])
    t.match(r.findings[0]!.detail, /hour 23 has an hourly manifest but the daily manifest does not list it/)
  })
  t.test('a daily manifest with a wrong hash or status', async (t) => {
    const root = await freshRoot()
    const hours = await sealHours({ root }, T0, 2, null, key, (i, s) => frames(s, 100 + 3 * i))
    await sealDay({ root, date: '2026-10-03', hours, previous: null, key, edit: (m) => { m.hours[0]!.status = 'partial'; m.hours[1]!.blake3 = '0'.repeat(64) } })
    exactly(t, (await verify([root])).findings, ['5 chain.daily-hours', '5 chain.daily-hours'])
  })
  t.test('a daily manifest lists its hours in order, each once, only hours that have a manifest', async (t) => {
    const root = await freshRoot()
    const hours = await sealHours({ root }, T0, 2, null, key, (i, s) => frames(s, 100 + 3 * i))
    const day = (edit: (m: import('../src/formats/record/manifest.js').DailyManifest) => void) => sealDay({ root, date: '2026-10-03', hours, previous: null, key, edit })
    await day(() => {})
    exactly(t, (await verify([root])).findings, [])
    await day((m) => { m.hours.reverse() })
    let r = await verify([root])
    exactly(t, r.findings, ['5 chain.daily-hours'])
    t.match(r.findings[0]!.detail, /hours\[1\]: hour 22 is listed after hour 23; hours are in order/)
    await day((m) => { m.hours.push({ ...m.hours[1]! }) })
    r = await verify([root])
    exactly(t, r.findings, ['5 chain.daily-hours'])
    t.match(r.findings[0]!.detail, /hours\[2\]: hour 23 is listed twice/)
    await day((m) => { m.hours.unshift({ hour: '21', blake3: m.hours[0]!.blake3, status: 'complete' }) })
    r = await verify([root])
    exactly(t, r.findings, ['5 chain.daily-hours'])
    t.match(r.findings[0]!.detail, /hours\[0\]: hour 21 has no hourly manifest in any root/)
  })
  t.test('daily manifests chain: a wrong link, or null inside the chain', async (t) => {
    const root = await freshRoot()
    const { days } = await twoDays(root)
    for (const previous of [days[0]!.blake3.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')), null]) {
      await sealDay({ root, date: '2026-10-04', hours: [], previous, key, edit: (m) => { m.hours = days[1]!.manifest.hours } })
      exactly(t, (await verify([root])).findings, ['5 chain.previous-hash'])
    }
  })
  t.test('a day without its daily manifest inside the chain', async (t) => {
    const root = await freshRoot()
    const { days } = await twoDays(root)
    await unlink(days[0]!.path)
    await unlink(`${days[0]!.path}.sig`)
    exactly(t, (await verify([root])).findings, ['5 chain.day-skipped'])
  })
  t.test('a missing day: its hours and its daily manifest', async (t) => {
    const root = await freshRoot()
    const d1 = await sealHours({ root }, T0, 1, null, key, (_, s) => frames(s))
    const day1 = await sealDay({ root, date: '2026-10-03', hours: d1, previous: null, key })
    const d3 = await sealHours({ root }, T0 + 26n * HOUR_NS, 1, d1[0]!.blake3, key, (_, s) => frames(s))
    await sealDay({ root, date: '2026-10-05', hours: d3, previous: day1.blake3, key })
    exactly(t, (await verify([root])).findings, ['5 chain.hour-skipped', '5 chain.day-skipped'])
  })
  t.test('a fork: one manifest path held with different bytes in two roots, reported once', async (t) => {
    const { root } = await oneHour()
    const copy = await freshRoot()
    await cp(root, copy, { recursive: true })
    await sealHour({ root: copy, hourStart: T0, frames: frames(T0, 300), previous: null, key })
    const r = await verify([root, copy])
    exactly(t, r.findings, ['5 chain.fork'])
    t.match(r.findings[0]!.detail, /held with 2 different contents/)
  })
  t.test('a daily manifest held with different bytes in two roots is a fork too', async (t) => {
    const root = await freshRoot()
    const hours = await sealHours({ root }, T0, 1, null, key, (_, s) => frames(s))
    await sealDay({ root, date: '2026-10-03', hours, previous: null, key })
    const copy = await freshRoot()
    await cp(root, copy, { recursive: true })
    await sealDay({ root: copy, date: '2026-10-03', hours, previous: null, key, edit: (m) => { Object.assign(m, { note: 'resealed' }) } })
    const r = await verify([root, copy])
    exactly(t, r.findings, ['5 chain.fork'])
    t.match(r.findings[0]!.path, /date=2026-10-03\/manifest\.json$/)
  })
  t.test('hours of one chain held in different roots are one chain', async (t) => {
    const first = await freshRoot()
    const second = await freshRoot()
    const [h22] = await sealHours({ root: first }, T0, 1, null, key, (_, s) => frames(s))
    await sealHour({ root: second, hourStart: T0 + HOUR_NS, frames: frames(T0 + HOUR_NS, 200), previous: h22!.blake3, key })
    const both = await verify([first, second])
    exactly(t, both.findings, [])
    t.match(both, { hours: 2, chains: 1 })
    exactly(t, (await verify([second])).findings, ['5 chain.hour-skipped'])
    const unlinked = await freshRoot()
    await sealHour({ root: unlinked, hourStart: T0 + HOUR_NS, frames: frames(T0 + HOUR_NS, 200), previous: 'f'.repeat(64), key })
    exactly(t, (await verify([first, unlinked])).findings, ['5 chain.previous-hash'])
  })
  t.test('a copy in a second root whose table differs is checked again there', async (t) => {
    const { root } = await oneHour()
    const copy = await freshRoot()
    await cp(root, copy, { recursive: true })
    const table = join(copy, 'recorder=rec-1/venue=binance/channel=trades/date=2026-10-03/hour=22/trades.parquet')
    await flipBit(table, (b) => b.length - 30)
    const r = await verify([root, copy])
    includes(t, r.findings, ['2 file.blake3'])
    t.ok(r.findings.every((f) => f.path.startsWith(copy)), dump(r.findings))
  })
  t.test('a manifest in another hour directory', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.interval = { start_time: formatTime(T0 + HOUR_NS), end_time: formatTime(T0 + 2n * HOUR_NS) } } })
    exactly(t, (await verify([root])).findings, ['5 chain.interval'])
  })
  t.test('a manifest of another channel', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.recorder = 'rec-2' } })
    exactly(t, (await verify([root])).findings, ['5 chain.identity'])
  })
  t.test('a daily manifest of another venue', async (t) => {
    const root = await freshRoot()
    const hours = await sealHours({ root }, T0, 1, null, key, (_, s) => frames(s))
    await sealDay({ root, date: '2026-10-03', hours, previous: null, key, edit: (m) => { m.venue = 'other' } })
    const r = await verify([root])
    exactly(t, r.findings, ['5 chain.identity'])
    t.match(r.findings[0]!.path, /date=2026-10-03\/manifest\.json$/)
  })
})

t.test('--from/--to: the chain link at the --from boundary', async (t) => {
  const root = await freshRoot()
  const { hours, days } = await twoDays(root)
  const r = await verify([root], { from: '2026-10-04' })
  exactly(t, r.findings, [])
  t.match(r, { hours: 2, days: 1 })
  t.match(await verify([root], { to: '2026-10-03' }), { hours: 2, days: 1, findings: [] })

  // The earlier day is held: the link into --from is checked against it.
  const tampered = await freshRoot()
  await cp(root, tampered, { recursive: true })
  const h23 = join(tampered, 'recorder=rec-1/venue=binance/channel=trades/date=2026-10-03/hour=23/manifest.json')
  await writeManifest(join(h23, '..'), { ...hours[1]!.manifest, replica_agreement: { both: 9, one_only: 9, conflict: 0 } }, key)
  const d1 = join(tampered, 'recorder=rec-1/venue=binance/channel=trades/date=2026-10-03')
  await writeManifest(d1, { ...days[0]!.manifest, hours: [] }, key)
  exactly(t, (await verify([tampered], { from: '2026-10-04' })).findings, ['5 chain.previous-hash', '5 chain.previous-hash'])

  // The earlier day is not held: accepted with --from, a skipped hour and day without.
  const pruned = await freshRoot()
  await cp(root, pruned, { recursive: true })
  await rm(d1.replace(tampered, pruned), { recursive: true })
  exactly(t, (await verify([pruned], { from: '2026-10-04' })).findings, [])
  exactly(t, (await verify([pruned])).findings, ['5 chain.hour-skipped', '5 chain.day-skipped'])
})

t.test('check 6: signatures', async (t) => {
  t.test('signed by a key the JWK Set does not hold', async (t) => {
    const { root } = await oneHour({ signWith: other.key })
    exactly(t, (await verify([root])).findings, ['6 sig.unknown-key'])
  })
  t.test('signed by a key that expired before the hour ended', async (t) => {
    const { root } = await oneHour()
    const expired = await testKey(1, '2020-01-01T00:00:00.000000000Z', '2026-10-03T22:30:00.000000000Z')
    exactly(t, (await verify([root], { jwks: expired.jwks })).findings, ['6 sig.key-not-valid-at-time'])
    const notYet = await testKey(1, '2026-10-03T23:00:00.000000001Z')
    exactly(t, (await verify([root], { jwks: notYet.jwks })).findings, ['6 sig.key-not-valid-at-time'])
    const atEnd = await testKey(1, '2026-10-03T23:00:00.000000000Z')
    exactly(t, (await verify([root], { jwks: atEnd.jwks })).findings, [])
  })
  t.test('a manifest whose interval is malformed is judged at the end of its directory\'s hour', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.interval.end_time = 'later' } })
    const fromHourEnd = await testKey(1, '2026-10-03T23:00:00.000000000Z')
    exactly(t, (await verify([root], { jwks: fromHourEnd.jwks })).findings, ['1 manifest.field'])
    const afterHourEnd = await testKey(1, '2026-10-03T23:00:00.000000001Z')
    exactly(t, (await verify([root], { jwks: afterHourEnd.jwks })).findings, ['1 manifest.field', '6 sig.key-not-valid-at-time'])
  })
  t.test('a manifest of an unknown major is not signature-checked', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.format_version = 2 }, signWith: other.key })
    exactly(t, (await verify([root])).findings, ['1 manifest.unknown-version'])
  })
  t.test('a daily manifest is judged at the next day 00:00', async (t) => {
    const root = await freshRoot()
    const hours = await sealHours({ root }, T0, 1, null, key, (_, s) => frames(s))
    await sealDay({ root, date: '2026-10-03', hours, previous: null, key })
    const until = await testKey(1, '2020-01-01T00:00:00.000000000Z', '2026-10-04T00:00:00.000000000Z')
    const r = await verify([root], { jwks: until.jwks })
    exactly(t, r.findings, ['6 sig.key-not-valid-at-time'])
    t.match(r.findings[0]!.path, /date=2026-10-03\/manifest\.json\.sig$/)
  })
  t.test('a missing signature', async (t) => {
    const { root, h } = await oneHour()
    await unlink(`${h.path}.sig`)
    exactly(t, (await verify([root])).findings, ['6 sig.missing'])
  })
  t.test('a signature file that is not a detached JWS', async (t) => {
    const { root, h } = await oneHour()
    await writeFile(`${h.path}.sig`, 'not a signature')
    exactly(t, (await verify([root])).findings, ['6 sig.malformed'])
  })
  t.test('bit flip in the signature', async (t) => {
    const { root, h } = await oneHour()
    await flipBit(`${h.path}.sig`, (b) => b.length - 20)
    exactly(t, (await verify([root])).findings, ['6 sig.bad-signature'])
  })
  t.test('every root\'s copy of a signature is checked', async (t) => {
    const { root, h } = await oneHour()
    const copy = await freshRoot()
    await cp(root, copy, { recursive: true })
    await flipBit(`${h.path.replace(root, copy)}.sig`, (b) => b.length - 20)
    const r = await verify([root, copy])
    exactly(t, r.findings, ['6 sig.bad-signature'])
    t.ok(r.findings[0]!.path.startsWith(copy), r.findings[0]!.path)
  })
  t.test('bit flip in a daily manifest: its signature, and the next day\'s link', async (t) => {
    const root = await freshRoot()
    const { days } = await twoDays(root)
    await flipBit(days[0]!.path, (b) => b.indexOf('"date":"2026-10-03"') + 17) // 2026-10-03 -> 2026-10-02
    const r = await verify([root])
    exactly(t, r.findings, ['5 chain.interval', '6 sig.bad-signature', '5 chain.previous-hash'])
    t.match(r.findings.find((f) => f.check === 6)!.path, /date=2026-10-03\/manifest\.json\.sig$/)
  })
  t.test('bit flip in the manifest', async (t) => {
    const { root, h } = await oneHour()
    await flipBit(h.path, (b) => b.indexOf('"covered_ns":3') + 13)
    exactly(t, (await verify([root])).findings, ['6 sig.bad-signature'])
  })
})

t.test('check 7: each receipt pairs offset and bound, bound ≥ |offset|', async (t) => {
  t.test('bound below the offset', async (t) => {
    const { root } = await oneHour({ frames: [trade(T0 + S, 1, { replicas: ['a'], offset: -500_000n, bound: 400_000n })] })
    const r = await verify([root])
    exactly(t, r.findings, ['7 clock.bound-below-offset'])
    t.equal(r.findings[0]!.line, 1)
  })
  t.test('an offset without a bound', async (t) => {
    const { root } = await oneHour({ editLine: (l, i) => (i === 0 ? l.replace(/"clock_error_bound":\d+,/g, '') : l) })
    includes(t, (await verify([root])).findings, ['7 clock.pair', '7 clock.pair'])
  })
  t.test('a negative offset with a bound equal to its absolute value passes; a negative bound fails', async (t) => {
    const equal = await oneHour({ frames: [trade(T0 + S, 1, { replicas: ['a'], offset: -500_000n, bound: 500_000n })] })
    exactly(t, (await verify([equal.root])).findings, [])
    const negative = await oneHour({ frames: [trade(T0 + S, 1, { replicas: ['a'], offset: 0n, bound: 0n })], editLine: (l) => l.replace('"clock_error_bound":0', '"clock_error_bound":-1') })
    const r = await verify([negative.root])
    // A negative bound bounds nothing: check 8 counts the receipt as unbounded, which the manifest's clock denies.
    exactly(t, r.findings, ['7 clock.bound-negative', '8 clock.summary', '8 clock.summary'])
  })
})

t.test('check 8: the clock summaries and clock_offset_unknown', async (t) => {
  t.test('a wrong error_bound_max', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.replicas[0]!.clock!.error_bound_max! += 1 } })
    exactly(t, (await verify([root])).findings, ['8 clock.summary'])
  })
  t.test('a wrong unbounded count', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.replicas[1]!.clock!.unbounded = 1 } })
    exactly(t, (await verify([root])).findings, ['8 clock.summary'])
  })
  t.test('source without error_bound_max', async (t) => {
    const { root } = await oneHour({ edit: (m) => { delete m.replicas[0]!.clock!.error_bound_max } })
    includes(t, (await verify([root])).findings, ['8 clock.summary'])
  })
  t.test('error_bound_max without source', async (t) => {
    const { root } = await oneHour({ edit: (m) => { delete m.replicas[0]!.clock!.source } })
    const r = await verify([root])
    exactly(t, r.findings, ['8 clock.summary', '8 clock.summary'])
    t.match(r.findings.map((f) => f.detail), [/replica a: clock\.source is absent but clock\.error_bound_max is present/, /replica a: clock\.source is absent, but 2 receipts carry clock_error_bound/])
  })
  t.test('clock on a replica without receipts, none on one with', async (t) => {
    const a = await oneHour({ frames: [trade(T0 + S, 1, { replicas: ['a'] })], edit: (m) => { m.replicas[1]!.clock = { unbounded: 0 } } })
    exactly(t, (await verify([a.root])).findings, ['8 clock.summary'])
    const b = await oneHour({ edit: (m) => { delete m.replicas[1]!.clock } })
    exactly(t, (await verify([b.root])).findings, ['8 clock.summary'])
  })
  t.test('a replica listed twice', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.replicas.push({ ...m.replicas[1]! }) } })
    const r = await verify([root])
    exactly(t, r.findings, ['8 clock.summary'])
    t.match(r.findings[0]!.detail, /replica b is listed twice/)
  })
  t.test('unbounded receipts: no source, no error_bound_max', async (t) => {
    const { root, h } = await oneHour({ frames: [trade(T0 + S, 1, { bound: null }), ...frames(T0).slice(1)] })
    t.same(h.manifest.completeness.reasons, ['clock_offset_unknown'])
    exactly(t, (await verify([root])).findings, [])
  })
  t.test('a replica\'s unbounded receipts without clock_offset_unknown: the other replica bounds the line', async (t) => {
    const half = trade(T0 + S, 1)
    half.receipts[0] = { replica: 'a', connection: 'a-1', receiveTime: half.receipts[0]!.receiveTime }
    const { root, h } = await oneHour({ frames: [half, ...frames(T0).slice(1)] })
    t.match(h.manifest, { replicas: [{ clock: { source: 'nts', unbounded: 1 } }], completeness: { status: 'complete', reasons: [] } }, 'the case: a unbounded once, no reason')
    exactly(t, (await verify([root])).findings, [])
    const claimed = await oneHour({ frames: [half, ...frames(T0).slice(1)], edit: (m) => { m.completeness = { status: 'partial', reasons: ['clock_offset_unknown'] } } })
    exactly(t, (await verify([claimed.root])).findings, ['8 clock.reason'])
  })
  t.test('clock_offset_unknown listed with every line bounded', async (t) => {
    const { root } = await oneHour({ edit: (m) => { m.completeness = { status: 'partial', reasons: ['clock_offset_unknown'] } } })
    exactly(t, (await verify([root])).findings, ['8 clock.reason'])
  })
  t.test('clock_offset_unknown missing with a line unbounded', async (t) => {
    const { root } = await oneHour({ frames: [trade(T0 + S, 1, { bound: null })], edit: (m) => { m.completeness = { status: 'complete', reasons: [] } } })
    exactly(t, (await verify([root])).findings, ['8 clock.reason'])
  })
})

t.test('check 9: gap_free_runs', async (t) => {
  const run = (o: Partial<{ start: bigint; end: bigint; connection: string }> = {}) => ({
    a: [{ instrument: 'BTCUSDT', connection: o.connection ?? 'a-1', start_time: formatTime(o.start ?? T0), end_time: formatTime(o.end ?? T0 + HOUR_NS) }],
  })
  t.test('within the hour, a known connection', async (t) => {
    exactly(t, (await verify([(await oneHour({ gapFreeRuns: run() })).root])).findings, [])
  })
  t.test('outside the hour', async (t) => {
    exactly(t, (await verify([(await oneHour({ gapFreeRuns: run({ start: T0 - 1n }) })).root])).findings, ['9 runs.outside-hour'])
    exactly(t, (await verify([(await oneHour({ gapFreeRuns: run({ end: T0 + HOUR_NS + 1n }) })).root])).findings, ['9 runs.outside-hour'])
  })
  t.test('not ending after its start', async (t) => {
    exactly(t, (await verify([(await oneHour({ gapFreeRuns: run({ start: T0 + S, end: T0 + S }) })).root])).findings, ['9 runs.end-not-after-start'])
  })
  t.test('with the raw file unreadable, the connection is not judged, the times are', async (t) => {
    const { root, h } = await oneHour({ gapFreeRuns: { a: [...run({ connection: 'a-9' }).a, ...run({ start: T0 + S, end: T0 + S }).a] } })
    await replaceRawFile(h, '')
    exactly(t, (await verify([root])).findings, ['3 raw.not-zstd', '9 runs.end-not-after-start'])
  })
  t.test('naming an unknown connection (or another replica\'s)', async (t) => {
    exactly(t, (await verify([(await oneHour({ gapFreeRuns: run({ connection: 'a-9' }) })).root])).findings, ['9 runs.unknown-connection'])
    exactly(t, (await verify([(await oneHour({ gapFreeRuns: run({ connection: 'b-1' }) })).root])).findings, ['9 runs.unknown-connection'])
  })
})

t.test('check 10: conflicts', async (t) => {
  const hour = (conflicts: SealHourOptions['conflicts']) => oneHour({ frames: conflictFrames(T0), conflicts })
  t.test('a valid conflict passes, its lines listed in any order', async (t) => {
    exactly(t, (await verify([(await hour(conflictOf())).root])).findings, [])
    const reversed = (lines: readonly string[]) => conflictOf()(lines).map((c) => ({ ...c, lines: [...c.lines].reverse() }))
    exactly(t, (await verify([(await hour(reversed)).root])).findings, [])
  })
  t.test('a line with a wrong hash', async (t) => {
    const r = await verify([(await hour((lines) => conflictOf('500', [b3(lines[0]!), b3(lines[0]!)])(lines))).root])
    exactly(t, r.findings, ['10 conflict.blake3'])
    t.equal(r.findings[0]!.line, 2)
  })
  t.test('a hash of the line with its newline is wrong', async (t) => {
    exactly(t, (await verify([(await hour((lines) => conflictOf('500', [b3(lines[0]! + '\n'), b3(lines[1]!)])(lines))).root])).findings, ['10 conflict.blake3'])
  })
  t.test('a raw_index beyond the file', async (t) => {
    const r = await verify([(await hour((lines) => [{ instrument: 'BTCUSDT', trade_id: '500', lines: [{ raw_index: 0, blake3: b3(lines[0]!) }, { raw_index: 3, blake3: b3('x') }] }])).root])
    exactly(t, r.findings, ['10 conflict.raw-index'])
  })
  t.test('lines that do not carry the trade id', async (t) => {
    exactly(t, (await verify([(await hour(conflictOf('501'))).root])).findings, ['10 conflict.trade-id', '10 conflict.trade-id'])
  })
  t.test('lines that carry the trade id of another instrument', async (t) => {
    const otherInstrument = (lines: readonly string[]) => conflictOf()(lines).map((c) => ({ ...c, instrument: 'ETHUSDT' }))
    exactly(t, (await verify([(await hour(otherInstrument)).root])).findings, ['10 conflict.trade-id', '10 conflict.trade-id'])
  })
  t.test('a venue without an adapter: the payload text must contain the trade id', async (t) => {
    const textHour = (tradeId: string) => oneHour({ venue: 'no-adapter', frames: conflictFrames(T0), conflicts: conflictOf(tradeId) })
    exactly(t, (await verify([(await textHour('500')).root])).findings, [])
    exactly(t, (await verify([(await textHour('7777')).root])).findings, ['10 conflict.trade-id', '10 conflict.trade-id'])
  })
})

// ---------------------------------------------------------------------------------------------------
// The pipeline: JSON output, text output, exit codes

const io = captureIO

async function keysFile(set: PublicJwks = jwks): Promise<string> {
  const path = join(base, `jwks-${seq++}.json`)
  await writeJwksFile(path, set)
  return path
}

t.test('pipe run verify: JSON, text and exit codes', async (t) => {
  const root = await freshRoot()
  await twoDays(root)
  const keys = await keysFile()
  const empty = await freshRoot()

  const pass = io(true)
  const ok = await runPipeline(registry, verifyPipeline as never, { root: [root], keys }, pass.settings, false)
  t.equal(ok.exitCode, 0, pass.err())
  const doc = JSON.parse(pass.out()) as Record<string, unknown>
  t.same(doc, { ok: true, hours: 4, days: 2, findings: [], findings_left_out: 0 }, 'exactly the published shape: ok, hours, days, findings, findings_left_out')

  const bad = await oneHour({ edit: (m) => { m.files[0]!.rows++ } })
  const fail = io(true)
  const failed = await runPipeline(registry, verifyPipeline as never, { root: [bad.root], keys }, fail.settings, false)
  t.equal(failed.exitCode, 1)
  const fdoc = JSON.parse(fail.out()) as { ok: boolean; hours: number; findings: VerifyFinding[] }
  t.equal(fdoc.ok, false)
  t.same(Object.keys(fdoc).sort(), ['days', 'findings', 'findings_left_out', 'hours', 'ok'])
  t.same(fdoc.findings[0], { check: 3, code: 'raw.row-count', path: join(bad.h.dir, 'raw.jsonl.zst'), detail: 'the raw file has 3 lines, the manifest lists 4 rows' })

  // A finding about one raw-file line names the line in its detail.
  const f = frames(T0)
  const unordered = await oneHour({ frames: [f[1]!, f[0]!, f[2]!] })
  const lineDoc = io(true)
  t.equal((await runPipeline(registry, verifyPipeline as never, { root: [unordered.root], keys }, lineDoc.settings, false)).exitCode, 1)
  const ldoc = JSON.parse(lineDoc.out()) as { findings: Record<string, unknown>[] }
  t.same(Object.keys(ldoc.findings[0]!).sort(), ['check', 'code', 'detail', 'path'])
  t.match(ldoc.findings[0], { check: 3, code: 'raw.frame-time-decreasing', detail: /^line 2: / })

  const text = io(false)
  t.equal((await runPipeline(registry, verifyPipeline as never, { root: [bad.root], keys }, text.settings, false)).exitCode, 1)
  t.match(text.out(), /hour=22\/raw\.jsonl\.zst: file: raw\.row-count \[check 3\]: the raw file has 3 lines, the manifest lists 4 rows/)
  t.match(text.out(), /verify: FAILED, hours 1, days 1, chains 1, findings 1/)

  for (const [what, options] of [
    ['a bad --from', { root: [root], keys, from: '2026-13-01' }],
    ['--from after --to', { root: [root], keys, from: '2026-10-04', to: '2026-10-03' }],
    ['no --keys', { root: [root] }],
    ['a JWK Set that is not one', { root: [root], keys: join(root, 'recorder=rec-1/venue=binance/channel=trades/date=2026-10-03/manifest.json') }],
    ['a root that does not exist', { root: [join(base, 'nope')], keys }],
    ['a root with no chain', { root: [empty], keys }],
    ['nothing in range', { root: [root], keys, from: '2030-01-01' }],
  ] as const) {
    const u = io(true)
    const r = await runPipeline(registry, verifyPipeline as never, options as never, u.settings, false)
    t.equal(r.exitCode, 2, `${what}: ${u.err()}`)
  }
})

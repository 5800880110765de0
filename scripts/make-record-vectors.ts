/**
 * Builds the record format v1 conformance vectors (test/vectors/record) from the golden sealed day
 * (test/golden/record, scripts/make-golden-record.ts).
 *
 * `<case>_fail/`: a copy of the one to twenty-four golden hours the case needs, with ONE change, and the
 * hour re-signed with the golden key wherever the case is not about signatures, so that only the intended
 * check fails. `reason_<reason>/`: one hour sealed by the sealer from a small simulated journal with one
 * incident; verify passes and the manifest's completeness.reasons contain the reason.
 *
 * Each case folder: `root/` (or several roots), `jwks.json`, `expected.json` and a one-line `README`.
 * expected.json:
 *   {"args": [...pipe run verify arguments, paths relative to the case folder...],
 *    "findings": [{"check", "code"}...]   every pair must be reported (for a reason case: none at all),
 *    "allowed": [{"check", "code"}...]    pairs that may also be reported (what a bit flip also breaks),
 *    "reasons": [...]}                    reason cases: reasons the manifest must carry
 * A `_fail` case passes when verify exits 1, reports every pair of `findings`, and nothing outside
 * `findings` and `allowed`. `hashes.txt` lists the sha256 of every file (sha256sum format).
 *
 * Usage: npm run vectors:record [-- --check] (runs the built script: the sealer's worker threads need it).
 * Like the golden script, it never rewrites existing bytes: when test/vectors/record exists, a fresh build
 * must be identical to it.
 */
import { createHash } from 'node:crypto'
import { cp, mkdir, mkdtemp, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { PassThrough } from 'node:stream'
import { pathToFileURL } from 'node:url'
import { blake3 } from 'hash-wasm'
import { compress, decompress } from 'zstd-napi'
import { runPipeline } from '../src/core/runner.js'
import { JournalBuilder, journalFilePath } from '../src/formats/record/journal/journal.js'
import { signDetached } from '../src/formats/record/keys/jws.js'
import { newSigningKey, publicJwkOf, writeJwksFile, type PrivateSigningJwk } from '../src/formats/record/keys/keys.js'
import { manifestBytes, type DailyManifest, type HourlyManifest } from '../src/formats/record/manifest.js'
import { sealHour } from '../src/formats/record/seal/seal.js'
import { readTableRows, tableSchema, TableWriter } from '../src/formats/record/tables.js'
import { formatTime } from '../src/formats/record/time.js'
import { eventTime, type FrameEvent, type JournalEvent, type TableRow } from '../src/formats/record/types.js'
import { registry } from '../pipelines/registry.js'
import { simulateReplicas, type SimIncident } from '../src/sim/replicas.js'
import { binanceSpot } from '../src/venues/binance.js'
import {
  CREATED_BY, DAY_START, GOLDEN_DIR, HOUR, KEY_VALID_FROM, MINUTE, REPO, S,
  goldenKey, writeHashes, writeOrCheckTree,
} from './make-golden-record.js'
import { parquetWriteBuffer } from 'hyparquet-writer'
import { keySigner } from '../src/formats/record/keys/signer.js'


export const VECTORS_DIR = join(REPO, 'test', 'vectors', 'record')
const CHAIN = 'recorder=golden/venue=binance/channel=trades'
const GOLD_ROOT = join(GOLDEN_DIR, 'root')
const DAY1 = '2026-10-04'
const DAY2 = '2026-10-05'

export interface Pair { check: number; code: string }
export interface Expected { args: string[]; findings: Pair[]; allowed?: Pair[]; reasons?: string[] }

type Key = PrivateSigningJwk
const hourPath = (root: string, date: string, hh: string) => join(root, CHAIN, `date=${date}`, `hour=${hh}`)

async function copyHour(root: string, date: string, hh: string): Promise<string> {
  const to = hourPath(root, date, hh)
  await mkdir(dirname(to), { recursive: true })
  await cp(hourPath(GOLD_ROOT, date, hh), to, { recursive: true })
  return to
}

async function signedWrite(dir: string, bytes: Uint8Array, key: Key): Promise<void> {
  await writeFile(join(dir, 'manifest.json'), bytes)
  await writeFile(join(dir, 'manifest.json.sig'), signDetached(bytes, key))
}

async function readManifest<M = HourlyManifest>(dir: string): Promise<M> {
  return JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as M
}

/** Changes a manifest and signs it again (canonical bytes). */
async function editManifest<M extends HourlyManifest | DailyManifest = HourlyManifest>(dir: string, key: Key, edit: (m: M) => void): Promise<void> {
  const m = await readManifest<M>(dir)
  edit(m)
  await signedWrite(dir, manifestBytes(m), key)
}

/** Sets a listed file's size and BLAKE3 from its bytes on disk. */
async function relist(dir: string, name: string, m: HourlyManifest): Promise<void> {
  const bytes = await readFile(join(dir, name))
  const entry = m.files.find((f) => f.name === name)!
  entry.size = bytes.length
  entry.blake3 = await blake3(bytes)
}

/** Rewrites the raw file's lines (without newlines) and lists its new size and hash (rows unchanged). */
async function editRaw(dir: string, key: Key, edit: (lines: string[]) => string[], editM?: (m: HourlyManifest) => void): Promise<void> {
  const path = join(dir, 'raw.jsonl.zst')
  const text = decompress(await readFile(path)).toString('utf8')
  const lines = edit(text.split('\n').slice(0, -1))
  await writeFile(path, compress(Buffer.from(lines.map((l) => l + '\n').join(''), 'utf8'), { compressionLevel: 3 }))
  const m = await readManifest(dir)
  await relist(dir, 'raw.jsonl.zst', m)
  editM?.(m)
  await signedWrite(dir, manifestBytes(m), key)
}

const SCALE = 10n ** 18n
function decimalText(v: bigint): string {
  const neg = v < 0n
  const a = neg ? -v : v
  const frac = (a % SCALE).toString().padStart(18, '0').replace(/0+$/, '')
  return `${neg ? '-' : ''}${a / SCALE}${frac ? '.' + frac : ''}`
}

async function tableRows(path: string): Promise<TableRow[]> {
  const rows: TableRow[] = []
  for await (const batch of readTableRows(path)) {
    for (const r of batch) rows.push({ ...r, price: decimalText(r.price), size: decimalText(r.size) })
  }
  return rows
}

/** Rewrites trades.parquet with the project's writer from changed rows, and lists it again. */
async function editTable(dir: string, key: Key, edit: (rows: TableRow[]) => TableRow[]): Promise<void> {
  const path = join(dir, 'trades.parquet')
  const rows = edit(await tableRows(path))
  await rm(path)
  const w = await TableWriter.open(path, 'trades', { createdBy: CREATED_BY })
  await w.write(rows)
  await w.finish()
  const m = await readManifest(dir)
  await relist(dir, 'trades.parquet', m)
  await signedWrite(dir, manifestBytes(m), key)
}

async function flipBit(path: string, offset: (size: number) => number, bit = 0): Promise<void> {
  const bytes = await readFile(path)
  const i = offset(bytes.length)
  bytes[i] = bytes[i]! ^ (1 << bit)
  await writeFile(path, bytes)
}

interface Receipt { replica: string; connection: string; receive_time: string; clock_offset?: number; clock_error_bound?: number }
interface Envelope { payload: string; payload_encoding: string; exchange_time?: string; receipts: Receipt[] }
const canonical = (v: unknown) => manifestBytes(v as HourlyManifest).toString('utf8')

interface CaseSpec {
  name: string
  readme: string
  findings: Pair[]
  /** Extra verify arguments (besides --root root --keys jwks.json). */
  args?: string[]
  build: (caseDir: string, root: string, key: Key) => Promise<void>
}

const p = (check: number, code: string): Pair => ({ check, code })
const H0 = (root: string) => copyHour(root, DAY1, '00')
/** 2026-10-05T00: the conflict and the unsynchronised minute; verified with --from 2026-10-05. */
const N0 = (root: string) => copyHour(root, DAY2, '00')
const FROM2 = ['--from', DAY2]

/** The whole day 2026-10-04 with its daily manifest; returns the day's directory. */
async function wholeDay1(root: string): Promise<string> {
  for (let h = 0; h < 24; h++) await copyHour(root, DAY1, String(h).padStart(2, '0'))
  const day = join(root, CHAIN, `date=${DAY1}`)
  for (const f of ['manifest.json', 'manifest.json.sig']) await cp(join(GOLD_ROOT, CHAIN, `date=${DAY1}`, f), join(day, f))
  return day
}

/** The offset of the first hex digit 0-8 of the first `"blake3":"` value in a manifest (flipping bit 0 keeps it hex). */
async function blake3DigitOffset(path: string): Promise<number> {
  const text = await readFile(path, 'latin1')
  const start = text.indexOf('"blake3":"') + '"blake3":"'.length
  let at = start
  while (!/[0-8]/.test(text[at]!)) at++
  if (at >= start + 64) throw new Error('no digit in the hash')
  return at
}

/** Flips one bit of a detached JWS's signature part, keeping it base64url. */
async function flipSignature(path: string): Promise<void> {
  const sig = await readFile(path, 'latin1')
  const at = sig.indexOf('..') + 2 + 20
  const flipped = String.fromCharCode(sig.charCodeAt(at) ^ 1)
  if (!/[A-Za-z0-9_-]/.test(flipped)) throw new Error('flipped signature character not base64url')
  await writeFile(path, sig.slice(0, at) + flipped + sig.slice(at + 1), 'latin1')
}

/** Sets hour 00's completeness (re-signed); the rest of the manifest is the golden one. */
const statesCompleteness = (status: HourlyManifest['completeness']['status'], reasons: HourlyManifest['completeness']['reasons'], more?: (m: HourlyManifest) => void) =>
  async (_c: string, root: string, key: Key) => {
    await editManifest(await H0(root), key, (m) => { m.completeness = { status, reasons }; more?.(m) })
  }

const FAIL_CASES: CaseSpec[] = [
  { name: 'manifest_not_canonical', readme: 'The hourly manifest is the same JSON pretty-printed (not RFC 8785), re-signed.', findings: [p(1, 'manifest.not-canonical')],
    build: async (_c, root, key) => { const d = await H0(root); await signedWrite(d, Buffer.from(JSON.stringify(await readManifest(d), null, 1)), key) } },
  { name: 'unknown_format_version', readme: 'The hourly manifest says format_version 2, re-signed.', findings: [p(1, 'manifest.unknown-version')],
    build: async (_c, root, key) => { await editManifest(await H0(root), key, (m) => { m.format_version = 2 }) } },
  { name: 'raw_bit_flip', readme: 'One bit flipped in the middle of raw.jsonl.zst.', findings: [p(2, 'file.blake3')],
    build: async (_c, root) => { await flipBit(join(await H0(root), 'raw.jsonl.zst'), (n) => n >> 1, 3) } },
  { name: 'parquet_bit_flip', readme: 'One bit flipped in the middle of trades.parquet.', findings: [p(2, 'file.blake3')],
    build: async (_c, root) => { await flipBit(join(await H0(root), 'trades.parquet'), (n) => n >> 1, 3) } },
  { name: 'manifest_bit_flip', readme: 'One bit flipped in manifest.json (a hex digit of the raw file\'s listed BLAKE3), not re-signed.', findings: [p(6, 'sig.bad-signature'), p(2, 'file.blake3')],
    build: async (_c, root) => {
      const path = join(await H0(root), 'manifest.json')
      const at = await blake3DigitOffset(path)
      await flipBit(path, () => at, 0)
    } },
  { name: 'sig_bit_flip', readme: 'One bit flipped in the signature part of manifest.json.sig (still base64url).', findings: [p(6, 'sig.bad-signature')],
    build: async (_c, root) => { await flipSignature(join(await H0(root), 'manifest.json.sig')) } },
  { name: 'daily_manifest_bit_flip', readme: 'The whole day 2026-10-04; one bit flipped in its daily manifest.json (a hex digit of hour 00\'s BLAKE3), not re-signed.', findings: [p(6, 'sig.bad-signature'), p(5, 'chain.daily-hours')],
    build: async (_c, root) => {
      const path = join(await wholeDay1(root), 'manifest.json')
      const at = await blake3DigitOffset(path)
      await flipBit(path, () => at, 0)
    } },
  { name: 'daily_sig_bit_flip', readme: 'The whole day 2026-10-04; one bit flipped in the signature part of its daily manifest.json.sig.', findings: [p(6, 'sig.bad-signature')],
    build: async (_c, root) => { await flipSignature(join(await wholeDay1(root), 'manifest.json.sig')) } },
  { name: 'raw_truncated', readme: 'raw.jsonl.zst truncated by 40 bytes (manifest unchanged).', findings: [p(2, 'file.size'), p(2, 'file.blake3'), p(3, 'raw.zstd-truncated')],
    build: async (_c, root) => { const path = join(await H0(root), 'raw.jsonl.zst'); await truncate(path, (await stat(path)).size - 40) } },
  { name: 'raw_lines_reordered', readme: 'Raw lines 10 and 11 swapped (file re-listed, re-signed).', findings: [p(3, 'raw.frame-time-decreasing'), p(4, 'table.receive-time')],
    build: async (_c, root, key) => { await editRaw(await H0(root), key, (l) => { [l[10], l[11]] = [l[11]!, l[10]!]; return l }) } },
  { name: 'raw_line_not_canonical', readme: 'Raw line 5 gets a space after its opening brace (re-listed, re-signed).', findings: [p(3, 'raw.line-not-canonical')],
    build: async (_c, root, key) => { await editRaw(await H0(root), key, (l) => { l[5] = '{ ' + l[5]!.slice(1); return l }) } },
  { name: 'raw_row_count', readme: 'The manifest lists one raw row more than the file holds.', findings: [p(3, 'raw.row-count')],
    build: async (_c, root, key) => { await editManifest(await H0(root), key, (m) => { m.files.find((f) => f.name === 'raw.jsonl.zst')!.rows++ }) } },
  { name: 'table_missing', readme: 'trades.parquet removed and unlisted.', findings: [p(4, 'table.missing')],
    build: async (_c, root, key) => { const d = await H0(root); await rm(join(d, 'trades.parquet')); await editManifest(d, key, (m) => { m.files = m.files.filter((f) => f.name !== 'trades.parquet') }) } },
  { name: 'table_column_type', readme: 'trades.parquet rewritten with price as a UTF-8 string column (re-listed, re-signed).', findings: [p(4, 'table.schema')],
    build: async (_c, root, key) => {
      const d = await H0(root)
      const path = join(d, 'trades.parquet')
      const rows = await tableRows(path)
      const schema = tableSchema('trades').map((e) => (e.name === 'price' ? { name: 'price', type: 'BYTE_ARRAY' as const, repetition_type: 'REQUIRED' as const, converted_type: 'UTF8' as const } : e))
      const columnData = [
        { name: 'raw_index', data: rows.map((r) => BigInt(r.raw_index)) },
        { name: 'instrument', data: rows.map((r) => r.instrument) },
        { name: 'trade_id', data: rows.map((r) => r.trade_id) },
        { name: 'side', data: rows.map((r) => r.side) },
        { name: 'price', data: rows.map((r) => r.price) },
        { name: 'size', data: rows.map((r) => unscaled(r.size)) },
        { name: 'exchange_time', data: rows.map((r) => r.exchange_time) },
        { name: 'receive_time', data: rows.map((r) => r.receive_time) },
      ]
      await writeFile(path, new Uint8Array(parquetWriteBuffer({ schema: schema as never, columnData: columnData as never })))
      const m = await readManifest(d)
      await relist(d, 'trades.parquet', m)
      await signedWrite(d, manifestBytes(m), key)
    } },
  { name: 'table_row_count', readme: 'The manifest lists one trades row more than the table holds.', findings: [p(4, 'table.row-count')],
    build: async (_c, root, key) => { await editManifest(await H0(root), key, (m) => { m.files.find((f) => f.name === 'trades.parquet')!.rows++ }) } },
  { name: 'table_raw_index_decreasing', readme: 'trades rows 20 and 21 swapped whole (raw_index decreases; re-listed, re-signed).', findings: [p(4, 'table.raw-index-decreasing')],
    build: async (_c, root, key) => { await editTable(await H0(root), key, (r) => { [r[20], r[21]] = [r[21]!, r[20]!]; return r }) } },
  { name: 'table_receive_time', readme: 'trades row 7 receive_time 1 ns later than its frame time (re-listed, re-signed).', findings: [p(4, 'table.receive-time')],
    build: async (_c, root, key) => { await editTable(await H0(root), key, (r) => { r[7] = { ...r[7]!, receive_time: r[7]!.receive_time + 1n }; return r }) } },
  { name: 'chain_broken_link', readme: 'Hour 01 names a wrong previous_manifest_blake3 (re-signed).', findings: [p(5, 'chain.previous-hash')],
    build: async (_c, root, key) => {
      await H0(root)
      await editManifest(await copyHour(root, DAY1, '01'), key, (m) => { m.previous_manifest_blake3 = m.previous_manifest_blake3!.replace(/^./, (c) => (c === '0' ? '1' : '0')) })
    } },
  { name: 'chain_hour_skipped', readme: 'Hours 00 and 02 without hour 01.', findings: [p(5, 'chain.hour-skipped')],
    build: async (_c, root) => { await H0(root); await copyHour(root, DAY1, '02') } },
  { name: 'daily_missing_hour', readme: 'The whole day 2026-10-04; its daily manifest leaves out hour 12 (re-signed).', findings: [p(5, 'chain.daily-hours')],
    build: async (_c, root, key) => { await editManifest<DailyManifest>(await wholeDay1(root), key, (m) => { m.hours = m.hours.filter((h) => h.hour !== '12') }) } },
  { name: 'chain_fork', readme: 'Two roots hold hour 00 with different (validly signed) manifest bytes.', findings: [p(5, 'chain.fork')], args: ['--root', 'root_b'],
    build: async (c, root, key) => {
      await H0(root)
      await editManifest(await H0(join(c, 'root_b')), key, (m) => { m.replica_agreement.one_only++ })
    } },
  { name: 'sig_unknown_key', readme: 'Hour 00 signed by a key the JWK Set does not hold.', findings: [p(6, 'sig.unknown-key')],
    build: async (_c, root) => {
      const other = await newSigningKey({ seed: new Uint8Array(createHash('sha256').update('pipe record-format-1 other key').digest()), validFrom: KEY_VALID_FROM })
      const d = await H0(root)
      await writeFile(join(d, 'manifest.json.sig'), signDetached(await readFile(join(d, 'manifest.json')), other.privateJwk))
    } },
  { name: 'sig_expired_key', readme: 'jwks.json closes the golden key at 2026-10-04T00:30, before hour 00 ends (its signing instant).', findings: [p(6, 'sig.key-not-valid-at-time')],
    build: async (c, root, key) => {
      await H0(root)
      await writeJwksFile(join(c, 'jwks.json'), { keys: [publicJwkOf(key, { validFrom: KEY_VALID_FROM, validUntil: DAY_START + 30n * MINUTE })] })
    } },
  { name: 'clock_bound_below_offset', readme: 'One receipt\'s clock_error_bound set to |clock_offset| - 1 (not the replica\'s maximum; re-listed, re-signed).', findings: [p(7, 'clock.bound-below-offset')],
    build: async (_c, root, key) => {
      const d = await H0(root)
      const m = await readManifest(d)
      const max = m.replicas.find((r) => r.replica === 'a')!.clock!.error_bound_max!
      await editRaw(d, key, (lines) => {
        for (let i = 3; i < lines.length; i++) {
          const env = JSON.parse(lines[i]!) as Envelope
          const r = env.receipts.find((x) => x.replica === 'a')
          if (r?.clock_offset !== undefined && Math.abs(r.clock_offset) > 1 && r.clock_error_bound! < max) {
            r.clock_error_bound = Math.abs(r.clock_offset) - 1
            lines[i] = canonical(env)
            return lines
          }
        }
        throw new Error('no receipt to change')
      })
    } },
  { name: 'clock_offset_without_bound', readme: 'One receipt keeps clock_offset but loses clock_error_bound (clock summary adjusted; re-listed, re-signed).', findings: [p(7, 'clock.pair')],
    build: async (_c, root, key) => {
      const d = await H0(root)
      const max = (await readManifest(d)).replicas.find((r) => r.replica === 'a')!.clock!.error_bound_max!
      await editRaw(d, key, (lines) => {
        for (let i = 3; i < lines.length; i++) {
          const env = JSON.parse(lines[i]!) as Envelope
          const r = env.receipts.find((x) => x.replica === 'a')
          const b = env.receipts.find((x) => x.replica === 'b')
          // b received the frame first, so the frame time (earliest bounded receipt) stays b's.
          if (b?.clock_error_bound !== undefined && r?.clock_error_bound !== undefined && r.clock_error_bound < max && b.receive_time < r.receive_time) {
            delete r.clock_error_bound
            lines[i] = canonical(env)
            return lines
          }
        }
        throw new Error('no receipt to change')
      }, (m) => { m.replicas.find((r) => r.replica === 'a')!.clock!.unbounded++ })
    } },
  { name: 'clock_summary_wrong', readme: 'Replica a\'s clock.error_bound_max is 1 ns too large (re-signed).', findings: [p(8, 'clock.summary')],
    build: async (_c, root, key) => { await editManifest(await H0(root), key, (m) => { m.replicas[0]!.clock!.error_bound_max! += 1 }) } },
  { name: 'clock_reason_missing', readme: 'Hour 2026-10-05T00 has lines without clock fields but its reasons drop clock_offset_unknown (re-signed).', findings: [p(8, 'clock.reason')], args: FROM2,
    build: async (_c, root, key) => { await editManifest(await N0(root), key, (m) => { m.completeness.reasons = m.completeness.reasons.filter((r) => r !== 'clock_offset_unknown') }) } },
  { name: 'clock_reason_extra', readme: 'Hour 00, every line bounded, states clock_offset_unknown (status partial; re-signed).', findings: [p(8, 'clock.reason')],
    build: async (_c, root, key) => { await editManifest(await H0(root), key, (m) => { m.completeness = { status: 'partial', reasons: ['clock_offset_unknown'] } }) } },
  { name: 'run_outside_hour', readme: 'A gap_free_run of replica a ends 1 ns after the hour (re-signed).', findings: [p(9, 'runs.outside-hour')],
    build: async (_c, root, key) => { await editManifest(await H0(root), key, (m) => { m.replicas[0]!.gap_free_runs![0]!.end_time = '2026-10-04T01:00:00.000000001Z' }) } },
  { name: 'run_end_not_after_start', readme: 'A gap_free_run of replica b ends where it starts (re-signed).', findings: [p(9, 'runs.end-not-after-start')],
    build: async (_c, root, key) => { await editManifest(await H0(root), key, (m) => { const r = m.replicas[1]!.gap_free_runs![0]!; r.end_time = r.start_time }) } },
  { name: 'run_unknown_connection', readme: 'A gap_free_run of replica a names connection a-9, which no receipt of a carries (re-signed).', findings: [p(9, 'runs.unknown-connection')],
    build: async (_c, root, key) => { await editManifest(await H0(root), key, (m) => { m.replicas[0]!.gap_free_runs![0]!.connection = 'a-9' }) } },
  { name: 'conflict_wrong_hash', readme: 'Hour 2026-10-05T00: the second line of the conflict lists a wrong blake3 (re-signed).', findings: [p(10, 'conflict.blake3')], args: FROM2,
    build: async (_c, root, key) => { await editManifest(await N0(root), key, (m) => { const l = m.conflicts![0]!.lines[1]!; l.blake3 = l.blake3.replace(/^./, (c) => (c === '0' ? '1' : '0')) }) } },
  { name: 'conflict_wrong_trade_id', readme: 'Hour 2026-10-05T00: the conflict names a trade id its lines do not carry (re-signed).', findings: [p(10, 'conflict.trade-id')], args: FROM2,
    build: async (_c, root, key) => { await editManifest(await N0(root), key, (m) => { m.conflicts![0]!.trade_id = String(BigInt(m.conflicts![0]!.trade_id) + 1000n) }) } },
  { name: 'conflict_raw_index', readme: 'Hour 2026-10-05T00: a conflict line names a raw_index past the raw file (re-signed).', findings: [p(10, 'conflict.raw-index')], args: FROM2,
    build: async (_c, root, key) => { await editManifest(await N0(root), key, (m) => { m.conflicts![0]!.lines[1]!.raw_index = m.files.find((f) => f.name === 'raw.jsonl.zst')!.rows + 5 }) } },
  { name: 'replica_frames_wrong', readme: 'Hour 00: replica b\'s frames one more than the lines with its receipt (re-signed).', findings: [p(8, 'replicas.frames')],
    build: async (_c, root, key) => { await editManifest(await H0(root), key, (m) => { m.replicas[1]!.frames++ }) } },
  { name: 'replica_agreement_wrong', readme: 'Hour 00: replica_agreement moves one frame from both to one_only (re-signed).', findings: [p(8, 'replicas.agreement')],
    build: async (_c, root, key) => { await editManifest(await H0(root), key, (m) => { m.replica_agreement.both--; m.replica_agreement.one_only++ }) } },
  // One case per completeness reason: a manifest whose completeness its own data refutes (docs/verify.md).
  { name: 'reason_reconnect', readme: 'Hour 00 (no replica reconnected) states partial for reconnect (re-signed).', findings: [p(1, 'manifest.completeness')],
    build: statesCompleteness('partial', ['reconnect']) },
  { name: 'reason_sequence_gap', readme: 'Hour 00 lists a sequence gap but states complete without sequence_gap (re-signed).', findings: [p(1, 'manifest.completeness')],
    build: statesCompleteness('complete', [], (m) => { m.sequence_gaps = [{ instrument: 'BTCUSDT', after_id: '1', before_id: '3' }] }) },
  { name: 'reason_checksum_failure', readme: 'Hour 00 states partial for checksum_failure with no checksum_failures (re-signed).', findings: [p(1, 'manifest.completeness')],
    build: statesCompleteness('partial', ['checksum_failure']) },
  { name: 'reason_clock_offset_unknown', readme: 'Hour 2026-10-05T00 has lines without clock fields but states complete without clock_offset_unknown (re-signed).', findings: [p(8, 'clock.reason')], args: FROM2,
    build: async (_c, root, key) => { await editManifest(await N0(root), key, (m) => { m.completeness = { status: 'complete', reasons: [] } }) } },
  { name: 'reason_journal_torn', readme: 'Hour 00 states complete with the reason journal_torn (re-signed).', findings: [p(1, 'manifest.completeness')],
    build: statesCompleteness('complete', ['journal_torn']) },
  { name: 'reason_journal_corrupt', readme: 'Hour 00 states complete with the reason journal_corrupt (re-signed).', findings: [p(1, 'manifest.completeness')],
    build: statesCompleteness('complete', ['journal_corrupt']) },
  { name: 'reason_recorder_down', readme: 'Hour 00, which has frames, states missing for recorder_down (re-signed).', findings: [p(1, 'manifest.completeness')],
    build: statesCompleteness('missing', ['recorder_down']) },
  { name: 'reason_unrepresentable_value', readme: 'Hour 00 lists line 5 as unrepresentable (partial, unrepresentable_value), but trades.parquet has rows of it (re-signed).', findings: [p(4, 'table.unrepresentable-row')],
    build: statesCompleteness('partial', ['unrepresentable_value'], (m) => { m.unrepresentable_frames = [5] }) },
  { name: 'reason_destination_unavailable', readme: 'Hour 00 states complete with the reason destination_unavailable (re-signed).', findings: [p(1, 'manifest.completeness')],
    build: statesCompleteness('complete', ['destination_unavailable']) },
]

/** A decimal text's DECIMAL(38, 18) unscaled value (hyparquet-writer writes a bigint as it is). */
function unscaled(text: string): bigint {
  const [i, f = ''] = text.replace('-', '').split('.')
  const v = BigInt(i!) * SCALE + BigInt((f + '0'.repeat(18)).slice(0, 18))
  return text.startsWith('-') ? -v : v
}

// ---------------------------------------------------------------------------------------------------
// Reason cases: one hour sealed from a small simulated journal with one incident.

const R0 = BigInt(Date.UTC(2026, 9, 6)) * 1_000_000n // 2026-10-06T00:00:00Z
const rt = (minute: number, second = 0) => R0 + BigInt(minute) * MINUTE + BigInt(second) * S

interface ReasonSpec {
  reason: string
  /** The case folder is reason_<name> (default the reason). */
  name?: string
  readme: string
  /** Journal format 2: recorder starts and heartbeats with this interval. */
  heartbeatIntervalMs?: number
  incidents?: SimIncident[]
  events?: (events: JournalEvent[]) => JournalEvent[]
  journal?: (dir: string) => Promise<void>
}

function injectUnrepresentable(events: JournalEvent[]): JournalEvent[] {
  const original = events.find((e) => e.kind === 'frame' && e.receiveTime >= rt(20) && Buffer.from(e.payload).toString('utf8').startsWith('{"e":"trade"')) as FrameEvent
  const text = Buffer.from(original.payload).toString('utf8')
  const payload = Buffer.from(text.replace(/"p":"[^"]*"/, '"p":"1.0000000000000000001"'), 'utf8')
  const added = events.filter((e) => e.kind === 'frame' && e.payload === original.payload).map((e) => ({ ...(e as FrameEvent), payload, receiveTime: (e as FrameEvent).receiveTime + 2_000_000n }))
  return sortByTime([...events, ...added])
}

/** Neither replica's journal can be written 00:20 to 00:21: their events then are lost, and stated. */
function loseWrites(events: JournalEvent[]): JournalEvent[] {
  const from = rt(20)
  const to = rt(21)
  const out: JournalEvent[] = []
  const lost = { a: [] as bigint[], b: [] as bigint[] }
  for (const e of events) {
    const t = eventTime(e)
    if (t >= from && t < to) { lost[e.replica].push(t); continue }
    const l = lost[e.replica]
    if (t >= to && l.length > 0) {
      out.push({ kind: 'destination-unavailable', replica: e.replica, time: t, from: l[0]!, to: l[l.length - 1]! + 1n, lostEvents: l.length, message: 'ENOSPC: no space left on device, write' })
      lost[e.replica] = []
    }
    out.push(e)
  }
  return out
}

function sortByTime(events: JournalEvent[]): JournalEvent[] {
  return events.map((e, i) => ({ e, i })).sort((x, y) => {
    const tx = eventTime(x.e), ty = eventTime(y.e)
    return tx < ty ? -1 : tx > ty ? 1 : x.i - y.i
  }).map((x) => x.e)
}

const REASON_CASES: ReasonSpec[] = [
  { reason: 'reconnect', readme: 'Both replicas reconnect with overlapping windows (a at 00:20:00, b at 00:20:02, 5 s each).',
    incidents: [{ kind: 'reconnect', replica: 'a', at: rt(20), closeCode: 1001, pauseNs: 5n * S }, { kind: 'reconnect', replica: 'b', at: rt(20, 2), pauseNs: 5n * S, closeCode: 1006 }] },
  { reason: 'sequence_gap', readme: 'The venue skips 5 BTCUSDT trade ids at 00:30.', incidents: [{ kind: 'sequence-gap', instrument: 'BTCUSDT', at: rt(30), skip: 5 }] },
  { reason: 'checksum_failure', readme: 'Replica a journals a checksum mismatch for ETHUSDT at 00:25.', incidents: [{ kind: 'checksum-mismatch', replica: 'a', instrument: 'ETHUSDT', at: rt(25) }] },
  { reason: 'clock_offset_unknown', readme: 'Both replicas unsynchronised 00:10-00:12 (receipts without clock fields).',
    incidents: [{ kind: 'unsynchronised', replica: 'a', start: rt(10), end: rt(12) }, { kind: 'unsynchronised', replica: 'b', start: rt(10), end: rt(12) }] },
  { reason: 'journal_torn', readme: 'Replica a\'s journal file of the hour lost its last 7 bytes (a torn tail).',
    journal: async (dir) => { const f = journalFilePath(dir, 'a', R0); await truncate(f, (await stat(f)).size - 7) } },
  { reason: 'journal_corrupt', readme: 'One byte flipped in the middle of replica a\'s journal file of the hour.',
    journal: async (dir) => { await flipBit(journalFilePath(dir, 'a', R0), (n) => n >> 1, 4) } },
  { reason: 'recorder_down', readme: 'The recorder is down the whole hour (no events from either replica; they connect anew at 01:00).', incidents: [{ kind: 'outage', start: rt(0), end: rt(60) }] },
  // A crash journals no close: only a journal with heartbeats (format 2) shows the silence after it.
  { reason: 'recorder_down', name: 'recorder_down_crash', readme: 'Journal format 2 (heartbeats every 2.5 s): the recorder crashes at 00:20 and restarts at 00:40 (a new process, new connections).',
    heartbeatIntervalMs: 5000, incidents: [{ kind: 'outage', start: rt(20), end: rt(40) }] },
  { reason: 'destination_unavailable', readme: 'Journal format 2: neither replica can write its journal 00:20 to 00:21 (disk full); each states what it lost once it can write again.',
    heartbeatIntervalMs: 5000, events: loseWrites },
  { reason: 'unrepresentable_value', readme: 'At 00:20 both replicas receive a trade frame whose price has 19 fractional digits.', events: injectUnrepresentable },
]

async function buildReasonCase(caseDir: string, spec: ReasonSpec, key: Key, work: string): Promise<string[]> {
  const journal = join(work, `journal-${spec.name ?? spec.reason}`)
  let events = [...simulateReplicas({
    channel: 'trades', start: R0 - 10n * S, end: R0 + HOUR + 10n * S, instruments: ['BTCUSDT', 'ETHUSDT'], framesPerSecond: 0.05, seed: 606, incidents: spec.incidents ?? [],
    ...(spec.heartbeatIntervalMs !== undefined ? { heartbeatIntervalMs: spec.heartbeatIntervalMs } : {}),
  })]
  if (spec.events) events = spec.events(events)
  const builder = new JournalBuilder(journal)
  for (const e of events) await builder.append(e)
  await builder.commit()
  await spec.journal?.(journal)
  const { manifest } = await sealHour({ root: join(caseDir, 'root'), journal, recorder: 'golden', venue: binanceSpot, channel: 'trades', hourStart: R0, sign: keySigner(key), createdBy: CREATED_BY })
  return manifest.completeness.reasons
}

// ---------------------------------------------------------------------------------------------------

/** Runs `pipe run verify` in-process with a case's arguments (relative to the case folder). */
export async function runVerify(caseDir: string, args: readonly string[]): Promise<{ exitCode: number; findings: (Pair & { path: string; detail: string })[]; hours: number }> {
  const options: { root: string[]; keys?: string; from?: string; to?: string } = { root: [] }
  for (let i = 0; i < args.length; i += 2) {
    const [flag, value] = [args[i]!, args[i + 1]!]
    if (flag === '--root') options.root.push(resolve(caseDir, value))
    else if (flag === '--keys') options.keys = resolve(caseDir, value)
    else if (flag === '--from') options.from = value
    else if (flag === '--to') options.to = value
    else throw new Error(`unknown argument ${flag}`)
  }
  const stdout = new PassThrough()
  const out: Buffer[] = []
  stdout.on('data', (d: Buffer) => out.push(d))
  const stderr = new PassThrough()
  stderr.resume()
  const result = await runPipeline(registry, registry.pipeline('verify')!, options, { stdin: new PassThrough() as never, stdout, stderr, json: true, progress: false, handleSignals: false })
  const doc = JSON.parse(Buffer.concat(out).toString('utf8')) as { findings: (Pair & { path: string; detail: string })[]; hours: number }
  return { exitCode: result.exitCode, findings: doc.findings, hours: doc.hours }
}

const pairKey = (x: Pair) => `${x.check} ${x.code}`
const uniquePairs = (xs: Pair[]) => [...new Map(xs.map((x) => [pairKey(x), { check: x.check, code: x.code }])).values()].sort((a, b) => a.check - b.check || (a.code < b.code ? -1 : 1))

async function buildVectors(dir: string): Promise<void> {
  await mkdir(dir, { recursive: false })
  const { privateJwk: key, publicJwk } = await goldenKey()
  const work = await mkdtemp(join(tmpdir(), 'pipe-vectors-'))
  try {
    for (const c of FAIL_CASES) {
      const caseDir = join(dir, `${c.name}_fail`)
      await mkdir(caseDir)
      await writeJwksFile(join(caseDir, 'jwks.json'), { keys: [publicJwk] })
      await c.build(caseDir, join(caseDir, 'root'), key)
      const args = ['--root', 'root', '--keys', 'jwks.json', ...(c.args ?? [])]
      const r = await runVerify(caseDir, args)
      const found = new Set(r.findings.map(pairKey))
      const missing = c.findings.filter((x) => !found.has(pairKey(x)))
      if (r.exitCode !== 1 || missing.length > 0) throw new Error(`case ${c.name}: exit ${r.exitCode}, expected findings not reported: ${missing.map(pairKey).join(', ')}; got ${JSON.stringify(r.findings)}`)
      const wanted = new Set(c.findings.map(pairKey))
      const allowed = uniquePairs(r.findings.filter((x) => !wanted.has(pairKey(x))))
      const expected: Expected = { args, findings: c.findings, ...(allowed.length > 0 ? { allowed } : {}) }
      await writeFile(join(caseDir, 'expected.json'), JSON.stringify(expected, null, 2) + '\n')
      await writeFile(join(caseDir, 'README'), c.readme + '\n')
    }
    for (const spec of REASON_CASES) {
      const caseDir = join(dir, `reason_${spec.name ?? spec.reason}`)
      await mkdir(caseDir)
      await writeJwksFile(join(caseDir, 'jwks.json'), { keys: [publicJwk] })
      const reasons = await buildReasonCase(caseDir, spec, key, work)
      if (!reasons.includes(spec.reason as never)) throw new Error(`reason case ${spec.reason}: the sealer stated ${JSON.stringify(reasons)}`)
      const args = ['--root', 'root', '--keys', 'jwks.json']
      const r = await runVerify(caseDir, args)
      if (r.exitCode !== 0) throw new Error(`reason case ${spec.reason}: verify exit ${r.exitCode}: ${JSON.stringify(r.findings)}`)
      const expected: Expected = { args, findings: [], reasons: [spec.reason] }
      await writeFile(join(caseDir, 'expected.json'), JSON.stringify(expected, null, 2) + '\n')
      await writeFile(join(caseDir, 'README'), `Passes verify; the sealer states ${spec.reason} (${formatTime(R0).slice(0, 13)}): ${spec.readme}\n`)
    }
    await writeFile(join(dir, 'README'), 'Record format v1 conformance vectors, built by scripts/make-record-vectors.ts from test/golden/record; see that script for the layout of each case.\n')
    await writeHashes(dir)
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

async function main(argv: string[]): Promise<number> {
  const check = argv.includes('--check')
  if (argv.some((a) => a !== '--check')) {
    process.stderr.write('usage: make-record-vectors.ts [--check]\n')
    return 2
  }
  return writeOrCheckTree(VECTORS_DIR, buildVectors, check, 'the vectors')
}

export { FAIL_CASES, REASON_CASES }

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then((code) => { process.exitCode = code }, (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
    process.exitCode = 1
  })
}

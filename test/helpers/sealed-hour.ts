/**
 * Test-only builder of sealed hours and days (record format v1) from a handful of frames, for the
 * verifier's tests. It writes what the spec says a sealed hour holds, with the project's own writers:
 * `raw.jsonl.zst` (raw-writer.ts `envelopeLine`, zstd), the channel's tables (tables.ts `TableWriter`,
 * rows from the venue adapter), `manifest.json` (manifest.ts `manifestBytes`) and `manifest.json.sig`
 * (jws.ts `signDetached`). Hooks let a test change a line, a table's rows or file, or the manifest before
 * it is signed, so that exactly one rule breaks. Not the sealer: no journal, no sequences, no coverage.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { blake3 } from 'hash-wasm'
import { compress } from 'zstd-napi'
import { signDetached } from '../../src/formats/record/keys/jws.js'
import { newSigningKey, publicJwkOf, type PrivateSigningJwk, type PublicJwks } from '../../src/formats/record/keys/keys.js'
import {
  dayDir,
  hourDir,
  manifestBytes,
  type ClockSummary,
  type CompletenessReason,
  type Conflict,
  type DailyManifest,
  type FileEntry,
  type GapFreeRun,
  type HourlyManifest,
  type ReplicaSummary,
} from '../../src/formats/record/manifest.js'
import { frameTimeOf, type MergedFrame, type Receipt } from '../../src/formats/record/merge.js'
import { envelopeLine } from '../../src/formats/record/seal/raw-writer.js'
import { TableWriter, tableFileName } from '../../src/formats/record/tables.js'
import { formatTime } from '../../src/formats/record/time.js'
import { CHANNEL_TABLES, type Channel, type Replica, type TableName, type TableRow } from '../../src/formats/record/types.js'
import { findVenue } from '../../src/venues/index.js'

export const HOUR_NS = 3_600_000_000_000n
export const DAY_NS = 24n * HOUR_NS

export interface TestFrame {
  /** A text frame's text (or, with `binary`, the frame's bytes as latin1 text). */
  payload: string
  binary?: boolean
  /** Receipts sorted by replica (a before b). */
  receipts: Receipt[]
}

export interface Chain {
  root: string
  recorder?: string
  venue?: string
  channel?: Channel
}

export interface SealHourOptions extends Chain {
  hourStart: bigint
  frames: TestFrame[]
  previous: string | null
  key: PrivateSigningJwk
  gapFreeRuns?: Partial<Record<Replica, GapFreeRun[]>>
  /** The `conflicts` entries, or a function of the raw-file lines (without newlines) that makes them. */
  conflicts?: Conflict[] | ((lines: readonly string[]) => Conflict[])
  /** Changes a raw-file line (without its newline) before compression. */
  editLine?: (line: string, index: number) => string
  /** Changes a table's rows before they are written. */
  editRows?: (table: TableName, rows: TableRow[]) => TableRow[]
  /** Writes a table's file instead of TableWriter (sizes and hashes are then taken from that file). */
  writeTable?: (table: TableName, path: string, rows: TableRow[]) => Promise<Uint8Array>
  /** Changes the manifest before it is written and signed. */
  edit?: (m: HourlyManifest) => void
  /** Signs with this key instead of `key` (e.g. one the JWK Set does not hold). */
  signWith?: PrivateSigningJwk
}

export interface Sealed<M> {
  dir: string
  path: string
  bytes: Buffer
  blake3: string
  manifest: M
}

const defaults = (c: Chain) => ({ recorder: c.recorder ?? 'rec-1', venue: c.venue ?? 'binance', channel: c.channel ?? 'trades' })

interface ReceiptOptions { replicas?: Replica[]; connection?: string; offset?: bigint; bound?: bigint | null }

/** Receipts of a frame received at `at` by the given replicas (b 1 µs after a), with clock estimates unless `bound` is null. */
function receiptsAt(at: bigint, id: number, opts: ReceiptOptions): Receipt[] {
  return (opts.replicas ?? ['a', 'b']).map((replica, i): Receipt => {
    const r: Receipt = { replica, connection: opts.connection ?? `${replica}-1`, receiveTime: at + BigInt(i) * 1000n }
    if (opts.bound !== null) {
      r.clockOffset = opts.offset ?? 1500n
      r.clockErrorBound = opts.bound ?? 400_000n + BigInt(id % 7) * 1000n
    }
    return r
  })
}

/** A Binance spot trade frame received at `at` by the given replicas (b 1 µs after a), with clock estimates. */
export function trade(at: bigint, id: number, opts: ReceiptOptions & { symbol?: string; price?: string; buyerMaker?: boolean } = {}): TestFrame {
  const ms = Number(at / 1_000_000n) - 2
  const payload = JSON.stringify({ e: 'trade', E: ms + 1, s: opts.symbol ?? 'BTCUSDT', t: id, p: opts.price ?? '60000.10', q: '0.25', T: ms, m: opts.buyerMaker ?? true, M: true })
  return { payload, receipts: receiptsAt(at, id, opts) }
}

/** A Binance spot REST depth snapshot frame (one bid, one ask: two book_snapshots rows) received at `at`. */
export function depthSnapshot(at: bigint, lastUpdateId: number, opts: ReceiptOptions = {}): TestFrame {
  const body = JSON.stringify({ lastUpdateId, bids: [['60000.10', '1.5']], asks: [['60000.20', '2']] })
  return { payload: `{"rest":"depth","symbol":"BTCUSDT","response":${body}}`, receipts: receiptsAt(at, lastUpdateId, opts) }
}

/** A Binance spot depth update frame (a bid changed, an ask removed: two book_deltas rows) received at `at`. */
export function depthUpdate(at: bigint, firstId: number, lastId: number, opts: ReceiptOptions = {}): TestFrame {
  const payload = JSON.stringify({ e: 'depthUpdate', E: Number(at / 1_000_000n) - 1, s: 'BTCUSDT', U: firstId, u: lastId, b: [['60000.10', '1.25']], a: [['60000.20', '0.00000000']] })
  return { payload, receipts: receiptsAt(at, lastId, opts) }
}

/** A deterministic signing key (from `seedByte`) valid over [validFrom, validUntil), and its JWK Set. */
export async function testKey(seedByte = 1, validFrom = '2020-01-01T00:00:00.000000000Z', validUntil?: string): Promise<{ key: PrivateSigningJwk; jwks: PublicJwks }> {
  const { privateJwk } = await newSigningKey({ validFrom, seed: Buffer.alloc(32, seedByte) })
  return { key: privateJwk, jwks: { keys: [publicJwkOf(privateJwk, { validFrom, ...(validUntil ? { validUntil } : {}) })] } }
}

function merged(f: TestFrame): MergedFrame {
  return { payload: Buffer.from(f.payload, f.binary ? 'latin1' : 'utf8'), binary: f.binary === true, receipts: f.receipts, frameTime: frameTimeOf(f.receipts) }
}

/** Writes one sealed hour and returns its manifest (bytes, BLAKE3). */
export async function sealHour(o: SealHourOptions): Promise<Sealed<HourlyManifest>> {
  const { recorder, venue, channel } = defaults(o)
  const dir = join(o.root, hourDir(recorder, venue, channel, o.hourStart))
  await mkdir(dir, { recursive: true })
  const adapter = findVenue(venue)
  const rows = new Map<TableName, TableRow[]>(CHANNEL_TABLES[channel].map((t) => [t, []]))

  const lines: string[] = []
  o.frames.forEach((f, i) => {
    const frame = merged(f)
    const c = adapter?.classify(channel, frame.payload, frame.binary)
    const exchangeTime = c?.kind === 'rows' ? c.exchangeTime : null
    if (c?.kind === 'rows') for (const r of c.rows) rows.get(c.table)?.push({ ...r, raw_index: i, receive_time: frame.frameTime })
    const line = envelopeLine(frame, exchangeTime)
    lines.push(o.editLine ? o.editLine(line, i) : line)
  })
  const raw = compress(Buffer.from(lines.map((l) => l + '\n').join(''), 'utf8'))
  const conflicts = typeof o.conflicts === 'function' ? o.conflicts(lines) : o.conflicts
  await writeFile(join(dir, 'raw.jsonl.zst'), raw)
  const files: FileEntry[] = [{ name: 'raw.jsonl.zst', size: raw.length, blake3: await blake3(raw), rows: o.frames.length }]

  for (const [table, list] of rows) {
    const path = join(dir, tableFileName(table))
    const tableRows = o.editRows ? o.editRows(table, list) : list
    let bytes: Uint8Array
    if (o.writeTable) {
      bytes = await o.writeTable(table, path, tableRows)
    } else {
      const w = await TableWriter.open(path, table, { createdBy: 'pipe test' })
      await w.write(tableRows)
      await w.finish()
      bytes = await readFile(path)
    }
    files.push({ name: tableFileName(table), size: bytes.length, blake3: await blake3(bytes), rows: tableRows.length })
  }

  const times = o.frames.map((f) => frameTimeOf(f.receipts))
  const replicas: ReplicaSummary[] = (['a', 'b'] as const).map((replica) => {
    const receipts = o.frames.flatMap((f) => f.receipts.filter((r) => r.replica === replica))
    const s: ReplicaSummary = { replica, frames: receipts.length, covered_ns: Number(HOUR_NS), reconnect_windows: [] }
    const runs = o.gapFreeRuns?.[replica]
    if (runs) s.gap_free_runs = runs
    if (receipts.length > 0) {
      const bounds = receipts.filter((r) => r.clockErrorBound !== undefined).map((r) => Number(r.clockErrorBound))
      const clock: ClockSummary = { unbounded: receipts.length - bounds.length }
      if (bounds.length > 0) {
        clock.source = 'nts'
        clock.error_bound_max = Math.max(...bounds)
      }
      s.clock = clock
    }
    return s
  })
  const reasons: CompletenessReason[] = o.frames.some((f) => f.receipts.every((r) => r.clockErrorBound === undefined)) ? ['clock_offset_unknown'] : []
  const m: HourlyManifest = {
    format_version: 1,
    recorder,
    venue,
    channel,
    interval: { start_time: formatTime(o.hourStart), end_time: formatTime(o.hourStart + HOUR_NS) },
    files,
    sequence_gaps: [],
    checksum_failures: [],
    replicas,
    replica_agreement: {
      both: o.frames.filter((f) => f.receipts.length === 2).length,
      one_only: o.frames.filter((f) => f.receipts.length === 1).length,
      conflict: conflicts?.length ?? 0,
    },
    completeness: { status: reasons.length > 0 ? 'partial' : 'complete', reasons },
    previous_manifest_blake3: o.previous,
  }
  if (times.length > 0) {
    const sorted = [...times].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    m.frame_time_bounds = { earliest: formatTime(sorted[0]!), latest: formatTime(sorted[sorted.length - 1]!) }
  }
  if (conflicts && conflicts.length > 0) m.conflicts = conflicts
  o.edit?.(m)
  return writeManifest(dir, m, o.signWith ?? o.key)
}

/** Writes manifest.json (canonical bytes) and manifest.json.sig into `dir`. */
export async function writeManifest<M extends HourlyManifest | DailyManifest>(dir: string, m: M, key: PrivateSigningJwk, bytes: Buffer = manifestBytes(m)): Promise<Sealed<M>> {
  const path = join(dir, 'manifest.json')
  await writeFile(path, bytes)
  await writeFile(`${path}.sig`, signDetached(bytes, key))
  return { dir, path, bytes, blake3: await blake3(bytes), manifest: m }
}

export interface SealDayOptions extends Chain {
  date: string
  hours: readonly Sealed<HourlyManifest>[]
  previous: string | null
  key: PrivateSigningJwk
  edit?: (m: DailyManifest) => void
}

/** Writes the daily manifest of `date` listing `hours`. */
export async function sealDay(o: SealDayOptions): Promise<Sealed<DailyManifest>> {
  const { recorder, venue, channel } = defaults(o)
  const dir = join(o.root, dayDir(recorder, venue, channel, o.date))
  await mkdir(dir, { recursive: true })
  const m: DailyManifest = {
    format_version: 1,
    recorder,
    venue,
    channel,
    date: o.date,
    hours: o.hours.map((h) => ({ hour: h.manifest.interval.start_time.slice(11, 13), blake3: h.blake3, status: h.manifest.completeness.status })),
    previous_manifest_blake3: o.previous,
  }
  o.edit?.(m)
  return writeManifest(dir, m, o.key)
}

/** Seals consecutive hours from `first`, chaining each to the one before; `frames(i, start)` gives hour i's frames. */
export async function sealHours(
  chain: Chain,
  first: bigint,
  count: number,
  previous: string | null,
  key: PrivateSigningJwk,
  frames: (i: number, start: bigint) => TestFrame[],
): Promise<Sealed<HourlyManifest>[]> {
  const out: Sealed<HourlyManifest>[] = []
  for (let i = 0; i < count; i++) {
    const hourStart = first + BigInt(i) * HOUR_NS
    out.push(await sealHour({ ...chain, hourStart, frames: frames(i, hourStart), previous: out.length > 0 ? out[out.length - 1]!.blake3 : previous, key }))
  }
  return out
}

/**
 * Test-only helpers for test/seal.test.ts: hand-written journal events, journals built with
 * JournalBuilder, a sealed hour read back (raw lines, manifest, table rows), a tree snapshot, and the
 * verifiers run in-process.
 */
import { readdir, readFile, stat } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { decompress } from 'zstd-napi'
import { createBLAKE3 } from 'hash-wasm'
import { runPipeline } from '../../src/core/runner.js'
import { JournalBuilder } from '../../src/formats/record/journal/journal.js'
import type { DailyManifest, HourlyManifest } from '../../src/formats/record/manifest.js'
import { readTableRows, type ReadTableRow } from '../../src/formats/record/tables.js'
import type { JournalEvent, Replica } from '../../src/formats/record/types.js'
import { registry } from '../../pipelines/registry.js'
import { captureIO } from './io.js'

export const S = 1_000_000_000n
export const MS = 1_000_000n
export const HOUR = 3_600n * S

export async function buildJournal(dir: string, events: Iterable<JournalEvent>): Promise<JournalEvent[]> {
  const b = new JournalBuilder(dir)
  const all: JournalEvent[] = []
  for (const e of events) { all.push(e); await b.append(e) }
  await b.commit()
  return all
}

/** A Binance spot trade payload (the same arguments give the same bytes). */
export function tradePayload(at: bigint, id: number, o: { symbol?: string; price?: string; qty?: string } = {}): string {
  const ms = Number(at / MS) - 2
  return `{"e":"trade","E":${ms + 1},"s":"${o.symbol ?? 'BTCUSDT'}","t":${id},"p":"${o.price ?? '60000.10000000'}","q":"${o.qty ?? '0.25000000'}","T":${ms},"m":${id % 2 === 0},"M":true}`
}

export const ev = {
  connecting: (replica: Replica, connection: string, time: bigint): JournalEvent => ({ kind: 'connecting', replica, connection, time }),
  open: (replica: Replica, connection: string, time: bigint): JournalEvent => ({ kind: 'open', replica, connection, time }),
  subscribed: (replica: Replica, connection: string, time: bigint, instruments = ['BTCUSDT']): JournalEvent => ({ kind: 'subscribed', replica, connection, time, instruments }),
  closed: (replica: Replica, connection: string, time: bigint, closeCode?: number): JournalEvent => ({ kind: 'closed', replica, connection, time, ...(closeCode !== undefined ? { closeCode } : {}), reason: 'bye' }),
  frame: (replica: Replica, connection: string, receiveTime: bigint, payload: string, clock: { offset: bigint; bound: bigint } | null = { offset: 1500n, bound: 400_000n }): JournalEvent => ({
    kind: 'frame', replica, connection, receiveTime, payload: Buffer.from(payload, 'utf8'), binary: false,
    ...(clock ? { clockOffset: clock.offset, clockErrorBound: clock.bound } : {}),
  }),
}

/** connecting, open, subscribed of a connection, 10 ms apart, starting at `t`. */
export function connect(replica: Replica, connection: string, t: bigint, instruments = ['BTCUSDT']): JournalEvent[] {
  return [ev.connecting(replica, connection, t), ev.open(replica, connection, t + 10n * MS), ev.subscribed(replica, connection, t + 20n * MS, instruments)]
}

/** Sorts events by event time (stable), as a journal expects them. */
export function byTime(events: JournalEvent[]): JournalEvent[] {
  const t = (e: JournalEvent) => (e.kind === 'frame' ? e.receiveTime : e.time)
  return events.map((e, i) => ({ e, i })).sort((x, y) => (t(x.e) < t(y.e) ? -1 : t(x.e) > t(y.e) ? 1 : x.i - y.i)).map((x) => x.e)
}

export interface Envelope {
  payload: string
  payload_encoding: 'text' | 'base64'
  exchange_time?: string
  receipts: { replica: Replica; connection: string; receive_time: string; clock_offset?: number; clock_error_bound?: number }[]
}

export interface HourRead {
  dir: string
  names: string[]
  manifestBytes: Buffer
  manifest: HourlyManifest
  rawText: string
  lines: string[]
  envelopes: Envelope[]
}

export async function readHour(dir: string): Promise<HourRead> {
  const names = (await readdir(dir)).sort()
  const manifestBytes = await readFile(join(dir, 'manifest.json'))
  const raw = await readFile(join(dir, 'raw.jsonl.zst'))
  const rawText = raw.length === 0 ? '' : decompress(raw).toString('utf8')
  const lines = rawText === '' ? [] : rawText.slice(0, -1).split('\n')
  return { dir, names, manifestBytes, manifest: JSON.parse(manifestBytes.toString('utf8')) as HourlyManifest, rawText, lines, envelopes: lines.map((l) => JSON.parse(l) as Envelope) }
}

export async function readDaily(dir: string): Promise<{ bytes: Buffer; manifest: DailyManifest }> {
  const bytes = await readFile(join(dir, 'manifest.json'))
  return { bytes, manifest: JSON.parse(bytes.toString('utf8')) as DailyManifest }
}

export async function tableRows(path: string): Promise<ReadTableRow[]> {
  const out: ReadTableRow[] = []
  for await (const batch of readTableRows(path)) out.push(...batch)
  return out
}

const hasher = await createBLAKE3()
export function b3(bytes: Uint8Array | string): string {
  hasher.init()
  hasher.update(bytes)
  return hasher.digest('hex')
}

/** Every file and directory under `root`: relative path → bytes hash (files), size and mtime. */
export async function snapshot(root: string): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  const walk = async (dir: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      const p = join(dir, name)
      const st = await stat(p)
      if (st.isDirectory()) { out.set(relative(root, p) + '/', `dir mtime=${st.mtimeMs}`); await walk(p) } else out.set(relative(root, p), `${b3(await readFile(p))} size=${st.size} mtime=${st.mtimeMs}`)
    }
  }
  await walk(root)
  return out
}

/** Relative path → BLAKE3 of every file (no times): for comparing two trees' bytes. */
export async function treeBytes(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const [k, v] of await snapshot(root)) out[k] = k.endsWith('/') ? 'dir' : v.split(' ')[0]!
  return out
}

export interface VerifyDoc { ok: boolean; hours: number; days: number; findings: { check: number; code: string; path: string; detail: string }[] }

export async function verifyRoots(roots: string[], keys: string): Promise<{ exitCode: number; doc: VerifyDoc; err: string }> {
  const io = captureIO(true)
  const r = await runPipeline(registry, registry.pipeline('verify')!, { root: roots, keys }, io.settings, false)
  let doc: VerifyDoc
  try { doc = JSON.parse(io.out()) as VerifyDoc } catch { doc = { ok: false, hours: 0, days: 0, findings: [] } }
  return { exitCode: r.exitCode, doc, err: io.err() }
}

export async function verifyRawFile(file: string, hour: string, rows: number, blake3: string): Promise<{ exitCode: number; out: string; err: string }> {
  const io = captureIO(true)
  const r = await runPipeline(registry, registry.pipeline('verify-raw')!, { file, hour, rows, blake3, strict: true }, io.settings, false)
  return { exitCode: r.exitCode, out: io.out(), err: io.err() }
}

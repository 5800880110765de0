/**
 * Streaming table writer throughput and memory.
 *
 *   node --import tsx bench/parquet-write.ts [--rows N] [--batch N] [--baseline] [--json]
 *
 * Writes N synthetic trade rows through TableWriter in batches (rows are generated on the fly, never all
 * held) and reports rows/s, file size and the process's peak RSS. With --baseline it also times
 * hyparquet-writer's one-shot `parquetWriteBuffer` on the same rows held in memory (the whole-table way
 * DESIGN.md's ~155k rows/s was measured) and prints the ratio. --json prints one JSON line (the memory
 * test in test/record-tables.test.ts runs this script as a child).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parquetWriteBuffer } from 'hyparquet-writer'
import { Compressor } from 'zstd-napi'
import { TableWriter, tableSchema } from '../src/formats/record/tables.js'
import type { TableRow } from '../src/formats/record/types.js'

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? Number(process.argv[i + 1]) : dflt
}
const ROWS = arg('rows', 1_000_000)
const BATCH = arg('batch', 1000)
const ROW_GROUP_ROWS = arg('row-group-rows', 0) // 0: the writer's default
const BASELINE = process.argv.includes('--baseline')
const JSON_OUT = process.argv.includes('--json')

const T0 = 1_791_036_000_000_000_000n
const INSTRUMENTS = ['BTC-USDT', 'ETH-USDT', 'SOL-USDT', 'XRP-USDT']

/** A plausible trade row, a pure function of i: several rows per frame, varied prices and sizes. */
function row(i: number): TableRow {
  const frame = Math.floor(i / 3)
  const p = 60_000 + ((i * 7919) % 100_000) / 100
  return {
    raw_index: frame,
    instrument: INSTRUMENTS[i % 4]!,
    trade_id: String(1_000_000_000 + i),
    side: i % 2 ? 'buy' : 'sell',
    price: p.toFixed(2),
    size: `0.${String((i * 104_729) % 100_000_000).padStart(8, '0')}`,
    exchange_time: i % 10 === 0 ? null : T0 + BigInt(frame) * 1_000_003n - 250_000n,
    receive_time: T0 + BigInt(frame) * 1_000_003n,
  }
}

async function streaming(dir: string): Promise<{ seconds: number; cpuSeconds: number; size: number }> {
  const start = process.hrtime.bigint()
  const cpu = process.cpuUsage()
  const w = await TableWriter.open(join(dir, 'trades.parquet'), 'trades', { createdBy: 'pipe bench', ...(ROW_GROUP_ROWS ? { rowGroupRows: ROW_GROUP_ROWS } : {}) })
  const batch: TableRow[] = []
  for (let i = 0; i < ROWS; i++) {
    batch.push(row(i))
    if (batch.length === BATCH) {
      await w.write(batch)
      batch.length = 0
    }
  }
  if (batch.length) await w.write(batch)
  const { size } = await w.finish()
  const used = process.cpuUsage(cpu)
  return { seconds: Number(process.hrtime.bigint() - start) / 1e9, cpuSeconds: (used.user + used.system) / 1e6, size }
}

function baseline(): { seconds: number; cpuSeconds: number } {
  // The whole table as columns in memory, then one call (hyparquet-writer's documented way).
  const cols: Record<string, unknown[]> = { raw_index: [], instrument: [], trade_id: [], side: [], price: [], size: [], exchange_time: [], receive_time: [] }
  for (let i = 0; i < ROWS; i++) {
    const r = row(i)
    cols.raw_index!.push(BigInt(r.raw_index))
    cols.instrument!.push(r.instrument)
    cols.trade_id!.push(r.trade_id)
    cols.side!.push(r.side)
    cols.price!.push(BigInt(r.price.replace('.', '')) * 10n ** 16n)
    cols.size!.push(BigInt(r.size.replace('.', '')) * 10n ** 10n)
    cols.exchange_time!.push(r.exchange_time)
    cols.receive_time!.push(r.receive_time)
  }
  const zstd = new Compressor()
  zstd.setParameters({ compressionLevel: 3 })
  const start = process.hrtime.bigint()
  const cpu = process.cpuUsage()
  parquetWriteBuffer({
    columnData: Object.entries(cols).map(([name, data]) => ({ name, data })),
    schema: tableSchema('trades') as Parameters<typeof parquetWriteBuffer>[0]['schema'],
    codec: 'ZSTD',
    compressors: { ZSTD: (b: Uint8Array) => zstd.compress(b) },
    rowGroupSize: 65_536,
  })
  const used = process.cpuUsage(cpu)
  return { seconds: Number(process.hrtime.bigint() - start) / 1e9, cpuSeconds: (used.user + used.system) / 1e6 }
}

const dir = await mkdtemp(join(tmpdir(), 'pipe-bench-parquet-'))
try {
  const s = await streaming(dir)
  const maxRssMb = process.resourceUsage().maxRSS / 1024
  const report: Record<string, number> = {
    rows: ROWS,
    seconds: s.seconds,
    cpuSeconds: s.cpuSeconds,
    rowsPerSec: Math.round(ROWS / s.seconds),
    rowsPerCpuSec: Math.round(ROWS / s.cpuSeconds),
    size: s.size,
    maxRssMb: Math.round(maxRssMb),
  }
  if (BASELINE) {
    const b = baseline()
    report.baselineSeconds = b.seconds
    report.baselineRowsPerCpuSec = Math.round(ROWS / b.cpuSeconds)
    report.ratio = Number((b.cpuSeconds / s.cpuSeconds).toFixed(2))
  }
  if (JSON_OUT) {
    process.stdout.write(JSON.stringify(report) + '\n')
  } else {
    console.log(`streaming TableWriter: ${ROWS} rows in ${s.seconds.toFixed(2)} s (${s.cpuSeconds.toFixed(2)} s CPU) = ${report.rowsPerSec} rows/s, ${report.rowsPerCpuSec} rows per CPU second, ${s.size} bytes, peak RSS ${report.maxRssMb} MB`)
    if (BASELINE) console.log(`one-shot parquetWriteBuffer (encode only, columns pre-built): ${report.baselineRowsPerCpuSec} rows per CPU second; streaming/baseline speed ratio ${report.ratio}`)
  }
} finally {
  await rm(dir, { recursive: true, force: true })
}

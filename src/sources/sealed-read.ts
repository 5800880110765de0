import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { zstdFileLines } from '../codec/zstd.js'
import { asUsage, PipeError, UsageError } from '../core/errors.js'
import { RowBatch, type Row } from '../core/items.js'
import { defineStage } from '../core/stage.js'
import { RAW_FILE_NAME } from '../formats/record/manifest.js'
import { dayStartNs } from '../formats/record/time.js'
import { CHANNELS, CHANNEL_TABLES, TABLE_NAMES, type Channel, type TableName } from '../formats/record/types.js'

const BATCH_ROWS = 4096
const MAX_LINE_BYTES = 8 * 2 ** 20
const HOUR_OR_DATE = /^(\d{4}-\d{2}-\d{2})(?:T([01]\d|2[0-3]))?$/

const bound = z.string().regex(HOUR_OR_DATE, 'must be a date YYYY-MM-DD or an hour YYYY-MM-DDTHH').refine((s) => dayStartNs(s.slice(0, 10)) !== null, 'must be a calendar date')

/** `2026-10-03T14` as the hour's key `2026-10-03T14`; a date as its first (from) or last (to) hour. */
const hourKey = (s: string, end: 'from' | 'to') => (s.length === 10 ? `${s}T${end === 'from' ? '00' : '23'}` : s)

async function subdirs(dir: string, prefix: string): Promise<string[]> {
  const names = await readdir(dir).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' || err.code === 'ENOTDIR' ? [] : Promise.reject(err)))
  return names.filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length)).sort()
}

/** The raw file's lines, each parsed: an envelope as a row. */
async function* envelopeRows(hourDir: string): AsyncGenerator<RowBatch> {
  const path = join(hourDir, RAW_FILE_NAME)
  let rows: Row[] = []
  let bytes = 0
  let line = 0
  // The verifier's cap on a line: an unverified read meets it here, so an endless line is never held whole.
  for await (const text of zstdFileLines(path, MAX_LINE_BYTES)) {
    line++
    try {
      rows.push(JSON.parse(text.toString('utf8')) as Row)
    } catch (err) {
      throw new PipeError('sealed-read.raw-line', `not JSON: ${(err as Error).message}`, { location: { file: path, line } })
    }
    bytes += text.byteLength + 1
    if (rows.length === BATCH_ROWS) {
      yield new RowBatch(rows, bytes)
      rows = []
      bytes = 0
    }
  }
  if (rows.length > 0) yield new RowBatch(rows, bytes)
}

export const sealedReadSource = defineStage({
  name: 'sealed-read',
  kind: 'source',
  summary: 'Reads the sealed hours of one chain in time order, each verified (the ten checks) before a row of it is given: its envelopes, or one table\'s rows',
  takes: 'none',
  gives: 'rows',
  options: z.object({
    roots: z.array(z.string().min(1)).min(1).describe('directories holding recorder=/venue=/channel= trees; copies of one chain are read as one'),
    venue: z.string().min(1).describe('the chain\'s venue'),
    channel: z.enum(CHANNELS as [Channel, ...Channel[]]).describe('the chain\'s channel'),
    recorder: z.string().min(1).optional().describe('the chain\'s recorder; needed when the roots hold more than one for the venue and channel'),
    from: bound.optional().describe('first date or hour to read (YYYY-MM-DD or YYYY-MM-DDTHH, inclusive)'),
    to: bound.optional().describe('last date or hour to read (inclusive)'),
    table: z.enum(TABLE_NAMES as [TableName, ...TableName[]]).optional().describe('give this table\'s rows (decimals as text, times in ns); default: the raw file\'s envelopes'),
    keys: z.string().min(1).optional().describe('the JWK Set (jwks.json) the hours\' signatures are checked against; needed unless noVerify'),
    noVerify: z.boolean().default(false).describe('read without running the checks (the rows are then not proven)'),
  }),
  async create(o, ctx) {
    if (o.table && !CHANNEL_TABLES[o.channel].includes(o.table)) throw new UsageError('usage.bad-option', `channel ${o.channel} has no ${o.table} table (it has ${CHANNEL_TABLES[o.channel].join(', ') || 'none'})`, { location: { field: 'table' } })
    if (!o.noVerify && !o.keys) throw new UsageError('usage.missing-option', 'the hours are verified as they are read: name the key set with keys, or pass noVerify', { location: { field: 'keys' } })
    const from = o.from && hourKey(o.from, 'from')
    const to = o.to && hourKey(o.to, 'to')
    if (from && to && from > to) throw new UsageError('usage.bad-range', `from ${o.from} is after to ${o.to}`, { location: { field: 'from' } })
    const recorders = new Set<string>()
    for (const root of o.roots) {
      const info = await stat(root).catch(() => null)
      if (!info?.isDirectory()) throw new UsageError('env.not-a-directory', 'roots: not a directory', { location: { file: root } })
      for (const r of await subdirs(root, 'recorder=')) {
        if ((await subdirs(join(root, `recorder=${r}`), 'venue=')).includes(o.venue) && (await subdirs(join(root, `recorder=${r}`, `venue=${o.venue}`), 'channel=')).includes(o.channel)) recorders.add(r)
      }
    }
    if (o.recorder && !recorders.has(o.recorder)) throw new UsageError('usage.no-chains', `no chain recorder=${o.recorder}/venue=${o.venue}/channel=${o.channel} under ${o.roots.join(', ')}`, { location: { field: 'recorder' } })
    if (!o.recorder && recorders.size !== 1) {
      throw new UsageError('usage.no-chains', recorders.size === 0 ? `no chain of venue=${o.venue}/channel=${o.channel} under ${o.roots.join(', ')}` : `the roots hold chains of ${[...recorders].sort().join(', ')}: name one with recorder`, { location: { field: 'recorder' } })
    }
    const chain = { recorder: o.recorder ?? [...recorders][0]!, venue: o.venue, channel: o.channel }
    const rel = join(`recorder=${chain.recorder}`, `venue=${chain.venue}`, `channel=${chain.channel}`)
    const wanted = (hour: string) => (!from || hour >= from) && (!to || hour <= to)
    // Loaded here: the Parquet reader, which other commands need not load.
    const [{ openParquetRows }, { tableFileName }] = await Promise.all([import('./parquet-rows.js'), import('../formats/record/tables.js')])
    const rowsOf = async (hourDir: string): Promise<AsyncIterable<RowBatch>> => (o.table ? openParquetRows(join(hourDir, tableFileName(o.table))) : envelopeRows(hourDir))
    ctx.summary.hours = 0

    if (o.noVerify) {
      return (async function* () {
        const hours = new Map<string, string>()
        for (const root of o.roots) {
          for (const date of await subdirs(join(root, rel), 'date=')) {
            for (const hh of await subdirs(join(root, rel, `date=${date}`), 'hour=')) {
              const key = `${date}T${hh}`
              if (!hours.has(key) && wanted(key)) hours.set(key, join(root, rel, `date=${date}`, `hour=${hh}`))
            }
          }
        }
        for (const key of [...hours.keys()].sort()) {
          yield* await rowsOf(hours.get(key)!)
          ;(ctx.summary.hours as number)++
        }
      })()
    }

    const jwks = await asUsage(async () => (await import('../formats/record/keys/keys.js')).readJwksFile(o.keys!), 'keys: ', { file: o.keys! })
    const { RecordVerifier } = await import('../formats/record/verify/verify.js')
    let failure: PipeError | undefined
    const verifier = new RecordVerifier({
      roots: o.roots,
      jwks,
      chain,
      ...(o.from ? { from: o.from.slice(0, 10) } : {}),
      ...(o.to ? { to: o.to.slice(0, 10) } : {}),
      signal: ctx.signal,
      report: (f) => {
        failure ??= new PipeError('sealed-read.unverified', `check ${f.check} fails (${f.code})${f.line !== null ? ` at line ${f.line}` : ''}: ${f.detail}; nothing after it is read`, { location: { file: f.path } })
      },
    })
    return (async function* () {
      for await (const hour of verifier.run()) {
        const m = /date=(\d{4}-\d{2}-\d{2})[\\/]hour=(\d{2})$/.exec(hour.path)
        const key = m ? `${m[1]}T${m[2]}` : null
        // Past the range, nothing more is read or checked (a range that ends mid-day leaves that day's
        // own manifest unchecked; every hour given was checked, and chained to the one before).
        if (key !== null && to && key > to) return
        if (failure) throw failure
        if (key === null || !wanted(key)) continue
        yield* await rowsOf(hour.path)
        ;(ctx.summary.hours as number)++
      }
      // A day's manifest and the chain of days are checked after its hours.
      if (failure) throw failure
    })()
  },
})

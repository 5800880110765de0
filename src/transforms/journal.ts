import { z } from 'zod'
import { UsageError } from '../core/errors.js'
import { RowBatch, type Row } from '../core/items.js'
import { defineStage, type StageDef } from '../core/stage.js'
import {
  HOUR_NS,
  JournalBatch,
  JournalBuilder,
  JournalJsonError,
  JournalWriter,
  eventFromJson,
  eventToJson,
  eventToJsonLine,
  parseHourName,
  readJournalRange,
  type JournalProblem,
} from '../formats/record/journal/journal.js'
import { tryParseTime } from '../formats/record/time.js'
import type { JournalEvent, Replica } from '../formats/record/types.js'
import type { LineBatch } from '../codec/lines.js'

const timeOption = (what: string) => z.string()
  .refine((s) => tryParseTime(s) !== null, 'must be a time of the form YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ')
  .optional()
  .describe(what)

/** A journal in a stage's options: one directory holding both replicas, or several (one per replica host). */
export const journalDirsOption = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)])

/**
 * Reads a journal directory over a range of event time: batches of events (JournalBatch) with the torn and
 * corrupt stretches found, merged across replicas in event-time order unless `merge` is off
 * (docs/journal.md, "Reading").
 */
export const journalReadStage = defineStage({
  name: 'journal-read',
  kind: 'source',
  summary: 'Reads a replica journal directory over a time range as event batches (merged by event time)',
  takes: 'none',
  gives: 'any',
  options: z.object({
    dir: journalDirsOption.describe('the journal directory (holding replica=a/, replica=b/), or one directory per replica'),
    hour: z.string().refine((s) => parseHourName(s) !== null, 'must be a UTC hour, YYYY-MM-DDTHH').optional()
      .describe('read this UTC hour, e.g. 2026-10-03T14 (start and end widen it)'),
    start: timeOption('first event time to read (inclusive), YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ'),
    end: timeOption('event time to stop at (exclusive)'),
    replicas: z.array(z.enum(['a', 'b'])).optional().describe('replicas to read (default: every replica directory)'),
    merge: z.boolean().default(true).describe('merge the replicas by event time; off: replica a, then b'),
    batchSize: z.number().int().positive().default(4096).describe('events per batch when merging'),
    findings: z.boolean().default(false).describe('also report each torn or corrupt stretch as a finding (the run then exits 1)'),
  }),
  create(o, ctx) {
    let start = o.start !== undefined ? tryParseTime(o.start)! : undefined
    let end = o.end !== undefined ? tryParseTime(o.end)! : undefined
    if (o.hour !== undefined) {
      const h = parseHourName(o.hour)!
      if (start === undefined || start > h) start = h
      if (end === undefined || end < h + HOUR_NS) end = h + HOUR_NS
    }
    if (start !== undefined && end !== undefined && end < start) throw new UsageError('usage.bad-option', 'end is before start', { location: { field: 'end' } })
    ctx.summary.journal_torn = 0
    ctx.summary.journal_corrupt = 0
    const count = (problems: JournalProblem[]) => {
      for (const p of problems) {
        if (p.kind === 'torn') (ctx.summary.journal_torn as number)++
        else (ctx.summary.journal_corrupt as number)++
        if (o.findings) ctx.findings.add({ line: null, code: `journal.${p.kind}`, detail: `${p.file ?? ''} byte ${p.offset}: ${p.detail}`, file: p.file, offset: p.offset, reason: p.reason })
      }
    }
    return (async function* () {
      const range = readJournalRange(o.dir, {
        ...(start !== undefined ? { start } : {}),
        ...(end !== undefined ? { end } : {}),
        ...(o.replicas ? { replicas: o.replicas as Replica[] } : {}),
        merge: o.merge,
        batchSize: o.batchSize,
      })
      for await (const batch of range) {
        count(batch.problems)
        yield batch
      }
    })()
  },
})

/** Where to find a batch's events: JournalBatch, or anything with an `events` array. */
function eventsOf(item: unknown, stage: string): JournalEvent[] {
  const events = (item as { events?: unknown }).events
  if (!Array.isArray(events)) throw new UsageError('usage.item-type', `${stage} takes batches of journal events`)
  return events as JournalEvent[]
}

/**
 * Parses the JSONL form of journal events (docs/journal.md, "JSONL form"), one object per line. A bad line
 * stops the run with exit 2 and a one-line error naming the line and the field (`journal.bad-jsonl`).
 */
export const journalFromJsonlStage = defineStage({
  name: 'journal-from-jsonl',
  kind: 'transform',
  summary: 'Parses JSONL journal events (one object per line) into event batches; a bad line stops the run (exit 2)',
  takes: 'lines',
  gives: 'any',
  options: z.object({
    file: z.string().optional().describe('the input\'s name, for error messages'),
  }),
  create({ file }) {
    const fail = (line: number, field: string | undefined, message: string, offset?: number) =>
      new UsageError('journal.bad-jsonl', message, { location: { ...(file !== undefined ? { file } : {}), line, ...(offset !== undefined ? { offset } : {}), ...(field !== undefined ? { field } : {}) } })
    return async function* (source: AsyncIterable<unknown>) {
      let expected = 1
      for await (const item of source) {
        const lines = item as LineBatch
        // split-lines drops a line over its length cap (a finding); here that line must stop the import.
        if (lines.firstLine !== expected) throw fail(expected, undefined, 'the line is longer than the cap of the line splitter')
        const events: JournalEvent[] = []
        for (let i = 0; i < lines.count; i++) {
          const lineNo = lines.firstLine + i
          const bytes = lines.line(i)
          let text = bytes.toString('utf8')
          if (text.endsWith('\r')) text = text.slice(0, -1)
          if (text.trim() === '') throw fail(lineNo, undefined, 'empty line (expected one JSON object per line)')
          let obj: unknown
          try {
            obj = JSON.parse(text)
          } catch (err) {
            throw fail(lineNo, undefined, `not JSON: ${(err as Error).message}`)
          }
          try {
            events.push(eventFromJson(obj))
          } catch (err) {
            if (err instanceof JournalJsonError) throw fail(lineNo, err.field, err.message)
            throw err
          }
        }
        expected = lines.firstLine + lines.count
        yield new JournalBatch(events, [], lines.byteCount)
      }
    }
  },
})

/** Writes events as their JSONL form (sorted members, RFC 8785 canonical); problems are not written. */
export const journalToJsonlStage = defineStage({
  name: 'journal-to-jsonl',
  kind: 'transform',
  summary: 'Writes event batches as JSONL journal events (the form journal-import reads)',
  takes: 'any',
  gives: 'bytes',
  options: z.object({}),
  create(_o, ctx) {
    return async function* (source: AsyncIterable<unknown>) {
      for await (const item of source) {
        const events = eventsOf(item, ctx.stage)
        if (events.length === 0) continue
        let text = ''
        for (const e of events) text += eventToJsonLine(e)
        yield Buffer.from(text, 'utf8')
      }
    }
  },
})

/** Event batches as rows, each event in its JSONL form (docs/journal.md): for filter, select and the writers of rows. */
export const journalEventsStage = defineStage({
  name: 'journal-events',
  kind: 'transform',
  summary: 'Turns event batches into rows, one per event in its JSONL form (kind, replica, connection, time, ...)',
  takes: 'any',
  gives: 'rows',
  options: z.object({}),
  create(_o, ctx) {
    return async function* (source: AsyncIterable<unknown>) {
      for await (const item of source) {
        const events = eventsOf(item, ctx.stage)
        if (events.length > 0) yield new RowBatch(events.map((e) => eventToJson(e) as Row))
      }
    }
  },
})

/**
 * Appends event batches to a journal directory. `append`: into the live files (created, or reopened with
 * torn-tail recovery), with the chosen fsync policy. `build`: all or nothing; new files are built under
 * temporary names and linked to their final names only when every event arrived, and an existing file for
 * the same replica and hour is refused (`journal.exists`); a failed run leaves nothing under a final name.
 */
export const journalWriteStage = defineStage({
  name: 'journal-write',
  kind: 'sink',
  summary: 'Writes event batches to a journal directory (append to live files, or build new files all-or-nothing)',
  takes: 'any',
  gives: 'none',
  options: z.object({
    dir: z.string().min(1).describe('the journal directory'),
    mode: z.enum(['append', 'build']).default('append').describe('append to existing files, or build new files all-or-nothing'),
    fsync: z.enum(['record', 'interval', 'none']).default('interval').describe('append: fsync after every record (group-committed), every --fsync-interval-ms, or never'),
    fsyncIntervalMs: z.number().int().positive().default(1000).describe('append with fsync interval: the longest time a written record waits for its fsync'),
  }),
  create(o, ctx) {
    return async (source: AsyncIterable<unknown>) => {
      let events = 0
      if (o.mode === 'build') {
        const builder = new JournalBuilder(o.dir)
        try {
          for await (const item of source) {
            await Promise.all(eventsOf(item, ctx.stage).map((e) => builder.append(e)))
          }
          const files = await builder.commit()
          ctx.summary.events = builder.events
          ctx.summary.files = files.length
        } catch (err) {
          await builder.abort()
          throw err
        }
        return
      }
      const writer = new JournalWriter(o.dir, { fsync: o.fsync, fsyncIntervalMs: o.fsyncIntervalMs })
      try {
        for await (const item of source) {
          const batch = eventsOf(item, ctx.stage)
          await Promise.all(batch.map((e) => writer.append(e)))
          events += batch.length
        }
      } finally {
        await writer.close()
        ctx.summary.events = events
        ctx.summary.files = new Set(writer.reports.map((r) => r.path)).size
        const truncated = writer.reports.reduce((n, r) => n + r.truncatedBytes, 0)
        if (truncated > 0) ctx.summary.truncated_bytes = truncated
      }
    }
  },
})

/** The journal's stages, for the registry. */
export const journalStages: StageDef[] = [journalReadStage, journalFromJsonlStage, journalToJsonlStage, journalEventsStage, journalWriteStage] as unknown as StageDef[]

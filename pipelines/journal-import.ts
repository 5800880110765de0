import { z } from 'zod'
import { definePipeline } from '../src/core/pipeline.js'
import type { Registry } from '../src/core/registry.js'
import type { PipelineDef } from '../src/core/pipeline.js'
import { journalStages } from '../src/transforms/journal.js'

/** The longest JSONL line accepted: a 16 MiB payload in base64 with room for the other members. */
const MAX_LINE_BYTES = 32 * 2 ** 20

/**
 * Builds a journal directory from the JSONL form of journal events (docs/journal.md, "JSONL form").
 * All or nothing: a bad line stops the run with exit 2 naming the line and field, and no journal file
 * appears under its final name; an existing file for the same replica and hour is refused.
 */
export const journalImport = definePipeline({
  name: 'journal-import',
  summary: 'Build a replica journal directory from JSONL events (--from events.jsonl --journal DIR), all or nothing',
  options: z.object({
    from: z.string().min(1).describe('the JSONL file of journal events, one object per line'),
    journal: z.string().min(1).describe('the journal directory to build files in'),
  }),
  stages(o) {
    return [
      { stage: 'file', options: { path: o.from } },
      { stage: 'split-lines', options: { maxLineBytes: MAX_LINE_BYTES, requireFinalNewline: false } },
      { stage: 'journal-from-jsonl', options: { file: o.from } },
      { stage: 'journal-write', options: { dir: o.journal, mode: 'build' } },
    ]
  },
})

/** Registers the journal's stages and pipelines. */
export function registerJournal(registry: Registry): void {
  for (const stage of journalStages) registry.addStage(stage)
  registry.addPipeline(journalImport as unknown as PipelineDef)
}

import { z } from 'zod'
import { defineStage } from '../../core/stage.js'
import type { JournalBatch } from '../../formats/record/journal/journal.js'
import { journalDirsOption } from '../journal.js'
import { sealedHourOf, sealHourOptions } from './seal-options.js'

/**
 * The first step of a seal after journal-read (the hour and its pairing window): pairs both replicas'
 * receipts into final frames in frame-time order, packed in batches, and gives the hour's facts last (what
 * the journal shows: coverage, clocks, checksum failures, connection-wide breaks, torn or corrupt files).
 * Refuses, before anything is read, a journal that may still be receiving the hour.
 */
export const pairReplicasStage = defineStage({
  name: 'pair-replicas',
  kind: 'transform',
  summary: 'Pairs an hour\'s journal events across replicas into final frames in frame-time order, then the hour\'s facts (record format v1)',
  takes: 'any',
  gives: 'frames',
  options: z.object({
    ...sealHourOptions,
    journal: journalDirsOption.describe('the journal directory, or one directory per replica (where the hour\'s torn or corrupt records are, and each replica\'s next record after the hour)'),
    recorderStopped: z.boolean().default(false).describe('the recorder is gone for good: seal even though the journal holds nothing after the hour'),
  }),
  async create(o) {
    const hour = sealedHourOf(o)
    // Loaded here, not at the top: every other command would otherwise pay for the sealer at start-up.
    const [{ assertHourSealable }, { pairHour }] = await Promise.all([import('../../formats/record/seal/seal.js'), import('../../formats/record/seal/pair-hour.js')])
    await assertHourSealable(o.journal, hour.hourStart, o.recorderStopped)
    return (source: AsyncIterable<unknown>) => pairHour({ ...hour, journal: o.journal }, source as AsyncIterable<JournalBatch>)
  },
})

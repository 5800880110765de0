import { z } from 'zod'
import { defineStage } from '../core/stage.js'
import { TABLE_NAMES, type TableName } from '../formats/record/types.js'

export const SCALAR_TYPES = ['string', 'int32', 'int64', 'double', 'boolean', 'timestamp-ns', 'timestamp-us', 'timestamp-ms'] as const
export const DECIMAL_TYPE = /^decimal\((\d{1,2}),\s*(\d{1,2})\)$/

const columnSpec = z.object({
  name: z.string().min(1),
  type: z.string().refine((t) => (SCALAR_TYPES as readonly string[]).includes(t) || DECIMAL_TYPE.test(t), `one of ${SCALAR_TYPES.join(', ')} or decimal(P,S)`),
  optional: z.boolean().default(true),
}).strict()
export type ColumnSpec = z.infer<typeof columnSpec>

export const parquetWriteSink = defineStage({
  name: 'parquet-write',
  kind: 'sink',
  summary: 'Writes rows to a Parquet file (zstd), a row group each time one fills, landed atomically',
  takes: 'rows',
  gives: 'none',
  options: z.object({
    path: z.string().min(1).describe('the final file name'),
    columns: z.array(columnSpec).min(1).optional().describe(`the schema: [{"name", "type": ${SCALAR_TYPES.join('|')}|decimal(P,S), "optional"?: true}], in file order`),
    table: z.enum(TABLE_NAMES as [TableName, ...TableName[]]).optional().describe('instead of columns: a record format v1 table\'s schema (trades, book_snapshots, book_deltas)'),
    rowGroupRows: z.number().int().min(1).max(1_048_576).default(32_768).describe('rows per row group'),
    zstdLevel: z.number().int().min(1).max(19).default(3).describe('zstd level of the pages'),
  }),
  // Loaded here: hyparquet-writer and the record tables' schemas, which other commands need not load.
  async create(o) {
    const { writeParquetRows } = await import('./parquet-rows-writer.js')
    return writeParquetRows(o)
  },
})

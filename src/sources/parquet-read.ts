import { z } from 'zod'
import { defineStage } from '../core/stage.js'

/** A row group is decoded whole, a column at a time: the most its decoded columns may take, unless told. */
export const DEFAULT_ROW_GROUP_BYTES = 512 * 2 ** 20

export const parquetReadSource = defineStage({
  name: 'parquet-read',
  kind: 'source',
  summary: 'Reads the rows of a Parquet file, a row group at a time, with exact decimals and nanosecond times',
  takes: 'none',
  gives: 'rows',
  options: z.object({
    path: z.string().min(1).describe('the Parquet file'),
    columns: z.array(z.string().min(1)).min(1).optional().describe('the columns to read, in this order; default: every column'),
    maxRowGroupBytes: z.number().int().positive().default(DEFAULT_ROW_GROUP_BYTES).describe('the most a row group may decode to (it is decoded whole); a larger one is refused before it is read'),
  }),
  // Loaded here: hyparquet and the pack reader's guards, which other commands need not load.
  async create({ path, columns, maxRowGroupBytes }) {
    const { openParquetRows } = await import('./parquet-rows.js')
    return openParquetRows(path, columns, maxRowGroupBytes)
  },
})

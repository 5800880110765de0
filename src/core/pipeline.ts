import type { z } from 'zod'
import type { Finding } from './findings.js'
import type { OptionsSchema } from './schema.js'
import type { RunContext, StageUse } from './stage.js'

export interface PipelineDef<S extends OptionsSchema = OptionsSchema> {
  readonly name: string
  readonly summary: string
  readonly options: S
  /** Options given as a bare word after the name (e.g. the DIR of `pipe run pack-check DIR`). */
  readonly positional?: readonly string[]
  stages(options: z.infer<S>): StageUse[]
  /** The text report's line for one finding, when the pipeline's findings are not about lines of a file. */
  formatFinding?(finding: Finding): string
  /** Runs after the last stage finished: final whole-input checks and the text report's last line. */
  finish?(options: z.infer<S>, ctx: RunContext): void | Promise<void>
}

/** Declares a pipeline once: data, not code paths, so the CLI and `pipe describe` read the same thing. */
export function definePipeline<S extends OptionsSchema>(def: PipelineDef<S>): PipelineDef<S> {
  return def
}

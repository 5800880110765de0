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
  /**
   * The options of a typical run, for `pipe describe` to show the stages they give; without it, each required
   * option is a placeholder (`<name>`), which a pipeline whose stages read their options' values cannot take.
   */
  readonly example?: Readonly<Record<string, unknown>>
  /** The text report's line for one finding, when the pipeline's findings are not about lines of a file. */
  formatFinding?(finding: Finding): string
  /**
   * The pipeline's published `--json` shape, when it has one: each finding as it is printed, and the
   * summary members printed after `ok` (without it, every summary member, the stages' counts and the
   * elapsed time). A failed run adds `error` either way.
   */
  readonly jsonReport?: JsonReport
  /** Runs after the last stage finished: final whole-input checks and the text report's last line. */
  finish?(options: z.infer<S>, ctx: RunContext): void | Promise<void>
}

export interface JsonReport {
  finding(finding: Finding): Record<string, unknown>
  summary: readonly string[]
}

/** Declares a pipeline once: data, not code paths, so the CLI and `pipe describe` read the same thing. */
export function definePipeline<S extends OptionsSchema>(def: PipelineDef<S>): PipelineDef<S> {
  return def
}

/**
 * pipe as a library: declare stages and pipelines, run them, and every stage and pipeline the CLI has
 * (`registry`). docs/api.md shows a custom stage run between built-in ones.
 */
import type { RunSettings } from '../src/core/runner.js'

export { z } from 'zod'
export { defineStage, type StageDef, type StageKind, type StageContext, type RunContext, type StageStream, type StageFunction, type StageUse } from '../src/core/stage.js'
export { definePipeline, type PipelineDef } from '../src/core/pipeline.js'
export { Registry } from '../src/core/registry.js'
export { runPipeline, runStageList, type RunResult, type RunSettings, type StageMetrics } from '../src/core/runner.js'
export { PipeError, UsageError, EXIT_OK, EXIT_DATA, EXIT_USAGE, type Location } from '../src/core/errors.js'
export { RowBatch, type Row, type RowValue, type ItemType, type Measured } from '../src/core/items.js'
export type { Finding } from '../src/core/findings.js'
export { LineBatch } from '../src/codec/lines.js'
export { loadPipelineFile, bindPipelineParams, type PipelineFile } from '../src/core/pipeline-file.js'
export { VERSION } from '../src/core/version.js'
export { registry } from '../pipelines/registry.js'

/** Settings for a run in this process's own stdio: the text report on stdout, stopped by SIGINT or SIGTERM. */
export function processSettings(overrides: Partial<RunSettings> = {}): RunSettings {
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, json: false, progress: false, handleSignals: true, ...overrides }
}

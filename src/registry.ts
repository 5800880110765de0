import { Registry } from './core/registry.js'
import { verifyRaw } from '../pipelines/verify-raw.js'
import { sealHourPipeline } from '../pipelines/seal-hour.js'
import { sealSink } from './sinks/seal.js'
import { fileSource, stdinSource } from './sources/file.js'
import { atomicFileSink } from './sinks/atomic-file.js'
import { reportSink } from './sinks/report.js'
import { stdoutSink } from './sinks/stdout.js'
import { canonicalCheckStage, parseEnvelopesStage } from './transforms/envelopes.js'
import { frameOrderStage } from './transforms/frame-order.js'
import { hashCheck, hashTee } from './transforms/hash.js'
import { splitLinesStage } from './transforms/split-lines.js'
import { zstdDecodeStage, zstdEncodeStage } from './transforms/zstd.js'
import type { StageDef } from './core/stage.js'

/** Every stage and pipeline the CLI knows; users' JSON pipelines name stages from here. */
export const registry = new Registry()
for (const stage of [fileSource, stdinSource, hashTee, hashCheck, zstdDecodeStage, zstdEncodeStage, splitLinesStage, canonicalCheckStage, parseEnvelopesStage, frameOrderStage, reportSink, atomicFileSink, stdoutSink]) {
  registry.addStage(stage as unknown as StageDef)
}
registry.addStage(sealSink as unknown as StageDef)
registry.addPipeline(verifyRaw as never)
registry.addPipeline(sealHourPipeline as never)
import { registerJournal } from '../pipelines/journal-import.js'
registerJournal(registry)
import { registerVerify } from '../pipelines/verify.js'
registerVerify(registry)
import { registerPackExport } from '../pipelines/pack-export.js'
registerPackExport(registry)
import { registerPackCheck } from '../pipelines/pack-check.js'
registerPackCheck(registry)
import { registerPackPublish } from '../pipelines/pack-publish.js'
registerPackPublish(registry)

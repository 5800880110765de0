import { Registry } from '../src/core/registry.js'
import { verifyRaw } from './verify-raw.js'
import { sealHourPipeline } from './seal-hour.js'
import { sealCommitSink } from '../src/sinks/seal.js'
import { packCommitSink } from '../src/sinks/pack-commit.js'
import { hourManifestStage } from '../src/transforms/seal/hour-manifest.js'
import { pairReplicasStage } from '../src/transforms/seal/pair-replicas.js'
import { writeHourFilesStage } from '../src/transforms/seal/write-hour-files.js'
import { chainLinkStage } from '../src/transforms/chain-link.js'
import { signStage } from '../src/transforms/sign.js'
import { fileSource, stdinSource } from '../src/sources/file.js'
import { objectsSource } from '../src/sources/objects.js'
import { fetchObjectStage } from '../src/transforms/fetch-object.js'
import { readFilesStage } from '../src/transforms/read-files.js'
import { atomicFileSink } from '../src/sinks/atomic-file.js'
import { reportSink } from '../src/sinks/report.js'
import { stdoutSink } from '../src/sinks/stdout.js'
import { canonicalCheckStage, parseEnvelopesStage } from '../src/transforms/envelopes.js'
import { frameOrderStage } from '../src/transforms/frame-order.js'
import { hashCheck, hashTee } from '../src/transforms/hash.js'
import { splitLinesStage } from '../src/transforms/split-lines.js'
import { zstdDecodeStage, zstdEncodeStage } from '../src/transforms/zstd.js'
import { parquetReadSource } from '../src/sources/parquet-read.js'
import { sealedReadSource } from '../src/sources/sealed-read.js'
import { packTableReadSource } from '../src/sources/pack-table-read.js'
import { parquetWriteSink } from '../src/sinks/parquet-write.js'
import { filterStage } from '../src/transforms/rows/filter.js'
import { fromJsonlStage } from '../src/transforms/rows/from-jsonl.js'
import { selectStage } from '../src/transforms/rows/select.js'
import { toCsvStage } from '../src/transforms/rows/to-csv.js'
import { toJsonlStage } from '../src/transforms/rows/to-jsonl.js'
import type { StageDef } from '../src/core/stage.js'

/** Every stage and pipeline the CLI knows; users' JSON pipelines name stages from here. */
export const registry = new Registry()
for (const stage of [fileSource, stdinSource, objectsSource, fetchObjectStage, readFilesStage, hashTee, hashCheck, zstdDecodeStage, zstdEncodeStage, splitLinesStage, canonicalCheckStage, parseEnvelopesStage, frameOrderStage, reportSink, atomicFileSink, stdoutSink,
  parquetReadSource, sealedReadSource, packTableReadSource, fromJsonlStage, filterStage, selectStage, toJsonlStage, toCsvStage, parquetWriteSink]) {
  registry.addStage(stage as unknown as StageDef)
}
for (const stage of [pairReplicasStage, writeHourFilesStage, hourManifestStage, chainLinkStage, signStage, sealCommitSink, packCommitSink]) registry.addStage(stage as unknown as StageDef)
registry.addPipeline(verifyRaw as never)
registry.addPipeline(sealHourPipeline as never)
import { registerJournal } from './journal-import.js'
registerJournal(registry)
import { registerVerify } from './verify.js'
registerVerify(registry)
import { registerPackExport } from './pack-export.js'
registerPackExport(registry)
import { registerPackImport } from './pack-import.js'
registerPackImport(registry)
import { registerPackCheck } from './pack-check.js'
registerPackCheck(registry)
import { registerPackPublish } from './pack-publish.js'
registerPackPublish(registry)
import { registerRecord } from './record.js'
registerRecord(registry)
import { registerSimulateVenue } from './simulate-venue.js'
registerSimulateVenue(registry)

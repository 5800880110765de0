import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { asPipeError, EXIT_DATA, EXIT_OK, PipeError, UsageError } from './errors.js'
import { DEFAULT_MAX_FINDINGS_PER_CODE, FindingSink, type Finding } from './findings.js'
import { formatBytes } from './input-file.js'
import { measure } from './items.js'
import type { JsonReport, PipelineDef } from './pipeline.js'
import type { Registry } from './registry.js'
import { parseOptions } from './schema.js'
import type { RunContext, StageDef, StageFunction, StageStream, StageUse } from './stage.js'

export interface RunIO {
  stdin: NodeJS.ReadableStream & Readable
  stdout: Writable
  stderr: Writable
}

export interface RunSettings extends RunIO {
  /** Print one JSON object on stdout instead of the text report. */
  json: boolean
  /** Show a progress line on stderr; the CLI turns it on only when stderr is a TTY. */
  progress: boolean
  /** Stop on SIGINT/SIGTERM. The CLI sets it; in-process callers pass their own signal instead. */
  handleSignals: boolean
  signal?: AbortSignal
  /** Findings reported of each code (default DEFAULT_MAX_FINDINGS_PER_CODE); the rest are counted in `findings_left_out`. */
  maxFindings?: number
}

export interface StageMetrics {
  name: string
  items_in: number
  bytes_in: number
  items_out: number
  bytes_out: number
}

export interface RunResult {
  exitCode: number
  ok: boolean
  findings: number
  summary: Record<string, unknown>
  stages: StageMetrics[]
  error?: PipeError
}

interface ResolvedStage { def: StageDef; options: Record<string, unknown> }

/** Validates a list of stage uses against the registry: names, options, kinds and item types. */
export function resolveStages(registry: Registry, uses: StageUse[], where = 'stages'): ResolvedStage[] {
  if (uses.length < 2) throw new UsageError('usage.pipeline-too-short', 'a pipeline needs a source and a sink', { location: { field: where } })
  return uses.map((use, i) => {
    const path = `${where}[${i}]`
    if (typeof use !== 'object' || use === null || typeof use.stage !== 'string') {
      throw new UsageError('usage.bad-stage', 'expected a stage name', { location: { field: `${path}.stage` } })
    }
    const def = registry.stage(use.stage)
    if (!def) throw new UsageError('usage.unknown-stage', `unknown stage "${use.stage}" (see pipe stages)`, { location: { field: `${path}.stage` } })
    const wantKind = i === 0 ? 'source' : i === uses.length - 1 ? 'sink' : 'transform'
    if (def.kind !== wantKind) {
      throw new UsageError('usage.stage-kind', `"${def.name}" is a ${def.kind}, but position ${i} needs a ${wantKind}`, { location: { field: `${path}.stage` } })
    }
    const options = parseOptions(def.options, use.options ?? {}, `${path}.options`)
    return { def, options }
  }).map((resolved, i, all) => {
    const prev = all[i - 1]
    if (prev && prev.def.gives !== 'any' && resolved.def.takes !== 'any' && prev.def.gives !== resolved.def.takes) {
      throw new UsageError('usage.item-type', `"${resolved.def.name}" takes ${resolved.def.takes} but "${prev.def.name}" gives ${prev.def.gives}`, { location: { field: `${where}[${i}].stage` } })
    }
    return resolved
  })
}

/**
 * Runs a pipeline: resolves its stages, wires them with `stream/promises` pipeline under one
 * AbortSignal, counts items and bytes between stages, and reports. Never throws: every failure becomes
 * an exit code, a one-line message on stderr and, with `json`, an `error` member in the summary.
 */
export async function runPipeline(registry: Registry, def: PipelineDef, rawOptions: Record<string, unknown>, settings: RunSettings, optionsAreFlags = true): Promise<RunResult> {
  let options: Record<string, unknown>
  let stages: ResolvedStage[]
  try {
    options = parseOptions(def.options, rawOptions, def.name, optionsAreFlags)
    stages = resolveStages(registry, def.stages(options))
  } catch (err) {
    return fail(settings, asPipeError(err), null, [], {}, def.jsonReport)
  }
  return runResolved(def.name, stages, settings, (ctx) => def.finish?.(options, ctx), def.formatFinding, def.jsonReport)
}

/** Runs a user-composed pipeline (a JSON file's `stages`). */
export async function runStageList(registry: Registry, name: string, uses: StageUse[], settings: RunSettings): Promise<RunResult> {
  let stages: ResolvedStage[]
  try {
    stages = resolveStages(registry, uses)
  } catch (err) {
    return fail(settings, asPipeError(err), null, [], {})
  }
  return runResolved(name, stages, settings)
}

async function runResolved(name: string, stages: ResolvedStage[], settings: RunSettings, finish?: (ctx: RunContext) => void | Promise<void>, formatFinding?: (f: Finding) => string, jsonReport?: JsonReport): Promise<RunResult> {
  if (settings.json && stages.some((s) => s.def.usesStdout)) {
    return fail(settings, new UsageError('usage.json-and-stdout', `${name}: --json needs stdout, but a stage writes its data there`), null, [], {}, jsonReport)
  }
  const controller = new AbortController()
  // A run with a stage that stops on request (a daemon) is asked to stop first, and ends as it ends (exit 0
  // when it stops cleanly); a second signal, or any signal to another run, stops it at once (exit 130).
  const stopping = new AbortController()
  const graceful = stages.some((s) => s.def.stopsOnRequest)
  const onSignal = (sig: NodeJS.Signals) => {
    if (graceful && !stopping.signal.aborted) {
      stopping.abort(sig)
      process.once(sig, onSignal)
      return
    }
    controller.abort(new PipeError('run.interrupted', `stopped by ${sig}`, { exitCode: 130 }))
  }
  if (settings.handleSignals) {
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
  }
  const outer = settings.signal
  const onOuterAbort = () => controller.abort(outer?.reason)
  outer?.addEventListener('abort', onOuterAbort, { once: true })

  const findings = new FindingSink({ json: settings.json, out: settings.stdout, ...(settings.maxFindings !== undefined ? { maxPerCode: settings.maxFindings } : {}), ...(formatFinding ? { format: formatFinding } : {}), ...(jsonReport ? { toJson: jsonReport.finding } : {}) })
  const summary: Record<string, unknown> = {}
  const undo: (() => Promise<void>)[] = []
  const ctx: RunContext = { signal: controller.signal, stopRequested: stopping.signal, stdin: settings.stdin, stdout: settings.stdout, stderr: settings.stderr, findings, summary, onFailure: (fn) => { undo.push(fn) } }
  const metrics: StageMetrics[] = stages.map((s) => ({ name: s.def.name, items_in: 0, bytes_in: 0, items_out: 0, bytes_out: 0 }))
  const failedStage = new WeakMap<object, string>()
  const progress = settings.progress ? startProgress(settings.stderr, metrics) : undefined
  const started = performance.now()

  try {
    const streams: unknown[] = []
    for (let i = 0; i < stages.length; i++) {
      const { def, options } = stages[i]!
      const stream = await def.create(options, { ...ctx, stage: def.name })
      streams.push(tagErrors(stream, def.name, failedStage))
      if (i < stages.length - 1) streams.push(counter(metrics[i]!, metrics[i + 1]!))
    }
    await (pipeline as (...args: unknown[]) => Promise<void>)(...streams, { signal: controller.signal })
    await finish?.(ctx)
  } catch (err) {
    for (const fn of undo.reverse()) await fn().catch(() => undefined)
    const reason = controller.signal.aborted ? controller.signal.reason ?? err : err
    const stage = typeof reason === 'object' && reason !== null ? failedStage.get(reason) : undefined
    return fail(settings, asPipeError(reason, stage), findings, metrics, summary, jsonReport, started)
  } finally {
    progress?.stop()
    if (settings.handleSignals) {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
    }
    outer?.removeEventListener('abort', onOuterAbort)
  }

  const ok = findings.count === 0
  const elapsed = Math.round(performance.now() - started)
  if (settings.json) {
    settings.stdout.write(closeJson(ok, summary, metrics, elapsed, jsonReport, findings.leftOut))
  } else {
    if (findings.hidden > 0) settings.stdout.write(`... ${findings.hidden} more findings (--json lists them)\n`)
    if (findings.leftOut > 0) settings.stdout.write(`... ${findings.leftOut} findings left out, past ${settings.maxFindings ?? DEFAULT_MAX_FINDINGS_PER_CODE} of their code (--max-findings)\n`)
    if (findings.hiddenNotes > 0) settings.stdout.write(`... ${findings.hiddenNotes} more notes\n`)
    settings.stdout.write(textSummary(name, ok, findings.count, summary) + '\n')
  }
  return { exitCode: ok ? EXIT_OK : EXIT_DATA, ok, findings: findings.count, summary, stages: metrics }
}

function closeJson(ok: boolean, summary: Record<string, unknown>, metrics: StageMetrics[], elapsedMs: number, jsonReport: JsonReport | undefined, leftOut: number, error?: PipeError): string {
  // findings_left_out: findings past --max-findings of their code, counted and not listed.
  const rest: Record<string, unknown> = jsonReport
    ? { ok, ...Object.fromEntries(jsonReport.summary.map((k) => [k, summary[k] ?? null])), findings_left_out: leftOut }
    : { ok, ...summary, findings_left_out: leftOut, stages: metrics, elapsed_ms: elapsedMs }
  if (error) rest.error = error.toJSON()
  return '],' + JSON.stringify(rest).slice(1) + '\n'
}

function textSummary(name: string, ok: boolean, findings: number, summary: Record<string, unknown>): string {
  const fields = Object.entries(summary).map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
  return [`${name}: ${ok ? 'ok' : 'FAILED'}`, ...fields, `findings ${findings}`].join(', ')
}

/** A run that failed before it could start (its pipeline file unreadable): reported as any failed run is. */
export function failedRun(settings: RunSettings, err: unknown): RunResult {
  return fail(settings, asPipeError(err), null, [], {})
}

function fail(settings: RunSettings, error: PipeError, findings: FindingSink | null, metrics: StageMetrics[], summary: Record<string, unknown>, jsonReport?: JsonReport, started = performance.now()): RunResult {
  settings.stderr.write(`pipe: ${error.oneLine()}\n`)
  if (settings.json) {
    if (!findings) settings.stdout.write('{"findings":[')
    settings.stdout.write(closeJson(false, summary, metrics, Math.round(performance.now() - started), jsonReport, findings?.leftOut ?? 0, error))
  }
  return { exitCode: error.exitCode, ok: false, findings: findings?.count ?? 0, summary, stages: metrics, error }
}

/** Remembers which stage an error came from, since `pipeline` rejects with the bare first error. */
function tagErrors(stream: StageStream, stage: string, failedStage: WeakMap<object, string>): unknown {
  const tag = (err: unknown) => {
    if (err instanceof PipeError && !err.stage) err.stage = stage
    if (typeof err === 'object' && err !== null && !failedStage.has(err)) failedStage.set(err, stage)
  }
  if (stream instanceof Readable || stream instanceof Writable) {
    stream.on('error', tag)
    return stream
  }
  if (typeof stream === 'function') {
    const fn = stream as StageFunction
    return async function* (source: AsyncIterable<unknown>, opts: { signal: AbortSignal }) {
      try {
        const result = fn(source, opts)
        if (result && typeof (result as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function') yield* result as AsyncIterable<unknown>
        else await result
      } catch (err) {
        tag(err)
        throw err
      }
    }
  }
  const iterable = stream as AsyncIterable<unknown>
  return (async function* () {
    try {
      yield* iterable
    } catch (err) {
      tag(err)
      throw err
    }
  })()
}

/** Sits between two stages and counts what crosses: the upstream's output is the downstream's input. */
function counter(up: StageMetrics, down: StageMetrics) {
  return async function* (source: AsyncIterable<unknown>) {
    for await (const chunk of source) {
      const { items, bytes } = measure(chunk)
      up.items_out += items
      up.bytes_out += bytes
      down.items_in += items
      down.bytes_in += bytes
      yield chunk
    }
  }
}

function startProgress(out: Writable, metrics: StageMetrics[]) {
  const started = performance.now()
  const draw = () => {
    const secs = (performance.now() - started) / 1000
    const parts = metrics.slice(0, -1).map((m) => `${m.name} ${m.items_out} items ${formatBytes(m.bytes_out)}`)
    out.write(`\r\x1b[K${secs.toFixed(1)}s  ${parts.join(' | ')}`)
  }
  const timer = setInterval(draw, 250)
  timer.unref()
  return { stop() { clearInterval(timer); out.write('\r\x1b[K') } }
}

export type { Finding }

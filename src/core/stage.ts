import type { Duplex, Readable, Writable } from 'node:stream'
import type { z } from 'zod'
import type { FindingSink } from './findings.js'
import type { ItemType } from './items.js'
import type { OptionsSchema } from './schema.js'

export type StageKind = 'source' | 'transform' | 'sink'

/** A transform or sink written as a function over the upstream items (what `stream/promises` pipeline accepts). */
export type StageFunction = (source: AsyncIterable<unknown>, opts: { signal: AbortSignal }) => AsyncIterable<unknown> | Promise<unknown>

/** What a stage's factory returns: a Node stream, or an async iterable (source) or function (transform, sink). */
export type StageStream = Readable | Duplex | Writable | AsyncIterable<unknown> | StageFunction

/** Everything a stage may use beyond its own options. One per run, shared by its stages. */
export interface RunContext {
  readonly signal: AbortSignal
  /** Aborted when the user asks a long-running stage to stop (SIGINT or SIGTERM), before `signal` is. */
  readonly stopRequested: AbortSignal
  readonly stdin: NodeJS.ReadableStream & Readable
  readonly stdout: Writable
  readonly stderr: Writable
  /** Where verifier stages put what they find. */
  readonly findings: FindingSink
  /** Fields a pipeline adds to its summary (e.g. `lines`); printed in the JSON summary and the text report. */
  readonly summary: Record<string, unknown>
  /**
   * Registers what to undo if the run fails after this point: a stage that hands a temporary on to a later
   * stage (a sealed hour's folder, before the commit lands it) removes it here, since it cannot tell from
   * inside its own stream whether a later stage failed.
   */
  onFailure(undo: () => Promise<void>): void
}

export interface StageContext extends RunContext {
  /** The stage's own name, for errors it raises. */
  readonly stage: string
}

export interface StageDef<S extends OptionsSchema = OptionsSchema> {
  readonly name: string
  readonly kind: StageKind
  readonly summary: string
  readonly takes: ItemType
  readonly gives: ItemType
  readonly options: S
  /** True when the stage writes to standard output, which then cannot also carry the JSON summary. */
  readonly usesStdout?: boolean
  /**
   * True for a stage that runs until asked to stop (a daemon): SIGINT or SIGTERM aborts `stopRequested`,
   * and the stage ends its run cleanly; only a second signal stops the run at once.
   */
  readonly stopsOnRequest?: boolean
  create(options: z.infer<S>, ctx: StageContext): StageStream | Promise<StageStream>
}

/** Declares a stage once; its options schema drives CLI flags, JSON pipelines and `pipe describe`. */
export function defineStage<S extends OptionsSchema>(def: StageDef<S>): StageDef<S> {
  if (def.kind === 'source' && def.takes !== 'none') throw new Error(`stage ${def.name}: a source takes none`)
  if (def.kind === 'sink' && def.gives !== 'none') throw new Error(`stage ${def.name}: a sink gives none`)
  return def
}

/** One stage of a pipeline with its options, before validation. */
export interface StageUse {
  stage: string
  options?: Record<string, unknown>
}

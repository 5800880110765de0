/** Where in the input a problem sits; every part is optional because not every stage knows every part. */
export interface Location {
  file?: string
  line?: number
  /** Byte offset from the start of the (decompressed, when the stage sees decompressed bytes) stream. */
  offset?: number
  row?: number
  /** A JSON path such as `stages[1].options.maxLineBytes`. */
  field?: string
}

/** Exit codes shared by every command: 1 means the data failed a check, 2 a usage or environment problem. */
export const EXIT_OK = 0
export const EXIT_DATA = 1
export const EXIT_USAGE = 2

/**
 * An error with a stable machine-readable code (git-fsck style, e.g. `raw.zstd-ratio-cap`), the stage
 * that raised it and where. Users script against `code`, so codes never change meaning once published.
 */
export class PipeError extends Error {
  readonly code: string
  readonly exitCode: number
  stage: string | undefined
  readonly location: Location | undefined

  constructor(code: string, message: string, opts: { exitCode?: number; stage?: string; location?: Location; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.name = 'PipeError'
    this.code = code
    this.exitCode = opts.exitCode ?? EXIT_DATA
    this.stage = opts.stage
    this.location = opts.location
  }

  /** The one-line form printed to stderr: `pipe: [stage] file:line (byte N): message (code)`. */
  oneLine(): string {
    const where = formatLocation(this.location)
    const stage = this.stage ? `[${this.stage}] ` : ''
    return `${stage}${where ? where + ': ' : ''}${this.message} (${this.code})`
  }

  toJSON(): Record<string, unknown> {
    return { code: this.code, message: this.message, stage: this.stage ?? null, location: this.location ?? null }
  }
}

/** Bad flags, unknown names, missing files: the user's invocation is wrong, not the data. */
export class UsageError extends PipeError {
  constructor(code: string, message: string, opts: { stage?: string; location?: Location; cause?: unknown } = {}) {
    super(code, message, { ...opts, exitCode: EXIT_USAGE })
    this.name = 'UsageError'
  }
}

export function formatLocation(loc: Location | undefined): string {
  if (!loc) return ''
  const parts: string[] = []
  if (loc.file !== undefined) parts.push(loc.file)
  if (loc.line !== undefined) parts.push(`line ${loc.line}`)
  if (loc.row !== undefined) parts.push(`row ${loc.row}`)
  if (loc.offset !== undefined) parts.push(`byte ${loc.offset}`)
  if (loc.field !== undefined) parts.push(loc.field)
  return parts.join(', ')
}

/**
 * A step whose failure is a usage or environment error (exit 2), not data failing a check: a data error it
 * throws becomes a UsageError with the same code, its message after `prefix` (e.g. the option that named
 * the file) and at `location`.
 */
export async function asUsage<T>(step: () => Promise<T>, prefix = '', location?: Location): Promise<T> {
  try {
    return await step()
  } catch (err) {
    throw err instanceof PipeError && err.exitCode === EXIT_DATA ? new UsageError(err.code, prefix + err.message, { cause: err, ...(location ? { location } : {}) }) : err
  }
}

/** Wraps anything thrown into a PipeError, keeping a PipeError's code and adding the stage when missing. */
export function asPipeError(err: unknown, stage?: string): PipeError {
  if (err instanceof PipeError) {
    if (stage && !err.stage) err.stage = stage
    return err
  }
  const e = err as NodeJS.ErrnoException
  if (e && typeof e === 'object' && typeof e.code === 'string' && typeof e.syscall === 'string') {
    const file = (e as { path?: string }).path
    return new UsageError(`env.${e.code.toLowerCase()}`, e.message, { ...(stage ? { stage } : {}), ...(file ? { location: { file } } : {}), cause: err })
  }
  if (e && typeof e === 'object' && e.name === 'AbortError') {
    return new PipeError('run.aborted', 'stopped by signal', { exitCode: 130, ...(stage ? { stage } : {}), cause: err })
  }
  const message = err instanceof Error ? err.message : String(err)
  return new PipeError('internal', message, { exitCode: EXIT_USAGE, ...(stage ? { stage } : {}), cause: err })
}

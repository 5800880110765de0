import { PassThrough } from 'node:stream'
import type { RunSettings } from '../../src/core/runner.js'

/** In-memory stdio for running a pipeline in-process, with what it printed. */
export function captureIO(json = false) {
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  const out: Buffer[] = []
  const err: Buffer[] = []
  stdout.on('data', (d: Buffer) => out.push(d))
  stderr.on('data', (d: Buffer) => err.push(d))
  const settings: RunSettings = { stdin: new PassThrough() as never, stdout, stderr, json, progress: false, handleSignals: false }
  return { settings, out: () => Buffer.concat(out).toString(), err: () => Buffer.concat(err).toString() }
}

/**
 * The environment for a CLI child process of a test: tap puts its own loader into NODE_OPTIONS, which
 * would make every child slower and larger than a user's `pipe`.
 */
export function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env }
  delete env.NODE_OPTIONS
  return env
}

/** Runs `step` with the environment variable `name` set to `value` (TMPDIR, which os.tmpdir() reads each time; PATH), then as it was. */
export async function withEnv<T>(name: string, value: string, step: () => Promise<T>): Promise<T> {
  const before = process.env[name]
  process.env[name] = value
  try {
    return await step()
  } finally {
    if (before === undefined) delete process.env[name]
    else process.env[name] = before
  }
}

/** Every item of an async iterable, in order (Array.fromAsync is Node 22's). */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = []
  for await (const item of items) all.push(item)
  return all
}

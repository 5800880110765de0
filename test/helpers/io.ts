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

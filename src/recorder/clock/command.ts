/**
 * Runs a short command (chronyc) without ever holding up the event loop: spawned asynchronously, its
 * output gathered up to a cap, and killed, with any children it started, when it outlives its timeout, so a
 * hung chronyc costs one timeout and never a stuck poll. The clock takes the runner as an option, so tests
 * replace it with recorded outputs.
 */
import { spawn } from 'node:child_process'

export interface CommandResult {
  /** Exit code; null when killed by a signal or never started. */
  code: number | null
  stdout: string
  stderr: string
  /** Killed after outliving its timeout. */
  timedOut: boolean
  /** Killed because its signal aborted. */
  aborted?: boolean
  /** It could not be started (e.g. ENOENT: not installed). */
  error?: Error
}

export interface RunOptions {
  /** Killed when it runs longer than this. */
  timeoutMs: number
  /** Killed when this aborts (the clock stopping). */
  signal?: AbortSignal
}

export type CommandRunner = (command: string, args: readonly string[], options: RunOptions) => Promise<CommandResult>

/** Output beyond this is not kept: chronyc's answers are a few hundred bytes. */
const MAX_OUTPUT_BYTES = 64 * 1024

/**
 * Spawns `command` in a process group of its own, so that on timeout or abort the whole group is killed
 * (SIGKILL): a script that started a child of its own leaves nothing behind holding the pipes open.
 */
export const runCommand: CommandRunner = (command, args, { timeoutMs, signal }) =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve({ code: null, stdout: '', stderr: '', timedOut: false, aborted: true })
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    const out: Buffer[] = []
    const err: Buffer[] = []
    let outBytes = 0
    let settled = false
    const finish = (result: CommandResult) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      signal?.removeEventListener('abort', abort)
      resolve(result)
    }
    const keep = (into: Buffer[]) => (chunk: Buffer) => {
      if (outBytes >= MAX_OUTPUT_BYTES) return
      outBytes += chunk.length
      into.push(chunk)
    }
    child.stdout.on('data', keep(out))
    child.stderr.on('data', keep(err))
    const text = (chunks: Buffer[]) => Buffer.concat(chunks).toString('utf8')
    const kill = (why: { timedOut: boolean; aborted?: boolean }) => {
      // Before 'close': the command, or a child of it holding its pipes, still runs in the group.
      if (settled) return
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL')
      } catch {
        child.kill('SIGKILL')
      }
      child.stdout.destroy()
      child.stderr.destroy()
      finish({ code: null, stdout: text(out), stderr: text(err), ...why })
    }
    const timer = setTimeout(() => kill({ timedOut: true }), timeoutMs)
    const abort = () => kill({ timedOut: false, aborted: true })
    signal?.addEventListener('abort', abort)
    child.on('error', (error) => finish({ code: null, stdout: '', stderr: '', timedOut: false, error }))
    child.on('close', (code) => finish({ code, stdout: text(out), stderr: text(err), timedOut: false }))
  })

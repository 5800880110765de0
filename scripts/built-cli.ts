/** The built CLI as the scripts run it: in a child process, started as a user's `pipe` starts. */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const HERE = dirname(fileURLToPath(import.meta.url))
/** The checkout: this file is scripts/ under it, or dist/scripts/ when built. */
export const REPO = existsSync(join(HERE, '..', 'package.json')) ? join(HERE, '..') : join(HERE, '..', '..')
export const CLI = join(REPO, 'dist', 'bin', 'pipe.js')

/**
 * Starts `pipe args...` (after `nodeArgs`) as a user's `pipe` starts: through env(1), which drops
 * NODE_OPTIONS, so that neither a test runner's loader there nor its wrapping of child processes that run
 * node (tap's processinfo adds its own hooks to those) makes each start slower and larger than a user's.
 */
export function spawnCli(args: readonly string[], options: SpawnOptions = {}, nodeArgs: readonly string[] = []): ChildProcess {
  return spawn('env', ['-u', 'NODE_OPTIONS', process.execPath, ...nodeArgs, CLI, ...args], { ...options, env: { ...process.env, ...options.env } })
}

/** Runs `pipe args...` to its end. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout!.on('data', (d: Buffer) => { stdout += d.toString() })
    child.stderr!.on('data', (d: Buffer) => { stderr += d.toString() })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

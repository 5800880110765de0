/** The built CLI as the scripts run it: in a child process, started as a user's `pipe` starts. */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const HERE = dirname(fileURLToPath(import.meta.url))
/** The checkout: this file is scripts/ under it, or dist/scripts/ when built. */
export const REPO = existsSync(join(HERE, '..', 'package.json')) ? join(HERE, '..') : join(HERE, '..', '..')
export const CLI = join(REPO, 'dist', 'bin', 'pipe.js')

/** The environment with `extra`, less NODE_OPTIONS: a test runner's loader there would make each start slower than a user's. */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra }
  delete env.NODE_OPTIONS
  return env
}

/** Runs `pipe args...` to its end. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** Loopback ports and child processes for the real servers and CLI runs of the tests, benches and soaks. */
import { spawn } from 'node:child_process'
import { connect, createServer } from 'node:net'

/** A free loopback port: one the system gave a listener that is closed again. */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** Whether something accepts connections on the loopback port. */
export async function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1')
    s.once('connect', () => { s.destroy(); resolve(true) })
    s.once('error', () => resolve(false))
  })
}

export interface ChildRun { code: number; out: string; err: string }

/**
 * Runs `node SCRIPT ...args` and gives its exit code (128 when killed) and what it printed; `onSpawn` gets
 * its pid (to kill it part way).
 */
export function runNode(script: string, args: string[], env: NodeJS.ProcessEnv, onSpawn?: (pid: number) => void): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    if (onSpawn && child.pid !== undefined) onSpawn(child.pid)
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => { out += d.toString() })
    child.stderr.on('data', (d: Buffer) => { err += d.toString() })
    child.once('error', reject)
    child.once('exit', (code, signal) => resolve({ code: code ?? (signal ? 128 : -1), out, err }))
  })
}

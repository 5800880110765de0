/**
 * An external signer: a command (run by /bin/sh, so a user writes it as on a shell line) that signs the
 * bytes it is given and prints the raw signature on standard output. The bytes come on standard input and,
 * for a tool that wants a file (openssl's one-shot Ed25519 cannot read a pipe), in the file named by
 * $PIPE_SIGN_INPUT (private to this user, removed after): `openssl pkeyutl -sign -rawin -inkey key.pem
 * -in "$PIPE_SIGN_INPUT"`. It lets the private key live in a hardware token or a KMS: pipe never sees it.
 * The output is bounded, the command has a time limit, and a failure names the command's exit status and
 * the tail of what it printed on stderr. `env` adds what a signer must know besides the bytes (an SSH
 * signature's namespace, $PIPE_SIGN_NAMESPACE).
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { UsageError } from './errors.js'

const MAX_OUTPUT_BYTES = 64 * 2 ** 10
const STDERR_TAIL = 400

export async function runSignerCommand(command: string, input: Uint8Array, o: { env?: Record<string, string>; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<Buffer> {
  o.signal?.throwIfAborted()
  const dir = await mkdtemp(join(tmpdir(), 'pipe-sign-'))
  try {
    const file = join(dir, 'input')
    await writeFile(file, input, { mode: 0o600 })
    return await run(command, input, { ...o.env, PIPE_SIGN_INPUT: file }, o.timeoutMs ?? 60_000, o.signal)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

function run(command: string, input: Uint8Array, env: Record<string, string>, timeoutMs: number, signal: AbortSignal | undefined): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // A group of its own, so that a stop or a time-out ends what the shell started too (a `sleep`, a token's
    // helper), which would otherwise hold its output open and the run with it.
    const child = spawn('/bin/sh', ['-c', command], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env }, detached: true })
    const out: Buffer[] = []
    let outBytes = 0
    let stderr = ''
    let failure: UsageError | undefined
    const fail = (message: string) => {
      failure ??= new UsageError('sign.command-failed', `--signer-cmd ${JSON.stringify(command)}: ${message}`)
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL')
      } catch {
        child.kill('SIGKILL')
      }
    }
    const timer = setTimeout(() => fail(`no answer within ${timeoutMs / 1000} s`), timeoutMs)
    // A run stopped while the signer waits (a token waiting for a touch) stops the signer too: what it
    // would sign must not land after the user was told the run stopped.
    const stop = () => fail('stopped: the run was interrupted')
    signal?.addEventListener('abort', stop, { once: true })
    child.stdout.on('data', (d: Buffer) => {
      outBytes += d.byteLength
      if (outBytes > MAX_OUTPUT_BYTES) fail(`printed more than ${MAX_OUTPUT_BYTES} bytes, which is no signature`)
      else out.push(d)
    })
    child.stderr.on('data', (d: Buffer) => { stderr = (stderr + d.toString('utf8')).slice(-STDERR_TAIL) })
    child.on('error', (err) => fail(err.message))
    // A signer that exits without reading its input is its own failure, told by its exit status.
    child.stdin.on('error', () => undefined)
    child.on('close', (code, exitSignal) => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', stop)
      if (failure) return reject(failure)
      if (code !== 0) return reject(new UsageError('sign.command-failed', `--signer-cmd ${JSON.stringify(command)}: exited with ${exitSignal ?? `status ${code}`}${stderr.trim() ? `: ${stderr.trim().split('\n').at(-1)}` : ''}`))
      resolve(Buffer.concat(out))
    })
    child.stdin.end(input)
  })
}

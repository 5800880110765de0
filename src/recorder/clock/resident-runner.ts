/**
 * Runs chronyc at every poll through one resident shell, so that the recorder itself forks once, not once a
 * second. On Linux, Node 20's spawn() forks the whole process (libuv 1.46), and the fork holds the event
 * loop while the kernel copies the page tables: about 15 ms per GB of resident memory (measured here:
 * 0.9 ms at 47 MB, 4.7 ms at 309 MB, 22 ms at 1.1 GB). A frame arriving then would be stamped late. The
 * shell is a few MB, and it forks chronyc in its own process, off our thread.
 *
 * Each request is a newline on the shell's stdin; the shell runs the command (stdin from /dev/null, stderr
 * into stdout) and ends its output with a marker line carrying the exit status. A request that outlives
 * its timeout, or is aborted, kills the shell's process group (the shell, chronyc, anything they started);
 * the next request starts a new shell.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import type { CommandResult, CommandRunner, RunOptions } from './command.js'

/** The shell's loop: $0 is the command, "$@" its arguments. */
const LOOP = 'while IFS= read -r _; do "$0" "$@" </dev/null 2>&1; printf "\\n@@end %d\\n" $?; done'
const END = /\n@@end (\d+)\n/

/** Output beyond this is a runaway command: it is killed. */
const MAX_OUTPUT_CHARS = 64 * 1024

interface Shell {
  key: string
  child: ChildProcessWithoutNullStreams
  output: string
  /** Takes the result of the request in flight. */
  answer: ((result: CommandResult) => void) | undefined
}

export type ResidentRunner = CommandRunner & {
  /** Kills the shell (and a command it runs). The next request starts a new one. */
  close(): void
  /** The shell's process id, while one runs. */
  readonly pid: number | undefined
}

/** A runner keeping one shell for its command and arguments (a request with others replaces the shell). */
export function residentRunner(): ResidentRunner {
  let shell: Shell | undefined

  const close = () => {
    const s = shell
    if (!s) return
    shell = undefined
    try {
      if (s.child.pid !== undefined) process.kill(-s.child.pid, 'SIGKILL')
    } catch {
      s.child.kill('SIGKILL')
    }
    s.child.stdin.destroy()
    s.child.stdout.destroy()
  }

  const start = (command: string, args: readonly string[], key: string): Shell => {
    const child = spawn('/bin/sh', ['-c', LOOP, command, ...args], { stdio: ['pipe', 'pipe', 'pipe'], detached: true })
    const s: Shell = { key, child, output: '', answer: undefined }
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (text: string) => {
      s.output += text
      const end = END.exec(s.output)
      if (end) {
        const stdout = s.output.slice(0, end.index)
        s.output = s.output.slice(end.index + end[0].length)
        s.answer?.({ code: Number(end[1]), stdout, stderr: '', timedOut: false })
      } else if (s.output.length > MAX_OUTPUT_CHARS) {
        s.answer?.({ code: null, stdout: '', stderr: '', timedOut: false, error: new Error(`${command} printed over ${MAX_OUTPUT_CHARS} characters and was killed`) })
        if (shell === s) close()
      }
    })
    child.stderr.resume()
    child.stdin.on('error', () => {}) // EPIPE once the shell is gone: its 'exit' answers
    child.on('error', (error) => {
      if (shell === s) shell = undefined
      s.answer?.({ code: null, stdout: '', stderr: '', timedOut: false, error })
    })
    child.on('exit', (code, signal) => {
      if (shell === s) shell = undefined
      s.answer?.({ code: null, stdout: '', stderr: '', timedOut: false, error: new Error(`the shell running ${command} exited (${signal ?? code})`) })
    })
    // The recorder's sockets keep the process alive, not its clock's shell.
    child.unref()
    for (const stream of [child.stdin, child.stdout, child.stderr]) (stream as unknown as { unref?: () => void }).unref?.()
    return s
  }

  const run: CommandRunner = (command: string, args: readonly string[], { timeoutMs, signal }: RunOptions) =>
    new Promise<CommandResult>((resolve) => {
      if (signal?.aborted) return resolve({ code: null, stdout: '', stderr: '', timedOut: false, aborted: true })
      const key = JSON.stringify([command, ...args])
      if (shell && shell.key !== key) close()
      const s = (shell ??= start(command, args, key))
      const finish = (result: CommandResult) => {
        if (s.answer !== finish) return
        s.answer = undefined
        clearTimeout(timer)
        signal?.removeEventListener('abort', abort)
        resolve(result)
      }
      const kill = (why: Partial<CommandResult>) => {
        const output = s.output
        finish({ code: null, stdout: output, stderr: '', timedOut: false, ...why })
        if (shell === s) close()
      }
      const timer = setTimeout(() => kill({ timedOut: true }), timeoutMs)
      const abort = () => kill({ aborted: true })
      signal?.addEventListener('abort', abort)
      s.answer = finish
      s.output = ''
      s.child.stdin.write('\n')
    })

  const runner = Object.assign(run, { close }) as ResidentRunner
  Object.defineProperty(runner, 'pid', { get: () => shell?.child.pid })
  return runner
}

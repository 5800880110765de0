/**
 * The daemon's hourly sealing: each channel's hour H is sealed once H has ended and a grace period has
 * passed, by `pipe run seal-hour` in a child process, so that sealing never holds up recording (the child
 * has its own event loop, heap and threads). On start, every hour from the one after the chain's last
 * sealed hour (or the journal's first hour, for a new chain) up to the last ended one is sealed in order:
 * the chain never skips an hour, and hours the recorder was down are sealed `missing` or `partial` with
 * `recorder_down`, as the journal shows them.
 *
 * The grace period covers what can still arrive for an hour after its end: the pairing window (a frame's
 * receipt on the other replica up to 5 s later), receipts the journal writer has not flushed yet (its
 * fsync interval), and the heartbeat that shows the recorder passed the hour (docs/recorder.md).
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { HOUR_NS, hourName, listJournalFiles, locateJournalReplicas } from '../formats/record/journal/journal.js'
import { lastSealedHour } from '../formats/record/seal/seal.js'
import type { Channel } from '../formats/record/types.js'
import type { Logger } from './log.js'

export interface SealerOptions {
  cli: string
  venue: string
  channels: readonly Channel[]
  /** The journal directories of a channel: this daemon's, and those other replicas' hosts copy here. */
  journalsOf(channel: Channel): readonly string[]
  root: string
  key: string
  keys?: string
  recorder: string
  /** How long after an hour's end it is sealed (default 60 s). */
  graceMs?: number
  /** How often the sealer looks for hours to seal (default 10 s). */
  everyMs?: number
  /** How long a seal may have too little CPU at nice 19 before it is run again at normal priority (default 30 s). */
  starvedWindowMs?: number
  /** The real-time clock, ns since the epoch. */
  now(): bigint
  log: Logger
  /** A seal's outcome, for metrics. */
  sealed?(channel: Channel, hour: bigint, seconds: number, ok: boolean): void
}

/**
 * The command line that runs `pipe` with `args` (the CLI's path first) as the daemon seals: at the lowest
 * priority, so that receipts wait for no seal, as the seal's three busy threads and the recorder share the
 * host's cores (bench:record, docs/performance.md: p99 receive-to-write while sealing 0.36 ms at nice 19,
 * 0.8-1.2 ms at nice 10). nice(1) lowers every thread the child makes, where setpriority(2) on its pid would
 * miss those started before the call. `yielding` false: at the daemon's own priority (see STARVED).
 */
export function sealCommand(args: readonly string[], yielding = true): string[] {
  return yielding && process.platform === 'linux' ? ['nice', '-n', '19', process.execPath, ...args] : [process.execPath, ...args]
}

/**
 * A seal at nice 19 gets a fortieth of a core against each busy process: on a host that other work keeps
 * busy it could wait for hours. One that has had less than `share` of a core over the last `windowMs` is
 * stopped (a seal is crash-safe: nothing of it stays) and run again at the daemon's priority, which an
 * unprivileged process cannot raise a child back to otherwise. A seal that computes, or waits on a disk, as
 * fast as the host lets it at nice 19 is left alone unless it waits that long.
 */
const STARVED = { share: 0.1, windowMs: 30_000 }

/** The CPU time a Linux process has used, in seconds, from /proc (user and system, every thread); null when unknown. */
function cpuSecondsOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    // The command name may hold spaces and parentheses: the fields counted from after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
  } catch {
    return null
  }
}

/** USER_HZ: the unit of /proc's CPU times, 100 on every Linux architecture Node runs on. */
const TICKS_PER_SECOND = 100

export class HourlySealer {
  private timer: NodeJS.Timeout | null = null
  private running: Promise<void> | null = null
  private stopped = false

  constructor(private readonly o: SealerOptions) {}

  start(): void {
    const tick = () => {
      if (this.stopped || this.running) return
      this.running = this.sealDue().catch((err: Error) => this.o.log('error', 'sealing failed', { error: err.message })).finally(() => { this.running = null })
    }
    tick()
    this.timer = setInterval(tick, this.o.everyMs ?? 10_000)
    this.timer.unref()
  }

  /** Calls `starving` once the process `pid` has had less than STARVED.share of a core over STARVED.windowMs. */
  private watchStarvation(pid: number, starving: () => void): NodeJS.Timeout | null {
    const windowMs = this.o.starvedWindowMs ?? STARVED.windowMs
    const samples: { at: number; cpu: number }[] = []
    const timer = setInterval(() => {
      const cpu = cpuSecondsOf(pid)
      if (cpu === null) return
      const at = performance.now()
      samples.push({ at, cpu })
      while (samples.length > 1 && at - samples[1]!.at >= windowMs) samples.shift()
      const first = samples[0]!
      if (at - first.at >= windowMs && (cpu - first.cpu) * 1000 < STARVED.share * (at - first.at)) {
        clearInterval(timer)
        starving()
      }
    }, Math.max(50, windowMs / 10))
    timer.unref()
    return timer
  }

  /** Stops looking for hours; a seal under way is let finish (it is crash-safe, but a finished one is not redone). */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
    await this.running
  }

  /** Seals every due hour of every channel, oldest first. */
  async sealDue(): Promise<void> {
    const graceNs = BigInt(this.o.graceMs ?? 60_000) * 1_000_000n
    for (const channel of this.o.channels) {
      let next = await this.nextHour(channel)
      while (next !== null && !this.stopped && next + HOUR_NS + graceNs <= this.o.now()) {
        if (!(await this.seal(channel, next))) break
        next += HOUR_NS
      }
    }
  }

  /** The hour after the chain's last sealed one; for a new chain, the journal's first hour; null with no journal yet. */
  private async nextHour(channel: Channel): Promise<bigint | null> {
    const last = await lastSealedHour(this.o.root, { recorder: this.o.recorder, venue: this.o.venue, channel })
    if (last !== null) return last + HOUR_NS
    let first: bigint | null = null
    for (const [replica, dir] of await locateJournalReplicas(this.o.journalsOf(channel))) {
      const files = await listJournalFiles(dir, replica)
      if (files.length > 0 && (first === null || files[0]!.hour < first)) first = files[0]!.hour
    }
    return first
  }

  private seal(channel: Channel, hour: bigint, yielding = true): Promise<boolean> {
    const args = [
      this.o.cli, 'run', 'seal-hour', '--venue', this.o.venue, '--channel', channel, '--hour', hourName(hour),
      ...this.o.journalsOf(channel).flatMap((dir) => ['--journal', dir]), '--out', this.o.root, '--key', this.o.key, '--recorder', this.o.recorder, '--json',
      ...(this.o.keys ? ['--keys', this.o.keys] : []),
    ]
    const started = performance.now()
    return new Promise((resolve) => {
      const [command, ...commandArgs] = sealCommand(args, yielding)
      const child = spawn(command!, commandArgs, { stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      let err = ''
      let starved = false
      // nice(1) execs node in place: the child's pid is the seal's.
      const watch = yielding && child.pid !== undefined ? this.watchStarvation(child.pid, () => { starved = true; child.kill('SIGKILL') }) : null
      child.stdout!.on('data', (d: Buffer) => { out += d.toString() })
      child.stderr!.on('data', (d: Buffer) => { err += d.toString() })
      child.on('close', (code) => {
        if (watch) clearInterval(watch)
        const seconds = (performance.now() - started) / 1000
        if (starved && !this.stopped) {
          this.o.log('warn', 'the seal got too little CPU at nice 19; sealing the hour again at the daemon\'s priority', { channel, hour: hourName(hour), seconds: Number(seconds.toFixed(3)) })
          resolve(this.seal(channel, hour, false))
          return
        }
        const ok = code === 0
        this.o.sealed?.(channel, hour, seconds, ok)
        if (ok) {
          let summary: Record<string, unknown> = {}
          try { summary = JSON.parse(out) as Record<string, unknown> } catch { /* logged as it is */ }
          this.o.log('info', 'hour sealed', { channel, hour: hourName(hour), seconds: Number(seconds.toFixed(3)), status: summary['status'], frames: summary['frames'], reasons: summary['reasons'] })
        } else {
          this.o.log('error', 'seal-hour failed; trying again later', { channel, hour: hourName(hour), exit: code, stderr: err.trim().slice(0, 1000) })
        }
        resolve(ok)
      })
    })
  }
}

/** Runs the built `pipe` CLI under /usr/bin/time, for the benches: the child's wall and CPU time and peak RSS. */
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const cli = fileURLToPath(new URL('../bin/pipe.js', import.meta.url))

export interface Timed { wall: number; user: number; sys: number; cpu: number; rssMb: number; stdout: string; stderr: string }

/** `pipe ...args`, with extra node flags (e.g. --cpu-prof) and environment; throws with its output unless it exits 0. */
export function timedCli(args: string[], o: { nodeArgs?: string[]; env?: NodeJS.ProcessEnv } = {}): Timed {
  const r = spawnSync('/usr/bin/time', ['-f', 'bench-time %e %U %S %M', process.execPath, ...(o.nodeArgs ?? []), cli, ...args], { encoding: 'utf8', env: o.env ?? process.env, maxBuffer: 1 << 26 })
  const m = /bench-time ([\d.]+) ([\d.]+) ([\d.]+) (\d+)/.exec(r.stderr)
  if (r.status !== 0 || !m) throw new Error(`pipe ${args.join(' ')} failed (exit ${r.status}): ${r.stdout.slice(-2000)} ${r.stderr.slice(-2000)}`)
  const [user, sys] = [Number(m[2]), Number(m[3])]
  return { wall: Number(m[1]), user, sys, cpu: user + sys, rssMb: Number(m[4]) / 1024, stdout: r.stdout, stderr: r.stderr }
}

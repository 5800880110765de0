// Loaded with --import by the hostile-file harness (scripts/fuzz-files.ts) before the CLI: at exit it
// writes the process's peak RSS (KiB) to $PIPE_FUZZ_RSS, which the harness reads after the run. VmHWM is
// this process's own peak; getrusage's maxrss would also count the harness's memory, which a forked child
// carries until it execs.
import { readFileSync, writeFileSync } from 'node:fs'

const out = process.env.PIPE_FUZZ_RSS
if (out) {
  process.on('exit', () => {
    const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]
    writeFileSync(out, hwm ?? String(process.resourceUsage().maxRSS))
  })
}

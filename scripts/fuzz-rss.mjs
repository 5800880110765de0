// Loaded with --import by the hostile-file harness (scripts/fuzz-files.ts) before the CLI: at exit it
// writes the process's peak RSS (KiB) to $PIPE_FUZZ_RSS, which the harness reads after the run.
import { writeFileSync } from 'node:fs'

const out = process.env.PIPE_FUZZ_RSS
if (out) process.on('exit', () => writeFileSync(out, String(process.resourceUsage().maxRSS)))

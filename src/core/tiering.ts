/**
 * How soon V8 optimises a function: after it has run --interrupt-budget bytes of bytecode (66 KiB by
 * default, tuned for web pages). pipe's functions run over millions of rows, and optimised early they have
 * not yet seen every type and branch a part brings: their code is thrown away and compiled again, on the
 * compiler thread that shares two cores with the checks. With three times the budget, a pack-check of a
 * million patterns compiles 171 functions rather than 252, deoptimises 11 times rather than 18, and takes
 * 5-7% less CPU (medians of alternating runs); a publish is no slower. More than that (300,000, 500,000)
 * leaves the hot loops unoptimised for longer and is slower again.
 *
 * bin/pipe.ts imports this module first, so that the modules after it are evaluated under the flag; V8's flags
 * are the process's, so the worker threads have it too. A budget given on node's command line is kept.
 */
import { setFlagsFromString } from 'node:v8'

const INTERRUPT_BUDGET = 200_000

if (!process.execArgv.some((a) => a.startsWith('--interrupt-budget'))) setFlagsFromString(`--interrupt-budget=${INTERRUPT_BUDGET}`)

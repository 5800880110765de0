// The TypeScript loader the test runner (scripts/run-tests.mjs) gives every test process and, through
// execArgv, every worker thread one starts: .ts modules are transpiled with TypeScript's transpileModule
// (types stripped, nothing checked: `npm run typecheck` checks) and the result kept on disk by the SHA-256
// of its source, so the compiler is loaded only for a source that changed. tap's own loader (ts-node)
// transpiled every module again in every process and worker, 3 to 20 s of each test file's time.
import { register } from 'node:module'

register('./typescript-hooks.mjs', import.meta.url)

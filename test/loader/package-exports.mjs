// tap loads the tests through its TypeScript loader (a ts-node fork), whose module resolver refuses an
// exports pattern with its wildcard mid-string (`"./src/*.js"`, as hyparquet and hyparquet-writer export
// their modules): ERR_PACKAGE_PATH_NOT_EXPORTED for what Node itself resolves. Registered after tap's
// loader (package.json "tap": "node-arg"), so its hook runs first, this asks the loader and, on that one
// refusal, answers with Node's own resolution. It changes nothing a user's `node` or `pipe` does.
import { register } from 'node:module'

register('./package-exports-hooks.mjs', import.meta.url)

#!/usr/bin/env node
// V8's flags first (src/core/tiering.ts): the CLI's modules, loaded after, are evaluated under them, bundled or not.
import '../src/core/tiering.js'
await import('../src/cli.js')

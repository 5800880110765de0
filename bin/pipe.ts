#!/usr/bin/env node
// V8's flags first (src/core/tiering.ts), then the CLI, whose modules are evaluated under them.
import '../src/core/tiering.js'
await import('../src/cli.js')

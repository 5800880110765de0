import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** pipe's version from its package.json, found upwards from here (src/ under a loader, dist/src/ when built). */
function readVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    const path = join(dir, 'package.json')
    if (existsSync(path)) {
      const pkg = JSON.parse(readFileSync(path, 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'pipe' && pkg.version) return pkg.version
    }
  }
  return '0.0.0'
}

export const VERSION = readVersion()

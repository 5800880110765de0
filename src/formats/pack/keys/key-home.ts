/** Where the publisher key lives by default: apart from publisher-key.ts, so that naming the path loads nothing else. */
import { homedir } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'

/**
 * pipe's settings directory: $PIPE_HOME, else $XDG_CONFIG_HOME/pipe (when absolute, as the XDG spec
 * requires), else ~/.config/pipe.
 */
export function settingsDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PIPE_HOME) return resolve(env.PIPE_HOME)
  if (env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME)) return join(env.XDG_CONFIG_HOME, 'pipe')
  return join(env.HOME || homedir(), '.config', 'pipe')
}

/** `<settings>/pack/publisher_ed25519`: never ~/.ssh, unless the user points --key there. */
export function defaultPublisherKeyPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(settingsDir(env), 'pack', 'publisher_ed25519')
}

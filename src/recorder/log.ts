/**
 * The daemon's structured log: one JSON object a line on stderr (`time`, `level`, `msg`, then the fields),
 * which journald, Loki or jq read as they are. Small enough not to need a logging library.
 */
import type { Writable } from 'node:stream'

export type LogLevel = 'info' | 'warn' | 'error'

export interface Logger {
  (level: LogLevel, msg: string, fields?: Record<string, unknown>): void
}

/** A logger writing to `out`; bigints are written as decimal strings, errors as their message. */
export function jsonLogger(out: Writable): Logger {
  return (level, msg, fields = {}) => {
    const line = JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v instanceof Error ? v.message : v))
    out.write(line + '\n')
  }
}

import { z } from 'zod'
import { UsageError } from './errors.js'

/** What the CLI, `pipe describe` and JSON pipeline files need to know about one option. */
export interface OptionInfo {
  name: string
  /** `json`: a list of objects or an object, written as JSON (in a pipeline file, or as a flag's value). */
  type: 'string' | 'number' | 'boolean' | 'string[]' | 'enum' | 'json'
  required: boolean
  description: string
  default?: unknown
  choices?: readonly string[]
}

export type OptionsSchema = z.ZodObject<z.ZodRawShape>

interface ZodDefLike { type: string; innerType?: z.ZodType; element?: z.ZodType; entries?: Record<string, string>; defaultValue?: unknown }
const defOf = (s: z.ZodType): ZodDefLike => (s as unknown as { _zod: { def: ZodDefLike } })._zod.def

/** Reads the one schema that drives flags, JSON pipeline validation and docs, so the three cannot drift. */
export function describeOptions(schema: OptionsSchema): OptionInfo[] {
  return Object.entries(schema.shape).map(([name, field]) => {
    let s = field as z.ZodType
    let required = true
    let dflt: unknown
    let description = s.description ?? ''
    for (;;) {
      const def = defOf(s)
      if (def.type === 'optional') { required = false; s = def.innerType! }
      else if (def.type === 'default') { required = false; dflt = def.defaultValue; s = def.innerType! }
      else break
      description ||= s.description ?? ''
    }
    const def = defOf(s)
    const info: OptionInfo = { name, type: 'string', required, description }
    if (dflt !== undefined) info.default = dflt
    if (def.type === 'number' || def.type === 'int') info.type = 'number'
    else if (def.type === 'boolean') info.type = 'boolean'
    else if (def.type === 'array') info.type = isPlainStrings(def.element!) ? 'string[]' : 'json'
    else if (def.type === 'object' || def.type === 'record' || def.type === 'union') info.type = 'json'
    else if (def.type === 'enum') { info.type = 'enum'; info.choices = Object.values(def.entries ?? {}) }
    return info
  })
}

function isPlainStrings(element: z.ZodType): boolean {
  let s = element
  while (defOf(s).type === 'optional' || defOf(s).type === 'default') s = defOf(s).innerType!
  return defOf(s).type === 'string'
}

/** `maxLineBytes` -> `max-line-bytes`: CLI flags use kebab case, JSON files and code use camel case. */
export const toFlag = (name: string): string => name.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())

/**
 * Validates options against a schema; on failure throws a UsageError naming the JSON path of the first
 * bad field under `pathPrefix` (e.g. `stages[2].options.maxLineBytes`) or the CLI flag.
 */
export function parseOptions<S extends OptionsSchema>(schema: S, input: unknown, pathPrefix: string, asFlags = false): z.infer<S> {
  const strict = schema.strict()
  const result = strict.safeParse(input ?? {})
  if (result.success) return result.data as z.infer<S>
  const issue = result.error.issues[0]!
  let keys = issue.path.map(String)
  if (issue.code === 'unrecognized_keys') keys = [...keys, ...(issue as { keys: string[] }).keys.slice(0, 1)]
  const where = asFlags
    ? (keys.length ? `--${toFlag(keys[0]!)}` : pathPrefix)
    : [pathPrefix, ...keys].filter(Boolean).join('.')
  const message = issue.code === 'unrecognized_keys' ? 'unknown option' : issue.message
  throw new UsageError('usage.bad-option', message, { location: { field: where } })
}

/** Turns CLI strings into the types the schema asks for; the schema itself then judges the values. */
export function coerceFlags(schema: OptionsSchema, raw: Record<string, unknown>): Record<string, unknown> {
  const infos = new Map(describeOptions(schema).map((o) => [o.name, o]))
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(raw)) {
    const camel = key.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())
    const info = infos.get(camel)
    if (!info) { out[camel] = value; continue }
    out[camel] = coerceOne(info, value)
  }
  return out
}

function coerceOne(info: OptionInfo, value: unknown): unknown {
  const last = Array.isArray(value) && info.type !== 'string[]' ? value[value.length - 1] : value
  switch (info.type) {
    case 'number': {
      if (typeof last === 'number') return last
      const n = typeof last === 'string' && last.trim() !== '' ? Number(last) : NaN
      return Number.isNaN(n) ? last : n
    }
    case 'boolean':
      if (last === 'true') return true
      if (last === 'false') return false
      return last
    case 'string[]':
      return (Array.isArray(value) ? value : [value]).map(String)
    case 'json':
      if (typeof last !== 'string') return last
      try {
        return JSON.parse(last)
      } catch {
        throw new UsageError('usage.bad-option', 'is not JSON', { location: { field: `--${toFlag(info.name)}` } })
      }
    default:
      return typeof last === 'number' ? String(last) : last
  }
}

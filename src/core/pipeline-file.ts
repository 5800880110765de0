/**
 * A JSON pipeline file: `{"name"?, "params"?, "stages": [{"stage": NAME, "options": {...}}, ...]}`. A file
 * that others run on their own data declares its `params` (`{"root": {"description": "...", "default"?:
 * "..."}}`), writes `${root}` inside option strings, and is run as `pipe run FILE.json --root DIR`: the
 * flags a file does not declare, and the `${name}`s it uses without declaring, are refused, so a typo never
 * runs against the wrong folder.
 */
import { asPipeError, UsageError } from './errors.js'
import { readInputFile } from './input-file.js'
import type { StageUse } from './stage.js'

const PIPELINE_FILE_LIMIT = { maxBytes: 2 ** 20, what: 'a pipeline file' }
const PARAM_NAME = /^[a-z][a-z0-9-]*$/
const REFERENCE = /\$\{([^}]*)\}/g

export interface PipelineParam {
  description: string
  default?: string
}

export interface PipelineFile {
  name: string
  params: ReadonlyMap<string, PipelineParam>
  stages: StageUse[]
}

export async function loadPipelineFile(path: string): Promise<PipelineFile> {
  let doc: unknown
  try {
    doc = JSON.parse((await readInputFile(path, PIPELINE_FILE_LIMIT)).toString('utf8'))
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    if (e.code) throw asPipeError(err)
    throw new UsageError('usage.bad-pipeline-file', `not valid JSON: ${e.message}`, { location: { file: path } })
  }
  const bad = (field: string, message: string) => new UsageError('usage.bad-pipeline-file', message, { location: { file: path, field } })
  if (typeof doc !== 'object' || doc === null || !Array.isArray((doc as { stages?: unknown }).stages)) throw bad('stages', 'expected an array of {"stage", "options"}')
  const { name, stages, params } = doc as { name?: unknown; stages: StageUse[]; params?: unknown }
  const declared = new Map<string, PipelineParam>()
  if (params !== undefined) {
    if (typeof params !== 'object' || params === null || Array.isArray(params)) throw bad('params', 'expected an object of {"description", "default"?} by name')
    for (const [key, p] of Object.entries(params)) {
      if (!PARAM_NAME.test(key)) throw bad(`params.${key}`, 'a parameter name is lower case letters, digits and dashes, starting with a letter')
      const { description, default: dflt, ...rest } = (p ?? {}) as Record<string, unknown>
      if (typeof description !== 'string' || (dflt !== undefined && typeof dflt !== 'string') || Object.keys(rest).length > 0) throw bad(`params.${key}`, 'expected {"description": string, "default"?: string}')
      declared.set(key, dflt === undefined ? { description } : { description, default: dflt })
    }
  }
  const file = { name: typeof name === 'string' ? name : path, params: declared, stages }
  for (const [i, use] of stages.entries()) {
    for (const ref of references(use.options)) {
      if (!declared.has(ref)) throw bad(`stages[${i}].options`, `uses \${${ref}}, which "params" does not declare`)
    }
  }
  return file
}

function* references(value: unknown): Generator<string> {
  if (typeof value === 'string') for (const m of value.matchAll(REFERENCE)) yield m[1]!
  else if (Array.isArray(value)) for (const v of value) yield* references(v)
  else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) yield* references(v)
}

function substitute(value: unknown, values: ReadonlyMap<string, string>): unknown {
  if (typeof value === 'string') return value.replace(REFERENCE, (_, name: string) => values.get(name)!)
  if (Array.isArray(value)) return value.map((v) => substitute(v, values))
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, values)]))
  return value
}

/** The file's stages with every `${name}` replaced by its flag's value (`given`, by flag name) or default. */
export function bindPipelineParams(file: PipelineFile, given: Readonly<Record<string, unknown>>): StageUse[] {
  const values = new Map<string, string>()
  for (const [name, value] of Object.entries(given)) {
    const param = file.params.get(name)
    if (!param) {
      const known = [...file.params.keys()].map((k) => `--${k}`).join(', ')
      throw new UsageError('usage.unknown-param', `${file.name} declares no parameter --${name}${known ? ` (it has ${known})` : ''}`, { location: { field: `--${name}` } })
    }
    const last = Array.isArray(value) ? value[value.length - 1] : value
    if (typeof last !== 'string') throw new UsageError('usage.bad-option', 'needs a value', { location: { field: `--${name}` } })
    values.set(name, last)
  }
  for (const [name, param] of file.params) {
    if (values.has(name)) continue
    if (param.default === undefined) throw new UsageError('usage.missing-param', `${file.name} needs --${name}: ${param.description}`, { location: { field: `--${name}` } })
    values.set(name, param.default)
  }
  return file.stages.map((use) => ({ ...use, ...(use.options !== undefined ? { options: substitute(use.options, values) as Record<string, unknown> } : {}) }))
}

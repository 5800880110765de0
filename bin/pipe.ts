#!/usr/bin/env node
// First: the modules after it are evaluated under its V8 flag (src/core/tiering.ts).
import '../src/core/tiering.js'
import { mkdir } from 'node:fs/promises'
import { once } from 'node:events'
import { formatTime } from '../src/formats/record/time.js'
import yargs from 'yargs'
import { hideBin } from 'yargs/helpers'
import { asPipeError, asUsage, EXIT_USAGE, UsageError } from '../src/core/errors.js'
import { readInputFile } from '../src/core/input-file.js'
import { bindPipelineParams, loadPipelineFile } from '../src/core/pipeline-file.js'
import type { PipelineDef } from '../src/core/pipeline.js'
import { DEFAULT_MAX_FINDINGS_PER_CODE } from '../src/core/findings.js'
import { failedRun, runPipeline, runStageList, type RunSettings } from '../src/core/runner.js'
import { coerceFlags, describeOptions, toFlag, type OptionInfo } from '../src/core/schema.js'
import { registry } from '../pipelines/registry.js'
import { CHANNEL_TABLES } from '../src/formats/record/types.js'
import { getVenue, venueNames } from '../src/venues/index.js'

const RUN_FLAGS = new Set(['_', '$0', 'target', 'words', 'json', 'progress', 'max-findings', 's3-endpoint', 'help', 'version'])

function settings(json: boolean, progress: boolean | undefined, maxFindings: number | undefined): RunSettings {
  return {
    ...(maxFindings !== undefined ? { maxFindings } : {}),
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    json,
    progress: progress ?? Boolean(process.stderr.isTTY),
    handleSignals: true,
  }
}

/** --max-findings N: a whole number of at least 1. */
function maxFindingsOf(value: unknown): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  if (!/^\d+$/.test(String(value)) || !Number.isSafeInteger(n) || n < 1) throw new UsageError('usage.bad-option', `must be a whole number of at least 1, got "${String(value)}"`, { location: { field: '--max-findings' } })
  return n
}

function optionLines(infos: OptionInfo[]): string[] {
  return infos.map((o) => {
    const type = o.type === 'enum' ? o.choices!.join('|') : o.type
    const extra = o.required ? ' (required)' : o.default !== undefined ? ` (default ${JSON.stringify(o.default)})` : ''
    return `  --${toFlag(o.name)} <${type}>  ${o.description}${extra}`
  })
}

/** docs/limits.md: what a user names on the command line, read whole. */
/** docs/limits.md: what a user names on the command line, read whole (a pipeline file: src/core/pipeline-file.ts). */
const PUBLIC_KEY_FILE_LIMIT = { maxBytes: 64 * 2 ** 10, what: 'a public key file' }

/** Flags of `pipe run` itself that take no value, so the word after one is not its value. */
const RUN_SWITCHES = new Set(['--json', '--no-json', '--progress', '--no-progress', '--help', '--version'])

/**
 * The pipeline or file `pipe run` names, found before yargs parses, to declare its flags: the first word
 * that is not a flag's value. A flag given before the name (`pipe run --file raw.jsonl.zst verify-raw`) takes
 * the word after it, as yargs will read it.
 */
function runTargetOf(words: string[]): string | undefined {
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!
    if (w === '--') return words[i + 1]
    if (!w.startsWith('-')) return w
    if (w.startsWith('--') && !w.includes('=') && !RUN_SWITCHES.has(w)) i++
  }
  return undefined
}

function findPipeline(target: string | undefined): PipelineDef | undefined {
  return target && !target.endsWith('.json') ? registry.pipeline(target) : undefined
}

interface PackKeyFlags {
  key?: string
  name?: string
  orcid?: string
  github?: string
  rotate?: boolean
  revoke?: boolean
  authorise?: unknown
  label?: string
  'revoke-machine'?: unknown
  seed?: string
  created?: string
}

function badFlag(flag: string, message: string): UsageError {
  return new UsageError('usage.bad-option', message, { location: { field: `--${flag}` } })
}

/** `pipe pack key`: every flag is checked before the key is touched, so a bad one changes nothing. */
async function packKey(flags: PackKeyFlags): Promise<void> {
  const pk = await import('../src/formats/pack/keys/publisher-key.js')
  const { fingerprint, isFingerprint, parsePublicKey } = await import('../src/formats/pack/keys/ssh-key.js')
  const { isPackTime } = await import('../src/formats/pack/keys/key-statements.js')
  const details: Record<string, string> = {}
  for (const field of ['name', 'orcid', 'github', 'label'] as const) {
    const value = flags[field]
    if (value === undefined) continue
    const problem = pk.detailProblem(field === 'label' ? 'name' : field, value)
    if (problem !== undefined) throw badFlag(field, problem)
    if (field !== 'label') details[field] = value
  }
  const single = (flag: 'authorise' | 'revoke-machine'): string | undefined => {
    const v = flags[flag]
    if (Array.isArray(v)) throw badFlag(flag, 'give it once')
    return v === undefined ? undefined : String(v)
  }
  const authoriseArg = single('authorise')
  const revoke = single('revoke-machine')
  if (flags.label !== undefined && authoriseArg === undefined) throw badFlag('label', 'names the key given with --authorise')
  let machine: import('../src/formats/pack/keys/ssh-key.js').SshPublicKey | undefined
  if (authoriseArg !== undefined) {
    // A public key line has a space between type and key; anything else is a .pub file's path.
    const line = authoriseArg.includes(' ') ? authoriseArg : (await readInputFile(authoriseArg, PUBLIC_KEY_FILE_LIMIT).catch((err: NodeJS.ErrnoException) => {
      throw badFlag('authorise', `cannot read ${authoriseArg}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`)
    })).toString('utf8')
    const parsed = parsePublicKey(line)
    if (!parsed.ok) throw badFlag('authorise', `not an Ed25519 public key: ${parsed.detail}`)
    machine = parsed.value
  }
  if (revoke !== undefined && !isFingerprint(revoke)) throw badFlag('revoke-machine', `${JSON.stringify(revoke)} is not a SHA256: fingerprint as ssh-keygen -l prints it`)
  if (flags.revoke && !flags.rotate) throw badFlag('revoke', 'revokes the key a rotation replaces: give it with --rotate')
  if (flags.seed !== undefined && !/^[0-9a-fA-F]{64}$/.test(flags.seed)) throw badFlag('seed', 'a seed is 64 hex digits (32 bytes)')
  if (flags.created !== undefined && !isPackTime(flags.created)) throw badFlag('created', `${JSON.stringify(flags.created)} is not an RFC 3339 UTC time with whole seconds (2026-11-11T00:00:00Z)`)
  const seed = flags.seed === undefined ? undefined : Buffer.from(flags.seed, 'hex')
  const change = {
    details,
    created: flags.created ?? pk.packTimeNow(),
    ...(machine !== undefined ? { authorise: [{ key: machine, ...(flags.label !== undefined ? { label: flags.label } : {}) }] } : {}),
    ...(revoke !== undefined ? { revoke: [revoke] } : {}),
  }

  const path = flags.key ?? pk.defaultPublisherKeyPath()
  const current = await pk.loadPublisherKey(path).catch((err: unknown) => {
    const code = (err as { code?: unknown }).code
    if (code === pk.PUBLISHER_KEY_CODES.missing || code === pk.PUBLISHER_KEY_CODES.noStatement) return undefined
    throw err
  })
  let headline: string
  let key: import('../src/formats/pack/keys/publisher-key.js').PublisherKey
  if (current === undefined) {
    if (flags.rotate) throw badFlag('rotate', `there is no key at ${path} to rotate yet`)
    if (revoke !== undefined) throw badFlag('revoke-machine', `there is no key at ${path} yet, so no machine key to revoke`)
    key = await pk.makePublisherKey(path, { ...change, ...(seed !== undefined ? { seed } : {}) })
    headline = 'made the publisher\'s key and its first statement'
  } else {
    if (seed !== undefined && !flags.rotate) throw badFlag('seed', `${path} is already a key; a seed makes a new one (with --rotate, the successor)`)
    const authorised = (fp: string) => current.machineKeys.some((m) => m.fingerprint === fp)
    if (machine !== undefined && (fingerprint(machine) === current.fingerprint || authorised(fingerprint(machine)))) {
      throw badFlag('authorise', `${fingerprint(machine)} is ${fingerprint(machine) === current.fingerprint ? 'the publisher\'s own key' : 'already authorised'}`)
    }
    if (revoke !== undefined && !authorised(revoke)) throw badFlag('revoke-machine', `${revoke} is not a machine key of ${current.fingerprint}`)
    if (flags.rotate) {
      key = await pk.rotatePublisherKey(current, { ...change, ...(seed !== undefined ? { seed } : {}), revokeOld: flags.revoke === true })
      headline = flags.revoke
        ? `rotated: a new key succeeds ${current.fingerprint}, which it revoked (every version that key signed now fails level 2)`
        : `rotated: a new key succeeds ${current.fingerprint}, which stands for the versions it signed`
      // A store has one statement a key, and a key with a predecessor needs it to link the chain (docs/pack-format-notes.md).
      if (flags.revoke && current.statement.supersedes !== undefined) headline += `\nnote: stores carry ${current.fingerprint}'s statement, which links it to the key before it, not its revocation; the revocation reaches readers that keep the statements they have seen`
    } else {
      key = await pk.updatePublisherKey(current, change)
      const changed = !key.statements[0]!.equals(current.statements[0]!)
      headline = changed ? 'wrote a new statement for the publisher\'s key' : 'the publisher\'s key'
    }
  }
  process.stdout.write([headline, ...pk.describePublisherKey(key)].join('\n') + '\n')
}

/** `pipe library stats` as text. */
function libraryStatsText(s: import('../src/library/library.js').LibraryStats): string {
  const nonZero = (o: Record<string, number>) => Object.entries(o).map(([k, n]) => `${k} ${n}`).join(', ')
  return [
    `schema ${s.schema}`,
    `records: ${nonZero(s.facts)}`,
    `events: ${nonZero(s.events)}`,
    `objects: ${s.objects} (${s.objectBytes} bytes)`,
    `retractions: ${s.retractions}; revoked keys: ${s.revokedKeys}; needs_reverify: ${s.needsReverify}`,
    `imports: ${s.imports}`,
    `feeds followed: ${s.follows.length}`,
    ...s.follows.map((f) => `  ${f.publisher} ${f.feed}: seq ${f.seq}, manifest ${f.manifest}`),
  ].join('\n') + '\n'
}

/** `pipe list venues`: each venue's channels with their tables, streams and sequence rules, its checksum and endpoints. */
function venueList(): string {
  const out: string[] = []
  for (const name of venueNames()) {
    const v = getVenue(name)
    out.push(`${name}: ${v.about?.summary ?? '(registered without a description)'}`)
    for (const channel of v.channels) {
      const c = v.about?.channels[channel]
      const tables = CHANNEL_TABLES[channel].length > 0 ? CHANNEL_TABLES[channel].join(', ') : 'none: kept in the raw file'
      out.push(`  ${channel}: tables ${tables}`, ...(c ? [`    streams: ${c.streams}`, `    sequence: ${c.sequence}`] : []))
    }
    if (v.about) out.push(`  checksum: ${v.about.checksum ?? 'none sent by the venue'}`, `  endpoints: ${v.about.endpoints.join(', ')}`)
  }
  return out.join('\n') + '\n'
}

async function main(argv: string[]): Promise<number> {
  let exitCode = 0
  const runTarget = argv[0] === 'run' ? runTargetOf(argv.slice(1)) : undefined
  const runDef = findPipeline(runTarget)

  await yargs(argv)
    .scriptName('pipe')
    .parserConfiguration({ 'camel-case-expansion': false, 'parse-numbers': false, 'parse-positional-numbers': false })
    .command('list [what]', 'List the pipelines, or with `venues` the venues recorded', (y) => y.positional('what', { type: 'string', choices: ['pipelines', 'venues'], default: 'pipelines' }), (args) => {
      if (args.what === 'venues') process.stdout.write(venueList())
      else for (const p of registry.pipelines()) process.stdout.write(`${p.name.padEnd(16)} ${p.summary}\n`)
    })
    .command('stages', 'List the stages a pipeline can be built from', () => {}, () => {
      const types = (s: { takes: string; gives: string }) => `${s.takes} -> ${s.gives}`
      const width = Math.max(...registry.stages().map((s) => types(s).length))
      for (const s of registry.stages()) process.stdout.write(`${s.name.padEnd(18)} ${s.kind.padEnd(9)} ${types(s).padEnd(width)} ${s.summary}\n`)
    })
    .command('describe <name>', 'Show a pipeline (its options and stages) or a stage (its options)', (y) => y.positional('name', { type: 'string', demandOption: true }), (args) => {
      const name = String(args.name)
      const p = registry.pipeline(name)
      const s = registry.stage(name)
      if (p) {
        const infos = describeOptions(p.options)
        const placeholders = Object.fromEntries(infos.filter((o) => o.required).map((o) => [o.name, o.type === 'string[]' ? [`<${o.name}>`] : `<${o.name}>`]))
        const example = p.example ?? placeholders
        const words = Object.entries(example).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => `--${toFlag(k)} ${String(x)}`))
        const lines = [`pipeline ${p.name}: ${p.summary}`, 'options:', ...optionLines(infos), `stages, as run by: ${['pipe run', p.name, ...words].join(' ')}`]
        for (const use of p.stages(p.options.parse(example))) lines.push(`  ${use.stage} ${JSON.stringify(use.options ?? {})}`)
        process.stdout.write(lines.join('\n') + '\n')
      } else if (s) {
        process.stdout.write([`stage ${s.name} (${s.kind}, ${s.takes} -> ${s.gives}): ${s.summary}`, 'options:', ...optionLines(describeOptions(s.options))].join('\n') + '\n')
      } else {
        throw new UsageError('usage.unknown-name', `no pipeline or stage named "${name}" (see pipe list, pipe stages)`)
      }
    })
    // [words..]: the bare words after the name, which a pipeline's `positional` names (pipe run pack-check DIR);
    // declared, because strictCommands() takes an undeclared word for an unknown command.
    .command('run <target> [words..]', 'Run a pipeline by name, or a JSON pipeline file', (y) => {
      y.positional('target', { type: 'string', describe: 'a pipeline name (pipe list) or a .json pipeline file' })
        .option('json', { type: 'boolean', default: false, describe: 'print one JSON object on stdout' })
        .option('progress', { type: 'boolean', describe: 'show a progress line on stderr (default: when stderr is a terminal)' })
        .option('max-findings', { type: 'string', describe: `report at most this many findings of each code; the rest are counted (default ${DEFAULT_MAX_FINDINGS_PER_CODE})` })
        .option('s3-endpoint', { type: 'string', describe: 'for s3:// locations on a server other than AWS (MinIO, Ceph, R2, GCS): its S3 API endpoint, as AWS_ENDPOINT_URL_S3 gives it; credentials and region come from the AWS environment and profiles' })
      for (const o of runDef ? describeOptions(runDef.options) : []) {
        y.option(toFlag(o.name), {
          type: o.type === 'boolean' ? 'boolean' : o.type === 'string[]' ? 'array' : 'string',
          describe: o.description + (o.required ? ' (required)' : ''),
          ...(o.choices ? { choices: o.choices as string[] } : {}),
        })
      }
      return y
    }, async (args) => {
      const target = String(args.target)
      const json = Boolean(args.json)
      const progress = args.progress as boolean | undefined
      const maxFindings = maxFindingsOf(args['max-findings'])
      // The SDK reads it from the environment, as do the seal-hour processes a recorder starts.
      if (args['s3-endpoint'] !== undefined) process.env.AWS_ENDPOINT_URL_S3 = String(args['s3-endpoint'])
      if (target.endsWith('.json')) {
        const run = settings(json, progress, maxFindings)
        const given: Record<string, unknown> = {}
        for (const [k, v] of Object.entries(args)) if (!RUN_FLAGS.has(k) && v !== undefined) given[k] = v
        const stages = await loadPipelineFile(target).then((file) => ({ file, stages: bindPipelineParams(file, given) }), (err: unknown) => err as Error)
        exitCode = (stages instanceof Error ? failedRun(run, stages) : await runStageList(registry, stages.file.name, stages.stages, run)).exitCode
        return
      }
      if (!runDef) throw new UsageError('usage.unknown-pipeline', `no pipeline named "${target}" (see pipe list)`)
      const flags: Record<string, unknown> = {}
      for (const [k, v] of Object.entries(args)) if (!RUN_FLAGS.has(k) && v !== undefined) flags[k] = v
      const extra = ((args.words as unknown[] | undefined) ?? []).map(String)
      ;(runDef.positional ?? []).forEach((name, i) => { if (extra[i] !== undefined) flags[name] = extra[i] })
      if (extra.length > (runDef.positional?.length ?? 0)) throw new UsageError('usage.extra-argument', `unexpected argument "${extra[runDef.positional?.length ?? 0]}"`)
      exitCode = (await runPipeline(registry, runDef, coerceFlags(runDef.options, flags), settings(json, progress, maxFindings))).exitCode
    })
    .command('key <action>', 'Record-format signing keys: new (an Ed25519 key and its JWK Set) or rotate (a successor)', (y) => y
      .positional('action', { type: 'string', describe: 'new or rotate' })
      .option('out', { type: 'string', describe: 'directory for the private key and jwks.json (required)' })
      .option('keys', { type: 'string', describe: 'rotate: the current jwks.json' })
      .option('key', { type: 'string', describe: 'rotate: the current private key file' })
      .option('valid-from', { type: 'string', describe: 'new: when the key becomes valid (nine-digit UTC time; default now)' })
      .option('at', { type: 'string', describe: 'rotate: when the successor takes over (default now)' }), async (args) => {
      // Checked here rather than by yargs, which names a missing --out before an unknown action.
      if (args.action !== 'new' && args.action !== 'rotate') throw new UsageError('usage.unknown-action', `key: no action "${String(args.action)}": pipe key new, or pipe key rotate`)
      if (!args.out) throw new UsageError('usage.missing-option', `key ${args.action} needs --out DIR, the directory for the private key and jwks.json`)
      const { newSigningKey, readJwksFile, readPrivateJwkFile, rotateKey, writeKeyFiles } = await import('../src/formats/record/keys/keys.js')
      const now = formatTime(BigInt(Date.now()) * 1_000_000n)
      await mkdir(String(args.out), { recursive: true })
      if (args.action === 'new') {
        const { privateJwk, publicJwk } = await asUsage(() => newSigningKey({ validFrom: (args['valid-from'] as string | undefined) ?? now }))
        const paths = await writeKeyFiles(String(args.out), { privateJwk, jwks: { keys: [publicJwk] } })
        process.stdout.write(`key ${privateJwk.kid}\nprivate ${paths.privatePath} (mode 0600)\npublic ${paths.jwksPath}\n`)
        return
      }
      if (!args.keys || !args.key) throw new UsageError('usage.missing-option', 'key rotate needs --keys JWKS and --key PRIVATE')
      const rotated = await asUsage(async () => rotateKey(await readJwksFile(args.keys!), await readPrivateJwkFile(args.key!), (args.at as string | undefined) ?? now))
      const paths = await writeKeyFiles(String(args.out), { privateJwk: rotated.privateJwk, jwks: rotated.jwks })
      process.stdout.write(`key ${rotated.privateJwk.kid} succeeds the old key\nprivate ${paths.privatePath} (mode 0600)\npublic ${paths.jwksPath}\n`)
    })
    .command('pack', 'Pack format 1.0: the publisher\'s key and raters\' consent (publishing, exports and checks are pipelines: pipe run pack-publish, pack-export, pack-check)', (y) => y
      .command('key', 'Make or show the publisher\'s Ed25519 key (OpenSSH format) and record who the publisher is', (k) => k
        .option('key', { type: 'string', describe: 'the private key file (default: <settings>/pack/publisher_ed25519, settings being $PIPE_HOME, else $XDG_CONFIG_HOME/pipe, else ~/.config/pipe)' })
        .option('name', { type: 'string', describe: 'the publisher\'s name, as it is to appear in packs (\'\' removes it)' })
        .option('orcid', { type: 'string', describe: 'the publisher\'s ORCID iD, bare: 0000-0002-1825-0097 (\'\' removes it)' })
        .option('github', { type: 'string', describe: 'the publisher\'s GitHub user name (\'\' removes it)' })
        .option('rotate', { type: 'boolean', describe: 'replace the key with a successor, its statement signed by the old key; the old key stands for the versions it signed' })
        .option('revoke', { type: 'boolean', describe: 'with --rotate, when the old key was compromised: the new key revokes it, and every version it signed fails level 2' })
        .option('authorise', { type: 'string', alias: 'authorize', describe: 'let a machine key sign manifests and refs: its public key line or .pub file' })
        .option('label', { type: 'string', describe: 'with --authorise: what the machine key is for (laptop, ci)' })
        .option('revoke-machine', { type: 'string', describe: 'revoke an authorised machine key, by its SHA256: fingerprint' })
        .option('seed', { type: 'string', describe: 'make the new key from this 32-byte seed, 64 hex digits (tests and golden data only: a seed is a secret)' })
        .option('created', { type: 'string', describe: 'the statement\'s time, RFC 3339 UTC with whole seconds (default now; tests and golden data)' })
        .group(['seed', 'created'], 'For tests and golden data:')
        .strictOptions(), async (args) => {
        await packKey(args)
      })
      .command('rater <name>', 'Record a rater\'s consent in the library, under a pseudonymous id made once per name and kept for good; prints the id', (k) => k
        .positional('name', { type: 'string', demandOption: true, describe: 'the rater, as the library knows them (published only with --show-name)' })
        .option('library', { type: 'string', demandOption: true, describe: 'the library database (made when it does not exist)' })
        .option('show-name', { type: 'boolean', default: false, describe: 'the rater chose to be named: publishes carry the name as display_name' })
        .option('notes', { type: 'boolean', default: false, describe: 'the rater shares the notes of their ratings' })
        .option('withdraw', { type: 'boolean', default: false, describe: 'the rater withdraws consent: no new raters rows or ratings of theirs are published' })
        .option('json', { type: 'boolean', describe: 'print one JSON object' })
        .strictOptions(), async (args) => {
        if (args.withdraw && (args['show-name'] || args.notes)) throw new UsageError('usage.bad-option', 'a withdrawal records no other choice: give --withdraw alone', { location: { field: '--withdraw' } })
        const [{ Library }, { packTimeNow }] = await Promise.all([import('../src/library/library.js'), import('../src/formats/pack/keys/publisher-key.js')])
        const lib = Library.open(String(args.library), { create: true })
        try {
          const c = lib.recordConsent(String(args.name), { showName: args['show-name'], notes: args.notes, withdrawn: args.withdraw }, packTimeNow())
          if (args.json) process.stdout.write(`${JSON.stringify(c)}\n`)
          else {
            const choices = c.withdrawn ? 'consent withdrawn: nothing more of theirs is published' : `${c.showName ? 'named' : 'not named'}, ${c.notes ? 'notes shared' : 'notes not shared'}`
            process.stdout.write(`${c.rater}\n${c.made ? 'a new rater' : 'consent recorded again'}, ${c.consentDate}: ${choices}\n`)
          }
        } finally {
          lib.close()
        }
      })
      .demandCommand(1, 'name a pack command: key, rater')
      .strictCommands())
    .command('library', 'The pack library (a SQLite database of imported packs): what it holds', (y) => y
      .command('stats', 'Count what the library holds: records by table, events, objects, retractions, revoked keys, imports, followed feeds', (k) => k
        .option('library', { type: 'string', demandOption: true, describe: 'the library database' })
        .option('json', { type: 'boolean', describe: 'print one JSON object' })
        .strictOptions(), async (args) => {
        const { Library } = await import('../src/library/library.js')
        const lib = Library.open(String(args.library))
        try {
          process.stdout.write(args.json ? `${JSON.stringify(lib.stats())}\n` : libraryStatsText(lib.stats()))
        } finally {
          lib.close()
        }
      })
      .command('query', 'Print the rows of one table: a pack table (by content id, or under each publisher) or one of the library\'s own', (k) => k
        .option('library', { type: 'string', demandOption: true, describe: 'the library database' })
        .option('table', { type: 'string', demandOption: true, describe: 'tilings, rules, patterns, ants, quickstart, aliases, verifications, ..., or pack_imports, pack_retractions, pack_revoked, pack_follows, pack_reverify, objects, library_raters, library_rater_consents' })
        .option('id', { type: 'string', describe: 'only the record with this id (events: whose first key column is it)' })
        .option('json', { type: 'boolean', describe: 'print one JSON object, {table, rows}' })
        .strictOptions(), async (args) => {
        const { Library } = await import('../src/library/library.js')
        const lib = Library.open(String(args.library))
        try {
          // Written as the rows come, 1 MiB at a time (a table may hold millions); --json's bytes are
          // JSON.stringify's of {table, rows}.
          let out = args.json ? `{"table":${JSON.stringify(args.table)},"rows":[` : ''
          const flush = () => (process.stdout.write(out) ? undefined : once(process.stdout, 'drain'))
          let first = true
          for await (const row of lib.query(String(args.table), args.id === undefined ? undefined : String(args.id))) {
            out += args.json ? `${first ? '' : ','}${JSON.stringify(row)}` : `${JSON.stringify(row)}\n`
            first = false
            if (out.length >= 1 << 20) {
              await flush()
              out = ''
            }
          }
          if (args.json) out += ']}\n'
          await flush()
        } finally {
          lib.close()
        }
      })
      .command('feeds', 'List the feeds the library follows: publisher, feed, the last accepted seq and manifest, where it was read, when', (k) => k
        .option('library', { type: 'string', demandOption: true, describe: 'the library database' })
        .option('json', { type: 'boolean', describe: 'print one JSON object, {feeds}' })
        .strictOptions(), async (args) => {
        const { Library } = await import('../src/library/library.js')
        const lib = Library.open(String(args.library))
        try {
          const feeds: Record<string, unknown>[] = []
          for await (const f of lib.query('pack_follows')) feeds.push(f)
          if (args.json) process.stdout.write(`${JSON.stringify({ feeds })}\n`)
          else if (feeds.length === 0) process.stdout.write('no feeds followed\n')
          else for (const f of feeds) process.stdout.write(`${String(f.publisher)} ${String(f.feed)}: seq ${String(f.seq)}, manifest ${String(f.manifest)}, from ${String(f.source)}, updated ${String(f.updated)}\n`)
        } finally {
          lib.close()
        }
      })
      .demandCommand(1, 'name a library command: stats, query, feeds')
      .strictCommands())
    .command('demo', 'Record two simulated hours of Binance trades and depth from the venue simulator, seal and verify them (what npm start runs)', (y) => y.option('out', { type: 'string', default: 'demo', describe: 'directory for the demo files' }), async (args) => {
      const { runDemo } = await import('../pipelines/demo.js')
      // The daemon seals each hour with this CLI, in a child process.
      exitCode = await runDemo(String(args.out), process.argv[1]!)
    })
    .demandCommand(1, 'name a command: list, stages, describe, run, key, pack, library, demo')
    .strictCommands()
    .help()
    .fail((msg, err) => {
      throw err ?? new UsageError('usage.cli', msg)
    })
    .parseAsync()
  return exitCode
}

// A reader that closed our stdout early (`| head`) has all it wanted: stop quietly, as ripgrep does, not as
// a usage error. (Exit codes stay 0, 1, 2 and 130.)
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0)
  throw err
})

main(hideBin(process.argv)).then(
  (code) => { process.exitCode = code },
  (err) => {
    const e = asPipeError(err)
    process.stderr.write(`pipe: ${e.oneLine()}\n`)
    process.exitCode = e.exitCode === 1 ? 1 : EXIT_USAGE
  },
)

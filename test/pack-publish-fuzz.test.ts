/**
 * A seeded fuzz of publish's records: one line of one records file (tilings, rules, patterns,
 * verifications, ants, sightings, provenance, annotations, aliases, raters, ratings) gets flipped bits, a
 * truncation, a stray byte or an inserted member, or one of its members is removed or given another value
 * (null, a string, a fraction, 2^53, a list, an object...). The publish either succeeds, and pack-check at level 3 then finds no failure but replay's (a publish does not
 * replay: a phase, period or displacement the records state wrongly is level 3's to find), or is refused
 * with a PipeError that names the records file and line, leaving no ref and nothing in .tmp. Never
 * another throw. A second test publishes the mutated folder as a second version over a clean first: a
 * record meeting its key in the parent with another row must be refused at its own line too.
 */
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join, relative } from 'node:path'
import t, { type Test } from 'tap'
import { PipeError } from '../src/core/errors.js'
import { checkPack } from '../src/formats/pack/check/check.js'
import { firstKeyStatement, keyStatementBytes } from '../src/formats/pack/keys/key-statements.js'
import { publishPack } from '../src/formats/pack/publish/publish.js'
import { REPLAY_CODES } from '../src/formats/pack/check/replay.js'
import { generateKey } from '../src/formats/pack/keys/ssh-key.js'
import { TMP_FOLDER } from '../src/formats/pack/documents/store.js'
import { LIFE, antRecord, patternRecord, ruleRecord, verificationRecord, writeJsonl } from '../src/sim/pack-records.js'
import { seededRandom } from '../src/sim/random.js'
import { mutateBytes } from './helpers/mutate.js'

const CASES = 60
const SECOND_VERSIONS = 24
/** What replaying a pattern in its rule finds: the records' own claims, which a publish does not replay. */
const REPLAYS: ReadonlySet<string> = new Set(Object.values(REPLAY_CODES))
const T0 = '2026-11-11T00:00:00Z'
const key = generateKey({ seed: Buffer.alloc(32, 7), comment: 'fuzz' })
const statement = keyStatementBytes(firstKeyStatement(key, { name: 'Fuzz Publisher', created: T0 }))
const PATTERNS = [
  patternRecord('square', LIFE, [[0, 0], [1, 0], [0, 1], [1, 1]]),
  patternRecord('square', LIFE, [[0, 1], [1, 1], [2, 1]]),
  patternRecord('square', LIFE, [[1, 0], [2, 1], [0, 2], [1, 2], [2, 2]], { speed: 'c/4 diagonal' }),
]
const TABLES: Record<string, object[]> = {
  tilings: [{ family: 'square' }, { family: 'hex' }],
  rules: [ruleRecord(LIFE)],
  patterns: PATTERNS,
  verifications: PATTERNS.map((p, i) => verificationRecord(i + 1, LIFE, p, T0)),
  ants: [antRecord('RL'), antRecord('LLRR')],
  sightings: [{ pattern_id: '@patterns:1', rule: 'B3/S23', source: 'unattributed', count: 3, soups: 2, first_seen: T0, last_seen: T0 }],
  provenance: [{ target: '@patterns:2', seq: 0, kind: 'found', finder: null, orcid: null, search_kind: 'hunt', search: null, machine: 'linux-x86_64', date: T0, source: 'soup-17.rle', pack: null, run: null }],
  annotations: [{ target: '@patterns:3', field: 'name', value: '"glider"', score_model: null, date: T0 }],
  aliases: [{ old_id: '0'.repeat(32), target: '@patterns:1', reason: 'geometry-change', date: T0 }],
  raters: [{ rater: 'rater-0123456789abcdef', consent_date: T0, consent_scope: 'public-permanent', display_name: null, orcid: null, members: null, notes: true }],
  ratings: [{ rater: 'rater-0123456789abcdef', target: '@patterns:1', scale: 'stars-1-5 1', verdict: '4', note: 'Small.', round: null, date: T0 }],
}

const base = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'pack-publish-fuzz-'))
t.teardown(() => rm(base, { recursive: true, force: true }))

/** What a record's line may be given in place of a byte: JSON's marks, a digit, a slash and a backslash (ASCII, so the line stays UTF-8). */
const STRAYS = [0x22, 0x7b, 0x5d, 0x30, 0x2d, 0x2f, 0x5c]

/** A value a member is given in place of its own. */
const VALUES: readonly unknown[] = [null, '', 'x', -1, 0.5, 2 ** 53, 1e9, [], {}, [[1, 2]], true]

/** A line changed in its bytes (mutateBytes), or one member removed or given another value. */
function mutate(line: Buffer, random: () => number): { how: string; bytes: Buffer } {
  if (random() < 0.5) {
    const row = JSON.parse(line.toString('utf8')) as Record<string, unknown>
    const keys = Object.keys(row)
    const member = keys[Math.floor(random() * keys.length)]!
    if (random() < 0.2) {
      delete row[member]
      return { how: `${member} removed`, bytes: Buffer.from(JSON.stringify(row)) }
    }
    const value = VALUES[Math.floor(random() * VALUES.length)]
    row[member] = value
    return { how: `${member} set to ${JSON.stringify(value)}`, bytes: Buffer.from(JSON.stringify(row)) }
  }
  return mutateBytes(line, random, { bits: 7, strays: STRAYS })
}

t.test('the records as written are published, and the pack checks', async (t) => {
  const records = join(base, 'records-unchanged')
  await mkdir(records)
  for (const [table, rows] of Object.entries(TABLES)) await writeJsonl(join(records, `${table}.jsonl`), rows)
  const store = join(base, 'store-unchanged')
  await publishPack({ feed: 'fuzz', store, records, key, statements: [statement], created: T0, engineVersion: 'test' })
  const failures: string[] = []
  for await (const issue of checkPack(store, { level: 3 })) if (!issue.note) failures.push(`${issue.code} ${issue.target}`)
  t.same(failures, [], 'so that a mutation is what a refusal refuses')
})

/** One mutated records folder published into `store` (after `before`, a clean first version, when given). */
async function fuzzCase(t: Test, random: () => number, n: number, before?: string): Promise<void> {
  const records = join(base, `records-${n}`)
  await mkdir(records)
  for (const [table, rows] of Object.entries(TABLES)) await writeJsonl(join(records, `${table}.jsonl`), rows)
  const tables = Object.keys(TABLES)
  const file = join(records, `${tables[Math.floor(random() * tables.length)]!}.jsonl`)
  const lines = (await readFile(file)).toString('utf8').split('\n').filter((l) => l !== '')
  const line = Math.floor(random() * lines.length)
  const { how, bytes } = mutate(Buffer.from(lines[line]!), random)
  await writeFile(file, Buffer.concat(lines.map((l, i) => Buffer.concat([i === line ? bytes : Buffer.from(l), Buffer.from('\n')]))))
  const what = `${before ? 'a second version, ' : ''}${basename(file)} line ${line + 1}, ${how}`
  const store = join(base, `store-${n}`)
  if (before) await publishPack({ feed: 'fuzz', store, records: before, key, statements: [statement], created: '2026-11-10T00:00:00Z', engineVersion: 'test' })
  const refBefore = before ? await readFile(join(store, 'refs', 'fuzz.json')) : undefined
  try {
    await publishPack({ feed: 'fuzz', store, records, key, statements: [statement], created: T0, engineVersion: 'test' })
  } catch (err) {
    if (!(err instanceof PipeError)) {
      t.fail(`${what}: threw ${(err as Error).stack ?? String(err)}`)
      return
    }
    const { file, line: at, field } = err.location ?? {}
    // The file is one of the folder's records files (not always the mutated one: a tiling changed leaves a
    // pattern naming none), and the line one of its lines (a flipped bit may have made a line two).
    const named = file === undefined ? undefined : /^([a-z]+)\.jsonl$/.exec(relative(records, file))?.[1]
    const lines = named !== undefined && named in TABLES ? (await readFile(file!)).toString('utf8').split('\n').length - 1 : 0
    t.ok(named !== undefined && Number.isInteger(at) && at! >= 1 && at! <= lines, `${what}: refused, ${err.code} on ${String(file)} line ${String(at)}${field ? ` field ${field}` : ''}: ${err.message}`)
    t.same(await readFile(join(store, 'refs', 'fuzz.json')).catch(() => undefined), refBefore, `${what}: the ref as it was`)
    t.same(await readdir(join(store, TMP_FOLDER)).catch(() => []), [], `${what}: nothing left in ${TMP_FOLDER}`)
    return
  }
  const failures: string[] = []
  for await (const issue of checkPack(store, { level: 3 })) if (!issue.note && !REPLAYS.has(issue.code)) failures.push(`${issue.code} ${issue.target}`)
  t.same(failures, [], `${what}: published, and the pack checks (but for what replay finds)`)
}

t.test(`${CASES} mutated records folders: a published pack that checks, or a refusal naming the file`, async (t) => {
  const random = seededRandom(20261206)
  for (let n = 0; n < CASES; n++) await fuzzCase(t, random, n)
})

t.test(`${SECOND_VERSIONS} mutated second versions over a clean first: the same, and a refused one leaves the first the feed's`, async (t) => {
  const first = join(base, 'records-first')
  await mkdir(first)
  // Some of each fact table, so that a changed record can meet its key in the parent.
  for (const table of ['tilings', 'rules', 'patterns', 'verifications', 'ants']) await writeJsonl(join(first, `${table}.jsonl`), TABLES[table]!.slice(0, table === 'patterns' || table === 'verifications' ? 2 : undefined))
  const random = seededRandom(20261207)
  for (let n = 0; n < SECOND_VERSIONS; n++) await fuzzCase(t, random, CASES + n, first)
})

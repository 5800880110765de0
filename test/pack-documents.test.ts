import { spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import canonicalize from 'canonicalize'
import t from 'tap'
import {
  DOC_CODES as D,
  MAX_DOCUMENT_BYTES,
  collectDocumentBytes,
  formatTarget,
  objectHash,
  parseStoreDocument,
  parseTarget,
  readPackJson,
  storeDocumentBytes,
  writePackJson,
} from '../src/formats/pack/documents/documents.js'
import { MANIFEST_CODES as M, buildManifest, parseManifest, type ManifestInput } from '../src/formats/pack/documents/doc-manifest.js'
import {
  INDEX_CODES as I,
  buildSearchIndex,
  buildTableIndex,
  parseSearchIndex,
  parseTableIndex,
  type SearchIndexInput,
  type TablePart,
} from '../src/formats/pack/documents/doc-index.js'
import { REF_CODES as R, buildRef, followRef, parseRef, refSignedBytes, signRef, verifyRef } from '../src/formats/pack/documents/doc-ref.js'
import { firstKeyStatement, keyStatementBytes, updateAuthorised, verifyKeyChain } from '../src/formats/pack/keys/key-statements.js'
import { fingerprint, formatPublicKey, generateKey } from '../src/formats/pack/keys/ssh-key.js'
import { NS_REF } from '../src/formats/pack/keys/sshsig.js'
import { needs } from './helpers/tools.js'

const T0 = '2026-11-11T00:00:00Z'
const PUBLISHER = generateKey({ seed: Buffer.alloc(32, 1), comment: 'publisher' })
const MACHINE = generateKey({ seed: Buffer.alloc(32, 2), comment: 'laptop' })
const STRANGER = generateKey({ seed: Buffer.alloc(32, 3), comment: 'stranger' })
const FP = fingerprint(PUBLISHER.publicKey)
const h = (n: number) => objectHash(Buffer.from(`object ${n}`))
const UUID = '0b6c2f9e-5d1a-4c3b-9a8e-7f6d5c4b3a21'
const ID = '0123456789abcdef0123456789abcdef'

const bytes = (s: string) => Buffer.from(s, 'utf8')
const codeOf = (r: { ok: boolean; code?: string }) => (r.ok ? 'ok' : r.code)
/** A manifest's bytes with one member replaced (canonical, so only that member is wrong). */
const withMember = (doc: object, name: string, value: unknown) => bytes(canonicalize({ ...doc, [name]: value })!)

t.test('JSON documents: canonical bytes only', async (t) => {
  t.same(readPackJson(bytes('{"a":[1,"x"],"b":{}}')), { ok: true, value: { a: [1, 'x'], b: {} } })
  const cases: [string, string][] = [
    ['{"a": 1}', D.jsonNotCanonical],
    ['{"a":1}\n', D.jsonNotCanonical],
    ['{"b":1,"a":2}', D.jsonNotCanonical],
    ['{"a":"\\/"}', D.jsonNotCanonical],
    ['{"a":"\\u0041"}', D.jsonNotCanonical],
    ['{"a":"\\u001F"}', D.jsonNotCanonical],
    ['{"a":"\\u000a"}', D.jsonNotCanonical],
    ['{"a":"\\ud83d\\ude00"}', D.jsonNotCanonical],
    ['{"a":"\\ud800"}', D.jsonNotCanonical],
    ['{"a":-0}', D.jsonNotCanonical],
    ['{"a":1,"a":1}', D.jsonDuplicateMember],
    ['{"a":1', D.jsonInvalid],
    ['{"a":01}', D.jsonInvalid],
    ['', D.jsonInvalid],
    ['\ufeff{"a":1}', D.jsonBom],
  ]
  for (const [text, code] of cases) t.equal(codeOf(readPackJson(bytes(text))), code, JSON.stringify(text))
  t.equal(codeOf(readPackJson(Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]))), D.jsonNotUtf8)
  t.equal(codeOf(readPackJson(bytes('{"a":"\\u001f","b":"\u00e9\ud83d\ude00"}'))), 'ok', 'canonical escapes and literal non-ASCII')
})

t.test('JSON documents: integers only, inside ±(2^53 − 1)', async (t) => {
  const n = (s: string) => codeOf(readPackJson(bytes(`{"n":${s}}`)))
  t.equal(n('9007199254740991'), 'ok', '2^53 − 1')
  t.equal(n('-9007199254740991'), 'ok', '−(2^53 − 1)')
  t.equal(n('0'), 'ok')
  t.equal(n('9007199254740992'), D.jsonNumberRange, '2^53 (the bound included)')
  t.equal(n('-9007199254740992'), D.jsonNumberRange, '−2^53')
  t.equal(n('9007199254740993'), D.jsonNumberRange)
  t.equal(n('10000000000000000'), D.jsonNumberRange)
  t.equal(n('1.0'), D.jsonNumberFraction, '1.0')
  t.equal(n('1.5'), D.jsonNumberFraction)
  t.equal(n('1e5'), D.jsonNumberFraction, '1e5')
  t.equal(n('1e+21'), D.jsonNumberFraction, 'an exponent in ES spelling')
  t.equal(codeOf(readPackJson(bytes('{"b":1, "n":1.0}'))), D.jsonNumberFraction, 'a number problem is named before whitespace found earlier')
  t.throws(() => writePackJson({ n: 0.5 }), { code: D.jsonNumberFraction })
  t.throws(() => writePackJson({ n: 2 ** 53 }), { code: D.jsonNumberRange }, 'nothing is written that a reader refuses')
})

t.test('JSON documents: nesting at most 32, checked without recursion', async (t) => {
  const nest = (n: number) => bytes('['.repeat(n) + ']'.repeat(n))
  t.equal(codeOf(readPackJson(nest(32))), 'ok', 'depth 32')
  t.equal(codeOf(readPackJson(nest(33))), D.jsonTooDeep, 'depth 33')
  t.equal(codeOf(readPackJson(bytes('{"a":' + '['.repeat(31) + ']'.repeat(31) + '}'))), 'ok', 'an object counts as a level')
  t.equal(codeOf(readPackJson(bytes('{"a":' + '['.repeat(32) + ']'.repeat(32) + '}'))), D.jsonTooDeep)
  t.equal(codeOf(readPackJson(nest(1_000_000))), D.jsonTooDeep, 'a 1,000,000-deep document, without a stack overflow')
  t.equal(codeOf(readPackJson(bytes('['.repeat(1_000_000)))), D.jsonTooDeep, 'unclosed too')
  let deep: unknown = 1
  for (let i = 0; i < 200_000; i++) deep = [deep]
  t.throws(() => writePackJson(deep), { code: D.jsonTooDeep }, 'a deep value is refused before canonicalize recurses')
  let ok: unknown = 1
  for (let i = 0; i < 32; i++) ok = { a: ok }
  t.ok(writePackJson(ok))
})

t.test('JSON documents: at most 16 MiB, refused on the length', async (t) => {
  const filler = (total: number) => bytes(`{"a":"${'x'.repeat(total - 8)}"}`)
  t.equal(filler(MAX_DOCUMENT_BYTES).length, MAX_DOCUMENT_BYTES)
  t.equal(codeOf(readPackJson(filler(MAX_DOCUMENT_BYTES))), 'ok', 'exactly 16 MiB')
  t.equal(codeOf(readPackJson(filler(MAX_DOCUMENT_BYTES + 1))), D.jsonTooLarge, '16 MiB + 1')
  // A stream is refused at the chunk that passes the limit: the rest is never pulled.
  let pulled = 0
  async function* endless() {
    for (;;) {
      pulled++
      yield Buffer.alloc(1024 * 1024, 0x20)
    }
  }
  t.equal(codeOf(await collectDocumentBytes(endless())), D.jsonTooLarge)
  t.equal(pulled, 17, 'stopped at the 17th MiB')
  const small = await collectDocumentBytes((async function* () {
    yield bytes('{"a":')
    yield bytes('1}')
  })())
  t.same(small.ok && small.value.toString(), '{"a":1}')
})

t.test('targets', async (t) => {
  const good = [`pattern:${ID}`, `ant:ant-${ID}`, `quickstart:qs-${ID}`, `search_run:${UUID}:1`, `search_run:${UUID}:0`, `search_run:${UUID}:9223372036854775807`]
  for (const s of good) {
    const r = parseTarget(s)
    t.ok(r.ok, s)
    if (r.ok) t.equal(formatTarget(r.value), s, 'round trip')
  }
  t.same(parseTarget(`ant:ant-${ID}`), { ok: true, value: { kind: 'ant', id: `ant-${ID}` } }, 'the id is the table\'s: ant-<hex>')
  t.same(parseTarget(`search_run:${UUID}:42`), { ok: true, value: { kind: 'search_run', search: UUID, run: '42' } })
  const bad = [
    `pattern:${ID.toUpperCase()}`,
    `pattern:${ID.slice(1)}`,
    `pattern:${ID}0`,
    `ant:${ID}`,
    `quickstart:${ID}`,
    `quickstart:qs-${ID.slice(1)}`,
    `pattern${ID}`,
    `patterns:${ID}`,
    `search_run:${UUID}`,
    `search_run:${UUID}:`,
    `search_run:${UUID}:01`,
    `search_run:${UUID}:-1`,
    `search_run:${UUID}:9223372036854775808`,
    `search_run:${UUID.toUpperCase()}:1`,
    `search_run:${UUID}:1:2`,
    `${ID}`,
    '',
  ]
  for (const s of bad) t.equal(codeOf(parseTarget(s)), D.targetMalformed, JSON.stringify(s))
  t.equal(codeOf(parseTarget(42)), D.targetMalformed)
})

// The golden minimal pack's manifest, as the spec prints it (hashes made up).
const ENGINE = {
  name: 'JETCARP',
  rule_semantics: { ant: '1', cyclic: '1', wireworld: '1' },
  schemes: { ant: 'jetcarp-ant-v1', geometry: 'jetcarp-geometry-v1', pattern: 'jetcarp-pattern-v3', tables: 'jetcarp-tables-1' },
  version: '0.4.0',
}
const INPUT: ManifestInput = {
  created: T0,
  creators: [{ name: 'Golden Publisher A', role: 'creator' }],
  description: "Golden pack: minimal. Made by JETCARP's tests; never rewritten.",
  doi: '',
  engine: ENGINE,
  feed: 'golden-a',
  licence: 'CC0-1.0',
  publisher: FP,
  stats: { ants: 0, bytes: 64013, patterns: 3, quickstart: 1 },
  tables: { annotations: h(1), patterns: h(2) },
  title: 'minimal',
  version_label: 'golden-1',
}

t.test('manifest: built as the spec writes it, read back', async (t) => {
  const built = buildManifest(INPUT)
  const text = built.bytes.toString()
  t.same(Object.keys(JSON.parse(text)), ['created', 'creators', 'description', 'doi', 'engine', 'feed', 'format', 'licence', 'parents', 'publisher', 'related', 'requires', 'retain', 'retracts', 'searches', 'stats', 'tables', 'title', 'version', 'version_label'], 'every member of the golden manifest, in RFC 8785 order')
  t.equal(text, canonicalize(JSON.parse(text)), 'RFC 8785 bytes')
  t.equal(built.hash, objectHash(built.bytes))
  t.match(text, /"format":"jetcarp-pack"/)
  t.match(text, /"requires":\[\],"retain":\[\],"retracts":\[\]/)
  const parsed = parseManifest(built.bytes)
  t.ok(parsed.ok)
  if (!parsed.ok) return
  t.equal(parsed.value.hash, built.hash)
  t.equal(parsed.value.minor, 0)
  t.same(parsed.value.manifest, built.document)
  t.equal(parsed.value.manifest.tables.patterns, h(2))
  t.equal(Object.getPrototypeOf(parsed.value.manifest.tables), null, 'maps have no prototype: a table named constructor means nothing to JS')
  t.equal(buildManifest({ ...INPUT, title: 'Cafe\u0301' }).document.title, 'Caf\u00e9', 'people\'s text in NFC')
  t.throws(() => buildManifest({ ...INPUT, feed: 'no_underscores' }), { code: M.invalid }, 'the builder applies the reader\'s rules')
})

t.test('manifest: every member checked', async (t) => {
  const doc = JSON.parse(buildManifest({
    ...INPUT,
    parents: [h(10)],
    retain: [h(11)],
    searches: { [UUID]: h(12) },
    retracts: [{ target: `pattern:${ID}`, publisher: FP, reason: 'duplicate', date: T0 }],
    related: [{ relation: 'IsSupplementTo', id: 'doi:10.1234/x' }],
    creators: [{ name: 'A', orcid: '0000-0002-1825-0097', role: 'creator' }],
    slice_of: h(13),
    filter: { class: 'spaceship' },
  }).bytes.toString())
  t.equal(codeOf(parseManifest(bytes(canonicalize(doc)!))), 'ok', 'the full manifest reads')
  const code = (name: string, value: unknown) => codeOf(parseManifest(withMember(doc, name, value)))
  const engine = (patch: object) => code('engine', { ...ENGINE, ...patch })

  t.equal(code('format', 'jetcarp-index'), D.format)
  t.equal(code('version', '1.7'), 'ok', 'a higher minor is read')
  t.equal(code('version', '2.0'), D.versionMajor)
  t.equal(code('version', '0.9'), D.versionMajor)
  for (const v of ['1', '1.0.0', '01.0', 1, 'v1.0']) t.equal(code('version', v), D.versionMalformed, `version ${JSON.stringify(v)}`)
  t.equal(code('requires', ['torrents']), M.requiresUnknown, 'format 1.0 defines no required feature')
  t.equal(code('requires', []), 'ok')
  t.equal(code('requires', undefined), 'ok', 'absent requires is none')

  t.equal(code('feed', 'a'.repeat(64)), 'ok')
  t.equal(code('feed', 'Golden-A-2'), 'ok', 'letters of either case')
  for (const f of ['', 'a'.repeat(65), 'a_b', 'a.b', 'a/b', '..', 'é']) t.equal(code('feed', f), M.invalid, `feed ${JSON.stringify(f)}`)
  for (const time of ['2026-11-11T00:00:00.000Z', '2026-11-11T00:00:00+00:00', '2026-11-11', '2026-02-30T00:00:00Z', 1]) t.equal(code('created', time), M.invalid, `created ${JSON.stringify(time)}`)
  t.equal(code('created', undefined), M.invalid, 'created is required')
  t.equal(code('licence', 'CC-BY-4.0'), 'ok')
  t.equal(code('licence', 'LicenseRef-mine'), 'ok')
  for (const l of ['', 'MIT OR Apache-2.0', 'CC BY', undefined]) t.equal(code('licence', l), M.invalid, `licence ${JSON.stringify(l)}`)
  t.equal(code('publisher', 'SHA256:x'), M.invalid)
  t.equal(code('publisher', FP.toLowerCase()), M.invalid)
  t.equal(code('title', 5), M.invalid)
  t.equal(code('title', undefined), 'ok', 'people\'s text reads as empty when absent')
  t.equal(code('creators', [{ name: 'A' }]), M.invalid, 'a creator has a role')
  t.equal(code('creators', [{ name: 'A', role: 'creator', orcid: 'https://orcid.org/0000-0002-1825-0097' }]), M.invalid, 'an ORCID iD, bare')
  t.equal(code('creators', [{ name: 'A', role: 'creator', affiliation: 'x' }]), 'ok', 'unknown members inside known members are ignored')
  t.equal(code('related', [{ relation: 'IsSupplementTo' }]), M.invalid)

  t.equal(engine({ extra: true }), 'ok')
  t.equal(engine({ name: '' }), M.invalid)
  t.equal(engine({ rule_semantics: { life: '0' } }), M.invalid, 'a semantics version is positive')
  t.equal(engine({ rule_semantics: { life: 1 } }), M.invalid, 'written as a string')
  t.equal(engine({ rule_semantics: { 'Life Like': '1' } }), M.invalid)
  t.equal(engine({ schemes: { ant: 'a', geometry: 'g', pattern: 'p' } }), M.invalid, 'schemes names all four')
  t.equal(code('engine', undefined), M.invalid)

  t.equal(code('tables', { patterns: 'sha512:' + 'ab'.repeat(64) }), D.hashPrefix, 'an index is needed: sha256 only')
  t.equal(code('tables', { patterns: 'sha256:' + 'AB'.repeat(32) }), D.hashMalformed)
  t.equal(code('tables', { patterns: 'sha256:' + 'ab'.repeat(31) + 'a' }), D.hashMalformed)
  t.equal(code('tables', { patterns: 'sha256:' + 'ab'.repeat(32) + '\n' }), D.hashMalformed)
  t.equal(code('tables', { patterns: 'SHA256:' + 'ab'.repeat(32) }), D.hashMalformed)
  t.equal(code('tables', { Patterns: h(1) }), M.invalid)
  t.equal(code('tables', { future_table: h(1) }), 'ok', 'a table this reader does not know is kept for the caller to ignore')
  t.equal(code('tables', {}), 'ok', 'absent tables are empty')
  t.equal(code('tables', undefined), M.invalid, 'tables is required')
  t.equal(code('searches', { [UUID.toUpperCase()]: h(1) }), M.invalid)
  t.equal(code('searches', { [UUID]: 'md5:' + 'ab'.repeat(16) }), D.hashPrefix)
  t.equal(code('parents', ['sha512:' + 'ab'.repeat(64)]), 'ok', 'a parent is never needed: another algorithm is kept')
  t.equal(code('parents', ['sha256:xyz']), D.hashMalformed, 'a malformed hash is refused anywhere')
  t.equal(code('parents', [42]), D.hashMalformed)
  t.equal(code('retain', ['nonsense']), D.hashMalformed)
  t.equal(code('parents', null), M.invalid, 'null is not absence')
  t.equal(code('description', null), M.invalid)
  t.equal(code('slice_of', 'sha256:'), D.hashMalformed)

  const retraction = { target: `pattern:${ID}`, publisher: FP, reason: 'r', date: T0 }
  t.equal(code('retracts', [{ ...retraction, target: `ant:${ID}` }]), D.targetMalformed)
  t.equal(code('retracts', [{ ...retraction, target: `search_run:${UUID}:7` }]), 'ok')
  t.equal(code('retracts', [{ ...retraction, date: '2026-11-11' }]), M.invalid)
  t.equal(code('retracts', [{ ...retraction, publisher: undefined }]), M.invalid)
  t.equal(code('stats', { patterns: -1 }), M.invalid)
  t.equal(code('stats', { patterns: '3' }), M.invalid)
  t.equal(code('stats', {}), 'ok', 'stats are for people: counts may be missing')
  t.equal(code('stats', undefined), 'ok')
  t.equal(code('mirrors', ['https://example.org']), 'ok', 'unknown members are ignored')
  t.equal(codeOf(parseManifest(bytes(JSON.stringify(doc, null, 1)))), D.jsonNotCanonical, 'a manifest that is not canonical is refused')
  t.equal(codeOf(parseManifest(bytes('[]'))), D.format)
})

const part = (n: number, over: Partial<TablePart> = {}): TablePart => ({
  bytes: 1000 + n,
  first: `a${n}`,
  last: `b${n}`,
  object: h(100 + n),
  partition: { class_group: 'spaceship', tiling_group: 'k3' },
  rows: 10,
  ...over,
})

t.test('table index: built and checked', async (t) => {
  const built = buildTableIndex({ table: 'patterns', schema: 'jetcarp-patterns 1', parts: [part(1)], children: [h(2)] })
  t.ok(built.bytes.toString().startsWith(`{"children":["${h(2)}"],"format":"jetcarp-index","parts":[{"bytes":1001,"first":"a1"`))
  const parsed = parseTableIndex(built.bytes)
  t.ok(parsed.ok)
  if (parsed.ok) {
    t.same(parsed.value.index, built.document)
    t.equal(parsed.value.schemaNumber, 1)
  }
  const doc = JSON.parse(built.bytes.toString())
  const code = (name: string, value: unknown) => codeOf(parseTableIndex(withMember(doc, name, value)))
  const partCode = (over: object) => code('parts', [{ ...part(1), ...over }])
  t.equal(code('schema', 'jetcarp-patterns 2'), 'ok', 'which numbers a reader knows is the table schemas\' business')
  t.equal(code('schema', 'jetcarp-rules 1'), I.schemaMalformed, 'the schema names the index\'s table')
  for (const s of ['jetcarp-patterns 0', 'jetcarp-patterns', 'patterns 1', 'jetcarp-patterns  1', 'jetcarp-patterns 01']) t.equal(code('schema', s), I.schemaMalformed, s)
  t.same(codeOf(parseTableIndex(withMember({ ...doc, table: 'score_models' }, 'schema', 'jetcarp-score_models 1'))), 'ok', 'the name as written')
  t.equal(code('table', 'Patterns'), I.invalid)
  t.equal(code('version', '2.0'), D.versionMajor)
  t.equal(code('children', ['sha512:' + 'ab'.repeat(64)]), D.hashPrefix, 'a child is needed')
  t.equal(code('children', undefined), 'ok', 'no children when absent')
  t.equal(code('compacts', [h(9)]), 'ok', 'compacts is reserved and ignored')
  t.equal(partCode({ partition: {} }), 'ok', 'an unpartitioned part')
  t.equal(partCode({ partition: { class_group: 'Spaceship' } }), I.partitionMalformed)
  t.equal(partCode({ partition: { class_group: '../x' } }), I.partitionMalformed)
  t.equal(partCode({ partition: { class_group: 'still_life' } }), 'ok')
  t.equal(partCode({ partition: { 'class-group': 'x' } }), I.partitionMalformed)
  t.equal(partCode({ partition: { class_group: 3 } }), I.partitionMalformed)
  t.equal(partCode({ bytes: 4 * 1024 ** 3 }), 'ok', 'a part of 4 GiB')
  t.equal(partCode({ bytes: 4 * 1024 ** 3 + 1 }), I.invalid, 'a part MUST be at most 4 GiB')
  t.equal(partCode({ bytes: 0 }), I.invalid)
  t.equal(partCode({ rows: -1 }), I.invalid)
  t.equal(partCode({ first: 1 }), I.invalid, 'first is text')
  t.equal(partCode({ object: 'sha256:' + 'x'.repeat(64) }), D.hashMalformed)
  t.equal(partCode({ extra: 1 }), 'ok')

  const many = buildTableIndex({ table: 'patterns', schema: 'jetcarp-patterns 1', parts: Array.from({ length: 10_000 }, (_, i) => part(i)) })
  t.equal(codeOf(parseTableIndex(many.bytes)), 'ok', '10,000 parts')
  const manyDoc = JSON.parse(many.bytes.toString())
  t.equal(codeOf(parseTableIndex(withMember(manyDoc, 'parts', [...manyDoc.parts, part(10_000)]))), I.tooManyParts, '10,001 parts')
  t.equal(code('children', Array.from({ length: 10_001 }, (_, i) => h(i))), I.tooManyChildren, '10,001 children')
  t.equal(code('children', Array.from({ length: 10_000 }, (_, i) => h(i))), 'ok', '10,000 children')
  t.throws(() => buildTableIndex({ table: 'patterns', schema: 'jetcarp-patterns 1', parts: [part(1, { partition: { class_group: 'X' } })] }), { code: I.partitionMalformed })
})

const SEARCH: SearchIndexInput = {
  created: T0,
  engine_version: '0.4.0',
  kind: 'explore',
  parts: [{ bytes: 77187976, engine_version: '0.4.0', first: '1', last: '1000000', object: h(50), rows: 1000000, sealed: T0, segment: 'part-000001' }],
  remeasure: { seconds: '12.5' },
  run_schema: 'jetcarp-explore-runs 1',
  score_schema: 'jetcarp-explore-scores 1',
  scores: [{ created: T0, engine_version: '0.4.0', parts: [{ bytes: 1, object: h(51), rows: 3, segment: 'part-000001' }], version: 1 }],
  search: UUID,
  spec: { density: '0.35', size: 64 },
  updated: T0,
}

t.test('search index: built and checked', async (t) => {
  const built = buildSearchIndex(SEARCH)
  t.same(Object.keys(JSON.parse(built.bytes.toString())), ['children', 'created', 'engine_version', 'format', 'kind', 'parts', 'remeasure', 'run_schema', 'schema', 'score_schema', 'scores', 'search', 'spec', 'table', 'updated', 'version'], 'the members of "Search runs"')
  t.equal(built.document.schema, 'jetcarp-search 1')
  t.equal(built.document.table, 'search')
  t.equal(codeOf(parseSearchIndex(built.bytes, { search: UUID })), 'ok')
  t.equal(codeOf(parseSearchIndex(built.bytes, { search: '11111111-2222-3333-4444-555555555555' })), I.searchMismatch, 'search MUST be the uuid the manifest maps')
  t.throws(() => buildSearchIndex({ ...SEARCH, spec: { density: 0.35 } }), { code: D.jsonNumberFraction }, 'non-integer settings are written as strings')
  const doc = JSON.parse(built.bytes.toString())
  const code = (name: string, value: unknown) => codeOf(parseSearchIndex(withMember(doc, name, value)))
  const segment = (over: object) => code('parts', [{ ...SEARCH.parts[0], ...over }])
  const score = (over: object) => code('scores', [{ ...SEARCH.scores![0], ...over }])
  t.equal(code('table', 'patterns'), I.schemaMalformed)
  t.equal(codeOf(parseSearchIndex(withMember({ ...doc, schema: 'jetcarp-patterns 1' }, 'table', 'patterns'))), I.invalid, 'a search index is of table search')
  t.equal(code('search', UUID.toUpperCase()), I.invalid)
  t.equal(code('run_schema', 'explore runs'), I.schemaMalformed)
  t.equal(code('remeasure', undefined), 'ok')
  t.equal(code('remeasure', 'x'), I.invalid)
  t.equal(code('spec', undefined), I.invalid)
  t.equal(code('kind', ''), I.invalid)
  t.equal(code('updated', 'yesterday'), I.invalid)
  t.equal(code('scores', undefined), 'ok', 'a search never rescored')
  for (const s of ['part-', 'part-x', 'Part-1', 'part-1/..', '../part-1']) t.equal(segment({ segment: s }), I.invalid, `segment ${s}`)
  t.equal(segment({ first: '01' }), I.invalid, 'run ids in decimal')
  t.equal(segment({ last: 1000000 }), I.invalid)
  t.equal(segment({ sealed: undefined }), I.invalid)
  t.equal(score({ version: 0 }), I.invalid)
  t.equal(score({ parts: [{ bytes: 1, object: h(1), rows: 1, segment: 'x' }] }), I.invalid)
  const sidecars = (n: number) => Array.from({ length: n }, (_, i) => ({ bytes: 1, object: h(i), rows: 1, segment: `part-${i}` }))
  t.equal(code('scores', [{ ...SEARCH.scores![0], parts: sidecars(6000) }, { ...SEARCH.scores![0], version: 2, parts: sidecars(4000) }]), 'ok', '10,000 sidecars')
  t.equal(code('scores', [{ ...SEARCH.scores![0], parts: sidecars(6000) }, { ...SEARCH.scores![0], version: 2, parts: sidecars(4001) }]), I.tooManyParts, '10,001 sidecars over two scores')
})

t.test('refs: built, signed, read, verified', async (t) => {
  const first = firstKeyStatement(PUBLISHER, { created: T0, name: 'Golden Publisher A' })
  const withMachine = updateAuthorised(first, PUBLISHER, { add: [{ key: MACHINE.publicKey, label: 'laptop' }] })
  const chain = verifyKeyChain([{ statement: keyStatementBytes(withMachine) }])
  t.ok(readPackJson(keyStatementBytes(withMachine)).ok, 'a key statement meets the same JSON rules')
  const unsigned = buildRef({ feed: 'golden-a', manifest: h(1), publisher: FP, seq: 1, updated: T0 })
  t.same(unsigned, { feed: 'golden-a', format: 'jetcarp-ref', manifest: h(1), publisher: FP, seq: 1, updated: T0, version: '1.0' })
  const signed = signRef(unsigned, PUBLISHER)
  t.match(signed.bytes.toString(), /^\{"feed":"golden-a","format":"jetcarp-ref","manifest":"sha256:[0-9a-f]{64}","publisher":"SHA256:[^"]+","seq":1,"signature":"-----BEGIN SSH SIGNATURE-----\\n[^"]+\\n-----END SSH SIGNATURE-----\\n","updated":"2026-11-11T00:00:00Z","version":"1.0"\}$/)
  t.equal(refSignedBytes(signed.document).toString(), canonicalize(unsigned), 'the signature covers the ref without signature')

  const parsed = parseRef(signed.bytes, { feed: 'golden-a' })
  t.ok(parsed.ok)
  if (!parsed.ok) return
  t.same(verifyRef(chain, parsed.value.ref), { ok: true, publisherId: FP, via: 'key', signer: FP, fingerprint: FP })
  const byMachine = parseRef(signRef(unsigned, MACHINE).bytes)
  t.equal(byMachine.ok && verifyRef(chain, byMachine.value.ref).ok && 'machine', 'machine', 'a machine key the statement authorises')
  const byStranger = parseRef(signRef(unsigned, STRANGER).bytes)
  t.equal(byStranger.ok && codeOf(verifyRef(chain, byStranger.value.ref)), 'pack.signer-not-authorised')
  t.equal(codeOf(verifyRef(chain, { ...parsed.value.ref, seq: 2 })), 'pack.sig-bad', 'a changed member breaks the signature')
  t.equal(codeOf(verifyRef(chain, { ...parsed.value.ref, mirrors: ['x'] })), 'pack.sig-bad', 'unknown members are signed too')
  t.equal(codeOf(verifyRef(verifyKeyChain([]), parsed.value.ref)), 'pack.key-statement-missing')

  // A later minor's member, signed: kept, ignored, and verified.
  const future = signRef({ ...unsigned, version: '1.1', torrents: ['magnet:?x'] }, PUBLISHER)
  const futureParsed = parseRef(future.bytes)
  t.ok(futureParsed.ok && futureParsed.value.minor === 1 && futureParsed.value.ref.torrents !== undefined)
  t.ok(futureParsed.ok && verifyRef(chain, futureParsed.value.ref).ok)

  const doc = JSON.parse(signed.bytes.toString())
  const code = (name: string, value: unknown, feed?: string) => codeOf(parseRef(withMember(doc, name, value), feed === undefined ? {} : { feed }))
  t.equal(code('feed', 'golden-a', 'golden-b'), R.feedMismatch, 'refs/<feed>.json holds its own feed')
  t.equal(code('seq', 0), R.invalid, 'seq starts at 1')
  t.equal(code('seq', 1.5), D.jsonNumberFraction)
  t.equal(code('signature', undefined), R.invalid)
  t.equal(code('manifest', 'sha512:' + 'ab'.repeat(64)), D.hashPrefix)
  t.equal(code('updated', '2026-11-11T00:00:00.5Z'), R.invalid)
  t.equal(code('format', 'jetcarp-pack'), D.format)
  t.equal(code('version', '2.0'), D.versionMajor)
  t.equal(codeOf(parseRef(bytes(JSON.stringify(doc, null, 2)))), D.jsonNotCanonical, 'JETCARP refuses a ref that is not canonical')
  t.throws(() => buildRef({ feed: 'golden-a', manifest: h(1), publisher: FP, seq: 0, updated: T0 }), { code: R.invalid })
})

t.test('refs: ssh-keygen -Y verify accepts the signature over the ref without signature', needs('ssh-keygen'), async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pack-ref-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const signed = signRef(buildRef({ feed: 'golden-a', manifest: h(1), publisher: FP, seq: 3, updated: T0 }), PUBLISHER)
  await writeFile(join(dir, 'allowed'), `publisher namespaces="${NS_REF}" ${formatPublicKey(PUBLISHER.publicKey)}\n`)
  await writeFile(join(dir, 'ref.sig'), signed.document.signature)
  const verify = (ns: string, message: Buffer) => spawnSync('ssh-keygen', ['-Y', 'verify', '-f', join(dir, 'allowed'), '-I', 'publisher', '-n', ns, '-s', join(dir, 'ref.sig')], { input: message }).status
  t.equal(verify(NS_REF, refSignedBytes(signed.document)), 0)
  t.not(verify(NS_REF, signed.bytes), 0, 'not over the file with its signature')
  t.not(verify('jetcarp-manifest', refSignedBytes(signed.document)), 0, 'namespace jetcarp-ref only')
})

t.test('refs: the follower\'s seq rule', async (t) => {
  const at = (seq: number, n: number) => ({ seq, manifest: h(n) })
  t.same(followRef(undefined, at(1, 1)), { ok: true, update: true }, 'the first ref a follower sees')
  t.same(followRef(at(1, 1), at(2, 2)), { ok: true, update: true })
  t.same(followRef(at(1, 1), at(5, 2)), { ok: true, update: true }, 'seq may go up by more than one')
  t.same(followRef(at(1, 1), at(2, 1)), { ok: true, update: true }, 'a higher seq naming the same manifest')
  t.same(followRef(at(3, 1), at(3, 1)), { ok: true, update: false }, 'the same seq and manifest is no update')
  t.equal(codeOf(followRef(at(3, 1), at(3, 2))), R.rollback, 'the same seq with another manifest')
  t.equal(codeOf(followRef(at(3, 1), at(2, 1))), R.rollback, 'a lower seq')
})

t.test('jetcarp-store.json', async (t) => {
  t.equal(storeDocumentBytes().toString(), '{"format":"jetcarp-store","version":"1.0"}')
  t.same(parseStoreDocument(storeDocumentBytes()), { ok: true, value: { minor: 0 } })
  t.same(parseStoreDocument(bytes('{"format":"jetcarp-store","torrents":true,"version":"1.1"}')), { ok: true, value: { minor: 1 } })
  t.equal(codeOf(parseStoreDocument(bytes('{"format":"jetcarp-store","version":"2.0"}'))), D.versionMajor)
  t.equal(codeOf(parseStoreDocument(bytes('{"format":"jetcarp-pack","version":"1.0"}'))), D.format)
  t.equal(codeOf(parseStoreDocument(bytes('{"version":"1.0","format":"jetcarp-store"}'))), D.jsonNotCanonical)
  t.equal(codeOf(parseStoreDocument(bytes('{"format":"jetcarp-store","version":"1.0"}\n'))), D.jsonNotCanonical)
})

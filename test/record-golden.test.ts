/**
 * The golden sealed day (test/golden/record, built by scripts/make-golden-record.ts): its hashes, `pipe run
 * verify` over it, and the same facts read back with independent tools — b3sum (BLAKE3 of files and
 * manifests, chain links), zstd (raw files and their row counts), DuckDB (tables: exact decimals against
 * the raw payloads, microsecond times, row counts), hyparquet via tables.ts (exact nanosecond times) and
 * openssl (every manifest signature, from the JWK's public key). A subtest whose tool is missing is
 * skipped, and fails under PIPE_REQUIRE_TOOLS=1 (test/helpers/tools.ts).
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process'
import { createHash, createPublicKey } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'
import t from 'tap'
import { decompress } from 'zstd-napi'
import { childEnv } from './helpers/io.js'
import { needs } from './helpers/tools.js'
import type { DailyManifest, HourlyManifest } from '../src/formats/record/manifest.js'
import { readTableRows } from '../src/formats/record/tables.js'
import { parseTime } from '../src/formats/record/time.js'

type Tap = Parameters<Parameters<typeof t.test>[0]>[0]
const run = promisify(execFile)
const GOLDEN = join(import.meta.dirname, 'golden', 'record')
const ROOT = join(GOLDEN, 'root')
const JWKS = join(GOLDEN, 'jwks.json')
const CHAIN = join(ROOT, 'recorder=golden', 'venue=binance', 'channel=trades')

interface Hour { date: string; hh: string; dir: string; bytes: Buffer; manifest: HourlyManifest }
interface Day { date: string; dir: string; bytes: Buffer; manifest: DailyManifest }

const hours: Hour[] = []
const days: Day[] = []
for (const date of (await readdir(CHAIN)).filter((d) => d.startsWith('date=')).sort()) {
  const dayDir = join(CHAIN, date)
  for (const hh of (await readdir(dayDir)).filter((h) => h.startsWith('hour=')).sort()) {
    const dir = join(dayDir, hh)
    const bytes = await readFile(join(dir, 'manifest.json'))
    hours.push({ date: date.slice(5), hh: hh.slice(5), dir, bytes, manifest: JSON.parse(bytes.toString('utf8')) as HourlyManifest })
  }
  const daily = await readFile(join(dayDir, 'manifest.json')).catch(() => null)
  if (daily) days.push({ date: date.slice(5), dir: dayDir, bytes: daily, manifest: JSON.parse(daily.toString('utf8')) as DailyManifest })
}

interface Envelope { payload: string; exchange_time?: string; receipts: { receive_time: string; clock_error_bound?: number }[] }
/** The raw file's lines, decompressed in this process (libzstd through zstd-napi). */
async function rawLines(t: Tap, dir: string, label: string): Promise<string[]> {
  const text = decompress(await readFile(join(dir, 'raw.jsonl.zst'))).toString('utf8')
  t.ok(text === '' || text.endsWith('\n'), `${label}: the raw file ends with a newline`)
  return text === '' ? [] : text.slice(0, -1).split('\n')
}
function frameTime(env: Envelope): bigint {
  const bounded = env.receipts.filter((r) => r.clock_error_bound !== undefined)
  return (bounded.length > 0 ? bounded : env.receipts).map((r) => parseTime(r.receive_time)).reduce((a, b) => (b < a ? b : a))
}
/** A plain decimal without trailing fractional zeros: one text per value. */
const norm = (s: string) => (s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s)

t.test('the golden tree is what hashes.txt lists', async (t) => {
  const listed = (await readFile(join(GOLDEN, 'hashes.txt'), 'utf8')).trimEnd().split('\n').map((l) => /^([0-9a-f]{64}) {2}(.+)$/.exec(l)!)
  t.ok(listed.every(Boolean), 'sha256sum format')
  const walk = async (d: string, rel = ''): Promise<string[]> => (await Promise.all((await readdir(d, { withFileTypes: true })).map((e) => (e.isDirectory() ? walk(join(d, e.name), `${rel}${e.name}/`) : [`${rel}${e.name}`])))).flat()
  t.same((await walk(GOLDEN)).filter((f) => f !== 'hashes.txt').sort(), listed.map((m) => m[2]).sort(), 'every file listed, nothing else')
  for (const [, sha, file] of listed) t.equal(createHash('sha256').update(await readFile(join(GOLDEN, file!))).digest('hex'), sha, file!)
  t.equal(hours.length, 25, '25 hourly manifests')
  t.same(days.map((d) => d.date), ['2026-10-04'], 'one daily manifest (the next day is still open)')
})

t.test('pipe run verify passes the golden day (CLI)', async (t) => {
  const r = spawnSync(process.execPath, ['dist/bin/pipe.js', 'run', 'verify', '--root', ROOT, '--keys', JWKS, '--json'], { env: childEnv(), encoding: 'utf8' })
  t.equal(r.status, 0, r.stderr)
  t.same(JSON.parse(r.stdout), { ok: true, hours: 25, days: 2, findings: [], findings_left_out: 0 })
})

t.test('the golden day states its incidents', async (t) => {
  const status = hours.map((h) => `${h.date}T${h.hh} ${h.manifest.completeness.status} ${h.manifest.completeness.reasons.join(',')}`.trimEnd())
  t.match(status[5], /T05 complete$/, 'the empty hour is complete')
  t.equal(hours[5]!.manifest.files.find((f) => f.name === 'trades.parquet')!.rows, 0, 'and has no trades')
  t.match(status[10], /T10 partial reconnect$/)
  t.match(status[14], /T14 partial sequence_gap$/)
  t.match(status[18], /T18 missing recorder_down$/)
  t.match(status[24], /2026-10-05T00 partial clock_offset_unknown$/)
  t.equal(hours[24]!.manifest.conflicts?.length, 1, 'one conflict on the next day')
})

t.test('b3sum: listed files, hourly and daily links', needs('b3sum'), async (t) => {
  const paths = [...hours.flatMap((h) => [...h.manifest.files.map((f) => join(h.dir, f.name)), join(h.dir, 'manifest.json')]), ...days.map((d) => join(d.dir, 'manifest.json'))]
  const { stdout } = await run('b3sum', paths, { maxBuffer: 1 << 24, encoding: 'utf8' })
  const b3 = new Map(stdout.trimEnd().split('\n').map((l) => { const [hash, path] = [l.slice(0, 64), l.slice(66)]; return [path, hash] }))
  t.equal(b3.size, paths.length)
  let previous: string | null = null
  for (const h of hours) {
    for (const f of h.manifest.files) t.equal(b3.get(join(h.dir, f.name)), f.blake3, `${h.date}T${h.hh} ${f.name}`)
    t.equal(h.manifest.previous_manifest_blake3, previous, `${h.date}T${h.hh} links to the previous hour`)
    previous = b3.get(join(h.dir, 'manifest.json'))!
  }
  for (const d of days) {
    const own = hours.filter((h) => h.date === d.date)
    t.same(d.manifest.hours, own.map((h) => ({ hour: h.hh, blake3: b3.get(join(h.dir, 'manifest.json')), status: h.manifest.completeness.status })), `${d.date}: daily hours`)
    t.equal(d.manifest.previous_manifest_blake3, null, `${d.date}: the first day`)
  }
})

t.test('the zstd CLI reads every raw file: its lines, as many as the manifest states', needs('zstd'), async (t) => {
  for (const h of hours) {
    const label = `${h.date}T${h.hh}`
    const raw = join(h.dir, 'raw.jsonl.zst')
    const { stdout } = await run('zstd', ['-dc', raw], { maxBuffer: 1 << 28, encoding: 'buffer' })
    t.ok(stdout.equals(decompress(await readFile(raw))), `${label}: zstd -dc gives the bytes the other tests read`)
    const text = stdout.toString('utf8')
    t.ok(text === '' || text.endsWith('\n'), `${label}: the raw file ends with a newline`)
    const lines = text === '' ? 0 : text.split('\n').length - 1
    t.equal(lines, h.manifest.files.find((f) => f.name === 'raw.jsonl.zst')!.rows, `${label}: zstd line count = rows`)
  }
})

t.test('DuckDB and hyparquet read every hour exactly', async (t) => {
  const db = await DuckDBInstance.create(':memory:')
  const conn: DuckDBConnection = await db.connect()
  t.teardown(() => { conn.closeSync(); db.closeSync() })
  let trades = 0
  for (const h of hours) {
    const label = `${h.date}T${h.hh}`
    const lines = await rawLines(t, h.dir, label)
    t.equal(lines.length, h.manifest.files.find((f) => f.name === 'raw.jsonl.zst')!.rows, `${label}: raw line count = rows`)
    const envs = lines.map((l) => JSON.parse(l) as Envelope)
    const parquet = join(h.dir, 'trades.parquet')
    const got = (await conn.runAndReadAll(
      `SELECT raw_index::VARCHAR AS ri, instrument, trade_id, side, CAST(price AS VARCHAR) AS price, CAST(size AS VARCHAR) AS size,
              epoch_us(exchange_time)::VARCHAR AS et, epoch_us(receive_time)::VARCHAR AS rt FROM read_parquet('${parquet}')`,
    )).getRowObjectsJson()
    t.equal(got.length, h.manifest.files.find((f) => f.name === 'trades.parquet')!.rows, `${label}: DuckDB row count`)
    const want: Record<string, string | null>[] = []
    envs.forEach((env, i) => {
      const p = JSON.parse(env.payload) as { e?: string; s: string; t: number; p: string; q: string; m: boolean }
      if (p.e !== 'trade') return
      if (h.manifest.unrepresentable_frames?.includes(i)) return
      want.push({
        ri: String(i), instrument: p.s, trade_id: String(p.t), side: p.m ? 'sell' : 'buy', price: p.p, size: p.q,
        et: env.exchange_time === undefined ? null : String(parseTime(env.exchange_time) / 1000n), rt: String(frameTime(env) / 1000n),
      })
    })
    t.same(got.map((r) => ({ ...r, price: norm(r.price as string), size: norm(r.size as string) })), want.map((r) => ({ ...r, price: norm(r.price!), size: norm(r.size!) })), `${label}: DuckDB values = raw payloads`)
    const exact: string[] = []
    for await (const batch of readTableRows(parquet)) for (const r of batch) exact.push(`${r.raw_index} ${r.receive_time} ${r.exchange_time}`)
    t.same(exact, want.map((w) => { const env = envs[Number(w.ri)]!; return `${w.ri} ${frameTime(env)} ${env.exchange_time === undefined ? null : parseTime(env.exchange_time)}` }), `${label}: exact ns times (hyparquet)`)
    trades += got.length
  }
  t.ok(trades > 3000, `${trades} trades compared`)
})

t.test('openssl verifies every manifest signature', needs('openssl'), async (t) => {
  const jwks = JSON.parse(await readFile(JWKS, 'utf8')) as { keys: { kid: string; x: string }[] }
  t.equal(jwks.keys.length, 1)
  const key = jwks.keys[0]!
  const tmp = await mkdtemp(join(tmpdir(), 'pipe-golden-openssl-'))
  t.teardown(() => rm(tmp, { recursive: true, force: true }))
  const pem = join(tmp, 'pub.pem')
  await writeFile(pem, createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key.x }, format: 'jwk' }).export({ type: 'spki', format: 'pem' }))
  const manifests = [...hours.map((h) => ({ label: `${h.date}T${h.hh}`, dir: h.dir, bytes: h.bytes })), ...days.map((d) => ({ label: d.date, dir: d.dir, bytes: d.bytes }))]
  for (const m of manifests) {
    const [header, empty, signature] = (await readFile(join(m.dir, 'manifest.json.sig'), 'ascii')).split('.')
    t.equal(empty, '', `${m.label}: detached payload`)
    t.same(JSON.parse(Buffer.from(header!, 'base64url').toString('utf8')), { alg: 'Ed25519', b64: false, crit: ['b64'], kid: key.kid }, `${m.label}: header`)
    await writeFile(join(tmp, 'in'), Buffer.concat([Buffer.from(`${header}.`, 'ascii'), m.bytes]))
    await writeFile(join(tmp, 'sig'), Buffer.from(signature!, 'base64url'))
    const out = execFileSync('openssl', ['pkeyutl', '-verify', '-pubin', '-inkey', pem, '-rawin', '-in', join(tmp, 'in'), '-sigfile', join(tmp, 'sig')], { encoding: 'utf8' })
    t.match(out, /Signature Verified Successfully/, `${m.label}: openssl accepts the signature`)
  }
  // And refuses a changed manifest.
  await writeFile(join(tmp, 'in'), Buffer.concat([Buffer.from((await readFile(join(hours[0]!.dir, 'manifest.json.sig'), 'ascii')).split('.')[0]! + '.', 'ascii'), hours[1]!.bytes]))
  await writeFile(join(tmp, 'sig'), Buffer.from((await readFile(join(hours[0]!.dir, 'manifest.json.sig'), 'ascii')).split('.')[2]!, 'base64url'))
  t.not(spawnSync('openssl', ['pkeyutl', '-verify', '-pubin', '-inkey', pem, '-rawin', '-in', join(tmp, 'in'), '-sigfile', join(tmp, 'sig')]).status, 0, 'openssl refuses a signature over other bytes')
})

t.test('the sealer still makes the golden day byte for byte (scripts/make-golden-record.ts --check)', async (t) => {
  const r = spawnSync(process.execPath, ['dist/scripts/make-golden-record.js', '--check'], { env: childEnv(), encoding: 'utf8', timeout: 300_000 })
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout + r.stderr, /identical to a fresh build/)
})

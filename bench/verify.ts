/**
 * bench:verify — `pipe run verify` over a year of sealed hours: memory must not grow with the number of
 * hours (the verifier streams chains, days and hours, keeping only the previous hour's hash and the
 * current day's entries). BENCH_HOURS (default 8760) hours of simulated Binance trades, a few frames an
 * hour on both replicas, are journalled and sealed with the sealer (not timed), with their daily manifests;
 * then verify runs over the first day alone and over all of it, in the same run. The last line:
 *   verify-year hours H peak-rss-mb M rss-ratio-vs-one-day R hours-per-s X
 * M = verify's peak RSS over all hours; R = M / the peak RSS over the first day (1.0: memory does not
 * grow with the hours); X = hourly manifests verified per second over all hours.
 * Verify's MB/s on one large hour is bench:seal-hour's (its last line's verify-mb-per-s).
 *
 * Environment: BENCH_HOURS, BENCH_DIR (keep and reuse the sealed hours there).
 */
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { timedCli, type Timed } from './timed-cli.js'
import { JournalBuilder } from '../src/formats/record/journal/journal.js'
import { newSigningKey, writeJwksFile } from '../src/formats/record/keys/keys.js'
import { sealHour } from '../src/formats/record/seal/seal.js'
import { simulateReplicas } from '../src/sim/replicas.js'
import { binanceSpot } from '../src/venues/binance.js'
import { keySigner } from '../src/formats/record/keys/signer.js'

const HOURS = Number(process.env.BENCH_HOURS ?? 8760)
const HOUR = 3_600_000_000_000n
const S = 1_000_000_000n
const START = BigInt(Date.UTC(2026, 0, 1)) * 1_000_000n
const CHUNK_HOURS = 60 * 24

const keep = process.env.BENCH_DIR
const dir = keep ?? await mkdtemp(join(tmpdir(), 'bench-verify-'))
try {
  await mkdir(dir, { recursive: true })
  const root = join(dir, 'root')
  const jwks = join(dir, 'jwks.json')
  const ready = join(dir, 'ready')
  if (!existsSync(ready) || Number(await readFile(ready, 'utf8')) !== HOURS) {
    await rm(root, { recursive: true, force: true })
    const journal = join(dir, 'journal')
    const t0 = performance.now()
    const { privateJwk, publicJwk } = await newSigningKey({ validFrom: START - HOUR, seed: new Uint8Array(32).fill(7) })
    await writeJwksFile(jwks, { keys: [publicJwk] })
    // The simulator covers at most 100 days at a time: a journal per 60 days, its replicas connecting
    // ten seconds before the first hour it serves.
    for (let first = 0; first < HOURS; first += CHUNK_HOURS) {
      const last = Math.min(HOURS, first + CHUNK_HOURS)
      await rm(journal, { recursive: true, force: true })
      const builder = new JournalBuilder(journal)
      for (const e of simulateReplicas({ channel: 'trades', start: START + BigInt(first) * HOUR - 10n * S, end: START + BigInt(last) * HOUR, framesPerSecond: 0.02, seed: 5 + first })) await builder.append(e)
      await builder.commit()
      for (let h = first; h < last; h++) {
        await sealHour({ root, journal, recorder: 'bench', venue: binanceSpot, channel: 'trades', hourStart: START + BigInt(h) * HOUR, sign: keySigner(privateJwk), createdBy: 'pipe bench' })
      }
      console.log(`sealed ${last} of ${HOURS} hours`)
    }
    await rm(journal, { recursive: true, force: true })
    await writeFile(ready, String(HOURS))
    console.log(`prepared in ${((performance.now() - t0) / 1000).toFixed(0)} s (not timed)`)
  }

  const day = timedCli(['run', 'verify', '--root', root, '--keys', jwks, '--to', '2026-01-01', '--json'])
  const all = timedCli(['run', 'verify', '--root', root, '--keys', jwks, '--json'])
  const summary = (t: Timed) => JSON.parse(t.stdout) as { ok: boolean; hours: number; days: number }
  const [d, a] = [summary(day), summary(all)]
  if (!d.ok || !a.ok || a.hours !== HOURS) throw new Error(`verify: ${JSON.stringify(a)}`)
  console.log(`first day: ${d.hours} hours, ${day.wall.toFixed(2)} s, peak RSS ${day.rssMb.toFixed(0)} MB`)
  console.log(`all:       ${a.hours} hours, ${a.days} days, ${all.wall.toFixed(2)} s, peak RSS ${all.rssMb.toFixed(0)} MB`)
  console.log(`verify-year hours ${a.hours} peak-rss-mb ${all.rssMb.toFixed(0)} rss-ratio-vs-one-day ${(all.rssMb / day.rssMb).toFixed(2)} hours-per-s ${(a.hours / all.wall).toFixed(0)}`)
} finally {
  if (!keep) await rm(dir, { recursive: true, force: true })
}

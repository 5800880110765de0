/**
 * Sealing into object storage, where nothing is renamed and several machines may write: the hour is built
 * in a local temporary folder as always, then landed object by object with create-only puts, in one
 * order every sealer keeps (the listed files by name, then the manifest, then its signature). So a reader
 * never sees a manifest whose files are missing; an object that holds the same bytes already is a re-run's
 * (sealing is deterministic); and of two sealers of one hour from different frames, the first object whose
 * bytes differ decides, and the other stops without having changed anything the winner wrote.
 *
 * An hour counts as sealed once its signature exists. A seal stopped before that is completed by sealing
 * the hour again; the next hour is refused until then.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PipeError, UsageError } from '../../../core/errors.js'
import { linkDocument } from '../../../codec/document-link.js'
import type { DocumentItem } from '../../../core/items.js'
import { keyJoin, openStorage, type Storage } from '../../../storage/storage.js'
import { HOUR_NS } from '../journal/journal.js'
import { FORMAT_VERSION, MANIFEST_LIMIT, dayDir, hourDir, type DailyManifest, type HourlyManifest } from '../manifest.js'
import {
  PREVIOUS_FIELD, SEAL_TEMP_PREFIX, blake3Hex, dateOf, hourLabel, isLastHourOfDay, removeDeadSealTemps, sealableManifest,
  type HourDraft, type HourPlace, type SealHourOptions, type SealHourResult,
} from './seal.js'

type ChainIds = { recorder: string; venue: string; channel: string }
type Chain = Pick<SealHourOptions, 'root' | 'recorder' | 'venue' | 'channel'>

const idsOf = (o: Chain): ChainIds => ({ recorder: o.recorder, venue: o.venue.name, channel: o.channel })
const hourKey = (ids: ChainIds, start: bigint) => hourDir(ids.recorder, ids.venue, ids.channel, start)
const manifestOf = (key: string) => `${key}/manifest.json`
const signatureOf = (key: string) => `${key}/manifest.json.sig`

async function readStoredManifest(store: Storage, key: string): Promise<Buffer | null> {
  return store.get(key, MANIFEST_LIMIT.maxBytes)
}

/** The last hour of a chain that holds a manifest (signed or not), found from the end: a few listings, not a year's. */
export async function lastStoredHour(store: Storage, ids: ChainIds): Promise<bigint | null> {
  const chainKey = `recorder=${ids.recorder}/venue=${ids.venue}/channel=${ids.channel}`
  const dates = (await store.folders(chainKey)).filter((d) => /^date=\d{4}-\d{2}-\d{2}$/.test(d)).reverse()
  for (const d of dates) {
    const hours = (await store.folders(`${chainKey}/${d}`)).filter((h) => /^hour=([01]\d|2[0-3])$/.test(h)).reverse()
    for (const h of hours) {
      if (await store.head(manifestOf(`${chainKey}/${d}/${h}`))) return BigInt(Date.parse(`${d.slice(5)}T${h.slice(5)}:00:00Z`)) * 1_000_000n
    }
  }
  return null
}

/**
 * Where the hour goes in the store: a signed hour is given as it is; otherwise it must be the next of its
 * chain, whose hour before is signed, and a local temporary folder is made to build it in (with the hour
 * before's manifest beside, for chain-link).
 */
export async function placeHourInStore(o: Chain & Pick<SealHourOptions, 'hourStart'>): Promise<HourPlace> {
  const store = await openStorage(o.root)
  const start = o.hourStart
  const ids = idsOf(o)
  const key = hourKey(ids, start)
  const chain = { root: o.root, recorder: o.recorder, venue: o.venue, channel: o.channel }
  const dir = store.where(key)
  const where = { file: dir }
  if (await store.head(signatureOf(key))) {
    const bytes = await readStoredManifest(store, manifestOf(key))
    if (bytes) return { chain, hourStart: start, dir, temp: null, previousPath: null, sealed: JSON.parse(bytes.toString('utf8')) as HourlyManifest }
  }
  let last = await lastStoredHour(store, ids)
  // This hour's own manifest, its signature not yet written: a seal of it stopped, and this one completes it.
  if (last === start) last = (await store.head(manifestOf(hourKey(ids, start - HOUR_NS)))) ? start - HOUR_NS : null
  if (last !== null) {
    if (last >= start + HOUR_NS) throw new UsageError('seal.before-chain-end', `the chain already holds hours after ${hourLabel(start)} (up to ${hourLabel(last)}); hours are sealed in order`, { location: where })
    if (last !== start - HOUR_NS) throw new UsageError('seal.previous-hour-missing', `seal ${hourLabel(last + HOUR_NS)} first: the chain ends at ${hourLabel(last)} and never skips an hour`, { location: where })
    if (!(await store.head(signatureOf(hourKey(ids, last))))) {
      throw new UsageError('seal.previous-hour-unsigned', `seal ${hourLabel(last)} again first: its manifest has no signature yet (a seal of it stopped before its last write)`, { location: where })
    }
  }
  await removeDeadSealTemps(tmpdir(), SEAL_TEMP_PREFIX)
  const temp = join(tmpdir(), `.${SEAL_TEMP_PREFIX}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  await mkdir(temp)
  try {
    let previousPath: string | null = null
    if (last !== null) {
      const bytes = await readStoredManifest(store, manifestOf(hourKey(ids, last)))
      if (!bytes) throw new PipeError('seal.previous-hour-missing', `the manifest of ${hourLabel(last)} was there and is gone`, { location: where })
      previousPath = join(temp, '.previous-manifest.json')
      await writeFile(previousPath, bytes)
    }
    return { chain, hourStart: start, dir, temp, previousPath }
  } catch (err) {
    await rm(temp, { recursive: true, force: true })
    throw err
  }
}

/** Whether a day's manifest and its signature are both in the store. */
async function dayFinishedInStore(store: Storage, ids: ChainIds, date: string): Promise<boolean> {
  return (await store.head(signatureOf(dayDir(ids.recorder, ids.venue, ids.channel, date)))) !== null
}

/**
 * Lands a linked and signed hour: its files, its manifest, its signature, each created only if absent;
 * then, after hour 23, the day. A final draft only finishes its day if that was left undone.
 */
export async function landHour(draft: HourDraft): Promise<SealHourResult> {
  const store = await openStorage(draft.seal.root)
  const o = draft.seal
  const ids = idsOf(o)
  const start = draft.hourStart
  if (draft.final) {
    const result: SealHourResult = { status: 'already-sealed', dir: draft.dir, manifest: draft.manifest }
    if (isLastHourOfDay(start) && !(await dayFinishedInStore(store, ids, dateOf(start)))) result.daily = await sealDayInStore(o, dateOf(start))
    return result
  }
  if (!draft.bytes || draft.signature === undefined || !draft.temp) throw new PipeError('seal.not-signed', `${draft.name} reached the commit without being linked and signed: put chain-link and sign before it`)
  const before = start - HOUR_NS
  if (draft.previousPath !== null && isLastHourOfDay(before) && !(await dayFinishedInStore(store, ids, dateOf(before)))) await sealDayInStore(o, dateOf(before))
  const key = hourKey(ids, start)
  const put = async (name: string, body: Uint8Array | { file: string }) => {
    try {
      return await store.putIfAbsent(keyJoin(key, name), body)
    } catch (err) {
      if (err instanceof PipeError && err.code === 'storage.object-differs') {
        throw new UsageError('seal.hour-differs', `another seal of ${hourLabel(start)}, from other frames or with another key, landed other bytes first; this seal stopped there and changed nothing of it (verify the chain, and seal from the journal that made it)`, { location: { file: store.where(keyJoin(key, name)) }, cause: err })
      }
      throw err
    }
  }
  let created = false
  for (const f of [...draft.manifest.files].sort((x, y) => (x.name < y.name ? -1 : 1))) created = (await put(f.name, { file: join(draft.temp, f.name) })) === 'created' || created
  created = (await put('manifest.json', draft.bytes)) === 'created' || created
  created = (await put('manifest.json.sig', Buffer.from(draft.signature, 'utf8'))) === 'created' || created
  await rm(draft.temp, { recursive: true, force: true })
  const result: SealHourResult = { status: created ? 'sealed' : 'already-sealed', dir: draft.dir, manifest: draft.manifest }
  if (isLastHourOfDay(start)) result.daily = await sealDayInStore(o, dateOf(start))
  return result
}

/** The day's manifest in the store: its hours in order, chained to the previous day's; the manifest, then its signature. */
export async function sealDayInStore(o: Chain & Pick<SealHourOptions, 'sign'>, date: string): Promise<DailyManifest> {
  const store = await openStorage(o.root)
  const ids = idsOf(o)
  const key = dayDir(ids.recorder, ids.venue, ids.channel, date)
  const stored = await Promise.all(Array.from({ length: 24 }, (_, h) => readStoredManifest(store, manifestOf(keyJoin(key, `hour=${String(h).padStart(2, '0')}`)))))
  const hours: DailyManifest['hours'] = []
  for (const [h, bytes] of stored.entries()) {
    if (!bytes) continue
    hours.push({ hour: String(h).padStart(2, '0'), blake3: await blake3Hex(bytes), status: (JSON.parse(bytes.toString('utf8')) as HourlyManifest).completeness.status })
  }
  const prevDate = new Date(Date.parse(`${date}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10)
  const previous = await readStoredManifest(store, manifestOf(dayDir(ids.recorder, ids.venue, ids.channel, prevDate)))
  const daily: DailyManifest = { format_version: FORMAT_VERSION, ...ids, channel: o.channel, date, hours, previous_manifest_blake3: null }
  const doc: DocumentItem = { kind: 'document', name: `day ${date}`, value: daily as unknown as Record<string, unknown>, serialize: () => sealableManifest(daily, store.where(key)) }
  const bytes = await linkDocument(doc, previous, PREVIOUS_FIELD, 'blake3')
  const signature = await o.sign(bytes)
  await store.putIfAbsent(manifestOf(key), bytes)
  await store.putIfAbsent(signatureOf(key), Buffer.from(signature, 'utf8'))
  return daily
}

/**
 * The replica journal (src/formats/record/journal/journal.ts, docs/journal.md): CRC-32C, the round trip of every
 * event kind, torn tails at every byte, a flipped bit in every record, impossible lengths, resynchronisation,
 * the writers (fsync policies, reopening after a crash, the directory layout) and the range reader.
 * `JOURNAL_BENCH=1` adds a read of 2M frame records and prints records/s and MB/s.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync, appendFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import t from 'tap'
import {
  FILE_HEADER_SIZE,
  JournalBatch,
  JournalFileWriter,
  JournalWriter,
  JournalJsonError,
  JournalScanner,
  MAX_BODY_SIZE,
  MAX_PAYLOAD_SIZE,
  RECORD_HEADER_SIZE,
  SYNC_MARKER,
  crc32c,
  decodeJournal,
  encodeJournalRecord,
  eventFromJson,
  eventToJson,
  eventToJsonLine,
  fileHeader,
  hourName,
  hourStart,
  journalFilePath,
  readJournalFile,
  readJournalRange,
  scanJournalFile,
  seekJournalTime,
  type JournalProblem,
  type ScanOutput,
} from '../src/formats/record/journal/journal.js'
import { parseTime } from '../src/formats/record/time.js'
import type { JournalEvent } from '../src/formats/record/types.js'

const T0 = parseTime('2026-10-03T14:00:00.000000000Z')

/** One event of every kind, with each optional field both present and absent, and awkward values. */
function everyKind(): JournalEvent[] {
  return [
    { kind: 'connecting', replica: 'a', connection: 'a-1', time: T0 },
    { kind: 'open', replica: 'a', connection: 'a-1', time: T0 + 1n },
    { kind: 'subscribed', replica: 'a', connection: 'a-1', time: T0 + 2n, instruments: ['BTCUSDT', 'ETHUSDT', ''] },
    { kind: 'subscribed', replica: 'b', connection: 'b-1', time: T0 + 2n, instruments: [] },
    { kind: 'frame', replica: 'a', connection: 'a-1', receiveTime: T0 + 3n, payload: Buffer.from('{"e":"trade","p":"1.5"}'), binary: false, clockOffset: -1200n, clockErrorBound: 48000n },
    { kind: 'frame', replica: 'b', connection: 'b-1', receiveTime: T0 + 4n, payload: Buffer.from([0, 1, 0xf7, 0x4a, 0x52, 0x4e, 0xff, 0]), binary: true },
    { kind: 'frame', replica: 'a', connection: 'a-1', receiveTime: T0 + 5n, payload: new Uint8Array(0), binary: false, clockOffset: 0n, clockErrorBound: 0n },
    { kind: 'frame', replica: 'a', connection: 'connexion-é-😀', receiveTime: -(2n ** 63n), payload: Buffer.from('ünïcödé ✓'), binary: false, clockOffset: -(2n ** 63n), clockErrorBound: 2n ** 63n - 1n },
    { kind: 'closed', replica: 'a', connection: 'a-1', time: T0 + 6n, closeCode: 1001, reason: 'going away' },
    { kind: 'closed', replica: 'a', connection: 'a-1', time: T0 + 7n, closeCode: 0 },
    { kind: 'closed', replica: 'b', connection: 'b-1', time: T0 + 8n, reason: '' },
    { kind: 'closed', replica: 'b', connection: 'b-1', time: 2n ** 63n - 1n },
    { kind: 'error', replica: 'b', connection: 'b-1', time: T0 + 9n, message: 'read ECONNRESET\nsecond line' },
    { kind: 'sequence-break', replica: 'a', connection: 'a-2', time: T0 + 10n, instrument: 'BTCUSDT', afterId: '100', beforeId: '105' },
    { kind: 'checksum-mismatch', replica: 'b', connection: 'b-2', time: T0 + 11n, instrument: 'ETHUSDT', expected: '-123456789', computed: '987654321' },
    { kind: 'recorder-start', replica: 'a', time: T0 + 12n, heartbeatIntervalNs: 1_000_000_000n },
    { kind: 'recorder-start', replica: 'b', time: T0 + 12n, heartbeatIntervalNs: 1n, restated: true },
    { kind: 'heartbeat', replica: 'b', time: T0 + 13n },
    { kind: 'destination-unavailable', replica: 'a', time: T0 + 14n, from: T0 - 5n, to: T0 + 14n, lostEvents: 1234, message: 'ENOSPC: no space left on device' },
  ]
}

/** Events as plain comparable values (payloads as byte arrays, bigints as strings). */
function plain(events: JournalEvent[]): unknown[] {
  return events.map((e) => Object.fromEntries(Object.entries(e).map(([k, v]) =>
    [k, typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? { bytes: [...v] } : v])))
}

function journalBytes(events: JournalEvent[]): { bytes: Buffer; starts: number[]; ends: number[] } {
  const parts = [fileHeader()]
  const starts: number[] = []
  const ends: number[] = []
  let pos = FILE_HEADER_SIZE
  for (const e of events) {
    const r = encodeJournalRecord(e)
    starts.push(pos)
    pos += r.length
    ends.push(pos)
    parts.push(r)
  }
  return { bytes: Buffer.concat(parts), starts, ends }
}

const tmp = () => mkdtempSync(join(tmpdir(), 'journal-test-'))

/** Reads a file through the streaming reader with a given chunk size and gathers everything. */
async function readAll(path: string, chunkSize?: number): Promise<ScanOutput> {
  const out: ScanOutput = { events: [], offsets: [], problems: [] }
  for await (const b of readJournalFile(path, chunkSize ? { chunkSize } : {})) {
    out.events.push(...b.events)
    out.offsets.push(...b.offsets)
    out.problems.push(...b.problems)
  }
  return out
}

const strip = (ps: JournalProblem[]) => ps.map(({ kind, reason, offset, bytes }) => ({ kind, reason, offset, bytes }))

t.test('CRC-32C matches the check value and the RFC 3720 vectors, at every length and alignment', async (t) => {
  t.equal(crc32c(Buffer.from('123456789')), 0xe3069283)
  t.equal(crc32c(Buffer.alloc(32)), 0x8a9136aa)
  t.equal(crc32c(Buffer.alloc(32, 0xff)), 0x62a8ab43)
  t.equal(crc32c(Buffer.from(Array.from({ length: 32 }, (_, i) => i))), 0x46dd794e)
  t.equal(crc32c(Buffer.from(Array.from({ length: 32 }, (_, i) => 31 - i))), 0x113fdb5c)
  const bitwise = (b: Uint8Array) => {
    let c = ~0
    for (const x of b) { c ^= x; for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1 }
    return ~c >>> 0
  }
  const data = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 167 + 13) & 0xff))
  let ok = true
  for (let s = 0; s < 20; s++) for (let e = s; e <= 300; e += 7) if (crc32c(data, s, e) !== bitwise(data.subarray(s, e))) ok = false
  t.ok(ok, 'equals a bit-at-a-time CRC for every start 0..19 and many lengths')
  t.equal(crc32c(data, 100, 300, crc32c(data, 0, 100)), crc32c(data), 'continues across calls')
})

t.test('every event kind round-trips through a record', async (t) => {
  const events = everyKind()
  const { bytes, starts } = journalBytes(events)
  const out = decodeJournal(bytes)
  t.same(out.problems, [])
  t.same(plain(out.events), plain(events))
  t.same(out.offsets, starts)
  const frame = out.events[4]!
  t.ok(frame.kind === 'frame' && frame.payload.buffer === bytes.buffer, 'a payload is a view into the read buffer, not a copy')
  t.notOk('clockOffset' in out.events[5]!, 'absent clock fields stay absent')
  t.notOk('closeCode' in out.events[10]! || 'reason' in out.events[9]!, 'absent close code and reason stay absent')
})

t.test('the JSONL form round-trips every kind that has one', async (t) => {
  const events = everyKind().filter((_e, i) => i !== 7)
  for (const e of events) {
    const line = eventToJsonLine(e)
    t.equal(line.split('\n').length, 2, 'one line')
    t.same(plain([eventFromJson(JSON.parse(line))]), plain([e]), e.kind)
  }
  t.throws(() => eventToJson(everyKind()[7]!), JournalJsonError, 'an offset beyond ±(2^53 − 1) has no JSONL form')
  t.throws(() => eventToJson({ kind: 'frame', replica: 'a', connection: 'c', receiveTime: T0, payload: Buffer.from([0xff]), binary: false }), /not UTF-8/)
  const sorted = eventToJsonLine(everyKind()[4]!)
  t.equal(sorted, '{"clock_error_bound":48000,"clock_offset":-1200,"connection":"a-1","kind":"frame","payload":"{\\"e\\":\\"trade\\",\\"p\\":\\"1.5\\"}","payload_encoding":"text","receive_time":"2026-10-03T14:00:00.000000003Z","replica":"a"}\n')
})

function eventTime(e: JournalEvent): bigint {
  return e.kind === 'frame' ? e.receiveTime : e.time
}

t.test('eventFromJson names the bad field', async (t) => {
  const good = { kind: 'frame', replica: 'a', connection: 'c', receive_time: '2026-10-03T14:00:00.000000000Z', payload: 'x', payload_encoding: 'text' }
  const cases: [Record<string, unknown> | unknown, string][] = [
    [[1], '(line)'],
    [{ ...good, kind: undefined }, 'kind'],
    [{ ...good, kind: 'trade' }, 'kind'],
    [{ ...good, replica: 'c' }, 'replica'],
    [{ ...good, connection: 5 }, 'connection'],
    [{ ...good, receive_time: '2026-10-03T14:00:00Z' }, 'receive_time'],
    [{ ...good, receive_time: undefined }, 'receive_time'],
    [{ ...good, payload_encoding: 'hex' }, 'payload_encoding'],
    [{ ...good, payload_encoding: 'base64', payload: 'AB=' }, 'payload'],
    [{ ...good, payload_encoding: 'base64', payload: 'AB==' }, 'payload'],
    [{ ...good, clock_offset: 5 }, 'clock_error_bound'],
    [{ ...good, clock_error_bound: 5 }, 'clock_offset'],
    [{ ...good, clock_offset: 5, clock_error_bound: -1 }, 'clock_error_bound'],
    [{ ...good, clock_offset: 1.5, clock_error_bound: 2 }, 'clock_offset'],
    [{ ...good, clock_offset: '5', clock_error_bound: 2 }, 'clock_offset'],
    [{ ...good, time: '2026-10-03T14:00:00.000000000Z' }, 'time'],
    [{ kind: 'subscribed', replica: 'a', connection: 'c', time: '2026-10-03T14:00:00.000000000Z', instruments: ['x', 1] }, 'instruments[1]'],
    [{ kind: 'subscribed', replica: 'a', connection: 'c', time: '2026-10-03T14:00:00.000000000Z', instruments: 'x' }, 'instruments'],
    [{ kind: 'closed', replica: 'a', connection: 'c', time: '2026-10-03T14:00:00.000000000Z', close_code: 70000 }, 'close_code'],
    [{ kind: 'closed', replica: 'a', connection: 'c', time: '2026-10-03T14:00:00.000000000Z', reason: null }, 'reason'],
    [{ kind: 'error', replica: 'a', connection: 'c', time: '2026-10-03T14:00:00.000000000Z' }, 'message'],
    [{ kind: 'sequence-break', replica: 'a', connection: 'c', time: '2026-10-03T14:00:00.000000000Z', instrument: 'X', after_id: 1, before_id: '2' }, 'after_id'],
    [{ kind: 'checksum-mismatch', replica: 'a', connection: 'c', time: '2026-10-03T14:00:60.000000000Z', instrument: 'X', expected: '1', computed: '2' }, 'time'],
  ]
  for (const [obj, field] of cases) {
    try {
      eventFromJson(obj)
      t.fail(`accepted ${JSON.stringify(obj)}`)
    } catch (err) {
      t.ok(err instanceof JournalJsonError, 'a JournalJsonError')
      t.equal((err as JournalJsonError).field, field, `${JSON.stringify(obj)} -> ${field}: ${(err as Error).message}`)
    }
  }
})

t.test('encoding refuses what the format cannot hold', async (t) => {
  const f = { kind: 'frame', replica: 'a', connection: 'c', receiveTime: T0, payload: Buffer.from('x'), binary: false } as const
  t.throws(() => encodeJournalRecord({ ...f, replica: 'c' as 'a' }), { code: 'journal.bad-event', field: 'replica' })
  t.throws(() => encodeJournalRecord({ ...f, receiveTime: 2n ** 63n }), { code: 'journal.bad-event', field: 'receiveTime' })
  t.throws(() => encodeJournalRecord({ ...f, clockOffset: 1n }), { code: 'journal.bad-event', field: 'clockErrorBound' })
  t.throws(() => encodeJournalRecord({ ...f, clockErrorBound: 1n }), { code: 'journal.bad-event', field: 'clockOffset' })
  t.throws(() => encodeJournalRecord({ ...f, clockOffset: 1n, clockErrorBound: -1n }), { code: 'journal.bad-event', field: 'clockErrorBound' })
  t.throws(() => encodeJournalRecord({ ...f, connection: 'a\ud800' }), { code: 'journal.bad-event', field: 'connection' })
  t.throws(() => encodeJournalRecord({ ...f, payload: Buffer.alloc(MAX_PAYLOAD_SIZE + 1) }), { code: 'journal.bad-event', field: 'payload' })
  t.throws(() => encodeJournalRecord({ kind: 'closed', replica: 'a', connection: 'c', time: T0, closeCode: 65536 }), { code: 'journal.bad-event', field: 'closeCode' })
  t.throws(() => encodeJournalRecord({ kind: 'subscribed', replica: 'a', connection: 'c', time: T0, instruments: ['ok', 7 as unknown as string] }), { code: 'journal.bad-event', field: 'instruments[1]' })
  const big = encodeJournalRecord({ ...f, payload: Buffer.alloc(MAX_PAYLOAD_SIZE, 0x41) })
  t.ok(big.length - RECORD_HEADER_SIZE <= MAX_BODY_SIZE, 'the largest payload fits under the body cap')
  const back = decodeJournal(Buffer.concat([fileHeader(), big]))
  t.equal(back.events.length, 1)
})

t.test('a torn tail at every byte of the last record is torn, and every earlier record intact', async (t) => {
  const events = everyKind()
  const { bytes, starts } = journalBytes(events)
  const last = starts[starts.length - 1]!
  const intact = plain(events.slice(0, -1))
  let bad = 0
  for (let cut = last + 1; cut < bytes.length; cut++) {
    const out = decodeJournal(bytes.subarray(0, cut))
    const p = out.problems
    if (p.length !== 1 || p[0]!.kind !== 'torn' || p[0]!.offset !== last || p[0]!.bytes !== cut - last || p[0]!.reason !== 'partial-record') {
      bad++
      t.fail(`cut at ${cut}: ${JSON.stringify(p)}`)
    }
    if (JSON.stringify(plain(out.events)) !== JSON.stringify(intact)) { bad++; t.fail(`cut at ${cut}: events differ`) }
  }
  t.equal(bad, 0, `${bytes.length - last - 1} cut positions`)
  t.same(decodeJournal(bytes).problems, [], 'the whole file has no problem')
  t.same(strip(decodeJournal(bytes.subarray(0, 7)).problems), [{ kind: 'torn', reason: 'partial-file-header', offset: 0, bytes: 7 }])
  t.same(decodeJournal(Buffer.alloc(0)), { events: [], offsets: [], problems: [] }, 'an empty file is an empty journal')
})

t.test('a flipped bit in any record is corrupt for that record only, and the records after it are read', async (t) => {
  const events = everyKind()
  const { bytes, starts, ends } = journalBytes(events)
  const want = plain(events)
  let checked = 0
  let bad = 0
  for (let r = 0; r < events.length; r++) {
    const others = JSON.stringify([...want.slice(0, r), ...want.slice(r + 1)])
    for (let byte = starts[r]!; byte < ends[r]!; byte++) {
      for (let bit = 0; bit < 8; bit++) {
        const copy = Buffer.from(bytes)
        copy[byte]! ^= 1 << bit
        const out = decodeJournal(copy)
        checked++
        const p = out.problems
        const okProblem = p.length === 1 && p[0]!.kind === 'corrupt' && p[0]!.offset === starts[r] && p[0]!.bytes === ends[r]! - starts[r]!
        if (!okProblem || JSON.stringify(plain(out.events)) !== others) {
          bad++
          if (bad < 5) t.fail(`record ${r}, byte ${byte - starts[r]!}, bit ${bit}: ${JSON.stringify(p)}`)
        }
      }
    }
  }
  t.equal(bad, 0, `${checked} single-bit flips over ${events.length} records`)
  // The reasons: a header bit -> record-header (resynchronised), a body bit -> body-checksum.
  const copy = Buffer.from(bytes)
  copy[starts[3]! + 5]! ^= 1
  copy[starts[6]! + RECORD_HEADER_SIZE + 2]! ^= 0x80
  t.same(strip(decodeJournal(copy).problems), [
    { kind: 'corrupt', reason: 'record-header', offset: starts[3], bytes: ends[3]! - starts[3]! },
    { kind: 'corrupt', reason: 'body-checksum', offset: starts[6], bytes: ends[6]! - starts[6]! },
  ])
})

/** A record header with a valid header checksum stating `len`, as a writer bug or an attacker could make. */
function headerClaiming(len: number): Buffer {
  const h = Buffer.alloc(RECORD_HEADER_SIZE)
  SYNC_MARKER.copy(h, 0)
  h.writeUInt32LE(len, 4)
  h.writeUInt32LE(0, 8)
  h.writeUInt32LE(crc32c(h, 0, 12), 12)
  return h
}

t.test('a length field claiming 4 GiB is corrupt and is never allocated', async (t) => {
  const events = everyKind().slice(0, 4)
  const { bytes, starts } = journalBytes(events)
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const [name, len] of [['4 GiB - 1', 0xffffffff], ['16 MiB + 1', MAX_BODY_SIZE + 1], ['below the minimum', 3]] as const) {
    // Between records, with a valid header checksum: the length itself is refused.
    const spliced = Buffer.concat([bytes.subarray(0, starts[2]), headerClaiming(len), bytes.subarray(starts[2])])
    const out = decodeJournal(spliced)
    t.same(strip(out.problems), [{ kind: 'corrupt', reason: 'length', offset: starts[2], bytes: RECORD_HEADER_SIZE }], `${name}: corrupt, resynchronised`)
    t.same(plain(out.events), plain(events), `${name}: every real record read`)
    // At the end of the file: corrupt, not torn (it is not a record the file ends inside).
    const atEnd = decodeJournal(Buffer.concat([bytes, headerClaiming(len)]))
    t.same(strip(atEnd.problems), [{ kind: 'corrupt', reason: 'length', offset: bytes.length, bytes: RECORD_HEADER_SIZE }], `${name} at the end: corrupt`)
  }
  // A flipped length bit (header checksum fails), read from a file with 1 KiB reads: no 4 GiB buffer.
  const flipped = Buffer.from(bytes)
  flipped.writeUInt32LE(0xffffffff, starts[1]! + 4)
  const path = join(dir, 'flipped.journal')
  writeFileSync(path, flipped)
  const before = process.memoryUsage().arrayBuffers
  const out = await readAll(path, 1024)
  t.ok(process.memoryUsage().arrayBuffers - before < 64 * 2 ** 20, 'memory stays small')
  t.same(strip(out.problems), [{ kind: 'corrupt', reason: 'record-header', offset: starts[1], bytes: starts[2]! - starts[1]! }])
  t.equal(out.events.length, events.length - 1)
})

t.test('resynchronisation: garbage between records, zero-filled tails, damaged file headers', async (t) => {
  const events = everyKind()
  const { bytes, starts } = journalBytes(events)
  const garbage = Buffer.from('garbage \xf7JR no record here', 'latin1')
  const spliced = Buffer.concat([bytes.subarray(0, starts[5]), garbage, bytes.subarray(starts[5])])
  let out = decodeJournal(spliced)
  t.same(strip(out.problems), [{ kind: 'corrupt', reason: 'record-header', offset: starts[5], bytes: garbage.length }])
  t.same(plain(out.events), plain(events))
  t.same(out.offsets.slice(5), starts.slice(5).map((s) => s + garbage.length), 'offsets after the gap are file offsets')

  out = decodeJournal(Buffer.concat([bytes, Buffer.alloc(4096)]))
  t.same(strip(out.problems), [{ kind: 'torn', reason: 'zero-fill', offset: bytes.length, bytes: 4096 }], 'a zero-filled tail is torn')
  out = decodeJournal(Buffer.concat([bytes, Buffer.alloc(10)]))
  t.same(strip(out.problems), [{ kind: 'torn', reason: 'zero-fill', offset: bytes.length, bytes: 10 }], 'a short zero-filled tail is torn')
  // Bytes past the end the reader is given are never looked at (read buffers hold stale bytes there).
  const stale = Buffer.concat([bytes, Buffer.alloc(300), Buffer.from('stale'), encodeJournalRecord(events[0]!), encodeJournalRecord(events[1]!)])
  const scanner = new JournalScanner()
  t.equal(scanner.feed(stale, 0, bytes.length + 300, 0, true), bytes.length + 300)
  t.same(strip(scanner.out.problems), [{ kind: 'torn', reason: 'zero-fill', offset: bytes.length, bytes: 300 }], 'a marker past the end is not seen')
  t.equal(scanner.out.events.length, events.length)
  out = decodeJournal(new Uint8Array(Buffer.concat([bytes.subarray(0, starts[2]), Buffer.from('junk'), bytes.subarray(starts[2])])))
  t.same(strip(out.problems), [{ kind: 'corrupt', reason: 'record-header', offset: starts[2], bytes: 4 }], 'a plain Uint8Array resynchronises too')
  out = decodeJournal(Buffer.concat([bytes, Buffer.alloc(100), Buffer.from('x')]))
  t.same(strip(out.problems), [{ kind: 'corrupt', reason: 'record-header', offset: bytes.length, bytes: 101 }], 'zeros then data is corrupt')

  const header = Buffer.from(bytes)
  header[9]! ^= 4 // the version field: the header checksum fails
  out = decodeJournal(header)
  t.same(strip(out.problems), [{ kind: 'corrupt', reason: 'file-header', offset: 0, bytes: FILE_HEADER_SIZE }])
  t.equal(out.events.length, events.length, 'records after a damaged file header are read')
  const magic = Buffer.from(bytes)
  magic[1]! ^= 1
  t.equal(decodeJournal(magic).events.length, events.length, 'a damaged magic followed by records is corruption, not a foreign file')

  t.throws(() => decodeJournal(Buffer.from('{"not":"a journal"}\n'.repeat(4))), { code: 'journal.not-a-journal' })
  t.throws(() => decodeJournal(Buffer.from('{"no')), { code: 'journal.not-a-journal' })
  const later = fileHeader()
  later.writeUInt16LE(3, 8)
  later.writeUInt32LE(crc32c(later, 0, 12), 12)
  t.throws(() => decodeJournal(later), { code: 'journal.unsupported-version' }, 'a later version is refused')
  const v1 = fileHeader()
  v1.writeUInt16LE(1, 8)
  v1.writeUInt32LE(crc32c(v1, 0, 12), 12)
  t.same(decodeJournal(Buffer.concat([v1, bytes.subarray(FILE_HEADER_SIZE)])).events.length, events.length, 'a version-1 file reads (its records are version-2 records)')
})

t.test('the streaming reader gives the same result at any read size', async (t) => {
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const events = [...everyKind(), ...everyKind()]
  const { bytes, starts } = journalBytes(events)
  // A file with a corrupt stretch, a bad body and a torn tail.
  const body = Buffer.from(bytes)
  body[starts[20]! + RECORD_HEADER_SIZE + 1]! ^= 2
  const file = Buffer.concat([body.subarray(0, starts[7]), Buffer.from('junkjunkjunk'), body.subarray(starts[7], body.length - 5)])
  const path = join(dir, 'x.journal')
  writeFileSync(path, file)
  const whole = decodeJournal(file, path)
  t.equal(whole.problems.length, 3)
  for (const size of [1, 2, 3, 5, 16, 17, 31, 64, 100, 1000, 1 << 20]) {
    const out = await readAll(path, size)
    t.same(plain(out.events), plain(whole.events), `read size ${size}: events`)
    t.same(out.offsets, whole.offsets, `read size ${size}: offsets`)
    t.same(out.problems, whole.problems, `read size ${size}: problems`)
  }
  const scan = await scanJournalFile(path)
  t.same(scan.problems.map((p) => p.reason), ['record-header', 'body-checksum', 'partial-record'])
  t.equal(scan.size, file.length)
})

t.test('a file writer appends, and reopening a torn tail truncates it and appends cleanly', async (t) => {
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'replica=a', '2026-10-03T14.journal')
  const events = everyKind()
  const w = await JournalFileWriter.open(path, { fsync: 'record' })
  t.ok(w.report.created)
  await Promise.all(events.slice(0, 10).map((e) => w.append(e)))
  await w.close()
  const size = statSync(path).size
  const lastStart = size - encodeJournalRecord(events[9]!).length

  for (const cut of [lastStart + 1, lastStart + RECORD_HEADER_SIZE, size - 1]) {
    const copy = join(dir, `cut-${cut}.journal`)
    writeFileSync(copy, readFileSync(path).subarray(0, cut))
    const w2 = await JournalFileWriter.open(copy, { fsync: 'interval', fsyncIntervalMs: 5, now: () => T0 })
    t.equal(w2.report.truncatedBytes, cut - lastStart, `cut at ${cut}: the torn tail is truncated`)
    t.same(strip(w2.report.problems), [{ kind: 'torn', reason: 'partial-record', offset: lastStart, bytes: cut - lastStart }])
    for (const e of events.slice(9)) await w2.append(e)
    await w2.close()
    const out = decodeJournal(readFileSync(copy))
    t.same(plain(out.events), plain([...events.slice(0, 9), ...events.slice(9)]), 'every intact and every new record reads back')
    t.same(strip(out.problems), [{ kind: 'torn', reason: 'truncated-on-reopen', offset: lastStart, bytes: cut - lastStart }], 'the marker keeps the loss visible')
    // Reopening again finds nothing to truncate and adds no marker.
    const w3 = await JournalFileWriter.open(copy)
    t.equal(w3.report.truncatedBytes, 0)
    await w3.append(events[0]!)
    await w3.close()
    t.equal(decodeJournal(readFileSync(copy)).problems.length, 1)
  }

  // A zero-filled tail and a partial file header are torn too.
  const zeros = join(dir, 'zeros.journal')
  writeFileSync(zeros, Buffer.concat([readFileSync(path), Buffer.alloc(300)]))
  const wz = await JournalFileWriter.open(zeros)
  t.equal(wz.report.truncatedBytes, 300)
  await wz.append(events[0]!)
  await wz.close()
  t.equal(decodeJournal(readFileSync(zeros)).events.length, 11)
  const partial = join(dir, 'partial.journal')
  writeFileSync(partial, fileHeader().subarray(0, 5))
  const wp = await JournalFileWriter.open(partial)
  await wp.append(events[0]!)
  await wp.close()
  const pout = decodeJournal(readFileSync(partial))
  t.same(plain(pout.events), plain([events[0]!]))
  t.same(strip(pout.problems), [{ kind: 'torn', reason: 'truncated-on-reopen', offset: 0, bytes: 5 }])
  const empty = join(dir, 'empty.journal')
  writeFileSync(empty, '')
  const we = await JournalFileWriter.open(empty)
  await we.append(events[0]!)
  await we.close()
  t.same(decodeJournal(readFileSync(empty)).problems, [], 'an empty file gets its header')

  // A corrupt record in the middle is left in place; the file is appended to after it.
  const mid = join(dir, 'mid.journal')
  const midBytes = readFileSync(path)
  midBytes[FILE_HEADER_SIZE + 20]! ^= 1
  writeFileSync(mid, midBytes)
  const wm = await JournalFileWriter.open(mid)
  t.equal(wm.report.truncatedBytes, 0)
  t.equal(wm.report.problems.length, 1)
  await wm.append(events[0]!)
  await wm.close()
  t.equal(decodeJournal(readFileSync(mid)).events.length, 10)

  writeFileSync(join(dir, 'foreign.journal'), 'hello, this is not a journal at all')
  await t.rejects(JournalFileWriter.open(join(dir, 'foreign.journal')), { code: 'journal.not-a-journal' })
  t.equal(readFileSync(join(dir, 'foreign.journal'), 'utf8'), 'hello, this is not a journal at all', 'a foreign file is left alone')
  const closed = await JournalFileWriter.open(join(dir, 'closed.journal'))
  await closed.close()
  await t.rejects(closed.append(events[0]!), { code: 'journal.closed' })
})

t.test('the writer keeps append order under concurrent appends, with every fsync policy', async (t) => {
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const fsync of ['record', 'interval', 'none'] as const) {
    const path = join(dir, `${fsync}.journal`)
    const w = await JournalFileWriter.open(path, { fsync, fsyncIntervalMs: 2 })
    const events: JournalEvent[] = Array.from({ length: 500 }, (_, i) => ({ kind: 'frame', replica: 'a', connection: 'c', receiveTime: T0 + BigInt(i), payload: Buffer.from(`frame ${i}`), binary: false }))
    await Promise.all(events.map((e) => w.append(e)))
    await w.flush()
    t.equal(w.bytesWritten, statSync(path).size)
    await w.close()
    t.same(plain(decodeJournal(readFileSync(path)).events), plain(events), `${fsync}: in order`)
  }
})

t.test('the directory writer: one file per replica per UTC hour; the range reader merges by event time', async (t) => {
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const H = 3_600_000_000_000n
  const frame = (replica: 'a' | 'b', at: bigint, i: number): JournalEvent => ({ kind: 'frame', replica, connection: `${replica}-1`, receiveTime: at, payload: Buffer.from(`f${i}`), binary: false })
  const events: JournalEvent[] = []
  for (let i = 0; i < 400; i++) {
    const at = T0 - 2_000_000_000n + BigInt(i) * 17_000_000n + (i % 3 === 0 ? H - 3_000_000_000n : 0n)
    events.push(frame(i % 2 ? 'b' : 'a', at, i))
  }
  events.sort((x, y) => (eventTime(x) < eventTime(y) ? -1 : eventTime(x) > eventTime(y) ? 1 : 0))
  const w = new JournalWriter(dir, { fsync: 'none', maxOpenFiles: 1 })
  for (const e of events) await w.append(e)
  await w.close()
  t.same(readdirSync(join(dir, 'replica=a')).sort(), ['2026-10-03T13.journal', '2026-10-03T14.journal', '2026-10-03T15.journal'])
  t.same(readdirSync(join(dir, 'replica=b')).sort(), ['2026-10-03T13.journal', '2026-10-03T14.journal', '2026-10-03T15.journal'])
  t.equal(journalFilePath(dir, 'b', T0 + H - 1n), join(dir, 'replica=b', '2026-10-03T14.journal'))
  t.equal(hourName(-1n), '1969-12-31T23')
  t.equal(hourStart(-1n), -H)

  const collect = async (opts: Parameters<typeof readJournalRange>[1]) => {
    const got: JournalEvent[] = []
    const problems: JournalProblem[] = []
    for await (const b of readJournalRange(dir, opts)) {
      t.ok(b instanceof JournalBatch)
      got.push(...b.events)
      problems.push(...b.problems)
    }
    return { got, problems }
  }
  const all = await collect({ batchSize: 7 })
  t.same(plain(all.got), plain(events), 'merged: every event, in event-time order')
  const hour = await collect({ start: T0, end: T0 + H })
  t.same(plain(hour.got), plain(events.filter((e) => eventTime(e) >= T0 && eventTime(e) < T0 + H)), 'a range')
  const onlyB = await collect({ replicas: ['b'], start: T0 - 5_000_000_000n, end: T0 + H + 5_000_000_000n })
  t.same(plain(onlyB.got), plain(events.filter((e) => e.replica === 'b' && eventTime(e) >= T0 - 5_000_000_000n && eventTime(e) < T0 + H + 5_000_000_000n)), 'one replica, an hour and 5 s either side')
  const unmerged = await collect({ merge: false })
  t.same(plain(unmerged.got), plain([...events.filter((e) => e.replica === 'a'), ...events.filter((e) => e.replica === 'b')]), 'unmerged: a, then b')

  // Problems in a file come with the batches.
  const f = journalFilePath(dir, 'a', T0)
  appendFileSync(f, Buffer.from([0xf7, 0x4a, 0x52]))
  truncateSync(journalFilePath(dir, 'b', T0), statSync(journalFilePath(dir, 'b', T0)).size - 3)
  const damaged = await collect({ start: T0, end: T0 + H })
  t.same(damaged.problems.map((p) => [p.kind, p.file]), [['torn', f], ['torn', journalFilePath(dir, 'b', T0)]])
  t.same((await collect({ start: T0 + 10n * H })).got, [], 'an empty range')
  t.same((await collect({ replicas: ['a'], start: T0 + H + H })).got, [], 'past the last hour')
  t.same([...await (async () => { const r: unknown[] = []; for await (const b of readJournalRange(join(dir, 'missing'))) r.push(b); return r })()], [], 'a missing directory is empty')
})

t.test('neighbouring hour files are read only near the range: a seek into the earlier, an early stop in the later', async (t) => {
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const H = 3_600_000_000_000n
  const payload = Buffer.alloc(200, 0x61)
  const events: JournalEvent[] = []
  // Hour 13 and hour 15 densely (one frame every 100 ms), hour 14 sparsely; replica a's clock steps back 20 s once.
  for (let i = 0; i < 3 * 36_000; i += i < 36_000 || i >= 72_000 ? 1 : 600) {
    let at = T0 - H + BigInt(i) * 100_000_000n
    if (i >= 35_800 && i < 35_900) at -= 20_000_000_000n
    events.push({ kind: 'frame', replica: 'a', connection: 'a-1', receiveTime: at, payload, binary: false })
  }
  // Written directly (the writer's per-record promises are slow under tap's async hooks).
  for (const hour of [T0 - H, T0, T0 + H]) {
    const path = journalFilePath(dir, 'a', hour)
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, Buffer.concat([fileHeader(), ...events.filter((e) => hourStart(eventTime(e)) === hour).map(encodeJournalRecord)]))
  }
  const size13 = statSync(journalFilePath(dir, 'a', T0 - H)).size
  const size15 = statSync(journalFilePath(dir, 'a', T0 + H)).size
  const start = T0 - 5_000_000_000n
  const end = T0 + H + 5_000_000_000n
  let bytes = 0
  const got: JournalEvent[] = []
  for await (const b of readJournalRange(dir, { start, end })) { bytes += b.bytes; got.push(...b.events) }
  t.same(plain(got), plain(events.filter((e) => eventTime(e) >= start && eventTime(e) < end)), 'exactly the events in the range, the stepped-back ones included')
  t.ok(bytes < (size13 + size15) / 6, `read ${bytes} bytes, of ${size13 + size15} in hours 13 and 15 (reads are 1 MiB)`)

  const at = await seekJournalTime(journalFilePath(dir, 'a', T0 - H), T0 - 70_000_000_000n)
  t.ok(at > FILE_HEADER_SIZE && at < size13, `seek to ${at}`)
  const from: JournalEvent[] = []
  for await (const b of readJournalFile(journalFilePath(dir, 'a', T0 - H), { startOffset: at })) {
    t.same(b.problems, [], 'no problem for the bytes skipped by the seek')
    from.push(...b.events)
  }
  t.ok(eventTime(from[0]!) < T0 - 70_000_000_000n, 'reading starts before the time sought')
  const file13 = events.filter((e) => eventTime(e) < T0)
  t.ok(from.length < file13.length / 10, `${from.length} of the file's ${file13.length} events read`)
  t.same(plain(from), plain(file13.slice(file13.length - from.length)), 'a suffix of the file, to its end')
  t.equal(await seekJournalTime(journalFilePath(dir, 'a', T0 - H), T0 - 2n * H), FILE_HEADER_SIZE, 'a time before the file: from the start')
})

t.test('reading 2M frame records of 250-byte payloads (JOURNAL_BENCH=1)', { skip: process.env.JOURNAL_BENCH ? false : 'set JOURNAL_BENCH=1' }, async (t) => {
  const dir = tmp()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'bench.journal')
  const N = 2_000_000
  const parts: Buffer[] = [fileHeader()]
  const chunks: Buffer[] = []
  let size = 0
  for (let i = 0; i < N; i++) {
    const text = `{"e":"trade","E":${1790949600000 + (i >> 10)},"s":"BTCUSDT","t":${4_000_000_000 + i},"p":"65${i % 1000}.${i % 97}","q":"0.${i % 10007}","T":${1790949600000 + (i >> 10)},"m":${i % 2 === 0}}`
    const rec = encodeJournalRecord({ kind: 'frame', replica: 'a', connection: 'a-0001', receiveTime: T0 + BigInt(i) * 1_800_000n, payload: Buffer.from(text.padEnd(250, ' ')), binary: false, clockOffset: -1200n, clockErrorBound: 48000n })
    parts.push(rec)
    size += rec.length
    if (parts.length >= 8192) { chunks.push(Buffer.concat(parts)); parts.length = 0 }
  }
  chunks.push(Buffer.concat(parts))
  writeFileSync(path, Buffer.concat(chunks))
  chunks.length = 0
  const bytes = statSync(path).size
  const results: string[] = []
  for (let rep = 0; rep < 3; rep++) {
    const cpu = process.cpuUsage()
    const started = performance.now()
    let n = 0
    let payloadBytes = 0
    for await (const b of readJournalFile(path)) {
      n += b.events.length
      for (const e of b.events) if (e.kind === 'frame') payloadBytes += e.payload.length
    }
    const wall = (performance.now() - started) / 1000
    const used = process.cpuUsage(cpu)
    const cpuS = (used.user + used.system) / 1e6
    t.equal(n, N)
    t.equal(payloadBytes, N * 250)
    results.push(`read+decode ${N} records (${(bytes / 1e6).toFixed(0)} MB): ${wall.toFixed(2)} s wall, ${cpuS.toFixed(2)} s CPU; ${(N / wall / 1e6).toFixed(2)} M records/s, ${(bytes / wall / 1e6).toFixed(0)} MB/s`)
  }
  t.comment(results.join('\n'))
  console.log(results.join('\n'))
  t.ok(size > 0)
})

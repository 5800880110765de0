import type { MergedFrame, Receipt } from './merge.js'
import { formatTime } from './time.js'

const utf8 = new TextDecoder('utf-8', { fatal: true })

const NS_PER_SEC = 1_000_000_000n
const INT64_MAX = (1n << 63n) - 1n
let cachedSec = -1n
let cachedPrefix = ''

/**
 * {@link formatTime}, with the text up to the second kept from the previous call: an hour's lines state
 * times a few milliseconds apart, so nearly every call only writes the nine fraction digits.
 */
function formatTimeCached(ns: bigint): string {
  if (ns < 0n || ns > INT64_MAX) return formatTime(ns)
  const sec = ns / NS_PER_SEC
  if (sec !== cachedSec) {
    cachedPrefix = formatTime(sec * NS_PER_SEC).slice(0, 20) // YYYY-MM-DDTHH:MM:SS.
    cachedSec = sec
  }
  const nsec = String(ns - sec * NS_PER_SEC)
  return cachedPrefix + (nsec.length === 9 ? nsec : '000000000'.slice(nsec.length) + nsec) + 'Z'
}

/**
 * The payload as the raw file holds it: a text frame verbatim, a binary frame as base64. A text frame whose
 * bytes are not UTF-8 cannot come from a conforming WebSocket peer; should a journal hold one, it is kept
 * as base64 so that no byte is lost.
 */
export function payloadField(frame: MergedFrame): { payload: string; encoding: 'text' | 'base64' } {
  if (!frame.binary) {
    try {
      return { payload: utf8.decode(frame.payload), encoding: 'text' }
    } catch { /* falls through to base64 */ }
  }
  return { payload: Buffer.from(frame.payload.buffer, frame.payload.byteOffset, frame.payload.byteLength).toString('base64'), encoding: 'base64' }
}

/**
 * One raw-file line (without its newline): the RFC 8785 canonical envelope of a frame. Written by hand in
 * the canonical key order because it runs for every frame of an hour; JSON.stringify of a string is
 * exactly RFC 8785's string form for well-formed text, and every number is an integer. The tests check
 * every line against the byte-level canonical checker and the canonicalize package.
 */
export function envelopeLine(frame: MergedFrame, exchangeTime: bigint | null): string {
  const { payload, encoding } = payloadField(frame)
  let line = '{'
  if (exchangeTime !== null) line += `"exchange_time":"${formatTimeCached(exchangeTime)}",`
  line += `"payload":${JSON.stringify(payload)},"payload_encoding":"${encoding}","receipts":[`
  frame.receipts.forEach((r, i) => {
    if (i > 0) line += ','
    line += '{'
    if (r.clockErrorBound !== undefined) line += `"clock_error_bound":${r.clockErrorBound},"clock_offset":${r.clockOffset},`
    line += `"connection":${JSON.stringify(r.connection)},"receive_time":"${formatTimeCached(r.receiveTime)}","replica":"${r.replica}"}`
  })
  return line + ']}'
}

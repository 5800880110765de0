import { z } from 'zod'
import { definePipeline } from '../src/core/pipeline.js'
import { journalRangeFor, parseHourName } from '../src/formats/record/journal/journal.js'
import { PAIRING_WINDOW_NS } from '../src/formats/record/merge.js'
import { formatTime } from '../src/formats/record/time.js'
import { CHANNELS } from '../src/formats/record/types.js'

export const hourOption = z.string().refine((s) => parseHourName(s) !== null, 'must be a UTC hour like 2026-10-03T14')

/**
 * Seals one hour, a stage a step: journal-read (the hour and its pairing window) -> pair-replicas (final
 * frames in frame-time order, and the hour's facts) -> write-hour-files (raw file and tables, in a
 * temporary folder) -> hour-manifest (the manifest drawn up) -> chain-link (to the hour before) -> sign (a
 * key file, or --signer-cmd) -> seal-commit (land the hour; the day after hour 23).
 */
export const sealHourPipeline = definePipeline({
  name: 'seal-hour',
  summary: 'Seal one UTC hour of a venue channel from the journal: raw.jsonl.zst, tables, signed manifest (and the day after hour 23)',
  options: z.object({
    venue: z.string().min(1).describe('venue adapter, e.g. binance'),
    channel: z.enum(CHANNELS as [string, ...string[]]).describe('trades, book, funding or liquidations'),
    hour: hourOption.describe('the UTC hour to seal, e.g. 2026-10-03T14'),
    journal: z.array(z.string().min(1)).min(1).describe('the journal directory (replica=a/, replica=b/); once per replica when each replica\'s host keeps its own (docs/recorder.md)'),
    out: z.string().min(1).describe('the root the sealed hours go under: a folder, or s3://BUCKET/PREFIX (object storage; the layout is the same, byte for byte)'),
    key: z.string().min(1).optional().describe('the private signing key (JWK file from pipe key new); or --signer-cmd with --kid'),
    signerCmd: z.string().min(1).optional().describe('sign through this command instead (run by /bin/sh): it signs the bytes it reads on stdin, or in the file $PIPE_SIGN_INPUT names, and prints the raw Ed25519 signature, as `openssl pkeyutl -sign -rawin -inkey KEY.pem -in "$PIPE_SIGN_INPUT"` does, so the key can stay in a hardware token or a KMS'),
    kid: z.string().min(1).optional().describe('with --signer-cmd: the kid of its key in the key set'),
    keys: z.string().min(1).optional().describe('the public key set (jwks.json) that publishes the key, whose validity must cover the hour; default: jwks.json beside the key'),
    recorderStopped: z.boolean().default(false).describe('the recorder is gone for good: seal the hour although the journal holds nothing after it (else such an hour waits, as a running recorder may still add to it)'),
    recorder: z.string().regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, dot, dash, underscore').default('recorder').describe('recorder id in the layout'),
  }),
  example: { venue: 'binance', channel: 'trades', hour: '2026-10-03T14', journal: ['journal/'], out: 'root/', key: 'keys/signing-key.jwk' },
  stages(o) {
    const { start, end } = journalRangeFor(parseHourName(o.hour)!, PAIRING_WINDOW_NS)
    const journal = o.journal.length === 1 ? o.journal[0]! : o.journal
    const hour = { venue: o.venue, channel: o.channel, hour: o.hour }
    const signer = { ...(o.key ? { key: o.key } : {}), ...(o.signerCmd ? { signerCmd: o.signerCmd } : {}), ...(o.kid ? { kid: o.kid } : {}), ...(o.keys ? { keys: o.keys } : {}) }
    return [
      { stage: 'journal-read', options: { dir: journal, start: formatTime(start), end: formatTime(end) } },
      { stage: 'pair-replicas', options: { ...hour, journal, recorderStopped: o.recorderStopped } },
      { stage: 'write-hour-files', options: { ...hour, out: o.out, recorder: o.recorder } },
      { stage: 'hour-manifest', options: { ...hour, ...signer } },
      { stage: 'chain-link', options: { field: 'previous_manifest_blake3', algorithm: 'blake3' } },
      { stage: 'sign', options: signer },
      { stage: 'seal-commit' },
    ]
  },
})

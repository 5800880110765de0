import { z } from 'zod'
import { UsageError } from '../src/core/errors.js'
import { definePipeline } from '../src/core/pipeline.js'
import type { StageUse } from '../src/core/stage.js'
import { NOT_ZSTD_RAW_FILE } from '../src/formats/record/manifest.js'
import { httpUrl } from '../src/sources/objects.js'

/**
 * Checks one raw.jsonl.zst on its own: checks 3 and 7 of the record format, as far as the raw file alone
 * can show them (the manifest's checks need `pipe run verify`).
 */
export const verifyRaw = definePipeline({
  name: 'verify-raw',
  summary: 'Check a raw.jsonl.zst (or its zstd -dc output) from stdin, --file or --url: canonical envelopes, receipts, clocks, frame order',
  options: z.object({
    file: z.string().min(1).optional().describe('read this file instead of stdin (a regular file: pipe streams in through stdin); a name ending .zst is the stored raw file, which must be zstd'),
    url: httpUrl.optional().describe('fetch the raw file over http(s) instead (resumed with Range, retried), checked by --sha256 before a line is read'),
    sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 digest: 64 lowercase hex digits').optional().describe('with --url: the SHA-256 the fetched bytes must have'),
    maxBytes: z.number().int().positive().optional().describe('read at most this many bytes of input; more is an error (input.too-large); default unlimited (with --url: 64 GiB)'),
    hour: z.string().optional().describe('the UTC hour the file seals, e.g. 2026-10-03T14: frame times must lie in it'),
    rows: z.number().int().min(0).optional().describe('the line count the manifest lists'),
    blake3: z.string().regex(/^[0-9a-f]{64}$/, 'must be a BLAKE3 digest: 64 lowercase hex digits').optional().describe('BLAKE3 of the compressed file as stored (needs compressed input)'),
    strict: z.boolean().default(false).describe('also report fields the spec does not define'),
    maxLineBytes: z.number().int().positive().optional().describe('longest line accepted (default 8 MiB)'),
    maxRatio: z.number().positive().optional().describe('largest decompression ratio accepted (default 1000)'),
  }),
  // pipe describe shows the stages --url makes; without it, the first three are one: file or stdin.
  example: { url: 'https://example.org/raw.jsonl.zst', sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
  stages(o) {
    if (o.url && o.file) throw new UsageError('usage.bad-option', 'read from --url or --file, not both', { location: { field: '--url' } })
    if (o.url && !o.sha256) throw new UsageError('usage.missing-option', '--url needs --sha256: a fetched file is checked before a line of it is read', { location: { field: '--sha256' } })
    const limit = o.maxBytes !== undefined ? { maxBytes: o.maxBytes } : {}
    const stages: StageUse[] = o.url
      ? [
          { stage: 'objects', options: { objects: [{ url: o.url, hash: `sha256:${o.sha256}` }] } },
          { stage: 'fetch-object', options: { maxBytes: o.maxBytes ?? 64 * 2 ** 30 } },
          { stage: 'read-files' },
        ]
      : [o.file ? { stage: 'file', options: { path: o.file, ...limit } } : { stage: 'stdin', options: limit }]
    if (o.blake3 !== undefined) stages.push({ stage: 'hash-check', options: { algorithm: 'blake3', expected: o.blake3, code: 'raw.blake3-mismatch' } })
    stages.push(
      {
        stage: 'zstd-decode',
        options: { recycle: true, requireCompressed: o.blake3 !== undefined, ...(o.maxRatio ? { maxRatio: o.maxRatio } : {}), ...((o.file ?? o.url)?.endsWith('.zst') ? { notZstd: NOT_ZSTD_RAW_FILE } : {}) },
      },
      { stage: 'split-lines', options: o.maxLineBytes ? { maxLineBytes: o.maxLineBytes } : {} },
      { stage: 'parse-envelopes', options: { strict: o.strict } },
      { stage: 'frame-order', options: o.hour ? { hour: o.hour } : {} },
      { stage: 'report', options: { field: 'lines', ...(o.rows !== undefined ? { rows: o.rows } : {}) } },
    )
    return stages
  },
})

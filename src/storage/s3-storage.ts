import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { Readable } from 'node:stream'
import type { S3Client as S3ClientType } from '@aws-sdk/client-s3'
import { PipeError, UsageError } from '../core/errors.js'
import { objectChanged, objectDiffers, tooLarge, type ObjectHead, type PutBody, type Storage } from './storage.js'

// The SDK is pinned (docs/object-storage.md); its notice that later releases will want Node 22 says nothing
// to a user of this one, and would be printed on every command that touches a bucket.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'
const sdk = await import('@aws-sdk/client-s3')

/** Tries of a create-only put that fails in transit before the failure is the user's. */
const PUT_ATTEMPTS = 4

const QUIET = { trace() {}, debug() {}, info() {}, warn() {}, error() {} }

/** The largest single PutObject S3 takes; a larger body goes up in parts. */
export const SINGLE_PUT_MAX = 5 * 2 ** 30

export interface S3StorageOptions {
  /** Bodies larger than this go up as a multipart upload (lib-storage). Default {@link SINGLE_PUT_MAX}. */
  multipartAbove?: number
  /** The part size of a multipart upload. Default 64 MiB. */
  partSize?: number
  /** Keys a listing page asks for (S3's own limit is 1,000). */
  pageSize?: number
}

interface SdkError {
  name?: string
  message?: string
  $metadata?: { httpStatusCode?: number }
}

const statusOf = (err: unknown) => (err as SdkError).$metadata?.httpStatusCode
const unquote = (etag: string | undefined) => (etag ?? '').replace(/^"|"$/g, '')

/**
 * A bucket (and a prefix in it) of S3-compatible object storage, on the official AWS SDK: credentials,
 * region and endpoint as the SDK finds them (environment, shared config and profiles, AWS_ENDPOINT_URL_S3);
 * path-style addressing whenever the endpoint is not AWS's own. Create-only puts carry `If-None-Match: *`
 * and a Content-MD5, so a server checks the bytes it stores; a put that loses to an existing object reads
 * that object back and is success only when its bytes are these.
 */
export class S3Storage implements Storage {
  readonly remote = true
  private readonly multipartAbove: number
  private readonly partSize: number
  private readonly pageSize: number

  private constructor(
    readonly location: string,
    private readonly client: S3ClientType,
    private readonly bucket: string,
    private readonly prefix: string,
    o: S3StorageOptions,
  ) {
    this.multipartAbove = o.multipartAbove ?? SINGLE_PUT_MAX
    this.partSize = o.partSize ?? 64 * 2 ** 20
    this.pageSize = o.pageSize ?? 1000
  }

  static async open(location: string, o: S3StorageOptions = {}): Promise<S3Storage> {
    const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/i.exec(location)
    if (!m) throw new UsageError('usage.bad-url', 'not an s3://BUCKET[/PREFIX] URL with a valid bucket name', { location: { file: location } })
    const prefix = (m[2] ?? '').replace(/\/+$/, '')
    if (prefix.split('/').some((p) => p === '.' || p === '..') || prefix.includes('//')) {
      throw new UsageError('usage.bad-url', 'the prefix has an empty, . or .. part', { location: { file: location } })
    }
    const endpoint = process.env.AWS_ENDPOINT_URL_S3 ?? process.env.AWS_ENDPOINT_URL
    const client = new sdk.S3Client({
      ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
      region: process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
      // Servers other than AWS (Ceph among them) refuse or ignore the newer flexible checksums: the bytes
      // are checked by Content-MD5, which every S3 server honours, on each put.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // Without a logger of its own the SDK writes to the console (a put of a streamed body that fails says
      // so there), past the one-line errors this class gives.
      logger: QUIET,
    })
    return new S3Storage(location.replace(/\/+$/, ''), client, m[1]!, prefix, o)
  }

  /** The same bucket and prefix with other upload settings (the tests' small multipart threshold). */
  withOptions(o: S3StorageOptions): S3Storage {
    return new S3Storage(this.location, this.client, this.bucket, this.prefix, { multipartAbove: this.multipartAbove, partSize: this.partSize, pageSize: this.pageSize, ...o })
  }

  private full(key: string): string {
    return this.prefix === '' ? key : key === '' ? this.prefix : `${this.prefix}/${key}`
  }

  where(key: string): string {
    return key === '' ? this.location : `${this.location}/${key}`
  }

  /** A failed request as a one-line error naming the object; an unreachable or refusing server is the environment's (exit 2). */
  private failure(what: string, key: string, err: unknown): PipeError {
    if (err instanceof PipeError) return err
    const e = err as SdkError
    const status = statusOf(err)
    const detail = `${what} failed: ${e.name ?? 'Error'}${status ? ` (HTTP ${status})` : ''}${e.message && e.message !== e.name && e.message !== 'UnknownError' ? `: ${e.message}` : ''}`
    const code = e.name === 'NoSuchBucket' ? 'storage.no-bucket' : status === 403 ? 'storage.denied' : 'storage.unavailable'
    return new UsageError(code, detail, { location: { file: this.where(key) }, cause: err })
  }

  async putIfAbsent(key: string, body: PutBody): Promise<'created' | 'same'> {
    const digest = await digestOf(body)
    for (let attempt = 0; ; attempt++) {
      try {
        if (digest.size > this.multipartAbove && !(body instanceof Uint8Array)) await this.putInParts(key, body.file)
        else {
          await this.client.send(new sdk.PutObjectCommand({
            Bucket: this.bucket,
            Key: this.full(key),
            Body: body instanceof Uint8Array ? body : createReadStream(body.file),
            ContentLength: digest.size,
            ContentMD5: digest.md5,
            IfNoneMatch: '*',
          }))
        }
        return 'created'
      } catch (err) {
        const status = statusOf(err)
        // 412: the key exists. 409: another conditional write to it is under way. A 5xx or a broken connection
        // may hide a put that landed (the SDK does not retry a streamed body): what is there decides, and
        // when nothing is, the put is tried again, a few times.
        const transient = status === 409 || status === undefined || status >= 500
        if (status === 412 || transient) {
          const held = await this.compare(key, digest)
          if (held === 'same') return 'same'
          if (held === 'differs') throw objectDiffers(this.where(key))
          if (transient && attempt < PUT_ATTEMPTS - 1) {
            await new Promise((r) => setTimeout(r, 100 * 2 ** attempt))
            continue
          }
        }
        throw this.failure('put', key, err)
      }
    }
  }

  /**
   * A body too large for one PutObject, in parts (lib-storage), its completion conditional on the key's
   * absence. Some servers ignore that condition on CompleteMultipartUpload (Ceph's gateway does:
   * docs/object-storage.md), so the key is looked at first as well.
   */
  private async putInParts(key: string, file: string): Promise<void> {
    if (await this.head(key)) throw Object.assign(new Error('exists'), { $metadata: { httpStatusCode: 412 } })
    const { Upload } = await import('@aws-sdk/lib-storage')
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: this.full(key), Body: createReadStream(file, { highWaterMark: 1 << 20 }), IfNoneMatch: '*' },
      partSize: this.partSize,
      queueSize: 4,
      leavePartsOnError: false,
    })
    await upload.done()
  }

  /** What the key holds against these bytes: absent, the same, or different. */
  private async compare(key: string, digest: BodyDigest): Promise<'absent' | 'same' | 'differs'> {
    const head = await this.head(key)
    if (!head) return 'absent'
    if (head.size !== digest.size) return 'differs'
    const stream = await this.read(key)
    if (!stream) return 'absent'
    const hash = createHash('sha256')
    for await (const chunk of stream) hash.update(chunk as Uint8Array)
    return hash.digest('hex') === digest.sha256 ? 'same' : 'differs'
  }

  async get(key: string, maxBytes: number): Promise<Buffer | null> {
    let out
    try {
      out = await this.client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.full(key) }))
    } catch (err) {
      if (isMissing(err)) return null
      throw this.failure('get', key, err)
    }
    const body = out.Body as Readable
    if ((out.ContentLength ?? 0) > maxBytes) {
      body.destroy()
      throw tooLarge(this.where(key), out.ContentLength!, maxBytes)
    }
    const chunks: Buffer[] = []
    let size = 0
    for await (const chunk of body) {
      size += (chunk as Buffer).length
      if (size > maxBytes) {
        body.destroy()
        throw tooLarge(this.where(key), size, maxBytes)
      }
      chunks.push(chunk as Buffer)
    }
    return Buffer.concat(chunks, size)
  }

  async read(key: string, range?: { start: number; end?: number }): Promise<Readable | null> {
    if (range && range.end !== undefined && range.end <= range.start) return Readable.from([])
    try {
      const out = await this.client.send(new sdk.GetObjectCommand({
        Bucket: this.bucket,
        Key: this.full(key),
        ...(range ? { Range: `bytes=${range.start}-${range.end !== undefined ? range.end - 1 : ''}` } : {}),
      }))
      return out.Body as Readable
    } catch (err) {
      if (isMissing(err)) return null
      throw this.failure('get', key, err)
    }
  }

  /**
   * A URL that GETs the object for `seconds` without credentials of its own (SigV4 in the query): how the
   * HTTP(S) fetcher, with its Range resume and hash checks, reads a bucket.
   */
  async signedGetUrl(key: string, seconds: number): Promise<string> {
    const { getSignedUrl } = await import('@aws-sdk/s3-request-presigner')
    return getSignedUrl(this.client, new sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.full(key) }), { expiresIn: seconds })
  }

  async head(key: string): Promise<ObjectHead | null> {
    try {
      const out = await this.client.send(new sdk.HeadObjectCommand({ Bucket: this.bucket, Key: this.full(key) }))
      return { size: out.ContentLength ?? 0, etag: unquote(out.ETag) }
    } catch (err) {
      if (isMissing(err)) return null
      throw this.failure('head', key, err)
    }
  }

  async *list(prefix: string): AsyncIterable<{ key: string; size: number }> {
    const base = this.prefix === '' ? '' : `${this.prefix}/`
    let token: string | undefined
    do {
      let page
      try {
        page = await this.client.send(new sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: base + prefix, MaxKeys: this.pageSize, ...(token ? { ContinuationToken: token } : {}) }))
      } catch (err) {
        throw this.failure('list', prefix, err)
      }
      for (const o of page.Contents ?? []) yield { key: o.Key!.slice(base.length), size: o.Size ?? 0 }
      token = page.IsTruncated ? page.NextContinuationToken : undefined
    } while (token)
  }

  async folders(prefix: string): Promise<string[]> {
    const base = (this.prefix === '' ? '' : `${this.prefix}/`) + (prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`)
    const names: string[] = []
    let token: string | undefined
    do {
      let page
      try {
        page = await this.client.send(new sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: base, Delimiter: '/', MaxKeys: this.pageSize, ...(token ? { ContinuationToken: token } : {}) }))
      } catch (err) {
        throw this.failure('list', prefix, err)
      }
      for (const p of page.CommonPrefixes ?? []) names.push(p.Prefix!.slice(base.length, -1))
      token = page.IsTruncated ? page.NextContinuationToken : undefined
    } while (token)
    return names.sort()
  }

  async replace(key: string, body: Uint8Array, expected: string | null): Promise<string> {
    const digest = await digestOf(body)
    try {
      const out = await this.client.send(new sdk.PutObjectCommand({
        Bucket: this.bucket,
        Key: this.full(key),
        Body: body,
        ContentLength: body.byteLength,
        ContentMD5: digest.md5,
        // Unquoted: AWS takes either form; Ceph's gateway only this one.
        ...(expected === null ? { IfNoneMatch: '*' } : { IfMatch: expected }),
      }))
      return unquote(out.ETag) || (await this.head(key))!.etag
    } catch (err) {
      const status = statusOf(err)
      // 412, and 404 for If-Match on a key that is gone: another writer moved it. A 5xx after the SDK's
      // retries may hide a write that landed (a retry of it then fails its own condition).
      if (status === 412 || status === 404 || status === 409 || (status !== undefined && status >= 500)) {
        if ((await this.compare(key, digest)) === 'same') return (await this.head(key))!.etag
        throw objectChanged(this.where(key))
      }
      throw this.failure('put', key, err)
    }
  }
}

function isMissing(err: unknown): boolean {
  const name = (err as SdkError).name
  return name === 'NoSuchKey' || name === 'NotFound' || statusOf(err) === 404 && name !== 'NoSuchBucket'
}

interface BodyDigest {
  size: number
  md5: string
  sha256: string
}

/** The size, Content-MD5 and SHA-256 of a body, a file read once a block at a time. */
async function digestOf(body: PutBody): Promise<BodyDigest> {
  const md5 = createHash('md5')
  const sha = createHash('sha256')
  let size = 0
  if (body instanceof Uint8Array) {
    md5.update(body)
    sha.update(body)
    size = body.byteLength
  } else {
    const fh = await open(body.file, 'r')
    try {
      const buf = Buffer.allocUnsafe(1 << 20)
      for (;;) {
        const { bytesRead } = await fh.read(buf, 0, buf.length, size)
        if (bytesRead === 0) break
        md5.update(buf.subarray(0, bytesRead))
        sha.update(buf.subarray(0, bytesRead))
        size += bytesRead
      }
    } finally {
      await fh.close()
    }
  }
  return { size, md5: md5.digest('base64'), sha256: sha.digest('hex') }
}

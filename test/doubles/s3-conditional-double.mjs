/**
 * A TEST DOUBLE, not an S3 server: the few S3 requests a multipart upload makes (HEAD and GET of an object,
 * CreateMultipartUpload, UploadPart, CompleteMultipartUpload, AbortMultipartUpload), in memory, honouring
 * `If-None-Match: *` on CompleteMultipartUpload as AWS S3 does. The real server of the tests (Ceph RGW 16.2)
 * ignores that condition (docs/object-storage.md), so this double shows what pipe does where it is honoured.
 * Requests are not authenticated. Run as its own process: `node s3-conditional-double.mjs`; it prints its
 * port on stdout. With RACE_KEY set, the first CompleteMultipartUpload of that key finds it created just
 * before by another writer (RACE_BYTES), as when two uploads race.
 */
import { createHash, randomUUID } from 'node:crypto'
import { createServer } from 'node:http'

const objects = new Map()
const uploads = new Map()
let raced = false

const etagOf = (bytes) => `"${createHash('md5').update(bytes).digest('hex')}"`
const body = (req) => new Promise((resolve) => { const c = []; req.on('data', (d) => c.push(d)); req.on('end', () => resolve(Buffer.concat(c))) })
const xml = (res, status, text) => { res.writeHead(status, { 'content-type': 'application/xml' }); res.end(`<?xml version="1.0" encoding="UTF-8"?>${text}`) }
const failed = (res, status, code) => xml(res, status, `<Error><Code>${code}</Code><Message>${code}</Message></Error>`)

const server = createServer(async (req, res) => {
  const url = new URL(req.url, 'http://double')
  const [, bucket, ...rest] = url.pathname.split('/')
  const key = decodeURIComponent(rest.join('/'))
  const id = `${bucket}/${key}`
  const q = url.searchParams
  const data = await body(req)
  if (req.method === 'HEAD' || (req.method === 'GET' && !q.has('uploadId'))) {
    const o = objects.get(id)
    if (!o) return req.method === 'HEAD' ? (res.writeHead(404), res.end()) : failed(res, 404, 'NoSuchKey')
    res.writeHead(200, { etag: etagOf(o), 'content-length': o.length })
    return res.end(req.method === 'HEAD' ? undefined : o)
  }
  if (req.method === 'POST' && q.has('uploads')) {
    const uploadId = randomUUID()
    uploads.set(uploadId, new Map())
    return xml(res, 200, `<InitiateMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${key}</Key><UploadId>${uploadId}</UploadId></InitiateMultipartUploadResult>`)
  }
  if (req.method === 'PUT' && q.has('uploadId')) {
    const parts = uploads.get(q.get('uploadId'))
    if (!parts) return failed(res, 404, 'NoSuchUpload')
    parts.set(Number(q.get('partNumber')), data)
    res.writeHead(200, { etag: etagOf(data) })
    return res.end()
  }
  if (req.method === 'POST' && q.has('uploadId')) {
    const parts = uploads.get(q.get('uploadId'))
    if (!parts) return failed(res, 404, 'NoSuchUpload')
    if (process.env.RACE_KEY === key && !raced) {
      raced = true
      objects.set(id, Buffer.from(process.env.RACE_BYTES ?? 'another writer'))
    }
    if (req.headers['if-none-match'] === '*' && objects.has(id)) return failed(res, 412, 'PreconditionFailed')
    const bytes = Buffer.concat([...parts.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]))
    objects.set(id, bytes)
    uploads.delete(q.get('uploadId'))
    return xml(res, 200, `<CompleteMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${key}</Key><ETag>${etagOf(bytes)}</ETag></CompleteMultipartUploadResult>`)
  }
  if (req.method === 'DELETE' && q.has('uploadId')) {
    uploads.delete(q.get('uploadId'))
    res.writeHead(204)
    return res.end()
  }
  failed(res, 501, 'NotImplemented')
})
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`))

/**
 * The real S3 API server of a test file: one Ceph cluster on loopback (scripts/ceph-s3.ts), started on first
 * use and stopped when the file's tests end, with the AWS environment of this process pointed at it (as a
 * user's would be), and a fresh bucket per call. A test guards with needs('radosgw').
 */
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import t from 'tap'
import { startCephS3, type CephS3 } from '../../scripts/ceph-s3.js'

let started: Promise<CephS3> | null = null
let buckets = 0

export function cephS3(): Promise<CephS3> {
  if (!started) {
    started = startCephS3().then((ceph) => {
      Object.assign(process.env, ceph.env)
      t.teardown(() => ceph.stop())
      return ceph
    })
  }
  return started
}

/** A new, empty bucket on the file's server: `s3://NAME`. */
export async function newBucket(): Promise<{ url: string; name: string; ceph: CephS3 }> {
  const ceph = await cephS3()
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const name = `pipe-test-${process.pid}-${++buckets}`
  const client = new S3Client({ endpoint: ceph.endpoint, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: ceph.accessKeyId, secretAccessKey: ceph.secretAccessKey } })
  await client.send(new CreateBucketCommand({ Bucket: name }))
  client.destroy()
  return { url: `s3://${name}`, name, ceph }
}

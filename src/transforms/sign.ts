import { z } from 'zod'
import { UsageError } from '../core/errors.js'
import { isDocumentItem, type DocumentItem } from '../core/items.js'
import { defineStage } from '../core/stage.js'
import { jwksBeside, signerOptions } from '../formats/record/keys/signer-options.js'

/**
 * Signs each document's exact bytes with a key file, or through an external signer command holding the key
 * (a hardware token, a KMS), whose signature is checked against the public key before it is used:
 * - `jws` (record format v1): the detached JWS of `manifest.json.sig`;
 * - `ssh` (pack format): an SSH signature in the namespace the document states (a manifest's, a ref's).
 */
export const signStage = defineStage({
  name: 'sign',
  kind: 'transform',
  summary: 'Signs each document\'s bytes: a detached JWS (record format) or an SSH signature (pack format), with a key file or an external signer command',
  takes: 'documents',
  gives: 'documents',
  options: z.object({
    format: z.enum(['jws', 'ssh']).default('jws').describe('jws: record format v1 (key is a JWK file, or signerCmd with kid); ssh: pack format (key is the publisher key file, or signerCmd with publicKey)'),
    key: z.string().min(1).optional().describe('the private key file: jws, a JWK (pipe key new); ssh, the publisher\'s OpenSSH key (pipe pack key)'),
    signerCmd: z.string().min(1).optional().describe('sign through this command instead (run by /bin/sh), given the bytes on stdin and in the file $PIPE_SIGN_INPUT names: for jws it prints the raw Ed25519 signature (`openssl pkeyutl -sign -rawin -inkey KEY.pem -in "$PIPE_SIGN_INPUT"`), for ssh the armored SSH signature in namespace $PIPE_SIGN_NAMESPACE (`ssh-keygen -Y sign -f KEY -n "$PIPE_SIGN_NAMESPACE"`)'),
    kid: signerOptions.kid,
    keys: signerOptions.keys,
    publicKey: z.string().min(1).optional().describe('ssh with signerCmd: the OpenSSH public key file its signatures are checked by'),
  }),
  async create(o, ctx) {
    const sign = o.format === 'jws' ? await jwsSigner(o, ctx.signal) : await sshSigner(o, ctx.signal)
    return async function* (source: AsyncIterable<unknown>) {
      for await (const item of source) {
        if (!isDocumentItem(item)) throw new UsageError('usage.item-type', `${ctx.stage} takes documents (manifests)`)
        if (!item.final && item.signature === undefined) {
          if (!item.bytes) throw new UsageError('sign.not-linked', `${item.name} has no bytes to sign yet: put chain-link before sign`)
          item.signature = await sign(item)
        }
        yield item
      }
    }
  },
})

type SignOptions = z.infer<typeof signStage.options>
type SignDocument = (item: DocumentItem) => Promise<string>

async function jwsSigner(o: SignOptions, signal: AbortSignal): Promise<SignDocument> {
  if (o.publicKey !== undefined) throw new UsageError('usage.bad-option', 'a JWS signer is named by --key or --signer-cmd with --kid; --public-key is for --format ssh', { location: { field: '--public-key' } })
  const { recordSigner } = await import('../formats/record/keys/signer.js')
  const signer = await recordSigner(o, jwksBeside, signal)
  return (item) => signer.sign(item.bytes!)
}

async function sshSigner(o: SignOptions, signal: AbortSignal): Promise<SignDocument> {
  const misplaced = o.kid !== undefined ? '--kid' : o.keys !== undefined ? '--keys' : undefined
  if (misplaced) throw new UsageError('usage.bad-option', `${misplaced} names a JWS key; an SSH signer is named by --key, or --signer-cmd with --public-key`, { location: { field: misplaced } })
  const [{ packSigner }, { PACK_NAMESPACES }] = await Promise.all([import('../formats/pack/keys/pack-signer.js'), import('../formats/pack/keys/sshsig.js')])
  const sign = await packSigner({ ...o, signal })
  return (item) => {
    const namespace = PACK_NAMESPACES.find((ns) => ns === item.namespace)
    if (namespace === undefined) throw new UsageError('sign.no-namespace', `${item.name} names no pack signing namespace (${PACK_NAMESPACES.join(', ')}): an SSH signature needs one`)
    return sign(item.bytes!, namespace)
  }
}

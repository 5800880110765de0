/**
 * Who signs a pack's manifests and refs: the publisher's private key file pipe reads, or an external
 * command that holds the key (an SSH agent's hardware token, a KMS) and prints the armored SSH signature,
 * as `ssh-keygen -Y sign -f KEY -n "$PIPE_SIGN_NAMESPACE"` does over its standard input. A command's
 * signature is checked against the publisher's public key and the namespace before it is used: a signer
 * that signs with another key, or in another namespace, is refused before anything lands.
 */
import { asUsage, UsageError } from '../../../core/errors.js'
import { readInputFile } from '../../../core/input-file.js'
import { runSignerCommand } from '../../../core/signer-command.js'
import { MAX_KEY_STATEMENT_BYTES } from './key-statements.js'
import { fingerprint, parsePrivateKey, parsePublicKey, type SshPrivateKey, type SshPublicKey } from './ssh-key.js'
import { signSshsig, verifySshsig, writerSshsig, type PackNamespace } from './sshsig.js'

/** Signs `bytes` in `namespace`; gives the armored SSH signature. */
export type PackSign = (bytes: Uint8Array, namespace: PackNamespace) => Promise<string>

export function keyPackSigner(key: SshPrivateKey): PackSign {
  return async (bytes, namespace) => signSshsig(key, bytes, namespace)
}

/** The environment variable that names the namespace an external signer signs in. */
export const SIGN_NAMESPACE_VARIABLE = 'PIPE_SIGN_NAMESPACE'

/**
 * Signs through `command`, its output checked and given in the form a writer stores (writerSshsig): a
 * signer that wraps or ends its lines otherwise still gives the bytes ssh-keygen would have written.
 */
export function commandPackSigner(command: string, publicKey: SshPublicKey, signal?: AbortSignal): PackSign {
  const expected = fingerprint(publicKey)
  return async (bytes, namespace) => {
    const out = await runSignerCommand(command, bytes, { env: { [SIGN_NAMESPACE_VARIABLE]: namespace }, ...(signal ? { signal } : {}) })
    const refused = (detail: string) => new UsageError('sign.bad-signature', `--signer-cmd ${JSON.stringify(command)}: what it printed is no SSH signature by ${expected} in namespace ${namespace}: ${detail}`, { location: { field: '--signer-cmd' } })
    const checked = verifySshsig(out, bytes, namespace, { expectedKey: expected })
    if (!checked.ok) throw refused(`${checked.detail} (${checked.code})`)
    const written = writerSshsig(out)
    if (!written.ok) throw refused(`${written.detail} (${written.code})`)
    return written.text
  }
}

/** The options that name an SSH signer: a private key file, or a command with the public key file it signs for. */
export interface PackSignerOptions {
  key?: string | undefined
  signerCmd?: string | undefined
  publicKey?: string | undefined
  /** Stops a command still signing when the run is interrupted. */
  signal?: AbortSignal
}

/** The signer the options name, its key file read: a usage error naming the option when they name none, or both. */
export async function packSigner(o: PackSignerOptions): Promise<PackSign> {
  if ((o.key === undefined) === (o.signerCmd === undefined)) throw new UsageError('usage.signer', 'name the signer: --key FILE (an OpenSSH private key), or --signer-cmd CMD with --public-key', { location: { field: '--key' } })
  if (o.key !== undefined) {
    const parsed = parsePrivateKey((await readKeyFile(o.key, '--key')).toString('utf8'))
    if (!parsed.ok) throw new UsageError(parsed.code, `--key: ${parsed.detail}`, { location: { file: o.key } })
    return keyPackSigner(parsed.value)
  }
  if (o.publicKey === undefined) throw new UsageError('usage.missing-option', '--signer-cmd needs --public-key, the public key its signatures are checked by', { location: { field: '--public-key' } })
  const parsed = parsePublicKey((await readKeyFile(o.publicKey, '--public-key')).toString('utf8'))
  if (!parsed.ok) throw new UsageError(parsed.code, `--public-key: ${parsed.detail}`, { location: { file: o.publicKey } })
  return commandPackSigner(o.signerCmd!, parsed.value, o.signal)
}

function readKeyFile(path: string, option: string): Promise<Buffer> {
  return asUsage(() => readInputFile(path, { maxBytes: MAX_KEY_STATEMENT_BYTES, what: 'an SSH key file' }), `${option}: `, { file: path })
}

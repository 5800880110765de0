/**
 * The options that name a record-format signer (keys/signer.ts): apart, so that the stages that take them
 * declare their schema without loading the JWS library at start-up.
 */
import { dirname, join } from 'node:path'
import { z } from 'zod'

export const signerOptions = {
  key: z.string().min(1).optional().describe('the private signing key (JWK file from pipe key new); or signerCmd and kid'),
  signerCmd: z.string().min(1).optional().describe('a command (run by /bin/sh) that signs: it signs the bytes it reads on stdin, or in the file $PIPE_SIGN_INPUT names, and prints the raw 64-byte Ed25519 signature, as `openssl pkeyutl -sign -rawin -inkey KEY.pem -in "$PIPE_SIGN_INPUT"` does; the key never reaches pipe'),
  kid: z.string().min(1).optional().describe('with signerCmd: the kid of the signer\'s key in the key set'),
  keys: z.string().min(1).optional().describe('the public key set (jwks.json) that publishes the key; default with key: jwks.json beside it'),
}

export interface SignerOptions {
  key?: string | undefined
  signerCmd?: string | undefined
  kid?: string | undefined
  keys?: string | undefined
}

/** The key set a key file is published by when --keys is not given: jwks.json beside it, as pipe key new writes them. */
export function jwksBeside(key: string): string {
  return join(dirname(key), 'jwks.json')
}

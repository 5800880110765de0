// The resolve hook of package-exports.mjs.
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context)
  } catch (err) {
    const refused = err?.code === 'ERR_PACKAGE_PATH_NOT_EXPORTED' || /^ERR_PACKAGE_PATH_NOT_EXPORTED\b/.test(String(err?.message))
    if (!refused || !context.parentURL) throw err
    return { url: pathToFileURL(createRequire(context.parentURL).resolve(specifier)).href, shortCircuit: true }
  }
}

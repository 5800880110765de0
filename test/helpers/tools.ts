/**
 * The system tools that interoperability tests spawn: the proof that an independent tool reads what pipe
 * writes (b3sum, zstd, openssl, ssh-keygen), and the real HTTP server readers over HTTP are tested against
 * (nginx), and the real S3 API server (Ceph's radosgw, scripts/ceph-s3.ts). A machine with only Node lacks some of them, so a subtest that spawns one takes `needs(tool)` as
 * its options and is skipped, saying why, when the tool is not on PATH:
 * `t.test('b3sum agrees', needs('b3sum'), async (t) => ...)`.
 *
 * CI must never skip that proof: .ci/run installs the tools and sets PIPE_REQUIRE_TOOLS=1, and then this
 * module turns on tap's failSkip for the test file that imports it (what TAP_FAIL_SKIP=1 does, for this
 * file only): every skip in the file is a failure, printed as `not ok` with the reason in `failedSkip`.
 * The subtest's body does not run without its tool.
 *
 * Coreutils (sha256sum, cat, head, sed, sh, bash) count as always present and need no guard.
 */
import { spawnSync } from 'node:child_process'
import t from 'tap'

export type Tool = 'b3sum' | 'zstd' | 'openssl' | 'ssh-keygen' | 'nginx' | 'radosgw'

/** A harmless argument each tool answers (ssh-keygen has no --version: -? prints its usage). */
const PROBE: Record<Tool, string[]> = { b3sum: ['--version'], zstd: ['--version'], openssl: ['version'], 'ssh-keygen': ['-?'], nginx: ['-v'], radosgw: ['--version'] }

const REQUIRED = process.env.PIPE_REQUIRE_TOOLS === '1'
if (REQUIRED) t.options.failSkip = true

const found = new Map<Tool, boolean>()

/** Whether `tool` is on PATH: it is spawned once per process (any exit status counts), and the answer kept. */
export function hasTool(tool: Tool): boolean {
  let ok = found.get(tool)
  if (ok === undefined) {
    ok = spawnSync(tool, PROBE[tool], { stdio: 'ignore', timeout: 10_000 }).error === undefined
    found.set(tool, ok)
  }
  return ok
}

/** tap options for a subtest that spawns `tool`; a new object each call, as tap writes into it. */
export function needs(tool: Tool): { skip?: string } {
  if (hasTool(tool)) return {}
  return { skip: REQUIRED ? `${tool} is not installed, and PIPE_REQUIRE_TOOLS=1 requires it` : `${tool} is not installed (.ci/run installs it)` }
}

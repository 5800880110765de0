/**
 * The recorder's chrony clock against real chronyd processes (Debian's chrony, installed by .ci/run), all on
 * loopback and in a temp dir: a server serving its own clock (`local stratum 1`) with NTS, a client of it
 * with NTS, and a client without (told its source reads 0.25 s ahead, so the offset's sign shows live).
 * Every chronyd runs with -x (the system clock is never touched), its own config, pid file, ports and
 * command socket (`chronyc -h <socket>`); none is the system's service.
 *
 * Shown live: a client that has not synchronized is withheld 'unsynchronized', the server (its own local
 * clock) too, the unauthenticated client 'not-nts' with clock_offset ≈ −0.25 s (host slow), and the NTS
 * client gives clock_offset and the bound of "Clock calibration" plus the reading's error.
 *
 * Skipped, saying why, when chronyd is not installed; under PIPE_REQUIRE_TOOLS=1 (.ci/run) a skip fails.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { createSocket } from 'node:dgram'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { clockErrorBound } from '../src/formats/record/clock.js'
import { ChronyClock, probeChronyc } from '../src/recorder/clock/chrony-clock.js'
import type { ClockStatus } from '../src/recorder/clock/recorder-clock.js'
import { hasTool, needs } from './helpers/tools.js' // also: PIPE_REQUIRE_TOOLS=1 makes every skip here a failure

const MS = 1_000_000n

/** chronyd on PATH, or where Debian puts it (/usr/sbin is not on every user's PATH). */
function findChronyd(): string | undefined {
  for (const path of ['chronyd', '/usr/sbin/chronyd']) if (spawnSync(path, ['--version'], { stdio: 'ignore', timeout: 10_000 }).status === 0) return path
  return undefined
}
const CHRONYD = findChronyd()
const REQUIRED = process.env.PIPE_REQUIRE_TOOLS === '1'
const chronydSkip = CHRONYD
  ? {}
  : { skip: REQUIRED ? 'chronyd is not installed, and PIPE_REQUIRE_TOOLS=1 requires it' : 'chronyd is not installed (.ci/run installs Debian\'s chrony)' }
const skip = 'skip' in chronydSkip ? chronydSkip : needs('openssl')

async function freePort(kind: 'udp' | 'tcp'): Promise<number> {
  if (kind === 'tcp') {
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as { port: number }).port
    await new Promise((resolve) => server.close(resolve))
    return port
  }
  const socket = createSocket('udp4')
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
  const port = socket.address().port
  await new Promise<void>((resolve) => socket.close(resolve))
  return port
}

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

t.test('real chronyd on loopback: unsynchronized, not NTS, and an NTS sample with its bound', skip, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pipe-chronyd-'))
  const daemons: { name: string; child: ChildProcess; log: string[] }[] = []
  const clocks: ChronyClock[] = []
  t.teardown(async () => {
    for (const clock of clocks) await clock.stop()
    for (const d of daemons) {
      if (d.child.exitCode !== null || d.child.signalCode !== null) continue
      const exited = new Promise((resolve) => d.child.once('exit', resolve))
      d.child.kill('SIGTERM')
      const timer = setTimeout(() => d.child.kill('SIGKILL'), 3000)
      await exited
      clearTimeout(timer)
    }
    rmSync(dir, { recursive: true, force: true })
  })

  // chronyd wants its socket's folder owned by the user it runs as, and no wider than 0770.
  const user = userInfo().username
  function startChronyd(name: string, config: string[]): string {
    const home = join(dir, name)
    mkdirSync(home, { mode: 0o700 })
    const socket = join(home, 'chronyd.sock')
    writeFileSync(join(home, 'chronyd.conf'), [...config, 'cmdport 0', `bindcmdaddress ${socket}`, `pidfile ${join(home, 'chronyd.pid')}`, ''].join('\n'))
    // -x: never touch the system clock; -d: stay in the foreground, log to stderr; -U -u: run as us.
    const child = spawn(CHRONYD!, ['-x', '-d', '-U', '-u', user, '-f', join(home, 'chronyd.conf')], { stdio: ['ignore', 'ignore', 'pipe'] })
    const log: string[] = []
    child.stderr!.on('data', (chunk: Buffer) => log.push(chunk.toString()))
    daemons.push({ name, child, log })
    return socket
  }
  const logs = () => daemons.map((d) => `--- ${d.name} (exit ${d.child.exitCode ?? d.child.signalCode ?? 'running'})\n${d.log.join('')}`).join('\n')
  function clockOf(socket: string): ChronyClock {
    const clock = new ChronyClock({ host: socket, intervalMs: 200 })
    clocks.push(clock)
    return clock
  }
  /** Reads until a read succeeds, and gives the status after it. */
  async function firstSample(clock: ChronyClock, what: string): Promise<ClockStatus> {
    await until(`${what} answers`, 10_000, async () => {
      await clock.poll()
      return clock.status().reads > 0
    })
    return clock.status()
  }

  t.ok(hasTool('openssl'))
  const cert = join(dir, 'cert.pem')
  const key = join(dir, 'key.pem')
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost', '-keyout', key, '-out', cert], { encoding: 'utf8' })
  t.equal(made.status, 0, 'a self-signed certificate for the NTS server', { stderr: made.stderr })
  const ntpPort = await freePort('udp')
  const ntsPort = await freePort('tcp')

  try {
    // The unauthenticated client first, before its server exists: it cannot have synchronized.
    const plain = clockOf(startChronyd('plain', [`server 127.0.0.1 port ${ntpPort} iburst minpoll -2 maxpoll -2 offset 0.25`, 'port 0']))
    const early = await firstSample(plain, 'the client without a server')
    t.equal(early.sample?.synchronized, false, 'no server yet: chronyd reports itself unsynchronized')
    t.equal(early.withheld, 'unsynchronized', 'so receipts are withheld: unsynchronized')

    const serverSocket = startChronyd('server', ['local stratum 1', 'allow 127.0.0.1', `port ${ntpPort}`, 'bindaddress 127.0.0.1',
      `ntsserverkey ${key}`, `ntsservercert ${cert}`, `ntsport ${ntsPort}`])
    const server = clockOf(serverSocket)
    const serving = await firstSample(server, 'the server')
    t.equal(serving.withheld, 'unsynchronized', 'the server follows only its own clock (reference 7F7F0101): unsynchronized')
    t.same(await probeChronyc({ host: serverSocket }), { answered: true }, 'the probe: chronyd answers')
    t.match(await probeChronyc({ host: join(dir, 'nobody.sock') }), { answered: false, reason: /exited with 1/ }, 'the probe: nothing at that socket')

    const nts = clockOf(startChronyd('nts', [`server localhost port ${ntpPort} nts ntsport ${ntsPort} iburst minpoll -2 maxpoll -2`, `ntstrustedcerts ${cert}`, 'port 0']))

    await until('the unauthenticated client synchronizes', 30_000, async () => {
      await plain.poll()
      return plain.status().sample?.synchronized === true
    })
    const synced = plain.status()
    t.equal(synced.sample?.nts, false, 'its source is not NTS-authenticated')
    t.equal(synced.withheld, 'not-nts', 'so receipts are withheld: not-nts')
    t.same(plain.receiptClock(plain.now()), { withheld: 'not-nts' })
    const offset = synced.sample!.offset
    t.ok(offset < -249n * MS && offset > -251n * MS, `clock_offset ${offset} ns: about −0.25 s, the host clock slow of a source said to read 0.25 s ahead`)

    await until('the NTS client gives clock fields', 30_000, async () => {
      await nts.poll()
      return nts.status().withheld === undefined
    })
    const status = nts.status()
    const sample = status.sample!
    t.match(sample, { synchronized: true, nts: true }, 'synchronized, from an NTS-authenticated source')
    t.ok(sample.measuredAt < sample.readAt && sample.readAt - sample.measuredAt < 5_000n * MS, 'measured in the seconds before it was read')
    const reading = nts.now()
    const fields = nts.receiptClock(reading)
    if (!('clockOffset' in fields)) throw new Error(`withheld: ${fields.withheld}`)
    const expected = clockErrorBound(sample.offset, sample.rootDispersion, sample.rootDelay, reading.monotonic - sample.readAt) + reading.readingError
    t.equal(fields.clockErrorBound, expected, `bound ${fields.clockErrorBound} ns = "Clock calibration" + the reading's error (${reading.readingError} ns)`)
    t.ok(fields.clockOffset > -MS && fields.clockOffset < MS, `clock_offset ${fields.clockOffset} ns: one host clock, so near zero`)
    const now = BigInt(Date.now()) * MS
    t.ok(reading.receiveTime > now - 10n * MS && reading.receiveTime <= now + MS, 'receive_time is the host clock')
    t.equal(status.steps, 0, 'no step of the real-time clock')
    t.comment(`NTS sample: offset ${sample.offset} ns, root delay ${sample.rootDelay} ns, root dispersion ${sample.rootDispersion} ns; bound ${fields.clockErrorBound} ns`)
  } catch (e) {
    t.comment(logs())
    throw e
  }
})

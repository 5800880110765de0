/**
 * A real S3 API server on loopback: a Ceph cluster of one monitor, one in-memory OSD and a RADOS Gateway,
 * started in a temporary folder on free ports, for the tests, bench:s3 and soak:s3. Ceph's gateway is the
 * one server installable here that honours conditional writes (docs/object-storage.md). .ci/run installs
 * ceph-mon, ceph-osd and radosgw; a test guards with needs('radosgw') (test/helpers/tools.ts).
 *
 * The OSD keeps objects in memory (memstore) and the cluster runs without authentication between its own
 * daemons: it lives for one test run, on 127.0.0.1 only. The gateway checks S3 signatures as AWS does,
 * against one user with fixed keys.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { accepts, freePort } from './loopback.js'

export interface CephS3 {
  /** `http://127.0.0.1:PORT` */
  endpoint: string
  accessKeyId: string
  secretAccessKey: string
  /** The environment a `pipe` process needs to reach it: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL_S3. */
  env: Record<string, string>
  /** The gateway's own counters of what it was asked (`perf dump`'s rgw section: req, get, put, ...), for the benches. */
  counters(): Record<string, number>
  stop(): Promise<void>
}

const ACCESS_KEY = 'PIPETESTACCESSKEY000'
const SECRET_KEY = 'pipe-test-secret-key-on-loopback-only-0000'

/** Whether this machine has Ceph's daemons (radosgw, ceph-mon, ceph-osd). */
export function hasCeph(): boolean {
  return ['radosgw', 'ceph-mon', 'ceph-osd', 'monmaptool'].every((tool) => spawnSync(tool, ['--version'], { stdio: 'ignore', timeout: 10_000 }).error === undefined)
}

export async function startCephS3(): Promise<CephS3> {
  const dir = await mkdtemp(join(tmpdir(), 'ceph-s3-'))
  const children: ChildProcess[] = []
  const stop = async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : undefined)))
    await rm(dir, { recursive: true, force: true })
  }
  try {
    const monPort = await freePort()
    const rgwPort = await freePort()
    const conf = join(dir, 'ceph.conf')
    const fsid = randomUUID()
    await mkdir(join(dir, 'run'))
    await mkdir(join(dir, 'log'))
    await writeFile(conf, `[global]
fsid = ${fsid}
mon host = v1:127.0.0.1:${monPort}
mon initial members = a
public addr = 127.0.0.1
ms bind msgr2 = false
auth cluster required = none
auth service required = none
auth client required = none
run dir = ${join(dir, 'run')}
admin socket = ${join(dir, 'run')}/$name.asok
pid file = ${join(dir, 'run')}/$name.pid
log file = ${join(dir, 'log')}/$name.log
keyring = ${join(dir, 'keyring')}
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
paxos propose interval = 0.1
paxos min wait = 0.01
osd objectstore = memstore
osd class update on start = false
memstore device bytes = ${8 * 2 ** 30}
osd data = ${join(dir, 'osd')}
mon data = ${join(dir, 'mon')}
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${rgwPort}
rgw data = ${join(dir, 'rgw')}
rgw dns name = 127.0.0.1
`)
    const run = (cmd: string, args: string[]) => {
      const r = spawnSync(cmd, ['-c', conf, ...args], { encoding: 'utf8', timeout: 60_000 })
      if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.error?.message ?? r.stderr}`)
      return r.stdout
    }
    const daemon = (cmd: string, args: string[]) => {
      const child = spawn(cmd, ['-c', conf, '-f', ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
      let stderr = ''
      child.stderr!.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-4000) })
      children.push(child)
      // A watcher of its own kills the daemon, and removes the cluster's folder, if this process dies
      // without stopping it (a test killed at its timeout): a cluster must not outlive its test. A daemon
      // that exits while this process lives (an OSD started again) leaves the folder alone.
      spawn('sh', ['-c', 'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done; if ! kill -0 "$1" 2>/dev/null; then kill -9 "$2" 2>/dev/null; rm -rf "$3"; fi', 'watch', String(process.pid), String(child.pid), dir], { stdio: 'ignore', detached: true }).unref()
      return { child, stderr: () => stderr }
    }
    spawnSync('ceph-authtool', ['--create-keyring', join(dir, 'keyring'), '--gen-key', '-n', 'mon.', '--cap', 'mon', 'allow *'], { stdio: 'ignore' })
    const monmap = join(dir, 'monmap')
    const mm = spawnSync('monmaptool', ['--create', '--fsid', fsid, '--addv', 'a', `[v1:127.0.0.1:${monPort}]`, monmap], { encoding: 'utf8' })
    if (mm.status !== 0) throw new Error(`monmaptool: ${mm.stderr}`)
    await mkdir(join(dir, 'mon'))
    run('ceph-mon', ['--mkfs', '-i', 'a', '--monmap', monmap])
    const mon = daemon('ceph-mon', ['-i', 'a'])
    for (let i = 0; i < 200 && !(await accepts(monPort)); i++) await new Promise((r) => setTimeout(r, 25))
    if (!(await accepts(monPort))) throw new Error(`ceph-mon did not listen: ${mon.stderr()}`)
    // The OSD is made with the id and uuid the monitor gave out: one it does not know never boots.
    const osdUuid = randomUUID()
    const osdId = run('ceph', ['osd', 'new', osdUuid]).trim()
    await mkdir(join(dir, 'osd'))
    run('ceph-osd', ['--mkfs', '-i', osdId, '--osd-uuid', osdUuid])
    let osd = daemon('ceph-osd', ['-i', osdId])
    const rgw = daemon('radosgw', ['-n', 'client.rgw'])
    // The gateway creates its pools on start and listens once the OSD takes writes. An OSD started this
    // soon after its monitor now and then asks it with an empty cluster id and exits ('wrong fsid'): it
    // is started again, as its service manager would.
    let osdStarts = 1
    for (let i = 0; i < 1200 && !(await accepts(rgwPort)); i++) {
      if (osd.child.exitCode !== null && osdStarts < 5) {
        osdStarts++
        osd = daemon('ceph-osd', ['-i', osdId])
      }
      if (children.some((c) => c.exitCode !== null && c !== osd.child && !c.spawnargs.includes('ceph-osd'))) throw new Error(`a Ceph daemon exited: ${rgw.stderr()} ${mon.stderr()}`)
      await new Promise((r) => setTimeout(r, 25))
    }
    if (!(await accepts(rgwPort))) throw new Error(`radosgw did not listen on ${rgwPort} (the OSD started ${osdStarts} times): ${rgw.stderr()} ${osd.stderr()}`)
    run('radosgw-admin', ['-n', 'client.rgw', 'user', 'create', '--uid', 'pipe', '--display-name', 'pipe tests', '--access-key', ACCESS_KEY, '--secret', SECRET_KEY])
    const endpoint = `http://127.0.0.1:${rgwPort}`
    return {
      endpoint,
      accessKeyId: ACCESS_KEY,
      secretAccessKey: SECRET_KEY,
      env: { AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET_KEY, AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_S3: endpoint },
      counters() {
        const dump = JSON.parse(run('ceph', ['--admin-daemon', join(dir, 'run', 'client.rgw.asok'), 'perf', 'dump'])) as { rgw?: Record<string, unknown> }
        return Object.fromEntries(Object.entries(dump.rgw ?? {}).filter((e): e is [string, number] => typeof e[1] === 'number'))
      },
      stop,
    }
  } catch (err) {
    const tail = async (name: string) => (await readFile(join(dir, 'log', name), 'utf8').catch(() => '')).slice(-1500)
    const logs = (await Promise.all(['mon.a.log', 'osd.0.log', 'client.rgw.log'].map(tail))).join('\n')
    await stop()
    throw new Error(`${(err as Error).message}${logs ? `\n${logs.slice(-2000)}` : ''}`)
  }
}

/**
 * A real nginx serving a folder on a loopback port, for tests of what reads over HTTP (Range as nginx does
 * it). Started in the foreground with its own prefix, config and logs in a temporary folder; `stop` ends it.
 * .ci/run installs nginx-light; a test guards with needs('nginx') (test/helpers/tools.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { accepts, freePort } from '../../scripts/loopback.js'

export interface Nginx {
  /** `http://127.0.0.1:PORT` */
  base: string
  port: number
  stop(): Promise<void>
}

export async function startNginx(root: string): Promise<Nginx> {
  // nginx started by root serves as nobody: the folder (mkdtemp makes it 0700) must be readable by all.
  await chmod(root, 0o755)
  const prefix = await mkdtemp(join(tmpdir(), 'nginx-'))
  await mkdir(join(prefix, 'logs'))
  const port = await freePort()
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((k) => `${k}_temp_path ${join(prefix, k)};`).join('\n    ')
  await writeFile(join(prefix, 'nginx.conf'), `daemon off;
worker_processes 1;
pid ${join(prefix, 'nginx.pid')};
error_log ${join(prefix, 'logs', 'error.log')} warn;
events { worker_connections 256; }
http {
    access_log off;
    ${temp}
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:${port};
        root ${root};
    }
}
`)
  const child: ChildProcess = spawn('nginx', ['-p', prefix, '-c', join(prefix, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => { stderr += d.toString() })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  for (let i = 0; i < 100 && !(await accepts(port)); i++) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${stderr}`)
    await new Promise((r) => setTimeout(r, 50))
  }
  if (!(await accepts(port))) throw new Error(`nginx did not listen on ${port}: ${stderr}`)
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    async stop() {
      child.kill('SIGQUIT')
      await exited
      await rm(prefix, { recursive: true, force: true })
    },
  }
}

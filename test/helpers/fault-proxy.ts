/**
 * A fault-injecting HTTP proxy on loopback, in front of a real server (nginx): it forwards each GET with
 * its Range header and passes the answer through, unless a fault is set for the path. Faults count down:
 * `times` answers get the fault, later ones pass through. It records what each request asked for.
 */
import { request, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export type Fault =
  /** The connection is destroyed after `after` bytes of the body. */
  | { kind: 'cut'; after: number }
  /** One byte of the body is flipped. */
  | { kind: 'wrong-bytes' }
  | { kind: 'status'; status: number }
  /** The headers and `after` bytes are sent, then nothing. */
  | { kind: 'stall'; after: number }
  /** The body goes on past the object, chunked (no Content-Length), `extra` bytes more. */
  | { kind: 'oversize'; extra: number }
  /** The Range header is dropped: the server answers 200 with the whole object. */
  | { kind: 'ignore-range' }
  /** The answer waits `ms` before it is asked of the server. */
  | { kind: 'delay'; ms: number }
  /** No answer at all: the request is held open. */
  | { kind: 'silent' }
  /** The whole body, chunked, but never ended: the connection is destroyed after the last byte. */
  | { kind: 'no-end' }

export interface ProxiedRequest {
  path: string
  range: string | undefined
}

export class FaultProxy {
  readonly requests: ProxiedRequest[] = []
  private readonly faults = new Map<string, { fault: Fault; times: number }[]>()
  private server!: Server
  private inFlight = 0
  /** The most requests it held open at once. */
  maxInFlight = 0
  base = ''

  constructor(private readonly upstream: string) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => this.handle(req, res))
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
    return this
  }

  /** The next `times` requests for `path` get `fault` (after any set before for it). */
  fault(path: string, fault: Fault, times = 1): void {
    const list = this.faults.get(path) ?? []
    list.push({ fault, times })
    this.faults.set(path, list)
  }

  /** No more faults for `path`. */
  clear(path: string): void {
    this.faults.delete(path)
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private next(path: string): Fault | undefined {
    const list = this.faults.get(path)
    const first = list?.[0]
    if (!first) return undefined
    if (--first.times === 0) list!.shift()
    return first.fault
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = req.url ?? '/'
    this.requests.push({ path, range: req.headers.range })
    this.inFlight++
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight)
    res.once('close', () => { this.inFlight-- })
    const fault = this.next(path)
    if (fault?.kind === 'status') {
      res.writeHead(fault.status).end()
      return
    }
    if (fault?.kind === 'silent') return
    if (fault?.kind === 'delay') {
      setTimeout(() => this.forward(req, res, path, undefined), fault.ms)
      return
    }
    this.forward(req, res, path, fault)
  }

  private forward(req: IncomingMessage, res: ServerResponse, path: string, fault: Fault | undefined): void {
    const headers: Record<string, string> = {}
    if (req.headers.range && fault?.kind !== 'ignore-range') headers.range = req.headers.range
    const up = request(`${this.upstream}${path}`, { headers }, (answer) => {
      const out = { ...answer.headers }
      if (fault?.kind === 'oversize' || fault?.kind === 'no-end') delete out['content-length']
      res.writeHead(answer.statusCode ?? 502, out)
      let sent = 0
      answer.on('data', (chunk: Buffer) => {
        if (fault?.kind === 'cut' || fault?.kind === 'stall') {
          const room = fault.after - sent
          if (room <= 0) return
          res.write(chunk.subarray(0, room))
          sent += Math.min(room, chunk.length)
          if (sent >= fault.after) {
            answer.destroy()
            if (fault.kind === 'cut') setTimeout(() => res.socket?.destroy(), 20)
          }
          return
        }
        if (fault?.kind === 'wrong-bytes' && sent === 0 && chunk.length > 0) {
          chunk = Buffer.from(chunk)
          chunk[chunk.length >> 1]! ^= 0x20
        }
        sent += chunk.length
        res.write(chunk)
      })
      answer.on('end', () => {
        if (fault?.kind === 'cut' || fault?.kind === 'stall') return
        if (fault?.kind === 'no-end') {
          // Late enough that the client has taken every byte: a body stream errored while chunks wait in it
          // drops them (WHATWG streams), and the fetch would rightly ask for them again. (20 ms was not
          // always enough on a loaded machine.)
          setTimeout(() => res.socket?.destroy(), 250)
          return
        }
        if (fault?.kind === 'oversize') {
          const filler = Buffer.alloc(64 * 1024, 0x61)
          const pump = (left: number) => {
            if (left <= 0 || res.destroyed) return res.end()
            const n = Math.min(left, filler.length)
            if (res.write(filler.subarray(0, n))) pump(left - n)
            else res.once('drain', () => pump(left - n))
          }
          pump(fault.extra)
          return
        }
        res.end()
      })
    })
    up.on('error', () => res.destroy())
    up.end()
  }
}

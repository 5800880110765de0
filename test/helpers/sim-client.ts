/**
 * A websocket client of the venue simulator for its tests: every text it receives kept, and waits on what
 * the simulator's truth says it sent.
 */
import { once } from 'node:events'
import { WebSocket, type ClientOptions } from 'ws'
import type { Channel } from '../../src/formats/record/types.js'
import type { VenueSimulator } from '../../src/sim/venue/simulator.js'
import type { ChecksumCheck, ConnectPlan, FrameClass, SequenceState, VenueAdapter } from '../../src/venues/adapter.js'

/** A websocket client of the simulator that keeps every text it receives. */
export interface Client {
  /** The simulator's id for the connection (c1, c2, ...). */
  id: string
  ws: WebSocket
  texts: string[]
  pings: number
  closed: Promise<{ code: number; reason: string }>
}

export async function connect(sim: VenueSimulator, path: string, options: ClientOptions = {}): Promise<Client> {
  const ws = new WebSocket(sim.wsUrl + path, options)
  const client: Client = {
    id: '', ws, texts: [], pings: 0,
    closed: new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }))),
  }
  ws.on('message', (d) => client.texts.push(d.toString()))
  ws.on('ping', () => client.pings++)
  ws.on('error', () => {})
  await once(ws, 'open')
  // The server accepts a connection before the client sees the handshake's answer: the newest one is this.
  client.id = sim.connections().at(-1)!.id
  return client
}

export async function until(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 2))
  }
}

/** How many texts the truth says were sent to connection `id` (frames and replies). */
export function sentTo(sim: VenueSimulator, id: string): number {
  let n = 0
  for (const r of sim.truth) if ((r.kind === 'frame' && r.to.includes(id)) || (r.kind === 'reply' && r.to === id)) n++
  return n
}

/** Waits until every client has received all that the truth says was sent to it. */
export async function settle(sim: VenueSimulator, clients: Client[]): Promise<void> {
  for (const c of clients) await until(() => c.texts.length >= sentTo(sim, c.id), `${c.id} to receive ${sentTo(sim, c.id)} texts (has ${c.texts.length})`)
}

/** Moves a manual clock by `ms` in steps, the simulator making what is due at each. */
export function advance(sim: VenueSimulator, clock: { advance(ms: number): void }, ms: number, stepMs = 50): void {
  for (let done = 0; done < ms; done += stepMs) {
    clock.advance(Math.min(stepMs, ms - done))
    sim.tick()
  }
}

/** What the recorder makes of a connection's texts: each classified, the books checked, the trade sequences followed. */
export function readAsRecorder(adapter: VenueAdapter, channel: Channel, texts: string[]) {
  const books = adapter.books?.create()
  const classes: FrameClass[] = []
  const checks: ChecksumCheck[] = []
  const states = new Map<string, SequenceState>()
  const verdicts: string[] = []
  for (const text of texts) {
    const c = adapter.classify(channel, Buffer.from(text), false)
    classes.push(c)
    if (c.kind === 'rows') {
      for (const check of adapter.books?.apply(books, c, Buffer.from(text)) ?? []) {
        checks.push(check)
        if (check.expected !== check.computed) adapter.books!.reset(books, check.instrument)
      }
    }
    const spans = c.kind === 'rows' || c.kind === 'data' ? c.sequences : c.kind === 'unrepresentable' ? (c.sequences ?? []) : []
    for (const span of spans) {
      const key = `${span.sequence}:${span.instrument}`
      const v = adapter.sequence(states.get(key), span)
      states.set(key, v.state)
      verdicts.push(v.verdict)
    }
  }
  return { classes, checks, mismatches: checks.filter((c) => c.expected !== c.computed), verdicts }
}


/**
 * A client of the simulator opened and subscribed as the recorder's `plan` does it, labelled `replica`: the
 * plan's requests sent, what the plan answers (Deribit's test requests) answered, until the plan reads its
 * subscription acknowledged.
 */
export async function subscribedAs(sim: VenueSimulator, plan: ConnectPlan, replica: string): Promise<Client> {
  if (!plan.url.startsWith(sim.wsUrl)) throw new Error(`the plan's ${plan.url} is not at the simulator's ${sim.wsUrl}`)
  const path = plan.url.slice(sim.wsUrl.length)
  const c = await connect(sim, `${path}${path.includes('?') ? '&' : '?'}replica=${replica}`)
  if (plan.respond) c.ws.on('message', (d) => { const reply = plan.respond!(Buffer.from(d.toString())); if (reply) c.ws.send(reply) })
  for (const text of plan.send) c.ws.send(text)
  await until(() => c.texts.some((x) => plan.answers!(Buffer.from(x)) === 'subscribed'), `${replica} subscribed`)
  return c
}

/** Each text as a JSON object. */
export const parsed = (texts: string[]) => texts.map((x) => JSON.parse(x) as Record<string, unknown>)

import t from 'tap'
import { captureIO } from './helpers/io.js'
import { PassThrough, Readable, Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { z } from 'zod'
import { PipeError } from '../src/core/errors.js'
import { FindingSink } from '../src/core/findings.js'
import { definePipeline } from '../src/core/pipeline.js'
import { Registry } from '../src/core/registry.js'
import { runPipeline, runStageList } from '../src/core/runner.js'
import { defineStage, type StageDef } from '../src/core/stage.js'

const io = captureIO

/** A registry of small stages whose streams we keep, to see what the runner did to them. */
function testRegistry(failAt: number) {
  const created: Record<string, Readable | Writable> = {}
  const numbers = defineStage({
    name: 'numbers', kind: 'source', summary: 'counts up', takes: 'none', gives: 'any',
    options: z.object({ count: z.number().int().default(100) }),
    create({ count }) {
      let i = 0
      const s = new Readable({ objectMode: true, read() { this.push(i < count ? i++ : null) } })
      created.numbers = s
      return s
    },
  })
  const failing = defineStage({
    name: 'explode', kind: 'transform', summary: 'fails at an item', takes: 'any', gives: 'any', options: z.object({}),
    create() {
      return async function* (source: AsyncIterable<unknown>) {
        for await (const n of source) {
          if (n === failAt) throw new PipeError('test.boom', 'item is bad', { location: { file: 'items.txt', line: failAt + 1, offset: failAt * 10 } })
          yield n
        }
      }
    },
  })
  const collect = defineStage({
    name: 'collect', kind: 'sink', summary: 'keeps items', takes: 'any', gives: 'none', options: z.object({}),
    create() {
      const w = new Writable({ objectMode: true, write(_c, _e, cb) { setImmediate(cb) } })
      created.collect = w
      return w
    },
  })
  const registry = new Registry()
  for (const s of [numbers, failing, collect]) registry.addStage(s as unknown as StageDef)
  return { registry, created }
}

t.test('an error in the middle destroys every stage and names the stage and location', async (t) => {
  const { registry, created } = testRegistry(50)
  const { settings, err } = io()
  const result = await runStageList(registry, 'test', [{ stage: 'numbers' }, { stage: 'explode' }, { stage: 'collect' }], settings)
  t.equal(result.exitCode, 1)
  t.equal(result.error?.code, 'test.boom')
  t.equal(result.error?.stage, 'explode')
  t.match(err(), /^pipe: \[explode\] items\.txt, line 51, byte 500: item is bad \(test\.boom\)\n$/)
  t.ok(created.numbers!.destroyed, 'source destroyed')
  t.ok(created.collect!.destroyed, 'sink destroyed')
  t.equal(result.stages[1]!.items_in, 51, 'counted what reached the failing stage, the failing item too')
})

t.test('the JSON summary carries the error with its code, stage and location', async (t) => {
  const { registry } = testRegistry(3)
  const { settings, out } = io(true)
  await runStageList(registry, 'test', [{ stage: 'numbers' }, { stage: 'explode' }, { stage: 'collect' }], settings)
  const doc = JSON.parse(out())
  t.equal(doc.ok, false)
  t.same(doc.error, { code: 'test.boom', message: 'item is bad', stage: 'explode', location: { file: 'items.txt', line: 4, offset: 30 } })
})

t.test('a clean run counts items between stages and reports ok', async (t) => {
  const { registry } = testRegistry(-1)
  const { settings, out } = io(true)
  const result = await runStageList(registry, 'test', [{ stage: 'numbers', options: { count: 7 } }, { stage: 'explode' }, { stage: 'collect' }], settings)
  t.equal(result.exitCode, 0)
  const doc = JSON.parse(out())
  t.equal(doc.ok, true)
  t.same(doc.findings, [])
  t.same(doc.stages.map((s: { items_in: number; items_out: number }) => [s.items_in, s.items_out]), [[0, 7], [7, 7], [7, 0]])
})

t.test('validation names the JSON path of the bad field, with exit 2', async (t) => {
  const { registry } = testRegistry(-1)
  const cases: [unknown[], RegExp][] = [
    [[{ stage: 'numbers' }, { stage: 'nope' }, { stage: 'collect' }], /stages\[1\]\.stage: unknown stage "nope"/],
    [[{ stage: 'numbers', options: { count: 'x' } }, { stage: 'collect' }], /stages\[0\]\.options\.count: /],
    [[{ stage: 'numbers', options: { cuont: 1 } }, { stage: 'collect' }], /stages\[0\]\.options\.cuont: unknown option/],
    [[{ stage: 'collect' }, { stage: 'numbers' }], /stages\[0\]\.stage: "collect" is a sink/],
    [[{ stage: 'numbers' }], /a pipeline needs a source and a sink/],
  ]
  for (const [uses, message] of cases) {
    const { settings, err } = io()
    const result = await runStageList(registry, 'test', uses as never, settings)
    t.equal(result.exitCode, 2)
    t.match(err(), message)
  }
})

t.test('pipeline options are checked against the schema and named as flags', async (t) => {
  const { registry } = testRegistry(-1)
  const def = definePipeline({ name: 'p', summary: 's', options: z.object({ count: z.number().int().min(1) }), stages: (o) => [{ stage: 'numbers', options: { count: o.count } }, { stage: 'collect' }] })
  const { settings, err } = io()
  const result = await runPipeline(registry, def as never, { count: 0 }, settings)
  t.equal(result.exitCode, 2)
  t.match(err(), /--count: /)
})

t.test('an abort signal stops the run cleanly', async (t) => {
  const { registry, created } = testRegistry(-1)
  const controller = new AbortController()
  const { settings } = io()
  const running = runStageList(registry, 'test', [{ stage: 'numbers', options: { count: 1e9 } }, { stage: 'collect' }], { ...settings, signal: controller.signal })
  await sleep(50)
  controller.abort()
  const result = await running
  t.not(result.exitCode, 0)
  t.ok(created.numbers!.destroyed)
})

t.test('notes: text mode prints the first textLimit after "note: " and counts the rest; JSON mode counts them only', async (t) => {
  const text = new PassThrough()
  const sink = new FindingSink({ json: false, out: text, textLimit: 2 })
  for (let n = 1; n <= 3; n++) sink.note({ line: n, code: 'x.note', detail: `note ${n}` })
  sink.add({ line: 9, code: 'x.found', detail: 'a finding' })
  t.same([sink.notes, sink.hiddenNotes, sink.count, sink.hidden], [3, 1, 1, 0])
  t.equal(text.read()?.toString(), 'note: line 1: x.note: note 1\nnote: line 2: x.note: note 2\nline 9: x.found: a finding\n')
  const json = new PassThrough()
  const quiet = new FindingSink({ json: true, out: json })
  quiet.note({ line: 1, code: 'x.note', detail: 'a note' })
  t.same([quiet.notes, quiet.hiddenNotes], [1, 0])
  t.equal(json.read()?.toString(), '{"findings":[', 'no note in the findings array')
})

import { z } from 'zod'
import { compareDecimals, parseDecimalText, type ScaledDecimal } from '../../codec/decimal-text.js'
import { PipeError, UsageError } from '../../core/errors.js'
import { RowBatch, type Row, type RowValue } from '../../core/items.js'
import { defineStage } from '../../core/stage.js'
import { decimalOf, parseTimeText } from './row-values.js'

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()])
const bound = z.union([z.string(), z.number()])
const BOUNDS = ['gt', 'gte', 'lt', 'lte'] as const
type Kind = 'decimal' | 'time' | 'string'

const condition = z.object({
  field: z.string().min(1),
  eq: scalar.optional(),
  in: z.array(scalar).min(1).optional(),
  gt: bound.optional(),
  gte: bound.optional(),
  lt: bound.optional(),
  lte: bound.optional(),
  as: z.enum(['decimal', 'time', 'string']).optional(),
}).strict()
type Condition = z.infer<typeof condition>

/** How a condition's ranges compare: as it says, else as its bounds read (a number or decimal text: exactly; a time; else text). */
function kindOf(c: Condition, where: string): Kind | null {
  const bounds = BOUNDS.map((b) => c[b]).filter((b) => b !== undefined)
  if (c.as) return c.as
  if (bounds.length === 0) return null
  const kinds = new Set(bounds.map((b): Kind => (typeof b === 'number' ? 'decimal' : parseTimeText(b) !== null ? 'time' : parseDecimalText(b) !== null ? 'decimal' : 'string')))
  if (kinds.size > 1) throw new UsageError('usage.bad-option', `its bounds read as ${[...kinds].join(' and ')}: say which with "as"`, { location: { field: where } })
  return [...kinds][0]!
}

type Comparable = ScaledDecimal | bigint | string
const compare = (kind: Kind, a: Comparable, b: Comparable): number =>
  kind === 'decimal' ? compareDecimals(a as ScaledDecimal, b as ScaledDecimal) : a < b ? -1 : a > b ? 1 : 0

function comparable(kind: Kind, value: RowValue): Comparable | null {
  if (kind === 'decimal') return typeof value === 'string' || typeof value === 'number' ? decimalOf(value) : null
  if (kind === 'time') return typeof value === 'string' ? parseTimeText(value) : null
  return typeof value === 'string' ? value : null
}

/** One condition as a test of a row; `row` numbers the row for an error. */
function compile(c: Condition, where: string): (row: Row, rowNumber: number) => boolean {
  const kind = kindOf(c, where)
  if (c.eq === undefined && c.in === undefined && kind === null) throw new UsageError('usage.bad-option', 'a condition needs eq, in, gt, gte, lt or lte', { location: { field: where } })
  const asKind = (v: RowValue, what: string): Comparable => {
    const x = comparable(kind!, v)
    if (x === null) throw new UsageError('usage.bad-option', `${JSON.stringify(v)} is not a ${kind}`, { location: { field: `${where}.${what}` } })
    return x
  }
  // With "as", eq and in compare the same way as the ranges: "65000.10" equals "65000.1" as a decimal.
  const equalsAny = c.eq === undefined && c.in === undefined ? null
    : c.as ? [...(c.eq !== undefined ? [c.eq] : []), ...(c.in ?? [])].map((v, i) => asKind(v, c.eq !== undefined && i === 0 ? 'eq' : 'in'))
    : null
  const literal = c.eq !== undefined || c.in !== undefined ? [...(c.eq !== undefined ? [c.eq] : []), ...(c.in ?? [])] : null
  const ranges = BOUNDS.filter((b) => c[b] !== undefined).map((b) => [b, asKind(c[b]!, b)] as const)
  return (row, rowNumber) => {
    const value = Object.hasOwn(row, c.field) ? row[c.field]! : null
    let x: Comparable | null = null
    if (kind !== null && (ranges.length > 0 || equalsAny)) {
      // A null is no value: it is in no range, as in SQL. Any other value must read as the kind.
      if (value === null) return false
      x = comparable(kind, value)
      if (x === null) throw new PipeError('rows.filter-value', `field "${c.field}": ${JSON.stringify(value).slice(0, 80)} is not a ${kind}`, { location: { row: rowNumber } })
    }
    if (equalsAny) {
      if (!equalsAny.some((e) => compare(kind!, x!, e) === 0)) return false
    } else if (literal && !literal.some((e) => e === value)) return false
    for (const [b, limit] of ranges) {
      const sign = compare(kind!, x!, limit)
      if (b === 'gt' ? sign <= 0 : b === 'gte' ? sign < 0 : b === 'lt' ? sign >= 0 : sign > 0) return false
    }
    return true
  }
}

export const filterStage = defineStage({
  name: 'filter',
  kind: 'transform',
  summary: 'Keeps the rows that meet every condition: equality, membership, ranges on decimals (exactly), times or text',
  takes: 'rows',
  gives: 'rows',
  options: z.object({
    where: z.array(condition).min(1).describe('conditions, all of which a row must meet: {"field", "eq"|"in"|"gt"|"gte"|"lt"|"lte", "as"?: "decimal"|"time"|"string"}; a range compares as its bound reads unless "as" says'),
  }),
  create({ where }) {
    const tests = where.map((c, i) => compile(c, `where[${i}]`))
    return async function* (source: AsyncIterable<unknown>) {
      let seen = 0
      for await (const item of source) {
        const batch = item as RowBatch
        const kept: Row[] = []
        for (const row of batch.rows) {
          seen++
          if (tests.every((t) => t(row, seen))) kept.push(row)
        }
        if (kept.length > 0) yield new RowBatch(kept, batch.byteCount)
      }
    }
  },
})

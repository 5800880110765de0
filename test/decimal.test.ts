import t from 'tap'
import {
  DECIMAL_BYTES,
  compareDecimal16,
  encodeDecimalTextInto,
  isDecimal38Text,
  DECIMAL38_MAX_UNSCALED, DECIMAL38_MIN_UNSCALED, decimalToText, decodeDecimal16, encodeDecimal16, encodeDecimal16Into,
  isDecimal38, jsonNumberToPlainDecimal, toDecimal38_18,
} from '../src/formats/record/decimal.js'
import { seededRandom } from '../src/sim/random.js'

const E18 = 10n ** 18n
const MAX = 10n ** 38n - 1n

/** Independent oracle: 16-byte two's complement as hex via 2^128 arithmetic. */
function hex16(v: bigint): string {
  return (v < 0n ? (1n << 128n) + v : v).toString(16).padStart(32, '0')
}
const toHex = (b: Uint8Array): string => Buffer.from(b).toString('hex')

t.test('plain decimals parse to value x 10^18', async (t) => {
  const cases: [string, bigint][] = [
    ['0', 0n],
    ['1', E18],
    ['61234.56000000', 61234_560000000000000000n],
    ['0.00120000', 1_200_000_000_000_000n],
    ['0.000000000000000001', 1n],
    ['-0.000000000000000001', -1n],
    ['-61234.5', -61234_500000000000000000n],
    ['007.5', 7_500000000000000000n],
    ['12345678901234567890', 12345678901234567890n * E18],
  ]
  for (const [text, v] of cases) t.equal(toDecimal38_18(text), v, text)
})

t.test('18 fractional digits are held, 19 are not unless the 19th is a trailing zero', async (t) => {
  t.equal(toDecimal38_18('0.123456789012345678'), 123456789012345678n)
  t.equal(toDecimal38_18('0.1234567890123456789'), null)
  t.equal(toDecimal38_18('0.0000000000000000001'), null)
  t.equal(toDecimal38_18('0.1234567890123456780'), 123456789012345678n)
  t.equal(toDecimal38_18('1.000000000000000000000000000000'), E18, 'trailing zeros beyond 18 digits carry no value')
  t.equal(toDecimal38_18('0.0000000000000000010'), 1n)
  t.equal(toDecimal38_18('5.10'), toDecimal38_18('5.1'))
})

t.test('magnitude bound: below 10^20, i.e. unscaled below 10^38', async (t) => {
  t.equal(toDecimal38_18('99999999999999999999.999999999999999999'), MAX, '10^20 - 10^-18 is the largest value')
  t.equal(toDecimal38_18('-99999999999999999999.999999999999999999'), -MAX)
  t.equal(toDecimal38_18('100000000000000000000'), null, '10^20 is out of range')
  t.equal(toDecimal38_18('-100000000000000000000'), null)
  t.equal(toDecimal38_18('100000000000000000000.000'), null)
  t.equal(toDecimal38_18('99999999999999999999.9999999999999999999'), null, '19 fractional digits near the bound')
  t.equal(toDecimal38_18('00000099999999999999999999.5'), 99999999999999999999_500000000000000000n, 'leading zeros do not count')
  t.equal(DECIMAL38_MAX_UNSCALED, MAX)
  t.equal(DECIMAL38_MIN_UNSCALED, -MAX)
  t.ok(isDecimal38(MAX))
  t.notOk(isDecimal38(MAX + 1n))
  t.notOk(isDecimal38(-MAX - 1n))
})

t.test('negative zero is zero', async (t) => {
  t.equal(toDecimal38_18('-0'), 0n)
  t.equal(toDecimal38_18('-0.000'), 0n)
  t.equal(decimalToText(toDecimal38_18('-0')!), '0')
})

t.test('anything but a plain decimal is refused', async (t) => {
  for (const s of ['', '-', '.', '.5', '5.', '-.5', '+1', ' 1', '1 ', '1e5', '1E5', '1e-5', '0x10', 'NaN', 'Infinity', '-Infinity',
    '1_000', '1,5', '1.2.3', '--1', '\uff11', '1\n', '٣']) {
    t.equal(toDecimal38_18(s), null, JSON.stringify(s))
  }
})

t.test('canonical text', async (t) => {
  const cases: [bigint, string][] = [
    [0n, '0'],
    [E18, '1'],
    [1n, '0.000000000000000001'],
    [-1n, '-0.000000000000000001'],
    [1_200_000_000_000_000n, '0.0012'],
    [61234_560000000000000000n, '61234.56'],
    [-61234_500000000000000000n, '-61234.5'],
    [MAX, '99999999999999999999.999999999999999999'],
    [-MAX, '-99999999999999999999.999999999999999999'],
    [10n ** 40n, '10000000000000000000000'],
  ]
  for (const [v, s] of cases) t.equal(decimalToText(v), s, s)
})

t.test('round trips: text -> unscaled -> canonical text -> unscaled', async (t) => {
  const rand = seededRandom(42)
  let checked = 0
  for (let i = 0; i < 5000; i++) {
    // Random unscaled values with random digit counts across the whole range.
    const digits = 1 + Math.floor(rand() * 38)
    let s = ''
    for (let k = 0; k < digits; k++) s += Math.floor(rand() * 10)
    let v = BigInt(s)
    if (rand() < 0.5) v = -v
    const text = decimalToText(v)
    if (toDecimal38_18(text) !== v) t.fail(`round trip of ${v} via ${text}`)
    // Adding trailing zeros never changes the value; the canonical text never ends in a zero fraction digit.
    if (text.includes('.') && (toDecimal38_18(text + '000') !== v || text.endsWith('0'))) t.fail(`canonical form of ${v}: ${text}`)
    checked++
  }
  t.equal(checked, 5000)
  for (const s of ['61234.56000000', '0.00120000', '-0.5', '10.000']) {
    const v = toDecimal38_18(s)!
    t.equal(toDecimal38_18(decimalToText(v)), v, s)
  }
})

t.test('16-byte big-endian two\'s complement', async (t) => {
  const values = [0n, 1n, -1n, 255n, 256n, -256n, MAX, -MAX, E18, -E18, 61234_560000000000000000n, (1n << 64n) - 1n, -(1n << 64n), 1n << 63n, -(1n << 63n)]
  for (const v of values) {
    const b = encodeDecimal16(v)
    t.equal(b.length, 16)
    t.equal(toHex(b), hex16(v), `bytes of ${v}`)
    t.equal(decodeDecimal16(b), v, `round trip ${v}`)
  }
  t.equal(toHex(encodeDecimal16(-1n)), 'ff'.repeat(16))
  t.equal(toHex(encodeDecimal16(1n)), '00'.repeat(15) + '01')
  t.equal(toHex(encodeDecimal16(MAX)), '4b3b4ca85a86c47a098a223fffffffff', '10^38 - 1')
  t.equal(toHex(encodeDecimal16(-MAX)), 'b4c4b357a5793b85f675ddc000000001', '-(10^38 - 1)')
  t.throws(() => encodeDecimal16(MAX + 1n), RangeError)
  t.throws(() => encodeDecimal16(-MAX - 1n), RangeError)
  // Decoding reads any int128 (a verifier checks the range itself).
  t.equal(decodeDecimal16(Uint8Array.from(Buffer.from('80' + '00'.repeat(15), 'hex'))), -(1n << 127n))
  t.equal(decodeDecimal16(Uint8Array.from(Buffer.from('7f' + 'ff'.repeat(15), 'hex'))), (1n << 127n) - 1n)
  t.notOk(isDecimal38(decodeDecimal16(Uint8Array.from(Buffer.from('7f' + 'ff'.repeat(15), 'hex')))))
  // Into a larger buffer at an offset, and from a subarray view.
  const buf = new Uint8Array(40).fill(0xaa)
  encodeDecimal16Into(-MAX, buf, 7)
  t.equal(buf[6], 0xaa)
  t.equal(buf[23], 0xaa)
  t.equal(decodeDecimal16(buf, 7), -MAX)
  t.equal(decodeDecimal16(buf.subarray(7, 23)), -MAX)
  t.throws(() => encodeDecimal16Into(1n, buf, 30), RangeError)
  t.throws(() => decodeDecimal16(buf, 30), RangeError)
  // Random values across the range.
  const rand = seededRandom(7)
  for (let i = 0; i < 2000; i++) {
    let s = ''
    const digits = 1 + Math.floor(rand() * 38)
    for (let k = 0; k < digits; k++) s += Math.floor(rand() * 10)
    const v = rand() < 0.5 ? -BigInt(s) : BigInt(s)
    const b = encodeDecimal16(v)
    if (toHex(b) !== hex16(v) || decodeDecimal16(b) !== v) t.fail(`value ${v}`)
  }
})

t.test('JSON number source text to plain decimal (for venues that send numbers)', async (t) => {
  const cases: [string, string | null][] = [
    ['0', '0'], ['-0', '-0'], ['12.50', '12.50'], ['1e5', '100000'], ['1E5', '100000'], ['1.5e-7', '0.00000015'],
    ['-1.5e-7', '-0.00000015'], ['25E2', '2500'], ['1.25e1', '12.5'], ['1.25e+2', '125'], ['0.10e1', '1.0'], ['123e-2', '1.23'],
    ['1e-18', '0.000000000000000001'], ['01', null], ['.5', null], ['1.', null], ['+1', null], ['1e', null], ['0x1', null],
    ['1e1000000', null],
  ]
  for (const [src, want] of cases) t.equal(jsonNumberToPlainDecimal(src), want, src)
  t.equal(toDecimal38_18(jsonNumberToPlainDecimal('1.5e-7')!), 150_000_000_000n)
  t.equal(toDecimal38_18(jsonNumberToPlainDecimal('1e-19')!), null, 'still refused when DECIMAL(38, 18) cannot hold it')
})

t.test('text straight to 16 bytes equals the bigint path, and byte order equals value order', async (t) => {
  const rand = seededRandom(38)
  const digits = (n: number) => Array.from({ length: n }, () => String(Math.floor(rand() * 10))).join('')
  const texts = ['0', '-0', '-0.000', '1', '-1', '0.000000000000000001', '-0.000000000000000001', '99999999999999999999.999999999999999999',
    '-99999999999999999999.999999999999999999', '100000000000000000000', '0.0000000000000000001', '1.0000000000000000000000', '007.5', '.5', '5.', '1e5', '', '-', '+1', '1.2.3']
  for (let i = 0; i < 3000; i++) {
    const int = digits(1 + Math.floor(rand() * 22))
    const frac = rand() < 0.2 ? '' : '.' + digits(1 + Math.floor(rand() * 20))
    texts.push((rand() < 0.3 ? '-' : '') + int + frac)
  }
  let agree = 0
  const values: { bytes: Uint8Array; value: bigint }[] = []
  for (const text of texts) {
    const expected = toDecimal38_18(text)
    const out = new Uint8Array(DECIMAL_BYTES + 3).fill(0xaa)
    const ok = encodeDecimalTextInto(text, out, 3)
    if (isDecimal38Text(text) !== (expected !== null)) t.fail(`isDecimal38Text(${JSON.stringify(text)}) disagrees with toDecimal38_18`)
    if (expected === null) {
      if (!ok && out.every((b) => b === 0xaa)) agree++
      else t.fail(`${JSON.stringify(text)} is refused by toDecimal38_18 but encoded`)
      continue
    }
    if (ok && Buffer.from(out.subarray(3)).equals(Buffer.from(encodeDecimal16(expected)))) agree++
    else t.fail(`${JSON.stringify(text)}: ${Buffer.from(out.subarray(3)).toString('hex')} vs ${Buffer.from(encodeDecimal16(expected)).toString('hex')}`)
    values.push({ bytes: out.subarray(3), value: expected })
  }
  t.equal(agree, texts.length, 'every text: same bytes, or refused by both')
  let ordered = 0
  for (let i = 1; i < values.length; i++) {
    const a = values[i - 1]!
    const b = values[i]!
    const byBytes = Math.sign(compareDecimal16(a.bytes, 0, b.bytes, 0))
    const byValue = a.value < b.value ? -1 : a.value > b.value ? 1 : 0
    if (byBytes === byValue) ordered++
  }
  t.equal(ordered, values.length - 1, 'compareDecimal16 orders as the values do')
})

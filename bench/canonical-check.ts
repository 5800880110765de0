/**
 * Throughput of the byte-level canonical-JSON check and the envelope rule on
 * realistic raw-file lines, against JSON.parse of the same lines (a baseline
 * measured in the same run). Run: npx tsx bench/canonical-check.ts
 */
import { CanonicalChecker } from '../src/formats/json/canonical-check.js';
import { checkEnvelope, newEnvelopeResult } from '../src/formats/record/envelope.js';

const LINE =
  '{"exchange_time":"2026-10-03T14:00:00.123000000Z","payload":"{\\"e\\":\\"trade\\",\\"E\\":1759500000123,\\"s\\":\\"BTCUSDT\\",\\"t\\":5123456789,\\"p\\":\\"61234.56000000\\",\\"q\\":\\"0.00120000\\",\\"T\\":1759500000123,\\"m\\":true,\\"M\\":true}","payload_encoding":"text","receipts":[{"clock_error_bound":812345,"clock_offset":-21000,"connection":"a-17","receive_time":"2026-10-03T14:00:00.125123456Z","replica":"a"},{"clock_error_bound":790001,"clock_offset":15000,"connection":"b-3","receive_time":"2026-10-03T14:00:00.126001999Z","replica":"b"}]}';

// 64 MB of lines with small variations, newline-separated, in one buffer.
const lines: string[] = [];
for (let i = 0; i < 1000; i++) {
  lines.push(LINE.replace('5123456789', String(5123456789 + i)).replace('125123456', String(125123456 + i).padStart(9, '0')));
}
const text = lines.join('\n') + '\n';
const one = Buffer.from(text);
const copies = Math.ceil((Number(process.env.MB ?? 64) << 20) / one.length);
const buf = Buffer.alloc(one.length * copies);
for (let i = 0; i < copies; i++) one.copy(buf, i * one.length);
const starts: number[] = [];
const ends: number[] = [];
for (let p = 0; p < buf.length; ) {
  const nl = buf.indexOf(10, p);
  starts.push(p);
  ends.push(nl);
  p = nl + 1;
}
const n = starts.length;
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const mb = buf.length / 1e6;

// Best of ROUNDS rounds, by wall clock and by this process's user CPU time
// (the latter is steadier on a shared machine: it excludes time spent
// descheduled by other processes).
function time(label: string, fn: () => number): number {
  let bestWall = Infinity;
  let bestCpu = Infinity;
  for (let round = 0; round < ROUNDS; round++) {
    const c0 = process.cpuUsage().user;
    const t0 = process.hrtime.bigint();
    const bad = fn();
    const wall = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = (process.cpuUsage().user - c0) / 1e6;
    if (bad !== 0) throw new Error(`${label}: ${bad} lines failed`);
    bestWall = Math.min(bestWall, wall);
    bestCpu = Math.min(bestCpu, cpu);
  }
  console.log(
    `${label.padEnd(22)} ${(mb / bestCpu).toFixed(0).padStart(5)} MB/s CPU (${((bestCpu / n) * 1e6).toFixed(2)} us/line)` +
      `  ${(mb / bestWall).toFixed(0).padStart(5)} MB/s wall`,
  );
  return mb / bestCpu;
}

const checker = new CanonicalChecker();
const result = newEnvelopeResult();
const base = time('JSON.parse per line', () => {
  let bad = 0;
  for (let i = 0; i < n; i++) if (typeof JSON.parse(buf.toString('utf8', starts[i], ends[i])) !== 'object') bad++;
  return bad;
});
const c = time('canonical check', () => {
  let bad = 0;
  for (let i = 0; i < n; i++) if (checker.check(buf, starts[i]!, ends[i]!) !== 0) bad++;
  return bad;
});
const e = time('checkEnvelope', () => {
  let bad = 0;
  for (let i = 0; i < n; i++) if (!checkEnvelope(buf, starts[i]!, ends[i]!, result)) bad++;
  return bad;
});
console.log(`${n} lines of ${(buf.length / n).toFixed(0)} bytes; ratio to JSON.parse: check ${(c / base).toFixed(2)}x, envelope ${(e / base).toFixed(2)}x`);

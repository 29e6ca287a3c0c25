// A separate writer process for storage tests. Usage:
//   node writer-child.js <dataDir> <market> <startMs> <count|-1> [stepMs] [fsyncMs] [paceMs]
// Prints `ready <lastSeq>` after opening, then `ack <seq>` for every acknowledged append, and
// `done` when `count` records are acknowledged (count -1: forever, until killed). Record content
// is `mixed(recv_ts, seq)` so the parent can check each record's bytes.

// Imported from its module, not index.js: a child that starts 20+ times should not load Parquet.
import { openWriter } from '../../../src/storage/log/open-writer.js';
import { mixed } from './records.js';

const [dataDir, market, startArg, countArg, stepArg = '1', fsyncArg = '5', paceArg = '0'] = process.argv.slice(2);
const key = { family: 'coin' as const, stream: 'books' as const, market };
const count = Number(countArg);
const step = Number(stepArg);
const pace = Number(paceArg);

const w = await openWriter(dataDir, key, { fsyncIntervalMs: Number(fsyncArg) });
const last = w.lastRecord();
let seq = last ? last.seq : 0;
let t = last ? last.recv_ts + step : Number(startArg);
process.stdout.write(`ready ${seq}\n`);
let acked = 0;
const inflight = new Set<Promise<unknown>>();
for (let i = 0; count < 0 || i < count; i++) {
  const n = ++seq;
  const p = w.append(mixed(t, n), { checkpoint: n % 50 === 0 }).then((r) => {
    if (r.seq !== n) throw new Error(`seq ${r.seq} != ${n}`);
    process.stdout.write(`ack ${r.seq}\n`);
    acked++;
    inflight.delete(p);
  });
  inflight.add(p);
  t += step;
  if (pace > 0) await new Promise((r) => setTimeout(r, pace));
  else if (inflight.size >= 64 || w.backpressure) await Promise.race(inflight);
}
await Promise.all(inflight);
await w.close();
process.stdout.write(`done ${acked}\n`);

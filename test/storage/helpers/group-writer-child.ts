// A writer process that appends through appendMany, for the group-commit durability test. Usage:
//   node group-writer-child.js <dataDir> <market> <startMs>
// Prints `ready <lastSeq>` after opening, then `ack <firstSeq> <lastSeq>` for every acknowledged
// group (1..40 records of `mixed(recv_ts, seq)`, 1 ms apart, every 50th seq a checkpoint), until killed.

import { openWriter } from '../../../src/storage/log/open-writer.js';
import type { Observation } from '../../../src/schema/observation.js';
import { mixed } from './records.js';

const [dataDir, market, startArg] = process.argv.slice(2);
const w = await openWriter(dataDir, { family: 'coin', stream: 'books', market }, { fsyncIntervalMs: 3 });
const last = w.lastRecord();
let seq = last ? last.seq : 0;
let t = last ? last.recv_ts + 1 : Number(startArg);
process.stdout.write(`ready ${seq}\n`);
const inflight = new Set<Promise<unknown>>();
for (;;) {
  const size = 1 + Math.floor(Math.random() * 40);
  const first = seq + 1;
  const group: Observation[] = [];
  const cps: boolean[] = [];
  for (let k = 0; k < size; k++, t++) {
    group.push(mixed(t, ++seq));
    cps.push(seq % 50 === 0);
  }
  const lastSeq = seq;
  const p = w.appendMany(group, { checkpoint: cps }).then((recs) => {
    if (recs.length !== size || recs[0].seq !== first || recs[size - 1].seq !== lastSeq) throw new Error('bad seqs');
    process.stdout.write(`ack ${first} ${lastSeq}\n`);
    inflight.delete(p);
  });
  inflight.add(p);
  if (inflight.size >= 8 || w.backpressure) await Promise.race(inflight);
}

// A separate process that appends to one books log, driven by JSON lines on stdin, so stream tests
// prove cross-process tailing (the server never shares memory with the writer). Each command is
// answered with one line on stdout: the seq of the last record appended (after fsync).
// Usage: node stream-writer-child.js <dataDir> <family> <market>

import { createInterface } from 'node:readline';
import { openWriter } from '../../src/storage/index.js';
import type { Family, Observation } from '../../src/schema/observation.js';

type Command =
  | { op: 'append'; obs: Observation[]; checkpoint?: boolean }
  /** n deltas on one token, alternating the size of one bid level; recv times from `t0`, 1 ms apart. */
  | { op: 'deltas'; n: number; token: string; t0: number; price?: string }
  | { op: 'close' };

const [dataDir, family, market] = process.argv.slice(2);
const w = await openWriter(dataDir, { family: family as Family, stream: 'books', market }, { fsyncIntervalMs: 2 });

const rl = createInterface({ input: process.stdin });
let chain = Promise.resolve();
rl.on('line', (line) => {
  chain = chain
    .then(async () => {
      const cmd = JSON.parse(line) as Command;
      let last = w.lastRecord()?.seq ?? 0;
      if (cmd.op === 'append') {
        for (const o of cmd.obs) last = (await w.append(o, { checkpoint: o.type === 'book_checkpoint' || cmd.checkpoint })).seq;
      } else if (cmd.op === 'deltas') {
        const pending: Promise<{ seq: number }>[] = [];
        for (let i = 0; i < cmd.n; i++) {
          const size = String(100 + (i % 50));
          pending.push(
            w.append({
              type: 'book_delta',
              recv_ts: cmd.t0 + i,
              source_ts: null,
              token_id: cmd.token,
              changes: [{ side: 'bid', price: cmd.price ?? '0.40', size }],
            }),
          );
          if (w.backpressure) await w.drained();
        }
        for (const p of pending) last = (await p).seq;
      } else if (cmd.op === 'close') {
        await w.close();
        process.stdout.write('closed\n');
        process.exit(0);
      }
      process.stdout.write(`${last}\n`);
    })
    .catch((err: unknown) => {
      process.stdout.write(`error ${(err as Error).message}\n`);
    });
});
process.stdout.write('ready\n');

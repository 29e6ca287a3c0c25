// Read-ahead of a forward pass: the items come out unchanged, the next one is requested before the
// current one is handed out (never more than one ahead), stopping early waits for the request in
// flight and closes the source, and a failure ahead is thrown in its turn, never left unhandled.

import t from 'tap';
import { readAhead } from '../../src/storage/read/read-ahead.js';

async function* counted(n: number, log: string[], failAt = -1): AsyncGenerator<number> {
  try {
    for (let i = 0; i < n; i++) {
      log.push(`read ${i}`);
      await new Promise((ok) => setImmediate(ok));
      if (i === failAt) throw new Error(`disk failed at ${i}`);
      yield i;
    }
  } finally {
    log.push('closed');
  }
}

t.test('gives every item in order, with the next one requested before the current one is handed out', async (t) => {
  const log: string[] = [];
  const seen: string[] = [];
  for await (const x of readAhead(counted(4, log))) seen.push(`${x} after ${log.filter((l) => l.startsWith('read')).length} reads`);
  t.same(seen, ['0 after 2 reads', '1 after 3 reads', '2 after 4 reads', '3 after 4 reads']);
  t.equal(log[log.length - 1], 'closed');
});

t.test('stopping early waits for the read in flight, then closes the source', async (t) => {
  const log: string[] = [];
  for await (const x of readAhead(counted(10, log))) if (x === 1) break;
  t.same(log, ['read 0', 'read 1', 'read 2', 'closed'], 'one read ahead, then closed');
});

t.test('a failure of the read ahead is thrown when its item is due, after the items before it', async (t) => {
  const log: string[] = [];
  let unhandled = 0;
  const onUnhandled = (): void => void unhandled++;
  process.on('unhandledRejection', onUnhandled);
  t.teardown(() => void process.off('unhandledRejection', onUnhandled));
  const got: number[] = [];
  await t.rejects(async () => {
    for await (const x of readAhead(counted(5, log, 2))) {
      got.push(x);
      await new Promise((ok) => setTimeout(ok, 20)); // the failing read settles while the consumer works
    }
  }, /disk failed at 2/);
  t.same(got, [0, 1]);
  t.equal(unhandled, 0, 'no unhandled rejection while the failure waited');
  t.ok(log.includes('closed'));
});

t.test('an empty source is an empty pass', async (t) => {
  const log: string[] = [];
  const got: number[] = [];
  for await (const x of readAhead(counted(0, log))) got.push(x);
  t.same(got, []);
  t.same(log, ['closed']);
});

// The recorders' LogSink over the real storage engine: call order is append order (also while a
// writer is still opening), a stepped-back clock is clamped for live recording and refused for
// imports (reported, never thrown), and settle/close leave everything readable.

import t from 'tap';
import { LogSink } from '../../src/recorders/sink.js';
import type { Trade } from '../../src/schema/observation.js';
import type { LogKey } from '../../src/storage/types.js';
import { readLog, tempDir } from './helpers.js';

const key: LogKey = { family: 'coin', stream: 'books', market: 'sink-test' };
const trade = (recv: number, price = '0.5'): Trade => ({ type: 'trade', recv_ts: recv, source_ts: null, token_id: 'T', price });

t.test('writes issued before the writer opens keep their order', async (t) => {
  const dir = tempDir();
  const sink = new LogSink(dir, { monotonic: true });
  for (let i = 0; i < 200; i++) sink.write(key, trade(1_800_000_000_000 + i, (i / 1000).toFixed(3)));
  await sink.settle();
  await sink.close();
  const recs = await readLog(dir, 'coin', 'books', 'sink-test');
  t.equal(recs.length, 200);
  t.same(recs.map((r) => (r as Trade).price), Array.from({ length: 200 }, (_, i) => (i / 1000).toFixed(3)));
  t.same(recs.map((r) => r.seq), Array.from({ length: 200 }, (_, i) => recs[0].seq + i));
});

t.test('live recording clamps a clock that stepped back; an import gets the error instead', async (t) => {
  const dir = tempDir();
  const live = new LogSink(dir, { monotonic: true });
  await live.append(key, trade(1_800_000_001_000));
  const r = await live.append(key, trade(1_800_000_000_000));
  t.equal(r?.recv_ts, 1_800_000_001_000, 'clamped to the tail');
  await live.close();

  const errors: string[] = [];
  const imp = new LogSink(dir, { monotonic: false, onError: (e) => errors.push(e.message) });
  const r2 = await imp.append(key, trade(1_799_000_000_000));
  t.equal(r2, null, 'resolved null, not rejected');
  t.equal(errors.length, 1);
  t.match(errors[0], /older/);
  await imp.close();
  t.equal((await readLog(dir, 'coin', 'books', 'sink-test')).length, 2);
});

t.test('closeKey releases one log so another writer can take it', async (t) => {
  const dir = tempDir();
  const a = new LogSink(dir);
  a.write(key, trade(1_800_000_000_000));
  await a.closeKey(key);
  const b = new LogSink(dir);
  t.ok(await b.append(key, trade(1_800_000_000_001)), 'a second sink can write after closeKey');
  t.equal((await b.lastRecord(key))?.recv_ts, 1_800_000_000_001);
  await b.close();
  await a.close();
});

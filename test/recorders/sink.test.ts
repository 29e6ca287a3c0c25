// The recorders' LogSink over the real storage engine: call order is append order (also while a
// writer is still opening), a stepped-back clock is clamped for live recording and refused for
// imports (reported, never thrown), and settle/close leave everything readable.

import t from 'tap';
import { LogSink } from '../../src/recorders/sink.js';
import type { Trade } from '../../src/schema/observation.js';
import { type LogKey, FILE_HEADER_BYTES, openReader } from '../../src/storage/testing.js';
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
  t.same(
    recs.map((r) => (r as Trade).price),
    Array.from({ length: 200 }, (_, i) => (i / 1000).toFixed(3)),
  );
  t.same(
    recs.map((r) => r.seq),
    Array.from({ length: 200 }, (_, i) => recs[0].seq + i),
  );
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

t.test("a frame groups each log's writes, keeps order with appends in between, clamps and marks checkpoints", async (t) => {
  const dir = tempDir();
  const other: LogKey = { ...key, market: 'sink-test-2' };
  const sink = new LogSink(dir, { monotonic: true });
  await sink.writer(key);
  await sink.writer(other);
  const T = 1_800_000_000_000;
  sink.beginFrame();
  sink.write(key, trade(T + 10, '0.10'));
  sink.write(other, trade(T + 10, '0.90'));
  sink.write(key, trade(T + 5, '0.11')); // a clock step back inside the frame: clamped to T+10
  const mid = sink.append(key, trade(T + 11, '0.12')); // issues the held records first
  sink.write(key, trade(T + 12, '0.13'));
  sink.write(key, trade(T + 13, '0.14'), { checkpoint: true });
  sink.write(other, trade(T + 14, '0.91'));
  sink.endFrame();
  t.equal((await mid)?.recv_ts, T + 11);
  await sink.settle();
  await sink.close();
  const recs = (await readLog(dir, 'coin', 'books', 'sink-test')) as (Trade & { seq: number })[];
  t.same(
    recs.map((r) => r.price),
    ['0.10', '0.11', '0.12', '0.13', '0.14'],
    'call order is log order',
  );
  t.same(
    recs.map((r) => r.recv_ts),
    [T + 10, T + 10, T + 11, T + 12, T + 13],
  );
  t.same(
    recs.map((r) => r.seq),
    recs.map((_, i) => recs[0].seq + i),
  );
  t.same(
    ((await readLog(dir, 'coin', 'books', 'sink-test-2')) as Trade[]).map((r) => r.price),
    ['0.90', '0.91'],
  );
  const cp = await openReader(dir, key).checkpointAtOrBefore(T + 100);
  t.equal((cp?.rec as Trade | undefined)?.price, '0.14', 'the checkpoint flag of a grouped record reaches the index');
});

t.test('writes of a frame are issued at endFrame, settle and closeKey', async (t) => {
  const dir = tempDir();
  const sink = new LogSink(dir, { monotonic: true });
  await sink.writer(key);
  sink.beginFrame();
  sink.write(key, trade(1_800_000_000_000));
  sink.write(key, trade(1_800_000_000_001));
  t.equal(sink.appended, 0, 'held while the frame is open');
  await sink.closeKey(key);
  t.equal(sink.appended, 2, 'closeKey issued the held records before closing');
  t.equal((await readLog(dir, 'coin', 'books', 'sink-test')).length, 2);
  const b = new LogSink(dir, { monotonic: true });
  await b.writer(key);
  b.beginFrame();
  b.write(key, trade(1_800_000_000_002));
  await b.settle();
  await b.close();
  t.equal((await readLog(dir, 'coin', 'books', 'sink-test')).length, 3, 'settle ended the frame');
});

t.test('pmtape_log_bytes_written_total counts the bytes each stream appended to its log', async (t) => {
  const { logBytesWritten } = await import('../../src/metrics.js');
  const { statSync } = await import('node:fs');
  const { logFilePath } = await import('../../src/storage/testing.js');
  const bytesOf = async (stream: string): Promise<number> =>
    (await logBytesWritten.get()).values.find((v) => v.labels.stream === stream)?.value ?? 0;
  const dir = tempDir();
  const metricsKey: LogKey = { family: 'coin', stream: 'metrics', market: 'sink-bytes' };
  const before = await bytesOf('metrics');
  const commits: number[] = [];
  const sink = new LogSink(dir, { monotonic: true, writer: { onCommit: (bytes) => commits.push(bytes) } });
  for (let i = 0; i < 50; i++) sink.write(metricsKey, trade(1_800_000_000_000 + i));
  await sink.append(metricsKey, trade(1_800_000_000_100));
  await sink.close();
  const fileBytes = statSync(logFilePath(dir, metricsKey, '2027-01-15')).size;
  t.ok(fileBytes > 0);
  const frameBytes = fileBytes - FILE_HEADER_BYTES; // the file's format header is not a record
  t.equal((await bytesOf('metrics')) - before, frameBytes, 'the counter moved by exactly the record bytes in the log file');
  t.equal(
    commits.reduce((a, b) => a + b, 0),
    frameBytes,
    "the caller's own onCommit still runs",
  );
});

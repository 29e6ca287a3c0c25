// Recorders on a disk that fills: writers pause (records dropped and counted, upstream and books in
// memory kept), the disk is retried, and the same market's writer resumes on its own with a
// storage_error gap from the first record lost, closed by full books; a bounded number of
// log lines; verify clean while paused and after the stop. Injected ENOSPC here (runs anywhere);
// test/selfhost/disk-full.test.ts fills a real tmpfs under a `record` process when run as root.

import t from 'tap';
import { startSim } from '../../src/sim/server.js';
import { startRecorders } from '../../src/recorders/host.js';
import { LogSink } from '../../src/recorders/sink.js';
import { injectDiskFault, verifyDataDir } from '../../src/storage/testing.js';
import type { Recorded } from '../../src/schema/observation.js';
import { book } from '../storage/helpers/records.js';
import { gapsOf, readAll, simConfig, tempDir, violations, waitFor } from './helpers.js';

/** A logger that keeps every line (object and message). */
function collecting() {
  const lines: Array<{ level: string; msg: string; obj: Record<string, unknown> }> = [];
  const at = (level: string) => (obj: object | string, msg?: string) =>
    lines.push({
      level,
      msg: typeof obj === 'string' ? obj : (msg ?? ''),
      obj: typeof obj === 'string' ? {} : (obj as Record<string, unknown>),
    });
  return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
}

t.teardown(() => injectDiskFault(null));

t.test('a full disk pauses writers; freed, the same markets resume with a storage_error gap closed by full books', async (t) => {
  const sim = await startSim({ seed: 31, rate: 200, coins: ['btc'], windows: ['5m', '15m'] });
  t.teardown(() => sim.close());
  const dir = tempDir('pmtape-diskpause-');
  const { config } = simConfig(sim.config, dir, { storage: { min_free_bytes: 0 }, recorders: { catalog_poll_ms: 250 } });
  const { lines, logger } = collecting();
  const host = await startRecorders(config, { kinds: ['clob', 'catalog'], statusFile: false, logger });
  t.teardown(() => host.stop());
  const recorded = async (): Promise<Map<string, Recorded[]>> => readAll(dir, 'books');
  t.ok(
    await waitFor(
      async () => [...(await recorded()).values()].some((r) => r.filter((x) => x.type === 'book_delta').length >= 20),
      60_000,
      100,
    ),
    'books and deltas are recorded',
  );

  injectDiskFault(() => 'ENOSPC');
  t.ok(
    await waitFor(() => host.sink.storageStats().paused_writers >= 1 && host.sink.storageStats().dropped_records >= 50, 60_000),
    'writers pause and drop what the feed still sends',
  );
  const whilePaused = await recorded();
  const damaged = (await verifyDataDir(dir, { repair: false })).filter((c) => !c.ok);
  t.same(damaged, [], 'verify finds no partial frame while the disk is full');
  const droppedBefore = host.sink.storageStats().dropped_records;
  t.ok(await waitFor(() => host.sink.storageStats().dropped_records > droppedBefore + 50, 60_000), 'the feed keeps running while paused');

  injectDiskFault(null);
  t.ok(await waitFor(() => host.sink.storageStats().paused_writers === 0, 60_000), 'every writer resumes on its own');
  const resumedAt = await recorded();
  t.ok(
    await waitFor(
      async () => {
        const now = await recorded();
        return [...now].some(([m, recs]) => recs.length > (resumedAt.get(m)?.length ?? 0) + 5);
      },
      60_000,
      100,
    ),
    'recording goes on after the resume',
  );
  await host.stop();

  const after = await recorded();
  let closedByBooks = 0;
  for (const [m, recs] of after) {
    t.same(violations(recs), [], `${m}: no delta without a book in the log, seq and time in order`);
    const before = whilePaused.get(m) ?? [];
    if (before.length === 0) continue;
    const kept = before[before.length - 1];
    t.same(
      recs.find((r) => r.seq === kept.seq),
      kept,
      `${m}: everything acknowledged before the disk filled is kept`,
    );
    const open = gapsOf(recs).find((g) => g.reason === 'storage_error' && g.end_ts === null);
    if (!open) continue; // a market that wrote nothing while the disk was full
    const i = recs.indexOf(open);
    t.ok(
      open.start_ts >= recs[i - 1].recv_ts && open.start_ts <= open.recv_ts,
      `${m}: the gap starts at the first lost record, after the last one the log holds`,
    );
    t.equal(recs[i - 1].seq, kept.seq, `${m}: nothing was written between the pause and the gap`);
    const next = recs.slice(i + 1, i + 3);
    if (next[0]?.type === 'book_checkpoint') {
      t.match(next[1], { type: 'gap', reason: 'storage_error', start_ts: open.start_ts }, `${m}: full books, then the gap closes`);
      t.ok((next[1] as { end_ts: number }).end_ts >= open.start_ts);
      closedByBooks++;
    }
  }
  t.ok(closedByBooks >= 1, `markets resumed from full books in memory: ${closedByBooks}`);
  const paused = lines.filter((l) => l.msg.startsWith('storage: writer paused'));
  const resumed = lines.filter((l) => l.msg.startsWith('storage: writer resumed'));
  // A market whose window ended while the disk was full is closed paused (CI once met one).
  const closed = lines.filter((l) => l.msg.startsWith('storage: writer closed while paused'));
  t.ok(
    paused.length >= 1 && paused.length <= 2 * after.size + 10,
    `one line per writer state change (${paused.length} paused, ${resumed.length} resumed, ${closed.length} closed)`,
  );
  t.equal(resumed.length + closed.length, paused.length, 'every pause has its closing line: resumed, or closed while paused');
  t.equal(lines.filter((l) => l.level === 'error').length, 0, 'no error line per record');
  t.same(
    (await verifyDataDir(dir, { repair: false })).filter((c) => !c.ok),
    [],
    'verify clean after the stop',
  );
});

t.test('below storage.min_free_bytes writers pause before the disk is full: nothing is written, the drop is counted', async (t) => {
  const dir = tempDir('pmtape-guard-');
  const { lines, logger } = collecting();
  const sink = new LogSink(dir, { minFreeBytes: Number.MAX_SAFE_INTEGER, logger });
  t.teardown(() => sink.close());
  const key = { family: 'coin', stream: 'books', market: 'm-guard' } as const;
  t.ok(await waitFor(() => lines.some((l) => l.msg.includes('below storage.min_free_bytes')), 30_000), 'the guard notices');
  t.equal(await sink.append(key, book(Date.now(), 1, 3)), null, 'the append is dropped');
  sink.write(key, book(Date.now(), 2, 3));
  await sink.settle();
  t.equal(sink.storageStats().paused_writers, 1);
  t.equal(sink.storageStats().dropped_records, 2);
  t.ok((sink.storageStats().free_bytes ?? 0) > 0, 'free bytes are known');
  t.same([...(await readAll(dir, 'books')).values()].flat(), [], 'no record was written');
  t.equal(lines.filter((l) => l.msg.startsWith('storage: writer paused')).length, 1, 'one line for the paused writer');
});

t.test('without full books in memory the gap stays open until the next full book; deltas meanwhile are dropped', async (t) => {
  const dir = tempDir('pmtape-resync-');
  const { lines, logger } = collecting();
  const sink = new LogSink(dir, { monotonic: true, minFreeBytes: 0, logger, retryMs: [20, 100] }); // as recorders run it
  t.teardown(() => sink.close());
  const key = { family: 'coin', stream: 'books', market: 'm-resync' } as const;
  const T = Date.now();
  const delta = (ts: number) =>
    ({ type: 'book_delta', recv_ts: ts, source_ts: ts, token_id: 'tok-0', changes: [{ side: 'bid', price: '0.489', size: '7' }] }) as const;
  t.ok(await sink.append(key, book(T, 0, 3)), 'a full book is written');
  injectDiskFault(() => 'ENOSPC');
  t.equal(await sink.append(key, delta(T + 10)), null, 'refused by the disk');
  sink.write(key, delta(T + 20));
  t.equal(sink.storageStats().paused_writers, 1, 'the writer is paused');
  injectDiskFault(null);
  t.ok(await waitFor(() => sink.storageStats().paused_writers === 0, 30_000), 'it resumes on its own');
  sink.write(key, delta(T + 30)); // no book in the log to apply it to: dropped
  sink.write(key, book(T + 40, 0, 3)); // tok-0's full book closes the gap
  sink.write(key, delta(T + 50)); // tok-0 again: written
  sink.write(key, { ...delta(T + 60), token_id: 'tok-1' }); // tok-1 has no book since: dropped
  await sink.settle();
  const recs = (await readAll(dir, 'books')).get('m-resync')!;
  t.same(
    recs.map((r) => r.type),
    ['book', 'gap', 'book', 'gap', 'book_delta'],
    "book, open gap, full book, closed gap, then that token's deltas",
  );
  const [open, closed] = gapsOf(recs);
  t.match(open, { reason: 'storage_error', start_ts: T + 10, end_ts: null }, 'the gap starts at the first record refused');
  t.match(closed, { reason: 'storage_error', start_ts: T + 10 });
  t.ok(closed.end_ts! >= T + 40, 'it ends at the full book');
  t.same(violations(recs), [], 'no delta applied to a book the log does not have');
  t.equal(
    sink.storageStats().dropped_records,
    3,
    "the delta written while paused, the one before the full book and the other token's are counted",
  );
  t.equal(lines.filter((l) => l.msg.startsWith('storage: writer')).length, 2, 'one paused and one resumed line');
});

t.test('a writer closed while paused says so and is not retried', async (t) => {
  const dir = tempDir('pmtape-closepaused-');
  const { lines, logger } = collecting();
  const sink = new LogSink(dir, { monotonic: true, minFreeBytes: 0, logger, retryMs: [20, 100] });
  t.teardown(() => sink.close());
  const key = { family: 'coin', stream: 'books', market: 'm-closed' } as const;
  const T = Date.now();
  t.ok(await sink.append(key, book(T, 0, 3)), 'a full book is written');
  injectDiskFault(() => 'ENOSPC');
  t.equal(await sink.append(key, book(T + 10, 1, 3)), null, 'refused by the disk');
  t.equal(sink.storageStats().paused_writers, 1, 'the writer is paused');
  await sink.closeKey(key); // the market is no longer recorded (its window ended)
  t.equal(sink.storageStats().paused_writers, 0, 'no longer retried');
  injectDiskFault(null);
  const msgs = lines.map((l) => l.msg).filter((m) => m.startsWith('storage: writer'));
  t.equal(msgs.length, 2, 'two lines');
  t.match(msgs[0], /^storage: writer paused/);
  t.match(msgs[1], /^storage: writer closed while paused/);
  t.match(
    lines.find((l) => l.msg.startsWith('storage: writer closed'))?.obj,
    { market: 'm-closed', errno: 'ENOSPC', dropped: 0 },
    'naming the market, the error and the records dropped',
  );
  await new Promise((r) => setTimeout(r, 200)); // retries would have run by now
  t.notOk(
    lines.some((l) => l.msg.startsWith('storage: writer resumed')),
    'never resumed',
  );
  t.same(
    (await readAll(dir, 'books')).get('m-closed')?.map((r) => r.type),
    ['book'],
    'the log holds what was acknowledged, and no gap written after the close',
  );
});

// UnwrittenCatalog with a real LogSink on a disk that refuses writes: an event the sink dropped
// marks its market stale (the next poll diffs against the log), a written one clears it. The feeds
// of every family use it the same way; test/recorders/catalog/full-disk.test.ts runs it end to end.

import t from 'tap';
import { UnwrittenCatalog } from '../../src/recorders/catalog-diff.js';
import { LogSink } from '../../src/recorders/sink.js';
import { injectDiskFault } from '../../src/storage/testing.js';
import type { CatalogEvent } from '../../src/schema/observation.js';
import { coinMarket } from '../api/helpers.js';
import { readAll, tempDir, waitFor } from './helpers.js';

t.teardown(() => injectDiskFault(null));

t.test('a dropped catalogue event marks its market stale until one is written', async (t) => {
  const dir = tempDir('pmtape-unwritten-');
  const sink = new LogSink(dir, { monotonic: true, minFreeBytes: 0, retryMs: [20, 100] });
  t.teardown(() => sink.close());
  const key = { family: 'coin', stream: 'catalog', market: coinMarket.market_id } as const;
  const ev = (ts: number, status: 'open' | 'resolved'): CatalogEvent => ({
    type: 'catalog',
    event: status === 'open' ? 'listed' : 'resolved',
    changed: ['status'],
    market: { ...coinMarket, status },
    recv_ts: ts,
    source_ts: null,
  });
  const u = new UnwrittenCatalog();
  const T = Date.now();
  t.equal(await u.append(sink, key, ev(T, 'open')), true, 'written');
  t.notOk(u.stale(key.market));

  injectDiskFault(() => 'ENOSPC');
  t.equal(await u.append(sink, key, ev(T + 10, 'resolved')), false, 'refused by the disk');
  t.ok(u.stale(key.market), 'stale: the next poll diffs against the log');
  t.equal(await u.append(sink, key, ev(T + 20, 'resolved')), false, 'dropped while the writer is paused');
  t.ok(u.stale(key.market));
  injectDiskFault(null);
  t.ok(await waitFor(() => sink.storageStats().paused_writers === 0, 30_000), 'the writer resumes');
  t.equal(await u.append(sink, key, ev(T + 30, 'resolved')), true, 'written once the disk takes writes');
  t.notOk(u.stale(key.market), 'no longer stale');
  await sink.settle();
  const recs = (await readAll(dir, 'catalog')).get(key.market)!;
  t.same(
    recs.map((r) => (r as { event: string }).event),
    ['listed', 'resolved'],
    'the log: the first event and the one written after the disk freed',
  );
});

// A market whose every log was compacted and then deleted by retention keeps its seq rising when a
// writer opens it again (a recorder restarted after a long pause): seq continues after the last
// compacted record instead of restarting at 1, and the reader serves old and new days as one log.

import t from 'tap';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { compactDay, deleteExpiredLogs, openReader, openWriter, type LogKey } from '../../src/storage/index.js';
import { marketDir } from '../../src/storage/paths.js';

const KEY: LogKey = { family: 'coin', stream: 'books', market: 'm-seq' };
const D1 = utcDay(Date.now() - 3 * DAY_MS);
const D2 = utcDay(Date.now() - 2 * DAY_MS);
const at = (day: string, h: number): number => Date.parse(`${day}T00:00:00.000Z`) + h * 3_600_000;
const book = (t: number, bid: string) => ({
  type: 'book' as const,
  token_id: 'tok-up',
  units: 'decimal' as const,
  bids: [[bid, '10']] as [string, string][],
  asks: [['0.60', '5']] as [string, string][],
  recv_ts: t,
  source_ts: t - 2,
});

t.test('seq continues after the last compacted record once retention deleted every log', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-seq-retention-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const w = await openWriter(dir, KEY);
  let last = 0;
  for (let i = 0; i < 30; i++) last = (await w.append(book(at(D1, 1 + i / 10), (0.4 + i / 1000).toFixed(3)))).seq;
  await w.close();
  t.equal(last, 30);

  await compactDay(dir, D1);
  const ret = await deleteExpiredLogs(dir, Date.now(), 0);
  t.equal(ret.deleted.length, 1, 'the compacted log was deleted');
  t.notOk(
    (await readdir(marketDir(dir, KEY))).some((n) => n.endsWith('.log')),
    'no log of the market is left',
  );

  const again = await openWriter(dir, KEY);
  const next = await again.append(book(at(D2, 5), '0.450'));
  await again.close();
  t.equal(next.seq, 31, 'the next record continues after the compacted seq 30');

  const reader = openReader(dir, KEY);
  const seqs: number[] = [];
  for await (const it of reader.read('start')) seqs.push(it.rec.seq);
  t.same(
    seqs,
    Array.from({ length: 31 }, (_, i) => i + 1),
    'Parquet day and new log day read as one rising log',
  );
  t.equal((await reader.seekSeq(31))?.day, D2, 'a seq seek finds the new record on its day');
});

t.test('a brand-new market starts at seq 1 without looking at Parquet', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-seq-new-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const w = await openWriter(dir, { ...KEY, market: 'fresh' });
  t.equal((await w.append(book(at(D2, 1), '0.400'))).seq, 1);
  await w.close();
});

// `start`'s automatic compaction: a closed day past its grace period is compacted (in a worker
// thread) without any command, logs inside the retention period stay, and stop() ends the worker
// (and its book_snapshots helper thread) without leaving anything half published.

import t from 'tap';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { startAutoCompaction } from '../../src/storage/compaction/auto.js';
import { compactDay } from '../../src/storage/compaction/compact-day.js';
import { checkPartitions } from '../../src/storage/parquet/partition-check.js';
import { listDays, logFilePath } from '../../src/storage/paths.js';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';
import { openWriter } from '../../src/storage/index.js';
import type { WorkerMessage } from '../../src/storage/compaction/worker.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';

t.test('compacts closed days in the background and keeps logs within retention', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-auto-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const day = utcDay(Date.now() - 2 * DAY_MS);
  await writeFixture(dir, { days: [day], booksPerDay: 50 });
  const base = loadConfig({ dataDir: dir }, {});
  const config = { ...base, storage: { ...base.storage, compactGraceMs: 0, retentionDays: 7 } };
  const logged: string[] = [];
  const objects: object[] = [];
  const logger = {
    info: (o: object, m?: string) => {
      logged.push(`info ${m}`);
      objects.push(o);
    },
    error: (o: object, m?: string) => void logged.push(`error ${m} ${JSON.stringify(o)}`),
  };
  const auto = startAutoCompaction(config, logger, 50);
  const manifest = join(dir, 'parquet', 'family=coin', 'dataset=book_changes', `date=${day}`, '_manifest.json');
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !logged.includes('info compacted')) await new Promise((r) => setTimeout(r, 50));
  await auto.stop();
  t.ok(await stat(manifest), 'the closed day was compacted');
  t.ok(logged.includes('info compacted'), 'and logged');
  t.match(objects, [{ day, threads: 1 }], 'with one thread: storage.compaction_threads is unset, and start leaves a core to the recorders');
  t.notOk(
    logged.some((l) => l.startsWith('error')),
    `without errors: ${logged.join('; ')}`,
  );
  t.same(await listDays(dir, { family: 'coin', stream: 'books', market: '50000' }), [day], 'logs within retention are kept');
  t.notOk(
    await stat(join(dir, '_parquet-staging', '.lock')).then(
      () => true,
      () => false,
    ),
    'the compaction lock is released on stop',
  );
});

t.test('stop() while book_snapshots is being built in the helper thread: nothing half published, the next run completes', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-auto-stop-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const day = utcDay(Date.now() - 2 * DAY_MS);
  await writeFixture(dir, { days: [day], booksPerDay: 1500, coinMarkets: 4, bothOutcomes: true });
  const base = loadConfig({ dataDir: dir }, {});
  const config = { ...base, storage: { ...base.storage, compactGraceMs: 0, retentionDays: 7, compactionThreads: 2 as const } };
  const logged: string[] = [];
  const logger = {
    info: (_o: object, m?: string) => void logged.push(`info ${m}`),
    error: (o: object, m?: string) => void logged.push(`error ${m} ${JSON.stringify(o)}`),
  };
  const auto = startAutoCompaction(config, logger, 3_600_000);
  // The split build's staging folder appears when the coin books stream starts (derived-split.ts).
  const staging = join(dir, '_parquet-staging', `coin.book_snapshots.${day}`);
  const deadline = Date.now() + 60_000;
  while (
    Date.now() < deadline &&
    !(await stat(staging).then(
      () => true,
      () => false,
    ))
  )
    await new Promise((r) => setTimeout(r, 10));
  t.ok(await stat(staging), 'the split build had started');
  await auto.stop();
  t.notOk(
    await stat(join(dir, '_parquet-staging', '.lock')).then(
      () => true,
      () => false,
    ),
    'the compaction lock is released',
  );
  const published = join(dir, 'parquet', 'family=coin', 'dataset=book_snapshots', `date=${day}`);
  if (
    await stat(published).then(
      () => true,
      () => false,
    )
  ) {
    t.same(
      (await checkPartitions(dir, false)).filter((c) => !c.ok),
      [],
      'a partition published before the stop is whole',
    );
  }
  const rs = await compactDay(dir, day);
  t.ok(
    rs.some((r) => r.family === 'coin' && r.dataset === 'book_snapshots' && r.rows > 0),
    'the next compaction builds book_snapshots',
  );
  t.same(
    (await checkPartitions(dir, false)).filter((c) => !c.ok),
    [],
    'every partition matches its manifest',
  );
  const left = (await readdir(join(dir, '_parquet-staging'))).filter((n) => n !== '.lock');
  t.same(left, [], 'no staging folder left behind');
});

t.test('a day with a record set aside and a stream that fails never holds up the days after it', async (t) => {
  // Issue 34 §1: one bad value failed the whole day in the worker, and every later day with it, forever.
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-auto-bad-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const [bad, next] = [utcDay(Date.now() - 3 * DAY_MS), utcDay(Date.now() - 2 * DAY_MS)];
  await writeFixture(dir, { days: [bad, next], booksPerDay: 50 });
  const w = await openWriter(dir, { family: 'wallet-prediction', stream: 'books', market: '2650577' });
  await w.append({
    type: 'book',
    recv_ts: dayStartMs(bad)! + 5000,
    source_ts: null,
    token_id: 'up',
    units: 'decimal',
    bids: [['0.48', '64.50999999999999']],
    asks: [],
  });
  await w.close();
  // And a yes/no log day that cannot be read (a folder where the file should be): that stream fails.
  const broken = logFilePath(dir, { family: 'yesno-exchange', stream: 'books', market: 'KX-BROKEN' }, bad);
  await mkdir(broken, { recursive: true });
  const base = loadConfig({ dataDir: dir }, {});
  const config = { ...base, storage: { ...base.storage, compactGraceMs: 0, retentionDays: 7 } };
  const logged: string[] = [];
  const logger = {
    info: (_o: object, m?: string) => void logged.push(`info ${m}`),
    error: (o: object, m?: string) => void logged.push(`error ${m} ${JSON.stringify(o)}`),
  };
  const seen: WorkerMessage[] = [];
  const auto = startAutoCompaction(config, logger, 50, (m) => seen.push(m));
  const nextManifest = join(dir, 'parquet', 'family=coin', 'dataset=book_changes', `date=${next}`, '_manifest.json');
  const deadline = Date.now() + 120_000;
  while (
    Date.now() < deadline &&
    !(
      seen.some((m) => m.type === 'partitions') &&
      (await stat(nextManifest).then(
        () => true,
        () => false,
      ))
    )
  )
    await new Promise((r) => setTimeout(r, 50));
  await auto.stop();
  t.ok(await stat(nextManifest), 'the day after the bad one was compacted');
  t.ok(
    await stat(join(dir, 'parquet', 'family=coin', 'dataset=book_changes', `date=${bad}`, '_manifest.json')),
    "and the bad day's other families",
  );
  const note = seen.find((m) => m.type === 'partitions' && m.day === bad);
  t.match(
    note,
    { quarantined: [{ family: 'wallet-prediction', dataset: 'book_changes', quarantined: 1 }] },
    'the set-aside record is reported (start counts it in /metrics)',
  );
  t.match(
    note,
    { failed: [{ family: 'yesno-exchange', dataset: 'book_changes', error: /EISDIR/ }] },
    'the failed stream too, with its reason',
  );
  t.ok(
    logged.some((l) => l.startsWith('error partition failed')),
    'and logged',
  );
});

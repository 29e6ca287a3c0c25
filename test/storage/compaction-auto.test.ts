// `start`'s automatic compaction: a closed day past its grace period is compacted (in a worker
// thread) without any command, logs inside the retention period stay, and stop() ends the worker.

import t from 'tap';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { startAutoCompaction } from '../../src/storage/parquet/auto-compaction.js';
import { listDays } from '../../src/storage/paths.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { writeFixture } from './compaction-fixture.js';

t.test('compacts closed days in the background and keeps logs within retention', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-auto-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const day = utcDay(Date.now() - 2 * DAY_MS);
  await writeFixture(dir, { days: [day], booksPerDay: 50 });
  const base = loadConfig({ dataDir: dir }, {});
  const config = { ...base, storage: { ...base.storage, compactGraceMs: 0, retentionDays: 7 } };
  const logged: string[] = [];
  const logger = { info: (_o: object, m?: string) => void logged.push(`info ${m}`), error: (o: object, m?: string) => void logged.push(`error ${m} ${JSON.stringify(o)}`) };
  const auto = startAutoCompaction(config, logger, 50);
  const manifest = join(dir, 'parquet', 'family=coin', 'dataset=book_changes', `date=${day}`, '_manifest.json');
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !logged.includes('info compacted')) await new Promise((r) => setTimeout(r, 50));
  await auto.stop();
  t.ok(await stat(manifest), 'the closed day was compacted');
  t.ok(logged.includes('info compacted'), 'and logged');
  t.notOk(logged.some((l) => l.startsWith('error')), `without errors: ${logged.join('; ')}`);
  t.same(await listDays(dir, { family: 'coin', stream: 'books', market: '50000' }), [day], 'logs within retention are kept');
  t.notOk(await stat(join(dir, '_parquet-staging', '.lock')).then(() => true, () => false), 'the compaction lock is released on stop');
});

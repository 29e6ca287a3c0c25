// The archive lag from local files alone (lag.ts): which compacted days are not yet published and
// their bytes, exactly, over several days. A day recorded as published counts as done only while
// every manifest it has is the one published; a partition rebuilt since makes it pending again, a
// torn manifest counts as no partition, and another archive's publication does not count.

import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { DAY_MS, utcDay } from '../../../src/schema/time.js';
import { archiveLag, compactDay, listPartitions, readManifest, unpublishedDays } from '../../../src/storage/testing.js';
import { writePublished } from '../../../src/storage/archive/layout.js';
import { parseArchiveUrl, type ArchiveConfig } from '../../../src/config.js';
import { writeFixture } from '../../../tools/fixtures/compaction-logs.js';

const URL = 's3://lag-bucket/p';
const archive: ArchiveConfig = {
  url: URL,
  ...parseArchiveUrl(URL, 'storage.archive.url'),
  endpoint: 'http://127.0.0.1:9',
  region: 'us-east-1',
  pathStyle: true,
  maxLagDays: 2,
};
const days = [5, 4, 3].map((n) => utcDay(Date.now() - n * DAY_MS));

/** What a day's publication must carry, straight from the disk: rel → manifest sha256, and the bytes. */
async function onDisk(dataDir: string, day: string): Promise<{ shas: Record<string, string>; bytes: number }> {
  const shas: Record<string, string> = {};
  let bytes = 0;
  for (const p of (await listPartitions(dataDir)).filter((x) => x.date === day)) {
    const m = await readManifest(p.dir);
    if (!m) continue;
    const raw = await readFile(join(p.dir, '_manifest.json'));
    shas[`family=${p.family}/dataset=${p.dataset}/date=${day}`] = createHash('sha256').update(raw).digest('hex');
    bytes += raw.length;
    for (const f of m.files) bytes += (await stat(join(p.dir, f.file))).size;
  }
  return { shas, bytes };
}

t.test('lag: pending days and their bytes, exactly, through publication, rebuilds and torn manifests', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pmtape-lag-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  await writeFixture(dataDir, { days, booksPerDay: 120, bothOutcomes: true, spanMs: 300_000 });
  for (const day of days) await compactDay(dataDir, day, { threads: 1 });
  const disk = await Promise.all(days.map((d) => onDisk(dataDir, d)));
  t.ok(
    disk.every((d) => Object.keys(d.shas).length >= 4),
    'every day has several partitions',
  );
  const total = (ix: number[]): number => ix.reduce((n, i) => n + disk[i].bytes, 0);

  t.same(await unpublishedDays(dataDir, archive), days, 'nothing published: every compacted day is pending');
  t.same(await archiveLag(dataDir, archive), { lag_days: 3, lag_bytes: total([0, 1, 2]), last_published: null });

  // The middle day published to this archive, the first to another one.
  await writePublished(dataDir, { url: URL, date: days[1], manifests: disk[1].shas });
  await writePublished(dataDir, { url: 's3://elsewhere/x', date: days[0], manifests: disk[0].shas });
  t.same(await unpublishedDays(dataDir, archive), [days[0], days[2]], 'the day published here is done; the other archive does not count');
  t.same(await archiveLag(dataDir, archive), { lag_days: 2, lag_bytes: total([0, 2]), last_published: days[1] });

  // One partition of the published day rebuilt (a new manifest): pending again, with all its bytes.
  const [rel] = Object.keys(disk[1].shas);
  const dir = join(dataDir, 'parquet', rel);
  const m = JSON.parse(await readFile(join(dir, '_manifest.json'), 'utf8')) as { created: string };
  await writeFile(join(dir, '_manifest.json'), JSON.stringify({ ...m, created: 'rebuilt' }, null, 1) + '\n');
  const rebuilt = await onDisk(dataDir, days[1]);
  t.same(await unpublishedDays(dataDir, archive), days, 'a rebuilt partition makes its day pending again');
  t.same(await archiveLag(dataDir, archive), {
    lag_days: 3,
    lag_bytes: disk[0].bytes + rebuilt.bytes + disk[2].bytes,
    last_published: null,
  });

  // Published again with what it holds now; then a torn manifest on the last day counts as absent.
  await writePublished(dataDir, { url: URL, date: days[1], manifests: rebuilt.shas });
  const [torn] = Object.keys(disk[2].shas);
  await writeFile(join(dataDir, 'parquet', torn, '_manifest.json'), '{"files": [');
  const tornDay = await onDisk(dataDir, days[2]);
  t.ok(tornDay.bytes < disk[2].bytes, 'the torn partition no longer counts on disk either');
  t.same(await archiveLag(dataDir, archive), { lag_days: 2, lag_bytes: disk[0].bytes + tornDay.bytes, last_published: days[1] });

  // The last day published whole except the torn partition: done (a torn manifest is no partition).
  await writePublished(dataDir, { url: URL, date: days[2], manifests: tornDay.shas });
  t.same(await unpublishedDays(dataDir, archive), [days[0]]);
  t.same(await archiveLag(dataDir, archive), { lag_days: 1, lag_bytes: disk[0].bytes, last_published: days[2] });
});

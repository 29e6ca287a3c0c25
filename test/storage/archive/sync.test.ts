// `pmtape archive sync` and `archive verify` against a real SeaweedFS: a compacted day is
// published with every object equal to its local file, each partition's data before its manifest,
// every manifest before the day record; a rerun skips everything; verify passes, then fails once one object is overwritten, and a
// sync --all repairs it. Retention keeps a day's logs until the day is published.

import t from 'tap';
import { existsSync } from 'node:fs';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { requireTool } from '../../helpers/toolchains.js';
import { DAY_MS, dayStartMs } from '../../../src/schema/time.js';
import { deleteExpiredLogs } from '../../../src/storage/compaction/retention.js';
import { parseArchiveUrl } from '../../../src/config.js';
import { syncArchive } from '../../../src/storage/index.js';
import { startWeed, ACCESS_KEY, SECRET_KEY } from '../../../tools/fixtures/weed.js';
import { startFaultProxy } from '../../../tools/fixtures/fault-proxy.js';
import { DAY, archiveCli, compactedDay, getObject, listKeys, localObjects } from './common.js';

const bin = requireTool(t, 'seaweedfs');

if (bin) {
  t.test('sync publishes a compacted day exactly, each manifest after its files; rerun skips; verify catches an overwrite', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-sync');
    const url = 's3://pmtape-sync/tape';
    const dataDir = await compactedDay(t);
    const local = await localObjects(dataDir);
    t.ok(local.size >= 6, `the fixture day has partitions (${local.size} objects)`);
    // Through a proxy that breaks nothing but logs the order requests arrive in.
    const proxy = await startFaultProxy(weed.endpoint, 0);
    t.teardown(() => proxy.close());

    const first = await archiveCli(['sync'], dataDir, proxy.url, url);
    t.equal(first.code, 0, first.stderr);
    t.same(
      first.summary,
      { days: 1, files: local.size + 1, uploaded: local.size + 1, skipped: 0, bytes: first.summary.bytes, failed: 0 },
      first.stdout,
    );
    t.ok(first.summary.bytes > [...local.values()].reduce((n, b) => n + b.length, 0) - 1, 'bytes counts what was uploaded');
    t.match(first.stderr, /archive sync: \d+\/\d+ done/, 'plain progress lines when not on a TTY');

    const keys = await listKeys(weed.client, 'pmtape-sync');
    t.same(
      keys,
      [...[...local.keys()].map((k) => `tape/${k}`), `tape/_archive/days/${DAY}.json`].sort(),
      'the bucket holds the local tree and the day record, nothing else',
    );
    for (const [k, bytes] of local)
      t.ok(bytes.equals(await getObject(weed.client, 'pmtape-sync', `tape/${k}`)), `${k} equals the local file`);

    // Nothing of the day was ever sent from this data dir: nothing to find, so no listing (layout.ts beginUploads).
    t.same(
      proxy.stats.log.filter((l) => /[?&]list-type=/.test(l)),
      [],
      'a first publication lists nothing',
    );
    const writes = proxy.stats.log.filter((l) => /^(PUT|POST) /.test(l)).map((l) => l.split(' ')[1].split('?')[0]);
    // A manifest follows its own partition's data files (not the other partitions'); the day record follows every manifest.
    const folder = (k: string): string => k.slice(0, k.lastIndexOf('/'));
    for (const [i, k] of writes.entries()) {
      if (!k.endsWith('_manifest.json')) continue;
      const later = writes.slice(i + 1).filter((w) => w.endsWith('.parquet') && folder(w) === folder(k));
      t.same(later, [], `${folder(k)}: every data file was written before its manifest`);
    }
    const manifests = [...local.keys()].filter((k) => k.endsWith('_manifest.json')).length;
    t.equal(writes.filter((k) => k.endsWith('_manifest.json')).length, manifests, 'each manifest written once');
    t.match(writes.at(-1), new RegExp(`_archive/days/${DAY}\\.json$`), 'the day record is written last');

    const again = await archiveCli(['sync', '--all'], dataDir, weed.endpoint, url);
    t.equal(again.code, 0, again.stderr);
    t.same(
      again.summary,
      { days: 1, files: local.size + 1, uploaded: 0, skipped: local.size + 1, bytes: 0, failed: 0 },
      'a rerun skips every object',
    );
    const pending = await archiveCli(['sync'], dataDir, weed.endpoint, url);
    t.same(pending.summary, { days: 0, files: 0, uploaded: 0, skipped: 0, bytes: 0, failed: 0 }, 'nothing pending: no request needed');

    const ok = await archiveCli(['verify'], dataDir, weed.endpoint, url);
    t.equal(ok.code, 0, ok.stderr);
    t.match(ok.summary, { days: 1, files: local.size + 1, ok: local.size + 1, failed: 0 });

    // Same length, same sha256 metadata, different bytes: only a read of the bytes can tell.
    const victim = [...local.keys()].find((k) => k.endsWith('.parquet'))!;
    const orig = local.get(victim)!;
    const bad = Buffer.from(orig);
    bad[Math.floor(bad.length / 2)] ^= 0xff;
    const meta = (await import('@aws-sdk/client-s3')).HeadObjectCommand;
    const head = await weed.client.send(new meta({ Bucket: 'pmtape-sync', Key: `tape/${victim}` }));
    await weed.client.send(new PutObjectCommand({ Bucket: 'pmtape-sync', Key: `tape/${victim}`, Body: bad, Metadata: head.Metadata }));
    const caught = await archiveCli(['verify', '--date', DAY], dataDir, weed.endpoint, url);
    t.equal(caught.code, 1, 'verify exits 1 on a mismatch');
    t.match(caught.summary, { days: 1, failed: 1, ok: local.size });
    t.match(caught.stderr, new RegExp(`mismatch tape/${victim.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: sha256`));

    const repair = await archiveCli(['sync', '--all'], dataDir, weed.endpoint, url);
    t.match(
      repair.summary,
      { uploaded: 1, skipped: local.size, failed: 0 },
      'sync --all finds the overwritten object by its ETag and uploads it again',
    );
    t.equal((await archiveCli(['verify'], dataDir, weed.endpoint, url)).code, 0, 'verify passes again');
  });

  t.test("retention keeps a day's logs until the day is published and verified in the archive", async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-retention');
    const url = 's3://pmtape-retention/r';
    const dataDir = await compactedDay(t, DAY, 50);
    const later = dayStartMs(DAY)! + 30 * DAY_MS;
    const before = await deleteExpiredLogs(dataDir, later, 1, url);
    t.same(before.deleted, [], 'nothing deleted before publication');
    t.ok(
      before.kept.length > 0 &&
        before.kept.every((k) => /not yet published and verified in the archive s3:\/\/pmtape-retention\/r/.test(k.why)),
      'kept, with the reason',
    );

    const archive = { url, ...parseArchiveUrl(url, 'test'), endpoint: weed.endpoint, region: 'us-east-1', pathStyle: true, maxLagDays: 2 };
    process.env.AWS_ACCESS_KEY_ID = ACCESS_KEY;
    process.env.AWS_SECRET_ACCESS_KEY = SECRET_KEY;
    const r = await syncArchive(dataDir, archive);
    t.match(r, { days: 1, failed: 0 });
    const elsewhere = await deleteExpiredLogs(dataDir, later, 1, 's3://other-bucket/r');
    t.same(elsewhere.deleted, [], 'published to another archive does not count');
    const after = await deleteExpiredLogs(dataDir, later, 1, url);
    t.ok(after.deleted.length > 0 && after.kept.length === 0, `logs deleted once published (${after.deleted.length})`);
    t.notOk(after.deleted.some((f) => existsSync(f)));
  });
}

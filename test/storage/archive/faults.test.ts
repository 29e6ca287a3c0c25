// The archive under a hostile network, against a real SeaweedFS behind a fault proxy: with 30 % of
// requests failing (503 SlowDown, resets before and after the server acted, cut responses, cut
// uploads) a day still publishes and verifies exactly, a multipart object included; a sync killed
// with SIGKILL mid-upload leaves no day record and no manifest naming a missing file, and a rerun
// completes it.

import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';
import { CLI, waitFor } from '../../selfhost/helpers.js';
import { archiveClient } from '../../../src/storage/archive/client.js';
import { Digest, digestFile, remoteDigest, upload, PART_SIZE } from '../../../src/storage/archive/objects.js';
import { readPublished } from '../../../src/storage/archive/layout.js';
import { withRetries } from '../../../src/storage/archive/client.js';
import { parseArchiveUrl } from '../../../src/config.js';
import { startWeed, archiveEnv, ACCESS_KEY, SECRET_KEY } from '../../../tools/fixtures/weed.js';
import { startFaultProxy } from '../../../tools/fixtures/fault-proxy.js';
import { DAY, archiveCli, checkVisibleManifests, compactedDay, getObject, listKeys, localObjects } from './common.js';

const bin = requireTool(t, 'seaweedfs');

if (bin) {
  t.test('a 30 % fault storm: the day still publishes and reads back exactly', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-storm');
    const url = 's3://pmtape-storm/storm';
    const dataDir = await compactedDay(t);
    const local = await localObjects(dataDir);
    const proxy = await startFaultProxy(weed.endpoint, 0.3);
    t.teardown(() => proxy.close());

    const r = await archiveCli(['sync'], dataDir, proxy.url, url);
    t.equal(r.code, 0, r.stderr);
    t.match(r.summary, { days: 1, files: local.size + 1, failed: 0 }, r.stdout);
    for (const [kind, n] of Object.entries(proxy.stats.faults)) t.ok(n > 0, `${kind} injected ${n} time(s)`);
    for (const [k, bytes] of local)
      t.ok(bytes.equals(await getObject(weed.client, 'pmtape-storm', `storm/${k}`)), `${k} equals the local file`);
    t.ok((await readPublished(dataDir, DAY))?.url === url, 'the day is recorded as published');

    const v = await archiveCli(['verify'], dataDir, proxy.url, url);
    t.equal(v.code, 0, `verify through the storm passes (reads retried): ${v.stderr}`);
    t.match(v.summary, { days: 1, failed: 0, ok: local.size + 1 });
  });

  t.test('a multipart object through the storm: uploaded, proven by its multipart ETag, identical', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-multipart');
    const proxy = await startFaultProxy(weed.endpoint, 0.3, 99);
    t.teardown(() => proxy.close());
    const dir = mkdtempSync(join(tmpdir(), 'pmtape-multipart-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'big.parquet');
    const bytes = randomBytes(2 * PART_SIZE + 12345);
    writeFileSync(path, bytes);
    const d = await digestFile(path);
    t.match(d.etags[1], /-3$/, 'three parts expected');
    t.equal(d.etags[0], createHash('md5').update(bytes).digest('hex'), "the whole MD5 (continued from the first part's state)");
    const parts = new Digest(false);
    parts.update(bytes);
    t.same(parts.finish().etags, [d.etags[1]], 'an upload past one part computes the multipart ETag alone');
    process.env.AWS_ACCESS_KEY_ID = ACCESS_KEY;
    process.env.AWS_SECRET_ACCESS_KEY = SECRET_KEY;
    const s3 = archiveClient({
      url: 's3://pmtape-multipart',
      ...parseArchiveUrl('s3://pmtape-multipart', 't'),
      endpoint: proxy.url,
      region: 'us-east-1',
      pathStyle: true,
      maxLagDays: 2,
    });
    t.teardown(() => s3.destroy());
    let retries = 0;
    await withRetries(
      'big',
      () => upload(s3, 'pmtape-multipart', { key: 'big.parquet', path, ...d, contentType: 'application/octet-stream' }),
      {
        attempts: 12,
        baseMs: 50,
        maxMs: 1000,
        onRetry: () => void retries++,
      },
    );
    t.ok(
      proxy.stats.log.some((l) => /^POST .*uploads/.test(l)),
      'a multipart upload was made',
    );
    t.ok(
      bytes.equals(await getObject(weed.client, 'pmtape-multipart', 'big.parquet')),
      `the stored object is the file (${retries} whole-upload retries)`,
    );
    const head = await weed.client.send(
      new (await import('@aws-sdk/client-s3')).HeadObjectCommand({ Bucket: 'pmtape-multipart', Key: 'big.parquet' }),
    );
    t.equal(head.ETag?.replace(/"/g, ''), d.etags[1], "the server's ETag is the one computed locally (no read-back needed)");
    t.equal((await remoteDigest(weed.client, 'pmtape-multipart', 'big.parquet'))?.sha256, d.sha256);
  });

  t.test('kill -9 mid-upload: no day record, no manifest short of a file; a rerun completes the day', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-kill');
    const url = 's3://pmtape-kill/k';
    const dataDir = await compactedDay(t);
    const local = await localObjects(dataDir);
    const proxy = await startFaultProxy(weed.endpoint, 0);
    t.teardown(() => proxy.close());
    // The third data-file PUT never gets an answer: the sync is then stuck mid-day, as on a dead link.
    let puts = 0;
    proxy.hold = (req) => req.method === 'PUT' && /\.parquet/.test(req.url ?? '') && ++puts === 3;
    const child = spawn(process.execPath, [CLI, 'archive', 'sync', '--data-dir', dataDir], {
      env: { ...process.env, ...archiveEnv(proxy.url, url) },
      stdio: 'ignore',
    });
    const exited = new Promise((res) => child.on('exit', res));
    t.teardown(() => void child.kill('SIGKILL'));
    t.ok(await waitFor(async () => proxy.stats.held > 0, 120_000, 50), 'an upload is in flight');
    // Let the uploads beside the stalled one land, so some objects exist and the rerun must skip them.
    t.ok(await waitFor(async () => (await listKeys(weed.client, 'pmtape-kill')).length >= 2, 60_000, 50), 'some data files landed');
    child.kill('SIGKILL');
    await exited;

    const keys = await listKeys(weed.client, 'pmtape-kill');
    t.ok(keys.length > 0, `objects landed before the kill (${keys.length})`);
    t.notOk(
      keys.some((k) => k.includes('_archive/days/')),
      'no day record: the day is not visible',
    );
    const seen = await checkVisibleManifests(weed.client, 'pmtape-kill', 'k/');
    t.same(seen.problems, [], `every manifest visible (${seen.manifests.length}) names only files that are there, whole`);
    t.equal(await readPublished(dataDir, DAY), null, 'the day is not recorded as published');

    proxy.hold = null;
    const r = await archiveCli(['sync'], dataDir, proxy.url, url);
    t.equal(r.code, 0, r.stderr);
    t.match(r.summary, { days: 1, files: local.size + 1, failed: 0 });
    t.ok(r.summary.skipped >= keys.length, `the rerun skips what had landed (${r.summary.skipped} ≥ ${keys.length})`);
    const v = await archiveCli(['verify'], dataDir, weed.endpoint, url);
    t.equal(v.code, 0, v.stderr);
    t.match(v.summary, { failed: 0, ok: local.size + 1 });
  });
}

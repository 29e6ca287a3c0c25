// A reader that trusts a partition's manifest must never find one of its files missing: each
// manifest is published as soon as its own partition's files are verified (before other partitions'
// files and the day record). A sync killed right after its first manifest landed leaves only
// manifests whose every file is in the bucket, whole (size and sha256), and no day record; a rerun
// completes the day and verify passes.

import t from 'tap';
import { spawn } from 'node:child_process';
import { requireTool } from '../../helpers/toolchains.js';
import { CLI, waitFor } from '../../selfhost/helpers.js';
import { readPublished } from '../../../src/storage/archive/layout.js';
import { startWeed, archiveEnv } from '../../../tools/fixtures/weed.js';
import { startFaultProxy } from '../../../tools/fixtures/fault-proxy.js';
import { DAY, archiveCli, checkVisibleManifests, compactedDay, listKeys, localObjects } from './common.js';

const bin = requireTool(t, 'seaweedfs');

if (bin) {
  t.test('killed after its first manifest: every visible manifest is whole, no day record; a rerun completes', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-order');
    const url = 's3://pmtape-order/o';
    const dataDir = await compactedDay(t);
    const local = await localObjects(dataDir);
    const proxy = await startFaultProxy(weed.endpoint, 0);
    t.teardown(() => proxy.close());
    // The first manifest goes through; every write after it stalls, so the run stops right there:
    // any data file still in flight then stays missing for good.
    let manifestSent = false;
    proxy.hold = (req) => {
      if (!/^(PUT|POST)$/.test(req.method ?? '')) return false;
      if (manifestSent) return true;
      manifestSent = /_manifest\.json/.test(req.url ?? '');
      return false;
    };
    const child = spawn(process.execPath, [CLI, 'archive', 'sync', '--data-dir', dataDir], {
      env: { ...process.env, ...archiveEnv(proxy.url, url) },
      stdio: 'ignore',
    });
    const exited = new Promise((res) => child.on('exit', res));
    t.teardown(() => void child.kill('SIGKILL'));
    const manifestThere = async (): Promise<boolean> =>
      (await listKeys(weed.client, 'pmtape-order')).some((k) => k.endsWith('_manifest.json'));
    t.ok(await waitFor(manifestThere, 120_000, 50), 'a manifest landed');
    t.ok(await waitFor(async () => proxy.stats.held > 0 || child.exitCode !== null, 120_000, 50), 'the next write is held');
    child.kill('SIGKILL');
    await exited;

    const keys = await listKeys(weed.client, 'pmtape-order');
    t.notOk(
      keys.some((k) => k.includes('_archive/days/')),
      'no day record: readers of day records see nothing of the day',
    );
    const seen = await checkVisibleManifests(weed.client, 'pmtape-order', 'o/');
    t.ok(seen.manifests.length >= 1, `manifests visible: ${seen.manifests.length}`);
    t.same(seen.problems, [], 'every visible manifest names only files that are in the bucket, whole');
    t.equal(await readPublished(dataDir, DAY), null, 'the day is not recorded as published');

    proxy.hold = null;
    const r = await archiveCli(['sync'], dataDir, proxy.url, url);
    t.equal(r.code, 0, r.stderr);
    t.match(r.summary, { days: 1, files: local.size + 1, failed: 0 });
    t.ok(r.summary.skipped >= seen.manifests.length * 2, `the rerun skips what had landed (${r.summary.skipped})`);
    const v = await archiveCli(['verify'], dataDir, weed.endpoint, url);
    t.equal(v.code, 0, v.stderr);
    t.match(v.summary, { failed: 0, ok: local.size + 1 });
  });
}

// `/healthz` and `/metrics` with an archive configured: the lag in days and bytes of compacted days
// not yet published, degraded past storage.archive.max_lag_days, back to ok once a sync published
// them; failed upload attempts (through a fault proxy) counted in pmtape_archive_upload_errors_total.

import t from 'tap';
import { requireTool } from '../../helpers/toolchains.js';
import { testApp, testConfig } from '../../api/helpers.js';
import { waitFor } from '../../selfhost/helpers.js';
import { loadConfig } from '../../../src/config.js';
import { DAY, archiveCli, compactedDay } from './common.js';
import { startFaultProxy } from '../../../tools/fixtures/fault-proxy.js';
import { startWeed } from '../../../tools/fixtures/weed.js';

const bin = requireTool(t, 'seaweedfs');

if (bin) {
  t.test('archive lag and upload errors in /healthz and /metrics', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-health');
    const url = 's3://pmtape-health/h';
    const dataDir = await compactedDay(t, DAY, 50);
    const base = loadConfig({ dataDir }, { PMTAPE_ARCHIVE_URL: url, PMTAPE_ARCHIVE_ENDPOINT: weed.endpoint });
    const config = testConfig(dataDir, { storage: { ...base.storage, archive: { ...base.storage.archive!, maxLagDays: 0 } } });
    const app = await testApp(t, config);

    const before = (await app.inject({ url: '/healthz' })).json();
    t.equal(before.status, 'degraded', 'one unpublished day is past max_lag_days 0');
    t.equal(before.archive.lag_days, 1);
    t.ok(before.archive.lag_bytes > 0);
    t.equal(before.archive.last_published, null);
    const m1 = (await app.inject({ url: '/metrics' })).body;
    t.match(m1, /^pmtape_archive_lag_days 1$/m);
    t.match(m1, /^pmtape_archive_lag_bytes [1-9]\d*$/m);
    t.match(m1, /^pmtape_archive_upload_errors_total 0$/m);

    const proxy = await startFaultProxy(weed.endpoint, 0.5, 7);
    t.teardown(() => proxy.close());
    const r = await archiveCli(['sync'], dataDir, proxy.url, url);
    t.equal(r.code, 0, r.stderr);

    const after = await waitFor(
      async () => {
        const h = (await app.inject({ url: '/healthz' })).json();
        return h.archive.lag_days === 0 ? h : null;
      },
      60_000,
      200,
    );
    t.ok(after, 'the lag drops to 0 once published');
    t.same(after?.archive, { lag_days: 0, lag_bytes: 0, last_published: DAY });
    t.equal(after?.status, 'ok');
    const m2 = (await app.inject({ url: '/metrics' })).body;
    t.match(m2, /^pmtape_archive_lag_days 0$/m);
    const errors = Number(/^pmtape_archive_upload_errors_total (\d+)$/m.exec(m2)?.[1]);
    t.ok(errors > 0, `failed attempts through the fault proxy are counted (${errors})`);
  });
}

// Publication hooked into compaction, against a real SeaweedFS: `pmtape compact` publishes the day
// it compacted (an `archive {...}` line), and `start`'s background compaction publishes a closed day
// on its own; both leave the day recorded as published and the bucket verifiable.

import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';
import { runCliOnce, waitFor } from '../../selfhost/helpers.js';
import { loadConfig } from '../../../src/config.js';
import { startAutoCompaction } from '../../../src/storage/compaction/auto.js';
import { readPublished } from '../../../src/storage/archive/layout.js';
import { writeFixture } from '../../../tools/fixtures/compaction-logs.js';
import { DAY, archiveCli, listKeys } from './common.js';
import { archiveEnv, startWeed, ACCESS_KEY, SECRET_KEY } from '../../../tools/fixtures/weed.js';

const bin = requireTool(t, 'seaweedfs');

if (bin) {
  t.test("pmtape compact publishes what it compacted; start's background compaction does too", async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-compact');

    const cliDir = mkdtempSync(join(tmpdir(), 'pmtape-archive-compact-'));
    t.teardown(() => rmSync(cliDir, { recursive: true, force: true }));
    await writeFixture(cliDir, { days: [DAY], booksPerDay: 50 });
    const url = 's3://pmtape-compact/cli';
    const r = await runCliOnce(['compact', '--date', DAY, '--data-dir', cliDir], {
      env: archiveEnv(weed.endpoint, url),
      timeoutMs: 300_000,
    });
    t.equal(r.code, 0, r.stderr);
    const line = /^archive (\{.*\})$/m.exec(r.stdout)?.[1];
    t.match(JSON.parse(line ?? '{}'), { days: 1, failed: 0 }, r.stdout);
    t.ok(JSON.parse(line ?? '{}').uploaded > 0);
    t.equal((await readPublished(cliDir, DAY))?.url, url, 'recorded as published');
    t.ok((await listKeys(weed.client, 'pmtape-compact', 'cli/_archive/days/')).length === 1, 'the day record is in the bucket');
    t.equal((await archiveCli(['verify'], cliDir, weed.endpoint, url)).code, 0, 'and verifies');

    const autoDir = mkdtempSync(join(tmpdir(), 'pmtape-archive-auto-'));
    t.teardown(() => rmSync(autoDir, { recursive: true, force: true }));
    await writeFixture(autoDir, { days: [DAY], booksPerDay: 50 });
    const autoUrl = 's3://pmtape-compact/auto';
    process.env.AWS_ACCESS_KEY_ID = ACCESS_KEY;
    process.env.AWS_SECRET_ACCESS_KEY = SECRET_KEY;
    const base = loadConfig({ dataDir: autoDir }, { PMTAPE_ARCHIVE_URL: autoUrl, PMTAPE_ARCHIVE_ENDPOINT: weed.endpoint });
    const config = { ...base, storage: { ...base.storage, compactGraceMs: 0, retentionDays: 7 } };
    const logged: string[] = [];
    const logger = {
      info: (_o: object, m?: string) => void logged.push(`info ${m}`),
      error: (o: object, m?: string) => void logged.push(`error ${m} ${JSON.stringify(o)}`),
    };
    // One run (the first tick), waited for to its end: stopping then never terminates a thread mid-run.
    let done = false;
    const auto = startAutoCompaction(config, logger, 3_600_000, (m) => void (m.type === 'done' && (done = true)));
    t.teardown(() => auto.stop());
    t.ok(await waitFor(async () => done, 180_000, 50), `the background run ended: ${logged.join('; ')}`);
    t.ok(logged.includes('info published to the archive'), `published in the background: ${logged.join('; ')}`);
    await auto.stop();
    t.notOk(
      logged.some((l) => l.startsWith('error')),
      logged.join('; '),
    );
    t.equal((await readPublished(autoDir, DAY))?.url, autoUrl);
    t.equal((await archiveCli(['verify', '--date', DAY], autoDir, weed.endpoint, autoUrl)).code, 0, 'the background publication verifies');
  });
}

// `serve --live-from`: a reader process (empty data dir, archive configured) answers requests
// bounded at or before the archive's last day itself, forwards the rest (no end_time/as_of, or a
// later one) to the live server and relays its answer, relays the stream's WebSocket, and answers
// 502 naming the live server when that one is down. Bad --live-from values are refused by name.

import t from 'tap';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { requireTool } from '../../helpers/toolchains.js';

import { startApi } from '../../../src/api/server.js';
import { syncArchive } from '../../../src/storage/index.js';
import { compactDay } from '../../../src/storage/compaction/compact-day.js';
import { deleteExpiredLogs } from '../../../src/storage/compaction/retention.js';
import { bookRecords, keysFor, seedAll, testConfig, tmpDataDir, writeLog, T0 } from '../../api/helpers.js';
import { runCli, runCliOnce } from '../../selfhost/helpers.js';
import { startWeed, archiveEnv, useTestArchive } from '../../../tools/fixtures/weed.js';

const bin = requireTool(t, 'seaweedfs');
const DAY = '2026-07-26';
const iso = (ms: number): string => new Date(ms).toISOString();

async function get(base: string, path: string, key: string): Promise<{ status: number; body: string; forwarded: string | null }> {
  const r = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await r.text()).replace(/"request_id":"[^"]*"/g, '"request_id":""');
  return { status: r.status, body, forwarded: r.headers.get('x-pmtape-forwarded') };
}

if (bin) {
  t.test('a reader forwards what reaches past the archive to the live server', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-live');
    const url = 's3://pmtape-live/l';
    const archive = useTestArchive(url, weed.endpoint);
    const host = tmpDataDir(t);
    await seedAll(host);
    await compactDay(host, DAY);
    t.match(await syncArchive(host, archive), { days: 1, failed: 0 });
    await deleteExpiredLogs(host, Date.now(), 0, url);
    // Today's records exist only in the host's logs.
    const now = Date.now();
    await writeLog(
      host,
      'wallet-prediction',
      'books',
      'w-9001',
      bookRecords(['7001'], { start: now - 60_000, n: 30, stepMs: 1000, cpEvery: 10, seed: 3 }),
    );
    const { paid } = await keysFor(host);
    const live = await startApi(testConfig(host, { port: 0 }), { logger: false });
    t.teardown(() => live.close());

    const reader = tmpDataDir(t);
    for (const f of [
      ['keys', 'keys.json'],
      ['api', 'cursor.secret'],
    ]) {
      mkdirSync(join(reader, f[0]), { recursive: true });
      copyFileSync(join(host, ...f), join(reader, ...f));
    }
    const env = { ...archiveEnv(weed.endpoint, url), PMTAPE_LOG_LEVEL: 'warn' };
    const child = runCli(t, ['serve', '--data-dir', reader, '--port', '0', '--live-from', live.url], { env, readyTimeoutMs: 120_000 });
    const base = await child.ready;
    t.match(child.stderr, /reading 1 archived day\(s\) from s3:\/\/pmtape-live\/l/);

    const latest = '/v3/wallet-prediction/w-9001/orderbook/latest';
    const fromLive = await get(live.url, latest, paid);
    const viaReader = await get(base, latest, paid);
    t.equal(viaReader.status, 200, 'the reader answers the latest book');
    t.equal(viaReader.body, fromLive.body, "the latest book (past the archive) is the live server's");
    t.equal(viaReader.forwarded, 'live');
    t.match(viaReader.body, new RegExp(iso(now - 60_000).slice(0, 10)), "and it is today's");

    for (const path of [
      `${latest}?as_of=${iso(T0 + 33_333)}`,
      `/v3/wallet-prediction/w-9001/snapshots?end_time=${iso(T0 + 30_000)}&limit=20`,
    ]) {
      const local = await get(base, path, paid);
      t.equal(local.status, 200, `200: ${path}`);
      t.equal(local.forwarded, null, `answered from the archive: ${path}`);
      t.equal(local.body, (await get(live.url, path, paid)).body, `as the host answers: ${path}`);
    }
    const listing = await get(base, '/v3/datasets', paid);
    t.equal(listing.forwarded, null, "the datasets listing is the archive's");

    // The stream's upgrade is relayed to the live server.
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/v3/stream`, { headers: { authorization: `Bearer ${paid}` } });
    t.teardown(() => ws.terminate());
    const first = await new Promise<string>((res, rej) => {
      ws.once('error', rej);
      ws.once('open', () =>
        ws.send(JSON.stringify({ op: 'subscribe', id: 1, channel: 'book', family: 'wallet-prediction', market_id: 'w-9001' })),
      );
      ws.once('message', (m) => res((m as Buffer).toString()));
    });
    t.match(JSON.parse(first), { type: 'subscribed', id: 1 }, 'subscribed through the reader');
    ws.terminate();

    await live.close();
    const down = await get(base, latest, paid);
    t.equal(down.status, 502);
    t.match(down.body, /"code":"upstream_unavailable"/);
    t.match(down.body, new RegExp(live.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    const stillLocal = await get(base, `${latest}?as_of=${iso(T0 + 33_333)}`, paid);
    t.equal(stillLocal.status, 200, 'archived times are still answered');
  });

  t.test('serve --live-from refuses a value that is not a URL, and needs an archive', async (t) => {
    const dir = tmpDataDir(t);
    const bad = await runCliOnce(['serve', '--data-dir', dir, '--port', '0', '--live-from', 'localhost:8080'], {
      env: archiveEnv('http://127.0.0.1:9', 's3://some-bucket/p'),
    });
    t.not(bad.code, 0);
    t.match(bad.stderr, /--live-from must be the live server's URL/);
    const none = await runCliOnce(['serve', '--data-dir', dir, '--port', '0', '--live-from', 'http://127.0.0.1:9'], {
      env: { PMTAPE_ARCHIVE_URL: '' },
    });
    t.not(none.code, 0);
    t.match(none.stderr, /--live-from needs an archive/);
  });
}

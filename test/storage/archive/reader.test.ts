// A stateless reader: an empty data dir with the archive mounted answers a fixed list of requests
// (snapshots, as-of, intervals, coverage, markets, replay, the datasets listing, a file download,
// dataset rows) byte for byte as the recorder host does once its compacted logs are retired (request
// ids aside), and two readers answer 200 requests generated from the day (seeded) as the host does,
// fetching footers and row groups only: far fewer bytes than the files hold. A tiny
// cache bound is honored by evicting the least recently used blocks. Through a link that breaks 30 %
// of requests (503s, resets, cut bodies) the answers are still the same.

import t from 'tap';
import { copyFileSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';
import type { ArchiveConfig } from '../../../src/config.js';
import { mountArchive, syncArchive } from '../../../src/storage/index.js';
import { compactDay } from '../../../src/storage/compaction/compact-day.js';
import { deleteExpiredLogs } from '../../../src/storage/compaction/retention.js';
import { rangeCacheDir } from '../../../src/storage/archive/mount.js';
import { RANGE_BLOCK } from '../../../src/storage/archive/range-cache.js';
import { keysFor, seedAll, testApp, testConfig, tmpDataDir, T0, coinMarket } from '../../api/helpers.js';
import { startWeed, type Weed, useTestArchive } from '../../../tools/fixtures/weed.js';
import { startFaultProxy } from '../../../tools/fixtures/fault-proxy.js';
import { localObjects } from './common.js';
import { rng, writeFixture } from '../../../tools/fixtures/compaction-logs.js';

const bin = requireTool(t, 'seaweedfs');
const DAY = '2026-07-26';
const iso = (ms: number): string => new Date(ms).toISOString();
const TICKER = 'KXBTC15M-26JUL261215-15';

/** Routes of every kind a reader serves (pages, ranges, as-of, intervals, coverage, replay, datasets). */
const ROUTES = [
  '/v3/btc/markets',
  '/v3/btc/markets/540817/snapshots?include_orderbook=true&limit=60',
  `/v3/btc/markets/540817/snapshots?include_orderbook=true&interval=1s&end_time=${iso(T0 + 200_000)}&limit=40`,
  `/v3/btc/markets/540817/snapshots?start_time=${iso(T0 + 20_000)}&end_time=${iso(T0 + 70_000)}&depth=2&include_orderbook=true&limit=25`,
  '/v3/wallet-prediction/markets',
  '/v3/wallet-prediction/w-9001/snapshots?limit=70',
  `/v3/wallet-prediction/w-9001/orderbook/latest?as_of=${iso(T0 + 33_333)}`,
  '/v3/wallet-prediction/w-9001/timeseries?metric=chance&limit=10',
  '/v3/yesno-exchange/markets',
  `/v3/yesno-exchange/${TICKER}/snapshots?include_orderbook=true&limit=25`,
  '/v3/coverage?market_id=540817',
  `/v3/coverage?ticker=${TICKER}&start_time=${iso(T0)}&end_time=${iso(T0 + 3_600_000)}`,
  `/v3/replay?family=coin&market_id=${coinMarket.market_id}&start_time=${T0}&end_time=${T0 + 60_000}&types=book,book_change,trade`,
  `/v3/replay?family=coin&market_id=${coinMarket.market_id}&start_time=${T0}&end_time=${T0 + 30_000}&types=book_snapshot_5_1s`,
  '/v3/datasets',
  '/v3/datasets?family=coin&limit=3',
  `/v3/datasets/rows?family=coin&dataset=book_changes&market_id=${coinMarket.market_id}&start_time=${T0 + 5_000}&end_time=${T0 + 25_000}`,
  `/v3/datasets/rows?family=wallet-prediction&dataset=metrics&market_id=w-9001&start_time=${T0}&end_time=${T0 + 60_000}`,
  '/v3/btc/markets/nope/snapshots',
];

const archiveOf = (weed: Weed, url: string): ArchiveConfig => useTestArchive(url, weed.endpoint);

/**
 * Cursors are signed with the data dir's secret: readers that share it accept each other's (and the
 * host's) next_cursor, as docs/archive.md says to set up behind a load balancer.
 */
function shareCursorSecret(from: string, to: string): void {
  mkdirSync(join(to, 'api'), { recursive: true });
  copyFileSync(join(from, 'api', 'cursor.secret'), join(to, 'api', 'cursor.secret'));
}

type App = Awaited<ReturnType<typeof testApp>>;

/** Status and body of each route, request ids blanked. */
async function answers(app: App, key: string, routes: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const url of routes) {
    const r = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });
    out.set(
      url,
      `${r.statusCode} ${String(r.headers['content-type'])}\n${r.rawPayload.toString('latin1').replace(/"request_id":"[^"]*"/g, '"request_id":""')}`,
    );
  }
  return out;
}

/**
 * `n` distinct requests drawn from the seeded day (markets × routes × times, seeded): snapshot
 * pages and ranges with and without books, 1 s intervals, as-of books, coverage, replay, dataset rows
 * and metric series, at times inside and around the recorded span.
 */
function generatedRequests(n: number, seed = 36): string[] {
  const r = rng(seed);
  const pick = <X>(xs: readonly X[]): X => xs[Math.floor(r() * xs.length)];
  const span = (): [number, number] => {
    const a = T0 - 5_000 + Math.floor(r() * 110_000);
    return [a, a + 1_000 + Math.floor(r() * 40_000)];
  };
  const books = ['/v3/btc/markets/540817', '/v3/wallet-prediction/w-9001', `/v3/yesno-exchange/${TICKER}`];
  const routes: (() => string)[] = [
    () => {
      const [a, b] = span();
      return `${pick(books)}/snapshots?start_time=${iso(a)}&end_time=${iso(b)}&limit=${pick([5, 20, 60])}${pick(['', '&include_orderbook=true', '&include_orderbook=true&depth=3'])}`;
    },
    () => {
      const [a, b] = span();
      return `${pick(books)}/snapshots?include_orderbook=true&interval=1s&start_time=${iso(a)}&end_time=${iso(b)}&limit=${pick([10, 40])}`;
    },
    () => `${pick(books)}/orderbook/latest?as_of=${iso(span()[0])}`,
    () => {
      const [a, b] = span();
      return `/v3/coverage?${pick(['market_id=540817', `ticker=${TICKER}`])}&start_time=${iso(a)}&end_time=${iso(b)}`;
    },
    () => {
      const [a, b] = span();
      return `/v3/replay?family=coin&market_id=${coinMarket.market_id}&start_time=${a}&end_time=${b}&types=${pick(['book', 'book_change', 'trade', 'book,book_change,trade', 'book_snapshot_5_1s'])}`;
    },
    () => {
      const [a, b] = span();
      return `/v3/datasets/rows?family=coin&dataset=${pick(['book_changes', 'trades'])}&market_id=${coinMarket.market_id}&start_time=${a}&end_time=${b}`;
    },
    () => {
      const [a, b] = span();
      return `/v3/wallet-prediction/w-9001/timeseries?metric=chance&start_time=${iso(a)}&end_time=${iso(b)}&limit=${pick([5, 30])}`;
    },
  ];
  const out = new Set<string>();
  while (out.size < n) out.add(pick(routes)());
  return [...out];
}

if (bin) {
  t.test('a data-less reader over the archive answers as the recorder host does', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-reader');
    const archive = archiveOf(weed, 's3://pmtape-reader/r');
    const host = tmpDataDir(t);
    await seedAll(host);
    await compactDay(host, DAY);
    t.match(await syncArchive(host, archive), { days: 1, failed: 0 });
    const ret = await deleteExpiredLogs(host, Date.now(), 0, archive.url);
    t.ok(ret.deleted.length >= 7, 'the host retired its compacted logs');

    const files = await localObjects(host);
    const download = [...files.keys()].find((k) => k.includes('dataset=book_changes') && k.endsWith('.parquet'))!.slice('parquet/'.length);
    const routes = [...ROUTES, `/v3/datasets/files/${download}`];
    const hostKey = (await keysFor(host)).paid; // before the app: it loads the keys at start
    const hostApp = await testApp(t, testConfig(host));
    const expected = await answers(hostApp, hostKey, routes);
    t.ok(
      [...expected.values()].filter((v) => v.startsWith('200 ')).length === routes.length - 1,
      'the host answers every route but the unknown market',
    );

    const reader = tmpDataDir(t);
    const mount = await mountArchive(reader, archive, 1 << 30);
    t.teardown(() => mount.close());
    t.same(mount.days(), [DAY]);
    shareCursorSecret(host, reader);
    const readerKey = (await keysFor(reader)).paid;
    const readerApp = await testApp(t, testConfig(reader, { storage: { ...testConfig(reader).storage, archive } }));
    const got = await answers(readerApp, readerKey, routes);
    for (const r of routes) t.equal(got.get(r), expected.get(r), r);
    // A download's byte ranges and conditionals, from the bucket through the reader, as from the host's disk.
    for (const headers of [
      { range: 'bytes=100-199' },
      { range: 'bytes=-50' },
      { range: 'bytes=999999999-' },
      { 'if-none-match': '"x"', range: 'bytes=0-9' },
    ]) {
      const ask = async (app: App, key: string): Promise<string> => {
        const r = await app.inject({
          method: 'GET',
          url: `/v3/datasets/files/${download}`,
          headers: { authorization: `Bearer ${key}`, ...headers },
        });
        return `${r.statusCode} ${String(r.headers['content-range'])} ${String(r.headers.etag)}\n${r.rawPayload.toString('latin1').replace(/"request_id":"[^"]*"/g, '')}`;
      };
      t.equal(await ask(readerApp, readerKey), await ask(hostApp, hostKey), `download with ${JSON.stringify(headers)}`);
    }
    const parquetFiles = readdirSync(reader, { recursive: true })
      .map(String)
      .filter((p) => p.endsWith('.parquet'));
    t.same(
      parquetFiles.filter((p) => !p.startsWith('archive-cache')),
      [],
      "no part file was written into the reader's tree",
    );
    t.ok(mount.stats.requests > 0, `ranged GETs were made (${mount.stats.requests}, ${mount.stats.bytes} bytes)`);
    // Two readers and the host answer 200 requests generated from the day byte-identically.
    const generated = generatedRequests(200);
    const reader2 = tmpDataDir(t);
    const mount2 = await mountArchive(reader2, archive, 1 << 30);
    t.teardown(() => mount2.close());
    shareCursorSecret(host, reader2);
    const reader2Key = (await keysFor(reader2)).paid;
    const reader2App = await testApp(t, testConfig(reader2, { storage: { ...testConfig(reader2).storage, archive } }));
    const want = await answers(hostApp, hostKey, generated);
    const one = await answers(readerApp, readerKey, generated);
    const two = await answers(reader2App, reader2Key, generated);
    const differ = generated.filter((r) => one.get(r) !== want.get(r) || two.get(r) !== want.get(r));
    t.same(differ, [], `${generated.length} generated requests: both readers answer byte for byte as the host`);
    const served = [...want.values()].filter((v) => v.startsWith('200 ')).length;
    t.ok(served >= 150, `most are answers, not refusals (${served} of ${generated.length} are 200s)`);
  });

  t.test('a reader fetches footers and row groups, not whole files; a tiny cache bound evicts', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-ranges');
    const archive = archiveOf(weed, 's3://pmtape-ranges/r');
    const host = tmpDataDir(t);
    await writeFixture(host, { days: [DAY], booksPerDay: 4_000, coinMarkets: 12, bothOutcomes: true, spanMs: 600_000 });
    await compactDay(host, DAY, { threads: 1 });
    t.match(await syncArchive(host, archive), { days: 1, failed: 0 });
    const total = [...(await localObjects(host)).entries()].filter(([k]) => k.endsWith('.parquet')).reduce((n, [, b]) => n + b.length, 0);
    const biggest = Math.max(...[...(await localObjects(host)).entries()].filter(([k]) => k.endsWith('.parquet')).map(([, b]) => b.length));
    t.ok(biggest > 4 * RANGE_BLOCK, `the fixture's largest file spans many blocks (${biggest} bytes)`);

    const reader = tmpDataDir(t);
    const mount = await mountArchive(reader, archive, 1 << 30);
    t.teardown(() => mount.close());
    const hostKey = (await keysFor(host)).paid;
    const hostApp = await testApp(t, testConfig(host));
    shareCursorSecret(host, reader);
    const { paid } = await keysFor(reader);
    const app = await testApp(t, testConfig(reader, { storage: { ...testConfig(reader).storage, archive } }));
    const t0 = Date.parse(`${DAY}T00:00:01Z`);
    const few = [
      `/v3/wallet-prediction/w-1/snapshots?include_orderbook=true&start_time=${iso(t0 + 60_000)}&limit=20`,
      `/v3/wallet-prediction/w-1/orderbook/latest?as_of=${iso(t0 + 300_000)}`,
      `/v3/replay?family=coin&market_id=50001&start_time=${t0 + 200_000}&end_time=${t0 + 205_000}&types=book`,
    ];
    const want = await answers(hostApp, hostKey, few);
    const got = await answers(app, paid, few);
    for (const r of few) {
      t.equal(got.get(r), want.get(r), r);
      t.match(got.get(r), /^200 /);
    }
    t.ok(mount.stats.bytes < total / 4, `bytes fetched ${mount.stats.bytes} are far below the files' ${total}`);

    // Again: served from the disk cache, no new request.
    const requests = mount.stats.requests;
    const { parquetStore } = await import('../../../src/storage/parquet/reader.js');
    parquetStore(reader).close(); // drop decoded groups so the bytes are read again
    const again = await answers(app, paid, few);
    for (const r of few) t.equal(again.get(r), want.get(r), `again: ${r}`);
    t.equal(mount.stats.requests, requests, 'the second read is served from the disk cache');
    t.ok(mount.stats.hits > 0);

    // A bound of two blocks: reads still answer right, the cache never holds more, old blocks go.
    const small = tmpDataDir(t);
    const bound = 2 * RANGE_BLOCK;
    const tiny = await mountArchive(small, archive, bound);
    t.teardown(() => tiny.close());
    shareCursorSecret(host, small);
    const smallKey = (await keysFor(small)).paid;
    const smallApp = await testApp(t, testConfig(small, { storage: { ...testConfig(small).storage, archive } }));
    const onDisk = (): number => readdirSync(rangeCacheDir(small)).reduce((n, f) => n + statSync(join(rangeCacheDir(small), f)).size, 0);
    const more = [
      ...few,
      `/v3/wallet-prediction/w-1/snapshots?include_orderbook=true&start_time=${iso(t0 + 500_000)}&limit=20`,
      `/v3/replay?family=coin&market_id=50000&start_time=${t0 + 400_000}&end_time=${t0 + 405_000}&types=book`,
    ];
    const wantMore = await answers(hostApp, hostKey, more);
    const gotMore = await answers(smallApp, smallKey, more);
    for (const r of more) t.equal(gotMore.get(r), wantMore.get(r), `tiny cache: ${r}`);
    t.ok(tiny.cachedBytes() <= bound, `the cache holds ${tiny.cachedBytes()} ≤ ${bound} bytes`);
    t.ok(onDisk() <= bound, `and so does the disk (${onDisk()} bytes)`);
    t.ok(tiny.stats.evicted > 0, `blocks were evicted (${tiny.stats.evicted})`);
  });
}

if (bin) {
  t.test('a reader behind a faulty link (30 % of requests fail) still answers as the host does', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-faults');
    const direct = archiveOf(weed, 's3://pmtape-faults/f');
    const host = tmpDataDir(t);
    await seedAll(host);
    await compactDay(host, DAY);
    t.match(await syncArchive(host, direct), { days: 1, failed: 0 });
    await deleteExpiredLogs(host, Date.now(), 0, direct.url);
    const hostKey = (await keysFor(host)).paid;
    const hostApp = await testApp(t, testConfig(host));
    const routes = ROUTES.filter((r) => !r.startsWith('/v3/datasets?'));
    const expected = await answers(hostApp, hostKey, routes);

    const proxy = await startFaultProxy(weed.endpoint, 0.3);
    t.teardown(() => proxy.close());
    const archive = { ...direct, endpoint: proxy.url };
    const reader = tmpDataDir(t);
    shareCursorSecret(host, reader);
    const mount = await mountArchive(reader, archive, 1 << 30);
    t.teardown(() => mount.close());
    t.same(mount.days(), [DAY], 'mounted through the faults');
    const readerKey = (await keysFor(reader)).paid;
    const readerApp = await testApp(t, testConfig(reader, { storage: { ...testConfig(reader).storage, archive } }));
    const got = await answers(readerApp, readerKey, routes);
    for (const r of routes) t.equal(got.get(r), expected.get(r), `through faults: ${r}`);
    const faults = Object.values(proxy.stats.faults).reduce((n, x) => n + x, 0);
    t.ok(faults > 0, `faults were injected (${JSON.stringify(proxy.stats.faults)})`);
  });
}

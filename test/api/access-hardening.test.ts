// What a key reads and what a damaged tree answers: a free key reads no wallet-prediction coverage
// (ids and ranges are part of the paid family), the stream's `from` refuses a cursor of another
// market as REST does, and `GET /v3/datasets` skips (logs, counts) manifest entries with a bad field
// or a name that climbs out of the tree instead of answering 500 or listing them.

import t from 'tap';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { compactDay } from '../../src/storage/testing.js';
import {
  bookRecords,
  catalog,
  coinMarket,
  keysFor,
  seedAll,
  T0,
  testApp,
  testConfig,
  tmpDataDir,
  walletMarket,
  writeLog,
} from './helpers.js';
import { startServer, TestClient } from './stream-helpers.js';

const DAY = '2026-07-26';
const coin2 = {
  ...coinMarket,
  market_id: '540818',
  condition_id: '0xc0ffee02',
  slug: 'btc-updown-15m-1785068100',
  native: { id: '540818' },
};

t.test('a free key reads no wallet-prediction coverage', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const { free, paid } = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = (url: string, key: string) => app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });

  const byFamily = await get('/v3/coverage?family=wallet-prediction', free);
  t.equal(byFamily.statusCode, 403, 'the family asked by name');
  t.equal(byFamily.json().error.code, 'plan_required');
  for (const id of [walletMarket.market_id, walletMarket.condition_id]) {
    const one = await get(`/v3/coverage?market_id=${id}`, free);
    t.equal(one.statusCode, 403, `one wallet market by ${id}`);
    t.equal(one.json().error.code, 'plan_required');
    t.notMatch(one.body, /intervals|first_time/, 'and none of its ranges');
  }
  const list = await get('/v3/coverage?limit=1000', free);
  t.equal(list.statusCode, 200);
  const families = new Set((list.json().data as { family: string }[]).map((e) => e.family));
  t.notOk(families.has('wallet-prediction'), 'the list leaves the paid family out');
  t.ok(families.has('coin') && families.has('yesno-exchange'), 'and keeps the free ones');
  t.notMatch(list.body, new RegExp(walletMarket.market_id), 'no wallet id anywhere in the page');

  const paidList = await get('/v3/coverage?limit=1000', paid);
  t.ok(
    (paidList.json().data as { family: string }[]).some((e) => e.family === 'wallet-prediction'),
    'a paid key reads it',
  );
  t.equal((await get(`/v3/coverage?market_id=${walletMarket.market_id}`, paid)).statusCode, 200);
  t.equal((await get(`/v3/coverage?market_id=${coinMarket.market_id}`, free)).statusCode, 200, "a free key reads a free family's market");
});

t.test("the stream refuses another market's cursor, as REST does", async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  await writeLog(dir, 'coin', 'catalog', coin2.market_id, [catalog(coin2, T0 - 500)]);
  await writeLog(
    dir,
    'coin',
    'books',
    coin2.market_id,
    bookRecords(['3333', '4444'], { start: T0, n: 50, stepMs: 250, cpEvery: 20, seed: 3 }),
  );
  const { paid } = await keysFor(dir);
  const srv = await startServer(t, dir, { full: true });
  const page = async (path: string): Promise<string> => {
    const res = await fetch(`${srv.httpUrl}${path}`, { headers: { authorization: `Bearer ${paid}` } });
    t.equal(res.status, 200, path);
    const next = ((await res.json()) as { next_cursor: string | null }).next_cursor;
    t.ok(next, `${path} has a next_cursor`);
    return next!;
  };
  const coinCursor = await page(`/v3/btc/markets/${coinMarket.market_id}/snapshots?limit=3`);
  const walletCursor = await page(`/v3/wallet-prediction/${walletMarket.market_id}/snapshots?limit=3`);

  const rest = await fetch(`${srv.httpUrl}/v3/btc/markets/${coin2.market_id}/snapshots?limit=3&cursor=${coinCursor}`, {
    headers: { authorization: `Bearer ${paid}` },
  });
  t.equal(rest.status, 400, "REST: another market's cursor");
  t.equal(((await rest.json()) as { error: { code: string } }).error.code, 'invalid_cursor');

  const c = await TestClient.connect(t, srv.wsUrl, paid);
  const sub = (id: number, extra: Record<string, unknown>): void => c.send({ op: 'subscribe', id, channel: 'book', ...extra });
  sub(1, { family: 'coin', coin: 'btc', market_id: coin2.market_id, from: coinCursor });
  const e1 = await c.waitFor((m) => m.id === 1);
  t.equal(e1.type, 'error', 'stream: a cursor of another market of the same family');
  t.equal((e1.error as { code: string }).code, 'invalid_cursor');
  t.match((e1.error as { message: string }).message, /'from'.*another market/);
  sub(2, { family: 'coin', coin: 'btc', market_id: coin2.market_id, from: walletCursor });
  const e2 = await c.waitFor((m) => m.id === 2);
  t.equal((e2.error as { code: string } | undefined)?.code, 'invalid_cursor', "stream: a cursor of another family's market");
  sub(3, { family: 'coin', coin: 'btc', market_id: coinMarket.market_id, from: coinCursor });
  const ok = await c.waitFor((m) => m.id === 3);
  t.equal(ok.type, 'subscribed', 'the cursor of the same market resumes');
  sub(4, { family: 'wallet-prediction', market_id: walletMarket.condition_id, from: walletCursor });
  t.equal((await c.waitFor((m) => m.id === 4)).type, 'subscribed', 'also when the market is named by another id');
});

t.test('the dataset listing skips and counts damaged manifest entries', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  await compactDay(dir, DAY);
  const { paid } = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = (url: string) => app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${paid}` } });
  const before = (await get('/v3/datasets?limit=1000')).json().data as { path: string }[];
  t.equal(
    before.length,
    22,
    'twenty-two published files to start with (candles and markets included; a dataset with no rows that day has one empty file)',
  );
  const pathOf = (re: RegExp): string => before.find((e) => re.test(e.path))!.path;
  const changesPath = pathOf(/family=coin\/dataset=book_changes\//);
  const gapsPath = pathOf(/family=coin\/dataset=gaps\//);

  const part = (family: string, dataset: string): string => join(dir, 'parquet', `family=${family}`, `dataset=${dataset}`, `date=${DAY}`);
  const edit = async (family: string, dataset: string, fn: (m: Record<string, any>) => void): Promise<void> => {
    const path = join(part(family, dataset), '_manifest.json');
    const m = JSON.parse(await readFile(path, 'utf8')) as Record<string, any>;
    fn(m);
    await writeFile(path, JSON.stringify(m));
  };
  const good = (await get('/v3/datasets?family=coin&dataset=trades')).json().data[0] as { sha256: string };
  await edit('coin', 'book_changes', (m) => {
    m.files[0].min_time = 'yesterday'; // a bad field: once a 500 for the whole listing
    m.files.push({ ...m.files[0], file: '../../../../../../etc/passwd', min_time: null });
    m.files.push({ ...m.files[0], file: 'sub/dir.parquet', min_time: null });
    m.files.push(null);
  });
  await edit(
    'coin',
    'trades',
    (m) =>
      void m.files.push({
        file: 'extra.parquet',
        rows: -1,
        bytes: 10,
        sha256: good.sha256,
        min_time: null,
        max_time: null,
        schema_version: 1,
      }),
  );
  await edit('coin', 'gaps', (m) => void (m.files = 'not a list'));
  // A partition folder that is a symlink to a tree outside the Parquet root (the file route refuses it).
  const outside = join(dir, 'elsewhere', `date=${DAY}`);
  await mkdir(outside, { recursive: true });
  await writeFile(
    join(outside, '_manifest.json'),
    JSON.stringify({
      files: [
        { file: `catalog-${DAY}.parquet`, rows: 1, bytes: 1, sha256: good.sha256, min_time: null, max_time: null, schema_version: 1 },
      ],
    }),
  );
  await mkdir(join(dir, 'parquet', 'family=coin', 'dataset=catalog'), { recursive: true });
  await symlink(outside, join(dir, 'parquet', 'family=coin', 'dataset=catalog', 'date=2026-07-27'));

  const res = await get('/v3/datasets?limit=1000');
  t.equal(res.statusCode, 200, 'the listing answers');
  const paths = (res.json().data as { path: string }[]).map((e) => e.path);
  t.same(
    paths.sort(),
    before
      .map((e) => e.path)
      .filter((p) => !/family=coin\/dataset=(book_changes|gaps)\//.test(p))
      .sort(),
    'every sound entry, none of the damaged ones',
  );
  t.notOk(
    paths.some((p) => p.includes('..') || p.includes('passwd') || p.includes('sub/') || p.includes('2026-07-27')),
    'nothing climbs out',
  );
  // Paged, the same entries (the skips do not break the cursor).
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const r = await get(`/v3/datasets?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
    t.equal(r.statusCode, 200);
    seen.push(...(r.json().data as { path: string }[]).map((e) => e.path));
    cursor = r.json().next_cursor as string | null;
  } while (cursor);
  t.same(seen.sort(), paths.sort(), 'pages list the same entries');

  const file = await get(`/v3/datasets/files/${changesPath}`);
  t.equal(file.statusCode, 404, 'the damaged entry is not served either (no 500)');
  const gaps = await get(`/v3/datasets/files/${gapsPath}`);
  t.equal(gaps.statusCode, 404, 'nor a file of a manifest whose list is not a list');

  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const count = (reason: string): number =>
    Number(new RegExp(`pmtape_datasets_skipped_entries_total\\{reason="${reason}"\\} (\\d+)`).exec(metrics)?.[1] ?? 0);
  t.equal(count('bad_field'), 3, 'bad fields counted (the edited time, the null entry, the negative rows)');
  t.equal(count('bad_name'), 2, 'names the file route would not serve counted');
  t.equal(count('bad_manifest'), 1, 'the manifest without a list counted');
  t.equal(count('outside_root'), 1, 'the partition outside the root counted');
});

// Coverage at a bounded cost (src/api/query/coverage.ts, src/api/plugins/expensive.ts): the list's
// per-market spans come from a cache that answers exactly what reading the logs answers, follows
// appends, and re-reads nothing unchanged; and expensive requests are limited per key in how many
// run at once (429 with Retry-After past the limit, the slot freed when an answer ends or its
// client goes away). The CPU a page costs is measured by `npm run bench -- coverage`, not here.

import t from 'tap';
import Fastify from 'fastify';
import { pino } from 'pino';
import { CoverageCache } from '../../src/api/query/coverage.js';
import errorHandler from '../../src/api/plugins/error-handler.js';
import routeHooks from '../../src/api/plugins/route-hooks.js';
import expensive from '../../src/api/plugins/expensive.js';
import { KeyStore, createKey } from '../../src/api/plugins/keys.js';
import { LogChanges } from '../../src/storage/index.js';
import { spanReader, readSpans as direct, coinMarketNamed } from './coverage-fixtures.js';
import { bookRecords, catalog, keysFor, testApp, testConfig, tmpDataDir, writeLog } from './helpers.js';
import { waitFor } from '../selfhost/helpers.js';

const ids = ['cov-a', 'cov-b', 'cov-c', 'cov-d'];

async function seeded(t: Parameters<typeof tmpDataDir>[0]): Promise<{ dir: string; t0: number }> {
  const dir = tmpDataDir(t);
  const t0 = Date.now() - 120_000;
  for (const [i, id] of ids.entries()) {
    await writeLog(dir, 'coin', 'catalog', id, [catalog(coinMarketNamed(id), t0 + i)]);
    // One market has no books at all: its span is null, as reading says.
    if (i < 3)
      await writeLog(
        dir,
        'coin',
        'books',
        id,
        bookRecords([`${id}-up`, `${id}-down`], { start: t0 + 1000 * i, n: 20 + 5 * i, stepMs: 100 }),
      );
  }
  return { dir, t0 };
}

t.test("the coverage list answers what the logs say, follows appends, and a market's own coverage is never stale", async (t) => {
  const { dir, t0 } = await seeded(t);
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const list = async (): Promise<{ market_id: string; datasets: Record<string, unknown> }[]> => {
    const res = await app.inject({ url: '/v3/coverage?family=coin&limit=1000', headers: { authorization: `Bearer ${keys.free}` } });
    t.equal(res.statusCode, 200);
    return res.json<{ data: { market_id: string; datasets: Record<string, unknown> }[] }>().data;
  };
  for (let pass = 0; pass < 2; pass++) {
    // read, then from the cache
    const data = await list();
    t.same(data.map((d) => d.market_id).sort(), ids);
    for (const d of data) t.same(d.datasets, await direct(dir, d.market_id), `pass ${pass}: ${d.market_id} as read from its logs`);
  }
  // An append: the market's own coverage shows it at once, the list within its refresh.
  await writeLog(dir, 'coin', 'books', 'cov-a', bookRecords(['cov-a-up'], { start: t0 + 60_000, n: 3, stepMs: 100, seed: 5 }));
  const want = await direct(dir, 'cov-a');
  const one = await app.inject({ url: '/v3/coverage?market_id=cov-a', headers: { authorization: `Bearer ${keys.free}` } });
  t.same(one.json<{ data: { datasets: unknown } }>().data.datasets, want, "one market's coverage: the append at once");
  const seen = await waitFor(
    async () => (await list()).find((d) => d.market_id === 'cov-a' && JSON.stringify(d.datasets) === JSON.stringify(want)),
    20_000,
    100,
  );
  t.ok(seen, 'the list shows the append');
});

t.test('the cache re-reads only what changed: a clock, real logs and real folder watches', async (t) => {
  const { dir, t0 } = await seeded(t);
  let now = Date.now();
  const changes = new LogChanges(dir);
  const cache = new CoverageCache(dir, changes, 1000, () => now);
  t.teardown(() => cache.close());
  const all = async (): Promise<void> => {
    for (const id of ids) t.same((await cache.get('coin', id, spanReader(dir, id), false)).datasets, await direct(dir, id));
  };
  await all();
  const reads = cache.reads;
  const stamps = cache.stamps;
  t.equal(reads, ids.length * 3, 'the first pass reads every log once');
  await all();
  t.equal(cache.reads, reads, 'within the TTL nothing is read again');
  t.equal(cache.stamps, stamps, 'nor stamped');
  t.ok(
    ids.every((id) => cache.getNow('coin', id) !== undefined),
    'and every market answers without a promise',
  );
  now += 5_000; // past the TTL: watched live logs with no change reported are still served as they are
  await all();
  t.equal(cache.stamps, stamps, 'watched, unchanged logs are not stamped past the TTL');
  // An append to one market: its watch reports it, and the next pass after the TTL re-reads that log only.
  await writeLog(dir, 'coin', 'books', 'cov-b', bookRecords(['cov-b-up'], { start: t0 + 60_000, n: 2, stepMs: 100, seed: 7 }));
  const ok = await waitFor(
    async () => {
      now += 1_001;
      await all();
      return cache.reads > reads;
    },
    20_000,
    100,
  );
  t.ok(ok, 'the changed log was read again');
  t.equal(cache.reads, reads + 1, 'and only it');
  now += 60_000; // past the periodic check: every log is stamped, none read (nothing else changed)
  const r2 = cache.reads;
  await all();
  t.equal(cache.reads, r2, 'the periodic check stamps, finds nothing changed, reads nothing');
});

t.test(
  'expensive requests: at most N running per key, 429 with Retry-After past it, the slot freed when an answer ends or its client leaves',
  async (t) => {
    const dir = tmpDataDir(t);
    const a = await createKey(dir, 'free', 'a');
    const b = await createKey(dir, 'free', 'b');
    const keys = new KeyStore(dir);
    await keys.reload();
    const app = Fastify();
    app.decorate('pmtape', { log: pino({ level: 'silent' }), requestLog: null } as never);
    await app.register(errorHandler);
    await app.register(routeHooks, { keys, requestLog: null });
    await app.register(expensive, { maxPerKey: 2 });
    let entered = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    app.get('/slow', { config: { plan: 'free', expensive: true } }, async () => {
      entered++;
      await gate;
      return { ok: true };
    });
    app.get('/cheap', { config: { plan: 'free' } }, async () => ({ ok: true }));
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    t.teardown(() => app.close());
    const auth = (k: string) => ({ authorization: `Bearer ${k}` });

    const held = [fetch(`${base}/slow`, { headers: auth(a.key) }), fetch(`${base}/slow`, { headers: auth(a.key) })];
    t.ok(await waitFor(async () => entered === 2, 20_000, 20), 'two running for key a');
    const third = await fetch(`${base}/slow`, { headers: auth(a.key) });
    t.equal(third.status, 429, 'a third from the same key is refused at once');
    t.equal(third.headers.get('retry-after'), '1');
    const body = (await third.json()) as { error: { code: string; message: string } };
    t.equal(body.error.code, 'rate_limited');
    t.match(body.error.message, /2 expensive requests/);
    t.equal((await fetch(`${base}/cheap`, { headers: auth(a.key) })).status, 200, 'cheap routes of the same key are not limited');
    const other = fetch(`${base}/slow`, { headers: auth(b.key) });
    t.ok(await waitFor(async () => entered === 3, 20_000, 20), 'another key runs beside them');

    // A client that goes away frees its slot: key b leaves, then runs two more.
    const ac = new AbortController();
    const gone = fetch(`${base}/slow`, { headers: auth(b.key), signal: ac.signal }).catch(() => null);
    t.ok(await waitFor(async () => entered === 4, 20_000, 20));
    ac.abort();
    await gone;
    const again = fetch(`${base}/slow`, { headers: auth(b.key) });
    t.ok(await waitFor(async () => entered === 5, 20_000, 20), 'the slot of the client that left is free again');

    release();
    for (const r of [...held, other, again]) t.equal((await r).status, 200);
    // Finished answers free their slots: key a runs two again.
    const next = await Promise.all([fetch(`${base}/slow`, { headers: auth(a.key) }), fetch(`${base}/slow`, { headers: auth(a.key) })]);
    t.same(
      next.map((r) => r.status),
      [200, 200],
    );
  },
);

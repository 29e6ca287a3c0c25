// Coin discovery against the real sim: the catalogue also lists `sol`, which the sim's recorder
// config leaves out. Without discovery only configured coins are recorded; with `"coins": "all"`
// sol's markets and books are recorded too and `/v3/sol/...` serves them. Config validation of
// the `coins` field names the field.

import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSim } from '../../../src/sim/server.js';
import { startRecorders } from '../../../src/recorders/host.js';
import { loadConfig } from '../../../src/config.js';
import { buildApp } from '../../../src/api/app.js';
import { createKey } from '../../../src/api/plugins/keys.js';
import type { CoinMarket } from '../../../src/schema/market.js';
import type { Recorded } from '../../../src/schema/observation.js';
import { readAll, simConfig, tempDir, waitFor } from '../helpers.js';

const coinsOf = (logs: Map<string, Recorded[]>): Set<string> => {
  const out = new Set<string>();
  for (const recs of logs.values()) for (const r of recs) if (r.type === 'catalog') out.add((r.market as CoinMarket).coin);
  return out;
};

t.test('the sim lists an unlisted coin in its catalogue but leaves it out of the recorder config', async (t) => {
  const sim = await startSim({ seed: 31, windowScale: 0.02, coins: ['btc'], windows: ['5m'] });
  t.teardown(() => sim.close());
  t.same(sim.config.coins, ['btc']);
  const body = (await (await fetch(`${sim.url}/catalog/events?series_slug=sol-up-or-down-5m`)).json()) as { slug: string }[];
  t.ok(body.length > 0 && body.every((e) => /^sol-updown-5m-\d+$/.test(e.slug)), `sol events listed: ${body.length}`);
  const active = (await (await fetch(`${sim.url}/catalog/events?active=true&closed=false`)).json()) as { slug: string; closed: boolean }[];
  t.ok(
    active.some((e) => e.slug.startsWith('sol-')) && active.some((e) => e.slug.startsWith('btc-')),
    'the active listing holds both coins',
  );
  t.ok(
    active.every((e) => !e.closed),
    'closed=false filters closed events',
  );
});

t.test('without discovery only configured coins are recorded, even though the catalogue lists more', async (t) => {
  const sim = await startSim({ seed: 32, windowScale: 0.02, rate: 200, coins: ['btc'], windows: ['5m'] });
  t.teardown(() => sim.close());
  const dir = tempDir();
  const { config } = simConfig(sim.config, dir);
  t.equal(config.discoverCoins, false);
  const host = await startRecorders(config, { kinds: ['catalog', 'clob'], statusFile: false });
  let stopped = false;
  t.teardown(() => (stopped ? undefined : host.stop()));
  t.ok(await waitFor(async () => (await readAll(dir, 'books')).size > 0, 8000), 'btc books recorded');
  await new Promise((r) => setTimeout(r, 1000));
  await host.stop();
  stopped = true;
  t.same([...coinsOf(await readAll(dir, 'catalog'))], ['btc'], 'only btc markets in the catalogue logs');
  const books = await readAll(dir, 'books');
  const catalog = await readAll(dir, 'catalog');
  t.ok(
    [...books.keys()].every((id) => catalog.has(id)),
    'every books log belongs to a recorded btc market',
  );
});

t.test('with "coins": "all" the catalog recorder discovers sol, records its markets and books, and the API serves them', async (t) => {
  const sim = await startSim({ seed: 33, windowScale: 0.02, rate: 200, coins: ['btc'], windows: ['5m'] });
  t.teardown(() => sim.close());
  const dir = tempDir();
  const { config } = simConfig(sim.config, dir, { coins: 'all' });
  t.equal(config.discoverCoins, true);
  t.same(config.coins, ['btc', 'eth', 'bnb'], '"all" keeps the default coins and adds discovery');
  const host = await startRecorders(config, { kinds: ['catalog', 'clob'], statusFile: false });
  let stopped = false;
  t.teardown(() => (stopped ? undefined : host.stop()));
  const solIds = async (): Promise<string[]> => {
    const out: string[] = [];
    for (const [id, recs] of await readAll(dir, 'catalog'))
      if (recs.some((r) => r.type === 'catalog' && (r.market as CoinMarket).coin === 'sol')) out.push(id);
    return out;
  };
  t.ok(await waitFor(async () => (await solIds()).length > 0, 8000), 'sol markets recorded');
  // The clob recorder follows the directory: an open sol market gets its book recorded.
  t.ok(
    await waitFor(async () => {
      const books = await readAll(dir, 'books');
      return (await solIds()).some((id) => (books.get(id) ?? []).some((r) => r.type === 'book'));
    }, 10_000),
    'a sol book recorded',
  );
  await host.stop();
  stopped = true;
  const coins = coinsOf(await readAll(dir, 'catalog'));
  t.ok(coins.has('btc') && coins.has('sol'), `recorded coins: ${[...coins].join(',')}`);
  t.notOk(coins.has('eth') || coins.has('bnb'), 'coins the catalogue does not list are not invented');

  // The read side serves the discovered coin although it is not in config `coins`.
  const key = (await createKey(dir, 'paid', 'discovery')).key;
  const app = await buildApp({ config: { ...config, rateLimits: null, logLevel: 'silent' }, logger: false, keyPollMs: 50 });
  t.teardown(() => app.close());
  const get = async (url: string): Promise<{ status: number; body: any }> => {
    const r = await app.inject({ url, headers: { authorization: `Bearer ${key}` } });
    return { status: r.statusCode, body: r.json() };
  };
  const list = await get('/v3/sol/markets?limit=100');
  t.equal(list.status, 200);
  t.ok(
    list.body.data.length > 0 &&
      list.body.data.every((m: any) => /^sol-updown-5m-/.test(m.native?.slug) && /^SOL Up or Down/.test(m.question)),
    `sol markets served: ${list.body.data.length}`,
  );
  t.equal((await get('/v3/doge/markets')).status, 404, 'a coin never recorded stays unknown');
});

t.test('config coins: "all", a "*" entry and lists are accepted; anything else names the field', async (t) => {
  const dir = tempDir();
  const load = (coins: unknown) => {
    const file = join(dir, 'c.json');
    writeFileSync(file, JSON.stringify({ coins }));
    return loadConfig({ config: file, dataDir: dir }, {});
  };
  t.match(load('all'), { coins: ['btc', 'eth', 'bnb'], discoverCoins: true });
  t.match(load(['SOL', '*']), { coins: ['sol'], discoverCoins: true });
  t.match(load(['btc']), { coins: ['btc'], discoverCoins: false });
  t.match(loadConfig({ dataDir: dir }, {}), { coins: ['btc', 'eth', 'bnb'], discoverCoins: false });
  t.throws(() => load('everything'), /config: coins must be "all" or an array of coin names/);
  t.throws(() => load(42), /config: coins must be "all"/);
  t.throws(() => load(['btc', '']), /config: coins\[1\] must be "all"/);
  t.throws(() => load(['btc', 'eth/usd']), /config: coins\[1\]/);
});

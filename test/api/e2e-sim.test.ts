// End to end on emulator data: `sim` serves the four upstream kinds on loopback, a real `record`
// process writes the data dir, and the API reads it while recording continues. Shapes, the alias,
// the wallet mirror, live (non-stale) latest books and cursor walks are checked on that data.

import t from 'tap';
import { join } from 'node:path';
import { createKey } from '../../src/api/plugins/keys.js';
import { testApp, testConfig, tmpDataDir } from './helpers.js';
import { runCli } from '../selfhost/helpers.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('routes on data recorded from the emulators', async (t) => {
  const dir = tmpDataDir(t);
  const cfg = join(dir, 'sim-config.json');
  await runCli(t, ['sim', '--port', '0', '--seed', '5', '--window-scale', '0.02', '--config-out', cfg]).ready;
  const rec = runCli(t, ['record', '--config', cfg, '--data-dir', join(dir, 'data')]);
  await rec.ready;
  const dataDir = join(dir, 'data');
  const key = (await createKey(dataDir, 'paid', 'e2e')).key;
  const app = await testApp(t, testConfig(dataDir));
  const get = async (url: string): Promise<any> => {
    const r = await app.inject({ url, headers: { authorization: `Bearer ${key}` } });
    if (r.statusCode !== 200) throw new Error(`${url}: ${r.statusCode} ${r.body}`);
    return r.json();
  };
  // Wait until every family has books (bounded: the emulators publish within seconds).
  let cov: any[] = [];
  for (let i = 0; i < 60; i++) {
    cov = (await get('/v3/coverage?limit=1000')).data;
    const fams = new Set(cov.filter((c) => c.datasets.books && c.datasets.books.last_seq > 20).map((c) => c.family));
    if (fams.size === 3) break;
    await sleep(500);
  }
  const withBooks = (f: string): any[] => cov.filter((c) => c.family === f && c.datasets.books && c.datasets.books.last_seq > 20);

  t.test('coin family', async (t) => {
    const markets = (await get('/v3/btc/markets?limit=1000')).data;
    t.ok(markets.length > 0);
    for (const m of markets) {
      t.same(Object.keys(m).sort(), [
        'condition_id',
        'end_time',
        'event_id',
        'market_id',
        'native',
        'outcomes',
        'question',
        'start_time',
        'status',
      ]);
    }
    const c = withBooks('coin')[0];
    t.ok(c, 'a coin market has books');
    let coin = '';
    for (const k of ['btc', 'eth', 'bnb']) {
      if ((await get(`/v3/${k}/markets?limit=1000`)).data.some((m: any) => m.market_id === c.market_id)) coin = k;
    }
    t.ok(coin, 'the market is listed under its coin');
    const snaps = await get(`/v3/${coin}/markets/${c.market_id}/snapshots?limit=1000&include_orderbook=true`);
    t.ok(snaps.data.length > 0);
    for (let i = 1; i < snaps.data.length; i++) t.ok(snaps.data[i].seq > snaps.data[i - 1].seq, 'seq strictly increasing');
    for (const s of snaps.data) {
      for (const b of s.books) {
        for (let i = 1; i < b.bids.length; i++) t.ok(b.bids[i - 1][0] > b.bids[i][0]);
        for (let i = 1; i < b.asks.length; i++) t.ok(b.asks[i - 1][0] < b.asks[i][0]);
      }
    }
  });

  t.test('wallet family: alias, mirror, metrics', async (t) => {
    const w = withBooks('wallet-prediction')[0];
    t.ok(w, 'a wallet market has books');
    const a = await app.inject({
      url: `/v3/wallet-prediction/${w.market_id}/snapshots?limit=20&end_time=${Date.parse(w.datasets.books.last_time)}`,
      headers: { authorization: `Bearer ${key}` },
    });
    const b = await app.inject({
      url: `/v3/partner-venue/${w.market_id}/snapshots?limit=20&end_time=${Date.parse(w.datasets.books.last_time)}`,
      headers: { authorization: `Bearer ${key}` },
    });
    t.equal(a.body, b.body);
    const up = a.json().data;
    const down = (
      await get(`/v3/wallet-prediction/${w.market_id}/snapshots?limit=20&outcome=Down&end_time=${Date.parse(w.datasets.books.last_time)}`)
    ).data;
    t.equal(up.length, down.length);
    for (let i = 0; i < up.length; i++) {
      t.equal(down[i].seq, up[i].seq);
      t.same(
        down[i].bids.map((l: number[]) => [Math.round((1 - l[0]) * 1e6) / 1e6, l[1]]),
        up[i].asks.map((l: number[]) => [Math.round(l[0] * 1e6) / 1e6, l[1]]),
      );
    }
    const markets = (await get('/v3/wallet-prediction/markets?limit=1000')).data;
    t.ok(markets.every((m: any) => m.outcomes.length === 2 && m.topic_id && m.condition_id));
    if (w.datasets.metrics) {
      const ts = await get(`/v3/wallet-prediction/${w.market_id}/timeseries?metric=chance`);
      t.ok(ts.data.every((x: any) => x.metric === 'chance'));
    }
    t.same(await get(`/v3/wallet-prediction/${w.market_id}/trades`), { data: [], next_cursor: null });
  });

  t.test('yes/no family keeps native text', async (t) => {
    const y = withBooks('yesno-exchange')[0];
    t.ok(y, 'a yes/no ticker has books');
    const s = (await get(`/v3/yesno-exchange/${y.market_id}/snapshots?include_orderbook=true&limit=5`)).data;
    t.ok(s.length > 0);
    for (const x of s) {
      t.ok(['dollars', 'cents'].includes(x.units));
      t.ok(x.yes.prices.every((p: unknown) => typeof p === 'string'));
      t.ok(x.yes.prices.length <= 100 && x.no.prices.length <= 100);
    }
  });

  t.test('a live market is not stale; a killed recorder leaves stale books', async (t) => {
    let live = false;
    for (let i = 0; i < 20 && !live; i++) {
      for (const c of (await get('/v3/coverage?family=wallet-prediction&limit=1000')).data) {
        const r = await app.inject({
          url: `/v3/wallet-prediction/${c.market_id}/orderbook/latest`,
          headers: { authorization: `Bearer ${key}` },
        });
        if (r.statusCode === 200 && r.json().data.stale === false) live = true;
      }
      if (!live) await sleep(300);
    }
    t.ok(live, 'some wallet market is recorded live');
    rec.proc.kill('SIGKILL');
    await rec.exited;
    // The status file ages out (10 s) and every latest book turns stale.
    let allStale = false;
    for (let i = 0; i < 40 && !allStale; i++) {
      await sleep(500);
      allStale = true;
      for (const c of (await get('/v3/coverage?family=wallet-prediction&limit=1000')).data) {
        const r = await app.inject({
          url: `/v3/wallet-prediction/${c.market_id}/orderbook/latest`,
          headers: { authorization: `Bearer ${key}` },
        });
        if (r.statusCode === 200 && r.json().data.stale !== true) allStale = false;
      }
    }
    t.ok(allStale, 'after the recorder died every wallet latest book is stale');
  });
});

// Every REST route of the contract on a seeded data dir: shapes exactly as API.md, the alias,
// trades, 404s for unknown markets/tickers/coins, parameter validation and the error envelope.

import t from 'tap';
import { coinMarket, keysFor, seedAll, testApp, testConfig, tmpDataDir, walletMarket, yesnoMarket } from './helpers.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

t.test('routes on a seeded data dir', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = async (url: string, key = keys.paid): Promise<{ status: number; body: any; headers: Record<string, unknown> }> => {
    const r = await app.inject({ url, headers: { authorization: `Bearer ${key}` } });
    return { status: r.statusCode, body: r.json(), headers: r.headers };
  };
  const envelope = (t: any, body: any, status: number, code: string): void => {
    t.same(Object.keys(body), ['error']);
    t.same(Object.keys(body.error).sort(), ['code', 'message', 'request_id', 'status']);
    t.equal(body.error.status, status);
    t.equal(body.error.code, code);
    t.type(body.error.request_id, 'string');
    t.ok(body.error.request_id.length > 0);
  };

  t.test('wallet markets list every identifier together with the exact contract fields', async (t) => {
    const r = await get('/v3/wallet-prediction/markets');
    t.equal(r.status, 200);
    t.equal(r.body.next_cursor, null);
    t.same(
      Object.keys(r.body.data[0]).sort(),
      [
        'chain',
        'coin',
        'condition_id',
        'created_time',
        'end_time',
        'liquidity',
        'market_id',
        'outcomes',
        'participants',
        'resolution',
        'resolved_time',
        'start_time',
        'status',
        'topic_id',
        'updated_time',
        'volume',
        'winning_outcome',
        'window',
      ].sort(),
    );
    t.equal(r.body.data[0].topic_id, walletMarket.topic_id);
    t.same(r.body.data[0].outcomes, walletMarket.outcomes);
    t.match(r.body.data[0].start_time, ISO);
    t.equal((await get('/v3/wallet-prediction/markets?status=resolved')).body.data.length, 0);
    t.equal((await get('/v3/wallet-prediction/markets?status=open&coin=btc&window=15m')).body.data.length, 1);
    t.equal((await get('/v3/wallet-prediction/markets?coin=eth')).body.data.length, 0);
    t.equal((await get('/v3/wallet-prediction/markets?start_time=2026-07-26T12:20:00Z')).body.data.length, 0, 'window overlap filter');
    t.equal((await get('/v3/wallet-prediction/markets?end_time=2026-07-26T12:05:00Z')).body.data.length, 1);
  });

  t.test('the partner-venue alias answers byte-identical bodies with interchangeable cursors', async (t) => {
    for (const path of [
      '/markets',
      '/w-9001/orderbook/latest',
      '/w-9001/snapshots?limit=3',
      '/w-9001/timeseries?metric=price&limit=2',
      '/w-9001/trades',
    ]) {
      const a = await app.inject({ url: `/v3/wallet-prediction${path}`, headers: { authorization: `Bearer ${keys.paid}` } });
      const b = await app.inject({ url: `/v3/partner-venue${path}`, headers: { authorization: `Bearer ${keys.paid}` } });
      t.equal(a.statusCode, 200, path);
      t.equal(a.body, b.body, path);
    }
    const first = await get('/v3/wallet-prediction/w-9001/snapshots?limit=3');
    const viaAlias = await get(`/v3/partner-venue/w-9001/snapshots?limit=3&cursor=${first.body.next_cursor}`);
    const direct = await get(`/v3/wallet-prediction/w-9001/snapshots?limit=3&cursor=${first.body.next_cursor}`);
    t.equal(viaAlias.status, 200);
    t.same(viaAlias.body, direct.body);
    t.ok(viaAlias.body.data[0].seq > first.body.data[2].seq);
  });

  t.test('wallet snapshots: full book per observation, the mirror for the other outcome, depth and include_orderbook', async (t) => {
    const up = await get('/v3/wallet-prediction/w-9001/snapshots?limit=5');
    t.equal(up.body.data.length, 5);
    const s = up.body.data[0];
    t.same(Object.keys(s).sort(), ['asks', 'bids', 'market_id', 'outcome', 'receive_time', 'seq', 'source_time', 'token_id']);
    t.equal(s.outcome, 'Up');
    t.equal(s.token_id, '7001');
    t.ok(s.bids.every((l: unknown[]) => l.length === 2 && l.every((x) => typeof x === 'number')));
    for (let i = 1; i < s.bids.length; i++) t.ok(s.bids[i - 1][0] > s.bids[i][0], 'bids best first');
    for (let i = 1; i < s.asks.length; i++) t.ok(s.asks[i - 1][0] < s.asks[i][0], 'asks best first');
    const seqs = up.body.data.map((x: any) => x.seq);
    t.same(
      seqs,
      [...seqs].sort((a, b) => a - b),
    );
    const down = await get('/v3/wallet-prediction/w-9001/snapshots?limit=5&outcome=Down');
    const d = down.body.data[0];
    t.equal(d.outcome, 'Down');
    t.equal(d.token_id, '7002');
    t.equal(d.seq, s.seq);
    t.same(
      d.bids.map((l: number[]) => [Number((1 - l[0]).toFixed(6)), l[1]]),
      s.asks,
      'Down bids are Up asks at 1 − p',
    );
    t.same(
      d.asks.map((l: number[]) => [Number((1 - l[0]).toFixed(6)), l[1]]),
      s.bids,
    );
    const shallow = await get('/v3/wallet-prediction/w-9001/snapshots?limit=1&depth=2');
    t.equal(shallow.body.data[0].bids.length, 2);
    const bare = await get('/v3/wallet-prediction/w-9001/snapshots?limit=1&include_orderbook=false');
    t.notOk('bids' in bare.body.data[0]);
    t.equal((await get('/v3/wallet-prediction/w-9001/snapshots?outcome=Sideways')).status, 400);
  });

  t.test('wallet latest is stale without a live recorder and accepts condition id, slug and topic id', async (t) => {
    const a = await get('/v3/wallet-prediction/w-9001/orderbook/latest');
    t.equal(a.status, 200);
    t.equal(a.body.data.stale, true);
    for (const id of [walletMarket.condition_id, walletMarket.slug, walletMarket.topic_id]) {
      t.same((await get(`/v3/wallet-prediction/${id}/orderbook/latest`)).body, a.body, String(id));
    }
    const last = await get('/v3/wallet-prediction/w-9001/snapshots?order=desc&limit=1');
    t.equal(a.body.data.seq, last.body.data[0].seq, 'latest = newest snapshot');
    t.same(a.body.data.bids, last.body.data[0].bids);
  });

  t.test('timeseries keeps the three metrics apart and requires metric', async (t) => {
    for (const metric of ['chance', 'price', 'last_trade']) {
      const r = await get(`/v3/wallet-prediction/w-9001/timeseries?metric=${metric}&limit=1000`);
      t.equal(r.status, 200);
      t.ok(r.body.data.length > 0);
      t.ok(r.body.data.every((x: any) => x.metric === metric && x.outcome === 'Up'));
      t.same(Object.keys(r.body.data[0]).sort(), ['metric', 'outcome', 'seq', 'time', 'value']);
    }
    const asc = (await get('/v3/wallet-prediction/w-9001/timeseries?metric=price&limit=1000')).body.data;
    const desc = (await get('/v3/wallet-prediction/w-9001/timeseries?metric=price&limit=1000&order=desc')).body.data;
    t.same(desc, [...asc].reverse(), 'desc is asc reversed');
    const window = (
      await get('/v3/wallet-prediction/w-9001/timeseries?metric=price&start_time=2026-07-26T12:00:10Z&end_time=2026-07-26T12:00:40Z')
    ).body.data;
    t.ok(window.length > 0 && window.every((x: any) => x.time >= '2026-07-26T12:00:10.000Z' && x.time < '2026-07-26T12:00:40.000Z'));
    const down = await get('/v3/wallet-prediction/w-9001/timeseries?metric=chance&outcome=Down');
    t.ok(down.body.data.length > 0 && down.body.data.every((x: any) => x.outcome === 'Down'));
    const missing = await get('/v3/wallet-prediction/w-9001/timeseries');
    envelope(t, missing.body, 400, 'invalid_parameter');
    t.match(missing.body.error.message, /metric/);
    envelope(t, (await get('/v3/wallet-prediction/w-9001/timeseries?metric=volume')).body, 400, 'invalid_parameter');
  });

  t.test('trades are the empty dataset for a known market and 404 for an unknown one', async (t) => {
    t.same((await get('/v3/wallet-prediction/w-9001/trades')).body, { data: [], next_cursor: null });
    const r = await get('/v3/wallet-prediction/nope/trades');
    envelope(t, r.body, 404, 'not_found');
    t.match(r.body.error.message, /\/v3\/wallet-prediction\/markets/);
  });

  t.test('coin markets and snapshots: raw, with books, by condition id or slug, unknown coin 404', async (t) => {
    const m = await get('/v3/btc/markets');
    t.same(Object.keys(m.body.data[0]).sort(), [
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
    t.same(m.body.data[0].native, coinMarket.native);
    t.equal((await get('/v3/btc/markets?status=closed')).body.data.length, 0);
    t.equal((await get('/v3/eth/markets')).body.data.length, 0, 'configured coin without markets: empty');
    envelope(t, (await get('/v3/doge/markets')).body, 404, 'not_found');
    const s = await get('/v3/btc/markets/540817/snapshots?limit=3');
    t.same(Object.keys(s.body).sort(), ['data', 'next_cursor']);
    t.same(Object.keys(s.body.data[0]).sort(), ['market_id', 'receive_time', 'seq', 'source_time']);
    const b = await get('/v3/btc/markets/540817/snapshots?limit=3&include_orderbook=true&depth=1');
    t.same(
      b.body.data[1].books.map((x: any) => x.outcome),
      ['Up', 'Down'],
    );
    t.ok(b.body.data[1].books.every((x: any) => x.bids.length <= 1 && x.asks.length <= 1));
    for (const id of [coinMarket.condition_id, coinMarket.slug])
      t.same((await get(`/v3/btc/markets/${id}/snapshots?limit=3`)).body.data, s.body.data);
    envelope(t, (await get('/v3/eth/markets/540817/snapshots')).body, 404, 'not_found');
    envelope(t, (await get('/v3/btc/markets/999/snapshots')).body, 404, 'not_found');
  });

  t.test('coin snapshots never serve a book inside a gap', async (t) => {
    const gapStart = Date.parse('2026-07-26T12:00:40.000Z');
    const gapEnd = Date.parse('2026-07-26T12:00:50.000Z');
    const r = await get(
      `/v3/btc/markets/540817/snapshots?start_time=${gapStart - 2000}&end_time=${gapEnd + 2000}&limit=1000&include_orderbook=true`,
    );
    t.ok(r.body.data.length > 0);
    const inside = r.body.data.filter((x: any) => Date.parse(x.receive_time) >= gapStart && Date.parse(x.receive_time) < gapEnd);
    t.same(inside, []);
  });

  t.test('yes/no markets and snapshots keep native text; unknown ticker points at the markets route', async (t) => {
    const m = await get('/v3/yesno-exchange/markets?series=KXBTC15M', keys.free);
    t.same(Object.keys(m.body.data[0]).sort(), [
      'close_time',
      'event_ticker',
      'native',
      'open_time',
      'result',
      'series_ticker',
      'status',
      'ticker',
      'title',
    ]);
    t.equal((await get('/v3/yesno-exchange/markets?series=KXETH15M', keys.free)).body.data.length, 0);
    t.equal((await get('/v3/yesno-exchange/markets?status=finalized', keys.free)).body.data.length, 0);
    const bare = await get(`/v3/yesno-exchange/${yesnoMarket.ticker}/snapshots?limit=2`, keys.free);
    t.same(Object.keys(bare.body.data[0]).sort(), ['levels', 'observed_time', 'receive_time', 'seq', 'ticker', 'units']);
    const full = await get(`/v3/yesno-exchange/${yesnoMarket.ticker}/snapshots?limit=2&include_orderbook=true&depth=2`, keys.free);
    const s = full.body.data[0];
    t.equal(s.units, 'dollars');
    t.same(s.yes, { prices: ['0.5200', '0.5100'], sizes: ['120.00', '121.00'] });
    t.same(s.levels, { yes: 3, no: 3 });
    t.equal((await get(`/v3/yesno-exchange/${yesnoMarket.ticker}/snapshots?depth=101`, keys.free)).status, 400);
    const unknown = await get('/v3/yesno-exchange/KXNOPE-1/snapshots', keys.free);
    envelope(t, unknown.body, 404, 'not_found');
    t.match(unknown.body.error.message, /\/v3\/yesno-exchange\/markets/);
    const latest = await get(`/v3/yesno-exchange/${yesnoMarket.ticker}/orderbook/latest`, keys.free);
    t.equal(latest.body.data.seq, 60);
    t.equal(latest.body.data.stale, true, 'no live recorder: stale');
    const asOf = await get(`/v3/yesno-exchange/${yesnoMarket.ticker}/orderbook/latest?as_of=2026-07-26T12:00:10.500Z&depth=1`, keys.free);
    t.equal(asOf.body.data.seq, 11, 'the book received at 12:00:10 is the one standing at 12:00:10.5');
    t.equal(asOf.body.data.yes.prices.length, 1);
    const bySource = await get(
      `/v3/yesno-exchange/${yesnoMarket.ticker}/orderbook/latest?as_of=2026-07-26T12:00:10.950Z&clock=source`,
      keys.free,
    );
    t.equal(bySource.body.data.seq, 12, 'venue time 12:00:10.900 counts on the source clock');
  });

  t.test('coverage lists first/last per dataset and the books gap with its reason', async (t) => {
    const c = await get('/v3/coverage?market_id=540817', keys.free);
    t.equal(c.status, 200);
    t.same(c.body.data.gaps, [{ start: '2026-07-26T12:00:40.000Z', end: '2026-07-26T12:00:50.000Z', reason: 'disconnected' }]);
    t.equal(c.body.data.intervals[0].start, '2026-07-26T12:00:00.000Z');
    t.equal(c.body.data.datasets.books.first_time, '2026-07-26T12:00:00.000Z');
    t.equal(c.body.data.datasets.metrics, null);
    const y = await get(`/v3/coverage?family=yesno-exchange&ticker=${yesnoMarket.ticker}`, keys.free);
    t.equal(y.body.data.market_id, yesnoMarket.ticker);
    // Paged across families (a paid key: the wallet family's coverage needs the paid plan).
    const all = await get('/v3/coverage?limit=2', keys.paid);
    t.equal(all.body.data.length, 2);
    const rest = await get(`/v3/coverage?limit=2&cursor=${all.body.next_cursor}`, keys.paid);
    t.same(
      rest.body.data.map((x: any) => x.family),
      ['yesno-exchange'],
    );
    t.equal(rest.body.next_cursor, null);
    const freeList = await get('/v3/coverage?limit=2', keys.free);
    t.same(
      freeList.body.data.map((x: any) => x.family),
      ['coin', 'yesno-exchange'],
      'a free key lists the free families',
    );
    envelope(t, (await get('/v3/coverage?market_id=zzz', keys.free)).body, 404, 'not_found');
    const before = await get('/v3/coverage?market_id=540817&end_time=2026-07-26T11:00:00Z', keys.free);
    t.same(before.body.data.intervals, [], 'nothing before the first capture');
  });

  t.test('bad parameters are invalid_parameter naming the parameter', async (t) => {
    const cases: [string, RegExp][] = [
      ['/v3/btc/markets?bogus=1', /'bogus'/],
      ['/v3/btc/markets?limit=1001', /'limit'/],
      ['/v3/btc/markets?limit=abc', /'limit'/],
      ['/v3/btc/markets/540817/snapshots?interval=2m', /'interval'/],
      ['/v3/btc/markets/540817/snapshots?start_time=yesterday', /'start_time'/],
      ['/v3/btc/markets/540817/snapshots?start_time=2026-07-26T12:00:10Z&end_time=2026-07-26T12:00:00Z', /'start_time'/],
      ['/v3/btc/markets/540817/snapshots?order=up', /'order'/],
      ['/v3/wallet-prediction/w-9001/orderbook/latest?clock=wall', /'clock'/],
      ['/v3/wallet-prediction/w-9001/orderbook/latest?as_of=tomorrow', /'as_of'/],
      ['/v3/wallet-prediction/markets?status=live', /'status'/],
      ['/v3/wallet-prediction/w-9001/orderbook/latest?as_of=2999-01-01T00:00:00Z', /'as_of'/],
      ['/v3/wallet-prediction/w-9001/snapshots?include_orderbook=maybe', /'include_orderbook'/],
      ['/v3/btc/markets/540817/snapshots?limit=1&limit=2', /'limit'/],
    ];
    for (const [url, re] of cases) {
      const r = await get(url);
      envelope(t, r.body, 400, 'invalid_parameter');
      t.match(r.body.error.message, re, url);
    }
  });

  t.test('unknown routes get the envelope; health, metrics and docs need no key', async (t) => {
    const r = await app.inject({ url: '/v3/nowhere/at/all' });
    envelope(t, r.json(), 404, 'not_found');
    const h = await app.inject({ url: '/healthz' });
    t.equal(h.statusCode, 200);
    t.equal(h.json().status, 'ok');
    const m = await app.inject({ url: '/metrics' });
    t.equal(m.statusCode, 200);
    t.match(m.body, /pmtape_http_requests_total/);
    const d = await app.inject({ url: '/docs/json' });
    t.equal(d.statusCode, 200);
    t.equal(d.json().openapi, '3.0.3');
    t.ok(d.json().paths['/v3/wallet-prediction/{market_id}/snapshots']);
    t.equal((await app.inject({ url: '/docs' })).statusCode < 400, true);
  });
});

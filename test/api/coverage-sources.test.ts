// `/v3/coverage` on a history merged from several recorders (docs/redundancy.md): `sources` splits
// the recorded intervals by the recorder each came from (switches at whole books, never at a trade
// kept from another recorder); the gaps are where all lost the market. A single recorder's history
// has no `sources` (the shape is unchanged there).

import t from 'tap';
import type { Observation } from '../../src/schema/observation.js';
import { T0, catalog, coinMarket, keysFor, testApp, testConfig, tmpDataDir, walletMarket, writeLog, bookRecords } from './helpers.js';

const iso = (ms: number): string => new Date(ms).toISOString();
const cp = (at: number, recorder: string): Observation => ({
  type: 'book_checkpoint',
  recv_ts: at,
  source_ts: null,
  units: 'decimal',
  recorder,
  books: [
    { token_id: '1111', bids: [['0.4', '10']], asks: [['0.6', '10']] },
    { token_id: '2222', bids: [['0.4', '10']], asks: [['0.6', '10']] },
  ],
});
const delta = (at: number, recorder: string): Observation => ({
  type: 'book_delta',
  recv_ts: at,
  source_ts: at,
  token_id: '1111',
  changes: [{ side: 'bid', price: '0.41', size: '5' }],
  recorder,
});

t.test("a merged market names the recorder of each interval; a single recorder's has no sources", async (t) => {
  const dir = tmpDataDir(t);
  await writeLog(dir, 'coin', 'catalog', coinMarket.market_id, [catalog(coinMarket, T0 - 1000)]);
  await writeLog(dir, 'coin', 'books', coinMarket.market_id, [
    cp(T0, 'a'),
    delta(T0 + 1000, 'a'),
    cp(T0 + 10_000, 'b'),
    delta(T0 + 11_000, 'b'),
    { type: 'trade', recv_ts: T0 + 12_000, source_ts: T0 + 12_000, token_id: '1111', price: '0.5', size: '1', recorder: 'a' },
    delta(T0 + 13_000, 'b'),
    { type: 'gap', recv_ts: T0 + 20_000, source_ts: null, reason: 'not_recording', start_ts: T0 + 20_000, end_ts: null },
    { type: 'gap', recv_ts: T0 + 25_000, source_ts: null, reason: 'not_recording', start_ts: T0 + 20_000, end_ts: T0 + 25_000 },
    cp(T0 + 25_000, 'a'),
    delta(T0 + 30_000, 'a'),
  ]);
  await writeLog(dir, 'wallet-prediction', 'catalog', walletMarket.market_id, [catalog(walletMarket, T0 - 1000)]);
  await writeLog(dir, 'wallet-prediction', 'books', walletMarket.market_id, bookRecords(['7001'], { start: T0, n: 20, stepMs: 1000 }));
  const { paid } = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = async (url: string): Promise<any> => (await app.inject({ url, headers: { authorization: `Bearer ${paid}` } })).json();

  const body = await get(`/v3/coverage?market_id=${coinMarket.market_id}`);
  const merged = body.data;
  t.ok(merged, JSON.stringify(body));
  t.same(merged.gaps, [{ start: iso(T0 + 20_000), end: iso(T0 + 25_000), reason: 'not_recording' }], 'where all recorders lost the market');
  t.same(
    merged.sources,
    [
      { start: iso(T0), end: iso(T0 + 10_000), recorder: 'a' },
      { start: iso(T0 + 10_000), end: iso(T0 + 20_000), recorder: 'b' },
      { start: iso(T0 + 25_000), end: iso(T0 + 30_000), recorder: 'a' },
    ],
    "each interval's recorder; the trade kept from a does not switch",
  );
  const clipped = (await get(`/v3/coverage?market_id=${coinMarket.market_id}&start_time=${iso(T0 + 5000)}&end_time=${iso(T0 + 15_000)}`))
    .data;
  t.same(
    clipped.sources,
    [
      { start: iso(T0 + 5000), end: iso(T0 + 10_000), recorder: 'a' },
      { start: iso(T0 + 10_000), end: iso(T0 + 15_000), recorder: 'b' },
    ],
    'clipped to the range',
  );

  const single = (await get(`/v3/coverage?market_id=${walletMarket.market_id}`)).data;
  t.notOk('sources' in single, "a single recorder's coverage has no sources");
  t.ok(single.intervals.length > 0);
});

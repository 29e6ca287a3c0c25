// Market lists: stable cursors in both orders (a market catalogued mid-walk is never skipped),
// the newest catalogue state after status transitions, and identifiers kept after expiry.

import t from 'tap';
import { catalog, coinMarket, keysFor, T0, testApp, testConfig, tmpDataDir, walletMarket, writeLog } from './helpers.js';
import type { Observation } from '../../src/schema/observation.js';

t.test('market lists page stably and show the newest catalogue state', async (t) => {
  const dir = tmpDataDir(t);
  for (let i = 0; i < 5; i++) {
    const m = { ...coinMarket, market_id: `m${i}`, condition_id: `0xc${i}`, slug: `s${i}` };
    await writeLog(dir, 'coin', 'catalog', m.market_id, [catalog(m, T0 + i * 1000)]);
  }
  // A wallet market through its whole life: listed → open → closed → resolved (push).
  const life: Observation[] = (['upcoming', 'open', 'closed', 'resolved'] as const).map((status, i) => ({
    type: 'catalog',
    event: i === 0 ? 'listed' : i === 3 ? 'resolved' : 'status',
    changed: ['status'],
    recv_ts: T0 + i * 60_000,
    source_ts: null,
    market: {
      ...walletMarket,
      status,
      resolution: status === 'resolved' ? 'push' : null,
      winning_outcome: null,
      resolved_time: status === 'resolved' ? T0 + 180_000 : null,
    },
  }));
  await writeLog(dir, 'wallet-prediction', 'catalog', walletMarket.market_id, life);
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = async (url: string): Promise<any> => (await app.inject({ url, headers: { authorization: `Bearer ${keys.paid}` } })).json();
  const walk = async (q: string, onFirst?: () => Promise<void>): Promise<string[]> => {
    const ids: string[] = [];
    let c: string | null = null;
    let first = true;
    do {
      const p: any = await get(`/v3/btc/markets?${q}${c ? `&cursor=${c}` : ''}`);
      ids.push(...p.data.map((m: any) => m.market_id));
      c = p.next_cursor;
      if (first && onFirst) await onFirst();
      first = false;
    } while (c);
    return ids;
  };
  t.same(await walk('limit=2'), ['m0', 'm1', 'm2', 'm3', 'm4']);
  t.same(await walk('limit=2&order=desc'), ['m4', 'm3', 'm2', 'm1', 'm0']);
  const grown = await walk('limit=2', async () => {
    const m = { ...coinMarket, market_id: 'm5', condition_id: '0xc5', slug: 's5' };
    await writeLog(dir, 'coin', 'catalog', 'm5', [catalog(m, T0 + 10_000)]);
    // The catalogue cache re-reads at most once a second: wait until the new market is visible.
    for (let i = 0; i < 100; i++) {
      if ((await get('/v3/btc/markets?limit=1000')).data.some((m: any) => m.market_id === 'm5')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  t.same(grown, ['m0', 'm1', 'm2', 'm3', 'm4', 'm5'], 'a market catalogued mid-walk appears, nothing skipped');

  const w = (await get('/v3/wallet-prediction/markets')).data[0];
  t.equal(w.status, 'resolved');
  t.equal(w.resolution, 'push');
  t.equal(w.winning_outcome, null);
  t.equal(w.resolved_time, '2026-07-26T12:03:00.000Z');
  t.same(w.outcomes, walletMarket.outcomes, 'labels and tokens kept after expiry');
  t.equal(w.condition_id, walletMarket.condition_id);
  t.equal((await get('/v3/wallet-prediction/markets?status=open')).data.length, 0);
  t.equal((await get('/v3/wallet-prediction/markets?status=resolved')).data.length, 1);
  const cov = await get(`/v3/coverage?market_id=${walletMarket.market_id}`);
  t.equal(cov.data.datasets.catalog.last_seq, 4, 'every status change is a catalogue event');
  t.equal(cov.data.datasets.books, null);
  const nobook = await app.inject({
    url: `/v3/wallet-prediction/${walletMarket.market_id}/orderbook/latest`,
    headers: { authorization: `Bearer ${keys.paid}` },
  });
  t.equal(nobook.statusCode, 404, 'a market without any book has no latest book');
  t.same(await get(`/v3/wallet-prediction/${walletMarket.market_id}/snapshots`), { data: [], next_cursor: null });
});

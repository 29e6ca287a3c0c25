// The catalogue view's refresh on real logs: a market whose catalog log did not change is not read
// again (its entry is kept as is), a changed one is, a market listed since appears, and the rolling
// safety net reads every market once per FULL_ROUNDS refreshes whatever its stamp.

import t from 'tap';
import { MarketsIndex } from '../../src/api/query/markets-index.js';
import type { CoinMarket } from '../../src/schema/market.js';
import { catalog, coinMarket, tmpDataDir, writeLog } from './helpers.js';

const T = Date.now() - 60_000;
const marketN = (k: number): CoinMarket => ({
  ...coinMarket,
  market_id: `5409${String(k).padStart(2, '0')}`,
  slug: `btc-updown-15m-${k}`,
  condition_id: `0xc0ffee${k}`,
});

t.test('a refresh reads only the catalog logs that changed', async (t) => {
  const dir = tmpDataDir(t);
  for (let k = 0; k < 12; k++) await writeLog(dir, 'coin', 'catalog', marketN(k).market_id, [catalog(marketN(k), T + k)]);
  const idx = new MarketsIndex(dir);
  t.equal(await idx.rebuild('coin'), 12);
  t.equal(idx.lastReads, 12, 'the first build reads every market');

  const before = await idx.resolve('coin', marketN(3).market_id);
  t.equal(await idx.rebuild('coin'), 12);
  t.ok(idx.lastReads <= 1, `nothing changed: at most the rolling one is read (read ${idx.lastReads})`);
  const kept = await idx.resolve('coin', marketN(3).market_id);
  t.equal(kept?.market, before?.market, 'an unchanged market keeps its very entry (bodies built from it stay valid)');

  // Another writer appends a status change to one market and lists a new one.
  const closed: CoinMarket = { ...marketN(5), status: 'closed' };
  await writeLog(dir, 'coin', 'catalog', closed.market_id, [
    { ...catalog(closed, T + 50_000), event: 'status', changed: ['status'] } as ReturnType<typeof catalog>,
  ]);
  await writeLog(dir, 'coin', 'catalog', marketN(40).market_id, [catalog(marketN(40), T + 51_000)]);
  t.equal(await idx.rebuild('coin'), 13, 'the new market is listed');
  t.ok(idx.lastReads >= 2 && idx.lastReads <= 3, `the changed and the new market are read (read ${idx.lastReads})`);
  t.equal((await idx.resolve('coin', closed.market_id))?.market.status, 'closed', 'the appended event is the one served');
  t.equal((await idx.resolve('coin', marketN(40).slug!))?.market.market_id, marketN(40).market_id, 'the new market resolves by slug too');
  const list = await idx.list('coin');
  t.same(
    list.map((e) => e.market.market_id),
    [...Array.from({ length: 12 }, (_, k) => marketN(k).market_id), marketN(40).market_id],
    'listing order is by first capture',
  );
  t.equal(list.find((e) => e.market.market_id === closed.market_id)?.first_ts, T + 5, 'a re-read market keeps its first capture time');

  t.ok((await idx.rebuild('coin', 'read')) && idx.lastReads === 13, 'a full rebuild reads every market');
});

t.test('the rolling safety net reads each market once per 300 unchanged refreshes', async (t) => {
  const dir = tmpDataDir(t);
  for (let k = 0; k < 3; k++) await writeLog(dir, 'coin', 'catalog', marketN(k).market_id, [catalog(marketN(k), T + k)]);
  const idx = new MarketsIndex(dir);
  await idx.rebuild('coin');
  let reads = 0;
  for (let i = 0; i < 300; i++) {
    await idx.rebuild('coin');
    reads += idx.lastReads;
    await idx.rebuild('wallet-prediction'); // another family's refreshes do not shift coin's rota
  }
  t.equal(reads, 3, 'each of the 3 markets read exactly once in 300 refreshes of its family');
});

t.test("a refresh that changes nothing starts the view's age again (the route's fast path keeps answering)", async (t) => {
  const dir = tmpDataDir(t);
  for (let k = 0; k < 3; k++) await writeLog(dir, 'coin', 'catalog', marketN(k).market_id, [catalog(marketN(k), T + k)]);
  let clock = Date.now();
  const idx = new MarketsIndex(dir, 1000, () => clock);
  t.teardown(() => idx.close());
  await idx.rebuild('coin');
  const first = await idx.list('coin');
  for (let i = 0; i < 4; i++) {
    clock += 1500; // past the TTL: the refresh finds nothing changed and keeps the view's maps
    await idx.rebuild('coin');
    t.equal(await idx.list('coin'), first, 'the very same listing');
    t.equal(
      idx.resolveNow('coin', marketN(1).market_id)?.market.market_id,
      marketN(1).market_id,
      `answered from memory ${(i + 1) * 1.5} s after the first build`,
    );
  }
});

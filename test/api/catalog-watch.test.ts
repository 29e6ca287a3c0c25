// The catalogue view's folder watches on real logs and real inotify: an unchanged watched market
// costs a refresh no file system call, a market another writer appends to is read after its
// notice, a market quiet for two UTC days is not watched and is checked when its periodic check is
// due (the injected clock), and past the watch limit recent markets are stamped every refresh.

import t from 'tap';
import { spawn } from 'node:child_process';
import { MarketsIndex, RECHECK_MS } from '../../src/api/query/markets-index.js';
import type { CoinMarket } from '../../src/schema/market.js';
import { catalog, coinMarket, tmpDataDir, writeLog } from './helpers.js';

const DAY = 86_400_000;
const marketN = (k: number): CoinMarket => ({
  ...coinMarket,
  market_id: `7709${String(k).padStart(2, '0')}`,
  slug: `btc-updown-5m-${k}`,
  condition_id: `0xbeef${k}`,
});
const closedEvent = (m: CoinMarket, ts: number): ReturnType<typeof catalog> =>
  ({ ...catalog({ ...m, status: 'closed' }, ts), event: 'status', changed: ['status'] }) as ReturnType<typeof catalog>;

/** Refreshes until `served` holds (generous bound: notices arrive from the event loop). */
async function refreshUntil(
  idx: MarketsIndex,
  served: () => Promise<boolean>,
  ms = 20_000,
): Promise<{ ok: boolean; refreshes: number; stamps: number }> {
  const end = Date.now() + ms;
  let refreshes = 0;
  let stamps = 0;
  for (;;) {
    await idx.rebuild('coin');
    refreshes++;
    stamps += idx.lastStamps;
    if (await served()) return { ok: true, refreshes, stamps };
    if (Date.now() > end) return { ok: false, refreshes, stamps };
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test('unchanged watched markets cost no file system call; an appended one is read after its notice', async (t) => {
  const dir = tmpDataDir(t);
  const now = Date.now();
  for (let k = 0; k < 12; k++) await writeLog(dir, 'coin', 'catalog', marketN(k).market_id, [catalog(marketN(k), now - 60_000 + k)]);
  const idx = new MarketsIndex(dir);
  t.teardown(() => idx.close());
  t.equal(await idx.rebuild('coin'), 12);
  t.equal(idx.watched, 12, 'every market written today is watched');
  const listed = await idx.list('coin');
  let stamps = 0;
  for (let i = 0; i < 20; i++) {
    await idx.rebuild('coin');
    stamps += idx.lastStamps;
  }
  t.ok(stamps <= 12, `20 refreshes of 12 unchanged markets stamped ${stamps}: only the rolling re-read, once per market at most`);

  // Another process appends (a real writer in its own process, as a recorder would).
  const m = marketN(5);
  const script = `const { openWriter } = await import(${JSON.stringify(new URL('../../src/storage/index.js', import.meta.url).href)});
    const w = await openWriter(${JSON.stringify(dir)}, { family: 'coin', stream: 'catalog', market: ${JSON.stringify(m.market_id)} });
    await w.append(${JSON.stringify(closedEvent(m, now))}); await w.close();`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' });
  t.equal(await new Promise((r) => child.once('exit', r)), 0, 'the other process appended');
  const seen = await refreshUntil(idx, async () => (await idx.resolve('coin', m.market_id))?.market.status === 'closed');
  // Its notice is dispatched by the event loop during the first refresh at the latest (the rolling
  // re-read would take ~300 refreshes to come round to it): served by the second.
  t.ok(seen.ok && seen.refreshes <= 3, `the appended event is served after its notice (after ${seen.refreshes} refreshes)`);
  t.ok(
    seen.stamps <= 2 * seen.refreshes,
    `those refreshes stamped ${seen.stamps}: the reported market and the rolling one, not all 12 each time`,
  );
  // Only an entry replaced: the listing keeps its order (no new sort) and shows the new event.
  const list = await idx.list('coin');
  t.same(
    list.map((e) => e.market.market_id),
    Array.from({ length: 12 }, (_, k) => marketN(k).market_id),
    'the listing order is kept',
  );
  t.equal(list[5].market.status, 'closed', 'the listing shows the appended event');
  t.equal(list[4], listed[4], 'the other entries are the very same objects');
});

t.test('a market quiet for two days is not watched and is checked when due', async (t) => {
  const dir = tmpDataDir(t);
  const old = Date.now() - 5 * DAY;
  for (let k = 0; k < 4; k++) await writeLog(dir, 'coin', 'catalog', marketN(k).market_id, [catalog(marketN(k), old + k)]);
  let clock = Date.now();
  const idx = new MarketsIndex(dir, 1000, () => clock);
  t.teardown(() => idx.close());
  t.equal(await idx.rebuild('coin'), 4);
  t.equal(idx.watched, 0, 'no watch for quiet markets');
  await idx.rebuild('coin');
  t.equal(idx.lastStamps, 0, 'nothing due: no file system call (quiet markets have no rolling re-read)');

  // A new event today makes a new day file; it is served once the market's check falls due.
  await writeLog(dir, 'coin', 'catalog', marketN(2).market_id, [closedEvent(marketN(2), Date.now())]);
  clock += RECHECK_MS;
  await idx.rebuild('coin');
  t.equal(idx.lastStamps, 4, 'every check due: every market stamped');
  t.equal((await idx.resolve('coin', marketN(2).market_id))?.market.status, 'closed', 'the new event is served');
  t.equal(idx.watched, 1, 'the market written today is watched from now on');
  t.equal((await idx.resolve('coin', marketN(1).market_id))?.market.status, 'open', 'the others are as they were');
  await idx.rebuild('coin');
  t.ok(idx.lastStamps <= 1, `checks just done: at most the rolling re-read of the watched market (${idx.lastStamps})`);
});

t.test('past the watch limit, recent markets are stamped every refresh and still fresh', async (t) => {
  const dir = tmpDataDir(t);
  const now = Date.now();
  for (let k = 0; k < 5; k++) await writeLog(dir, 'coin', 'catalog', marketN(k).market_id, [catalog(marketN(k), now - 60_000 + k)]);
  const idx = new MarketsIndex(dir, 1000, Date.now, { maxWatches: 2 });
  t.teardown(() => idx.close());
  await idx.rebuild('coin');
  t.equal(idx.watched, 2, 'two watches, the limit');
  await idx.rebuild('coin');
  t.ok(idx.lastStamps >= 3, `the three unwatched recent markets are stamped (${idx.lastStamps})`);
  // Whichever market has no watch: its change is served by the very next refresh, no notice needed.
  for (let k = 0; k < 5; k++) await writeLog(dir, 'coin', 'catalog', marketN(k).market_id, [closedEvent(marketN(k), now + k)]);
  const seen = await refreshUntil(idx, async () => (await idx.list('coin')).every((e) => e.market.status === 'closed'));
  t.ok(seen.ok, `every market's change is served, watched or not (after ${seen.refreshes} refreshes)`);
});

t.test('a market folder created by another writer is listed after the stream folder reports it', async (t) => {
  const dir = tmpDataDir(t);
  const now = Date.now();
  await writeLog(dir, 'coin', 'catalog', marketN(0).market_id, [catalog(marketN(0), now - 60_000)]);
  const idx = new MarketsIndex(dir);
  t.teardown(() => idx.close());
  t.equal(await idx.rebuild('coin'), 1);
  await writeLog(dir, 'coin', 'catalog', marketN(9).market_id, [catalog(marketN(9), now - 1000)]);
  const seen = await refreshUntil(idx, async () => (await idx.resolve('coin', marketN(9).slug!)) !== null);
  t.ok(
    seen.ok && seen.refreshes <= 3,
    `the new market resolves by its slug after the folder's notice (after ${seen.refreshes} refreshes; the listing's own re-check is 30 s away)`,
  );
  t.equal(idx.watched, 2);
});

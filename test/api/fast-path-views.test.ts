// The latest route's synchronous fast path must not fall off whenever a once-a-second refresh is
// due: the catalogue view, the recorder-status view and the safety net of the latest-book cache
// each answer from what they hold and refresh in the background, exactly as their async paths
// already did, and stop answering only when the view is too old (or a change notice came).
// Clocks are injected; the real files are written and re-read.

import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MarketsIndex } from '../../src/api/query/markets-index.js';
import { StatusBoard } from '../../src/api/query/status.js';
import { openWriter } from '../../src/storage/index.js';
import { bookRecords, catalog, coinMarket, keysFor, testApp, testConfig, tmpDataDir, walletMarket, writeLog } from './helpers.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `f` until it returns something other than `undefined`/`null`-as-not-yet, 10 s at most. */
async function until<T>(f: () => T, ok: (v: T) => boolean): Promise<T> {
  let v = f();
  for (let i = 0; i < 2000 && !ok(v); i++) {
    await sleep(5);
    v = f();
  }
  return v;
}

t.test('the catalogue view answers past its TTL while it re-reads, and not past five TTLs', async (t) => {
  const dir = tmpDataDir(t);
  await writeLog(dir, 'coin', 'catalog', coinMarket.market_id, [catalog(coinMarket, Date.now() - 5000)]);
  let clock = 1_000_000;
  const idx = new MarketsIndex(dir, 1000, () => clock);
  t.equal(idx.resolveNow('coin', coinMarket.market_id), undefined, 'no view yet: the caller takes the async path');
  t.equal((await idx.resolve('coin', coinMarket.market_id))?.market.market_id, coinMarket.market_id);

  const other = { ...coinMarket, market_id: '540999', slug: 'btc-updown-other' };
  await writeLog(dir, 'coin', 'catalog', other.market_id, [catalog(other, Date.now() - 4000)]);
  clock += 500;
  t.equal(idx.resolveNow('coin', other.market_id), null, 'within the TTL the view is used as is (it does not know the new market)');
  clock += 1000; // past the TTL
  t.equal(idx.resolveNow('coin', coinMarket.market_id)?.market.market_id, coinMarket.market_id, 'past the TTL it still answers');
  const seen = await until(
    () => idx.resolveNow('coin', other.market_id),
    (v) => v !== null,
  );
  t.equal(seen?.market.market_id, other.market_id, 'and the re-read it started brings the new market');
  clock += 5001;
  t.equal(idx.resolveNow('coin', other.market_id), undefined, 'a view older than five TTLs is not used');
});

t.test('the recorder-status view answers past its TTL while it re-reads', async (t) => {
  const dir = tmpDataDir(t);
  let clock = Date.now();
  const write = (connected: Record<string, string[]>): Promise<void> =>
    writeFile(join(dir, 'status', 'record-4242.json'), JSON.stringify({ pid: 4242, updated_ts: clock, kinds: {}, connected }));
  await mkdir(join(dir, 'status'), { recursive: true });
  await write({ coin: [coinMarket.market_id] });
  const board = new StatusBoard(dir, 1000, () => clock);
  t.equal(board.connectedNow('coin', coinMarket.market_id), undefined, 'no view yet');
  t.equal(await board.isConnected('coin', coinMarket.market_id), true);
  await write({ coin: [] }); // the recorder let go of the market
  clock += 1500;
  t.equal(board.connectedNow('coin', coinMarket.market_id), true, 'past the TTL the held view answers');
  t.equal(
    await until(
      () => board.connectedNow('coin', coinMarket.market_id),
      (v) => v === false,
    ),
    false,
    'then the re-read view',
  );
  clock += 6000;
  t.equal(board.connectedNow('coin', coinMarket.market_id), undefined, 'a view older than five TTLs is not used');
});

t.test('a due safety-net check runs in the background: the route stays on its fast path', async (t) => {
  const dir = tmpDataDir(t);
  const t0 = Date.now() - 60_000;
  await writeLog(dir, 'wallet-prediction', 'catalog', walletMarket.market_id, [catalog(walletMarket, t0 - 1000)]);
  await writeLog(dir, 'wallet-prediction', 'books', walletMarket.market_id, bookRecords(['7001'], { start: t0, n: 20, stepMs: 100 }));
  const keys = await keysFor(dir);
  // A re-check due 1 ms after each check: every request below finds it due.
  const app = await testApp(t, testConfig(dir, { latestRecheckMs: 1 }));
  const url = `/v3/wallet-prediction/${walletMarket.market_id}/orderbook/latest`;
  const get = async (): Promise<any> => (await app.inject({ url, headers: { authorization: `Bearer ${keys.paid}` } })).json();
  const latest = app.pmtape.latest;
  const full = { n: 0 };
  const realGet = latest.get.bind(latest);
  latest.get = (...a: Parameters<typeof latest.get>) => (full.n++, realGet(...a));

  const first = await get();
  t.equal(full.n, 1, 'the first request reads the log (full path)');
  // The entry is fast-path ready once its folder watch is live and the first check is done.
  await until(
    () => latest.peek(`wallet-prediction|${walletMarket.market_id}`),
    (p) => p !== undefined,
  );
  const checks = latest.checks;
  for (let i = 0; i < 10; i++) {
    await sleep(3); // the re-check is due again
    t.same(await get(), first, 'the same answer');
    await until(
      () => latest.peek(`wallet-prediction|${walletMarket.market_id}`),
      (p) => p !== undefined,
    );
  }
  t.equal(full.n, 1, 'no request took the full path while the safety net checked');
  t.ok(latest.checks >= checks + 5, `the safety net still read the log (${latest.checks - checks} checks)`);

  // A change notice is different: until it is read, no request is answered from memory.
  const w = await openWriter(dir, { family: 'wallet-prediction', stream: 'books', market: walletMarket.market_id });
  t.teardown(() => w.close());
  const rec = await w.append({
    type: 'book',
    token_id: '7001',
    units: 'decimal',
    bids: [['0.31', '5']],
    asks: [['0.33', '6']],
    recv_ts: Date.now(),
    source_ts: null,
  });
  await w.flush();
  let d = await get();
  for (let i = 0; i < 2000 && d.data.seq !== rec.seq; i++) {
    await sleep(5);
    d = await get();
  }
  t.equal(d.data.seq, rec.seq, 'the appended book is served');
  t.ok(full.n > 1, 'through the full path, after its notice');
});

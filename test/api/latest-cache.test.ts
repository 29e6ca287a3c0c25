// The latest-book routes reuse one serialized body per (family, market, query) only while nothing it
// shows has changed: an appended record shows as soon as its file event arrives (the safety-net
// re-check is set to an hour here, so only the event can show it), a gap or a dead recorder flips
// `stale`, and bodies of different query options never leak into each other.

import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openWriter } from '../../src/storage/index.js';
import { coinMarket, keysFor, seedAll, T0, testApp, testConfig, tmpDataDir, walletMarket, yesnoMarket } from './helpers.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A recorder status file as a record process writes it (`updated_ts` decides alive/dead). */
async function writeStatus(dataDir: string, updated: number, connected: Record<string, string[]>): Promise<void> {
  await mkdir(join(dataDir, 'status'), { recursive: true });
  await writeFile(
    join(dataDir, 'status', 'record-424242.json'),
    JSON.stringify({ pid: 424242, updated_ts: updated, kinds: {}, connected }),
  );
}

t.test('latest bodies follow appends, gaps, recorder status and query options', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir, { latestRecheckMs: 3_600_000 }));
  const get = async (url: string): Promise<{ status: number; text: string; type: string; body: any }> => {
    const r = await app.inject({ url, headers: { authorization: `Bearer ${keys.paid}` } });
    return { status: r.statusCode, text: r.body, type: String(r.headers['content-type']), body: r.json() };
  };
  const COIN = `/v3/btc/markets/${coinMarket.market_id}/orderbook/latest`;
  const WALLET = `/v3/wallet-prediction/${walletMarket.market_id}/orderbook/latest`;
  const YESNO = `/v3/yesno-exchange/${yesnoMarket.market_id}/orderbook/latest`;

  const first = await get(COIN);
  t.equal(first.status, 200);
  t.equal(first.type, 'application/json; charset=utf-8', 'a cached body is still sent as JSON');
  t.equal(first.body.data.stale, true, 'no recorder is running');
  const checks = app.pmtape.latest.checks;
  for (let i = 0; i < 20; i++) t.equal((await get(COIN)).text, first.text, 'an unchanged market answers the same body');
  t.equal(app.pmtape.latest.checks, checks, 'without a change notice no request reads the log');
  t.equal(app.pmtape.latestBodies.size, 1, 'one body kept for one (family, market, query)');
  // Waits (generous bound, no timing assumption) until the route answers what `ok` wants.
  const until = async (url: string, ok: (d: any) => boolean): Promise<any> => {
    let d = (await get(url)).body.data;
    for (let i = 0; i < 1000 && !ok(d); i++) {
      await sleep(10);
      d = (await get(url)).body.data;
    }
    return d;
  };

  // Append a book to each family: the very next request shows it.
  const cw = await openWriter(dir, { family: 'coin', stream: 'books', market: coinMarket.market_id });
  t.teardown(() => cw.close());
  const t1 = T0 + 3_600_000;
  const rec = await cw.append({
    type: 'book',
    token_id: '1111',
    units: 'decimal',
    bids: [['0.55', '42']],
    asks: [['0.56', '43']],
    recv_ts: t1,
    source_ts: t1 - 5,
  });
  await cw.flush();
  const after = await until(COIN, (d) => d.seq === rec.seq);
  t.equal(after.seq, rec.seq, 'the appended record is served once its file event came');
  t.same(after.books.find((b: any) => b.token_id === '1111').bids, [[0.55, 42]]);
  t.equal(after.receive_time, new Date(t1).toISOString());

  const ww = await openWriter(dir, { family: 'wallet-prediction', stream: 'books', market: walletMarket.market_id });
  t.teardown(() => ww.close());
  const w0 = (await get(WALLET)).body.data;
  const wrec = await ww.append({
    type: 'book',
    token_id: '7001',
    units: 'decimal',
    bids: [['0.31', '5']],
    asks: [['0.33', '6']],
    recv_ts: t1,
    source_ts: null,
  });
  await ww.flush();
  const w1 = await until(WALLET, (d) => d.seq === wrec.seq);
  t.not(w1.seq, w0.seq);
  t.equal(w1.seq, wrec.seq, 'wallet: the appended book is served next');
  t.same(w1.bids, [[0.31, 5]]);
  const down = await until(`${WALLET}?outcome=Down`, (d) => d.seq === wrec.seq);
  t.same(down.asks, [[0.69, 5]], 'the mirrored outcome is its own body, built from the new book');

  const yw = await openWriter(dir, { family: 'yesno-exchange', stream: 'books', market: yesnoMarket.market_id });
  t.teardown(() => yw.close());
  const y0 = (await get(YESNO)).body.data;
  const yrec = await yw.append({
    type: 'yesno_book',
    units: 'dollars',
    yes: [['0.4100', '12.00']],
    no: [['0.5500', '3.00']],
    recv_ts: t1,
    source_ts: null,
  });
  await yw.flush();
  const y1 = await until(YESNO, (d) => d.seq === yrec.seq);
  t.not(y1.seq, y0.seq);
  t.equal(y1.seq, yrec.seq, 'yes/no: the appended book is served next');

  // Query options are separate bodies: depth=1 never answers a full-depth request, nor the reverse.
  const full = (await get(COIN)).body.data;
  const d1 = (await get(`${COIN}?depth=1`)).body.data;
  const bare = (await get(`${COIN}?include_orderbook=false`)).body.data;
  t.ok(
    d1.books.every((b: any) => b.bids.length <= 1 && b.asks.length <= 1),
    'depth=1 body',
  );
  t.ok(
    full.books.some((b: any) => b.bids.length > 1 || b.asks.length > 1),
    'full body has deeper books',
  );
  t.notOk('books' in bare, 'include_orderbook=false body has no books');
  t.same((await get(COIN)).body.data, full, 'the full body is unchanged after other variants were built');

  // An open gap flips stale on the next request, the record after it flips it back (with a live recorder).
  await writeStatus(dir, Date.now() + 60_000, { coin: [coinMarket.market_id] });
  let live = full;
  for (let i = 0; i < 50 && live.stale !== false; i++) {
    await sleep(100);
    live = (await get(COIN)).body.data;
  }
  t.equal(live.stale, false, 'a live recorder holding the market: not stale');
  await cw.append({ type: 'gap', reason: 'disconnected', start_ts: t1 + 1000, end_ts: null, recv_ts: t1 + 1000, source_ts: null });
  await cw.flush();
  const gapped = await until(COIN, (d) => d.stale === true);
  t.equal(gapped.stale, true, 'an open gap makes the latest book stale');
  t.equal(gapped.seq, live.seq, 'the book itself is still the one before the gap');
  const rec2 = await cw.append({
    type: 'book',
    token_id: '1111',
    units: 'decimal',
    bids: [['0.57', '1']],
    asks: [['0.58', '2']],
    recv_ts: t1 + 2000,
    source_ts: null,
  });
  await cw.flush();
  const resumed = await until(COIN, (d) => d.seq === rec2.seq);
  t.equal(resumed.stale, false, 'a book after the gap is live again');
  t.equal(resumed.seq, rec2.seq);

  // The recorder dies (its status file ages out): stale flips without any append.
  await writeStatus(dir, Date.now() - 60_000, { coin: [coinMarket.market_id] });
  let dead = resumed;
  for (let i = 0; i < 50 && dead.stale !== true; i++) {
    await sleep(100);
    dead = (await get(COIN)).body.data;
  }
  t.equal(dead.stale, true, 'a dead recorder turns the cached latest book stale');
  t.equal(dead.seq, rec2.seq, 'same book, only the flag changed');

  // as_of bypasses the cache and still answers the historical book.
  const past = (await get(`${COIN}?as_of=${t1 - 1}`)).body.data;
  t.ok(past.seq < rec.seq, 'as_of is not served from the latest body');
});

// Point-in-time reads: `as_of` (receive and source clocks) equals an independent replay of the
// log up to T, never uses later data, and finds nothing before capture began; interval buckets
// equal the replayed book at their end and never forward-fill across a gap.

import t from 'tap';
import { MarketBooks } from '../../src/book/book-state.js';
import { openReader } from '../../src/storage/index.js';
import type { Recorded } from '../../src/schema/observation.js';
import { coinMarket, keysFor, rng, seedAll, T0, testApp, testConfig, tmpDataDir, walletMarket } from './helpers.js';

async function records(dir: string, family: 'coin' | 'wallet-prediction', market: string): Promise<Recorded[]> {
  const out: Recorded[] = [];
  for await (const { rec } of openReader(dir, { family, stream: 'books', market }).read('start')) out.push(rec);
  return out;
}

/** Independent replay: every record the predicate admits, in log order, from the very first one. */
function replay(recs: Recorded[], admit: (r: Recorded) => boolean): { books: MarketBooks; lastBook: Recorded | null; gapOpen: boolean } {
  const books = new MarketBooks();
  let lastBook: Recorded | null = null;
  let gapOpen = false;
  for (const r of recs) {
    if (!admit(r)) break;
    const changed = books.apply(r);
    if (r.type === 'gap' && r.end_ts === null) gapOpen = true;
    if ((r.type === 'book' || r.type === 'book_delta') && changed.length > 0) {
      if (books.validTokens().length > 0) lastBook = r;
      gapOpen = false;
    }
  }
  return { books, lastBook, gapOpen };
}

const num = (l: readonly (readonly [string, string])[]): number[][] => l.map((x) => [Number(x[0]), Number(x[1])]);

t.test('as_of equals an independent replay of the log up to T', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = async (url: string): Promise<any> => {
    const r = await app.inject({ url, headers: { authorization: `Bearer ${keys.paid}` } });
    return { status: r.statusCode, body: r.json() };
  };
  const wRecs = await records(dir, 'wallet-prediction', walletMarket.market_id);
  const cRecs = await records(dir, 'coin', coinMarket.market_id);
  const r = rng(42);
  for (let i = 0; i < 25; i++) {
    const T = T0 + Math.floor(r() * 62_000);
    const exp = replay(wRecs, (x) => x.recv_ts <= T);
    const got = await get(`/v3/wallet-prediction/w-9001/orderbook/latest?as_of=${T}`);
    t.equal(got.status, 200, `wallet as_of ${T}`);
    const v = exp.books.view('7001')!;
    t.equal(got.body.data.seq, exp.lastBook!.seq, `wallet seq at ${T}`);
    t.same(got.body.data.bids, num(v.bids));
    t.same(got.body.data.asks, num(v.asks));
    t.ok(Date.parse(got.body.data.receive_time) <= T, 'never data received after T');

    const cT = T0 + Math.floor(r() * 100_000);
    const ce = replay(cRecs, (x) => x.recv_ts <= cT);
    const cg = await get(`/v3/btc/markets/540817/orderbook/latest?as_of=${new Date(cT).toISOString()}`);
    t.equal(cg.status, 200, `coin as_of ${cT}`);
    t.equal(cg.body.data.stale, ce.gapOpen, `stale inside a gap at ${cT}`);
    t.equal(cg.body.data.seq, ce.lastBook!.seq);
    if (!ce.gapOpen) {
      const books = coinMarket.outcomes.map((o) => ce.books.view(o.token_id)).filter((x) => x !== null);
      t.same(
        cg.body.data.books.map((b: any) => [b.token_id, b.bids, b.asks]),
        books.map((b) => [b.token_id, num(b.bids), num(b.asks)]),
      );
    }
  }
  // Source clock: records count by venue time.
  const S = T0 + 12_345;
  const se = replay(wRecs, (x) => (x.source_ts ?? x.recv_ts) <= S);
  const sg = await get(`/v3/wallet-prediction/w-9001/orderbook/latest?as_of=${S}&clock=source`);
  t.equal(sg.body.data.seq, se.lastBook!.seq);
  t.same(sg.body.data.bids, num(se.books.view('7001')!.bids));
  const before = await get(`/v3/wallet-prediction/w-9001/orderbook/latest?as_of=${T0 - 1}`);
  t.equal(before.status, 404, 'nothing before the first capture');
  t.equal(before.body.error.code, 'not_found');
});

t.test('interval buckets equal the replayed book at their end and list gaps instead of filling them', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = async (url: string): Promise<any> => (await app.inject({ url, headers: { authorization: `Bearer ${keys.free}` } })).json();
  const cRecs = await records(dir, 'coin', coinMarket.market_id);
  const end = T0 + 100_000;
  const page = await get(`/v3/btc/markets/540817/snapshots?interval=1s&include_orderbook=true&limit=1000&end_time=${end}`);
  t.same(page.gaps, [{ start: '2026-07-26T12:00:40.000Z', end: '2026-07-26T12:00:50.000Z', reason: 'disconnected' }]);
  t.equal(page.data.length, 100 - 10, 'every second outside the gap, none inside');
  for (const s of page.data) {
    const bs = Date.parse(s.bucket_start);
    t.ok(bs < T0 + 40_000 || bs >= T0 + 50_000, 'no bucket inside the gap');
    const exp = replay(cRecs, (x) => x.recv_ts < bs + 1000);
    t.equal(s.seq, exp.lastBook!.seq, `bucket ${s.bucket_start}`);
    t.same(
      s.books.map((b: any) => b.bids),
      coinMarket.outcomes.map((o) => num(exp.books.view(o.token_id)!.bids)),
    );
  }
  // Paging through buckets gives the same buckets.
  const walked: any[] = [];
  let c: string | null = null;
  do {
    const p: any = await get(
      `/v3/btc/markets/540817/snapshots?interval=1s&include_orderbook=true&limit=13&end_time=${end}${c ? `&cursor=${c}` : ''}`,
    );
    walked.push(...p.data);
    c = p.next_cursor;
  } while (c);
  t.same(walked, page.data);
  const desc = await get(`/v3/btc/markets/540817/snapshots?interval=1s&include_orderbook=true&limit=1000&end_time=${end}&order=desc`);
  t.same(desc.data, [...page.data].reverse());
  const descWalk: any[] = [];
  c = null;
  do {
    const p: any = await get(
      `/v3/btc/markets/540817/snapshots?interval=1s&include_orderbook=true&limit=7&order=desc&end_time=${end}${c ? `&cursor=${c}` : ''}`,
    );
    descWalk.push(...p.data);
    c = p.next_cursor;
  } while (c);
  t.same(descWalk, [...page.data].reverse(), 'desc bucket pages walk the same buckets backwards');
  const minute = await get(`/v3/btc/markets/540817/snapshots?interval=1m&limit=10&end_time=${T0 + 120_000}`);
  t.same(minute.data, [], 'both minutes are uncovered');
  t.same(
    minute.gaps.map((g: any) => g.reason),
    ['disconnected', 'not_recording'],
  );
  const early = await get(`/v3/btc/markets/540817/snapshots?interval=1s&limit=5&start_time=${T0 - 60_000}&end_time=${T0 + 2000}`);
  t.equal(early.data[0].bucket_start, '2026-07-26T12:00:00.000Z', 'nothing before the first capture');
});

t.test('latest and as_of name the observation, not a checkpoint written after it', async (t) => {
  const dir = tmpDataDir(t);
  const { writeLog, catalog } = await import('./helpers.js');
  await writeLog(dir, 'coin', 'catalog', coinMarket.market_id, [catalog(coinMarket, T0 - 1000)]);
  const book = (tok: string, ts: number, p: string) => ({
    type: 'book' as const,
    token_id: tok,
    units: 'decimal' as const,
    bids: [[p, '10'] as const],
    asks: [['0.9', '5'] as const],
    recv_ts: ts,
    source_ts: null,
  });
  await writeLog(dir, 'coin', 'books', coinMarket.market_id, [
    book('1111', T0, '0.40'),
    book('2222', T0, '0.50'),
    { type: 'book_delta', token_id: '1111', changes: [{ side: 'bid', price: '0.41', size: '7' }], recv_ts: T0 + 1000, source_ts: null },
    {
      type: 'book_checkpoint',
      units: 'decimal',
      recv_ts: T0 + 2000,
      source_ts: null,
      books: [
        {
          token_id: '1111',
          bids: [
            ['0.41', '7'],
            ['0.40', '10'],
          ],
          asks: [['0.9', '5']],
        },
        { token_id: '2222', bids: [['0.50', '10']], asks: [['0.9', '5']] },
      ],
    },
    { type: 'trade', token_id: '1111', price: '0.41', recv_ts: T0 + 3000, source_ts: null },
  ]);
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = async (url: string): Promise<any> => (await app.inject({ url, headers: { authorization: `Bearer ${keys.free}` } })).json();
  const newest = (await get('/v3/btc/markets/540817/snapshots?order=desc&limit=1')).data[0];
  t.equal(newest.seq, 3, 'the delta is the newest snapshot');
  const latest = (await get('/v3/btc/markets/540817/orderbook/latest')).data;
  t.equal(latest.seq, 3);
  t.equal(latest.receive_time, new Date(T0 + 1000).toISOString());
  t.same(latest.books[0].bids, [
    [0.41, 7],
    [0.4, 10],
  ]);
  const asOf = (await get(`/v3/btc/markets/540817/orderbook/latest?as_of=${T0 + 2500}`)).data;
  t.equal(asOf.seq, 3);
  t.same(asOf.books, latest.books);
});

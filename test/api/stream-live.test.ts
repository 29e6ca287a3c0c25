// Live books over a real WebSocket, fed by a books log that another process appends to: order and
// seq, gap messages, history-to-live handover without gaps or duplicates, follower lifetime.

import t from 'tap';
import { streamOfServer } from '../../src/api/stream/route.js';
import {
  bookObs,
  ChildWriter,
  coinMarket,
  deltaObs,
  gapObs,
  makeKeys,
  sleep,
  startServer,
  tempDir,
  TestClient,
  writeCatalog,
  yesnoMarket,
} from './stream-helpers.js';

const sub = (id: number, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  op: 'subscribe',
  id,
  channel: 'book',
  family: 'coin',
  coin: 'btc',
  market_id: 'm1',
  ...extra,
});

t.test('coin books', async (t) => {
  const dir = tempDir(t);
  const keys = await makeKeys(dir);
  await writeCatalog(dir, coinMarket('m1'));
  const srv = await startServer(t, dir);
  const w = await ChildWriter.start(t, dir, 'coin', 'm1');
  const t0 = Date.now();
  const levels = (p: number): [string, string][] => [
    [p.toFixed(2), '10'],
    [(p - 0.01).toFixed(2), '20'],
  ];
  await w.append(bookObs('m1-up', t0, levels(0.48), [['0.52', '5']]), bookObs('m1-down', t0 + 1, levels(0.47), [['0.53', '7']]));

  const live = await TestClient.connect(t, srv.wsUrl, keys.free);
  const lastSeqOf = async (): Promise<number> => w.send({ op: 'append', obs: [] });

  await t.test('streams what another process appends, in order with strictly increasing seq', async (t) => {
    live.send(sub(1));
    await live.waitFor((m) => m.type === 'subscribed' && m.id === 1);
    const first = await live.waitFor((m) => m.type === 'book');
    t.equal(first.seq, 2, 'first message is the current book (after both outcome books)');
    const data = first.data as { books: { outcome: string; bids: number[][] }[]; market_id: string; seq: number };
    t.equal(data.market_id, 'm1');
    t.equal(data.seq, 2);
    t.same(
      data.books.map((b) => b.outcome),
      ['Up', 'Down'],
    );
    t.same(
      data.books[0].bids,
      [
        [0.48, 10],
        [0.47, 20],
      ],
      'levels are numbers, best first',
    );
    const last = await w.send({ op: 'deltas', n: 60, token: 'm1-up', t0: t0 + 10 });
    t.equal(last, 62);
    await live.waitSeq(last);
    const seqs = live.seqs();
    t.same(
      seqs,
      Array.from({ length: 61 }, (_, i) => i + 2),
      'every delta is one book message, none skipped',
    );
    const end = live.msgs.filter((m) => m.type === 'book').at(-1)!.data as { books: { bids: number[][] }[] };
    t.same(end.books[0].bids[0], [0.48, 10]);
    t.same(
      end.books[0].bids.find((l) => l[0] === 0.4),
      [0.4, 100 + (59 % 50)],
      'the last delta is applied',
    );
  });

  await t.test('resume after a seq gives exactly the missed seqs once while appends continue', async (t) => {
    const seenUpTo = await lastSeqOf();
    const appending = w.send({ op: 'deltas', n: 300, token: 'm1-down', t0: t0 + 1000, price: '0.30' });
    await sleep(20);
    const late = await TestClient.connect(t, srv.wsUrl, keys.free);
    late.send(sub(7, { after_seq: seenUpTo - 20 }));
    const last = await appending;
    await late.waitSeq(last);
    await live.waitSeq(last);
    await sleep(150); // a duplicate would arrive now
    const seqs = late.seqs();
    t.same(
      seqs,
      Array.from({ length: last - (seenUpTo - 20) }, (_, i) => seenUpTo - 19 + i),
      'contiguous, no duplicate',
    );
    // Replayed and live messages for the same seq are the same bytes of JSON.
    const liveBySeq = new Map(live.msgs.filter((m) => m.type === 'book').map((m) => [m.seq, JSON.stringify(m)]));
    let same = 0;
    for (const m of late.msgs.filter((x) => x.type === 'book')) if (liveBySeq.get(m.seq) === JSON.stringify(m)) same++;
    t.equal(same, seqs.length, 'replayed books equal the live books');
    late.ws.close();
  });

  await t.test('from a time replays books received at or after it', async (t) => {
    const c = await TestClient.connect(t, srv.wsUrl, keys.free, 'query');
    c.send(sub(8, { from: new Date(t0 + 10).toISOString() }));
    const last = await lastSeqOf();
    await c.waitSeq(last);
    const seqs = c.seqs();
    t.equal(seqs[0], 3, 'starts with the first record at the time (seq 3, recv t0+10)');
    t.equal(new Set(seqs).size, seqs.length, 'no duplicates');
    t.equal(seqs.length, last - 2);
    const first = c.msgs.find((m) => m.type === 'book')!.data as { books: { bids: number[][] }[] };
    t.same(
      first.books[0].bids.find((l) => l[0] === 0.4),
      [0.4, 100],
      'replayed book includes state from before the start point',
    );
    c.ws.close();
  });

  await t.test('a resume point at the end sends nothing old, then every new book', async (t) => {
    const end = await lastSeqOf();
    const c = await TestClient.connect(t, srv.wsUrl, keys.free);
    c.send(sub(11, { after_seq: end }));
    await c.waitFor((m) => m.type === 'subscribed');
    await sleep(200);
    t.same(c.seqs(), [], 'nothing before a new record');
    const next = await w.send({ op: 'deltas', n: 2, token: 'm1-up', t0: Date.now() + 2000 });
    await c.waitSeq(next);
    t.same(c.seqs(), [end + 1, end + 2]);
    c.ws.close();
  });

  await t.test('gap records become gap messages and no book is sent until the feed is back', async (t) => {
    const base = await lastSeqOf();
    const tg = Date.now() + 5000;
    const gapSeq = await w.append(gapObs(tg, tg, null));
    await w.append(deltaObs('m1-up', tg + 1, 'bid', '0.41', '5'), deltaObs('m1-down', tg + 2, 'bid', '0.31', '5'));
    const back = await w.append(bookObs('m1-up', tg + 50, [['0.45', '1']], [['0.55', '1']]));
    const both = await w.append(bookObs('m1-down', tg + 51, [['0.44', '1']], [['0.56', '1']]));
    const closed = await w.append(gapObs(tg + 52, tg, tg + 50));
    await live.waitSeq(closed);
    const after = live.msgs.filter((m) => (m.seq as number) > base);
    t.same(
      after.map((m) => [m.type, m.seq]),
      [
        ['gap', gapSeq],
        ['book', back],
        ['book', both],
        ['gap', closed],
      ],
      'deltas during the gap are not sent',
    );
    t.match(after[0], { type: 'gap', family: 'coin', market_id: 'm1', reason: 'disconnected', start: new Date(tg).toISOString() });
    t.notOk('end' in after[0], 'an open gap has no end');
    t.same(
      (after[1].data as { books: { outcome: string }[] }).books.map((b) => b.outcome),
      ['Up'],
      'only the outcome whose feed is back',
    );
    t.equal(after[3].end, new Date(tg + 50).toISOString());

    // A subscriber arriving during an open gap is told about the gap instead of getting a stale book.
    const g2 = await w.append(gapObs(tg + 100, tg + 100, null, 'sequence_gap'));
    await live.waitSeq(g2);
    const c = await TestClient.connect(t, srv.wsUrl, keys.free);
    c.send(sub(9));
    const m = await c.waitFor((x) => x.type === 'gap' || x.type === 'book');
    t.match(m, { type: 'gap', reason: 'sequence_gap', seq: g2 });
    c.ws.close();
  });

  await t.test('unsubscribe stops messages and the follower stops with its last subscriber', async (t) => {
    const state = streamOfServer.get(srv.app.server)!;
    t.equal(state.hub.size, 1, 'one follower shared by every subscriber of the market');
    live.send({ op: 'unsubscribe', id: 99, channel: 'book', family: 'coin', coin: 'btc', market_id: 'slug-m1' });
    await live.waitFor((m) => m.type === 'unsubscribed' && m.id === 99);
    const n = live.msgs.length;
    await w.send({ op: 'deltas', n: 3, token: 'm1-up', t0: Date.now() + 10_000 });
    await sleep(400);
    t.equal(live.msgs.length, n, 'nothing after unsubscribed');
    for (let i = 0; i < 50 && state.hub.size > 0; i++) await sleep(20);
    t.equal(state.hub.size, 0, 'follower stopped');
  });
});

t.test('yes/no books stream as the REST yes/no snapshot with native text', async (t) => {
  const dir = tempDir(t);
  const keys = await makeKeys(dir);
  await writeCatalog(dir, yesnoMarket('KXT-1'));
  const srv = await startServer(t, dir);
  const w = await ChildWriter.start(t, dir, 'yesno-exchange', 'KXT-1');
  const c = await TestClient.connect(t, srv.wsUrl, keys.free);
  c.send({ op: 'subscribe', id: 'a', channel: 'book', family: 'yesno-exchange', ticker: 'KXT-1' });
  await c.waitFor((m) => m.type === 'subscribed' && m.id === 'a');
  const now = Date.now();
  const seq = await w.append({
    type: 'yesno_book',
    recv_ts: now,
    source_ts: now - 3,
    units: 'dollars',
    yes: [['0.5200', '120.00']],
    no: [
      ['0.4700', '80.00'],
      ['0.4600', '10.00'],
    ],
  });
  const m = await c.waitSeq(seq);
  t.same(m, {
    type: 'book',
    family: 'yesno-exchange',
    seq,
    data: {
      ticker: 'KXT-1',
      observed_time: new Date(now - 3).toISOString(),
      receive_time: new Date(now).toISOString(),
      seq,
      units: 'dollars',
      yes: { prices: ['0.5200'], sizes: ['120.00'] },
      no: { prices: ['0.4700', '0.4600'], sizes: ['80.00', '10.00'] },
      levels: { yes: 1, no: 2 },
    },
  });
});

// The stream against the whole API: every `book` message's data equals the REST snapshot object for
// the same seq (coin and wallet families, mirrored outcome included), and a REST `next_cursor`
// given as `from` continues exactly where the page stopped, then carries on live.

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
  walletMarket,
  writeCatalog,
} from './stream-helpers.js';

type Page = { data: Record<string, unknown>[]; next_cursor: string | null };

t.test('stream and REST agree', async (t) => {
  const dir = tempDir(t);
  const keys = await makeKeys(dir);
  await writeCatalog(dir, coinMarket('m1'));
  await writeCatalog(dir, walletMarket('w1'));
  const srv = await startServer(t, dir, { full: true });
  const get = async (path: string): Promise<Page> => {
    const res = await fetch(`${srv.httpUrl}${path}`, { headers: { authorization: `Bearer ${keys.paid}` } });
    t.equal(res.status, 200, path);
    return (await res.json()) as Page;
  };
  const t0 = Date.now();
  const coin = await ChildWriter.start(t, dir, 'coin', 'm1');
  await coin.append(
    bookObs(
      'm1-up',
      t0,
      [
        ['0.48', '10'],
        ['0.47', '5'],
      ],
      [['0.52', '3']],
    ),
    bookObs('m1-down', t0 + 1, [['0.47', '2']], [['0.53', '4']]),
  );
  // A checkpoint (as the recorder writes them) so replays start from it rather than the log start.
  await coin.append({
    type: 'book_checkpoint',
    recv_ts: t0 + 1,
    source_ts: null,
    units: 'decimal',
    books: [
      {
        token_id: 'm1-up',
        bids: [
          ['0.48', '10'],
          ['0.47', '5'],
        ],
        asks: [['0.52', '3']],
      },
      { token_id: 'm1-down', bids: [['0.47', '2']], asks: [['0.53', '4']] },
    ],
  });
  await coin.send({ op: 'deltas', n: 30, token: 'm1-up', t0: t0 + 2 });
  await coin.append(gapObs(t0 + 40, t0 + 40, null), deltaObs('m1-down', t0 + 41, 'ask', '0.54', '1'));
  await coin.append(bookObs('m1-down', t0 + 42, [['0.46', '2']], [['0.54', '4']]), gapObs(t0 + 43, t0 + 40, t0 + 42));
  const coinLast = await coin.send({ op: 'deltas', n: 10, token: 'm1-down', t0: t0 + 44, price: '0.45' });
  const wallet = await ChildWriter.start(t, dir, 'wallet-prediction', 'w1');
  await wallet.append(
    bookObs(
      'w1-up',
      t0,
      [
        ['0.61', '10'],
        ['0.6', '4'],
      ],
      [['0.63', '7']],
    ),
  );
  const walletLast = await wallet.send({ op: 'deltas', n: 20, token: 'w1-up', t0: t0 + 1, price: '0.59' });

  await t.test('a plain GET of the stream route explains itself with the error envelope', async (t) => {
    const res = await fetch(`${srv.httpUrl}/v3/stream`);
    t.equal(res.status, 400);
    t.match(await res.json(), { error: { status: 400, code: 'invalid_parameter', message: /WebSocket/, request_id: /\S+/ } });
  });

  await t.test('coin book messages equal the REST snapshots seq for seq', async (t) => {
    const c = await TestClient.connect(t, srv.wsUrl, keys.free);
    c.send({ op: 'subscribe', id: 1, channel: 'book', family: 'coin', coin: 'btc', market_id: 'm1', after_seq: 0 });
    await c.waitSeq(coinLast);
    const rest = await get('/v3/btc/markets/m1/snapshots?include_orderbook=true&limit=1000');
    t.equal(rest.next_cursor, null);
    const books = c.msgs.filter((m) => m.type === 'book');
    t.ok(books.length > 40);
    t.same(
      books.map((m) => m.data),
      rest.data,
      'same objects, same seqs, same order',
    );
    t.same(
      c.msgs.filter((m) => m.type === 'gap').map((m) => m.end === undefined),
      [true, false],
      'the gap opens and closes',
    );
  });

  await t.test('wallet messages equal REST for the first and the mirrored outcome', async (t) => {
    for (const outcome of ['Up', 'Down']) {
      const c = await TestClient.connect(t, srv.wsUrl, keys.paid);
      c.send({ op: 'subscribe', id: 2, channel: 'book', family: 'wallet-prediction', market_id: 'w1', outcome, after_seq: 0 });
      await c.waitSeq(walletLast);
      const rest = await get(`/v3/wallet-prediction/w1/snapshots?outcome=${outcome}&limit=1000`);
      t.same(
        c.msgs.filter((m) => m.type === 'book').map((m) => m.data),
        rest.data,
        `outcome ${outcome}`,
      );
      t.equal(rest.data.length, walletLast);
      c.ws.close();
    }
  });

  await t.test('a live subscriber first gets the newest snapshot, also when a checkpoint follows it', async (t) => {
    const hub = streamOfServer.get(srv.app.server)!.hub;
    for (let i = 0; i < 100 && hub.size > 0; i++) await sleep(20); // earlier followers have stopped
    t.equal(hub.size, 0);
    // The state after the last delta, as the recorder's checkpoint would hold it.
    await wallet.append({
      type: 'book_checkpoint',
      recv_ts: t0 + 30,
      source_ts: null,
      units: 'decimal',
      books: [
        {
          token_id: 'w1-up',
          bids: [
            ['0.61', '10'],
            ['0.6', '4'],
            ['0.59', '119'],
          ],
          asks: [['0.63', '7']],
        },
      ],
    });
    const c = await TestClient.connect(t, srv.wsUrl, keys.paid);
    c.send({ op: 'subscribe', id: 4, channel: 'book', family: 'wallet-prediction', market_id: 'w1' });
    const first = await c.waitFor((m) => m.type === 'book');
    const rest = await get('/v3/wallet-prediction/w1/snapshots?limit=1000');
    t.equal(first.seq, walletLast);
    t.same(first.data, rest.data.at(-1), 'the REST snapshot of that seq');
    c.ws.close();
  });

  await t.test('live subscribers of both outcomes share one follower and each get their view', async (t) => {
    const up = await TestClient.connect(t, srv.wsUrl, keys.paid);
    const down = await TestClient.connect(t, srv.wsUrl, keys.paid);
    up.send({ op: 'subscribe', id: 5, channel: 'book', family: 'wallet-prediction', market_id: 'w1' });
    down.send({ op: 'subscribe', id: 5, channel: 'book', family: 'wallet-prediction', market_id: 'w1', outcome: 'Down' });
    await up.waitFor((m) => m.type === 'book');
    await down.waitFor((m) => m.type === 'book');
    const seq = await wallet.append(deltaObs('w1-up', t0 + 40, 'ask', '0.64', '3'));
    const u = await up.waitSeq(seq);
    const d = await down.waitSeq(seq);
    t.equal(streamOfServer.get(srv.app.server)!.hub.size, 1, 'one follower');
    for (const [outcome, m] of [
      ['Up', u],
      ['Down', d],
    ] as const) {
      const rest = await get(`/v3/wallet-prediction/w1/snapshots?outcome=${outcome}&limit=1000`);
      t.same(m.data, rest.data.at(-1), `${outcome} equals REST`);
    }
    t.same((d.data as { bids: number[][] }).bids[0], [0.37, 7], 'the mirror: best Down bid is 1 − best Up ask');
  });

  await t.test('a REST next_cursor as `from` resumes exactly after the page, then goes live', async (t) => {
    const page = await get('/v3/btc/markets/m1/snapshots?include_orderbook=true&limit=7');
    t.ok(page.next_cursor);
    const c = await TestClient.connect(t, srv.wsUrl, keys.free);
    c.send({ op: 'subscribe', id: 3, channel: 'book', family: 'coin', coin: 'btc', market_id: 'm1', from: page.next_cursor });
    await c.waitSeq(coinLast);
    // m1-down: the up book is still invalid since the gap (no full book came back for it).
    const more = await coin.send({ op: 'deltas', n: 5, token: 'm1-down', t0: Date.now() + 100, price: '0.44' });
    await c.waitSeq(more);
    await sleep(100);
    const all = await get('/v3/btc/markets/m1/snapshots?include_orderbook=true&limit=1000');
    const restAfter = all.data.slice(7);
    t.same(
      c.msgs.filter((m) => m.type === 'book').map((m) => m.data),
      restAfter,
      'the rest of the history and the live tail, once each',
    );
    t.equal((restAfter.at(-1) as { seq: number }).seq, more);
  });
});

// Who may open the stream and what happens to bad input: the auth matrix on the upgrade (the REST
// statuses and envelope), plans per family, a key revoked while connected, and malformed messages
// answered with error messages on a connection that stays open.

import t from 'tap';
import { revokeKey } from '../../src/api/plugins/keys.js';
import { WebSocketServer } from 'ws';
import { streamOfServer } from '../../src/api/stream/route.js';
import { StreamClient } from '../../src/api/stream/client.js';
import { StreamHub } from '../../src/api/stream/hub.js';
import { streamModels } from '../../src/api/stream/market.js';
import { streamClients } from '../../src/metrics.js';
import {
  bookObs,
  ChildWriter,
  coinMarket,
  makeKeys,
  startServer,
  tempDir,
  TestClient,
  walletMarket,
  writeCatalog,
} from './stream-helpers.js';

const refused = async (p: Promise<unknown>): Promise<{ status: number; body: { error: Record<string, unknown> } }> => {
  try {
    await p;
  } catch (e) {
    return e as { status: number; body: { error: Record<string, unknown> } };
  }
  throw new Error('upgrade was accepted');
};

t.test('stream access', async (t) => {
  const dir = tempDir(t);
  const keys = await makeKeys(dir);
  await writeCatalog(dir, coinMarket('m1'));
  await writeCatalog(dir, walletMarket('w1'));
  const srv = await startServer(t, dir, { settings: { authRecheckMs: 50 } });

  await t.test('the upgrade is refused with the REST status and error envelope', async (t) => {
    const none = await refused(TestClient.connect(t, srv.wsUrl));
    t.equal(none.status, 401);
    t.match(none.body.error, { status: 401, code: 'unauthorized', message: /API key is required/, request_id: /\S+/ });
    const bad = await refused(TestClient.connect(t, srv.wsUrl, 'pmt_000000000000_' + 'x'.repeat(43)));
    t.match(bad.body.error, { status: 401, code: 'unauthorized' });
    const garbage = await refused(TestClient.connect(t, srv.wsUrl, 'not a key', 'query'));
    t.equal(garbage.status, 401);
    const path = await refused(TestClient.connect(t, srv.wsUrl.replace('/v3/stream', '/v3/streams'), keys.paid));
    t.match(path, { status: 404, body: { error: { code: 'not_found' } } });
    const param = await refused(TestClient.connect(t, `${srv.wsUrl}?token=1`, keys.paid));
    t.match(param, { status: 400, body: { error: { code: 'invalid_parameter', message: /token/ } } });
    const fam = await refused(TestClient.connect(t, `${srv.wsUrl}?family=stocks`, keys.paid));
    t.match(fam, { status: 400, body: { error: { code: 'invalid_parameter', message: /family/ } } });
    const plan = await refused(TestClient.connect(t, `${srv.wsUrl}?family=coin,wallet-prediction`, keys.free));
    t.match(plan, { status: 403, body: { error: { status: 403, code: 'plan_required', message: /paid/ } } });
    const ok = await TestClient.connect(t, `${srv.wsUrl}?family=wallet-prediction`, keys.paid);
    ok.ws.close();
  });

  await t.test('a key in the header or in ?api_key= opens the stream', async (t) => {
    const a = await TestClient.connect(t, srv.wsUrl, keys.free, 'header');
    const b = await TestClient.connect(t, srv.wsUrl, keys.paid, 'query');
    t.equal(a.ws.readyState, a.ws.OPEN);
    t.equal(b.ws.readyState, b.ws.OPEN);
    a.ws.close();
    b.ws.close();
  });

  await t.test('wallet-prediction needs the paid plan; the connection stays open', async (t) => {
    const free = await TestClient.connect(t, srv.wsUrl, keys.free);
    free.send({ op: 'subscribe', id: 5, channel: 'book', family: 'wallet-prediction', market_id: 'w1' });
    const e = await free.waitFor((m) => m.type === 'error');
    t.match(e, { id: 5, error: { status: 403, code: 'plan_required' } });
    free.send({ op: 'subscribe', id: 6, channel: 'book', family: 'coin', coin: 'btc', market_id: 'm1' });
    await free.waitFor((m) => m.type === 'subscribed' && m.id === 6);
    const paid = await TestClient.connect(t, srv.wsUrl, keys.paid);
    paid.send({ op: 'subscribe', id: 5, channel: 'book', family: 'wallet-prediction', market_id: 'topic-w1', outcome: 'Down' });
    await paid.waitFor((m) => m.type === 'subscribed' && m.id === 5);
    free.ws.close();
    paid.ws.close();
  });

  await t.test('bad messages get error messages with the envelope and the connection stays open', async (t) => {
    const c = await TestClient.connect(t, srv.wsUrl, keys.free);
    const cases: [unknown, number | string | null, number, string, RegExp][] = [
      ['{not json', null, 400, 'invalid_parameter', /not valid JSON/],
      ['[1,2]', null, 400, 'invalid_parameter', /JSON object/],
      [{ op: 'subscribe', channel: 'book', family: 'coin' }, null, 400, 'invalid_parameter', /'id'/],
      [{ op: 'watch', id: 1, channel: 'book', family: 'coin' }, 1, 400, 'invalid_parameter', /'op'/],
      [{ op: 'subscribe', id: 2, channel: 'trades', family: 'coin' }, 2, 400, 'invalid_parameter', /'channel'/],
      [{ op: 'subscribe', id: 3, channel: 'book', family: 'stocks' }, 3, 400, 'invalid_parameter', /'family'/],
      [{ op: 'subscribe', id: 4, channel: 'book', family: 'coin', market_id: 'm1' }, 4, 400, 'invalid_parameter', /'coin' is required/],
      [
        { op: 'subscribe', id: 5, channel: 'book', family: 'coin', coin: 'btc', market_id: 'm1', depth: 3 },
        5,
        400,
        'invalid_parameter',
        /'depth'/,
      ],
      [
        { op: 'subscribe', id: 6, channel: 'book', family: 'coin', coin: 'btc', market_id: 'nope' },
        6,
        404,
        'not_found',
        /nope.*\/v3\/btc\/markets/,
      ],
      [{ op: 'subscribe', id: 7, channel: 'book', family: 'coin', coin: 'eth', market_id: 'm1' }, 7, 404, 'not_found', /not a eth market/],
      [
        { op: 'subscribe', id: 8, channel: 'book', family: 'coin', coin: 'btc', market_id: 'm1', from: 'abc.def' },
        8,
        400,
        'invalid_cursor',
        /from/,
      ],
      [
        { op: 'subscribe', id: 9, channel: 'book', family: 'coin', coin: 'btc', market_id: 'm1', from: -5 },
        9,
        400,
        'invalid_parameter',
        /'from'/,
      ],
      [
        { op: 'subscribe', id: 10, channel: 'book', family: 'coin', coin: 'btc', market_id: 'm1', after_seq: 1.5 },
        10,
        400,
        'invalid_parameter',
        /after_seq/,
      ],
      [
        { op: 'unsubscribe', id: 11, channel: 'book', family: 'coin', coin: 'btc', market_id: 'm1' },
        11,
        404,
        'not_found',
        /no subscription/,
      ],
      [
        { op: 'subscribe', id: 12, channel: 'book', family: 'yesno-exchange', ticker: 'NOPE-1' },
        12,
        404,
        'not_found',
        /yesno-exchange\/markets/,
      ],
    ];
    for (const [msg, id, status, code, message] of cases) {
      const n = c.msgs.length;
      c.send(msg);
      const e = await c.waitFor((m, i = c.msgs.indexOf(m)) => i >= n && m.type === 'error');
      t.match(e, { type: 'error', id, error: { status, code, message, request_id: /\S+/ } }, JSON.stringify(msg).slice(0, 80));
    }
    c.ws.send(Buffer.from([1, 2, 3]), { binary: true });
    t.match(await c.waitFor((m) => m.type === 'error' && /Binary/.test(String((m.error as { message: string }).message))), {
      error: { code: 'invalid_parameter' },
    });
    c.send({ op: 'subscribe', id: 20, channel: 'book', family: 'coin', coin: 'BTC', market_id: '0xcondm1' });
    await c.waitFor((m) => m.type === 'subscribed' && m.id === 20);
    c.send({ op: 'subscribe', id: 21, channel: 'book', family: 'coin', coin: 'btc', market_id: 'm1' });
    t.match(await c.waitFor((m) => m.type === 'error' && m.id === 21), {
      error: { code: 'invalid_parameter', message: /Already subscribed/ },
    });
    t.equal(c.ws.readyState, c.ws.OPEN, 'still open after every bad message');
    c.ws.close();
  });

  await t.test('a key revoked while connected ends its streams with 1008; other keys keep theirs', async (t) => {
    const w = await ChildWriter.start(t, dir, 'coin', 'm1');
    await w.append(bookObs('m1-up', Date.now(), [['0.5', '1']], [['0.6', '1']]));
    // Earlier subtests' connections close asynchronously: count from a quiet server.
    const open = streamOfServer.get(srv.app.server)!.clients;
    for (let i = 0; i < 200 && open.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
    const before = (await streamClients.get()).values[0]?.value ?? 0;
    const doomed = await TestClient.connect(t, srv.wsUrl, keys.free);
    const kept = await TestClient.connect(t, srv.wsUrl, keys.paid);
    for (const c of [doomed, kept]) c.send({ op: 'subscribe', id: 1, channel: 'book', family: 'coin', coin: 'btc', market_id: 'm1' });
    await doomed.waitFor((m) => m.type === 'book');
    await kept.waitFor((m) => m.type === 'book');
    t.equal((await streamClients.get()).values[0].value, before + 2, 'streamClients counts open connections');
    t.ok(await revokeKey(dir, keys.freeId));
    const closed = await doomed.closed;
    t.equal(closed.code, 1008);
    t.match(closed.reason, /revoked/);
    t.match(doomed.msgs.at(-1), { type: 'error', error: { status: 401, code: 'unauthorized' } });
    const seq = await w.append(bookObs('m1-up', Date.now() + 1, [['0.51', '1']], [['0.6', '1']]));
    await kept.waitSeq(seq);
    t.equal(kept.ws.readyState, kept.ws.OPEN);
    const again = await refused(TestClient.connect(t, srv.wsUrl, keys.free));
    t.equal(again.status, 401, 'the revoked key cannot reconnect');
    kept.ws.close();
    await kept.closed;
    for (let i = 0; i < 50 && (await streamClients.get()).values[0].value !== before; i++) await new Promise((r) => setTimeout(r, 20));
    t.equal((await streamClients.get()).values[0].value, before, 'gauge back down after closes');
  });
});

t.test('a client piling up requests faster than they are answered is closed with 1008', async (t) => {
  // A market lookup that never answers keeps every request queued behind the first one.
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  t.teardown(() => wss.close());
  await new Promise((r) => wss.once('listening', r));
  const svc = {
    hub: new StreamHub(
      streamModels,
      () => {
        throw new Error('unused');
      },
      { warn: () => undefined },
    ),
    modelFor: streamModels,
    limits: { maxBufferedBytes: 1 << 20, replayHighWaterBytes: 1 << 16, maxSubscriptions: 10, closeGraceMs: 1000 },
    resolveTarget: () => new Promise<never>(() => undefined),
    cursorStart: async () => 1,
    planCheck: () => null,
    log: { warn: () => undefined, error: () => undefined },
  };
  wss.on('connection', (ws) => new StreamClient(ws, 'key', 'free', svc));
  const c = await TestClient.connect(t, `ws://127.0.0.1:${(wss.address() as { port: number }).port}`);
  for (let i = 0; i < 300; i++) c.send({ op: 'subscribe', id: i, channel: 'book', family: 'coin', coin: 'btc', market_id: 'm' });
  const closed = await c.closed;
  t.equal(closed.code, 1008);
  t.match(closed.reason, /too many requests/);
});

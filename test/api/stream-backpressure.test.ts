// Backpressure and liveness: a client that stops reading is closed with 1008 once its bounded
// buffer is full while a fast client on the same market gets every message; peers that stop
// answering pings are dropped, peers that answer stay.

import t from 'tap';
import type { Socket } from 'node:net';
import { streamOfServer } from '../../src/api/stream/route.js';
import { streamDisconnects } from '../../src/metrics.js';

const disconnects = async (reason: string): Promise<number> =>
  (await streamDisconnects.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0;
import { bookObs, ChildWriter, coinMarket, makeKeys, sleep, startServer, tempDir, TestClient, writeCatalog } from './stream-helpers.js';

const socketOf = (c: TestClient): Socket => (c.ws as unknown as { _socket: Socket })._socket;
const subMsg = { op: 'subscribe', id: 1, channel: 'book', family: 'coin', coin: 'btc', market_id: 'm1' };

t.test('a client that stops reading is closed with 1008 while a fast one keeps up', async (t) => {
  const dir = tempDir(t);
  const keys = await makeKeys(dir);
  await writeCatalog(dir, coinMarket('m1'));
  const srv = await startServer(t, dir, { settings: { maxBufferedBytes: 1024 * 1024, closeGraceMs: 60_000 } });
  const w = await ChildWriter.start(t, dir, 'coin', 'm1');
  // A deep book makes every message ~6 KB, so a few MB pass quickly.
  const side = (p0: number, dir: number): [string, string][] =>
    Array.from({ length: 200 }, (_, i) => [(p0 + dir * i * 0.001).toFixed(3), String(10 + i)]);
  const t0 = Date.now();
  await w.append(bookObs('m1-up', t0, side(0.399, -1), side(0.6, 1)));

  const fast = await TestClient.connect(t, srv.wsUrl, keys.free);
  const slow = await TestClient.connect(t, srv.wsUrl, keys.free);
  for (const c of [fast, slow]) {
    c.send(subMsg);
    await c.waitFor((m) => m.type === 'book');
  }
  socketOf(slow).pause();
  const last = await w.send({ op: 'deltas', n: 2500, token: 'm1-up', t0: t0 + 1 });
  await fast.waitSeq(last, 60_000);
  t.same(
    fast.seqs(),
    Array.from({ length: last }, (_, i) => i + 1),
    'the fast client got every seq in order',
  );
  t.equal(fast.ws.readyState, fast.ws.OPEN);

  const state = streamOfServer.get(srv.app.server)!;
  const subscribed = (): number => [...state.clients].filter((c) => c.subscriptionCount > 0).length;
  for (let i = 0; i < 100 && subscribed() > 1; i++) await sleep(20);
  t.equal(subscribed(), 1, 'the slow client lost its subscription');
  socketOf(slow).resume();
  const closed = await slow.closed;
  t.equal(closed.code, 1008);
  t.match(closed.reason, /too far behind/);
  t.equal(await disconnects('too_far_behind'), 1, 'counted in pmtape_stream_disconnects_total');
  t.ok(slow.seqs().length < last, `the slow client got only part (${slow.seqs().length} of ${last})`);
  const seqs = slow.seqs();
  t.same(
    seqs,
    Array.from({ length: seqs.length }, (_, i) => i + 1),
    'what it got is a prefix, in order',
  );
});

t.test('peers that stop answering pings are dropped; answering peers stay', async (t) => {
  const dir = tempDir(t);
  const keys = await makeKeys(dir);
  const srv = await startServer(t, dir, { settings: { pingIntervalMs: 100 } });
  const state = streamOfServer.get(srv.app.server)!;
  const alive = await TestClient.connect(t, srv.wsUrl, keys.free);
  const dead = await TestClient.connect(t, srv.wsUrl, keys.free);
  let pings = 0;
  alive.ws.on('ping', () => pings++);
  socketOf(dead).pause(); // reads nothing: never sees the ping, never pongs
  for (let i = 0; i < 100 && state.clients.size > 1; i++) await sleep(20);
  t.equal(state.clients.size, 1, 'the silent peer was dropped');
  t.equal(await disconnects('dead_peer'), 1, 'counted as a dead peer');
  await sleep(300);
  t.ok(pings >= 3, `the live peer was pinged (${pings}) and kept`);
  t.equal(alive.ws.readyState, alive.ws.OPEN);
  socketOf(dead).resume();
  const c = await dead.closed;
  t.equal(c.code, 1006, 'dropped without a close handshake');
});

import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { startSim } from '../../src/sim/server.js';
import type { SimMount } from '../../src/sim/mount.js';
import type { WalletSim } from '../../src/sim/wallet.js';
import { WalletUniverse } from '../../src/sim/wallet-market.js';
import { normalizeWalletMarket } from '../../src/recorders/wallet/normalize.js';

/** The emulator's clock starts 1 s into a 90 s window (15m at scale 0.1; the 30 s windows start
 *  there too), so no market the tests watch closes while they run, however slow the machine.
 *  On the wall clock a test could meet a window's end and its pushes stop (a CI failure). */
function midWindowClock(): () => number {
  const W = 90_000,
    base = Date.now(),
    origin = Math.floor(base / W) * W + W + 1000;
  return () => origin + (Date.now() - base);
}

async function sim(t: Test) {
  const clock = midWindowClock();
  const s = await startSim({ seed: 5, windowScale: 0.1, now: clock });
  t.teardown(() => s.close());
  const w = (s.mounts.find((m) => m.prefix === '/wallet') as SimMount & { wallet: WalletSim }).wallet;
  const get = async (p: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> => {
    const r = await fetch(`${s.url}/wallet${p}`, { headers });
    return { status: r.status, body: await r.json() };
  };
  return { s, w, get, clock };
}

/** A raw protocol client collecting parsed frames. */
async function client(t: Test, url: string, echo = false) {
  const ws = new WebSocket(url);
  t.teardown(() => ws.terminate());
  const frames: any[] = [];
  let closed: { code: number } | null = null;
  ws.on('message', (d) => {
    const f = JSON.parse((d as Buffer).toString());
    frames.push(f);
    if (echo && f.topic === 'heartbeat') ws.send(JSON.stringify({ method: 'heartbeat', data: f.data }));
  });
  ws.on('close', (code) => (closed = { code }));
  await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
  const wait = async (pred: () => boolean, ms = 8000): Promise<boolean> => {
    const end = Date.now() + ms;
    while (!pred() && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
    return pred();
  };
  return { ws, frames, wait, closed: () => closed, send: (o: unknown) => ws.send(JSON.stringify(o)) };
}

t.test('REST lists topics and markets with cursors; markets join topics with every identifier', async (t) => {
  const { get, s, clock } = await sim(t);
  const topics = await get('/v1/topics?limit=200');
  const listedAt = clock();
  const markets = await get('/v1/markets?limit=200');
  t.equal(topics.body.success, true);
  t.equal(topics.body.data.length, 42, '3 coins × 2 windows × 7 listed windows');
  const paged: string[] = [];
  let cursor: string | null = '';
  while (cursor !== null) {
    const p = await get(`/v1/topics?limit=10${cursor ? `&cursor=${cursor}` : ''}`);
    paged.push(...p.body.data.map((x: any) => x.marketTopicId));
    cursor = p.body.cursor;
  }
  t.same(
    paged,
    topics.body.data.map((x: any) => x.marketTopicId),
  );
  const now = listedAt;
  const running = topics.body.data.filter((x: any) => Date.parse(x.startTime) <= now - 500 && now + 500 < Date.parse(x.endTime));
  t.ok(running.length >= 4 && running.length <= 6, 'one running window per coin × window length');
  for (const x of running) t.ok(['OPEN', 'CANCELLED'].includes(x.status), 'a running window is open (or was cancelled)');
  const byId = new Map(markets.body.data.map((m: any) => [m.id, m]));
  for (const tp of topics.body.data) {
    const m = normalizeWalletMarket(tp, byId.get(tp.marketId));
    t.ok(m, `topic ${tp.slug} joins its market`);
  }
  t.equal((await get('/v1/topics?limit=0')).status, 400);
  t.ok(s.config.upstreams && (s.config.upstreams as any).wallet.ws.endsWith('/wallet/ws'));
});

t.test('REST books, metric samples, and the operator key when the venue wants one', async (t) => {
  const { get, w } = await sim(t);
  const id = (await get('/v1/topics?status=open')).body.data[0].marketId;
  const book = await get(`/v1/markets/${id}/orderbook`);
  t.equal(book.body.data.marketId, id);
  t.type(book.body.data.version, 'number');
  const bids = book.body.data.bids.map((l: number[]) => l[0]);
  t.same(
    bids,
    [...bids].sort((a, b) => b - a),
    'bids best first',
  );
  const stats = await get(`/v1/markets/${id}/stats`);
  t.same(
    stats.body.data.outcomes.map((o: any) => o.name),
    ['Up', 'Down'],
  );
  for (const o of stats.body.data.outcomes) for (const k of ['chance', 'price', 'lastTradePrice']) t.type(o[k], 'number');
  t.equal((await get('/v1/markets/1/orderbook')).status, 404);
  w.settings.apiKey = 'k-123';
  t.equal((await get(`/v1/markets/${id}/orderbook`)).status, 401);
  t.equal((await get(`/v1/markets/${id}/orderbook`, { 'x-api-key': 'k-123' })).status, 200);
});

t.test('WebSocket: subscribe is acknowledged, snapshots are pushed, heartbeats must be echoed', async (t) => {
  const { get, w, s } = await sim(t);
  w.settings.heartbeatMs = 400;
  const id = (await get('/v1/topics?status=open')).body.data[0].marketId;
  const url = `${s.url.replace('http', 'ws')}/wallet/ws`;
  const c = await client(t, url, true);
  c.send({ method: 'subscribe', requestId: 1, params: [`predictOrderbook/${id}`] });
  c.send({ method: 'subscribe', requestId: 2, params: ['predictOrderbook/999'] });
  c.send({ method: 'dance', requestId: 3 });
  t.ok(await c.wait(() => c.frames.some((f) => f.topic === `predictOrderbook/${id}`)), 'a full snapshot arrives');
  t.same(
    c.frames.find((f) => f.requestId === 1),
    { type: 'R', requestId: 1, success: true, data: null },
  );
  t.equal(c.frames.find((f) => f.requestId === 2).error.code, 'INVALID_TOPIC');
  t.equal(c.frames.find((f) => f.requestId === 3).error.code, 'INVALID_METHOD');
  const push = c.frames.find((f) => f.topic === `predictOrderbook/${id}`).data;
  t.same(Object.keys(push).sort(), ['asks', 'bids', 'marketId', 'orderCount', 'updateTimestampMs', 'version']);
  // heartbeats answered with their payload: the connection stays
  t.ok(await c.wait(() => w.stats.heartbeatsEchoed >= 3));
  t.equal(c.closed(), null);
  // a client that ignores them is closed
  const quiet = await client(t, url);
  t.ok(await quiet.wait(() => quiet.closed() !== null, 3000), 'closed for not echoing');
  t.equal(quiet.closed()!.code, 4000);
  t.ok(w.stats.closedForHeartbeat >= 1);
});

t.test('WebSocket delivery is unordered and duplicated at the configured rates; unsubscribe stops it', async (t) => {
  const { get, w, s } = await sim(t);
  w.settings.reorder = 0.5;
  w.settings.duplicate = 0.5;
  const open = (await get('/v1/topics?status=open')).body.data;
  const ids = open.map((x: any) => x.marketId);
  const watched = open.reduce((a: any, b: any) => (Date.parse(b.endTime) > Date.parse(a.endTime) ? b : a)).marketId;
  const c = await client(t, `${s.url.replace('http', 'ws')}/wallet/ws`);
  c.send({ method: 'subscribe', requestId: 1, params: ids.map((i: number) => `predictOrderbook/${i}`) });
  const versions = (): number[] => c.frames.filter((f) => f.topic === `predictOrderbook/${watched}`).map((f) => f.data.version);
  const perMarket = (): number[][] => {
    const by = new Map<number, number[]>();
    for (const f of c.frames)
      if (f.topic?.startsWith('predictOrderbook/')) by.set(f.data.marketId, [...(by.get(f.data.marketId) ?? []), f.data.version]);
    return [...by.values()];
  };
  const duplicated = (): boolean => new Set(versions()).size < versions().length;
  const reordered = (): boolean => perMarket().some((vs) => vs.some((x, i) => i > 0 && x < vs[i - 1]));
  // Both are random per push (p = 0.5 each): wait for them, bounded far beyond any real run.
  t.ok(await c.wait(() => versions().length >= 4 && duplicated() && reordered(), 60_000), 'pushes keep coming');
  t.ok(duplicated(), `duplicates: ${versions().join(',')}`);
  t.ok(reordered(), 'some version arrives after a newer one');
  c.send({ method: 'unsubscribe', requestId: 2, params: ids.map((i: number) => `predictOrderbook/${i}`) });
  await c.wait(() => c.frames.some((f) => f.requestId === 2));
  await new Promise((r) => setTimeout(r, 300));
  const n = c.frames.length;
  await new Promise((r) => setTimeout(r, 1200));
  t.equal(c.frames.filter((f, i) => i >= n && f.topic?.startsWith('predictOrderbook/')).length, 0, 'nothing after unsubscribing');
});

t.test('the universe settles ties as a push, cancels some windows, and is deterministic per seed', async (t) => {
  const now = Date.UTC(2026, 6, 1, 12);
  const mk = (seed: number) =>
    new WalletUniverse({ seed, windowScale: 1, coins: ['btc', 'eth', 'bnb'], windows: ['5m', '15m'], bookStepMs: 1000, now: () => now });
  const all = [];
  const u = mk(5);
  for (let k = 0; k < 300; k++) all.push((u as any).make('btc', '5m', 5_000_000 + k));
  t.ok(all.filter((m) => m.endPrice === m.startPrice).length >= 10, 'ties happen');
  t.ok(
    all.some((m) => m.cancelled),
    'cancellations happen',
  );
  t.same(
    mk(5)
      .list()
      .map((m) => [m.id, m.slug, m.conditionId, m.tokens]),
    mk(5)
      .list()
      .map((m) => [m.id, m.slug, m.conditionId, m.tokens]),
  );
  t.notSame(mk(5).list()[0].conditionId, mk(6).list()[0].conditionId);
  for (const m of u.list()) t.match(m.slug, /^(btc|eth|bnb)-updown-(5m|15m)-\d{10}$/);
});

import t from 'tap';
import { harness, midWindow, until, type Harness } from '../yesno/harness.js';
import { WalletRecorder, walletKey } from '../../../src/recorders/wallet/feed.js';
import type { SimMount } from '../../../src/sim/mount.js';
import type { WalletSim } from '../../../src/sim/wallet.js';
import type { BookSnapshot, CatalogEvent, Gap, MetricSample, Recorded } from '../../../src/schema/observation.js';

const walletOf = (mounts: readonly SimMount[]): WalletSim =>
  (mounts.find((m) => m.prefix === '/wallet') as SimMount & { wallet: WalletSim }).wallet;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const FAST = { recorders: { catalog_poll_ms: 400 }, stale_after_ms: 1000 };

async function booksOf(h: Harness, id: string): Promise<Recorded[]> {
  return h.read(walletKey(id, 'books'));
}

t.test('records the joined catalogue, first-outcome books and three metric series; the key is sent, never logged', async (t) => {
  const KEY = 'op-secret-7f3a9c';
  const h = await harness({ windowScale: 1, now: midWindow() }, { ...FAST, upstreams: { wallet: { api_key: KEY } } });
  t.teardown(() => h.close());
  const sim = walletOf(h.sim.mounts);
  sim.settings.apiKey = KEY;
  sim.settings.heartbeatMs = 300;
  const r = new WalletRecorder(h.deps);
  await r.start();
  t.ok(await until(() => r.books >= 12 && sim.stats.heartbeatsEchoed >= 2), 'books and echoed heartbeats');
  await sleep(600);
  await r.stop();
  t.equal(sim.stats.closedForHeartbeat, 0, 'every heartbeat was echoed within the deadline');
  const ids = r.followedMarkets();
  t.ok(ids.length >= 4, `one open market per coin × window, bar a cancelled one (${ids.length})`);
  const id = ids[0];
  const cat = (await h.read(walletKey(id, 'catalog'))) as Recorded<CatalogEvent>[];
  t.equal(cat[0].event, 'listed');
  for (const ev of cat.slice(1)) t.ok(ev.changed.length > 0, 'later events name what changed');
  const m = cat.at(-1)!.market;
  if (m.family !== 'wallet-prediction') throw new Error('wrong family');
  t.equal(m.market_id, id);
  t.match(m.condition_id, /^0x[0-9a-f]{64}$/);
  t.match(m.topic_id, /^\d+$/);
  t.match(m.slug, /^(btc|eth|bnb)-updown-(5m|15m)-\d{10}$/);
  t.same(
    m.outcomes.map((o) => o.label),
    ['Up', 'Down'],
  );
  t.match(m.outcomes[0].token_id, /^\d{77}$/);
  t.same(m.chain, { chain_id: 56, exchange_contract: '0x8BC070BEdAB741406F4B1Eb65A72bee27894B689' });
  t.equal(m.status, 'open');
  t.type(m.volume, 'number');
  t.type(m.participants, 'number');
  const books = (await booksOf(h, id)).filter((x): x is Recorded<BookSnapshot> => x.type === 'book');
  t.ok(books.length >= 2);
  for (const b of books) {
    t.equal(b.token_id, m.outcomes[0].token_id, 'priced in the first outcome; the mirror is not stored');
    t.equal(b.units, 'decimal');
    for (let i = 1; i < b.bids.length; i++) t.ok(Number(b.bids[i - 1][0]) > Number(b.bids[i][0]), 'bids best first');
    for (let i = 1; i < b.asks.length; i++) t.ok(Number(b.asks[i - 1][0]) < Number(b.asks[i][0]), 'asks best first');
  }
  const metrics = (await h.read(walletKey(id, 'metrics'))) as Recorded<MetricSample>[];
  t.same([...new Set(metrics.map((x) => x.metric))].sort(), ['chance', 'last_trade', 'price'], 'three separate series');
  t.same([...new Set(metrics.map((x) => x.outcome))].sort(), ['Down', 'Up']);
  t.notOk(h.logText.join('\n').includes(KEY), 'the credential never reaches the log');
  t.notOk(
    h.errors.some((e) => e.message.includes(KEY)),
    'nor any error message',
  );
});

t.test('without the operator key the venue refuses, the recorder reports it and keeps running', async (t) => {
  const h = await harness({ windowScale: 1, now: midWindow() }, FAST);
  t.teardown(() => h.close());
  walletOf(h.sim.mounts).settings.apiKey = 'required-key';
  const r = new WalletRecorder(h.deps);
  await r.start();
  t.ok(await until(() => h.errors.some((e) => e.code === 'http_4xx' && /401/.test(e.message))), '401 reported');
  await r.stop();
  t.equal(r.books, 0);
});

t.test('out-of-order and duplicate versions are dropped: stored versions only increase', async (t) => {
  const h = await harness({ windowScale: 1, now: midWindow() }, FAST);
  t.teardown(() => h.close());
  const sim = walletOf(h.sim.mounts);
  sim.settings.reorder = 0.35;
  sim.settings.duplicate = 0.35;
  const r = new WalletRecorder(h.deps);
  await r.start();
  t.ok(await until(() => r.books >= 20 && r.dropped >= 5), `late and repeated pushes seen (${r.dropped} dropped)`);
  await r.stop();
  let checked = 0;
  for (const id of r.followedMarkets()) {
    const versions = (await booksOf(h, id)).filter((x): x is Recorded<BookSnapshot> => x.type === 'book').map((b) => b.version!);
    for (let i = 1; i < versions.length; i++) t.ok(versions[i] > versions[i - 1], `market ${id}: ${versions[i - 1]} then ${versions[i]}`);
    checked += versions.length;
  }
  t.ok(checked >= 10);
});

t.test('missed heartbeats: stale → reconnect → REST snapshot → gap closed', async (t) => {
  const h = await harness({ windowScale: 1, now: midWindow() }, FAST);
  t.teardown(() => h.close());
  const sim = walletOf(h.sim.mounts);
  sim.settings.heartbeatMs = 300;
  const r = new WalletRecorder(h.deps);
  await r.start();
  t.ok(await until(() => r.books >= 8));
  const restBefore = sim.stats.restBooks;
  const followedBefore = r.followedMarkets();
  const stallTs = Date.now();
  sim.stallAll(5000); // the socket stays open but silent: no books, no heartbeats
  t.ok(
    await until(() => sim.stats.connections >= 2 && r.snapshots >= 2 && r.connectedMarkets().length > 0, 10_000),
    'reconnected and re-snapshotted',
  );
  await sleep(300);
  await r.stop();
  t.ok(sim.stats.restBooks > restBefore, 'REST snapshots after the reconnect');
  const id = followedBefore.find((x) => r.followedMarkets().includes(x))!;
  const recs = await booksOf(h, id);
  const gaps = recs.filter((x): x is Recorded<Gap> => x.type === 'gap' && x.reason === 'stale');
  t.equal(gaps.length, 2, 'opened when the silence was noticed, closed by the fresh book');
  t.equal(gaps[0].end_ts, null);
  t.ok(gaps[0].start_ts >= stallTs - 1000 && gaps[0].start_ts <= stallTs + 500, 'the hole starts where the feed went silent');
  t.ok(gaps[0].recv_ts - gaps[0].start_ts >= 900, 'noticed after stale_after_ms');
  t.equal(gaps[1].start_ts, gaps[0].start_ts);
  const after = recs.find((x) => x.seq > gaps[1].seq);
  t.equal(after?.type, 'book', 'a fresh full book follows the closed gap');
  t.equal(after?.recv_ts, gaps[1].end_ts);
  const between = recs.filter((x) => x.seq > gaps[0].seq && x.seq < gaps[1].seq);
  t.same(between, [], 'nothing recorded as live inside the hole');
});

t.test('dropped connections are disconnected gaps, each closed after the reconnect', async (t) => {
  const h = await harness({ windowScale: 1, now: midWindow(), faults: 'drop=1s' }, FAST);
  t.teardown(() => h.close());
  const sim = walletOf(h.sim.mounts);
  const r = new WalletRecorder(h.deps);
  await r.start();
  t.ok(await until(() => sim.stats.connections >= 3 && r.books >= 10, 15_000));
  await sleep(500);
  await r.stop();
  let closed = 0;
  for (const id of r.followedMarkets()) {
    const all = (await booksOf(h, id)).filter((x): x is Recorded<Gap> => x.type === 'gap');
    t.equal(all.at(-1)?.end_ts, null, 'the stop leaves the books with an open gap');
    const gaps = all.filter((g) => g.reason !== 'not_recording');
    for (const g of gaps) t.equal(g.reason, 'disconnected');
    closed += gaps.filter((g) => g.end_ts !== null).length;
    const open = gaps.filter((g) => g.end_ts === null);
    t.ok(open.length - gaps.filter((g) => g.end_ts !== null).length <= 1, 'every gap but maybe the last is closed');
  }
  t.ok(closed >= 1, `closed gaps (${closed})`);
});

t.test('an unparseable frame invalidates every followed book until a fresh one arrives', async (t) => {
  const h = await harness({ windowScale: 1, now: midWindow(), faults: 'garbage=0.1' }, FAST);
  t.teardown(() => h.close());
  const r = new WalletRecorder(h.deps);
  await r.start();
  t.ok(await until(() => r.books >= 15 && h.errors.filter((e) => e.code === 'malformed').length >= 2, 15_000));
  await r.stop();
  let closed = 0;
  for (const id of r.followedMarkets()) {
    const recs = await booksOf(h, id);
    const gaps = recs.filter((x): x is Recorded<Gap> => x.type === 'gap' && x.reason === 'upstream_error');
    for (const g of gaps.filter((x) => x.end_ts !== null)) {
      closed++;
      const next = recs.find((x) => x.seq > g.seq);
      t.equal(next?.type, 'book', 'a fresh book follows each closed gap');
      t.equal(next?.recv_ts, g.end_ts);
    }
  }
  t.ok(closed >= 1, `closed upstream_error gaps: ${closed}`);
});

import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  normalizeFrame,
  normalizeRestBook,
  normalizeMetrics,
  normalizeWalletMarket,
  WALLET_CATALOG,
  frameKind,
  frameMarketId,
  listPage,
  topicMarketId,
} from '../../../src/recorders/wallet/normalize.js';
import { catalogChange } from '../../../src/recorders/catalog-diff.js';
import { VersionGate } from '../../../src/recorders/wallet/order.js';
import type { BookSnapshot } from '../../../src/schema/observation.js';
import type { Outcome } from '../../../src/schema/market.js';

const FIX = fileURLToPath(new URL('../../../../test/fixtures/wallet/', import.meta.url));
const load = (f: string): any => JSON.parse(readFileSync(FIX + f, 'utf8'));
const frames = readFileSync(FIX + 'ws-frames.jsonl', 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l));
const UP = '10928374650192837465019283746501928374650192837465019283746501928374650192837';
const outcomes: Outcome[] = [
  { label: 'Up', token_id: UP },
  { label: 'Down', token_id: '5823' },
];
const outcomesOf = (id: string): readonly Outcome[] | undefined => (id === '4821' ? outcomes : undefined);

t.test('replies and heartbeats map to nothing; book pushes map to one first-outcome book', async (t) => {
  const out = frames.map((f, i) => normalizeFrame(f, 1000 + i, outcomesOf));
  t.same(
    out.map((o) => o.length),
    [0, 0, 1, 1, 1, 1, 0, 1],
  );
  t.same(frames.map(frameKind), ['reply', 'heartbeat', 'book', 'book', 'book', 'book', 'reply', 'book']);
  const b = out[2][0] as BookSnapshot;
  t.equal(b.type, 'book');
  t.equal(b.token_id, UP, 'priced in the first outcome (indexSet 1), whatever order the catalogue lists them');
  t.equal(b.units, 'decimal');
  t.equal(b.version, 101);
  t.equal(b.source_ts, 1785067205120);
  t.equal(b.recv_ts, 1002);
  t.same(b.asks, [
    ['0.53', '120.5'],
    ['0.54', '300'],
    ['0.56', '1250.25'],
  ]);
  t.same(b.bids, [
    ['0.52', '80'],
    ['0.51', '410.75'],
    ['0.49', '2000'],
  ]);
  t.equal(frameMarketId(frames[2]), '4821');
});

t.test('out-of-order and duplicate versions are dropped by the gate', async (t) => {
  const gate = new VersionGate();
  const kept = frames
    .flatMap((f, i) => normalizeFrame(f, i, outcomesOf))
    .filter((b) => gate.accept('4821', { version: (b as BookSnapshot).version ?? null, ts: b.source_ts }));
  t.same(
    kept.map((b) => (b as BookSnapshot).version),
    [101, 103, 104],
    'version 102 arrived late and 103 twice',
  );
  const rest = normalizeRestBook(load('orderbook-rest.json'), 9, outcomesOf);
  t.ok(gate.accept('4821', { version: rest[0].version!, ts: rest[0].source_ts }), 'a newer REST snapshot passes');
  t.notOk(gate.accept('4821', { version: 104, ts: null }));
  const g2 = new VersionGate();
  t.ok(g2.accept('m', { version: null, ts: 5 }));
  t.notOk(g2.accept('m', { version: null, ts: 5 }), 'falls back to the update time without versions');
  t.ok(g2.accept('m', { version: 1, ts: null }), 'keeps a book it cannot compare');
});

t.test('books of unknown markets, mismatched topics and bad ladders are counted and skipped', async (t) => {
  const bad: string[] = [];
  const onBad = (w: string): void => void bad.push(w);
  const push = (data: unknown, topic = 'predictOrderbook/4821') => normalizeFrame({ type: 'M', topic, data }, 1, outcomesOf, onBad);
  t.same(push({ marketId: 999, asks: [], bids: [] }, 'predictOrderbook/999'), []);
  t.same(push({ marketId: 4822, asks: [], bids: [] }), []);
  t.same(push({ marketId: 4821, asks: [[1.5, 1]], bids: [] }), []);
  t.same(push({ marketId: 4821, asks: 'x', bids: [] }), []);
  t.same(push({ marketId: 4821, asks: [[0.5, -1]], bids: [] }), []);
  t.same(push(null), []);
  t.same(normalizeFrame({ type: 'M', topic: 'somethingElse', data: 1 }, 1, outcomesOf, onBad), []);
  t.same(normalizeFrame('garbage', 1, outcomesOf, onBad), []);
  t.same(normalizeRestBook({ success: false, error: { code: 'x' } }, 1, outcomesOf, onBad), []);
  t.equal(bad.length, 9);
});

t.test('metric samples are three separate series per outcome', async (t) => {
  const s = normalizeMetrics(load('stats.json'), 77, outcomesOf);
  t.equal(s.length, 6);
  t.same(
    s.filter((x) => x.outcome === 'Up').map((x) => [x.metric, x.value]),
    [
      ['chance', 0.515],
      ['price', 0.52],
      ['last_trade', 0.51],
    ],
  );
  t.equal(s.find((x) => x.metric === 'last_trade')!.source_ts, 1785067201234, 'the last trade keeps its execution time');
  t.equal(s.find((x) => x.metric === 'chance')!.source_ts, 1785067207500);
  t.equal(s[0].token_id, UP);
  t.equal(s[3].token_id, '5823');
  t.same(normalizeMetrics({ success: true, data: {} }, 1, outcomesOf), []);
});

t.test('a topic joined to its market keeps every identifier, first outcome first', async (t) => {
  const m = normalizeWalletMarket(load('topic.json'), load('market.json'))!;
  t.equal(m.family, 'wallet-prediction');
  t.equal(m.topic_id, 't-btc-15m-1785067200');
  t.equal(m.market_id, '4821');
  t.equal(m.condition_id, '0x5f1c2a4e8b7d9c03a6e4f2b1d8c7a9e0f3b2c1d4e5f6a7b8c9d0e1f2a3b4c5d6');
  t.same(
    m.outcomes.map((o) => o.label),
    ['Up', 'Down'],
  );
  t.equal(m.outcomes[0].token_id, UP);
  t.same([m.coin, m.window, m.status, m.resolution, m.winning_outcome], ['btc', '15m', 'open', null, null]);
  t.same([m.volume, m.liquidity, m.participants], [15234.5, 5678.25, 42]);
  t.same(m.chain, { chain_id: 56, exchange_contract: '0x8BC070BEdAB741406F4B1Eb65A72bee27894B689' });
  t.equal(m.start_time, Date.parse('2026-07-26T12:00:00.000Z'));
  t.equal(m.start_price, 117843.21);
  t.equal(m.end_price, null);
  t.equal((m.native as any).market.newField, 'kept in native', 'unknown fields survive in native');
  t.equal(topicMarketId(load('topic.json')), '4821');
});

t.test('a tie resolves as a push with no winner; a win names its outcome', async (t) => {
  const topic = { ...load('topic.json'), marketId: 4822, slug: 'eth-updown-5m-1785067200', asset: undefined, interval: undefined };
  const push = normalizeWalletMarket(topic, load('market-push.json'))!;
  t.same([push.status, push.resolution, push.winning_outcome, push.coin, push.window], ['resolved', 'push', null, 'eth', '5m']);
  t.equal(push.resolved_time, Date.parse('2026-07-26T12:20:04.000Z'));
  const won = normalizeWalletMarket(topic, { ...load('market-push.json'), resolution: { status: 'RESOLVED', winningIndexSet: 2 } })!;
  t.same([won.resolution, won.winning_outcome], ['resolved', 'Down']);
  const cancelled = normalizeWalletMarket(topic, { ...load('market-push.json'), status: 'CANCELLED', resolution: null })!;
  t.equal(cancelled.status, 'cancelled');
});

t.test('catalogue changes: listed, then status, resolution and volume changes; nothing when unchanged', async (t) => {
  const a = normalizeWalletMarket(load('topic.json'), load('market.json'))!;
  t.equal(catalogChange(WALLET_CATALOG, null, a, 1)!.event, 'listed');
  const touched = normalizeWalletMarket(load('topic.json'), { ...load('market.json'), updatedAt: '2026-07-26T12:01:00.000Z' })!;
  t.equal(catalogChange(WALLET_CATALOG, a, touched, 2), null, 'an updated time alone is not a change');
  const vol = normalizeWalletMarket(load('topic.json'), { ...load('market.json'), volumeUsd: 16000, participants: 43 })!;
  t.same(catalogChange(WALLET_CATALOG, a, vol, 3)!.changed, ['volume', 'participants']);
  t.equal(catalogChange(WALLET_CATALOG, a, vol, 3)!.event, 'updated');
  const closed = normalizeWalletMarket(load('topic.json'), { ...load('market.json'), status: 'CLOSED' })!;
  t.equal(catalogChange(WALLET_CATALOG, a, closed, 4)!.event, 'status');
  const res = normalizeWalletMarket(load('topic.json'), {
    ...load('market.json'),
    status: 'RESOLVED',
    resolution: { status: 'RESOLVED', winningIndexSet: 1 },
  })!;
  t.equal(catalogChange(WALLET_CATALOG, closed, res, 5)!.event, 'resolved');
});

t.test('malformed catalogue entries are counted and skipped', async (t) => {
  let n = 0;
  const onBad = (): void => void n++;
  t.equal(normalizeWalletMarket(null, {}, onBad), null);
  t.equal(normalizeWalletMarket(load('topic.json'), { ...load('market.json'), conditionId: undefined }, onBad), null);
  t.equal(normalizeWalletMarket(load('topic.json'), { ...load('market.json'), outcomes: [{ name: 'Up' }] }, onBad), null);
  t.equal(normalizeWalletMarket({ ...load('topic.json'), status: 'ALSO' }, { ...load('market.json'), status: 'WEIRD' }, onBad), null);
  t.equal(
    normalizeWalletMarket(load('topic.json'), { ...load('market.json'), status: 'WEIRD' }, onBad)!.status,
    'open',
    "the topic's status is the fallback",
  );
  t.equal(n, 4);
  t.same(listPage({ success: true, data: [1, 2], cursor: 'abc' }), { items: [1, 2], cursor: 'abc' });
  t.equal(listPage({ success: false }), null);
});

t.test('prices and sizes sent as JSON numbers are stored as their canonical text; text stays byte for byte', async (t) => {
  // The emulator's sizes, Math.round(r * 200000) / 100 + 1, carry a double's binary noise.
  const noisy = {
    marketId: '4821',
    updateTimestampMs: 1785067205120,
    version: 7,
    bids: [
      [0.52, 6351 / 100 + 1],
      [0.51, 102318 / 100 + 1],
      [1e-9, 0.1e1],
      [0.5, -0],
    ],
    asks: [
      [0.53, 51116 / 100 + 1],
      ['0.540', '64.50999999999999'],
      [0.55, 1e21],
    ],
  };
  t.equal(String(noisy.bids[0][1]), '64.50999999999999', "JavaScript's own text of the double keeps the noise");
  const [b] = normalizeFrame({ type: 'M', topic: 'predictOrderbook/4821', data: noisy }, 1, outcomesOf) as BookSnapshot[];
  t.same(b.bids, [
    ['0.52', '64.51'],
    ['0.51', '1024.18'],
    ['0.000000001', '1'],
    ['0.5', '0'],
  ]);
  t.same(
    b.asks,
    [
      ['0.53', '512.16'],
      ['0.540', '64.50999999999999'],
      ['0.55', '1000000000000000000000'],
    ],
    'text is kept as sent; 1e21 without an exponent',
  );
});

// The clob mapper on real captured payloads (test/fixtures/clob, see SOURCE.txt): each rule, and
// books rebuilt from the real 51-message burst against an independent straightforward replay.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { newStats, normalizeClob, normalizeClobText, idsInDamagedFrame } from '../../../src/recorders/clob/normalize.js';
import { MarketBooks } from '../../../src/book/book-state.js';
import { RecorderBooks } from '../../../src/recorders/book.js';
import type { BookDelta, BookSnapshot } from '../../../src/schema/observation.js';

const fx = (name: string): unknown =>
  JSON.parse(readFileSync(fileURLToPath(new URL(`../../../../test/fixtures/clob/${name}`, import.meta.url)), 'utf8'));
const burst = fx('ws_market_price_change_crossing_burst.json') as Array<Record<string, unknown>>;
const RECV = 1_800_000_000_000;

t.test('a real book event becomes one book, both sides best first, decimal text kept', async (t) => {
  const raw = fx('book.json') as { bids: { price: string; size: string }[]; asks: unknown[]; asset_id: string; hash: string };
  const [b] = normalizeClob(raw, RECV) as BookSnapshot[];
  t.equal(b.type, 'book');
  t.equal(b.token_id, raw.asset_id);
  t.equal(b.units, 'decimal');
  t.equal(b.source_ts, 1728799418260);
  t.equal(b.recv_ts, RECV);
  t.equal(b.hash, raw.hash);
  t.equal(b.bids.length, 76);
  t.equal(b.asks.length, 86);
  for (let i = 1; i < b.bids.length; i++) t.ok(Number(b.bids[i - 1][0]) > Number(b.bids[i][0]), 'bids descend');
  for (let i = 1; i < b.asks.length; i++) t.ok(Number(b.asks[i - 1][0]) < Number(b.asks[i][0]), 'asks ascend');
  // Upstream sends worst-to-best: its last bid is our first.
  const last = raw.bids[raw.bids.length - 1];
  t.same(b.bids[0], [last.price, last.size]);
});

t.test('tick_size_change and last_trade_price map to tick_size and trade', async (t) => {
  const [tick] = normalizeClob(fx('tick_size_change.json'), RECV);
  t.match(tick, { type: 'tick_size', old_tick_size: '0.01', new_tick_size: '0.001', source_ts: 1739068041853 });
  const [trade] = normalizeClob(fx('last_trade_price.json'), RECV);
  t.match(trade, { type: 'trade', price: '0.491', size: '85.36', side: 'sell', fee_rate_bps: '0', source_ts: 1724564136087 });
});

t.test('heartbeats, acks and custom-feature extras map to nothing; unknown types are counted', async (t) => {
  const s = newStats();
  t.same(normalizeClobText('PONG', RECV, s), []);
  t.same(normalizeClobText('', RECV, s), []);
  t.same(normalizeClob({}, RECV, s), [], 'an ack object without event_type');
  t.same(normalizeClob(fx('ws_market_best_bid_ask_msg.json'), RECV, s), []);
  t.same(normalizeClob({ event_type: 'brand_new_thing', market: '0x1' }, RECV, s), []);
  t.equal(s.unknown, 1);
  t.equal(s.ok, 0);
});

t.test('the current price_change form gives one delta per token with the venue top of book', async (t) => {
  const out = normalizeClob(burst[1], RECV) as BookDelta[];
  t.equal(out.length, 2);
  t.match(out[0], {
    type: 'book_delta',
    token_id: String(burst[0].asset_id),
    changes: [{ side: 'bid', price: '0.301', size: '1000' }],
    best_bid: '0.301',
    best_ask: '0.397',
  });
  t.match(out[1], { changes: [{ side: 'ask', price: '0.699', size: '1000' }], best_bid: '0.603', best_ask: '0.699' });
  t.equal(out[0].source_ts, Number(burst[1].timestamp));
});

t.test('the legacy price_change form names the token once; size "0" removes a level; ".48" is a price', async (t) => {
  const legacy = {
    event_type: 'price_change',
    asset_id: 'T',
    market: '0xabc',
    hash: 'h',
    timestamp: '1700000000000',
    changes: [
      { price: '.48', side: 'BUY', size: '10' },
      { price: '0.52', side: 'SELL', size: '0' },
    ],
  };
  const [d] = normalizeClob(legacy, RECV) as BookDelta[];
  t.same(d.changes, [
    { side: 'bid', price: '.48', size: '10' },
    { side: 'ask', price: '0.52', size: '0' },
  ]);
  const m = new MarketBooks();
  m.apply({
    type: 'book',
    recv_ts: 1,
    source_ts: 1,
    token_id: 'T',
    units: 'decimal',
    bids: [],
    asks: [
      ['0.52', '3'],
      ['0.6', '1'],
    ],
  });
  m.apply(d);
  t.same(m.view('T'), { token_id: 'T', bids: [['.48', '10']], asks: [['0.6', '1']] });
});

t.test('batched array frames map every event in order', async (t) => {
  const out = normalizeClobText(JSON.stringify([burst[0], burst[1]]), RECV)!;
  t.same(
    out.map((o) => o.type),
    ['book', 'book_delta', 'book_delta'],
  );
});

t.test('malformed events are skipped and counted; unparseable frames return null', async (t) => {
  const s = newStats();
  t.same(normalizeClob({ event_type: 'book', bids: [] }, RECV, s), [], 'no asset_id');
  t.same(normalizeClob({ event_type: 'book', asset_id: 'A', bids: [{ price: 'abc', size: '1' }] }, RECV, s), []);
  t.same(
    normalizeClob(
      { event_type: 'price_change', market: '0x', price_changes: [{ asset_id: 'A', price: '1.5', size: '1', side: 'BUY' }] },
      RECV,
      s,
    ),
    [],
    'price above 1',
  );
  t.same(
    normalizeClob(
      { event_type: 'price_change', market: '0x', price_changes: [{ asset_id: 'A', price: '0.5', size: '1', side: 'UP' }] },
      RECV,
      s,
    ),
    [],
    'bad side',
  );
  t.same(normalizeClob(42, RECV, s), []);
  t.equal(s.malformed, 5);
  const text = JSON.stringify(burst[1]);
  t.equal(normalizeClobText(text.slice(0, 150), RECV), null);
  t.same(idsInDamagedFrame(text.slice(0, 150)).markets, [burst[1].market]);
});

/** A straightforward independent replay: maps of price → size, sorted at the end. */
function independentReplay(msgs: Array<Record<string, unknown>>): Map<string, { bids: Map<number, string>; asks: Map<number, string> }> {
  const books = new Map<string, { bids: Map<number, string>; asks: Map<number, string> }>();
  for (const m of msgs) {
    if (m.event_type === 'book') {
      const b = { bids: new Map<number, string>(), asks: new Map<number, string>() };
      for (const l of m.bids as { price: string; size: string }[]) b.bids.set(Number(l.price), l.size);
      for (const l of m.asks as { price: string; size: string }[]) b.asks.set(Number(l.price), l.size);
      books.set(m.asset_id as string, b);
    } else if (m.event_type === 'price_change') {
      for (const c of m.price_changes as { asset_id: string; price: string; size: string; side: string }[]) {
        const b = books.get(c.asset_id);
        if (!b) continue; // no snapshot yet: never applied
        const side = c.side === 'BUY' ? b.bids : b.asks;
        if (Number(c.size) === 0) side.delete(Number(c.price));
        else side.set(Number(c.price), c.size);
      }
    }
  }
  return books;
}

t.test('books rebuilt from the real burst equal an independent replay level for level, at every step', async (t) => {
  const books = new MarketBooks();
  for (let i = 0; i < burst.length; i++) {
    for (const o of normalizeClob(burst[i], RECV + i)) books.apply(o);
    const ref = independentReplay(burst.slice(0, i + 1));
    for (const [token, b] of ref) {
      const v = books.view(token)!;
      const bids = [...b.bids].sort((x, y) => y[0] - x[0]).map(([p, s]) => [p, Number(s)]);
      const asks = [...b.asks].sort((x, y) => x[0] - y[0]).map(([p, s]) => [p, Number(s)]);
      const got = (l: readonly (readonly [string, string])[]): number[][] => l.map(([p, s]) => [Number(p), Number(s)]);
      if (JSON.stringify(got(v.bids)) !== JSON.stringify(bids) || JSON.stringify(got(v.asks)) !== JSON.stringify(asks)) {
        t.fail(`step ${i} token ${token.slice(0, 6)} differs`);
        return;
      }
    }
  }
  const token = String(burst[0].asset_id);
  t.equal(books.validTokens().length, 1, 'the complementary token never had a snapshot: its deltas were not applied');
  const final = normalizeClob(burst[burst.length - 1], RECV)[0] as BookSnapshot;
  const v = books.view(token)!;
  t.same(
    v.bids.map((l) => Number(l[0])),
    final.bids.map((l) => Number(l[0])),
    'the replay reproduces the final real book',
  );
  t.same(
    v.asks.map((l) => Number(l[1])),
    final.asks.map((l) => Number(l[1])),
  );
});

t.test('the recorder book rules accept the whole real burst (crossing frames are not a false loss)', async (t) => {
  const token = String(burst[0].asset_id);
  const rb = new RecorderBooks([token], { everyDeltas: 10, everyMs: 60_000 });
  const results: string[] = [];
  let diverged: number | null = null;
  for (let i = 0; i < burst.length; i++) {
    for (const o of normalizeClob(burst[i], RECV + i)) {
      if (o.type === 'book') diverged = rb.onBook(o).divergedSince;
      else if (o.type === 'book_delta') results.push(rb.onDelta(o));
    }
  }
  t.equal(results.filter((r) => r === 'mismatch').length, 0);
  t.equal(results.filter((r) => r === 'dropped').length, 49, 'deltas of the token without a snapshot are dropped');
  t.equal(diverged, null, 'the final snapshot agrees with the rebuilt book');
  t.ok(rb.checkpointDue(RECV + 100));
  const cp = rb.checkpoint(RECV + 100)!;
  t.equal(cp.books.length, 1);
  t.equal(rb.deltasSinceCheckpoint, 0);
});

t.test('a lost top-of-book change is detected by the venue best bid/ask on the next change', async (t) => {
  const token = String(burst[0].asset_id);
  const rb = new RecorderBooks([token], { everyDeltas: 1000, everyMs: 60_000 });
  rb.onBook(normalizeClob(burst[0], RECV)[0] as BookSnapshot);
  const delta = (price: string, size: string, bestBid: string): BookDelta => ({
    type: 'book_delta',
    recv_ts: RECV,
    source_ts: null,
    token_id: token,
    changes: [{ side: 'bid', price, size }],
    best_bid: bestBid,
    best_ask: '0.397',
  });
  t.equal(rb.onDelta(delta('0.29', '2100', '0.3')), 'applied', 'a deep change with a matching top of book');
  // The venue's change "bid 0.305" is lost; its next change reports 0.305 as best bid.
  t.equal(rb.onDelta(delta('0.25', '4000', '0.305')), 'mismatch');
  t.equal(rb.verifiedSince(token, 0), RECV, 'the book was last known right at the previous change');
});

// `GET /v3/replay` on a real server over recorded logs: one receive-ordered NDJSON stream across
// markets (ties: market, then seq), the same bytes on every run, gaps inline, `book` lines equal to
// the REST snapshots, book changes that rebuild those books, interval snapshots that follow the
// `interval` rules, plans and the error envelope.

import t from 'tap';
import { MarketBooks } from '../../src/book/book-state.js';
import { tmpDataDir, walletMarket, yesnoMarket } from './helpers.js';
import { coinMarket2, get, iso, seedReplay, startReplayServer, T0, type Answer } from './replay-helpers.js';

const A = '540817';
const B = coinMarket2.market_id;
const RANGE = `start_time=${iso(T0)}&end_time=${iso(T0 + 120_000)}`;

/** Every page of a REST list route, following next_cursor. */
async function pages(base: string, path: string, key: string): Promise<Record<string, any>[]> {
  const out: Record<string, any>[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const r = await get(base, cursor ? `${path}&cursor=${encodeURIComponent(cursor)}` : path, key);
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`);
    out.push(...r.lines[0].data);
    cursor = r.lines[0].next_cursor;
    if (!cursor) return out;
  }
  throw new Error('too many pages');
}

const body = (a: Answer): Record<string, any>[] => {
  if (a.status !== 200) throw new Error(`${a.status} ${a.text}`);
  const last = a.lines[a.lines.length - 1];
  if (last.type !== 'end') throw new Error(`last line is ${JSON.stringify(last)}`);
  return a.lines.slice(0, -1);
};

t.test('replay', async (t) => {
  const dir = tmpDataDir(t);
  await seedReplay(dir);
  const s = await startReplayServer(t, dir);
  const paid = s.keys.paid;

  t.test('two markets come interleaved in receive order, ties by market then seq; every run gives the same bytes', async (t) => {
    const path = `/v3/replay?family=coin&market_id=${A},${B}&${RANGE}&types=book,trade,gap`;
    const first = await get(s.base, path, paid);
    t.equal(first.status, 200);
    t.match(first.type, /^application\/x-ndjson/);
    const lines = body(first);
    t.ok(lines.length > 500, `${lines.length} lines`);
    t.same(new Set(lines.map((l) => l.market_id)), new Set([A, B]), 'both markets');
    let ties = 0;
    for (let i = 1; i < lines.length; i++) {
      const p = lines[i - 1];
      const c = lines[i];
      const dt = Date.parse(c.receive_time) - Date.parse(p.receive_time);
      if (dt === 0 && p.market_id !== c.market_id) ties++;
      const ok = dt > 0 || (dt === 0 && (p.market_id < c.market_id || (p.market_id === c.market_id && p.seq <= c.seq)));
      if (!ok) t.fail(`line ${i} out of order: ${JSON.stringify(p).slice(0, 120)} then ${JSON.stringify(c).slice(0, 120)}`);
    }
    t.ok(ties > 20, `${ties} receive-time ties between the markets, each ordered by market id`);
    for (const l of lines) t.same(Object.keys(l), ['type', 'family', 'market_id', 'seq', 'receive_time', 'source_time', 'data']);
    t.ok(
      first.text
        .trim()
        .split('\n')
        .every((l) => JSON.stringify(JSON.parse(l)) === l),
      'every line is canonical JSON (as JSON.stringify writes it)',
    );
    const second = await get(s.base, path, paid);
    t.equal(second.text, first.text, 'byte-identical second run');
  });

  t.test('book lines equal the REST snapshots with the book, seq for seq', async (t) => {
    const lines = body(await get(s.base, `/v3/replay?family=coin&market_id=${A},${B}&${RANGE}&types=book&depth=3`, paid));
    for (const m of [A, B]) {
      const rest = await pages(s.base, `/v3/btc/markets/${m}/snapshots?include_orderbook=true&depth=3&limit=1000&${RANGE}`, s.keys.free);
      const mine = lines.filter((l) => l.market_id === m);
      t.ok(rest.length > 100);
      t.same(
        mine.map((l) => l.data),
        rest,
        `market ${m}: ${rest.length} snapshots`,
      );
      t.same(
        mine.map((l) => l.seq),
        rest.map((r) => r.seq),
      );
    }
  });

  t.test('gaps come inline where they happen, and no book is served inside one', async (t) => {
    const lines = body(await get(s.base, `/v3/replay?family=coin&market_id=${A},${B}&${RANGE}&types=book,gap`, paid));
    const gaps = lines.filter((l) => l.type === 'gap');
    t.same(
      gaps.map((g) => [g.market_id, g.data.reason, g.data.end === null]),
      [
        [A, 'disconnected', true],
        [A, 'disconnected', false],
      ],
    );
    const open = Date.parse(gaps[0].data.start);
    const close = Date.parse(gaps[1].receive_time);
    const inside = lines.filter(
      (l) => l.type === 'book' && l.market_id === A && Date.parse(l.receive_time) >= open && Date.parse(l.receive_time) < close,
    );
    t.same(inside, [], 'no book of the market between the open gap and the fresh book');
    t.ok(
      lines.some((l) => l.type === 'book' && l.market_id === B && Date.parse(l.receive_time) > open && Date.parse(l.receive_time) < close),
      'the other market goes on',
    );
  });

  t.test('book_change lines rebuild every book line from the opening state', async (t) => {
    const start = T0 + 7_777; // mid-stream: the opening line carries the state
    const lines = body(
      await get(
        s.base,
        `/v3/replay?family=coin&market_id=${A}&start_time=${start}&end_time=${T0 + 100_000}&types=book_change,book,gap`,
        paid,
      ),
    );
    t.equal(lines[0].type, 'book_change');
    t.equal(lines[0].receive_time, iso(start), 'the opening state is stamped with start_time');
    t.equal(lines[0].data.is_snapshot, true);
    const books = new MarketBooks();
    let checked = 0;
    for (const l of lines) {
      if (l.type === 'gap')
        books.apply({
          type: 'gap',
          reason: l.data.reason,
          start_ts: 0,
          end_ts: l.data.end === null ? null : 1,
          recv_ts: 0,
          source_ts: null,
        });
      if (l.type === 'book_change') {
        const byToken = new Map<string, { bid: [string, string][]; ask: [string, string][] }>();
        for (const c of l.data.changes) {
          if (l.data.is_snapshot) {
            const b = byToken.get(c.token_id) ?? { bid: [], ask: [] };
            if (c.price !== null) b[c.side as 'bid' | 'ask'].push([String(c.price), String(c.size)]);
            byToken.set(c.token_id, b);
          }
        }
        if (l.data.is_snapshot)
          for (const [tok, b] of byToken)
            books.apply({ type: 'book', token_id: tok, units: 'decimal', bids: b.bid, asks: b.ask, recv_ts: 0, source_ts: null });
        else
          books.apply({
            type: 'book_delta',
            token_id: l.data.changes[0].token_id,
            changes: l.data.changes.map((c: any) => ({ side: c.side, price: String(c.price), size: String(c.size) })),
            recv_ts: 0,
            source_ts: null,
          });
      }
      if (l.type === 'book') {
        for (const b of l.data.books) {
          const v = books.view(b.token_id);
          t.same(
            v && { bids: v.bids.map(([p, q]) => [Number(p), Number(q)]), asks: v.asks.map(([p, q]) => [Number(p), Number(q)]) },
            { bids: b.bids, asks: b.asks },
            `seq ${l.seq} ${b.outcome}`,
            { diagnostic: false },
          );
          checked++;
        }
      }
    }
    t.ok(checked > 300, `${checked} books rebuilt from changes alone`);
  });

  t.test('book_snapshot_<depth>_<interval> lines are the REST interval snapshots, none inside a gap', async (t) => {
    const lines = body(
      await get(s.base, `/v3/replay?family=coin&market_id=${A},${B}&${RANGE}&types=book_snapshot_2_1s,book_snapshot_25_5m,gap`, paid),
    );
    for (const m of [A, B]) {
      const rest = await pages(
        s.base,
        `/v3/btc/markets/${m}/snapshots?include_orderbook=true&interval=1s&depth=2&limit=1000&${RANGE}`,
        s.keys.free,
      );
      const mine = lines.filter((l) => l.market_id === m && l.type === 'book_snapshot_2_1s');
      t.ok(rest.length > 50);
      t.same(
        mine.map((l) => l.data),
        rest,
        `market ${m}: ${rest.length} one-second buckets`,
      );
      for (const l of mine)
        t.equal(l.receive_time, iso(Date.parse(l.data.bucket_start) + 1000), 'stamped with the bucket end', { diagnostic: false });
    }
    t.same(
      lines.filter((l) => l.type === 'book_snapshot_25_5m'),
      [],
      'no five-minute bucket fits in two minutes',
    );
    const gap = lines.filter((l) => l.type === 'gap' && l.market_id === A);
    const [g0, g1] = [Date.parse(gap[0].data.start), Date.parse(gap[1].receive_time)];
    const bad = lines.filter(
      (l) =>
        l.type === 'book_snapshot_2_1s' && l.market_id === A && Date.parse(l.receive_time) > g0 && Date.parse(l.data.bucket_start) < g1,
    );
    t.same(bad, [], 'no bucket that touches the gap');
    t.ok(
      lines.some((l) => l.type === 'book_snapshot_2_1s' && l.market_id === A && Date.parse(l.data.bucket_start) >= g1),
      'buckets resume after the gap',
    );
  });

  t.test('a coin selector takes every market of the coin with data in the range', async (t) => {
    const a = await get(s.base, `/v3/replay?family=coin&coin=btc&window=15m&${RANGE}&types=trade`, s.keys.free);
    t.same(new Set(body(a).map((l) => l.market_id)), new Set([A, B]));
    t.ok(body(a).every((l) => l.type === 'trade' && typeof l.data.price === 'number'));
    const later = await get(s.base, `/v3/replay?family=coin&coin=btc&start_time=${T0 + 3_600_000}&end_time=${T0 + 7_200_000}`, s.keys.free);
    t.same(body(later), [], 'no market recorded then: only the end line');
  });

  t.test('yes/no tickers: book lines are the REST snapshots in native text', async (t) => {
    const tk = yesnoMarket.ticker;
    const lines = body(await get(s.base, `/v3/replay?family=yesno-exchange&ticker=${tk}&${RANGE}&types=book,book_change`, s.keys.free));
    const rest = await pages(s.base, `/v3/yesno-exchange/${tk}/snapshots?include_orderbook=true&limit=1000&${RANGE}`, s.keys.free);
    t.same(
      lines.filter((l) => l.type === 'book').map((l) => l.data),
      rest,
    );
    t.ok(lines.every((l) => l.ticker === tk && !('market_id' in l)));
    const ch = lines.find((l) => l.type === 'book_change')!;
    t.match(ch.data.changes[0], { side: 'yes', price: /^0\.\d{4}$/, size: /^\d+\.00$/ });
  });

  t.test('wallet-prediction needs the paid plan; metric lines are the timeseries samples', async (t) => {
    const path = `/v3/replay?family=wallet-prediction&market_id=${walletMarket.market_id}&${RANGE}&types=book,metric`;
    const free = await get(s.base, path, s.keys.free);
    t.equal(free.status, 403);
    t.match(free.lines[0], { error: { status: 403, code: 'plan_required', request_id: String } });
    const lines = body(await get(s.base, path, paid));
    const metrics = lines.filter((l) => l.type === 'metric' && l.data.metric === 'chance' && l.data.outcome === 'Up');
    const rest = await pages(s.base, `/v3/wallet-prediction/${walletMarket.market_id}/timeseries?metric=chance&limit=1000&${RANGE}`, paid);
    t.same(
      metrics.map((l) => ({ time: l.receive_time, value: l.data.value, seq: l.seq })),
      rest.map((r) => ({ time: r.time, value: r.value, seq: r.seq })),
    );
    const books = await pages(s.base, `/v3/wallet-prediction/${walletMarket.market_id}/snapshots?limit=1000&${RANGE}`, paid);
    t.same(
      lines.filter((l) => l.type === 'book').map((l) => l.data),
      books,
    );
  });

  t.test('bad requests get the envelope before any line', async (t) => {
    const cases: [string, number, string, RegExp][] = [
      [`/v3/replay?family=coin&market_id=${A}`, 400, 'invalid_parameter', /start_time/],
      [`/v3/replay?family=coin&market_id=${A}&start_time=yesterday`, 400, 'invalid_parameter', /start_time/],
      [`/v3/replay?family=coin&market_id=${A}&start_time=${T0 + 10}&end_time=${T0}`, 400, 'invalid_parameter', /start_time/],
      [`/v3/replay?family=coin&market_id=${A}&${RANGE}&types=book,candles`, 400, 'invalid_parameter', /candles/],
      [`/v3/replay?family=coin&market_id=${A}&${RANGE}&types=book_snapshot_25_7s`, 400, 'invalid_parameter', /interval/],
      [`/v3/replay?family=coin&market_id=${A}&${RANGE}&types=metric`, 400, 'invalid_parameter', /wallet-prediction/],
      [`/v3/replay?family=coin&market_id=${A}&coin=btc&${RANGE}`, 400, 'invalid_parameter', /alone/],
      [`/v3/replay?family=coin&${RANGE}`, 400, 'invalid_parameter', /market_id/],
      [`/v3/replay?family=coins&market_id=${A}&${RANGE}`, 400, 'invalid_parameter', /family/],
      [`/v3/replay?family=coin&market_id=${A}&${RANGE}&limit=5`, 400, 'invalid_parameter', /limit/],
      [`/v3/replay?family=coin&market_id=${A}&${RANGE}&after=not-a-token`, 400, 'invalid_cursor', /after/],
      [`/v3/replay?family=coin&market_id=${A},nope&${RANGE}`, 404, 'not_found', /nope/],
      [`/v3/replay?family=coin&coin=doge&${RANGE}`, 404, 'not_found', /doge/],
      [`/v3/replay?family=yesno-exchange&ticker=NOPE-1&${RANGE}`, 404, 'not_found', /NOPE-1/],
    ];
    for (const [path, status, code, msg] of cases) {
      const r = await get(s.base, path, paid);
      t.equal(r.status, status, path);
      t.match(r.type, /^application\/json/);
      t.match(r.lines[0], { error: { status, code, message: msg, request_id: String } }, path);
    }
    const noKey = await fetch(`${s.base}/v3/replay?family=coin&market_id=${A}&${RANGE}`);
    t.equal(noKey.status, 401);
  });

  t.test('the route is in the OpenAPI document', async (t) => {
    const doc = (await (await fetch(`${s.base}/docs/json`)).json()) as { paths: Record<string, any> };
    const op = doc.paths['/v3/replay']?.get;
    t.ok(op, 'documented');
    t.match(op.description, /x-ndjson/);
    t.ok(op.parameters.some((p: any) => p.name === 'after') && op.parameters.some((p: any) => p.name === 'types'));
  });
});

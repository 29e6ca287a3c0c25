// The page's pure helpers, loaded from public/ exactly as the browser loads them: every family's
// snapshot becomes one numeric book (yes/no NO bids turn into YES asks, cents into probabilities),
// and coverage answers become recorded spans and gaps, open gaps running to now.

import t from 'tap';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO } from './helpers.js';

type Book = { bids: [number, number][]; asks: [number, number][] } | null;
const depth = (await import(pathToFileURL(join(REPO, 'public', 'depth.js')).href)) as { bookOf(family: string, snap: unknown): Book };
const timeline = (await import(pathToFileURL(join(REPO, 'public', 'timeline.js')).href)) as {
  spansOf(body: unknown, now: number): { recorded: [number, number][]; gaps: { start: number; end: number; reason: string; open: boolean }[] };
  viewOf(spans: unknown, to: number, maxMs: number): { from: number; to: number };
};

t.test('snapshots of every family become one numeric book', async (t) => {
  const coin = depth.bookOf('coin', { market_id: 'm', books: [{ outcome: 'Up', bids: [[0.52, 10]], asks: [[0.53, 5]] }, { outcome: 'Down', bids: [[0.47, 5]], asks: [] }] });
  t.same(coin, { bids: [[0.52, 10]], asks: [[0.53, 5]] }, 'coin: the first outcome\'s book');
  const wallet = depth.bookOf('wallet-prediction', { market_id: 'w', outcome: 'Up', bids: [[0.4, 1]], asks: [[0.6, 2]] });
  t.same(wallet, { bids: [[0.4, 1]], asks: [[0.6, 2]] }, 'wallet: the snapshot\'s own ladders');
  const dollars = depth.bookOf('yesno-exchange', { units: 'dollars', yes: { prices: ['0.5200'], sizes: ['120.00'] }, no: { prices: ['0.4700'], sizes: ['80.00'] } });
  t.equal(dollars!.bids[0][0], 0.52, 'yes/no dollars: YES bids as bids');
  t.ok(Math.abs(dollars!.asks[0][0] - 0.53) < 1e-9 && dollars!.asks[0][1] === 80, 'a NO bid at 0.47 is a YES ask at 0.53');
  const cents = depth.bookOf('yesno-exchange', { units: 'cents', yes: { prices: ['52'], sizes: ['3'] }, no: { prices: ['47'], sizes: ['4'] } });
  t.same(cents!.bids, [[0.52, 3]], 'yes/no cents become probabilities');
  t.equal(depth.bookOf('coin', { market_id: 'm' }), null, 'a snapshot without a book is no book');
  t.equal(depth.bookOf('coin', null), null, 'nothing is no book');
});

t.test('coverage answers become recorded spans and gaps with reasons', async (t) => {
  const now = Date.parse('2026-07-26T12:00:00Z');
  const body = {
    data: {
      family: 'coin', market_id: 'm', connected: false,
      datasets: { books: { first_time: '2026-07-26T11:00:00.000Z' } },
      intervals: [{ start: '2026-07-26T11:00:00.000Z', end: '2026-07-26T11:30:00.000Z' }],
      gaps: [
        { start: '2026-07-26T11:30:00.000Z', end: '2026-07-26T11:31:00.000Z', reason: 'disconnected' },
        { start: '2026-07-26T11:50:00.000Z', end: null, reason: 'upstream_error' },
      ],
    },
  };
  const spans = timeline.spansOf(body, now);
  t.same(spans.recorded, [[Date.parse('2026-07-26T11:00:00Z'), Date.parse('2026-07-26T11:30:00Z')]], 'one recorded interval');
  t.same(spans.gaps.map((g) => g.reason), ['disconnected', 'upstream_error'], 'gaps keep their reasons');
  t.equal(spans.gaps[1].end, now, 'an open gap runs to now');
  t.ok(spans.gaps[1].open, 'and is marked open');
  const view = timeline.viewOf(spans, now, 2 * 3600_000);
  t.ok(view.from <= Date.parse('2026-07-26T11:00:00Z') && view.from > Date.parse('2026-07-26T10:00:00Z'), 'the view starts at the first recorded moment, not two hours back');
  t.same(timeline.spansOf({ data: [] }, now), { recorded: [], gaps: [] }, 'an empty answer is empty');
});

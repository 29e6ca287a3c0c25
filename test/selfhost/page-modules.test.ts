// The page's pure helpers, loaded from public/ exactly as the browser loads them: every family's
// snapshot becomes one numeric book (yes/no NO bids turn into YES asks, cents into probabilities),
// coverage answers become recorded spans and gaps, open gaps running to now; the timeline's grid,
// quotes and markers; the overview's day cells; the Data tab's DuckDB query.

import t from 'tap';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO } from './helpers.js';

type Book = { bids: [number, number][]; asks: [number, number][] } | null;
const depth = (await import(pathToFileURL(join(REPO, 'public', 'depth.js')).href)) as { bookOf(family: string, snap: unknown): Book };
const timeline = (await import(pathToFileURL(join(REPO, 'public', 'timeline.js')).href)) as {
  spansOf(
    body: unknown,
    now: number,
  ): { recorded: [number, number][]; gaps: { start: number; end: number; reason: string; open: boolean }[] };
  viewOf(spans: unknown, to: number, maxMs: number): { from: number; to: number };
  drawTimeline(
    el: { innerHTML: string },
    legend: { innerHTML: string },
    list: { innerHTML: string },
    spans: unknown,
    from: number,
    to: number,
  ): number;
};

t.test("a merged history's coverage names the recorder of each interval on the timeline", async (t) => {
  const body = {
    data: {
      intervals: [{ start: '2026-07-26T12:00:00Z', end: '2026-07-26T12:10:00Z' }],
      gaps: [{ start: '2026-07-26T12:10:00Z', end: '2026-07-26T12:11:00Z', reason: 'not_recording' }],
      sources: [
        { start: '2026-07-26T12:00:00Z', end: '2026-07-26T12:04:00Z', recorder: 'rec-a' },
        { start: '2026-07-26T12:04:00Z', end: '2026-07-26T12:10:00Z', recorder: 'rec-<b>' },
      ],
    },
  };
  const spans = timeline.spansOf(body, Date.parse('2026-07-26T13:00:00Z')) as { sources?: { recorder: string }[] };
  t.same(
    spans.sources?.map((s) => s.recorder),
    ['rec-a', 'rec-<b>'],
  );
  const [el, legend, list] = [{ innerHTML: '' }, { innerHTML: '' }, { innerHTML: '' }];
  timeline.drawTimeline(el, legend, list, spans, Date.parse('2026-07-26T12:00:00Z'), Date.parse('2026-07-26T12:20:00Z'));
  t.match(el.innerHTML, /class="src" data-recorder="rec-a"[^>]*>.*from recorder rec-a/, 'a strip per source, with its recorder');
  t.match(el.innerHTML, /data-recorder="rec-&#60;b&#62;"/, 'recorder ids are escaped');
  t.match(legend.innerHTML, /from rec-a.*gap: not_recording \(all recorders\)/, 'the legend says a gap is where all recorders lost data');
});

t.test('snapshots of every family become one numeric book', async (t) => {
  const coin = depth.bookOf('coin', {
    market_id: 'm',
    books: [
      { outcome: 'Up', bids: [[0.52, 10]], asks: [[0.53, 5]] },
      { outcome: 'Down', bids: [[0.47, 5]], asks: [] },
    ],
  });
  t.same(coin, { bids: [[0.52, 10]], asks: [[0.53, 5]] }, "coin: the first outcome's book");
  const wallet = depth.bookOf('wallet-prediction', { market_id: 'w', outcome: 'Up', bids: [[0.4, 1]], asks: [[0.6, 2]] });
  t.same(wallet, { bids: [[0.4, 1]], asks: [[0.6, 2]] }, "wallet: the snapshot's own ladders");
  const dollars = depth.bookOf('yesno-exchange', {
    units: 'dollars',
    yes: { prices: ['0.5200'], sizes: ['120.00'] },
    no: { prices: ['0.4700'], sizes: ['80.00'] },
  });
  t.equal(dollars!.bids[0][0], 0.52, 'yes/no dollars: YES bids as bids');
  t.ok(Math.abs(dollars!.asks[0][0] - 0.53) < 1e-9 && dollars!.asks[0][1] === 80, 'a NO bid at 0.47 is a YES ask at 0.53');
  const cents = depth.bookOf('yesno-exchange', {
    units: 'cents',
    yes: { prices: ['52'], sizes: ['3'] },
    no: { prices: ['47'], sizes: ['4'] },
  });
  t.same(cents!.bids, [[0.52, 3]], 'yes/no cents become probabilities');
  t.equal(depth.bookOf('coin', { market_id: 'm' }), null, 'a snapshot without a book is no book');
  t.equal(depth.bookOf('coin', null), null, 'nothing is no book');
});

t.test('coverage answers become recorded spans and gaps with reasons', async (t) => {
  const now = Date.parse('2026-07-26T12:00:00Z');
  const body = {
    data: {
      family: 'coin',
      market_id: 'm',
      connected: false,
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
  t.same(
    spans.gaps.map((g) => g.reason),
    ['disconnected', 'upstream_error'],
    'gaps keep their reasons',
  );
  t.equal(spans.gaps[1].end, now, 'an open gap runs to now');
  t.ok(spans.gaps[1].open, 'and is marked open');
  const view = timeline.viewOf(spans, now, 2 * 3600_000);
  t.ok(
    view.from <= Date.parse('2026-07-26T11:00:00Z') && view.from > Date.parse('2026-07-26T10:00:00Z'),
    'the view starts at the first recorded moment, not two hours back',
  );
  t.same(timeline.spansOf({ data: [] }, now), { recorded: [], gaps: [] }, 'an empty answer is empty');
});

const history = (await import(pathToFileURL(join(REPO, 'public', 'history.js')).href)) as {
  intervalFor(spanMs: number): [string, number];
  quotesOf(x: unknown, data: unknown): Record<string, { bid: number | null; ask: number | null }>;
  markersOf(x: unknown): { t: number; label: string; kind: string }[];
};
const overview = (await import(pathToFileURL(join(REPO, 'public', 'overview.js')).href)) as {
  daysOf(from: number, to: number): number[];
  dayCells(
    data: unknown,
    days: number[],
    openUntil: number,
  ): { day: number; recorded: number; gap: number; reasons: string[]; state: string; sources?: Record<string, number> }[];
  openUntil(data: unknown, windowEnd: number, now: number): number;
};
const dataTab = (await import(pathToFileURL(join(REPO, 'public', 'data-tab.js')).href)) as {
  duckdbQuery(o: Record<string, string>): string;
  sizeOf(bytes: number): string;
};
const bookView = (await import(pathToFileURL(join(REPO, 'public', 'book-view.js')).href)) as {
  mirrored(snap: unknown, label: string): { outcome: string; bids: [number, number][]; asks: [number, number][] };
  gapAt(gaps: { start: number; end: number }[], t: number): unknown;
};

t.test("the timeline picks a grid of a few thousand points and reads every family's quotes", async (t) => {
  t.same(history.intervalFor(5 * 60_000), ['1s', 1000], '5 minutes at 1 s');
  t.same(history.intervalFor(2 * 3600_000), ['1m', 60_000], '2 hours at 1 m (7,200 seconds would be too many)');
  t.same(history.intervalFor(7 * 86_400_000), ['5m', 300_000], 'a week at 5 m');
  t.same(history.intervalFor(400 * 86_400_000), ['1h', 3_600_000], 'beyond that at 1 h');
  const wallet = { family: 'wallet-prediction', m: { outcomes: [{ label: 'Up' }, { label: 'Down' }] } };
  const q = history.quotesOf(wallet, { outcome: 'Up', bids: [[0.52, 1]], asks: [[0.55, 2]] });
  t.same(q.Up, { bid: 0.52, ask: 0.55 }, 'wallet: the recorded outcome');
  t.ok(Math.abs(q.Down.bid! - 0.45) < 1e-12 && Math.abs(q.Down.ask! - 0.48) < 1e-12, 'and its mirror for the other outcome');
  const coin = history.quotesOf({ family: 'coin', m: {} }, { books: [{ outcome: 'Up', bids: [], asks: [[0.6, 1]] }] });
  t.same(coin, { Up: { bid: null, ask: 0.6 } }, 'coin: an empty side is no quote, an absent outcome is absent');
  const yn = history.quotesOf({ family: 'yesno-exchange', m: {} }, { units: 'cents', yes: { prices: ['40'] }, no: { prices: ['55'] } });
  t.ok(
    yn.yes.bid === 0.4 && Math.abs(yn.yes.ask! - 0.45) < 1e-12 && yn.no.bid === 0.55 && Math.abs(yn.no.ask! - 0.6) < 1e-12,
    "yes/no: each side's ask is one minus the other side's bid",
  );
});

t.test('markers: window and resolution per family', async (t) => {
  const coin = history.markersOf({
    family: 'coin',
    m: {
      start_time: '2026-07-26T12:00:00.000Z',
      end_time: '2026-07-26T12:05:00.000Z',
      status: 'resolved',
      outcomes: [{ label: 'Up' }, { label: 'Down' }],
      native: { umaResolutionStatus: 'resolved', outcomePrices: '["0","1"]', closedTime: '2026-07-26 12:06:30+00' },
    },
  });
  t.same(
    coin.map((m) => [m.kind, m.label]),
    [
      ['start', 'window start'],
      ['end', 'window end'],
      ['resolution', 'resolved: Down'],
    ],
    'coin: the winner from the native outcome prices',
  );
  t.equal(coin[2].t, Date.parse('2026-07-26T12:06:30Z'), 'at the native close time');
  const push = history.markersOf({
    family: 'wallet-prediction',
    m: {
      end_time: '2026-07-26T12:05:00.000Z',
      status: 'resolved',
      resolution: 'push',
      winning_outcome: null,
      resolved_time: '2026-07-26T12:05:01.000Z',
    },
  });
  t.same(
    push.map((m) => m.label),
    ['window end', 'resolved: push'],
    'wallet: a push is named',
  );
  const open = history.markersOf({
    family: 'yesno-exchange',
    m: { open_time: '2026-07-26T12:00:00Z', close_time: '2026-07-26T13:00:00Z', status: 'active', result: '' },
  });
  t.same(
    open.map((m) => m.kind),
    ['start', 'end'],
    'yes/no: an open market has no resolution marker',
  );
});

t.test('overview cells: recorded and gap time per UTC day', async (t) => {
  const d0 = Date.parse('2026-07-26T00:00:00Z'),
    DAY = 86_400_000;
  const days = overview.daysOf(d0 + 5000, d0 + DAY + 5000);
  t.same(days, [d0, d0 + DAY], 'the days the range touches');
  t.equal(overview.daysOf(d0, d0 + 40 * DAY).length, 14, 'at most 14 days, the newest');
  const data = {
    connected: false,
    datasets: { books: { last_time: '2026-07-27T01:00:00.000Z' } },
    intervals: [
      { start: '2026-07-26T22:00:00.000Z', end: '2026-07-26T23:00:00.000Z' },
      { start: '2026-07-26T23:30:00.000Z', end: '2026-07-27T01:00:00.000Z' },
    ],
    gaps: [
      { start: '2026-07-26T23:00:00.000Z', end: '2026-07-26T23:30:00.000Z', reason: 'disconnected' },
      { start: '2026-07-27T01:00:00.000Z', end: null, reason: 'not_recording' },
    ],
  };
  const until = overview.openUntil(data, Date.parse('2026-07-27T02:00:00Z'), Date.parse('2026-07-28T00:00:00Z'));
  t.equal(until, Date.parse('2026-07-27T02:00:00Z'), 'an open gap of a market no longer recorded runs to its window end');
  const cells = overview.dayCells(data, days, until);
  t.same(
    cells.map((c) => [c.state, c.recorded / 60_000, c.gap / 60_000, c.reasons]),
    [
      ['partial', 90, 30, ['disconnected']],
      ['partial', 60, 60, ['not_recording']],
    ],
    'per day: minutes recorded, minutes of gaps, reasons',
  );
  t.equal(overview.openUntil({ connected: true }, NaN, 5), 5, 'while recorded, an open gap runs to now');
  t.equal(overview.dayCells({ intervals: [], gaps: [] }, days, 0)[0].state, 'none', 'nothing recorded is none');
  t.notOk('sources' in cells[0], "a single recorder's history names no source");
  // A merged history: the overview's cells say which recorder each day's recorded time came from.
  const merged = overview.dayCells(
    {
      intervals: [{ start: '2026-07-26T22:00:00Z', end: '2026-07-27T01:00:00Z' }],
      sources: [
        { start: '2026-07-26T22:00:00Z', end: '2026-07-26T23:30:00Z', recorder: 'rec-a' },
        { start: '2026-07-26T23:30:00Z', end: '2026-07-27T00:30:00Z', recorder: 'rec-b' },
        { start: '2026-07-27T00:30:00Z', end: '2026-07-27T01:00:00Z', recorder: 'rec-a' },
      ],
      gaps: [],
    },
    days,
    0,
  );
  t.same(
    merged.map((c) => c.sources && Object.fromEntries(Object.entries(c.sources).map(([k, v]) => [k, v / 60_000]))),
    [
      { 'rec-a': 90, 'rec-b': 30 },
      { 'rec-b': 30, 'rec-a': 30 },
    ],
    'per day: minutes from each recorder',
  );
});

t.test('data tab: the DuckDB query and sizes', async (t) => {
  const q = dataTab.duckdbQuery({
    origin: 'http://h:1',
    family: 'yesno-exchange',
    dataset: 'book_changes',
    market: "K'X",
    startDate: '2026-07-01',
    endDate: '2026-07-02',
  });
  t.match(
    q,
    /^-- pmtape pull http:\/\/h:1 --family yesno-exchange --dataset book_changes --start-date 2026-07-01 --end-date 2026-07-02 --out \.\/parquet$/m,
    'says how to pull the files first',
  );
  t.match(
    q,
    /read_parquet\('parquet\/family=yesno-exchange\/dataset=book_changes\/\*\/\[!_\]\*\.parquet', hive_partitioning = true\)/,
    'globs the Hive tree, skipping staging files',
  );
  t.match(q, /market_id = 'K''X'/, 'quotes the market id as SQL');
  t.same(
    [dataTab.sizeOf(512), dataTab.sizeOf(2048), dataTab.sizeOf(5 * 1024 ** 2)],
    ['512 B', '2.0 kB', '5.0 MB'],
    'sizes read as people write them',
  );
  const m = bookView.mirrored({ outcome: 'Up', bids: [[0.52, 3]], asks: [[0.55, 4]] }, 'Down');
  t.same(m, { outcome: 'Down', bids: [[0.45, 4]], asks: [[0.48, 3]] }, 'a wallet book seen as its other outcome');
  t.ok(bookView.gapAt([{ start: 10, end: 20 }], 10) && !bookView.gapAt([{ start: 10, end: 20 }], 20), 'a gap holds [start, end)');
});

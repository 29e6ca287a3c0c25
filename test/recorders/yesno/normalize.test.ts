import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  normalizeOrderbook,
  normalizeMarket,
  YESNO_CATALOG,
  eventSeries,
  classify,
  MAX_LEVELS,
} from '../../../src/recorders/yesno/normalize.js';
import { catalogChange } from '../../../src/recorders/catalog-diff.js';

// Compiled to dist/test/recorders/yesno/: the fixtures stay in the source tree.
const FIX = fileURLToPath(new URL('../../../../test/fixtures/yesno/', import.meta.url));
const load = (f: string): unknown => JSON.parse(readFileSync(FIX + f, 'utf8'));

t.test('the real fixed-point book keeps native dollar text, best bid first on both sides', async (t) => {
  const raw = load('orderbook_KXELONMARS-99.json');
  const [book, ...rest] = normalizeOrderbook(raw, 1_785_000_000_000, 400);
  t.equal(rest.length, 0);
  t.equal(book.type, 'yesno_book');
  t.equal(book.units, 'dollars');
  t.equal(book.poll_interval_ms, 400);
  t.equal(book.source_ts, null);
  t.same(book.yes[0], ['0.0800', '444.32'], 'yes best bid matches the market record yes_bid_dollars');
  t.same(book.no[0], ['0.8800', '1967.33'], 'no best bid matches no_bid_dollars (a yes ask at 0.1200)');
  t.same(book.yes.at(-1), ['0.0100', '6558.50']);
  t.equal(book.yes.length, 8);
  t.equal(book.no.length, 18);
  const src = raw as { orderbook_fp: { yes_dollars: string[][]; no_dollars: string[][] } };
  t.same(book.no, [...src.orderbook_fp.no_dollars].reverse(), 'every level is the upstream text, reversed, nothing rounded');
});

t.test('the legacy cents format is kept as integer text with units cents', async (t) => {
  const [book] = normalizeOrderbook(
    {
      orderbook: {
        yes: [
          [1, 200],
          [15, 100],
          [40, 7],
        ],
        no: [[55, 3]],
      },
    },
    5,
  );
  t.equal(book.units, 'cents');
  t.same(book.yes, [
    ['40', '7'],
    ['15', '100'],
    ['1', '200'],
  ]);
  t.same(book.no, [['55', '3']]);
  t.notOk('poll_interval_ms' in book);
});

t.test('a count sent as a JSON number that is not an integer is stored as its canonical text (issue 34)', async (t) => {
  const [book] = normalizeOrderbook(
    {
      orderbook: {
        yes: [
          [15, 6351 / 100 + 1],
          [16, 1e21],
        ],
        no: [[55, 3]],
      },
    },
    5,
  );
  t.same(
    book.yes,
    [
      ['16', '1000000000000000000000'],
      ['15', '64.51'],
    ],
    'no binary noise, no exponent',
  );
  const [fp] = normalizeOrderbook({ orderbook_fp: { yes_dollars: [['0.1500', '100.10']] } }, 5);
  t.same(fp.yes, [['0.1500', '100.10']], 'text the venue sends as text is kept byte for byte');
});

t.test('a side that is missing, null or empty is an empty ladder, not an error', async (t) => {
  const [a] = normalizeOrderbook({ orderbook_fp: { yes_dollars: [['0.5000', '1.00']] } }, 1);
  t.same(a.no, []);
  const [b] = normalizeOrderbook({ orderbook: { yes: null, no: [] } }, 1);
  t.same([b.yes, b.no, b.units], [[], [], 'cents']);
});

t.test('an unordered side is sorted best first rather than trusted', async (t) => {
  const [book] = normalizeOrderbook(
    {
      orderbook_fp: {
        yes_dollars: [
          ['0.2000', '1.00'],
          ['0.5000', '2.00'],
          ['0.1000', '3.00'],
        ],
      },
    },
    1,
  );
  t.same(
    book.yes.map((l) => l[0]),
    ['0.5000', '0.2000', '0.1000'],
  );
});

t.test('deep books are cut to the best 100 levels per side', async (t) => {
  const levels = Array.from({ length: 150 }, (_, i) => [(i / 10000 + 0.0001).toFixed(4), '1.00']);
  const [book] = normalizeOrderbook({ orderbook_fp: { yes_dollars: levels, no_dollars: [] } }, 1);
  t.equal(book.yes.length, MAX_LEVELS);
  t.equal(book.yes[0][0], '0.0150', 'the highest bid survives');
  t.equal(book.yes.at(-1)![0], '0.0051');
});

t.test('malformed bodies are reported and produce nothing, never throw', async (t) => {
  const bad: string[] = [];
  const onBad = (w: string): void => void bad.push(w);
  for (const raw of [
    null,
    'x',
    42,
    [],
    {},
    { orderbook_fp: { yes_dollars: 'no' } },
    { orderbook_fp: { yes_dollars: [['0.5', 'abc']] } },
    { orderbook_fp: { no_dollars: [[0.5, '1.00']] } },
    { orderbook: { yes: [[150, 1]] } },
    { orderbook: { yes: [[-1, 1]] } },
    { orderbook: { yes: [[1.5, 1]] } },
    { orderbook_fp: { yes_dollars: [['1.5000', '1.00']] } },
    { orderbook_fp: { yes_dollars: [['0.5000']] } },
  ]) {
    t.same(normalizeOrderbook(raw, 1, undefined, onBad), [], `skips ${JSON.stringify(raw)}`);
  }
  t.equal(bad.length, 13, 'each one counted once');
});

t.test('the real market record keeps tickers and native object; series derived when absent', async (t) => {
  const raw = (load('market_KXELONMARS-99.json') as { market: unknown }).market;
  const m = normalizeMarket(raw)!;
  t.equal(m.ticker, 'KXELONMARS-99');
  t.equal(m.market_id, 'KXELONMARS-99');
  t.equal(m.event_ticker, 'KXELONMARS-99');
  t.equal(m.series_ticker, 'KXELONMARS', 'falls back to the event ticker prefix');
  t.equal(m.status, 'active');
  t.equal(m.result, '');
  t.equal(m.open_time, Date.parse('2025-08-28T20:45:00Z'));
  t.equal(m.close_time, Date.parse('2099-08-01T04:59:00Z'));
  t.equal(m.native, raw);
  const viaEvent = normalizeMarket(raw, (e) => (e === 'KXELONMARS-99' ? 'KXELON' : undefined))!;
  t.equal(viaEvent.series_ticker, 'KXELON', 'the event says which series it belongs to');
  const own = normalizeMarket({ ...(raw as object), series_ticker: 'OWN' }, () => 'KXELON')!;
  t.equal(own.series_ticker, 'OWN', "the market's own series ticker wins");
});

t.test('event bodies give event → series pairs', async (t) => {
  t.same(eventSeries({ events: [{ event_ticker: 'E1', series_ticker: 'S' }, { event_ticker: 'E2' }, 7] }), [['E1', 'S']]);
  t.same(eventSeries({ event: { event_ticker: 'E3', series_ticker: 'S3' }, markets: [] }), [['E3', 'S3']]);
  t.same(eventSeries(null), []);
});

t.test('catalogue events: listed once, then only on status, result or settlement changes', async (t) => {
  const raw = (load('market_KXELONMARS-99.json') as { market: Record<string, unknown> }).market;
  const a = normalizeMarket(raw)!;
  const first = catalogChange(YESNO_CATALOG, null, a, 10)!;
  t.equal(first.event, 'listed');
  t.equal(first.market, a);
  const samePrices = normalizeMarket({ ...raw, yes_bid_dollars: '0.0900', volume_fp: '1.00' })!;
  t.equal(catalogChange(YESNO_CATALOG, a, samePrices, 11), null, 'price and volume moves are not catalogue events');
  const closed = normalizeMarket({ ...raw, status: 'closed' })!;
  const ev = catalogChange(YESNO_CATALOG, a, closed, 12)!;
  t.same([ev.event, ev.changed], ['status', ['status']]);
  const settled = normalizeMarket({
    ...raw,
    status: 'finalized',
    result: 'no',
    settlement_value_dollars: '0.0000',
    settlement_ts: '2099-08-08T15:00:00Z',
  })!;
  const res = catalogChange(YESNO_CATALOG, closed, settled, 13)!;
  t.equal(res.event, 'resolved');
  t.same(res.changed, ['status', 'result', 'settlement_value_dollars', 'settlement_ts']);
  t.equal(catalogChange(YESNO_CATALOG, settled, settled, 14), null);
});

t.test('malformed markets are reported and skipped', async (t) => {
  let n = 0;
  for (const raw of [null, [], { ticker: 'A' }, { ticker: 'A', event_ticker: 'E' }, { ticker: 3, event_ticker: 'E', status: 'active' }]) {
    t.equal(
      normalizeMarket(raw, undefined, () => n++),
      null,
    );
  }
  t.equal(n, 5);
});

t.test('classifies captured bodies for import', async (t) => {
  t.equal(classify(load('orderbook_KXELONMARS-99.json')), 'orderbook');
  t.equal(classify(load('market_KXELONMARS-99.json')), 'market');
  t.equal(classify({ markets: [], cursor: '' }), 'markets');
  t.equal(classify({ events: [] }), 'events');
  t.equal(classify({ hello: 1 }), 'unknown');
});

// The catalog mapper on the real catalogue market `btc-updown-5m-1773307200` (test/fixtures/catalog,
// see SOURCE.txt): JSON-in-string fields, identifiers, clock-driven status, resolution, and diffs.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { COIN_CATALOG, marketsIn, normalizeCatalogMarket, parseDate } from '../../../src/recorders/catalog/normalize.js';
import { catalogChange } from '../../../src/recorders/catalog-diff.js';

const fx = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(fileURLToPath(new URL(`../../../../test/fixtures/catalog/${name}`, import.meta.url)), 'utf8'));
const real = fx('gamma_market.json');
const START = Date.parse('2026-03-12T09:20:00Z');
const END = Date.parse('2026-03-12T09:25:00Z');

t.test('a real up/down market keeps every identifier and decodes the JSON-in-string fields', async (t) => {
  const m = normalizeCatalogMarket(real, START - 60_000)!;
  t.match(m, {
    family: 'coin',
    market_id: '1557558',
    event_id: '260654',
    slug: 'btc-updown-5m-1773307200',
    condition_id: '0x78443f961b9a65869dcb39359de9960165c7e5cbad0904eac7f29cd77872a63b',
    coin: 'btc',
    window: '5m',
    start_time: START,
    end_time: END,
    status: 'upcoming',
    resolution: null,
    winning_outcome: null,
    volume: 9.999997,
    liquidity: 20328.3747,
    created_time: Date.parse('2026-03-11T09:27:51.140253Z'),
  });
  t.same(m.outcomes, [
    { label: 'Up', token_id: '104239898038807136052399800151408521467737075933964991162589336683346093173875' },
    { label: 'Down', token_id: '71183960810705820955071415844881728181970340514894896943812046065452395013351' },
  ]);
  t.equal(m.native, real, 'the upstream object is kept as received');
});

t.test('status follows the clock until the venue closes and resolves the market', async (t) => {
  t.equal(normalizeCatalogMarket(real, START)!.status, 'open');
  t.equal(normalizeCatalogMarket(real, END)!.status, 'closed');
  const closed = { ...real, closed: true, outcomePrices: '["0.97", "0.03"]', closedTime: '2026-03-12 09:26:31+00' };
  t.match(normalizeCatalogMarket(closed, END + 100_000), { status: 'closed', resolution: 'pending', resolved_time: null });
  const resolved = { ...closed, outcomePrices: '["0", "1"]', umaResolutionStatus: 'resolved' };
  t.match(normalizeCatalogMarket(resolved, END + 200_000), {
    status: 'resolved',
    resolution: 'resolved',
    winning_outcome: 'Down',
    resolved_time: Date.parse('2026-03-12T09:26:31Z'),
  });
  t.match(normalizeCatalogMarket({ ...closed, outcomePrices: '["0.5", "0.5"]', umaResolutionStatus: 'resolved' }, END + 200_000), {
    status: 'resolved',
    resolution: 'push',
    winning_outcome: null,
  });
  t.match(
    normalizeCatalogMarket({ ...closed, outcomePrices: '["0.5", "0.5"]' }, END + 200_000),
    { status: 'closed', resolution: 'pending' },
    'unsettled 50/50 is not a push',
  );
  t.equal(normalizeCatalogMarket({ ...real, active: false }, START)!.status, 'cancelled');
});

t.test('markets that are not two-outcome up/down markets, or lack identifiers, are refused', async (t) => {
  t.equal(normalizeCatalogMarket(fx('market_slug.json'), START), null, 'a real non-up/down market');
  for (const m of marketsIn(
    JSON.parse(readFileSync(fileURLToPath(new URL('../../../../test/fixtures/catalog/gamma_event.json', import.meta.url)), 'utf8')),
  )) {
    t.equal(normalizeCatalogMarket(m, START), null);
  }
  t.equal(normalizeCatalogMarket({ ...real, clobTokenIds: '[broken' }, START), null);
  t.equal(normalizeCatalogMarket({ ...real, conditionId: undefined }, START), null);
  t.equal(normalizeCatalogMarket('x', START), null);
});

t.test('an events response gives its markets the event id and series', async (t) => {
  const { events, ...market } = real as { events: Array<Record<string, unknown>> };
  const body = [{ ...events[0], markets: [market] }];
  const [m] = marketsIn(body);
  t.match(normalizeCatalogMarket(m, START), { market_id: '1557558', event_id: '260654', coin: 'btc', window: '5m' });
});

t.test('dates in both of the venue styles parse', async (t) => {
  t.equal(parseDate('2026-09-09 14:25:04+00'), Date.parse('2026-09-09T14:25:04Z'));
  t.equal(parseDate('2026-03-11T09:29:01.328428Z'), Date.parse('2026-03-11T09:29:01.328Z'));
  t.equal(parseDate('nope'), null);
});

t.test('one catalogue event per change, none for an unchanged poll', async (t) => {
  const a = normalizeCatalogMarket(real, START - 1000)!;
  const listed = catalogChange(COIN_CATALOG, null, a, 1)!;
  t.equal(listed.event, 'listed');
  t.equal(
    catalogChange(COIN_CATALOG, a, normalizeCatalogMarket({ ...real, updatedAt: '2026-03-12T09:00:00Z', bestBid: 0.4 }, START - 500)!, 2),
    null,
    'native-only change',
  );
  const vol = catalogChange(COIN_CATALOG, a, normalizeCatalogMarket({ ...real, volumeNum: 20 }, START - 500)!, 3)!;
  t.match(vol, { event: 'updated', changed: ['volume'] });
  const open = catalogChange(COIN_CATALOG, a, normalizeCatalogMarket(real, START)!, 4)!;
  t.match(open, { event: 'status', changed: ['status'] });
  const res = normalizeCatalogMarket({ ...real, closed: true, outcomePrices: '["1","0"]' }, END + 1)!;
  t.match(catalogChange(COIN_CATALOG, a, res, 5), { event: 'resolved', market: { winning_outcome: 'Up' } });
});

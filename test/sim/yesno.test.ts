import t, { type Test } from 'tap';
import { startSim } from '../../src/sim/server.js';
import type { SimMount } from '../../src/sim/mount.js';
import { createYesNoSim, type YesNoSim } from '../../src/sim/yesno.js';
import { createServer } from 'node:http';
import { easternStamp, YesNoUniverse } from '../../src/sim/yesno-market.js';
import { normalizeOrderbook } from '../../src/recorders/yesno/normalize.js';

/** The emulator's clock starts 1 s into a 90 s window (15m at scale 0.1), so the listing does not
 *  roll over between two requests of a test, however slow the machine (on the wall clock it did:
 *  CI saw a cursor walk list one market fewer at the start and one more at the end). */
function midWindowClock(): () => number {
  const W = 90_000,
    base = Date.now(),
    origin = Math.floor(base / W) * W + W + 1000;
  return () => origin + (Date.now() - base);
}

async function sim(t: Test, faults = '') {
  const s = await startSim({ seed: 3, windowScale: 0.1, faults, now: midWindowClock() });
  t.teardown(() => s.close());
  const base = `${s.url}/yesno/trade-api/v2`;
  const get = async (p: string): Promise<{ status: number; body: any; headers: Headers }> => {
    const r = await fetch(base + p);
    const text = await r.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // garbage stays text
    }
    return { status: r.status, body, headers: r.headers };
  };
  const y = (s.mounts.find((m) => m.prefix === '/yesno') as SimMount & { yesno: YesNoSim }).yesno;
  return { s, get, y };
}

t.test('tickers stamp the close in US Eastern time, like KXBTC15M-26AUG030230-30', async (t) => {
  t.equal(easternStamp(Date.UTC(2026, 7, 3, 6, 30)), '26AUG030230', 'EDT is UTC-4');
  t.equal(easternStamp(Date.UTC(2026, 0, 15, 20, 45)), '26JAN151545', 'EST is UTC-5');
});

t.test('markets page with an opaque cursor; filters by series, status, event and close time', async (t) => {
  const { get, s } = await sim(t);
  t.equal(s.config.series instanceof Array, true);
  const all = await get('/markets?series_ticker=KXBTC15M&limit=1000');
  t.equal(all.status, 200);
  const tickers = all.body.markets.map((m: any) => m.ticker);
  t.equal(tickers.length, 11, 'eight closed windows, the open one, two listed ahead');
  for (const m of all.body.markets) {
    t.match(m.ticker, /^KXBTC15M-\d{2}[A-Z]{3}\d{6}-\d{2}$/);
    t.equal(m.ticker.startsWith(m.event_ticker + '-'), true);
    t.notOk('series_ticker' in m, 'like the venue, markets do not name their series');
  }
  const paged: string[] = [];
  let cursor = '';
  for (let i = 0; i < 10; i++) {
    const p = await get(`/markets?series_ticker=KXBTC15M&limit=4${cursor ? `&cursor=${cursor}` : ''}`);
    paged.push(...p.body.markets.map((m: any) => m.ticker));
    cursor = p.body.cursor;
    if (!cursor) break;
  }
  t.same(paged, tickers, 'following the cursor lists each market once');
  const open = await get('/markets?status=open');
  t.same(
    open.body.markets.map((m: any) => m.status),
    ['active', 'active'],
    'one active market per listed series',
  );
  const settled = await get('/markets?series_ticker=KXBTC15M&status=settled');
  t.ok(settled.body.markets.length >= 5);
  for (const m of settled.body.markets) {
    t.equal(m.status, 'finalized');
    t.ok(['yes', 'no'].includes(m.result));
    t.equal(m.settlement_value_dollars, m.result === 'yes' ? '1.0000' : '0.0000');
  }
  const ev = all.body.markets[3].event_ticker;
  t.same(
    (await get(`/markets?event_ticker=${ev}`)).body.markets.map((m: any) => m.event_ticker),
    [ev],
  );
  const minClose = Math.floor(Date.parse(all.body.markets[8].close_time) / 1000);
  t.equal((await get(`/markets?series_ticker=KXBTC15M&min_close_ts=${minClose}`)).body.markets.length, 3);
  for (const bad of ['/markets?limit=0', '/markets?limit=1001', '/markets?cursor=%21%21', '/markets?status=weird']) {
    t.equal((await get(bad)).status, 400, `${bad} is a 400`);
  }
});

t.test('series, events and single markets answer like the venue; unknown ones are 404', async (t) => {
  const { get } = await sim(t);
  t.equal((await get('/series/KXETH15M')).body.series.ticker, 'KXETH15M');
  t.equal((await get('/series/NOPE')).status, 404);
  const evs = await get('/events?series_ticker=KXETH15M&with_nested_markets=true');
  t.equal(evs.body.events[0].series_ticker, 'KXETH15M');
  t.equal(evs.body.events[0].markets.length, 1);
  const one = await get(`/events/${evs.body.events[0].event_ticker}`);
  t.equal(one.body.event.event_ticker, evs.body.events[0].event_ticker);
  t.equal((await get(`/markets/${one.body.markets[0].ticker}`)).body.market.ticker, one.body.markets[0].ticker);
  t.equal((await get('/markets/KXETH15M-99JAN010000-00')).status, 404);
  t.equal((await get('/events/KXETH15M-99JAN010000')).status, 404);
});

t.test('order books come in the fixed-point and the legacy form, ascending, cut to depth', async (t) => {
  const { get } = await sim(t);
  const ticker = (await get('/markets?status=open')).body.markets[0].ticker;
  const fp = await get(`/markets/${ticker}/orderbook?depth=5&format=fixed`);
  t.ok(fp.body.orderbook_fp.yes_dollars.length <= 5);
  const ys = fp.body.orderbook_fp.yes_dollars.map((l: string[]) => Number(l[0]));
  t.same(
    ys,
    [...ys].sort((a, b) => a - b),
    'ascending, best bid last',
  );
  for (const l of fp.body.orderbook_fp.yes_dollars) t.match(l, [/^\d\.\d{4}$/, /^\d+\.\d{2}$/]);
  const legacy = await get(`/markets/${ticker}/orderbook?format=legacy`);
  for (const l of legacy.body.orderbook.yes) t.ok(Number.isInteger(l[0]) && Number.isInteger(l[1]), 'integer cents and counts');
  const [a] = normalizeOrderbook(fp.body, 1);
  t.equal(a.units, 'dollars');
  const [b] = normalizeOrderbook(legacy.body, 1);
  t.equal(b.units, 'cents');
  t.equal((await get(`/markets/${ticker}/orderbook?depth=101`)).status, 400);
  // without the switch each market answers in its own form: `mixed` gives some the legacy form
  const u = new YesNoUniverse({
    seed: 3,
    windowScale: 1,
    stepMs: 1000,
    bookFormat: 'mixed',
    keepWindows: 40,
    aheadWindows: 0,
    now: () => Date.UTC(2026, 6, 1),
  });
  const forms = new Set(u.list('KXBTC15M').map((m) => m.legacy));
  t.same([...forms].sort(), [false, true], 'both forms occur');
});

t.test('past 20 reads/s the venue answers 429 with Retry-After', async (t) => {
  // the emulator's own clock, frozen: the limit is counted, not raced
  let clock = Date.UTC(2026, 6, 1, 12);
  const y = createYesNoSim({ seed: 1, now: () => clock });
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (!y.http(req, res, url.pathname, url)) res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const statuses: Array<[number, string | null]> = [];
  for (let i = 0; i < 25; i++) {
    const r = await fetch(`${base}/series/KXBTC15M`);
    await r.text();
    statuses.push([r.status, r.headers.get('retry-after')]);
  }
  t.same(
    statuses.slice(0, 20).map((x) => x[0]),
    Array(20).fill(200),
    'a burst of 20 is served',
  );
  t.same(statuses.slice(20), Array(5).fill([429, '1']), 'then 429 with Retry-After: 1');
  clock += 1000;
  t.equal((await fetch(`${base}/series/KXBTC15M`)).status, 200, 'served again once the second has passed');
  t.equal(y.stats.rejected429, 5);
});

t.test('the same seed gives the same markets and books', async (t) => {
  const now = () => Date.UTC(2026, 6, 1, 12, 7);
  const mk = () => new YesNoUniverse({ seed: 9, windowScale: 1, stepMs: 2000, bookFormat: 'fixed', keepWindows: 2, aheadWindows: 1, now });
  const a = mk();
  const b = mk();
  const ta = a.list('KXBTC15M');
  t.same(
    ta.map((m) => m.ticker),
    b.list('KXBTC15M').map((m) => m.ticker),
  );
  t.same(a.book(ta[2]), b.book(b.list('KXBTC15M')[2]));
  const c = new YesNoUniverse({ seed: 10, windowScale: 1, stepMs: 2000, bookFormat: 'fixed', keepWindows: 2, aheadWindows: 1, now });
  t.notSame(a.book(ta[2]), c.book(c.list('KXBTC15M')[2]), 'another seed, another book');
});

t.test('garbage faults truncate bodies; the host injects 5xx', async (t) => {
  const { get } = await sim(t, 'garbage=0.5,http5xx=0.2');
  const rs = [];
  for (let i = 0; i < 15; i++) rs.push(await get('/series/KXBTC15M'));
  t.ok(
    rs.some((r) => r.status === 200 && typeof r.body === 'string'),
    'some bodies are not JSON',
  );
  t.ok(
    rs.some((r) => r.status >= 500),
    'some answers are 5xx',
  );
  t.ok(
    rs.some((r) => r.status === 200 && typeof r.body === 'object'),
    'some are fine',
  );
});

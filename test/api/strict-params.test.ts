// Parameters are read strictly on every route: each integer parameter the OpenAPI document lists
// refuses hex, exponents, padding and signs that JavaScript would read as a number (Ajv's coercion
// once answered `limit=0x10` with 16 rows), each time parameter refuses a date whose fields are out
// of range (Date.parse read 2026-02-30 as March 2), with a 400 `invalid_parameter` naming the
// parameter. The routes are taken from the app's own OpenAPI document, so a new route is covered.

import t from 'tap';
import { keysFor, seedAll, testApp, testConfig, tmpDataDir, coinMarket, walletMarket, yesnoMarket, T0 } from './helpers.js';
import { parseTimeParam } from '../../src/schema/time.js';
import { parseClientMessage } from '../../src/api/stream/protocol.js';

interface OpenApiParam {
  name: string;
  in: string;
  schema: { type?: string };
}
type OpenApi = { paths: Record<string, Record<string, { parameters?: OpenApiParam[] }>> };

const BAD_INTEGERS = ['0x10', '1e3', '%205', '5%20', '+5', '5.0', '0b11', '1_000', '%09'];
const TIME = /_time$|^as_of$/;
const BAD_TIMES = [
  '2026-02-30T00:00:00Z',
  '2026-02-29',
  '2026-04-31T12:00:00Z',
  '2026-07-26T24:00:00Z',
  '2026-07-26T12:60:00Z',
  '2026-13-01T00:00:00Z',
];

/** A concrete URL of an OpenAPI path, naming the seeded markets. */
function concrete(path: string): string {
  const id = path.startsWith('/v3/{coin}') ? coinMarket.market_id : walletMarket.market_id;
  return path.replace('{coin}', 'btc').replace('{market_id}', id).replace('{market_ticker}', yesnoMarket.market_id);
}

/** Parameters a route requires, valid, so the one under test is the only thing wrong. */
function baseQuery(path: string): Record<string, string> {
  if (path === '/v3/datasets/rows') {
    return {
      family: 'coin',
      dataset: 'book_changes',
      market_id: coinMarket.market_id,
      start_time: String(T0),
      end_time: String(T0 + 60_000),
    };
  }
  if (path.endsWith('/timeseries')) return { metric: 'chance' };
  if (path.endsWith('/candles')) return { interval: '1m' };
  if (path === '/v3/replay')
    return { family: 'coin', market_id: coinMarket.market_id, start_time: String(T0), end_time: String(T0 + 60_000) };
  return {};
}

const url = (path: string, q: Record<string, string>): string =>
  `${concrete(path)}?${Object.entries(q)
    .map(([k, v]) => `${k}=${v.startsWith('%') || v.includes('%') ? v : encodeURIComponent(v)}`)
    .join('&')}`;

t.test('every integer and time parameter of every route is strict', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = (u: string) => app.inject({ method: 'GET', url: u, headers: { authorization: `Bearer ${keys.paid}` } });
  const doc = app.swagger() as unknown as OpenApi;
  let integers = 0;
  let times = 0;
  for (const [path, ops] of Object.entries(doc.paths)) {
    const query = (ops.get?.parameters ?? []).filter((p) => p.in === 'query');
    const base = baseQuery(path);
    for (const p of query) {
      if (p.schema.type === 'integer' || p.schema.type === 'number') {
        integers++;
        const good = await get(url(path, { ...base, [p.name]: '5' }));
        t.ok(good.statusCode < 400, `${path} ${p.name}=5 is accepted (${good.statusCode} ${good.body.slice(0, 200)})`);
        for (const bad of BAD_INTEGERS) {
          const res = await get(url(path, { ...base, [p.name]: bad }));
          const err = res.json().error;
          t.equal(res.statusCode, 400, `${path} ${p.name}=${bad} is a 400`);
          t.equal(err?.code, 'invalid_parameter', `${path} ${p.name}=${bad}: invalid_parameter`);
          t.match(err?.message, `'${p.name}'`, `${path} ${p.name}=${bad}: the message names the parameter`);
        }
      }
      if (TIME.test(p.name)) {
        times++;
        for (const bad of BAD_TIMES) {
          const res = await get(url(path, { ...base, [p.name]: bad }));
          t.equal(res.statusCode, 400, `${path} ${p.name}=${bad} is a 400 (${res.body.slice(0, 200)})`);
          t.match(res.json().error?.message, `'${p.name}'`, `${path} ${p.name}=${bad}: the message names the parameter`);
        }
      }
    }
  }
  t.ok(integers >= 20, `integer parameters checked: ${integers}`);
  t.ok(times >= 25, `time parameters checked: ${times}`);

  // The issue's cases, on the route they were found on, with a free key.
  for (const q of ['limit=0x10', 'limit=1e3', 'limit=%205', 'start_time=2026-02-30T00:00:00Z']) {
    const res = await app.inject({ method: 'GET', url: `/v3/coverage?${q}`, headers: { authorization: `Bearer ${keys.free}` } });
    t.equal(res.statusCode, 400, `/v3/coverage?${q} is a 400`);
    t.match(res.json().error.message, `'${q.split('=')[0]}'`, 'naming the parameter');
  }
  const ok = await app.inject({
    method: 'GET',
    url: '/v3/coverage?limit=2&start_time=2026-02-28T23:59:59.999Z',
    headers: { authorization: `Bearer ${keys.free}` },
  });
  t.equal(ok.statusCode, 200, 'plain decimal limits and real dates still work');
  const dates = await get('/v3/datasets?start_date=2026-02-30');
  t.equal(dates.statusCode, 400, 'a day out of range is refused on the dataset listing too');
  t.match(dates.json().error.message, "'start_date'");
});

t.test('the time parser takes real times only', async (t) => {
  t.equal(parseTimeParam('2026-02-30T00:00:00Z'), null, 'February 30 is not March 2');
  t.equal(parseTimeParam('2026-07-26T24:00:00Z'), null, 'hour 24 is not the next day');
  t.equal(parseTimeParam('2028-02-29T00:00:00Z'), Date.parse('2028-02-29T00:00:00Z'), 'a leap day is a day');
  t.equal(parseTimeParam('2026-07-26T12:00:00.1239Z'), Date.parse('2026-07-26T12:00:00.123Z'), 'a finer fraction is cut to ms');
  t.equal(parseTimeParam('2026-07-26T12:00'), Date.parse('2026-07-26T12:00:00Z'), 'no zone means UTC');
  t.equal(parseTimeParam('2026-07-26T12:00:00+00:00'), Date.parse('2026-07-26T12:00:00Z'));
  t.equal(parseTimeParam('1785067200000'), 1785067200000, 'epoch milliseconds');
  // The stream's `from`: a bad time is a bad time (invalid_parameter), not a cursor to look up.
  const r = parseClientMessage(
    JSON.stringify({ op: 'subscribe', id: 1, channel: 'book', family: 'coin', coin: 'btc', market_id: 'm', from: '2026-02-30T00:00:00Z' }),
  );
  t.equal(r.ok, false);
  if (!r.ok) {
    t.equal(r.error.code, 'invalid_parameter');
    t.match(r.error.message, "'from'");
  }
});

// What every request pays, checked on a listening server: the request id header on every kind of
// answer, the per-route request tallies in /metrics (exact counts, histogram consistent with
// them), and the logger split: at level warn Fastify has no logger, yet a 5xx is still logged
// with its request id; at level info each request is one line (plugins/request-log.ts).

import t from 'tap';
import { mkdirSync, renameSync } from 'node:fs';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { buildApp } from '../../src/api/app.js';
import { logFilePath } from '../../src/storage/testing.js';
import { utcDay } from '../../src/schema/time.js';
import { bookRecords, catalog, coinMarket, keysFor, testConfig, tmpDataDir, writeLog } from './helpers.js';

const LATEST = `/v3/btc/markets/${coinMarket.market_id}/orderbook/latest`;
const LATEST_ROUTE = '/v3/:coin/markets/:market_id/orderbook/latest';

/** A pino logger whose JSON lines land in `lines`. */
function capture(level: string): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level }, sink), lines };
}

async function seeded(t: Tap): Promise<{ dir: string; keys: { free: string; paid: string }; t0: number }> {
  const dir = tmpDataDir(t);
  const t0 = Date.now() - 60_000;
  await writeLog(dir, 'coin', 'catalog', coinMarket.market_id, [catalog(coinMarket, t0 - 1000)]);
  await writeLog(dir, 'coin', 'books', coinMarket.market_id, bookRecords(['1111', '2222'], { start: t0, n: 50, stepMs: 100 }));
  return { dir, keys: await keysFor(dir), t0 };
}
type Tap = Parameters<typeof tmpDataDir>[0];

async function serve(t: Tap, dir: string, log: pino.Logger): Promise<string> {
  const app = await buildApp({ config: testConfig(dir), logger: log, keyPollMs: 50 });
  t.teardown(() => app.close());
  return app.listen({ host: '127.0.0.1', port: 0 });
}

const metric = (text: string, name: string, labels: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};

t.test('every answer carries its request id, and the tallies count each route exactly', async (t) => {
  const { dir, keys } = await seeded(t);
  const base = await serve(t, dir, capture('warn').log);
  const auth = { authorization: `Bearer ${keys.free}` };
  const before = await (await fetch(`${base}/metrics`)).text();
  const ok0 = metric(before, 'pmtape_http_requests_total', `route="${LATEST_ROUTE}",status="200"`) ?? 0;

  const ids = new Set<string>();
  const expectId = async (path: string, headers: Record<string, string>, status: number): Promise<void> => {
    const res = await fetch(base + path, { headers });
    t.equal(res.status, status, `${path} answers ${status}`);
    const id = res.headers.get('x-request-id');
    t.ok(id, `${path} (${status}) has x-request-id`);
    if (res.headers.get('content-type')?.startsWith('application/json') && status >= 400) {
      t.equal(((await res.json()) as { error: { request_id: string } }).error.request_id, id, 'the envelope names the same id');
    } else await res.arrayBuffer();
    ids.add(id!);
  };
  for (let i = 0; i < 7; i++) await expectId(LATEST, auth, 200);
  await expectId(LATEST, {}, 401); // the key check fails in the route's own hook
  await expectId(LATEST, { authorization: 'Bearer pmt_nope' }, 401);
  await expectId('/no/such/route', {}, 404);
  await expectId('/healthz', {}, 200); // an open route
  await expectId('/v3/btc/markets/%E0%A4%A/orderbook/latest', auth, 400); // bad percent-encoding: before routing
  t.equal(ids.size, 12, 'every answer has its own id');

  const text = await (await fetch(`${base}/metrics`)).text();
  t.equal(metric(text, 'pmtape_http_requests_total', `route="${LATEST_ROUTE}",status="200"`), ok0 + 7, 'seven 200s of latest');
  t.ok((metric(text, 'pmtape_http_requests_total', `route="${LATEST_ROUTE}",status="401"`) ?? 0) >= 2, 'the 401s counted under the route');
  t.ok((metric(text, 'pmtape_http_requests_total', 'route="unknown",status="404"') ?? 0) >= 1, 'unmatched URLs counted as unknown');
  const count = metric(text, 'pmtape_http_request_duration_seconds_count', `route="${LATEST_ROUTE}"`)!;
  const inf = metric(text, 'pmtape_http_request_duration_seconds_bucket', `le="+Inf",route="${LATEST_ROUTE}"`);
  const le5 = metric(text, 'pmtape_http_request_duration_seconds_bucket', `le="5",route="${LATEST_ROUTE}"`)!;
  const le1ms = metric(text, 'pmtape_http_request_duration_seconds_bucket', `le="0.001",route="${LATEST_ROUTE}"`)!;
  t.ok(count >= ok0 + 9, 'the histogram counts every answer of the route');
  t.equal(inf, count, '+Inf bucket = count');
  t.ok(le1ms <= le5 && le5 <= count, 'buckets are cumulative');
  t.ok(metric(text, 'pmtape_http_request_duration_seconds_sum', `route="${LATEST_ROUTE}"`)! > 0, 'a positive sum');
  t.match(text, /# TYPE pmtape_http_request_duration_seconds histogram/);
  t.match(text, /# TYPE pmtape_log_records_written_total counter/, "the registry's own series are still there");
});

t.test('at level warn Fastify logs nothing per request, and a 5xx is still logged with its request id', async (t) => {
  const { dir, keys } = await seeded(t);
  const { log, lines } = capture('warn');
  const base = await serve(t, dir, log);
  const auth = { authorization: `Bearer ${keys.paid}` };
  t.equal((await fetch(base + LATEST, { headers: auth })).status, 200);
  t.same(lines, [], 'no line for a good request');

  // Today's log replaced by a folder: reading it fails, which is a 500 (never a crash).
  const file = logFilePath(dir, { family: 'coin', stream: 'books', market: coinMarket.market_id }, utcDay(Date.now() - 60_000));
  renameSync(file, `${file}.away`);
  mkdirSync(file);
  const res = await fetch(`${base}/v3/btc/markets/${coinMarket.market_id}/snapshots?start_time=0`, { headers: auth });
  t.equal(res.status, 500);
  const body = (await res.json()) as { error: { code: string; request_id: string } };
  t.equal(body.error.code, 'internal');
  t.equal(res.headers.get('x-request-id'), body.error.request_id);
  const failed = lines.find((l) => l.msg === 'request failed');
  t.ok(failed, 'the failure is logged');
  t.equal(failed?.request_id, body.error.request_id, 'with the request id the client was given');
  t.equal(failed?.level, 50, 'at level error');
});

t.test('at level info each request is one line: who (key id, address) read what, with what answer', async (t) => {
  const { dir, keys } = await seeded(t);
  const { log, lines } = capture('info');
  const base = await serve(t, dir, log);
  const before = lines.length;
  const res = await fetch(base + LATEST, { headers: { authorization: `Bearer ${keys.free}` } });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  const id = res.headers.get('x-request-id');
  const mine = lines.slice(before).filter((l) => l.request_id === id || l.reqId === id);
  t.equal(mine.length, 1, 'exactly one line for the request');
  const line = mine[0] ?? {};
  t.match(line, { level: 30, msg: 'request', method: 'GET', url: LATEST, status: 200, ip: '127.0.0.1' });
  t.equal(line.key, keys.free.split('_')[1], 'the key id, not the key');
  t.notOk(JSON.stringify(line).includes(keys.free), 'the key itself is not in the line');
  t.type(line.ms, 'number');

  // A refusal, an unknown URL and a router error are lines too (no route hook ran for the last two).
  const refused = await fetch(base + LATEST);
  const unknown = await fetch(`${base}/no/such/route`);
  const badPath = await fetch(`${base}/v3/btc/markets/%E0%A4%A/orderbook/latest`);
  for (const [r, status] of [
    [refused, 401],
    [unknown, 404],
    [badPath, 400],
  ] as const) {
    t.equal(r.status, status);
    const rid = r.headers.get('x-request-id');
    const found = lines.filter((l) => l.msg === 'request' && (rid === null || l.request_id === rid) && l.status === status);
    t.equal(found.length, 1, `one line for the ${status}`);
  }
  t.equal(lines.filter((l) => l.msg !== 'request').length, lines.length - lines.filter((l) => l.msg === 'request').length);
  t.equal(lines.filter((l) => l.msg === 'request').length, 4, 'four requests, four lines');
});

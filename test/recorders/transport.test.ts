// The shared recorder transport against real local servers: backoff, Retry-After parsing, the REST
// rate budget with 429/5xx/4xx/bad JSON, and the WebSocket keeper's disconnect, stale and 429 paths.

import t from 'tap';
import { createServer, type Server } from 'node:http';
import { WebSocketServer } from 'ws';
import { Backoff, TokenBucket, retryAfterMs } from '../../src/recorders/backoff.js';
import { RestClient } from '../../src/recorders/rest.js';
import { RecorderError } from '../../src/recorders/recorder.js';
import { WsConnection } from '../../src/recorders/ws-connection.js';
import type { GapReason } from '../../src/schema/observation.js';
import { waitFor } from './helpers.js';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const a = server.address() as { port: number };
  return `http://127.0.0.1:${a.port}`;
}

t.test('backoff grows exponentially with jitter, caps, and resets', async (t) => {
  const b = new Backoff(100, 1000, () => 1);
  t.same([b.next(), b.next(), b.next(), b.next(), b.next(), b.next()], [100, 200, 400, 800, 1000, 1000]);
  b.reset();
  t.equal(b.next(), 100);
  const j = new Backoff(100, 1000, () => 0);
  t.equal(j.next(), 50, 'equal jitter: at least half the ceiling');
});

t.test('Retry-After is read as seconds or an HTTP date, and capped', async (t) => {
  t.equal(retryAfterMs('2'), 2000);
  t.equal(retryAfterMs('0.5'), 500);
  t.equal(retryAfterMs(new Date(Date.now() + 3000).toUTCString(), 120_000) !== null, true);
  t.equal(retryAfterMs('99999'), 120_000);
  t.equal(retryAfterMs(undefined), null);
  t.equal(retryAfterMs('soon'), null);
});

t.test('the token bucket spends a rate budget and pauses for a 429', async (t) => {
  const b = new TokenBucket(20, 1);
  const t0 = Date.now();
  for (let i = 0; i < 5; i++) await b.take();
  t.ok(Date.now() - t0 >= 150, 'four refills at 20/s take at least 150 ms');
  b.pauseUntil(Date.now() + 300);
  const t1 = Date.now();
  await b.take();
  t.ok(Date.now() - t1 >= 250, 'a pause holds every taker');
});

t.test('REST: a 429 pauses for Retry-After then succeeds; 5xx retried; 4xx and bad JSON reported', async (t) => {
  const hits: Record<string, number> = {};
  const server = createServer((req, res) => {
    const path = req.url!.split('?')[0];
    hits[path] = (hits[path] ?? 0) + 1;
    if (path === '/limited' && hits[path] === 1) return res.writeHead(429, { 'retry-after': '1' }).end();
    if (path === '/flaky' && hits[path] < 3) return res.writeHead(503).end();
    if (path === '/missing') return res.writeHead(404).end('nope');
    if (path === '/garbage') return res.writeHead(200).end('{"trunc');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: path }));
  });
  const base = await listen(server);
  t.teardown(() => server.close());
  const errors: string[] = [];
  const rest = new RestClient({ baseUrl: base, ratePerS: 100, onAttemptError: (e) => errors.push(e.code) });
  const t0 = Date.now();
  t.same(await rest.getJson('/limited'), { ok: '/limited' });
  t.ok(Date.now() - t0 >= 900, 'waited for Retry-After');
  t.same(await rest.getJson('/flaky', { a: 1 }), { ok: '/flaky' });
  t.same(errors, ['http_429', 'http_5xx', 'http_5xx']);
  await t.rejects(rest.getJson('/missing'), { code: 'http_4xx' });
  t.equal(hits['/missing'], 1, 'a 4xx is not retried');
  const e = await rest.getJson('/garbage').catch((x: unknown) => x);
  t.ok(e instanceof RecorderError && e.code === 'malformed');
});

t.test('WebSocket: a closed connection is reported as disconnected and reopened', async (t) => {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((r) => wss.once('listening', r));
  t.teardown(() => wss.close());
  let connections = 0;
  wss.on('connection', (ws) => {
    connections++;
    ws.on('message', (m) => (m as Buffer).toString() === 'PING' && ws.send('PONG'));
    ws.send('hello');
    if (connections === 1) setTimeout(() => ws.close(), 100);
  });
  const port = (wss.address() as { port: number }).port;
  const downs: GapReason[] = [];
  const texts: string[] = [];
  const c = new WsConnection(
    {
      url: () => `ws://127.0.0.1:${port}`,
      onOpen: () => undefined,
      onText: (x) => texts.push(x),
      onDown: (r) => downs.push(r),
      onError: () => undefined,
    },
    { kind: 'test', pingText: 'PING', pongText: 'PONG', pingIntervalMs: 50, staleAfterMs: 10_000, backoffMinMs: 20, backoffMaxMs: 100 },
  );
  t.teardown(() => c.stop());
  c.start();
  t.ok(await waitFor(() => connections >= 2 && c.connected, 5000), 'reconnected');
  t.same(downs, ['disconnected']);
  t.same(
    texts.filter((x) => x === 'PONG'),
    [],
    'heartbeat answers are not passed on',
  );
  t.ok(texts.includes('hello'));
});

t.test('WebSocket: silence past the watchdog is a stale gap from the last message heard', async (t) => {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((r) => wss.once('listening', r));
  t.teardown(() => wss.close());
  let lastSent = 0;
  wss.on('connection', (ws) => {
    ws.send('only message');
    lastSent ||= Date.now();
  });
  const port = (wss.address() as { port: number }).port;
  const downs: Array<{ reason: GapReason; since: number; at: number }> = [];
  const c = new WsConnection(
    {
      url: () => `ws://127.0.0.1:${port}`,
      onOpen: () => undefined,
      onText: () => undefined,
      onDown: (reason, since, at) => downs.push({ reason, since, at }),
      onError: () => undefined,
    },
    { kind: 'test', pingText: 'PING', pongText: 'PONG', pingIntervalMs: 100, staleAfterMs: 400, backoffMinMs: 20, backoffMaxMs: 100 },
  );
  t.teardown(() => c.stop());
  c.start();
  t.ok(await waitFor(() => downs.length > 0, 5000));
  t.equal(downs[0].reason, 'stale');
  t.ok(downs[0].since <= downs[0].at - 350, 'the gap starts when the feed was last heard');
  t.ok(downs[0].since >= lastSent - 5, 'not before the message was sent');
});

t.test('WebSocket: a 429 upgrade waits for Retry-After before the next attempt', async (t) => {
  const attempts: number[] = [];
  const server = createServer();
  server.on('upgrade', (_req, socket) => {
    // The client may reset while refused (it is stopped mid-attempt): without a listener the
    // socket's ECONNRESET is an uncaught exception in this process.
    socket.on('error', () => socket.destroy());
    attempts.push(Date.now());
    socket.end('HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n');
  });
  const base = await listen(server);
  t.teardown(() => server.close());
  const errors: string[] = [];
  const c = new WsConnection(
    {
      url: () => base.replace('http', 'ws'),
      onOpen: () => undefined,
      onText: () => undefined,
      onDown: () => undefined,
      onError: (code) => errors.push(code),
    },
    { kind: 'test', pingIntervalMs: 100, staleAfterMs: 1000, backoffMinMs: 10, backoffMaxMs: 20 },
  );
  t.teardown(() => c.stop());
  c.start();
  t.ok(await waitFor(() => attempts.length >= 2, 5000));
  c.stop();
  t.ok(attempts[1] - attempts[0] >= 900, `second attempt after ${attempts[1] - attempts[0]} ms`);
  t.ok(errors.includes('http_429'));
});

// The request line written as text on serve's line buffer (plugins/request-log.ts, fastLine) is the
// line pino itself writes for the same fields: same keys in the same order, same values, one line
// per call, beside pino's own lines in the order they were logged; and what the buffer gathers
// reaches the destination when it fills, on flush and on flushSync.

import t from 'tap';
import { pino } from 'pino';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { LineBuffer, requestLog, type ByteDestination } from '../../src/api/plugins/request-log.js';

/** A destination that keeps what it is handed (as pino's sonic-boom would write it), as text. */
function capture(): { dest: ByteDestination; out: string[]; syncs: number[] } {
  const out: string[] = [];
  const syncs: number[] = [];
  return { out, syncs, dest: { write: (b: Buffer) => void out.push(b.toString('utf8')), flushSync: () => void syncs.push(out.length) } };
}

/** pino's own destination's shape, for a logger writing straight to a capture. */
function textCapture(): { dest: pino.DestinationStream; out: string[] } {
  const out: string[] = [];
  return { out, dest: { write: (s: string) => void out.push(s) } };
}

const req = (id: string, url: string, key: string | null, ip: string | undefined): FastifyRequest =>
  ({ id, method: 'GET', url, apiKey: key === null ? undefined : { id: key }, socket: { remoteAddress: ip } }) as unknown as FastifyRequest;
const reply = (statusCode: number): FastifyReply => ({ statusCode }) as FastifyReply;

t.test("the text line equals pino's own line for the same fields", async (t) => {
  const fast = capture();
  const buffer = new LineBuffer(fast.dest);
  const fastLog = pino({ level: 'info' }, buffer);
  const slow = textCapture();
  const slowLog = pino({ level: 'info' }, slow.dest);
  const cases: [FastifyRequest, number, number][] = [
    [req('req-1', '/v3/btc/markets/x/orderbook/latest?depth=5', 'k1', '127.0.0.1'), 200, 0.1234],
    [req('req-2', '/v3/coverage?api_key=pmt_0123456789ab_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', null, '::1'), 401, 0],
    [req('req-3', '/v3/"quoted"\\path\u0001é', null, undefined), 404, 12.5],
  ];
  const f = requestLog(fastLog)!;
  const s = requestLog({ level: 'info', info: (o: object, m: string) => slowLog.info(o, m) } as unknown as FastifyBaseLogger)!;
  for (const [r, status, ms] of cases) {
    f(r, reply(status), ms);
    s(r, reply(status), ms);
  }
  buffer.flushSync();
  const fastLines = fast.out.join('').split('\n').filter(Boolean);
  const slowLines = slow.out.join('').split('\n').filter(Boolean);
  t.equal(fastLines.length, 3, 'one line per request');
  const noTime = (l: string): string => l.replace(/"time":\d+/, '"time":0');
  t.same(fastLines.map(noTime), slowLines.map(noTime), 'byte for byte, but for the time');
  t.notOk(fastLines.join('\n').includes('AAAAAAAA'), 'a key in the URL is redacted on this path too');
});

t.test('lines stay byte for byte when their parts repeat, are too long to keep, or overflow what is kept', async (t) => {
  const fast = capture();
  const buffer = new LineBuffer(fast.dest);
  const f = requestLog(pino({ level: 'info' }, buffer))!;
  const slow = textCapture();
  const slowLog = pino({ level: 'info' }, slow.dest);
  const s = requestLog({ level: 'info', info: (o: object, m: string) => slowLog.info(o, m) } as unknown as FastifyBaseLogger)!;
  const secret = 'pmt_0123456789ab_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
  const cases: [FastifyRequest, number, number][] = [];
  const method = (r: FastifyRequest, m: string): FastifyRequest => Object.assign(r, { method: m });
  for (let round = 0; round < 3; round++) {
    // The same URL, key and address again and again (their parts are kept after the first line).
    cases.push([req(`a${round}`, '/v3/btc/markets/x/orderbook/latest', 'k1', '127.0.0.1'), 200, 0.004 + round]);
    // A key in the query or the path: redacted on every line, never kept with the key in it.
    cases.push([req(`b${round}`, `/v3/coverage?limit=5&api_key=${secret}`, null, '::1'), 401, 0]);
    cases.push([req(`c${round}`, `/v3/${secret}/x`, null, '10.0.0.1'), 404, 1 / 3]);
    // Another method on the same URL, another status and key, no address, no key.
    cases.push([method(req(`d${round}`, '/v3/btc/markets/x/orderbook/latest', 'k2', undefined), 'HEAD'), 429, 99.999]);
    cases.push([req(`e${round}`, '/v3/btc/markets/x/orderbook/latest', null, '127.0.0.1'), 500, 1234.5678]);
    // Too long to keep (made per line), and escapes.
    cases.push([req(`f${round}`, `/v3/markets?q=${'x'.repeat(300)}"\\\u0002`, 'k1', '127.0.0.1'), 400, 0.1]);
  }
  // More distinct URLs than are kept: the map is emptied and filled again.
  for (let i = 0; i < 1100; i++) cases.push([req(`g${i}`, `/v3/markets/${i % 700}`, i % 2 ? 'k1' : null, `10.0.${i % 3}.1`), 200, i / 7]);
  for (const [r, status, ms] of cases) {
    f(r, reply(status), ms);
    s(r, reply(status), ms);
  }
  buffer.flushSync();
  const noTime = (l: string): string => l.replace(/"time":\d+/, '"time":0');
  const fastLines = fast.out.join('').split('\n').filter(Boolean).map(noTime);
  const slowLines = slow.out.join('').split('\n').filter(Boolean).map(noTime);
  t.equal(fastLines.length, cases.length, 'one line per request');
  t.same(fastLines, slowLines, 'byte for byte, but for the time');
  t.notOk(fastLines.join('\n').includes('BBBBBBBB'), 'a key in the URL is redacted on every line');
  t.equal(fastLines.filter((l) => l.includes('"url":"/v3/[redacted]/x"')).length, 3, 'the key in the path, three times');
});

t.test("a child logger's bindings (start's `part`) are in the line, byte for byte", async (t) => {
  const fast = capture();
  const buffer = new LineBuffer(fast.dest);
  const f = requestLog(pino({ level: 'info' }, buffer).child({ part: 'api' }))!;
  const slow = textCapture();
  const slowLog = pino({ level: 'info' }, slow.dest).child({ part: 'api' });
  const s = requestLog({ level: 'info', info: (o: object, m: string) => slowLog.info(o, m) } as unknown as FastifyBaseLogger)!;
  for (let i = 0; i < 3; i++) {
    for (const [r, status] of [
      [req(`p${i}`, '/v3/btc/markets/x/orderbook/latest', 'k1', '127.0.0.1'), 200],
      [req(`q${i}`, '/healthz', null, '127.0.0.1'), 200],
    ] as const) {
      f(r, reply(status), i);
      s(r, reply(status), i);
    }
  }
  buffer.flushSync();
  const noTime = (l: string): string => l.replace(/"time":\d+/, '"time":0');
  const fastLines = fast.out.join('').split('\n').filter(Boolean).map(noTime);
  t.equal(fastLines.length, 6);
  t.same(fastLines, slow.out.join('').split('\n').filter(Boolean).map(noTime));
  t.ok(fastLines.every((l) => l.includes('"part":"api"')));
});

t.test("pino's own lines and request lines keep their order; the buffer hands over when full, on flush and at exit", async (t) => {
  const c = capture();
  const lines = new LineBuffer(c.dest);
  const log = pino({ level: 'info' }, lines);
  const rl = requestLog(log)!;
  log.warn('first');
  rl(req('r1', '/a', null, '127.0.0.1'), reply(200), 1);
  log.error('third');
  t.same(c.out, [], 'nothing handed over below the buffer size');
  lines.flush();
  t.same(
    c.out
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { msg: string }).msg),
    ['first', 'request', 'third'],
    'in the order logged',
  );
  for (let i = 0; i < 1000; i++) rl(req(`r${i}`, '/b', null, '127.0.0.1'), reply(200), 1);
  t.ok(c.out.length > 1, 'a full buffer is handed over without a flush');
  lines.flushSync();
  t.equal(c.syncs.length, 1, 'flushSync reaches the destination');
  t.equal(c.out.join('').split('\n').filter(Boolean).length, 1003, 'every line handed over');
});

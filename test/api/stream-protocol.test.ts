// The stream's wire pieces on their own: client message parsing (resume points, aliases, strict
// fields) and prepared frames, checked by a real ws client parsing them off a real socket.

import t from 'tap';
import type { Socket } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { parseClientMessage, prepareMessage } from '../../src/api/stream/protocol.js';

const base = { op: 'subscribe', id: 1, channel: 'book', family: 'coin', coin: 'BTC', market_id: 'm' };
const parse = (o: unknown): ReturnType<typeof parseClientMessage> => parseClientMessage(JSON.stringify(o));

t.test('resume points: a time, a cursor, or after a seq', async (t) => {
  t.match(parse(base), { ok: true, req: { coin: 'btc', market: 'm', from: { kind: 'live' } } });
  t.match(parse({ ...base, from: 1_700_000_000_000 }), { ok: true, req: { from: { kind: 'time', t: 1_700_000_000_000 } } });
  t.match(parse({ ...base, from: '2026-07-26T12:00:00.123Z' }), {
    ok: true,
    req: { from: { kind: 'time', t: Date.parse('2026-07-26T12:00:00.123Z') } },
  });
  t.match(parse({ ...base, from: '1700000000000' }), { ok: true, req: { from: { kind: 'time', t: 1_700_000_000_000 } } });
  t.match(parse({ ...base, from: 'eyJx.abc' }), { ok: true, req: { from: { kind: 'cursor', text: 'eyJx.abc' } } });
  t.match(parse({ ...base, after_seq: 0 }), { ok: true, req: { from: { kind: 'seq', after: 0 } } });
  t.match(parse({ ...base, after_seq: 5, from: 3 }), { ok: false, id: 1, error: { code: 'invalid_parameter', message: /after_seq/ } });
  t.match(parse({ ...base, op: 'unsubscribe', after_seq: 5 }), { ok: false, error: { message: /only applies to subscribe/ } });
  t.match(parse({ ...base, from: {} }), { ok: false, error: { message: /'from'/ } });
});

t.test('families name markets their own way', async (t) => {
  const yn = { op: 'subscribe', id: 'x', channel: 'book', family: 'yesno-exchange' };
  t.match(parse({ ...yn, ticker: 'KX-1' }), { ok: true, req: { market: 'KX-1', coin: undefined } });
  t.match(parse({ ...yn, market_id: 'KX-1' }), { ok: true, req: { market: 'KX-1' } });
  t.match(parse({ ...yn, ticker: 'A', market_id: 'B' }), { ok: false, id: 'x', error: { message: /give one/ } });
  t.match(parse(yn), { ok: false, error: { message: /'ticker' is required/ } });
  t.match(parse({ ...yn, ticker: 'A', coin: 'btc' }), { ok: false, error: { message: /'coin' is not a field/ } });
  t.match(parse({ op: 'subscribe', id: 2, channel: 'book', family: 'wallet-prediction', market_id: 'w', outcome: 'Down' }), {
    ok: true,
    req: { outcome: 'Down' },
  });
  t.match(parse({ ...base, market_id: 'x'.repeat(600) }), { ok: false, error: { message: /at most 512/ } });
  t.match(parse({ ...base, id: { a: 1 } }), { ok: false, id: null, error: { message: /'id'/ } });
});

t.test('prepared frames of every length class parse in a real ws client', async (t) => {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  t.teardown(() => wss.close());
  await new Promise((r) => wss.once('listening', r));
  const sizes = [5, 125, 126, 65535, 65536, 200_000];
  const payloads = sizes.map((n) => JSON.stringify({ pad: 'é'.repeat(Math.max(0, Math.floor((n - 10) / 2))) }));
  wss.on('connection', (ws) => {
    const sock = (ws as unknown as { _socket: Socket })._socket;
    for (const p of payloads) sock.write(prepareMessage(p).frame);
  });
  const port = (wss.address() as { port: number }).port;
  const client = new WebSocket(`ws://127.0.0.1:${port}`);
  t.teardown(() => client.terminate());
  const got: string[] = [];
  await new Promise<void>((resolve, reject) => {
    client.on('message', (d, isBinary) => {
      t.notOk(isBinary, 'a text frame');
      got.push((d as Buffer).toString());
      if (got.length === payloads.length) resolve();
    });
    client.on('error', reject);
  });
  t.same(got, payloads, 'every payload arrives intact, in order');
});

// A slow client paces `/v3/replay`: while the client's socket is paused, the server stops writing
// (its send buffer stays small and what it wrote stays far below the whole answer), and the stream
// completes intact once the client reads again. Memory is flat because nothing buffers the range.

import t from 'tap';
import http from 'node:http';
import type { Socket } from 'node:net';
import { bookRecords, catalog, coinMarket, tmpDataDir, writeLog, T0 } from './helpers.js';
import { coinMarket2, startReplayServer } from './replay-helpers.js';
import { sleep } from './stream-helpers.js';

t.test('a paused client stops the server, which then finishes the stream', async (t) => {
  const dir = tmpDataDir(t);
  let expectedLines = 0;
  for (const [m, tokens, seed] of [
    [coinMarket, ['1111', '2222'], 3],
    [coinMarket2, ['3333', '4444'], 4],
  ] as const) {
    await writeLog(dir, 'coin', 'catalog', m.market_id, [catalog(m, T0 - 1000)]);
    const recs = bookRecords([...tokens], { start: T0, n: 20_000, stepMs: 20, cpEvery: 500, seed });
    await writeLog(dir, 'coin', 'books', m.market_id, recs);
    // Each book or delta makes a book and a book_change line; each checkpoint a book_change line.
    expectedLines +=
      recs.filter((r) => r.type === 'book' || r.type === 'book_delta').length * 2 + recs.filter((r) => r.type === 'book_checkpoint').length;
  }
  const s = await startReplayServer(t, dir);
  const sockets: Socket[] = [];
  s.app.server.on('connection', (sock: Socket) => sockets.push(sock));
  const path = `/v3/replay?family=coin&coin=btc&start_time=${T0}&end_time=${T0 + 600_000}&types=book,book_change`;

  const before = sockets.length;
  let received = 0;
  let text = '';
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    http.get(s.base + path, { headers: { authorization: `Bearer ${s.keys.free}` } }, resolve).on('error', reject);
  });
  res.setEncoding('utf8');
  await new Promise<void>((resolve) => {
    const onData = (c: string): void => {
      received += Buffer.byteLength(c);
      text += c;
      if (received >= 200_000) {
        res.pause();
        res.off('data', onData);
        resolve();
      }
    };
    res.on('data', onData);
  });
  const server = sockets[before];
  t.ok(server, 'the server side of the connection');
  // Wait (bounded) until the server stops writing: its byte count does not move for a second.
  let last = -1;
  let still = 0;
  for (let i = 0; i < 300 && still < 10; i++) {
    await sleep(100);
    const w = server.bytesWritten;
    still = w === last ? still + 1 : 0;
    last = w;
  }
  t.equal(still, 10, 'the server stopped writing while the client is paused');
  t.ok(server.writableLength < 1e6, `the server holds ${server.writableLength} bytes unsent (no buffering of the answer)`);
  const writtenWhilePaused = server.bytesWritten;

  res.on('data', (c: string) => (text += c));
  const ended = new Promise<void>((resolve) => res.on('end', () => resolve()));
  res.resume();
  await ended;
  const total = Buffer.byteLength(text);
  t.ok(total > 20e6, `the whole answer is ${(total / 1e6).toFixed(1)} MB`);
  t.ok(
    writtenWhilePaused < total / 2,
    `the server had written ${(writtenWhilePaused / 1e6).toFixed(1)} MB (most of it in kernel buffers) when it stopped`,
  );
  const lines = text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; market_id: string; seq: number });
  t.equal(lines.pop()!.type, 'end', 'the stream completes once the client reads again');
  t.equal(lines.length, expectedLines, 'every line is there');
  const lastSeq = new Map<string, number>();
  let ordered = true;
  for (const l of lines) {
    if ((lastSeq.get(l.market_id) ?? -1) > l.seq) ordered = false;
    lastSeq.set(l.market_id, l.seq);
  }
  t.ok(ordered, 'each market in seq order');
});

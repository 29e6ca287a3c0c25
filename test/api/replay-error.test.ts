// A storage failure after `/v3/replay` has started ends the stream with one `error` line (the
// envelope), after complete lines only; once the data is readable again, resuming after the last
// good line gives exactly the rest of an undisturbed run.

import t from 'tap';
import http from 'node:http';
import { mkdirSync, renameSync, rmdirSync } from 'node:fs';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';
import { logFilePath } from '../../src/storage/testing.js';
import { bookRecords, catalog, coinMarket, tmpDataDir, writeLog } from './helpers.js';
import { get, startReplayServer, tokenOf } from './replay-helpers.js';

t.test('a read failure mid-stream is a last error line, and the stream resumes after it', async (t) => {
  const dir = tmpDataDir(t);
  const d2 = utcDay(Date.now() - 2 * DAY_MS);
  const t0 = dayStartMs(d2)! - 30_000;
  const id = coinMarket.market_id;
  await writeLog(dir, 'coin', 'catalog', id, [catalog(coinMarket, t0 - 1000)]);
  await writeLog(dir, 'coin', 'books', id, bookRecords(['1111', '2222'], { start: t0, n: 20_000, stepMs: 1 }));
  await writeLog(dir, 'coin', 'books', id, bookRecords(['1111', '2222'], { start: t0 + 40_000, n: 500, stepMs: 10 }));
  const s = await startReplayServer(t, dir);
  const path = `/v3/replay?family=coin&market_id=${id}&start_time=${t0}&end_time=${t0 + 60_000}`;
  const full = (await get(s.base, path, s.keys.free)).text.trim().split('\n').slice(0, -1);

  // Read a little, pause, make the second day's log unreadable (a folder in its place), read on.
  const file = logFilePath(dir, { family: 'coin', stream: 'books', market: id }, d2);
  const res = await new Promise<http.IncomingMessage>((ok) =>
    http.get(s.base + path, { headers: { authorization: `Bearer ${s.keys.free}` } }, ok),
  );
  t.equal(res.statusCode, 200);
  let text = '';
  res.setEncoding('utf8');
  await new Promise<void>((ok) => {
    const on = (c: string): void => {
      text += c;
      if (text.length > 100_000) {
        res.pause();
        res.off('data', on);
        ok();
      }
    };
    res.on('data', on);
  });
  renameSync(file, `${file}.away`);
  mkdirSync(file);
  res.on('data', (c: string) => (text += c));
  const ended = new Promise((ok) => res.on('end', ok));
  res.resume();
  await ended;
  const lines = text.trim().split('\n');
  const last = JSON.parse(lines.pop()!);
  t.match(last, { type: 'error', error: { status: 500, code: 'internal', message: /resume/, request_id: String } });
  t.ok(lines.length > 1000 && lines.every((l) => JSON.parse(l).type === 'book'), `${lines.length} complete lines before it`);
  t.same(lines, full.slice(0, lines.length), "the lines before the error are the run's own");

  rmdirSync(file);
  renameSync(`${file}.away`, file);
  const rest = (await get(s.base, `${path}&after=${tokenOf(JSON.parse(lines[lines.length - 1]))}`, s.keys.free)).text
    .trim()
    .split('\n')
    .slice(0, -1);
  t.equal([...lines, ...rest].join('\n'), full.join('\n'), 'resumed after the last good line: the whole run');
});

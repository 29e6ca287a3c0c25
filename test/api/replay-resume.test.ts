// Resuming `/v3/replay`: a client that drops the connection mid-stream continues with `after` (a
// token built from its last complete line) and gets exactly the rest, none twice and none skipped;
// and a replay reads the same over open logs, a compacted day, and both at once.

import t from 'tap';
import { compactDay, deleteExpiredLogs, listDays } from '../../src/storage/testing.js';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';
import { bookRecords, catalog, coinMarket, tmpDataDir, writeLog } from './helpers.js';
import { coinMarket2, get, iso, readPartly, seedReplay, startReplayServer, T0, tokenOf } from './replay-helpers.js';

const TYPES = 'book,book_change,trade,gap,book_snapshot_2_1s,book_snapshot_3_1m';

const dataLines = (text: string): string[] => {
  const lines = text.split('\n').filter((l) => l !== '');
  const last = JSON.parse(lines[lines.length - 1]);
  if (last.type !== 'end') throw new Error(`no end line: ${lines[lines.length - 1]}`);
  return lines.slice(0, -1);
};

t.test('resume after a dropped connection gives exactly the rest', async (t) => {
  const dir = tmpDataDir(t);
  await seedReplay(dir);
  const s = await startReplayServer(t, dir);
  const path = `/v3/replay?family=coin&market_id=540817,${coinMarket2.market_id}&start_time=${iso(T0 + 1_500)}&end_time=${iso(T0 + 130_000)}&types=${TYPES}`;
  const full = await get(s.base, path, s.keys.paid);
  const lines = dataLines(full.text);
  t.ok(lines.length > 1000 && full.text.length > 300_000, `${lines.length} lines, ${full.text.length} bytes`);
  t.match(JSON.parse(lines[0]), { type: 'book_change', receive_time: iso(T0 + 1_500) }, 'the opening state comes first');

  for (const frac of [0.05, 0.41, 0.77]) {
    const got = await readPartly(s.base, path, s.keys.paid, Math.floor(full.text.length * frac));
    t.ok(got.length > 10);
    const rest = await get(s.base, `${path}&after=${tokenOf(JSON.parse(got[got.length - 1]))}`, s.keys.paid);
    t.equal(
      [...got, ...dataLines(rest.text)].join('\n'),
      lines.join('\n'),
      `cut at ${Math.round(frac * 100)}%: received + resumed = one full run`,
    );
  }

  // Every kind of line is a resume point: the opening state, ties, interval samples, gaps.
  const picks = [0, 1, 2, ...Array.from({ length: 12 }, (_, k) => Math.floor(((k + 1) * lines.length) / 13))];
  for (const kind of ['book_snapshot_2_1s', 'gap', 'trade']) picks.push(lines.findIndex((l) => l.includes(`"type":"${kind}"`)));
  t.notOk(picks.includes(-1), 'every kind of line is there');
  for (const i of picks) {
    const rest = await get(s.base, `${path}&after=${tokenOf(JSON.parse(lines[i]))}`, s.keys.paid);
    t.same(dataLines(rest.text), lines.slice(i + 1), `after line ${i} (${JSON.parse(lines[i]).type})`);
  }

  const end = JSON.parse(full.text.trim().split('\n').pop()!);
  t.equal(end.next, tokenOf(JSON.parse(lines[lines.length - 1])), "the end token is the last line's position");
  const again = await get(s.base, `${path}&after=${end.next}`, s.keys.paid);
  t.same(again.lines, [{ type: 'end', next: end.next, markets: end.markets }], 'resuming at the end: nothing more, the same token');
});

t.test('the same bytes over open logs, a compacted day, and after its logs are deleted', async (t) => {
  const dir = tmpDataDir(t);
  // Two closed days: the first is compacted, the second stays a log, and the replay spans midnight.
  const d1 = utcDay(Date.now() - 3 * DAY_MS);
  const d2 = utcDay(Date.now() - 2 * DAY_MS);
  const t0 = dayStartMs(d2)! - 60_000;
  const m1 = { ...coinMarket, start_time: t0 };
  const m2 = { ...coinMarket2, start_time: t0 };
  await writeLog(dir, 'coin', 'catalog', m1.market_id, [catalog(m1, t0 - 1000)]);
  await writeLog(dir, 'coin', 'catalog', m2.market_id, [catalog(m2, t0 - 1000)]);
  await writeLog(
    dir,
    'coin',
    'books',
    m1.market_id,
    bookRecords(['1111', '2222'], { start: t0, n: 480, stepMs: 250, cpEvery: 50, gapAt: t0 + 50_000, gapMs: 20_000, trades: true }),
  );
  await writeLog(
    dir,
    'coin',
    'books',
    m2.market_id,
    bookRecords(['3333', '4444'], { start: t0, n: 400, stepMs: 300, cpEvery: 40, seed: 5, trades: true }),
  );
  t.same(await listDays(dir, { family: 'coin', stream: 'books', market: m1.market_id }), [d1, d2]);
  const s = await startReplayServer(t, dir);
  const path = `/v3/replay?family=coin&coin=btc&start_time=${t0 + 10_000}&end_time=${t0 + 125_000}&types=${TYPES}`;
  const logs = await get(s.base, path, s.keys.free);
  const lines = dataLines(logs.text);
  t.ok(
    lines.some((l) => JSON.parse(l).receive_time < `${d2}`) && lines.some((l) => JSON.parse(l).receive_time > `${d2}`),
    'the replay spans both days',
  );
  t.ok(
    lines.some((l) => l.includes('"book_snapshot_3_1m"')),
    'minute buckets present',
  );
  const mid = lines.findIndex((l) => JSON.parse(l).receive_time.startsWith(d1)) + 200;

  await compactDay(dir, d1);
  const compacted = await get(s.base, path, s.keys.free);
  t.equal(compacted.text, logs.text, 'compacted day (logs kept) + open log: same bytes');

  const ret = await deleteExpiredLogs(dir, Date.now(), 0);
  t.ok(ret.deleted.length >= 2, 'the compacted logs are gone');
  t.same(await listDays(dir, { family: 'coin', stream: 'books', market: m1.market_id }), [d2], 'the second day is still a log');
  const parquet = await get(s.base, path, s.keys.free);
  t.equal(parquet.text, logs.text, 'day from Parquet + day from its log: same bytes');
  const rest = await get(s.base, `${path}&after=${tokenOf(JSON.parse(lines[mid]))}`, s.keys.free);
  t.same(dataLines(rest.text), lines.slice(mid + 1), 'a position read from the logs resumes over Parquet');
});

t.test('without end_time the replay stops a second ago, and its end token tails what is recorded next', async (t) => {
  const dir = tmpDataDir(t);
  const now = Date.now();
  const m = { ...coinMarket, market_id: 'tail-1', start_time: now - 120_000 };
  await writeLog(dir, 'coin', 'catalog', m.market_id, [catalog(m, now - 120_000)]);
  await writeLog(
    dir,
    'coin',
    'books',
    m.market_id,
    bookRecords(['1111', '2222'], { start: now - 60_000, n: 40, stepMs: 1000, cpEvery: 10 }),
  );
  const s = await startReplayServer(t, dir);
  const path = `/v3/replay?family=coin&market_id=tail-1&start_time=${now - 60_000}&types=book`;
  const first = await get(s.base, path, s.keys.free);
  const lines = dataLines(first.text);
  t.equal(lines.length, 42, 'every book recorded so far');
  const next = JSON.parse(first.text.trim().split('\n').pop()!).next;

  const later = Date.now();
  await writeLog(dir, 'coin', 'books', m.market_id, [
    { type: 'book_delta', token_id: '1111', changes: [{ side: 'bid', price: '0.10', size: '5' }], recv_ts: later, source_ts: null },
  ]);
  const soon = await get(s.base, `${path}&after=${next}`, s.keys.free);
  t.ok(Date.now() - later >= 1000 || dataLines(soon.text).length === 0, 'a record younger than a second is not served yet');
  // Bounded wait on the condition (not a fixed sleep): the record shows up once it is a second old.
  let tail: string[] = [];
  for (let i = 0; i < 100 && tail.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    tail = dataLines((await get(s.base, `${path}&after=${next}`, s.keys.free)).text);
  }
  t.equal(tail.length, 1, 'the next request continues with exactly the new book');
  const line = JSON.parse(tail[0]);
  t.match(line, { type: 'book', market_id: 'tail-1', receive_time: iso(later) });
  t.ok(
    line.data.books[0].bids.some(([p, q]: number[]) => p === 0.1 && q === 5),
    'with the new level',
  );
});

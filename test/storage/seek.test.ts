// Seeks against the obvious answer: on randomized logs (equal times, big and small frames, day
// files, checkpoints), every index-based lookup must agree with a linear scan of all records,
// including probes before the first and after the last record.

import t from 'tap';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openReader, openWriter, type LogKey, type Position, type ReadItem } from '../../src/storage/index.js';
import { book, trade } from './helpers/records.js';

const key: LogKey = { family: 'wallet-prediction', stream: 'books', market: '0xabc/seek test' };
const MIDNIGHT = Date.UTC(2026, 4, 1);

const logSpec = fc.record({
  start: fc.integer({ min: MIDNIGHT - 60_000, max: MIDNIGHT + 60_000 }),
  recs: fc.array(
    fc.record({
      dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 }), fc.constant(2 * 86_400_000)),
      levels: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 60 })),
      checkpoint: fc.boolean().map((b) => b && Math.random() < 0.2),
    }),
    { minLength: 1, maxLength: 400 },
  ),
  probes: fc.array(fc.double({ min: -0.1, max: 1.1, noNaN: true }), { minLength: 5, maxLength: 30 }),
});

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

t.test('seekTime, seekSeq, checkpointAtOrBefore and both read directions agree with a linear scan', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'pmtape-seek-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  let run = 0;
  await fc.assert(
    fc.asyncProperty(logSpec, async ({ start, recs, probes }) => {
      const dir = join(root, String(run++));
      const w = await openWriter(dir, key, { fsyncIntervalMs: 0 });
      let ts = start;
      const ps = recs.map((r, i) => {
        ts += r.dt;
        return w.append(r.levels > 0 ? book(ts, i + 1, r.levels) : trade(ts, i + 1), { checkpoint: r.checkpoint });
      });
      await Promise.all(ps);
      await w.close();
      const reader = openReader(dir, key);
      const items: ReadItem[] = await all(reader.read('start'));
      if (items.length !== recs.length) throw new Error(`read ${items.length} of ${recs.length}`);
      const first = items[0].rec.recv_ts;
      const last = items[items.length - 1].rec.recv_ts;
      const times = [first - 1, last + 1, first, last, ...probes.map((p) => Math.round(first + p * (last - first)))];
      for (let i = 0; i < 5; i++) times.push(items[Math.floor(Math.random() * items.length)].rec.recv_ts);
      for (const tm of times) {
        const want = items.find((it) => it.rec.recv_ts >= tm)?.pos ?? null;
        const got = await reader.seekTime(tm);
        if (JSON.stringify(got) !== JSON.stringify(want))
          throw new Error(`seekTime(${tm}): ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
        const cps = items.filter((it) => recs[it.rec.seq - 1].checkpoint && it.rec.recv_ts <= tm);
        const cp = await reader.checkpointAtOrBefore(tm);
        if ((cp?.rec.seq ?? null) !== (cps.length ? cps[cps.length - 1].rec.seq : null)) throw new Error(`checkpointAtOrBefore(${tm})`);
      }
      for (const s of [0, 1, items.length, items.length + 1, 1 + Math.floor(Math.random() * items.length)]) {
        const want = items.find((it) => it.rec.seq >= s)?.pos ?? null;
        if (JSON.stringify(await reader.seekSeq(s)) !== JSON.stringify(want)) throw new Error(`seekSeq(${s})`);
      }
      // Backward from a random position (and from the end) with a limit and a start time.
      const k = Math.floor(Math.random() * items.length);
      const from: Position = items[k].pos;
      const lim = 1 + Math.floor(Math.random() * 50);
      const back = await all(reader.readBackward(from, { limit: lim }));
      const wantBack = items.slice(Math.max(0, k - lim), k).reverse();
      if (JSON.stringify(back.map((b) => b.pos)) !== JSON.stringify(wantBack.map((b) => b.pos)))
        throw new Error(`readBackward(${k}, ${lim})`);
      const startTime = items[Math.floor(Math.random() * items.length)].rec.recv_ts;
      const tail = await all(reader.readBackward('end', { startTime }));
      const wantTail = items.filter((it) => it.rec.recv_ts >= startTime).reverse();
      if (tail.length !== wantTail.length || tail.some((x, i) => x.rec.seq !== wantTail[i].rec.seq))
        throw new Error('readBackward(end, startTime)');
      // Forward from a position with an end time and a limit.
      const endTime = items[Math.floor(Math.random() * items.length)].rec.recv_ts;
      const fwd = await all(reader.read(from, { endTime, limit: lim }));
      const wantFwd = items
        .slice(k)
        .filter((it) => it.rec.recv_ts < endTime)
        .slice(0, lim);
      const stopIdx = items.slice(k).findIndex((it) => it.rec.recv_ts >= endTime);
      const wantFwd2 = (stopIdx < 0 ? items.slice(k) : items.slice(k, k + stopIdx)).slice(0, lim);
      if (JSON.stringify(fwd.map((x) => x.rec.seq)) !== JSON.stringify(wantFwd2.map((x) => x.rec.seq)))
        throw new Error('read(from, endTime, limit)');
      // Receive times never go backwards, so "all before endTime" and "up to the first at endTime" agree.
      if (JSON.stringify(fwd.map((x) => x.pos)) !== JSON.stringify(wantFwd.map((x) => x.pos)))
        throw new Error('read(from, endTime, limit) vs filter');
      // One pass with warm-up: from the newest checkpoint before the first record at/after a time.
      const rt = times[Math.floor(Math.random() * times.length)];
      const si = items.findIndex((it) => it.rec.recv_ts >= rt);
      let from0 = si < 0 ? -1 : 0;
      for (let i = 0; i < si; i++) if (recs[items[i].rec.seq - 1].checkpoint) from0 = i;
      const rest = from0 < 0 ? [] : items.slice(from0);
      const stopAt = rest.findIndex((it) => it.rec.recv_ts >= endTime);
      const wantR = stopAt < 0 ? rest : rest.slice(0, stopAt);
      const gotR = await all(reader.replay({ time: rt }, { warmup: true, until: endTime }));
      if (JSON.stringify(gotR.map((x) => [x.pos, x.warmup])) !== JSON.stringify(wantR.map((x, i) => [x.pos, from0 + i < si]))) {
        throw new Error(`replay({ time: ${rt} }, warmup, until ${endTime})`);
      }
      const latest = await reader.latest();
      if (latest?.rec.seq !== items.length) throw new Error('latest');
      if (JSON.stringify(await reader.latestPosition()) !== JSON.stringify(latest.pos)) throw new Error('latestPosition');
      if ((await reader.first())?.rec.seq !== 1) throw new Error('first');
      rmSync(dir, { recursive: true, force: true });
    }),
    { numRuns: 25 },
  );
  t.pass('25 random logs agreed on every probe');
});

t.test('an empty or absent log answers null and empty everywhere', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-empty-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = openReader(dir, key);
  t.equal(await r.seekTime(0), null);
  t.equal(await r.seekSeq(1), null);
  t.equal(await r.latest(), null);
  t.equal(await r.first(), null);
  t.equal(await r.checkpointAtOrBefore(Date.now()), null);
  t.same(await all(r.read('start')), []);
  t.same(await all(r.readBackward('end')), []);
  await (await openWriter(dir, key)).close();
  t.same(await r.days(), [], 'opening a writer creates no day file until a record arrives');
  t.equal(await r.latest(), null);
});

t.test('a position whose frame no longer matches falls back to its seq', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-pos-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const w = await openWriter(dir, key, { fsyncIntervalMs: 0 });
  await Promise.all(Array.from({ length: 50 }, (_, i) => w.append(trade(MIDNIGHT + i, i + 1))));
  await w.close();
  const r = openReader(dir, key);
  const pos = (await r.seekSeq(20))!;
  const wrong = { ...pos, offset: pos.offset + 3 };
  const got = await all(r.read(wrong, { limit: 2 }));
  t.same(
    got.map((x) => x.rec.seq),
    [20, 21],
    'reading from a bad offset resumes at the seq it names',
  );
  t.same(
    (await all(r.read({ day: '2099-01-01', offset: 0, seq: 45 }, { limit: 1 }))).map((x) => x.rec.seq),
    [45],
  );
  t.same(await all(r.read({ day: '2026-05-01', offset: 0, seq: 51 })), [], 'a seq past the end reads nothing');
});

t.test('a reader that cached a day file sees records appended after, through the growing index', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-grow-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const w = await openWriter(dir, key, { fsyncIntervalMs: 0 });
  t.teardown(() => w.close());
  const r = openReader(dir, key);
  let n = 0;
  for (let round = 0; round < 5; round++) {
    await Promise.all(
      Array.from({ length: 300 }, () => {
        n++;
        return w.append(n % 3 ? trade(MIDNIGHT + n, n) : book(MIDNIGHT + n, n, 30), { checkpoint: n % 97 === 0 });
      }),
    );
    t.equal((await r.seekTime(MIDNIGHT + n))?.seq, n, `round ${round}: the newest record is found by time`);
    t.equal((await r.seekSeq(n - 150))?.seq, n - 150, 'and by seq');
    t.equal((await r.latest())?.rec.seq, n, 'latest is the newest');
    t.equal((await r.checkpointAtOrBefore(MIDNIGHT + n))?.rec.seq, Math.floor(n / 97) * 97, 'the newest checkpoint');
  }
});

t.test('latest and latestPosition follow a live log of today, then a newer day, through one reader', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-latest-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = openReader(dir, key);
  t.equal(await r.latestPosition(), null, 'nothing yet');
  // Two past days (the reader lists days each time), then today (the reader checks today's file alone).
  const past = Date.now() - 3 * 86_400_000;
  const w = await openWriter(dir, key, { fsyncIntervalMs: 0 });
  t.teardown(() => w.close());
  let n = 0;
  const put = async (ts: number, count: number): Promise<void> => {
    for (let i = 0; i < count; i++) {
      n++;
      await w.append(i % 2 ? trade(ts + i, n) : book(ts + i, n, 5));
    }
  };
  await put(past, 5);
  t.equal((await r.latest())?.rec.seq, n, 'the newest record of a past day');
  await put(past + 86_400_000, 5);
  t.equal((await r.latestPosition())?.seq, n, 'a newer past day is found');
  // Times of today that only grow (not the wall clock: two rounds within 2 ms would go backwards).
  let today = Date.now();
  for (let round = 0; round < 4; round++) {
    await put(today, 3);
    today += 3;
    const pos = await r.latestPosition();
    const item = await r.latest();
    t.equal(pos?.seq, n, `round ${round}: latestPosition is the newest`);
    t.same(pos, item?.pos, 'and the position of latest()');
    t.equal(item?.rec.seq, n, 'latest() reads that record');
  }
});

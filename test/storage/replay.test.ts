// The one-pass read: LogView.replay over a compacted Parquet day and the open log of today, from a
// time and from a seq, with and without warm-up from a checkpoint, stopped early, over empty
// ranges; and every page kind of the API plans the market's days exactly once.

import t from 'tap';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  listDays,
  logFilePath,
  openReader,
  openWriter,
  type LogKey,
  type ReadItem,
  type RecordChunk,
  type ReplayItem,
} from '../../src/storage/testing.js';
import { compactDay } from '../../src/storage/compaction/compact-day.js';
import { deleteExpiredLogs } from '../../src/storage/compaction/retention.js';
import { CompositeReader } from '../../src/storage/read/composite-reader.js';
import { openLogReader } from '../../src/storage/read/reader.js';
import { heldReaders } from '../../src/storage/read/segment.js';
import { readFrames } from '../../src/storage/log/scan.js';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';
import type { CoinMarket } from '../../src/schema/market.js';
import type { Recorded } from '../../src/schema/observation.js';
import type { BookModel } from '../../src/book/book-model.js';
import { bookAsOf, snapshotPage } from '../../src/api/query/book-pages.js';
import { intervalPage } from '../../src/families/coin/intervals.js';
import { marketRecords } from '../../src/api/replay/cursor.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';
import { coinMarket as coinMarketOf } from '../../tools/fixtures/markets.js';

const MARKET = '50000';
const books: LogKey = { family: 'coin', stream: 'books', market: MARKET };
const past = utcDay(Date.now() - 2 * DAY_MS);
const today = utcDay(Date.now());
const TODAY_RECORDS = 300;

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const seqs = (xs: readonly { rec: Recorded }[]): number[] => xs.map((x) => x.rec.seq);

/** Snapshots of any book-changing record, keyed by seq and best bid (enough to see the replay worked). */
const model: BookModel = {
  replay: true,
  candidate: (rec) => rec.type === 'book' || rec.type === 'book_delta',
  produces: (_rec, changed) => changed.length > 0,
  shape: (rec, b) => ({ seq: rec.seq, best_bid: b.view(`${MARKET}-up`)?.bids[0] ?? null }),
};

const coinMarket: CoinMarket = coinMarketOf(MARKET, {
  event_id: null,
  condition_id: '0x5',
  slug: MARKET,
  question: 'Up?',
  start_time: null,
});

t.test('replay over a compacted day and the open log', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-replay-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFixture(dir, { days: [past], booksPerDay: 1200, coinMarkets: 1 });
  // Today: deltas only (no checkpoint), so a warm-up from today reaches back into the Parquet day.
  const w = await openWriter(dir, books, { fsyncIntervalMs: 0 });
  const t0 = dayStartMs(today)!;
  const span = Math.max(1, Date.now() - t0 - 1);
  for (let i = 0; i < TODAY_RECORDS; i++) {
    const ts = t0 + Math.floor((i * span) / TODAY_RECORDS);
    await w.append({
      type: 'book_delta',
      recv_ts: ts,
      source_ts: null,
      token_id: `${MARKET}-up`,
      changes: [{ side: 'bid', price: '0.30', size: String(i + 1) }],
    });
  }
  await w.close();

  // The truth, read frame by frame from the day files before anything is compacted.
  const truth: ReadItem[] = [];
  for (const d of await listDays(dir, books)) {
    const fh = await open(logFilePath(dir, books, d), 'r');
    try {
      for await (const { head, rec } of readFrames(fh, 0, (await fh.stat()).size))
        truth.push({ rec, pos: { day: d, offset: head.offset, seq: head.seq } });
    } finally {
      await fh.close();
    }
  }
  t.equal(truth.length, 1200 + TODAY_RECORDS);
  const isCheckpoint = (it: ReadItem): boolean => it.rec.type === 'book_checkpoint';

  await compactDay(dir, past, { fileRows: 500 });
  await deleteExpiredLogs(dir, Date.now(), 0);
  t.same(await listDays(dir, books), [today], 'the past day is gone from the logs');
  const r = openReader(dir, books);
  const view = await r.view();
  t.same(view.days, [past, today], 'the view plans the Parquet day and the log day');

  t.test('from a time in the compacted day until a time in the log', async (t) => {
    const from = truth[700].rec.recv_ts;
    const until = truth[1200 + 100].rec.recv_ts;
    const got = await all(view.replay({ time: from }, { until }));
    const want = truth.filter((x) => x.rec.recv_ts >= from && x.rec.recv_ts < until);
    t.ok(want.length > 500, `${want.length} records expected`);
    t.same(seqs(got), seqs(want), 'every record once, in order');
    t.same(
      got.map((x) => x.rec),
      want.map((x) => x.rec),
      'the same records',
    );
    t.ok(
      got.every((x) => !x.warmup),
      'no warm-up asked, none given',
    );
    t.same([got[0].pos.day, got[got.length - 1].pos.day], [past, today]);
  });

  t.test('from a seq in the log, warmed up from the newest checkpoint in the compacted day', async (t) => {
    const start = truth[1200 + 50].rec.seq;
    const cp = truth.filter((x) => isCheckpoint(x) && x.rec.seq < start).pop()!;
    t.equal(cp.pos.day, past, 'the newest checkpoint before the start lies in the Parquet day');
    const got = await all(r.replay({ seq: start }, { warmup: true }));
    const want = truth.filter((x) => x.rec.seq >= cp.rec.seq);
    t.same(seqs(got), seqs(want), 'from the checkpoint to the end');
    t.same(
      got.filter((x) => x.warmup).map((x) => x.rec.seq),
      want.filter((x) => x.rec.seq < start).map((x) => x.rec.seq),
      'warm-up flags exactly the records before the start',
    );
    t.equal(got.find((x) => !x.warmup)?.rec.seq, start);
  });

  t.test('from a seq before any checkpoint: the warm-up starts at the first record', async (t) => {
    const firstCp = truth.findIndex(isCheckpoint);
    t.ok(firstCp > 3);
    const got = await all(view.replay({ seq: truth[3].rec.seq }, { warmup: true, until: truth[firstCp].rec.recv_ts }));
    t.same(seqs(got), seqs(truth.slice(0, firstCp)));
    t.same(
      got.map((x) => x.warmup),
      truth.slice(0, firstCp).map((_, i) => i < 3),
    );
  });

  t.test('a cursor position from the log resumes by seq in the compacted day', async (t) => {
    const stale = { day: past, offset: 123_456, seq: truth[900].rec.seq };
    t.same(seqs(await all(view.replay({ pos: stale }, { until: truth[905].rec.recv_ts }))), seqs(truth.slice(900, 905)));
  });

  t.test('records() gives the records of replay() in non-empty chunks, across both days, cut before until', async (t) => {
    // A chunk is valid until the one after the next is requested: records are taken as chunks come.
    const take = async (chunks: AsyncIterable<RecordChunk>): Promise<{ recs: Recorded[]; recvs: number[]; sizes: number[] }> => {
      const out = { recs: [] as Recorded[], recvs: [] as number[], sizes: [] as number[] };
      for await (const c of chunks) {
        out.sizes.push(c.length);
        for (let i = 0; i < c.length; i++) {
          out.recs.push(c.record(i));
          out.recvs.push(c.recvUs(i));
        }
      }
      return out;
    };
    for (const [from, until] of [
      [truth[3].rec.recv_ts, undefined],
      [truth[700].rec.recv_ts, truth[1200 + 100].rec.recv_ts],
      [truth[10].rec.recv_ts, truth[11].rec.recv_ts],
    ] as const) {
      const got = await take(view.records({ time: from }, { until }));
      const want = truth.filter((x) => x.rec.recv_ts >= from && (until === undefined || x.rec.recv_ts < until));
      t.ok(
        got.sizes.every((n) => n > 0),
        'no empty chunk',
      );
      t.same(
        got.recs,
        want.map((x) => x.rec),
        `${want.length} records from ${from}`,
      );
      t.same(
        got.recvs,
        want.map((x) => Math.round(x.rec.recv_ts * 1000)),
        'receive times without decoding',
      );
    }
    const byRead = await take(r.readChunks({ day: past, offset: 123_456, seq: truth[900].rec.seq }, { endTime: truth[905].rec.recv_ts }));
    t.same(
      byRead.recs.map((x) => x.seq),
      seqs(truth.slice(900, 905)),
      'readChunks: from a position (by seq in a compacted day), until endTime',
    );
    const path = logFilePath(dir, books, today);
    for await (const c of view.records({ seq: truth[1200].rec.seq })) if (c.length > 0) break;
    t.equal(heldReaders(path), 0, 'stopping early lets go of the day file');
  });

  t.test('records() over a log of many reads gives every record exactly (its read buffers are reused)', async (t) => {
    const key: LogKey = { ...books, market: 'long-log' };
    const lw = await openWriter(dir, key, { fsyncIntervalMs: 0 });
    const n = 6000;
    for (let i = 0; i < n; i++) {
      const rec =
        i % 500 === 0
          ? {
              type: 'book' as const,
              recv_ts: t0 + i,
              source_ts: null,
              token_id: 'x',
              units: 'decimal' as const,
              bids: Array.from({ length: 40 }, (_, k): [string, string] => [(0.5 - k / 100).toFixed(2), String(i + k)]),
              asks: [],
            }
          : {
              type: 'book_delta' as const,
              recv_ts: t0 + i,
              source_ts: i % 3 ? t0 + i - 1 : null,
              token_id: 'x',
              changes: [{ side: 'bid' as const, price: '0.30', size: String(i) }],
            };
      await lw.append(rec);
    }
    await lw.close();
    const lr = openReader(dir, key);
    const want: Recorded[] = [];
    for await (const it of lr.read('start')) want.push(it.rec);
    t.equal(want.length, n);
    const got: Recorded[] = [];
    let chunks = 0;
    for await (const c of lr.readChunks('start', { endTime: t0 + n - 10 })) {
      chunks++;
      for (let i = 0; i < c.length; i++) got.push(c.record(i));
    }
    t.ok(chunks > 6, `${chunks} chunks: the buffers went round`);
    t.same(got, want.slice(0, n - 10));
  });

  t.test('stopping early lets go of the day file', async (t) => {
    const path = logFilePath(dir, books, today);
    const it = view.replay({ time: t0 })[Symbol.asyncIterator]();
    const first = await it.next();
    t.equal((first.value as ReplayItem).pos.day, today);
    t.equal(heldReaders(path), 1, 'a pass in progress holds the file');
    await it.return(undefined);
    t.equal(heldReaders(path), 0, 'return() released it');
    for await (const x of view.replay({ seq: truth[1200].rec.seq })) if (x.rec.seq >= truth[1202].rec.seq) break;
    t.equal(heldReaders(path), 0, 'so does a break');
  });

  t.test('empty ranges yield nothing', async (t) => {
    const last = truth[truth.length - 1].rec;
    t.same(await all(view.replay({ time: last.recv_ts + 1 }, { warmup: true })), [], 'after the last record');
    t.same(await all(view.replay({ seq: last.seq + 1 }, { warmup: true })), [], 'beyond the last seq');
    t.same(await all(view.replay({ time: truth[500].rec.recv_ts }, { until: truth[500].rec.recv_ts })), [], 'until = from');
    t.same(
      await all(view.replay({ time: truth[500].rec.recv_ts }, { until: truth[100].rec.recv_ts, warmup: true })),
      [],
      'until before from',
    );
    t.same(await all(view.replay({ time: Number.NaN })), [], 'no time');
    const none = openReader(dir, { ...books, market: 'never-recorded' });
    t.same(await all(none.replay('start', { warmup: true })), [], 'an absent log');
    t.same((await none.view()).days, []);
  });

  t.test('a page, an as-of read and an interval page each plan the days once', async (t) => {
    const cr = new CompositeReader(dir, books, openLogReader(dir, books));
    const planned = async <T>(f: () => Promise<T>): Promise<T> => {
      const before = cr.plans;
      const out = await f();
      t.equal(cr.plans - before, 1, 'one plan');
      return out;
    };
    const mid = truth[1000].rec.recv_ts;
    const asc = await planned(() => snapshotPage(cr, model, { order: 'asc', limit: 20, start: mid }));
    t.equal(asc.items.length, 20);
    const next = await planned(() => snapshotPage(cr, model, { order: 'asc', limit: 20, resume: (asc.next as { after: number }).after }));
    t.ok(next.items.length > 0 && (next.items[0].seq as number) > (asc.items[19].seq as number), 'the next page follows');
    // Walking back from just after the ascending page must rebuild the very same books.
    const lastAsc = asc.items[19].seq as number;
    const desc = await planned(() => snapshotPage(cr, model, { order: 'desc', limit: 20, resume: lastAsc + 1 }));
    t.ok(desc.items.length > 0, `${desc.items.length} snapshots walking back`);
    t.equal(desc.items[0].seq, lastAsc, 'newest first, from just before the cursor');
    for (const d of desc.items) {
      const a = asc.items.find((x) => x.seq === d.seq);
      if (a) t.same(d, a, `seq ${d.seq as number}: the same book both ways`);
    }
    const pick = truth.find((x) => x.rec.seq === asc.items[5].seq)!;
    const asOf = await planned(() => bookAsOf(cr, model, pick.rec.recv_ts, 'receive'));
    t.equal(asOf?.rec.seq, pick.rec.seq, 'the book as of a snapshot time names that snapshot');
    t.same(asOf && model.shape(asOf.rec, asOf.books), asc.items[5], 'and holds its book');
    const iv = await planned(() =>
      intervalPage(
        cr,
        coinMarket,
        { intervalMs: 60_000, order: 'asc', limit: 10, start: dayStartMs(past)!, now: Date.now(), connected: false },
        {},
      ),
    );
    t.ok(iv.items.length + iv.gaps.length > 0, 'buckets or gaps answered');
    // A `/v3/replay` pass over a range with its warm-up: the seek, the anchor and the read share one view.
    const first = await planned(async () => {
      let rec: Recorded | null = null; // read while its chunk is current
      for await (const c of marketRecords(cr, { from: mid, end: mid + 600_000, warmUp: true })) rec ??= c.record(0);
      return rec;
    });
    t.ok(first && first.recv_ts < mid, 'the replay pass starts with its warm-up, before the range');
  });
});

// The merge reads each recorder's day once: its plan comes from a compacted day's trades and gaps
// datasets and its record index (scanCompactedBooks), never from the book changes, and the build
// pass jumps to each interval through a checkpoint rather than reading the source's day from its
// start. Asserted on a real compacted day: the cheap scan equals the full scan (open gaps closed at
// the next whole book, closed gaps, a gap still open at the end, trades), and the Parquet chunks
// decoded by the scan and by a merge whose second source holds one short late interval stay a
// small part of the day's.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Observation } from '../../../src/schema/observation.js';
import { DAY_MS, dayStartMs, utcDay } from '../../../src/schema/time.js';
import { logsRoot, openReader, openWriter, ParquetStore, type LogKey } from '../../../src/storage/index.js';
import { compactDay, scanBooks, scanCompactedBooks } from '../../../src/storage/testing.js';
import { mergeBooks } from '../../../src/storage/merge/market.js';

const day = utcDay(Date.now() - 3 * DAY_MS);
const t0 = dayStartMs(day)! + 3_600_000;
const dayEnd = dayStartMs(day)! + DAY_MS;
const key: LogKey = { family: 'coin', stream: 'books', market: 'm1' };
const S = 1000;

const cp = (at: number, p: number): Observation => ({
  type: 'book_checkpoint',
  recv_ts: at,
  source_ts: null,
  units: 'decimal',
  books: ['t1', 't2'].map((tok) => ({ token_id: tok, bids: [[`0.${p % 50}`, '10']], asks: [['0.9', '5']] })),
});

/** A recorder's day: deltas every 500 ms over 2 h, checkpoints, trades, and every kind of gap. `down`: seconds not recorded. */
function records(down: [number, number] | null): { obs: Observation; cp: boolean }[] {
  const out: { obs: Observation; cp: boolean }[] = [];
  const gap = (at: number, start: number, end: number | null, token?: string): void =>
    void out.push({
      obs: {
        type: 'gap',
        recv_ts: at,
        source_ts: null,
        reason: 'disconnected',
        start_ts: start,
        end_ts: end,
        ...(token ? { token_id: token } : {}),
      },
      cp: false,
    });
  for (let ms = 0; ms < 7200 * S; ms += 500) {
    const at = t0 + ms;
    if (down && ms >= down[0] * S && ms < down[1] * S) continue;
    if (down && ms === down[1] * S) {
      gap(at, t0 + down[0] * S - 500, at);
      out.push({ obs: cp(at, ms), cp: true });
    }
    if (ms % (600 * S) === 0) out.push({ obs: cp(at, ms), cp: true });
    if (ms === 3000 * S) gap(at, at, null); // lost: ends at the books at 3100 s, restated closed after
    if (ms === 3100 * S)
      out.push({ obs: { type: 'book', recv_ts: at, source_ts: null, token_id: 't1', units: 'decimal', bids: [], asks: [] }, cp: false });
    if (ms === 3101 * S) gap(at, t0 + 3000 * S, at);
    if (ms === 5000 * S) gap(at, at, null, 't2'); // one token lost, never restated: ends at the 5400 s checkpoint
    if (ms === 7000 * S) gap(at, at, null); // lost to the end of the day
    if (ms % (10 * S) === 0)
      out.push({
        obs: { type: 'trade', recv_ts: at, source_ts: at - 5, token_id: 't1', price: '0.5', size: '3', side: 'buy', tx_hash: `0x${ms}` },
        cp: false,
      });
    out.push({
      obs: {
        type: 'book_delta',
        recv_ts: at,
        source_ts: null,
        token_id: ms % 1000 ? 't1' : 't2',
        changes: [{ side: 'bid', price: `0.${(ms / 500) % 40}`, size: '7' }],
      },
      cp: false,
    });
  }
  return out;
}

async function writeDay(dir: string, down: [number, number] | null): Promise<void> {
  const w = await openWriter(dir, key, { fsyncIntervalMs: 1000, fsyncMaxRecords: 100_000 });
  const recs = records(down);
  await w.writeMany(
    recs.map((r) => r.obs),
    { checkpoint: recs.map((r) => r.cp) },
  );
  await w.close();
}

/** Record chunks of the compacted day (the unit a read decodes). */
async function chunksOf(store: ParquetStore): Promise<number> {
  const last = (await store.daySummary('coin', 'books', day, 'm1'))!.last.seq;
  return Math.ceil(last / 1024);
}

/** Compacts the day and drops its logs, as retention does (and as a fetched day is): reads come from Parquet. */
async function compacted(dir: string): Promise<void> {
  await compactDay(dir, day);
  await rm(logsRoot(dir), { recursive: true, force: true });
}

t.test('the plan of a compacted day without its book changes equals the full scan', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'pmtape-merge-scan-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const dir = join(root, 'a');
  await writeDay(dir, null);
  const full = await scanBooks('a', await openReader(dir, key).view(), dayEnd); // the log, before compaction
  await compacted(dir);
  const store = new ParquetStore(dir);
  const view = await openReader(dir, key, store).view();
  const cheap = await scanCompactedBooks('a', store, view, key, day, dayEnd);
  t.ok(cheap, 'a compacted day is scanned from its datasets');
  t.same(cheap!.coverage, full.coverage, 'same covered intervals and gap spans');
  t.same(
    cheap!.trades.map((x) => [x.recv_ts, x.tx_hash, x.price, x.size]),
    full.trades.map((x) => [x.recv_ts, x.tx_hash, x.price, x.size]),
    'same trades',
  );
  t.same(
    full.coverage.gaps.map((g) => [(g.start - t0) / S, (g.end - t0) / S]),
    [
      [3000, 3100],
      [3000, 3101],
      [5000, 5400],
      [7000, (dayEnd - t0) / S],
    ],
    'the fixture has an open gap closed by a book, its closed restatement, a token gap closed by a checkpoint, one open to the end',
  );
  const n = await chunksOf(store);
  t.ok(n >= 12, `the day spans ${n} record chunks`);
  // Its reads: the first whole book, and after each open gap up to the next whole book (the last
  // one, open to the end, reads to the end): a few chunks, not the day.
  t.ok(store.decodes <= n / 2, `the cheap scan decoded ${store.decodes} of ${n} record chunks`);
  const again = new ParquetStore(dir);
  await scanBooks('a', await openReader(dir, key, again).view(), dayEnd);
  t.equal(again.decodes, n, 'a full scan decodes every chunk');
  store.close();
  again.close();
});

t.test('the build pass reads a source over its intervals, not from the start of its day', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'pmtape-merge-scan-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const [da, db] = [join(root, 'a'), join(root, 'b')];
  await writeDay(da, [6800, 6900]); // a is down late in the day; b covers from then on
  await writeDay(db, null);
  await compacted(da);
  await compacted(db);
  const [sa, sb] = [new ParquetStore(da), new ParquetStore(db)];
  const views = new Map([
    ['a', await openReader(da, key, sa).view()],
    ['b', await openReader(db, key, sb).view()],
  ]);
  const scanned = new Map();
  for (const [id, s, v] of [['a', sa, views.get('a')!] as const, ['b', sb, views.get('b')!] as const])
    scanned.set(id, await scanCompactedBooks(id, s, v, key, day, dayEnd));
  const emitted: Observation[] = [];
  const r = await mergeBooks(views, dayEnd, async (o) => void emitted.push(o), scanned);
  const fromB = r.segments.filter((s) => s.source === 'b');
  t.ok(fromB.length >= 1, 'b is the source where a was down');
  t.same(
    fromB.map((s) => [(s.start - t0) / S, (s.end - t0) / S]),
    [[6799.5, 7000]],
    "b holds from a's last record before it stopped, and keeps the market while it covers",
  );
  const entry = emitted.find((o) => o.recorder === 'b' && o.type === 'book_checkpoint');
  t.ok(entry, "b's interval is entered through its whole book");
  const n = await chunksOf(sb);
  // Scan and build together: the scan's few chunks, then from b's checkpoint at 6600 s to 7000 s.
  t.ok(sb.decodes <= n / 2, `b's day was read over its interval: ${sb.decodes} of ${n} record chunks decoded`);
  sa.close();
  sb.close();
});

// `npm run bench -- merge`: the merge of two recorders' day vs the compaction of one, same day, same
// run, on a real SeaweedFS (the seaweedfs toolchain). Recorder A's logs are a fixture day; B's are
// the same records; each then loses its own windows of time (records dropped, a `not_recording`
// gap and a checkpoint at the restart, as a recorder killed and restarted writes them), with one
// window where both were down. Reported: the compaction of A alone, the merge up to its merged day
// compacted (fetching both days from the bucket, merging, compacting) and with its publication,
// their ratio (target ≤ 1.5), and the merged gap seconds against the seconds both were down.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { MarketBooks } from '../../src/book/book-state.js';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';
import { compactDay, listKeys as listLogKeys, openLogReader, scanBooks } from '../../src/storage/testing.js';
import { mergeArchiveDay, openWriter, syncArchive } from '../../src/storage/index.js';
import { parseArchiveUrl, type ArchiveConfig } from '../../src/config.js';
import { writeFixture } from '../fixtures/compaction-logs.js';
import { startWeed, ACCESS_KEY, SECRET_KEY } from '../fixtures/weed.js';
import { toolchain as seaweedfs } from '../toolchains/seaweedfs.js';

const log = (s: string): void => void process.stderr.write(`bench merge: ${s}\n`);
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

/** Copies `from`'s logs into `to`, dropping what falls in `windows` as a recorder down then would. */
async function withDowntime(from: string, to: string, windows: readonly [number, number][]): Promise<void> {
  for (const key of await listLogKeys(from)) {
    const w = await openWriter(to, key, { fsyncIntervalMs: 1000, fsyncMaxRecords: 100_000 });
    const books = new MarketBooks();
    let units: 'decimal' | 'dollars' | 'cents' = 'decimal';
    let lastKept: number | null = null;
    let down: [number, number] | null = null;
    const pending: Promise<void>[] = [];
    for await (const { rec } of openLogReader(from, key).read('start')) {
      books.apply(rec);
      if (rec.type === 'book' || rec.type === 'book_checkpoint') units = rec.units;
      const inWindow = windows.find(([a, b]) => a <= rec.recv_ts && rec.recv_ts < b) ?? null;
      if (inWindow) {
        down ??= inWindow;
        continue;
      }
      const { seq: _s, ...obs } = rec;
      if (down && lastKept !== null) {
        // Back up: the restart's gap from the last record kept, and a whole book (the recorder's first snapshot).
        const at = rec.recv_ts;
        pending.push(
          w.write({
            type: 'gap',
            recv_ts: at,
            source_ts: null,
            reason: 'not_recording',
            start_ts: lastKept,
            end_ts: at,
            detail: 'recorder was not running',
          }),
        );
        if (key.stream === 'books' && rec.type !== 'yesno_book') {
          const cp = books.checkpointBooks();
          if (cp.length)
            pending.push(
              w.write(
                {
                  type: 'book_checkpoint',
                  recv_ts: at,
                  source_ts: null,
                  units,
                  books: cp.map((b) => ({ token_id: b.token_id, bids: b.bids, asks: b.asks })),
                },
                { checkpoint: true },
              ),
            );
        }
      }
      down = null;
      pending.push(w.write(obs, { checkpoint: rec.type === 'book_checkpoint' }));
      lastKept = rec.recv_ts;
      if (w.backpressure) await w.drained();
    }
    await w.flush();
    await Promise.all(pending);
    await w.close();
  }
}

export async function run(): Promise<Record<string, unknown>> {
  const bin = seaweedfs.locate();
  if (!bin) throw new Error('weed is not built: run `node dist/tools/toolchains/setup.js seaweedfs` first');
  const teardowns: (() => unknown)[] = [];
  const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) } as unknown as Test;
  const root = await mkdtemp(join(tmpdir(), 'pmtape-bench-merge-'));
  try {
    const day = utcDay(Date.now() - 2 * DAY_MS);
    const t0 = dayStartMs(day)! + 1000;
    const span = 6 * 3_600_000;
    const books = Number(process.env.PMTAPE_BENCH_MERGE_BOOKS ?? 20_000);
    log(`writing a day (${books} books a market) ...`);
    const whole = join(root, 'whole');
    await writeFixture(whole, { days: [day], booksPerDay: books, coinMarkets: 4, levels: 60, bothOutcomes: true, spanMs: span });
    // A down for 20 min at 1 h and 20 min at 3 h; B for 20 min at 2 h and 20 min from 3 h 10 min: both down 10 min.
    const min = 60_000;
    const downA: [number, number][] = [
      [t0 + 60 * min, t0 + 80 * min],
      [t0 + 180 * min, t0 + 200 * min],
    ];
    const downB: [number, number][] = [
      [t0 + 120 * min, t0 + 140 * min],
      [t0 + 190 * min, t0 + 210 * min],
    ];
    const dirA = join(root, 'a');
    const dirB = join(root, 'b');
    await withDowntime(whole, dirA, downA);
    await withDowntime(whole, dirB, downB);
    const weed = await startWeed(t, bin);
    await weed.createBucket('bench');
    process.env.AWS_ACCESS_KEY_ID = ACCESS_KEY;
    process.env.AWS_SECRET_ACCESS_KEY = SECRET_KEY;
    const url = 's3://bench/shared';
    const archive: ArchiveConfig = {
      url,
      ...parseArchiveUrl(url, 'bench'),
      endpoint: weed.endpoint,
      region: 'us-east-1',
      pathStyle: true,
      maxLagDays: 2,
    };

    log('compacting A (the baseline) ...');
    let c0 = performance.now();
    await compactDay(dirA, day, { threads: 2 });
    const compactMs = performance.now() - c0;
    await compactDay(dirB, day, { threads: 2 });
    for (const [id, d] of [
      ['a', dirA],
      ['b', dirB],
    ] as const) {
      const r = await syncArchive(d, { ...archive, recorderId: id }, { days: [day] });
      if (r.failed) throw new Error(`publishing ${id} failed: ${r.errors.join('; ')}`);
    }
    log('merging ...');
    c0 = performance.now();
    let compactedAt = 0;
    const r = await mergeArchiveDay(archive, day, {
      threads: 2,
      onPhase: (p) => void (p === 'compacted' && (compactedAt = performance.now())),
    });
    const mergeMs = performance.now() - c0;
    if (r.published?.failed) throw new Error('merge publication failed');
    // Seconds every recorder lost, per market: the fixture's own gaps (both copies have them) and the
    // window both were down, within the market's recorded span.
    let allDownMs = 0;
    for (const key of await listLogKeys(whole)) {
      if (key.stream !== 'books') continue;
      const reader = openLogReader(whole, key);
      const scan = await scanBooks('whole', await reader.view(), dayStartMs(day)! + DAY_MS);
      const cov = scan.coverage.covered;
      if (cov.length === 0) continue;
      const [lo, hi] = [cov[0].start, cov[cov.length - 1].end];
      const spans: [number, number][] = [
        ...scan.coverage.gaps.map((g) => [Math.max(lo, g.start), Math.min(hi, g.end)] as [number, number]),
        [Math.max(lo, t0 + 190 * min), Math.min(hi, t0 + 200 * min)],
      ];
      let cur = -Infinity;
      for (const [a, b] of spans.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0])) {
        if (b <= cur) continue;
        allDownMs += b - Math.max(a, cur);
        cur = b;
      }
    }
    const markets = r.markets;
    return {
      day_books_per_market: books,
      markets,
      compact_one_ms: Math.round(compactMs),
      merge_to_compacted_ms: Math.round(compactedAt - c0),
      merge_with_publication_ms: Math.round(mergeMs),
      merge_vs_compaction: round((compactedAt - c0) / compactMs),
      target: '≤ 1.5',
      merged_gap_s: round(r.gap_ms / 1000, 1),
      all_down_s: round(allDownMs / 1000, 1),
      note: "summed over the merged markets; all_down counts the day's own gaps (in both copies) and the window both were down; a recorder's gap starts at its last record before it stopped and ends at its first whole book after",
    };
  } finally {
    for (const fn of teardowns.reverse()) await fn();
    await rm(root, { recursive: true, force: true });
  }
}

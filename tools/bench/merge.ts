// `npm run bench -- merge`: the merge of two recorders' day vs the compaction of one, same day, same
// run, on a real SeaweedFS (the seaweedfs toolchain). Recorder A's logs are a fixture day; B's are
// the same records; each then loses its own windows of time (records dropped, a `not_recording`
// gap and a checkpoint at the restart, as a recorder killed and restarted writes them), with one
// window where both were down. Reported: the compaction of A alone, the merge up to its merged day
// compacted (fetching both days from the bucket, merging, compacting) and with its publication,
// their ratio (target ≤ 1.5), and the merged gap seconds against the seconds both were down.

import { cp, mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';
import { compactDay, mergeSplitCounts } from '../../src/storage/testing.js';
import { accountDown } from './merge-gaps.js';
import { mergeArchiveDay, syncArchive } from '../../src/storage/index.js';
import { withDowntime } from '../fixtures/merge-downtime.js';

import { writeFixture } from '../fixtures/compaction-logs.js';
import { startWeed, useTestArchive } from '../fixtures/weed.js';
import { toolchain as seaweedfs } from '../toolchains/seaweedfs.js';

const log = (s: string): void => void process.stderr.write(`bench merge: ${s}\n`);
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

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
    const url = 's3://bench/shared';
    const archive = useTestArchive(url, weed.endpoint);

    // Both recorders' days published once (each compacted on a copy of its logs).
    for (const [id, d] of [
      ['a', dirA],
      ['b', dirB],
    ] as const) {
      const pub = join(root, `pub-${id}`);
      await cp(d, pub, { recursive: true });
      await compactDay(pub, day, { threads: 2 });
      const r = await syncArchive(pub, { ...archive, recorderId: id }, { days: [day] });
      if (r.failed) throw new Error(`publishing ${id} failed: ${r.errors.join('; ')}`);
    }
    // Rounds alternate which side runs first (the machine's load drifts): each round compacts a
    // fresh copy of A's logs (the baseline) and merges the day again (`--replace`).
    const rounds = Number(process.env.PMTAPE_BENCH_MERGE_ROUNDS ?? 3);
    const load0 = loadavg().map((x) => round(x));
    const split0 = { ...mergeSplitCounts };
    const per: {
      compact_one_ms: number;
      compact_one_cpu_ms: number;
      merge_to_compacted_cpu_ms: number;
      cpu_ratio: number;
      merge_to_compacted_ms: number;
      merge_with_publication_ms: number;
      ratio: number;
      merge_phases_ms: Record<string, number>;
      merge_phases_cpu_ms: Record<string, number>;
      merged_compaction_cpu_ratio: number;
    }[] = [];
    let last: Awaited<ReturnType<typeof mergeArchiveDay>> | null = null;
    for (let i = 0; i < rounds; i++) {
      const copy = join(root, `round-${i}`);
      await cp(dirA, copy, { recursive: true });
      // CPU time of this process (every thread), beside the wall time: a machine shared with other
      // work stretches the wall time of either side by whatever ran beside it, far less its CPU time.
      const cpuMs = (): number => {
        const u = process.cpuUsage();
        return (u.user + u.system) / 1000;
      };
      let compactCpu = 0;
      let mergeCpu = 0;
      const compaction = async (): Promise<number> => {
        const c0 = performance.now();
        const u0 = cpuMs();
        await compactDay(copy, day, { threads: 2 });
        compactCpu = cpuMs() - u0;
        return performance.now() - c0;
      };
      // The merge's own phases: fetching both days, merging them into logs, compacting those logs.
      const phases: Record<string, number> = {};
      // And each phase's CPU time: the merged day's own compaction against A's says how much of the
      // target the fetch and the merging step may take at most (docs/redundancy.md).
      const phasesCpu: Record<string, number> = {};
      const merge = async (): Promise<[number, number]> => {
        const c0 = performance.now();
        const u0 = cpuMs();
        let at = c0;
        let cpuAt = u0;
        last = await mergeArchiveDay(archive, day, {
          threads: 2,
          replace: true,
          onPhase: (p) => {
            if (p !== 'fetched' && p !== 'merged' && p !== 'compacted') return;
            if (p === 'compacted') mergeCpu = cpuMs() - u0;
            phases[p] = Math.round(performance.now() - at);
            at = performance.now();
            phasesCpu[p] = Math.round(cpuMs() - cpuAt);
            cpuAt = cpuMs();
          },
        });
        if (last.published?.failed) throw new Error('merge publication failed');
        return [at - c0, performance.now() - c0];
      };
      log(`round ${i + 1}/${rounds} (${i % 2 ? 'merge first' : 'compaction first'}) ...`);
      let compactMs: number, merged: [number, number];
      if (i % 2) {
        merged = await merge();
        compactMs = await compaction();
      } else {
        compactMs = await compaction();
        merged = await merge();
      }
      await rm(copy, { recursive: true, force: true });
      per.push({
        compact_one_ms: Math.round(compactMs),
        compact_one_cpu_ms: Math.round(compactCpu),
        merge_to_compacted_cpu_ms: Math.round(mergeCpu),
        cpu_ratio: round(mergeCpu / compactCpu),
        merge_to_compacted_ms: Math.round(merged[0]),
        merge_with_publication_ms: Math.round(merged[1]),
        ratio: round(merged[0] / compactMs),
        merge_phases_ms: phases,
        merge_phases_cpu_ms: phasesCpu,
        merged_compaction_cpu_ratio: round(phasesCpu.compacted / compactCpu),
      });
      log(`round ${i + 1}: ${JSON.stringify(per[per.length - 1])}`);
    }
    const r = last!;
    const down = await accountDown(whole, [dirA, dirB], [t0 + 190 * min, t0 + 200 * min], dayStartMs(day)! + DAY_MS);
    const ratios = per.map((x) => x.ratio).sort((x, y) => x - y);
    return {
      day_books_per_market: books,
      markets: r.markets,
      rounds: per,
      merge_vs_compaction_median: ratios[Math.floor(ratios.length / 2)],
      merge_vs_compaction_max: ratios[ratios.length - 1],
      cpu_ratio_median: per.map((x) => x.cpu_ratio).sort((x, y) => x - y)[Math.floor(per.length / 2)],
      merged_compaction_cpu_ratio_median: per.map((x) => x.merged_compaction_cpu_ratio).sort((x, y) => x - y)[Math.floor(per.length / 2)],
      target: '≤ 1.5',
      threads: {
        compaction_of_a: 2,
        merge: 2,
        note: 'both as `pmtape compact` and `archive merge` run by default (storage.compaction_threads 2)',
      },
      markets_merged_by_thread: { caller: mergeSplitCounts.caller - split0.caller, helper: mergeSplitCounts.helper - split0.helper },
      load_average_before: load0,
      load_average_after: loadavg().map((x) => round(x)),
      merged_gap_s: round(r.gap_ms / 1000, 1),
      all_down_naive_s: round(down.naive_ms / 1000, 1),
      all_down_exact_s: round(down.exact_ms / 1000, 1),
      naive_but_held_s: round(down.held_in_naive_ms / 1000, 1),
      exact_beyond_naive_s: round(down.beyond_naive_ms / 1000, 1),
      resyncs_s: down.resyncs,
      note: "gaps summed over the merged markets. naive: the day's own gaps plus the window both were down; exact: the seconds no copy held a whole book, each copy scanned alone; naive_but_held: naive seconds a copy held a book (a restart's fresh book inside a venue gap); exact_beyond_naive: from a copy's last record to the moment it stopped",
    };
  } finally {
    for (const fn of teardowns.reverse()) await fn();
    await rm(root, { recursive: true, force: true });
  }
}

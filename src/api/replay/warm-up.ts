// Running the replay's own code before `serve` says `ready`. Loading the Parquet modules and one
// decode (storage/compaction/warm-up.ts) left the first replay of a compacted day paying for the rest
// of its code's first runs: rebuilding records, the book state, the line texts and the interval
// sampler all start in V8's interpreter and reach its optimizing tier only after many calls, so the
// first request took several times the next market's (data just as cold, code warm; `npm run bench
// -- parquet` times both).
//
// So the server replays an hour of the market the Parquet warm-up decoded, from the start of the
// chunk it decoded (so that the hour holds records whatever the market's hours), a few rounds, each
// through a private store that is closed at once: nothing read or decoded stays in the process, and
// the first request still reads its own files and row groups cold. The rounds stop at a time budget
// so that a slow disk or a busy machine delays `ready` by a bounded amount.

import type { FastifyInstance } from 'fastify';
import { familyOf } from '../../families/registry.js';
import type { Family } from '../../schema/observation.js';
import { openReader, ParquetStore } from '../../storage/index.js';
import { replayMarket } from '../../book/replay-book.js';
import { bookLines, type SourceRequest } from './lines.js';
import { parseTypes } from './plan.js';

export interface ReplayWarmUp {
  readonly rounds: number;
  /** Lines made in the last round (0: the hour had no records, and the warm-up ran no line code). */
  readonly lines: number;
  readonly ms: number;
}

/** The types a warm-up replays: every book line a replay can make (metrics are a plain read). */
const WARM_TYPES = 'book,book_change,trade,gap,book_snapshot_25_1s';

/**
 * Replays an hour of `market`'s books from `from` up to `rounds` times, stopping
 * once `budgetMs` have passed. The lines are made and dropped.
 */
export async function warmReplay(
  app: FastifyInstance,
  dataDir: string,
  at: {
    readonly family: Family;
    readonly market: string;
    /** Receive time (ms) of the market's first records there. */ readonly from: number;
  },
  opts: { readonly rounds?: number; readonly budgetMs?: number } = {},
): Promise<ReplayWarmUp> {
  const t0 = performance.now();
  const rounds = opts.rounds ?? 6;
  const budgetMs = opts.budgetMs ?? 1500;
  const d = familyOf(at.family);
  const found = await app.pmtape.markets.resolve(at.family, at.market);
  const m = replayMarket(d, at.market, found?.market ?? null);
  const types = parseTypes(WARM_TYPES, { name: at.family, maxDepth: d.replay.maxDepth, metricFamilies: [] });
  const start = Math.floor(at.from);
  const end = start + 3_600_000;
  let done = 0;
  let lines = 0;
  while (done < rounds && performance.now() - t0 < budgetMs) {
    const store = new ParquetStore(dataDir);
    try {
      const reader = openReader(dataDir, { family: at.family, stream: 'books', market: at.market }, store);
      lines = 0;
      // Built as the route builds it (the same object shape, so V8's code for it fits the route's).
      const base = { market: m, types, depth: undefined, start, from: start, end, after: null };
      const source = bookLines({ ...base, reader, sampleStop: end, firstRecv: start } satisfies SourceRequest);
      for await (const batch of source) lines += batch.length;
    } finally {
      store.close();
    }
    done++;
  }
  return { rounds: done, lines, ms: Math.round(performance.now() - t0) };
}

// One gap, one closed row (issue 34 §2). A lost change drifts both books of a coin market, and the
// venue resends them one message each after a trade: the recorder wrote one after-the-fact
// `sequence_gap` per book, so one hole became a zero-length row and then the same gap again with a
// later end (`start 749 end 749`, then `start 749 end 750`), and counting closed gaps over-counted.
// Against the loopback sim losing changes: every hole is one closed row, and every book that
// disagreed with the rebuilt one is still followed by a closed sequence_gap (the strict invariant
// of ../helpers.ts, unchanged).

import t from 'tap';
import { startSim } from '../../../src/sim/server.js';
import { startRecorders } from '../../../src/recorders/host.js';
import { MarketBooks } from '../../../src/book/book-state.js';
import type { Recorded } from '../../../src/schema/observation.js';
import { readAll, simConfig, sleep, tempDir, violations, waitFor } from '../helpers.js';

const FAST = { stale_after_ms: 3000, recorders: { ping_interval_ms: 200, backoff_min_ms: 50, backoff_max_ms: 300, catalog_poll_ms: 250 } };
const numLadder = (l: readonly (readonly [string, string])[]): string => JSON.stringify(l.map(([p, s]) => [Number(p), Number(s)]));

/** Closed sequence_gap rows written after the fact, each with the number of disagreeing books just before it. */
function afterTheFact(recs: readonly Recorded[]): { start: number; end: number; books: number }[] {
  const books = new MarketBooks();
  const out: { start: number; end: number; books: number }[] = [];
  let diverged = 0;
  for (const r of recs) {
    if (r.type === 'book') {
      const before = books.view(r.token_id);
      if (before && (numLadder(before.bids) !== numLadder(r.bids) || numLadder(before.asks) !== numLadder(r.asks))) diverged++;
    } else if (r.type === 'gap' && r.reason === 'sequence_gap' && r.end_ts !== null && diverged > 0) {
      out.push({ start: r.start_ts, end: r.end_ts, books: diverged });
      diverged = 0;
    } else if (r.type !== 'trade') diverged = 0;
    books.apply(r);
  }
  return out;
}

t.test('lost changes: one closed row per hole, every disagreeing book still marked', async (t) => {
  const sim = await startSim({ seed: 11, windowScale: 0.02, rate: 600, faults: 'gap=0.04', coins: ['btc', 'eth'], windows: ['5m'] });
  t.teardown(() => sim.close());
  const dir = tempDir();
  const { config } = simConfig(sim.config, dir, { ...FAST, storage: { checkpoint_every_deltas: 50, checkpoint_every_ms: 1000 } });
  const host = await startRecorders(config, { kinds: ['clob', 'catalog'] });
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await host.stop();
  });
  // Run until holes revealed by both books of a market were seen (a loaded machine needs longer).
  let seen = 0;
  await waitFor(
    async () => {
      const books = await readAll(dir, 'books');
      seen = [...books.values()].flatMap(afterTheFact).filter((g) => g.books >= 2).length;
      return seen >= 3;
    },
    60_000,
    500,
  );
  await sleep(200);
  stopped = true;
  await host.stop();
  const books = await readAll(dir, 'books');
  t.ok(seen >= 3, `holes revealed by two books: ${seen}`);
  for (const [m, recs] of books) {
    t.same(violations(recs), [], `${m}: every disagreeing book is followed by a closed sequence_gap`);
    const closed = recs.filter((r): r is Extract<Recorded, { type: 'gap' }> => r.type === 'gap' && r.end_ts !== null);
    const starts = new Map<string, number>();
    for (const g of closed) starts.set(`${g.reason}|${g.start_ts}`, (starts.get(`${g.reason}|${g.start_ts}`) ?? 0) + 1);
    const again = [...starts].filter(([, n]) => n > 1).map(([k]) => k);
    t.same(again, [], `${m}: no gap closed twice (same reason and start)`);
    const rows = afterTheFact(recs);
    for (let i = 1; i < rows.length; i++) {
      if (rows[i].start <= rows[i - 1].end)
        t.fail(`${m}: two rows for one hole: [${rows[i - 1].start}, ${rows[i - 1].end}] and [${rows[i].start}, ${rows[i].end}]`);
    }
  }
});

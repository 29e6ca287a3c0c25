// The merging step of a merge (merge.ts), one unit of work at a time: a unit is one market of one
// family with every stream it has (its books, then its metrics, which follow the books' sources,
// then its catalogue), merged from the recorders' copies (market.ts) into fresh logs. Units are
// independent (each writes only its own market's logs, whose seqs start at the day's range), so
// two threads may take them from one shared counter (merge-worker.ts) and the logs, and the merged
// day compacted from them, are the same whichever thread merged which unit.

import type { Family } from '../../schema/observation.js';
import { DAY_MS, dayStartMs } from '../../schema/time.js';
import { openWriter } from '../log/open-writer.js';
import { compositeReader } from '../read/composite-reader.js';
import { openLogReader } from '../read/reader.js';
import { ParquetStore } from '../parquet/reader.js';
import type { LogKey, LogView, LogWriter } from '../types.js';
import { mergeBooks, mergeFollowing, type Emit } from './market.js';
import { mergedGaps, type Segment } from './plan.js';
import { scanCompactedBooks, type BooksScan } from './scan.js';
import type { DayMarkets } from './fetch-day.js';

/** The first seq of a merged day's logs: a range per day, so seq rises across merged days built in any order. */
export const mergedFirstSeq = (day: string): number => (dayStartMs(day)! / DAY_MS) * 1e9 + 1;

/** What the merging step works on: the recorders' copies (id → data dir, in priority order) and where the logs go. */
export interface UnitsInput {
  readonly day: string;
  readonly dirs: ReadonlyMap<string, string>;
  readonly markets: ReadonlyMap<string, DayMarkets>;
  readonly out: string;
  /** Every market to merge, as [family, market]; each taken by whichever thread claims it first. */
  readonly units: readonly (readonly [Family, string])[];
  /** The claim counter the threads share (one Int32 over a SharedArrayBuffer). */
  readonly next: Int32Array;
}

/** What one thread merged. */
export interface UnitsResult {
  /** Units (markets of a family, every stream) this thread merged. */
  units: number;
  /** Markets whose books were merged. */
  markets: number;
  records: number;
  /** Milliseconds of the merged books' gaps, summed over markets. */
  gap_ms: number;
}

/** Every [family, market] of the day, in family then market order (the order one thread merges them in). */
export function unitsOf(markets: ReadonlyMap<string, DayMarkets>): [Family, string][] {
  const all = new Map<string, [Family, string]>();
  for (const m of markets.values())
    for (const [k, set] of m) {
      const family = k.split('|')[0] as Family;
      for (const x of set) all.set(`${family}|${x}`, [family, x]);
    }
  return [...all.values()].sort(([fa, ma], [fb, mb]) => (fa !== fb ? (fa < fb ? -1 : 1) : ma < mb ? -1 : ma > mb ? 1 : 0));
}

/** The log writer of one merged market, pipelined (one fsync per many records) and closed by `done`. */
async function sink(dir: string, key: LogKey, day: string): Promise<{ emit: Emit; done: () => Promise<void> }> {
  let w: LogWriter | null = null;
  let batch: { obs: Parameters<Emit>[0]; cp: boolean }[] = [];
  const pending: Promise<void>[] = [];
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    w ??= await openWriter(dir, key, { firstSeq: mergedFirstSeq(day), fsyncIntervalMs: 1000, fsyncMaxRecords: 50_000 });
    const b = batch;
    batch = [];
    const p = w.writeMany(
      b.map((x) => x.obs),
      { checkpoint: b.map((x) => x.cp) },
    );
    p.catch(() => undefined);
    pending.push(p);
    if (w.backpressure) await w.drained();
  };
  return {
    emit: async (obs, cp) => {
      batch.push({ obs, cp });
      if (batch.length >= 2000) await flush();
    },
    done: async () => {
      await flush();
      const all = Promise.all(pending);
      await w?.flush(); // now, not a group-commit interval later: one wait per market was most of a merge
      await all;
      await w?.close();
    },
  };
}

/** Views of one market from every recorder copy that has it, in priority order. */
async function viewsOf(input: UnitsInput, stores: ReadonlyMap<string, ParquetStore>, key: LogKey): Promise<Map<string, LogView>> {
  const out = new Map<string, LogView>();
  for (const [id, dir] of input.dirs)
    if (input.markets.get(id)?.get(`${key.family}|${key.stream}`)?.has(key.market))
      out.set(id, await compositeReader(dir, key, openLogReader(dir, key), stores.get(id)).view());
  return out;
}

/** Merges one market: its books, then its metrics (after the books' sources), then its catalogue. */
async function mergeUnit(
  input: UnitsInput,
  stores: ReadonlyMap<string, ParquetStore>,
  family: Family,
  market: string,
  r: UnitsResult,
): Promise<void> {
  const dayEnd = dayStartMs(input.day)! + DAY_MS;
  let segments: Segment[] | null = null;
  for (const stream of ['books', 'metrics', 'catalog'] as const) {
    const key: LogKey = { family, stream, market };
    const views = await viewsOf(input, stores, key);
    if (views.size === 0) continue;
    const w = await sink(input.out, key, input.day);
    if (stream === 'books') {
      const scanned = new Map<string, BooksScan>();
      for (const id of views.keys()) {
        const sc = await scanCompactedBooks(id, stores.get(id)!, views.get(id)!, key, input.day, dayEnd);
        if (sc) scanned.set(id, sc);
      }
      const b = await mergeBooks(views, dayEnd, w.emit, scanned);
      segments = b.segments;
      r.records += b.records;
      r.gap_ms += mergedGaps(b.segments).reduce((n, g) => n + g.end - g.start, 0);
      r.markets++;
    } else {
      r.records += await mergeFollowing(views, stream === 'metrics' ? segments : null, w.emit);
    }
    await w.done();
  }
}

/**
 * Merges every unit this thread can claim (the other thread, if any, takes the rest);
 * `onFirstClaim` is called once this thread has claimed its first unit (or found none left). The
 * recorders' copies are read through stores of this call's own, dropped at its end: the
 * process-wide ones (parquetStore) would keep up to 256 MB of decoded row groups per copy alive,
 * for good, through the compaction that follows (a heap its garbage collector walks again and again).
 */
export async function mergeClaimed(input: UnitsInput, onFirstClaim?: () => void): Promise<UnitsResult> {
  const r: UnitsResult = { units: 0, markets: 0, records: 0, gap_ms: 0 };
  const stores = new Map([...input.dirs].map(([id, dir]) => [id, new ParquetStore(dir)]));
  try {
    const first = Atomics.add(input.next, 0, 1);
    onFirstClaim?.();
    for (let i = first; i < input.units.length; i = Atomics.add(input.next, 0, 1)) {
      const [family, market] = input.units[i];
      await mergeUnit(input, stores, family, market, r);
      r.units++;
    }
  } finally {
    for (const s of stores.values()) s.close();
  }
  return r;
}

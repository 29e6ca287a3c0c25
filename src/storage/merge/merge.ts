// `pmtape archive merge --date D`: the canonical day of a shared archive, built from what every
// recorder published under `recorders/<id>/`. Each recorder's day is copied into a scratch folder,
// every market merged (market.ts; on two threads, merge-units.ts) into fresh logs, the logs
// compacted as any day is, and the result
// published into the archive's canonical layout exactly as a recorder's own day is (data files,
// then manifests, then the day record): a reader sees the merged day whole or not at all, and a
// merge killed at any point leaves nothing visible; the next run starts over in a new scratch folder.

import { mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ArchiveConfig } from '../../config.js';
import { dayStartMs } from '../../schema/time.js';
import { compactDay } from '../compaction/compact-day.js';
import { DEFAULT_COMPACTION_THREADS } from '../compaction/derived-split.js';
import { archiveClient, DEFAULT_RETRY, explain, isFatal, type RetryOptions } from '../archive/client.js';
import { dayRecordRel, objectKey } from '../archive/layout.js';
import { getBytes } from '../archive/objects.js';
import { planDay, publishDay, type DayResult } from '../archive/publish.js';
import { fetchDay, recordersOfDay, recorderArchive, type DayMarkets } from './fetch-day.js';
import { mergeClaimed, unitsOf, type UnitsInput } from './merge-units.js';
import { startMergeHelper, type MergeHelper } from './merge-worker.js';
import { deleteReplaced, newGeneration } from './replace.js';

export interface MergeOptions {
  /** Recorders to merge, in priority order (default: every recorder that published the day, by id). */
  readonly recorders?: readonly string[];
  /** Where the scratch folder is made (default the OS temp dir). */
  readonly workDir?: string;
  /** Replace a canonical day that is already published (atomically for readers: replace.ts). */
  readonly replace?: boolean;
  readonly retry?: RetryOptions;
  /**
   * Threads the merge may use (config `storage.compaction_threads`, default 2, as `pmtape compact`):
   * with 2, markets are merged on two threads (merge-worker.ts) and the merged day is compacted
   * with the helper thread (CompactOptions.threads); with 1, all in the calling thread.
   */
  readonly threads?: number;
  /** One line per step (a progress log). */
  readonly onStep?: (msg: string) => void;
  /** Test hook: called between steps (`fetched`, `merged`, `compacted`, then publication). */
  readonly onPhase?: (phase: string) => void;
}

export interface MergeResult {
  readonly date: string;
  readonly recorders: string[];
  readonly markets: number;
  readonly records: number;
  /** Milliseconds of the merged books' gaps (all recorders lost the market), summed over markets. */
  readonly gap_ms: number;
  readonly published: DayResult | null;
  /** Set when the canonical day was there already and `replace` was not asked for. */
  readonly skipped?: string;
}

export { mergedFirstSeq } from './merge-units.js';

/** Units each thread merged, since the process started (tests check both threads took part). */
export const mergeSplitCounts = { helper: 0, caller: 0 };

export async function mergeDay(shared: ArchiveConfig, day: string, o: MergeOptions = {}): Promise<MergeResult> {
  const dayStart = dayStartMs(day);
  if (dayStart === null) throw new Error(`--date must be a UTC day like 2026-07-26, got "${day}"`);
  const a: ArchiveConfig = { ...shared, recorderId: null };
  const retry = o.retry ?? DEFAULT_RETRY;
  const step = o.onStep ?? (() => undefined);
  const s3 = archiveClient(a);
  const threads = o.threads ?? DEFAULT_COMPACTION_THREADS;
  let work: string | null = null;
  let helper: MergeHelper | null = null;
  try {
    const recorders = o.recorders ? [...o.recorders] : await recordersOfDay(s3, a, day, retry);
    if (recorders.length === 0)
      throw new Error(
        `no recorder published ${day} under ${a.url}/recorders/ (set storage.archive.recorder_id on each recorder and let it publish the day first)`,
      );
    const merged = (await getBytes(s3, a.bucket, objectKey(a, dayRecordRel(day)))) !== null;
    if (!o.replace && merged) {
      return {
        date: day,
        recorders,
        markets: 0,
        records: 0,
        gap_ms: 0,
        published: null,
        skipped: `${day} is already published in ${a.url} (merge again with --replace)`,
      };
    }
    work = await mkdtemp(join(o.workDir ?? tmpdir(), `pmtape-merge-${day}-`));
    if (threads >= 2) helper = startMergeHelper();
    const dirs = new Map<string, string>();
    const markets = new Map<string, DayMarkets>();
    // Every recorder's day at once (the downloads and checksums overlap); kept in priority order.
    // Settled, all of them, before a failure is thrown: no download goes on into a folder being removed.
    const fetched = await Promise.allSettled(
      recorders.map(async (id) => {
        const dir = join(work!, 'in', id);
        const got = await fetchDay(s3, recorderArchive(a, id), day, dir, retry);
        step(`fetched ${id}'s ${day}: ${got.bytes} bytes`);
        return { id, dir, got };
      }),
    );
    for (const f of fetched) {
      if (f.status === 'rejected') throw f.reason;
      dirs.set(f.value.id, f.value.dir);
      markets.set(f.value.id, f.value.got.markets);
    }
    o.onPhase?.('fetched');
    // Both threads take markets from one counter (merge-units.ts): the helper, started before the
    // fetch, first (merge-worker.ts), then this one.
    const input: UnitsInput = {
      day,
      dirs,
      markets,
      out: join(work, 'out'),
      units: unitsOf(markets),
      next: new Int32Array(new SharedArrayBuffer(4)),
    };
    const helped = helper?.run(input);
    await helped?.claimed;
    const mine = await mergeClaimed(input);
    const theirs = (await helped?.done) ?? { units: 0, markets: 0, records: 0, gap_ms: 0 };
    await helper?.close();
    mergeSplitCounts.caller += mine.units;
    mergeSplitCounts.helper += theirs.units;
    const count = mine.markets + theirs.markets;
    const records = mine.records + theirs.records;
    const gapMs = mine.gap_ms + theirs.gap_ms;
    const out = input.out;
    step(`merged ${count} markets' books from ${recorders.join(', ')}: ${records} records`);
    o.onPhase?.('merged');
    const parts = await compactDay(out, day, { threads });
    const failed = parts.filter((p) => p.status === 'failed');
    if (failed.length)
      throw new Error(`compacting the merged ${day} failed: ${failed.map((p) => `${p.family}/${p.dataset}: ${p.error ?? ''}`).join('; ')}`);
    step(`compacted the merged ${day}: ${parts.length} partitions`);
    o.onPhase?.('compacted');
    // Replacing a merged day: under new names, the old objects deleted once the new record is written (replace.ts).
    const writer = { kind: 'merge' as const, host: hostname(), id: `merge-${recorders.join('+')}`.slice(0, 64) };
    const plan = await planDay(out, a, day, writer, merged ? newGeneration() : undefined);
    const published = await publishDay(s3, a, out, plan, { retry, onObject: () => o.onPhase?.('object') });
    step(`published the merged ${day} to ${a.url}: ${published.uploaded} objects uploaded, ${published.failed} failed`);
    if (merged && published.failed === 0) {
      const n = await deleteReplaced(s3, a, plan, retry, () => o.onPhase?.('delete'));
      step(`deleted ${n} objects of the ${day} it replaced`);
    }
    return { date: day, recorders, markets: count, records, gap_ms: gapMs, published };
  } catch (e) {
    if (isFatal(e)) throw explain(e, a);
    throw e;
  } finally {
    s3.destroy();
    await helper?.close();
    if (work) await rm(work, { recursive: true, force: true });
  }
}

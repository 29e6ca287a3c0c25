// `pmtape archive merge --date D`: the canonical day of a shared archive, built from what every
// recorder published under `recorders/<id>/`. Each recorder's day is copied into a scratch folder,
// every market merged (market.ts) into fresh logs, the logs compacted as any day is, and the result
// published into the archive's canonical layout exactly as a recorder's own day is (data files,
// then manifests, then the day record): a reader sees the merged day whole or not at all, and a
// merge killed at any point leaves nothing visible; the next run starts over in a new scratch folder.

import { mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ArchiveConfig } from '../../config.js';
import type { Family } from '../../schema/observation.js';
import { DAY_MS, dayStartMs } from '../../schema/time.js';
import { openWriter } from '../log/open-writer.js';
import { compactDay } from '../compaction/compact-day.js';
import type { Stream } from '../parquet/datasets.js';
import { compositeReader } from '../read/composite-reader.js';
import { openLogReader } from '../read/reader.js';
import { parquetStore } from '../parquet/reader.js';
import type { LogKey, LogView, LogWriter } from '../types.js';
import { archiveClient, DEFAULT_RETRY, explain, isFatal, type RetryOptions } from '../archive/client.js';
import { dayRecordRel, objectKey } from '../archive/layout.js';
import { getBytes } from '../archive/objects.js';
import { planDay, publishDay, type DayResult } from '../archive/publish.js';
import { fetchDay, recordersOfDay, recorderArchive, type DayMarkets } from './fetch-day.js';
import { mergeBooks, mergeFollowing, type Emit } from './market.js';
import { mergedGaps, type Segment } from './plan.js';
import { scanCompactedBooks, type BooksScan } from './scan.js';
import { deleteReplaced, newGeneration } from './replace.js';

export interface MergeOptions {
  /** Recorders to merge, in priority order (default: every recorder that published the day, by id). */
  readonly recorders?: readonly string[];
  /** Where the scratch folder is made (default the OS temp dir). */
  readonly workDir?: string;
  /** Replace a canonical day that is already published (atomically for readers: replace.ts). */
  readonly replace?: boolean;
  readonly retry?: RetryOptions;
  /** Threads the merged day's compaction may use (default 1; see CompactOptions.threads). */
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

/** The first seq of a merged day's logs: a range per day, so seq rises across merged days built in any order. */
export const mergedFirstSeq = (day: string): number => (dayStartMs(day)! / DAY_MS) * 1e9 + 1;

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
async function viewsOf(dirs: ReadonlyMap<string, string>, has: (id: string) => boolean, key: LogKey): Promise<Map<string, LogView>> {
  const out = new Map<string, LogView>();
  for (const [id, dir] of dirs) if (has(id)) out.set(id, await compositeReader(dir, key, openLogReader(dir, key)).view());
  return out;
}

export async function mergeDay(shared: ArchiveConfig, day: string, o: MergeOptions = {}): Promise<MergeResult> {
  const dayStart = dayStartMs(day);
  if (dayStart === null) throw new Error(`--date must be a UTC day like 2026-07-26, got "${day}"`);
  const a: ArchiveConfig = { ...shared, recorderId: null };
  const retry = o.retry ?? DEFAULT_RETRY;
  const step = o.onStep ?? (() => undefined);
  const s3 = archiveClient(a);
  let work: string | null = null;
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
    const dirs = new Map<string, string>();
    const markets = new Map<string, DayMarkets>();
    for (const id of recorders) {
      const dir = join(work, 'in', id);
      const got = await fetchDay(s3, recorderArchive(a, id), day, dir, retry);
      dirs.set(id, dir);
      markets.set(id, got.markets);
      step(`fetched ${id}'s ${day}: ${got.bytes} bytes`);
    }
    o.onPhase?.('fetched');
    const out = join(work, 'out');
    const dayEnd = dayStart + DAY_MS;
    const all = new Map<string, Set<string>>(); // family|stream → markets
    for (const m of markets.values()) for (const [k, set] of m) for (const x of set) (all.get(k) ?? all.set(k, new Set()).get(k)!).add(x);
    const segmentsOf = new Map<string, Segment[]>();
    let records = 0;
    let gapMs = 0;
    let count = 0;
    for (const stream of ['books', 'metrics', 'catalog'] as const) {
      for (const [k, set] of all) {
        const [family, s] = k.split('|') as [Family, Stream];
        if (s !== stream) continue;
        for (const market of [...set].sort()) {
          const key: LogKey = { family, stream, market };
          const views = await viewsOf(
            dirs,
            (id) =>
              markets
                .get(id)
                ?.get(k as `${Family}|${Stream}`)
                ?.has(market) ?? false,
            key,
          );
          const w = await sink(out, key, day);
          if (stream === 'books') {
            const scanned = new Map<string, BooksScan>();
            for (const [id, v] of views) {
              const sc = await scanCompactedBooks(id, parquetStore(dirs.get(id)!), v, key, day, dayEnd);
              if (sc) scanned.set(id, sc);
            }
            const r = await mergeBooks(views, dayEnd, w.emit, scanned);
            segmentsOf.set(`${family}|${market}`, r.segments);
            records += r.records;
            gapMs += mergedGaps(r.segments).reduce((n, g) => n + g.end - g.start, 0);
            count++;
          } else {
            records += await mergeFollowing(views, stream === 'metrics' ? (segmentsOf.get(`${family}|${market}`) ?? null) : null, w.emit);
          }
          await w.done();
        }
      }
    }
    step(`merged ${count} markets' books from ${recorders.join(', ')}: ${records} records`);
    o.onPhase?.('merged');
    const parts = await compactDay(out, day, { threads: o.threads ?? 1 });
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
    if (work) await rm(work, { recursive: true, force: true });
  }
}

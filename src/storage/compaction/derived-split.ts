// `book_snapshots` built beside the record datasets instead of after them. The snapshots are most of
// a compaction's work (one row per valid second and book, a hundred-odd columns to encode) and ran
// alone on one core after the records. Both read the same closed logs, so a helper
// thread (derived-worker.ts) starts on the snapshots while this thread writes the record datasets;
// then this thread joins in. Blocks of markets are claimed one at a time from a counter both
// threads share, so whichever thread is free builds the next one. This thread adopts the helper's
// part files and publishes the partition, still after the records it derives from; meanwhile it
// goes on with the next streams (compact-day.ts). The files hold the same rows as a one-thread
// build's, cut into part files at other markets.

import { Worker } from 'node:worker_threads';
import type { Family } from '../../schema/observation.js';
import { quarantined, type CompactOptions, type PartitionResult } from './input.js';
import { buildClaimed, type HelperInput, type HelperJob, type HelperMessage } from './derived-worker.js';
import { manifestVersion, partitionDir, readManifest, type ManifestFile } from '../parquet/manifest.js';
import { PartitionBuilder, settleLeftovers } from '../parquet/publish.js';
import { SCHEMA_VERSION, datasetsOfStream, derivedOfStream, type Stream } from '../parquet/datasets.js';

/** Markets whose derived rows each thread built, since the process started (tests check both took part). */
export const splitCounts = { helper: 0, caller: 0 };

/** Threads a compaction uses when nothing says otherwise (config `storage.compaction_threads`). */
export const DEFAULT_COMPACTION_THREADS = 2;

/**
 * Log bytes per block of markets (changed by tests): about a part file's worth of snapshot rows, so
 * a day of many small markets is not cut into a file per market, and a large market is a block alone.
 */
export const DEFAULT_SPLIT_BLOCK_BYTES = 2 * 1024 * 1024;
let blockBytes = DEFAULT_SPLIT_BLOCK_BYTES;
export function setSplitBlockBytes(n: number): void {
  blockBytes = n;
}

/** Consecutive runs of the (sorted) markets, each closed once its logs reach `blockBytes`. */
export function blocksOf(markets: readonly string[], bytes: Readonly<Record<string, number>>): string[][] {
  const out: string[][] = [];
  let cur: string[] = [];
  let sum = 0;
  for (const m of markets) {
    cur.push(m);
    sum += bytes[m] ?? 0;
    if (sum >= blockBytes) {
      out.push(cur);
      cur = [];
      sum = 0;
    }
  }
  if (cur.length) out.push(cur);
  return out;
}

/** What the helper built of one job. */
export interface HelperResult {
  readonly files: readonly ManifestFile[];
  readonly markets: number;
  /** Rows it left out per market (see bookSnapshotRows). */
  readonly setAside: Readonly<Record<string, number>>;
}

export interface DerivedSplit {
  /** After the record datasets were published: builds the rest, waits for the helper, publishes. */
  finish(): Promise<PartitionResult[]>;
  /** Stops the helper and drops the staging folder (the record build failed). */
  abandon(): Promise<void>;
}

/**
 * The helper thread of one compaction, started on first use and kept for its later streams (a start
 * costs loading the modules and compiling parquet-wasm again). `close` when the compaction ends.
 */
export class DerivedHelper {
  private worker: Worker | null = null;
  private jobs = 0;
  private readonly waiting = new Map<
    number,
    { resolve: (r: HelperResult) => void; reject: (e: Error) => void; onStep?: (s: string) => void }
  >();

  /** Builds the blocks of `input` the helper claims; resolves with its part files and how many markets it built. */
  run(input: HelperInput, onStep?: (s: string) => void): Promise<HelperResult> {
    const w = this.worker ?? this.start();
    const job = ++this.jobs;
    const done = new Promise<HelperResult>((resolve, reject) => this.waiting.set(job, { resolve, reject, onStep }));
    w.postMessage({ job, input } satisfies HelperJob);
    return done;
  }

  private start(): Worker {
    // A young generation of 96 MB, above V8's default: the snapshot rows make a great deal of
    // short-lived garbage, and fewer scavenges shorten the compaction (`npm run bench -- parquet`).
    const w = new Worker(new URL('./derived-worker.js', import.meta.url), {
      workerData: 'derived-helper',
      resourceLimits: { maxYoungGenerationSizeMb: 96 },
    });
    w.on('message', (m: HelperMessage) => {
      const j = this.waiting.get(m.job);
      if (!j) return;
      if (m.type === 'step') return j.onStep?.(m.step);
      this.waiting.delete(m.job);
      if (m.type === 'done') j.resolve({ files: m.files, markets: m.markets, setAside: m.setAside });
      else j.reject(new Error(m.message));
    });
    const fail = (e: Error): void => {
      if (this.worker === w) this.worker = null;
      for (const j of this.waiting.values()) j.reject(e);
      this.waiting.clear();
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`the book_snapshots helper thread stopped (exit code ${code}) before it finished`)));
    this.worker = w;
    return w;
  }

  /** Stops the thread (a job still running is dropped: its caller abandons its staging folder). */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }
}

/**
 * Starts the split build of the stream's derived dataset for a day whose records are about to be
 * rebuilt from `sources` (every market's log present), or returns null where it does not apply: one
 * thread asked for, a dry run, or a stream without a derived dataset.
 */
export async function startDerivedSplit(
  dataDir: string,
  family: Family,
  stream: Stream,
  day: string,
  sources: Readonly<Record<string, number>>,
  opts: CompactOptions,
  helper: DerivedHelper,
): Promise<DerivedSplit | null> {
  const derived = derivedOfStream(stream);
  const markets = Object.keys(sources).sort();
  if ((opts.threads ?? DEFAULT_COMPACTION_THREADS) < 2 || opts.dryRun || derived[0] !== 'book_snapshots' || markets.length === 0)
    return null;
  const dataset = derived[0];
  await settleLeftovers(dataDir, family, dataset, day);
  // This builder clears the staging folder before the helper writes into it.
  const b = new PartitionBuilder(
    dataDir,
    family,
    dataset,
    day,
    opts.onStep,
    opts.fileRows,
    (n) => `_main-${String(n).padStart(4, '0')}.parquet`,
  );
  await b.start();
  const input: HelperInput = {
    dataDir,
    family,
    stream,
    dataset,
    day,
    blocks: blocksOf(markets, sources),
    next: new Int32Array(new SharedArrayBuffer(4)),
    fileRows: opts.fileRows,
  };
  const helped = helper.run(input, opts.onStep);
  helped.catch(() => undefined); // awaited in finish; not an unhandled rejection meanwhile
  const abandon = async (): Promise<void> => {
    await helper.close(); // the helper may still be writing into the folder
    await b.abandon();
  };
  return {
    abandon,
    async finish() {
      try {
        splitCounts.caller += await buildClaimed(input, b);
        const h = await helped;
        splitCounts.helper += h.markets;
        await b.adopt(h.files, markets);
        b.addSetAside(h.setAside);
        const primary = await readManifest(partitionDir(dataDir, family, datasetsOfStream(stream)[0], day));
        if (!primary || manifestVersion(primary) < SCHEMA_VERSION)
          throw new Error(`${family} ${day}: the record datasets were not published; ${dataset} is not either`);
        await b.publish(primary.sources);
      } catch (e) {
        await abandon().catch(() => undefined);
        throw e;
      }
      return [
        {
          family,
          dataset,
          date: day,
          status: b.total > 0 ? 'written' : 'empty',
          rows: b.total,
          bytes: b.bytes,
          ...quarantined(b.setAside),
        },
      ];
    },
  };
}

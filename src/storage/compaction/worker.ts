// The body of `start`'s background compaction, run in a worker thread so encoding Parquet (CPU
// heavy, synchronous wasm) never stalls the recorders' and the API's event loop. Posts one message
// per compacted day and per retention pass, then `done` with the days it settled.

import { parentPort, workerData } from 'node:worker_threads';
import { DAY_MS, dayStartMs } from '../../schema/time.js';
import { closedLogDays, compactDay } from './compact-day.js';
import { deleteExpiredLogs } from './retention.js';
import { publishTarget } from '../archive/layout.js';
import type { ArchiveConfig } from '../../config.js';

export interface WorkerInput {
  readonly dataDir: string;
  readonly graceMs: number;
  readonly retentionDays: number;
  /** Days this process already compacted (a closed day never changes). */
  readonly settled: readonly string[];
  /** `storage.compaction_threads`: 2 builds `book_snapshots` in a helper thread of its own. */
  readonly threads: number;
  /** `storage.archive`: compacted days are published there before retention may delete logs. */
  readonly archive: ArchiveConfig | null;
}

/** A partition of a day that failed, or set records aside (counted by `start`'s /metrics). */
export interface PartitionNote {
  readonly family: string;
  readonly dataset: string;
  readonly quarantined?: number;
  readonly error?: string;
}

export type WorkerMessage =
  | { readonly type: 'compacted'; readonly day: string; readonly partitions: number; readonly rows: number; readonly threads: number }
  | {
      readonly type: 'partitions';
      readonly day: string;
      readonly quarantined: readonly PartitionNote[];
      readonly failed: readonly PartitionNote[];
    }
  | { readonly type: 'day-failed'; readonly day: string; readonly error: string }
  | {
      readonly type: 'archived';
      readonly days: number;
      readonly uploaded: number;
      readonly bytes: number;
      readonly failed: number;
      readonly errors: string[];
    }
  | { readonly type: 'archive-error'; readonly error: string }
  | { readonly type: 'retention'; readonly deleted: number; readonly kept: { file: string; why: string }[] }
  | { readonly type: 'done'; readonly settled: string[] };

async function main(input: WorkerInput): Promise<void> {
  const post = (m: WorkerMessage): void => parentPort!.postMessage(m);
  const now = Date.now();
  const settled = new Set(input.settled);
  const days = (await closedLogDays(input.dataDir, now)).filter((d) => dayStartMs(d)! + DAY_MS + input.graceMs <= now && !settled.has(d));
  for (const day of days) {
    // A day that fails (the lock, a disk error) is retried at the next tick; the days after it go on.
    let rs;
    try {
      rs = await compactDay(input.dataDir, day, { threads: input.threads });
    } catch (e) {
      post({ type: 'day-failed', day, error: (e as Error).message });
      continue;
    }
    const failed = rs.filter((r) => r.status === 'failed');
    // Set-aside records are counted once, when their partition is written (book_snapshots' rows are not records).
    const quarantined = rs
      .filter((r) => r.status === 'written' || r.status === 'empty')
      .filter((r) => r.quarantined && r.dataset !== 'book_snapshots');
    if (failed.length || quarantined.length) {
      const note = (r: (typeof rs)[number]): PartitionNote => ({
        family: r.family,
        dataset: r.dataset,
        ...(r.quarantined ? { quarantined: r.quarantined } : {}),
        ...(r.error ? { error: r.error } : {}),
      });
      post({ type: 'partitions', day, quarantined: quarantined.map(note), failed: failed.map(note) });
    }
    if (failed.length === 0) settled.add(day); // else the failed streams are tried again next tick
    const written = rs.filter((r) => r.status === 'written');
    if (written.length)
      post({ type: 'compacted', day, partitions: written.length, rows: written.reduce((a, r) => a + r.rows, 0), threads: input.threads });
  }
  if (input.archive) {
    // Loaded here only: the S3 SDK stays out of processes without an archive. A failure is
    // reported and retried at the next tick; retention below then keeps the day's logs.
    try {
      const { syncArchive } = await import('../archive/sync.js');
      const r = await syncArchive(input.dataDir, input.archive, { days: 'pending' });
      if (r.days)
        post({ type: 'archived', days: r.days, uploaded: r.uploaded, bytes: r.bytes, failed: r.failed, errors: r.errors.slice(0, 5) });
    } catch (e) {
      post({ type: 'archive-error', error: (e as Error).message });
    }
  }
  const ret = await deleteExpiredLogs(
    input.dataDir,
    Date.now(),
    input.retentionDays,
    input.archive ? publishTarget(input.archive).url : null,
  );
  if (ret.deleted.length || ret.kept.length) post({ type: 'retention', deleted: ret.deleted.length, kept: ret.kept });
  post({ type: 'done', settled: [...settled] });
}

if (parentPort && workerData) await main(workerData as WorkerInput);

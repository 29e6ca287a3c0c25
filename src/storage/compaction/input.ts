// What one compaction run reads and reports: the records of one closed day file (with their checkpoint
// marks), the rows of one record or its refusal (a record set aside), the options a run takes and the
// result per partition. Apart from compact-day.ts so that stream.ts, which compact-day.ts
// drives, and the rows route can use them without an import circle.

import { DISK_ERROR_CODES } from '../../errors.js';
import type { Family } from '../../schema/observation.js';
import { FLAG_CHECKPOINT } from '../log/frame.js';
import { readFileStart } from '../log/file-header.js';
import { logFilePath } from '../paths.js';
import { readFrames } from '../log/scan.js';
import type { LogKey } from '../types.js';
import { recordRows, type RowContext, type RowSink, type SourceRecord } from '../parquet/rows.js';
import { DecimalError } from '../parquet/decimal.js';
import type { Dataset } from '../parquet/datasets.js';
import { open } from 'node:fs/promises';

/**
 * Every valid record of one day file with its checkpoint mark (stops at a torn tail), from the frame
 * at byte `from` (a record's position) or the start.
 */
export async function* readLogDay(dataDir: string, key: LogKey, day: string, from = 0): AsyncGenerator<SourceRecord> {
  let fh;
  try {
    fh = await open(logFilePath(dataDir, key, day), 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  try {
    const { size } = await fh.stat();
    await readFileStart(fh, size, logFilePath(dataDir, key, day)); // refuses an unknown format version by name
    for await (const f of readFrames(fh, from, size)) yield { rec: f.rec, checkpoint: (f.head.flags & FLAG_CHECKPOINT) !== 0 };
  } finally {
    await fh.close();
  }
}

export interface PartitionResult {
  readonly family: Family;
  readonly dataset: Dataset;
  readonly date: string;
  /**
   * `blocked`: the logs changed but some were already deleted by retention; the partition is kept as
   * is. `failed`: this stream's partitions could not be built (`error` says why); the logs are kept,
   * the rest of the day went on, and the next run tries again.
   */
  readonly status: 'written' | 'unchanged' | 'empty' | 'would-write' | 'blocked' | 'failed';
  readonly rows: number;
  readonly bytes: number;
  /** Records set aside in the partition's quarantine file (book_snapshots: rows left out); absent when none. */
  readonly quarantined?: number;
  readonly error?: string;
}

/** The result's `quarantined` field: only when something was set aside. */
export const quarantined = (n: number): { quarantined?: number } => (n > 0 ? { quarantined: n } : {});

export interface CompactOptions {
  readonly dryRun?: boolean;
  /** Called once per (family, dataset) partition considered. */
  readonly onPartition?: (r: PartitionResult) => void;
  /** Test hook: called between publication steps (crash tests kill the process there). */
  readonly onStep?: (step: string) => void;
  /** Rows after which a part file is closed (default FILE_ROWS; tests use small values). */
  readonly fileRows?: number;
  /**
   * Threads the compaction may use (config `storage.compaction_threads`, default 2): with 2,
   * `book_snapshots` is built in a helper thread beside the record datasets (derived-split.ts);
   * with 1, after them in the calling thread.
   */
  readonly threads?: number;
}

/**
 * The rows of one record in every sink (one per dataset of its stream), or none at all: when a value
 * cannot be stored exactly, every sink is cut back to where it was and the refusal is returned with
 * the index of the dataset that refused it. Any other error (a bug, not a value) is thrown.
 */
export function rowsOrRefusal(
  family: Family,
  datasets: readonly Dataset[],
  sinks: readonly RowSink[],
  market: string,
  sr: SourceRecord,
  ctx: RowContext,
): { readonly dataset: number; readonly reason: string } | null {
  const before = sinks.map((s) => s.length);
  for (let i = 0; i < sinks.length; i++) {
    try {
      recordRows(family, datasets[i], market, sr, ctx, sinks[i]);
    } catch (e) {
      if (!(e instanceof DecimalError)) throw e;
      for (let k = 0; k < sinks.length; k++) sinks[k].truncate(before[k]);
      return { dataset: i, reason: e.message };
    }
  }
  return null;
}

/** A full or failing disk (by errno code, or by message when a library wrapped it). */
export function isDiskError(e: unknown): boolean {
  return (
    DISK_ERROR_CODES.has((e as NodeJS.ErrnoException)?.code ?? '') || /\b(ENOSPC|EDQUOT)\b|no space left/i.test((e as Error)?.message ?? '')
  );
}

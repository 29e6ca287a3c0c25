// A cheap fingerprint of a log: what changes whenever its newest record may have changed. Readers
// that keep something derived from a log's newest record (the catalogue view of `serve`, re-read
// every second) compare stamps instead of reading every log again: for a market whose catalogue
// did not change, one listing of its folder and one stat instead of planning its days, opening its
// newest day file and decoding a frame (2,000 markets: about 0.6 s of CPU a refresh before this).
//
// Why these parts suffice: a writer appends only to the newest day file (it refuses receive times
// that go backwards), so a new record grows that file (size, mtime), a new day adds a file (the
// listing), recovery truncates and rewrites (mtime, and inode when the file is replaced), and
// compaction deleting logs changes the listing; what is then served from Parquet changes only
// when a partition is published or rebuilt, which renames a date folder in the dataset's folder
// (its mtime). The stamp is taken before the read it guards, so a record appended in between is
// read now and seen as a change next time, never missed.

import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { listDays, logFilePath } from '../paths.js';
import { parquetRoot } from '../parquet/manifest.js';
import { datasetsOfStream } from '../parquet/schema.js';
import type { Family, StreamName } from '../../schema/observation.js';
import type { LogKey } from '../types.js';

export interface LogStamp {
  /** The newest day with a log file, or null when the log has none (Parquet only, or nothing). */
  readonly day: string | null;
  /** Size, mtime (ms, sub-ms precision where the file system has it) and inode of that file. */
  readonly size: number;
  readonly mtimeMs: number;
  readonly ino: number;
  /** The stream's Parquet folders' mtimes (`parquetStamp`): publications and rebuilds. */
  readonly parquet: string;
}

const mtimeOrMissing = (path: string): Promise<number> => stat(path).then((s) => s.mtimeMs, () => -1);

/**
 * The mtimes of the dataset folders a stream is served from (the v2 datasets and the v1 folder),
 * joined. One value per (family, stream), shared by every log of it: take it once per pass.
 */
export async function parquetStamp(dataDir: string, family: Family, stream: StreamName): Promise<string> {
  const names = [...new Set<string>([...datasetsOfStream(stream), stream])];
  const base = join(parquetRoot(dataDir), `family=${family}`);
  return (await Promise.all(names.map((n) => mtimeOrMissing(join(base, `dataset=${n}`))))).join(',');
}

/** The log's stamp now; `parquet` is the stream's `parquetStamp` (taken once for many logs). */
export async function logStamp(dataDir: string, key: LogKey, parquet: string): Promise<LogStamp> {
  const days = await listDays(dataDir, key);
  const day = days.length > 0 ? days[days.length - 1] : null;
  if (day === null) return { day, size: -1, mtimeMs: -1, ino: -1, parquet };
  const st = await stat(logFilePath(dataDir, key, day)).catch(() => null);
  // Gone since the listing (compaction deleting it): a stamp no later one can equal.
  if (st === null) return { day, size: -1, mtimeMs: Number.NaN, ino: -1, parquet };
  return { day, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, parquet };
}

/** True when nothing the stamps cover changed between them (NaN never compares equal). */
export function sameStamp(a: LogStamp, b: LogStamp): boolean {
  return a.day === b.day && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino && a.parquet === b.parquet;
}

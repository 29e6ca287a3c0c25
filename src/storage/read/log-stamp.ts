// A cheap fingerprint of a log: what changes whenever its newest record may have changed. Readers
// that keep something derived from a log's newest record (the catalogue view of `serve`, re-read
// every second) compare stamps instead of reading every log again: for a market whose catalogue
// did not change, one listing of its folder and one stat instead of planning its days, opening its
// newest day file and decoding a frame, for every market, every second (`npm run bench -- markets`).
//
// Why these parts suffice: a writer appends only to the newest day file (it refuses receive times
// that go backwards), so a new record grows that file (size, mtime), a new day adds a file (the
// listing), recovery truncates and rewrites (mtime, and inode when the file is replaced), and
// compaction deleting logs changes the listing; what is then served from Parquet changes only
// when a partition is published or rebuilt, which renames a date folder in the dataset's folder
// (its mtime). The stamp is taken before the read it guards, so a record appended in between is
// read now and seen as a change next time, never missed.

import { readdirSync, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { LRUCache } from 'lru-cache';
import { dayStartMs } from '../../schema/time.js';
import { encodeMarket, listDays, logFilePath, streamDir } from '../paths.js';
import { parquetRoot } from '../parquet/manifest.js';
import { datasetsOfStream } from '../parquet/datasets.js';
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
  /** The log's day files, ascending, when the stamp listed them (logStampSync); not compared. */
  readonly days?: readonly string[];
}

const mtimeOrMissing = (path: string): Promise<number> =>
  stat(path).then(
    (s) => s.mtimeMs,
    () => -1,
  );

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

const DAY_LOG = /^(\d{4}-\d{2}-\d{2})\.log$/;

const prefixes = new Map<string, string>();
/** `<dataDir>/logs/<family>/<stream>/`, as `marketDir` joins it (one per data dir and stream). */
function streamPrefix(dataDir: string, key: LogKey): string {
  const k = `${dataDir}\0${key.family}\0${key.stream}`;
  let p = prefixes.get(k);
  if (p === undefined) prefixes.set(k, (p = streamDir(dataDir, key.family, key.stream) + sep));
  return p;
}

const encoded = new LRUCache<string, string>({ max: 200_000 });
/** `encodeMarket`, remembered (it throws for an id no folder can name: not remembered). */
function encodedMarket(market: string): string {
  let e = encoded.get(market);
  if (e === undefined) encoded.set(market, (e = encodeMarket(market)));
  return e;
}

/**
 * `logStamp` with synchronous calls, for a caller that stamps hundreds of logs within one request
 * (a coverage page): a listing and a stat of a metadata-cached folder cost a few microseconds
 * each this way, where the promise API's round trip through the thread pool costs tens. `exists`
 * false: the caller knows the log has no folder (a listing of the stream's folder), no call made.
 */
export function logStampSync(dataDir: string, key: LogKey, parquet: string, exists = true): LogStamp {
  const none: LogStamp = { day: null, size: -1, mtimeMs: -1, ino: -1, parquet };
  if (!exists) return { ...none, days: [] };
  let names: string[];
  // The folder's path built by concatenation from a cached prefix and encoded id: path.join and the
  // id's encoding were half of the CPU of stamping a thousand logs (the listing and stat the rest).
  let dir: string;
  try {
    dir = `${streamPrefix(dataDir, key)}${encodedMarket(key.market)}`;
    names = readdirSync(dir);
  } catch {
    return { ...none, days: [] }; // no folder (or an id that cannot name one): no log
  }
  const days: string[] = [];
  for (const n of names) {
    const m = DAY_LOG.exec(n);
    if (m && dayStartMs(m[1]) !== null) days.push(m[1]);
  }
  if (days.length === 0) return { ...none, days };
  days.sort();
  const day = days[days.length - 1];
  const st = statSync(`${dir}${sep}${day}.log`, { throwIfNoEntry: false });
  if (st === undefined) return { day, size: -1, mtimeMs: Number.NaN, ino: -1, parquet, days };
  return { day, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, parquet, days };
}

/** True when nothing the stamps cover changed between them (NaN never compares equal). */
export function sameStamp(a: LogStamp, b: LogStamp): boolean {
  return a.day === b.day && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino && a.parquet === b.parquet;
}

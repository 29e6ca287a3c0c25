// Opening a writer: the market folder (fsynced into existence), the single-writer lock, and recovery
// of the newest day file that holds records, so seq continues after the last valid record.

import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StorageError } from '../../errors.js';
import type { Recorded } from '../../schema/observation.js';
import { AppendLog, type WriterTail } from './append-log.js';
import { fsyncDir } from '../durable.js';
import { acquireLock } from './lock.js';
import { listDays, lockFilePath, logFilePath, marketDir } from '../paths.js';
import { recoverLogFile } from './recovery.js';
import { lastCompactedSeq } from '../parquet/manifest.js';
import { datasetsOfStream } from '../parquet/datasets.js';
import { DEFAULT_INDEX_EVERY_BYTES, ENTRY_BYTES } from './time-index.js';
import type { LogKey, LogWriter, WriterOptions } from '../types.js';

/**
 * Opens the writer of `key`: takes the lock, recovers the newest day file that holds records
 * (newer empty ones are checked too), and continues seq after its last valid record.
 */
export async function openWriter(dataDir: string, key: LogKey, opts: WriterOptions = {}): Promise<LogWriter> {
  let dir: string;
  try {
    dir = marketDir(dataDir, key);
  } catch (e) {
    throw new StorageError(`market id ${JSON.stringify(key.market)} cannot be stored: ${(e as Error).message}`);
  }
  const made = await mkdir(dir, { recursive: true });
  if (made) {
    // New folders: their names must survive a power loss too (fsync each new one's parent).
    for (let d = dir; ; d = dirname(d)) {
      await fsyncDir(dirname(d));
      if (d === made || dirname(d) === d) break;
    }
  }
  const release = await acquireLock(lockFilePath(dataDir, key));
  try {
    const every = opts.indexEveryBytes ?? DEFAULT_INDEX_EVERY_BYTES;
    const days = (await listDays(dataDir, key)).reverse();
    let tail: WriterTail = {
      day: null,
      size: 0,
      indexOffset: -1,
      indexBytes: 0,
      last: null as Recorded | null,
      lastSeq: 0,
      lastRecvUs: -Infinity,
    };
    for (const day of days) {
      const r = await recoverLogFile(logFilePath(dataDir, key, day), every);
      if (r.last && r.lastRecord) {
        tail = {
          day,
          size: r.validEnd,
          indexOffset: r.lastIndexOffset,
          indexBytes: r.indexEntries * ENTRY_BYTES,
          last: r.lastRecord,
          lastSeq: r.last.seq,
          lastRecvUs: r.last.recvUs,
        };
        break;
      }
    }
    // The market's folder was there but holds no record: retention deleted its logs after
    // compaction. Seq continues after the last compacted one (a new market skips this look).
    if (tail.last === null && !made) {
      const stream = key.stream;
      const datasets = stream === 'books' ? [...datasetsOfStream(stream), 'books' as const] : datasetsOfStream(stream);
      tail = { ...tail, lastSeq: await lastCompactedSeq(dataDir, key.family, datasets, key.market) };
    }
    if (tail.last === null && opts.firstSeq !== undefined) tail = { ...tail, lastSeq: Math.max(tail.lastSeq, opts.firstSeq - 1) };
    return new AppendLog(dataDir, key, opts, tail, release);
  } catch (e) {
    await release();
    throw e;
  }
}

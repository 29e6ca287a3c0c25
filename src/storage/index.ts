// The storage layer's public entry: everything outside src/storage imports from here.
// `openReader` is the one function the read side and the stream use; it may later span compacted
// (Parquet) days too, so keep callers on it rather than on `openLogReader`.

import { open } from 'node:fs/promises';
import { logFilePath } from './paths.js';
import { openLogReader } from './read/reader.js';
import { compositeReader } from './read/composite-reader.js';
import { readFrames } from './read/scan.js';
import type { LogKey, LogReader, ReadItem } from './types.js';

export * from './types.js';
export { openWriter } from './log/open-writer.js';
export { openLogReader } from './read/reader.js';
export {
  decodeMarket, encodeMarket, indexFilePath, isDayClosed, listDays, listKeys, listMarkets, lockFilePath,
  logFilePath, logsRoot, marketDir, streamDir,
} from './paths.js';
export { verifyDataDir, checkLogFile, type VerifyOptions } from './verify.js';
export { fsyncDir, fsyncDirSync, writeFileDurable, writeFileDurableSync, type DurableWriteOptions } from './durable.js';

/** The reader of a logical log for the read side and the stream. */
export function openReader(dataDir: string, key: LogKey): LogReader {
  return compositeReader(dataDir, key, openLogReader(dataDir, key)); // compacted days come from Parquet
}

/**
 * Every valid record of one day file of `key`, in order (for the compactor: call it on closed
 * days only, see isDayClosed). Stops at the first damaged or short frame; nothing when absent.
 */
export async function* readDay(dataDir: string, key: LogKey, day: string): AsyncGenerator<ReadItem> {
  const fh = await open(logFilePath(dataDir, key, day), 'r').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return null;
    throw e;
  });
  if (!fh) return;
  try {
    const size = (await fh.stat()).size;
    for await (const { head, rec } of readFrames(fh, 0, size)) yield { rec, pos: { day, offset: head.offset, seq: head.seq } };
  } finally {
    await fh.close();
  }
}

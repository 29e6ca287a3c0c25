// Undoing a batch the disk refused (ENOSPC, EDQUOT, EIO): every day file the batch touched is cut
// back to where the batch began, and its index with it; a day file the batch created is removed.
// No partial frame stays on disk, so `verify` finds the log clean without a restart, and seq goes
// on after the last acknowledged record. Shrinking a file frees blocks: this works on a full disk.

import { open, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fsyncDir } from '../durable.js';
import { indexPathOf, logFilePath } from '../paths.js';
import type { LogKey } from '../types.js';
import type { Segment } from './batch.js';
import { FILE_HEADER_BYTES } from './file-header.js';

const missing = (e: unknown): boolean => (e as NodeJS.ErrnoException).code === 'ENOENT';

async function cut(path: string, size: number, sync: boolean): Promise<void> {
  let fh;
  try {
    fh = await open(path, 'r+');
  } catch (e) {
    if (missing(e)) return;
    throw e;
  }
  try {
    if ((await fh.stat()).size > size) {
      await fh.truncate(size);
      if (sync) await fh.sync();
    }
  } finally {
    await fh.close();
  }
}

async function remove(path: string): Promise<void> {
  await unlink(path).catch((e: unknown) => {
    if (!missing(e)) throw e;
  });
}

/** True when the segment began a day file (its first bytes are the format header). */
const beganFile = (seg: Segment): boolean => seg.startOffset === FILE_HEADER_BYTES && seg.idxStart === 0;

/** Cuts every file of the failed batch's segments back to its size before the batch. */
export async function rollBackSegments(dataDir: string, key: LogKey, segments: readonly Segment[]): Promise<void> {
  // Newest first: a day file the batch created goes before an older one is cut.
  for (let i = segments.length - 1; i >= 0; i--) {
    const seg = segments[i];
    const path = logFilePath(dataDir, key, seg.day);
    if (beganFile(seg)) {
      await remove(path);
      await remove(indexPathOf(path));
      // The removal should survive a power loss too; if the directory cannot be synced, a stale
      // empty-of-records file is all that can come back, and recovery reads it as empty.
      await fsyncDir(dirname(path)).catch(() => undefined);
    } else {
      await cut(path, seg.startOffset, true);
      await cut(indexPathOf(path), seg.idxStart, false); // derived data: recovery re-checks it
    }
  }
}

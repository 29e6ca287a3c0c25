// Tail recovery of one day file, run by the writer on open: trust the index's valid prefix up to
// its last entry that still matches a frame, scan the log from there, truncate at the first short
// or damaged frame, and trim/extend the index file to match. Cost ∝ the unindexed tail, not the log.
// A torn format header (the writer died creating the file) leaves an empty file; an unknown format
// version or a damaged header throws and the file is left untouched.

import { journalLogFile } from './day-journal.js';
import { open, readFile, type FileHandle } from 'node:fs/promises';
import { FRAME_OVERHEAD, MAX_FRAME_BYTES, PREFIX_BYTES, decodeRecord, parseFrame, type FrameHead } from './frame.js';
import { scanFrames, type ScanStop } from './scan.js';
import { ENTRY_BYTES, IndexEntries, decodeEntry, encodeEntry, entryFlagsOf, type IndexEntry } from './time-index.js';
import { indexPathOf } from '../paths.js';
import { isFirstFrameOffset, readFileStart } from './file-header.js';
import type { Recorded } from '../../schema/observation.js';

/** Reads and checks the single frame at `offset`; null when there is no valid frame there. */
export async function readFrameAt(
  fh: FileHandle,
  offset: number,
  fileEnd: number,
): Promise<{ head: FrameHead; rec: () => Recorded } | null> {
  if (offset < 0 || offset + FRAME_OVERHEAD > fileEnd) return null;
  const pre = Buffer.allocUnsafe(PREFIX_BYTES);
  if ((await fh.read(pre, 0, PREFIX_BYTES, offset)).bytesRead < PREFIX_BYTES) return null;
  const len = pre.readUInt32LE(0);
  if (len > MAX_FRAME_BYTES || offset + PREFIX_BYTES + len > fileEnd) return null;
  const buf = Buffer.allocUnsafe(PREFIX_BYTES + len);
  const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
  const r = parseFrame(buf.subarray(0, bytesRead), 0, offset);
  if (r.status !== 'ok') return null;
  return { head: r.head, rec: () => decodeRecord(buf, 0, r.head) };
}

export async function readIndexFile(idxPath: string): Promise<Buffer | null> {
  try {
    return await readFile(idxPath);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/**
 * The index file's last entry that is intact and matches its frame, read from the end backwards
 * (64 KiB at a time) so recovery costs the same for a 1 GB log as for a small one. The entries
 * before it are trusted here; `verify` checks them all.
 */
async function lastGoodEntry(
  idxPath: string,
  log: FileHandle,
  logSize: number,
): Promise<{ entry: IndexEntry | null; kept: number; idxBytes: number }> {
  let idx: FileHandle;
  try {
    idx = await open(idxPath, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { entry: null, kept: 0, idxBytes: -1 };
    throw e;
  }
  try {
    const idxBytes = (await idx.stat()).size;
    const chunk = Buffer.allocUnsafe(64 * 1024);
    let end = idxBytes - (idxBytes % ENTRY_BYTES);
    while (end > 0) {
      const start = Math.max(0, end - chunk.length);
      await idx.read(chunk, 0, end - start, start);
      for (let at = end - ENTRY_BYTES; at >= start; at -= ENTRY_BYTES) {
        const e = decodeEntry(chunk, at - start);
        if (!e || e.offset >= logSize || (at === 0 && !isFirstFrameOffset(e.offset))) continue;
        const f = await readFrameAt(log, e.offset, logSize);
        if (f && f.head.seq === e.seq && f.head.recvUs === e.recvUs && entryFlagsOf(f.head) === e.flags) {
          return { entry: e, kept: at / ENTRY_BYTES + 1, idxBytes };
        }
      }
      end = start;
    }
    return { entry: null, kept: 0, idxBytes };
  } finally {
    await idx.close();
  }
}

export interface Recovered {
  /** Log length after recovery (everything before it is valid frames). */
  readonly validEnd: number;
  /** Bytes cut off the log's tail (0 when it was clean). */
  readonly truncatedBytes: number;
  readonly stop: ScanStop;
  readonly last: FrameHead | null;
  readonly lastRecord: Recorded | null;
  /** Offset of the index's last entry (-1 when the log is empty). */
  readonly lastIndexOffset: number;
  readonly indexEntries: number;
}

/**
 * Recovers one day file in place (the caller holds the market's lock). Never touches a byte
 * before the last valid index entry's frame; a record that was fsynced before is never cut.
 */
export async function recoverLogFile(logPath: string, everyBytes: number): Promise<Recovered> {
  const idxPath = indexPathOf(logPath);
  const fh = await open(logPath, 'r+');
  try {
    const size = (await fh.stat()).size;
    const fileStart = await readFileStart(fh, size, logPath);
    const entries = new IndexEntries();
    const found = await lastGoodEntry(idxPath, fh, size);
    const idxExists = found.idxBytes >= 0;
    if (found.entry) entries.push(found.entry);
    const kept = found.kept; // entries of the index file that stay (the last one is entries[0])
    const start = found.entry ? found.entry.offset : fileStart.dataStart;
    let last: FrameHead | null = null;
    const stop: ScanStop =
      fileStart.kind === 'torn'
        ? { end: 0, reason: 'short' }
        : await scanFrames(fh, start, size, (head) => {
            last = head;
            entries.consider(head, everyBytes);
          });
    if (stop.reason !== 'eof') {
      await journalLogFile(logPath); // before the cut: a census of the logs learns it changed
      await fh.truncate(stop.end);
      await fh.sync();
    }
    // The index file becomes its kept prefix plus the entries the scan added.
    const idx = await open(idxPath, idxExists ? 'r+' : 'w');
    try {
      const keptBytes = kept * ENTRY_BYTES;
      const first = found.entry ? 1 : 0; // entries[0] is already in the file
      if (found.idxBytes !== keptBytes || entries.n > first) {
        await idx.truncate(keptBytes);
        if (entries.n > first) {
          const add = Buffer.allocUnsafe((entries.n - first) * ENTRY_BYTES);
          for (let i = first; i < entries.n; i++) encodeEntry(entries.get(i), add, (i - first) * ENTRY_BYTES);
          await idx.write(add, 0, add.length, keptBytes);
        }
        await idx.sync();
      }
    } finally {
      await idx.close();
    }
    const lastHead = last as FrameHead | null;
    const lastFrame = lastHead ? await readFrameAt(fh, lastHead.offset, stop.end) : null;
    return {
      validEnd: stop.end,
      truncatedBytes: size - stop.end,
      stop,
      last: lastHead,
      lastRecord: lastFrame ? lastFrame.rec() : null,
      lastIndexOffset: entries.lastOffset,
      indexEntries: kept + entries.n - (found.entry ? 1 : 0),
    };
  } finally {
    await fh.close();
  }
}
